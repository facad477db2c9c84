"""Build the walkthrough notebooks from their pages, and run them so they carry their outputs:
docs/walkthrough.ipynb from docs/walkthrough.md, docs/zh/walkthrough.ipynb from
docs/zh/walkthrough.md. The notebook cannot drift from the page, and on a code host a reader
sees every number, table and graph without running anything.

    python docs/make_notebook.py            # rebuild both notebooks and run them (a minute or two)
    python docs/make_notebook.py --check    # exit 1 when a committed notebook's cells are stale

Every ```python block of the page becomes a code cell, in order, and the prose between blocks a
Markdown cell; the ```text blocks (the outputs the docs test checks) are left out, since running
the notebook prints them. Each code cell records the page line of its block in
`metadata["walkthrough_line"]`, which tests/test_notebook.py uses to compare what the cell
printed with the page's text block.

What the notebook adds to the page:
- a first cell makes a temporary folder GRAPHS; blocks that write into docs/img/ write there
  instead, and after such a block a cell shows the new SVG and PNG files inline;
- a last section trains a small encoder-decoder on the copy task and decodes held-out strings
  (the page shows one forward and backward pass; the notebook also shows the model learn).
The notebooks are committed with their outputs, made by running them with nbclient here; the
test compares the cells (not the outputs) with a fresh build, and checks the outputs against the
page. Outputs carry no timings or paths that change from run to run in what the test compares.
"""
from __future__ import annotations

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGES = {"en": os.path.join(HERE, "walkthrough.md"),
         "zh": os.path.join(HERE, "zh", "walkthrough.md")}
NOTEBOOKS = {"en": os.path.join(HERE, "walkthrough.ipynb"),
             "zh": os.path.join(HERE, "zh", "walkthrough.ipynb")}

FENCE = re.compile(r"^```(\w*)\s*$")
SKIP_MARK = re.compile(r"^<!-- skip-test: \S.*? -->$")

SETUP = '''# Notebook setup (not on the page): pictures go to a temporary folder, shown inline.
import os
import tempfile

from IPython.display import SVG, Image, display

GRAPHS = tempfile.mkdtemp(prefix="walkthrough_graphs_")
_shown = set()


def show_new_graphs():
    """Display every SVG and PNG written under GRAPHS since the last call."""
    for folder, _, names in sorted(os.walk(GRAPHS)):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if path in _shown or not name.endswith((".svg", ".png")):
                continue
            _shown.add(path)
            display(SVG(filename=path) if name.endswith(".svg") else Image(filename=path))'''

INTRO = {
    "en": """*This notebook is generated from [walkthrough.md](walkthrough.md) by
`docs/make_notebook.py`, and committed with the outputs of a run; edit the page, not the
notebook. Its cells share one Python session, as the page's snippets do: run them top to
bottom. The last section trains the model.*""",
    "zh": ("*本笔记本由 `docs/make_notebook.py` 从 [walkthrough.md](walkthrough.md) 生成，"
           "提交时带着一次运行的输出；请修改页面，而不是笔记本。它的各个单元共用同一个 "
           "Python 会话，与页面上的代码片段一样：请从上到下依次运行。最后一节会训练这个模型。*"),
}

TRAIN_MD = {
    "en": """## Train it: the copy task

The page follows one forward and one backward pass. Here the same encoder-decoder learns: one
layer each side, d_model 32, trained on the `copy` task (the output repeats the input) for 400
steps with AdamW, then asked to decode 200 held-out strings it never saw. On a laptop CPU this
takes well under a minute. Everything is seeded (the model's weights, the data, the batches), so
a fresh run prints the same lines as the ones below; the run's own progress lines, which carry
its speed, are not shown.

The model is small and trained briefly, and it is not perfect: about one string in fifteen comes
out wrong, and two of the five printed below. Both are 10 symbols long, the longest the task
makes, and both lose their last symbol. That is where the copy task is hardest: the decoder must
keep its place in the source to the end, and most mistakes (the last line counts them by length)
fall on the longest strings, near their end: a symbol dropped, doubled or swapped. More steps fix
it: `tinygradx train --task copy`, the same run from the command line with the task's full-size
defaults (2+2 layers, d_model 64, 800 steps), gets all 1,000 held-out strings right
([tasks.md](tasks.md)).""",
    "zh": ("## 训练它：copy 任务\n\n"
           "页面跟随的是一次前向传播和一次反向传播。这里让同一个编码器—解码器真正学起来："
           "两侧各一层，d_model 32，在 `copy` 任务（输出重复输入）上用 AdamW 训练 400 步，"
           "然后让它解码 200 个从未见过的留出字符串。在笔记本电脑的 CPU 上用时不到一分钟。"
           "所有随机性（模型的初始权重、数据、批次）都设了种子，所以重新运行会打印出与下面相同的"
           "各行；训练过程自己的进度行带着运行速度，不在这里显示。\n\n"
           "这个模型很小、训练时间很短，所以并不完美：大约每十五个字符串就有一个出错，下面打印的"
           "五个里错了两个。这两个都长 10 个符号，是该任务生成的最长字符串，而且都丢掉了最后一个"
           "符号。这正是 copy 任务最难的地方：解码器必须一直记住自己在源序列中的位置，直到结尾；"
           "大多数错误（最后一行按长度统计）都落在最长的字符串上，并且出现在结尾附近：少了一个、"
           "多了一个或两个符号对调。多训练就能改正：`tinygradx train --task copy` 是命令行上的"
           "同一次训练，使用该任务的完整默认值（2+2 层，d_model 64，800 步），"
           "1,000 个留出字符串全部正确（[tasks.md](tasks.md)）。"),
}

TRAIN_CODE = '''import contextlib
import io
import tempfile
from collections import Counter

from tinygradx.models.training.trainer import Trainer, TrainConfig

tgx.manual_seed(0)
cfg = TrainConfig.for_task("copy", max_steps=400, n_layer=1, d_model=32, batch_size=32,
                           eval_interval=400, health_interval=0, progress=False, log_interval=0,
                           out_dir=tempfile.mkdtemp(prefix="copy_"))
trainer = Trainer(cfg, log=lambda line: None)
with contextlib.redirect_stdout(io.StringIO()):      # its eval line carries the run's speed
    trainer.train()
pairs = [("".join(src), "".join(tgt)) for src, tgt in trainer.task.split("valid")[:200]]
outs = trainer.translate([src for src, _ in pairs])
wrong = [src for (src, tgt), out in zip(pairs, outs) if out != tgt]
print(f"exact match on {len(pairs)} held-out strings: {len(pairs) - len(wrong)} "
      f"({1 - len(wrong) / len(pairs):.1%})")
for (src, tgt), out in zip(pairs[:5], outs[:5]):
    print(f"{src:>10}  ->  {out}" + ("" if out == tgt else "   (wrong)"))
print("the wrong ones by length:", dict(sorted(Counter(len(s) for s in wrong).items())))'''


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


def build(lang="en"):
    """The notebook of the page in `lang`, without outputs, as a dict."""
    with open(PAGES[lang], encoding="utf-8") as f:
        items = parse(f.read().split("\n"))
    cells = []
    first_md = True
    for kind, text, line in items:
        if kind == "md":
            cells.append(md_cell(text))
            if first_md:                                   # after the title paragraph
                cells.append(md_cell(INTRO[lang]))
                cells.append(code_cell(SETUP, {"generated": True}))
                first_md = False
            continue
        code = (text.replace('f"docs/img/', 'f"{GRAPHS}/').replace('"docs/img/', 'f"{GRAPHS}/')
                .replace('"docs/img"', "GRAPHS"))                # an out_dir= of the folder
        cells.append(code_cell(code, {"walkthrough_line": line}))
        if "GRAPHS" in code:
            cells.append(code_cell("show_new_graphs()", {"generated": True}))
    cells.append(md_cell(TRAIN_MD[lang]))
    cells.append(code_cell(TRAIN_CODE, {"generated": True, "trains": True}))
    for k, c in enumerate(cells):
        c["id"] = f"cell-{k:03d}"
    return {"cells": cells,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def cells_of(nb):
    """What a build decides: each cell's kind, source and metadata (not its outputs)."""
    return [(c["cell_type"], "".join(c["source"]), c.get("metadata", {})) for c in nb["cells"]]


def run(nb, lang):
    """Execute the notebook in a fresh kernel (from the page's folder), filling its outputs."""
    import nbclient
    import nbformat
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    node = nbformat.reads(json.dumps(nb), as_version=4)
    client = nbclient.NotebookClient(node, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(PAGES[lang])}})
    client.execute()
    out = json.loads(nbformat.writes(node))
    for c in out["cells"]:                                 # no per-run timestamps in the file
        c.get("metadata", {}).pop("execution", None)
    # the speed settings the kernel ran with (inherited from this process's environment): the
    # training cell's last figures hold for these; other settings may move them a little
    from tinygradx.fast.dispatch import settings
    out["metadata"]["tinygradx"] = {"speed_settings": settings()}
    return out


def dumps(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv):
    stale = []
    for lang, path in NOTEBOOKS.items():
        fresh = build(lang)
        if "--check" in argv:
            with open(path, encoding="utf-8") as f:
                if cells_of(json.load(f)) != cells_of(fresh):
                    stale.append(path)
            continue
        text = dumps(run(fresh, lang))                     # run first: a failure writes nothing
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path} (with its outputs)")
    if stale:
        sys.exit(f"out of date: {', '.join(stale)}; run python docs/make_notebook.py")


if __name__ == "__main__":
    main(sys.argv[1:])
