"""torch's dtype promotion (torch.result_type), the one rule every element-wise op of two
operands follows: bool < integer < float, and a 0-d tensor or Python number changes the
result's dtype only when it is of a higher category (float32 tensor * 2.5 stays float32)."""
from __future__ import annotations

import numpy as np

from .tensor_base import TensorBase

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
_DEFAULT_FLOAT = np.dtype(np.float32)   # torch's default dtype: what a Python float becomes
_INT64, _BOOL = np.dtype(np.int64), np.dtype(np.bool_)


def promote_types(a, b):
    """torch.promote_types: the higher category wins (bool < integer < float), so int64 with
    float32 is float32 (numpy says float64); within a category numpy's rule (int8 + uint8 ->
    int16, float16 + float32 -> float32) is torch's."""
    if a == b:
        return a
    ca, cb = _CATEGORY.get(a.kind, 3), _CATEGORY.get(b.kind, 3)
    if ca != cb:
        return a if ca > cb else b
    return np.promote_types(a, b)


def _combine(higher, lower):
    """The dtype of a higher-priority group of operands combined with a lower one: the lower
    group only counts when it is of a higher category (torch's combine_categories)."""
    if higher is None:
        return lower
    if lower is None or higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def result_type(*operands):
    """The dtype of an element-wise op on these operands, by torch.result_type's rule.

    Three priorities: tensors (and arrays) with at least one dim, 0-d tensors, Python
    scalars (bool -> bool, int -> int64, float -> float32). Within a priority dtypes promote
    (`promote_types`); a lower priority changes the result only when it is of a higher
    category: float32 tensor + 0-d float64 tensor -> float32, int64 tensor + 2.5 -> float32,
    int32 tensor + 0-d int64 tensor -> int32, bool tensor + 1 -> int64, but int64 tensor +
    0-d float64 tensor -> float64.
    """
    dims = zero = scalars = None
    for x in operands:
        if isinstance(x, TensorBase):
            x = x._data
        if isinstance(x, np.ndarray):
            d = x.dtype
            if x.ndim:
                dims = d if dims is None else promote_types(dims, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
            continue
        if isinstance(x, (bool, np.bool_)):
            d = _BOOL
        elif isinstance(x, (int, np.integer)):
            d = _INT64
        elif isinstance(x, (float, np.floating)):
            d = _DEFAULT_FLOAT
        else:
            raise TypeError(f"expected a Tensor, array or number, got {type(x).__name__}")
        scalars = d if scalars is None else promote_types(scalars, d)
    return _combine(dims, _combine(zero, scalars))
