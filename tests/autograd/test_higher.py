"""Gradients of gradients: create_graph=True, gradgradcheck and the backward_graph rules."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Tensor


def _x(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_second_derivative_of_a_cube():
    x = _x(3, 4)
    (g,) = tgx.grad((x * x * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (h,) = tgx.grad(g.sum(), x, retain_graph=True)
    np.testing.assert_allclose(h.detach().numpy(), 6 * x.detach().numpy())
    (t,) = tgx.grad(tgx.grad(g.sum(), x, create_graph=True)[0].sum(), x)   # third order
    np.testing.assert_allclose(t.numpy(), np.full((3, 4), 6.0))


def test_backward_create_graph_leaves_a_differentiable_grad():
    x = _x(3)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    assert "backward" in x.grad.grad_fn.scope        # the backward's own nodes are marked
    (x.grad * x.grad).sum().backward()               # d/dx sum (2x)^2 = 8x, added to 2x
    np.testing.assert_allclose(x.grad.detach().numpy(),
                               2 * x.detach().numpy() + 8 * x.detach().numpy())


def test_the_ordinary_pass_records_nothing():
    x = _x(3)
    (g,) = tgx.grad((x * x).sum(), x)
    assert not g.requires_grad and g.grad_fn is None


def test_an_op_without_a_rule_names_itself():
    class NoRule(tgx.Function):
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g * 2

    x = _x(3)
    with pytest.raises(RuntimeError, match="backward of norule cannot be differentiated"):
        tgx.grad(NoRule.apply(x).sum(), x, create_graph=True)


class _Cube(tgx.Function):
    def forward(self, x):
        self.x = x
        return x ** 3

    def backward(self, g):
        return 3 * self.x ** 2 * g

    def backward_graph(self, g, x):
        return 3 * x * x * g


def test_gradgradcheck_passes_a_right_rule():
    assert tgx.gradgradcheck(lambda a: _Cube.apply(a), (_x(2, 3),))


def test_gradgradcheck_fails_a_wrong_value():
    class WrongValue(_Cube):
        def backward_graph(self, g, x):
            return 3 * x * g

    with pytest.raises(tgx.GradcheckError, match="differs from the one without"):
        tgx.gradgradcheck(lambda a: WrongValue.apply(a), (_x(2, 3),))


def test_gradgradcheck_fails_a_wrong_double_backward():
    class WrongSecond(_Cube):                  # right first derivative, no dependence on x
        def backward_graph(self, g, x):
            return 3 * x.detach() * x.detach() * g

    with pytest.raises(tgx.GradcheckError, match="Jacobian mismatch"):
        tgx.gradgradcheck(lambda a: WrongSecond.apply(a), (_x(2, 3),))


def test_graph_reads_inputs_false_is_true_to_the_rule():
    """An op may say its backward_graph reads no input values (so an input changed in place
    later is harmless) only if the rule touches its input arguments for shape/dtype alone."""
    import ast
    import inspect
    import textwrap

    from tinygradx import autograd

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    checked = 0
    for cls in set(subclasses(autograd.Function)):
        if cls.graph_reads_inputs or "backward_graph" not in cls.__dict__:
            continue
        fn = ast.parse(textwrap.dedent(inspect.getsource(cls.backward_graph))).body[0]
        args = {a.arg for a in fn.args.args[2:]} | ({fn.args.vararg.arg} if fn.args.vararg
                                                     else set())
        names = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in args]
        meta = [n for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id in args
                and n.attr in ("shape", "dtype", "ndim")]
        assert len(names) == len(meta), f"{cls.__name__}.backward_graph reads an input's value"
        checked += 1
    assert checked >= 30


def test_an_inplace_change_after_use_is_refused_under_create_graph():
    x = _x(3)
    y = x * 1
    z = y.sin()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="sin.*modified by an in-place operation"):
        tgx.grad(z.sum(), x, create_graph=True)
    w = y + 1                                     # add and sum read no input value:
    s = y.sum()                                   # a later in-place change is harmless
    y.add_(1)
    (g,) = tgx.grad(s + w.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), np.full(3, 4.0))
