"""The committed pictures cannot go stale: docs/make_pictures.py draws every picture of docs/img
and docs/img/zh from the code, and this test draws each one again (quickly: a trained run's
pictures from a run of a few steps) and compares it with the committed file by what it shows,
never by its pixels: an SVG graph's texts and its counts of nodes, edges and frames; a plot's
titles, labels, legends, the tick labels that name things and its series, and for the pictures
drawn in full, a hash of its numbers (models/apps/figures.py). docs/img holds no file that no
job draws.

Redraw after an intended change: python docs/make_pictures.py [JOB ...]
"""
from __future__ import annotations

import copy
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def maker():
    spec = importlib.util.spec_from_file_location("make_pictures",
                                                  os.path.join(ROOT, "docs", "make_pictures.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_every_committed_picture_is_what_the_code_draws_now():
    pytest.importorskip("matplotlib")
    pytest.importorskip("graphviz")
    from tinygradx.graph.viz import find_renderer
    try:
        find_renderer()
    except Exception as err:
        pytest.skip(f"no graph renderer installed (pip install '.[viz]'): {err}")
    problems = maker().check()
    assert not problems, "\n".join(problems)


def test_the_comparison_sees_a_change_of_labels_or_numbers_but_not_of_pixels(tmp_path):
    """A picture drawn twice compares equal (its PNG bytes need not be); a changed title, a
    series more, a changed number each make it differ."""
    pytest.importorskip("matplotlib")
    from tinygradx.models.apps import formula_pictures
    from tinygradx.models.apps.figures import picture_fingerprint, same_picture
    a = tmp_path / "a"
    b = tmp_path / "b"
    formula_pictures.masks((8, 6, 3), out_dir=str(a))
    formula_pictures.masks((8, 6, 3), out_dir=str(b))
    fa, fb = picture_fingerprint(str(a / "masks.png")), picture_fingerprint(str(b / "masks.png"))
    assert same_picture(fa, fb) == ""
    other = copy.deepcopy(fb)
    other["structure"]["axes"][0]["title"] += " (changed)"
    assert "structure" in same_picture(fa, other)
    formula_pictures.masks((8, 5, 3), out_dir=str(b))                 # other numbers
    assert same_picture(fa, picture_fingerprint(str(b / "masks.png"))) != ""
    assert same_picture(fa, None) != ""                  # a PNG without a fingerprint


def test_an_svg_is_compared_by_its_texts_and_counts():
    from tinygradx.models.apps.figures import same_picture, svg_fingerprint
    svg = ('<svg><g id="node1" class="node"><text>Q (B, T, h·d_k)</text></g>'
           '<g id="edge1" class="edge"><title>n0&#45;&gt;n1</title></g></svg>')
    renamed = svg.replace("Q (B", "S = QKᵀ (B")
    assert same_picture(svg_fingerprint(svg), svg_fingerprint(svg)) == ""
    assert same_picture(svg_fingerprint(svg), svg_fingerprint(renamed)) != ""
