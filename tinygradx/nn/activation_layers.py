"""The rest of torch.nn's activation modules (re-exported by tinygradx.nn): CELU, Hardsigmoid,
Hardswish, Softsign, Tanhshrink, Softshrink, Hardshrink, Threshold, GLU, Softmin, Softmax2d,
PReLU (a learned slope) and RRelu (a random slope while training). Each holds its arguments
and calls the F function of the same name (functional/activations.py); reprs are torch's."""
from __future__ import annotations

import numpy as np

from .. import functional as F
from ..autograd import OpError
from .layers import int_arg
from .module import Module, Parameter

__all__ = ["CELU", "Hardsigmoid", "Hardswish", "Softsign", "Tanhshrink", "Softshrink",
           "Hardshrink", "Threshold", "GLU", "Softmin", "Softmax2d", "PReLU", "RReLU"]


def _inplace(s, inplace):
    return s + (", inplace=True" if inplace else "")


class CELU(Module):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""

    def __init__(self, alpha=1.0, inplace=False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return _inplace(f"alpha={self.alpha}", self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Softshrink(Module):
    """x -+ lambd outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd=0.5):
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Module):
    """x outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd=0.5):
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Threshold(Module):
    """x where x > threshold, value elsewhere."""

    def __init__(self, threshold, value, inplace=False):
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return _inplace(f"threshold={self.threshold}, value={self.value}", self.inplace)


class GLU(Module):
    """a * sigmoid(b), a and b the two halves of the input along dim."""

    def __init__(self, dim=-1):
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along dim (dim=None: torch's legacy implicit dim, with its warning)."""

    def __init__(self, dim=None):
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """softmax over the channels (dim -3) at each position of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise OpError(f"Softmax2d: expected a 3-d or 4-d input, got shape "
                          f"{tuple(input.shape)}")
        return F.softmax(input, -3)


class PReLU(Module):
    """x where x > 0, weight * x elsewhere; weight is learned, one slope (num_parameters=1) or
    one per channel (dim 1 of the input), starting at init."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = int_arg("PReLU", "num_parameters", num_parameters)
        self.init = init
        self.weight = Parameter(np.full(self.num_parameters, init, np.float32))
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def reset_parameters(self):
        self.weight.detach().numpy()[...] = self.init

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: a slope drawn from U(lower, upper) per element while training,
    (lower + upper) / 2 in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return _inplace(f"lower={self.lower}, upper={self.upper}", self.inplace)
