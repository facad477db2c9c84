"""The backward walk's gradient buffers: one array per tensor, summed as contributions arrive.

`Grads` is the bookkeeping behind `walk.run_backward`, kept here so the walk reads as
"pop a gradient, call backward, hand the results on". A tensor used twice (`x * x`, a residual
branch) gets one contribution per use; its gradient is their sum, complete once every consumer
has run (toposort orders the walk so).

Every sum is a new array: an op may hand the same array on twice (Add returns g for both of
its inputs), so nothing here writes into an array it was given. The speed layer's walk
(tinygradx/fast/walk.py) keeps track of which arrays it may add into instead, and gives the
same values.
"""
from __future__ import annotations


class Grads:
    """The gradient of each tensor so far, keyed by tensor (by identity)."""

    def __init__(self):
        self.entries = {}            # id(tensor) -> its gradient so far

    def add(self, t, g, owned=False):
        """Add gradient `g` (already of t's shape and dtype) to t's entry."""
        prev = self.entries.get(id(t))
        self.entries[id(t)] = g if prev is None else prev + g

    def pop(self, t):
        """(t's complete gradient, False) and forget it; (None, False) if none arrived. (The
        second item says whether the walk may hand the array on without a copy: a faster
        carrier's grads may know; these never do.)"""
        return self.entries.pop(id(t), None), False
