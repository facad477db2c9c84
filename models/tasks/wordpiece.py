"""BERT's WordPiece tokenizer over a local ``vocab.txt`` (pure Python + numpy).

Two stages, as in BERT (Devlin et al. 2019) and its reference tokenizer:

1. **Basic tokenization** of raw text: drop control characters and normalise whitespace; put spaces
   around CJK ideographs (each becomes its own token, since Chinese has no spaces between words);
   split on whitespace; for uncased models lowercase and strip accents (Unicode NFD, then drop the
   combining marks, so "Café" -> "cafe"); split every punctuation character off as its own token.
2. **WordPiece** on each resulting word: greedy longest-match-first against the vocabulary. The
   first piece is matched as is, every later piece with the ``##`` continuation prefix
   ("unaffable" -> "un", "##aff", "##able"). A word that cannot be covered completely, or that is
   longer than ``max_input_chars_per_word`` characters, becomes a single ``[UNK]``.

Special tokens written literally in the text (``[MASK]``, ``[SEP]`` ...) are kept whole.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["WordPieceTokenizer", "load_vocab"]


def load_vocab(path: str | os.PathLike) -> dict[str, int]:
    """Read a ``vocab.txt``: one token per line, the token's id is its 0-based line number."""
    vocab: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for index, line in enumerate(f):
            # Only the line ending is stripped: tokens themselves may contain other whitespace.
            vocab[line.rstrip("\r\n")] = index
    return vocab


# ---------------------------------------------------------------------------------------------
# character classes (the definitions BERT's reference tokenizer uses)


def _is_whitespace(ch: str) -> bool:
    # \t \n \r are category Cc but count as whitespace, not as control characters to drop.
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # All non-alphanumeric printable ASCII counts as punctuation ("$", "^", "`" are symbols in
    # Unicode, category S*), so that e.g. "$5" splits into "$", "5".
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


# The CJK Unified Ideographs blocks (and compatibility blocks). Deliberately not Hangul, Hiragana
# or Katakana: those are written with spaces or are handled by WordPiece like other scripts.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


class WordPieceTokenizer:
    """BERT's tokenizer: basic tokenization, then greedy longest-match-first WordPiece.

    ``vocab`` is a path to a ``vocab.txt``, a token -> id mapping, or a list of tokens (id = index).
    ``do_lower_case`` selects the uncased behaviour (lowercase; accents stripped unless
    ``strip_accents=False``); ``strip_accents=True`` strips them for cased models too.
    ``[PAD]``, ``[UNK]``, ``[CLS]`` and ``[SEP]`` (or the names given) must be in the vocabulary.
    """

    def __init__(
        self,
        vocab: str | os.PathLike | Mapping[str, int] | Sequence[str],
        *,
        do_lower_case: bool = True,
        strip_accents: bool | None = None,
        tokenize_chinese_chars: bool = True,
        unk_token: str = "[UNK]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        cls_token: str = "[CLS]",
        mask_token: str = "[MASK]",
        max_input_chars_per_word: int = 100,
    ):
        if isinstance(vocab, (str, os.PathLike)):
            self.vocab = load_vocab(vocab)
        elif isinstance(vocab, Mapping):
            self.vocab = dict(vocab)
        else:
            self.vocab = {tok: i for i, tok in enumerate(vocab)}
        self.ids_to_tokens = {i: tok for tok, i in self.vocab.items()}
        self.do_lower_case = do_lower_case
        # None follows the lowercasing choice, as BERT's uncased checkpoints were trained that way.
        self.strip_accents = do_lower_case if strip_accents is None else strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.max_input_chars_per_word = max_input_chars_per_word
        self.unk_token, self.sep_token, self.pad_token = unk_token, sep_token, pad_token
        self.cls_token, self.mask_token = cls_token, mask_token
        for name, tok in (("unk", unk_token), ("sep", sep_token), ("pad", pad_token),
                          ("cls", cls_token)):
            if tok not in self.vocab:
                raise ValueError(f"{name}_token {tok!r} is not in the vocabulary")
        self.unk_token_id = self.vocab[unk_token]
        self.sep_token_id = self.vocab[sep_token]
        self.pad_token_id = self.vocab[pad_token]
        self.cls_token_id = self.vocab[cls_token]
        self.mask_token_id = self.vocab.get(mask_token)
        self.special_tokens = [t for t in (unk_token, sep_token, pad_token, cls_token, mask_token)
                               if t in self.vocab]
        self.special_ids = {self.vocab[t] for t in self.special_tokens}
        # Longest first so that a special token that contains another one wins.
        alternatives = "|".join(re.escape(t) for t in sorted(self.special_tokens, key=len,
                                                             reverse=True))
        self._special_re = re.compile(f"({alternatives})")

    @classmethod
    def from_dir(cls, directory: str | os.PathLike, **overrides) -> WordPieceTokenizer:
        """Build from a Hugging Face model folder: ``vocab.txt`` plus, if present, the
        ``do_lower_case`` / ``strip_accents`` / ``tokenize_chinese_chars`` and special-token
        settings of its ``tokenizer_config.json``. Keyword arguments override both."""
        directory = os.fspath(directory)
        vocab_path = os.path.join(directory, "vocab.txt")
        if not os.path.isfile(vocab_path):
            raise FileNotFoundError(f"no vocab.txt in {directory!r}")
        kwargs: dict = {}
        config_path = os.path.join(directory, "tokenizer_config.json")
        if os.path.isfile(config_path):
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
            for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars", "unk_token",
                        "sep_token", "pad_token", "cls_token", "mask_token"):
                if isinstance(config.get(key), (bool, str)):
                    kwargs[key] = config[key]
        kwargs.update(overrides)
        return cls(vocab_path, **kwargs)

    @property
    def vocab_size(self) -> int:
        """Number of entries in the vocabulary."""
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    # -----------------------------------------------------------------------------------------
    # stage 1: basic tokenization

    def _clean_text(self, text: str) -> str:
        out = []
        for ch in text:
            if ch == "\x00" or ch == "\ufffd" or _is_control(ch):
                continue
            out.append(" " if _is_whitespace(ch) else ch)
        return "".join(out)

    def _space_cjk(self, text: str) -> str:
        return "".join(f" {ch} " if _is_cjk(ch) else ch for ch in text)

    @staticmethod
    def _strip_accents(word: str) -> str:
        # NFD separates a base letter from its combining accent (category Mn), which we drop.
        return "".join(ch for ch in unicodedata.normalize("NFD", word)
                       if unicodedata.category(ch) != "Mn")

    @staticmethod
    def _split_punctuation(word: str) -> list[str]:
        pieces: list[str] = []
        start_new = True
        for ch in word:
            if _is_punctuation(ch):
                pieces.append(ch)
                start_new = True
            else:
                if start_new:
                    pieces.append("")
                    start_new = False
                pieces[-1] += ch
        return pieces

    def basic_tokenize(self, text: str) -> list[str]:
        """Stage 1 on text without special tokens: clean, CJK split, whitespace split, lowercase
        and accent stripping, punctuation split. Returns the words WordPiece will see."""
        text = self._clean_text(text)
        if self.tokenize_chinese_chars:
            text = self._space_cjk(text)
        # NFC first, so that a precomposed "é" and "e" + combining accent are the same word.
        text = unicodedata.normalize("NFC", text)
        words: list[str] = []
        for word in text.split():
            if self.do_lower_case:
                word = word.lower()
            if self.strip_accents:
                word = self._strip_accents(word)
            words.extend(self._split_punctuation(word))
        return [w for w in words if w]

    # -----------------------------------------------------------------------------------------
    # stage 2: WordPiece

    def wordpiece(self, word: str) -> list[str]:
        """Greedy longest-match-first split of one word into vocabulary pieces (or ``[UNK]``)."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces: list[str] = []
        start = 0
        while start < len(word):
            end = len(word)
            match = None
            while start < end:
                candidate = word[start:end]
                if start > 0:
                    candidate = "##" + candidate
                if candidate in self.vocab:
                    match = candidate
                    break
                end -= 1
            if match is None:
                # No piece fits here: the whole word (not just the rest) is unknown.
                return [self.unk_token]
            pieces.append(match)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """Text -> list of WordPiece tokens (no [CLS]/[SEP] added)."""
        tokens: list[str] = []
        for chunk in self._special_re.split(text):
            if chunk in self.vocab and chunk in self.special_tokens:
                tokens.append(chunk)
                continue
            for word in self.basic_tokenize(chunk):
                tokens.extend(self.wordpiece(word))
        return tokens

    # -----------------------------------------------------------------------------------------
    # ids

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        """Map tokens to ids; tokens not in the vocabulary map to the ``[UNK]`` id."""
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        """Map ids to tokens; an id outside the vocabulary is an error."""
        out = []
        for i in ids:
            i = int(i)
            if i not in self.ids_to_tokens:
                raise ValueError(f"token id {i} is not in the vocabulary (size {len(self)})")
            out.append(self.ids_to_tokens[i])
        return out

    def encode(self, text: str, max_length: int | None = None,
               add_special_tokens: bool = True) -> list[int]:
        """Text -> ids, as ``[CLS] tokens [SEP]`` when ``add_special_tokens``.

        ``max_length`` truncates the word pieces so that the result, special tokens included,
        has at most that many ids (the final ``[SEP]`` is kept).
        """
        ids = self.convert_tokens_to_ids(self.tokenize(text))
        n_special = 2 if add_special_tokens else 0
        if max_length is not None:
            if max_length < n_special:
                raise ValueError(f"max_length={max_length} leaves no room for [CLS] and [SEP]")
            ids = ids[: max_length - n_special]
        if add_special_tokens:
            ids = [self.cls_token_id, *ids, self.sep_token_id]
        return ids

    def batch_encode(self, texts: Sequence[str], max_length: int | None = None,
                     add_special_tokens: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Encode a batch, right-padded with ``[PAD]`` to its longest sequence.

        Returns ``(input_ids, attention_mask)``, both int64 of shape (B, T); the mask is 1 at
        real tokens and 0 at padding.
        """
        if isinstance(texts, str):
            raise TypeError("batch_encode takes a list of texts; use encode() for one text")
        encoded = [self.encode(t, max_length, add_special_tokens) for t in texts]
        T = max((len(e) for e in encoded), default=0)
        input_ids = np.full((len(encoded), T), self.pad_token_id, dtype=np.int64)  # (B, T)
        attention_mask = np.zeros((len(encoded), T), dtype=np.int64)  # (B, T)
        for b, e in enumerate(encoded):
            input_ids[b, : len(e)] = e
            attention_mask[b, : len(e)] = 1
        return input_ids, attention_mask

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True,
               clean_up_tokenization_spaces: bool = True) -> str:
        """Ids -> text: join the pieces, glue ``##`` continuations to the previous piece.

        Lowercasing and accent stripping cannot be undone. With ``clean_up_tokenization_spaces``
        the space before common punctuation and English contractions is removed.
        """
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        tokens = [t for i, t in zip(ids, self.convert_ids_to_tokens(ids), strict=True)
                  if not (skip_special_tokens and int(i) in self.special_ids)]
        text = " ".join(tokens).replace(" ##", "").strip()
        if clean_up_tokenization_spaces:
            for before, after in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","),
                                  (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"),
                                  (" 've", "'ve"), (" 're", "'re")):
                text = text.replace(before, after)
        return text
