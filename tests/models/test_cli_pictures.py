"""What the drawing commands say is computed from what they draw.

- `graph` / `trace` describe the model they built or loaded (`inspect_models.describe`): its
  LayerNorm placement and layer count are held against the graph itself (the residual path's
  LayerNorms, the block scopes of its ops), for every kind the commands build, and against
  real checkpoints (a Post-LN encoder-decoder, a 4-layer chars GPT), page header included.
- A flag that contradicts a checkpoint is one error line, never a silent default.
- `graph --values` puts the values into every format it writes, the page too.
- `experiment warmup --layers N` trains N layers.
- A reader that closes the pipe early (`tinygradx trace | head`) gets no error line.
"""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("graphviz")

from tinygradx import graph, viz  # noqa: E402
from tinygradx.models.apps import cli, experiments  # noqa: E402
from tinygradx.models.apps.inspect_models import (build_graph_for_cli, describe,  # noqa: E402
                                                  model_facts, norm_note, small_model,
                                                  trace_cli, training_loss)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--d_model", "16", "--n_head", "2", "--batch_size", "4", "--max_steps", "2",
        "--eval_batches", "1", "--eval_examples", "2", "--progress", "false"]


def run(argv, capsys):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def blocks_drawn(g):
    """{stack: number of distinct blocks} of the ops in a graph, from their module paths."""
    found = {}
    for scope in g.scopes:
        m = re.match(r"(transformer\.h|encoder\.layers|decoder\.layers)\.(\d+)", scope or "")
        if m:
            found.setdefault(m.group(1), set()).add(int(m.group(2)))
    return {k: len(v) for k, v in found.items()}


MODELS = [("gpt", "pre", 1, False), ("gpt", "post", 3, False), ("gpt", "pre", 2, True),
          ("transformer", "post", 1, False), ("transformer", "pre", 3, False)]


@pytest.mark.parametrize("kind,norm,layers,llama", MODELS)
def test_the_description_is_the_graph_drawn(kind, norm, layers, llama):
    """describe()'s placement is the one the graph's identity path shows; its layer count is the
    number of blocks whose ops the graph holds; the trace's first line says the same."""
    model, batch = small_model(kind, norm, layers, llama=llama)
    loss = training_loss(kind, model, batch)
    said = describe(model)
    placement = graph.residual_summary(loss).split(":")[0]         # from the graph alone
    assert said.startswith(f"a {placement} "), (said, placement)
    stacks = blocks_drawn(graph.walk(loss))
    if kind == "gpt":
        assert stacks == {"transformer.h": layers}
        assert said.endswith(f", {layers} layer" + ("s" if layers != 1 else ""))
        assert ("LLaMA-style" in said) == llama
    else:
        assert stacks == {"encoder.layers": layers, "decoder.layers": layers}
        assert said.endswith(f", {layers}+{layers} layers")
    first = trace_cli(kind, norm, layers, llama=llama).splitlines()[0]
    assert first == f"{said}: {norm_note(model)}"
    assert ("inside each sublayer" in first) == (placement == "Pre-LN")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A Post-LN encoder-decoder of 2+2 layers (copy) and a 4-layer chars GPT."""
    d = tmp_path_factory.mktemp("ckpt")
    text = d / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\n" * 60, encoding="utf-8")
    assert cli.main([str(a) for a in ["train", "--task", "copy", *TINY, "--n_layer", "2",
                                      "--n_train", "40", "--out_dir", d / "copy"]]) == 0
    assert cli.main([str(a) for a in ["train", "--task", "chars", "--text", text, *TINY,
                                      "--n_layer", "4", "--block_size", "16",
                                      "--out_dir", d / "chars"]]) == 0
    return {"copy": d / "copy" / "checkpoint.npz", "chars": d / "chars" / "checkpoint.npz"}


@pytest.mark.parametrize("name,what", [
    ("copy", "a Post-LN encoder-decoder Transformer, 2+2 layers"),
    ("chars", "a Pre-LN GPT, 4 layers")])
def test_a_checkpoint_is_described_as_it_is(checkpoints, tmp_path, capsys, name, what):
    """The demo's Post-LN model was "a Pre-LN encoder-decoder Transformer" (the --model
    default's placement), a 4-layer chars model "a Pre-LN GPT, 2 layers" (--layers')."""
    ckpt = checkpoints[name]
    for out in ("g.svg", "g.html"):
        code, said, err = run(["graph", "--checkpoint", ckpt, "--out", tmp_path / out], capsys)
        assert code == 0, err
        first, summary = said.splitlines()[:2]
        assert first.startswith(f"drew {what} (depth 4) to "), first
        assert summary.startswith(what.split()[1] + ":"), summary       # Post-LN / Pre-LN
    page = (tmp_path / "g.html").read_text(encoding="utf-8")
    header = re.search(r"<header><h1>.*?</h1>\s*<p>(.*?)</p>", page, re.S).group(1)
    assert header.startswith(f"{what} (depth 4). {what.split()[1]}: "), header
    other = "Pre-LN" if "Post-LN" in what else "Post-LN"
    assert other not in header
    model, _ = small_model(None, None, None, checkpoint=str(ckpt))
    assert describe(model) == what and model_facts(model)["layers"] == int(what[-8])


def test_a_flag_against_the_checkpoint_is_one_error(checkpoints, tmp_path, capsys):
    cases = [(["--norm", "pre"], "copy", "--norm pre: the checkpoint"),
             (["--layers", "2"], "chars", "--layers 2: the checkpoint"),
             (["--model", "transformer"], "chars", "--model transformer: the checkpoint")]
    for flags, name, needle in cases:
        code, out, err = run(["graph", "--checkpoint", checkpoints[name], *flags, "--out",
                              tmp_path / "x.svg"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
        assert not (tmp_path / "x.svg").exists()
    # the same value as the checkpoint's is no contradiction
    code, out, err = run(["graph", "--checkpoint", checkpoints["chars"], "--layers", "4",
                          "--out", tmp_path / "x.dot"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("out", ["g.dot", "g.html"])
def test_values_reach_every_format(tmp_path, out):
    """`graph --values` added each tensor's mean and std to the DOT/SVG but the page dropped
    them."""
    counts = {}
    for values in (False, True):
        path = build_graph_for_cli("gpt", None, 1, None, str(tmp_path / f"{values}{out}"),
                                   log=None, values=values)
        text = open(path, encoding="utf-8").read()
        counts[values] = len(re.findall(r"mean -?[0-9.e+-]+ std [0-9.e+-]+", text))
    assert counts[False] == 0 and counts[True] > 20, counts


def test_experiment_warmup_trains_the_depth_asked(monkeypatch, tmp_path, capsys):
    """docs/cli.md's `experiment warmup --layers 6` trained 2+2 layers."""
    seen = {}

    def fake_curves(**kw):
        seen.update(kw)
        raise SystemExit(0)                   # the runs themselves are another test's
    monkeypatch.setattr(experiments, "warmup_curves", fake_curves)
    code, out, err = run(["experiment", "warmup", "--layers", "6", "--steps", "10", "--out",
                          tmp_path], capsys)
    assert seen["n_layer"] == 6 and "6+6 layers" in out, (out, err)
    code, out, err = run(["experiment", "warmup", "--out", tmp_path], capsys)
    assert seen["n_layer"] == 2 and "2+2 layers" in out
    code, out, err = run(["experiment", "warmup", "--layers", "2,6", "--out", tmp_path], capsys)
    assert code == 2 and "trains one depth" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["trace", "--layers", "40"], ["trace", "--format", "markdown",
                                                                "--layers", "40"],
                                  ["train", "--help"]])
def test_a_closed_pipe_is_quiet(argv):
    """`tinygradx trace | head`: the reader takes one line and leaves; no "error: [Errno 32]
    Broken pipe", no traceback, the exit code of a Unix tool stopped by SIGPIPE."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "tinygradx", *argv], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert err == "" and code in (0, 141), (code, err)


def test_residual_summary_in_chinese_names_the_same_counts():
    model, batch = small_model("transformer", "post", 2)
    loss = training_loss("transformer", model, batch)
    en, zh = viz.residual_summary(loss), viz.residual_summary(loss, lang="zh")
    assert re.findall(r"\d+", en) == re.findall(r"\d+", zh)
    assert zh.startswith("Post-LN：恒等路径上有 6 个 LayerNorm")
