"""A run directory belongs to one process: run.lock, taken atomically, released on exit
(exceptions and SIGTERM too), a stale lock of a killed run taken over with one line saying so
(docs/tasks.md, "When things go wrong")."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tinygradx import io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--task", "copy", "--d_model", "16", "--n_head", "2", "--n_layer", "1",
        "--batch_size", "4", "--n_train", "40", "--eval_batches", "1", "--eval_examples", "2",
        "--health_interval", "0", "--progress", "false"]
LONG = ["--max_steps", "1000000", "--eval_interval", "1000000"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


STARTED = []


@pytest.fixture(autouse=True)
def _no_leftover_runs():
    """Every run a test starts is gone when it ends, pass or fail."""
    yield
    while STARTED:
        p = STARTED.pop()
        if p.poll() is None:
            p.kill()
            p.communicate()


def start(*argv):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "tinygradx", *map(str, argv)], cwd=REPO,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    STARTED.append(p)
    return p


def wait_for(cond, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    raise AssertionError("timed out")


def rows(run_dir):
    try:
        return (run_dir / "metrics.jsonl").read_text().count("\n")
    except FileNotFoundError:
        return 0


def one_winner(procs, run_dir):
    """Of processes started at once into run_dir: exactly one exits 2 with the lock message
    while the other trains; the winner is stopped with SIGTERM (exit 143, lock released)."""
    wait_for(lambda: any(p.poll() is not None for p in procs))
    loser = next(p for p in procs if p.poll() is not None)
    out, err = loser.communicate()
    assert loser.returncode == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    (winner,) = [p for p in procs if p is not loser]
    lock = json.loads((run_dir / "run.lock").read_text())
    assert lock["pid"] == winner.pid and lock["host"] == socket.gethostname()
    assert "train" in lock["command"] and lock["started"]
    assert f"--out_dir {run_dir} is in use by another run (pid {winner.pid}" in lines[0], lines
    wait_for(lambda: rows(run_dir) >= 2)
    assert winner.poll() is None
    winner.send_signal(signal.SIGTERM)
    out, err = winner.communicate(timeout=120)
    assert winner.returncode == 143, (out, err)
    assert "terminated at step" in out
    assert not (run_dir / "run.lock").exists()
    step = io.load_checkpoint(str(run_dir / "checkpoint.npz"))[1]["step"]
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text()
             .splitlines()]
    assert steps == list(range(1, step + 1))        # one run's log, up to its checkpoint


def test_two_fresh_runs_at_once_one_runs(tmp_path):
    run_dir = tmp_path / "run"
    procs = [start("train", *TINY, *LONG, "--out_dir", run_dir) for _ in range(2)]
    one_winner(procs, run_dir)


def test_two_resumes_of_one_checkpoint_at_once_one_runs(tmp_path):
    run_dir = tmp_path / "run"
    p = start("train", *TINY, "--max_steps", "2", "--eval_interval", "2", "--out_dir", run_dir)
    assert p.wait(timeout=180) == 0, p.communicate()
    procs = [start("train", "--resume", run_dir / "checkpoint.npz", *LONG) for _ in range(2)]
    one_winner(procs, run_dir)


def test_a_killed_runs_stale_lock_is_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    p = start("train", *TINY, *LONG, "--save_interval", "1", "--out_dir", run_dir)
    wait_for(lambda: (run_dir / "checkpoint.npz").exists() and rows(run_dir) >= 2)
    p.kill()                                              # kill -9: no finally, no atexit
    p.communicate()
    assert json.loads((run_dir / "run.lock").read_text())["pid"] == p.pid
    step = io.load_checkpoint(str(run_dir / "checkpoint.npz"))[1]["step"]
    q = start("train", "--resume", run_dir / "checkpoint.npz", "--max_steps", step + 2)
    out, err = q.communicate(timeout=180)
    assert q.returncode == 0, (out, err)
    notes = [line for line in out.splitlines() if "stale lock" in line]
    assert len(notes) == 1, out
    assert notes[0].startswith(f"{run_dir}: taking over a stale lock of pid {p.pid} (started ")
    assert notes[0].endswith("which is no longer running"), notes
    assert not (run_dir / "run.lock").exists()


def test_lock_in_process_is_released_on_exceptions(tmp_path, monkeypatch):
    from tinygradx.models.training.rundir import RunDirLockedError, RunLock
    from tinygradx.models.training.trainer import Trainer, TrainConfig
    cfg = TrainConfig(task="copy", d_model=16, n_head=2, n_layer=1, batch_size=4, n_train=40,
                      eval_batches=1, eval_examples=2, health_interval=0, progress=False,
                      max_steps=3, out_dir=str(tmp_path / "run"))
    trainer = Trainer(cfg, log=lambda *a: None)

    def boom():
        assert (tmp_path / "run" / "run.lock").exists()
        raise RuntimeError("boom")
    monkeypatch.setattr(trainer, "train_step", boom)
    with pytest.raises(RuntimeError, match="boom"):
        trainer.train()
    assert not (tmp_path / "run" / "run.lock").exists()
    # one process may hold the same directory twice (two Trainers in one script)
    with RunLock(str(tmp_path / "run")), RunLock(str(tmp_path / "run")):
        assert (tmp_path / "run" / "run.lock").exists()
    assert not (tmp_path / "run" / "run.lock").exists()
    # a lock held by another live process is refused in one line
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from tinygradx.models.training.rundir import RunLock; "
        f"RunLock({str(tmp_path / 'other')!r}); print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirLockedError, match=f"in use by another run \\(pid {holder.pid}"):
            RunLock(str(tmp_path / "other"))
        started = json.loads((tmp_path / "other" / "run.lock").read_text())["started"]
        live = _message(tmp_path / "other")
    finally:
        holder.kill()
        holder.wait()
    lines = []
    with RunLock(str(tmp_path / "other"), log=lines.append):     # killed: stale, taken over
        assert len(lines) == 1 and f"stale lock of pid {holder.pid}" in lines[0]
    # docs/tasks.md quotes both messages (its example: runs/dates, pid 4242)
    with open(os.path.join(REPO, "docs", "tasks.md"), encoding="utf-8") as f:
        doc = " ".join(f.read().split())

    def as_in_doc(text):
        return (text.replace(str(tmp_path / "other"), "runs/dates")
                .replace(f"pid {holder.pid}", "pid 4242")
                .replace(started, "2026-12-01 14:00:00 +0000"))
    assert f"tinygradx train: error: {as_in_doc(live)}" in doc, as_in_doc(live)
    assert as_in_doc(lines[0]) in doc, as_in_doc(lines[0])


def _message(run_dir):
    from tinygradx.models.training.rundir import RunDirLockedError, RunLock
    try:
        RunLock(str(run_dir))
    except RunDirLockedError as err:
        return str(err)
    raise AssertionError("the lock was free")
