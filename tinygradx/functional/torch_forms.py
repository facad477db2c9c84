"""torch's top-level forms of the convolution, pooling and shuffle families (torch.conv2d,
torch.max_pool2d, torch.pixel_shuffle, ...), re-exported by the facade as tgx.conv2d, ...: the F
functions under torch's top-level signatures, which differ in two places: the max_poolNd
take no return_indices (max_pool1d_with_indices gives the pair), and adaptive_max_pool1d
always returns (values, indices).
"""
from __future__ import annotations

from . import adaptive_pool, pooling
from .adaptive_pool import adaptive_avg_pool1d
from .conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: F401
                   conv_transpose3d)
from .resample import channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: F401


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: F.max_pool1d without return_indices."""
    return pooling.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d: F.max_pool2d without return_indices."""
    return pooling.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: F.max_pool3d without return_indices."""
    return pooling.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, indices)."""
    return pooling.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """torch.avg_pool1d: F.avg_pool1d."""
    return pooling.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, indices), always."""
    return adaptive_pool.adaptive_max_pool1d(input, output_size, True)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]
