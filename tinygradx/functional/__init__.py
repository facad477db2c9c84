"""tinygradx.functional (imported as F): the functions a Transformer is written with.

Each fused op (softmax, log_softmax, layer_norm, cross_entropy, dropout) is one graph node with a
hand-derived backward (fused.py); each also has a `*_composite` twin built from primitive ops, so
the tests can prove fused == composite in value and gradient without any outside oracle.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import linalg as ops_linalg, tensor as core_tensor
from ..ops import attention as attention_op, fused
from .. import ops
from ..autograd import STATE, OpError, current_scope
from ..core.dims import check_dim
from ..tensor.creation import where
from ..tensor import Tensor


# ------------------------------------------------------------------------------------------
# activations
# ------------------------------------------------------------------------------------------

def relu(x, inplace=False):
    """max(x, 0) element-wise; the gradient passes where x > 0. inplace=True writes the result
    into x (as torch's relu_)."""
    return x.copy_(ops.Relu.apply(x.clone())) if inplace else ops.Relu.apply(x)


def relu_(x):
    """relu(x, inplace=True): max(x, 0) written into x."""
    return relu(x, inplace=True)


def gelu(x, approximate="none"):
    """x * Phi(x) with the exact erf, or the tanh approximation with approximate='tanh'."""
    return x.gelu(approximate)


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow."""
    return ops.Sigmoid.apply(x)


def tanh(x):
    """tanh(x) element-wise; d/dx = 1 - tanh^2."""
    return ops.Tanh.apply(x)


def softmax(x, dim=-1):
    """exp(x)/sum(exp(x)) along dim. The row max is subtracted first (it cancels in the
    gradient, so the fused op treats it as a constant). Fully masked (-inf) rows give zeros."""
    return fused.Softmax.apply(x, dim=check_dim("softmax", dim, x.ndim))


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along dim, computed without overflow."""
    return fused.LogSoftmax.apply(x, dim=check_dim("log_softmax", dim, x.ndim))


# ------------------------------------------------------------------------------------------
# layers as functions
# ------------------------------------------------------------------------------------------

def linear(x, weight, bias=None):
    """x @ weight.T + bias, weight in PyTorch's [out_features, in_features] layout.

    Shapes: x (..., in), weight (out, in), bias (out,) -> (..., out).
    """
    if bias is None:
        return ops_linalg.Linear.apply(x, weight)
    return ops_linalg.Linear.apply(x, weight, bias)


def embedding(input, weight, padding_idx=None):
    """Rows of weight picked by integer ids: input (...) int, weight (V, C) -> (..., C).

    The backward scatter-adds into the rows, so an id used twice gets both gradients;
    the row at padding_idx gets no gradient. A negative padding_idx counts from the end
    (-1 is the last row), as in PyTorch.
    """
    ids = input._data if isinstance(input, Tensor) else np.asarray(input)
    if padding_idx is not None:
        n = weight.shape[0]
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) \
                or not -n <= padding_idx < n:
            raise OpError(f"embedding{_where()}: padding_idx must be an int in {-n}..{n - 1} "
                          f"(the table has {n} rows), got {padding_idx!r}")
        padding_idx = int(padding_idx) % n       # -1 is the last row, as in PyTorch
    return ops_linalg.Embedding.apply(weight, ids=ids, padding_idx=padding_idx)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape dims.

    Biased variance with eps inside the square root, as torch.nn.functional.layer_norm.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    n = len(normalized_shape)
    if x.shape[x.ndim - n:] != normalized_shape or n > x.ndim:
        raise OpError(f"layer_norm{_where()}: input of shape {x.shape} does not end with "
                      f"normalized_shape {normalized_shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != normalized_shape:
            raise OpError(f"layer_norm{_where()}: {name} has shape {tuple(p.shape)}, "
                          f"expected {normalized_shape}")
    return core_tensor.layer_norm(x, normalized_shape, weight, bias, eps)    # one node


def _where():
    s = current_scope()
    return f" (in {s})" if s else ""


def dropout(x, p=0.5, training=True, inplace=False):
    """Inverted dropout: zero each element with probability p and scale the rest by 1/(1-p),
    so the expected value is unchanged and evaluation needs no rescaling. Identity when not
    training or p == 0. inplace=True writes the result into x (its views see it, as torch's)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if inplace:                                  # the same mask, multiplied in place
        return x.mul_(Tensor(fused.dropout_scale(STATE.rng, x.shape, p, x.dtype)))
    if p == 1.0:
        return x * 0.0
    return fused.Dropout.apply(x, p=p, rng=STATE.rng)


_CAUSAL_MASKS = {}


def causal_mask(n, m=None, dtype=np.float32):
    """The additive causal mask M (n, m): 0 where query i may read key j, -inf where j lies in
    its future, i.e. j > i + (m - n): aligned bottom-right, the n queries are the last n of the
    m positions, as with a KV cache (the cache paths pass it explicitly). `is_causal=True` of
    `attention` / `scaled_dot_product_attention` is aligned top-left instead, as in PyTorch
    (the two agree when n == m). A read-only numpy array, cached per (n, m, dtype); add it to
    the scores."""
    m = n if m is None else m
    key = (n, m, np.dtype(dtype))
    mask = _CAUSAL_MASKS.get(key)
    if mask is None:
        if len(_CAUSAL_MASKS) > 64:                  # many lengths (generation): keep it small
            _CAUSAL_MASKS.clear()
        mask = np.triu(np.full((n, m), -np.inf, dtype=key[2]), k=1 + (m - n))
        mask.flags.writeable = False
        _CAUSAL_MASKS[key] = mask
    return mask


def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
    """softmax(Q K^T / sqrt(d_k) + M) V as ONE graph node (attention_op.Attention), the fast path.

    The same arguments and numbers as `scaled_dot_product_attention` (tested equal, dropout
    included: the keep-mask is drawn as F.dropout draws it), without the attention weights.
    With enable_gqa the repeated K/V heads are made before the node.
    is_causal is aligned top-left as in PyTorch (query i sees keys j <= i); for n new queries
    against m cached keys pass `attn_mask=causal_mask(n, m)` (bottom-right). A float
    attn_mask Tensor that requires grad gets its gradient (dL/dM = dL/dScores), so a
    learned attention bias trains.
    """
    key, value = _heads_for("attention", query, key, value, enable_gqa)
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise OpError(f"attention{_where()}: query {query.shape}, key {key.shape} and value "
                      f"{value.shape}: query and key must share d_k, key and value the number "
                      f"of positions m")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    n, m = query.shape[-2], key.shape[-2]
    p = _attention_dropout("attention", dropout_p)
    if _learned(attn_mask):                          # a differentiable input of the node
        mask = attn_mask if attn_mask.dtype == query.dtype else attn_mask.to(query.dtype)
        if is_causal:
            mask = mask + Tensor(_top_left_causal(n, m, query.dtype))
        return attention_op.Attention.apply(query, key, value, mask, scale=scale, p=p,
                                            rng=STATE.rng)
    mask = None
    if attn_mask is not None:
        mask = attn_mask._data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
        if mask.dtype == np.bool_:
            mask = np.where(mask, 0.0, -np.inf)
        mask = mask.astype(query.dtype, copy=False)
    if is_causal:
        cm = _top_left_causal(n, m, query.dtype)
        mask = cm if mask is None else mask + cm
    return attention_op.Attention.apply(query, key, value, mask=mask, scale=scale, p=p,
                                        rng=STATE.rng)


def _learned(mask):
    """A float mask Tensor that needs a gradient (a learned attention bias)."""
    return (isinstance(mask, Tensor) and mask.requires_grad and STATE.grad_enabled
            and mask.dtype.kind == "f")


def _top_left_causal(n, m, dtype):
    """PyTorch's is_causal mask: query i sees keys j <= i (tril with diagonal 0), whatever
    n and m are. The same as causal_mask(n, m) when n == m."""
    if n == m:
        return causal_mask(n, m, dtype)
    return np.triu(np.full((n, m), -np.inf, dtype=dtype), k=1)


def _attention_dropout(name, p):
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{name}{_where()}: dropout_p must be in [0, 1), got {p}")
    return float(p)


def packed_attention(qkv, n_head, dropout_p=0.0, is_causal=False, scale=None, n_query=None):
    """Multi-head attention on a packed [Q K V] as ONE graph node (attention_op.PackedAttention).

    qkv (B, T, 3*h*d) holds Q, K, V side by side (the output of one Linear d_model -> 3*h*d,
    as GPT's c_attn); the result is Concat(head_1, ..., head_h) (B, T, h*d), before W^O. The
    same numbers as splitting into heads and calling `attention` (tested equal), with no
    split/transpose/concat nodes between. With n_query only the last n_query rows are queries
    (a KV cache: earlier rows supply K and V) and the result is (B, n_query, h*d).
    """
    if not isinstance(n_head, int) or n_head < 1:
        raise OpError(f"packed_attention{_where()}: n_head must be a positive int, got "
                      f"{n_head!r}")
    T = qkv.shape[1] if qkv.ndim == 3 else 0
    n = T if n_query is None else n_query
    if isinstance(n, np.integer):
        n = int(n)
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= max(T, 1):
        raise OpError(f"packed_attention{_where()}: n_query must be an int in 1..{T} (the "
                      f"rows of qkv {tuple(qkv.shape)}), got {n_query!r}")
    mask = causal_mask(n, T, qkv.dtype) if is_causal and n > 1 else None
    p = _attention_dropout("packed_attention", dropout_p)
    return attention_op.PackedAttention.apply(qkv, n_head=n_head, mask=mask, scale=scale, p=p,
                                       rng=STATE.rng, n_query=n)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False,
                                 return_weights=False):
    """softmax(Q K^T / sqrt(d_k) + M) V.

    Shapes: query (..., n, d_k), key (..., m, d_k), value (..., m, d_v) -> (..., n, d_v).
    attn_mask: a bool mask where True means "may attend" (PyTorch's convention for this
    function) or a float mask added to the scores (0 to keep, -inf to block); it broadcasts to
    (..., n, m); a float mask Tensor that requires grad gets its gradient. is_causal hides
    keys j > i, aligned top-left as in PyTorch (for n queries that are the last n of m
    positions, as with a KV cache, pass attn_mask=causal_mask(n, m) instead). enable_gqa:
    grouped-query attention, key and value with fewer heads (dim -3) than the query, each
    head repeated (repeat_interleave) for its group of Hq / Hkv query heads, as PyTorch. With
    return_weights the attention weights A (..., n, m) are returned too.
    """
    key, value = _heads_for("scaled_dot_product_attention", query, key, value, enable_gqa)
    if query.shape[-1] != key.shape[-1]:
        raise OpError(f"scaled_dot_product_attention{_where()}: query {query.shape} and key "
                      f"{key.shape} must share the last dim d_k")
    if key.shape[-2] != value.shape[-2]:
        raise OpError(f"scaled_dot_product_attention{_where()}: key {key.shape} and value "
                      f"{value.shape} must have the same number of positions m")
    dtypes = [getattr(t, "dtype", None) for t in (query, key, value)]
    if len(set(dtypes)) > 1:                         # torch refuses too (no promotion here)
        raise OpError(f"scaled_dot_product_attention{_where()}: query, key and value must "
                      f"have one dtype, got {', '.join(str(d) for d in dtypes)}")
    d_k, (key, value) = query.shape[-1], _own_constants(query, key, value)   # see below
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    scores = (query * scale) @ key.transpose(-2, -1)                 # (..., n, m)
    n, m = scores.shape[-2], scores.shape[-1]
    if is_causal:
        blocked = np.triu(np.ones((n, m), dtype=bool), k=1)        # top-left, as PyTorch
        scores = scores.masked_fill(blocked, -np.inf)
    if _learned(attn_mask):
        scores = scores + (attn_mask if attn_mask.dtype == scores.dtype
                           else attn_mask.to(scores.dtype))
    elif attn_mask is not None:
        mask = attn_mask._data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
        if mask.dtype == np.bool_:
            scores = scores.masked_fill(~mask, -np.inf)
        else:
            scores = scores + Tensor(mask.astype(scores.dtype, copy=False))
    weights = softmax(scores, dim=-1)                                # A: (..., n, m)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = weights @ value                                            # (..., n, d_v)
    return (out, weights) if return_weights else out


# ------------------------------------------------------------------------------------------
# composite twins: the same math from primitive ops (test oracles and teaching aids)
# ------------------------------------------------------------------------------------------

def softmax_composite(x, dim=-1):
    """softmax from exp, sum and divide, with a detached max for stability."""
    shifted = x - x.amax(dim=dim, keepdim=True).detach()
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


def log_softmax_composite(x, dim=-1):
    """log_softmax from primitive ops: x - max - log(sum(exp(x - max)))."""
    shifted = x - x.amax(dim=dim, keepdim=True).detach()
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()


def layer_norm_composite(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """layer_norm from mean, subtract, rsqrt and multiply (the fused op's test oracle)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    dims = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(dim=dims, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=dims, keepdim=True)      # biased, as in the fused op
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def cross_entropy_composite(input, target, ignore_index=-100, reduction="mean",
                            label_smoothing=0.0):
    """Only the (N, C) layout: log_softmax, pick the target column, smooth, mask, reduce."""
    t = class_target("cross_entropy_composite", input, target, ignore_index, reduction)
    if input.ndim != 2:
        raise OpError(f"cross_entropy_composite: only (N, C) logits, got {input.shape}")
    check_targets("cross_entropy_composite", t, input.shape[1], ignore_index, input.shape)
    logp = log_softmax_composite(input, dim=1)
    keep = t != ignore_index
    nll = -logp[np.arange(t.shape[0]), np.where(keep, t, 0)]
    if label_smoothing:
        nll = nll * (1 - label_smoothing) - logp.mean(dim=1) * label_smoothing
    nll = nll * Tensor(keep.astype(input.dtype))
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    count = int(keep.sum())           # none kept: PyTorch's NaN, with a zero gradient
    return nll.sum() / count if count else nll.sum() * 0.0 + math.nan


def gelu_composite(x, approximate="none"):
    """GELU from erf (or tanh) and arithmetic ops (the fused op's test oracle)."""
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1)
    return x * 0.5 * ((x * (1 / math.sqrt(2))).erf() + 1)


def dropout_composite(x, mask, p):
    """Dropout with a given keep-mask: x * mask / (1-p)."""
    return x * Tensor(mask.astype(x.dtype)) * (1.0 / (1.0 - p))


__all__ = ["relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax", "linear", "embedding",
           "layer_norm", "cross_entropy", "nll_loss", "dropout",
           "scaled_dot_product_attention", "attention", "packed_attention", "causal_mask",
           "softmax_composite", "log_softmax_composite",
           "layer_norm_composite", "cross_entropy_composite", "gelu_composite",
           "dropout_composite", "where", "one_hot",
           "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div",
           "silu", "softplus", "logsigmoid", "leaky_relu", "elu", "selu", "mish", "hardtanh",
           "relu6", "rms_norm", "pad", "normalize", "cosine_similarity"]


def one_hot(tensor, num_classes=-1):
    """(...) int64 class ids -> (..., num_classes) int64 of 0/1; num_classes=-1 takes
    max + 1. No gradient (an integer result)."""
    t = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if t.dtype != np.int64:
        raise TypeError(f"one_hot: needs an int64 tensor of class ids, got {t.dtype}")
    if num_classes < 0:
        if t.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor")
        num_classes = int(t.max()) + 1
    if t.size and (t.min() < 0 or t.max() >= num_classes):
        raise ValueError(f"one_hot: class ids must be in 0..{num_classes - 1}, got "
                         f"{int(t.min())}..{int(t.max())}")
    return Tensor(np.eye(num_classes, dtype=np.int64)[t])


# the losses live in losses.py (a target per element), class_losses.py (class targets:
# cross_entropy, nll_loss and their checks) and pair_losses.py (same floor); F.mse_loss,
# F.cross_entropy etc. are the public path
from .losses import (binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: E402
                     gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
                     mse_loss, multilabel_soft_margin_loss, poisson_nll_loss, smooth_l1_loss,
                     soft_margin_loss)
from .class_losses import (check_targets, class_target, cross_entropy,  # noqa: E402
                           multi_margin_loss, multilabel_margin_loss, nll_loss)
from .pair_losses import (cosine_embedding_loss, margin_ranking_loss,  # noqa: E402
                          pairwise_distance, triplet_margin_loss,
                          triplet_margin_with_distance_loss)

__all__ += ["poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss", "hinge_embedding_loss",
            "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
            "cosine_embedding_loss", "margin_ranking_loss", "pairwise_distance",
            "triplet_margin_loss", "triplet_margin_with_distance_loss"]

# more activations and rms_norm live in activations.py (at the end: no line of this file moves)
from .activations import (elu, hardtanh, leaky_relu, logsigmoid, mish, relu6,  # noqa: E402
                          rms_norm, selu, silu, softplus)


def _heads_for(name, query, key, value, enable_gqa):
    """key and value with the query's heads (dim -3): repeated for grouped-query attention
    when enable_gqa (each K/V head serves Hq / Hkv query heads, as PyTorch); without it a
    head count that neither matches nor broadcasts is an error that says so."""
    if not enable_gqa:
        if query.ndim >= 3:
            hq = query.shape[-3]
            for what, t in (("key", key), ("value", value)):
                if t.ndim >= 3 and t.shape[-3] not in (hq, 1) and hq != 1:
                    raise OpError(f"{name}{_where()}: query has {hq} heads (dim -3) but "
                                  f"{what} {t.shape[-3]} (query {query.shape}, {what} "
                                  f"{t.shape}); for grouped-query attention pass "
                                  f"enable_gqa=True")
        return key, value
    if min(query.ndim, key.ndim, value.ndim) < 3:
        raise OpError(f"{name}{_where()}: enable_gqa needs the heads at dim -3: query "
                      f"{query.shape}, key {key.shape} and value {value.shape} need at least "
                      f"3 dims")
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise OpError(f"{name}{_where()}: enable_gqa: the heads of key ({hk}) and value ({hv}) "
                      f"must each divide the query's {hq} heads (dim -3)")
    if hk != hq:
        key = key.repeat_interleave(hq // hk, dim=-3)
    if hv != hq:
        value = value.repeat_interleave(hq // hv, dim=-3)
    return key, value


# F.pad lives in padding.py (same floor)
from .padding import pad  # noqa: E402


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm(input, p, dim), eps): unit p-norm slices along dim, as torch's (a
    norm below eps divides by eps, whose gradient is 0)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"normalize: expected a Tensor, got {type(input).__name__}")
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between x1 and x2 (broadcast together) along dim: the sum of
    x1/|x1| * x2/|x2|, each norm at least eps, as torch's. Like torch, the eps floor only
    changes the value: the gradient reads the norm as if unclamped."""
    for x in (x1, x2):
        if not isinstance(x, Tensor):
            raise TypeError(f"cosine_similarity: expected Tensors, got {type(x).__name__}")
    if x1.dtype.kind != "f" and x2.dtype.kind != "f":
        raise TypeError(f"cosine_similarity: needs floating-point tensors, got {x1.dtype} and "
                        f"{x2.dtype}")
    x1, x2 = ops.promote((x1, x2))
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise OpError(f"cosine_similarity: shapes {x1.shape} and {x2.shape} do not "
                      f"broadcast") from None
    x1, x2 = (x if x.shape == shape else x.expand(shape) for x in (x1, x2))

    def unit(x):
        n = x.norm(2, dim, keepdim=True)
        return x / (n + (n.clamp(min=eps) - n).detach())

    return (unit(x1) * unit(x2)).sum(dim)


def _own_constants(query, key, value):
    """key and value, copied where one needs no gradient but the call records a graph:
    torch's attention keeps copies of them, so an in-place change of a constant K or V after
    the call is allowed there, and here too (a copy only in that rare case)."""
    if not (query.requires_grad or key.requires_grad or value.requires_grad) or \
            not STATE.grad_enabled:
        return key, value
    return tuple(t if t.requires_grad else Tensor(t._data.copy()) for t in (key, value))


# convolution (conv.py), window pooling (pooling.py), adaptive and fractional pooling
# (adaptive_pool.py), resampling and shuffles (resample.py), affine_grid and grid_sample
# (grid.py) live in their own files (same floor); each lists its public names in __all__
from . import adaptive_pool, conv, grid, pooling, resample  # noqa: E402
from .adaptive_pool import *  # noqa: E402, F403
from .conv import *  # noqa: E402, F403
from .grid import *  # noqa: E402, F403
from .pooling import *  # noqa: E402, F403
from .resample import *  # noqa: E402, F403

__all__ += conv.__all__ + pooling.__all__ + adaptive_pool.__all__ + resample.__all__ + \
    grid.__all__

# batch, instance, group and local response normalization live in normalization.py
from .normalization import (batch_norm, group_norm, instance_norm,  # noqa: E402
                            local_response_norm)

__all__ += ["batch_norm", "instance_norm", "group_norm", "local_response_norm"]

# dropout of whole channels and alpha dropout live in dropouts.py
from .dropouts import (alpha_dropout, dropout1d, dropout2d, dropout3d,  # noqa: E402
                      feature_alpha_dropout)

__all__ += ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# the rest of torch's activations (activations.py) and their in-place F.xxx_ forms
from .activations import (celu, celu_, elu_, glu, hardshrink, hardsigmoid,  # noqa: E402
                          hardswish, hardtanh_, leaky_relu_, prelu, rrelu, rrelu_, selu_,
                          softmin, softshrink, softsign, tanhshrink, threshold, threshold_)

__all__ += ["relu_", "celu", "celu_", "elu_", "glu", "hardshrink", "hardsigmoid", "hardswish",
            "hardtanh_", "leaky_relu_", "prelu", "rrelu", "rrelu_", "selu_", "softmin",
            "softshrink", "softsign", "tanhshrink", "threshold", "threshold_"]

# embedding bags and the bilinear form live in bags.py
from .bags import bilinear, embedding_bag  # noqa: E402

__all__ += ["embedding_bag", "bilinear"]

# the Gumbel-softmax sample (sampling.py) and torch's F.pdist, which is tgx.pdist
from ..tensor.array_functions import pdist  # noqa: E402
from .sampling import gumbel_softmax  # noqa: E402

__all__ += ["gumbel_softmax", "pdist"]
