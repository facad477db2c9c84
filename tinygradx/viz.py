"""Public path of tinygradx.graph.viz (every attribute is read there)."""
# public path: the module lives in tinygradx/graph/viz.py
from .graph import viz as _module

__all__ = list(getattr(_module, "__all__", [n for n in dir(_module) if not n.startswith("_")]))
__doc__ = _module.__doc__


def __getattr__(name):
    return getattr(_module, name)


def __dir__():
    return dir(_module)
