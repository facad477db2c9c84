"""The methods of Tensor that scan, reorder, repeat and index along a dim: `IndexMethods`, a
mixin Tensor inherits (next to shape_methods.ShapeMethods). cumsum/cumprod/prod, flip, roll,
repeat, repeat_interleave, unflatten, diagonal, gather, scatter/scatter_add, masked_select,
sort/argsort/topk. Methods check arguments and call `ops_index.X.apply`; torch's names,
argument names and semantics.
"""
from __future__ import annotations

from collections import namedtuple

import math

import numpy as np

from ..ops import movement, index as ops_index, scans
from ..autograd import OpError
from ..core.tensor_base import TensorBase
from ..ops.dtypes import WIDE_UNSIGNED, refuse_unsigned
from ..core.dims import check_dim, normalize_dims
from ..autograd import rng as _rng

SortResult = namedtuple("SortResult", ["values", "indices"])
CumResult = namedtuple("CumResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])


def _sizes(args):
    """f(2, 3) and f((2, 3)) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _index_array(name, index):
    data = index._data if isinstance(index, TensorBase) else np.asarray(index)
    if data.dtype not in (np.int64, np.int32):      # torch's two index dtypes
        raise OpError(f"{name}: index must be an int64 or int32 tensor, got {data.dtype}")
    return data.astype(np.int64, copy=False)


class IndexMethods:
    """Scans, reordering, repetition and gather/scatter; mixed into Tensor."""

    __slots__ = ()

    # -- scans and products ---------------------------------------------------------------
    def cumsum(self, dim):
        return ops_index.CumSum.apply(self, dim=check_dim("cumsum", dim, self.ndim))

    def cumprod(self, dim):
        return ops_index.CumProd.apply(self, dim=check_dim("cumprod", dim, self.ndim))

    def cummax(self, dim):
        """(values, indices): the running maximum along dim and where each came from (the
        later position on ties; NaN propagates); gradients reach those positions."""
        return self._running("cummax", dim, True)

    def cummin(self, dim):
        """(values, indices): the running minimum along dim, as cummax."""
        return self._running("cummin", dim, False)

    def _running(self, name, dim, largest):
        refuse_unsigned(name, self)
        d = check_dim(name, dim, self.ndim)
        x = self.reshape(1) if self.ndim == 0 else self
        idx = scans.running_extreme_indices(x._data, d, largest)
        index = self._op_class._from_op(idx, None)
        values = x.gather(d, index)
        if self.ndim == 0:
            return CumResult(values.reshape(()), index.reshape(()))
        return CumResult(values, index)

    def logcumsumexp(self, dim):
        """log(cumsum(exp(x))) along dim without overflow (float tensors, as torch)."""
        d = check_dim("logcumsumexp", dim, self.ndim)
        if self.ndim == 0:
            return scans.LogCumSumExp.apply(self.reshape(1), dim=0).reshape(())
        return scans.LogCumSumExp.apply(self, dim=d)

    def prod(self, dim=None, keepdim=False):
        """The product of all elements, or along one int dim (gradient exact with zeros)."""
        if dim is not None:
            dim = check_dim("prod", dim, self.ndim)
        return ops_index.Prod.apply(self, dim=dim, keepdim=keepdim)

    # -- reordering and repetition --------------------------------------------------------
    def flip(self, *dims):
        dims = normalize_dims(_sizes(dims), self.ndim) or ()
        if self._data.dtype in WIDE_UNSIGNED:
            # torch's flip of these dtypes copies whole rows: it has no kernel to reverse the
            # innermost dim (the last one longer than 1), so that flip is refused, as there
            inner = [d for d in range(self.ndim) if self.shape[d] > 1][-1:]
            if set(inner) & set(dims):
                refuse_unsigned(f"flip of the innermost dim {inner[0]}", self)
        return ops_index.Flip.apply(self, dims=dims)

    def roll(self, shifts, dims=None):
        if dims is None:
            if isinstance(shifts, (tuple, list)) and len(shifts) == 1:
                shifts = shifts[0]                    # roll((1,)): the flattened roll, as torch
            if not isinstance(shifts, (int, np.integer)) or isinstance(shifts, bool):
                raise OpError(f"roll: without dims, shifts must be one int, got {shifts!r}")
            shifts = int(shifts)
            return ops_index.Roll.apply(self, shifts=shifts, dims=None)
        shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        if len(shifts) != len(dims):
            raise OpError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
        dims = tuple(check_dim("roll", d, self.ndim) for d in dims)
        return ops_index.Roll.apply(self, shifts=shifts, dims=dims)

    def repeat(self, *sizes):
        sizes = _sizes(sizes)
        if len(sizes) < self.ndim:
            raise OpError(f"repeat: {len(sizes)} sizes for a {self.ndim}-d tensor (need at "
                          f"least {self.ndim})")
        return ops_index.Repeat.apply(self, sizes=sizes)

    def repeat_interleave(self, repeats, dim=None):
        x = self if dim is not None else self.reshape(-1)
        dim = 0 if dim is None else check_dim("repeat_interleave", dim, self.ndim)
        if isinstance(repeats, TensorBase):
            refuse_unsigned("repeat_interleave", repeats)
            repeats = repeats._data
        repeats = np.asarray(repeats)
        if repeats.ndim == 1 and len(repeats) == 1:
            repeats = repeats[0]
        if repeats.ndim and len(repeats) != x.shape[dim]:
            raise OpError(f"repeat_interleave: {len(repeats)} repeats for dim {dim} of size "
                          f"{x.shape[dim]}")
        if (repeats < 0).any():
            raise OpError("repeat_interleave: repeats must be non-negative")
        return ops_index.RepeatInterleave.apply(x, repeats=repeats, dim=dim)

    def unflatten(self, dim, sizes):
        d = check_dim("unflatten", dim, self.ndim)
        sizes = tuple(sizes)
        if sizes.count(-1) > 1:
            raise OpError("unflatten: only one size may be -1")
        return self.reshape(self.shape[:d] + sizes + self.shape[d + 1:])

    def diagonal(self, offset=0, dim1=0, dim2=1):
        d1, d2 = check_dim("diagonal", dim1, self.ndim), check_dim("diagonal", dim2, self.ndim)
        return ops_index.Diagonal.apply(self, offset=offset, dim1=d1, dim2=d2)

    # -- gather, scatter and selection ----------------------------------------------------
    def gather(self, dim, index):
        d = check_dim("gather", dim, self.ndim)
        return ops_index.Gather.apply(self, dim=d, index=_index_array("gather", index))

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        """Out of place: a copy of self with src (a tensor or a number) written at index;
        reduce="add" or "multiply" combines instead (no derivative then, as torch)."""
        src = value if src is None else src
        if reduce is not None:
            return self._scatter_with_reduce(dim, index, src, reduce)
        return self._scatter("scatter", dim, index, src, False)

    def scatter_add(self, dim, index, src):
        return self._scatter("scatter_add", dim, index, src, True)

    def _scatter(self, name, dim, index, src, add):
        d = check_dim(name, dim, self.ndim)
        if not isinstance(src, TensorBase):
            src = self._op_class(np.asarray(src, dtype=self.dtype))
        elif src.dtype != self.dtype:        # torch refuses it too (no silent promotion)
            raise OpError(f"{name}: expected src of the same dtype as self ({self.dtype}), got "
                          f"{src.dtype}; convert it first, e.g. src.to({self.dtype})")
        return ops_index.Scatter.apply(self, src, dim=d, index=_index_array(name, index),
                                       add=add)

    def index_select(self, dim, index):
        """The entries at `index` (a 1-d int tensor) along dim, in that order (repeats
        allowed; their gradients add up), as torch.index_select."""
        d = check_dim("index_select", dim, self.ndim)
        refuse_unsigned("index_select", self)
        idx = _index_array("index_select", index)
        if idx.ndim > 1:
            raise OpError(f"index_select: index must be 1-d (or 0-d), got shape {idx.shape}")
        n = self.shape[d] if self.ndim else 1
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise OpError(f"index_select: index {idx.tolist()} is out of range for dim {dim} "
                          f"of size {n} (expected 0..{n - 1}; negative indices are refused, "
                          f"as in torch)")
        if self.ndim == 0:                   # torch: one index, 0, gives the value itself
            if idx.size != 1:
                raise OpError(f"index_select: a 0-d tensor takes one index, got {idx.size}")
            return self.clone()
        return self[(slice(None),) * d + (idx.reshape(-1),)]

    def masked_select(self, mask):
        """The elements where mask (broadcast with self) is True, as a 1-d tensor."""
        refuse_unsigned("masked_select", self)
        m = mask._data if isinstance(mask, TensorBase) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise OpError(f"masked_select: mask must be bool, got {m.dtype}")
        shape = np.broadcast_shapes(self.shape, m.shape)
        x = self if self.shape == shape else self.expand(*shape)
        return x[np.broadcast_to(m, shape)]

    def sort(self, dim=-1, descending=False, stable=False):
        """(values, indices) along dim; the values are a gather, so gradients reach the
        picked positions."""
        idx = self.argsort(dim, descending)
        if self.ndim == 0:
            return SortResult(self.clone(), idx)
        if self._data.dtype in WIDE_UNSIGNED:   # torch sorts them, but has no gather for them
            values = np.take_along_axis(self._data, idx._data, check_dim("sort", dim, self.ndim))
            return SortResult(self._op_class._from_op(values, None), idx)
        return SortResult(self.gather(dim, idx), idx)

    def argsort(self, dim=-1, descending=False, stable=False):
        d = check_dim("argsort", dim, self.ndim)
        if self.ndim == 0:
            return self._op_class._from_op(np.zeros((), np.int64), None)
        key = self._data
        if descending:                         # a stable descending order: sort the reverse
            n = key.shape[d]
            rev = np.argsort(np.flip(key, d), axis=d, kind="stable")
            idx = np.flip(n - 1 - rev, d)
        else:
            idx = np.argsort(key, axis=d, kind="stable")
        return self._op_class._from_op(idx.astype(np.int64), None)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """(values, indices) of the k largest (smallest) along dim; gradients reach the
        picked positions."""
        refuse_unsigned("topk", self)
        d = check_dim("topk", dim, self.ndim)
        n = self.shape[d] if self.ndim else 1
        if not 0 <= k <= n:
            raise OpError(f"topk: k={k} is out of range for dim {dim} of size {n}")
        idx = self.argsort(d, descending=largest)
        if self.ndim == 0:
            return TopkResult(self.clone(), idx)
        idx = movement.Getitem.apply(idx, index=(slice(None),) * d + (slice(0, k),))
        idx = self._op_class._from_op(np.ascontiguousarray(idx._data), None)
        return TopkResult(self.gather(d, idx), idx)

    def nonzero(self, *, as_tuple=False):
        """The indices of the non-zero elements, in row-major order: an int64 (n, ndim)
        tensor, or with as_tuple=True one int64 (n,) tensor per dim (a 0-d input counts
        as 1-d there, as in PyTorch)."""
        refuse_unsigned("nonzero", self)
        if as_tuple:
            data = self._data.reshape(1) if self.ndim == 0 else self._data
            return tuple(self._op_class._from_op(i.astype(np.int64), None)
                         for i in np.nonzero(data))
        idx = np.argwhere(self._data).astype(np.int64)
        return self._op_class._from_op(idx, None)

    def multinomial(self, num_samples, replacement=False):
        """num_samples category ids per row, drawn from tinygradx's generator with
        probabilities proportional to the row's non-negative weights (1-d or 2-d input;
        rows need not sum to 1). Without replacement a row needs at least num_samples
        non-zero weights (PyTorch leaves that case undefined; here it raises)."""
        return self._op_class._from_op(_multinomial(self._data, num_samples, replacement),
                                        None)


# -- torch's function forms (tgx.cumsum(x, 1) = x.cumsum(1)), re-exported by tinygradx ----

def cumsum(input, dim):
    """tgx.cumsum(input, dim) = input.cumsum(dim)"""
    return input.cumsum(dim)


def cumprod(input, dim):
    """tgx.cumprod(input, dim) = input.cumprod(dim)"""
    return input.cumprod(dim)


def cummax(input, dim):
    """tgx.cummax(input, dim) = input.cummax(dim) -> (values, indices)"""
    return input.cummax(dim)


def cummin(input, dim):
    """tgx.cummin(input, dim) = input.cummin(dim) -> (values, indices)"""
    return input.cummin(dim)


def logcumsumexp(input, dim):
    """tgx.logcumsumexp(input, dim) = input.logcumsumexp(dim)"""
    return input.logcumsumexp(dim)


def flip(input, dims):
    """tgx.flip(input, dims) = input.flip(dims)"""
    return input.flip(dims)


def roll(input, shifts, dims=None):
    """tgx.roll(input, shifts, dims) = input.roll(shifts, dims)"""
    return input.roll(shifts, dims)


def repeat_interleave(input, repeats, dim=None):
    """tgx.repeat_interleave(input, repeats, dim) = input.repeat_interleave(repeats, dim)"""
    return input.repeat_interleave(repeats, dim)


def unflatten(input, dim, sizes):
    """tgx.unflatten(input, dim, sizes) = input.unflatten(dim, sizes)"""
    return input.unflatten(dim, sizes)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """tgx.diagonal(input, offset, dim1, dim2) = input.diagonal(offset, dim1, dim2)"""
    return input.diagonal(offset, dim1, dim2)


def gather(input, dim, index):
    """tgx.gather(input, dim, index) = input.gather(dim, index)"""
    return input.gather(dim, index)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """tgx.scatter(input, dim, index, src) = input.scatter(dim, index, src) (out of place)"""
    return input.scatter(dim, index, src, value, reduce=reduce)


def scatter_add(input, dim, index, src):
    """tgx.scatter_add(input, dim, index, src) = input.scatter_add(dim, index, src)"""
    return input.scatter_add(dim, index, src)


def index_select(input, dim, index):
    """tgx.index_select(input, dim, index) = input.index_select(dim, index)"""
    return input.index_select(dim, index)


def masked_select(input, mask):
    """tgx.masked_select(input, mask) = input.masked_select(mask)"""
    return input.masked_select(mask)


def sort(input, dim=-1, descending=False):
    """tgx.sort(input, dim, descending) = input.sort(dim, descending) -> (values, indices)"""
    return input.sort(dim, descending)


def argsort(input, dim=-1, descending=False):
    """tgx.argsort(input, dim, descending) = input.argsort(dim, descending)"""
    return input.argsort(dim, descending)


def topk(input, k, dim=-1, largest=True, sorted=True):
    """tgx.topk(input, k, dim, largest, sorted) = input.topk(k, dim, largest, sorted)"""
    return input.topk(k, dim, largest, sorted)


def _multinomial(w, k, replacement):
    """The draw of Tensor.multinomial on a (n,) or (rows, n) weight array."""
    if w.ndim not in (1, 2) or w.dtype.kind != "f":
        raise OpError(f"multinomial: expects a 1-d or 2-d float tensor of weights, got shape "
                      f"{w.shape} and dtype {w.dtype}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise OpError(f"multinomial: num_samples must be a positive int, got {k!r}")
    rows = w.reshape(math.prod(w.shape[:-1]), w.shape[-1]).astype(np.float64)
    n = rows.shape[1]
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise OpError("multinomial: the weights contain inf, nan or a negative value")
    total = rows.sum(axis=1)
    if n == 0 or np.any(total <= 0):
        raise OpError("multinomial: a row of weights sums to 0 (nothing to draw)")
    rng = _rng.default_rng()
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]                       # the last entry exactly 1: u < 1 always lands
        u = rng.random((rows.shape[0], k))
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u,
                                                                             strict=True)])
    else:
        if k > n:
            raise OpError(f"multinomial: cannot draw {k} samples without replacement from "
                          f"{n} categories")
        nonzero = (rows > 0).sum(axis=1).min()
        if k > nonzero:
            raise OpError(f"multinomial: cannot draw {k} samples without replacement from a "
                          f"row with only {nonzero} non-zero weights")
        # exponential race: the k smallest E_i / w_i are a draw without replacement in
        # proportion to w (zero weights get +inf keys and are never reached)
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=rows.shape) / rows
        out = np.argsort(keys, axis=1, kind="stable")[:, :k]
    return out.astype(np.int64).reshape(w.shape[:-1] + (k,))
