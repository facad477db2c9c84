"""The pictures a learner reads next to the formulas: attention maps, the PE matrix, the
learning-rate schedule, training curves and a run's health (gradient norms, update ratios).
The masks and label smoothing are in formula_pictures.py.

matplotlib is an optional extra. Every function here returns the numbers as numpy arrays and
always writes them as CSV; it writes a PNG too when matplotlib can be imported. Nothing here
imports matplotlib at module import time, so `import tinygradx.models.apps.pictures` is free.

    from tinygradx.models.apps import pictures
    maps = pictures.attention_from_checkpoint("runs/reverse/checkpoint.npz", "abcdef", "pics")
    maps["cross"].shape                  # (layers, heads, target positions, source positions)
    pictures.positional_encoding(50, 64, "pics")
    pictures.training_curves("runs/reverse/metrics.jsonl", "pics")

Attention weights are captured with `tinygradx.autograd.observe`: every softmax op created
inside a module whose path ends in self_attn, cross_attn or attn is the A = softmax(QK^T/sqrt(d_k)
+ M) of that layer. This needs nothing from the models (no flags, no return values), so it works
for any model built from tinygradx ops; the models' `record_attn` flags are the fallback.
"""
from __future__ import annotations

import csv
import logging
import math
import os
import re
import warnings

import numpy as np

import tinygradx as tgx
from tinygradx.models.training import rundir

# the last path component of an attention module, and what its softmax is
_ATTN_SUFFIXES = ("self_attn", "cross_attn", "attn")
_SHADES = " .:-=+*#%@"      # 10 levels for the terminal heatmap, light to dark


# ------------------------------------------------------------------------------------------
# matplotlib, optional
# ------------------------------------------------------------------------------------------

def have_matplotlib():
    """Whether PNGs will be written (matplotlib importable)."""
    return figure_class() is not None


def figure_class():
    """matplotlib.figure.Figure, or None without matplotlib.

    The object-oriented Figure (not pyplot) needs no backend and touches no global state, so
    drawing here never changes what a Jupyter session or a user's pyplot is doing.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def save_figure(fig, path, lang="en"):
    """Write `fig` as a PNG; lang="zh" first gives its text a CJK font (`cjk_text`)."""
    # a CJK face of weight 500 (WenQuanYi) makes matplotlib log that it has no "normal" one
    log = logging.getLogger("matplotlib.font_manager")
    quiet = lambda record: "find font weight" not in record.getMessage()   # noqa: E731
    log.addFilter(quiet)
    try:
        if lang == "zh":
            cjk_text(fig)
        fig.tight_layout()                 # keep tick labels of neighbouring panels apart
        fig.savefig(path, dpi=100, bbox_inches="tight")
    finally:
        log.removeFilter(quiet)
    return path


def cjk_text(fig):
    """Draw every text of `fig` in DejaVu Sans (matplotlib's own) falling back, glyph by glyph,
    to the best CJK font installed (`renderer.cjk_fonts`), so Chinese labels are not boxes.

    Set on the figure's texts, not in rcParams, so no global setting changes. The font file
    is added to matplotlib's font list, whose cache may predate the font's installation. With
    no CJK font this warns (renderer.FontWarning) once, with the package to install."""
    from matplotlib import font_manager
    from matplotlib.text import Text

    from tinygradx.graph import renderer
    families = renderer.cjk_fonts()
    if not families:
        warnings.warn(renderer.cjk_note("matplotlib", "png", "中"), renderer.FontWarning,
                      stacklevel=3)
        return fig
    path = renderer.cjk_font_file(families[0])
    font_manager.fontManager.addfont(path)
    name = font_manager.FontProperties(fname=path).get_name()
    for draw in (True, False):
        for text in fig.findobj(Text):
            text.set_fontfamily(["DejaVu Sans", name])
        if draw:
            fig.draw_without_rendering()   # make the tick labels a draw makes, then set theirs
    return fig


def words(table, lang):
    """A lookup of a picture's labels: the text itself in English, `table`'s entry in zh."""
    if lang not in ("en", "zh"):
        raise ValueError(f"lang must be 'en' or 'zh', got {lang!r}")
    return (lambda text: table.get(text, text)) if lang == "zh" else (lambda text: text)


def ensure_dir(out_dir):
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    return out_dir or "."


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
            found[ctx.scope] = np.array(out._data, copy=True)

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
                found[full] = np.array(a._data if hasattr(a, "data") else a)
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

_TITLES = {"encoder_self": "encoder self-attention", "decoder_self":
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
        png = plot_attention(A, rows, cols, _TITLES.get(kind, kind), base + ".png", lang)
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


# ------------------------------------------------------------------------------------------
# positional encoding, learning-rate schedule, training curves
# ------------------------------------------------------------------------------------------

def write_matrix_csv(M, header, path, index_name):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([index_name] + list(header))
        for i, row in enumerate(M):
            w.writerow([i] + [f"{v:.6g}" for v in row])
    return path


# the words of the PE and schedule pictures in Chinese (lang="zh")
ZH = {
    "dimension (even: sin, odd: cos; the wavelength grows with the index)":
        "维度（偶数列 sin，奇数列 cos；波长随序号增长）",
    "position": "位置", "sinusoidal PE, max_len={max_len}, d_model={d_model}":
        "正弦位置编码 PE，max_len={max_len}，d_model={d_model}",
    "step": "步数", "learning rate": "学习率", "learning-rate schedule": "学习率调度",
    "layer {layer} head {k}": "第 {layer} 层 第 {k} 个头",
    "  (row = query, column = key; rows sum to 1)": "（行 = 查询，列 = 键；每行之和为 1）",
    "encoder self-attention": "编码器自注意力", "decoder self-attention (causal)":
        "解码器自注意力（因果）", "cross-attention (decoder reads H)": "交叉注意力（解码器读取 H）",
    "causal self-attention": "因果自注意力", "train loss": "训练损失", "val loss": "验证损失",
    "val exact match (%)": "验证集完全匹配（%）",
}


def positional_encoding(max_len=50, d_model=64, out_dir="pictures", lang="en"):
    """The sinusoidal table PE (max_len, d_model) of the encoder-decoder, as a heatmap
    (positions down, dimensions across) and a CSV matrix (one row per position); lang="zh"
    labels the picture in Chinese."""
    from tinygradx.models.nets.transformer import sinusoidal_table
    tr = words(ZH, lang)
    pe = sinusoidal_table(max_len, d_model)                      # (max_len, d_model)
    out_dir = ensure_dir(out_dir)
    write_matrix_csv(pe, [f"dim{j}" for j in range(d_model)],
                      os.path.join(out_dir, "positional_encoding.csv"), "position")
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(8, 4.5))
        ax = fig.subplots()
        im = ax.imshow(pe, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
        ax.set_xlabel(tr("dimension (even: sin, odd: cos; the wavelength grows with the index)"))
        ax.set_ylabel(tr("position"))
        ax.set_title(tr("sinusoidal PE, max_len={max_len}, d_model={d_model}").format(
            max_len=max_len, d_model=d_model))
        fig.colorbar(im, ax=ax)
        save_figure(fig, os.path.join(out_dir, "positional_encoding.png"), lang)
    return pe


class _ScheduleOf:
    """Just enough of a Trainer for Trainer._schedule, which reads only self.cfg: the schedule
    is then exactly the one training uses, without building a task and a model."""

    def __init__(self, cfg):
        self.cfg = cfg


def lr_schedule(configs, steps=None, out_dir="pictures", name="lr_schedule", lang="en"):
    """The learning rate at every step of one TrainConfig or of {label: TrainConfig}.

    Returns {label: lr array (steps,)}; steps defaults to each config's max_steps. The CSV has
    one column per config. lang="zh" labels the axes and title in Chinese (the legend is the
    labels given).
    """
    tr = words(ZH, lang)
    from tinygradx.models.training.trainer import Trainer, TrainConfig
    if isinstance(configs, TrainConfig):
        configs = {configs.schedule: configs}
    curves = {}
    for label, cfg in configs.items():
        n = steps or cfg.max_steps
        sched = Trainer._schedule(_ScheduleOf(cfg))
        curves[label] = np.array([sched(i) for i in range(n)], dtype=np.float64)   # (n,)
    out_dir = ensure_dir(out_dir)
    n_max = max(len(v) for v in curves.values())
    with open(os.path.join(out_dir, name + ".csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["step"] + list(curves))
        for i in range(n_max):
            w.writerow([i] + [f"{v[i]:.6g}" if i < len(v) else "" for v in curves.values()])
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(7, 3.5))
        ax = fig.subplots()
        for label, v in curves.items():
            ax.plot(np.arange(len(v)), v, label=label)
        ax.set_xlabel(tr("step"))
        ax.set_ylabel(tr("learning rate"))
        ax.legend()
        ax.set_title(tr("learning-rate schedule"))
        save_figure(fig, os.path.join(out_dir, name + ".png"), lang)
    return curves


TRAINING_COLUMNS = ("step", "loss", "lr", "val_loss", "val_exact_match")


def read_metrics(path):
    """A run's metrics.jsonl (or its directory) -> {column: array}; rows without an
    evaluation have NaN in val_loss and val_exact_match."""
    if os.path.isdir(path):
        path = os.path.join(path, "metrics.jsonl")
    rows = _metric_rows(path)
    return {c: np.array([float(r.get(c, math.nan)) for r in rows]) for c in TRAINING_COLUMNS}


def _metric_rows(path):
    """The rows of a metrics.jsonl in step order, the last row of each step (a resumed run
    appends); a torn line (a kill mid-write) is skipped."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    rows = rundir.read_metrics(path)
    if not rows:
        raise ValueError(f"{path}: no metrics rows")
    by_step = {int(r["step"]): r for r in rows}
    return [by_step[s] for s in sorted(by_step)]


def run_title(run_dir):
    """"run copy_small, task copy": the run directory's name and, when its checkpoint can be
    read, the task it trained."""
    path = run_dir if os.path.isdir(run_dir) else os.path.dirname(os.path.abspath(run_dir))
    title = f"run {os.path.basename(os.path.abspath(path))}"
    try:
        _, meta = tgx.io.load_checkpoint(os.path.join(path, "checkpoint.npz"))
        return f"{title}, task {meta['config']['task']}"
    except (OSError, ValueError, KeyError, TypeError):      # no checkpoint (yet), or damaged
        return title


def _legend_outside(ax, x=1.02, **kw):
    """The legend to the right of the panel (x in axes widths), so it never hides a line."""
    return ax.legend(loc="upper left", bbox_to_anchor=(x, 1.0), borderaxespad=0.0, **kw)


def training_health(run_dir, out_dir=None, name="health"):
    """`tinygradx plot RUN_DIR`: loss and validation exact match (where the task has it),
    learning rate, and per layer the gradient norm and the update:data ratio
    ||lr * update|| / ||param|| (rows logged every --health_interval steps).

    Writes NAME.csv always (one row a step; per-layer columns grad_norm/LAYER and
    update_ratio/LAYER, empty between health rows) and NAME.png with matplotlib, titled with
    the run and its task, legends outside the panels. Returns the paths written.
    """
    path = os.path.join(run_dir, "metrics.jsonl") if os.path.isdir(run_dir) else run_dir
    rows = _metric_rows(path)
    layers = []
    for r in rows:
        for layer in r.get("layers") or {}:
            if layer not in layers:
                layers.append(layer)
    out_dir = ensure_dir(out_dir or os.path.dirname(path))
    base = ["step", "loss", "lr", "grad_norm", "val_loss", "val_exact_match"]
    cols = base + [f"{k}/{layer}" for k in ("grad_norm", "update_ratio") for layer in layers]

    def value(r, col):
        if "/" in col:
            kind, layer = col.split("/", 1)
            v = ((r.get("layers") or {}).get(layer) or {}).get(kind)
        else:
            v = r.get(col)
        return math.nan if v is None else float(v)

    table = np.array([[value(r, c) for c in cols] for r in rows])       # (rows, columns)
    csv_path = os.path.join(out_dir, name + ".csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for line in table:
            w.writerow([int(line[0])] + ["" if math.isnan(v) else f"{v:.6g}" for v in line[1:]])
    written = [csv_path]
    Figure = figure_class()
    if Figure is not None:
        step = table[:, 0]
        fig = Figure(figsize=(14, 7.5))
        fig.suptitle(run_title(os.path.dirname(os.path.abspath(path))))
        (ax_loss, ax_lr), (ax_g, ax_u) = fig.subplots(2, 2)
        handles = ax_loss.plot(step, table[:, 1], lw=0.8, label="train loss")
        ev = np.isfinite(table[:, 4])
        if ev.any():
            handles += ax_loss.plot(step[ev], table[ev, 4], "o-", label="val loss")
        ax_loss.set_yscale("log")
        em = np.isfinite(table[:, 5])
        if em.any():                   # translation and add: exact match on its own axis
            ax_em = ax_loss.twinx()
            handles += ax_em.plot(step[em], 100 * table[em, 5], "s--", color="C2",
                                  label="val exact match (%)")
            ax_em.set_ylim(0, 100)
            ax_em.set_ylabel("exact match (%)")
        ax_loss.set_title("loss" + (" and exact match" if em.any() else ""))
        # past the exact-match axis's labels when there is one
        _legend_outside(ax_loss, x=1.15 if em.any() else 1.02, handles=handles)
        ax_lr.plot(step, table[:, 2])
        ax_lr.set_title("learning rate")
        colors = [f"C{i % 10}" for i in range(len(layers))]
        for i, layer in enumerate(layers):
            g = table[:, 5 + i]
            u = table[:, 5 + len(layers) + i]
            ok_g, ok_u = np.isfinite(g) & (g > 0), np.isfinite(u) & (u > 0)
            ax_g.plot(step[ok_g], g[ok_g], lw=1, color=colors[i], label=layer)
            ax_u.plot(step[ok_u], u[ok_u], lw=1, color=colors[i], label=layer)
        ax_g.set_title("gradient norm per layer (before clipping)")
        ax_u.axhline(1e-3, color="k", ls="--", lw=0.8, label="1e-3 (rule of thumb)")
        ax_u.set_title("update:data ratio per layer  ||lr·update|| / ||param||")
        for ax in (ax_g, ax_u):
            if layers:
                ax.set_yscale("log")
        if layers:
            _legend_outside(ax_u, fontsize=7, ncol=1 + len(layers) // 12)
        else:
            ax_g.text(0.5, 0.5, "no health rows (--health_interval 0?)", ha="center",
                      transform=ax_g.transAxes)
        for ax in (ax_loss, ax_lr, ax_g, ax_u):
            ax.set_xlabel("step")
        written.append(save_figure(fig, os.path.join(out_dir, name + ".png")))
    return written


def training_curves(path, out_dir="pictures", name="training_curves", lang="en"):
    """Loss (train and validation), learning rate and validation exact match against the step,
    from a run's metrics.jsonl. Returns {column: array (rows,)} (see read_metrics)."""
    m, tr = read_metrics(path), words(ZH, lang)
    out_dir = ensure_dir(out_dir)
    with open(os.path.join(out_dir, name + ".csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(TRAINING_COLUMNS)
        for i in range(len(m["step"])):
            w.writerow([int(m["step"][i])] + ["" if math.isnan(m[c][i]) else f"{m[c][i]:.6g}"
                                               for c in TRAINING_COLUMNS[1:]])
    Figure = figure_class()
    if Figure is not None:
        has_em = bool(np.isfinite(m["val_exact_match"]).any())
        fig = Figure(figsize=(11 if has_em else 8, 3.5))
        axes = fig.subplots(1, 3 if has_em else 2)
        ev = np.isfinite(m["val_loss"])
        axes[0].plot(m["step"], m["loss"], lw=0.8, label=tr("train loss"))
        axes[0].plot(m["step"][ev], m["val_loss"][ev], "o-", label=tr("val loss"))
        axes[0].set_yscale("log")
        axes[0].legend()
        axes[1].plot(m["step"], m["lr"])
        axes[1].set_ylabel(tr("learning rate"))
        for ax in axes:
            ax.set_xlabel(tr("step"))
        if has_em:
            em = np.isfinite(m["val_exact_match"])
            axes[2].plot(m["step"][em], 100 * m["val_exact_match"][em], "o-")
            axes[2].set_ylabel(tr("val exact match (%)"))
            axes[2].set_ylim(0, 100)
        save_figure(fig, os.path.join(out_dir, name + ".png"), lang)
    return m
