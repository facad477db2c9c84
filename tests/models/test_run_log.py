"""A run's metrics.jsonl, as `train --resume` and `plot` read it, and the health picture drawn
from it, read back.

- A damaged line (bytes that are not UTF-8, a row broken in the middle of the file) is one
  error line naming the file and the line, for both commands; the resume writes nothing and
  never leaves a hole in the log's steps.
- A last row cut short by a kill (no newline) is the one thing a run can leave behind: it is
  left out and the command says so in one line.
- Every curve of the health picture is the column of metrics.jsonl it is labelled with
  (matplotlib's Line2D data against the log, per layer).
"""
import json
import math

import numpy as np
import pytest

from tinygradx.models.apps import cli, pictures
from tinygradx.models.apps import run_pictures
from tinygradx.models.training import rundir

TINY = ["--task", "copy", "--d_model", "16", "--n_head", "2", "--n_layer", "1",
        "--batch_size", "4", "--n_train", "40", "--eval_batches", "1", "--eval_examples", "2",
        "--progress", "false"]


def run(argv, capsys):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err):
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0], err
    return lines[0]


@pytest.fixture(scope="module")
def six_steps(tmp_path_factory):
    """A finished 6-step run (3 steps, then resumed for 3 more) with a health row every step
    and its checkpoint at step 6."""
    out = tmp_path_factory.mktemp("log") / "run"
    code = cli.main([str(a) for a in ["train", *TINY, "--max_steps", "3", "--eval_interval",
                                      "3", "--health_interval", "1", "--out_dir", out]])
    assert code == 0
    code = cli.main([str(a) for a in ["train", *TINY, "--max_steps", "6", "--eval_interval",
                                      "3", "--health_interval", "1", "--resume",
                                      out / "checkpoint.npz"]])
    assert code == 0
    return out


def _copy(src, dest):
    import shutil
    shutil.copytree(src, dest)
    return dest


def _damage(path, line, how):
    lines = path.read_bytes().split(b"\n")
    if how == "bytes":           # two bytes that are not UTF-8 inside the row
        lines[line - 1] = lines[line - 1][:10] + b"\xff\xfe" + lines[line - 1][10:]
    elif how == "row":           # the row cut in the middle of the file
        lines[line - 1] = lines[line - 1][:25]
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("how", ["bytes", "row"])
def test_a_damaged_line_is_one_error_naming_file_and_line(six_steps, tmp_path, capsys, how):
    run_dir = _copy(six_steps, tmp_path / "run")
    log = run_dir / "metrics.jsonl"
    _damage(log, 2, how)
    before = log.read_bytes()
    line = one_line_error(*run(["plot", run_dir], capsys))
    assert f"{log} line 2: " in line and ("UTF-8" if how == "bytes" else "JSON") in line, line
    # the resume stops before writing: the log keeps its six lines, damage and all (it used
    # to drop row 2 and go on: steps [1, 3, 4, 5, 6, 7, 8])
    line = one_line_error(*run(["train", *TINY, "--max_steps", "8", "--eval_interval", "3",
                                "--health_interval", "1", "--resume",
                                run_dir / "checkpoint.npz"], capsys))
    assert f"{log} line 2: " in line, line
    assert log.read_bytes() == before
    with pytest.raises(rundir.MetricsLogError, match="line 2"):
        rundir.read_metrics(str(log))


def test_a_row_cut_by_a_kill_is_left_out_and_said(six_steps, tmp_path, capsys):
    """The torn last row of a kill mid-write: plot draws the rest and says so; the resume
    drops it (it is past the checkpoint) and says so; no step is missing."""
    run_dir = _copy(six_steps, tmp_path / "run")
    log = run_dir / "metrics.jsonl"
    log.write_bytes(log.read_bytes() + b'{"step": 7, "loss": 0.')
    code, out, err = run(["plot", run_dir], capsys)
    assert code == 0 and "line 7: a row cut short" in err and str(log) in err, err
    assert len((run_dir / "health.csv").read_text().splitlines()) == 1 + 6
    code, out, err = run(["train", *TINY, "--max_steps", "7", "--eval_interval", "3",
                          "--health_interval", "1", "--resume", run_dir / "checkpoint.npz"],
                         capsys)
    assert code == 0, err
    assert "line 7: a row cut short" in out + err
    steps = [json.loads(x)["step"] for x in log.read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6, 7]


def test_health_picture_draws_each_layer_from_its_own_column(six_steps):
    """Every curve of the two per-layer panels is the metrics.jsonl column of the layer it is
    labelled with; loss and lr too (the old picture drew each layer's update ratio from the
    column next to it: src_embed's showed the generator's gradient norm)."""
    if not pictures.have_matplotlib():
        pytest.skip("matplotlib is not installed (the CSV test below still runs)")
    rows = [json.loads(x) for x in (six_steps / "metrics.jsonl").read_text().splitlines()]
    table, layers = run_pictures.health_table(str(six_steps))
    fig = run_pictures.health_figure(table, layers, "t")
    axes = {ax.get_title(): ax for ax in fig.axes}
    assert len(layers) >= 4 and "src_embed" in layers and "generator" in layers
    drawn = 0
    for title, kind in (("gradient norm per layer (before clipping)", "grad_norm"),
                        ("update:data ratio per layer  ||lr·update|| / ||param||",
                         "update_ratio")):
        lines = {ln.get_label(): ln for ln in axes[title].get_lines()}
        for layer in layers:
            want = [(r["step"], r["layers"][layer][kind]) for r in rows
                    if layer in r.get("layers", {})]
            got = list(zip(lines[layer].get_xdata(), lines[layer].get_ydata(), strict=True))
            assert np.allclose(np.array(got), np.array(want), rtol=1e-12), (kind, layer)
            drawn += 1
    assert drawn == 2 * len(layers)
    loss = axes["loss and exact match"].get_lines()[0]
    assert loss.get_label() == "train loss"
    assert np.allclose(loss.get_ydata(), [r["loss"] for r in rows])
    lr = axes["learning rate"].get_lines()[0]
    assert np.allclose(lr.get_ydata(), [r["lr"] for r in rows])
    # the update ratios are ~1e-3-ish numbers, not the norms next to them in the log
    ratio = rows[-1]["layers"]["src_embed"]["update_ratio"]
    assert ratio != rows[-1]["layers"]["generator"]["grad_norm"]


def test_health_csv_columns_are_the_logs(six_steps, tmp_path):
    """health.csv: each named column holds the log's number for that name, row by row."""
    written = pictures.training_health(str(six_steps), out_dir=str(tmp_path))
    import csv
    with open(written[0], encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    rows = [json.loads(x) for x in (six_steps / "metrics.jsonl").read_text().splitlines()]
    assert len(table) == len(rows)
    for got, r in zip(table, rows, strict=True):
        assert int(got["step"]) == r["step"]
        assert math.isclose(float(got["grad_norm"]), r["grad_norm"], rel_tol=1e-5)
        for layer, h in r["layers"].items():
            for kind in ("grad_norm", "update_ratio"):
                assert math.isclose(float(got[f"{kind}/{layer}"]), h[kind], rel_tol=1e-5)
