"""Process-wide settings: the two knobs that change more than tinygradx's own objects.

Both change speed only, never a result, and both can be turned off.

1. OpenBLAS's idle threads (`blas_thread_timeout`, applied when `tinygradx` is imported).
   After each GEMM, OpenBLAS's worker threads spin for ~2^28 cycles before they sleep, holding
   the second core that `tinygradx.parallel` wants for element-wise work between GEMMs. The
   setting is an environment variable that OpenBLAS reads once, when numpy loads, so it can
   only work at import and only if numpy is not loaded yet: `import tinygradx` sets
   OPENBLAS_THREAD_TIMEOUT=4 unless the variable is already set or TINYGRADX_BLAS_TIMEOUT=0.
2. glibc's allocator (`keep_freed_memory`, an explicit call). An eager engine allocates every
   intermediate afresh; with glibc's defaults freed blocks go back to the OS and are faulted in
   again each step (~2,500 page faults per GPT step, ~70 after). This changes the allocator of
   the whole process (torch's too), so a library import does not do it: the applications that
   own the process call it (the Trainer, the `tinygradx` command, bench/).
   TINYGRADX_MALLOC_TUNE=0 makes the call do nothing.

This module imports no numpy: `tinygradx/__init__.py` runs `blas_thread_timeout()` first.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3

MALLOC_TUNED = False       # whether keep_freed_memory() has been applied in this process


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
    global MALLOC_TUNED
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
