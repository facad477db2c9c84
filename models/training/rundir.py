"""A run directory (default runs/<task>) belongs to one run; its metrics.jsonl follows the run.

`RunLock` is what Trainer.train takes first: one process at a time writes a run directory
(a lock file, run.lock, held for the whole of train()). `claim_run_dir` comes next: refuse a
directory holding another run's checkpoint (`check_run_dir`), delete temp files that killed
saves left behind, and line the metrics log up with the step the run starts from (cut back to
a resumed checkpoint's step).
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import sys
import time

from tinygradx import io

from tinygradx.models.training.config import is_int


class RunDirError(ValueError):
    """A new run was pointed at a directory that holds another run's checkpoint."""


class RunDirLockedError(RunDirError):
    """Another live process holds the run directory's lock (run.lock)."""


LOCK_NAME = "run.lock"
_HELD = {}            # real path of a run directory -> [lock path, fd, inode, count] of ours


class RunLock:
    """The lock that makes a run directory one process's: `OUT_DIR/run.lock`, holding the pid,
    host, start time and command line of its owner (JSON).

    Taken atomically: the file is written under a temporary name (created with O_CREAT|O_EXCL)
    and published with os.link, which fails if run.lock exists, so nobody ever reads a lock
    half written. The owner also holds an flock on it (where the OS has one), which the
    kernel drops when the process dies, even by kill -9. A lock that exists is
    - live (another process on this host holds it, or its pid is alive): refused with
      RunDirLockedError, one line naming the pid and the directory;
    - stale (its owner was killed: pid not alive on this host, or the flock is free): said in
      one line through `log`, then taken over.
    Released (the file deleted) by `release()`, which Trainer.train calls in a `finally`, and
    at exit (atexit) for anything still held. One process may take the same directory again
    (Trainers in one script): the lock counts its holders.
    """

    def __init__(self, out_dir, log=print):
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)
        self.key = os.path.realpath(out_dir)
        self.path = os.path.join(out_dir, LOCK_NAME)
        if self.key in _HELD:
            _HELD[self.key][3] += 1
            return
        for _ in range(5):            # a stale lock taken over, then raced: try again
            fd = self._publish()
            if fd is not None:
                _HELD[self.key] = [self.path, fd, os.fstat(fd).st_ino, 1]
                return
            self._take_over_if_stale(log)
        raise RunDirLockedError(f"--out_dir {out_dir}: could not take {self.path}: it keeps "
                                f"changing (another run is starting there)")

    def _publish(self):
        """Write our lock under a temporary name and link it to run.lock; the open fd (with
        its flock) on success, None if run.lock exists."""
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                "command": " ".join(sys.argv)}
        tmp = os.path.join(self.out_dir, f".{LOCK_NAME}.{os.getpid()}.{time.time_ns()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        try:
            _flock(fd, blocking=True)            # ours alone: nobody can see it yet
            os.write(fd, (json.dumps(info) + "\n").encode("utf-8"))
            os.fsync(fd)
            try:
                os.link(tmp, self.path)          # atomic: fails if run.lock exists
            except FileExistsError:
                os.close(fd)
                return None
            return fd
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(tmp)

    def _take_over_if_stale(self, log):
        """Refuse a live lock; delete a stale one (saying so in one line)."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return                                # released meanwhile: try again
        try:
            holder = read_lock(self.path)
            free = _flock(fd, blocking=False)
            pid, host = holder.get("pid"), holder.get("host")
            here = host == socket.gethostname()
            if free is False:                     # its owner is alive and holds it
                live = True
            elif free:                            # the owner's flock died with it
                live = bool(holder) and not here  # (another host's: we cannot tell)
            else:                                 # no flock here: the pid decides
                live = not (here and is_int(pid) and not alive(pid))
            if live:
                who = f"pid {pid}" + ("" if here or not host else f" on host {host}")
                raise RunDirLockedError(
                    f"--out_dir {self.out_dir} is in use by another run ({who}, started "
                    f"{holder.get('started', '?')}; lock file {self.path}); wait for it to "
                    f"finish or choose another --out_dir")
            if os.path.exists(self.path) and os.path.samestat(os.fstat(fd),
                                                              os.stat(self.path)):
                os.unlink(self.path)
                log(f"{self.out_dir}: taking over a stale lock of pid {pid} (started "
                    f"{holder.get('started', '?')}), which is no longer running")
        finally:
            os.close(fd)

    def release(self):
        """Give the directory back (the last holder in this process deletes run.lock)."""
        held = _HELD.get(self.key)
        if held is None:
            return
        held[3] -= 1
        if held[3] <= 0:
            _release(self.key)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _release(key):
    path, fd, ino, _ = _HELD.pop(key)
    try:
        if os.stat(path).st_ino == ino:          # still ours: delete it, then unlock
            os.unlink(path)
    except OSError:
        pass
    os.close(fd)


@atexit.register
def _release_all():
    for key in list(_HELD):
        _release(key)


def _flock(fd, blocking):
    """flock(LOCK_EX) the fd: True when taken, False when another process holds it, None
    where the OS has no flock (then the pid alone says whether a lock is live)."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def read_lock(path):
    """The owner a run.lock names ({} if it is unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            info = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


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
    if resume is not None and os.path.exists(resume) and os.path.samefile(
            out_dir, os.path.dirname(os.path.abspath(resume))):
        raise RunDirError(f"--resume {resume} is an earlier checkpoint of the run in {out_dir}, "
                          f"whose latest is {ckpt}; resuming it there would replace that one: "
                          f"choose another --out_dir, or pass --overwrite to replace it")
    if resume is not None:
        raise RunDirError(f"--out_dir {out_dir} already holds another run's checkpoint; "
                          f"choose another --out_dir or pass --overwrite to replace it")
    raise RunDirError(f"--out_dir {out_dir} already holds a run (checkpoint.npz); continue it "
                      f"with --resume, replace it with --overwrite, or choose another --out_dir")


def claim_run_dir(out_dir, step, resumed_from=None, overwrite=False, log=None):
    """Check out_dir is this run's, create it, clean it up, line the log up with `step`.

    A fresh run (`resumed_from` None) deletes the old metrics.jsonl, best.npz and
    checkpoint.npz; a resumed run keeps the log rows up to `step`, taken from the log next to
    `resumed_from` when out_dir has none yet (`truncate_metrics`: a damaged log line is an
    error naming it; a row cut short by a kill is left out and said through `log`).
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
        truncate_metrics(source_log, step, out=log_path, log=log)


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


class MetricsLogError(RunDirError):
    """A line of a metrics.jsonl that is not a row: the file and the line are named, nothing is
    dropped or rewritten on the reader's own decision."""


def read_metrics(path, notes=None):
    """The rows of a metrics.jsonl (dicts with an integer "step"), in file order.

    A run appends one row a line, flushed, so a kill can leave one thing only: a last line cut
    short, without its newline. That row is past the checkpoint (a row is written before its
    step's checkpoint), so it is left out, and said: one line appended to `notes` when a list
    is given. Any other line that is not a row (bytes that are not UTF-8, a row damaged in the
    middle of the file, an empty line) is a MetricsLogError naming the file and the line:
    nothing is dropped silently, and a resume never writes a log with a hole in its steps.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    torn = lines.pop()              # b"" when the file ends with its newline, as it should
    rows = []
    for number, raw in enumerate(lines, 1):
        rows.append(_row(path, number, raw))
    if torn:
        try:
            rows.append(_row(path, len(lines) + 1, torn))
        except MetricsLogError:
            if notes is not None:
                notes.append(f"{path} line {len(lines) + 1}: a row cut short (the run was "
                             f"killed while writing it), left out")
    return rows


def _row(path, number, raw):
    """Line `number` of a metrics.jsonl as a row, or MetricsLogError naming it."""
    where = f"{path} line {number}"
    fix = "repair or delete that line"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MetricsLogError(f"{where}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                              f"{err.start + 1}); the log is damaged: {fix}") from None
    try:
        row = json.loads(text)
    except ValueError as err:
        raise MetricsLogError(f"{where}: not a JSON row ({str(err).split(':')[0]}); the log is "
                              f"damaged: {fix}") from None
    if not isinstance(row, dict) or not is_int(row.get("step")):
        raise MetricsLogError(f"{where}: a row needs an integer \"step\", got "
                              f"{text.strip()[:60]!r}: {fix}")
    return row


def truncate_metrics(path, step, out=None, log=None):
    """Write the rows of `path` up to `step` to `out` (default: in place), atomically, so the
    log of a resumed run matches its checkpoint's weights. A damaged line stops it
    (MetricsLogError) before anything is written; a row cut short by a kill is left out and
    said through `log`."""
    out = out or path
    notes = []
    rows = [r for r in read_metrics(path, notes) if r["step"] <= step]
    for note in notes:
        (log or _stderr)(note)
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    io.atomic_write(out, lambda f: f.write(text))


def _stderr(line):
    print(line, file=sys.stderr)
