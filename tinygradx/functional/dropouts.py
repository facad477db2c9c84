"""Dropout variants as functions (re-exported by F): dropout1d/2d/3d (whole channels),
alpha_dropout and feature_alpha_dropout (SELU's self-normalising dropout), with
torch.nn.functional's names, arguments, default modes and refusals.

Every mask is drawn where F.dropout draws its own (`ops/fused.py`'s `dropout_scale`: 32 random
bits per element from tinygradx's one generator, dropped below p * 2**32), so `tgx.manual_seed`
fixes them all; the masks are not torch's (another generator), their statistics are. The
output is the input times a constant (plus a constant for alpha dropout): one `mul` (and
`add`) node, which the graph tools draw and which differentiates to any order.

    channel dropout     y = x * m / (1 - p),  m ~ Bernoulli(1 - p) per (sample, channel)
    alpha dropout       y = a * (x * m + s * (1 - m)) + b,  m per element (per channel for
                        feature_alpha_dropout); s = -1.7581 is SELU's value at -infinity, and
                        a = ((1 - p)(1 + p s^2))^(-1/2), b = -a s p keep the mean and the
                        variance of a standardised input

inplace=True writes the result into the input (`mul_`, `add_`), so every view of it sees the
change, as in torch, and a leaf that requires grad is refused, as in torch.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import STATE, OpError, current_scope
from ..ops.fused import dropout_scale
from ..tensor import Tensor

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# SELU's negative saturation, -scale * alpha (the value SELU tends to at -infinity)
_SELU_SATURATION = -1.7580993408473766


def _where():
    s = current_scope()
    return f" (in {s})" if s else ""


def check_p(name, p):
    """p as a float in [0, 1], else torch's ValueError naming the function."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: p must be a number, got {p!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def _tensor(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")
    return x


def _floating(name, x):
    """While training: a float input (torch cannot write the scaled result into an integer
    one and refuses; out of training the input comes back as it is, there and here)."""
    if x.dtype.kind != "f":
        raise TypeError(f"{name}: needs a floating-point input while training, got {x.dtype}")
    return x


def _apply(x, scale, shift, inplace):
    """x * scale (+ shift), with scale and shift constant arrays broadcast against x."""
    scale = Tensor(scale)
    shift = None if shift is None else Tensor(shift)
    if inplace:
        x.mul_(scale)
        return x if shift is None else x.add_(shift)
    y = x * scale
    return y if shift is None else y + shift


def _channel_dropout(name, x, p, training, inplace, batched):
    """Zero whole channels: one draw per (sample, channel), or per channel when unbatched."""
    if not training or p == 0.0:
        return x
    _floating(name, x)
    lead = 2 if batched else 1                            # (N, C, *) or (C, *)
    mask_shape = tuple(x.shape[:lead]) + (1,) * (x.ndim - lead)
    return _apply(x, dropout_scale(STATE.rng, mask_shape, p, x.dtype), None, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) with probability p each, scale the rest by
    1 / (1 - p) (torch.nn.functional.dropout1d); the identity when not training."""
    p = check_p("dropout1d", p)
    x = _tensor("dropout1d", input)
    if x.ndim not in (2, 3):
        raise OpError(f"dropout1d{_where()}: expected a 2-d (C, L) or 3-d (N, C, L) input, got "
                      f"shape {tuple(x.shape)}")
    return _channel_dropout("dropout1d", x, p, training, inplace, batched=x.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) with probability p each, scale the rest by
    1 / (1 - p) (torch.nn.functional.dropout2d). As torch, a 3-d input is read as (N, C, L)
    (with a warning: torch will read it as (C, H, W) one day), and other dims warn that torch
    deprecates them; each draws per (dim 0, dim 1) pair."""
    p = check_p("dropout2d", p)
    x = _tensor("dropout2d", input)
    if x.ndim < 2:
        raise OpError(f"dropout2d{_where()}: feature dropout needs at least 2 dims (N, C, ...), "
                      f"got shape {tuple(x.shape)}")
    if x.ndim == 3:
        warnings.warn("dropout2d: a 3-d input is read as (N, C, L), channel-wise 1-d dropout, "
                      "as torch does today (torch will read it as an unbatched (C, H, W)); "
                      "call dropout1d for (N, C, L)", stacklevel=2)
    elif x.ndim != 4:
        warnings.warn(f"dropout2d: a {x.ndim}-d input is deprecated in torch (an error in a "
                      f"future release); dropout2d expects (N, C, H, W)", stacklevel=2)
    return _channel_dropout("dropout2d", x, p, training, inplace, batched=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p each, scale the
    rest by 1 / (1 - p) (torch.nn.functional.dropout3d). As torch, any input but a 5-d one is
    read as unbatched (one draw per index of dim 0), and dims other than 4 and 5 warn that
    torch deprecates them."""
    p = check_p("dropout3d", p)
    x = _tensor("dropout3d", input)
    if x.ndim < 1:
        raise OpError(f"dropout3d{_where()}: feature dropout needs at least 1 dim (C, ...), "
                      f"got a 0-d tensor")
    if x.ndim not in (4, 5):
        warnings.warn(f"dropout3d: a {x.ndim}-d input is deprecated in torch (an error in a "
                      f"future release); dropout3d expects (N, C, D, H, W) or (C, D, H, W)",
                      stacklevel=2)
    return _channel_dropout("dropout3d", x, p, training, inplace, batched=x.ndim == 5)


def _alpha(name, x, p, training, inplace, feature):
    if not training or p == 0.0:
        return x
    _floating(name, x)
    if p == 1.0:                                          # every element dropped: zeros
        return x.mul_(0.0) if inplace else x * 0.0
    mask_shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else tuple(x.shape)
    keep = dropout_scale(STATE.rng, mask_shape, p, x.dtype) != 0
    s = _SELU_SATURATION
    a = 1.0 / math.sqrt((1.0 - p) * (1.0 + p * s * s))
    b = -a * s * p
    # a (x m + s (1 - m)) + b = x (a m) + (a s (1 - m) + b)
    scale = (keep * a).astype(x.dtype)
    shift = np.where(keep, b, a * s + b).astype(x.dtype)
    return _apply(x, scale, shift, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout (torch.nn.functional.alpha_dropout; note training=False by default): each
    element set to SELU's saturation value with probability p, then an affine map that keeps
    a standardised input's mean 0 and variance 1 (for SELU networks)."""
    p = check_p("alpha_dropout", p)
    return _alpha("alpha_dropout", _tensor("alpha_dropout", input), p, training, inplace,
                  feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (torch.nn.functional.feature_alpha_dropout; training
    False by default): one draw per (dim 0, dim 1) pair of an input of at least 2 dims."""
    p = check_p("feature_alpha_dropout", p)
    x = _tensor("feature_alpha_dropout", input)
    if x.ndim < 2:
        raise OpError(f"feature_alpha_dropout{_where()}: feature dropout needs at least 2 dims "
                      f"(N, C, ...), got shape {tuple(x.shape)}")
    return _alpha("feature_alpha_dropout", x, p, training, inplace, feature=True)
