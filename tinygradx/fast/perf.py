"""Where a step spends its time and what it costs: the profile table, FLOPs, saved memory.

    with tgx.profile() as prof:
        loss = model(x, y)[1]; loss.backward(); opt.step()
    print(prof.table())          # time per op type, forward and backward, and what is left

    loss = model(x, y)[1]
    flops = tgx.perf.step_flops(loss)              # GEMM FLOPs of forward + backward
    print(tgx.perf.saved_tensors_report(loss).table())   # bytes held for backward, per op/module
    loss.backward()                                # (both before backward: it frees the graph)
    print(tgx.perf.flops_line(flops, seconds))     # GFLOP/step, GFLOP/s, MFU on peak_flops()

The process-wide speed settings (OpenBLAS's idle threads, glibc's allocator) are in
`tinygradx.process`.
"""
from __future__ import annotations

import contextlib
import time
from collections import defaultdict

from ..core.node import STATE, observe


class Profile:
    """Seconds and call counts per op type, forward and backward, collected while active."""

    def __init__(self):
        self.forward = defaultdict(lambda: [0, 0.0])
        self.backward = defaultdict(lambda: [0, 0.0])
        self.wall = 0.0

    def _on_forward(self, ctx, inputs, out, seconds):
        entry = self.forward[ctx.name()]
        entry[0] += 1
        entry[1] += seconds

    def _on_backward(self, ctx, seconds):
        entry = self.backward[ctx.name()]
        entry[0] += 1
        entry[1] += seconds

    def totals(self):
        """{op: (forward s, backward s, forward calls)} sorted by total time, largest first."""
        names = set(self.forward) | set(self.backward)
        rows = {n: (self.forward[n][1], self.backward[n][1], self.forward[n][0])
                for n in names}
        return dict(sorted(rows.items(), key=lambda kv: -(kv[1][0] + kv[1][1])))

    def table(self):
        """A text table: ms per op type (forward, backward, share of the wall time)."""
        rows = self.totals()
        op_time = sum(f + b for f, b, _ in rows.values())
        lines = [f"{'op':<16}{'calls':>7}{'fwd ms':>10}{'bwd ms':>10}{'share':>8}",
                 "-" * 51]
        for name, (f, b, n) in rows.items():
            share = (f + b) / self.wall if self.wall else 0.0
            lines.append(f"{name:<16}{n:>7}{f * 1e3:>10.2f}{b * 1e3:>10.2f}{share:>8.1%}")
        other = self.wall - op_time
        lines.append("-" * 51)
        lines.append(f"{'ops total':<16}{'':>7}{op_time * 1e3:>20.2f}"
                     f"{(op_time / self.wall if self.wall else 0):>8.1%}")
        lines.append(f"{'other':<16}{'':>7}{other * 1e3:>20.2f}"
                     f"{(other / self.wall if self.wall else 0):>8.1%}   (Python, optimizer, "
                     f"data)")
        lines.append(f"{'wall':<16}{'':>7}{self.wall * 1e3:>20.2f}")
        return "\n".join(lines)


@contextlib.contextmanager
def profile():
    """Time every op's forward and backward inside the block; yields a Profile."""
    prof = Profile()
    STATE.backward_observers.append(prof._on_backward)
    start = time.perf_counter()
    try:
        with observe(prof._on_forward):
            yield prof
    finally:
        prof.wall = time.perf_counter() - start
        STATE.backward_observers.remove(prof._on_backward)


# --------------------------------------------------------------------------------------------
# what a step costs: its FLOPs against this CPU's peak, and the memory its graph holds
# --------------------------------------------------------------------------------------------

def _nodes(root):
    """Every node behind `root`, parents before consumers (the order forward made them)."""
    # Not core.walk.toposort: that one re-resolves parents edited in place (it changes the
    # graph it walks) and raises backward's error; a report only reads the graph.
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        t, expanded = stack.pop()
        ctx = t._ctx
        if ctx is None:
            continue
        if expanded:
            order.append(ctx)
            continue
        if id(ctx) in seen:
            continue
        seen.add(id(ctx))
        if ctx.parents is None:
            raise RuntimeError("the graph behind this tensor was freed by a backward pass: "
                               "count it before backward() (or with retain_graph=True)")
        stack.append((t, True))
        stack.extend((p, False) for p in reversed(ctx.parents))
    return order


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _gemm_flops(ctx):
    """(forward, backward) multiply-add FLOPs (2 per multiply-add) of one node's GEMMs; (0, 0)
    for every op that is not a GEMM (element-wise work is not counted, as in MFU)."""
    name, need = ctx.name(), ctx.needs_input_grad
    # shapes from the node's inputs: an op keeps only the arrays its backward reads
    shapes = [p.shape for p in ctx.parents]
    if name == "linear":                                # x (..., k) W^T, W (n, k)
        x, w = shapes[:2]
        f = 2 * _prod(x[:-1]) * x[-1] * w[0]
        return f, f * need[0] + f * need[1]             # dX = g W, dW = g^T x
    if name == "matmul":                                # a (..., m, k) @ b (..., k, n)
        a, b = shapes[:2]
        a2 = a if len(a) > 1 else (1,) + a
        b2 = b if len(b) > 1 else b + (1,)
        batch = max(_prod(a2[:-2]), _prod(b2[:-2]))     # broadcast batch dims
        f = 2 * batch * a2[-2] * a2[-1] * b2[-1]
        return f, f * need[0] + f * need[1]             # da = g b^T, db = a^T g
    if name == "attention":                             # softmax(Q K^T) V, fused
        a, d, dv = ctx.a, ctx.qs.shape[-1], ctx.v.shape[-1]
        scores = _prod(a.shape)                          # batch * n * m
        fqk, fav = 2 * scores * d, 2 * scores * dv
        q_k_v = tuple(need[:3]) if len(need) >= 3 else (need[0],) * 3    # packed: one input
        back = fav * q_k_v[2] + fav * (q_k_v[0] or q_k_v[1]) + fqk * q_k_v[0] + fqk * q_k_v[1]
        return fqk + fav, back                           # dV, dA; dQ, dK
    return 0, 0


def step_flops(loss):
    """FLOPs of one training step through `loss`'s graph, forward and backward: 2·m·k·n per GEMM
    forward (linear, matmul, fused attention), and in backward the same again for each of its
    inputs that needs a gradient. For a GPT that is 6·(matrix weights, head included)·tokens +
    12·layers·T·C·tokens (attention), the usual MFU count; element-wise work, the optimizer
    and einsum are not counted. Call it before backward() (backward frees the graph)."""
    fwd = bwd = 0
    for ctx in _nodes(loss):
        f, b = _gemm_flops(ctx)
        fwd, bwd = fwd + f, bwd + b
    return fwd + bwd


_PEAK = {}


def peak_flops(n=512, repeat=7):
    """This CPU's float32 GEMM FLOP/s as numpy's BLAS reaches it with its threads: the best of
    `repeat` (n, n) @ (n, n) products, measured once per process (~0.1 s) and cached."""
    import numpy as np
    if n not in _PEAK:
        rng = np.random.default_rng(0)
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        out = np.empty((n, n), np.float32)
        np.matmul(a, b, out=out)                        # threads started, pages touched
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            np.matmul(a, b, out=out)
            best = min(best, time.perf_counter() - t0)
        _PEAK[n] = 2 * n ** 3 / best
    return _PEAK[n]


def flops_line(flops, seconds):
    """'1.23 GFLOP/step, 30.5 GFLOP/s, MFU 24%' (MFU against `peak_flops()`)."""
    rate = flops / seconds if seconds > 0 else 0.0
    return (f"{flops / 1e9:.2f} GFLOP/step, {rate / 1e9:.1f} GFLOP/s, "
            f"MFU {rate / peak_flops():.0%}")


class SavedReport:
    """What a graph holds for its backward pass, in bytes. Each buffer (an array and every view
    of it) is counted once, at the first node (in forward order) that holds it, either as a
    saved array (what the node's backward reads) or as an input (a parent's array, kept alive
    by the parent link). `activations` are buffers made by ops; `leaves` the buffers of leaf
    tensors (parameters, inputs), which the program holds anyway."""

    def __init__(self):
        self.activations = 0
        self.leaves = 0
        self.by_op = defaultdict(int)         # op name -> activation bytes
        self.by_module = defaultdict(int)     # module path ("" outside modules) -> bytes
        self.rows = []                        # (op, module path, activation bytes) per node

    def table(self, top=12):
        """A text table: activation bytes per op type and per module, largest first."""
        lines = [f"activations held for backward: {self.activations / 2**10:,.1f} KiB "
                 f"(+ {self.leaves / 2**10:,.1f} KiB of leaves: parameters, inputs)"]
        for title, rows in (("op", self.by_op), ("module", self.by_module)):
            lines.append(f"{title:<32}{'KiB':>12}{'share':>8}")
            for key, n in sorted(rows.items(), key=lambda kv: -kv[1])[:top]:
                share = n / self.activations if self.activations else 0.0
                lines.append(f"{(key or '<top>'):<32}{n / 2**10:>12,.1f}{share:>8.1%}")
        return "\n".join(lines)


def _owner(a):
    """The array that owns a's memory (a itself, or the base its views lead to)."""
    while isinstance(a.base, type(a)):
        a = a.base
    return a


def _arrays(value, out):
    """Every numpy array in a node attribute (arrays, tuples and lists of them)."""
    import numpy as np
    if isinstance(value, np.ndarray):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _arrays(v, out)
    return out


def saved_tensors_report(loss):
    """A SavedReport of the graph behind `loss` (call it before backward(), which frees it):
    bytes per op and per module, every buffer counted once."""
    report, seen = SavedReport(), set()
    leaf_buffers = set()
    nodes = _nodes(loss)
    for ctx in nodes:
        for p in ctx.parents:
            if p._ctx is None:
                leaf_buffers.add(id(_owner(p._data)))
    for ctx in nodes:
        held = _arrays(list(ctx.__dict__.values()), [])
        held += [p._data for p in ctx.parents]
        own = 0
        for a in held:
            o = _owner(a)
            if id(o) in seen:
                continue
            seen.add(id(o))
            if id(o) in leaf_buffers:
                report.leaves += o.nbytes
            else:
                own += o.nbytes
        scope = ctx.scope or ""
        report.activations += own
        report.by_op[ctx.name()] += own
        report.by_module[scope] += own
        report.rows.append((ctx.name(), scope, own))
    return report
