"""tinygradx.fast.pool: the thread pool that runs numpy's OpenBLAS jobs and tinygradx's small
matrix products, against numpy itself.

Each product the pool computes is one cblas_?gemm call per matrix, as numpy's own loop makes
them, so the results are compared for equality, not closeness: a stack over every operand
layout BLAS takes (plain, transposed, strided views, broadcast batch dims, 1 to 4 of them),
the pair of a layer's two weight products (each as numpy on one thread), and OpenBLAS's own
threaded GEMM run on the pool.
Then what must never happen: a hang when OpenBLAS is called from two threads at once or
inside a pool task, or in a forked child; a training step whose gradients change when the
pool is on; a call the pool cannot take that its declaration lets through (the dispatcher,
tinygradx/fast/dispatch.py, runs the pool's calls only for what they declare: the helpers
below ask it the same way, and give None where the reference would run instead).

The pool runs on Linux with numba (the kernels' build compiles it) and a numpy whose OpenBLAS
has the threads callback (numpy's wheels); elsewhere these tests skip with the reason.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tinygradx as tgx
from tinygradx.fast import dispatch, openblas, pool

# the suite runs OpenBLAS on one thread (conftest.py), where the pool stays off; these tests
# give it two for their module, and their child processes two as well
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="2")


@pytest.fixture(autouse=True, scope="module")
def two_blas_threads():
    blas = openblas.find() if sys.platform.startswith("linux") else None
    old = blas.get_threads() if blas is not None else None
    if blas is not None:
        blas.set_threads(2)
    pool.set_enabled(True)                  # (an earlier test may have found one thread)
    try:
        if not pool.start():
            pytest.skip(f"the pool does not run here: {pool.status()}")
        yield
    finally:
        pool.set_enabled(False)             # OpenBLAS's own threads again, and the pool off
        if old is not None:                 # for the rest of the suite (as with one thread)
            blas.set_threads(old)


def _version(kernel, name="pool"):
    return next(v for v in dispatch.VERSIONS[kernel] if v.name == name)


def _takes(kernel, *args):
    """Whether the pool's version of `kernel` runs for these arguments (its declaration)."""
    return dispatch.why_not(_version(kernel), args) is None


def stack(a, b, out=None):
    """The pool's stack where its declaration takes a @ b, else None (numpy's matmul runs)."""
    return pool.matmul(a, b, out) if _takes("matmul", a, b, out) else None


def pair(a1, b1, a2, b2):
    return pool.pair(a1, b1, a2, b2) if pool.running() and pool.pair_fits(a1, b1, a2, b2) \
        else None


def attention(q, k, v, mask, scale, out, draw=None):
    if draw is None:
        if not _takes("attention_weights", q, k, mask, scale, v, out):
            return None
        return pool.attention(q, k, v, mask, scale, out)
    if not _takes("attention_dropout", q, k, v, mask, scale, out, draw):
        return None
    return pool.attention(q, k, v, mask, scale, out, draw)


def attention_backward(g, qs, k, v, a, scale, gq, gk, gv, keep=None):
    if not _takes("attention_grads", g, qs, k, v, a, keep, scale, gq, gk, gv):
        return None
    return pool.attention_backward(g, qs, k, v, a, scale, gq, gk, gv, keep)


def gelu_tanh(x, t, y):
    if not (_takes("gelu_forward", x, "tanh") and x.shape == t.shape == y.shape
            and t.flags.c_contiguous and y.flags.c_contiguous and t.dtype == y.dtype == x.dtype):
        return None
    pool.gelu_tanh(x, t, y)
    return True


def gelu_tanh_grad(x, t, g, d):
    if not (_takes("gelu_forward", x, "tanh") and x.shape == t.shape == g.shape == d.shape
            and all(a.flags.c_contiguous and a.dtype == x.dtype for a in (t, g, d))):
        return None
    pool.gelu_tanh_grad(x, t, g, d)
    return True


def softmax(x2, out2):
    if not (x2.ndim == 2 and _takes("softmax_rows", x2, out2, -1)):
        return None
    pool.softmax(x2, out2)
    return True


def softmax_grad(g2, s2, out2):
    if not (s2.ndim == 2 and _takes("softmax_grad_rows", g2, s2, out2, -1)):
        return None
    pool.softmax_grad(g2, s2, out2)
    return True


def _on_and_off(run):
    """run() with the pool on (it must take at least one task), then off; both results."""
    before = pool.counters()[0]
    on = run()
    assert pool.counters()[0] > before
    pool.set_enabled(False)
    try:
        off = run()
    finally:
        pool.set_enabled(True)
        pool.start()
    return on, off


def _operand(rng, batch, rows, cols, dtype, layout):
    """(..., rows, cols) as BLAS may meet it: C-ordered, a transposed view, or a view with a
    row stride wider than the row (a slice of a wider array, as the heads of a packed QKV)."""
    if layout == "T":
        return np.swapaxes(rng.standard_normal(batch + (cols, rows)).astype(dtype), -1, -2)
    if layout == "wide":
        return rng.standard_normal(batch + (rows, cols + 3)).astype(dtype)[..., 1:cols + 1]
    return rng.standard_normal(batch + (rows, cols)).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(dims=st.integers(1, 4), m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40),
       la=st.sampled_from(["C", "T", "wide"]), lb=st.sampled_from(["C", "T", "wide"]),
       dtype=st.sampled_from([np.float32, np.float64]), broadcast=st.booleans(),
       seed=st.integers(0, 2**16))
def test_a_stack_equals_numpys_matmul(dims, m, k, n, la, lb, dtype, broadcast, seed):
    rng = np.random.default_rng(seed)
    batch = tuple(rng.integers(1, 5, dims).tolist())
    batch = (batch[0] * 16,) + batch[1:]                 # enough products to be split
    a = _operand(rng, batch, m, k, dtype, la)
    b = _operand(rng, (1,) + batch[1:] if broadcast else batch, k, n, dtype, lb)
    got = stack(a, b)
    want = np.matmul(a, b)
    if got is None:          # too few output elements to split, or a vector (numpy: gemv)
        assert np.prod(batch) * m * n < pool.MIN_SPLIT or m == 1 or n == 1
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_stack_into_a_strided_out_and_counted_as_a_task():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 4, 64, 32)).astype(np.float32)
    b = rng.standard_normal((12, 4, 32, 64)).astype(np.float32)
    packed = np.zeros((12, 64, 3, 4, 64), np.float32)    # the heads of a packed gradient
    out = packed[:, :, 1].transpose(0, 2, 1, 3)          # (12, 4, 64, 64), rows 3*4*64 apart
    before = pool.counters()[0]
    assert stack(a, b, out) is out
    np.testing.assert_array_equal(out, a @ b)
    assert packed[:, :, 0].max() == packed[:, :, 2].max() == 0      # nothing else written
    assert pool.counters()[0] > before


def test_a_stack_follows_openblas_thread_count_lowered_at_run_time():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((48, 64, 32)).astype(np.float32)
    b = rng.standard_normal((48, 32, 64)).astype(np.float32)
    blas = openblas.find()
    blas.set_threads(1)                     # as threadpoolctl's limits do
    try:
        before = pool.counters()[0]
        np.testing.assert_array_equal(stack(a, b), np.matmul(a, b))
        assert pool.counters()[0] == before  # one thread: not handed to the pool
    finally:
        blas.set_threads(2)


def test_parked_threads_wake_for_the_next_task():
    # parallel.rows parks the pool's idle threads before its Python threads run; the next task
    # must wake them (the futex), not wait on a thread that no longer polls
    rng = np.random.default_rng(5)
    a = rng.standard_normal((48, 64, 32)).astype(np.float32)
    b = rng.standard_normal((48, 32, 64)).astype(np.float32)
    for _ in range(50):
        pool.park()
        np.testing.assert_array_equal(stack(a, b), np.matmul(a, b))


def test_a_matrix_times_its_own_transpose_is_left_to_numpy():
    # numpy multiplies X X^T with syrk, which rounds otherwise than GEMM: not the pool's
    x = np.random.default_rng(7).standard_normal((48, 64, 32)).astype(np.float32)
    assert stack(x, x.swapaxes(-1, -2)) is None
    assert stack(x, x.copy().swapaxes(-1, -2)) is not None


@pytest.mark.parametrize("a, b, why", [
    (np.ones((8, 64, 64), np.int64), np.ones((8, 64, 64), np.int64), "integers"),
    (np.ones((8, 64, 64), np.float32), np.ones((8, 64, 64)), "two dtypes"),
    (np.ones((4, 128, 64), np.float32), np.ones((4, 64, 128), np.float32), "OpenBLAS threads it"),
    (np.ones((2, 2, 2, 2, 2, 64, 64), np.float32), np.ones((64, 64), np.float32), "2-D operand"),
    (np.ones((2,) * 5 + (64, 64), np.float32), np.ones((2,) * 5 + (64, 64), np.float32),
     "five batch dims"),
    (np.ones((64, 64, 64), np.float32)[:, :, ::2], np.ones((64, 32, 64), np.float32),
     "no unit stride"),
    (np.ones((8, 64, 0), np.float32), np.ones((8, 0, 64), np.float32), "k = 0"),
])
def test_what_a_stack_does_not_take_is_a_clean_none(a, b, why):
    assert stack(a, b) is None, why


def test_a_pair_equals_the_two_products_on_one_thread_each():
    # each product of a pair is OpenBLAS's one-thread GEMM: the numbers of numpy on one
    # thread (a GEMM split over threads may round its edge columns differently)
    rng = np.random.default_rng(1)
    blas = openblas.find()
    for rows, n_in, n_out, dtype in [(768, 128, 384, np.float32), (300, 70, 50, np.float64)]:
        g = rng.standard_normal((rows, n_out)).astype(dtype)
        w = rng.standard_normal((n_out, n_in)).astype(dtype)
        x = rng.standard_normal((rows, n_in)).astype(dtype)
        dx, dw = pair(g, w, g.T, x)
        threads = blas.get_threads()
        blas.set_threads(1)
        try:
            want_dx, want_dw = g @ w, g.T @ x
        finally:
            blas.set_threads(threads)
        np.testing.assert_array_equal(dx, want_dx)
        np.testing.assert_array_equal(dw, want_dw)
        np.testing.assert_allclose(dw, g.T @ x, rtol=1e-12 if dtype == np.float64 else 1e-5)
    small = np.ones((4, 4), np.float32)
    assert pair(small, small, small, small) is None           # below MIN_PAIR


@pytest.mark.parametrize("rows, n, dtype", [(768, 384, np.float32), (768, 65, np.float32),
                                            (300, 50, np.float64), (2, 17, np.float32)])
def test_a_pairs_column_sums_are_numpys_sum_bit_for_bit(rows, n, dtype):
    # db of a linear layer: added down each column in numpy's order, half the columns on each
    # thread, so g.sum(0)'s bits; the products are the pair's own
    rng = np.random.default_rng(4)
    g = (rng.standard_normal((rows, n)) * rng.uniform(1e-3, 1e3, n)).astype(dtype)
    w = rng.standard_normal((n, 300)).astype(dtype)
    x = rng.standard_normal((rows, 300)).astype(dtype)
    dx, dw, db = pool.pair(g, w, g.T, x, column_sums_of=g)
    np.testing.assert_array_equal(db, g.sum(0))
    assert db.dtype == dtype
    np.testing.assert_array_equal(dx, pool.pair(g, w, g.T, x)[0])


def test_a_linear_with_its_bias_in_the_gemm_is_the_references_bits():
    # beta = 1 into rows holding b: OpenBLAS adds its whole sum to b once, the reference adds b
    # to the rounded sum once: the same, while k fits one panel (linear_fits takes k <= 256)
    from tinygradx.core.linalg import linear_forward
    rng = np.random.default_rng(5)
    for rows, k, n, dtype in [(768, 128, 384, np.float32), (768, 256, 65, np.float32),
                              (200, 100, 30, np.float64)]:
        x = rng.standard_normal((rows, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        b = (rng.standard_normal(n) * 100).astype(dtype)
        assert _takes("linear_forward", x, w, b)
        np.testing.assert_array_equal(pool.linear(x, w, b), linear_forward.reference(x, w, b))
    x, w, b = (np.ones(s, np.float32) for s in ((768, 512), (128, 512), (128,)))
    assert not _takes("linear_forward", x, w, b)            # k past one panel: the reference
    assert not _takes("linear_forward", x[:64, :128], w[:, :128].copy(), b)   # few rows


def test_layer_norm_on_the_pool_gives_the_same_bits_when_the_pool_is_taken():
    # dw and db are summed per block of rows and the blocks added in order: the same split
    # whether the blocks run at once or one after the other (OpenBLAS held to one thread)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((768, 128)).astype(np.float32)
    g = rng.standard_normal((768, 128)).astype(np.float32)
    w = rng.standard_normal(128).astype(np.float32)
    at_once = pool.layer_norm_backward(g, x, w, 1e-5)
    blas = openblas.find()
    threads = blas.get_threads()
    blas.set_threads(1)
    try:
        one_by_one = pool.layer_norm_backward(g, x, w, 1e-5)
    finally:
        blas.set_threads(threads)
    for a, b in zip(at_once, one_by_one, strict=True):
        np.testing.assert_array_equal(a, b)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    xhat = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    gh = g64 * w
    dx = (gh - gh.mean(1, keepdims=True) - xhat * (gh * xhat).mean(1, keepdims=True)) / \
        np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(at_once[0], dx, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(at_once[1], (g64 * xhat).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(at_once[2], g64.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("row", ["near_equal", "huge", "sum_overflows", "tiny", "inf", "nan"])
def test_layer_norm_on_the_pool_in_float32_is_the_float64_rows(row):
    # the float32 sums with their correction keep a row of nearly equal values (x - mean tiny
    # against x); a row whose float32 squares overflow takes the float64 path; inf and NaN
    # give a NaN row, as the reference
    from tinygradx.core.rows import layer_norm_rows
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 128))
    x = {"near_equal": 1000 + x * 1e-3, "huge": x * 1e25, "tiny": x * 1e-30,
         "sum_overflows": 3e37 + np.abs(x) * 1e36,
         "inf": np.where(np.arange(128) == 3, np.inf, x), "nan": np.where(x > 2, np.nan, x)}[row]
    x = x.astype(np.float32)
    w, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    got, want = pool.layer_norm(x, w, b, 1e-5), layer_norm_rows.reference(x, w, b, 1e-5)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    if fin.any():
        top = np.abs(want[fin]).max()
        assert np.abs(got[fin] - want[fin]).max() <= 4 * np.spacing(top)


def test_adam_on_the_pool_is_the_compiled_loops_formula():
    from tinygradx.fast import kernels
    rng = np.random.default_rng(7)
    p, g, m = (rng.standard_normal(50_000).astype(np.float32) for _ in range(3))
    v = np.abs(rng.standard_normal(50_000)).astype(np.float32)
    hyper = (0.9, 0.95, 1 - 1e-4, 1e-8, -1e-3)
    a = [t.copy() for t in (p, g, m, v)]
    b = [t.copy() for t in (p, g, m, v)]
    pool.adam(*a, *hyper)
    kernels.adam(*b, *hyper)
    for x, y in zip(a, b, strict=True):       # (the compiler may fuse a multiply-add)
        np.testing.assert_allclose(x, y, rtol=2e-7, atol=1e-9)
    np.testing.assert_array_equal(a[1], g)    # g is read, never written


def _big_gemm(seed=2):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((512, 256)).astype(np.float32)
    b = rng.standard_normal((256, 384)).astype(np.float32)
    return a, b


def test_openblas_threaded_gemm_runs_on_the_pool_with_the_same_numbers():
    a, b = _big_gemm()
    old = pool.set_enabled(False)
    try:
        alone = a @ b                                    # OpenBLAS's own threads
    finally:
        pool.set_enabled(old)
    assert pool.start()
    before = pool.counters()[0]
    on_pool = a @ b
    assert pool.counters()[0] > before                   # OpenBLAS handed its jobs over
    np.testing.assert_array_equal(on_pool, alone)


def test_off_gives_openblas_its_threads_back_and_on_again_restarts():
    a, b = _big_gemm()
    pool.set_enabled(False)
    try:
        assert not pool.running() and "off" in pool.status()
        before = pool.counters()
        a @ b
        assert pool.counters() == before == (0, 0)       # nothing goes through the pool
    finally:
        pool.set_enabled(True)
    assert pool.start() and pool.running()


def _at_once(work, threads, what):
    """work() on `threads` threads at once; each must finish within a minute, without raising
    (a failure inside a thread is re-raised here rather than left to hang the test)."""
    errors = []

    def run():
        try:
            work()
        except BaseException as e:
            errors.append(e)
    running = [threading.Thread(target=run) for _ in range(threads)]
    for t in running:
        t.start()
    for t in running:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in running), f"{what} never finished"
    if errors:
        raise errors[0]


def test_openblas_from_two_threads_at_once_finishes_with_the_right_numbers():
    a, b = _big_gemm()
    want = a @ b

    def work():
        for _ in range(30):
            np.testing.assert_array_equal(a @ b, want)
    _at_once(work, 3, "a GEMM")


def test_a_forked_child_gets_a_pool_of_its_own():
    a, b = _big_gemm()
    a @ b                                                # the parent's workers exist
    code = ("import os, sys, numpy as np\n"
            "import tinygradx\n"
            "from tinygradx.fast import pool\n"
            "assert pool.start(), pool.status()\n"
            "a = np.ones((512, 256), np.float32); b = np.ones((256, 384), np.float32)\n"
            "a @ b\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    ok = bool(((a @ b) == 256).all())\n"
            "    os._exit(0 if ok else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")
    done = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True,
                          text=True, env=ENV)
    assert done.returncode == 0, done.stderr[-2000:]


def _gpt_grads():
    """One GPT step's gradients (the model op by op, so stacks and pairs both run)."""
    from tinygradx.models.nets import gpt
    tgx.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(block_size=32, vocab_size=40, n_layer=2, n_head=4, n_embd=64,
                                  dropout=0.0, fused_attention=False))
    rng = np.random.default_rng(3)
    idx = tgx.Tensor(rng.integers(0, 40, (8, 32)))
    _, loss = model(idx, tgx.Tensor(rng.integers(0, 40, (8, 32))))
    loss.backward()
    return {n: p.grad.numpy().copy() for n, p in model.named_parameters()}


def test_a_training_step_has_the_same_gradients_with_the_pool_on_and_off():
    on, off = _on_and_off(_gpt_grads)
    for name in on:     # equal to rounding: a pair's GEMMs run on one thread each
        np.testing.assert_allclose(on[name], off[name], rtol=1e-4, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("packed, dropout", [(False, 0.0), (True, 0.0), (True, 0.2)])
def test_fused_attention_on_the_pool_equals_it_off(packed, dropout):
    # with the pool running, fused attention runs head by head there and op-by-op attention's
    # stacks run on it, instead of in batch blocks on Python threads (ops/attention.py); with
    # dropout the same generator state draws the same mask either way
    import tinygradx.functional as F
    rng = np.random.default_rng(4)
    B, T, h, d = 12, 64, 4, 32

    def run():
        if packed:
            tgx.manual_seed(0)
            qkv = tgx.tensor(rng_data, requires_grad=True)
            out = F.packed_attention(qkv, n_head=h, is_causal=True, dropout_p=dropout)
            out.backward(tgx.tensor(np.cos(np.arange(out.numel())).reshape(out.shape)
                                    .astype(np.float32)))
            return out.detach().numpy(), qkv.grad.numpy()
        q, k, v = (tgx.tensor(x, requires_grad=True) for x in rng_qkv)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()
        return out.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()
    rng_data = rng.standard_normal((B, T, 3 * h * d)).astype(np.float32)
    rng_qkv = [rng.standard_normal((B, h, T, d)).astype(np.float32) for _ in range(3)]
    on, off = _on_and_off(run)
    for x, y in zip(on, off, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_the_switch_in_the_environment_keeps_it_off_and_says_why():
    env = dict(ENV, TINYGRADX_POOL="0")
    code = ("import tinygradx; from tinygradx.fast import pool\n"
            "print(pool.start(), pool.status())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "False off (TINYGRADX_POOL=0 or set_enabled(False))", out.stderr


def test_the_first_start_prints_nothing_and_is_reported():
    code = ("import numpy as np, tinygradx as tgx\n"
            "x = tgx.tensor(np.ones((256, 256), np.float32), requires_grad=True)\n"
            "w = tgx.tensor(np.ones((256, 256), np.float32), requires_grad=True)\n"
            "for _ in range(2):\n"
            "    (tgx.functional.linear(x, w) * x).sum().backward()\n"
            "print('one pool of threads' in tgx.process.report())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=ENV)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.strip() == "True"


def test_it_starts_at_the_first_call_it_takes_whatever_ran_before():
    """The pool starts when a version of it is first chosen, forward or backward, with
    gradients or without: so which path a call takes never depends on what the process did
    before (a run resumed from a checkpoint takes the straight run's paths). A process that
    never makes such a call never starts it."""
    code = ("import numpy as np, tinygradx as tgx\n"
            "from tinygradx.fast import pool\n"
            "x = tgx.tensor(np.ones((4, 8, 64, 32), np.float32))\n"
            "y = tgx.tensor(np.ones((4, 8, 32, 64), np.float32))\n"
            "w = tgx.tensor(np.ones((256, 32), np.float32))\n"
            "with tgx.no_grad():\n"
            "    (x @ x.transpose(-1, -2)).sum(); tgx.functional.linear(x, w).sum()\n"
            "    print(pool.running())\n"
            "    (x @ y).sum()\n"
            "print(pool.running())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=ENV)
    assert out.stdout.split() == ["False", "True"], out.stderr


# ------------------------------------------------------------------------------------------
# attention head by head (pool.attention, pool.attention_backward): float32, against numpy's
# formulas in float64 (its own softmax and exp, so not equal bit for bit: within rounding)
# ------------------------------------------------------------------------------------------

def _heads_of(rng, B=12, h=4, T=64, d=32, packed=True):
    """Q, K, V (B, h, T, d) as the strided head views of a packed [Q K V], or C-ordered."""
    if packed:
        qkv = rng.standard_normal((B, T, 3, h, d)).astype(np.float32)
        return tuple(qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
    return tuple(rng.standard_normal((B, h, T, d)).astype(np.float32) for _ in range(3))


def _reference(q, k, v, mask, scale, g, keep=None):
    """Z, A and dQ, dK, dV, dS of attention in float64 with numpy (keep: dropout's D)."""
    q, k, v, g = (x.astype(np.float64) for x in (q, k, v, g))
    keep = 1.0 if keep is None else keep.astype(np.float64)
    s = (q * scale) @ k.swapaxes(-1, -2) + (0 if mask is None else mask)
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(top), 0, top))
    total = e.sum(-1, keepdims=True)
    a = e / np.where(total == 0, 1, total)
    da = (g @ v.swapaxes(-1, -2)) * keep
    ds = a * (da - (da * a).sum(-1, keepdims=True))
    return ((a * keep) @ v, a, ds @ k * scale, ds.swapaxes(-1, -2) @ (q * scale),
            (a * keep).swapaxes(-1, -2) @ g, ds)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("masking", ["causal", "none", "a row fully masked", "queries < keys"])
def test_attention_head_by_head_equals_the_formula(packed, masking, dropout):
    rng = np.random.default_rng(11)
    q, k, v = _heads_of(rng, packed=packed)
    T = k.shape[-2]
    mask = None if masking == "none" else np.triu(np.full((T, T), -np.inf, np.float32), 1)
    if masking == "a row fully masked":
        mask[5] = -np.inf
    if masking == "queries < keys":                  # a KV cache's last 16 rows as queries
        q, mask = q[:, :, -16:], mask[-16:]
    scale = 1 / np.sqrt(q.shape[-1])
    z = np.full(q.shape[:-1] + v.shape[-1:], np.nan, np.float32)

    def draw(shape):                                 # dropout's scaled keep-mask D
        return (rng.random(shape) >= dropout).astype(np.float32) / np.float32(1 - dropout)
    got = attention(q, k, v, mask, scale, z, draw=draw if dropout else None)
    assert got is not None
    qs, a, keep = got
    assert (keep is None) == (dropout == 0)
    g = rng.standard_normal(z.shape).astype(np.float32)
    grads = [np.full(x.shape, np.nan, np.float32) for x in (q, k, v)]
    ds = attention_backward(g, qs, k, v, a, scale, *grads, keep=keep)
    assert ds is not None
    want = _reference(q, k, v, mask, scale, g, keep)
    np.testing.assert_allclose(qs, q * np.float32(scale), rtol=1e-6)
    for name, x, y in zip(("Z", "A", "dQ", "dK", "dV", "dS"), (z, a, *grads, ds), want,
                          strict=True):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6, err_msg=name)
    if masking == "a row fully masked":              # zeros there, as softmax gives
        assert not a[:, :, 5].any() and not z[:, :, 5].any()


def test_attention_head_by_head_keeps_a_nan_to_its_row():
    rng = np.random.default_rng(12)
    q, k, v = _heads_of(rng, packed=False)
    q[3, 1, 7, 0] = np.nan
    T = k.shape[-2]
    mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    z = np.empty(q.shape, np.float32)
    _, a, _ = attention(q, k, v, mask, 0.125, z)
    bad = np.isnan(a)
    assert bad[3, 1, 7].all() and bad.sum() == T and np.isnan(z).sum() == q.shape[-1]


def test_attention_head_by_head_exp_is_within_an_ulp_or_two():
    # one query, its scores spread over float32's range of e^x: the softmax weights against
    # float64's from the same float32 differences s - max(s) (whose rounding, ~4e-6 near -80,
    # is float32's, not the exp's), relative to each weight
    rng = np.random.default_rng(13)
    B, h, T, d = 16, 4, 64, 32
    q = np.zeros((B, h, T, d), np.float32)
    q[..., 0] = 1
    k = np.zeros((B, h, T, d), np.float32)
    k[..., 0] = rng.uniform(-80, 0, (B, h, T)).astype(np.float32)
    v = rng.standard_normal((B, h, T, d)).astype(np.float32)
    _, a, _ = attention(q, k, v, None, 1.0, np.empty(q.shape, np.float32))
    s = k[..., 0][:, :, None, :]
    e = np.exp((s - s.max(-1, keepdims=True)).astype(np.float64))
    want = e / e.sum(-1, keepdims=True)
    big = want > 1e-30
    np.testing.assert_allclose(a[np.broadcast_to(big, a.shape)],
                               np.broadcast_to(want, a.shape)[np.broadcast_to(big, a.shape)],
                               rtol=1e-6)


def _never(shape):
    raise AssertionError("a refused call drew a dropout mask")


@pytest.mark.parametrize("case", ["float64", "a mask per head", "a broadcast mask",
                                  "one query", "d = 0", "too few heads", "5 batch dims",
                                  "two batch shapes", "an out too narrow", "an out that is q"])
def test_what_attention_head_by_head_does_not_take_is_a_clean_none(case):
    rng = np.random.default_rng(14)
    q, k, v = _heads_of(rng, packed=False)
    T = k.shape[-2]
    mask = np.zeros((T, T), np.float32)
    if case == "float64":
        q, k, v = (x.astype(np.float64) for x in (q, k, v))
    elif case == "a mask per head":
        mask = np.zeros((4, T, T), np.float32)
    elif case == "a broadcast mask":
        mask = np.broadcast_to(np.zeros(T, np.float32), (T, T))
    elif case == "one query":
        q = q[:, :, -1:]
    elif case == "d = 0":
        q, k = q[..., :0], k[..., :0]
    elif case == "too few heads":
        q, k, v = q[:1, :1], k[:1, :1], v[:1, :1]
    elif case == "5 batch dims":
        q, k, v = (x.reshape(2, 2, 3, 2, 2, T, -1) for x in (q, k, v))
    elif case == "two batch shapes":
        k, v = k[:1], v[:1]
    z = np.empty(q.shape[:-1] + v.shape[-1:], q.dtype)
    if case == "an out too narrow":                  # C would write past it
        z = z[..., :-1]
    elif case == "an out that is q":
        z = q
    assert attention(q, k, v, mask, 0.5, z, draw=_never) is None
    if "mask" in case or "out" in case:              # the backward takes no mask, no out
        return
    g = np.ones(z.shape, z.dtype)
    assert attention_backward(g, q, k, v, np.ones(q.shape[:-1] + (T,), q.dtype), 0.5,
                                   None, None, None) is None


# ------------------------------------------------------------------------------------------
# the tanh GELU on the pool (pool.gelu_tanh, pool.gelu_tanh_grad) against float64
# ------------------------------------------------------------------------------------------

SPECIAL = np.array([0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 1e-3, -1e-3, 0.78, -0.78,
                    3, -3, 5, -5, 10, -10, 1e30, -1e30], np.float32)


def test_gelu_tanh_on_the_pool_is_within_two_ulp_of_tanh():
    rng = np.random.default_rng(21)
    x = np.concatenate([rng.standard_normal(100_000).astype(np.float32) * 3, SPECIAL])
    t, y = np.empty_like(x), np.empty_like(x)
    assert gelu_tanh(x, t, y)
    with np.errstate(all="ignore"):
        c1 = np.float32(np.sqrt(2 / np.pi))
        u = (x * x * np.float32(0.044715 * c1) + c1) * x          # the same float32 u
        want_t = np.tanh(u.astype(np.float64)).astype(np.float32)
        want_y = (want_t + np.float32(1)) * x * np.float32(0.5)
    assert np.array_equal(np.isnan(t), np.isnan(want_t))
    ok = ~np.isnan(want_t)
    ulps = np.abs(t[ok].view(np.int32).astype(np.int64) - want_t[ok].view(np.int32))
    assert ulps.max() <= 2
    assert np.array_equal(np.isnan(y), np.isnan(want_y))       # -inf: 0 * inf, as numpy's
    ok = ~np.isnan(want_y)
    # (1 + t) near t = -1 inherits t's absolute error, hence atol
    np.testing.assert_allclose(y[ok], want_y[ok], rtol=1e-6, atol=3e-7)


def test_gelu_tanh_backward_on_the_pool_is_the_formula():
    rng = np.random.default_rng(22)
    x = rng.standard_normal(50_000).astype(np.float32) * 3
    g = rng.standard_normal(x.size).astype(np.float32)
    t, y, d = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    assert gelu_tanh(x, t, y) and gelu_tanh_grad(x, t, g, d)
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    du = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x64 ** 2)
    want = g * (0.5 * (1 + t64) + 0.5 * x64 * (1 - t64 ** 2) * du)
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["float64", "too few", "not contiguous", "two sizes"])
def test_what_the_pools_gelu_does_not_take_is_a_clean_none(case):
    x = np.ones(1 << 16, np.float32)
    t, y = np.zeros_like(x), np.zeros_like(x)
    if case == "float64":
        x, t, y = (a.astype(np.float64) for a in (x, t, y))
    elif case == "too few":
        x, t, y = x[:100], t[:100], y[:100]
    elif case == "not contiguous":
        x = np.ones(1 << 17, np.float32)[::2]
    elif case == "two sizes":
        y = y[:-1]
    assert gelu_tanh(x, t, y) is None
    assert gelu_tanh_grad(x, t, x, y) is None


def test_gelu_on_the_pool_equals_it_off():
    import tinygradx.functional as F
    x0 = np.random.default_rng(23).standard_normal((12, 64, 512)).astype(np.float32)

    def run():
        x = tgx.tensor(x0, requires_grad=True)
        y = F.gelu(x, approximate="tanh")
        (y * y).sum().backward()
        return y.detach().numpy(), x.grad.numpy()
    on, off = _on_and_off(run)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# softmax over the last axis on the pool (pool.softmax, pool.softmax_grad) against float64
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("inplace", [False, True])
def test_softmax_on_the_pool_equals_the_formula_with_masked_and_nan_rows(inplace):
    rng = np.random.default_rng(31)
    x = (rng.standard_normal((1024, 64)) * 4).astype(np.float32)
    x[np.triu_indices(64, 1)] = -np.inf                  # causal rows, as attention's
    x[70] = -np.inf                                      # a fully masked row: zeros
    x[71, 5] = np.nan                                    # a NaN: a NaN row
    out = x.copy() if inplace else np.full_like(x, 7.0)
    assert softmax(out if inplace else x, out)
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        e = np.exp(x64 - np.where(np.isneginf(x64.max(1, keepdims=True)), 0,
                                  x64.max(1, keepdims=True)))
        total = e.sum(1, keepdims=True)
        want = e / np.where(total == 0, 1, total)
    assert np.array_equal(np.isnan(out), np.isnan(want)) and np.isnan(out[71]).all()
    assert not out[70].any()
    ok = ~np.isnan(want)
    np.testing.assert_allclose(out[ok], want[ok], rtol=2e-6, atol=1e-7)
    g = rng.standard_normal(x.shape).astype(np.float32)
    s = np.nan_to_num(out)
    d = g.copy() if inplace else np.empty_like(g)
    assert softmax_grad(d if inplace else g, s, d)
    s64 = s.astype(np.float64)
    want_d = s64 * (g - (g * s64).sum(1, keepdims=True))
    np.testing.assert_allclose(d, want_d, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["float64", "too few", "3-D", "not contiguous", "short rows",
                                  "ragged rows"])
def test_what_the_pools_softmax_does_not_take_is_a_clean_none(case):
    x = np.zeros((512, 64), np.float32)
    if case == "short rows":                        # numba's loops are faster there
        x = np.zeros((4096, 24), np.float32)
    elif case == "ragged rows":
        x = np.zeros((1024, 65), np.float32)
    elif case == "float64":
        x = x.astype(np.float64)
    elif case == "too few":
        x = x[:2]
    elif case == "3-D":
        x = x.reshape(8, 64, 64)
    elif case == "not contiguous":
        x = np.zeros((512, 128), np.float32)[:, ::2]
    out = np.zeros(x.shape, x.dtype)
    assert softmax(x, out) is None
    assert softmax_grad(x, x, out) is None


def test_f_softmax_on_the_pool_equals_it_off():
    import tinygradx.functional as F
    x0 = np.random.default_rng(32).standard_normal((12, 4, 64, 64)).astype(np.float32)

    def run():
        x = tgx.tensor(x0, requires_grad=True)
        y = F.softmax(x, dim=-1)
        (y * y).sum().backward()
        return y.detach().numpy(), x.grad.numpy()
    on, off = _on_and_off(run)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------------------
# the pool's own loops: off with the kernels, inline inside a Python-thread block, and from
# two threads at once
# ------------------------------------------------------------------------------------------

def _one_pass_calls():
    """Each of the pool's own loops once on GPT CPU config shapes; their results."""
    rng = np.random.default_rng(41)
    q, k, v = _heads_of(rng)
    mask = np.triu(np.full((64, 64), -np.inf, np.float32), 1)
    z = np.empty(q.shape, np.float32)
    x = rng.standard_normal(1 << 16).astype(np.float32)
    t, y = np.empty_like(x), np.empty_like(x)
    s = rng.standard_normal((512, 64)).astype(np.float32)
    out = np.empty_like(s)
    done = (attention(q, k, v, mask, 0.125, z) is not None, gelu_tanh(x, t, y),
            softmax(s, out))
    return done, (z, t, y, out)


def test_the_pools_own_loops_are_off_with_the_kernels():
    from tinygradx.fast import kernels
    assert _one_pass_calls()[0] == (True, True, True)
    old = kernels.set_enabled(False)                 # the numpy path, everywhere
    try:
        assert _one_pass_calls()[0] == (False, None, None)
    finally:
        kernels.set_enabled(old)


def test_the_pools_own_loops_decline_inside_a_python_thread_block():
    from tinygradx.fast import parallel
    if parallel.THREADS < 2:
        pytest.skip("one thread: parallel.rows does not split")
    seen = []
    s = np.zeros((2048, 64), np.float32)

    def block(s_):
        seen.append((parallel.in_block(), softmax(s_, s_)))
    parallel.rows(block, s)
    assert len(seen) == 2 and all(inside and done is None for inside, done in seen)


def test_the_pools_own_loops_from_two_threads_at_once_give_the_same_numbers():
    _, want = _one_pass_calls()

    def work():
        for _ in range(30):
            done, got = _one_pass_calls()
            assert done == (True, True, True)
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)
    _at_once(work, 2, "a pool call")
