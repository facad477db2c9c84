"""The differential harness for custom Functions (`torch.autograd.Function`): each Function below is
written once against a namespace `m` and defined on tinygradx's look-alike and on real torch
(tests/oracle.py); the two must agree on values, gradients, second derivatives under
create_graph, gradgradcheck's verdict, and errors (ours one line, raised by tinygradx's code).

Every save pattern: inputs, outputs (PyTorch's own `Exp` example), intermediates, non-Tensor
attributes of ctx, a Tensor kept as an attribute, a detached input; several outputs and saving
one of them; the `forward` + `setup_context` form; once_differentiable; a backward that leaves
Tensors through numpy; mark_dirty, mark_non_differentiable, set_materialize_grads,
needs_input_grad, non-Tensor outputs, vjp; the errors of a wrong backward. Inputs and the ways
the outputs are combined into a loss are generated (hypothesis). Without torch these skip.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_clear, both, lookalike, requires_torch, run, same, torch, Raised

pytestmark = requires_torch


def fn_class(m, forward, backward, setup_context=None, name="F", **extra):
    """A Function class on namespace m (torch or the look-alike)."""
    body = {"forward": staticmethod(forward), "backward": staticmethod(backward), **extra}
    if setup_context is not None:
        body["setup_context"] = staticmethod(setup_context)
    return type(name, (m.autograd.Function,), body)


# ------------------------------------------------------------------------------------------
# the save patterns: (forward, backward[, setup_context]), written once for both libraries
# ------------------------------------------------------------------------------------------

def _save_inputs(m):
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.sin() * w

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * x.cos() * w, g * x.sin()
    return fn_class(m, forward, backward, name="SinMul")


def _save_output(m):                   # PyTorch's docs example: the saved result
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result
    return fn_class(m, forward, backward, name="Exp")


def _save_output_setup_context(m):
    def forward(x, k):
        return x.exp() * k

    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]
        ctx.save_for_backward(output)

    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out, None
    return fn_class(m, forward, backward, setup_context, name="ExpK")


def _save_intermediate(m):             # a constant to the recorded graph, in torch as here
    def forward(ctx, x):
        e = x.exp()
        ctx.save_for_backward(e)
        return e * 2

    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        return g * 2 * e
    return fn_class(m, forward, backward, name="Mid")


def _tensor_attribute(m):              # a Tensor kept on ctx, not saved: a constant too
    def forward(ctx, x):
        ctx.t = x.cos()
        return x.sin()

    def backward(ctx, g):
        return g * ctx.t
    return fn_class(m, forward, backward, name="Attr")


def _non_tensor_attribute(m):
    def forward(ctx, x, p):
        ctx.p = p
        ctx.save_for_backward(x)
        return x ** p

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.p * x ** (ctx.p - 1), None
    return fn_class(m, forward, backward, name="Pow")


def _detached_input(m):
    def forward(ctx, x):
        ctx.save_for_backward(x.detach())
        return x.tanh()

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - x.tanh() ** 2)
    return fn_class(m, forward, backward, name="Detached")


def _two_outputs_save_one(m):
    def forward(ctx, x):
        e, s = x.exp(), x.sin()
        ctx.save_for_backward(x, e)
        return e, s

    def backward(ctx, ge, gs):
        x, e = ctx.saved_tensors
        return ge * e + gs * x.cos()
    return fn_class(m, forward, backward, name="ExpSin")


def _two_outputs_save_both(m):
    def forward(x, y):
        return x * y, x.exp() * y

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs, *output)

    def backward(ctx, g1, g2):
        x, y, p, q = ctx.saved_tensors
        return g1 * y + g2 * q, g1 * x + g2 * q / y
    return fn_class(m, forward, backward, setup_context, name="Pair")


def _input_and_output(m):
    def forward(ctx, x):
        out = x * x.exp()
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return g * (out + out / x)
    return fn_class(m, forward, backward, name="XExp")


def _vjp_name(m):
    def forward(x):
        return x * x * x

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def vjp(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x
    cls = type("Cube", (m.autograd.Function,), {"forward": staticmethod(forward),
                                                "setup_context": staticmethod(setup_context),
                                                "vjp": staticmethod(vjp)})
    return cls


def _index_output(m):                  # a non-differentiable integer output beside the value
    def forward(ctx, x):
        i = x.argmax(dim=-1, keepdim=True)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(x, i)
        return x.gather(-1, i) * 3, i

    def backward(ctx, g, gi):
        x, i = ctx.saved_tensors
        return m.zeros_like(x).scatter(-1, i, g * 3)
    return fn_class(m, forward, backward, name="ScaledMax")


# name -> (make, number of Tensor inputs, extra arguments, output index used for the loss)
PATTERNS = {
    "inputs": (_save_inputs, 2, (), None),
    "output (Exp)": (_save_output, 1, (), None),
    "output, setup_context": (_save_output_setup_context, 1, (1.5,), None),
    "intermediate": (_save_intermediate, 1, (), None),
    "tensor attribute": (_tensor_attribute, 1, (), None),
    "non-tensor attribute": (_non_tensor_attribute, 1, (3,), None),
    "detached input": (_detached_input, 1, (), None),
    "two outputs, one saved": (_two_outputs_save_one, 1, (), "both"),
    "two outputs, both saved": (_two_outputs_save_both, 2, (), "both"),
    "two outputs, first used": (_two_outputs_save_one, 1, (), 0),
    "two outputs, second used": (_two_outputs_save_both, 2, (), 1),
    "input and output": (_input_and_output, 1, (), None),
    "vjp": (_vjp_name, 1, (), None),
    "index output": (_index_output, 1, (), 0),
}
LOSSES = {
    "sum": lambda m, y, xs: y.sum(),
    "y * x": lambda m, y, xs: (y * xs[0]).sum(),
    "y * y": lambda m, y, xs: (y * y).sum(),
    "exp(y) * x": lambda m, y, xs: (y.tanh().exp() * xs[-1]).sum(),
}


def _apply(m, pattern, xs):
    make, n, extra, use = PATTERNS[pattern]
    out = make(m).apply(*xs, *extra)
    if use == "both":
        return out[0] * 0.5 + out[1]
    return out if use is None else out[use]


def _inputs(m, values, n, shape):
    data = np.asarray(values[:int(np.prod(shape)) * n]).reshape(n, *shape)
    return [m.tensor(d.copy(), dtype=m.float64, requires_grad=True) for d in data]


def _second_derivatives(m, pattern, loss, values, shape):
    """The first derivative under create_graph, its own derivative (each input), and
    gradgradcheck's verdict, for one pattern and loss."""
    n = PATTERNS[pattern][1]
    xs = _inputs(m, values, n, shape)
    y = _apply(m, pattern, xs)
    gs = m.autograd.grad(LOSSES[loss](m, y, xs), xs, create_graph=True)
    total = sum((g * (k + 1)).sum() for k, g in enumerate(gs))
    hs = run(lambda: m.autograd.grad(total, xs, allow_unused=True))
    return gs, hs


@settings(max_examples=12)
@given(pattern=st.sampled_from(sorted(PATTERNS)), loss=st.sampled_from(sorted(LOSSES)),
       shape=st.sampled_from([(3,), (2, 2), ()]),
       values=st.lists(st.floats(0.2, 1.5), min_size=8, max_size=8))
def test_second_derivatives_of_every_save_pattern(pattern, loss, shape, values):
    both(lambda: _second_derivatives(lookalike(), pattern, loss, values, shape),
         lambda: _second_derivatives(torch, pattern, loss, values, shape), atol=1e-10,
         rtol=1e-10)


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_every_save_pattern_and_loss(pattern, loss):
    values = [0.5, 1.0, 0.7, 1.3, 0.9, 0.4, 1.1, 0.6]
    both(lambda: _second_derivatives(lookalike(), pattern, loss, values, (3,)),
         lambda: _second_derivatives(torch, pattern, loss, values, (3,)), atol=1e-10,
         rtol=1e-10)


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_gradcheck_and_gradgradcheck_verdicts_are_torchs(pattern):
    def call(m):
        make, n, extra, use = PATTERNS[pattern]
        xs = _inputs(m, [0.5, 1.0, 0.7, 1.3, 0.9, 0.4], n, (3,))
        fn = lambda *a: _apply(m, pattern, a)  # noqa: E731
        return (m.autograd.gradcheck(fn, tuple(xs), raise_exception=False),
                m.autograd.gradgradcheck(fn, tuple(xs), raise_exception=False))

    same(call)


def test_pytorchs_exp_example():
    """The issue's example: (Exp.apply(x) * x).sum()'s second derivative at [0.5, 1]."""
    def call(m):
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad((_save_output(m).apply(x) * x).sum(), x, create_graph=True)
        return m.autograd.grad(g.sum(), x)[0]

    ours, _ = same(call, atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(ours.numpy(), [4.122, 8.155], atol=5e-4)


def test_the_inputs_reach_both_libraries_exactly():
    """A precondition of every comparison here: Python floats with dtype=float64 are kept
    exactly (they went through float32 once: 0.4353952695083385 became 0.43539527...)."""
    same(lambda m: m.tensor([0.4353952695083385, 1e-300, 1 / 3], dtype=m.float64), atol=0,
         rtol=0)


# ------------------------------------------------------------------------------------------
# backward that cannot be differentiated: once_differentiable, numpy, detach
# ------------------------------------------------------------------------------------------

def _once(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @m.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp()
    return fn_class(m, forward, backward, name="Once")


def _numpy_backward(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * m.from_numpy(np.exp(x.numpy()))
    return fn_class(m, forward, backward, name="NumpyExp")


def _detach_backward(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.detach().exp()
    return fn_class(m, forward, backward, name="DetachExp")


NOT_TWICE = {"once_differentiable": _once, "numpy in backward": _numpy_backward,
             "detach in backward": _detach_backward}


@pytest.mark.parametrize("kind", sorted(NOT_TWICE))
@pytest.mark.parametrize("how", ["first", "constant seed", "seed requires grad",
                                 "backward through", "composed", "gradgradcheck"])
def test_a_backward_that_cannot_be_differentiated(kind, how):
    def call(m):
        F = NOT_TWICE[kind](m)
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        if how == "first":
            F.apply(x).sum().backward()
            return x.grad
        if how == "gradgradcheck":
            return m.autograd.gradgradcheck(F.apply, (x,), raise_exception=False)
        if how == "composed":              # another path beside it keeps a graph
            (g,) = m.autograd.grad((F.apply(x) * x).sum(), x, create_graph=True)
            return g, m.autograd.grad(g.sum(), x)
        v = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=how != "constant seed")
        (g,) = m.autograd.grad(F.apply(x), x, grad_outputs=v, create_graph=True)
        if how == "backward through":
            g.sum().backward()
            return x.grad, v.grad
        return g, g.requires_grad, m.autograd.grad(g.sum(), x, allow_unused=True)

    same(call)


# ------------------------------------------------------------------------------------------
# the rest of ctx and apply
# ------------------------------------------------------------------------------------------

def _dirty(m, save=False):
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        if save:
            ctx.save_for_backward(x)
        return x

    def backward(ctx, g):
        if save:
            (y,) = ctx.saved_tensors
            return g * y
        return g * 2
    return fn_class(m, forward, backward, name="Double_")


def test_mark_dirty():
    def call(m, case):
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        if case == "leaf":
            return _dirty(m).apply(x)
        if case == "no grad":
            c = m.tensor([1.0, 2.0])
            out = _dirty(m).apply(c)
            return out is c, out.requires_grad, c
        a = x * 1
        b = a * 3                             # used a before: its edge goes to a's old graph
        y = _dirty(m, save=case == "save").apply(a)
        if case == "saved before":
            e = a.exp()                       # saved a after: fine
            (b.sum() + e.sum() + y.sum()).backward()
            return x.grad
        if case == "save":
            (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
            return g, m.autograd.grad(g.sum(), x)
        (b.sum() + y.sum()).backward()
        return y is a, a.requires_grad, y, x.grad

    for case in ("plain", "leaf", "no grad", "saved before", "save"):
        same(lambda m, case=case: call(m, case))


def test_mark_dirty_refusals():
    def not_returned(m):
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1
        return fn_class(m, forward, lambda ctx, g: g)

    def not_an_input(m):
        def forward(ctx, x):
            y = x * 1
            ctx.mark_dirty(y)
            return y
        return fn_class(m, forward, lambda ctx, g: g * 3)

    for make in (not_returned, not_an_input):
        def call(m, make=make):
            x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
            y = make(m).apply(x * 1)
            y.sum().backward()
            return y, x.grad
        same(call)
    # a dirty view inside a graph: torch rewrites the base's history, tinygradx refuses by name
    x = lookalike().tensor([0.5, 1.0], dtype=lookalike().float64, requires_grad=True)
    out = run(lambda: _dirty(lookalike()).apply((x * 1)[:1]))
    assert isinstance(out, Raised)
    assert_clear(out.exc, "mark_dirty on a view", "(1,)")


def test_an_input_returned_as_is_is_a_view():
    def call(m, case):
        def forward(ctx, x):
            return x

        F = fn_class(m, forward, lambda ctx, g: g * 2)
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        y = F.apply(x)
        if case == "plain":
            y.sum().backward()
            return y is x, y.requires_grad, x.grad
        if case == "in place on the view":
            return F.apply(x * 1).add_(1)
        with m.no_grad():
            x.mul_(3)                          # the view sees it ...
        seen = y.detach().clone()
        if case == "base changed":
            return seen
        y.sum().backward()                     # ... and backward through it is refused
        return x.grad

    for case in ("plain", "in place on the view", "base changed", "backward after"):
        same(lambda m, case=case: call(m, case))


def test_materialize_grads_and_non_differentiable_outputs():
    def call(m, materialize, use):
        seen = []

        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            i = x.argmax()
            ctx.mark_non_differentiable(i)
            return x * 2, x * 3, i

        def backward(ctx, g1, g2, gi):
            seen.append(tuple(None if g is None else g.clone() for g in (g1, g2, gi)))
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total

        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        a, b, i = fn_class(m, forward, backward).apply(x)
        loss = {"first": a.sum(), "second": b.sum(), "both": a.sum() + b.sum()}[use]
        loss.backward()
        return x.grad, seen, i.requires_grad

    for materialize in (True, False):
        for use in ("first", "second", "both"):
            same(lambda m, a=materialize, b=use: call(m, a, b))


def test_needs_input_grad_non_tensor_outputs_and_list_outputs():
    def call(m):
        seen = {}

        def forward(ctx, x, y, k, z=None):
            seen["needs"] = ctx.needs_input_grad
            return x * 2, 5, "s", None, [x * 1]

        def backward(ctx, g, *rest):
            seen["rest"] = [type(r).__name__ for r in rest]
            return g * 2, None, None, None

        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        out = fn_class(m, forward, backward).apply(x, m.ones(2), 3, z=x * 1)
        out[0].sum().backward()
        return ([type(o).__name__ for o in out[1:4]], out[4][0].requires_grad, x.grad,
                seen["needs"], seen["rest"])

    same(call)
    same(lambda m: fn_class(m, lambda ctx, x: [x * 2], lambda ctx, g: g).apply(
        m.ones(2, requires_grad=True))[0].requires_grad)
    same(lambda m: fn_class(m, lambda ctx, x: None, lambda ctx, g: g).apply(
        m.ones(2, requires_grad=True)))
    same(lambda m: fn_class(m, lambda ctx, x: 3, lambda ctx, g: g).apply(
        m.ones(2, requires_grad=True)))


BACKWARDS = {
    "too few": (lambda m: (lambda ctx, x, y: x * y), lambda m: (lambda ctx, g: g), 2),
    "too many": (lambda m: (lambda ctx, x: x * 2), lambda m: (lambda ctx, g: (g, g)), 1),
    "extra None": (lambda m: (lambda ctx, x: x * 2), lambda m: (lambda ctx, g: (g, None)), 1),
    "for a non-tensor": (lambda m: (lambda ctx, x, k: x * k), lambda m: (lambda ctx, g: (g, g)),
                         "k"),
    "for a tensor without grad": (lambda m: (lambda ctx, x, c: x * c),
                                  lambda m: (lambda ctx, g: (g, g)), "c"),
    "float32 gradient": (lambda m: (lambda ctx, x: x * 2), lambda m: (lambda ctx, g: g.float()),
                         1),
    "0-d gradient": (lambda m: (lambda ctx, x: x * 2), lambda m: (lambda ctx, g: g.sum()), 1),
    "broadcast gradient": (lambda m: (lambda ctx, x: x * 2),
                           lambda m: (lambda ctx, g: g.expand(3, 2)), 1),
    "a number": (lambda m: (lambda ctx, x: x * 2), lambda m: (lambda ctx, g: 1.0), 1),
    "no backward": (lambda m: (lambda ctx, x: x * 2), None, 1),
}


@pytest.mark.parametrize("case", sorted(BACKWARDS))
@pytest.mark.parametrize("create_graph", [False, True])
def test_what_backward_returns(case, create_graph):
    def call(m):
        fwd, bwd, arity = BACKWARDS[case]
        body = {"forward": staticmethod(fwd(m))}
        if bwd is not None:
            body["backward"] = staticmethod(bwd(m))
        F = type("G", (m.autograd.Function,), body)
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        args = {1: (x,), 2: (x, x * 1), "k": (x, 2.0),
                "c": (x, m.ones(2, dtype=m.float64))}[arity]
        y = F.apply(*args)
        if create_graph:
            return m.autograd.grad(y.sum(), x, create_graph=True)
        y.sum().backward()
        return x.grad

    same(call)


def test_save_for_backward_and_saved_tensors_rules():
    def call(m, case):
        def forward(ctx, x):
            if case == "non-tensor":
                ctx.save_for_backward(x, 3)
            elif case == "twice":
                ctx.save_for_backward(x)
                ctx.save_for_backward(x, None)
            else:
                ctx.save_for_backward(x)
            keep["ctx"] = ctx
            return x * 2

        def backward(ctx, g):
            saved = ctx.saved_tensors
            keep["n"] = len(saved)
            return g * 2

        keep = {}
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        y = fn_class(m, forward, backward).apply(x)
        if case == "in place":
            y2 = fn_class(m, forward, backward).apply(x * 1)
            with m.no_grad():
                keep["ctx"].saved_tensors[0].mul_(2)
            y2.sum().backward()
        y.sum().backward(retain_graph=case == "retained")
        if case in ("after free", "retained"):
            return len(keep["ctx"].saved_tensors)
        return keep["n"], x.grad

    for case in ("plain", "non-tensor", "twice", "after free", "retained"):
        same(lambda m, case=case: call(m, case))


def test_apply_rules():
    same(lambda m: fn_class(m, lambda ctx, x: x * 2, lambda ctx, g: g)()(m.ones(2)))
    same(lambda m: fn_class(m, lambda ctx, x: x * 2, lambda ctx, g: g).forward(
        None, m.ones(2, requires_grad=True)).requires_grad)
    same(lambda m: fn_class(m, lambda x: x * 2, lambda ctx, g: g).apply(m.ones(2)))
    same(lambda m: fn_class(m, lambda ctx, x: x, lambda ctx, g: g,
                            lambda ctx, inputs, output: None).apply(m.ones(2)))


def test_setup_context_is_called_as_torch_calls_it():
    def call(m):
        seen = {}

        def forward(x, k=2.0):
            return x * k

        def setup_context(ctx, inputs, output):
            seen["grad mode"] = m.is_grad_enabled()
            seen["inputs"] = (type(inputs).__name__, len(inputs), inputs[1])
            seen["output requires grad"] = output.requires_grad
            ctx.k = inputs[1]

        def backward(ctx, g):
            return g * ctx.k, None

        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        y = fn_class(m, forward, backward, setup_context).apply(x)
        y.sum().backward()
        return seen, x.grad

    same(call)


def test_saved_tensors_hooks_with_a_custom_function():
    def call(m, create_graph):
        log = []

        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y)
            return y

        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y

        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(
                lambda t: log.append(("pack", t is x)) or t.detach().clone(),
                lambda t: log.append("unpack") or t):
            y = fn_class(m, forward, backward).apply(x)
        if create_graph:
            (g,) = m.autograd.grad((y * x).sum(), x, create_graph=True)
            return g, m.autograd.grad(g.sum(), x), log
        y.sum().backward()
        return x.grad, log

    same(lambda m: call(m, False))
    same(lambda m: call(m, True))


# ------------------------------------------------------------------------------------------
# torch.func's transforms on a custom Function: PyTorch's conditions
# ------------------------------------------------------------------------------------------

def _func_style(m, style, jvp, vmap):
    body = {}
    if style == "ctx":
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp() * x
        body["forward"] = staticmethod(forward)
    else:
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            if jvp:
                ctx.save_for_forward(inputs[0])
        body["forward"] = staticmethod(lambda x: x.exp() * x)
        body["setup_context"] = staticmethod(setup_context)

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp() * (1 + x)
    body["backward"] = staticmethod(backward)
    if jvp:
        def jvp_rule(ctx, t):
            (x,) = ctx.saved_tensors
            return t * x.exp() * (1 + x)
        body["jvp"] = staticmethod(jvp_rule)
    if vmap:
        body["generate_vmap_rule"] = True
    return type("XExp", (m.autograd.Function,), body)


TRANSFORMS = {
    "grad": lambda m, F, x, t: m.func.grad(lambda y: F.apply(y).sum())(x),
    "grad_and_value": lambda m, F, x, t: m.func.grad_and_value(lambda y: F.apply(y).sum())(x),
    "vjp": lambda m, F, x, t: m.func.vjp(F.apply, x)[1](t),
    "jvp": lambda m, F, x, t: m.func.jvp(F.apply, (x,), (t,)),
    "jacrev": lambda m, F, x, t: m.func.jacrev(F.apply)(x),
    "jacfwd": lambda m, F, x, t: m.func.jacfwd(F.apply)(x),
    "hessian": lambda m, F, x, t: m.func.hessian(lambda y: F.apply(y).sum())(x),
    "grad of grad": lambda m, F, x, t: m.func.grad(
        lambda y: m.func.grad(lambda z: F.apply(z).sum())(y).sum())(x),
    "functional.jacobian": lambda m, F, x, t: m.autograd.functional.jacobian(F.apply, x),
    "functional.hvp": lambda m, F, x, t: m.autograd.functional.hvp(
        lambda y: F.apply(y).sum(), x, t),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("style, jvp, vmap", [("ctx", False, False), ("setup_context", False,
                                               False), ("setup_context", True, False),
                                              ("setup_context", False, True),
                                              ("setup_context", True, True)])
def test_func_transforms_take_what_torchs_take(transform, style, jvp, vmap):
    """torch.func refuses a Function without setup_context, forward mode one without jvp, and
    jacfwd/hessian one without a vmap rule; torch.autograd.functional takes any."""
    def call(m):
        x = m.tensor([0.5, 1.0], dtype=m.float64)
        t = m.ones(2, dtype=m.float64)
        return TRANSFORMS[transform](m, _func_style(m, style, jvp, vmap), x, t)

    same(call, atol=1e-10, rtol=1e-10)
