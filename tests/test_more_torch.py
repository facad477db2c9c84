"""More of PyTorch's names, beyond the op-info table (tests/opinfo.py holds every op): the
predicates allclose and equal, the argument forms torch's functions take and the one-line
errors of the new ops, checked against torch where it is installed."""
import numpy as np
import pytest

import tinygradx as tgx

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# -- allclose, equal -------------------------------------------------------------------------

PAIRS = [
    ([1.0, 2.0], [1.0, 2.0 + 1e-9]),
    ([1.0, 2.0], [1.0, 2.1]),
    ([1.0, np.nan], [1.0, np.nan]),
    ([[1.0, 2.0]], [1.0, 2.0]),                        # broadcast
    ([np.inf, -np.inf], [np.inf, -np.inf]),
    ([], []),
]


@needs_torch
@pytest.mark.parametrize("a,b", PAIRS)
def test_allclose_and_equal_as_torch(a, b):
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1, "atol": 0.0}):
        mine = tgx.allclose(tgx.tensor(a), tgx.tensor(b), **kw)
        assert mine is torch.allclose(torch.tensor(a), torch.tensor(b), **kw), kw
    assert tgx.equal(tgx.tensor(a), tgx.tensor(b)) is torch.equal(torch.tensor(a),
                                                                   torch.tensor(b))


@needs_torch
def test_equal_compares_values_across_dtypes_as_torch():
    for a, b in (([1, 2], [1.0, 2.0]), ([1, 2], [[1, 2]]), ([True, False], [1, 0])):
        assert tgx.equal(tgx.tensor(a), tgx.tensor(b)) is torch.equal(torch.tensor(a),
                                                                       torch.tensor(b))


def test_allclose_promotes_where_torch_refuses():
    """A float32/float64 pair compares in the promoted dtype (torch refuses the mix)."""
    assert tgx.allclose(tgx.tensor([1.0, 2.0]), tgx.tensor([1.0, 2.0], dtype=tgx.float64))
    with pytest.raises(TypeError, match="allclose: expected a Tensor"):
        tgx.allclose([1.0], tgx.tensor([1.0]))


# -- the arguments torch's forms take --------------------------------------------------------

@needs_torch
def test_std_var_argument_forms_as_torch():
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    x, t = tgx.tensor(a), torch.tensor(a)
    for call in (lambda m, v: m.std(v, False), lambda m, v: m.std(v, 1, False, True),
                 lambda m, v: m.std(v, dim=0, correction=0), lambda m, v: v.std(False),
                 lambda m, v: v.var(False), lambda m, v: m.var(v, (0, 1), correction=2),
                 lambda m, v: v.std(1, correction=0, keepdim=True)):
        np.testing.assert_allclose(call(tgx, x).numpy(), call(torch, t).numpy(), rtol=1e-12)


@needs_torch
def test_linspace_with_an_integer_dtype_is_exact():
    """Where torch's floating-point steps land just below an integer, torch truncates one
    less than the exact value; here the values are exact (docs/design.md)."""
    assert tgx.linspace(-3, 1, 7, dtype=tgx.int64).tolist() == [-3, -2, -1, -1, 0, 0, 1]
    assert torch.linspace(-3, 1, 7, dtype=torch.int64).tolist() == [-3, -2, -1, 0, 0, 0, 1]
    for args in ((0, 10, 5), (5, -5, 9), (-7, 3, 4), (2, 11, 8), (0, -1.25, 6), (0, 1, 1)):
        assert tgx.linspace(*args, dtype=tgx.int64).tolist() == torch.linspace(
            *args, dtype=torch.int64).tolist(), args


def test_linspace_takes_0d_tensors_and_requires_grad():
    x = tgx.linspace(tgx.tensor(0.0), tgx.tensor(1.0), 3, requires_grad=True)
    assert x.tolist() == [0.0, 0.5, 1.0] and x.requires_grad and x.is_leaf
    assert tgx.logspace(0, 2, 3, base=2, dtype=tgx.float64).tolist() == [1.0, 2.0, 4.0]


def test_norm_gradient_of_a_zero_vector_is_zero_at_every_order():
    x = tgx.zeros(2, 3, dtype=tgx.float64, requires_grad=True)
    for p in (2, "fro", 3, 1, float("inf")):
        (g,) = tgx.grad(x.norm(p, dim=1).sum(), [x], create_graph=True)
        assert np.array_equal(g.numpy(), np.zeros((2, 3))), p
    y = tgx.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=tgx.float64, requires_grad=True)
    (g,) = tgx.grad(y.norm(dim=1).sum(), [y], create_graph=True)
    np.testing.assert_allclose(g.numpy(), [[0, 0], [0.6, 0.8]])
    assert tgx.gradgradcheck(lambda t: t.norm(dim=1), (tgx.tensor(
        [[1.0, -2.0], [0.5, 0.25]], dtype=tgx.float64, requires_grad=True),))


# -- views and gradients of the movement ops -------------------------------------------------

def test_unbind_pieces_share_one_gradient():
    x = tgx.randn(3, 4, requires_grad=True)
    a, b, c = x.unbind(0)
    (a * 1 + b * 2 + c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))


def test_views_share_memory_as_torch():
    x = tgx.zeros(2, 3)
    x.narrow(1, 1, 2).numpy()[...] = 1.0
    x.select(0, 1).numpy()[0] = 5.0
    x.t().numpy()[2, 0] = 7.0
    assert x.tolist() == [[0.0, 1.0, 7.0], [5.0, 1.0, 1.0]]
    v = tgx.zeros(3)
    assert v.t().shape == (3,) and tgx.tensor(2.0).t().shape == ()


# -- one-line errors that name the op --------------------------------------------------------

ERRORS = [
    (lambda: tgx.zeros(2, 3, 4).t(), tgx.OpError, r"t: expects a tensor with at most 2 dims"),
    (lambda: tgx.zeros(2, 3).select(1, 3), tgx.OpError,
     r"select: index 3 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).select(1, 1.0), tgx.OpError, r"select: index must be an int"),
    (lambda: tgx.tensor(1.0).select(0, 0), tgx.OpError,
     r"select: needs a tensor with at least 1 dim"),
    (lambda: tgx.zeros(2, 3).narrow(1, 2, 2), tgx.OpError,
     r"narrow: start 2 and length 2 do not fit in dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, -4, 1), tgx.OpError,
     r"narrow: start -4 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, 0, -1), tgx.OpError, r"narrow: start 0 and length -1"),
    (lambda: tgx.tensor(1.0).unbind(), tgx.OpError, r"unbind: needs a tensor with at least"),
    (lambda: tgx.zeros(2, 3).unbind(2), tgx.OpError, r"unbind: dim 2 is out of range"),
    (lambda: tgx.zeros(2, 3).movedim((0, 0), (1, 0)), tgx.OpError,
     r"movedim: repeated dim in source \(0, 0\)"),
    (lambda: tgx.zeros(2, 3).movedim((0, 1), (1,)), tgx.OpError,
     r"movedim: source \(0, 1\) has 2 dims but destination \(1,\) has 1"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([2])), tgx.OpError,
     r"index_select: index \[2\] is out of range for dim 0 of size 2"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([-1])), tgx.OpError,
     r"index_select: .*negative indices are refused"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([[0]])), tgx.OpError,
     r"index_select: index must be 1-d"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([0.0])), tgx.OpError,
     r"index_select: index must be an integer tensor"),
    (lambda: tgx.tensor([1, 2]).norm(), TypeError, r"norm: needs a floating-point tensor"),
    (lambda: tgx.zeros(2, 2).norm("nuc"), ValueError, r"norm: p must be.*singular values"),
    (lambda: tgx.zeros(2, 2).norm(0.5), ValueError, r"norm: p must be 'fro', inf, -inf or"),
    (lambda: tgx.zeros(2, 2, 2).norm("fro", (0, 1, 2)), tgx.OpError,
     r"norm: p='fro' takes one dim or two"),
    (lambda: tgx.zeros(2, 2).norm(dim=2), tgx.OpError, r"norm: dim 2 is out of range"),
    (lambda: tgx.outer(tgx.zeros(2, 2), tgx.zeros(2)), tgx.OpError,
     r"outer: expects two 1-d tensors, got shapes \(2, 2\) and \(2,\)"),
    (lambda: tgx.addmm(tgx.zeros(3), tgx.zeros(2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: mat1 and mat2 must be matrices that chain"),
    (lambda: tgx.addmm(tgx.zeros(2, 1, 3), tgx.zeros(2, 2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: input of shape \(2, 1, 3\) does not broadcast"),
    (lambda: tgx.addmm(tgx.zeros(3, dtype=tgx.long), tgx.zeros(2, 2), tgx.zeros(2, 3)),
     TypeError, r"addmm: input, mat1 and mat2 must have one dtype"),
    (lambda: tgx.linspace(0, 1, -1), ValueError, r"linspace: steps must be a non-negative"),
    (lambda: tgx.logspace(tgx.zeros(2), 1, 3), ValueError, r"logspace: start must be a number"),
    (lambda: tgx.tensor([True]).neg(), tgx.OpError, r"neg: .*`~`"),
    (lambda: tgx.reshape([1, 2], (2,)), TypeError, r"reshape: expected a Tensor"),
]


@pytest.mark.parametrize("call,kind,pattern", ERRORS, ids=[p[:40] for _, _, p in ERRORS])
def test_errors_name_the_op(call, kind, pattern):
    with pytest.raises(kind, match=pattern) as e:
        call()
    assert "\n" not in str(e.value)
