"""The methods of Tensor that convert it or make tensors like it: `ConvertMethods`, a mixin
Tensor inherits (next to shape_methods.ShapeMethods).

Device (`x.device`, `x.to("cpu")`, `x.cpu()`: tinygradx has one device, the CPU; see
devices.py), dtype conversion (`to`, `float()`, `long()`, `type_as`, ...), layout
(`contiguous`, `is_contiguous`, `view_as`) and the `new_*` constructors that take the dtype
of the tensor they are called on; numpy functions on a Tensor (`__array_function__`: values,
no graph) and `format(t, spec)` of a 0-d tensor. Torch's names, argument names and semantics.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..core.tensor_base import TensorBase
from ..ops import movement
from .devices import CPU, check_device, is_device
from ..ops.dtypes import as_dtype, bool_, float16, float32, float64, int32, int64, to_array


def _sizes(name, args):
    """new_zeros(2, 3) and new_zeros((2, 3)) alike, as a tuple of non-negative ints."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise TypeError(f"{name}: size must be non-negative ints, got {args!r}")
    return tuple(int(s) for s in args)


def parse_to(args, dtype, dev):
    """(dtype or None) from to()'s positional forms: to(dtype), to(device), to(device,
    dtype), to(other) (other's dtype; its device is the CPU too)."""
    if len(args) > 2:
        raise TypeError(f"to: expected at most 2 positional arguments (device, dtype), got "
                        f"{len(args)}")
    for a in args:
        if isinstance(a, TensorBase):
            if len(args) != 1 or dtype is not None:
                raise TypeError("to(other): give the other tensor alone")
            dtype = a.dtype
        elif is_device(a):
            if dev is not None:
                raise TypeError("to: the device is given twice")
            dev = a
        else:
            if dtype is not None:
                raise TypeError("to: the dtype is given twice")
            dtype = a
    check_device("to", dev)
    return as_dtype(dtype)


_METADATA = {np.shape, np.ndim, np.size}     # numpy functions of a Tensor's shape alone


def _arrays(value, raw=False):
    """Tensors inside (nested tuples, lists, dicts of) value as numpy arrays, via __array__
    (raw: the arrays themselves, whatever requires_grad says)."""
    if isinstance(value, TensorBase):
        return value._data if raw else value.__array__()
    if isinstance(value, (tuple, list)):
        return type(value)(_arrays(v, raw) for v in value)
    if isinstance(value, dict):
        return {k: _arrays(v, raw) for k, v in value.items()}
    return value


class ConvertMethods:
    """Device, dtype and layout conversion and the new_* constructors; numpy's protocol and
    formatting; mixed into Tensor."""

    __slots__ = ()

    # -- numpy and Python's number protocols ------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        """NumPy's protocol for np.mean(t), np.max(t, axis=0), np.concatenate([t, a]): numpy
        computes on the arrays (values, no graph). Operators (`arr + t`, `np.float32(2) * t`)
        are not numpy functions: they stay Tensor ops with a graph (__array_priority__)."""
        raw = func in _METADATA       # np.shape(t), np.ndim(t): no values read, grad or not
        return func(*_arrays(args, raw), **_arrays(kwargs, raw))

    def __format__(self, spec):
        """f"{loss:.4f}": a 0-d tensor formats its value, as PyTorch; others only as str()."""
        if self._data.ndim == 0:
            return self._data.item().__format__(spec)
        if spec:
            raise TypeError(f"format spec {spec!r} needs a 0-d tensor, this one has shape "
                            f"{self.shape}; format t.item() or t.tolist() instead")
        return str(self)

    def __round__(self, ndigits=None):
        raise TypeError("round() of a Tensor is refused, as PyTorch refuses it: use "
                        "round(t.item(), n) for a number or t.round() for a tensor")

    # -- device -----------------------------------------------------------------------------
    @property
    def device(self):
        """The CPU, the one device of tinygradx (`tgx.device("cpu")`)."""
        return CPU

    @property
    def is_cuda(self):
        return False

    def cpu(self):
        """The tensor itself: it already is on the CPU (as torch's cpu() of a CPU tensor)."""
        return self

    def cuda(self, device=None, non_blocking=False):
        raise RuntimeError("Tensor.cuda: tinygradx runs on the CPU only; use .cpu() or "
                           ".to('cpu') (torch.cuda.is_available() is False here)")

    # -- dtype ------------------------------------------------------------------------------
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
        """torch's Tensor.to: to(dtype), to(device), to(device, dtype), to(other), with
        dtype= / device= / copy= keywords. The device must be the CPU; the tensor itself
        comes back when nothing changes (copy=True forces a new tensor). A float -> float
        cast is differentiable; to an int or bool dtype it is cut from the graph."""
        dtype = parse_to(args, dtype, device)
        if dtype is None or dtype == self.dtype:
            return self.clone() if copy else self
        if dtype.kind != "f" or self.dtype.kind != "f":
            return self._op_class._from_op(self._data.astype(dtype), None)
        return ops.Cast.apply(self, dtype=dtype)

    def type(self, dtype=None, non_blocking=False):
        """type(dtype) converts as to(dtype) (also type(tgx.LongTensor)); type() names the
        dtype, e.g. "tinygradx.FloatTensor"."""
        if dtype is None:
            return f"tinygradx.{_TYPE_NAMES.get(self.dtype.type, str(self.dtype))}Tensor"
        typed = getattr(dtype, "dtype", None)          # tgx.LongTensor and friends carry one
        return self.to(typed if isinstance(typed, np.dtype) else dtype)

    def type_as(self, other):
        """self converted to other's dtype (to(other.dtype))."""
        return self.to(other.dtype)

    def double(self):
        return self.to(float64)

    def float(self):
        return self.to(float32)

    def half(self):
        """float16: supported (numpy computes it; slowly, and with float16's precision)."""
        return self.to(float16)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(int32)

    def bool(self):
        return self.to(bool_)

    # -- layout -----------------------------------------------------------------------------
    def is_contiguous(self, memory_format=None):
        """True when the elements lie in row-major order with no gaps (a transpose, a
        strided slice or an expand() is not), as in PyTorch."""
        return bool(self._data.flags.c_contiguous)

    def contiguous(self, memory_format=None):
        """self when it already is contiguous, else a row-major copy (differentiable), as in
        PyTorch. No op needs it (numpy reads any layout), but a copy keeps torch's aliasing:
        writing into the result never changes the tensor it came from."""
        if self._data.flags.c_contiguous:
            return self
        return movement.Contiguous.apply(self)

    def view_as(self, other):
        """self.view(other.shape)."""
        return self.view(other.shape)

    # -- new tensors of this tensor's dtype ----------------------------------------------------
    def _new(self, name, array, dtype, dev, requires_grad):
        check_device(name, dev)
        return self._op_class(array, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of `size`, with self's dtype unless dtype= says otherwise."""
        return self._new("new_zeros", np.zeros(_sizes("new_zeros", size),
                                               as_dtype(dtype) or self.dtype),
                         dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of `size`, with self's dtype unless dtype= says otherwise."""
        return self._new("new_ones", np.ones(_sizes("new_ones", size),
                                             as_dtype(dtype) or self.dtype),
                         dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """An uninitialised tensor of `size` (self's dtype unless dtype= says otherwise)."""
        return self._new("new_empty", np.empty(_sizes("new_empty", size),
                                               as_dtype(dtype) or self.dtype),
                         dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """fill_value everywhere, with self's dtype unless dtype= says otherwise (a float
        value into an integer dtype is truncated, as in PyTorch)."""
        return self._new("new_full", np.full(_sizes("new_full", (size,)),
                                             fill_value, as_dtype(dtype) or self.dtype),
                         dtype, device, requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A copy of data with self's dtype (not data's) unless dtype= says otherwise."""
        arr = np.array(to_array(data, None), dtype=as_dtype(dtype) or self.dtype, copy=True)
        return self._new("new_tensor", arr, dtype, device, requires_grad)


_TYPE_NAMES = {float32: "Float", float64: "Double", float16: "Half", int64: "Long",
               int32: "Int", np.int16: "Short", np.int8: "Char", np.uint8: "Byte",
               bool_: "Bool"}
