"""tinygradx.graph.dotstyle: how a drawn graph looks. The node styles, the legend, and the frames
(`cluster_*` subgraphs): one per module path, and one for the ops a create_graph backward pass
recorded, with a frame inside it per node whose backward they compute ("backward of linear ·
fc3"). `tinygradx.viz` decides what to draw; this module dresses it.
"""
from __future__ import annotations

from .words import translate
from . import within

try:
    from graphviz import nohtml
except ImportError:                   # to_dot needs graphviz anyway; keep this module importable
    def nohtml(text):
        return text

__all__ = ["STYLE", "RESIDUAL", "HIGHLIGHT", "EDGE", "BACKWARD", "parts", "label", "dot_text",
           "attrs", "Clusters", "legend"]

# node styles, one place (viz's docstring is their legend)
STYLE = {
    "op": dict(shape="box", style="rounded,filled", fillcolor="#eeeeee"),
    "add": dict(shape="box", style="rounded,filled", fillcolor="#d4efd4"),
    "layer_norm": dict(shape="box", style="rounded,filled", fillcolor="#fff2a8"),
    "param": dict(shape="ellipse", style="filled", fillcolor="#cfe2ff"),
    "input": dict(shape="ellipse", style="filled", fillcolor="#ffffff"),
    "const": dict(shape="plaintext", fontcolor="#777777", fontsize="9"),
    "saved": dict(shape="box", style="dashed,filled", fillcolor="#fde0c2", fontsize="9"),
    "module": dict(shape="box3d", style="filled", fillcolor="#e8dcf5"),
    # an op recorded by a create_graph backward pass: it computes a gradient
    "backward": dict(shape="box", style="rounded,filled", fillcolor="#f9dcea", color="#a83279"),
    "backward_module": dict(shape="box3d", style="filled", fillcolor="#f9dcea",
                            color="#a83279"),
}
RESIDUAL = "#d62728"
HIGHLIGHT = dict(color=RESIDUAL, penwidth="3", fontcolor=RESIDUAL)
EDGE = "#555555"
BACKWARD = "#a83279"


# the words of the recorded-backward frames in other languages (the rest is dataflow.STRINGS)
BACKWARD_STRINGS = {"zh": {
    "recorded backward (create_graph=True)": "记录下的反向传播 (create_graph=True)",
    "op of a recorded backward": "记录下的反向传播中的算子",
    "backward (sums of the walk)": "反向传播 (遍历自身的求和)",
    "backward of ": "反向传播：",
}}


def tr(text, lang="en"):
    """`dataflow.translate`, after the phrases of BACKWARD_STRINGS."""
    for en, local in BACKWARD_STRINGS.get(lang, {}).items():
        text = text.replace(en, local)
    return translate(text, lang)


def parts(scope):
    return scope.split(".") if scope else []


def dot_text(text):
    """`text` as a DOT string shows it, whatever it holds (a user's module name included):
    backslashes doubled (no \\N, \\l or a closing quote escaped away), quotes escaped, `&` as
    `&amp;` (Graphviz reads entities in labels: `&lt;` would show as `<`), a
    line break as DOT's \\n, other control characters as spaces; and never an HTML-like
    label (`<b>bold</b>` is text, not markup). graphviz's quoting adds the quotes."""
    out = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    out = out.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    out = "".join(c if c >= " " or c == "\t" else " " for c in out)
    return nohtml(out)


def label(lines):
    # DOT's own \n escape (a centred line break) keeps each node on one line of the source
    return nohtml("\\n".join(dot_text(line) for line in lines))


def attrs(kind, **extra):
    a = dict(STYLE[kind])
    a.update(extra)
    return a


class Clusters:
    """Nested `cluster_*` subgraphs by module path; a node goes into the deepest frame of its
    path. Frames holding a single node are dropped (its label already names the module).

    The ops of a recorded backward pass (`add_backward`) go into one frame of their own,
    "recorded backward", which holds a frame per node whose backward they compute (again only
    when it holds more than one node), so the forward's frames are those of the forward alone.
    """

    def __init__(self):
        self.members = {}            # module path -> [(node id, attrs)]
        self.backward = {}           # frame key (None: the outer frame) -> [(node id, attrs)]
        self.titles = {}             # frame key -> its label

    def add(self, scope, node_id, attrs):
        self.members.setdefault(scope, []).append((node_id, attrs))

    def add_backward(self, key, title, node_id, attrs):
        self.backward.setdefault(key, []).append((node_id, attrs))
        self.titles.setdefault(key, title)

    def emit(self, dot, lang="en"):
        self._emit_forward(dot)
        if self.backward:
            self._emit_backward(dot, lang)

    def _emit_forward(self, dot):
        count = {}
        for scope, items in self.members.items():
            for k in range(len(parts(scope)) + 1):
                prefix = ".".join(parts(scope)[:k])
                count[prefix] = count.get(prefix, 0) + len(items)
        kept = {s for s, n in count.items() if s and n > 1}

        def frame_of(scope):
            ps = parts(scope)
            for k in range(len(ps), 0, -1):
                if ".".join(ps[:k]) in kept:
                    return ".".join(ps[:k])
            return ""

        placed = {}
        for scope, items in self.members.items():
            placed.setdefault(frame_of(scope), []).extend(items)
        children = {}
        for s in sorted(kept, key=lambda s: (len(parts(s)), s)):
            parent = frame_of(".".join(parts(s)[:-1]))
            children.setdefault(parent, []).append(s)
        order = {s: k for k, s in enumerate(self.members)}

        def first_seen(s):
            return min(order[m] for m in self.members if within(m, s))

        def fill(graph, frame):
            for node_id, a in placed.get(frame, []):
                graph.node(node_id, **a)
            for child in sorted(children.get(frame, []), key=first_seen):
                with graph.subgraph(name=dot_text("cluster_" + child)) as sub:
                    sub.attr(label=dot_text(child), style="dashed", color="#999999", fontsize="10",
                             fontcolor="#555555")
                    fill(sub, child)

        fill(dot, "")

    def _emit_backward(self, dot, lang):
        with dot.subgraph(name="cluster_backward") as outer:
            outer.attr(label=tr("recorded backward (create_graph=True)", lang),
                       style="rounded,dashed", color=BACKWARD, fontcolor=BACKWARD,
                       fontsize="11", penwidth="1.5")
            frames = 0
            for key, items in self.backward.items():
                if key is None or len(items) == 1:
                    for node_id, a in items:
                        outer.node(node_id, **a)
                    continue
                with outer.subgraph(name=f"cluster_backward_{frames}") as sub:
                    sub.attr(label=dot_text(tr(self.titles[key], lang)), style="dashed",
                             color="#d9a0bd", fontsize="10", fontcolor=BACKWARD)
                    for node_id, a in items:
                        sub.node(node_id, **a)
                frames += 1


def legend(dot, kinds, lang="en"):
    def tr_(text):
        return tr(text, lang)

    with dot.subgraph(name="cluster_legend") as lg:
        lg.attr(label=tr_("legend"), style="solid", color="#bbbbbb", fontsize="10")
        samples = [("op", "\n".join(tr_(w) for w in ("name (named shape)", "(shape)",
                                                       "op · module"))), ("add", tr_("add")),
                   ("layer_norm", tr_("layer_norm")), ("param", tr_("parameter")),
                   ("input", tr_("input")), ("const", tr_("constant")),
                   ("saved", tr_("saved for backward")), ("module", tr_("module (collapsed)")),
                   ("backward", tr_("op of a recorded backward"))]
        prev = None
        for kind, text in samples:
            if kind not in kinds:
                continue
            name = "legend_" + kind
            lg.node(name, label(text.split("\n")), **STYLE[kind])
            if prev is not None:
                lg.edge(prev, name, style="invis")     # stack the samples in one column
            prev = name
        if "residual" in kinds:
            lg.node("legend_residual", tr_("residual path"), shape="box", style="rounded,bold",
                    color=RESIDUAL, fontcolor=RESIDUAL, penwidth="3")
            if prev is not None:
                lg.edge(prev, "legend_residual", style="invis")
            prev = "legend_residual"
        if "grads" in kinds:
            lg.node("legend_grads", tr_("edge width ~ log10 ||grad||"), shape="plaintext",
                    fontsize="9")
            if prev is not None:
                lg.edge(prev, "legend_grads", style="invis")
