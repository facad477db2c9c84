"""The activations of `F` beyond relu/gelu/sigmoid/tanh, and F.rms_norm, re-exported by
functional.py (`F.silu`, `F.softplus`, ...): torch.nn.functional's names, arguments and
semantics. Each calls one Function of ops_math.py (silu, softplus, logsigmoid, leaky_relu, elu,
hardtanh, hardswish) or is built from ops: mish (x * tanh(softplus(x))), relu6 (hardtanh(x, 0,
6)), selu (elu with SELU's alpha and scale), celu (alpha * elu(x / alpha)), hardsigmoid
(hardtanh(x/6 + 1/2, 0, 1)), softsign, softmin, tanhshrink, softshrink (x - clamp(x)),
hardshrink and threshold (masked_fill), glu (a * sigmoid(b)), rrelu (x times a constant
slope tensor), prelu (where(x > 0, x, w x)) and rms_norm.

`inplace=True` writes the result into the input, as torch's: computed from a clone (so no node
saves memory the write changes) and copied in with `copy_`, which refuses a leaf that requires
grad, as torch does. The F.xxx_ functions (F.relu_, F.elu_, ...) are the same with inplace.

"Quick GELU" (x * sigmoid(1.702 x), tinygrad's quick_gelu, OpenAI CLIP's QuickGELU) has no name
in torch, so none here either (a look-alike name torch lacks would let code run here that fails
under torch): write it as that product (docs/api.md).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..ops import math_ops as ops_math
from ..autograd import OpError, current_scope
from ..autograd.rng import default_rng
from ..core.dims import check_dim


def _maybe_inplace(input, inplace, fn):
    """fn(input), or with inplace its value written into input (which is returned)."""
    if not inplace:
        return fn(input)
    return input.copy_(fn(input.clone()))


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
    return _maybe_inplace(input, inplace, lambda x: ops_math.Silu.apply(_floating("silu", x)))


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
    slope = _number("leaky_relu", "negative_slope", negative_slope)
    return _maybe_inplace(input, inplace, lambda x: ops_math.LeakyRelu.apply(
        _floating("leaky_relu", x), negative_slope=slope))


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
    a = _number("elu", "alpha", alpha)
    return _maybe_inplace(input, inplace, lambda x: ops_math.Elu.apply(_floating("elu", x),
                                                                       alpha=a))


def selu(input, inplace=False):
    """scale * elu(x, alpha) with SELU's fixed alpha = 1.6733 and scale = 1.0507."""
    return _maybe_inplace(input, inplace, lambda x: ops_math.Elu.apply(
        _floating("selu", x), alpha=ops_math.SELU_ALPHA, scale=ops_math.SELU_SCALE))


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _maybe_inplace(input, inplace, lambda x: x * ops.Tanh.apply(
        ops_math.Softplus.apply(_floating("mish", x))))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]; the gradient passes where min_val < x < max_val."""
    lo, hi = _number("hardtanh", "min_val", min_val), _number("hardtanh", "max_val", max_val)
    if lo > hi:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return _maybe_inplace(input, inplace, lambda x: ops_math.Hardtanh.apply(
        _floating("hardtanh", x, ints=True), min_val=lo, max_val=hi))


def relu6(input, inplace=False):
    """min(max(x, 0), 6) = hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, alpha * (exp(x / alpha) - 1) elsewhere: alpha * elu(x / alpha)."""
    a = _number("celu", "alpha", alpha)
    if a == 0:
        raise ZeroDivisionError("celu: alpha must not be 0 (it divides x, as in torch)")
    return _maybe_inplace(input, inplace, lambda x: ops_math.Elu.apply(
        _floating("celu", x) / a, alpha=1.0, scale=a))


def hardsigmoid(input, inplace=False):
    """clip(x/6 + 1/2, 0, 1); the gradient 1/6 passes where -3 < x < 3."""
    return _maybe_inplace(input, inplace, lambda x: ops_math.Hardtanh.apply(
        _floating("hardsigmoid", x) / 6 + 0.5, min_val=0.0, max_val=1.0))


def hardswish(input, inplace=False):
    """x * hardsigmoid(x) = x * clip(x + 3, 0, 6) / 6."""
    return _maybe_inplace(input, inplace, lambda x: ops_math.Hardswish.apply(
        _floating("hardswish", x)))


def softsign(input):
    """x / (1 + |x|) (int inputs give float32, as torch)."""
    return input / (input.abs() + 1)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim (dtype= casts the input first, as torch); dim=None takes torch's
    legacy implicit dim (0 for 0-, 1- and 3-d inputs, else 1) with torch's warning."""
    x = input if dtype is None else input.to(dtype)
    if dim is None:             # torch's legacy implicit dim, with its warning (as nn.Softmax)
        warnings.warn("softmin: the implicit dim choice is deprecated (as in torch); pass dim",
                      stacklevel=_stacklevel)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return (-x).softmax(dim)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between: x - clamp(x, -lambd, lambd)
    (the gradient is 0 on [-lambd, lambd], as torch)."""
    lam = _lambd("softshrink", lambd, input)
    return input - input.clamp(-lam, lam)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0 (input.hardshrink(lambd))."""
    return input.hardshrink(lambd)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    t, v = _number("threshold", "threshold", threshold), _number("threshold", "value", value)
    return _maybe_inplace(input, inplace, lambda x: x.masked_fill(x._data <= t, v))


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the two halves of input along dim."""
    d = check_dim("glu", dim, input.ndim)
    if input.ndim == 0 or input.shape[d] % 2:
        raise OpError(f"glu: halving dimension must be even, but dimension {d} is size "
                      f"{input.shape[d] if input.ndim else 0}")
    a, b = _floating("glu", input).chunk(2, d)
    return a * b.sigmoid()


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope: in training each negative x gets its own slope drawn
    from U(lower, upper) (tinygradx's generator), in eval the mean slope (lower + upper) / 2."""
    lo, hi = _number("rrelu", "lower", lower), _number("rrelu", "upper", upper)
    if lo > hi:
        raise ValueError(f"rrelu: lower ({lower}) must not exceed upper ({upper})")
    if not training:
        return leaky_relu(input, (lo + hi) / 2, inplace)

    def draw(x):
        x = _floating("rrelu", x)
        slope = default_rng().uniform(lo, hi, size=x.shape).astype(x.dtype)
        noise = np.where(x._data > 0, np.ones((), x.dtype), slope)
        return x * x._op_class._from_op(noise, None)
    return _maybe_inplace(input, inplace, draw)


def prelu(input, weight):
    """x where x > 0, weight * x elsewhere, weight one slope or one per channel (dim 1)
    (input.prelu(weight))."""
    return input.prelu(weight)


def _lambd(name, lambd, x):
    lam = _number(name, "lambd", lambd)
    if lam < 0:
        raise ValueError(f"{name}: lambd must be >= 0, got {lam}")
    _floating(name, x)
    return lam


def _in_place(fn, name):
    """torch's F.xxx_: fn with inplace=True."""
    def inplace_fn(input, *args, **kwargs):
        return fn(input, *args, inplace=True, **kwargs)
    inplace_fn.__name__ = inplace_fn.__qualname__ = name
    inplace_fn.__doc__ = f"F.{name}(input, ...) = F.{fn.__name__}(input, ..., inplace=True)."
    return inplace_fn


elu_, leaky_relu_, hardtanh_, rrelu_, threshold_, celu_, selu_ = (
    _in_place(elu, "elu_"), _in_place(leaky_relu, "leaky_relu_"),
    _in_place(hardtanh, "hardtanh_"), _in_place(rrelu, "rrelu_"),
    _in_place(threshold, "threshold_"), _in_place(celu, "celu_"), _in_place(selu, "selu_"))


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
    x = input.float() if input.dtype == np.float16 else input   # float16: in float32, rounded
    dims = tuple(range(x.ndim - n, x.ndim))                     # once, as torch on a CPU

    def ms(x):
        return (x * x).mean(dim=dims, keepdim=True) if n else x * x
    with np.errstate(over="ignore"):           # an overflow is found and handled below
        squares = ms(x)
    found = squares.detach().numpy()
    if not np.isfinite(found).all():
        # a finite row whose squares overflow (1e30 in float32): divided by its largest |x|
        # first, a constant s (y does not depend on it, so its derivative is the exact one)
        top = np.abs(x.detach().numpy()).max(axis=dims, keepdims=True) if n else \
            np.abs(x.detach().numpy())
        s = np.where(~np.isfinite(found) & np.isfinite(top) & (top > 0), top, 1)
        s = s.astype(found.dtype)
        x = x / s
        squares, eps = ms(x), eps / s / s
    y = x * (squares + eps).rsqrt()
    y = y.to(input.dtype) if y.dtype != input.dtype else y
    return y if weight is None else y * weight
