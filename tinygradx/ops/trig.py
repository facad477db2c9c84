"""The trigonometric and hyperbolic functions beyond sin and cos (math_ops.py): one Function per
op, forward and backward side by side, as everywhere in ops/.

tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, sinc take one tensor (int and bool
inputs give float32, as torch); atan2 and hypot take two, promoted by the caller (ops.promote).
deg2rad and rad2deg are a product with a constant, so they need no Function (the Tensor
methods write them). Each backward is the op's one derivative, written once for arrays and
Tensors: what it needs of x it reads from the saved input or output, and a function of x it
needs beyond operators and `xp.sqrt` (sinh's cosh, say) is the op itself run through
`xp.run`, so the second derivative is the op's own again.
"""
from __future__ import annotations

import numpy as np

from ..core.elementwise import as_float
from ..core.node import Function
from ..core.xp import of, value


class Tan(Function):
    """d(tan x) = g*(1 + tan^2 x)"""
    def forward(self, x):
        self.out = np.tan(as_float(x))
        return self.out

    def backward(self, g):
        return g * (1 + self.out * self.out)


class Asin(Function):
    """d(asin x) = g/sqrt(1 - x^2) (inf at +-1, NaN outside [-1, 1], as torch)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arcsin(self.x)

    def backward(self, g):
        return g / of(g).sqrt(1 - self.x * self.x)


class Acos(Function):
    """d(acos x) = -g/sqrt(1 - x^2)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arccos(self.x)

    def backward(self, g):
        return -g / of(g).sqrt(1 - self.x * self.x)


class Atan(Function):
    """d(atan x) = g/(1 + x^2)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arctan(self.x)

    def backward(self, g):
        return g / (1 + self.x * self.x)


class Sinh(Function):
    """d(sinh x) = g*cosh(x)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.sinh(self.x)

    def backward(self, g):
        return g * of(g).run(Cosh, self.x)


class Cosh(Function):
    """d(cosh x) = g*sinh(x)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.cosh(self.x)

    def backward(self, g):
        return g * of(g).run(Sinh, self.x)


class Asinh(Function):
    """d(asinh x) = g/sqrt(x^2 + 1)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arcsinh(self.x)

    def backward(self, g):
        return g / of(g).sqrt(self.x * self.x + 1)


class Acosh(Function):
    """d(acosh x) = g/sqrt(x^2 - 1) (inf at 1, NaN below it, as torch)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arccosh(self.x)

    def backward(self, g):
        return g / of(g).sqrt(self.x * self.x - 1)


class Atanh(Function):
    """d(atanh x) = g/(1 - x^2)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.arctanh(self.x)

    def backward(self, g):
        return g / (1 - self.x * self.x)


class Sinc(Function):
    """sin(pi x)/(pi x), 1 at 0: d = g*(cos(pi x) pi x - sin(pi x))/(pi x^2), 0 at x = 0 (as
    torch: the zero there is a constant of the formula, so the second derivative at 0 is 0)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.sinc(self.x)                  # numpy's sinc is the normalised one, torch's

    def backward(self, g):
        xp, x = of(g), self.x
        zero = value(x) == 0
        safe = xp.where(zero, 1.0, x) if zero.any() else x   # no 0/0 on the masked side
        px = safe * np.pi
        d = (xp.cos(px) * px - xp.sin(px)) / (px * safe)
        return g * (xp.where(zero, 0.0, d) if zero.any() else d)


class Atan2(Function):
    """atan2(a, b), the angle of the point (b, a): d = (g*b/r2, -g*a/r2), r2 = a^2 + b^2, and 0
    where r2 == 0 (torch's value at the origin). The caller promotes a and b to one float
    dtype."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.arctan2(a, b)

    def backward(self, g):
        xp, a, b = of(g), self.a, self.b
        r2 = a * a + b * b
        origin = value(r2) == 0
        if origin.any():
            r2 = xp.where(origin, 1.0, r2)
            g = xp.where(origin, 0.0, g)
        na, nb = self.needs_input_grad
        return (g * b / r2 if na else None), (-g * a / r2 if nb else None)


class Hypot(Function):
    """sqrt(a^2 + b^2) without overflow: d = (g*a/out, g*b/out) (NaN at the origin, as
    torch). The caller promotes a and b to one float dtype."""
    def forward(self, a, b):
        na, nb = self.needs_input_grad          # keep only what backward reads, as torch
        self.a, self.b = (a if na else None), (b if nb else None)
        self.out = np.hypot(a, b)
        return self.out

    def backward(self, g):
        na, nb = self.needs_input_grad
        q = g / self.out
        return (q * self.a if na else None), (q * self.b if nb else None)
