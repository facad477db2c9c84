"""Window pooling as torch.nn.functional has it (re-exported by tinygradx.functional): max
pooling (with torch's flat indices), its inverse max_unpool, average pooling and power-average
(LP) pooling, in 1, 2 and 3 spatial dims (adaptive and fractional pooling: adaptive_pool.py).

Each is built from ops the engine differentiates to any order. A window pool reads the padded
input at every kernel offset (strided slices, as a convolution's im2col) and stacks them into
(N, C, *out, K). Average pooling sums that last axis and divides by torch's divisor. Max pooling
finds, on the array, which of the K entries torch picks (the first maximum in scan order; a NaN
wins, the last NaN if several; never a padding cell), and keeps it with `where` and a sum, so
the gradient goes to that one entry. max_unpool is a scatter into zeros.
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import OpError
from ..tensor.creation import stack, where, zeros
from .padding import pad as _pad_op
from ..tensor import Tensor
from .conv import (FLOAT, INTS, batched, check_dtype, check_tensor, ntuple, out_size,
                   pairs_to_pad, windows)


def _pool_args(op, n, kernel_size, stride, padding, dilation=1):
    kernel = ntuple(f"{op}: kernel_size", kernel_size, n, 1)
    stride = kernel if stride is None or stride == [] or stride == () else \
        ntuple(f"{op}: stride", stride, n, 1)
    padding = ntuple(f"{op}: padding", padding, n)
    dilation = ntuple(f"{op}: dilation", dilation, n, 1)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{op}: padding {padding} must be at most half of kernel_size "
                         f"{kernel} (as in torch)")
    return kernel, stride, padding, dilation


def _geometry(op, x, n, kernel, stride, padding, dilation, ceil_mode):
    return [out_size(op, x.shape[2 + i], 2 * padding[i], kernel[i], stride[i], dilation[i],
                     ceil_mode, padding[i]) for i in range(n)]


def _stacked(x, n, kernel, stride, padding, dilation, out, fill):
    """(N, C, *out, K): x read at every kernel offset of every window (the padding, and the
    cells ceil_mode's last window reaches past the input, read as `fill`)."""
    sizes = x.shape[2:]
    pads = []
    for i in range(n):
        need = (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        pads.append((padding[i], max(padding[i], need - sizes[i] - padding[i])))
    if any(p for pair in pads for p in pair):
        x = _pad_op(x, pairs_to_pad(pads), value=fill)
    return stack(windows(x, kernel, stride, dilation, out), dim=-1)


def _cells(sizes, out, kernel, stride, padding, dilation):
    """Per dim, the input cell of each (output position, kernel offset): (out_i, k_i)."""
    return [np.arange(o)[:, None] * s - p + np.arange(k)[None, :] * d
            for o, k, s, p, d in zip(out, kernel, stride, padding, dilation, strict=True)]


def grid(per_dim, sizes):
    """(*out, K) flat input indices and validity of the window cells, from the (out_i, k_i)
    cell tables of each dim (row-major over the spatial dims, as torch's indices)."""
    n = len(per_dim)
    flat, valid = np.zeros((), np.int64), np.ones((), bool)
    for i, (cells, L) in enumerate(zip(per_dim, sizes, strict=True)):
        o, k = cells.shape
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = o, k
        c = cells.reshape(shape)
        flat = flat * L + np.clip(c, 0, max(L - 1, 0))
        valid = valid & (c >= 0) & (c < L)
    out = tuple(c.shape[0] for c in per_dim)
    K = math.prod(c.shape[1] for c in per_dim)
    flat = np.broadcast_to(flat, out + tuple(c.shape[1] for c in per_dim)).reshape(out + (K,))
    valid = np.broadcast_to(valid, flat.shape[:-1] + tuple(c.shape[1] for c in per_dim))
    return flat, valid.reshape(out + (K,))


def pick_max(S, valid):
    """The entry torch's max kernels keep in each window of S (..., K): the first maximum
    in scan order, or the last NaN when there is one, never an invalid (padding) cell.
    Returns (values with their gradient path, the picked entry as an array)."""
    a = S.detach().numpy()
    ok = np.broadcast_to(valid, a.shape)
    if a.dtype.kind == "f":
        nan = np.isnan(a) & ok
        low = np.asarray(-np.inf, a.dtype)
    else:
        nan = np.zeros(a.shape, bool)
        low = np.asarray(np.iinfo(a.dtype).min, a.dtype)
    m = np.where(ok & ~nan, a, low).max(axis=-1, keepdims=True) if a.shape[-1] else a
    first = np.argmax(ok & (a == m), axis=-1)
    last_nan = a.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
    k = np.where(nan.any(axis=-1), last_nan, first)
    hit = np.arange(a.shape[-1]) == k[..., None]
    y = where(Tensor(hit), S, zeros((), dtype=S.dtype)).sum(dim=-1)
    return y.to(S.dtype), k


def _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    x, added = batched(op, input, n)
    if not return_indices and n == 1:
        check_dtype(op, x, FLOAT)
    else:
        check_dtype(op, x, FLOAT + INTS)
    kernel, stride, padding, dilation = _pool_args(op, n, kernel_size, stride, padding,
                                                   dilation)
    out = _geometry(op, x, n, kernel, stride, padding, dilation, ceil_mode)
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    S = _stacked(x, n, kernel, stride, padding, dilation, out, fill)    # (N, C, *out, K)
    flat, valid = grid(_cells(x.shape[2:], out, kernel, stride, padding, dilation),
                        x.shape[2:])
    if not valid.any(axis=-1).all():
        raise OpError(f"{op}: with padding {padding} and dilation {dilation}, a window reads "
                      f"padding only (input {tuple(x.shape[2:])}, kernel {kernel}, stride "
                      f"{stride}); torch gives it -inf and an index outside the input")
    y, k = pick_max(S, valid)                                          # (N, C, *out)
    if added:
        y = y.squeeze(0)
    if not return_indices:
        return y
    idx = np.take_along_axis(np.broadcast_to(flat, k.shape + flat.shape[-1:]), k[..., None],
                             axis=-1)[..., 0]
    idx = Tensor(np.ascontiguousarray(idx, dtype=np.int64))
    return y, (idx.squeeze(0) if added else idx)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool1d (padding reads as -inf; stride defaults to the kernel);
    return_indices=True also gives each maximum's position in its (N, C) row."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool2d; indices are flat positions h * W + w."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool3d; indices are flat positions (d * H + h) * W + w."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """max_pool1d's (values, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """max_pool2d's (values, indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """max_pool3d's (values, indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ------------------------------------------------------------------------------------------
# average pooling
# ------------------------------------------------------------------------------------------

def _avg_divisor(sizes, out, kernel, stride, padding, count_include_pad):
    """torch's divisor per output position: the window clipped to input + padding (with
    count_include_pad) or to the input alone; an (*out) int array."""
    div = np.ones((), np.int64)
    for L, o, k, s, p in zip(sizes, out, kernel, stride, padding, strict=True):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, L + p)
        cnt = end - start if count_include_pad else \
            np.minimum(end, L) - np.maximum(start, 0)
        div = np.multiply.outer(div, cnt)
    return div


def _avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None):
    x, added = batched(op, input, n)
    check_dtype(op, x, (FLOAT if n < 3 else FLOAT[1:]) + ("int64",))
    kernel, stride, padding, _ = _pool_args(op, n, kernel_size, stride, padding)
    if n == 3 and any(L < k for L, k in zip(x.shape[2:], kernel, strict=True)):
        raise OpError(f"{op}: input of spatial size {tuple(x.shape[2:])} is smaller than the "
                      f"kernel {kernel} (torch's avg_pool3d checks before padding)")
    out = _geometry(op, x, n, kernel, stride, padding, (1,) * n, ceil_mode)
    total = _stacked(x, n, kernel, stride, padding, (1,) * n, out, 0).sum(dim=-1)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int) \
                or divisor_override == 0:
            raise ValueError(f"{op}: divisor_override must be a nonzero int, got "
                             f"{divisor_override!r}")
        div = np.asarray(divisor_override)
    else:
        div = _avg_divisor(x.shape[2:], out, kernel, stride, padding, count_include_pad)
    if x.dtype.kind == "f":
        y = total / Tensor(div.astype(x.dtype))
    else:                                       # torch divides integers rounding to zero
        y = total.div(Tensor(div.astype(x.dtype)), rounding_mode="trunc")
    return y.squeeze(0) if added else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """torch.nn.functional.avg_pool1d (the mean of each window; padding counts as zeros
    unless count_include_pad=False)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """torch.nn.functional.avg_pool2d (divisor_override: divide every sum by it)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """torch.nn.functional.avg_pool3d."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _lp_pool(op, n, input, norm_type, kernel_size, stride, ceil_mode):
    check_tensor(op, "input", input)
    check_dtype(op, input, FLOAT + ("int64", "bool"))
    if n == 1 and not isinstance(kernel_size, (int, np.integer)):
        raise TypeError(f"{op}: kernel_size must be an int (as in torch), got {kernel_size!r}")
    kernel = ntuple(f"{op}: kernel_size", kernel_size, n, 1)
    x = input.to(np.int64) if input.dtype == np.bool_ else input
    avg = _avg_pool(op, n, x.pow(norm_type), kernel, stride, 0, ceil_mode, True)
    # torch's formula: the window's mean of x^p times the kernel's size, to the power 1/p
    # (a sum when the window is whole; a negative mean, from odd p, gives 0 before the root)
    return ((avg.sign() * avg.abs().relu()) * math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d: (sum of x^p over each window)^(1/p)."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d: (sum of x^p over each window)^(1/p)."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool3d: (sum of x^p over each window)^(1/p)."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


# ------------------------------------------------------------------------------------------
# max_unpool
# ------------------------------------------------------------------------------------------

def _max_unpool(op, n, input, indices, kernel_size, stride, padding, output_size):
    x, added = batched(op, input, n)
    check_dtype(op, x, FLOAT)
    check_tensor(op, "indices", indices)
    if tuple(indices.shape) != tuple(input.shape) or indices.dtype != np.int64:
        raise OpError(f"{op}: indices must be int64 of the input's shape "
                      f"{tuple(input.shape)}, got {indices.dtype} {tuple(indices.shape)}")
    kernel = ntuple(f"{op}: kernel_size", kernel_size, n, 1)
    stride = kernel if stride is None else ntuple(f"{op}: stride", stride, n, 1)
    padding = ntuple(f"{op}: padding", padding, n)
    sizes = x.shape[2:]
    default = [(L - 1) * s - 2 * p + k for L, s, p, k in
               zip(sizes, stride, padding, kernel, strict=True)]
    if output_size is None:
        out = default
    else:
        out = list(output_size)
        if len(out) == n + 2:
            out = out[2:]
        if len(out) != n:
            raise ValueError(f"{op}: output_size must have {n} or {n + 2} elements, got "
                             f"{tuple(output_size)}")
        for i in range(n):
            lo, hi = default[i] - stride[i], default[i] + stride[i]
            if not lo < out[i] < hi:
                raise ValueError(f"{op}: output_size {tuple(output_size)} is invalid: dim {i} "
                                 f"must be between {lo + 1} and {hi - 1}")
    N, C = x.shape[:2]
    total = math.prod(out)
    idx = indices.numpy().reshape(N, C, -1)
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = idx.max() if idx.max() >= total else idx.min()
        raise OpError(f"{op}: index {bad} in indices is out of range for an output of spatial "
                      f"size {tuple(out)} ({total} positions)")
    # each value written at its index of a zero output (repeated indices: torch leaves which
    # one stays undefined; here the last one)
    flat = zeros(N, C, total, dtype=x.dtype).scatter(2, Tensor(idx), x.reshape(N, C, -1))
    y = flat.reshape(N, C, *out)
    return y.squeeze(0) if added else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool1d: each value put back at its index (max_pool1d's)
    in zeros of size (L - 1) stride - 2 padding + kernel_size, or output_size."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool2d (indices flat over H_out * W_out)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool3d (indices flat over D_out * H_out * W_out)."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]
