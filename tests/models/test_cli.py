"""The `tinygradx` command (models/apps/cli.py): --help everywhere, one-line errors with exit
code 2, and train -> eval / translate / generate end to end on tiny models.

Most cases call cli.main([...]) in-process; a few run `python -m tinygradx` to check what a
user's shell sees (exit code, no traceback).
"""
import dataclasses
import io as _io
import os
import shutil
import subprocess
import sys

import pytest

from tinygradx.models.apps import cli

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMANDS = ["train", "eval", "translate", "generate", "demo", "graph", "trace", "experiment",
            "attention", "plot"]
TINY = ["--d_model", "32", "--n_head", "2", "--n_layer", "1", "--batch_size", "8",
        "--eval_batches", "1", "--eval_examples", "8", "--progress", "false"]


def run(argv, capsys, stdin=None, monkeypatch=None):
    """cli.main(argv) in-process -> (exit code, stdout, stderr); argparse's exits included."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", _io.StringIO(stdin))
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def run_process(argv, stdin=None, timeout=120):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "tinygradx", *map(str, argv)], cwd=REPO,
                          env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(code, out, err):
    assert code == 2, (code, out, err)
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0], err
    return lines[0]


# ------------------------------------------------------------------------------------------
# shared tiny runs
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def copy_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("copy")
    argv = ["train", "--task", "copy", *TINY, "--n_train", "200", "--max_steps", "3",
            "--eval_interval", "2", "--out_dir", out_dir]
    code = cli.main([str(a) for a in argv])
    assert code == 0
    return out_dir


@pytest.fixture(scope="module")
def chars_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("chars")
    text = out_dir / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog " * 40, encoding="utf-8")
    argv = ["train", "--task", "chars", "--text", text, *TINY, "--block_size", "16",
            "--max_steps", "2", "--out_dir", out_dir]
    assert cli.main([str(a) for a in argv]) == 0
    return out_dir


# ------------------------------------------------------------------------------------------
# --help
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [None] + COMMANDS)
def test_help_exits_zero(command, capsys):
    code, out, err = run(([command] if command else []) + ["--help"], capsys)
    assert code == 0 and err == ""
    assert out.startswith("usage: tinygradx")
    if command == "train":                     # every TrainConfig field is a flag
        for flag in ("--task", "--d_model", "--dropout", "--resume", "--max_steps"):
            assert flag in out
    if command is None:
        for c in COMMANDS:
            assert c in out


def test_every_option_of_every_subcommand_has_a_help_text():
    """Walk the parser: each action of each subcommand says what it does, and an option with a
    default says the default."""
    import argparse
    from tinygradx.models.training.trainer import TrainConfig
    parser = cli.build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0]
    assert set(subs.choices) == set(COMMANDS)
    missing, no_default = [], []
    for name, sub in subs.choices.items():
        for action in sub._actions:
            label = f"{name} {'/'.join(action.option_strings) or action.dest}"
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(label)
            elif (action.option_strings and not isinstance(action, argparse._HelpAction)
                  and not action.required and "default" not in action.help):
                no_default.append(label)
    assert not missing, missing
    assert not no_default, no_default
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert fields <= set(cli.TRAIN_HELP), fields - set(cli.TRAIN_HELP)


def test_python_dash_m_tinygradx_is_the_cli(tmp_path):
    proc = run_process(["train", "--help"])
    assert proc.returncode == 0 and proc.stdout.startswith("usage: tinygradx train")
    assert "--overwrite" in proc.stdout and "--grad_accum" in proc.stdout
    proc = run_process(["train", "--lr", "inf", "--out_dir", tmp_path / "r"])
    line = assert_one_line_error(proc.returncode, proc.stdout, proc.stderr)
    assert line == "tinygradx train: error: --lr: must be a finite number > 0, got inf"
    assert not (tmp_path / "r").exists()


def test_plot_writes_the_health_csv_and_png(tmp_path, capsys):
    code, out, err = run(["train", "--task", "copy", *TINY, "--n_train", "100", "--max_steps",
                          "2", "--health_interval", "1", "--out_dir", tmp_path], capsys)
    assert code == 0, err
    code, out, err = run(["plot", tmp_path], capsys)
    assert code == 0, err
    assert (tmp_path / "health.csv").is_file() and f"wrote {tmp_path / 'health.csv'}" in out
    rows = (tmp_path / "health.csv").read_text().splitlines()
    assert len(rows) == 3 and "update_ratio/decoder.layers.0" in rows[0]
    from tinygradx.models.apps import pictures
    assert (tmp_path / "health.png").is_file() == pictures.have_matplotlib()
    line = assert_one_line_error(*run(["plot", tmp_path / "nothing"], capsys))
    assert "no metrics.jsonl" in line


def test_entry_points_help():
    """`python -m tinygradx.models.apps.cli` and, when installed, the `tinygradx` console script."""
    proc = run_process(["--help"])
    assert proc.returncode == 0 and "usage: tinygradx" in proc.stdout
    script = shutil.which("tinygradx")
    if script:
        proc = subprocess.run([script, "trace", "--help"], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and "usage: tinygradx trace" in proc.stdout


# ------------------------------------------------------------------------------------------
# one-line errors, exit code 2
# ------------------------------------------------------------------------------------------

def _bad_cases(tmp_path):
    missing = tmp_path / "missing.npz"
    text_file = tmp_path / "not_a_checkpoint.npz"
    text_file.write_text("hello\n")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9 au lait\n".encode("latin-1") * 10)
    return {
        "unknown task": (["train", "--task", "nope"], "unknown task 'nope'"),
        "not an int": (["train", "--d_model", "abc"], "--d_model"),
        "dropout range": (["train", "--dropout", "2"], "dropout"),
        "bad bool": (["train", "--progress", "maybe"], "--progress"),
        "unknown flag": (["train", "--frobnicate", "1"], "unknown flag --frobnicate"),
        "heads": (["train", "--d_model", "30", "--n_head", "4"], "divisible"),
        "unknown command": (["frobnicate"], "unknown command 'frobnicate'"),
        "eval missing": (["eval", "--checkpoint", missing], "not found"),
        "translate missing": (["translate", "--checkpoint", missing, "abc"], "not found"),
        "generate missing": (["generate", "--checkpoint", missing], "not found"),
        "resume missing": (["train", "--resume", missing], "not found"),
        "eval no checkpoint flag": (["eval"], "--checkpoint"),
        "not a checkpoint": (["eval", "--checkpoint", text_file], "not a tinygradx checkpoint"),
        "chars missing text": (["train", "--task", "chars", "--text", tmp_path / "none.txt"],
                               "not found"),
        "chars not utf8": (["train", "--task", "chars", "--text", latin1], "UTF-8"),
        "tsv without path": (["train", "--task", "tsv"], "--path"),
        "tsv missing": (["train", "--task", "tsv", "--path", tmp_path / "none.tsv"],
                        "not found"),
        "out_dir under a file": (["train", "--task", "copy", *TINY, "--n_train", "50",
                                  "--max_steps", "1", "--out_dir", blocker / "run"],
                                 "Not a directory"),
        "graph layers": (["graph", "--layers", "0"], "--layers"),
        "graph model": (["graph", "--model", "bert"], "invalid choice"),
        "graph format": (["graph", "--out", tmp_path / "g.xyz"], "unknown format .xyz"),
        "demo lm task": (["demo", "--task", "chars", "--out", tmp_path / "demo"],
                         "language-model"),
        "llama switch on encoder-decoder": (["train", "--task", "dates", "--norm", "rmsnorm"],
                                            "--norm: the LLaMA-style switches"),
        "no-bias on encoder-decoder": (["train", "--task", "copy", "--no-bias"],
                                       "task copy trains an encoder-decoder, got false"),
        "kv heads": (["train", "--task", "chars", "--n_head", "4", "--n_kv_head", "3"],
                     "--n_kv_head: must divide --n_head 4"),
        "rope odd head": (["train", "--task", "chars", "--d_model", "20", "--n_head", "4",
                           "--pos", "rope"], "head size d_model // n_head must be even"),
        "bad mlp": (["train", "--task", "chars", "--mlp", "relu"], "one of gelu, swiglu"),
    }


BAD_CASES = ["unknown task", "not an int", "dropout range", "bad bool", "unknown flag", "heads",
             "unknown command", "eval missing", "translate missing", "generate missing",
             "resume missing", "eval no checkpoint flag", "not a checkpoint",
             "chars missing text", "chars not utf8", "tsv without path", "tsv missing",
             "out_dir under a file", "graph layers", "graph model", "graph format",
             "demo lm task", "llama switch on encoder-decoder", "no-bias on encoder-decoder",
             "kv heads", "rope odd head", "bad mlp"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_mistakes_are_one_line_errors(case, tmp_path, capsys):
    cases = _bad_cases(tmp_path)
    assert set(cases) == set(BAD_CASES)
    argv, needle = cases[case]
    line = assert_one_line_error(*run(argv, capsys))
    assert needle in line, line
    msg = line.split("error: ", 1)[1]
    assert not (msg[0] in "'\"" and msg[-1] == msg[0]), msg      # the text, not its repr


def test_errors_from_a_real_process(tmp_path):
    """What the shell sees: exit status 2, one line on stderr, nothing on stdout."""
    proc = run_process(["translate", "--checkpoint", tmp_path / "missing.npz", "abc"])
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""


def test_truncated_checkpoint_is_a_one_line_error(copy_run, tmp_path, capsys):
    data = (copy_run / "checkpoint.npz").read_bytes()
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(data[:len(data) // 2])
    line = assert_one_line_error(*run(["eval", "--checkpoint", bad], capsys))
    assert "truncated" in line


def test_wrong_kind_of_checkpoint(copy_run, chars_run, capsys):
    line = assert_one_line_error(*run(["translate", "--checkpoint",
                                       chars_run / "checkpoint.npz", "abc"], capsys))
    assert "tinygradx generate" in line
    line = assert_one_line_error(*run(["generate", "--checkpoint",
                                       copy_run / "checkpoint.npz"], capsys))
    assert "tinygradx translate" in line
    line = assert_one_line_error(*run(["generate", "--checkpoint", chars_run / "checkpoint.npz",
                                       "--prompt", "QXZ"], capsys))
    assert "never saw" in line
    for bad in (["--top_p", "0"], ["--top_k", "0"], ["--max_new_tokens", "-1"]):
        assert_one_line_error(*run(["generate", "--checkpoint", chars_run / "checkpoint.npz",
                                    *bad], capsys))


# ------------------------------------------------------------------------------------------
# end to end
# ------------------------------------------------------------------------------------------

def test_train_writes_checkpoint_metrics_and_report(copy_run):
    assert (copy_run / "checkpoint.npz").is_file()
    rows = (copy_run / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 3


def test_train_output(tmp_path, capsys):
    code, out, err = run(["train", "--task", "sort", *TINY, "--n_train", "100",
                          "--max_steps", "2", "--out_dir", tmp_path], capsys)
    assert code == 0, err
    assert "task sort: EncoderDecoder with" in out
    assert "held-out exact match:" in out and "checkpoint: " in out
    assert "Traceback" not in err


def test_eval(copy_run, capsys):
    code, out, err = run(["eval", "--checkpoint", copy_run / "checkpoint.npz"], capsys)
    assert code == 0, err
    fields = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert fields["step"] == "3" and fields["split"] == "test"
    # formatted as train prints them: loss to 4 decimals, exact match as a percent
    assert float(fields["loss"]) > 0 and len(fields["loss"].split(".")[1]) == 4
    assert fields["exact_match"].endswith("%")
    assert 0 <= float(fields["exact_match"][:-1]) <= 100
    code, out, err = run(["eval", "--checkpoint", copy_run / "checkpoint.npz", "--split", "val",
                          "--beam", "2"], capsys)
    assert code == 0, err
    assert "split: valid" in out and "exact_match_beam: " in out


def test_translate_arguments_and_stdin(copy_run, capsys, monkeypatch):
    ckpt = copy_run / "checkpoint.npz"
    code, out, err = run(["translate", "--checkpoint", ckpt, "abc", "jihgf"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["abc", "jihgf"]
    assert all(line.count("\t") == 1 for line in lines)
    # stdin: one sentence a line, blank lines skipped; same answers as the arguments
    code, out2, err = run(["translate", "--checkpoint", ckpt], capsys,
                          stdin="abc\n\njihgf\n", monkeypatch=monkeypatch)
    assert code == 0, err
    assert out2 == out
    code, out3, err = run(["translate", "--checkpoint", ckpt, "--beam", "3", "abc"], capsys)
    assert code == 0 and out3.startswith("abc\t")


def test_generate_on_a_chars_checkpoint(chars_run, capsys):
    ckpt = chars_run / "checkpoint.npz"
    code, out, err = run(["generate", "--checkpoint", ckpt, "--prompt", "the ",
                          "--max_new_tokens", "20", "--seed", "1"], capsys)
    assert code == 0, err
    text = out[:-1]                                           # print's newline
    assert text.startswith("the ") and len(text) == 24
    assert set(text) <= set("the quick brown fox jumps over the lazy dog ")
    # seeded: the same text again; greedy (top_k 1) is the same whatever the seed
    assert run(["generate", "--checkpoint", ckpt, "--prompt", "the ", "--max_new_tokens", "20",
                "--seed", "1"], capsys)[1] == out
    greedy = [run(["generate", "--checkpoint", ckpt, "--prompt", "fox", "--max_new_tokens", "10",
                   "--top_k", "1", "--seed", str(s)], capsys)[1] for s in (0, 1)]
    assert greedy[0] == greedy[1]
    # no prompt (this text has no newline, the usual start character)
    code, out, err = run(["generate", "--checkpoint", ckpt, "--max_new_tokens", "5"], capsys)
    assert code == 0, err
    assert len(out) == 7


def test_eval_on_a_chars_checkpoint(chars_run, capsys):
    code, out, err = run(["eval", "--checkpoint", chars_run / "checkpoint.npz"], capsys)
    assert code == 0, err
    assert "split: valid" in out and "loss: " in out and "exact_match" not in out


LLAMA = ["--norm", "rmsnorm", "--pos", "rope", "--mlp", "swiglu", "--n_kv_head", "1",
         "--no-bias"]


def test_llama_style_gpt_trains_generates_evaluates_and_resumes(tmp_path, capsys):
    """The LLaMA switches through the command line: saved in the run's config, honoured by
    generate, eval and resume (where changing one is a conflict)."""
    from tinygradx import io
    from tinygradx.models.training.trainer import Trainer
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog " * 40, encoding="utf-8")
    common = ["--task", "chars", "--text", text, *TINY, "--block_size", "16",
              "--eval_interval", "2", "--out_dir", tmp_path / "run"]
    code, out, err = run(["train", *common, *LLAMA, "--max_steps", "3"], capsys)
    assert code == 0, err
    assert "task chars: GPT with" in out
    ckpt = tmp_path / "run" / "checkpoint.npz"
    _, meta = io.load_checkpoint(ckpt)
    saved = {k: meta["config"][k] for k in ("norm", "pos", "mlp", "n_kv_head", "bias")}
    assert saved == dict(norm="rmsnorm", pos="rope", mlp="swiglu", n_kv_head=1, bias=False)
    model = Trainer.from_checkpoint(ckpt, log=lambda *a, **k: None).model
    c = model.config
    assert (c.norm, c.pos, c.mlp, c.kv_heads, c.bias) == ("rmsnorm", "rope", "swiglu", 1, False)
    assert "transformer.wpe.weight" not in model.state_dict()
    assert not any(k.endswith(".bias") for k in model.state_dict())
    gen = ["generate", "--checkpoint", ckpt, "--prompt", "the ", "--max_new_tokens", "12",
           "--seed", "3"]
    code, out, err = run(gen, capsys)
    assert code == 0, err
    assert out.startswith("the ") and len(out) == 17
    assert set(out[:-1]) <= set("the quick brown fox jumps over the lazy dog ")
    assert run(gen, capsys)[1] == out                        # seeded: the same text again
    code, out, err = run(["eval", "--checkpoint", ckpt], capsys)
    assert code == 0 and "split: valid" in out, err
    code, out, err = run(["train", "--resume", ckpt, "--max_steps", "4"], capsys)
    assert code == 0 and "at step 3" in out, err
    line = assert_one_line_error(*run(["train", "--resume", ckpt, "--max_steps", "5",
                                       "--mlp", "gelu"], capsys))
    assert "--mlp gelu (checkpoint: swiglu)" in line


def test_bias_flag_forms():
    parser = cli.build_parser()
    for argv, want in ((["--bias"], True), (["--bias", "false"], False), (["--no-bias"], False),
                       (["--no_bias"], False), ([], None)):
        assert parser.parse_args(["train", *argv]).bias is want, argv


def test_resume_continues_the_run(tmp_path, capsys):
    common = ["--task", "reverse", *TINY, "--n_train", "100", "--out_dir", tmp_path,
              "--eval_interval", "100"]
    assert run(["train", *common, "--max_steps", "2"], capsys)[0] == 0
    code, out, err = run(["train", "--resume", "--max_steps", "4", *common], capsys)
    assert code == 0, err
    assert "resumed from" in out and "at step 2" in out
    steps = [int(line.split('"step": ')[1].split(",")[0])
             for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]


def test_graph_writes_a_dot_file(tmp_path, capsys):
    out_file = tmp_path / "x.dot"
    code, out, err = run(["graph", "--model", "gpt", "--layers", "2", "--out", out_file], capsys)
    assert code == 0, err
    text = out_file.read_text()
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    assert str(out_file) in out


def test_trace_prints_a_table(capsys):
    code, out, err = run(["trace", "--model", "attention"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("dims:")
    assert lines[1].split()[:4] == ["#", "module", "op", "formula"]
    assert any("softmax" in line for line in lines)
    rows = [line for line in lines[2:] if line[:1].isdigit()]
    assert len(rows) >= 10 and all("→" in row for row in rows)


@pytest.mark.slow
def test_demo_runs(tmp_path, capsys):
    """The main job end to end with a few steps (decodes 1,000 held-out dates: slow)."""
    code, out, err = run(["demo", "--steps", "2", "--out", tmp_path], capsys)
    assert code == 0, err
    assert "exact match on 1,000 held-out examples" in out
    assert (tmp_path / "checkpoint.npz").is_file() and (tmp_path / "graph.dot").is_file()
    code, out, err = run(["translate", "--checkpoint", tmp_path / "checkpoint.npz",
                          "4 July 1976"], capsys)
    assert code == 0 and out.startswith("4 July 1976\t")


def test_demo_with_a_tiny_model(tmp_path, capsys, monkeypatch):
    """The demo's whole flow (train, held-out exact match, examples, checkpoint, graph, and
    the attention picture when models.pictures is there) on a tiny model."""
    from tinygradx.models.apps import demo
    tiny = dict(demo.DEMO_CONFIG, n_layer=1, d_model=32, n_head=2, batch_size=16, n_train=500,
                eval_examples=16, eval_interval=2, progress=False)
    monkeypatch.setattr(demo, "DEMO_CONFIG", tiny)
    code, out, err = run(["demo", "--steps", "2", "--out", tmp_path], capsys)
    assert code == 0, err
    assert "Traceback" not in err
    assert "held-out examples" in out and "30 Nov 2026" in out and "  ->  " in out
    assert (tmp_path / "checkpoint.npz").is_file()
    assert (tmp_path / "graph.dot").read_text().startswith("digraph")
    code, out, err = run(["translate", "--checkpoint", tmp_path / "checkpoint.npz",
                          "4 July 1976"], capsys)
    assert code == 0 and out.startswith("4 July 1976\t")
