"""Matrix products on both cores: the pool's calls (fast/pool.py) plugged into the core's
MatMul and Linear.

- a stack of small products (attention's Q K^T and A V, forward and backward) runs in batch
  blocks on the pool: the core's `_mm` asks `fastpath.kernel("matmul", a, b)` first;
- a layer's two weight-gradient products, dX = g W and dW = g^T X, run side by side, one per
  core: a fast backward each for Linear and for MatMul by a shared 2-D weight.

The pool starts at the first of those backward passes (`pool.start()`, said once). Each
function returns None where the pool does not apply, and the core's numpy lines run. A stack
gives numpy's numbers; a pair those of numpy on one thread, equal to rounding to the threaded
ones (tests/fast/test_pool.py).
"""
from __future__ import annotations

from ..core import fastpath
from ..core.linalg import Linear, MatMul
from ..fast import pool


fastpath.use_kernel("matmul", pool.matmul)    # core.linalg._mm: stacks of small products


@fastpath.fast_backward(Linear)
def _linear_backward(ctx, g):
    """dX = g W and dW = g^T X side by side, one per core; db = the column sums of g."""
    need = ctx.needs_input_grad
    if not (need[0] and need[1]) or not pool.start():
        return None
    g2 = g.reshape(-1, g.shape[-1])                      # (rows, out)
    x = ctx.x
    both = pool.pair(g2, ctx.w, g2.T, x.reshape(-1, x.shape[-1]))   # (rows, in), (out, in)
    if both is None:
        return None
    gx, gw = both
    gx = gx.reshape(x.shape)                             # (..., in)
    if len(need) == 3:
        return gx, gw, (g2.sum(0) if need[2] else None)
    return gx, gw


@fastpath.fast_backward(MatMul)
def _matmul_backward(ctx, g):
    """(..., n, k) @ W (k, m), W shared by the batch: dA = g W^T and dW = A^T g as two 2-D
    products side by side; other shapes run the formula (whose stacks may use the pool)."""
    need = ctx.needs_input_grad
    if not pool.start() or ctx.nd[1] != 2 or ctx.nd[0] < 2 or not (need[0] and need[1]):
        return None
    a, b = ctx.a, ctx.b
    a2 = a.reshape(-1, a.shape[-1])                      # (rows, k)
    g2 = g.reshape(-1, g.shape[-1])                      # (rows, m)
    if g2.shape[0] != a2.shape[0]:
        return None                                      # broadcast batch dims: the formula
    both = pool.pair(g2, b.T, a2.T, g2)                  # (rows, k), (k, m)
    if both is None:
        return None
    ga, gb = both
    return ga.reshape(a.shape), gb                       # (..., n, k)
