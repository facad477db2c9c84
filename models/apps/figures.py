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
import html
import json
import logging
import os
import re
import warnings

__all__ = ["have_matplotlib", "figure_class", "save_figure", "cjk_text", "words", "ensure_dir",
           "write_matrix_csv", "figure_fingerprint", "picture_fingerprint", "FINGERPRINT_KEY",
           "svg_fingerprint", "same_picture"]

# the PNG text chunk that carries what a picture shows (`figure_fingerprint`)
FINGERPRINT_KEY = "tinygradx-picture"


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
    """Write `fig` as a PNG; lang="zh" first gives its text a CJK font (`cjk_text`). The PNG
    carries `figure_fingerprint(fig)` in a text chunk (FINGERPRINT_KEY): what it shows, so a
    check can compare a committed picture with what the code draws now without its pixels."""
    # a CJK face of weight 500 (WenQuanYi) makes matplotlib log that it has no "normal" one
    log = logging.getLogger("matplotlib.font_manager")
    quiet = lambda record: "find font weight" not in record.getMessage()   # noqa: E731
    log.addFilter(quiet)
    try:
        if lang == "zh":
            cjk_text(fig)
        fig.tight_layout()                 # keep tick labels of neighbouring panels apart
        fig.savefig(path, dpi=100, bbox_inches="tight",
                    metadata={FINGERPRINT_KEY: json.dumps(figure_fingerprint(fig),
                                                          ensure_ascii=False)})
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



# --------------------------------------------------------------------------------------------
# what a picture shows, to compare a committed picture with what the code draws now
# --------------------------------------------------------------------------------------------

def _digest(arrays):
    """What the plotted numbers are, robust to last-bit noise: per array its size, counts of
    NaN and +-inf, and the min, max, mean, mean |x| and a position-weighted mean of its finite
    values (the weights make a reordering visible), at 6 significant digits. `_same_numbers`
    compares two digests within a tolerance of the array's scale, so a picture drawn with the
    compiled kernels on matches one drawn with them off (their results differ in the last bits,
    where a hash of rounded numbers could still flip), while any change a reader could see
    does not."""
    import numpy as np
    out = []
    for a in arrays:
        a = np.ma.filled(np.ma.asarray(a, dtype=float), np.nan).ravel()
        fin = a[np.isfinite(a)]
        w = (np.arange(fin.size) * 0.6180339887) % 1.0
        stats = ([fin.min(), fin.max(), fin.mean(), np.abs(fin).mean(), (fin * w).mean()]
                 if fin.size else [])
        out.append([int(a.size), int(np.isnan(a).sum()), int((a == np.inf).sum()),
                    int((a == -np.inf).sum())] + [float("%.6g" % v) for v in stats])
    return out


def _same_numbers(a, b, rtol=1e-4):
    """Two digests of `_digest` describe the same numbers: equal counts, and statistics within
    rtol of each array's largest |value|."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return a == b
    for x, y in zip(a, b, strict=True):
        if len(x) != len(y) or x[:4] != y[:4]:
            return False
        scale = max((abs(v) for v in x[4:6]), default=0.0)
        if any(abs(u - v) > rtol * scale for u, v in zip(x[4:], y[4:], strict=True)):
            return False
    return True


def _categorical(labels):
    """Tick labels that name things (tokens, layers), not numbers an axis chose."""
    out = [t.get_text() for t in labels]
    return [t for t in out if t and not t.startswith("$") and
            re.search(r"[^\d.,\-−+eE ×()%]", t)]


def figure_fingerprint(fig):
    """What a matplotlib Figure shows: {"structure": its texts (titles, axis labels, legend
    entries, the labels of its lines, the tick labels that name things, texts placed on it),
    how many panels, lines, images and bars each has and their scales; "data": the
    statistics of the plotted numbers (`_digest`)}."""
    axes, data = [], []
    for ax in fig.axes:
        legend = ax.get_legend()
        lines = ax.get_lines()
        images = ax.get_images()
        patches = [p for p in ax.patches if hasattr(p, "get_height")]
        axes.append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "scales": [ax.get_xscale(), ax.get_yscale()],
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            "lines": [ln.get_label() for ln in lines if not ln.get_label().startswith("_")],
            "n_lines": len(lines), "images": [list(im.get_array().shape) for im in images],
            "n_bars": len(patches),
            "xticks": _categorical(ax.get_xticklabels()),
            "yticks": _categorical(ax.get_yticklabels()),
            "texts": [t.get_text() for t in ax.texts]})
        for ln in lines:
            data += [ln.get_xdata(), ln.get_ydata()]
        data += [im.get_array() for im in images]
        data += [[p.get_x(), p.get_height()] for p in patches]
    title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else ""
    return {"structure": {"suptitle": title, "axes": axes}, "data": _digest(data)}


def svg_fingerprint(svg):
    """What an SVG graph shows, whichever Graphviz drew it: the multiset of its texts (every
    label line, frame title, legend entry) and how many nodes, edges and frames it has."""
    texts = sorted(t for t in (html.unescape(re.sub(r"<[^>]+>", "", m)).strip()
                               for m in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)) if t)
    count = {k: len(re.findall(rf'<g id="{k}\d+" class="{k}"', svg))
             for k in ("node", "edge", "clust")}
    return {"structure": {"texts": texts, **count}, "data": None}


def picture_fingerprint(path):
    """The fingerprint of a picture file: an SVG's own (`svg_fingerprint`), a PNG's text chunk
    (written by `save_figure`, or by the script that took a screenshot); None when a PNG
    carries none."""
    if path.endswith(".svg"):
        with open(path, encoding="utf-8") as f:
            return svg_fingerprint(f.read())
    from PIL import Image
    with Image.open(path) as im:
        text = (getattr(im, "text", None) or im.info).get(FINGERPRINT_KEY)
    return json.loads(text) if text else None


def same_picture(a, b, data=True):
    """"" when two fingerprints agree (their data too, with `data`), else what differs first."""
    if a is None or b is None:
        return "a picture without a fingerprint"
    if a["structure"] != b["structure"]:
        sa, sb = json.dumps(a["structure"], ensure_ascii=False), \
            json.dumps(b["structure"], ensure_ascii=False)
        k = next((i for i, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y),
                 min(len(sa), len(sb)))
        return f"its structure, names or labels differ: ...{sa[max(0, k - 60):k + 60]}... " \
               f"against ...{sb[max(0, k - 60):k + 60]}..."
    if data and not _same_numbers(a.get("data"), b.get("data")):
        return "the plotted numbers differ"
    return ""
