"""tinygradx.viz: golden DOT files, deterministic ids, residual paths, depth, rendering.

Golden files live in tests/golden/*.dot; regenerate them after an intended change with

    TINYGRADX_REGEN_GOLDEN=1 python -m pytest tests/graph/test_viz.py

and read the diff before committing it.
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn

graphviz = pytest.importorskip(
    "graphviz", reason="the graphviz package (the viz extra) not installed")
from tinygradx.graph import renderer, viz  # noqa: E402  (after the skip: viz needs graphviz)
from tinygradx.models.apps.inspect_models import build_graph_for_cli  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(__file__)), "golden")
REGEN = os.environ.get("TINYGRADX_REGEN_GOLDEN") == "1"


def check_golden(name, text):
    path = os.path.join(GOLDEN, name)
    if REGEN or not os.path.exists(path):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        if not REGEN:
            pytest.fail(f"golden file {name} was missing and has been written; check it in")
        return
    with open(path, encoding="utf-8") as f:
        expected = f.read()
    assert text == expected, (f"DOT output differs from tests/golden/{name}; if the change is "
                              f"intended, rerun with TINYGRADX_REGEN_GOLDEN=1")


# ------------------------------------------------------------------------------------------
# small graphs and stacks built from tinygradx.nn
# ------------------------------------------------------------------------------------------

def affine():
    """y = relu(x W + b).sum() with named leaves: the smallest graph with all leaf kinds."""
    tgx.manual_seed(0)
    params = {"W": nn.Parameter(np.arange(6, dtype=np.float32).reshape(3, 2) / 10),
              "b": nn.Parameter(np.array([0.5, -1.0], np.float32))}
    x = tgx.Tensor(np.ones((4, 3), np.float32), requires_grad=True, name="x")
    y = F.relu(x @ params["W"] + params["b"]) * 0.5
    return y.sum(), params


class Block(nn.Module):
    """One Transformer block, Pre-LN (LN inside the sublayer) or Post-LN (LN after the add)."""

    def __init__(self, d, h, pre):
        self.pre = pre
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiHeadAttention(d, h)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        if self.pre:
            y = self.ln_1(x)
            x = x + self.attn(y, y, y)[0]
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x, x, x)[0])
        return self.ln_2(x + self.mlp(x))


class Stack(nn.Module):
    def __init__(self, layers, pre, vocab=11, d=8, h=2):
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(16, d)
        self.h = nn.ModuleList([Block(d, h, pre) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d) if pre else nn.Identity()
        self.head = nn.Linear(d, vocab)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(np.arange(T))
        for block in self.h:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def stack_loss(layers, pre):
    tgx.manual_seed(0)
    model = Stack(layers, pre)
    idx = np.random.default_rng(0).integers(0, 11, size=(2, 5))
    return model(idx, idx), model


def ops_on(path):
    return [t._ctx.name() for t in path if t._ctx is not None]


# ------------------------------------------------------------------------------------------
# golden DOT files
# ------------------------------------------------------------------------------------------

def test_golden_affine():
    loss, params = affine()
    check_golden("affine.dot", viz.to_dot_source(loss, params=params))


def test_golden_affine_saved_and_grads():
    loss, params = affine()
    loss.backward(retain_graph=True)
    check_golden("affine_saved_grads.dot",
                 viz.to_dot_source(loss, params=params, show_saved=True, rankdir="LR"))


def test_golden_pre_ln_block_residual():
    loss, model = stack_loss(1, pre=True)
    check_golden("pre_ln_block.dot", viz.to_dot_source(loss, params=model, highlight="residual"))


def test_golden_post_ln_depth():
    loss, model = stack_loss(2, pre=False)
    check_golden("post_ln_depth2.dot",
                 viz.to_dot_source(loss, params=model, depth=2, highlight="residual"))


# ------------------------------------------------------------------------------------------
# determinism and labels
# ------------------------------------------------------------------------------------------

def test_ids_are_a_counter_and_runs_agree():
    a = viz.to_dot_source(stack_loss(2, pre=True)[0])
    b = viz.to_dot_source(stack_loss(2, pre=True)[0])
    assert a == b
    ids = re.findall(r"^\s*(n\d+) \[", a, flags=re.M)
    assert sorted(int(i[1:]) for i in ids) == list(range(len(ids)))   # n0, n1, ..., no gaps
    assert "legend_op" in a and not re.search(r"\bn\d{6,}", a)        # no id() numbers


def test_labels_name_params_shapes_and_scopes():
    loss, model = stack_loss(1, pre=True)
    src = viz.to_dot_source(loss, params=model)
    assert "h.0.attn.w_q.weight" in src and "(8, 8)" in src
    # the seed name and the named shape, then the numeric shape, then op and module
    # a Pre-LN stack without cross-attention is written in the seed's GPT block notation
    assert 'label="LayerNorm(x_0) (2, n, d_model)\\n(2, 5, 8)\\nlayer_norm · h.0.ln_1"' in src
    assert 'label="u_0 (2, n, d_model)\\n(2, 5, 8)\\nadd · h.0"' in src
    assert "cluster_h.0.attn" in src
    assert "legend" in src


def test_gradients_only_after_backward_and_widths_scale():
    loss, model = stack_loss(1, pre=True)
    assert "grad " not in viz.to_dot_source(loss, params=model, legend=False)
    loss.backward(retain_graph=True)
    src = viz.to_dot_source(loss, params=model)
    assert "grad 1.00e+00" in src                      # dL/dL at the root
    widths = [float(w) for w in re.findall(r'penwidth="?([\d.]+)', src)]
    assert min(widths) < 1.0 and max(widths) > 3.0
    # drawing did not change the gradients training sees
    before = model.head.weight.grad.numpy().copy()
    viz.to_dot(loss, params=model, grads=True)
    np.testing.assert_array_equal(model.head.weight.grad.numpy(), before)


def test_freed_graph_is_explained():
    loss, _ = affine()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        viz.to_dot(loss)


def test_missing_graphviz_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    monkeypatch.setattr(viz, "_GRAPH_CLASS", None)
    loss, _ = affine()
    with pytest.raises(ImportError, match=r"tinygradx\[viz\]"):
        viz.to_dot(loss)


# ------------------------------------------------------------------------------------------
# residual paths
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layers", [1, 3])
def test_pre_ln_path_crosses_only_adds_until_the_final_layernorm(layers):
    loss, _ = stack_loss(layers, pre=True)
    names = ops_on(viz.residual_path(loss))
    ln = names.index("layer_norm")
    assert names[ln + 1:] == ["add"] * (2 * layers) + ["add", "embedding"]   # + the E + P add
    assert names.count("layer_norm") == 1
    assert viz.residual_summary(loss).startswith("Pre-LN: 1 LayerNorm on the identity path (ln_f)")


@pytest.mark.parametrize("layers", [1, 3])
def test_post_ln_path_crosses_one_layernorm_per_sublayer(layers):
    loss, _ = stack_loss(layers, pre=False)
    path = viz.residual_path(loss)
    names = ops_on(path)
    assert names.count("layer_norm") == 2 * layers
    scopes = [t._ctx.scope for t in path if t._ctx.name() == "layer_norm"]
    assert scopes[:2] == [f"h.{layers - 1}.ln_2", f"h.{layers - 1}.ln_1"]
    assert names[-1] == "embedding"
    assert viz.residual_summary(loss).startswith(f"Post-LN: {2 * layers} LayerNorms")


def test_highlight_marks_the_path_in_red():
    loss, model = stack_loss(1, pre=True)
    src = viz.to_dot_source(loss, params=model, highlight="residual", legend=False)
    red_nodes = re.findall(r'^\s*(n\d+) \[[^\]]*color="#d62728"', src, flags=re.M)
    red_edges = re.findall(r'^\s*(n\d+) -> (n\d+) \[[^\]]*color="#d62728"', src, flags=re.M)
    assert len(red_nodes) == len(viz.residual_path(loss))
    assert len(red_edges) == len(red_nodes) - 1


def test_no_skip_connection_is_said_plainly():
    loss, _ = affine()
    assert viz.residual_summary(loss).startswith("no residual connection found")


# the real models (models/nets/gpt.py, models/nets/transformer.py)
def gpt_loss(layers, norm_first):
    from tinygradx.models.nets import gpt
    tgx.manual_seed(0)
    cfg = gpt.GPTConfig(block_size=8, vocab_size=13, n_layer=layers, n_head=2, n_embd=8,
                        norm_first=norm_first)
    model = gpt.GPT(cfg).eval()
    idx = np.random.default_rng(0).integers(0, 13, size=(2, 6))
    return model(idx, idx)[1], model


def encdec(layers, norm_first):
    from tinygradx.models.nets import transformer
    tgx.manual_seed(0)
    model = transformer.make_model(13, 13, N=layers, d_model=8, d_ff=16, h=2, dropout=0.0,
                                   norm_first=norm_first, max_len=16).eval()
    rng = np.random.default_rng(0)
    return model, rng.integers(1, 13, size=(2, 5)), rng.integers(1, 13, size=(2, 6))


def test_real_pre_ln_gpt():
    loss, _ = gpt_loss(3, norm_first=True)
    path = viz.residual_path(loss)
    names = ops_on(path)
    ln = names.index("layer_norm")
    assert path[ln]._ctx.scope == "transformer.ln_f"
    assert set(names[ln + 1:-1]) == {"add"} and names[-1] == "embedding"
    assert names.count("layer_norm") == 1
    assert viz.residual_summary(loss).startswith("Pre-LN: 1 LayerNorm")


def test_real_post_ln_gpt():
    loss, _ = gpt_loss(3, norm_first=False)
    assert ops_on(viz.residual_path(loss)).count("layer_norm") == 6


@pytest.mark.parametrize("layers", [1, 2])
def test_real_post_ln_encoder_and_decoder(layers):
    model, src, tgt = encdec(layers, norm_first=False)
    memory = model.encode(src)
    enc = ops_on(viz.residual_path(memory.sum()))
    assert enc.count("layer_norm") == 2 * layers               # 2 per encoder layer
    logp = model(src, tgt[:, :-1])
    loss = F.nll_loss(logp.reshape(-1, 13), tgt[:, 1:].reshape(-1))
    path = viz.residual_path(loss)
    dec = [t._ctx.scope for t in path if t._ctx and t._ctx.name() == "layer_norm"]
    assert len(dec) == 3 * layers                               # 3 per decoder layer
    assert all(s.startswith("decoder.layers.") for s in dec)
    assert path[-1]._ctx.scope == "tgt_embed"


def test_real_pre_ln_encoder_decoder():
    model, src, tgt = encdec(2, norm_first=True)
    enc = ops_on(viz.residual_path(model.encode(src).sum()))
    assert enc.count("layer_norm") == 1                        # encoder.norm only


# ------------------------------------------------------------------------------------------
# depth collapsing
# ------------------------------------------------------------------------------------------

def test_depth_collapses_modules_and_merges_edges():
    loss, model = stack_loss(3, pre=True)
    full = viz.to_dot_source(loss, params=model, legend=False)
    small = viz.to_dot_source(loss, params=model, depth=2, legend=False, highlight="residual")
    assert "softmax" in full and "softmax" not in small
    for i in range(3):
        assert f'label="h.{i}\\nBlock' in small
    edges = re.findall(r"^\s*(n\d+ -> n\d+)", small, flags=re.M)
    assert len(edges) == len(set(edges))                       # merged, no duplicates
    assert len(re.findall(r"^\s*n\d+ \[", small, flags=re.M)) < 25
    assert 'h.0.attn.w_q.weight' not in small                  # absorbed into its module


def test_twelve_layer_gpt_fits_a_screen():
    loss, model = gpt_loss(12, norm_first=True)
    src = viz.to_dot_source(loss, params=model, depth=3, legend=False)
    nodes = re.findall(r"^\s*n\d+ \[", src, flags=re.M)
    assert len(nodes) < 40
    assert all(f"transformer.h.{i}\\n" in src for i in range(12))


def test_depth_validation():
    loss, _ = affine()
    with pytest.raises(ValueError, match="depth"):
        viz.to_dot(loss, depth=0)


# ------------------------------------------------------------------------------------------
# rendering
# ------------------------------------------------------------------------------------------

def available(kind):
    try:
        return viz.find_renderer(kind)[0] == kind
    except viz.RendererNotFound:
        return False


ANY = available("dot") or available("graphviz-pure")


@pytest.mark.skipif(not ANY, reason="no Graphviz renderer (dot or graphviz-pure) installed")
@pytest.mark.parametrize("kind", ["dot", "graphviz-pure"])
def test_render_svg_and_png(kind, tmp_path):
    if not available(kind):
        pytest.skip(f"{kind} is not installed")
    loss, model = stack_loss(1, pre=True)
    g = viz.to_dot(loss, params=model, depth=2, highlight="residual")
    svg = viz.render(g, str(tmp_path / "g.svg"), renderer=kind)
    assert "<svg" in open(svg, encoding="utf-8").read()
    png = viz.render(g, str(tmp_path / "g.png"), renderer=kind)
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not available("graphviz-pure"), reason="graphviz-pure is not installed")
def test_graphviz_pure_has_no_pdf(tmp_path, monkeypatch):
    real_which = renderer.shutil.which
    monkeypatch.setattr(renderer.shutil, "which",     # hide a system dot: graphviz-pure only
                        lambda name: None if name == "dot" else real_which(name))
    loss, _ = affine()
    with pytest.raises(viz.RendererNotFound, match="PDF"):
        viz.render(loss, str(tmp_path / "g.pdf"))


@pytest.mark.skipif(not ANY, reason="no Graphviz renderer installed")
def test_jupyter_display_uses_the_fallback_renderer():
    loss, _ = affine()
    bundle = viz.to_dot(loss)._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]


def test_no_renderer_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(renderer.shutil, "which", lambda name: None)
    monkeypatch.setattr(renderer, "_graphviz_pure_exe", lambda: None)
    loss, _ = affine()
    with pytest.raises(viz.RendererNotFound, match="pip install graphviz-pure"):
        viz.render(loss, str(tmp_path / "g.svg"))
    # DOT text needs no renderer
    out = viz.render(loss, str(tmp_path / "g.dot"))
    assert open(out, encoding="utf-8").read().startswith("digraph")


def test_cli_helper_writes_the_graph_and_returns_the_summary(tmp_path):
    out = tmp_path / "gpt.dot"
    said = []
    assert build_graph_for_cli("gpt", "post", 2, 3, str(out), log=said.append) == str(out)
    assert said[0] == f"drew a Post-LN GPT, 2 layers (depth 3) to {out}"
    assert said[1].startswith("Post-LN: 4 LayerNorms")
    text = out.read_text(encoding="utf-8")
    assert "transformer.h.1" in text and "#d62728" in text


def _svg_size_pt(path):
    head = open(path, encoding="utf-8").read(2000)
    w, h = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', head).groups()
    return float(w), float(h)


# What makes the CLI's default picture legible, for any renderer. Graphviz's `dot` and the
# graphviz-pure wheel lay the same graph out differently (the 2+2 encoder-decoder: dot 862 x 3976
# pt, graphviz-pure 811 x 4178), so the bounds are on what a reader needs, with room for both:
#   - the width fits a 1920-px screen at 100% zoom (1440 pt at 96 dpi): scroll down, never across,
#     and every label shows at its own font size;
#   - the area stays a few screens tall (8e6 pt^2; the every-op drawing was ~85e6);
#   - no label is set below 8 pt.
LEGIBLE_WIDTH_PT, LEGIBLE_AREA_PT2, LEGIBLE_FONT_PT = 1440, 8e6, 8


def _svg_font_sizes(path):
    return [float(x) for x in re.findall(r'font-size="([\d.]+)"',
                                         open(path, encoding="utf-8").read())]


def _svg_generator(path):
    """The renderer named in the SVG's own header comment, e.g. 'graphviz version 16.1.0
    (graphviz-pure)' or 'graphviz version 2.43.0 (0)'."""
    m = re.search(r"Generated by (.+?)\s*-->", open(path, encoding="utf-8").read(600), re.S)
    return m.group(1).strip() if m else "an unknown renderer"


def assert_legible(path, kind):
    w, h = _svg_size_pt(path)
    fonts = _svg_font_sizes(path)
    said = f"{kind} ({_svg_generator(path)}) drew {os.path.basename(path)} at {w:g} x {h:g} pt"
    assert w <= LEGIBLE_WIDTH_PT, f"{said}: wider than {LEGIBLE_WIDTH_PT} pt"
    assert w * h <= LEGIBLE_AREA_PT2, f"{said}: area {w * h:.3g} pt^2 > {LEGIBLE_AREA_PT2:g}"
    assert fonts and min(fonts) >= LEGIBLE_FONT_PT, f"{said}: smallest font {min(fonts or [0])}"


@pytest.mark.parametrize("kind", ["dot", "graphviz-pure"])
def test_cli_defaults_are_legible(kind, tmp_path):
    """`tinygradx graph --model transformer --norm post --out g.svg` with the other defaults
    (2+2 layers, depth 4, one attention opened), and the GPT's, are legible with either renderer
    (at every op they were ~9000 x 9400 pt)."""
    if not available(kind):
        pytest.skip(f"renderer {kind} is not installed (this test runs once per renderer found)")
    from tinygradx.models.apps.cli import build_parser
    args = build_parser().parse_args(["graph", "--model", "transformer", "--norm", "post",
                                      "--out", str(tmp_path / "g.svg")])
    assert args.depth == 4 and args.layers is None       # None: DEFAULT_LAYERS, 2
    said = []
    build_graph_for_cli(args.model, args.norm, args.layers, args.depth, args.out, log=said.append,
                        renderer=kind)
    assert said[0].startswith("drew a Post-LN encoder-decoder Transformer, 2+2 layers (depth 4)")
    assert_legible(args.out, kind)
    said = []                                 # --norm omitted: each model's own placement
    build_graph_for_cli("gpt", None, 2, 4, str(tmp_path / "gpt.svg"), log=said.append,
                        renderer=kind)
    assert said[0].startswith("drew a Pre-LN GPT, 2 layers") and said[1].startswith("Pre-LN")
    assert_legible(str(tmp_path / "gpt.svg"), kind)
    assert build_parser().parse_args(["graph", "--depth", "all"]).depth == "all"


def test_legibility_bounds_reject_the_every_op_drawing(tmp_path):
    """The bounds above are not vacuous: the every-op drawing of the same model fails them."""
    kind = next((k for k in ("dot", "graphviz-pure") if available(k)), None)
    if kind is None:
        pytest.skip("no Graphviz renderer (dot or graphviz-pure) installed")
    out = str(tmp_path / "all.svg")
    build_graph_for_cli("transformer", "post", 2, None, out, log=lambda _: None, renderer=kind)
    with pytest.raises(AssertionError, match="wider than|area"):
        assert_legible(out, kind)


def test_labels_carry_seed_names_and_named_shapes():
    from tinygradx.models.apps.inspect_models import named_dims, small_model, training_loss
    model, batch = small_model("transformer", "post", 1)
    loss = training_loss("transformer", model, batch)
    src = viz.to_dot_source(loss, params=model, dims=named_dims("transformer"), legend=False)
    for label in ["Q (B, S, h·d_k)\\n(2, 7, 24)", "Score/√d_k (B, h, T, S)\\n(2, 3, 5, 7)",
                  "A (B, h, T, T)", "Z (B, h, S, d_v)", "Concat (B, T, h·d_v)",
                  "MHA (B, T, d_model)", "Y_attn (B, S, d_model)", "y (B, T, d_model)",
                  "H_ff (B, T, d_ff)", "H (B, S, d_model)", "logits (B, T, V)",
                  "X (B, S, d_model)", "loss\\nscalar"]:
        assert label in src, label
    zh = viz.to_dot_source(loss, params=model, lang="zh")
    assert "图例" in zh and "残差路径" not in viz.to_dot_source(loss, params=model)


def test_llama_style_gpt_labels_name_rmsnorm_rope_gqa_and_swiglu():
    from tinygradx.models.apps.inspect_models import named_dims, small_model, training_loss
    model, batch = small_model("gpt", "pre", 1, llama=True)
    loss = training_loss("gpt", model, batch)
    src = viz.to_dot_source(loss, params=model, dims=named_dims("gpt", llama=True),
                            legend=False)
    for label in ["RMSNorm(x_0) (B, T, d_model)\\n(2, 5, 24)\\nmul · transformer.h.0.ln_1",
                  "[Q K V] (B, T, d_model+2·h_kv·d_k)\\n(2, 5, 48)",
                  "K (B, T, h_kv·d_k)\\n(2, 5, 12)", "Q₁ (B, h, T, d_k/2)",
                  "rotate_half(Q) (B, h, T, d_k)", "RoPE(Q) (B, h, T, d_k)\\n(2, 6, 5, 4)",
                  "RoPE(K) (B, h_kv, T, d_k)\\n(2, 3, 5, 4)",
                  "K (B, h, T, d_k)\\n(2, 6, 5, 4)\\nrepeatinterleave",
                  "u_0 (B, T, d_model)", "SiLU(H_ff) (B, T, d_ff)", "H_up (B, T, d_ff)",
                  "SwiGLU (B, T, d_ff)\\n(2, 5, 64)", "MLP (B, T, d_model)",
                  "x_1 (B, T, d_model)", "logits (B, T, V)"]:
        assert label in src, label
    assert viz.residual_summary(loss).startswith(
        "Pre-LN: 1 RMSNorm on the identity path (transformer.ln_f); 2 skip adds")


# ------------------------------------------------------------------------------------------
# a recorded backward pass (create_graph=True): its ops are marked, the forward's are not
# ------------------------------------------------------------------------------------------

class _Scale(nn.Module):
    def __init__(self, w):
        self.w = nn.Parameter(np.array(w))

    def forward(self, x):
        return (x * self.w).exp()


class _ExpCritic(nn.Module):
    """A critic of element-wise ops only (their graph rules came with create_graph itself)."""

    def __init__(self):
        self.a, self.b = _Scale([0.5, -1.0, 2.0]), _Scale([1.0, 0.5, -0.5])

    def forward(self, x):
        return self.b(self.a(x)).sum(dim=1)


def _penalty(critic, x):
    """mean(||dD/dx||^2 - 1): a gradient penalty, recorded with create_graph=True."""
    (g,) = tgx.grad(critic(x).sum(), x, create_graph=True)
    return ((g * g).sum(dim=1) - 1).mean()


def _small_penalty():
    x = tgx.Tensor(np.array([[0.1, 0.2, 0.3], [0.3, -0.1, 0.2]]), requires_grad=True,
                   name="x_hat")
    critic = _ExpCritic()
    return _penalty(critic, x), critic


def _nodes(src):
    """[(DOT id, attribute text, the cluster names it sits in)] of every node statement."""
    out, frames = [], []
    for line in src.splitlines():
        s = line.strip()
        if s.startswith("subgraph "):
            frames.append(s.split()[1])
        elif s == "}":
            frames = frames[:-1]
        elif re.match(r"n\d+ \[", s):
            out.append((s.split()[0], s, tuple(frames)))
    return out


def test_golden_gradient_penalty():
    loss, critic = _small_penalty()
    check_golden("gradient_penalty.dot", viz.to_dot_source(loss, params=critic))


def _check_marked(src):
    """Every op node a backward pass recorded is pink and inside the recorded-backward frame;
    every other op node is neither. Returns the two counts."""
    backward = forward = 0
    for _, text, frames in _nodes(src):
        if "shape=box " not in text:           # leaves: a constant the backward made sits there
            continue
        # the scope line of an op a backward pass made: "backward(tanh)" at the top,
        # "fc1/backward(linear)" inside a module
        if "backward(" in text:
            assert 'fillcolor="#f9dcea"' in text and "cluster_backward" in frames, text
            backward += 1
        else:
            assert "#f9dcea" not in text and "cluster_backward" not in frames, text
            forward += 1
    return backward, forward


def test_backward_ops_are_marked_and_the_forward_is_not():
    loss, critic = _small_penalty()
    src = viz.to_dot_source(loss, params=critic)
    backward, forward = _check_marked(src)
    # exp's recorded gradient reads the forward's exp output (as PyTorch's saved output), so
    # the only exp nodes are the forward's two
    assert (backward, forward) == (4, 8)
    assert 'label="backward of exp · b"' in src and src.count('label="exp') == 2
    assert "legend_backward" in src
    # the forward alone is drawn exactly as before: no trace of the backward style
    plain = viz.to_dot_source(critic(tgx.Tensor(np.ones((2, 3)), requires_grad=True)).sum(),
                              params=critic)
    assert "backward" not in plain and "#f9dcea" not in plain


def test_gradient_penalty_of_an_mlp_critic_is_marked():

    class Critic(nn.Module):
        def __init__(self):
            self.fc1, self.fc2 = nn.Linear(3, 8), nn.Linear(8, 1)

        def forward(self, x):
            return self.fc2(F.tanh(self.fc1(x)))

    tgx.manual_seed(0)
    critic = Critic()
    x = tgx.Tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32),
                   requires_grad=True, name="x_hat")
    loss = critic(x).mean() + 10 * _penalty(critic, x)
    src = viz.to_dot_source(loss, params=critic)
    backward, forward = _check_marked(src)
    assert backward > 0 and forward > 0
    assert 'label="backward of linear · fc2"' in src   # a frame per node's backward
    assert "cluster_fc1" in src                    # the forward keeps its module frames


def test_backward_ops_collapse_apart_from_their_module():
    loss, critic = _small_penalty()
    src = viz.to_dot_source(loss, params=critic, depth=1, legend=False)
    boxes = {text.split('"')[1].split("\\n")[0]: (text, frames) for _, text, frames in
             _nodes(src) if "box3d" in text}
    assert set(boxes) == {"a", "b", "a/backward", "b/backward"}
    assert "#f9dcea" in boxes["a/backward"][0] and "cluster_backward" in boxes["a/backward"][1]
    assert "#e8dcf5" in boxes["a"][0] and not boxes["a"][1]


def test_backward_frames_speak_chinese():
    loss, critic = _small_penalty()
    src = viz.to_dot_source(loss, params=critic, lang="zh")
    assert "记录下的反向传播 (create_graph=True)" in src and "反向传播：exp · b" in src
