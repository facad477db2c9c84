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
"""
from __future__ import annotations

import itertools
import math
import os
import warnings

import numpy as np

from .dataflow import DataFlow, translate
from .dataflow_names import sublayer_kind
from .dotstyle import EDGE, HIGHLIGHT, RESIDUAL, Clusters, attrs, dot_text, label, parts
from .dotstyle import legend as draw_legend
from . import (Graph as _G, backward_frame, backward_title, edge_grads, forward_path,
               has_grads, leaf_kind, residual_indices, residual_path, residual_summary,
               walk, within)
from .renderer import (FontWarning, RendererNotFound, cjk_note, dot_fontname, find_renderer,
                       renderer_for, run_renderer)
from ..tensor import Tensor

__all__ = ["to_dot", "to_dot_source", "residual_path", "residual_summary", "render",
           "find_renderer", "RendererNotFound"]

def _fmt_shape(shape):
    return "scalar" if len(shape) == 0 else "(" + ", ".join(str(s) for s in shape) + ")"


# --------------------------------------------------------------------------------------------
# names of leaves
# --------------------------------------------------------------------------------------------

def _param_names(params):
    """{id(tensor): name} from a dict name -> Parameter or from a Module (params and buffers)."""
    if params is None:
        return {}, {}
    kinds = {}
    if hasattr(params, "named_parameters"):
        named = list(params.named_parameters())
        buffers = list(params.named_buffers()) if hasattr(params, "named_buffers") else []
        for _, b in buffers:
            kinds[id(b)] = "buffer"
        named += buffers
    else:
        named = list(params.items())
    return {id(p): name for name, p in named}, kinds


def _module_types(params):
    """{module path: class name} when `params` is a Module (labels of collapsed modules)."""
    if params is None or not hasattr(params, "named_modules"):
        return {}
    return {name: type(m).__name__ for name, m in params.named_modules()}


def _leaf_scope(t, names):
    name = names.get(id(t), "")
    return name.rsplit(".", 1)[0] if "." in name else ""


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
    drawing = _Drawing(g, params, depth, node_norm, _highlight_plan(g, highlight), flow, lang,
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


def _value_line(t):
    """"mean 0.012 std 0.98" of a tensor's values (a scalar: its value)."""
    a = np.asarray(t._data, dtype=np.float64) if t._data.dtype.kind in "fiub" else None
    if a is None or a.size == 0:
        return None
    if a.size == 1:
        return f"= {float(a.reshape(-1)[0]):.4g}"
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return "all inf/nan"
    skipped = a.size - finite.size           # a mask's −inf: counted, not averaged
    return f"mean {finite.mean():.3g} std {finite.std():.3g}" + \
        (f" ({skipped} of {a.size} ±inf)" if skipped else "")


HIDDEN = ""          # the owner of a node that is not drawn


def _collapse_plan(g, depth, names, consumers, expand=()):
    """{node index: the collapsed module it is drawn inside, or None when drawn on its own}.

    An op goes into the module made of the first `depth` parts of its module path (when the
    path is that long); a parameter or constant used only inside one collapsed module too. The
    ops a backward pass recorded for that module go into "<module>/backward", kept apart."""
    owner = {}
    for i, scope in enumerate(g.scopes):
        frame = backward_frame(g.ctxs[i]) if g.ops[i] is not None else None
        ps = parts(forward_path(frame) if frame is not None else scope)
        deep = depth is not None and g.ops[i] is not None and len(ps) >= depth and \
            not any(within(scope, m) for m in expand)
        suffix = "/backward" if frame is not None else ""
        owner[i] = ".".join(ps[:depth]) + suffix if deep else None
    root = len(g.nodes) - 1
    for i, t in enumerate(g.nodes):
        # a weight read only inside a module drawn op by op is not drawn (its linear's label
        # names the module): the picture keeps the data flow, Q, K, V, ..., and stays narrow
        users = consumers.get(i, [])
        if expand and g.ops[i] is None and users and leaf_kind(t, names) == "param" and \
                all(any(within(g.scopes[c], m) for m in expand) for c in users):
            owner[i] = HIDDEN
    if depth is None:
        return owner
    for i, t in enumerate(g.nodes):
        if g.ops[i] is None and i != root and owner[i] is None:
            mods = {owner[c] for c in consumers.get(i, [])}
            if len(mods) == 1 and None not in mods and leaf_kind(t, names) in ("const", "param"):
                owner[i] = mods.pop()
    return owner


def _backward_places(g, consumers):
    """{node index: (frame key, frame title)} for the ops a backward pass recorded (one frame
    per node whose gradient they compute) and the leaves only they use (key None: the outer
    frame, when they serve several). Every other node is drawn with the forward."""
    places = {}
    for i, ctx in enumerate(g.ctxs):
        frame = backward_frame(ctx) if g.ops[i] is not None else None
        if frame is not None:
            places[i] = (id(frame), backward_title(frame))
    for i in range(len(g.nodes)):
        users = consumers.get(i)
        if g.ops[i] is None and users and all(c in places for c in users):
            keys = {places[c] for c in users}
            places[i] = keys.pop() if len(keys) == 1 else (None, "")
    return places


class _Drawing:
    """What to_dot builds up while it emits the graph: DOT ids (n0, n1, ... in walk order, from
    one counter shared with the saved arrays' s-ids), collapsed modules, clusters, kinds drawn."""

    def __init__(self, g, params, depth, node_norm, highlight, flow, lang="en", ids=False,
                 expand=(), values=False):
        self.g, self.depth, self.node_norm, self.values = g, depth, node_norm, values
        self.flow, self.lang, self.ids = flow, lang, ids
        self.name_shape = flow.namer()
        self.info = {}                   # DOT id -> what the node computes (for a page)
        self.hl_nodes, self.hl_edges = highlight
        self.names, self.leaf_kinds = _param_names(params)
        self.mtypes = _module_types(params)
        self.root = len(g.nodes) - 1
        self.consumers = g.consumers()
        self.owner = _collapse_plan(g, depth, self.names, self.consumers, expand)
        self.backward = _backward_places(g, self.consumers)
        self.clusters = Clusters()
        self.draw_id = {}                # node index -> DOT id
        self.module_id, self.module_nodes = {}, {}
        self.kinds_used = set()
        self._ids = itertools.count()

    def new_id(self, prefix="n"):
        return f"{prefix}{next(self._ids)}"

    def emit_nodes(self, dot, show_saved):
        """A node per tensor drawn on its own (and its saved arrays); others join their module."""
        for i, t in enumerate(self.g.nodes):
            mod = self.owner[i]
            if mod == HIDDEN:
                continue
            if mod is not None:
                if mod not in self.module_id:
                    self.module_id[mod] = self.new_id()
                    self.module_nodes[mod] = []
                self.module_nodes[mod].append(i)
                self.draw_id[i] = self.module_id[mod]
                continue
            self.draw_id[i] = self.new_id()
            kind, lines, scope = self._describe(i)
            extra = {"id": self.draw_id[i]} if self.ids else {}
            self.info[self.draw_id[i]] = self._info(i, [i])
            if i in self.node_norm:
                lines.append(f"{translate('grad', self.lang)} {self.node_norm[i]:.2e}")
            if self.values and (kind != "const") and _value_line(t):
                lines.append(_value_line(t))
            if i == self.root:
                extra["peripheries"] = "2"
            if i in self.hl_nodes:
                extra.update(HIGHLIGHT)
                self.kinds_used.add("residual")
            self.kinds_used.add(kind)
            self._place(i, scope, self.draw_id[i], attrs(kind, label=label(lines), **extra))
            if show_saved and t._ctx is not None:
                for node_id, a in _saved_nodes(t, self.new_id):
                    self._place(i, scope, node_id, a)
                    self.kinds_used.add("saved")
                    dot.edge(node_id, self.draw_id[i], style="dashed", color="#e08a3c",
                             arrowhead="none")

    def _place(self, i, scope, node_id, a):
        """Into the frame of its module path, or into the recorded backward's frame."""
        if i in self.backward:
            self.clusters.add_backward(*self.backward[i], node_id, a)
        else:
            self.clusters.add(scope, node_id, a)

    def _describe(self, i):
        """(style kind, label lines, cluster scope) of node i drawn on its own."""
        t, g = self.g.nodes[i], self.g
        if g.ops[i] is not None:
            op, scope = g.ops[i], g.scopes[i]
            kind = "backward" if i in self.backward else op if op in ("add", "layer_norm") \
                else "op"
            name = self.flow.flows[i].name
            if self.flow.flows[i].symbol.endswith(" + M"):
                kind = "op"                      # the mask's add is no residual connection
            named = self.flow.named_shape(i, self.name_shape) if t.shape else "scalar"
            shape = _fmt_shape(t.shape)
            # "Q (B, T, h·d_k)" over "(2, 5, 24)"; one line of each when no dim has a name
            lines = [name or op, shape] if named == shape else [f"{name or op} {named}", shape]
            where = " · ".join(([op] if name else []) + ([scope] if scope else []))
            return kind, lines + ([where] if where else []), scope
        kind = leaf_kind(t, self.names)
        if kind == "param":
            lines = [self.names.get(id(t), t.name or "parameter"), _fmt_shape(t.shape)]
            kind = "input" if self.leaf_kinds.get(id(t)) == "buffer" else "param"
            return kind, lines, _leaf_scope(t, self.names)
        if kind == "const":
            value = np.format_float_positional(float(t._data.reshape(-1)[0]), precision=4,
                                               trim="-") if t._data.size else "const"
            role = self._role(i)
            return kind, ([f"{role} = {value}"] if role else [value]), \
                _consumer_scope(g, self.consumers, i)
        # an unnamed array a backward pass made without a graph (a gradient that depends on
        # nothing that requires grad) is a constant there, not an input of the model
        word = "constant" if i in self.backward and not t.requires_grad else "input"
        lines = [self.names.get(id(t)) or t.name or self._role(i) or word, _fmt_shape(t.shape)]
        if t.requires_grad:
            lines.append("requires grad")
        return kind, lines, ""

    def _role(self, i):
        """The seed's name of a leaf from the formula that reads it: the scale 1/√d_k (or
        √d_k, √d_model), the mask M, the positional encoding PE; else ""."""
        for c in self.consumers.get(i, []):
            f = self.flow.flows[c]
            ps = self.g.parents(c)
            if f.symbol.endswith("/√d_k") and ps[0] != i:
                return "1/√d_k" if f.op == "mul" else "√d_k"
            if f.symbol == "E·√d" and ps[0] != i:
                return "√d_model"
            if f.symbol.endswith(" + M") and ps[0] != i:
                return "M (mask)"
            if f.formula.startswith(("−log p(y)·w", "log p(y)·w")) and ps[0] != i:
                return "w (target weights)"
            if f.symbol in ("X", "PE") and f.op in ("add", "getitem"):
                return "PE (positional encoding)" if f.op == "add" else "PE table"
        return ""

    def _info(self, i, members):
        """What a drawn node computes, for a page's tooltip: one node, or a collapsed module's
        outputs (the members whose value leaves the module)."""
        g, f = self.g, self.flow.flows[i]
        info = {"nodes": members, "op": g.ops[i] or "", "scope": g.scopes[i],
                "name": f.name, "formula": translate(f.formula, self.lang),
                "shape": _fmt_shape(g.nodes[i].shape),
                "named": self.flow.named_shape(i, self.name_shape)}
        if i in self.node_norm:
            info["grad"] = f"{self.node_norm[i]:.3e}"
        return info

    def emit_modules(self):
        """A 3-d box per collapsed module: its class, op count, output shapes, largest grad."""
        for mod, members in self.module_nodes.items():
            ops = [i for i in members if self.g.ops[i] is not None]
            outs = []
            for i in members:
                leaves = i == self.root or any(self.owner[c] != mod
                                               for c in self.consumers.get(i, []))
                shape = _fmt_shape(self.g.nodes[i].shape)
                if leaves and shape not in outs:
                    outs.append(shape)
            exits = [i for i in ops if i == self.root or any(self.owner[c] != mod
                                                              for c in self.consumers.get(i, []))]
            names = []
            for i in exits:
                f = self.flow.flows[i]
                text = f"{f.name} {self.flow.named_shape(i, self.name_shape)}" if f.name else ""
                if text and text not in names:
                    names.append(text)
            lines = [mod] + ([self.mtypes[mod]] if mod in self.mtypes else [])
            lines.append(f"{len(ops)} ops" if len(ops) != 1 else "1 op")
            lines += names
            if outs:
                lines.append("out " + ", ".join(outs))
            norms = [self.node_norm[i] for i in ops if i in self.node_norm]
            extra = {"id": self.module_id[mod]} if self.ids else {}
            last = exits[-1] if exits else (ops[-1] if ops else members[-1])
            info = self._info(last, members)
            info.update(scope=mod, op=f"{len(ops)} ops", module=True)
            if norms:
                info["grad"] = f"{max(norms):.3e}"
            self.info[self.module_id[mod]] = info
            if any(i in self.hl_nodes for i in members):
                extra.update(HIGHLIGHT)
                self.kinds_used.add("residual")
            if self.root in members:
                extra["peripheries"] = "2"
            if norms:
                lines.append(f"{translate('max grad', self.lang)} {max(norms):.2e}")
            if mod.endswith("/backward"):            # the ops a backward pass recorded
                self.kinds_used.add("backward")
                self.clusters.add_backward(None, "", self.module_id[mod],
                                           attrs("backward_module", label=label(lines), **extra))
                continue
            self.kinds_used.add("module")
            self.clusters.add(".".join(parts(mod)[:-1]), self.module_id[mod],
                              attrs("module", label=label(lines), **extra))

    def emit_edges(self, dot, widths):
        """The edges between drawn nodes; those that join the same pair are merged into one."""
        merged = {}
        for p, c, slot in self.g.edges:
            a, b = self.draw_id.get(p), self.draw_id.get(c)
            if a == b or a is None or b is None:
                continue
            e = merged.setdefault((a, b), {"count": 0, "width": None, "hl": False})
            e["count"] += 1
            w = widths.get((p, c, slot))
            if w is not None:
                e["width"] = w if e["width"] is None else max(e["width"], w)
            if (p, c) in self.hl_edges:
                e["hl"] = True
        for (a, b), e in merged.items():
            attrs = {}
            if e["width"] is not None:
                attrs["penwidth"] = f"{e['width']:g}"
            if e["count"] > 1 and self.depth is None:
                attrs["label"] = f"x{e['count']}"      # the same tensor used twice, as in x * x
            if e["hl"]:
                attrs.update(color=RESIDUAL, penwidth=f"{max(e['width'] or 0, 3):g}")
            dot.edge(a, b, **attrs)
        if widths:
            self.kinds_used.add("grads")


def _consumer_scope(g, consumers, i):
    scopes = {g.scopes[c] for c in consumers.get(i, [])}
    return scopes.pop() if len(scopes) == 1 else ""


def _saved_nodes(t, new_id):
    """(id, attrs) for every array the node keeps for backward, in attribute order."""
    ctx = t._ctx
    inputs = [p._data for p in ctx.parents]
    out = []
    items = list(vars(ctx).items())
    for key, value in items:
        values = value if key == "saved_tensors" else (value,)
        for k, arr in enumerate(values):
            if not isinstance(arr, np.ndarray) or arr.ndim == 0:
                continue
            name = key if key != "saved_tensors" else f"saved[{k}]"
            lines = [f"{name} {_fmt_shape(arr.shape)}"]
            same = [j for j, x in enumerate(inputs) if x is arr]
            if same:
                lines.append(f"= input {same[0]}")
            out.append((new_id("s"), attrs("saved", label=label(lines))))
    return out


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
