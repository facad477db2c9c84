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


def array_of(t):
    """The array behind a parameter or gradient, shared (not copied), for reading only:
    `numpy(force=True)` is `detach().numpy()` without making the detached Tensor (these
    checks run on every step)."""
    return t.numpy(force=True)


def grad_sq_per_layer(named):
    """{layer: squared gradient norm} of the (name, Parameter) pairs that have a gradient."""
    return per_layer([(n, array_of(p.grad)) for n, p in named if p.grad is not None], sq_norm)


def layer_health(named, before, grad_sq):
    """{layer: {"grad_norm", "update_ratio"}} after an optimizer step.

    `named` are the (name, Parameter) pairs, `before` their data before the step, `grad_sq`
    what grad_sq_per_layer gave before the step. The update:data ratio ||lr * update|| /
    ||param|| of each layer comes from the change the optimizer actually made (clipping,
    momentum and weight decay included).
    """
    deltas = [(n, array_of(p) - b0) for (n, p), b0 in zip(named, before, strict=True)]
    upd_sq = per_layer(deltas, sq_norm)
    par_sq = per_layer([(n, b0) for (n, _), b0 in zip(named, before, strict=True)], sq_norm)
    return {layer: {"grad_norm": math.sqrt(grad_sq.get(layer, 0.0)),
                    "update_ratio": math.sqrt(upd_sq[layer]) / max(math.sqrt(
                        par_sq[layer]), 1e-12)}
            for layer in par_sq}


# ------------------------------------------------------------------------------------------
# non-finite losses, gradients and weights: training stops, nothing non-finite is saved
# ------------------------------------------------------------------------------------------

class NonFiniteError(FloatingPointError):
    """A loss, gradient or weight turned NaN or inf: training stops (the command exits 3) and
    no checkpoint is written from it; the message names the step, the loss and the largest
    gradient."""


def _worst(named, arrays):
    """(name, value) of the entry of largest magnitude over (name, array) pairs, NaN counting
    as the largest and inf next; None when there is no entry."""
    best, best_key = None, None
    for name, a in arrays(named):
        if a.size == 0:
            continue
        if np.isnan(a).any():
            value, key = float("nan"), (2, 0.0)
        else:
            value = float(np.abs(a).max())
            key = (1, 0.0) if math.isinf(value) else (0, value)
        if best_key is None or key > best_key:
            best, best_key = (name, value), key
    return best


def largest_gradient(named):
    """(parameter name, largest |gradient| entry) of (name, Parameter) pairs (NaN first)."""
    return _worst(named, lambda ps: ((n, array_of(p.grad)) for n, p in ps if p.grad is not None))


def grads_finite(named):
    """Whether every gradient entry is finite (one float64 dot per parameter)."""
    return all(math.isfinite(sq_norm(array_of(p.grad))) for _, p in named if p.grad is not None)


def check_step_finite(step, loss, named, kept):
    """Raise NonFiniteError before the update of `step` when its loss or a gradient is NaN or
    inf. `kept` says which checkpoint stays (one line; it goes into the message)."""
    if math.isfinite(loss) and grads_finite(named):
        return
    worst = largest_gradient(named)
    grad = "no gradient" if worst is None else f"largest gradient {worst[1]:.4g} in {worst[0]}"
    what = "loss" if not math.isfinite(loss) else "gradient"
    raise NonFiniteError(f"step {step}: non-finite {what} (loss {loss:.4g}, {grad}); training "
                         f"stopped before this step's update; {kept}")


def check_weights_finite(step, val_loss, named, kept):
    """Raise NonFiniteError when the validation loss after `step` is NaN or inf: the update
    made the weights unusable (overflowing, if not yet inf), so nothing of it is saved."""
    if math.isfinite(val_loss):
        return
    worst = _worst(named, lambda ps: ((n, array_of(p)) for n, p in ps))
    weight = "" if worst is None else f", largest weight {worst[1]:.4g} in {worst[0]}"
    raise NonFiniteError(f"step {step}: non-finite validation loss (loss {val_loss:.4g}"
                         f"{weight}); training stopped before saving this step; {kept}")


def first_nonfinite(arrays):
    """(name, entries that are NaN or inf, size) of the first such array of a {name: array}
    dict, else None."""
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind == "f" and not math.isfinite(sq_norm(a)):
            return name, int((~np.isfinite(a)).sum()), a.size
    return None
