"""Convolution, pooling and resampling as torch.nn.functional has them (re-exported by
tinygradx.functional): conv1d/conv2d, max/avg pooling, adaptive average pooling, interpolate.

Each is a composition of ops the engine already differentiates to any order, so the graph
tools draw it and gradgradcheck holds without a new backward rule. A convolution is im2col
written with ops: the padded input is read at every kernel offset with one strided slice
(getitem with a step; its gradient fills a shared buffer, so the slices' gradients add into
one array: col2im for free), the kh*kw slices are stacked into the column tensor, and one
(batched) matmul contracts it with the weight. For the small kernels of small models that is a few
cheap nodes per layer, and nothing new has to be derived twice (array and graph form).
Pooling stacks the same windows and reduces them (max with torch's first-maximum rule, or
a sum divided by torch's divisor); interpolation is an index_select per spatial dim and,
for the linear modes, a blend of the two neighbours with constant weights.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..autograd import OpError
from ..tensor.creation import stack
from .padding import pad as _pad_op
from ..tensor import Tensor


def ntuple(name, value, n, low=0):
    """An int or a sequence of n ints, each >= low, as a tuple of n ints."""
    vals = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                             for v in vals):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    if any(v < low for v in vals):
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return tuple(int(v) for v in vals)


def _batched(op, x, n):
    """x with a batch dim (torch takes (C, *spatial) as one sample) and whether it was added."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")
    if x.ndim == n + 1:
        return x.unsqueeze(0), True
    if x.ndim != n + 2:
        raise OpError(f"{op}: expected a {n + 1}-d (unbatched) or {n + 2}-d (batched) input, "
                      f"got shape {tuple(x.shape)}")
    return x, False


def _windows(x, kernel, stride, dilation, out):
    """[x read at each kernel offset]: (N, C, *out) strided slices, kernel offsets in
    row-major order (the order torch scans a window in)."""
    views = []
    for offs in itertools.product(*[range(k) for k in kernel]):
        idx = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offs, dilation, stride, out, strict=True))
        views.append(x[idx])
    return views


def _out_size(op, size, pad_total, kernel, stride, dilation, ceil_mode=False, pad_left=0):
    span = dilation * (kernel - 1) + 1
    num = size + pad_total - span
    if num < 0:
        raise OpError(f"{op}: the kernel spans {span} but the padded input has only "
                      f"{size + pad_total}")
    n = (-(-num // stride) if ceil_mode else num // stride) + 1
    if ceil_mode and (n - 1) * stride >= size + pad_left:
        n -= 1                                  # the last window must start inside the input
    return n


def _conv(op, n, input, weight, bias, stride, padding, dilation, groups):
    x, added = _batched(op, input, n)
    if not isinstance(weight, Tensor) or weight.ndim != n + 2:
        raise OpError(f"{op}: weight must be a {n + 2}-d Tensor (out_channels, "
                      f"in_channels/groups, *kernel), got "
                      f"{getattr(weight, 'shape', type(weight).__name__)}")
    stride = ntuple(f"{op}: stride", stride, n, 1)
    dilation = ntuple(f"{op}: dilation", dilation, n, 1)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    N, C = x.shape[:2]
    n_out, Cg = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if C != Cg * groups or n_out % groups:
        raise OpError(f"{op}: input has {C} channels and weight {tuple(weight.shape)} with "
                      f"groups={groups} expects {Cg * groups} (and out_channels divisible "
                      f"by groups)")
    if bias is not None and tuple(bias.shape) != (n_out,):
        raise OpError(f"{op}: bias must have shape ({n_out},), got {tuple(bias.shape)}")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided "
                                 f"convolutions (as in torch)")
            pads = [(t // 2, t - t // 2) for t in (d * (k - 1) for d, k in
                                                   zip(dilation, kernel, strict=True))]
        else:
            raise ValueError(f"{op}: padding must be an int, a tuple, 'same' or 'valid', got "
                             f"{padding!r}")
    else:
        pads = [(p, p) for p in ntuple(f"{op}: padding", padding, n)]
    if any(p for pair in pads for p in pair):
        flat = [v for pair in reversed(pads) for v in pair]   # F.pad: last dim first
        x = _pad_op(x, flat)
    out = [_out_size(op, x.shape[2 + i], 0, kernel[i], stride[i], dilation[i])
           for i in range(n)]
    cols = stack(_windows(x, kernel, stride, dilation, out), dim=2)   # (N, C, K, *out)
    CK, P = Cg * math.prod(kernel), math.prod(out)
    cols = cols.reshape(N, groups, CK, P)                     # (N, G, C/G*K, positions)
    w = weight.reshape(groups, n_out // groups, CK)           # (G, O/G, C/G*K)
    y = w @ cols                                              # (N, G, O/G, positions)
    y = y.reshape(N, n_out, *out)                             # (N, O, *out)
    if bias is not None:
        y = y + bias.reshape(n_out, *([1] * n))
    return y.squeeze(0) if added else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: (N, C, L) * (O, C/groups, k) -> (N, O, L_out); padding an
    int, a tuple, 'same' (stride 1) or 'valid'; (C, L) is one sample."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: (N, C, H, W) * (O, C/groups, kh, kw) -> (N, O, H_out,
    W_out); stride, padding, dilation an int or a pair; padding 'same' or 'valid' too."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


# ------------------------------------------------------------------------------------------
# pooling
# ------------------------------------------------------------------------------------------

def _pool_args(op, n, x, kernel_size, stride, padding, dilation=1):
    kernel = ntuple(f"{op}: kernel_size", kernel_size, n, 1)
    stride = kernel if stride is None or stride == [] or stride == () else \
        ntuple(f"{op}: stride", stride, n, 1)
    padding = ntuple(f"{op}: padding", padding, n)
    dilation = ntuple(f"{op}: dilation", dilation, n, 1)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{op}: padding {padding} must be at most half of kernel_size "
                         f"{kernel} (as in torch)")
    return kernel, stride, padding, dilation


def _pool_windows(op, x, n, kernel, stride, padding, dilation, ceil_mode, fill):
    """The windows of x (padded with `fill`, and on the right as far as ceil_mode's last
    window needs) and the output size."""
    sizes = x.shape[2:]
    out = [_out_size(op, sizes[i], 2 * padding[i], kernel[i], stride[i], dilation[i],
                     ceil_mode, padding[i]) for i in range(n)]
    pads = []
    for i in range(n):
        need = (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        pads.append((padding[i], max(padding[i], need - sizes[i] - padding[i])))
    if any(p for pair in pads for p in pair):
        x = _pad_op(x, [v for pair in reversed(pads) for v in pair], value=fill)
    return _windows(x, kernel, stride, dilation, out), out


def _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    if return_indices:
        raise NotImplementedError(f"{op}: return_indices=True is not supported by tinygradx")
    x, added = _batched(op, input, n)
    kernel, stride, padding, dilation = _pool_args(op, n, x, kernel_size, stride, padding,
                                                   dilation)
    views, _ = _pool_windows(op, x, n, kernel, stride, padding, dilation, ceil_mode,
                             float("-inf"))
    # the first maximum in the window gets the gradient, as torch's kernel
    y = stack(views, dim=-1).max(dim=-1)[0]                   # (N, C, *out)
    return y.squeeze(0) if added else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool1d (padding reads as -inf; stride defaults to the kernel)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool2d (padding reads as -inf; stride defaults to the kernel)."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _avg_divisor(sizes, out, kernel, stride, padding, count_include_pad):
    """torch's divisor per output position: the window clipped to input + padding (with
    count_include_pad) or to the input alone; an (*out) array."""
    div = np.ones((), np.float64)
    for L, o, k, s, p in zip(sizes, out, kernel, stride, padding, strict=True):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, L + p)
        cnt = end - start if count_include_pad else \
            np.minimum(end, L) - np.maximum(start, 0)
        div = np.multiply.outer(div, cnt)
    return div


def _avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None):
    x, added = _batched(op, input, n)
    kernel, stride, padding, _ = _pool_args(op, n, x, kernel_size, stride, padding)
    views, out = _pool_windows(op, x, n, kernel, stride, padding, (1,) * n, ceil_mode, 0.0)
    total = stack(views, dim=-1).sum(dim=-1)                  # (N, C, *out)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int) \
                or divisor_override < 1:
            raise ValueError(f"{op}: divisor_override must be a positive int, got "
                             f"{divisor_override!r}")
        y = total / divisor_override
    else:
        div = _avg_divisor(x.shape[2:], out, kernel, stride, padding, count_include_pad)
        y = total / Tensor(div.astype(total.dtype))
    return y.squeeze(0) if added else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """torch.nn.functional.avg_pool1d (the mean of each window; padding counts as zeros
    unless count_include_pad=False)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """torch.nn.functional.avg_pool2d."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_matrix(L, o, dtype):
    """(o, L): row i averages input cells floor(i L / o) .. ceil((i + 1) L / o) - 1."""
    a = np.zeros((o, L), dtype)
    for i in range(o):
        s, e = (i * L) // o, -(-((i + 1) * L) // o)
        a[i, s:e] = 1.0 / (e - s)
    return a


def _adaptive_avg(op, n, input, output_size):
    x, added = _batched(op, input, n)
    sizes = x.shape[2:]
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * n
    out = tuple(L if o is None else o for L, o in zip(sizes, output_size, strict=True))
    out = ntuple(f"{op}: output_size", out, n, 1)
    y = x
    for i, (L, o) in enumerate(zip(sizes, out, strict=True)):
        a = Tensor(_adaptive_matrix(L, o, x.dtype))           # (o, L)
        y = (y.transpose(2 + i, -1) @ a.mT).transpose(2 + i, -1)   # dim 2+i: L -> o
    return y.squeeze(0) if added else y


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d: (N, C, L) -> (N, C, output_size)."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: (N, C, H, W) -> (N, C, *output_size)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


# ------------------------------------------------------------------------------------------
# interpolate
# ------------------------------------------------------------------------------------------
_MODES = {"nearest": None, "linear": 1, "bilinear": 2}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for mode 'nearest' (any of 1 or 2 spatial dims),
    'linear' (N, C, L) and 'bilinear' (N, C, H, W), with `size` or `scale_factor`."""
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by tinygradx "
                                  f"(supported: {', '.join(_MODES)})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by tinygradx")
    if not isinstance(input, Tensor) or input.ndim not in (3, 4):
        raise OpError(f"interpolate: expected a 3-d (N, C, L) or 4-d (N, C, H, W) Tensor, got "
                      f"{getattr(input, 'shape', type(input).__name__)}")
    n = input.ndim - 2
    if _MODES[mode] not in (None, n):
        raise OpError(f"interpolate: mode {mode!r} takes a {_MODES[mode] + 2}-d input, got "
                      f"shape {tuple(input.shape)}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("interpolate: align_corners applies only to the linear modes")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    sizes = input.shape[2:]
    if size is not None:
        out = ntuple("interpolate: size", size, n, 1)
        scales = [L / o for L, o in zip(sizes, out, strict=True)]
    else:
        sf = (scale_factor,) * n if isinstance(scale_factor, (int, float)) else \
            tuple(scale_factor)
        if len(sf) != n or any(s <= 0 for s in sf):
            raise ValueError(f"interpolate: scale_factor must be positive, one per spatial "
                             f"dim, got {scale_factor!r}")
        out = [int(math.floor(L * s)) for L, s in zip(sizes, sf, strict=True)]
        if min(out) < 1:
            raise OpError(f"interpolate: scale_factor {scale_factor!r} makes an empty output "
                          f"{tuple(out)} from input size {tuple(sizes)}")
        scales = [L / o if recompute_scale_factor else 1.0 / s
                  for L, o, s in zip(sizes, out, sf, strict=True)]
    y = input
    for i, (L, o, sc) in enumerate(zip(sizes, out, scales, strict=True)):
        dim = 2 + i
        dst = np.arange(o, dtype=np.float64)
        if mode == "nearest":
            # torch computes the source index in float32: floor(dst * scale)
            src = np.floor((dst.astype(np.float32) * np.float32(sc))).astype(np.int64)
            y = y.index_select(dim, Tensor(np.minimum(src, L - 1)))
            continue
        if align_corners:
            src = dst * ((L - 1) / (o - 1)) if o > 1 else dst * 0
        else:
            src = np.maximum((dst + 0.5) * sc - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
        i1 = np.minimum(i0 + 1, L - 1)
        lam = (src - i0).astype(y.dtype).reshape((o,) + (1,) * (y.ndim - 1 - dim))
        a, b = y.index_select(dim, Tensor(i0)), y.index_select(dim, Tensor(i1))
        y = a * Tensor(1 - lam) + b * Tensor(lam)             # the two neighbours blended
    return y


__all__ = ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "interpolate"]
