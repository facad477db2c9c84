"""The encoder-decoder's inference side: KV-cached attention for decode_step, and the layers
run on arrays when no gradient is wanted.

Two things make decoding the held-out set fast (models/nets/decoding.py drives them):

1. **A cache** (`DecodeState`, `incremental_attention`). A decode step feeds one new target
   position: its self-attention K, V are appended to per-layer buffers and the cross-attention
   K, V of the encoder output H are projected once, on the first step. The math is
   nn.MultiHeadAttention's, restated step by step, so the cache refuses an attention module
   that is a subclass or has its own forward (`EncoderDecoder.cacheable` says so beforehand).
2. **Arrays instead of ops** (`encoder_layer`, `decoder_layer`). Under no_grad, with nobody
   watching the ops (`inference.fast_path`) and every module of its stock class
   (`transformer._arrays_ok`), a layer runs on its parameters' arrays through
   `tinygradx.inference` -- the ops' own forward functions -- with Q, K, V from one GEMM of
   the stacked [W^Q W^K W^V]. No graph node, Tensor or module call per op; the same numbers
   as the module path's no-grad run, bit for bit (tests/models/test_decoding.py), and to rounding
   those of the graph path (the stacked GEMM), tested to 1e-10 in float64.

Shapes: B batch, n new positions, S source length, t target positions so far, d = d_model,
h heads, d_k = d / h.
"""
from __future__ import annotations

import numpy as np

import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.autograd import hooks
from tinygradx.ops import inference

from .layers import KVCache
from .layers import layer_norm_on_array as _norm, linear_on_array as _linear


def split_heads(x, h):
    """A Tensor (B, n, d) -> (B, h, n, d_k), head i reading columns i*d_k .. (i+1)*d_k."""
    B, n, d = x.shape
    return x.reshape(B, n, h, d // h).transpose(1, 2)             # (B, h, n, d_k)


def padding_mask(key_padding_mask, dtype):
    """(B, m) bool, True at padding -> the additive mask (B, 1, 1, m): -inf there, else 0."""
    if key_padding_mask is None:
        return None
    kp = key_padding_mask._data if isinstance(key_padding_mask, Tensor) \
        else np.asarray(key_padding_mask)
    return np.where(kp.astype(bool), -np.inf, 0.0).astype(dtype)[:, None, None, :]


def plain(module, cls):
    """`module` is a `cls` itself, not a subclass, with no instance forward and no hook."""
    return type(module) is cls and "forward" not in vars(module) and not hooks.has_hooks(module)


def inference_ok(mha):
    """Whether `mha` may run on arrays: no graph and no one watching the ops
    (inference.fast_path), no attention dropout, and `mha` and its four projections of their
    stock classes (the Q, K, V ones with biases) and no instance-level forward. The array code
    reads W^Q, W^K, W^V directly (stacked into one GEMM), so a swapped-in LoRA Linear or a
    MultiHeadAttention subclass must take the module path."""
    return (inference.fast_path() and (not mha.training or mha.dropout == 0.0)
            and plain(mha, nn.MultiHeadAttention)
            and all(plain(lin, nn.Linear) for lin in (mha.w_q, mha.w_k, mha.w_v, mha.w_o))
            and all(lin.bias is not None for lin in (mha.w_q, mha.w_k, mha.w_v)))


def _stacked_qkv(mha):
    """[W^Q W^K W^V] (3d, d) and their biases (3d,): one GEMM for Q, K, V."""
    return tuple(np.concatenate([p._data for p in parts])
                 for parts in ((mha.w_q.weight, mha.w_k.weight, mha.w_v.weight),
                               (mha.w_q.bias, mha.w_k.bias, mha.w_v.bias)))


def _merge(mha, z):
    """Concat(head_1..head_h) W^O + b^O: z (B, h, n, d_k) -> (B, n, d)."""
    B, h, n, dk = z.shape
    return _linear(mha.w_o, z.transpose(0, 2, 1, 3).reshape(B, n, h * dk))   # (B, n, d)


def self_attention(mha, x, mask):
    """mha(x, x, x) on arrays, all n positions attending to each other under the additive
    `mask` (B, 1, 1, n) or None: Q, K, V from one GEMM, laid out per head as one contiguous
    copy (a batched matmul over strided heads misses BLAS), attention as the fused op's
    forward. x (B, n, d) -> (B, n, d)."""
    B, n, d = x.shape
    h = mha.num_heads
    qkv = inference.linear(x, *_stacked_qkv(mha)).reshape(B, n, 3, h, d // h)  # (B, n, 3, h, d_k)
    q, k, v = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))  # 3 x (B, h, n, d_k)
    return _merge(mha, inference.attention(q, k, v, mask))        # (B, n, d)


def _cached_self_attention(mha, x, cache):
    """The decoder's self-attention of the n new positions x (B, n, d) on arrays: [Q K V] from
    one GEMM (the weights stacked once per cache), K and V written into the cache's buffers
    (LayerCache.append_heads), the new queries against every position, the causal mask
    aligned bottom-right (none for one new position)."""
    if cache.proj is None:
        cache.proj = _stacked_qkv(mha)
    B, n, d = x.shape
    h = mha.num_heads
    qkv = inference.linear(x, *cache.proj).reshape(B, n, 3, h, d // h)  # (B, n, 3, h, d_k)
    q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (B, h, n, d_k) views
    k, v = cache.append_heads(k, v, arrays=True)                  # (B, h, t, d_k)
    mask = F.causal_mask(n, k.shape[2], x.dtype) if n > 1 else None
    return _merge(mha, inference.attention(q, k, v, mask))        # (B, n, d)


def _cross_attention(mha, x, cache, memory, src_pad):
    """The decoder's cross-attention of x (B, n, d) on arrays, K, V of H from the cache
    (projected on the first call)."""
    if cache.static is None:
        cache.static = _static_kv(mha, memory, src_pad, x.dtype)
    k, v, mask = cache.static                                     # 2 x (B, h, S, d_k), M
    B, n, d = x.shape
    q = _linear(mha.w_q, x).reshape(B, n, mha.num_heads, -1).transpose(0, 2, 1, 3)  # (B, h, n, d_k)
    return _merge(mha, inference.attention(q, k._data, v._data, mask))  # (B, n, d)


def _add(fresh, x):
    """fresh + x, written into `fresh` (an array this layer made): the residual add."""
    fresh += x
    return fresh


def _ffn(ff, x):
    """PositionwiseFeedForward on arrays: ReLU(x W_1 + b_1) W_2 + b_2 (its dropout inactive)."""
    hidden = _linear(ff.w_1, x)                                   # (B, n, d_ff)
    return _linear(ff.w_2, inference.relu(hidden, inplace=True))  # (B, n, d)


def encoder_layer(layer, x, mask):
    """EncoderLayer.forward on arrays, x (B, n, d) and the additive padding mask (B, 1, 1, n)
    or None. Post-LN: LN(x + MHA(x)), then LN(u + FFN(u)); Pre-LN: x + MHA(LN(x)), then
    u + FFN(LN(u))."""
    sa = self_attention
    if layer.norm_first:
        x = _add(sa(layer.self_attn, _norm(layer.norm1, x), mask), x)
        return _add(_ffn(layer.ff, _norm(layer.norm2, x)), x)
    x = _norm(layer.norm1, _add(sa(layer.self_attn, x, mask), x))
    return _norm(layer.norm2, _add(_ffn(layer.ff, x), x))         # (B, n, d)


def decoder_layer(layer, x, memory, src_pad, cache):
    """DecoderLayer.forward on arrays for the n new target positions x (B, n, d) of a decode
    step, `cache` the layer's {"self", "cross"} caches; memory (Tensor) is read on the first
    step only, src_pad the source padding (B, S) bool (array or Tensor) or None."""
    sa = lambda y: _cached_self_attention(layer.self_attn, y, cache["self"])   # noqa: E731
    ca = lambda y: _cross_attention(layer.cross_attn, y, cache["cross"], memory, src_pad)  # noqa: E731
    if layer.norm_first:
        x = _add(sa(_norm(layer.norm1, x)), x)
        x = _add(ca(_norm(layer.norm2, x)), x)
        return _add(_ffn(layer.ff, _norm(layer.norm3, x)), x)
    x = _norm(layer.norm1, _add(sa(x), x))
    x = _norm(layer.norm2, _add(ca(x), x))
    return _norm(layer.norm3, _add(_ffn(layer.ff, x), x))         # (B, n, d)


# -- the cache of decode_step ------------------------------------------------------------
def incremental_attention(mha, query, key_value, cache, static=False, key_padding_mask=None,
                          need_weights=False):
    """MHA(Q, K, V) of nn.MultiHeadAttention `mha`, reusing K and V computed at earlier steps.

    Self-attention (static=False): K, V of the new positions `key_value` (B, n, d) are appended
    to `cache` (a layers.LayerCache) and the n new queries attend causally to all t positions.
    Cross-attention (static=True): K, V of the encoder output H and the additive mask M of its
    padding are computed on the first call and kept in cache.static. The math is mha.forward's,
    so logits equal the uncached ones (tested). Without need_weights, softmax(QKᵀ/√d_k + M)V is
    one fused node (F.attention). Returns (output (B, n, d), attention weights A (B, h, n, t)
    or None).
    """
    if not plain(mha, nn.MultiHeadAttention):
        raise ValueError(f"decode_step: the cache computes nn.MultiHeadAttention's math itself, "
                         f"so it cannot run this {type(mha).__name__} (a subclass, or given its "
                         f"own forward); decode with cached=False (whole prefixes through the "
                         f"modules)")
    B, n, d = query.shape
    h = mha.num_heads
    if not static and _packed_ok(mha, query, key_value, cache, key_padding_mask, need_weights):
        return Tensor(_cached_self_attention(mha, query._data, cache)), None
    q = split_heads(mha.w_q(query), h)                           # Q = X W^Q: (B, h, n, d_k)
    if static:
        if cache.static is None:
            cache.static = _static_kv(mha, key_value, key_padding_mask, query.dtype)
        k, v, mask = cache.static                                 # 2 x (B, h, S, d_k), M
    else:
        k, v = cache.update(split_heads(mha.w_k(key_value), h),  # (B, h, t, d_k)
                            split_heads(mha.w_v(key_value), h))  # (B, h, t, d_v)
        t = k.shape[2]
        # the new queries sit at positions t-n..t-1: M_ij = -inf for j after i (none when n = 1)
        mask = F.causal_mask(n, t, query.dtype) if n > 1 else None
        pad = padding_mask(key_padding_mask, query.dtype)
        mask = pad if mask is None else mask if pad is None else mask + pad   # (B, 1, n, t)
    if need_weights:
        z, a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              return_weights=True)   # (B, h, n, d_v)
    else:
        z, a = F.attention(q, k, v, attn_mask=mask), None        # (B, h, n, d_v)
    z = z.transpose(1, 2).reshape(B, n, d)                        # Concat(heads): (B, n, d)
    return mha.w_o(z), a                                          # (B, n, d)


def _packed_ok(mha, query, key_value, cache, key_padding_mask, need_weights):
    """Whether a self-attention step may run on arrays (`_cached_self_attention`):
    no graph, no weights asked for, no target padding, and a cache that holds K, V buffers."""
    return (query is key_value and not need_weights and key_padding_mask is None
            and cache.k is None and inference_ok(mha))


def _static_kv(mha, memory, key_padding_mask, dtype):
    """The cross-attention constants of one layer: K = H W^K, V = H W^V as (B, h, S, d_k) and
    the additive padding mask M (B, 1, 1, S) or None. On the inference path they are made once
    as contiguous arrays (every step's batched matmul then runs on BLAS) from one GEMM of the
    stacked [W^K W^V], and with padding that GEMM runs on the real positions only and its rows
    are scattered straight into the head layout; the padded ones stay zeros, which M hides."""
    h = mha.num_heads
    mask = padding_mask(key_padding_mask, dtype)
    if not inference_ok(mha):
        return (split_heads(mha.w_k(memory), h), split_heads(mha.w_v(memory), h), mask)
    B, S, d = memory.shape
    w, b = (np.concatenate([p._data for p in pair]) for pair in
            ((mha.w_k.weight, mha.w_v.weight), (mha.w_k.bias, mha.w_v.bias)))  # (2d, d), (2d,)
    if mask is None:
        kv = inference.linear(memory._data, w, b)                 # [K V]: (B, S, 2d)
        kv = kv.reshape(B, S, 2, h, d // h).transpose(2, 0, 3, 1, 4)  # (2, B, h, S, d_k)
        k, v = np.ascontiguousarray(kv)
    else:
        bi, si = np.nonzero(mask[:, 0, 0, :] == 0)                # the N real positions
        kv = inference.linear(memory._data[bi, si], w, b)         # [K V]: (N, 2d)
        k, v = heads = np.zeros((2, B, h, S, d // h), kv.dtype)  # zeros at the padding
        # (2, B, h, S, d_k)[:, bi, :, si] selects (N, 2, h, d_k): each real row's K, V heads
        heads[:, bi, :, si] = kv.reshape(-1, 2, h, d // h)          # (N, 2, h, d_k)
    return Tensor(k), Tensor(v), mask


class DecodeState:
    """What decode_step carries between steps: the encoder output H (B, S, d), its padding
    mask, and per decoder layer a KV cache of the self-attention ("self") and the
    cross-attention K, V of H ("cross")."""

    def __init__(self, memory, src_key_padding_mask, n_layer):
        self._memory, self._index = memory, None
        self.src_key_padding_mask = None if src_key_padding_mask is None else np.asarray(
            src_key_padding_mask._data if isinstance(src_key_padding_mask, Tensor)
            else src_key_padding_mask, dtype=bool)
        self.self_cache, self.cross_cache = KVCache(n_layer), KVCache(n_layer)

    def __getitem__(self, i):
        return {"self": self.self_cache[i], "cross": self.cross_cache[i]}

    @property
    def length(self):
        """Target positions decoded so far (the position of the next token)."""
        return self.self_cache.length

    @property
    def memory(self):
        """H (B, S, d) of the rows kept. Reordering only composes the row index; the rows are
        gathered when H is read, which decode_step does only while a layer still has to
        project its cross-attention K, V from it (the first step): beam search reorders
        every step."""
        if self._index is not None:
            self._memory, self._index = self._memory[self._index], None   # (B', S, d)
        return self._memory

    @memory.setter
    def memory(self, value):
        self._memory, self._index = value, None

    def memory_needed(self):
        return any(layer.static is None for layer in self.cross_cache.layers)

    def reorder(self, index):
        """Keep batch rows `index` (B',) in that order, e.g. the parents of the surviving beams;
        rows may repeat (expanding one sentence into k beams is reorder([0]*k))."""
        index = np.asarray(index._data if isinstance(index, Tensor) else index, dtype=np.int64)
        self._index = index if self._index is None else self._index[index]
        if self.src_key_padding_mask is not None:
            self.src_key_padding_mask = self.src_key_padding_mask[index]   # (B', S)
        self.self_cache.reorder(index)
        self.cross_cache.reorder(index)
