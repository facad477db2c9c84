"""Public path of tinygradx.gradcheck.testing (every attribute is read there)."""
# public path: the module lives in tinygradx/gradcheck/testing.py
from .gradcheck import testing as _module
from ._public import forward

__all__, __doc__, __getattr__, __dir__ = forward(_module)
