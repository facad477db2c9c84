"""`tinygradx attention --checkpoint CKPT "sentence"`: the attention maps of every layer and head
of a checkpoint (an encoder-decoder and a GPT), as text heatmaps with the tokens and as PNG and
CSV files holding the same numbers; one error line for every input the model cannot read."""
import csv
import os
import re

import numpy as np
import pytest

from tinygradx.models.apps import attention_cli, cli
from tinygradx.models.apps.figures import have_matplotlib, picture_fingerprint

TINY = ["--d_model", "16", "--n_head", "2", "--n_layer", "2", "--batch_size", "4",
        "--max_steps", "2", "--eval_batches", "1", "--eval_examples", "2", "--progress", "false"]


def run(argv, capsys):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err):
    assert code == 2 and "Traceback" not in out + err, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "tinygradx attention: error: " in lines[0], err
    return lines[0]


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    d = tmp_path_factory.mktemp("att")
    text = d / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\n" * 40, encoding="utf-8")
    assert cli.main([str(a) for a in ["train", "--task", "reverse", *TINY, "--n_train", "40",
                                      "--out_dir", d / "rev"]]) == 0
    assert cli.main([str(a) for a in ["train", "--task", "chars", "--text", text, *TINY,
                                      "--block_size", "16", "--out_dir", d / "chars"]]) == 0
    return {"rev": d / "rev" / "checkpoint.npz", "chars": d / "chars" / "checkpoint.npz"}


def heatmaps(out):
    """{(title, layer, head): [lines of the map]} of the command's text."""
    maps, key = {}, None
    for line in out.splitlines():
        m = re.match(r"^(.*): layer (\d+), head (\d+)$", line)
        if m:
            key = (m.group(1), int(m.group(2)), int(m.group(3)))
            maps[key] = []
        elif key and line.strip() and not line.startswith("wrote"):
            maps[key].append(line)
        elif not line.strip():
            key = None
    return maps


def test_every_layer_and_head_of_an_encoder_decoder(ckpts, tmp_path, capsys):
    code, out, err = run(["attention", "--checkpoint", ckpts["rev"], "abcd", "--target", "dcba",
                          "--out", tmp_path], capsys)
    assert code == 0, err
    maps = heatmaps(out)
    kinds = {"encoder self-attention", "decoder self-attention (causal)",
             "cross-attention (decoder reads H)"}
    assert {k[0] for k in maps} == kinds
    assert len(maps) == 3 * 2 * 2                      # 3 kinds x 2 layers x 2 heads
    cross = maps[("cross-attention (decoder reads H)", 1, 0)]
    assert cross[0].strip() == "abcd"                  # the source tokens over the columns
    assert [ln.split()[0] for ln in cross[1:]] == ["<bos>", "d", "c", "b", "a"]
    grid = maps[("decoder self-attention (causal)", 0, 1)][-5:]      # the 5 query rows
    shades = [ln.lstrip().split(" ", 1)[1] for ln in grid]
    assert all(len(r.rstrip()) <= i + 1 for i, r in enumerate(shades))   # causal: nothing after i
    assert [ln.lstrip().split(" ", 1)[0] for ln in grid] == ["<bos>", "d", "c", "b", "a"]
    # the files hold the same maps: rows sum to 1, one CSV row a cell
    for kind, (n, m) in {"encoder_self": (4, 4), "decoder_self": (5, 5), "cross": (5, 4)}.items():
        with open(tmp_path / f"attention_{kind}.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 2 * 2 * n * m
        a = np.zeros((2, 2, n, m))
        for r in rows:
            a[int(r["layer"]), int(r["head"]), int(r["query"]), int(r["key"])] = float(r["weight"])
        assert np.allclose(a.sum(-1), 1, atol=1e-4)
        if kind == "decoder_self":
            assert np.all(np.triu(a, k=1) == 0)
        if have_matplotlib():
            fp = picture_fingerprint(str(tmp_path / f"attention_{kind}.png"))["structure"]
            assert len([ax for ax in fp["axes"] if ax["title"]]) == 4     # one panel a head
            assert fp["axes"][0]["xticks"] == list("abcd") if kind != "decoder_self" else True


def test_a_gpt_checkpoint_and_the_terminal_only(ckpts, tmp_path, capsys):
    code, out, err = run(["attention", "--checkpoint", ckpts["chars"], "the fox", "--no_png",
                          "--layer", "1", "--out", tmp_path / "x"], capsys)
    assert code == 0, err
    maps = heatmaps(out)
    assert set(maps) == {("causal self-attention", 1, 0), ("causal self-attention", 1, 1)}
    grid = maps[("causal self-attention", 1, 0)]
    assert grid[0].strip() == "the␣fox"                # a space is shown as ␣
    assert [ln.split()[0] for ln in grid[1:]] == list("the") + ["␣"] + list("fox")
    assert not (tmp_path / "x").exists()


def test_the_text_heatmap_shades_and_lines_up():
    a = np.array([[1.0, 0.5], [0.5, 1.0]])
    text = attention_cli.text_heatmap(a, ["一", "b"], ["x", "二"])
    lines = text.splitlines()
    assert lines[0] == "   x 二"                       # a wide character: every column two cells
    assert lines[1] == "一 @@==" and lines[2] == " b ==@@"         # 1 -> @, 0.5 -> =
    assert attention_cli.cells(lines[1]) == attention_cli.cells(lines[2])


@pytest.mark.parametrize("argv,needle", [
    (["rev", ""], "the sentence is empty"),
    (["chars", "the QZ"], "characters the model never saw: 'Q', 'Z'"),
    (["chars", "t" * 40], "this model reads at most 16"),
    (["chars", "the", "--target", "x"], "--target: the checkpoint is a chars language model"),
    (["rev", "abc", "--layer", "2"], "--layer 2: the model has 2 layers (0..1)"),
    (["rev", "abc", "--head", "5"], "--head 5: the model has 2 heads (0..1)"),
    (["rev", "abc", "--kind", "self"], "--kind self: this model's attention is encoder_self"),
    (["rev", "abc", "--target", "dcbaxyzdcbaxyz" * 3], "--target has 42 tokens"),
    (["missing", "abc"], "checkpoint file not found"),
])
def test_bad_input_is_one_error_line(ckpts, tmp_path, capsys, argv, needle):
    ckpt = ckpts.get(argv[0], tmp_path / "missing.npz")
    code, out, err = run(["attention", "--checkpoint", ckpt, *argv[1:], "--out", tmp_path],
                         capsys)
    line = one_line_error(code, out, err)
    assert needle in line, line
    assert not os.path.exists(tmp_path / "attention_cross.png")


def test_unknown_source_tokens_are_said_once(ckpts, tmp_path, capsys):
    code, out, err = run(["attention", "--checkpoint", ckpts["rev"], "abz!", "--target", "a",
                          "--no_png", "--kind", "cross", "--layer", "0", "--head", "0"], capsys)
    assert code == 0
    assert err.strip().splitlines() == [
        "tinygradx attention: warning: 1 source token(s) outside the vocabulary of task reverse "
        "are read as <unk>: '!'"] or "outside the vocabulary" in err, err
    assert "Traceback" not in err and err.count("\n") == 1
