"""Process-wide settings: the knobs that change more than tinygradx's own objects.

Each changes speed only, never a result, and each can be turned off.

1. OpenBLAS's idle threads (`blas_thread_timeout`, applied when `tinygradx` is imported).
   After each GEMM, OpenBLAS's worker threads spin for ~2^28 cycles before they sleep, holding
   the second core that `tinygradx.parallel` wants for element-wise work between GEMMs. The
   setting is an environment variable that OpenBLAS reads once, when numpy loads, so it can
   only work at import and only if numpy is not loaded yet: `import tinygradx` sets
   OPENBLAS_THREAD_TIMEOUT=4 unless the variable is already set or TINYGRADX_BLAS_TIMEOUT=0.
2. glibc's allocator (`keep_freed_memory`, applied at the first backward pass). An eager engine
   allocates every intermediate afresh; with glibc's defaults the large ones are mmapped and
   unmapped, or trimmed off the heap, every step, and faulted in again the next (a plain-script
   GPT at nanoGPT's CPU config: ~2,600-4,000 page faults per step, 0-55 after; its step went
   from 1.8-2.3x torch's to 1.1-1.2x when the issue was filed). Changing the
   allocator of the whole process (torch's too) from a library is a real step, so it is taken
   only where its need starts, the first `backward()` or `tgx.grad()`, said once (`notice`),
   and can be refused: TINYGRADX_MALLOC_TUNE=0 in the environment, or
   `tinygradx.process.set_auto_malloc(False)` before the first backward. Applications that own
   their process (the Trainer, the `tinygradx` command, bench/) call `own_process()`, which
   applies it silently.

A third process-wide change lives in fast/pool.py, where its reasons are: the thread pool that
runs numpy's OpenBLAS jobs (TINYGRADX_POOL=0 keeps OpenBLAS's own threads).

This module imports no numpy: `tinygradx/__init__.py` runs `blas_thread_timeout()` first.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3

MALLOC_TUNED = False       # whether keep_freed_memory() has been applied in this process
MALLOC_PENDING = True      # the first backward still has to decide (Tensor.backward reads it)
_AUTO_MALLOC = os.environ.get("TINYGRADX_MALLOC_TUNE", "1") != "0"
_NOTICED = set()

LOG = logging.getLogger("tinygradx")
_OWN_HANDLER = None        # the stderr handler notice() added while logging was unconfigured


def notice(key, message):
    """Say `message` once per process (per `key`) on the "tinygradx" logger at INFO.

    Why a logger and not `warnings`: nothing is wrong, and test suites that run with warnings
    as errors (`-W error`) would fail inside a backward pass. Why INFO with a handler of our
    own: an unconfigured program shows only warnings, so without one nobody would see the line;
    the handler is added only when no logging is configured at all, and goes to stderr (stdout
    stays the program's). Silence it with
    `logging.getLogger("tinygradx").setLevel(logging.WARNING)`; a program that configures
    logging gets it in its own log, at its own level."""
    global _OWN_HANDLER
    if key in _NOTICED:
        return
    _NOTICED.add(key)
    if _OWN_HANDLER is not None and logging.getLogger().handlers:
        LOG.removeHandler(_OWN_HANDLER)     # logging was configured since: its handlers and
        _OWN_HANDLER = None                 # levels decide, no second copy
        if LOG.level == logging.INFO:
            LOG.setLevel(logging.NOTSET)
    if not LOG.hasHandlers():
        _OWN_HANDLER = logging.StreamHandler(sys.stderr)
        _OWN_HANDLER.setFormatter(logging.Formatter("tinygradx: %(message)s"))
        LOG.addHandler(_OWN_HANDLER)
        if LOG.level == logging.NOTSET:
            LOG.setLevel(logging.INFO)
    LOG.info(message)


def blas_thread_timeout(value="4"):
    """Set OPENBLAS_THREAD_TIMEOUT before numpy loads (see the module docstring). Returns
    whether the variable is now set by us or was set already; False once numpy is loaded."""
    if "numpy" in sys.modules or os.environ.get("TINYGRADX_BLAS_TIMEOUT", "1") == "0":
        return False
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", value)
    return True


def keep_freed_memory(mmap_threshold=32 << 20, trim_threshold=256 << 20):
    """Ask glibc to serve blocks below mmap_threshold from its heap and to keep up to
    trim_threshold of free heap instead of returning it to the OS. Returns True when applied
    (False with TINYGRADX_MALLOC_TUNE=0 or on other C libraries, where nothing happens)."""
    global MALLOC_TUNED, MALLOC_PENDING
    MALLOC_PENDING = False                  # an explicit call settles it: no automatic one
    if os.environ.get("TINYGRADX_MALLOC_TUNE", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    MALLOC_TUNED = bool(mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold))
                        and mallopt(_M_TRIM_THRESHOLD, int(trim_threshold)))
    return MALLOC_TUNED


def own_process():
    """For programs that own their process (the Trainer, the `tinygradx` command, bench/):
    the allocator setting now (`keep_freed_memory()`), and no line when the thread pool of
    fast/pool.py takes numpy's OpenBLAS threads at the first backward pass. Returns whether
    the allocator setting applied."""
    _NOTICED.add("pool")
    return keep_freed_memory()


def set_auto_malloc(flag):
    """Whether the first backward pass applies `keep_freed_memory()` (default True unless
    TINYGRADX_MALLOC_TUNE=0). Returns the old setting. Takes effect only before that first
    backward: glibc's thresholds, once set, stay for the process."""
    global _AUTO_MALLOC
    old, _AUTO_MALLOC = _AUTO_MALLOC, bool(flag)
    return old


def first_backward():
    """Called by the first backward pass of the process (while MALLOC_PENDING): apply
    `keep_freed_memory()` unless refused, and say so once."""
    global MALLOC_PENDING
    MALLOC_PENDING = False
    if _AUTO_MALLOC and keep_freed_memory():
        notice("malloc", "keeping freed memory in this process's heap for faster training "
               "steps (glibc mallopt, once); TINYGRADX_MALLOC_TUNE=0 or "
               "tinygradx.process.set_auto_malloc(False) turns it off")
