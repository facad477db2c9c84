"""The element-wise math methods of Tensor (`MathMethods`, a mixin Tensor inherits) and the
same ops as functions (`tgx.sin(x)`, `tgx.lerp(a, b, w)`, ...), torch's names and semantics.

sin, cos, log2, exp2, log10, log1p, expm1 (float32 for int and bool inputs), logaddexp,
floor, ceil, round(decimals=0), trunc, sign (zero gradient, integer dtypes kept), lerp; isnan,
isinf, isfinite, isclose (bool results, no gradient). The primitives live in ops_math.py; neg,
reciprocal (float32 for int and bool inputs, as torch), square and addmm (beta * x + alpha *
mat1 @ mat2) are compositions of other ops.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import ops
from ..ops import math_ops as ops_math
from ..autograd import OpError
from ..core.tensor_base import TensorBase
from ..ops.dtypes import refuse_unsigned


def _floating(name, *xs):
    """torch's refusal, as a TypeError: logaddexp, lerp, round(decimals) need floats."""
    for x in xs:
        if isinstance(x, TensorBase) and x.dtype.kind != "f":
            raise TypeError(f"{name}: needs floating-point tensors, got {x.dtype}")


def _operand_error(symbol, a, b, what):
    """One line naming the operator and both operands' dtypes (or Python types)."""
    def kind(x):
        return str(x.dtype) if hasattr(x, "dtype") else type(x).__name__
    return TypeError(f"{symbol}: {what}; got {kind(a)} and {kind(b)}")


def _operands(symbol, a, b):
    """a and b promoted to one dtype (torch's rule), or the operator's one-line refusal."""
    for x in (a, b):
        if not isinstance(x, (TensorBase, numbers.Number, np.ndarray, np.generic)):
            raise _operand_error(symbol, a, b, "expected Tensors, arrays or numbers")
    return ops.promote((a, b))


def _division(op, symbol, a, b):
    return op.apply(*_operands(symbol, a, b))


def _shift(fn, symbol, a, b):
    """<< and >> on integer tensors (torch refuses float and bool operands)."""
    x, y = _operands(symbol, a, b)
    refuse_unsigned(symbol, x)
    if x.dtype.kind not in "iu":
        raise _operand_error(symbol, a, b, "needs integer tensors")
    try:
        return x._op_class._from_op(fn(x._data, y._data), None)
    except ValueError as err:
        raise OpError(f"{symbol}: {ops.explain_broadcast([x._data, y._data])}") from err


def _bool_result(x, data):
    return x._op_class._from_op(data, None)


class MathMethods:
    """Element-wise math; mixed into Tensor (every method works on a Tensor)."""

    __slots__ = ()

    def sin(self):
        return ops_math.Sin.apply(self)

    def cos(self):
        return ops_math.Cos.apply(self)

    def log2(self):
        return ops_math.Log2.apply(self)

    def log10(self):
        return ops_math.Log10.apply(self)

    def exp2(self):
        return ops_math.Exp2.apply(self)

    def logaddexp(self, other):
        _floating("logaddexp", self, other)
        return ops_math.LogAddExp.apply(*ops.promote((self, other)))

    def floor(self):
        return ops_math.Floor.apply(self)

    def ceil(self):
        return ops_math.Ceil.apply(self)

    def trunc(self):
        return ops_math.Trunc.apply(self)

    def round(self, decimals=0):
        if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
            raise TypeError(f"round: decimals must be an int, got {decimals!r}")
        if decimals:
            _floating("round(decimals)", self)
        return ops_math.Round.apply(self, decimals=int(decimals))

    def sign(self):
        return ops_math.Sign.apply(self)

    def lerp(self, end, weight):
        """self + weight * (end - self); weight a number or a tensor (broadcast)."""
        _floating("lerp", self, end, weight)
        if isinstance(weight, TensorBase):
            a, b, w = ops.promote((self, end, weight))
        else:
            a, b = ops.promote((self, end))
            w = float(weight)
        return ops_math.Lerp.apply(a, b, w)

    def isnan(self):
        d = self._data
        return _bool_result(self, np.isnan(d) if d.dtype.kind == "f" else np.zeros(d.shape, bool))

    def isinf(self):
        d = self._data
        return _bool_result(self, np.isinf(d) if d.dtype.kind == "f" else np.zeros(d.shape, bool))

    def isfinite(self):
        d = self._data
        return _bool_result(self, np.isfinite(d) if d.dtype.kind == "f" else np.ones(d.shape, bool))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol * |other| element-wise (inf equals inf of its sign)."""
        a, b = ops.promote((self, other))
        return _bool_result(a, np.isclose(a._data, b._data, rtol=rtol, atol=atol,
                                          equal_nan=equal_nan))

    def log1p(self):
        """log(1 + x), exact near 0 (int and bool inputs give float32)."""
        return ops_math.Log1p.apply(self)

    def expm1(self):
        """e^x - 1, exact near 0 (int and bool inputs give float32)."""
        return ops_math.Expm1.apply(self)

    def neg(self):
        """-x (a bool tensor is refused, as in torch: use ~x)."""
        return -self

    negative = neg

    def reciprocal(self):
        """1 / x; int and bool inputs give float32 (true division), as in torch."""
        return 1 / self

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode "floor" or "trunc" rounds the quotient (in the
        operands' promoted dtype, a zero gradient), as torch.div."""
        if rounding_mode is None:
            return ops.Div.apply(self, other)
        if rounding_mode not in ("floor", "trunc"):
            raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                             f"{rounding_mode!r}")
        return ops_math.DivRounded.apply(*_operands("div", self, other),
                                         rounding_mode=rounding_mode)

    divide = div

    def true_divide(self, other):
        return ops.Div.apply(self, other)

    def multiply(self, other):
        return ops.Mul.apply(self, other)

    def subtract(self, other, *, alpha=1):
        return ops.Sub.apply(self, other if alpha == 1 else other * alpha)

    # -- integer-style division and shifts, as torch: `//` floors, `%` takes b's sign ---------
    def floor_divide(self, other):
        """floor(self / other) in the operands' promoted dtype (int // int is int64); no
        gradient (torch has none)."""
        return _division(ops_math.FloorDivide, "//", self, other)

    def remainder(self, other):
        """self - floor(self / other) * other: Python's %, with other's sign."""
        return _division(ops_math.Remainder, "%", self, other)

    def fmod(self, other):
        """self - trunc(self / other) * other: C's fmod, with self's sign."""
        return _division(ops_math.Fmod, "fmod", self, other)

    def __floordiv__(self, other):
        return _division(ops_math.FloorDivide, "//", self, other)

    def __rfloordiv__(self, other):  # other // self
        return _division(ops_math.FloorDivide, "//", other, self)

    def __mod__(self, other):
        return _division(ops_math.Remainder, "%", self, other)

    def __rmod__(self, other):  # other % self
        return _division(ops_math.Remainder, "%", other, self)

    def __getattr__(self, name):
        # only reached when the attribute is missing: name the PyTorch API the code asked for
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"'Tensor' object has no attribute {name!r}: torch.Tensor.{name} "
                             f"is not available in tinygradx (docs/pytorch-code.md lists what "
                             f"is)", name=name, obj=self)

    def __pos__(self):
        """+x: x itself, as torch (a bool tensor is refused there too)."""
        if self.dtype.kind == "b":
            raise TypeError("+x: unary plus is not defined for bool tensors (as in PyTorch)")
        return self

    def __abs__(self):
        """abs(x), as x.abs() (a bool tensor is refused, as in PyTorch)."""
        if self.dtype.kind == "b":
            raise TypeError("abs: not defined for bool tensors (as in PyTorch)")
        return self.abs()

    def __lshift__(self, other):
        return _shift(np.left_shift, "<<", self, other)

    def __rlshift__(self, other):  # other << self
        return _shift(np.left_shift, "<<", other, self)

    def __rshift__(self, other):
        return _shift(np.right_shift, ">>", self, other)

    def __rrshift__(self, other):  # other >> self
        return _shift(np.right_shift, ">>", other, self)

    def bitwise_left_shift(self, other):
        return _shift(np.left_shift, "<<", self, other)

    def bitwise_right_shift(self, other):
        return _shift(np.right_shift, ">>", self, other)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """beta * self + alpha * (mat1 @ mat2) for matrices mat1 (n, m) and mat2 (m, p); self
        broadcasts to (n, p); beta=0 ignores self (NaNs in it included), as torch."""
        for t in (mat1, mat2):
            if not isinstance(t, TensorBase):
                raise TypeError(f"addmm: expected Tensors, got {type(t).__name__}")
        a, b = mat1, mat2
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            raise OpError(f"addmm: mat1 and mat2 must be matrices that chain, (n, m) and "
                          f"(m, p); got shapes {a.shape} and {b.shape}")
        if not self.dtype == a.dtype == b.dtype:
            raise TypeError(f"addmm: input, mat1 and mat2 must have one dtype (as in torch), "
                            f"got {self.dtype}, {a.dtype} and {b.dtype}")
        out = (a.shape[0], b.shape[1])
        if self.ndim > 2 or any(s not in (1, o) for s, o in zip(self.shape[::-1], out[::-1],
                                                                 strict=False)):
            raise OpError(f"addmm: input of shape {self.shape} does not broadcast to the "
                          f"product's shape {out}")
        prod = a @ b if alpha == 1 else (a @ b) * alpha
        if beta == 0:
            if self.requires_grad:   # a zero gradient for input, as torch (not x * 0: NaN)
                return prod + self.masked_fill(np.ones((), bool), 0)
            return prod
        return prod + (self if beta == 1 else self * beta)


# the same ops as functions of tensors: tgx.sin(x), tgx.lerp(input, end, weight), ...
def sin(input):
    """sin(x) element-wise."""
    return input.sin()


def cos(input):
    """cos(x) element-wise."""
    return input.cos()


def log2(input):
    """log2(x) element-wise."""
    return input.log2()


def log10(input):
    """log10(x) element-wise."""
    return input.log10()


def exp2(input):
    """2**x element-wise."""
    return input.exp2()


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow, broadcasting."""
    return input.logaddexp(other)


def floor(input):
    """The largest integer <= x (zero gradient)."""
    return input.floor()


def ceil(input):
    """The smallest integer >= x (zero gradient)."""
    return input.ceil()


def trunc(input):
    """x rounded toward zero (zero gradient)."""
    return input.trunc()


def round(input, decimals=0):
    """x rounded to `decimals` places, halves to even (zero gradient)."""
    return input.round(decimals=decimals)


def sign(input):
    """-1, 0 or 1 element-wise (zero gradient)."""
    return input.sign()


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    return input.lerp(end, weight)


def isnan(input):
    """True where x is NaN."""
    return input.isnan()


def isinf(input):
    """True where x is +-inf."""
    return input.isinf()


def isfinite(input):
    """True where x is neither NaN nor +-inf."""
    return input.isfinite()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| element-wise."""
    return input.isclose(other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def log1p(input):
    """log(1 + x) element-wise, exact near 0."""
    return input.log1p()


def expm1(input):
    """e^x - 1 element-wise, exact near 0."""
    return input.expm1()


def neg(input):
    """-x element-wise."""
    return input.neg()


negative = neg


def reciprocal(input):
    """1 / x element-wise (int and bool inputs give float32)."""
    return input.reciprocal()


def rsqrt(input):
    """1 / sqrt(x) element-wise (int and bool inputs give float32)."""
    return input.rsqrt()


def square(input):
    """x * x element-wise (the dtype of x)."""
    return input.square()


def floor_divide(input, other):
    """input // other (floor; int // int is int64), no gradient, as torch.floor_divide."""
    return _division(ops_math.FloorDivide, "floor_divide", input, other)


def remainder(input, other):
    """input % other: Python's modulo, the sign of other (torch.remainder)."""
    return _division(ops_math.Remainder, "remainder", input, other)


def fmod(input, other):
    """C's fmod: the sign of input (torch.fmod)."""
    return _division(ops_math.Fmod, "fmod", input, other)
