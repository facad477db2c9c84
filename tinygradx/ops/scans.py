"""The scans beyond cumsum and cumprod (index.py): logcumsumexp, one Function, and the indices
of cummax / cummin, whose values are a gather at those indices (so their gradient is the
gather's: g added at the position each running extreme came from, as torch's).

logcumsumexp's derivative, d y_i / d x_j = exp(x_j - y_i) for j <= i, summed against g, is
    dx_j = exp(x_j - y_j) * R_j,   R_j = g_j + exp(y_j - y_{j+1}) R_{j+1}
a reverse linear recurrence (index.py's Scan) whose coefficients exp(y_j - y_{j+1}) are at
most 1, since y only grows: no exp of a large number anywhere, where the textbook
exp(x_j) * (reverse cumsum of g exp(-y)) overflows for inputs of a few hundred.
"""
from __future__ import annotations

import numpy as np

from ..core.node import Function, OpError
from ..core.xp import of
from .index import Scan, Shift


def running_extreme_indices(x, dim, largest):
    """The index along dim of each running max (min) of x: the latest position whose value
    equals the running extreme there (ties go to the later one), a NaN's own position from
    the first NaN on (NaN propagates, as torch's cummax)."""
    acc = np.maximum if largest else np.minimum
    vals = acc.accumulate(x, axis=dim) if x.shape[dim] else x
    with np.errstate(invalid="ignore"):
        hit = x == vals
        if x.dtype.kind == "f":
            hit |= np.isnan(x)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    pos = np.arange(x.shape[dim], dtype=np.int64).reshape(shape)
    where = np.where(hit, pos, -1)
    return np.maximum.accumulate(where, axis=dim) if x.shape[dim] else where


class LogCumSumExp(Function):
    """y_i = log sum_{j<=i} exp(x_j) along dim: dx = exp(x - y) * R, R the reverse scan
    R_j = g_j + exp(y_j - y_{j+1}) R_{j+1} (see the module docstring)."""
    def forward(self, x, dim):
        if x.dtype.kind != "f":
            raise OpError(f"not implemented for {x.dtype} tensors (as torch); use a float "
                          f"tensor")
        self.x, self.dim = x, dim
        with np.errstate(invalid="ignore", over="ignore"):
            self.out = np.logaddexp.accumulate(x, axis=dim) if x.shape[dim] else x.copy()
        return self.out

    def backward(self, g):
        xp, x, y, d = of(g), self.x, self.out, self.dim
        if x.shape[d] == 0:
            return g
        last = np.zeros(x.shape, x.dtype)
        last[(slice(None),) * d + (-1,)] = 1        # y_{n} stands in for y_{n+1}: exp(0)
        y_next = xp.run(Shift, y, dim=d, by=-1) + y * last
        r = xp.run(Scan, g, xp.exp(y - y_next), dim=d, reverse=True, shifted=False)
        return xp.exp(x - y) * r
