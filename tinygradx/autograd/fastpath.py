"""The one hook beside an op: a faster array version of its derivative.

An op's `backward` is its one derivative, the formula that runs on arrays and, under
create_graph, on Tensors (autograd.Function). Where a faster array version stays (a compiled
kernel, in-place numpy calls, a slice buffer), it is a function registered beside the op with
`@fast_backward(Op)`, never a second method: the ordinary walk (`walk._node_backward`)
runs it instead of the formula, and the formula stays the definition that create_graph and the
tests use.
"""
from __future__ import annotations


class Slice:
    """What a fast backward of a one-input op may return when the input's gradient is zero
    outside a slice (indexing): `values` at input[index], zeros elsewhere. The walk adds it
    into one shared buffer (gradbuf.Grads.add_slice), so the slices of a split (q, k, v) fill
    one array instead of each making a full-size one that gets summed."""

    __slots__ = ("index", "values")

    def __init__(self, index, values):
        self.index, self.values = index, values


FAST_BACKWARD = {}   # op class -> fn(ctx, g): its derivative on arrays, faster than backward


def fast_backward(cls):
    """Decorator: register fn(ctx, g) as the ordinary walk's way to compute `cls`'s derivative
    on arrays (a compiled kernel, in-place numpy calls, a `Slice`): the same values as
    `cls.backward`, which stays the definition (create_graph=True and the tests use it).
    fn may return None for "not handled here": the walk then calls backward. One entry per
    class, not inherited: a subclass with its own formula gets no stale kernel."""
    def register(fn):
        FAST_BACKWARD[cls] = fn
        return fn
    return register
