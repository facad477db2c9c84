"""tinygradx.viz: draw the graph behind a tensor, find its residual (identity) path, render it.

    import tinygradx.viz as viz
    loss = model(x, targets)[1]
    loss.backward(retain_graph=True)              # keep the graph so it can still be drawn
    g = viz.to_dot(loss, params=model, depth=3, highlight="residual")
    viz.render(g, "gpt.svg")                      # system `dot`, else the graphviz-pure wheel
    print(viz.residual_summary(loss))             # "Pre-LN: 1 LayerNorm on the identity path ..."

Legend (the picture carries a small copy of it; see docs/graphs.md):

    op node            grey rounded box: op name, output shape, module path (and the gradient
                       norm ||dL/d out|| when gradients are shown)
    add node           green rounded box (a sum; the skip adds of residual connections are these)
    layer_norm node    yellow rounded box
    output             the tensor the graph was drawn from: a double border
    parameter          blue ellipse, named from `params` (e.g. transformer.h.0.attn.c_attn.weight)
    input              white ellipse: a leaf that is not a parameter (named if `Tensor.name` is set)
    constant           grey plain text: a scalar operand such as the 0.5 of `x * 0.5`
    saved array        orange dashed box (show_saved=True): an array an op keeps for backward;
                       "= input 0" when it is the input's own array (no copy was made)
    module             lavender 3-d box (depth=k): every op of one module below depth k, merged
    residual path      red, bold nodes and edges (highlight="residual")
    edge width         after backward(retain_graph=True): grows with log10 of the norm of the
                       gradient that flows back along that edge
    cluster            a dashed frame per module path (transformer > transformer.h.0 > ...)
    backward op        pink box in a magenta frame "recorded backward": an op that a
                       create_graph=True pass recorded while computing a gradient (a gradient
                       penalty, a Hessian-vector product), framed by the node whose gradient
                       it computes ("backward of linear · fc3"); the forward is drawn as ever

Node ids are a counter in traversal order (n0, n1, ...), never `id()`, so the DOT text of the same
graph is the same on every run and can be compared with a golden file.

Here: `to_dot` (the options, the Digraph and its setup) and the rendering (`pipe`, `render`).
What each node says and which box holds it is drawing.py's `Drawing`; the styles and the
legend are dotstyle.py's.
"""
from __future__ import annotations

import itertools
import math
import os
import warnings

from .dataflow import DataFlow
from .dataflow_names import sublayer_kind
from .dotstyle import EDGE, dot_text
from .dotstyle import legend as draw_legend
from .drawing import Drawing
from . import (Graph as _G, edge_grads, has_grads, residual_indices, residual_path,
               residual_summary, walk)
from .renderer import (FontWarning, RendererNotFound, cjk_note, dot_fontname, find_renderer,
                       renderer_for, run_renderer)
from ..tensor import Tensor

__all__ = ["to_dot", "to_dot_source", "residual_path", "residual_summary", "render",
           "find_renderer", "RendererNotFound"]


# --------------------------------------------------------------------------------------------
# gradients along edges (graph.edge_grads computes them; here they become pen widths)
# --------------------------------------------------------------------------------------------

def _widths(edge_norm):
    """Pen width 0.6 .. 5 from log10 of each edge's gradient norm, relative to the graph."""
    logs = {k: math.log10(v) for k, v in edge_norm.items() if v > 0}
    if not logs:
        return {}
    lo, hi = min(logs.values()), max(logs.values())
    span = hi - lo if hi > lo else 1.0
    return {k: round(0.6 + 4.4 * (v - lo) / span, 2) for k, v in logs.items()}


# --------------------------------------------------------------------------------------------
# the Digraph
# --------------------------------------------------------------------------------------------

def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("tinygradx.viz needs the `graphviz` Python package to build graphs: "
                          "pip install tinygradx[viz]  (or: pip install graphviz)") from None
    return graphviz


_GRAPH_CLASS = None


def _graph_class():
    """graphviz.Digraph whose Jupyter display renders through `render`'s fallback chain, so a
    notebook shows the picture even without a system Graphviz (graphviz-pure is enough)."""
    global _GRAPH_CLASS
    if _GRAPH_CLASS is None:
        graphviz = _graphviz()

        class Graph(graphviz.Digraph):
            def _repr_image_svg_xml(self):
                return pipe(self, "svg").decode("utf-8")

            def _repr_image_png(self):
                return pipe(self, "png")

            def _repr_image_jpeg(self):
                return pipe(self, "jpeg")

        _GRAPH_CLASS = Graph
    return _GRAPH_CLASS


def to_dot(tensor, params=None, show_saved=False, grads="auto", depth=None, highlight=None,
           rankdir="TB", legend=True, title=None, dims=None, lang="en", ids=False, expand=None,
           values=False):
    """The graph behind `tensor` as a graphviz.Digraph (see the module docstring for the legend).

    Parameters
    ----------
    tensor : Tensor
        The output to draw from (e.g. the loss). Its graph must still exist: draw before
        backward(), or after backward(retain_graph=True).
    params : dict name -> Parameter, or a Module
        Names for leaves; with a Module its `named_parameters()` and `named_buffers()` are used
        and collapsed modules are labelled with their class names.
    show_saved : bool
        Also draw the arrays each op saved for backward (with their shapes).
    grads : "auto" | bool
        Label nodes with ||dL/d node|| and scale edge widths by log10 of the gradient flowing
        along each edge. "auto" does so when a backward already ran (a leaf has a .grad).
    depth : int or None
        Collapse every op whose module path has at least `depth` parts into one node per module
        prefix of `depth` parts (edges between merged nodes are merged too). For a GPT,
        depth=3 gives one node per block `transformer.h.i`, depth=4 opens the blocks into
        attn / mlp / ln_1 / ln_2 with the residual adds visible.
    highlight : "residual" or a list of Tensors
        Nodes (and the edges between consecutive ones) to draw bold and red.
    rankdir : "TB" | "LR" | "BT" | "RL"
        Layout direction (TB: inputs at the top, the loss at the bottom).
    legend : bool
        Draw the small legend frame.
    dims : dict name -> size, optional
        Names for sizes in the labels' named shapes (B, T, S, d_model, h, d_k, d_ff, V); the
        rest are guessed from the ops, as `tgx.trace` does (`dataflow.DataFlow`).
    lang : "en" | "zh"
        The language of the labels' words.
    ids : bool
        Give every node an `id` attribute (its DOT name, n0, n1, ...), which an SVG keeps, so a
        page can find the node (`tinygradx.page`).
    expand : "attention" or a list of module paths (which may hold "attention"), optional
        Modules drawn op by op although `depth` would box them (the weights they read are not
        drawn; each linear's label names its module). "attention": the first attention (in an
        encoder-decoder the first cross-attention, whose K and V come from H), so Q, K, V,
        Score, A, Z, Concat and MHA are in the picture while the other attentions stay boxed.
    values : bool
        Add a line of each tensor's values to its label: mean and std (one number for a
        scalar).

    `tensor` may also be a `graph.Graph` (a traced one, `tgx.trace(graph=True).graph`): its last
    node is then the output. The returned Digraph carries `.nodes_info`, {DOT id: what the node
    computes} (seed name, formula, named and numeric shape, gradient norm, graph indices).

    Returns
    -------
    graphviz.Digraph (a subclass that displays inline in Jupyter through `render`'s renderers)
    """
    if depth is not None and depth < 1:
        raise ValueError(f"to_dot: depth must be >= 1 (or None), got {depth}")
    g = tensor if isinstance(tensor, _G) else walk(tensor)
    root = g.nodes[-1]
    node_norm, edge_norm = {}, {}
    if grads == "auto":
        grads = root._data.size == 1 and has_grads(g)
    if grads:
        node_norm, edge_norm = edge_grads(root, g)
    flow = DataFlow(g, dims)
    flow.name_all()
    expand = [m for e in ([expand] if isinstance(expand, str) else expand or ())
              for m in (first_attentions(g, flow) if e == "attention" else [e])]
    drawing = Drawing(g, params, depth, node_norm, _highlight_plan(g, highlight), flow, lang,
                      ids, expand or (), values)
    dot = _graph_class()(name=dot_text(title or "tinygradx"))
    font = dot_fontname(lang)            # zh: Helvetica, then CJK families (renderer.py)
    dot.attr(rankdir=rankdir, fontname=font, newrank="true")
    dot.attr("node", fontname=font, fontsize="10")
    dot.attr("edge", color=EDGE, arrowsize="0.6")
    drawing.emit_nodes(dot, show_saved)
    drawing.emit_modules()
    drawing.clusters.emit(dot, lang)
    drawing.emit_edges(dot, _widths(edge_norm))
    if legend:
        draw_legend(dot, drawing.kinds_used, lang)
    dot.nodes_info = drawing.info
    return dot


def _highlight_plan(g, highlight):
    """(node indices, {(parent, child)}) to draw bold and red: the residual path or a list."""
    if highlight is None:
        return set(), set()
    if isinstance(highlight, str):
        if highlight != "residual":
            raise ValueError(f"to_dot: highlight must be 'residual' or a list of tensors, "
                             f"got {highlight!r}")
        path = residual_indices(g)
    else:
        path = [g.index[id(t)] for t in highlight if id(t) in g.index]
    return set(path), {(a, b) for b, a in itertools.pairwise(path)}


def first_attentions(g, flow):
    """[the module of the first attention]: the module of the first `A` (a softmax of scores);
    in an encoder-decoder the first cross-attention's, which shows K and V read from H too."""
    found = [g.scopes[i] for i, f in enumerate(flow.flows)
             if f.op == "softmax" and f.name == "A" and g.scopes[i]]
    cross = [m for m in found if sublayer_kind(m) == "cross"]
    return (cross or found)[:1]


def to_dot_source(tensor, **kwargs):
    """The DOT text of `to_dot(tensor, **kwargs)` (what the golden files in tests/ hold)."""
    return to_dot(tensor, **kwargs).source


# --------------------------------------------------------------------------------------------
# rendering (tinygradx.graph.renderer finds and runs the program)
# --------------------------------------------------------------------------------------------

def _source(graph):
    if isinstance(graph, Tensor):
        return to_dot(graph).source
    if isinstance(graph, str):
        return graph
    if hasattr(graph, "source"):
        return graph.source
    raise TypeError(f"render: expected a Tensor, a graphviz graph or DOT text, got "
                    f"{type(graph).__name__}")


def pipe(graph, format="svg", renderer="auto"):
    """Render to bytes in memory (Jupyter's inline display); FontWarning: Chinese as boxes."""
    found, source = renderer_for(format, renderer), _source(graph)
    note = cjk_note(found[0], format, source)
    if note:
        warnings.warn(note, FontWarning, stacklevel=2)
    return run_renderer(found, source, format)


def render(graph, path, format=None, renderer="auto", **to_dot_kwargs):
    """Write `graph` (a Digraph from to_dot, DOT text, or a Tensor to draw) to `path`.

    The format comes from `format` or the file's suffix (svg, png, pdf, jpeg; .dot/.gv write the
    DOT text and need no renderer). Uses Graphviz's `dot` when it is on PATH, otherwise the
    `graphviz-pure` program of the PyPI wheel of that name (pip install graphviz-pure), which
    writes svg/png/jpeg but not pdf. Returns the path.
    """
    if isinstance(graph, Tensor):
        graph = to_dot(graph, **to_dot_kwargs)
    fmt = (format or os.path.splitext(path)[1].lstrip(".") or "svg").lower()
    if fmt in ("dot", "gv"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(_source(graph))
        return path
    data = pipe(graph, fmt, renderer)
    with open(path, "wb") as f:
        f.write(data)
    return path
