"""Pooling layers as torch.nn has them (re-exported by tinygradx.nn): max, average, LP,
adaptive and fractional pooling and max unpooling, in 1, 2 and 3 spatial dims. Each holds its
arguments and calls the function of tinygradx/functional/pooling.py or adaptive_pool.py.
"""
from __future__ import annotations

from ..functional import adaptive_pool as A, pooling as P
from ..functional.conv import ntuple
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveAvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """torch.nn.MaxPool1d (F.max_pool1d); return_indices=True gives (values, indices)."""
    _fn = staticmethod(P.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """torch.nn.MaxPool2d (F.max_pool2d)."""
    _fn = staticmethod(P.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """torch.nn.MaxPool3d (F.max_pool3d)."""
    _fn = staticmethod(P.max_pool3d)


class AvgPool1d(Module):
    """torch.nn.AvgPool1d (F.avg_pool1d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        # torch keeps this one's arguments as 1-tuples
        self.kernel_size = ntuple("AvgPool1d: kernel_size", kernel_size, 1, 1)
        self.stride = ntuple("AvgPool1d: stride", stride if stride is not None else
                               kernel_size, 1, 1)
        self.padding = ntuple("AvgPool1d: padding", padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """torch.nn.AvgPool2d (F.avg_pool2d)."""
    _fn = staticmethod(P.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """torch.nn.AvgPool3d (F.avg_pool3d)."""
    _fn = staticmethod(P.avg_pool3d)


class _MaxUnpoolNd(Module):
    _n, _fn = 0, None

    def __init__(self, kernel_size, stride=None, padding=0):
        name, n = type(self).__name__, self._n
        self.kernel_size = ntuple(f"{name}: kernel_size", kernel_size, n, 1)
        self.stride = ntuple(f"{name}: stride", stride if stride is not None else
                               kernel_size, n, 1)
        self.padding = ntuple(f"{name}: padding", padding, n)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool1d: forward(input, indices, output_size=None) puts each value back
    at its MaxPool1d index, zeros elsewhere."""
    _n, _fn = 1, staticmethod(P.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool2d (F.max_unpool2d)."""
    _n, _fn = 2, staticmethod(P.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """torch.nn.MaxUnpool3d (F.max_unpool3d)."""
    _n, _fn = 3, staticmethod(P.max_unpool3d)


class _AdaptiveMaxPoolNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool1d (F.adaptive_max_pool1d)."""
    _fn = staticmethod(A.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool2d (F.adaptive_max_pool2d)."""
    _fn = staticmethod(A.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """torch.nn.AdaptiveMaxPool3d (F.adaptive_max_pool3d)."""
    _fn = staticmethod(A.adaptive_max_pool3d)


class _AdaptiveAvgPoolNd(Module):
    _fn = None

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool1d (F.adaptive_avg_pool1d)."""
    _fn = staticmethod(A.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool2d (F.adaptive_avg_pool2d)."""
    _fn = staticmethod(A.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """torch.nn.AdaptiveAvgPool3d (F.adaptive_avg_pool3d)."""
    _fn = staticmethod(A.adaptive_avg_pool3d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, self.norm_type, self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """torch.nn.LPPool1d (F.lp_pool1d)."""
    _fn = staticmethod(P.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """torch.nn.LPPool2d (F.lp_pool2d)."""
    _fn = staticmethod(P.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """torch.nn.LPPool3d (F.lp_pool3d)."""
    _fn = staticmethod(P.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be "
                             f"specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else \
                (output_ratio,)
            if not all(0 < r < 1 for r in ratios):
                raise ValueError(f"{name}: output_ratio must be between 0 and 1 (exclusive), "
                                 f"got {output_ratio!r}")
        self.kernel_size, self.output_size, self.output_ratio = (kernel_size, output_size,
                                                                 output_ratio)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """torch.nn.FractionalMaxPool2d (F.fractional_max_pool2d): fresh window starts each call
    unless _random_samples (N, C, 2) is given."""
    _fn = staticmethod(A.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """torch.nn.FractionalMaxPool3d (F.fractional_max_pool3d)."""
    _fn = staticmethod(A.fractional_max_pool3d)
