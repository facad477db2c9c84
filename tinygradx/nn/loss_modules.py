"""The losses of tinygradx.functional as modules, as torch.nn has them (re-exported by nn): each
holds its arguments (reduction, weights, ignore_index, ...) and calls the F function."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
            "KLDivLoss", "CrossEntropyLoss", "NLLLoss"]


class _Loss(Module):
    def __init__(self, reduction="mean"):
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """F.mse_loss as a module."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """F.l1_loss as a module."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss as a module."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """F.huber_loss as a module."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_Loss):
    """F.binary_cross_entropy as a module (weight: a constant per-element rescaling)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits as a module."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """F.kl_div as a module."""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


def _class_weight_buffer(module, weight):
    """A class weight is state, as in PyTorch: a buffer (in state_dict) when given."""
    if weight is None:
        module.weight = None
    else:
        module.register_buffer("weight", weight)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy as a module (weight: a constant (C,) rescaling of the classes)."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(reduction)
        _class_weight_buffer(self, weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """F.nll_loss as a module (weight: a constant (C,) rescaling of the classes)."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        _class_weight_buffer(self, weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)
