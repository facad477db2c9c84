"""Public path of tinygradx.gradcheck.func (every attribute is read there)."""
# public path: the module lives in tinygradx/gradcheck/func.py
from .gradcheck import func as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
