"""Build docs/walkthrough.ipynb from docs/walkthrough.md, so the notebook cannot drift from
the page.

    python docs/make_notebook.py            # rewrite docs/walkthrough.ipynb
    python docs/make_notebook.py --check    # exit 1 when the committed notebook is out of date

Every ```python block of the page becomes a code cell, in order, and the prose between blocks a
Markdown cell; the ```text blocks (the outputs the docs test checks) are left out, since running
the notebook prints them. Each code cell records the page line of its block in
`metadata["walkthrough_line"]`, which tests/test_notebook.py uses to compare what the cell
prints with the page's text block.

Two changes make the notebook run anywhere and show its graphs inline:
- a first cell makes a temporary folder GRAPHS, and blocks that write into docs/img/ (the page
  marks them `<!-- skip-test: why -->`; they need a graph renderer) write there instead;
- after a block that calls `viz.render`, a cell displays the SVG files it wrote with
  IPython.display.SVG.
The notebook is written without outputs; Jupyter or nbclient fills them in.
"""
from __future__ import annotations

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "walkthrough.md")
NOTEBOOK = os.path.join(HERE, "walkthrough.ipynb")

FENCE = re.compile(r"^```(\w*)\s*$")
SKIP_MARK = re.compile(r"^<!-- skip-test: \S.*? -->$")

SETUP = '''# Notebook setup (not on the page): graphs go to a temporary folder and are shown inline.
import os
import tempfile

from IPython.display import SVG, display

GRAPHS = tempfile.mkdtemp(prefix="walkthrough_graphs_")
_shown = set()


def show_new_graphs():
    """Display every SVG written to GRAPHS since the last call."""
    for name in sorted(os.listdir(GRAPHS)):
        if name.endswith(".svg") and name not in _shown:
            _shown.add(name)
            display(SVG(filename=os.path.join(GRAPHS, name)))'''

INTRO = """*This notebook is generated from [walkthrough.md](walkthrough.md) by
`docs/make_notebook.py`; edit the page, not the notebook. Its cells share one Python session,
as the page's snippets do: run them top to bottom.*"""


def parse(lines):
    """[(kind, text, line)] with kind "md" or "code"; text blocks are dropped."""
    out, prose, i = [], [], 0

    def flush():
        text = "\n".join(prose).strip("\n")
        text = "\n".join(s for s in text.split("\n") if not SKIP_MARK.match(s.strip())).strip("\n")
        if text.strip():
            out.append(("md", text, None))
        prose.clear()

    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if m.group(1) == "python":
            flush()
            out.append(("code", "\n".join(lines[i + 1:j]), i + 1))
        elif m.group(1) != "text":
            prose.extend(lines[i:j + 1])                   # other fences stay in the prose
        i = j + 1
    flush()
    return out


def code_cell(source, metadata=None):
    return {"cell_type": "code", "execution_count": None, "metadata": metadata or {},
            "outputs": [], "source": _lines(source)}


def md_cell(source):
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(source)}


def _lines(text):
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + [parts[-1]]


def build():
    with open(PAGE, encoding="utf-8") as f:
        items = parse(f.read().split("\n"))
    cells = []
    first_md = True
    for kind, text, line in items:
        if kind == "md":
            cells.append(md_cell(text))
            if first_md:                                   # after the title paragraph
                cells.append(md_cell(INTRO))
                cells.append(code_cell(SETUP, {"generated": True}))
                first_md = False
            continue
        code = (text.replace('f"docs/img/', 'f"{GRAPHS}/').replace('"docs/img/', 'f"{GRAPHS}/')
                .replace('"docs/img"', "GRAPHS"))                # an out_dir= of the folder
        cells.append(code_cell(code, {"walkthrough_line": line}))
        if "viz.render(" in code:
            cells.append(code_cell("show_new_graphs()", {"generated": True}))
    nb = {"cells": cells,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"},
                       "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    for k, c in enumerate(cells):
        c["id"] = f"cell-{k:03d}"
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv):
    text = build()
    if "--check" in argv:
        with open(NOTEBOOK, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{NOTEBOOK} is out of date: run python docs/make_notebook.py")
        return
    with open(NOTEBOOK, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {NOTEBOOK}")


if __name__ == "__main__":
    main(sys.argv[1:])
