"""The ops' forward code on plain numpy arrays, for a model's no-grad fast path.

A generated token is small work: one row through ~45 ops and ~50 module calls. At that size
what a call costs the engine (the graph node, the Tensor around each result, the module frame,
~2-3 us together) outweighs the arithmetic, and a model that spends it on every op runs at half
the speed of the same loop written in numpy. Under no_grad a model may instead run its layers
on the parameters' arrays with the functions below (GPT.generate and the encoder-decoder's
decoding do). Each one IS the forward of the op it names -- the ops call the same function --
so the numbers are bit for bit those of the op path; tests/fast/test_inference.py holds them equal.

    if inference.fast_path():          # no gradient wanted and no one watching the ops
        h = inference.layer_norm(x, ln.weight._data, ln.bias._data, ln.eps)

`fast_path()` is False while gradients are recorded and while a trace, a profile or anomaly
detection watches every op (a fused path would hide the ops they report): the model then
takes its ordinary path.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.node import STATE, OpError
from .attention import attention_output, attention_weights
from ..core.rows import layer_norm_rows
from .fused import gelu_forward
from ..core.linalg import linear_forward


def fast_path():
    """True when a model may run array code instead of ops: gradients are off and no trace,
    profile or anomaly detection is observing the ops."""
    return not STATE.grad_enabled and not STATE.instrumented


def linear(x, weight, bias=None):
    """x W^T + b for x (..., in), W (out, in), b (out,) or None: Linear's forward."""
    if x.shape[-1:] != weight.shape[-1:]:
        raise OpError(f"inference.linear: input {x.shape} has {x.shape[-1:]} features, the "
                      f"weight {weight.shape} expects {weight.shape[-1]} (weight is [out, in])")
    return linear_forward(x, weight, bias)


def layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm over the last axis of x (..., n); weight, bias (n,) or None: F.layer_norm's
    forward."""
    n = x.shape[-1] if x.ndim else 0
    if weight is not None and weight.shape != (n,):
        _wrong_affine("weight", weight, n, x)
    if bias is not None and bias.shape != (n,):
        _wrong_affine("bias", bias, n, x)
    rows2 = x.reshape(math.prod(x.shape[:-1]), n)
    return layer_norm_rows(rows2, weight, bias, eps).reshape(x.shape)


def _wrong_affine(name, p, n, x):
    raise OpError(f"inference.layer_norm: {name} has shape {p.shape}, expected ({n},) for an "
                  f"input of shape {x.shape}")


def gelu(x, approximate="none"):
    """GELU(x), exact (erf) or approximate='tanh': F.gelu's forward."""
    if approximate not in ("none", "tanh"):
        raise OpError(f"inference.gelu: approximate must be 'none' or 'tanh', got "
                      f"{approximate!r}")
    return gelu_forward(x, approximate)[0]


def relu(x, inplace=False):
    """max(x, 0) of a float array, into x itself with inplace=True: F.relu's forward."""
    if x.dtype.kind != "f":
        raise OpError(f"inference.relu: expected a float array, got dtype {x.dtype}")
    return np.maximum(x, 0, out=x if inplace else None)


def attention(q, k, v, mask=None, scale=None):
    """softmax(Q K^T scale + M) V for q (..., n, d), k (..., m, d), v (..., m, d_v) and a mask
    broadcasting to (..., n, m): additive (0 keeps, -inf blocks) or bool (True takes part, as
    F.attention's); scale defaults to 1/sqrt(d): F.attention's forward without dropout."""
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise OpError(f"inference.attention: query {q.shape}, key {k.shape} and value "
                      f"{v.shape}: query and key must share d, key and value the positions m")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if mask is not None:                      # as F.attention: a bool mask keeps where True
        mask = np.asarray(mask)
        if mask.dtype == np.bool_:
            mask = np.where(mask, 0.0, -np.inf)
        mask = mask.astype(q.dtype, copy=False)
    out = attention_output(q, k, v, mask)
    attention_weights(q, k, mask, scale, v, out)
    return out
