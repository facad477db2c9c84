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

Node ids are a counter in traversal order (n0, n1, ...), never `id()`, so the DOT text of the same
graph is the same on every run and can be compared with a golden file.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np

from . import autograd
from .tensor import Tensor

__all__ = ["to_dot", "to_dot_source", "residual_path", "residual_summary", "render",
           "find_renderer", "RendererNotFound"]

# node styles, one place (the docstring above is their legend)
_STYLE = {
    "op": dict(shape="box", style="rounded,filled", fillcolor="#eeeeee"),
    "add": dict(shape="box", style="rounded,filled", fillcolor="#d4efd4"),
    "layer_norm": dict(shape="box", style="rounded,filled", fillcolor="#fff2a8"),
    "param": dict(shape="ellipse", style="filled", fillcolor="#cfe2ff"),
    "input": dict(shape="ellipse", style="filled", fillcolor="#ffffff"),
    "const": dict(shape="plaintext", fontcolor="#777777", fontsize="9"),
    "saved": dict(shape="box", style="dashed,filled", fillcolor="#fde0c2", fontsize="9"),
    "module": dict(shape="box3d", style="filled", fillcolor="#e8dcf5"),
}
_RESIDUAL = "#d62728"
_EDGE = "#555555"


# --------------------------------------------------------------------------------------------
# walking the graph
# --------------------------------------------------------------------------------------------

class _Walk:
    """The tensors behind a root, parents before children (a topological order).

    nodes[i] is a Tensor; edges are (parent index, child index, input slot). The order comes
    from a depth-first walk that visits parents in argument order, so it is deterministic.
    """

    def __init__(self, root):
        self.nodes, self.index, self.edges = [], {}, []
        started = set()                  # ids of tensors whose parents were pushed
        stack = [(root, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                self.index[id(t)] = len(self.nodes)
                self.nodes.append(t)
                continue
            if id(t) in started:         # pushed twice (two consumers): visit once
                continue
            started.add(id(t))
            ctx = t._ctx
            if ctx is not None and ctx.parents is None:
                raise RuntimeError(
                    f"viz: the {ctx.name()} node{' in ' + ctx.scope if ctx.scope else ''} was "
                    f"freed by backward(); call backward(retain_graph=True), or draw the graph "
                    f"before backward()")
            stack.append((t, True))
            if ctx is not None:
                for p in reversed(ctx.parents):
                    if id(p) not in started:
                        stack.append((p, False))
        for i, t in enumerate(self.nodes):
            if t._ctx is not None:
                for slot, p in enumerate(t._ctx.parents):
                    self.edges.append((self.index[id(p)], i, slot))

    def parents(self, i):
        t = self.nodes[i]
        return [] if t._ctx is None else [self.index[id(p)] for p in t._ctx.parents]


def _op_name(t):
    return t._ctx.name() if t._ctx is not None else None


def _fmt_shape(shape):
    return "scalar" if len(shape) == 0 else "(" + ", ".join(str(s) for s in shape) + ")"


def _parts(scope):
    return scope.split(".") if scope else []


def _within(scope, module):
    """Whether `scope` is `module` or below it (module "" contains everything)."""
    return module == "" or scope == module or scope.startswith(module + ".")


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


def _leaf_kind(t, names):
    from .nn import Parameter
    if isinstance(t, Parameter) or id(t) in names:
        return "param"
    if t.data.size <= 1 and not t.requires_grad and t.name is None:
        return "const"
    return "input"


# --------------------------------------------------------------------------------------------
# residual paths
# --------------------------------------------------------------------------------------------

def _sublayer(add_scope, scope):
    """The module one level below what `add_scope` and `scope` share, containing `scope`.

    For an add in `transformer.h.0` and an input made in `transformer.h.0.attn.c_proj` this is
    `transformer.h.0.attn`; None when the input was made in the add's own module or above it.
    """
    a, b = _parts(add_scope), _parts(scope)
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    if k == len(b):
        return None
    return ".".join(b[:k + 1])


def _is_ancestor(walk, p, q):
    """Whether node p is behind node q. Only nodes after p in the topological order can lie on a
    path from p to q, so the search stays inside the sublayer between them."""
    seen, stack = set(), [q]
    while stack:
        i = stack.pop()
        for j in walk.parents(i):
            if j == p:
                return True
            if j > p and j not in seen:
                seen.add(j)
                stack.append(j)
    return False


def _leaf_scope(t, names):
    name = names.get(id(t), "")
    return name.rsplit(".", 1)[0] if "." in name else ""


def _skip_input(walk, i, names=None):
    """For an add node i, the index of its skip (identity) input, or None.

    A skip add is `x + Sublayer(x)`: the other input q was produced inside a sublayer (a module
    below the add's common scope with q), and x comes from outside that sublayer yet feeds it
    (x is behind q). Found from scopes and edges alone, so models need no annotations.
    """
    t = walk.nodes[i]
    if _op_name(t) != "add":
        return None
    ps = walk.parents(i)
    if len(ps) != 2 or ps[0] == ps[1]:
        return None
    scope = t._ctx.scope
    for skip, other in ((ps[0], ps[1]), (ps[1], ps[0])):
        q = walk.nodes[other]
        if q._ctx is None:
            continue
        sub = _sublayer(scope, q._ctx.scope)
        if sub is None:
            continue
        x = walk.nodes[skip]
        x_scope = x._ctx.scope if x._ctx is not None else _leaf_scope(x, names or {})
        if not _within(x_scope, sub) and _is_ancestor(walk, skip, other):
            return skip
    return None


def _main_parent(walk, i):
    """The input an op passes its value on from: the first op-made input of the output's shape
    (layer_norm's x, not its weight), else the first op-made input."""
    t = walk.nodes[i]
    made = [j for j in walk.parents(i) if walk.nodes[j]._ctx is not None]
    if not made:
        return None
    same = [j for j in made if walk.nodes[j].shape == t.shape]
    return (same or made)[0]


def _residual_indices(walk):
    path = [len(walk.nodes) - 1]
    while True:
        i = path[-1]
        if walk.nodes[i]._ctx is None:
            break
        nxt = _skip_input(walk, i)
        if nxt is None:
            nxt = _main_parent(walk, i)
        if nxt is None or nxt in path:
            break
        path.append(nxt)
    return path


def residual_path(root):
    """The identity path from `root` (usually the loss) back to the embeddings.

    From the root, repeatedly step to the skip input of a skip add (see `_skip_input`), or,
    through any other op, to the input it passes its value on from; stop at an op whose inputs
    are all leaves (the embedding lookup). Returns the tensors on the path, root first; each
    op's name is `t._ctx.name()` and its module path `t._ctx.scope`.
    """
    walk = _Walk(root)
    return [walk.nodes[i] for i in _residual_indices(walk)]


def _short_list(items, n=4):
    if len(items) <= n:
        return ", ".join(items)
    return ", ".join(items[:2]) + ", ..., " + items[-1]


def residual_summary(root):
    """One line: where the LayerNorms sit on the identity path from `root` to the embeddings.

    Pre-LN (LayerNorm inside each sublayer) leaves the path free of LayerNorms except a final
    one; Post-LN (LayerNorm after each residual add) puts one on the path per sublayer.
    """
    walk = _Walk(root)
    idx = _residual_indices(walk)
    lns, skips, ln_after_skip = [], 0, False
    for i in idx:
        t = walk.nodes[i]
        if t._ctx is None:
            continue
        if t._ctx.name() == "layer_norm":
            lns.append(t._ctx.scope or "<top>")
            ln_after_skip = ln_after_skip or skips > 0
        elif _skip_input(walk, i) is not None:
            skips += 1
    end = walk.nodes[idx[-1]]
    end_name = f"{end._ctx.name()} ({end._ctx.scope or '<top>'})" if end._ctx else "a leaf"
    if skips == 0:
        return (f"no residual connection found: the path from the output to {end_name} "
                f"crosses {len(lns)} LayerNorm(s)")
    kind = "Post-LN" if ln_after_skip else "Pre-LN"
    ln_word = "LayerNorm" if len(lns) == 1 else "LayerNorms"
    where = f" ({_short_list(lns)})" if lns else ""
    return (f"{kind}: {len(lns)} {ln_word} on the identity path{where}; {skips} skip adds "
            f"between the output and {end_name}")


# --------------------------------------------------------------------------------------------
# gradients along edges
# --------------------------------------------------------------------------------------------

def _edge_grads(root, walk):
    """({node index: ||dL/d node||}, {(parent, child, slot): ||gradient along that edge||}).

    One extra backward pass of our own over the retained graph: it reads each node's saved
    arrays and calls its `backward`, but writes no `.grad` and runs no hooks, so drawing never
    changes what training sees.
    """
    if root.data.size != 1:
        raise ValueError(f"viz: gradients can be shown for a scalar output only; this one has "
                         f"shape {root.shape}")
    grads = {len(walk.nodes) - 1: np.ones(root.shape, dtype=root.data.dtype)}
    node_norm, edge_norm = {}, {}
    for i in range(len(walk.nodes) - 1, -1, -1):   # children before parents
        g = grads.pop(i, None)
        if g is None:
            continue
        node_norm[i] = float(np.linalg.norm(g))
        ctx = walk.nodes[i]._ctx
        if ctx is None:
            continue
        ins = ctx.backward(g)
        if not isinstance(ins, tuple):
            ins = (ins,)
        for slot, (p, ig, need) in enumerate(zip(walk.parents(i), ins, ctx.needs_input_grad)):
            if ig is None or not need:
                continue
            ig = autograd.unbroadcast(np.asarray(ig), walk.nodes[p].shape)
            edge_norm[(p, i, slot)] = float(np.linalg.norm(ig))
            grads[p] = ig if p not in grads else grads[p] + ig
    return node_norm, edge_norm


def _auto_grads(walk):
    """Show gradients when a backward already ran over this graph (a leaf has a .grad)."""
    return any(t._ctx is None and t.grad is not None for t in walk.nodes)


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


def _label(lines):
    # DOT's own \n escape (a centred line break) keeps each node on one line of the source
    return "\\n".join(lines)


def _attrs(kind, **extra):
    a = dict(_STYLE[kind])
    a.update(extra)
    return a


class _Clusters:
    """Nested `cluster_*` subgraphs by module path; a node goes into the deepest frame of its
    path. Frames holding a single node are dropped (its label already names the module)."""

    def __init__(self):
        self.members = {}            # module path -> [(node id, attrs)]

    def add(self, scope, node_id, attrs):
        self.members.setdefault(scope, []).append((node_id, attrs))

    def emit(self, dot):
        count = {}
        for scope, items in self.members.items():
            for k in range(len(_parts(scope)) + 1):
                prefix = ".".join(_parts(scope)[:k])
                count[prefix] = count.get(prefix, 0) + len(items)
        kept = {s for s, n in count.items() if s and n > 1}

        def frame_of(scope):
            parts = _parts(scope)
            for k in range(len(parts), 0, -1):
                if ".".join(parts[:k]) in kept:
                    return ".".join(parts[:k])
            return ""

        placed = {}
        for scope, items in self.members.items():
            placed.setdefault(frame_of(scope), []).extend(items)
        children = {}
        for s in sorted(kept, key=lambda s: (len(_parts(s)), s)):
            parent = frame_of(".".join(_parts(s)[:-1]))
            children.setdefault(parent, []).append(s)
        order = {s: k for k, s in enumerate(self.members)}

        def first_seen(s):
            return min(order[m] for m in self.members if _within(m, s))

        def fill(graph, frame):
            for node_id, attrs in placed.get(frame, []):
                graph.node(node_id, **attrs)
            for child in sorted(children.get(frame, []), key=first_seen):
                with graph.subgraph(name="cluster_" + child) as sub:
                    sub.attr(label=child, style="dashed", color="#999999", fontsize="10",
                             fontcolor="#555555")
                    fill(sub, child)

        fill(dot, "")


def _legend(dot, kinds):
    with dot.subgraph(name="cluster_legend") as lg:
        lg.attr(label="legend", style="solid", color="#bbbbbb", fontsize="10")
        samples = [("op", "op\n(shape)\nmodule"), ("add", "add"), ("layer_norm", "layer_norm"),
                   ("param", "parameter"), ("input", "input"), ("const", "constant"),
                   ("saved", "saved for backward"), ("module", "module (collapsed)")]
        prev = None
        for kind, text in samples:
            if kind not in kinds:
                continue
            name = "legend_" + kind
            lg.node(name, _label(text.split("\n")), **_STYLE[kind])
            if prev is not None:
                lg.edge(prev, name, style="invis")     # stack the samples in one column
            prev = name
        if "residual" in kinds:
            lg.node("legend_residual", "residual path", shape="box", style="rounded,bold",
                    color=_RESIDUAL, fontcolor=_RESIDUAL, penwidth="3")
            if prev is not None:
                lg.edge(prev, "legend_residual", style="invis")
            prev = "legend_residual"
        if "grads" in kinds:
            lg.node("legend_grads", "edge width ~ log10 ||grad||", shape="plaintext",
                    fontsize="9")
            if prev is not None:
                lg.edge(prev, "legend_grads", style="invis")


def to_dot(tensor, params=None, show_saved=False, grads="auto", depth=None, highlight=None,
           rankdir="TB", legend=True, title=None):
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

    Returns
    -------
    graphviz.Digraph (a subclass that displays inline in Jupyter through `render`'s renderers)
    """
    if depth is not None and depth < 1:
        raise ValueError(f"to_dot: depth must be >= 1 (or None), got {depth}")
    walk = _Walk(tensor)
    names, leaf_kinds = _param_names(params)
    mtypes = _module_types(params)
    n = len(walk.nodes)
    root = n - 1

    # gradients
    node_norm, edge_norm = {}, {}
    if grads == "auto":
        grads = tensor.data.size == 1 and _auto_grads(walk)
    if grads:
        node_norm, edge_norm = _edge_grads(tensor, walk)
    widths = _widths(edge_norm)

    # highlighted nodes and edges
    hl_nodes, hl_edges = set(), set()
    if highlight is not None:
        if isinstance(highlight, str):
            if highlight != "residual":
                raise ValueError(f"to_dot: highlight must be 'residual' or a list of tensors, "
                                 f"got {highlight!r}")
            path = _residual_indices(walk)
        else:
            path = [walk.index[id(t)] for t in highlight if id(t) in walk.index]
        hl_nodes = set(path)
        hl_edges = {(a, b) for b, a in zip(path, path[1:])}   # (parent, child)

    # where each node goes: its own drawing, a collapsed module, or absorbed into one
    consumers = {}
    for p, c, _ in walk.edges:
        consumers.setdefault(p, []).append(c)

    def module_of(i):
        t = walk.nodes[i]
        if depth is None or t._ctx is None:
            return None
        parts = _parts(t._ctx.scope)
        return ".".join(parts[:depth]) if len(parts) >= depth else None

    owner = {}                       # node index -> collapsed module path (or None)
    for i in range(n):
        owner[i] = module_of(i)
    for i in range(n):               # leaves used only inside one collapsed module vanish in it
        t = walk.nodes[i]
        if t._ctx is None and depth is not None and i != root:
            mods = {owner[c] for c in consumers.get(i, [])}
            if len(mods) == 1 and None not in mods:
                kind = _leaf_kind(t, names)
                if kind == "const" or kind == "param":
                    owner[i] = mods.pop()

    graph_cls = _graph_class()
    dot = graph_cls(name=title or "tinygradx")
    dot.attr(rankdir=rankdir, fontname="Helvetica", newrank="true")
    dot.attr("node", fontname="Helvetica", fontsize="10")
    dot.attr("edge", color=_EDGE, arrowsize="0.6")
    clusters = _Clusters()
    draw_id = {}                     # node index -> DOT id
    module_id, module_nodes = {}, {}
    kinds_used = set()
    counter = [0]

    def new_id(prefix="n"):
        k = counter[0]
        counter[0] += 1
        return f"{prefix}{k}"

    for i, t in enumerate(walk.nodes):
        mod = owner[i]
        if mod is not None:
            if mod not in module_id:
                module_id[mod] = new_id()
                module_nodes[mod] = []
            module_nodes[mod].append(i)
            draw_id[i] = module_id[mod]
            continue
        draw_id[i] = new_id()
        extra = {}
        if t._ctx is not None:
            op = t._ctx.name()
            kind = op if op in ("add", "layer_norm") else "op"
            lines = [op, _fmt_shape(t.shape)]
            if t._ctx.scope:
                lines.append(t._ctx.scope)
            scope = t._ctx.scope
        else:
            kind = _leaf_kind(t, names)
            if kind == "param":
                name = names.get(id(t), t.name or "parameter")
                lines = [name, _fmt_shape(t.shape)]
                scope = _leaf_scope(t, names)
                if leaf_kinds.get(id(t)) == "buffer":
                    kind = "input"
            elif kind == "const":
                lines = [np.format_float_positional(float(t.data.reshape(-1)[0]), precision=4,
                                                    trim="-") if t.data.size else "const"]
                scope = _consumer_scope(walk, consumers, i)
            else:
                label = names.get(id(t)) or t.name or "input"
                lines = [label, _fmt_shape(t.shape)]
                if t.requires_grad:
                    lines.append("requires grad")
                scope = ""
        if i in node_norm:
            lines.append(f"grad {node_norm[i]:.2e}")
        if i == root:
            extra["peripheries"] = "2"
        if i in hl_nodes:
            extra.update(color=_RESIDUAL, penwidth="3", fontcolor=_RESIDUAL)
            kinds_used.add("residual")
        kinds_used.add(kind)
        clusters.add(scope, draw_id[i], _attrs(kind, label=_label(lines), **extra))
        if show_saved and t._ctx is not None:
            for node_id, attrs in _saved_nodes(t, new_id):
                clusters.add(scope, node_id, attrs)
                kinds_used.add("saved")
                dot.edge(node_id, draw_id[i], style="dashed", color="#e08a3c",
                         arrowhead="none")

    for mod, members in module_nodes.items():
        ops = [i for i in members if walk.nodes[i]._ctx is not None]
        outs = []
        for i in members:
            leaves_module = any(owner[c] != mod for c in consumers.get(i, [])) or i == root
            if leaves_module and _fmt_shape(walk.nodes[i].shape) not in outs:
                outs.append(_fmt_shape(walk.nodes[i].shape))
        lines = [mod] + ([mtypes[mod]] if mod in mtypes else [])
        lines.append(f"{len(ops)} ops" if len(ops) != 1 else "1 op")
        if outs:
            lines.append("out " + ", ".join(outs))
        norms = [node_norm[i] for i in members if i in node_norm and i in ops]
        extra = {}
        if any(i in hl_nodes for i in members):
            extra.update(color=_RESIDUAL, penwidth="3", fontcolor=_RESIDUAL)
            kinds_used.add("residual")
        if root in members:
            extra["peripheries"] = "2"
        if norms:
            lines.append(f"max grad {max(norms):.2e}")
        kinds_used.add("module")
        parent_scope = ".".join(_parts(mod)[:-1])
        clusters.add(parent_scope, module_id[mod], _attrs("module", label=_label(lines),
                                                           **extra))

    clusters.emit(dot)

    # edges, merged when several map onto the same pair of drawn nodes
    merged = {}
    for p, c, slot in walk.edges:
        a, b = draw_id[p], draw_id[c]
        if a == b:
            continue
        e = merged.setdefault((a, b), {"count": 0, "width": None, "hl": False})
        e["count"] += 1
        w = widths.get((p, c, slot))
        if w is not None:
            e["width"] = w if e["width"] is None else max(e["width"], w)
        if (p, c) in hl_edges:
            e["hl"] = True
    for (a, b), e in merged.items():
        attrs = {}
        if e["width"] is not None:
            attrs["penwidth"] = f"{e['width']:g}"
        if e["count"] > 1 and depth is None:
            attrs["label"] = f"x{e['count']}"      # the same tensor used twice, as in x * x
        if e["hl"]:
            attrs.update(color=_RESIDUAL, penwidth=f"{max(e['width'] or 0, 3):g}")
        dot.edge(a, b, **attrs)
    if widths:
        kinds_used.add("grads")
    if legend:
        _legend(dot, kinds_used)
    return dot


def _consumer_scope(walk, consumers, i):
    cs = consumers.get(i, [])
    scopes = {walk.nodes[c]._ctx.scope for c in cs}
    return scopes.pop() if len(scopes) == 1 else ""


def _saved_nodes(t, new_id):
    """(id, attrs) for every array the node keeps for backward, in attribute order."""
    ctx = t._ctx
    inputs = [p.data for p in ctx.parents]
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
            out.append((new_id("s"), _attrs("saved", label=_label(lines))))
    return out


def to_dot_source(tensor, **kwargs):
    """The DOT text of `to_dot(tensor, **kwargs)` (what the golden files in tests/ hold)."""
    return to_dot(tensor, **kwargs).source


# --------------------------------------------------------------------------------------------
# rendering: system Graphviz, else graphviz-pure
# --------------------------------------------------------------------------------------------

class RendererNotFound(RuntimeError):
    """Neither Graphviz's `dot` nor the graphviz-pure program could be found."""


def _graphviz_pure_exe():
    """The `graphviz-pure` program from the PyPI wheel: on PATH, or next to this Python (a
    venv's bin/ when the venv is not activated, e.g. inside a Jupyter kernel)."""
    exe = shutil.which("graphviz-pure")
    if exe:
        return exe
    names = ["graphviz-pure.exe", "graphviz-pure"] if os.name == "nt" else ["graphviz-pure"]
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in dirs:
        for name in names:
            cand = os.path.join(d or "", name)
            if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
    return None


def find_renderer(renderer="auto"):
    """(kind, executable) of the renderer to use: "dot" (system Graphviz) first, then
    "graphviz-pure". `renderer` may force one of them."""
    if renderer not in ("auto", "dot", "graphviz-pure"):
        raise ValueError(f"renderer must be 'auto', 'dot' or 'graphviz-pure', got {renderer!r}")
    if renderer in ("auto", "dot"):
        exe = shutil.which("dot")
        if exe:
            return "dot", exe
    if renderer in ("auto", "graphviz-pure"):
        exe = _graphviz_pure_exe()
        if exe:
            return "graphviz-pure", exe
    wanted = "" if renderer == "auto" else f" ({renderer} was requested)"
    raise RendererNotFound(
        f"no Graphviz renderer found{wanted}: install the graphviz-pure wheel "
        f"(pip install graphviz-pure, no system package needed) or system Graphviz "
        f"(apt install graphviz / brew install graphviz). The DOT text itself needs neither: "
        f"use to_dot_source(...) or write a .dot/.gv file.")


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
    """Render to bytes in memory (what Jupyter's inline display uses)."""
    kind, exe = find_renderer(renderer)
    if kind == "graphviz-pure" and format in ("pdf", "ps", "eps"):
        raise RendererNotFound(
            f"graphviz-pure cannot write {format.upper()} yet (it writes svg, png, jpeg, dot, "
            f"json, plain); install system Graphviz for {format}, or render svg/png")
    proc = subprocess.run([exe, f"-T{format}"], input=_source(graph).encode("utf-8"),
                          capture_output=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed (exit {proc.returncode}): "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


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
