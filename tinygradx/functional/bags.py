"""F.embedding_bag and F.bilinear (re-exported by F): the layers beyond F.linear and
F.embedding that learners meet, with torch.nn.functional's arguments and refusals.

    embedding_bag   each bag (a row of a 2-d input, or a slice of a 1-d input between
                    offsets) reduced to one vector: the sum, mean or max of its rows of the
                    table; padding_idx entries are left out of their bag (and of its count);
                    an empty bag gives zeros
    bilinear        y_o = x1^T W_o x2 + b_o, one einsum

Both are written with ops (an embedding gather, a matmul with a constant bag matrix, max,
einsum), so gradients reach the table, the weights and the per-sample weights, and the graph
tools draw them. max_norm (which rewrites the table in place), scale_grad_by_freq and
sparse=True (sparse gradients) are refused by name.
"""
from __future__ import annotations

import numpy as np

from ..autograd import OpError, current_scope
from ..core import linalg as ops_linalg
from ..tensor import Tensor
from ..tensor.creation import einsum, stack, zeros

__all__ = ["embedding_bag", "bilinear"]


def _where():
    s = current_scope()
    return f" (in {s})" if s else ""


def _ids(name, x):
    a = x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: the indices must be int64 or int32, got {a.dtype}")
    return a.astype(np.int64)


def _bags(input, offsets, include_last_offset):
    """(flat ids (n,), bag of each id (n,), number of bags) from torch's two layouts."""
    ids = _ids("embedding_bag", input)
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError(f"embedding_bag: a 2-d input is a batch of bags of equal length, "
                             f"so offsets must be None (got {type(offsets).__name__})")
        B, L = ids.shape
        return ids.reshape(-1), np.repeat(np.arange(B), L), B
    if ids.ndim != 1:
        raise ValueError(f"embedding_bag: input must be a 1-d or 2-d tensor of indices, got "
                         f"{ids.ndim} dims")
    if offsets is None:
        raise ValueError("embedding_bag: a 1-d input needs offsets (a 1-d tensor of where "
                         "each bag starts)")
    off = _ids("embedding_bag offsets", offsets)
    if off.ndim != 1:
        raise ValueError(f"embedding_bag: offsets must be 1-d, got {off.ndim} dims")
    if off.size and off[0] != 0:
        raise OpError(f"embedding_bag: offsets[0] must be 0 (the first bag starts at the "
                      f"input's start), got {off[0]}")
    if off.size and (np.any(np.diff(off) < 0) or off[-1] > ids.size):
        raise OpError(f"embedding_bag: offsets must not decrease nor pass the input's length "
                      f"{ids.size}, got {off.tolist()}")
    ends = np.append(off[1:], ids.size)
    if include_last_offset:                               # offsets[-1] closes the last bag
        off, ends = off[:-1], off[1:]
    bag = np.full(ids.size, -1, np.int64)
    for b, (s, e) in enumerate(zip(off, ends, strict=True)):
        bag[s:e] = b
    keep = bag >= 0                                        # ids past the last offset: no bag
    return ids[keep], bag[keep], off.size


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of rows of weight (V, D) -> (number of bags, D), as
    torch.nn.functional.embedding_bag; per_sample_weights (mode='sum' only) scales each row."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    for arg, val, fix in (("max_norm", max_norm is not None, "renormalise the table yourself "
                           "under no_grad"), ("scale_grad_by_freq", scale_grad_by_freq,
                                              "leave it False"),
                          ("sparse", sparse, "sparse gradients are left out of tinygradx; "
                           "leave it False")):
        if val:
            raise NotImplementedError(f"embedding_bag: {arg} is not supported by tinygradx; "
                                      f"{fix}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights is only supported for "
                                  f"mode='sum' (as torch), got mode={mode!r}")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise OpError(f"embedding_bag{_where()}: weight must be a 2-d table (V, D), got "
                      f"{getattr(weight, 'shape', type(weight).__name__)}")
    ids, bag, B = _bags(input, offsets, include_last_offset)
    V, D = weight.shape
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        bad = ids[(ids < 0) | (ids >= V)][0]
        raise OpError(f"embedding_bag{_where()}: index {bad} is outside the table's rows "
                      f"0..{V - 1}")
    psw = None
    if per_sample_weights is not None:
        if tuple(per_sample_weights.shape) != tuple(np.shape(_ids("embedding_bag", input))):
            raise OpError(f"embedding_bag: per_sample_weights has shape "
                          f"{tuple(per_sample_weights.shape)}, the input "
                          f"{tuple(np.shape(_ids('embedding_bag', input)))}")
        psw = per_sample_weights.reshape(-1)[:ids.size]   # the ids that have a bag
    keep = np.ones(ids.size, bool) if padding_idx is None else ids != (padding_idx % V)
    ids, bag = ids[keep], bag[keep]
    if psw is not None and not keep.all():
        psw = psw[np.flatnonzero(keep)]
    rows = ops_linalg.Embedding.apply(weight, ids=ids, padding_idx=None)     # (n, D)
    if mode == "max":
        out = [rows[np.flatnonzero(bag == b)].max(0)[0] if np.any(bag == b)
               else zeros(D, dtype=weight.dtype) for b in range(B)]
        return stack(out, 0) if out else zeros(0, D, dtype=weight.dtype)
    counts = np.bincount(bag, minlength=B).astype(np.float64)
    member = np.zeros((B, ids.size), weight.dtype)        # the bag matrix: rows sum its ids
    member[bag, np.arange(ids.size)] = 1.0 / np.maximum(counts[bag], 1) if mode == "mean" \
        else 1.0
    if psw is not None:
        rows = rows * psw.reshape(-1, 1)
    return Tensor(member) @ rows                          # (B, D)


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T W x2 + b for each output o: input1 (*, in1), input2 (*, in2) with the same
    leading dims, weight (out, in1, in2), bias (out,) -> (*, out)."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"bilinear: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim != 3:
        raise OpError(f"bilinear: weight must be 3-d (out, in1, in2), got {tuple(weight.shape)}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise OpError(f"bilinear: input1 {tuple(input1.shape)} and input2 "
                      f"{tuple(input2.shape)} must have the same leading dims")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise OpError(f"bilinear: weight {tuple(weight.shape)} expects inputs with "
                      f"{weight.shape[1]} and {weight.shape[2]} features, got "
                      f"{input1.shape[-1]} and {input2.shape[-1]}")
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is not None:
        if tuple(bias.shape) != (weight.shape[0],):
            raise OpError(f"bilinear: bias has shape {tuple(bias.shape)}, expected "
                          f"({weight.shape[0]},)")
        y = y + bias
    return y
