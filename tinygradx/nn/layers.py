"""The layers of the seed's Transformer: Linear, Embedding, LayerNorm, Dropout, ReLU, GELU, with
PyTorch's parameter names, shapes and initialisation (re-exported by tinygradx.nn, the public
path), and the argument checks every layer module shares."""
from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..autograd import STATE, OpError, current_scope
from .module import Module, Parameter


def int_arg(cls, name, value, low=1):
    """value as an int >= low, or an error naming the class and the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{cls}: {name} must be an int, got {value!r}")
    if value < low:
        what = "positive" if low == 1 else f">= {low}"
        raise ValueError(f"{cls}: {name} must be {what}, got {value}")
    return int(value)


def prob_arg(cls, name, value, upper_open=False):
    """A probability in [0, 1] (or [0, 1) with upper_open), else an error naming both."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{cls}: {name} must be a number, got {value!r}")
    if not (0.0 <= value < 1.0 if upper_open else 0.0 <= value <= 1.0):
        raise ValueError(f"{cls}: {name} must be in [0, {'1)' if upper_open else '1]'}, "
                         f"got {value}")
    return float(value)

# ------------------------------------------------------------------------------------------
# layers
# ------------------------------------------------------------------------------------------

def uniform_table(shape, bound):
    return STATE.rng.uniform(-bound, bound, size=shape).astype(np.float32)


class Linear(Module):
    """y = x W^T + b. weight: (out_features, in_features), bias: (out_features,).

    Initialised as PyTorch: U(-1/sqrt(in), 1/sqrt(in)) for both weight and bias.
    """

    def __init__(self, in_features, out_features, bias=True):
        in_features = int_arg("Linear", "in_features", in_features, low=0)    # 0: as torch,
        out_features = int_arg("Linear", "out_features", out_features, low=0)  # an empty map
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(uniform_table((out_features, in_features), bound))
        self.bias = Parameter(uniform_table((out_features,), bound)) if bias else None

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise OpError(f"Linear at {current_scope() or '<top>'}: input of shape "
                          f"{x.shape} has {x.shape[-1]} features, expected "
                          f"in_features={self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A table of num_embeddings vectors of size embedding_dim, indexed by integer ids.

    Initialised N(0, 1) as PyTorch; the padding_idx row starts at zero and gets no gradient.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None):
        num_embeddings = int_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = int_arg("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            padding_idx = int_arg("Embedding", "padding_idx", padding_idx, -num_embeddings)
            if padding_idx >= num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be in {-num_embeddings}.."
                                 f"{num_embeddings - 1} (num_embeddings={num_embeddings}), "
                                 f"got {padding_idx}")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        w = STATE.rng.standard_normal((num_embeddings, embedding_dim)).astype(np.float32)
        if padding_idx is not None:
            w[padding_idx] = 0
        self.weight = Parameter(w)

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """LN(x) = (x - mean)/sqrt(var + eps) * weight + bias over the last dims (biased var)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
            raise TypeError(f"LayerNorm: normalized_shape must be an int or a non-empty tuple "
                            f"of ints, got {normalized_shape!r}")
        normalized_shape = tuple(int_arg("LayerNorm", "normalized_shape", n)
                                 for n in normalized_shape)
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or eps < 0:
            raise ValueError(f"LayerNorm: eps must be a non-negative number, got {eps!r}")
        self.normalized_shape, self.eps = normalized_shape, eps
        self.weight = Parameter(np.ones(self.normalized_shape, np.float32)) \
            if elementwise_affine else None
        self.bias = Parameter(np.zeros(self.normalized_shape, np.float32)) \
            if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """Zero each element with probability p while training (inverted: survivors scale 1/(1-p));
    inplace=True writes the result into the input, as torch's."""

    def __init__(self, p=0.5, inplace=False):
        prob_arg("Dropout", "p", p)
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(Module):
    """max(x, 0); inplace=True writes the result into the input, as torch's."""

    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x); approximate='tanh' for the GPT-2 approximation."""

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"
