"""Matrix products and table lookups: matmul, linear, embedding. One Function each, forward and
backward side by side (as in elementwise.py), each backward written once for arrays and Tensors; the
embedding's backward (a scatter-add of rows) is an op of its own, EmbeddingBackward, so that
its result can be differentiated again.
"""
from __future__ import annotations

import math

import numpy as np

from .fastpath import dispatched
from .node import Function, OpError
from .xp import ARRAYS, of


@dispatched
def matmul(a, b, out):
    """a @ b on arrays (numpy's rules: 1-D operands, broadcast batch dims), into `out` when
    given. (..., n, k) @ (k, m) runs as ONE 2-D GEMM on a (prod(...)*n, k) view: numpy would
    loop over the batch, and with a transposed 2-D operand (x @ W.T) fall back to a loop
    ~50x slower than BLAS."""
    if b.ndim == 2 and a.ndim > 2 and out is None:
        y = a.reshape(math.prod(a.shape[:-1]), a.shape[-1]) @ b
        return y.reshape(a.shape[:-1] + (b.shape[1],))
    return np.matmul(a, b, out=out)


def _mm(a, b):
    return matmul(a, b, None)


def _matmul(xp, a, b):
    """a @ b: `_mm` on arrays, the recorded matmul on Tensors."""
    return _mm(a, b) if xp is ARRAYS else a @ b


@dispatched
def linear_forward(x, w, b=None):
    """x W^T + b on arrays, W (out, in): Linear's forward. Built on matmul's reference: its
    faster versions are its own (one decision a call, which a generated token makes 17 times)."""
    y = matmul.reference(x, w.T, None)
    if b is not None:
        y += b
    return y


class MatMul(Function):
    """(...,n,k)@(...,k,m): da = g @ b^T, db = a^T @ g; batch dims broadcast; 1-D as numpy."""
    def forward(self, a, b):
        na, nb = self.needs_input_grad     # keep only what backward reads (as PyTorch)
        self.a, self.b = (a if nb else None), (b if na else None)
        self.nd = (a.ndim, b.ndim)
        return _mm(a, b)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        a, b = arrays
        if a.ndim == 0 or b.ndim == 0:
            return f"{a.shape} @ {b.shape}: both operands need at least 1 dim"
        ka = a.shape[-1]
        kb = b.shape[-2] if b.ndim >= 2 else b.shape[0]
        if ka != kb:
            return f"{a.shape} @ {b.shape}: inner dimensions {ka} and {kb} differ"
        return f"{a.shape} @ {b.shape}: batch dims do not broadcast ({err})"

    def backward(self, g):
        xp, a, b = of(g), self.a, self.b
        a_nd, b_nd = self.nd
        if b_nd == 1:                               # numpy's rule: a 1-D right operand is a
            g = xp.expand_dims(g, -1)               # column and a 1-D left one a row (vector
        if a_nd == 1:                               # @ vector gives a 0-d g: add the column
            g = xp.expand_dims(g, -2)               # axis first, then the row)
        ga = gb = None
        if self.needs_input_grad[0]:
            b2 = xp.expand_dims(b, -1) if b_nd == 1 else b
            ga = _matmul(xp, g, xp.swapaxes(b2, -1, -2))
            if a_nd == 1:
                ga = ga[..., 0, :]
        if self.needs_input_grad[1]:
            a2 = xp.expand_dims(a, 0) if a_nd == 1 else a
            if max(b_nd, 2) == 2 and a2.ndim > 2:
                # a shared 2-D weight: fold the batch into one GEMM instead of a batched GEMM
                # followed by a sum over the batch
                k = a2.shape[-1]
                rows = math.prod(a2.shape[:-1])
                gb = xp.swapaxes(a2.reshape(rows, k), 0, 1) @ g.reshape(rows, g.shape[-1])
            else:
                gb = _matmul(xp, xp.swapaxes(a2, -1, -2), g)
            if b_nd == 1:
                gb = gb[..., 0]
        return ga, gb


class Linear(Function):
    """y = x W^T + b with W in PyTorch's [out, in] layout: dx = g W, dW = g^T x, db = sum g."""
    fresh_grads = True
    op_name = "linear"

    def forward(self, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise OpError(f"input {x.shape} has {x.shape[-1]} features but the weight "
                          f"{w.shape} expects {w.shape[-1]} (weight is [out, in])")
        nx, nw = self.needs_input_grad[:2]   # keep only what backward reads (as PyTorch)
        self.x, self.w = (x if nw else None), (w if nx else None)
        return linear_forward(x, w, b)

    def backward(self, g):
        xp, x, w = of(g), self.x, self.w
        gx = _matmul(xp, g, w) if self.needs_input_grad[0] else None
        rows = math.prod(g.shape[:-1])
        g2 = g.reshape(rows, g.shape[-1])
        gw = g2.T @ x.reshape(rows, x.shape[-1]) if self.needs_input_grad[1] else None
        if len(self.needs_input_grad) == 3:
            return gx, gw, (g2.sum(0) if self.needs_input_grad[2] else None)
        return gx, gw


class Embedding(Function):
    """out = W[ids]; dW = scatter-add of g into the rows named by ids (repeated ids sum)."""
    fresh_grads = True
    def forward(self, w, ids, padding_idx=None):
        if ids.dtype not in (np.int64, np.int32):       # torch's two index dtypes
            raise OpError(f"indices must be an integer tensor of int64 or int32 (as torch), got "
                          f"dtype {ids.dtype}")
        try:
            if ids.size and ids.min() < 0:       # take() would read -1 as the last row
                raise IndexError
            out = w.take(ids, axis=0)            # checks ids < rows itself, in C
        except IndexError:
            bad = ids[(ids < 0) | (ids >= w.shape[0])].ravel()[0]
            raise OpError(f"index {bad} is out of range for a table of {w.shape[0]} rows "
                          f"(weight shape {w.shape})") from None
        self.ids, self.shape, self.padding_idx = ids, w.shape, padding_idx
        return out

    def backward(self, g):
        return of(g).run(EmbeddingBackward, g, ids=self.ids, shape=self.shape,
                         padding_idx=self.padding_idx)


def _scatter_rows(g, ids, shape, padding_idx):
    """A (V, C) table of zeros with each row g[i] (g is (..., C)) added into row ids[i]
    (repeated ids sum), the rows with id padding_idx left out."""
    ids = ids.ravel()
    g2 = g.reshape(math.prod(g.shape[:-1]), shape[1])
    if padding_idx is not None:
        g2 = g2 * (ids != padding_idx)[:, None]
    return scatter_rows(g2, ids, shape[0])


@dispatched
def scatter_rows(g2, ids, rows):
    """A (rows, C) table of zeros with each row g2[i] added into row ids[i] (repeats sum)."""
    out = np.zeros((rows, g2.shape[1]), dtype=g2.dtype)
    np.add.at(out, ids, g2)
    return out


class EmbeddingBackward(Function):
    """The embedding's weight gradient as an op: g (..., C) scatter-added into a (V, C) table
    at the rows ids (the padding row gets nothing). It is linear in g, and its own gradient
    gathers the rows back: d = h[ids], 0 where ids == padding_idx."""
    fresh_grads = True
    op_name = "embedding_backward"

    def forward(self, g, ids, shape, padding_idx=None):
        self.ids, self.padding_idx = ids, padding_idx
        return _scatter_rows(g, ids, shape, padding_idx)

    def _kept(self):
        return (self.ids != self.padding_idx)[..., None]

    def backward(self, h):
        out = of(h).run(Embedding, h, ids=self.ids)
        return out if self.padding_idx is None else out * self._kept()

