"""Dtypes: the ones a Tensor may hold, dtype names ("float32", "long", ...), the boundary that
turns Python data and arrays into a supported array, finfo/iinfo and the default dtype.
PyTorch's promotion rule for element-wise ops (`result_type`) is the core's
(tinygradx/core/dtypes.py), re-exported here.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import (WIDE_UNSIGNED, int_scalar, promote_types,  # noqa: F401
                           result_type)                                  # (the core's rule)
from ..core.tensor_base import TensorBase

float32, float64, float16 = np.float32, np.float64, np.float16
int64, int32, int16, int8, uint8, bool_ = np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_
uint16, uint32, uint64 = np.uint16, np.uint32, np.uint64

_DTYPES = {"float32": float32, "float": float32, "float64": float64, "double": float64,
           "float16": float16, "half": float16, "int64": int64, "long": int64, "int32": int32,
           "int": int32, "int16": int16, "short": int16, "int8": int8, "uint8": uint8,
           "bool": bool_, "uint16": uint16, "uint32": uint32, "uint64": uint64}

# The dtypes a Tensor may hold: PyTorch's real ones numpy has. uint16, uint32 and uint64 are
# what torch 2.13 calls "barely supported": they are made, converted, moved, indexed and
# compared for equality, and a few ops compute on them (core/dtypes.py's `UNSIGNED_OPS`); they
# promote only with floats; every other op refuses them by name, as torch does
# (`refuse_unsigned`, before it computes).
# Anything else (complex, bfloat16, longdouble, strings) is refused at the boundary (Tensor(),
# dtype= arguments, .to()), so it cannot fail later as a puzzling shape error.
SUPPORTED_DTYPES = (float32, float64, float16, int64, int32, int16, int8, uint8, bool_, uint16,
                    uint32, uint64)
_SUPPORTED = frozenset(SUPPORTED_DTYPES)
_SUPPORTED_NAMES = ", ".join(np.dtype(d).name for d in SUPPORTED_DTYPES)


def refuse_unsigned(op, *operands):
    """Raise torch's refusal when an operand (a tensor, an array or a dtype asked for) is uint16,
    uint32 or uint64: `op` has no kernel for them. One line naming the op and the dtype, raised
    before anything runs (Function.apply's check, core.dtypes.check_unsigned_op, says the same
    for the graph ops)."""
    for x in operands:
        dtype = getattr(x, "_data", x).dtype if isinstance(x, (TensorBase, np.ndarray)) else x
        if dtype in WIDE_UNSIGNED:
            raise NotImplementedError(
                f"{op}: not implemented for {dtype} tensors (as in torch, which runs few ops on "
                f"uint16, uint32 and uint64); convert first, e.g. x.long() or x.float()")


def _unsupported(dtype, where="Tensor"):
    dtype = np.dtype(dtype)
    hint = ""
    if dtype.kind == "u":
        hint = " (convert it first, e.g. .astype(np.int64))"
    elif dtype.kind == "f":
        hint = " (convert it first, e.g. .astype(np.float64))"
    return TypeError(f"{where + ': ' if where else ''}dtype {dtype} is not supported; use one of "
                     f"{_SUPPORTED_NAMES}{hint}")

# torch dtypes numpy has not: refused by name, with the reason
_NOT_IN_NUMPY = {
    "bfloat16": "numpy has no bfloat16 (tinygradx tensors are numpy arrays); use float32 "
                "(x.float()) or float16 (x.half())",
    "complex64": "tinygradx has no complex dtypes (its tensors are real)",
    "complex128": "tinygradx has no complex dtypes (its tensors are real)",
    "cfloat": "tinygradx has no complex dtypes (its tensors are real)",
    "cdouble": "tinygradx has no complex dtypes (its tensors are real)",
    "chalf": "tinygradx has no complex dtypes (its tensors are real)",
    "complex32": "tinygradx has no complex dtypes (its tensors are real)",
}


def as_dtype(dtype):
    """A numpy dtype from a dtype, a name ("float32", "long", ...) or None (stays None)."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        if dtype in _NOT_IN_NUMPY:
            raise TypeError(f"dtype {dtype} is not supported: {_NOT_IN_NUMPY[dtype]}")
        if dtype not in _DTYPES:
            raise TypeError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)}")
        return np.dtype(_DTYPES[dtype])
    try:
        out = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)}") from None
    if out.type not in _SUPPORTED:
        raise _unsupported(out, None)
    return out


class IntegerOverflowError(OverflowError, ValueError):
    """A Python number that the tensor's integer dtype cannot hold (torch raises too; numpy
    would wrap it around: 2**63 -> -2**63)."""


def _python_leaves(data):
    """The numbers of a number or of nested lists/tuples of them."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        else:
            yield x


def check_int_range(where, value, dtype):
    """Raise IntegerOverflowError when the Python number `value` does not fit integer `dtype`
    (torch's rule: an unsigned dtype also takes -max..-1, which wrap)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return                      # NaN/inf into an integer dtype: numpy's cast, as before
    info = np.iinfo(dtype)
    if dtype == np.uint64 and isinstance(value, (int, np.integer)) and value < 0:  # torch wraps
        # -1 into uint16 and uint32, but refuses it for uint64
        raise IntegerOverflowError(f"{where}: value {value} cannot be converted to uint64: it "
                                   f"is negative (as torch: can't convert negative int to "
                                   f"unsigned)")
    low = -int(info.max) if dtype.kind == "u" else int(info.min)
    if not low <= value <= int(info.max):
        raise IntegerOverflowError(
            f"{where}: value {value} cannot be converted to {dtype.name} without overflow "
            f"(its range is [{int(info.min)}, {int(info.max)}])")


def _big_ints(data, arr, dtype):
    """Python data holding ints beyond int64: numpy made it uint64, object or float64, and a
    cast to int64 would wrap (2**63 -> -2**63). Refused as torch refuses it when the tensor
    would be an integer one (no float among the data and no float dtype asked for); else the
    float64 array of the values."""
    leaves = list(_python_leaves(data))
    big = [v for v in leaves if isinstance(v, int) and not isinstance(v, bool)
           and not -2**63 <= v < 2**63]
    if not big:
        return arr
    floats = any(isinstance(v, float) for v in leaves)
    if (dtype is None and not floats) or (dtype is not None and dtype.kind in "iu"):
        check_int_range("tensor", big[0], np.int64 if dtype is None else dtype)
    if dtype == np.uint64 and not floats:      # 2**63 <= v < 2**64: exact, not via float64
        for v in leaves:
            check_int_range("tensor", v, dtype)
        return np.array(leaves[::-1], dtype=np.uint64).reshape(arr.shape)
    out = np.array([float(v) for v in leaves[::-1]], dtype=np.float64)
    return out.reshape(arr.shape)


def _check_int_dtype(arr, dtype):
    """Python numbers asked into an integer dtype that cannot hold them (300 into uint8)."""
    if dtype is None or dtype.kind not in "iu" or not arr.size or arr.dtype.kind not in "iuf":
        return
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    if finite.size:
        for v in (finite.min(), finite.max()):
            check_int_range("tensor", v.item(), dtype)


def to_array(data, dtype):
    """Python data gets PyTorch's defaults (float32, int64); numpy arrays keep their dtype."""
    if isinstance(data, TensorBase):
        data = data._data
    if isinstance(data, np.ndarray):
        arr = data
        if arr.dtype.type not in _SUPPORTED or not arr.dtype.isnative:
            arr = _check_array(arr, dtype)
    else:
        try:
            arr = np.asarray(data)
        except ValueError:
            raise ValueError(f"Tensor: cannot make a tensor from a ragged nested "
                             f"{type(data).__name__}: every row must have the same length"
                             ) from None
        if not isinstance(data, np.generic) and (arr.dtype.kind in "uO" or (
                arr.dtype.kind == "f" and arr.size and np.nanmax(np.abs(arr)) >= 2.0 ** 63)):
            arr = _big_ints(data, arr, dtype)
        if not isinstance(data, np.generic):
            _check_int_dtype(arr, dtype)
        if arr.dtype == np.float64 and dtype is None and not isinstance(data, np.generic):
            arr = arr.astype(np.float32)  # Python floats (no dtype asked); numpy float64 scalars
            # stay float64, and a dtype asked for is made from the exact values (float64 too)
        elif arr.dtype.kind in "iu" and arr.dtype != np.int64 and not isinstance(data, np.generic):
            arr = arr.astype(np.int64)
        elif arr.dtype.kind in "cmM":              # complex, datetime, timedelta
            raise _unsupported(arr.dtype)
        elif arr.dtype.kind not in "biuf":
            raise TypeError(f"Tensor: cannot make a tensor from {type(data).__name__} "
                            f"(numpy dtype {arr.dtype}); give numbers, nested lists or arrays")
        elif arr.dtype.type not in _SUPPORTED and dtype is None:
            raise _unsupported(arr.dtype)          # a numpy scalar: uint32, longdouble
    if dtype is not None and arr.dtype != dtype:
        arr = arr.astype(dtype)
    return arr


def _check_array(arr, dtype):
    """An array whose dtype is not a supported one (or is not in native byte order)."""
    if arr.dtype.kind not in "biuf":               # complex, object, str, bytes, datetime
        raise _unsupported(arr.dtype)
    if arr.dtype.type in _SUPPORTED:               # big-endian: the same values, native order
        return arr.astype(arr.dtype.newbyteorder("="))
    if dtype is None:                              # uint16/32/64, longdouble: say so
        raise _unsupported(arr.dtype)
    return arr                                     # converted to the dtype asked for


# ------------------------------------------------------------------------------------------
# torch.finfo / torch.iinfo and the default dtype
# ------------------------------------------------------------------------------------------

class finfo:  # lower case: torch's name
    """The limits of a floating-point dtype as Python floats, as torch.finfo(dtype): `bits`,
    `eps` (the gap above 1), `max`, `min`, `tiny` = `smallest_normal`, `resolution` and
    `dtype` (its name). finfo() is float32's, the default dtype."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                 "dtype")

    def __init__(self, type=None):
        dt = np.dtype(float32) if type is None else as_dtype(type)
        if dt.kind != "f":
            raise TypeError(f"finfo: needs a floating-point dtype, got {dt} (tgx.iinfo gives "
                            f"the limits of an integer dtype)")
        info = np.finfo(dt)
        self.bits, self.dtype = int(info.bits), dt.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # lower case: torch's name
    """The limits of an integer dtype as Python ints, as torch.iinfo(dtype): `bits`, `min`,
    `max` and `dtype` (its name). bool is refused, as in torch."""

    __slots__ = ("bits", "min", "max", "dtype")

    def __init__(self, type):
        dt = as_dtype(type)
        if dt is None or dt.kind not in "iu":
            raise TypeError(f"iinfo: needs an integer dtype, got {dt} (tgx.finfo gives the "
                            f"limits of a floating-point dtype)")
        info = np.iinfo(dt)
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), \
            int(info.max), dt.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def get_default_dtype():
    """float32: the dtype of Python floats, of float constructors without dtype= and of the
    float results of integer inputs (torch's default)."""
    return float32


def set_default_dtype(d):
    """Accepts float32, the default, and refuses the rest: tinygradx's default dtype is fixed
    (see the message for what to write instead)."""
    dt = as_dtype(d)
    if dt is None or dt.kind != "f":
        raise TypeError(f"set_default_dtype: only a floating-point dtype can be the default, "
                        f"got {d!r}")
    if dt != float32:
        raise NotImplementedError(
            f"set_default_dtype({dt.name}): tinygradx's default dtype is always float32 (Python "
            f"floats, constructors, layers' parameters and the float results of integer "
            f"inputs); ask for {dt.name} where it is needed: dtype=tgx.{dt.name} in "
            f"constructors, x.to(tgx.{dt.name}), model.to(tgx.{dt.name})")
