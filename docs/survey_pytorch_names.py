"""Count the torch names that learner code calls: the survey behind docs/pytorch-coverage.md.

    python docs/survey_pytorch_names.py SOURCES.json > docs/pytorch-survey.json

SOURCES.json lists the files read (copies of public tutorials and course repositories, kept
outside this repository: only the counts are committed):

    [{"name": "karpathy/nanoGPT @ 04a1d69", "root": "/tmp/survey/nanogpt",
      "files": ["model.py", "train.py"]}, ...]

Each Python file (or notebook's code cells) is parsed, never run. The names count as follows:

- a dotted name that starts from a torch import, resolved through the file's imports (and
  counted only when torch has it, so a local variable that shadows an import is left out):
  `import torch.nn as nn; nn.Linear` and `from torch.nn import Linear; Linear` are both
  torch.nn.Linear; `torch.nn.init.normal_(w)` counts once, as torch.nn.init.normal_;
- a method call or attribute of anything that is not a module, `x.view(...)`, `loss.backward()`,
  `t.shape`, counts for torch.Tensor.<name> when torch.Tensor has that name, whatever the
  receiver is: a static reading cannot tell a tensor from a numpy array, a list or a Module,
  so names shared with those (`to`, `float`, `sum`, `split`, `sort`, `add`) count high.

Needs torch installed (for torch.Tensor's names); prints JSON: the sources with their number of
name uses, and {name: uses} over all of them.
"""
from __future__ import annotations

import ast
import json
import os
import sys


def _code(path):
    """The Python source of a .py file, or a notebook's code cells joined (IPython's ! and %
    lines dropped)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not path.endswith(".ipynb"):
        return text
    cells = json.loads(text)["cells"]
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        src = cell["source"]
        src = "".join(src) if isinstance(src, list) else src
        lines += [ln for ln in src.splitlines() if not ln.lstrip().startswith(("!", "%"))]
    return "\n".join(lines)


class Counter(ast.NodeVisitor):
    """Counts the torch names of one module's code (see the module docstring)."""

    def __init__(self, tensor_names, counts):
        self.aliases = {}                 # local name -> full torch name
        self.tensor_names = tensor_names
        self.counts = counts
        self.modules = set()              # local names bound to modules (torch's or others')

    def add(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1

    def visit_Import(self, node):
        for a in node.names:
            local = a.asname or a.name.split(".")[0]
            self.modules.add(local)
            if a.name == "torch" or a.name.startswith("torch."):
                self.aliases[local] = a.name if a.asname else "torch"

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        for a in node.names:
            local = a.asname or a.name
            if mod == "torch" or mod.startswith("torch."):
                self.aliases[local] = f"{mod}.{a.name}"
            elif a.name[:1].islower():
                self.modules.add(local)

    def _chain(self, node):
        """['torch', 'nn', 'Linear'] for torch.nn.Linear, or None when the base is no name."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        return parts[::-1]

    def visit_Attribute(self, node):
        chain = self._chain(node)
        if chain is not None and chain[0] in self.aliases:
            full = ".".join([self.aliases[chain[0]], *chain[1:]])
            if _exists(full):               # not a local variable that shadows the import
                self.add(full)
            return                          # the whole chain counted once
        if node.attr in self.tensor_names and not (
                chain is not None and len(chain) == 2 and chain[0] in self.modules):
            self.add(f"torch.Tensor.{node.attr}")
        self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases and \
                self.aliases[node.id] != "torch" and "." in self.aliases[node.id]:
            full = self.aliases[node.id]
            if not _is_module_path(full):
                self.add(full)


def _exists(full):
    """Whether `full` names something torch has (torch.utils.data.DataLoader yes; d2l's
    `data.shape`, where a variable named data shadows `from torch.utils import data`, no)."""
    import importlib
    parts = full.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for p in parts[cut:]:
            if not hasattr(obj, p):
                return False
            obj = getattr(obj, p)
        return True
    return False


def _is_module_path(full):
    import importlib
    try:
        importlib.import_module(full)
    except ImportError:
        return False
    return True


def survey(sources):
    import torch
    tensor_names = {n for n in dir(torch.Tensor) if not n.startswith("_")}
    total, out = {}, []
    for src in sources:
        counts = {}
        for rel in src["files"]:
            tree = ast.parse(_code(os.path.join(src["root"], rel)))
            Counter(tensor_names, counts).visit(tree)
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
        out.append({"name": src["name"], "files": src["files"], "uses": sum(counts.values())})
    return {"sources": out, "counts": dict(sorted(total.items()))}


def main(argv):
    with open(argv[0], encoding="utf-8") as f:
        sources = json.load(f)
    json.dump(survey(sources), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
