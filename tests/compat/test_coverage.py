"""docs/pytorch-coverage.md and its Chinese twin are what docs/make_pytorch_coverage.py writes
from torch's own namespaces and this checkout's code and tests; every name the committed page
calls supported is one the look-alike provides, compared with torch by a test that exists;
every name it calls refused is refused by name; a name left out is refused with its reason.
"""
import importlib.util
import os
import re

import pytest

pytest.importorskip("torch")

import tinygradx  # noqa: E402
from tinygradx.compat import lookalike, scope  # noqa: E402
from tinygradx.compat.facade import LAYER  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def generator():
    spec = importlib.util.spec_from_file_location(
        "make_pytorch_coverage", os.path.join(ROOT, "docs", "make_pytorch_coverage.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = generator()


@pytest.fixture(scope="module")
def rows():
    return GEN.table()


def committed_rows():
    """(full name, status, test id) of every row of the committed English page's tables."""
    with open(GEN.PAGES["en"], encoding="utf-8") as f:
        text = f.read()
    found, ns = [], None
    for line in text.splitlines():
        m = re.match(r"## `([\w.]+)`$", line)
        if m:
            ns = m.group(1)
            continue
        if ns and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            name = cells[0].strip("`")
            found.append((f"{ns}.{name}", cells[1], cells[2].strip("`")))
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_is_what_the_code_gives(rows, lang):
    want = GEN.build(lang, rows)
    page = GEN.PAGES[lang]
    with open(page, encoding="utf-8") as f:
        got = f.read()
    if got != want:
        diff = [f"- {a}\n+ {b}" for a, b in zip(got.splitlines(), want.splitlines(),
                                                strict=False) if a != b][:8]
        pytest.fail(f"{os.path.relpath(page, ROOT)} differs from the code (first lines below); "
                    f"run: python docs/make_pytorch_coverage.py\n" + "\n".join(diff))


def test_every_supported_name_is_provided_and_its_test_exists():
    supported = [(n, t) for n, st, t in committed_rows() if st == "supported"]
    assert len(supported) > 100, f"only {len(supported)} supported rows parsed"
    ids = GEN.collected_ids(sorted({t.split("::")[0] for _, t in supported}))
    for name, tid in supported:
        assert GEN.provided(name), f"{name} is called supported but the look-alike lacks it"
        assert tid in ids, f"{name}: its test {tid} is not collected"


def _refusal(full):
    """The error the look-alike raises for `full` (None when it provides it)."""
    if full.startswith("torch.Tensor."):
        leaf = full[len("torch.Tensor."):]
        try:
            getattr(tinygradx.ones(1), leaf)
        except AttributeError as e:
            return e
        return None
    parent, _, leaf = full.rpartition(".")
    try:
        getattr(lookalike.MODULES[parent], leaf)
    except AttributeError as e:
        return e
    return None


def test_every_refused_name_is_refused_by_name():
    refused = [n for n, st, _ in committed_rows() if st == "refused"]
    for name in refused:
        err = _refusal(name)
        assert err is not None, f"{name} is called refused but the look-alike provides it"
        assert name in str(err) and "not available" in str(err), f"{name}: {err}"


def test_a_left_out_name_is_refused_with_its_reason(rows):
    checked = 0
    for _, full, st, why in rows:
        if st != "left out" or full.startswith("torch.Tensor."):
            continue
        err = _refusal(full)
        if err is None:          # handed out all the same (torch.cuda.is_available, ...)
            continue
        assert str(err).startswith(f"{full} is not available in {LAYER}: {why}"), str(err)
        checked += 1
    assert checked > 100


def test_the_scope_rules_each_cover_a_torch_name(rows):
    """A rule that matches none of torch's names is stale (or misspelt)."""
    names = [r[1] for r in rows]
    import fnmatch
    # modules outside the measured namespaces, whose rules give the reason of a refusal
    other = ("torch.distributed", "torch.cuda", "torch.nn.parallel", "torch.jit", "torch.fx",
             "torch.nested", "torch.nn.quantized", "torch.nn.utils.prune")
    for why, patterns in scope.RULES:
        for p in patterns:
            if p.startswith(other):
                continue
            assert any(fnmatch.fnmatchcase(n, p) for n in names), f"{p} ({why[:30]}...)"
