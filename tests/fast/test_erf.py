"""Tests for tinygradx.fast._erf: accuracy vs math.erf, dtypes, special values, symmetry, order."""

import math

import numpy as np
import pytest

from tinygradx.fast._erf import erf, erf_grad

_vec_erf = np.vectorize(math.erf, otypes=[np.float64])


def _float64_points():
    """Dense grid over [-30, 30], random points, every range boundary and its neighbours."""
    rng = np.random.default_rng(1234)
    bounds = np.array([0.84375, 1.25, 1 / 0.35, 6.0, 2.0**-28])
    edges = np.concatenate([bounds, np.nextafter(bounds, 0), np.nextafter(bounds, 10)])
    return np.concatenate([
        np.linspace(-30.0, 30.0, 120_001),
        rng.uniform(-7.0, 7.0, 40_000),
        rng.standard_normal(20_000),
        # log-uniform magnitudes down to tiny (normal) numbers: relative accuracy near 0
        np.exp(rng.uniform(-700.0, 3.5, 20_000)) * rng.choice([-1.0, 1.0], 20_000),
        edges, -edges,
    ])


def test_float64_accuracy():
    x = _float64_points()
    y = erf(x)
    ref = _vec_erf(x)
    abs_err = np.abs(y - ref)
    assert abs_err.max() <= 2e-16
    rel_err = abs_err[ref != 0] / np.abs(ref[ref != 0])
    assert rel_err.max() <= 1e-15


def test_float32_accuracy_close_to_correctly_rounded():
    # Every 1499th float32 in [2^-40, 4.5] (negatives: see test_odd_symmetry); this exercises
    # tiny inputs and the clamp at 4.
    lo, hi = np.float32(2.0**-40).view(np.int32), np.float32(4.5).view(np.int32)
    x = np.arange(lo, hi, 1499, dtype=np.int32).view(np.float32)
    x = np.concatenate([x, np.float32([3.9, 4.0, 5.0, 20.0, 1e30])])
    y = erf(x)
    ref = _vec_erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err_ulp = np.abs(y.astype(np.float64) - ref) / ulp
    assert err_ulp.max() <= 0.6
    assert np.abs(y.astype(np.float64) - ref).max() <= 1e-7
    # "close to correctly rounded": the vast majority round exactly like the true value
    assert np.mean(y == ref.astype(np.float32)) > 0.95


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_and_shape_preserved(dtype):
    x = np.linspace(-3, 3, 24, dtype=dtype).reshape(2, 3, 4)
    for f in (erf, erf_grad):
        y = f(x)
        assert isinstance(y, np.ndarray) and y.dtype == dtype and y.shape == x.shape
    # non-contiguous views work and give the same values
    y = erf(x[:, ::2, ::-1])
    np.testing.assert_array_equal(y, erf(np.ascontiguousarray(x[:, ::2, ::-1])))


def test_zero_dim_and_empty_and_ints():
    for dtype in (np.float32, np.float64):
        y = erf(np.array(0.5, dtype=dtype))
        assert isinstance(y, np.ndarray) and y.shape == () and y.dtype == dtype
        assert abs(float(y) - math.erf(0.5)) < 1e-7
        g = erf_grad(np.array(0.5, dtype=dtype))
        assert isinstance(g, np.ndarray) and g.shape == () and g.dtype == dtype
    assert erf(np.zeros((0, 3))).shape == (0, 3)
    y = erf(np.array([0, 1, -2]))
    assert y.dtype == np.float64 and y[1] == math.erf(1.0)


def test_large_array_spans_chunks():
    # Larger than one internal chunk, with a length that leaves a ragged last chunk.
    rng = np.random.default_rng(7)
    x = rng.uniform(-7, 7, 200_003)
    np.testing.assert_allclose(erf(x), _vec_erf(x), rtol=0, atol=2e-16)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(erf(x32), _vec_erf(x32.astype(np.float64)), rtol=0, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_special_values(dtype):
    with np.errstate(over="ignore"):  # 1e30 is inf in float16, which is fine here
        x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30]).astype(dtype)
    with np.errstate(all="raise"):  # no spurious overflow/invalid warnings either
        y = erf(x)
    np.testing.assert_array_equal(y[[0, 1, 5, 6]], np.array([1, -1, 1, -1], dtype=dtype))
    assert np.isnan(y[2])
    assert y[3] == 0 and not np.signbit(y[3])
    assert y[4] == 0 and np.signbit(y[4])  # -0.0 keeps its sign
    assert np.all(np.abs(erf(np.linspace(-50, 50, 1001).astype(dtype))) <= 1)


def test_subnormal_inputs_float64():
    x = np.array([5e-324, 1e-310, -2.2e-308])
    y = erf(x)
    ref = _vec_erf(x)
    # subnormal outputs may be off by one unit of the subnormal spacing (5e-324)
    assert np.all(np.abs(y - ref) <= 5e-324)
    assert np.all(np.sign(y) == np.sign(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_odd_symmetry(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(10_000) * 3, np.linspace(0, 8, 4001)]).astype(dtype)
    np.testing.assert_array_equal(erf(-x), -erf(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_monotone_on_grid(dtype):
    x = np.linspace(-8, 8, 400_001).astype(dtype)
    y = erf(x)
    assert np.all(np.diff(y) >= 0)
    # and strictly increasing where erf itself still changes by more than rounding
    fine = np.linspace(0, 1.5, 10_001).astype(dtype)
    assert np.all(np.diff(erf(fine)) > 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_grad(dtype):
    x = np.linspace(-6, 6, 1201).astype(dtype)
    g = erf_grad(x)
    assert g.dtype == dtype
    x64 = x.astype(np.float64)
    ref = 2 / math.sqrt(math.pi) * np.exp(-x64**2)
    # Rounding x^2 to the working precision is a relative error eps*x^2 in exp(-x^2), so the
    # achievable relative accuracy degrades with |x|.
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(g - ref) <= 4 * eps * (1 + x64**2) * ref)
    # matches a central difference of erf itself (checked in float64)
    if dtype == np.float64:
        h = 1e-6
        fd = (erf(x + h) - erf(x - h)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=0, atol=1e-9)
