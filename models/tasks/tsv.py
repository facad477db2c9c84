"""A user's own parallel corpus in the Tatoeba TSV format (``source<TAB>target[<TAB>attribution]``).

This is the format of ``eng-fra.txt`` in the PyTorch sequence-to-sequence tutorial. Sentences are
normalised the same way: accents stripped (NFD, drop combining marks), lower case, a space before
``.!?``, every other non-letter turned into a space. "Letter" means ``str.isalpha`` after accent
stripping, which for Latin-script text is exactly ``[a-z]``; scripts without spaces (Chinese,
Japanese) survive but are not segmented into words, so each sentence becomes very few tokens.

The split is by *normalised source sentence*: all translations of one source land in the same split.
The order is a hash of (seed, sentence), so it depends neither on line order nor on other lines.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Sequence

from .translation import Pair, TranslationTask, finish_task, join_words
from .vocab import Vocab

_PUNCT = re.compile(r"([.!?])")
_NOT_LETTER = re.compile(r"[^\w.!?]|[\d_]")  # \w minus digits and underscore = letters
_SPACES = re.compile(r"\s+")


def unicode_to_ascii(s: str) -> str:
    """Strip accents: decompose (NFD) and drop combining marks ("Très" -> "Tres")."""
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def normalize_string(s: str) -> str:
    """Tutorial-style normalisation: "Va-t'en, vite !" -> "va t en vite !"."""
    s = unicode_to_ascii(s.lower().strip())
    s = _PUNCT.sub(r" \1", s)
    s = _NOT_LETTER.sub(" ", s)
    return _SPACES.sub(" ", s).strip()


def tokenize(s: str) -> list[str]:
    """Normalise then split on spaces (word-level tokens)."""
    return normalize_string(s).split()


def read_tsv_pairs(path: str | os.PathLike, reverse: bool = False) -> list[tuple[str, str]]:
    """Raw (source, target) sentence pairs of a TSV file; blank lines are skipped.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file and line for
    a non-UTF-8 file, a line without a tab, an empty field or a file with no pairs.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"parallel corpus not found: {path}")
    try:
        with open(path, encoding="utf-8") as f:
            # split("\n"), not splitlines(): the latter also breaks on \x0b, \u2028, ... and would
            # make the line numbers in error messages disagree with an editor's.
            lines = [line.rstrip("\r") for line in f.read().split("\n")]
    except UnicodeDecodeError as e:
        with open(path, "rb") as fb:
            line_no = fb.read(e.start).count(b"\n") + 1
        raise ValueError(f"{path}:{line_no}: not valid UTF-8 ({e.reason})") from None
    pairs = []
    for i, line in enumerate(lines, start=1):
        if i == 1:
            line = line.lstrip("\ufeff")  # tolerate a byte-order mark written by some editors
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{path}:{i}: expected 'source<TAB>target[<TAB>attribution]', "
                             f"got {line[:60]!r}")
        src, tgt = fields[0].strip(), fields[1].strip()
        if not src or not tgt:
            raise ValueError(f"{path}:{i}: empty {'source' if not src else 'target'} sentence")
        pairs.append((tgt, src) if reverse else (src, tgt))
    if not pairs:
        raise ValueError(f"{path}: no sentence pairs (the file is empty)")
    return pairs


def _hash_key(seed: int, sentence: str) -> bytes:
    return hashlib.blake2b(f"{seed}\x00{sentence}".encode("utf-8"), digest_size=8).digest()


def tsv_task(path: str | os.PathLike | None = None, seed: int = 0, reverse: bool = False,
             max_len: int = 10, valid_frac: float = 0.1, test_frac: float = 0.1, min_freq: int = 1,
             n_train: int | None = None, n_valid: int | None = None,
             n_test: int | None = None) -> TranslationTask:
    """Word-level translation task from a Tatoeba-format TSV file.

    ``reverse`` swaps the columns (eng-fra.txt with ``reverse=True`` translates French to English).
    Pairs whose source or target is longer than ``max_len`` words (or empty after normalisation) are
    dropped. ``valid_frac``/``test_frac`` of the distinct source sentences are held out; ``n_*``
    optionally cap each split. Vocabularies come from the training split only (``min_freq``
    applies).
    """
    if path is None:
        raise ValueError("task 'tsv' needs path=FILE (a tab-separated file of sentence pairs)")
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    if not (0 <= valid_frac < 1 and 0 <= test_frac < 1 and valid_frac + test_frac < 1):
        raise ValueError(f"need 0 <= valid_frac, test_frac and valid_frac + test_frac < 1, "
                         f"got {valid_frac}, {test_frac}")
    raw = read_tsv_pairs(path, reverse=reverse)
    by_source: dict[str, list[Pair]] = {}
    seen_pairs: set[tuple[str, str]] = set()
    for src, tgt in raw:
        s, t = normalize_string(src), normalize_string(tgt)
        s_toks, t_toks = s.split(), t.split()
        if not s_toks or not t_toks or len(s_toks) > max_len or len(t_toks) > max_len:
            continue
        if (s, t) in seen_pairs:  # exact duplicates add nothing but weight
            continue
        seen_pairs.add((s, t))
        by_source.setdefault(s, []).append((s_toks, t_toks))
    if not by_source:
        raise ValueError(f"{os.fspath(path)}: no sentence pair has both sides of 1..{max_len} "
                         "words after normalisation")
    sources = sorted(by_source, key=lambda s: (_hash_key(seed, s), s))
    n = len(sources)
    # A tiny corpus still gets one held-out sentence per requested split, so evaluation never
    # silently runs on nothing.
    n_te = max(int(round(test_frac * n)), int(test_frac > 0 and n >= 3))
    n_va = max(int(round(valid_frac * n)), int(valid_frac > 0 and n >= 3))
    need = 1 + (valid_frac > 0) + (test_frac > 0)   # one each to train, validate and test on
    if n - n_te - n_va < 1 or (valid_frac > 0 and n_va < 1) or (test_frac > 0 and n_te < 1):
        raise ValueError(f"{os.fspath(path)}: too few sentence pairs: {len(raw)} read, {n} "
                         f"distinct usable source sentence(s) (1..{max_len} words); need at "
                         f"least {need} to train, validate and "
                         f"test on")

    def gather(part: Sequence[str], cap: int | None) -> list[Pair]:
        pairs = [p for s in part for p in by_source[s]]
        return pairs if cap is None else pairs[:cap]

    test = gather(sources[:n_te], n_test)
    valid = gather(sources[n_te:n_te + n_va], n_valid)
    train = gather(sources[n_te + n_va:], n_train)
    config = dict(name="tsv", path=os.path.abspath(os.fspath(path)), seed=seed, reverse=reverse,
                  max_len=max_len, valid_frac=valid_frac, test_frac=test_frac, min_freq=min_freq,
                  n_train=n_train, n_valid=n_valid, n_test=n_test)
    return finish_task("tsv", (train, valid, test), tokenize_src=tokenize, detok_src=join_words,
                   detok_tgt=join_words, tokenize_tgt=tokenize, config=config, min_freq=min_freq,
                   description=f"{os.path.basename(os.fspath(path))}: {len(train)} training pairs, "
                               f"max {max_len} words")


def tsv_task_from_vocab(src: Sequence[str], tgt: Sequence[str], lengths: Sequence[int],
                        source: str = "") -> TranslationTask:
    """A tsv task with no sentence pairs, for decoding only: the vocabularies (``Vocab.to_list``
    form) and longest (source, target) lengths a checkpoint saved, with the same tokenizer and
    detokenizer as :func:`tsv_task`. Its splits are empty; translating needs none of them."""
    if len(lengths) != 2 or not all(isinstance(n, int) and n >= 1 for n in lengths):
        raise ValueError(f"lengths must be two integers >= 1, got {lengths!r}")
    return TranslationTask(
        name="tsv", src_vocab=Vocab.from_list(src), tgt_vocab=Vocab.from_list(tgt), train=[],
        valid=[], test=[], tokenize_src=tokenize, detok_tgt=join_words, detok_src=join_words,
        tokenize_tgt=tokenize, lengths=(int(lengths[0]), int(lengths[1])),
        description=f"{source} (vocabularies only: the file is gone)",
        config=dict(name="tsv", path=source))
