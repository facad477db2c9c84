"""Public path of tinygradx.fast.process (every attribute is read there)."""
# public path: the module lives in tinygradx/fast/process.py
from .fast import process as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
