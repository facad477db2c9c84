"""`--lang zh`: every string the pictures, the trace and the page print is Chinese, apart from
code names (module paths, parameter and class names, node ids, file names), op names and the
seed paper's own symbols (Q, K, V, Score, LayerNorm, Y_attn, d_model, ...).

The words are read from what a user gets: the trace's text (its first line too), every label of
the DOT pictures (nodes, frames, legend, module boxes, values), and the HTML page's header, table,
node data, step box (every VJP line) and buttons. It used to leave the trace's first line, the
page's title and summary, the step box, every VJP text, "LayerNorm", "1 op", "out" and a legend
entry in English.
"""
from __future__ import annotations

import html
import json
import re

import pytest

import tinygradx as tgx
from tinygradx.core.node import Function
from tinygradx.graph.vjps import VJPS
from tinygradx.models.apps import cli
from tinygradx.models.apps.inspect_models import small_model

# the seed paper's symbols and names, and the mathematical notation around them
SEED = """Q K V X Score A Z Concat MHA CausalMHA MLP FFN LayerNorm LN RMSNorm Softmax softmax Y_attn
Y_next H H_ff H_up PE E P M W W_1 W_2 W_3 W_vocab b_1 b_2 b_3 b_vocab head_i head_1 head_h Q_i K_i
V_i QK d_k d_v d_model d_ff h_kv Sublayer GELU ReLU SiLU SwiGLU RoPE rotate_half logits log ids
pos Pre Post GPT Transformer LLaMA e_y inf nan NaN ln mod exp sqrt min max digamma""".split()
# x, x_0, u_1, W_vocab, the x_ of x_{i+d_k/2}
SYMBOL = re.compile(r"^[A-Za-z]$|^[a-zA-Z]_[\w{}]*$|^[A-Za-z]+_\d+$")


def op_names():
    import importlib
    import pkgutil
    for m in pkgutil.walk_packages(tgx.__path__, "tinygradx."):
        importlib.import_module(m.name)

    def walk(c):
        for s in c.__subclasses__():
            yield s
            yield from walk(s)
    return {c.name() for c in walk(Function)}


def code_names(models):
    names = set()
    for m in models:
        for path, mod in m.named_modules():
            names.update(path.split("."))
            names.add(type(mod).__name__)
        for path, _ in list(m.named_parameters()) + list(m.named_buffers()):
            names.update(path.split("."))
    # the ops' own argument names, as the VJP lines write them
    names.update("correction dim index scale slope src value values grad reduce amax amin".split())
    return names


def english_words(texts, allowed):
    out = {}
    for text in texts:
        text = re.sub(r"\d+(\.\d+)?e[-+]\d+", "", text)          # 3.16e-01
        text = re.sub(r"[\w./-]+\.(dot|svg|html|png)\b", "", text)  # the file written
        for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text):
            if w in allowed or SYMBOL.match(w) or re.fullmatch(r"n\d+", w) or \
                    (w.startswith("d") and (w[1:] in allowed or SYMBOL.match(w[1:]))):
                continue
            out.setdefault(w, text.strip()[:100])
    return out


def dot_labels(src):
    return [line for m in re.finditer(r'label="((?:[^"\\]|\\.)*)"', src)
            for line in re.split(r"\\[nlr]", m.group(1))]


def svg_texts(svg):
    return [html.unescape(re.sub(r"<[^>]+>", "", t))
            for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def page_texts(text):
    """What the page shows: header, table, tooltips' node data, steps, labels, its SVG texts."""
    data = {sid: json.loads(re.search(rf'<script id="{sid}" type="application/json">(.*?)'
                                      rf"</script>", text, re.S).group(1))
            for sid in ("node-data", "step-data", "variant-data")}
    out = [str(d.get(k, "")) for d in data["node-data"].values()
           for k in ("name", "formula", "named", "op", "shape")]
    out += [s[k] for s in data["step-data"] for k in ("vjp", "name", "op")]
    for v in data["variant-data"].values():
        out += svg_texts(v["svg"])
        out += [str(d.get(k, "")) for d in v["info"].values() for k in ("name", "formula", "op")]
    out += list(json.loads(re.search(r"var L = (\{.*?\});", text).group(1)).values())
    body = re.sub(r"<script.*?</script>|<style.*?</style>|<svg.*?</svg>", "", text, flags=re.S)
    out.append(html.unescape(re.sub(r"<[^>]+>", " ", body)))
    return out + svg_texts(text[text.index("<svg"):])


def run(argv, capsys):
    assert cli.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


CASES = [("gpt", "pre", []), ("gpt", "post", []), ("transformer", "post", []),
         ("transformer", "pre", []), ("gpt", "pre", ["--llama"])]


@pytest.mark.parametrize("model,norm,extra", CASES)
def test_zh_output_holds_no_english_word(model, norm, extra, tmp_path, capsys):
    pytest.importorskip("graphviz")
    texts = [run(["trace", "--model", model, "--norm", norm, "--layers", "1", "--lang", "zh",
                  *extra], capsys)]
    for depth in ("4", "all"):
        out = tmp_path / f"g{depth}.dot"
        texts.append(run(["graph", "--model", model, "--norm", norm, "--layers", "1", "--lang",
                          "zh", "--depth", depth, "--values", "--out", out, *extra], capsys))
        texts += dot_labels(out.read_text(encoding="utf-8"))
    from tinygradx.graph.viz import find_renderer
    try:
        find_renderer()
        page = tmp_path / "g.html"
        texts.append(run(["graph", "--model", model, "--norm", norm, "--layers", "1", "--lang",
                          "zh", "--out", page, *extra], capsys))
        texts += page_texts(page.read_text(encoding="utf-8"))
    except Exception as err:                           # the page draws its graph: a renderer
        if "renderer" not in str(err).lower():
            raise
    llama = extra == ["--llama"]
    allowed = set(SEED) | op_names() | code_names(
        [small_model(model, norm, 1, llama=llama)[0]])
    found = english_words(texts, allowed)
    assert not found, found
    assert any("层" in t for t in texts[:1])          # the trace's first line is Chinese


def test_every_vjp_line_in_chinese():
    allowed = set(SEED) | op_names() | code_names([])
    found = english_words([zh for _, zh in VJPS.values()], allowed)
    assert not found, found


def test_the_attention_trace_in_chinese(capsys):
    text = run(["trace", "--model", "attention", "--lang", "zh"], capsys)
    allowed = set(SEED) | op_names() | {"self_attn", "w_q", "w_k", "w_v", "w_o", "norm1"}
    assert not english_words([text], allowed)


def test_the_checker_finds_english():
    """The check is not vacuous: the English output is full of words it flags."""
    from tinygradx.models.apps.inspect_models import trace_cli
    found = english_words([trace_cli("gpt", "pre", 1)], set(SEED) | op_names() |
                          code_names([small_model("gpt", "pre", 1)[0]]))
    assert {"layer", "inside", "each", "residual"} <= set(found), found
