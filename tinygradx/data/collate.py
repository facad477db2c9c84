"""Collation, as torch.utils.data's: a list of samples -> one batch (`default_collate`), and
one sample's numpy parts made Tensors (`default_convert`, what a DataLoader with
batch_size=None uses).

The rules are decided by the type of the batch's first sample (torch's), checked against
torch itself in tests/data/test_data_oracle.py:

    Tensor             the samples stacked along a new first dim (mixed dtypes promote:
                       int64 with float32 gives float32)
    numpy array        each made a Tensor, then stacked (string and object arrays refused)
    numpy scalar       one Tensor of the batch, its dtype inferred as torch.tensor infers it
    float              one float64 Tensor
    int (or bool)      one Tensor inferred as torch.tensor([...]) infers it: [1, 2] int64,
                       [1, 2.5] float32, [True, 2] int64, [True, False] bool
    str, bytes         the batch as it is (a list)
    dict (Mapping)     a dict of the same type, each key's values collated
    named tuple        one of the same type, field by field
    tuple, list, ...   a list, position by position (every sample of one length)

`collate(batch, collate_fn_map=...)` takes your own rules first (a type, or a tuple of types,
to a function of (batch, *, collate_fn_map)), as torch's does; `default_collate_fn_map` holds
the rules above for Tensors, arrays, numbers and strings.
"""
from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ..ops.dtypes import SUPPORTED_DTYPES, promote_types
from ..tensor import Tensor
from ..tensor.creation import stack

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_SUPPORTED = frozenset(np.dtype(d) for d in SUPPORTED_DTYPES)
_INT64_RANGE = (-2 ** 63, 2 ** 63 - 1)
_REFUSED_NP = "SaUOVMm"     # strings, objects, void records, datetimes: no tensor dtype


def _found(what):
    return TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                     f"dicts or lists; found {what} (pass collate_fn= to batch anything else)")


def _checked(dtype, where):
    """dtype if a Tensor may hold it, else a one-line TypeError naming it."""
    dtype = np.dtype(dtype)
    if dtype not in _SUPPORTED:
        names = ", ".join(np.dtype(d).name for d in SUPPORTED_DTYPES)
        raise TypeError(f"{where}: cannot make a tensor of dtype {dtype} (tinygradx holds "
                        f"{names}); convert it in the dataset or pass collate_fn=")
    return dtype


# -- the dtype torch.tensor([...]) infers for a list of numbers --------------------------------

def _short(x):
    """x's repr on one short line, for a message."""
    text = " ".join(repr(x).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _infer_one(x, where, i):
    """The dtype torch.tensor([...]) infers from one element: a numpy scalar, array or a
    tensor its own (whatever its size: the filling refuses a size that does not fit), Python
    bool -> bool, int -> int64, float -> float32 (the default float), a list or tuple the
    promotion of its items; text and objects refused as torch refuses them (TypeError for
    text, RuntimeError for what it cannot infer from)."""
    if isinstance(x, (np.bool_, np.number, np.ndarray, Tensor)):
        return np.dtype(x.dtype)
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return np.dtype(np.int64)
    if isinstance(x, float):
        return np.dtype(np.float32)
    if isinstance(x, complex):
        return np.dtype(np.complex64)             # refused by _checked: no complex tensors
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{where}: element {i} of the batch is {type(x).__name__} "
                        f"{_short(x)}, in a batch of numbers")
    if isinstance(x, (list, tuple)):
        found = None
        for item in x:
            d = _infer_one(item, where, i)
            found = d if found is None or d is None else promote_types(found, d)
        return found
    raise RuntimeError(f"{where}: could not infer a dtype from element {i} of the batch, "
                       f"{type(x).__name__} {_short(x)}")


def _fill_one(x, dtype, where, i):
    """Element i as a Python number for a tensor of dtype, or the error torch gives when it
    writes it there (checked in the batch's order, as torch fills it)."""
    if isinstance(x, Tensor):
        if x.numel() != 1:
            # torch reads it as an index (TypeError) where both are integers, else as a
            # float (ValueError)
            error = TypeError if dtype.kind in "biu" and np.dtype(x.dtype).kind in "biu" \
                else ValueError
            raise error(f"{where}: element {i} of the batch is a tensor of shape "
                        f"{tuple(x.shape)} where the batch holds numbers (only one-element "
                        f"tensors convert to a number)")
        x = x.item()
    if isinstance(x, np.ndarray) and x.ndim == 0:
        if x.dtype == np.bool_ and dtype.kind in "biu":
            # torch reads a 0-d array as an index here, and numpy refuses a bool one
            raise TypeError(f"{where}: element {i} is a 0-d numpy bool array in a batch of "
                            f"{dtype}; torch cannot convert it either")
        x = x[()]
    if isinstance(x, (np.bool_, np.number)):
        if dtype.kind in "iu" and isinstance(x, np.bool_):
            # torch converts a numpy bool only to bool or float: not to an integer
            raise TypeError(f"{where}: element {i} is numpy.bool_ {x!r} in a batch of "
                            f"integers; torch cannot make it an integer either")
        return x.item()
    if isinstance(x, (bool, int, float)):
        if isinstance(x, int) and not isinstance(x, bool):
            if dtype.kind in "iu" and not _INT64_RANGE[0] <= x <= _INT64_RANGE[1]:
                raise ValueError(f"{where}: element {i}, {x}, does not fit an int64 tensor")
            if dtype.kind == "f":
                try:
                    float(x)
                except OverflowError:
                    raise OverflowError(f"{where}: element {i} is an int too large for a "
                                        f"float tensor") from None
        return x
    raise TypeError(f"{where}: element {i} of the batch is {type(x).__name__} {_short(x)} "
                    f"where the batch holds numbers (must be a real number)")


def _numbers(batch, where, dtype=None):
    """One Tensor of the numbers in batch, of dtype or else of the dtype torch infers."""
    if dtype is None:
        for i, x in enumerate(batch):
            d = _infer_one(x, where, i)
            if d is not None:
                dtype = d if dtype is None else promote_types(dtype, d)
    dtype = _checked(dtype if dtype is not None else np.float32, where)
    values = [_fill_one(x, dtype, where, i) for i, x in enumerate(batch)]
    with np.errstate(over="ignore"):             # float32's overflow is inf, as in torch
        return Tensor(np.array(values, dtype=dtype))


# -- the rules for one type each (torch's default_collate_fn_map) -------------------------------

def _collate_tensors(batch, *, collate_fn_map=None):
    for i, x in enumerate(batch):
        if not isinstance(x, Tensor):
            raise TypeError(f"default_collate: expected Tensor as element {i} of the batch, "
                            f"but got {type(x).__name__}")
    shapes = [tuple(x.shape) for x in batch]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, "
                               f"but got {list(shapes[0])} at entry 0 and {list(s)} at entry "
                               f"{i}")
    dtype = batch[0].dtype
    for x in batch[1:]:
        dtype = promote_types(np.dtype(dtype), np.dtype(x.dtype))
    return stack([x if x.dtype == dtype else x.to(dtype) for x in batch])


def _collate_arrays(batch, *, collate_fn_map=None):
    first = batch[0]
    if first.dtype.kind in _REFUSED_NP:
        raise _found(f"a numpy array of dtype {first.dtype}")
    tensors = []
    for i, b in enumerate(batch):             # each as torch.as_tensor(b), then stacked
        if isinstance(b, Tensor):
            tensors.append(b)
        elif isinstance(b, np.ndarray):
            if b.dtype.kind in _REFUSED_NP:
                raise TypeError(f"default_collate: element {i} of the batch is an array of "
                                f"dtype {b.dtype}, which no tensor holds")
            tensors.append(Tensor(b.astype(_checked(b.dtype, "default_collate"), copy=False)))
        else:
            tensors.append(_as_tensor(b, i))
    return collate(tensors, collate_fn_map=collate_fn_map)


def _as_tensor(data, i):
    """torch.as_tensor(data) of a number or nested lists of numbers: torch's dtype inference
    over every number in it."""
    leaves, todo = [], [data]
    while todo:
        x = todo.pop()
        if isinstance(x, (list, tuple)):
            todo.extend(x)
        else:
            leaves.append(x)
    out = _numbers(leaves, "default_collate") if leaves else None
    dtype = out.dtype if out is not None else np.float32
    try:
        return Tensor(np.array(data, dtype=dtype))
    except ValueError as e:
        raise ValueError(f"default_collate: element {i} of the batch is a ragged nesting of "
                         f"lists ({e})") from None


def _collate_numpy_scalars(batch, *, collate_fn_map=None):
    return _numbers(batch, "default_collate")


def _collate_floats(batch, *, collate_fn_map=None):
    return _numbers(batch, "default_collate", np.float64)


def _collate_ints(batch, *, collate_fn_map=None):
    return _numbers(batch, "default_collate")


def _collate_strings(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: _collate_tensors,
    np.ndarray: _collate_arrays,
    (np.bool_, np.number, np.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _collate_strings,
    bytes: _collate_strings,
}


# -- the walk over containers --------------------------------------------------------------------

def collate(batch, *, collate_fn_map=None):
    """Collate batch (a sequence of samples) by the rule for its first sample's type: first
    collate_fn_map's (its exact type, then the first key it is an instance of), then the
    containers' (mappings, named tuples, sequences), else a TypeError naming the type."""
    if len(batch) == 0:
        raise IndexError("default_collate: the batch is empty (no samples to collate)")
    elem = batch[0]
    kind = type(elem)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(elem, key):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        values = {}
        for key in elem:
            column = []
            for i, d in enumerate(batch):
                if not isinstance(d, collections.abc.Mapping) or key not in d:
                    raise KeyError(f"default_collate: sample {i} of the batch has no key "
                                   f"{key!r}, which sample 0 has")
                column.append(d[key])
            values[key] = collate(column, collate_fn_map=collate_fn_map)
        return _same_mapping(elem, values)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):              # a named tuple
        return kind(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch, strict=False)))
    if isinstance(elem, collections.abc.Sequence):
        for i, b in enumerate(batch):
            if not hasattr(b, "__len__") or len(b) != len(elem):
                raise RuntimeError(f"default_collate: each element in list of batch should be "
                                   f"of equal size (sample 0 has {len(elem)} items, sample {i} "
                                   f"{len(b) if hasattr(b, '__len__') else 'no length'})")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return columns                  # a tuple's fields come back as a list (torch)
        return _same_sequence(elem, columns)
    raise _found(kind.__name__)


def _same_mapping(elem, values):
    """values in a mapping of elem's type (a copy of it, for a mutable one), else a dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(values)
            return out
        return type(elem)(values)
    except TypeError:
        return values


def _same_sequence(elem, columns):
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            out = copy.copy(elem)
            for i, c in enumerate(columns):
                out[i] = c
            return out
        return type(elem)(columns)
    except TypeError:
        return columns


def default_collate(batch):
    """torch's default_collate: the samples of batch as one batch (see the module docstring
    for the rules); what a DataLoader with a batch_size calls."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """torch's default_convert: numpy arrays and numpy scalars in data made Tensors (sharing
    an array's memory), inside mappings, named tuples and sequences too (a tuple becomes a
    list); anything else as it is. What a DataLoader with batch_size=None calls."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in _REFUSED_NP:
            return data
        _checked(data.dtype, "default_convert")
        return Tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return Tensor(np.asarray(data, dtype=_checked(data.dtype, "default_convert")))
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence(data, [default_convert(d) for d in data])
    return data
