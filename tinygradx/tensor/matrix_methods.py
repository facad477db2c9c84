"""torch's Tensor methods on diagonals, blocks and slices (`MatrixMethods`, a mixin Tensor
inherits): diag, diag_embed, diagflat, trace, kron, cross, dist, renorm, rot90, fliplr,
flipud, diff, tensor_split, hsplit/vsplit/dsplit, fill_diagonal_, sum_to_size, and the
integer gcd and lcm (with their in-place twins where torch has them).

All are compositions of the engine's ops: a diagonal placed into zeros is index.py's
DiagonalAdjoint (whose own derivative reads the diagonal back), kron is a broadcast product
and a reshape, cross two products of selected slices, a split a list of slices. So each has the
gradients and graph pictures of the ops it is written with.
"""
from __future__ import annotations

import numpy as np

from ..autograd import STATE, OpError
from ..core.dims import check_dim
from ..core.tensor_base import TensorBase
from ..ops import index as ops_index, movement
from ..ops.dtypes import refuse_unsigned, result_type


def _tensor(name, x):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


def _slices(x, dim, bounds):
    """x cut along dim at the given bounds (views)."""
    lead = (slice(None),) * dim
    edges = [0, *bounds, x.shape[dim]]
    return tuple(x[lead + (slice(a, max(a, b)),)] for a, b in zip(edges[:-1], edges[1:],
                                                                  strict=True))



def _owned(t, other):
    """t, copied when it needs no gradient, `other` does and a graph is recorded: the product
    keeps t for backward, and torch's composite keeps its own (an in-place change of t after
    the call is allowed there, so it is here; a copy only in that case)."""
    if t.requires_grad or not other.requires_grad or not STATE.grad_enabled:
        return t
    return type(t)(t._data.copy())

class MatrixMethods:
    """Diagonals, blocks, differences and splits; mixed into Tensor."""

    __slots__ = ()

    # -- diagonals ------------------------------------------------------------------------
    def diag(self, diagonal=0):
        """A 1-d tensor: the square matrix with it on the diagonal-th diagonal; a 2-d one: its
        diagonal-th diagonal (as torch.diag)."""
        if self.ndim == 1:
            n = self.shape[0] + abs(diagonal)
            return ops_index.DiagonalAdjoint.apply(self, shape=(n, n), args=(diagonal, 0, 1))
        if self.ndim == 2:
            return self.diagonal(diagonal)
        raise OpError(f"diag: expects a 1-d or 2-d tensor, got {self.ndim} dims")

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        """The last dim as the offset-th diagonal of two new dims dim1, dim2 (zeros around)."""
        n = self.ndim + 1
        d1, d2 = check_dim("diag_embed", dim1, n), check_dim("diag_embed", dim2, n)
        if d1 == d2:
            raise OpError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
        size = (self.shape[-1] if self.ndim else 1) + abs(offset)
        batch = iter(self.shape[:-1])
        shape = tuple(size if i in (d1, d2) else next(batch) for i in range(n))
        x = self if self.ndim else self.reshape(1)
        return ops_index.DiagonalAdjoint.apply(x, shape=shape, args=(offset, d1, d2))

    def diagflat(self, offset=0):
        """The flattened tensor on the offset-th diagonal of a square matrix."""
        return self.reshape(-1).diag(offset)

    def trace(self):
        """The sum of the diagonal of a matrix."""
        if self.ndim != 2:
            raise OpError(f"trace: expected a matrix, got a {self.ndim}-d tensor")
        refuse_unsigned("trace", self)
        return self.diagonal().sum()

    def fill_diagonal_(self, fill_value, wrap=False):
        """In place: the main diagonal (all indices equal) set to fill_value; a tall matrix
        with wrap=True starts it again every n+1 rows (as torch)."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise OpError(f"fill_diagonal_: expects a 2-d tensor, or all dims of one size; got "
                          f"shape {tuple(self.shape)}")
        n = min(self.shape)
        rows = np.arange(n)
        if self.ndim == 2 and wrap and self.shape[0] > self.shape[1] + 1:
            step = self.shape[1] + 1
            rows = np.concatenate([np.arange(s, min(s + self.shape[1], self.shape[0]))
                                   for s in range(0, self.shape[0], step)])
            cols = np.concatenate([np.arange(min(self.shape[1], self.shape[0] - s))
                                   for s in range(0, self.shape[0], step)])
            key = (rows, cols)
        else:
            key = (rows,) * self.ndim
        value = self._op_class._from_op(np.asarray(fill_value, self.dtype), None)
        return self._inplace("fill_diagonal_", lambda t, v: movement.Setitem.apply(
            t, v, index=key), value)

    # -- products ---------------------------------------------------------------------------
    def kron(self, other):
        """The Kronecker product: every element of self times a copy of other."""
        other = _tensor("kron", other)
        n = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (n - self.ndim) + tuple(self.shape))
        b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
        pa = tuple(v for s in a.shape for v in (s, 1))          # (a0, 1, a1, 1, ...)
        pb = tuple(v for s in b.shape for v in (1, s))          # (1, b0, 1, b1, ...)
        a, b = _owned(a, b), _owned(b, a)
        out = a.reshape(pa) * b.reshape(pb)
        return out.reshape(tuple(x * y for x, y in zip(a.shape, b.shape, strict=True)))

    def cross(self, other, dim=None):
        """The cross product of 3-vectors along dim (default: the first dim of size 3, as
        torch.cross), broadcasting."""
        refuse_unsigned("cross", self)
        other = _tensor("cross", other)
        if self.ndim != other.ndim:
            raise OpError(f"cross: inputs must have the same number of dims (as torch), got "
                          f"{tuple(self.shape)} and {tuple(other.shape)}")
        shape = np.broadcast_shapes(tuple(self.shape), tuple(other.shape))
        if dim is None:
            dim = next((i for i, s in enumerate(shape) if s == 3), None)
            if dim is None:
                raise OpError(f"cross: no dim of size 3 in the shape {shape}")
        d = check_dim("cross", dim, len(shape))
        if shape[d] != 3:
            raise OpError(f"cross: dim {dim} has size {shape[d]}, expected 3")
        a = self.expand(*shape) if tuple(self.shape) != shape else self
        b = other.expand(*shape) if tuple(other.shape) != shape else other
        a0, a1, a2 = a.unbind(d)
        b0, b1, b2 = b.unbind(d)
        return movement.Stack.apply(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0,
                                    dim=d)

    def dist(self, other, p=2):
        """The p-norm of self - other (p = 0: how many elements differ)."""
        refuse_unsigned("dist", self)
        diff = self - _tensor("dist", other)
        if p == 0:              # a count: a zero gradient, still a function of the inputs
            count = (diff != 0).sum().to(diff.dtype)
            return diff.masked_fill(np.ones((), bool), 0).sum() + count
        return diff.norm(p)

    def renorm(self, p, dim, maxnorm):
        """Each slice along dim whose p-norm exceeds maxnorm scaled down to it."""
        d = check_dim("renorm", dim, self.ndim)
        if self.ndim < 2:
            raise OpError("renorm: needs at least 2 dims")
        other = tuple(i for i in range(self.ndim) if i != d)
        norm = self.norm(p, dim=other, keepdim=True)
        over = norm._data > maxnorm
        factor = (maxnorm / (norm + 1e-7)).masked_fill(~over, 1.0)
        return self * factor

    def gcd(self, other):
        """The greatest common divisor, element-wise (integer tensors)."""
        return self._integer_op("gcd", np.gcd, other)

    def lcm(self, other):
        """The least common multiple, element-wise (integer tensors)."""
        return self._integer_op("lcm", np.lcm, other)

    def _integer_op(self, name, fn, other):
        other = _tensor(name, other)
        refuse_unsigned(name, self, other)
        dt = result_type(self, other)
        if dt.kind not in "iu":
            raise TypeError(f"{name}: not implemented for {dt} tensors (integer tensors only, "
                            f"as torch)")
        return self._op_class._from_op(fn(self._data.astype(dt), other._data.astype(dt)), None)

    def gcd_(self, other):
        return self._inplace("gcd_", lambda t, o: t.gcd(o), other)

    def lcm_(self, other):
        return self._inplace("lcm_", lambda t, o: t.lcm(o), other)

    def renorm_(self, p, dim, maxnorm):
        # from a copy: the norm's node saves the old value, which the write changes
        return self._inplace("renorm_", lambda t: t.clone().renorm(p, dim, maxnorm))

    # -- reordering and differences ---------------------------------------------------------
    def rot90(self, k=1, dims=(0, 1)):
        """A rotation by 90 degrees k times in the plane of dims (from the first toward the
        second)."""
        if len(dims) != 2:
            raise OpError(f"rot90: dims must hold two dims, got {dims}")
        d0, d1 = (check_dim("rot90", d, self.ndim) for d in dims)
        if d0 == d1:
            raise OpError(f"rot90: the two dims must differ, got {dims}")
        k %= 4
        if k == 0:
            return self.clone()
        if k == 2:
            return self.flip(d0, d1)
        return self.flip(d1 if k == 1 else d0).transpose(d0, d1)

    def fliplr(self):
        """Reversed along dim 1 (at least 2 dims)."""
        if self.ndim < 2:
            raise OpError("fliplr: input must be >= 2-d")
        return self.flip(1)

    def flipud(self):
        """Reversed along dim 0 (at least 1 dim)."""
        if self.ndim < 1:
            raise OpError("flipud: input must be >= 1-d")
        return self.flip(0)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The n-th forward difference along dim (x[i+1] - x[i]; for bool, x[i+1] != x[i]),
        prepend and append joined on first."""
        refuse_unsigned("diff", self)
        d = check_dim("diff", dim, self.ndim)
        if self.ndim == 0:
            raise OpError("diff: expects a tensor with at least 1 dim")
        parts = [t for t in (prepend, self, append) if t is not None]
        x = movement.Cat.apply(*parts, dim=d) if len(parts) > 1 else self
        lead = (slice(None),) * d
        for _ in range(n):
            a, b = x[lead + (slice(1, None),)], x[lead + (slice(0, -1),)]
            x = (a != b) if x.dtype.kind == "b" else a - b
        return self.clone() if x is self else x                  # n=0: a copy, as torch

    # -- splits -----------------------------------------------------------------------------
    def tensor_split(self, indices_or_sections, dim=0):
        """Views along dim: n nearly equal parts (the first ones one larger), or cut at the
        given indices."""
        d = check_dim("tensor_split", dim, self.ndim)
        spec = indices_or_sections
        if isinstance(spec, TensorBase) and spec._data.dtype != np.int64:
            raise TypeError(f"tensor_split: a tensor of indices or sections must be int64 (as "
                            f"torch), got {spec._data.dtype}")
        if isinstance(spec, TensorBase):
            spec = spec._data.tolist()
        n = self.shape[d]
        if isinstance(spec, (int, np.integer)):
            if spec <= 0:
                raise OpError(f"tensor_split: number of sections must be larger than 0, got "
                              f"{spec}")
            size, extra = divmod(n, spec)
            bounds = np.cumsum([size + (i < extra) for i in range(spec)])[:-1].tolist()
        else:
            bounds = [int(b) for b in spec]
        return _slices(self, d, [min(max(b if b >= 0 else b + n, 0), n) for b in bounds])

    def _split_at(self, name, dim, spec, min_dims):
        if self.ndim < min_dims:
            raise OpError(f"{name}: requires a tensor with at least {min_dims} dims, got "
                          f"{self.ndim}")
        if isinstance(spec, (int, np.integer)) and (spec == 0 or self.shape[dim] % spec):
            raise OpError(f"{name}: dim {dim} of size {self.shape[dim]} is not divisible by "
                          f"the split size {spec}")
        return self.tensor_split(spec, dim)

    def hsplit(self, indices_or_sections):
        """tensor_split along dim 1 (dim 0 for a 1-d tensor), equal parts only."""
        return self._split_at("hsplit", 1 if self.ndim > 1 else 0, indices_or_sections, 1)

    def vsplit(self, indices_or_sections):
        """tensor_split along dim 0 of a tensor with 2+ dims, equal parts only."""
        return self._split_at("vsplit", 0, indices_or_sections, 2)

    def dsplit(self, indices_or_sections):
        """tensor_split along dim 2 of a tensor with 3+ dims, equal parts only."""
        return self._split_at("dsplit", 2, indices_or_sections, 3)

    def sum_to_size(self, *size):
        """The sum over the dims that size broadcasts (the adjoint of expanding to self's
        shape)."""
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        try:
            if np.broadcast_shapes(size, tuple(self.shape)) != tuple(self.shape):
                raise ValueError
        except ValueError:
            raise OpError(f"sum_to_size: size {size} is not expandable to the tensor's shape "
                          f"{tuple(self.shape)}") from None
        if self.ndim == 0:
            return self.sum()                          # a new tensor even here, as torch's
        lead = self.ndim - len(size)
        x = self.sum(tuple(range(lead))) if lead else self
        ones = tuple(i for i, s in enumerate(size) if s == 1 and x.shape[i] != 1)
        return x.sum(ones, keepdim=True) if ones else x
