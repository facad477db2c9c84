"""models/apps/pictures.py and its families (attention_pictures, formula_pictures, run_pictures,
figures): attention maps (shapes, the causal mask, CSV/PNG), PE, schedule, curves.

matplotlib is optional: every test runs without it (CSV only, forced by monkeypatching), and
the PNG checks run when it is importable.
"""
import csv
import json
import os

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.models.apps import (attention_pictures, formula_pictures, pictures,
                                 run_pictures)
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.training.trainer import TrainConfig
from tinygradx.models.nets.transformer import make_model, sinusoidal_table

HAVE_MPL = pictures.have_matplotlib()


@pytest.fixture
def no_mpl(monkeypatch):
    """Pretend matplotlib is not installed (each picture module took figure_class at import)."""
    for module in (attention_pictures, formula_pictures, run_pictures):
        monkeypatch.setattr(module, "figure_class", lambda: None)


def _tiny_translation_model(norm_first=False):
    tgx.manual_seed(0)
    return make_model(12, 14, N=2, d_model=16, d_ff=32, h=2, dropout=0.1, norm_first=norm_first)


@pytest.mark.parametrize("norm_first", [False, True])
def test_translation_attention_shapes_and_causal_mask(norm_first):
    model = _tiny_translation_model(norm_first)
    maps = pictures.translation_attention(model, [4, 5, 6, 7, 8], [9, 10, 11])
    assert set(maps) == {"encoder_self", "decoder_self", "cross"}
    assert maps["encoder_self"].shape == (2, 2, 5, 5)       # (L, h, S, S)
    assert maps["decoder_self"].shape == (2, 2, 4, 4)       # (L, h, T, T), T = 3 + <bos>
    assert maps["cross"].shape == (2, 2, 4, 5)              # (L, h, T, S)
    for a in maps.values():
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
    dec = maps["decoder_self"]
    assert np.all(np.triu(dec, k=1) == 0.0)                 # the mask: exactly 0 above the diagonal
    assert np.all(dec[..., np.tril(np.ones((4, 4), dtype=bool))] > 0.0)   # and only there
    assert np.all(maps["encoder_self"] > 0.0)               # no mask in the encoder
    assert model.training                                   # eval() was undone


def test_gpt_attention_is_causal():
    tgx.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=10, n_layer=3, n_head=2, n_embd=16))
    maps = pictures.gpt_attention(model, [1, 2, 3, 4, 5, 6])
    assert set(maps) == {"self"}
    a = maps["self"]
    assert a.shape == (3, 2, 6, 6)
    assert np.all(np.triu(a, k=1) == 0.0)
    np.testing.assert_allclose(a[:, :, 0, 0], 1.0)         # the first token sees only itself


def test_record_attn_fallback_gives_the_same_maps(monkeypatch):
    """When no softmax op is seen (e.g. a fused attention op), the models' flags are used."""
    model = _tiny_translation_model()
    observed = pictures.translation_attention(model, [4, 5, 6], [9, 10])
    monkeypatch.setattr(attention_pictures, "_ATTN_SUFFIXES", ())
    flagged = pictures.translation_attention(model, [4, 5, 6], [9, 10])
    assert set(flagged) == set(observed)
    for k in observed:
        np.testing.assert_allclose(flagged[k], observed[k], atol=1e-6)


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _maps_and_labels():
    """Attention maps of a tiny untrained translation model on 'abc' -> 'xy', with labels."""
    model = _tiny_translation_model()
    maps = pictures.translation_attention(model, [4, 5, 6], [9, 10])
    labels = {"encoder_self": (list("abc"), list("abc")),
              "decoder_self": (["<bos>", "x", "y"],) * 2,
              "cross": (["<bos>", "x", "y"], list("abc"))}
    return maps, labels


def test_save_attention_writes_csv_without_matplotlib(tmp_path, no_mpl):
    maps, labels = _maps_and_labels()
    written = pictures.save_attention(maps, labels, str(tmp_path))
    assert all(len(p) == 1 and p[0].endswith(".csv") for p in written.values())
    rows = _read_csv(tmp_path / "attention_cross.csv")
    assert rows[0] == ["layer", "head", "query", "query_token", "key", "key_token", "weight"]
    assert len(rows) == 1 + 2 * 2 * 3 * 3                   # L * h * T * S cells
    assert rows[1][3] == "<bos>" and rows[1][5] == "a"
    # the CSV holds the same numbers as the array
    w = np.array([float(r[6]) for r in rows[1:]]).reshape(maps["cross"].shape)
    np.testing.assert_allclose(w, maps["cross"], rtol=1e-5)
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_save_attention_writes_png_with_matplotlib(tmp_path):
    maps, labels = _maps_and_labels()
    written = pictures.save_attention(maps, labels, str(tmp_path))
    for kind, paths in written.items():
        assert paths[1].endswith(f"attention_{kind}.png")
        with open(paths[1], "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_ascii_heatmap_shows_the_mask():
    a = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    text = pictures.ascii_heatmap(a, list("abc"), list("abc"))
    lines = text.splitlines()
    assert lines[0].strip() == "abc"
    assert lines[1] == "a @  "                              # full weight, then two blanks
    assert lines[3].endswith("===") or lines[3][-3:].strip()  # three equal weights


def test_attention_from_checkpoint(tmp_path, no_mpl):
    from tinygradx.models.training.trainer import Trainer
    cfg = TrainConfig(task="reverse", n_layer=1, d_model=16, n_head=2, max_steps=1,
                      n_train=50, out_dir=str(tmp_path / "run"), progress=False)
    trainer = Trainer(cfg, log=lambda *a: None)
    path = trainer.save(str(tmp_path / "ck.npz"))
    maps = pictures.attention_from_checkpoint(path, "abcd", str(tmp_path / "pics"),
                                              target="dcba")
    assert maps["encoder_self"].shape == (1, 2, 4, 4)
    assert maps["decoder_self"].shape == (1, 2, 5, 5)
    assert maps["cross"].shape == (1, 2, 5, 4)
    assert np.all(np.triu(maps["decoder_self"], k=1) == 0.0)
    rows = _read_csv(tmp_path / "pics" / "attention_decoder_self.csv")
    assert [r[3] for r in rows[1:6:1]] == ["<bos>"] * 5     # query 0 against keys 0..4
    # without a target the model's own (greedy) translation is used
    maps = pictures.attention_from_checkpoint(path, "abc", str(tmp_path / "pics2"))
    assert maps["cross"].shape[-1] == 3


def test_positional_encoding(tmp_path, no_mpl):
    pe = pictures.positional_encoding(20, 8, str(tmp_path))
    assert pe.shape == (20, 8)
    np.testing.assert_allclose(pe, sinusoidal_table(20, 8))
    rows = _read_csv(tmp_path / "positional_encoding.csv")
    assert rows[0][:3] == ["position", "dim0", "dim1"]
    assert len(rows) == 21
    assert float(rows[1][2]) == 1.0                         # PE(0, 1) = cos 0


def test_lr_schedule_matches_the_trainer(tmp_path, no_mpl):
    from tinygradx.models.training.trainer import Trainer
    cfgs = {"cosine": TrainConfig(lr=1e-3, warmup=10, max_steps=50),
            "noam": TrainConfig(lr=1e-3, warmup=10, schedule="noam", max_steps=50)}
    curves = pictures.lr_schedule(cfgs, out_dir=str(tmp_path))
    assert set(curves) == {"cosine", "noam"}
    assert curves["cosine"].shape == (50,)
    assert curves["noam"].argmax() == 9                     # the peak is at the warm-up's end
    assert np.isclose(curves["noam"].max(), 1e-3)
    sched = Trainer._schedule(formula_pictures._ScheduleOf(cfgs["cosine"]))
    assert np.allclose(curves["cosine"], [sched(i) for i in range(50)])
    rows = _read_csv(tmp_path / "lr_schedule.csv")
    assert rows[0] == ["step", "cosine", "noam"] and len(rows) == 51


def test_training_curves(tmp_path, no_mpl):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "metrics.jsonl", "w") as f:
        for s in range(1, 7):
            row = {"step": s, "loss": 3.0 / s, "lr": 1e-3 * s, "grad_norm": 1.0}
            if s % 3 == 0:
                row.update(val_loss=3.5 / s, val_exact_match=s / 10)
            f.write(json.dumps(row) + "\n")
    m = pictures.training_curves(str(run), str(tmp_path / "out"))
    assert m["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert np.isnan(m["val_loss"][0]) and np.isclose(m["val_loss"][2], 3.5 / 3)
    rows = _read_csv(tmp_path / "out" / "training_curves.csv")
    assert rows[0] == list(pictures.TRAINING_COLUMNS)
    assert rows[1][3] == "" and rows[3][4] == "0.3"


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_pictures_png_with_matplotlib(tmp_path):
    pictures.positional_encoding(20, 8, str(tmp_path))
    pictures.lr_schedule(TrainConfig(max_steps=30, warmup=5), out_dir=str(tmp_path))
    for name in ("positional_encoding.png", "lr_schedule.png"):
        assert os.path.getsize(tmp_path / name) > 1000


# ------------------------------------------------------------------------------------------
# the masks and label smoothing (formula_pictures)
# ------------------------------------------------------------------------------------------

def test_masks_are_the_ones_the_models_build(tmp_path, monkeypatch):
    from tinygradx.models.apps import formula_pictures
    monkeypatch.setattr(formula_pictures, "figure_class", lambda: None)
    m = formula_pictures.masks((5, 3, 1), str(tmp_path))
    assert np.array_equal(m["causal"], np.tril(np.ones((5, 5), bool)))    # j <= i
    assert np.array_equal(m["padding"], np.arange(5) < np.array([5, 3, 1])[:, None])
    assert m["decoder"].shape == (3, 5, 5)
    assert np.array_equal(m["decoder"][1], np.tril(np.ones((5, 5), bool)) & (np.arange(5) < 3))
    rows = _read_csv(tmp_path / "mask_causal.csv")
    assert rows[0][:3] == ["query", "key0", "key1"] and rows[1][1:] == ["1", "0", "0", "0", "0"]
    assert len(_read_csv(tmp_path / "mask_padding.csv")) == 4


def test_label_smoothing_targets_and_the_loss_minimum(tmp_path, monkeypatch):
    """q = (1 - e) one-hot + e / C, read off F.cross_entropy's gradient; the loss against the
    target's probability c falls to c = 1 without smoothing and has its minimum at
    c = 1 - e + e / C with it."""
    from tinygradx.models.apps import formula_pictures
    monkeypatch.setattr(formula_pictures, "figure_class", lambda: None)
    C, target, eps = 5, 2, (0.0, 0.1, 0.3)
    s = formula_pictures.label_smoothing(C, target, eps, str(tmp_path))
    for e, q in zip(eps, s["targets"], strict=True):
        want = np.full(C, e / C)
        want[target] += 1 - e
        np.testing.assert_allclose(q, want, atol=1e-12)
    conf, loss = s["confidence"], s["loss"]
    assert np.all(np.diff(loss[0]) < 0)                         # e = 0: lower all the way to 1
    step = conf[1] - conf[0]
    for e, row in zip(eps[1:], loss[1:], strict=True):
        assert abs(conf[row.argmin()] - (1 - e + e / C)) <= step
    assert len(_read_csv(tmp_path / "label_smoothing_targets.csv")) == len(eps) + 1


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_masks_and_label_smoothing_png(tmp_path):
    from tinygradx.models.apps import formula_pictures
    formula_pictures.masks((4, 2), str(tmp_path))
    formula_pictures.label_smoothing(4, 1, (0.0, 0.2), str(tmp_path))
    for name in ("masks.png", "label_smoothing.png"):
        assert os.path.getsize(tmp_path / name) > 1000


# ------------------------------------------------------------------------------------------
# Chinese labels (lang="zh") and their font
# ------------------------------------------------------------------------------------------

def _drawn_texts(monkeypatch, fn, *args, **kwargs):
    """The texts of the figures `fn` saves, and the lang each was saved with (not written)."""
    import sys
    saved = []
    monkeypatch.setattr(sys.modules[fn.__module__], "save_figure",
                        lambda fig, path, lang="en": saved.append((fig, lang)))
    fn(*args, **kwargs)
    from matplotlib.text import Text
    return [(sorted({t.get_text() for t in fig.findobj(Text) if t.get_text()}), lang)
            for fig, lang in saved]


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_formula_pictures_write_their_labels_in_chinese(tmp_path, monkeypatch):
    from tinygradx.models.apps import formula_pictures as fp
    [(zh, lang)] = _drawn_texts(monkeypatch, fp.masks, (4, 2), str(tmp_path), lang="zh")
    assert lang == "zh" and "注意力掩码（深色：可以关注）" in zh and "键" in zh
    assert "解码器，长度 4" in zh and not any("attention masks" in t for t in zh)
    [(en, lang)] = _drawn_texts(monkeypatch, fp.masks, (4, 2), str(tmp_path))
    assert lang == "en" and "attention masks (dark: may attend)" in en
    [(zh, _)] = _drawn_texts(monkeypatch, fp.label_smoothing, 4, 1, (0.0, 0.2), str(tmp_path),
                             lang="zh")
    assert {"平滑后的目标分布", "类别（目标：1）", "交叉熵"} <= set(zh)
    with pytest.raises(ValueError, match="lang must be 'en' or 'zh'"):
        fp.masks((4, 2), str(tmp_path), lang="fr")


def _ink_rows(path):
    from matplotlib.image import imread
    a = imread(path)
    return int((a[..., :3].mean(-1) < 0.5).any(axis=1).sum())


def _one_line_figure(text):
    fig = pictures.figure_class()(figsize=(3, 1))
    fig.text(0.1, 0.4, text, fontsize=28)
    return fig


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_chinese_labels_are_drawn_with_a_cjk_font(tmp_path):
    from tinygradx.graph import renderer
    if not renderer.cjk_fonts():
        pytest.skip("no CJK font installed (fonts-noto-cjk)")
    # 一 is one horizontal stroke: drawn, it inks a few rows; DejaVu Sans's missing-glyph box
    # inks the whole line height
    zh = pictures.save_figure(_one_line_figure("一一一"), str(tmp_path / "zh.png"), lang="zh")
    with pytest.warns(UserWarning, match="missing from font"):
        en = pictures.save_figure(_one_line_figure("一一一"), str(tmp_path / "en.png"))
    assert _ink_rows(zh) <= 6 < _ink_rows(en)


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_without_a_cjk_font_zh_pictures_say_which_package_to_install(tmp_path, monkeypatch):
    from tinygradx.graph import renderer
    monkeypatch.setattr(renderer, "cjk_fonts", lambda: ())
    with pytest.warns(renderer.FontWarning, match="fonts-noto-cjk"):
        pictures.save_figure(_one_line_figure("x"), str(tmp_path / "x.png"), lang="zh")


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_pe_and_schedule_pictures_write_their_labels_in_chinese(tmp_path, monkeypatch):
    [(zh, lang)] = _drawn_texts(monkeypatch, pictures.positional_encoding, 8, 4, str(tmp_path),
                                lang="zh")
    assert lang == "zh" and {"位置", "正弦位置编码 PE，max_len=8，d_model=4"} <= set(zh)
    [(en, lang)] = _drawn_texts(monkeypatch, pictures.positional_encoding, 8, 4, str(tmp_path))
    assert lang == "en" and "sinusoidal PE, max_len=8, d_model=4" in en
    [(zh, _)] = _drawn_texts(monkeypatch, pictures.lr_schedule,
                             {"常数": TrainConfig(schedule="constant", max_steps=5)},
                             out_dir=str(tmp_path), lang="zh")
    assert {"学习率调度", "学习率", "步数", "常数"} <= set(zh)


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed")
def test_attention_maps_and_training_curves_in_chinese(tmp_path, monkeypatch):
    A = np.full((1, 2, 3, 3), 1 / 3)
    [(zh, lang)] = _drawn_texts(monkeypatch, pictures.plot_attention, A, list("abc"),
                                list("abc"), "cross-attention (decoder reads H)",
                                str(tmp_path / "a.png"), lang="zh")
    assert lang == "zh" and "第 0 层 第 1 个头" in zh
    assert "交叉注意力（解码器读取 H）（行 = 查询，列 = 键；每行之和为 1）" in zh
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"step": s, "loss": 1.0 / s, "lr": 1e-3, "val_loss": 1.0 / s,
             "val_exact_match": s / 10} for s in (1, 2, 3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    [(zh, _)] = _drawn_texts(monkeypatch, pictures.training_curves, str(run), str(tmp_path),
                             lang="zh")
    assert {"训练损失", "验证损失", "学习率", "步数", "验证集完全匹配（%）"} <= set(zh)
