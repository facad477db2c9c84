"""tinygradx.nn.init: PyTorch's initialisers (`tgx.nn.init.xavier_uniform_(w)`, or
`from tinygradx.nn import init`), with torch's names, argument order and defaults.

Each one fills its tensor in place under `no_grad()` (so a Parameter takes it), draws from
tinygradx's one generator (`tgx.manual_seed`) and returns the tensor. Fans are torch's: for a
weight of shape (out, in, *k), fan_in = in * prod(k) and fan_out = out * prod(k) (a Linear
weight (out, in) has fan_in = in). The distributions are torch's; the bits are not (another
generator).

    calculate_gain(nonlinearity, param=None)       1, 5/3 (tanh), sqrt(2) (relu),
                                                   sqrt(2 / (1 + slope^2)) (leaky_relu), 3/4 (selu)
    uniform_(t, a, b)        U(a, b)               normal_(t, mean, std)   N(mean, std^2)
    trunc_normal_(t, mean, std, a, b)              N(mean, std^2) redrawn until inside [a, b]
    constant_(t, val), ones_(t), zeros_(t), eye_(t)
    xavier_uniform_(t, gain)  U(-g sqrt(6 / (fan_in + fan_out)), +...)
    xavier_normal_(t, gain)   N(0, g^2 * 2 / (fan_in + fan_out))
    kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu")
                              U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nl, a)
    kaiming_normal_(...)      N(0, (gain / sqrt(fan))^2)
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import no_grad
from ..autograd.rng import default_rng
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def _tensor(name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"init.{name}: expected a Tensor (e.g. a Parameter), got "
                        f"{type(t).__name__}")
    return t


def calculate_gain(nonlinearity, param=None):
    """The gain torch recommends for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for
    tanh, sqrt(2) for relu, sqrt(2 / (1 + negative_slope^2)) for leaky_relu (param, default
    0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(name, t):
    """(fan_in, fan_out) as torch computes them; a tensor needs at least 2 dims."""
    if t.ndim < 2:
        raise ValueError(f"init.{name}: fan in and fan out cannot be computed for a tensor "
                         f"with fewer than 2 dims (shape {t.shape})")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(name, t, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init.{name}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(name, t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0):
    """Fill with U(a, b) samples, in place; returns the tensor."""
    with no_grad():
        return _tensor("uniform_", tensor).uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0):
    """Fill with N(mean, std^2) samples, in place; returns the tensor."""
    with no_grad():
        return _tensor("normal_", tensor).normal_(mean, std)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Fill with N(mean, std^2) samples restricted to [a, b] (absolute bounds, as torch):
    values outside are drawn again until every one is inside. Returns the tensor."""
    _tensor("trunc_normal_", tensor)
    if not a < b:
        raise ValueError(f"init.trunc_normal_: expects a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"init.trunc_normal_: std must be > 0, got {std}")
    lo, hi = (a - mean) / std, (b - mean) / std
    if hi < -8 or lo > 8:
        raise ValueError(f"init.trunc_normal_: [a, b] = [{a}, {b}] is more than 8 std from "
                         f"the mean {mean}; no sample would land there")
    rng = default_rng()
    z = rng.standard_normal(tensor.shape)
    bad = (z < lo) | (z > hi)
    while bad.any():              # each round keeps a fixed share: a few rounds at most
        z[bad] = rng.standard_normal(int(bad.sum()))
        bad = (z < lo) | (z > hi)
    with no_grad():
        return tensor.copy_(Tensor(np.clip(z * std + mean, a, b)))


def constant_(tensor, val):
    """Fill with val, in place; returns the tensor."""
    with no_grad():
        return _tensor("constant_", tensor).fill_(val)


def ones_(tensor):
    """Fill with 1, in place; returns the tensor."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0, in place; returns the tensor."""
    with no_grad():
        return _tensor("zeros_", tensor).zero_()


def eye_(tensor):
    """The identity matrix in a 2-d tensor, in place; returns the tensor."""
    if _tensor("eye_", tensor).ndim != 2:
        raise ValueError(f"init.eye_: only 2-d tensors are supported, got shape {tensor.shape}")
    with no_grad():
        return tensor.copy_(Tensor(np.eye(*tensor.shape, dtype=tensor.dtype)))


def xavier_uniform_(tensor, gain=1.0):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010), in
    place; returns the tensor."""
    fan_in, fan_out = _fans("xavier_uniform_", _tensor("xavier_uniform_", tensor))
    if tensor.numel() == 0:            # nothing to fill (torch warns and returns it too)
        return tensor
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)), in place; returns it."""
    fan_in, fan_out = _fans("xavier_normal_", _tensor("xavier_normal_", tensor))
    if tensor.numel() == 0:
        return tensor
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """U(-bound, bound), bound = gain * sqrt(3 / fan) with gain = calculate_gain(nonlinearity,
    a) and fan the fan_in or fan_out (He et al. 2015), in place; returns the tensor."""
    fan = _fan("kaiming_uniform_", _tensor("kaiming_uniform_", tensor), mode)
    if tensor.numel() == 0:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """N(0, std^2), std = gain / sqrt(fan) (He et al. 2015), in place; returns the tensor."""
    fan = _fan("kaiming_normal_", _tensor("kaiming_normal_", tensor), mode)
    if tensor.numel() == 0:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))
