"""In-place ops and version counters, checked against PyTorch: values and gradients of small
graphs with in-place ops on non-leaves, the errors when backward needs an overwritten value,
leaves (refused outside no_grad), views, and a GPT training step that must not change."""
import hashlib

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Tensor
from helpers import small_gpt_step

torch = pytest.importorskip("torch")

X = np.array([0.5, -1.0, 2.0, 3.0], dtype=np.float64)
V = np.array([1.5, 0.25, -2.0, 4.0], dtype=np.float64)


def run(lib, fn):
    """fn(lib, x, v) on a fresh leaf pair; returns (output value, x.grad, v.grad)."""
    if lib == "torch":
        x = torch.tensor(X, requires_grad=True)
        v = torch.tensor(V, requires_grad=True)
        out = fn(torch, x, v)
        out.backward(torch.ones_like(out))
        return out.detach().numpy(), _np(x.grad), _np(v.grad)
    x = Tensor(X, requires_grad=True)
    v = Tensor(V, requires_grad=True)
    out = fn(tgx, x, v)
    out.backward(tgx.ones_like(out))
    return out.detach().numpy(), _np(x.grad), _np(v.grad)


def _np(g):
    if g is None:
        return None
    return g.detach().numpy() if hasattr(g, "detach") else g.numpy()


def same_as_torch(fn):
    ours, theirs = run("tgx", fn), run("torch", fn)
    for a, b in zip(ours, theirs, strict=True):
        if b is None:
            assert a is None or not np.any(a)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _mask(lib):
    return lib.tensor([True, False, True, False])


CASES = {
    "add_": lambda L, x, v: (x * 2).add_(v),
    "add_alpha": lambda L, x, v: (x * 2).add_(v, alpha=3),
    "sub_": lambda L, x, v: (x * v).sub_(v.exp()),
    "mul_": lambda L, x, v: (x + 1).mul_(v),
    "mul_self_twice": lambda L, x, v: (x + 1).mul_(v).mul_(v),
    "div_": lambda L, x, v: (x + 1).div_(v),
    "clamp_": lambda L, x, v: (x * v).clamp_(-1.0, 2.5),
    "masked_fill_": lambda L, x, v: (x * v).masked_fill_(_mask(L), 7.0),
    "fill_": lambda L, x, v: (x * v).fill_(3.0) + x,
    "zero_": lambda L, x, v: (x * v).zero_() + v,
    "copy_": lambda L, x, v: (x * 3).copy_(v * v) * x,
    "copy_broadcast": lambda L, x, v: (x * 3).copy_(v[:1] * 2) + x,
    "setitem_slice": lambda L, x, v: _setitem(x * 2, slice(1, 3), v[:2] * v[2:]),
    "setitem_int": lambda L, x, v: _setitem(x * 2, 0, v.sum()),
    "setitem_mask": lambda L, x, v: _setitem(x * 1, _mask(L), v[:2]),
    "setitem_fancy": lambda L, x, v: _setitem(x + 0, [0, 3], v[1:3] * 2),
    "setitem_scalar": lambda L, x, v: _setitem(x * v, slice(None, 2), 0.0),
    "setitem_constant_base":
        lambda L, x, v: _setitem(L.zeros(4, dtype=L.float64), slice(2), v[:2] * x[2:]),
    "chain_then_use": lambda L, x, v: (lambda y: y.add_(v).mul_(2) * y)(x * 1),
    "earlier_add_consumer": lambda L, x, v: (lambda y: (lambda w: y.mul_(v) + w)(y + 1))(x * 1),
    "earlier_getitem_consumer": lambda L, x, v: (lambda y: _setitem(y, 0, y[1] * 3))(x * v),
    "operand_is_self": lambda L, x, v: (lambda y: y.add_(y))(x * v),
}


def _setitem(y, index, value):
    y[index] = value
    return y


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    same_as_torch(CASES[name])


# ------------------------------------------------------------------------------------------
# saved values changed in place: backward refuses, as PyTorch does
# ------------------------------------------------------------------------------------------

RAISES = {
    "issue: saved input zeroed":
        lambda L, x, v: (lambda z: (lambda w: (z.zero_(), w)[1])(z * z))(x * 1.0),
    "saved output (exp)": lambda L, x, v: (lambda y: y.add_(1))(x.exp()),
    "saved output (sigmoid)": lambda L, x, v: (lambda y: y.mul_(2))(x.sigmoid()),
    "saved input through a view":
        lambda L, x, v: (lambda z: (lambda w: (_view_zero(L, z), w)[1])(z * v))(x * 1.0),
    "saved output, changed under no_grad":
        lambda L, x, v: (lambda y: (_nograd_add(L, y), y)[1])(x.tanh()),
    "saved input via detach":
        lambda L, x, v: (lambda z: (lambda w: (z.detach().add_(1), w)[1])(z * v))(x * 1.0),
    "saved constant": lambda L, x, v: (lambda c: (lambda w: (c.mul_(2), w)[1])(x * c))(L.tensor(V)),
}


def _view_zero(lib, z):
    with lib.no_grad():
        z[1:3].zero_()


def _nograd_add(lib, y):
    with lib.no_grad():
        y.add_(1)


@pytest.mark.parametrize("name", sorted(RAISES))
def test_backward_refuses_when_a_saved_value_was_changed(name):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run("torch", RAISES[name])
    with pytest.raises(RuntimeError, match="modified by an in-place operation") as err:
        run("tgx", RAISES[name])
    assert "Use .clone() before the in-place change" in str(err.value)


def test_the_error_names_op_shape_versions_module_and_line():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tgx.autograd.scope("transformer.h.0.attn"):
        z = x * 1.0
        w = z * z
    z.zero_()                                            # this line is named in the error
    with pytest.raises(RuntimeError) as err:
        w.sum().backward()
    msg = str(err.value)
    assert msg.startswith("mul (in transformer.h.0.attn): an input of shape (3,) was modified")
    assert "version 1, saved at version 0" in msg and "zero_ at " in msg
    assert f"{__file__}:" in msg


def test_the_issue_example_no_longer_gives_zero_gradients_silently():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = x * 1.0
    w = z * z
    z.zero_()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        w.sum().backward()


def test_change_after_backward_is_fine_and_versions_count():
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y._version[0] == 0
    y.add_(1).mul_(3)
    assert y._version[0] == 2 and y.grad_fn.name() == "mul"
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


# ------------------------------------------------------------------------------------------
# leaves, views, dtypes, shapes
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", [lambda t: t.zero_(), lambda t: t.add_(1), lambda t: t.fill_(2.0),
                                lambda t: t.__setitem__(0, 5.0), lambda t: t.clamp_(0, 1)])
def test_leaf_that_requires_grad_is_refused_outside_no_grad(op):
    p = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        op(p)
    w = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad .* in-place"):
        op(w)
    with tgx.no_grad():                                   # allowed, as in PyTorch
        op(w)
    with torch.no_grad():
        op(p)
    np.testing.assert_array_equal(w.detach().numpy(), p.detach().numpy())
    assert w.is_leaf and w.requires_grad and w._version[0] == 1


def test_views_share_memory_and_the_version_counter():
    x = tgx.arange(6).float().reshape(2, 3)
    row, col, t = x[0], x[:, 1], x.T
    assert row._version is x._version and t._version is x._version
    row.add_(10)                                          # no graph: writes through to x
    assert x.tolist() == [[10, 11, 12], [3, 4, 5]] and x._version[0] == 1
    col.zero_()
    assert x.tolist() == [[10, 0, 12], [3, 0, 5]] and t[1].tolist() == [0, 0]
    assert x[[0, 1]]._version is not x._version           # an integer-array index copies


def test_in_place_on_a_view_inside_a_graph_is_a_clear_error():
    x = Tensor(X, requires_grad=True)
    y = x * 2
    view_error = r"in-place change of a view .*\(base\[index\] = value\)"
    with pytest.raises(RuntimeError, match=view_error):
        y[1:3].mul_(2)
    y[1:3] = y[1:3] * 2                                   # what the error suggests
    y.sum().backward()
    assert x.grad.tolist() == [2, 4, 4, 2]


def test_in_place_on_a_view_of_a_leaf_is_refused():
    w = Tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="view"):
        w[0].zero_()
    with tgx.no_grad():
        w[0].zero_()
    assert w.detach().numpy()[0] == 0


def test_expanded_view_is_read_only():
    t = tgx.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only .* clone"):
        t.add_(1)


def test_shape_and_dtype_rules_follow_torch():
    a = tgx.zeros(3)
    with pytest.raises(tgx.OpError, match="must keep the shape"):
        a.add_(tgx.ones(2, 3))
    i = tgx.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="can't be cast"):
        i.add_(0.5)
    a.add_(tgx.ones(3, dtype=tgx.float64))                # float64 into float32: cast
    assert a.dtype == np.float32 and a.tolist() == [1, 1, 1]
    i[1] = 7
    assert i.tolist() == [1, 7, 3] and i.dtype == np.int64


def test_setitem_on_a_constant_makes_it_part_of_the_graph():
    v = Tensor([2.0, 3.0], requires_grad=True)
    out = tgx.zeros(4)
    out[1:3] = v * v
    assert out.requires_grad and not out.is_leaf
    (out * tgx.arange(4).float()).sum().backward()
    assert v.grad.tolist() == [4.0, 12.0]


def test_graph_drops_and_no_cycles_after_in_place():
    import gc
    gc.collect()
    x = Tensor(X, requires_grad=True)
    y = x * 2
    y.add_(1)
    y[0] = x[1]
    y.sum().backward()
    del x, y
    assert gc.collect() == 0


# ------------------------------------------------------------------------------------------
# optimizers write p.numpy() under the hood: a training step is unchanged
# ------------------------------------------------------------------------------------------

def _gpt_two_steps(fused):
    model, idx, tgt, opt = small_gpt_step(fused)
    for _ in range(2):
        opt.zero_grad()
        model(idx, tgt)[1].backward()
        opt.step()
    return {name: p.detach().numpy().copy() for name, p in model.named_parameters()}


def _no_version_checks(monkeypatch):
    """The engine as it was before version counters: the walk never looks at versions."""
    from tinygradx.core import walk
    monkeypatch.setattr(walk, "resolve_parents", lambda t, ctx: None)


@pytest.mark.parametrize("fused", [True, False], ids=["fused-attention", "op-by-op"])
def test_gpt_adamw_steps_are_bit_identical_without_the_checks(fused, monkeypatch):
    from tinygradx.fast import kernels
    monkeypatch.setattr(kernels, "ENABLED", False)   # the stored hash is the numpy path's
    with_checks = _gpt_two_steps(fused)
    _no_version_checks(monkeypatch)
    without = _gpt_two_steps(fused)
    for name in with_checks:
        assert np.array_equal(with_checks[name], without[name]), name
    h = hashlib.sha256()
    for name, a in with_checks.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(a).tobytes())
    # the parameters after 2 steps computed before in-place ops existed (commit 9ec1b15, on
    # the machine that wrote this test; BLAS builds may differ in the last bits elsewhere)
    if h.hexdigest() != GPT_HASH_BEFORE:
        pytest.skip("parameters differ from the stored pre-change hash (another BLAS?); "
                    "the comparison with the checks disabled passed")


GPT_HASH_BEFORE = "0d6cba1c931f1ed731c83f06ddc424cd52b6272b8406868c89d99fe9bb89a04c"
