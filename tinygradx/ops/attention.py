"""Attention as one node: softmax(Q Kᵀ · scale + M) V forward and backward on arrays
(`Attention`), the packed [Q K V] form GPT's fused path uses (`PackedAttention`), and the
array functions the inference layer reuses (`attention_weights`, `attention_output`). The
formula op by op is F.scaled_dot_product_attention; these compute the same numbers in one node
(tests/test_attention.py holds them equal)."""
from __future__ import annotations

import math

import numpy as np

from ..core.fastpath import dispatched
from ..core.linalg import matmul
from ..core.node import Function, OpError
from ..core.xp import of
from ..fast import kernels, parallel, pool
from ..fast.dispatch import FLOAT32, Version, register
from . import rowwise
from .fused import Softmax, dropout_scale
from .movement import IndexPut, Stack


def attention_output(q, k, v, mask):
    """The empty Z of attention: the batch dims of the scores (Q, K, V and the mask broadcast
    together), laid out like Q when it can be, so a head merge after the call stays a view."""
    if q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and (mask is None or mask.ndim <= 2):
        batch = q.shape[:-2]            # the usual case, without broadcast_shapes' ~2 us
    else:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                    () if mask is None else np.shape(mask)[:-2])
    dtype = q.dtype if q.dtype == k.dtype == v.dtype else np.result_type(q, k, v)
    shape = batch + (q.shape[-2], v.shape[-1])
    return np.empty_like(q, dtype=dtype) if q.shape == shape else np.empty(shape, dtype)


@dispatched
def attention_weights(q, k, mask, scale, v, out):
    """(Q scale, A = softmax(Q scale K^T + M)), A computed in the score buffer, in place; with
    v and out (else None, None) also out <- A V."""
    qs = np.multiply(q, q.dtype.type(scale), out=np.empty_like(q))
    s = matmul(qs, k.swapaxes(-1, -2), None)                 # S = (Q scale) K^T: (.., n, m)
    if mask is not None and np.broadcast_shapes(s.shape, mask.shape) != s.shape:
        s, mask = s + mask, None                                 # the mask adds batch dims
    rowwise.masked_softmax(s, mask)                              # A = softmax(S + M), in place
    if v is not None:
        matmul(s, v, out)                                        # Z = A V: (..., n, d_v)
    return qs, s


def _weights_pool(q, k, mask, scale, v, out):
    """Head by head on the C pool: each head's products and softmax while its scores are in
    the core's cache (a GPT CPU config layer's forward 614 -> 338 us)."""
    return pool.attention(q, k, v, mask, scale, out)[:2]


def _weights_blocks(q, k, mask, scale, v, out):
    """The batch in row blocks on both cores: each block runs the reference's numpy calls on
    its slice (numpy's stacked matmul is one GEMM per matrix anyway), so the numbers do not
    change, and the small GEMMs of many heads run two at a time (677 -> 482 us)."""
    qs, s = np.empty_like(q), np.empty(q.shape[:-1] + k.shape[-2:-1], q.dtype)
    split = mask is not None and mask.ndim == s.ndim and mask.shape[0] > 1

    def block(s_, q_, k_, qs_, *rest):
        np.multiply(q_, q_.dtype.type(scale), out=qs_)
        np.matmul(qs_, k_.swapaxes(-1, -2), out=s_)              # S = (Q scale) K^T
        rowwise.masked_softmax(s_, rest[0] if split else mask)   # A = softmax(S + M)
        if v is not None:
            np.matmul(s_, rest[-2], out=rest[-1])                 # Z = A V
    parallel.rows(block, s, q, k, qs, *([mask] if split else []),
                  *(() if v is None else (v, out)))
    return qs, s


def _split_batch(q, k):
    """Whether attention's matmuls pay in batch blocks on both cores (parallel.split_gemms)."""
    return parallel.split_gemms(math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1], k.shape[-2])


def _blockable(q, k, mask, scale, v, out):
    """Whether the batch may be cut: blocks that pay (_split_batch), the same batch dims for
    Q, K (V, Z), and a mask that broadcasts to the scores without adding dims."""
    batch = q.shape[:-2]
    if k.shape[:-2] != batch or not _split_batch(q, k):     # (q has 3+ dims: _WEIGHTS' ndim)
        return False
    if v is not None and (v.shape[:-2] != batch or out.shape[:-2] != batch):
        return False
    scores = q.shape[:-1] + k.shape[-2:-1]
    return mask is None or (mask.ndim <= len(scores)
                            and np.broadcast_shapes(scores, mask.shape) == scores)


# q, k, mask, scale, v, out: the arrays (mask, v, out may be None) and the output
_WEIGHTS = dict(arrays=(0, 1, 2, 4, 5), contiguous=(), outputs=(5,), ndim={0: (3, None)})


def _weights_one_query(q, k, mask, scale, v, out):
    """A generated token's attention (one query per head, no mask): the reference's numpy
    products, which no version of matmul takes for one row, and the compiled softmax called
    directly: the same numbers, without three nested dispatches (~4 us of a ~17 us call)."""
    qs = np.multiply(q, q.dtype.type(scale), out=np.empty_like(q))
    s = np.matmul(qs, k.swapaxes(-1, -2))                    # S = (Q scale) K^T: (.., 1, m)
    s = np.ascontiguousarray(s)     # numpy lays S out like Q; a copy only for Q out of C order
    rows = s.reshape(-1, s.shape[-1])                        # (batch, m), a view of S
    kernels.softmax(rows, rows, True)                        # A = softmax(S), in place
    if v is not None:
        np.matmul(s, v, out=out)                             # Z = A V: (..., 1, d_v)
    return qs, s


def _one_query(q, k, mask, scale, v, out):
    """One query, no mask, and a batch the blocks would not cut (_split_batch: a decoding
    batch of thousands of heads goes to them)."""
    return (q.shape[-2] == 1 and mask is None and k.shape[:-2] == q.shape[:-2]
            and not _split_batch(q, k))


register("attention_weights", Version(    # first: the others never take one query
    "one_query", _weights_one_query, backend="kernels", accepts=_one_query, ulp=4, **_WEIGHTS))
register("attention_weights", Version(
    "pool", _weights_pool, backend="pool", dtypes=FLOAT32, in_blocks=False, ulp=8,
    accepts=lambda q, k, mask, scale, v, out: v is not None
    and pool.attention_fits(q, k, v, mask, out), **_WEIGHTS))
register("attention_weights", Version(
    "blocks", _weights_blocks, backend="threads", accepts=_blockable, ulp=8, **_WEIGHTS))


@dispatched
def attention_dropout(q, k, v, mask, scale, out, draw):
    """(Q scale, A, D) with out <- (A D) V, D = draw(shape, dtype) the scaled keep-mask of
    attention's dropout (drawn once, after A)."""
    qs, a = attention_weights(q, k, mask, scale, None, None)    # Q scale, A
    keep = draw(a.shape, a.dtype)                                # as Dropout draws it
    matmul(a * keep, v, out)                                     # Z = A' V: (..., n, d_v)
    return qs, a, keep


def _dropout_pool(q, k, v, mask, scale, out, draw):
    """Head by head on the C pool, D drawn by the same generator call as the reference's."""
    return pool.attention(q, k, v, mask, scale, out, draw=lambda shape: draw(shape, np.float32))


register("attention_dropout", Version(
    "pool", _dropout_pool, backend="pool", dtypes=FLOAT32, arrays=(0, 1, 2, 3, 5),
    contiguous=(), outputs=(5,), in_blocks=False, ulp=8,
    accepts=lambda q, k, v, mask, scale, out, draw: pool.attention_fits(q, k, v, mask, out)))


class Attention(Function):
    """Z = softmax(Q K^T * scale + M) V as one node: scaled dot-product attention, fused.

    The same numbers as the composite (matmul, add M, softmax, dropout, matmul), with fewer
    passes over memory: the scale goes on Q, M is added and the softmax runs in place on the
    score buffer, and Z, dQ, dK, dV are written in the memory layout of Q, K, V (so the head
    split (B, T, h, d) -> (B, h, T, d) before the call and the merge after it stay views).
    Backward, with A the attention weights and D the dropout's scaled keep-mask (A' = A * D):
        dV = A'^T g;  dA = (g V^T) * D;  dS = A * (dA - rowsum(dA * A));
        dQ = dS K * scale;  dK = dS^T (Q * scale)
    `mask` is additive (0 keeps, -inf blocks) and broadcasts to the scores (..., n, m); a row
    with every key blocked gives zero weights, as softmax does. Given as a 4th input (a Tensor
    that needs a gradient, a learned bias) instead of the keyword, it gets dM = dS.
    Composite twin: `F.scaled_dot_product_attention` (op by op, returning the weights).
    """
    fresh_grads = True
    op_name = "attention"

    def forward(self, q, k, v, mask=None, scale=1.0, p=0.0, rng=None):
        need = self.needs_input_grad     # a constant Q, K or V is copied, as torch's kernel does:
        if any(need):                    # an in-place change of it after the call is allowed
            q, k, v = (x if n else x.copy() for x, n in zip((q, k, v), need, strict=False))
            if len(need) > 3 and not need[3]:
                mask = mask.copy()
        self.q = q                       # for the formula (the fast backward reads Q scale)
        # Z has the batch dims of the scores (Q, K, V and the mask broadcast together) and is
        # laid out like Q when it can be, so a head merge after the call stays a view
        return self._forward(q, k, v, attention_output(q, k, v, mask), mask, scale, p, rng)

    def backward(self, g):
        grads = _attention_formula(of(g), g, self.q, self.k, self.v, self.mask, self.scale,
                                   self.keep)
        return grads[:3 + len(self.needs_input_grad[3:])]

    # the math, on arrays or views given by the caller (PackedAttention passes views)
    def _forward(self, q, k, v, out, mask, scale, p, rng):
        self.mask, self.keep = mask, None        # a 4th input, or a constant
        self.k, self.v, self.scale = k, v, scale
        if p == 0.0:                                             # Q scale, A; Z = A V
            self.qs, self.a = attention_weights(q, k, mask, scale, v, out)
        else:                                                    # and D, Z = (A D) V
            self.qs, self.a, self.keep = attention_dropout(
                q, k, v, mask, scale, out,
                lambda shape, dtype: dropout_scale(rng, shape, p, dtype))
        return out


def _attention_fast_backward(ctx, g):
    """Attention's derivative from the kept weights, written into dQ, dK, dV buffers laid
    out like Q, K, V (in batch row blocks on both cores when large)."""
    need = ctx.needs_input_grad
    batch = g.shape[:-2]
    grads = []
    for x, needed in zip((ctx.qs, ctx.k, ctx.v), need[:3], strict=True):
        full = batch + x.shape[-2:]       # the walk sums broadcast dims back (unbroadcast)
        grads.append(None if not needed else
                     np.empty_like(x, dtype=g.dtype) if x.shape == full else
                     np.empty(full, dtype=g.dtype))
    ds = attention_grads(g, ctx.qs, ctx.k, ctx.v, ctx.a, ctx.keep, ctx.scale, *grads)
    if len(need) == 4:                   # a mask given as an input: dM = dS
        return tuple(grads) + ((ds if need[3] else None),)
    return tuple(grads) + (None,) * (len(need) - 3)


def _same_dtype(ctx, g):
    return g.dtype == ctx.qs.dtype == ctx.k.dtype == ctx.v.dtype == ctx.a.dtype


register(Attention, Version("arrays", _attention_fast_backward, ulp=8, accepts=_same_dtype))


@dispatched
def attention_grads(g, qs, k, v, a, keep, scale, gq, gk, gv):
    """Attention's backward into gq, gk, gv (each None or an array to fill) from the kept
    weights A (and dropout mask D, or None); returns dS. The derivative of the class's
    docstring on arrays, the reference of its faster versions."""
    return _attention_backward(a, g, qs, k, v, keep, scale, None, gq, gk, gv)


def _attention_backward(a, g, qs, k, v, keep, scale, da, gq, gk, gv):
    """attention_grads' numpy calls, with da an empty (..., n, m) buffer for dS or None (the
    first product allocates it)."""
    if gv is not None:
        ad = a if keep is None else a * keep
        matmul(ad.swapaxes(-1, -2), g, gv)                       # dV = A'^T g
    da = matmul(g, v.swapaxes(-1, -2), da)                       # dA' = g V^T: (..., n, m)
    if keep is not None:
        da *= keep
    rowwise.softmax_grad_rows(da, a, da, -1)                     # dS = A (dA - rowsum(dA A))
    if gq is not None:
        matmul(da, k, gq)
        gq *= np.asarray(scale, dtype=gq.dtype)                  # dQ = dS K scale
    if gk is not None:
        matmul(da.swapaxes(-1, -2), qs, gk)                      # dK = dS^T (Q scale)
    return da                                                    # dS = dL/d(S + M)


def _grads_blocks(g, qs, k, v, a, keep, scale, gq, gk, gv):
    """Batch row blocks on both cores, as attention_weights' (the same calls per slice)."""
    da = np.empty(a.shape, dtype=g.dtype)
    grads = (gq, gk, gv)
    given = tuple(x is not None for x in grads)

    def block(a_, g_, qs_, k_, v_, da_, *out):
        it = iter(out)
        _attention_backward(a_, g_, qs_, k_, v_, None, scale, da_,
                            *(next(it) if x else None for x in given))
    parallel.rows(block, a, g, qs, k, v, da, *(x for x in grads if x is not None))
    return da


def _grads_blockable(g, qs, k, v, a, keep, scale, gq, gk, gv):
    return (keep is None and a.ndim > 2 and _split_batch(qs, k)
            and g.shape[:-2] == qs.shape[:-2] == k.shape[:-2] == v.shape[:-2] == a.shape[:-2])


def _grads_pool(g, qs, k, v, a, keep, scale, gq, gk, gv):
    """Head by head on the C pool (backward 620-640 -> 429-527 us a GPT CPU config layer)."""
    return pool.attention_backward(g, qs, k, v, a, scale, gq, gk, gv, keep)


# g, qs, k, v, a, keep: the inputs (keep may be None); gq, gk, gv: outputs (each may be None)
_GRADS = dict(arrays=(0, 1, 2, 3, 4, 5, 7, 8, 9), contiguous=(), outputs=(7, 8, 9))
register("attention_grads", Version(
    "pool", _grads_pool, backend="pool", dtypes=FLOAT32, in_blocks=False, ulp=8,
    accepts=lambda g, qs, k, v, a, keep, scale, gq, gk, gv: pool.attention_backward_fits(
        g, qs, k, v, a, gq, gk, gv, keep), **_GRADS))
register("attention_grads", Version("blocks", _grads_blocks, backend="threads", ulp=8,
                                    accepts=_grads_blockable, **_GRADS))


def _attention_formula(xp, g, q, k, v, mask, scale, keep):
    """Attention's derivative (see the class), the weights recomputed from q, k and the mask:
    (dQ, dK, dV, dS), each in the broadcast batch shape."""
    qs = q * scale
    s = qs @ xp.swapaxes(k, -1, -2)
    if mask is not None:
        s = s + mask
    a = xp.run(Softmax, s, dim=-1)
    dv = xp.swapaxes(a if keep is None else a * keep, -1, -2) @ g
    da = g @ xp.swapaxes(v, -1, -2)
    if keep is not None:
        da = da * keep
    ds = a * (da - xp.sum(da * a, -1, True))
    return (ds @ k) * scale, xp.swapaxes(ds, -1, -2) @ qs, dv, ds



class PackedAttention(Attention):
    """Multi-head attention on a packed [Q K V] (B, T, 3*h*d) -> Concat(head_1..head_h)
    (B, T, h*d), as one node (the layout of a fused c_attn projection, as flash-attn's
    qkv-packed call). The heads are strided views into the input, the output is written with
    the heads already side by side, and the backward writes dQ, dK, dV straight into one
    (B, T, 3*h*d) gradient: no split, transpose or concat nodes, no copies between them.
    Composite twin: split qkv into heads, `F.scaled_dot_product_attention`, merge the heads.
    """

    def forward(self, qkv, n_head=1, mask=None, scale=None, p=0.0, rng=None, n_query=None):
        if qkv.ndim != 3 or qkv.shape[-1] % (3 * n_head):
            raise OpError(f"expected a packed [Q K V] of shape (B, T, 3*h*d) with h={n_head}, "
                          f"got {qkv.shape}")
        B, T, C3 = qkv.shape
        self.qkv, self.heads = qkv, (B, T, n_head, C3 // (3 * n_head))
        self.n = n = T if n_query is None else n_query       # queries: the last n rows
        q, k, v = self._views(qkv)
        out = np.empty((B, n, C3 // 3), dtype=qkv.dtype)
        if scale is None:
            scale = 1.0 / math.sqrt(self.heads[3])
        self._forward(q, k, v, self._split(out), mask, scale, p, rng)
        return out

    def backward(self, g):
        xp = of(g)
        B, T, h, d = self.heads
        heads, rows = (0, 2, 1, 3), (slice(None), slice(None), slice(T - self.n, None))
        x5 = self.qkv.reshape(B, T, 3, h, d)
        q, k, v = (xp.transpose(x5[:, :, j], heads) for j in range(3))
        gh = xp.transpose(g.reshape(B, self.n, h, d), heads)
        dq, dk, dv, _ = _attention_formula(xp, gh, q[rows], k, v, self.mask, self.scale,
                                           self.keep)
        if self.n != T:                       # rows that were not queries: no dQ
            dq = xp.run(IndexPut, dq, index=rows, shape=(B, h, T, d))
        d5 = xp.run(Stack, *(xp.transpose(t, heads) for t in (dq, dk, dv)), dim=2)
        return d5.reshape(B, T, 3 * h * d)

    def _views(self, a):
        B, T, h, d = self.heads
        a5 = a.reshape(B, T, 3, h, d)                            # (B, T, 3, h, d)
        q, k, v = (a5[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (B, h, T, d) each
        return q[:, :, T - self.n:], k, v                        # Q: the last n rows only

    def _split(self, a):
        B, _, h, d = self.heads
        return a.reshape(B, a.shape[1], h, d).transpose(0, 2, 1, 3)  # (B, n, h*d) -> (B, h, n, d)


def _packed_attention_fast_backward(ctx, g):
    """dQ, dK, dV written straight into one (B, T, 3*h*d) gradient through strided views."""
    B, T, h, d = ctx.heads
    # rows that were not queries get no dQ: zeros there (only with n_query < T)
    dqkv = (np.empty if ctx.n == T else np.zeros)((B, T, 3 * h * d), dtype=g.dtype)
    attention_grads(ctx._split(g), ctx.qs, ctx.k, ctx.v, ctx.a, ctx.keep, ctx.scale,
                    *ctx._views(dqkv))
    return dqkv


register(PackedAttention, Version("arrays", _packed_attention_fast_backward, ulp=8,
                                  accepts=_same_dtype))
