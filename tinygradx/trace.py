"""Public path of tinygradx.graph.trace (every attribute is read there)."""
# public path: the module lives in tinygradx/graph/trace.py
from .graph import trace as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
