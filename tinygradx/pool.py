"""Public path of tinygradx.fast.pool (every attribute is read there)."""
# public path: the module lives in tinygradx/fast/pool.py
from .fast import pool as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
