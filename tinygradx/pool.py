"""Public path of tinygradx.fast.pool (every attribute is read there)."""
# public path: the module lives in tinygradx/fast/pool.py
from .fast import pool as _module

__all__ = list(getattr(_module, "__all__", [n for n in dir(_module) if not n.startswith("_")]))
__doc__ = _module.__doc__


def __getattr__(name):
    return getattr(_module, name)


def __dir__():
    return dir(_module)
