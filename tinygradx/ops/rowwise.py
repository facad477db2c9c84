"""Row-wise numpy work the fused ops share: reductions along the last axis, the row max that
keeps fully masked rows finite, softmax and its backward (each with the compiled kernel of
kernels.py when it is on), and the masked softmax attention runs on its score buffer. The
softmax here is the core's softmax row loop made fast (registered with `fastpath.use_kernel`).
"""
from __future__ import annotations

import numpy as np

from ..core import fastpath
from ..core.rows import softmax_rows
from ..fast import kernels, pool


# The reductions below call the ufunc methods (np.maximum.reduce, np.add.reduce, ndarray.all)
# rather than np.max / np.sum / np.all: the same kernels and bits without numpy's Python-level
# wrappers, which cost several microseconds per call, as much as the work itself on the
# one-row inputs of token-by-token generation.

# Rows at most this long, in bulk (at least MANY_ROWS of them), are reduced column by column:
# numpy reduces a short last axis row by row at ~100-300 ns a row, so the softmax of
# attention over a dozen keys (an encoder of 1,000 short sentences) spent more time in
# max and sum than in its matmuls. 0 turns this off.
SHORT_ROW, MANY_ROWS = 32, 256


def short_rows(x, axis):
    n = x.shape[-1] if x.ndim else 0
    return (axis in (-1, x.ndim - 1) and 1 < n <= SHORT_ROW and x.size >= MANY_ROWS * n
            and x.flags.c_contiguous)


def row_max(x, axis):
    """np.maximum.reduce(x, axis, keepdims=True); the same values (a max has no rounding)."""
    if not short_rows(x, axis):
        return np.maximum.reduce(x, axis=axis, keepdims=True)
    m = x[..., :1].copy()
    for i in range(1, x.shape[-1]):
        np.maximum(m, x[..., i:i + 1], out=m)
    return m


def row_sum(x, axis):
    """np.add.reduce(x, axis, keepdims=True), bit for bit: for short contiguous rows numpy
    adds the first 8 in order, else 8 running sums (columns i, i+8, ...) combined as
    ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the last n % 8 in order; so do the columns."""
    if not short_rows(x, axis):
        return np.add.reduce(x, axis=axis, keepdims=True)
    n = x.shape[-1]
    if n < 8:
        total = x[..., :1].copy()
        for i in range(1, n):
            total += x[..., i:i + 1]
        return total
    r = [x[..., k:k + 1].copy() for k in range(8)]
    full = n - n % 8
    for i in range(8, full, 8):
        for k in range(8):
            r[k] += x[..., i + k:i + k + 1]
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for i in range(full, n):
        total += x[..., i:i + 1]
    return total


def safe_max(x, axis):
    """Row max with -inf rows (fully masked) replaced by 0, so x - max makes no NaN there.
    A row holding +inf keeps its max, so it turns to NaN as in PyTorch."""
    m = row_max(x, axis)
    masked = m == -np.inf
    if masked.any():
        m = np.where(masked, 0, m).astype(x.dtype, copy=False)
    return m


def softmax(x, out, axis=-1):
    """The core's softmax row loop made fast (core/rows.py asks it first, `fastpath.kernel`):
    out <- softmax(x) along axis by two compiled loops around np.exp, or for many short rows
    by numpy with the column-by-column reductions above; None otherwise (the core's numpy
    lines then run: the same values)."""
    if axis in (-1, x.ndim - 1) and x.ndim and x.shape[-1] and out.flags.c_contiguous:
        x2, out2 = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])   # rows (views)
        if x.size >= pool.MIN_SOFTMAX and x.flags.c_contiguous and pool.softmax(x2, out2):
            return out                               # one pass per row, both cores
        if kernels.ENABLED and x.dtype == out.dtype and kernels.softmax(x2, out2, out is x):
            return out
    if not short_rows(x, axis):
        return None
    np.subtract(x, safe_max(x, axis), out=out)
    np.exp(out, out=out)
    total = row_sum(out, axis)
    if not total.all():
        total[total == 0] = 1
    out /= total
    return out


fastpath.use_kernel("softmax", softmax)    # core.Softmax's forward row loop, made fast


def softmax_grad(g, s, out, axis=-1):
    """out <- s * (g - sum(g*s)) along axis (out may be g itself): softmax's backward."""
    if (axis in (-1, s.ndim - 1) and s.ndim and s.shape[-1] and g.shape == s.shape == out.shape
            and out.flags.c_contiguous):                 # (out's rows below: a view)
        n = s.shape[-1]
        g2, s2, out2 = g.reshape(-1, n), s.reshape(-1, n), out.reshape(-1, n)
        if (s.size >= pool.MIN_SOFTMAX and g.flags.c_contiguous and s.flags.c_contiguous
                and pool.softmax_grad(g2, s2, out2)):
            return out                                   # one pass per row, both cores
        if kernels.ENABLED and g.dtype == s.dtype and kernels.softmax_grad(g2, s2, out2,
                                                                          out is g):
            return out                                   # one compiled pass per row
    if axis in (-1, s.ndim - 1) and s.ndim <= 26:
        # sum_j g_j s_j as a row-wise dot: no (..., n) temporary for g*s
        sub = "abcdefghijklmnopqrstuvwxyz"[:s.ndim]
        row = np.einsum(f"{sub},{sub}->{sub[:-1]}", g, s)[..., None]
    else:
        row = (g * s).sum(axis=axis, keepdims=True)
    np.subtract(g, row, out=out)
    out *= s
    return out


def masked_softmax(s, mask):
    """s <- softmax(s + mask) over the last axis, in place."""
    if mask is not None:
        s += mask                                                # + M
    softmax_rows(s, s)                     # the core's, which asks `softmax` above first
