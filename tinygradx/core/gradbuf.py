"""The backward walk's gradient buffers: one array per tensor, summed as contributions arrive.

`Grads` is the bookkeeping behind `walk.run_backward`, kept here so the walk reads as
"pop a gradient, call backward, hand the results on". It decides two things:

- **Who may add in place.** An entry is *owned* when the walk allocated the array (a sum, a
  slice buffer) or an op with `fresh_grads = True` made it: nothing else holds it, so the next
  contribution is added into it. Anything else (the incoming gradient that Add returns to both
  inputs, a saved array, a root seed) is never written: the next contribution makes a new sum.
  The result is the same value either way; ownership saves allocations and memory traffic.
- **Slices into one buffer** (speed only; a first reading may stop at `add` and `pop`).
  `add_slice` takes what getitem's fast backward hands over ("values at index, zeros
  elsewhere"). The pieces of a split (q, k, v) are written into one uninitialised buffer; the
  parts no piece wrote are zeroed only when the buffer is read or something is added to it, so
  a split that is used whole costs no zero-fill at all.
"""
from __future__ import annotations

import numpy as np


class Grads:
    """The gradient of each tensor so far, keyed by tensor (by identity)."""

    def __init__(self):
        # id(tensor) -> [array, owned, cover]; cover is None, or (axis, [(start, stop), ...])
        # while the array is a slice buffer that only those runs along one axis have written
        self.entries = {}

    def add(self, t, g, owned=False):
        """Add gradient `g` (already of t's shape) to t's entry. `owned`: g is a new array that
        nothing else holds, so the walk may add into it and hand it to a leaf's .grad."""
        owned = owned and type(g) is np.ndarray     # numpy scalars are immutable
        entry = self.entries.get(id(t))
        if entry is None:
            self.entries[id(t)] = [g, owned, None]
            return
        prev = entry[0] if entry[2] is None else _complete(entry)
        if entry[1] and prev.dtype == g.dtype:
            prev += g
        elif owned and prev.dtype == g.dtype:
            g += prev                                # ours to overwrite: no third array
            entry[0], entry[1] = g, True
        else:
            entry[0] = total = prev + g
            entry[1] = type(total) is np.ndarray

    def add_slice(self, t, index, values):
        """Add `values` at `index` of t's gradient (zeros elsewhere); values has t's dtype."""
        entry = self.entries.get(id(t))
        span = _axis_span(index, t._data.shape)
        if entry is None:
            if span is not None:                     # the first piece of a split: no zero-fill
                buf = np.empty(t._data.shape, dtype=t._data.dtype)
                buf[index] = values
                self.entries[id(t)] = [buf, True, (span[0], [span[1:]])]
                return
            entry = self.entries[id(t)] = [np.zeros(t._data.shape, t._data.dtype), True, None]
        cover = entry[2]
        if cover is not None and span is not None and span[0] == cover[0] and \
                all(span[2] <= a or span[1] >= b for a, b in cover[1]):
            entry[0][index] = values                 # a part not written yet: a copy, no add
            cover[1].append(span[1:])
            return
        buf = _complete(entry)
        if not entry[1]:
            entry[0], entry[1] = np.array(buf, copy=True), True   # it may be shared: copy
        entry[0][index] += values

    def pop(self, t):
        """(t's complete gradient, owned) and forget it; (None, False) if none arrived."""
        entry = self.entries.pop(id(t), None)
        if entry is None:
            return None, False
        return _complete(entry), entry[1]


def _complete(entry):
    """The entry's array with the gaps of a partly written slice buffer zeroed."""
    if entry[2] is not None:
        _fill_gaps(entry[0], entry[2])
        entry[2] = None
    return entry[0]


def _axis_span(index, shape):
    """(axis, start, stop) when `index` selects a contiguous run along one axis and everything
    along the others (what split/chunk make); None for anything else."""
    if type(index) is not tuple or len(index) > len(shape):
        return None
    found = None
    for axis, ix in enumerate(index):
        if type(ix) is not slice:
            return None
        start, stop, step = ix.indices(shape[axis])
        if step != 1 or stop <= start:
            return None
        if start == 0 and stop == shape[axis]:
            continue
        if found is not None:
            return None
        found = (axis, start, stop)
    return found


def _fill_gaps(buf, cover):
    """Zero the parts of a partly written slice buffer that no slice wrote."""
    axis, spans = cover
    idx = [slice(None)] * buf.ndim
    pos = 0
    for a, b in sorted(spans):
        if a > pos:
            idx[axis] = slice(pos, a)
            buf[tuple(idx)] = 0
        pos = max(pos, b)
    if pos < buf.shape[axis]:
        idx[axis] = slice(pos, None)
        buf[tuple(idx)] = 0
