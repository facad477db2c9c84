"""The hooks the speed layer plugs into. The core registers nothing here and never reads what
is registered: on its own it runs every formula as written, the reference.

- `dispatched(fn)`: an array function (softmax's rows, layer_norm's rows, a stack of products)
  whose calls go to the speed layer's dispatcher once one is installed (`install`): it runs a
  faster version registered for it when the call is one that version declares it takes, and
  `fn` itself otherwise. Without a dispatcher the call is `fn(...)`.
- `install(dispatcher, walk)`: the speed layer hands over its dispatcher and its backward walk
  carrier (`walk_carrier` gives it to `walk.run_backward`, the core's `ArrayWalk` otherwise).
  That walk may run faster array versions of an op's derivative, registered beside the op in
  the speed layer; the op's `backward` stays its one derivative (create_graph and the tests
  use it).
- `Slice`: what such a version of indexing's derivative may return (its input's gradient is
  zero outside a slice), so the speed layer's walk can add the pieces of a split into one
  buffer.
"""
from __future__ import annotations

_DISPATCHER = None      # the speed layer's: .run(name, reference, args) (install)
_WALK = None            # the speed layer's backward walk carrier (install)
REFERENCES = {}         # name -> the array function registered with @dispatched


def dispatched(reference):
    """Decorator: calls of this array function may run a faster registered version."""
    name = reference.__name__
    REFERENCES[name] = reference

    def call(*args):
        d = _DISPATCHER
        return reference(*args) if d is None else d(name, reference, args)

    call.__name__, call.__doc__, call.reference = name, reference.__doc__, reference
    return call


class Slice:
    """What a fast backward of a one-input op may return when the input's gradient is zero
    outside a slice (indexing): `values` at input[index], zeros elsewhere."""

    __slots__ = ("index", "values")

    def __init__(self, index, values):
        self.index, self.values = index, values


def install(dispatcher, walk):
    """The speed layer's dispatcher (a callable (name, reference, args) -> result) and its
    backward walk carrier; None, None puts the core's reference back."""
    global _DISPATCHER, _WALK
    _DISPATCHER, _WALK = dispatcher, walk


def walk_carrier(default):
    """The backward walk's carrier: the speed layer's when installed, else `default`."""
    return _WALK or default
