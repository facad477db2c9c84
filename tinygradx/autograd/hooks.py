"""Hooks as PyTorch has them: removable handles, a Tensor's gradient hooks, a Module's forward and
backward hooks.

    handle = model.fc1.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    model(x)
    handle.remove()                        # or: with model.fc1.register_forward_hook(...):

`RemovableHandle` is what every `register_*hook` returns. A Tensor's hooks are `(id, hook)`
pairs in its `_hooks` list, which the walk runs on a snapshot of the list (a hook added or
removed while they run counts from the next pass, as PyTorch's): `TensorHook` wraps the user's
function and holds what it returns to PyTorch's rules (None, or a Tensor of the gradient's shape
and dtype); a `PostAccumulateHook` runs after a leaf's `.grad` has taken the gradient
(backprop.py's stores). A Module's hooks live in ordered dicts on the module itself
(`_forward_pre_hooks`, `_forward_hooks`, `_backward_pre_hooks`, `_backward_hooks`, made on first
use, so a subclass need not call `super().__init__()`), and `Module.__call__` runs them around
`forward` only when there are some: a module without hooks pays one dict lookup.

Backward hooks (`register_full_backward_hook`, `register_full_backward_pre_hook`) are PyTorch's
design on the engine's own nodes: the call's Tensor arguments and its outputs each pass through
one identity node (`BackwardHookFunction`, a custom Function), whose backward sees the
gradients of all outputs at once (grad_output: the pre-hooks run there) and, later in the same
walk, those of all inputs (grad_input: the hooks run there, with the grad_output kept from
before). Identity outputs are views of what they pass on, so an in-place change of a hooked
module's input or output inside a graph is refused, as PyTorch refuses it.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from ..core.node import STATE
from ..core.tensor_base import TensorBase
from .custom_function import Function

_ids = itertools.count()


class RemovableHandle:
    """Removes one registered hook: `handle.remove()`, or leave a `with handle:` block. Removing
    twice, or after the owner is gone, does nothing (as in PyTorch)."""

    __slots__ = ("hooks", "id", "extra")

    def __init__(self, hooks, key, extra=()):
        self.hooks, self.id, self.extra = hooks, key, extra

    def remove(self):
        for table in (self.hooks, *self.extra):
            if isinstance(table, dict):
                table.pop(self.id, None)
            else:                                # a Tensor's list of (id, hook) pairs
                table[:] = [pair for pair in table if pair[0] != self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        return f"<RemovableHandle {self.id}>"


def _hook_name(fn):
    return getattr(fn, "__name__", type(fn).__name__)


def _a(value):
    """'a str', 'an int': the type of a value with its article."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def _check_callable(where, hook):
    if not callable(hook):
        raise TypeError(f"{where}: the hook must be callable, got {type(hook).__name__}")


# --------------------------------------------------------------------------------------------
# a Tensor's hooks
# --------------------------------------------------------------------------------------------

class TensorHook:
    """A Tensor's gradient hook: fn(grad) -> None or the new gradient, held to PyTorch's rules
    (a Tensor, of the gradient's shape and dtype), each broken rule one line naming the hook."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grad):
        result = self.fn(grad)
        if result is None:
            return None
        name = _hook_name(self.fn)
        if not isinstance(result, TensorBase):
            raise TypeError(f"hook {name!r} returned {_a(result)}: a tensor hook "
                            f"must return None or a Tensor (the new gradient, of shape "
                            f"{tuple(grad.shape)})")
        if result.shape != grad.shape:
            raise RuntimeError(f"hook {name!r} has changed the size of value: the gradient has "
                               f"shape {tuple(grad.shape)}, the hook returned shape "
                               f"{tuple(result.shape)}")
        if result._data.dtype != grad._data.dtype:
            raise RuntimeError(f"hook {name!r} has changed the type of value: the gradient is "
                               f"{grad._data.dtype}, the hook returned {result._data.dtype}")
        return result


class PostAccumulateHook:
    """fn(tensor) after a leaf's .grad has taken its gradient (`run_post_hooks`); as a gradient
    hook it does nothing (the walk calls every entry of `_hooks` with the gradient)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grad):
        return None


def add_tensor_hook(hooks, fn, post=False):
    """Append a checked hook to a Tensor's hook list as (id, hook); its handle."""
    key = next(_ids)
    hooks.append((key, PostAccumulateHook(fn) if post else TensorHook(fn)))
    return RemovableHandle(hooks, key)


def run_post_hooks(t):
    """The post-accumulate-grad hooks of leaf t, in order (a snapshot, as the gradient hooks)."""
    for _, hook in tuple(t._hooks):
        if type(hook) is PostAccumulateHook and hook.fn(t) is not None:
            raise RuntimeError(f"post accumulate grad hook {_hook_name(hook.fn)!r} returned a "
                               f"value: it must return None (it may change tensor.grad in "
                               f"place)")


# --------------------------------------------------------------------------------------------
# a Module's hooks
# --------------------------------------------------------------------------------------------

def _table(module, name):
    table = module.__dict__.get(name)
    if table is None:
        table = module.__dict__[name] = {}
    return table


def _register(module, name, hook, prepend, with_kwargs=False, always_call=False):
    _check_callable(f"{type(module).__name__}.register_{name.strip('_')[:-1]}", hook)
    table, key = _table(module, name), next(_ids)
    if prepend:                                  # first in order: rebuild the ordered dict
        earlier = list(table.items())
        table.clear()
        table[key] = hook
        table.update(earlier)
    else:
        table[key] = hook
    kwargs_ids = _table(module, "_hooks_with_kwargs")     # its presence: Module.__call__ looks
    always = _table(module, "_forward_hooks_always_called")
    if with_kwargs:
        kwargs_ids[key] = True
    if always_call:
        always[key] = True
    return RemovableHandle(table, key, (kwargs_ids, always))


class ModuleHooks:
    """The hook methods of `Module` (a mixin: module.py stays about the module tree)."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) runs before forward; a non-None result replaces args (a
        non-tuple is wrapped in one). With with_kwargs=True: hook(module, args, kwargs)
        returning None or (args, kwargs). prepend=True runs it before the hooks already
        registered. Returns a RemovableHandle."""
        return _register(self, "_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) runs after forward; a non-None result replaces the
        output. With with_kwargs=True: hook(module, args, kwargs, output). always_call=True runs
        it even when forward (or an earlier hook) raised, with output None (its own error is
        then a warning, the first error goes on). Returns a RemovableHandle."""
        return _register(self, "_forward_hooks", hook, prepend, with_kwargs, always_call)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) runs when the gradients of the module's outputs are
        known (a tuple, None for an output no gradient reached or that is not a Tensor); a
        non-None result (a tuple of the same length) replaces them. Returns a
        RemovableHandle."""
        return _register(self, "_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) runs when the gradients of the module's
        positional Tensor arguments are known (grad_input: one per positional argument, None
        for a non-Tensor; all None when no argument requires grad, and then the hook runs when
        grad_output is known and may return nothing else); a non-None result (a tuple of the
        same length) replaces grad_input. Returns a RemovableHandle."""
        return _register(self, "_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        """PyTorch's deprecated hook on the module's last op: refused, by name."""
        raise NotImplementedError(f"{type(self).__name__}.register_backward_hook (PyTorch's "
                                  f"deprecated hook on the module's last op) is not available: "
                                  f"use register_full_backward_hook")

    def has_forward_hooks(self):
        """Whether a forward (pre-)hook is registered on this module: code that would run its
        forward's arithmetic without calling it (a model's fast path on arrays) must then call
        it, so the hooks see it run."""
        d = self.__dict__
        return bool(d.get("_forward_pre_hooks")) or bool(d.get("_forward_hooks"))

    def _call_with_hooks(self, args, kwargs):
        """forward(*args, **kwargs) with the hooks around it, in PyTorch's order: forward
        pre-hooks, backward hooks set up on the arguments, forward, forward hooks, backward
        hooks set up on the output; forward hooks with always_call=True also after an error."""
        d = self.__dict__
        with_kwargs = d.get("_hooks_with_kwargs", {})
        always, called, output = d.get("_forward_hooks_always_called", {}), set(), None
        try:
            for key, hook in list(d.get("_forward_pre_hooks", {}).items()):
                if key in with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(f"{type(self).__name__}: a forward pre-hook "
                                               f"registered with_kwargs=True must return None "
                                               f"or (args, kwargs), got "
                                               f"{type(result).__name__}")
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            backward = None
            if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
                backward = BackwardHook(self, list(d.get("_backward_hooks", {}).values()),
                                        list(d.get("_backward_pre_hooks", {}).values()))
                args = backward.setup_inputs(args)
            output = self.forward(*args, **kwargs)
            for key, hook in list(d.get("_forward_hooks", {}).items()):
                called.add(key)
                if key in with_kwargs:
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                if result is not None:
                    output = result
            if backward is not None:
                output = backward.setup_outputs(output)
            return output
        except Exception:
            for key, hook in list(d.get("_forward_hooks", {}).items()):
                if key not in always or key in called:
                    continue
                try:
                    if key in with_kwargs:
                        result = hook(self, args, kwargs, output)
                    else:
                        result = hook(self, args, output)
                    if result is not None:
                        output = result
                except Exception as err:      # noqa: BLE001 (the first error goes on)
                    warnings.warn(f"{type(self).__name__}: a forward hook with "
                                  f"always_call=True raised an error that was silenced "
                                  f"because forward had raised one: {err}", stacklevel=2)
            raise


# --------------------------------------------------------------------------------------------
# a Module's backward hooks
# --------------------------------------------------------------------------------------------

class BackwardHookFunction(Function):
    """The identity a hooked module's inputs (or outputs) pass through: its backward hands all
    their gradients at once to `on_grads` (a BackwardHook's) and passes on what it returns."""

    @staticmethod
    def forward(ctx, on_grads, side, *tensors):
        ctx.on_grads, ctx.metas = on_grads, [(t.shape, t.dtype, t.requires_grad)
                                             for t in tensors]
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        if side == "outputs":               # None for an output no gradient reached
            ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + tuple(ctx.on_grads(grads, ctx.metas))


class BackwardHook:
    """One call's backward hooks (a module called twice makes two)."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.name = type(module).__name__
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None

    def _wrap(self, values, side, on_grads):
        index = [i for i, v in enumerate(values) if isinstance(v, TensorBase)]
        if not (STATE.grad_enabled and any(values[i].requires_grad for i in index)):
            return values, None
        passed = BackwardHookFunction.apply(on_grads, side, *[values[i] for i in index])
        out = list(values)
        for i, v in zip(index, passed, strict=True):
            out[i] = v
        return tuple(out), index

    def setup_inputs(self, args):
        self.n_inputs = len(args)
        args, self.input_index = self._wrap(tuple(args), "inputs", self._on_input_grads)
        return args

    def setup_outputs(self, output):
        single = not isinstance(output, tuple)
        if single and not isinstance(output, TensorBase):
            warnings.warn(f"{self.name}: for backward hooks to be called, the module's output "
                          f"must be a Tensor or a tuple of Tensors, not a "
                          f"{type(output).__name__}", stacklevel=3)
        values = (output,) if single else output
        self.n_outputs = len(values)
        values, self.output_index = self._wrap(values, "outputs", self._on_output_grads)
        return values[0] if single else values

    def _placed(self, index, grads, n):
        placed = [None] * n
        for i, g in zip(index, grads, strict=True):
            placed[i] = g
        return tuple(placed)

    def _checked(self, what, result, expected, metas_at):
        """A hook's replacement tuple held to PyTorch's rules: its length, then per entry None
        or a Tensor of the shape and dtype of what it replaces."""
        if not isinstance(result, (tuple, list)):
            raise TypeError(f"{self.name}: a backward {what} hook must return None or a tuple "
                            f"of gradients, got {_a(result)}")
        if len(result) != len(expected):
            raise RuntimeError(f"{self.name}: a backward {what} hook returned {len(result)} "
                               f"gradients, expected {len(expected)}")
        for i, g in enumerate(result):
            meta = metas_at.get(i)
            if g is None or meta is None:
                continue
            if not isinstance(g, TensorBase):
                raise TypeError(f"{self.name}: a backward {what} hook returned {_a(g)} at "
                                f"position {i}; expected a Tensor or None")
            if tuple(g.shape) != tuple(meta[0]):
                raise RuntimeError(f"{self.name}: a backward {what} hook has changed the size "
                                   f"of gradient {i}: shape {tuple(meta[0])}, the hook "
                                   f"returned shape {tuple(g.shape)}")
            if g._data.dtype != np.dtype(meta[1]):
                raise RuntimeError(f"{self.name}: a backward {what} hook has changed the type "
                                   f"of gradient {i}: {np.dtype(meta[1])}, the hook returned "
                                   f"{g._data.dtype}")
        return tuple(result)

    def _on_output_grads(self, grads, metas):
        metas_at = dict(zip(self.output_index, metas, strict=True))
        self.grad_outputs = self._placed(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, self.grad_outputs)
            if result is not None:
                self.grad_outputs = self._checked("pre-hook", result, self.grad_outputs, metas_at)
        grad_outputs = self.grad_outputs
        if self.input_index is None:      # no input requires grad: the hooks run now
            warnings.warn(f"{self.name}: a full backward hook runs when the gradients of the "
                          f"outputs are known, since no input requires grad", stacklevel=2)
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                result = hook(self.module, none, self.grad_outputs)
                if result is not None and not (isinstance(result, tuple)
                                               and all(r is None for r in result)):
                    raise RuntimeError(f"{self.name}: a backward hook of a module none of "
                                       f"whose inputs requires grad must return None (or "
                                       f"Nones)")
            self.grad_outputs = None
        out = []                          # what flows on into the module's graph: zeros for
        for i, (shape, dtype, needs) in zip(self.output_index, metas, strict=True):  # a
            g = grad_outputs[i]           # differentiable output no gradient reached, as
            if g is None and needs:       # PyTorch's identity node materializes them
                g = _zeros(grads, shape, dtype)
            out.append(g)
        return out

    def _on_input_grads(self, grads, metas):
        if self.grad_outputs is None:     # reached without passing the outputs (double
            return grads                  # backward): nothing to report, as PyTorch
        metas_at = dict(zip(self.input_index, metas, strict=True))
        grad_input = self._placed(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_outputs)
            if result is not None:
                grad_input = self._checked("hook", result, grad_input, metas_at)
        self.grad_outputs = None
        return [grad_input[i] for i in self.input_index]


def _zeros(grads, shape, dtype):
    """Zeros as a Tensor of the class of the gradients around (at least one reached)."""
    like = next(g for g in grads if isinstance(g, TensorBase))
    return like._op_class._from_op(np.zeros(tuple(shape), dtype), None)
