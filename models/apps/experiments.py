"""The LN-placement experiments of Xiong et al. 2020, "On Layer Normalization in the Transformer
Architecture", on tinygradx models (`tinygradx experiment ln-grad|warmup`).

ln-grad: at initialisation, Post-LN's gradients are large near the output and the last layer's
    gradient does not shrink with depth; Pre-LN's are of one size across layers and shrink as
    the model gets deeper (their Theorem 1 and Figure 3). We build Post-LN and Pre-LN
    encoder-decoders (make_model, its own Xavier init), run one forward/backward on a fixed
    random batch and record ||dL/dW||_F of W^Q, W^K, W^V, W^O (self-attention), W_1, W_2 in
    every decoder layer, averaged over a few seeds. The encoder alone and a GPT are options.
warmup: the consequence. At a large learning rate, Post-LN without warm-up trains badly (or not
    at all), with warm-up it trains; Pre-LN trains without warm-up.
score-scale (functions only, for docs/walkthrough.md section 4): the gradient reaching the
    queries with and without the 1/sqrt(d_k) of attention's scores (`score_scale_grads`,
    `score_scale_summary`, `plot_score_scale_grads`, which drew docs/img/score_scale_grad.png).

Both are functions returning numbers (`ln_grad_norms`, `ln_grad_experiment`, `warmup_curves`)
so tests can call them on small sizes; `main` writes the CSV files, the plots (with matplotlib)
and prints the summary. Set OPENBLAS_NUM_THREADS=1 on a busy machine: numpy's threaded BLAS is
several times slower than one thread on these small matrices when the cores are shared.

One module per experiment, all re-exported here: ln_grad_experiment.py, warmup_experiment.py and
score_scale_experiment.py; this one is the command (`main`).
"""
from __future__ import annotations

from .ln_grad_experiment import (LABEL, MATRICES, PLACEMENTS, format_ln_grad, ln_grad_experiment,
                                 ln_grad_norms, ln_grad_summary, placement, plot_ln_grad,
                                 write_ln_grad)
from .score_scale_experiment import (plot_score_scale_grads, score_scale_grads,
                                     score_scale_summary)
from .warmup_experiment import (final_loss, format_warmup, warmup_checks, warmup_config,
                                warmup_curves, write_warmup)

__all__ = ["main", "MATRICES", "PLACEMENTS", "LABEL", "placement", "ln_grad_norms",
           "ln_grad_experiment", "ln_grad_summary", "format_ln_grad", "write_ln_grad",
           "plot_ln_grad", "score_scale_grads", "score_scale_summary", "plot_score_scale_grads",
           "warmup_config", "warmup_curves", "final_loss", "write_warmup", "format_warmup",
           "warmup_checks"]


# ------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------

def _parse_layers(layers):
    if isinstance(layers, str):
        try:
            layers = [int(x) for x in layers.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--layers: expected comma-separated integers like 2,6,12, got "
                             f"{layers!r}") from None
    layers = tuple(sorted(set(int(x) for x in layers)))
    if len(layers) < 2 or layers[0] < 1:
        raise ValueError(f"--layers: give at least two depths >= 1, got {layers}")
    return layers


# the depths each experiment runs when --layers is not given: ln-grad compares several depths,
# warmup trains one (each of its four runs a model of that depth)
DEFAULT_LAYERS = {"ln-grad": "2,6,12", "warmup": "2"}


def _one_depth(layers):
    """warmup's --layers: one depth >= 1."""
    text = ",".join(str(x) for x in layers) if isinstance(layers, (list, tuple)) else \
        str(layers)
    try:
        depths = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ValueError(f"--layers: expected a depth like 6, got {text!r}") from None
    if len(depths) != 1 or depths[0] < 1:
        raise ValueError(f"--layers: the warmup experiment trains one depth (the layers of "
                         f"each stack, e.g. --layers 6), got {text!r}")
    return depths[0]


def main(name, out_dir, layers=None, steps=None, lang="en", **kw):
    """`tinygradx experiment ln-grad|warmup --out DIR [--layers 2,6,12] [--steps N] [--lang]`.

    Prints the summary, writes CSV (and PNG with matplotlib, labelled in `lang`) into out_dir
    and returns 0 when the paper's qualitative claims hold, 1 when they do not. `layers`: the
    depths (None: DEFAULT_LAYERS); warmup takes one, the layers of each stack of its
    encoder-decoders. Extra keyword arguments go to ln_grad_experiment or warmup_curves
    (e.g. d_model=32, seeds=(0, 1)).
    """
    layers = DEFAULT_LAYERS.get(name) if layers is None else layers
    if name == "ln-grad":
        result = ln_grad_experiment(_parse_layers(layers), **kw)
        print(format_ln_grad(result))
        for p in write_ln_grad(result, out_dir, lang):
            print(f"wrote {p}")
        return 0 if all(result["summary"]["checks"].values()) else 1
    if name == "warmup":
        steps = 200 if steps is None else int(steps)
        if steps < 10:
            raise ValueError(f"--steps: the warmup experiment needs at least 10 steps, got {steps}")
        kw.setdefault("warmup", max(1, steps // 4))
        kw["n_layer"] = _one_depth(layers)
        lr = kw.get("lr", 1e-2)
        print(f"warmup experiment: {kw.get('task', 'reverse')} task, "
              f"{kw['n_layer']}+{kw['n_layer']} layers, d_model "
              f"{kw.get('d_model', 64)}, Adam at lr {lr:g}, {steps} steps, warm-up 0 or "
              f"{kw['warmup']} steps, no clipping")
        curves = warmup_curves(steps=steps, log=print, **kw)
        print(format_warmup(curves))
        checks = warmup_checks(curves)
        print("checks:")
        print(f"  [{'ok' if checks['post_needs_warmup'] else 'FAILED'}] Post-LN without "
              f"warm-up ends worse than with it")
        print(f"  [{'ok' if checks['pre_trains_without_warmup'] else 'FAILED'}] Post-LN "
              f"without warm-up ends worse than Pre-LN without it")
        for p in write_warmup(curves, out_dir, lr, lang):
            print(f"wrote {p}")
        return 0 if all(checks.values()) else 1
    raise ValueError(f"unknown experiment {name!r}; known: ln-grad, warmup")
