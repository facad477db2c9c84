"""torch.nn.AdaptiveLogSoftmaxWithLoss (re-exported by tinygradx.nn): the adaptive softmax of
Grave et al. 2017 for large vocabularies, with torch's arguments, parameter names and results.

The classes are cut at `cutoffs` into a shortlist (the most frequent: 0 .. cutoffs[0] - 1) and
clusters. The head scores the shortlist and one entry per cluster; cluster i has its own small
tail, a projection to in_features // div_value^(i+1) and then to its classes. So

    log p(c) = log softmax(head)[c]                                        c in the shortlist
    log p(c) = log softmax(head)[shortlist + i] + log softmax(tail_i)[c - start_i]   c in i

forward(input (N, in) or (in,), target (N,) or ()) returns (output, loss): each row's log p of
its target and the mean of -output; log_prob(input) gives every class's, predict(input) the
most likely. Written with linear, log_softmax and indexing, so it draws and differentiates.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import functional as F
from ..autograd import OpError
from ..tensor import Tensor
from ..tensor.creation import cat, zeros
from .containers import ModuleList, Sequential
from .layers import Linear, int_arg
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The adaptive softmax: head (Linear(in_features, shortlist + clusters, bias=head_bias))
    and tail (one Sequential(Linear(in, in // div_value^(i+1)), Linear(that, cluster size))
    per cluster, both without bias)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        cls = "AdaptiveLogSoftmaxWithLoss"
        self.in_features = int_arg(cls, "in_features", in_features)
        self.n_classes = int_arg(cls, "n_classes", n_classes)
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError(f"{cls}: cutoffs must hold at least one value")
        if cutoffs != sorted(cutoffs) or len(set(cutoffs)) != len(cutoffs) or \
                any(isinstance(c, bool) or int(c) != c for c in cutoffs) or \
                min(cutoffs) <= 0 or max(cutoffs) > self.n_classes - 1:
            raise ValueError(f"{cls}: cutoffs must be unique positive integers in increasing "
                             f"order, each between 1 and n_classes - 1 = {self.n_classes - 1}, "
                             f"got {cutoffs}")
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=head_bias)
        self.tail = ModuleList([
            Sequential(Linear(self.in_features, int(self.in_features // div_value ** (i + 1)),
                              bias=False),
                       Linear(int(self.in_features // div_value ** (i + 1)),
                              self.cutoffs[i + 1] - self.cutoffs[i], bias=False))
            for i in range(self.n_clusters)])
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def _check(self, input, target):
        t = target.detach().numpy() if isinstance(target, Tensor) else np.asarray(target)
        if t.ndim == 1:
            if input.ndim != 2:
                raise OpError(f"AdaptiveLogSoftmaxWithLoss: a 1-d target needs a 2-d input "
                              f"(N, in_features), got {tuple(input.shape)}")
            if input.shape[0] != t.shape[0]:
                raise OpError(f"AdaptiveLogSoftmaxWithLoss: input {tuple(input.shape)} and "
                              f"target {t.shape} differ in the batch dim")
        elif t.ndim == 0:
            if input.ndim != 1:
                raise OpError(f"AdaptiveLogSoftmaxWithLoss: a 0-d target needs a 1-d input "
                              f"(in_features,), got {tuple(input.shape)}")
        else:
            raise OpError(f"AdaptiveLogSoftmaxWithLoss: the target must be 0-d or 1-d (one "
                          f"class per row), got shape {t.shape}")
        if t.dtype.kind not in "iu":
            raise TypeError(f"AdaptiveLogSoftmaxWithLoss: the target must hold integer class "
                            f"ids, got {t.dtype}")
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise OpError(f"AdaptiveLogSoftmaxWithLoss: target values must be in 0.."
                          f"{self.n_classes - 1}, got {int(t.min())}..{int(t.max())}")
        return t

    def forward(self, input, target):
        t = self._check(input, target)
        batched = t.ndim == 1
        x = input if batched else input.unsqueeze(0)          # (N, in)
        t = t.reshape(-1).astype(np.int64)
        N = t.shape[0]
        head_index = t.copy()                                 # the head's entry of each row
        parts, rows = [], []                                  # cluster log p, by row group
        for i in range(self.n_clusters):
            start, stop = self.cutoffs[i], self.cutoffs[i + 1]
            sel = np.flatnonzero((t >= start) & (t < stop))
            if sel.size == 0:
                continue
            head_index[sel] = self.shortlist_size + i
            logp = F.log_softmax(self.tail[i](x[sel]), dim=1)       # (rows, cluster size)
            parts.append(logp[np.arange(sel.size), t[sel] - start])
            rows.append(sel)
        short = np.flatnonzero(t < self.shortlist_size)
        if short.size:                                        # shortlist rows add nothing here
            parts.append(zeros(short.size, dtype=x.dtype))
            rows.append(short)
        order = np.argsort(np.concatenate(rows)) if rows else np.zeros(0, np.int64)
        tail_part = cat(parts, dim=0)[order] if parts else zeros(0, dtype=x.dtype)   # (N,)
        head_logp = F.log_softmax(self.head(x), dim=1)                           # (N, head)
        output = head_logp[np.arange(N), head_index] + tail_part
        loss = (-output).mean()
        return ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x, head_output):
        head_logp = F.log_softmax(head_output, dim=1)
        cols = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            cols.append(cluster + head_logp[:, self.shortlist_size + i:self.shortlist_size + i
                                            + 1])
        return cat(cols, dim=1)                                # (N, n_classes)

    def log_prob(self, input):
        """log p of every class for each row of input (N, in_features) -> (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (int64, (N,)): the head's argmax when it is in the
        shortlist (no class of a cluster can beat it then), else the full distribution's."""
        head_output = self.head(input)
        best = head_output.detach().numpy().argmax(1)
        outside = np.flatnonzero(best >= self.shortlist_size)
        if outside.size:
            full = self._full_log_prob(input[outside], head_output[outside])
            best[outside] = full.detach().numpy().argmax(1)
        return Tensor(best.astype(np.int64))

    def extra_repr(self):
        return ""
