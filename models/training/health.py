"""Training health: per-layer gradient norms and update:data ratios of one optimizer step.

Trainer.train_step measures them every health_interval steps (metrics.jsonl rows get a
"layers" entry); the numbers are summed per layer (`layer_of`) in float64.
"""
from __future__ import annotations

import math

import numpy as np


def layer_of(name):
    """The layer a parameter belongs to: 'encoder.layers.0.ff.w_1.weight' -> 'encoder.layers.0',
    'transformer.h.3.attn.c_attn.weight' -> 'transformer.h.3', 'generator.weight' ->
    'generator'."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i + 1])
    return ".".join(parts[:-1]) or name


def per_layer(named, value):
    """Sum value(array) over the (name, array) pairs of each layer, in model order."""
    out = {}
    for name, arr in named:
        layer = layer_of(name)
        out[layer] = out.get(layer, 0.0) + value(arr)
    return out


def sq_norm(a):
    """Squared L2 norm, summed in float64."""
    a = np.asarray(a).ravel()
    return float(np.dot(a.astype(np.float64, copy=False), a.astype(np.float64, copy=False)))


def grad_sq_per_layer(named):
    """{layer: squared gradient norm} of the (name, Parameter) pairs that have a gradient."""
    return per_layer([(n, p.grad._data) for n, p in named if p.grad is not None], sq_norm)


def layer_health(named, before, grad_sq):
    """{layer: {"grad_norm", "update_ratio"}} after an optimizer step.

    `named` are the (name, Parameter) pairs, `before` their data before the step, `grad_sq`
    what grad_sq_per_layer gave before the step. The update:data ratio ||lr * update|| /
    ||param|| of each layer comes from the change the optimizer actually made (clipping,
    momentum and weight decay included).
    """
    deltas = [(n, p._data - b0) for (n, p), b0 in zip(named, before, strict=True)]
    upd_sq = per_layer(deltas, sq_norm)
    par_sq = per_layer([(n, b0) for (n, _), b0 in zip(named, before, strict=True)], sq_norm)
    return {layer: {"grad_norm": math.sqrt(grad_sq.get(layer, 0.0)),
                    "update_ratio": math.sqrt(upd_sq[layer]) / max(math.sqrt(
                        par_sq[layer]), 1e-12)}
            for layer in par_sq}
