"""nn.Module: discovery, names, state_dict, modes, scopes, repr; the layers' shapes, their
PyTorch-compatible initialisation, and MultiHeadAttention's masks."""
import math

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn


class Block(nn.Module):
    def __init__(self, d):
        self.fc = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.ln(self.fc(x)).gelu())


class Net(nn.Module):
    """Every way of holding sub-modules: attribute, list, dict, ModuleList, ModuleDict,
    Sequential, plus a tied weight and a bare Parameter."""

    def __init__(self, vocab=10, d=4):
        self.emb = nn.Embedding(vocab, d)
        self.blocks = [Block(d), Block(d)]
        self.heads = {"a": nn.Linear(d, 2), "b": nn.Linear(d, 3)}
        self.ml = nn.ModuleList([nn.Linear(d, d)])
        self.md = nn.ModuleDict({"x": nn.Linear(d, d)})
        self.seq = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.scale = nn.Parameter(np.ones((), np.float32))
        self.out = nn.Linear(d, vocab, bias=False)
        self.out.weight = self.emb.weight                  # tied
        self._private = nn.Linear(d, d)                    # underscore: not a member

    def forward(self, ids):
        h = self.emb(ids)
        for b in self.blocks:
            h = b(h)
        h = self.md["x"](self.ml[0](self.seq(h))) * self.scale
        return self.out(h) + self.heads["a"](h).sum()


EXPECTED_NAMES = [
    "emb.weight",
    "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.ln.weight", "blocks.0.ln.bias",
    "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.ln.weight", "blocks.1.ln.bias",
    "heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias",
    "ml.0.weight", "ml.0.bias", "md.x.weight", "md.x.bias", "seq.0.weight", "seq.0.bias",
    "scale",
]


def test_discovery_and_dotted_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert sorted(names) == sorted(EXPECTED_NAMES)
    assert len(list(net.parameters())) == len(EXPECTED_NAMES)
    modules = dict(net.named_modules())
    for path in ["", "emb", "blocks.0", "blocks.1.drop", "heads.b", "ml", "ml.0", "md", "md.x",
                 "seq", "seq.1", "out"]:
        assert path in modules, path
    assert "_private" not in modules and modules[""] is net
    assert [n for n, _ in net.named_children()][:2] == ["emb", "blocks.0"]
    assert net.md.x is net.md["x"] and "x" in net.md and len(net.seq) == 2


def test_tied_weights_are_listed_once():
    net = Net()
    params = list(net.parameters())
    assert sum(p is net.emb.weight for p in params) == 1
    assert "out.weight" not in dict(net.named_parameters())
    n = sum(p.numel() for p in params)
    assert net.num_parameters() == n
    ids = tgx.tensor([[1, 2, 3]])
    net(ids).sum().backward()
    assert net.emb.weight.grad is not None        # gets gradient from both uses


def test_shared_module_is_listed_once():
    lin = nn.Linear(3, 3)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]


def test_num_parameters():
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2, bias=False))
    assert net.num_parameters() == 4 * 3 + 3 + 3 * 2
    net[1].weight.requires_grad = False
    assert net.num_parameters(trainable_only=True) == 15


def test_state_dict_round_trip():
    tgx.manual_seed(0)
    a = Net()
    tgx.manual_seed(1)
    b = Net()
    sd = a.state_dict()
    assert list(sd) == [n for n, _ in a.named_parameters()]
    assert all(isinstance(v, Tensor) and not v.requires_grad for v in sd.values())
    b.load_state_dict(sd)
    for (n1, p1), (n2, p2) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert n1 == n2 and p1 is not p2
        np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())
    ids = tgx.tensor([[0, 3, 9]])
    a.eval(), b.eval()
    np.testing.assert_array_equal(a(ids).detach().numpy(), b(ids).detach().numpy())
    # numpy arrays load too, into the same Parameter objects (in place)
    w = b.emb.weight
    b.load_state_dict({k: np.zeros(v.shape, np.float32) for k, v in sd.items()})
    assert b.emb.weight is w and np.all(w.detach().numpy() == 0)


def test_load_state_dict_reports_every_problem_once():
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    sd = dict(net.state_dict())
    del sd["1.bias"]                                      # missing
    sd["1.extra"] = np.zeros(2)                           # unexpected
    sd["0.weight"] = np.zeros((4, 4))                     # wrong shape
    with pytest.raises(nn.StateDictError) as err:
        net.load_state_dict(sd)
    msg = str(err.value)
    assert "3 problem(s)" in msg
    lines = msg.splitlines()[1:]
    assert len(lines) == 3
    assert any("missing" in ln and "'1.bias'" in ln for ln in lines)
    assert any("unexpected" in ln and "'1.extra'" in ln for ln in lines)
    assert any("size mismatch" in ln and "'0.weight'" in ln and "(4, 4)" in ln
               and "(3, 4)" in ln for ln in lines)
    assert isinstance(err.value, KeyError)
    before = net[1].weight.detach().numpy().copy()
    del sd["0.weight"]
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert missing == ["0.weight", "1.bias"] and unexpected == ["1.extra"]
    np.testing.assert_array_equal(net[1].weight.detach().numpy(), before)


def test_train_eval_propagates():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    x = tgx.randn(3, 4)
    drop = net.blocks[0].drop
    assert drop(x) is x                                   # dropout is identity in eval
    net.train()
    assert all(m.training for m in net.modules())
    assert not np.array_equal(drop(tgx.ones(50, 50)).numpy(), np.ones((50, 50)))


def test_zero_grad():
    net = nn.Sequential(nn.Linear(3, 2))
    net(tgx.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net(tgx.randn(4, 3)).sum().backward()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_repr_shows_the_tree_and_counts():
    text = repr(Net())
    lines = text.splitlines()
    assert lines[0].startswith("Net(") and f"{Net().num_parameters():,} parameters" in lines[0]
    assert "(emb): Embedding(10, 4)  # 40 parameters" in text
    assert "(blocks.0): Block()" in text and "(fc): Linear(in_features=4, out_features=4" in text
    assert "(weight): Parameter(4, 4)" in text and "(drop): Dropout(p=0.5, inplace=False)" in text
    assert "(seq): Sequential()" in text and "(1): GELU(approximate='none')" in text
    assert "    (fc)" in text                                # children are indented
    assert repr(nn.GELU()) == "GELU(approximate='none')"


def test_parameter():
    p = nn.Parameter(np.ones(3))
    assert p.requires_grad and isinstance(p, Tensor)
    assert repr(p).startswith("Parameter containing:")
    assert not nn.Parameter(np.ones(3), requires_grad=False).requires_grad


def test_double_converts_parameters():
    net = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    net.double()
    assert all(p.dtype == np.float64 for p in net.parameters())
    out = net(Tensor(np.ones((1, 3))))
    assert out.dtype == np.float64
    assert tgx.gradcheck(lambda x: net(x), (Tensor(np.ones((2, 3)), requires_grad=True),))


# ------------------------------------------------------------------------------------------
# scope: every node created inside a module call records the module's dotted path
# ------------------------------------------------------------------------------------------

def nodes(out):
    """Every graph node behind out, as (op name, scope)."""
    found, stack, seen = [], [out], set()
    while stack:
        t = stack.pop()
        if id(t) in seen or t._ctx is None:
            continue
        seen.add(id(t))
        found.append((t._ctx.name(), t._ctx.scope))
        stack.extend(t._ctx.parents)
    return found


def test_every_node_records_its_module_path():
    net = Net()
    out = net(tgx.tensor([[1, 2, 3]]))
    assert out._ctx.scope == ""                           # the final add is in Net.forward
    found = set(nodes(out))
    expected = {("embedding", "emb"), ("linear", "blocks.0.fc"),
                ("layer_norm", "blocks.0.ln"), ("gelu", "blocks.0"),
                ("dropout", "blocks.0.drop"), ("linear", "blocks.1.fc"),
                ("linear", "seq.0"), ("gelu", "seq.1"), ("linear", "ml.0"), ("linear", "md.x"),
                ("linear", "out"), ("linear", "heads.a"), ("mul", ""), ("sum", ""),
                ("add", "")}
    assert expected <= found, expected - found
    assert all(scope in dict(net.named_modules()) for _, scope in found)


def test_scope_of_a_module_called_on_its_own():
    # the outermost module call is the root of the paths: a sub-module called on its own
    # has the empty path, and the next call of the whole model names everything again
    net = Net()
    assert net.blocks[1].fc(tgx.randn(2, 4))._ctx.scope == ""
    found = set(nodes(net(tgx.tensor([[1]]))))
    assert ("linear", "blocks.1.fc") in found
    assert (tgx.randn(2, requires_grad=True) * 2)._ctx.scope == ""


def test_scope_inside_attention():
    class Enc(nn.Module):
        def __init__(self):
            self.layers = nn.ModuleList([nn.MultiHeadAttention(8, 2)])

        def forward(self, x):
            return self.layers[0](x, x, x)[0]

    out = Enc()(tgx.randn(1, 3, 8, requires_grad=True))
    scopes = {s for _, s in nodes(out)}
    assert {"layers.0", "layers.0.w_q", "layers.0.w_o"} <= scopes
    assert ("softmax", "layers.0") in set(nodes(out))


# ------------------------------------------------------------------------------------------
# layers: shapes and PyTorch-compatible initialisation
# ------------------------------------------------------------------------------------------

def test_linear_shapes_and_init():
    tgx.manual_seed(0)
    lin = nn.Linear(300, 200)
    assert lin.weight.shape == (200, 300) and lin.bias.shape == (200,)
    bound = 1 / math.sqrt(300)
    for p in (lin.weight.detach().numpy(), lin.bias.detach().numpy()):
        assert p.dtype == np.float32
        assert np.abs(p).max() <= bound
        assert np.abs(p).max() > 0.95 * bound                   # uniform, filling the range
    assert abs(lin.weight.detach().numpy().std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(lin.weight.detach().numpy().mean()) < 0.01 * bound
    assert lin(tgx.randn(2, 5, 300)).shape == (2, 5, 200)
    assert nn.Linear(3, 4, bias=False).bias is None
    x = tgx.randn(2, 300)
    np.testing.assert_allclose(lin(x).detach().numpy(),
                               x.detach().numpy() @ lin.weight.detach().numpy().T
                               + lin.bias.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_linear_gradcheck():
    lin = nn.Linear(3, 2).double()
    x = Tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)
    assert tgx.gradcheck(lambda a, w, b: F.linear(a, w, b), (x, lin.weight, lin.bias))
    assert tgx.gradcheck(lambda a, w: F.linear(a, w), (x.reshape(2, 2, 3), lin.weight))


def test_embedding_shapes_and_init():
    tgx.manual_seed(0)
    emb = nn.Embedding(1000, 64)
    w = emb.weight.detach().numpy()
    assert w.shape == (1000, 64) and w.dtype == np.float32
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1.0) < 0.01
    assert emb(tgx.tensor([[1, 2], [3, 4]])).shape == (2, 2, 64)


def test_embedding_padding_idx():
    emb = nn.Embedding(5, 3, padding_idx=1)
    assert np.all(emb.weight.detach().numpy()[1] == 0)
    out = emb(tgx.tensor([[1, 2, 1, 0]]))
    assert np.all(out.detach().numpy()[0, 0] == 0)
    out.sum().backward()
    g = emb.weight.grad.numpy()
    assert np.all(g[1] == 0) and np.all(g[2] == 1) and np.all(g[0] == 1)
    assert nn.Embedding(5, 3, padding_idx=-1).padding_idx == 4


def test_layer_norm_module():
    ln = nn.LayerNorm((3, 4))
    assert ln.weight.shape == (3, 4) and np.all(ln.weight.detach().numpy() == 1)
    assert np.all(ln.bias.detach().numpy() == 0)
    y = ln(tgx.randn(2, 3, 4) * 5 + 3)
    assert y.shape == (2, 3, 4)
    np.testing.assert_allclose(y.detach().numpy().mean(axis=(1, 2)), 0, atol=1e-5)
    assert list(nn.LayerNorm(4, elementwise_affine=False).parameters()) == []
    assert nn.LayerNorm(4, bias=False).bias is None


def test_dropout_and_gelu_modules():
    tgx.manual_seed(0)
    d = nn.Dropout(0.2)
    y = d(tgx.ones(100, 100)).numpy()
    assert abs((y == 0).mean() - 0.2) < 0.02 and set(np.unique(y)) <= {0.0, np.float32(1.25)}
    with pytest.raises(ValueError, match="p must be"):
        nn.Dropout(2)
    x = tgx.randn(3, 3)
    np.testing.assert_allclose(nn.GELU()(x).numpy(), F.gelu(x).numpy())
    np.testing.assert_allclose(nn.GELU("tanh")(x).numpy(), F.gelu(x, "tanh").numpy())
    assert np.all(nn.ReLU()(x).numpy() >= 0) and nn.Identity()(x) is x


# ------------------------------------------------------------------------------------------
# MultiHeadAttention
# ------------------------------------------------------------------------------------------

def mha_inputs(B=2, n=3, m=4, E=8, seed=0):
    rng = np.random.default_rng(seed)
    q = Tensor(rng.standard_normal((B, n, E)).astype(np.float32), requires_grad=True)
    kv = Tensor(rng.standard_normal((B, m, E)).astype(np.float32), requires_grad=True)
    return q, kv


def test_mha_shapes_and_need_weights():
    mha = nn.MultiHeadAttention(8, 2)
    q, kv = mha_inputs()
    out, w = mha(q, kv, kv)
    assert out.shape == (2, 3, 8) and w is None
    out, w = mha(q, kv, kv, need_weights=True)
    assert w.shape == (2, 3, 4)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1, rtol=1e-5)
    _, w = mha(q, kv, kv, need_weights=True, average_attn_weights=False)
    assert w.shape == (2, 2, 3, 4)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(8, 3)
    assert [n for n, _ in mha.named_parameters()] == [
        "w_q.weight", "w_q.bias", "w_k.weight", "w_k.bias", "w_v.weight", "w_v.bias",
        "w_o.weight", "w_o.bias"]


def test_mha_bool_attn_mask_true_means_blocked():
    mha = nn.MultiHeadAttention(8, 2)
    q, kv = mha_inputs()
    blocked = np.zeros((3, 4), bool)
    blocked[:, 2] = True
    blocked[0, 0] = True
    _, w = mha(q, kv, kv, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    assert np.all(w.detach().numpy()[..., blocked] == 0)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1, rtol=1e-5)
    # a float mask is added to the scores: -inf blocks the same positions
    fmask = np.where(blocked, -np.inf, 0.0).astype(np.float32)
    _, w2 = mha(q, kv, kv, attn_mask=fmask, need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(w2.detach().numpy(), w.detach().numpy(), rtol=1e-6)


def test_mha_key_padding_mask():
    mha = nn.MultiHeadAttention(8, 2)
    q, kv = mha_inputs()
    kp = np.zeros((2, 4), bool)
    kp[1, 2:] = True                                      # sequence 1 has 2 padded keys
    out, w = mha(q, kv, kv, key_padding_mask=kp, need_weights=True)
    assert np.all(w.detach().numpy()[1, :, 2:] == 0) and np.all(w.detach().numpy()[0] > 0)
    # changing the padded keys' values changes nothing
    kv2 = Tensor(kv.detach().numpy().copy())
    kv2.numpy()[1, 2:] = 100.0
    out2, _ = mha(q, kv2, kv2, key_padding_mask=kp)
    np.testing.assert_allclose(out2.detach().numpy(), out.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_mha_is_causal():
    mha = nn.MultiHeadAttention(8, 2)
    x, _ = mha_inputs(n=4)
    out, w = mha(x, x, x, is_causal=True, need_weights=True)
    assert np.all(np.triu(np.ones((4, 4)), 1)[None] * w.detach().numpy() == 0)
    # position t's output does not depend on inputs after t
    x2 = Tensor(x.detach().numpy().copy())
    x2.numpy()[:, 3] += 10
    out2, _ = mha(x2, x2, x2, is_causal=True)
    np.testing.assert_allclose(out2.detach().numpy()[:, :3], out.detach().numpy()[:, :3],
                               rtol=1e-5, atol=1e-6)


def test_mha_fully_masked_row_has_no_nan():
    mha = nn.MultiHeadAttention(8, 2)
    q, kv = mha_inputs()
    blocked = np.zeros((3, 4), bool)
    blocked[1] = True                                     # query 1 may attend to nothing
    out, w = mha(q, kv, kv, attn_mask=blocked, need_weights=True)
    assert not np.any(np.isnan(out.detach().numpy())) and not np.any(np.isnan(w.detach().numpy()))
    assert np.all(w.detach().numpy()[:, 1] == 0)
    out.sum().backward()
    assert not np.any(np.isnan(q.grad.numpy())) and not np.any(np.isnan(kv.grad.numpy()))
    kp = np.ones((2, 4), bool)                            # every key of the batch padded
    out, _ = mha(q, kv, kv, key_padding_mask=kp)
    assert not np.any(np.isnan(out.detach().numpy()))


def test_mha_gradcheck():
    tgx.manual_seed(0)
    mha = nn.MultiHeadAttention(4, 2).double()
    rng = np.random.default_rng(0)
    q = Tensor(rng.standard_normal((1, 2, 4)), requires_grad=True)
    kv = Tensor(rng.standard_normal((1, 3, 4)), requires_grad=True)
    kp = np.array([[False, False, True]])
    assert tgx.gradcheck(lambda a, b, w: mha(a, b, b, key_padding_mask=kp)[0] * w.sum(),
                         (q, kv, mha.w_q.weight), fast_mode=True)


def test_mha_dropout_only_in_training():
    mha = nn.MultiHeadAttention(8, 2, dropout=0.5)
    q, kv = mha_inputs()
    mha.eval()
    a, _ = mha(q, kv, kv)
    b, _ = mha(q, kv, kv)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    mha.train()
    c, _ = mha(q, kv, kv)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
