"""unbroadcast(grad, shape): the one place broadcasting is undone (MyGrad's reduce_broadcast)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinygradx as tgx
from tinygradx import Tensor, unbroadcast
from tinygradx.gradcheck.testing import broadcastable_shapes


def reference(grad, shape):
    """Sum over the leading axes numpy added, then over the axes that were size 1."""
    lead = grad.ndim - len(shape)
    out = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and out.shape[i] != 1)
    return out.sum(axis=axes, keepdims=True)


@given(shapes=broadcastable_shapes(2, min_dims=0, max_dims=5, max_side=4),
       seed=st.integers(0, 2**16))
def test_unbroadcast_returns_the_input_shape_and_sums_broadcast_axes(shapes, seed):
    full = np.broadcast_shapes(*shapes)
    grad = np.random.default_rng(seed).standard_normal(full)
    for shape in shapes:
        g = unbroadcast(np.broadcast_to(grad, full).copy(), shape)
        assert g.shape == tuple(shape)
        np.testing.assert_allclose(g, reference(grad, shape), rtol=1e-12, atol=1e-12)
        # the total is conserved: unbroadcast is the adjoint of broadcast_to
        np.testing.assert_allclose(g.sum(), grad.sum(), rtol=1e-10, atol=1e-10)


@given(shapes=broadcastable_shapes(2, max_dims=4, max_side=4), seed=st.integers(0, 2**16))
def test_unbroadcast_is_the_adjoint_of_broadcast_to(shapes, seed):
    # <broadcast_to(x), g> == <x, unbroadcast(g)> for all x and g
    full = np.broadcast_shapes(*shapes)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shapes[0])
    g = rng.standard_normal(full)
    lhs = np.sum(np.broadcast_to(x, full) * g)
    rhs = np.sum(x * unbroadcast(g, shapes[0]))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


@given(shapes=broadcastable_shapes(2, max_dims=4, max_side=4))
def test_engine_gradients_have_the_input_shapes(shapes):
    a, b = (Tensor(np.ones(s), requires_grad=True) for s in shapes)
    (a * b + a).sum().backward()
    assert a.grad.shape == tuple(shapes[0]) and b.grad.shape == tuple(shapes[1])
    full = np.broadcast_shapes(*shapes)
    # d/da sum(a*b + a) = (b + 1) summed over a's broadcast axes = its broadcast count * 2
    count = int(np.prod(full)) // max(int(np.prod(shapes[0])), 1)
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * count)


def test_scalar_target_is_the_total():
    g = np.arange(24.0).reshape(2, 3, 4)
    assert unbroadcast(g, ()).shape == ()
    assert unbroadcast(g, ()) == g.sum()


def test_hybrid_case():
    g = np.ones((5, 3, 4, 2))
    out = unbroadcast(g, (3, 1, 2))
    assert out.shape == (3, 1, 2)
    np.testing.assert_array_equal(out, np.full((3, 1, 2), 20.0))


def test_same_shape_is_returned_unchanged():
    g = np.ones((2, 3))
    assert unbroadcast(g, (2, 3)) is g


@pytest.mark.parametrize("grad_shape,shape", [((3,), (2, 3)), ((2, 3), (4, 3)), ((2, 3), (3, 3))])
def test_impossible_pairs_raise_a_clear_error(grad_shape, shape):
    with pytest.raises(tgx.OpError, match="unbroadcast"):
        unbroadcast(np.ones(grad_shape), shape)


@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
def test_dtype_is_kept(shape):
    g = np.ones((2,) + shape, dtype=np.float32)
    assert unbroadcast(g, shape).dtype == np.float32
