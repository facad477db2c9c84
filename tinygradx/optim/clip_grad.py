"""Gradient clipping, as torch.nn.utils' (re-exported by tinygradx.optim)::

    clip_grad_norm_:  total = ||(||g_1||_q, ..., ||g_n||_q)||_q     (q = norm_type; inf = max |g|)
                      g_i <- g_i * max_norm / (total + 1e-6)        only if that factor is < 1
                      returns total as a 0-d Tensor (the gradients' dtype), as PyTorch
    clip_grad_value_: g_i <- clamp(g_i, -clip_value, clip_value)    returns None

Both work on the arrays behind `p.grad` in place (no graph) and skip parameters whose grad
is None; `parameters` may be one Tensor or any iterable (a generator is read once).
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad._data for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients together so their joint norm is at most max_norm; return the norm.

    The total norm is the norm_type-norm of the per-parameter norms (2.0 by default, inf for
    the largest |g|), computed before clipping and returned as a 0-d Tensor, as in PyTorch
    (`float(...)` or `.item()` gives the number). If it exceeds max_norm, every gradient is
    multiplied in place by max_norm / (total + 1e-6).
    """
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    if not grads:
        return Tensor(np.zeros((), np.float32))
    dtype = np.result_type(*grads)
    if norm_type == math.inf:
        total = max(float(np.max(np.abs(g))) if g.size else 0.0 for g in grads)
    elif norm_type == 2.0:
        # dot of the flat view: one BLAS pass, no |g|^2 temporary; summed in float64
        total = math.sqrt(sum(float(np.dot(g.ravel(), g.ravel())) for g in grads))
    elif norm_type > 0:
        total = sum(float(np.sum(np.abs(g, dtype=np.float64) ** norm_type)) for g in grads)
        total = total ** (1.0 / norm_type)
    else:
        raise ValueError(f"clip_grad_norm_: norm_type must be > 0 or inf, got {norm_type}")
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total {norm_type}-norm of the gradients is "
                           f"{total}; pass error_if_nonfinite=False to clip anyway")
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g *= coef
    return Tensor(np.asarray(total, dtype=dtype))


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place; returns None."""
    clip_value = float(clip_value)
    if clip_value < 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for g in _grads(parameters):
        np.clip(g, -clip_value, clip_value, out=g)
