"""Op-info entries of the convolution, pooling, resampling and padding families (loaded at the
end of opinfo.py, into the same OPS table): conv3d, the transposed convolutions, conv_tbc,
unfold/fold, max pooling with indices and its inverse, 3-d and adaptive and LP and fractional
pooling, interpolate's other modes (nearest-exact, trilinear, bicubic, area, antialias, uint8),
F.pad's negative amounts in every mode, the pixel and channel shuffles, and nn.Conv3d /
nn.ConvTranspose1d-3d as functions of their input and parameters.

Each numpy reference works one output cell (or one input cell) at a time, by the definition;
torch itself is the other oracle. Two departures of torch from its own definition are kept out
of the random samples and pinned by fixed samples checked against numpy and finite
differences only (see _TORCH_BUGS below).
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import F64, I32, I64, OpInfo, S, Sample, TF, _f64, add, array, family
from opinfo import OPS, torch
from opinfo_layers import _module_fn, _params, np_adaptive_avg, np_conv, np_pool

U8 = np.dtype(np.uint8)


def _nt(v, n):
    return (v,) * n if isinstance(v, (int, np.integer)) else tuple(v)


def _unbatched(n):
    """Decorator: a reference written for (N, C, *spatial) also takes (C, *spatial)."""
    def wrap(f):
        def ref(x, *args, **kw):
            if x.ndim == n + 1:
                out = f(x[None], *args, **kw)
                return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
            return f(x, *args, **kw)
        return ref
    return wrap


# ------------------------------------------------------------------------------------------
# numpy references
# ------------------------------------------------------------------------------------------

def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                      dilation=1):
    """Every input cell scatters x * w[kernel offset] to cell * stride + offset * dilation."""
    n = w.ndim - 2
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    s, p, op, d = (_nt(v, n) for v in (stride, padding, output_padding, dilation))
    N, C, L = x.shape[0], x.shape[1], x.shape[2:]
    k, og = w.shape[2:], w.shape[1]
    cg = C // groups
    canvas = [(L[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(n)]
    y = np.zeros((N, og * groups, *canvas))
    for pos in np.ndindex(*L):
        for off in np.ndindex(*k):
            tgt = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(n))
            for g in range(groups):
                xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]          # (N, cg)
                y[(slice(None), slice(g * og, (g + 1) * og)) + tgt] += \
                    xs @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + off]
    out = [canvas[i] - 2 * p[i] for i in range(n)]
    y = y[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + out[i]) for i in range(n))]
    if b is not None:
        y = y + b.reshape(-1, *([1] * n))
    return y[0] if unb else y


def _windows(L, k, s, p, d, ceil_mode):
    """Per dim, the (valid) input cells of each output position, torch's geometry."""
    out = []
    for Li, ki, si, pi, di in zip(L, k, s, p, d, strict=True):
        num = Li + 2 * pi - di * (ki - 1) - 1 + (si - 1 if ceil_mode else 0)
        o = num // si + 1
        if ceil_mode and (o - 1) * si >= Li + pi:
            o -= 1
        out.append([[c for c in (j * si - pi + t * di for t in range(ki)) if 0 <= c < Li]
                    for j in range(o)])
    return out


def _pick(vals):
    """torch's max: the first maximum, or the last NaN; (value, position in vals)."""
    nan = [i for i, v in enumerate(vals) if v != v]
    if nan:
        return vals[nan[-1]], nan[-1]
    best = max(range(len(vals)), key=lambda i: (vals[i], -i))
    return vals[best], best


def np_max_pool_indices(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                        n=2):
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    k = _nt(kernel_size, n)
    s = _nt(stride, n) if stride is not None else k
    L = x.shape[2:]
    wins = _windows(L, k, s, _nt(padding, n), _nt(dilation, n), ceil_mode)
    out = tuple(len(w) for w in wins)
    y, idx = np.zeros(x.shape[:2] + out, x.dtype), np.zeros(x.shape[:2] + out, np.int64)
    for a, c in np.ndindex(*x.shape[:2]):
        for pos in np.ndindex(*out):
            cells = list(itertools.product(*[wins[i][pos[i]] for i in range(n)]))
            v, j = _pick([x[(a, c) + cell] for cell in cells])
            y[(a, c) + pos], idx[(a, c) + pos] = v, np.ravel_multi_index(cells[j], L)
    return (y[0], idx[0]) if unb else (y, idx)


def np_avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None, n=2):
    """The sum of each window's input cells divided by divisor_override, or by the window's
    size clipped to input + padding (count_include_pad) or to the input alone."""
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    k = _nt(kernel_size, n)
    s, p, L = (_nt(stride, n) if stride is not None else k), _nt(padding, n), x.shape[2:]
    wins = _windows(L, k, s, p, (1,) * n, ceil_mode)
    out = tuple(len(w) for w in wins)
    y = np.zeros(x.shape[:2] + out)
    for pos in np.ndindex(*out):
        cells = list(itertools.product(*[wins[i][pos[i]] for i in range(n)]))
        total = sum(x[(slice(None), slice(None)) + c] for c in cells)
        size = math.prod(min(pos[i] * s[i] - p[i] + k[i], L[i] + p[i]) - (pos[i] * s[i] - p[i])
                         for i in range(n))
        y[(slice(None), slice(None)) + pos] = total / (
            divisor_override or (size if count_include_pad else len(cells)))
    return y[0] if unb else y


def np_max_unpool(v, indices, kernel_size, stride=None, padding=0, output_size=None, n=2):
    unb = v.ndim == n + 1
    v, indices = (v[None], indices[None]) if unb else (v, indices)
    k = _nt(kernel_size, n)
    s, p = (_nt(stride, n) if stride is not None else k), _nt(padding, n)
    out = tuple(output_size)[-n:] if output_size is not None else \
        tuple((v.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n))
    y = np.zeros(v.shape[:2] + out, v.dtype)
    for a, c in np.ndindex(*v.shape[:2]):
        y[a, c].flat[indices[a, c].ravel()] = v[a, c].ravel()
    return y[0] if unb else y


def np_adaptive_max(x, output_size, return_indices=False, n=2):
    unb = x.ndim == n + 1
    x = x[None] if unb else x
    L = x.shape[2:]
    out = tuple(Li if o is None else o for Li, o in zip(L, _nt(output_size, n), strict=True))
    y, idx = np.zeros(x.shape[:2] + out, x.dtype), np.zeros(x.shape[:2] + out, np.int64)
    for a, c in np.ndindex(*x.shape[:2]):
        for pos in np.ndindex(*out):
            ranges = [range((pos[i] * L[i]) // out[i], -(-((pos[i] + 1) * L[i]) // out[i]))
                      for i in range(n)]
            cells = list(itertools.product(*ranges))
            v, j = _pick([x[(a, c) + cell] for cell in cells])
            y[(a, c) + pos], idx[(a, c) + pos] = v, np.ravel_multi_index(cells[j], L)
    if unb:
        y, idx = y[0], idx[0]
    return (y, idx) if return_indices else y


def np_lp_pool(x, norm_type, kernel_size, stride=None, ceil_mode=False, n=2):
    """torch's formula: the window mean of x^p (its divisor clipped to the input) times the
    kernel's size, to the power 1/p."""
    k = _nt(kernel_size, n)
    m = np_pool(x.astype(np.float64) ** norm_type, k, stride, 0, 1, ceil_mode, True, "avg", n)
    return (np.sign(m) * np.maximum(np.abs(m), 0) * math.prod(k)) ** (1.0 / norm_type)


def np_fractional(x, kernel_size, output_size, _random_samples, return_indices=False, n=2):
    """Windows of kernel_size at starts int((i + u) alpha) - int(u alpha) (the last at L - k),
    alpha = (L - k) / (out - 1), computed in the input's float type as torch's kernel."""
    k, out = _nt(kernel_size, n), _nt(output_size, n)
    L, t = x.shape[2:], x.dtype.type
    y, idx = np.zeros(x.shape[:2] + out, x.dtype), np.zeros(x.shape[:2] + out, np.int64)
    for a, c in np.ndindex(*x.shape[:2]):
        starts = []
        for i in range(n):
            u = t(_random_samples[a, c, 1 - i if n == 2 else i])   # 2-d: (W, H), 3-d: (T, H, W)
            if out[i] == 1:
                starts.append([L[i] - k[i]])
                continue
            alpha = t(L[i] - k[i]) / t(out[i] - 1)
            starts.append([int((t(j) + u) * alpha) - int(u * alpha) for j in range(out[i] - 1)]
                          + [L[i] - k[i]])
        for pos in np.ndindex(*out):
            cells = list(itertools.product(*[range(starts[i][pos[i]], starts[i][pos[i]] + k[i])
                                             for i in range(n)]))
            v, j = _pick([x[(a, c) + cell] for cell in cells])
            y[(a, c) + pos], idx[(a, c) + pos] = v, np.ravel_multi_index(cells[j], L)
    return (y, idx) if return_indices else y


@_unbatched(2)
def np_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (_nt(v, 2) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    bh = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    bw = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((x.shape[0], x.shape[1] * k[0] * k[1], bh * bw), x.dtype)
    for c, i, j, bi, bj in itertools.product(range(x.shape[1]), range(k[0]), range(k[1]),
                                             range(bh), range(bw)):
        cols[:, (c * k[0] + i) * k[1] + j, bi * bw + bj] = \
            xp[:, c, bi * s[0] + i * d[0], bj * s[1] + j * d[1]]
    return cols


def np_fold(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    unb = cols.ndim == 2
    cols = cols[None] if unb else cols
    o, k, d, p, s = (_nt(v, 2) for v in (output_size, kernel_size, dilation, padding, stride))
    C = cols.shape[1] // (k[0] * k[1])
    y = np.zeros((cols.shape[0], C, o[0] + 2 * p[0], o[1] + 2 * p[1]), cols.dtype)
    bh = (o[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    bw = (o[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    for c, i, j, bi, bj in itertools.product(range(C), range(k[0]), range(k[1]), range(bh),
                                             range(bw)):
        y[:, c, bi * s[0] + i * d[0], bj * s[1] + j * d[1]] += \
            cols[:, (c * k[0] + i) * k[1] + j, bi * bw + bj]
    y = y[:, :, p[0]:p[0] + o[0], p[1]:p[1] + o[1]]
    return y[0] if unb else y


def np_pixel_shuffle(x, upscale_factor):
    r = upscale_factor
    *lead, C, H, W = x.shape
    y = np.zeros((*lead, C // (r * r), H * r, W * r), x.dtype)
    for c, h, w in itertools.product(range(C // (r * r)), range(H * r), range(W * r)):
        y[..., c, h, w] = x[..., c * r * r + (h % r) * r + w % r, h // r, w // r]
    return y


def np_pixel_unshuffle(x, downscale_factor):
    r = downscale_factor
    *lead, C, H, W = x.shape
    y = np.zeros((*lead, C * r * r, H // r, W // r), x.dtype)
    for c, h, w in itertools.product(range(C), range(H), range(W)):
        y[..., c * r * r + (h % r) * r + w % r, h // r, w // r] = x[..., c, h, w]
    return y


def np_channel_shuffle(x, groups):
    C = x.shape[1]
    return x[:, [(j % groups) * (C // groups) + j // groups for j in range(C)]]


def np_pad_any(x, pad, mode="constant", value=None):
    """Every cell of the output read through the mode's map from its position relative to the
    input (constant: value outside); circular crops first and wraps around what is left."""
    for i in range(len(pad) // 2):
        d, left, right = x.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
        n = x.shape[d]
        if mode == "circular":
            lo, hi = max(-left, 0), n - max(-right, 0)
            x = np.take(x, np.arange(lo, hi), axis=d)
            n, left, right = hi - lo, max(left, 0), max(right, 0)
        cells = np.arange(-left, n + right)
        if mode == "constant":
            inside = (cells >= 0) & (cells < n)
            vals = np.take(x, np.clip(cells, 0, n - 1), axis=d)
            shape = [1] * x.ndim
            shape[d] = len(cells)
            fill = np.asarray(0 if value is None else value).astype(x.dtype)
            x = np.where(inside.reshape(shape), vals, fill)
            continue
        if mode == "reflect":
            cells = np.abs(cells)
            cells = np.where(cells >= n, 2 * (n - 1) - cells, cells)
        cells = np.clip(cells, 0, n - 1) if mode == "replicate" else cells % n \
            if mode == "circular" else cells
        x = np.take(x, cells, axis=d)
    return x


# --- interpolate: one (out, in) matrix per spatial dim, filled cell by cell -----------------

def _ratio(L, o, align_corners, sf, t):
    if align_corners:
        return t(L - 1) / t(o - 1) if o > 1 else t(0)
    return t(1.0 / sf) if sf else t(L) / t(o)


def _keys(x, a):
    x = abs(float(x))
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return (((x - 5) * x + 8) * x - 4) * a if x < 2 else 0.0


def _tri(x):
    return max(0.0, 1.0 - abs(float(x)))


def _resample_matrix(L, o, mode, align_corners, sf, t, antialias, small2d):
    """M (o, L): output cell i = sum_j M[i, j] * input cell j, by torch's rules for the mode
    (the arithmetic type t is float32 for float32 input, as torch's)."""
    M = np.zeros((o, L))
    s = _ratio(L, o, align_corners, sf, t)
    for i in range(o):
        if mode in ("nearest", "nearest-exact"):
            exact = mode == "nearest-exact"
            if small2d and not exact and o in (L, 2 * L):
                j = i if o == L else i // 2
            elif small2d:
                s32 = np.float32(1.0 / sf) if sf else np.float32(L) / np.float32(o)
                j = math.floor(np.float32((i + 0.5) * float(s32))) if exact else \
                    math.floor(np.float32(i) * s32)
            elif exact:
                j = math.floor(np.float32(max(s * (t(i) + t(0.5)) - t(0.5), t(0)) + t(0.5)))
            else:
                j = math.floor(np.float32(s * t(i)))
            M[i, min(j, L - 1)] = 1
        elif antialias:
            interp = 4 if mode == "bicubic" else 2
            support = t(interp / 2) * s if s >= 1 else t(interp / 2)
            inv = t(1) / s if s >= 1 else t(1)
            center = s * (t(i) + t(0.5))
            lo = max(int(center - support + t(0.5)), 0)
            hi = min(int(center + support + t(0.5)), L)
            w = [(_keys((j - center + 0.5) * inv, -0.5) if interp == 4 else
                  _tri((j - center + 0.5) * inv)) for j in range(lo, hi)]
            total = sum(w)
            for j, wj in zip(range(lo, hi), w, strict=True):
                M[i, j] = wj / total if total else wj
        elif mode == "bicubic":
            src = s * t(i) if align_corners else s * (t(i) + t(0.5)) - t(0.5)
            j0 = min(math.floor(np.float32(src)), L - 1)
            lam = min(max(float(src) - j0, 0.0), 1.0)
            for m, dist in zip(range(-1, 3), (1 + lam, lam, 1 - lam, 2 - lam), strict=True):
                M[i, min(max(j0 + m, 0), L - 1)] += _keys(dist, -0.75)
        else:                                        # linear, bilinear, trilinear
            if o == L:
                M[i, i] = 1
                continue
            src = s * t(i) if align_corners else max(s * (t(i) + t(0.5)) - t(0.5), t(0))
            j0 = int(src)
            lam = float(src) - j0
            M[i, j0] += 1 - lam
            M[i, min(j0 + 1, L - 1)] += lam
    return M


def _uint8_matrix(L, o, mode, align_corners, sf, antialias):
    """torch's uint8 weights: float64 ones (out-of-range cells folded onto the border cell
    when not antialiasing) as int16 with `precision` fraction bits."""
    interp = 4 if mode == "bicubic" else 2
    if antialias:
        M = _resample_matrix(L, o, mode, align_corners, sf, np.float64, True, False)
    else:
        M = np.zeros((o, L))
        s = _ratio(L, o, align_corners, sf, np.float64)
        for i in range(o):
            src = s * i if align_corners else s * (i + 0.5) - 0.5
            if interp == 2 and not align_corners:
                src = max(src, 0.0)
            j0 = min(math.floor(np.float32(src)), L - 1)
            lam = min(max(src - j0, 0.0), 1.0)
            for m in range(interp):
                dist = m + 1 - interp // 2 - lam
                w = _keys(dist, -0.75) if interp == 4 else _tri(dist)
                M[i, min(max(j0 + m + 1 - interp // 2, 0), L - 1)] += w
    top, precision = np.abs(M).max(), 0
    while precision < 22 and int(0.5 + top * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = M * (1 << precision)
    return np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64), precision


def np_interpolate_modes(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                         recompute_scale_factor=None, antialias=False):
    n = x.ndim - 2
    L = x.shape[2:]
    if size is not None:
        out, sf = _nt(size, n), (None,) * n
    else:
        sfs = _nt(scale_factor, n) if isinstance(scale_factor, (tuple, list)) else \
            (scale_factor,) * n
        out = tuple(int(math.floor(Li * f)) for Li, f in zip(L, sfs, strict=True))
        sf = (None,) * n if recompute_scale_factor else sfs
    if mode == "area":
        return np_adaptive_avg(x, out, n=n)
    y = x.astype(np.int64 if x.dtype == U8 else np.float64)
    t = np.float64 if x.dtype == F64 else np.float32
    small2d = n == 2 and out[0] + out[1] <= 128
    for i in reversed(range(n)):                     # the last dim first, as torch's passes
        if x.dtype == U8 and mode in ("bilinear", "bicubic"):
            if L[i] == out[i]:
                continue
            M, prec = _uint8_matrix(L[i], out[i], mode, align_corners, sf[i], antialias)
            y = np.moveaxis(np.tensordot(y, M, axes=([2 + i], [1])), -1, 2 + i)
            y = np.clip((y + (1 << (prec - 1))) >> prec, 0, 255)
            continue
        if antialias and L[i] == out[i]:
            continue
        M = _resample_matrix(L[i], out[i], mode, bool(align_corners), sf[i], t, antialias,
                             small2d)
        y = np.moveaxis(np.tensordot(y, M, axes=([2 + i], [1])), -1, 2 + i)
    return y.astype(x.dtype) if x.dtype == U8 else y


# ------------------------------------------------------------------------------------------
# samples
# ------------------------------------------------------------------------------------------

def _batch(draw):
    return draw(st.sampled_from(((), (1,), (2,))))


def _conv3d_family(draw, dt):
    groups = draw(st.sampled_from((1, 2)))
    k = tuple(draw(st.integers(1, 2)) for _ in range(3))
    kw = {"stride": draw(st.sampled_from((1, 2, (1, 2, 1)))), "dilation": draw(st.sampled_from(
        (1, (2, 1, 1)))), "padding": draw(st.sampled_from((0, 1, (1, 0, 0)))), "groups": groups}
    sizes = tuple(2 + draw(st.integers(0, 2)) for _ in range(3))
    x = array(draw, _batch(draw) + (groups,) + sizes, dt)
    w = array(draw, (groups * draw(st.integers(1, 2)), 1) + k, dt)
    return Sample((x, w) + ((array(draw, w.shape[:1], dt),) if draw(st.booleans()) else ()), kw)


def _transpose_family(n):
    def build(draw, dt):
        groups = draw(st.sampled_from((1, 1, 2)))
        stride = tuple(draw(st.integers(1, 3)) for _ in range(n))
        dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        padding = tuple(draw(st.integers(0, 2)) for _ in range(n))
        # output_padding below max(stride, dilation); the output must stay non-empty
        out_pad = tuple(draw(st.integers(0, max(s, d) - 1))
                        for s, d in zip(stride, dilation, strict=True))
        L = tuple(draw(st.integers(1, 3 if n < 3 else 2)) for _ in range(n))
        for i in range(n):
            while (L[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + \
                    out_pad[i] + 1 < 1:
                padding = padding[:i] + (padding[i] - 1,) + padding[i + 1:]
        cin, cout = groups * draw(st.integers(1, 2)), draw(st.integers(1, 2))
        x = array(draw, _batch(draw) + (cin,) + L, dt)
        w = array(draw, (cin, cout) + k, dt)
        b = (array(draw, (cout * groups,), dt),) if draw(st.booleans()) else ()
        return Sample((x, w) + b, {"stride": stride, "padding": padding,
                                   "output_padding": out_pad, "groups": groups,
                                   "dilation": dilation})
    return family(build)


def _pool_geometry(draw, n, dilation=True, big=False):
    k = tuple(draw(st.integers(1, 3)) for _ in range(n))
    kw = {"kernel_size": k, "stride": draw(st.sampled_from((None, 1, 2))),
          "padding": tuple(draw(st.integers(0, kk // 2)) for kk in k),
          "ceil_mode": draw(st.booleans())}
    d = draw(st.sampled_from((1, 2))) if dilation else 1
    if dilation:
        kw["dilation"] = d
    # every window must read an input cell (torch's result otherwise: -inf, a bad index)
    sizes = tuple(d * (kk - 1) + 1 + draw(st.integers(0, 3 if big else 2)) for kk in k)
    return kw, sizes


def _max_indices_family(n):
    def build(draw, dt):
        kw, sizes = _pool_geometry(draw, n)
        x = array(draw, _batch(draw) + (draw(st.integers(1, 2)),) + sizes, dt)
        return Sample((x,), kw)
    return family(build)


def _avg3d_family(draw, dt):
    kw, sizes = _pool_geometry(draw, 3, dilation=False)
    kw["count_include_pad"] = draw(st.booleans())
    kw["divisor_override"] = draw(st.sampled_from((None, None, 3)))
    return Sample((array(draw, _batch(draw) + (2,) + sizes, dt),), kw)


def _unpool_family(n):
    def build(draw, dt):
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        # windows that do not overlap: each index once (torch leaves repeats undefined)
        stride = draw(st.sampled_from((None, tuple(kk + 1 for kk in k))))
        s = k if stride is None else stride
        padding = tuple(draw(st.integers(0, kk // 2)) for kk in k)
        sizes = tuple(kk + draw(st.integers(0, 3)) for kk in k)
        x = array(draw, _batch(draw) + (2,) + sizes, F64)
        v, i = np_max_pool_indices(x, k, s, padding, 1, False, n=n)
        # the pooled input's size: within a stride of the default, so a valid output_size
        out = sizes if draw(st.booleans()) else x.shape if len(x.shape) == n + 2 and \
            draw(st.booleans()) else None
        default = tuple((v.shape[-n + j] - 1) * s[j] - 2 * padding[j] + k[j] for j in range(n))
        if out is None and default != sizes:
            out = sizes
        return Sample((v.astype(dt), i), {"kernel_size": k, "stride": stride,
                                          "padding": padding, "output_size": out})
    return family(build)


def _adaptive_max_family(n):
    def build(draw, dt):
        sizes = tuple(draw(st.integers(1, 6)) for _ in range(n))
        out = tuple(draw(st.sampled_from((1, 2, 3, 4, None))) for _ in range(n))
        x = array(draw, _batch(draw) + (2,) + sizes, dt)
        return Sample((x,), {"output_size": out if n > 1 else (out[0] or 2),
                             "return_indices": draw(st.booleans())})
    return family(build)


def _adaptive_avg3d_family(draw, dt):
    sizes = tuple(draw(st.integers(1, 5)) for _ in range(3))
    out = tuple(draw(st.integers(1, 4)) for _ in range(3))
    return Sample((array(draw, _batch(draw) + (2,) + sizes, dt),), {"output_size": out})


def _lp_family(n):
    def build(draw, dt):
        kw, sizes = _pool_geometry(draw, n, dilation=False)
        del kw["padding"]
        if n == 1:
            kw["kernel_size"] = kw["kernel_size"][0]
        p = draw(st.sampled_from((1.0, 2.0, 3.0, 1.5)))
        # away from 0: x^p of a fractional p needs x > 0, and (sum)^(1/p) is smooth there
        x = array(draw, _batch(draw) + (2,) + sizes, dt, low=0.3, high=2.0)
        return Sample((x,), {"norm_type": p, **kw})
    return family(build)


def _fractional_family(n):
    def build(draw, dt):
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        out = tuple(draw(st.integers(1, 3)) for _ in range(n))
        # torch's 3-d check wants room for one more cell than the 2-d one
        sizes = tuple(o + kk - 1 + (n == 3) + draw(st.integers(0, 3))
                      for o, kk in zip(out, k, strict=True))
        N = draw(st.integers(1, 2))
        x = array(draw, (N, 2) + sizes, dt)
        u = np.random.default_rng(draw(st.integers(0, 2**31))).random((N, 2, n)).astype(dt)
        return Sample((x,), {"kernel_size": k, "output_size": out, "_random_samples": u,
                             "return_indices": draw(st.booleans())})
    return family(build)


def _tbc_family(draw, dt):
    T, B, cin, cout, k = (draw(st.integers(lo, hi)) for lo, hi in
                          ((2, 4), (1, 2), (1, 3), (1, 2), (1, 2)))
    return Sample((array(draw, (T, B, cin), dt), array(draw, (k, cin, cout), dt),
                   array(draw, (cout,), dt)), {"pad": draw(st.integers(0, 1))})


def _unfold_family(draw, dt):
    k = tuple(draw(st.integers(1, 3)) for _ in range(2))
    d = tuple(draw(st.integers(1, 2)) for _ in range(2))
    p = tuple(draw(st.integers(0, 1)) for _ in range(2))
    s = tuple(draw(st.integers(1, 2)) for _ in range(2))
    sizes = tuple(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]) + draw(st.integers(0, 2))
                  for i in range(2))
    x = array(draw, draw(st.sampled_from(((), (2,)))) + (2,) + sizes, dt)
    return Sample((x,), {"kernel_size": k, "dilation": d, "padding": p, "stride": s})


def _fold_family(draw, dt):
    k = tuple(draw(st.integers(1, 3)) for _ in range(2))
    d = tuple(draw(st.integers(1, 2)) for _ in range(2))
    p = tuple(draw(st.integers(0, 1)) for _ in range(2))
    s = tuple(draw(st.integers(1, 2)) for _ in range(2))
    out = tuple(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]) + draw(st.integers(0, 2))
                for i in range(2))
    blocks = math.prod((out[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    cols = array(draw, draw(st.sampled_from(((), (2,)))) + (2 * k[0] * k[1], blocks), dt)
    return Sample((cols,), {"output_size": out, "kernel_size": k, "dilation": d, "padding": p,
                            "stride": s})


def _shuffle_family(kind):
    def build(draw, dt):
        r = draw(st.integers(1, 3))
        lead = draw(st.sampled_from(((), (2,), (1, 2))))
        if kind == "pixel_shuffle":
            shape = lead + (r * r * draw(st.integers(1, 2)), draw(st.integers(1, 3)),
                            draw(st.integers(1, 3)))
            return Sample((array(draw, shape, dt),), {"upscale_factor": r})
        if kind == "pixel_unshuffle":
            shape = lead + (draw(st.integers(1, 2)), r * draw(st.integers(1, 2)),
                            r * draw(st.integers(1, 2)))
            return Sample((array(draw, shape, dt),), {"downscale_factor": r})
        g = draw(st.integers(1, 3))
        shape = (draw(st.integers(1, 2)), g * draw(st.integers(1, 3))) + \
            tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2))))
        return Sample((array(draw, shape, dt),), {"groups": g})
    return family(build)


def _pad_crop_family(mode):
    """Asymmetric amounts, negative ones (crops) included, over 1-3 padded dims."""
    def build(draw, dt):
        k = draw(st.integers(1, 3))
        s = tuple(draw(st.integers(2, 4)) for _ in range(k + draw(st.integers(1, 2))))
        amounts = []
        for i in range(k):
            n = s[len(s) - 1 - i]
            if mode == "circular":
                left = draw(st.integers(-(n - 1), n))
                m = n - max(-left, 0)             # what a negative left amount leaves
                right = draw(st.integers(-(m - 1), m))
                left = min(left, m - max(-right, 0))
            else:
                top = n - 1 if mode == "reflect" else 3
                left = draw(st.integers(-(n - 1), top))
                right = draw(st.integers(-(n + min(left, 0) - 1), top))
            amounts += [left, right]
        return Sample((array(draw, s, dt),), {"pad": tuple(amounts), "mode": mode})
    return family(build)


def _interp_family(mode, n, antialias=False):
    """interpolate samples away from two torch departures (_TORCH_BUGS): a nearest scale that
    keeps (or, in 1-d and 3-d, doubles) a size, and a separable pass to a width of 1."""
    def build(draw, dt):
        kw = {"mode": mode}
        sizes = tuple(draw(st.integers(1, 5)) for _ in range(n))
        if draw(st.booleans()):
            out = tuple(draw(st.integers(1, 7)) for _ in range(n))
            kw["size"] = out
        else:
            sf = draw(st.sampled_from((0.5, 0.75, 1.5, 2.0, 2.5, 3.0)))
            sizes = tuple(max(L, 2) for L in sizes)          # no empty output
            kw["scale_factor"] = sf
            kw["recompute_scale_factor"] = draw(st.sampled_from((None, True)))
            out = tuple(int(math.floor(L * sf)) for L in sizes)
            if mode.startswith("nearest") and any(
                    o == L or (o == 2 * L and n != 2 and sf != 2.0)
                    for o, L in zip(out, sizes, strict=True)):
                kw["recompute_scale_factor"] = True
        separable = antialias or dt == U8
        if separable and out[-1] == 1 and n == 2 and sizes[0] != out[0]:
            kw.pop("scale_factor", None)
            kw.pop("recompute_scale_factor", None)
            kw["size"] = (out[0], 2)
        if mode in ("linear", "bilinear", "bicubic", "trilinear"):
            kw["align_corners"] = draw(st.booleans())
        if antialias:
            kw["antialias"] = True
        C = draw(st.integers(1, 6)) if dt == U8 else draw(st.integers(1, 2))
        x = array(draw, (draw(st.integers(1, 2)), C) + sizes, dt,
                  *((0, 255) if dt == U8 else ()))
        return Sample((x,), kw)
    return family(build)


# ------------------------------------------------------------------------------------------
# the entries
# ------------------------------------------------------------------------------------------

def _f(name):
    return lambda *a, **kw: getattr(F, name)(*a, **kw)


def _t(name):
    return lambda *a, **kw: getattr(TF, name)(*a, **kw)


def _with(fn, **fixed):
    return lambda *a, **kw: fn(*a, **fixed, **kw)


_INT_CONV = "integer convolutions have no gradient"

add(
    OpInfo("F.conv3d", _f("conv3d"), torch_op=_t("conv3d"), ref=np_conv,
           samples=family(_conv3d_family)),
    OpInfo("F.conv2d[int]", _f("conv2d"), torch_op=_t("conv2d"), ref=np_conv,
           samples=family(lambda d, dt: Sample((array(d, (2, 2, 4, 4), dt, -3, 3),
                                                array(d, (3, 2, 2, 2), dt, -3, 3)))),
           dtypes=(I64, I32), grad=False, grad_reason=_INT_CONV, api=("F.conv2d",)),
    *(OpInfo(f"F.conv_transpose{n}d", _f(f"conv_transpose{n}d"),
             torch_op=_t(f"conv_transpose{n}d"), ref=np_conv_transpose,
             samples=_transpose_family(n)) for n in (1, 2, 3)),
    OpInfo("F.conv_tbc", _f("conv_tbc"), torch_op=_t("conv_tbc"),
           ref=lambda x, w, b, pad=0: np.transpose(np_conv(
               np.transpose(x, (1, 2, 0)), np.transpose(w, (2, 1, 0)), b, padding=pad),
               (2, 0, 1)),
           samples=family(_tbc_family)),
    OpInfo("F.unfold", _f("unfold"), torch_op=_t("unfold"), ref=np_unfold,
           samples=family(_unfold_family)),
    OpInfo("F.fold", _f("fold"), torch_op=_t("fold"), ref=np_fold, samples=family(_fold_family)),
    *(OpInfo(f"F.max_pool{n}d[return_indices]", _with(_f(f"max_pool{n}d"), return_indices=True),
             torch_op=_with(_t(f"max_pool{n}d"), return_indices=True),
             ref=_with(np_max_pool_indices, n=n), samples=_max_indices_family(n),
             api=(f"F.max_pool{n}d", f"F.max_pool{n}d_with_indices")) for n in (1, 2, 3)),
    OpInfo("F.max_pool3d", _f("max_pool3d"), torch_op=_t("max_pool3d"),
           ref=lambda x, **kw: np_pool(x, kind="max", n=3, **kw),
           samples=_max_indices_family(3)),
    OpInfo("F.max_pool2d[int]", _with(_f("max_pool2d"), return_indices=True),
           torch_op=_with(_t("max_pool2d"), return_indices=True),
           ref=_with(np_max_pool_indices, n=2), samples=_max_indices_family(2),
           dtypes=(I64, I32), grad=False, grad_reason="integer input",
           api=("F.max_pool2d",)),
    OpInfo("F.avg_pool3d", _f("avg_pool3d"), torch_op=_t("avg_pool3d"),
           ref=_with(np_avg_pool, n=3), samples=family(_avg3d_family)),
    *(OpInfo(f"F.max_unpool{n}d", _f(f"max_unpool{n}d"), torch_op=_t(f"max_unpool{n}d"),
             ref=_with(np_max_unpool, n=n), samples=_unpool_family(n)) for n in (1, 2, 3)),
    *(OpInfo(f"F.adaptive_max_pool{n}d", _f(f"adaptive_max_pool{n}d"),
             torch_op=_t(f"adaptive_max_pool{n}d"), ref=_with(np_adaptive_max, n=n),
             samples=_adaptive_max_family(n),
             api=(f"F.adaptive_max_pool{n}d", f"F.adaptive_max_pool{n}d_with_indices"))
      for n in (1, 2, 3)),
    OpInfo("F.adaptive_avg_pool3d", _f("adaptive_avg_pool3d"),
           torch_op=_t("adaptive_avg_pool3d"), ref=lambda x, **kw: np_adaptive_avg(x, n=3, **kw),
           samples=family(_adaptive_avg3d_family)),
    *(OpInfo(f"F.lp_pool{n}d", _f(f"lp_pool{n}d"), torch_op=_t(f"lp_pool{n}d"),
             ref=_with(np_lp_pool, n=n), samples=_lp_family(n)) for n in (1, 2, 3)),
    *(OpInfo(f"F.fractional_max_pool{n}d", _f(f"fractional_max_pool{n}d"),
             torch_op=_t(f"fractional_max_pool{n}d"), ref=_with(np_fractional, n=n),
             samples=_fractional_family(n),
             api=(f"F.fractional_max_pool{n}d", f"F.fractional_max_pool{n}d_with_indices"))
      for n in (2, 3)),
    *(OpInfo(f"F.{k}", _f(k), torch_op=_t(k), ref=r, samples=_shuffle_family(k),
             api=(f"F.{k}",) + (("F.native_channel_shuffle",) if k == "channel_shuffle" else ()))
      for k, r in (("pixel_shuffle", np_pixel_shuffle), ("pixel_unshuffle", np_pixel_unshuffle),
                   ("channel_shuffle", np_channel_shuffle))),
    *(OpInfo(f"F.pad[{m}-crop]", _f("pad"), torch_op=_t("pad"), ref=np_pad_any,
             samples=_pad_crop_family(m), api=("F.pad",))
      for m in ("reflect", "replicate", "circular")),
    *(OpInfo(f"F.interpolate[{mode}{n}d{'-aa' if aa else ''}]", _f("interpolate"),
             torch_op=_t("interpolate"), ref=np_interpolate_modes,
             samples=_interp_family(mode, n, aa), api=("F.interpolate",))
      for mode, n, aa in (("nearest", 3, False), ("nearest-exact", 1, False),
                          ("nearest-exact", 2, False), ("nearest-exact", 3, False),
                          ("trilinear", 3, False), ("bicubic", 2, False), ("area", 1, False),
                          ("area", 2, False), ("area", 3, False), ("bilinear", 2, True),
                          ("bicubic", 2, True))),
    *(OpInfo(f"F.interpolate[uint8-{mode}{'-aa' if aa else ''}]", _f("interpolate"),
             torch_op=_t("interpolate"), ref=np_interpolate_modes,
             samples=_interp_family(mode, 2, aa), dtypes=(U8,), grad=False,
             grad_reason="uint8 input", atol=0, rtol=0, atol32=0, rtol32=0,
             api=("F.interpolate",))
      for mode, aa in (("nearest", False), ("nearest-exact", False), ("bilinear", False),
                       ("bicubic", False), ("bilinear", True), ("bicubic", True))),
)


# ------------------------------------------------------------------------------------------
# fixed samples: the examples, torch's special paths, ties, and where torch departs
# from its own definition (_TORCH_BUGS: checked against numpy and finite differences only)
# ------------------------------------------------------------------------------------------
_TORCH_BUGS = {
    "nearest_kept_size": "torch's nearest backward copies a dim whose size a non-unit "
                         "scale_factor keeps (3 * 1.2 -> 3) while its forward reads floor(i / "
                         "1.2): its gradient is not its forward's (its own gradcheck fails)",
    "separable_width_1": "torch's separable kernels (antialias, uint8 with more than 4 "
                         "channels) repeat the first output row when the output width is 1",
    "bicubic_kept_size": "torch's bicubic backward, for a size a non-unit scale_factor keeps, "
                         "is not its forward's gradient (its own gradcheck fails)",
}
_UINT8_GRID = (np.arange(16).reshape(1, 1, 4, 4) * 10).astype(np.uint8)
_TIES = np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0],
                    [2.0, 2.0, 2.0, 2.0]]]])
_NAN = np.array([[[1.0, np.nan, 3.0, np.nan, 2.0, 0.0]]])


def _torch_bug(key, *inputs, only=("numpy", "gradcheck", "gradgradcheck"), **kw):
    """A sample where torch departs from its own definition: checked without torch."""
    assert key in _TORCH_BUGS, key
    return S(*inputs, only=only, desc=f"torch_bug_{key}", **kw)


def _fixed(name, *samples):
    entry = next(e for e in OPS if e.name == name)
    entry.fixed = tuple(entry.fixed) + samples


_fixed("F.interpolate[uint8-bilinear]",
       S(_UINT8_GRID, size=(2, 2), mode="bilinear", desc="issue43_uint8_grid"),
       S(np.repeat(_UINT8_GRID, 3, 1), scale_factor=1.7, mode="bilinear", align_corners=True,
         desc="rgb_align_corners"),
       S(np.repeat(_UINT8_GRID, 6, 1), size=(3, 5), mode="bilinear", desc="six_channels"),
       _torch_bug("separable_width_1", np.repeat(_UINT8_GRID, 6, 1), size=(3, 1),
                  mode="bilinear", only=("numpy",)))
_fixed("F.interpolate[bilinear2d-aa]",
       _torch_bug("separable_width_1", _f64(1, 1, 5, 3), scale_factor=0.5, mode="bilinear",
                  antialias=True))
_fixed("F.interpolate[nearest3d]",
       _torch_bug("nearest_kept_size", _f64(1, 1, 1, 3, 4), scale_factor=1.2,
                  mode="nearest"))
_fixed("F.interpolate[nearest-exact2d]",
       S(_f64(1, 2, 3, 4), size=(70, 65), mode="nearest-exact", desc="large_output_kernel"),
       S(_f64(1, 2, 3, 4).astype(np.float32), scale_factor=1.2, mode="nearest-exact",
         desc="small_output_kernel"))
_fixed("F.interpolate[bicubic2d]",
       _torch_bug("bicubic_kept_size", _f64(1, 1, 3, 3), scale_factor=1.2, mode="bicubic"))
_fixed("F.max_pool2d[return_indices]",
       S(_TIES, kernel_size=2, only=("numpy", "torch"), desc="ties_first_maximum"),
       S(_TIES, kernel_size=3, padding=1, stride=1, only=("numpy", "torch"),
         desc="ties_with_padding"))
_fixed("F.max_pool1d[return_indices]",
       S(_NAN, kernel_size=3, stride=1, padding=1, only=("numpy", "torch"),
         desc="nan_last_wins"))
_fixed("F.adaptive_max_pool1d",
       S(_NAN, output_size=2, return_indices=True, only=("numpy", "torch"), desc="nan"))
_fixed("F.conv_transpose2d",
       S(_f64(2, 4, 3, 3), _f64(4, 3, 3, 3, seed=1), _f64(6, seed=2), stride=2, padding=1,
         output_padding=1, groups=2, dilation=1, desc="grouped_output_padding"),
       S(_f64(1, 2, 3, 2), _f64(2, 1, 2, 3, seed=1), stride=(1, 3), padding=(0, 2),
         dilation=(2, 1), output_padding=(1, 2), desc="asymmetric"))
_fixed("F.pad[circular-crop]",
       S(_f64(1, 2, 5), pad=(2, -1), mode="circular", desc="crop_then_wrap"),
       S(_f64(1, 2, 5), pad=(-1, 2), mode="circular", desc="wrap_after_crop"))
_fixed("F.pad[reflect-crop]",
       S(_f64(1, 2, 5), pad=(4, -1), mode="reflect", desc="reflect_past_the_crop"),
       S(_f64(1, 3, 4), pad=(-2, -1, -1, -1), mode="reflect", desc="one_dim_left"))


# ------------------------------------------------------------------------------------------
# torch's modules as functions of (input, parameters...)
# ------------------------------------------------------------------------------------------

def _conv_module_family(cls, n):
    def build(draw, dt):
        groups = draw(st.sampled_from((1, 2)))
        ctor = {"in_channels": groups * draw(st.integers(1, 2)),
                "out_channels": groups * draw(st.integers(1, 2)),
                "kernel_size": draw(st.integers(1, 2)), "groups": groups,
                "stride": draw(st.sampled_from((1, 2))), "bias": draw(st.booleans())}
        if cls == "Conv3d":
            ctor["padding_mode"] = draw(st.sampled_from(("zeros", "reflect", "replicate",
                                                         "circular")))
            ctor["padding"] = draw(st.sampled_from((0, 1)))
        else:
            ctor["output_padding"] = draw(st.integers(0, ctor["stride"] - 1))
            ctor["dilation"] = draw(st.sampled_from((1, 2)))
        sizes = tuple(draw(st.integers(2, 3)) for _ in range(n))
        x = array(draw, (draw(st.integers(1, 2)), ctor["in_channels"]) + sizes, dt)
        return Sample((x,) + _params(draw, dt, cls, ctor), {"ctor": ctor})
    return family(build)


def _module_op(cls, torch_side=False):
    fn = _module_fn(cls, 1, torch_side=torch_side)
    return lambda *tensors, ctor: fn(*tensors, ctor=ctor)


add(*(OpInfo(f"nn.{cls}", _module_op(cls), torch_op=_module_op(cls, True) if torch else None,
             torch_reason="torch is not installed", samples=_conv_module_family(cls, n))
      for cls, n in (("Conv3d", 3), ("ConvTranspose1d", 1), ("ConvTranspose2d", 2),
                     ("ConvTranspose3d", 3))))


def _upsample_family(draw, dt):
    x = array(draw, (draw(st.integers(1, 2)), 2, draw(st.integers(2, 4)), draw(st.integers(2, 4))),
              dt)
    kw = {"size": (draw(st.integers(1, 6)), draw(st.integers(2, 6)))} if draw(st.booleans()) \
        else {"scale_factor": draw(st.sampled_from((2, 3)))}
    return Sample((x,), kw)


def _quiet(fn):
    """fn with the deprecation warning of both libraries' upsample* silenced."""
    def call(*a, **kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*a, **kw)
    return call


add(OpInfo("F.upsample", _quiet(_f("upsample")), torch_op=_quiet(_t("upsample")),
           ref=lambda x, **kw: np_interpolate_modes(x, **kw), samples=family(_upsample_family)),
    OpInfo("F.upsample_nearest", _quiet(_f("upsample_nearest")),
           torch_op=_quiet(_t("upsample_nearest")),
           ref=lambda x, **kw: np_interpolate_modes(x, **kw), samples=family(_upsample_family)),
    OpInfo("F.upsample_bilinear", _quiet(_f("upsample_bilinear")),
           torch_op=_quiet(_t("upsample_bilinear")),
           ref=lambda x, **kw: np_interpolate_modes(x, mode="bilinear", align_corners=True, **kw),
           samples=family(_upsample_family)))


# ------------------------------------------------------------------------------------------
# torch's top-level forms (tgx.conv2d is torch.conv2d) and Tensor.unfold
# ------------------------------------------------------------------------------------------

def _top_level(name, base, drop=(), **fixed):
    """tgx.<name> against torch.<name>, on the samples and reference of the F entry `base`."""
    entry = next(e for e in OPS if e.name == base)

    def strip(kw):
        return {k: v for k, v in kw.items() if k not in drop}
    return OpInfo(f"tgx.{name}", lambda *a, **kw: getattr(tgx, name)(*a, **strip(kw)),
                  torch_op=lambda *a, **kw: getattr(torch, name)(*a, **strip(kw)),
                  ref=lambda *a, **kw: entry.ref(*a, **strip(kw), **fixed),
                  samples=entry.samples, dtypes=entry.dtypes)


add(*(_top_level(name, base) for name, base in (
    ("conv1d", "F.conv1d"), ("conv2d", "F.conv2d"), ("conv3d", "F.conv3d"),
    ("conv_transpose1d", "F.conv_transpose1d"), ("conv_transpose2d", "F.conv_transpose2d"),
    ("conv_transpose3d", "F.conv_transpose3d"), ("max_pool1d", "F.max_pool1d"),
    ("max_pool2d", "F.max_pool2d"), ("max_pool3d", "F.max_pool3d"),
    ("max_pool1d_with_indices", "F.max_pool1d[return_indices]"),
    ("avg_pool1d", "F.avg_pool1d"), ("adaptive_avg_pool1d", "F.adaptive_avg_pool1d"),
    ("pixel_shuffle", "F.pixel_shuffle"), ("pixel_unshuffle", "F.pixel_unshuffle"),
    ("channel_shuffle", "F.channel_shuffle"))),
    _top_level("adaptive_max_pool1d", "F.adaptive_max_pool1d", drop=("return_indices",),
               return_indices=True))


def _unfold_kw(draw, s):
    d = draw(st.integers(-len(s), len(s) - 1)) if s else 0
    n = s[d] if s else 1
    return {"dimension": d, "size": draw(st.integers(0, n)), "step": draw(st.integers(1, 3))}


def np_tensor_unfold(x, dimension, size, step):
    if x.ndim == 0:                                  # torch: the value itself, `size` times
        return x.reshape(1)[:size]
    win = np.lib.stride_tricks.sliding_window_view(x, size, axis=dimension)
    d = dimension % x.ndim
    return win[(slice(None),) * d + (slice(None, None, step),)]


add(OpInfo("Tensor.unfold", lambda x, **kw: x.unfold(**kw), ref=np_tensor_unfold,
           samples=family(lambda d, dt: (lambda s: Sample((array(d, s, dt),), _unfold_kw(d, s)))(
               tuple(d(st.integers(0, 4)) for _ in range(d(st.integers(0, 3))))))))


# ------------------------------------------------------------------------------------------
# affine_grid and grid_sample
# ------------------------------------------------------------------------------------------

def np_affine_grid(theta, size, align_corners=False):
    """Each output cell's normalised coordinates (x along the last dim) through theta."""
    n = len(size) - 2

    def coord(i, L):
        if L == 1:
            return 0.0
        return -1 + 2 * i / (L - 1) if align_corners else (2 * i + 1) / L - 1
    out = np.zeros((size[0],) + tuple(size[2:]) + (n,))
    for pos in np.ndindex(*size[2:]):
        v = np.array([coord(pos[n - 1 - k], size[2 + n - 1 - k]) for k in range(n)] + [1.0])
        out[(slice(None),) + pos] = theta @ v
    return out


def _fold(x, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = abs(x - lo)
    k = math.floor(d / span)
    extra = d - k * span
    return extra + lo if k % 2 == 0 else span - extra + lo


def _inside(x, L, padding_mode, align_corners):
    if padding_mode == "border":
        return min(max(x, 0.0), L - 1.0)
    if padding_mode == "reflection":
        x = _fold(x, 0, 2 * (L - 1)) if align_corners else _fold(x, -1, 2 * L - 1)
        return min(max(x, 0.0), L - 1.0)
    return x


def np_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Every output position read from the input by the mode's weights, one at a time."""
    N, C, *L = x.shape
    n = len(L)
    out = np.zeros((N, C) + grid.shape[1:-1])
    for b in range(N):
        for pos in np.ndindex(*grid.shape[1:-1]):
            g = grid[(b,) + pos]
            # the input coordinate along each spatial dim (dim i reads grid[..., n - 1 - i])
            raw = [((g[n - 1 - i] + 1) / 2 * (L[i] - 1)) if align_corners else
                   (((g[n - 1 - i] + 1) * L[i] - 1) / 2) for i in range(n)]

            def at(cells, b=b):
                if all(0 <= c < Li for c, Li in zip(cells, L, strict=True)):
                    return x[(b, slice(None)) + tuple(cells)]
                return np.zeros(C)
            if mode == "bicubic":
                lo = [math.floor(r) for r in raw]
                t = [r - f for r, f in zip(raw, lo, strict=True)]
                w = [[_keys(d, -0.75) for d in (1 + ti, ti, 1 - ti, 2 - ti)] for ti in t]
                val = 0
                for j, i in itertools.product(range(4), range(4)):
                    cells = [int(_inside(float(lo[0] + j - 1), L[0], padding_mode,
                                         align_corners)),
                             int(_inside(float(lo[1] + i - 1), L[1], padding_mode,
                                         align_corners))]
                    val = val + w[0][j] * w[1][i] * at(cells)
            else:
                c = [_inside(r, Li, padding_mode, align_corners) for r, Li in
                     zip(raw, L, strict=True)]
                if mode == "nearest":
                    val = at([int(np.rint(ci)) for ci in c])
                else:
                    lo = [math.floor(ci) for ci in c]
                    val = 0
                    for corner in itertools.product((0, 1), repeat=n):
                        w = math.prod((ci - f) if k else (1 - (ci - f))
                                      for ci, f, k in zip(c, lo, corner, strict=True))
                        val = val + w * at([f + k for f, k in zip(lo, corner, strict=True)])
            out[(b, slice(None)) + pos] = val
    return out


def _affine_family(draw, dt):
    n = draw(st.sampled_from((2, 3)))
    N = draw(st.integers(1, 2))
    size = (N, 2) + tuple(draw(st.integers(1, 4)) for _ in range(n))
    return Sample((array(draw, (N, n, n + 1), dt),),
                  {"size": size, "align_corners": draw(st.booleans())})


def _grid_family(n, mode):
    def build(draw, dt):
        N = draw(st.integers(1, 2))
        x = array(draw, (N, draw(st.integers(1, 2))) + tuple(draw(st.integers(1, 4))
                                                             for _ in range(n)), dt)
        # positions inside and outside [-1, 1], kept off the cell boundaries where the
        # bilinear weights (and reflection's folds) have a kink
        g = array(draw, (N,) + tuple(draw(st.integers(1, 3)) for _ in range(n)) + (n,), dt,
                  low=-1.4, high=1.4)
        return Sample((x, g), {"mode": mode, "align_corners": draw(st.booleans()),
                               "padding_mode": draw(st.sampled_from(("zeros", "border",
                                                                     "reflection")))})
    return family(build)


def _kinked(sample):
    """Positions on a cell boundary (the bilinear and reflection kinks, nearest's jumps)."""
    x, g = sample.inputs
    L = x.shape[2:]
    n = len(L)
    ac = sample.kwargs["align_corners"]
    for i in range(n):
        c = g[..., n - 1 - i]
        raw = (c + 1) / 2 * (L[i] - 1) if ac else ((c + 1) * L[i] - 1) / 2
        if np.any(np.abs(raw * 2 - np.round(raw * 2)) < 1e-3):
            return True
    return False


add(OpInfo("F.affine_grid", _f("affine_grid"), torch_op=_t("affine_grid"), ref=np_affine_grid,
           samples=family(_affine_family)),
    *(OpInfo(f"F.grid_sample[{mode}{n}d]", _f("grid_sample"), torch_op=_t("grid_sample"),
             ref=np_grid_sample, samples=_grid_family(n, mode), api=("F.grid_sample",),
             kink=_kinked)
      for mode, n in (("bilinear", 2), ("bilinear", 3), ("nearest", 2), ("bicubic", 2))))
