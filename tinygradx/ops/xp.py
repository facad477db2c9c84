"""The old home of the core's xp (tinygradx/core/xp.py): `from tinygradx.ops.xp import of`, the
docs' spelling before the core package, keeps working with the same objects."""
from ..core.xp import ARRAYS, TENSORS, of, sigmoid, value  # noqa: F401
