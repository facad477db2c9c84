"""scatter_reduce: src's values reduced into x at the positions index names along dim ("sum",
"prod", "mean", "amax", "amin"; x's own value taken in or not: include_self), one Function with
its derivative written once, as torch's (index.py's scatter and gather are its pieces).

At a position p that src reaches, out_p reduces S_p = {x_p if include_self} + {src_k : the
index of k names p}; elsewhere out_p = x_p. The derivatives, per reduction:
    sum    dx = g (0 at reached positions without include_self), dsrc_k = g_p
    mean   the same divided by |S_p| (torch's count, x_p included when it is)
    amax   g_p shared evenly by the members of S_p equal to out_p (amin: the same)
    prod   dx_p = g_p * prod(src_k into p); dsrc_k = g_p * (the product of S_p without src_k):
           out_p / src_k where src_k != 0; where src_k is S_p's only zero, the product with that
           zero read as 1; 0 where S_p holds more zeros (no 0/0 anywhere; as torch's, that 0 is
           a constant, so the second derivative between two zeros of one group is 0 too)
Integer "mean" rounds down, as torch's.
"""
from __future__ import annotations

import numpy as np

from ..core.node import Function, OpError
from ..core.xp import of, value
from .index import Gather, Scatter, box_index, check_index, index_grid

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
          "amin": np.minimum}


def _identity(reduce, dtype):
    """The start of a reduction that does not take x in."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:                                  # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _reached(shape, grid):
    """A bool array of `shape`: True where the scatter writes."""
    hit = np.zeros(shape, bool)
    hit[grid] = True
    return hit


class ScatterReduce(Function):
    """out = x with src reduced in at index along dim (see the module docstring)."""
    op_name = "scatter_reduce"

    def forward(self, x, src, dim, index, reduce, include_self=True):
        if reduce not in REDUCTIONS:
            raise OpError(f"reduce must be one of {', '.join(REDUCTIONS)}, got {reduce!r}")
        if src.ndim != index.ndim:
            raise OpError(f"index ({index.ndim}-d) and src ({src.ndim}-d) must have the same "
                          f"number of dims")
        if src.dtype != x.dtype:
            raise OpError(f"expected src of the input's dtype {x.dtype}, got {src.dtype}")
        check_index("scatter_reduce", x.shape, index, dim, src.shape)
        self.dim, self.reduce, self.include_self = dim, reduce, include_self
        self.index, self.src_shape = index, src.shape
        self.grid = index_grid(index, dim)
        self.sub = tuple(slice(0, n) for n in index.shape)
        vals = src[self.sub]
        out = x.copy()
        self.hit = _reached(x.shape, self.grid)
        if not include_self:
            out[self.hit] = _identity(reduce, x.dtype)
        _UFUNC[reduce].at(out, self.grid, vals)
        if reduce == "mean":
            count = np.zeros(x.shape, np.int64)
            np.add.at(count, self.grid, 1)
            count += include_self
            self.count = np.maximum(count, 1)
            if x.dtype.kind == "f":
                out = out / self.count.astype(x.dtype)
            else:
                out = np.floor_divide(out, self.count).astype(x.dtype)
        self.x, self.src, self.out = x, src, out
        return out

    def backward(self, g):
        xp, (nx, ns) = of(g), self.needs_input_grad
        reduce = self.reduce
        kept = ~self.hit                    # x's own value survives there untouched
        if reduce in ("sum", "mean"):
            per = np.ones(self.hit.shape, g.dtype) if reduce == "sum" else \
                1 / self.count.astype(g.dtype)
            dx = g * (np.where(kept, 1, per) if self.include_self else kept) if nx else None
            return dx, (self._to_src(xp, g * per) if ns else None)
        if reduce in ("amax", "amin"):
            return self._extreme_grads(xp, g)
        return self._prod_grads(xp, g)

    def _to_src(self, xp, g):
        """g at each src element's target (src's shape; zero beyond index's box)."""
        return self._src_shaped(xp, xp.run(Gather, g, dim=self.dim, index=self.index))

    def _src_shaped(self, xp, picked):
        """picked (index's shape) in src's leading box, zeros beyond it."""
        if self.src_shape == self.index.shape:
            return picked
        return xp.run(Scatter, np.zeros(self.src_shape, picked.dtype), picked, dim=self.dim,
                      index=box_index(self.index.shape, self.dim))

    def _extreme_grads(self, xp, g):
        """g shared evenly by the members of S_p equal to out_p (torch's amax/amin rule)."""
        out, x, src = value(self.out), value(self.x), value(self.src)
        d, index = self.dim, self.index
        vals = src[self.sub]
        x_wins = (x == out) & (self.include_self | ~self.hit)
        src_wins = vals == out[self.grid]
        n = x_wins.astype(np.int64)
        np.add.at(n, self.grid, src_wins)
        share = g / np.maximum(n, 1).astype(g.dtype)
        nx, ns = self.needs_input_grad
        dx = share * x_wins if nx else None
        dsrc = self._src_shaped(xp, xp.run(Gather, share, dim=d, index=index) * src_wins) \
            if ns else None
        return dx, dsrc

    def _prod_grads(self, xp, g):
        """The division-free product rule of the module docstring."""
        d, index, x, src = self.dim, self.index, self.x, self.src
        nx, ns = self.needs_input_grad
        dx = dsrc = None
        if nx:
            ones = np.ones(self.out.shape, g.dtype)      # x read as 1: the product of src at p
            others = xp.run(ScatterReduce, ones, src, dim=d, index=index, reduce="prod")
            dx = g * others if self.include_self else g * ~self.hit
        if ns:
            sv, xv = value(src), value(x)
            zero = sv[self.sub] == 0
            zeros = ((xv == 0) & self.hit).astype(np.int64) if self.include_self else \
                np.zeros(xv.shape, np.int64)
            np.add.at(zeros, self.grid, zero)
            # the product with src's zeros read as 1: what a single zero's gradient is
            one_for_zero = src.masked_fill(np.asarray(sv == 0), 1) if not isinstance(
                src, np.ndarray) else np.where(sv == 0, np.ones((), sv.dtype), sv)
            masked = xp.run(ScatterReduce, x, one_for_zero, dim=d, index=index, reduce="prod",
                            include_self=self.include_self)
            at = xp.run(Gather, g * self.out, dim=d, index=index)
            at_masked = xp.run(Gather, g * masked, dim=d, index=index)
            lone = zero & (zeros[self.grid] == 1)
            srcv = src[self.sub]
            safe = xp.where(zero, 1.0, srcv) if zero.any() else srcv
            dsrc = xp.where(zero, 0.0, at / safe) if zero.any() else at / safe
            if lone.any():
                dsrc = dsrc + at_masked * lone
            dsrc = self._src_shaped(xp, dsrc)
        return dx, dsrc


class ScatterReduceNoGrad(ScatterReduce):
    """torch's scatter(..., reduce="add" | "multiply"): the values of scatter_reduce's sum and
    prod with x included, and, as torch's, no derivative (a backward through it raises)."""
    op_name = "scatter"

    def backward(self, g):
        raise OpError("the derivative of scatter with reduce= is not implemented (as in "
                      "PyTorch); use scatter_reduce (sum or prod), which has one")
