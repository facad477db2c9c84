"""Imported first by every benchmark script, before numpy loads: the process-wide settings.

numpy's OpenBLAS workers otherwise spin for ~2^28 cycles after every GEMM; in one process with
torch (or with tinygradx's element-wise thread pool) that spinning core slows whatever runs
next (torch's GPT step by ~1.5x, measured). Export OPENBLAS_THREAD_TIMEOUT yourself to
override it; the machine facts print the value in use.
"""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

# The benchmarks own their process, as the Trainer does: keep freed memory in glibc's heap for
# every implementation measured here (tinygradx.process explains; TINYGRADX_MALLOC_TUNE=0 skips).
from tinygradx import process  # noqa: E402

process.keep_freed_memory()
