"""tinygradx.graph.dataflow: what every node of a graph computes, in the names of the seed paper.

    flow = DataFlow(graph.walk(loss))   # a Flow per node: formula, seed name, named shapes
    flow.name_all()                     # the seed names, which need the whole graph
    translate("x + Sublayer(x)  (residual)", "zh")

The data flow (`DataFlow`) names what every node computes, once, for both tools: the formula
(found from the module name and the op, followed from input to input: `Q`, `Kᵀ`, then `QKᵀ/√d_k`)
and the Transformer quantity the seed paper calls it (X, Q, K, V, Score, A, Z, Concat, MHA,
Y_attn, H_ff, Y_next, x_{l+1}, H, logits, log-probs, loss; `dataflow_names`), with its shape
in named dims (B, T, S, d_model, h, d_k, d_ff, V).
`tinygradx.trace` prints them as a table, `tinygradx.viz` writes them into the node labels.
The strings the tools print have one table of translations (`STRINGS`, read by `translate`).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from .dataflow_modern import (ModernRules, kv_repeat_test, rms_step_test, rope_half_test,
                              rope_test, square_test, swiglu_test)
from .dataflow_names import (ATTENTION_SYMBOLS, FFN_SYMBOLS, SCORES, SEED_NAMES, SeedNames,
                             caller_kind, log_prob_test, sublayer_kind)
from .words import STRINGS, translate
from . import backward_frame, leaf_kind, skip_input

__all__ = ["DataFlow", "Flow", "translate", "STRINGS"]


# --------------------------------------------------------------------------------------------
# the data flow: what each node computes, in the names of the seed paper
# --------------------------------------------------------------------------------------------

# aliases of one role: a user who says "T" (nanoGPT) gets no guessed "n" as well
ROLES = {"B": ("B",), "n": ("n", "T"), "m": ("m", "S"), "d_model": ("d_model", "C"),
         "h": ("h", "nh"), "d_k": ("d_k", "hs", "d_v"), "d_ff": ("d_ff",), "V": ("V",),
         "h_kv": ("h_kv", "nkv", "n_kv_head")}

# linear layers by module name -> (symbol of the output, formula, last-dim hint of the output)
LINEARS = [
    ("w_q", "Q", "Q = X·W^Q", "h·d_k"),
    ("w_k", "K", "K = X·W^K", "h·d_k"),
    ("w_v", "V", "V = X·W^V", "h·d_v"),
    ("c_attn", "QKV", "[Q K V] = X·[W^Q W^K W^V]", "3·d_model"),
    ("w_o", "MultiHead", "MHA = Concat(head_1..head_h)·W^O", None),
    ("attn.c_proj", "MultiHead", "MHA = Concat(head_1..head_h)·W^O", None),
    ("c_fc", "H_ff", "H_ff = X·W_1 + b_1", "d_ff"),
    ("w_1", "H_ff", "H_ff = X·W_1 + b_1", "d_ff"),
    ("c_up", "H_up", "H_up = X·W_3 + b_3", "d_ff"),          # SwiGLU's second projection
    ("w_3", "H_up", "H_up = X·W_3 + b_3", "d_ff"),
    ("mlp.c_proj", "FFN", "FFN(X) = φ(H_ff)·W_2 + b_2", None),
    ("w_2", "FFN", "FFN(X) = φ(H_ff)·W_2 + b_2", None),
    ("lm_head", "logits", "logits = X·W_vocab", None),
    ("generator*", "logits", "logits = X·W_vocab", None),
]
POS_EMBED = ("wpe", "pos*", "*position*")
SEED_LOGITS = {"logits": "logits", "log p": "log p"}

def _match(scope, pattern):
    """`pattern` matches the end of a module path: "w_q" matches "layers.0.self_attn.w_q"."""
    return fnmatch.fnmatchcase(scope, pattern) or fnmatch.fnmatchcase(scope, "*." + pattern)


def _in_attention(scope):
    last = scope.rsplit(".", 1)[-1]
    return "attn" in last or "attention" in last


@dataclass
class Flow:
    """What node i of a Graph computes: the seed name, the formula, and how its shape is named."""
    op: str | None
    scope: str
    in_shapes: list
    out_shape: tuple
    kinds: list                  # per input: "op" | "param" | "const" | "input"
    formula: str = ""
    symbol: str = ""             # what the output is (Q, Kᵀ, A, ...) for the ops that follow
    hint: str | None = None      # a name for the output's last dim that no single size tells
    show: list = field(default_factory=list)   # which inputs appear in the shapes column
    name: str = ""               # the seed name (X, Q, Score, A, Z, MHA, Y_attn, Y_next, H, ...)
    base: str = ""               # the formula the rules gave, before name_all refined it
    syms: list = field(default_factory=list)   # the symbols of the inputs
    same_inputs: bool = False    # two inputs, one node (x * x)
    of: int | None = None        # the node an RMSNorm chain normalises
    seed: str | None = None      # the seed name when it is not the symbol's
    backward: bool = False       # an op a create_graph backward pass recorded (no seed name)
    consts: list = field(default_factory=list)  # per input: a constant's value, else None
    d_k: int | None = None       # QKᵀ: the d_k its scale must use


def _scaled_query(f, x):
    """Q·(1/√d_k), Q/√d_k, or the same of QKᵀ: the constant must be that number (d_k: the last
    dim of Q), else it is some other product."""
    if "const" not in f.kinds or x not in ("Q", "QKᵀ") or len(f.kinds) != 2:
        return False
    c = f.consts[f.kinds.index("const")]
    dk = f.d_k if x == "QKᵀ" else (f.in_shapes[0] or (0,))[-1]
    if c is None or not dk:
        return c is None
    want = dk ** -0.5 if f.op == "mul" else dk ** 0.5
    return abs(c - want) <= 1e-6 * want


def _const_value(t):
    """The value of a constant leaf (a scalar, or an array of one value), else None."""
    data = getattr(t, "_data", None)
    if data is None or data.size == 0 or data.dtype.kind not in "fiu":
        return None
    flat = data.reshape(-1)
    return float(flat[0]) if data.size == 1 or (flat == flat[0]).all() else None


def _mask_add(f, x):
    return x in SCORES and _in_attention(f.scope) and "op" not in f.kinds[1:]


def _score(f, x):
    return x in SCORES


def _cross_kv(f, x):
    """K or V of a cross-attention: computed from the encoder output H."""
    return sublayer_kind(f.scope.rsplit(".", 1)[0]) == "cross" and \
        any(_match(f.scope, p) for p in ("w_k", "w_v", "k_proj", "v_proj"))


def _position_rows(f, x):
    return f.kinds[:1] == ["input"] and any(_match(f.scope, p) for p in POS_EMBED)


# op -> [(test(flow, x) or None for always, DataFlow method)]: the first rule whose test passes
# fills the flow; x is the symbol of the first input
RULES = {
    "linear": [(_cross_kv, "_cross_linear"), (None, "_linear")],
    "embedding": [(None, "_embedding")],
    "getitem": [(lambda f, x: x == "QKV", "_split_qkv"), (_position_rows, "_position_table"),
                (rope_half_test, "_rope_half"), (log_prob_test, "_log_prob_step")],
    "neg": [(rope_test, "_rope"), (log_prob_test, "_log_prob_step")],
    "sum": [(log_prob_test, "_log_prob_step")],
    "reshape": [(None, "_movement")],
    "permute": [(None, "_movement")],
    "matmul": [(None, "_matmul")],
    "mul": [(square_test, "_rms_norm"), (rms_step_test, "_rms_norm"), (_scaled_query, "_scale"),
            (rope_test, "_rope"), (swiglu_test, "_swiglu"), (log_prob_test, "_log_prob_step"),
            (lambda f, x: x == "E" and "const" in f.kinds, "_scaled_embedding")],
    "mean": [(rms_step_test, "_rms_norm"), (log_prob_test, "_log_prob_step")],
    "rsqrt": [(rms_step_test, "_rms_norm")],
    "cat": [(rope_test, "_rope")],
    "repeatinterleave": [(kv_repeat_test, "_kv_repeat")],
    "div": [(_scaled_query, "_scale"), (log_prob_test, "_log_prob_step")],
    "masked_fill": [(_score, "_mask")],
    "add": [(rms_step_test, "_rms_norm"), (rope_test, "_rope"), (_mask_add, "_mask"),
            (None, "_add")],
    "attention": [(None, "_attention")],
}

# op -> x -> (symbol or None to keep x, formula): ops whose formula needs only x
SIMPLE = {
    "softmax": lambda x: ("A", f"A = softmax({x})  (scaled dot-product attention)")
    if x in SCORES else ("", "softmax(x)"),
    "dropout": lambda x: (None, f"dropout({x or 'x'})"),
    "layer_norm": lambda x: ("LN(x)", "LayerNorm(x)"),
    # the activation of the FFN's hidden layer has a name of its own, not H_ff's
    "gelu": lambda x: ("GELU(H_ff)" if x == "H_ff" else "", f"GELU({x or 'x'})"),
    "relu": lambda x: ("ReLU(H_ff)" if x == "H_ff" else "", f"ReLU({x or 'x'})"),
    "sigmoid": lambda x: (f"σ({x})" if x else None, f"σ({x})" if x else "sigmoid"),
    "silu": lambda x: (f"SiLU({x})" if x else None, f"SiLU({x or 'x'})"),
    "cross_entropy": lambda x: ("loss", "loss = CE(logits, y)"),
    "log_softmax": lambda x: ("log p", "log p = log softmax(logits)  (log-probabilities)")
    if x == "logits" else ("", "log softmax(x)"),
}


# ops that keep what their input is (the same values, or a copy of them)
KEEPS = ("contiguous", "clone", "copy", "to", "float", "double", "detach")


class DataFlow(ModernRules, SeedNames):
    """The data flow of a Graph: a Flow per node, described parents first.

        flow = DataFlow(g)           # describes every node of g now
        flow.update()                # after nodes were added (the trace adds them one by one)
        flow.name_all()              # the seed names, which need the whole graph
        name_shape = flow.namer()    # shape -> "(B, T, d_model)"
    """

    def __init__(self, g, dims=None):
        self.g = g
        self.user_dims = dict(dims or {})
        self.flows = []
        self._getitems = {}
        self._q_heads = {}               # scope -> the query heads of its split (GQA: more)
        self.plain = set()               # linears whose module-path name the flow did not bear
        self.update()

    # -- formulas ----------------------------------------------------------------------------
    def update(self):
        """Describe the nodes added to the graph since the last call; returns the new Flows."""
        new = []
        while len(self.flows) < len(self.g.nodes):
            f = self._describe(len(self.flows))
            f.base = f.formula
            self.flows.append(f)
            new.append(f)
        return new

    def _kind(self, p):
        return "op" if self.g.ops[p] is not None else leaf_kind(self.g.nodes[p])

    def _describe(self, i):
        """The flow of node i: the first rule of RULES for its op whose test passes, else
        SIMPLE, else the op's name."""
        g = self.g
        ps = g.parents(i)
        f = Flow(g.ops[i], g.scopes[i], [tuple(g.nodes[p].shape) for p in ps],
                 tuple(g.nodes[i].shape), [self._kind(p) for p in ps])
        if f.op is None:
            return f
        f.consts = [_const_value(g.nodes[p]) if k == "const" else None
                    for p, k in zip(ps, f.kinds, strict=True)]
        f.d_k = self.flows[ps[0]].d_k if ps else None
        if backward_frame(g.ctxs[i]) is not None:   # computes a gradient: its op, plainly
            f.backward, f.formula = True, f.op
            f.show = [k for k, kind in enumerate(f.kinds) if kind in ("op", "input")]
            return f
        syms = [self.flows[p].symbol for p in ps]
        x = syms[0] if syms else ""
        f.syms, f.same_inputs = syms, len(ps) == 2 and ps[0] == ps[1]
        f.show = [k for k, kind in enumerate(f.kinds) if kind in ("op", "input")]
        f.symbol = x
        for test, method in RULES.get(f.op, ()):
            if test is None or test(f, x):
                getattr(self, method)(i, f, x, syms)
                return f
        if f.op in SIMPLE:
            symbol, f.formula = SIMPLE[f.op](x)
            f.symbol = x if symbol is None else symbol
        else:                                # no rule knows it: no seed name either
            f.formula = f.op
            if f.op in KEEPS:
                f.hint = self.flows[ps[0]].hint if ps else None
            else:
                f.symbol = ""
        return f

    def _caller_kind(self, i):
        """The kind of module that called linear i (dataflow_names.caller_kind)."""
        scope = self.g.scopes[i]
        path = scope.rsplit(".", 1)[0] if "." in scope else ""
        frame = getattr(getattr(self.g.ctxs[i], "frame", None), "parent", None)
        while frame is not None and not hasattr(frame, "module"):
            frame = getattr(frame, "parent", None)
        cls = type(frame.module).__name__ if frame is not None else ""
        return caller_kind(path, cls)

    def _linear(self, i, f, x, syms):
        f.show = [0, 1]
        for pat, sym, formula, hint in LINEARS:
            if _match(f.scope, pat):
                # a name from the module path only inside a module of that kind, and only
                # where the data flow bears it out (name_all fills `plain` otherwise)
                kind = self._caller_kind(i) if sym in ATTENTION_SYMBOLS + FFN_SYMBOLS else None
                if i in self.plain or (sym in ATTENTION_SYMBOLS and kind not in
                                       ("attn", "cross")) or (sym in FFN_SYMBOLS and
                                                              kind != "ffn"):
                    break
                f.symbol, f.formula, f.hint = sym, formula, hint
                if len(f.kinds) < 3:                       # no bias: no "+ b" in the formula
                    f.formula = f.formula.rsplit(" + b", 1)[0]
                if sym == "QKV" and f.out_shape and f.in_shapes[0] and \
                        f.out_shape[-1] != 3 * f.in_shapes[0][-1]:
                    # grouped-query attention: K and V have h_kv heads, not h
                    f.hint = "d_model+2·h_kv·d_k"
                    f.formula += "  (K, V: h_kv heads)"
                if sym == "MultiHead":
                    f.formula += "  (multi-head attention)"
                elif sym == "FFN":
                    if x == "SwiGLU":
                        f.formula = "FFN(X) = (SiLU(X·W_1) ⊙ X·W_3)·W_2"
                    f.formula += "  (feed-forward network)"
                return
        f.symbol, f.formula = "Y", "Y = X·Wᵀ + b" if len(f.kinds) > 2 else "Y = X·Wᵀ"

    def _cross_linear(self, i, f, x, syms):
        """Cross-attention: K = H·W^K, V = H·W^V (H: the encoder output)."""
        if i in self.plain or self._caller_kind(i) not in ("attn", "cross"):
            return self._linear(i, f, x, syms)
        f.show = [0, 1]
        f.symbol = "V" if _match(f.scope, "w_v") or _match(f.scope, "v_proj") else "K"
        f.hint = "h·d_v" if f.symbol == "V" else "h·d_k"
        f.formula = f"{f.symbol} = H·W^{f.symbol}  (H: the encoder output)"
        if len(f.kinds) > 2:
            f.formula = f.formula.replace("  (", " + b  (", 1)

    def _embedding(self, i, f, x, syms):
        f.show = [0]
        if any(_match(f.scope, p) for p in POS_EMBED):
            f.symbol, f.formula = "P", "P[pos]  (position embedding)"
        else:
            f.symbol, f.formula = "E", "E[ids]  (token embedding)"

    def _split_qkv(self, i, f, x, syms):
        src = self.g.parents(i)[0]
        k = self._getitems.get(src, 0)
        self._getitems[src] = k + 1
        index = getattr(self.g.ctxs[i], "index", None) if i < len(self.g.ctxs) else None
        width = f.out_shape[-1] if f.out_shape else 0
        last = index[-1] if isinstance(index, tuple) and index else index
        total = f.in_shapes[0][-1] if f.in_shapes[0] else 0
        if isinstance(last, slice) and width and len(f.out_shape) == len(f.in_shapes[0]):
            # which part of [Q K V] the slice reads: Q first, V last, K between (with
            # grouped-query attention K and V are narrower than Q)
            start = last.start or 0
            k = 0 if start == 0 else 2 if start + width == total else 1
        f.symbol = "QKV"[k] if k < 3 else "QKV"
        heads = "h_kv" if k in (1, 2) and width * 3 != total else "h"
        f.hint = f"{heads}·d_v" if f.symbol == "V" else f"{heads}·d_k"
        f.formula = f"{f.symbol} = split([Q K V])"

    def _scale(self, i, f, x, syms):
        f.symbol = f.formula = x + "/√d_k"
        if x == "QKᵀ":
            f.formula = "Score/√d_k = QKᵀ/√d_k"

    def _mask(self, i, f, x, syms):
        f.symbol = x + " + M"
        f.formula = f"{SEED_NAMES.get(f.symbol, f.symbol)} = {f.symbol}  (mask)"

    def _attention(self, i, f, x, syms):
        """F.attention: the whole formula as one node (F.packed_attention: [Q K V] in, heads
        merged)."""
        if len(f.kinds) == 1:
            f.symbol, f.hint = "Concat", "h·d_v"
            f.formula = "Concat(head_i = softmax(QᵢKᵢᵀ/√d_k + M)·Vᵢ)"
        else:
            f.symbol, f.hint = "Z", "d_v"
            f.formula = "Z = softmax(QKᵀ/√d_k + M)·V  (each head's head_i)"

    def _scaled_embedding(self, i, f, x, syms):
        f.symbol, f.formula = "E·√d", "E[ids]·√d_model"

    def _position_table(self, i, f, x, syms):
        f.symbol, f.formula = "PE", "PE[pos]  (rows of the sinusoid table)"

    def _movement(self, i, f, x, syms):
        """reshape/permute: the head split and merge of attention, or a plain view."""
        inp, out = f.in_shapes[0], f.out_shape
        if x in ("Q", "K", "V"):
            f.hint = "d_v" if x == "V" else "d_k"
        if x in ("Q", "K", "V") and f.op == "reshape" and len(out) == len(inp) + 1:
            heads = out[-2] if len(out) >= 2 else None
            if x == "Q":
                self._q_heads[f.scope] = heads
            gqa = x != "Q" and self._q_heads.get(f.scope, heads) != heads
            f.formula = f"split {x} into {'h_kv' if gqa else 'h'} heads"
        elif x in ("Q", "K", "V") and f.op == "permute" and len(out) == 4 \
                and out[-2:] == inp[-2:][::-1] and x == "K":
            f.symbol, f.formula, f.hint = "Kᵀ", "Kᵀ", None
        elif x in ("Q", "K", "V") and f.op == "permute":
            f.formula = f"{x}_i per head"
        elif x == "Z" and f.op == "permute":
            f.formula, f.hint = "heads side by side", "d_v"
        elif x == "Z" and f.op == "reshape" and len(out) == len(inp) - 1:
            f.symbol, f.hint = "Concat", "h·d_v"
            f.formula = "Concat(head_1..head_h)"
        elif x in ("logits", "log p") and f.op == "reshape":
            f.formula = f"{f.op}  (rows of {SEED_LOGITS[x]})"
        else:
            f.formula, f.symbol = f.op, ""

    def _matmul(self, i, f, x, syms):
        a, b = (syms + ["", ""])[:2]
        if a.startswith("Q") and b == "Kᵀ":
            scaled = "/√d_k" if a.endswith("/√d_k") else ""
            f.symbol, f.d_k = "QKᵀ" + scaled, (f.in_shapes[0] or (0,))[-1]
            f.formula = ("Score/√d_k = " if scaled else "Score = ") + f.symbol
        elif a == "A" and b == "V":
            f.symbol, f.formula, f.hint = "Z", "Z = A·V  (each head's head_i)", "d_v"
        else:                                # not A·V nor QKᵀ: no seed name
            f.formula, f.symbol = "matmul", ""

    def _add(self, i, f, x, syms):
        """x + Sublayer(x) for the skip add of a residual connection (`skip_input`); the
        embedding sums; else plain add."""
        f.symbol, f.formula = "x", "add"
        if len(f.kinds) != 2 or "const" in f.kinds:
            return
        if syms[0].startswith("E") and syms[1] == "" and f.kinds[1] == "input" and \
                any(_match(f.scope, p) for p in POS_EMBED):
            syms = [syms[0], "PE"]                 # the table's rows sliced outside the graph
        if syms[0].startswith("E") and syms[1] in ("P", "PE"):
            scaled = "·√d_model" if syms[0] == "E·√d" else ""
            pos = "P[pos]" if syms[1] == "P" else "PE"
            f.symbol = "X"
            f.formula = f"X = E[ids]{scaled} + {pos}  (positional encoding)"
        elif skip_input(self.g, i) is not None:
            f.formula = "x + Sublayer(x)  (residual)"

    # -- dimension names ---------------------------------------------------------------------
    def dims(self):
        """{name: size}: the names given by the user plus the ones guessed from the ops."""
        dims = dict(self.user_dims)

        def guess(role, size):
            if size is None or any(a in dims for a in ROLES[role]):
                return
            dims[role] = int(size)

        for f in (f for f in self.flows if not f.backward):    # a gradient's ops name no dim
            if f.op == "embedding" and len(f.out_shape) == 3 and not f.formula.startswith("P"):
                guess("B", f.out_shape[0])
                guess("n", f.out_shape[1])
                guess("d_model", f.out_shape[2])
                guess("V", f.in_shapes[0][0])
            elif f.op == "linear" and len(f.in_shapes[0]) == 3 and f.symbol in ("Q", "QKV"):
                guess("B", f.in_shapes[0][0])
                guess("n", f.in_shapes[0][1])
                guess("d_model", f.in_shapes[0][2])
            elif f.op == "reshape" and f.formula.startswith("split") and len(f.out_shape) == 4:
                guess("h_kv" if f.formula.endswith("h_kv heads") else "h", f.out_shape[2])
                guess("d_k", f.out_shape[3])
            elif f.op == "linear" and f.symbol == "H_ff":
                guess("d_ff", f.out_shape[-1])
            elif f.op == "linear" and f.symbol == "logits":
                guess("V", f.out_shape[-1])
            elif f.op == "softmax" and f.symbol == "A":
                n = next((dims[a] for a in ROLES["n"] if a in dims), None)
                if n is not None and f.out_shape[-1] != n:
                    guess("m", f.out_shape[-1])
        return dims

    def namer(self, dims=None):
        """name_shape(shape, last=None, first=None) -> "(B, T, h·d_k)": a size is named when
        exactly one dimension has it; `last`/`first` name a product dim (h·d_k, 3·d_model)."""
        dims = self.dims() if dims is None else dims
        by_size = {}
        for name, size in dims.items():
            by_size.setdefault(int(size), []).append(name)
        unique = {s: names[0] for s, names in by_size.items() if len(names) == 1}

        def value(name):
            """Size of a name such as 'h·d_k', '3·d_model', 'd_k/2' or 'd_model+2·h_kv·d_k',
            or None."""
            if "+" in name:
                terms = [value(t) for t in name.split("+")]
                return None if None in terms else sum(terms)
            total = 1
            for part in name.split("·"):
                part, _, div = part.partition("/")
                if part.isdigit():
                    size = int(part)
                elif part in dims:
                    size = int(dims[part])
                elif part == "d_v" and "d_k" in dims:
                    size = int(dims["d_k"])
                else:
                    return None
                if div:
                    size, rest = divmod(size, int(div))
                    if rest:
                        return None
                total *= size
            return total

        def name_shape(shape, last=None, first=None):
            parts = [unique.get(int(s), str(s)) for s in shape]
            if last is not None and shape and value(last) == shape[-1]:
                parts[-1] = last
            if first is not None and shape and value(first) == shape[0]:
                parts[0] = first
            return "(" + ", ".join(parts) + ")"

        return name_shape

    def named_shape(self, i, name_shape):
        """The output shape of node i in named dims."""
        f = self.flows[i]
        return name_shape(f.out_shape, f.hint)

    def shapes(self, i, name_shape):
        """The shapes column of node i: named inputs -> named output; a dim that an earlier op
        named (h·d_k, d_v, ...) keeps that name."""
        f, ps = self.flows[i], self.g.parents(i)

        def inp(k):
            return name_shape(f.in_shapes[k], self.flows[ps[k]].hint)

        out = name_shape(f.out_shape, f.hint)
        if f.op == "linear" and len(f.in_shapes) > 1:
            w = f.in_shapes[1]
            # stored (out, in), shown as the paper's W: (in, out)
            w_paper = name_shape((w[1], w[0]) if len(w) == 2 else w, f.hint,
                                 first=self.flows[ps[0]].hint)
            return f"{inp(0)}·{w_paper} → {out}"
        if f.op == "embedding":
            return f"{inp(0)}[ids] → {out}"
        if f.op == "matmul" and len(f.in_shapes) == 2:
            return f"{inp(0)}·{inp(1)} → {out}"
        ins = [inp(k) for k in f.show]
        return (", ".join(ins) + " → " if ins else "→ ") + out
