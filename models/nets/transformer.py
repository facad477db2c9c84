"""The original encoder-decoder Transformer, on tinygradx.

References:
1) Vaswani et al. 2017, "Attention Is All You Need": the architecture, sinusoidal positions,
   X = sqrt(d_model) * Emb + PE, Post-LN sublayers y = LayerNorm(x + Dropout(Sublayer(x))),
   ReLU FFN with d_ff = 4 d_model, the base model's sizes (Table 3), shared embeddings.
2) Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture": Pre-LN
   (`norm_first=True`) with a final LayerNorm after each stack.
3) Rush et al., "The Annotated Transformer" (harvardnlp): the decomposition and names
   (EncoderDecoder, Embeddings, PositionalEncoding, EncoderLayer, DecoderLayer, Generator,
   make_model) and Xavier-uniform initialisation. Unlike its code, the default here really is
   Post-LN, with torch's LayerNorm (biased variance, eps inside the square root); its own form
   (unbiased std, eps outside) is `layer_norm="annotated"` (layers.AnnotatedLayerNorm).

The formulas are the ones derived step by step in docs/walkthrough.md (input representation,
scaled dot-product and multi-head attention, Add & Norm, FFN); each appears as a line of code below.
Shapes: B batch, S source length, T target length, d = d_model, h heads, d_k = d / h,
Vs / Vt source / target vocabulary sizes. Masks are bool with True = padding (a key not to attend).

Decoding API (for greedy and beam search; see `EncoderDecoder.decode_step`):
    memory = model.encode(src, src_pad)                       # H: (B, S, d)
    state = model.init_decode_state(memory, src_pad)          # per-layer KV caches
    logp = model.decode_step(ys[:, -1:], state)               # (B, Vt), state advances by 1
    state.reorder(beam_index)                                 # beam search: keep/duplicate rows
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.nn import init

from . import fastpath
from .layers import DecodeState, as_ids, incremental_attention, layer_norm, plain


class Embeddings(nn.Embedding):
    """sqrt(d_model) * X_embedding: token vectors scaled up so that at initialisation they are on
    the same scale as PE in the input representation X = sqrt(d_model) * Emb + PE, provided the
    table starts with components of order 1/sqrt(d_model) (an N(0, 1/d_model) init, or Xavier with
    V close to d_model; see docs/walkthrough.md section 1). The table is `.weight` (V, d_model)."""

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx) * math.sqrt(self.embedding_dim)


def sinusoidal_table(max_len, d_model):
    """PE_{pos,2i} = sin(pos / 10000^{2i/d_model}),  PE_{pos,2i+1} = cos(pos / 10000^{2i/d_model})
    (the sinusoidal positional encoding added to the scaled embeddings), as a (max_len, d_model)
    float64 array."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]          # (max_len, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)            # 2i: (ceil(d/2),)
    angle = pos / 10000.0 ** (two_i / d_model)                    # (max_len, ceil(d/2))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)                                   # even columns 2i
    pe[:, 1::2] = np.cos(angle[:, :d_model // 2])                 # odd columns 2i+1
    return pe                                                     # (max_len, d_model)


class PositionalEncoding(nn.Module):
    """X = sqrt(d_model) * X_embedding + PE, followed by dropout (Vaswani et al. section 5.4).

    The table `pe` (max_len, d_model) is a non-persistent buffer: it is a function of the sizes,
    so it is not stored in state_dict (checkpoints stay small and max_len may change).
    """

    def __init__(self, d_model, dropout, max_len=5000):
        self.register_buffer("pe", Tensor(sinusoidal_table(max_len, d_model).astype(np.float32)),
                             persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, start=0):
        T = x.shape[1]
        if start + T > self.pe.shape[0]:
            raise ValueError(f"PositionalEncoding: positions up to {start + T} asked for, the "
                             f"table has max_len={self.pe.shape[0]} rows")
        pe = self.pe[start:start + T].to(x.dtype)                 # (T, d)
        return self.dropout(x + pe)                               # (B, T, d)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, W_1: d_model -> d_ff, W_2: d_ff -> d_model, applied
    to every position alike (dropout on the hidden layer, as the Annotated Transformer)."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(F.relu(self.w_1(x))))       # (B, T, d_ff) -> (B, T, d)


class EncoderLayer(nn.Module):
    """One encoder block (Figure 1 left), Post-LN by default:
        Y_attn = LayerNorm(X + Dropout(MHA(X)))
        Y_next = LayerNorm(Y_attn + Dropout(FFN(Y_attn)))
    norm_first=True gives Pre-LN: Y_attn = X + Dropout(MHA(LayerNorm(X))), and likewise for FFN.
    Set record_attn = True to keep the last A (B, h, S, S) in `attn_weights`.
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1, norm_first=False, ln="torch"):
        self.norm_first = norm_first
        self.self_attn = nn.MultiHeadAttention(d_model, h, dropout=dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = layer_norm(d_model, ln)
        self.norm2 = layer_norm(d_model, ln)
        self.dropout = nn.Dropout(dropout)
        self.record_attn = False
        self.attn_weights = None

    def _sa(self, x, src_key_padding_mask):
        out, a = self.self_attn(x, x, x, key_padding_mask=src_key_padding_mask,
                                need_weights=self.record_attn, average_attn_weights=False)
        if self.record_attn:
            self.attn_weights = a.detach()
        return out

    def forward(self, x, src_key_padding_mask=None):
        if self.norm_first:
            x = x + self.dropout(self._sa(self.norm1(x), src_key_padding_mask))
            x = x + self.dropout(self.ff(self.norm2(x)))
        else:
            x = self.norm1(x + self.dropout(self._sa(x, src_key_padding_mask)))
            x = self.norm2(x + self.dropout(self.ff(x)))
        return x                                                  # (B, S, d)


class DecoderLayer(nn.Module):
    """One decoder block (Figure 1 right), Post-LN by default:
        Y_1 = LayerNorm(X + Dropout(CausalMHA(X)))         A = Softmax(QK^T/sqrt(d_k) + M)
        Y_2 = LayerNorm(Y_1 + Dropout(MHA(Y_1, H, H)))     Q from the decoder, K and V from H
        Y_3 = LayerNorm(Y_2 + Dropout(FFN(Y_2)))
    norm_first=True gives Pre-LN (LayerNorm on each sublayer's input, not on the sum).
    With a LayerCache (`cache`) only the new positions are computed (see incremental_attention).
    Set record_attn = True to keep the last weights in `self_attn_weights` and
    `cross_attn_weights` (B, h, T, T) and (B, h, T, S).
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1, norm_first=False, ln="torch"):
        self.norm_first = norm_first
        self.self_attn = nn.MultiHeadAttention(d_model, h, dropout=dropout)
        self.cross_attn = nn.MultiHeadAttention(d_model, h, dropout=dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = layer_norm(d_model, ln)
        self.norm2 = layer_norm(d_model, ln)
        self.norm3 = layer_norm(d_model, ln)
        self.dropout = nn.Dropout(dropout)
        self.record_attn = False
        self.self_attn_weights = self.cross_attn_weights = None

    def _sa(self, x, tgt_key_padding_mask, cache):
        if cache is None:
            out, a = self.self_attn(x, x, x, key_padding_mask=tgt_key_padding_mask,
                                    is_causal=True, need_weights=self.record_attn,
                                    average_attn_weights=False)
        else:
            out, a = incremental_attention(self.self_attn, x, x, cache["self"],
                                           key_padding_mask=tgt_key_padding_mask,
                                           need_weights=self.record_attn)
        if self.record_attn:
            self.self_attn_weights = a.detach()
        return out

    def _ca(self, x, memory, src_key_padding_mask, cache):
        if cache is None:
            out, a = self.cross_attn(x, memory, memory, key_padding_mask=src_key_padding_mask,
                                     need_weights=self.record_attn, average_attn_weights=False)
        else:
            out, a = incremental_attention(self.cross_attn, x, memory, cache["cross"],
                                           static=True, key_padding_mask=src_key_padding_mask,
                                           need_weights=self.record_attn)
        if self.record_attn:
            self.cross_attn_weights = a.detach()
        return out

    def forward(self, x, memory, src_key_padding_mask=None, tgt_key_padding_mask=None,
                cache=None):
        m, s_pad, t_pad = memory, src_key_padding_mask, tgt_key_padding_mask
        if self.norm_first:
            x = x + self.dropout(self._sa(self.norm1(x), t_pad, cache))
            x = x + self.dropout(self._ca(self.norm2(x), m, s_pad, cache))
            x = x + self.dropout(self.ff(self.norm3(x)))
        else:
            x = self.norm1(x + self.dropout(self._sa(x, t_pad, cache)))
            x = self.norm2(x + self.dropout(self._ca(x, m, s_pad, cache)))
            x = self.norm3(x + self.dropout(self.ff(x)))
        return x                                                  # (B, T, d)


class Encoder(nn.Module):
    """N encoder layers; H = their output. Pre-LN needs a final LayerNorm (`norm`), since its
    residual stream is never normalised; for Post-LN `norm` is an Identity."""

    def __init__(self, N, d_model, h, d_ff, dropout, norm_first, ln="torch"):
        self.layers = nn.ModuleList([EncoderLayer(d_model, h, d_ff, dropout, norm_first, ln)
                                     for _ in range(N)])
        self.norm = layer_norm(d_model, ln) if norm_first else nn.Identity()

    def forward(self, x, src_key_padding_mask=None):
        for layer in self.layers:
            x = layer(x, src_key_padding_mask)
        return self.norm(x)                                       # H: (B, S, d)


class Decoder(nn.Module):
    """N decoder layers, each reading the encoder output H; final `norm` as in Encoder."""

    def __init__(self, N, d_model, h, d_ff, dropout, norm_first, ln="torch"):
        self.layers = nn.ModuleList([DecoderLayer(d_model, h, d_ff, dropout, norm_first, ln)
                                     for _ in range(N)])
        self.norm = layer_norm(d_model, ln) if norm_first else nn.Identity()

    def forward(self, x, memory, src_key_padding_mask=None, tgt_key_padding_mask=None,
                cache=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, src_key_padding_mask, tgt_key_padding_mask,
                      None if cache is None else cache[i])
        return self.norm(x)                                       # (B, T, d)


class Generator(nn.Linear):
    """log Softmax(x W_G^T + b): the linear map to the target vocabulary and the log of the
    softmax that turns logits into next-token probabilities. A Linear subclass, so its
    parameters are `generator.weight` (Vt, d) and `generator.bias` (Vt,)."""

    def forward(self, x):
        return F.log_softmax(super().forward(x), dim=-1)          # (B, T, Vt)


@dataclass
class TransformerConfig:
    """Sizes and switches; the defaults are the base model of Vaswani et al. (Table 3)."""
    src_vocab: int
    tgt_vocab: int
    N: int = 6                    # layers in the encoder and in the decoder
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8
    dropout: float = 0.1
    norm_first: bool = False      # False: Post-LN (Vaswani); True: Pre-LN + final LayerNorms
    share_embeddings: bool = False  # src_embed and tgt_embed are one table (needs one vocab)
    tie_generator: bool = False   # generator.weight is tgt_embed.weight
    generator_bias: bool = True
    max_len: int = 5000           # rows of the PE table
    layer_norm: str = "torch"     # "annotated": the Annotated Transformer's LayerNorm form


class EncoderDecoder(nn.Module):
    """The Transformer of Vaswani et al. (Figure 1): P(y | x) = Generator(Decoder(Y, Encoder(X))).

    Input X = sqrt(d_model) * Emb + PE (then dropout) for both source and target. The encoder
    maps the source to H (B, S, d); the decoder reads the shifted target with causal
    self-attention and H with cross-attention; the generator gives log-probabilities.

    Initialisation: Xavier-uniform for every matrix (embeddings included), as the Annotated
    Transformer; zero biases (PyTorch's nn.MultiheadAttention does the same for its
    projections); LayerNorm gains 1.
    """

    def __init__(self, config):
        c = config
        self.config = c
        self.src_embed = Embeddings(c.src_vocab, c.d_model)
        self.tgt_embed = Embeddings(c.tgt_vocab, c.d_model)
        self.pos_encoding = PositionalEncoding(c.d_model, c.dropout, c.max_len)
        self.encoder = Encoder(c.N, c.d_model, c.h, c.d_ff, c.dropout, c.norm_first, c.layer_norm)
        self.decoder = Decoder(c.N, c.d_model, c.h, c.d_ff, c.dropout, c.norm_first, c.layer_norm)
        self.generator = Generator(c.d_model, c.tgt_vocab, bias=c.generator_bias)
        if c.share_embeddings:
            if c.src_vocab != c.tgt_vocab:
                raise ValueError(f"share_embeddings needs one vocabulary, got src_vocab="
                                 f"{c.src_vocab} and tgt_vocab={c.tgt_vocab}")
            self.tgt_embed.weight = self.src_embed.weight     # one Parameter, listed once
        if c.tie_generator:
            self.generator.weight = self.tgt_embed.weight     # (Vt, d) both ways round
        for name, p in self.named_parameters():
            if p.ndim == 2:
                init.xavier_uniform_(p)
            elif name.endswith(".bias"):
                init.zeros_(p)

    def encode(self, src, src_key_padding_mask=None):
        """src ids (B, S) -> H (B, S, d). Without gradients and with stock layers the encoder
        runs on arrays (planned here, once per call: models/nets/fastpath.py)."""
        encoder = fastpath.plan(self.encoder, STOCK) or self.encoder
        return encoder(self.embed_source(src), src_key_padding_mask)   # H: (B, S, d)

    def embed_source(self, src):
        """src ids (B, S) -> X = sqrt(d) Emb + PE (B, S, d), then dropout."""
        return self.pos_encoding(self.src_embed(as_ids(src)))

    def decode(self, memory, src_key_padding_mask, tgt, tgt_key_padding_mask=None):
        """H (B, S, d) and target ids (B, T) -> decoder output (B, T, d), before the generator."""
        y = self.pos_encoding(self.tgt_embed(as_ids(tgt)))       # (B, T, d)
        return self.decoder(y, memory, src_key_padding_mask, tgt_key_padding_mask)

    def forward(self, src, tgt_in, src_pad_mask=None, tgt_pad_mask=None):
        """src (B, S), tgt_in (B, T) (the target shifted right) -> log-probs (B, T, Vt)."""
        memory = self.encoder(self.embed_source(src), src_pad_mask)   # H: (B, S, d)
        return self.generator(self.decode(memory, src_pad_mask, tgt_in, tgt_pad_mask))

    # -- incremental decoding -------------------------------------------------------------
    def cacheable(self):
        """Whether decode_step may run: every decoder attention is an nn.MultiHeadAttention
        itself (no subclass, no forward of its own), whose math the cache restates step by
        step. Greedy and beam decoding check it and otherwise recompute whole prefixes."""
        return all(plain(mha, nn.MultiHeadAttention) for layer in self.decoder.layers
                   for mha in (layer.self_attn, layer.cross_attn))

    def init_decode_state(self, memory, src_key_padding_mask=None):
        """A DecodeState for decode_step, from H = encode(src) (B, S, d). Without gradients and
        with stock layers it carries the decoder's layers on arrays (`state.plan`, planned
        here once for the whole decoding: models/nets/fastpath.py)."""
        return DecodeState(memory, src_key_padding_mask, len(self.decoder.layers),
                           fastpath.plan(self.decoder, STOCK))

    def decode_step(self, tgt, state):
        """Feed the next target ids tgt (B, n) (usually n = 1: the last token chosen) and return
        the log-probabilities of the token after them, (B, Vt). K and V of earlier target
        positions come from `state`, which grows by n; cross-attention K, V of H are computed
        on the first step only. The log-probs equal forward()'s at the same position (tested
        to 1e-10 in float64). Assumes an unpadded target prefix. Run under tgx.no_grad() and
        model.eval() when decoding."""
        tgt = as_ids(tgt)
        start = state.length
        y = self.pos_encoding(self.tgt_embed(tgt), start=start)  # (B, n, d) at start..start+n-1
        memory = state.memory if state.memory_needed() else None  # K, V of H already kept
        decoder = state.plan or self.decoder                     # arrays, or the modules
        y = decoder(y, memory, state.src_key_padding_mask, None, cache=state)   # (B, n, d)
        return self.generator(y[:, -1, :])                       # (B, Vt)


# the classes of this file that fastpath.plan may run on arrays (it sits below this file)
STOCK = {"Encoder": Encoder, "Decoder": Decoder, "EncoderLayer": EncoderLayer,
         "DecoderLayer": DecoderLayer, "PositionwiseFeedForward": PositionwiseFeedForward}


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1,
               norm_first=False, share_embeddings=False, tie_generator=False, generator_bias=True,
               max_len=5000, layer_norm="torch"):
    """Build the Transformer from hyperparameters (the base model of Vaswani et al. by default).

    With one 37,000-token vocabulary, share_embeddings=True and tie_generator=True (the paper
    shares all three) it has 63,082,496 parameters, plus 37,000 for the generator bias unless
    generator_bias=False; norm_first=True adds the two final LayerNorms (2 * 2 * 512), which
    with generator_bias=False gives the 63,084,544 counted by hand for Table 3's "65M".
    """
    return EncoderDecoder(TransformerConfig(src_vocab, tgt_vocab, N, d_model, d_ff, h, dropout,
                                            norm_first, share_embeddings, tie_generator,
                                            generator_bias, max_len, layer_norm))


def count_parameters(config):
    """The number of parameters of EncoderDecoder(config), from the sizes alone (nothing is
    allocated; the tests check it against built models)."""
    c = config
    d, ff, N = c.d_model, c.d_ff, c.N
    ln = 2 * d                                                    # gamma, beta
    mha = 4 * (d * d + d)                                         # W^Q, W^K, W^V, W^O + biases
    ffn = (d * ff + ff) + (ff * d + d)                            # W_1, b_1, W_2, b_2
    enc_layer = mha + ffn + 2 * ln
    dec_layer = 2 * mha + ffn + 3 * ln
    final_norms = 2 * ln if c.norm_first else 0
    embeddings = c.src_vocab * d + (0 if c.share_embeddings else c.tgt_vocab * d)
    generator = (0 if c.tie_generator else c.tgt_vocab * d) + (c.tgt_vocab if c.generator_bias
                                                                else 0)
    return N * (enc_layer + dec_layer) + final_norms + embeddings + generator
