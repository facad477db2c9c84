"""Samplers, as torch.utils.data.sampler: which dataset indices a DataLoader reads, in which
order, and (BatchSampler) how they are grouped into batches.

    SequentialSampler(data)         0, 1, ..., len(data) - 1
    RandomSampler(data, ...)        a new random order each pass; with replacement=True or
                                    num_samples, that many draws
    SubsetRandomSampler(indices)    the given indices in a new random order each pass
    WeightedRandomSampler(w, n)     n indices drawn with probabilities proportional to w
    BatchSampler(sampler, b, drop)  lists of b indices; the last shorter unless drop_last

The arguments are checked as torch checks them (same refusals, same error classes). The random
orders come from `generator` (a tgx.Generator) or tinygradx's own generator (tgx.manual_seed),
so a seeded run repeats; they are not PyTorch's numbers.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..tensor import Tensor
from ..tensor.creation import generator_rng

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _positive_int(x):
    """torch's test of a count: a Python int (not a bool, not a numpy integer) above 0."""
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


class Sampler:
    """An iterable of dataset indices (subclasses define __iter__, and __len__ if known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order each pass; num_samples (default len(data_source)) indices, drawn
    with replacement when replacement=True, else whole permutations cut to num_samples."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        n = self.num_samples
        if not _positive_int(n):
            empty = " (the dataset is empty)" if num_samples is None else ""
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, "
                             f"but got num_samples={n!r}{empty}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k = len(self.data_source), int(self.num_samples)
        rng = generator_rng("RandomSampler", self.generator)
        if self.replacement:
            if n == 0:
                raise RuntimeError(f"RandomSampler: cannot draw num_samples={k} with "
                                   f"replacement from an empty dataset")
            yield from rng.integers(0, n, size=k).tolist()
            return
        if n == 0:        # torch divides num_samples by len(data_source): ZeroDivisionError
            raise ZeroDivisionError(f"RandomSampler: cannot draw num_samples={k} from an "
                                    f"empty dataset")
        for _ in range(k // n):                  # whole passes, then part of one more
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n).tolist()[:k % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order each pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        order = generator_rng("SubsetRandomSampler", self.generator).permutation(len(self.indices))
        for i in order.tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _weights(weights):
    """weights as a 1-d float64 array, or the error torch gives (ValueError naming the
    weights)."""
    if isinstance(weights, Tensor):
        weights = weights.detach().numpy()
    try:
        arr = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"WeightedRandomSampler: weights must be a sequence of numbers "
                         f"({type(e).__name__}: {e})") from None
    if arr.ndim != 1:
        raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but given "
                         f"weights have shape {tuple(arr.shape)}")
    return arr


class WeightedRandomSampler(Sampler):
    """num_samples indices of range(len(weights)), each drawn with probability proportional
    to its weight; without replacement an index comes at most once (after every index of a
    positive weight is drawn, the zero-weight ones follow, as in torch.multinomial)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _positive_int(num_samples):
            raise ValueError(f"WeightedRandomSampler: num_samples should be a positive integer "
                             f"value, but got num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, "
                             f"but got replacement={replacement!r}")
        self.weights = _weights(weights)
        self.num_samples, self.replacement = int(num_samples), replacement
        self.generator = generator

    def __iter__(self):
        w, k = self.weights, self.num_samples
        if w.size == 0:
            raise RuntimeError("WeightedRandomSampler: weights is empty: no index to draw")
        if not np.isfinite(w).all() or (w < 0).any():
            raise RuntimeError("WeightedRandomSampler: probability tensor contains either "
                               "`inf`, `nan` or element < 0")
        if w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: invalid multinomial distribution (sum "
                               "of probabilities <= 0)")
        if not self.replacement and k > w.size:
            raise RuntimeError(f"WeightedRandomSampler: cannot sample n_sample={k} > "
                               f"len(weights)={w.size} samples without replacement")
        rng = generator_rng("WeightedRandomSampler", self.generator)
        if self.replacement:
            yield from rng.choice(w.size, size=k, p=w / w.sum()).tolist()
            return
        # without replacement: each index's key is an exponential draw over its weight, and
        # the k smallest keys win (the same law as drawing one at a time and removing it);
        # a zero weight's key is inf, so those come last, in a random order among themselves
        with np.errstate(divide="ignore"):
            keys = rng.exponential(size=w.size) / w
        ties = rng.random(w.size)
        yield from np.lexsort((ties, keys))[:k].tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler (any iterable of indices); the last one
    shorter unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _positive_int(batch_size):
            raise ValueError(f"BatchSampler: batch_size should be a positive integer value, "
                             f"but got batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        n = _length(self.sampler, "BatchSampler")
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _length(obj, who):
    """len(obj), or a one-line TypeError saying that obj (a sampler) has no length."""
    try:
        return len(obj)
    except TypeError:
        raise TypeError(f"{who}: the sampler ({type(obj).__name__}) has no len()") from None
