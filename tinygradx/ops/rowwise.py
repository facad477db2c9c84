"""Row-wise work the fused ops share: softmax's backward on arrays (`softmax_grad_rows`, the
array form of core.rows.Softmax's formula, which attention's backward runs on its score
buffer in place) and the masked softmax attention runs on its score buffer. Their faster
versions (the compiled loops, the C pool) are registered in ops/versions.py.
"""
from __future__ import annotations

import numpy as np

from ..core.fastpath import dispatched
from ..core.rows import softmax_rows


@dispatched
def softmax_grad_rows(g, s, out, axis):
    """out <- s * (g - sum(g*s)) along axis (out may be g itself): Softmax.backward's formula
    on arrays, with the row sums as one einsum (no (..., n) temporary for g*s)."""
    if axis in (-1, s.ndim - 1) and s.ndim <= 26:
        sub = "abcdefghijklmnopqrstuvwxyz"[:s.ndim]
        row = np.einsum(f"{sub},{sub}->{sub[:-1]}", g, s)[..., None]
    else:
        row = (g * s).sum(axis=axis, keepdims=True)
    np.subtract(g, row, out=out)
    out *= s
    return out


def masked_softmax(s, mask):
    """s <- softmax(s + mask) over the last axis, in place."""
    if mask is not None:
        s += mask                                                # + M
    softmax_rows(s, s, -1)
