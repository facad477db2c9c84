"""The everyday torch idioms a training script uses, checked against torch where installed:
`//` and `%` with their dtypes, function forms, randperm, save/load, Embedding.from_pretrained,
the grad-mode decorators, load_state_dict's result, where(cond), the legacy torch.Tensor,
roll without dims; and valid code torch runs that must run here (frozen parameters in an
optimizer, masked_fill broadcasting the input, tie-breaking of argmax/max/sort/topk)."""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.compat as compat
from tinygradx import nn

torch = pytest.importorskip("torch")


def _t(a):
    return torch.tensor(np.asarray(a))


# -- integer-style division ---------------------------------------------------------------------

DIV_CASES = [
    (np.array([5, -5, 7, -7, 0]), np.array([2, 2, -3, -3, 4])),
    (np.array([5.5, -5.5, 1.0, -1.0]), np.array([2.0, 2.0, 0.1, -0.1], np.float32)),
    (np.array([5, -5], np.int32), 2.5),
    (np.array([5.0, -5.0], np.float32), np.array([2, -3])),
    (np.array([3.0, -3.0]), np.array([0.0, 0.0])),
    (np.array([True, False]) * 7, -2),
]


@pytest.mark.parametrize("a,b", DIV_CASES)
@pytest.mark.parametrize("op", ["//", "%", "rev//", "rev%", "fmod", "floor", "trunc"])
def test_division_forms_match_torch(a, b, op):
    def run(lib, x, y):
        return {"//": lambda: x // y, "%": lambda: x % y,
                "rev//": lambda: 7 // x if np.all(np.asarray(a) != 0) else x // y,
                "rev%": lambda: 7 % x if np.all(np.asarray(a) != 0) else x % y,
                "fmod": lambda: lib.fmod(x, y),
                "floor": lambda: lib.div(x, y, rounding_mode="floor"),
                "trunc": lambda: lib.div(x, y, rounding_mode="trunc")}[op]()
    yb = b if np.isscalar(b) else None
    with np.errstate(all="ignore"):
        try:
            want = run(torch, _t(a), yb if yb is not None else _t(b))
        except RuntimeError as err:          # integer division by zero
            with pytest.raises(Exception, match="division by zero"):
                run(tgx, tgx.tensor(a), yb if yb is not None else tgx.tensor(b))
            assert "ZeroDivision" in str(err)
            return
        got = run(tgx, tgx.tensor(a), yb if yb is not None else tgx.tensor(b))
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def test_division_gradients_match_torch():
    a = np.array([5.5, -5.5, 3.25, -0.75])
    b = np.array([2.0, -2.0, 1.5, 0.5])
    for name in ("remainder", "fmod"):
        ta, tb = _t(a).requires_grad_(), _t(b).requires_grad_()
        xa, xb = tgx.tensor(a, requires_grad=True), tgx.tensor(b, requires_grad=True)
        getattr(torch, name)(ta, tb).sum().backward()
        getattr(tgx, name)(xa, xb).sum().backward()
        np.testing.assert_allclose(xa.grad.detach().numpy(), ta.grad.detach().numpy())
        np.testing.assert_allclose(xb.grad.detach().numpy(), tb.grad.detach().numpy())
    xa = tgx.tensor(a, requires_grad=True)
    xa.div(2.0, rounding_mode="floor").sum().backward()     # a zero gradient, as torch
    assert np.all(xa.grad.detach().numpy() == 0)
    with pytest.raises(tgx.OpError, match="floor_divide .* has no derivative"):
        (tgx.tensor(a, requires_grad=True) // 2).sum().backward()


def test_in_place_division_and_shifts():
    x = tgx.tensor([5, -5, 9])
    x //= 2
    assert x.tolist() == [2, -3, 4]
    x %= 3
    assert x.tolist() == [2, 0, 1]
    x <<= 2
    assert x.tolist() == [8, 0, 4]
    x >>= 1
    assert x.tolist() == [4, 0, 2]
    assert (1 << tgx.tensor([1, 2])).tolist() == [2, 4]
    with pytest.raises(TypeError, match=r"<<: needs integer tensors; got float32 and int"):
        tgx.tensor([1.0]) << 1


# -- function forms -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gt", "lt", "ge", "le", "ne", "eq", "greater", "less",
                                  "greater_equal", "less_equal", "not_equal", "logical_and",
                                  "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "add", "sub", "mul", "div", "true_divide",
                                  "remainder", "fmod", "floor_divide", "maximum", "minimum"])
def test_binary_function_forms_match_torch(name):
    a, b = np.array([3, 0, -2, 5]), np.array([1, 0, 2, 5])
    want = getattr(torch, name)(_t(a), _t(b) if name not in ("remainder", "fmod", "div",
                                                              "floor_divide", "true_divide")
                                else _t(b + (b == 0)))
    got = getattr(tgx, name)(tgx.tensor(a), tgx.tensor(b if name not in (
        "remainder", "fmod", "div", "floor_divide", "true_divide") else b + (b == 0)))
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("name,args", [
    ("erf", ()), ("logical_not", ()), ("relu", ()), ("clone", ()), ("ravel", ()),
    ("count_nonzero", ()), ("argwhere", ()), ("amax", (0,)), ("amin", (0,)),
    ("logsumexp", (0,)), ("clamp_min", (0.5,)), ("clamp_max", (0.5,)),
    ("is_floating_point", ()), ("bitwise_not", ())])
def test_unary_function_forms_match_torch(name, args):
    a = np.array([[0.5, -1.0, 0.0], [2.0, 0.25, -0.5]])
    if name == "bitwise_not":
        a = np.array([1, 0, -3])
    want = getattr(torch, name)(_t(a), *args)
    got = getattr(tgx, name)(tgx.tensor(a), *args)
    if isinstance(want, bool):
        assert got is want
        return
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


def test_matrix_function_forms_match_torch():
    rng = np.random.default_rng(0)
    m, v, w = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4)
    np.testing.assert_allclose(tgx.mm(tgx.tensor(m), tgx.tensor(m.T)).detach().numpy(),
                               torch.mm(_t(m), _t(m.T)).detach().numpy())
    np.testing.assert_allclose(tgx.mv(tgx.tensor(m), tgx.tensor(v)).detach().numpy(),
                               torch.mv(_t(m), _t(v)).detach().numpy())
    np.testing.assert_allclose(tgx.dot(tgx.tensor(v), tgx.tensor(w)).detach().numpy(),
                               torch.dot(_t(v), _t(w)).detach().numpy())
    with pytest.raises(tgx.OpError, match="mm: expects two 2-d tensors"):
        tgx.mm(tgx.tensor(v), tgx.tensor(m))


def test_where_with_one_argument_is_nonzero_as_a_tuple():
    c = np.array([[True, False, True], [False, True, True]])
    got, want = tgx.where(tgx.tensor(c)), torch.where(_t(c))
    assert isinstance(got, tuple) and len(got) == len(want) == 2
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
    with pytest.raises(TypeError, match="give both input and other"):
        tgx.where(tgx.tensor(c), tgx.ones(2, 3))


def test_roll_without_dims_flattens_as_torch():
    a = np.arange(6).reshape(2, 3)
    for shifts in (1, (1,), [2], -4):
        np.testing.assert_array_equal(tgx.tensor(a).roll(shifts).detach().numpy(),
                                      _t(a).roll(shifts).detach().numpy())
    with pytest.raises(tgx.OpError, match="without dims, shifts must be one int"):
        tgx.tensor(a).roll((1, 2))


# -- random ------------------------------------------------------------------------------------

def test_randperm_and_generators():
    tgx.manual_seed(0)
    p = tgx.randperm(10)
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(10))
    g1, g2 = tgx.Generator().manual_seed(3), tgx.Generator().manual_seed(3)
    assert tgx.randperm(8, generator=g1).tolist() == tgx.randperm(8, generator=g2).tolist()
    assert tgx.randperm(0).shape == (0,)
    with pytest.raises(ValueError, match="randperm: n must be a non-negative int"):
        tgx.randperm(-1)
    b = tgx.bernoulli(tgx.full((1000,), 0.25))
    assert b.dtype == np.float32 and set(np.unique(b.detach().numpy())) <= {0.0, 1.0}
    assert 150 < b.sum().item() < 350


# -- save / load --------------------------------------------------------------------------------

def test_save_and_load_round_trip_a_checkpoint_dict(tmp_path):
    model = nn.Linear(3, 2)
    opt = tgx.optim.AdamW(model.parameters(), lr=1e-3)
    model(tgx.randn(4, 3)).sum().backward()
    opt.step()
    obj = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 7,
           "loss": 1.25, "nan": float("nan"), "names": ("a", "b"), "ids": {0: [1, 2]},
           "none": None, "array": np.arange(3), "param": model.weight}
    path = tmp_path / "ckpt.pt"
    tgx.save(obj, path)
    back = tgx.load(path, map_location="cpu")
    assert back["step"] == 7 and back["loss"] == 1.25 and np.isnan(back["nan"])
    assert back["names"] == ("a", "b") and back["ids"] == {0: [1, 2]} and back["none"] is None
    assert isinstance(back["array"], np.ndarray) and back["param"].requires_grad
    fresh = nn.Linear(3, 2)
    assert fresh.load_state_dict(back["model"]) == ([], [])
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), model.weight.detach().numpy())
    opt2 = tgx.optim.AdamW(fresh.parameters(), lr=1e-3)
    opt2.load_state_dict(back["optimizer"])


def test_save_refuses_objects_by_name_and_touches_nothing(tmp_path):
    path = tmp_path / "ckpt.pt"
    with pytest.raises(TypeError, match=r"cannot save obj\['model'\] of type Linear"):
        tgx.save({"model": nn.Linear(2, 2)}, path)
    with pytest.raises(TypeError, match=r"cannot save obj\['f'\]\[1\] of type function"):
        tgx.save({"f": [1, lambda: 0]}, path)
    assert not path.exists()
    with pytest.raises(RuntimeError, match="map_location='cuda'"):
        tgx.save({"w": tgx.ones(1)}, path) or tgx.load(path, map_location="cuda")


def test_load_reads_a_pytorch_file(tmp_path):
    """tinygradx.ptfile's restricted reader (tests/io/test_torch_files.py has the rest)."""
    path = tmp_path / "theirs.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert tgx.load(path)["w"].tolist() == [1.0, 1.0]


# -- modules ------------------------------------------------------------------------------------

def test_embedding_from_pretrained_as_torch():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[0, 2, 3], [2, 2, 1]])
    for freeze, pad in ((True, None), (False, 2)):
        mine = nn.Embedding.from_pretrained(tgx.tensor(table), freeze=freeze, padding_idx=pad)
        theirs = torch.nn.Embedding.from_pretrained(_t(table), freeze=freeze, padding_idx=pad)
        assert mine.weight.requires_grad == theirs.weight.requires_grad
        out, want = mine(tgx.tensor(ids)), theirs(_t(ids))
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        if not freeze:
            out.sum().backward()
            want.sum().backward()
            np.testing.assert_array_equal(mine.weight.grad.numpy(), theirs.weight.grad.numpy())
    state = tgx.get_rng_state()
    nn.Embedding.from_pretrained(table)
    assert tgx.get_rng_state() == state                     # draws nothing


def test_load_state_dict_returns_the_named_tuple():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    state = dict(model.state_dict())
    state.pop("1.bias")
    state["extra"] = np.zeros(1)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["1.bias"] and result.unexpected_keys == ["extra"]
    missing, unexpected = result
    assert (missing, unexpected) == (["1.bias"], ["extra"])


def test_grad_mode_decorators_with_and_without_the_call():
    x = tgx.ones(2, requires_grad=True)

    @tgx.no_grad
    def bare(t):
        return t * 2

    @tgx.no_grad()
    def called(t):
        return t * 2

    @tgx.inference_mode
    def inference(t):
        return t * 2

    @tgx.no_grad
    def outer(t, depth):
        inner = enabled(t) if depth == 0 else outer(t, depth - 1)
        assert not tgx.is_grad_enabled()                     # each call restores its own mode
        return inner

    @tgx.enable_grad
    def enabled(t):
        return t * 2

    for f in (bare, called, inference):
        assert not f(x).requires_grad and tgx.is_grad_enabled()
    assert outer(x, 2).requires_grad and tgx.is_grad_enabled()
    assert bare.__name__ == "bare"


def test_the_lookalikes_legacy_tensor_constructor():
    with compat.installed() as t:
        a = t.Tensor(3, 4)
        b = t.Tensor([1, 2])
        assert a.shape == (3, 4) and a.dtype == np.float32
        assert b.dtype == np.float32 and b.tolist() == [1.0, 2.0]
        assert isinstance(tgx.zeros(1), t.Tensor) and issubclass(nn.Parameter, t.Tensor)

        class Mine(t.Tensor):
            pass
        assert issubclass(Mine, tgx.Tensor)
        assert t.FloatTensor([1]).dtype == np.float32


# -- valid code torch runs: frozen parameters, masked_fill broadcast, ties ----------------------

def test_optimizers_skip_frozen_parameters_as_torch():
    for opt_cls in (tgx.optim.SGD, tgx.optim.Adam, tgx.optim.AdamW):
        frozen = nn.Parameter(tgx.ones(2), requires_grad=False)
        live = nn.Parameter(tgx.ones(2))
        opt = opt_cls([frozen, live], lr=0.1, weight_decay=0.1)
        (live * 3).sum().backward()
        opt.step()
        opt.zero_grad()
        assert frozen.tolist() == [1.0, 1.0] and live.tolist() != [1.0, 1.0]


def test_masked_fill_broadcasts_the_input_up_to_the_mask():
    x = np.array([1.0, 2.0, 3.0])
    mask = np.array([[True, False, False], [False, False, True]])
    tx, xx = _t(x).requires_grad_(), tgx.tensor(x, requires_grad=True)
    want, got = tx.masked_fill(_t(mask), -1.0), xx.masked_fill(tgx.tensor(mask), -1.0)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_array_equal(xx.grad.detach().numpy(), tx.grad.detach().numpy())
    with pytest.raises(tgx.OpError, match="the result has shape \\(2, 3\\)"):
        tgx.tensor(x).masked_fill_(tgx.tensor(mask), 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_ties_break_as_torch(seed):
    """argmax/argmin/max(dim)/min(dim): the first index, as torch on the CPU; sort: stable,
    as torch's sort(stable=True); topk: the values of torch's, and among equal values the
    lowest index first (torch leaves the order of ties unspecified)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, size=(3, int(rng.integers(1, 12)))).astype(np.float64)
    if seed % 4 == 0:
        a[1, -1] = np.nan
    t, x = _t(a), tgx.tensor(a)
    for dim in (0, 1, -1):
        np.testing.assert_array_equal(x.argmax(dim).numpy(), t.argmax(dim).numpy())
        np.testing.assert_array_equal(x.argmin(dim).numpy(), t.argmin(dim).numpy())
        np.testing.assert_array_equal(x.max(dim)[1].numpy(), t.max(dim)[1].numpy())
        np.testing.assert_array_equal(x.min(dim)[1].numpy(), t.min(dim)[1].numpy())
        for desc in (False, True):
            sv, si = x.sort(dim=dim, descending=desc)
            tv, ti = t.sort(dim=dim, descending=desc, stable=True)
            np.testing.assert_array_equal(si.detach().numpy(), ti.detach().numpy())
            np.testing.assert_array_equal(sv.detach().numpy(), tv.detach().numpy())
    assert x.argmax().item() == t.argmax().item()
    k = min(3, a.shape[1])
    for largest in (True, False):
        v, i = x.topk(k, largest=largest)
        np.testing.assert_array_equal(v.numpy(), t.topk(k, largest=largest)[0].numpy())
        order = np.argsort(-a if largest else a, axis=-1, kind="stable")[:, :k]
        nan_rows = np.isnan(a).any(-1)
        np.testing.assert_array_equal(i.detach().numpy()[~nan_rows], order[~nan_rows])


def test_shape_numel_as_torch_size():
    """x.shape and x.size() answer torch.Size's numel(), slice and add as shapes, and still
    print and compare as the plain tuple (so printed shapes read as before)."""
    x = tgx.zeros(2, 3, 4)
    assert x.shape.numel() == x.size().numel() == x.numel() == 24
    assert x.shape == (2, 3, 4) and repr(x.shape) == "(2, 3, 4)" and x.shape[1:] == (3, 4)
    assert x.shape[1:].numel() == 12 and (x.shape + (5,)).numel() == 120
    assert tgx.zeros(()).shape.numel() == 1 and tgx.zeros(0, 3).shape.numel() == 0
    torch = pytest.importorskip("torch")
    assert torch.zeros(2, 3, 4).shape.numel() == x.shape.numel()
