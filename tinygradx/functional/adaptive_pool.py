"""Adaptive and fractional pooling as torch.nn.functional has them (re-exported by
tinygradx.functional): adaptive max and average pooling in 1, 2 and 3 spatial dims, fractional
max pooling in 2 and 3, and the window tables interpolate reuses (`weighted_taps`).

Their windows move by a varying step, so they are not strided slices: each dim gets a table
of the input cells every output cell reads (windows shorter than the longest padded by
repeating their last cell, which changes neither the maximum nor which cell is first), the
windows are gathered with one index_select per dim, and the maximum is kept as in pooling.py
(first maximum, last NaN; `where` and a sum, so the gradient reaches that one cell). The
adaptive average weighs the cells instead: one index_select, a product with constant weights
(1 / length, 0 on the repeats) and a sum per dim.
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import OpError
from ..autograd.rng import default_rng
from ..tensor import Tensor
from .conv import FLOAT, batched, check_dtype, ntuple
from .pooling import grid, pick_max


def adaptive_cells(L, o):
    """(o, T): the input cells of each adaptive window, floor(i L / o) .. ceil((i + 1) L / o)
    - 1, short ones padded by repeating their last cell; and the window lengths (o,)."""
    start = (np.arange(o) * L) // o
    end = -((-(np.arange(1, o + 1) * L)) // o)
    T = int((end - start).max()) if o else 0
    cells = np.minimum(start[:, None] + np.arange(T)[None, :], end[:, None] - 1)
    return cells, end - start


def _output_size(op, n, sizes, output_size):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * n
    out = tuple(L if o is None else o for L, o in zip(sizes, output_size, strict=False))
    if len(out) != n:
        raise ValueError(f"{op}: output_size must be an int or a tuple of {n}, got "
                         f"{output_size!r}")
    return ntuple(f"{op}: output_size", out, n, 0)


def gather_windows(x, cells):
    """x (N, C, *L) read at per-dim cell tables [(o_i, T_i)] -> (N, C, *o, T), the window
    cells flattened row-major (dim by dim: an index_select and a reshape each)."""
    y = x
    for i, c in enumerate(cells):                 # dim 2+i: L_i -> (o_i, T_i) at the end
        o, T = c.shape
        y = y.index_select(2 + i, Tensor(c.reshape(-1)))
        y = y.reshape(*y.shape[:2 + i], o, T, *y.shape[3 + i:])
        y = y.movedim(3 + i, -1)
    N, C = x.shape[:2]
    outs = tuple(c.shape[0] for c in cells)
    return y.reshape(N, C, *outs, math.prod(c.shape[1] for c in cells))


def _adaptive_max(op, n, input, output_size, return_indices):
    x, added = batched(op, input, n)
    out = _output_size(op, n, x.shape[2:], output_size)
    _nonempty(op, x)
    if math.prod(out):
        check_dtype(op, x, FLOAT)
    cells = [adaptive_cells(L, o)[0] for L, o in zip(x.shape[2:], out, strict=True)]
    S = gather_windows(x, cells)                                  # (N, C, *out, T)
    flat, _ = grid(cells, x.shape[2:])
    y, k = pick_max(S, np.ones(S.shape[-1:], bool))
    y = y.squeeze(0) if added else y
    if not return_indices:
        return y
    idx = np.take_along_axis(np.broadcast_to(flat, k.shape + flat.shape[-1:]), k[..., None],
                             axis=-1)[..., 0]
    idx = Tensor(np.ascontiguousarray(idx, dtype=np.int64))
    return y, (idx.squeeze(0) if added else idx)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d: the maximum over torch's adaptive windows."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d (output_size entries may be None: kept)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool3d."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d's (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d's (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool3d's (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)


def adaptive_avg_taps(L, o, dtype):
    """The adaptive average as taps: (o, T) cells and (o, T) weights 1/length (0 on the
    repeated padding cells)."""
    cells, length = adaptive_cells(L, o)
    T = cells.shape[1]
    w = np.where(np.arange(T)[None, :] < length[:, None], 1.0 / np.maximum(length, 1)[:, None],
                 0.0)
    return cells, w.astype(dtype)


def weighted_taps(y, dim, cells, weights):
    """Along `dim`: out[i] = sum_t weights[i, t] * y[cells[i, t]] (an index_select, a
    product with constant weights and a sum: one resampling of one dim)."""
    o, T = cells.shape
    g = y.index_select(dim, Tensor(cells.reshape(-1)))
    g = g.reshape(*g.shape[:dim], o, T, *g.shape[dim + 1:])
    w = Tensor(np.ascontiguousarray(weights).reshape((o, T) + (1,) * (y.ndim - 1 - dim)))
    return (g * w).sum(dim=dim + 1)


def _adaptive_avg(op, n, input, output_size):
    x, added = batched(op, input, n)
    out = _output_size(op, n, x.shape[2:], output_size)
    _nonempty(op, x)
    if math.prod(out):                          # torch returns an empty output of any dtype
        check_dtype(op, x, FLOAT)
    y = x
    for i, (L, o) in enumerate(zip(x.shape[2:], out, strict=True)):
        cells, w = adaptive_avg_taps(L, o, x.dtype)
        y = weighted_taps(y, 2 + i, cells, w)                     # dim 2+i: L -> o
    return y.squeeze(0) if added else y


def _nonempty(op, x):
    if 0 in x.shape[1:]:
        raise OpError(f"{op}: input of shape {tuple(x.shape)} has an empty dim; only the "
                      f"batch dim may be 0 (as in torch)")


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d: (N, C, L) -> (N, C, output_size)."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: (N, C, H, W) -> (N, C, *output_size)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool3d: (N, C, D, H, W) -> (N, C, *output_size)."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _fractional_starts(L, o, k, u, dtype):
    """torch's pseudo-random window starts for one dim from a sample u in [0, 1): (o,)."""
    if o == 1:
        return np.array([L - k])
    # in the input's float type, as torch's kernel computes them
    alpha = dtype.type(L - k) / dtype.type(o - 1)
    i = np.arange(o - 1).astype(dtype)
    starts = ((i + dtype.type(u)) * alpha).astype(np.int64) - np.int64(dtype.type(u) * alpha)
    return np.concatenate([starts, [L - k]])


def _fractional(op, n, input, kernel_size, output_size, output_ratio, return_indices,
                _random_samples):
    x, added = batched(op, input, n)
    check_dtype(op, x, FLOAT)
    kernel = ntuple(f"{op}: kernel_size", kernel_size, n, 1)
    sizes = x.shape[2:]
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an "
                             f"output_ratio")
        ratio = (output_ratio,) * n if isinstance(output_ratio, (int, float)) else \
            tuple(output_ratio)
        if len(ratio) != n or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{op}: output_ratio must be in (0, 1), one per spatial dim, "
                             f"got {output_ratio!r}")
        output_size = tuple(int(L * r) for L, r in zip(sizes, ratio, strict=True))
    out = ntuple(f"{op}: output_size", output_size, n, 1)
    for L, o, k in zip(sizes, out, kernel, strict=True):
        if o + k - 1 > L or (n == 3 and o + k - 1 == L):     # torch's 3-d check is strict
            need = tuple(o_ + k_ - 1 + (n == 3) for o_, k_ in zip(out, kernel, strict=True))
            raise OpError(f"{op}: output_size {out} with kernel_size {kernel} needs an input "
                          f"of at least {need}, got {tuple(sizes)}")
    N, C = x.shape[:2]
    if _random_samples is None:
        u = default_rng().random((N, C, n)).astype(x.dtype)
    else:
        u = _random_samples.numpy() if isinstance(_random_samples, Tensor) else \
            np.asarray(_random_samples)
        if u.shape != (N, C, n):
            raise OpError(f"{op}: _random_samples must have shape {(N, C, n)}, got {u.shape}")
        u = u.astype(x.dtype)
    # which sample drives which dim, as torch: 2-d (W, H), 3-d (T, H, W)
    cells = []
    for i, (L, o, k) in enumerate(zip(sizes, out, kernel, strict=True)):
        starts = np.stack([_fractional_starts(L, o, k, uu, x.dtype)
                           for uu in u[..., 1 - i if n == 2 else i].reshape(-1)])  # (N*C, o)
        cells.append((starts[:, :, None] + np.arange(k)).reshape(N, C, o, k))
    grids = []                        # advanced index (N, C, *out, *kernel) per spatial dim
    for i in range(n):
        shape = [N, C] + [1] * (2 * n)
        shape[2 + i], shape[2 + n + i] = out[i], kernel[i]
        grids.append(cells[i].reshape(shape))
    nn = np.arange(N).reshape([N] + [1] * (2 * n + 1))
    cc = np.arange(C).reshape([1, C] + [1] * (2 * n))
    S = x[(nn, cc) + tuple(grids)].reshape(N, C, *out, math.prod(kernel))
    y, k = pick_max(S, np.ones(S.shape[-1:], bool))
    y = y.squeeze(0) if added else y
    if not return_indices:
        return y
    flat = np.zeros((), np.int64)
    for i in range(n):
        flat = flat * sizes[i] + grids[i]
    flat = np.broadcast_to(flat, (N, C) + tuple(out) + kernel).reshape(N, C, *out, -1)
    idx = Tensor(np.take_along_axis(flat, k[..., None], axis=-1)[..., 0].astype(np.int64))
    return y, (idx.squeeze(0) if added else idx)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """torch.nn.functional.fractional_max_pool2d: max over kernel-sized windows at
    pseudo-random starts (one sample in [0, 1) per (N, C) and dim, `_random_samples` (N, C, 2)
    or drawn from tgx's generator), so the output has output_size (or input * output_ratio)."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """torch.nn.functional.fractional_max_pool3d (`_random_samples` (N, C, 3))."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None):
    """fractional_max_pool2d's (values, indices)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None):
    """fractional_max_pool3d's (values, indices)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]
