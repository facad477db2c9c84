"""The DataLoader, as torch.utils.data.dataloader's: batches of a dataset, in this process.

A map-style dataset is read through a sampler of indices (SequentialSampler, or RandomSampler
with shuffle=True, or yours) grouped by a BatchSampler of batch_size (or yours, batch_sampler=),
each batch's samples given to collate_fn (default_collate). An IterableDataset is read in its
own order, batch_size items at a time. With batch_size=None there is no batching: each item
goes through default_convert (numpy made Tensors).

The arguments are checked as torch checks them, in torch's order, with torch's error classes:
a batch_size of 0, -1 or 2.5 is refused (by the BatchSampler, for iterable datasets too),
shuffle=True over an empty dataset is refused (RandomSampler's num_samples=0), sampler and
batch_sampler exclude shuffle, batch_size and drop_last as in torch; setting batch_size,
sampler, batch_sampler, drop_last or dataset after construction is refused.

`num_workers > 0` is accepted and runs in this process, one batch after another: tinygradx
computes on one process, and the batches and their order are those of `num_workers=0`
(`get_worker_info()` is None, as in torch's main process). `pin_memory`, `timeout`,
`prefetch_factor`, `persistent_workers`, `multiprocessing_context` and `in_order` are checked
as torch checks them and change nothing; a `worker_init_fn` with workers is refused, since no
worker ever starts to call it.
"""
from __future__ import annotations

import multiprocessing

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


def get_worker_info():
    """None: every batch is loaded in this process (torch's answer in its main process)."""
    return None


class _Forever(Sampler):
    """The sampler of an IterableDataset (torch's): None, forever; the stream decides."""

    def __iter__(self):
        while True:
            yield None


_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers, worker_init_fn,
                   multiprocessing_context):
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(f"DataLoader: num_workers must be an int, got {num_workers!r}")
    if num_workers < 0:
        raise ValueError("DataLoader: num_workers option should be non-negative; use "
                         "num_workers=0 to disable multiprocessing")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError(f"DataLoader: timeout option should be a non-negative number, got "
                         f"{timeout!r}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                         "multiprocessing (num_workers > 0); leave it None otherwise")
    if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or
                                        prefetch_factor < 0):
        raise ValueError(f"DataLoader: prefetch_factor option should be non-negative, got "
                         f"{prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None:
        if num_workers == 0:
            raise ValueError(f"DataLoader: multiprocessing_context can only be used with "
                             f"multi-process loading (num_workers > 0), but got "
                             f"num_workers={num_workers}")
        methods = multiprocessing.get_all_start_methods()
        if isinstance(multiprocessing_context, str) and multiprocessing_context not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context option should specify a "
                             f"valid start method in {methods!r}, but got "
                             f"multiprocessing_context={multiprocessing_context!r}")
    if worker_init_fn is not None and num_workers > 0:
        raise ValueError("DataLoader: worker_init_fn is not supported with num_workers > 0: "
                         "tinygradx loads batches in this process (num_workers is accepted "
                         "and starts no worker)")


class DataLoader:
    """Batches of a dataset, as torch.utils.data.DataLoader (in this process; see the module
    docstring for num_workers and the checks)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers,
                       worker_init_fn, multiprocessing_context)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle!r} (a stream "
                                 f"decides its own order)")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler!r}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler="
                                 f"{batch_sampler!r}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and "
                             "is mutually exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _Forever()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.__dict__.update(
            dataset=dataset, batch_size=batch_size, drop_last=drop_last, sampler=sampler,
            batch_sampler=batch_sampler, generator=generator, collate_fn=collate_fn,
            num_workers=num_workers, prefetch_factor=prefetch_factor, pin_memory=pin_memory,
            pin_memory_device=pin_memory_device, timeout=timeout,
            worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
            persistent_workers=persistent_workers, in_order=in_order, _iterable=iterable)

    def __setattr__(self, name, value):
        if name in _FROZEN:
            raise ValueError(f"DataLoader: {name} attribute should not be set after "
                             f"DataLoader is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _Batches(self)

    def __len__(self):
        if self._iterable:
            try:
                n = len(self.dataset)
            except TypeError:
                raise TypeError(f"DataLoader: the IterableDataset "
                                f"{type(self.dataset).__name__} has no len(), so neither has "
                                f"its DataLoader") from None
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        try:
            return len(self._index_sampler)
        except TypeError:
            raise TypeError(f"DataLoader: its sampler ({type(self._index_sampler).__name__}) "
                            f"has no len()") from None


class _Batches:
    """One pass over a DataLoader (torch's single-process iterator): next() reads the next
    batch (or item), len() is the loader's."""

    def __init__(self, loader):
        self.loader = loader
        self._indices = iter(loader._index_sampler)
        self._stream = iter(loader.dataset) if loader._iterable else None

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def __next__(self):
        loader = self.loader
        index = next(self._indices)                 # StopIteration ends the pass
        if self._stream is not None:
            if not loader._auto_collation:
                return loader.collate_fn(next(self._stream))
            data = []
            for _ in index:
                try:
                    data.append(next(self._stream))
                except StopIteration:
                    break
            if not data or (loader.drop_last and len(data) < len(index)):
                raise StopIteration
            return loader.collate_fn(data)
        if not loader._auto_collation:
            return loader.collate_fn(loader.dataset[index])
        getitems = getattr(loader.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [loader.dataset[i] for i in index]
        return loader.collate_fn(data)
