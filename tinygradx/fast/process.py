"""Process-wide settings, in one place: every environment variable tinygradx reads (checked
when it is imported), and the three changes it makes to the process beyond its own objects.

The environment (a wrong value, or a TINYGRADX_ name it does not know, is one line naming it
and what it takes; `import tinygradx` then stops the program):

    TINYGRADX_KERNELS=0|1        the compiled kernels (numba's loops and the C thread pool)
    TINYGRADX_POOL=0|1           the C thread pool alone
    TINYGRADX_THREADS=1..64      threads for element-wise work (default: usable cores, <= 4)
    TINYGRADX_POOL_POLL_US=0..1000000   how long an idle pool thread polls before it sleeps
    TINYGRADX_MALLOC_TUNE=0|1    the allocator setting below
    TINYGRADX_BLAS_TIMEOUT=0|1   OpenBLAS's idle threads, below
    TINYGRADX_CACHE_DIR=path     where the compiled kernels are kept (~/.cache/tinygradx)
    TINYGRADX_DEBUG=0|1          the `tinygradx` command shows a traceback, not one line
    (0|1 also reads false|true, no|yes, off|on.)

The three changes (each changes speed only, never a result; each is off with its switch; each
measured in bench/RESULTS.md; none prints anything: `report()` says what was done):

1. OpenBLAS's idle threads, when `tinygradx` is imported: after each GEMM OpenBLAS's worker
   threads spin for ~2^28 cycles before they sleep, holding the second core that element-wise
   work between GEMMs wants. OpenBLAS reads OPENBLAS_THREAD_TIMEOUT once, when numpy loads,
   so `import tinygradx` sets it to 4 before importing numpy, unless it is set already, numpy
   is loaded already, or TINYGRADX_BLAS_TIMEOUT=0.
2. glibc's allocator, at the first backward pass: an eager engine allocates every
   intermediate afresh; with glibc's defaults the large ones are unmapped or trimmed off the
   heap every step and faulted in again the next (a plain-script GPT at nanoGPT's CPU config:
   ~2,600-4,000 page faults per step, 0-55 after). `keep_freed_memory()` keeps them
   (mallopt). Off: TINYGRADX_MALLOC_TUNE=0, or `set_auto_malloc(False)` before the first
   backward.
3. numpy's OpenBLAS threads, the first time a version of the C thread pool is chosen (a stack
   of small products, fused attention, a layer's two weight products, ...; fast/pool.py):
   OpenBLAS's parallel jobs then run on the pool's threads, with the same numbers. Off:
   TINYGRADX_POOL=0 or `tinygradx.pool.set_enabled(False)`.

This module imports no numpy: `tinygradx/__init__.py` runs `blas_thread_timeout()` first.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import difflib
import logging
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


class SettingError(ValueError):
    """An environment variable of tinygradx's with a value it does not take."""


_FLAGS = {"0": False, "false": False, "no": False, "off": False,
          "1": True, "true": True, "yes": True, "on": True}

# name -> (kind, what it sets); kind: "flag", (low, high) for a whole number, or "path"
ENVIRONMENT = {
    "TINYGRADX_KERNELS": ("flag", "the compiled kernels (numba's loops and the C thread pool)"),
    "TINYGRADX_POOL": ("flag", "the C thread pool"),
    "TINYGRADX_THREADS": ((1, 64), "threads for element-wise work"),
    "TINYGRADX_POOL_POLL_US": ((0, 1_000_000), "microseconds an idle pool thread polls"),
    "TINYGRADX_MALLOC_TUNE": ("flag", "keeping freed memory in the heap (glibc mallopt)"),
    "TINYGRADX_BLAS_TIMEOUT": ("flag", "the short OpenBLAS thread timeout set at import"),
    "TINYGRADX_CACHE_DIR": ("path", "where the compiled kernels are kept"),
    "TINYGRADX_DEBUG": ("flag", "tracebacks from the tinygradx command"),
    "TINYGRADX_REGEN_GOLDEN": ("flag", "the test suite rewriting its golden files"),
}


def _parse(name, raw):
    kind, what = ENVIRONMENT[name]
    if kind == "flag":
        value = _FLAGS.get(raw.strip().lower())
        if value is None:
            raise SettingError(f"{name}={raw!r}: expected 0 or 1 (also false/true, no/yes, "
                               f"off/on) for {what}")
        return value
    if kind == "path":
        if not raw.strip():
            raise SettingError(f"{name} is empty: expected a directory for {what}")
        return raw
    low, high = kind
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise SettingError(f"{name}={raw!r}: expected a whole number from {low} to {high} "
                           f"({what})")
    return value


def check_environment(environ=None):
    """Every TINYGRADX_ variable of the environment, parsed: {name: value}. A wrong value or
    an unknown name is a SettingError naming it and what it takes."""
    environ = os.environ if environ is None else environ
    found = {}
    for name, raw in environ.items():
        if not name.startswith("TINYGRADX_"):
            continue
        if name not in ENVIRONMENT:
            close = difflib.get_close_matches(name, ENVIRONMENT, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise SettingError(f"{name} is not a setting of tinygradx; {hint}it reads "
                               f"{', '.join(sorted(ENVIRONMENT))} (tinygradx.process)")
        found[name] = _parse(name, raw)
    return found


def env(name, default):
    """The parsed value of environment variable `name`, or `default` when it is not set."""
    raw = os.environ.get(name)
    return default if raw is None else _parse(name, raw)


# --------------------------------------------------------------------------------------------
# what was done, said once to the "tinygradx" logger (at DEBUG: nothing is printed)
# --------------------------------------------------------------------------------------------

LOG = logging.getLogger("tinygradx")
DONE = {}                  # key -> what was done to the process (report())
_OWN_HANDLER = None        # the stderr handler announce() added while logging was unconfigured


def notice(key, message):
    """Record a change to the process once per key: `report()` lists it, and the "tinygradx"
    logger has it at DEBUG (a program that wants to see it turns DEBUG on). Nothing is
    printed: a first backward pass or a notebook cell prints only what the user asked for."""
    if key in DONE:
        return
    DONE[key] = message
    LOG.debug(message)


def announce(key, message):
    """Say `message` once per process on the "tinygradx" logger at INFO, on stderr when the
    program configured no logging: for the one event a user must hear of, the kernels' first
    build, which makes one step wait ~20 s. Not `warnings`: nothing is wrong, and suites run
    with -W error would fail inside a backward pass."""
    global _OWN_HANDLER
    if key in DONE:
        return
    DONE[key] = message
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


def report():
    """What tinygradx changed in this process so far, one line each (empty: nothing)."""
    return "\n".join(DONE.values())


# --------------------------------------------------------------------------------------------
# 1. OpenBLAS's idle threads
# --------------------------------------------------------------------------------------------

def blas_thread_timeout(value="4"):
    """Set OPENBLAS_THREAD_TIMEOUT before numpy loads (see the module docstring). Returns
    whether the variable is now set by us or was set already; False once numpy is loaded."""
    if "numpy" in sys.modules or not env("TINYGRADX_BLAS_TIMEOUT", True):
        return False
    if "OPENBLAS_THREAD_TIMEOUT" not in os.environ:
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = value
        notice("blas", f"set OPENBLAS_THREAD_TIMEOUT={value} before numpy loaded (OpenBLAS's "
                       f"idle threads sleep after ~2^{value} cycles, not ~2^28); "
                       f"TINYGRADX_BLAS_TIMEOUT=0 keeps OpenBLAS's default")
    return True


# --------------------------------------------------------------------------------------------
# 2. glibc's allocator
# --------------------------------------------------------------------------------------------

MALLOC_TUNED = False       # whether keep_freed_memory() has been applied in this process
MALLOC_PENDING = True      # the first backward still has to decide (fast/walk.py reads it)
_AUTO_MALLOC = env("TINYGRADX_MALLOC_TUNE", True)


def keep_freed_memory(mmap_threshold=32 << 20, trim_threshold=256 << 20):
    """Ask glibc to serve blocks below mmap_threshold from its heap and to keep up to
    trim_threshold of free heap instead of returning it to the OS. Returns True when applied
    (False with TINYGRADX_MALLOC_TUNE=0 or on other C libraries, where nothing happens)."""
    global MALLOC_TUNED, MALLOC_PENDING
    MALLOC_PENDING = False                  # an explicit call settles it: no automatic one
    if not env("TINYGRADX_MALLOC_TUNE", True):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    MALLOC_TUNED = bool(mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold))
                        and mallopt(_M_TRIM_THRESHOLD, int(trim_threshold)))
    if MALLOC_TUNED:
        notice("malloc", "kept freed memory in the heap for faster training steps (glibc "
                         "mallopt); TINYGRADX_MALLOC_TUNE=0 or "
                         "tinygradx.process.set_auto_malloc(False) before the first backward "
                         "turns it off")
    return MALLOC_TUNED


def own_process():
    """For programs that own their process (the Trainer, the `tinygradx` command, bench/): the
    allocator setting now, not at the first backward. Returns whether it applied."""
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
    `keep_freed_memory()` unless refused."""
    global MALLOC_PENDING
    MALLOC_PENDING = False
    if _AUTO_MALLOC:
        keep_freed_memory()
