"""The differential harness for torch.autograd's entry points beside Functions and hooks:
`backward` (Tensor.backward and torch.autograd.backward: several tensors, grad_tensors, inputs),
`grad` (only_inputs, is_grads_batched, empty or unused inputs, freed graphs), the legacy
`Variable`, `detect_anomaly(check_nan=)` and `set_detect_anomaly`, each through tinygradx's
look-alike and real torch (tests/oracle.py). Without torch these tests skip.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import requires_torch, same

pytestmark = [requires_torch, pytest.mark.filterwarnings("ignore::UserWarning")]


def X(m, values=(1.0, 2.0)):
    return m.tensor(list(values), dtype=m.float64, requires_grad=True)


BACKWARD = {
    "inputs=[w]": lambda m, x, w: (x * w).sum().backward(inputs=[w]),
    "inputs=x (a Tensor)": lambda m, x, w: m.autograd.backward((x * w).sum(), inputs=x),
    "inputs=[]": lambda m, x, w: m.autograd.backward((x * w).sum(), inputs=[]),
    "inputs not requiring grad": lambda m, x, w: (x * w).sum().backward(inputs=[x.detach()]),
    "a non-leaf input": lambda m, x, w: _nonleaf_input(m, x, w),
    "two tensors, two seeds": lambda m, x, w: m.autograd.backward(
        [x * 2, w * 3], [m.ones(2, dtype=m.float64), m.full((2,), 2.0, dtype=m.float64)]),
    "grad_tensors=": lambda m, x, w: m.autograd.backward(
        x * w, grad_tensors=m.ones(2, dtype=m.float64)),
    "grad_variables=": lambda m, x, w: m.autograd.backward(
        x * w, grad_variables=[m.ones(2, dtype=m.float64)]),
    "seed count": lambda m, x, w: m.autograd.backward([x * 2, w * 3],
                                                      [m.ones(2, dtype=m.float64)]),
    "a non-scalar without a seed": lambda m, x, w: (x * w).backward(),
    "seed of another shape": lambda m, x, w: (x * w).backward(m.ones(3, dtype=m.float64)),
    "create_graph with inputs": lambda m, x, w: (x * x * w).sum().backward(inputs=[x],
                                                                           create_graph=True),
}


def _nonleaf_input(m, x, w):
    y = x * 2
    (y * w).sum().backward(inputs=[y])
    return y.grad


@pytest.mark.parametrize("case", sorted(BACKWARD))
def test_backward_forms(case):
    def call(m):
        x, w = X(m), X(m, (3.0, -1.0))
        out = BACKWARD[case](m, x, w)
        return out, x.grad, w.grad

    same(call)


GRAD = {
    "only_inputs=False": lambda m, x, w: m.autograd.grad((x * w).sum(), x, only_inputs=False),
    "inputs=[]": lambda m, x, w: m.autograd.grad((x * w).sum(), []),
    "batched": lambda m, x, w: m.autograd.grad(x * w, [x, w], m.eye(2, dtype=m.float64),
                                               is_grads_batched=True),
    "batched, create_graph": lambda m, x, w: _batched_twice(m, x, w),
    "batched, unused input": lambda m, x, w: m.autograd.grad(
        x * 2, [x, w], m.eye(2, dtype=m.float64), is_grads_batched=True, allow_unused=True),
    "batched, wrong shape": lambda m, x, w: m.autograd.grad(
        x * w, x, m.ones(3, 3, dtype=m.float64), is_grads_batched=True),
    "unused input": lambda m, x, w: m.autograd.grad((x * 2).sum(), [x, w]),
    "unused, allow_unused": lambda m, x, w: m.autograd.grad((x * 2).sum(), [x, w],
                                                            allow_unused=True),
    "unused, materialize": lambda m, x, w: m.autograd.grad((x * 2).sum(), [x, w],
                                                           materialize_grads=True),
    "an output without grad": lambda m, x, w: m.autograd.grad(x.detach().sum(), x),
    "freed graph": lambda m, x, w: _twice(m, x, w),
    "the same input twice": lambda m, x, w: m.autograd.grad((x * x).sum(), [x, x]),
    "two outputs, None seeds": lambda m, x, w: m.autograd.grad([(x * 2).sum(), (x * w).sum()],
                                                               x, [None, None]),
}


def _twice(m, x, w):
    y = (x * w).sum()
    m.autograd.grad(y, x)
    return m.autograd.grad(y, x)


def _batched_twice(m, x, w):
    (g,) = m.autograd.grad(x * x * w, x, m.eye(2, dtype=m.float64), is_grads_batched=True,
                           create_graph=True)
    return g, m.autograd.grad(g.sum(), [x, w])


@pytest.mark.parametrize("case", sorted(GRAD))
def test_grad_forms(case):
    same(lambda m: GRAD[case](m, X(m), X(m, (3.0, -1.0))))


@settings(max_examples=10)
@given(batch=st.integers(1, 4), n=st.integers(1, 3), seed=st.integers(0, 100))
def test_generated_batched_grads(batch, n, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    x0, v0 = rng.standard_normal(n), rng.standard_normal((batch, n))

    def call(m):
        x = m.tensor(x0, requires_grad=True)
        return m.autograd.grad(x.tanh() * x, x, m.tensor(v0), is_grads_batched=True)

    same(call, atol=1e-12, rtol=1e-12)


def test_variable():
    def call(m, case):
        t = m.ones(2)
        if case == "requires_grad":
            v = m.autograd.Variable(t, requires_grad=True)
            return v is t, v.requires_grad, t.requires_grad, v
        if case == "plain":
            v = m.autograd.Variable(t)
            return v is t, v.requires_grad
        if case == "volatile":
            return m.autograd.Variable(t, volatile=True)
        if case == "int requires grad":
            return m.autograd.Variable(m.ones(2, dtype=m.int64), requires_grad=True)
        return m.autograd.Variable([1.0, 2.0])

    for case in ("requires_grad", "plain", "volatile", "int requires grad", "a list"):
        same(lambda m, case=case: call(m, case))


def test_anomaly_switches():
    def call(m, how):
        x = m.tensor([1.0, 0.0], dtype=m.float64, requires_grad=True)
        if how == "check_nan=False":
            with m.autograd.detect_anomaly(check_nan=False):
                (x / x).sum().backward()
            return x.grad
        if how == "check_nan=True":
            with m.autograd.detect_anomaly():
                (x / x).sum().backward()
            return x.grad
        if how == "set, then off":
            with m.autograd.set_detect_anomaly(True):
                pass
            m.autograd.set_detect_anomaly(False)
            (x.sqrt() * 1).sum().backward()
            return x.grad
        @m.autograd.detect_anomaly()
        def f():
            return (x * 2).sum()
        return f()

    for how in ("check_nan=False", "check_nan=True", "set, then off", "decorator"):
        same(lambda m, how=how: call(m, how))
