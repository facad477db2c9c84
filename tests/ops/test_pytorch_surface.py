"""The PyTorch surface model code leans on, beyond the op-info table: in-place augmented
assignment, which constructors copy, the x[...] = v forms of model code, `.data`, layout,
the function forms, random fills and multinomial (by their moments), checked against torch
where torch is installed and against hand-computed values always."""
import math

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# -- augmented assignment is in place, as in PyTorch -----------------------------------------

@pytest.mark.parametrize("sym", ["+", "-", "*", "/"])
def test_augmented_assignment_is_in_place_and_aliases_see_it(sym):
    x = tgx.tensor([1.0, 2.0, 4.0])
    alias, view = x, x[1:]
    y = x
    exec(f"y {sym}= 2.0")
    assert y is x and alias is x
    want = {"+": [3, 4, 6], "-": [-1, 0, 2], "*": [2, 4, 8], "/": [0.5, 1, 2]}[sym]
    np.testing.assert_allclose(alias.numpy(), want)
    np.testing.assert_allclose(view.numpy(), want[1:])     # same memory


def test_augmented_assignment_refuses_a_leaf_that_requires_grad_outside_no_grad():
    w = tgx.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w += 1
    with tgx.no_grad():
        w -= 0.5                       # what an optimizer step does
    np.testing.assert_array_equal(w.detach().numpy(), [0.5] * 3)
    assert w.requires_grad and w.is_leaf


def test_augmented_assignment_keeps_the_dtype_and_shape():
    i = tgx.tensor([5, 7])
    i *= 2
    assert i.dtype == np.int64 and i.tolist() == [10, 14]
    with pytest.raises(TypeError, match="can't be cast to the dtype int64"):
        i /= 2                         # torch: "result type Float can't be cast to ... Long"
    x = tgx.zeros(3)
    with pytest.raises(tgx.OpError, match="must keep the shape"):
        x += tgx.ones(2, 3)
    b = tgx.tensor([True, False])
    b |= tgx.tensor([False, True])
    assert b.tolist() == [True, True]


def test_augmented_assignment_on_a_non_leaf_gives_torch_gradients():
    def run(lib, x):
        h = x * 2
        h += x ** 2                    # in place on a non-leaf: the graph goes through it
        h *= 3
        h.sum().backward()
        return x.grad
    g = run(tgx, tgx.tensor([1.0, -2.0], requires_grad=True))
    np.testing.assert_allclose(g.numpy(), 3 * (2 + 2 * np.array([1.0, -2.0])))
    if torch is not None:
        t = run(torch, torch.tensor([1.0, -2.0], requires_grad=True))
        np.testing.assert_allclose(g.numpy(), t.numpy())


def test_matmul_assignment_rebinds_as_in_torch():
    x = tgx.ones(2, 2)
    y = x
    x @= tgx.ones(2, 2)
    assert x is not y and y.tolist() == [[1, 1], [1, 1]]


# -- which constructors copy -----------------------------------------------------------------

def test_tensor_copies_from_numpy_shares():
    a = np.ones(3, np.float32)
    t, s, c = tgx.tensor(a), tgx.from_numpy(a), tgx.Tensor(a)
    a[0] = 5
    assert t.tolist() == [1, 1, 1]                 # torch.tensor: a copy
    assert s.tolist()[0] == 5 and c.tolist()[0] == 5   # from_numpy (and the class): shared
    s[1] = 7
    assert a[1] == 7
    src = tgx.ones(2, requires_grad=True)
    d = tgx.tensor(src)                            # a detached copy, as torch.tensor(t)
    assert not d.requires_grad and not np.shares_memory(d.detach().numpy(), src.detach().numpy())
    assert tgx.as_tensor(a).numpy() is a and tgx.as_tensor(src) is src
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        tgx.from_numpy([1, 2])
    if torch is not None:
        assert str(torch.from_numpy(np.zeros(2, np.int32)).dtype) == "torch.int32"
        assert tgx.from_numpy(np.zeros(2, np.int32)).dtype == np.int32


def test_float32_divided_by_int64_stays_float32():
    r = tgx.ones(3) / tgx.tensor([1, 2, 3])
    assert r.dtype == np.float32
    assert (tgx.tensor([1, 2]) / tgx.tensor([2, 4])).dtype == np.float32
    if torch is not None:
        assert (torch.ones(3) / torch.tensor([1, 2, 3])).dtype == torch.float32


def test_typed_constructors_and_dtype_names():
    assert tgx.LongTensor([1, 2]).dtype == np.int64 and tgx.LongTensor([1, 2]).tolist() == [1, 2]
    assert tgx.FloatTensor(2, 3).shape == (2, 3) and tgx.FloatTensor(2, 3).dtype == np.float32
    assert tgx.LongTensor(3).shape == (3,) and tgx.FloatTensor().shape == (0,)
    assert tgx.BoolTensor([1, 0]).tolist() == [True, False]
    assert tgx.ones(2).type(tgx.LongTensor).dtype == np.int64
    assert tgx.ones(2).type() == "tinygradx.FloatTensor"
    for name, dt in (("long", np.int64), ("float", np.float32), ("double", np.float64),
                     ("half", np.float16), ("int", np.int32), ("short", np.int16),
                     ("bool", np.bool_), ("float32", np.float32), ("int64", np.int64)):
        assert np.dtype(getattr(tgx, name)) == dt
        if torch is not None:
            assert str(getattr(torch, name)).split(".")[1] in (np.dtype(dt).name, "bool")
    assert tgx.zeros(2, dtype=tgx.long).dtype == np.int64
    import tinygradx
    assert "float" not in tinygradx.__all__ and "long" in tinygradx.__all__


# -- x[...] = v in the forms model code uses ---------------------------------------------------

def test_setitem_forms_of_model_code():
    pe = tgx.zeros(6, 4)
    pos = tgx.arange(0, 6).unsqueeze(1).float()
    div = tgx.exp(tgx.arange(0, 4, 2).float() * (-math.log(10000.0) / 4))
    pe[:, 0::2] = tgx.sin(pos * div)
    pe[:, 1::2] = tgx.cos(pos * div)
    p, d = np.arange(6)[:, None], np.exp(np.arange(0, 4, 2) * (-math.log(10000.0) / 4))
    np.testing.assert_allclose(pe.numpy()[:, 0::2], np.sin(p * d), rtol=1e-6)
    np.testing.assert_allclose(pe.numpy()[:, 1::2], np.cos(p * d), rtol=1e-6)
    logits = tgx.tensor([[0.5, 2.0, -1.0, 3.0], [1.0, 0.0, 4.0, 2.0]])
    v, _ = tgx.topk(logits, 2)
    logits[logits < v[:, [-1]]] = -float("inf")
    inf = float("inf")
    assert logits.tolist() == [[-inf, 2.0, -inf, 3.0], [-inf, -inf, 4.0, 2.0]]
    true_dist = tgx.zeros(3, 5)
    true_dist.fill_(0.1 / 3)
    true_dist.scatter_(1, tgx.tensor([[1], [4], [0]]), 0.9)
    true_dist[:, 0] = 0
    want = np.full((3, 5), 0.1 / 3, np.float32)
    want[[0, 1, 2], [1, 4, 0]] = 0.9
    want[:, 0] = 0
    np.testing.assert_allclose(true_dist.numpy(), want)
    t = tgx.ones(2, 5)
    t[:, tgx.tensor([1, 3])] = 0
    t[:, [4]] = 2
    t.index_fill_(1, tgx.tensor([0]), -1.0)
    assert t.tolist() == [[-1, 0, 1, 0, 2]] * 2


@needs_torch
def test_setitem_forms_match_torch():
    def run(lib):
        pe = lib.zeros(6, 4)
        pos = lib.arange(0, 6).unsqueeze(1).float()
        div = lib.exp(lib.arange(0, 4, 2).float() * (-math.log(10000.0) / 4))
        pe[:, 0::2] = lib.sin(pos * div)
        pe[:, 1::2] = lib.cos(pos * div)
        x = lib.tensor([[0.5, 2.0, -1.0, 3.0], [1.0, 0.0, 4.0, 2.0]])
        x[x < lib.topk(x, 2)[0][:, [-1]]] = -float("inf")
        d = lib.zeros(3, 5)
        d.fill_(0.1 / 3)
        d.scatter_(1, lib.tensor([[1], [4], [0]]), 0.9)
        d[:, lib.tensor([0, 2])] = 0
        return [pe, x, d]
    for a, b in zip(run(tgx), run(torch), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_setitem_and_scatter_give_torch_gradients():
    def run(lib, x, v):
        y = x * 1
        y[:, 0::2] = v * 3
        y.scatter_(1, lib.tensor([[1], [0]]), 0.5)
        (y * y).sum().backward()
        return x.grad, v.grad
    xs, vs = np.arange(8.0).reshape(2, 4) / 7, np.array([[1.0, -2.0], [0.5, 3.0]])
    g = run(tgx, tgx.tensor(xs, requires_grad=True), tgx.tensor(vs, requires_grad=True))
    want_x = 2 * xs
    want_x[:, 0::2] = 0
    want_x[[0, 1], [1, 0]] = 0
    np.testing.assert_allclose(g[0].numpy(), want_x)
    if torch is not None:
        t = run(torch, torch.tensor(xs, requires_grad=True), torch.tensor(vs, requires_grad=True))
        for a, b in zip(g, t, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy())


# -- .data, layout, conversions ----------------------------------------------------------------

def test_data_forms_of_initialisers():
    p = nn.Parameter(tgx.ones(3, 4))
    c = p.data.clone()
    assert not np.shares_memory(c.detach().numpy(), p.detach().numpy())
    assert p.data.unsqueeze(1).shape == (3, 1, 4)
    p.data.copy_(tgx.full((3, 4), 2.0))
    assert p.detach().numpy().sum() == 24
    tgx.manual_seed(0)
    p.data.normal_(0, 0.02)
    assert abs(float(p.detach().numpy().std()) - 0.02) < 0.015 and p.requires_grad
    p.data.zero_()
    assert not p.detach().numpy().any()
    p.data.fill_(3.0)
    assert p.detach().numpy().min() == 3


def test_contiguous_and_is_contiguous_as_torch():
    x = tgx.arange(6.0).reshape(2, 3)
    assert x.is_contiguous() and x.contiguous() is x
    t = x.T
    assert not t.is_contiguous() and not x.expand(2, 2, 3).is_contiguous()
    c = t.contiguous()
    assert c.is_contiguous() and c.tolist() == t.tolist()
    c[0, 0] = 100                  # a copy: writing into it never changes x (torch's aliasing)
    assert x.tolist()[0][0] == 0
    w = tgx.ones(2, 3, requires_grad=True)
    (w.T.contiguous() * tgx.arange(6.0).reshape(3, 2)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.arange(6.0).reshape(3, 2).T)
    if torch is not None:
        tx = torch.arange(6.0).reshape(2, 3)
        assert tx.T.is_contiguous() == t.is_contiguous() and tx.contiguous() is tx


def test_type_as_view_as_new_star_keep_torch_dtypes():
    x = tgx.ones(2, 3)
    assert x.type_as(tgx.tensor([1])).dtype == np.int64
    assert x.view_as(tgx.zeros(3, 2)).shape == (3, 2)
    assert x.new_tensor([1, 2]).dtype == np.float32          # self's dtype, not data's
    assert tgx.tensor([1]).new_full((2,), 3.5).tolist() == [3, 3]
    assert x.new_zeros(2, 2).dtype == np.float32 and x.new_ones((1,), dtype=tgx.int64).dtype \
        == np.int64
    assert x.new_zeros(2, requires_grad=True).requires_grad
    if torch is not None:
        tx = torch.ones(2, 3)
        assert tx.new_tensor([1, 2]).dtype == torch.float32
        assert torch.tensor([1]).new_full((2,), 3.5).tolist() == [3, 3]


# -- the function forms -----------------------------------------------------------------------

def test_max_min_forms_and_named_tuple():
    x = tgx.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    r = tgx.max(x, 1)
    assert r.values.tolist() == [5, 7] and r.indices.tolist() == [1, 0]
    v, i = tgx.min(x, dim=0, keepdim=True)
    assert v.tolist() == [[1, 0, 2]] and i.tolist() == [[0, 1, 0]]
    assert tgx.max(x).item() == 7 and tgx.min(x).item() == 0
    assert tgx.max(x, tgx.full((2, 3), 4.0)).tolist() == [[4, 5, 4], [7, 4, 4]]
    assert tgx.min(x, other=tgx.full((3,), 2.0)).tolist() == [[1, 2, 2], [2, 0, 2]]
    with pytest.raises(TypeError, match="takes no dim"):
        tgx.max(x, 1, other=x)
    with pytest.raises(TypeError, match="max: expected a Tensor"):
        tgx.max([1, 2])
    assert tgx.pow(2, tgx.tensor([1.0, 3.0])).tolist() == [2, 8]
    assert tgx.sum(tgx.tensor([True, True, False])).item() == 2
    assert tgx.sum(x, dtype=tgx.float64).dtype == np.float64
    assert tgx.numel(x) == 6 and tgx.is_tensor(x) and not tgx.is_tensor(x.numpy())
    assert tgx.is_tensor(nn.Parameter(tgx.ones(1)))


def test_bmm_checks_its_shapes():
    a, b = tgx.randn(2, 3, 4), tgx.randn(2, 4, 5)
    np.testing.assert_allclose(tgx.bmm(a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5)
    with pytest.raises(tgx.OpError, match="bmm: expects two 3-d tensors"):
        tgx.bmm(tgx.ones(3, 4), tgx.ones(4, 5))
    with pytest.raises(tgx.OpError, match=r"bmm: shapes \(2, 3, 4\) and \(3, 4, 5\)"):
        tgx.bmm(a, tgx.ones(3, 4, 5))


def test_nonzero_forms():
    x = tgx.tensor([[0, 1], [2, 0]])
    assert tgx.nonzero(x).tolist() == [[0, 1], [1, 0]]
    rows, cols = tgx.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    y = tgx.zeros(2, 2)
    y[x.nonzero(as_tuple=True)] = 1
    assert y.tolist() == [[0, 1], [1, 0]]
    assert tgx.nonzero(tgx.tensor(5)).shape == (1, 0)
    assert [t.tolist() for t in tgx.nonzero(tgx.tensor(5), as_tuple=True)] == [[0]]


# -- random: multinomial and the fills, by their moments --------------------------------------

def test_multinomial_with_replacement_follows_the_weights():
    tgx.manual_seed(1)
    w = tgx.tensor([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]])      # need not sum to 1
    draws = tgx.multinomial(w, 20000, replacement=True)
    assert draws.shape == (2, 20000) and draws.dtype == np.int64
    f0 = np.bincount(draws.numpy()[0], minlength=3) / 20000
    f1 = np.bincount(draws.numpy()[1], minlength=3) / 20000
    np.testing.assert_allclose(f0, [0.25, 0, 0.75], atol=0.015)
    np.testing.assert_allclose(f1, [0, 0.5, 0.5], atol=0.015)


def test_multinomial_without_replacement():
    tgx.manual_seed(2)
    w = tgx.tensor([0.0, 1.0, 2.0, 7.0])
    firsts = []
    for _ in range(3000):
        d = w.multinomial(3).tolist()
        assert len(set(d)) == 3 and 0 not in d             # distinct, never a zero weight
        firsts.append(d[0])
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 3000, [0, 0.1, 0.2, 0.7],
                               atol=0.03)
    assert tgx.multinomial(tgx.tensor([1.0, 2.0]), 1).shape == (1,)
    with pytest.raises(tgx.OpError, match="only 3 non-zero weights"):
        w.multinomial(4)
    with pytest.raises(tgx.OpError, match="cannot draw 5 samples without replacement from 4"):
        w.multinomial(5)
    with pytest.raises(tgx.OpError, match="inf, nan or a negative"):
        tgx.multinomial(tgx.tensor([1.0, -1.0]), 1)
    with pytest.raises(tgx.OpError, match="sums to 0"):
        tgx.multinomial(tgx.zeros(2, 3), 1, replacement=True)
    with pytest.raises(tgx.OpError, match="1-d or 2-d float"):
        tgx.multinomial(tgx.tensor([1, 2]), 1)


def test_random_fills_have_the_asked_moments_and_follow_manual_seed():
    x = tgx.empty(200_000)
    tgx.manual_seed(3)
    x.normal_(1.5, 2.0)
    a = x.numpy().copy()
    assert abs(a.mean() - 1.5) < 0.02 and abs(a.std() - 2.0) < 0.02
    tgx.manual_seed(3)
    np.testing.assert_array_equal(x.normal_(1.5, 2.0).numpy(), a)   # the one generator
    u = x.uniform_(-1.0, 3.0).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.02
    assert abs(u.var() - 16 / 12) < 0.02
    b = x.bernoulli_(0.3).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.01
    e = x.exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    ints = tgx.zeros(1000, dtype=tgx.int64).bernoulli_(0.5)
    assert ints.dtype == np.int64 and 400 < int(ints.sum().item()) < 600
    with pytest.raises(TypeError, match="normal_: needs a floating-point tensor"):
        tgx.zeros(3, dtype=tgx.int64).normal_()
    with pytest.raises(ValueError, match="std must be >= 0"):
        x.normal_(0, -1.0)


def test_random_fill_of_a_leaf_refuses_outside_no_grad_and_cuts_the_graph():
    w = tgx.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w.normal_()
    with tgx.no_grad():
        w.uniform_(-0.1, 0.1)
    assert np.abs(w.detach().numpy()).max() <= 0.1
    x = tgx.ones(3, requires_grad=True)
    h = x * 2
    h.normal_()                     # the old value is overwritten: zero gradient to x
    (h * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_model_code_idioms_run_unchanged():
    """Lines as PyTorch model code writes them (the Annotated Transformer, nanoGPT), with
    tinygradx in torch's place."""
    import copy
    torch = tgx
    nn = tgx.nn
    layer = nn.Linear(4, 4)
    clones = nn.ModuleList([copy.deepcopy(layer) for _ in range(2)])
    assert clones[0].weight is not layer.weight
    mask = torch.triu(torch.ones((1, 3, 3)), diagonal=1).type(torch.uint8) == 0
    assert mask.dtype == np.bool_ and mask.tolist()[0] == [[True, False, False],
                                                           [True, True, False],
                                                           [True, True, True]]
    x = torch.randn(2, 3, 5)
    assert x.transpose(1, 2).contiguous().view(2, 15).shape == (2, 15) and x.size(-1) == 5
    assert torch.arange(0, 3, dtype=torch.long, device="cpu").dtype == np.int64

    @torch.no_grad()
    def generate(idx, logits):
        v, _ = torch.topk(logits, min(2, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float("Inf")
        probs = torch.softmax(logits, dim=-1)
        return torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
    out = generate(torch.zeros(2, 3, dtype=torch.long), torch.randn(2, 7, requires_grad=True))
    assert out.shape == (2, 4) and out.dtype == np.int64 and not out.requires_grad
    target = torch.tensor([2, 0, 3])
    logp = torch.randn(3, 5).log_softmax(-1)
    true_dist = logp.data.clone()
    true_dist.fill_(0.1 / 3)
    true_dist.scatter_(1, target.data.unsqueeze(1), 0.9)
    true_dist[:, 0] = 0
    pad = torch.nonzero(target.data == 0)
    if pad.dim() > 0:
        true_dist.index_fill_(0, pad.squeeze(), 0.0)
    assert true_dist.numpy()[1].sum() == 0 and true_dist.numpy()[0, 2] == np.float32(0.9)
    loss = nn.KLDivLoss(reduction="sum")(logp, true_dist.clone().detach())
    assert loss.shape == () and float(loss) > 0
    assert sum(p.numel() for p in layer.parameters()) == 20
