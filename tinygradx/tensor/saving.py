"""torch.save / torch.load: `tgx.save(obj, f)` and `tgx.load(f, map_location=None)`.

What `save` writes is data, not code: Tensors, numpy arrays, Python numbers, strings, bytes,
None, and dicts, OrderedDicts, lists, tuples and sets of them, nested to any depth (a state
dict, `{"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 100}`). The file is
a tinygradx checkpoint (io.py: an `.npz` archive, written atomically to a path): the arrays are
its entries and the structure around them its JSON metadata (saving_format.py). Anything else
(a Module, a function, a class instance, a named tuple) is refused before the disk is touched,
with a message that names where in `obj` it sits. An object saved twice (one Tensor under two
keys) loads as one object, and Tensors that shared memory share it again, as with torch.

`load` reads three kinds of file, and trusts none of them:

* tinygradx's own (what `save` writes): the structure is checked node by node; a tensor it
  names that the file lacks, a shape that does not fit its storage, a damaged or truncated
  archive, any nesting depth: each one line naming the file and what is wrong;
* PyTorch's `torch.save` files, zip or the older stream (a learner's `ckpt.pt`): read by
  `tinygradx.ptfile`, a restricted unpickler with the restriction of torch's
  `weights_only=True` (tensors, storages, containers, numbers, strings), which refuses any
  other global by name without importing or calling it, whatever `weights_only` says;
* anything else is refused, saying what the file is.

`map_location` takes every form torch's does, for the CPU: None, a string or a device
("cpu"), a dict mapping saved locations to new ones ({"cuda:0": "cpu"}), or a function of
(storage, location) returning a storage or None; a storage that would land on a GPU is refused
with a message that names map_location.
"""
from __future__ import annotations

import os
import pickle
import zipfile

from .. import io, ptfile
from . import Tensor
from .devices import device
from . import saving_format as fmt

_GPU_TYPES = ("cuda", "mps", "xpu", "xla", "hip", "ipu", "hpu", "mtia", "maia", "vulkan",
              "privateuseone")


def _name(f):
    return repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file object"


def save(obj, f, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Write obj (see the module docstring for what it may hold) to f, a path (atomically)
    or a binary file object, without pickle; anything else raises TypeError naming it.
    pickle_module and pickle_protocol are accepted for torch's signature and unused (nothing
    is pickled)."""
    if pickle_module not in (None, pickle):
        raise TypeError(f"save: pickle_module must be None or pickle (tinygradx pickles "
                        f"nothing), got {pickle_module!r}")
    try:
        structure, arrays = fmt.encode(obj)
    except fmt.Refused as e:
        raise TypeError(str(e)) from None
    meta = {fmt.KEY: structure}
    if isinstance(f, (str, os.PathLike)):
        io.save_checkpoint(f, arrays, meta)
    elif hasattr(f, "write"):
        io.write_checkpoint(f, arrays, meta)
    else:
        raise TypeError(f"save: f must be a file path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")


# -- map_location -------------------------------------------------------------------------------

class Storage:
    """What a map_location function is given: one storage of the file, on the CPU. Returning
    it (or `storage.cpu()`), or None, keeps it here; anything that would move it off the CPU
    is refused, since tinygradx has no other device."""

    def __init__(self, array):
        self.array = array
        self.device = device("cpu")
        self.dtype = array.dtype.type

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise RuntimeError("load: map_location moved a storage to CUDA; tinygradx computes on "
                           "the CPU: map to 'cpu' (map_location='cpu')")

    def to(self, where, *args, **kwargs):
        if str(where).partition(":")[0] == "cpu":
            return self
        raise RuntimeError(f"load: map_location moved a storage to {str(where)!r}; tinygradx "
                           f"computes on the CPU: map to 'cpu'")

    def size(self):
        return self.array.size

    def __len__(self):
        return self.array.size

    def nbytes(self):
        return self.array.nbytes


def _place(location, array, named_by):
    """array, restored at `location` (a torch location tag), or the refusal naming what put
    it there (the file, or map_location)."""
    if location == "cpu":
        return array
    kind = location.partition(":")[0] if isinstance(location, str) else None
    if kind in _GPU_TYPES:
        fix = "pass map_location='cpu'" if named_by == "the file" else "map it to 'cpu'"
        raise RuntimeError(f"load: {named_by} puts a storage on {location!r}, and tinygradx "
                           f"has no GPU: {fix}")
    if kind == "meta":
        raise RuntimeError(f"load: {named_by} puts a storage on 'meta' (shapes without "
                           f"data), which tinygradx does not hold: map it to 'cpu'")
    raise RuntimeError(f"load: {named_by} names the location {location!r:.40}, which is not "
                       f"a device tinygradx can restore a storage to (only 'cpu')")


def restorer(map_location):
    """restore(location, array) -> array for a map_location in any of torch's forms. As in
    torch, map_location is only consulted when a storage is restored (a file without tensors
    loads whatever it says); a form torch does not take is then one line naming it."""
    if map_location is None:
        return lambda loc, arr: _place(loc, arr, "the file")
    if isinstance(map_location, device):
        return lambda loc, arr: arr                  # tinygradx's device is the CPU
    if isinstance(map_location, str):
        return lambda loc, arr: _place(map_location, arr, f"map_location={map_location!r}")
    if isinstance(map_location, dict):
        def restore(loc, arr):
            target = map_location.get(loc, loc)
            if not isinstance(target, str):
                raise TypeError(f"load: map_location's dict must map location strings to "
                                f"location strings ({{'cuda:0': 'cpu'}}), got {loc!r}: "
                                f"{target!r}")
            return _place(target, arr, "map_location" if loc in map_location else "the file")
        return restore
    if callable(map_location):
        def restore(loc, arr):
            out = map_location(Storage(arr), loc)
            if out is None:
                return _place(loc, arr, "the file")
            if not isinstance(out, Storage):
                raise TypeError(f"load: map_location returned {out!r:.30} (of type "
                                f"{type(out).__name__}), not the storage it was given, or "
                                f"None")
            return out.array
        return restore

    def refuse(loc, arr):
        raise TypeError(f"load: map_location must be None, a str, a torch.device, a dict or a "
                        f"function (storage, location), got {type(map_location).__name__}")
    return refuse


# -- load ------------------------------------------------------------------------------------------

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read what `save` or PyTorch's `torch.save` wrote (see the module docstring): the same
    structure, Tensors as Tensors. Every problem with the file is one line naming it."""
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"load: unexpected arguments {sorted(pickle_load_args)}")
    if pickle_module not in (None, pickle):
        raise TypeError(f"load: pickle_module must be None or pickle; tinygradx reads "
                        f"checkpoints with its own restricted reader, got {pickle_module!r}")
    if weights_only not in (None, True, False) or mmap not in (None, True, False):
        raise TypeError("load: weights_only and mmap must be None, True or False")
    restore = restorer(map_location)
    name = _name(f)
    source = f
    if isinstance(f, (str, os.PathLike)):
        source = os.fspath(f)
        if not os.path.isfile(source):
            raise io.CheckpointError(f"load: {name} " + (
                "is a directory, not a file" if os.path.isdir(source) else "does not exist"))
    elif not (hasattr(f, "read") and hasattr(f, "seek")):
        raise TypeError(f"load: f must be a file path (str or os.PathLike) or a binary file "
                        f"object with read and seek, got {type(f).__name__}")
    head = _head(source)
    kind = _kind(source, head)
    if kind == "torch":
        try:
            return ptfile.read(source, tensor=_tensor, parameter=_parameter, device=_device,
                               restore=restore, encoding=encoding)
        except ptfile.RefusedGlobal as e:
            also = " (weights_only=False changes nothing: tinygradx never runs code from a " \
                   "file)" if weights_only is False else ""
            raise ptfile.RefusedGlobal(f"load: {e}{also}") from None
        except ptfile.TorchFileError as e:
            raise ptfile.TorchFileError(f"load: {e}") from None
    if kind != "tinygradx":
        raise io.CheckpointError(f"load: {name} is not a file that save or torch.save writes: "
                                 f"{kind}")
    try:
        arrays, meta = io.load_checkpoint(source)
    except io.CheckpointError as err:
        raise io.CheckpointError(f"load: {err}") from None
    try:
        if fmt.KEY in meta:
            return fmt.decode(meta[fmt.KEY], arrays, restore)
        if fmt.KEY_V1 in meta:
            return fmt.decode(fmt.from_v1(meta[fmt.KEY_V1]), arrays, restore)
    except fmt.Damaged as e:
        raise io.CheckpointError(f"load: {name} is damaged: {e}") from None
    raise io.CheckpointError(f"load: {name} is a tinygradx checkpoint, not a file save "
                             f"wrote (it has no saved structure); read it with "
                             f"tinygradx.io.load_checkpoint")


def _head(source):
    try:
        if isinstance(source, str):
            with open(source, "rb") as fh:
                return fh.read(8)
        head = source.read(8)
        source.seek(0)
        return head
    except OSError as e:
        raise io.CheckpointError(f"load: cannot read {_name(source)}: {e}") from None


def _kind(source, head):
    """'tinygradx', 'torch', or what else the file is (for the refusal)."""
    if not head:
        return "the file is empty"
    kind = ptfile.kind_of(head)
    if kind == "legacy":
        return "torch"
    if kind != "zip" and head.startswith(b"\x80"):
        return "it is a pickle but not torch.save's (tinygradx reads torch.save's files and " \
               "its own, never other pickles)"
    if kind != "zip":
        return f"it starts with the bytes {head[:8]!r}, which neither writes"
    try:
        with zipfile.ZipFile(source) as z:
            names = z.namelist()
    except io.ZIP_ERRORS as e:
        said = " ".join(str(e).split())                   # one line, whatever zipfile wrote
        raise io.CheckpointError(f"load: {_name(source)} is a damaged or truncated zip "
                                 f"archive ({type(e).__name__}: {said})") from None
    finally:
        if not isinstance(source, str):
            source.seek(0)
    if io.META_KEY + ".npy" in names:
        return "tinygradx"
    if any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names):
        return "torch"
    return "it is a zip archive that is neither a tinygradx checkpoint nor torch.save's"


def _tensor(array, requires_grad):
    """A tensor of a PyTorch file, on its storage's memory (bfloat16 widened to float32)."""
    if array.dtype.name not in fmt.TENSOR_DTYPES:
        raise ptfile.TorchFileError(f"it holds a tensor of dtype {array.dtype}, which "
                                    f"tinygradx does not hold")
    if requires_grad and array.dtype.kind != "f":
        raise ptfile.TorchFileError(f"it says a {array.dtype} tensor requires grad")
    return Tensor(array, requires_grad=requires_grad)


def _device(text):
    """A torch.device the file holds as a value: tinygradx's device for the CPU; another
    device's name stays its string (tinygradx has no such device to make)."""
    return device(text) if text.partition(":")[0] == "cpu" else text


def _parameter(t, requires_grad):
    """A saved nn.Parameter: a Tensor with its requires_grad (tinygradx's Parameter is nn's,
    a floor above; a state dict holds plain tensors anyway)."""
    t.requires_grad_(requires_grad)
    return t


__all__ = ["save", "load", "Storage", "restorer"]
