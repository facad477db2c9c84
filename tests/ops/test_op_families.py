"""The op families of tensor/more_math.py swept against torch through the differential harness
(tests/oracle.py): every function over the dtypes and operand kinds torch users pass (float32,
float64, float16, int64, bool tensors, 0-d and empty ones, Python numbers), held to torch's
values, dtypes and shapes, or both refusing (ours with one clear line).
"""
import itertools

import numpy as np
import pytest

from oracle import requires_torch, same

UNARY = ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin",
         "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "sinc", "deg2rad", "rad2deg",
         "erfc", "erfinv", "lgamma", "digamma", "logit", "nan_to_num", "frexp", "frac", "fix",
         "sgn", "signbit", "positive", "absolute", "angle", "isposinf", "isneginf", "isreal")
BINARY = ("atan2", "arctan2", "hypot", "xlogy", "copysign", "fmax", "fmin", "nextafter",
          "heaviside", "ldexp", "float_power", "logaddexp2")
DATA = {"float32": [0.25, -0.5, 1.5, 0.0], "float64": [0.25, -0.5, 1.5, 0.0],
        "float16": [0.25, -0.5, 1.5, 0.0], "int64": [1, -2, 0, 3], "bool": [True, False, True,
                                                                            False]}


def _make(m, kind, zero_d=False):
    dtype = getattr(m, kind)
    data = DATA[kind]
    return m.tensor(data[0] if zero_d else data, dtype=dtype)


@requires_torch
@pytest.mark.parametrize("name,kind", list(itertools.product(UNARY, DATA)))
def test_unary_dtypes_like_torch(name, kind):
    same(lambda m: getattr(m, name)(_make(m, kind)), atol=1e-3, rtol=1e-3)
    same(lambda m: getattr(_make(m, kind, zero_d=True), name)(), atol=1e-3, rtol=1e-3)


OPERANDS = ("float32", "float64", "int64", "bool", "0d_float64", "int", "float")


def _operand(m, kind):
    if kind == "int":
        return 2
    if kind == "float":
        return 0.75
    if kind.startswith("0d_"):
        return _make(m, kind[3:], zero_d=True)
    return _make(m, kind)


@requires_torch
@pytest.mark.parametrize("name,a,b", [(n, a, b) for n in BINARY for a in OPERANDS[:5]
                                      for b in OPERANDS])
def test_binary_operands_like_torch(name, a, b):
    same(lambda m: getattr(m, name)(_operand(m, a), _operand(m, b)), atol=1e-3, rtol=1e-3)


@requires_torch
@pytest.mark.parametrize("name", ["heaviside", "nextafter"])
def test_backward_like_torch(name):
    """heaviside's backward raises (torch has no derivative), nextafter's passes g on."""
    def call(m):
        x = m.tensor([0.5, -1.0, 0.0], requires_grad=True)
        getattr(m, name)(x, m.tensor([0.5, 0.5, 0.5])).sum().backward()
    same(call)


@requires_torch
def test_polygamma_and_mvlgamma_arguments_like_torch():
    same(lambda m: m.polygamma(2, m.tensor([0.5, 3.0])))
    same(lambda m: m.tensor([0.5, 3.0]).polygamma(1))
    same(lambda m: m.tensor([2.5, 3.0]).mvlgamma(2))
    same(lambda m: m.tensor([0.2, 3.0]).mvlgamma(2))     # below (p - 1)/2: both refuse
    same(lambda m: m.tensor([1, 3]).mvlgamma(1))
    same(lambda m: m.xlogy(2, m.tensor([0.5, 3.0])))


def test_digamma_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    import tinygradx as tgx
    x = np.array([-2.5, -0.3, 1e-8, 0.5, 3.7, 12.5, 40.0, 1e10])
    for n in range(4):
        got = (tgx.tensor(x).digamma() if n == 0 else tgx.tensor(x).polygamma(n)).numpy()
        want = np.array([float(mpmath.polygamma(n, v)) for v in x])
        np.testing.assert_allclose(got, want, rtol=1e-13)
    got = tgx.tensor(np.array([-0.99, 0.0, 0.3, 0.999999])).erfinv().numpy()
    want = np.array([float(mpmath.erfinv(v)) for v in (-0.99, 0.0, 0.3, 0.999999)])
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_rrelu_training_draws_slopes_between_lower_and_upper():
    import tinygradx as tgx
    import tinygradx.functional as F
    x = tgx.full((2000,), -1.0, dtype=tgx.float64, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), slopes)        # d(x * slope) = slope
    z = tgx.tensor([2.0, -2.0])
    assert F.rrelu_(z, training=True) is z and z[0].item() == 2.0 and -0.7 < z[1].item() < -0.2


@requires_torch
def test_activation_refusals_like_torch():
    same(lambda m: m.nn.functional.glu(m.ones(3)))
    same(lambda m: m.nn.functional.softshrink(m.ones(3), -1.0))
    same(lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(2)))
    same(lambda m: m.nn.functional.hardsigmoid(m.tensor([1, 2])))
    same(lambda m: m.nn.functional.softsign(m.tensor([1, 2])))
    same(lambda m: m.nn.functional.elu(m.ones(2, requires_grad=True), inplace=True))


SCATTER_CALLS = {
    "gather_negative": lambda m: m.arange(4.0).gather(0, m.tensor([-1])),
    "scatter_negative": lambda m: m.arange(4.0).scatter(0, m.tensor([-1]), m.tensor([9.0])),
    "scatter_add_negative": lambda m: m.arange(4.0).scatter_add(0, m.tensor([-1]),
                                                                 m.tensor([9.0])),
    "index_add_negative": lambda m: m.arange(4.0).index_add(0, m.tensor([-1]), m.tensor([9.0])),
    "index_copy_negative": lambda m: m.arange(4.0).index_copy(0, m.tensor([-1]),
                                                               m.tensor([9.0])),
    "take_negative": lambda m: m.arange(4.0).take(m.tensor([-1, 0])),
    "take_out_of_range": lambda m: m.arange(4.0).take(m.tensor([4])),
    "put_negative": lambda m: m.arange(4.0).put(m.tensor([-1]), m.tensor([9.0])),
    "index_fill_negative": lambda m: m.arange(4.0).index_fill(0, m.tensor([-1]), 9.0),
    "scatter_reduce_dtype": lambda m: m.arange(4.0).scatter_reduce(
        0, m.tensor([1]), m.tensor([2]), "sum"),
    "scatter_reduce_bad_reduce": lambda m: m.arange(4.0).scatter_reduce(
        0, m.tensor([1]), m.tensor([2.0]), "max"),
    "scatter_multiply": lambda m: m.arange(4).scatter(0, m.tensor([1, 1]), m.tensor([2, 3]),
                                                      reduce="multiply"),
    "scatter_add_value": lambda m: m.arange(4).scatter(0, m.tensor([1, 1]), 5, reduce="add"),
    "scatter_bad_reduce": lambda m: m.arange(4).scatter(0, m.tensor([1]), m.tensor([2]),
                                                        reduce="mean"),
    "index_reduce_sum": lambda m: m.ones(3).index_reduce(0, m.tensor([0]), m.tensor([2.0]),
                                                         "sum"),
    "index_reduce_int_mean": lambda m: m.tensor([5, 7]).index_reduce(
        0, m.tensor([0, 0]), m.tensor([-2, 0]), "mean"),
    "index_add_alpha": lambda m: m.ones(2, 3).index_add(1, m.tensor([2, 0, 2]),
                                                        m.ones(2, 3) * 2, alpha=0.5),
    "index_add_shape": lambda m: m.ones(2, 3).index_add(1, m.tensor([2, 0]), m.ones(3, 2)),
    "masked_scatter_short": lambda m: m.zeros(4).masked_scatter(m.tensor([True] * 4),
                                                                m.ones(3)),
    "masked_scatter_int_mask": lambda m: m.zeros(4).masked_scatter(m.tensor([1, 0, 1, 0]),
                                                                   m.ones(3)),
    "take_along_dim_broadcast": lambda m: m.arange(6.0).reshape(2, 3).take_along_dim(
        m.tensor([[0], [2]]), 1),
    "index_put_accumulate": lambda m: m.zeros(3).index_put((m.tensor([0, 0, 2]),),
                                                           m.tensor(1.5), accumulate=True),
    "scatter_reduce_backward": lambda m: _backward(m, lambda x: x.scatter_reduce(
        0, m.tensor([0, 0, 1]), x * 2, "prod")),
    "scatter_with_reduce_backward": lambda m: _backward(m, lambda x: x.scatter(
        0, m.tensor([0, 0, 1]), x * 2, reduce="add")),
}


def _backward(m, fn):
    x = m.tensor([0.5, 2.0, 3.0], requires_grad=True)
    fn(x).sum().backward()
    return x.grad


@requires_torch
@pytest.mark.parametrize("name", list(SCATTER_CALLS))
def test_scatter_family_like_torch(name):
    same(SCATTER_CALLS[name])


MATRIX_CALLS = {
    "dist_p0": lambda m: m.tensor([1.0, 2.0, 3.0]).dist(m.tensor([1.0, 0.0, 5.0]), 0),
    "cross_default_dim": lambda m: m.cross(m.ones(3, 3), m.arange(9.0).reshape(3, 3)),
    "cross_ndim": lambda m: m.cross(m.ones(2, 3), m.ones(3)),
    "diag_3d": lambda m: m.ones(2, 2, 2).diag(),
    "trace_1d": lambda m: m.ones(3).trace(),
    "fill_diagonal_3d_unequal": lambda m: m.ones(2, 3, 3).fill_diagonal_(1.0),
    "fill_diagonal_wrap": lambda m: m.ones(7, 3).fill_diagonal_(5.0, wrap=True),
    "hsplit_uneven": lambda m: m.ones(2, 3).hsplit(2),
    "tensor_split_tensor": lambda m: m.arange(7).tensor_split(m.tensor([1, 5])),
    "rot90_same_dims": lambda m: m.ones(2, 2).rot90(1, (0, 0)),
    "gcd_float": lambda m: m.ones(2).gcd(m.ones(2)),
    "sum_to_size_bad": lambda m: m.ones(2, 3).sum_to_size(2),
    "combinations_r0": lambda m: m.combinations(m.tensor([1.0, 2.0]), 0),
    "meshgrid_xy": lambda m: m.meshgrid(m.tensor([1, 2, 3]), m.tensor([4, 5]), indexing="xy"),
    "broadcast_shapes": lambda m: m.broadcast_shapes((2, 1), (3,), 1),
    "broadcast_shapes_bad": lambda m: m.broadcast_shapes((2,), (3,)),
    "atleast_3d_list": lambda m: m.atleast_3d([m.ones(2), m.ones(2, 2)]),
    "block_diag_3d": lambda m: m.block_diag(m.ones(2, 2, 2)),
    "unravel_out_of_range": lambda m: m.unravel_index(m.tensor([12]), (3, 4)),
    "tril_indices_offset": lambda m: m.tril_indices(3, 4, -1),
    "vander_bool": lambda m: m.vander(m.tensor([True, False])),
    "kron_int_float": lambda m: m.kron(m.tensor([1, 2]), m.tensor([0.5, 1.5])),
    "cdist_p0": lambda m: m.cdist(m.ones(2, 3), m.zeros(1, 3), 0.0),
    "pdist_p1": lambda m: m.pdist(m.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]), 1),
    "pdist_one_row": lambda m: m.pdist(m.ones(1, 3)),
    "pdist_no_rows": lambda m: m.pdist(m.ones(0, 3)),
    "pdist_p_negative": lambda m: m.pdist(m.ones(3, 2), -1.0),
    "pdist_int": lambda m: m.pdist(m.ones(3, 2, dtype=m.int64)),
    "pdist_1d": lambda m: m.pdist(m.ones(3)),
    "pdist_functional": lambda m: m.nn.functional.pdist(m.tensor([[0.0, 1.0], [2.0, 5.0]]), 3),
    "cdist_p_negative": lambda m: m.cdist(m.ones(2, 3), m.zeros(1, 3), -2.0),
    "cdist_int": lambda m: m.cdist(m.ones(2, 3, dtype=m.int64), m.ones(1, 3, dtype=m.int64)),
}


@requires_torch
@pytest.mark.parametrize("name", list(MATRIX_CALLS))
def test_matrix_family_like_torch(name):
    same(MATRIX_CALLS[name])
