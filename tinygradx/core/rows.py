"""The two ops that work row by row, along the last axes: softmax and layer_norm.

Attention turns each row of scores into weights with softmax; every sublayer of a Transformer
ends in layer_norm (after the residual add in the seed's Post-LN, before the sublayer in GPT's
Pre-LN). Each is one node with its own derivative, not a chain of primitives: fewer passes
over memory, and a fully masked row (every key -inf) gives zeros instead of NaN.

The forward's row loop asks the speed layer first (`fastpath.kernel`: a compiled loop when
one is registered); the numpy lines after it are the reference.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import as_float
from .fastpath import kernel
from .node import Function
from .xp import of


def safe_max(x, axis):
    """Row max, with rows that are entirely -inf (fully masked) given 0, so x - max is no NaN
    there. A row holding +inf keeps its max, so it turns to NaN as in PyTorch."""
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    return np.where(m == -np.inf, 0, m).astype(x.dtype, copy=False)


def softmax_rows(x, out, axis=-1):
    """out <- softmax(x) along axis (out may be x itself); a fully -inf row gives zeros (its
    max taken as 0, its empty sum as 1)."""
    done = kernel("softmax", x, out, axis)
    if done is not None:
        return done
    np.subtract(x, safe_max(x, axis), out=out)
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=axis, keepdims=True)
    if not total.all():
        total[total == 0] = 1
    out /= total
    return out


class Softmax(Function):
    """s = exp(x - max)/sum; dx = s * (g - sum(g*s)).

    A row that is entirely -inf (every key masked) gives all-zero probabilities and zero
    gradient instead of NaN: the max is treated as 0 and the empty sum as 1.
    Composite twin (the same math op by op): tinygradx's `F.softmax_composite`.
    """
    fresh_grads = True

    def forward(self, x, dim=-1):
        x = as_float(x)                      # an int tensor's softmax is float32
        self.dim = dim
        self.out = softmax_rows(x, np.empty_like(x), dim) if x.size else np.empty_like(x)
        return self.out

    def backward(self, g):
        xp, s = of(g), self.out
        if s.ndim == 0 or s.size == 0:
            return xp.zeros_like(g)          # one element: s = 1 whatever x is
        return s * (g - xp.sum(g * s, self.dim, True))


def layer_norm_rows(x2, w, b, eps, keep):
    """(y, xhat, rstd (rows, 1)) of LayerNorm over the rows of x2 (rows, n); w, b (n,) or None.
    xhat and rstd are what a faster array backward reads (the library's, in ops/fused.py; the
    formula below recomputes them from x); xhat may be None unless keep."""
    done = kernel("layer_norm", x2, w, b, eps, keep)
    if done is not None:
        return done
    n = x2.shape[1]
    xc = x2 - np.add.reduce(x2, axis=1, keepdims=True) / n
    var = np.einsum("ij,ij->i", xc, xc) / n                     # biased variance, no temporary
    rstd = (1.0 / np.sqrt(var + eps)).astype(x2.dtype, copy=False)[:, None]
    xc *= rstd                                                  # xhat
    y = xc * w if w is not None else xc.copy()
    if b is not None:
        y += b
    return y, xc, rstd


class LayerNorm(Function):
    """y = (x - mean)/sqrt(var + eps) * w + b over the last len(normalized_shape) dims.

    Biased variance, eps inside the square root (as torch.nn.LayerNorm). With xhat the
    normalised input and gh = g*w: dx = rstd * (gh - mean(gh) - xhat * mean(gh*xhat)).
    Composite twin (the same math op by op): tinygradx's `F.layer_norm_composite`.
    """
    fresh_grads = True          # dx, dw are new arrays (db is g itself: the walk copes)
    op_name = "layer_norm"

    def forward(self, x, *wb, n_axes=1, eps=1e-5, affine=(False, False)):
        # work on a (rows, n) view: every reduction is then along axis 1, and the row dot
        # products of the backward become BLAS matrix-vector products
        self.x, self.wb = x, wb             # what the formula reads (kept, not copied)
        self.shape, self.wshape = x.shape, x.shape[x.ndim - n_axes:]
        n = math.prod(self.wshape)
        x2 = x.reshape(-1, n)
        self.w = wb[0].reshape(n) if affine[0] else None
        b = wb[-1].reshape(n) if affine[1] else None
        self.affine, self.eps = affine, eps
        y, self.xhat, self.rstd = layer_norm_rows(x2, self.w, b, eps,
                                                  keep=True in self.needs_input_grad)
        return y.reshape(x.shape)

    def backward(self, g):
        xp, x = of(g), self.x
        dims = tuple(range(x.ndim - len(self.wshape), x.ndim))
        xc = x - xp.mean(x, dims, True)
        rstd = 1 / xp.sqrt(xp.mean(xc * xc, dims, True) + self.eps)
        xhat = xc * rstd                      # recomputed: xhat and rstd depend on x
        gh = g * self.wb[0] if self.affine[0] else g
        dx = rstd * (gh - xp.mean(gh, dims, True) - xhat * xp.mean(gh * xhat, dims, True))
        # dw, db in the shape of x: the walk sums the leading dims away
        dw, db = (g * xhat,) if self.affine[0] else (), (g,) if self.affine[1] else ()
        return (dx, *dw, *db)
