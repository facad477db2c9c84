"""Reductions: sum, mean, max/min, var, logsumexp. One Function each, forward and backward side
by side (as in elementwise.py); each backward runs on arrays and, under create_graph, on Tensors."""
from __future__ import annotations

import math

import numpy as np

from .node import Function, OpError
from .dims import normalize_dims
from .elementwise import as_float
from .xp import of, value


def _expand_back(xp, g, axes, keepdim):
    """Re-insert the reduced axes (size 1) so g broadcasts against the input."""
    if keepdim or not axes:
        return g
    return xp.expand_dims(g, axes)


class Sum(Function):
    """d(sum x) = g broadcast over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        self.shape, self.axes, self.keepdim = x.shape, normalize_dims(dim, x.ndim), keepdim
        # bools and integers sum in int64, as torch's (numpy sums the unsigned ones in uint64;
        # torch's uint64 sum wraps into int64 as this cast does)
        wide = np.int64 if x.dtype.kind in "biu" else None
        return np.sum(x, axis=self.axes, keepdims=keepdim, dtype=wide)

    def backward(self, g):
        xp = of(g)
        return xp.broadcast_to(_expand_back(xp, g, self.axes, self.keepdim), self.shape)


class Mean(Function):
    """d(mean x) = g/N broadcast over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        self.shape, self.axes, self.keepdim = x.shape, normalize_dims(dim, x.ndim), keepdim
        self.n = max(1, n := math.prod(x.shape[a] for a in self.axes))
        with np.errstate(invalid="ignore"):    # n = 0: the mean of nothing is NaN, as torch's
            return np.sum(x, axis=self.axes, keepdims=keepdim) / n

    def backward(self, g):
        xp = of(g)
        return xp.broadcast_to(_expand_back(xp, g, self.axes, self.keepdim) * (1.0 / self.n),
                               self.shape)


class Max(Function):
    """d(max x) = g split evenly among the positions that attain the max."""
    def forward(self, x, dim=None, keepdim=False, minimum=False):
        self.x, self.axes, self.keepdim = x, normalize_dims(dim, x.ndim), keepdim
        if x.size == 0 and (not self.axes or any(x.shape[a] == 0 for a in self.axes)):
            # as torch: fine over non-empty dims ((0, 3) over dim 1 -> (0,)), not over an
            # empty one (a max of nothing has no value)
            raise OpError(f"cannot reduce over a dim of size 0 (shape {x.shape}, dim {dim}): "
                          f"max/min of no elements has no value")
        red = np.min if minimum else np.max
        self.out = red(x, axis=self.axes, keepdims=True)
        return self.out if keepdim else np.squeeze(self.out, axis=self.axes)

    def backward(self, g):
        xp = of(g)
        hit = value(self.x) == value(self.out)       # which positions attain it: a constant
        count = hit.sum(axis=self.axes, keepdims=True)
        g = _expand_back(xp, g, self.axes, self.keepdim)
        return hit * xp.astype(g / count, g.dtype)


class Var(Function):
    """d(var x) = g * 2(x - mean)/(N - correction).

    As torch: the forward divides by max(N - correction, 0) (N - correction <= 0 gives inf
    or nan), the backward by N - correction itself (0 gives inf/nan gradients, below 0 a
    finite one), never a ZeroDivisionError.
    """
    def forward(self, x, dim=None, correction=1, keepdim=False):
        self.axes, self.keepdim = normalize_dims(dim, x.ndim), keepdim
        n = math.prod(x.shape[a] for a in self.axes)
        self.x, self.denom = x, n - correction
        with np.errstate(divide="ignore", invalid="ignore"):    # n = 0: NaN, no warning
            xc = x - np.sum(x, axis=self.axes, keepdims=True) / n
            return np.sum(xc * xc, axis=self.axes, keepdims=keepdim) / max(self.denom, 0)

    def backward(self, g):
        xp, x = of(g), self.x
        g = _expand_back(xp, g, self.axes, self.keepdim)
        scale = 2.0 / self.denom if self.denom else math.inf
        with np.errstate(invalid="ignore"):
            return g * scale * (x - xp.mean(x, self.axes, True))


class LogSumExp(Function):
    """d(logsumexp x) = g * softmax(x) over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        x = as_float(x)
        self.x, self.axes, self.keepdim = x, normalize_dims(dim, x.ndim), keepdim
        # initial=-inf: a reduction over a size-0 dim gives log(0) = -inf, as torch
        m = np.max(x, axis=self.axes, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            out = m + np.log(np.sum(np.exp(x - m), axis=self.axes, keepdims=True))
        self.out = out if keepdim else np.squeeze(out, axis=self.axes)
        return self.out

    def backward(self, g):
        xp = of(g)
        g = _expand_back(xp, g, self.axes, self.keepdim)
        out = _expand_back(xp, self.out, self.axes, self.keepdim)
        with np.errstate(invalid="ignore"):
            return g * xp.exp(self.x - out)

