"""Element-wise ops that read a float's parts or treat NaN and infinity on purpose: copysign,
fmax/fmin (a NaN loses), frexp's mantissa, nan_to_num, heaviside and nextafter. One Function
per op, forward and backward side by side. The caller promotes operands to one dtype
(ops.promote) and turns int inputs into floats where torch does.

Their derivatives are piecewise constants (a sign, a power of two, a mask), read as saved:
constants of the formula on both carriers, so the second derivative is zero, as torch's.
heaviside has none in torch (its backward raises); here too. nextafter's is torch's: g for
the first input, 0 for the second.
"""
from __future__ import annotations

import numpy as np

from ..core.elementwise import Binary
from ..core.node import Function, OpError
from ..core.xp import of, value


class Copysign(Function):
    """|a| with the sign (bit) of b: d = (g*out/a, 0), the first 0 where a == 0 (torch's
    formula: +-1, and NaN at an infinite or NaN a)."""
    def forward(self, a, b):
        out = np.copysign(a, b)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.s = np.where(a == 0, 0, out / np.where(a == 0, 1, a)).astype(out.dtype)
        return out

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (g * self.s if na else None), (of(g).zeros_like(g) if nb else None)


class Fmax(Binary):
    """The larger of a and b, a NaN ignored (NaN only where both are): a gets g where a >= b
    or b is NaN, b elsewhere (ties go to a, as torch's fmax)."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.fmax(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)
        with np.errstate(invalid="ignore"):
            to_a = (a >= b) | np.isnan(b)
        return _split(g, to_a, self.needs_input_grad)


class Fmin(Binary):
    """The smaller of a and b, a NaN ignored: a gets g where a <= b or b is NaN, b elsewhere."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.fmin(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)
        with np.errstate(invalid="ignore"):
            to_a = (a <= b) | np.isnan(b)
        return _split(g, to_a, self.needs_input_grad)


def _split(g, to_a, needs):
    """g to the first input where to_a, to the second elsewhere (broadcast shapes kept)."""
    xp = of(g)
    return (xp.where(to_a, g, 0.0) if needs[0] else None,
            xp.where(to_a, 0.0, g) if needs[1] else None)


class FrexpMantissa(Function):
    """The mantissa m of x = m * 2**e (0.5 <= |m| < 1, m = x at 0, inf and NaN): d = g / 2**e
    (e a constant, as torch's frexp)."""
    op_name = "frexp"

    def forward(self, x):
        if x.dtype.kind != "f":
            raise OpError(f"only supports floating-point dtypes, got {x.dtype} (as torch)")
        m, e = np.frexp(x)
        self.scale = np.ldexp(np.ones((), x.dtype), -e).astype(x.dtype)
        return m

    def backward(self, g):
        return g * self.scale


class NanToNum(Function):
    """x with NaN, +inf and -inf replaced (by 0 and the dtype's largest and lowest value
    unless given): d = g where x is finite, 0 where a value was replaced."""
    op_name = "nan_to_num"

    def forward(self, x, nan=0.0, posinf=None, neginf=None):
        if x.dtype.kind != "f":
            self.finite = None
            return x.copy()
        self.finite = np.isfinite(x)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, g):
        return g if self.finite is None else of(g).where(self.finite, g, 0.0)


class _NoDerivative(Function):
    """An op torch gives no derivative: its result is recorded (so that code which only reads
    it runs), and a backward through it says so by name, as torch's does."""

    def backward(self, g):
        raise OpError(f"the derivative of {self.name()} is not implemented (as in PyTorch); "
                      f"detach its inputs first (x.detach())")


class Heaviside(_NoDerivative):
    """`values` where x == 0, 1 where x > 0, else 0 (NaN included: torch's rule, where
    numpy's heaviside keeps NaN); one dtype for x and values, as torch."""
    def forward(self, x, values):
        if x.dtype != values.dtype:
            raise OpError(f"x ({x.dtype}) and values ({values.dtype}) must have one dtype (as "
                          f"in torch: heaviside does not promote)")
        with np.errstate(invalid="ignore"):
            return np.where(x == 0, values, x > 0).astype(x.dtype)


class Nextafter(Function):
    """The next float after a in the direction of b (a itself when a == b): d = (g, 0), as
    torch's; the caller promotes a and b to one float dtype."""
    def forward(self, a, b):
        return np.nextafter(a, b)

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (g if na else None), (of(g).zeros_like(g) if nb else None)
