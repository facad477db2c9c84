"""Public path of tinygradx.core.xp (every attribute is read there): the old home of `of`."""
# public path: the module lives in tinygradx/core/xp.py; users' ops written with
# `from tinygradx.ops.xp import of` (the docs' spelling before the core package) keep working
from ..core import xp as _module

__all__ = list(getattr(_module, "__all__", [n for n in dir(_module) if not n.startswith("_")]))
__doc__ = _module.__doc__


def __getattr__(name):
    return getattr(_module, name)


def __dir__():
    return dir(_module)
