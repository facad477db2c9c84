"""torch's scatter family beyond scatter/scatter_add (`ScatterMethods`, a mixin Tensor
inherits): scatter_reduce and scatter(reduce=), the index_* ops along one dim (index_add,
index_copy, index_reduce), masked_scatter, take, take_along_dim, put and index_put, each with
its in-place twin where torch has one.

scatter_reduce is one Function (ops/scatter_reduce.py); the others are compositions: an
index_* op is a scatter whose index repeats the 1-d index along every other dim, put and take
work on the flattened tensor, masked_scatter writes source's first elements where the mask
holds, index_put is a setitem (or, accumulating, an add of getitem's adjoint).
"""
from __future__ import annotations

import numpy as np

from ..autograd import OpError
from ..core.dims import check_dim
from ..core.movement import IndexPut
from ..core.tensor_base import TensorBase
from ..ops import index as ops_index, movement
from ..ops.scatter_reduce import REDUCTIONS, ScatterReduce, ScatterReduceNoGrad
from ..ops.dtypes import refuse_unsigned


def _ints(name, index, ndim=None):
    """An integer index as an int64 array (torch takes int64 and, for some ops, int32)."""
    data = index._data if isinstance(index, TensorBase) else np.asarray(index)
    if data.dtype not in (np.int64, np.int32):
        raise TypeError(f"{name}: index must be an int64 or int32 tensor, got {data.dtype}")
    if ndim is not None and data.ndim > ndim:
        raise OpError(f"{name}: index must be {ndim}-d or 0-d, got shape {data.shape}")
    return data.astype(np.int64, copy=False)


def _source(name, self, source):
    if not isinstance(source, TensorBase):
        raise TypeError(f"{name}: source must be a Tensor, got {type(source).__name__}")
    if source.dtype != self.dtype:
        raise TypeError(f"{name}: source has dtype {source.dtype}, self {self.dtype}; they "
                        f"must match (as torch: convert one)")
    return source


def _along(name, self, dim, index, source):
    """(dim, the full index) of an index_* op: index[i] names the slice of self along dim
    that source's i-th slice goes to, repeated over source's other dims."""
    d = check_dim(name, dim, max(self.ndim, 1))
    idx = _ints(name, index, 1).reshape(-1)
    if self.ndim == 0 and (source.ndim or idx.size != 1):
        raise OpError(f"{name}: a 0-d self takes a 0-d source and one index (as torch), got "
                      f"source of shape {tuple(source.shape)} and {idx.size} indices")
    n = self.shape[d] if self.ndim else 1
    src_shape = tuple(source.shape) if source.ndim else (1,)
    shape = tuple(self.shape) if self.ndim else (1,)
    if len(src_shape) != len(shape) or src_shape[d] != len(idx) or any(
            s != t for i, (s, t) in enumerate(zip(src_shape, shape, strict=True)) if i != d):
        raise OpError(f"{name}: source of shape {tuple(source.shape)} does not fit self "
                      f"{tuple(self.shape)} with {len(idx)} indices along dim {d} (it must "
                      f"match self except along dim, where it has one slice per index)")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.min() if idx.min() < 0 else idx.max())
        raise IndexError(f"{name}: index {bad} is out of bounds for dim {d} with size {n} "
                         f"(0..{n - 1}; negative indices are refused, as in torch)")
    full = np.broadcast_to(idx.reshape([-1 if i == d else 1 for i in range(len(shape))]),
                           src_shape).copy()
    return d, full


def _flat_index(name, self, index):
    idx = _ints(name, index)
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"{name}: out of range: tried to access index {bad} on a tensor of "
                         f"{n} elements")
    return idx % n if n else idx


class ScatterMethods:
    """scatter_reduce, index_add/copy/reduce, masked_scatter, take, put, index_put."""

    __slots__ = ()

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """self with src reduced in at index along dim: "sum", "prod", "mean", "amax" or
        "amin", self's own value included unless include_self=False (a gradient for each)."""
        d = check_dim("scatter_reduce", dim, self.ndim)
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)   # torch takes both too
        if reduce not in REDUCTIONS:
            raise ValueError(f"scatter_reduce: reduce argument must be one of "
                             f"{', '.join(REDUCTIONS)}, got {reduce!r}")
        _source("scatter_reduce", self, src)
        return ScatterReduce.apply(self, src, dim=d, index=_ints("scatter_reduce", index),
                                   reduce=reduce, include_self=bool(include_self))

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return self._inplace("scatter_reduce_", lambda t, s: t.scatter_reduce(
            dim, index, s, reduce, include_self=include_self), src)

    def _scatter_with_reduce(self, dim, index, src, reduce):
        """torch's scatter(..., reduce="add" | "multiply"): no derivative, as torch's."""
        if reduce not in ("add", "multiply"):
            raise ValueError(f"scatter: reduce argument must be either add or multiply, got "
                             f"{reduce!r}")
        d = check_dim("scatter", dim, self.ndim)
        idx = _ints("scatter", index)
        if not isinstance(src, TensorBase):
            src = self._op_class._from_op(np.full(idx.shape, src, self.dtype), None)
        _source("scatter", self, src)
        return ScatterReduceNoGrad.apply(self, src, dim=d, index=idx,
                                         reduce="sum" if reduce == "add" else "prod")

    # -- along one dim with a 1-d index ----------------------------------------------------
    def index_add(self, dim, index, source, *, alpha=1):
        """self with alpha * source's slices added at index along dim (repeats add up)."""
        source = _source("index_add", self, source)
        d, full = _along("index_add", self, dim, index, source)
        src = source if alpha == 1 else source * alpha
        return self._along_dim(lambda x, s: ops_index.Scatter.apply(x, s, dim=d, index=full,
                                                                    add=True), src)

    def index_copy(self, dim, index, source):
        """self with source's slices written at index along dim."""
        source = _source("index_copy", self, source)
        d, full = _along("index_copy", self, dim, index, source)
        return self._along_dim(lambda x, s: ops_index.Scatter.apply(x, s, dim=d, index=full),
                               source)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        """self with source's slices reduced in at index along dim ("prod", "mean", "amax",
        "amin", as torch: no "sum", index_add is that)."""
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise ValueError(f"index_reduce(): expected reduce to be one of prod, mean, amax or "
                             f"amin but got {reduce!r}")
        source = _source("index_reduce", self, source)
        d, full = _along("index_reduce", self, dim, index, source)
        return self._along_dim(lambda x, s: ScatterReduce.apply(
            x, s, dim=d, index=full, reduce=reduce, include_self=bool(include_self)), source)

    def _along_dim(self, op, source):
        """op on self and source, a 0-d self taken as 1-d (as torch's index ops)."""
        source = source if source.ndim else source.reshape(1)
        if self.ndim:
            return op(self, source)
        # a copy first: the op may save its input, and an in-place caller writes into self
        return op(self.clone().reshape(1), source).reshape(())

    def index_add_(self, dim, index, source, *, alpha=1):
        return self._inplace("index_add_", lambda t, s: t.index_add(dim, index, s, alpha=alpha),
                             source)

    def index_copy_(self, dim, index, source):
        return self._inplace("index_copy_", lambda t, s: t.index_copy(dim, index, s), source)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        return self._inplace("index_reduce_", lambda t, s: t.index_reduce(
            dim, index, s, reduce, include_self=include_self), source)

    # -- masks and flat positions ----------------------------------------------------------
    def masked_scatter(self, mask, source):
        """self with source's first elements, in order, where mask (broadcast to self) is
        True."""
        m = mask._data if isinstance(mask, TensorBase) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_scatter: mask must be a bool tensor, got {m.dtype}")
        source = _source("masked_scatter", self, source)
        try:
            m = np.broadcast_to(m, self.shape)
        except ValueError:
            raise OpError(f"masked_scatter: mask of shape {m.shape} does not broadcast to self "
                          f"{tuple(self.shape)}") from None
        where = np.flatnonzero(m)
        if where.size > source.numel():
            raise OpError(f"masked_scatter: the mask has {where.size} True elements, source "
                          f"only {source.numel()}")
        vals = source.reshape(-1)[:where.size]
        out = ops_index.Scatter.apply(self.reshape(-1), vals, dim=0, index=where)
        return out.reshape(tuple(self.shape))

    def masked_scatter_(self, mask, source):
        return self._inplace("masked_scatter_", lambda t, s: t.masked_scatter(mask, s), source)

    def take(self, index):
        """self's elements at index into the flattened self, in index's shape."""
        refuse_unsigned("take", self)
        return self.reshape(-1)[_flat_index("take", self, index)]

    def take_along_dim(self, indices, dim=None):
        """gather with broadcasting: self and indices broadcast except along dim; dim=None
        takes from the flattened self."""
        idx = _ints("take_along_dim", indices)
        if dim is None:
            return self.reshape(-1).gather(0, self._op_class._from_op(idx.reshape(-1), None))
        d = check_dim("take_along_dim", dim, self.ndim)
        if idx.ndim != self.ndim:
            raise OpError(f"take_along_dim: input and indices should have the same number of "
                          f"dims, got {self.ndim} and {idx.ndim}")
        lead = [max(a, b) for a, b in zip(self.shape, idx.shape, strict=True)]
        shape_x = tuple(s if i == d else lead[i] for i, s in enumerate(self.shape))
        shape_i = tuple(s if i == d else lead[i] for i, s in enumerate(idx.shape))
        x = self if tuple(self.shape) == shape_x else self.expand(*shape_x)
        idx = np.ascontiguousarray(np.broadcast_to(idx, shape_i))
        return x.gather(d, self._op_class._from_op(idx, None))

    def put(self, index, source, accumulate=False):
        """self (flattened) with source's elements written (added, with accumulate) at index."""
        source = _source("put", self, source)
        idx = _flat_index("put", self, index).reshape(-1)
        if source.numel() != idx.size:
            raise OpError(f"put: index has {idx.size} elements, source {source.numel()}")
        out = ops_index.Scatter.apply(self.reshape(-1), source.reshape(-1), dim=0, index=idx,
                                      add=bool(accumulate))
        return out.reshape(tuple(self.shape))

    def put_(self, index, source, accumulate=False):
        return self._inplace("put_", lambda t, s: t.put(index, s, accumulate), source)

    def index_put(self, indices, values, accumulate=False):
        """self with values at self[indices] (a tuple of index tensors); accumulate adds,
        repeated positions included."""
        refuse_unsigned("index_put", self)
        if not isinstance(indices, (tuple, list)):
            raise TypeError(f"index_put: indices must be a tuple of tensors, got "
                            f"{type(indices).__name__}")
        key = tuple(i._data if isinstance(i, TensorBase) else i for i in indices)
        if not isinstance(values, TensorBase):
            values = self._op_class._from_op(np.asarray(values, self.dtype), None)
        if not accumulate:
            return movement.Setitem.apply(self, values, index=key)
        target = self[key]
        v = values if values.shape == target.shape else values.expand(*target.shape)
        return self + IndexPut.apply(v.to(self.dtype), index=key, shape=tuple(self.shape))

    def index_put_(self, indices, values, accumulate=False):
        return self._inplace("index_put_", lambda t, v: t.index_put(indices, v, accumulate),
                             values)


# -- torch's function forms (input first) ----------------------------------------------------

def _input(name, input):
    if not isinstance(input, TensorBase):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    return input


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """tgx.scatter_reduce(input, ...) = input.scatter_reduce(...)"""
    return _input("scatter_reduce", input).scatter_reduce(dim, index, src, reduce,
                                                          include_self=include_self)


def index_add(input, dim, index, source, *, alpha=1):
    """tgx.index_add(input, ...) = input.index_add(...)"""
    return _input("index_add", input).index_add(dim, index, source, alpha=alpha)


def index_copy(input, dim, index, source):
    """tgx.index_copy(input, ...) = input.index_copy(...)"""
    return _input("index_copy", input).index_copy(dim, index, source)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """tgx.index_reduce(input, ...) = input.index_reduce(...)"""
    return _input("index_reduce", input).index_reduce(dim, index, source, reduce,
                                                      include_self=include_self)


def index_fill(input, dim, index, value):
    """tgx.index_fill(input, ...) = input.index_fill(...)"""
    return _input("index_fill", input).index_fill(dim, index, value)


def masked_scatter(input, mask, source):
    """tgx.masked_scatter(input, mask, source) = input.masked_scatter(mask, source)"""
    return _input("masked_scatter", input).masked_scatter(mask, source)


def take(input, index):
    """tgx.take(input, index) = input.take(index)"""
    return _input("take", input).take(index)


def take_along_dim(input, indices, dim=None):
    """tgx.take_along_dim(input, indices, dim) = input.take_along_dim(indices, dim)"""
    return _input("take_along_dim", input).take_along_dim(indices, dim)


def put(input, index, source, accumulate=False):
    """tgx.put(input, index, source) = input.put(index, source)"""
    return _input("put", input).put(index, source, accumulate)


def index_put(input, indices, values, accumulate=False):
    """tgx.index_put(input, indices, values) = input.index_put(indices, values)"""
    return _input("index_put", input).index_put(indices, values, accumulate)
