"""PyTorch eager references of the two benchmark models, with explicit attention.

Same parameter names and layouts as bench/numpy_gpt.py and bench/numpy_encdec.py, so a numpy
params dict converts both ways (``params_to_torch`` / ``torch_to_params``). Attention is written
out (softmax(Q K^T / sqrt(d_k) + M) V), never F.scaled_dot_product_attention, so torch does the
same work as the numpy floor and as tinygradx. Used only by bench/ and only when torch imports:
torch is never a dependency of the library.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from numpy_common import cfg_get


# ----------------------------------------------------------------------------------------------
# GPT (nanoGPT shape and names)
# ----------------------------------------------------------------------------------------------

class _CausalSelfAttention(nn.Module):
    def __init__(self, C, nh):
        super().__init__()
        self.n_head = nh
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        nh, hs = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, nh, hs).transpose(1, 2)                      # (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)                      # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)                      # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))       # (B, nh, T, T)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)      # (B, T, C)
        return self.c_proj(y)


class _MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class _Block(nn.Module):
    def __init__(self, C, nh, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=eps)
        self.attn = _CausalSelfAttention(C, nh)
        self.ln_2 = nn.LayerNorm(C, eps=eps)
        self.mlp = _MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    """nanoGPT-style GPT; lm_head is tied to wte, so only transformer.* parameters exist."""

    def __init__(self, cfg):
        super().__init__()
        V, blk = cfg_get(cfg, "vocab_size"), cfg_get(cfg, "block_size")
        C, nh, L = cfg_get(cfg, "n_embd"), cfg_get(cfg, "n_head"), cfg_get(cfg, "n_layer")
        eps = cfg_get(cfg, "ln_eps", 1e-5)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, C), wpe=nn.Embedding(blk, C),
            h=nn.ModuleList([_Block(C, nh, eps) for _ in range(L)]),
            ln_f=nn.LayerNorm(C, eps=eps)))

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tr = self.transformer
        pos = torch.arange(T, device=idx.device)
        x = tr.wte(idx) + tr.wpe(pos)
        for blk in tr.h:
            x = blk(x)
        x = tr.ln_f(x)
        logits = x @ tr.wte.weight.t()                                # (B, T, V), tied lm_head
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))

    def configure_optimizer(self, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, **kw):
        """AdamW with nanoGPT's rule: decay tensors with dim >= 2 only."""
        dec = [p for p in self.parameters() if p.dim() >= 2]
        nodec = [p for p in self.parameters() if p.dim() < 2]
        groups = [{"params": dec, "weight_decay": weight_decay},
                  {"params": nodec, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, **kw)


# ----------------------------------------------------------------------------------------------
# Original encoder-decoder Transformer (Post-LN, ReLU FFN, sinusoidal PE)
# ----------------------------------------------------------------------------------------------

class _Dropper:
    """Dropout that can replay masks recorded by the numpy model (for exact A/B checks)."""

    def __init__(self, p):
        self.p = p
        self.replay = None            # iterator of numpy masks (already scaled by 1/(1-p))

    def __call__(self, x, training):
        if not training or self.p == 0.0:
            return x
        if self.replay is not None:
            return x * torch.from_numpy(next(self.replay)).to(x.dtype).view(x.shape)
        return F.dropout(x, self.p, True)


class _MHA(nn.Module):
    def __init__(self, d, h, drop, mask_value):
        super().__init__()
        self.h, self.mask_value = h, mask_value
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d, d) for _ in range(4))
        self.drop = drop

    def forward(self, xq, xkv, mask):
        B, Tq, d = xq.shape
        Tk, h, dk = xkv.shape[1], self.h, d // self.h
        q = self.w_q(xq).view(B, Tq, h, dk).transpose(1, 2)           # (B, h, Tq, dk)
        k = self.w_k(xkv).view(B, Tk, h, dk).transpose(1, 2)          # (B, h, Tk, dk)
        v = self.w_v(xkv).view(B, Tk, h, dk).transpose(1, 2)          # (B, h, Tk, dk)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dk))        # (B, h, Tq, Tk)
        s = s.masked_fill(mask, self.mask_value)
        a = self.drop(F.softmax(s, dim=-1), self.training)
        y = (a @ v).transpose(1, 2).reshape(B, Tq, d)                 # (B, Tq, d)
        return self.w_o(y)


class _FF(nn.Module):
    def __init__(self, d, d_ff, drop):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.drop = drop

    def forward(self, x):
        return self.w_2(self.drop(F.relu(self.w_1(x)), self.training))


class _EncLayer(nn.Module):
    def __init__(self, d, h, d_ff, drop, eps, mv):
        super().__init__()
        self.self_attn, self.ff = _MHA(d, h, drop, mv), _FF(d, d_ff, drop)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.drop = drop

    def forward(self, x, mask):
        x = self.norm1(x + self.drop(self.self_attn(x, x, mask), self.training))
        return self.norm2(x + self.drop(self.ff(x), self.training))


class _DecLayer(nn.Module):
    def __init__(self, d, h, d_ff, drop, eps, mv):
        super().__init__()
        self.self_attn, self.cross_attn = _MHA(d, h, drop, mv), _MHA(d, h, drop, mv)
        self.ff = _FF(d, d_ff, drop)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d, eps=eps) for _ in range(3))
        self.drop = drop

    def forward(self, x, mem, self_mask, cross_mask):
        x = self.norm1(x + self.drop(self.self_attn(x, x, self_mask), self.training))
        x = self.norm2(x + self.drop(self.cross_attn(x, mem, cross_mask), self.training))
        return self.norm3(x + self.drop(self.ff(x), self.training))


class TorchEncDec(nn.Module):
    """Vaswani et al. encoder-decoder, Post-LN; mirrors bench/numpy_encdec.NumpyEncDec."""

    def __init__(self, cfg):
        super().__init__()
        g = lambda n, d=None: cfg_get(cfg, n, d)                    # noqa: E731
        d, h, dff = g("d_model"), g("h"), g("d_ff")
        eps = g("ln_eps", 1e-5)
        self.d_model, self.pad_id = d, g("pad_id", 0)
        self.mask_value = g("mask_value", -1e9)
        self.drop = _Dropper(g("dropout", 0.0))
        self.src_embed = nn.Embedding(g("src_vocab"), d)
        self.tgt_embed = nn.Embedding(g("tgt_vocab"), d)
        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(
            [_EncLayer(d, h, dff, self.drop, eps, self.mask_value) for _ in range(g("n_enc"))])
        self.decoder = nn.Module()
        self.decoder.layers = nn.ModuleList(
            [_DecLayer(d, h, dff, self.drop, eps, self.mask_value) for _ in range(g("n_dec"))])
        self.generator = nn.Linear(d, g("tgt_vocab"))
        pos = np.arange(g("max_len", 512))[:, None]
        div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = np.zeros((len(pos), d))
        pe[:, 0::2], pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
        self.register_buffer("pe", torch.from_numpy(pe), persistent=False)

    def _embed(self, emb, tok):
        x = emb(tok) * math.sqrt(self.d_model) + self.pe[:tok.shape[1]].to(emb.weight.dtype)
        return self.drop(x, self.training)

    def forward(self, src, tgt_in, tgt_out):
        T = tgt_in.shape[1]
        src_mask = (src == self.pad_id)[:, None, None, :]             # (B, 1, 1, S) bool
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self._embed(self.src_embed, src)
        for layer in self.encoder.layers:
            x = layer(x, src_mask)
        mem = x
        y = self._embed(self.tgt_embed, tgt_in)
        for layer in self.decoder.layers:
            y = layer(y, mem, causal, src_mask)
        logp = F.log_softmax(self.generator(y), dim=-1)
        return F.nll_loss(logp.view(-1, logp.shape[-1]), tgt_out.reshape(-1),
                          ignore_index=self.pad_id)


# ----------------------------------------------------------------------------------------------
# Conversion between numpy params dicts and torch modules
# ----------------------------------------------------------------------------------------------

def params_to_torch(model: nn.Module, params: dict, dtype=None):
    """Copy a numpy params dict into ``model`` (names must match exactly, both ways)."""
    named = dict(model.named_parameters())
    missing, extra = set(named) - set(params), set(params) - set(named)
    if missing or extra:
        raise KeyError(f"name mismatch: missing {sorted(missing)}, unexpected {sorted(extra)}")
    if dtype is not None:
        model.to(dtype)
        named = dict(model.named_parameters())
    with torch.no_grad():
        for k, p in named.items():
            p.copy_(torch.from_numpy(np.ascontiguousarray(params[k])).to(p.dtype))
    return model


def torch_to_params(model: nn.Module):
    return {k: p.detach().cpu().numpy().copy() for k, p in model.named_parameters()}


def torch_grads(model: nn.Module):
    return {k: p.grad.detach().cpu().numpy().copy() for k, p in model.named_parameters()}
