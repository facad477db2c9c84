"""Every faster version against the reference it replaces, over hostile inputs.

The core and ops/ write each function once, the reference; faster versions are registered
with a declaration of what they take (tinygradx/fast/dispatch.py). For every registered
version this file draws calls (hypothesis) of the kinds that broke fast paths before: 0- and
1-element shapes, broadcast, transposed and strided layouts, read-only and partly overlapping
outputs, memory-mapped arrays, float16/32/64, +-1e30, subnormals, NaN, +-inf, fully masked
rows; and for each call:

- the dispatcher with only this version switched on either declines it (then the reference
  runs: nothing to compare) or runs it, and then its result is the reference's within the
  version's declared `ulp` bound (units in the last place of the result's largest value), with
  NaN and inf exactly where the reference has them;
- both raise, or both return (a read-only output: numpy's refusal, never a write);
- the inputs are unchanged (a version writes only its outputs);
- the same call from two threads at once gives the same bits.

The same checks run on every faster derivative (a version registered for an op class) against
the op's formula. It runs with the compiled kernels built (CI's main run) and without them
(the lowest and newest runs: every compiled and pool version then declines, which is checked
too); `test_every_version_was_exercised` fails when a version the machine could run never
ran. `test_a_perturbed_version_fails_the_check` shows the check is not vacuous.
"""
from __future__ import annotations

import itertools
import math
import os
import re
import sys
import tempfile
import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.core import fastpath
from tinygradx.core.node import unbroadcast
from tinygradx.fast import dispatch, openblas, pool

KERNEL_NAMES = sorted(k for k in dispatch.VERSIONS if isinstance(k, str))
OP_CLASSES = sorted((k for k in dispatch.VERSIONS if not isinstance(k, str)),
                    key=lambda c: c.__name__)
RAN = Counter()          # (kernel, version) -> calls that version ran and passed the check
DECLINED = Counter()
CHECKED = set()          # kernels and op classes whose test ran in this session
# more examples than the suite's profile gives (8 in CI): a call here costs milliseconds, and
# a hostile combination (a layout, a dtype, an edge value) is found only by drawing many
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.data_too_large,
                                                       HealthCheck.filter_too_much])


@pytest.fixture(autouse=True, scope="module")
def pool_on():
    """The suite runs OpenBLAS on one thread (conftest.py), where the pool stays off; here it
    gets two, so the pool's versions are tested too (where the machine can run it)."""
    blas = openblas.find() if sys.platform.startswith("linux") else None
    old = blas.get_threads() if blas is not None else None
    if blas is not None:
        blas.set_threads(2)
    pool.set_enabled(True)
    pool.start()
    try:
        yield
    finally:
        pool.set_enabled(False)
        if old is not None:
            blas.set_threads(old)


# ------------------------------------------------------------------------------------------
# the comparison
# ------------------------------------------------------------------------------------------

def _leaves(x):
    if isinstance(x, (tuple, list)):
        for y in x:
            yield from _leaves(y)
    elif isinstance(x, np.ndarray):
        yield x


def assert_within(got, want, ulp, what, floor=0.0):
    """got equals want within `ulp` units in the last place of want's largest finite value
    (or of `floor`, when larger: a derivative's incoming gradient, whose size its terms have
    before they cancel); NaN and +-inf exactly where want has them; shapes and dtypes equal."""
    got, want = list(_leaves(got)), list(_leaves(want))
    assert len(got) == len(want), f"{what}: {len(got)} arrays, the reference {len(want)}"
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, f"{what}[{i}]: shape {a.shape}, the reference {b.shape}"
        assert a.dtype == b.dtype, f"{what}[{i}]: dtype {a.dtype}, the reference {b.dtype}"
        if a.dtype.kind != "f":
            assert np.array_equal(a, b), f"{what}[{i}]: values differ"
            continue
        na, nb = np.isnan(a), np.isnan(b)
        assert np.array_equal(na, nb), (f"{what}[{i}]: NaN at {np.argwhere(na != nb)[:3]} "
                                        f"differs from the reference")
        ia, ib = np.isinf(a), np.isinf(b)
        assert np.array_equal(ia, ib) and np.array_equal(a[ia], b[ib]), \
            f"{what}[{i}]: inf differs from the reference"
        fin = ~(nb | ib)
        if not fin.any():
            continue
        if ulp == 0:                                 # the same bits: the same signed zeros
            assert np.array_equal(np.signbit(a[fin]), np.signbit(b[fin])), \
                f"{what}[{i}]: the sign of a zero differs from the reference"
        eps = np.finfo(b.dtype).eps
        scale = max(float(np.abs(b[fin]).max()), floor, float(np.finfo(b.dtype).tiny))
        err = np.abs(a[fin].astype(np.float64) - b[fin].astype(np.float64))
        bound = ulp * eps * scale
        assert err.max() <= bound, (f"{what}[{i}]: off by {err.max():.3g}, above its bound of "
                                    f"{ulp} ulp of {scale:.3g} ({bound:.3g})")


def _copy(args):
    """A deep copy of a call's arguments that keeps what a version's declaration reads: each
    array's strides, dtype and writability, and which arguments are the same array or share
    memory (an in-place call, a partly overlapping output)."""
    roots, made, out = {}, {}, []
    for a in args:
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        if id(a) in made:
            out.append(made[id(a)])
            continue
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        copy = roots.get(id(root))
        if copy is None:
            copy = roots[id(root)] = np.array(root, copy=True, order="K")
        if not (copy.flags.c_contiguous or copy.flags.f_contiguous):
            made[id(a)] = clone = a.copy()          # (not a layout these tests make)
        else:
            memory = copy if copy.flags.c_contiguous else copy.T
            clone = np.ndarray(a.shape, a.dtype, buffer=memory,
                               offset=a.__array_interface__["data"][0]
                               - root.__array_interface__["data"][0], strides=a.strides)
            clone.setflags(write=a.flags.writeable)
            made[id(a)] = clone
        out.append(clone)
    return tuple(out)


def _run(fn, args):
    try:
        return fn(*args), None
    except Exception as e:              # noqa: BLE001 (the refusal is the outcome compared)
        return None, e


FLOOR = {   # a derivative's kernels: terms the size of the incoming gradient g cancel
    "softmax_grad_rows": lambda args: args[0],
    "attention_grads": lambda args: args[0],
    # a sum of rows: its rounding is of the size of the largest partial sum
    "scatter_rows": lambda args: np.abs(args[0]).sum(axis=0) if len(args[0]) else args[0],
}


def _floor(name, args):
    pick = FLOOR.get(name)
    if pick is None:
        return 0.0
    g = pick(args)
    fin = np.isfinite(g)
    return float(np.abs(g[fin]).max()) if fin.any() else 0.0


def check_kernel(name, args, *, others_off=True):
    """For each version of `name`: alone, it declines, or gives the reference's result within
    its bound; never writes into an input; the same from two threads."""
    reference = fastpath.REFERENCES[name]
    CHECKED.add(name)
    want, want_err = _run(reference, _copy(args))
    for v in dispatch.VERSIONS[name]:
        others = [o for o in dispatch.VERSIONS[name] if o is not v] if others_off else []
        with dispatch.switched_off(*others):
            mine = _copy(args)
            assert v.takes(mine) == (dispatch.why_not(v, mine) is None), (
                f"{name}:{v.name}: its compiled check and why_not disagree: "
                f"{dispatch.why_not(v, mine)}")
            chosen = dispatch.choose(name, mine)
            assert dispatch.picked(name, mine) is chosen, (
                f"{name}:{v.name}: run()'s compiled plan picks {dispatch.picked(name, mine)}, "
                f"the versions' own checks {chosen}")
            if chosen is not v:
                DECLINED[name, v.name] += 1
                continue
            got, err = _run(lambda *a: dispatch.run(name, reference, a), mine)
        what = f"{name}:{v.name}"
        assert (err is None) == (want_err is None), (
            f"{what}: {'raised ' + repr(err) if err else 'returned'}, the reference "
            f"{'raised ' + repr(want_err) if want_err else 'returned'}")
        if err is not None:
            continue
        assert_within(got, want, v.ulp, what, floor=_floor(name, args))
        for i in set(range(len(args))) - set(v.outputs):      # inputs unchanged
            if isinstance(args[i], np.ndarray) and not any(
                    mine[i] is mine[o] for o in v.outputs):
                assert np.array_equal(mine[i], args[i], equal_nan=True), \
                    f"{what}: argument {i} was written"
        RAN[name, v.name] += 1


def check_two_threads(name, args):
    """The same call in two threads at once: the same bits as one call alone."""
    reference = fastpath.REFERENCES[name]
    alone = dispatch.run(name, reference, _copy(args))
    results, errors = [None, None], []

    def work(i):
        try:
            results[i] = dispatch.run(name, reference, _copy(args))
        except Exception as e:          # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for r in results:
        assert_within(r, alone, 0, f"{name} from two threads")


# ------------------------------------------------------------------------------------------
# hostile values and layouts
# ------------------------------------------------------------------------------------------

DTYPES = [np.float16, np.float32, np.float64]
SPECIALS = ["none", "nan", "inf", "-inf", "huge", "subnormal", "masked_row", "tiny_rows"]


def values(rng, shape, dtype, special, scale=3.0):
    x = (rng.standard_normal(shape) * scale).astype(dtype)
    if x.size == 0 or special == "none":
        return x
    flat = x.reshape(-1)
    idx = rng.integers(0, flat.size, size=max(1, flat.size // 17))
    if special == "nan":
        flat[idx] = np.nan
    elif special == "inf":
        flat[idx] = np.inf
    elif special == "-inf":
        flat[idx] = -np.inf
    elif special == "huge":          # 1e30 where the dtype holds it, else its largest value
        flat[idx] = min(1e30, float(np.finfo(dtype).max)) * rng.choice([-1, 1], idx.size)
    elif special == "subnormal":
        flat[idx] = np.finfo(dtype).smallest_subnormal * rng.integers(1, 5, idx.size)
    elif special == "masked_row" and x.ndim:
        x[(0,) * (x.ndim - 1)] = -np.inf            # one row entirely -inf
    elif special == "tiny_rows":
        x *= np.finfo(dtype).tiny
    return x


def layout(x, how):
    """The same values in another memory layout."""
    if how == "transposed" and x.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    if how == "strided" and x.ndim >= 1:
        wide = np.zeros(x.shape[:-1] + (x.shape[-1] * 2,), x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if how == "readonly":
        x = x.copy()
        x.setflags(write=False)
        return x
    if how == "memmap":
        return _memmap(x, "r")
    if how == "memmap_rw":
        return _memmap(x, "r+")
    return x


_TMP = tempfile.mkdtemp(prefix="tgx-diff-")


_FILES = itertools.count()


def _memmap(x, mode):
    # a new file each time: np.save over a file another live memmap still maps would cut it
    # short under that mapping (a read past the new end is a bus error), as id(x) reused did
    path = os.path.join(_TMP, f"{os.getpid()}-{threading.get_ident()}-{next(_FILES)}.npy")
    np.save(path, x)
    return np.load(path, mmap_mode=mode)


def output(x, how, like_shape=None):
    """An output array for a kernel writing x's shape: fresh, x itself, read-only, partly
    overlapping x, memory-mapped read-only."""
    shape = x.shape if like_shape is None else like_shape
    if how == "inplace":
        return x
    if how == "readonly":
        out = np.zeros(shape, x.dtype)
        out.setflags(write=False)
        return out
    if how == "overlap" and x.ndim and x.flags.c_contiguous and x.size > 1:
        base = np.zeros(x.size + 1, x.dtype)
        base[1:] = x.reshape(-1)
        x_view = base[1:].reshape(x.shape)
        return base[:-1].reshape(x.shape), x_view     # (out, the x it overlaps)
    if how == "memmap_ro":
        return _memmap(np.zeros(shape, x.dtype), "r")
    return np.empty(shape, x.dtype)


LAYOUTS = ["C", "transposed", "strided", "readonly", "memmap"]
OUTS = ["fresh", "inplace", "readonly", "overlap", "memmap_ro"]


def _rows_shape(draw, big):
    """A row-wise kernel's shape: often small and odd, sometimes large enough for the pool
    (16k+ values, rows of 32+ filling 16-float vectors)."""
    if big:
        return (draw(st.sampled_from([256, 300])), draw(st.sampled_from([64, 96, 256])))
    return tuple(draw(st.lists(st.integers(0, 9), min_size=1, max_size=3)))


# ------------------------------------------------------------------------------------------
# the kernels
# ------------------------------------------------------------------------------------------

@st.composite
def softmax_calls(draw):
    big = draw(st.booleans())
    shape = _rows_shape(draw, big)
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = layout(values(rng, shape, dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    how = draw(st.sampled_from(OUTS))
    out = output(x, how)
    if isinstance(out, tuple):
        out, x = out
    axis = -1 if draw(st.booleans()) or x.ndim == 0 else draw(st.integers(0, x.ndim - 1))
    return x, out, axis


def _f32(*shape, seed=7):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@SLOW
@given(softmax_calls())
@example((_f32(300, 64), np.empty((300, 64), np.float32), -1))          # the pool's
@example((_f32(5, 7).astype(np.float64), np.empty((5, 7)), -1))           # compiled
def test_softmax_rows(call):
    check_kernel("softmax_rows", call)


@st.composite
def softmax_grad_calls(draw):
    x, out, axis = draw(softmax_calls())
    assume(out is not x or x.flags.writeable)
    s = np.exp(np.nan_to_num(x.astype(np.float64), posinf=0, neginf=-50) / 10)
    s = (s / s.sum(axis=axis, keepdims=True) if s.size else s).astype(x.dtype)
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    g = layout(values(rng, x.shape, x.dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    how = draw(st.sampled_from(["fresh", "inplace", "readonly"]))
    out = g if how == "inplace" and g.flags.writeable else output(g, how)
    return g, s, out if not isinstance(out, tuple) else out[0], axis


@SLOW
@given(softmax_grad_calls())
@example((_f32(300, 64), np.full((300, 64), 1 / 64, np.float32), np.empty((300, 64), np.float32),
          -1))
@example((_f32(5, 7), np.full((5, 7), 1 / 7, np.float32), np.empty((5, 7), np.float32), -1))
def test_softmax_grad_rows(call):
    check_kernel("softmax_grad_rows", call)


@st.composite
def layer_norm_calls(draw):
    rows = draw(st.sampled_from([0, 1, 3, 64]))
    n = draw(st.sampled_from([1, 2, 7, 64, 128]))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = layout(values(rng, (rows, n), dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    affine = draw(st.sampled_from(["both", "weight", "none"]))
    w = rng.standard_normal(n).astype(dtype) if affine != "none" else None
    b = rng.standard_normal(n).astype(dtype) if affine == "both" else None
    eps = draw(st.sampled_from([1e-5, 1e-12, 0.1]))
    return x, w, b, eps


@SLOW
@given(layer_norm_calls())
@example((np.array([[1e30] + [0.0] * 63], np.float32), None, None, 1e-5))
@example((np.array([[300, 0, -300]], np.float16), None, None, 1e-5))
@example((_f32(768, 128), _f32(128, seed=8), _f32(128, seed=9), 1e-5))       # the pool's
def test_layer_norm_rows(call):
    check_kernel("layer_norm_rows", call)


@st.composite
def matmul_calls(draw):
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    kind = draw(st.sampled_from(["stack", "few_rows", "odd"]))
    if kind == "stack":              # the pool's: a stack of small products
        batch = draw(st.sampled_from([(48,), (4, 12), (2, 3, 8), (1,)]))
        m, k, n = (draw(st.sampled_from([1, 16, 64])), draw(st.sampled_from([0, 8, 32])),
                   draw(st.sampled_from([1, 64])))
        a = rng.standard_normal(batch + (m, k)).astype(dtype)
        b = rng.standard_normal(batch + (k, n)).astype(dtype)
        if draw(st.booleans()):
            b = b[:1] if batch[0] > 1 else b             # a broadcast batch dim
    elif kind == "few_rows":         # x @ W.T with 3-64 rows
        rows, k, n = draw(st.sampled_from([3, 8, 64])), 32, draw(st.sampled_from([0, 48]))
        a = rng.standard_normal((rows, k)).astype(dtype)
        b = rng.standard_normal((n, k)).astype(dtype).T
    else:
        a = rng.standard_normal((draw(st.integers(0, 3)), 5)).astype(dtype)
        b = rng.standard_normal((5, draw(st.integers(0, 3)))).astype(dtype)
    a = layout(a, draw(st.sampled_from(LAYOUTS)))
    special = draw(st.sampled_from(["none", "nan", "inf", "huge"]))
    if special != "none" and a.size:
        a = a.copy()
        a.reshape(-1)[0] = {"nan": np.nan, "inf": np.inf, "huge": 1e30}[special]
    out = None
    if draw(st.booleans()) and a.ndim >= 2:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        out = draw(st.sampled_from(["fresh", "readonly"]))
        out = np.empty(shape, dtype) if out == "fresh" else output(a, "readonly", shape)
    return a, b, out


@SLOW
@given(matmul_calls())
@example((_f32(48, 64, 32), _f32(48, 32, 64, seed=8), None))               # the pool's stack
@example((_f32(8, 32), _f32(48, 32, seed=8).T, None))                      # few rows
def test_matmul(call):
    check_kernel("matmul", call)


@st.composite
def linear_forward_calls(draw):
    """x W^T + b: the pool's sizes (more than 64 rows, k up to 256) and others (k past one
    panel, few rows, no bias, one output column), every layout, hostile values in x and b."""
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    lead = draw(st.sampled_from([(2, 48), (96,), (3, 1, 30), (8,), (0, 5)]))
    k, n = draw(st.sampled_from([128, 256, 512, 3])), draw(st.sampled_from([1, 65, 128]))
    x = layout(values(rng, lead + (k,), dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    w = layout(rng.standard_normal((n, k)).astype(dtype), draw(st.sampled_from(LAYOUTS)))
    b = None if draw(st.booleans()) and draw(st.booleans()) else \
        layout(values(rng, (n,), dtype, draw(st.sampled_from(["none", "nan", "huge"]))),
               draw(st.sampled_from(LAYOUTS)))
    return x, w, b


@SLOW
@given(linear_forward_calls())
@example((_f32(12, 64, 128), _f32(384, 128, seed=8), _f32(384, seed=9)))   # the pool's
@example((_f32(1, 8, 128), _f32(384, 128, seed=8), _f32(384, seed=9)))     # few rows
@example((_f32(12, 64, 128).astype(np.float64), _f32(65, 128, seed=8).astype(np.float64),
          _f32(65, seed=9).astype(np.float64)))
def test_linear_forward(call):
    check_kernel("linear_forward", call)


@st.composite
def gelu_calls(draw):
    big = draw(st.booleans())
    shape = (128, 256) if big else tuple(draw(st.lists(st.integers(0, 9), max_size=3)))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = layout(values(rng, shape, dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    return x, draw(st.sampled_from(["none", "tanh"]))


@SLOW
@given(gelu_calls())
@example((_f32(128, 256), "tanh"))
@example((_f32(3, 5), "none"))
def test_gelu_forward(call):
    check_kernel("gelu_forward", call)


def _attention_arrays(draw, with_grads=False):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16]))
    big = draw(st.booleans())
    B, h, m, n, d = ((4, 4, 64, 64, 32) if big else
                     (draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 5)),
                      draw(st.integers(1, 6)), draw(st.sampled_from([1, 4]))))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    special = draw(st.sampled_from(["none", "nan", "huge"]))
    q, k, v = (values(rng, (B, h, s, d), dtype, special if i == 0 else "none", 1.0)
               for i, s in enumerate((m, n, n)))
    masking = draw(st.sampled_from(["none", "causal", "full_row", "per_head"]))
    mask = None
    if masking in ("causal", "full_row"):
        mask = np.where(np.tril(np.ones((m, n), bool), n - m), 0, -np.inf).astype(dtype)
        if masking == "full_row":
            mask[0] = -np.inf
    elif masking == "per_head":
        mask = np.where(rng.random((B, h, m, n)) < 0.2, -np.inf, 0).astype(dtype)
    layout = draw(st.sampled_from(["c", "heads", "fortran"]))
    if layout == "heads":            # the heads as strided views of one (B, m, h*d) buffer
        q = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    elif layout == "fortran":        # every dim reversed in memory (numpy's results follow Q's)
        q, k, v = (np.asfortranarray(x) for x in (q, k, v))
    return q, k, v, mask, 1 / math.sqrt(d), dtype


@st.composite
def attention_calls(draw):
    q, k, v, mask, scale, dtype = _attention_arrays(draw)
    how = draw(st.sampled_from(["fresh", "readonly", "overlap_q"]))
    shape = q.shape[:-1] + (v.shape[-1],)
    out = (np.empty(shape, dtype) if how == "fresh" else
           output(q, "readonly", shape) if how == "readonly" else q[..., :v.shape[-1]])
    return q, k, mask, scale, v, out


def _heads(B=4, h=4, T=64, d=32, dtype=np.float32):
    r = np.random.default_rng(3)
    q, k, v = (r.standard_normal((B, h, T, d)).astype(dtype) for _ in range(3))
    mask = np.where(np.tril(np.ones((T, T), bool)), 0, -np.inf).astype(dtype)
    return q, k, v, mask


def _weights_example(dtype=np.float32):
    q, k, v, mask = _heads(dtype=dtype)
    return q, k, mask, 1 / math.sqrt(32), v, np.empty_like(q)


def _token_example(dtype=np.float32, order="C"):
    """A generated token's call: one query per head against K, V views of a cache buffer
    (B, h, capacity, d) holding 100 positions, no mask; order "F": Q, K, V in Fortran order
    (numpy then lays the scores out likewise, not in C order)."""
    r = np.random.default_rng(4)
    q = np.array(r.standard_normal((2, 4, 1, 32)), dtype, order=order)
    k, v = (np.array(r.standard_normal((2, 4, 256, 32)), dtype, order=order)[:, :, :100]
            for _ in range(2))
    return q, k, None, 1 / math.sqrt(32), v, np.empty_like(q)


@SLOW
@given(attention_calls())
@example(_weights_example())
@example(_weights_example(np.float64))
@example(_token_example())
@example(_token_example(np.float64))
@example(_token_example(order="F"))
def test_attention_weights(call):
    check_kernel("attention_weights", call)


@st.composite
def attention_dropout_calls(draw):
    q, k, mask, scale, v, out = draw(attention_calls())
    p, seed = draw(st.sampled_from([0.1, 0.5])), draw(st.integers(0, 99))

    def draw_mask(shape, dtype):                  # the same mask for every run of this call
        from tinygradx.ops.fused import dropout_scale
        return dropout_scale(np.random.default_rng(seed), shape, p, dtype)
    return q, k, v, mask, scale, out, draw_mask


def _draw_mask(shape, dtype):
    from tinygradx.ops.fused import dropout_scale
    return dropout_scale(np.random.default_rng(5), shape, 0.1, dtype)


@SLOW
@given(attention_dropout_calls())
@example(_weights_example()[:2] + (_heads()[2], _heads()[3], 1 / math.sqrt(32),
                                  np.empty((4, 4, 64, 32), np.float32), _draw_mask))
def test_attention_dropout(call):
    check_kernel("attention_dropout", call)


@st.composite
def attention_grads_calls(draw):
    q, k, v, mask, scale, dtype = _attention_arrays(draw)
    from tinygradx.ops.attention import attention_weights
    with dispatch.switched_off(every=True):
        qs, a = attention_weights(q, k, mask, scale, None, None)
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    g = rng.standard_normal(q.shape[:-1] + (v.shape[-1],)).astype(dtype)
    keep = None
    if draw(st.booleans()):
        keep = ((rng.random(a.shape) > 0.3) / 0.7).astype(dtype)
    which = draw(st.sampled_from(["all", "q_only", "none_k", "readonly"]))
    grads = [np.empty(x.shape, dtype) for x in (q, k, v)]
    if which == "q_only":
        grads[1] = grads[2] = None
    elif which == "none_k":
        grads[1] = None
    elif which == "readonly":
        grads[0].setflags(write=False)
    return (g, qs, k, v, a, keep, scale, *grads)


def _grads_example(dtype=np.float32):
    q, k, v, mask = _heads(dtype=dtype)
    from tinygradx.ops.attention import attention_weights
    with dispatch.switched_off(every=True):
        qs, a = attention_weights(q, k, mask, 1 / math.sqrt(32), None, None)
    g = np.random.default_rng(4).standard_normal(q.shape).astype(dtype)
    return (g, qs, k, v, a, None, 1 / math.sqrt(32), *(np.empty_like(q) for _ in range(3)))


@SLOW
@given(attention_grads_calls())
@example(_grads_example())
@example(_grads_example(np.float64))
def test_attention_grads(call):
    check_kernel("attention_grads", call)


@st.composite
def adam_calls(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from([(0,), (1,), (7, 3), (300, 256)]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    p = layout(values(rng, shape, dtype, draw(st.sampled_from(["none", "huge", "subnormal"]))),
               draw(st.sampled_from(["C", "transposed", "readonly", "memmap", "memmap_rw"])))
    g = values(rng, shape, dtype, draw(st.sampled_from(["none", "nan", "inf"])))
    m = rng.standard_normal(shape).astype(dtype)
    v = np.abs(rng.standard_normal(shape)).astype(dtype)
    tmp, tmp2 = np.empty(shape, dtype), np.empty(shape, dtype)
    wd, decoupled = draw(st.sampled_from([(0.0, False), (0.01, True), (0.01, False)]))
    return (p, g, m, v, tmp, tmp2, draw(st.integers(1, 5)), 1e-3, 0.9, 0.999, 1e-8, wd,
            decoupled)


def _adam_state(args):
    return args[0], args[2], args[3]


def _adam_example(n=300 * 256, wd=0.01, decoupled=True):
    r = np.random.default_rng(2)
    p, g, m = (r.standard_normal(n).astype(np.float32) for _ in range(3))
    v = np.abs(r.standard_normal(n)).astype(np.float32)
    return (p, g, m, v, np.empty_like(p), np.empty_like(p), 3, 1e-3, 0.9, 0.999, 1e-8, wd,
            decoupled)


@SLOW
@given(adam_calls())
@example(_adam_example())
@example(_adam_example(wd=0.01, decoupled=False))
@example(_adam_example(n=33))
def test_adam_update(call):
    """adam_update returns nothing: its results are p, m, v after the call."""
    reference = fastpath.REFERENCES["adam_update"]
    CHECKED.add("adam_update")
    want_args = _copy(call)
    _, want_err = _run(reference, want_args)
    for v in dispatch.VERSIONS["adam_update"]:
        others = [o for o in dispatch.VERSIONS["adam_update"] if o is not v]
        mine = _copy(call)
        with dispatch.switched_off(*others):
            if dispatch.choose("adam_update", mine) is not v:
                DECLINED["adam_update", v.name] += 1
                continue
            _, err = _run(lambda *a: dispatch.run("adam_update", reference, a), mine)
        assert (err is None) == (want_err is None), (err, want_err)
        if err is None:
            assert_within(_adam_state(mine), _adam_state(want_args), v.ulp,
                          f"adam_update:{v.name}")
            RAN["adam_update", v.name] += 1


@st.composite
def masked_fill_calls(draw):
    """x (..., T, T) with a mask of its trailing shape (a causal one, a random one, with
    leading 1s, of a non-bool dtype, non-C-ordered) and a fill value of x's dtype."""
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    lead = tuple(draw(st.lists(st.integers(0, 4), max_size=2)))
    T = draw(st.sampled_from([0, 1, 5, 64]))
    x = layout(values(rng, lead + (T, T), dtype, draw(st.sampled_from(SPECIALS))),
               draw(st.sampled_from(LAYOUTS)))
    kind = draw(st.sampled_from(["causal", "random", "leading_ones", "full", "uint8",
                                 "transposed"]))
    mask = np.triu(np.ones((T, T), bool), 1)
    if kind == "random":
        mask = rng.random((T, T)) < 0.5
    elif kind == "leading_ones":
        mask = mask[None, None]
    elif kind == "full":
        mask = np.broadcast_to(mask, x.shape).copy()
    elif kind == "uint8":
        mask = mask.astype(np.uint8)
    elif kind == "transposed":
        mask = mask.T
    with np.errstate(over="ignore"):                # 1e30 is inf in float16, as torch's
        value = np.asarray(draw(st.sampled_from([-np.inf, np.nan, 0.0, -0.0, 1e30, 2.5])),
                           dtype)
    how = draw(st.sampled_from(["0-d", "0-d", "0-d", "row", "float64"]))
    if how == "row":                               # one value a column: the reference broadcasts
        value = np.full(T, value, dtype)
    elif how == "float64":
        value = value.astype(np.float64)
    return x, mask, value


@SLOW
@given(masked_fill_calls())
@example((_f32(12, 4, 64, 64), np.triu(np.ones((64, 64), bool), 1),
          np.asarray(-np.inf, np.float32)))                       # the compiled loop's
def test_masked_fill_array(call):
    check_kernel("masked_fill_array", call)


@st.composite
def scatter_calls(draw):
    dtype = draw(st.sampled_from(DTYPES))
    rows = draw(st.sampled_from([1, 65, 2000]))
    n = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    g2 = values(rng, (n, 8), dtype, draw(st.sampled_from(["none", "nan", "huge"])))
    ids = rng.integers(0, rows, n)
    kind = draw(st.sampled_from(["int64", "int32", "negative", "mixed", "strided", "one_row",
                                 "too_many_rows"]))
    if kind == "int32":
        ids = ids.astype(np.int32)
    elif kind == "negative":                     # np.add.at counts them from the end
        ids = ids - rows
    elif kind == "mixed":                        # -1 and rows - 1: the same row
        ids = np.where(np.arange(n) % 2 == 0, ids - rows, ids)
    elif kind == "strided":
        ids = np.repeat(ids, 2)[::2]
    elif kind == "one_row" and n:                # np.add.at adds the one row at every id
        g2 = g2[:1].copy()
    elif kind == "too_many_rows":                # more rows than ids: the reference refuses
        g2 = np.concatenate([g2, g2[:1]])
    return layout(g2, draw(st.sampled_from(LAYOUTS))), ids, rows


@SLOW
@given(scatter_calls())
@example((_f32(768, 128), np.random.default_rng(0).integers(0, 65, 768), 65))   # compiled
def test_scatter_rows(call):
    check_kernel("scatter_rows", call)


# ------------------------------------------------------------------------------------------
# the faster derivatives: each against its op's formula
# ------------------------------------------------------------------------------------------

def check_derivative(out, g):
    """Every registered derivative of out's op, alone, against the op's formula."""
    ctx = out._ctx
    cls = type(ctx)
    CHECKED.add(cls.__name__)
    with dispatch.switched_off(every=True):
        want = ctx.backward(g)
    for v in dispatch.VERSIONS.get(cls, ()):
        if not dispatch._backward_ok(v, ctx, g):
            DECLINED[cls.__name__, v.name] += 1
            continue
        others = [o for o in dispatch.VERSIONS[cls] if o is not v]
        g_in = g.copy()
        with dispatch.switched_off(*others):
            got = dispatch.backward(ctx, g_in)
        assert np.array_equal(g_in, g, equal_nan=True), f"{cls.__name__}:{v.name} wrote g"
        if isinstance(got, fastpath.Slice):
            full = np.zeros(ctx.parents[0].shape, g.dtype)
            full[got.index] = got.values
            got = full
        got = got if isinstance(got, tuple) else (got,)
        want_t = want if isinstance(want, tuple) else (want,)
        pairs = [(unbroadcast(a, p.shape).astype(p.dtype), unbroadcast(b, p.shape).astype(p.dtype))
                 for a, b, p, need in zip(got, want_t, ctx.parents, ctx.needs_input_grad,
                                          strict=True)
                 if need and b is not None]            # each as the walk hands it on
        fin = np.isfinite(g)
        assert_within([a for a, _ in pairs], [b for _, b in pairs], v.ulp,
                      f"{cls.__name__}.backward:{v.name}",
                      floor=float(np.abs(g[fin]).max()) if fin.any() else 0.0)
        RAN[cls.__name__, v.name] += 1


def _tensor(x):
    return tgx.tensor(x, requires_grad=True)


OPS = ["softmax", "layer_norm", "gelu", "gelu_tanh", "cross_entropy", "attention", "packed",
       "linear", "matmul", "getitem", "masked_fill"]


@st.composite
def derivative_calls(draw, op):
    dtype = draw(st.sampled_from(DTYPES if op not in ("cross_entropy",) else DTYPES[1:]))
    big = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    special = draw(st.sampled_from(["none", "nan", "huge", "subnormal", "empty"]))
    return op, dtype, big, rng, special


def _build(op, dtype, big, rng, special):
    """(output tensor, incoming gradient) for one op; special "empty": a size-0 dim where the
    op takes one (a (3, 0) @ (0, 5) product, say: its gradients are zeros, not a crash)."""
    empty = special == "empty"

    def v(*shape, s="none" if empty else special):
        return values(rng, shape, dtype, s)
    if empty and op in ("linear", "matmul"):
        x, w = _tensor(v(2, 3, 0)), _tensor(v(5, 0))
        return (F.linear(x, w) if op == "linear" else x @ w.T), x
    if empty and op in ("softmax", "gelu", "gelu_tanh", "getitem"):
        x = _tensor(v(3, 0))
        out = (F.softmax(x, dim=-1) if op == "softmax" else x[:, :0] if op == "getitem" else
               F.gelu(x, approximate="tanh" if op == "gelu_tanh" else "none"))
        return out, x
    if op == "softmax":
        x = _tensor(v(*((300, 64) if big else (3, 5))))
        return F.softmax(x, dim=-1), x
    if op == "layer_norm":
        n, rows = (128, 64) if big else (7, 4)
        x, w, b = _tensor(v(rows, n)), _tensor(v(n, s="none")), _tensor(v(n, s="none"))
        return F.layer_norm(x, (n,), w, b), x
    if op in ("gelu", "gelu_tanh"):
        x = _tensor(v(*((128, 256) if big else (3, 4))))
        return F.gelu(x, approximate="tanh" if op == "gelu_tanh" else "none"), x
    if op == "cross_entropy":
        x = _tensor(v(6, 5))
        return F.cross_entropy(x, tgx.tensor(rng.integers(0, 5, 6))), x
    if op in ("attention", "packed"):
        if dtype == np.float16:
            dtype = np.float32
        B, h, T, d = (4, 4, 64, 32) if big else (1, 2, 3, 4)
        if op == "packed":
            qkv = _tensor(values(rng, (B, T, 3 * h * d), dtype, "none", 0.5))
            return F.packed_attention(qkv, n_head=h, is_causal=True), qkv
        q, k, w = (_tensor(values(rng, (B, h, T, d), dtype, "none", 0.5)) for _ in range(3))
        return F.attention(q, k, w, is_causal=True), q
    if op in ("linear", "matmul"):
        rows, n_in, n_out = (256, 256, 256) if big else (3, 4, 5)
        x = _tensor(v(2, rows // 2 or 1, n_in, s="none"))
        w = _tensor(v(n_out, n_in, s="none"))
        b = _tensor(v(n_out, s="none")) if big else None      # db: the pair's column sums
        return (F.linear(x, w, b) if op == "linear" else x @ w.T), x
    if op == "masked_fill":                      # a causal mask broadcast over the scores
        T = 0 if empty else 64 if big else 5
        x = _tensor(values(rng, (2, 3, T, T), dtype, "none" if empty else special))
        return x.masked_fill(np.triu(np.ones((T, T), bool), 1), -np.inf), x
    x = _tensor(v(6, 9))
    return x[:, 2:5], x


@pytest.mark.parametrize("op", OPS)
@SLOW
@given(data=st.data())
def test_derivatives(op, data):
    call = data.draw(derivative_calls(op))
    if op in ("gelu_tanh", "attention", "packed", "linear", "matmul", "softmax", "masked_fill",
              "layer_norm"):
        _check_op(op, np.float32, True, np.random.default_rng(0), "none")   # the pool's sizes
    _check_op(op, np.float32, False, np.random.default_rng(1), "none")
    _check_op(*call)


def _check_op(op, dtype, big, rng, special):
    out, _ = _build(op, dtype, big, rng, special)
    g = np.asarray(values(rng, out.shape, out.dtype, "none"))   # (a 0-d loss: a 0-d array)
    check_derivative(out, g)


# ------------------------------------------------------------------------------------------
# two threads, the examples of the issue, and that the check can fail
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, make", [
    ("softmax_rows", lambda r: (r.standard_normal((512, 64)).astype(np.float32),
                                np.empty((512, 64), np.float32), -1)),
    ("layer_norm_rows", lambda r: (r.standard_normal((512, 128)).astype(np.float32), None,
                                   None, 1e-5)),
    ("gelu_forward", lambda r: (r.standard_normal((128, 256)).astype(np.float32), "tanh")),
    ("matmul", lambda r: (r.standard_normal((48, 64, 32)).astype(np.float32),
                          r.standard_normal((48, 32, 64)).astype(np.float32), None)),
])
def test_two_threads_at_once_give_one_threads_bits(name, make):
    check_two_threads(name, make(np.random.default_rng(0)))


def test_the_issues_examples():
    """A read-only parameter, a zero-size operand, a huge value, float16 statistics."""
    p = tgx.nn.Parameter(tgx.tensor(np.ones((4, 4), np.float32)))
    with tgx.no_grad():
        p.detach().numpy().setflags(write=False)
    p.grad = tgx.ones(4, 4)
    with pytest.raises(ValueError, match="read-only"):
        tgx.optim.AdamW([p]).step()
    a, b = _tensor(np.ones((3, 8), np.float32)), _tensor(np.ones((8, 0), np.float32))
    (a @ b).sum().backward()
    assert a.grad.numpy().tolist() == np.zeros((3, 8)).tolist() and b.grad.shape == (8, 0)
    row = np.zeros((1, 64), np.float32)
    row[0, 0] = 1e30
    y = F.layer_norm(tgx.tensor(row), (64,)).numpy()
    assert abs(y[0, 0] - math.sqrt(63)) < 1e-5 and abs(y[0, 1] + 1 / math.sqrt(63)) < 1e-6
    h = F.layer_norm(tgx.tensor(np.array([[300, 0, -300]], np.float16)), (3,)).numpy()
    assert h.dtype == np.float16 and abs(float(h[0, 0]) - 1.2246) < 1e-3
    r = F.rms_norm(tgx.tensor(np.array([[300, 400]], np.float16)), (2,)).numpy()
    assert r.dtype == np.float16 and np.allclose(r.astype(np.float32), [0.8486, 1.1318],
                                                 atol=2e-3)


def test_the_decision_declines_what_it_must():
    """The compiled decision, run()'s and each version's, refuses what the declarations
    exclude, the same as why_not says: an output that is an input it may not be, a read-only
    or overlapping output, too few dims; and takes the ordinary call."""
    r = np.random.default_rng(6)
    p, g, m, v = (r.standard_normal(64).astype(np.float32) for _ in range(4))
    base = (p, g, m, np.abs(v), np.empty_like(p), np.empty_like(p), 2, 1e-3, 0.9, 0.999, 1e-8,
            0.0, True)
    ro = p.copy()
    ro.setflags(write=False)
    buf = r.standard_normal(128).astype(np.float32)
    calls = {"ordinary": base, "m is v": base[:3] + (m,) + base[4:],
             "read-only p": (ro,) + base[1:], "p overlaps g": (buf[:64], buf[32:96]) + base[2:]}
    compiled = next(v for v in dispatch.VERSIONS["adam_update"] if v.name == "compiled")
    for what, call in calls.items():
        why = dispatch.why_not(compiled, call)
        assert compiled.takes(call) == (why is None), what
        assert (dispatch.picked("adam_update", call) is compiled) == (
            why is None and dispatch.backend_ready("kernels")), what
        if what == "ordinary":
            assert why is None or "backend is off" in why, why
        else:
            assert why is not None and "backend" not in why, (what, why)
    a, w = np.ones((1, 1, 8), np.float32), np.ones((8, 5), np.float32, order="F")
    pool_version = dispatch.VERSIONS["matmul"][0]
    assert dispatch.why_not(pool_version, (a, w, None)) == "argument 1 has 2 dims (takes 3 to 6)"


def test_outputs_that_interleave_without_sharing_are_taken():
    """A packed [Q K V] gradient's dQ, dK, dV are strided views into one buffer: their bounds
    meet, their elements do not. The bounds test alone declined them (the pool's attention
    backward never ran for packed attention); the exact test takes them, and still refuses
    a view that does share an element."""
    d = np.empty((2, 8, 3 * 2 * 4), np.float32)
    q, k, v = (d.reshape(2, 8, 3, 2, 4)[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
    assert np.may_share_memory(q, k) and not dispatch.overlap(q, k)
    assert dispatch.overlap(q, d) and dispatch.overlap(d[:, 1:], d[:, :-1])
    buf = np.empty(10 ** 6)
    assert dispatch.overlap(buf[::3], buf[::7])                 # too hard to decide: overlapping
    rng = np.random.default_rng(0)
    B, h, T, hd = 12, 4, 64, 32
    qkv = rng.standard_normal((B, T, 3 * h * hd)).astype(np.float32)
    out = tgx.tensor(qkv, requires_grad=True)
    y = F.packed_attention(out, n_head=h, is_causal=True)
    ctx = y._ctx
    grads = np.empty_like(qkv)
    args = (ctx._split(np.ones((B, T, h * hd), np.float32)), ctx.qs, ctx.k, ctx.v, ctx.a,
            ctx.keep, ctx.scale, *ctx._views(grads))
    chosen = dict(dispatch.explain("attention_grads", *args))
    assert not any("overlaps" in (why or "") for why in chosen.values()), chosen
    if dispatch.backend_ready("pool"):
        assert chosen["pool"] is None, chosen


def test_a_perturbed_version_fails_the_check():
    """A version that is off by more than its bound is caught: the check is not vacuous."""
    v = dispatch.VERSIONS["softmax_rows"][-1]
    fn = v.fn
    v.fn = lambda x, out, axis: fn(x, out, axis) * np.float32(1 + 1e-4)
    try:
        x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
        if dispatch.why_not(v, (x, np.empty_like(x), -1)) is not None:
            pytest.skip(f"{v} does not run here: {dispatch.why_not(v, (x, x.copy(), -1))}")
        with pytest.raises(AssertionError, match="above its bound"):
            check_kernel("softmax_rows", (x, np.empty_like(x), -1))
    finally:
        v.fn = fn


def test_a_version_one_ulp_off_a_0_ulp_bound_fails_the_check():
    """The numpy-only version of the embedding's scatter (it runs with the kernels on or off,
    so this runs in every CI configuration) is held at 0 ulp: one entry one ulp off fails."""
    v = next(v for v in dispatch.VERSIONS["scatter_rows"] if v.name == "flat")
    fn = v.fn

    def off(g2, ids, rows):
        out = fn(g2, ids, rows)
        out.flat[0] = np.nextafter(out.flat[0], np.inf)
        return out
    v.fn = off
    try:
        rng = np.random.default_rng(2)
        call = (rng.standard_normal((6, 3)), rng.integers(0, 4, 6), 4)
        with pytest.raises(AssertionError, match=r"scatter_rows:flat\[0\]: off by .* above its "
                                                 r"bound of 0 ulp"):
            check_kernel("scatter_rows", call)
    finally:
        v.fn = fn


def _the_librarys(x):
    """A kernel name, or an op class or function of tinygradx (not one a test registered)."""
    return isinstance(x, str) or getattr(x, "__module__", "").startswith("tinygradx")


@pytest.mark.parametrize("page", ["docs/design.md", "docs/zh/design.md"])
def test_the_design_pages_list_the_exact_versions(page):
    """docs/design.md's rule 3 names the versions held at 0 ulp (the same bits under any speed
    settings): the list is every registered version whose bound is 0, and no other."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = f.read()
    listed = re.search(r"(?:Versions held at 0 ulp \(|误差界为 0 ulp 的版本（)([^)）]*)", text)
    assert listed, f"{page}: the sentence naming the versions held at 0 ulp is missing"
    named = set(re.findall(r"`(\w+:\w+)`", listed.group(1)))
    exact = {f"{getattr(k, '__name__', k)}:{v.name}"
             for k, vs in dispatch.VERSIONS.items() for v in vs
             if v.ulp == 0 and _the_librarys(k) and _the_librarys(v.fn)}
    assert named == exact, (page, sorted(named ^ exact))


def test_every_version_was_exercised():
    """Each version whose backend runs here ran at least once above and passed; with the
    compiled kernels or the pool off, theirs declined every time (also checked above)."""
    if not CHECKED:
        pytest.skip("the tests above did not run in this session (-k?): nothing to count")
    missing = []
    for key, versions in dispatch.VERSIONS.items():
        for v in versions:
            label = key if isinstance(key, str) else key.__name__
            if label not in CHECKED:
                continue                          # its test was not selected this time
            if v.name == "fast" or getattr(key, "__module__", "").startswith("test"):
                continue                          # users' and tests' own registrations
            if label == "Output":
                continue                          # custom Functions: tests/autograd
            if dispatch.backend_ready(v.backend) and RAN[label, v.name] == 0:
                missing.append(f"{label}:{v.name}")
    assert not missing, f"never ran (their examples above must reach them): {missing}"
