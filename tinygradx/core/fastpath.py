"""The hooks the speed layer plugs into: a faster array version of an op's derivative, and
compiled or threaded row loops an op's forward may use.

An op's `backward` is its one derivative, the formula that runs on arrays and, under
create_graph, on Tensors (node.Function). Where a faster array version stays (a compiled
kernel, in-place numpy calls, a slice buffer), it is a function registered beside the op with
`@fast_backward(Op)`, never a second method: the ordinary walk (`walk._node_backward`)
runs it instead of the formula, and the formula stays the definition that create_graph and the
tests use.

Forwards have one hook of their own: `kernel(name, *arrays)` gives the speed layer's result for
a row loop (softmax, layer_norm, relu) when it registered one with `use_kernel` and it took
these arrays, else None, and the numpy line after the call runs. The core registers nothing: on
its own it is plain numpy, the reference the faster versions are tested against.
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


KERNELS = {}   # name -> fn(*arrays): the speed layer's row loop, or None for "not these arrays"


def use_kernel(name, fn):
    """Register fn as the forward row loop `name`."""
    KERNELS[name] = fn


def kernel(name, *args):
    """The registered row loop's result on args, or None (no loop, or not for these args)."""
    fn = KERNELS.get(name)
    return None if fn is None else fn(*args)
