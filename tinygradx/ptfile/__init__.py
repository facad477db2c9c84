"""PyTorch's checkpoint files (`torch.save`'s `.pt`), read without running them.

A `.pt` file is a pickle: a little program for Python's stack machine that, run by `pickle`,
may import and call any function it names (`os.system` as well as `torch._utils.
_rebuild_tensor_v2`). PyTorch's own `torch.load(weights_only=True)` therefore runs it in a
restricted machine that builds only tensors, storages, containers and numbers. This module is
such a machine, written for tinygradx from the format's description (this package: the
archives here, the machine's parts in machine.py, its opcodes in opcodes.py):

* the archive: torch.save's zip (`<name>/data.pkl`, the pickle; `<name>/data/<key>`, one raw
  storage each; `<name>/byteorder`), or the older non-zip stream (`_use_new_zipfile_
  serialization=False`: a magic number, a protocol number, system info, the pickle, the list
  of storage keys, then each storage's element count and bytes);
* the pickle: every opcode a data pickle uses (protocols 0 to 5) is interpreted here, one by
  one, on our own stack. A *global* (an opcode naming `module.name`) is never imported: it
  becomes a `_Global` marker, and only the names in `ALLOWED` stand for anything, each by a
  function of this module that checks its arguments: the tensor rebuilders torch's files name,
  the storage types (as dtypes), `collections.OrderedDict`/`Counter`, `builtins.set`/
  `bytearray`/`complex`, `_codecs.encode` (how protocol 2 writes bytes), `torch.Size`,
  `torch.device` and the dtype names. Any other global is refused by name the moment it is
  read ("... names the global os.system, which a checkpoint may not call"), before anything
  could call it;
* storages come by persistent id `('storage', <storage type>, key, location, numel)`: their
  bytes are read from the archive once, passed through `restore(location, array)` (what
  `map_location` makes of them), and every tensor on one storage is a numpy view of that one
  array, so tensors that shared memory when saved share it again.

    data = read("ckpt.pt")                  # tensors as numpy arrays
    data = read("ckpt.pt", tensor=make)     # make(array, requires_grad) builds each tensor

Every problem with a file (truncated, damaged, a storage missing, a refused global, a shape
that does not fit its storage) is one `TorchFileError` line naming the file and what is wrong;
a refused global is a `RefusedGlobal`, which is also a `pickle.UnpicklingError`, as torch's.
"""
from __future__ import annotations

import os
import struct
import zipfile
import zlib

import numpy as np

from ..io import ZIP_ERRORS
from . import opcodes
from .machine import ALLOWED, Fail, Reader, RefusedGlobal, Storage, TorchFileError

__all__ = ["TorchFileError", "RefusedGlobal", "ALLOWED", "read", "kind_of"]

# the old format's first pickle: this number (torch's magic), written as PROTO 2 + LONG1
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_ZIP = b"PK\x03\x04"
_MAX_EXPANSION = 1000       # a compressed storage record may not claim more than this ratio


def kind_of(head):
    """"zip" or "legacy" for the first bytes of a file that may be torch.save's, else None
    (an old-format file starts as a pickle of protocol 2 holding the magic number)."""
    if head.startswith(_ZIP):
        return "zip"
    if head[:3] == b"\x80\x02\x8a":
        return "legacy"
    return None


def _itemsize(dtype):
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def _decode(raw, dtype, little):
    """A storage's bytes as a writable flat array of its dtype, in this machine's byte order
    (bfloat16: its 16 bits are the top half of a float32, widened exactly)."""
    order = "<" if little else ">"
    if dtype == "bfloat16":
        bits = np.frombuffer(raw, dtype=order + "u2").astype(np.uint32)
        return (bits << 16).view(np.float32)
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder(order)).astype(dtype)


def _checked_restore(restore, location, array):
    out = restore(location, array)
    if out is not array:
        raise Fail(f"map_location gave another storage for location {location!r}; tinygradx "
                   f"places every storage itself (return the storage, or None)")
    return out


class _Zip:
    """torch.save's zip: `<name>/data.pkl`, `<name>/data/<key>`, `<name>/byteorder`."""

    def __init__(self, z, restore):
        self.z, self.restore, self.storages = z, restore, {}
        names = z.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise Fail("it is a zip archive without torch.save's one <name>/data.pkl record "
                       "(not a PyTorch checkpoint)")
        self.prefix = pickles[0][:-len("data.pkl")]
        self.infos = {i.filename: i for i in z.infolist()}
        order = self.record("byteorder", 16) if self.prefix + "byteorder" in self.infos \
            else b"little"
        if order not in (b"little", b"big"):
            raise Fail(f"its byteorder record says {order[:16]!r}, not little or big")
        self.little = order == b"little"

    def record(self, name, size=None):
        info = self.infos.get(self.prefix + name)
        if info is None:
            raise Fail(f"it names the record {self.prefix + name!r}, which the archive lacks")
        if size is not None and info.file_size > size:
            raise Fail(f"its record {info.filename!r} holds {info.file_size} bytes, more than "
                       f"{size}")
        if info.compress_type != zipfile.ZIP_STORED and \
                info.file_size > _MAX_EXPANSION * max(info.compress_size, 1):
            raise Fail(f"its record {info.filename!r} claims to expand {info.compress_size} "
                       f"bytes to {info.file_size}")
        try:
            return self.z.read(info)
        except ZIP_ERRORS as e:
            raise Fail(f"its record {info.filename!r} cannot be read: the archive is truncated "
                       f"or damaged ({type(e).__name__}: {' '.join(str(e).split())})") from None

    def storage(self, dtype, key, location, numel):
        if key in self.storages:
            found = self.storages[key]
            if found.dtype_name != dtype or found.numel != numel:
                raise Fail(f"storage {key!r} is named as {numel} {dtype} elements and as "
                           f"{found.numel} {found.dtype_name}")
            return found
        need = numel * _itemsize(dtype)
        info = self.infos.get(self.prefix + "data/" + key)
        if info is None:
            raise Fail(f"it names the storage {'data/' + key!r}, which the archive lacks "
                       f"(truncated or damaged)")
        if info.file_size != need:
            raise Fail(f"its storage {'data/' + key!r} holds {info.file_size} bytes where "
                       f"{numel} {dtype} elements need {need}")
        array = _decode(self.record("data/" + key), dtype, self.little)
        found = Storage(_checked_restore(self.restore, location, array), dtype)
        self.storages[key] = found
        return found

    def load(self, reader_args):
        r = Reader(self.record("data.pkl"), self.storage, *reader_args)
        return opcodes.run(r)


class _Legacy:
    """The old stream (`_use_new_zipfile_serialization=False`): pickles one after another,
    then the storages' bytes; tensors are views of storages allocated when named and filled
    after the main pickle."""

    def __init__(self, data, restore):
        self.data, self.restore, self.storages, self.pos = data, restore, {}, 0

    def next_pickle(self, reader_args, storage=None):
        r = Reader(self.data, storage or self.no_storage, *reader_args)
        r.pos = self.pos
        out = opcodes.run(r)
        self.pos = r.pos
        return out

    def no_storage(self, *pid):
        raise Fail("a storage is named outside the file's main pickle")

    def storage(self, dtype, key, location, numel):
        if key not in self.storages:
            if numel * _itemsize(dtype) > len(self.data):
                raise Fail(f"storage {key!r} claims {numel} {dtype} elements, more than the "
                           f"file holds")
            array = np.zeros(numel, np.float32 if dtype == "bfloat16" else dtype)
            found = Storage(_checked_restore(self.restore, location, array), dtype)
            self.storages[key] = found
        found = self.storages[key]
        if found.dtype_name != dtype:
            raise Fail(f"storage {key!r} is named as {dtype} and as {found.dtype_name}")
        return found

    def load(self, reader_args):
        if self.next_pickle(reader_args) != _LEGACY_MAGIC:
            raise Fail("it starts as a pickle but not as torch.save's old format (no magic "
                       "number): a plain pickle, which tinygradx does not read")
        if self.next_pickle(reader_args) != _LEGACY_PROTOCOL:
            raise Fail("its old-format protocol number is not 1001")
        info = self.next_pickle(reader_args)
        little = info.get("little_endian", True) if isinstance(info, dict) else True
        obj = self.next_pickle(reader_args, self.storage)
        keys = self.next_pickle(reader_args)
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise Fail("its list of storage keys is not a list of strings")
        for key in keys:
            if key not in self.storages:
                raise Fail(f"it lists storage {key!r}, which its pickle never names")
            found = self.storages[key]
            head = self.take(8, key)
            numel = struct.unpack("<q" if little else ">q", head)[0]
            if numel != found.numel:
                raise Fail(f"storage {key!r} holds {numel} elements where its pickle says "
                           f"{found.numel}")
            found.array[...] = _decode(self.take(numel * _itemsize(found.dtype_name), key),
                                       found.dtype_name, little)
        missing = sorted(set(self.storages) - set(keys))
        if missing:
            raise Fail(f"its pickle names storage {missing[0]!r}, whose bytes the file lacks "
                       f"(truncated)")
        return obj

    def take(self, n, key):
        if self.pos + n > len(self.data):
            raise Fail(f"it ends inside storage {key!r} (truncated)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def _cpu_only(location, array):
    """The default map_location: storages saved on the CPU only."""
    if location != "cpu":
        raise Fail(f"it holds a storage saved on {location!r}; tinygradx computes on the "
                   f"CPU: pass map_location='cpu'")
    return array


def read(source, *, tensor=None, parameter=None, device=None, restore=None, encoding="utf-8"):
    """What the PyTorch checkpoint `source` (a path, or a binary file object) holds, read by
    the restricted machine: containers, numbers and strings as Python's, each tensor as
    `tensor(array, requires_grad)` (default: the array, a view of its storage), a saved
    Parameter through `parameter(t, requires_grad)`, a torch.device as `device(text)`, each
    storage through `restore(location, array)` (default: 'cpu' only). Raises TorchFileError
    (RefusedGlobal for a global outside the list) naming the file."""
    name = repr(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else \
        "the file object"
    args = (tensor or (lambda a, rg: a), parameter or (lambda t, rg: t),
            device or (lambda text: text), encoding)
    restore = restore or _cpu_only
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                return _read(f, args, restore)
        return _read(source, args, restore)
    except RefusedGlobal as e:
        raise RefusedGlobal(f"{name}: {e}") from None
    except (Fail, TorchFileError) as e:           # the machine's, or a hook's refusal
        raise TorchFileError(f"{name}: {e}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, struct.error,
            UnicodeDecodeError) as e:
        raise TorchFileError(f"{name} is truncated or damaged ({type(e).__name__}: "
                             f"{' '.join(str(e).split())})") from None
    except (MemoryError, RecursionError) as e:
        raise TorchFileError(f"{name} describes more than can be built "
                             f"({type(e).__name__})") from None


def _read(f, args, restore):
    head = f.read(4)
    f.seek(0)
    kind = kind_of(head)
    if kind == "zip":
        try:
            z = zipfile.ZipFile(f)
        except ZIP_ERRORS as e:
            raise Fail(f"it is a damaged or truncated zip archive ({type(e).__name__}: "
                       f"{' '.join(str(e).split())})") from None
        with z:
            return _Zip(z, restore).load(args)
    if kind == "legacy":
        return _Legacy(f.read(), restore).load(args)
    raise Fail("it is neither torch.save's zip archive nor its old format")
