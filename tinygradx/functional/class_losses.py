"""The losses whose target names classes, re-exported by functional: cross_entropy, nll_loss,
multi_margin_loss, multilabel_margin_loss, and their checks (`class_target`, `check_targets`).

cross_entropy's plain case (class indices, no weight) is one fused node (ops/fused.py's
CrossEntropy); a class weight or probability targets run op by op here, with PyTorch's
formulas. Layouts are PyTorch's: input (N, C) with target (N,), (C,) with a 0-d target,
(N, C, d1, ...) with (N, d1, ...).

'mean' over class indices divides by the sum of the targets' weights (their count without a
weight), leaving out targets equal to ignore_index. As in PyTorch it is NaN when that sum is 0:
every target ignored or no rows at all (a zero gradient), or weights of 0 (a NaN gradient, as
PyTorch's). A caller that may meet such a batch decides what it means (models/training skips
it).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import STATE, OpError
from ..ops import fused
from ..tensor import Tensor
from .losses import (as_tensor_arg, check_reduction, constant_arg, legacy_reduction,
                     reduce_loss, where_scope)

_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.uint8))   # PyTorch's: Long or Byte


def class_target(name, input, target, ignore_index, reduction, probabilities=False):
    """The checks every class loss makes before it computes: reduction, input, target dtype,
    shape.

    Returns the target as an integer array of the expected shape. With `probabilities` a
    float target of the input's shape (class probabilities) is returned as it is.
    """
    check_reduction(name, reduction)
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise TypeError(f"{name}: ignore_index must be an int, got {ignore_index!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim == 0:
        raise OpError(f"{name}{where_scope()}: input must have a class dim, got a 0-d tensor")
    if input.dtype.kind != "f":
        raise TypeError(f"{name}{where_scope()}: input must be floating-point, got "
                        f"{input.dtype}")
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if probabilities and t.dtype.kind == "f":
        if t.shape != input.shape:
            raise OpError(f"{name}{where_scope()}: a float target holds class probabilities "
                          f"and needs the input's shape {input.shape}, got {t.shape} of dtype "
                          f"{t.dtype}; class indices need an integer (int64) tensor")
        return t
    if t.dtype not in _INDEX_DTYPES:
        raise OpError(f"{name}{where_scope()}: target must hold class indices in an integer "
                      f"tensor of dtype int64 (or uint8), as in PyTorch; got dtype {t.dtype}")
    if input.ndim == 1:
        if t.ndim != 0:
            raise OpError(f"{name}{where_scope()}: logits {input.shape} need a scalar target, "
                          f"got {t.shape}")
        return t
    expected = (input.shape[0],) + input.shape[2:]
    if t.shape != expected:
        raise OpError(f"{name}{where_scope()}: logits of shape {input.shape} need targets of "
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
    out = (t < 0) | (t >= n_classes)
    if ignore_index is not None:
        out &= t != ignore_index
    bad = t[out]
    if bad.size:
        also = "" if ignore_index is None else f" or ignore_index={ignore_index}"
        raise OpError(f"{name}{where_scope()}: target {bad.ravel()[0]} is out of range for "
                      f"{n_classes} classes (input {shape}); valid targets are "
                      f"0..{n_classes - 1}{also}")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits and class-index or class-probability targets, as
    torch.nn.functional.cross_entropy.

    Shapes: input (N, C) with target (N,), or (C,) with a scalar target, or (N, C, d1, ...)
    with target (N, d1, ...); a float target of the input's shape holds class probabilities.
    Targets equal to ignore_index add nothing and are not counted by 'mean' (class indices
    only). label_smoothing e mixes the target with the uniform distribution. weight (C,)
    rescales each class; with class indices 'mean' then divides by the sum of the targets'
    weights, with probabilities by the number of rows, as PyTorch (NaN when it is 0). The
    plain case (class indices, no weight) is one fused node; weights and probabilities run
    op by op.
    """
    reduction = legacy_reduction("cross_entropy", size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], "
                         f"got {label_smoothing}")
    t = class_target("cross_entropy", input, target, ignore_index, reduction, probabilities=True)
    if t.dtype.kind == "f" or weight is not None:
        return cross_entropy_extended(input, target, t, weight, ignore_index, reduction,
                                      label_smoothing)
    x, t = _class_rows(input, t.astype(np.int64, copy=False))   # the fused op checks range
    out = fused.CrossEntropy.apply(x, target=t, ignore_index=ignore_index, reduction=reduction,
                                   label_smoothing=label_smoothing)
    if reduction == "none" and input.ndim != 2:
        out = out.reshape(input.shape[:1] + input.shape[2:] if input.ndim > 2 else ())
    return out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities at class-index targets: -w[y] x[y].

    Layouts as cross_entropy. Targets equal to ignore_index add nothing and are not counted
    by 'mean', which divides by the sum of w[y] over the rest, as PyTorch (NaN when 0).
    """
    reduction = legacy_reduction("nll_loss", size_average, reduce, reduction)
    t = class_target("nll_loss", input, target, ignore_index, reduction)
    w = _class_weight("nll_loss", weight, input)
    x, t = _class_rows(input, t.astype(np.int64, copy=False))
    check_targets("nll_loss", t, x.shape[1], ignore_index, input.shape)
    return _class_loss(x, t, w, ignore_index, reduction, input, 0.0)


def _class_weight(name, weight, input):
    """weight as a constant (C,) array of the input's dtype, checked."""
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name}: weight must be a Tensor of shape (C,), got "
                        f"{type(weight).__name__}")
    if weight.requires_grad and STATE.grad_enabled:
        raise OpError(f"{name}{where_scope()}: weight is read as a constant and gets no "
                      f"gradient here; pass weight.detach()")
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    if weight.shape != (c,):
        raise OpError(f"{name}{where_scope()}: weight must hold one value per class, shape "
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


def _class_loss(logp, t, w, ignore_index, reduction, input, eps):
    """-w[t] logp[t] per row (with smoothing e: (1 - e) that + e / C sum_c w_c (-logp_c)),
    reduced. logp (M, C) rows, t (M,) targets checked.

    'none' gives every row (0 where ignored) in the target's shape. 'sum' and 'mean' add only
    the rows kept, so an ignored row gets an exact zero gradient even when 'mean' is NaN."""
    keep = t != ignore_index
    c = logp.shape[1]
    if reduction == "none":
        rows, tk = np.arange(t.shape[0]), np.where(keep, t, 0)
        mask = keep
    else:
        rows = np.flatnonzero(keep)
        tk, mask = t[rows], None
    wt = np.ones(len(rows), logp.dtype) if w is None else w[tk].astype(logp.dtype, copy=False)
    if mask is not None:
        wt = np.where(mask, wt, 0).astype(logp.dtype, copy=False)
    losses = -logp[rows, tk] * Tensor(wt)        # only the kept rows' entries, unless 'none'
    if eps:
        sel = logp if reduction == "none" else logp[rows]
        smooth = -(sel if w is None else sel * Tensor(w)).sum(dim=1)
        scale = (eps / c) * (np.ones(len(rows)) if mask is None else mask)
        losses = losses * (1 - eps) + smooth * Tensor(scale.astype(logp.dtype, copy=False))
    if reduction == "none":
        if input.ndim == 2:
            return losses
        return losses.reshape(input.shape[:1] + input.shape[2:] if input.ndim > 2 else ())
    total = losses.sum()
    if reduction == "sum":
        return total
    return _mean_over(total, float(wt.sum()), len(rows))


def _mean_over(total, denominator, kept):
    """total / denominator, PyTorch's NaN when the denominator is 0: with a zero gradient
    when no row was kept, a NaN one when the kept rows weigh 0 (as PyTorch's)."""
    if denominator:
        return total / denominator
    return total * 0.0 + math.nan if not kept else total * math.nan


def cross_entropy_extended(input, target, t, weight, ignore_index, reduction, eps):
    """cross_entropy with a class weight or probability targets (t: the checked target)."""
    w = _class_weight("cross_entropy", weight, input)
    if t.dtype.kind == "f":
        return _cross_entropy_probs(input, target, w, ignore_index, reduction, eps)
    x, t = _class_rows(input, t.astype(np.int64, copy=False))
    check_targets("cross_entropy", t, x.shape[1], ignore_index, input.shape)
    logp = fused.LogSoftmax.apply(x, dim=1)
    return _class_loss(logp, t, w, ignore_index, reduction, input, eps)


def _cross_entropy_probs(input, target, w, ignore_index, reduction, eps):
    """-sum_c w_c q_c log softmax(x)_c with q = (1 - e) p + e / C; 'mean' divides by the
    number of rows (N times d1...), not by the weights (NaN with no rows, as PyTorch)."""
    if ignore_index != -100:
        raise OpError(f"cross_entropy{where_scope()}: ignore_index={ignore_index} applies to "
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
    rows = input.numel() // c if c else math.prod(input.shape[:dim] + input.shape[dim + 1:])
    return _mean_over(total, float(rows), rows)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """The multi-class hinge: sum over i != y of max(0, margin - x[y] + x[i])^p (times
    w[y]), divided by C, per sample; input (N, C) or (C,), target (N,) or 0-d class ids."""
    name = "multi_margin_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    check_reduction(name, reduction)
    if p not in (1, 2) or isinstance(p, bool):
        raise ValueError(f"{name}: p must be 1 or 2 (as in PyTorch), got {p!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (1, 2) or input.dtype.kind != "f":
        raise OpError(f"{name}{where_scope()}: input must be a floating (N, C) or (C,) "
                      f"tensor, got {input.shape} {input.dtype}")
    t = as_tensor_arg(name, "target", target)._data
    if t.dtype != np.int64:
        raise OpError(f"{name}{where_scope()}: target must hold class indices in an int64 "
                      f"tensor, got dtype {t.dtype}")
    x = input.reshape(1, -1) if input.ndim == 1 else input
    n, c = x.shape
    if t.shape != ((n,) if input.ndim == 2 else ()) and t.size != n:
        raise OpError(f"{name}{where_scope()}: input {input.shape} needs a target of shape "
                      f"{(n,) if input.ndim == 2 else ()}, got {t.shape}")
    t = t.reshape(-1)
    check_targets(name, t, c, None, input.shape)
    if weight is not None:
        weight = constant_arg(name, "weight", weight)
        if weight.ndim != 1 or weight.shape[0] != c:
            raise ValueError(f"{name}{where_scope()}: weight must be one-dimensional, one "
                             f"value per class ({c},), got {weight.shape}")
        if weight.dtype != input.dtype:
            raise TypeError(f"{name}: weight has dtype {weight.dtype} but the input "
                            f"{input.dtype}; they must match (as in PyTorch)")
    rows = np.arange(n)
    z = (margin - x[rows, t].reshape(n, 1) + x).clamp(min=0)       # (N, C)
    other = np.ones((n, c), bool)
    other[rows, t] = False                                         # i != y only
    h = z if p == 1 else z.square()
    if weight is not None:
        h = h * weight._data[t].reshape(n, 1)
    loss = (h * Tensor(other.astype(x.dtype))).sum(dim=1) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge: for the target classes y_j (the leading entries of each target
    row, up to the first -1) and every class i not among them, max(0, 1 - (x[y_j] - x[i])),
    summed and divided by C, per sample; input and target (N, C) or (C,)."""
    name = "multilabel_margin_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    check_reduction(name, reduction)
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    t = as_tensor_arg(name, "target", target)._data
    if input.ndim not in (1, 2) or input.dtype.kind != "f":
        raise OpError(f"{name}{where_scope()}: input must be a floating (N, C) or (C,) "
                      f"tensor, got {input.shape} {input.dtype}")
    if t.dtype != np.int64 or t.shape != input.shape:
        raise OpError(f"{name}{where_scope()}: target must be an int64 tensor of the input's "
                      f"shape {input.shape}, got {t.shape} {t.dtype}")
    x = input.reshape(1, -1) if input.ndim == 1 else input
    t2 = t.reshape(x.shape)
    n, c = x.shape
    is_target = np.zeros((n, c), bool)
    first = np.zeros((n, c), bool)            # the leading run of class ids before a -1
    for r in range(n):
        for j in range(c):
            y = int(t2[r, j])
            if y < 0:
                break
            if y >= c:
                raise OpError(f"{name}{where_scope()}: target {y} is out of range for {c} "
                              f"classes")
            first[r, j] = True
            is_target[r, y] = True
    # pairs (j: a target slot, i: a non-target class): max(0, 1 - x[y_j] + x[i])
    ys = np.where(first, t2, 0)
    xy = x[np.arange(n)[:, None], ys]                              # (N, C) x[y_j]
    z = (1 - xy.reshape(n, c, 1) + x.reshape(n, 1, c)).clamp(min=0)  # (N, C_j, C_i)
    pair = first[:, :, None] & ~is_target[:, None, :]
    loss = (z * Tensor(pair.astype(x.dtype))).sum(dim=(1, 2)) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


__all__ = ["cross_entropy", "nll_loss", "multi_margin_loss", "multilabel_margin_loss"]
