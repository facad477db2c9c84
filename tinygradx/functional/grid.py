"""A spatial transformer's resampling as torch.nn.functional has it (re-exported by
tinygradx.functional): affine_grid, the sampling positions an affine map sends an output grid to,
and grid_sample, the input read at any positions (bilinear, nearest or bicubic; zeros, border or
reflection outside), differentiable in the input and in the positions.

Both are ops the engine already differentiates to any order. affine_grid is one matmul of a
constant grid of normalised coordinates with the transposed matrices. grid_sample turns each
position into input coordinates (a linear map of the grid, then border's clip or reflection's
fold, written with clamp, abs and a floor taken as a constant), takes the cells around it (their
indices constants, read with `gather` from the flattened input) and weighs them with the
distances to them, which carry the gradient back to the grid.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..autograd import OpError
from ..tensor import Tensor
from ..tensor.creation import where
from .conv import FLOAT, check_dtype, check_tensor

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
_DEFAULT = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired.")


def _align(align_corners):
    if align_corners is None:
        warnings.warn(_DEFAULT, UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def _normalised(n, align_corners):
    """torch's n coordinates from -1 to 1 (cell centres unless align_corners; 0 for n = 1)."""
    if n <= 1:
        return np.zeros(1)
    r = np.linspace(-1.0, 1.0, n)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta, size, align_corners=None):
    """torch.nn.functional.affine_grid: theta (N, 2, 3) and size (N, C, H, W) -> the (N, H, W, 2)
    positions (x, y) in [-1, 1] that theta sends the output grid to; (N, 3, 4) and a 5-d size
    -> (N, D, H, W, 3)."""
    align_corners = _align(align_corners)
    check_tensor("affine_grid", "theta", theta)
    if theta.dtype.kind != "f":
        raise TypeError(f"affine_grid: theta must be a float tensor, got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise ValueError(f"affine_grid: size must be 4-d (N, C, H, W) or 5-d (N, C, D, H, W) for "
                         f"2-d and 3-d affine maps, got {size}")
    n = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (n, n + 1):
        raise ValueError(f"affine_grid: size {size} needs theta of shape (N, {n}, {n + 1}), got "
                         f"{tuple(theta.shape)}")
    if min(size) <= 0:
        raise ValueError(f"affine_grid: the output size must be positive, got {size}")
    if theta.shape[0] != size[0]:
        raise OpError(f"affine_grid: theta holds {theta.shape[0]} matrices, size asks for "
                      f"{size[0]}")
    if align_corners and max(size[2:]) == 1:
        warnings.warn("affine_grid: with align_corners=True a unit-size grid is not an intended "
                      "use (its coordinate is 0, as torch's)", UserWarning, stacklevel=2)
    spatial = size[2:]
    axes = [_normalised(s, align_corners) for s in spatial]      # first spatial dim first
    mesh = np.meshgrid(*axes, indexing="ij")
    # (x, y[, z], 1): x runs along the last spatial dim
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], axis=1)
    base = Tensor(base.astype(theta.dtype))                      # (positions, n + 1)
    grid = base @ theta.transpose(1, 2)                          # (N, positions, n)
    return grid.reshape(size[0], *spatial, n)                    # (N, *spatial, n)


def _reflect(x, low2, high2):
    """torch's reflection of coordinates x into [low2 / 2, high2 / 2] (the floor of the number
    of folds is a constant: the gradient flips sign with each fold, as torch's)."""
    if low2 == high2:
        return x * 0
    lo, span = low2 / 2, (high2 - low2) / 2
    d = (x - lo).abs()
    folds = np.floor(d.detach().numpy() / span)
    extra = d - Tensor(folds * span).to(x.dtype)
    even = Tensor(folds % 2 == 0)
    return where(even, extra + lo, (extra * -1) + (span + lo))


def _coordinates(x, L, padding_mode, align_corners):
    """An input coordinate x along a dim of size L, moved inside by border or reflection."""
    if padding_mode == "border":
        return x.clamp(0, L - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (L - 1)) if align_corners else _reflect(x, -1, 2 * L - 1)
        return x.clamp(0, L - 1)
    return x


def _cubic(t, a=-0.75):
    """Keys' cubic kernel weights of the 4 cells at distances 1 + t, t, 1 - t, 2 - t."""
    def near(d):
        return ((d * (a + 2)) - (a + 3)) * d * d + 1

    def far(d):
        return (((d - 5) * d + 8) * d - 4) * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch.nn.functional.grid_sample: input (N, C, H, W) read at grid's (N, H_out, W_out, 2)
    positions (x, y), -1 and 1 the input's edges (its corner cells' centres with
    align_corners); 5-d input with a (N, D_out, H_out, W_out, 3) grid; mode 'bilinear',
    'nearest' or 'bicubic' (4-d); padding_mode 'zeros', 'border' or 'reflection'."""
    op = "grid_sample"
    if mode not in MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"{op}: padding_mode must be one of "
                         f"{', '.join(map(repr, PADDING_MODES))}, got {padding_mode!r}")
    align_corners = _align(align_corners)
    check_tensor(op, "input", input)
    check_tensor(op, "grid", grid)
    check_dtype(op, input, FLOAT)
    if grid.dtype != input.dtype:
        raise TypeError(f"{op}: input is {input.dtype} but grid is {grid.dtype} (as torch, one "
                        f"dtype)")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim or \
            grid.shape[0] != input.shape[0] or grid.shape[-1] != input.ndim - 2:
        raise OpError(f"{op}: expected input (N, C, H, W) with grid (N, H_out, W_out, 2), or a "
                      f"5-d input with grid (N, D_out, H_out, W_out, 3), got input "
                      f"{tuple(input.shape)} and grid {tuple(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise OpError(f"{op}: bicubic interpolation takes a 4-d input, got shape "
                      f"{tuple(input.shape)}")
    if 0 in input.shape[2:]:
        raise OpError(f"{op}: input of shape {tuple(input.shape)} has an empty spatial dim")
    n = input.ndim - 2
    N, C = input.shape[:2]
    sizes = input.shape[2:]
    out = tuple(grid.shape[1:-1])
    flat = input.reshape(N, C, -1)                                # (N, C, cells)
    # input coordinate of every position, per spatial dim (x is grid[..., 0], the last dim)
    raw = []
    for i, L in enumerate(sizes):
        g = grid.select(-1, n - 1 - i).reshape(N, 1, -1)           # (N, 1, positions)
        raw.append((g + 1) * ((L - 1) / 2) if align_corners else ((g + 1) * L - 1) / 2)

    def read(cells):
        """the input at integer cells (one (N, 1, positions) array per dim), 0 outside."""
        inside = np.ones(cells[0].shape, bool)
        index = np.zeros(cells[0].shape, np.int64)
        for c, L in zip(cells, sizes, strict=True):
            inside &= (c >= 0) & (c < L)
            index = index * L + np.clip(c, 0, L - 1)
        index = np.broadcast_to(index, (N, C, index.shape[-1]))
        values = flat.gather(2, Tensor(np.ascontiguousarray(index)))
        return values if inside.all() else values * Tensor(inside.astype(input.dtype))

    if mode == "bicubic":
        x, y = raw[1], raw[0]
        x0, y0 = (np.floor(c.detach().numpy()) for c in (x, y))
        wx, wy = _cubic(x - Tensor(x0)), _cubic(y - Tensor(y0))
        total = None
        for j in range(4):
            for i in range(4):
                taps = []
                for c0, k, L in ((y0, j, sizes[0]), (x0, i, sizes[1])):
                    c = Tensor(c0 + k - 1)
                    taps.append(_coordinates(c, L, padding_mode, align_corners).detach()
                                .numpy().astype(np.int64))
                term = read(taps) * (wy[j] * wx[i])
                total = term if total is None else total + term
        return total.reshape(N, C, *out)
    coords = [_coordinates(c, L, padding_mode, align_corners)
              for c, L in zip(raw, sizes, strict=True)]
    if mode == "nearest":                                         # halves round to even
        cells = [np.rint(c.detach().numpy()).astype(np.int64) for c in coords]
        values = read(cells).reshape(N, C, *out)
        if not grid.requires_grad:
            return values
        # the values move with the grid only at rounding edges: its gradient is zero, as
        # torch's, yet the output records the grid (a `where` that never picks it)
        return where(np.zeros(values.shape, bool), grid[..., 0].unsqueeze(1), values)
    lows = [np.floor(c.detach().numpy()) for c in coords]
    fracs = [c - Tensor(lo) for c, lo in zip(coords, lows, strict=True)]   # weights' gradient
    total = None
    for corner in np.ndindex(*(2,) * n):                          # the 2^n cells around
        weight, cells = None, []
        for c, lo, f in zip(corner, lows, fracs, strict=True):
            w = f if c else 1 - f
            weight = w if weight is None else weight * w
            cells.append(lo.astype(np.int64) + c)
        term = read(cells) * weight
        total = term if total is None else total + term
    return total.reshape(N, C, *out)


__all__ = ["affine_grid", "grid_sample"]
