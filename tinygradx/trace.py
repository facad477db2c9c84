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

import fnmatch
from dataclasses import dataclass, field

from .autograd import observe
from .graph import Graph, leaf_kind, skip_input

__all__ = ["trace", "Trace", "Row"]

# aliases of one role: a user who says "T" (nanoGPT) gets no guessed "n" as well
_ROLES = {"B": ("B",), "n": ("n", "T"), "m": ("m", "S"), "d_model": ("d_model", "C"),
          "h": ("h", "nh"), "d_k": ("d_k", "hs", "d_v"), "d_ff": ("d_ff",), "V": ("V",)}

# linear layers by module name -> (symbol of the output, formula, last-dim hint of the output)
_LINEARS = [
    ("w_q", "Q", "Q = X·W^Q", "h·d_k"),
    ("w_k", "K", "K = X·W^K", "h·d_k"),
    ("w_v", "V", "V = X·W^V", "h·d_v"),
    ("c_attn", "QKV", "[Q K V] = X·[W^Q W^K W^V]", "3·d_model"),
    ("w_o", "MultiHead", "MultiHead = Concat(head_1..head_h)·W^O", None),
    ("attn.c_proj", "MultiHead", "MultiHead = Concat(head_1..head_h)·W^O", None),
    ("c_fc", "H", "H = X·W_1 + b_1", None),
    ("w_1", "H", "H = X·W_1 + b_1", None),
    ("mlp.c_proj", "FFN", "FFN(X) = H·W_2 + b_2", None),
    ("w_2", "FFN", "FFN(X) = H·W_2 + b_2", None),
    ("lm_head", "logits", "logits = X·W_vocab", None),
    ("generator*", "logits", "logits = X·W_vocab", None),
]
_POS_EMBED = ("wpe", "pos*", "*position*")


def _match(scope, pattern):
    """`pattern` matches the end of a module path: "w_q" matches "layers.0.self_attn.w_q"."""
    return fnmatch.fnmatchcase(scope, pattern) or fnmatch.fnmatchcase(scope, "*." + pattern)


def _in_attention(scope):
    last = scope.rsplit(".", 1)[-1]
    return "attn" in last or "attention" in last


def _scaled_query(row, x):
    return "const" in row.leaf_kinds and x in ("Q", "QKᵀ")


def _mask_add(row, x):
    return _in_attention(row.scope) and "op" not in row.leaf_kinds[1:]


def _position_rows(row, x):
    return row.leaf_kinds[:1] == ["input"] and any(_match(row.scope, p) for p in _POS_EMBED)


# op -> [(test(row, x) or None for always, Trace method)]: the first rule whose test passes
# fills the row; x is the symbol of the first input
_RULES = {
    "linear": [(None, "_linear")],
    "embedding": [(None, "_embedding")],
    "getitem": [(lambda row, x: x == "QKV", "_split_qkv"), (_position_rows, "_position_table")],
    "reshape": [(None, "_movement")],
    "permute": [(None, "_movement")],
    "matmul": [(None, "_matmul")],
    "mul": [(_scaled_query, "_scale"), (lambda row, x: x == "E", "_scaled_embedding")],
    "div": [(_scaled_query, "_scale")],
    "masked_fill": [(None, "_mask")],
    "add": [(_mask_add, "_mask"), (None, "_add")],
    "attention": [(None, "_attention")],
}

# op -> x -> (symbol or None to keep x, formula): ops whose formula needs only x
_SIMPLE = {
    "softmax": lambda x: ("A", f"A = softmax({x})" if x else "softmax(x)"),
    "dropout": lambda x: (None, f"dropout({x or 'x'})"),
    "layer_norm": lambda x: ("LN(x)", "LayerNorm(x)"),
    "gelu": lambda x: (None, f"GELU({x or 'H'})"),
    "relu": lambda x: (None, f"ReLU({x or 'H'})"),
    "cross_entropy": lambda x: ("loss", "loss = CE(logits, y)"),
    "log_softmax": lambda x: (None, "log softmax(logits)"),
}


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
    node: int | None = None  # the op's node in the trace's Graph, while recording


class Trace:
    """Collects Rows while active; `table()` formats them. Use through `tgx.trace(...)`."""

    def __init__(self, dims=None):
        self.user_dims = dict(dims or {})
        self.rows = []
        self._graph = Graph()    # the ops seen while active (keeps their tensors alive)
        self._producer = {}      # id(output tensor) -> row index
        self._getitems = {}      # producer row -> how many getitem consumers so far
        self._cm = None

    # -- recording ---------------------------------------------------------------------------
    def __enter__(self):
        self._cm = observe(self._record)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self._cm = None
        self._graph, self._producer = Graph(), {}
        return False

    def _record(self, ctx, inputs, out, seconds):
        sources = [self._producer.get(id(t)) for t in inputs]
        kinds = ["op" if src is not None else leaf_kind(t) for t, src in zip(inputs, sources)]
        row = Row(len(self.rows), ctx.name(), ctx.scope, "", [tuple(t.shape) for t in inputs],
                  tuple(out.shape), sources, kinds, seconds)
        row.node = self._graph.record(ctx, inputs, out)
        self._describe(row)
        self.rows.append(row)
        self._producer[id(out)] = row.index

    # -- formulas ----------------------------------------------------------------------------
    def _sym(self, row, k):
        src = row.sources[k] if k < len(row.sources) else None
        return self.rows[src].symbol if src is not None else ""

    def _describe(self, row):
        """Fill row.formula, symbol, hint and show from the op, its module and its inputs: the
        first rule of `_RULES` for the op whose test passes, else `_SIMPLE`, else the op name."""
        syms = [self._sym(row, k) for k in range(len(row.sources))]
        x = syms[0] if syms else ""
        row.show = [k for k, kind in enumerate(row.leaf_kinds) if kind in ("op", "input")]
        row.symbol = x
        for test, method in _RULES.get(row.op, ()):
            if test is None or test(row, x):
                getattr(self, method)(row, x, syms)
                return
        if row.op in _SIMPLE:
            symbol, row.formula = _SIMPLE[row.op](x)
            row.symbol = x if symbol is None else symbol
            return
        row.formula = row.op

    def _linear(self, row, x, syms):
        row.show = [0, 1]
        for pat, sym, formula, hint in _LINEARS:
            if _match(row.scope, pat):
                row.symbol, row.formula, row.hint = sym, formula, hint
                return
        row.symbol, row.formula = "Y", "Y = X·Wᵀ + b"

    def _embedding(self, row, x, syms):
        row.show = [0]
        if any(_match(row.scope, p) for p in _POS_EMBED):
            row.symbol, row.formula = "P", "P[pos]  (position embedding)"
        else:
            row.symbol, row.formula = "E", "E[ids]  (token embedding)"

    def _split_qkv(self, row, x, syms):
        k = self._getitems.get(row.sources[0], 0)
        self._getitems[row.sources[0]] = k + 1
        row.symbol = "QKV"[k] if k < 3 else "QKV"
        row.hint = "h·d_v" if row.symbol == "V" else "h·d_k"
        row.formula = f"{row.symbol} = split([Q K V])"

    def _scale(self, row, x, syms):
        row.symbol = row.formula = x + "/√d_k"

    def _mask(self, row, x, syms):
        row.symbol = (x or "S") + " + M"
        row.formula = f"{row.symbol}  (mask)"

    def _attention(self, row, x, syms):
        """F.attention: the whole formula as one node (F.packed_attention: [Q K V] in, heads
        merged)."""
        if len(row.sources) == 1:
            row.symbol, row.hint = "Concat", "h·d_v"
            row.formula = "Concat(head_i = softmax(QᵢKᵢᵀ/√d_k + M)·Vᵢ)"
        else:
            row.symbol, row.hint = "Z", "d_v"
            row.formula = "head_i = softmax(QKᵀ/√d_k + M)·V"

    def _scaled_embedding(self, row, x, syms):
        row.symbol, row.formula = "E·√d", "E[ids]·√d_model"

    def _position_table(self, row, x, syms):
        row.symbol, row.formula = "PE", "PE[pos]  (rows of the sinusoid table)"

    def _movement(self, row, x, syms):
        """reshape/permute: the head split and merge of attention, or a plain view."""
        inp, out = row.in_shapes[0], row.out_shape
        if x in ("Q", "K", "V"):
            row.hint = "d_v" if x == "V" else "d_k"
        if x in ("Q", "K", "V") and row.op == "reshape" and len(out) == len(inp) + 1:
            row.formula = f"split {x} into h heads"
        elif x in ("Q", "K", "V") and row.op == "permute" and len(out) == 4 \
                and out[-2:] == inp[-2:][::-1] and x == "K":
            row.symbol, row.formula, row.hint = "Kᵀ", "Kᵀ", None
        elif x in ("Q", "K", "V") and row.op == "permute":
            row.formula = f"{x}_i per head"
        elif x == "Z" and row.op == "permute":
            row.formula, row.hint = "heads side by side", "d_v"
        elif x == "Z" and row.op == "reshape" and len(out) == len(inp) - 1:
            row.symbol, row.hint = "Concat", "h·d_v"
            row.formula = "Concat(head_1..head_h)"
        else:
            row.formula = row.op

    def _matmul(self, row, x, syms):
        a, b = (syms + ["", ""])[:2]
        if a.startswith("Q") and b == "Kᵀ":
            scaled = "/√d_k" if a.endswith("/√d_k") else ""
            row.symbol = "QKᵀ" + scaled
            row.formula = row.symbol
        elif a == "A" and b == "V":
            row.symbol, row.formula, row.hint = "Z", "head_i = A·V", "d_v"
        else:
            row.formula = "matmul"

    def _add(self, row, x, syms):
        """x + Sublayer(x) for the skip add of a residual connection (`graph.skip_input`); the
        embedding sums; else plain add."""
        row.symbol, row.formula = "x", "add"
        if len(row.sources) != 2 or "const" in row.leaf_kinds:
            return
        if syms[0].startswith("E") and syms[1] in ("P", "PE"):
            scaled = "·√d_model" if syms[0] == "E·√d" else ""
            pos = "P[pos]" if syms[1] == "P" else "PE"
            row.formula = f"X = E[ids]{scaled} + {pos}"
        elif skip_input(self._graph, row.node) is not None:
            row.formula = "x + Sublayer(x)  (residual)"

    # -- dimension names ---------------------------------------------------------------------
    def dims(self):
        """{name: size}: the names given to trace(dims=...) plus the ones guessed from the ops."""
        dims = dict(self.user_dims)

        def guess(role, size):
            if size is None or any(a in dims for a in _ROLES[role]):
                return
            dims[role] = int(size)

        for r in self.rows:
            if r.op == "embedding" and len(r.out_shape) == 3 and not r.formula.startswith("P"):
                guess("B", r.out_shape[0])
                guess("n", r.out_shape[1])
                guess("d_model", r.out_shape[2])
                guess("V", r.in_shapes[0][0])
            elif r.op == "linear" and len(r.in_shapes[0]) == 3 and r.symbol in ("Q", "QKV"):
                guess("B", r.in_shapes[0][0])
                guess("n", r.in_shapes[0][1])
                guess("d_model", r.in_shapes[0][2])
            elif r.op == "reshape" and r.formula.startswith("split") and len(r.out_shape) == 4:
                guess("h", r.out_shape[2])
                guess("d_k", r.out_shape[3])
            elif r.op == "linear" and r.symbol == "H":
                guess("d_ff", r.out_shape[-1])
            elif r.op == "linear" and r.symbol == "logits":
                guess("V", r.out_shape[-1])
            elif r.op == "softmax" and r.symbol == "A":
                n = next((dims[a] for a in _ROLES["n"] if a in dims), None)
                if n is not None and r.out_shape[-1] != n:
                    guess("m", r.out_shape[-1])
        return dims

    def _namer(self):
        dims = self.dims()
        by_size = {}
        for name, size in dims.items():
            by_size.setdefault(int(size), []).append(name)
        unique = {s: names[0] for s, names in by_size.items() if len(names) == 1}

        def value(name):
            """Size of a (product) name such as 'h·d_k' or '3·d_model', or None."""
            total = 1
            for part in name.split("·"):
                if part.isdigit():
                    total *= int(part)
                elif part in dims:
                    total *= int(dims[part])
                elif part == "d_v" and "d_k" in dims:
                    total *= int(dims["d_k"])
                else:
                    return None
            return total

        def name_shape(shape, last=None, first=None):
            parts = [unique.get(int(s), str(s)) for s in shape]
            if last is not None and shape and value(last) == shape[-1]:
                parts[-1] = last
            if first is not None and shape and value(first) == shape[0]:
                parts[0] = first
            return "(" + ", ".join(parts) + ")"

        return name_shape

    def _shapes(self, row, name_shape):
        """The shapes column: named inputs -> named output; a dim that an earlier row named
        (h·d_k, d_v, ...) keeps that name."""
        def hint_of(k):
            src = row.sources[k]
            return self.rows[src].hint if src is not None else None

        def inp(k):
            return name_shape(row.in_shapes[k], hint_of(k))

        out = name_shape(row.out_shape, row.hint)
        if row.op == "linear":
            w = row.in_shapes[1]
            # stored (out, in), shown as the paper's W: (in, out)
            w_paper = name_shape((w[1], w[0]), row.hint, first=hint_of(0))
            return f"{inp(0)}·{w_paper} → {out}"
        if row.op == "embedding":
            return f"{inp(0)}[ids] → {out}"
        if row.op == "matmul" and len(row.in_shapes) == 2:
            return f"{inp(0)}·{inp(1)} → {out}"
        ins = [inp(k) for k in row.show]
        return (", ".join(ins) + " → " if ins else "→ ") + out

    # -- output ------------------------------------------------------------------------------
    def table(self, fmt="text", scope=None):
        """The trace as a text or Markdown table; `scope` keeps the ops of one module only."""
        if fmt not in ("text", "markdown"):
            raise ValueError(f"table: fmt must be 'text' or 'markdown', got {fmt!r}")
        name_shape = self._namer()
        rows = [r for r in self.rows
                if scope is None or r.scope == scope or r.scope.startswith(scope + ".")]
        head = ["#", "module", "op", "formula", "shapes"]
        body = [[str(r.index), r.scope or "<top>", r.op, r.formula, self._shapes(r, name_shape)]
                for r in rows]
        dims = ", ".join(f"{k}={v}" for k, v in self.dims().items())
        if fmt == "markdown":
            lines = [f"dims: {dims}", "", "| " + " | ".join(head) + " |",
                     "|" + "|".join("---" for _ in head) + "|"]
            for cells in body:
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            return "\n".join(lines)
        widths = [max(len(c[k]) for c in [head] + body) for k in range(len(head))]
        lines = [f"dims: {dims}",
                 "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
        for cells in body:
            lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def trace(dims=None):
    """Record the ops run inside the `with` block: `with tgx.trace() as t: model(x)`.

    Parameters
    ----------
    dims : dict name -> size, optional
        Names for sizes (B, n or T, d_model, h, d_k, d_ff, V, m). Missing ones are guessed
        from the ops (the embedding's output gives B, n, d_model; the head split gives h, d_k).
    """
    return Trace(dims)
