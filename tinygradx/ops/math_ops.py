"""Element-wise math and activation primitives: one Function per op, forward and backward.

As in ops.py: forward takes numpy arrays and returns one array, backward takes d(loss)/d(out)
and returns one gradient per input; each docstring is the op's vector-Jacobian product. Int and
bool inputs of the float functions (sin, log2, ...) are float32, as torch's; floor, ceil,
round, trunc and sign keep an integer dtype and, as in torch, pass a zero gradient.
Each backward is the op's one derivative (on arrays, and on Tensors under create_graph=True):
what it needs of x (sigmoid's s, elu's e^x) it reads from the saved input or output; masks and
constants (leaky_relu's slope, hardtanh's kept range, softplus' linear part) are read as saved.
"""
from __future__ import annotations

import numpy as np

from ..core.node import Function, OpError
from ..core.elementwise import as_float
from ..core.xp import of, sigmoid as _sigmoid, value

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# ------------------------------------------------------------------------------------------
# math
# ------------------------------------------------------------------------------------------

class Sin(Function):
    """d(sin x) = g*cos(x)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.sin(self.x)

    def backward(self, g):
        return g * of(g).cos(self.x)


class Cos(Function):
    """d(cos x) = -g*sin(x)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.cos(self.x)

    def backward(self, g):
        return -g * of(g).sin(self.x)


class Log2(Function):
    """d(log2 x) = g/(x ln 2)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.log2(self.x)

    def backward(self, g):
        return g / (self.x * np.log(2.0))


class Log10(Function):
    """d(log10 x) = g/(x ln 10)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.log10(self.x)

    def backward(self, g):
        return g / (self.x * np.log(10.0))


class Exp2(Function):
    """d(2^x) = g * 2^x ln 2"""
    def forward(self, x):
        self.out = np.exp2(as_float(x))
        return self.out

    def backward(self, g):
        return g * self.out * np.log(2.0)


class LogAddExp(Function):
    """d log(e^a + e^b) = (g*sigmoid(a-b), g*sigmoid(b-a)); callers promote a and b first
    (ops.promote), as for the binary ops of ops.py"""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.logaddexp(a, b)

    def backward(self, g):
        xp, d = of(g), self.a - self.b
        with np.errstate(invalid="ignore"):
            nan = np.isnan(value(d))
        if nan.any():                      # a == b == +-inf: 1/2 each
            d = xp.where(nan, 0.0, d)
        s = xp.sigmoid(d)
        return g * s, g * (1 - s)


class _Step(Function):
    """A piecewise-constant op: its gradient is zero everywhere (as torch's)."""
    def backward(self, g):
        return of(g).zeros_like(g)


class Floor(_Step):
    """d(floor x) = 0"""
    def forward(self, x):
        return np.floor(x) if x.dtype.kind == "f" else x.copy()


class Ceil(_Step):
    """d(ceil x) = 0"""
    def forward(self, x):
        return np.ceil(x) if x.dtype.kind == "f" else x.copy()


class Trunc(_Step):
    """d(trunc x) = 0"""
    def forward(self, x):
        return np.trunc(x) if x.dtype.kind == "f" else x.copy()


class Round(_Step):
    """d(round x) = 0 (halves round to even, as torch)"""
    def forward(self, x, decimals=0):
        return np.round(x, decimals) if x.dtype.kind == "f" else x.copy()


class Sign(_Step):
    """d(sign x) = 0"""
    def forward(self, x):
        return x.copy() if x.dtype == np.bool_ else np.sign(x)


class Lerp(Function):
    """out = a + w*(b - a): d = (g*(1-w), g*w, g*(b-a))"""
    def forward(self, a, b, w):
        na, nb, nw = self.needs_input_grad   # keep only what backward reads (as PyTorch)
        self.w = w if na or nb else None
        self.a, self.b = (a, b) if nw else (None, None)
        # torch's two branches: exact at w = 0 and at w = 1
        return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))

    def backward(self, g):
        na, nb, nw = self.needs_input_grad
        return (g * (1 - self.w) if na else None, g * self.w if nb else None,
                g * (self.b - self.a) if nw else None)


# ------------------------------------------------------------------------------------------
# integer-style division: //, %, fmod; callers promote a and b first (ops.promote), so the
# result has torch's dtype (int // int is int64, float % int is float)
# ------------------------------------------------------------------------------------------

def _check_division(name, a, b):
    """torch's refusals: no bool operands, and an integer division by zero is an error (the
    engine puts the op's name, which says the operator, before the message)."""
    if a.dtype.kind == "b":
        raise OpError("not defined for bool tensors (PyTorch refuses them too); cast with "
                      ".long() first")
    if a.dtype.kind in "iu" and not np.all(b):
        raise OpError("integer division by zero")


class FloorDivide(Function):
    """floor(a / b), Python's rounding (torch.floor_divide, `a // b`). Not differentiable, as
    in torch: a backward through it raises."""
    op_name = "floor_divide (//)"

    def forward(self, a, b):
        _check_division("floor_divide", a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor_divide(a, b)

    def backward(self, g):
        raise OpError("floor_divide (//) has no derivative (PyTorch: 'derivative for "
                      "floor_divide is not implemented'); detach its inputs, or use "
                      "torch.div(a, b, rounding_mode='floor') on values that need none")


class DivRounded(Function):
    """a / b rounded toward -inf ("floor") or toward 0 ("trunc"): torch.div(a, b,
    rounding_mode=...), whose gradient is zero (torch's; floor_divide has none at all)."""
    op_name = "div"

    def forward(self, a, b, rounding_mode):
        _check_division(f"div(rounding_mode={rounding_mode!r})", a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            if rounding_mode == "floor":
                return np.floor_divide(a, b)
            if a.dtype.kind == "f":
                return np.trunc(a / b)
            q = np.floor_divide(a, b)            # integers: exact, then toward 0
            return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))

    def backward(self, g):
        return tuple(of(g).zeros_like(g) if n else None for n in self.needs_input_grad)


class Remainder(Function):
    """a - floor(a/b)*b, the sign of b (Python's %, torch.remainder): d = (g, -g*floor(a/b))"""
    op_name = "remainder (%)"

    def forward(self, a, b):
        _check_division("remainder", a, b)
        self.a, self.b = (a, b) if self.needs_input_grad[1] else (None, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.remainder(a, b)

    def backward(self, g):
        na, nb = self.needs_input_grad
        if not nb:
            return g, None
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g if na else None), -g * np.floor_divide(value(self.a), value(self.b))


class Fmod(Function):
    """a - trunc(a/b)*b, the sign of a (C's fmod, torch.fmod): d = (g, -g*trunc(a/b))"""
    def forward(self, a, b):
        _check_division("fmod", a, b)
        self.a, self.b = (a, b) if self.needs_input_grad[1] else (None, None)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, b)

    def backward(self, g):
        na, nb = self.needs_input_grad
        if not nb:
            return g, None
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g if na else None), -g * np.trunc(value(self.a) / value(self.b))


# ------------------------------------------------------------------------------------------
# activations
# ------------------------------------------------------------------------------------------

class Silu(Function):
    """d(x*s(x)) = g*s*(1 + x*(1-s))"""
    def forward(self, x):
        self.x = x
        return x * _sigmoid(x)

    def backward(self, g):
        s = of(g).sigmoid(self.x)
        return g * s * (1 + self.x * (1 - s))


class Softplus(Function):
    """log(1 + e^(beta x))/beta, x where beta x > threshold: d = g*s(beta x) (1 above)"""
    def forward(self, x, beta=1.0, threshold=20.0):
        bx = x * beta
        self.x, self.lin, self.beta = x, bx > threshold, beta
        soft = (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx)))) / beta
        return np.where(self.lin, x, soft).astype(x.dtype, copy=False)

    def backward(self, g):
        xp = of(g)
        return g * xp.where(self.lin, 1.0, xp.sigmoid(self.x * self.beta))


class LogSigmoid(Function):
    """log s(x) = min(x, 0) - log(1 + e^-|x|): d = g*s(-x)"""
    def forward(self, x):
        self.x = x
        return (np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * of(g).sigmoid(-self.x)


class LeakyRelu(Function):
    """x where x > 0, else slope*x: d = g where x > 0, g*slope elsewhere"""
    def forward(self, x, negative_slope=0.01):
        self.pos, self.slope = x > 0, negative_slope
        return np.where(self.pos, x, x * negative_slope).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * np.where(self.pos, 1, self.slope)


class Elu(Function):
    """scale*(x where x > 0, else alpha*(e^x - 1)): d = g*scale (x > 0), g*scale*alpha*e^x"""
    def forward(self, x, alpha=1.0, scale=1.0):
        self.x, self.pos, self.scale, self.alpha = x, x > 0, scale, alpha
        neg = alpha * np.exp(np.minimum(x, 0))               # alpha e^x on the negative side
        out = scale * np.where(self.pos, x, neg - alpha)
        return out.astype(x.dtype, copy=False)

    def backward(self, g):
        xp = of(g)
        neg = self.alpha * xp.exp(xp.clip(self.x, None, 0))
        return g * (self.scale * xp.where(self.pos, 1.0, neg))


class Hardtanh(Function):
    """clip(x, min_val, max_val): d = g where min_val < x < max_val (as torch)"""
    def forward(self, x, min_val=-1.0, max_val=1.0):
        self.keep = (x > min_val) & (x < max_val)
        return np.clip(x, min_val, max_val).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * self.keep


class Hardswish(Function):
    """x * clip(x + 3, 0, 6) / 6: d = 0 up to -3, g*(x/3 + 1/2) between, g from 3 on (torch's
    values at the two kinks)"""
    def forward(self, x):
        self.x = x
        self.mid, self.high = (x > -3) & (x < 3), x >= 3
        return (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    def backward(self, g):
        return g * (self.x / 3 + 0.5) * self.mid + g * self.high


# ------------------------------------------------------------------------------------------
# log1p, expm1: accurate near 0, where log(1 + x) and exp(x) - 1 lose the digits of x
# ------------------------------------------------------------------------------------------

class Log1p(Function):
    """d log(1 + x) = g/(1 + x)"""
    def forward(self, x):
        self.x = as_float(x)
        return np.log1p(self.x)

    def backward(self, g):
        return g / (1 + self.x)


class Expm1(Function):
    """d(e^x - 1) = g*e^x"""
    def forward(self, x):
        self.out = np.expm1(as_float(x))
        return self.out

    def backward(self, g):
        return g * (self.out + 1)

