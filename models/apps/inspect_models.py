"""The small models behind `tinygradx graph` and `tinygradx trace`, and the two commands' work.

The library draws and traces any graph (`tinygradx.viz`, `tinygradx.trace`); this module picks
*which* model to draw: a GPT or an encoder-decoder of the requested LayerNorm placement, or a
trained checkpoint, with a random batch that fits it.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn
from tinygradx import viz
from tinygradx.models.nets import gpt, transformer
from tinygradx.models.training import trainer as train
from tinygradx.graph.renderer import FontWarning
from tinygradx.trace import Trace

# Sizes of the CLI's small models, all different so the trace can name every dimension.
SIZES = dict(B=2, T=5, S=7, d_model=24, h=3, d_ff=48, V=32)
# The LLaMA-style GPT (`--llama`): 6 query heads of d_k 4 sharing 3 K/V heads (h_kv), so no
# two sizes are equal either; its SwiGLU hidden size is 8/3 d_model = 64
LLAMA = dict(h=6, h_kv=3, d_ff=64)
LLAMA_SWITCHES = dict(norm="rmsnorm", pos="rope", mlp="swiglu", bias=False)

# Each model's LayerNorm placement when none is asked for (and no checkpoint brings its own):
# GPT-2 is Pre-LN, the Transformer of "Attention Is All You Need" is Post-LN.
DEFAULT_NORM = {"gpt": "pre", "transformer": "post", "attention": "post"}

# What `tinygradx graph` and `tinygradx trace` draw and trace when not told: the same model, a
# 2-layer GPT (GPT-2's Pre-LN block), so the picture and the table describe one network.
DEFAULT_MODEL = "gpt"
DEFAULT_LAYERS = 2

# The depth `tinygradx graph` draws at by default: every sublayer (attention, FFN, each LayerNorm)
# one box with the residual adds between them, legible for both default models.
DEFAULT_DEPTH = 4


def model_facts(model):
    """What a model is, read from the model itself (never from the command's defaults):
    {"kind": "gpt" | "transformer", "norm": "pre" | "post", "layers": blocks (GPT) or layers
    of each stack (encoder-decoder), "norm_name": "LayerNorm" | "RMSNorm", "extras": the
    LLaMA-style parts it has (RMSNorm, RoPE, SwiGLU, "3 K/V heads")}."""
    if isinstance(model, gpt.GPT):
        c, blocks = model.config, list(model.transformer.h)
        placements = {b.norm_first for b in blocks}
        extras = [word for on, word in ((c.norm == "rmsnorm", "RMSNorm"), (c.pos == "rope", "RoPE"),
                                        (c.mlp == "swiglu", "SwiGLU")) if on]
        if c.n_kv_head and c.n_kv_head != c.n_head:
            extras.append(f"{c.n_kv_head} K/V heads")
        facts = dict(kind="gpt", layers=len(blocks), extras=extras,
                     norm_name="RMSNorm" if c.norm == "rmsnorm" else "LayerNorm")
    elif isinstance(model, transformer.EncoderDecoder):
        enc, dec = list(model.encoder.layers), list(model.decoder.layers)
        placements = {m.norm_first for m in enc + dec}
        if len(enc) != len(dec):
            raise ValueError(f"an encoder-decoder of {len(enc)}+{len(dec)} layers: the tools "
                             f"draw stacks of one depth")
        facts = dict(kind="transformer", layers=len(enc), extras=[], norm_name="LayerNorm")
    else:
        raise ValueError(f"cannot describe a {type(model).__name__}: the tools know GPT and "
                         f"EncoderDecoder")
    if len(placements) != 1:
        raise ValueError("a model whose blocks mix Pre-LN and Post-LN")
    facts["norm"] = "pre" if placements.pop() else "post"
    return facts


# the words of `describe` and `norm_note` in Chinese (lang="zh"); the seed's terms (Pre-LN,
# Post-LN, GPT, LayerNorm, RMSNorm, RoPE, SwiGLU) stay as the seed writes them
_ZH = {"layer": "层", "layers": "层", "encoder-decoder Transformer": "编码器—解码器 Transformer",
       "K/V heads": "个 K/V 头", "LLaMA-style GPT": "LLaMA 式 GPT"}


def describe(model, lang="en"):
    """What `model` is, in one phrase computed from the model (`model_facts`): "a Pre-LN GPT,
    2 layers" / "a Post-LN encoder-decoder Transformer, 2+2 layers" / "a Pre-LN LLaMA-style
    GPT (RMSNorm, RoPE, SwiGLU, 3 K/V heads), 1 layer"; lang "zh" in Chinese."""
    f = model_facts(model)
    ln = {"pre": "Pre-LN", "post": "Post-LN"}[f["norm"]]
    n = f["layers"]
    zh = lang == "zh"
    if f["kind"] == "gpt":
        extras = [e.replace("K/V heads", _ZH["K/V heads"]) if zh else e for e in f["extras"]]
        llama = {"RMSNorm", "RoPE", "SwiGLU"} <= set(f["extras"])
        kind = "LLaMA-style GPT" if llama else "GPT"
        kind = _ZH.get(kind, kind) if zh else kind
        if extras:
            kind += f"（{'、'.join(extras)}）" if zh else f" ({', '.join(extras)})"
        if zh:
            return f"{ln} {kind}，{n} 层"
        return f"a {ln} {kind}, {n} layer{'s' if n != 1 else ''}"
    if zh:
        return f"{ln} {_ZH['encoder-decoder Transformer']}，{n}+{n} 层"
    return f"a {ln} encoder-decoder Transformer, {n}+{n} layers"


def norm_note(model, lang="en"):
    """Where the model's norms sit, from the model (`model_facts`)."""
    f = model_facts(model)
    norm, name = f["norm"], f["norm_name"]
    short = "LN" if name == "LayerNorm" else name
    if norm == "pre":
        first = "ln_1" if f["kind"] == "gpt" else "norm1"
        if lang == "zh":
            return (f"{name} 在每个子层内部：x + Sublayer({short}(x))（{first} 在"
                    f"{'注意力' if f['kind'] == 'gpt' else '自注意力'}之前）")
        where = f"{first} before {'attention' if f['kind'] == 'gpt' else 'self-attention'}"
        return f"{name} inside each sublayer, x + Sublayer({short}(x)) ({where})"
    if lang == "zh":
        return f"{name} 在每次残差相加之后：{short}(x + Sublayer(x))（残差连接 + 层归一化）"
    return f"{name} after each residual add, {short}(x + Sublayer(x)) (Add & Norm)"


def named_dims(model_name, llama=False):
    """The trace's names for the sizes of the small model `model_name` ("gpt"/"transformer");
    with `llama` those of the LLaMA-style GPT (h_kv, the K/V heads, too)."""
    c = SIZES
    dims = dict(B=c["B"], d_model=c["d_model"], h=c["h"], d_k=c["d_model"] // c["h"])
    if model_name == "gpt" and llama:
        dims.update(T=c["T"], h=LLAMA["h"], d_k=c["d_model"] // LLAMA["h"],
                    h_kv=LLAMA["h_kv"], d_ff=LLAMA["d_ff"], V=c["V"])
    elif model_name == "gpt":
        dims.update(T=c["T"], d_ff=4 * c["d_model"], V=c["V"])
    else:
        dims.update(S=c["S"], T=c["T"], d_ff=c["d_ff"], V=c["V"])
    return dims


def small_model(model_name, norm, layers, checkpoint=None, seed=0, llama=False):
    """A small model of the requested kind and LayerNorm placement, and a batch for it; with
    `llama` the GPT has RMSNorm, RoPE, SwiGLU, grouped-query attention and no biases. With a
    `checkpoint` the model is the checkpoint's (its own config: a `model_name`, `norm` or
    `layers` that says otherwise is refused, see `checkpoint_model`)."""
    if checkpoint:
        if llama:
            raise ValueError("--llama builds a small LLaMA-style GPT: it needs --model gpt and "
                             "no --checkpoint (a checkpoint brings its own config)")
        tgx.manual_seed(seed)
        return checkpoint_model(checkpoint, np.random.default_rng(seed), model_name, norm,
                                layers)
    model_name = model_name or DEFAULT_MODEL
    norm = norm or DEFAULT_NORM[model_name]
    layers = DEFAULT_LAYERS if layers is None else layers
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
    if model_name not in ("gpt", "transformer"):
        raise ValueError(f"model must be 'gpt' or 'transformer', got {model_name!r}")
    if llama and model_name != "gpt":
        raise ValueError("--llama builds a small LLaMA-style GPT: it needs --model gpt and "
                         "no --checkpoint (a checkpoint brings its own config)")
    tgx.manual_seed(seed)
    rng = np.random.default_rng(seed)
    c = SIZES
    if model_name == "gpt":
        extra = dict(LLAMA_SWITCHES, n_head=LLAMA["h"], n_kv_head=LLAMA["h_kv"]) if llama \
            else dict(n_head=c["h"])
        cfg = gpt.GPTConfig(block_size=16, vocab_size=c["V"], n_layer=layers,
                            n_embd=c["d_model"], dropout=0.0, norm_first=(norm == "pre"),
                            fused_attention=False,   # one node per formula, not one for all
                            **extra)
        model = gpt.GPT(cfg)
        idx = rng.integers(0, c["V"], size=(c["B"], c["T"] + 1))
        batch = (idx[:, :-1], idx[:, 1:])
    else:
        model = transformer.make_model(c["V"], c["V"], N=layers, d_model=c["d_model"],
                                       d_ff=c["d_ff"], h=c["h"], dropout=0.0,
                                       norm_first=(norm == "pre"), max_len=64)
        batch = (rng.integers(1, c["V"], size=(c["B"], c["S"])),
                 rng.integers(1, c["V"], size=(c["B"], c["T"] + 1)))
    model.eval()                   # no dropout nodes: the picture shows the model's math
    return model, batch


def checkpoint_model(path, rng, model_name=None, norm=None, layers=None):
    """A trained model from a `tinygradx train` checkpoint (its config decides the sizes) and a
    random batch that fits it (so a chars or tsv checkpoint whose data file is gone draws too).
    A `model_name`, `norm` or `layers` given with it must be what the checkpoint holds: each
    that is not is a ValueError naming the flag and the checkpoint's own value."""
    model = train.Trainer.from_checkpoint(path, log=lambda *a, **k: None, need_data=False).model
    facts = model_facts(model)
    own = {"--model": (model_name, facts["kind"]), "--norm": (norm, facts["norm"]),
           "--layers": (layers, facts["layers"])}
    for flag, (asked, real) in own.items():
        if asked is not None and asked != real:
            raise ValueError(f"{flag} {asked}: the checkpoint {path} holds {describe(model)}"
                             f" ({flag} {real}); drop {flag} to draw it as it is")
    model.eval()
    for m in model.modules():              # show attention formula by formula (same numbers)
        if isinstance(m, gpt.CausalSelfAttention):
            m.fused = False
    c = SIZES
    if isinstance(model, gpt.GPT):
        V, T = model.config.vocab_size, min(c["T"], model.config.block_size)
        idx = rng.integers(0, V, size=(c["B"], T + 1))
        return model, (idx[:, :-1], idx[:, 1:])
    cfg = model.config
    return model, (rng.integers(1, cfg.src_vocab, size=(c["B"], c["S"])),
                   rng.integers(1, cfg.tgt_vocab, size=(c["B"], c["T"] + 1)))


def model_kind(model):
    return "gpt" if isinstance(model, gpt.GPT) else "transformer"


def training_loss(model_name, model, batch):
    """The training loss of one batch (GPT: next-token CE; Transformer: NLL of the shifted
    target under the generator's log-probabilities)."""
    if model_name == "gpt":
        return model(batch[0], batch[1])[1]
    src, tgt = batch
    logp = model(src, tgt[:, :-1])                               # (B, T, V)
    V = logp.shape[-1]
    return F.nll_loss(logp.reshape(-1, V), tgt[:, 1:].reshape(-1))


def build_graph_for_cli(model_name, norm, layers, depth, out, checkpoint=None,
                        renderer="auto", log=print, lang="en", llama=False, values=False):
    """`tinygradx graph ...`: build the model, draw one loss's graph with its residual path.

    Writes `out` (.svg/.png/.pdf, .dot/.gv for the DOT text, or .html for the page with the
    trace beside the graph, `tinygradx.page`), passes what it drew ("drew a Pre-LN GPT, ...",
    computed from the model drawn, `describe`) and the one-line residual summary to `log` (print
    by default) and returns the path written. `model_name`, `norm` and `layers` None take the
    defaults (a 2-layer GPT, the model's own placement: GPT pre, Transformer post), or with a
    `checkpoint` the checkpoint's own; `depth` None draws every op. `llama` draws the
    LLaMA-style GPT instead of GPT-2's block. Below a `depth` the first attention of each kind
    is still drawn op by op (Q, K, V, Score, A, Z, Concat, MHA); `values` adds each tensor's
    mean and std to its node (in the picture and on the page).
    """
    model, batch = small_model(model_name, norm, layers, checkpoint, llama=llama)
    model_name = model_kind(model)
    dims = None if checkpoint else named_dims(model_name, llama)
    what = describe(model, lang)
    title = checkpoint or (what[2:] if lang != "zh" else what)
    depth_text = (("每个算子" if depth is None else f"深度 {depth}") if lang == "zh" else
                  ("every op" if depth is None else f"depth {depth}"))
    if out.lower().endswith((".html", ".htm")):
        from tinygradx import page
        with tgx.trace(dims=dims, lang=lang, graph=True) as t:
            loss = training_loss(model_name, model, batch)
        loss.backward(retain_graph=True)
        summary = viz.residual_summary(loss, lang=lang)
        sep = "。" if lang == "zh" else ". "
        path = page.write(t, out, params=model, depth=depth, title=title,
                          summary=f"{what}（{depth_text}）{sep}{summary}" if lang == "zh" else
                          f"{what} ({depth_text}){sep}{summary}", expand="attention",
                          values=values)
    else:
        loss = training_loss(model_name, model, batch)
        loss.backward(retain_graph=True)
        summary = viz.residual_summary(loss, lang=lang)
        dot = viz.to_dot(loss, params=model, depth=depth, highlight="residual", title=title,
                         dims=dims, lang=lang, expand="attention", values=values)
        with warnings.catch_warnings(record=True) as notes:   # Chinese drawn as boxes
            warnings.simplefilter("always", FontWarning)
            path = viz.render(dot, out, renderer=renderer)
        for note in notes:
            if issubclass(note.category, FontWarning):
                print(f"note: {note.message}", file=sys.stderr)
            else:
                warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    if log is not None:
        log(f"已绘制 {what}（{depth_text}）：{path}" if lang == "zh" else
            f"drew {what} ({depth_text}) to {path}")
        log(summary)
    return path


def trace_cli(model_name=None, norm=None, layers=None, fmt="text", scope=None, checkpoint=None,
              lang="en", llama=False):
    """`tinygradx trace --model gpt|transformer|attention ...`: one forward pass, traced.

    "attention" is a single self-attention sublayer LayerNorm(x + MHA(x, x, x)) (B=2, n=5,
    d_model=12, h=3); "gpt" and "transformer" are small models of the given LayerNorm placement
    (None: the model's own, GPT pre, Transformer post), and their table starts with a line that
    says which, computed from the model traced (`describe`, `norm_note`; in Chinese with lang
    "zh"). Returns the text (the CLI prints it); fmt="html" gives the page of the graph and
    the table. `llama` traces the LLaMA-style GPT (RMSNorm, RoPE, SwiGLU, grouped-query
    attention) instead of GPT-2's block.
    """
    if model_name == "attention":
        if llama:
            raise ValueError("--llama builds a small LLaMA-style GPT: it needs --model gpt")
        return attention_trace().table(fmt=fmt, scope=scope, lang=lang)
    model, batch = small_model(model_name, norm, layers, checkpoint, llama=llama)
    model_name = model_kind(model)
    # a checkpoint's sizes are guessed
    dims = None if checkpoint else named_dims(model_name, llama)
    with tgx.trace(dims=dims, lang=lang, graph=(fmt == "html")) as t:
        training_loss(model_name, model, batch)
    sep = "：" if lang == "zh" else ": "
    what = f"{describe(model, lang)}{sep}{norm_note(model, lang)}"
    if fmt == "html":
        from tinygradx import page
        return page.trace_page(t, scope=scope, params=model, depth=None,
                               title=what if lang == "zh" else what[2:])
    return f"{what}\n{t.table(fmt=fmt, scope=scope)}"


class AttentionSublayer(nn.Module):
    """One Post-LN self-attention sublayer: LayerNorm(x + MHA(x, x, x))."""

    def __init__(self, d_model=12, h=3):
        super().__init__()
        self.self_attn = nn.MultiHeadAttention(d_model, h)
        self.norm1 = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.norm1(x + self.self_attn(x, x, x)[0])


def attention_trace() -> Trace:
    """The trace of one AttentionSublayer on a (2, 5, 12) batch (B=2, n=5, h=3, d_k=4)."""
    tgx.manual_seed(0)
    layer = AttentionSublayer()
    x = tgx.randn(2, 5, 12)
    with tgx.trace(dims={"B": 2, "n": 5, "d_model": 12, "h": 3, "d_k": 4}) as t:
        layer(x)
    return t
