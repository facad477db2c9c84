"""The primitives that move or overwrite elements without computing new values beyond the
core's (reshape, permute, expand, getitem and its adjoint index_put, in
`tinygradx/core/movement.py`, re-exported here): cat/stack, triu/tril, and the out-of-place
halves of fill_, copy_ and x[index] = v (see Tensor._inplace). Forward and backward side by
side, on numpy arrays, as in the core's.

Every backward here is linear in g and reads no value of an input: the same movement applied
to g (`xp.run(Op, g)`: the op's forward on arrays, the recorded op on Tensors).
"""
from __future__ import annotations

import numpy as np

from ..core.movement import Expand, Getitem, IndexPut, Permute, Reshape  # noqa: F401
from ..core.node import Function, OpError, fmt_shapes
from ..core.xp import of


class Cat(Function):
    """d(cat xs) = the slices of g that each input filled."""
    def forward(self, *xs, dim=0):
        self.dim = dim
        self.sizes = [x.shape[dim] for x in xs]
        return np.concatenate(xs, axis=dim)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"inputs of shapes {fmt_shapes(arrays)} must match in every dim except dim "
                f"{kwargs.get('dim', 0)}: {err}")

    def backward(self, g):
        bounds = np.cumsum(self.sizes)[:-1]
        return tuple(of(g).split(g, bounds, axis=self.dim))


class Stack(Function):
    """d(stack xs) = g taken apart along the new dim."""
    def forward(self, *xs, dim=0):
        self.dim = dim
        return np.stack(xs, axis=dim)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"inputs must all have the same shape, got {fmt_shapes(arrays)}"

    def backward(self, g):
        return of(g).unstack(g, self.dim)


class Tri(Function):
    """triu/tril keep a triangle; g passes only through the kept entries."""
    def forward(self, x, diagonal=0, upper=True):
        if x.ndim < 2:
            raise OpError(f"needs a tensor with at least 2 dims, got shape {x.shape}")
        self.diagonal, self.upper = diagonal, upper
        return np.triu(x, diagonal) if upper else np.tril(x, diagonal)

    def backward(self, g):
        return of(g).run(Tri, g, diagonal=self.diagonal, upper=self.upper)


# ------------------------------------------------------------------------------------------
# overwrites (the out-of-place halves of fill_, copy_ and x[index] = v; see Tensor._inplace)
# ------------------------------------------------------------------------------------------

class Fill(Function):
    """Every element becomes value (broadcast, cast to x's dtype): dx = 0, dvalue = sum g."""
    op_name = "fill"

    def forward(self, x, value):
        out = np.empty_like(x)
        out[...] = value
        return out

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"cannot write a value of shape {arrays[1].shape} into shape {arrays[0].shape}"

    def backward(self, g):
        return (of(g).zeros_like(g) if self.needs_input_grad[0] else None), g


class Copy(Fill):
    """copy_: x's elements become src's: dx = 0, dsrc = g (summed over broadcast dims)."""
    op_name = "copy"


class Setitem(Function):
    """x[index] = v out of place: v gets g[index], x gets g with zeros at index."""
    op_name = "setitem"

    def forward(self, x, v, index):
        self.index = index
        out = x.copy()
        out[index] = v
        return out

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"cannot assign a value of shape {arrays[1].shape} to index {kwargs['index']!r} "
                f"of a tensor of shape {arrays[0].shape}: {err}")

    def backward(self, g):
        xp, (need_x, need_v) = of(g), self.needs_input_grad
        return (xp.run(Setitem, g, 0, index=self.index) if need_x else None,
                xp.run(Getitem, g, index=self.index) if need_v else None)


class Contiguous(Function):
    """A C-ordered copy of x (Tensor.contiguous of a transposed or strided tensor): dx = g."""
    def forward(self, x):
        return np.ascontiguousarray(x)

    def backward(self, g):
        return g

