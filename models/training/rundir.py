"""A run directory (default runs/<task>) belongs to one run; its metrics.jsonl follows the run.

`claim_run_dir` is what Trainer.train does first: refuse a directory holding another run's
checkpoint (`check_run_dir`), delete temp files that killed saves left behind, and line the
metrics log up with the step the run starts from (cut back to a resumed checkpoint's step).
"""
from __future__ import annotations

import json
import os

from tinygradx import io

from tinygradx.models.training.config import is_int


class RunDirError(ValueError):
    """A new run was pointed at a directory that holds another run's checkpoint."""


def check_run_dir(out_dir, resume=None, overwrite=False):
    """A run directory belongs to one run: refuse a new run into a directory with a checkpoint.

    Allowed: no checkpoint there; `overwrite`; or `resume` is that very checkpoint file (or
    resuming from elsewhere into a directory without a checkpoint).
    """
    ckpt = os.path.join(out_dir, "checkpoint.npz")
    if not os.path.exists(ckpt) or overwrite:
        return
    if resume is not None and os.path.exists(resume) and os.path.samefile(ckpt, resume):
        return
    if resume is not None:
        raise RunDirError(f"--out_dir {out_dir} already holds another run's checkpoint; "
                          f"choose another --out_dir or pass --overwrite to replace it")
    raise RunDirError(f"--out_dir {out_dir} already holds a run (checkpoint.npz); continue it "
                      f"with --resume, replace it with --overwrite, or choose another --out_dir")


def claim_run_dir(out_dir, step, resumed_from=None, overwrite=False):
    """Check out_dir is this run's, create it, clean it up, line the log up with `step`.

    A fresh run (`resumed_from` None) deletes the old metrics.jsonl, best.npz and
    checkpoint.npz; a resumed run keeps the log rows up to `step`, taken from the log next to
    `resumed_from` when out_dir has none yet.
    """
    check_run_dir(out_dir, resume=resumed_from, overwrite=overwrite)
    os.makedirs(out_dir, exist_ok=True)
    remove_stale_temp_files(out_dir)
    log_path = os.path.join(out_dir, "metrics.jsonl")
    if resumed_from is None:
        # a fresh run: the directory held no checkpoint (or --overwrite), so any old log
        # and best.npz belong to nothing that will remain
        for name in ("metrics.jsonl", "best.npz", "checkpoint.npz"):
            path = os.path.join(out_dir, name)
            if os.path.exists(path):
                os.unlink(path)
    else:
        source = os.path.join(os.path.dirname(os.path.abspath(resumed_from)), "metrics.jsonl")
        if not os.path.exists(log_path) and os.path.exists(source):
            source_log = source                  # resumed elsewhere: start from its log
        else:
            source_log = log_path
        truncate_metrics(source_log, step, out=log_path)


def remove_stale_temp_files(directory):
    """Delete temp files of saves killed midway (.NAME.PID.RANDOM.tmp of a dead process)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if not (name.startswith(".") and name.endswith(".tmp") and len(parts) >= 5):
            continue
        try:
            pid = int(parts[-3])
        except ValueError:
            continue
        if pid != os.getpid() and alive(pid):
            continue                       # another live process is writing it
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def alive(pid):
    """Whether a process with this id exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def read_metrics(path):
    """The rows of a metrics.jsonl; a torn last line (a kill mid-write) is skipped."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and is_int(row.get("step")):
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


def truncate_metrics(path, step, out=None):
    """Write the rows of `path` up to `step` to `out` (default: in place), atomically, so the
    log of a resumed run matches its checkpoint's weights."""
    out = out or path
    rows = [r for r in read_metrics(path) if r["step"] <= step]
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    io.atomic_write(out, lambda f: f.write(text))
