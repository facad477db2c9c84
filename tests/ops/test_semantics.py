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
    rt = tgx.ops.dtypes.result_type
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


# ------------------------------------------------------------------------------------------
# advanced indexing: every mix against torch, values and gradients (repeats sum)
# ------------------------------------------------------------------------------------------
_L, _R = [0, 1], [1, 0, 1]                  # _R repeats an index: its gradients must add up
_M3 = np.array([True, False, True])
_INDEXES = {
    "int": (1,), "neg_int": (-1,), "slice": (slice(1, None),), "step": (slice(None, None, 2),),
    "none": (None, 0), "ellipsis": (Ellipsis, 1), "list": (_L,), "repeats": (_R,),
    "int_slice_list": (0, slice(None), _L), "list_slice_int": (_L, slice(None), 0),
    "int_list": (0, _L), "slice_int_list": (slice(None), 0, _L), "list_int": (_L, 0),
    "list_int_list": (_L, 0, _L), "int_list_slice_list": (0, _L, slice(None), _L),
    "list_slice_list": (_L, slice(None), _L), "list_none_list": (_L, None, _L),
    "none_list_slice_list": (None, _L, slice(None), _L), "ellipsis_int_list": (Ellipsis, 0, _L),
    "int_ellipsis_list": (0, Ellipsis, _L), "list_ellipsis_list": (_L, Ellipsis, _L),
    "tensor0d_slice_list": ("t0", slice(None), _L), "int_slice_mask": (0, slice(None), "m4"),
    "mask2d_int": ("m23", 0), "int_mask2d": (0, "m34"), "slice_mask_slice_list":
    (slice(None), _M3, slice(None), _L), "lists2d_int_slice_lists": ([[0, 1]], 0, slice(None),
                                                                      [[1], [2]]),
    "int_none_list": (0, None, _L), "none_int_slice_list": (None, 0, slice(None), _L),
    "repeats_int_repeats": (_R, 1, slice(None), [3, 3, 0]),
}


def _materialise(idx, lib):
    masks = {"m4": np.array([True, False, True, False]), "m23": np.ones((2, 3), bool),
             "m34": np.array([[True, False, True, True]] * 3)}
    out = []
    for i in idx:
        if isinstance(i, str) and i == "t0":
            out.append(tgx.tensor(0) if lib == "tgx" else torch.tensor(0))
        elif isinstance(i, str):
            out.append(Tensor(masks[i]) if lib == "tgx" else torch.tensor(masks[i]))
        else:
            out.append(i)
    return tuple(out)


@pytest.mark.parametrize("case", list(_INDEXES))
def test_indexing_matches_torch_with_gradients(case):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    tx = Tensor(x, requires_grad=True)
    rx = torch.tensor(x, requires_grad=True)
    got = tx[_materialise(_INDEXES[case], "tgx")]
    want = rx[_materialise(_INDEXES[case], "torch")]
    assert got.shape == tuple(want.shape), case
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    g = np.random.default_rng(1).standard_normal(got.shape)
    got.backward(Tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(tx.grad.numpy(), rx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_embedding_negative_padding_idx_is_the_last_row():
    w = Tensor(np.ones((4, 2)), requires_grad=True)
    F.embedding(tgx.tensor([0, 3, 3]), w, padding_idx=-1).sum().backward()
    assert w.grad.numpy()[3].tolist() == [0.0, 0.0] and w.grad.numpy()[0].tolist() == [1, 1]


@pytest.mark.parametrize("fn", ["sdpa", "attention"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_learned_attention_bias_gets_its_gradient(fn, causal):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    bias = rng.standard_normal((3, 3))
    tb = Tensor(bias, requires_grad=True)
    call = F.scaled_dot_product_attention if fn == "sdpa" else F.attention
    out = call(Tensor(q), Tensor(k), Tensor(v), attn_mask=tb, is_causal=causal)
    out.sum().backward()
    rb = torch.tensor(bias, requires_grad=True)
    m = rb
    if causal:
        m = rb + torch.zeros(3, 3, dtype=torch.float64).masked_fill(
            ~torch.ones(3, 3, dtype=torch.bool).tril(), -np.inf)
    torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=m).sum().backward()
    assert tb.grad is not None
    np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_is_causal_is_top_left_and_causal_mask_bottom_right():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 2)), rng.standard_normal((5, 2)), rng.standard_normal((5, 2))
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), is_causal=True).numpy()
    for call in (F.scaled_dot_product_attention, F.attention):
        got = call(Tensor(q), Tensor(k), Tensor(v), is_causal=True).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isinf(F.causal_mask(3, 5)).tolist() == (~torch.ones(3, 5, dtype=torch.bool).tril(
        2)).tolist()
