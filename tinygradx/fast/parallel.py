"""Both cores for large element-wise work: row blocks of numpy calls on a small thread pool.

numpy releases the GIL inside a ufunc loop, so two threads running the same in-place sequence
of calls (GELU's eight passes, a softmax row block, an Adam update) on disjoint row blocks of
the same arrays run in parallel. Each element is computed by the same calls in the same order
as without threads, so results are bitwise identical; only row-wise work is split (a row is
never cut, so row reductions such as a softmax sum see the same numbers).

    TINYGRADX_THREADS=1     no pool: everything on the calling thread (CI runs both ways)
    TINYGRADX_THREADS=n     n threads in all (default: the number of usable cores, at most 4)

Arrays below MIN_ELEMENTS are not split: handing work to a thread costs ~20-50 us (below
MIN_KERNEL_ELEMENTS for the cheaper work of a compiled loop or a single ufunc).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from . import process

MIN_ELEMENTS = 1 << 16
# for one pass of a compiled kernel or a single ufunc (~0.1-0.4 ns per element), where the
# hand-off (~40-50 us) pays only from about half a million elements: GELU's backward kernel
# on (768, 512) took 76 us on one thread and 126 us split, ReLU 154 and 148 us
MIN_KERNEL_ELEMENTS = 1 << 19


def _default_threads():
    threads = process.env("TINYGRADX_THREADS", None)
    if threads is not None:
        return threads
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


THREADS = _default_threads()
_before_split = None   # called before blocks go to the threads (set_before_split)
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


def set_before_split(fn):
    """Call fn() before each split hands blocks to the threads (None: nothing): pool.py's C
    threads, when they run, stop polling for work there, so the core is free for these."""
    global _before_split
    _before_split = fn


def rows(fn, *arrays, min_elements=None):
    """fn(*blocks) for row blocks of `arrays` (all with the same first dim), in parallel.

    fn must only read and write its own blocks, element by element or row by row. With one
    thread, a small array or a single row, fn(*arrays) runs as is. Returns what fn returned
    for the first block (a compiled kernel's "done", see kernels.py). min_elements overrides
    MIN_ELEMENTS for work that is cheap per element (a compiled kernel).
    """
    global _pool
    n = arrays[0].shape[0] if arrays[0].ndim else 1
    small = arrays[0].size < (MIN_ELEMENTS if min_elements is None else min_elements)
    if THREADS < 2 or n < 2 or small or getattr(_worker, "busy", False):
        return fn(*arrays)     # (a block that splits again runs inline: see _as_worker)
    parts = min(THREADS, n)
    if _pool is None:
        _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="tinygradx")
    cuts = [n * i // parts for i in range(parts + 1)]
    if _before_split is not None:
        _before_split()
    futures = [_pool.submit(_as_worker, fn, *(a[lo:hi] for a in arrays))
               for lo, hi in zip(cuts[1:-1], cuts[2:], strict=True)]
    try:
        first = _as_worker(fn, *(a[:cuts[1]] for a in arrays))  # the first block, here
    finally:
        # every block has finished (or failed) before anything is returned or raised, so no
        # thread still writes into the arrays afterwards
        errors = [f.exception() for f in futures]
    for err in errors:
        if err is not None:
            raise err
    return first


# OpenBLAS runs a GEMM on one thread below m*n*k = 4 * 65536 (its multithreading threshold)
# and on all cores above it, where two batch blocks would oversubscribe them (GPT GPU config
# attention, 256 x 64 x 256: the step 1.27x slower split)
ONE_THREAD_GEMM = 1 << 18


def in_block():
    """Whether this thread is running one of rows()' blocks (work it starts must stay on it)."""
    return getattr(_worker, "busy", False)


def split_gemms(count, n, k, m):
    """Whether a stack of `count` (n, k) @ (k, m) products, together with the element-wise
    work around them, should run in batch blocks on both cores: products large enough
    together to pay for the hand-off, each small enough that BLAS runs it on one thread.
    (A decoding batch's thousands of one-row products gain nothing, hence the size of the
    output, not the count; nor does a lone stacked matmul: OpenBLAS's calls from two threads
    barely overlap, (48, 64, 32) @ (48, 32, 64) took 118 us on one thread and 145 us split.
    Fused attention gains because its blocks also hold the softmax and numpy's own loops
    over strided heads: a GPT CPU config layer's forward 677 -> 482 us.)"""
    return THREADS > 1 and n * k * m <= ONE_THREAD_GEMM and count * n * m >= MIN_ELEMENTS


def _as_worker(fn, *blocks):
    # while a block runs, any split inside it runs inline: on a worker, waiting on the pool
    # it belongs to could wait for ever; on the calling thread, it would wait for the other
    # blocks to finish first
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
