"""Task data: determinism, disjoint splits, vocabularies, numbers, dates, TSV, LM tasks,
batching."""

import datetime as dt
import json
import re

import numpy as np
import pytest

from tinygradx.models.tasks import (
    BOS,
    DATE_FORMATS,
    EOS,
    IGNORE,
    PAD,
    SPECIALS,
    UNK,
    AdditionTask,
    CharTask,
    Vocab,
    chars_task,
    format_date,
    iterate_batches,
    make_lm_task,
    make_task,
    make_translation_task,
    normalize_string,
    number_to_chinese,
    number_to_english,
    pad_batch,
    read_tsv_pairs,
    stdlib_docstrings,
)

SMALL = dict(n_train=600, n_valid=100, n_test=100)
SYNTHETIC = ["copy", "reverse", "sort", "numbers", "numbers_zh", "dates"]


# --------------------------------------------------------------------------------------------------
# vocab


def test_vocab_specials_and_round_trip():
    v = Vocab.build([["b", "a", "b"], ["c", "b", "a"]])
    assert v.to_list()[:4] == list(SPECIALS) == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (PAD, BOS, EOS, UNK) == (0, 1, 2, 3)
    assert v.to_list()[4:] == ["b", "a", "c"]  # frequency desc, then token
    assert len(v) == 7
    ids = v.encode(["a", "c", "zzz"])
    assert ids == [5, 6, UNK]
    assert v.decode(ids) == ["a", "c", "<unk>"]
    assert v.decode([BOS, 4, 5, EOS, 6, PAD]) == ["b", "a"]
    assert v.decode([BOS, 4, EOS, PAD], strip_special=False) == ["<bos>", "b", "<eos>", "<pad>"]
    restored = Vocab.from_list(json.loads(json.dumps(v.to_list())))
    assert restored == v and restored.encode(["c"]) == v.encode(["c"])


def test_vocab_build_order_independent_and_min_freq():
    a = Vocab.build([["x", "y"], ["y", "z"], ["y"]], min_freq=1)
    b = Vocab.build([["y"], ["z", "y"], ["y", "x"]])
    assert a == b
    assert Vocab.build([["x", "y"], ["y"]], min_freq=2).to_list()[4:] == ["y"]
    with pytest.raises(ValueError):
        Vocab.from_list(["a", "b"])


# --------------------------------------------------------------------------------------------------
# translation tasks


def _sources(task, split):
    return {task.detok_src(s) for s, _ in task.split(split)}


@pytest.mark.parametrize("name", SYNTHETIC)
def test_translation_deterministic_and_disjoint(name):
    a = make_translation_task(name, seed=3, **SMALL)
    b = make_translation_task(name, seed=3, **SMALL)
    c = make_translation_task(name, seed=4, **SMALL)
    assert a.train == b.train and a.valid == b.valid and a.test == b.test
    assert a.src_vocab == b.src_vocab and a.tgt_vocab == b.tgt_vocab
    assert a.train != c.train
    assert (len(a.train), len(a.valid), len(a.test)) == (600, 100, 100)
    tr, va, te = (_sources(a, s) for s in ("train", "valid", "test"))
    assert len(tr) == 600 and len(va) == 100 and len(te) == 100  # no duplicates inside a split
    assert not tr & va and not tr & te and not va & te
    # Encoded ids round-trip through the vocabularies (vocab built from train covers train).
    for (s, t), (si, ti) in zip(a.train[:50], a.encoded("train")[:50], strict=True):
        assert a.src_vocab.decode(si) == s and a.tgt_vocab.decode(ti) == t
        assert a.encode_src(a.detok_src(s)) == si
        assert a.decode_tgt(ti + [EOS, PAD]) == a.detok_tgt(t)


@pytest.mark.parametrize("name", ["copy", "reverse", "sort"])
def test_symbol_tasks_targets_and_options(name):
    task = make_translation_task(name, seed=0, n_train=300, n_valid=50, n_test=50, alphabet_size=5,
                                 min_len=4, max_len=6)
    fn = {"copy": lambda s: s, "reverse": lambda s: s[::-1], "sort": lambda s: "".join(sorted(s))}
    for s, t in task.train + task.test:
        assert 4 <= len(s) <= 6 and set(s) <= set("abcde")
        assert "".join(t) == fn[name]("".join(s))
    assert len(task.src_vocab) == 4 + 5
    with pytest.raises(ValueError, match="distinct strings"):
        make_translation_task(name, n_train=1000, alphabet_size=2, min_len=3, max_len=4)


NUMBER_CASES = {
    0: ("zero", "零"),
    7: ("seven", "七"),
    10: ("ten", "十"),
    13: ("thirteen", "十三"),
    20: ("twenty", "二十"),
    21: ("twenty one", "二十一"),
    100: ("one hundred", "一百"),
    101: ("one hundred one", "一百零一"),
    110: ("one hundred ten", "一百一十"),
    1000: ("one thousand", "一千"),
    1010: ("one thousand ten", "一千零一十"),
    1984: ("one thousand nine hundred eighty four", "一千九百八十四"),
    10005: ("ten thousand five", "一万零五"),
    100000: ("one hundred thousand", "十万"),
    100010: ("one hundred thousand ten", "十万零一十"),
    150000: ("one hundred fifty thousand", "十五万"),
    999999: ("nine hundred ninety nine thousand nine hundred ninety nine",
             "九十九万九千九百九十九"),
    1100000: ("one million one hundred thousand", "一百一十万"),
    10000005: ("ten million five", "一千万零五"),
    100010000: ("one hundred million ten thousand", "一亿零一万"),
}


@pytest.mark.parametrize("n", sorted(NUMBER_CASES))
def test_number_words(n):
    en, zh = NUMBER_CASES[n]
    assert number_to_english(n) == en
    assert number_to_chinese(n) == zh


def test_numbers_tasks_content():
    en = make_translation_task("numbers", seed=1, **SMALL)
    zh = make_translation_task("numbers_zh", seed=1, **SMALL)
    assert en.train == [(s, t) for s, t in en.train]
    for s, t in en.train + en.test:
        n = int("".join(s))
        assert 0 <= n <= 999_999 and t == number_to_english(n).split()
    for s, t in zh.test:
        assert "".join(t) == number_to_chinese(int("".join(s)))
    # Small numbers (the irregular lexicon) are all in training; lengths are spread out.
    small = {int("".join(s)) for s, _ in en.train if len(s) <= 2}
    assert small == set(range(100))
    assert en.encode_src("1,984") == en.src_vocab.encode(list("1984"))
    with pytest.raises(ValueError):
        make_translation_task("numbers", hi=50, n_train=100, n_valid=10, n_test=10)


def _parse_date(fmt, s):
    """Independent parser (datetime.strptime, C-locale month names) for each format name."""
    if fmt == "mm/dd/yy":  # strptime's %y pivot is 1969, the task's is 1950
        m, d, y = map(int, s.split("/"))
        return dt.date(1900 + y if y >= 50 else 2000 + y, m, d)
    if fmt == "dth_of_month_yyyy":
        s = re.sub(r"^(\d+)(st|nd|rd|th)", r"\1", s)
    pattern = {
        "d_mon_yyyy": "%d %b %Y", "month_d_yyyy": "%B %d, %Y", "zh": "%Y年%m月%d日",
        "dd.mm.yyyy": "%d.%m.%Y", "weekday_month_d_yyyy": "%A, %B %d, %Y", "yyyy/mm/dd": "%Y/%m/%d",
        "mon_d_yyyy_lower": "%b %d %Y", "m/d/yyyy": "%m/%d/%Y", "d_month_yyyy_upper": "%d %B %Y",
        "dth_of_month_yyyy": "%d of %B %Y", "wkd_d_mon_yyyy": "%a %d %b %Y",
    }[fmt]
    return dt.datetime.strptime(s, pattern).date()


def test_date_formats_parse_back():
    assert len(DATE_FORMATS) >= 8
    d0 = dt.date(2026, 11, 30)
    assert format_date(d0, "d_mon_yyyy") == "30 Nov 2026"
    assert format_date(d0, "month_d_yyyy") == "November 30, 2026"
    assert format_date(d0, "zh") == "2026年11月30日"
    assert format_date(d0, "mm/dd/yy") == "11/30/26"
    assert format_date(d0, "weekday_month_d_yyyy") == "Monday, November 30, 2026"
    rng = np.random.default_rng(0)
    days = [dt.date(1950, 1, 1) + dt.timedelta(days=int(k)) for k in rng.integers(0, 36524, 150)]
    days += [dt.date(1950, 1, 1), dt.date(2049, 12, 31), dt.date(2000, 2, 29), dt.date(2011, 3, 13)]
    weekday_names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    for d in days:
        for fmt in DATE_FORMATS:
            s = format_date(d, fmt)
            assert _parse_date(fmt, s) == d, (fmt, s)
            if fmt.startswith(("weekday", "wkd")):
                # strptime ignores weekday names
                assert s.startswith(weekday_names[d.weekday()][:3])
                if fmt.startswith("weekday"):
                    assert s.split(",")[0] == weekday_names[d.weekday()]


def test_dates_task_splits_by_date():
    task = make_translation_task("dates", seed=0, n_train=2000, n_valid=200, n_test=200)
    iso = {split: {task.detok_tgt(t) for _, t in task.split(split)}
           for split in ("train", "valid", "test")}
    assert not iso["train"] & iso["test"] and not iso["train"] & iso["valid"]
    assert not iso["valid"] & iso["test"]
    used = set()
    for s, t in task.train[:500] + task.test:
        src, target = task.detok_src(s), dt.date.fromisoformat(task.detok_tgt(t))
        assert 1950 <= target.year <= 2049
        assert any(format_date(target, f) == src for f in DATE_FORMATS), src
        used.update(f for f in DATE_FORMATS if format_date(target, f) == src)
    assert len(used) == len(DATE_FORMATS)  # every format shows up


def test_registry_errors():
    with pytest.raises(ValueError, match="known: .*copy.*dates"):
        make_translation_task("nope")
    with pytest.raises(ValueError, match="known"):
        make_task("nope")
    with pytest.raises(ValueError, match="unexpected keyword"):
        make_translation_task("copy", colour="red", **SMALL)
    with pytest.raises(ValueError, match="path"):
        make_translation_task("tsv")


# --------------------------------------------------------------------------------------------------
# tsv


def test_normalize_string():
    assert normalize_string("Va-t'en, vite !") == "va t en vite !"
    assert normalize_string("Très  bien.") == "tres bien ."
    assert normalize_string("I'm 42 years old!") == "i m years old !"
    assert normalize_string("Où est-il?") == "ou est il ?"


def _write(tmp_path, text, name="pairs.txt", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


def test_tsv_task(tmp_path):
    lines = []
    words = ["cat", "dog", "bird", "fish", "horse", "mouse", "cow", "sheep", "goat", "pig"]
    fr = ["chat", "chien", "oiseau", "poisson", "cheval", "souris", "vache", "mouton", "chèvre",
          "porc"]
    for i, (w, f) in enumerate(zip(words, fr, strict=True)):
        for j, (w2, f2) in enumerate(zip(words, fr, strict=True)):
            lines.append(f"The {w} sees the {w2}!\tLe {f} voit le {f2} !"
                         f"\tCC-BY 2.0 (France) #{i}{j}")
    lines.append("Go.\tVa !")
    lines.append("Go.\tMarche.")
    lines.append("Go.\tBouge !")
    lines.append("This sentence is far too long to be kept by the filter at all.\tTrop long.")
    lines.append("")  # blank lines are skipped
    path = _write(tmp_path, "\n".join(lines) + "\n")
    task = make_translation_task("tsv", path=str(path), seed=0)
    again = make_translation_task("tsv", path=path, seed=0)
    assert task.train == again.train and task.test == again.test and task.valid == again.valid
    total = len(task.train) + len(task.valid) + len(task.test)
    assert total == 100 + 3  # the long line is filtered; the three "go ." pairs are kept
    tr, va, te = (_sources(task, s) for s in ("train", "valid", "test"))
    assert not tr & va and not tr & te and not va & te
    assert len(va) == 10 and len(te) == 10  # 10% each of 101 distinct sources
    # Word-level vocabularies from the training split only.
    train_words = {w for s, _ in task.train for w in s}
    assert set(task.src_vocab.to_list()[4:]) == train_words
    refs = {**task.references("train"), **task.references("valid"), **task.references("test")}
    assert refs["go ."] == {"va !", "marche .", "bouge !"}
    assert task.tokenize_src("The CAT sees the dog!") == ["the", "cat", "sees", "the", "dog", "!"]
    rev = make_translation_task("tsv", path=path, reverse=True)
    assert all(s[0] in ("le", "va", "marche", "bouge") for s, _ in rev.train)
    # at most 2 words leaves the three "go ." pairs: one source sentence cannot be split into
    # train, validation and test, so it is refused with the counts (not trained on unevaluated)
    with pytest.raises(ValueError, match=r"too few sentence pairs: 104 read, 1 distinct usable "
                                         r"source sentence\(s\) \(1\.\.2 words\)"):
        make_translation_task("tsv", path=path, max_len=2)


def test_tsv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_tsv_pairs(tmp_path / "missing.txt")
    empty = _write(tmp_path, "", "empty.txt")
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        make_translation_task("tsv", path=empty)
    bad = _write(tmp_path, "Hi.\tSalut.\nno tab on this line\n", "bad.txt")
    with pytest.raises(ValueError, match=r"bad\.txt:2"):
        make_translation_task("tsv", path=bad)
    latin1 = _write(tmp_path, "Hi.\tSalut.\nCafé.\tCafé.\n".encode("latin-1"), "latin1.txt")
    with pytest.raises(ValueError, match=r"latin1\.txt:2.*UTF-8"):
        read_tsv_pairs(latin1)


# --------------------------------------------------------------------------------------------------
# language-model tasks


def test_add_task_encoding_and_split():
    task = make_lm_task("add", seed=0)
    assert isinstance(task, AdditionTask) and task.ndigit == 2 and task.vocab_size == 10
    seq = task.encode([(47, 85)])
    assert seq.tolist() == [[4, 7, 8, 5, 2, 3, 1]]  # 47, 85, 132 reversed
    assert task.prompt([(47, 85), (3, 9)]).tolist() == [[4, 7, 8, 5], [0, 3, 0, 9]]
    x, y = task.xy([(47, 85)])
    assert x.tolist() == [[4, 7, 8, 5, 2, 3]]
    assert y.tolist() == [[IGNORE, IGNORE, IGNORE, 2, 3, 1]]
    assert task.decode_answer([[2, 3, 1], [0, 0, 2]]).tolist() == [132, 200]
    assert task.exact_match([(47, 85), (99, 99)], [[2, 3, 1], [8, 9, 0]]) == 0.5
    # Held-out pairs never appear in training batches; same seed, same held-out pairs.
    assert len(task.valid) == len(task.test) == 500
    held = {tuple(p) for p in np.concatenate([task.valid, task.test]).tolist()}
    assert len(held) == 1000
    train = task.sample_train_pairs(20000, np.random.default_rng(1))
    assert not held & {tuple(p) for p in train.tolist()}
    assert np.array_equal(make_lm_task("add", seed=0).test, task.test)
    assert not np.array_equal(make_lm_task("add", seed=1).test, task.test)
    xb, yb = task.get_batch("train", 8, np.random.default_rng(0))
    xb2, _ = task.get_batch("train", 8, np.random.default_rng(0))
    assert xb.shape == yb.shape == (8, 6) and xb.dtype == np.int64 and np.array_equal(xb, xb2)
    xt, yt = task.get_batch("test", 4, 0)
    test_pairs = {tuple(p) for p in task.test.tolist()}
    assert {(a * 10 + b, c * 10 + d) for a, b, c, d in xt[:, :4].tolist()} <= test_pairs
    assert (yt[:, :3] == IGNORE).all()
    t3 = make_lm_task("add", ndigit=3, seed=0)
    assert t3.encode([(999, 999)]).tolist() == [[9, 9, 9, 9, 9, 9, 8, 9, 9, 1]]
    assert t3.block_size == 9


def test_chars_task_file_batches_and_split(tmp_path):
    text = "".join(chr(ord("a") + (i * 7) % 26) for i in range(1000)) + "\nend"
    p = _write(tmp_path, text, "corpus.txt")
    task = make_lm_task("chars", path=str(p))
    assert isinstance(task, CharTask)
    assert task.chars == sorted(set(text)) and task.vocab_size == len(set(text))
    assert task.decode(task.encode("hello")) == "hello"
    assert len(task.train_data) == int(0.9 * len(text))
    assert task.decode(task.train_data) + task.decode(task.val_data) == text  # file order
    x, y = task.get_batch("train", 5, 16, np.random.default_rng(0))
    x2, y2 = task.get_batch("train", 5, 16, np.random.default_rng(0))
    assert x.shape == y.shape == (5, 16) and x.dtype == y.dtype == np.int64
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    assert np.array_equal(x[:, 1:], y[:, :-1])
    train_text = task.decode(task.train_data)
    for row_x, row_y in zip(x, y, strict=True):
        window = task.decode(row_x) + task.decode(row_y[-1:])
        assert window in train_text
    xv, _ = task.get_batch("val", 3, 8, 1)
    assert all(task.decode(r) in task.decode(task.val_data) for r in xv)
    with pytest.raises(ValueError, match="block_size"):
        task.get_batch("valid", 2, 200, 0)  # validation split is ~100 characters
    with pytest.raises(ValueError, match="not in the vocabulary"):
        task.encode("Z")


def test_chars_task_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        chars_task(tmp_path / "nope.txt")
    bad = _write(tmp_path, b"ok\n\xff\xfe bad", "bin.txt")
    with pytest.raises(ValueError, match=r"bin\.txt:2.*UTF-8"):
        chars_task(bad)
    short = _write(tmp_path, "abcdefghij" * 3, "short.txt")
    with pytest.raises(ValueError, match="block_size"):
        chars_task(short, block_size=64)
    with pytest.raises(ValueError, match="at least 2"):
        chars_task(_write(tmp_path, "", "empty.txt"))


def test_chars_default_corpus_is_deterministic():
    text = stdlib_docstrings()
    assert text == stdlib_docstrings()
    assert len(text) > 200_000
    assert set(text) <= set("\n" + "".join(chr(c) for c in range(32, 127)))
    task = chars_task(block_size=64)
    assert task.text == text and task.vocab_size <= 96


# --------------------------------------------------------------------------------------------------
# batching


def test_pad_batch_shapes_and_padding():
    pairs = [([5, 6, 7], [8, 9]), ([4], [8, 9, 10, 11])]
    b = pad_batch(pairs)
    assert b.src.tolist() == [[5, 6, 7], [4, PAD, PAD]]
    assert b.src_key_padding.tolist() == [[False, False, False], [False, True, True]]
    assert b.tgt_in.tolist() == [[BOS, 8, 9, PAD, PAD], [BOS, 8, 9, 10, 11]]
    assert b.tgt_out.tolist() == [[8, 9, EOS, PAD, PAD], [8, 9, 10, 11, EOS]]
    assert b.tgt_key_padding.tolist() == [[False] * 3 + [True] * 2, [False] * 5]
    assert b.src.dtype == b.tgt_in.dtype == b.tgt_out.dtype == np.int64
    assert b.src_key_padding.dtype == bool and len(b) == 2 and b.n_tokens == 8
    # Teacher forcing: tgt_in is tgt_out shifted right by one, starting with <bos>.
    assert np.array_equal(b.tgt_in[:, 1:][~b.tgt_key_padding[:, 1:]],
                          b.tgt_out[:, :-1][~b.tgt_key_padding[:, 1:]])
    with pytest.raises(ValueError):
        pad_batch([([], [1])])


@pytest.mark.parametrize("bucket", [False, True])
def test_iterate_batches_deterministic(bucket):
    task = make_translation_task("copy", seed=0, n_train=257, n_valid=10, n_test=10)
    data = task.encoded("train")

    def run(seed):
        return list(iterate_batches(data, 32, np.random.default_rng(seed), bucket=bucket,
                                    bucket_factor=4))

    a, b, c = run(0), run(0), run(1)
    assert len(a) == 9 and sum(len(x) for x in a) == 257  # last batch partial
    assert all(np.array_equal(x.src, y.src) and np.array_equal(x.tgt_out, y.tgt_out)
               for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x.src, y.src) for x, y in zip(a, c, strict=True)
                   if x.src.shape == y.src.shape)
    seen = sorted(tuple(r[~m]) for x in a for r, m in zip(x.src, x.src_key_padding, strict=True))
    assert seen == sorted(tuple(s) for s, _ in data)  # every example exactly once
    if bucket:  # bucketing keeps padding small: widths within a batch differ little
        spread = [np.ptp((~x.src_key_padding).sum(1)) for x in a]
        assert np.mean(spread) <= 3
    dropped = list(iterate_batches(data, 32, np.random.default_rng(0), bucket=bucket,
                                   drop_last=True))
    assert len(dropped) == 8 and all(len(x) == 32 for x in dropped)
