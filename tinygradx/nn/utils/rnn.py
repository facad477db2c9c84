"""torch.nn.utils.rnn: batches of sequences of different lengths, padded or packed.

    pad_sequence([a (3, *), b (2, *)])        (3, 2, *): b's last step is padding_value
    pack_padded_sequence(padded, [3, 2])      PackedSequence: the real steps only, time-major
    pad_packed_sequence(packed)               (padded, lengths): back again
    pack_sequence, unpack_sequence, unpad_sequence, invert_permutation

A PackedSequence keeps `data`, every real step's row ordered by time and, within a step, by
sequence (longest first), and `batch_sizes`, how many sequences are still running at each step:
sequences of lengths 3 and 2 give the rows a0 b0 a1 b1 a2 and batch_sizes [2, 2, 1]. With
enforce_sorted=False the sequences are first sorted by length (longest first, ties in their
order), and `sorted_indices` / `unsorted_indices` say how to go there and back. nn.RNN, GRU
and LSTM take one and run each sequence for its own length only (nn/rnn.py).

Everything here is written with ops (cat, stack, indexing), so gradients flow from a packed or
padded result back to the sequences it was built from, and the graph tools draw it.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...autograd import OpError
from ...tensor import Tensor
from ...tensor.creation import cat, full, stack

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence", "invert_permutation"]

_Fields = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                         "unsorted_indices"])


def _ints(x):
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def invert_permutation(permutation):
    """The inverse of an int64 permutation tensor (None stays None): out[perm[i]] = i."""
    if permutation is None:
        return None
    p = _ints(permutation).astype(np.int64)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    return Tensor(out)


class PackedSequence(_Fields):
    """(data, batch_sizes, sorted_indices, unsorted_indices), a named tuple as torch's. Made by
    pack_padded_sequence / pack_sequence; `PackedSequence(data, batch_sizes)` and
    `PackedSequence((data, batch_sizes))` work as in torch. unsorted_indices defaults to the
    inverse of sorted_indices."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:                          # PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence: expected (data, batch_sizes), or data and "
                                "batch_sizes as two arguments")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(...) (batch_sizes and the indices stay int64); self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise RuntimeError("PackedSequence.cuda: tinygradx runs on the CPU only; use .cpu()")

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    def half(self):
        return self.to(np.float16)

    def long(self):
        return self.to(np.int64)

    def int(self):
        return self.to(np.int32)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _sequences(name, sequences):
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    if not isinstance(sequences, (list, tuple)):
        raise TypeError(f"{name}: expected a list of Tensors, got {type(sequences).__name__}")
    if not sequences:
        raise ValueError(f"{name}: received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"{name}: sequence {i} is a {type(s).__name__}, not a Tensor")
        if s.ndim == 0:
            raise OpError(f"{name}: sequence {i} is a 0-d tensor; each sequence needs a time "
                          f"dim (L, *)")
        if tuple(s.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise OpError(f"{name}: sequence {i} has shape {tuple(s.shape)}, but sequence 0 "
                          f"has {tuple(sequences[0].shape)}; all must be (L, *) with the same "
                          f"trailing dims")
    return list(sequences)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences (L_i, *) into (T, B, *) (or (B, T, *) with batch_first), T the longest,
    each padded with padding_value at its end (padding_side="right") or start ("left"). The
    result has the first sequence's dtype, as torch's."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got "
                         f"{padding_side!r}")
    seqs = _sequences("pad_sequence", sequences)
    dtype = seqs[0].dtype
    T = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        s = s.to(dtype)
        gap = T - s.shape[0]
        if gap:
            pad = full((gap,) + tuple(s.shape[1:]), padding_value, dtype=dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s], dim=0)   # (T, *)
        rows.append(s)
    return stack(rows, dim=0 if batch_first else 1)       # (B, T, *) or (T, B, *)


def _lengths(name, lengths):
    if isinstance(lengths, Tensor) and lengths.dtype.kind == "f":
        lengths = lengths.detach().numpy()
    arr = np.asarray(_ints(lengths))
    if arr.ndim != 1:
        raise OpError(f"{name}: lengths must be a 1-d list or int64 tensor, got "
                      f"{arr.ndim}-d {arr.shape}")
    if arr.size and arr.dtype.kind not in "iuf":
        raise TypeError(f"{name}: lengths must be integers, got {arr.dtype}")
    return arr.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """The real steps of a padded batch input (T, B, *) (or (B, T, *) with batch_first), whose
    sequence b is lengths[b] steps long, as a PackedSequence. With enforce_sorted the lengths
    must not increase; enforce_sorted=False sorts the sequences itself (longest first, ties
    in order) and keeps the permutation in sorted_indices / unsorted_indices."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise OpError(f"pack_padded_sequence: expected a padded Tensor (T, B, *) or (B, T, *), "
                      f"got {getattr(input, 'shape', type(input).__name__)}")
    lengths = _lengths("pack_padded_sequence", lengths)
    B, T = (input.shape[0], input.shape[1]) if batch_first else (input.shape[1], input.shape[0])
    if lengths.size != B:
        raise OpError(f"pack_padded_sequence: {lengths.size} lengths for a batch of {B} "
                      f"sequences (input {tuple(input.shape)}, batch_first={batch_first})")
    if lengths.size and lengths.min() <= 0:
        raise ValueError(f"pack_padded_sequence: every length must be > 0, got "
                         f"{lengths.tolist()}")
    if lengths.size and lengths.max() > T:
        raise OpError(f"pack_padded_sequence: a length of {lengths.max()} is longer than the "
                      f"padded input's {T} steps (input {tuple(input.shape)}, "
                      f"batch_first={batch_first})")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise OpError(f"pack_padded_sequence: lengths {lengths.tolist()} must be sorted "
                          f"in decreasing order when enforce_sorted is True; pass "
                          f"enforce_sorted=False to sort them here")
        order, sorted_indices = np.arange(B), None
    else:
        order = np.argsort(-lengths, kind="stable")     # longest first, ties in order
        sorted_indices = Tensor(order.astype(np.int64))
    lengths = lengths[order]
    batch_sizes = np.array([(lengths > t).sum() for t in range(int(lengths.max(initial=0)))],
                           np.int64)
    # the rows of the flattened input: step t of sorted sequence b, time-major
    rows = [(order[b] * T + t if batch_first else t * B + order[b])
            for t, n in enumerate(batch_sizes) for b in range(n)]
    flat = input.reshape((B * T,) + tuple(input.shape[2:]))            # (B*T, *)
    data = flat[np.asarray(rows, np.int64)]                            # (sum(lengths), *)
    return PackedSequence(data, Tensor(batch_sizes), sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths int64),
    in the original order of the sequences; T is total_length when given (at least the
    longest), else the longest length."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got "
                        f"{type(sequence).__name__}")
    data, batch_sizes = sequence.data, _ints(sequence.batch_sizes).astype(np.int64)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"pad_packed_sequence: total_length={total_length} is shorter than "
                             f"the longest sequence ({steps} steps)")
        steps_out = int(total_length)
    else:
        steps_out = steps
    B = int(batch_sizes[0]) if steps else 0
    lengths = np.array([(batch_sizes > b).sum() for b in range(B)], np.int64)
    pad_row = data.shape[0]                              # the index of an appended pad row
    index = np.full((steps_out, B), pad_row, np.int64)
    start = 0
    for t, n in enumerate(batch_sizes):
        index[t, :n] = np.arange(start, start + n)
        start += n
    if sequence.unsorted_indices is not None:            # back to the caller's order
        back = _ints(sequence.unsorted_indices)
        index, lengths = index[:, back], lengths[back]
    pad = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    rows = cat([data, pad], dim=0)                        # (sum(lengths) + 1, *)
    padded = rows[index.T if batch_first else index]      # (B, T, *) or (T, B, *)
    return padded, Tensor(lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), their lengths, enforce_sorted)."""
    seqs = _sequences("pack_sequence", sequences)
    return pack_padded_sequence(pad_sequence(seqs), [s.shape[0] for s in seqs],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The sequences a PackedSequence holds, as a list of (L_i, *) tensors in their order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [padded[i, :n] for i, n in enumerate(lengths.tolist())]


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch (T, B, *) (or (B, T, *)), each cut to its length: a list
    of (L_i, *) tensors."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)   # (B, T, *)
    lengths = _lengths("unpad_sequence", lengths)
    if lengths.size != x.shape[0]:
        raise OpError(f"unpad_sequence: {lengths.size} lengths for a batch of {x.shape[0]} "
                      f"sequences")
    return [x[i, :n] for i, n in enumerate(lengths.tolist())]
