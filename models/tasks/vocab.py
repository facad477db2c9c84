"""Token <-> id mapping shared by every task, with four fixed special tokens.

The specials always sit at the same ids (``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3)
so that batching, masks and the loss can rely on ``PAD == 0`` without consulting a vocabulary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS: tuple[str, ...] = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)
PAD, BOS, EOS, UNK = 0, 1, 2, 3


class Vocab:
    """An ordered list of tokens; the first four are always the specials.

    >>> v = Vocab(["a", "b"])
    >>> v.encode(["b", "z"])
    [5, 3]
    >>> v.decode([1, 5, 4, 2])
    ['b', 'a']
    """

    def __init__(self, tokens: Iterable[str] = ()):
        itos = list(SPECIALS)
        seen = set(itos)
        for tok in tokens:
            if not isinstance(tok, str):
                raise TypeError(f"vocabulary tokens must be str, got {type(tok).__name__}: {tok!r}")
            # Silently skipping duplicates/specials lets callers pass any token list.
            if tok not in seen:
                seen.add(tok)
                itos.append(tok)
        self._itos: list[str] = itos
        self._stoi: dict[str, int] = {t: i for i, t in enumerate(itos)}

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1) -> "Vocab":
        """Vocabulary of every token seen at least ``min_freq`` times.

        Order is by frequency (descending) then by token, so the same data always gives the same ids
        regardless of the order the sequences arrive in.
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        counts: Counter[str] = Counter()
        for toks in token_lists:
            counts.update(toks)
        for special in SPECIALS:
            counts.pop(special, None)
        kept = [t for t, c in counts.items() if c >= min_freq]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls(kept)

    def to_list(self) -> list[str]:
        """All tokens in id order (specials included): JSON-serialisable for checkpoints."""
        return list(self._itos)

    @classmethod
    def from_list(cls, itos: Sequence[str]) -> "Vocab":
        """Inverse of :meth:`to_list`; rejects lists that do not start with the four specials."""
        itos = list(itos)
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"vocabulary list must start with {list(SPECIALS)}, got {itos[:4]}")
        if len(set(itos)) != len(itos):
            raise ValueError("vocabulary list contains duplicate tokens")
        return cls(itos[len(SPECIALS):])

    # -- lookup ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._itos == other._itos

    def __repr__(self) -> str:
        preview = ", ".join(repr(t) for t in self._itos[4:12])
        more = ", ..." if len(self) > 12 else ""
        return f"Vocab(size={len(self)}, tokens=[{preview}{more}])"

    def token_to_id(self, token: str) -> int:
        """Id of ``token``; unknown tokens map to ``<unk>``."""
        return self._stoi.get(token, UNK)

    def id_to_token(self, idx: int) -> str:
        """Token for ``idx``; raises IndexError for ids outside the vocabulary."""
        if not 0 <= int(idx) < len(self._itos):
            raise IndexError(f"token id {idx} outside vocabulary of size {len(self._itos)}")
        return self._itos[int(idx)]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids for ``tokens`` (no ``<bos>``/``<eos>`` added; unknown tokens -> ``<unk>``)."""
        get = self._stoi.get
        return [get(t, UNK) for t in tokens]

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> list[str]:
        """Tokens for ``ids``.

        With ``strip_special`` (the default) decoding stops at the first ``<eos>`` and drops
        ``<pad>``/``<bos>``, which is what a generated sequence needs; ``<unk>`` is kept so that a
        reader sees that something was unknown.
        """
        out = []
        for i in ids:
            i = int(i)
            if strip_special:
                if i == EOS:
                    break
                if i in (PAD, BOS):
                    continue
            out.append(self.id_to_token(i))
        return out

    @property
    def pad_id(self) -> int:
        return PAD

    @property
    def bos_id(self) -> int:
        return BOS

    @property
    def eos_id(self) -> int:
        return EOS

    @property
    def unk_id(self) -> int:
        return UNK
