"""tinygradx.graph.renderer: the program that turns DOT text into a picture, and running it.

    kind, exe = find_renderer()              # ("dot", "/usr/bin/dot") or ("graphviz-pure", ...)
    found = renderer_for("svg")              # the same, refusing a format it cannot write
    svg = run_renderer(found, dot_text, "svg")   # bytes

System Graphviz's `dot` when it is on PATH, else the `graphviz-pure` program of the PyPI wheel of
that name (svg, png, jpeg; no pdf). `tinygradx.viz` draws the graphs and renders them through
this module (`viz.render`, `viz.pipe`).

Chinese labels need a font with CJK glyphs, and the two renderers find fonts differently:
`dot` asks fontconfig (a family list "Helvetica,Noto Sans CJK SC,..." falls back glyph by glyph),
graphviz-pure draws PNG/JPEG text only with the Latin fonts built into it (Tinos, Arimo, Cousine)
and reads no system font. `cjk_fonts()` lists the installed families that draw Chinese,
and `cjk_note` is the one line said instead of drawing boxes.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig

__all__ = ["find_renderer", "renderer_for", "run_renderer", "RendererNotFound", "FontWarning",
           "cjk_fonts", "cjk_font_file", "dot_fontname", "cjk_note"]


class RendererNotFound(RuntimeError):
    """Neither Graphviz's `dot` nor the graphviz-pure program could be found."""


def _graphviz_pure_exe():
    """The `graphviz-pure` program from the PyPI wheel: on PATH, or next to this Python (a
    venv's bin/ when the venv is not activated, e.g. inside a Jupyter kernel)."""
    exe = shutil.which("graphviz-pure")
    if exe:
        return exe
    names = ["graphviz-pure.exe", "graphviz-pure"] if os.name == "nt" else ["graphviz-pure"]
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in dirs:
        for name in names:
            cand = os.path.join(d or "", name)
            if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return None


def find_renderer(renderer="auto"):
    """(kind, executable) of the renderer to use: "dot" (system Graphviz) first, then
    "graphviz-pure". `renderer` may force one of them."""
    if renderer not in ("auto", "dot", "graphviz-pure"):
        raise ValueError(f"renderer must be 'auto', 'dot' or 'graphviz-pure', got {renderer!r}")
    if renderer in ("auto", "dot"):
        exe = shutil.which("dot")
        if exe:
            return "dot", exe
    if renderer in ("auto", "graphviz-pure"):
        exe = _graphviz_pure_exe()
        if exe:
            return "graphviz-pure", exe
    wanted = "" if renderer == "auto" else f" ({renderer} was requested)"
    raise RendererNotFound(
        f"no Graphviz renderer found{wanted}: install the graphviz-pure wheel "
        f"(pip install graphviz-pure, no system package needed) or system Graphviz "
        f"(apt install graphviz / brew install graphviz). The DOT text itself needs neither: "
        f"use to_dot_source(...) or write a .dot/.gv file.")


def renderer_for(format, renderer="auto"):
    """`find_renderer(renderer)`, refusing a format that graphviz-pure cannot write."""
    kind, exe = find_renderer(renderer)
    if kind == "graphviz-pure" and format in ("pdf", "ps", "eps"):
        raise RendererNotFound(
            f"graphviz-pure cannot write {format.upper()} yet (it writes svg, png, jpeg, dot, "
            f"json, plain); install system Graphviz for {format}, or render svg/png")
    return kind, exe


def run_renderer(found, source, format="svg"):
    """The DOT text `source` rendered to bytes in `format` by `found`, a (kind, executable) pair
    from `renderer_for`."""
    kind, exe = found
    proc = subprocess.run([exe, f"-T{format}"], input=source.encode("utf-8"),
                          capture_output=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed (exit {proc.returncode}): "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


# --------------------------------------------------------------------------------------------
# fonts for Chinese labels
# --------------------------------------------------------------------------------------------

class FontWarning(UserWarning):
    """A picture with Chinese labels would show them as empty boxes (no CJK font to draw them)."""


# Families that draw Simplified Chinese, best first; the first ones found are named in the DOT
# and given to matplotlib. Any other family fontconfig reports for :lang=zh comes after them.
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
                "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC",
                "Hiragino Sans GB", "Heiti SC", "SimHei", "Noto Serif CJK SC", "AR PL UMing CN",
                "Noto Sans CJK JP", "Noto Sans CJK TC")
# Names also tried in a DOT file when none is installed here, so the file still draws Chinese
# on a machine that has one of the common ones.
_DOT_FALLBACK = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
                 "Microsoft YaHei", "PingFang SC")
_INSTALL_HINT = ("install a CJK font (apt install fonts-noto-cjk or fonts-wqy-zenhei; dnf "
                 "install google-noto-sans-cjk-fonts; macOS and Windows ship one)")


def has_cjk(text):
    """Whether `text` holds a character drawn two cells wide (CJK ideographs, kana, Hangul,
    fullwidth punctuation): the characters a Latin-only font draws as boxes."""
    import unicodedata
    return any(ord(ch) > 0x2e7f and unicodedata.east_asian_width(ch) in ("W", "F")
               for ch in text)


def _fontconfig_families():
    """[(names of one family, its file)] fontconfig lists for :lang=zh; None without fc-list."""
    exe = shutil.which("fc-list")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, ":lang=zh", "file", "family"], capture_output=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    groups = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        path, _, names = line.partition(": ")
        names = [n.strip() for n in names.split(",") if n.strip()]
        if names:
            groups.append((names, path))
    return groups


def _matplotlib_families():
    """[([family], file)] of matplotlib's fonts that have '中' (where there is no fontconfig:
    macOS, Windows); [] without matplotlib. Only fonts whose name looks CJK are opened."""
    try:
        from matplotlib import font_manager, ft2font
    except ImportError:
        return []
    words = ("CJK", "Han", "Hei", "Song", "Kai", "Ming", "YaHei", "PingFang", "Hiragino",
             "WenQuanYi", " SC", " TC", "Gothic", "Sim")
    found, seen = [], set()
    for f in font_manager.fontManager.ttflist:
        if f.name in seen or not any(w in f.name for w in words):
            continue
        try:
            if ord("中") in ft2font.FT2Font(f.fname).get_charmap():
                found.append(([f.name], f.fname))
                seen.add(f.name)
        except (OSError, RuntimeError, ValueError):
            continue
    return found


@functools.lru_cache(maxsize=None)
def _cjk_files():
    """{family: font file} of the installed families that draw Chinese, best first."""
    groups = _fontconfig_families()
    if groups is None:
        groups = _matplotlib_families()
    files = {}
    for family in CJK_FAMILIES:
        for names, path in groups:
            if family in names and family not in files:
                files[family] = path
    for names, path in sorted(groups):
        if not any(n in files for n in names):
            files[names[0]] = path
    return files


def cjk_fonts():
    """The installed font families that draw Chinese, best first (CJK_FAMILIES' order, then
    the others): from fontconfig's `fc-list :lang=zh`, else from matplotlib's font list.
    () when there is none."""
    return tuple(_cjk_files())


def cjk_font_file(family):
    """The file of an installed family `cjk_fonts()` named (for matplotlib, whose font list
    is cached and may predate the font's installation)."""
    return _cjk_files()[family]


def dot_fontname(lang="en"):
    """The DOT fontname for labels in `lang`: "Helvetica", and for "zh" Helvetica followed by
    the CJK families installed here and the common ones, so that `dot` draws Latin text as in
    English and each Chinese character from the first family that has it."""
    if lang != "zh":
        return "Helvetica"
    chain = ["Helvetica"]
    for family in cjk_fonts()[:1] + _DOT_FALLBACK:
        if family not in chain:
            chain.append(family)
    return ",".join(chain)


def cjk_note(kind, format, source):
    """The one line to say when `kind` ("dot" or "graphviz-pure") would draw the Chinese of the
    DOT text `source` as empty boxes in `format`; None when it draws them (or there is none).
    SVG keeps text as text, drawn by the viewer's fonts, so it never needs one."""
    if format in ("svg", "svgz", "dot", "gv", "xdot", "json", "plain", "canon") or \
            not has_cjk(source):
        return None
    if kind == "graphviz-pure":
        return (f"graphviz-pure draws {format.upper()} text with its built-in Latin fonts only, "
                f"so the Chinese labels are empty boxes: write .svg (the viewer draws them) or "
                f"install system Graphviz (apt install graphviz) and a CJK font")
    if not cjk_fonts():
        return f"no CJK font is installed, so the Chinese labels are empty boxes: {_INSTALL_HINT}"
    return None
