"""Both cores for large element-wise work: row blocks of numpy calls on a small thread pool.

numpy releases the GIL inside a ufunc loop, so two threads running the same in-place sequence
of calls (GELU's eight passes, a softmax row block, an Adam update) on disjoint row blocks of
the same arrays run in parallel. Each element is computed by the same calls in the same order
as without threads, so results are bitwise identical; only row-wise work is split (a row is
never cut, so row reductions such as a softmax sum see the same numbers).

    TINYGRADX_THREADS=1     no pool: everything on the calling thread (CI runs both ways)
    TINYGRADX_THREADS=n     n threads in all (default: the number of usable cores, at most 4)

Arrays below MIN_ELEMENTS are not split: handing work to a thread costs ~20-50 us.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

MIN_ELEMENTS = 1 << 16


def _default_threads():
    env = os.environ.get("TINYGRADX_THREADS")
    if env:
        return max(1, int(env))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


THREADS = _default_threads()
_pool = None
_worker = threading.local()     # .busy: this thread is a pool worker running a block


def set_threads(n):
    """Use n threads for element-wise work from now on (1: everything on the calling thread).
    Returns the previous setting."""
    global THREADS, _pool
    old, THREADS = THREADS, max(1, int(n))
    if _pool is not None and _pool._max_workers < THREADS - 1:
        _pool.shutdown(wait=True)
        _pool = None
    return old


def rows(fn, *arrays):
    """fn(*blocks) for row blocks of `arrays` (all with the same first dim), in parallel.

    fn must only read and write its own blocks, element by element or row by row. With one
    thread, a small array or a single row, fn(*arrays) runs as is. Returns what fn returned
    for the first block (a compiled kernel's "done", see kernels.py).
    """
    global _pool
    n = arrays[0].shape[0] if arrays[0].ndim else 1
    if THREADS < 2 or n < 2 or arrays[0].size < MIN_ELEMENTS or getattr(_worker, "busy", False):
        return fn(*arrays)     # (a block that splits again runs inline: a worker waiting on
                               # the pool it belongs to could wait for ever)
    parts = min(THREADS, n)
    if _pool is None:
        _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="tinygradx")
    cuts = [n * i // parts for i in range(parts + 1)]
    futures = [_pool.submit(_as_worker, fn, *(a[lo:hi] for a in arrays))
               for lo, hi in zip(cuts[1:-1], cuts[2:], strict=True)]
    try:
        first = fn(*(a[:cuts[1]] for a in arrays))     # the first block on this thread
    finally:
        # every block has finished (or failed) before anything is returned or raised, so no
        # thread still writes into the arrays afterwards
        errors = [f.exception() for f in futures]
    for err in errors:
        if err is not None:
            raise err
    return first


def _as_worker(fn, *blocks):
    _worker.busy = True
    try:
        return fn(*blocks)
    finally:
        _worker.busy = False


def _forget_pool():
    # a forked child inherits the pool object but not its threads: start a new one there
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
