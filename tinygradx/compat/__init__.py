"""tinygradx.compat: run a model file written for PyTorch on tinygradx, unchanged.

    python -m tinygradx.compat my_model.py --steps 10      # the whole script, `torch` = tinygradx

    import tinygradx.compat as compat
    with compat.installed() as torch:                       # `import torch` inside the block
        import torch.nn as nn                               # is tinygradx's look-alike
    gpt = compat.load_module("gpt.py")                      # a file imported with the look-alike
    model = gpt.GPT(gpt.GPTConfig())                        # a tinygradx Module: draw, trace it

The look-alike (`tinygradx.compat.torch`, built in lookalike.py) only re-exports tinygradx's own
objects under PyTorch's names: `torch.nn.Linear` *is* `tinygradx.nn.Linear`, `torch.Tensor` is
`tinygradx.Tensor`. What tinygradx lacks is refused with an error that names the PyTorch API
(`torch.fft is not available in tinygradx's PyTorch compatibility layer (tinygradx.compat)`),
for attributes (AttributeError) and imports (ImportError) alike. docs/pytorch-code.md lists
what runs and what does not.

PyTorch itself may be installed next to it: while the look-alike is installed, PyTorch's
modules (and any module that took names from them) are set aside, and they come back when the
block ends; modules imported inside the block that took names from the look-alike are dropped
from sys.modules then. So one process can load the same file under both (`load_module(path)` and
`load_module(path, pytorch=True)`) and compare the two.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import runpy
import sys
import types

from .facade import Facade, Refuser, not_available
from .lookalike import MODULES, torch

__all__ = ["torch", "installed", "install", "pytorch", "load_module", "run_script",
           "not_available"]

# `import tinygradx.compat.torch` finds the look-alike (it is an object, not a file)
sys.modules.setdefault(__name__ + ".torch", torch)

_REFUSER = Refuser(MODULES)
_COUNTER = itertools.count(1)


def _is_torch_name(name):
    return isinstance(name, str) and (name == "torch" or name.startswith("torch."))


def _from_lookalike(value):
    """Whether an object of a module's namespace came from the look-alike (or from tinygradx,
    which is what the look-alike hands out)."""
    if isinstance(value, Facade):
        return True
    if not isinstance(value, (type, types.FunctionType)):
        return False
    module = getattr(value, "__module__", None)
    return isinstance(module, str) and module.startswith("tinygradx.")


def _from_pytorch(value):
    """Whether an object of a module's namespace came from PyTorch itself."""
    if isinstance(value, Facade):
        return False
    if isinstance(value, types.ModuleType):
        return _is_torch_name(getattr(value, "__name__", ""))
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return _is_torch_name(getattr(value, "__module__", None))
    return False


def _user_modules(names, took):
    """The modules among `names` (not torch's, not tinygradx's) whose namespace holds an
    object for which `took` is true."""
    found = []
    for name in names:
        mod = sys.modules.get(name)
        if mod is None or _is_torch_name(name) or name == "tinygradx" or \
                name.startswith("tinygradx."):
            continue
        try:
            values = list(vars(mod).values())
        except TypeError:                              # a module-like object without __dict__
            continue
        if any(took(v) for v in values):
            found.append(name)
    return found


# PyTorch's own modules, kept whenever they leave sys.modules: its extension modules load once
# per process, so they are put back, never imported a second time
_PYTORCH = {}


def _take_torch_modules():
    """Remove every torch.* entry from sys.modules and return them; PyTorch's are also kept."""
    taken = {n: sys.modules.pop(n) for n in [n for n in sys.modules if _is_torch_name(n)]}
    _PYTORCH.update({n: m for n, m in taken.items() if not isinstance(m, Facade)})
    return taken


class _TorchIs:
    """A block in which `torch` is the look-alike (lookalike=True) or PyTorch (False)."""

    def __init__(self, lookalike, keep=()):
        self.lookalike, self.keep = lookalike, keep

    def __enter__(self):
        self.before_torch = _take_torch_modules()
        other = _from_pytorch if self.lookalike else (lambda v: isinstance(v, Facade))
        self.aside = {n: sys.modules.pop(n) for n in _user_modules(list(sys.modules), other)}
        # the refusing import hook is on while the look-alike is, and off in a PyTorch block
        # (even inside a look-alike block), where `import torch` must find PyTorch
        self.hooks_off = 0 if self.lookalike else sys.meta_path.count(_REFUSER)
        if self.lookalike:
            sys.modules.update(MODULES)
            sys.meta_path.insert(0, _REFUSER)
        else:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not _REFUSER]
            sys.modules.update(_PYTORCH)
        self.before = set(sys.modules)
        return torch if self.lookalike else sys.modules.get("torch")

    def __exit__(self, *exc):
        if self.lookalike:
            sys.meta_path.remove(_REFUSER)                 # this block's; an outer one stays
        sys.meta_path[0:0] = [_REFUSER] * self.hooks_off
        mine = _from_lookalike if self.lookalike else _from_pytorch
        for n in _user_modules(set(sys.modules) - self.before, mine):
            if n not in self.keep:
                del sys.modules[n]
        _take_torch_modules()
        if any(isinstance(m, Facade) for m in self.before_torch.values()):
            sys.modules.update(self.before_torch)          # the look-alike, as before
        elif self.before_torch or not self.lookalike:
            sys.modules.update(_PYTORCH)                   # PyTorch, once imported, stays
        sys.modules.update(self.aside)


def installed():
    """Inside `with installed() as torch:`, `import torch` (and torch.nn, torch.optim, ...)
    gives tinygradx's look-alike; sys.modules is restored when the block ends.

    PyTorch itself, when it was imported, and the modules that took names from it are set
    aside for the block and come back after it; the modules first imported inside the block
    that took names from the look-alike are removed from sys.modules after it (a later
    `import` under PyTorch runs them again). An `import torch` inside a function runs when the
    function is called, and gets whatever `torch` is then.
    """
    return _TorchIs(True)


def pytorch():
    """Inside `with pytorch() as torch:`, `import torch` gives PyTorch itself (it must be
    installed; the block's value is None if it is not imported yet), even where the look-alike
    is installed; the look-alike and the modules that took names from it are set aside for the
    block, and the modules first imported inside it that took names from PyTorch leave
    sys.modules after it. `load_module(path, pytorch=True)` loads a file in such a block."""
    return _TorchIs(False)


def install():
    """Install the look-alike as `torch` for the rest of the process (a notebook's first cell,
    a script's first line); returns it. `python -m tinygradx.compat` does this for a script."""
    if sys.modules.get("torch") is not torch:
        _TorchIs(True).__enter__()                 # never left
    return torch


def load_module(path, name=None, pytorch=False):
    """Import the Python file `path` as a module whose `torch` is tinygradx's look-alike (or
    PyTorch itself, with pytorch=True; it must be installed) and return it.

    The module gets a unique name (`gpt__tinygradx1` for gpt.py, unless `name` is given) and
    stays in sys.modules under it, so the same file loads any number of times, under either
    `torch`, and the modules do not share state. Its directory is first on sys.path while it
    loads, as for a script, so `from my_layers import Block` finds a file next to it (loaded
    under the same `torch`).
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_module: no such file: {path}")
    stem = os.path.splitext(os.path.basename(path))[0]
    suffix = "pytorch" if pytorch else "tinygradx"
    name = name or f"{stem}__{suffix}{next(_COUNTER)}"
    folder = os.path.dirname(path)
    with _TorchIs(not pytorch, keep=(name,)):
        if pytorch:
            try:
                import torch as _pytorch  # noqa: F401  (PyTorch itself, checked up front)
            except ImportError as e:
                raise ImportError(f"load_module({path!r}, pytorch=True) needs PyTorch "
                                  f"installed: {e}") from None
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module                     # dataclasses and pickle look it up
        sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            sys.path.remove(folder)
    return module


def run_script(path, argv=()):
    """Run a Python script as `__main__` with the look-alike installed as `torch` for the rest
    of the process, as `python -m tinygradx.compat path args...` does: sys.argv is
    [path, *argv] and the script's directory is first on sys.path. Returns its globals."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"python -m tinygradx.compat: no such file: {path}")
    install()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    return runpy.run_path(path, run_name="__main__")
