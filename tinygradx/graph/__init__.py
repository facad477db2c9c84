"""tinygradx.graph: a recorded graph as plain data, and what the tools read from it.

    g = graph.walk(loss)                       # the live graph behind a tensor, parents first
    graph.residual_path(loss)                  # the identity path from the loss to the embeddings
    graph.residual_summary(loss)               # "Pre-LN: 1 LayerNorm on the identity path ..."

`tinygradx.viz` draws a `Graph` built by `walk`; `tinygradx.trace` builds one op by op while a
forward pass runs (`Graph.record`, from its observe hook). Both ask the same questions of it:
what each leaf is (`leaf_kind`), whether an add is the skip add of a residual connection
(`skip_input`), and, on a live graph, how large the gradient along each edge is (`edge_grads`).

What every node computes, in the names of the seed paper, is `tinygradx.graph.dataflow`, built on
this module.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from ..autograd.backprop import BackwardFrame

__all__ = ["Graph", "walk", "leaf_kind", "within", "sublayer", "is_ancestor", "skip_input",
           "main_parent", "residual_indices", "residual_path", "residual_summary",
           "edge_grads", "has_grads", "backward_frame", "forward_path", "backward_title"]


# --------------------------------------------------------------------------------------------
# the graph
# --------------------------------------------------------------------------------------------

class Graph:
    """Nodes in a topological order (parents before children).

    nodes[i] is the Tensor, ops[i] its op's name (None for a leaf), scopes[i] the module path
    the op ran in ("" for a leaf); edges are (parent index, child index, input slot). The op
    and scope are kept apart from the tensor because a traced op may record no node (no_grad).
    """

    def __init__(self):
        self.nodes, self.ops, self.scopes, self.edges = [], [], [], []
        self.index = {}                  # id(tensor) -> node index
        self.ctxs = []                   # the op node (Function) that made each node, or None
        self._parents = []

    def add(self, t, op=None, scope="", parents=(), ctx=None):
        """Append a node (a leaf when `op` is None) and return its index."""
        i = len(self.nodes)
        self.index[id(t)] = i
        self.nodes.append(t)
        self.ctxs.append(ctx)
        self.ops.append(op)
        self.scopes.append(scope)
        self._parents.append(list(parents))
        self.edges += [(p, i, slot) for slot, p in enumerate(parents)]
        return i

    def record(self, ctx, inputs, out):
        """Add the op `ctx` that made `out` from `inputs`; inputs not seen yet become leaves."""
        ps = [self.index[id(t)] if id(t) in self.index else self.add(t) for t in inputs]
        return self.add(out, ctx.name(), ctx.scope, ps, ctx)

    def parents(self, i):
        return self._parents[i]

    def consumers(self):
        """{node index: [indices of the nodes that take it as an input]}."""
        out = {}
        for p, c, _ in self.edges:
            out.setdefault(p, []).append(c)
        return out

    def prune(self, root=None):
        """(the Graph of `root` and everything behind it, {old index: new index}); root defaults
        to the last node. Used to draw a traced graph from its output only."""
        root = len(self.nodes) - 1 if root is None else root
        keep, stack = {root}, [root]
        while stack:
            for p in self._parents[stack.pop()]:
                if p not in keep:
                    keep.add(p)
                    stack.append(p)
        g, new = Graph(), {}
        for i in sorted(keep):
            new[i] = g.add(self.nodes[i], self.ops[i], self.scopes[i],
                           [new[p] for p in self._parents[i]], self.ctxs[i])
        return g, new


def walk(root):
    """The Graph behind `root`, found from each tensor's `_ctx.parents`; `root` is the last node.

    A depth-first walk that visits parents in argument order, so the order (and every index)
    is the same on every run.
    """
    order, started = [], set()           # started: ids of tensors whose parents were pushed
    stack = [(root, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in started:             # pushed twice (two consumers): visit once
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
            stack += [(p, False) for p in reversed(ctx.parents) if id(p) not in started]
    g = Graph()
    for t in order:
        if t._ctx is None:
            g.add(t)
        else:
            g.add(t, t._ctx.name(), t._ctx.scope, [g.index[id(p)] for p in t._ctx.parents],
                  t._ctx)
    return g


def leaf_kind(t, names=()):
    """"param" (a Parameter, or a tensor named in `names`), "const" (a scalar operand such as
    the 0.5 of `x * 0.5`: one element, no gradient, no name) or "input"."""
    from ..nn import Parameter
    if isinstance(t, Parameter) or id(t) in names:
        return "param"
    if t._data.size <= 1 and not t.requires_grad and t.name is None:
        return "const"
    return "input"


# --------------------------------------------------------------------------------------------
# ops of a recorded backward pass (create_graph=True)
# --------------------------------------------------------------------------------------------

def backward_frame(ctx):
    """The BackwardFrame an op node was recorded in when a create_graph pass computed a
    gradient with it (backprop.py), or None for an op of a forward pass (or a leaf)."""
    frame = getattr(ctx, "frame", None)
    return frame if isinstance(frame, BackwardFrame) else None


def forward_path(frame):
    """The module path of the forward op whose backward `frame` holds (below nested
    backward frames: a third derivative's ops belong to the same module)."""
    while isinstance(frame, BackwardFrame):
        frame = frame.parent
    return frame.path if frame is not None else ""


def backward_title(frame):
    """A backward frame's label: "backward of linear · fc3" (the op, its node's module path),
    or "backward (sums of the walk)" for the sums and casts the walk adds itself."""
    if frame.of is None:
        return "backward (sums of the walk)"
    where = frame.parent.path if frame.parent is not None else ""
    return f"backward of {frame.of.name()}" + (f" · {where}" if where else "")


# --------------------------------------------------------------------------------------------
# residual paths
# --------------------------------------------------------------------------------------------

def _parts(scope):
    return scope.split(".") if scope else []


def within(scope, module):
    """Whether `scope` is `module` or below it (module "" contains everything)."""
    return module == "" or scope == module or scope.startswith(module + ".")


def sublayer(add_scope, scope):
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


def is_ancestor(g, p, q):
    """Whether node p is behind node q. Only nodes after p in the topological order can lie on a
    path from p to q, so the search stays inside the sublayer between them."""
    seen, stack = set(), [q]
    while stack:
        for j in g.parents(stack.pop()):
            if j == p:
                return True
            if j > p and j not in seen:
                seen.add(j)
                stack.append(j)
    return False


def skip_input(g, i):
    """For an add node i, the index of its skip (identity) input, or None.

    A skip add is `x + Sublayer(x)`: the other input q was produced inside a sublayer (a module
    below the add's common scope with q), and x comes from outside that sublayer yet feeds it
    (x is behind q). Found from scopes and edges alone, so models need no annotations.
    """
    if g.ops[i] != "add" or backward_frame(g.ctxs[i]) is not None:
        return None                      # a sum a backward pass recorded is no skip add
    ps = g.parents(i)
    if len(ps) != 2 or ps[0] == ps[1]:
        return None
    for skip, other in ((ps[0], ps[1]), (ps[1], ps[0])):
        if g.ops[other] is None:
            continue
        sub = sublayer(g.scopes[i], g.scopes[other])
        if sub is not None and not within(g.scopes[skip], sub) and is_ancestor(g, skip, other):
            return skip
    return None


def main_parent(g, i):
    """The input an op passes its value on from: the first op-made input of the output's shape
    (layer_norm's x, not its weight), else the first op-made input."""
    made = [j for j in g.parents(i) if g.ops[j] is not None]
    if not made:
        return None
    same = [j for j in made if g.nodes[j].shape == g.nodes[i].shape]
    return (same or made)[0]


def residual_indices(g):
    """The node indices of the identity path, from the last node (the root) back."""
    path = [len(g.nodes) - 1]
    while g.ops[path[-1]] is not None:
        nxt = skip_input(g, path[-1])
        if nxt is None:
            nxt = main_parent(g, path[-1])
        if nxt is None or nxt in path:
            break
        path.append(nxt)
    return path


def residual_path(root):
    """The identity path from `root` (usually the loss) back to the embeddings.

    From the root, repeatedly step to the skip input of a skip add (see `skip_input`), or,
    through any other op, to the input it passes its value on from; stop at an op whose inputs
    are all leaves (the embedding lookup). Returns the tensors on the path, root first; each
    op's name is `t._ctx.name()` and its module path `t._ctx.scope`.
    """
    g = walk(root)
    return [g.nodes[i] for i in residual_indices(g)]


def _short_list(items, n=4):
    if len(items) <= n:
        return ", ".join(items)
    return ", ".join(items[:2]) + ", ..., " + items[-1]


def _norm_kind(g, i):
    """"LayerNorm" for a layer_norm node, "RMSNorm" for an op run by an RMSNorm module (its
    few ops: x², mean, rsqrt, products), else None."""
    if g.ops[i] == "layer_norm":
        return "LayerNorm"
    module = getattr(getattr(g.ctxs[i], "frame", None), "module", None)
    return "RMSNorm" if g.ops[i] and type(module).__name__.endswith("RMSNorm") else None


def residual_summary(root, lang="en"):
    """One line: where the LayerNorms sit on the identity path from `root` to the embeddings,
    found on the graph itself (lang "zh": in Chinese).

    Pre-LN (LayerNorm inside each sublayer) leaves the path free of LayerNorms except a final
    one; Post-LN (LayerNorm after each residual add) puts one on the path per sublayer.
    """
    g = walk(root)
    idx = residual_indices(g)
    lns, skips, ln_after_skip, kinds, prev = [], 0, False, set(), None
    for i in idx:
        norm = _norm_kind(g, i)
        if norm and prev != g.scopes[i]:           # an RMSNorm is several ops: count it once
            lns.append(g.scopes[i] or "<top>")
            kinds.add(norm)
            ln_after_skip = ln_after_skip or skips > 0
        elif not norm and skip_input(g, i) is not None:
            skips += 1
        prev = g.scopes[i] if norm else None
    end = idx[-1]
    zh = lang == "zh"
    end_name = f"{g.ops[end]} ({g.scopes[end] or '<top>'})" if g.ops[end] else \
        ("叶子节点" if zh else "a leaf")
    word = kinds.pop() if len(kinds) == 1 else "LayerNorm"
    if skips == 0:
        if zh:
            return f"没有找到残差连接：从输出到 {end_name} 的路径经过 {len(lns)} 个 {word}"
        return (f"no residual connection found: the path from the output to {end_name} "
                f"crosses {len(lns)} {word}(s)")
    kind = "Post-LN" if ln_after_skip else "Pre-LN"
    if zh:
        where = f"（{_short_list(lns)}）" if lns else ""
        return (f"{kind}：恒等路径上有 {len(lns)} 个 {word}{where}；输出与 {end_name} 之间"
                f"有 {skips} 次残差相加")
    ln_word = word if len(lns) == 1 else word + "s"
    where = f" ({_short_list(lns)})" if lns else ""
    return (f"{kind}: {len(lns)} {ln_word} on the identity path{where}; {skips} skip adds "
            f"between the output and {end_name}")


# --------------------------------------------------------------------------------------------
# gradients along edges
# --------------------------------------------------------------------------------------------

def has_grads(g):
    """Whether a backward already ran over this graph (one of its leaves has a .grad)."""
    return any(op is None and t.grad is not None for t, op in zip(g.nodes, g.ops, strict=True))


def edge_grads(root, g):
    """({node index: ||dL/d node||}, {(parent, child, slot): ||gradient along that edge||}).

    The training walk itself (`autograd.run_backward`) over the retained graph `g = walk(root)`,
    with a store that writes nothing and an edge observer: each norm is of the very array
    training hands on (unbroadcast, cast to the input's dtype, a getitem's slice placed in its
    input's shape, after the tensor's hooks, which run again as on any backward), and no
    `.grad` changes.
    """
    if root._data.size != 1:
        raise ValueError(f"viz: gradients can be shown for a scalar output only; this one has "
                         f"shape {root.shape}")
    if not root.requires_grad:                  # no graph behind it: only the seed
        return {len(g.nodes) - 1: 1.0}, {}
    made_by = {id(t._ctx): i for i, t in enumerate(g.nodes) if t._ctx is not None}
    node_norm, edge_norm = {}, {}

    def store(t, grad, owned):
        if id(t) in g.index:
            node_norm[g.index[id(t)]] = float(np.linalg.norm(grad))

    def on_edge(ctx, slot, parent, grad):
        if id(ctx) in made_by and id(parent) in g.index:
            edge_norm[(g.index[id(parent)], made_by[id(ctx)], slot)] = float(np.linalg.norm(grad))

    seed = np.ones(root._data.shape, dtype=root._data.dtype)
    autograd.run_backward([root], [seed], retain_graph=True, store=store, on_edge=on_edge)
    return node_norm, edge_norm
