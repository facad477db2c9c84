"""Custom ops in PyTorch's style (tinygradx/autograd/custom_function.py): static forward/backward
with a ctx, several outputs, non-Tensor arguments, mark_non_differentiable, higher derivatives, and
the errors for a backward that returns the wrong shape or count (either style), checked against
PyTorch where it is installed."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Function, OpError


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g                     # Tensor ops: differentiable again


class ScaleShift(Function):
    """x * scale + shift and x.sum(): two outputs, a non-Tensor argument, a default."""

    @staticmethod
    def forward(ctx, x, scale, shift=0.0):
        ctx.scale = scale
        return x * scale + shift, (x * x).sum()

    @staticmethod
    def backward(ctx, g_lin, g_sq):
        assert g_sq.shape == () and float(g_sq) == 0.0     # unused output: zeros
        return g_lin * ctx.scale, None, None


class MulSq(Function):
    """(x * y, x * x): two differentiable outputs, each with a second derivative."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x * x

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return g1 * y + 2 * g2 * x, g1 * x


class MaxWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        i = x.argmax()
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(x, i)
        ctx.seen = None
        return x.max(), i

    @staticmethod
    def backward(ctx, g, g_index):
        x, i = ctx.saved_tensors
        ctx.seen = g_index
        out = tgx.zeros_like(x)
        out[int(i)] = g
        return out


def x64(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return tgx.tensor(rng.standard_normal(shape), requires_grad=True)


def test_static_style_forward_backward_and_ctx():
    x = x64(2, 3)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "cube" and y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 3 * x.detach().numpy() ** 2)
    assert tgx.gradcheck(Cube.apply, (x,)) and tgx.gradgradcheck(Cube.apply, (x,))


def test_needs_input_grad_keywords_and_non_tensor_arguments():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, w, k, flag=True):
            seen["needs"] = ctx.needs_input_grad
            ctx.k = k
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            seen["k"] = ctx.k
            return g * 2 * ctx.k, None, None, None, None   # an extra trailing None is fine

    x, w = x64(3), tgx.tensor([1.0, 2.0, 3.0], dtype="float64")
    Probe.apply(x, w, k=2.0).sum().backward()
    assert seen == {"needs": (True, False, False, False), "k": 2.0}
    np.testing.assert_allclose(x.grad.detach().numpy(), 4.0)


def test_several_outputs_and_unused_output_gets_zeros():
    x = x64(4)
    lin, sq = ScaleShift.apply(x, 3.0, shift=1.0)
    np.testing.assert_allclose(lin.detach().numpy(), x.detach().numpy() * 3 + 1)
    assert lin.requires_grad and sq.requires_grad
    lin.sum().backward()                       # sq unused: its gradient arrives as zeros
    np.testing.assert_allclose(x.grad.detach().numpy(), 3.0)


def test_several_outputs_gradcheck_and_second_derivatives():
    x, y = x64(2, 3), x64(2, 3, seed=1)
    assert tgx.gradcheck(MulSq.apply, (x, y))
    assert tgx.gradgradcheck(MulSq.apply, (x, y))
    assert tgx.gradcheck(MulSq.apply, (x, y), fast_mode=True)
    a, b = MulSq.apply(x, y)
    (gx,) = tgx.grad((a + b).sum(), x, create_graph=True)     # y + 2x
    (hx,) = tgx.grad(gx.sum(), x)
    np.testing.assert_allclose(hx.detach().numpy(), 2.0)


def test_create_graph_through_static_backward():
    x = tgx.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True)
    (g,) = tgx.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = tgx.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    np.testing.assert_allclose(h.detach().numpy(), 6 * x.detach().numpy())


def test_mark_non_differentiable():
    x = x64(5)
    m, i = MaxWithIndex.apply(x)
    assert m.requires_grad and not i.requires_grad and i.dtype == np.int64
    m.backward()
    expected = np.zeros(5)
    expected[int(np.argmax(x.detach().numpy()))] = 1
    np.testing.assert_allclose(x.grad.detach().numpy(), expected)
    assert tgx.gradcheck(lambda t: MaxWithIndex.apply(t)[0], (x,))


def test_no_graph_without_grad_and_input_returned_as_is():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = x64(3)
    y = Ident.apply(x)
    assert y is not x and y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 3.0)
    with tgx.no_grad():
        assert not Ident.apply(x).requires_grad
    assert not Ident.apply(x.detach()).requires_grad


def test_setup_context_form():
    class Exp(Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    x = x64(3)
    assert tgx.gradcheck(Exp.apply, (x,))


def test_in_place_change_of_saved_tensor_is_an_error():
    x = x64(3)
    y = x * 1
    z = Cube.apply(y)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="cube: a tensor of shape \\(3,\\) saved .* in-place"):
        z.sum().backward()


def test_mixed_styles_are_refused_at_class_creation():
    with pytest.raises(TypeError, match="Half: forward and backward must both be"):
        class Half(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            def backward(self, g):
                return g


class WrongShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return tgx.ones(7, dtype="float64")


class WrongCount(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g, g


class OldWrongShape(Function):
    def forward(self, x):
        return x * 2

    def backward(self, g):
        return np.ones(7)


class OldWrongCount(Function):
    def forward(self, x):
        return x * 2

    def backward(self, g):
        return g, g


@pytest.mark.parametrize("op, message", [
    (WrongShape, r"^wrongshape\.backward returned a gradient of shape \(7,\) for input 0 of "
                 r"shape \(2, 3\)$"),
    (OldWrongShape, r"^oldwrongshape\.backward returned a gradient of shape \(7,\) for input 0 "
                    r"of shape \(2, 3\)$"),
    (WrongCount, r"^wrongcount\.backward returned 2 gradients for 1 arguments"),
    (OldWrongCount, r"^oldwrongcount\.backward returned 2 gradients for 1 inputs$"),
])
def test_wrong_gradient_names_the_op_even_in_gradcheck(op, message):
    x = x64(2, 3)
    with pytest.raises((OpError, RuntimeError), match=message):
        op.apply(x).sum().backward()
    # as PyTorch's: raise_exception=False turns a mismatch into False, never the backward's
    # own error
    for check in (lambda: tgx.gradcheck(op.apply, (x,)),
                  lambda: tgx.gradcheck(op.apply, (x,), raise_exception=False),
                  lambda: tgx.gradcheck(op.apply, (x,), fast_mode=True, raise_exception=False),
                  lambda: tgx.gradgradcheck(op.apply, (x,), raise_exception=False)):
        with pytest.raises((OpError, RuntimeError), match=message):
            check()


def test_wrong_shape_under_create_graph_names_the_op():
    x = x64(2, 3)
    with pytest.raises(OpError, match=r"wrongshape\.backward returned a gradient of shape "
                                      r"\(7,\) for input 0 of shape \(2, 3\)"):
        tgx.grad(WrongShape.apply(x).sum(), x, create_graph=True)


def test_backward_raising_goes_on_through_gradcheck():
    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("not written yet")

    x = x64(3)
    for raise_exception in (True, False):                # as PyTorch's gradcheck
        with pytest.raises(ValueError, match="not written yet"):
            tgx.gradcheck(Raises.apply, (x,), raise_exception=raise_exception)


def test_agrees_with_torch():
    torch = pytest.importorskip("torch")

    class TorchMulSq(torch.autograd.Function):
        forward = staticmethod(MulSq.forward)     # the same code, on torch's Tensors
        backward = staticmethod(MulSq.backward)

    class TorchMax(torch.autograd.Function):
        forward = staticmethod(MaxWithIndex.forward)

        @staticmethod
        def backward(ctx, g, g_index):
            x, i = ctx.saved_tensors
            out = torch.zeros_like(x)
            out[int(i)] = g
            return out

    x, y = x64(2, 3), x64(2, 3, seed=1)
    a, b = MulSq.apply(x, y)
    ((a * 2).sum() + (b * b).sum()).backward(retain_graph=True)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    ty = torch.tensor(y.detach().numpy(), requires_grad=True)
    ta, tb = TorchMulSq.apply(tx, ty)
    ((ta * 2).sum() + (tb * tb).sum()).backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.detach().numpy(), ty.grad.detach().numpy(), rtol=1e-12)
    # second derivative through both outputs
    (gx,) = tgx.grad((a * b).sum(), x, create_graph=True)
    (tgx_,) = torch.autograd.grad((ta * tb).sum(), tx, create_graph=True)
    np.testing.assert_allclose(tgx.grad(gx.sum(), y)[0].detach().numpy(),
                               torch.autograd.grad(tgx_.sum(), ty)[0].detach().numpy(), rtol=1e-12)
    # a non-differentiable output: the same value, no grad, zeros to backward
    z = x64(5, seed=2)
    m, i = MaxWithIndex.apply(z)
    tz = torch.tensor(z.detach().numpy(), requires_grad=True)
    tm, ti = TorchMax.apply(tz)
    assert int(i) == int(ti) and i.requires_grad == ti.requires_grad
    m.backward()
    tm.backward()
    np.testing.assert_allclose(z.grad.detach().numpy(), tz.grad.detach().numpy())


def test_graph_and_trace_show_the_op():
    from tinygradx.graph import viz as viz
    x, y = x64(2), x64(2, seed=1)
    a, b = MulSq.apply(x, y)
    dot = viz.to_dot_source(a + b, grads=False, legend=False)
    assert "mulsq" in dot and "output" in dot
    with tgx.trace() as tr:                     # the node once, not the ops inside forward
        Cube.apply(MulSq.apply(x, y)[0])
    ops = [line.split()[2] for line in str(tr).splitlines()[2:]]
    assert ops == ["mulsq", "output", "output", "cube"], ops


def test_once_differentiable():
    from tinygradx.autograd.custom_function import once_differentiable

    class NumpyTanh(Function):
        @staticmethod
        def forward(ctx, x):
            out = tgx.tensor(np.tanh(x.detach().numpy()))
            ctx.save_for_backward(out)
            return out

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return tgx.tensor(g.detach().numpy() * (1 - out.detach().numpy() ** 2))

    x = x64(4)
    assert tgx.gradcheck(NumpyTanh.apply, (x,))
    # as PyTorch: a first derivative under create_graph is given; differentiating it again
    # raises (a constant seed: it has no graph; a seed that requires grad: the delayed error)
    (g,) = tgx.grad(NumpyTanh.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad
    v = tgx.ones(4, dtype="float64", requires_grad=True)
    (g,) = tgx.grad(NumpyTanh.apply(x), x, grad_outputs=v, create_graph=True)
    with pytest.raises(RuntimeError, match="numpytanh: trying to differentiate twice a "
                                           "function whose backward is marked "
                                           "@once_differentiable"):
        g.sum().backward()
    assert tgx.gradgradcheck(NumpyTanh.apply, (x,), raise_exception=False) is False


def test_array_style_with_two_outputs_is_refused_not_stacked():
    class TwoArrays(Function):
        def forward(self, x):
            return x * 2, x * 3

        def backward(self, g):
            return g

    with pytest.raises(TypeError, match=r"twoarrays: forward on arrays returned a tuple.*"
                                        r"PyTorch's style"):
        TwoArrays.apply(x64(3))


def test_forward_only_function_runs_and_refuses_backward():
    class Twice(Function):                    # PyTorch lets a Function define forward only
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = x64(3)
    y = Twice.apply(x)
    np.testing.assert_allclose(y.detach().numpy(), 2 * x.detach().numpy())
    with pytest.raises(RuntimeError, match="twice: the Function defines no backward"):
        y.sum().backward()
