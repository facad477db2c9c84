"""F.pad (re-exported by tinygradx.functional), as torch.nn.functional.pad, built from ops
that have gradients of every order: constant padding is a `cat` with constant blocks (negative
padding crops, a `narrow`); reflect, replicate and circular padding are an `index_select`
with the index each mode reads (repeated indices add their gradients).
"""
from __future__ import annotations

import operator

import numpy as np

from ..autograd import OpError
from ..tensor.creation import cat, full
from ..tensor import Tensor

MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """Pad the last dims of input: pad = (left, right) for the last dim, then (left, right)
    for the one before, ... (up to every dim).

    mode="constant" fills with value (0 when None; cast to input's dtype, so 2.7 is 2 in an
    int tensor), and a negative amount crops. "reflect" mirrors without repeating the edge
    (each amount below the dim's size), "replicate" repeats the edge, "circular" wraps around
    (at most once); as in torch they pad the last 1, 2 or 3 dims of a tensor with one or two
    dims more (batch, channels) and take no value (reflect and replicate no bool tensor). A
    negative amount crops in every mode: reflect and replicate read as if padded, then crop;
    circular crops first and wraps around what is left.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: expected a Tensor, got {type(input).__name__}")
    pads = _pairs(pad, input.shape)
    if mode == "constant":
        out = _constant(input, pads, 0 if value is None else value)
    elif mode in MODES:
        out = _index_mode(input, pads, mode, value, len(pad))
    else:
        raise ValueError(f"pad: mode must be one of {', '.join(map(repr, MODES))}, got "
                         f"{mode!r}")
    return input.clone() if out is input else out        # a new tensor, as torch's


def _pairs(pad, shape):
    """[(dim, left, right)] from the last dim backwards, checked."""
    try:
        amounts = [_int(v) for v in pad]
    except TypeError:
        raise TypeError(f"pad: pad must be a sequence of ints, got {pad!r}") from None
    if len(amounts) % 2:
        raise ValueError(f"pad: needs two amounts (left, right) per dim, got {len(amounts)}: "
                         f"{tuple(amounts)}")
    k = len(amounts) // 2
    if k > len(shape):
        raise ValueError(f"pad: {len(amounts)} amounts pad {k} dims, but the input has only "
                         f"{len(shape)} (shape {shape})")
    return [(len(shape) - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(k)]


def _int(v):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError
    return operator.index(v)


def _constant(x, pads, value):
    for d, left, right in pads:
        n = x.shape[d]
        if left < 0 or right < 0:                      # crop first
            lo, hi = max(-left, 0), n - max(-right, 0)
            if hi < lo:
                raise OpError(f"pad: cropping ({left}, {right}) from dim {d} of size {n} "
                              f"leaves fewer than 0 elements (shape {x.shape})")
            x = x.narrow(d, lo, hi - lo)
        left, right = max(left, 0), max(right, 0)
        if left or right:
            parts = []
            for amount in (left, right):
                shape = list(x.shape)
                shape[d] = amount
                parts.append(full(shape, value, dtype=x.dtype) if amount else None)
            x = cat([p for p in (parts[0], x, parts[1]) if p is not None], d)
    return x


def _index_mode(x, pads, mode, value, n_amounts):
    if value is not None and value != 0:
        raise ValueError(f"pad: mode {mode!r} takes no value (got value={value!r})")
    if x.dtype == np.bool_ and mode != "circular":
        raise TypeError(f"pad: mode {mode!r} does not take a bool tensor (as in torch)")
    k = len(pads)
    if k > 3 or x.ndim not in (k + 1, k + 2):
        raise OpError(f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of a tensor with one "
                      f"or two dims more (batch, channels), as torch; got {n_amounts} amounts "
                      f"for a {x.ndim}-d tensor (shape {x.shape})")
    if any(n == 0 for n in x.shape[x.ndim - k - 1:]):
        raise OpError(f"pad: mode {mode!r} needs non-empty dims (the batch dim may be 0), got "
                      f"shape {x.shape}")
    sizes = [x.shape[d] + left + right for d, left, right in pads]
    if mode != "circular" and (min(sizes) < 0 or max(sizes) < 1):
        amounts = tuple(v for _, lo, hi in pads for v in (lo, hi))
        raise OpError(f"pad: {n_amounts} amounts {amounts} leave the padded dims of shape "
                      f"{x.shape} with sizes {tuple(sizes)}; "
                      f"mode {mode!r} needs none negative and one at least 1 (as torch)")
    for d, left, right in pads:
        n = x.shape[d]
        if not (left or right):
            continue
        if mode == "circular":
            x = _circular(x, d, left, right)
            continue
        if mode == "reflect" and max(left, right) >= n:
            raise OpError(f"pad: reflect amounts must be smaller than the dim they pad: "
                          f"({left}, {right}) for dim {d} of size {n}")
        # the cells the padded (then cropped, for negative amounts) dim reads
        i = np.arange(-left, n + right)
        if mode == "reflect":
            i = np.abs(i)
            i = np.where(i >= n, 2 * (n - 1) - i, i)
        else:
            i = np.clip(i, 0, n - 1)
        x = x.index_select(d, i)
    return x


def _circular(x, d, left, right):
    """torch's circular padding: negative amounts crop first, then the positive ones wrap
    around what is left (at most once)."""
    n = x.shape[d]
    lo, hi = max(-left, 0), n - max(-right, 0)
    m = hi - lo
    if m < 0:
        raise OpError(f"pad: circular ({left}, {right}) crops more than the {n} elements of "
                      f"dim {d} (shape {x.shape})")
    # torch wraps each amount at most once around the dim; past what cropping leaves, its
    # copy reads cells it has not written yet (garbage, an overlap error, or a periodic
    # repeat, depending on the shape): refused here
    if max(left, right) > m:
        raise OpError(f"pad: circular ({left}, {right}) for dim {d} of size {n}"
                      + (f", {m} after cropping" if m != n else "") + ": each amount must be "
                      "at most the size it wraps around (once)")
    i = np.arange(lo - max(left, 0), hi + max(right, 0))
    return x.index_select(d, lo + (i - lo) % m if m else i[:0])
