"""Hooks as in PyTorch (tinygradx/autograd/hooks.py): a Module's forward pre-hooks and forward
hooks, and removable handles for them and for Tensor.register_hook; checked against torch's
behaviour."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn


class Two(nn.Module):
    def __init__(self):
        self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)

    def forward(self, x, scale=1.0):
        return self.b(self.a(x).relu()) * scale


def test_forward_hooks_see_args_and_output_in_call_order():
    m = Two()
    calls = []
    m.a.register_forward_pre_hook(lambda mod, args: calls.append(("pre a", args[0].shape)))
    m.a.register_forward_hook(lambda mod, args, out: calls.append(("a", out.shape)))
    m.b.register_forward_hook(lambda mod, args, out: calls.append(("b", mod is m.b)))
    m.register_forward_hook(lambda mod, args, out: calls.append(("top", len(args))))
    m(tgx.ones(5, 3))
    assert calls == [("pre a", (5, 3)), ("a", (5, 4)), ("b", True), ("top", 1)]


def test_return_values_replace_args_and_output():
    m = Two()
    x = tgx.randn(2, 3)
    plain = m(x).detach().numpy().copy()
    h = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)     # a bare value: wrapped
    doubled = m(x).detach().numpy().copy()
    np.testing.assert_allclose(doubled, m.forward(x * 2).detach().numpy())
    h.remove()
    h.remove()                                            # twice: nothing happens
    np.testing.assert_allclose(m(x).detach().numpy(), plain)
    with m.register_forward_hook(lambda mod, args, out: out + 1):
        np.testing.assert_allclose(m(x).detach().numpy(), plain + 1)
    np.testing.assert_allclose(m(x).detach().numpy(), plain)


def test_with_kwargs_and_prepend():
    m = Two()
    order = []
    m.register_forward_pre_hook(lambda mod, args: order.append(1))
    m.register_forward_pre_hook(lambda mod, args: order.append(0), prepend=True)

    def triple(mod, args, kwargs):
        order.append(2)
        return args, {**kwargs, "scale": 3.0}

    m.register_forward_pre_hook(triple, with_kwargs=True)
    seen = {}
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.update(kwargs), with_kwargs=True)
    x = tgx.randn(2, 3)
    out = m(x, scale=1.0)
    assert order == [0, 1, 2] and seen == {"scale": 3.0}
    np.testing.assert_allclose(out.detach().numpy(),
                               m.forward(x, scale=3.0).detach().numpy(), rtol=1e-6)


def test_a_hooked_output_keeps_its_graph():
    m = Two()
    m.b.register_forward_hook(lambda mod, args, out: out * 2)
    x = tgx.randn(2, 3)
    m(x).sum().backward()
    g = m.b.bias.grad.detach().numpy().copy()
    np.testing.assert_allclose(g, 4.0)                   # 2 rows * the hook's factor 2


def test_tensor_hook_handles():
    t = tgx.ones(3, requires_grad=True)
    h = t.register_hook(lambda g: g * 10)
    keep = t.register_hook(lambda g: g + 1)
    (t * 2).sum().backward()
    np.testing.assert_allclose(t.grad.detach().numpy(), 21.0)
    h.remove()
    t.grad = None
    (t * 2).sum().backward()
    np.testing.assert_allclose(t.grad.detach().numpy(), 3.0)
    keep.remove()
    t.grad = None
    with t.register_hook(lambda g: g * 0):
        (t * 2).sum().backward()
    np.testing.assert_allclose(t.grad.detach().numpy(), 0.0)


def test_uncallable_hook_is_refused():
    with pytest.raises(TypeError, match="Linear.register_forward_hook: the hook must be callable"):
        nn.Linear(2, 2).register_forward_hook(3)


def test_same_as_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    results = []
    for lib, lin in ((torch, torch.nn.Linear(3, 2).double()), (tgx, nn.Linear(3, 2).double())):
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            lin.bias.zero_()
        record = []
        h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] + 1,))
        h2 = lin.register_forward_hook(lambda m, args, out, record=record:
                                       record.append(type(args).__name__) or out.tanh())
        x = lib.tensor(xs, requires_grad=True)
        y = lin(x)
        y.sum().backward()
        h1.remove()
        h2.remove()
        z = lin(x)
        results.append((record, y.detach().numpy(), x.grad.detach().numpy(), z.detach().numpy()))
    (r1, *a1), (r2, *a2) = results
    assert r1 == r2 == ["tuple"]
    for a, b in zip(a1, a2, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_model_fast_paths_call_hooked_modules():
    """The models' no-grad paths that run layers on arrays (GPT with a KV cache, the
    encoder-decoder's layers) are not planned for a model with a hooked module, so the hook
    runs."""
    from tinygradx.models.nets import fastpath, gpt, transformer
    tgx.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(block_size=16, vocab_size=11, n_layer=1, n_head=2,
                                  n_embd=8)).eval()
    prompt = np.random.default_rng(0).integers(0, 11, (2, 3))
    plain = model.generate(prompt, 4, temperature=0.0).detach().numpy()
    with tgx.no_grad():
        assert fastpath.plan(model, gpt.STOCK) is not None
    shapes = []
    with model.transformer.h[0].mlp.register_forward_hook(
            lambda m, args, out: shapes.append(out.shape)):
        with tgx.no_grad():
            assert fastpath.plan(model, gpt.STOCK) is None
        hooked = model.generate(prompt, 4, temperature=0.0).detach().numpy()
    assert len(shapes) == 4 and np.array_equal(hooked, plain)      # prompt, then 3 single steps
    with tgx.no_grad():
        assert fastpath.plan(model, gpt.STOCK) is not None

    ed = transformer.make_model(7, 7, N=1, d_model=8, d_ff=16, h=2, dropout=0.0).eval()
    layer = ed.encoder.layers[0]
    with tgx.no_grad():
        assert fastpath.plan(ed.encoder, transformer.STOCK) is not None
        for module in (ed.encoder, layer, layer.ff.w_1, layer.self_attn.w_q, layer.norm1):
            with module.register_forward_pre_hook(lambda m, args: None):
                assert fastpath.plan(ed.encoder, transformer.STOCK) is None
        assert fastpath.plan(ed.encoder, transformer.STOCK) is not None


def test_has_forward_hooks_sees_both_kinds_and_their_removal():
    m = tgx.nn.Linear(2, 2)
    assert not m.has_forward_hooks()
    pre = m.register_forward_pre_hook(lambda mod, args: None)
    assert m.has_forward_hooks()
    pre.remove()
    assert not m.has_forward_hooks()
    with m.register_forward_hook(lambda mod, args, out: None):
        assert m.has_forward_hooks()
    assert not m.has_forward_hooks()
