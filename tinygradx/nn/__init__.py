"""tinygradx.nn: Module, Parameter and the layers a Transformer is made of.

The seed's layers (Linear, Embedding, LayerNorm, Dropout, ReLU, GELU) live in layers.py;
MultiHeadAttention, RMSNorm and more activations here; Module, Parameter, module paths in
module.py and the containers in containers.py; torch's convolution, recurrent and Transformer
modules and the losses as modules in their own files. All are re-exported here (`tgx.nn.X`).
"""
from __future__ import annotations


import numpy as np

from .. import functional as F
from ..autograd import STATE, OpError, current_scope
from .containers import ModuleDict, ModuleList, Sequential
from .module import Identity, Module, Parameter, StateDictError
from ..tensor import Tensor

from .layers import (GELU, Dropout, Embedding, LayerNorm, Linear, ReLU,  # noqa: F401
                     int_arg, prob_arg, uniform_table)

__all__ = ["StateDictError", "Parameter", "Module", "Sequential", "ModuleList", "ModuleDict",
           "Identity", "Linear", "Embedding", "LayerNorm", "Dropout", "ReLU", "GELU",
           "MultiHeadAttention"]


class MultiHeadAttention(Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K,
    V W_i^V), with explicit projections w_q, w_k, w_v (d_model -> h*d_k) and w_o.

    Shapes (batch first): query (B, n, d_model), key/value (B, m, d_model) -> (B, n, d_model).
    Self-attention passes the same tensor three times; cross-attention passes the decoder state
    as query and the encoder output H as key and value.

    Masks follow torch.nn.MultiheadAttention: `attn_mask` (n, m) or (B*h or B, h, n, m) is a
    bool mask where True means "may NOT attend", or a float mask added to the scores;
    `key_padding_mask` (B, m) is True at padded keys. A query row whose keys are all masked
    gets zero weights (no NaN). With need_weights the attention weights A are returned as
    (B, h, n, m), or averaged over heads to (B, n, m) with average_attn_weights=True.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, kdim=None, vdim=None):
        embed_dim = int_arg("MultiHeadAttention", "embed_dim", embed_dim)
        num_heads = int_arg("MultiHeadAttention", "num_heads", num_heads)
        prob_arg("MultiHeadAttention", "dropout", dropout, upper_open=True)
        for name, d in (("kdim", kdim), ("vdim", vdim)):
            if d is not None:
                int_arg("MultiHeadAttention", name, d)
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} is not divisible by "
                             f"num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.w_q = Linear(embed_dim, embed_dim, bias)
        self.w_k = Linear(kdim or embed_dim, embed_dim, bias)
        self.w_v = Linear(vdim or embed_dim, embed_dim, bias)
        self.w_o = Linear(embed_dim, embed_dim, bias)

    def _split(self, x):
        B, n, _ = x.shape
        x = x.reshape(B, n, self.num_heads, self.head_dim)   # (B, n, h, d_k)
        return x.transpose(1, 2)                              # (B, h, n, d_k)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None,
                need_weights=False, average_attn_weights=True, is_causal=False):
        B, n, d = query.shape
        m = key.shape[1]
        q = self._split(self.w_q(query))                      # Q = X W^Q: (B, h, n, d_k)
        k = self._split(self.w_k(key))                        # K = X W^K: (B, h, m, d_k)
        v = self._split(self.w_v(value))                      # V = X W^V: (B, h, m, d_v)
        blocked = None                                        # True = may not attend
        additive = None
        if attn_mask is not None:
            if isinstance(attn_mask, Tensor) and attn_mask.requires_grad:
                raise TypeError("MultiHeadAttention: attn_mask is read as a constant here and "
                                "would get no gradient; for a learned bias call "
                                "F.scaled_dot_product_attention or F.attention with it")
            am = attn_mask._data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
            if am.ndim == 3:                                  # (B*h, n, m) as in PyTorch
                am = am.reshape(B, self.num_heads, n, m)      # (B, h, n, m)
            if am.dtype == np.bool_:
                blocked = am
            else:
                additive = am
        if key_padding_mask is not None:
            kp = key_padding_mask._data if isinstance(key_padding_mask, Tensor) \
                else np.asarray(key_padding_mask)
            if kp.shape != (B, m):
                raise OpError(f"MultiHeadAttention at {current_scope() or '<top>'}: "
                              f"key_padding_mask has shape {kp.shape}, expected (B, m) = "
                              f"{(B, m)}")
            kp = kp.astype(bool)[:, None, None, :]            # (B, 1, 1, m)
            blocked = kp if blocked is None else (blocked | kp)
        if is_causal:
            causal = np.triu(np.ones((n, m), dtype=bool), k=1 + m - n)
            blocked = causal if blocked is None else (blocked | causal)
        mask = None
        if blocked is not None:
            mask = ~blocked
            if additive is not None:
                additive = np.where(blocked, -np.inf, additive)
                mask = None
        if additive is not None:
            mask = additive
        z, a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
            return_weights=True)                              # Z: (B, h, n, d_v)
        z = z.transpose(1, 2).reshape(B, n, d)  # Concat(head_1..head_h): (B, n, h*d_v)
        out = self.w_o(z)                                     # Concat(...) W^O: (B, n, d_model)
        if not need_weights:
            return out, None
        return out, (a.mean(dim=1) if average_attn_weights else a)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


from .loss_modules import *  # noqa: E402, F403  (the losses of F as modules)
from .loss_modules import __all__ as _loss_names  # noqa: E402

__all__ += _loss_names


# more activations and RMSNorm (at the end of the file: no line above moves)
__all__ += ["SiLU", "Softplus", "LeakyReLU", "ELU", "SELU", "Mish", "LogSigmoid", "Hardtanh",
            "ReLU6", "RMSNorm"]


class SiLU(Module):
    """x * sigmoid(x)."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.silu(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """log(1 + exp(beta x)) / beta; x itself where beta x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class LeakyReLU(Module):
    """x where x > 0, negative_slope * x elsewhere."""

    def __init__(self, negative_slope=0.01, inplace=False):
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""

    def __init__(self, alpha=1.0, inplace=False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SELU(Module):
    """scale * elu(x, alpha) with SELU's fixed constants."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.selu(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(Module):
    """x * tanh(softplus(x))."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.mish(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LogSigmoid(Module):
    """log(sigmoid(x)), without overflow."""

    def forward(self, x):
        return F.logsigmoid(x)


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val "
                             f"({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class ReLU6(Module):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.relu6(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims (torch.nn.RMSNorm); eps=None is
    the machine epsilon of the input's dtype; weight starts at ones."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)):
            raise TypeError(f"RMSNorm: normalized_shape must be an int or a tuple of ints, "
                            f"got {normalized_shape!r}")
        self.normalized_shape = tuple(int_arg("RMSNorm", "normalized_shape", n)
                                      for n in normalized_shape)
        if eps is not None and (isinstance(eps, bool) or not isinstance(
                eps, (int, float, np.floating)) or eps < 0):
            raise ValueError(f"RMSNorm: eps must be None or a non-negative number, got {eps!r}")
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(np.ones(self.normalized_shape, np.float32)) \
            if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")

# PyTorch's initialisers, as tgx.nn.init (init.py); last, so line numbers the docs quote stay
from . import init  # noqa: E402, F401  (re-exported: tgx.nn.init)


# -- more activations and reshaping layers as modules (torch's names) ------------------------

class Softmax(Module):
    """F.softmax along dim. dim=None picks torch's legacy implicit dim (0 for 0-, 1- and 3-d
    inputs, else 1); give dim explicitly."""

    def __init__(self, dim=None):
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, _implicit_dim(self.dim, x))

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """F.log_softmax along dim (dim=None as Softmax)."""

    def forward(self, x):
        return F.log_softmax(x, _implicit_dim(self.dim, x))


def _implicit_dim(dim, x):
    return dim if dim is not None else (0 if x.ndim in (0, 1, 3) else 1)


class Tanh(Module):
    """tanh(x)."""
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    """1 / (1 + e^-x)."""
    def forward(self, x):
        return x.sigmoid()


class Flatten(Module):
    """x.flatten(start_dim, end_dim); by default every dim but the batch (start_dim=1)."""
    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """x.unflatten(dim, unflattened_size): one dim becomes several."""
    def __init__(self, dim, unflattened_size):
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
    """torch's Embedding.from_pretrained: on a copy of a 2-d float table, frozen by default."""
    table = np.array(embeddings._data if isinstance(embeddings, Tensor) else embeddings)
    if table.ndim != 2 or table.dtype.kind != "f":
        raise ValueError(f"Embedding.from_pretrained: expected a 2-d float table, got shape "
                         f"{table.shape} of dtype {table.dtype}")
    state = STATE.rng.bit_generator.state    # the table it replaces must not use up draws
    emb = cls(*table.shape, padding_idx=padding_idx)
    STATE.rng.bit_generator.state = state
    emb.weight = Parameter(table, requires_grad=not freeze)
    return emb


Embedding.from_pretrained = classmethod(_from_pretrained)   # here: docs quote lines above
from .containers import ParameterDict, ParameterList  # noqa: E402  (containers, as Module's)
from . import conv_layers, pool_layers, resample_layers, rnn, transformer_layers  # noqa: E402
from .conv_layers import *  # noqa: E402, F403  (torch's layers, by concept)
from .pool_layers import *  # noqa: E402, F403
from .resample_layers import *  # noqa: E402, F403
from .rnn import *  # noqa: E402, F403
from .transformer_layers import *  # noqa: E402, F403


__all__ += ["Softmax", "LogSoftmax", "Tanh", "Sigmoid", "Flatten", "Unflatten", "ParameterList",
            "ParameterDict"]
__all__ += conv_layers.__all__ + pool_layers.__all__ + resample_layers.__all__ + rnn.__all__ + \
    transformer_layers.__all__

from . import dropout, normalization  # noqa: E402  (norms; dropout of channels, alpha)
from .dropout import *  # noqa: E402, F403
from .normalization import *  # noqa: E402, F403

__all__ += normalization.__all__ + dropout.__all__

from . import activation_layers  # noqa: E402  (the rest of torch's activations)
from .activation_layers import *  # noqa: E402, F403

__all__ += activation_layers.__all__

from . import adaptive, more_layers  # noqa: E402  (Bilinear, EmbeddingBag, ...; adaptive softmax)
from .adaptive import *  # noqa: E402, F403
from .more_layers import *  # noqa: E402, F403

__all__ += more_layers.__all__ + adaptive.__all__
