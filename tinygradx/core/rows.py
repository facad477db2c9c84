"""The two ops that work row by row, along the last axes: softmax and layer_norm.

Attention turns each row of scores into weights with softmax; every sublayer of a Transformer
ends in layer_norm (after the residual add in the seed's Post-LN, before the sublayer in GPT's
Pre-LN). Each is one node with its own derivative, not a chain of primitives: fewer passes
over memory, and a fully masked row (every key -inf) gives zeros instead of NaN.

Two numerical rules, the same on every path (tinygradx/fast's faster versions are held to
these functions):
- float16 is computed in float32 and rounded once at the end, as PyTorch does on a CPU: a
  float16 row of [300, 0, -300] has a variance (60,000) near float16's largest number.
  layer_norm also computes float32 rows in float64 (a row of nearly equal values keeps its
  digits: x - mean is tiny against x), as its compiled loop sums in float64.
- layer_norm's statistics cannot overflow: a row whose squares (or sum) leave the dtype's
  range, such as a float32 row holding 1e30, is divided by its largest |x| first, which
  changes nothing else (the normalised row is the same), so it normalises like any other.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import as_float
from .fastpath import dispatched
from .node import Function
from .xp import ARRAYS, of, value

F32 = np.dtype(np.float32)


def working(dtype):
    """The dtype a row op computes in: float32 for float16 (rounded back once), else dtype."""
    return F32 if dtype == np.float16 else dtype


def safe_max(x, axis):
    """Row max, with rows that are entirely -inf (fully masked) given 0, so x - max is no NaN
    there. A row holding +inf keeps its max, so it turns to NaN as in PyTorch."""
    m = np.maximum.reduce(x, axis=axis, keepdims=True)
    return np.where(m == -np.inf, 0, m).astype(x.dtype, copy=False)


@dispatched
def softmax_rows(x, out, axis):
    """out <- softmax(x) along axis (out may be x itself); a fully -inf row gives zeros (its
    max taken as 0, its empty sum as 1)."""
    if x.dtype == np.float16:
        out[...] = softmax_rows(x.astype(F32), np.empty(x.shape, F32), axis)
        return out
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
        if s.dtype == np.float16:            # in float32; the walk rounds dx once
            s, g = xp.astype(s, F32), xp.astype(g, F32)
        return s * (g - xp.sum(g * s, self.dim, True))


def normalize(xp, x, dims, eps):
    """(xhat, rstd): (x - mean) * rstd and rstd = 1 / sqrt(var + eps) over dims. Rows whose
    statistics overflow are divided by their largest |x|, s, first (the same xhat; rstd then
    carries 1/s): s is a constant, and since xhat does not depend on it, the derivative taken
    with s held constant is the exact one."""
    if value(x).size == 0:                     # nothing to normalise: empty in, empty out
        return x * 0, x * 0
    xc = x - xp.mean(x, dims, True)
    with np.errstate(over="ignore"):           # an overflow is found and handled below
        var = xp.mean(xc * xc, dims, True)
    if np.isfinite(value(var)).all():
        rstd = 1 / xp.sqrt(var + eps)
        return xc * rstd, rstd
    s = _overflow_scale(value(x), value(var), dims)
    xc = x / s - xp.mean(x / s, dims, True)
    r = 1 / xp.sqrt(xp.mean(xc * xc, dims, True) + eps / s / s)
    return xc * r, r / s


def _overflow_scale(x, var, dims):
    """1 for each row of x, except a finite row whose variance came out inf or NaN: its largest
    |x| (then no square or sum of the scaled row can overflow)."""
    top = np.maximum.reduce(np.abs(x), axis=dims, keepdims=True)
    fix = ~np.isfinite(var) & np.isfinite(top) & (top > 0)
    return np.where(fix, top, 1).astype(x.dtype)


@dispatched
def layer_norm_rows(x2, w, b, eps):
    """LayerNorm of each row of x2 (rows, n), times w and plus b ((n,) or None). float16 rows
    are computed in float32 and float32 rows in float64, each rounded once at the end: a row
    of nearly equal values (x - mean tiny against x) keeps its digits, and the compiled loop,
    which sums in float64, gives the same answer to a few ulp."""
    if x2.dtype in (np.float16, F32):
        wide = F32 if x2.dtype == np.float16 else np.float64
        up = None if w is None else w.astype(wide), None if b is None else b.astype(wide)
        return layer_norm_rows.reference(x2.astype(wide), *up, eps).astype(x2.dtype)
    y = normalize(ARRAYS, x2, 1, eps)[0]
    if w is not None:
        y *= w
    if b is not None:
        y += b
    return y


class LayerNorm(Function):
    """y = (x - mean)/sqrt(var + eps) * w + b over the last len(normalized_shape) dims.

    Biased variance, eps inside the square root (as torch.nn.LayerNorm). With xhat the
    normalised input and gh = g*w: dx = rstd * (gh - mean(gh) - xhat * mean(gh*xhat)).
    Composite twin (the same math op by op): tinygradx's `F.layer_norm_composite`.
    """
    fresh_grads = True          # dx, dw are new arrays (db is g itself: the walk copes)
    op_name = "layer_norm"

    def forward(self, x, *wb, n_axes=1, eps=1e-5, affine=(False, False)):
        # work on a (rows, n) view: every statistic is then along axis 1
        self.x, self.wb = x, wb             # what the formula reads (kept, not copied)
        self.shape, self.wshape = x.shape, x.shape[x.ndim - n_axes:]
        n = math.prod(self.wshape)
        w = wb[0].reshape(n) if affine[0] else None
        b = wb[-1].reshape(n) if affine[1] else None
        self.affine, self.eps = affine, eps
        rows = math.prod(x.shape[:x.ndim - n_axes])
        return layer_norm_rows(x.reshape(rows, n), w, b, eps).reshape(x.shape)

    def backward(self, g):
        xp, x = of(g), self.x
        if value(x).size == 0:              # an empty input: empty gradients (no statistics)
            return (g * 0,) + tuple(xp.zeros_like(p) for p in self.wb)
        w = self.wb[0] if self.affine[0] else None
        if x.dtype == np.float16:           # in float32; the walk rounds each gradient once
            x, g = xp.astype(x, F32), xp.astype(g, F32)
            w = None if w is None else xp.astype(w, F32)
        dims = tuple(range(x.ndim - len(self.wshape), x.ndim))
        xhat, rstd = normalize(xp, x, dims, self.eps)   # recomputed: both depend on x
        gh = g * w if w is not None else g
        dx = rstd * (gh - xp.mean(gh, dims, True) - xhat * xp.mean(gh * xhat, dims, True))
        # dw, db in the shape of x: the walk sums the leading dims away
        dw, db = (g * xhat,) if self.affine[0] else (), (g,) if self.affine[1] else ()
        return (dx, *dw, *db)
