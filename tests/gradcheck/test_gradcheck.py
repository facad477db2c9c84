"""gradcheck itself: it passes on correct ops and FAILS on a wrong backward (a check that
cannot fail is no check), in full and fast mode, and refuses float32."""
import numpy as np
import pytest
from hypothesis import given

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Function, GradcheckError, Tensor
from tinygradx.gradcheck.testing import broadcastable_shapes, matmul_shapes, tensors


class Cube(Function):
    """The docstring example of Function: y = x**3, dy/dx = 3x**2."""

    def forward(self, x):
        self.save_for_backward(x)
        return x ** 3

    def backward(self, grad):
        (x,) = self.saved_tensors
        return 3 * x ** 2 * grad


class WrongCube(Cube):
    def backward(self, grad):
        (x,) = self.saved_tensors
        return 2 * x ** 2 * grad           # deliberately wrong: 2 instead of 3


class WrongSecondInput(Function):
    """a * b whose gradient for b is off by one element."""

    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, grad):
        gb = grad * self.a
        gb = gb.copy()
        gb.reshape(-1)[-1] += 0.5
        return grad * self.b, gb


def x64(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_passes_on_correct_ops(fast_mode):
    x, w = x64(2, 3, 4), x64(4, 4, seed=1)
    assert tgx.gradcheck(lambda a, b: F.softmax(a @ b, dim=-1), (x, w), fast_mode=fast_mode)
    assert tgx.gradcheck(lambda a: F.layer_norm(a, (4,)), (x,), fast_mode=fast_mode)
    assert tgx.gradcheck(Cube.apply, (x,), fast_mode=fast_mode)


def test_passes_on_several_outputs_and_unused_inputs():
    x, y = x64(3), x64(3, seed=1)
    assert tgx.gradcheck(lambda a, b: (a * 2, a.exp()), (x, y))
    assert tgx.gradcheck(lambda a, b: (a * 2, a.exp()), (x, y), fast_mode=True)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_fails_on_a_wrong_backward(fast_mode):
    x = x64(2, 3)
    with pytest.raises(GradcheckError) as err:
        tgx.gradcheck(WrongCube.apply, (x,), fast_mode=fast_mode)
    msg = str(err.value)
    assert "input 0" in msg and "analytic" in msg and "numeric" in msg
    if not fast_mode:
        assert "element" in msg
    assert tgx.gradcheck(WrongCube.apply, (x,), fast_mode=fast_mode,
                         raise_exception=False) is False


def test_full_mode_names_the_input_and_element():
    a, b = x64(2, 2), x64(2, 2, seed=1)
    with pytest.raises(GradcheckError) as err:
        tgx.gradcheck(WrongSecondInput.apply, (a, b))
    msg = str(err.value)
    assert "input 1" in msg and "(2, 2)" in msg and "element (1, 1)" in msg
    # the reported numbers are the real ones: the first bad Jacobian entry is d out[0,0] /
    # d b[1,1], truly 0, where the wrong backward adds 0.5 whatever the seed
    assert "analytic 0.5 vs numeric 0" in msg
    assert tgx.gradcheck(WrongSecondInput.apply, (a, b), raise_exception=False) is False


def test_fast_mode_fails_on_the_wrong_input_only():
    a, b = x64(3, 2), x64(3, 2, seed=1)
    with pytest.raises(GradcheckError, match="input 1"):
        tgx.gradcheck(WrongSecondInput.apply, (a, b), fast_mode=True)
    b_const = Tensor(b.detach().numpy())  # b needs no grad: the wrong gradient is never checked
    assert tgx.gradcheck(WrongSecondInput.apply, (a, b_const), fast_mode=True)


def test_inputs_are_perturbed_in_place_so_closures_see_them():
    # as PyTorch: a function that uses a Parameter through a closure (a module's own weight)
    # can be checked with respect to that Parameter
    w = x64(3, 2)
    x = x64(4, 3, seed=1)
    assert tgx.gradcheck(lambda a, w_: (a @ w).tanh() * w_.sum(), (x, w))
    assert tgx.gradcheck(lambda a, w_: (a @ w).tanh() * w_.sum(), (x, w), fast_mode=True)
    before = w.detach().numpy().copy()
    tgx.gradcheck(lambda a: a @ w, (w.T,))
    np.testing.assert_array_equal(w.detach().numpy(), before)      # restored afterwards


def test_gradcheck_error_is_an_assertion_error():
    assert issubclass(GradcheckError, AssertionError)


def test_refuses_float32_with_a_clear_message():
    x = Tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)
    with pytest.raises(TypeError) as err:
        tgx.gradcheck(lambda a: a * 2, (x,))
    msg = str(err.value)
    assert "float32" in msg and "float64" in msg and ".double()" in msg


def test_refuses_a_float32_output():
    x = x64(2)
    with pytest.raises(TypeError, match="output 0 is float32"):
        tgx.gradcheck(lambda a: a.float() * 2, (x,))


def test_nothing_to_check_is_an_error():
    with pytest.raises(ValueError, match="requires_grad"):
        tgx.gradcheck(lambda a: a * 2, (Tensor(np.ones(2)),))


def test_issue_example():
    x = Tensor(np.random.randn(2, 5, 8).astype(np.float32), requires_grad=True)
    w = Tensor(np.random.randn(8, 8).astype(np.float32), requires_grad=True)
    assert tgx.gradcheck(lambda a, b: F.softmax(a @ b, dim=-1), (x.double(), w.double()),
                         fast_mode=True)


def test_custom_function_end_to_end():
    x = Tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
    y = Cube.apply(x)
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() ** 3)
    assert y._ctx.name() == "cube" and y._ctx.parents == (x,)
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 6 * x.detach().numpy() ** 2)
    # a custom op composes with built-in ops, broadcasting included
    b = Tensor(np.ones((2, 1)), requires_grad=True)
    (Cube.apply(x) + b).sum().backward()
    assert b.grad.shape == (2, 1)
    # with no Tensor among the inputs there is no class for the result: refused by name
    with pytest.raises(TypeError, match="^cube: expected a Tensor among the inputs, got float"):
        Cube.apply(2.0)
    assert tgx.gradcheck(lambda t: Cube.apply(t * 2) + t, (x64(4),))


def test_custom_function_with_keyword_arguments_and_needs_input_grad():
    class Scale(Function):
        def forward(self, x, y, factor=1.0):
            self.factor = factor
            return x * factor + y

        def backward(self, grad):
            gx = grad * self.factor if self.needs_input_grad[0] else None
            gy = grad if self.needs_input_grad[1] else None
            return gx, gy

    x, y = x64(3), Tensor(np.ones(3))
    out = Scale.apply(x, y, factor=3.0)
    assert out._ctx.needs_input_grad == (True, False)
    assert tgx.gradcheck(lambda a: Scale.apply(a, y, factor=3.0), (x,))


@given(shapes=broadcastable_shapes(2, max_dims=3, max_side=3))
def test_users_property_test_with_tinygradx_testing(shapes):
    a, b = (Tensor(np.random.default_rng(0).standard_normal(s), requires_grad=True)
            for s in shapes)
    assert tgx.gradcheck(lambda p, q: (p * q).tanh() + Cube.apply(p), (a, b))


@given(pair=matmul_shapes(max_batch_dims=1, max_side=3))
def test_matmul_shapes_strategy_in_a_property_test(pair):
    a, b = (Tensor(np.random.default_rng(1).standard_normal(s), requires_grad=True)
            for s in pair)
    assert tgx.gradcheck(lambda p, q: p @ q, (a, b))


@given(x=tensors((2, 3)))
def test_tensors_strategy(x):
    assert x.dtype == np.float64 and x.requires_grad and x.shape == (2, 3)
    assert np.all(np.abs(x.detach().numpy()) <= 3.0)
    assert tgx.gradcheck(lambda t: (t * t).sum(dim=1), (x,))
