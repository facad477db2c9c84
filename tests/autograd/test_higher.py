"""Gradients of gradients: create_graph=True, gradgradcheck and the one derivative per op."""
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


def test_a_backward_with_operators_has_higher_derivatives_for_free():
    """One derivative per op: a user's op on arrays whose backward uses operators runs the
    same backward on Tensors under create_graph, so its second derivative is right."""
    class Double(tgx.Function):
        def forward(self, x):
            return x * 2

        def backward(self, g):
            return g * 2

    x = _x(3)
    (g,) = tgx.grad((Double.apply(x) * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 4 * x.detach().numpy())
    (h,) = tgx.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.full(3, 4.0))


def test_a_backward_that_calls_numpy_names_itself_under_create_graph():
    class NumpyRule(tgx.Function):
        def forward(self, x):
            self.x = x
            return np.sin(x)

        def backward(self, g):
            return g * np.cos(self.x)          # numpy on the saved input: first order only

    x = _x(3)
    (g,) = tgx.grad(NumpyRule.apply(x).sum(), x)          # the ordinary walk is fine
    np.testing.assert_allclose(g.numpy(), np.cos(x.detach().numpy()))
    with pytest.raises(RuntimeError, match="backward of numpyrule cannot be differentiated"):
        tgx.grad(NumpyRule.apply(x).sum(), x, create_graph=True)

    class OldStyle(NumpyRule):                 # the former second method: named, not used
        def backward_graph(self, g, x):
            return g * x.cos()

    with pytest.raises(RuntimeError, match="backward_graph method is no longer used"):
        tgx.grad(OldStyle.apply(x).sum(), x, create_graph=True)


class _Cube(tgx.Function):
    def forward(self, x):
        self.x = x
        return x ** 3

    def backward(self, g):
        return 3 * self.x * self.x * g


def test_gradgradcheck_passes_a_right_rule():
    assert tgx.gradgradcheck(lambda a: _Cube.apply(a), (_x(2, 3),))


def test_gradgradcheck_fails_a_fast_backward_that_disagrees_with_the_formula():
    class WrongFast(_Cube):
        pass

    @tgx.autograd.fast_backward(WrongFast)
    def _wrong(ctx, g):
        return 3 * ctx.x * g

    with pytest.raises(tgx.GradcheckError, match="differs from the one without"):
        tgx.gradgradcheck(lambda a: WrongFast.apply(a), (_x(2, 3),))


def test_gradgradcheck_fails_a_wrong_double_backward():
    class WrongSecond(_Cube):                  # right first derivative, no dependence on x
        def forward(self, x):
            self.frozen = x.copy()             # a derived array: a constant to create_graph
            return x ** 3

        def backward(self, g):
            return 3 * self.frozen * self.frozen * g

    with pytest.raises(tgx.GradcheckError, match="Jacobian mismatch"):
        tgx.gradgradcheck(lambda a: WrongSecond.apply(a), (_x(2, 3),))


def test_every_op_has_one_derivative_method():
    """One derivative per op: no Function subclass of the engine defines a second backward*
    method; a faster array version is registered beside the op (autograd.fast_backward)."""
    from tinygradx import autograd
    from tinygradx.core.node import Function

    def subclasses(c):
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    engine = [c for c in set(subclasses(Function))
              if c.__module__.startswith("tinygradx.")]
    assert len(engine) >= 80
    for cls in engine:
        extra = [m for m in vars(cls) if m.startswith("backward") and m != "backward"]
        assert not extra, f"{cls.__name__} has {extra} beside backward"
    for cls in autograd.VERSIONS:              # a fast path only beside a formula of its own
        if isinstance(cls, str):               # (array functions' versions, by name)
            continue
        assert not cls.__module__.startswith("tinygradx.") or "backward" in vars(cls), cls


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


def test_create_graph_walks_leave_no_reference_cycle():
    """Invariant 4 under create_graph too (a recursive closure in graph_view made one per node
    until it became a plain function: 44 objects per walk of this graph), with a custom
    Function saving its output and a module with backward hooks in the graph."""
    import gc

    class Exp(tgx.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    lin = tgx.nn.Linear(2, 2).double()
    lin.register_full_backward_hook(lambda m, gi, go: None)
    x = tgx.tensor([[0.5, 1.0]], dtype=tgx.float64, requires_grad=True)
    for _ in range(2):                    # the first also loads what the process loads once
        gc.collect()
        (g,) = tgx.grad((lin(Exp.apply(x)) * x).tanh().sum(), x, create_graph=True)
        (h,) = tgx.grad(g.sum(), x)
        del g, h
        found = gc.collect()
    assert found == 0
