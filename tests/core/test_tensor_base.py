"""The engine reaches tensors through TensorBase, never through a module global: an op's result
takes its operands' class (`_op_class`), as numpy's subclasses do, and an op with no tensor
operand is refused, since nothing below the Tensor class knows it."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import autograd, nn, ops
from tinygradx.core.tensor_base import TensorBase


def test_the_engine_holds_no_tensor_class_of_its_own():
    assert not hasattr(autograd, "Tensor") and not hasattr(autograd, "apply_static")
    assert issubclass(tgx.Tensor, TensorBase) and tgx.Tensor._op_class is tgx.Tensor


def test_a_parameters_results_are_plain_tensors():
    w = nn.Parameter(tgx.ones(2))
    for out in (w * 2, w + w, w.exp(), w.sum(), w[0], w.argmax(), w.isnan(), w.detach() * 1):
        assert type(out) is tgx.Tensor
    (w * 3).sum().backward()
    assert type(w.grad) is tgx.Tensor


def test_a_subclass_keeps_its_class_through_ops():
    class Mine(tgx.Tensor):
        __slots__ = ()

    m = Mine([1.0, 2.0], requires_grad=True)
    assert type(m * 2) is Mine and type(tgx.ones(2) + m) is Mine and type(m.sum()) is Mine
    (m * m).sum().backward()
    assert type(m.grad) is Mine


def test_an_engine_constant_takes_the_class_of_the_tensor_it_meets():
    const = TensorBase._from_op(np.array([2.0, 3.0], np.float32), None)   # as the engine makes them
    x = tgx.tensor([1.0, 1.0], requires_grad=True)
    assert type(const) is TensorBase
    assert type(const * x) is tgx.Tensor and type(x * const) is tgx.Tensor


class Constant(tgx.Function):
    def forward(self):
        return np.ones(2)

    def backward(self, g):
        return ()


@pytest.mark.parametrize("call, name", [
    (lambda: ops.Exp.apply(np.ones(2)), "exp"),
    (lambda: ops.Mul.apply(np.ones(2), 2.0), "mul"),
    (lambda: tgx.maximum(np.ones(2), np.zeros(2)), "maximum"),
    (lambda: tgx.cat([np.ones(2), np.ones(2)]), "cat"),
    (lambda: Constant.apply(), "constant"),
])
def test_an_op_without_a_tensor_operand_is_refused_by_name(call, name):
    with pytest.raises(TypeError, match=rf"^{name}: expected a Tensor among the "):
        call()


def test_where_of_numbers_still_makes_a_tensor():
    out = tgx.where(tgx.tensor([True, False]), 1.0, 2.0)
    assert type(out) is tgx.Tensor and out.dtype == np.float32 and out.tolist() == [1.0, 2.0]
