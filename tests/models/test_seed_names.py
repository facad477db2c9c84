"""The names the trace and the graphs give, checked against the seed paper's own symbols, and the
rule that a name is given only where the code computes that formula (a user's model too)."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn
from tinygradx.models.apps.inspect_models import named_dims, small_model, training_loss
from tinygradx.graph.trace import trace

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compat_models")

# The seed's symbols, restated here by hand (module-path suffix, op) -> name. The seed writes
# Q = XW^Q, K = XW^K, V = XW^V; Score = QKᵀ (its scaled and masked forms keep the name); A is
# the softmax of the scaled, masked score; Z = AV per head; Concat then W^O give MHA. A Post-LN
# sublayer: Y_attn = LayerNorm(X + MHA(X)), Y_next = LayerNorm(Y_attn + FFN(Y_attn)); the
# encoder's last Y_next is H; in cross-attention Q comes from the decoder and K, V from H; the
# decoder's cross-attention output has no symbol of its own in the seed beyond the Add & Norm's
# y = LayerNorm(x + Sublayer(x)). After the vocabulary projection: logits, then log-softmax
# gives the log-probabilities log p, and the training objective is the loss.
SEED_TABLE = [
    ("pos_encoding", "add", "X"),
    ("encoder.layers.0.self_attn.w_q", "linear", "Q"),
    ("encoder.layers.0.self_attn.w_k", "linear", "K"),
    ("encoder.layers.0.self_attn.w_v", "linear", "V"),
    ("encoder.layers.0.self_attn", "matmul", "Score/√d_k"),
    ("encoder.layers.0.self_attn", "softmax", "A"),
    ("encoder.layers.0.self_attn.w_o", "linear", "MHA"),
    ("encoder.layers.0.norm1", "layer_norm", "Y_attn"),
    ("encoder.layers.0.ff.w_1", "linear", "H_ff"),
    ("encoder.layers.0.ff.w_2", "linear", "FFN"),
    ("encoder.layers.0.norm2", "layer_norm", "H"),
    ("decoder.layers.0.self_attn", "masked_fill", "Score/√d_k + M"),
    ("decoder.layers.0.norm1", "layer_norm", "Y_attn"),
    ("decoder.layers.0.cross_attn.w_q", "linear", "Q"),
    ("decoder.layers.0.cross_attn.w_k", "linear", "K"),
    ("decoder.layers.0.cross_attn.w_v", "linear", "V"),
    ("decoder.layers.0.cross_attn", "softmax", "A"),
    ("decoder.layers.0.norm2", "layer_norm", "y"),
    ("decoder.layers.0.norm3", "layer_norm", "Y_next"),
    ("generator", "linear", "logits"),
    ("generator", "log_softmax", "log p"),
]
# what each formula must read (a symbol that means one thing only)
SEED_FORMULAS = {
    "decoder.layers.0.cross_attn.w_k": "K = H·W^K",
    "decoder.layers.0.cross_attn.w_v": "V = H·W^V",
    "encoder.layers.0.norm1": "Y_attn = LayerNorm(X + MHA(X))",
    # one layer: its Y_next is the encoder's output H (one name, the seed's double use said)
    "encoder.layers.0.norm2": "H = LayerNorm(Y_attn + FFN(Y_attn))  (encoder output: the last "
                              "layer's Y_next)",
    "decoder.layers.0.norm3": "Y_next = LayerNorm(",
}
# names the seed never uses, or uses for something else (S is the source length)
NOT_SEED = {"S", "Y_cross", "S + M", "x_{l+1}"}


def post_ln_trace():
    model, (src, tgt) = small_model("transformer", "post", 1)
    with trace(dims=named_dims("transformer")) as t:
        training_loss("transformer", model, (src, tgt))
    return t


def test_trace_names_match_the_seed_table():
    t = post_ln_trace()
    names = {}
    for r in t.rows:
        names.setdefault((r.scope, r.op), []).append(r.name)
    for scope, op, want in SEED_TABLE:
        assert want in names.get((scope, op), []), (scope, op, names.get((scope, op)))
    for scope, text in SEED_FORMULAS.items():
        assert any(text in r.formula for r in t.rows if r.scope == scope), (scope, text)
    used = {r.name for r in t.rows}
    assert not used & NOT_SEED, used & NOT_SEED
    # after log-softmax nothing is called logits; the last node is the loss
    after = [r for r in t.rows if r.index > next(r.index for r in t.rows
                                                  if r.op == "log_softmax")]
    assert all(r.name != "logits" for r in after)
    assert after[-1].name == "loss" and after[0].name == "log p"
    # the score's shape uses S only as a length: (B, h, T, S) for cross-attention
    cross = next(r for r in t.rows if r.scope == "decoder.layers.0.cross_attn" and
                 r.op == "matmul")
    assert t.flow.shapes(cross.node, t.flow.namer()).endswith("→ (B, h, T, S)")


class UserAttention(nn.Module):
    """Causal self-attention as a user might write it (nanoGPT's shape of code); `fused` is the
    module name of the q/k/v projection, `scale` the factor of the scores."""

    def __init__(self, fused="c_attn", scale=None, d=12, h=3, n=5):
        self.h, self.scale = h, scale
        setattr(self, fused, nn.Linear(d, 3 * d))
        self.fused = fused
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", tgx.tril(tgx.ones(n, n)).reshape(1, 1, n, n))

    def forward(self, x, name_z=None):
        B, T, C = x.shape
        q, k, v = getattr(self, self.fused)(x).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        scale = self.scale if self.scale is not None else 1.0 / math.sqrt(k.shape[-1])
        att = (q @ k.transpose(-2, -1)) * scale
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        if name_z:
            y.name = name_z
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def user_rows(**kw):
    tgx.manual_seed(0)
    m = UserAttention(**{k: v for k, v in kw.items() if k != "name_z"})
    with trace() as t:
        m(tgx.randn(2, 5, 12), name_z=kw.get("name_z"))
    return t


def by_op(t):
    out = {}
    for r in t.rows:
        out.setdefault(r.op, []).append(r)
    return out


def test_a_user_attention_written_as_the_formula_gets_its_names():
    ops = by_op(user_rows())
    assert ops["softmax"][0].name == "A"
    assert [r.name for r in ops["matmul"]] == ["Score", "Z"]
    assert ops["masked_fill"][0].name == "Score/√d_k + M"
    assert ops["reshape"][-1].name == "Concat"
    assert ops["contiguous"][0].name == "Z"                 # a copy of Z is still Z


@pytest.mark.parametrize("kw", [dict(fused="qkv"), dict(scale=0.3)])
def test_names_are_not_guessed_where_the_code_is_not_the_formula(kw):
    """An unknown projection (nothing says which third is Q) or a factor that is not 1/√d_k:
    no Score, A or Z anywhere, and A·V's reshapes are not called A."""
    t = user_rows(**kw)
    names = {r.name for r in t.rows}
    assert not names & {"A", "Z", "Concat", "Score/√d_k", "Score/√d_k + M"}, names
    ops = by_op(t)
    assert ops["masked_fill"][0].formula == "masked_fill"
    assert not any(" + M" in r.name for r in t.rows)
    after = [r for r in t.rows if r.index > ops["softmax"][0].index]
    assert all(r.name in ("", "Y") for r in after), [(r.op, r.name) for r in after]


def test_a_name_set_on_a_tensor_shows_in_the_trace_and_the_graph():
    t = user_rows(fused="qkv", name_z="ctx")
    row = by_op(t)["matmul"][1]
    assert row.name == "ctx" and row.formula == "ctx = matmul"
    pytest.importorskip("graphviz")
    from tinygradx.graph import viz
    tgx.manual_seed(0)
    m = UserAttention(fused="qkv")
    out = m(tgx.randn(2, 5, 12), name_z="ctx")
    src = viz.to_dot_source(out.sum(), params=m, legend=False)
    assert 'label="ctx (2, 3, 5, 4)' in src or 'label="ctx\\n(2, 3, 5, 4)' in src, src


def test_only_a_scale_of_one_over_root_dk_makes_a_score():
    """0.5 is 1/√4 (d_k = 4 here): a score; 0.3 is not."""
    assert "Score/√d_k" in {r.name for r in user_rows(scale=0.5).rows}
    assert "Score/√d_k" not in {r.name for r in user_rows(scale=0.3).rows}
    assert np.isclose(1 / math.sqrt(4), 0.5)


def test_a_model_file_through_the_look_alike_gets_no_guessed_names(tmp_path):
    """tests/compat_models/gpt.py (plain PyTorch code, its projection called `qkv`) loaded with
    `torch` being the look-alike: A·V and the reshapes after it are not A, masked_fill is not a
    mask add of some guessed Y; a name the file sets on a tensor would be shown."""
    import tinygradx.compat as compat
    path = os.path.join(MODELS, "gpt.py")
    mod = compat.load_module(path)
    tgx.manual_seed(0)
    model = mod.GPT(mod.GPTConfig(vocab_size=20, context=8, n_layer=1, d_model=16))
    idx = tgx.randint(0, 20, (2, 6))
    with trace() as t:
        model(idx, idx)
    ops = by_op(t)
    names_after_softmax = [r.name for r in t.rows if ops["softmax"][0].index < r.index and
                           r.scope.endswith("attn")]
    assert "A" not in names_after_softmax, names_after_softmax
    assert all(r.formula == "masked_fill" and r.name == "" for r in ops["masked_fill"])
    assert not any(r.name.endswith(" + M") for r in t.rows)


# ------------------------------------------------------------------------------------------
# the default picture: one attention op by op, the mask, PE and constants named, values
# ------------------------------------------------------------------------------------------

def cli_dot(tmp_path, model, *extra):
    from tinygradx.models.apps.cli import main
    pytest.importorskip("graphviz")
    out = tmp_path / f"{model}.dot"
    assert main(["graph", "--model", model, "--out", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def labels(src):
    import re
    return re.findall(r'label="([^"]*)"', src)


def test_default_gpt_picture_shows_one_attention_op_by_op(tmp_path, capsys):
    src = cli_dot(tmp_path, "gpt")
    firsts = [lab.split("\\n")[0] for lab in labels(src)]
    for name in ["Q (B, h, T, d_k)", "Kᵀ (B, h, d_k, T)", "V (B, h, T, d_v)",
                 "Score/√d_k (B, h, T, T)", "Score/√d_k + M (B, h, T, T)", "A (B, h, T, T)",
                 "Z (B, h, T, d_v)", "Concat (B, T, h·d_v)", "CausalMHA (B, T, d_model)"]:
        assert name in firsts, name
    # the first block's attention is open, the second's stays one box
    assert any(lab.startswith("transformer.h.1.attn\\n") and "19 ops" in lab
               for lab in labels(src))
    assert not any(lab.startswith("transformer.h.0.attn\\n") for lab in labels(src))
    # the mask and the scale are named; the mask's add is not drawn as a residual add
    assert "M (mask)" in firsts and "1/√d_k = 0.3536" in firsts and "input" not in firsts
    import re
    mask_add = re.search(r'\[label="Score/√d_k \+ M [^\]]*\]', src).group(0)
    assert "#d4efd4" not in mask_add and "#eeeeee" in mask_add
    assert "mean " not in src                     # values only on request


def test_default_transformer_picture_names_pe_and_reads_k_v_from_h(tmp_path):
    src = cli_dot(tmp_path, "transformer")
    firsts = [lab.split("\\n")[0] for lab in labels(src)]
    assert firsts.count("PE (positional encoding)") == 2 and "√d_model = 4.899" in firsts
    assert "input" not in firsts
    assert "K (B, S, h·d_k)" in firsts and "A (B, h, T, S)" in firsts
    k_label = next(lab for lab in labels(src) if lab.startswith("K (B, S, h·d_k)"))
    assert "cross_attn.w_k" in k_label


def test_values_on_request(tmp_path):
    src = cli_dot(tmp_path, "gpt", "--values")
    a = next(lab for lab in labels(src) if lab.startswith("A (B, h, T, T)"))
    mean = float(a.split("mean ")[1].split()[0])
    assert mean == pytest.approx(1 / 5, abs=1e-3)         # rows of A sum to 1 over T = 5 keys
    assert "= 3." in next(lab for lab in labels(src) if lab.startswith("loss"))
    m = next(lab for lab in labels(src) if lab.startswith("M (mask)"))
    assert "(10 of 25 ±inf)" in m                          # above the diagonal of 5 x 5


def test_default_pictures_stay_legible(tmp_path):
    """Both default pictures within 1440 pt wide and 8e6 pt² (one attention opened)."""
    import re

    from tinygradx.graph import renderer
    try:
        renderer.find_renderer()
    except renderer.RendererNotFound:
        pytest.skip("no Graphviz renderer installed")
    from tinygradx.models.apps.cli import main
    for model in ("gpt", "transformer"):
        out = tmp_path / f"{model}.svg"
        assert main(["graph", "--model", model, "--out", str(out)]) == 0
        head = out.read_text(encoding="utf-8")[:2000]
        w, h = map(float, re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"',
                                    head).groups())
        assert w <= 1440 and w * h <= 8e6, (model, w, h)
