"""The differential harness of torch.save / torch.load: generated structures (tensors of every
dtype, with and without requires_grad, the same tensor twice, views of one tensor, numbers,
strings, bytes, None, dicts, OrderedDicts, lists, tuples, sets, nested), each
- saved and loaded by tinygradx's look-alike and by torch (a round trip each), and
- saved by torch and loaded by both (tinygradx reads torch's files: zip and the old format),
under every form of map_location, compared with exact=True (tests/oracle.py): values, dtypes,
shapes, container types, error classes, and the aliasing: which loaded objects are one object,
and which tensors see an in-place change made through another (one storage).
"""
from __future__ import annotations

import collections

import numpy as np
from hypothesis import given, settings, strategies as st

from oracle import Raised, assert_equal, lookalike, requires_torch, run, torch

pytestmark = requires_torch

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


# -- structures as recipes, built once per namespace ----------------------------------------------

@st.composite
def recipes(draw, depth=3, empty_bytes=True):
    """A structure's recipe: ("tensor", dtype, shape, grad, values) leaves, ("alias", k) and
    ("view", k, how) naming the k-th tensor built before, Python leaves, containers."""
    kinds = ["tensor"] * 4 + ["alias", "view"] * 2 + ["int", "float", "str", "bytes",
                                                      "none", "bool"] + \
        (["dict", "odict", "list", "tuple", "set"] if depth else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "tensor":
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(st.sampled_from([(), (0,), (3,), (2, 3), (1, 4)]))
        values = draw(st.lists(st.integers(0, 5), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape))))
        grad = dtype.startswith("float") and draw(st.booleans())
        return ("tensor", dtype, shape, grad, values)
    if kind in ("alias", "view"):
        return (kind, draw(st.integers(0, 3)), draw(st.sampled_from(["slice", "t", "flat",
                                                                       "detach"])))
    if kind == "int":
        return ("py", draw(st.integers(-2 ** 70, 2 ** 70)))
    if kind == "float":
        return ("py", draw(st.floats(allow_nan=True, allow_infinity=True)))
    if kind == "str":
        return ("py", draw(st.text(max_size=4)))
    if kind == "bytes":       # torch pickles b"" as a call of builtins.bytes, which its own
        return ("py", draw(st.binary(min_size=0 if empty_bytes else 1, max_size=4)))  # load refuses
    if kind == "bool":
        return ("py", draw(st.booleans()))
    if kind == "none":
        return ("py", None)
    if kind == "set":
        return ("set", draw(st.sets(st.integers(-3, 3) | st.text(max_size=2), max_size=3)))
    items = draw(st.lists(recipes(depth - 1, empty_bytes), max_size=3))
    if kind in ("dict", "odict"):
        keys = draw(st.lists(st.text(max_size=3) | st.integers(-5, 5), min_size=len(items),
                             max_size=len(items), unique=True))
        return (kind, list(zip(keys, items, strict=True)))
    return (kind, items)


@st.composite
def structures(draw, empty_bytes=True):
    """A checkpoint-like structure: a dict of two to six entries, nested below, the first a
    tensor (that the aliases and views of the rest may name)."""
    first = draw(recipes(0).filter(lambda r: r[0] == "tensor"))
    items = [first] + draw(st.lists(recipes(2, empty_bytes), min_size=1, max_size=5))
    return ("dict", [(f"k{i}", r) for i, r in enumerate(items)])


def build(recipe, m, made=None):
    """The structure with m's tensors (m is torch or the look-alike); `made` lists the
    tensors built so far, which aliases and views refer to."""
    made = [] if made is None else made
    kind = recipe[0]
    if kind == "tensor":
        _, dtype, shape, grad, values = recipe
        t = m.tensor(np.array(values, dtype=dtype).reshape(shape), requires_grad=grad)
        made.append(t)
        return t
    if kind in ("alias", "view"):
        if not made:
            return None
        base = made[recipe[1] % len(made)]
        if kind == "alias":
            return base
        base = base.detach()
        how = recipe[2]
        if how == "slice" and base.ndim:
            return base[1:]
        if how == "t" and base.ndim == 2:
            return base.t()
        if how == "flat":
            return base.reshape(-1)
        return base
    if kind == "py":
        return recipe[1]
    if kind == "set":
        return set(recipe[1])
    if kind in ("dict", "odict"):
        pairs = [(k, build(v, m, made)) for k, v in recipe[1]]
        return dict(pairs) if kind == "dict" else collections.OrderedDict(pairs)
    items = [build(r, m, made) for r in recipe[1]]
    return items if kind == "list" else tuple(items)


# -- what is compared ------------------------------------------------------------------------------

def tensors_in(obj):
    """The tensors of a loaded structure, in a fixed order (sets hold none)."""
    out, todo = [], [obj]
    while todo:
        x = todo.pop()
        if hasattr(x, "requires_grad") and hasattr(x, "shape"):
            out.append(x)
        elif isinstance(x, dict):
            todo.extend(reversed(list(x.values())))
        elif isinstance(x, (list, tuple)):
            todo.extend(reversed(x))
    return out


def aliasing(m, obj):
    """Which loaded tensors are one object, and which see a change made in place through
    another: what sharing a storage means to a program."""
    ts = tensors_in(obj)
    same = [[a is b for b in ts] for a in ts]
    seen = []
    for t in ts:
        if t.dtype in (m.bool,) or t.numel() == 0:
            seen.append(None)
            continue
        before = [np.array(x.detach().numpy(), copy=True) for x in ts]
        with m.no_grad():
            t.add_(1)
        after = [x.detach().numpy() for x in ts]
        seen.append([bool(not np.array_equal(a, b)) if a.shape == b.shape else None
                     for a, b in zip(before, after, strict=True)])
        with m.no_grad():
            t.sub_(1)
    return same, seen, [bool(t.requires_grad) for t in ts]


def outcome(m, load):
    """load()'s structure and its aliasing, or what it raised."""
    got = run(load)
    if isinstance(got, Raised):
        return got, None
    return got, aliasing(m, got)


def check(ours, theirs):
    assert_equal(ours[0], theirs[0], exact=True)
    assert ours[1] == theirs[1], f"aliasing {ours[1]}, torch {theirs[1]}"


MAP_LOCATIONS = {
    "none": None, "cpu": "cpu", "device": "device", "dict": {"cuda:0": "cpu"},
    "dict_cpu": {"cpu": "cpu"}, "keep": lambda s, loc: s, "default": lambda s, loc: None,
    "to_cpu": lambda s, loc: s.cpu(), "cuda": "cuda", "dict_cuda": {"cpu": "cuda:0"},
    "gpu": "gpu", "cpu0": "cpu:0", "int": 0, "dict_device": "dict_device",
    "returns_int": lambda s, loc: 3,
}
# not here: a function calling storage.cuda(), where torch without a GPU fails inside its own
# code with a TypeError ('<' between None and int); tinygradx's RuntimeError says why
# (tests/io/test_saving.py)


def map_location(m, name):
    value = MAP_LOCATIONS[name]
    if value == "device":
        return m.device("cpu")
    if value == "dict_device":
        return {"cpu": m.device("cpu")}
    return value


@settings(max_examples=150)
@given(recipe=structures(), ml=st.sampled_from(sorted(MAP_LOCATIONS)),
       legacy=st.booleans())
def test_torch_save_then_load_on_both(tmp_path_factory, recipe, ml, legacy):
    """A file torch wrote, read by tinygradx and by torch: the checkpoint reader."""
    path = tmp_path_factory.mktemp("t") / "theirs.pt"
    torch.save(build(recipe, torch), path, _use_new_zipfile_serialization=not legacy)
    look = lookalike()
    theirs = outcome(torch, lambda: torch.load(path, map_location=map_location(torch, ml)))
    ours = outcome(look, lambda: look.load(path, map_location=map_location(look, ml)))
    check(ours, theirs)


@settings(max_examples=150)
@given(recipe=structures(empty_bytes=False), ml=st.sampled_from(sorted(MAP_LOCATIONS)))
def test_round_trips_on_each(tmp_path_factory, recipe, ml):
    """Each saves and loads its own: tinygradx's file behaves as torch's."""
    folder = tmp_path_factory.mktemp("r")
    look = lookalike()
    torch.save(build(recipe, torch), folder / "theirs.pt")
    look.save(build(recipe, look), folder / "ours.pt")
    theirs = outcome(torch, lambda: torch.load(folder / "theirs.pt",
                                               map_location=map_location(torch, ml)))
    ours = outcome(look, lambda: look.load(folder / "ours.pt",
                                           map_location=map_location(look, ml)))
    check(ours, theirs)


def test_the_issue_examples(tmp_path):
    """One tensor under two keys is one tensor; {'cuda:0': 'cpu'} maps; views share."""
    look = lookalike()
    for m, name in ((torch, "t.pt"), (look, "o.pt")):
        t = m.arange(6.0)
        m.save({"a": t, "b": t, "v": t[2:4]}, tmp_path / name)
    theirs = outcome(torch, lambda: torch.load(tmp_path / "t.pt", map_location={"cuda:0": "cpu"}))
    ours = outcome(look, lambda: look.load(tmp_path / "o.pt", map_location={"cuda:0": "cpu"}))
    check(ours, theirs)
    assert ours[1][0][0][1] is True                           # a is b
