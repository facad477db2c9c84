"""Language-model (GPT) tasks: ``add`` (n-digit addition) and ``chars`` (character-level text).

Both expose ``vocab_size`` and ``get_batch(split, batch_size, ..., rng)`` returning int64 ``x, y``
arrays of shape (B, T) where ``y`` is ``x`` shifted by one; positions the loss must skip hold
:data:`IGNORE` (-1).
"""

from __future__ import annotations

import importlib
import inspect
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

IGNORE = -1
"""Target value the loss must ignore (the prompt part of an addition example)."""

SPLITS = ("train", "valid", "test")


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


# --------------------------------------------------------------------------------------------------
# add


@dataclass
class AdditionTask:
    """n-digit addition as a token sequence: digits of a, digits of b, digits of a+b *reversed*.

    With ``ndigit=2``, 47 + 85 = 132 is the sequence ``4 7 8 5 2 3 1`` (tokens are the digits 0-9,
    all numbers zero-padded to fixed width; the sum has ``ndigit + 1`` digits). The sum is reversed
    so that the model emits the low digit first, the order in which carries are computed.

    The held-out pairs (``valid``, ``test``: arrays of shape (N, 2)) are drawn once from the seed;
    training batches sample uniformly from every other pair, so no (a, b) in training is ever in
    ``valid`` or ``test``.
    """

    ndigit: int = 2
    seed: int = 0
    n_valid: int | None = None
    n_test: int | None = None
    valid: np.ndarray = field(init=False, repr=False)
    test: np.ndarray = field(init=False, repr=False)
    _held_out: np.ndarray = field(init=False, repr=False)

    name = "add"
    vocab_size = 10

    def __post_init__(self):
        nd = self.ndigit
        if isinstance(nd, bool) or not isinstance(nd, int) or not 1 <= nd <= 9:
            raise ValueError(f"add: ndigit must be an int in 1..9, got {self.ndigit!r}")
        num = self.num_pairs
        # minGPT holds out 20% capped at 500; do the same for each of valid and test by default.
        default = min(num // 5, 500)
        n_valid = default if self.n_valid is None else self.n_valid
        n_test = default if self.n_test is None else self.n_test
        if n_valid < 0 or n_test < 0 or n_valid + n_test >= num // 2:
            raise ValueError(f"add: n_valid={n_valid}, n_test={n_test} leave too few of the {num} "
                             f"pairs for training")
        self.n_valid, self.n_test = n_valid, n_test
        rng = np.random.default_rng(self.seed)
        picks = rng.choice(num, size=n_valid + n_test, replace=False).astype(np.int64)
        self.test = self._unflatten(picks[:n_test])
        self.valid = self._unflatten(picks[n_test:])
        self._held_out = np.sort(picks)

    @property
    def num_pairs(self) -> int:
        """Number of distinct (a, b) pairs: (10**ndigit)**2."""
        return 10 ** (2 * self.ndigit)

    @property
    def block_size(self) -> int:
        """Sequence length the model sees: 2n prompt digits + (n+1) answer digits - 1."""
        return 3 * self.ndigit

    @property
    def vocab(self) -> list[str]:
        """Token strings by id (the digits), for checkpoints and printing."""
        return list("0123456789")

    def _unflatten(self, flat: np.ndarray) -> np.ndarray:
        base = 10 ** self.ndigit
        return np.stack([flat // base, flat % base], axis=1).astype(np.int64)

    def _digits(self, values: np.ndarray, width: int) -> np.ndarray:
        """(N,) ints -> (N, width) digits, most significant first."""
        powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        return (values[:, None] // powers) % 10

    def encode(self, pairs) -> np.ndarray:
        """(N, 2) pairs (or one (a, b)) -> (N, 3n+1) full token sequences."""
        pairs = np.atleast_2d(np.asarray(pairs, dtype=np.int64))
        base = 10 ** self.ndigit
        if pairs.shape[1:] != (2,) or pairs.min(initial=0) < 0 or pairs.max(initial=0) >= base:
            raise ValueError(f"add: pairs must be (N, 2) ints in 0..{base - 1}")
        a, b = pairs[:, 0], pairs[:, 1]
        total = self._digits(a + b, self.ndigit + 1)[:, ::-1]
        return np.concatenate([self._digits(a, self.ndigit), self._digits(b, self.ndigit), total],
                              axis=1).astype(np.int64)

    def xy(self, pairs) -> tuple[np.ndarray, np.ndarray]:
        """Training arrays for ``pairs``: x = seq[:-1], y = seq[1:] with the prompt part IGNOREd."""
        seq = self.encode(pairs)
        x, y = seq[:, :-1].copy(), seq[:, 1:].copy()
        # Only the answer digits are predicted; the first 2n-1 targets are digits of a and b.
        y[:, : 2 * self.ndigit - 1] = IGNORE
        return x, y

    def prompt(self, pairs) -> np.ndarray:
        """(N, 2n) prompt tokens: the digits of a then b."""
        return self.encode(pairs)[:, : 2 * self.ndigit]

    def decode_answer(self, generated) -> np.ndarray:
        """(N, n+1) generated answer tokens (reversed digits) -> (N,) integer sums."""
        gen = np.atleast_2d(np.asarray(generated, dtype=np.int64))
        if gen.shape[1] != self.ndigit + 1:
            raise ValueError(f"add: expected {self.ndigit + 1} answer digits per row, "
                             f"got {gen.shape[1]}")
        powers = 10 ** np.arange(self.ndigit + 1, dtype=np.int64)  # reversed: low digit first
        return (gen * powers).sum(axis=1)

    def correct(self, pairs, generated) -> np.ndarray:
        """(N,) bool: whether each generated answer equals a + b."""
        pairs = np.atleast_2d(np.asarray(pairs, dtype=np.int64))
        return self.decode_answer(generated) == pairs[:, 0] + pairs[:, 1]

    def exact_match(self, pairs, generated) -> float:
        """Fraction of rows whose generated answer is exactly right."""
        return float(self.correct(pairs, generated).mean())

    def is_held_out(self, pairs) -> np.ndarray:
        """(N,) bool: which (a, b) pairs belong to valid or test."""
        pairs = np.atleast_2d(np.asarray(pairs, dtype=np.int64))
        flat = pairs[:, 0] * 10 ** self.ndigit + pairs[:, 1]
        return np.isin(flat, self._held_out)

    def sample_train_pairs(self, n: int, rng: np.random.Generator | int | None) -> np.ndarray:
        """``n`` random training pairs (uniform over all pairs not held out)."""
        rng = _rng(rng)
        out = np.empty((0, 2), dtype=np.int64)
        while len(out) < n:
            # Rejection sampling: held-out pairs are at most half the space, so this ends quickly.
            cand = self._unflatten(rng.integers(0, self.num_pairs, size=max(n - len(out), 16)))
            out = np.concatenate([out, cand[~self.is_held_out(cand)]])
        return out[:n]

    def get_batch(self, split: str, batch_size: int, rng: np.random.Generator | int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Random batch (x, y) of shape (B, 3n); targets on the prompt are :data:`IGNORE`."""
        rng = _rng(rng)
        if split == "train":
            pairs = self.sample_train_pairs(batch_size, rng)
        elif split in ("valid", "test"):
            held = getattr(self, split)
            if len(held) == 0:
                raise ValueError(f"add: split {split!r} is empty")
            pairs = held[rng.integers(0, len(held), size=batch_size)]
        else:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        return self.xy(pairs)

    @property
    def config(self) -> dict[str, Any]:
        return dict(name="add", ndigit=self.ndigit, seed=self.seed, n_valid=self.n_valid,
                    n_test=self.n_test)


# --------------------------------------------------------------------------------------------------
# chars

# The default corpus: docstrings of a pinned list of standard-library modules, all present in
# CPython 3.10-3.13 (nothing deprecated for removal, e.g. no cgi, imp, asynchat). Caveat: the text
# is identical only for the same Python minor version; docstrings get edited between releases, so
# expect differences of a few percent between 3.10 and 3.13 (about 350-370k characters). The
# character set is pinned to printable ASCII + newline, so the vocabulary is the same 96 characters.
STDLIB_DOC_MODULES = (
    "abc", "argparse", "base64", "bisect", "calendar", "collections", "contextlib", "copy", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "enum", "fractions", "functools", "glob",
    "gzip", "hashlib", "heapq", "hmac", "html", "inspect", "io", "ipaddress", "itertools", "json",
    "logging", "operator", "os", "pathlib", "pickle", "pprint", "queue", "random", "re", "shlex",
    "shutil", "statistics", "string", "struct", "tempfile", "textwrap", "threading", "typing",
    "unittest", "urllib.parse", "uuid", "zipfile",
)


def stdlib_docstrings(modules=STDLIB_DOC_MODULES) -> str:
    """Default ``chars`` corpus: docstrings of ``modules`` and their public functions and classes.

    For each module (in the given order): its own docstring, then the docstrings of the public
    functions and classes *defined in that module* and of the classes' own public methods (sorted by
    name; re-exports skipped so that implementation moves between modules do not change the text),
    each under a ``module.name`` header.
    """
    with warnings.catch_warnings():
        # Touching deprecated aliases (typing.io in 3.11, ...) warns; the text is what matters.
        warnings.simplefilter("ignore", DeprecationWarning)
        return _gather_docstrings(modules)


def _gather_docstrings(modules) -> str:
    parts = []
    for mod_name in modules:
        mod = importlib.import_module(mod_name)
        doc = inspect.getdoc(mod)
        if doc:
            parts.append(f"{mod_name}\n\n{doc}\n")
        for attr in sorted(a for a in vars(mod) if not a.startswith("_")):
            obj = vars(mod)[attr]
            if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            owner = getattr(obj, "__module__", None)
            # C accelerators (e.g. _functools, _json) count as the module they back.
            if owner != mod_name and owner != "_" + mod_name.split(".")[-1]:
                continue
            _add_doc(parts, f"{mod_name}.{attr}", obj)
            if inspect.isclass(obj):
                # Public methods defined on the class itself (inherited ones would repeat text).
                for meth in sorted(m for m in vars(obj) if not m.startswith("_")):
                    member = vars(obj)[meth]
                    if callable(member) or isinstance(member, (classmethod, staticmethod)):
                        _add_doc(parts, f"{mod_name}.{attr}.{meth}", member)
    text = "\n".join(parts).replace("\t", "    ")
    # Keep printable ASCII and newlines only: the few non-ASCII characters (box drawing in some
    # versions' argparse-like docs) come and go between releases and would change the vocabulary.
    return "".join(c for c in text if c == "\n" or " " <= c <= "~")


def _add_doc(parts: list[str], title: str, obj) -> None:
    # obj.__doc__, not inspect.getdoc: getdoc inherits a base class's docstring, which would repeat
    # e.g. Exception's text under every exception class.
    doc = getattr(obj, "__doc__", None)
    if isinstance(doc, str) and doc.strip():
        parts.append(f"{title}\n\n{inspect.cleandoc(doc)}\n")


@dataclass
class CharTask:
    """Character-level language modelling over one text (nanoGPT's shakespeare_char recipe).

    The vocabulary is the sorted set of characters (no specials); the first 90% of the text (in file
    order) is ``train``, the rest ``valid`` ("val" is accepted too). Build with :func:`chars_task`.
    """

    text: str
    source: str = "<text>"
    train_frac: float = 0.9
    chars: list[str] = field(init=False)
    data: np.ndarray = field(init=False, repr=False)
    train_data: np.ndarray = field(init=False, repr=False)
    val_data: np.ndarray = field(init=False, repr=False)

    name = "chars"

    def __post_init__(self):
        if len(self.text) < 2:
            raise ValueError(
                f"{self.source}: text has {len(self.text)} characters; need at least 2")
        if not 0 < self.train_frac < 1:
            raise ValueError(f"train_frac must be in (0, 1), got {self.train_frac}")
        self.chars = sorted(set(self.text))
        self._stoi = {c: i for i, c in enumerate(self.chars)}
        # uint32 covers any code point count; converted to int64 only per batch to save memory.
        self.data = np.array([self._stoi[c] for c in self.text], dtype=np.uint32)
        n = int(self.train_frac * len(self.data))
        self.train_data, self.val_data = self.data[:n], self.data[n:]

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    @property
    def vocab(self) -> list[str]:
        """Token strings by id (JSON-serialisable, for checkpoints)."""
        return list(self.chars)

    def encode(self, s: str) -> list[int]:
        """Ids of ``s``; a character never seen in the text is a ``ValueError`` naming it."""
        try:
            return [self._stoi[c] for c in s]
        except KeyError as e:
            raise ValueError(f"character {e.args[0]!r} is not in the vocabulary of "
                             f"{self.source}") from None

    def decode(self, ids) -> str:
        """Text of ``ids``."""
        return "".join(self.chars[int(i)] for i in ids)

    def split_data(self, split: str) -> np.ndarray:
        """The id array of ``'train'`` or ``'valid'`` (alias ``'val'``)."""
        if split == "train":
            return self.train_data
        if split in ("valid", "val"):
            return self.val_data
        raise ValueError(f"unknown split {split!r}; expected 'train' or 'valid'")

    def get_batch(self, split: str, batch_size: int, block_size: int,
                  rng: np.random.Generator | int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``batch_size`` random windows of ``block_size`` chars: x (B, T), y = x shifted by one."""
        data = self.split_data(split)
        if block_size < 1 or batch_size < 1:
            raise ValueError(f"batch_size and block_size must be >= 1, "
                             f"got {batch_size}, {block_size}")
        if len(data) < block_size + 1:
            raise ValueError(f"{self.source}: the {split} split has {len(data)} characters, "
                             f"fewer than block_size + 1 = {block_size + 1}; "
                             "use a longer text or a smaller block")
        starts = _rng(rng).integers(0, len(data) - block_size, size=batch_size)
        idx = starts[:, None] + np.arange(block_size + 1)
        windows = data[idx].astype(np.int64)
        return windows[:, :-1], windows[:, 1:]

    @property
    def config(self) -> dict[str, Any]:
        return dict(name="chars", source=self.source, train_frac=self.train_frac)


def read_text(path: str | os.PathLike) -> str:
    """UTF-8 text of ``path``; a missing file or non-UTF-8 bytes give a clear error with the
    line."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"text file not found: {path}")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 at byte {e.start} ({e.reason}); "
                         "convert the file to UTF-8") from None
    # Normalise Windows line endings so that the same text gives the same vocabulary everywhere.
    return text.lstrip("\ufeff").replace("\r\n", "\n")


def chars_task(path: str | os.PathLike | None = None, block_size: int | None = None,
               train_frac: float = 0.9) -> CharTask:
    """Character LM on the UTF-8 file ``path``, or on :func:`stdlib_docstrings` when ``path`` is
    None.

    With ``block_size`` given, a text too short for one window in either split fails here rather
    than at the first batch.
    """
    if path is None:
        task = CharTask(stdlib_docstrings(), source="<stdlib docstrings>", train_frac=train_frac)
    else:
        task = CharTask(read_text(path), source=os.fspath(path), train_frac=train_frac)
    if block_size is not None:
        for split in ("train", "valid"):
            n = len(task.split_data(split))
            if n < block_size + 1:
                raise ValueError(f"{task.source}: the {split} split has {n} characters, fewer than "
                                 f"block_size + 1 = {block_size + 1}")
    return task


def add_task(ndigit: int = 2, seed: int = 0, n_valid: int | None = None,
             n_test: int | None = None) -> AdditionTask:
    """n-digit addition (see :class:`AdditionTask`)."""
    return AdditionTask(ndigit=ndigit, seed=seed, n_valid=n_valid, n_test=n_test)


LM_TASKS = {"add": add_task, "chars": chars_task}


def make_lm_task(name: str, seed: int = 0, **kw):
    """Build LM task ``name`` ('add' or 'chars'); unknown names raise ``ValueError`` listing them.

    ``seed`` only affects ``add`` (which pairs are held out); ``chars`` is fixed by its text, and
    the batches' randomness comes from the ``rng`` given to ``get_batch``.
    """
    if name not in LM_TASKS:
        raise ValueError(f"unknown language-model task {name!r}; known: {', '.join(LM_TASKS)}")
    try:
        if name == "add":
            return add_task(seed=seed, **kw)
        return chars_task(**kw)
    except TypeError as e:
        if "unexpected keyword argument" in str(e):
            raise ValueError(f"task {name!r}: {e}") from None
        raise
