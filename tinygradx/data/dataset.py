"""Datasets, as torch.utils.data.dataset: what a DataLoader reads items from.

    Dataset            map-style: __getitem__(index) and __len__()
    IterableDataset    a stream: __iter__(); no indices, so no sampler and no shuffle
    TensorDataset      item i is (t[i] for each tensor)
    StackDataset       item i is (d[i] for each dataset), or {name: d[i]}
    ConcatDataset      map-style datasets one after another (`a + b`)
    ChainDataset       iterable datasets one after another
    Subset             the items at some indices, in their order
    random_split       a dataset cut into Subsets at random
"""
from __future__ import annotations

import bisect
import math
import numbers
import warnings

import numpy as np

from ..tensor.creation import generator_rng

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define __getitem__(index) and __len__()."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define __iter__(); no indices, no shuffling."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


def _first_dim(t):
    shape = getattr(t, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    try:
        return len(t)
    except TypeError:
        raise TypeError(f"TensorDataset: each tensor needs a first dim, got "
                        f"{type(t).__name__}") from None


class TensorDataset(Dataset):
    """Item i is (t[i] for each tensor): tensors that share their first dim."""

    def __init__(self, *tensors):
        sizes = [_first_dim(t) for t in tensors]
        if not tensors or any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: needs tensors of one first-dim size (Size "
                             f"mismatch between tensors), got sizes {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return _first_dim(self.tensors[0])


class StackDataset(Dataset):
    """Item i of several datasets of one length at once: a tuple for StackDataset(a, b), a
    dict for StackDataset(x=a, y=b)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets as positional arguments (items "
                             "are tuples) or as keyword arguments (items are dicts), not both")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("StackDataset: at least one dataset should be passed")
        sizes = [len(d) for d in datasets]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"StackDataset: Size mismatch between datasets: lengths {sizes}")
        self._length = sizes[0]
        self.datasets = args if args else dict(kwargs)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        return [self[i] for i in indices]

    def __len__(self):
        return self._length


def _check_index(name, index, length):
    """index as a non-negative position (a negative one counts from the end), as torch's
    ConcatDataset: ValueError below -length, IndexError at or past length."""
    if isinstance(index, bool) or not isinstance(index, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}: indices must be integers, got {type(index).__name__}")
    index = int(index)
    if index < 0:
        if -index > length:
            raise ValueError(f"{name}: absolute value of index {index} should not exceed "
                             f"dataset length {length}")
        index += length
    if index >= length:
        raise IndexError(f"{name}: index {index} out of range for length {length}")
    return index


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (it has no "
                                "indices); chain iterables with ChainDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = _check_index("ConcatDataset", index, len(self))
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another (read lazily, one at a time)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            total += len(d)
        return total


class Subset(Dataset):
    """The items of dataset at the given indices, in their order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):                  # a list of positions: one dataset call
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        """The items at several positions (what a DataLoader asks for one batch)."""
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split dataset into non-overlapping Subsets of the given lengths (ints that sum to
    len(dataset), or fractions that sum to 1: each gets floor(n * fraction) items, then the
    rest one each from the first), in a random order drawn from generator."""
    n = len(dataset)
    lengths = list(lengths)
    for i, x in enumerate(lengths):
        if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.number)):
            raise TypeError(f"random_split: lengths must be numbers, got {x!r} at index {i}")
    total = sum(lengths)
    if lengths and math.isclose(total, 1) and total <= 1:
        counts = []
        for i, f in enumerate(lengths):
            if not 0 <= f <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and "
                                 f"1, got {f}")
            counts.append(int(math.floor(n * f)))
        for i in range(n - sum(counts)):            # the rest, one each, round robin (torch)
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; that "
                              f"Subset is empty", stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths {lengths} does not equal the "
                         f"length of the input dataset {n} (or give fractions that sum to 1)")
    if any(not isinstance(x, (numbers.Integral, np.integer)) or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints that sum to the "
                         f"dataset's length {n} (or fractions that sum to 1), got {lengths}")
    order = generator_rng("random_split", generator).permutation(n).tolist()
    bounds = np.cumsum([0, *lengths]).tolist()
    return [Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
