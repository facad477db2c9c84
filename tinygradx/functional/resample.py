"""Resampling as torch.nn.functional has it (re-exported by tinygradx.functional): interpolate
(and the older upsample, upsample_nearest, upsample_bilinear), pixel_shuffle, pixel_unshuffle,
channel_shuffle.

interpolate is separable: each spatial dim is resampled in turn, and one dim's resampling is a
weighted sum of T input cells per output cell (`adaptive_pool.weighted_taps`: an index_select, a
product with constant weights and a sum; nearest is the index_select alone). The modes differ
only in the table of cells and weights each builds, with torch's arithmetic (its source-index
formula, in float32 for float32 input, its special cases): linear 2 cells, cubic 4 (Keys'
kernel, a = -0.75, borders clamped), antialias a filter stretched over the whole footprint of a
shrinking output cell (PIL's, as torch), area the adaptive average. The weights are constants
and the input's dtype is never cast down to them, so gradients of every order come from the ops.

uint8 input takes torch's own integer path (bilinear and bicubic): weights as 16-bit fixed-point
integers, each dim rounded back to 0..255 before the next, the last dim first. It is written with
integer ops on an int64 copy (products, a sum, a shift, a clamp), so the values are torch's bit
for bit, not a float blend cast to uint8.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import OpError
from ..tensor import Tensor
from .conv import check_tensor, ntuple
from .adaptive_pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                            weighted_taps)

_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


def _scale(L, o, align_corners, sf, t):
    """torch's ratio of input to output coordinates, in the arithmetic type t."""
    if align_corners:
        return t(L - 1) / t(o - 1) if o > 1 else t(0)
    return t(1.0 / sf) if sf is not None and sf > 0 else t(L) / t(o)


def _nearest_cells(L, o, sf, exact, t, small2d):
    """(o, 1) source cells of nearest / nearest-exact. torch's 2-d kernel for outputs with
    H + W <= 128 has its own index functions (a float32 scale; for nearest, a kept size
    copies and a doubled one halves); the general kernel computes in the opmath type t."""
    i = np.arange(o)
    if small2d and not exact:
        if o == L:
            return i[:, None]
        if o == 2 * L:
            return (i >> 1)[:, None]
        s = np.float32(1.0 / sf) if sf is not None and sf > 0 else np.float32(L) / np.float32(o)
        if exact:
            src = np.floor(np.float32(np.float64(i + 0.5) * np.float64(s)))
        else:
            src = np.floor(i.astype(np.float32) * s)
    else:
        s = _scale(L, o, False, sf, t)
        if exact:
            src = np.maximum(s * (i.astype(t) + t(0.5)) - t(0.5), t(0))
            src = np.floor(np.float32(src + t(0.5)))
        else:
            src = np.floor(np.float32(s * i.astype(t)))
    return np.minimum(src.astype(np.int64), L - 1)[:, None]


def _linear_taps(L, o, align_corners, sf, t):
    i = np.arange(o)
    if o == L:                                  # torch copies a dim whose size is kept
        return np.stack([i, i], 1), np.stack([np.ones(o, t), np.zeros(o, t)], 1)
    s = _scale(L, o, align_corners, sf, t)
    src = s * i.astype(t) if align_corners else \
        np.maximum(s * (i.astype(t) + t(0.5)) - t(0.5), t(0))
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < L - 1)
    lam = np.clip(src - i0.astype(t), t(0), t(1))
    return np.stack([i0, i1], 1), np.stack([t(1) - lam, lam], 1)


def _cubic(x, a):
    """Keys' cubic convolution kernel at distance x (|x| < 2), parameter a."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0 * x))


def _cubic_taps(L, o, align_corners, sf, t):
    s = _scale(L, o, align_corners, sf, t)
    i = np.arange(o).astype(t)
    src = s * i if align_corners else s * (i + t(0.5)) - t(0.5)     # not clamped at 0
    i0 = np.minimum(np.floor(np.float32(src)).astype(np.int64), L - 1)
    lam = np.clip(src - i0.astype(t), t(0), t(1))[:, None]
    d = np.array([1, 0, -1, -2], t)[None, :] + lam                     # distances to the cells
    cells = np.clip(i0[:, None] + np.arange(-1, 3)[None, :], 0, L - 1)
    return cells, _cubic(d, t(-0.75)).astype(t)


def _filter(interp, antialias):
    if interp == 2:
        return lambda x: np.maximum(1 - np.abs(x), 0 * x)
    a = -0.5 if antialias else -0.75
    return lambda x: _cubic(x, a)


def _aa_taps(L, o, align_corners, sf, interp, t):
    """PIL's antialiasing weights as torch computes them: a shrinking output cell averages its
    whole footprint through the filter stretched by the scale, normalised to sum 1."""
    s = _scale(L, o, align_corners, sf, t)
    support = t(interp / 2) * s if s >= 1 else t(interp / 2)
    size = int(math.ceil(support)) * 2 + 1
    inv = t(1) / s if s >= 1 else t(1)
    center = s * (np.arange(o).astype(t) + t(0.5))
    lo = np.maximum(np.trunc(center - support + t(0.5)), 0).astype(np.int64)
    n = np.clip(np.minimum(np.trunc(center + support + t(0.5)).astype(np.int64), L) - lo,
                0, size)
    j = np.arange(size)[None, :]
    w = _filter(interp, True)((j + lo[:, None] - center[:, None] + t(0.5)) * inv)
    w = np.where(j < n[:, None], w, 0).astype(t)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1), w).astype(t)
    return np.minimum(lo[:, None] + j, L - 1), w


def _uint8_taps(L, o, align_corners, sf, interp, antialias):
    """torch's uint8 weights: float64 weights (the antialiasing ones, or the plain ones with
    out-of-range cells folded onto the border cell) as int16 with `precision` fraction bits."""
    if antialias:
        cells, w = _aa_taps(L, o, align_corners, sf, interp, np.float64)
    else:
        s = _scale(L, o, align_corners, sf, np.float64)
        i = np.arange(o, dtype=np.float64)
        src = s * i if align_corners else s * (i + 0.5) - 0.5
        if interp == 2 and not align_corners:
            src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(np.float32(src)).astype(np.int64), L - 1)
        lam = np.clip(src - i0, 0.0, 1.0)
        half = interp // 2
        first = i0 - half + 1
        lo = np.maximum(first, 0)
        n = np.clip(np.minimum(i0 + half + 1, L) - lo, 0, interp)
        w = np.zeros((o, interp))
        filt = _filter(interp, False)
        for r in range(o):                        # o rows of interp (2 or 4) cells: tables
            slot = 0
            for jj in range(interp):
                if first[r] + jj <= 0:
                    slot = 0
                elif first[r] + jj >= L - 1:
                    slot = n[r] - 1
                w[r, slot] += filt(np.float64(jj + 1 - half) - lam[r])
                slot += 1
        cells = np.minimum(lo[:, None] + np.arange(interp)[None, :], L - 1)
        w = np.where(np.arange(interp)[None, :] < n[:, None], w, 0.0)
    top = np.abs(w).max() if w.size else 0.0
    precision = 0
    while precision < 22 and int(0.5 + top * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = w * (1 << precision)
    w16 = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64)
    return cells, w16, precision


def _out_sizes(input, n, size, scale_factor, recompute_scale_factor):
    sizes = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor (got "
                         f"{'both' if size is not None else 'neither'})")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size")
        if isinstance(size, (tuple, list)) and len(size) != n:
            raise ValueError(f"interpolate: size {tuple(size)} has {len(size)} entries, but "
                             f"the input {tuple(input.shape)} has {n} spatial dims")
        out = ntuple("interpolate: size", size, n, -2 ** 62)
        return sizes, out, (None,) * n
    if isinstance(scale_factor, (tuple, list)):
        if len(scale_factor) != n:
            raise ValueError(f"interpolate: scale_factor {tuple(scale_factor)} has "
                             f"{len(scale_factor)} entries, but the input "
                             f"{tuple(input.shape)} has {n} spatial dims")
        sf = tuple(scale_factor)
    else:
        sf = (scale_factor,) * n
    if any(isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating))
           for s in sf):
        raise TypeError(f"interpolate: scale_factor must be a number or a tuple of {n}, got "
                        f"{scale_factor!r}")
    out = tuple(int(math.floor(float(L) * float(s))) for L, s in zip(sizes, sf, strict=True))
    return sizes, out, (None,) * n if recompute_scale_factor else tuple(float(s) for s in sf)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate: modes 'nearest', 'nearest-exact', 'area' (3-5-d input),
    'linear' (3-d), 'bilinear', 'bicubic' (4-d), 'trilinear' (5-d); align_corners for the
    linear and cubic modes; antialias for bilinear and bicubic; `size` or `scale_factor` (the
    kernel then uses 1/scale_factor unless recompute_scale_factor). Float input of any kind;
    uint8 for the nearest modes, bilinear and bicubic (torch's integer arithmetic)."""
    check_tensor("interpolate", "input", input)
    if mode not in MODES:
        raise ValueError(f"interpolate: mode must be one of {', '.join(map(repr, MODES))}, got "
                         f"{mode!r}")
    if input.ndim not in (3, 4, 5):
        raise OpError(f"interpolate: expected a 3-d, 4-d or 5-d input (N, C, *spatial), got "
                      f"shape {tuple(input.shape)}")
    n = input.ndim - 2
    linear = mode in _DIMS
    if align_corners is not None and not linear:
        raise ValueError(f"interpolate: align_corners applies only to the modes linear, "
                         f"bilinear, bicubic and trilinear, not {mode!r}")
    align_corners = bool(align_corners)
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(f"interpolate: antialias is for the bilinear and bicubic modes on a "
                         f"4-d input, not mode {mode!r} on shape {tuple(input.shape)}")
    if linear and _DIMS[mode] != n:
        raise OpError(f"interpolate: mode {mode!r} takes a {_DIMS[mode] + 2}-d input, got "
                      f"shape {tuple(input.shape)}")
    sizes, out, sf = _out_sizes(input, n, size, scale_factor, recompute_scale_factor)
    if mode == "area":                          # the adaptive average (an empty output too)
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1]
        return pool(input, out)
    if min(sizes) < 1 or min(out) < 1:
        raise OpError(f"interpolate: input and output sizes must be greater than 0, got input "
                      f"{sizes} and output {out}")
    dt = str(input.dtype)
    if dt == "uint8":
        if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
            raise TypeError(f"interpolate: mode {mode!r} does not take uint8 input (as in "
                            f"torch: uint8 works with nearest, nearest-exact, bilinear, bicubic)")
    elif dt not in ("float16", "float32", "float64"):
        raise TypeError(f"interpolate: input of dtype {dt} is not supported (as in torch: "
                        f"float16/32/64, and uint8 for some modes)")
    if mode in ("nearest", "nearest-exact"):
        t = np.float64 if dt == "float64" else np.float32
        small2d = n == 2 and out[0] + out[1] <= 128
        y = input
        for i in range(n):
            cells = _nearest_cells(sizes[i], out[i], sf[i], mode == "nearest-exact", t, small2d)
            y = y.index_select(2 + i, Tensor(cells[:, 0]))
        return y
    interp = 4 if mode == "bicubic" else 2
    if dt == "uint8":
        return _uint8_resample(input, sizes, out, align_corners, sf, interp, antialias)
    x = input.float() if dt == "float16" else input    # float16 computes in float32
    t = np.float64 if dt == "float64" else np.float32
    y = x
    # antialias is separable in torch (last dim first, a dim of unchanged size copied); the
    # plain modes weigh every cell at once, which is the same products in another order
    order = range(n - 1, -1, -1) if antialias else range(n)
    for i in order:
        L, o = sizes[i], out[i]
        if antialias:
            if L == o:
                continue
            cells, w = _aa_taps(L, o, align_corners, sf[i], interp, t)
        elif interp == 4:
            cells, w = _cubic_taps(L, o, align_corners, sf[i], t)
        else:
            cells, w = _linear_taps(L, o, align_corners, sf[i], t)
        y = weighted_taps(y, 2 + i, cells, w)
    return y.half() if dt == "float16" else y


def _uint8_resample(input, sizes, out, align_corners, sf, interp, antialias):
    y = input.long()
    for i in range(len(sizes) - 1, -1, -1):     # the last dim first, as torch's passes
        L, o = sizes[i], out[i]
        if L == o:
            continue
        cells, w16, precision = _uint8_taps(L, o, align_corners, sf[i], interp, antialias)
        acc = weighted_taps(y, 2 + i, cells, w16) + (1 << (precision - 1))
        y = (acc >> precision).clamp(0, 255)    # rounded to 0..255 between the passes
    return y.to(np.uint8)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """torch.nn.functional.upsample (deprecated in torch for interpolate, which it calls)."""
    warnings.warn("upsample is deprecated: use interpolate", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """torch.nn.functional.upsample_nearest: interpolate(..., mode='nearest')."""
    warnings.warn("upsample_nearest is deprecated: use interpolate", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """torch.nn.functional.upsample_bilinear: interpolate(..., mode='bilinear',
    align_corners=True)."""
    warnings.warn("upsample_bilinear is deprecated: use interpolate", UserWarning,
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ------------------------------------------------------------------------------------------
# pixel and channel shuffles: reshapes and a permute
# ------------------------------------------------------------------------------------------

def _factor(op, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return int(v)


def pixel_shuffle(input, upscale_factor):
    """torch.nn.functional.pixel_shuffle: (*, C r^2, H, W) -> (*, C, H r, W r)."""
    check_tensor("pixel_shuffle", "input", input)
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise OpError(f"pixel_shuffle: input of shape {tuple(input.shape)} needs at least 3 "
                      f"dims and a channel dim (-3) divisible by upscale_factor^2 = {r * r}")
    *lead, C, H, W = input.shape
    y = input.reshape(*lead, C // (r * r), r, r, H, W)          # (*, C, r, r, H, W)
    k = len(lead)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)     # (*, C, H, r, W, r)
    return y.reshape(*lead, C // (r * r), H * r, W * r)


def pixel_unshuffle(input, downscale_factor):
    """torch.nn.functional.pixel_unshuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    check_tensor("pixel_unshuffle", "input", input)
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise OpError(f"pixel_unshuffle: input of shape {tuple(input.shape)} needs at least 3 "
                      f"dims and height and width divisible by downscale_factor {r}")
    *lead, C, H, W = input.shape
    y = input.reshape(*lead, C, H // r, r, W // r, r)           # (*, C, H, r, W, r)
    k = len(lead)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)     # (*, C, r, r, H, W)
    return y.reshape(*lead, C * r * r, H // r, W // r)


def channel_shuffle(input, groups):
    """torch.nn.functional.channel_shuffle: (N, C, *) with C = g k -> the channels read as a
    (g, k) table and written column by column (ShuffleNet's mixing of grouped channels)."""
    check_tensor("channel_shuffle", "input", input)
    g = _factor("channel_shuffle", "groups", groups)
    if input.ndim < 3 or input.shape[1] % g:
        raise OpError(f"channel_shuffle: input of shape {tuple(input.shape)} needs at least 3 "
                      f"dims and channels (dim 1) divisible by groups {g}")
    N, C, *rest = input.shape
    y = input.reshape(N, g, C // g, *rest).transpose(1, 2)      # (N, C/g, g, *)
    return y.reshape(N, C, *rest)


native_channel_shuffle = channel_shuffle

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]
