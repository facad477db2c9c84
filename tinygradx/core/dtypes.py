"""torch's dtype promotion (torch.result_type), the one rule every element-wise op of two
operands follows: bool < integer < float, and a 0-d tensor or Python number changes the
result's dtype only when it is of a higher category (float32 tensor * 2.5 stays float32)."""
from __future__ import annotations

import numpy as np

from .tensor_base import TensorBase

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
_DEFAULT_FLOAT = np.dtype(np.float32)   # torch's default dtype: what a Python float becomes
_INT64, _BOOL = np.dtype(np.int64), np.dtype(np.bool_)
# torch's "barely supported" unsigned types: they promote only with floats (and themselves),
# and most ops have no kernel for them (`check_unsigned_op`, ops.dtypes.refuse_unsigned)
WIDE_UNSIGNED = frozenset((np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)))


def int_scalar(x, dtype, refuse=None):
    """The Python int x as a 0-d array of integer `dtype`, wrapped modulo 2**bits as torch wraps
    an arithmetic op's scalar operand (int32 tensor * 2**40 -> 0, uint32 * -1 -> 4294967295);
    numpy would raise. Beyond 64 bits torch refuses it, and so does this; with refuse=op (where,
    masked_fill, fill_, clamp) a value out of the dtype's range is refused, as those of torch
    refuse it (an unsigned dtype still takes -max..-1, which wrap: uint8 -1 -> 255)."""
    info = np.iinfo(dtype)
    low = -int(info.max) if dtype.kind == "u" else int(info.min)
    if refuse and not low <= x <= int(info.max):
        raise OverflowError(f"{refuse}: value {x} cannot be converted to {dtype} without "
                            f"overflow (as in torch)")
    if not -2**63 <= x < 2**64:
        raise OverflowError(f"the Python int {x} is too big to convert to a tensor's number "
                            f"(at most 64 bits, as in torch)")
    return np.asarray(x % 2**(8 * dtype.itemsize), np.dtype(f"u{dtype.itemsize}")).view(dtype)


def promote_types(a, b):
    """torch.promote_types: the higher category wins (bool < integer < float), so int64 with
    float32 is float32 (numpy says float64); within a category numpy's rule (int8 + uint8 ->
    int16, float16 + float32 -> float32) is torch's."""
    if a == b:
        return a
    if (a in WIDE_UNSIGNED or b in WIDE_UNSIGNED) and "f" not in (a.kind, b.kind):
        raise TypeError(f"promotion for uint16, uint32, uint64 types is not supported (as in "
                        f"torch), attempted to promote {a} and {b}; convert with .long()")
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


# The graph ops (Function names) torch 2.13 has a kernel for on uint16/32/64: moving, indexing
# and joining them, mul, the products and scans (which widen to int64), the roundings (which
# keep them) and the float functions (which compute in float32). Function.apply refuses every
# other op on these dtypes before it computes; a public op that computes without a Function
# calls ops.dtypes.refuse_unsigned itself. tests/ops/test_unsigned.py holds both lists to torch.
UNSIGNED_OPS = frozenset((
    "sum", "reshape", "permute", "expand", "getitem", "setitem", "cat", "stack",
    "contiguous", "fill", "copy", "where", "roll", "repeat", "repeatinterleave", "diagonal",
    "diagonal_adjoint", "nan_to_num", "logsumexp", "flip",
    "mul", "prod", "cumsum", "cumprod", "floor", "ceil", "round", "trunc",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "tanh", "sigmoid",
    "erf", "erfc", "erfinv", "lgamma", "polygamma", "sinc", "logit",
))


def check_unsigned_op(op, arrays):
    """Function.apply's check, before forward: an op (a Function class) not in UNSIGNED_OPS
    refuses uint16/32/64 inputs (ops.dtypes.refuse_unsigned says it for the other ops)."""
    for a in arrays:
        if a.dtype in WIDE_UNSIGNED and op.name() not in UNSIGNED_OPS:
            raise NotImplementedError(
                f"{op.name()}: not implemented for {a.dtype} tensors (as in torch, which runs "
                f"few ops on uint16, uint32 and uint64); convert first, e.g. x.long() or x.float()")
