"""tinygradx.trace: record every op of a forward pass with its module path, formula and shapes.

    with tgx.trace(dims={"B": 2, "n": 5, "d_model": 12, "h": 3, "d_k": 4}) as t:
        out, _ = mha(x, x, x)
    print(t.table())             # or t.table(fmt="markdown", scope="encoder.layers.0")

prints one row per op, the formula it computes and its shapes in named dimensions:

    linear   w_q   Q = X·W^Q               (B, n, d_model)·(d_model, h·d_k) → (B, n, h·d_k)
    softmax        A = softmax(QKᵀ/√d_k)   (B, h, n, n) → (B, h, n, n)
    reshape        Concat(head_1..head_h)  (B, n, h, d_v) → (B, n, h·d_v)

Formulas come from a table keyed by (module-name pattern, op) plus what each input is (Q, Kᵀ, A,
...), followed from op to op, so the models need no annotations. A size is written with its name
when exactly one dimension has that size; when two share a size (say h = d_k = 4) both are
written as numbers, since a name could then be the wrong one. Linear weights are shown as the
paper's W (in, out), the transpose of the stored (out, in) array.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..autograd import OpError, observe
from .dataflow import DataFlow
from .words import translate
from . import Graph

__all__ = ["trace", "Trace", "Row"]


@dataclass
class Row:
    """One op of the trace: where it ran, what it computes and its shapes."""
    index: int
    op: str
    scope: str
    formula: str
    in_shapes: list
    out_shape: tuple
    sources: list            # per input: the Row index that produced it, or None (a leaf)
    leaf_kinds: list         # per input: "op" | "param" | "const" | "input"
    seconds: float
    symbol: str = ""         # what the output is (Q, Kᵀ, A, ...) for the rows that follow
    hint: str | None = None  # a name for the output's last dim that no single size tells
    show: list = field(default_factory=list)   # which inputs appear in the shapes column
    node: int | None = None  # the op's node in the trace's Graph (`Trace.graph`)
    name: str = ""           # the seed name of the output (Q, Score, A, Z, MHA, Y_attn, Y_next, H)


class Trace:
    """Collects Rows while active; `table()` formats them. Use through `tgx.trace(...)`.

    The formulas and names come from `dataflow.DataFlow`, the same description `viz` labels its
    nodes with: each row is one op node of the trace's Graph (`Row.node`).
    """

    def __init__(self, dims=None, lang="en", graph=False):
        self.user_dims = dict(dims or {})
        self.lang = lang
        self.keep_graph = graph
        self.rows = []
        self.graph = Graph()     # the ops seen while active (keeps their tensors alive)
        self.flow = DataFlow(self.graph, self.user_dims)
        self._row_of = {}        # node index -> row index
        self._cm = None

    # -- recording ---------------------------------------------------------------------------
    def __enter__(self):
        self._cm = observe(self._record)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self._cm = None
        if isinstance(exc[1], OpError) and exc[1].args:
            self._add_named_dims(exc[1])
        self._finish()
        if not self.keep_graph:  # keep the structure, let go of the tensors
            n = len(self.graph.nodes)
            self.graph.nodes, self.graph.ctxs, self.graph.index = [None] * n, [None] * n, {}
        return False

    def _record(self, ctx, inputs, out, seconds):
        node = self.graph.record(ctx, inputs, out)
        self.flow.update()
        f = self.flow.flows[node]
        sources = [self._row_of.get(p) for p in self.graph.parents(node)]
        row = Row(len(self.rows), f.op, f.scope, f.formula, list(f.in_shapes), f.out_shape,
                  sources, list(f.kinds), seconds, f.symbol, f.hint, list(f.show), node)
        self._row_of[node] = row.index
        self.rows.append(row)

    def _finish(self):
        """The seed names and refined formulas, which need the whole graph (DataFlow.name_all)."""
        self.flow.name_all()
        for r in self.rows:
            f = self.flow.flows[r.node]
            r.name, r.formula = f.name, f.formula
            r.symbol, r.hint, r.show = f.symbol, f.hint, list(f.show)   # if described again

    def _add_named_dims(self, err):
        """A shape error raised while tracing: each shape it quotes gets its named dims, as far
        as the trace knows them ("(2, 5, 32) is (B, S, d_model)"), so the message speaks the
        table's language. Best effort: the original message stays when nothing can be named."""
        try:
            name_shape = self.flow.namer()
            named = []
            for text in dict.fromkeys(re.findall(r"\((?:\d+, )*\d+,?\)", str(err.args[0]))):
                shape = tuple(int(x) for x in re.findall(r"\d+", text))
                name = name_shape(shape)
                if re.search(r"[A-Za-z_]", name):
                    named.append(f"{text} is {name}")
            if named:
                err.args = (f"{err.args[0]} [named dims: {'; '.join(named)}]",) + err.args[1:]
        except Exception:                      # naming must never hide the error itself
            pass

    # -- dimension names ---------------------------------------------------------------------
    def dims(self):
        """{name: size}: the names given to trace(dims=...) plus the ones guessed from the ops."""
        return self.flow.dims()

    # -- output ------------------------------------------------------------------------------
    def table(self, fmt="text", scope=None, lang=None, nodes=False):
        """The trace as a text, Markdown or HTML table; `scope` keeps the ops of one module only.

        lang="zh" prints the headers and the formulas' words in Chinese; nodes=True adds the
        column of each row's node in `Trace.graph`. fmt="html" is one self-contained page (see
        `tinygradx.page`): the table, and the graph beside it when the trace kept its graph
        (`tgx.trace(graph=True)`).
        """
        if fmt not in ("text", "markdown", "html"):
            raise ValueError(f"table: fmt must be 'text', 'markdown' or 'html', got {fmt!r}")
        lang = self.lang if lang is None else lang
        if self._cm is not None:
            self._finish()
        if fmt == "html":
            from .page import trace_page
            return trace_page(self, scope=scope, lang=lang)
        name_shape = self.flow.namer()
        rows = [r for r in self.rows
                if scope is None or r.scope == scope or r.scope.startswith(scope + ".")]
        head = ["#"] + (["node"] if nodes else []) + ["module", "op", "formula", "shapes"]
        head = [translate(h, lang) for h in head]
        body = [[str(r.index)] + ([f"n{r.node}"] if nodes else []) +
                [r.scope or translate("<top>", lang), r.op, translate(r.formula, lang),
                 self.flow.shapes(r.node, name_shape)] for r in rows]
        dims = ", ".join(f"{k}={v}" for k, v in self.dims().items())
        dims = f"{translate('dims', lang)}: {dims}"
        if fmt == "markdown":
            lines = [dims, "", "| " + " | ".join(head) + " |",
                     "|" + "|".join("---" for _ in head) + "|"]
            for cells in body:
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            return "\n".join(lines)
        widths = [max(_width(c[k]) for c in [head] + body) for k in range(len(head))]
        lines = [dims, "  ".join(_ljust(h, w) for h, w in zip(head, widths, strict=True)).rstrip()]
        for cells in body:
            cols = zip(cells, widths, strict=True)
            lines.append("  ".join(_ljust(c, w) for c, w in cols).rstrip())
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def _width(text):
    """Cells a string takes in a terminal: East Asian Wide and Fullwidth characters (CJK
    ideographs, kana, Hangul, fullwidth punctuation such as '：') take two, combining marks none
    (they sit on the character before). Ambiguous ones (·, →, √, Greek) take one, as in
    terminals outside East Asian locales."""
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _ljust(text, width):
    return text + " " * (width - _width(text))


def trace(dims=None, lang="en", graph=False):
    """Record the ops run inside the `with` block: `with tgx.trace() as t: model(x)`.

    Parameters
    ----------
    dims : dict name -> size, optional
        Names for sizes (B, n or T, d_model, h, d_k, d_ff, V, m). Missing ones are guessed
        from the ops (the embedding's output gives B, n, d_model; the head split gives h, d_k).
    lang : "en" | "zh"
        The language of the table's headers and the words of its formulas.
    graph : bool
        Keep the recorded Graph (`t.graph`, with its tensors) after the block, so that
        `t.table(fmt="html")` can draw it beside the table.
    """
    return Trace(dims, lang, graph)
