"""The primitives that move or overwrite elements without computing new values: reshape,
permute, expand, indexing, cat/stack, triu/tril, and the out-of-place halves of fill_, copy_
and x[index] = v (see Tensor._inplace). Forward and backward side by side, on numpy arrays, as
in ops.py.

Every backward here is linear in g and reads no value of an input: the same movement applied
to g (`xp.run(Op, g)`: the op's forward on arrays, the recorded op on Tensors). Getitem's
adjoint (zeros with g put at the index) is an op of its own, `IndexPut`, whose backward is
Getitem again; the walk's slice buffer (`autograd.Slice`, getitem's fast backward) belongs to
the array walk only.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from ..autograd import Function, OpError, fmt_shapes
from .xp import of
from .dims import check_dim


# ------------------------------------------------------------------------------------------
# movement
# ------------------------------------------------------------------------------------------

class Reshape(Function):
    """d(reshape x) = reshape(g, x.shape)"""
    def forward(self, x, shape):
        self.shape = x.shape
        return x.reshape(shape)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        x = arrays[0]
        return (f"cannot reshape {x.shape} ({x.size} elements) into {tuple(kwargs['shape'])}")

    def backward(self, g):
        return g.reshape(self.shape)


class Permute(Function):
    """d(permute x) = permute(g, inverse order)"""
    def forward(self, x, dims):
        n = x.ndim
        given, dims = dims, tuple(d if type(d) is int and 0 <= d < n else check_dim(None, d, n)
                                  for d in dims)
        if len(dims) != n or sorted(dims) != list(range(n)):
            raise OpError(f"dims {tuple(given)} is not a permutation of the {x.ndim} dims of "
                          f"a tensor of shape {x.shape}")
        self.dims = dims
        inverse = [0] * len(dims)
        for i, d in enumerate(dims):
            inverse[d] = i
        self.inverse = tuple(inverse)
        return x.transpose(dims)

    def backward(self, g):
        return of(g).transpose(g, self.inverse)


class Expand(Function):
    """d(broadcast_to x) = g; the engine's unbroadcast sums it back."""
    def forward(self, x, shape):
        lead = len(shape) - x.ndim                 # new leading dims may not be -1
        if lead < 0 or -1 in shape[:lead]:
            raise OpError(f"cannot expand shape {x.shape} to {tuple(shape)}: "
                          + ("the target has fewer dims" if lead < 0 else
                             "-1 is only allowed for an existing dim"))
        shape = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
        return np.broadcast_to(x, shape)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"cannot expand shape {arrays[0].shape} to {tuple(kwargs['shape'])}"

    def backward(self, g):
        return g


def _is_advanced(index):
    return any(isinstance(i, (np.ndarray, list)) for i in index)


class Getitem(Function):
    """Basic indexing scatters g into zeros; integer-array gathers scatter-add (repeats sum)."""
    op_name = "getitem"

    def forward(self, x, index):
        self.shape, self.dtype, self.index = x.shape, x.dtype, index
        return _take(x, index)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"index {kwargs['index']!r} is invalid for a tensor of shape "
                f"{arrays[0].shape}: {err}")

    def backward(self, g):
        return of(g).run(IndexPut, g, index=self.index, shape=self.shape)


@autograd.fast_backward(Getitem)
def _getitem_backward(ctx, g):
    """Basic indexing: the gradient is g inside the slice; the walk adds it into one buffer
    that the slices of a split share (autograd.Slice)."""
    return None if _is_advanced(ctx.index) else autograd.Slice(ctx.index, g)


def _take(x, index):
    out = x[index]
    if not isinstance(out, np.ndarray) and Ellipsis not in index:
        out = x[index + (Ellipsis,)]     # all ints: a 0-d view, not a copy (x[0].zero_())
    return out


def _put(g, index, shape):
    """Zeros of `shape` with g at index; repeated advanced indices add up."""
    out = np.zeros(shape, dtype=g.dtype)
    if _is_advanced(index):
        np.add.at(out, index, g)
    else:
        out[index] = g
    return out


class IndexPut(Function):
    """Getitem's adjoint as an op: zeros of `shape` with g added at index (repeated advanced
    indices accumulate, as torch's index_put with accumulate=True); d = g[index].

    The graph walk records it as the gradient of x[index], so that gradient can be
    differentiated again (its backward is a Getitem).
    """
    op_name = "index_put"

    def forward(self, g, index, shape):
        self.index = index
        return _put(g, index, shape)

    def backward(self, g):
        return of(g).run(Getitem, g, index=self.index)


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

