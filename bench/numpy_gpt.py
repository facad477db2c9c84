"""Hand-written numpy forward + backward of a nanoGPT-style GPT training step: the "floor".

This is what a careful person writes by hand in numpy, and so the speed any numpy-based engine
(tinygradx) can hope to reach: every backward formula is derived by hand and fused into as few
passes as plain ufuncs allow (LayerNorm, softmax, cross-entropy, tanh-GELU), the 1/sqrt(hs) scale is
folded into Q, attention reads Q, K, V straight out of the fused c_attn output through strided
views (BLAS takes the strides, no copies), every activation and gradient lives in a buffer that is
allocated once per (B, T) and reused across steps, and AdamW updates one flat parameter buffer.

Model (nanoGPT names, torch layout ``weight`` = [out, in], y = x @ W.T + b):
    x = wte[idx] + wpe[:T]
    for each block:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
    logits = ln_f(x) @ wte.T                 (lm_head tied to wte)
    loss = mean cross-entropy over B*T
attn: causal softmax(Q K^T / sqrt(hs) + M) V with M = -inf above the diagonal, heads split
(B, T, C) -> (B, nh, T, hs); mlp: c_proj(GELU_tanh(c_fc(x))); LayerNorm eps 1e-5, biased variance;
no dropout.

API:
    cfg = GPTConfig(...); params = init_params(cfg, seed)
    model = NumpyGPT(cfg); loss, grads = model.loss_and_grads(params, idx, targets)
    adamw_step(params, grads, state, lr)
``grads`` is owned by the model and overwritten by the next call (copy it to keep it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numpy_common import (LNBuf, adamw_step, cfg_get, flat_dict, layernorm_bwd,  # noqa: F401
                          layernorm_fwd, softmax_xent_fwd_bwd)

GELU_C = math.sqrt(2.0 / math.pi)
GELU_K = 0.044715


@dataclass
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dtype: str = "float32"
    ln_eps: float = 1e-5


def param_shapes(cfg):
    """(name, shape) in nanoGPT's named_parameters() order (lm_head is tied, so absent)."""
    V, blk = cfg_get(cfg, "vocab_size"), cfg_get(cfg, "block_size")
    C, L = cfg_get(cfg, "n_embd"), cfg_get(cfg, "n_layer")
    out = [("transformer.wte.weight", (V, C)), ("transformer.wpe.weight", (blk, C))]
    for i in range(L):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
                (p + "attn.c_attn.weight", (3 * C, C)), (p + "attn.c_attn.bias", (3 * C,)),
                (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
                (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
                (p + "mlp.c_fc.weight", (4 * C, C)), (p + "mlp.c_fc.bias", (4 * C,)),
                (p + "mlp.c_proj.weight", (C, 4 * C)), (p + "mlp.c_proj.bias", (C,))]
    out += [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,))]
    return out


def _decay(name, shape):
    # nanoGPT: every tensor with dim >= 2 (matmul weights, embeddings) is decayed, others not.
    return len(shape) >= 2


def empty_params(cfg, dtype=None):
    """Zeroed FlatDict with the GPT's names/shapes; decayed 2-D tensors first in the buffer."""
    dtype = np.dtype(dtype or cfg_get(cfg, "dtype", "float32"))
    return flat_dict(param_shapes(cfg), dtype, decay=_decay)


def init_params(cfg, seed=0, dtype=None):
    """nanoGPT init: N(0, 0.02) for Linear/Embedding weights, N(0, 0.02/sqrt(2*n_layer)) for the
    residual projections (``*c_proj.weight``), zero biases, LayerNorm weight 1 / bias 0.
    Values are drawn in float64 and cast, so float32 and float64 inits agree to rounding."""
    rng = np.random.default_rng(seed)
    params = empty_params(cfg, dtype)
    std_proj = 0.02 / math.sqrt(2 * cfg_get(cfg, "n_layer"))
    for name, a in params.items():
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            a[...] = 1.0
        elif name.endswith("bias"):
            a[...] = 0.0
        else:
            std = std_proj if name.endswith("c_proj.weight") else 0.02
            a[...] = rng.normal(0.0, std, size=a.shape)
    return params


class _LayerWS:
    """Saved activations of one block, allocated once per (B, T)."""
    __slots__ = ("ln1", "h1", "qkv", "att", "y", "ln2", "h2", "u", "t", "g")

    def __init__(self, B, T, C, nh, dt):
        N = B * T
        self.ln1, self.h1 = LNBuf(N, C, dt), np.empty((N, C), dt)
        self.qkv = np.empty((N, 3 * C), dt)
        self.att = np.empty((B, nh, T, T), dt)
        self.y = np.empty((N, C), dt)                    # attention output, (B, T, C) layout
        self.ln2, self.h2 = LNBuf(N, C, dt), np.empty((N, C), dt)
        self.u = np.empty((N, 4 * C), dt)                # c_fc output (GELU input)
        self.t = np.empty((N, 4 * C), dt)                # tanh(...) inside GELU, reused in backward
        self.g = np.empty((N, 4 * C), dt)                # GELU output


class _Workspace:
    """All buffers for one (B, T): per-layer saved activations plus shared scratch."""

    def __init__(self, cfg, B, T, dt):
        C, nh, V, L = cfg.n_embd, cfg.n_head, cfg.vocab_size, cfg.n_layer
        N = B * T
        self.layers = [_LayerWS(B, T, C, nh, dt) for _ in range(L)]
        self.x = np.empty((N, C), dt)                    # residual stream, updated in place
        self.tmp_nc = np.empty((N, C), dt)
        self.lnf, self.hf = LNBuf(N, C, dt), np.empty((N, C), dt)
        self.logits = np.empty((N, V), dt)
        self.mx = np.empty((B, nh, T, 1), dt)            # softmax row max / row sums
        self.dx = np.empty((N, C), dt)                   # gradient of the residual stream
        self.dh = np.empty((N, C), dt)                   # gradient of a LayerNorm output
        self.dy = np.empty((N, C), dt)
        self.datt = np.empty((B, nh, T, T), dt)
        self.dqkv = np.empty((N, 3 * C), dt)
        self.dg = np.empty((N, 4 * C), dt)
        self.tmp_n4c = np.empty((N, 4 * C), dt)
        # Additive causal mask: -inf above the diagonal, so exp() gives exactly 0 there.
        self.mask = np.triu(np.full((T, T), -np.inf, dt), k=1)


def _heads(a, B, T, nh, hs):
    """(N, C) buffer -> (B, nh, T, hs) strided view (no copy)."""
    return a.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)          # (B, nh, T, hs)


def _qkv_views(qkv, B, T, nh, hs):
    q5 = qkv.reshape(B, T, 3, nh, hs)                              # (B, T, 3, nh, hs)
    return [q5[:, :, j].transpose(0, 2, 1, 3) for j in range(3)]   # 3 x (B, nh, T, hs) views


class NumpyGPT:
    """The GPT training step in numpy. See the module docstring for the model and API."""

    def __init__(self, cfg):
        if isinstance(cfg, dict):
            cfg = GPTConfig(**cfg)
        self.cfg = cfg
        self.dtype = np.dtype(cfg.dtype)
        self._ws = {}
        self.grads = empty_params(cfg, self.dtype)
        # Embedding-gradient scatter: a one-hot matmul is much faster than np.add.at for small
        # vocabularies; np.add.at is kept for large ones where the one-hot matrix would be huge.
        self._onehot_max = 1 << 22

    def _workspace(self, B, T):
        ws = self._ws.get((B, T))
        if ws is None:
            ws = self._ws[(B, T)] = _Workspace(self.cfg, B, T, self.dtype)
        return ws

    # ------------------------------------------------------------------------------------------
    def loss_and_grads(self, params, idx, targets):
        cfg, dt = self.cfg, self.dtype
        B, T = idx.shape
        assert T <= cfg.block_size
        C, nh, L = cfg.n_embd, cfg.n_head, cfg.n_layer
        hs = C // nh
        scale = 1.0 / math.sqrt(hs)
        eps = cfg.ln_eps
        N = B * T
        ws = self._workspace(B, T)
        P, G = params, self.grads
        pre = "transformer.h."
        idx_f = idx.reshape(N)

        # ---- forward ------------------------------------------------------------------------
        x = ws.x
        np.take(P["transformer.wte.weight"], idx_f, axis=0, out=x)
        x.reshape(B, T, C)[...] += P["transformer.wpe.weight"][:T]          # (B, T, C)
        for i in range(L):
            lw, p = ws.layers[i], f"{pre}{i}."
            layernorm_fwd(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps, lw.ln1, lw.h1)
            np.matmul(lw.h1, P[p + "attn.c_attn.weight"].T, out=lw.qkv)
            lw.qkv += P[p + "attn.c_attn.bias"]
            q, k, v = _qkv_views(lw.qkv, B, T, nh, hs)                    # (B, nh, T, hs)
            q *= scale                    # fold 1/sqrt(hs) into Q: a (N, C) pass, not (T, T)
            att = lw.att
            np.matmul(q, k.transpose(0, 1, 3, 2), out=att)                # (B, nh, T, T)
            att += ws.mask
            np.max(att, axis=-1, keepdims=True, out=ws.mx)
            att -= ws.mx
            np.exp(att, out=att)
            np.sum(att, axis=-1, keepdims=True, out=ws.mx)
            np.reciprocal(ws.mx, out=ws.mx)
            att *= ws.mx
            np.matmul(att, v, out=_heads(lw.y, B, T, nh, hs))             # written as (B, T, C)
            np.matmul(lw.y, P[p + "attn.c_proj.weight"].T, out=ws.tmp_nc)
            ws.tmp_nc += P[p + "attn.c_proj.bias"]
            x += ws.tmp_nc
            layernorm_fwd(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps, lw.ln2, lw.h2)
            u, t, g = lw.u, lw.t, lw.g
            np.matmul(lw.h2, P[p + "mlp.c_fc.weight"].T, out=u)
            u += P[p + "mlp.c_fc.bias"]
            # GELU_tanh(u) = 0.5 u (1 + tanh(c (u + k u^3))); t = tanh(...) is kept for backward.
            np.multiply(u, u, out=t)
            t *= GELU_K
            t += 1.0
            t *= u
            t *= GELU_C
            np.tanh(t, out=t)
            np.add(t, 1.0, out=g)
            g *= u
            g *= 0.5
            np.matmul(g, P[p + "mlp.c_proj.weight"].T, out=ws.tmp_nc)
            ws.tmp_nc += P[p + "mlp.c_proj.bias"]
            x += ws.tmp_nc
        layernorm_fwd(x, P["transformer.ln_f.weight"], P["transformer.ln_f.bias"], eps,
                      ws.lnf, ws.hf)
        wte = P["transformer.wte.weight"]
        logits = ws.logits
        np.matmul(ws.hf, wte.T, out=logits)                                # (N, V)
        loss = softmax_xent_fwd_bwd(logits, targets.reshape(N))           # logits -> dlogits

        # ---- backward -----------------------------------------------------------------------
        dlogits = logits
        gwte = G["transformer.wte.weight"]
        np.matmul(dlogits.T, ws.hf, out=gwte)                              # tied lm_head part
        np.matmul(dlogits, wte, out=ws.dh)
        dx = ws.dx
        layernorm_bwd(ws.dh, P["transformer.ln_f.weight"], ws.lnf, G["transformer.ln_f.weight"],
                      G["transformer.ln_f.bias"], dx, ws.tmp_nc)
        for i in reversed(range(L)):
            lw, p = ws.layers[i], f"{pre}{i}."
            # mlp: x = x + c_proj(gelu(c_fc(h2)))
            np.matmul(dx.T, lw.g, out=G[p + "mlp.c_proj.weight"])
            np.sum(dx, axis=0, out=G[p + "mlp.c_proj.bias"])
            dg = ws.dg
            np.matmul(dx, P[p + "mlp.c_proj.weight"], out=dg)
            # GELU': 0.5 (1 + t) + 0.5 u (1 - t^2) c (1 + 3 k u^2); u and t are dead afterwards.
            u, t, a = lw.u, lw.t, ws.tmp_n4c
            np.multiply(u, u, out=a)
            a *= 3.0 * GELU_K * GELU_C
            a += GELU_C
            a *= u
            a *= 0.5
            np.multiply(t, t, out=u)
            np.subtract(1.0, u, out=u)
            a *= u
            t += 1.0
            t *= 0.5
            a += t
            dg *= a                                                        # dg is now du
            np.matmul(dg.T, lw.h2, out=G[p + "mlp.c_fc.weight"])
            np.sum(dg, axis=0, out=G[p + "mlp.c_fc.bias"])
            np.matmul(dg, P[p + "mlp.c_fc.weight"], out=ws.dh)
            layernorm_bwd(ws.dh, P[p + "ln_2.weight"], lw.ln2, G[p + "ln_2.weight"],
                          G[p + "ln_2.bias"], dx, ws.tmp_nc, accumulate=True)
            # attn: x = x + c_proj(y), y = softmax(q k^T + M) v
            np.matmul(dx.T, lw.y, out=G[p + "attn.c_proj.weight"])
            np.sum(dx, axis=0, out=G[p + "attn.c_proj.bias"])
            np.matmul(dx, P[p + "attn.c_proj.weight"], out=ws.dy)
            dy = _heads(ws.dy, B, T, nh, hs)                               # (B, nh, T, hs)
            q, k, v = _qkv_views(lw.qkv, B, T, nh, hs)                    # q already scaled
            dq, dk, dv = _qkv_views(ws.dqkv, B, T, nh, hs)
            att, datt = lw.att, ws.datt
            np.matmul(dy, v.transpose(0, 1, 3, 2), out=datt)              # (B, nh, T, T)
            np.matmul(att.transpose(0, 1, 3, 2), dy, out=dv)
            # softmax': dS = A * (dA - rowsum(dA * A)); masked entries have A = 0 so dS = 0.
            np.einsum("bhij,bhij->bhi", datt, att, out=ws.mx[..., 0])
            datt -= ws.mx
            datt *= att
            np.matmul(datt, k, out=dq)
            dq *= scale                                                    # S = (scale q) k^T
            np.matmul(datt.transpose(0, 1, 3, 2), q, out=dk)
            np.matmul(ws.dqkv.T, lw.h1, out=G[p + "attn.c_attn.weight"])
            np.sum(ws.dqkv, axis=0, out=G[p + "attn.c_attn.bias"])
            np.matmul(ws.dqkv, P[p + "attn.c_attn.weight"], out=ws.dh)
            layernorm_bwd(ws.dh, P[p + "ln_1.weight"], lw.ln1, G[p + "ln_1.weight"],
                          G[p + "ln_1.bias"], dx, ws.tmp_nc, accumulate=True)
        gwpe = G["transformer.wpe.weight"]
        np.sum(dx.reshape(B, T, C), axis=0, out=gwpe[:T])                 # (T, C)
        gwpe[T:] = 0.0
        V = cfg.vocab_size
        if V * N <= self._onehot_max:
            onehot = np.zeros((V, N), dt)
            onehot[idx_f, np.arange(N)] = 1.0
            gwte += onehot @ dx
        else:
            np.add.at(gwte, idx_f, dx)
        return loss, G

    def loss(self, params, idx, targets):
        """Forward-only loss (runs the full step; used by finite-difference checks)."""
        return self.loss_and_grads(params, idx, targets)[0]
