"""A decoder-only GPT in the shape and names of nanoGPT, on tinygradx.

References:
1) Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2): Pre-LN
   blocks, a final LayerNorm, learned positions, tied input/output embeddings, residual
   projections initialised with std 0.02/sqrt(2 * n_layer).
2) Vaswani et al. 2017, "Attention Is All You Need": scaled dot-product and multi-head attention.
3) Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture": Pre-LN vs Post-LN.
4) karpathy/nanoGPT model.py: the file order and the parameter names (GPT-2 checkpoint names), so
   loading GPT-2 weights is a name map.
5) The LLaMA-style switches of GPTConfig (Touvron et al. 2023, "LLaMA"): RMSNorm (Zhang &
   Sennrich 2019, "Root Mean Square Layer Normalization"), rotary position embeddings (Su et al.
   2021, "RoFormer"), the SwiGLU MLP (Shazeer 2020, "GLU Variants Improve Transformer") and
   grouped-query attention (Ainslie et al. 2023, "GQA"). All are built from public ops.

The formulas are the ones derived step by step in docs/walkthrough.md (attention, multi-head
attention, the Pre-LN and Post-LN blocks); each appears as a line of code below.
Shapes: B batch, T new positions, t all positions (cached + new), C = n_embd = d_model,
nh = n_head, hs = C // nh = d_k, V = vocab_size, nkv = n_kv_head (K/V heads), g = nh // nkv,
H = the MLP's hidden size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.nn import init

from . import fastpath
from .layers import KVCache, check_sampling, sample_next, token_ids, values


class RMSNorm(nn.Module):
    """RMSNorm(x) = x / sqrt(mean(x^2) + eps) * g over the last dim (Zhang & Sennrich 2019):
    LayerNorm without the mean subtraction and the bias, as LLaMA uses it."""

    def __init__(self, dim, eps=1e-5):
        self.eps = eps
        self.weight = nn.Parameter(np.ones((dim,), np.float32))  # g: (C,)

    def forward(self, x):
        ms = (x * x).mean(dim=-1, keepdim=True)                  # mean(x^2): (B, T, 1)
        return x * (ms + self.eps).rsqrt() * self.weight         # (B, T, C)

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"


def rope_tables(length, head_size, theta=10000.0):
    """The constant cos and sin tables of rotary embeddings, each (length, hs), float64.

    Position m and pair i (i < hs/2) rotate by the angle m * theta^(-2i/hs). The pairs are
    (x_i, x_{i + hs/2}) -- the "rotate half" layout of GPT-NeoX and Hugging Face's LLaMA -- so
    each table repeats its hs/2 columns twice."""
    inv_freq = theta ** (-np.arange(0, head_size, 2, dtype=np.float64) / head_size)  # (hs/2,)
    angles = np.outer(np.arange(length, dtype=np.float64), inv_freq)  # (length, hs/2)
    angles = np.concatenate([angles, angles], axis=1)                  # (length, hs)
    return np.cos(angles), np.sin(angles)


def apply_rope(x, cos, sin):
    """Rotate x (B, h, T, hs) by the angles of its positions: x * cos + rotate_half(x) * sin,
    with cos, sin (T, hs) constants and rotate_half([x1, x2]) = [-x2, x1] (halves of hs)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]                        # 2 x (B, h, T, hs/2)
    rotated = tgx.cat([-x2, x1], dim=-1)                         # (B, h, T, hs)
    return x * Tensor(cos) + rotated * Tensor(sin)              # (B, h, T, hs)


class CausalSelfAttention(nn.Module):
    """MHA(X) = Concat(head_1, ..., head_h) W^O, head_i = Softmax(Q_i K_i^T / sqrt(d_k) + M) V_i,
    where M_ij = -inf for j > i (a position never reads the future).

    W^Q, W^K, W^V of all heads live in one Linear `c_attn` (C -> 3C), W^O is `c_proj`.
    `_heads` and `_scores` below compute the formula op by op. When `fused` (the default,
    GPTConfig.fused_attention) the same numbers come from one graph node instead, as nanoGPT
    uses torch's fused attention: F.packed_attention in training, F.attention with a KV cache.
    Set `record_attn = True` to keep the last attention weights A (B, nh, T, t) in `attn_weights`
    (this takes the op-by-op path, which has A).

    LLaMA-style switches (GPTConfig): with pos="rope" Q and K are rotated by their absolute
    positions (`apply_rope`) after the split into heads; with n_kv_head < n_head, `c_attn` makes
    nh query heads but only nkv key/value heads (C -> C + 2 nkv hs) and each K/V head serves
    g = nh // nkv query heads (grouped-query attention; nkv = 1 is multi-query). The KV cache
    keeps the rotated K and the nkv heads, not the repeated ones. F.packed_attention takes one
    packed [Q K V] with equal head counts and no rotation, so these configs never use it: they
    split into heads op by op and then call F.attention (one node) when fused, or `_scores`.

    The forward never looks at grad mode: generation of a stock GPT-2 runs on arrays because
    GPT.generate planned it so (models/nets/fastpath.py), not because of a branch in here.
    """

    def __init__(self, config):
        config.validate()
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.n_kv_head = config.kv_heads
        hs = config.n_embd // config.n_head
        self.c_attn = nn.Linear(config.n_embd, config.n_embd + 2 * self.n_kv_head * hs,
                                bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.record_attn = False
        self.attn_weights = None
        self.fused = config.fused_attention
        self.rope = None
        if config.pos == "rope":
            self.rope = rope_tables(config.block_size, hs, config.rope_theta)  # 2 x (block, hs)
        # the packed [Q K V] kernel: equal head counts and no rotation only
        self.packed = self.fused and self.rope is None and self.n_kv_head == self.n_head

    def forward(self, x, cache=None):
        B, T, C = x.shape  # batch size, new positions, embedding dimensionality (n_embd)
        # Q = X W^Q, K = X W^K, V = X W^V for all heads at once
        # (with n_kv_head < n_head the width is C + 2 nkv hs, not 3C)
        qkv = self.c_attn(x)                                     # [Q K V]: (B, T, 3C)
        p = self.attn_dropout.p if self.training else 0.0
        if self.packed and cache is None and not self.record_attn:
            # the fused node straight from [Q K V]: all heads, causal, in one (training's route)
            y = F.packed_attention(qkv, self.n_head, is_causal=True, dropout_p=p)  # (B, T, C)
        else:
            q, k, v = self._heads(qkv)                  # (B, nh, T, hs), 2 x (B, nkv, T, hs)
            if self.rope is not None:
                past = 0 if cache is None else cache.length      # position of the first new row
                cos, sin = (a[past:past + T].astype(x.dtype) for a in self.rope)  # (T, hs)
                q = apply_rope(q, cos, sin)                      # (B, nh, T, hs)
                k = apply_rope(k, cos, sin)                      # (B, nkv, T, hs)
            if cache is not None:
                k, v = cache.update(k, v)                        # (B, nkv, t, hs), t = past + T
            k, v = self._repeat_kv(k), self._repeat_kv(v)        # 2 x (B, nh, t, hs)
            if self.fused and not self.record_attn:
                # the T new queries are the last T of the t positions: bottom-right mask
                mask = F.causal_mask(T, k.shape[2], q.dtype) if T > 1 else None
                y = F.attention(q, k, v, attn_mask=mask, dropout_p=p)   # (B, nh, T, hs)
            else:
                y = self._scores(q, k, v)                        # (B, nh, T, hs)
            y = y.transpose(1, 2).reshape(B, T, C)               # Concat(head_1..head_h): (B, T, C)
        return self.resid_dropout(self.c_proj(y))                # Concat(...) W^O: (B, T, C)

    def _heads(self, qkv):
        """[Q K V] (B, T, C + 2 nkv hs) -> Q (B, nh, T, hs), K and V (B, nkv, T, hs)."""
        B, T, _ = qkv.shape                                      # (B, T, C + 2 nkv hs)
        nh, nkv, hs = self.n_head, self.n_kv_head, self.n_embd // self.n_head
        q, k, v = qkv.split([nh * hs, nkv * hs, nkv * hs], dim=2)  # (B, T, C), 2 x (B, T, nkv hs)
        q = q.reshape(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
        k = k.reshape(B, T, nkv, hs).transpose(1, 2)             # (B, nkv, T, hs)
        v = v.reshape(B, T, nkv, hs).transpose(1, 2)             # (B, nkv, T, hs)
        return q, k, v

    def _repeat_kv(self, x):
        """K or V (B, nkv, t, hs) -> (B, nh, t, hs): query head i reads K/V head i // g (one
        node, as torch's scaled_dot_product_attention(enable_gqa=True) repeats them)."""
        g = self.n_head // x.shape[1]
        return x if g == 1 else x.repeat_interleave(g, dim=1)   # (B, nh, t, hs)

    def _scores(self, q, k, v):
        """head_i = Softmax(Q_i K_i^T / sqrt(d_k) + M) V_i for all heads, op by op."""
        T, t, hs = q.shape[2], k.shape[2], q.shape[3]
        # Score = Q K^T / sqrt(d_k): d_k is the head size hs, not C (walkthrough section 4). The
        # scale is applied to Q, (B, nh, T, hs), rather than to the larger scores (B, nh, T, t)
        att = (q * (1.0 / math.sqrt(hs))) @ k.transpose(-2, -1)  # (B, nh, T, t)
        # + M: M_ij = -inf where key j is in query i's future (i sits at position t - T + i)
        if T > 1:                                                # (one new token sees all t)
            att = att + F.causal_mask(T, t, att.dtype)           # (B, nh, T, t)
        att = F.softmax(att, dim=-1)                             # A, each row sums to 1
        if self.record_attn:
            self.attn_weights = att.detach()
        att = self.attn_dropout(att)
        return att @ v                                           # Z = A V: (B, nh, T, hs)


class MLP(nn.Module):
    """FFN(x) = phi(x W_1 + b_1) W_2 + b_2 with phi = GELU and d_ff = 4 d_model (W_1 is c_fc,
    W_2 is c_proj). GPT-2 uses the tanh approximation of GELU ("gelu_new").

    With mlp="swiglu" (LLaMA): FFN(x) = (SiLU(x W_1) * (x W_3)) W_2, SiLU(z) = z * sigmoid(z);
    W_1 is c_fc (the gate), W_3 is c_up, W_2 is c_proj, and the hidden size H defaults to
    8/3 C rounded up to a multiple of 8, so the three matrices hold about as many weights as
    GELU's two of 4C.
    """

    def __init__(self, config):
        self.swiglu = config.mlp == "swiglu"
        H = config.hidden_size
        self.c_fc = nn.Linear(config.n_embd, H, bias=config.bias)
        if self.swiglu:
            self.c_up = nn.Linear(config.n_embd, H, bias=config.bias)
        else:
            self.gelu = nn.GELU(approximate=config.gelu_approximate)
        self.c_proj = nn.Linear(H, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        if self.swiglu:
            gate = self.c_fc(x)                                  # x W_1: (B, T, H)
            x = gate * gate.sigmoid() * self.c_up(x)             # SiLU(x W_1) * x W_3: (B, T, H)
        else:
            x = self.c_fc(x)                                         # x W_1 + b_1: (B, T, 4C)
            x = self.gelu(x)                                         # phi(...)
        x = self.c_proj(x)                                       # ... W_2 + b_2: (B, T, C)
        return self.dropout(x)


def make_norm(config):
    """The norm of a block or of ln_f: LayerNorm (GPT-2) or RMSNorm (norm="rmsnorm")."""
    if config.norm == "rmsnorm":
        return RMSNorm(config.n_embd, eps=config.norm_eps)
    return nn.LayerNorm(config.n_embd, eps=config.norm_eps, bias=config.bias)


class Block(nn.Module):
    """One GPT block.

    Pre-LN (norm_first=True, GPT-2), x + Sublayer(LayerNorm(x)) around each sublayer:
        u_l     = x_l + CausalMHA(LayerNorm(x_l))
        x_{l+1} = u_l + MLP(LayerNorm(u_l))
    Post-LN (norm_first=False, the original Transformer), y = LayerNorm(x + Sublayer(x)):
        u_l     = LayerNorm(x_l + CausalMHA(x_l))
        x_{l+1} = LayerNorm(u_l + MLP(u_l))
    With norm="rmsnorm", RMSNorm takes LayerNorm's place (the modules keep the names ln_1, ln_2).
    """

    def __init__(self, config):
        self.norm_first = config.norm_first
        self.ln_1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config)
        self.mlp = MLP(config)

    def forward(self, x, cache=None):
        if self.norm_first:
            x = x + self.attn(self.ln_1(x), cache)
            x = x + self.mlp(self.ln_2(x))
        else:
            x = self.ln_1(x + self.attn(x, cache))
            x = self.ln_2(x + self.mlp(x))
        return x


_CHOICES = {"norm": ("layernorm", "rmsnorm"), "pos": ("learned", "rope"),
            "mlp": ("gelu", "swiglu"), "gelu_approximate": ("tanh", "none")}


@dataclass
class GPTConfig:
    """Sizes and switches. The defaults are nanoGPT's CPU config for tiny-shakespeare (chars);
    GPT-2 small is block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768.

    The LLaMA-style switches (each independent; the defaults are GPT-2's block):
    norm="rmsnorm", pos="rope" (no wpe table), mlp="swiglu", n_kv_head < n_head (grouped-query
    attention) and bias=False. `GPTConfig.llama(...)` turns them all on.
    """
    block_size: int = 64          # longest context (rows of the position table wpe)
    vocab_size: int = 65          # 65 = tiny-shakespeare characters; GPT-2 has 50257
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True             # biases in Linears and LayerNorms, as GPT-2
    norm_first: bool = True       # Pre-LN (GPT-2); False gives Post-LN blocks and no ln_f
    gelu_approximate: str = "tanh"  # GPT-2's gelu_new; "none" is the exact erf GELU (nanoGPT)
    fused_attention: bool = True  # attention as one node (F.attention); False: op by op
    norm: str = "layernorm"       # "rmsnorm": RMSNorm in the blocks and ln_f (LLaMA)
    pos: str = "learned"          # "rope": rotary embeddings on Q and K, no wpe table (LLaMA)
    mlp: str = "gelu"             # "swiglu": (SiLU(x W_1) * x W_3) W_2 (LLaMA)
    n_kv_head: int | None = None  # K/V heads (grouped-query attention); None = n_head
    mlp_hidden: int | None = None  # H; None = 4C (gelu) or 8/3 C rounded up to 8 (swiglu)
    rope_theta: float = 10000.0   # RoPE's base: pair i turns by theta^(-2i/hs) per position
    norm_eps: float = 1e-5        # eps of LayerNorm / RMSNorm

    def __post_init__(self):
        self.validate()

    @classmethod
    def llama(cls, **overrides):
        """A config with every LLaMA-style switch on: RMSNorm, RoPE, SwiGLU, no biases (set
        n_kv_head for grouped-query attention)."""
        fields = dict(norm="rmsnorm", pos="rope", mlp="swiglu", bias=False)
        fields.update(overrides)
        return cls(**fields)

    @property
    def kv_heads(self):
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    @property
    def hidden_size(self):
        """H: mlp_hidden, else 4C (gelu) or 8/3 C rounded up to a multiple of 8 (swiglu)."""
        if self.mlp_hidden is not None:
            return self.mlp_hidden
        if self.mlp == "swiglu":
            return -(-(8 * self.n_embd // 3) // 8) * 8
        return 4 * self.n_embd

    def validate(self):
        """Raise one ValueError that lists every problem of the config (None if it is fine)."""
        problems = []

        def positive_int(name, value):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                problems.append(f"{name} must be a positive int, got {value!r}")
                return False
            return True

        for name in ("vocab_size", "block_size"):
            if getattr(self, name) is not None:     # nanoGPT leaves these None until the data
                positive_int(name, getattr(self, name))
        sizes_ok = all([positive_int("n_layer", self.n_layer), positive_int("n_head", self.n_head),
                        positive_int("n_embd", self.n_embd)])
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                problems.append(f"{name} must be one of {', '.join(map(repr, allowed))}, got "
                                f"{getattr(self, name)!r}")
        if sizes_ok and self.n_embd % self.n_head:
            problems.append(f"n_embd ({self.n_embd}) must be divisible by n_head "
                            f"({self.n_head}): each head gets n_embd // n_head dims")
        if self.n_kv_head is not None and positive_int("n_kv_head", self.n_kv_head) and sizes_ok:
            if self.n_kv_head > self.n_head:
                problems.append(f"n_kv_head ({self.n_kv_head}) must be at most n_head "
                                f"({self.n_head})")
            elif self.n_head % self.n_kv_head:
                problems.append(f"n_head ({self.n_head}) must be divisible by n_kv_head "
                                f"({self.n_kv_head}): each K/V head serves n_head // n_kv_head "
                                f"query heads")
        if self.pos == "rope" and sizes_ok and not self.n_embd % self.n_head \
                and (self.n_embd // self.n_head) % 2:
            problems.append(f"pos='rope' needs an even head size, got n_embd // n_head = "
                            f"{self.n_embd // self.n_head} (rotations act on pairs)")
        if self.mlp_hidden is not None:
            positive_int("mlp_hidden", self.mlp_hidden)
        if not 0.0 <= self.dropout < 1.0:
            problems.append(f"dropout must be in [0, 1), got {self.dropout!r}")
        if problems:
            raise ValueError("GPTConfig: " + "; ".join(problems))


class GPT(nn.Module):
    """Decoder-only Transformer: X = Emb + P (learned positions), N blocks of causal
    self-attention + MLP, a final LayerNorm, then logits = LayerNorm(x) W_emb^T.

    With norm_first=False (Post-LN) every block already ends in a LayerNorm, and Xiong et al.'s
    Post-LN has no final LayerNorm, so `transformer.ln_f` is an Identity (no parameters).
    With pos="rope" there is no wpe: X = Emb, and each attention layer rotates Q and K.
    """

    def __init__(self, config):
        config.validate()
        if config.vocab_size is None or config.block_size is None:
            raise ValueError("GPT: set config.vocab_size and config.block_size (they are None)")
        self.config = config
        C = config.n_embd
        parts = dict(wte=nn.Embedding(config.vocab_size, C))     # token embedding (V, C)
        if config.pos == "learned":
            parts["wpe"] = nn.Embedding(config.block_size, C)    # position embedding (block, C)
        parts.update(
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=make_norm(config) if config.norm_first else nn.Identity(),
        )
        self.transformer = nn.ModuleDict(parts)
        self.lm_head = nn.Linear(C, config.vocab_size, bias=False)
        # weight tying (Press & Wolf 2017; GPT-2): the output projection is the token embedding,
        # the same Parameter object, so it is listed (and updated) once, as transformer.wte.weight
        self.lm_head.weight = self.transformer.wte.weight
        self._init_weights()

    def _init_weights(self):
        # GPT-2: N(0, 0.02) for Linear and Embedding weights, zero biases, LayerNorm 1 and 0; the
        # projections that write into the residual stream (c_proj) get 0.02/sqrt(2 * n_layer),
        # since each of the 2 * n_layer residual branches adds its variance to the stream.
        std_proj = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                init.normal_(p, mean=0.0, std=std_proj)
            elif p.ndim == 2:
                init.normal_(p, mean=0.0, std=0.02)
            elif name.endswith(".bias"):
                init.zeros_(p)

    def num_parameters(self, non_embedding=False, trainable_only=False):
        """Number of parameters (the tied lm_head counted once). non_embedding=True leaves out
        the position table wpe, as nanoGPT's get_num_params does by default (wte stays in:
        it is also the output layer). The default here is the plain total, as nn.Module's."""
        n = super().num_parameters(trainable_only)
        if non_embedding and self.config.pos == "learned":
            n -= self.transformer.wpe.weight.numel()
        return n

    def _features(self, idx, kv_cache=None):
        """ids (B, T) -> the last hidden states after ln_f (B, T, C)."""
        B, T = idx.shape
        past = 0 if kv_cache is None else kv_cache.length
        if past + T > self.config.block_size:
            raise ValueError(f"GPT: cannot forward {past + T} positions ({past} cached + {T} "
                             f"new), the block size is only {self.config.block_size}; crop "
                             f"the context (generate() does)")
        tok_emb = self.transformer.wte(idx)                      # (B, T, C)
        if self.config.pos == "rope":                            # positions enter in attention
            x = self.transformer.drop(tok_emb)                   # X = Emb: (B, T, C)
        else:
            pos = np.arange(past, past + T, dtype=np.int64)      # (T,)
            pos_emb = self.transformer.wpe(pos)                  # (T, C)
            x = self.transformer.drop(tok_emb + pos_emb)         # X = Emb + P: (B, T, C)
        for i, block in enumerate(self.transformer.h):
            x = block(x, None if kv_cache is None else kv_cache[i])
        return self.transformer.ln_f(x)                          # (B, T, C)

    def forward(self, idx, targets=None, kv_cache=None):
        """ids (B, T) -> (logits (B, T, V), loss or None).

        loss is the mean cross-entropy over the B*T positions whose target is not -100.
        With a KVCache the ids are the next T positions after the cached ones (and the cache
        grows by T).
        """
        idx = token_ids("GPT", "idx", idx)          # (B, T), T >= 1; B = 0 runs, as torch
        B, T = idx.shape
        x = self._features(idx, kv_cache)                        # (B, T, C)
        logits = self.lm_head(x)                                 # (B, T, V)
        loss = None
        if targets is not None:
            targets = token_ids("GPT", "targets", targets)
            if targets.shape != idx.shape:
                raise ValueError(f"GPT: targets {targets.shape} must have the shape of idx "
                                 f"{idx.shape}")
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.reshape(B * T, V),     # (B*T, V)
                                   targets.reshape(B * T))       # (B*T,)
        return logits, loss

    def crop_block_size(self, block_size):
        """Shrink the context (e.g. to fine-tune a pretrained model on shorter sequences)."""
        if not 0 < block_size <= self.config.block_size:
            raise ValueError(f"crop_block_size: block_size must be in 1..{self.config.block_size}"
                             f", got {block_size}")
        self.config.block_size = block_size
        if self.config.pos == "rope":
            for block in self.transformer.h:                     # 2 x (block_size, hs)
                block.attn.rope = tuple(a[:block_size] for a in block.attn.rope)
            return
        wpe = self.transformer.wpe
        wpe.weight = nn.Parameter(values(wpe.weight)[:block_size].copy())  # (block_size, C)
        wpe.num_embeddings = block_size

    def configure_optimizers(self, weight_decay, lr, betas=(0.9, 0.95), eps=1e-8):
        """nanoGPT's rule: decay every parameter with 2 or more dims (matmul weights and
        embeddings), not biases and LayerNorm gains. Returns tinygradx.optim.AdamW over the two
        groups, or just the groups (list of dicts) if tinygradx.optim is not available."""
        params = list(self.parameters())
        groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
        try:
            from tinygradx import optim
        except ImportError:
            return groups
        return optim.AdamW(groups, lr=lr, betas=betas, eps=eps)

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                 use_cache=True, eos_id=None):
        """Append max_new_tokens sampled tokens to idx (B, T); returns ids (B, T + n).

        Each step feeds the logits of the last position through temperature, top-k and top-p
        (`common.sample_next`; temperature 0 is greedy), drawing from tinygradx's global RNG so
        `tgx.manual_seed` makes it repeatable. With use_cache only the newest token is fed and
        K, V of earlier positions come from the cache; when the context outgrows block_size it
        is cropped to the last block_size tokens and the cache is rebuilt from them (positions
        shift, so old K, V are stale), exactly as the uncached path sees it. With eos_id a row
        that has produced eos_id keeps producing it, and generation stops when all rows have.
        Call model.eval() first when the model has dropout.

        Each step runs through `step`, planned once here: the blocks on arrays
        (models/nets/fastpath.py) when the model is GPT-2's stock block and nothing watches the
        ops, else the modules (`_last_logits`); the same logits either way.
        """
        ids = values(token_ids("GPT.generate", "idx", idx))  # a prompt of >= 1 token per row
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) \
                or max_new_tokens < 0:
            raise ValueError(f"GPT.generate: max_new_tokens must be an int >= 0, got "
                             f"{max_new_tokens!r}")
        check_sampling("GPT.generate", temperature, top_k, top_p)
        B, start = ids.shape
        block = self.config.block_size
        # the ids so far, written in place (no concatenation per token): (B, start + new)
        out = np.empty((B, start + max_new_tokens), dtype=ids.dtype)
        out[:, :start] = ids
        n = start
        done = np.zeros(B, dtype=bool)
        cache = None
        with tgx.no_grad():
            step = (fastpath.plan(self, STOCK) if use_cache else None) or self._last_logits
            for _ in range(max_new_tokens):
                if use_cache and cache is not None and cache.length < block:
                    feed = out[:, n - 1:n]                       # only the newest token: (B, 1)
                else:
                    cache = KVCache(self.config.n_layer) if use_cache else None
                    feed = out[:, max(n - block, 0):n]           # cropped context: (B, <=block)
                logits = step(feed, cache)                       # the last position's: (B, V)
                nxt = sample_next(logits, temperature, top_k, top_p)   # (B,)
                if eos_id is not None:
                    nxt = np.where(done, eos_id, nxt)
                    done |= nxt == eos_id
                out[:, n] = nxt
                n += 1
                if eos_id is not None and done.all():
                    break
        return Tensor(out[:, :n].copy() if n < out.shape[1] else out)   # (B, T + n)

    def _last_logits(self, ids, cache):
        """generate()'s step through the modules: ids (B, T) array and a KVCache (or None) ->
        the logits of the last position (B, V) array."""
        x = self._features(Tensor(ids), cache)                   # (B, T, C)
        if x.shape[1] > 1:
            x = x[:, -1:, :]                                     # only the last position
        return values(self.lm_head(x))[:, 0]                     # (B, V)


# the classes of this file that fastpath.plan may run on arrays (it sits below this file)
STOCK = {"GPT": GPT, "Block": Block, "CausalSelfAttention": CausalSelfAttention, "MLP": MLP}


def count_parameters(config):
    """The number of parameters of GPT(config), from the sizes alone (nothing is allocated;
    the tests check it against built models). The tied lm_head adds nothing."""
    C, L, b = config.n_embd, config.n_layer, int(config.bias)
    H, kv = config.hidden_size, 2 * config.kv_heads * (C // config.n_head)  # MLP hidden, K+V
    ln = C + (b * C if config.norm == "layernorm" else 0)         # gain (+ bias); RMSNorm: gain
    attn = (C * (C + kv) + b * (C + kv)) + (C * C + b * C)        # c_attn, c_proj
    n_in = 2 if config.mlp == "swiglu" else 1                     # c_fc (+ c_up)
    mlp = n_in * (C * H + b * H) + (H * C + b * C)                # ..., c_proj
    block = 2 * ln + attn + mlp
    wpe = config.block_size * C if config.pos == "learned" else 0
    embeddings = config.vocab_size * C + wpe                      # wte, wpe
    ln_f = ln if config.norm_first else 0
    return embeddings + L * block + ln_f
