"""tinygradx.page: one offline HTML page of the graph and the trace (its content, no browser;
tests/graph/test_browser.py drives it in headless chromium)."""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("graphviz")
from tinygradx.graph import viz  # noqa: E402
from tinygradx.models.apps.inspect_models import build_graph_for_cli, trace_cli  # noqa: E402

# the only URLs an SVG would carry are its namespaces; the page drops them (HTML needs none)
NAMESPACES = ['xmlns="http://www.w3.org/2000/svg"', 'xmlns:xlink="http://www.w3.org/1999/xlink"']

try:
    viz.find_renderer()
    RENDERER = True
except viz.RendererNotFound:
    RENDERER = False


def no_urls(text):
    for ns in NAMESPACES:
        text = text.replace(ns, "")
    return "http://" not in text and "https://" not in text


@pytest.mark.skipif(not RENDERER, reason="no Graphviz renderer (dot or graphviz-pure) installed")
def test_graph_page_is_one_offline_file_with_linked_rows(tmp_path):
    out = tmp_path / "t.html"
    said = []
    build_graph_for_cli("transformer", None, 1, None, str(out), log=said.append)
    text = out.read_text(encoding="utf-8")
    assert said[0].startswith("drew a Post-LN encoder-decoder Transformer, 1+1 layers (every op)")
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    assert no_urls(text) and "http" not in text            # not even the namespaces
    assert not re.search(r'(src|href)\s*=', text)          # nothing loaded from anywhere
    ids = set(re.findall(r'<g id="(n\d+)" class="node"', text))
    rows = re.findall(r'<tr data-node="(n\d+)" data-row="\d+">', text)
    assert rows and set(rows) <= ids                        # every linked row finds its node
    assert '"formula": "A = softmax(' in text and '"named": "(B, h, T, S)"' in text
    assert "X + MHA(X)  (residual)" in text and '"grad":' in text


def test_trace_html_without_a_graph_is_the_table(tmp_path):
    from tinygradx.models.apps.inspect_models import attention_trace
    text = attention_trace().table(fmt="html")
    assert "<table" in text and "Q = X·W^Q" in text and "<svg" not in text and no_urls(text)


@pytest.mark.skipif(not RENDERER, reason="no Graphviz renderer installed")
def test_trace_cli_html_and_zh():
    text = trace_cli("gpt", fmt="html", lang="zh")
    assert "<svg" in text and no_urls(text) and "残差连接" in text and "形状" in text
    assert "Pre-LN GPT" in text


def test_zh_table_strings():
    text = trace_cli("transformer", layers=1, lang="zh")
    lines = text.splitlines()
    # the first line too is Chinese (it was the English description)
    assert lines[0].startswith("Post-LN 编码器—解码器 Transformer，1+1 层：")
    assert lines[1].startswith("维度: ")
    assert lines[2].split()[:5] == ["#", "模块", "算子", "公式", "形状"]
    for term in ["残差连接", "层归一化", "缩放点积注意力", "掩码", "多头注意力", "前馈网络",
                 "位置编码"]:
        assert term in text, term


def test_trace_cli_says_which_norm_it_traced():
    text = trace_cli("gpt", layers=2)
    assert text.splitlines()[0] == ("a Pre-LN GPT, 2 layers: LayerNorm inside each sublayer, "
                                    "x + Sublayer(LN(x)) (ln_1 before attention)")
    ops = [ln.split()[1:3] for ln in text.splitlines()[3:]]
    first_ln = ops.index(["transformer.h.0.ln_1", "layer_norm"])
    first_qkv = ops.index(["transformer.h.0.attn.c_attn", "linear"])
    assert first_ln < first_qkv and ["transformer.h.1.ln_1", "layer_norm"] in ops


def test_backward_steps_follow_the_engines_order_with_each_ops_vjp():
    """page.backward_steps: the order autograd.toposort gives backward, the gradient norms of
    graph.edge_grads, each op's backward formula (vjps.VJPS), the residual path marked."""
    import tinygradx as tgx
    from tinygradx import autograd
    from tinygradx.graph import edge_grads, residual_indices, walk
    from tinygradx.models.apps.inspect_models import small_model, training_loss
    from tinygradx.graph.page import backward_steps
    model, batch = small_model("gpt", "pre", 1)
    loss = training_loss("gpt", model, batch)
    g = walk(loss)
    steps = backward_steps(g, {i: f"n{i}" for i in range(len(g.nodes))})
    order = [g.index[id(t)] for t in autograd.toposort([loss])]
    assert [s["node"] for s in steps] == [i for i in order if f"n{i}" in
                                          {s["id"] for s in steps}]
    norms, _ = edge_grads(loss, g)
    assert all(s["norm"] == f"{norms[s['node']]:.3e}" for s in steps)
    adds = [s for s in steps if s["op"] == "add"]
    assert adds and all(s["vjp"] == "d(a + b) = (g, g)" for s in adds)
    assert any(s["op"] == "mul" and s["vjp"] == "d(a ⊙ b) = (g ⊙ b, g ⊙ a)" for s in steps)
    lns = [s for s in steps if s["op"] == "layer_norm"]
    assert lns and all(s["vjp"].startswith("x̂ = (x − μ)/σ, h = γ ⊙ g: dx = ") for s in lns)
    zh = backward_steps(g, {i: f"n{i}" for i in range(len(g.nodes))}, lang="zh")
    assert [s["vjp"] for s in zh if s["op"] == "layer_norm"][0].startswith("x̂ = (x − μ)/σ，")
    assert {s["node"] for s in steps if s["residual"]} == set(residual_indices(g))
    assert steps[0]["shape"] == "()" and steps[0]["norm"] == "1.000e+00"
    with tgx.no_grad():                                        # nothing to step through
        assert backward_steps(walk(model(batch[0], batch[1])[1]), {}) == []


@pytest.mark.skipif(not RENDERER, reason="no Graphviz renderer installed")
def test_page_has_the_stepper_only_with_a_scalar_to_step_from(tmp_path):
    out = tmp_path / "g.html"
    build_graph_for_cli("gpt", None, 1, 4, str(out), log=None)
    text = out.read_text(encoding="utf-8")
    assert 'id="step-next"' in text and 'id="step-prev"' in text
    steps = json.loads(re.search(r'<script id="step-data" type="application/json">(.*?)'
                                 r'</script>', text, re.S).group(1))
    ids = set(re.findall(r'<g id="(n\d+)" class="(?:node|cluster)"', text))
    assert steps and {s["id"] for s in steps} <= ids       # every step finds its drawn node
    assert steps[0]["name"] == "loss" and any(s["name"] == "A" for s in steps)
    from tinygradx.models.apps.inspect_models import attention_trace
    assert 'id="step-next"' not in attention_trace().table(fmt="html")


@pytest.mark.skipif(not RENDERER, reason="no Graphviz renderer installed")
def test_each_boxed_module_has_its_opened_picture(tmp_path):
    """A module drawn as one box (of more than one op) comes with the picture where it is open:
    a row of an op inside it finds the op's own node there."""
    out = tmp_path / "g.html"
    build_graph_for_cli("gpt", None, 2, 4, str(out), log=None)
    text = out.read_text(encoding="utf-8")
    info = json.loads(re.search(r'<script id="node-data" type="application/json">(.*?)'
                                r'</script>', text, re.S).group(1))
    variants = json.loads(re.search(r'<script id="variant-data" type="application/json">(.*?)'
                                    r'</script>', text, re.S).group(1))
    boxed = {i for i, d in info.items() if d.get("module") and d["op"] != "1 ops"
             and int(d["op"].split()[0]) > 1}
    assert boxed and set(variants) == boxed
    attn = next(i for i in boxed if info[i]["scope"] == "transformer.h.1.attn")
    row = re.search(r'<tr data-node="%s" data-row="(\d+)"><td>\d+</td><td>%s</td>'
                    r'<td>transformer.h.1.attn</td><td>softmax</td>' % (attn, attn), text)
    v = variants[attn]
    node = v["rows"][row.group(1)]
    assert v["info"][node]["op"] == "softmax" and v["info"][node]["name"] == "A"
    assert f'<g id="{node}" class="node"' in v["svg"] and no_urls(v["svg"])
