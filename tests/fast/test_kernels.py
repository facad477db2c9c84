"""tinygradx.fast.kernels: each compiled kernel against the numpy path it replaces, in one process
(LayerNorm, softmax and its backward, the tanh GELU's backward, Adam).

The kernels run only when numba is installed (CI's main run has it; the lowest and newest runs
do not, so the numpy path is the one the rest of the suite checks there). Each test computes
the same op twice, kernels on and off, over hypothesis shapes (one row, no rows, a size-0 row,
non-contiguous inputs). In float64 the two agree to rounding. In float32 both are held to the
float64 result instead: the kernels sum in float64 and numpy in float32, so where a formula
cancels (softmax's backward, dA - rowsum(dA A)) the kernel is the closer of the two.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.fast import kernels
from tinygradx import optim

pytestmark = pytest.mark.skipif(not kernels.ENABLED, reason="numba is not installed, or "
                                "TINYGRADX_KERNELS=0: the numpy path is the only one")
TOL = {np.float32: (2e-3, 1e-4), np.float64: (1e-10, 1e-11)}       # rtol, atol per unit


def both(fn, dtype):
    """fn(dtype) with the kernels on and off; each checked against the other (float64) or
    against the float64 result (float32)."""
    on = fn(dtype)
    old = kernels.set_enabled(False)
    try:
        off = fn(dtype)
    finally:
        kernels.set_enabled(old)
    ref = on if dtype == np.float64 else fn(np.float64)
    for x, y, r in zip(on, off, ref, strict=True):
        assert x.dtype == y.dtype == dtype and x.shape == y.shape == r.shape
        rtol, atol = TOL[dtype]
        atol *= max(1.0, float(np.abs(r).max(initial=0.0)))
        np.testing.assert_allclose(x, r, rtol=rtol, atol=atol)
        np.testing.assert_allclose(y, r, rtol=rtol, atol=atol)


shapes = st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(1, 70))
dtypes = st.sampled_from([np.float32, np.float64])


def _array(shape, dtype, seed, transpose):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype) * 3 + 1
    if transpose and len(shape) >= 2:                 # the same values, a strided layout
        a = np.ascontiguousarray(np.swapaxes(a, 0, 1)).swapaxes(0, 1)
    return a


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=dtypes, affine=st.sampled_from([(True, True), (True, False),
                                                           (False, False)]),
       transpose=st.booleans(), seed=st.integers(0, 99))
def test_layer_norm_forward_and_backward(shape, dtype, affine, transpose, seed):
    n = shape[-1]

    def run(dt):
        x = tgx.Tensor(_array(shape, dt, seed, transpose), requires_grad=True)
        w = tgx.Tensor(_array((n,), dt, seed + 1, False), requires_grad=True)
        b = tgx.Tensor(_array((n,), dt, seed + 2, False), requires_grad=True)
        w, b = (w if affine[0] else None), (b if affine[1] else None)
        y = F.layer_norm(x, (n,), w, b)
        (y * tgx.Tensor(np.cos(np.arange(y.numel(), dtype=dt)).reshape(y.shape))).sum() \
            .backward()
        with tgx.no_grad():                           # no saved xhat: the same y
            y2 = F.layer_norm(x, (n,), w, b)
        return [y.detach().numpy(),
                y2.detach().numpy()] + [t.grad.detach().numpy() for t in (x, w, b) if t is not None]

    both(run, dtype)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, dtype=dtypes, transpose=st.booleans(), seed=st.integers(0, 99))
def test_gelu_tanh_and_softmax_backward(shape, dtype, transpose, seed):
    def run(dt):
        x = tgx.Tensor(_array(shape, dt, seed, transpose), requires_grad=True)
        y = F.gelu(x, approximate="tanh") + F.softmax(x * 0.5, dim=-1)
        y.backward(tgx.Tensor(_array(shape, dt, seed + 3, transpose)))
        return [y.detach().numpy(), x.grad.detach().numpy()]

    both(run, dtype)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, dtype=dtypes, transpose=st.booleans(), seed=st.integers(0, 99))
def test_gelu_erf(shape, dtype, transpose, seed):
    """The exact GELU's compiled loop (float32) gives the numpy path's values and gradient."""
    def run(dt):
        x = tgx.Tensor(_array(shape, dt, seed, transpose) * 3, requires_grad=True)
        y = F.gelu(x)
        y.backward(tgx.Tensor(_array(shape, dt, seed + 3, transpose)))
        return [y.detach().numpy(), x.grad.detach().numpy()]

    both(run, dtype)


def test_gelu_erf_special_values():
    """NaN, +-inf, signed zeros and the clamp at |x/sqrt 2| = 4: bit for bit the numpy path."""
    from tinygradx.ops.fused import gelu_forward
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5.0, -5.0, 5.7, 6.0, 1e-30], np.float32)
    cdf, y = np.empty_like(x), np.empty_like(x)
    if not kernels.ready():
        pytest.skip("compiled kernels not available")
    kernels.gelu_erf(x, cdf, y)
    old = kernels.set_enabled(False)
    try:
        with np.errstate(invalid="ignore"):
            want_y, want_cdf = gelu_forward(x, "none")
    finally:
        kernels.set_enabled(old)
    np.testing.assert_array_equal(cdf, want_cdf)
    np.testing.assert_array_equal(y, want_y)
    assert np.signbit(y[4]) and cdf[1] == 1 and cdf[2] == 0


@settings(max_examples=20, deadline=None)
@given(b=st.integers(1, 3), h=st.integers(1, 3), n=st.integers(1, 9), m=st.integers(1, 9),
       d=st.integers(1, 8), dtype=dtypes, seed=st.integers(0, 99))
def test_attention_backward(b, h, n, m, d, dtype, seed):
    def run(dt):
        q, k, v = (tgx.Tensor(_array((b, h, s, d), dt, seed + i, False), requires_grad=True)
                   for i, s in enumerate((n, m, m)))
        z = F.attention(q, k, v)
        (z * z).sum().backward()
        return [z.detach().numpy(), q.grad.detach().numpy(), k.grad.detach().numpy(),
                v.grad.detach().numpy()]

    both(run, dtype)


@pytest.mark.parametrize("opt", ["Adam", "AdamW", "AdamW-no-decay"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_steps(opt, dtype):
    def run(dt):
        rng = np.random.default_rng(0)
        ps = [tgx.nn.Parameter(rng.standard_normal(s).astype(dt))
              for s in [(5,), (3, 4), (300, 300), (0,), (800, 700)]]
        ps.append(tgx.nn.Parameter(np.asfortranarray(rng.standard_normal((6, 7)).astype(dt))))
        # (800, 700): split over both cores; the Fortran-ordered one (moments alike) takes the
        # numpy path: flat views of it would be copies, which the kernel would update instead
        cls = optim.Adam if opt == "Adam" else optim.AdamW
        o = cls(ps, lr=1e-2, weight_decay=0.0 if opt.endswith("decay") else 0.1)
        for step in range(3):
            for p in ps:
                p.grad = tgx.Tensor(np.sin(p.detach().numpy() * (step + 1)))
            o.step()
        return [p.detach().numpy() for p in ps]

    both(run, dtype)


def test_nan_and_inf_propagate_as_in_numpy():
    x0 = np.array([[1.0, np.inf, 2.0], [np.nan, 0.0, 1.0], [1.0, 2.0, 4.0]], np.float32)

    def run():
        x = tgx.Tensor(x0, requires_grad=True)
        y = F.layer_norm(x, (3,)) + F.gelu(x, approximate="tanh")
        y.backward(tgx.Tensor(np.ones_like(x0)))
        return [y.detach().numpy(), x.grad.detach().numpy()]

    on = run()
    old = kernels.set_enabled(False)
    try:
        with np.errstate(invalid="ignore"):
            off = run()
    finally:
        kernels.set_enabled(old)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a[2], b[2], rtol=1e-5)      # the finite row


def test_softmax_of_masked_and_infinite_rows_is_the_same_both_ways():
    # a fully masked row gives zeros (tinygradx's rule); a NaN or +inf makes the row NaN (torch)
    x0 = np.array([[1, np.nan, 2], [1, np.inf, -np.inf], [-np.inf] * 3, [1, 2, np.inf],
                   [0.5, -1, 3]], np.float32)
    on = F.softmax(tgx.Tensor(x0), dim=-1).numpy()
    old = kernels.set_enabled(False)
    try:
        with np.errstate(invalid="ignore"):
            off = F.softmax(tgx.Tensor(x0), dim=-1).numpy()
    finally:
        kernels.set_enabled(old)
    np.testing.assert_array_equal(np.isnan(on), np.isnan(off))
    np.testing.assert_array_equal(np.isnan(on).all(axis=1), [True, True, False, True, False])
    np.testing.assert_array_equal(on[2], 0)
    np.testing.assert_allclose(on[4], off[4], rtol=1e-6)


def test_a_gpt_trains_and_generates_the_same_with_and_without_kernels():
    from tinygradx.models.nets.gpt import GPT, GPTConfig

    def run():
        tgx.manual_seed(0)
        model = GPT(GPTConfig(block_size=32, vocab_size=20, n_layer=2, n_head=2, n_embd=32))
        opt = model.configure_optimizers(0.1, 1e-2)
        ids = np.random.default_rng(0).integers(0, 20, (4, 17))
        losses = []
        for _ in range(5):
            _, loss = model(ids[:, :-1], ids[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        return np.array(losses), model.generate(ids[:, :3], 12, temperature=0).numpy()

    l_on, t_on = run()
    old = kernels.set_enabled(False)
    try:
        l_off, t_off = run()
    finally:
        kernels.set_enabled(old)
    np.testing.assert_allclose(l_on, l_off, rtol=1e-5)
    np.testing.assert_array_equal(t_on, t_off)


def test_switched_off_by_the_environment():
    code = "from tinygradx.fast import kernels; print(kernels.ENABLED)"
    env = dict(os.environ, TINYGRADX_KERNELS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"
