"""Pictures of the pieces the formulas add around attention and training: the sinusoidal
positional encoding PE, the learning-rate schedule, the attention masks (causal and key padding,
and both at once) and label smoothing (the smoothed target and the loss against the model's
confidence). Each returns its numbers as arrays, writes CSV always and a PNG when matplotlib can
be imported (figures.py). PE and the schedule are re-exported by pictures.py.

    from tinygradx.models.apps import formula_pictures
    pe = formula_pictures.positional_encoding(50, 64, "pics")    # (50, 64)
    m = formula_pictures.masks((8, 6, 3), "pics")        # m["decoder"]: (3, 8, 8) bool
    s = formula_pictures.label_smoothing(5, 2, (0.0, 0.1), "pics")

lang="zh" writes the titles and axis labels in Chinese (PE_ZH, ZH), with a CJK font
(figures.cjk_text).
"""
from __future__ import annotations

import csv
import os

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.models.nets.layers import pad_mask

from .figures import ensure_dir, figure_class, save_figure, words, write_matrix_csv

# the pictures' words in Chinese (lang="zh"); a text missing here stays English
ZH = {
    "causal: query i reads keys j <= i": "因果掩码：查询 i 读键 j <= i",
    "key padding: real keys per sentence": "键填充：每句话的真实键",
    "decoder, length {n}": "解码器，长度 {n}",
    "key": "键", "query": "查询", "sentence": "句子",
    "attention masks (dark: may attend)": "注意力掩码（深色：可以关注）",
    "class (target: {target})": "类别（目标：{target}）",
    "target probability q": "目标概率 q",
    "the smoothed target": "平滑后的目标分布",
    "probability the model gives the target": "模型给目标的概率",
    "cross-entropy": "交叉熵",
    "loss against confidence": "损失与置信度",
}


def masks(lengths=(8, 6, 3), out_dir="pictures", lang="en"):
    """What attention may read, as the models build it: the decoder's causal mask (T, T) and
    the key padding of sentences of `lengths` padded to T = max(lengths), (B, T). Returns
    {"causal": (T, T), "padding": (B, T), "decoder": (B, T, T)}, each bool with True where a
    query may read a key; "decoder" is both at once (causal and not padding), per sentence.
    The causal mask comes from F.causal_mask (0 allowed, -inf blocked), the padding from
    layers.pad_mask (True at padding), so the picture is what training uses."""
    tr = words(ZH, lang)
    lengths = np.asarray(lengths, dtype=np.int64)                # (B,)
    T = int(lengths.max())
    ids = np.where(np.arange(T) < lengths[:, None], 1, 0)       # (B, T), pad id 0
    causal = F.causal_mask(T, T, np.float64) == 0                # (T, T): key j <= query i
    padding = ~pad_mask(ids, 0)                                  # (B, T): real keys
    decoder = causal[None] & padding[:, None, :]                 # (B, T, T)
    out_dir = ensure_dir(out_dir)
    cols = [f"key{j}" for j in range(T)]
    write_matrix_csv(causal.astype(int), cols, os.path.join(out_dir, "mask_causal.csv"),
                      "query")
    write_matrix_csv(padding.astype(int), cols, os.path.join(out_dir, "mask_padding.csv"),
                      "sentence")
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(3.2 * (2 + len(lengths)), 3.4))
        axes = fig.subplots(1, 2 + len(lengths))
        panels = [(causal, tr("causal: query i reads keys j <= i")),
                  (padding, tr("key padding: real keys per sentence"))]
        panels += [(decoder[b], tr("decoder, length {n}").format(n=n))
                   for b, n in enumerate(lengths)]
        for ax, (m, title) in zip(axes, panels, strict=True):
            ax.imshow(m, cmap="Greys", vmin=0, vmax=1)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(tr("key"))
            ax.set_ylabel(tr("sentence") if m is padding else tr("query"))
        fig.suptitle(tr("attention masks (dark: may attend)"))
        save_figure(fig, os.path.join(out_dir, "masks.png"), lang)
    return {"causal": causal, "padding": padding, "decoder": decoder}


def label_smoothing(n_classes=5, target=2, eps=(0.0, 0.1, 0.3), out_dir="pictures",
                    lang="en"):
    """What F.cross_entropy(label_smoothing=e) trains towards, read off the function itself.

    The gradient of the loss with respect to the logits is p - q (p = softmax of the logits,
    q = the target distribution), so q = p - grad. For each e this gives q (C,): (1 - e) on
    the target plus e / C everywhere, and the loss as a function of the probability c the
    model gives the target (the rest spread evenly): without smoothing it falls all the way
    to c = 1 (logits pushed without bound), with it the minimum sits at c = 1 - e + e / C.
    Returns {"targets": (len(eps), C), "confidence": (K,), "loss": (len(eps), K)}."""
    C, tr = n_classes, words(ZH, lang)
    targets = []
    for e in eps:
        z = tgx.tensor(np.zeros((1, C)), requires_grad=True)    # any logits give the same q
        F.cross_entropy(z, np.array([target]), label_smoothing=e).backward()
        targets.append(1.0 / C - z.grad.numpy()[0])             # q = p - dL/dz: (C,)
    conf = np.linspace(0.05, 0.999, 200)                        # (K,)
    probs = np.repeat(((1 - conf) / (C - 1))[:, None], C, axis=1)  # (K, C)
    probs[:, target] = conf
    logits = tgx.tensor(np.log(probs))                          # softmax(log p) = p
    tgt = np.full(len(conf), target)
    with tgx.no_grad():
        loss = np.stack([F.cross_entropy(logits, tgt, reduction="none",
                                         label_smoothing=e).numpy() for e in eps])  # (E, K)
    out_dir = ensure_dir(out_dir)
    write_matrix_csv(np.asarray(targets), [f"class{j}" for j in range(C)],
                      os.path.join(out_dir, "label_smoothing_targets.csv"), "eps_index")
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(10, 3.6))
        ax1, ax2 = fig.subplots(1, 2)
        width = 0.8 / len(eps)
        for i, (e, q) in enumerate(zip(eps, targets, strict=True)):
            ax1.bar(np.arange(C) + i * width, q, width, label=f"e = {e:g}")
            ax2.plot(conf, loss[i], label=f"e = {e:g}")
        ax1.set_xlabel(tr("class (target: {target})").format(target=target))
        ax1.set_ylabel(tr("target probability q"))
        ax1.set_title(tr("the smoothed target"))
        ax2.set_xlabel(tr("probability the model gives the target"))
        ax2.set_ylabel(tr("cross-entropy"))
        ax2.set_title(tr("loss against confidence"))
        ax2.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        save_figure(fig, os.path.join(out_dir, "label_smoothing.png"), lang)
    return {"targets": np.asarray(targets), "confidence": conf, "loss": loss}


# ------------------------------------------------------------------------------------------
# the positional encoding and the learning-rate schedule
# ------------------------------------------------------------------------------------------

# the words of the PE and schedule pictures in Chinese (lang="zh")
PE_ZH = {
    "dimension (even: sin, odd: cos; the wavelength grows with the index)":
        "维度（偶数列 sin，奇数列 cos；波长随序号增长）",
    "position": "位置", "sinusoidal PE, max_len={max_len}, d_model={d_model}":
        "正弦位置编码 PE，max_len={max_len}，d_model={d_model}",
    "step": "步数", "learning rate": "学习率", "learning-rate schedule": "学习率调度",
}


def positional_encoding(max_len=50, d_model=64, out_dir="pictures", lang="en"):
    """The sinusoidal table PE (max_len, d_model) of the encoder-decoder, as a heatmap
    (positions down, dimensions across) and a CSV matrix (one row per position); lang="zh"
    labels the picture in Chinese."""
    from tinygradx.models.nets.transformer import sinusoidal_table
    tr = words(PE_ZH, lang)
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
    tr = words(PE_ZH, lang)
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

