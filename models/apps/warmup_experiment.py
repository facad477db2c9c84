"""The warmup experiment of Xiong et al. 2020 (`tinygradx experiment warmup`), the
consequence of the ln-grad one: at a large learning rate, Post-LN without warm-up trains badly
(or not at all), with warm-up it trains; Pre-LN trains without warm-up. `warmup_curves` returns
the loss curves, `write_warmup` the CSV and the plot; experiments.py runs it from the command
line.
"""
from __future__ import annotations

import csv
import math
import os
import time

import numpy as np

from .figures import figure_class, save_figure, words
from .ln_grad_experiment import LABEL, PLACEMENTS, placement

# the picture's words in Chinese (lang="zh"); formulas and names stay as written
ZH = {
    "step": "步数", "training loss (moving mean)": "训练损失（滑动平均）",
    "Adam at lr={lr:g}: Post-LN needs warm-up": "Adam，lr={lr:g}：Post-LN 需要 warm-up",
    "warm-up {wu} steps": "warm-up {wu} 步", "no warm-up": "无 warm-up",
}


# ------------------------------------------------------------------------------------------
# warmup: training with and without learning-rate warm-up at a large learning rate
# ------------------------------------------------------------------------------------------

def warmup_config(norm, warmup, steps=200, lr=1e-2, d_model=64, n_layer=2, batch_size=32,
                  seed=0, task="reverse", n_train=2000):
    """The TrainConfig of one warmup run: a tiny encoder-decoder on a toy translation task,
    Adam (beta2 0.98, as Vaswani et al.) at a constant rate `lr` after `warmup` linear steps.

    No gradient clipping and no dropout or weight decay: clipping caps the first updates the
    same way warm-up does and would hide the effect we want to see.
    """
    from tinygradx.models.training.trainer import TrainConfig
    return TrainConfig(task=task, seed=seed, n_train=n_train, n_layer=n_layer, d_model=d_model,
                       n_head=4, dropout=0.0, norm_first=placement(norm), optimizer="adam",
                       lr=lr, min_lr=lr, schedule="cosine", warmup=warmup, weight_decay=0.0,
                       beta2=0.98, grad_clip=0.0, batch_size=batch_size, max_steps=steps,
                       progress=False)


def warmup_curves(steps=200, warmup=50, lr=1e-2, d_model=64, n_layer=2, batch_size=32, seed=0,
                  task="reverse", placements=PLACEMENTS, log=None):
    """Train Post-LN and Pre-LN models with warm-up 0 and `warmup` steps.

    Returns {(norm, warmup_steps): training loss per step, array (steps,)} (NaN after a
    non-finite loss). With warm-up the rate rises linearly over `warmup` steps, then stays at
    lr (warmup_cosine with min_lr = lr), so the only difference is the first steps.
    """
    from tinygradx.models.training.trainer import Trainer
    curves = {}
    for norm in placements:
        for w in (0, warmup):
            t0 = time.perf_counter()
            trainer = Trainer(warmup_config(norm, w, steps, lr, d_model, n_layer, batch_size,
                                            seed, task), log=lambda *a: None)
            losses = np.full(steps, np.nan)
            for i in range(steps):
                loss = trainer.train_step()[0]
                if not math.isfinite(loss):
                    break
                losses[i] = loss
            curves[norm, w] = losses
            if log:
                log(f"  {LABEL[norm]:<8} warm-up {w:>4}: final loss "
                    f"{final_loss(losses):.3f}  ({time.perf_counter() - t0:.0f} s)")
    return curves


def final_loss(losses, frac=0.1):
    """Mean training loss over the last `frac` of the steps (inf if the run diverged)."""
    n = max(1, int(len(losses) * frac))
    tail = losses[-n:]
    return float(np.mean(tail)) if np.all(np.isfinite(tail)) else math.inf


def write_warmup(curves, out_dir, lr, lang="en"):
    """warmup.csv (the loss of every run at every step) and warmup.png with matplotlib (labels
    in `lang`). Returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    keys = list(curves)
    paths = [os.path.join(out_dir, "warmup.csv")]
    with open(paths[0], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["step"] + [f"{n}_warmup{wu}" for n, wu in keys])
        steps = len(next(iter(curves.values())))
        for i in range(steps):
            w.writerow([i + 1] + ["" if not np.isfinite(curves[k][i]) else f"{curves[k][i]:.5g}"
                                  for k in keys])
    tr = words(ZH, lang)
    Figure = figure_class()
    if Figure is not None:
        fig = Figure(figsize=(7.5, 4.5))
        ax = fig.subplots()
        styles = {"post": "tab:red", "pre": "tab:blue"}
        for (n, wu), v in curves.items():
            k = max(1, len(v) // 40)                      # light smoothing: a moving mean
            sm = np.convolve(v, np.ones(k) / k, mode="valid")
            ax.plot(np.arange(len(sm)) + k, sm, color=styles[n], ls="-" if wu else "--",
                    label=f"{LABEL[n]}, " + (tr("warm-up {wu} steps").format(wu=wu) if wu
                                              else tr("no warm-up")))
        ax.set_xlabel(tr("step"))
        ax.set_ylabel(tr("training loss (moving mean)"))
        ax.set_title(tr("Adam at lr={lr:g}: Post-LN needs warm-up").format(lr=lr))
        ax.legend()
        paths.append(save_figure(fig, os.path.join(out_dir, "warmup.png"), lang))
    return paths


def format_warmup(curves):
    out = ["final training loss (mean of the last 10% of steps):"]
    for (n, wu), v in curves.items():
        out.append(f"  {LABEL[n]:<8} " + (f"warm-up {wu:<4}" if wu else "no warm-up  ")
                   + f"  {final_loss(v):.3f}")
    return "\n".join(out)


def warmup_checks(curves):
    """Post-LN without warm-up ends worse than Post-LN with it, and worse than Pre-LN without."""
    (wu,) = {w for (_, w) in curves if w}
    post0, post1 = final_loss(curves["post", 0]), final_loss(curves["post", wu])
    pre0 = final_loss(curves["pre", 0])
    return {"post_needs_warmup": post0 > post1, "pre_trains_without_warmup": post0 > pre0}
