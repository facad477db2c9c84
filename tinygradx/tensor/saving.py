"""torch.save / torch.load without pickle: `tgx.save(obj, path)` and `tgx.load(path)`.

What can be saved is data, not code: Tensors, numpy arrays, Python numbers, strings, None,
and dicts, lists and tuples of them, nested (a state dict, `{"model": model.state_dict(),
"optimizer": opt.state_dict(), "step": 100}`). The file is a tinygradx checkpoint (io.py: an
`.npz` archive, written atomically): every Tensor and array is one entry, and the structure
around them is the checkpoint's JSON metadata, each leaf in place as `{"tensor": "t3"}`. So
loading never runs code, and anything else (a Module, a function, a class instance) is
refused before the disk is touched, with a message that names where in `obj` it sits.

`load` gives back the same structure: Tensors as Tensors (with their requires_grad flag),
arrays as arrays, tuples as tuples, dict keys with their types (str, int, float, bool, None).
"""
from __future__ import annotations

import math
import os

import numpy as np

from .. import io
from .devices import device as _device
from . import Tensor

_KEY = "torch.save"        # the checkpoint metadata entry that holds the structure
_KEY_TYPES = (str, int, float, bool, type(None))


def _refuse(path, value):
    return TypeError(
        f"save: cannot save {path} of type {type(value).__name__}: tinygradx saves Tensors, "
        f"arrays, numbers, strings, None and dicts/lists/tuples of them, without pickle "
        f"(save a module's state_dict(), not the module)")


def _encode(value, path, arrays):
    """The JSON form of value; its Tensors and arrays go into `arrays`."""
    if isinstance(value, (Tensor, np.ndarray)):
        name = f"t{len(arrays)}"
        is_tensor = isinstance(value, Tensor)
        arrays[name] = np.ascontiguousarray(value._data if is_tensor else value)
        if arrays[name].dtype.kind not in "biuf":
            raise _refuse(path, value)
        if not is_tensor:
            return {"array": name}
        return {"tensor": name, "requires_grad": bool(value.requires_grad)}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, f"{path}[{i}]", arrays) for i, v in enumerate(value)]
        return {"tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            if not isinstance(k, _KEY_TYPES):
                raise _refuse(f"the key {k!r} of {path}", k)
            if isinstance(k, float) and not math.isfinite(k):
                raise TypeError(f"save: the key {k!r} of {path} is not a finite number")
            pairs.append([k, _encode(v, f"{path}[{k!r}]", arrays)])
        return {"dict": pairs}
    raise _refuse(path, value)


def _decode(value, arrays):
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        return Tensor(arrays[value["tensor"]], requires_grad=value["requires_grad"])
    if "array" in value:
        return arrays[value["array"]]
    if "float" in value:
        return float(value["float"])
    if "tuple" in value:
        return tuple(_decode(v, arrays) for v in value["tuple"])
    return {k: _decode(v, arrays) for k, v in value["dict"]}


def _path(name, f):
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path (str or os.PathLike), got "
                        f"{type(f).__name__}; tinygradx writes files atomically and reads "
                        f"no file objects")
    return f


def save(obj, f):
    """Write obj (Tensors, arrays, numbers, strings, None, and dicts/lists/tuples of them) to
    the path f, atomically and without pickle; anything else raises TypeError naming it."""
    arrays = {}
    structure = _encode(obj, "obj", arrays)
    io.save_checkpoint(_path("save", f), arrays, {_KEY: structure})


def load(f, map_location=None, weights_only=None, **kwargs):
    """Read what `save` wrote: the same structure, Tensors as Tensors. map_location may name
    the CPU (tinygradx's one device); weights_only is accepted (nothing is ever unpickled)."""
    if kwargs:
        raise TypeError(f"load: unexpected arguments {sorted(kwargs)}")
    if map_location is not None and not callable(map_location):
        _device(map_location)                   # "cpu" passes; "cuda" says there is no GPU
    path = _path("load", f)
    try:
        arrays, meta = io.load_checkpoint(path)
    except io.CheckpointError as err:
        raise io.CheckpointError(f"load: {err} (tinygradx reads only files its own save "
                                 f"wrote; PyTorch's pickle files are refused)") from None
    if _KEY not in meta:
        raise io.CheckpointError(f"load: {os.fspath(path)!r} is a tinygradx checkpoint, not "
                                 f"a file save wrote; read it with tinygradx.io.load_checkpoint")
    return _decode(meta[_KEY], arrays)
