"""Runs you can trust: the `tinygradx` command as a user's shell runs it (a subprocess), on bad
flags, damaged checkpoints, run directories that belong to another run, a full disk, kill -9
in the middle of saves, and Ctrl-C (twice).

Every failure must be exit code 2 (130 for Ctrl-C), one line on stderr naming the problem, no
traceback, and the previous checkpoint and metrics.jsonl as they were.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tinygradx import io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a model of a few thousand parameters: a step and a save take milliseconds
TINY = ["--task", "copy", "--d_model", "16", "--n_head", "2", "--n_layer", "1",
        "--batch_size", "4", "--n_train", "40", "--eval_batches", "1", "--eval_examples", "2",
        "--health_interval", "0", "--progress", "false"]


def env():
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def cli(*argv, timeout=120, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "tinygradx", *map(str, argv)], cwd=REPO,
                          env=env(), capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)


def one_line_error(proc, code=2):
    """The single stderr line of a failed command (and the checks every failure must pass)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "error: " in lines[0], proc.stderr
    return lines[0]


def snapshot(run_dir):
    """Bytes of every file of a run directory."""
    return {name: (run_dir / name).read_bytes() for name in sorted(os.listdir(run_dir))}


def steps_of(run_dir, strict=True):
    """Steps of metrics.jsonl, in file order; strict: every line must be a whole JSON row (not
    strict: a line being written right now is skipped)."""
    steps = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        try:
            steps.append(json.loads(line)["step"])
        except ValueError:
            if strict:
                raise
    return steps


def ckpt_step(path):
    return io.load_checkpoint(str(path))[1]["step"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One finished 3-step run (checkpoint, best.npz, metrics.jsonl), never written again:
    tests copy it or check it is untouched."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    proc = cli("train", *TINY, "--max_steps", "3", "--eval_interval", "2", "--out_dir", run_dir)
    assert proc.returncode == 0, proc.stderr
    assert steps_of(run_dir) == [1, 2, 3] and ckpt_step(run_dir / "checkpoint.npz") == 3
    return run_dir


def copy_run(run, dest):
    shutil.copytree(run, dest)
    return dest


# ------------------------------------------------------------------------------------------
# bad flags: one line naming the flag, exit 2, nothing on disk touched
# ------------------------------------------------------------------------------------------

BAD_FLAGS = {
    "lr inf": (["--lr", "inf"], "--lr: must be a finite number > 0, got inf"),
    "grad_clip nan": (["--grad_clip", "nan"], "--grad_clip: must be a finite number >= 0"),
    "eval_batches 0": (["--eval_batches", "0"], "--eval_batches: must be an integer >= 1"),
    "noam warmup 0": (["--schedule", "noam", "--warmup", "0"],
                      "--warmup: must be >= 1 with --schedule noam"),
    "warmup -10": (["--warmup", "-10"], "--warmup: must be an integer >= 0, got -10"),
    "max_steps 0": (["--max_steps", "0"], "--max_steps: must be an integer >= 1, got 0"),
    "n_layer -1": (["--n_layer", "-1"], "--n_layer: must be an integer >= 1, got -1"),
    "eval_examples 0": (["--eval_examples", "0"], "--eval_examples: must be an integer >= 1"),
    "d_ff -1": (["--d_ff", "-1"], "--d_ff: must be an integer >= 0"),
    "heads": (["--d_model", "30", "--n_head", "4"], "--n_head: must be a divisor of --d_model"),
    "huge model": (["--d_model", "200000", "--n_head", "1"], "GiB"),
    "grad_accum 0": (["--grad_accum", "0"], "--grad_accum: must be an integer >= 1"),
    "teacher_forcing 2": (["--teacher_forcing", "2"], "--teacher_forcing: must be a finite"),
}


@pytest.mark.parametrize("case", list(BAD_FLAGS))
def test_bad_flag_is_one_line_and_touches_nothing(case, run, tmp_path):
    """Each rejected run (into an existing run's directory, and into a new one) leaves the
    disk as it was: the old run's metrics.jsonl is not emptied, no directory is created."""
    flags, needle = BAD_FLAGS[case]
    before = snapshot(run)
    proc = cli("train", *TINY, *flags, "--out_dir", run)
    line = one_line_error(proc)
    assert needle in line, line
    assert snapshot(run) == before
    if case in ("lr inf", "huge model"):
        proc = cli("train", *TINY, *flags, "--out_dir", tmp_path / "new")
        assert needle in one_line_error(proc)
        assert not (tmp_path / "new").exists()


def test_graph_unknown_format_is_one_line(tmp_path):
    line = one_line_error(cli("graph", "--out", tmp_path / "g.xyz"))
    assert "unknown format .xyz" in line and "--out" in line
    assert not (tmp_path / "g.xyz").exists()


# ------------------------------------------------------------------------------------------
# damaged checkpoints
# ------------------------------------------------------------------------------------------

def _damaged(run, tmp_path, kind):
    arrays, meta = io.load_checkpoint(str(run / "checkpoint.npz"))
    path = tmp_path / "damaged" / "checkpoint.npz"
    path.parent.mkdir()
    if kind == "truncated":
        data = (run / "checkpoint.npz").read_bytes()
        path.write_bytes(data[:len(data) // 3])
        return path, "truncated"
    if kind == "no optimizer":
        del meta["optimizer"]
        needle = "no optimizer entry"
    elif kind == "no config":
        del meta["config"]
        needle = "not a training checkpoint"
    elif kind == "lr is a string":
        meta["config"]["lr"] = "fast"
        needle = "config lr: must be a number, got 'fast'"
    elif kind == "n_layer is a float":
        meta["config"]["n_layer"] = 1.5
        needle = "config n_layer: must be a int, got 1.5"
    elif kind == "step is negative":
        meta["step"] = -4
        needle = "step must be an integer >= 0"
    elif kind == "huge config":
        # a tiny file whose config claims a 200000-wide model: refused before any allocation
        meta["config"].update(d_model=200000, d_ff=800000, n_head=1)
        arrays = {}
        needle = "GiB"
    elif kind == "optimizer state garbled":
        meta["optimizer"] = {"state": "nonsense", "param_groups": 3}
        needle = "damaged optimizer"
    elif kind == "weights missing":
        arrays = {k: v for k, v in arrays.items() if not k.startswith("model/generator")}
        needle = "does not fit this model"
    io.save_checkpoint(str(path), arrays, meta)
    return path, needle


DAMAGE = ["truncated", "no optimizer", "no config", "lr is a string", "n_layer is a float",
          "step is negative", "huge config", "optimizer state garbled", "weights missing"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_checkpoint_is_one_line(kind, run, tmp_path):
    path, needle = _damaged(run, tmp_path, kind)
    before = path.read_bytes()
    start = time.monotonic()
    proc = cli("train", "--resume", path, "--max_steps", "10")
    line = one_line_error(proc)
    assert needle in line and str(path) in line, line
    assert path.read_bytes() == before
    assert sorted(os.listdir(path.parent)) == ["checkpoint.npz"]    # nothing written beside it
    if kind == "huge config":
        assert time.monotonic() - start < 30          # no attempt at 300 GB
        line = one_line_error(cli("eval", "--checkpoint", path))
        assert "GiB" in line


# ------------------------------------------------------------------------------------------
# a run directory belongs to one run
# ------------------------------------------------------------------------------------------

def test_new_run_into_a_run_directory_is_refused_unless_overwrite(run, tmp_path):
    before = snapshot(run)
    line = one_line_error(cli("train", *TINY, "--max_steps", "1", "--out_dir", run))
    assert "already holds a run" in line and "--resume" in line and "--overwrite" in line
    assert snapshot(run) == before
    other = copy_run(run, tmp_path / "other")
    proc = cli("train", *TINY, "--max_steps", "1", "--out_dir", other, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    assert steps_of(other) == [1] and ckpt_step(other / "checkpoint.npz") == 1


def test_resuming_a_copied_checkpoint_writes_beside_the_copy(run, tmp_path):
    before = snapshot(run)
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(run / "checkpoint.npz", copy / "checkpoint.npz")
    proc = cli("train", "--resume", copy / "checkpoint.npz", "--max_steps", "5")
    assert proc.returncode == 0, proc.stderr
    assert snapshot(run) == before                    # the original run is untouched
    assert ckpt_step(copy / "checkpoint.npz") == 5
    assert steps_of(copy) == [4, 5]           # only the checkpoint was copied, not the log
    # --out_dir elsewhere: written there; an occupied --out_dir is refused
    proc = cli("train", "--resume", copy / "checkpoint.npz", "--max_steps", "6",
               "--out_dir", tmp_path / "third")
    assert proc.returncode == 0, proc.stderr
    assert ckpt_step(tmp_path / "third" / "checkpoint.npz") == 6
    assert steps_of(tmp_path / "third") == [4, 5, 6]     # the checkpoint's log, then on
    assert ckpt_step(copy / "checkpoint.npz") == 5
    line = one_line_error(cli("train", "--resume", copy / "checkpoint.npz", "--max_steps", "9",
                              "--out_dir", run))
    assert "another run's checkpoint" in line
    assert snapshot(run) == before


def test_resume_flags_that_conflict_are_listed(run, tmp_path):
    other = copy_run(run, tmp_path / "r")
    before = snapshot(other)
    line = one_line_error(cli("train", "--resume", other / "checkpoint.npz", "--n_layer", "3",
                              "--d_model", "32", "--max_steps", "9"))
    assert "--n_layer 3 (checkpoint: 1)" in line and "--d_model 32 (checkpoint: 16)" in line
    assert "--max_steps" in line.split("only", 1)[1]         # the list of what may change
    assert snapshot(other) == before
    line = one_line_error(cli("train", "--resume", other / "checkpoint.npz", "--max_steps", "3"))
    assert "already at step 3" in line


def test_resume_drops_metrics_rows_past_the_checkpoint(run, tmp_path):
    other = copy_run(run, tmp_path / "r")
    with open(other / "metrics.jsonl", "a") as f:      # rows of steps whose save never landed
        f.write(json.dumps({"step": 4, "loss": 1.0}) + "\n" + '{"step": 5, "lo')
    proc = cli("train", "--resume", other / "checkpoint.npz", "--max_steps", "4")
    assert proc.returncode == 0, proc.stderr
    assert steps_of(other) == [1, 2, 3, 4]


def test_stale_temp_files_are_removed(run, tmp_path):
    other = copy_run(run, tmp_path / "r")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()                                   # a pid that is no longer running
    stale = other / f".checkpoint.npz.{dead.pid}.0badf00d.tmp"
    stale.write_bytes(b"x" * 1000)
    proc = cli("train", "--resume", other / "checkpoint.npz", "--max_steps", "4")
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists()
    assert not [n for n in os.listdir(other) if n.endswith(".tmp")]


def test_chars_checkpoint_checks_its_text_file(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\n" * 30, encoding="utf-8")
    run_dir = tmp_path / "chars"
    proc = cli("train", "--task", "chars", "--text", text, "--d_model", "16", "--n_head", "2",
               "--n_layer", "1", "--block_size", "8", "--batch_size", "4", "--eval_batches", "1",
               "--max_steps", "1", "--progress", "false", "--out_dir", run_dir)
    assert proc.returncode == 0, proc.stderr
    ckpt = run_dir / "checkpoint.npz"
    text.write_text("THE QUICK BROWN FOX\n" * 30, encoding="utf-8")   # edited after training
    for argv in (["eval", "--checkpoint", ckpt],
                 ["train", "--resume", ckpt, "--max_steps", "3"]):
        line = one_line_error(cli(*argv))
        assert "--text" in line and "no longer matches the vocabulary" in line, line
    text.unlink()                       # gone: generating needs only the saved vocabulary
    proc = cli("generate", "--checkpoint", ckpt, "--prompt", "the", "--max_new_tokens", "5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("the") and len(proc.stdout.rstrip("\n")) == 8


# ------------------------------------------------------------------------------------------
# a save that fails
# ------------------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "setrlimit") and sys.platform != "linux",
                    reason="needs RLIMIT_FSIZE")
def test_failed_save_names_the_file_and_keeps_the_previous_checkpoint(run, tmp_path):
    import resource
    other = copy_run(run, tmp_path / "r")
    before = (other / "checkpoint.npz").read_bytes()
    limit = len(before) // 4                          # the metrics log fits, a checkpoint not

    def small_files():                                # Python ignores SIGXFSZ: writes get EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = cli("train", "--resume", other / "checkpoint.npz", "--max_steps", "5",
               "--save_interval", "1", preexec_fn=small_files)
    line = one_line_error(proc)
    assert f"checkpoint not saved: {other / 'checkpoint.npz'}: File too large" in line
    assert "previous checkpoint is intact" in line
    assert (other / "checkpoint.npz").read_bytes() == before
    assert not [n for n in os.listdir(other) if n.endswith(".tmp")]
    # the log may run one row ahead of the checkpoint; a resume puts them back in line
    proc = cli("train", "--resume", other / "checkpoint.npz", "--max_steps", "4")
    assert proc.returncode == 0, proc.stderr
    assert steps_of(other) == [1, 2, 3, 4]


# ------------------------------------------------------------------------------------------
# kill -9 during saves, Ctrl-C
# ------------------------------------------------------------------------------------------

def _start(run_dir, *extra):
    return subprocess.Popen([sys.executable, "-m", "tinygradx", "train", *map(str, extra)],
                            cwd=REPO, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_training(proc, run_dir, min_step, timeout=60):
    """Until the process has logged a step past min_step (it is in its save-every-step loop)."""
    deadline = time.monotonic() + timeout
    while True:
        steps = steps_of(run_dir, strict=False) if (run_dir / "metrics.jsonl").exists() else []
        if steps and steps[-1] > min_step:
            return
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "training did not start"
        time.sleep(0.01)


@pytest.mark.slow
def test_kill_9_during_saves_never_loses_the_run(tmp_path):
    """Until 20 kills have landed inside a save: resume, let it save every step for a random
    moment, kill -9 (a temp file left behind shows the kill landed mid-save; about half do;
    ~50 s on 2 shared cores, hence slow). After every kill the checkpoint loads and its step
    never goes back; finally the log is exactly steps 1..N."""
    rng = random.Random(0)
    run_dir = tmp_path / "run"
    flags = [*TINY, "--save_interval", "1", "--eval_interval", "1000000", "--max_steps",
             "1000000"]
    last, in_save, kills = 0, 0, 0
    while in_save < 20:
        assert kills < 100, f"only {in_save} of {kills} kills landed inside a save"
        argv = ["--out_dir", run_dir, *flags] if kills == 0 else \
            ["--resume", run_dir / "checkpoint.npz", "--max_steps", "1000000"]
        proc = _start(run_dir, *argv)
        try:
            # past any row a killed process left beyond its checkpoint: this process is in
            # its save-every-step loop
            _wait_for_training(proc, run_dir, last + 1)
            time.sleep(rng.uniform(0, 0.15))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        kills += 1
        in_save += any(n.endswith(".tmp") for n in os.listdir(run_dir))
        step = ckpt_step(run_dir / "checkpoint.npz")         # loads, every time
        assert step >= last, (kills, step, last)
        assert max(steps_of(run_dir, strict=False)) >= step  # the log is never behind
        last = step
    final = last + 2
    proc = cli("train", "--resume", run_dir / "checkpoint.npz", "--max_steps", final)
    assert proc.returncode == 0, proc.stderr
    assert ckpt_step(run_dir / "checkpoint.npz") == final
    assert steps_of(run_dir) == list(range(1, final + 1))   # one row a step, none lost or doubled
    assert not [n for n in os.listdir(run_dir) if n.endswith(".tmp")]
    print(f"20 of {kills} kills landed inside a save (temp file left, then removed)")


def _sigint_run(tmp_path, second_after=None):
    run_dir = tmp_path / "run"
    proc = _start(run_dir, *TINY, "--save_interval", "1", "--eval_interval", "1000000",
                  "--max_steps", "1000000", "--out_dir", run_dir)
    try:
        _wait_for_training(proc, run_dir, 3)
        proc.send_signal(signal.SIGINT)
        if second_after is not None:
            time.sleep(second_after)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in out + err
    return run_dir, out, err


def test_ctrl_c_saves_and_the_log_matches(tmp_path):
    run_dir, out, err = _sigint_run(tmp_path)
    step = int(out.split("interrupted at step ")[1].split(":")[0])
    assert ckpt_step(run_dir / "checkpoint.npz") == step
    assert steps_of(run_dir) == list(range(1, step + 1))
    assert err.strip() == ""


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.01])
def test_second_ctrl_c_during_the_save_stops_at_once(tmp_path, delay):
    run_dir, out, err = _sigint_run(tmp_path, second_after=delay)
    lines = err.strip().splitlines()
    assert lines in ([], ["tinygradx train: interrupted"]), err
    step = ckpt_step(run_dir / "checkpoint.npz")           # a complete checkpoint is there
    assert steps_of(run_dir)[:step] == list(range(1, step + 1))
    assert not [n for n in os.listdir(run_dir) if n.endswith(".tmp")]
    assert step >= 3
