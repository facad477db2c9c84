"""The `ctx` of a PyTorch-style custom Function (`FunctionCtx`: what forward leaves for backward,
PyTorch's methods on it) and `once_differentiable`, PyTorch's decorator for a backward that
cannot be differentiated again. custom_function.py makes the node that owns the ctx and reads
it; this file knows only the ctx's side.
"""
from __future__ import annotations

import functools

from ..core.node import Function as Node
from ..core.node import STATE, no_grad
from ..core.tensor_base import TensorBase
from . import saved_hooks


class FunctionCtx:
    """The `ctx` of a PyTorch-style Function: what forward leaves for backward.

    Any attribute may be set on it (`ctx.dim = dim`); the methods are PyTorch's.
    """

    def __init__(self, op, needs_input_grad):
        self._op = op
        self.needs_input_grad = needs_input_grad
        self._to_save = ()               # what save_for_backward was given, until apply ends
        self._saved = None               # then: (tensor, version, output index or None, packed)
        self._non_differentiable = set()
        self._dirty = ()
        self._materialize = True
        self._run = None                 # the node's view while backward records (create_graph)
        self._freed = False

    def save_for_backward(self, *tensors):
        """Keep Tensors (or None) for backward; an in-place change to one of them before
        backward is an error when `saved_tensors` is read, as in PyTorch."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, TensorBase):
                raise TypeError(f"{self._op}: save_for_backward takes Tensors or None, "
                                f"argument {i} is a {type(t).__name__}; keep other values as "
                                f"attributes of ctx (ctx.value = ...)")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """PyTorch's keep for a jvp staticmethod (forward mode): accepted and checked as
        save_for_backward, though tinygradx takes forward-mode products from backward."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, TensorBase):
                raise TypeError(f"{self._op}: save_for_forward takes Tensors or None, "
                                f"argument {i} is a {type(t).__name__}")
        self._for_forward = tensors

    def _keep(self, outputs):
        """At the end of apply: note each saved tensor's version and whether it is an output
        (index into forward's outputs; `outputs` maps the id of what forward returned to it),
        and hand it to this thread's pack hook (saved_tensors_hooks)."""
        roles = [None if t is None else outputs.get(id(t)) for t in self._to_save]
        packed = saved_hooks.pack_saved(self._to_save, roles)
        self._saved = tuple((t, None if t is None else t._version[0], k, p)
                            for t, k, p in zip(self._to_save, roles, packed, strict=True))
        self._to_save = ()

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(f"{self._op}: trying to read saved tensors after backward freed "
                               f"them; pass retain_graph=True to the first backward() to read "
                               f"them again")
        if self._saved is None:          # read inside forward itself
            return tuple(self._to_save)
        out = []
        for t, version, k, packed in self._saved:
            if t is None:
                out.append(None)
                continue
            graph = None if self._run is None or k is None else self._run.graph_output(k, t)
            if packed is not None:       # what unpack gives, with the tensor's gradient path
                got = packed.unpack(self._op)
                if graph is not None and got is not graph:
                    got = saved_hooks.Restore.apply(graph, value=got._data)
                out.append(got)
                continue
            if t._version[0] != version:
                raise RuntimeError(
                    f"{self._op}: a tensor of shape {tuple(t.shape)} saved with "
                    f"ctx.save_for_backward was modified by an in-place operation (version "
                    f"{t._version[0]}, saved at version {version}); backward needs its old "
                    f"value. Use .clone() before the in-place change.")
            out.append(t if graph is None else graph)
        return tuple(out)

    def mark_non_differentiable(self, *outputs):
        """These outputs (the Tensors forward returns) get no gradient and never require grad;
        backward still receives a gradient for each: zeros."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value):
        """True (PyTorch's default): backward receives zeros for an output no gradient reached;
        False: None for it."""
        self._materialize = bool(value)

    def mark_dirty(self, *tensors):
        """These inputs were changed in place by forward and are returned: each comes back as
        the same Tensor with this op as its new history, as PyTorch's in-place ops."""
        for i, t in enumerate(tensors):
            if not isinstance(t, TensorBase):
                raise TypeError(f"{self._op}: mark_dirty takes Tensors, argument {i} is a "
                                f"{type(t).__name__}")
        self._dirty = tensors


class DelayedError(Node):
    """The gradient a @once_differentiable backward returned under create_graph: its value
    as it is, and an error if anything differentiates through it (PyTorch's DelayedError)."""

    op_name = "once_differentiable"

    def forward(self, x, *, message):
        self.message = message
        return x

    def backward(self, g):
        raise RuntimeError(self.message)


def once_differentiable(backward):
    """PyTorch's decorator for a backward that cannot be differentiated (it leaves Tensors,
    through numpy say): it runs under no_grad; under create_graph=True, when an incoming
    gradient requires grad, each gradient it returns carries a node that raises when
    differentiated ("trying to differentiate twice ..."), as PyTorch's do, instead of a
    second derivative that would silently be zero."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            outputs = backward(ctx, *grads)
        if not STATE.grad_enabled or not any(isinstance(g, TensorBase) and g.requires_grad
                                             for g in grads):
            return outputs
        single = not isinstance(outputs, tuple)
        message = (f"{getattr(ctx, '_op', 'function')}: trying to differentiate twice a "
                   f"function whose backward is marked @once_differentiable")
        done = tuple(_delayed(o, message) for o in ((outputs,) if single else outputs))
        return done[0] if single else done

    return wrapper


def _delayed(o, message):
    if not isinstance(o, TensorBase) or o._data.dtype.kind not in "fc":
        return o
    leaf = o._op_class._from_op(o._data, None)   # a stand-in leaf: no path to any input
    leaf.requires_grad = True
    return DelayedError.apply(leaf, message=message)
