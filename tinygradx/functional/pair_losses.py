"""The losses over pairs and triplets of inputs, re-exported by functional: margin_ranking_loss,
cosine_embedding_loss, triplet_margin_loss, triplet_margin_with_distance_loss, and the distance
they measure with, pairwise_distance. torch.nn.functional's signatures and semantics; each a
composite of primitive ops (the gradient comes from the ops' own backward).
"""
from __future__ import annotations

import numpy as np

from ..autograd import OpError
from ..tensor import Tensor
from ..tensor.creation import minimum, where
from .losses import check_reduction, legacy_reduction, reduce_loss, where_scope


def _tensors(name, **named):
    for what, x in named.items():
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")
        if x.dtype.kind != "f":
            raise TypeError(f"{name}: {what} must be floating-point, got {x.dtype}")


def _broadcast(name, *tensors):
    try:
        return np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        shapes = ", ".join(str(t.shape) for t in tensors)
        raise OpError(f"{name}{where_scope()}: shapes {shapes} do not broadcast") from None


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (x1 and x2 broadcast together), as
    torch.nn.functional.pairwise_distance (eps keeps the norm's gradient finite at x1 = x2)."""
    _tensors("pairwise_distance", x1=x1, x2=x2)
    _broadcast("pairwise_distance", x1, x2)
    d = x1 - x2 + eps
    if d.ndim == 0:
        return d.abs() if p != 0 else (d != 0).to(d.dtype)
    return d.norm(p, dim=-1, keepdim=keepdim)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -t (x1 - x2) + margin): t = 1 asks x1 to rank above x2 by the margin, t = -1
    below. The three tensors have the same number of dims (as PyTorch) and broadcast."""
    name = "margin_ranking_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    check_reduction(name, reduction)
    _tensors(name, input1=input1, input2=input2)
    if not isinstance(target, Tensor):
        raise TypeError(f"{name}: target must be a Tensor, got {type(target).__name__}")
    if not input1.ndim == input2.ndim == target.ndim:
        raise OpError(f"{name}{where_scope()}: input1 {input1.shape}, input2 {input2.shape} "
                      f"and target {target.shape} must have the same number of dims")
    _broadcast(name, input1, input2, target)
    return reduce_loss((-target * (input1 - input2) + margin).clamp(min=0), reduction)


_EPSILON = 1e-12     # PyTorch's floor under each squared norm of cosine_embedding_loss


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where t = 1, max(0, cos(x1, x2) - margin) where t = -1 (0 for any
    other t); cos over the last dim, each squared norm plus 1e-12 as in PyTorch. Inputs (N, D)
    with a target (N,), or (D,) with a 0-d target."""
    name = "cosine_embedding_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    check_reduction(name, reduction)
    _tensors(name, input1=input1, input2=input2)
    if not isinstance(target, Tensor):
        raise TypeError(f"{name}: target must be a Tensor, got {type(target).__name__}")
    if target.ndim not in (0, 1):
        raise OpError(f"{name}{where_scope()}: target must be 0-d or 1-d (one label per "
                      f"pair), got {target.shape}")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise OpError(f"{name}{where_scope()}: a {target.ndim}-d target needs {want}-d inputs, "
                      f"got input1 {input1.shape} and input2 {input2.shape}")
    d = target.ndim
    prod = (input1 * input2).sum(dim=d)
    mag1 = (input1 * input1).sum(dim=d) + _EPSILON
    mag2 = (input2 * input2).sum(dim=d) + _EPSILON
    cos = prod / (mag1 * mag2).sqrt()
    _broadcast(name, cos, target)
    t = np.broadcast_to(target._data, np.broadcast_shapes(cos.shape, target.shape))
    loss = where(t == 1, 1 - cos, 0.0) + where(t == -1, (cos - margin).clamp(min=0), 0.0)
    return reduce_loss(loss, reduction)


def _triplet_dims(name, anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise OpError(f"{name}{where_scope()}: anchor {anchor.shape}, positive "
                      f"{positive.shape} and negative {negative.shape} must have the same "
                      f"number of dims")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with d = pairwise_distance(., ., p, eps); swap uses
    min(d(a, n), d(p, n)) for the negative distance (Balntas et al. 2016)."""
    name = "triplet_margin_loss"
    reduction = legacy_reduction(name, size_average, reduce, reduction)
    check_reduction(name, reduction)
    if not margin > 0:
        raise ValueError(f"{name}: margin must be greater than 0, got {margin}")
    _tensors(name, anchor=anchor, positive=positive, negative=negative)
    _triplet_dims(name, anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return reduce_loss((margin + d_pos - d_neg).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance: distance_function(x, y) -> a Tensor of
    distances (default pairwise_distance)."""
    name = "triplet_margin_with_distance_loss"
    check_reduction(name, reduction)
    if not margin > 0:
        raise ValueError(f"{name}: margin must be greater than 0, got {margin}")
    for what, x in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")
    _triplet_dims(name, anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    if not callable(dist):
        raise TypeError(f"{name}: distance_function must be callable, got "
                        f"{type(dist).__name__}")
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return reduce_loss((margin + d_pos - d_neg).clamp(min=0), reduction)


__all__ = ["pairwise_distance", "margin_ranking_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss"]
