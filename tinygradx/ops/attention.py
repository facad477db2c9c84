"""Attention as one node: softmax(Q Kᵀ · scale + M) V forward and backward on arrays
(`Attention`), the packed [Q K V] form GPT's fused path uses (`PackedAttention`), and the
array functions the inference layer reuses (`attention_weights`, `attention_output`). The
formula op by op is F.scaled_dot_product_attention; these compute the same numbers in one node
(tests/test_attention.py holds them equal)."""
from __future__ import annotations

import math

import numpy as np

from ..core import fastpath
from ..core.node import Function, OpError
from ..fast import kernels, parallel, pool
from . import rowwise
from .fused import Softmax, dropout_scale
from .movement import IndexPut, Stack
from ..core.xp import of


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


def attention_weights(q, k, mask, scale, v=None, out=None):
    """(Q scale, A = softmax(Q scale K^T + M)): A computed in the score buffer, in place; with
    v and out also out <- A V. When Q, K, V share their batch dims, the scores are large and
    each GEMM is small (parallel.split_gemms), the batch runs in row blocks on both cores
    (parallel.rows): each block does the same numpy calls on its slice (numpy's stacked
    matmul is one GEMM per matrix anyway), so the numbers do not change, and the small GEMMs
    of many heads run two at a time: a GPT CPU config layer's forward (B 12, h 4, T 64)
    677 -> 482 us. With V, and the C pool running, float32 attention runs head by head there
    instead (pool.attention: each head's products and softmax while its scores are in cache;
    the same layer's forward 614 -> 338 us)."""
    if v is not None and q.shape[-2] > 1:     # (one query, a generated token's: never the pool's)
        done = pool.attention(q, k, v, mask, scale, out)
        if done is not None:
            return done[:2]
    if _split_batch(q, k) and _blockable(q, k, v, out, mask):
        qs, s = np.empty_like(q), np.empty(q.shape[:-1] + k.shape[-2:-1], q.dtype)
        split = mask is not None and mask.ndim == s.ndim and mask.shape[0] > 1

        def block(s_, q_, k_, qs_, *rest):
            np.multiply(q_, q_.dtype.type(scale), out=qs_)
            np.matmul(qs_, k_.swapaxes(-1, -2), out=s_)          # S = (Q scale) K^T
            rowwise.masked_softmax(s_, rest[0] if split else mask)  # A = softmax(S + M)
            if v is not None:
                np.matmul(s_, rest[-2], out=rest[-1])             # Z = A V
        parallel.rows(block, s, q, k, qs, *([mask] if split else []),
                      *(() if v is None else (v, out)))
        return qs, s
    qs = np.multiply(q, q.dtype.type(scale), out=np.empty_like(q))
    s = _matmul(qs, k.swapaxes(-1, -2))                      # S = (Q scale) K^T: (.., n, m)
    if mask is not None and np.broadcast_shapes(s.shape, mask.shape) != s.shape:
        s, mask = s + mask, None                                 # the mask adds batch dims
    if s.size >= parallel.MIN_ELEMENTS and s.ndim > 2 and (
            mask is None or mask.ndim < s.ndim or mask.shape[0] == 1):
        parallel.rows(lambda blk: rowwise.masked_softmax(blk, mask), s)      # batch blocks
    else:
        rowwise.masked_softmax(s, mask)                          # A = softmax(S + M), in place
    if v is not None:
        _matmul(s, v, out)                                       # Z = A V: (..., n, d_v)
    return qs, s


def _split_batch(q, k):
    """Whether attention's matmuls run in batch blocks on both cores (parallel.split_gemms)."""
    return parallel.split_gemms(math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1], k.shape[-2])


def _blockable(q, k, v, out, mask):
    """Whether attention_weights may split the batch: one dtype, the same batch dims for Q, K
    (V, Z), and a mask that broadcasts to the scores without adding dims."""
    batch = q.shape[:-2]
    if q.ndim < 3 or k.shape[:-2] != batch or k.dtype != q.dtype:
        return False
    if v is not None and (v.shape[:-2] != batch or out.shape[:-2] != batch
                          or v.dtype != q.dtype or out.dtype != q.dtype):
        return False
    scores = q.shape[:-1] + k.shape[-2:-1]
    return mask is None or (mask.ndim <= len(scores) and mask.dtype == q.dtype
                            and np.broadcast_shapes(scores, mask.shape) == scores)


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
            return out
        done = pool.attention(q, k, v, mask, scale, out,         # head by head, drawing D
                              draw=lambda shape: dropout_scale(rng, shape, p, np.float32))
        if done is not None:                                     # as below when it applies
            self.qs, self.a, self.keep = done
            return out
        qs, s = attention_weights(q, k, mask, scale)             # Q scale, A
        self.qs, self.a = qs, s
        self.keep = dropout_scale(rng, s.shape, p, s.dtype)      # as Dropout draws it
        return np.matmul(s * self.keep, v, out=out)              # Z = A' V: (..., n, d_v)

    def _backward(self, g, gq, gk, gv):
        qs, k, v, a = self.qs, self.k, self.v, self.a
        grads = (gq, gk, gv)
        ds = pool.attention_backward(g, qs, k, v, a, self.scale, gq, gk, gv, self.keep)
        if ds is not None:                       # head by head on the pool's threads
            return ds
        if (self.keep is None and a.ndim > 2 and not pool.running() and _split_batch(qs, k)
                and g.shape[:-2] == qs.shape[:-2] == k.shape[:-2] == v.shape[:-2] == a.shape[:-2]
                and g.dtype == qs.dtype == k.dtype == v.dtype == a.dtype):
            # batch row blocks on both cores, as attention_weights (the same calls per slice)
            da = np.empty(a.shape, dtype=g.dtype)
            given = tuple(x is not None for x in grads)

            def block(a_, g_, qs_, k_, v_, da_, *out):
                it = iter(out)
                _attention_backward(a_, g_, qs_, k_, v_, None, self.scale, da_,
                                    *(next(it) if x else None for x in given))
            parallel.rows(block, a, g, qs, k, v, da, *(x for x in grads if x is not None))
            return da
        return _attention_backward(a, g, qs, k, v, self.keep, self.scale, None, *grads)


@fastpath.fast_backward(Attention)
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
    ds = ctx._backward(g, *grads)
    if len(need) == 4:                   # a mask given as an input: dM = dS
        return tuple(grads) + ((ds if need[3] else None),)
    return tuple(grads) + (None,) * (len(need) - 3)


def _attention_backward(a, g, qs, k, v, keep, scale, da, gq, gk, gv):
    """Attention's backward into gq, gk, gv (each None or an array to fill); returns dS.
    da is an empty (..., n, m) buffer for dS, or None to let the first matmul allocate it."""
    if gv is not None:
        ad = a if keep is None else a * keep
        _matmul(ad.swapaxes(-1, -2), g, gv)                      # dV = A'^T g
    da = _matmul(g, v.swapaxes(-1, -2), da)                      # dA' = g V^T: (..., n, m)
    if keep is not None:
        da *= keep
    # dS = A (dA - rowsum(dA A))
    parallel.rows(lambda d, a_: rowwise.softmax_grad(d, a_, d), da, a,
                  min_elements=parallel.MIN_KERNEL_ELEMENTS if kernels.ENABLED else None)
    if gq is not None:
        _matmul(da, k, gq)
        gq *= np.asarray(scale, dtype=gq.dtype)                  # dQ = dS K scale
    if gk is not None:
        _matmul(da.swapaxes(-1, -2), qs, gk)                     # dK = dS^T (Q scale)
    return da                                                    # dS = dL/d(S + M)


def _matmul(a, b, out=None):
    """np.matmul(a, b, out=out), the stack in batch blocks on the pool when it runs (then
    attention's own batch blocks on Python threads are skipped: fast/pool.py)."""
    done = pool.matmul(a, b, out)
    return np.matmul(a, b, out=out) if done is None else done


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


@fastpath.fast_backward(PackedAttention)
def _packed_attention_fast_backward(ctx, g):
    """dQ, dK, dV written straight into one (B, T, 3*h*d) gradient through strided views."""
    B, T, h, d = ctx.heads
    # rows that were not queries get no dQ: zeros there (only with n_query < T)
    dqkv = (np.empty if ctx.n == T else np.zeros)((B, T, 3 * h * d), dtype=g.dtype)
    ctx._backward(ctx._split(g), *ctx._views(dqkv))
    return dqkv
