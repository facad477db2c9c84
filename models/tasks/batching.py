"""Padding (src, tgt) id pairs into arrays for teacher forcing, and deterministic batch iteration.

For a pair ``([5, 6, 7], [8, 9])`` the batch rows are::

    src      = 5 6 7          src_key_padding = F F F
    tgt_in   = <bos> 8 9      (what the decoder reads)
    tgt_out  = 8 9 <eos>      (what it must predict at each position)

Shorter rows are padded with ``<pad>`` = 0 on the right; ``tgt_key_padding`` marks those positions,
which the loss must ignore.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .vocab import BOS, EOS, PAD

IdPair = tuple[Sequence[int], Sequence[int]]


@dataclass
class Batch:
    """Arrays for one encoder-decoder step (all int64 / bool numpy arrays)."""

    src: np.ndarray              # (B, S) source ids, PAD-padded
    tgt_in: np.ndarray           # (B, T) <bos> + target, PAD-padded
    tgt_out: np.ndarray          # (B, T) target + <eos>, PAD-padded
    src_key_padding: np.ndarray  # (B, S) True where src is padding
    tgt_key_padding: np.ndarray  # (B, T) True where tgt_in/tgt_out are padding

    def __len__(self) -> int:
        return self.src.shape[0]

    @property
    def n_tokens(self) -> int:
        """Number of real (non-pad) target tokens, <eos> included: the loss normaliser."""
        return int((~self.tgt_key_padding).sum())


def pad_batch(pairs: Sequence[IdPair], pad_id: int = PAD, bos_id: int = BOS,
              eos_id: int = EOS) -> Batch:
    """Pad ``(src_ids, tgt_ids)`` pairs (ids without bos/eos) into a :class:`Batch`.

    Every source must be non-empty: a row that is all padding would leave attention with nothing to
    attend to (a softmax over only masked keys).
    """
    if len(pairs) == 0:
        raise ValueError("pad_batch needs at least one pair")
    B = len(pairs)
    S = max(len(s) for s, _ in pairs)
    T = max(len(t) for _, t in pairs) + 1  # +1 for <bos> (in) / <eos> (out)
    if S == 0 or any(len(s) == 0 for s, _ in pairs):
        raise ValueError("pad_batch: every source sequence must have at least one token")
    src = np.full((B, S), pad_id, dtype=np.int64)
    tgt_in = np.full((B, T), pad_id, dtype=np.int64)
    tgt_out = np.full((B, T), pad_id, dtype=np.int64)
    for i, (s, t) in enumerate(pairs):
        src[i, : len(s)] = s
        tgt_in[i, 0] = bos_id
        tgt_in[i, 1: len(t) + 1] = t
        tgt_out[i, : len(t)] = t
        tgt_out[i, len(t)] = eos_id
    # Lengths, not "== pad_id", define the masks: an id equal to pad inside a row stays unmasked.
    src_len = np.array([len(s) for s, _ in pairs])
    tgt_len = np.array([len(t) + 1 for _, t in pairs])
    return Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out,
                 src_key_padding=np.arange(S)[None, :] >= src_len[:, None],
                 tgt_key_padding=np.arange(T)[None, :] >= tgt_len[:, None])


def batch_indices(lengths: Sequence[int] | np.ndarray, batch_size: int, rng: np.random.Generator,
                  shuffle: bool = True, bucket: bool = False, bucket_factor: int = 50,
                  drop_last: bool = False) -> list[np.ndarray]:
    """One epoch of index batches.

    ``bucket=True`` groups examples of similar length (less padding, faster steps): the shuffled
    indices are cut into pools of ``batch_size * bucket_factor``, each pool sorted by length and cut
    into batches, and the batch order is shuffled again. Everything random comes from ``rng``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(lengths)
    order = rng.permutation(n) if shuffle else np.arange(n)
    if bucket:
        lengths = np.asarray(lengths)
        pool = batch_size * max(1, bucket_factor)
        chunks = []
        for start in range(0, n, pool):
            part = order[start:start + pool]
            # Stable sort keeps the shuffled order among equal lengths, so ties stay random.
            part = part[np.argsort(lengths[part], kind="stable")]
            chunks += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
        if shuffle:
            chunks = [chunks[i] for i in rng.permutation(len(chunks))]
    else:
        chunks = [order[i:i + batch_size] for i in range(0, n, batch_size)]
    if drop_last:
        chunks = [c for c in chunks if len(c) == batch_size]
    return chunks


def iterate_batches(pairs: Sequence[IdPair], batch_size: int, rng: np.random.Generator,
                    shuffle: bool = True, bucket: bool = False, bucket_factor: int = 50,
                    drop_last: bool = False) -> Iterator[Batch]:
    """Yield one epoch of padded :class:`Batch` es from ``pairs`` (see :func:`batch_indices`).

    The same ``rng`` state gives the same batches; pass the trainer's Generator so resuming from a
    checkpoint (which restores it) replays the same order.
    """
    # Bucket on the longer side: that is what sets the padded width of the larger array.
    lengths = [max(len(s), len(t) + 1) for s, t in pairs]
    for idx in batch_indices(lengths, batch_size, rng, shuffle=shuffle, bucket=bucket,
                             bucket_factor=bucket_factor, drop_last=drop_last):
        yield pad_batch([pairs[int(i)] for i in idx])
