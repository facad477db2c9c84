"""Training-step benchmark: the numpy floor against PyTorch eager (and later tinygradx).

    python bench/bench_floor.py                        # all configs, A/B pairs, Markdown table
    python bench/bench_floor.py --configs gpt-cpu --pairs 20 --rss
    python bench/bench_floor.py --impls numpy          # without torch

Each implementation runs one full training step (forward, backward, optimizer update) on the same
fixed batch from the same initial parameters; ``harness.ab_compare`` interleaves them in one
process and reports per-round ratios. ``--rss`` also runs each (config, implementation) alone in
a child process for its peak RSS, since ru_maxrss is a per-process high-water mark.

Adding tinygradx (or anything else): register a factory with ``register_adapter(name, factory)``;
``factory(spec, params, batch)`` gets the config spec (see CONFIGS), the initial numpy params dict
(nanoGPT / encoder-decoder names as in numpy_gpt.py / numpy_encdec.py) and the batch (numpy int
arrays), and returns a zero-argument callable that performs one training step and returns the
loss as a float. ``_tinygradx_adapter`` below wires tinygradx's own models
(--impls numpy torch tinygradx).

What a user's own code gets, each in a fresh process that imports only what its script
imports (GPT CPU config only): `plain` is bench/plain_gpt.py, the GPT op by op with the public
ops and AdamW and no setting called (`plain-nomalloc`: the same with TINYGRADX_MALLOC_TUNE=0,
as such a script ran before the first backward applied the allocator setting; `plain-nopool`:
with TINYGRADX_POOL=0, OpenBLAS's own threads instead of tinygradx's pool; `plain-rev`: the
same script on another checkout, BENCH_PLAIN_REV=DIR holding its tinygradx/, for a before and
after in the same rounds, printed as plain / plain-rev); `compat` is
bench/gpt_loop.py, a PyTorch script for the nanoGPT-style tests/compat_models/gpt.py, run
through `python -m tinygradx.compat`, and `torch-script` the same file on PyTorch (its row
prints compat / torch-script too):

    python bench/bench_floor.py --configs gpt-cpu --impls torch tinygradx plain \
        plain-nomalloc compat torch-script --pairs 10

By default the in-process arms share one process, and every arm (children too) runs with short
BLAS/OpenMP spins (bench/_blas_env.py) so one arm's idle workers do not hold the next arm's
core. `--isolated` measures each arm as its user gets it instead: every arm in a process of
its own with the user's environment (the libraries' default spins), a sleep before each step
long enough for the previous arm's workers to stop spinning, and a few untimed steps before
the timed one so it is a step inside a warm loop:

    python bench/bench_floor.py --configs gpt-cpu encdec --impls numpy torch tinygradx plain \
        compat torch-script --pairs 20 --isolated

With --isolated an in-process arm's name may end in `-nopool` (`tinygradx-nopool`): the same
arm in a process with TINYGRADX_POOL=0, to read the pool's effect within one run.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys


import _blas_env  # noqa: E402  (before numpy: see bench/_blas_env.py)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy_encdec as ned  # noqa: E402
import numpy_gpt as ngpt  # noqa: E402
from harness import ab_compare, format_ratio, machine_facts, peak_rss_mb  # noqa: E402
from numpy_common import adam_step, adamw_step  # noqa: E402

# lr only sets the update size; it does not change the work done per step.
CONFIGS = {
    "gpt-cpu": dict(kind="gpt", B=12, T=64, lr=1e-3, title="GPT, nanoGPT shakespeare-char CPU "
                    "config (V 65, L 4, h 4, C 128, T 64, B 12), AdamW",
                    cfg=ngpt.GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4,
                                       n_embd=128)),
    "gpt-gpu-b8": dict(kind="gpt", B=8, T=256, lr=1e-3, title="GPT, nanoGPT shakespeare-char GPU "
                       "config at batch 8 (V 65, L 6, h 6, C 384, T 256, B 8), AdamW",
                       cfg=ngpt.GPTConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6,
                                          n_embd=384)),
    "encdec": dict(kind="encdec", B=32, S=24, T=24, lr=1e-3, title="encoder-decoder (d 128, h 4, "
                   "2+2 layers, d_ff 512, V 32, length 24, B 32, dropout 0.1), Adam",
                   cfg=ned.EncDecConfig(src_vocab=32, tgt_vocab=32, d_model=128, h=4, n_enc=2,
                                        n_dec=2, d_ff=512, dropout=0.1)),
}


def make_batch(spec, seed=1):
    """A fixed batch: random tokens; for the encoder-decoder, trailing pads of random length."""
    rng = np.random.default_rng(seed)
    B = spec["B"]
    if spec["kind"] == "gpt":
        V, T = spec["cfg"].vocab_size, spec["T"]
        return rng.integers(0, V, (B, T)), rng.integers(0, V, (B, T))
    cfg, S, T = spec["cfg"], spec["S"], spec["T"]
    src = rng.integers(1, cfg.src_vocab, (B, S))
    tgt = rng.integers(1, cfg.tgt_vocab, (B, T + 1))
    for b in range(B):                                   # lengths 16..24, pads (0) after
        n = int(rng.integers(16, S + 1))
        src[b, n:] = 0
        tgt[b, n + 1:] = 0
    return src, tgt[:, :-1].copy(), tgt[:, 1:].copy()


def init_params(spec, seed=0):
    mod = ngpt if spec["kind"] == "gpt" else ned
    return mod.init_params(spec["cfg"], seed)


# ---- adapters: factory(spec, params, batch) -> step() -> float loss ----------------------------

def _numpy_adapter(spec, params, batch):
    params = _copy_into_flat(spec, params)               # own copy: impls never share arrays
    state = {}
    if spec["kind"] == "gpt":
        net = ngpt.NumpyGPT(spec["cfg"])

        def step():
            loss, grads = net.loss_and_grads(params, *batch)
            adamw_step(params, grads, state, lr=spec["lr"])
            return loss
    else:
        net = ned.NumpyEncDec(spec["cfg"], seed=0)

        def step():
            loss, grads = net.loss_and_grads(params, *batch)
            adam_step(params, grads, state, lr=spec["lr"])
            return loss
    return step


def _copy_into_flat(spec, params):
    """A private flat-buffer copy of ``params`` (so implementations never share arrays)."""
    mod = ngpt if spec["kind"] == "gpt" else ned
    flat = mod.empty_params(spec["cfg"])
    for k, a in flat.items():
        a[...] = params[k]
    return flat


def _torch_adapter(spec, params, batch):
    import torch
    import torch_models as tm
    if spec["kind"] == "gpt":
        model = tm.params_to_torch(tm.TorchGPT(spec["cfg"]), params)
        opt = model.configure_optimizer(lr=spec["lr"])
    else:
        model = tm.params_to_torch(tm.TorchEncDec(spec["cfg"]), params)
        opt = torch.optim.Adam(model.parameters(), lr=spec["lr"], betas=(0.9, 0.98), eps=1e-9)
    model.train()
    tb = [torch.from_numpy(a) for a in batch]

    def step():
        loss = model(*tb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def _import_tgx(pkg="tinygradx"):
    """The engine package `pkg` and its optim, functional, gpt and transformer modules. `pkg`
    is "tinygradx" or a renamed copy of another revision (bench/bench_versions.py); the
    networks live in models/nets/ since the house issue and in models/ before it."""
    import importlib
    tgx = importlib.import_module(pkg)
    optim, F = importlib.import_module(f"{pkg}.optim"), importlib.import_module(f"{pkg}.functional")
    try:
        nets = [importlib.import_module(f"{pkg}.models.nets.{m}") for m in ("gpt", "transformer")]
    except ImportError:
        nets = [importlib.import_module(f"{pkg}.models.{m}") for m in ("gpt", "transformer")]
    return tgx, optim, F, nets[0], nets[1]


def _tinygradx_adapter(spec, params, batch, pkg="tinygradx", fused=True, kernels=True):
    """tinygradx's own models (models/nets/gpt.py, models/nets/transformer.py) and optimizers,
    loaded with the same initial parameters by name. Written against the torch-like API of issue 3;
    if that API moves, this is the one function to adjust. fused=False builds the GPT op by op
    (GPTConfig.fused_attention=False: attention from matmul, masked softmax and reshapes);
    kernels=False runs each step with tinygradx.fast.kernels switched off (the numpy path)."""
    try:
        tgx, optim, F, tgpt, ttr = _import_tgx(pkg)
    except ImportError as e:
        raise NotImplementedError(f"tinygradx models not importable: {e}") from e
    cfg = spec["cfg"]
    if spec["kind"] == "gpt":
        model = tgpt.GPT(tgpt.GPTConfig(block_size=cfg.block_size, vocab_size=cfg.vocab_size,
                                        n_layer=cfg.n_layer, n_head=cfg.n_head,
                                        n_embd=cfg.n_embd, dropout=0.0, gelu_approximate="tanh",
                                        fused_attention=fused))
        model.load_state_dict(dict(params), strict=True)
        named = list(model.named_parameters())
        opt = optim.AdamW([{"params": [p for _, p in named if p.ndim >= 2], "weight_decay": 0.1},
                           {"params": [p for _, p in named if p.ndim < 2], "weight_decay": 0.0}],
                          lr=spec["lr"], betas=(0.9, 0.95), eps=1e-8)
        idx, tgt = (tgx.Tensor(a) for a in batch)

        def forward():
            return model(idx, tgt)[1]
    else:
        model = ttr.make_model(cfg.src_vocab, cfg.tgt_vocab, N=cfg.n_enc, d_model=cfg.d_model,
                               d_ff=cfg.d_ff, h=cfg.h, dropout=cfg.dropout)
        assert cfg.n_enc == cfg.n_dec
        model.load_state_dict(dict(params), strict=True)
        opt = optim.Adam(model.parameters(), lr=spec["lr"], betas=(0.9, 0.98), eps=1e-9)
        src, tgt_in, tgt_out = batch
        src_t, tin_t, tout_t = (tgx.Tensor(a) for a in batch)
        src_pad = src == cfg.pad_id                                  # (B, S) bool

        def forward():
            logp = model(src_t, tin_t, src_pad_mask=src_pad)         # (B, T, Vt)
            B, T, V = logp.shape
            return F.nll_loss(logp.reshape(B * T, V), tout_t.reshape(B * T),
                              ignore_index=cfg.pad_id)
    model.train()

    switch = getattr(tgx, "kernels", None)           # absent in revisions before it existed

    def step():
        old = switch.set_enabled(False) if switch is not None and not kernels else None
        try:
            loss = forward()
            opt.zero_grad()
            loss.backward()
            opt.step()
        finally:
            if old is not None:
                switch.set_enabled(old)
        return float(loss.item())
    step.count_flops = lambda: tgx.perf.step_flops(forward())   # the graph of one forward
    return step


# ---- arms in a fresh process: what a user's own script gets ----------------------------------

BENCH = os.path.dirname(os.path.abspath(__file__))
_CHILDREN = []


def _child_adapter(argv, env=None):
    """A step in a fresh process: `argv` starts a script that prints "ready", then runs one
    training step per line it reads and writes the loss back (bench/plain_gpt.py and
    bench/gpt_loop.py with --serve). The child imports what the script imports and nothing
    from bench/, so the process is as a user's; only the environment is the benchmark's
    (OPENBLAS_THREAD_TIMEOUT, GOMP_SPINCOUNT: idle spinning workers of one arm would take the
    core of the next arm's process, as in one process), except with --isolated, where the
    child gets the user's environment and the rounds sleep between arms instead. The pipe
    round trip is in the time (~0.1 ms of a ~40 ms step)."""
    base = os.environ
    if _ISOLATED:                   # the user's shell: no spin settings (gaps between arms instead)
        base = {k: v for k, v in os.environ.items() if k not in _blas_env.SPIN_VARS}
        base.update({k: _blas_env.USER_ENV[k] for k in _blas_env.SPIN_VARS
                     if k in _blas_env.USER_ENV}, BENCH_USER_SPIN="1")
    proc = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(BENCH),
                            env=dict(base, **_thread_env(), **(env or {})))
    _CHILDREN.append(proc)
    for line in proc.stdout:
        if line.strip() == "ready":
            break
    else:
        raise NotImplementedError(f"{' '.join(argv)} exited with {proc.wait()} before a step")

    def step():
        proc.stdin.write("\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{' '.join(argv)} exited with {proc.wait()}")
        return float(line)
    return step


def _arm_child(config, impl):
    """--isolated: the in-process arm `impl` (numpy, torch, tinygradx, ...) served from a
    process of its own (`bench_floor.py --serve-arm`), built as make_step_fns builds it. The
    child imports tinygradx before numpy (this file's first import does), which sets
    OPENBLAS_THREAD_TIMEOUT=4 as it does for a user's script that starts with `import
    tinygradx`; the numpy and torch arms are kept from that, so they run with the defaults."""
    env = None if impl.startswith("tinygradx") else {"TINYGRADX_BLAS_TIMEOUT": "0"}
    if impl.endswith("-nopool"):        # the same arm with tinygradx's thread pool off
        impl, env = impl[:-len("-nopool")], {"TINYGRADX_POOL": "0"}
    argv = [os.path.abspath(__file__), "--serve-arm", config, impl]
    if _LIMITS:
        argv += ["--threads", str(_LIMITS[-1])]
    return _child_adapter(argv, env)


def _serve_arm(config, impl):
    fn = make_step_fns(config, (impl,))[impl]
    print("ready", flush=True)
    for _ in sys.stdin:                         # one step per line read; EOF ends the process
        print(repr(fn()), flush=True)


def _thread_env():
    """--threads N for a child arm: the variables its BLAS and OpenMP read at start."""
    n = str(_LIMITS[-1]) if _LIMITS else None
    return {"OPENBLAS_NUM_THREADS": n, "OMP_NUM_THREADS": n} if n else {}


def _close_children():
    for proc in _CHILDREN:
        try:
            proc.stdin.close()           # EOF: the child's loop ends
        except BrokenPipeError:          # (it had exited already)
            pass
        proc.wait()
    _CHILDREN.clear()


def _plain_adapter(spec, params, batch, env=None):
    """bench/plain_gpt.py: the GPT op by op as a user writes it, public API only, no setting
    called, from the same weights and batch (passed as an .npz)."""
    cfg = spec["cfg"]
    if spec["kind"] != "gpt" or (cfg.vocab_size, cfg.n_embd, spec["T"]) != (65, 128, 64):
        raise NotImplementedError("the plain script is written for the GPT CPU config")
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)
    np.savez(path, **{k: np.asarray(v) for k, v in params.items()},
             **{"batch.idx": batch[0], "batch.tgt": batch[1]})
    try:
        return _child_adapter([os.path.join(BENCH, "plain_gpt.py"), "--params", path, "--serve",
                               "--layers", str(cfg.n_layer), "--heads", str(cfg.n_head)], env)
    finally:
        os.unlink(path)          # read by the child before it says "ready"


def _loop_adapter(spec, params, batch, compat):
    """bench/gpt_loop.py (a PyTorch script for tests/compat_models/gpt.py) in a fresh process,
    on PyTorch or through `python -m tinygradx.compat`; its own weights and batch (same work)."""
    if spec["kind"] != "gpt" or spec["cfg"].n_embd != 128:
        raise NotImplementedError("gpt_loop.py is written for the GPT CPU config")
    loop = [os.path.join(BENCH, "gpt_loop.py"), "--serve"]
    return _child_adapter(["-m", "tinygradx.compat", *loop] if compat else loop)


ADAPTERS = {"numpy": _numpy_adapter, "torch": _torch_adapter, "tinygradx": _tinygradx_adapter,
            # the same model op by op (GPT only), and the same steps without compiled kernels
            "tinygradx-ops": lambda *a: _tinygradx_adapter(*a, fused=False),
            "tinygradx-numpy": lambda *a: _tinygradx_adapter(*a, kernels=False),
            # fresh processes: a user's plain script (with the allocator setting its first
            # backward applies, and without), and a PyTorch script through tinygradx.compat
            # next to the same script on PyTorch
            "plain": _plain_adapter,
            "plain-nomalloc": lambda *a: _plain_adapter(*a, env={"TINYGRADX_MALLOC_TUNE": "0"}),
            "plain-nopool": lambda *a: _plain_adapter(*a, env={"TINYGRADX_POOL": "0"}),
            # the same plain script on another checkout of tinygradx (a before/after in one
            # run: BENCH_PLAIN_REV=DIR, a folder holding that revision's tinygradx/)
            "plain-rev": lambda *a: _plain_adapter(*a, env=_rev_env()),
            "compat": lambda *a: _loop_adapter(*a, compat=True),
            "torch-script": lambda *a: _loop_adapter(*a, compat=False)}
CHILD_ARMS = {"plain", "plain-nomalloc", "plain-nopool", "plain-rev", "compat", "torch-script"}


def _rev_env():
    where = os.environ.get("BENCH_PLAIN_REV")
    if not where or not os.path.isdir(os.path.join(where, "tinygradx")):
        raise NotImplementedError("plain-rev needs BENCH_PLAIN_REV=DIR, a folder holding another "
                                  "revision's tinygradx/ (git worktree add DIR REV)")
    return {"PYTHONPATH": where}
# ratios reported besides "vs torch": an arm against the arm it must be read against
PAIRED = {"compat": "torch-script", "plain": "plain-rev"}


def register_adapter(name, factory):
    ADAPTERS[name] = factory


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def make_step_fns(config, impls=("numpy", "torch"), seed=0):
    """dict impl -> step callable for CONFIGS[config], all from the same params and batch.
    Implementations whose adapter raises ImportError / NotImplementedError are skipped with a
    note on stderr."""
    spec = CONFIGS[config]
    params = init_params(spec, seed)
    batch = make_batch(spec)
    fns = {}
    for name in impls:
        try:
            if _ISOLATED and name not in CHILD_ARMS:
                fns[name] = _arm_child(config, name)
                continue
            fns[name] = ADAPTERS[name](spec, params, batch)
        except (ImportError, NotImplementedError) as e:
            print(f"[skip] {name} on {config}: {e}", file=sys.stderr)
    return fns


# ---- peak RSS: one child process per (config, implementation) ----------------------------------

def _rss_child(config, impl, steps):
    before = peak_rss_mb()
    fn = make_step_fns(config, (impl,))[impl]
    import resource
    fn()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        fn()
    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    print(json.dumps({"peak_rss_mb": peak_rss_mb(), "rss_before_mb": before,
                      "minflt_per_step": (f1 - f0) / steps}))


def set_threads(n):
    """Limit BLAS and torch threads for this process (threadpoolctl is optional) and for the
    child arms (through their environment)."""
    _LIMITS.append(n)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(n)
    except ImportError:
        print("[warn] threadpoolctl not installed: BLAS threads not limited (set "
              "OPENBLAS_NUM_THREADS before starting python instead)", file=sys.stderr)
    if torch_available():
        import torch
        torch.set_num_threads(n)


_LIMITS = []
_ISOLATED = []           # [True] with --isolated


def measure_rss(config, impl, steps=3):
    cmd = [sys.executable, os.path.abspath(__file__), "--rss-child", config, impl,
           "--steps", str(steps)]
    if _LIMITS:
        cmd += ["--threads", str(_LIMITS[-1])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- main ------------------------------------------------------------------------------------

def run(configs, impls, pairs, warmup, rss, gap=0.0, burst=1):
    rows = []
    for config in configs:
        spec = CONFIGS[config]
        fns = make_step_fns(config, impls)
        first = {}
        for n, f in list(fns.items()):                # first-step losses: same model, same data
            try:
                first[n] = f()
            except Exception as e:                    # an adapter under construction: report it
                print(f"[skip] {n} on {config}: first step failed: {e!r}", file=sys.stderr)
                del fns[n]
        base = "torch" if "torch" in fns else next(iter(fns))
        try:
            res = ab_compare(fns, pairs=pairs, warmup=warmup, baseline=base, gap=gap,
                              burst=burst)
        finally:
            _close_children()
        flops, peak = _step_flops(config, fns), None
        if flops:
            import tinygradx as tgx
            peak = tgx.perf.peak_flops()
        floor = res["times"].get("numpy")
        for n in fns:
            st = res["stats"][n]
            row = {"config": config, "title": spec["title"], "impl": n, "loss0": first[n],
                   "median_ms": st["median"] * 1e3, "min_ms": st["min"] * 1e3,
                   "max_ms": st["max"] * 1e3, "ratio_base": res["ratios"][n], "base": base}
            if flops:
                row.update(flops=flops, peak_flops=peak, flop_per_s=flops / st["median"])
            if floor is not None:
                rs = [a / b for a, b in zip(res["times"][n], floor, strict=True)]
                row["ratio_floor"] = {"median": float(np.median(rs)), "min": min(rs),
                                      "max": max(rs)}
            other = PAIRED.get(n)
            if other in res["times"]:
                rs = [a / b for a, b in zip(res["times"][n], res["times"][other], strict=True)]
                row["ratio_pair"] = {"vs": other, "median": float(np.median(rs)), "min": min(rs),
                                     "max": max(rs)}
            if rss and n not in CHILD_ARMS:         # (a child arm's RSS is its own process's)
                row.update(measure_rss(config, n))
            rows.append(row)
        print(f"done {config}", file=sys.stderr)
    return rows


def _step_flops(config, fns):
    """GEMM FLOPs of one training step of the config's model (tinygradx.perf.step_flops on
    tinygradx's graph: every arm does these GEMMs), or None without tinygradx."""
    counter = next((f.count_flops for f in fns.values() if hasattr(f, "count_flops")), None)
    if counter is None:
        try:
            spec = CONFIGS[config]
            counter = _tinygradx_adapter(spec, init_params(spec), make_batch(spec)).count_flops
        except (ImportError, NotImplementedError):
            return None
    return counter()


def markdown(rows, pairs, rss):
    out = []
    for config in dict.fromkeys(r["config"] for r in rows):
        rs = [r for r in rows if r["config"] == config]
        out.append(f"**{rs[0]['title']}** ({pairs} A/B rounds; ratios are per-round medians "
                   f"[min, max])\n")
        flops = rs[0].get("flops")
        if flops:
            out.append(f"GEMM work per step (forward + backward, tinygradx.perf.step_flops): "
                       f"{flops / 1e9:.3f} GFLOP; this CPU's float32 GEMM peak measured in this "
                       f"run (tinygradx.perf.peak_flops): {rs[0]['peak_flops'] / 1e9:.1f} "
                       f"GFLOP/s\n")
        hdr = (f"| implementation | step ms, median [min, max] | vs {rs[0]['base']} "
               "| vs numpy floor |" + (" GFLOP/s (MFU) |" if flops else ""))
        sep = "|---|---|---|---|" + ("---|" if flops else "")
        if rss:
            hdr += " peak RSS MB (after imports) | page faults / step |"
            sep += "---|---|"
        out += [hdr, sep]
        for r in rs:
            line = (f"| {r['impl']} | {r['median_ms']:.1f} [{r['min_ms']:.1f}, {r['max_ms']:.1f}] "
                    f"| {format_ratio(r['ratio_base'])} | "
                    f"{format_ratio(r['ratio_floor']) if 'ratio_floor' in r else '-'} |")
            if flops:
                line += (f" {r['flop_per_s'] / 1e9:.1f} "
                         f"({r['flop_per_s'] / r['peak_flops']:.0%}) |")
            if rss and "peak_rss_mb" in r:
                line += (f" {r['peak_rss_mb']:.0f} ({r['rss_before_mb']:.0f}) | "
                         f"{r['minflt_per_step']:.0f} |")
            elif rss:
                line += " - | - |"
            out.append(line)
        for r in rs:
            if "ratio_pair" in r:
                out.append(f"\n{r['impl']} / {r['ratio_pair']['vs']} (the same script): "
                           f"{format_ratio(r['ratio_pair'])}")
        losses = ", ".join(f"{r['impl']} {r['loss0']:.4f}" for r in rs)
        out.append(f"\nfirst-step loss: {losses}\n")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--impls", nargs="+", default=None,
                    help="default: numpy, plus torch when installed")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rss", action="store_true", help="peak RSS per impl (child processes)")
    ap.add_argument("--threads", type=int, default=None,
                    help="limit BLAS (via threadpoolctl) and torch intra-op threads, e.g. 1 for "
                         "a comparison that a busy machine distorts less")
    ap.add_argument("--isolated", action="store_true",
                    help="every arm in a process of its own with the user's environment (BLAS "
                         "and OpenMP workers spin as their defaults say) and --gap seconds of "
                         "sleep before each step, so no arm's idle workers share its core")
    ap.add_argument("--gap", type=float, default=0.3,
                    help="with --isolated: the sleep before each step (default 0.3 s; "
                         "OpenBLAS's workers spin ~2^28 cycles, ~0.1 s)")
    ap.add_argument("--burst", type=int, default=3,
                    help="with --isolated: steps per arm and round after the gap, the last "
                         "one timed (default 3: a step inside a warm loop, as in training)")
    ap.add_argument("--json", help="also write the raw rows here")
    ap.add_argument("--rss-child", nargs=2, metavar=("CONFIG", "IMPL"), help=argparse.SUPPRESS)
    ap.add_argument("--serve-arm", nargs=2, metavar=("CONFIG", "IMPL"), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.threads:
        set_threads(a.threads)
    if a.rss_child:
        _rss_child(*a.rss_child, a.steps)
        return
    if a.serve_arm:
        _serve_arm(*a.serve_arm)
        return
    if a.isolated:
        _ISOLATED.append(True)
    impls = a.impls or (["numpy", "torch"] if torch_available() else ["numpy"])
    rows = run(a.configs, impls, a.pairs, a.warmup, a.rss, gap=a.gap if a.isolated else 0.0,
               burst=a.burst if a.isolated else 1)
    print(f"date: {datetime.date.today().isoformat()}\n")
    print("command: python bench/bench_floor.py " + " ".join(sys.argv[1:] if argv is None
                                                               else argv) + "\n")
    facts = machine_facts()
    if a.isolated:
        user = ", ".join(f"{k}={_blas_env.USER_ENV.get(k, '(unset)')}" for k in _blas_env.SPIN_VARS)
        facts += (f"\narms: a process each, with the user's environment ({user}; the "
                  f"tinygradx arms: what `import tinygradx` sets before numpy loads); "
                  f"{a.gap:g} s of sleep, then {a.burst - 1} untimed step(s), then the timed "
                  f"one, per arm and round")
    print("```\n" + facts + "\n```\n")
    print(markdown(rows, a.pairs, a.rss))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
