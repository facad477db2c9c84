"""torch.autograd.graph's hooks on saved tensors: `saved_tensors_hooks(pack, unpack)`,
`save_on_cpu`, `disable_saved_tensors_hooks`; and `Restore`, a saved value that carries its
tensor's gradient path.

    with saved_tensors_hooks(lambda t: t.detach().numpy().copy(), lambda a: tgx.tensor(a)):
        loss = (x * w).sum()           # mul keeps x and w: each goes through pack
    loss.backward()                    # ... and comes back through unpack when mul's backward runs

Inside the block every node recorded in this thread hands each array it keeps for backward to
`pack` (as a Tensor: the input Tensor itself when it keeps an input, a Tensor on the output's
memory when it keeps its output, a new Tensor for anything else) and keeps only what pack
returns. When the node runs backward, `unpack` gets that back and must return a Tensor, whose
values the derivative reads. As in PyTorch, only the innermost block's hooks act, nodes
recorded under no_grad keep nothing, a custom Function's `ctx.save_for_backward` goes through
the same two hooks (unpack on every read of `ctx.saved_tensors`), and no version check is made
on a packed value (what unpack returns is what backward reads). Under create_graph=True the
unpacked value of an input or output keeps that tensor's gradient path (`Restore`), so second
derivatives see through the hooks.

How, without a line in the core: packing is an op observer (the core calls every observer with the
node, its inputs and its output right after the node is made); the packed node's class becomes a
subclass of its own (`_packed_class`, same name, same slots) whose `backward` first unpacks.
Which arrays a node keeps is the engine's choice per op: for the element-wise ops and products it
is PyTorch's (an operand only when the other one needs a gradient; exp, tanh, sigmoid, relu,
sqrt, softmax keep their output), fused ops keep what their own formula reads.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..core.node import Function as Node
from ..core.node import observe
from ..core.tensor_base import TensorBase


class Restore(Node):
    """A value kept for backward, with the gradient path of the tensor it stands for: forward
    gives the value (an input's copy from before an in-place change, or what an unpack hook
    returned), backward passes g on to that tensor unchanged."""
    op_name = "restore"

    def forward(self, x, value):
        return value

    def backward(self, g):
        return g


class _Stack(threading.local):
    """This thread's blocks: (pack, unpack) pairs, innermost last; a disable message."""

    def __init__(self):
        self.hooks = []
        self.disabled = None


_HERE = _Stack()
_LOCK = threading.Lock()
_ACTIVE = {"blocks": 0, "observer": None}     # blocks open in any thread, the observer's block


def current():
    """This thread's innermost (pack, unpack), or None."""
    return _HERE.hooks[-1] if _HERE.hooks else None


class saved_tensors_hooks:  # lower case: torch's name
    """torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook): see the module docstring.
    pack_hook(tensor) -> anything; unpack_hook(that) -> a Tensor."""

    def __init__(self, pack_hook, unpack_hook):
        for name, fn in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(fn):
                raise TypeError(f"saved_tensors_hooks: {name} must be callable, got "
                                f"{type(fn).__name__}")
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if _HERE.disabled is not None:
            raise RuntimeError(_HERE.disabled)
        _HERE.hooks.append((self.pack_hook, self.unpack_hook))
        with _LOCK:
            _ACTIVE["blocks"] += 1
            if _ACTIVE["blocks"] == 1:
                block = observe(_pack_node)
                block.__enter__()
                _ACTIVE["observer"] = block
        return self

    def __exit__(self, *exc):
        _HERE.hooks.pop()
        with _LOCK:
            _ACTIVE["blocks"] -= 1
            if _ACTIVE["blocks"] == 0:
                block, _ACTIVE["observer"] = _ACTIVE["observer"], None
                block.__exit__(None, None, None)
        return False


class save_on_cpu(saved_tensors_hooks):
    """torch.autograd.graph.save_on_cpu: saved tensors are kept on the CPU, which is where
    tinygradx keeps everything, so each is kept as it is (`pin_memory`, `device_type` are
    accepted and change nothing)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t, lambda t: t)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """torch.autograd.graph.disable_saved_tensors_hooks: inside, opening saved_tensors_hooks
    raises RuntimeError(error_message)."""
    if _HERE.hooks:
        raise RuntimeError(error_message)
    prev, _HERE.disabled = _HERE.disabled, str(error_message)
    try:
        yield
    finally:
        _HERE.disabled = prev


def _packed(value, role):
    """Mark of one packed array: what pack returned, and which tensor it stood for."""
    return _Packed(value, role, current())


class _Packed:
    __slots__ = ("value", "role", "hooks")

    def __init__(self, value, role, hooks):
        self.value, self.role, self.hooks = value, role, hooks

    def unpack(self, what):
        got = self.hooks[1](self.value)
        if not isinstance(got, TensorBase):
            raise TypeError(f"{what}: the unpack hook of saved_tensors_hooks returned a "
                            f"{type(got).__name__}; it must return a Tensor")
        return got


def _pack_node(ctx, inputs, out, seconds):
    """The observer: pack every array node `ctx` keeps (this thread's hooks, recorded nodes)."""
    hooks = current()
    if hooks is None or getattr(ctx, "parents", None) is None or not isinstance(out, TensorBase):
        return
    if type(ctx).__dict__.get("_unpacks") is not None or not ctx.__dict__:
        return                          # packed already, or keeps nothing
    # the output goes to pack as a Tensor of its own (requiring grad, as PyTorch shows it):
    # handing out `out` itself would let an identity pack keep the node's output on the node,
    # a reference cycle (invariant 4)
    shown = out._op_class._from_op(out._data, None)
    shown.requires_grad, shown._version = True, out._version
    by_id = {id(out._data): ("output", shown)}
    for i in reversed(range(len(inputs))):                 # x * x: the first of equal inputs
        by_id[id(inputs[i]._data)] = (i, inputs[i])
    done = {}
    packed = {k: _pack_value(v, by_id, done, hooks, out) for k, v in ctx.__dict__.items()}
    if not done:
        return
    ctx.__dict__.update(packed)
    ctx.__class__ = _packed_class(type(ctx))


def _pack_value(v, by_id, done, hooks, out):
    """One kept value with its arrays packed (each array once; `done` by id). A plain
    function, not a closure calling itself: such a closure is a reference cycle that would keep
    the whole graph alive until Python's cyclic collector runs."""
    if isinstance(v, np.ndarray):
        if id(v) not in done:
            role, t = by_id.get(id(v), (None, None))
            if t is None:
                t = out._op_class._from_op(v, None)
            done[id(v)] = _packed(hooks[0](t), role)
        return done[id(v)]
    if isinstance(v, (tuple, list)) and any(isinstance(a, np.ndarray) for a in v):
        return type(v)(_pack_value(a, by_id, done, hooks, out) for a in v)
    return v


_CLASSES = {}


def _packed_class(cls):
    """The subclass a packed node of `cls` becomes: the same op name (errors, graphs, traces;
    its backward line is its base's), a private class name (it is no op of its own), and a
    backward that unpacks first."""
    sub = _CLASSES.get(cls)
    if sub is None:
        sub = type(f"_Packed{cls.__name__}", (cls,), {
            "__slots__": (), "op_name": cls.name(), "_unpacks": cls,
            "backward": _unpacked_backward, "__module__": cls.__module__})
        _CLASSES[cls] = sub
    return sub


def _unpacked_backward(self, g):
    """backward of a packed node: on arrays, run the op's own backward on a copy whose packed
    values are unpacked; on Tensors (create_graph), backprop.graph_view has unpacked them."""
    op = type(self)._unpacks
    if isinstance(g, TensorBase):
        return op.backward(self, g)
    view = object.__new__(op)
    view.parents, view.needs_input_grad, view.frame = self.parents, self.needs_input_grad, \
        self.frame
    view.__dict__.update(unpacked(self, None))
    return op.backward(view, g)


def unpacked(ctx, out):
    """ctx's kept values with every packed one unpacked: arrays, or under create_graph
    (`out` the node's output Tensor) Tensors carrying the gradient path of the input or output
    they stood for."""
    seen = {}
    return {k: _unpack_value(v, ctx, out, seen) for k, v in ctx.__dict__.items()}


def _unpack_value(v, ctx, out, seen):
    """One kept value with its packed arrays unpacked (each once; `seen` by id)."""
    if isinstance(v, _Packed):
        if id(v) not in seen:
            got = v.unpack(ctx.name())
            if out is not None and v.role is not None:
                base = out if v.role == "output" else ctx.parents[v.role]
                seen[id(v)] = got if got is base else Restore.apply(base, value=got._data)
            else:
                seen[id(v)] = got._data
        return seen[id(v)]
    if isinstance(v, (tuple, list)) and any(isinstance(a, _Packed) for a in v):
        return type(v)(_unpack_value(a, ctx, out, seen) for a in v)
    return v


def pack_saved(tensors, roles):
    """A custom Function's saved tensors through this thread's pack hook: [(packed or None)]."""
    hooks = current()
    if hooks is None:
        return [None] * len(tensors)
    return [None if t is None else _Packed(hooks[0](t), role, hooks)
            for t, role in zip(tensors, roles, strict=True)]
