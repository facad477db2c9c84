"""Module paths from call frames: each module call pushes a frame, each graph node keeps the frame
on top, and ctx.scope resolves the dotted path from the frames when asked."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import OpError, nn
from tinygradx.autograd import ROOT, STATE


def x(*shape):
    return tgx.randn(*shape, requires_grad=True)


def scopes(out):
    """{op name: set of scopes} of every node behind out."""
    found, stack, seen = {}, [out], set()
    while stack:
        t = stack.pop()
        if id(t) in seen or t._ctx is None:
            continue
        seen.add(id(t))
        found.setdefault(t._ctx.name(), set()).add(t._ctx.scope)
        stack.extend(t._ctx.parents)
    return found


class Chain(nn.Module):
    """The issue's model: a plain list of layers, called in turn."""

    def __init__(self, n=1):
        self.layers = [nn.Linear(4, 4) for _ in range(n)]

    def forward(self, h):
        for layer in self.layers:
            h = layer(h)
        return h


def test_a_layer_appended_after_the_first_call_is_named_by_its_index():
    m = Chain()
    m(x(2, 4))
    m.layers.append(nn.Linear(4, 4))
    y = m(x(2, 4))
    assert y._ctx.scope == "layers.1"
    assert "layers.1" in dict(m.named_modules())
    assert scopes(y)["linear"] == {"layers.0", "layers.1"}


def test_module_list_appended_after_the_first_call():
    class M(nn.Module):
        def __init__(self):
            self.h = nn.ModuleList([nn.Linear(4, 4)])

        def forward(self, v):
            for layer in self.h:
                v = layer(v)
            return v

    m = M()
    m(x(1, 4))
    m.h.append(nn.Linear(4, 4))
    assert m(x(1, 4))._ctx.scope == "h.1"


def test_containers_sequential_module_list_and_dicts():
    class M(nn.Module):
        def __init__(self):
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.GELU())
            self.ml = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
            self.md = nn.ModuleDict({"a": nn.Linear(4, 4)})
            self.plain = {"b": nn.Linear(4, 4), "c": [nn.Linear(4, 4)]}

        def forward(self, v):
            v = self.seq(v)
            v = self.ml[1](self.ml[0](v))
            v = self.md["a"](v)
            return self.plain["c"][0](self.plain["b"](v))

    m = M()
    found = scopes(m(x(2, 4)))
    assert found["linear"] == {"seq.0", "ml.0", "ml.1", "md.a", "plain.b", "plain.c.0"}
    assert found["gelu"] == {"seq.1"}
    assert {s for ss in found.values() for s in ss} <= set(dict(m.named_modules()))


class Inner(nn.Module):
    def __init__(self):
        self.layers = nn.ModuleList([nn.Linear(4, 4)])

    def forward(self, v):
        return self.layers[0](v) * 2


class Outer(nn.Module):
    def __init__(self):
        self.inner = Inner()
        self.head = nn.Linear(4, 4)

    def forward(self, v):
        return self.head(self.inner(v))


def test_a_model_inside_a_model_nests_the_paths():
    inner_alone = Inner()
    assert scopes(inner_alone(x(1, 4)))["linear"] == {"layers.0"}
    outer = Outer()
    found = scopes(outer(x(1, 4)))
    assert found["linear"] == {"inner.layers.0", "head"}
    assert found["mul"] == {"inner"}


def test_a_shared_module_is_named_through_the_parent_that_called_it():
    # one Linear held by two parents: each node shows the path through the parent that called
    # it in this forward; named_modules() lists it once, under its first path ("a.fc")
    class Holder(nn.Module):
        def __init__(self, fc):
            self.fc = fc

        def forward(self, v):
            return self.fc(v)

    class Two(nn.Module):
        def __init__(self):
            shared = nn.Linear(4, 4)
            self.a, self.b = Holder(shared), Holder(shared)

        def forward(self, v):
            return self.a(v), self.b(v)

    m = Two()
    ya, yb = m(x(1, 4))
    assert (ya._ctx.scope, yb._ctx.scope) == ("a.fc", "b.fc")
    assert [n for n, mod in m.named_modules() if mod is m.a.fc] == ["a.fc"]


def test_a_module_called_on_its_own_keeps_the_path_its_model_gave_it():
    outer = Outer()
    inner = outer.inner
    assert inner.layers[0](x(1, 4))._ctx.scope == ""     # never called inside a model yet
    outer(x(1, 4))
    assert inner.layers[0](x(1, 4))._ctx.scope == "inner.layers.0"
    assert inner(x(1, 4))._ctx.scope == "inner"
    assert scopes(inner(x(1, 4)))["linear"] == {"inner.layers.0"}
    # the same after other modules were built and called on their own
    Chain()(x(1, 4))
    assert inner.layers[0](x(1, 4))._ctx.scope == "inner.layers.0"


def test_a_gpt_block_called_on_its_own_keeps_its_path():
    from tinygradx.models.nets.gpt import GPT, GPTConfig

    model = GPT(GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=8))
    model(tgx.tensor(np.zeros((1, 3), np.int64)))
    block = model.transformer.h[1]
    found = scopes(block(x(1, 3, 8)))
    assert "transformer.h.1.attn.c_attn" in found["linear"]
    assert found["layer_norm"] == {"transformer.h.1.ln_1", "transformer.h.1.ln_2"}


def test_an_op_error_names_the_path_of_an_appended_layer():
    m = Chain()
    m(x(2, 4))
    m.layers.append(nn.Linear(3, 4))          # wrong in_features
    with pytest.raises(OpError, match=r"^Linear at layers\.1: input of shape \(2, 4\)"):
        m(x(2, 4))

    class Bad(nn.Module):
        def __init__(self):
            self.layers = []

        def forward(self, v):
            for layer in self.layers:
                v = layer(v)
            return v

    class Wrong(nn.Module):
        def forward(self, v):
            return v @ tgx.randn(3, 3)

    outer = nn.Sequential(Bad())
    outer(x(2, 4))
    outer[0].layers.append(Wrong())
    with pytest.raises(OpError, match=r"^matmul \(in 0\.layers\.0\): "):
        outer(x(2, 4))


def test_frames_are_popped_and_scope_outside_modules_is_empty():
    class Boom(nn.Module):
        def forward(self, v):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        Chain()(x(1, 4)) + Boom()(x(1, 4))
    assert STATE.frame is ROOT
    assert (x(2) * 2)._ctx.scope == ""
    with tgx.autograd.scope("named"):
        assert (x(2) * 2)._ctx.scope == "named"
    assert STATE.frame is ROOT


def test_no_global_naming_state_on_modules():
    m = Chain(2)
    m(x(1, 4))
    for _, mod in m.named_modules():
        assert "_path" not in vars(mod)
