"""The methods of Tensor that reduce, move and index beyond the core's: `ShapeMethods`, a mixin
that Tensor inherits (tensor/__init__.py holds the class itself, in-place machinery, dtype
conversion and element-wise math; sum, mean, reshape, permute, transpose and expand are the
core Tensor's, tinygradx/core/tensor.py).

Reductions (max(dim) -> (values, indices), amax, var, ...), movement (flatten, squeeze, split,
...) and indexing by torch's rules (x[idx], x[idx] = v, masked_fill, triu/tril). Methods only
check arguments and call an op's `apply`; torch's names, argument names and semantics.
"""
from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from .. import ops
from ..core import reduce as ops_reduce
from ..ops import movement
from ..autograd import OpError
from ..core.tensor_base import TensorBase
from ..core.dims import check_dim, normalize_dims
from ..ops.dtypes import int_scalar, refuse_unsigned

MaxResult = namedtuple("MaxResult", ["values", "indices"])


class ShapeMethods:
    """Reductions, movement and indexing; mixed into Tensor (every method works on a Tensor)."""

    __slots__ = ()

    # -- reductions (sum, mean: the core's Tensor) -----------------------------------------
    def amax(self, dim=None, keepdim=False):
        refuse_unsigned("amax", self)
        return ops_reduce.Max.apply(self, dim=dim, keepdim=keepdim)

    def amin(self, dim=None, keepdim=False):
        refuse_unsigned("amin", self)
        return ops_reduce.Max.apply(self, dim=dim, keepdim=keepdim, minimum=True)

    def max(self, dim=None, keepdim=False):
        """max() -> the largest value; max(dim) -> (values, indices) as in PyTorch.

        As in PyTorch, max() and amax() share the gradient among tied maxima, while the
        values of max(dim) are picked at the returned indices and get all of it.
        """
        refuse_unsigned("max", self)
        if dim is None:
            return self.amax()
        _nonempty("max", self, dim)
        if self.ndim == 0:                   # one element: itself, at index 0 (torch)
            return MaxResult(movement.Reshape.apply(self, shape=()), _zero_index(self))
        idx = self.argmax(dim, keepdim=True)
        return MaxResult(self._pick(idx, dim, keepdim), idx if keepdim else idx.squeeze(dim))

    def min(self, dim=None, keepdim=False):
        refuse_unsigned("min", self)
        if dim is None:
            return self.amin()
        _nonempty("min", self, dim)
        if self.ndim == 0:
            return MaxResult(movement.Reshape.apply(self, shape=()), _zero_index(self))
        idx = self.argmin(dim, keepdim=True)
        return MaxResult(self._pick(idx, dim, keepdim), idx if keepdim else idx.squeeze(dim))

    def _pick(self, idx, dim, keepdim):
        """self at the positions idx (keepdim-shaped) along dim, as a gather."""
        d = dim % self.ndim
        grid = list(np.indices(idx.shape, sparse=True))
        grid[d] = idx._data
        out = self[tuple(grid)]
        return out if keepdim else out.squeeze(d)

    def argmax(self, dim=None, keepdim=False):
        _nonempty("argmax", self, dim)
        refuse_unsigned("argmax", self)
        if self.ndim == 0:
            return _zero_index(self)
        return self._op_class._from_op(np.argmax(self._data, axis=dim, keepdims=keepdim), None)

    def argmin(self, dim=None, keepdim=False):
        _nonempty("argmin", self, dim)
        refuse_unsigned("argmin", self)
        if self.ndim == 0:
            return _zero_index(self)
        return self._op_class._from_op(np.argmin(self._data, axis=dim, keepdims=keepdim), None)

    def var(self, dim=None, unbiased=True, keepdim=False, *, correction=None):
        """Variance; unbiased=True divides by N-1 (PyTorch's default), or give correction.
        As torch, a bool first argument is `unbiased` (x.var(False))."""
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        if self.dtype.kind != "f":
            raise TypeError(f"var/std: need a floating-point tensor (as in PyTorch), got "
                            f"{self.dtype}")
        corr = (1 if unbiased else 0) if correction is None else correction
        return ops_reduce.Var.apply(self, dim=dim, correction=corr, keepdim=keepdim)

    def std(self, dim=None, unbiased=True, keepdim=False, *, correction=None):
        """The square root of var(...) (the same arguments)."""
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def count_nonzero(self, dim=None):
        """How many elements are non-zero (along dim: an int or a tuple), int64."""
        refuse_unsigned("count_nonzero", self)
        return (self != 0).sum(dim=dim) if dim is not None else (self != 0).sum()

    def logsumexp(self, dim, keepdim=False):
        return ops_reduce.LogSumExp.apply(self, dim=dim, keepdim=keepdim)

    # -- movement (reshape/view, permute, transpose, expand: the core's Tensor) -------------
    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        s, e = (check_dim("flatten", d, self.ndim) for d in (start_dim, end_dim))
        if s > e:
            raise OpError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} "
                          f"for a {self.ndim}-d tensor")
        shape = self.shape[:s] + (math.prod(self.shape[s:e + 1]),) + self.shape[e + 1:]
        return self.reshape(shape)

    def expand_as(self, other):
        return self.expand(other.shape)

    def unsqueeze(self, dim):
        d = check_dim("unsqueeze", dim, self._data.ndim, extra=1)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        axes = _named_axes("squeeze", dim, self.ndim)
        return self.reshape(tuple(s for i, s in enumerate(self.shape)
                                  if not (i in axes and s == 1)))

    def __getitem__(self, index):
        """PyTorch's indexing: ints, slices, None, Ellipsis, int arrays/lists/tensors and
        bool masks. Where numpy's rule differs, torch's is kept: an int (or 0-d int tensor)
        is applied first as a plain select, so x[0, :, [0, 1]] of a (2, 3, 4) x is
        x[0][:, [0, 1]] of shape (3, 2) (numpy: (2, 3)). Repeated indices sum their
        gradients."""
        index = _normalise_index(index, self.shape)
        split = _split_ints(index)
        if split is not None:                # ints mixed with arrays: select, then gather
            first, rest = split
            return movement.Getitem.apply(movement.Getitem.apply(self, index=first), index=rest)
        out = movement.Getitem.apply(self, index=index)
        return out._view_of(self) if out._data.base is not None and np.may_share_memory(
            out._data, self._data) else out

    def __setitem__(self, index, value):
        """self[index] = value: the gradient goes to value at index and to the old self
        elsewhere (in place, as PyTorch)."""
        mask = index._data if isinstance(index, TensorBase) else index
        if isinstance(mask, np.ndarray) and mask.dtype == np.uint8 and (
                isinstance(value, (int, float, bool, np.number))
                or (isinstance(value, TensorBase) and value.ndim == 0)):
            # torch fills one value through masked_fill_, which takes bool masks only
            raise RuntimeError("setitem: masked_fill_ only supports boolean masks, but got a "
                               "mask of dtype uint8 (as torch; use a bool tensor)")
        index = _normalise_index(index, self.shape)
        self._inplace("setitem", lambda t, v: movement.Setitem.apply(t, v, index=index), value)

    def split(self, split_size_or_sections, dim=0):
        dim = check_dim("split", dim, self.ndim)
        if self.ndim == 0:
            raise OpError("split: cannot split a 0-d tensor")
        n = self.shape[dim]
        if isinstance(split_size_or_sections, (int, np.integer)) \
                and not isinstance(split_size_or_sections, bool):
            size = int(split_size_or_sections)
            if size <= 0 and not (size == 0 and n == 0):
                raise OpError(f"split: split_size must be a positive int, got {size}")
            sizes = [size] * (n // size) if size else []
            if n % max(size, 1) or n == 0:
                sizes.append(n % max(size, 1))  # a size-0 dim gives one empty piece (torch)
        else:
            if not isinstance(split_size_or_sections, (list, tuple)):
                raise OpError(f"split: expected an int split_size or a list of section sizes, "
                              f"got {split_size_or_sections!r}")
            sizes = list(split_size_or_sections)
            if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0
                   for s in sizes):
                raise OpError(f"split: section sizes must be non-negative ints, got {sizes}")
            if sum(sizes) != n:
                raise OpError(f"split: sections {sizes} sum to {sum(sizes)}, but dim {dim} of "
                              f"shape {self.shape} has size {n}")
        out, start = [], 0
        for s in sizes:
            idx = [slice(None)] * self.ndim
            idx[dim] = slice(start, start + s)
            out.append(self[tuple(idx)])
            start += s
        return tuple(out)

    def chunk(self, chunks, dim=0):
        if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
            raise OpError(f"chunk: chunks must be a positive int, got {chunks!r}")
        dim = check_dim("chunk", dim, self.ndim)
        if self.ndim == 0:
            raise OpError("chunk: cannot chunk a 0-d tensor")
        n = self.shape[dim]
        if n == 0:                           # torch: `chunks` empty pieces
            return self.split([0] * int(chunks), dim)
        return self.split(-(-n // int(chunks)), dim)

    def masked_fill(self, mask, value):
        """Put `value` where mask is True; self and mask broadcast together (as torch)."""
        m = mask._data if isinstance(mask, TensorBase) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be a bool tensor, got dtype {m.dtype}")
        if m.ndim > self.ndim or any(a == 1 < b for a, b in zip(self.shape[::-1],
                                                                m.shape[::-1], strict=False)):
            try:                   # torch broadcasts the input up to the mask's shape too
                return self.expand(*np.broadcast_shapes(m.shape, self.shape)).masked_fill(
                    mask, value)
            except ValueError:
                pass               # not broadcastable: MaskedFill's message below
        if isinstance(value, TensorBase) and value.ndim != 0:
            raise OpError(f"masked_fill: value must be a number or a 0-d tensor (as torch), got "
                          f"shape {tuple(value.shape)}")
        if isinstance(value, TensorBase) and value.requires_grad:
            # a learned fill value: where() gives it the gradient of the filled positions
            if np.broadcast_shapes(m.shape, self.shape) != self.shape:
                return ops.MaskedFill.apply(self, mask=m, value=0)     # raises the message
            return ops.Where.apply(value.to(self.dtype), self, cond=m)
        value = _int_value("masked_fill", value, self)
        if isinstance(value, TensorBase):
            value = value._data
        return ops.MaskedFill.apply(self, mask=m, value=value)

    def triu(self, diagonal=0):
        refuse_unsigned("triu", self)
        return movement.Tri.apply(self, diagonal=diagonal, upper=True)

    def tril(self, diagonal=0):
        refuse_unsigned("tril", self)
        return movement.Tri.apply(self, diagonal=diagonal, upper=False)

    # -- more of torch's movement and norms (views through getitem and permute) -----------
    def t(self):
        """The transpose of a 2-d tensor; a 0-d or 1-d tensor as it is (a view), as torch."""
        if self.ndim > 2:
            raise OpError(f"t: expects a tensor with at most 2 dims, got shape {self.shape}; "
                          f"use transpose(dim0, dim1) or mT")
        return self.T

    def swapdims(self, dim0, dim1):
        return self.transpose(dim0, dim1)

    def movedim(self, source, destination):
        """Move the dims `source` (an int or a sequence) to the places `destination`; the
        other dims keep their order (a permute, as torch.movedim)."""
        src, dst = _dim_list(source), _dim_list(destination)
        if len(src) != len(dst):
            raise OpError(f"movedim: source {source!r} has {len(src)} dims but destination "
                          f"{destination!r} has {len(dst)}")
        nd = self.ndim
        src = [check_dim("movedim", d, nd) for d in src]
        dst = [check_dim("movedim", d, nd) for d in dst]
        for name, dims, given in (("source", src, source), ("destination", dst, destination)):
            if len(set(dims)) != len(dims):
                raise OpError(f"movedim: repeated dim in {name} {given!r}")
        if nd == 0:
            return self.T
        order = [None] * nd
        for s, d in zip(src, dst, strict=True):
            order[d] = s
        rest = iter([i for i in range(nd) if i not in src])
        return self.permute([o if o is not None else next(rest) for o in order])

    moveaxis = movedim

    def select(self, dim, index):
        """The slice at `index` along dim, that dim removed (x.select(1, i) is x[:, i])."""
        d, n = self._dim_size("select", dim)
        i = _int_arg("select", "index", index)
        if not -n <= i < n:
            raise OpError(f"select: index {i} is out of range for dim {dim} of size {n} "
                          f"(shape {self.shape})")
        return self[(slice(None),) * d + (i,)]

    def narrow(self, dim, start, length):
        """The `length` elements from `start` along dim (a view; start may be negative)."""
        d, n = self._dim_size("narrow", dim)
        s, ln = _int_arg("narrow", "start", start), _int_arg("narrow", "length", length)
        if not -n <= s <= n:
            raise OpError(f"narrow: start {s} is out of range for dim {dim} of size {n} "
                          f"(expected {-n}..{n})")
        s = s + n if s < 0 else s
        if ln < 0 or s + ln > n:
            raise OpError(f"narrow: start {s} and length {ln} do not fit in dim {dim} of size "
                          f"{n} (shape {self.shape})")
        return self[(slice(None),) * d + (slice(s, s + ln),)]

    def unfold(self, dimension, size, step):
        """torch.Tensor.unfold: every window of `size` elements along `dimension`, `step` apart,
        that dim becoming the window count and the window a new last dim. The i-th element of
        every window is one strided slice, so the windows are `size` slices stacked."""
        src = self.reshape(1) if self.ndim == 0 else self
        d, n = src._dim_size("unfold", dimension)
        size, step = _int_arg("unfold", "size", size), _int_arg("unfold", "step", step)
        if size < 0 or step < 1 or size > n:
            raise OpError(f"unfold: size {size} and step {step} need 0 <= size <= {n} (dim "
                          f"{dimension} of shape {self.shape}) and step > 0")
        if self.ndim == 0:                   # torch: a 0-d tensor gives itself, `size` times
            return src[:size]
        count = (n - size) // step + 1
        parts = [src[(slice(None),) * d + (slice(j, j + step * (count - 1) + 1, step),)]
                 for j in range(size)]
        if not parts:                        # size 0: `count` empty windows (no elements)
            return src.narrow(d, 0, 0).reshape(*src.shape[:d], count, *src.shape[d + 1:], 0)
        return movement.Stack.apply(*parts, dim=src.ndim)    # (..., count, ..., size)

    def unbind(self, dim=0):
        """The slices along dim, that dim removed, as a tuple (views sharing one gradient)."""
        d, n = self._dim_size("unbind", dim)
        return tuple(self[(slice(None),) * d + (i,)] for i in range(n))

    def _dim_size(self, name, dim):
        """(dim as a non-negative int, its size); a 0-d tensor has no dim to take."""
        if self.ndim == 0:
            raise OpError(f"{name}: needs a tensor with at least 1 dim, got a 0-d tensor")
        d = check_dim(name, dim, self.ndim)
        return d, self.shape[d]

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over dim (every element when dim is None), as torch.norm: p is
        'fro' or 2 (Euclidean), 1, inf (the largest |x|), -inf (the smallest) or any number
        >= 1. dtype= casts first. The gradient at a zero vector is 0, as torch's."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind != "f":
            raise TypeError(f"norm: needs a floating-point tensor, got {x.dtype} (convert it "
                            f"with .float(), or pass dtype=)")
        if isinstance(dim, (tuple, list)):
            dim = tuple(dim) or None                 # torch: dim=() is every dim
        if dim is not None:
            _named_axes("norm", dim, x.ndim)
        if isinstance(p, str) and p == "fro":
            if isinstance(dim, tuple) and len(dim) > 2:
                raise OpError(f"norm: p='fro' takes one dim or two (a matrix), got dim {dim}")
            p = 2
        if isinstance(p, (bool, str)) or not isinstance(p, (int, float, np.integer,
                                                             np.floating)) or not (
                abs(p) == math.inf or p >= 1):
            hint = " (the nuclear norm needs singular values, which tinygradx does not " \
                   "compute)" if p == "nuc" else ""
            raise ValueError(f"norm: p must be 'fro', inf, -inf or a number >= 1, got "
                             f"{p!r}{hint}")
        if abs(p) == math.inf:
            a = x.abs()
            return a.amax(dim, keepdim) if p > 0 else a.amin(dim, keepdim)
        if p == 1:
            return x.abs().sum(dim, keepdim)
        s = (x * x if p == 2 else x.abs() ** p).sum(dim, keepdim)
        zero = s._data == 0
        if not zero.any():
            return s.sqrt() if p == 2 else s ** (1 / p)
        # the root's slope is infinite at 0: take it at 1 there and put the 0 back, so a zero
        # vector gets the zero gradient torch gives it (and a graph that differentiates again)
        s = s.masked_fill(zero, 1.0)
        return (s.sqrt() if p == 2 else s ** (1 / p)).masked_fill(zero, 0.0)


def _int_arg(name, arg, value):
    """An int argument (a 0-d integer tensor too, as torch); bools and floats refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) and not (
            isinstance(value, TensorBase) and value.ndim == 0 and value.dtype.kind in "iu"):
        raise OpError(f"{name}: {arg} must be an int, got {value!r}")
    return int(value)


def _dim_list(dims):
    """movedim's source/destination: one int or a sequence of ints."""
    return list(dims) if isinstance(dims, (tuple, list)) else [dims]


def _zero_index(x):
    """A 0-d int64 index of x's class: argmax/argmin of a 0-d tensor."""
    return x._op_class._from_op(np.zeros((), dtype=np.int64), None)


def _named_axes(name, dim, ndim):
    """normalize_dims with the op's name in front of its error message."""
    try:
        return normalize_dims(dim, ndim)
    except OpError as err:
        raise OpError(f"{name}: {err}") from None


def _nonempty(name, x, dim):
    """dim checked; an index reduction (argmax, max(dim), ...) over a dim of size 0 has no
    answer: torch's IndexError, naming the op, the dim and the shape (numpy's own error names
    neither)."""
    _named_axes(name, dim, x.ndim)
    if dim is None:
        if x._data.size == 0:
            raise IndexError(f"{name}(): a tensor of shape {x.shape} has no elements; give "
                             f"the reduction dim")
    elif x.ndim and x._data.shape[dim] == 0:
        raise IndexError(f"{name}(): dim {dim} of the input {x.shape} has size 0; the "
                         f"reduction needs at least one element")


def _split_ints(index):
    """For an index mixing ints with int/bool arrays: (selects, rest), the basic index that
    applies the ints (every other item kept whole) and what is left to index its result
    with; None when numpy's rule already is torch's (no int, or no array)."""
    ints = arrays = False
    for i in index:
        if isinstance(i, np.ndarray):
            arrays = True
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            ints = True
    if not (ints and arrays):
        return None
    first, rest = [], []
    for i in index:
        if isinstance(i, np.ndarray):
            first += [slice(None)] * (i.ndim if i.dtype == np.bool_ else 1)
            rest.append(i)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            first.append(i)
        elif i is None:
            first.append(None)
            rest.append(slice(None))
        elif i is Ellipsis:
            first.append(i)
            rest.append(i)
        else:                                # a slice: applied in the second step
            first.append(slice(None))
            rest.append(i)
    return tuple(first), tuple(rest)


def _int_value(name, value, x):
    """A Python int value for integer tensor x, in x's dtype: out of its range refused in one
    line, as torch (numpy would raise its own OverflowError); anything else as it is."""
    if isinstance(value, int) and not isinstance(value, bool) and x._data.dtype.kind in "iu":
        return int_scalar(value, x._data.dtype, name)
    return value


_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.uint8))


def _normalise_index(index, shape):
    """Tensors become arrays (a 0-d int tensor an int, as in torch); a uint8 tensor or array
    is a bool mask, with torch's deprecation warning; float indices are refused with a clear
    message."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for i in items:
        if isinstance(i, TensorBase):
            i = i._data
            if i.ndim and i.dtype.kind in "iu" and i.dtype not in _INDEX_DTYPES:
                raise IndexError(f"getitem: tensors used as indices must be int64, int32, uint8 "
                                 f"or bool (as in torch), got {i.dtype}")
            if i.ndim == 0 and i.dtype.kind in "iu" and i.dtype != np.uint8:
                i = int(i)
        if isinstance(i, np.ndarray) and i.dtype == np.uint8:
            warnings.warn("indexing with dtype uint8 is deprecated (as in torch): the index is "
                          "read as a bool mask; use a bool tensor", UserWarning, stacklevel=3)
            i = i.astype(bool)
        if isinstance(i, list):
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu":
            i = int(i)
        if isinstance(i, (float, np.floating)) or (isinstance(i, np.ndarray)
                                                   and i.dtype.kind == "f"):
            raise OpError(f"getitem: index {i!r} is a float; tensors are indexed by ints, "
                          f"slices, None, bool masks or integer arrays (shape {shape})")
        out.append(i)
    return tuple(out)
