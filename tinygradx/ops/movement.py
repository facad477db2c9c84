"""The primitives that move or overwrite elements without computing new values: reshape,
permute, expand, indexing, cat/stack, triu/tril, and the out-of-place halves of fill_, copy_
and x[index] = v (see Tensor._inplace). Forward and backward side by side, on numpy arrays, as
in ops.py.

Every backward here is linear in g and reads no value of an input, so each `backward_graph`
is the same movement applied to g as a recorded op. Getitem's adjoint (zeros with g put at the
index) is an op of its own, `IndexPut`, whose backward is Getitem again; the walk's
`backward_slice` shortcut belongs to the array walk only.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, OpError, fmt_shapes
from .dims import check_dim


# ------------------------------------------------------------------------------------------
# movement
# ------------------------------------------------------------------------------------------

class Reshape(Function):
    """d(reshape x) = reshape(g, x.shape)"""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x, shape):
        self.shape = x.shape
        return x.reshape(shape)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        x = arrays[0]
        return (f"cannot reshape {x.shape} ({x.size} elements) into {tuple(kwargs['shape'])}")

    def backward(self, g):
        return g.reshape(self.shape)

    def backward_graph(self, g, x):
        return g.reshape(x.shape)


class Permute(Function):
    """d(permute x) = permute(g, inverse order)"""
    graph_reads_inputs = False     # its backward_graph reads no input values
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
        return g.transpose(self.inverse)

    def backward_graph(self, g, x):
        return Permute.apply(g, dims=self.inverse)


class Expand(Function):
    """d(broadcast_to x) = g; the engine's unbroadcast sums it back."""
    graph_reads_inputs = False     # its backward_graph reads no input values
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

    def backward_graph(self, g, x):
        return g


def _is_advanced(index):
    return any(isinstance(i, (np.ndarray, list)) for i in index)


class Getitem(Function):
    """Basic indexing scatters g into zeros; integer-array gathers scatter-add (repeats sum)."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "getitem"

    def forward(self, x, index):
        self.shape, self.dtype, self.index = x.shape, x.dtype, index
        return _take(x, index)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"index {kwargs['index']!r} is invalid for a tensor of shape "
                f"{arrays[0].shape}: {err}")

    def backward_slice(self, g):
        # basic indexing: the gradient is g inside the slice (the walk adds it into one buffer)
        return None if _is_advanced(self.index) else (self.index, g)

    def backward(self, g):
        return _put(g, self.index, self.shape)

    def backward_graph(self, g, x):
        return IndexPut.apply(g, index=self.index, shape=x.shape)


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
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "index_put"

    def forward(self, g, index, shape):
        self.index = index
        return _put(g, index, shape)

    def backward(self, g):
        return _take(g, self.index)

    def backward_graph(self, g, x):
        return Getitem.apply(g, index=self.index)


class Cat(Function):
    """d(cat xs) = the slices of g that each input filled."""
    graph_reads_inputs = False     # its backward_graph reads no input values
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
        return tuple(np.split(g, bounds, axis=self.dim))

    def backward_graph(self, g, *xs):
        pieces, start, lead = [], 0, (slice(None),) * (self.dim % g.ndim)
        for size in self.sizes:
            pieces.append(Getitem.apply(g, index=lead + (slice(start, start + size),)))
            start += size
        return tuple(pieces)


class Stack(Function):
    """d(stack xs) = g taken apart along the new dim."""
    def forward(self, *xs, dim=0):
        self.dim = dim
        return np.stack(xs, axis=dim)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"inputs must all have the same shape, got {fmt_shapes(arrays)}"

    def backward(self, g):
        return tuple(np.moveaxis(g, self.dim, 0))

    def backward_graph(self, g, *xs):
        lead = (slice(None),) * (self.dim % g.ndim)
        return tuple(Getitem.apply(g, index=lead + (i,)) for i in range(len(xs)))


class Tri(Function):
    """triu/tril keep a triangle; g passes only through the kept entries."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x, diagonal=0, upper=True):
        if x.ndim < 2:
            raise OpError(f"needs a tensor with at least 2 dims, got shape {x.shape}")
        self.diagonal, self.upper = diagonal, upper
        return np.triu(x, diagonal) if upper else np.tril(x, diagonal)

    def backward(self, g):
        return np.triu(g, self.diagonal) if self.upper else np.tril(g, self.diagonal)

    def backward_graph(self, g, x):
        return Tri.apply(g, diagonal=self.diagonal, upper=self.upper)


# ------------------------------------------------------------------------------------------
# overwrites (the out-of-place halves of fill_, copy_ and x[index] = v; see Tensor._inplace)
# ------------------------------------------------------------------------------------------

class Fill(Function):
    """Every element becomes value (broadcast, cast to x's dtype): dx = 0, dvalue = sum g."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "fill"

    def forward(self, x, value):
        out = np.empty_like(x)
        out[...] = value
        return out

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"cannot write a value of shape {arrays[1].shape} into shape {arrays[0].shape}"

    def backward(self, g):
        return (np.zeros(g.shape, g.dtype) if self.needs_input_grad[0] else None), g

    def backward_graph(self, g, x, value):
        # dx: zeros that still depend on g (exact zeros even where g is inf, as backward)
        return (Fill.apply(g, 0) if self.needs_input_grad[0] else None), g


class Copy(Fill):
    """copy_: x's elements become src's: dx = 0, dsrc = g (summed over broadcast dims)."""
    op_name = "copy"


class Setitem(Function):
    """x[index] = v out of place: v gets g[index], x gets g with zeros at index."""
    graph_reads_inputs = False     # its backward_graph reads no input values
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
        gx = None
        if self.needs_input_grad[0]:
            gx = g.copy()
            gx[self.index] = 0
        gv = g[self.index] if self.needs_input_grad[1] else None
        return gx, gv

    def backward_graph(self, g, x, v):
        need_x, need_v = self.needs_input_grad
        return (Setitem.apply(g, 0, index=self.index) if need_x else None,
                Getitem.apply(g, index=self.index) if need_v else None)


class Contiguous(Function):
    """A C-ordered copy of x (Tensor.contiguous of a transposed or strided tensor): dx = g."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x):
        return np.ascontiguousarray(x)

    def backward(self, g):
        return g

    def backward_graph(self, g, x):
        return g
