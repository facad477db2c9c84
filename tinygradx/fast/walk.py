"""The speed layer's backward walk: the core's `run_backward` loop with a carrier of its own.

The core's walk (core/walk.py, `ArrayWalk`) is the reference: every node runs its formula
(`ctx.backward`), every sum of two gradients is a new array, every leaf's first gradient is
copied. This carrier computes the same gradients with less memory traffic, and
tests/core/test_walk.py holds the two to the same bits on a GPT step:

- **Faster derivatives.** Each node's derivative is `dispatch.backward(ctx, g)`: a version
  registered for the op that declares it takes (ctx, g), else the formula.
- **Who may add in place.** An entry is *owned* when the walk allocated the array (a sum, a
  slice buffer) or an op with `fresh_grads = True` made it: nothing else holds it, so the next
  contribution is added into it, and a leaf's first gradient becomes its `.grad` without a
  copy. Anything else (the incoming gradient that Add returns to both inputs, a saved array,
  a root seed) is never written.
- **Slices into one buffer.** A version may return `fastpath.Slice` (getitem's: "values at
  index, zeros elsewhere"): the pieces of a split (q, k, v) are written into one uninitialised
  buffer, and the parts no piece wrote are zeroed only when the buffer is read.

The first walk of the process applies the allocator setting (settings.py, "process-wide").
Installed into the core by `install()` (tinygradx/__init__ imports ops, whose versions module
calls it), with the dispatcher.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import fastpath
from ..core.fastpath import Slice
from ..core.walk import ArrayWalk, cast_grad, edge_grad, grads_per_input
from . import dispatch, process


class OwnedGrads:
    """The gradient of each tensor so far, keyed by tensor, with whether the walk owns it."""

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


def _node_backward(ctx, g, grads, t=None, on_edge=None):
    """One node's derivative (a registered version or the formula), handed on as the core's
    walk does, with each gradient's ownership."""
    in_grads = dispatch.backward(ctx, g)
    if type(in_grads) is Slice:                     # getitem: values at index, zeros elsewhere
        (p,) = ctx.parents
        values = cast_grad(in_grads.values, p, ctx)
        if on_edge is not None:
            full = np.zeros(p._data.shape, values.dtype)
            full[in_grads.index] = values
            on_edge(ctx, 0, p, full)
        grads.add_slice(p, in_grads.index, values)
        return
    in_grads = grads_per_input(ctx, in_grads, "backward")
    for i, (p, ig, need) in enumerate(zip(ctx.parents, in_grads, ctx.needs_input_grad,
                                          strict=True)):
        if ig is not None and need:
            new = edge_grad(ctx, i, ig, p)
            if on_edge is not None:
                on_edge(ctx, i, p, new)
            # ours to write: made here, or made by an op that makes every gradient afresh
            # (fresh_grads; never the incoming g itself, which others may hold)
            grads.add(p, new, (ctx.fresh_grads and ig is not g) or new is not ig)


def _store_grad(t, g, owned):
    """Leaves (and retain_grad tensors) accumulate across backward calls, as in PyTorch; an
    owned first gradient becomes .grad without a copy."""
    if t._ctx is not None and not t._retain_grad:
        return
    with ArrayWalk.grad_lock:
        if t.grad is None:
            if not (owned and t._ctx is None and g.dtype == t._data.dtype):
                g = np.array(g, dtype=t._data.dtype, copy=True)
            t.grad = t._op_class._from_op(g, None)
        else:
            t.grad._data += g


def _walk_starts():
    """Each walk's start: the process's first applies the allocator setting (process.py)."""
    if process.MALLOC_PENDING:
        process.first_backward()
    return contextlib.nullcontext()


class FastWalk(ArrayWalk):
    """The array walk's carrier with the speed layer's derivatives and buffers."""

    new_grads = OwnedGrads
    recording = staticmethod(_walk_starts)
    store = staticmethod(_store_grad)
    node_backward = staticmethod(_node_backward)


def install():
    """Hand the dispatcher and this walk to the core (fastpath.install)."""
    fastpath.install(dispatch.run, FastWalk)


def uninstall():
    """The core's reference alone from now on (tests, and a reader who wants to see it)."""
    fastpath.install(None, None)
