"""docs/walkthrough.ipynb is what docs/make_notebook.py makes of docs/walkthrough.md, and it runs
top to bottom in a fresh kernel, printing what the page says its snippets print and drawing its
graphs inline.

    python docs/make_notebook.py       # regenerate after editing docs/walkthrough.md
"""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "docs", "walkthrough.ipynb")
PAGE = "docs/walkthrough.md"


def load_maker():
    spec = importlib.util.spec_from_file_location("make_notebook",
                                                  os.path.join(ROOT, "docs", "make_notebook.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebook_is_generated_from_the_page():
    with open(NOTEBOOK, encoding="utf-8") as f:
        committed = f.read()
    assert committed == load_maker().build(), (
        "docs/walkthrough.ipynb differs from what docs/make_notebook.py generates from "
        "docs/walkthrough.md; run: python docs/make_notebook.py")


def test_every_snippet_is_a_cell_in_order():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_docs
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    lines = [c.metadata["walkthrough_line"] for c in nb.cells
             if c.cell_type == "code" and "walkthrough_line" in c.metadata]
    snippets = [b.start + 1 for b in test_docs.blocks(test_docs.read(PAGE)) if b.lang == "python"]
    assert lines == snippets
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "the committed notebook must carry no outputs"


def test_notebook_runs_top_to_bottom(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_docs
    from tinygradx.viz import find_renderer
    try:
        find_renderer()
    except Exception as err:                           # the graph cells need a renderer
        pytest.skip(f"no graph renderer installed (pip install '.[viz]'): {err}")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    client.execute()                                   # raises CellExecutionError on any error
    expected = {b.start + 1: b.expected.code for b in test_docs.blocks(test_docs.read(PAGE))
                if b.lang == "python" and b.expected is not None}
    checked = 0
    for c in nb.cells:
        line = c.metadata.get("walkthrough_line") if c.cell_type == "code" else None
        if line not in expected:
            continue
        printed = "".join(o.get("text", "") for o in c.outputs
                          if o.output_type == "stream" and o.name == "stdout")
        assert test_docs.matches(expected[line], printed), (
            f"the cell of {PAGE}:{line} printed\n{printed}\nbut the page says\n{expected[line]}")
        checked += 1
    assert checked == len(expected)
    svgs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.output_type == "display_data" and "image/svg+xml" in o.get("data", {})]
    assert len(svgs) >= 2, "the Pre-LN and Post-LN graphs should be shown inline"
