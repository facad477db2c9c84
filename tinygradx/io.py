"""Reading and writing arrays on disk without pickle: checkpoints (.npz) and safetensors.

Two formats, both pure numpy + stdlib:

* **Checkpoints** (`save_checkpoint` / `load_checkpoint`): an ordinary ``.npz`` archive (a zip of
  ``.npy`` files, readable by ``np.load``) holding the arrays plus one reserved entry ``__meta__``:
  a uint8 array of UTF-8 JSON ``{"format": "tinygradx-checkpoint", "version": 1, "meta": {...}}``.
  Nothing is pickled on either side, so loading a checkpoint can never run code. Saves are atomic:
  the archive is written to a temporary file in the target's directory, flushed and fsynced, then
  ``os.replace``-d onto the target, so an interrupted save (crash, Ctrl-C, full disk) leaves the
  previous checkpoint untouched.

* **safetensors** (`load_safetensors` / `save_safetensors`): the Hugging Face format, implemented
  from its description: an 8-byte little-endian unsigned header length N, N bytes of JSON header
  ``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}}``,
  then the raw little-endian tensor bytes; offsets are relative to the start of that data block.

Every problem with a file (missing, truncated, corrupt, wrong kind) is raised as `CheckpointError`
(a `ValueError`) whose message names the path and what is wrong.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import numpy as np

__all__ = [
    "CheckpointError",
    "SafetensorsError",
    "ZIP_ERRORS",
    "META_KEY",
    "atomic_write",
    "save_checkpoint",
    "write_checkpoint",
    "load_checkpoint",
    "save_safetensors",
    "load_safetensors",
    "read_safetensors_header",
]

META_KEY = "__meta__"
_FORMAT_NAME = "tinygradx-checkpoint"
_FORMAT_VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"
_NPY_MAGIC = b"\x93NUMPY"


class CheckpointError(ValueError):
    """A checkpoint or tensor file is missing, truncated, corrupt, or not of the expected kind."""


# What Python's zipfile raises on a damaged archive, besides BadZipFile: a name that is not
# UTF-8, a compression method or zip version it does not know, an "encrypted" flag bit, a
# length that runs past the file, a header offset too large to seek to (ValueError) (found by
# flipping and cutting bytes of real checkpoints)
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError, UnicodeDecodeError,
              NotImplementedError, RuntimeError, OverflowError, ValueError, struct.error)


class SafetensorsError(CheckpointError):
    """A safetensors file (or the arrays given to save one) breaks the format."""


# --------------------------------------------------------------------------------------------
# atomic writes


def _fsync_dir(directory: str) -> None:
    """Persist a rename: the new directory entry is only durable once the directory is synced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open directories; rename durability is then best-effort
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Write a file atomically: ``write(f)`` fills a temp file that then replaces ``path``.

    The temp file lives in the same directory (a rename is only atomic within one file system),
    is flushed and fsynced before ``os.replace``, and is removed again if anything fails,
    including ``KeyboardInterrupt``. Either the old file or the complete new one is at ``path``
    at every moment.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CheckpointError(f"cannot write {path!r}: directory {directory!r} does not exist")
    base = os.path.basename(path)
    # O_EXCL with a random suffix: never clobber a concurrent writer's temp file. Mode 0o666 lets
    # the umask decide the final permissions, as for a file opened normally.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    tmp = None
    try:
        for _ in range(100):
            # named before it exists: an interrupt right after os.open still finds it to remove
            tmp = os.path.join(directory, f".{base}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
            try:
                fd = os.open(tmp, flags, 0o666)
                break
            except FileExistsError:
                tmp = None             # someone else's file: never remove it
        else:  # pragma: no cover - 100 collisions of 32 random bits
            raise CheckpointError(f"cannot create a temporary file next to {path!r}")
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    _fsync_dir(directory)


# --------------------------------------------------------------------------------------------
# checkpoints (.npz + JSON meta)


def _check_array(name: Any, value: Any, what: str) -> np.ndarray:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{what}: array names must be non-empty strings, got {name!r}")
    arr = np.asarray(getattr(value, "_data", value))       # a Tensor's values, grad or not
    if arr.dtype.hasobject:
        raise TypeError(
            f"{what}: array {name!r} has dtype {arr.dtype} (Python objects), which cannot be "
            "stored without pickle; convert it to a numeric or fixed-width string array"
        )
    return arr


def save_checkpoint(
    path: str | os.PathLike,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any] | None = None,
    *,
    compress: bool = False,
) -> None:
    """Save ``arrays`` and the JSON-serialisable ``meta`` to one ``.npz`` file, atomically.

    ``path`` is used as given (no ``.npz`` suffix is appended). Object arrays and a non-JSON
    ``meta`` are refused with a `TypeError` before anything touches the disk; the key
    ``"__meta__"`` is reserved. ``compress=True`` deflates the entries (smaller, slower).
    An interrupted save leaves any previous file at ``path`` intact.
    """
    what = f"save_checkpoint({os.fspath(path)!r})"
    checked = _checked_entries(what, arrays, meta)
    atomic_write(path, lambda f: _write_entries(f, checked, compress))


def _checked_entries(what: str, arrays: Any, meta: Any) -> dict[str, np.ndarray]:
    """The arrays and the metadata entry to write, checked before anything is written."""
    if not isinstance(arrays, Mapping):
        raise TypeError(f"{what}: arrays must be a dict of name -> array, got {type(arrays)}")
    if META_KEY in arrays:
        raise ValueError(f"{what}: the array name {META_KEY!r} is reserved for the metadata")
    checked = {name: _check_array(name, value, what) for name, value in arrays.items()}
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        raise TypeError(f"{what}: meta must be a dict, got {type(meta)}")
    payload = {"format": _FORMAT_NAME, "version": _FORMAT_VERSION, "meta": dict(meta)}
    try:
        # allow_nan=False: NaN/Infinity are not JSON and other readers would reject the file.
        text = json.dumps(payload, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise TypeError(f"{what}: meta is not JSON-serialisable: {e}") from None
    checked[META_KEY] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    return checked


def _write_entries(f: BinaryIO, checked: dict[str, np.ndarray], compress: bool) -> None:
    compression = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    # Written entry by entry (what np.savez does internally) rather than through np.savez,
    # whose own keyword arguments ("file", "allow_pickle") would collide with array names.
    with zipfile.ZipFile(f, mode="w", compression=compression, allowZip64=True) as zf:
        for name, arr in checked.items():
            with zf.open(name + ".npy", mode="w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, arr, allow_pickle=False)


def write_checkpoint(
    f: BinaryIO,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any] | None = None,
    *,
    compress: bool = False,
) -> None:
    """`save_checkpoint` into an open binary file object (an io.BytesIO, a socket's file), as
    torch.save writes into one; the same checks, no temporary file (atomicity is the
    caller's, who owns the object)."""
    what = f"write_checkpoint({type(f).__name__})"
    checked = _checked_entries(what, arrays, meta)
    _write_entries(f, checked, compress)


def _describe_magic(head: bytes) -> str:
    if not head:
        return "the file is empty"
    if head.startswith(_NPY_MAGIC):
        return "it is a single .npy array, not an .npz checkpoint archive"
    if head.startswith(b"\x80"):
        return "it is a pickle (PyTorch's old torch.save format, or another program's), not a " \
               "checkpoint archive: tgx.load reads PyTorch's"
    return "it is not an .npz (zip) archive"


def _describe_zip(names: list[str]) -> str:
    """What a zip archive without tinygradx's metadata entry is."""
    if any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names):
        return ("is a PyTorch checkpoint (torch.save's zip archive), not a tinygradx "
                "checkpoint: tgx.load (the look-alike's torch.load) reads it")
    if names and all(n.endswith(".npy") for n in names):
        return (f"is an .npz archive of arrays but not a tinygradx checkpoint (no {META_KEY!r} "
                f"entry)")
    return "is a zip archive but not an .npz of arrays (not a tinygradx checkpoint)"


def load_checkpoint(
    path: str | os.PathLike | BinaryIO,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a checkpoint written by `save_checkpoint`; returns ``(arrays, meta)``.

    ``path`` is a path or an open binary file object. Uses ``np.load(...,
    allow_pickle=False)``. A missing, truncated, corrupt or foreign file raises
    `CheckpointError` naming the path and the problem.
    """
    if hasattr(path, "read"):
        source, name = path, "the checkpoint file object"
        try:
            head = source.read(len(_NPY_MAGIC))
            source.seek(0)
        except (OSError, AttributeError) as e:
            raise CheckpointError(f"cannot read {name}: {e}") from None
    else:
        source = os.fspath(path)
        name = f"checkpoint {source!r}"
        if not os.path.exists(source):
            raise CheckpointError(f"{name} does not exist")
        if os.path.isdir(source):
            raise CheckpointError(f"{name} is a directory, not a file")
        try:
            with open(source, "rb") as f:
                head = f.read(len(_NPY_MAGIC))
        except OSError as e:
            raise CheckpointError(f"cannot read {name}: {e}") from None
    label = name.removeprefix("checkpoint ")
    if not head.startswith(_ZIP_MAGIC):
        raise CheckpointError(f"{label} is not a tinygradx checkpoint: {_describe_magic(head)}")
    try:
        with np.load(source, allow_pickle=False) as npz:
            names = list(npz.files)
            if META_KEY not in names:
                raise CheckpointError(f"{label} {_describe_zip(npz.zip.namelist())}")
            # Reading every entry here (NpzFile is lazy) surfaces truncation/CRC errors now,
            # inside this try, instead of later at some unrelated line of the caller.
            arrays = {name: npz[name] for name in names}
    except CheckpointError:
        raise
    except ValueError as e:
        if "allow_pickle" not in str(e):
            raise CheckpointError(
                f"{name} is truncated or corrupt (ValueError: {e})"
            ) from None
        raise CheckpointError(
            f"{name} holds pickled Python objects, which are refused "
            "(loading them could run arbitrary code)"
        ) from None
    except ZIP_ERRORS as e:
        raise CheckpointError(
            f"{name} is truncated or corrupt ({type(e).__name__}: {' '.join(str(e).split())})"
        ) from None
    raw = arrays.pop(META_KEY)
    try:
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError(f"{META_KEY!r} has dtype {raw.dtype} and shape {raw.shape}")
        payload = json.loads(raw.tobytes().decode("utf-8"))
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT_NAME:
            raise ValueError(f"{META_KEY!r} does not carry the {_FORMAT_NAME!r} marker")
        version = payload.get("version")
        if not isinstance(version, int) or version > _FORMAT_VERSION:
            raise ValueError(f"format version {version!r} is newer than this reader's")
        meta = payload["meta"]
        if not isinstance(meta, dict):
            raise ValueError("meta is not a JSON object")
    except (ValueError, KeyError) as e:
        raise CheckpointError(f"{label} has unreadable checkpoint metadata: {e}") from None
    except RecursionError:
        raise CheckpointError(f"{label} has checkpoint metadata nested too deeply to read "
                              f"(damaged, or not written by tinygradx)") from None
    return arrays, meta


# --------------------------------------------------------------------------------------------
# safetensors

# All little-endian, as the format prescribes. BF16 has no numpy dtype: stored as 16-bit words.
_ST_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NP_TO_ST: dict[np.dtype, str] = {
    np.dtype(dt).newbyteorder("="): name for name, dt in _ST_DTYPES.items() if name != "BF16"
}
# The reference implementation refuses headers above 100 MB; a larger length is corruption.
_MAX_HEADER = 100_000_000
_METADATA_KEY = "__metadata__"


def _bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 is the top half of a float32: shift the 16 stored bits up and reinterpret."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _read_header(f: BinaryIO, path: str, file_size: int) -> tuple[dict[str, dict], dict, int]:
    """Parse and validate the header; returns (tensors, metadata, offset of the data block)."""
    def fail(msg: str) -> SafetensorsError:
        return SafetensorsError(f"{path!r} is not a valid safetensors file: {msg}")

    if file_size < 8:
        raise fail(f"only {file_size} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > _MAX_HEADER:
        raise fail(f"header length {n} is implausibly large (corrupt or not safetensors)")
    if 8 + n > file_size:
        raise fail(f"header length {n} runs past the end of the {file_size}-byte file (truncated?)")
    raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_reject_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise fail(f"header is not valid UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise fail("header is not a JSON object")
    metadata = header.pop(_METADATA_KEY, None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise fail(f"{_METADATA_KEY!r} must map strings to strings")
    data_start = 8 + n
    data_len = file_size - data_start
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise fail(f"entry for tensor {name!r} is not an object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in _ST_DTYPES:
            known = " ".join(_ST_DTYPES)
            raise fail(f"tensor {name!r} has unsupported dtype {dtype!r} (supported: {known})")
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise fail(f"tensor {name!r} has invalid shape {shape!r}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(_is_int(o) and o >= 0 for o in offsets)
            or offsets[0] > offsets[1]
        ):
            raise fail(f"tensor {name!r} has invalid data_offsets {offsets!r}")
        nbytes = math.prod(shape) * _ST_DTYPES[dtype].itemsize
        if offsets[1] - offsets[0] != nbytes:
            raise fail(
                f"tensor {name!r} ({dtype} {shape}) needs {nbytes} bytes but data_offsets "
                f"{offsets} span {offsets[1] - offsets[0]}"
            )
        if offsets[1] > data_len:
            raise fail(
                f"tensor {name!r} ends at byte {offsets[1]} of the data block, which has only "
                f"{data_len} bytes (truncated?)"
            )
        spans.append((offsets[0], offsets[1], name))
    # Like the reference implementation: tensors tile the data block exactly, no gaps/overlaps.
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            kind = "overlaps the previous tensor" if begin < pos else "leaves a gap before it"
            raise fail(f"tensor {name!r} starts at byte {begin}, expected {pos}: it {kind}")
        pos = end
    if pos != data_len:
        raise fail(f"data block has {data_len} bytes but the tensors cover {pos}")
    return header, metadata, data_start


def read_safetensors_header(path: str | os.PathLike) -> tuple[dict[str, dict], dict[str, str]]:
    """Return ``(tensors, metadata)`` of a safetensors file without reading the tensor data.

    ``tensors`` maps each name to its ``{"dtype", "shape", "data_offsets"}`` entry; the header is
    fully validated against the file size, so a file that passes can be loaded.
    """
    path = os.fspath(path)
    f = _open_for_read(path, "safetensors file")
    with f:
        header, metadata, _ = _read_header(f, path, os.fstat(f.fileno()).st_size)
    return header, metadata


def _open_for_read(path: str, what: str) -> BinaryIO:
    if not os.path.exists(path):
        raise CheckpointError(f"{what} {path!r} does not exist")
    if os.path.isdir(path):
        raise CheckpointError(f"{what} {path!r} is a directory, not a file")
    try:
        return open(path, "rb")
    except OSError as e:
        raise CheckpointError(f"cannot read {what} {path!r}: {e}") from None


def load_safetensors(path: str | os.PathLike, *, mmap_mode: bool = False) -> dict[str, np.ndarray]:
    """Read every tensor of a safetensors file into a dict of numpy arrays (in file order).

    Arrays come back in native byte order with the stored dtype, except BF16, which numpy lacks
    and is widened exactly to float32. By default the data is read into memory (arrays are
    writable); ``mmap_mode=True`` maps the file instead and returns read-only views into it
    (BF16 tensors are still converted to fresh float32 arrays).
    """
    path = os.fspath(path)
    f = _open_for_read(path, "safetensors file")
    with f:
        size = os.fstat(f.fileno()).st_size
        header, _, data_start = _read_header(f, path, size)
        if mmap_mode and size > data_start:
            buf: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            base = data_start
        else:
            # One read of the whole data block; the arrays are views into this single buffer.
            buf = bytearray(size - data_start)
            got = f.readinto(buf)
            if got != len(buf):
                raise SafetensorsError(f"{path!r}: file shrank while reading (got {got} bytes)")
            base = 0
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        dtype = _ST_DTYPES[info["dtype"]]
        shape = tuple(info["shape"])
        begin = info["data_offsets"][0]
        arr = np.frombuffer(buf, dtype=dtype, count=math.prod(shape), offset=base + begin)
        arr = arr.reshape(shape)
        if info["dtype"] == "BF16":
            arr = _bf16_to_float32(arr)
        elif sys.byteorder == "big" and dtype.itemsize > 1:
            arr = arr.astype(dtype.newbyteorder("="))
        out[name] = arr
    return out


def save_safetensors(
    path: str | os.PathLike,
    arrays: Mapping[str, np.ndarray],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``arrays`` as a safetensors file (atomically), readable by the reference library.

    Supported dtypes: float64/32/16, int64/32/16/8, uint64/32/16/8 and bool (BF16 is load-only,
    numpy has no bfloat16). ``metadata`` must map strings to strings. Tensors are laid out largest
    item size first so that every tensor starts 8-byte aligned.
    """
    what = f"save_safetensors({os.fspath(path)!r})"
    if not isinstance(arrays, Mapping):
        raise TypeError(f"{what}: arrays must be a dict of name -> array, got {type(arrays)}")
    checked: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        arr = _check_array(name, value, what)
        if name == _METADATA_KEY:
            raise ValueError(f"{what}: the name {_METADATA_KEY!r} is reserved by the format")
        key = arr.dtype.newbyteorder("=") if arr.dtype.byteorder in "<>" else arr.dtype
        if key not in _NP_TO_ST:
            raise TypeError(f"{what}: array {name!r} has dtype {arr.dtype}, not storable "
                            f"in safetensors (use one of {sorted(str(d) for d in _NP_TO_ST)})")
        checked[name] = arr
    if metadata is not None and (
        not isinstance(metadata, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise TypeError(f"{what}: metadata must map strings to strings")

    order = sorted(checked, key=lambda k: (-checked[k].dtype.itemsize, k))
    header: dict[str, Any] = {}
    if metadata:
        header[_METADATA_KEY] = dict(metadata)
    pos = 0
    for name in order:
        arr = checked[name]
        dt = arr.dtype.newbyteorder("=") if arr.dtype.byteorder in "<>" else arr.dtype
        header[name] = {"dtype": _NP_TO_ST[dt], "shape": list(arr.shape),
                        "data_offsets": [pos, pos + arr.nbytes]}
        pos += arr.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad with spaces so the data block starts 8-byte aligned

    def write(f: BinaryIO) -> None:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in order:
            arr = checked[name]
            little = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
            # A byte view of the contiguous array: written without an extra bytes copy.
            f.write(np.ascontiguousarray(little).reshape(-1).view(np.uint8))

    atomic_write(path, write)
