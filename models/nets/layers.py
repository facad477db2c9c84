"""Pieces both Transformers share: the KV cache, next-token sampling, masks, modules on arrays. (The
initialisers are PyTorch's, in tinygradx.nn.init.)

References: top-k sampling (Fan et al. 2018, "Hierarchical Neural Story Generation"), nucleus
(top-p) sampling (Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"). Only
tinygradx's public API is used, as a user's model code would.
"""
from __future__ import annotations


import numpy as np

import tinygradx as tgx
from tinygradx import Tensor, nn
from tinygradx.ops import inference


# ------------------------------------------------------------------------------------------
# Modules on arrays (the models' no-grad fast paths)
# ------------------------------------------------------------------------------------------

def linear_on_array(m, x):
    """A Linear module's forward on an array: inference.linear on its parameters' arrays."""
    return inference.linear(x, m.weight._data, None if m.bias is None else m.bias._data)


def layer_norm_on_array(m, x):
    """A LayerNorm module (over the last dim) on an array: inference.layer_norm."""
    return inference.layer_norm(x, None if m.weight is None else m.weight._data,
                                None if m.bias is None else m.bias._data, m.eps)


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
        self.proj = None       # a model's fused [W^Q W^K W^V] (weight, bias), inference only

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
        a = qkv._data if isinstance(qkv, Tensor) else np.asarray(qkv)
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
        """Append the new positions' k, v (B, h, T, d_k) and return all of them (B, h, t+T, d_k)."""
        self._refuse("per-head K, V (update)")
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
        index = np.asarray(index._data if isinstance(index, Tensor) else index, dtype=np.int64)
        for layer in self.layers:
            layer.reorder(index)


# ------------------------------------------------------------------------------------------
# sampling
# ------------------------------------------------------------------------------------------

def _refuse_nonfinite(bad_rows):
    """Sampling from NaN probabilities gives garbage (torch's sampler refuses them too)."""
    rows = np.flatnonzero(bad_rows)
    raise ValueError(f"sampling: the probabilities of row {int(rows[0])} contain NaN or inf "
                     f"({len(rows)} of {len(bad_rows)} rows): the model's logits are not "
                     f"finite (are its weights NaN?)")


def sample_next(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """Draw one token id per row from logits (B, V); returns an int64 array (B,).

    temperature 0 is greedy (argmax). top_k keeps the k largest logits; top_p (nucleus) keeps
    the smallest set of tokens whose probabilities sum to >= top_p. The draw uses `rng`
    (default: tinygradx's global generator, so `tgx.manual_seed` makes sampling repeatable).
    """
    z = np.asarray(logits._data if isinstance(logits, Tensor) else logits, dtype=np.float64)
    if np.isnan(z).any():                 # argmax and the draw would pick a token regardless
        _refuse_nonfinite(np.isnan(z).any(axis=-1))
    if temperature == 0:
        return z.argmax(axis=-1).astype(np.int64)
    if temperature < 0:
        raise ValueError(f"sample_next: temperature must be >= 0, got {temperature}")
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
    t = tokens._data if isinstance(tokens, Tensor) else np.asarray(tokens)
    return t == pad_id                                         # (B, T) bool


def as_ids(x):
    """Token ids as an int64 Tensor (accepts Tensors, arrays and nested lists)."""
    if isinstance(x, Tensor):
        return x
    return Tensor(np.asarray(x, dtype=np.int64))
