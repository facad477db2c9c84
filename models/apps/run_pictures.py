"""A run's pictures, read from its metrics.jsonl: the training curves (loss, validation loss
and exact match, learning rate) and `tinygradx plot RUN_DIR`'s health picture (per-layer
gradient norms and update:data ratios). CSV always, PNG with matplotlib. Re-exported by
pictures.py.

    from tinygradx.models.apps import pictures
    pictures.training_curves("runs/reverse/metrics.jsonl", "pics")
"""
from __future__ import annotations

import csv
import math
import os
import sys

import numpy as np

import tinygradx as tgx
from tinygradx.models.training import rundir

from .figures import ensure_dir, figure_class, save_figure, words

# the words of the training-curve and health pictures in Chinese (lang="zh")
ZH = {
    "step": "步数", "learning rate": "学习率", "train loss": "训练损失", "val loss": "验证损失",
    "val exact match (%)": "验证集完全匹配（%）", "exact match (%)": "完全匹配（%）",
    "loss": "损失", "loss and exact match": "损失与完全匹配",
    "gradient norm per layer (before clipping)": "每层的梯度范数（裁剪之前）",
    "update:data ratio per layer  ||lr·update|| / ||param||":
        "每层的更新量与参数之比  ||lr·update|| / ||param||",
    "1e-3 (rule of thumb)": "1e-3（经验值）", "no health rows (--health_interval 0?)":
        "没有健康度记录（--health_interval 为 0？）", "run": "运行", "task": "任务",
}


TRAINING_COLUMNS = ("step", "loss", "lr", "val_loss", "val_exact_match")


def read_metrics(path, log=None):
    """A run's metrics.jsonl (or its directory) -> {column: array}; rows without an
    evaluation have NaN in val_loss and val_exact_match."""
    if os.path.isdir(path):
        path = os.path.join(path, "metrics.jsonl")
    rows = _metric_rows(path, log)
    return {c: np.array([float(r.get(c, math.nan)) for r in rows]) for c in TRAINING_COLUMNS}


def _metric_rows(path, log=None):
    """The rows of a metrics.jsonl in step order, the last row of each step (a resumed run
    appends). A damaged line is an error naming the file and the line (rundir.read_metrics);
    a last row cut short by a kill is left out and said through `log` (default: stderr)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    notes = []
    rows = rundir.read_metrics(path, notes)
    for note in notes:
        (log or _stderr)(note)
    if not rows:
        raise ValueError(f"{path}: no metrics rows")
    by_step = {int(r["step"]): r for r in rows}
    return [by_step[s] for s in sorted(by_step)]


def _stderr(line):
    print(line, file=sys.stderr)


def run_title(run_dir, lang="en"):
    """"run copy_small, task copy": the run directory's name and, when its checkpoint can be
    read, the task it trained ("运行 copy_small，任务 copy" in zh)."""
    tr = words(ZH, lang)
    path = run_dir if os.path.isdir(run_dir) else os.path.dirname(os.path.abspath(run_dir))
    title = f"{tr('run')} {os.path.basename(os.path.abspath(path))}"
    try:
        _, meta = tgx.io.load_checkpoint(os.path.join(path, "checkpoint.npz"))
        sep = "，" if lang == "zh" else ", "
        return f"{title}{sep}{tr('task')} {meta['config']['task']}"
    except (OSError, ValueError, KeyError, TypeError):      # no checkpoint (yet), or damaged
        return title


def _legend_outside(ax, x=1.02, **kw):
    """The legend to the right of the panel (x in axes widths), so it never hides a line."""
    return ax.legend(loc="upper left", bbox_to_anchor=(x, 1.0), borderaxespad=0.0, **kw)


HEALTH_BASE = ("step", "loss", "lr", "grad_norm", "val_loss", "val_exact_match")


def health_table(path, log=None):
    """{column: array (rows,)} of a run's metrics.jsonl (or its directory), and the layers in
    model order: the base columns (HEALTH_BASE) and, per layer, "grad_norm/LAYER" and
    "update_ratio/LAYER" (NaN where a row has no health entry). Every column is read by its
    name, so a column added to the log moves nothing."""
    path = os.path.join(path, "metrics.jsonl") if os.path.isdir(path) else path
    rows = _metric_rows(path, log)
    layers = []
    for r in rows:
        for layer in r.get("layers") or {}:
            if layer not in layers:
                layers.append(layer)

    def value(r, col):
        if "/" in col:
            kind, layer = col.split("/", 1)
            v = ((r.get("layers") or {}).get(layer) or {}).get(kind)
        else:
            v = r.get(col)
        return math.nan if v is None else float(v)

    cols = list(HEALTH_BASE) + [f"{k}/{layer}" for k in ("grad_norm", "update_ratio")
                                for layer in layers]
    return {c: np.array([value(r, c) for r in rows]) for c in cols}, layers


def health_figure(table, layers, title, lang="en"):
    """The health picture of `health_table`'s columns: a matplotlib Figure (None without
    matplotlib) of four panels, each curve labelled with what it draws (the layer's name in
    the two per-layer panels), so a test can read every drawn number back; lang "zh" writes
    its words in Chinese (the layers keep their module paths)."""
    Figure = figure_class()
    if Figure is None:
        return None
    tr = words(ZH, lang)
    step = table["step"]
    fig = Figure(figsize=(14, 7.5))
    fig.suptitle(title)
    (ax_loss, ax_lr), (ax_g, ax_u) = fig.subplots(2, 2)
    handles = ax_loss.plot(step, table["loss"], lw=0.8, label=tr("train loss"))
    ev = np.isfinite(table["val_loss"])
    if ev.any():
        handles += ax_loss.plot(step[ev], table["val_loss"][ev], "o-", label=tr("val loss"))
    ax_loss.set_yscale("log")
    em = np.isfinite(table["val_exact_match"])
    if em.any():                   # translation and add: exact match on its own axis
        ax_em = ax_loss.twinx()
        handles += ax_em.plot(step[em], 100 * table["val_exact_match"][em], "s--",
                              color="C2", label=tr("val exact match (%)"))
        ax_em.set_ylim(0, 100)
        ax_em.set_ylabel(tr("exact match (%)"))
    ax_loss.set_title(tr("loss and exact match" if em.any() else "loss"))
    # past the exact-match axis's labels when there is one
    _legend_outside(ax_loss, x=1.15 if em.any() else 1.02, handles=handles)
    ax_lr.plot(step, table["lr"], label="lr")
    ax_lr.set_title(tr("learning rate"))
    for i, layer in enumerate(layers):
        color = f"C{i % 10}"
        for ax, kind in ((ax_g, "grad_norm"), (ax_u, "update_ratio")):
            y = table[f"{kind}/{layer}"]
            ok = np.isfinite(y) & (y > 0)          # log axes: no zeros, no rows without health
            ax.plot(step[ok], y[ok], lw=1, color=color, label=layer)
    ax_g.set_title(tr("gradient norm per layer (before clipping)"))
    ax_u.axhline(1e-3, color="k", ls="--", lw=0.8, label=tr("1e-3 (rule of thumb)"))
    ax_u.set_title(tr("update:data ratio per layer  ||lr·update|| / ||param||"))
    for ax in (ax_g, ax_u):
        if layers:
            ax.set_yscale("log")
    if layers:
        _legend_outside(ax_u, fontsize=7, ncol=1 + len(layers) // 12)
    else:
        ax_g.text(0.5, 0.5, tr("no health rows (--health_interval 0?)"), ha="center",
                  transform=ax_g.transAxes)
    for ax in (ax_loss, ax_lr, ax_g, ax_u):
        ax.set_xlabel(tr("step"))
    return fig


def training_health(run_dir, out_dir=None, name="health", log=None, lang="en"):
    """`tinygradx plot RUN_DIR`: loss and validation exact match (where the task has it),
    learning rate, and per layer the gradient norm and the update:data ratio
    ||lr * update|| / ||param|| (rows logged every --health_interval steps).

    Writes NAME.csv always (one row a step; the columns of `health_table`, empty between
    health rows) and NAME.png with matplotlib (`health_figure`, its words in `lang`), titled with
    the run and its task, legends outside the panels. Returns the paths written.
    """
    path = os.path.join(run_dir, "metrics.jsonl") if os.path.isdir(run_dir) else run_dir
    table, layers = health_table(path, log)
    out_dir = ensure_dir(out_dir or os.path.dirname(path))
    csv_path = os.path.join(out_dir, name + ".csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(table))
        for i in range(len(table["step"])):
            w.writerow([int(table["step"][i])] + ["" if math.isnan(v[i]) else f"{v[i]:.6g}"
                                                  for c, v in table.items() if c != "step"])
    written = [csv_path]
    title = run_title(os.path.dirname(os.path.abspath(path)), lang)
    fig = health_figure(table, layers, title, lang)
    if fig is not None:
        written.append(save_figure(fig, os.path.join(out_dir, name + ".png"), lang))
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
