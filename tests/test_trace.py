"""tinygradx.trace: the shape table of one attention layer against hand-written expectations."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn
from tinygradx.models.apps.inspect_models import trace_cli
from tinygradx.trace import Trace, trace

DIMS = {"B": 2, "n": 5, "d_model": 12, "h": 3, "d_k": 4}   # all sizes differ: all get names


class EncoderLayerAttention(nn.Module):
    """The first sublayer of a Post-LN encoder layer: LayerNorm(x + MHA(x, x, x))."""

    def __init__(self):
        self.self_attn = nn.MultiHeadAttention(12, 3)
        self.norm1 = nn.LayerNorm(12)

    def forward(self, x):
        return self.norm1(x + self.self_attn(x, x, x)[0])


def run(dims=DIMS, causal=False):
    tgx.manual_seed(0)
    layer = EncoderLayerAttention()
    x = tgx.randn(2, 5, 12)
    with trace(dims=dims) as t:
        if causal:
            layer.self_attn(x, x, x, is_causal=True)
        else:
            layer(x)
    return t


# (module, op, formula, shapes): written by hand from the paper, not from the code
EXPECTED = [
    ("self_attn.w_q", "linear", "Q = X·W^Q",
     "(B, n, d_model)·(d_model, h·d_k) → (B, n, h·d_k)"),
    ("self_attn", "reshape", "split Q into h heads", "(B, n, h·d_k) → (B, n, h, d_k)"),
    ("self_attn", "permute", "Q_i per head", "(B, n, h, d_k) → (B, h, n, d_k)"),
    ("self_attn.w_k", "linear", "K = X·W^K",
     "(B, n, d_model)·(d_model, h·d_k) → (B, n, h·d_k)"),
    ("self_attn", "reshape", "split K into h heads", "(B, n, h·d_k) → (B, n, h, d_k)"),
    ("self_attn", "permute", "K_i per head", "(B, n, h, d_k) → (B, h, n, d_k)"),
    ("self_attn.w_v", "linear", "V = X·W^V",
     "(B, n, d_model)·(d_model, h·d_v) → (B, n, h·d_v)"),
    ("self_attn", "reshape", "split V into h heads", "(B, n, h·d_v) → (B, n, h, d_v)"),
    ("self_attn", "permute", "V_i per head", "(B, n, h, d_v) → (B, h, n, d_v)"),
    ("self_attn", "mul", "Q/√d_k", "(B, h, n, d_k) → (B, h, n, d_k)"),
    ("self_attn", "permute", "Kᵀ", "(B, h, n, d_k) → (B, h, d_k, n)"),
    ("self_attn", "matmul", "S = QKᵀ/√d_k", "(B, h, n, d_k)·(B, h, d_k, n) → (B, h, n, n)"),
    ("self_attn", "softmax", "A = softmax(QKᵀ/√d_k)  (scaled dot-product attention)",
     "(B, h, n, n) → (B, h, n, n)"),
    ("self_attn", "matmul", "head_i = A·V", "(B, h, n, n)·(B, h, n, d_v) → (B, h, n, d_v)"),
    ("self_attn", "permute", "heads side by side", "(B, h, n, d_v) → (B, n, h, d_v)"),
    ("self_attn", "reshape", "Concat(head_1..head_h)", "(B, n, h, d_v) → (B, n, h·d_v)"),
    ("self_attn.w_o", "linear", "MultiHead = Concat(head_1..head_h)·W^O  (multi-head attention)",
     "(B, n, h·d_v)·(h·d_v, d_model) → (B, n, d_model)"),
    ("<top>", "add", "x + MHA(x)  (residual)",
     "(B, n, d_model), (B, n, d_model) → (B, n, d_model)"),
    ("norm1", "layer_norm", "Y_attn = LayerNorm(x + MHA(x))  (Add & Norm)",
     "(B, n, d_model) → (B, n, d_model)"),
]


def table_rows(t, **kwargs):
    lines = t.table(fmt="markdown", **kwargs).splitlines()[4:]
    return [tuple(c.strip() for c in line.strip("|").split(" | "))[1:] for line in lines]


def test_one_attention_layer_matches_the_hand_written_table():
    assert table_rows(run()) == EXPECTED


def test_names_are_guessed_when_no_dims_are_given():
    t = run(dims=None)
    assert t.dims() == {"B": 2, "n": 5, "d_model": 12, "h": 3, "d_k": 4}
    assert table_rows(t) == EXPECTED


def test_sizes_shared_by_two_names_fall_back_to_numbers():
    t = run(dims=dict(DIMS, m=5))                  # n and m are both 5: neither name is safe
    rows = {r[2]: r[3] for r in table_rows(t)}
    softmax_row = rows["A = softmax(QKᵀ/√d_k)  (scaled dot-product attention)"]
    assert softmax_row == "(B, h, 5, 5) → (B, h, 5, 5)"
    assert rows["Kᵀ"] == "(B, h, 5, d_k) → (B, h, d_k, 5)"
    assert rows["Q = X·W^Q"] == "(B, 5, d_model)·(d_model, h·d_k) → (B, 5, h·d_k)"


def test_causal_mask_appears_in_the_formula():
    t = run(causal=True)
    formulas = [r.formula for r in t.rows]
    assert "QKᵀ/√d_k + M  (mask)" in formulas
    assert "A = softmax(QKᵀ/√d_k + M)  (scaled dot-product attention)" in formulas


def test_text_table_scope_filter_and_rows():
    t = run()
    text = t.table(scope="norm1")
    assert text.splitlines()[0] == "dims: B=2, n=5, d_model=12, h=3, d_k=4"
    assert len(text.splitlines()) == 3 and "LayerNorm(x + MHA(x))" in text
    assert str(t) == t.table()
    assert [r.op for r in t.rows][:2] == ["linear", "reshape"]
    assert t.rows[0].in_shapes == [(2, 5, 12), (12, 12), (12,)]
    with pytest.raises(ValueError, match="fmt"):
        t.table(fmt="latex")


def test_trace_works_without_a_graph_and_stops_on_exit():
    tgx.manual_seed(0)
    layer = EncoderLayerAttention()
    x = tgx.randn(2, 5, 12)
    with tgx.no_grad(), trace() as t:
        layer(x)
    n = len(t.rows)
    layer(x)                                        # outside the block: not recorded
    assert n == len(EXPECTED) and len(t.rows) == n


def test_trace_is_exported():
    assert isinstance(tgx.trace(), Trace)
    from tinygradx import trace as exported           # the function; the class is in the module
    assert exported is trace and tgx.trace is trace


def test_cli_helper_traces_one_attention_sublayer():
    lines = trace_cli("attention", fmt="markdown").splitlines()
    assert lines[0] == "dims: B=2, n=5, d_model=12, h=3, d_k=4"
    assert [ln.split(" | ")[3] for ln in lines[4:]] == [e[2] for e in EXPECTED]


def test_cli_helper_traces_a_gpt_block():
    text = trace_cli("gpt", "pre", layers=1, fmt="text", scope="transformer.h.0.attn")
    assert "[Q K V] = X·[W^Q W^K W^V]" in text
    assert "A = softmax(QKᵀ/√d_k + M)" in text
    assert "(B, h, T, T)" in text and "Concat(head_1..head_h)" in text
    lines = trace_cli("transformer", "post", layers=1, fmt="markdown").splitlines()
    cross = [ln for ln in lines if "cross_attn" in ln and "softmax" in ln]
    assert cross and "(B, h, T, S)" in cross[0]     # decoder queries over source keys
    assert any("X = E[ids]·√d_model + PE" in ln for ln in lines)
    assert np.sum(["(residual)" in ln for ln in lines]) == 5   # 2 encoder + 3 decoder
