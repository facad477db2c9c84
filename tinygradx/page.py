"""Public path of tinygradx.graph.page (every attribute is read there)."""
# public path: the module lives in tinygradx/graph/page.py
from .graph import page as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
