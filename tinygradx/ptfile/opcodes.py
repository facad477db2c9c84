"""The opcodes of a data pickle, each a function of the machine (machine.Reader), and `run`,
which executes a pickle opcode by opcode. Every opcode Python's pickle protocols 0 to 5 use
for data is here; the ones that make arbitrary objects or read out-of-band buffers (INST, OBJ,
NEWOBJ_EX, the extension registry, PERSID with a text id, the buffers of protocol 5) are
refused by name. GLOBAL never imports: it asks Reader.find, which refuses unknown names.
"""
from __future__ import annotations

import codecs
import collections
import struct

from .machine import Fail, Global, Storage, hashable_pairs, is_int, storage_name

OPS = {}
_STOP = object()


def _op(code):
    def register(fn):
        OPS[code] = fn
        return fn
    return register


def run(r):
    """Execute the pickle r.data from r.pos on the machine r; its result."""
    while True:
        at = r.pos
        op = r.read(1)
        handler = OPS.get(op)
        if handler is None:
            raise Fail(f"unknown pickle opcode {op!r} at byte {at} (damaged, or not a data "
                       f"pickle)")
        if handler(r) is _STOP:
            return r.pop()


@_op(b"\x80")                                       # PROTO
def _proto(r):
    if r.read(1)[0] > 5:
        raise Fail("the pickle's protocol is newer than 5")


@_op(b"\x95")                                       # FRAME: a length, then ordinary opcodes
def _frame(r):
    r.read(8)


@_op(b".")                                          # STOP
def _stop(r):
    return _STOP


@_op(b"(")                                          # MARK
def _mark(r):
    r.marks.append(r.stack)
    r.stack = []


@_op(b"0")                                          # POP
def _pop(r):
    r.pop()


@_op(b"1")                                          # POP_MARK
def _pop_mark(r):
    r.pop_mark()


@_op(b"2")                                          # DUP
def _dup(r):
    r.stack.append(r.top())


def _push(value):
    return lambda r: r.stack.append(value)


OPS[b"N"], OPS[b"\x88"], OPS[b"\x89"] = _push(None), _push(True), _push(False)
OPS[b")"] = _push(())


@_op(b"]")                                          # EMPTY_LIST
def _empty_list(r):
    r.stack.append([])


@_op(b"}")                                          # EMPTY_DICT
def _empty_dict(r):
    r.stack.append({})


@_op(b"\x8f")                                       # EMPTY_SET
def _empty_set(r):
    r.stack.append(set())


@_op(b"J")                                          # BININT
def _binint(r):
    r.stack.append(struct.unpack("<i", r.read(4))[0])


@_op(b"K")                                          # BININT1
def _binint1(r):
    r.stack.append(r.read(1)[0])


@_op(b"M")                                          # BININT2
def _binint2(r):
    r.stack.append(struct.unpack("<H", r.read(2))[0])


@_op(b"\x8a")                                       # LONG1
def _long1(r):
    r.stack.append(int.from_bytes(r.read(r.read(1)[0]), "little", signed=True))


@_op(b"\x8b")                                       # LONG4
def _long4(r):
    n = struct.unpack("<i", r.read(4))[0]
    r.stack.append(int.from_bytes(r.read(n), "little", signed=True))


@_op(b"G")                                          # BINFLOAT
def _binfloat(r):
    r.stack.append(struct.unpack(">d", r.read(8))[0])


def _text_number(r, kind):
    text = r.line().decode("ascii", "replace")
    try:
        if kind is float:
            return float(text)
        if text in ("00", "01") and kind == "int":
            return text == "01"
        return int(text.rstrip("L"))
    except ValueError:
        raise Fail(f"a text number {text[:30]!r} at byte {r.pos} is not a number") from None


OPS[b"I"] = lambda r: r.stack.append(_text_number(r, "int"))        # INT
OPS[b"L"] = lambda r: r.stack.append(_text_number(r, "int"))        # LONG
OPS[b"F"] = lambda r: r.stack.append(_text_number(r, float))        # FLOAT


def _text(r, data):
    try:
        return str(data, "utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise Fail(f"a string at byte {r.pos} is not UTF-8 (damaged pickle)") from None


OPS[b"X"] = lambda r: r.stack.append(_text(r, r.read(struct.unpack("<I", r.read(4))[0])))
OPS[b"\x8c"] = lambda r: r.stack.append(_text(r, r.read(r.read(1)[0])))
OPS[b"\x8d"] = lambda r: r.stack.append(_text(r, r.read(struct.unpack("<Q", r.read(8))[0])))
OPS[b"V"] = lambda r: r.stack.append(r.line().decode("raw-unicode-escape"))   # UNICODE
OPS[b"B"] = lambda r: r.stack.append(r.read(struct.unpack("<I", r.read(4))[0]))   # BINBYTES
OPS[b"C"] = lambda r: r.stack.append(r.read(r.read(1)[0]))          # SHORT_BINBYTES
OPS[b"\x8e"] = lambda r: r.stack.append(r.read(struct.unpack("<Q", r.read(8))[0]))
OPS[b"\x96"] = lambda r: r.stack.append(bytearray(r.read(struct.unpack("<Q", r.read(8))[0])))


def _py2_string(r, data):
    """A Python 2 str (STRING, BINSTRING, SHORT_BINSTRING): decoded with `encoding`."""
    if r.encoding == "bytes":
        return data
    try:
        return data.decode(r.encoding)
    except UnicodeDecodeError:
        raise Fail(f"a Python 2 string at byte {r.pos} is not {r.encoding} (pass "
                    f"encoding='latin1' for such old files)") from None


@_op(b"S")                                          # STRING: a quoted repr
def _string(r):
    text = r.line().rstrip()
    if len(text) < 2 or text[:1] != text[-1:] or text[:1] not in (b"'", b'"'):
        raise Fail(f"a quoted string at byte {r.pos} is not quoted (damaged pickle)")
    r.stack.append(_py2_string(r, codecs.escape_decode(text[1:-1])[0]))


OPS[b"T"] = lambda r: r.stack.append(_py2_string(r, r.read(struct.unpack("<i", r.read(4))[0])))
OPS[b"U"] = lambda r: r.stack.append(_py2_string(r, r.read(r.read(1)[0])))


@_op(b"t")                                          # TUPLE
def _tuple(r):
    items = r.pop_mark()                            # (pop_mark replaces r.stack: first)
    r.stack.append(tuple(items))


@_op(b"\x85")                                       # TUPLE1
def _tuple1(r):
    r.stack.append((r.pop(),))


@_op(b"\x86")                                       # TUPLE2
def _tuple2(r):
    b, a = r.pop(), r.pop()
    r.stack.append((a, b))


@_op(b"\x87")                                       # TUPLE3
def _tuple3(r):
    c, b, a = r.pop(), r.pop(), r.pop()
    r.stack.append((a, b, c))


@_op(b"l")                                          # LIST
def _list(r):
    items = r.pop_mark()
    r.stack.append(items)


@_op(b"d")                                          # DICT
def _dict(r):
    items = r.pop_mark()
    r.stack.append(_filled({}, items, r))


@_op(b"\x91")                                       # FROZENSET
def _frozenset(r):
    items = r.pop_mark()
    try:
        r.stack.append(frozenset(items))
    except TypeError:
        raise Fail(f"a frozenset at byte {r.pos} holds an unhashable item") from None


def _filled(target, items, r):
    if len(items) % 2:
        raise Fail(f"a dict at byte {r.pos} has a key without a value (damaged pickle)")
    if type(target) not in (dict, collections.OrderedDict, collections.Counter):
        raise Fail(f"an opcode at byte {r.pos} sets items of a {type(target).__name__}, "
                    f"not a dict")
    for k, v in hashable_pairs(zip(items[::2], items[1::2], strict=True)):
        target[k] = v
    return target


@_op(b"s")                                          # SETITEM
def _setitem(r):
    v, k = r.pop(), r.pop()
    _filled(r.top(), [k, v], r)


@_op(b"u")                                          # SETITEMS
def _setitems(r):
    items = r.pop_mark()
    _filled(r.top(), items, r)


@_op(b"a")                                          # APPEND
def _append(r):
    item = r.pop()
    if type(r.top()) is not list:
        raise Fail(f"an opcode at byte {r.pos} appends to a {type(r.top()).__name__}, not a "
                   f"list")
    r.top().append(item)


@_op(b"e")                                          # APPENDS
def _appends(r):
    items = r.pop_mark()
    if type(r.top()) is not list:
        raise Fail(f"an opcode at byte {r.pos} extends a {type(r.top()).__name__}")
    r.top().extend(items)


@_op(b"\x90")                                       # ADDITEMS
def _additems(r):
    items = r.pop_mark()
    if type(r.top()) is not set:
        raise Fail(f"an opcode at byte {r.pos} adds items to a {type(r.top()).__name__}")
    try:
        r.top().update(items)
    except TypeError:
        raise Fail(f"a set at byte {r.pos} gets an unhashable item") from None


def _memo_get(r, key):
    if key not in r.memo:
        raise Fail(f"byte {r.pos} refers to memo entry {key}, which the pickle never stored")
    r.stack.append(r.memo[key])


def _memo_put(r, key):
    r.memo[key] = r.top()


OPS[b"g"] = lambda r: _memo_get(r, _text_number(r, "int"))           # GET
OPS[b"h"] = lambda r: _memo_get(r, r.read(1)[0])                     # BINGET
OPS[b"j"] = lambda r: _memo_get(r, struct.unpack("<I", r.read(4))[0])   # LONG_BINGET
OPS[b"p"] = lambda r: _memo_put(r, _text_number(r, "int"))           # PUT
OPS[b"q"] = lambda r: _memo_put(r, r.read(1)[0])                     # BINPUT
OPS[b"r"] = lambda r: _memo_put(r, struct.unpack("<I", r.read(4))[0])   # LONG_BINPUT
OPS[b"\x94"] = lambda r: _memo_put(r, len(r.memo))                   # MEMOIZE


@_op(b"c")                                          # GLOBAL module\nname\n
def _global(r):
    module, name = r.line(), r.line()
    r.stack.append(r.value_of(r.find(_text(r, module), _text(r, name))))


@_op(b"\x93")                                       # STACK_GLOBAL
def _stack_global(r):
    name, module = r.pop(), r.pop()
    if not isinstance(module, str) or not isinstance(name, str):
        raise Fail(f"a global at byte {r.pos} is not named by two strings")
    r.stack.append(r.value_of(r.find(module, name)))


@_op(b"R")                                          # REDUCE: func(*args)
def _reduce(r):
    args = r.pop()
    r.stack.append(r.call(r.pop(), args))


@_op(b"\x81")                                       # NEWOBJ: cls.__new__(cls, *args)
def _newobj(r):
    r.pop()                                         # the arguments: unused by these classes
    cls = r.pop()
    if isinstance(cls, Global) and cls.name in ("collections.OrderedDict",
                                                 "collections.Counter", "builtins.set"):
        r.stack.append(r.call(cls, ()))
        return
    raise Fail(f"it makes a new object of {cls!r:.60}, which a checkpoint may not")


@_op(b"b")                                          # BUILD: inst.__setstate__(state)
def _build(r):
    state, inst = r.pop(), r.top()
    if type(inst) is collections.OrderedDict and isinstance(state, dict):
        # a state dict's `_metadata` (module versions), kept as torch keeps it
        for key, value in state.items():
            if key != "_metadata":
                raise Fail(f"an OrderedDict is given the attribute {key!r:.40}")
            inst._metadata = value
        return
    raise Fail(f"it sets the state of a {type(inst).__name__}, which a checkpoint may not")


@_op(b"Q")                                          # BINPERSID: a storage
def _binpersid(r):
    pid = r.pop()
    if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] in ("storage",
                                                                         b"storage")):
        raise Fail(f"a persistent id {pid!r:.60} is not a storage")
    _, kind, key, location, numel = pid[:5]
    view = pid[5] if len(pid) == 6 else None
    dtype = storage_name(kind.name) if isinstance(kind, Global) else None
    if dtype is None or not isinstance(key, str) or not isinstance(location, str) or \
            not is_int(numel) or numel < 0:
        raise Fail(f"a storage id {pid!r:.80} does not name a storage type, key, location "
                    f"and size")
    storage = r.storage(dtype, key, location, numel)
    if view is not None:                       # the old format's view of a storage
        if not (isinstance(view, tuple) and len(view) == 3 and is_int(view[1]) and
                is_int(view[2]) and 0 <= view[1] and view[1] + view[2] <= numel):
            raise Fail(f"a storage view {view!r:.60} lies outside its storage")
        storage = Storage(storage.array[view[1]:view[1] + view[2]], storage.dtype_name)
    r.stack.append(storage)


for _code, _name in ((b"P", "PERSID"), (b"i", "INST"), (b"o", "OBJ"), (b"\x82", "EXT1"),
                     (b"\x83", "EXT2"), (b"\x84", "EXT4"), (b"\x92", "NEWOBJ_EX"),
                     (b"\x97", "NEXT_BUFFER"), (b"\x98", "READONLY_BUFFER")):
    def _refuse(r, name=_name):
        raise Fail(f"the opcode {name} at byte {r.pos - 1} makes objects or reads "
                    f"out-of-band data, which a checkpoint may not")
    OPS[_code] = _refuse
