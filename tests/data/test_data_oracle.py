"""The differential harness of torch.utils.data: default_collate, default_convert, the samplers
and the DataLoader over generated datasets, batches and argument lists, each run on tinygradx's
look-alike and on torch itself (tests/oracle.py), errors included: torch raises -> tinygradx
raises a clear one-line error of the same built-in class; torch returns -> the same batches,
values, dtypes, shapes and container types.

Random orders are not PyTorch's numbers (tinygradx has its own generator), so where a sampler
shuffles, the two are compared through what does not depend on the draw: the batch sizes, the
multiset of indices drawn (without replacement), their range, len().
"""
from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from oracle import Raised, requires_torch, same, to_numpy

pytestmark = requires_torch

Point = collections.namedtuple("Point", ["x", "y"])
DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8,
          np.bool_]
KINDS = ["int", "float", "bool", "np_scalar", "ndarray", "tensor", "str", "bytes"]


# -- samples as recipes, built once per namespace (a tensor leaf is m.tensor(...)) ---------------

class Leaf:
    """One leaf of a sample: its kind and value; a 'tensor' leaf becomes each side's Tensor."""

    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def __repr__(self):
        return f"{self.kind}:{self.value!r}"


def build(recipe, m):
    """The sample a recipe stands for, with m's tensors."""
    if isinstance(recipe, Leaf):
        return m.tensor(recipe.value) if recipe.kind == "tensor" else recipe.value
    if isinstance(recipe, Point):
        return Point(*(build(r, m) for r in recipe))
    if isinstance(recipe, collections.OrderedDict):
        return collections.OrderedDict((k, build(v, m)) for k, v in recipe.items())
    if isinstance(recipe, dict):
        return {k: build(v, m) for k, v in recipe.items()}
    if isinstance(recipe, tuple):
        return tuple(build(r, m) for r in recipe)
    if isinstance(recipe, list):
        return [build(r, m) for r in recipe]
    raise AssertionError(recipe)


@st.composite
def leaf_value(draw, kind, dtype, shape):
    if kind == "int":
        return Leaf(kind, draw(st.integers(-5, 5) | st.sampled_from([2 ** 63, -2 ** 63 - 1,
                                                                     2 ** 40])))
    if kind == "float":
        return Leaf(kind, draw(st.floats(-4, 4, width=32) | st.sampled_from([float("nan"),
                                                                            float("inf")])))
    if kind == "bool":
        return Leaf(kind, draw(st.booleans()))
    if kind == "str":
        return Leaf(kind, draw(st.text("abc", max_size=3)))
    if kind == "bytes":
        return Leaf(kind, draw(st.binary(max_size=3)))
    values = np.array(draw(st.lists(st.integers(0, 3), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), dtype=dtype).reshape(shape)
    if kind == "np_scalar":
        return Leaf(kind, dtype(values.reshape(-1)[0]) if values.size else dtype(1))
    return Leaf(kind, values)


@st.composite
def templates(draw, depth=2):
    """The shape of one sample: a leaf (kind, dtype, shape) or a container of templates."""
    options = ["leaf"] * 3 + (["tuple", "list", "dict", "ordered", "point"] if depth else [])
    what = draw(st.sampled_from(options))
    if what == "leaf":
        return ("leaf", draw(st.sampled_from(KINDS)), draw(st.sampled_from(DTYPES)),
                draw(st.sampled_from([(), (2,), (2, 3)])))
    if what == "point":
        return ("point", [draw(templates(depth - 1)) for _ in range(2)])
    n = draw(st.integers(0 if what in ("tuple", "list") else 1, 3))
    return (what, [draw(templates(depth - 1)) for _ in range(n)])


@st.composite
def sample_of(draw, template, vary=True):
    """A sample of the template; with vary, now and then a leaf of another kind or dtype, a
    key missing, a sequence one longer (the batches torch refuses)."""
    what, *rest = template
    odd = vary and draw(st.integers(0, 9)) == 0
    if what == "leaf":
        kind, dtype, shape = rest
        if odd:
            kind = draw(st.sampled_from(KINDS))
        if vary and draw(st.integers(0, 3)) == 0:
            dtype = draw(st.sampled_from(DTYPES))          # a dtype to promote with
        return draw(leaf_value(kind, dtype, shape))
    items = [draw(sample_of(t, vary)) for t in rest[0]]
    if odd and what in ("tuple", "list"):
        items.append(draw(leaf_value("int", np.int64, ())))
    if what == "tuple":
        return tuple(items)
    if what == "list":
        return items
    if what == "point":
        return Point(*items)
    keys = [f"k{i}" for i in range(len(items))]
    if odd:
        keys[0] = "other"
    pairs = list(zip(keys, items, strict=True))
    return collections.OrderedDict(pairs) if what == "ordered" else dict(pairs)


# -- default_collate, default_convert -----------------------------------------------------------

# the issue's examples, and the rules one by one
COLLATE_CASES = [
    [1, 2.5], [True, 2], [2, True], [True, False], [1.5, 2], [1.5, True], [1, 2],
    [np.float32(1), 2.0], [np.int32(1), 2], [np.float16(1), 2], [np.int8(1), np.uint8(2)],
    [np.True_, 2], [np.True_, 1.5], [1.5, np.True_], [np.float64(1), 2], [2 ** 63, 1],
    [1, 2.5, 2 ** 70], [np.array(1.5), np.array(2)], [np.arange(3), np.arange(3.0)],
    [np.ones(2, np.float32), np.ones(2, np.int64)], [np.ones(2), np.ones(3)],
    [np.array(["a"])], [np.array([object()])], ["a", "b"], [b"a", b"b"], ["a", 1],
    [(1, "a"), (2, "b")], [(1, 2), [3, 4]], [(1, 2), (3,)], [[], []],
    [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}], [{"a": 1}, {"b": 2}], [{}],
    [collections.OrderedDict(b=1, a=2)], [collections.defaultdict(int, a=1)],
    [Point(1, 2.5), Point(3, 4.5)], [range(2), range(2)], [None], [1, None], [1.5, "a"],
    [np.datetime64("2020")], [np.uint8(3), np.int8(-1)],
]


@pytest.mark.parametrize("batch", COLLATE_CASES, ids=[repr(c)[:40] for c in COLLATE_CASES])
def test_default_collate_cases(batch):
    same(lambda m: m.utils.data.default_collate(batch), exact=True)


def test_default_collate_of_tensors():
    for dtypes in ([np.int64, np.float32], [np.uint8, np.int8], [np.bool_, np.float16],
                   [np.float32, np.float64], [np.int32, np.int32]):
        arrays = [np.arange(3).astype(d) for d in dtypes]
        same(lambda m, arrays=arrays: m.utils.data.default_collate(
            [m.tensor(a) for a in arrays]), exact=True)
    same(lambda m: m.utils.data.default_collate([m.ones(2), m.ones(3)]), exact=True)
    same(lambda m: m.utils.data.default_collate([m.ones(2), 2]), exact=True)
    same(lambda m: m.utils.data.default_collate([]), exact=True)
    grads = same(lambda m: m.utils.data.default_collate(
        [m.ones(2, requires_grad=True), m.zeros(2)]).requires_grad)
    assert grads == (True, True)


@settings(max_examples=300)
@given(st.data())
def test_default_collate_over_generated_batches(data):
    template = data.draw(templates())
    batch = [data.draw(sample_of(template)) for _ in range(data.draw(st.integers(1, 4)))]
    same(lambda m: m.utils.data.default_collate(build(batch, m)), exact=True)


@settings(max_examples=100)
@given(st.data())
def test_default_convert_over_generated_samples(data):
    sample = data.draw(sample_of(data.draw(templates()), vary=False))
    same(lambda m: m.utils.data.default_convert(build(sample, m)), exact=True)


# -- samplers -----------------------------------------------------------------------------------

def _draws(m, sampler):
    """list(sampler) twice, as (len(sampler), [pass 1, pass 2])."""
    return len(sampler), [list(sampler), list(sampler)]


def _canon_random(n, length, passes, replacement):
    """What a random sampler's passes must show whatever the draw: the length, each pass's
    count, range, and (without replacement) whole permutations."""
    out = [length]
    for p in passes:
        p = [int(i) for i in p]
        out.append(len(p))
        out.append(all(0 <= i < n for i in p))
        if not replacement:
            whole, rest = divmod(len(p), n) if n else (0, 0)
            perms = [sorted(p[k * n:(k + 1) * n]) == list(range(n)) for k in range(whole)]
            out.append(all(perms) and len(set(p[whole * n:])) == rest)
    return out


@settings(max_examples=150)
@given(n=st.integers(0, 6),
       replacement=st.sampled_from([False, True, 1, None]),
       num_samples=st.sampled_from([None, 1, 3, 8, 0, -2, 2.5, "3"]),
       seeded=st.booleans())
def test_random_sampler(n, replacement, num_samples, seeded):
    def call(m):
        g = m.Generator().manual_seed(3) if seeded else None
        s = m.utils.data.RandomSampler(list(range(n)), replacement, num_samples, generator=g)
        length, passes = _draws(m, s)
        return _canon_random(n, length, passes, replacement)
    same(call, exact=True)


@settings(max_examples=150)
@given(weights=st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, -1.0, float("inf")]), max_size=5)
       | st.sampled_from([[[1.0, 2.0]], ["a"], [1, 2]]),
       num_samples=st.sampled_from([1, 2, 4, 7, 0, True, 2.0]),
       replacement=st.sampled_from([True, False, 1]))
def test_weighted_random_sampler(weights, num_samples, replacement):
    def call(m):
        s = m.utils.data.WeightedRandomSampler(weights, num_samples, replacement)
        length, passes = _draws(m, s)
        w = np.asarray(weights, float)
        positive = {i for i in range(len(w)) if w[i] > 0}
        out = [length]
        for p in passes:
            out += [len(p), all(0 <= i < len(w) for i in p)]
            if replacement:
                out.append(all(i in positive for i in p))
            else:                # distinct, and the positive weights drawn before any zero
                head = p[:len(positive)]
                out += [len(set(p)) == len(p),
                        set(head) == positive if len(p) >= len(positive) else
                        set(p) <= positive]
        return out
    same(call, exact=True)


@settings(max_examples=100)
@given(n=st.integers(0, 7), indices=st.lists(st.integers(0, 6), max_size=6, unique=True),
       batch_size=st.sampled_from([1, 2, 3, 0, -1, 2.5, True, None]),
       drop_last=st.sampled_from([False, True, 1, None]))
def test_sequential_subset_and_batch_samplers(n, indices, batch_size, drop_last):
    same(lambda m: _draws(m, m.utils.data.SequentialSampler(range(n))), exact=True)
    same(lambda m: sorted(list(m.utils.data.SubsetRandomSampler(indices))) +
         [len(m.utils.data.SubsetRandomSampler(indices))], exact=True)
    same(lambda m: _draws(m, m.utils.data.BatchSampler(range(n), batch_size, drop_last)),
         exact=True)
    same(lambda m: _draws(m, m.utils.data.BatchSampler(iter(range(n)), 2, False))[1],
         exact=True)


# -- the DataLoader -----------------------------------------------------------------------------

RANDOM_SAMPLERS = ("random", "random_repl", "subset_random", "weighted")


def make_dataset(m, kind, items):
    data = m.utils.data
    if kind == "list":
        return items
    if kind == "tensors":
        n = len(items)
        return data.TensorDataset(m.tensor(np.arange(2 * n, dtype=np.float32).reshape(n, 2)),
                                  m.tensor(np.arange(n)))
    if kind in ("map", "getitems"):
        class Items(data.Dataset):
            def __getitem__(self, i):
                return items[i]

            def __len__(self):
                return len(items)
        if kind == "getitems":
            Items.__getitems__ = lambda self, idx: [("batch", items[i]) for i in idx]
        return Items()

    class Stream(data.IterableDataset):
        def __iter__(self):
            return iter(items)
    if kind == "iterable_len":
        Stream.__len__ = lambda self: len(items)
    return Stream()


def make_loader(m, kind, items, args):
    data = m.utils.data
    kw = dict(args)
    ds = make_dataset(m, kind, items)
    n = len(items)
    sampler = kw.pop("sampler")
    kw["sampler"] = {
        None: None,
        "seq": lambda: data.SequentialSampler(ds),
        "list": lambda: list(reversed(range(n))),
        "random": lambda: data.RandomSampler(ds),
        "random_repl": lambda: data.RandomSampler(ds, replacement=True, num_samples=5),
        "subset_random": lambda: data.SubsetRandomSampler(list(range(0, n, 2))),
        "weighted": lambda: data.WeightedRandomSampler([1.0] * n, 4),
    }[sampler]
    kw["sampler"] = kw["sampler"]() if kw["sampler"] else None
    kw["batch_sampler"] = {
        None: None,
        "lists": [[i, i] for i in range(n)][::-1],
        "batch_seq": data.BatchSampler(data.SequentialSampler(range(n)), 2, True),
    }[kw["batch_sampler"]]
    kw["collate_fn"] = {None: None, "count": len, "first": lambda b: b[0]}[kw["collate_fn"]]
    if kw.pop("seeded"):
        kw["generator"] = m.Generator().manual_seed(0)
    return m.utils.data.DataLoader(ds, **kw)


@st.composite
def loader_args(draw):
    return dict(
        batch_size=draw(st.sampled_from([1, 2, 3, 4, 1, 2, None, 0, -1, 2.5, True, "2"])),
        shuffle=draw(st.sampled_from([None, False, True])),
        drop_last=draw(st.sampled_from([False, True, False, 1])),
        sampler=draw(st.sampled_from([None, None, None, "seq", "list", *RANDOM_SAMPLERS])),
        batch_sampler=draw(st.sampled_from([None, None, None, "lists", "batch_seq"])),
        collate_fn=draw(st.sampled_from([None, None, "count", "first"])),
        num_workers=draw(st.sampled_from([0, 0, 0, 0, 2, -1])),
        prefetch_factor=draw(st.sampled_from([None, None, None, 2])),
        persistent_workers=draw(st.sampled_from([False, False, True])),
        seeded=draw(st.booleans()))


def _ids(batches):
    """The dataset ids in a pass's batches (ints, or tensors of them), in order."""
    out = []
    for b in batches:
        out += [b] if isinstance(b, int) else [int(i) for i in to_numpy(b).reshape(-1)]
    return out


@settings(max_examples=400)
@given(st.data())
def test_dataloader_over_generated_datasets_and_arguments(data):
    args = data.draw(loader_args())
    randomly = bool(args["shuffle"]) or args["sampler"] in RANDOM_SAMPLERS
    n = data.draw(st.integers(0, 7))
    if randomly:                         # items are their own ids: the draw is checked by them
        kind = data.draw(st.sampled_from(["list", "map", "iterable"]))
        if args["collate_fn"] == "first":
            args["collate_fn"] = None
        items = list(range(n))
    else:
        kind = data.draw(st.sampled_from(["list", "map", "getitems", "tensors", "iterable",
                                          "iterable_len"]))
        template = data.draw(templates(depth=1))
        items = [data.draw(sample_of(template, vary=False)) for _ in range(n)]

    def loader(m):
        return make_loader(m, kind, build(items, m) if not randomly else items, args)

    _, made = same(lambda m: type(loader(m)).__name__, exact=True)          # construction
    if isinstance(made, Raised):
        return
    same(lambda m: len(loader(m)), exact=True)
    if args["num_workers"] > 0:
        return               # torch would start worker processes; tinygradx loads in-process
    if not randomly:
        same(lambda m: [list(loader(m)), list(loader(m))], exact=True)
        return

    def canon(m):
        it = loader(m)
        passes = [list(it), list(it)]
        counted = args["collate_fn"] == "count"            # each batch is its size

        def size(b):
            return b if counted else 1 if isinstance(b, int) else to_numpy(b).size
        sizes = [[size(b) for b in p] for p in passes]
        replacement = args["sampler"] in ("random_repl", "weighted")
        ids = [[] if counted else _ids(p) for p in passes]
        # which ids a pass holds is the draw's when some are dropped or drawn twice
        whole = [len(i) if replacement or args["drop_last"] else sorted(i) for i in ids]
        return sizes, [all(0 <= j < n for j in i) for i in ids], whole
    same(canon, exact=True)


def test_dataloader_issue_examples():
    """The issue's examples: batch_size 0, -1, 2.5 over an IterableDataset; shuffle=True over
    an empty dataset; the exclusive arguments; attributes set after construction."""
    for bs in (0, -1, 2.5):
        same(lambda m, bs=bs: list(make_loader(m, "iterable", list(range(5)), dict(
            batch_size=bs, shuffle=None, drop_last=False, sampler=None, batch_sampler=None,
            collate_fn=None, seeded=False))), exact=True)
    same(lambda m: list(m.utils.data.DataLoader([], shuffle=True)), exact=True)
    same(lambda m: m.utils.data.DataLoader([1, 2], sampler=[0, 1], shuffle=True), exact=True)
    same(lambda m: m.utils.data.DataLoader([1, 2], batch_sampler=[[0]], batch_size=2),
         exact=True)
    same(lambda m: m.utils.data.DataLoader([1, 2], batch_size=None, drop_last=True),
         exact=True)

    def set_after(m, name):
        loader = m.utils.data.DataLoader([1, 2])
        setattr(loader, name, 3)
    for name in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset"):
        same(lambda m, name=name: set_after(m, name), exact=True)
    same(lambda m: len(iter(m.utils.data.DataLoader([1, 2, 3], batch_size=2))), exact=True)
    same(lambda m: list(m.utils.data.DataLoader(
        [{"a": np.ones(2), "b": (1, "x")}] * 3, batch_size=None)), exact=True)


def test_datasets():
    data_calls = [
        lambda m: [m.utils.data.ConcatDataset([[1, 2], [3]])[i] for i in (0, 2, -1, -3)],
        lambda m: m.utils.data.ConcatDataset([[1, 2], [3]])[-4],
        lambda m: m.utils.data.ConcatDataset([[1, 2], [3]])[3],
        lambda m: m.utils.data.ConcatDataset([]),
        lambda m: len(m.utils.data.ConcatDataset([[1], [], [2, 3]])),
        lambda m: m.utils.data.Subset([10, 11, 12], [2, 0]).__getitems__([0, 1]),
        lambda m: [m.utils.data.StackDataset([1, 2], [3, 4])[1],
                   m.utils.data.StackDataset(a=[1, 2], b=[3, 4])[0]],
        lambda m: m.utils.data.StackDataset([1], [2, 3]),
        lambda m: m.utils.data.StackDataset([1], b=[2]),
        lambda m: m.utils.data.StackDataset(),
        lambda m: m.utils.data.TensorDataset(m.zeros(2), m.zeros(3)),
        lambda m: [len(s) for s in m.utils.data.random_split(range(7), [0.2, 0.3, 0.5])],
        lambda m: [len(s) for s in m.utils.data.random_split(range(3), [0.5, 0.6])],
        lambda m: [len(s) for s in m.utils.data.random_split(range(3), [1.5, -0.5])],
        lambda m: [len(s) for s in m.utils.data.random_split(range(3), [2, 2])],
        lambda m: m.utils.data.get_worker_info(),
    ]
    for call in data_calls:
        same(call, exact=True)


def test_submodule_import_paths():
    """torch code imports from torch.utils.data's submodules: the look-alike has them, each
    name the same object as the package's."""
    import tinygradx.compat as compat
    import torch
    for sub, names in {"dataloader": ["DataLoader", "default_collate", "get_worker_info"],
                       "dataset": ["Dataset", "IterableDataset", "TensorDataset", "Subset",
                                   "ConcatDataset", "ChainDataset", "StackDataset",
                                   "random_split"],
                       "sampler": ["Sampler", "SequentialSampler", "RandomSampler",
                                   "SubsetRandomSampler", "WeightedRandomSampler",
                                   "BatchSampler"],
                       "_utils.collate": ["default_collate", "default_convert", "collate"]}.items():
        theirs = __import__(f"torch.utils.data.{sub}", fromlist=names)
        assert all(hasattr(theirs, n) for n in names), sub         # torch has them there too
        with compat.installed():
            ours = __import__(f"torch.utils.data.{sub}", fromlist=names)
            import torch as lookalike
            for n in names:
                assert getattr(ours, n) is not None
                if hasattr(torch.utils.data, n):
                    assert getattr(ours, n) is getattr(lookalike.utils.data, n), (sub, n)
    assert torch.utils.data.DataLoader is not None
