"""tinygradx.nn.utils: torch.nn.utils's sequence tools, `rnn` (pad_sequence,
pack_padded_sequence, PackedSequence, ...), under the same path as torch's
(`from tinygradx.nn.utils.rnn import pad_sequence`). Gradient clipping is
tinygradx.optim.clip_grad (the look-alike's torch.nn.utils shows both)."""
from __future__ import annotations

from . import rnn  # noqa: F401

__all__ = ["rnn"]
