"""The differential harness for gradcheck's and gradgradcheck's arguments: every argument of
torch.autograd.gradcheck / gradgradcheck, each at good, bad and odd values, run on tinygradx's
look-alike and on real torch (tests/oracle.py). Where torch returns, the same verdict; where torch
raises, a one-line error of ours naming the argument. The few places where tinygradx refuses what
torch accepts are listed in REFUSED, each with why, and checked to be refused by name.
Without torch these tests skip.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import Raised, assert_clear, both, lookalike, requires_torch, run, same, torch

pytestmark = requires_torch


def X(m, n=3):
    return m.linspace(0.1, 1.0, n, dtype=m.float64).requires_grad_()


def f(x):
    return (x * x).sin()


VALUES = {
    "eps": [1e-6, 1e-4, -1e-6, 0, 0.0, math.nan, math.inf, "a", None, True, 1],
    "atol": [0, 1e-5, 10, math.inf, math.nan, -1, -1e-9, "a", None, True],
    "rtol": [0, 1e-3, 10, math.inf, math.nan, -1, "a", None, True],
    "raise_exception": [True, False, 0, 1, None, "yes"],
    "fast_mode": [False, True, 0, None, "no"],
    "nondet_tol": [0.0, 1e-3, -1, math.nan, "a"],
    "check_undefined_grad": [True, False, "x"],
    "check_grad_dtypes": [False, True],
    "check_batched_grad": [False],
    "check_batched_forward_grad": [False],
    "check_forward_ad": [False],
    "check_backward_ad": [True],
    "masked": [None, False, True],
    "gen_non_contig_grad_outputs": [False, True],
    "check_fwd_over_rev": [False],
    "check_rev_over_rev": [True],
    "epsilon": [1e-6],
    "bogus": [1],
}
# what tinygradx refuses although torch runs it: (function, argument, value) -> why
REFUSED = {
    ("gradcheck", "check_batched_grad", True): "no vmap to batch gradients with",
    ("gradgradcheck", "check_batched_grad", True): "no vmap to batch gradients with",
    ("gradcheck", "check_forward_ad", True): "no forward-mode AD",
    ("gradgradcheck", "check_fwd_over_rev", True): "no forward-mode AD",
}
CHECKS = {"gradcheck": lambda m: m.autograd.gradcheck,
          "gradgradcheck": lambda m: m.autograd.gradgradcheck}


CASES = [(name, arg, value) for name in CHECKS for arg, values in VALUES.items()
         for value in values]


@pytest.mark.parametrize("name, arg, value", CASES,
                         ids=[f"{n}-{a}={v!r}" for n, a, v in CASES])
@pytest.mark.parametrize("func", ["right", "wrong"])
def test_each_argument_as_torch(name, arg, value, func):
    """A right function (sin(x*x)) and a wrong one (a custom Function whose backward is 3x too
    large): the verdict, or the error, is torch's."""
    def call(m):
        fn = f if func == "right" else _wrong(m).apply
        return CHECKS[name](m)(fn, (X(m),), **{arg: value})

    same(call)


@pytest.mark.parametrize("name, arg, value", list(REFUSED), ids=[str(k) for k in REFUSED])
def test_refused_by_name_where_torch_accepts(name, arg, value):
    out = run(lambda: CHECKS[name](lookalike())(f, (X(lookalike()),), **{arg: value}))
    assert isinstance(out, Raised)
    assert_clear(out.exc, f"{arg}={value!r} is not available")
    assert CHECKS[name](torch)(f, (X(torch),), **{arg: value}) is True


def _wrong(m):
    def forward(ctx, x):
        return x * 2

    def backward(ctx, g):
        return g * 6
    return type("Wrong", (m.autograd.Function,), {"forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})


def _raises_in_backward(m):
    def forward(ctx, x):
        return x * 2

    def backward(ctx, g):
        raise ValueError("backward not written yet")
    return type("Raises", (m.autograd.Function,), {"forward": staticmethod(forward),
                                                   "backward": staticmethod(backward)})


INPUTS = {
    "bare tensor": lambda m: X(m),
    "list": lambda m: [X(m)],
    "none requires grad": lambda m: (X(m).detach(),),
    "int beside": lambda m: (X(m), m.arange(3)),
    "number beside": lambda m: (X(m), 2.0),
    "empty": lambda m: (),
    "None": lambda m: None,
    "dict": lambda m: {"x": X(m)},
    "0-size": lambda m: (m.zeros(0, dtype=m.float64, requires_grad=True),),
    "0-d": lambda m: (m.tensor(0.5, dtype=m.float64, requires_grad=True),),
    "NaN": lambda m: (m.tensor([math.nan, 1.0], dtype=m.float64, requires_grad=True),),
    "abs at 0": lambda m: (m.zeros(2, dtype=m.float64, requires_grad=True),),
}
FUNCS = {
    "sin": lambda m: (lambda x, *rest: (x * x).sin()),
    "abs": lambda m: (lambda x, *rest: x.abs()),
    "returns a number": lambda m: (lambda x, *rest: 3.0),
    "returns None": lambda m: (lambda x, *rest: None),
    "returns a list": lambda m: (lambda x, *rest: [x * 2, x * 3]),
    "returns an int tensor too": lambda m: (lambda x, *rest: (x * 2, x.argmax())),
    "output without grad": lambda m: (lambda x, *rest: x.detach() * 2),
    "one output without grad": lambda m: (lambda x, *rest: (x * 2, x.detach())),
    "not callable": lambda m: 3,
    "wrong backward": lambda m: _wrong(m).apply,
}


@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("name", sorted(CHECKS))
@pytest.mark.parametrize("raise_exception", [True, False])
def test_inputs_as_torch(inputs, name, raise_exception):
    def call(m):
        fn = (lambda x, *r: x.abs()) if inputs == "abs at 0" else (lambda x, *r: (x * x).sin())
        return CHECKS[name](m)(fn, INPUTS[inputs](m), raise_exception=raise_exception)

    same(call)


@pytest.mark.parametrize("fn", sorted(FUNCS))
@pytest.mark.parametrize("name", sorted(CHECKS))
@pytest.mark.parametrize("raise_exception", [True, False])
def test_functions_as_torch(fn, name, raise_exception):
    same(lambda m: CHECKS[name](m)(FUNCS[fn](m), (X(m),), raise_exception=raise_exception))


@pytest.mark.parametrize("name", sorted(CHECKS))
@pytest.mark.parametrize("raise_exception", [True, False])
def test_errors_of_the_function_or_its_backward_go_on(name, raise_exception):
    """As torch: raise_exception=False turns a mismatch into False, never an error raised by
    the function or its backward (the user's own error, not tinygradx's: compared by type)."""
    for fn in (lambda m: (lambda x: 1 / 0), lambda m: _raises_in_backward(m).apply):
        ours = run(lambda fn=fn: CHECKS[name](lookalike())(fn(lookalike()), (X(lookalike()),),
                                                     raise_exception=raise_exception))
        theirs = run(lambda fn=fn: CHECKS[name](torch)(fn(torch), (X(torch),),
                                                 raise_exception=raise_exception))
        assert isinstance(theirs, Raised) and isinstance(ours, Raised)
        assert type(ours.exc) is type(theirs.exc), (ours, theirs)


def test_positional_arguments_after_inputs():
    same(lambda m: m.autograd.gradcheck(f, (X(m),), 1e-6))
    same(lambda m: m.autograd.gradgradcheck(f, (X(m),), None, 1e-6))
    same(lambda m: m.autograd.gradgradcheck(f, (X(m),), 1e-6))


GRAD_OUTPUTS = {
    "None": lambda m: None,
    "bare tensor": lambda m: m.ones(3, dtype=m.float64),
    "list": lambda m: [m.ones(3, dtype=m.float64)],
    "float32": lambda m: (m.ones(3),),
    "requires grad": lambda m: (m.ones(3, dtype=m.float64, requires_grad=True),),
    "wrong shape": lambda m: (m.ones(2, dtype=m.float64),),
    "a number": lambda m: 1.0,
    "None entry": lambda m: (None,),
    "NaN": lambda m: (m.full((3,), math.nan, dtype=m.float64),),
}


@pytest.mark.parametrize("grad_outputs", sorted(GRAD_OUTPUTS))
@pytest.mark.parametrize("raise_exception", [True, False])
def test_grad_outputs_as_torch(grad_outputs, raise_exception):
    same(lambda m: m.autograd.gradgradcheck(f, (X(m),), GRAD_OUTPUTS[grad_outputs](m),
                                            raise_exception=raise_exception))


def test_grad_outputs_of_the_wrong_count_are_refused():
    """torch zips them with the outputs and drops the extra one; tinygradx names the count."""
    two = lambda m: (m.ones(3, dtype=m.float64), m.ones(3, dtype=m.float64))  # noqa: E731
    assert torch.autograd.gradgradcheck(f, (X(torch),), two(torch)) is True
    out = run(lambda: lookalike().autograd.gradgradcheck(f, (X(lookalike()),), two(lookalike())))
    assert isinstance(out, Raised)
    assert_clear(out.exc, "2 grad_outputs for 1 outputs")


@settings(max_examples=20)
@given(eps=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3)),
       atol=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3)),
       rtol=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3)),
       raise_exception=st.booleans(), name=st.sampled_from(sorted(CHECKS)))
def test_generated_tolerances(eps, atol, rtol, raise_exception, name):
    """Any numbers for eps, atol and rtol: torch's verdict or an error where torch raises.
    Steps so large or so small that the difference quotient itself decides are left out: there
    the two libraries' rounding may tip a borderline comparison either way."""
    if isinstance(eps, float) and np.isfinite(eps) and eps != 0 and not 1e-8 < abs(eps) < 1e-2:
        eps = 1e-6
    if isinstance(eps, int) and eps != 0:
        eps = 1e-6
    both(lambda: CHECKS[name](lookalike())(f, (X(lookalike()),), eps=eps, atol=atol, rtol=rtol,
                                           raise_exception=raise_exception),
         lambda: CHECKS[name](torch)(f, (X(torch),), eps=eps, atol=atol, rtol=rtol,
                                     raise_exception=raise_exception))
