"""Resampling, shuffling and padding layers as torch.nn has them (re-exported by
tinygradx.nn): Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle,
PixelUnshuffle, ChannelShuffle, and the padding modules ZeroPad, ConstantPad, ReflectionPad,
ReplicationPad and CircularPad in 1, 2 and 3 dims. Each holds its arguments and calls
tinygradx/functional/resample.py or F.pad.
"""
from __future__ import annotations

import numpy as np

from ..functional import resample as R
from ..functional.padding import pad as _pad
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
           "PixelUnshuffle", "ChannelShuffle"]


class Upsample(Module):
    """torch.nn.Upsample: F.interpolate with the module's size / scale_factor / mode."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        self.size, self.mode = size, mode
        # torch keeps a scale factor as float(s)
        self.scale_factor = (tuple(float(s) for s in scale_factor)
                             if isinstance(scale_factor, (tuple, list)) else
                             float(scale_factor) if scale_factor is not None else None)
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input):
        return R.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """torch.nn.UpsamplingNearest2d: Upsample(mode='nearest') for (N, C, H, W)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """torch.nn.UpsamplingBilinear2d: Upsample(mode='bilinear', align_corners=True)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """torch.nn.PixelShuffle: (*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor):
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return R.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """torch.nn.PixelUnshuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor):
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return R.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """torch.nn.ChannelShuffle: F.channel_shuffle with the module's groups."""

    def __init__(self, groups):
        self.groups = groups

    def forward(self, input):
        return R.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


# ------------------------------------------------------------------------------------------
# padding modules: F.pad with a fixed padding (an int pads both ends of the last n dims)
# ------------------------------------------------------------------------------------------

class _PadNd(Module):
    _n, _mode = 0, "constant"

    def __init__(self, padding, value=0.0):
        if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool):
            padding = (int(padding),) * (2 * self._n)
        elif not isinstance(padding, (tuple, list)):
            raise TypeError(f"{type(self).__name__}: padding must be an int or a tuple of "
                            f"{2 * self._n} ints, got {padding!r}")
        self.padding, self.value = tuple(padding), value

    def forward(self, input):
        if self._mode == "constant":
            return _pad(input, self.padding, "constant", self.value)
        return _pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ZeroPadNd(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__(padding)


class _ReplicationPadNd(_ReflectionPadNd):
    _mode = "replicate"


class _CircularPadNd(_ReflectionPadNd):
    _mode = "circular"


class ZeroPad1d(_ZeroPadNd):
    """torch.nn.ZeroPad1d: zeros at both ends of the last dim (F.pad; negative amounts crop)."""
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """torch.nn.ZeroPad2d: zeros around the last 2 dims, padding (left, right, top, bottom)."""
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """torch.nn.ZeroPad3d: zeros around the last 3 dims."""
    _n = 3


class ConstantPad1d(_ConstantPadNd):
    """torch.nn.ConstantPad1d(padding, value): value at both ends of the last dim."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """torch.nn.ConstantPad2d(padding, value): value around the last 2 dims."""
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """torch.nn.ConstantPad3d(padding, value): value around the last 3 dims."""
    _n = 3


class ReflectionPad1d(_ReflectionPadNd):
    """torch.nn.ReflectionPad1d: the last dim mirrored at its ends (F.pad, reflect)."""
    _n = 1


class ReflectionPad2d(_ReflectionPadNd):
    """torch.nn.ReflectionPad2d: the last 2 dims mirrored at their edges."""
    _n = 2


class ReflectionPad3d(_ReflectionPadNd):
    """torch.nn.ReflectionPad3d: the last 3 dims mirrored at their edges."""
    _n = 3


class ReplicationPad1d(_ReplicationPadNd):
    """torch.nn.ReplicationPad1d: the end cells of the last dim repeated (F.pad, replicate)."""
    _n = 1


class ReplicationPad2d(_ReplicationPadNd):
    """torch.nn.ReplicationPad2d: the edge cells of the last 2 dims repeated."""
    _n = 2


class ReplicationPad3d(_ReplicationPadNd):
    """torch.nn.ReplicationPad3d: the edge cells of the last 3 dims repeated."""
    _n = 3


class CircularPad1d(_CircularPadNd):
    """torch.nn.CircularPad1d: the last dim wrapped around (F.pad, circular)."""
    _n = 1


class CircularPad2d(_CircularPadNd):
    """torch.nn.CircularPad2d: the last 2 dims wrapped around."""
    _n = 2


class CircularPad3d(_CircularPadNd):
    """torch.nn.CircularPad3d: the last 3 dims wrapped around."""
    _n = 3


__all__ += [f"{kind}Pad{n}d" for kind in ("Zero", "Constant", "Reflection", "Replication",
                                           "Circular") for n in (1, 2, 3)]
