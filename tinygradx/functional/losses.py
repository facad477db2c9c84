"""The losses re-exported by functional (`F.mse_loss`, ...): the element-wise ones (mse_loss,
l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
kl_div), nll_loss, and the class-weight and class-probability paths of cross_entropy.

Each is a composite of primitive ops (exact; the gradient comes from the ops' own backward)
after the checks every loss makes: the reduction, the input and target dtypes, their shapes
(broadcast as in PyTorch). cross_entropy itself is in functional.py: its plain case (class
indices, no weight) is the fused node, the rest comes here (`cross_entropy_extended`).
"""
from __future__ import annotations

import numpy as np

from ..ops import fused
from ..autograd import STATE, OpError, current_scope
from ..tensor.creation import where
from ..tensor import Tensor

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


# ------------------------------------------------------------------------------------------
# class-index and class-probability targets: the checks shared with functional's
# cross_entropy, nll_loss, and the weighted / probability paths of cross_entropy
# ------------------------------------------------------------------------------------------

def _where():
    s = current_scope()
    return f" (in {s})" if s else ""


def class_target(name, input, target, ignore_index, reduction, probabilities=False):
    """The checks every loss makes before it computes: reduction, input, target dtype, shape.

    Returns the target as an integer array of the expected shape. The layouts are PyTorch's:
    input (N, C) with target (N,), (C,) with a 0-d target, (N, C, d1, ...) with (N, d1, ...).
    With `probabilities` a float target of the input's shape (class probabilities) is
    returned as it is.
    """
    check_reduction(name, reduction)          # the check every loss shares
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"{name}: ignore_index must be an int, got {ignore_index!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim == 0:
        raise OpError(f"{name}{_where()}: input must have a class dim, got a 0-d tensor")
    if input.dtype.kind != "f":
        raise TypeError(f"{name}{_where()}: input must be floating-point, got {input.dtype}")
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if probabilities and t.dtype.kind == "f":
        if t.shape != input.shape:
            raise OpError(f"{name}{_where()}: a float target holds class probabilities and "
                          f"needs the input's shape {input.shape}, got {t.shape}; class "
                          f"indices need an integer tensor, got dtype {t.dtype}")
        return t
    if t.dtype.kind not in "iu":
        raise OpError(f"{name}{_where()}: target must hold class indices (an integer "
                      f"tensor), got dtype {t.dtype}")
    if input.ndim == 1:
        if t.ndim != 0:
            raise OpError(f"{name}{_where()}: logits {input.shape} need a scalar target, "
                          f"got {t.shape}")
        return t
    expected = (input.shape[0],) + input.shape[2:]
    if t.shape != expected:
        raise OpError(f"{name}{_where()}: logits of shape {input.shape} need targets of "
                      f"shape {expected}, got {t.shape} (the class dim of the logits is dim 1; "
                      f"flatten (B, T, V) logits to (B*T, V))")
    return t


def check_targets(name, t, n_classes, ignore_index, shape):
    """Every target is a class 0..C-1 or ignore_index (a wrong one would pick another row)."""
    if not t.size:
        return
    lo, hi = t.min(), t.max()
    if lo >= 0 and hi < n_classes:
        return
    bad = t[((t < 0) | (t >= n_classes)) & (t != ignore_index)]
    if bad.size:
        raise OpError(f"{name}{_where()}: target {bad.ravel()[0]} is out of range for "
                      f"{n_classes} classes (input {shape}); valid targets are "
                      f"0..{n_classes - 1} or ignore_index={ignore_index}")


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of log-probabilities at class-index targets.

    Layouts as cross_entropy: (N, C) with (N,), (C,) with a 0-d target, (N, C, d1, ...) with
    (N, d1, ...). Targets equal to ignore_index add nothing and are not counted by 'mean'.
    weight (C,) rescales each class: -w[y] x[y], and 'mean' divides by the sum of w[y] over
    the targets that are not ignored, as PyTorch.
    """
    t = class_target("nll_loss", input, target, ignore_index, reduction)
    w = _class_weight("nll_loss", weight, input)
    x, t = _class_rows(input, t)
    check_targets("nll_loss", t, x.shape[1], ignore_index, input.shape)
    losses, wt = _weighted_pick(x, t, w, ignore_index)
    return _reduce_rows(losses, wt, input, reduction)


# class weights and class-probability targets: op by op (the fused CrossEntropy keeps the
# plain case), PyTorch's formulas

def _class_weight(name, weight, input):
    """weight as a constant (C,) array of the input's dtype, checked."""
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name}: weight must be a Tensor of shape (C,), got "
                        f"{type(weight).__name__}")
    if weight.requires_grad and STATE.grad_enabled:
        raise OpError(f"{name}{_where()}: weight is read as a constant and gets no gradient "
                      f"(as in PyTorch); pass weight.detach()")
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    if weight.shape != (c,):
        raise OpError(f"{name}{_where()}: weight must hold one value per class, shape "
                      f"({c},) for input {input.shape}, got {weight.shape}")
    if weight.dtype != input.dtype:
        raise TypeError(f"{name}: weight has dtype {weight.dtype} but the input "
                        f"{input.dtype}; they must match (as in PyTorch)")
    return weight._data


def _class_rows(x, t):
    """(C,), (N, C) or (N, C, d1..) logits and their targets as (M, C) rows and (M,)."""
    if x.ndim == 1:
        return x.reshape(1, -1), t.reshape(1)
    if x.ndim > 2:             # (N, C, d1..) -> (N*d1.., C): the class dim last, flattened
        return x.permute(0, *range(2, x.ndim), 1).reshape(-1, x.shape[1]), t.reshape(-1)
    return x, t


def _weighted_pick(x, t, w, ignore_index):
    """-w[t] x[t] per row (0 where t is ignore_index) and the weights w[t] (0 there)."""
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    wt = keep.astype(x.dtype) if w is None else np.where(keep, w[safe], 0).astype(x.dtype)
    return -x[np.arange(t.shape[0]), safe] * Tensor(wt), wt


def _reduce_rows(losses, wt, input, reduction):
    """'none': the per-position losses in the target's shape; 'mean': their sum over the
    sum of the targets' weights (0 when that is 0, as when every target is ignored)."""
    if reduction == "none":
        if input.ndim == 2:
            return losses
        return losses.reshape(input.shape[:1] + input.shape[2:] if input.ndim > 2 else ())
    total = losses.sum()
    if reduction == "sum":
        return total
    return total / (float(wt.sum()) or 1.0)


def cross_entropy_extended(input, target, t, weight, ignore_index, reduction, eps):
    """cross_entropy with a class weight or probability targets (t: the checked target)."""
    w = _class_weight("cross_entropy", weight, input)
    if t.dtype.kind == "f":
        return _cross_entropy_probs(input, target, w, ignore_index, reduction, eps)
    x, t = _class_rows(input, t)
    c = x.shape[1]
    check_targets("cross_entropy", t, c, ignore_index, input.shape)
    logp = fused.LogSoftmax.apply(x, dim=1)
    losses, wt = _weighted_pick(logp, t, w, ignore_index)
    if eps:     # PyTorch: (1 - e) * nll + e / C * sum_c w_c (-logp_c), same denominator
        smooth = -(logp if w is None else logp * Tensor(w)).sum(dim=1)
        keep = (t != ignore_index).astype(x.dtype)
        losses = losses * (1 - eps) + smooth * Tensor(keep * (eps / c))
    return _reduce_rows(losses, wt, input, reduction)


def _cross_entropy_probs(input, target, w, ignore_index, reduction, eps):
    """-sum_c w_c q_c log softmax(x)_c with q = (1 - e) p + e / C; 'mean' divides by the
    number of rows (N times d1...), not by the weights."""
    if ignore_index != -100:
        raise OpError(f"cross_entropy{_where()}: ignore_index={ignore_index} applies to "
                      f"class-index targets, not to a float target of class probabilities "
                      f"(as in PyTorch)")
    dim = 0 if input.ndim == 1 else 1
    c = input.shape[dim]
    p = target if isinstance(target, Tensor) else Tensor(np.asarray(target))
    q = p * (1 - eps) + eps / c if eps else p
    prod = fused.LogSoftmax.apply(input, dim=dim) * q
    if w is not None:
        prod = prod * Tensor(w.reshape((c,) + (1,) * (input.ndim - dim - 1)))
    if reduction == "none":
        return -prod.sum(dim=dim)
    total = -prod.sum()
    if reduction == "sum":
        return total
    return total / max(input.numel() // max(c, 1), 1)
