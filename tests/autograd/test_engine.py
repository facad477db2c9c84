"""The autograd engine on hand-computed graphs: the walk, accumulation, graph freeing, the
switches (no_grad, hooks, anomaly detection), dtypes, constructors and the Tensor basics."""
import gc
import sys
import time
import weakref

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor


def leaf(values, dtype=np.float64):
    return Tensor(np.array(values, dtype=dtype), requires_grad=True)


# ------------------------------------------------------------------------------------------
# hand-computed graphs
# ------------------------------------------------------------------------------------------

def test_diamond():
    # a feeds two branches that meet again: d = (a*2) * (a+3); dd/da = 2(a+3) + 2a = 4a + 6
    a = leaf([1.0, -2.0, 0.5])
    b, c = a * 2, a + 3
    d = b * c
    d.sum().backward()
    np.testing.assert_allclose(a.grad.detach().numpy(), 4 * a.detach().numpy() + 6)


def test_reuse():
    # b = a + a; c = b * b -> c = 4a^2, dc/da = 8a
    a = leaf([3.0, -1.0])
    b = a + a
    c = b * b
    c.sum().backward()
    np.testing.assert_allclose(a.grad.detach().numpy(), 8 * a.detach().numpy())


def test_x_times_x_keeps_multiplicity():
    x = leaf([2.0, -3.0])
    y = x * x
    assert y._ctx.parents == (x, x)          # order and multiplicity kept
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, -6.0])


def test_input_order_is_kept():
    a, b = leaf([6.0]), leaf([2.0])
    (a / b).backward(np.ones(1))
    np.testing.assert_allclose(a.grad.numpy(), [0.5])
    np.testing.assert_allclose(b.grad.numpy(), [-6.0 / 4.0])
    a.grad = b.grad = None
    (a - b).backward(np.ones(1))
    assert a.grad.item() == 1.0 and b.grad.item() == -1.0


def test_broadcast_gradient_by_hand():
    x = leaf([[1.0], [2.0], [3.0]])          # (3, 1)
    y = leaf([1.0, 2.0, 3.0, 4.0])           # (4,)
    (x * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[10.0], [10.0], [10.0]])
    np.testing.assert_array_equal(y.grad.numpy(), [6.0, 6.0, 6.0, 6.0])


def test_branch_that_needs_no_grad_is_skipped():
    a = leaf([1.0, 2.0])
    const = Tensor(np.array([5.0, 7.0]))
    out = (a * const + const.exp()).sum()
    out.backward()
    assert const.grad is None
    np.testing.assert_array_equal(a.grad.numpy(), [5.0, 7.0])


# ------------------------------------------------------------------------------------------
# accumulation, retain_graph, freeing
# ------------------------------------------------------------------------------------------

def test_gradients_accumulate_over_two_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3 + 2, 3 + 4])


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 2 * 2 * x.detach().numpy())


def test_second_backward_through_a_freed_graph_is_a_clear_error():
    x = leaf([1.0, 2.0])
    y = (x * x).exp().sum()
    y.backward()
    with pytest.raises(RuntimeError) as err:
        y.backward()
    msg = str(err.value)
    assert "second time" in msg and "retain_graph=True" in msg


def test_backward_on_a_non_scalar_without_gradient_is_a_clear_error():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError) as err:
        (x * 2).backward()
    msg = str(err.value)
    assert "scalar" in msg and "(2,)" in msg and "gradient" in msg


def test_backward_with_a_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(Tensor(np.array([1.0, 0.0, -1.0])))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, -6.0])
    x2 = leaf([1.0, 2.0])
    (x2 * 3).backward(np.array([1.0, 2.0]))             # a numpy array works too
    np.testing.assert_allclose(x2.grad.numpy(), [3.0, 6.0])


def test_backward_gradient_of_the_wrong_shape_is_an_error():
    x = leaf([1.0, 2.0])
    with pytest.raises(tgx.OpError, match=r"gradient has shape \(3,\).*\(2,\)"):
        (x * 2).backward(np.ones(3))


def test_backward_on_a_tensor_without_graph_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(np.ones(())).backward()


def test_graph_is_freed_after_backward():
    x = leaf(np.ones((4, 4)))
    h = (x * 2).tanh()
    ref = weakref.ref(h)
    loss = (h * h).sum()
    del h                                     # the user drops the intermediate
    assert ref() is not None                  # the graph still holds it before backward
    loss.backward()
    assert ref() is None                      # backward freed the graph: it is gone
    assert loss._ctx is not None and loss._ctx.parents is None
    assert x.grad is not None


def test_retain_graph_keeps_intermediates_alive():
    x = leaf(np.ones(3))
    h = x.exp()
    ref = weakref.ref(h)
    loss = h.sum()
    del h
    loss.backward(retain_graph=True)
    assert ref() is not None
    del loss
    assert ref() is None                      # no cycle: reference counting alone frees it


def test_no_reference_cycles_after_a_training_step():
    def step():
        w = Tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)
        x = Tensor(np.random.default_rng(1).standard_normal((5, 4)))
        target = np.array([0, 2, 1, 1, 0])
        h = F.layer_norm(x @ w, (3,))
        loss = F.cross_entropy(F.gelu(h), target) + F.softmax(h, dim=-1).sum() * 0.0
        loss.backward()
        w.data -= 0.1 * w.grad.data

    step()           # first use compiles the optional kernels (kernels.py): garbage, once
    gc.collect()
    gc.disable()
    try:
        step()
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_deep_chain_has_no_recursion_error():
    n = 100_000
    assert n > sys.getrecursionlimit() * 10
    x = Tensor(np.array(1.0), requires_grad=True)
    one = Tensor(np.array(1.0))
    y = x
    start = time.perf_counter()
    for _ in range(n):
        y = y * one
    y = y + x
    y.backward()
    assert x.grad.item() == 2.0
    assert time.perf_counter() - start < 30


# ------------------------------------------------------------------------------------------
# switches
# ------------------------------------------------------------------------------------------

def test_no_grad_context_manager_records_no_graph():
    x = leaf([1.0, 2.0])
    with tgx.no_grad():
        y = x * 2
        assert not tgx.is_grad_enabled()
    assert tgx.is_grad_enabled()
    assert y._ctx is None and not y.requires_grad


def test_no_grad_decorator():
    @tgx.no_grad()
    def step(t):
        return (t * t).sum()

    x = leaf([1.0, 2.0])
    out = step(x)
    assert out._ctx is None and not out.requires_grad
    assert tgx.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with tgx.no_grad():
        with tgx.enable_grad():
            y = x * 3
        z = x * 3
    assert y.requires_grad and y._ctx is not None
    assert z._ctx is None
    y.sum().backward()
    assert x.grad.item() == 3.0


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with tgx.no_grad():
            _ = 1 / 0
    assert tgx.is_grad_enabled()


def test_hook_sees_the_gradient_on_a_leaf_and_a_non_leaf():
    x = leaf([1.0, 2.0])
    seen = {}
    y = x * 3
    x.register_hook(lambda g: seen.__setitem__("x", g.numpy().copy()))      # returns None
    y.register_hook(lambda g: seen.__setitem__("y", g.numpy().copy()))
    (y * y).sum().backward()
    np.testing.assert_allclose(seen["y"], 2 * y.detach().numpy())
    np.testing.assert_allclose(seen["x"], 18 * x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), seen["x"])


def test_hook_can_replace_the_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.register_hook(lambda g: g * 0 + 1)          # replace d/dy by ones
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    z = leaf([1.0, 2.0])
    z.register_hook(lambda g: g * 10)             # on a leaf: the stored grad is replaced
    (z * 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [20.0, 20.0])


def test_hook_on_a_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(np.ones(2)).register_hook(lambda g: g)


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    z = x * 4                                     # not retained
    (y * y + z).sum().backward()
    np.testing.assert_allclose(y.grad.detach().numpy(), 2 * y.detach().numpy())
    assert z.grad is None
    assert not y.is_leaf and x.is_leaf


def test_tgx_grad_returns_gradients_without_touching_grad():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (gx, gw) = tgx.grad((x * w).sum(), (x, w))
    np.testing.assert_allclose(gx.detach().numpy(), w.detach().numpy())
    np.testing.assert_allclose(gw.detach().numpy(), x.detach().numpy())
    assert x.grad is None and w.grad is None
    (gx_only,) = tgx.grad((x * x).sum(), [x])
    np.testing.assert_allclose(gx_only.detach().numpy(), 2 * x.detach().numpy())
    g_single = tgx.grad((x * x).sum(), x)
    assert isinstance(g_single, tuple) and len(g_single) == 1


def test_tgx_grad_with_grad_outputs_and_unused_inputs():
    x, unused = leaf([1.0, 2.0]), leaf([0.0])
    y = x * x
    (g,) = tgx.grad(y, x, grad_outputs=Tensor(np.array([1.0, -1.0])), retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, -4.0])
    with pytest.raises(RuntimeError, match="allow_unused"):
        tgx.grad(y.sum(), [x, unused], retain_graph=True)
    gx, gu = tgx.grad(y.sum(), [x, unused], allow_unused=True)
    assert gu is None and gx is not None


def test_tgx_grad_of_a_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    (gh,) = tgx.grad((h * h).sum(), h)
    np.testing.assert_allclose(gh.detach().numpy(), 2 * h.detach().numpy())
    assert h.grad is None and x.grad is None


# -- detect_anomaly -----------------------------------------------------------------------

def test_detect_anomaly_forward_nan_names_the_op_and_the_line():
    x = leaf([1.0, -1.0])
    with tgx.detect_anomaly():
        with pytest.raises(FloatingPointError) as err:
            with np.errstate(invalid="ignore"):
                x.log()  # ANOMALY-FORWARD
    msg = str(err.value)
    assert "log" in msg and "NaN/Inf" in msg
    assert "test_engine.py" in msg and "ANOMALY-FORWARD" in msg


def test_detect_anomaly_backward_inf_names_the_op_and_the_line():
    x = leaf([0.0, 4.0])
    with tgx.detect_anomaly():
        y = x.sqrt()  # ANOMALY-BACKWARD
        loss = y.sum()
        with pytest.raises(FloatingPointError) as err:
            with np.errstate(divide="ignore"):
                loss.backward()
    msg = str(err.value)
    assert "backward of sqrt" in msg and "NaN/Inf" in msg
    assert "test_engine.py" in msg and "ANOMALY-BACKWARD" in msg


def test_without_detect_anomaly_nan_passes_silently():
    with np.errstate(invalid="ignore"):
        y = leaf([-1.0]).log()
    assert np.isnan(y.item())


def test_detect_anomaly_is_switched_off_afterwards():
    with tgx.detect_anomaly():
        pass
    from tinygradx.autograd import STATE
    assert not STATE.anomaly and not STATE.instrumented


# ------------------------------------------------------------------------------------------
# dtypes
# ------------------------------------------------------------------------------------------

def test_python_floats_default_to_float32():
    assert Tensor([1.0, 2.0]).dtype == np.float32
    assert tgx.tensor(2.5).dtype == np.float32
    assert tgx.tensor([[1, 2]]).dtype == np.int64
    assert tgx.tensor([True]).dtype == np.bool_


def test_numpy_arrays_keep_their_dtype():
    assert Tensor(np.zeros(2)).dtype == np.float64
    assert Tensor(np.zeros(2, np.float32)).dtype == np.float32
    assert Tensor(np.zeros(2, np.int32)).dtype == np.int32
    assert Tensor(np.zeros(2), dtype="float32").dtype == np.float32
    assert Tensor([1, 2], dtype=tgx.float64).dtype == np.float64


def test_double_keeps_the_graph():
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = x.double()
    assert y.dtype == np.float64 and y._ctx is not None
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert x.double().float().dtype == np.float32
    assert x.to("float32") is x


def test_float32_stays_float32_through_a_graph():
    x = tgx.randn(3, 4, requires_grad=True)
    w = tgx.randn(4, 2, requires_grad=True)
    y = F.layer_norm(F.softmax(x @ w, dim=-1) * 2.0 + 1, (2,))
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32 and w.grad.dtype == np.float32


def test_issue_example_runs():
    x = Tensor(np.random.randn(2, 5, 8).astype(np.float32), requires_grad=True)
    w = Tensor(np.random.randn(8, 8).astype(np.float32), requires_grad=True)
    y = F.layer_norm(F.softmax(x @ w, dim=-1) + x, (8,))
    y.sum().backward()
    assert isinstance(x.grad, Tensor) and x.grad.shape == x.shape


# ------------------------------------------------------------------------------------------
# constructors
# ------------------------------------------------------------------------------------------

def test_constructors():
    assert tgx.zeros(2, 3).shape == (2, 3) and tgx.zeros((2, 3)).dtype == np.float32
    assert np.all(tgx.ones(4).numpy() == 1)
    full = tgx.full((2, 2), 7.5)
    assert full.dtype == np.float32 and np.all(full.numpy() == 7.5)
    assert tgx.full((2,), 3).dtype == np.int64
    assert tgx.arange(5).dtype == np.int64 and tgx.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert tgx.arange(0.0, 1.0, 0.25).dtype == np.float32
    assert tgx.arange(2, 8, 3).tolist() == [2, 5]
    np.testing.assert_array_equal(tgx.eye(3).numpy(), np.eye(3))
    assert tgx.eye(2, 3).shape == (2, 3)
    assert tgx.zeros(2, dtype="float64").dtype == np.float64
    r = tgx.rand(1000)
    assert r.dtype == np.float32 and 0 <= r.numpy().min() and r.numpy().max() < 1
    n = tgx.randn(2000, dtype=tgx.float64)
    assert n.dtype == np.float64 and abs(n.numpy().mean()) < 0.1 and abs(n.numpy().std() - 1) < 0.1
    assert tgx.randn(2, 3, requires_grad=True).requires_grad


def test_like_constructors():
    x = Tensor(np.ones((2, 3), dtype=np.float64))
    for t in (tgx.zeros_like(x), tgx.ones_like(x), tgx.full_like(x, 2.0), tgx.randn_like(x),
              tgx.rand_like(x)):
        assert t.shape == (2, 3) and t.dtype == np.float64
    assert tgx.zeros_like(x, dtype="float32").dtype == np.float32
    assert np.all(tgx.full_like(x, 2.0).numpy() == 2.0)


def test_manual_seed_reproducibility():
    tgx.manual_seed(42)
    a, b = tgx.randn(3), tgx.rand(2)
    tgx.manual_seed(42)
    np.testing.assert_array_equal(tgx.randn(3).numpy(), a.numpy())
    np.testing.assert_array_equal(tgx.rand(2).numpy(), b.numpy())
    state = tgx.get_rng_state()
    c = tgx.randn(4)
    tgx.set_rng_state(state)
    np.testing.assert_array_equal(tgx.randn(4).numpy(), c.numpy())


# ------------------------------------------------------------------------------------------
# Tensor basics
# ------------------------------------------------------------------------------------------

def test_repr():
    assert repr(Tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "requires_grad=True" in repr(Tensor([1.0], requires_grad=True))
    assert "dtype=float64" in repr(Tensor(np.ones(2)))
    y = Tensor([1.0], requires_grad=True) * 2
    assert "grad_fn=<mul>" in repr(y)
    big = repr(tgx.zeros(100, 100))
    assert "..." in big and len(big) < 1000


def test_item_numpy_detach_size():
    x = Tensor(np.array([[1.5, 2.0], [3.0, 4.0]]), requires_grad=True)
    assert x.size() == (2, 2) and x.size(1) == 2 and x.numel() == 4 and x.dim() == 2
    assert x.shape == (2, 2) and x.ndim == 2 and len(x) == 2
    assert isinstance(x.detach().numpy(), np.ndarray) and x.detach().numpy() is x._data
    d = x.data                                    # PyTorch's .data: a detached Tensor, same memory
    assert isinstance(d,
                      Tensor) and not d.requires_grad and d.detach().numpy() is x.detach().numpy()
    d[0, 0] = 7.0
    assert x.detach().numpy()[0, 0] == 7.0 and x._version == [0]      # not tracked by autograd
    x.data = np.zeros((3,))                        # swaps the memory, as in PyTorch
    assert x.shape == (3,) and x.requires_grad
    x.data = np.array([[1.5, 2.0], [3.0, 4.0]])
    assert x[0, 0].item() == 1.5 and isinstance(x.sum().item(), float)
    with pytest.raises(ValueError, match="one-element"):
        x.item()
    d = (x * 2).detach()
    assert not d.requires_grad and d._ctx is None
    np.testing.assert_array_equal(d.detach().numpy(), 2 * x.detach().numpy())
    assert float(Tensor(3.0)) == 3.0 and int(tgx.tensor(4)) == 4
    assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]


def test_comparisons_give_bool_tensors_without_graph():
    x = leaf([1.0, 2.0, 3.0])
    m = x > 1.5
    assert m.dtype == np.bool_ and m._ctx is None and m.tolist() == [False, True, True]
    assert (x == 2.0).tolist() == [False, True, False]
    assert (~m).tolist() == [True, False, False]


def test_clone_keeps_the_graph_and_copies_data():
    x = leaf([1.0, 2.0])
    c = x.clone()
    (c * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    y = Tensor(np.ones(2))
    z = y.clone()
    z.numpy()[0] = 5
    assert y.numpy()[0] == 1


def test_requires_grad_on_int_tensor_is_refused():
    with pytest.raises(TypeError, match="floating-point"):
        Tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="floating-point"):
        tgx.arange(3).requires_grad_()


def test_node_keeps_what_a_graph_drawer_needs():
    x = leaf(np.ones((2, 3)))
    w = leaf(np.ones((3, 4)))
    y = x @ w
    ctx = y._ctx
    assert ctx.name() == "matmul" and ctx.parents == (x, w) and ctx.scope == ""
    assert [p.shape for p in ctx.parents] == [(2, 3), (3, 4)] and y.shape == (2, 4)
    assert y.grad_fn is ctx


# ------------------------------------------------------------------------------------------
# the walk's buffers: slice gradients written into one array, sums kept in place
# ------------------------------------------------------------------------------------------

def test_split_pieces_fill_one_gradient_and_unused_pieces_are_zero():
    x = Tensor(np.arange(12.0).reshape(2, 6), requires_grad=True)
    a, b, c = x.split(2, dim=1)
    (a.sum() * 2 + c.sum() * 3).backward()           # b unused: its columns must be 0, not junk
    assert x.grad.numpy().tolist() == [[2, 2, 0, 0, 3, 3]] * 2


def test_overlapping_slices_strided_slices_and_dense_paths_add_up():
    x = Tensor(np.arange(12.0).reshape(2, 6), requires_grad=True)
    y = x * 1.0
    a, b = y.split(3, dim=1)
    loss = (a.sum() + b.sum() * 2 + y.sum() * 10 + y[0:1, 1:2].sum() * 100
            + y[:, ::2].sum() * 1000 + a[:, 0:2].sum() * 7)
    loss.backward()
    expected = np.full((2, 6), 10.0)
    expected[:, :3] += 1
    expected[:, 3:] += 2
    expected[0, 1] += 100
    expected[:, ::2] += 1000
    expected[:, 0:2] += 7
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_slice_gradients_through_tgx_grad_and_retain_graph():
    x = Tensor(np.ones((3, 4)), requires_grad=True)
    q, k = x.chunk(2, dim=1)
    loss = (q * 2).sum() + (k * 3).sum()
    (g,) = tgx.grad(loss, x, retain_graph=True)
    assert g.numpy().tolist() == [[2, 2, 3, 3]] * 3
    loss.backward(retain_graph=True)
    loss.backward()
    assert x.grad.numpy().tolist() == [[4, 4, 6, 6]] * 3


def test_leaf_gradients_own_their_memory_across_backward_calls():
    # the walk hands fresh arrays to .grad without a copy and adds into its own sums in place;
    # nothing a user or a hook kept may change when a later backward accumulates
    tgx.manual_seed(0)
    lin = tgx.nn.Linear(4, 3)
    x = tgx.randn(5, 4, dtype="float64")
    lin.double()
    seen = []
    lin.weight.register_hook(lambda g: seen.append(g.numpy()) or None)
    loss = (lin(x) + lin(x)).sum()                  # two contributions to weight and bias
    loss.backward()
    first = lin.weight.grad.numpy().copy()
    kept, kept_seen = lin.weight.grad, seen[0].copy()
    loss2 = lin(x).sum() * 2
    loss2.backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * first)
    assert kept is lin.weight.grad                   # accumulated into the same tensor
    np.testing.assert_array_equal(seen[0], kept_seen)
    assert not np.shares_memory(lin.weight.grad.numpy(), lin.bias.grad.numpy())


def test_gradient_shared_by_two_inputs_is_not_overwritten():
    a = Tensor(np.ones(3), requires_grad=True)
    b = Tensor(np.ones(3), requires_grad=True)
    c = a + b                                        # Add gives both the same array
    (c * 2 + a * 5).sum().backward()
    assert a.grad.numpy().tolist() == [7, 7, 7] and b.grad.numpy().tolist() == [2, 2, 2]


@pytest.mark.parametrize("rows", [1, 2, 3, 8, 64, 65, 200])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_over_few_and_many_rows_is_x_times_w_transposed(rows, dtype):
    """A few rows times W.T run as (W @ x.T).T (ops_linalg._FEW_ROWS): the same product."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 1, 48)).astype(dtype)
    w, b = rng.standard_normal((96, 48)).astype(dtype), rng.standard_normal(96).astype(dtype)
    got = F.linear(Tensor(x), Tensor(w), Tensor(b)).numpy()
    assert got.shape == (rows, 1, 96) and got.flags.c_contiguous and got.dtype == dtype
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


def test_autograd_package_has_torch_autograds_names():
    """tinygradx.autograd.grad / backward / Function are the same objects as tgx's, as
    torch.autograd.grad is torch's."""
    from tinygradx import autograd
    assert autograd.grad is tgx.grad and autograd.Function is tgx.Function
    x = tgx.tensor([1.0, 2.0], requires_grad=True)
    autograd.backward((x * x).sum())
    assert x.grad.tolist() == [2.0, 4.0]
