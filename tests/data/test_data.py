"""tinygradx.data (torch.utils.data): datasets, samplers, DataLoader and default_collate,
against torch.utils.data where it is installed (collation, batch sizes, orders without
shuffling, split sizes), and on their own (seeded shuffles repeat)."""
import collections

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.compat as compat
from tinygradx import data


def _np(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_np(v) for v in x) if not hasattr(x, "_fields") else tuple(map(_np, x))
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if hasattr(x, "numpy"):
        arr = x.detach().numpy() if hasattr(x, "detach") else x.numpy()
        return (str(arr.dtype), arr.tolist())
    return x


Point = collections.namedtuple("Point", ["x", "y"])
SAMPLES = [
    [1, 2, 3],
    [1.5, 2.0],
    [True, False],
    [np.float32(1.5), np.float32(2.5)],
    [np.arange(3), np.arange(3) + 1],
    [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    ["a", "b"],
    [(1, "a", 2.5), (2, "b", 3.5)],
    [[1, 2], [3, 4]],
    [{"ids": np.arange(2), "label": 1}, {"ids": np.arange(2) + 5, "label": 0}],
    [Point(1, 2.0), Point(3, 4.0)],
]


@pytest.mark.parametrize("batch", SAMPLES, ids=range(len(SAMPLES)))
def test_default_collate_matches_torch(batch):
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as theirs
    got, want = _np(data.default_collate(batch)), _np(theirs(batch))
    assert got == want


def test_default_collate_of_tensors_and_bad_input():
    out = data.default_collate([tgx.ones(2), tgx.zeros(2)])
    assert out.shape == (2, 2)
    with pytest.raises(TypeError, match="found object"):
        data.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="equal size"):
        data.default_collate([[1, 2], [3]])


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                    (2, 5, False), (2, 5, True), (0, 2, False)])
def test_dataloader_batches_match_torch_without_shuffle(n, batch_size, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n)
    mine = data.DataLoader(data.TensorDataset(tgx.tensor(x), tgx.tensor(y)),
                           batch_size=batch_size, drop_last=drop_last)
    theirs = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=batch_size,
                        drop_last=drop_last)
    assert len(mine) == len(theirs)
    assert [_np(b) for b in mine] == [_np(b) for b in theirs]


def test_shuffles_repeat_with_a_seeded_generator_and_cover_every_item():
    ds = data.TensorDataset(tgx.arange(20))

    def order(gen):
        return [int(i) for (b,) in data.DataLoader(ds, batch_size=4, shuffle=True,
                                                   generator=gen) for i in b]
    a = order(tgx.Generator().manual_seed(1))
    assert a == order(tgx.Generator().manual_seed(1)) and sorted(a) == list(range(20))
    assert a != list(range(20))
    tgx.manual_seed(5)
    b = order(None)
    tgx.manual_seed(5)
    assert b == order(None)
    loader = data.DataLoader(ds, batch_size=4, shuffle=True, generator=tgx.Generator())
    assert [int(i) for (x,) in loader for i in x] != [int(i) for (x,) in loader for i in x]


def test_random_split_sizes_match_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import random_split
    for n, lengths in ((10, [7, 3]), (10, [0.7, 0.3]), (11, [0.5, 0.5]), (7, [0.2, 0.3, 0.5]),
                       (3, [1.0, 0.0])):
        mine = data.random_split(range(n), lengths, generator=tgx.Generator().manual_seed(0))
        theirs = random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in mine] == [len(s) for s in theirs]
        assert sorted(i for s in mine for i in s) == list(range(n))
    with pytest.raises(ValueError, match="does not equal the length of the input dataset 10"):
        data.random_split(range(10), [5, 4])


def test_samplers_iterable_datasets_and_the_rest():
    class Squares(data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i

    class Stream(data.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in data.DataLoader(Stream(), batch_size=3)] == [[0, 1, 2],
                                                                             [3, 4, 5], [6]]
    assert [b.tolist() for b in data.DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        data.DataLoader(Stream(), shuffle=True)
    sampler = data.BatchSampler(data.SequentialSampler(Squares()), 2, drop_last=False)
    assert list(sampler) == [[0, 1], [2, 3], [4]] and len(sampler) == 3
    loader = data.DataLoader(Squares(), batch_sampler=sampler)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    assert [int(x) for x in data.DataLoader(Squares(), batch_size=None)] == [0, 1, 4, 9, 16]
    both = Squares() + data.Subset(Squares(), [4, 0])
    assert [both[i] for i in range(len(both))] == [0, 1, 4, 9, 16, 16, 0] and both[-1] == 0
    collated = data.DataLoader(Squares(), batch_size=2, collate_fn=lambda b: sum(b))
    assert list(collated) == [1, 13, 16]
    sub = data.SubsetRandomSampler([1, 3], generator=tgx.Generator().manual_seed(0))
    assert sorted(sub) == [1, 3]
    assert len(data.RandomSampler(Squares(), replacement=True, num_samples=12)) == 12
    loader = data.DataLoader(Squares(), batch_size=2, num_workers=2, pin_memory=True)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16]]     # in this process
    with pytest.raises(ValueError, match="worker_init_fn is not supported"):
        data.DataLoader(Squares(), num_workers=2, worker_init_fn=print)
    with pytest.raises(ValueError, match="mutually exclusive"):
        data.DataLoader(Squares(), sampler=[0, 1], shuffle=True)


def test_the_lookalike_maps_torch_utils_data():
    with compat.installed():
        from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split
        import torch
        assert DataLoader is data.DataLoader and Dataset is data.Dataset
        assert TensorDataset is data.TensorDataset and random_split is data.random_split
        g = torch.Generator().manual_seed(0)
        assert len(torch.randperm(4, generator=g)) == 4
