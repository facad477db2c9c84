"""torch.nn's Transformer modules (re-exported by tinygradx.nn): MultiheadAttention,
TransformerEncoderLayer / TransformerEncoder, TransformerDecoderLayer / TransformerDecoder and
Transformer, with torch's argument names, defaults (sequence first unless batch_first=True),
parameter names (in_proj_weight, in_proj_bias, out_proj, linear1, norm1, ...) and mask
conventions, so a torch state dict loads as it is and a torch script runs unchanged.

tinygradx's own nn.MultiHeadAttention (capital H, in nn.py) stays as it is: batch first, four
Linear projections w_q, w_k, w_v, w_o, and is_causal builds a bottom-right causal mask. This
module's MultiheadAttention is torch's: one packed in_proj_weight (3E, E), inputs (L, N, E)
by default, weights returned averaged over heads unless average_attn_weights=False, and
is_causal only a hint that needs the attn_mask itself (as in torch). Both read a bool mask
as True = may NOT attend, and add a float mask to the scores; F.scaled_dot_product_attention
is the one that reads a bool mask as True = may attend.

Everything is composed of the engine's ops (linear, matmul, softmax, dropout, layer_norm),
so the modules draw and differentiate to any order. torch's fast paths (the nested-tensor
encoder in eval, fused attention kernels) compute the same math and are not reproduced; one
difference remains: a query whose keys are all masked gets zero weights here (tinygradx's
softmax rule), NaN in torch.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from .. import functional as F
from . import init
from ..autograd import OpError
from ..tensor.creation import full
from .layers import Dropout, LayerNorm, Linear   # nn's own: isinstance(m, nn.Linear) holds
from .containers import ModuleList
from .module import Module, Parameter
from ..tensor import Tensor

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _additive(mask, dtype, what):
    """A mask as something to add to the scores: bool True -> -inf, a float Tensor as is."""
    if mask is None:
        return None
    if isinstance(mask, Tensor):
        if mask.dtype == np.bool_:
            return Tensor(np.where(mask.numpy(), -np.inf, 0.0).astype(dtype))
        if mask.dtype.kind != "f":
            raise TypeError(f"MultiheadAttention: {what} must be bool or float, got "
                            f"{mask.dtype}")
        return mask
    m = np.asarray(mask)
    return Tensor(np.where(m, -np.inf, 0.0).astype(dtype) if m.dtype == np.bool_ else
                  m.astype(dtype))


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: softmax(Q K^T / sqrt(d_head) + mask) V per head, then
    out_proj. query (L, N, E) (or (N, L, E) with batch_first, or (L, E)), key/value (S, N,
    kdim/vdim). attn_mask (L, S) or (N*num_heads, L, S): bool True = may NOT attend, float
    added; key_padding_mask (N, S): True = padding. Returns (attn_output, attn_weights):
    weights (N, L, S) averaged over heads, (N, num_heads, L, S) with
    average_attn_weights=False, None with need_weights=False."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        for name, v in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"MultiheadAttention: {name} must be a positive int, got "
                                 f"{v!r}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by "
                             f"num_heads {num_heads}")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported by tinygradx")
        if not 0 <= dropout < 1:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1), got {dropout!r}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim, self.batch_first = embed_dim // num_heads, batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        E = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.zeros((3 * E, E), np.float32))
            init.xavier_uniform_(self.in_proj_weight)
        else:
            self.in_proj_weight = None
            self.q_proj_weight = Parameter(np.zeros((E, E), np.float32))
            self.k_proj_weight = Parameter(np.zeros((E, self.kdim), np.float32))
            self.v_proj_weight = Parameter(np.zeros((E, self.vdim), np.float32))
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        self.in_proj_bias = Parameter(np.zeros(3 * E, np.float32)) if bias else None
        self.out_proj = Linear(E, E, bias=bias)
        if bias:
            init.zeros_(self.out_proj.bias)
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def _weights(self):
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:E], w[E:2 * E], w[2 * E:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None,) * 3 if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        return ws, bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that needs the "
                             "causal attn_mask itself (as in torch); pass attn_mask=nn."
                             "Transformer.generate_square_subsequent_mask(L)")
        unbatched = query.ndim == 2
        if unbatched:                                     # (L, E) -> (L, 1, E)
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0) \
                    if isinstance(key_padding_mask, Tensor) else \
                    np.asarray(key_padding_mask)[None]
        elif self.batch_first:                            # (N, L, E) -> (L, N, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S = key.shape[0]
        if E != self.embed_dim:
            raise OpError(f"MultiheadAttention: query has {E} features, expected embed_dim="
                          f"{self.embed_dim}")
        h, hd = self.num_heads, self.head_dim
        (wq, wk, wv), (bq, bk, bv) = self._weights()
        # (L, N, E) -> (L, N, h, hd) -> (N, h, L, hd)
        q = F.linear(query, wq, bq).reshape(L, N, h, hd).permute(1, 2, 0, 3)
        k = F.linear(key, wk, bk).reshape(S, N, h, hd).permute(1, 2, 0, 3)
        v = F.linear(value, wv, bv).reshape(S, N, h, hd).permute(1, 2, 0, 3)
        scores = (q * (1.0 / math.sqrt(hd))) @ k.mT       # (N, h, L, S)
        am = _additive(attn_mask, scores.dtype, "attn_mask")
        if am is not None:
            if am.ndim == 3:                              # (N*h, L, S) -> (N, h, L, S)
                am = am.reshape(N, h, L, S)
            elif tuple(am.shape) != (L, S):
                raise OpError(f"MultiheadAttention: attn_mask has shape {tuple(am.shape)}, "
                              f"expected {(L, S)} or {(N * h, L, S)}")
            scores = scores + am
        kp = _additive(key_padding_mask, scores.dtype, "key_padding_mask")
        if kp is not None:
            if tuple(kp.shape) != (N, S):
                raise OpError(f"MultiheadAttention: key_padding_mask has shape "
                              f"{tuple(kp.shape)}, expected (N, S) = {(N, S)}")
            scores = scores + kp.reshape(N, 1, 1, S)      # (N, 1, 1, S)
        a = F.softmax(scores, dim=-1)
        a = F.dropout(a, self.dropout, self.training) if self.dropout else a
        z = (a @ v).permute(2, 0, 1, 3).reshape(L, N, E)  # heads concatenated: (L, N, E)
        out = self.out_proj(z)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)                     # (N, L, E)
        if not need_weights:
            return out, None
        a = a.mean(dim=1) if average_attn_weights else a  # (N, L, S) or (N, h, L, S)
        return out, (a.squeeze(0) if unbatched else a)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise ValueError(f"activation should be relu/gelu or a callable, not {activation!r}")


class _Layer(Module):
    def _sublayers(self, n, d_model, dim_feedforward, dropout, activation, layer_norm_eps, bias,
                   norm_first, device, dtype):
        """The feed-forward block and the n residual sublayers' norms and dropouts, under
        torch's names and in torch's order (so state_dicts load either way)."""
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        for i in range(1, n + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        for i in range(1, n + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = activation
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self._act(self.linear1(x)))))

    @property
    def _act(self):
        return _activation(self.activation)


class TransformerEncoderLayer(_Layer):
    """torch.nn.TransformerEncoderLayer: self-attention and a feed-forward block, each with a
    residual and LayerNorm (after, or before with norm_first=True)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first)
        self._sublayers(2, d_model, dim_feedforward, dropout, activation, layer_norm_eps, bias,
                        norm_first, device, dtype)

    def _sa_block(self, x, mask, padding, is_causal):
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerDecoderLayer(_Layer):
    """torch.nn.TransformerDecoderLayer: masked self-attention, attention over the encoder's
    memory (multihead_attn) and a feed-forward block, each with a residual and LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first)
        self._sublayers(3, d_model, dim_feedforward, dropout, activation, layer_norm_eps, bias,
                        norm_first, device, dtype)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self._act(self.linear1(x)))))

    def _sa_block(self, x, mask, padding, is_causal):
        return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding,
                                            need_weights=False, is_causal=is_causal)[0])

    def _mha_block(self, x, mem, mask, padding, is_causal):
        return self.dropout2(self.multihead_attn(x, mem, mem, attn_mask=mask,
                                                 key_padding_mask=padding, need_weights=False,
                                                 is_causal=is_causal)[0])

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))


def _clones(layer, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"num_layers must be a non-negative int, got {n!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers copies of encoder_layer, then `norm` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: num_layers copies of decoder_layer, then `norm` if given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """torch.nn.Transformer: an encoder and a decoder stack (each ending in a LayerNorm),
    every parameter of more than one dim initialised xavier_uniform_ as torch's. forward(src
    (S, N, E), tgt (T, N, E)) -> (T, N, E) (batch first with batch_first=True); no embedding
    and no output projection, as in torch."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        args = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                    dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                    batch_first=batch_first, norm_first=norm_first, bias=bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(**args), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(**args), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        b = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[b] != tgt.shape[b]:
            raise OpError(f"Transformer: the batch number of src ({src.shape[b]}) and tgt "
                          f"({tgt.shape[b]}) must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise OpError(f"Transformer: the feature number of src ({src.shape[-1]}) and tgt "
                          f"({tgt.shape[-1]}) must be equal to d_model ({self.d_model})")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: -inf above the diagonal (position i may not see j > i), 0
        elsewhere; added to the scores."""
        return full((sz, sz), float("-inf"), dtype=dtype or np.float32).triu(1)
