"""Chinese labels in pictures: the CJK font chosen for DOT and matplotlib, and the one-line note
when a picture would draw them as empty boxes. The drawing tests skip without a CJK font."""
from __future__ import annotations

import pytest

from tinygradx.graph import renderer, viz


@pytest.fixture
def fonts(monkeypatch):
    """Pretend fontconfig lists these families for :lang=zh (None: no fc-list)."""
    def use(groups):
        renderer._cjk_files.cache_clear()
        monkeypatch.setattr(renderer, "_fontconfig_families", lambda: groups)
        monkeypatch.setattr(renderer, "_matplotlib_families", lambda: [])
    yield use
    renderer._cjk_files.cache_clear()


def test_installed_families_come_in_preference_order(fonts):
    fonts([(["WenQuanYi Zen Hei", "文泉驿正黑"], "/f/wqy.ttc"), (["Zzz Song"], "/f/z.ttf"),
           (["Noto Sans CJK SC", "Noto Sans CJK SC Regular"], "/f/noto.ttc")])
    assert renderer.cjk_fonts() == ("Noto Sans CJK SC", "WenQuanYi Zen Hei", "Zzz Song")
    assert renderer.cjk_font_file("WenQuanYi Zen Hei") == "/f/wqy.ttc"
    chain = renderer.dot_fontname("zh").split(",")
    assert chain[:2] == ["Helvetica", "Noto Sans CJK SC"] and len(chain) == len(set(chain))
    assert renderer.dot_fontname("en") == "Helvetica"


def test_without_a_cjk_font_the_dot_still_names_the_common_ones(fonts):
    fonts([])
    assert renderer.cjk_fonts() == ()
    chain = renderer.dot_fontname("zh").split(",")
    assert chain[0] == "Helvetica" and "Noto Sans CJK SC" in chain and "PingFang SC" in chain


def test_the_zh_graph_names_the_chain_and_the_english_one_helvetica(fonts):
    fonts([(["WenQuanYi Zen Hei"], "/f/wqy.ttc")])
    x = viz.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    zh, en = viz.to_dot_source(loss, lang="zh"), viz.to_dot_source(loss)
    assert 'node [fontname="Helvetica,WenQuanYi Zen Hei,' in zh
    assert "node [fontname=Helvetica" in en


def test_the_note_says_when_chinese_would_be_boxes(fonts):
    fonts([])
    label = 'digraph { a [label="梯度"] }'
    assert "fonts-noto-cjk" in renderer.cjk_note("dot", "png", label)
    assert "built-in Latin fonts" in renderer.cjk_note("graphviz-pure", "png", label)
    assert renderer.cjk_note("graphviz-pure", "svg", label) is None     # the viewer draws it
    assert renderer.cjk_note("dot", "png", 'digraph { a [label="Q·Kᵀ/√d_k → A"] }') is None
    fonts([(["WenQuanYi Zen Hei"], "/f/wqy.ttc")])
    assert renderer.cjk_note("dot", "png", label) is None
    assert "\n" not in renderer.cjk_note("graphviz-pure", "jpeg", label)


def _available(kind):
    try:
        return viz.find_renderer(kind)[0] == kind
    except viz.RendererNotFound:
        return False


@pytest.mark.skipif(not _available("graphviz-pure"), reason="graphviz-pure is not installed")
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_graph_cli_says_in_one_line_that_graphviz_pure_png_has_no_chinese(lang, tmp_path,
                                                                           capsys):
    from tinygradx.models.apps.inspect_models import build_graph_for_cli
    out = str(tmp_path / "g.png")
    build_graph_for_cli("gpt", None, 1, 2, out, renderer="graphviz-pure", lang=lang, log=None)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert open(out, "rb").read(4) == b"\x89PNG"
    if lang == "zh":
        assert len(notes) == 1 and "graphviz-pure" in notes[0] and ".svg" in notes[0]
    else:
        assert notes == []


def _ink_rows(png_bytes):
    """Rows of the picture holding a dark pixel."""
    import io
    image = pytest.importorskip("matplotlib.image")
    a = image.imread(io.BytesIO(png_bytes), format="png")
    return int((a[..., :3].mean(-1) < 0.5).any(axis=1).sum())


@pytest.mark.skipif(not _available("dot"), reason="system Graphviz (dot) is not installed")
@pytest.mark.skipif(not renderer.cjk_fonts(), reason="no CJK font installed (fonts-noto-cjk)")
def test_dot_draws_the_chinese_glyphs_not_boxes():
    # 一 is one horizontal stroke: drawn, it inks a few rows; a missing glyph's box (with the
    # code point written in it) inks the whole line height.
    src = (f'digraph {{ node [fontname="{renderer.dot_fontname("zh")}" shape=plaintext '
           f'fontsize=28] a [label="一一一"] }}')
    assert renderer.cjk_note("dot", "png", src) is None
    assert _ink_rows(viz.pipe(src, "png", renderer="dot")) <= 6
