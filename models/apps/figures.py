"""What every picture module shares: matplotlib as an optional extra (`figure_class`, None
without it), writing a figure as a PNG (`save_figure`, with a CJK font for lang="zh"), the
labels' language (`words`), the output folder and a matrix as CSV.

Nothing here imports matplotlib at module import time, so importing a picture module is free.
The picture modules (attention_pictures.py, formula_pictures.py, run_pictures.py, and the
experiments' plots) take these names at their import; tests that pretend matplotlib is missing
replace `figure_class` in the module they test.
"""
from __future__ import annotations

import csv
import logging
import os
import warnings

__all__ = ["have_matplotlib", "figure_class", "save_figure", "cjk_text", "words", "ensure_dir",
           "write_matrix_csv"]


def have_matplotlib():
    """Whether PNGs will be written (matplotlib importable)."""
    return figure_class() is not None


def figure_class():
    """matplotlib.figure.Figure, or None without matplotlib.

    The object-oriented Figure (not pyplot) needs no backend and touches no global state, so
    drawing here never changes what a Jupyter session or a user's pyplot is doing.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def save_figure(fig, path, lang="en"):
    """Write `fig` as a PNG; lang="zh" first gives its text a CJK font (`cjk_text`)."""
    # a CJK face of weight 500 (WenQuanYi) makes matplotlib log that it has no "normal" one
    log = logging.getLogger("matplotlib.font_manager")
    quiet = lambda record: "find font weight" not in record.getMessage()   # noqa: E731
    log.addFilter(quiet)
    try:
        if lang == "zh":
            cjk_text(fig)
        fig.tight_layout()                 # keep tick labels of neighbouring panels apart
        fig.savefig(path, dpi=100, bbox_inches="tight")
    finally:
        log.removeFilter(quiet)
    return path


def cjk_text(fig):
    """Draw every text of `fig` in DejaVu Sans (matplotlib's own) falling back, glyph by glyph,
    to the best CJK font installed (`renderer.cjk_fonts`), so Chinese labels are not boxes.

    Set on the figure's texts, not in rcParams, so no global setting changes. The font file
    is added to matplotlib's font list, whose cache may predate the font's installation. With
    no CJK font this warns (renderer.FontWarning) once, with the package to install."""
    from matplotlib import font_manager
    from matplotlib.text import Text

    from tinygradx.graph import renderer
    families = renderer.cjk_fonts()
    if not families:
        warnings.warn(renderer.cjk_note("matplotlib", "png", "中"), renderer.FontWarning,
                      stacklevel=3)
        return fig
    path = renderer.cjk_font_file(families[0])
    font_manager.fontManager.addfont(path)
    name = font_manager.FontProperties(fname=path).get_name()
    for draw in (True, False):
        for text in fig.findobj(Text):
            text.set_fontfamily(["DejaVu Sans", name])
        if draw:
            fig.draw_without_rendering()   # make the tick labels a draw makes, then set theirs
    return fig


def words(table, lang):
    """A lookup of a picture's labels: the text itself in English, `table`'s entry in zh."""
    if lang not in ("en", "zh"):
        raise ValueError(f"lang must be 'en' or 'zh', got {lang!r}")
    return (lambda text: table.get(text, text)) if lang == "zh" else (lambda text: text)


def ensure_dir(out_dir):
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    return out_dir or "."


def write_matrix_csv(M, header, path, index_name):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([index_name] + list(header))
        for i, row in enumerate(M):
            w.writerow([i] + [f"{v:.6g}" for v in row])
    return path

