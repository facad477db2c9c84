"""Imported first by every benchmark script, before numpy loads: the process-wide settings.

numpy's OpenBLAS workers otherwise spin for ~2^28 cycles after every GEMM; in one process with
torch (or with tinygradx's element-wise thread pool) that spinning core slows whatever runs
next (torch's GPT step by ~1.5x, measured). Export OPENBLAS_THREAD_TIMEOUT yourself to
override it; the machine facts print the value in use.

torch's OpenMP workers (libgomp) do the same the other way round: after torch's step they spin
GOMP_SPINCOUNT iterations (libgomp's default 300,000) before sleeping, and the arm that runs
next loses the second core. With 30,000 the GPT CPU config measured (20 A/B rounds, load 0.7):
torch 40.7 -> 38.8 ms (not slower), tinygradx 45.6 -> 39.8 ms, the numpy floor unchanged.
OMP_WAIT_POLICY=PASSIVE (no spinning at all) slows torch itself to 58 ms, so it is not used.
"""
import os

# The two variables as a user's shell has them, before this module set anything: the arms of
# `bench_floor.py --isolated` start with this environment (their own process each, with idle
# gaps between arms instead of short spins). BENCH_USER_SPIN=1 marks such a child.
USER_ENV = dict(os.environ)
SPIN_VARS = ("OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT")

if os.environ.get("BENCH_USER_SPIN") != "1":
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    os.environ.setdefault("GOMP_SPINCOUNT", "30000")

# The benchmarks own their process, as the Trainer does: keep freed memory in glibc's heap for
# every implementation measured here (tinygradx.process explains; TINYGRADX_MALLOC_TUNE=0 skips),
# and no line when tinygradx's thread pool starts (TINYGRADX_POOL=0 keeps it off).
from tinygradx.fast import process  # noqa: E402

process.own_process()
