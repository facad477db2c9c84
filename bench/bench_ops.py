"""Per-op overhead and a two-layer MLP step: tinygradx against the same numpy calls.

    python bench/bench_ops.py [--pairs 30]

Prints, from one interleaved run (bench/harness.py):
  1. tiny arrays (4x4): microseconds per op, forward and forward+backward, and the overhead
     tinygradx adds over the bare numpy call (the cost of the Python bookkeeping);
  2. 512x512 float32: time of one op relative to the raw numpy call (target <= 1.1x);
  3. an MLP (784-512-10, ReLU, cross-entropy, batch 256, SGD) training step relative to a
     hand-written numpy forward/backward (target <= 1.2x).
Timings are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


import _blas_env  # noqa: F401,E402  (before numpy: see bench/_blas_env.py)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tinygradx as tgx                                  # noqa: E402
import tinygradx.functional as F                         # noqa: E402
import tinygradx.nn                                      # noqa: E402
import tinygradx.optim                                   # noqa: E402
from harness import ab_compare, format_ratio, machine_facts, peak_rss_mb  # noqa: E402

OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "exp": (lambda a, b: np.exp(a), lambda a, b: a.exp()),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b),
}


def per_call(fn, n):
    """Median over 5 repeats of the mean seconds per call over n calls."""
    fn()
    reps = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        reps.append((time.perf_counter() - t) / n)
    return float(np.median(reps))


def tiny_overhead():
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    a = tgx.Tensor(a_np, requires_grad=True)
    b = tgx.Tensor(b_np, requires_grad=True)
    g = np.ones((4, 4), np.float32)
    print("\n## 1. Tiny arrays (4x4 float32): microseconds per op\n")
    print("| op | numpy | tinygradx forward | overhead | numpy fwd+bwd | tinygradx fwd+bwd "
          "(incl. backward walk) | overhead |")
    print("|---|---|---|---|---|---|---|")
    np_bwd = {"add": lambda: (a_np + b_np, g, g), "mul": lambda: (a_np * b_np, g * b_np, g * a_np),
              "exp": lambda: (lambda e: (e, g * e))(np.exp(a_np)),
              "matmul": lambda: (a_np @ b_np, g @ b_np.T, a_np.T @ g)}
    for name, (np_fn, tgx_fn) in OPS.items():
        t_np = per_call(lambda np_fn=np_fn: np_fn(a_np, b_np), 20000)
        t_fwd = per_call(lambda tgx_fn=tgx_fn: tgx_fn(a, b), 20000)
        t_np_fb = per_call(np_bwd[name], 20000)

        def fwd_bwd(tgx_fn=tgx_fn):
            tgx_fn(a, b).backward(g)
            a.grad = b.grad = None
        t_fb = per_call(fwd_bwd, 5000)
        us = 1e6
        print(f"| {name} | {t_np * us:.2f} | {t_fwd * us:.2f} | +{(t_fwd - t_np) * us:.2f} | "
              f"{t_np_fb * us:.2f} | {t_fb * us:.2f} | +{(t_fb - t_np_fb) * us:.2f} |")


def repeat(fn, k):
    """fn called k times: one timed round is then long enough for the clock and the scheduler
    (a single 512x512 add takes ~100 us, less than the noise of one measurement)."""
    def run():
        for _ in range(k):
            fn()
    return run


def large_ratio(pairs):
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2))
    a, b = tgx.Tensor(a_np), tgx.Tensor(b_np)
    ag, bg = tgx.Tensor(a_np, requires_grad=True), tgx.Tensor(b_np, requires_grad=True)
    print("\n## 2. 512x512 float32: tinygradx time / numpy time (median [min, max])\n")
    print("| op | forward, no graph | forward, recording the graph |")
    print("|---|---|---|")
    for name, (np_fn, tgx_fn) in OPS.items():
        k = 5 if name == "matmul" else 50
        res = ab_compare({"numpy": repeat(lambda f=np_fn: f(a_np, b_np), k),
                          "tgx": repeat(lambda f=tgx_fn: f(a, b), k),
                          "tgx_graph": repeat(lambda f=tgx_fn: f(ag, bg), k)},
                         pairs=pairs, warmup=3)
        print(f"| {name} | {format_ratio(res['ratios']['tgx'])} | "
              f"{format_ratio(res['ratios']['tgx_graph'])} |")


class NumpyMLP:
    """The same MLP written by hand: forward, backward and SGD on plain arrays."""

    def __init__(self, params):
        self.p = {k: v.copy() for k, v in params.items()}

    def step(self, x, y, lr=0.1):
        p = self.p
        h = x @ p["w1"].T + p["b1"]
        a = np.maximum(h, 0)
        logits = a @ p["w2"].T + p["b2"]
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        n = x.shape[0]
        loss = float(np.mean(np.log(s[:, 0]) - z[np.arange(n), y]))
        d = e / s
        d[np.arange(n), y] -= 1
        d /= n
        gw2, gb2 = d.T @ a, d.sum(0)
        da = d @ p["w2"]
        da *= h > 0
        gw1, gb1 = da.T @ x, da.sum(0)
        for k, g in (("w1", gw1), ("b1", gb1), ("w2", gw2), ("b2", gb2)):
            p[k] -= lr * g
        return loss


def mlp_step(pairs):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    tgx.manual_seed(0)
    l1, l2 = tgx.nn.Linear(784, 512), tgx.nn.Linear(512, 10)
    params = {"w1": l1.weight.detach().numpy(), "b1": l1.bias.detach().numpy(),
              "w2": l2.weight.detach().numpy(), "b2": l2.bias.detach().numpy()}
    ref = NumpyMLP(params)
    opt = tgx.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=0.1)
    xt = tgx.Tensor(x)

    def tgx_step():
        loss = F.cross_entropy(l2(l1(xt).relu()), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    # same start, same updates: the losses must agree before the timings mean anything
    ref_check = NumpyMLP(params)
    for _ in range(3):
        la, lb = ref_check.step(x, y), tgx_step()
        assert abs(la - lb) < 1e-4, (la, lb)
    res = ab_compare({"numpy": repeat(lambda: ref.step(x, y), 10),
                      "tinygradx": repeat(tgx_step, 10)}, pairs=pairs, warmup=3)
    print("\n## 3. MLP training step (784-512-10, batch 256, SGD)\n")
    print(f"numpy by hand: {res['stats']['numpy']['median'] * 1e2:.2f} ms, tinygradx: "
          f"{res['stats']['tinygradx']['median'] * 1e2:.2f} ms per step, ratio "
          f"{format_ratio(res['ratios']['tinygradx'])}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=30)
    args = ap.parse_args(argv)
    print("# bench_ops\n")
    print(machine_facts())
    tiny_overhead()
    large_ratio(args.pairs)
    mlp_step(args.pairs)
    print(f"\npeak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
