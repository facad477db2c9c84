"""A decoder-only GPT in the shape and names of nanoGPT, on tinygradx.

References:
1) Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2): Pre-LN
   blocks, a final LayerNorm, learned positions, tied input/output embeddings, residual
   projections initialised with std 0.02/sqrt(2 * n_layer).
2) Vaswani et al. 2017, "Attention Is All You Need": scaled dot-product and multi-head attention.
3) Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture": Pre-LN vs Post-LN.
4) karpathy/nanoGPT model.py: the file order and the parameter names (GPT-2 checkpoint names), so
   loading GPT-2 weights is a name map.

The formulas are the ones derived step by step in docs/walkthrough.md (attention, multi-head
attention, the Pre-LN and Post-LN blocks); each appears as a line of code below.
Shapes: B batch, T new positions, t all positions (cached + new), C = n_embd = d_model,
nh = n_head, hs = C // nh = d_k, V = vocab_size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn

from .layers import KVCache, as_ids, normal_, sample_next, zeros_


class CausalSelfAttention(nn.Module):
    """MHA(X) = Concat(head_1, ..., head_h) W^O, head_i = Softmax(Q_i K_i^T / sqrt(d_k) + M) V_i,
    where M_ij = -inf for j > i (a position never reads the future).

    W^Q, W^K, W^V of all heads live in one Linear `c_attn` (C -> 3C), W^O is `c_proj`.
    `_heads` and `_scores` below compute the formula op by op. When `fused` (the default,
    GPTConfig.fused_attention) the same numbers come from one graph node instead, as nanoGPT
    uses torch's fused attention: F.packed_attention in training, F.attention with a KV cache.
    Set `record_attn = True` to keep the last attention weights A (B, nh, T, t) in `attn_weights`
    (this takes the op-by-op path, which has A).
    """

    def __init__(self, config):
        assert config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head"
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.record_attn = False
        self.attn_weights = None
        self.fused = config.fused_attention

    def forward(self, x, cache=None):
        B, T, C = x.shape  # batch size, new positions, embedding dimensionality (n_embd)
        # Q = X W^Q, K = X W^K, V = X W^V for all heads at once
        qkv = self.c_attn(x)                                     # [Q K V]: (B, T, 3C)
        p = self.attn_dropout.p if self.training else 0.0
        if self.fused and cache is None and not self.record_attn:
            y = F.packed_attention(qkv, self.n_head, is_causal=True, dropout_p=p)  # (B, T, C)
        elif self.fused and not self.record_attn and not tgx.is_grad_enabled():
            # generation: the new rows' Q against K, V of all rows kept in the cache
            rows = cache.append_rows(qkv)                        # (B, t, 3C), t = past + T
            y = F.packed_attention(rows, self.n_head, is_causal=True, dropout_p=p,
                                   n_query=T)                    # (B, T, C)
        else:
            q, k, v = self._heads(qkv)                           # 3 x (B, nh, T, hs)
            if cache is not None:
                k, v = cache.update(k, v)                        # (B, nh, t, hs), t = past + T
            if self.fused and not self.record_attn:
                # the T new queries are the last T of the t positions: bottom-right mask
                mask = F.causal_mask(T, k.shape[2], q.dtype) if T > 1 else None
                y = F.attention(q, k, v, attn_mask=mask, dropout_p=p)   # (B, nh, T, hs)
            else:
                y = self._scores(q, k, v)                        # (B, nh, T, hs)
            y = y.transpose(1, 2).reshape(B, T, C)               # Concat(head_1..head_h): (B, T, C)
        return self.resid_dropout(self.c_proj(y))                # Concat(...) W^O: (B, T, C)

    def _heads(self, qkv):
        """[Q K V] (B, T, 3C) -> Q, K, V per head, each (B, nh, T, hs)."""
        B, T, _ = qkv.shape                                      # (B, T, 3C)
        nh, hs = self.n_head, self.n_embd // self.n_head
        q, k, v = qkv.split(self.n_embd, dim=2)                  # 3 x (B, T, C)
        q = q.reshape(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
        k = k.reshape(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
        v = v.reshape(B, T, nh, hs).transpose(1, 2)              # (B, nh, T, hs)
        return q, k, v

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
    W_2 is c_proj). GPT-2 uses the tanh approximation of GELU ("gelu_new")."""

    def __init__(self, config):
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate=config.gelu_approximate)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)                                         # x W_1 + b_1: (B, T, 4C)
        x = self.gelu(x)                                         # phi(...)
        x = self.c_proj(x)                                       # ... W_2 + b_2: (B, T, C)
        return self.dropout(x)


class Block(nn.Module):
    """One GPT block.

    Pre-LN (norm_first=True, GPT-2), x + Sublayer(LayerNorm(x)) around each sublayer:
        u_l     = x_l + CausalMHA(LayerNorm(x_l))
        x_{l+1} = u_l + MLP(LayerNorm(u_l))
    Post-LN (norm_first=False, the original Transformer), y = LayerNorm(x + Sublayer(x)):
        u_l     = LayerNorm(x_l + CausalMHA(x_l))
        x_{l+1} = LayerNorm(u_l + MLP(u_l))
    """

    def __init__(self, config):
        self.norm_first = config.norm_first
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, cache=None):
        if self.norm_first:
            x = x + self.attn(self.ln_1(x), cache)
            x = x + self.mlp(self.ln_2(x))
        else:
            x = self.ln_1(x + self.attn(x, cache))
            x = self.ln_2(x + self.mlp(x))
        return x


@dataclass
class GPTConfig:
    """Sizes and switches. The defaults are nanoGPT's CPU config for tiny-shakespeare (chars);
    GPT-2 small is block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768."""
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


class GPT(nn.Module):
    """Decoder-only Transformer: X = Emb + P (learned positions), N blocks of causal
    self-attention + MLP, a final LayerNorm, then logits = LayerNorm(x) W_emb^T.

    With norm_first=False (Post-LN) every block already ends in a LayerNorm, and Xiong et al.'s
    Post-LN has no final LayerNorm, so `transformer.ln_f` is an Identity (no parameters).
    """

    def __init__(self, config):
        assert config.vocab_size is not None and config.block_size is not None
        self.config = config
        C = config.n_embd
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, C),               # token embedding (V, C)
            wpe=nn.Embedding(config.block_size, C),               # position embedding (block, C)
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(C, bias=config.bias) if config.norm_first else nn.Identity(),
        ))
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
                normal_(p, std_proj)
            elif p.ndim == 2:
                normal_(p, 0.02)
            elif name.endswith(".bias"):
                zeros_(p)

    def num_parameters(self, non_embedding=False, trainable_only=False):
        """Number of parameters (the tied lm_head counted once). non_embedding=True leaves out
        the position table wpe, as nanoGPT's get_num_params does by default (wte stays in:
        it is also the output layer). The default here is the plain total, as nn.Module's."""
        n = super().num_parameters(trainable_only)
        if non_embedding:
            n -= self.transformer.wpe.weight.data.size
        return n

    def _features(self, idx, kv_cache=None):
        """ids (B, T) -> the last hidden states after ln_f (B, T, C)."""
        B, T = idx.shape
        past = 0 if kv_cache is None else kv_cache.length
        if past + T > self.config.block_size:
            raise ValueError(f"GPT: cannot forward {past + T} positions ({past} cached + {T} "
                             f"new), the block size is only {self.config.block_size}; crop "
                             f"the context (generate() does)")
        pos = np.arange(past, past + T, dtype=np.int64)          # (T,)
        tok_emb = self.transformer.wte(idx)                      # (B, T, C)
        pos_emb = self.transformer.wpe(pos)                      # (T, C)
        x = self.transformer.drop(tok_emb + pos_emb)             # X = Emb + P: (B, T, C)
        for i, block in enumerate(self.transformer.h):
            x = block(x, None if kv_cache is None else kv_cache[i])
        return self.transformer.ln_f(x)                          # (B, T, C)

    def forward(self, idx, targets=None, kv_cache=None):
        """ids (B, T) -> (logits (B, T, V), loss or None).

        loss is the mean cross-entropy over the B*T positions whose target is not -100.
        With a KVCache the ids are the next T positions after the cached ones (and the cache
        grows by T).
        """
        idx = as_ids(idx)
        B, T = idx.shape
        x = self._features(idx, kv_cache)                        # (B, T, C)
        logits = self.lm_head(x)                                 # (B, T, V)
        loss = None
        if targets is not None:
            targets = as_ids(targets)
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.reshape(B * T, V),     # (B*T, V)
                                   targets.reshape(B * T))       # (B*T,)
        return logits, loss

    def crop_block_size(self, block_size):
        """Shrink the context (e.g. to fine-tune a pretrained model on shorter sequences)."""
        assert block_size <= self.config.block_size
        self.config.block_size = block_size
        wpe = self.transformer.wpe
        wpe.weight = nn.Parameter(wpe.weight.data[:block_size].copy())  # (block_size, C)
        wpe.num_embeddings = block_size

    def configure_optimizers(self, weight_decay, lr, betas=(0.9, 0.95), eps=1e-8):
        """nanoGPT's rule: decay every parameter with 2 or more dims (matmul weights and
        embeddings), not biases and LayerNorm gains. Returns tinygradx.optim.AdamW over the two
        groups, or just the groups (list of dicts) if tinygradx.optim is not available."""
        params = self.parameters()
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
        """
        idx = as_ids(idx)
        block = self.config.block_size
        done = np.zeros(idx.shape[0], dtype=bool)
        cache = None
        with tgx.no_grad():
            for _ in range(max_new_tokens):
                if use_cache and cache is not None and cache.length < block:
                    feed = idx[:, -1:]                           # only the newest token: (B, 1)
                else:
                    cache = KVCache(self.config.n_layer) if use_cache else None
                    feed = idx[:, -block:]                       # cropped context: (B, <=block)
                x = self._features(feed, cache)                  # (B, T, C)
                logits = self.lm_head(x[:, -1, :])               # only the last position: (B, V)
                nxt = sample_next(logits, temperature, top_k, top_p)   # (B,)
                if eos_id is not None:
                    nxt = np.where(done, eos_id, nxt)
                    done |= nxt == eos_id
                idx = tgx.cat([idx, Tensor(nxt[:, None])], dim=1)      # (B, T + 1)
                if eos_id is not None and done.all():
                    break
        return idx


def count_parameters(config):
    """The number of parameters of GPT(config), from the sizes alone (nothing is allocated;
    the tests check it against built models). The tied lm_head adds nothing."""
    C, L, b = config.n_embd, config.n_layer, int(config.bias)
    ln = C + b * C                                                # gain (+ bias)
    attn = (3 * C * C + b * 3 * C) + (C * C + b * C)              # c_attn, c_proj
    mlp = (4 * C * C + b * 4 * C) + (4 * C * C + b * C)           # c_fc, c_proj
    block = 2 * ln + attn + mlp
    embeddings = config.vocab_size * C + config.block_size * C    # wte, wpe
    ln_f = ln if config.norm_first else 0
    return embeddings + L * block + ln_f
