"""tinygradx.renderer: the program that turns DOT text into a picture, and running it.

    kind, exe = find_renderer()              # ("dot", "/usr/bin/dot") or ("graphviz-pure", ...)
    found = renderer_for("svg")              # the same, refusing a format it cannot write
    svg = run_renderer(found, dot_text, "svg")   # bytes

System Graphviz's `dot` when it is on PATH, else the `graphviz-pure` program of the PyPI wheel of
that name (svg, png, jpeg; no pdf). `tinygradx.viz` draws the graphs and renders them through
this module (`viz.render`, `viz.pipe`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

__all__ = ["find_renderer", "renderer_for", "run_renderer", "RendererNotFound"]


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
