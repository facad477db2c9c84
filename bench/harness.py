"""A/B timing utilities for bench/: interleaved runs in one process, ratios with their spread.

Comparing implementations in separate runs mixes their difference with machine drift (frequency
scaling, other tenants, thermal state). Here every round calls each implementation once, in an
order that rotates from round to round, and ratios are taken within a round, so slow drift cancels
and the [min, max] of the per-round ratios shows how much to trust the median. Timings are
reported, never asserted.
"""
from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import sys
import time


def ab_compare(fns, pairs=10, warmup=2, baseline=None, timer=time.perf_counter, gap=0.0,
               burst=1):
    """Time each callable in ``fns`` (dict name -> zero-arg callable) ``pairs`` times, interleaved.

    Round r calls the implementations in the dict order rotated by r (for two implementations:
    A B, B A, A B, ...). ``warmup`` untimed rounds come first (allocations, caches, BLAS thread
    start-up). Returns a dict:
      times[name]   list of seconds per round
      stats[name]   {"median", "min", "max"} in seconds
      ratios[name]  {"median", "min", "max"} of time(name) / time(baseline) within each round
      baseline      the baseline name (first key unless given)
    The cyclic garbage collector is disabled while timing (and run between rounds) so a collection
    triggered by one implementation is not billed to whichever happens to run next. ``gap``
    seconds of sleep (untimed) come before each call: long enough, and the BLAS and OpenMP
    workers that the previous implementation left spinning (each in its own process) have gone
    to sleep, so no implementation runs while another one holds a core. ``burst`` > 1 runs
    burst - 1 untimed calls right before the timed one, so after a gap the timed step is one
    inside a warm loop, as in a training run (caches, thread pools awake), not the first
    after an idle pause.
    """
    names = list(fns)
    if baseline is None:
        baseline = names[0]
    if baseline not in fns:
        raise KeyError(f"baseline {baseline!r} not among {names}")
    times = {n: [] for n in names}
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(warmup + pairs):
            k = r % len(names)
            order = names[k:] + names[:k]
            gc.collect()
            gc.disable()
            for n in order:
                if gap:
                    time.sleep(gap)
                for _ in range(burst - 1):
                    fns[n]()
                t0 = timer()
                fns[n]()
                dt = timer() - t0
                if r >= warmup:
                    times[n].append(dt)
            if gc_was_enabled:
                gc.enable()
    finally:
        if gc_was_enabled:
            gc.enable()
    stats = {n: _summ(ts) for n, ts in times.items()}
    ratios = {n: _summ([a / b for a, b in zip(times[n], times[baseline], strict=True)])
              for n in names}
    return {"times": times, "stats": stats, "ratios": ratios, "baseline": baseline}


def _summ(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def format_ratio(r):
    """'1.43 [1.38, 1.51]'"""
    return f"{r['median']:.2f} [{r['min']:.2f}, {r['max']:.2f}]"


def peak_rss_mb():
    """Peak resident set size of this process so far, in MB. It only grows, so per-implementation
    peaks need one process each (see bench_floor.py --rss). On Linux this reads VmHWM from
    /proc/self/status: ru_maxrss survives fork + exec, so a child started by a big parent would
    report the parent's peak. Elsewhere ru_maxrss (KB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numpy_blas():
    import numpy as np
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:                                   # older numpy: no mode="dicts"
        return "unknown"


def _threadpools():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    parts = []
    for p in threadpool_info():
        parts.append(f"{p.get('internal_api')} {p.get('version')} threads={p.get('num_threads')}"
                     f" core={p.get('architecture')}")
    return "; ".join(parts)


def _kernels_info():
    """Whether tinygradx's optional compiled kernels (numba) run in this process."""
    try:
        from tinygradx.fast import kernels
    except ImportError:
        return "not in this checkout"
    if not kernels.ENABLED:
        return "off (numpy only: numba not installed or TINYGRADX_KERNELS=0)"
    from importlib.metadata import version
    return f"on (numba {version('numba')})"


def machine_facts(torch_info=True):
    """One multi-line string with what a reader needs to interpret the timings.

    torch_info=False skips importing torch (it adds ~180 MB to a process whose memory is
    being measured)."""
    import numpy as np
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    lines = [
        f"cpu: {_cpu_model()}; logical cores {os.cpu_count()}, usable {usable}",
        f"python {platform.python_version()}; numpy {np.__version__}, BLAS {_numpy_blas()}",
    ]
    tp = _threadpools()
    if tp:
        lines.append(f"threadpools: {tp}")
    env = ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
           "OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "MKL_NUM_THREADS"]
    try:
        la = os.getloadavg()
        lines.append(f"load average at start (1/5/15 min): {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} "
                     "(other processes share these cores; the interleaving keeps ratios fair but "
                     "widens ranges)")
    except OSError:
        pass
    lines.append("env: " + ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in env))
    lines.append(f"tinygradx kernels: {_kernels_info()}")
    if not torch_info:
        return "\n".join(lines)
    try:
        import torch
        lines.append(f"torch {torch.__version__}: intra-op threads {torch.get_num_threads()}, "
                     f"inter-op threads {torch.get_num_interop_threads()}")
    except ImportError:
        lines.append("torch: not installed")
    return "\n".join(lines)


if __name__ == "__main__":
    print(machine_facts())
