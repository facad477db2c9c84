"""Datasets and batches, as torch.utils.data: `tinygradx.data` (the look-alike's
`torch.utils.data`, with its submodules `.dataset`, `.sampler`, `.dataloader` and
`._utils.collate` under the same names).

    dataset.py      Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,
                    ChainDataset, Subset, random_split
    sampler.py      Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,
                    WeightedRandomSampler, BatchSampler
    collate.py      default_collate, default_convert (torch's rules, torch's dtypes)
    dataloader.py   DataLoader, get_worker_info

Each follows torch's arguments, checks and results; tests/data/test_data_oracle.py holds them
to torch itself over generated datasets, batches and argument lists, errors included. Shuffles
draw from `generator` (a `tgx.Generator`) or else from tinygradx's generator
(`tgx.manual_seed`), so a seeded run repeats; the orders are not PyTorch's. Everything runs in
this process (dataloader.py says what `num_workers` means here).
"""
from __future__ import annotations

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DataLoader", "default_collate", "default_convert", "get_worker_info"]
