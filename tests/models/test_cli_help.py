"""What the `tinygradx` command tells its users (models/apps/cli.py, models/apps/cli_help.py):
help whose defaults are the ones train uses, --version, the command list of a bare
`tinygradx`, groups and examples, one spelling of every flag, "did you mean", quiet progress
off a terminal, eval's numbers, the plot's title and legends, TSV checkpoints that decode
without their data file, and docs/cli.md generated from the parser.
"""
import argparse
import dataclasses
import importlib.util
import os
import shlex
import subprocess
import sys

import pytest

from tinygradx.models.apps import cli, cli_help
from tinygradx.models.training.config import TASK_DEFAULTS, TrainConfig

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--d_model", "32", "--n_head", "2", "--n_layer", "1", "--batch_size", "8",
        "--eval_batches", "1", "--eval_examples", "8"]
FIELDS = [f.name for f in dataclasses.fields(TrainConfig)]


def run(argv, capsys):
    """cli.main(argv) in-process -> (exit code, stdout, stderr); argparse's exits included."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def run_process(argv, timeout=120, **kw):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, *argv], cwd=kw.pop("cwd", REPO), env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


def one_line_error(code, out, err):
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def flat(text):
    return " ".join(text.split())


def subparsers(parser=None):
    parser = parser or cli.build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def train_actions(task=None):
    return {a.dest: a for a in subparsers(cli.build_parser(task))["train"]._actions}


# ------------------------------------------------------------------------------------------
# help that tells the truth
# ------------------------------------------------------------------------------------------

def _resolved(task, name):
    """What `train --task task` really runs with, before d_ff and out_dir are resolved."""
    cfg = TrainConfig.for_task(task)
    if name == "d_ff":
        return 0 if cfg.d_ff == 4 * cfg.d_model else cfg.d_ff
    if name == "out_dir":
        return ""
    return getattr(cfg, name)


@pytest.mark.parametrize("task", sorted(TASK_DEFAULTS))
def test_help_of_one_task_states_the_values_that_task_trains_with(task):
    actions = train_actions(task)
    for name in FIELDS:
        text = flat(actions[name].help)
        want = task if name == "task" else cli_help.show(_resolved(task, name))
        assert text.endswith(f"(default {want})" if name == "task" else
                             f"(default for {task}: {want})"), (name, text)


def test_plain_help_lists_every_tasks_default_where_they_differ():
    actions = train_actions()
    for name in FIELDS:
        if name == "task":
            continue
        values = {t: _resolved(t, name) for t in TASK_DEFAULTS}
        text = flat(actions[name].help)
        if len(set(values.values())) == 1:
            assert f"(default {cli_help.show(next(iter(values.values())))})" in text, text
            continue
        assert "default per task:" in text, (name, text)
        shown, others = {}, None
        for part in text.split("default per task:", 1)[1].rstrip(")").split(";"):
            value, tasks = part.strip().split(" for ", 1)
            if tasks == "the others":
                others = value
            else:
                shown.update(dict.fromkeys(tasks.split(", "), value))
        assert {t: shown.get(t, others) for t in values} == \
            {t: cli_help.show(v) for t, v in values.items()}, name
    assert flat(actions["d_model"].help).endswith(
        "(default per task: 128 for tsv, chars; 64 for the others)")


def test_train_help_for_a_task_through_the_command_line(capsys):
    for argv in (["train", "--task", "copy", "--help"], ["train", "--help", "--task", "copy"],
                 ["train", "--task=copy", "--help"]):
        code, out, err = run(argv, capsys)
        assert code == 0 and err == ""
        text = flat(out)
        assert "--d_model N model width (default for copy: 64)" in text
        assert "optimizer steps of the whole run (default for copy: 800)" in text
        assert "the defaults below are task copy's" in text
    code, out, _ = run(["train", "--help"], capsys)
    text = flat(out)
    assert "(default per task: 128 for tsv, chars; 64 for the others)" in text
    assert "800 for copy, reverse, sort; 1200 for numbers, numbers_zh, dates" in text


def test_version(capsys):
    from importlib import metadata
    code, out, err = run(["--version"], capsys)
    assert code == 0 and err == ""
    assert out.strip() == f"tinygradx {metadata.version('tinygradx')}"
    proc = run_process(["-m", "tinygradx", "--version"])
    assert proc.returncode == 0 and proc.stdout.strip() == out.strip()


def test_bare_command_lists_the_commands_and_two_examples(capsys):
    code, out, err = run([], capsys)
    assert code == 2 and err == ""             # a missing command is a usage mistake
    lines = out.splitlines()
    for name, sub_help in [(c.dest, c.help) for c in cli._subcommands(
            cli.build_parser())._choices_actions]:
        assert any(line.split() == [name, *sub_help.split()] for line in lines), name
    examples = lines[lines.index("examples:") + 1:]
    assert len(examples) == 2 and all(e.strip().startswith("tinygradx ") for e in examples)
    proc = run_process(["-m", "tinygradx"])
    assert proc.returncode == 2 and proc.stdout == out and "Traceback" not in proc.stderr


def test_train_flags_are_in_five_groups():
    train = subparsers()["train"]
    titles = {g.title: [a.dest for a in g._group_actions] for g in train._action_groups}
    for group in ("data", "model", "optimisation", "run", "output"):
        assert titles[group], group
    grouped = [d for g in ("data", "model", "optimisation", "run", "output") for d in titles[g]]
    # --bias and --no_bias share the field bias
    assert sorted(set(grouped)) == sorted(FIELDS + ["resume", "overwrite", "allow_nonfinite"])
    assert len(grouped) == len(FIELDS) + 4


def test_every_commands_flags_are_in_the_named_groups():
    names = {"data", "model", "optimisation", "run", "output"}
    for command, sub in subparsers().items():
        for group in sub._action_groups:
            actions = [a for a in group._group_actions if not isinstance(a, argparse._HelpAction)]
            assert not actions or group.title in names, (command, group.title,
                                                         [a.dest for a in actions])


@pytest.mark.parametrize("command", sorted(cli_help.EXAMPLES))
def test_every_command_has_examples_that_parse(command, capsys):
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0
    assert "examples:\n" in out
    parser = cli.build_parser()
    for line in cli_help.EXAMPLES[command]:
        assert f"  {line}\n" in out                      # kept as written, not rewrapped
        words = shlex.split(line.split(" < ")[0])
        assert words[:2] == ["tinygradx", command]
        assert parser.parse_args(words[1:]).command == command


def test_one_spelling_in_help_and_both_accepted():
    parser = cli.build_parser()
    for name, sub in subparsers(parser).items():
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag == "-h" or "-" not in flag[2:], (name, flag)    # --max_steps
    pairs = [(["train", "--max-steps", "5", "--out-dir=r", "--no-bias"],
              ["train", "--max_steps", "5", "--out_dir=r", "--no_bias"]),
             (["generate", "--checkpoint", "c", "--max-new-tokens", "3", "--top-k", "2",
               "--top-p", "0.5"],
              ["generate", "--checkpoint", "c", "--max_new_tokens", "3", "--top_k", "2",
               "--top_p", "0.5"]),
             (["train", "--label-smoothing", "0.1", "--grad-accum", "2", "--n-kv-head", "1"],
              ["train", "--label_smoothing", "0.1", "--grad_accum", "2", "--n_kv_head", "1"])]
    for dashed, plain in pairs:
        assert parser.parse_args(dashed) == parser.parse_args(plain)
    # values and anything after a bare -- are left as typed
    args = parser.parse_args(["generate", "--checkpoint", "c", "--prompt=--a-b"])
    assert args.prompt == "--a-b"
    args = parser.parse_args(["translate", "--checkpoint", "c", "--", "--not-a-flag"])
    assert args.sentences == ["--not-a-flag"]


@pytest.mark.parametrize("argv, line", [
    (["train", "--lrr", "3"], "tinygradx train: error: unknown flag --lrr; did you mean --lr?"),
    (["train", "--max-step", "3"],
     "tinygradx train: error: unknown flag --max_step; did you mean --max_steps?"),
    (["train", "--d_modle=8"],
     "tinygradx train: error: unknown flag --d_modle; did you mean --d_model?"),
    (["graph", "--layer", "3"],
     "tinygradx graph: error: unknown flag --layer; did you mean --layers?"),
    (["train", "--frobnicate"],
     "tinygradx train: error: unknown flag --frobnicate; see tinygradx train --help"),
    (["eval", "--checkpoint", "c", "extra"],
     "tinygradx eval: error: unexpected argument 'extra'; see tinygradx eval --help"),
    (["trian", "--task", "copy"],
     "tinygradx: error: unknown command 'trian'; did you mean train? (commands: train, eval, "
     "translate, generate, demo, graph, trace, experiment, attention, plot; tinygradx --help)"),
])
def test_unknown_flag_or_command_suggests_the_nearest(argv, line, capsys):
    assert one_line_error(*run(argv, capsys)) == line


def test_unknown_flag_from_a_real_process():
    proc = run_process(["-m", "tinygradx", "train", "--lrr", "3"])
    assert one_line_error(proc.returncode, proc.stdout, proc.stderr) == \
        "tinygradx train: error: unknown flag --lrr; did you mean --lr?"


def test_graph_and_trace_share_their_defaults():
    parser = cli.build_parser()
    graph, trace = parser.parse_args(["graph"]), parser.parse_args(["trace"])
    for name in ("model", "layers", "norm", "llama", "lang"):
        assert getattr(graph, name) == getattr(trace, name), name
    # not given: None, so a checkpoint's own config is not overruled by a default; the small
    # model built then is the 2-layer GPT both commands describe
    assert (graph.model, graph.layers) == (None, None)
    from tinygradx.models.apps.inspect_models import describe, small_model
    assert describe(small_model(graph.model, graph.norm, graph.layers)[0]) == \
        "a Pre-LN GPT, 2 layers"


# ------------------------------------------------------------------------------------------
# quiet logs off a terminal
# ------------------------------------------------------------------------------------------

def test_train_off_a_terminal_prints_plain_lines(tmp_path, capsys):
    code, out, err = run(["train", "--task", "copy", *TINY, "--n_train", "100", "--max_steps",
                          "6", "--eval_interval", "3", "--log_interval", "2", "--out_dir",
                          tmp_path], capsys)
    assert code == 0, err
    assert "\r" not in out + err
    steps = [line for line in out.splitlines() if line.startswith("step ") and "/6 |" in line]
    assert [s.split()[1] for s in steps] == ["2/6", "4/6", "6/6"]
    assert all("| loss " in s and "tok/s" in s for s in steps)
    code, out, err = run(["train", "--task", "copy", *TINY, "--n_train", "100", "--max_steps",
                          "2", "--progress", "false", "--log_interval", "1", "--out_dir",
                          tmp_path / "quiet"], capsys)
    assert code == 0 and "/2 |" not in out and "\r" not in out + err


def test_train_on_a_terminal_draws_the_bar(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run(["train", "--task", "copy", *TINY, "--n_train", "100", "--max_steps",
                          "4", "--log_interval", "1", "--out_dir", tmp_path], capsys)
    assert code == 0, err
    assert "\r" in err and "4/4" in err                   # tqdm's frames, on the terminal
    assert "step 1/4 |" not in out


def test_train_through_a_pipe_has_no_carriage_returns(tmp_path):
    proc = run_process(["-m", "tinygradx", "train", "--task", "reverse", *TINY, "--n_train",
                        "100", "--max_steps", "4", "--log_interval", "2", "--out_dir",
                        tmp_path / "run"])
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout + proc.stderr).count("\r") == 0
    assert "step 2/4 | loss " in proc.stdout and "step 4/4 | loss " in proc.stdout


DEMO_SCRIPT = """
import sys
from tinygradx.models.apps import cli, demo
demo.DEMO_CONFIG.update(n_layer=1, d_model=32, n_head=2, batch_size=16, n_train=300,
                        eval_examples=8, eval_interval=4, log_interval=2)
sys.exit(cli.main(["demo", "--steps", "4", "--out", sys.argv[1]]))
"""


def test_demo_through_a_pipe_has_no_carriage_returns(tmp_path):
    """The demo as `tinygradx demo > log` runs it (a tiny model: its own progress setting)."""
    proc = run_process(["-c", DEMO_SCRIPT, str(tmp_path / "demo")], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (proc.stdout + proc.stderr).count("\r") == 0
    assert "step 2/4 | loss " in proc.stdout and "step 4/4 | loss " in proc.stdout
    assert "held-out examples" in proc.stdout


# ------------------------------------------------------------------------------------------
# eval's numbers, the plot
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def copy_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("copy")
    argv = ["train", "--task", "copy", *TINY, "--n_train", "200", "--max_steps", "4",
            "--eval_interval", "2", "--health_interval", "1", "--progress", "false",
            "--out_dir", out_dir]
    assert cli.main([str(a) for a in argv]) == 0
    return out_dir


def test_eval_prints_like_train(copy_run, capsys):
    code, out, err = run(["eval", "--checkpoint", copy_run / "checkpoint.npz", "--beam", "2"],
                         capsys)
    assert code == 0, err
    fields = dict(line.split(": ", 1) for line in out.strip().splitlines())
    whole, decimals = fields["loss"].split(".")
    assert whole.isdigit() and len(decimals) == 4
    for key in ("exact_match", "exact_match_beam"):
        number = fields[key].removesuffix("%")
        assert fields[key].endswith("%") and len(number.split(".")[1]) == 2, fields[key]
        assert 0 <= float(number) <= 100


def test_plot_is_titled_shows_exact_match_and_keeps_legends_outside(copy_run, tmp_path,
                                                                   monkeypatch):
    from tinygradx.models.apps import pictures, run_pictures
    if not pictures.have_matplotlib():
        pytest.skip("matplotlib is not installed")
    figures = []
    save = run_pictures.save_figure
    monkeypatch.setattr(run_pictures, "save_figure",
                        lambda fig, path, lang="en": (figures.append(fig), save(fig, path))[1])
    written = pictures.training_health(copy_run, out_dir=tmp_path)
    assert any(p.endswith("health.png") for p in written)
    (fig,) = figures
    assert fig._suptitle.get_text() == f"run {copy_run.name}, task copy"
    labels = [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    assert "val exact match (%)" in labels
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 2                                 # loss panel, per-layer panel
    for ax, legend in legends:
        box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert box.x0 >= area.x1, (ax.get_title(), box, area)     # right of the data
    header = (tmp_path / "health.csv").read_text().splitlines()[0].split(",")
    assert "val_exact_match" in header


# ------------------------------------------------------------------------------------------
# TSV checkpoints decode without their data file
# ------------------------------------------------------------------------------------------

def _write_pairs(path):
    words = "cat dog house tree car sun moon big small red".split()
    french = dict(zip(words, "chat chien maison arbre voiture soleil lune grand petit rouge"
                      .split(), strict=True))
    lines = []
    for i in range(200):           # up to 7 words: `graph`'s random batch has 7 source tokens
        ws = [words[(i * 7 + k * 3) % len(words)] for k in range(1 + i % 7)]
        lines.append(" ".join(ws) + "\t" + " ".join(french[w] for w in ws))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_tsv_checkpoint_translates_after_the_file_is_deleted(tmp_path, capsys):
    import numpy as np
    pairs = tmp_path / "pairs.tsv"
    _write_pairs(pairs)
    run_dir = tmp_path / "run"
    code, out, err = run(["train", "--task", "tsv", "--path", pairs, *TINY, "--max_steps", "2",
                          "--progress", "false", "--out_dir", run_dir], capsys)
    assert code == 0, err
    ckpt = run_dir / "checkpoint.npz"
    code, before, err = run(["translate", "--checkpoint", ckpt, "big cat", "red car"], capsys)
    assert code == 0, err
    pairs.unlink()
    code, after, err = run(["translate", "--checkpoint", ckpt, "big cat", "red car"], capsys)
    assert code == 0, err
    assert after == before and [line.split("\t")[0] for line in after.splitlines()] == \
        ["big cat", "red car"]
    # drawing it needs no data either (a random batch of its sizes)
    code, out, err = run(["graph", "--checkpoint", ckpt, "--out", tmp_path / "g.dot"], capsys)
    assert code == 0 and (tmp_path / "g.dot").read_text().startswith("digraph"), err
    # evaluating needs the sentence pairs: one line naming the file
    line = one_line_error(*run(["eval", "--checkpoint", ckpt], capsys))
    assert "pairs.tsv" in line
    # nothing in the file needs pickle to read
    with np.load(ckpt, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)


def test_tsv_task_from_vocab_matches_the_task():
    from tinygradx.models.tasks.tsv import tsv_task_from_vocab
    pairs_task = pytest.importorskip("tinygradx.models.tasks").make_task
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        from pathlib import Path
        path = Path(d) / "p.tsv"
        _write_pairs(path)
        task = pairs_task("tsv", path=str(path))
    bare = tsv_task_from_vocab(task.src_vocab.to_list(), task.tgt_vocab.to_list(),
                               task.max_lengths(), source="p.tsv")
    assert bare.max_lengths() == task.max_lengths()
    assert bare.encode_src("Big, cat!") == task.encode_src("Big, cat!")
    assert bare.train == [] and bare.test == []
    with pytest.raises(ValueError, match="lengths"):
        tsv_task_from_vocab(task.src_vocab.to_list(), task.tgt_vocab.to_list(), [0])


# ------------------------------------------------------------------------------------------
# docs/cli.md is the parser's
# ------------------------------------------------------------------------------------------

def _maker():
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", os.path.join(REPO, "docs", "make_cli_reference.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("lang, page", [("en", "docs/cli.md"), ("zh", "docs/zh/cli.md")])
def test_cli_reference_is_generated_from_the_parser(lang, page):
    with open(os.path.join(REPO, *page.split("/")), encoding="utf-8") as f:
        committed = f.read()
    assert committed == _maker().build(lang), (
        f"{page} differs from the parser; run: python docs/make_cli_reference.py")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cli_reference_covers_every_flag_and_would_catch_a_change(lang, monkeypatch):
    text = _maker().build(lang)
    for name, sub in subparsers().items():
        assert f"## tinygradx {name}" in text
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text or f", {flag}" in text, (name, flag)
    monkeypatch.setitem(cli_help.TRAIN_HELP, "lr", "the learning rate at its peak")
    assert _maker().build(lang) != text


def test_chinese_cli_reference_has_the_english_tables_under_chinese_headings():
    """docs/zh/cli.md differs from docs/cli.md only in its introduction and table heads: every
    command, flag row and example is the English page's, in the same order."""
    en, zh = (_maker().build(lang).split("\n") for lang in ("en", "zh"))

    def body(lines, commands_heading):
        rows = lines[lines.index(commands_heading):]
        return [s for s in rows if not s.startswith(("## Commands", "## 命令", "| command |",
                                                     "| 命令 |", "| flag |", "| 参数 |"))]
    assert body(zh, "## 命令") == body(en, "## Commands")
    assert zh[0] == "# `tinygradx` 命令" and "保持英文原样" in "\n".join(zh)
    assert "| 参数 | 含义 |" in zh and "| flag | meaning |" not in zh
