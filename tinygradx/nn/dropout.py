"""torch.nn's dropout variants as modules (re-exported by tinygradx.nn): Dropout1d/2d/3d
(whole channels), AlphaDropout and FeatureAlphaDropout (for SELU networks). Each holds p and
inplace and calls its F function (functional/dropouts.py) while training; in evaluation each is
the identity. nn.Dropout itself is the seed's (layers.py)."""
from __future__ import annotations

from .. import functional as F
from ..functional.dropouts import check_p
from .module import Module

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        self.p, self.inplace = check_p(type(self).__name__, p), bool(inplace)

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """torch.nn.Dropout1d: zero whole channels of (N, C, L) or (C, L) while training, each with
    probability p; the others scale by 1 / (1 - p)."""
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """torch.nn.Dropout2d: zero whole channels of (N, C, H, W) while training."""
    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """torch.nn.Dropout3d: zero whole channels of (N, C, D, H, W) or (C, D, H, W) while
    training."""
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """torch.nn.AlphaDropout: alpha dropout of each element while training, keeping a
    standardised input's mean and variance (for SELU networks)."""
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """torch.nn.FeatureAlphaDropout: alpha dropout of whole channels (dims 0 and 1 drawn)."""
    _fn = staticmethod(F.feature_alpha_dropout)
