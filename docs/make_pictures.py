"""Draw every picture of docs/img and docs/img/zh from the code: one command for all of them.

    python docs/make_pictures.py                  # redraw them all (~10 minutes on 2 cores: it
                                                  # trains the reverse model and a demo run and
                                                  # runs both LN experiments)
    python docs/make_pictures.py walkthrough      # only the pictures of these jobs (see JOBS)
    python docs/make_pictures.py --check          # exit 1 when a committed picture differs from
                                                  # what the code draws now, or docs/img holds a
                                                  # file no job draws

Each job draws a group of pictures, in English and in Chinese, with the functions the pages
show (`pictures.positional_encoding`, `viz.to_dot`, `tinygradx graph`, the experiments, ...). A
picture is compared by what it shows, never by its pixels (models/apps/figures.py): an SVG graph
by its texts and its counts of nodes, edges and frames; a PNG by the fingerprint `save_figure`
writes into it (titles, axis labels, legend entries, the tick labels that name things, how many
lines, images and bars each panel has, and the statistics of the plotted numbers, equal
within 1e-4 of their scale). `--check` draws each job quickly into a temporary folder: the
pictures of a trained run (the reverse model, the demo's health plot, the two LN
experiments) from a run of a few steps, compared by their structure, names and labels
only; all the others in full, compared by their numbers too.
tests/test_pictures_drift.py runs the check in the test suite.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
IMG = os.path.join(HERE, "img")
ROOT = os.path.dirname(HERE)
LANGS = ("en", "zh")


def sub(out, lang):
    """The folder of a language's pictures: docs/img, docs/img/zh."""
    path = out if lang == "en" else os.path.join(out, "zh")
    os.makedirs(path, exist_ok=True)
    return path


# ------------------------------------------------------------------------------------------
# the jobs: each draws its pictures into out (English) and out/zh (Chinese)
# ------------------------------------------------------------------------------------------

def formulas(out, quick=False):
    """The pictures of formulas: the PE matrix, the learning-rate schedules, the masks, label
    smoothing, and the gradient reaching the queries with and without 1/√d_k."""
    from tinygradx.models.apps import experiments, formula_pictures, pictures
    from tinygradx.models.training.config import TrainConfig
    schedules = {
        "en": ("cosine (warmup 100, the default)", "noam (warmup 400)", "constant"),
        "zh": ("cosine（warm-up 100，默认）", "noam（warm-up 400）", "constant（常数）")}
    grads = experiments.score_scale_grads(d_k=512, n_keys=10, n_queries=1000)
    for lang in LANGS:
        d = sub(out, lang)
        pictures.positional_encoding(max_len=64, d_model=64, out_dir=d, lang=lang)
        cos, noam, const = schedules[lang]
        pictures.lr_schedule({cos: TrainConfig(max_steps=2000),
                              noam: TrainConfig(schedule="noam", warmup=400, max_steps=2000),
                              const: TrainConfig(schedule="constant", max_steps=2000)},
                             out_dir=d, lang=lang)
        formula_pictures.masks((8, 6, 3), out_dir=d, lang=lang)
        formula_pictures.label_smoothing(5, target=2, eps=(0.0, 0.1, 0.3), out_dir=d, lang=lang)
        experiments.plot_score_scale_grads(grads, os.path.join(d, "score_scale_grad.png"),
                                           lang=lang)


def graphs(out, quick=False):
    """The graphs: `tinygradx graph --model transformer` (graphs.md), the walkthrough's Pre-LN
    and Post-LN GPTs (its section 10 snippet), autograd.md's sum(a * b + a)."""
    import tinygradx as tgx
    from tinygradx import viz
    from tinygradx.models.apps.inspect_models import build_graph_for_cli
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    build_graph_for_cli("transformer", "post", 2, 4,
                        os.path.join(out, "transformer_post_ln_depth4.svg"), log=None)
    idx = tgx.randint(0, 32, (2, 5)).numpy()
    for lang in LANGS:
        d = sub(out, lang)
        for norm_first, name in ((True, "pre"), (False, "post")):       # walkthrough §10
            tgx.manual_seed(0)
            g = GPT(GPTConfig(n_layer=2, n_head=3, n_embd=24, vocab_size=32, block_size=16,
                              norm_first=norm_first))
            _, loss = g(idx, idx)
            viz.render(viz.to_dot(loss, params=g, depth=4, highlight="residual", legend=False,
                                  lang=lang), os.path.join(d, f"walkthrough_{name}_ln.svg"))
        a = tgx.tensor([1.0, 2.0], requires_grad=True)                  # autograd.md
        b = tgx.tensor([3.0, 4.0], requires_grad=True)
        a.name, b.name = "a", "b"
        y = (a * b + a).sum()
        y.backward(retain_graph=True)
        viz.render(viz.to_dot(y, show_saved=True, lang=lang),
                   os.path.join(d, "walkthrough_autograd_graph.svg"))


REVERSE = ["--task", "reverse", "--n_layer", "2", "--d_model", "64", "--n_head", "4",
           "--dropout", "0", "--max_steps", "1200", "--warmup", "100", "--lr", "2e-3",
           "--eval_interval", "300", "--eval_examples", "200", "--batch_size", "64",
           "--progress", "false"]           # experiments.md's command
REVERSE_QUICK = {"--d_model": "16", "--max_steps": "30", "--eval_interval": "10",
                 "--warmup": "5", "--eval_examples": "20"}


def reverse(out, quick=False):
    """A reverse model trained with experiments.md's command: its training curves and its
    attention while reversing `abcdefgh` (the decoder reading <bos> + `hgfedcba`)."""
    from tinygradx.models.apps import pictures
    flags = list(REVERSE)
    for k, v in (REVERSE_QUICK.items() if quick else ()):
        flags[flags.index(k) + 1] = v
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "reverse")
        done = subprocess.run([sys.executable, "-m", "tinygradx", "train", *flags, "--out_dir",
                               run], cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"the reverse run failed: {done.stderr.strip()}")
        if not quick:
            print(done.stdout.rstrip())         # the lines experiments.md quotes
        for lang in LANGS:
            d = sub(out, lang)
            m = pictures.training_curves(run, d, name="training_curves_reverse", lang=lang)
            maps = pictures.attention_from_checkpoint(os.path.join(run, "checkpoint.npz"),
                                                      "abcdefgh", d, target="hgfedcba",
                                                      prefix="attention_reverse", lang=lang)
        if not quick:                            # what experiments.md shows of this run
            import numpy as np
            print(m["val_exact_match"][~np.isnan(m["val_exact_match"])])
            print(pictures.ascii_heatmap(maps["cross"][1].mean(0), ["<bos>"] + list("hgfedcba"),
                                         list("abcdefgh")))


def health(out, quick=False):
    """The health plot of a 400-step demo run (`tinygradx demo --steps 400`, tasks.md)."""
    from tinygradx.models.apps import demo, pictures
    from tinygradx.models.training.trainer import Trainer, TrainConfig
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "demo")                  # the title names the run: "run demo"
        if quick:
            cfg = dict(demo.DEMO_CONFIG, max_steps=20, eval_interval=20, eval_examples=4,
                       out_dir=run, progress=False)
            with contextlib.redirect_stdout(io.StringIO()):       # its evaluation line
                Trainer(TrainConfig(**cfg), log=lambda *a: None).train()
        else:
            demo.run_demo(steps=400, out_dir=run)     # its lines are the ones tasks.md quotes
        for lang in LANGS:
            pictures.training_health(run, out_dir=sub(out, lang), name="health_demo", lang=lang)


def ln_grad(out, quick=False):
    """`tinygradx experiment ln-grad` (experiments.md): seconds, so always drawn in full."""
    from tinygradx.models.apps import experiments
    result = experiments.ln_grad_experiment()
    if not quick:
        print(experiments.format_ln_grad(result))
    _keep_png(lambda d, lang: experiments.write_ln_grad(result, d, lang), out)


def warmup(out, quick=False):
    """`tinygradx experiment warmup` (experiments.md); quick: 55 steps of a smaller model."""
    from tinygradx.models.apps import experiments
    curves = experiments.warmup_curves(steps=55 if quick else 200, warmup=50,
                                       d_model=16 if quick else 64)
    if not quick:
        print(experiments.format_warmup(curves))
    _keep_png(lambda d, lang: experiments.write_warmup(curves, d, 1e-2, lang), out)


def _keep_png(write, out):
    """Run write(folder, lang) for each language in a scratch folder, keep its PNGs."""
    with tempfile.TemporaryDirectory() as tmp:
        for lang in LANGS:
            for path in write(os.path.join(tmp, lang), lang):
                if path.endswith(".png"):
                    shutil.copy(path, sub(out, lang))


def page(out, quick=False):
    """The graph page of `tinygradx graph --model gpt --layers 1 --depth all --out gpt.html`
    (graphs.md), its softmax row clicked and that node hovered: a screenshot in chromium, which
    carries the page's own fingerprint (`page_fingerprint`). Quick: the fingerprint alone, from
    the page itself (no browser)."""
    from tinygradx.models.apps.inspect_models import build_graph_for_cli
    for lang in LANGS:
        with tempfile.TemporaryDirectory() as tmp:
            html = os.path.join(tmp, "gpt.html")
            build_graph_for_cli("gpt", None, 1, None, html, log=None, lang=lang)
            fp = page_fingerprint(html)
            png = os.path.join(sub(out, lang), "graph_page.png")
            if quick:
                with open(png + ".json", "w", encoding="utf-8") as f:
                    json.dump(fp, f, ensure_ascii=False)
            else:
                _screenshot(html, png, fp)


def page_fingerprint(html_path):
    """What the graph page shows: its title and summary, each table row's module, op,
    formula and shapes, the graph's texts and counts, and whether it has the step buttons."""
    import html as h
    import re

    from tinygradx.models.apps.figures import svg_fingerprint
    with open(html_path, encoding="utf-8") as f:
        text = f.read()
    rows = [[h.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)][2:]
            for row in re.findall(r"<tr data-node[^>]*>(.*?)</tr>", text)]
    head = re.search(r"<header><h1>(.*?)</h1>\s*<p>(.*?)</p>", text, re.S)
    svg = svg_fingerprint(text[text.index("<svg"):text.index("</svg>")])["structure"]
    return {"structure": {"title": h.unescape(head.group(1)), "summary": h.unescape(head.group(2)),
                          "rows": rows, "graph": svg, "stepper": 'id="step-next"' in text},
            "data": None}


def _screenshot(html_path, png, fingerprint):
    """Open the page in headless chromium at 1600 x 1000, click the softmax row, hover its node,
    save the window as a PNG with the fingerprint in a text chunk."""
    from PIL import Image, PngImagePlugin
    from selenium import webdriver
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from tinygradx.models.apps.figures import FINGERPRINT_KEY
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1000", "--hide-scrollbars"]:
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(
        executable_path=shutil.which("chromedriver")), options=opts)
    try:
        driver.get("file://" + os.path.abspath(html_path))
        row = driver.find_element(By.XPATH, "//tr[td[contains(., 'softmax(')]]")
        row.click()
        node = driver.find_element(By.ID, row.get_attribute("data-node"))
        ActionChains(driver).move_to_element(node).perform()
        raw = os.path.join(os.path.dirname(png), ".screenshot.png")
        driver.save_screenshot(raw)
    finally:
        driver.quit()
    info = PngImagePlugin.PngInfo()
    info.add_itxt(FINGERPRINT_KEY, json.dumps(fingerprint, ensure_ascii=False))
    with Image.open(raw) as im:
        im.save(png, pnginfo=info)
    os.unlink(raw)


JOBS = {"formulas": formulas, "graphs": graphs, "reverse": reverse, "health": health,
        "ln_grad": ln_grad, "warmup": warmup, "page": page}
# the jobs whose quick drawing is the full one: their numbers are compared too
EXACT = ("formulas", "graphs", "ln_grad")


# ------------------------------------------------------------------------------------------
# the check
# ------------------------------------------------------------------------------------------

PICTURE = (".png", ".svg", ".png.json")       # what a job's folder holds besides its CSV files


def drawn_files(out):
    """The picture files a job wrote under `out`, relative to it (its CSV files left out)."""
    return sorted(os.path.relpath(os.path.join(f, n), out) for f, _, ns in os.walk(out)
                  for n in ns if n.endswith(PICTURE))


def committed():
    """The picture files of docs/img and docs/img/zh, relative to docs/img."""
    out = []
    for folder, _, names in os.walk(IMG):
        out += [os.path.relpath(os.path.join(folder, n), IMG) for n in names]
    return sorted(out)


def check(jobs=None):
    """Draw each job quickly into a temporary folder and compare with docs/img: [problems]."""
    import tinygradx as tgx
    from tinygradx.models.apps.figures import picture_fingerprint, same_picture
    tgx.process.own_process()
    problems, drawn = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for name in jobs or JOBS:
            out = os.path.join(tmp, name)
            os.makedirs(out)
            JOBS[name](out, quick=True)
            for rel in drawn_files(out):
                fresh = os.path.join(out, rel)
                if rel.endswith(".png.json"):          # a page drawn without its screenshot
                    rel = rel[:-5]
                    with open(fresh, encoding="utf-8") as f:
                        new = json.load(f)
                else:
                    new = picture_fingerprint(fresh)
                drawn.add(rel)
                path = os.path.join(IMG, rel)
                if not os.path.exists(path):
                    problems.append(f"docs/img/{rel}: job {name} draws it, but it is not "
                                    f"committed (run: python docs/make_pictures.py {name})")
                    continue
                why = same_picture(picture_fingerprint(path), new, data=name in EXACT)
                if why:
                    problems.append(f"docs/img/{rel} differs from what job {name} draws now: "
                                    f"{why} (run: python docs/make_pictures.py {name})")
    if jobs is None:
        for rel in committed():
            if rel not in drawn:
                problems.append(f"docs/img/{rel}: no job of docs/make_pictures.py draws it")
    return problems


def main(argv):
    names = [a for a in argv if not a.startswith("-")]
    unknown = [n for n in names if n not in JOBS]
    if unknown:
        sys.exit(f"unknown job {unknown[0]!r}; the jobs: {', '.join(JOBS)}")
    if "--check" in argv:
        problems = check(names or None)
        for p in problems:
            print(p)
        sys.exit(1 if problems else 0)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import tinygradx as tgx
    tgx.process.own_process()
    for name in names or JOBS:
        print(f"{name}: drawing ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            JOBS[name](tmp)
            for rel in drawn_files(tmp):
                os.makedirs(os.path.dirname(os.path.join(IMG, rel)), exist_ok=True)
                shutil.copy(os.path.join(tmp, rel), os.path.join(IMG, rel))
                print(f"  wrote docs/img/{rel}")


if __name__ == "__main__":
    main(sys.argv[1:])
