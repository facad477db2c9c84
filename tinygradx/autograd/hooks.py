"""Hooks as PyTorch has them: removable handles, and a Module's forward (pre-)hooks.

    handle = model.fc1.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    model(x)
    handle.remove()                        # or: with model.fc1.register_forward_hook(...):

`RemovableHandle` is what every `register_*hook` returns (Tensor.register_hook too). A Module's
hooks live in ordered dicts on the module itself (`_forward_pre_hooks`, `_forward_hooks`, made on
first use, so a subclass need not call `super().__init__()`), and `Module.__call__` runs them
around `forward` only when there are some: a module without hooks pays one dict lookup.
"""
from __future__ import annotations

import itertools

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


def add_tensor_hook(hooks, fn):
    """Append fn to a Tensor's hook list as (id, fn); its handle."""
    key = next(_ids)
    hooks.append((key, fn))
    return RemovableHandle(hooks, key)


def _table(module, name):
    table = module.__dict__.get(name)
    if table is None:
        table = module.__dict__[name] = {}
    return table


def _register(module, name, hook, prepend, with_kwargs):
    if not callable(hook):
        raise TypeError(f"{type(module).__name__}.register_{name.strip('_')[:-1]}: the hook "
                        f"must be callable, got {type(hook).__name__}")
    table, key = _table(module, name), next(_ids)
    if prepend:                                  # first in order: rebuild the ordered dict
        earlier = list(table.items())
        table.clear()
        table[key] = hook
        table.update(earlier)
    else:
        table[key] = hook
    kwargs_ids = _table(module, "_hooks_with_kwargs")
    if with_kwargs:
        kwargs_ids[key] = True
    return RemovableHandle(table, key, (kwargs_ids,))


class ModuleHooks:
    """The hook methods of `Module` (a mixin: module.py stays about the module tree)."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) runs before forward; a non-None result replaces args (a
        non-tuple is wrapped in one). With with_kwargs=True: hook(module, args, kwargs)
        returning None or (args, kwargs). prepend=True runs it before the hooks already
        registered. Returns a RemovableHandle."""
        return _register(self, "_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args, output) runs after forward; a non-None result replaces the
        output. With with_kwargs=True: hook(module, args, kwargs, output). Returns a
        RemovableHandle."""
        return _register(self, "_forward_hooks", hook, prepend, with_kwargs)

    def has_forward_hooks(self):
        """Whether a forward (pre-)hook is registered on this module: code that would run its
        forward's arithmetic without calling it (a model's fast path on arrays) must then call
        it, so the hooks see it run."""
        d = self.__dict__
        return bool(d.get("_forward_pre_hooks")) or bool(d.get("_forward_hooks"))

    def _call_with_hooks(self, args, kwargs):
        """forward(*args, **kwargs) with the pre-hooks before and the hooks after, in order."""
        with_kwargs = self.__dict__.get("_hooks_with_kwargs", {})
        for key, hook in list(self.__dict__.get("_forward_pre_hooks", {}).items()):
            if key in with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{type(self).__name__}: a forward pre-hook "
                                           f"registered with_kwargs=True must return None or "
                                           f"(args, kwargs), got {type(result).__name__}")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for key, hook in list(self.__dict__.get("_forward_hooks", {}).items()):
            if key in with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        return output
