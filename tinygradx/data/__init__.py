"""Datasets and batches, as torch.utils.data: `tinygradx.data` (the look-alike's
`torch.utils.data`).

    Dataset, IterableDataset   the base classes (a map-style dataset has __getitem__ and
                               __len__; an iterable one __iter__)
    TensorDataset, Subset, ConcatDataset, random_split
    Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler
    DataLoader, default_collate

DataLoader follows torch's arguments (batch_size, shuffle, sampler, batch_sampler, drop_last,
collate_fn, generator) and default_collate torch's rules: a batch of Tensors, numpy arrays or
numbers is stacked into one Tensor (floats as float64, ints as int64, bools as bool, as
torch), strings stay a list, and tuples, lists, dicts and named tuples are collated field by
field. Shuffles draw from `generator` (a `tgx.Generator`) or else from tinygradx's generator
(`tgx.manual_seed`), so a seeded run repeats; the orders are not PyTorch's.

`num_workers > 0` is accepted and runs in this process, one batch after another: tinygradx
computes on one process, and the batches and their order are those of `num_workers=0`.
`pin_memory`, `persistent_workers`, `prefetch_factor` and `timeout` are accepted for the same
reason and change nothing; a `worker_init_fn` is refused, since no worker ever starts.
"""
from __future__ import annotations

import bisect
import collections.abc
import math
import numbers

import numpy as np

from ..tensor.creation import generator_rng, stack
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "BatchSampler", "DataLoader", "default_collate"]


# -- datasets --------------------------------------------------------------------------------

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


class TensorDataset(Dataset):
    """Item i is (t[i] for each tensor): tensors that share their first dim."""

    def __init__(self, *tensors):
        sizes = [len(t) for t in tensors]
        if not tensors or any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: needs tensors of one first-dim size, got sizes "
                             f"{sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
    """The items of dataset at the given indices, in their order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: an IterableDataset has no indices; chain "
                                "the iterables instead")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} out of range for length "
                                 f"{len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(dataset, lengths, generator=None):
    """Split dataset into non-overlapping Subsets of the given lengths (ints that sum to
    len(dataset), or fractions that sum to 1), in a random order drawn from generator."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        if any(not 0 <= f <= 1 for f in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1], got {lengths}")
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):            # the rest, one each, round robin (torch)
            counts[i % len(counts)] += 1
        lengths = counts
    if any(not isinstance(x, (int, np.integer)) or x < 0 for x in lengths) or sum(lengths) != n:
        raise ValueError(f"random_split: lengths must be non-negative ints that sum to the "
                         f"dataset's length {n} (or fractions that sum to 1), got {lengths}")
    order = generator_rng("random_split", generator).permutation(n).tolist()
    bounds = np.cumsum([0, *lengths]).tolist()
    return [Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


# -- samplers: which indices, in which order -------------------------------------------------

class Sampler:
    """An iterable of dataset indices (subclasses define __iter__, and __len__ if known)."""

    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order each pass (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples must be a positive int, got "
                             f"{num_samples!r}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), generator_rng("RandomSampler", self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, size=self.num_samples).tolist())
        passes = -(-self.num_samples // n) if n else 0
        order = [i for _ in range(passes) for i in rng.permutation(n).tolist()]
        return iter(order[:self.num_samples])

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order each pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        order = generator_rng("SubsetRandomSampler", self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler; the last one shorter unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# -- collation: a list of samples -> one batch ------------------------------------------------

def default_collate(batch):
    """torch's default_collate: Tensors, arrays and numbers stacked into one Tensor, strings
    kept as a list, dicts / tuples / lists / named tuples collated field by field."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch))
    if isinstance(elem, np.ndarray) or isinstance(elem, np.generic) and not isinstance(
            elem, (np.str_, np.bytes_)):
        arrays = [np.asarray(b) for b in batch]
        if arrays[0].dtype.kind not in "biuf":
            raise TypeError(f"default_collate: cannot batch numpy arrays of dtype "
                            f"{arrays[0].dtype}")
        return Tensor(np.stack(arrays))
    if isinstance(elem, (bool, numbers.Integral)):
        return Tensor(np.array(batch, dtype=np.bool_ if isinstance(elem, bool) else np.int64))
    if isinstance(elem, numbers.Real):
        return Tensor(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return batch                      # as given: a list, or a tuple of one field
    if isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):          # a named tuple
        return type(elem)(*(default_collate(s) for s in zip(*batch, strict=True)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise ValueError("default_collate: each element in the batch should be of equal "
                             "size")
        return [default_collate(s) for s in zip(*batch, strict=True)]
    raise TypeError(f"default_collate: cannot batch elements of type {type(elem).__name__}; "
                    f"expected Tensors, numpy arrays, numbers, strings, dicts or sequences "
                    f"(pass collate_fn=)")


# -- DataLoader ------------------------------------------------------------------------------

class DataLoader:
    """Batches of a dataset, as torch.utils.data.DataLoader (in this process; see the module
    docstring for num_workers)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, prefetch_factor=None,
                 persistent_workers=False, generator=None, **kwargs):
        if kwargs:
            raise TypeError(f"DataLoader: unexpected arguments {sorted(kwargs)}")
        if worker_init_fn is not None:
            raise ValueError("DataLoader: worker_init_fn is not supported: tinygradx loads "
                             "batches in this process (num_workers is accepted and starts no "
                             "worker)")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative int, got "
                             f"{num_workers!r}")
        self.dataset, self.num_workers, self.generator = dataset, num_workers, generator
        self.batch_size, self.drop_last = batch_size, bool(drop_last)
        self.collate_fn = collate_fn
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset takes no shuffle, sampler or "
                                 "batch_sampler (it decides its own order)")
        elif batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler is mutually exclusive with "
                                 "batch_size, shuffle, sampler and drop_last")
            self.batch_size, self.drop_last = None, False
        elif sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler is mutually exclusive with shuffle")
        if not self._iterable and sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            self.collate_fn = default_collate if self.batch_size is not None or \
                batch_sampler is not None else _no_collate

    def __iter__(self):
        if self._iterable:
            return self._iter_stream()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self.collate_fn([self.dataset[i] for i in idx]) for idx in self.batch_sampler)

    def _iter_stream(self):
        if self.batch_size is None:
            yield from (self.collate_fn(x) for x in self.dataset)
            return
        batch = []
        for x in self.dataset:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)                     # TypeError if the stream has no length
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


def _no_collate(x):
    """batch_size=None: each item as it is, numpy arrays and numbers made Tensors (torch's
    default_convert)."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return Tensor(x)
    return x
