"""The structure `tgx.save` writes beside the arrays, and how `tgx.load` reads it back without
trusting it (tinygradx/tensor/saving.py has the functions themselves).

The structure is a flat table of nodes, JSON in the checkpoint's metadata, written children
first (post-order), so a node refers only to nodes before it:

    ["none"] ["bool", b] ["int", n] ["float", x or "nan"/"inf"/"-inf"] ["str", s]
    ["bytes", latin-1 text] ["bytearray", ...] ["complex", [re, im]] ["dtype", "float32"]
    ["device", "cpu"] ["size", [2, 3]]
    ["list", [i, ...]] ["tuple", [...]] ["set", [...]] ["dict", [[k, v], ...]]
    ["odict", [[k, v], ...]] ["counter", [[k, v], ...]]
    ["tensor", {"s": storage, "grad": b, ...view}] ["array", {"s": storage, ...view}]

An object that appears twice (the same Tensor under two keys, a shared list) is one node that
two parents name, so it loads as one object, as pickle's memo makes torch.load do. A node that
names a node at or after itself cannot be written, so no file can describe a cycle, and reading
is one pass in order: no recursion, whatever the nesting.

Arrays live in storages, each one entry of the archive. A Tensor or array whose memory no
other saved one shares is its own storage, stored with its dtype and shape (the archive stays
readable by np.load). Tensors that share memory (views of one array, `t` and `t.detach()`)
share one storage: their common base, as raw bytes, and each is a view of it (dtype, shape,
strides and offset in bytes), so they share memory again when loaded, as torch's storages do.
Every view is checked to lie inside its storage before numpy is asked to make it.
"""
from __future__ import annotations

import collections
import math

import numpy as np

from ..shapes import Size
from ..ops.dtypes import SUPPORTED_DTYPES
from . import Tensor
from .devices import device

KEY = "torch.save/2"                 # the checkpoint metadata entry that holds the structure
KEY_V1 = "torch.save"                # the nested-JSON structure of earlier versions
TENSOR_DTYPES = frozenset(np.dtype(d).name for d in SUPPORTED_DTYPES)
_ARRAY_DTYPES = TENSOR_DTYPES | {"uint16", "uint32", "uint64"}
_DTYPE_TYPES = {np.dtype(d).name: np.dtype(d).type for d in SUPPORTED_DTYPES}


class Refused(TypeError):
    """`save` met something that is not data (see saving.py)."""


class Damaged(ValueError):
    """`load` met a structure that does not describe data it can build."""


def refused(path, value, why=None):
    return Refused(
        f"save: cannot save {path} of type {type(value).__name__}: "
        + (why or "tinygradx saves Tensors, arrays, numbers, strings, bytes, None and "
                  "dicts/lists/tuples/sets of them, without pickle (save a module's "
                  "state_dict(), not the module)"))


# -- save: obj -> (nodes, arrays) --------------------------------------------------------------

def _float(x):
    return x if math.isfinite(x) else repr(x)


def _leaf(value, path):
    """The node of a value that holds no other value, or None for a container."""
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()                # a numpy number is saved as Python's
    if value is None:
        return ["none"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", int(value)]
    if isinstance(value, float):
        return ["float", _float(float(value))]
    if isinstance(value, str):
        return ["str", str(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["bytes" if isinstance(value, bytes) else "bytearray", value.decode("latin1")]
    if isinstance(value, complex):
        return ["complex", [_float(value.real), _float(value.imag)]]
    if isinstance(value, type) and issubclass(value, np.generic) and \
            np.dtype(value).name in _DTYPE_TYPES:   # the look-alike's torch.float32 is np.float32
        return ["dtype", np.dtype(value).name]
    if isinstance(value, device):
        return ["device", str(value)]
    if isinstance(value, Size):
        return ["size", [int(d) for d in value]]
    return None


def _children(value, path):
    """(kind, [(child, its path)], keyed) of a container, or a Refused naming it."""
    kind = type(value)
    if kind in (list, tuple, set):
        if kind is set:
            items = sorted(value, key=repr)          # one order, so a file is reproducible
            return kind.__name__, [(v, f"{path}{{{v!r}}}") for v in items], False
        return kind.__name__, [(v, f"{path}[{i}]") for i, v in enumerate(value)], False
    if kind in (dict, collections.OrderedDict, collections.Counter):
        pairs = []
        for k, v in value.items():
            pairs += [(k, f"the key {k!r} of {path}"), (v, f"{path}[{k!r}]")]
        name = {dict: "dict", collections.OrderedDict: "odict", collections.Counter: "counter"}
        return name[kind], pairs, True
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        raise refused(path, value, f"a named tuple's class is code, which a checkpoint does "
                                   f"not hold (torch.load refuses it too): save "
                                   f"tuple({path}) or {path}._asdict()")
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        raise refused(path, value, f"a {kind.__name__} is a class of its own, which "
                                   f"torch.load refuses too; save a plain dict, list, tuple "
                                   f"or set")
    raise refused(path, value)


def encode(obj):
    """(structure, arrays) for obj: the node table (see the module docstring) and the
    storages' arrays by name; refuses what is not data with a Refused naming where it is."""
    nodes, memo, active, views = [], {}, set(), []
    keep = []                                        # ids stay valid while encoding

    def add(node):
        nodes.append(node)
        return len(nodes) - 1

    result = []
    stack = [[obj, "obj", None, None, None, result]]   # value, path, kind, todo, done, out
    while stack:
        frame = stack[-1]
        value, path, kind, todo, done, out = frame
        if kind is None:                             # the first visit
            if id(value) in memo:
                stack.pop()
                out.append(memo[id(value)])
                continue
            node = _leaf(value, path)
            if node is None and isinstance(value, (Tensor, np.ndarray)):
                node = ["tensor" if isinstance(value, Tensor) else "array", {}]
                views.append((value, node[1], path))
            if node is not None:
                index = add(node)
                if node[0] in ("tensor", "array"):
                    memo[id(value)] = index
                    keep.append(value)
                stack.pop()
                out.append(index)
                continue
            if id(value) in active:
                raise refused(path, value, "it contains itself (a cycle), which a checkpoint "
                                           "cannot hold")
            kind, items, keyed = _children(value, path)
            frame[2], frame[3], frame[4] = (kind, keyed), iter(items), []
            active.add(id(value))
            keep.append(value)
            continue
        nxt = next(todo, None)
        if nxt is not None:
            stack.append([nxt[0], nxt[1], None, None, None, done])
            continue
        stack.pop()
        active.discard(id(value))
        (name, keyed) = kind
        index = add([name, [done[i:i + 2] for i in range(0, len(done), 2)] if keyed
                     else done])
        memo[id(value)] = index
        out.append(index)
    arrays = _storages(views)
    return {"nodes": nodes}, arrays


def _root(arr):
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _address(arr):
    return arr.__array_interface__["data"][0]


def _storages(views):
    """Fill each tensor/array node's storage and view; {storage name: array}."""
    groups = collections.defaultdict(list)           # the saved arrays by their base's id
    for value, info, path in views:
        is_tensor = isinstance(value, Tensor)
        arr = value._data if is_tensor else value
        if arr.dtype.newbyteorder("=").name not in (TENSOR_DTYPES if is_tensor
                                                    else _ARRAY_DTYPES):
            raise refused(path, value, f"its dtype {arr.dtype} is not one tinygradx saves")
        if is_tensor:
            info["grad"] = bool(value.requires_grad)
        groups[id(_root(arr))].append((arr, info))
    arrays = {}

    def own(arr):
        name = f"s{len(arrays)}"
        arr = arr if arr.flags.c_contiguous else np.array(arr, order="C")   # 0-d stays 0-d
        arrays[name] = arr.astype(arr.dtype.newbyteorder("="), copy=False)
        return name

    for members in groups.values():
        root = _root(members[0][0])
        distinct = {id(a): a for a, _ in members}
        if len(distinct) == 1 or not root.flags.c_contiguous or not root.dtype.isnative:
            names = {key: own(a) for key, a in distinct.items()}  # no view to keep: copies
            for arr, info in members:
                info["s"] = names[id(arr)]
            continue
        name = f"s{len(arrays)}"                      # one base, several views of it
        arrays[name] = root.reshape(-1).view(np.uint8)
        for arr, info in members:
            info.update(s=name, dtype=arr.dtype.name, shape=list(arr.shape),
                        strides=list(arr.strides), offset=_address(arr) - _address(root))
    return arrays


# -- load: (structure, arrays) -> obj, checking everything ---------------------------------------

def _number(x, where):
    if isinstance(x, str) and x in ("nan", "inf", "-inf"):
        return float(x)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    raise Damaged(f"{where} is not a number")


def _view(storage, info, where):
    """The array a tensor/array node describes, a view of its storage."""
    grad = info.get("grad", False)
    if "shape" not in info:                          # a storage of its own
        return storage, grad
    dtype, shape, strides, offset = (info.get(k) for k in ("dtype", "shape", "strides",
                                                           "offset"))
    if dtype not in _ARRAY_DTYPES or storage.dtype != np.uint8 or storage.ndim != 1:
        raise Damaged(f"{where} is a view of dtype {dtype!r:.20} of a storage that is not raw "
                      f"bytes")
    if not (isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(
            strides) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                             for d in shape) and
            all(isinstance(s, int) and not isinstance(s, bool) for s in strides) and
            isinstance(offset, int) and not isinstance(offset, bool)):
        raise Damaged(f"{where} has a shape, strides or offset that are not ints")
    item = np.dtype(dtype).itemsize
    if offset % item or any(s % item for s in strides):
        raise Damaged(f"{where} is not aligned to its {dtype} elements")
    if 0 not in shape:
        low = offset + sum(min(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
        high = offset + sum(max(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
        if low < 0 or high + item > storage.size:
            raise Damaged(f"{where} reaches bytes {low}..{high + item} of a storage of "
                          f"{storage.size}")
    return np.ndarray(tuple(shape), dtype=dtype, buffer=storage, offset=offset if 0 not in
                      shape else 0, strides=tuple(strides)), grad


def decode(structure, arrays, restore):
    """The object the node table describes (see the module docstring), every node checked;
    each storage through restore(location, array) (map_location); a Damaged naming the node
    at the first problem."""
    nodes = structure.get("nodes") if isinstance(structure, dict) else None
    if not isinstance(nodes, list) or not nodes:
        raise Damaged("the structure has no table of nodes")
    built, placed = [], {}

    def child(ref, i):
        if isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < i:
            raise Damaged(f"node {i} names node {ref!r:.20}, which is not one before it")
        return built[ref]

    for i, node in enumerate(nodes):
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise Damaged(f"node {i} is not a [kind, value] entry")
        kind, arg = node[0], node[1] if len(node) > 1 else None
        where = f"node {i} ({kind})"
        built.append(_build(kind, arg, where, i, child, arrays, placed, restore))
    return built[-1]


def _hashable(key, where):
    try:
        hash(key)
    except TypeError:
        raise Damaged(f"{where} has a key of type {type(key).__name__}, which is not "
                      f"hashable") from None
    return key


def _build(kind, arg, where, i, child, arrays, placed, restore):
    simple = {"none": lambda: None, "bool": lambda: arg if isinstance(arg, bool) else None,
              "int": lambda: arg if isinstance(arg, int) and not isinstance(arg, bool)
              else None, "str": lambda: arg if isinstance(arg, str) else None}
    if kind in simple:
        value = simple[kind]()
        if value is None and kind != "none":
            raise Damaged(f"{where} holds {arg!r:.40}, which is not of its kind")
        return value
    if kind == "float":
        return _number(arg, where)
    if kind in ("bytes", "bytearray"):
        if not isinstance(arg, str):
            raise Damaged(f"{where} is not text")
        try:
            data = arg.encode("latin1")
        except UnicodeEncodeError:
            raise Damaged(f"{where} holds characters beyond one byte") from None
        return data if kind == "bytes" else bytearray(data)
    if kind == "complex":
        if not isinstance(arg, list) or len(arg) != 2:
            raise Damaged(f"{where} is not [real, imag]")
        return complex(_number(arg[0], where), _number(arg[1], where))
    if kind == "dtype":
        if arg not in _DTYPE_TYPES:
            raise Damaged(f"{where} names {arg!r:.30}, not a dtype of tinygradx")
        return _DTYPE_TYPES[arg]
    if kind == "device":
        if arg != "cpu" and not (isinstance(arg, str) and arg.startswith("cpu:")):
            raise Damaged(f"{where} names {arg!r:.30}, not the CPU")
        return device(arg)
    if kind == "size":
        if not isinstance(arg, list) or not all(isinstance(d, int) and not isinstance(
                d, bool) and d >= 0 for d in arg):
            raise Damaged(f"{where} is not a list of sizes")
        return Size(arg)
    if kind in ("list", "tuple", "set"):
        if not isinstance(arg, list):
            raise Damaged(f"{where} does not list its items")
        items = [child(r, i) for r in arg]
        if kind == "set":
            return {_hashable(x, where) for x in items}
        return items if kind == "list" else tuple(items)
    if kind in ("dict", "odict", "counter"):
        if not isinstance(arg, list) or not all(isinstance(p, list) and len(p) == 2
                                                for p in arg):
            raise Damaged(f"{where} does not list [key, value] pairs")
        made = {"dict": dict, "odict": collections.OrderedDict,
                "counter": collections.Counter}[kind]()
        for k, v in arg:
            made[_hashable(child(k, i), where)] = child(v, i)
        return made
    if kind in ("tensor", "array"):
        if not isinstance(arg, dict) or not isinstance(arg.get("s"), str):
            raise Damaged(f"{where} names no storage")
        name = arg["s"]
        if name not in arrays:
            raise Damaged(f"{where} names the storage {name!r:.40}, which the file does not "
                          f"hold")
        if name not in placed:
            placed[name] = restore("cpu", arrays[name])
        arr, grad = _view(placed[name], arg, where)
        if kind == "array":
            return arr
        if arr.dtype.name not in TENSOR_DTYPES:
            raise Damaged(f"{where} is a tensor of dtype {arr.dtype}, which tinygradx does "
                          f"not hold")
        if not isinstance(grad, bool) or grad and arr.dtype.kind != "f":
            raise Damaged(f"{where} says requires_grad={grad!r:.10} for dtype {arr.dtype}")
        return Tensor(arr, requires_grad=grad)
    raise Damaged(f"node {i} is of the unknown kind {kind!r:.30}")


def from_v1(structure):
    """The node table of a structure written by tinygradx before the table (nested JSON:
    a list, or {"tensor": name, "requires_grad": b}, {"array": name}, {"float": repr},
    {"tuple": [...]}, {"dict": [[key, value], ...]}), converted without recursion: each
    container is visited twice, before its items (which it pushes) and after them."""
    nodes, done = [], []                  # done: the node index of each finished value
    stack = [(structure, False)]
    while stack:
        value, after = stack.pop()
        items, keys = _v1_items(value)
        if items is not None and not after:
            stack.append((value, True))
            stack.extend((v, False) for v in reversed(items))
            continue
        if items is not None:
            kids = done[len(done) - len(items):] if items else []
            del done[len(done) - len(items):]
            if keys is None:
                nodes.append(["list" if isinstance(value, list) else "tuple", kids])
            else:
                pairs = []
                for key, kid in zip(keys, kids, strict=True):
                    nodes.append(_leaf(key, "key"))
                    pairs.append([len(nodes) - 1, kid])
                nodes.append(["dict", pairs])
        elif isinstance(value, dict) and isinstance(value.get("tensor"), str):
            nodes.append(["tensor", {"s": value["tensor"],
                                     "grad": value.get("requires_grad", False)}])
        elif isinstance(value, dict) and isinstance(value.get("array"), str):
            nodes.append(["array", {"s": value["array"]}])
        elif isinstance(value, dict) and "float" in value:
            nodes.append(["float", value["float"]])
        elif value is None or isinstance(value, (str, int, float, bool)):
            nodes.append(_leaf(value, "value"))
        else:
            raise Damaged(f"an old structure holds {value!r:.40}, which is no value")
        done.append(len(nodes) - 1)
    return {"nodes": nodes}


def _v1_items(value):
    """(items, keys) of an old structure's container (keys None for a list or tuple), or
    (None, None) for anything else."""
    if isinstance(value, list):
        return value, None
    if isinstance(value, dict) and "tuple" in value:
        if not isinstance(value["tuple"], list):
            raise Damaged("an old structure's tuple is not a list")
        return value["tuple"], None
    if isinstance(value, dict) and "dict" in value:
        pairs = value["dict"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and (
                p[0] is None or isinstance(p[0], (str, int, float, bool))) for p in pairs):
            raise Damaged("an old structure's dict is not a list of [scalar key, value]")
        return [p[1] for p in pairs], [p[0] for p in pairs]
    return None, None
