"""Pictures of two pieces the formulas add around attention and the loss: the attention masks
(causal and key padding, and both at once) and label smoothing (the smoothed target and the
loss against the model's confidence). Each returns its numbers as arrays, writes CSV always and
a PNG when matplotlib can be imported (as pictures.py does).

    from tinygradx.models.apps import formula_pictures
    m = formula_pictures.masks((8, 6, 3), "pics")        # m["decoder"]: (3, 8, 8) bool
    s = formula_pictures.label_smoothing(5, 2, (0.0, 0.1), "pics")
"""
from __future__ import annotations

import os

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.models.nets.layers import pad_mask

from .pictures import ensure_dir, figure_class, save_figure, write_matrix_csv


def masks(lengths=(8, 6, 3), out_dir="pictures"):
    """What attention may read, as the models build it: the decoder's causal mask (T, T) and
    the key padding of sentences of `lengths` padded to T = max(lengths), (B, T). Returns
    {"causal": (T, T), "padding": (B, T), "decoder": (B, T, T)}, each bool with True where a
    query may read a key; "decoder" is both at once (causal and not padding), per sentence.
    The causal mask comes from F.causal_mask (0 allowed, -inf blocked), the padding from
    layers.pad_mask (True at padding), so the picture is what training uses."""
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
        panels = [(causal, "causal: query i reads keys j <= i"),
                  (padding, "key padding: real keys per sentence")]
        panels += [(decoder[b], f"decoder, length {n}") for b, n in enumerate(lengths)]
        for ax, (m, title) in zip(axes, panels, strict=True):
            ax.imshow(m, cmap="Greys", vmin=0, vmax=1)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("key")
            ax.set_ylabel("sentence" if m is padding else "query")
        fig.suptitle("attention masks (dark: may attend)")
        save_figure(fig, os.path.join(out_dir, "masks.png"))
    return {"causal": causal, "padding": padding, "decoder": decoder}


def label_smoothing(n_classes=5, target=2, eps=(0.0, 0.1, 0.3), out_dir="pictures"):
    """What F.cross_entropy(label_smoothing=e) trains towards, read off the function itself.

    The gradient of the loss with respect to the logits is p - q (p = softmax of the logits,
    q = the target distribution), so q = p - grad. For each e this gives q (C,): (1 - e) on
    the target plus e / C everywhere, and the loss as a function of the probability c the
    model gives the target (the rest spread evenly): without smoothing it falls all the way
    to c = 1 (logits pushed without bound), with it the minimum sits at c = 1 - e + e / C.
    Returns {"targets": (len(eps), C), "confidence": (K,), "loss": (len(eps), K)}."""
    C = n_classes
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
        ax1.set_xlabel("class (target: %d)" % target)
        ax1.set_ylabel("target probability q")
        ax1.set_title("the smoothed target")
        ax2.set_xlabel("probability the model gives the target")
        ax2.set_ylabel("cross-entropy")
        ax2.set_title("loss against confidence")
        ax2.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        save_figure(fig, os.path.join(out_dir, "label_smoothing.png"))
    return {"targets": np.asarray(targets), "confidence": conf, "loss": loss}
