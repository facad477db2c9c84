"""torch's order statistics and counting on a Tensor (`StatsMethods`, a mixin Tensor inherits):
median, nanmedian, kthvalue, mode, quantile, nanquantile, msort, aminmax, nanmean, nansum,
cov, corrcoef, and the integer-valued bincount, histc, histogram, unique, unique_consecutive,
searchsorted, bucketize, isin; std_mean and var_mean as functions.

Every value here is a composition: an order statistic is a `gather` at the position numpy's
stable sort finds (so its gradient reaches that position, as torch's), a quantile a `lerp` of
two of them, nanmean a sum over the finite entries divided by their count. The positions and
counts themselves are integers, computed on the arrays.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd import OpError
from ..core.dims import check_dim, normalize_dims
from ..core.node import Function
from ..core.tensor_base import TensorBase
from ..ops import movement
from ..ops.dtypes import refuse_unsigned
from .more_math import function_form

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
MinMax = namedtuple("MinMax", ["min", "max"])
_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _int_result(x, data):
    return x._op_class._from_op(np.asarray(data), None)


def _nan_last_order(d, axis):
    """Stable argsort with NaN after every number (numpy's order)."""
    return np.argsort(d, axis=axis, kind="stable")


class StatsMethods:
    """Order statistics, counting and histograms; mixed into Tensor."""

    __slots__ = ()

    # -- order statistics -------------------------------------------------------------------
    def _pick_sorted(self, name, dim, keepdim, choose):
        """(values, indices) where choose(sorted_order, data) gives, along the last axis, the
        position in sorted order to take; dim=None reduces the flattened tensor."""
        refuse_unsigned(name, self)
        x = self.reshape(-1) if dim is None else self
        d = -1 if dim is None else check_dim(name, dim, self.ndim)
        if x.ndim == 0:
            x, d = x.reshape(1), 0
        if x.shape[d] == 0:
            if dim is None and name in ("median", "nanmedian"):
                if self.dtype.kind == "f":
                    return self.sum() * float("nan"), None     # torch: NaN, no index
                # torch answers with a placeholder (the dtype's minimum), not a median
                raise IndexError(f"{name}(): an empty {self.dtype} tensor has no {name} (torch "
                                 f"returns the dtype's minimum as a placeholder; no value here)")
            raise IndexError(f"{name}(): expected reduction dim {dim} to have non-zero size")
        data = np.moveaxis(x._data, d, -1)
        order = _nan_last_order(data, -1)
        k = choose(order, data)                          # (..., ) positions in sorted order
        idx = np.take_along_axis(order, k[..., None], -1)[..., 0].astype(np.int64)
        index = _int_result(self, np.expand_dims(idx, d % x.ndim))
        values = x.gather(d % x.ndim, index)
        if dim is None:
            return values.reshape(()), _int_result(self, idx.reshape(()))
        if not keepdim or self.ndim == 0:
            values, index = values.squeeze(d), index.squeeze(d)
            if self.ndim == 0:
                values, index = values.reshape(()), index.reshape(())
        return values, index

    def median(self, dim=None, keepdim=False):
        """The lower median (of an even count, the smaller middle value); NaN where a NaN is
        in the slice. With dim: (values, indices); among equal values the index is the last
        in numpy's stable order (torch leaves the choice to its kernel)."""
        def choose(order, data):
            n = data.shape[-1]
            nan = np.isnan(data).any(-1) if data.dtype.kind == "f" else np.zeros(
                data.shape[:-1], bool)
            first_nan = (~np.isnan(np.take_along_axis(data, order, -1))).sum(-1) \
                if data.dtype.kind == "f" else np.full(data.shape[:-1], n)
            return np.where(nan, np.minimum(first_nan, n - 1), (n - 1) // 2)
        values, indices = self._pick_sorted("median", dim, keepdim, choose)
        return values if dim is None else ValuesIndices(values, indices)

    def nanmedian(self, dim=None, keepdim=False):
        """The lower median of the values that are not NaN (NaN where all are)."""
        def choose(order, data):
            k = (~np.isnan(data)).sum(-1) if data.dtype.kind == "f" else np.full(
                data.shape[:-1], data.shape[-1])
            return np.where(k > 0, (k - 1) // 2, 0)
        values, indices = self._pick_sorted("nanmedian", dim, keepdim, choose)
        return values if dim is None else ValuesIndices(values, indices)

    def kthvalue(self, k, dim=-1, keepdim=False):
        """(values, indices) of the k-th smallest along dim (k from 1)."""
        n = self.shape[dim] if self.ndim else 1
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
            raise IndexError(f"kthvalue: k ({k}) is out of range for dim {dim} of size {n}")
        return ValuesIndices(*self._pick_sorted("kthvalue", dim, keepdim,
                                         lambda order, data: np.full(data.shape[:-1], k - 1)))

    def mode(self, dim=-1, keepdim=False):
        """(values, indices): the most frequent value along dim (the smallest of equally
        frequent ones) and the last position it holds."""
        def choose(order, data):
            s = np.take_along_axis(data, order, -1)
            n = s.shape[-1]
            new = np.ones(s.shape, bool)
            new[..., 1:] = s[..., 1:] != s[..., :-1]
            start = np.maximum.accumulate(np.where(new, np.arange(n), 0), axis=-1)
            run = np.arange(n) - start + 1                   # length of the run so far
            last = np.ones(s.shape, bool)
            last[..., :-1] = new[..., 1:]
            score = np.where(last, run, 0)
            best = score.max(-1, keepdims=True)
            return np.argmax(score == best, axis=-1)         # the smallest such value's last
        return ValuesIndices(*self._pick_sorted("mode", dim, keepdim, choose))

    def msort(self):
        """self sorted along dim 0."""
        return self.sort(0).values

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """The q-quantiles along dim (q a number or a 1-d tensor in [0, 1]; a 1-d q puts its
        dim first), interpolating as torch's interpolation= says; NaN where the slice has
        one."""
        return self._quantile("quantile", q, dim, keepdim, interpolation, skip_nan=False)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """quantile over the values that are not NaN (NaN where all are)."""
        return self._quantile("nanquantile", q, dim, keepdim, interpolation, skip_nan=True)

    def _quantile(self, name, q, dim, keepdim, interpolation, skip_nan):
        if self.dtype.kind != "f":
            raise TypeError(f"{name}: input must be a float tensor, got {self.dtype}")
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(f"{name}: interpolation must be one of "
                             f"{', '.join(_INTERPOLATIONS)}, got {interpolation!r}")
        if isinstance(q, TensorBase) and q.dtype != self.dtype:
            raise TypeError(f"{name}(): q tensor must be of the input's dtype {self.dtype}, got "
                            f"{q.dtype} (as torch)")
        qs = q._data if isinstance(q, TensorBase) else np.asarray(q, dtype=np.float64)
        if qs.ndim > 1 or (qs.size and (qs.min() < 0 or qs.max() > 1)):
            raise ValueError(f"{name}: q must be a number or a 1-d tensor of values in [0, 1]")
        x = self.reshape(-1) if dim is None else (self.reshape(1) if self.ndim == 0 else self)
        d = x.ndim - 1 if dim is None else check_dim(name, dim, max(self.ndim, 1))
        if x._data.size == 0:               # any empty input, as torch (not only an empty dim)
            raise RuntimeError(f"{name}(): input tensor must be non-empty (shape {self.shape})")
        xs = x.sort(d).values                       # NaN last; a gather: gradients flow
        n = x.shape[d]
        nan = np.isnan(x._data)
        has_nan = nan.any(d, keepdims=True)
        if skip_nan:        # k - 1 for the k values that are not NaN (0 when all are NaN)
            last = np.maximum(n - nan.sum(d, keepdims=True) - 1, 0)
        else:
            last = np.full(has_nan.shape, n - 1)
        outs = []
        for qi in qs.reshape(-1):
            rank = qi * last
            if not skip_nan and has_nan.any():       # the NaN sorted last: NaN, as torch
                rank = np.where(has_nan, n - 1, rank)
            lo = np.floor(rank).astype(np.int64)
            hi = np.ceil(rank).astype(np.int64)
            w = rank - lo
            if interpolation == "lower":
                hi, w = lo, 0 * w
            elif interpolation == "higher":
                lo, w = hi, 0 * w
            elif interpolation == "nearest":
                lo = hi = np.round(rank).astype(np.int64)
                w = 0 * w
            elif interpolation == "midpoint":
                w = np.where(hi > lo, 0.5, 0.0)
            a = xs.gather(d, _int_result(self, lo))
            b = xs.gather(d, _int_result(self, hi))
            out = a + (b - a) * _int_result(self, w.astype(self.dtype))
            if self.ndim == 0:
                out = out.reshape(())
            elif not (keepdim and dim is not None):
                out = out.squeeze(d)
            outs.append(out)
        if dim is None and keepdim and self.ndim:
            outs = [o.reshape((1,) * self.ndim) for o in outs]
        return outs[0] if qs.ndim == 0 else movement.Stack.apply(*outs, dim=0)

    # -- reductions that skip NaN, both extremes ----------------------------------------------
    def aminmax(self, *, dim=None, keepdim=False):
        """(min, max) over dim (all elements by default)."""
        refuse_unsigned("aminmax", self)
        # a reduction over no elements (a dim of size 0, or dim None of an empty tensor) has
        # no value; over the other dims of an empty tensor the results are empty, as torch
        if self.numel() == 0 and (dim is None or self.ndim == 0
                                  or self.shape[check_dim("aminmax", dim, self.ndim)] == 0):
            raise RuntimeError(f"aminmax(): cannot reduce over no elements (shape {self.shape}, "
                               f"dim {dim}): the min and max of nothing have no value")
        return MinMax(self.amin(dim=dim, keepdim=keepdim), self.amax(dim=dim, keepdim=keepdim))

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """The sum with NaN read as 0."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind != "f":
            return x.sum(dim, keepdim)
        return x.masked_fill(np.isnan(x._data), 0).sum(dim, keepdim)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean of the values that are not NaN (NaN where none is), float tensors. Where
        a slice is all NaN, its gradient is 0 here and NaN in torch."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind != "f":
            raise TypeError(f"nanmean: expected a floating point tensor, got {x.dtype} (as "
                            f"torch)")
        keep = ~np.isnan(x._data)
        axes = None if dim is None else normalize_dims(dim, max(x.ndim, 1))
        count = keep.sum(axis=axes if x.ndim else None, keepdims=keepdim and dim is not None)
        total = x.masked_fill(~keep, 0).sum(dim, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / _int_result(self, np.asarray(count, x.dtype))

    # -- covariance ---------------------------------------------------------------------------
    def cov(self, *, correction=1, fweights=None, aweights=None):
        """The covariance matrix of the variables in the rows (observations in the columns),
        torch.cov; correction=1 is the unbiased estimate."""
        if fweights is not None or aweights is not None:
            raise NotImplementedError("cov: fweights= and aweights= are not supported here; "
                                      "weight the observations yourself")
        if self.ndim > 2:
            raise OpError(f"cov: expected a 1-d or 2-d input, got {self.ndim} dims")
        x = self.reshape(1, -1) if self.ndim < 2 else self
        x = x if x.dtype.kind == "f" else x.float()
        n = x.shape[1]
        c = x - x.mean(1, keepdim=True)
        out = (c @ c.t()) / max(n - correction, 0)
        return out.reshape(()) if self.ndim < 2 else out

    def corrcoef(self):
        """Pearson's correlation coefficients of the rows, clipped into [-1, 1]."""
        c = self.cov()
        if c.ndim == 0:
            return c / c
        d = c.diagonal().sqrt()
        return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)

    # -- counting and histograms (integer results, no gradient) ---------------------------------
    def bincount(self, weights=None, minlength=0):
        """How often each value 0..max occurs in a 1-d non-negative integer tensor (with
        weights: their sums, float)."""
        refuse_unsigned("bincount", self)
        d = self._data
        if d.ndim != 1 or d.dtype.kind not in "iub":
            raise OpError(f"bincount: expects a 1-d integer tensor, got shape {d.shape} and "
                          f"dtype {d.dtype}")
        if d.size and d.min() < 0:
            raise OpError("bincount: only supports non-negative values")
        w = None if weights is None else (weights._data if isinstance(weights, TensorBase)
                                          else np.asarray(weights))
        out = np.bincount(d.astype(np.int64), w, minlength=minlength)
        if w is None:
            return _int_result(self, out.astype(np.int64))
        return _int_result(self, out.astype(w.dtype if w.dtype.kind == "f" else np.float64))

    def histc(self, bins=100, min=0, max=0):
        """Counts in `bins` equal bins over [min, max] (min = max = 0: the data's range);
        values outside are left out; float, self's dtype."""
        d = self._data
        if d.dtype.kind != "f":
            raise TypeError(f"histc: not implemented for {d.dtype} tensors (as torch)")
        lo, hi = float(min), float(max)
        if lo == hi and d.size:
            lo, hi = float(d.min()), float(d.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo > hi:
            raise OpError(f"histc: max ({hi}) must be larger than min ({lo})")
        counts, _ = np.histogram(d, bins=int(bins), range=(lo, hi))
        return _int_result(self, counts.astype(d.dtype))

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        """(hist, bin_edges) as torch.histogram (bins an int or a 1-d tensor of edges)."""
        d = self._data
        if d.dtype.kind != "f":
            raise TypeError(f"histogram: not implemented for {d.dtype} tensors (as torch)")
        b = bins._data if isinstance(bins, TensorBase) else bins
        w = weight._data if isinstance(weight, TensorBase) else weight
        hist, edges = np.histogram(d, bins=b, range=range, weights=w, density=density)
        return namedtuple("Histogram", ["hist", "bin_edges"])(
            _int_result(self, hist.astype(d.dtype)), _int_result(self, edges.astype(d.dtype)))

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        """The distinct values (sorted), and on request the inverse indices and the counts;
        with dim, the distinct slices along it."""
        d = self._data
        if dim is not None:
            if self.ndim == 0:
                raise IndexError(f"unique: dim {dim} given for a 0-d tensor, which has no dims")
            dim = check_dim("unique", dim, self.ndim)
            if any(n == 0 for i, n in enumerate(d.shape) if i != dim % max(d.ndim, 1)):
                raise RuntimeError(f"unique: dim {dim} of {d.shape}: another dim has size 0, so "
                                   f"there are no slices to compare (as torch refuses)")
        vals, inverse, counts = np.unique(d if dim is not None or d.ndim <= 1 else d.reshape(-1),
                                          return_inverse=True, return_counts=True, axis=dim)
        out = [_without_derivative(self, _UniqueValues, vals)]
        if return_inverse:
            out.append(_int_result(self, inverse.reshape(d.shape if dim is None else -1)
                                   .astype(np.int64)))
        if return_counts:
            out.append(_int_result(self, counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        """The values with each run of equal neighbours kept once (and on request the
        inverse indices and the run lengths)."""
        d = self._data
        if dim is not None:
            raise NotImplementedError("unique_consecutive: dim= is not supported here; "
                                      "flatten the slices first")
        flat = d.reshape(-1)
        new = np.ones(flat.shape, bool)
        new[1:] = flat[1:] != flat[:-1]
        out = [_without_derivative(self, _UniqueConsecutiveValues, flat[new])]
        if return_inverse:
            out.append(_int_result(self, (np.cumsum(new) - 1).reshape(d.shape).astype(np.int64)))
        if return_counts:
            starts = np.flatnonzero(new)
            out.append(_int_result(self, np.diff(np.append(starts, flat.size)).astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)



class _NoDerivative(Function):
    """Values picked out of x by an op with no derivative, as a node: torch records them on a
    tensor that requires grad, so code that only reads them runs, and a backward through them
    is refused by the op's name (a subclass per op, so graphs and traces name it)."""

    def forward(self, x, values=None):
        return values

    def backward(self, g):
        raise OpError(f"the derivative of {self.op_name} is not implemented (as in PyTorch); "
                      f"detach its input first (x.detach().{self.op_name}())")


class _UniqueValues(_NoDerivative):
    op_name = "unique"


class _UniqueConsecutiveValues(_NoDerivative):
    op_name = "unique_consecutive"


def _without_derivative(x, node, values):
    if x.requires_grad and values.dtype.kind == "f":
        return node.apply(x, values=values)
    return _int_result(x, values)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """The indices where input's values would go into sorted_sequence (its last dim sorted) to
    keep it sorted (left: the first such place; right=True or side="right": the last)."""
    refuse_unsigned("searchsorted", sorted_sequence, input)
    if side is not None:
        right = side == "right"
    seq = sorted_sequence._data
    vals = input._data if isinstance(input, TensorBase) else np.asarray(input)
    s = "right" if right else "left"
    if sorter is not None:
        order = sorter._data if isinstance(sorter, TensorBase) else np.asarray(sorter)
        seq = np.take_along_axis(seq, order, -1)
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=s)
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise OpError(f"searchsorted: the leading dims of sorted_sequence "
                          f"{seq.shape[:-1]} and input {vals.shape[:-1]} must match")
        rows = seq.reshape(-1, seq.shape[-1])
        vrows = vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(r, v, side=s) for r, v in zip(rows, vrows, strict=True)]
                       ).reshape(vals.shape)
    return _int_result(sorted_sequence, np.asarray(out).astype(np.int32 if out_int32 else
                                                               np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The index of the bucket of boundaries (1-d, sorted) each value falls into."""
    refuse_unsigned("bucketize", input, boundaries)
    if boundaries.ndim != 1:
        raise OpError(f"bucketize: boundaries must be 1-d, got shape {tuple(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def std_mean(input, dim=None, *, correction=1, keepdim=False):
    """(std, mean) over dim, as torch.std_mean."""
    return (input.std(dim, keepdim=keepdim, correction=correction),
            input.mean(dim, keepdim=keepdim))


def var_mean(input, dim=None, *, correction=1, keepdim=False):
    """(var, mean) over dim, as torch.var_mean."""
    return (input.var(dim, keepdim=keepdim, correction=correction),
            input.mean(dim, keepdim=keepdim))


def _method_form(name):
    return function_form(name, owner=StatsMethods)


# torch's function forms of the methods above (torch.median(x) is x.median(), ...)
median, nanmedian, kthvalue, mode = (_method_form("median"), _method_form("nanmedian"),
                                     _method_form("kthvalue"), _method_form("mode"))
quantile, nanquantile, msort = (_method_form("quantile"), _method_form("nanquantile"),
                                _method_form("msort"))
aminmax, nansum, nanmean = _method_form("aminmax"), _method_form("nansum"), _method_form("nanmean")
cov, corrcoef = _method_form("cov"), _method_form("corrcoef")
bincount, histc, histogram = (_method_form("bincount"), _method_form("histc"),
                              _method_form("histogram"))
unique, unique_consecutive = _method_form("unique"), _method_form("unique_consecutive")


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of elements is among test_elements (either may be a number, not
    both); bool."""
    refuse_unsigned("isin", elements, test_elements)
    like = elements if isinstance(elements, TensorBase) else test_elements
    if not isinstance(like, TensorBase):
        raise TypeError("isin: expected a Tensor among elements and test_elements")

    def data(x):
        return x._data if isinstance(x, TensorBase) else np.asarray(x)
    return _int_result(like, np.isin(data(elements), data(test_elements), invert=invert))
