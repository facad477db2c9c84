"""Pieces both Transformers share: the KV cache (and the encoder-decoder's cached attention),
next-token sampling, masks. (The initialisers are PyTorch's, in tinygradx.nn.init.)

References: top-k sampling (Fan et al. 2018, "Hierarchical Neural Story Generation"), nucleus
(top-p) sampling (Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"). Only
tinygradx's public API is used, as a user's model code would.
"""
from __future__ import annotations


import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn


def values(x):
    """The numpy array of a Tensor (shared, through the public API) or of anything array-like."""
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def plain(module, cls):
    """`module` is a `cls` itself, not a subclass, with no instance forward and no hook: code
    that restates cls's math (the cache below, the fast path) may stand in for its forward."""
    return type(module) is cls and "forward" not in vars(module) and not module.has_forward_hooks()


# ------------------------------------------------------------------------------------------
# LayerNorm as the Annotated Transformer writes it
# ------------------------------------------------------------------------------------------

class AnnotatedLayerNorm(nn.Module):
    """gamma * (x - mean) / (std + eps) + beta over the last dim, with std the unbiased
    standard deviation (divided by d - 1) and eps (1e-6) outside the square root: the form of
    the Annotated Transformer's code. torch's nn.LayerNorm, the models' default, divides by d
    and puts eps inside: gamma * (x - mean) / sqrt(var + eps) + beta. Far from eps the two
    differ by the factor sqrt((d - 1) / d): 0.9922 at d = 64. Its parameters have LayerNorm's
    names (weight, bias), so state dicts load either way."""

    def __init__(self, d_model, eps=1e-6):
        self.eps = eps
        self.weight = nn.Parameter(np.ones((d_model,), np.float32))    # gamma: (d,)
        self.bias = nn.Parameter(np.zeros((d_model,), np.float32))     # beta: (d,)

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)                            # (..., 1)
        std = x.std(dim=-1, keepdim=True)                              # unbiased: (..., 1)
        return self.weight * (x - mean) / (std + self.eps) + self.bias

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}, unbiased std, eps outside the root"


LAYER_NORMS = ("torch", "annotated")


def layer_norm(d_model, form="torch"):
    """The LayerNorm of a layer: torch's nn.LayerNorm ("torch") or AnnotatedLayerNorm."""
    if form == "torch":
        return nn.LayerNorm(d_model)
    if form == "annotated":
        return AnnotatedLayerNorm(d_model)
    raise ValueError(f"layer_norm must be one of {', '.join(map(repr, LAYER_NORMS))}, "
                     f"got {form!r}")


# ------------------------------------------------------------------------------------------
# KV cache
# ------------------------------------------------------------------------------------------

class LayerCache:
    """The keys and values one attention layer has seen so far, each (B, h, t, d_k).

    Causal self-attention at step t needs K and V of positions 0..t; they never change once
    computed (position j only ever attends to positions <= j), so we keep them and compute
    only the new rows. `static` holds what is computed once per sequence: the cross-attention
    K and V of the encoder output H.
    """

    def __init__(self):
        self.k = None          # (B, h, t, d_k)
        self.v = None          # (B, h, t, d_v)
        self.static = None     # cross-attention: (K_H, V_H (B, h, S, d_k), mask (B, 1, 1, S))
        self.rows = None       # or: packed [Q K V] rows (B, capacity, 3C), inference only
        self.t = 0             # rows of `rows` in use
        self.heads = None      # or: K, V buffers (B, h, capacity, d_k), inference only

    @property
    def length(self):
        if self.rows is not None or self.heads is not None:
            return self.t
        return 0 if self.k is None else self.k.shape[2]

    def _refuse(self, kind):
        held = ("per-head K, V (update)" if self.k is not None else
                "packed rows (append_rows)" if self.rows is not None else
                "K, V buffers (append_heads)" if self.heads is not None else None)
        if held is not None and held != kind:
            raise RuntimeError(f"LayerCache: this cache holds {held}; it cannot also take "
                               f"{kind}")

    def append_rows(self, qkv):
        """Inference only (no gradient reaches earlier rows): append the new positions' packed
        [Q K V] (B, T, 3C) and return all rows so far (B, t+T, 3C) as a constant. The buffer
        doubles when full, so a token costs one row copy, not a copy of the whole cache."""
        self._refuse("packed rows (append_rows)")
        a = values(qkv)
        B, T, width = a.shape
        if self.rows is None or self.t + T > self.rows.shape[1]:
            grown = np.empty((B, max(2 * (self.t + T), 16), width), dtype=a.dtype)
            if self.rows is not None:
                grown[:, :self.t] = self.rows[:, :self.t]
            self.rows = grown
        self.rows[:, self.t:self.t + T] = a
        self.t += T
        return Tensor(self.rows[:, :self.t])                     # (B, t, 3C), a view

    def append_heads(self, k, v, arrays=False):
        """Inference only: write the new positions' k, v (B, h, T, d_k) arrays into buffers
        (B, h, capacity, d_k) that double when full, and return K, V of every position so far
        (B, h, t+T, d_k) as constants (arrays=True: as numpy arrays, for array code). They
        are views whose (t, d_k) blocks are contiguous, so a batched matmul over many rows and
        heads runs on BLAS (over strided heads numpy falls back to a loop ~8x slower at 1,000
        rows), and a step copies one position, not the cache."""
        self._refuse("K, V buffers (append_heads)")
        B, h, T, d = k.shape
        t = self.t
        if self.heads is None or t + T > self.heads[0].shape[2]:
            cap = max(2 * (t + T), 16)
            grown = tuple(np.empty((B, h, cap, x.shape[-1]), dtype=x.dtype) for x in (k, v))
            if self.heads is not None:
                for new, old in zip(grown, self.heads, strict=True):
                    new[:, :, :t] = old[:, :, :t]
            self.heads = grown
        kb, vb = self.heads
        kb[:, :, t:t + T] = k
        vb[:, :, t:t + T] = v
        self.t = t + T
        if arrays:
            return kb[:, :, :self.t], vb[:, :, :self.t]
        return Tensor(kb[:, :, :self.t]), Tensor(vb[:, :, :self.t])

    def update(self, k, v):
        """Append the new positions' k, v (B, h, T, d_k) and return all of them (B, h, t+T, d_k).
        They are kept row-major, each head's (t, d_k) block contiguous, as append_heads keeps
        them: a batched matmul over strided heads misses BLAS, and the layout would decide
        the rounding."""
        self._refuse("per-head K, V (update)")
        k, v = k.contiguous(), v.contiguous()                # (B, h, T, d_k), row-major
        if self.k is not None:
            k = tgx.cat([self.k, k], dim=2)                  # (B, h, t + T, d_k)
            v = tgx.cat([self.v, v], dim=2)                  # (B, h, t + T, d_v)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index):
        """Keep batch rows `index` (B',) in this order: beam search's survivors."""
        if self.k is not None:
            self.k, self.v = self.k[index], self.v[index]    # (B', h, t, d_k)
        if self.rows is not None:
            self.rows = self.rows[index]                     # (B', capacity, 3C)
        if self.heads is not None:                            # (B', h, capacity, d_k)
            self.heads = tuple(_take_rows(x, index, self.t) for x in self.heads)
        if self.static is not None:
            self.static = tuple(None if s is None else s[index] for s in self.static)


def _take_rows(buf, index, t):
    """buf[index] for a (B, h, capacity, d) buffer whose first t positions are in use: only
    those are copied (x[index, :, :t] is one gather), into a buffer of the same capacity."""
    out = np.empty((len(index),) + buf.shape[1:], dtype=buf.dtype)
    out[:, :, :t] = buf[index, :, :t]
    return out


class KVCache:
    """One LayerCache per layer; `cache[i]` goes to layer i. Its length is the number of
    positions already processed, i.e. the position of the next token."""

    def __init__(self, n_layer):
        self.layers = [LayerCache() for _ in range(n_layer)]

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    @property
    def length(self):
        return self.layers[0].length

    def reorder(self, index):
        index = np.asarray(values(index), dtype=np.int64)
        for layer in self.layers:
            layer.reorder(index)


# ------------------------------------------------------------------------------------------
# the encoder-decoder's cached attention (decode_step)
# ------------------------------------------------------------------------------------------

def split_heads(x, h):
    """A Tensor (B, n, d) -> (B, h, n, d_k), head i reading columns i*d_k .. (i+1)*d_k."""
    B, n, d = x.shape
    return x.reshape(B, n, h, d // h).transpose(1, 2)             # (B, h, n, d_k)


def padding_mask(key_padding_mask, dtype):
    """(B, m) bool, True at padding -> the additive mask (B, 1, 1, m): -inf there, else 0."""
    if key_padding_mask is None:
        return None
    kp = values(key_padding_mask)
    return np.where(kp.astype(bool), -np.inf, 0.0).astype(dtype)[:, None, None, :]


def incremental_attention(mha, query, key_value, cache, static=False, key_padding_mask=None,
                          need_weights=False):
    """MHA(Q, K, V) of nn.MultiHeadAttention `mha`, reusing K and V computed at earlier steps.

    Self-attention (static=False): K, V of the new positions `key_value` (B, n, d) are appended
    to `cache` (a LayerCache) and the n new queries attend causally to all t positions.
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
    q = split_heads(mha.w_q(query), h)                           # Q = X W^Q: (B, h, n, d_k)
    if static:
        if cache.static is None:                                  # K = H W^K, V = H W^V, M
            cache.static = (split_heads(mha.w_k(key_value), h), split_heads(mha.w_v(key_value), h),
                            padding_mask(key_padding_mask, query.dtype))
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


class DecodeState:
    """What decode_step carries between steps: the encoder output H (B, S, d), its padding
    mask, per decoder layer a KV cache of the self-attention ("self") and the cross-attention
    K, V of H ("cross"), and `plan`: the decoder's layers on arrays (models/nets/fastpath.py)
    when init_decode_state found them runnable so, else None (the modules run)."""

    def __init__(self, memory, src_key_padding_mask, n_layer, plan=None):
        self._memory, self._index = memory, None
        self.src_key_padding_mask = None if src_key_padding_mask is None else np.asarray(
            values(src_key_padding_mask), dtype=bool)
        self.self_cache, self.cross_cache = KVCache(n_layer), KVCache(n_layer)
        self.plan = plan

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
        index = np.asarray(values(index), dtype=np.int64)
        self._index = index if self._index is None else self._index[index]
        if self.src_key_padding_mask is not None:
            self.src_key_padding_mask = self.src_key_padding_mask[index]   # (B', S)
        self.self_cache.reorder(index)
        self.cross_cache.reorder(index)


# ------------------------------------------------------------------------------------------
# sampling
# ------------------------------------------------------------------------------------------

def _refuse_nonfinite(bad_rows):
    """Sampling from NaN probabilities gives garbage (torch's sampler refuses them too)."""
    rows = np.flatnonzero(bad_rows)
    raise ValueError(f"sampling: the probabilities of row {int(rows[0])} contain NaN or inf "
                     f"({len(rows)} of {len(bad_rows)} rows): the model's logits are not "
                     f"finite (are its weights NaN?)")


def check_sampling(where, temperature, top_k, top_p):
    """The sampling arguments of generate()/sample_next, each checked by name: temperature a
    number >= 0 (0: greedy), top_k None or an int >= 1, top_p None or a number in (0, 1]."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.number)) \
            or not temperature >= 0:
        raise ValueError(f"{where}: temperature must be a number >= 0 (0 is greedy), got "
                         f"{temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                              or top_k < 1):
        raise ValueError(f"{where}: top_k must be None or an int >= 1, got {top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(
            top_p, (int, float, np.number)) or not 0 < top_p <= 1):
        raise ValueError(f"{where}: top_p must be None or a number in (0, 1], got {top_p!r}")


def sample_next(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """Draw one token id per row from logits (B, V); returns an int64 array (B,).

    temperature 0 is greedy (argmax). top_k keeps the k largest logits; top_p (nucleus) keeps
    the smallest set of tokens whose probabilities sum to >= top_p. The draw uses `rng`
    (default: tinygradx's global generator, so `tgx.manual_seed` makes sampling repeatable).
    """
    check_sampling("sample_next", temperature, top_k, top_p)
    z = np.asarray(values(logits), dtype=np.float64)
    if np.isnan(z).any():                 # argmax and the draw would pick a token regardless
        _refuse_nonfinite(np.isnan(z).any(axis=-1))
    if temperature == 0:
        return z.argmax(axis=-1).astype(np.int64)
    rng = tgx.default_rng() if rng is None else rng
    z = z / temperature
    if top_k is not None:
        k = min(int(top_k), z.shape[-1])
        kth = np.sort(z, axis=-1)[:, -k][:, None]            # (B, 1) the k-th largest logit
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)                        # softmax: (B, V)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(-p, axis=-1, kind="stable")        # most probable first
        sorted_p = np.take_along_axis(p, order, axis=-1)
        # keep a token if the mass strictly before it is < top_p (the first always stays)
        keep_sorted = np.cumsum(sorted_p, axis=-1) - sorted_p < top_p
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        p = np.where(keep, p, 0.0)
        p /= p.sum(axis=-1, keepdims=True)
    if not np.isfinite(p).all():          # e.g. logits of +inf, or every one -inf
        _refuse_nonfinite(~np.isfinite(p).all(axis=-1))
    # inverse-CDF draw: the first index whose cumulative probability exceeds u ~ U[0, 1)
    u = rng.random((p.shape[0], 1))                           # (B, 1)
    ids = (np.cumsum(p, axis=-1) <= u).sum(axis=-1)
    return np.minimum(ids, p.shape[-1] - 1).astype(np.int64)


# ------------------------------------------------------------------------------------------
# masks
# ------------------------------------------------------------------------------------------

def pad_mask(tokens, pad_id):
    """True where tokens (B, T) equal pad_id: the key_padding_mask convention of the models."""
    return values(tokens) == pad_id                          # (B, T) bool


def as_ids(x):
    """Token ids as an int64 Tensor (accepts Tensors, arrays and nested lists)."""
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=np.int64))


def token_ids(where, name, x, ndim=2, empty_rows=False):
    """Token ids (B, T) checked by name: integers (as torch's embedding takes them), `ndim`
    dims, at least one position per row unless `empty_rows`; an int64 Tensor (a Tensor of
    int64 ids comes back as it is). B may be 0 (a batch of no sequences)."""
    a = x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"
                                          and not isinstance(x, Tensor)):
        raise ValueError(f"{where}: {name} must hold integer token ids, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{where}: {name} must be token ids of shape (B, T), got shape "
                         f"{a.shape}")
    if not empty_rows and a.shape[-1] == 0:
        raise ValueError(f"{where}: {name} has no positions (shape {a.shape}); each sequence "
                         f"needs at least one token")
    if isinstance(x, Tensor) and a.dtype == np.int64:
        return x
    return Tensor(a.astype(np.int64))
