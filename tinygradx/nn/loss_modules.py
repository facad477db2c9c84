"""The losses of tinygradx.functional as modules, as torch.nn has them (re-exported by nn): each
holds its arguments (reduction, weights, ignore_index, ...) and calls the F function.

The constructors take PyTorch's arguments in PyTorch's order, the deprecated `size_average`
and `reduce` included where PyTorch's module has them: given, they set `self.reduction` once,
at construction, with PyTorch's mapping and its UserWarning (functional/losses.py,
`legacy_reduction`). A class weight (and BCEWithLogitsLoss's pos_weight) is a buffer, as in
PyTorch: in state_dict() when given.
"""
from __future__ import annotations

from .. import functional as F
from ..functional.losses import legacy_reduction
from .module import Module

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "CrossEntropyLoss", "NLLLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "SoftMarginLoss", "HingeEmbeddingLoss", "MultiLabelSoftMarginLoss",
           "MultiMarginLoss", "MultiLabelMarginLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        self.reduction = legacy_reduction(type(self).__name__, size_average, reduce, reduction)


def _buffer(module, name, tensor):
    """A weight is state, as in PyTorch: a buffer (in state_dict) when given, else None."""
    if tensor is None:
        setattr(module, name, None)
    else:
        module.register_buffer(name, tensor)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)


class L1Loss(_Loss):
    """F.l1_loss as a module."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """F.mse_loss as a module."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss as a module."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """F.huber_loss as a module (PyTorch's has no size_average/reduce)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """F.binary_cross_entropy as a module (weight: a constant per-element rescaling)."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits as a module."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)
        _buffer(self, "pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """F.kl_div as a module."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CrossEntropyLoss(_WeightedLoss):
    """F.cross_entropy as a module (weight: a constant (C,) rescaling of the classes)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """F.nll_loss as a module (weight: a constant (C,) rescaling of the classes)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """F.poisson_nll_loss as a module."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """F.gaussian_nll_loss as a module: forward(input, target, var)."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """F.soft_margin_loss as a module."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """F.hinge_embedding_loss as a module."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """F.multilabel_soft_margin_loss as a module."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """F.multi_margin_loss as a module."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        if p not in (1, 2) or isinstance(p, bool):
            raise ValueError(f"MultiMarginLoss: p must be 1 or 2 (as in PyTorch), got {p!r}")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: weight must be one-dimensional, got "
                             f"{weight.shape}")
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """F.multilabel_margin_loss as a module."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """F.cosine_embedding_loss as a module: forward(input1, input2, target)."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """F.margin_ranking_loss as a module: forward(input1, input2, target)."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """F.triplet_margin_loss as a module: forward(anchor, positive, negative)."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                 reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if not margin > 0:
            raise ValueError(f"TripletMarginLoss: margin must be greater than 0, got {margin}")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """F.triplet_margin_with_distance_loss as a module: forward(anchor, positive, negative)."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if not margin > 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: margin must be greater than 0, "
                             f"got {margin}")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
