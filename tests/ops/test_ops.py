"""Every op in the engine: forward against numpy, backward through gradcheck (float64) and
through the op's own backward, over hypothesis-drawn shapes (broadcasting pairs included).

Inputs are kept away from kinks (abs, relu, clamp edges) and outside domains (log, sqrt, pow).
"""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor
from tinygradx.gradcheck.testing import broadcastable_shapes, matmul_shapes, shapes

from helpers import check_direct_backward, check_op, make_inputs

SMALL = shapes(min_dims=0, max_dims=3, max_side=4)
SMALL_ND = shapes(min_dims=1, max_dims=3, max_side=4)
PAIRS = broadcastable_shapes(2, max_dims=3, max_side=4)
SEEDS = st.integers(0, 2**16)
np_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_gelu(x):
    return 0.5 * x * (1 + np_erf(x / math.sqrt(2)))


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_logsumexp(x, axis=None, keepdims=False):
    m = x.max(axis=axis, keepdims=True)
    out = m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


# ------------------------------------------------------------------------------------------
# element-wise binary, with broadcasting
# ------------------------------------------------------------------------------------------

BINARY = [
    ("add", np.add, lambda a, b: a + b, {}),
    ("sub", np.subtract, lambda a, b: a - b, {}),
    ("mul", np.multiply, lambda a, b: a * b, {}),
    ("div", np.divide, lambda a, b: a / b, dict(low=0.5, high=2.0)),
    ("pow", np.power, lambda a, b: a ** b, dict(low=0.5, high=2.0)),
    ("maximum", np.maximum, tgx.maximum, {}),
    ("minimum", np.minimum, tgx.minimum, {}),
    ("method_maximum", np.maximum, lambda a, b: a.maximum(b), {}),
]


@pytest.mark.parametrize("name,np_fn,tgx_fn,kw", BINARY, ids=[b[0] for b in BINARY])
@given(shapes=PAIRS, seed=SEEDS)
def test_binary_broadcast(name, np_fn, tgx_fn, kw, shapes, seed):
    check_op(np_fn, tgx_fn, shapes, seed=seed, **kw)


SCALAR_OPERAND = [
    ("add_scalar", lambda x: x + 2.5),
    ("radd_scalar", lambda x: 2.5 + x),
    ("sub_scalar", lambda x: x - 1.5),
    ("rsub_scalar", lambda x: 1.5 - x),
    ("mul_scalar", lambda x: x * -3.0),
    ("rmul_int", lambda x: 3 * x),
    ("div_scalar", lambda x: x / 4.0),
    ("rdiv_scalar", lambda x: 3.0 / x),
    ("pow_int", lambda x: x ** 3),
    ("pow_half", lambda x: x ** 0.5),
    ("pow_negative", lambda x: x ** -1.5),
    ("rpow", lambda x: 2.0 ** x),
    ("square", lambda x: x ** 2),
]


@pytest.mark.parametrize("name,fn", SCALAR_OPERAND, ids=[s[0] for s in SCALAR_OPERAND])
@given(shape=SMALL, seed=SEEDS)
def test_python_scalar_operand(name, fn, shape, seed):
    # the same lambda on a numpy array is the oracle; positive inputs keep pow/div defined
    check_op(fn, fn, [shape], seed=seed, low=0.5, high=2.0)


def test_square():
    check_op(np.square, Tensor.square, [(2, 3)])


def test_numpy_array_operand():
    w = np.array([1.0, -2.0, 3.0])
    check_op(lambda x: x * w + w, lambda x: x * w + w, [(2, 3)], direct=False)
    check_op(lambda x: w - x, lambda x: w - x, [(2, 3)])


# ------------------------------------------------------------------------------------------
# element-wise unary
# ------------------------------------------------------------------------------------------

UNARY = [
    ("neg", np.negative, lambda x: -x, {}),
    ("exp", np.exp, Tensor.exp, {}),
    ("log", np.log, Tensor.log, dict(low=0.1, high=3.0)),
    ("sqrt", np.sqrt, Tensor.sqrt, dict(low=0.1, high=3.0)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), Tensor.rsqrt, dict(low=0.1, high=3.0)),
    ("tanh", np.tanh, Tensor.tanh, {}),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), Tensor.sigmoid, dict(low=-6, high=6)),
    ("relu", lambda x: np.maximum(x, 0), Tensor.relu, dict(avoid=(0.0,))),
    ("F.relu", lambda x: np.maximum(x, 0), F.relu, dict(avoid=(0.0,))),
    ("gelu", np_gelu, Tensor.gelu, dict(low=-4, high=4)),
    ("F.gelu", np_gelu, F.gelu, dict(low=-4, high=4)),
    ("gelu_tanh", np_gelu_tanh, lambda x: x.gelu(approximate="tanh"), dict(low=-4, high=4)),
    ("F.gelu_tanh", np_gelu_tanh, lambda x: F.gelu(x, approximate="tanh"), {}),
    ("erf", np_erf, Tensor.erf, dict(low=-3, high=3)),
    ("abs", np.abs, Tensor.abs, dict(avoid=(0.0,))),
    ("clamp", lambda x: np.clip(x, -0.5, 0.7), lambda x: x.clamp(-0.5, 0.7),
     dict(avoid=(-0.5, 0.7))),
    ("clamp_min", lambda x: np.maximum(x, 0.3), lambda x: x.clamp(min=0.3), dict(avoid=(0.3,))),
    ("clamp_max", lambda x: np.minimum(x, 0.3), lambda x: x.clamp(max=0.3), dict(avoid=(0.3,))),
    ("F.sigmoid", lambda x: 1 / (1 + np.exp(-x)), F.sigmoid, {}),
    ("F.tanh", np.tanh, F.tanh, {}),
]


@pytest.mark.parametrize("name,np_fn,tgx_fn,kw", UNARY, ids=[u[0] for u in UNARY])
@given(shape=SMALL, seed=SEEDS)
def test_unary(name, np_fn, tgx_fn, kw, shape, seed):
    check_op(np_fn, tgx_fn, [shape], seed=seed, **kw)


def test_sigmoid_extremes_are_finite():
    x = Tensor(np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]), requires_grad=True)
    y = x.sigmoid()
    assert np.all(np.isfinite(y.detach().numpy()))
    np.testing.assert_allclose(y.detach().numpy()[[0, 2, 4]], [0.0, 0.5, 1.0])
    y.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_erf_matches_math_erf_closely():
    x = np.linspace(-6, 6, 241)
    np.testing.assert_allclose(Tensor(x).erf().numpy(), np_erf(x), atol=1e-12)


def test_kinks_follow_pytorch():
    # subgradient choices at the kinks, as PyTorch: relu'(0) = 0, |x|'(0) = 0, clamp passes
    # the gradient at its edges, maximum/minimum split ties evenly
    x = Tensor(np.array([0.0, 0.0, -1.0, 1.0]), requires_grad=True)
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 1])
    x.grad = None
    x.abs().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, -1, 1])
    x.grad = None
    x.clamp(-1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1, 1])
    a = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = Tensor(np.array([1.0, 0.0]), requires_grad=True)
    tgx.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 1.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 0.0])


# ------------------------------------------------------------------------------------------
# reductions over dim int / tuple / None, with keepdim
# ------------------------------------------------------------------------------------------

@st.composite
def shape_and_dim(draw, min_side=1, allow_none=True):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=4))
    nd = len(shape)
    kinds = ["int", "tuple"] + (["none"] if allow_none else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        dim = None
    elif kind == "int":
        dim = draw(st.integers(-nd, nd - 1))
    else:
        axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        dim = tuple(a - nd if draw(st.booleans()) else a for a in axes)
    return shape, dim, draw(st.booleans())


def _np_axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


REDUCTIONS = [
    ("sum", np.sum, lambda x, d, k: x.sum(dim=d, keepdim=k)),
    ("mean", np.mean, lambda x, d, k: x.mean(dim=d, keepdim=k)),
    ("amax", np.max, lambda x, d, k: x.amax(dim=d, keepdim=k)),
    ("amin", np.min, lambda x, d, k: x.amin(dim=d, keepdim=k)),
    ("logsumexp", np_logsumexp, lambda x, d, k: x.logsumexp(dim=d, keepdim=k)),
]


@pytest.mark.parametrize("name,np_fn,tgx_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@given(case=shape_and_dim(), seed=SEEDS)
def test_reduction(name, np_fn, tgx_fn, case, seed):
    shape, dim, keepdim = case
    check_op(lambda x: np_fn(x, axis=_np_axis(dim), keepdims=keepdim),
             lambda x: tgx_fn(x, dim, keepdim), [shape], seed=seed)


@pytest.mark.parametrize("unbiased", [True, False])
@given(case=shape_and_dim(min_side=2), seed=SEEDS)
def test_var(unbiased, case, seed):
    shape, dim, keepdim = case
    ddof = 1 if unbiased else 0
    check_op(lambda x: np.var(x, axis=_np_axis(dim), ddof=ddof, keepdims=keepdim),
             lambda x: x.var(dim=dim, unbiased=unbiased, keepdim=keepdim), [shape], seed=seed)


def test_var_default_is_unbiased_and_std():
    x = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(Tensor(x).var().numpy(), np.var(x, ddof=1))
    np.testing.assert_allclose(Tensor(x).std(dim=1).numpy(), np.std(x, axis=1, ddof=1))


@pytest.mark.parametrize("which", ["max", "min"])
@given(case=shape_and_dim(allow_none=False), seed=SEEDS)
def test_max_min_with_dim_returns_values_and_indices(which, case, seed):
    shape, dim, keepdim = case
    if isinstance(dim, tuple):
        dim = dim[0]
    x = make_inputs([shape], seed)[0]
    values, indices = getattr(Tensor(x), which)(dim=dim, keepdim=keepdim)
    np_red, np_arg = (np.max, np.argmax) if which == "max" else (np.min, np.argmin)
    np.testing.assert_array_equal(values.numpy(), np_red(x, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(indices.numpy(), np_arg(x, axis=dim, keepdims=keepdim))
    assert indices.dtype == np.int64
    check_op(None, lambda t: getattr(t, which)(dim=dim, keepdim=keepdim).values, [shape],
             seed=seed, direct=keepdim)        # keepdim=False adds a squeeze after the gather


@pytest.mark.parametrize("which", ["max", "min"])
def test_max_min_without_dim(which):
    x = make_inputs([(3, 4)], 3)[0]
    np.testing.assert_array_equal(getattr(Tensor(x), which)().numpy(), getattr(np, which)(x))
    check_op(getattr(np, which), lambda t: getattr(t, which)(), [(3, 4)])


def test_max_ties_follow_pytorch():
    # torch.amax and torch.max() (no dim): tied maxima share the gradient
    x = Tensor(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), requires_grad=True)
    x.amax(dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0, 0.5]])
    x.grad = None
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    # torch.max(dim) / min(dim): the values are picked at the returned indices, which get all
    x.grad = None
    values, indices = x.max(dim=1)
    values.sum().backward()
    assert indices.tolist() == [1, 0]
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])
    x.grad = None
    x.min(dim=0, keepdim=True).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 0], [0, 1, 1]])


# ------------------------------------------------------------------------------------------
# movement
# ------------------------------------------------------------------------------------------

@given(shape=SMALL, seed=SEEDS, target=st.sampled_from(["flat", "minus1", "reversed", "col"]))
def test_reshape_and_view(shape, seed, target):
    n = int(np.prod(shape))
    new = {"flat": (n,), "minus1": (-1,), "reversed": tuple(reversed(shape)),
           "col": (n, 1)}[target]
    check_op(lambda x: x.reshape(new), lambda x: x.reshape(new), [shape], seed=seed)
    check_op(lambda x: x.reshape(new), lambda x: x.view(*new), [shape], seed=seed, grad=False)


@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_permute(data, shape, seed):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    check_op(lambda x: np.transpose(x, perm), lambda x: x.permute(*perm), [shape], seed=seed)
    check_op(lambda x: np.transpose(x, perm), lambda x: x.permute(perm), [shape], seed=seed,
             grad=False)


@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_transpose_and_swapaxes(data, shape, seed):
    nd = len(shape)
    d0, d1 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    check_op(lambda x: np.swapaxes(x, d0, d1), lambda x: x.transpose(d0, d1), [shape],
             seed=seed)
    check_op(lambda x: np.swapaxes(x, d0, d1), lambda x: x.swapaxes(d0, d1), [shape],
             seed=seed, grad=False)


def test_T_and_mT():
    x = make_inputs([(2, 3, 4)])[0]
    np.testing.assert_array_equal(Tensor(x).T.numpy(), x.T)
    np.testing.assert_array_equal(Tensor(x).mT.numpy(), np.swapaxes(x, -1, -2))


@given(shapes=PAIRS, seed=SEEDS)
def test_expand(shapes, seed):
    a, b = shapes
    target = np.broadcast_shapes(a, b)
    check_op(lambda x: np.broadcast_to(x, target), lambda x: x.expand(*target), [a], seed=seed)
    minus = tuple(-1 if i >= len(target) - len(a) and target[i] == a[i - len(target) + len(a)]
                  else s for i, s in enumerate(target))
    check_op(lambda x: np.broadcast_to(x, target), lambda x: x.expand(minus), [a], seed=seed,
             grad=False)


@given(data=st.data(), shape=SMALL, seed=SEEDS)
def test_unsqueeze(data, shape, seed):
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_op(lambda x: np.expand_dims(x, d), lambda x: x.unsqueeze(d), [shape], seed=seed)


@given(shape=shapes(min_dims=0, max_dims=4, min_side=1, max_side=2), seed=SEEDS,
       data=st.data())
def test_squeeze(shape, seed, data):
    check_op(np.squeeze, lambda x: x.squeeze(), [shape], seed=seed)
    if shape:
        d = data.draw(st.integers(-len(shape), len(shape) - 1))
        ref = (lambda x: np.squeeze(x, d)) if shape[d] == 1 else (lambda x: x)
        check_op(ref, lambda x: x.squeeze(d), [shape], seed=seed, direct=shape[d] == 1)


@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_flatten(data, shape, seed):
    nd = len(shape)
    s = data.draw(st.integers(0, nd - 1))
    e = data.draw(st.integers(s, nd - 1))
    new = shape[:s] + (-1,) + shape[e + 1:]
    check_op(lambda x: x.reshape(new), lambda x: x.flatten(s, e), [shape], seed=seed,
             direct=(s != e))
    check_op(lambda x: x.reshape(-1), lambda x: x.flatten(), [shape], seed=seed, grad=False)


# -- __getitem__ --------------------------------------------------------------------------

@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=4), seed=SEEDS)
def test_getitem_basic(data, shape, seed):
    # slices (any step, negative too), ints, None and Ellipsis
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check_op(lambda x: x[index], lambda x: x[index], [shape], seed=seed)


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=4), seed=SEEDS)
def test_getitem_integer_array_gather(data, shape, seed):
    # repeated indices must scatter-ADD in the backward
    index = data.draw(hnp.integer_array_indices(
        shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5)))
    check_op(lambda x: x[index], lambda x: x[index], [shape], seed=seed)


def test_getitem_repeats_accumulate():
    x = Tensor(np.arange(4.0), requires_grad=True)
    x[np.array([0, 2, 2, 2, -1])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 3, 1])
    y = Tensor(np.zeros((3, 2)), requires_grad=True)
    y[tgx.tensor([1, 1]), 0].sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [[0, 0], [2, 0], [0, 0]])
    z = Tensor(np.zeros((3, 2)), requires_grad=True)
    z[[0, 0, 2]].sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), [[2, 2], [0, 0], [1, 1]])


@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, max_side=4), seed=SEEDS)
def test_getitem_bool_mask(data, shape, seed):
    mask = data.draw(hnp.arrays(np.bool_, shape))
    check_op(lambda x: x[mask], lambda x: x[mask], [shape], seed=seed)
    check_op(lambda x: x[mask], lambda x: x[Tensor(mask)], [shape], seed=seed, grad=False)


def test_getitem_mixed():
    idx = (Ellipsis, np.array([2, 0, 2]), slice(None, None, -1))
    check_op(lambda x: x[idx], lambda x: x[idx], [(2, 3, 4)])
    check_op(lambda x: x[1, None, ::2], lambda x: x[1, None, ::2], [(3, 5)])


# -- cat stack split chunk ----------------------------------------------------------------

@given(data=st.data(), base=SMALL_ND, seed=SEEDS)
def test_cat(data, base, seed):
    nd = len(base)
    dim = data.draw(st.integers(-nd, nd - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    shp = [base[:dim % nd] + (s,) + base[dim % nd + 1:] for s in sizes]
    fn = lambda *xs: tgx.cat(list(xs), dim=dim)  # noqa: E731
    check_op(lambda *xs: np.concatenate(xs, axis=dim), fn, shp, seed=seed)


@given(data=st.data(), base=SMALL, seed=SEEDS)
def test_stack(data, base, seed):
    n = data.draw(st.integers(1, 3))
    dim = data.draw(st.integers(-len(base) - 1, len(base)))
    check_op(lambda *xs: np.stack(xs, axis=dim), lambda *xs: tgx.stack(xs, dim=dim),
             [base] * n, seed=seed)


@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_split_and_chunk(data, shape, seed):
    nd = len(shape)
    dim = data.draw(st.integers(0, nd - 1))
    n = shape[dim]
    size = data.draw(st.integers(1, n))
    bounds = list(range(size, n, size))
    check_op(lambda x: tuple(np.split(x, bounds, axis=dim)), lambda x: x.split(size, dim),
             [shape], seed=seed)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=2)))
    sections = [b - a for a, b in zip([0] + cuts, cuts + [n], strict=True)]
    check_op(lambda x: tuple(np.split(x, cuts, axis=dim)), lambda x: x.split(sections, dim),
             [shape], seed=seed)
    chunks = data.draw(st.integers(1, n))
    step = -(-n // chunks)
    check_op(lambda x: tuple(np.split(x, list(range(step, n, step)), axis=dim)),
             lambda x: x.chunk(chunks, dim), [shape], seed=seed)


def test_split_gradient_of_one_piece():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    a, b = x.split([1, 2], dim=1)
    (b * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 2], [0, 2, 2]])


# -- where, masked_fill, triu/tril --------------------------------------------------------

@given(shapes=broadcastable_shapes(3, max_dims=3, max_side=4), seed=SEEDS, data=st.data())
def test_where(shapes, seed, data):
    c_shape, a_shape, b_shape = shapes
    cond = data.draw(hnp.arrays(np.bool_, c_shape))
    check_op(lambda a, b: np.where(cond, a, b), lambda a, b: tgx.where(Tensor(cond), a, b),
             [a_shape, b_shape], seed=seed)


def test_where_with_scalar_branch():
    cond = np.array([True, False, True])
    check_op(lambda a: np.where(cond, a, 0.0), lambda a: tgx.where(cond, a, 0.0), [(3,)])
    check_op(lambda a: np.where(cond, 1.0, a), lambda a: F.where(cond, 1.0, a), [(2, 3)])


@given(shape=SMALL_ND, seed=SEEDS, data=st.data(),
       value=st.sampled_from([0.0, -1e9, 3.5, -np.inf]))
def test_masked_fill(shape, seed, data, value):
    # a mask broadcasts TO the input (the output keeps the input's shape, as in PyTorch)
    mshape = data.draw(hnp.broadcastable_shapes(shape, max_dims=len(shape)).filter(
        lambda s: np.broadcast_shapes(s, shape) == tuple(shape)))
    mask = data.draw(hnp.arrays(np.bool_, mshape))
    check_op(lambda x: np.where(mask, value, x), lambda x: x.masked_fill(Tensor(mask), value),
             [shape], seed=seed, grad=abs(value) < 1e6)
    if not np.isfinite(value):
        # filled positions are constants: their gradient is exactly zero
        x = Tensor(make_inputs([shape], seed)[0], requires_grad=True)
        x.masked_fill(mask, value).backward(np.ones(shape))
        np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(~mask, shape) * 1.0)


@pytest.mark.parametrize("upper", [True, False])
@given(shape=shapes(min_dims=2, max_dims=3, max_side=4), seed=SEEDS,
       diagonal=st.integers(-3, 3))
def test_triu_tril(upper, shape, seed, diagonal):
    np_fn = np.triu if upper else np.tril
    check_op(lambda x: np_fn(x, diagonal),
             lambda x: x.triu(diagonal) if upper else x.tril(diagonal), [shape], seed=seed)


# ------------------------------------------------------------------------------------------
# matmul
# ------------------------------------------------------------------------------------------

@given(pair=matmul_shapes(max_batch_dims=2, max_side=4), seed=SEEDS)
def test_matmul(pair, seed):
    check_op(np.matmul, lambda a, b: a @ b, list(pair), seed=seed)


@pytest.mark.parametrize("a,b", [((3, 4), (4,)), ((4,), (4, 2)), ((4,), (4,)),
                                 ((2, 3, 5, 4), (4, 3)), ((5, 4), (2, 3, 4, 3)),
                                 ((2, 1, 5, 4), (3, 4, 2)), ((4,), (2, 4, 3)),
                                 ((2, 3, 4), (4,))])
def test_matmul_fixed_signatures(a, b):
    check_op(np.matmul, lambda x, y: x @ y, [a, b])
    check_op(np.matmul, tgx.matmul, [a, b], grad=False)
    check_op(np.matmul, lambda x, y: x.matmul(y), [a, b], grad=False)


def test_matmul_with_numpy_operand():
    w = make_inputs([(4, 2)], 5)[0]
    check_op(lambda x: x @ w, lambda x: x @ w, [(3, 4)])
    check_op(lambda x: w.T @ x, lambda x: w.T @ x, [(4, 3)])


# ------------------------------------------------------------------------------------------
# embedding
# ------------------------------------------------------------------------------------------

@given(vocab=st.integers(1, 6), dim=st.integers(1, 3), seed=SEEDS, data=st.data())
def test_embedding(vocab, dim, seed, data):
    ids = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=5),
                               elements=st.integers(0, vocab - 1)))
    check_op(lambda w: w[ids], lambda w: F.embedding(Tensor(ids), w), [(vocab, dim)],
             seed=seed)


def test_embedding_repeated_ids_scatter_add():
    w = Tensor(np.zeros((4, 2)), requires_grad=True)
    ids = tgx.tensor([[1, 3, 1], [1, 0, 3]])
    g = np.arange(12.0).reshape(2, 3, 2)
    F.embedding(ids, w).backward(g)
    expected = np.zeros((4, 2))
    np.add.at(expected, ids.numpy(), g)
    np.testing.assert_array_equal(w.grad.numpy(), expected)
    assert w.grad.numpy()[2].tolist() == [0, 0]


@pytest.mark.parametrize("vocab", [5, 2000])  # the dense one-hot path and the np.add.at path
def test_embedding_padding_idx_gets_no_gradient(vocab):
    rng = np.random.default_rng(0)
    w = Tensor(rng.standard_normal((vocab, 3)), requires_grad=True)
    ids = np.array([[0, 2, 2], [4, 0, 1]])
    out = F.embedding(ids, w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[ids])
    g = rng.standard_normal((2, 3, 3))
    out.backward(g)
    expected = np.zeros((vocab, 3))
    np.add.at(expected, ids, g)
    expected[2] = 0
    np.testing.assert_allclose(w.grad.numpy(), expected)
    # the other rows: gradcheck on a function that never looks up the padding row's gradient
    check_direct_backward(lambda t: F.embedding(ids[ids != 2], t, padding_idx=2),
                          [w.detach().numpy()[:5].copy()])


# ------------------------------------------------------------------------------------------
# fused ops
# ------------------------------------------------------------------------------------------

@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_softmax(data, shape, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op(lambda x: np_softmax(x, dim), lambda x: F.softmax(x, dim=dim), [shape],
             seed=seed, low=-5, high=5)
    check_op(lambda x: np_softmax(x, dim), lambda x: x.softmax(dim), [shape], seed=seed,
             grad=False)


@given(data=st.data(), shape=SMALL_ND, seed=SEEDS)
def test_log_softmax(data, shape, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op(lambda x: np_log_softmax(x, dim), lambda x: F.log_softmax(x, dim=dim), [shape],
             seed=seed, low=-5, high=5)
    check_op(lambda x: np_log_softmax(x, dim), lambda x: x.log_softmax(dim), [shape],
             seed=seed, grad=False)


def np_layer_norm(x, n, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - n, x.ndim))
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=3, min_side=2, max_side=4),
       seed=SEEDS)
def test_layer_norm(affine, data, shape, seed):
    n = data.draw(st.integers(1, len(shape)))            # multi-dim normalized_shape too
    ns = shape[len(shape) - n:]
    shp = [shape] + [ns] * {"none": 0, "weight": 1, "bias": 1, "both": 2}[affine]

    def tgx_fn(x, *p):
        w = p[0] if affine in ("weight", "both") else None
        b = p[-1] if affine in ("bias", "both") else None
        return F.layer_norm(x, ns, w, b)

    def np_fn(x, *p):
        w = p[0] if affine in ("weight", "both") else None
        b = p[-1] if affine in ("bias", "both") else None
        return np_layer_norm(x, n, w, b)

    check_op(np_fn, tgx_fn, shp, seed=seed, atol=1e-6, rtol=1e-6)


def np_cross_entropy(x, t, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy for (N, C) logits and class-index targets."""
    logp = np_log_softmax(x, 1)
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    nll = -logp[np.arange(len(t)), safe]
    nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
    nll = nll * keep
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    return nll.sum() / keep.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@given(n=st.integers(1, 5), c=st.integers(2, 5), seed=SEEDS, data=st.data())
def test_cross_entropy(reduction, smoothing, n, c, seed, data):
    t = np.array(data.draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)))
    if data.draw(st.booleans()) and n > 1:
        t[data.draw(st.integers(0, n - 1))] = -100          # one ignored row
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check_op(lambda x: np_cross_entropy(x, t, **kw),
             lambda x: F.cross_entropy(x, Tensor(t), **kw), [(n, c)], seed=seed, low=-3, high=3)


def test_cross_entropy_custom_ignore_index():
    t = np.array([1, 3, 0, 3])
    kw = dict(ignore_index=3, label_smoothing=0.2)
    check_op(lambda x: np_cross_entropy(x, t, **kw),
             lambda x: F.cross_entropy(x, t, **kw), [(4, 4)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_n_c_d_layout(reduction):
    # (N, C, d1, d2) logits with (N, d1, d2) targets = class dim moved last, then (N*d1*d2, C)
    rng = np.random.default_rng(1)
    t = rng.integers(0, 4, size=(2, 3, 2))
    t[0, 1, 1] = -100

    def np_fn(x):
        flat = np.moveaxis(x, 1, -1).reshape(-1, 4)
        out = np_cross_entropy(flat, t.reshape(-1), reduction=reduction, label_smoothing=0.1)
        return out.reshape(t.shape) if reduction == "none" else out

    check_op(np_fn, lambda x: F.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1),
             [(2, 4, 3, 2)], direct=False)


def test_cross_entropy_single_sample_and_all_ignored():
    check_op(lambda x: np_cross_entropy(x[None], np.array([2])),
             lambda x: F.cross_entropy(x, tgx.tensor(2)), [(4,)], direct=False)
    x = Tensor(np.zeros((2, 3)), requires_grad=True)
    loss = F.cross_entropy(x, np.array([-100, -100]))
    assert np.isnan(loss.item())  # the mean over zero rows is NaN, as torch's
    loss.backward()
    assert np.all(x.grad.numpy() == 0)


@pytest.mark.parametrize("p", [0.25, 0.5])
@given(shape=SMALL_ND, seed=SEEDS)
def test_dropout(p, shape, seed):
    x = make_inputs([shape], seed, low=0.5, high=2.0)[0]
    tgx.manual_seed(seed)
    y = F.dropout(Tensor(x), p=p).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - p))

    def fn(t):
        tgx.manual_seed(seed)    # the same mask in every call gradcheck makes
        return F.dropout(t, p=p)

    tgx.manual_seed(seed)
    check_op(lambda a: np.where(kept, a / (1 - p), 0.0), fn, [shape], seed=seed)


def test_dropout_is_identity_when_not_training_and_p0_p1():
    x = tgx.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)


def test_dropout_masks_drop_each_element_with_probability_p():
    """The masks come from 32 random bits per element: the drop rate is p (within binomial
    noise) from tiny p to p near 1, the kept scale is exactly 1/(1-p) in the input's dtype,
    and the same generator state gives the same mask."""
    from tinygradx.ops.fused import dropout_scale
    n = 1 << 20
    for p in (1e-12, 0.001, 0.1, 0.5, 0.9, 1 - 1e-12):
        for dtype in (np.float32, np.float64):
            scale = dropout_scale(np.random.default_rng(1), (n,), p, dtype)
            assert scale.dtype == dtype and scale.shape == (n,)
            dropped = float((scale == 0).mean())
            assert abs(dropped - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-6, (p, dropped)
            assert np.all(scale[scale != 0] == dtype(1.0 / (1.0 - p)))
    a = dropout_scale(np.random.default_rng(7), (3, 5), 0.5, np.float32)
    assert np.array_equal(a, dropout_scale(np.random.default_rng(7), (3, 5), 0.5, np.float32))
    assert dropout_scale(np.random.default_rng(0), (0, 4), 0.5, np.float32).shape == (0, 4)
    assert dropout_scale(np.random.default_rng(0), (), 0.5, np.float64).shape == ()


def test_dropout_statistics():
    tgx.manual_seed(0)
    y = F.dropout(tgx.ones(200, 500), p=0.3).numpy()
    assert abs((y == 0).mean() - 0.3) < 0.01
    assert abs(y.mean() - 1.0) < 0.02
    assert F.dropout(tgx.ones(3), p=0.3).dtype == np.float32
