"""A/B of one tinygradx switch against itself, with the numpy floor as the common baseline.

    python bench/bench_ab.py threads --config gpt-gpu-b8 --pairs 4   # parallel pool 1 vs 2
    python bench/bench_ab.py fused --config gpt-cpu --pairs 15       # fused vs op-by-op attention
    python bench/bench_ab.py pool --config encdec --pairs 60         # the C pool on vs off
    python bench/bench_ab.py dropout --config encdec --pairs 40      # dropout masks: bits vs floats
    python bench/bench_ab.py backends --config gpt-cpu --pairs 20    # each compiled backend's share

`threads` runs one GPT model with `tinygradx.parallel.set_threads(1)` and `(2)` in alternate
calls; `fused` builds two identical GPTs and turns `CausalSelfAttention.fused` off in one;
`pool` runs one model (any config) with `tinygradx.pool.set_enabled(True)` and `(False)` in
alternate calls, against each other (no floor: the pool serves numpy's GEMMs too; with this
file's OPENBLAS_THREAD_TIMEOUT=4, OpenBLAS's own threads sleep as soon as they are handed
back); `dropout` runs one model (a config with dropout: encdec) with dropout's masks drawn as
now (`ops.fused.dropout_scale`: 32 raw bits per element) and as before (a float32 uniform
per element) in alternate calls; `backends` runs one model with every faster version of the
dispatcher on, then with numba's loops off (every version of backend "kernels"), with the C
pool's off (backend "pool"), and with both off (numpy and row blocks only), in alternate
calls (`dispatch.switched_off`), so each compiled backend's share of the step is measured in
the same minutes. The arms (and the floor) alternate within each round
(bench/harness.py), so the ratios compare like with like. Timings are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import sys

import _blas_env  # noqa: F401,E402  (before numpy: see bench/_blas_env.py)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_floor as bf                            # noqa: E402
from harness import ab_compare, machine_facts       # noqa: E402


def _find_model(fn, kind, depth=0):
    """The model object captured by an adapter's step closure."""
    for cell in fn.__closure__ or ():
        value = cell.cell_contents
        if isinstance(value, kind):
            return value
        if callable(value) and getattr(value, "__closure__", None) and depth < 3:
            found = _find_model(value, kind, depth + 1)
            if found is not None:
                return found
    return None


def arms(what, spec, params, batch):
    from tinygradx.fast import parallel
    from tinygradx.models.nets.gpt import GPT, CausalSelfAttention
    if what == "pool":
        from tinygradx.fast import pool
        step = bf._tinygradx_adapter(spec, params, batch)

        def on():
            pool.set_enabled(True)
            return step()

        def off():
            pool.set_enabled(False)
            return step()
        return {"pool off": off, "pool on": on}
    if what == "dropout":
        return _dropout_arms(bf._tinygradx_adapter(spec, params, batch))
    if what == "backends":
        return _backend_arms(bf._tinygradx_adapter(spec, params, batch))
    if spec["kind"] != "gpt":
        raise SystemExit(f"{what}: a GPT config only")
    if what == "threads":
        step = bf._tinygradx_adapter(spec, params, batch)

        def one():
            parallel.set_threads(1)
            return step()

        def two():
            parallel.set_threads(2)
            return step()
        return {"1 thread": one, "2 threads": two}
    fused = bf._tinygradx_adapter(spec, params, batch)
    explicit = bf._tinygradx_adapter(spec, params, batch)
    model = _find_model(explicit, GPT)
    for m in model.modules():
        if isinstance(m, CausalSelfAttention):
            m.fused = False
    return {"fused attention": fused, "op by op": explicit}


def _backend_arms(step):
    """The same step with each compiled backend's versions switched off (fast/dispatch.py)."""
    from tinygradx.fast import dispatch

    def without(*backends):
        off = [v for vs in dispatch.VERSIONS.values() for v in vs if v.backend in backends]

        def run():
            with dispatch.switched_off(*off):
                return step()
        return run
    return {"both": without(), "no numba loops": without("kernels"),
            "no C pool": without("pool"), "neither": without("kernels", "pool")}


def _dropout_arms(step):
    import numpy as np
    from tinygradx.ops import attention, fused
    bits = fused.dropout_scale

    def floats(rng, shape, p, dtype):              # the draw before: a float32 uniform each
        keep = rng.random(shape, dtype=np.float32) >= p
        return keep * np.asarray(1.0 / (1.0 - p), dtype=dtype)

    def use(draw):
        def run():
            fused.dropout_scale = attention.dropout_scale = draw   # the Dropout op, attention
            try:
                return step()
            finally:
                fused.dropout_scale = attention.dropout_scale = bits
        return run
    return {"float32 uniforms": use(floats), "raw bits": use(bits)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["threads", "fused", "pool", "dropout", "backends"])
    ap.add_argument("--config", default="gpt-cpu", choices=list(bf.CONFIGS))
    ap.add_argument("--pairs", type=int, default=10)
    args = ap.parse_args(argv)
    spec = bf.CONFIGS[args.config]
    params, batch = bf.init_params(spec), bf.make_batch(spec)
    fns = arms(args.what, spec, params, batch)
    base = {"pool": "pool off", "dropout": "float32 uniforms",
            "backends": "both"}.get(args.what, "numpy")
    if base == "numpy":
        fns = {"numpy": bf._numpy_adapter(spec, params, batch), **fns}
    print(machine_facts())
    print(f"\n**{spec['title']}**: {args.what}, {args.pairs} rounds\n")
    res = ab_compare(fns, pairs=args.pairs, baseline=base)
    print(f"| arm | step ms, median [min, max] | vs {base} |\n|---|---|---|")
    for name in fns:
        st, ra = res["stats"][name], res["ratios"][name]
        print(f"| {name} | {st['median'] * 1e3:.1f} [{st['min'] * 1e3:.1f}, "
              f"{st['max'] * 1e3:.1f}] | {ra['median']:.3f} [{ra['min']:.2f}, {ra['max']:.2f}] |")


if __name__ == "__main__":
    main()
