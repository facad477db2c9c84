"""torch's Tensor methods that are another spelling of an op tinygradx has (`AliasMethods`, a
mixin Tensor inherits): the products by rank (`mm`, `bmm`, `mv`, `dot`, `inner`, `outer`/`ger`,
the fused `add*` forms), comparisons and logic under their long names (`greater`,
`logical_and`, ...), the dtype methods (`byte`, `char`, `short`; `bfloat16` and the complex
ones refused with the reason), size and layout queries (`nelement`, `element_size`,
`nbytes`, ...). Each is a composition of existing ops, so it needs no Function and
differentiates as they do.

torch's products take operands of one dtype (`mm`, `bmm`, `mv`, `dot`, `@`: "expected both to
have the same dtype"); so do these, instead of promoting them silently.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..autograd import OpError
from ..core.tensor_base import TensorBase
from ..ops.dtypes import int8, int16, uint8
from ..ops.dtypes import refuse_unsigned


def _tensors(name, *xs):
    for x in xs:
        if not isinstance(x, TensorBase):
            raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__} (make one with "
                            f"tgx.tensor(...))")


def same_dtype(name, *xs):
    """torch's products refuse operands of different dtypes (no promotion)."""
    _tensors(name, *xs)
    first = xs[0].dtype
    for x in xs[1:]:
        if x.dtype != first:
            raise TypeError(f"{name}: expected operands of one dtype (as torch: no promotion), "
                            f"got {first} and {x.dtype}; convert one, e.g. b.to(a.dtype)")


def _ranks(name, shapes, want):
    if tuple(len(s) for s in shapes) != want:
        what = (f"two {want[0]}-d tensors" if want[0] == want[1] else
                f"a {want[0]}-d and a {want[1]}-d tensor")
        raise OpError(f"{name}: expects {what}, got shapes "
                      f"{' and '.join(str(tuple(s)) for s in shapes)}")


def _scaled(x, k):
    return x if k == 1 else x * k


def _fused(name, self, product, beta, alpha):
    """beta * self + alpha * product, self broadcast to the product's shape (torch's addmv,
    addr, baddbmm, addbmm); beta = 0 ignores self (NaNs included) with a zero gradient."""
    try:
        shape = np.broadcast_shapes(self.shape, product.shape)
    except ValueError:
        shape = None
    if shape != tuple(product.shape):
        raise OpError(f"{name}: input of shape {tuple(self.shape)} does not broadcast to the "
                      f"product's shape {tuple(product.shape)}")
    prod = _scaled(product, alpha)
    if beta == 0:
        return prod + self.masked_fill(np.ones((), bool), 0) if self.requires_grad else prod
    return prod + _scaled(self, beta)


class AliasMethods:
    """Products by rank, long comparison names, dtype methods, size queries."""

    __slots__ = ()

    # -- products by rank ----------------------------------------------------------------
    def mm(self, mat2):
        """(n, m) @ (m, p): two matrices of one dtype."""
        same_dtype("mm", self, mat2)
        _ranks("mm", (self.shape, mat2.shape), (2, 2))
        return self @ mat2

    def bmm(self, mat2):
        """(b, n, m) @ (b, m, p): batches of matrices, no broadcasting."""
        same_dtype("bmm", self, mat2)
        _ranks("bmm", (self.shape, mat2.shape), (3, 3))
        if self.shape[0] != mat2.shape[0] or self.shape[2] != mat2.shape[1]:
            raise OpError(f"bmm: shapes {tuple(self.shape)} and {tuple(mat2.shape)} do not "
                          f"chain: expected (b, n, m) and (b, m, p)")
        return self @ mat2

    def mv(self, vec):
        """(n, m) @ (m,): a matrix and a vector."""
        same_dtype("mv", self, vec)
        _ranks("mv", (self.shape, vec.shape), (2, 1))
        return self @ vec

    def dot(self, other):
        """The dot product of two 1-d tensors of one size (0-d result)."""
        same_dtype("dot", self, other)
        _ranks("dot", (self.shape, other.shape), (1, 1))
        if self.shape != other.shape:
            raise OpError(f"dot: the vectors have sizes {self.shape[0]} and {other.shape[0]}")
        return self @ other

    vdot = dot                      # the same for real tensors (no complex conjugate)

    def inner(self, other):
        """The sum over the last dims of both: self.shape[:-1] + other.shape[:-1] (a number
        times a tensor when either is 0-d)."""
        same_dtype("inner", self, other)
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise OpError(f"inner: the last dims differ, {tuple(self.shape)} and "
                          f"{tuple(other.shape)}")
        rows = int(np.prod(other.shape[:-1]))
        lead = other.reshape(rows, other.shape[-1]).transpose(0, 1)       # (k, N)
        return (self @ lead).reshape(tuple(self.shape[:-1]) + tuple(other.shape[:-1]))

    def outer(self, vec2):
        """(n,) and (m,) -> (n, m), promoted as `*`."""
        _tensors("outer", vec2)
        _ranks("outer", (self.shape, vec2.shape), (1, 1))
        return self.unsqueeze(1) * vec2.unsqueeze(0)

    ger = outer

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        """beta * self + alpha * (mat @ vec)."""
        same_dtype("addmv", self, mat, vec)
        return _fused("addmv", self, mat.mv(vec), beta, alpha)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        """beta * self + alpha * outer(vec1, vec2)."""
        same_dtype("addr", self, vec1, vec2)
        return _fused("addr", self, vec1.outer(vec2), beta, alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta * self + alpha * bmm(batch1, batch2)."""
        same_dtype("baddbmm", self, batch1, batch2)
        return _fused("baddbmm", self, batch1.bmm(batch2), beta, alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta * self + alpha * sum_b batch1[b] @ batch2[b] (one matrix)."""
        same_dtype("addbmm", self, batch1, batch2)
        return _fused("addbmm", self, batch1.bmm(batch2).sum(0), beta, alpha)

    def addcmul(self, tensor1, tensor2, *, value=1):
        """self + value * tensor1 * tensor2 (broadcasting)."""
        _tensors("addcmul", tensor1, tensor2)
        return self + _scaled(tensor1 * tensor2, value)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """self + value * tensor1 / tensor2 (integer tensors refused, as torch)."""
        _tensors("addcdiv", tensor1, tensor2)
        if tensor1.dtype.kind != "f" and tensor2.dtype.kind != "f":
            raise TypeError("addcdiv: integer division of tensors is not supported (as in "
                            "torch); use floating-point tensors")
        return self + _scaled(tensor1 / tensor2, value)

    # -- comparisons and logic under torch's long names ----------------------------------
    def greater(self, other):
        return self > other

    def greater_equal(self, other):
        return self >= other

    def less(self, other):
        return self < other

    def less_equal(self, other):
        return self <= other

    def not_equal(self, other):
        return self != other

    def logical_and(self, other):
        """self and other are non-zero (bool)."""
        refuse_unsigned("logical_and", self, other)
        return self._op_class._from_op(np.logical_and(self._data, _data(other)), None)

    def logical_or(self, other):
        """self or other is non-zero (bool)."""
        refuse_unsigned("logical_or", self, other)
        return self._op_class._from_op(np.logical_or(self._data, _data(other)), None)

    def logical_xor(self, other):
        """exactly one of self and other is non-zero (bool)."""
        refuse_unsigned("logical_xor", self, other)
        return self._op_class._from_op(np.logical_xor(self._data, _data(other)), None)

    def logical_not(self):
        """self == 0 (bool)."""
        refuse_unsigned("logical_not", self)
        return self._op_class._from_op(np.logical_not(self._data), None)

    def bitwise_and(self, other):
        return self & other

    def bitwise_or(self, other):
        return self | other

    def bitwise_xor(self, other):
        return self ^ other

    def bitwise_not(self):
        """~self (bool or integer tensors)."""
        if self.dtype.kind not in "biu":
            raise TypeError(f"bitwise_not: needs a bool or integer tensor, got {self.dtype}")
        return ~self

    def clamp_min(self, min):
        return self.clamp(min=min)

    def clamp_max(self, max):
        return self.clamp(max=max)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Every |self - other| <= atol + rtol * |other| (a Python bool)."""
        _tensors("allclose", other)
        return bool(self.isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan).all())

    def equal(self, other):
        """The same shape and the same values (a Python bool; NaN is unequal to itself)."""
        _tensors("equal", other)
        return self.shape == other.shape and bool((self == other).all())

    def where(self, condition, other):
        """self where condition (a bool tensor), else other (torch's x.where(cond, y))."""
        cond = _data(condition)
        if cond.dtype != np.bool_:
            raise TypeError(f"where: condition must be a bool tensor, got dtype {cond.dtype}")
        return ops.Where.apply(self, other, cond=cond)

    # -- activations torch has as methods too --------------------------------------------
    def hardshrink(self, lambd=0.5):
        """x where |x| > lambd, else 0 (float tensors; lambd >= 0)."""
        if self.dtype.kind != "f":
            raise TypeError(f"hardshrink: not implemented for {self.dtype} tensors (as torch)")
        if lambd < 0:
            raise ValueError(f"hardshrink: lambd must be >= 0, got {lambd}")
        d = self._data
        return self.masked_fill((d >= -lambd) & (d <= lambd), 0)

    def prelu(self, weight):
        """x where x > 0, weight * x elsewhere; weight holds one slope or one per channel
        (dim 1, or the only dim of a 1-d input with one slope)."""
        _tensors("prelu", weight)
        if self.dtype.kind != "f":
            raise TypeError(f"prelu: not implemented for {self.dtype} tensors (as torch)")
        n = weight.numel()
        channels = self.shape[1] if self.ndim >= 2 else 1
        if weight.ndim > 1 or n not in (1, channels):
            raise OpError(f"prelu: mismatch of parameter numbers and input channel size: "
                          f"weight has {n} values, the input {channels} channels (dim 1)")
        w = (weight.reshape((n,) + (1,) * (self.ndim - 2)) if self.ndim >= 2 and n > 1
             else weight.reshape(()))
        return ops.Where.apply(self, self * w, cond=self._data > 0)

    # -- dtype methods -------------------------------------------------------------------
    def byte(self):
        """uint8."""
        return self.to(uint8)

    def char(self):
        """int8."""
        return self.to(int8)

    def short(self):
        """int16."""
        return self.to(int16)

    def bfloat16(self):
        raise TypeError("bfloat16: tinygradx tensors are numpy arrays and numpy has no bfloat16 "
                        "dtype; use float32 (x.float()) or float16 (x.half())")

    def cfloat(self):
        raise TypeError("cfloat: tinygradx has no complex dtypes (its tensors are real: floats, "
                        "integers, bool)")

    cdouble = chalf = cfloat

    def is_complex(self):
        """False: tinygradx has no complex dtypes."""
        return False

    def is_signed(self):
        """True for a signed dtype (floats and int8..int64), False for uint8 and bool."""
        return self.dtype.kind in "fi"

    def is_floating_point(self):
        """True for a floating-point dtype."""
        return self.dtype.kind == "f"

    # -- sizes, layout and predicates ----------------------------------------------------
    def nelement(self):
        """The element count (numel)."""
        return self._data.size

    def ndimension(self):
        """The number of dims (dim)."""
        return self._data.ndim

    def element_size(self):
        """Bytes per element."""
        return self._data.itemsize

    @property
    def itemsize(self):
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self):
        """Bytes of all elements."""
        return self._data.nbytes

    @property
    def is_cpu(self):
        """True: tinygradx computes on the CPU."""
        return True

    def is_inference(self):
        """False: tinygradx has no inference tensors (inference_mode is no_grad)."""
        return False

    def is_nonzero(self):
        """The truth of a one-element tensor (an error for any other size, as torch)."""
        if self._data.size != 1:
            raise RuntimeError(f"is_nonzero: a tensor with {self._data.size} elements has no "
                               f"single truth value (as torch: it needs exactly one)")
        return bool(self._data.reshape(()))

    def is_same_size(self, other):
        """Whether other has this shape."""
        _tensors("is_same_size", other)
        return tuple(self.shape) == tuple(other.shape)

    def reshape_as(self, other):
        """self.reshape(other.shape)."""
        return self.reshape(tuple(other.shape))

    def ravel(self):
        """self flattened to one dim."""
        return self.reshape(-1)

    def broadcast_to(self, size):
        """self expanded to size."""
        return self.expand(*size)

    def argwhere(self):
        """The indices of the non-zero elements, one row each: (n, ndim) int64."""
        return self.nonzero()

    def tile(self, *dims):
        """self repeated dims times along each dim (ones prepended to either side's dims, as
        torch.tile)."""
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        lead = len(dims) - self.ndim
        x = self.reshape((1,) * lead + tuple(self.shape)) if lead > 0 else self
        return x.repeat(*((1,) * max(0, -lead) + tuple(dims)))


def _data(x):
    return x._data if isinstance(x, TensorBase) else np.asarray(x)
