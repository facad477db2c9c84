"""The floors of the house: every module imports only from its own floor or below, no import
circle anywhere, and no module takes another module's private names; models/ uses only the
engine's public API (no `p._data`, `Tensor._from_op`, ...).

The floors are read from docs/design.md (the fenced block after "## Floors"), so the picture in
the docs is the rule the code is held to. Imports inside functions count as much as those at
the top of a file: a lazy import is still a dependency.
"""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = {"tinygradx": "tinygradx", "tinygradx.models": "models"}   # package -> folder


def floors():
    """{module or package prefix: floor number} from docs/design.md."""
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"^## Floors\n.*?```text\n(.*?)```", text, re.S | re.M)
    assert block, "docs/design.md has no '## Floors' section with a ```text block"
    table = {}
    for line in block.group(1).splitlines():
        m = re.match(r"\s*(\d+)\s+(.*)", line)
        if m:
            for name in m.group(2).split("#")[0].split():
                table[name] = int(m.group(1))
    return table


def modules():
    """{dotted module name: path} for every .py file of the library and the models."""
    found = {}
    for package, folder in SOURCES.items():
        base = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, base)
            prefix = package if rel == "." else package + "." + rel.replace(os.sep, ".")
            if package == "tinygradx" and prefix.startswith("tinygradx.models"):
                continue
            for name in filenames:
                if name.endswith(".py"):
                    mod = prefix if name == "__init__.py" else f"{prefix}.{name[:-3]}"
                    found[mod] = os.path.join(dirpath, name)
    return found


def imports(mod, path):
    """[(imported module, [names taken], line)] of one file, relative imports resolved."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level \
                else node.module
            for a in node.names:        # `from pkg import mod` imports the module pkg.mod
                out.append((target, [a.name], node.lineno))
    return out


def resolve(target, names, known):
    """The project modules an import statement loads (its target, or pkg.name submodules)."""
    hits = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
    return hits or ([target] if target in known else [])


def floor_of(mod, table):
    best = None
    for prefix, floor in table.items():
        if mod == prefix or mod.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, floor)
    return best[1] if best else None


def graph():
    known = modules()
    edges = {}
    for mod, path in known.items():
        for target, names, line in imports(mod, path):
            for dep in resolve(target, names, known):
                if dep != mod:
                    edges.setdefault(mod, []).append((dep, names, line))
    return known, edges


def test_every_module_has_a_floor_and_every_floor_names_a_module():
    table, known = floors(), modules()
    missing = sorted(m for m in known if floor_of(m, table) is None)
    assert not missing, f"modules on no floor of docs/design.md: {missing}"
    stale = sorted(p for p in table if not any(m == p or m.startswith(p + ".") for m in known))
    assert not stale, f"docs/design.md names floors for modules that do not exist: {stale}"


def test_imports_only_go_down():
    table = floors()
    known, edges = graph()
    up = []
    for mod, deps in edges.items():
        for dep, _, line in deps:
            if floor_of(dep, table) > floor_of(mod, table):
                up.append(f"{known[mod]}:{line}: {mod} (floor {floor_of(mod, table)}) imports "
                          f"{dep} (floor {floor_of(dep, table)})")
    assert not up, "\n".join(up)


def test_the_engine_never_imports_the_models():
    known, edges = graph()
    bad = [f"{known[m]}:{line}: {m} imports {dep}" for m, deps in edges.items()
           if not m.startswith("tinygradx.models") for dep, _, line in deps
           if dep.startswith("tinygradx.models")]
    assert not bad, "\n".join(bad)
    for mod, path in known.items():            # not even as a string given to importlib
        if not mod.startswith("tinygradx.models"):
            with open(path, encoding="utf-8") as f:
                assert "import_module" not in f.read(), f"{path}: dynamic import"


def test_no_import_circle():
    known, edges = graph()
    state, stack, circles = {}, [], []

    def visit(m):                               # depth-first; a grey node seen again = circle
        state[m] = "grey"
        stack.append(m)
        for dep, _, _ in edges.get(m, ()):
            if state.get(dep) == "grey":
                circles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[m] = "black"

    for m in sorted(known):
        if m not in state:
            visit(m)
    # a package's __init__ importing its own submodules is how a package exports; the
    # submodules importing the package facade back is the circle we forbid
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_no_module_takes_another_modules_private_names():
    known, edges = graph()
    bad = []
    for mod, path in known.items():
        for target, names, line in imports(mod, path):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and f"{target}.{n}" not in known:
                    bad.append(f"{path}:{line}: {mod} imports {target}.{n}")
        bad += [f"{path}:{line}: {mod} uses {dep}.{attr}" for dep, attr, line, _ in _attributes(
            mod, path, known) if attr.startswith("_") and not attr.startswith("__")]
    assert not bad, "\n".join(bad)


def test_no_module_sets_a_name_in_another_module():
    """No injected globals: `autograd.Tensor = Tensor` once made a circle at run time that the
    import graph could not see. A module may read another's names, never assign them (nor
    through setattr). The one exception is no engine module: the child process that compiles
    the kernels (kernels_build) hands numba the jitted helpers under the loops' global names."""
    known, _ = graph()
    bad = [f"{path}:{line}: {mod} sets {dep}.{attr}" for mod, path in known.items()
           for dep, attr, line, store in _attributes(mod, path, known) if store
           if (mod, dep) != ("tinygradx.fast.kernels_build", "tinygradx.fast.kernels")]
    assert not bad, "\n".join(bad)


def _attributes(mod, path, known):
    """(module, attribute, line, is a store) for every `alias.attr` where alias names a project
    module (and every setattr/delattr on one)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom):
            for target, names, _ in imports(mod, path):
                for n in names:
                    if f"{target}.{n}" in known:
                        aliases[n] = f"{target}.{n}"
            for a in node.names:
                if a.asname and a.name in {n.rsplit(".", 1)[-1] for n in aliases.values()}:
                    aliases[a.asname] = next(v for v in aliases.values()
                                             if v.endswith("." + a.name))
    froms = [a for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names]
    for name in {a.name for a in froms if a.asname} - {a.name for a in froms if not a.asname}:
        aliases.pop(name, None)     # `from pkg import mod as alias` binds the alias only
    found = [(aliases[n.value.id], n.attr, n.lineno, not isinstance(n.ctx, ast.Load))
             for n in ast.walk(tree) if isinstance(n, ast.Attribute) and
             isinstance(n.value, ast.Name) and n.value.id in aliases and
             aliases[n.value.id] != mod]
    sets = [(aliases[n.args[0].id], n.args[1].value if isinstance(n.args[1], ast.Constant)
             else "?", n.lineno, True)
            for n in ast.walk(tree) if isinstance(n, ast.Call) and
            isinstance(n.func, ast.Name) and n.func.id in ("setattr", "delattr") and
            n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in aliases and
            aliases[n.args[0].id] != mod]
    return found + sets


# -- rules of particular rooms (docs/design.md, "Floors") -------------------------------------
# house rules: one floor per package

def test_one_floor_per_package():
    """The floors block names packages (or the facade's own files), never a module inside one."""
    table, known = floors(), modules()
    packages = {m for m, p in known.items() if p.endswith("__init__.py")}
    inner = sorted(n for n in table if n.startswith("tinygradx.") and not
                   n.startswith("tinygradx.models") and n not in packages
                   and n.count(".") > 1)
    assert not inner, f"floors name modules inside a package: {inner}"


def _imports_of_room(room):
    known, edges = graph()
    return [(m, dep, line, known[m]) for m, deps in edges.items()
            if m == room or m.startswith(room + ".") for dep, _, line in deps]


def test_the_learners_core_imports_nothing_else_of_tinygradx():
    """tinygradx/core/ reads on its own: every import inside it is of itself (or numpy and the
    standard library). tests/autograd/test_core.py runs it as a package of its own."""
    imported = _imports_of_room("tinygradx.core")
    bad = [f"{path}:{line}: {m} imports {dep}" for m, dep, line, path in imported
           if not (dep == "tinygradx.core" or dep.startswith("tinygradx.core."))]
    assert not bad, "\n".join(bad)
    assert len(imported) > 20            # the rule saw the core's own imports


def test_the_speed_layer_imports_only_the_core():
    ok = ("tinygradx.fast", "tinygradx.core")
    bad = [f"{path}:{line}: {m} imports {dep}" for m, dep, line, path in
           _imports_of_room("tinygradx.fast")
           if not any(dep == r or dep.startswith(r + ".") for r in ok)]
    assert not bad, "\n".join(bad)


def test_io_imports_nothing_of_tinygradx():
    assert not _imports_of_room("tinygradx.io")


# -- the models use only the public API of the engine -----------------------------------------
# The engine's private names are the `_x` names tinygradx gives its objects and modules (defs
# and assignments, __slots__ entries, attribute stores). In models/, `obj._x` is a use of one:
# - always, when obj is reached from a name imported from the engine (`tgx._x`, `F._x`,
#   `Tensor._from_op`), and so is importing `_x` or a `_private` module from the engine;
# - when `_x` is an engine name, on any other object (`p._data`, `x.grad._data`,
#   `getattr(t, "_ctx")`): its type is not known, its name says where it comes from;
# - on self/cls, super() or a name imported from models/, when `_x` is an engine name that
#   models/ does not give its own classes (`self._modules` in an nn.Module subclass).
# Private names of other libraries (argparse's `parser._actions`) are not the engine's.

_SELVES = ("self", "cls")
_NAME_FUNCTIONS = ("getattr", "setattr", "hasattr", "delattr")


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _parsed(folder):
    """[(path, tree)] of every .py file under folder."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    out.append((path, ast.parse(f.read(), path)))
    return out


def _private_members(trees, engine):
    """The private names these files give their objects and modules: defs, assignments,
    `__slots__` entries and attribute stores (in models/ only stores on self/cls count: a store
    through another object, `p._data = a`, is a use of that object's name)."""
    out = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and (
                    engine or isinstance(node.value, ast.Name) and node.value.id in _SELVES):
                out.add(node.attr)
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
                out.update(c.value for c in ast.walk(node.value)
                           if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {n for n in out if _private(n)}


def _bindings(tree):
    """{name: "engine" | "models" | "other"} of the names a models file imports or defines."""
    def kind(module):
        if module == "tinygradx.models" or module.startswith("tinygradx.models."):
            return "models"
        return "engine" if module == "tinygradx" or module.startswith("tinygradx.") else "other"
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:   # `import tinygradx.models.x` binds tinygradx: the engine
                out[a.asname or a.name.partition(".")[0]] = kind(
                    a.name if a.asname else a.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                full = f"{node.module}.{a.name}" if node.module else a.name
                out[a.asname or a.name] = "models" if node.level else kind(full)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = "models"
    return out


def _private_engine_uses(path, tree, engine, own, shown_as):
    """['file:line: expression'] of every use of the engine's private names in one file."""
    bound = _bindings(tree)
    bad = []

    def check(value, attr, node):
        if not _private(attr):
            return
        root = value
        while isinstance(root, ast.Attribute):
            root = root.value
        selfish = isinstance(value, ast.Name) and value.id in _SELVES or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "super")
        where = None if selfish or not isinstance(root, ast.Name) else bound.get(root.id)
        if where == "engine" or (where is None and not selfish and attr in engine) or (
                (selfish or where == "models") and attr in engine and attr not in own):
            text = ast.unparse(node)
            text = text if len(text) <= 60 else "..." + text[-57:]
            bad.append(f"{shown_as}:{node.lineno}: {text}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            check(node.value, node.attr, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _NAME_FUNCTIONS and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            check(node.args[0], node.args[1].value, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            for a in node.names:
                names = [node.module, a.name] if isinstance(node, ast.ImportFrom) else [a.name]
                parts = ".".join(names).split(".")
                if parts[0] == "tinygradx" and parts[1:2] != ["models"] and any(
                        _private(p) for p in parts):
                    bad.append(f"{shown_as}:{node.lineno}: imports {'.'.join(parts)}")
    return bad


def private_engine_uses(models_dir, engine_dir):
    """Every use of a private name of the engine (`engine_dir`) in `models_dir`."""
    models = _parsed(models_dir)
    engine = _private_members(_parsed(engine_dir), engine=True)
    own = _private_members(models, engine=False)
    bad = []
    for path, tree in models:
        shown_as = os.path.join("models", os.path.relpath(path, models_dir))
        bad += sorted(_private_engine_uses(path, tree, engine, own, shown_as),
                      key=lambda s: int(s.split(":")[1]))
    return bad


def test_models_use_only_the_public_api():
    bad = private_engine_uses(os.path.join(ROOT, "models"), os.path.join(ROOT, "tinygradx"))
    assert not bad, ("models/ uses private names of the engine (use the public API: "
                     "t.numpy(), t.detach().numpy(), t.item(), p.copy_(...) under no_grad, "
                     "docs/api.md):\n" + "\n".join(bad))


def test_the_public_api_rule_is_not_empty(tmp_path):
    """The rule above flags each kind of private use (lines marked `# flagged`) and nothing
    else: models' own private names, self's own attributes, other libraries' names."""
    text = """\
import argparse
import tinygradx as tgx
from tinygradx import Tensor, nn
from tinygradx.autograd import _hidden                          # flagged
from tinygradx.fast._erf import erf                             # flagged


class Net(nn.Module):
    def __init__(self):
        self._cache = {}

    def forward(self, x, parser: argparse.ArgumentParser):
        a = x._data                                             # flagged
        b = x.grad._ctx                                         # flagged
        c = Tensor._from_op(a, None)                            # flagged
        d = getattr(x, "_version")                              # flagged
        e = tgx.nn._anything                                    # flagged
        f = self._hooks                                         # flagged
        x._data = a                                             # flagged
        g = self._cache, parser._actions, Net._cache, _hidden
        return x.numpy(), b, c, d, e, f, g, erf
"""
    (tmp_path / "net.py").write_text(text, encoding="utf-8")
    want = [i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# flagged")]
    got = [int(s.split(":")[1]) for s in private_engine_uses(str(tmp_path),
                                                              os.path.join(ROOT, "tinygradx"))]
    assert got == want
