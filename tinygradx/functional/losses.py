"""The losses re-exported by functional (`F.mse_loss`, ...) whose target is a value per element:
mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits), kl_div,
poisson_nll_loss, gaussian_nll_loss, soft_margin_loss, hinge_embedding_loss,
multilabel_soft_margin_loss, and the shared checks of every loss: the reduction, PyTorch's
legacy `size_average`/`reduce` arguments, the input and target dtypes and shapes.
The losses over pairs and triplets of inputs are in pair_losses.py, those over class indices
(nll_loss, cross_entropy, the margin losses) in class_losses.py.

Each is a composite of primitive ops (exact; the gradient comes from the ops' own backward).
Signatures and the order of positional arguments are torch.nn.functional's. A 'mean' over no
elements is NaN, as in PyTorch (the mean of nothing), with a zero gradient.
"""
from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np

from ..autograd import STATE, OpError, current_scope, no_grad
from ..core.dtypes import result_type
from ..tensor import Tensor
from ..tensor.creation import where

REDUCTIONS = ("mean", "sum", "none")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message):
    """A UserWarning (PyTorch's class for these) pointing at the user's line: the first frame
    outside tinygradx, however deep the call (a module's constructor, F, a composite)."""
    frame, level = sys._getframe(1), 2     # stacklevel 1 is this function
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def where_scope():
    """' (in transformer.h.0)' inside a module call, '' outside: for error messages."""
    s = current_scope()
    return f" (in {s})" if s else ""


def check_reduction(name, reduction, allowed=REDUCTIONS):
    """The reduction argument of a loss, or a ValueError naming the valid ones."""
    if not isinstance(reduction, str) or reduction not in allowed:
        names = ", ".join(f"'{r}'" for r in allowed[:-1]) + f" or '{allowed[-1]}'"
        raise ValueError(f"{name}: reduction must be {names}, got {reduction!r}")


def legacy_reduction(name, size_average, reduce, reduction):
    """PyTorch's deprecated pair (size_average, reduce) as the reduction it stands for.

    Either one given (not None) overrides `reduction`, as in PyTorch: reduce=False is 'none'
    (one loss per element), else size_average=False is 'sum', else 'mean' (a None counts as
    True). A UserWarning says which reduction to write instead, as PyTorch's does.
    """
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warn(f"{name}: size_average and reduce are deprecated (in PyTorch too); this call means "
         f"reduction='{ret}', write that instead")
    return ret


def as_tensor_arg(name, what, x):
    """A loss's tensor argument: a Tensor, or an array / list made into one (tinygradx's
    convenience); anything else a TypeError naming the argument."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, list, tuple)) or np.isscalar(x) and not isinstance(x, str):
        return Tensor(np.asarray(x))
    raise TypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")


def _pair(name, input, target, reduction, size="broadcast", floats="promote", warn_size=False):
    """input and target as Tensors of one floating dtype, after the reduction check.

    size: 'broadcast' (they broadcast; with warn_size a different size warns, as PyTorch's
    mse_loss, l1_loss, smooth_l1_loss, huber_loss: a (N,) target for an (N, 1) input gives
    an (N, N) loss), or 'same' (PyTorch's ValueError otherwise).
    floats: 'promote' (torch's promotion of the two, which must give a float), 'same' (both
    floating, of one dtype: binary_cross_entropy's and huber_loss's rule), 'target' or
    'input' (computed in that one's dtype, which is floating, as PyTorch's kernel of
    binary_cross_entropy_with_logits, resp. hinge_embedding_loss, does), 'float32' (as
    'promote', integers computed in float32: poisson_nll_loss).
    """
    check_reduction(name, reduction)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if not isinstance(target, Tensor):
        target = Tensor(np.asarray(target, dtype=input.dtype if input.dtype.kind == "f"
                                   else None))
    if input.shape != target.shape:
        if size == "same":
            raise ValueError(f"{name}{where_scope()}: target {target.shape} and input "
                             f"{input.shape} must have the same size (as in PyTorch)")
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise OpError(f"{name}{where_scope()}: input {input.shape} and target "
                          f"{target.shape} do not broadcast") from None
        if warn_size:
            warn(f"{name}: target {target.shape} and input {input.shape} differ in size; they "
                 f"broadcast, which is likely not what was meant")
    if floats == "same":
        if input.dtype.kind != "f" or target.dtype != input.dtype:
            raise TypeError(f"{name}: input ({input.dtype}) and target ({target.dtype}) must "
                            f"be floating-point of the same dtype (as in PyTorch)")
        return input, target
    if floats == "target":
        if input.dtype.kind != "f" or target.dtype.kind != "f":
            raise TypeError(f"{name}: input ({input.dtype}) and target ({target.dtype}) must "
                            f"be floating-point")
        return input.to(target.dtype), target
    if floats == "input":
        if input.dtype.kind != "f":
            raise TypeError(f"{name}: input must be floating-point, got {input.dtype}")
        return input, target
    if warn_size:      # PyTorch broadcasts these two first: a 0-d operand ranks as the other
        dt = result_type(np.empty(1, input.dtype), np.empty(1, target.dtype))
    else:
        dt = result_type(input, target)
    if dt.kind != "f" and floats == "float32":      # poisson_nll_loss: exp and log of ints
        dt = np.dtype(np.float32)
    if dt.kind != "f":
        raise TypeError(f"{name}: needs floating-point input or target, got {input.dtype} and "
                        f"{target.dtype}")
    return (input if input.dtype == dt else input.to(dt)), (target if target.dtype == dt
                                                           else target.to(dt))


def reduce_loss(loss, reduction):
    """'none': the losses; 'sum': their sum; 'mean': their mean (NaN over no elements, as in
    PyTorch, with a zero gradient)."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _elementwise_weight(name, weight, input):
    """The `weight` of mse_loss, l1_loss and huber_loss: a Tensor of the input's size."""
    if weight is None:
        return None
    weight = as_tensor_arg(name, "weight", weight)
    if weight.shape != input.shape:
        raise ValueError(f"{name}{where_scope()}: weight {weight.shape} must have the input's "
                         f"size {input.shape} (as in PyTorch)")
    return weight


def _weighted_sum_mean(name, loss, weight, reduction):
    """mse_loss's and l1_loss's weighted reductions: 'mean' is sum(w l) / sum(w)."""
    if weight is None:
        return reduce_loss(loss, reduction)
    loss = loss * weight
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):    # weights summing to 0: NaN
            return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, reduced; with weight (the input's size), w (input - target)^2 and
    'mean' divides by the sum of w."""
    reduction = legacy_reduction("mse_loss", size_average, reduce, reduction)
    input, target = _pair("mse_loss", input, target, reduction, warn_size=True)
    weight = _elementwise_weight("mse_loss", weight, input)
    return _weighted_sum_mean("mse_loss", (input - target).square(), weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced; with weight, as mse_loss's."""
    reduction = legacy_reduction("l1_loss", size_average, reduce, reduction)
    input, target = _pair("l1_loss", input, target, reduction, warn_size=True)
    weight = _elementwise_weight("l1_loss", weight, input)
    return _weighted_sum_mean("l1_loss", (input - target).abs(), weight, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta (beta=0: L1)."""
    reduction = legacy_reduction("smooth_l1_loss", size_average, reduce, reduction)
    input, target = _pair("smooth_l1_loss", input, target, reduction, warn_size=True)
    if not beta >= 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = (input - target).abs()
    if beta == 0:
        return reduce_loss(d, reduction)
    return reduce_loss(where(d._data < beta, 0.5 * d.square() / beta, d - 0.5 * beta),
                       reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where d = |input - target| < delta, else delta (d - 0.5 delta); with weight
    (the input's size) w times that, and 'mean' the plain mean of the products (PyTorch's).
    PyTorch's huber_loss has no size_average/reduce."""
    input, target = _pair("huber_loss", input, target, reduction, floats="same",
                          warn_size=True)
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    weight = _elementwise_weight("huber_loss", weight, input)
    d = (input - target).abs()
    loss = where(d._data < delta, 0.5 * d.square(), delta * (d - 0.5 * delta))
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def constant_arg(name, what, x):
    """A tensor argument PyTorch's kernel reads as a constant: refused when it requires grad
    (its gradient would be dropped), as PyTorch refuses it."""
    x = as_tensor_arg(name, what, x)
    if x.requires_grad and STATE.grad_enabled:
        raise OpError(f"{name}{where_scope()}: {what} is read as a constant and gets no "
                      f"gradient (as in PyTorch); pass {what}.detach()")
    return x


def _bce_weight(name, weight, target):
    """A constant per-element rescaling that broadcasts to the target's shape (read in the
    loss's dtype, as PyTorch's kernel reads it)."""
    if weight is None:
        return None
    weight = constant_arg(name, "weight", weight).to(target.dtype)
    try:
        shape = np.broadcast_shapes(target.shape, weight.shape)
    except ValueError:
        raise OpError(f"{name}{where_scope()}: weight {weight.shape} does not broadcast to "
                      f"the target {target.shape}") from None
    if shape != target.shape:
        raise OpError(f"{name}{where_scope()}: weight {weight.shape} must broadcast to the "
                      f"target {target.shape}, not widen it to {shape}")
    return weight


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as in PyTorch; input
    holds probabilities in [0, 1], the target is of its size and dtype."""
    reduction = legacy_reduction("binary_cross_entropy", size_average, reduce, reduction)
    input, target = _pair("binary_cross_entropy", input, target, reduction, size="same",
                          floats="same")
    weight = _bce_weight("binary_cross_entropy", weight, target)
    x = input._data
    if x.size and (np.nanmin(x) < 0 or np.nanmax(x) > 1):
        raise OpError("binary_cross_entropy: input must hold probabilities in [0, 1] "
                      "(for logits use binary_cross_entropy_with_logits)")
    with np.errstate(divide="ignore"):
        log_x = input.log().clamp(min=-100)
        log_1mx = (1 - input).log().clamp(min=-100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """-w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) in the stable form
    (1 - t) x + (1 + (p - 1) t) (log(1 + e^-|x|) + max(-x, 0)): no overflow for large |x|."""
    name = "binary_cross_entropy_with_logits"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    input, target = _pair(name, input, target, reduction, size="same", floats="target")
    weight = _bce_weight(name, weight, target)
    if pos_weight is not None:
        pos_weight = constant_arg(name, "pos_weight", pos_weight).to(target.dtype)
        try:
            np.broadcast_shapes(target.shape, pos_weight.shape)
        except ValueError:
            raise OpError(f"{name}{where_scope()}: pos_weight {pos_weight.shape} does not "
                          f"broadcast to the target {target.shape} (one weight per class, "
                          f"the last dim)") from None
    neg = input._data < 0                   # -|x| and max(-x, 0) through where, not abs/relu:
    z = where(neg, input, -input)          # their zero gradient at x = 0 would be wrong here
    softplus_neg = (1 + z.exp()).log() + where(neg, -input, 0.0)   # -log sigmoid(x)
    scale = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * input + scale * softplus_neg
    return reduce_loss(loss if weight is None else loss * weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """t (log t - input) pointwise (input holds log-probabilities; 0 where t = 0), or
    e^t (t - input) with log_target. reduction="batchmean" divides the sum by the batch
    size (the true KL divergence); "mean" (PyTorch's default, with its warning) by the number
    of elements."""
    legacy = size_average is not None or reduce is not None
    reduction = legacy_reduction("kl_div", size_average, reduce, reduction)
    check_reduction("kl_div", reduction, REDUCTIONS + ("batchmean",))
    for what, x in (("input", input), ("target", target)):
        if isinstance(x, Tensor) and x.dtype.kind != "f":
            raise TypeError(f"kl_div: {what} must be floating-point (as in PyTorch), got "
                            f"{x.dtype}")
    if reduction == "mean" and not legacy:
        warn("kl_div: reduction='mean' divides the sum by the number of elements, not by the "
             "batch size; reduction='batchmean' gives the KL divergence (as PyTorch warns)")
    input, target = _pair("kl_div", input, target, "sum")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t) = t log t, 0 where t = 0 (NaN for t < 0, and target's gradient NaN at
        # t = 0, as PyTorch's)
        with np.errstate(divide="ignore", invalid="ignore"):
            tlogt = where(target._data == 0, 0.0, target * target.log())
        loss = tlogt - target * input
    if reduction == "batchmean":
        with np.errstate(invalid="ignore", divide="ignore"):     # a batch of 0: NaN
            return loss.sum() / (input.shape[0] if input.ndim else 1)
    return reduce_loss(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """The negative log-likelihood of target ~ Poisson(rate): e^input - t input with
    log_input (input = log rate), else input - t log(input + eps); full adds Stirling's
    t log t - t + 0.5 log(2 pi t) where t > 1."""
    reduction = legacy_reduction("poisson_nll_loss", size_average, reduce, reduction)
    input, target = _pair("poisson_nll_loss", input, target, reduction, floats="float32")
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:       # PyTorch's Stirling term, target's gradient included (NaN at t = 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(Tensor(target._data <= 1), 0.0)
    return reduce_loss(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi with full).

    var has the input's shape, or one dim less (one variance per row), or one dim of size 1
    where the input's is not (homoscedastic); a float is one variance for all. As PyTorch, the
    eps floor changes the value only: var's gradient reads it as if unclamped.
    """
    check_reduction("gaussian_nll_loss", reduction)
    input = as_tensor_arg("gaussian_nll_loss", "input", input)
    target = as_tensor_arg("gaussian_nll_loss", "target", target)
    if isinstance(var, float):          # (PyTorch takes a float, not an int, here)
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var must be >= 0, got {var}")
        var = Tensor(np.full(input.shape, var, dtype=input.dtype))
    var = as_tensor_arg("gaussian_nll_loss", "var", var)
    if var.size and bool((var._data < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                b for a, b in zip(input.shape, var.shape, strict=True) if a != b) == 1):
            raise ValueError(f"gaussian_nll_loss: var {var.shape} does not fit the input "
                             f"{input.shape} (its shape, one dim less, or one dim of size 1)")
    with no_grad():
        floor = Tensor(np.maximum(var._data, eps) - var._data)
    var = var + floor                       # max(var, eps) in value, var's gradient kept
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + e^(-t x)) per element (t is +1 or -1), reduced over every element."""
    reduction = legacy_reduction("soft_margin_loss", size_average, reduce, reduction)
    input, target = _pair("soft_margin_loss", input, target, reduction)
    if target.requires_grad and STATE.grad_enabled:
        raise OpError(f"soft_margin_loss{where_scope()}: the target gets no gradient (as in "
                      f"PyTorch); pass target.detach()")
    return reduce_loss(_softplus(-target * input), reduction)


def _softplus(z):
    """log(1 + e^z) without overflow: max(z, 0) + log(1 + e^-|z|), exact gradient at 0."""
    pos = z._data > 0
    return where(pos, z, 0.0) + (1 + where(pos, -z, z).exp()).log()


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where t = 1, max(0, margin - x) where t = -1 (PyTorch adds both terms where t is
    neither: x where t != -1, the hinge where t != 1)."""
    reduction = legacy_reduction("hinge_embedding_loss", size_average, reduce, reduction)
    input, target = _pair("hinge_embedding_loss", input, target, reduction, floats="input")
    t = np.broadcast_to(target._data, np.broadcast_shapes(input.shape, target.shape))
    hinge = (margin - input).clamp(min=0)
    loss = where(t != 1, hinge, 0.0) + where(t != -1, input, 0.0)
    return reduce_loss(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(t log sigmoid(x) + (1 - t) log sigmoid(-x)) (times weight), averaged over the
    classes (the last dim): one loss per sample, then reduced."""
    name = "multilabel_soft_margin_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    if isinstance(input, Tensor) and input.dtype.kind != "f":
        raise TypeError(f"{name}: input must be floating-point (as in PyTorch), got "
                        f"{input.dtype}")
    input, target = _pair(name, input, target, reduction)
    if input.ndim == 0:
        raise OpError(f"{name}{where_scope()}: input needs a class dim, got a 0-d tensor")
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * as_tensor_arg(name, "weight", weight)
    c = loss.shape[-1]
    return reduce_loss(loss.sum(dim=-1) / c, reduction)


__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "soft_margin_loss", "hinge_embedding_loss",
           "multilabel_soft_margin_loss"]
