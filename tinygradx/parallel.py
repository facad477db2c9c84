"""Public path of tinygradx.fast.parallel (every attribute is read there)."""
# public path: the module lives in tinygradx/fast/parallel.py
from .fast import parallel as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
