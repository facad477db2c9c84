"""The element-wise ops beyond the core's: one Function per op, forward and backward side by side.

The ops the seed's Transformer needs (add, sub, mul, div, a constant power, neg, exp, log, sqrt,
tanh, relu, cast, where, masked_fill) are the learner's core (`tinygradx/core/elementwise.py`);
they are re-exported here, so `ops.Add` is `core.elementwise.Add`. This module adds the rest of
the element-wise family (a tensor power, maximum/minimum, rsqrt, sigmoid, abs, erf, clamp). More
element-wise math is in math_ops.py, the fused ops in fused.py, the moving ones in movement.py,
and the faster versions of the core's ops in versions.py.
"""
from __future__ import annotations

import numpy as np

from ..core.elementwise import (Add, Cast, Div, Exp, Log, MaskedFill, Mul, Neg,  # noqa: F401
                                PowScalar, Relu, Sqrt, Sub, Tanh, Where, Binary, as_float,
                                explain_broadcast, promote)
from ..core.node import Function, OpError
from ..core.xp import ARRAYS, of, sigmoid, value
from ..fast._erf import erf as _erf, erf_grad as _erf_grad


def _put(xp, x, mask, fill):
    """x with `fill` where mask (a constant there: no gradient flows to x through it)."""
    return xp.where(mask, fill, x) if mask.any() else x



class Pow(Binary):
    """d(a**b) = (g*b*a**(b-1), g*a**b*log a), with torch's values at the edges: the first
    term is 0 where b == 0, the second 0 where a == 0 and b >= 0."""
    def forward(self, a, b):
        if a.dtype.kind == "b":
            raise OpError("not defined for two bool tensors (PyTorch refuses them too)")
        self.a, self.b = a, b
        if a.dtype.kind in "iu" and np.any(b < 0):
            self.out = _int_pow(a, b)
        else:
            self.out = a ** b
        return self.out

    def backward(self, g):
        xp, a, b = of(g), self.a, self.b
        ad, bd = value(a), value(b)           # for the masks only (constants)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                # b * a**(b-1), taken as 0 where b == 0 (so 0**0 has gradient 0, as torch).
                # It is 0 there by itself except where a**(b-1) is 0**-1 = inf (or a is NaN):
                # there the base becomes 1 and the term 0, so no 0 * inf turns the next
                # derivative into NaN; elsewhere at b == 0 the formula stays, and its
                # derivative in b is the true one (1/a), not 0.
                edge = (bd == 0) & ((ad == 0) | np.isnan(ad))
                ga = g * _put(xp, b * _put(xp, a, edge, 1.0) ** (b - 1), edge, 0.0)
            if self.needs_input_grad[1]:
                # a**b log a, taken as 0 where a == 0 and b >= 0; 0**b with b < 0 gives -inf
                # and a negative base NaN, as in torch
                edge = (ad == 0) & (bd >= 0)
                gb = g * _put(xp, self.out * xp.log(_put(xp, a, edge, 1.0)), edge, 0.0)
        return ga, gb


def _int_pow(a, b):
    """Integer a ** b with negative exponents as torch's tensors (C's integer power): 1 ** b
    is 1, (-1) ** b is +-1, anything else ** negative is 0 (0 ** -1 included)."""
    neg = b < 0
    out = a ** np.where(neg, 0, b)
    at_neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, at_neg, out).astype(out.dtype, copy=False)



class Maximum(Binary):
    """The larger input gets g; on ties each gets g/2 (as PyTorch)."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.maximum(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)        # which input wins: a constant
        wa = (a > b) + 0.5 * (a == b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)


class Minimum(Binary):
    """The smaller input gets g; on ties each gets g/2."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.minimum(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)
        wa = (a < b) + 0.5 * (a == b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)


class Rsqrt(Function):
    """d(x^-1/2) = -g x^-3/2 / 2"""
    def forward(self, x):
        x = as_float(x)
        self.out = 1.0 / np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * (-0.5 * self.out ** 3)


class Sigmoid(Function):
    """d(s(x)) = g*s*(1-s)"""
    def forward(self, x):
        self.out = sigmoid(as_float(x))           # xp.sigmoid: no overflow at any x
        return self.out

    def backward(self, g):
        return g * self.out * (1 - self.out)


class Abs(Function):
    """d|x| = g*sign(x) (0 at 0)"""
    def forward(self, x):
        self.x = x
        return np.abs(x)

    def backward(self, g):
        return g * np.sign(value(self.x))


class Erf(Function):
    """d(erf x) = g * 2/sqrt(pi) exp(-x^2)"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return _erf(x)

    def backward(self, g):
        xp = of(g)
        if xp is not ARRAYS:                   # recorded: erf' written with exp
            return g * (-(self.x * self.x)).exp() * (2 / np.sqrt(np.pi))
        return g * _erf_grad(self.x)


class Clamp(Function):
    """g passes where min <= x <= max."""
    def forward(self, x, min=None, max=None):
        self.x, self.lo, self.hi = x, min, max
        return np.clip(x, min, max)

    def _keep(self, x):
        keep = np.ones(x.shape, dtype=bool)
        if self.lo is not None:
            keep &= x >= self.lo
        if self.hi is not None:
            keep &= x <= self.hi
        return keep

    def backward(self, g):
        return g * self._keep(value(self.x))

