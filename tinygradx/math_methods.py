"""The element-wise math methods of Tensor (`MathMethods`, a mixin Tensor inherits) and the
same ops as functions (`tgx.sin(x)`, `tgx.lerp(a, b, w)`, ...), torch's names and semantics.

sin, cos, log2, exp2, log10 (float32 for int and bool inputs), logaddexp, floor, ceil,
round(decimals=0), trunc, sign (zero gradient, integer dtypes kept), lerp; isnan, isinf,
isfinite, isclose (bool results, no gradient). The primitives live in ops_math.py.
"""
from __future__ import annotations

import numpy as np

from . import autograd, ops, ops_math


def _floating(name, *xs):
    """torch's refusal, as a TypeError: logaddexp, lerp, round(decimals) need floats."""
    for x in xs:
        if isinstance(x, autograd.Tensor) and x.dtype.kind != "f":
            raise TypeError(f"{name}: needs floating-point tensors, got {x.dtype}")


def _bool_result(data):
    return autograd.Tensor._from_op(data, None)


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
        if isinstance(weight, autograd.Tensor):
            a, b, w = ops.promote((self, end, weight))
        else:
            a, b = ops.promote((self, end))
            w = float(weight)
        return ops_math.Lerp.apply(a, b, w)

    def isnan(self):
        d = self._data
        return _bool_result(np.isnan(d) if d.dtype.kind == "f" else np.zeros(d.shape, bool))

    def isinf(self):
        d = self._data
        return _bool_result(np.isinf(d) if d.dtype.kind == "f" else np.zeros(d.shape, bool))

    def isfinite(self):
        d = self._data
        return _bool_result(np.isfinite(d) if d.dtype.kind == "f" else np.ones(d.shape, bool))

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol * |other| element-wise (inf equals inf of its sign)."""
        a, b = ops.promote((self, other))
        return _bool_result(np.isclose(a._data, b._data, rtol=rtol, atol=atol,
                                       equal_nan=equal_nan))


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
