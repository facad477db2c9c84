"""Attention maps: the weights A = softmax(QK^T/sqrt(d_k) + M) of every attention layer of a
model on one input, as arrays (L, h, n, m), CSV files, heatmaps (PNG, with matplotlib) and a
terminal heatmap. Re-exported by pictures.py.

    from tinygradx.models.apps import pictures
    maps = pictures.attention_from_checkpoint("runs/reverse/checkpoint.npz", "abcdef", "pics")
    maps["cross"].shape                  # (layers, heads, target positions, source positions)

Attention weights are captured with `tinygradx.autograd.observe`: every softmax op created
inside a module whose path ends in self_attn, cross_attn or attn is the A = softmax(QK^T/sqrt(d_k)
+ M) of that layer. This needs nothing from the models (no flags, no return values), so it works
for any model built from tinygradx ops; the models' `record_attn` flags are the fallback.
"""
from __future__ import annotations

import csv
import os
import re

import numpy as np

import tinygradx as tgx

from .figures import ensure_dir, figure_class, save_figure, words

# the last path component of an attention module, and what its softmax is
_ATTN_SUFFIXES = ("self_attn", "cross_attn", "attn")
_SHADES = " .:-=+*#%@"      # 10 levels for the terminal heatmap, light to dark
# the words of the attention pictures in Chinese (lang="zh")
ZH = {
    "layer {layer} head {k}": "第 {layer} 层 第 {k} 个头",
    "  (row = query, column = key; rows sum to 1)": "（行 = 查询，列 = 键；每行之和为 1）",
    "encoder self-attention": "编码器自注意力", "decoder self-attention (causal)":
        "解码器自注意力（因果）", "cross-attention (decoder reads H)": "交叉注意力（解码器读取 H）",
    "causal self-attention": "因果自注意力",
}


# ------------------------------------------------------------------------------------------
# capturing attention weights
# ------------------------------------------------------------------------------------------

def _layer_index(path):
    """The layer number in a module path: 'decoder.layers.3.cross_attn' -> 3."""
    nums = re.findall(r"\.(\d+)\.", "." + path + ".")
    return int(nums[-1]) if nums else 0


def _kind(path):
    """'encoder_self', 'decoder_self', 'cross' or 'self' (a GPT's causal self-attention)."""
    last = path.rsplit(".", 1)[-1]
    if last == "cross_attn":
        return "cross"
    if path.startswith("encoder."):
        return "encoder_self"
    if path.startswith("decoder."):
        return "decoder_self"
    return "self"


def capture_attention(fn, *args, **kwargs):
    """Run fn(*args, **kwargs) and collect the attention weights of every attention module.

    Returns (fn's result, {module path: A (B, h, n, m)}), in the order the layers ran. Runs
    under no_grad: the pictures never need a graph.
    """
    found = {}

    def watch(ctx, inputs, out, seconds):
        if ctx.name() == "softmax" and ctx.scope.rsplit(".", 1)[-1] in _ATTN_SUFFIXES:
            found[ctx.scope] = out.numpy(force=True).copy()

    with tgx.no_grad(), tgx.autograd.observe(watch):
        result = fn(*args, **kwargs)
    return result, found


def _recorded_weights(model):
    """The fallback: the models' record_attn flags, read after a forward pass."""
    found = {}
    for path, m in model.named_modules():
        for attr, name in (("attn_weights", "self_attn"), ("self_attn_weights", "self_attn"),
                           ("cross_attn_weights", "cross_attn")):
            a = getattr(m, attr, None)
            if a is not None:
                # GPT keeps A on the attention module itself, the encoder-decoder on its layer
                full = path if path.endswith(".attn") else f"{path}.{name}"
                found[full] = np.array(a.numpy(force=True) if isinstance(a, tgx.Tensor) else a)
    return found


def _set_record(model, flag):
    for _, m in model.named_modules():
        if hasattr(m, "record_attn"):
            m.record_attn = flag


def attention_weights(model, fn, *args, **kwargs):
    """{kind: A (L, h, n, m)} for batch row 0 of the forward pass fn(*args, **kwargs).

    kind is 'encoder_self', 'decoder_self', 'cross' (encoder-decoder) or 'self' (GPT). The model
    is put in eval mode (no dropout on A) and restored afterwards.
    """
    was_training = model.training
    model.eval()
    try:
        _, found = capture_attention(fn, *args, **kwargs)
        n_attn = sum(1 for path, _ in model.named_modules()
                     if path.rsplit(".", 1)[-1] in _ATTN_SUFFIXES)
        if not found or len(found) < n_attn:   # fused attention (no softmax op): record all
            _set_record(model, True)
            with tgx.no_grad():
                fn(*args, **kwargs)
            found = _recorded_weights(model)
            _set_record(model, False)
    finally:
        model.train(was_training)
    by_kind = {}
    for path, a in found.items():
        by_kind.setdefault(_kind(path), []).append((_layer_index(path), a[0]))
    return {k: np.stack([a for _, a in sorted(v, key=lambda t: t[0])])   # (L, h, n, m)
            for k, v in by_kind.items()}


def translation_attention(model, src_ids, tgt_ids):
    """Attention maps of an EncoderDecoder reading src_ids and the target tgt_ids (both lists
    of ids without <bos>/<eos>), teacher-forced: the decoder input is <bos> + tgt_ids.

    Returns {'encoder_self': (L, h, S, S), 'decoder_self': (L, h, T, T), 'cross': (L, h, T, S)}
    with T = len(tgt_ids) + 1.
    """
    from tinygradx.models.tasks import BOS
    src = np.asarray([list(src_ids)], dtype=np.int64)                  # (1, S)
    tgt_in = np.asarray([[BOS] + list(tgt_ids)], dtype=np.int64)        # (1, T)
    return attention_weights(model, model, tgx.tensor(src), tgx.tensor(tgt_in))


def gpt_attention(model, ids):
    """{'self': A (L, h, T, T)} of a GPT reading ids (a list of ids)."""
    idx = np.asarray([list(ids)], dtype=np.int64)                      # (1, T)
    return attention_weights(model, model, tgx.tensor(idx))


# ------------------------------------------------------------------------------------------
# drawing and writing attention
# ------------------------------------------------------------------------------------------

TITLES = {"encoder_self": "encoder self-attention", "decoder_self":
           "decoder self-attention (causal)", "cross": "cross-attention (decoder reads H)",
           "self": "causal self-attention"}


def write_attention_csv(A, rows, cols, path):
    """Long format: layer, head, query index/token, key index/token, weight (one row per cell)."""
    L, h, n, m = A.shape
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["layer", "head", "query", "query_token", "key", "key_token", "weight"])
        for layer in range(L):
            for k in range(h):
                for i in range(n):
                    for j in range(m):
                        w.writerow([layer, k, i, rows[i], j, cols[j],
                                    f"{A[layer, k, i, j]:.6g}"])
    return path


def plot_attention(A, rows, cols, title, path, lang="en"):
    """A (L, h, n, m) as a grid of heatmaps, one row per layer and one column per head, the
    query tokens down the side and the key tokens along the bottom. None without matplotlib."""
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is None:
        return None
    L, h, n, m = A.shape
    cell = 0.28                                                  # inches per token
    fig = Figure(figsize=(max(2.2, cell * m + 0.8) * h, max(2.0, cell * n + 0.9) * L))
    axes = fig.subplots(L, h, squeeze=False)
    for layer in range(L):
        for k in range(h):
            ax = axes[layer][k]
            ax.imshow(A[layer, k], vmin=0.0, vmax=1.0, cmap="viridis", aspect="equal")
            ax.set_xticks(range(m))
            ax.set_xticklabels(cols, fontsize=7, rotation=90)
            ax.set_yticks(range(n))
            ax.set_yticklabels(rows, fontsize=7)
            ax.set_title(tr("layer {layer} head {k}").format(layer=layer, k=k), fontsize=8)
    fig.suptitle(tr(title) + tr("  (row = query, column = key; rows sum to 1)"), fontsize=10)
    return save_figure(fig, path, lang)


def ascii_heatmap(a, rows, cols):
    """One (n, m) map as text for a terminal: darker characters are larger weights."""
    width = max((len(str(r)) for r in rows), default=0)
    levels = len(_SHADES) - 1
    lines = [" " * (width + 1) + "".join(str(c)[:1] or " " for c in cols)]
    for i, r in enumerate(rows):
        cells = "".join(_SHADES[int(round(float(np.clip(v, 0, 1)) * levels))] for v in a[i])
        lines.append(f"{str(r):>{width}} {cells}")
    return "\n".join(lines)


def save_attention(maps, labels, out_dir, prefix="attention", lang="en"):
    """Write each kind of `maps` ({kind: A (L, h, n, m)}) as CSV (always) and PNG (with
    matplotlib). labels maps kind -> (query tokens, key tokens). Returns {kind: [paths]}."""
    out_dir = ensure_dir(out_dir)
    written = {}
    for kind, A in maps.items():
        rows, cols = labels[kind]
        base = os.path.join(out_dir, f"{prefix}_{kind}")
        paths = [write_attention_csv(A, rows, cols, base + ".csv")]
        png = plot_attention(A, rows, cols, TITLES.get(kind, kind), base + ".png", lang)
        if png:
            paths.append(png)
        written[kind] = paths
    return written


def attention_from_checkpoint(checkpoint, text, out_dir="pictures", target=None,
                              prefix="attention", lang="en"):
    """Attention maps of a trained checkpoint (a `tinygradx train` run) on one input.

    Translation checkpoints: `text` is the source sentence; the target is `target` if given,
    else the model's own greedy translation, and the decoder reads <bos> + target. Returns
    {'encoder_self', 'decoder_self', 'cross'}. Language-model checkpoints (GPT): `text` is the
    prompt; returns {'self'}. Arrays are (L, h, n, m); CSV and PNG files go to out_dir, named
    f"{prefix}_{kind}.csv/.png".
    """
    from tinygradx.models.training.trainer import Trainer
    trainer = Trainer.from_checkpoint(checkpoint, log=lambda *a: None, progress=False)
    model, task = trainer.model, trainer.task
    if trainer.lm:
        if trainer.cfg.task == "chars":
            ids, toks = task.encode(text), list(text)
        else:                                    # add: the vocabulary is the digits
            vocab = list(task.vocab)
            ids, toks = [vocab.index(c) for c in text], list(text)
        maps = gpt_attention(model, ids)
        labels = {"self": (toks, toks)}
    else:
        src_toks = task.tokenize_src(text)
        if target is None:
            tgt_toks = trainer.translate([src_toks], as_tokens=True)[0]
        else:
            tgt_toks = task.tokenize_tgt(target)
        # an untrained model may never say <eos>: keep <bos> + target within the PE table
        tgt_toks = list(tgt_toks)[:model.pos_encoding.pe.shape[0] - 1]
        maps = translation_attention(model, task.src_vocab.encode(src_toks),
                                     task.tgt_vocab.encode(tgt_toks))
        tgt_in = ["<bos>"] + list(tgt_toks)
        labels = {"encoder_self": (src_toks, src_toks), "decoder_self": (tgt_in, tgt_in),
                  "cross": (tgt_in, src_toks)}
    save_attention(maps, labels, out_dir, prefix, lang)
    return maps

