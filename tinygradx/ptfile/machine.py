"""The restricted machine's parts (see tinygradx/ptfile/__init__.py): the errors, what the
globals a checkpoint may name stand for, and `Reader`, which holds the machine's stack, memo
and marks and the functions an allowed global calls, each checking the arguments the file gave
it. The opcodes that drive it are in opcodes.py.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import collections
import pickle

import numpy as np

from ..shapes import Size
from ..io import CheckpointError



class TorchFileError(CheckpointError):
    """A PyTorch checkpoint that cannot be read: damaged, truncated, or not data."""


class RefusedGlobal(TorchFileError, pickle.UnpicklingError):
    """The file names a global (a Python function or class) outside the reader's list."""


class Global:
    """A global the pickle named: only its name (nothing is imported)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Storage:
    """One storage of the file: a flat array of its dtype (bfloat16 widened to float32)."""

    def __init__(self, array, dtype_name):
        self.array, self.dtype_name, self.numel = array, dtype_name, array.size


class Fail(Exception):
    """Raised inside the machine; `read` turns it into a TorchFileError naming the file."""


# -- what the globals stand for ---------------------------------------------------------------

# torch's storage types: the element type of a storage (numpy's name; bfloat16 has none and
# is widened exactly to float32, as tinygradx's safetensors reader does)
STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
            "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
            "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
            "BoolStorage": "bool", "UntypedStorage": "uint8"}
# torch's dtype names, as numpy names (the look-alike's torch.float32 is np.float32)
DTYPES = {"float64": "float64", "double": "float64", "float32": "float32", "float": "float32",
          "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
          "long": "int64", "int32": "int32", "int": "int32", "int16": "int16",
          "short": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
          "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}
# globals torch's weights_only list has that stand for what tinygradx does not hold
NOT_HELD = {
    "torch._utils._rebuild_sparse_tensor": "a sparse tensor",
    "torch._utils._rebuild_sparse_csr_tensor": "a sparse tensor",
    "torch.serialization._get_layout": "a sparse tensor's layout",
    "torch._utils._rebuild_qtensor": "a quantized tensor",
    "torch._utils._rebuild_meta_tensor_no_storage": "a meta tensor (shape without data)",
    "torch._utils._rebuild_nested_tensor": "a nested tensor",
    "torch._utils._rebuild_wrapper_subclass": "a tensor subclass",
    "torch._utils._rebuild_device_tensor_from_numpy": "a tensor of another device",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": "a tensor of another device",
    "torch._utils._rebuild_xla_tensor": "an XLA tensor",
    "torch._utils._rebuild_mtia_tensor": "an MTIA tensor",
}
for _q in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams"):
    NOT_HELD[f"torch.{_q}"] = "a quantized tensor's scheme"
for _t in ("ComplexDoubleStorage", "ComplexFloatStorage", "QInt8Storage", "QInt32Storage",
           "QUInt8Storage", "QUInt4x2Storage", "QUInt2x4Storage"):
    NOT_HELD[f"torch.{_t}"] = "a complex or quantized storage"


class Reader:
    """The restricted machine over one pickle (see the module docstring)."""

    def __init__(self, data, storage, tensor, parameter, device, encoding):
        self.data, self.pos = data, 0
        self.storage = storage                  # (dtype name, key, location, numel) -> Storage
        self.tensor, self.parameter, self.device = tensor, parameter, device
        self.encoding = encoding
        self.memo, self.stack, self.marks = {}, [], []
        self.calls = {name: getattr(self, method) for name, method in ALLOWED.items()}

    # -- reading bytes ----------------------------------------------------------------------

    def read(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise Fail(f"the pickle ends inside an opcode at byte {self.pos} (truncated)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def line(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise Fail(f"the pickle ends inside a text opcode at byte {self.pos} (truncated)")
        out = self.data[self.pos:end]
        self.pos = end + 1
        return out

    def pop(self):
        if not self.stack:
            raise Fail(f"an opcode at byte {self.pos} pops an empty stack (damaged pickle)")
        return self.stack.pop()

    def pop_mark(self):
        if not self.marks:
            raise Fail(f"an opcode at byte {self.pos} needs a MARK the pickle never set "
                        f"(damaged pickle)")
        items, self.stack = self.stack, self.marks.pop()
        return items

    def top(self):
        if not self.stack:
            raise Fail(f"an opcode at byte {self.pos} reads an empty stack (damaged pickle)")
        return self.stack[-1]

    # -- globals and calls ------------------------------------------------------------------

    def find(self, module, name):
        """The marker for module.name, or the refusal: nothing is imported here."""
        if (module, name) in _compat_pickle.NAME_MAPPING:      # Python 2 names, as pickle
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in ALLOWED or full in MARKERS or storage_name(full) or dtype_name(full):
            return Global(full)
        if full in NOT_HELD:
            raise RefusedGlobal(f"it holds {NOT_HELD[full]} (the global {full}), which "
                                f"tinygradx does not hold")
        raise RefusedGlobal(f"it names the global {full}, which a checkpoint may not call "
                            f"(tinygradx reads tensors, storages, dicts, lists, tuples, sets, "
                            f"numbers and strings; it never imports or calls anything else)")

    def value_of(self, g):
        """What a global stands for as a value (a dtype name stands for its numpy type)."""
        dtype = dtype_name(g.name)
        if dtype:
            if dtype == "bfloat16":
                raise Fail("it holds the dtype torch.bfloat16 as a value, which tinygradx "
                            "has no dtype for")
            return np.dtype(dtype).type
        return g

    def call(self, func, args):
        if not isinstance(func, Global) or func.name not in self.calls:
            what = func.name if isinstance(func, Global) else type(func).__name__
            raise Fail(f"it calls {what}, which is not a function a checkpoint may call")
        if not isinstance(args, tuple):
            raise Fail(f"the arguments of {func.name} are not a tuple (damaged pickle)")
        return self.calls[func.name](*args)

    # -- the allowed calls: each checks what the file gave it --------------------------------

    def ordered_dict(self, *args):
        if not args:
            return collections.OrderedDict()
        if len(args) == 1 and isinstance(args[0], (list, tuple)) and all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in args[0]):
            return collections.OrderedDict(hashable_pairs(args[0]))
        raise Fail("collections.OrderedDict is given arguments that are not pairs")

    def counter(self, *args):
        if not args:
            return collections.Counter()
        if len(args) == 1 and isinstance(args[0], dict):
            return collections.Counter(args[0])
        raise Fail("collections.Counter is given arguments that are not a dict")

    def make_set(self, *args):
        if len(args) > 1 or args and not isinstance(args[0], (list, tuple, set)):
            raise Fail("builtins.set is given something that is not a list")
        try:
            return set(args[0]) if args else set()
        except TypeError:
            raise Fail("builtins.set is given an unhashable item") from None

    def make_bytearray(self, *args):
        if not args:
            return bytearray()
        if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
            return bytearray(args[0])
        if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin1", "latin-1"):
            return bytearray(args[0].encode("latin1"))
        raise Fail("builtins.bytearray is given arguments that are not bytes")

    def make_complex(self, *args):
        if len(args) <= 2 and all(isinstance(a, (int, float)) for a in args):
            return complex(*args)
        raise Fail("builtins.complex is given arguments that are not numbers")

    def encode(self, *args):
        """protocol 2 writes bytes b as _codecs.encode(b.decode('latin1'), 'latin1')."""
        if len(args) == 1 and isinstance(args[0], str):
            args = (args[0], "utf-8")
        if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str) and \
                codecs.lookup(args[1]).name in ("iso8859-1", "utf-8", "ascii"):
            return args[0].encode(args[1])
        raise Fail("_codecs.encode is given arguments other than text and latin1")

    def size(self, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)) and all(
                is_int(d) and d >= 0 for d in args[0]):
            return Size(args[0])
        raise Fail("torch.Size is given something that is not a list of sizes")

    def make_device(self, *args):
        if 1 <= len(args) <= 2 and isinstance(args[0], str) and (
                len(args) == 1 or args[1] is None or is_int(args[1])):
            text = args[0] if len(args) == 1 or args[1] is None else f"{args[0]}:{args[1]}"
            return self.device(text)
        raise Fail("torch.device is given arguments that are not a device")

    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False,
                       hooks=None, metadata=None, dtype=None):
        if not isinstance(storage, Storage):
            raise Fail("a tensor is rebuilt from something that is not a storage")
        if hooks and not (isinstance(hooks, dict) and not hooks):
            raise Fail("a tensor carries backward hooks (code), which a checkpoint may not")
        if metadata:
            raise Fail(f"a tensor carries metadata {sorted(metadata)!r:.60}, which tinygradx "
                        f"does not read (conjugate or negative bits)")
        if not isinstance(requires_grad, bool):
            raise Fail("a tensor's requires_grad is not a bool")
        array = storage.array
        if dtype is not None:                # v3: an untyped storage and its dtype, a global
            # that value_of read as its numpy type (any other global is not a dtype)
            name = (np.dtype(dtype).name if isinstance(dtype, type)
                    and issubclass(dtype, np.generic) else None)
            if name is None:
                raise Fail("a tensor's dtype is not a torch dtype")
            if name == "bfloat16":
                raise Fail("a tensor of dtype bfloat16 in an untyped storage")
            if array.dtype != np.uint8 or array.size % np.dtype(name).itemsize:
                raise Fail(f"a {name} tensor's storage is not whole {name} elements")
            array = array.view(np.dtype(name).newbyteorder("<")).astype(name, copy=False)
        return self.tensor(view(array, offset, size, stride), requires_grad)

    def rebuild_legacy_tensor(self, storage, offset, size, stride):
        return self.rebuild_tensor(storage, offset, size, stride)

    def rebuild_v3(self, storage, offset, size, stride, requires_grad, hooks, dtype,
                   metadata=None):
        return self.rebuild_tensor(storage, offset, size, stride, requires_grad, hooks,
                                   metadata, dtype)

    def rebuild_parameter(self, data, requires_grad, hooks, state=None):
        if hooks and not (isinstance(hooks, dict) and not hooks):
            raise Fail("a parameter carries backward hooks (code), which a checkpoint may not")
        if not isinstance(requires_grad, bool):
            raise Fail("a parameter's requires_grad is not a bool")
        out = self.parameter(data, requires_grad)
        return self.set_state(out, state)

    def rebuild_from_type(self, func, new_type, args, state):
        if not isinstance(new_type, Global) or new_type.name not in (
                "torch.Tensor", "torch.nn.parameter.Parameter"):
            raise Fail(f"a tensor of type {new_type!r}, which tinygradx does not hold")
        out = self.call(func, args)
        if new_type.name == "torch.nn.parameter.Parameter":
            out = self.parameter(out, True)
        return self.set_state(out, state)

    def set_state(self, out, state):
        """A tensor's Python attributes (t.name = "x" before saving): set again when each is
        a plain public name the tensor does not have already, else refused."""
        if state is None or state == {} or state == ((), {}) or state == ({}, None):
            return out
        if isinstance(state, tuple) and len(state) == 2 and not state[1]:
            state = state[0]
        if not isinstance(state, dict):
            raise Fail("a tensor's attributes are not a dict")
        for key, value in state.items():
            if not isinstance(key, str) or not key.isidentifier() or key.startswith("_") or \
                    hasattr(out, key):
                raise Fail(f"a tensor's attribute {key!r:.40} would replace one of its own")
            try:
                setattr(out, key, value)
            except (AttributeError, TypeError):
                raise Fail(f"a tensor's attribute {key!r:.40} cannot be set") from None
        return out


ALLOWED = {
    "collections.OrderedDict": "ordered_dict", "collections.Counter": "counter",
    "builtins.set": "make_set", "builtins.bytearray": "make_bytearray",
    "builtins.complex": "make_complex", "_codecs.encode": "encode", "torch.Size": "size",
    "torch.device": "make_device",
    "torch._utils._rebuild_tensor": "rebuild_legacy_tensor",
    "torch._utils._rebuild_tensor_v2": "rebuild_tensor",
    "torch._utils._rebuild_tensor_v3": "rebuild_v3",
    "torch._utils._rebuild_parameter": "rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state": "rebuild_parameter",
    "torch._tensor._rebuild_from_type_v2": "rebuild_from_type",
}
# names that are only ever arguments (never called): the types a tensor is rebuilt as
MARKERS = {"torch.Tensor", "torch.nn.parameter.Parameter"}


def storage_name(full):
    for prefix in ("torch.", "torch.storage.", "torch.cuda."):
        if full.startswith(prefix) and full[len(prefix):] in STORAGES:
            return STORAGES[full[len(prefix):]]
    return None


def dtype_name(full):
    return DTYPES.get(full[len("torch."):]) if full.startswith("torch.") else None


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def hashable_pairs(pairs):
    for k, v in pairs:
        try:
            hash(k)
        except TypeError:
            raise Fail(f"a dict key of type {type(k).__name__} is not hashable") from None
        yield k, v


def view(array, offset, size, stride):
    """The tensor (size, stride, storage offset, in elements) as a numpy view of its storage,
    after checking that every element it reaches lies inside the storage."""
    if not (is_int(offset) and offset >= 0 and isinstance(size, tuple) and
            isinstance(stride, tuple) and len(size) == len(stride) and
            all(is_int(d) and d >= 0 for d in size) and
            all(is_int(s) and s >= 0 for s in stride)):
        raise Fail(f"a tensor's size {size!r:.60}, stride {stride!r:.60} or offset "
                    f"{offset!r:.20} is not a list of non-negative ints")
    if 0 not in size:
        last = offset + sum((d - 1) * s for d, s in zip(size, stride, strict=True))
        if last >= array.size:
            raise Fail(f"a tensor of size {list(size)} (stride {list(stride)}, offset "
                        f"{offset}) reaches element {last} of a storage of {array.size}")
    base = array[offset:] if offset < array.size else array[:0]
    item = array.itemsize
    return np.lib.stride_tricks.as_strided(base, shape=size,
                                           strides=tuple(s * item for s in stride))


