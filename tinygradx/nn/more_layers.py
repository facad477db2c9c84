"""More of torch.nn's modules (re-exported by tinygradx.nn): Bilinear, EmbeddingBag,
CosineSimilarity, PairwiseDistance and the deprecated Container, with torch's arguments,
parameter names, initialisation and reprs. Each calls its F function."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import functional as F
from ..autograd import STATE
from ..tensor import Tensor
from .layers import int_arg, uniform_table
from .module import Module, Parameter

__all__ = ["Bilinear", "EmbeddingBag", "CosineSimilarity", "PairwiseDistance", "Container"]


class Bilinear(Module):
    """y = x1^T W x2 + b: weight (out_features, in1_features, in2_features), bias
    (out_features,), both U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as torch."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        self.in1_features = int_arg("Bilinear", "in1_features", in1_features)
        self.in2_features = int_arg("Bilinear", "in2_features", in2_features)
        self.out_features = int_arg("Bilinear", "out_features", out_features)
        bound = 1 / math.sqrt(self.in1_features)
        self.weight = Parameter(uniform_table((self.out_features, self.in1_features,
                                               self.in2_features), bound))
        self.bias = Parameter(uniform_table((self.out_features,), bound)) if bias else None
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class EmbeddingBag(Module):
    """A table of num_embeddings vectors (N(0, 1), the padding_idx row at zero), each call
    reducing bags of ids to one vector: F.embedding_bag with mode 'sum', 'mean' or 'max'."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        self.num_embeddings = int_arg("EmbeddingBag", "num_embeddings", num_embeddings)
        self.embedding_dim = int_arg("EmbeddingBag", "embedding_dim", embedding_dim)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx must be within num_embeddings "
                                 f"({self.num_embeddings}), got {padding_idx}")
            padding_idx %= self.num_embeddings
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            w = STATE.rng.standard_normal(shape).astype(np.float32)
            if padding_idx is not None:
                w[padding_idx] = 0
        else:
            w = np.asarray(_weight.detach().numpy() if isinstance(_weight, Tensor) else _weight)
            if w.shape != shape:
                raise ValueError(f"EmbeddingBag: _weight has shape {w.shape}, expected {shape}")
        self.weight = Parameter(w)
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """A bag module over a copy of a 2-d table (frozen by default), as torch's."""
        table = np.array(embeddings.detach().numpy() if isinstance(embeddings, Tensor)
                         else embeddings)
        if table.ndim != 2:
            raise ValueError(f"EmbeddingBag.from_pretrained: expected a 2-d table, got shape "
                             f"{table.shape}")
        bag = cls(*table.shape, max_norm, norm_type, scale_grad_by_freq, mode, sparse, table,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class CosineSimilarity(Module):
    """F.cosine_similarity(x1, x2, dim, eps) as a module."""

    def __init__(self, dim=1, eps=1e-8):
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """F.pairwise_distance(x1, x2, p, eps, keepdim): the p-norm of x1 - x2 + eps along the last
    dim, as a module."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Container(Module):
    """torch's deprecated nn.Container: a Module holding the modules given as keywords (with
    torch's deprecation warning); subclass Module instead."""

    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
