"""Hand-written numpy forward + backward of the original encoder-decoder Transformer: the floor.

Vaswani et al. (2017), Post-LN, as in models/nets/transformer.py's default:
    X = sqrt(d_model) * Emb[tokens] + PE                          (sinusoidal PE), then dropout
    encoder layer:  y = LN(x + Drop(MHA(x, x, x, src_pad)));  out = LN(y + Drop(FFN(y)))
    decoder layer:  y1 = LN(x + Drop(MHA(x, x, x, causal)))
                    y2 = LN(y1 + Drop(MHA(y1, H, H, src_pad)))  (Q from decoder, K, V from H)
                    out = LN(y2 + Drop(FFN(y2)))
    FFN(x) = w_2(Drop(ReLU(w_1(x)))); MHA drops the attention probabilities (as the Annotated
    Transformer and torch.nn.Transformer do); generator: log_softmax(x @ G.T + b), NLL averaged
    over target tokens that are not the pad id (0).
Masked scores are *replaced* by a large finite negative (-1e9, masked_fill as in the Annotated
Transformer), not added to: a fully padded row then gives exactly uniform weights (no NaN) that do
not depend on the scores, identically in float32 and float64. Dropout is inverted dropout drawn
from a numpy Generator; ``record_masks`` keeps the masks so torch can replay them for exact checks.

Speed choices as in bench/numpy_gpt.py: buffers per (B, S, T) reused across steps, fused
backward formulas, Q/K/V as one matmul when the weights are adjacent in the flat parameter buffer
(they are for ``init_params``), ReLU and its dropout folded into one multiply by a combined mask.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from numpy_common import (LNBuf, adam_step, cfg_get, contiguous_group, flat_dict,  # noqa: F401
                          layernorm_bwd, layernorm_fwd, softmax_xent_fwd_bwd, stacked)


@dataclass
class EncDecConfig:
    src_vocab: int = 32
    tgt_vocab: int = 32
    d_model: int = 128
    h: int = 4
    n_enc: int = 2
    n_dec: int = 2
    d_ff: int = 512
    dropout: float = 0.1
    max_len: int = 512
    pad_id: int = 0
    ln_eps: float = 1e-5
    mask_value: float = -1e9
    dtype: str = "float32"


def _attn_shapes(p, d):
    # Weights first and adjacent (w_q, w_k, w_v), then biases: lets Q, K, V run as one matmul.
    return ([(f"{p}.{w}.weight", (d, d)) for w in ("w_q", "w_k", "w_v", "w_o")]
            + [(f"{p}.{w}.bias", (d,)) for w in ("w_q", "w_k", "w_v", "w_o")])


def _torch_order(shapes):
    """Names in torch's named_parameters() order (weight then bias per Linear)."""
    names = [n for n, _ in shapes]
    out = []
    for n in names:
        if n.endswith(".bias") and n[:-5] + ".weight" in names:
            continue
        out.append(n)
        if n.endswith(".weight") and n[:-7] + ".bias" in names:
            out.append(n[:-7] + ".bias")
    return out


def param_shapes(cfg):
    """(name, shape) in flat-buffer order."""
    g = lambda n: cfg_get(cfg, n)                                     # noqa: E731
    d, dff = g("d_model"), g("d_ff")
    out = [("src_embed.weight", (g("src_vocab"), d)), ("tgt_embed.weight", (g("tgt_vocab"), d))]
    ff = lambda p: [(f"{p}.ff.w_1.weight", (dff, d)), (f"{p}.ff.w_1.bias", (dff,)),  # noqa: E731
                    (f"{p}.ff.w_2.weight", (d, dff)), (f"{p}.ff.w_2.bias", (d,))]
    ln = lambda p, k: [(f"{p}.norm{k}.weight", (d,)), (f"{p}.norm{k}.bias", (d,))]  # noqa: E731
    for i in range(g("n_enc")):
        p = f"encoder.layers.{i}"
        out += _attn_shapes(p + ".self_attn", d) + ff(p) + ln(p, 1) + ln(p, 2)
    for i in range(g("n_dec")):
        p = f"decoder.layers.{i}"
        out += (_attn_shapes(p + ".self_attn", d) + _attn_shapes(p + ".cross_attn", d) + ff(p)
                + ln(p, 1) + ln(p, 2) + ln(p, 3))
    out += [("generator.weight", (g("tgt_vocab"), d)), ("generator.bias", (g("tgt_vocab"),))]
    return out


def empty_params(cfg, dtype=None):
    dtype = np.dtype(dtype or cfg_get(cfg, "dtype", "float32"))
    shapes = param_shapes(cfg)
    return flat_dict(shapes, dtype, order=_torch_order(shapes))


def init_params(cfg, seed=0, dtype=None):
    """Xavier-uniform for every 2-D tensor (the Annotated Transformer's init), zero biases,
    LayerNorm weight 1 / bias 0. Drawn in float64 and cast."""
    rng = np.random.default_rng(seed)
    params = empty_params(cfg, dtype)
    for name, a in params.items():
        if a.ndim == 2:
            bound = math.sqrt(6.0 / (a.shape[0] + a.shape[1]))
            a[...] = rng.uniform(-bound, bound, size=a.shape)
        elif ".norm" in name and name.endswith("weight"):
            a[...] = 1.0
        else:
            a[...] = 0.0
    return params


def sinusoidal_pe(max_len, d):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    pos = np.arange(max_len)[:, None]
    div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = np.zeros((max_len, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
    return pe


# ----------------------------------------------------------------------------------------------
# Buffers
# ----------------------------------------------------------------------------------------------

class _AttnWS:
    __slots__ = ("qkv", "q", "kv", "a", "ad", "dm", "y", "odm")

    def __init__(self, B, Tq, Tk, d, h, dt, is_self, drop):
        if is_self:
            self.qkv = np.empty((B * Tq, 3 * d), dt)
        else:
            self.q = np.empty((B * Tq, d), dt)
            self.kv = np.empty((B * Tk, 2 * d), dt)
        self.a = np.empty((B, h, Tq, Tk), dt)                 # softmax output (pre-dropout)
        self.ad = np.empty((B, h, Tq, Tk), dt) if drop else self.a
        self.dm = np.empty((B, h, Tq, Tk), dt) if drop else None
        self.y = np.empty((B * Tq, d), dt)                    # heads merged, (B, Tq, d) layout
        self.odm = np.empty((B * Tq, d), dt) if drop else None   # sublayer-output dropout mask


class _FFWS:
    __slots__ = ("hd", "cm", "odm")

    def __init__(self, N, d, dff, dt, drop):
        self.hd = np.empty((N, dff), dt)                      # Drop(ReLU(w_1 x))
        self.cm = np.empty((N, dff), dt)                      # (w_1 x > 0) * dropout mask
        self.odm = np.empty((N, d), dt) if drop else None


class _LayerWS:
    def __init__(self, kinds, B, T, S, d, h, dff, dt, drop):
        N = B * T
        self.attn = [_AttnWS(B, T, T if k == "self" else S, d, h, dt, k == "self", drop)
                     for k in kinds]
        self.ff = _FFWS(N, d, dff, dt, drop)
        self.ln = [LNBuf(N, d, dt) for _ in range(len(kinds) + 1)]
        self.xs = [np.empty((N, d), dt) for _ in range(len(kinds) + 1)]   # each LN's output


class _Workspace:
    def __init__(self, cfg, B, S, T, dt):
        d, h, dff, drop = cfg.d_model, cfg.h, cfg.d_ff, cfg.dropout > 0
        self.enc = [_LayerWS(["self"], B, S, S, d, h, dff, dt, drop) for _ in range(cfg.n_enc)]
        self.dec = [_LayerWS(["self", "cross"], B, T, S, d, h, dff, dt, drop)
                    for _ in range(cfg.n_dec)]
        self.x_src = np.empty((B * S, d), dt)
        self.x_tgt = np.empty((B * T, d), dt)
        self.edm_src = np.empty((B * S, d), dt) if drop else None
        self.edm_tgt = np.empty((B * T, d), dt) if drop else None
        self.logits = np.empty((B * T, cfg.tgt_vocab), dt)
        n_max = B * max(S, T)
        self.z = np.empty((n_max, d), dt)                     # pre-LN sum x + Drop(sub(x))
        self.tmp = np.empty((n_max, d), dt)
        self.dx = np.empty((n_max, d), dt)
        self.dz = np.empty((n_max, d), dt)
        self.dy = np.empty((n_max, d), dt)
        self.dsub = np.empty((n_max, d), dt)
        self.dmem = np.empty((B * S, d), dt)                  # gradient w.r.t. encoder output H
        self.dff = np.empty((n_max, dff), dt)
        self.dqkv = np.empty((n_max, 3 * d), dt)
        self.dkv = np.empty((B * S, 2 * d), dt)
        self.dq = np.empty((B * T, d), dt)
        self.datt = {(Tq, Tk): np.empty((B, h, Tq, Tk), dt) for Tq, Tk in ((S, S), (T, T), (T, S))}
        self.rs = {(Tq, Tk): np.empty((B, h, Tq, 1), dt) for Tq, Tk in ((S, S), (T, T), (T, S))}
        self.causal = np.triu(np.ones((T, T), bool), k=1)          # True above the diagonal


def _heads(a, B, T, h, dk):
    return a.reshape(B, T, h, dk).transpose(0, 2, 1, 3)                # (B, h, T, dk)


def _split(a, n, B, T, h, dk):
    a5 = a.reshape(B, T, n, h, dk)                                     # (B, T, n, h, dk)
    return [a5[:, :, j].transpose(0, 2, 1, 3) for j in range(n)]       # n x (B, h, T, dk)


class NumpyEncDec:
    """The encoder-decoder training step in numpy. See the module docstring."""

    def __init__(self, cfg, seed=0, record_masks=False):
        if isinstance(cfg, dict):
            cfg = EncDecConfig(**cfg)
        self.cfg = cfg
        self.dtype = np.dtype(cfg.dtype)
        self.rng = np.random.default_rng(seed)
        self.training = True
        self.recorded = [] if record_masks else None
        self.pe = sinusoidal_pe(cfg.max_len, cfg.d_model).astype(self.dtype)
        self.grads = empty_params(cfg, self.dtype)
        self._ws = {}

    def _drop_on(self):
        return self.training and self.cfg.dropout > 0

    def _dropmask(self, buf):
        """Fill ``buf`` with an inverted-dropout mask: 0 with prob p, else 1/(1-p)."""
        p = self.cfg.dropout
        self.rng.random(out=buf, dtype=buf.dtype)
        np.greater_equal(buf, p, out=buf)
        buf *= 1.0 / (1.0 - p)
        if self.recorded is not None:
            self.recorded.append(buf.copy())
        return buf

    # ---- multi-head attention --------------------------------------------------------------------
    def _mha_fwd(self, P, pre, aw: _AttnWS, xq, xkv, mask, B, Tq, Tk, out):
        d, h = self.cfg.d_model, self.cfg.h
        dk = d // h
        if xkv is None:                                               # self-attention
            np.matmul(xq, stacked(P, [pre + ".w_q.weight", pre + ".w_k.weight",
                                      pre + ".w_v.weight"]).T, out=aw.qkv)
            aw.qkv += stacked(P, [pre + ".w_q.bias", pre + ".w_k.bias", pre + ".w_v.bias"])
            q, k, v = _split(aw.qkv, 3, B, Tq, h, dk)                 # (B, h, T, dk)
        else:                                                         # cross: K, V from memory
            np.matmul(xq, P[pre + ".w_q.weight"].T, out=aw.q)
            aw.q += P[pre + ".w_q.bias"]
            np.matmul(xkv, stacked(P, [pre + ".w_k.weight", pre + ".w_v.weight"]).T, out=aw.kv)
            aw.kv += stacked(P, [pre + ".w_k.bias", pre + ".w_v.bias"])
            q = _heads(aw.q, B, Tq, h, dk)                            # (B, h, Tq, dk)
            k, v = _split(aw.kv, 2, B, Tk, h, dk)                     # (B, h, Tk, dk)
        q *= 1.0 / math.sqrt(dk)                                      # fold the scale into Q
        a = aw.a
        np.matmul(q, k.transpose(0, 1, 3, 2), out=a)                  # (B, h, Tq, Tk)
        np.copyto(a, self.cfg.mask_value, where=mask)               # masked_fill
        rs = self._ws_cur.rs[(Tq, Tk)]
        np.max(a, axis=-1, keepdims=True, out=rs)
        a -= rs
        np.exp(a, out=a)
        np.sum(a, axis=-1, keepdims=True, out=rs)
        np.reciprocal(rs, out=rs)
        a *= rs
        if self._drop_on():
            np.multiply(a, self._dropmask(aw.dm), out=aw.ad)
        np.matmul(aw.ad, v, out=_heads(aw.y, B, Tq, h, dk))
        np.matmul(aw.y, P[pre + ".w_o.weight"].T, out=out)
        out += P[pre + ".w_o.bias"]
        return out

    def _mha_bwd(self, P, G, pre, aw: _AttnWS, xq, xkv, dout, B, Tq, Tk, dxq, dmem,
                 zero_mask=None):
        """dout (B*Tq, d) -> writes dxq; for cross-attention adds into dmem. ``zero_mask``: the
        boolean mask, when some row is fully masked (its uniform weights are then nonzero at
        replaced scores, whose gradient must be 0)."""
        ws = self._ws_cur
        d, h = self.cfg.d_model, self.cfg.h
        dk = d // h
        np.matmul(dout.T, aw.y, out=G[pre + ".w_o.weight"])
        np.sum(dout, axis=0, out=G[pre + ".w_o.bias"])
        Nq = B * Tq
        dy2 = ws.dy[:Nq]
        np.matmul(dout, P[pre + ".w_o.weight"], out=dy2)
        dy = _heads(dy2, B, Tq, h, dk)                                # (B, h, Tq, dk)
        if xkv is None:
            q, k, v = _split(aw.qkv, 3, B, Tq, h, dk)
            dqkv = ws.dqkv[:Nq]
            dq, dk_, dv = _split(dqkv, 3, B, Tq, h, dk)
        else:
            q = _heads(aw.q, B, Tq, h, dk)
            k, v = _split(aw.kv, 2, B, Tk, h, dk)
            dq = _heads(ws.dq, B, Tq, h, dk)
            dk_, dv = _split(ws.dkv, 2, B, Tk, h, dk)
        datt = ws.datt[(Tq, Tk)]
        np.matmul(dy, v.transpose(0, 1, 3, 2), out=datt)              # (B, h, Tq, Tk)
        np.matmul(aw.ad.transpose(0, 1, 3, 2), dy, out=dv)
        if self._drop_on():
            datt *= aw.dm
        rs = ws.rs[(Tq, Tk)]
        a = aw.a
        np.einsum("bhij,bhij->bhi", datt, a, out=rs[..., 0])
        datt -= rs
        datt *= a                                                     # dS
        if zero_mask is not None:
            np.copyto(datt, 0.0, where=zero_mask)
        np.matmul(datt, k, out=dq)
        dq *= 1.0 / math.sqrt(dk)
        np.matmul(datt.transpose(0, 1, 3, 2), q, out=dk_)            # q was scaled in place
        if xkv is None:
            gw = contiguous_group(G, [pre + ".w_q.weight", pre + ".w_k.weight",
                                      pre + ".w_v.weight"])
            np.matmul(dqkv.T, xq, out=gw)
            np.sum(dqkv, axis=0, out=contiguous_group(G, [pre + ".w_q.bias", pre + ".w_k.bias",
                                                           pre + ".w_v.bias"]))
            np.matmul(dqkv, stacked(P, [pre + ".w_q.weight", pre + ".w_k.weight",
                                        pre + ".w_v.weight"]), out=dxq)
        else:
            np.matmul(ws.dq.T, xq, out=G[pre + ".w_q.weight"])
            np.sum(ws.dq, axis=0, out=G[pre + ".w_q.bias"])
            np.matmul(ws.dq, P[pre + ".w_q.weight"], out=dxq)
            np.matmul(ws.dkv.T, xkv, out=contiguous_group(G, [pre + ".w_k.weight",
                                                              pre + ".w_v.weight"]))
            np.sum(ws.dkv, axis=0, out=contiguous_group(G, [pre + ".w_k.bias", pre + ".w_v.bias"]))
            tmp = ws.tmp[:B * Tk]
            np.matmul(ws.dkv, stacked(P, [pre + ".w_k.weight", pre + ".w_v.weight"]), out=tmp)
            dmem += tmp

    # ---- feed-forward ----------------------------------------------------------------------------
    def _ff_fwd(self, P, pre, fw: _FFWS, x, out):
        hd, cm = fw.hd, fw.cm
        np.matmul(x, P[pre + ".w_1.weight"].T, out=hd)
        hd += P[pre + ".w_1.bias"]
        # ReLU and dropout in one multiply: relu(u) * m = u * ((u > 0) * m); cm is kept as the
        # exact local derivative for backward.
        np.greater(hd, 0.0, out=cm)
        if self._drop_on():
            cm *= self._dropmask(self._ws_cur.dff[:hd.shape[0]])     # dff is free until backward
        hd *= cm
        np.matmul(hd, P[pre + ".w_2.weight"].T, out=out)
        out += P[pre + ".w_2.bias"]
        return out

    def _ff_bwd(self, P, G, pre, fw: _FFWS, x, dout, dx):
        N = x.shape[0]
        np.matmul(dout.T, fw.hd, out=G[pre + ".w_2.weight"])
        np.sum(dout, axis=0, out=G[pre + ".w_2.bias"])
        dh = self._ws_cur.dff[:N]
        np.matmul(dout, P[pre + ".w_2.weight"], out=dh)
        dh *= fw.cm
        np.matmul(dh.T, x, out=G[pre + ".w_1.weight"])
        np.sum(dh, axis=0, out=G[pre + ".w_1.bias"])
        np.matmul(dh, P[pre + ".w_1.weight"], out=dx)

    # ---- one Post-LN sublayer: x_out = LN(x + Drop(sub)) -----------------------------------------
    def _post_ln(self, P, pre_norm, lnb, x, sub, odm, x_out):
        N = x.shape[0]
        if self._drop_on():
            sub *= self._dropmask(odm)
        z = self._ws_cur.z[:N]
        np.add(x, sub, out=z)
        layernorm_fwd(z, P[pre_norm + ".weight"], P[pre_norm + ".bias"], self.cfg.ln_eps, lnb,
                      x_out)

    def _post_ln_bwd(self, P, G, pre_norm, lnb, dx_out, odm):
        """Returns dz (N, d) (gradient w.r.t. the residual input) and dsub (gradient w.r.t. the
        sublayer output), both scratch views."""
        N = dx_out.shape[0]
        ws = self._ws_cur
        dz = ws.dz[:N]
        layernorm_bwd(dx_out, P[pre_norm + ".weight"], lnb, G[pre_norm + ".weight"],
                      G[pre_norm + ".bias"], dz, ws.tmp[:N])
        dsub = ws.dsub[:N]
        if self._drop_on():
            np.multiply(dz, odm, out=dsub)
        else:
            dsub[...] = dz
        return dz, dsub

    # ---- embeddings ------------------------------------------------------------------------------
    def _embed(self, E, tok, x, edm):
        B, T = tok.shape
        np.take(E, tok.reshape(-1), axis=0, out=x)
        x *= math.sqrt(self.cfg.d_model)
        x.reshape(B, T, -1)[...] += self.pe[:T]                          # (B, T, d)
        if self._drop_on():
            x *= self._dropmask(edm)
        return x

    def _embed_bwd(self, gE, tok, dx, edm):
        if self._drop_on():
            dx *= edm
        n, V = dx.shape[0], gE.shape[0]
        onehot = np.zeros((V, n), dx.dtype)
        onehot[tok.reshape(-1), np.arange(n)] = math.sqrt(self.cfg.d_model)
        np.matmul(onehot, dx, out=gE)

    # ----------------------------------------------------------------------------------------------
    def loss_and_grads(self, params, src, tgt_in, tgt_out):
        cfg, dt = self.cfg, self.dtype
        B, S = src.shape
        T = tgt_in.shape[1]
        key = (B, S, T)
        ws = self._ws.get(key)
        if ws is None:
            ws = self._ws[key] = _Workspace(cfg, B, S, T, dt)
        self._ws_cur = ws
        P, G = params, self.grads
        Ns, Nt = B * S, B * T
        src_mask = (src == cfg.pad_id)[:, None, None, :]              # (B, 1, 1, S) bool
        # Only a fully padded source row has nonzero weights on masked keys (see _mha_bwd).
        full_rows = src_mask if bool(src_mask.all(axis=-1).any()) else None

        # ---- encoder ----
        x = self._embed(P["src_embed.weight"], src, ws.x_src, ws.edm_src)
        for i, lw in enumerate(ws.enc):
            pre = f"encoder.layers.{i}"
            aw = lw.attn[0]
            sub = self._mha_fwd(P, pre + ".self_attn", aw, x, None, src_mask, B, S, S,
                                ws.tmp[:Ns])
            self._post_ln(P, pre + ".norm1", lw.ln[0], x, sub, aw.odm, lw.xs[0])
            sub = self._ff_fwd(P, pre + ".ff", lw.ff, lw.xs[0], ws.tmp[:Ns])
            self._post_ln(P, pre + ".norm2", lw.ln[1], lw.xs[0], sub, lw.ff.odm, lw.xs[1])
            x = lw.xs[1]
        mem = x
        # ---- decoder ----
        x = self._embed(P["tgt_embed.weight"], tgt_in, ws.x_tgt, ws.edm_tgt)
        for i, lw in enumerate(ws.dec):
            pre = f"decoder.layers.{i}"
            a0, a1 = lw.attn
            sub = self._mha_fwd(P, pre + ".self_attn", a0, x, None, ws.causal, B, T, T,
                                ws.tmp[:Nt])
            self._post_ln(P, pre + ".norm1", lw.ln[0], x, sub, a0.odm, lw.xs[0])
            sub = self._mha_fwd(P, pre + ".cross_attn", a1, lw.xs[0], mem, src_mask, B, T, S,
                                ws.tmp[:Nt])
            self._post_ln(P, pre + ".norm2", lw.ln[1], lw.xs[0], sub, a1.odm, lw.xs[1])
            sub = self._ff_fwd(P, pre + ".ff", lw.ff, lw.xs[1], ws.tmp[:Nt])
            self._post_ln(P, pre + ".norm3", lw.ln[2], lw.xs[1], sub, lw.ff.odm, lw.xs[2])
            x = lw.xs[2]
        logits = ws.logits
        np.matmul(x, P["generator.weight"].T, out=logits)
        logits += P["generator.bias"]
        t_out = tgt_out.reshape(-1)
        loss = softmax_xent_fwd_bwd(logits, t_out, weight_rows=t_out != cfg.pad_id)

        # ---- backward ----
        np.matmul(logits.T, x, out=G["generator.weight"])
        np.sum(logits, axis=0, out=G["generator.bias"])
        dx = ws.dx[:Nt]
        np.matmul(logits, P["generator.weight"], out=dx)
        dmem = ws.dmem
        dmem[...] = 0.0
        for i in reversed(range(cfg.n_dec)):
            lw, pre = ws.dec[i], f"decoder.layers.{i}"
            a0, a1 = lw.attn
            x_in = ws.x_tgt if i == 0 else ws.dec[i - 1].xs[2]
            dz, dsub = self._post_ln_bwd(P, G, pre + ".norm3", lw.ln[2], dx, lw.ff.odm)
            self._ff_bwd(P, G, pre + ".ff", lw.ff, lw.xs[1], dsub, dx)
            dx += dz
            dz, dsub = self._post_ln_bwd(P, G, pre + ".norm2", lw.ln[1], dx, a1.odm)
            self._mha_bwd(P, G, pre + ".cross_attn", a1, lw.xs[0], mem, dsub, B, T, S, dx, dmem,
                          full_rows)
            dx += dz
            dz, dsub = self._post_ln_bwd(P, G, pre + ".norm1", lw.ln[0], dx, a0.odm)
            self._mha_bwd(P, G, pre + ".self_attn", a0, x_in, None, dsub, B, T, T, dx, None)
            dx += dz
        self._embed_bwd(G["tgt_embed.weight"], tgt_in, dx, ws.edm_tgt)
        dx = ws.dx[:Ns]
        dx[...] = dmem
        for i in reversed(range(cfg.n_enc)):
            lw, pre = ws.enc[i], f"encoder.layers.{i}"
            aw = lw.attn[0]
            x_in = ws.x_src if i == 0 else ws.enc[i - 1].xs[1]
            dz, dsub = self._post_ln_bwd(P, G, pre + ".norm2", lw.ln[1], dx, lw.ff.odm)
            self._ff_bwd(P, G, pre + ".ff", lw.ff, lw.xs[0], dsub, dx)
            dx += dz
            dz, dsub = self._post_ln_bwd(P, G, pre + ".norm1", lw.ln[0], dx, aw.odm)
            self._mha_bwd(P, G, pre + ".self_attn", aw, x_in, None, dsub, B, S, S, dx, None,
                          full_rows)
            dx += dz
        self._embed_bwd(G["src_embed.weight"], src, dx, ws.edm_src)
        return loss, G

    def loss(self, params, src, tgt_in, tgt_out):
        return self.loss_and_grads(params, src, tgt_in, tgt_out)[0]
