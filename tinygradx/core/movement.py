"""The ops that move elements without computing new values: reshape, permute, expand, and
indexing with its adjoint. Forward and backward side by side, on numpy arrays, as in
elementwise.py.

Every backward here is linear in g and reads no value of an input: the same movement applied
to g (`xp.run(Op, g)`: the op's forward on arrays, the recorded op on Tensors). Getitem's
adjoint (zeros with g put at the index) is an op of its own, `IndexPut`, whose backward is
Getitem again. (The speed layer's walk adds the slices of a split into one buffer instead:
ops/versions.py.)
"""
from __future__ import annotations

import numpy as np

from .dims import check_dim
from .node import Function, OpError
from .xp import of


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


def is_advanced(index):
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


def _take(x, index):
    out = x[index]
    if not isinstance(out, np.ndarray) and Ellipsis not in index:
        out = x[index + (Ellipsis,)]     # all ints: a 0-d view, not a copy (x[0].zero_())
    return out


def _put(g, index, shape):
    """Zeros of `shape` with g at index; repeated advanced indices add up."""
    out = np.zeros(shape, dtype=g.dtype)
    if is_advanced(index):
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
