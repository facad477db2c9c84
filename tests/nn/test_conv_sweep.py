"""Sweeps of the convolution, pooling and resampling families against torch over a grid of
arguments (the classes the op-info table samples at random, here walked systematically and
deterministically): every mode of interpolate on every dtype torch takes, the pools' geometry
(kernel, stride, padding, dilation, ceil_mode, NaN and ties), the transposed convolutions'
arguments. Values and gradients equal to torch's, or both refusing.
"""
import itertools
import warnings

import numpy as np
import pytest

import tinygradx as tgx
from oracle import both, requires_torch, torch

pytestmark = requires_torch

LINEAR = ("linear", "bilinear", "bicubic", "trilinear")


def _grads(out, inputs):
    y = out[0] if isinstance(out, tuple) else out
    if not getattr(y, "requires_grad", False):
        return out
    w = np.arange(y.numel()).reshape(tuple(y.shape)) % 5 - 2.0
    lib = tgx if isinstance(y, tgx.Tensor) else torch
    (y * lib.tensor(w).to(y.dtype)).sum().backward()
    return out, [x.grad for x in inputs if x.requires_grad]


def _same(f_torch, f_ours, arrays, atol):
    def run(lib, f):
        xs = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _grads(f(*xs), xs)
    return both(lambda: run(tgx, f_ours), lambda: run(torch, f_torch), atol=atol, rtol=atol)


def _interp_cases():
    rng = np.random.default_rng(0)
    dims = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,),
            "bilinear": (2,), "bicubic": (2,), "trilinear": (3,)}
    cases = []
    for mode, ns in dims.items():
        for n in ns:
            for k in range(6):
                L = tuple(int(v) for v in rng.integers(1, 7, n))
                kw = {"mode": mode}
                if k % 2:
                    kw["size"] = tuple(int(v) for v in rng.integers(1, 10, n))
                else:
                    kw["scale_factor"] = float(rng.choice([0.5, 0.75, 1.5, 2.0, 3.0]))
                    kw["recompute_scale_factor"] = k % 4 == 0
                if mode in LINEAR:
                    kw["align_corners"] = k % 3 == 0
                if mode in ("bilinear", "bicubic") and k % 3 == 1:
                    kw["antialias"] = True
                cases.append((L, kw))
    return cases


def _kept_or_doubled(L, kw):
    """torch's own departures (tests/opinfo_conv.py's _TORCH_BUGS): a non-unit scale keeping a
    size (nearest, bicubic: its backward is not its forward's), or doubling it (1-d and 3-d
    nearest), and a separable pass to a width of 1 (antialias, uint8)."""
    sf, n = kw.get("scale_factor"), len(L)
    if sf and not kw.get("recompute_scale_factor"):
        out = [int(np.floor(x * sf)) for x in L]
        if kw["mode"] in ("nearest", "nearest-exact", "bicubic") and any(
                o == x and sf != 1 for o, x in zip(out, L, strict=True)):
            return True
        if kw["mode"] == "nearest" and n != 2 and any(o == 2 * x and sf != 2
                                                      for o, x in zip(out, L, strict=True)):
            return True
    return False


@pytest.mark.parametrize("dtype", ["float64", "float32", "uint8"])
def test_interpolate_sweep(dtype):
    rng = np.random.default_rng(1)
    checked = 0
    for L, kw in _interp_cases():
        if dtype == "uint8":
            x = rng.integers(0, 256, (2, int(rng.integers(1, 7))) + L).astype(np.uint8)
        else:
            x = rng.standard_normal((2, 2) + L).astype(dtype)
        n = len(L)
        out = kw.get("size") or tuple(int(np.floor(v * kw["scale_factor"])) for v in L)
        if (kw.get("antialias") or dtype == "uint8") and n == 2 and out[1] == 1 and \
                out[0] != L[0]:
            continue
        grad = dtype != "uint8" and not _kept_or_doubled(L, kw)
        if not grad and dtype != "uint8":
            continue
        _same(lambda x, kw=kw: torch.nn.functional.interpolate(x, **kw),
              lambda x, kw=kw: tgx.functional.interpolate(x, **kw), [x],
              atol={"float64": 1e-10, "float32": 2e-5, "uint8": 0}[dtype])
        checked += 1
    assert checked > 60


def test_pool_sweep():
    rng = np.random.default_rng(2)
    grid = list(itertools.product((1, 2, 3), (1, 2, 3), (None, 1, 2), (0, 1), (1, 2),
                                  (False, True)))
    for i in rng.choice(len(grid), 80, replace=False):     # 80 of the 216 geometries
        n, k, s, p, d, ceil = grid[i]
        if 2 * p > k:
            continue
        L = tuple(int(v) for v in rng.integers(d * (k - 1) + 1, d * (k - 1) + 4, n))
        x = np.round(rng.standard_normal((2, 2) + L) * 2) / 2     # ties
        x.flat[rng.integers(0, x.size)] = np.nan
        for name, args in ((f"max_pool{n}d", (k, s, p, d, ceil, True)),
                           (f"avg_pool{n}d", (k, s, p, ceil, bool(d - 1)))):
            _same(lambda x, name=name, args=args: getattr(torch.nn.functional, name)(x, *args),
                  lambda x, name=name, args=args: getattr(tgx.functional, name)(x, *args), [x],
                  1e-10)


def test_conv_transpose_sweep():
    rng = np.random.default_rng(3)
    grid = list(itertools.product((1, 2, 3), (1, 2, 3), (0, 1, 2), (0, 1, 2), (1, 2), (1, 2)))
    for i in rng.choice(len(grid), 60, replace=False):     # 60 of the 324 argument sets
        n, s, p, op, g, d = grid[i]
        k = tuple(int(v) for v in rng.integers(1, 4, n))
        L = tuple(int(v) for v in rng.integers(1, 4, n))
        x = rng.standard_normal((2, 2 * g) + L)
        w = rng.standard_normal((2 * g, 2) + k)
        b = rng.standard_normal(2 * g)
        name = f"conv_transpose{n}d"
        args = (s, p, op, g, d)
        _same(lambda x, w, b, f=name, a=args: getattr(torch.nn.functional, f)(x, w, b, *a),
              lambda x, w, b, f=name, a=args: getattr(tgx.functional, f)(x, w, b, *a),
              [x, w, b], 1e-9)
