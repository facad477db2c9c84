"""Write docs/pytorch-coverage.md (and docs/zh/pytorch-coverage.md): the torch look-alike
(tinygradx.compat) measured against torch's own namespaces, name by name.

    python docs/make_pytorch_coverage.py            # rewrite both pages (needs torch installed)
    python docs/make_pytorch_coverage.py --check    # exit 1 when either page is out of date

For every public name of the measured namespaces, as the installed torch lists them, one status:

    supported  the look-alike provides it and a test compares it with torch (its test id: a
               test that exists, found by collecting the suite)
    untested   the look-alike provides it, but no test compares it with torch yet
    refused    the look-alike refuses it by name (AttributeError or ImportError naming it)
    left out   tinygradx/compat/scope.py's rule says why it does not fit an eager CPU engine

A test compares a name when it is (a) an op-info entry of tests/opinfo.py whose torch check runs
(`tests/ops/test_opinfo.py::test_torch[Tensor.exp]` covers torch.Tensor.exp and the names its
`api` lists), (b) a test of tests/compat/test_surface*.py whose parameter is the full torch name
(`test_module[torch.nn.Linear-float64]`: the name, then anything after a character that
cannot be in a name), or (c) listed in ELSEWHERE below. The survey of learner code
(docs/pytorch-survey.json, written by docs/survey_pytorch_names.py) ranks the names by use.
tests/compat/test_coverage.py fails when a committed page differs from what this writes, and
checks each "supported" row of the committed page against the look-alike and the collected tests.
"""
from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGES = {"en": os.path.join(HERE, "pytorch-coverage.md"),
         "zh": os.path.join(HERE, "zh", "pytorch-coverage.md")}
SURVEY = os.path.join(HERE, "pytorch-survey.json")

NAMESPACES = ("torch.nn", "torch.nn.functional", "torch.Tensor", "torch", "torch.nn.init",
              "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data")
DATA_SUBMODULES = ("dataloader", "dataset", "sampler", "distributed")
# what issue 44 asks of each namespace (per cent of the names in scope)
TARGETS = {"torch.nn": 90, "torch.nn.functional": 90, "torch.Tensor": 70, "torch.nn.init": 100,
           "torch.optim.lr_scheduler": 100}
SURFACE_TESTS = "tests/compat/test_surface*.py"
OPINFO_TESTS = "tests/ops/test_opinfo.py"
# names compared with torch by a test outside the op-info table and the surface sweeps
_CPU = "tests/compat/test_cpu_only.py::"
_HOOKS = "tests/autograd/test_torch_diff_hooks.py::"
ELSEWHERE = {
    "torch.nn.DataParallel": _CPU + "test_dataparallel_matches_torch_on_a_cpu",
    "torch.compile": _CPU + "test_compile_returns_the_model_and_computes_what_torch_compiled_"
                            "computes",
    "torch.GradScaler": _CPU + "test_a_cuda_scaler_is_disabled_with_a_warning_as_in_torch"
                               "[torch.GradScaler]",
    "torch.autocast": _CPU + "test_autocast_is_disabled_on_cuda_and_changes_no_dtype",
    "torch.set_float32_matmul_precision": _CPU + "test_float32_matmul_precision_is_kept_as_torch_"
                                                 "keeps_it",
    "torch.get_float32_matmul_precision": _CPU + "test_float32_matmul_precision_is_kept_as_torch_"
                                                 "keeps_it",
    # a random sample: its distribution is compared with torch's (the generators differ)
    "torch.nn.functional.gumbel_softmax": "tests/nn/test_dropout.py::test_gumbel_softmax_"
                                          "samples_the_categorical_as_torchs[1.0-False]",
    # the autograd harness (tests/autograd/test_torch_diff_hooks.py)
    "torch.Tensor.register_hook": _HOOKS + "test_hook_machine",
    "torch.Tensor.register_post_accumulate_grad_hook": _HOOKS + "test_post_accumulate_grad_hooks",
    "torch.Tensor.retain_grad": _HOOKS + "test_retain_grad_sees_the_hooked_gradient_and_"
                                         "accumulates",
}


# -- torch's names -----------------------------------------------------------------------------

def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


def _from_torch(value):
    module = getattr(value, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def torch_names():
    """{namespace: [full names]} as the installed torch lists them."""
    warnings.simplefilter("ignore")
    import torch
    import torch.nn.functional as F
    import torch.nn.init as init
    import torch.optim.lr_scheduler as lrs
    import torch.utils.data as tud
    names = {}
    nn = torch.nn
    names["torch.nn"] = [n for n in _public(nn) if isinstance(getattr(nn, n), type)
                         and issubclass(getattr(nn, n), nn.Module)]
    names["torch.nn.functional"] = [
        n for n in _public(F) if callable(getattr(F, n)) and not isinstance(getattr(F, n), type)
        and _from_torch(getattr(F, n))]
    names["torch.Tensor"] = _public(torch.Tensor)
    top = []
    for n in sorted(set(torch.__all__) | set(_public(torch))):
        value = getattr(torch, n, None)
        if n.startswith("_") or value is None or isinstance(value, types.ModuleType):
            continue
        if callable(value) and not _from_torch(value) and not isinstance(value, torch.dtype):
            continue                                   # re-exported helpers (os, typing, ...)
        top.append(n)
    names["torch"] = top
    names["torch.nn.init"] = [n for n in _public(init) if inspect.isfunction(getattr(init, n))
                              and getattr(init, n).__module__ == init.__name__]
    names["torch.optim"] = [n for n in _public(torch.optim)
                            if not isinstance(getattr(torch.optim, n), types.ModuleType)]
    names["torch.optim.lr_scheduler"] = list(lrs.__all__)
    data = [n for n in tud.__all__ if not n.startswith("_")]
    import importlib
    for sub in DATA_SUBMODULES:
        module = importlib.import_module(f"torch.utils.data.{sub}")
        data += [f"{sub}.{n}" for n in module.__all__]
    names["torch.utils.data"] = data
    return {ns: [f"{ns}.{n}" for n in sorted(set(v))] for ns, v in names.items()}


# -- the look-alike ----------------------------------------------------------------------------

def provided(full):
    """Whether the look-alike hands out `full` (a full torch name) without refusing it."""
    import tinygradx
    from tinygradx.compat import lookalike
    if full.startswith("torch.Tensor."):
        leaf = full[len("torch.Tensor."):]
        return _tensor_has(tinygradx, leaf)
    parent, _, leaf = full.rpartition(".")
    facade = lookalike.MODULES.get(parent)
    if facade is None:
        return False
    return facade.provides(leaf)


def _tensor_has(tinygradx, leaf):
    """A Tensor attribute that exists and is not a refusal (tinygradx's Tensor refuses a few
    torch methods by name on call: .cuda())."""
    if not hasattr(tinygradx.Tensor, leaf):
        try:                                         # an instance attribute (grad, data, ...)
            getattr(tinygradx.ones(1), leaf)
        except (AttributeError, NotImplementedError, RuntimeError, TypeError, ValueError):
            return False
    return True


# -- the tests that compare a name with torch ------------------------------------------------

def collected_ids(paths):
    """The node ids pytest collects from `paths` (a list of files), in this checkout, less
    those marked xfail."""
    env = dict(os.environ, CI="true")
    # tests marked xfail do not count: they show a gap, not a comparison that holds
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-o",
                          "addopts=", "-p", "no:cacheprovider", "-m", "not xfail", *paths],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line]
    if out.returncode not in (0, 5) or not ids:
        raise RuntimeError(f"collecting {paths} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return set(ids)


def _opinfo_names():
    """{op-info entry name: [torch names its torch check covers]}."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    try:
        from opinfo import OPS
    finally:
        sys.path.remove(os.path.join(ROOT, "tests"))
    prefix = {"Tensor": "torch.Tensor.", "tgx": "torch.", "F": "torch.nn.functional.",
              "nn": "torch.nn."}
    found = {}
    for e in OPS:
        if e.torch_fn() is None:
            continue
        names = []
        for c in e.covers():
            head, _, leaf = c.partition(".")
            if head in prefix and re.fullmatch(r"[A-Za-z_]\w*", leaf):
                names.append(prefix[head] + leaf)
        found[e.name] = names
    return found


def comparing_tests():
    """{torch name: test id} of the tests that compare it with torch (see the docstring)."""
    import glob
    surface = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT,
                                                                               SURFACE_TESTS)))
    files = sorted({OPINFO_TESTS, *surface, *(t.split("::")[0] for t in ELSEWHERE.values())})
    ids = collected_ids(files)
    tests = {}
    for entry, names in _opinfo_names().items():
        tid = f"{OPINFO_TESTS}::test_torch[{entry}]"
        if tid in ids:
            for n in names:
                tests.setdefault(n, tid)
    for tid in sorted(ids):
        m = re.search(r"\[(torch\.[\w.]+)(?:[^\w.][^\]]*)?\]$", tid)
        if m and tid.split("::")[0] in surface:
            tests[m.group(1)] = tid                    # a surface sweep names it exactly
    for name, tid in ELSEWHERE.items():
        if tid in ids:
            tests[name] = tid
    return tests


# -- the table ---------------------------------------------------------------------------------

def table():
    """[(namespace, full name, status, detail)] for every measured name."""
    from tinygradx.compat import scope
    tests = comparing_tests()
    rows = []
    for ns, names in torch_names().items():
        for full in names:
            why = scope.reason(full)
            if why:
                rows.append((ns, full, "left out", why))
            elif not provided(full):
                rows.append((ns, full, "refused", ""))
            elif full in tests:
                rows.append((ns, full, "supported", tests[full]))
            else:
                rows.append((ns, full, "untested", ""))
    return rows


def tensor_groups(rows):
    """torch.Tensor's names grouped with their in-place variants: {op: [rows]} (x_ counts with
    x when torch has both)."""
    mine = {r[1]: r for r in rows if r[0] == "torch.Tensor" and r[2] != "left out"}
    groups = {}
    for full, row in mine.items():
        base = full[:-1] if full.endswith("_") and full[:-1] in mine else full
        groups.setdefault(base, []).append(row)
    return groups


def summary(rows):
    """{namespace: (in scope, supported, untested, refused, left out)}; torch.Tensor counted by
    op groups."""
    out = {}
    for ns in NAMESPACES:
        mine = [r for r in rows if r[0] == ns]
        left = sum(r[2] == "left out" for r in mine)
        if ns == "torch.Tensor":
            groups = tensor_groups(rows).values()
            sup = sum(all(r[2] == "supported" for r in g) for g in groups)
            unt = sum(not all(r[2] == "supported" for r in g) and
                      all(r[2] != "refused" for r in g) for g in groups)
            n = len(groups)
            out[ns] = (n, sup, unt, n - sup - unt, left)
        else:
            sup = sum(r[2] == "supported" for r in mine)
            unt = sum(r[2] == "untested" for r in mine)
            ref = sum(r[2] == "refused" for r in mine)
            out[ns] = (sup + unt + ref, sup, unt, ref, left)
    return out


def extras():
    """Names the look-alike's torch hands out that the installed torch does not have."""
    import torch
    from tinygradx.compat import lookalike
    return sorted(n for n in dir(lookalike.torch) if not hasattr(torch, n))


# -- the pages ---------------------------------------------------------------------------------

WORDS = {
    "en": {"supported": "supported", "untested": "untested", "refused": "refused",
           "left out": "left out"},
    "zh": {"supported": "支持", "untested": "未对照", "refused": "拒绝", "left out": "不纳入"},
}


def _pct(a, b):
    return f"{100.0 * a / b:.1f}%" if b else "-"


def _survey():
    if not os.path.exists(SURVEY):
        return None
    with open(SURVEY, encoding="utf-8") as f:
        return json.load(f)


def build(lang="en", rows=None):
    """The text of docs/pytorch-coverage.md (lang="zh": docs/zh/pytorch-coverage.md)."""
    import torch
    from tinygradx.compat import scope
    rows = table() if rows is None else rows
    w = WORDS[lang]
    zh = lang == "zh"
    stats = summary(rows)
    status = {r[1]: r for r in rows}
    out = []
    add = out.append
    if zh:
        add("# PyTorch 覆盖表\n")
        add(f"tinygradx 的 `torch` 仿制层（`tinygradx.compat`）按 torch {_version(torch)} 自己"
            f"的命名空间逐名对照。本页由 `docs/make_pytorch_coverage.py` 生成，"
            f"`tests/compat/test_coverage.py` 在本页与代码不一致时失败；不要手改。\n")
        add("状态：**支持**（仿制层提供它，且有测试与 torch 对照：测试 id）；**未对照**（提供了，"
            "但还没有测试与 torch 对照）；**拒绝**（仿制层按名字拒绝：AttributeError / "
            "ImportError 说出这个名字）；**不纳入**（不适合只在 CPU 上即时执行的引擎，原因见 "
            "`tinygradx/compat/scope.py`）。`torch.Tensor` 的方法按运算分组计数：原位版本 "
            "`x_` 与 `x` 算作一组，组内全部支持才算支持。\n")
        add("## 概览\n")
        head = "| 命名空间 | 纳入的名字 | 支持 | 未对照 | 拒绝 | 不纳入 | 支持率 | 目标 |"
    else:
        add("# PyTorch coverage\n")
        add(f"tinygradx's `torch` look-alike (`tinygradx.compat`) measured name by name against "
            f"torch {_version(torch)}'s own namespaces. This page is written by "
            f"`docs/make_pytorch_coverage.py`; `tests/compat/test_coverage.py` fails when it "
            f"differs from the code, so do not edit it by hand.\n")
        add("Status: **supported** (the look-alike provides it and a test compares it with "
            "torch: the test id), **untested** (provided, but no test compares it with torch "
            "yet), **refused** (the look-alike refuses it by name: an AttributeError or "
            "ImportError that names it), **left out** (it does not fit an eager engine on one "
            "CPU; the reason is `tinygradx/compat/scope.py`'s). `torch.Tensor`'s methods are "
            "counted by op: an in-place variant `x_` counts with `x`, and the group is "
            "supported when all of it is.\n")
        add("## Summary\n")
        head = ("| namespace | names in scope | supported | untested | refused | left out | "
                "supported % | target |")
    add(head)
    add("|---|---:|---:|---:|---:|---:|---:|---|")
    for ns in NAMESPACES:
        n, sup, unt, ref, left = stats[ns]
        target = TARGETS.get(ns)
        met = "" if target is None else (
            f"{target}% " + (("达到" if zh else "met") if n and 100 * sup >= target * n
                             else ("未达到" if zh else "not yet")))
        label = f"`{ns}`" + (" (按运算分组)" if zh and ns == "torch.Tensor" else
                             " (op groups)" if ns == "torch.Tensor" else "")
        add(f"| {label} | {n} | {sup} | {unt} | {ref} | {left} | {_pct(sup, n)} | {met} |")
    add("")
    survey = _survey()
    if survey is not None:
        found = [n for n in survey["counts"] if n.startswith("torch.Tensor.") and n in status
                 and status[n][2] != "left out"]
        sup = [n for n in found if status[n][2] == "supported"]
        add((f"调查到的学习者代码用到的 `torch.Tensor` 方法（不纳入的除外）：{len(sup)} / "
             f"{len(found)} 支持。" if zh else
             f"`torch.Tensor` methods the surveyed learner code uses (left-out ones aside): "
             f"{len(sup)} of {len(found)} supported.") + "\n")
    out += _survey_section(survey, status, lang)
    for ns in NAMESPACES:
        mine = [r for r in rows if r[0] == ns and r[2] != "left out"]
        add(f"## `{ns}`\n")
        add("| 名字 | 状态 | 对照的测试 |" if zh else "| name | status | compared by |")
        add("|---|---|---|")
        for _, full, st, detail in mine:
            short = full[len(ns) + 1:]
            add(f"| `{short}` | {w[st]} | {f'`{detail}`' if detail else ''} |")
        add("")
    add("## 不纳入的名字\n" if zh else "## Left out, and why\n")
    reasons = {}
    for _, full, st, why in rows:
        if st == "left out":
            reasons.setdefault(why, []).append(full)
    for why, _ in scope.RULES:
        if why in reasons:
            names = reasons[why]
            add(f"- **{why}** ({len(names)}): " + ", ".join(f"`{n}`" for n in names))
    add("")
    more = extras()
    add("## 仿制层多出的名字\n" if zh else "## Names the look-alike has that torch does not\n")
    add(("`dir(torch)` 在仿制层里还列出这些 tinygradx 的名字，真正的 torch 没有（用了它们的脚本"
         "在 PyTorch 下跑不了）：" if zh else
         "`dir(torch)` in the look-alike also lists these tinygradx names, which the real torch "
         "lacks (a script that uses them does not run under PyTorch): ") +
        ", ".join(f"`{n}`" for n in more) + "\n")
    return "\n".join(out)


def _version(torch):
    return torch.__version__.split("+")[0]


def _survey_section(survey, status, lang):
    zh = lang == "zh"
    out = ["## 学习者代码用到的名字\n" if zh else "## What learner code uses\n"]
    if survey is None:
        out.append("（还没有调查数据。）\n" if zh else "(No survey yet.)\n")
        return out
    out.append(("这些公开的教程和课程代码（每个文件按调查时读到的版本，只取代码，"
                "不取说明文字和注释）经 "
                "`docs/survey_pytorch_names.py` 统计 torch 名字的出现次数（统计结果在 "
                "`docs/pytorch-survey.json`）：" if zh else
                "These public tutorials and course files (each at the commit read; their code, "
                "without the prose and comments) were counted by "
                "`docs/survey_pytorch_names.py`, which reads each file's imports and counts every "
                "torch name it calls or reads (the counts: `docs/pytorch-survey.json`):") + "\n")
    out.append("| 来源 | 文件 | 名字出现次数 |" if zh else "| source | files | name uses |")
    out.append("|---|---|---:|")
    for src in survey["sources"]:
        out.append(f"| {src['name']} | " + ", ".join(f"`{p}`" for p in src["files"]) +
                   f" | {src['uses']} |")
    out.append("")
    counts = survey["counts"]
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    w = WORDS[lang]
    missing = [(n, c) for n, c in ranked if n in status and status[n][2] in
               ("refused", "untested")]
    out.append(("### 调查到、还没支持的名字（按用量排序：这就是建造的次序）\n" if zh else
                "### Found by the survey and not yet supported (by use: the order to build)\n"))
    if missing:
        out.append("| 名字 | 次数 | 状态 |" if zh else "| name | uses | status |")
        out.append("|---|---:|---|")
        for n, c in missing:
            out.append(f"| `{n}` | {c} | {w[status[n][2]]} |")
    else:
        out.append("（没有。）" if zh else "(None.)")
    out.append("")
    out.append("### 调查到的全部名字\n" if zh else "### Every name the survey found\n")
    out.append("| 名字 | 次数 | 状态 |" if zh else "| name | uses | status |")
    out.append("|---|---:|---|")
    for n, c in ranked:
        st = status.get(n)
        label = w[st[2]] if st else ("不在所测命名空间" if zh else "not in a measured namespace")
        out.append(f"| `{n}` | {c} | {label} |")
    out.append("")
    return out


def main(argv):
    rows = table()
    stale = []
    for lang, page in PAGES.items():
        text = build(lang, rows)
        name = os.path.relpath(page, ROOT)
        if "--check" in argv:
            same = os.path.exists(page) and open(page, encoding="utf-8").read() == text
            print(f"{name} is up to date" if same else
                  f"{name} is out of date: run python docs/make_pytorch_coverage.py")
            if not same:
                stale.append(name)
            continue
        with open(page, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {name}")
    for ns, (n, sup, unt, ref, left) in summary(rows).items():
        print(f"{ns:28s} {_pct(sup, n):>6s} supported ({sup}/{n}), {unt} untested, "
              f"{ref} refused, {left} left out")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
