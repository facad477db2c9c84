"""Every public name imports from where docs/api.md says it lives.

docs/api.md has one section per public module (`## `tinygradx.X``); each row's first cell
names, in backticks, what that module offers (`tgx.` names under `## `tinygradx``, `mod.name` or
`name(...)` elsewhere). This walks those cells and imports each name from the module the page
names, so a move of the code can never strand a documented path.
"""
from __future__ import annotations

import importlib
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


PUBLIC_MODULES = ["tinygradx.functional", "tinygradx.nn", "tinygradx.nn.init", "tinygradx.optim",
                  "tinygradx.optim.lr_scheduler", "tinygradx.autograd", "tinygradx.io",
                  "tinygradx.compat", "tinygradx.gradcheck"]
PUBLIC_MODULES += ["tinygradx." + n for n in
                   "viz trace page testing func inference perf parallel pool process".split()]


def documented():
    """[(module, [names])] from docs/api.md; a heading naming several modules gives each
    `mod.name` to the module `mod` names."""
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, mods = {}, None
    for line in lines:
        if line.startswith("## "):
            mods = re.findall(r"`(tinygradx(?:\.\w+)*)`", line.split(":")[0])
            mods = [m for m in mods if not m.startswith("tinygradx.models")]
            for m in mods:
                out.setdefault(m, [])
            continue
        if mods and line.startswith("| `"):
            for code in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
                if code.startswith(("python ", "import ", "from ")):
                    continue
                name = re.match(r"(?:tgx\.)?([\w.]+)", code).group(1)
                head = name.split(".")[0]
                if "." in name and f"tinygradx.{head}" in PUBLIC_MODULES:
                    mods = mods + [f"tinygradx.{head}"] * (f"tinygradx.{head}" not in mods)
                    out.setdefault(f"tinygradx.{head}", [])
                owner = next((m for m in mods if m.rpartition(".")[2] == head and
                              "." in name), mods[0])
                if owner != mods[0] or (owner.rpartition(".")[2] == head and "." in name):
                    name = name.split(".", 1)[1]
                out[owner].append(name)
    return sorted(out.items())


PATHS = [mod for mod, _ in documented()]


def test_the_page_names_modules():
    assert "tinygradx" in PATHS and "tinygradx.functional" in PATHS
    assert sum(len(names) for _, names in documented()) > 100


@pytest.mark.parametrize("path", PATHS)
def test_documented_names_import_from_their_documented_module(path):
    mod = importlib.import_module(path)
    names = dict(documented())[path]
    classes = [getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type)]
    missing = [name for name in names if not _has(mod, name)
               and not any(_has(c, name) for c in classes)]      # a method of a listed class
    assert not missing, f"{path} does not offer: {missing}"


def _has(obj, dotted):
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("path", PUBLIC_MODULES)
def test_public_module_paths_import(path):
    mod = importlib.import_module(path)
    assert mod.__doc__


def test_a_public_path_reads_the_live_module():
    import tinygradx.parallel as public
    from tinygradx.fast import parallel
    before = parallel.THREADS
    try:
        parallel.set_threads(1)
        assert public.THREADS == parallel.THREADS == 1
    finally:
        parallel.set_threads(before)
