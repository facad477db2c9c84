"""Public path of tinygradx.ops.inference (every attribute is read there)."""
# public path: the module lives in tinygradx/ops/inference.py
from .ops import inference as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
