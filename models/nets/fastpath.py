"""The models' no-grad fast path: one place that decides whether a model may run on arrays, and
builds that runner.

A generated token is small work: one row through ~45 ops and ~50 module calls, where what a
call costs the engine (the graph node, the Tensor around each result, the module frame, ~2-3 us
together) outweighs the arithmetic. So generation and decoding may run a model's layers on its
parameters' arrays through `tinygradx.inference`, whose functions ARE the ops' forward code:
the same numbers, without a node, Tensor or module call per op.

The modules never ask for it: their forwards are the formulas, with no branch on grad mode.
The drivers do, once per call: `GPT.generate` (a runner for its steps), `EncoderDecoder.encode`
(the encoder) and `init_decode_state` (the decoder's steps) call

    run = plan(model, stock)          # a runner, or None: then the modules run

`plan` says yes only while `inference.fast_path()` holds (no gradients, no trace, profile or
anomaly detection watching the ops) and every module the model's forward would call is of the
stock class this file restates, with no instance forward, no hook, no active dropout and no
attention weights recorded (a swapped-in LoRA Linear or an RMSNorm takes the module path).
This module sits below gpt.py and transformer.py, so it cannot import their classes: the caller
hands them in `stock` ({"GPT": GPT, "Block": Block, ...}). The arrays are read once, when the
runner is built, through one accessor (`array`), on the public API.

The runners give the module path's numbers: GPT's logits bit for bit (tests/fast/
test_inference.py); the encoder-decoder's layers take Q, K, V from one GEMM of the stacked
[W^Q W^K W^V] and attention as one fused node, so they agree with its modules (whose attention
is op by op) to rounding, tested to 1e-10 in float64 (tests/models/test_decoding.py).

Shapes: B batch, T or n new positions, t positions so far, C = d = d_model, nh = h heads,
hs = d_k = C // nh, S source length, V vocabulary.
"""
from __future__ import annotations

import numpy as np

import tinygradx.functional as F
from tinygradx import OpError, Tensor, nn
from tinygradx import inference
# the array functions, read once: the public path forwards every attribute read (~0.3 us),
# and a generated token would read ~35
from tinygradx.inference import attention, gelu, layer_norm, linear, relu

from .layers import padding_mask, plain


def array(t):
    """The numpy array of a parameter or activation (shared, not copied), or None."""
    return None if t is None else t.detach().numpy()


def plan(model, stock):
    """The runner of `model` on arrays, or None when its modules must run.

    `model` is a GPT (the runner is generate()'s step: ids (B, T) and a KVCache -> logits of
    the last position (B, V)), an Encoder (called as Encoder.forward) or a Decoder (called as
    Decoder.forward with a DecodeState as cache). `stock` maps class names to the classes of
    the model's own file that this module restates. Checked once per generate / encode /
    decode call, never inside a forward."""
    if not inference.fast_path():
        return None
    for name, runner, ok in (("GPT", GPTRunner, _gpt_ok), ("Encoder", EncoderRunner, _layers_ok),
                             ("Decoder", DecoderRunner, _layers_ok)):
        if name in stock and type(model) is stock[name]:
            return runner(model) if ok(model, stock) else None
    return None


def _inactive(dropout):
    return dropout.p == 0 or not dropout.training


# ------------------------------------------------------------------------------------------
# modules on arrays, their arrays read once
# ------------------------------------------------------------------------------------------

class _Linear:
    """x W^T + b of a Linear, or of several stacked into one GEMM (their outputs side by side)."""

    def __init__(self, *modules):
        weights = [array(m.weight) for m in modules]             # (out_i, in) each
        biases = [array(m.bias) for m in modules]                # (out_i,) or None each
        one = len(modules) == 1
        self.weight = weights[0] if one else np.concatenate(weights)   # (out, in)
        self.bias = biases[0] if one or biases[0] is None else np.concatenate(biases)   # (out,)

    def __call__(self, x):
        return linear(x, self.weight, self.bias)


class _LayerNorm:
    """A LayerNorm over the last dim."""

    def __init__(self, m):
        self.weight, self.bias, self.eps = array(m.weight), array(m.bias), m.eps

    def __call__(self, x):
        return layer_norm(x, self.weight, self.bias, self.eps)


def _add(fresh, x):
    """fresh + x, written into `fresh` (an array this layer made): the residual add."""
    fresh += x
    return fresh


# ------------------------------------------------------------------------------------------
# GPT (generate)
# ------------------------------------------------------------------------------------------

def _gpt_ok(model, stock):
    """GPT-2's stock Pre-LN blocks with packed attention and the GELU MLP, LayerNorms,
    learned positions, and every module of its stock class (~15 us)."""
    c = model.config
    if not (c.norm_first and c.norm == "layernorm" and c.mlp == "gelu" and c.pos == "learned"):
        return False
    t = model.transformer
    mods = [(t.wte, nn.Embedding), (t.wpe, nn.Embedding), (t.drop, nn.Dropout),
            (t.ln_f, nn.LayerNorm), (model.lm_head, nn.Linear)]
    for b in t.h:
        a, m = b.attn, b.mlp
        if not a.packed or a.record_attn:
            return False
        mods += [(b, stock["Block"]), (b.ln_1, nn.LayerNorm), (b.ln_2, nn.LayerNorm),
                 (a, stock["CausalSelfAttention"]), (m, stock["MLP"]), (m.gelu, nn.GELU)]
        mods += [(x, nn.Linear) for x in (a.c_attn, a.c_proj, m.c_fc, m.c_proj)]
        mods += [(x, nn.Dropout) for x in (a.attn_dropout, a.resid_dropout, m.dropout)]
    return all(plain(m, cls) and (cls is not nn.Dropout or _inactive(m))
               and (cls is not nn.LayerNorm or len(m.normalized_shape) == 1)
               for m, cls in mods)


class _GPTBlock:
    """Block.forward of a stock Pre-LN block on arrays, with the KV cache:
        u = x + MHA(LN_1(x)),   x' = u + MLP(LN_2(u))."""

    def __init__(self, block):
        attn, mlp = block.attn, block.mlp
        self.n_head = attn.n_head
        self.ln_1, self.ln_2 = _LayerNorm(block.ln_1), _LayerNorm(block.ln_2)
        self.c_attn, self.attn_proj = _Linear(attn.c_attn), _Linear(attn.c_proj)
        self.c_fc, self.mlp_proj = _Linear(mlp.c_fc), _Linear(mlp.c_proj)
        self.approximate = mlp.gelu.approximate

    def __call__(self, x, cache):
        B, T, C = x.shape                                        # x: (B, T, C) array
        nh = self.n_head
        qkv = self.c_attn(self.ln_1(x))                          # [Q K V]: (B, T, 3C)
        qkv = qkv.reshape(B, T, 3, nh, C // nh)                  # (B, T, 3, nh, hs)
        q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (B, nh, T, hs)
        k, v = cache.append_heads(k, v, arrays=True)             # (B, nh, t, hs)
        # the T new queries are the last T of the t positions: bottom-right mask
        mask = F.causal_mask(T, k.shape[2], q.dtype) if T > 1 else None
        y = attention(q, k, v, mask)                             # (B, nh, T, hs)
        y = y.transpose(0, 2, 1, 3).reshape(B, T, C)             # Concat(heads): (B, T, C)
        x = x + self.attn_proj(y)                                # u = x + MHA(LN(x))
        h = gelu(self.c_fc(self.ln_2(x)), self.approximate)      # phi(LN(u) W_1 + b_1)
        return x + self.mlp_proj(h)                              # u + MLP(LN(u)): (B, T, C)


class GPTRunner:
    """generate()'s step on arrays: ids (B, T) and a KVCache -> logits of the last position
    (B, V), as GPT._features then lm_head compute them."""

    def __init__(self, model):
        t = model.transformer
        self.wte, self.wpe = array(t.wte.weight), array(t.wpe.weight)   # (V, C), (block, C)
        self.blocks = [_GPTBlock(b) for b in t.h]
        self.ln_f, self.lm_head = _LayerNorm(t.ln_f), _Linear(model.lm_head)

    def __call__(self, ids, cache):
        T = ids.shape[1]
        past = cache.length                  # generate() keeps past + T <= block_size
        if past == 0 and ids.size and (ids.min() < 0 or ids.max() >= len(self.wte)):
            bad = ids[(ids < 0) | (ids >= len(self.wte))].ravel()[0]   # a prompt's id
            raise OpError(f"GPT.generate: token id {bad} is out of range for the vocabulary "
                          f"of {len(self.wte)} ids (transformer.wte)")
        x = self.wte.take(ids, axis=0) + self.wpe[past:past + T]  # X = Emb + P: (B, T, C)
        for block, layer in zip(self.blocks, cache.layers, strict=True):
            x = block(x, layer)
        x = self.ln_f(x)                                         # (B, T, C)
        if T > 1:
            x = x[:, -1:]                                        # only the last position
        return self.lm_head(x)[:, 0]                             # its logits: (B, V)


# ------------------------------------------------------------------------------------------
# the encoder-decoder (encode, decode_step)
# ------------------------------------------------------------------------------------------

def _mha_ok(mha):
    """No attention dropout, the module and its four projections stock, the Q, K, V ones with
    biases (they are read stacked into one GEMM)."""
    lins = (mha.w_q, mha.w_k, mha.w_v, mha.w_o)
    return ((not mha.training or mha.dropout == 0.0) and plain(mha, nn.MultiHeadAttention)
            and all(plain(lin, nn.Linear) for lin in lins)
            and all(lin.bias is not None for lin in lins[:3]))


def _layer_ok(layer, stock):
    """An EncoderLayer or DecoderLayer whose forward calls only stock modules (LayerNorm over
    one dim, no dropout active) and records no attention weights."""
    kind = type(layer)
    if kind not in (stock["EncoderLayer"], stock["DecoderLayer"]) or not plain(layer, kind):
        return False
    decoder = kind is stock["DecoderLayer"]
    attns = [layer.self_attn] + ([layer.cross_attn] if decoder else [])
    norms = [layer.norm1, layer.norm2] + ([layer.norm3] if decoder else [])
    ff = layer.ff
    mods = [(ff, stock["PositionwiseFeedForward"]), (ff.w_1, nn.Linear), (ff.w_2, nn.Linear),
            (layer.dropout, nn.Dropout), (ff.dropout, nn.Dropout)]
    mods += [(n, nn.LayerNorm) for n in norms]
    return (not layer.record_attn and all(_mha_ok(a) for a in attns)
            and all(plain(m, cls) for m, cls in mods)
            and all(len(n.normalized_shape) == 1 for n in norms)
            and _inactive(layer.dropout) and _inactive(ff.dropout))


def _layers_ok(stack, stock):
    return plain(stack, type(stack)) and all(_layer_ok(layer, stock) for layer in stack.layers)


class _FeedForward:
    """PositionwiseFeedForward: ReLU(x W_1 + b_1) W_2 + b_2 (its dropout inactive)."""

    def __init__(self, ff):
        self.w_1, self.w_2 = _Linear(ff.w_1), _Linear(ff.w_2)

    def __call__(self, x):
        return self.w_2(relu(self.w_1(x), inplace=True))         # (B, n, d_ff) -> (B, n, d)


class _Attention:
    """nn.MultiHeadAttention on arrays: the projections stacked into one GEMM ([Q K V] for
    self-attention, [K V] of H for cross-attention), attention as the fused op's forward,
    Concat(heads) W^O + b^O."""

    def __init__(self, mha, cross=False):
        self.h, self.w_o = mha.num_heads, _Linear(mha.w_o)
        if cross:
            self.q, self.kv = _Linear(mha.w_q), _Linear(mha.w_k, mha.w_v)   # (d, d), (2d, d)
        else:
            self.qkv = _Linear(mha.w_q, mha.w_k, mha.w_v)         # (3d, d), (3d,)

    def merge(self, z):
        """Concat(head_1..head_h) W^O + b^O: z (B, h, n, d_k) -> (B, n, d)."""
        B, h, n, dk = z.shape
        return self.w_o(z.transpose(0, 2, 1, 3).reshape(B, n, h * dk))   # (B, n, d)

    def self_attention(self, x, mask):
        """mha(x, x, x): all n positions attend to each other under the additive mask
        (B, 1, 1, n) or None; the heads laid out as one contiguous copy (a batched matmul over
        strided heads misses BLAS). x (B, n, d) -> (B, n, d)."""
        B, n, d = x.shape
        qkv = self.qkv(x).reshape(B, n, 3, self.h, d // self.h)  # (B, n, 3, h, d_k)
        q, k, v = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))  # 3 x (B, h, n, d_k)
        return self.merge(attention(q, k, v, mask))              # (B, n, d)

    def cached_self_attention(self, x, cache):
        """The decoder's self-attention of the n new positions x (B, n, d): K and V written
        into the cache's buffers (LayerCache.append_heads), the new queries against every
        position, the causal mask aligned bottom-right (none for one new position)."""
        B, n, d = x.shape
        qkv = self.qkv(x).reshape(B, n, 3, self.h, d // self.h)  # (B, n, 3, h, d_k)
        q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (B, h, n, d_k) views
        k, v = cache.append_heads(k, v, arrays=True)             # (B, h, t, d_k)
        mask = F.causal_mask(n, k.shape[2], x.dtype) if n > 1 else None
        return self.merge(attention(q, k, v, mask))              # (B, n, d)

    def cross_attention(self, x, cache, memory, src_pad):
        """The decoder's cross-attention of x (B, n, d), K, V of H projected on the first
        call and kept in cache.static."""
        if cache.static is None:
            cache.static = self.static_kv(memory, src_pad, x.dtype)
        k, v, mask = cache.static                                # 2 x (B, h, S, d_k), M
        B, n, d = x.shape
        q = self.q(x).reshape(B, n, self.h, d // self.h).transpose(0, 2, 1, 3)  # (B, h, n, d_k)
        return self.merge(attention(q, k, v, mask))              # (B, n, d)

    def static_kv(self, memory, key_padding_mask, dtype):
        """K = H W^K, V = H W^V as contiguous (B, h, S, d_k) arrays (every step's batched
        matmul then runs on BLAS) from one GEMM of the stacked [W^K W^V], and the additive
        padding mask M (B, 1, 1, S) or None. With padding the GEMM runs on the real positions
        only and its rows are scattered straight into the head layout; the padded ones stay
        zeros, which M hides."""
        h, H = self.h, array(memory)                             # H: (B, S, d)
        B, S, d = H.shape
        mask = padding_mask(key_padding_mask, dtype)
        if mask is None:
            kv = self.kv(H)                                      # [K V]: (B, S, 2d)
            kv = kv.reshape(B, S, 2, h, d // h).transpose(2, 0, 3, 1, 4)  # (2, B, h, S, d_k)
            k, v = np.ascontiguousarray(kv)
        else:
            bi, si = np.nonzero(mask[:, 0, 0, :] == 0)           # the N real positions
            kv = self.kv(H[bi, si])                              # [K V]: (N, 2d)
            k, v = heads = np.zeros((2, B, h, S, d // h), kv.dtype)  # zeros at the padding
            # (2, B, h, S, d_k)[:, bi, :, si] selects (N, 2, h, d_k): each real row's K, V heads
            heads[:, bi, :, si] = kv.reshape(-1, 2, h, d // h)   # (N, 2, h, d_k)
        return k, v, mask


class _EncoderLayer:
    """EncoderLayer.forward: Post-LN LN(x + MHA(x)), then LN(u + FFN(u)); Pre-LN
    x + MHA(LN(x)), then u + FFN(LN(u))."""

    def __init__(self, layer):
        self.norm_first, self.attn = layer.norm_first, _Attention(layer.self_attn)
        self.norm1, self.norm2 = _LayerNorm(layer.norm1), _LayerNorm(layer.norm2)
        self.ff = _FeedForward(layer.ff)

    def __call__(self, x, mask):
        sa = self.attn.self_attention
        if self.norm_first:
            x = _add(sa(self.norm1(x), mask), x)
            return _add(self.ff(self.norm2(x)), x)
        x = self.norm1(_add(sa(x, mask), x))
        return self.norm2(_add(self.ff(x), x))                   # (B, n, d)


class _DecoderLayer:
    """DecoderLayer.forward for the n new target positions of a decode step, `cache` the
    layer's {"self", "cross"} caches; memory (Tensor) is read on the first step only."""

    def __init__(self, layer):
        self.norm_first = layer.norm_first
        self.self_attn = _Attention(layer.self_attn)
        self.cross_attn = _Attention(layer.cross_attn, cross=True)
        self.norm1, self.norm2, self.norm3 = (_LayerNorm(n) for n in
                                              (layer.norm1, layer.norm2, layer.norm3))
        self.ff = _FeedForward(layer.ff)

    def __call__(self, x, memory, src_pad, cache):
        sa = lambda y: self.self_attn.cached_self_attention(y, cache["self"])      # noqa: E731
        ca = lambda y: self.cross_attn.cross_attention(y, cache["cross"], memory, src_pad)  # noqa: E731
        if self.norm_first:
            x = _add(sa(self.norm1(x)), x)
            x = _add(ca(self.norm2(x)), x)
            return _add(self.ff(self.norm3(x)), x)
        x = self.norm1(_add(sa(x), x))
        x = self.norm2(_add(ca(x), x))
        return self.norm3(_add(self.ff(x), x))                   # (B, n, d)


class EncoderRunner:
    """Encoder.forward on arrays (its final `norm` runs as a module)."""

    def __init__(self, encoder):
        self.layers, self.norm = [_EncoderLayer(layer) for layer in encoder.layers], encoder.norm

    def __call__(self, x, src_key_padding_mask=None):
        mask = padding_mask(src_key_padding_mask, x.dtype)      # (B, 1, 1, S) or None
        h = array(x)                                             # (B, S, d)
        for layer in self.layers:
            h = layer(h, mask)
        return self.norm(Tensor(h))                              # H: (B, S, d)


class DecoderRunner:
    """Decoder.forward of a decode step on arrays, `cache` the DecodeState (fresh when
    planned: its self-attention K, V go into append_heads buffers)."""

    def __init__(self, decoder):
        self.layers, self.norm = [_DecoderLayer(layer) for layer in decoder.layers], decoder.norm

    def __call__(self, x, memory, src_key_padding_mask=None, tgt_key_padding_mask=None,
                 cache=None):
        if tgt_key_padding_mask is not None or cache is None:
            raise ValueError("fastpath: the decoder's runner takes decode steps (a DecodeState, "
                             "no target padding); call the Decoder module otherwise")
        h = array(x)                                             # (B, n, d)
        for i, layer in enumerate(self.layers):
            h = layer(h, memory, src_key_padding_mask, cache[i])
        return self.norm(Tensor(h))                              # (B, n, d)
