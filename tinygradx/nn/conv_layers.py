"""Convolution, pooling and upsampling layers as torch.nn has them (re-exported by
tinygradx.nn): each holds its arguments (and a conv its weight and bias, with torch's names,
shapes and initialisation) and calls the function of tinygradx/functional/conv.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..functional import conv as C
from .module import Module, Parameter
from ..functional.padding import pad as _pad
from .layers import uniform_table

__all__ = ["Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "Upsample"]

_PAD_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _n = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        name, n = type(self).__name__, self._n
        for arg, v in (("in_channels", in_channels), ("out_channels", out_channels),
                       ("groups", groups)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: {arg} must be a positive int, got {v!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels {in_channels} and out_channels "
                             f"{out_channels} must both be divisible by groups {groups}")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PAD_MODES}, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = C.ntuple(f"{name}: kernel_size", kernel_size, n, 1)
        self.stride = C.ntuple(f"{name}: stride", stride, n, 1)
        self.dilation = C.ntuple(f"{name}: dilation", dilation, n, 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be an int, a tuple, 'same' or "
                                 f"'valid', got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (as in torch)")
            self.padding = padding
        else:
            self.padding = C.ntuple(f"{name}: padding", padding, n)
        self.padding_mode = padding_mode
        # torch's reset_parameters: kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), ..),
        # and the bias takes the same bound
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(uniform_table(shape, bound))
        self.bias = Parameter(uniform_table((out_channels,), bound)) if bias else None
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def forward(self, x):
        padding = self.padding
        if self.padding_mode != "zeros" and padding != "valid":
            if padding == "same":
                pads = [(t // 2, t - t // 2) for t in
                        (d * (k - 1) for d, k in zip(self.dilation, self.kernel_size, strict=True))]
            else:
                pads = [(p, p) for p in padding]
            x = _pad(x, [v for pair in reversed(pads) for v in pair], mode=self.padding_mode)
            padding = 0
        fn = C.conv1d if self._n == 1 else C.conv2d
        return fn(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in ("valid", (0,) * self._n):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: weight (out_channels, in_channels/groups, k), bias (out_channels,);
    padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    _n = 1


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: weight (out_channels, in_channels/groups, kh, kw), bias
    (out_channels,); padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    _n = 2


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        fn = C.max_pool1d if isinstance(self, MaxPool1d) else C.max_pool2d
        return fn(x, self.kernel_size, self.stride, self.padding, self.dilation,
                  self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """torch.nn.MaxPool1d (F.max_pool1d)."""


class MaxPool2d(_MaxPoolNd):
    """torch.nn.MaxPool2d (F.max_pool2d)."""


class AvgPool1d(Module):
    """torch.nn.AvgPool1d (F.avg_pool1d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        return C.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """torch.nn.AvgPool2d (F.avg_pool2d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return C.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """torch.nn.AdaptiveAvgPool1d (F.adaptive_avg_pool1d)."""

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, x):
        return C.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """torch.nn.AdaptiveAvgPool2d (F.adaptive_avg_pool2d)."""

    def forward(self, x):
        return C.adaptive_avg_pool2d(x, self.output_size)


class Upsample(Module):
    """torch.nn.Upsample: F.interpolate with the module's size / scale_factor / mode."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return C.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"
