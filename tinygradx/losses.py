"""The element-wise losses, re-exported by functional (`F.mse_loss`, ...): mse_loss, l1_loss,
smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits, kl_div.

Each is a composite of primitive ops (exact; the gradient comes from the ops' own backward)
after the checks every loss makes: the reduction, the input and target dtypes, their shapes
(broadcast as in PyTorch). The class-index losses (cross_entropy, nll_loss) are in
functional.py.
"""
from __future__ import annotations

import numpy as np

from .autograd import OpError
from .creation import where
from .tensor import Tensor

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(name, reduction, allowed=REDUCTIONS):
    """The reduction argument of a loss, or a ValueError naming the valid ones."""
    if reduction not in allowed:
        names = ", ".join(f"'{r}'" for r in allowed[:-1]) + f" or '{allowed[-1]}'"
        raise ValueError(f"{name}: reduction must be {names}, got {reduction!r}")


def _pair(name, input, target, reduction, allowed=REDUCTIONS):
    """input and target as float Tensors whose shapes broadcast, after the reduction check."""
    check_reduction(name, reduction, allowed)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if not isinstance(target, Tensor):
        target = Tensor(np.asarray(target, dtype=input.dtype))
    for what, t in (("input", input), ("target", target)):
        if t.dtype.kind != "f":
            raise TypeError(f"{name}: {what} must be floating-point, got {t.dtype}")
    try:
        np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise OpError(f"{name}: input {input.shape} and target {target.shape} do not "
                      f"broadcast") from None
    return target


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def mse_loss(input, target, reduction="mean"):
    """(input - target)^2, reduced."""
    target = _pair("mse_loss", input, target, reduction)
    return _reduce((input - target).square(), reduction)


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    target = _pair("l1_loss", input, target, reduction)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta (beta=0: L1)."""
    target = _pair("smooth_l1_loss", input, target, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(where(d._data < beta, 0.5 * d.square() / beta, d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where d = |input - target| < delta, else delta (d - 0.5 delta)."""
    target = _pair("huber_loss", input, target, reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = (input - target).abs()
    return _reduce(where(d._data < delta, 0.5 * d.square(), delta * (d - 0.5 * delta)),
                   reduction)


def _weighted(loss, weight):
    return loss if weight is None else loss * weight


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as in PyTorch; input
    holds probabilities in [0, 1]."""
    target = _pair("binary_cross_entropy", input, target, reduction)
    x = input._data
    if x.size and (np.nanmin(x) < 0 or np.nanmax(x) > 1):
        raise OpError("binary_cross_entropy: input must hold probabilities in [0, 1] "
                      "(for logits use binary_cross_entropy_with_logits)")
    log_x = input.log().clamp(min=-100)
    log_1mx = (1 - input).log().clamp(min=-100)
    return _reduce(_weighted(-(target * log_x + (1 - target) * log_1mx), weight), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """-w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) in the stable form
    (1 - t) x + (1 + (p - 1) t) (log(1 + e^-|x|) + max(-x, 0)): no overflow for large |x|."""
    target = _pair("binary_cross_entropy_with_logits", input, target, reduction)
    neg = input._data < 0                   # -|x| and max(-x, 0) through where, not abs/relu:
    z = where(neg, input, -input)          # their zero gradient at x = 0 would be wrong here
    softplus_neg = (1 + z.exp()).log() + where(neg, -input, 0.0)   # -log sigmoid(x)
    scale = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * input + scale * softplus_neg
    return _reduce(_weighted(loss, weight), reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """t (log t - input) pointwise (input holds log-probabilities; 0 where t = 0), or
    e^t (t - input) with log_target. reduction="batchmean" divides the sum by the batch
    size (the true KL divergence); "mean" (PyTorch's default) by the number of elements."""
    target = _pair("kl_div", input, target, reduction, REDUCTIONS + ("batchmean",))
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target._data > 0
        safe = where(positive, target, 1.0)            # log 1 = 0 where t = 0: no NaN
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        return loss.sum() / n
    return _reduce(loss, reduction)
