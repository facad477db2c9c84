"""One name per tensor, from its formula (tinygradx/graph/dataflow_names.py), on every model the
commands draw: each formula reads its inputs by the names their own rows give them, biases are
written wherever the layer has one, each block type keeps one notation, and a plain model
never gets the seed's names from a module path by accident.

The old trace read every sublayer's first input as X (`H_ff = X·W_1 + b_1` two rows after the
same tensor was Y_attn), GPT's [Q K V] from X where it is LN(x), logits from X, printed biases
on K and V only, mixed Y_attn with x_{l+1} in one Pre-LN block, and called two tensors H_ff.
"""
import re

import pytest

import tinygradx as tgx
from tinygradx import nn
from tinygradx.graph.trace import trace
from tinygradx.models.apps.inspect_models import named_dims, small_model, training_loss

KINDS = [("transformer", "post", 2, False), ("transformer", "pre", 2, False),
         ("gpt", "pre", 2, False), ("gpt", "post", 2, False), ("gpt", "pre", 2, True)]


def traced(kind, norm, layers, llama=False):
    model, batch = small_model(kind, norm, layers, llama=llama)
    with trace(dims=named_dims(kind, llama)) as t:
        training_loss(kind, model, batch)
    return t


def flows(t):
    return t.flow.flows, t.graph


def lhs(formula):
    return formula.split(" = ", 1)[0] if " = " in formula else None


@pytest.mark.parametrize("kind,norm,layers,llama", KINDS)
def test_every_formula_reads_its_inputs_by_their_names(kind, norm, layers, llama):
    fl, g = flows(traced(kind, norm, layers, llama))
    checked = 0
    for i, f in enumerate(fl):
        if f.op is None:
            continue
        ps = g.parents(i)
        names = [fl[p].name or ("X" if fl[p].op is None else "x") for p in ps]
        left = lhs(f.formula)
        if left is not None and f.name:
            # the row's own name is the formula's left side (MHA(X) = ...: the function MHA)
            assert left == f.name or left.startswith(f.name + "("), (f.name, f.formula)
        if f.op == "linear" and f.name in ("Q", "K", "V", "[Q K V]", "H_ff", "H_up", "logits"):
            assert f.formula.split(" = ", 1)[1].startswith(names[0] + "·"), (names, f.formula)
            checked += 1
        if f.op == "linear" and f.name in ("MHA", "CausalMHA", "FFN", "MLP"):
            # Concat(head_1..head_h)·W^O, ReLU(H_ff)·W_2: the input's name, then its weight
            assert f.formula.split(" = ", 1)[1].startswith(names[0]), (names, f.formula)
            checked += 1
        if f.op == "add" and "(residual)" in f.formula:
            rhs = f.formula.split(" = ", 1)[-1]
            assert any(rhs.startswith(n + " + ") for n in names), (names, f.formula)
            assert any(f" + {n}(" in rhs for n in names), (names, f.formula)
            checked += 1
        if f.op == "layer_norm" and f.name.startswith("LayerNorm("):
            assert f.name == f"LayerNorm({names[0]})"
            checked += 1
    assert checked >= 6 * layers            # every block's sublayers were checked


@pytest.mark.parametrize("kind,norm,layers,llama", KINDS)
def test_biases_are_written_wherever_a_layer_has_one(kind, norm, layers, llama):
    fl, g = flows(traced(kind, norm, layers, llama))
    linears = [f for f in fl if f.op == "linear" and f.name]
    assert linears
    for f in linears:
        has_bias = len(f.kinds) > 2
        assert (" + b" in f.formula or "+ [b^Q" in f.formula) == has_bias, f.formula


def test_the_issues_rows_in_the_post_ln_encoder_decoder():
    fl, g = flows(traced("transformer", "post", 2))
    by = {}
    for i, f in enumerate(fl):
        by.setdefault((g.scopes[i], f.op), []).append(f.formula)
    assert by[("encoder.layers.0.ff.w_1", "linear")] == ["H_ff = Y_attn·W_1 + b_1"]
    assert by[("encoder.layers.0.ff.w_2", "linear")] == [
        "FFN(Y_attn) = ReLU(H_ff)·W_2 + b_2  (feed-forward network)"]
    # cross-attention's query is the decoder's current state, K and V the encoder output H
    assert by[("decoder.layers.0.cross_attn.w_q", "linear")] == ["Q = Y_attn·W^Q + b^Q"]
    assert by[("decoder.layers.0.cross_attn.w_k", "linear")] == [
        "K = H·W^K + b^K  (H: the encoder output)"]
    assert by[("decoder.layers.0.cross_attn.w_o", "linear")] == [
        "MHA(Y_attn, H) = Concat(head_1..head_h)·W^O + b^O  (multi-head attention)"]
    assert by[("generator", "linear")] == ["logits = Y_next·W_vocab + b_vocab"]
    # the second layer reads the first one's output by its name
    assert by[("encoder.layers.1.self_attn.w_q", "linear")] == ["Q = Y_next·W^Q + b^Q"]
    # H_ff is c_fc's output only; the activation has a name of its own
    names = [f.name for f in fl]
    assert names.count("H_ff") == 4 and names.count("ReLU(H_ff)") == 4


def test_the_issues_rows_in_the_gpt():
    fl, g = flows(traced("gpt", "pre", 2))
    by = {(g.scopes[i], f.op): f.formula for i, f in enumerate(fl)}
    assert by[("transformer.h.0.attn.c_attn", "linear")] == \
        "[Q K V] = LayerNorm(x_0)·[W^Q W^K W^V] + [b^Q b^K b^V]"
    assert by[("transformer.h.1.mlp.c_fc", "linear")] == "H_ff = LayerNorm(u_1)·W_1 + b_1"
    assert by[("lm_head", "linear")] == "logits = LayerNorm(x_2)·W_vocab"      # GPT-2: no bias
    assert by[("transformer.h.0", "add")] == "x_1 = u_0 + MLP(LayerNorm(u_0))  (residual)  " \
                                             "(block output)"


@pytest.mark.parametrize("kind,norm,want,never", [
    ("gpt", "pre", r"u_\d+|x_\d+", {"Y_attn", "Y_next", "y"}),
    ("transformer", "pre", r"Y_attn|y|Y_next|H", {"u_0", "x_1", "x_{l+1}"}),
    ("transformer", "post", r"Y_attn|y|Y_next|H", {"u_0", "x_1", "x_{l+1}"})])
def test_one_notation_per_block_type(kind, norm, want, never):
    """Pre-LN GPT: the seed's GPT block (u_l, x_{l+1} with the block's own l); Pre-LN
    encoder-decoder: §8's Y_attn = X + MHA(LayerNorm(X)); Post-LN: the boxed formulas."""
    fl, g = flows(traced(kind, norm, 2))
    outs = [f.name for f in fl if f.op == "add" and "(residual)" in f.formula and
            f.formula.startswith(f.name + " = ")] + \
        [f.name for f in fl if "(Add & Norm)" in f.formula or "(encoder output" in f.formula]
    assert outs and all(re.fullmatch(want, n) for n in outs), outs
    assert not {f.name for f in fl} & never


class PlainMLP(nn.Module):
    """A model with no attention whose layers happen to carry attention-like names."""

    def __init__(self):
        self.w_q = nn.Linear(6, 6)
        self.w_k = nn.Linear(6, 6)
        self.c_fc = nn.Linear(6, 12)
        self.out = nn.Linear(12, 4)

    def forward(self, x):
        return self.out(tgx.functional.relu(self.c_fc(self.w_k(self.w_q(x)))))


class NotAttention(nn.Module):
    """A module called `attn` whose `w_q` feeds no score: the module path alone is not enough."""

    def __init__(self):
        self.attn = nn.Module()
        self.attn.w_q = nn.Linear(6, 6)

    def forward(self, x):
        return self.attn.w_q(x).relu()


@pytest.mark.parametrize("model", [PlainMLP, NotAttention])
def test_a_plain_model_gets_no_seed_names_from_its_module_paths(model):
    tgx.manual_seed(0)
    m = model()
    with trace() as t:
        m(tgx.randn(2, 3, 6))
    names = {r.name for r in t.rows}
    assert not names & {"Q", "K", "V", "H_ff", "logits", "MHA", "FFN"}, names
    assert all(r.formula in ("Y = X·Wᵀ + b", "relu") or r.formula.startswith("ReLU(")
               for r in t.rows), [r.formula for r in t.rows]


def test_a_user_attention_at_the_top_level_keeps_its_names():
    """The same module names in a real attention (its class says so): Q, K, V and MHA."""
    tgx.manual_seed(0)
    mha = nn.MultiHeadAttention(12, 3)
    x = tgx.randn(2, 5, 12)
    with trace() as t:
        mha(x, x, x)
    assert [r.name for r in t.rows if r.op == "linear"] == ["Q", "K", "V", "MHA"]
