"""The activations of `F` beyond relu/gelu/sigmoid/tanh, and F.rms_norm, re-exported by
functional.py (`F.silu`, `F.softplus`, ...): torch.nn.functional's names, arguments and
semantics. Each calls one Function of ops_math.py, except mish (x * tanh(softplus(x))), relu6
(hardtanh(x, 0, 6)), selu (elu with SELU's alpha and scale) and rms_norm, built from ops.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops import math_ops as ops_math
from ..autograd import OpError, current_scope


def _no_inplace(name, inplace):
    if inplace:
        raise NotImplementedError(f"{name}: inplace=True is not supported; use the result "
                                  f"(x = F.{name}(x))")


def _floating(name, x, ints=False):
    """x itself if its dtype is floating point (or integer, with ints), else torch's refusal
    as a TypeError: silu & co. of an int or bool tensor are not defined."""
    kind = x.dtype.kind
    if kind != "f" and not (ints and kind in "iu"):
        raise TypeError(f"{name}: needs a floating-point{' or integer' if ints else ''} "
                        f"tensor, got {x.dtype}")
    return x


def _number(name, arg, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {arg} must be a number, got {value!r}")
    return float(value)


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish)."""
    _no_inplace("silu", inplace)
    return ops_math.Silu.apply(_floating("silu", input))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return ops_math.Softplus.apply(_floating("softplus", input),
                                   beta=_number("softplus", "beta", beta),
                                   threshold=_number("softplus", "threshold", threshold))


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    return ops_math.LogSigmoid.apply(_floating("logsigmoid", input))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, negative_slope * x elsewhere."""
    _no_inplace("leaky_relu", inplace)
    return ops_math.LeakyRelu.apply(
        _floating("leaky_relu", input),
        negative_slope=_number("leaky_relu", "negative_slope", negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
    _no_inplace("elu", inplace)
    return ops_math.Elu.apply(_floating("elu", input), alpha=_number("elu", "alpha", alpha))


def selu(input, inplace=False):
    """scale * elu(x, alpha) with SELU's fixed alpha = 1.6733 and scale = 1.0507."""
    _no_inplace("selu", inplace)
    return ops_math.Elu.apply(_floating("selu", input), alpha=ops_math.SELU_ALPHA,
                              scale=ops_math.SELU_SCALE)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    _no_inplace("mish", inplace)
    return input * ops.Tanh.apply(ops_math.Softplus.apply(_floating("mish", input)))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]; the gradient passes where min_val < x < max_val."""
    _no_inplace("hardtanh", inplace)
    lo, hi = _number("hardtanh", "min_val", min_val), _number("hardtanh", "max_val", max_val)
    if lo > hi:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return ops_math.Hardtanh.apply(_floating("hardtanh", input, ints=True), min_val=lo,
                                   max_val=hi)


def relu6(input, inplace=False):
    """min(max(x, 0), 6) = hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims; eps=None
    is the machine epsilon of x's dtype, as torch.nn.functional.rms_norm."""
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(normalized_shape)
    n = len(normalized_shape)
    _floating("rms_norm", input)
    where = f" at {current_scope()}" if current_scope() else ""
    if n > input.ndim or tuple(input.shape[input.ndim - n:]) != normalized_shape:
        raise OpError(f"rms_norm{where}: input of shape {input.shape} does not end with "
                      f"normalized_shape {normalized_shape}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise OpError(f"rms_norm{where}: weight has shape {tuple(weight.shape)}, expected "
                      f"{normalized_shape}")
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    dims = tuple(range(input.ndim - n, input.ndim))
    y = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt() if n else \
        input * ((input * input) + eps).rsqrt()
    return y if weight is None else y * weight
