"""tinygradx.graph: the walk, leaf kinds, the one residual test (shared by viz and trace) and the
gradient along each edge. Needs no graphviz: nothing here draws."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import graph, nn
from tinygradx.models.apps.inspect_models import small_model, training_loss
from tinygradx.graph.trace import Trace


def affine():
    params = {"W": nn.Parameter(np.arange(6, dtype=np.float32).reshape(3, 2) / 10),
              "b": nn.Parameter(np.array([0.5, -1.0], np.float32))}
    x = tgx.Tensor(np.ones((4, 3), np.float32), requires_grad=True, name="x")
    y = F.relu(x @ params["W"] + params["b"]) * 0.5
    return y.sum(), params, x


class Residual(nn.Module):
    """`x + f(x)` (a skip add) next to `y + f(x)` (an add whose leaf y does not feed f)."""

    def __init__(self):
        self.f = nn.Linear(4, 4)

    def forward(self, x, y):
        fx = self.f(x)
        return x + fx, y + fx


def test_walk_lists_parents_before_children_and_the_root_last():
    loss, params, x = affine()
    g = graph.walk(loss)
    assert g.nodes[-1] is loss and len(g.nodes) == len(g.ops) == len(g.scopes)
    for p, c, slot in g.edges:
        assert p < c and g.parents(c)[slot] == p
    assert [g.ops[i] for i in range(len(g.nodes)) if g.ops[i]] == \
        ["matmul", "add", "relu", "mul", "sum"]
    assert g.nodes[0] is x and g.ops[0] is None and g.scopes[0] == ""
    assert graph.walk(loss).edges == g.edges                      # the same order every time
    consumers = g.consumers()
    assert all(c in consumers[p] for p, c, _ in g.edges)


def test_walk_of_a_freed_graph_says_how_to_keep_it():
    loss, _, _ = affine()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        graph.walk(loss)


def test_leaf_kinds():
    loss, params, x = affine()
    g = graph.walk(loss)
    leaves = [g.nodes[i] for i in range(len(g.nodes)) if g.ops[i] is None]
    assert sorted(graph.leaf_kind(t) for t in leaves) == ["const", "input", "param", "param"]
    assert graph.leaf_kind(x) == "input"
    plain = tgx.Tensor(np.ones(3, np.float32))
    assert graph.leaf_kind(plain) == "input"
    assert graph.leaf_kind(plain, names={id(plain): "buf"}) == "param"
    assert graph.leaf_kind(tgx.Tensor(np.float32(2.0))) == "const"
    assert graph.leaf_kind(tgx.Tensor(np.float32(2.0), requires_grad=True)) == "input"
    assert graph.leaf_kind(tgx.Tensor(np.float32(2.0), name="temperature")) == "input"


def test_sublayer_and_within():
    assert graph.sublayer("transformer.h.0", "transformer.h.0.attn.c_proj") == \
        "transformer.h.0.attn"
    assert graph.sublayer("transformer.h.0", "transformer.h.0") is None
    assert graph.sublayer("transformer.h.0", "transformer") is None
    assert graph.sublayer("", "mlp.0") == "mlp"
    assert graph.within("a.b.c", "a.b") and graph.within("a", "")
    assert not graph.within("a.bc", "a.b")


def test_skip_input_needs_the_skip_to_feed_the_sublayer():
    tgx.manual_seed(0)
    m = Residual()
    x, y = tgx.randn(2, 4, requires_grad=True), tgx.randn(2, 4, requires_grad=True)
    skip, other = m(x, y)
    g = graph.walk(skip)
    assert g.ops[-1] == "add" and g.nodes[graph.skip_input(g, len(g.nodes) - 1)] is x
    g = graph.walk(other)
    assert graph.skip_input(g, len(g.nodes) - 1) is None
    with Trace() as t:
        m(x, y)
    # the skip input is the caller's tensor, the seed's X
    assert [r.formula for r in t.rows if r.op == "add"] == ["X + Sublayer(X)  (residual)", "add"]


@pytest.mark.parametrize("model_name", ["gpt", "transformer"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_trace_and_the_walk_find_the_same_skip_adds(model_name, norm):
    model, batch = small_model(model_name, norm, layers=2)
    with Trace() as t:
        loss = training_loss(model_name, model, batch)
    traced = [r.scope for r in t.rows if "(residual)" in r.formula]
    g = graph.walk(loss)
    walked = [g.scopes[i] for i in range(len(g.nodes)) if graph.skip_input(g, i) is not None]
    assert sorted(traced) == sorted(walked) and len(walked) == (4 if model_name == "gpt" else 10)


def test_residual_path_and_summary_are_the_ones_viz_exports():
    pytest.importorskip("graphviz")
    from tinygradx.graph import viz
    assert viz.residual_path is graph.residual_path
    assert viz.residual_summary is graph.residual_summary
    model, batch = small_model("gpt", "pre", layers=2)
    loss = training_loss("gpt", model, batch)
    assert graph.residual_summary(loss).startswith("Pre-LN: 1 LayerNorm on the identity path")
    path = graph.residual_path(loss)
    assert path[0] is loss and path[-1]._ctx.name() == "embedding"


def test_edge_grads_match_backward_and_write_no_grad():
    loss, params, x = affine()
    g = graph.walk(loss)
    node_norm, edge_norm = graph.edge_grads(loss, g)
    assert x.grad is None and not graph.has_grads(g)
    loss.backward(retain_graph=True)
    assert graph.has_grads(g)
    for t in (x, params["W"], params["b"]):
        assert np.isclose(node_norm[g.index[id(t)]], np.linalg.norm(t.grad.numpy()))
    assert set(edge_norm) <= set(g.edges) and node_norm[len(g.nodes) - 1] == 1.0
    with pytest.raises(ValueError, match="scalar output"):
        graph.edge_grads(x * 2.0, graph.walk(x * 2.0))


def _edge_into(g, edge_norm, leaf):
    """The one edge leaving `leaf` (a leaf with a single consumer) and its norm."""
    (edge,) = [e for e in edge_norm if e[0] == g.index[id(leaf)]]
    return edge_norm[edge]


def test_edge_norms_are_the_gradients_training_stores_through_a_slice_and_a_cast():
    """The norms come from the training walk itself: a getitem's gradient is the slice buffer
    training fills (backward_slice), a float32 input of a float64 op gets the gradient cast to
    float32 (the walk's cast), so each leaf's one edge carries exactly its .grad."""
    rng = np.random.default_rng(0)
    qkv = tgx.tensor(rng.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    x = tgx.tensor(rng.standard_normal(5).astype(np.float32), requires_grad=True)
    w = tgx.tensor(rng.standard_normal(5), requires_grad=True)          # float64
    loss = ((qkv[1:3] * x).tanh().sum(0) * w).sum() + (qkv[0:1] * 3.0).sum()
    g = graph.walk(loss)
    node_norm, edge_norm = graph.edge_grads(loss, g)
    loss.backward(retain_graph=True)
    assert x.dtype == np.float32 and (x * w).dtype == np.float64       # a mixed-dtype node
    for leaf in (x, w):
        want = float(np.linalg.norm(leaf.grad.numpy()))
        assert _edge_into(g, edge_norm, leaf) == want == node_norm[g.index[id(leaf)]]
    slices = sorted(((p, c, s), n) for (p, c, s), n in edge_norm.items()
                    if p == g.index[id(qkv)])
    assert [g.ops[c] for (_, c, _), _ in slices] == ["getitem", "getitem"]
    pieces = [float(np.linalg.norm(qkv.grad.numpy()[1:3])),
              float(np.linalg.norm(qkv.grad.numpy()[0:1]))]
    assert sorted(n for _, n in slices) == sorted(pieces)
    assert node_norm[g.index[id(qkv)]] == float(np.linalg.norm(qkv.grad.numpy()))


def test_edge_norms_see_what_a_hook_hands_on_as_training_does():
    x = tgx.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x * 2.0
    h.register_hook(lambda grad: grad * 10)             # training's gradient goes through it
    loss = h.sum()
    g = graph.walk(loss)
    _, edge_norm = graph.edge_grads(loss, g)
    loss.backward(retain_graph=True)
    assert _edge_into(g, edge_norm, x) == float(np.linalg.norm(x.grad.numpy())) \
        == float(np.linalg.norm(np.full(3, 20.0, np.float32)))


def test_an_edge_observer_leaves_the_walk_unchanged():
    """run_backward's on_edge sees every edge (slot by slot: x * x has two) and changes no
    gradient: the same .grad with and without it."""
    def grads(on_edge):
        x = tgx.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x)[1:] * x[:1]
        tgx.autograd.run_backward([y.sum()], [np.ones((), np.float32)], on_edge=on_edge)
        return x.grad.numpy()
    seen = []
    with_observer = grads(lambda ctx, slot, parent, grad: seen.append((ctx.name(), slot)))
    np.testing.assert_array_equal(with_observer, grads(None))
    assert sorted(seen) == sorted([("sum", 0), ("mul", 0), ("mul", 1), ("getitem", 0),
                                   ("getitem", 0), ("mul", 0), ("mul", 1)])


def test_record_adds_each_input_once_as_a_leaf():
    """What trace does from its observe hook: inputs seen before are not added again."""
    x = tgx.randn(2, 3)
    ops = []
    with tgx.autograd.observe(lambda ctx, inputs, out, seconds: ops.append((ctx, inputs, out))):
        y = x * x
        z = y + x
    g = graph.Graph()
    for ctx, inputs, out in ops:
        g.record(ctx, inputs, out)
    assert g.ops == [None, "mul", "add"] and g.nodes == [x, y, z]
    assert g.parents(1) == [0, 0] and g.parents(2) == [1, 0]
    assert graph.skip_input(g, 2) is None             # all in one module: no sublayer
