"""Convolution layers as torch.nn has them (re-exported by tinygradx.nn): Conv1d/2d/3d,
ConvTranspose1d/2d/3d, Unfold and Fold. Each holds its arguments (and a convolution its weight
and bias, with torch's names, shapes and initialisation) and calls the function of
tinygradx/functional/conv.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..functional import conv as C
from .module import Module, Parameter
from ..functional.padding import pad as _pad
from .layers import uniform_table

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Unfold", "Fold"]

_PAD_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvBase(Module):
    _n = 0
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 output_padding=0):
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
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode 'zeros' is supported (as in torch), "
                             f"got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = C.ntuple(f"{name}: kernel_size", kernel_size, n, 1)
        self.stride = C.ntuple(f"{name}: stride", stride, n, 1)
        self.dilation = C.ntuple(f"{name}: dilation", dilation, n, 1)
        self.output_padding = C.ntuple(f"{name}: output_padding", output_padding, n)
        if isinstance(padding, str):
            if self._transposed or padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be an int or a tuple"
                                 + ("" if self._transposed else ", 'same' or 'valid'")
                                 + f", got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (as in torch)")
            self.padding = padding
        else:
            self.padding = C.ntuple(f"{name}: padding", padding, n)
        self.padding_mode = padding_mode
        # torch's reset_parameters: kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), ..) with
        # fan_in = weight.shape[1] * prod(kernel), and the bias takes the same bound
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
        self.weight = Parameter(uniform_table(shape, bound))
        self.bias = Parameter(uniform_table((out_channels,), bound)) if bias else None
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def extra_repr(self):
        n = self._n
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _ConvNd(_ConvBase):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, x):
        padding = self.padding
        if self.padding_mode != "zeros" and padding != "valid":
            if padding == "same":
                pads = [(t // 2, t - t // 2) for t in
                        (d * (k - 1) for d, k in zip(self.dilation, self.kernel_size,
                                                     strict=True))]
            else:
                pads = [(p, p) for p in padding]
            x = _pad(x, C.pairs_to_pad(pads), mode=self.padding_mode)
            padding = 0
        fn = (C.conv1d, C.conv2d, C.conv3d)[self._n - 1]
        return fn(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: weight (out_channels, in_channels/groups, k), bias (out_channels,);
    padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    _n = 1


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: weight (out_channels, in_channels/groups, kh, kw), bias
    (out_channels,); padding_mode 'zeros', 'reflect', 'replicate' or 'circular'."""
    _n = 2


class Conv3d(_ConvNd):
    """torch.nn.Conv3d: weight (out_channels, in_channels/groups, kd, kh, kw)."""
    _n = 3


class _ConvTransposeNd(_ConvBase):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):
        out_pad = self.output_padding
        if output_size is not None:
            out_pad = C.transpose_output_padding(type(self).__name__, input, output_size,
                                                 self.stride, self.padding, self.kernel_size,
                                                 self.dilation)
        fn = (C.conv_transpose1d, C.conv_transpose2d, C.conv_transpose3d)[self._n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, out_pad,
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """torch.nn.ConvTranspose1d: weight (in_channels, out_channels/groups, k), bias
    (out_channels,); forward(input, output_size=None) picks the output_padding that gives
    output_size."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """torch.nn.ConvTranspose2d: weight (in_channels, out_channels/groups, kh, kw)."""
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """torch.nn.ConvTranspose3d: weight (in_channels, out_channels/groups, kd, kh, kw)."""
    _n = 3


class Unfold(Module):
    """torch.nn.Unfold: F.unfold (im2col) as a module."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        self.kernel_size, self.dilation, self.padding, self.stride = (kernel_size, dilation,
                                                                      padding, stride)

    def forward(self, input):
        return C.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """torch.nn.Fold: F.fold (col2im) as a module."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return C.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
