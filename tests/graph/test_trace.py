"""tinygradx.trace: the shape table of one attention layer against hand-written expectations."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn
from tinygradx.models.apps.inspect_models import trace_cli
from tinygradx.graph.trace import Trace, trace

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
    ("self_attn.w_q", "linear", "Q = X·W^Q + b^Q",
     "(B, n, d_model)·(d_model, h·d_k) → (B, n, h·d_k)"),
    ("self_attn", "reshape", "split Q into h heads", "(B, n, h·d_k) → (B, n, h, d_k)"),
    ("self_attn", "permute", "Q_i per head", "(B, n, h, d_k) → (B, h, n, d_k)"),
    ("self_attn.w_k", "linear", "K = X·W^K + b^K",
     "(B, n, d_model)·(d_model, h·d_k) → (B, n, h·d_k)"),
    ("self_attn", "reshape", "split K into h heads", "(B, n, h·d_k) → (B, n, h, d_k)"),
    ("self_attn", "permute", "K_i per head", "(B, n, h, d_k) → (B, h, n, d_k)"),
    ("self_attn.w_v", "linear", "V = X·W^V + b^V",
     "(B, n, d_model)·(d_model, h·d_v) → (B, n, h·d_v)"),
    ("self_attn", "reshape", "split V into h heads", "(B, n, h·d_v) → (B, n, h, d_v)"),
    ("self_attn", "permute", "V_i per head", "(B, n, h, d_v) → (B, h, n, d_v)"),
    ("self_attn", "mul", "Q/√d_k", "(B, h, n, d_k) → (B, h, n, d_k)"),
    ("self_attn", "permute", "Kᵀ", "(B, h, n, d_k) → (B, h, d_k, n)"),
    ("self_attn", "matmul", "Score/√d_k = QKᵀ/√d_k",
     "(B, h, n, d_k)·(B, h, d_k, n) → (B, h, n, n)"),
    ("self_attn", "softmax", "A = softmax(QKᵀ/√d_k)  (scaled dot-product attention)",
     "(B, h, n, n) → (B, h, n, n)"),
    ("self_attn", "matmul", "Z = A·V  (each head's head_i)",
     "(B, h, n, n)·(B, h, n, d_v) → (B, h, n, d_v)"),
    ("self_attn", "permute", "heads side by side", "(B, h, n, d_v) → (B, n, h, d_v)"),
    ("self_attn", "reshape", "Concat(head_1..head_h)", "(B, n, h, d_v) → (B, n, h·d_v)"),
    ("self_attn.w_o", "linear",
     "MHA(X) = Concat(head_1..head_h)·W^O + b^O  (multi-head attention)",
     "(B, n, h·d_v)·(h·d_v, d_model) → (B, n, d_model)"),
    ("<top>", "add", "X + MHA(X)  (residual)",
     "(B, n, d_model), (B, n, d_model) → (B, n, d_model)"),
    ("norm1", "layer_norm", "Y_attn = LayerNorm(X + MHA(X))  (Add & Norm)",
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
    assert rows["Q = X·W^Q + b^Q"] == "(B, 5, d_model)·(d_model, h·d_k) → (B, 5, h·d_k)"


def test_causal_mask_appears_in_the_formula():
    t = run(causal=True)
    formulas = [r.formula for r in t.rows]
    assert "Score/√d_k + M = QKᵀ/√d_k + M  (mask)" in formulas
    assert "A = softmax(QKᵀ/√d_k + M)  (scaled dot-product attention)" in formulas


def test_text_table_scope_filter_and_rows():
    t = run()
    text = t.table(scope="norm1")
    assert text.splitlines()[0] == "dims: B=2, n=5, d_model=12, h=3, d_k=4"
    assert len(text.splitlines()) == 3 and "LayerNorm(X + MHA(X))" in text
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
    assert "[Q K V] = LayerNorm(x_0)·[W^Q W^K W^V] + [b^Q b^K b^V]" in text
    assert "A = softmax(QKᵀ/√d_k + M)" in text
    assert "(B, h, T, T)" in text and "Concat(head_1..head_h)" in text
    lines = trace_cli("transformer", "post", layers=1, fmt="markdown").splitlines()
    cross = [ln for ln in lines if "cross_attn" in ln and "softmax" in ln]
    assert cross and "(B, h, T, S)" in cross[0]     # decoder queries over source keys
    assert any("X = E[ids]·√d_model + PE" in ln for ln in lines)
    assert np.sum(["(residual)" in ln for ln in lines]) == 5   # 2 encoder + 3 decoder


# The LLaMA-style GPT of `tinygradx trace --model gpt --llama` (B=2, T=5, d_model=24, h=6,
# d_k=4, h_kv=3 K/V heads, SwiGLU width d_ff=64): its first block, written by hand from the
# formulas RMSNorm(x) = x/√(mean(x²) + ε)·g, RoPE(q) = q·cos(mθ) + rotate_half(q)·sin(mθ),
# K/V heads shared by h/h_kv query heads, FFN(X) = (SiLU(X·W_1) ⊙ X·W_3)·W_2
BTC = "(B, T, d_model)"
QH, KH = "(B, h, T, d_k)", "(B, h_kv, T, d_k)"


def _rms_rows(m, x):
    """The RMSNorm chain of module m on its input x (x_0, u_0): every step names it."""
    return [
        (m, "mul", f"{x}²", f"{BTC} → {BTC}"),
        (m, "mean", f"mean({x}²)", f"{BTC} → (B, T, 1)"),
        (m, "add", f"mean({x}²) + ε", "(B, T, 1) → (B, T, 1)"),
        (m, "rsqrt", f"1/√(mean({x}²) + ε)", "(B, T, 1) → (B, T, 1)"),
        (m, "mul", f"{x}/√(mean({x}²) + ε)", f"{BTC}, (B, T, 1) → {BTC}"),
        (m, "mul", f"RMSNorm({x}) = {x}/√(mean({x}²) + ε)·g", f"{BTC} → {BTC}"),
    ]


def _rope_rows(x, shape):
    half = shape.replace("d_k)", "d_k/2)")
    return [
        ("attn", "getitem", f"{x}₁ = {x}[..., :d_k/2]  (first of each rotated pair)",
         f"{shape} → {half}"),
        ("attn", "getitem", f"{x}₂ = {x}[..., d_k/2:]  (second of each rotated pair)",
         f"{shape} → {half}"),
        ("attn", "neg", f"−{x}₂", f"{half} → {half}"),
        ("attn", "cat", f"rotate_half({x}) = [−{x}₂, {x}₁]  (pairs (x_i, x_{{i+d_k/2}}))",
         f"{half}, {half} → {shape}"),
        ("attn", "mul", f"{x}·cos(mθ)", f"{shape}, (T, d_k) → {shape}"),
        ("attn", "mul", f"rotate_half({x})·sin(mθ)", f"{shape}, (T, d_k) → {shape}"),
        ("attn", "add", f"RoPE({x}) = {x}·cos(mθ) + rotate_half({x})·sin(mθ)  (rotary position "
         f"embedding)", f"{shape}, {shape} → {shape}"),
    ]


QKV_W = "d_model+2·h_kv·d_k"
GQA = "repeated: each of h_kv heads serves h/h_kv query heads  (grouped-query attention)"
EXPECTED_LLAMA = _rms_rows("ln_1", "x_0") + [
    ("attn.c_attn", "linear", "[Q K V] = RMSNorm(x_0)·[W^Q W^K W^V]  (K, V: h_kv heads)",
     f"{BTC}·(d_model, {QKV_W}) → (B, T, {QKV_W})"),
    ("attn", "getitem", "Q = split([Q K V])", f"(B, T, {QKV_W}) → (B, T, h·d_k)"),
    ("attn", "getitem", "K = split([Q K V])", f"(B, T, {QKV_W}) → (B, T, h_kv·d_k)"),
    ("attn", "getitem", "V = split([Q K V])", f"(B, T, {QKV_W}) → (B, T, h_kv·d_v)"),
    ("attn", "reshape", "split Q into h heads", "(B, T, h·d_k) → (B, T, h, d_k)"),
    ("attn", "permute", "Q_i per head", f"(B, T, h, d_k) → {QH}"),
    ("attn", "reshape", "split K into h_kv heads", "(B, T, h_kv·d_k) → (B, T, h_kv, d_k)"),
    ("attn", "permute", "K_i per head", f"(B, T, h_kv, d_k) → {KH}"),
    ("attn", "reshape", "split V into h_kv heads", "(B, T, h_kv·d_v) → (B, T, h_kv, d_v)"),
    ("attn", "permute", "V_i per head", "(B, T, h_kv, d_v) → (B, h_kv, T, d_v)"),
] + _rope_rows("Q", QH) + _rope_rows("K", KH) + [
    ("attn", "repeatinterleave", f"K {GQA}", f"{KH} → {QH}"),
    ("attn", "repeatinterleave", f"V {GQA}", "(B, h_kv, T, d_v) → (B, h, T, d_v)"),
    ("attn", "mul", "Q/√d_k", f"{QH} → {QH}"),
    ("attn", "permute", "Kᵀ", f"{QH} → (B, h, d_k, T)"),
    ("attn", "matmul", "Score/√d_k = QKᵀ/√d_k", f"{QH}·(B, h, d_k, T) → (B, h, T, T)"),
    ("attn", "add", "Score/√d_k + M = QKᵀ/√d_k + M  (mask)", "(B, h, T, T), (T, T) → (B, h, T, T)"),
    ("attn", "softmax", "A = softmax(QKᵀ/√d_k + M)  (scaled dot-product attention)",
     "(B, h, T, T) → (B, h, T, T)"),
    ("attn", "matmul", "Z = A·V  (each head's head_i)",
     "(B, h, T, T)·(B, h, T, d_v) → (B, h, T, d_v)"),
    ("attn", "permute", "heads side by side", "(B, h, T, d_v) → (B, T, h, d_v)"),
    ("attn", "reshape", "Concat(head_1..head_h)", "(B, T, h, d_v) → (B, T, h·d_v)"),
    ("attn.c_proj", "linear", "CausalMHA(RMSNorm(x_0)) = Concat(head_1..head_h)·W^O  (causal "
     "multi-head attention)", f"(B, T, h·d_v)·(h·d_v, d_model) → {BTC}"),
    ("", "add", "u_0 = x_0 + CausalMHA(RMSNorm(x_0))  (residual)", f"{BTC}, {BTC} → {BTC}"),
] + _rms_rows("ln_2", "u_0") + [
    ("mlp.c_fc", "linear", "H_ff = RMSNorm(u_0)·W_1", f"{BTC}·(d_model, d_ff) → (B, T, d_ff)"),
    ("mlp", "sigmoid", "σ(H_ff)", "(B, T, d_ff) → (B, T, d_ff)"),
    ("mlp", "mul", "SiLU(H_ff) = H_ff·σ(H_ff)", "(B, T, d_ff), (B, T, d_ff) → (B, T, d_ff)"),
    ("mlp.c_up", "linear", "H_up = RMSNorm(u_0)·W_3", f"{BTC}·(d_model, d_ff) → (B, T, d_ff)"),
    ("mlp", "mul", "SwiGLU = SiLU(H_ff) ⊙ H_up", "(B, T, d_ff), (B, T, d_ff) → (B, T, d_ff)"),
    ("mlp.c_proj", "linear", "MLP(RMSNorm(u_0)) = SwiGLU·W_2  (feed-forward network: "
     "(SiLU(x·W_1) ⊙ x·W_3)·W_2)", f"(B, T, d_ff)·(d_ff, d_model) → {BTC}"),
    ("", "add", "x_1 = u_0 + MLP(RMSNorm(u_0))  (residual)  (block output)",
     f"{BTC}, {BTC} → {BTC}"),
]


def test_llama_style_gpt_block_matches_the_hand_written_table():
    text = trace_cli("gpt", llama=True, fmt="markdown", scope="transformer.h.0")
    lines = text.splitlines()
    assert lines[0].startswith("a Pre-LN LLaMA-style GPT (RMSNorm, RoPE, SwiGLU, 3 K/V heads)")
    assert lines[1] == "dims: B=2, d_model=24, h=6, d_k=4, T=5, h_kv=3, d_ff=64, V=32"
    rows = [tuple(c.strip() for c in ln.strip("|").split(" | "))[1:] for ln in lines[5:]]
    want = [(("transformer.h.0." + m) if m else "transformer.h.0", op, formula, shapes)
            for m, op, formula, shapes in EXPECTED_LLAMA]
    assert rows == want


def test_llama_style_gpt_names_h_kv_without_dims_and_its_post_ln_rows():
    from tinygradx.models.apps.inspect_models import small_model, training_loss
    model, batch = small_model("gpt", "pre", 1, llama=True)
    with trace() as t:                                  # no dims: every name is guessed
        training_loss("gpt", model, batch)
    assert t.dims() == {"B": 2, "n": 5, "d_model": 24, "V": 32, "h": 6, "d_k": 4, "h_kv": 3,
                        "d_ff": 64}
    post = trace_cli("gpt", "post", llama=True, fmt="text")
    assert "Y_attn = RMSNorm(X + MHA(X))  (Add & Norm)" in post
    assert "Y_next = RMSNorm(Y_attn + FFN(Y_attn))  (Add & Norm)  (block output)" in post
    zh = trace_cli("gpt", llama=True, fmt="text", lang="zh")
    assert "(旋转位置编码)" in zh and "(分组查询注意力)" in zh


def test_fused_llama_attention_is_one_row_after_rope_and_the_head_repeat():
    from tinygradx.models.nets import gpt
    tgx.manual_seed(0)
    cfg = gpt.GPTConfig(block_size=8, vocab_size=11, n_layer=1, n_head=4, n_embd=16,
                        n_kv_head=2, norm="rmsnorm", pos="rope", mlp="swiglu", bias=False)
    model = gpt.GPT(cfg).eval()
    with trace(dims=dict(B=1, T=3, d_model=16, h=4, d_k=4, h_kv=2, V=11)) as t:
        model(np.arange(3).reshape(1, 3))
    rows = {r.formula: r for r in t.rows if r.scope == "transformer.h.0.attn"}
    assert "RoPE(K) = K·cos(mθ) + rotate_half(K)·sin(mθ)  (rotary position embedding)" in rows
    att = rows["Z = softmax(QKᵀ/√d_k + M)·V  (each head's head_i)"]
    assert att.op == "attention" and att.in_shapes[1] == (1, 4, 3, 4)


def _cells(text):
    """Terminal cells, counted here independently of the trace module: a wide or fullwidth
    character takes two, a combining mark none."""
    import unicodedata
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _column_starts(line):
    """The display columns at which a table line's cells start (after a run of 2+ spaces)."""
    import re
    return [_cells(line[:m.end()]) for m in re.finditer(r"\S\s{2,}(?=\S)", line)]


@pytest.mark.parametrize("args", [["--lang", "zh"], ["--lang", "zh", "--model", "transformer"],
                                  ["--lang", "zh", "--llama"], ["--model", "attention"]])
def test_text_table_columns_line_up_in_display_cells(args, capsys):
    from tinygradx.models.apps import cli
    assert cli.main(["trace", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("#"))
    starts = _column_starts(lines[head])
    assert len(starts) == 4                      # module, op, formula, shapes after "#"
    zh = args[:2] == ["--lang", "zh"]
    assert any(_cells(line) > len(line) for line in lines) == zh   # wide characters are in it
    for line in lines[head + 1:]:
        # each header column start is where a cell of this row starts, counted in cells
        assert set(starts) <= set(_column_starts(line)) | {0}, line


def test_width_counts_wide_fullwidth_and_combining_characters():
    from tinygradx.graph.trace import _ljust, _width
    assert _width("层归一化") == 8 and _width("：") == 2 and _width("한국") == 4
    assert _width("ｶﾀ") == 2                   # halfwidth katakana: one cell each
    assert _width("e\u0301") == 1              # e + combining acute accent
    assert _width("·→√ᵀ") == 4
    assert _cells(_ljust("掩码", 6)) == 6


def test_a_shape_error_while_tracing_names_the_dims_the_trace_knows():
    """An op that fails inside `tgx.trace(dims=...)` keeps its one-line message and adds each
    quoted shape in the trace's named dims; outside a trace the message is unchanged."""
    from tinygradx.autograd import OpError
    x = tgx.randn(2, 7, 16)
    w = tgx.randn(8, 16)

    def bad():
        return x @ w                                     # (B, T, d_model) @ (8, 16): wrong

    with pytest.raises(OpError) as plain:
        bad()
    assert "named dims" not in str(plain.value)
    with pytest.raises(OpError) as traced:
        with tgx.trace(dims={"B": 2, "T": 7, "d_model": 16}):
            bad()
    msg = str(traced.value)
    assert msg.startswith(str(plain.value)) and "\n" not in msg
    assert "(2, 7, 16) is (B, T, d_model)" in msg
