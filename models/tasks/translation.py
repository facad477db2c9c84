"""Translation (encoder-decoder) tasks: synthetic ones made from a seed, plus a user's TSV corpus.

Every task is a :class:`TranslationTask` holding token lists for three splits. Source strings never
repeat across splits, so exact match on ``test`` measures generalisation, not memorisation.
"""

from __future__ import annotations

import datetime as _dt
import string
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dates import DATE_FORMATS, format_allowed, iso
from .numbers import EN_MAX, ZH_MAX, english_words, number_to_chinese
from .vocab import Vocab

Pair = tuple[list[str], list[str]]
SPLITS = ("train", "valid", "test")


def _chars(s: str) -> list[str]:
    return list(s)


def _join(tokens: Sequence[str]) -> str:
    return "".join(tokens)


def join_words(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


def _no_space_chars(s: str) -> list[str]:
    return [c for c in s if not c.isspace()]


@dataclass
class TranslationTask:
    """A sequence-to-sequence dataset: vocabularies, three splits and the text <-> token functions.

    ``train``/``valid``/``test`` hold ``(src_tokens, tgt_tokens)`` pairs of *tokens* (strings); use
    :meth:`encoded` for ids. ``config`` holds the arguments that rebuild the same task through
    :func:`make_translation_task` (handy to store in a checkpoint next to the vocabularies).
    """

    name: str
    src_vocab: Vocab
    tgt_vocab: Vocab
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    tokenize_src: Callable[[str], list[str]]
    detok_tgt: Callable[[Sequence[str]], str]
    detok_src: Callable[[Sequence[str]], str]
    tokenize_tgt: Callable[[str], list[str]] = _chars
    description: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    # (source, target) longest lengths when the splits are not there to measure (a task rebuilt
    # from a checkpoint's vocabularies for decoding only); None: measured from the splits
    lengths: tuple[int, int] | None = None
    # encoded splits, built on first use: a training loop asks for them at every batch
    _encoded: dict[str, list] = field(default_factory=dict, repr=False, compare=False)

    def split(self, name: str) -> list[Pair]:
        """The pairs of split ``name`` ('train', 'valid' or 'test')."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)}")
        return getattr(self, name)

    def encoded(self, split: str) -> list[tuple[list[int], list[int]]]:
        """``(src_ids, tgt_ids)`` pairs of ``split``, no ``<bos>``/``<eos>`` (batching adds those).

        Computed once per split and cached (treat the returned list as read-only)."""
        if split not in self._encoded:
            self._encoded[split] = [(self.src_vocab.encode(s), self.tgt_vocab.encode(t))
                                    for s, t in self.split(split)]
        return self._encoded[split]

    def encode_src(self, text: str) -> list[int]:
        """Ids of a raw source string, as a user would type it (for ``translate``)."""
        return self.src_vocab.encode(self.tokenize_src(text))

    def decode_tgt(self, ids: Sequence[int]) -> str:
        """Text of generated target ids (stops at ``<eos>``, drops ``<pad>``/``<bos>``)."""
        return self.detok_tgt(self.tgt_vocab.decode(ids))

    def references(self, split: str) -> dict[str, set[str]]:
        """Source text -> set of acceptable target texts (a TSV source may have several)."""
        refs: dict[str, set[str]] = defaultdict(set)
        for s, t in self.split(split):
            refs[self.detok_src(s)].add(self.detok_tgt(t))
        return dict(refs)

    def max_lengths(self) -> tuple[int, int]:
        """Longest source and target (in tokens, before ``<bos>``/``<eos>``) over all splits."""
        if self.lengths is not None:
            return tuple(self.lengths)
        pairs = self.train + self.valid + self.test
        return max(len(s) for s, _ in pairs), max(len(t) for _, t in pairs)


# --------------------------------------------------------------------------------------------------
# helpers


def _check_sizes(n_train: int, n_valid: int, n_test: int) -> None:
    for label, n in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{label} must be a non-negative int, got {n!r}")
    if n_train == 0:
        raise ValueError("n_train must be positive")


def finish_task(name: str, splits: tuple[list[Pair], list[Pair], list[Pair]], *, tokenize_src,
            detok_src, detok_tgt, tokenize_tgt, description: str, config: dict,
            min_freq: int = 1) -> TranslationTask:
    train, valid, test = splits
    # Vocabularies come from the training split only: a held-out symbol must show up as <unk>.
    return TranslationTask(
        name=name,
        src_vocab=Vocab.build((s for s, _ in train), min_freq=min_freq),
        tgt_vocab=Vocab.build((t for _, t in train), min_freq=min_freq),
        train=train, valid=valid, test=test,
        tokenize_src=tokenize_src, detok_tgt=detok_tgt, detok_src=detok_src,
        tokenize_tgt=tokenize_tgt, description=description, config=config,
    )


def _split_sources(sources: list, n_train: int, n_valid: int, n_test: int):
    """Unique sources (already in random order) -> (train, valid, test) lists; test is taken
    first."""
    test = sources[:n_test]
    valid = sources[n_test:n_test + n_valid]
    train = sources[n_test + n_valid:n_test + n_valid + n_train]
    return train, valid, test


# --------------------------------------------------------------------------------------------------
# copy / reverse / sort


def _alphabet(alphabet: str | None, alphabet_size: int) -> str:
    if alphabet is None:
        if not 2 <= alphabet_size <= 26:
            raise ValueError(f"alphabet_size must be in 2..26, got {alphabet_size}")
        alphabet = string.ascii_lowercase[:alphabet_size]
    if len(set(alphabet)) != len(alphabet) or len(alphabet) < 2:
        raise ValueError(f"alphabet must have >= 2 distinct symbols, got {alphabet!r}")
    if any(c.isspace() for c in alphabet):
        raise ValueError("alphabet symbols cannot be whitespace")
    return alphabet


def _symbol_task(name: str, transform: Callable[[str], str], seed: int, n_train: int, n_valid: int,
                 n_test: int, alphabet: str | None = None, alphabet_size: int = 10,
                 min_len: int = 3, max_len: int = 10) -> TranslationTask:
    _check_sizes(n_train, n_valid, n_test)
    alphabet = _alphabet(alphabet, alphabet_size)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    total = n_train + n_valid + n_test
    space = sum(len(alphabet) ** k for k in range(min_len, max_len + 1))
    if total > space // 2:
        # Rejection sampling of distinct strings gets slow (and degenerate) near the whole space.
        raise ValueError(f"{name}: {total} distinct strings requested but only {space} exist for "
                         f"alphabet size {len(alphabet)} and lengths {min_len}..{max_len}; "
                         "ask for fewer examples or longer strings")
    rng = np.random.default_rng(seed)
    symbols = np.array(list(alphabet))
    seen: set[str] = set()
    sources: list[str] = []
    while len(sources) < total:
        # Draw in vectorised chunks; the length is uniform so short strings are not swamped.
        need = total - len(sources)
        lengths = rng.integers(min_len, max_len + 1, size=need)
        draws = rng.integers(0, len(alphabet), size=(need, max_len))
        for length, row in zip(lengths, draws, strict=True):
            s = "".join(symbols[row[:length]])
            if s not in seen:
                seen.add(s)
                sources.append(s)
    splits = tuple([(list(s), list(transform(s))) for s in part]
                   for part in _split_sources(sources, n_train, n_valid, n_test))
    config = dict(name=name, seed=seed, n_train=n_train, n_valid=n_valid, n_test=n_test,
                  alphabet=alphabet, min_len=min_len, max_len=max_len)
    return finish_task(name, splits, tokenize_src=_no_space_chars, detok_src=_join, detok_tgt=_join,
                   tokenize_tgt=_no_space_chars, config=config,
                   description=f"{name} strings of {min_len}..{max_len} symbols from {alphabet!r}")


def copy_task(seed: int = 0, n_train: int = 10000, n_valid: int = 1000, n_test: int = 1000,
              **kw) -> TranslationTask:
    """Output = input ("abc" -> "abc"). Keywords: alphabet, alphabet_size, min_len, max_len."""
    return _symbol_task("copy", lambda s: s, seed, n_train, n_valid, n_test, **kw)


def reverse_task(seed: int = 0, n_train: int = 10000, n_valid: int = 1000, n_test: int = 1000,
                 **kw) -> TranslationTask:
    """Output = input reversed ("abc" -> "cba"). Keywords as :func:`copy_task`."""
    return _symbol_task("reverse", lambda s: s[::-1], seed, n_train, n_valid, n_test, **kw)


def sort_task(seed: int = 0, n_train: int = 10000, n_valid: int = 1000, n_test: int = 1000,
              **kw) -> TranslationTask:
    """Output = input's symbols sorted ("cab" -> "abc"). Keywords as :func:`copy_task`."""
    return _symbol_task("sort", lambda s: "".join(sorted(s)), seed, n_train, n_valid, n_test, **kw)


# --------------------------------------------------------------------------------------------------
# numbers


def _digits_of(s: str) -> list[str]:
    # Users may type "1,984" or "1 984"; the model only ever saw bare digits.
    return [c for c in s if not (c.isspace() or c in ",_'")]


def _sample_numbers(lo: int, hi: int, total: int, rng: np.random.Generator) -> list[int]:
    """``total`` distinct ints in [lo, hi], spread evenly over the digit counts (log-uniform).

    Uniform sampling would make almost every number six digits long and leave the short ones that a
    user types first ("7", "42") nearly unseen; buckets that are too small are taken whole and their
    share is handed to the bigger buckets.
    """
    buckets = []
    for d in range(1, len(str(hi)) + 1):
        b_lo, b_hi = max(lo, 0 if d == 1 else 10 ** (d - 1)), min(hi, 10 ** d - 1)
        if b_lo <= b_hi:
            buckets.append((b_lo, b_hi - b_lo + 1))
    space = sum(size for _, size in buckets)
    if total > space:
        raise ValueError(f"numbers: {total} distinct numbers requested but the range {lo}..{hi} "
                         f"holds only {space}")
    quotas = {}
    remaining = total
    for k, (start, size) in enumerate(sorted(buckets, key=lambda b: b[1])):
        q = min(size, remaining // (len(buckets) - k))
        quotas[start] = q
        remaining -= q
    # Integer division may leave a few over; give them to the largest bucket that has room.
    for start, size in sorted(buckets, key=lambda b: -b[1]):
        extra = min(remaining, size - quotas[start])
        quotas[start] += extra
        remaining -= extra
    chosen = []
    for start, size in buckets:
        picks = rng.choice(size, size=quotas[start], replace=False)
        chosen.extend(int(start + p) for p in picks)
    return [chosen[i] for i in rng.permutation(len(chosen))]


def _numbers_task(name: str, seed: int, n_train: int, n_valid: int, n_test: int, lo: int, hi: int,
                  lexicon_in_train: bool, chinese: bool) -> TranslationTask:
    _check_sizes(n_train, n_valid, n_test)
    top = ZH_MAX if chinese else EN_MAX
    if not 0 <= lo <= hi <= top:
        raise ValueError(f"{name}: need 0 <= lo <= hi <= {top}, got lo={lo}, hi={hi}")
    rng = np.random.default_rng(seed)
    numbers = _sample_numbers(lo, hi, n_train + n_valid + n_test, rng)
    if lexicon_in_train:
        # Numbers below 100 are the lexicon (irregular words like "thirteen", "forty"); keeping them
        # in training makes the held-out split test composition rather than unseen vocabulary.
        numbers = [n for n in numbers if n >= 100] + [n for n in numbers if n < 100]
        if sum(n < 100 for n in numbers) > n_train:
            raise ValueError(f"{name}: n_train={n_train} cannot hold all numbers below 100; "
                             "raise n_train or pass lexicon_in_train=False")
    if chinese:
        target, detok_tgt, tokenize_tgt = (lambda n: list(number_to_chinese(n))), _join, _chars
    else:
        target, detok_tgt, tokenize_tgt = english_words, join_words, str.split
    splits = tuple([(list(str(n)), target(n)) for n in part]
                   for part in _split_sources(numbers, n_train, n_valid, n_test))
    config = dict(name=name, seed=seed, n_train=n_train, n_valid=n_valid, n_test=n_test, lo=lo,
                  hi=hi, lexicon_in_train=lexicon_in_train)
    lang = "Chinese numerals" if chinese else "English words"
    return finish_task(name, splits, tokenize_src=_digits_of, detok_src=_join, detok_tgt=detok_tgt,
                   tokenize_tgt=tokenize_tgt, config=config,
                   description=f"integers {lo}..{hi} -> {lang}")


def numbers_task(seed: int = 0, n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000,
                 lo: int = 0, hi: int = 999_999, lexicon_in_train: bool = True) -> TranslationTask:
    """Digits -> English words ("1984" -> one thousand nine hundred eighty four), words as
    tokens."""
    return _numbers_task("numbers", seed, n_train, n_valid, n_test, lo, hi, lexicon_in_train, False)


def numbers_zh_task(seed: int = 0, n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000,
                    lo: int = 0, hi: int = 999_999,
                    lexicon_in_train: bool = True) -> TranslationTask:
    """Digits -> Chinese numerals ("1984" -> 一千九百八十四), characters as tokens."""
    return _numbers_task("numbers_zh", seed, n_train, n_valid, n_test, lo, hi, lexicon_in_train,
                         True)


# --------------------------------------------------------------------------------------------------
# dates


def dates_task(seed: int = 0, n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000,
               year_min: int = 1950, year_max: int = 2049,
               formats: Sequence[str] | None = None) -> TranslationTask:
    """Human-written dates in many formats -> ISO ``YYYY-MM-DD`` (character tokens).

    The split is by *date*: a held-out date never appears in training in any format. Each valid/test
    date appears once, in a random format; training draws (date, format) pairs from the remaining
    dates. See :data:`DATE_FORMATS` for the formats.
    """
    _check_sizes(n_train, n_valid, n_test)
    formats = list(DATE_FORMATS) if formats is None else list(formats)
    if not formats:
        raise ValueError("dates: formats must not be empty")
    for f in formats:
        format_allowed(f, _dt.date(2000, 1, 1))  # raises for unknown names
    if not 1 <= year_min <= year_max <= 9999:
        raise ValueError(
            f"dates: need 1 <= year_min <= year_max <= 9999, got {year_min}..{year_max}")
    first = _dt.date(year_min, 1, 1).toordinal()
    n_days = _dt.date(year_max, 12, 31).toordinal() - first + 1
    if n_valid + n_test >= n_days:
        raise ValueError(f"dates: {n_valid + n_test} held-out dates requested but "
                         f"{year_min}..{year_max} has only {n_days} days")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_days)
    test_days, valid_days = order[:n_test], order[n_test:n_test + n_valid]
    train_days = order[n_test + n_valid:]

    def render(day_index: int) -> tuple[str, str]:
        d = _dt.date.fromordinal(first + int(day_index))
        allowed = [f for f in formats if format_allowed(f, d)]
        if not allowed:
            raise ValueError(
                f"dates: no format in {formats} can write {d.isoformat()} unambiguously")
        return DATE_FORMATS[allowed[int(rng.integers(len(allowed)))]](d), iso(d)

    held_out = [[render(i) for i in days] for days in (test_days, valid_days)]
    if n_train > len(train_days) * len(formats) // 2:
        raise ValueError(f"dates: n_train={n_train} is too many for {len(train_days)} training "
                         f"dates in {len(formats)} formats")
    seen: set[str] = set()
    train_pairs: list[tuple[str, str]] = []
    while len(train_pairs) < n_train:
        src, tgt = render(train_days[int(rng.integers(len(train_days)))])
        if src not in seen:
            seen.add(src)
            train_pairs.append((src, tgt))
    test, valid = ([(list(s), list(t)) for s, t in part] for part in held_out)
    train = [(list(s), list(t)) for s, t in train_pairs]
    config = dict(name="dates", seed=seed, n_train=n_train, n_valid=n_valid, n_test=n_test,
                  year_min=year_min, year_max=year_max, formats=formats)
    return finish_task("dates", (train, valid, test), tokenize_src=lambda s: list(s.strip()),
                       detok_src=_join, detok_tgt=_join, tokenize_tgt=_chars, config=config,
                       description=f"dates {year_min}..{year_max} in {len(formats)} formats "
                                   "-> ISO 8601")
