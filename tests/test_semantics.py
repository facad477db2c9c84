"""PyTorch semantics the op-info table does not spell out sample by sample: dtype promotion
(torch.result_type) over every mix of operand kinds, int powers, bitwise ops, advanced
indexing and its gradients, attention masks, each checked against torch itself."""
import warnings

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import OpError, Tensor

torch = pytest.importorskip("torch")

# operands: (tinygradx maker, torch maker); a maker takes nothing and returns a fresh operand
_OPERANDS = {
    "f32": (np.array([1.5, -2.0], np.float32)),
    "f64": (np.array([1.5, -2.0], np.float64)),
    "f16": (np.array([1.5, -2.0], np.float16)),
    "i64": (np.array([3, -2], np.int64)),
    "i32": (np.array([3, -2], np.int32)),
    "u8": (np.array([3, 2], np.uint8)),
    "i8": (np.array([3, -2], np.int8)),
    "b": (np.array([True, False])),
    "0d_f64": np.array(2.5, np.float64),
    "0d_f32": np.array(2.5, np.float32),
    "0d_i64": np.array(2, np.int64),
    "0d_b": np.array(True),
    "py_float": 2.5,
    "py_int": 2,
    "py_bool": True,
}
_BINOPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "max": lambda a, b: _mx(a, b), "where": lambda a, b: _wh(a, b),
}


def _mx(a, b):
    if isinstance(a, torch.Tensor):
        return torch.maximum(a, b if isinstance(b, torch.Tensor) else torch.tensor(b))
    return tgx.maximum(a, b)


def _wh(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return torch.where(torch.tensor([True, False]), a, b)
    return tgx.where(tgx.tensor([True, False]), a, b)


def _mk(v, lib):
    if isinstance(v, np.ndarray):
        return Tensor(v.copy()) if lib == "tgx" else torch.tensor(v.copy())
    return v


@pytest.mark.parametrize("op", list(_BINOPS))
@pytest.mark.parametrize("a", [k for k in _OPERANDS if not k.startswith("py")])
@pytest.mark.parametrize("b", list(_OPERANDS))
def test_binary_result_dtype_and_values_match_torch(op, a, b):
    fn = _BINOPS[op]
    if op == "max" and b.startswith("py"):
        pytest.skip("torch.maximum takes tensors only")
    try:
        want = fn(_mk(_OPERANDS[a], "torch"), _mk(_OPERANDS[b], "torch"))
    except RuntimeError:
        return            # torch refuses (bool - x); numpy's answer is kept (not compared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fn(_mk(_OPERANDS[a], "tgx"), _mk(_OPERANDS[b], "tgx"))
    assert str(got.dtype) == str(want.dtype).replace("torch.", ""), (a, op, b)
    np.testing.assert_allclose(got.numpy().astype(np.float64),
                               want.numpy().astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("a", ["f32", "i64", "0d_f64", "b"])
@pytest.mark.parametrize("b", ["f32", "0d_f64", "i64", "py_float", "py_int"])
def test_comparisons_use_the_promoted_dtype(a, b):
    for fn in (lambda x, y: x < y, lambda x, y: x == y):
        want = fn(_mk(_OPERANDS[a], "torch"), _mk(_OPERANDS[b], "torch"))
        got = fn(_mk(_OPERANDS[a], "tgx"), _mk(_OPERANDS[b], "tgx"))
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_float32_with_0d_float64_compares_in_float32():
    x = tgx.tensor([0.1], dtype="float32")
    assert (x == Tensor(np.float64(0.1))).item()          # torch: True (float32 compare)


def test_result_type_examples():
    rt = tgx.autograd.result_type
    f32 = Tensor(np.zeros(2, np.float32))
    assert rt(f32, Tensor(np.zeros(2, np.int64))) == np.float32
    assert rt(f32, Tensor(np.float64(1))) == np.float32
    assert rt(Tensor(np.zeros(2, np.int64)), Tensor(np.float64(1))) == np.float64
    assert rt(Tensor(np.zeros(2, np.int32)), 2.5) == np.float32
    assert rt(Tensor(np.zeros(2, np.int32)), Tensor(np.int64(3))) == np.int32
    assert rt(Tensor(np.zeros(2, bool)), 1) == np.int64
    assert rt(Tensor(np.zeros(2, np.float16)), 2.5) == np.float16


def test_int_division_is_float32_true_division():
    got = tgx.tensor([7, -7]) / tgx.tensor([2, 2])
    assert got.dtype == np.float32 and got.tolist() == [3.5, -3.5]
    assert (tgx.tensor([7]) / 2).dtype == np.float32


def test_gradient_through_a_promoted_0d_float64():
    """float32 tensor * 0-d float64 tensor runs in float32; the 0-d one still gets its
    (float64) gradient, as in torch."""
    x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    s = Tensor(np.float64(3.0), requires_grad=True)
    y = x * s
    assert y.dtype == np.float32
    y.sum().backward()
    assert s.grad.dtype == np.float64 and s.grad.item() == 3.0
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [3.0, 3.0]


def test_int_to_negative_int_power_raises_like_torch():
    with pytest.raises(RuntimeError, match="negative integer powers"):
        torch.tensor([1, 2]) ** -1
    with pytest.raises(OpError, match="negative integer powers"):
        tgx.tensor([1, 2]) ** -1
    assert (tgx.tensor([1, 2]) ** -1.0).dtype == np.float32      # a float power is fine


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_float_unary_of_int_and_bool_is_float32(name, dtype):
    x = np.array([1, 2, 3]).astype(dtype)
    got = getattr(Tensor(x), name)()
    want = getattr(torch.tensor(x), name)()
    assert got.dtype == np.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_bitwise_ops_follow_torch():
    a, b = [1, 2, 6], [3, 3, 5]
    for fn in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y):
        assert fn(tgx.tensor(a), tgx.tensor(b)).tolist() == fn(torch.tensor(a),
                                                               torch.tensor(b)).tolist()
        assert fn(tgx.tensor(a), 3).tolist() == fn(torch.tensor(a), 3).tolist()
    m = tgx.tensor([True, False])
    assert (m & tgx.tensor([True, True])).dtype == np.bool_
    with pytest.raises(TypeError, match="bool or integer"):
        tgx.tensor([1.0]) & tgx.tensor([1.0])
