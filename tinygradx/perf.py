"""Public path of tinygradx.fast.perf (every attribute is read there)."""
# public path: the module lives in tinygradx/fast/perf.py
from .fast import perf as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
