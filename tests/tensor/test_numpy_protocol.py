"""Tensors meet numpy and Python's number protocols as PyTorch's do: np.asarray / np.mean /
np.max give values (no graph) through __array__ and __array_function__, a tensor that requires
grad is refused there (as torch refuses it), operators with numpy operands stay Tensor ops with
a graph, and f"{loss:.4f}", float(t), int(t), round(t) follow torch."""
import numpy as np
import pytest

import tinygradx as tgx


def test_numpy_functions_give_values():
    t = tgx.tensor([[1.0, 5.0], [3.0, 2.0]])
    assert isinstance(np.asarray(t), np.ndarray) and np.asarray(t).dtype == np.float32
    assert np.mean(t) == 2.75 and np.max(t) == 5.0 and np.min(t) == 1.0
    np.testing.assert_array_equal(np.sum(t, axis=0), [4.0, 7.0])
    np.testing.assert_array_equal(np.argmax(t, axis=1), [1, 0])
    np.testing.assert_array_equal(np.concatenate([t, np.zeros((1, 2))]),
                                  [[1, 5], [3, 2], [0, 0]])
    assert np.allclose(t, t.numpy()) and np.isclose(np.linalg.norm(t), np.sqrt(39.0))
    assert not isinstance(np.mean(t), tgx.Tensor)
    np.testing.assert_array_equal(np.exp(t), np.exp(t.numpy()))      # a ufunc: values too


def test_a_tensor_that_requires_grad_is_refused_by_numpy():
    x = tgx.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    for call in (lambda: np.asarray(x), lambda: np.mean(y), lambda: np.max(x),
                 lambda: np.exp(y), lambda: np.array([x])):
        with pytest.raises(RuntimeError, match=r"requires grad \(shape \(2,\)\).*t\.detach\(\)"):
            call()
    assert np.mean(y.detach()) == 3.0
    assert np.shape(y) == (2,) and np.ndim(x) == 1 and np.size(y) == 2   # shape only: fine
    assert np.size(tgx.ones(2, 3, requires_grad=True), 1) == 3
    assert tgx.tensor(x).requires_grad is False                # a copy, as torch.tensor(t)


def test_operators_with_numpy_operands_keep_the_graph():
    x = tgx.tensor([1.0, 2.0], requires_grad=True)
    for out in (np.float32(2) * x, np.ones(2, np.float32) + x, np.float64(3) - x,
                x * np.float32(2), np.arange(2, dtype=np.float32) @ x):
        assert isinstance(out, tgx.Tensor) and out.requires_grad and out.grad_fn is not None
    (np.float32(2) * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_format_of_0d_tensors():
    loss = tgx.tensor(2.34567)
    assert f"{loss:.4f}" == "2.3457" and f"{loss:>8.2f}" == "    2.35" and f"{loss}" == \
        str(loss.item())                                   # PyTorch: "" formats the value too
    assert f"{tgx.tensor(3):d}" == "3" and f"{tgx.tensor(7):03d}" == "007"
    assert f"{tgx.tensor(1.5, requires_grad=True) * 2:.1f}" == "3.0"
    v = tgx.tensor([1.0, 2.0])
    assert f"{v}" == str(v)
    with pytest.raises(TypeError, match=r"format spec '\.2f' needs a 0-d tensor, this one has "
                                        r"shape \(2,\)"):
        f"{v:.2f}"


def test_python_numbers_as_torch():
    assert float(tgx.tensor(3)) == 3.0 and int(tgx.tensor(2.7)) == 2
    assert int(tgx.tensor([[-2.5]])) == -2
    with pytest.raises(ValueError):
        float(tgx.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"round\(\) of a Tensor is refused.*t\.round\(\)"):
        round(tgx.tensor(2.5))


def test_same_as_torch():
    torch = pytest.importorskip("torch")
    for value in (2.5, -1.25, 7):
        a, b = tgx.tensor(value), torch.tensor(value)
        for spec in ("", ".3f", ">9", "e") if isinstance(value, float) else ("", "d", "5d"):
            assert format(a, spec) == format(b, spec)
        assert float(a) == float(b) and int(a) == int(b)
    with pytest.raises(TypeError):
        round(torch.tensor(2.5))
    with pytest.raises(TypeError):
        format(torch.tensor([1.0]), ".2f")
    with pytest.raises(RuntimeError):
        np.asarray(torch.tensor([1.0], requires_grad=True))
