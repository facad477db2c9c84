"""The machinery of the look-alike: a module that re-exports tinygradx objects under a PyTorch
name, and the refusals that name the PyTorch API a program asked for and did not get.

A `Facade` holds no code of its own. An attribute is looked up, in order, in its submodules
and extra names (set as ordinary attributes), in the refusal table (`REASONS`: names tinygradx
has with another meaning, or that deserve a hint), then in its tinygradx source module (the
names of `source.__all__` that are not modules); anything else is refused with an
AttributeError that names it. Lookups are not cached, so what the engine gains shows up here at
once. Every facade is a package with an empty `__path__`: `import torch.fft` then reaches the
import hook `Refuser`, which refuses it with an ImportError that names it.
"""
from __future__ import annotations

import importlib.machinery
import types

from . import scope

LAYER = "tinygradx's PyTorch compatibility layer (tinygradx.compat)"

# Why a PyTorch name is refused, where a hint helps more than the bare refusal. Keys are full
# PyTorch names; a module's entry covers everything below it (torch.utils.data.DataLoader).
REASONS = {
    "torch.trace": "tinygradx.trace records a shape table, not the sum of a diagonal; write "
                   "x.diagonal().sum()",
    "torch.jit": "tinygradx runs every op eagerly; call the model itself",
}


def not_available(name):
    """The one message of every refusal: the PyTorch name, then why when there is a reason
    (the table above, else the rule of scope.py that leaves the name out)."""
    reason = next((REASONS[p] for p in _prefixes(name) if p in REASONS), "") or \
        scope.reason(name)
    return f"{name} is not available in {LAYER}" + (f": {reason}" if reason else "")


def _prefixes(name):
    """torch.utils.data.DataLoader -> itself, torch.utils.data, torch.utils, torch."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


class Facade(types.ModuleType):
    """A PyTorch module name (`torch.nn`) whose attributes are tinygradx's objects.

    `source` is the tinygradx module whose public names (`__all__`, modules left out) it
    re-exports (or None), only those in `only` when given (a submodule of PyTorch's that holds
    part of a package's names: torch.utils.data.sampler); `extra` maps further names to
    objects, including child facades.
    """

    def __init__(self, name, source=None, extra=None, doc=None, only=None):
        super().__init__(name, doc)
        self.__path__ = []           # a package: `import name.sub` asks the import hooks
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        self.__dict__["_source"] = source
        self.__dict__["_only"] = None if only is None else frozenset(only)
        for key, value in (extra or {}).items():
            setattr(self, key, value)

    def _lookup(self, name):
        """The source's public object `name` (not a module), or None."""
        source = self.__dict__["_source"]
        only = self.__dict__["_only"]
        if source is None or (only is not None and name not in only):
            return None
        names = getattr(source, "__all__", None)
        if names is None:
            if name.startswith("_"):
                return None
        elif name not in self._name_set(names):
            return None
        value = getattr(source, name, None)
        return None if isinstance(value, types.ModuleType) else value

    def _name_set(self, names):
        """`names` (a source's __all__ list) as a set, rebuilt when the list changes."""
        key = (id(names), len(names))
        cached = self.__dict__.get("_names")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_names"] = (key, frozenset(names))
        return cached[1]

    def _exported(self):
        """{name: object} of the source's public names, modules left out."""
        source = self.__dict__["_source"]
        if source is None:
            return {}
        names = getattr(source, "__all__", None)
        if names is None:
            names = [n for n in vars(source) if not n.startswith("_")]
        found = {n: self._lookup(n) for n in names}
        return {n: v for n, v in found.items() if v is not None}

    def __getattr__(self, name):
        full = f"{self.__name__}.{name}"
        if not name.startswith("__") and full not in REASONS:
            value = self._lookup(name)
            if value is not None:
                return value
        raise AttributeError(not_available(full), name=name, obj=self)

    def __dir__(self):
        own = [k for k in self.__dict__ if not k.startswith("_")]
        hidden = {k.rpartition(".")[2] for k in REASONS if k.startswith(self.__name__ + ".")}
        return sorted(set(own) | (set(self._exported()) - hidden))

    def provides(self, name):
        """Whether `name` is an attribute of this module (without raising)."""
        try:
            getattr(self, name)
        except AttributeError:
            return False
        return True

    def __repr__(self):
        return f"<module {self.__name__!r} (tinygradx.compat)>"


class Refuser:
    """The import hook (first on sys.meta_path while the look-alike is installed): refuses
    every `torch.*` module that the look-alike does not have, with an ImportError naming it.

    Plain ImportError, not ModuleNotFoundError: `from torch import fft` turns a
    ModuleNotFoundError of its own submodule into "cannot import name", losing the name of
    what is missing. Names the look-alike does provide are in sys.modules and never get here,
    except classes and functions (`import torch.nn.Linear`), which get Python's own message.
    """

    def __init__(self, facades):
        self.facades = facades

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        parent, _, leaf = fullname.rpartition(".")
        facade = self.facades.get(parent)
        if facade is not None and facade.provides(leaf):
            return None
        raise ImportError(not_available(fullname), name=fullname)

    def invalidate_caches(self):
        pass
