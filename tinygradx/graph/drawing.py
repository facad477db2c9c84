"""What the graph picture of `viz.to_dot` says and where each part sits: the names of leaves
(from a Module or a dict of parameters), which ops collapse into one box per module (`depth`,
`expand`), which belong to a recorded backward's frame, and `Drawing`, which emits the nodes,
the module boxes and the edges into a graphviz.Digraph. `viz.to_dot` sets the drawing up (the
data flow, the gradient norms, the highlight) and owns the Digraph; the legend and every style
are in dotstyle.py.
"""
from __future__ import annotations

import itertools

import numpy as np

from .words import say, translate
from .dotstyle import HIGHLIGHT, RESIDUAL, Clusters, attrs, label, parts
from . import backward_frame, backward_title, forward_path, leaf_kind, within

__all__ = ["Drawing"]


def _fmt_shape(shape, lang="en"):
    return translate("scalar", lang) if len(shape) == 0 else \
        "(" + ", ".join(str(s) for s in shape) + ")"


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
# which box holds each node: a collapsed module, a recorded backward's frame, or none
# --------------------------------------------------------------------------------------------

def _value_line(t, lang="en"):
    """"mean 0.012 std 0.98" of a tensor's values (a scalar: its value)."""
    a = np.asarray(t._data, dtype=np.float64) if t._data.dtype.kind in "fiub" else None
    if a is None or a.size == 0:
        return None
    if a.size == 1:
        return f"= {float(a.reshape(-1)[0]):.4g}"
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return translate("all inf/nan", lang)
    skipped = a.size - finite.size           # a mask's −inf: counted, not averaged
    return say("mean {mean} std {std}", lang, mean=f"{finite.mean():.3g}",
               std=f"{finite.std():.3g}") + \
        (say(" ({k} of {n} ±inf)", lang, k=skipped, n=a.size) if skipped else "")


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


# --------------------------------------------------------------------------------------------
# the drawing: nodes, module boxes and edges, emitted into the Digraph
# --------------------------------------------------------------------------------------------

class Drawing:
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
            if self.values and (kind != "const") and _value_line(t, self.lang):
                lines.append(_value_line(t, self.lang))
            if i == self.root:
                extra["peripheries"] = "2"
            if i in self.hl_nodes:
                extra.update(HIGHLIGHT)
                self.kinds_used.add("residual")
            self.kinds_used.add(kind)
            self._place(i, scope, self.draw_id[i], attrs(kind, label=label(lines), **extra))
            if show_saved and t._ctx is not None:
                for node_id, a in _saved_nodes(t, self.new_id, self.lang):
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
            name = translate(self.flow.flows[i].name, self.lang)
            if self.flow.flows[i].symbol.endswith(" + M"):
                kind = "op"                      # the mask's add is no residual connection
            named = self.flow.named_shape(i, self.name_shape) if t.shape else \
                _fmt_shape((), self.lang)
            shape = _fmt_shape(t.shape, self.lang)
            # "Q (B, T, h·d_k)" over "(2, 5, 24)"; one line of each when no dim has a name
            lines = [name or op, shape] if named == shape else [f"{name or op} {named}", shape]
            where = " · ".join(([op] if name else []) + ([scope] if scope else []))
            return kind, lines + ([where] if where else []), scope
        kind = leaf_kind(t, self.names)
        if kind == "param":
            lines = [self.names.get(id(t), t.name or translate("parameter", self.lang)),
                     _fmt_shape(t.shape, self.lang)]
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
        lines = [self.names.get(id(t)) or t.name or translate(self._role(i) or word, self.lang),
                 _fmt_shape(t.shape, self.lang)]
        if t.requires_grad:
            lines.append(translate("requires grad", self.lang))
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
                "name": translate(f.name, self.lang), "formula": translate(f.formula, self.lang),
                "shape": _fmt_shape(g.nodes[i].shape, self.lang),
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
                shape = _fmt_shape(self.g.nodes[i].shape, self.lang)
                if leaves and shape not in outs:
                    outs.append(shape)
            exits = [i for i in ops if i == self.root or any(self.owner[c] != mod
                                                              for c in self.consumers.get(i, []))]
            names = []
            for i in exits:
                f = self.flow.flows[i]
                text = f"{translate(f.name, self.lang)} " \
                       f"{self.flow.named_shape(i, self.name_shape)}" if f.name else ""
                if text and text not in names:
                    names.append(text)
            lines = [mod] + ([self.mtypes[mod]] if mod in self.mtypes else [])
            lines.append(say("{n} ops", self.lang, n=len(ops)) if len(ops) != 1 else
                         translate("1 op", self.lang))
            lines += names
            if outs:
                lines.append(say("out {shapes}", self.lang, shapes=", ".join(outs)))
            norms = [self.node_norm[i] for i in ops if i in self.node_norm]
            extra = {"id": self.module_id[mod]} if self.ids else {}
            last = exits[-1] if exits else (ops[-1] if ops else members[-1])
            info = self._info(last, members)
            info.update(scope=mod, op=say("{n} ops", self.lang, n=len(ops)), module=True)
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
                attrs["label"] = say("x{n}", self.lang, n=e["count"])   # x * x: x twice
            if e["hl"]:
                attrs.update(color=RESIDUAL, penwidth=f"{max(e['width'] or 0, 3):g}")
            dot.edge(a, b, **attrs)
        if widths:
            self.kinds_used.add("grads")


def _consumer_scope(g, consumers, i):
    scopes = {g.scopes[c] for c in consumers.get(i, [])}
    return scopes.pop() if len(scopes) == 1 else ""


def _saved_nodes(t, new_id, lang="en"):
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
            lines = [f"{name} {_fmt_shape(arr.shape, lang)}"]
            same = [j for j, x in enumerate(inputs) if x is arr]
            if same:
                lines.append(say("= input {k}", lang, k=same[0]))
            out.append((new_id("s"), attrs("saved", label=label(lines))))
    return out
