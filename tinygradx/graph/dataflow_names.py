"""The seed names of `tinygradx.graph.dataflow`: which node is Q, Score, A, Z, Y_attn, Y_next, H,
...

A node gets a name only where a rule of DataFlow recognised the formula it computes (a softmax
is `A` only when its input is a scaled score, a matmul is `Z` only when it is A·V); an op that
no rule knows keeps no name, and a name a user set on a tensor (`t.name = "ctx"`) wins over all.

    Post-LN (the seed's boxed formulas)         Pre-LN (GPT)
    Y_attn = LayerNorm(X + MHA(X))              Y_attn = x + MHA(LN(x))
    Y_next = LayerNorm(Y_attn + FFN(Y_attn))    x_{l+1} = x + FFN(LN(x))

The encoder's last Y_next is H (the decoder's cross-attention reads K and V from it). The seed
names no output of the decoder's cross-attention sublayer; it is the `y` of the seed's Add &
Norm, y = LayerNorm(x + Sublayer(x)), with the sublayer MHA(x, H).
"""
from __future__ import annotations

from .dataflow_modern import SEED
from . import skip_input, sublayer, within

# the name shown for a symbol (the symbols are what the rules pass from op to op); a symbol not
# listed is its own name
SEED_NAMES = {"QKᵀ": "Score", "QKᵀ/√d_k": "Score/√d_k", "QKᵀ/√d_k + M": "Score/√d_k + M",
              "Q/√d_k + M": "Score/√d_k + M", "QKᵀ + M": "Score + M",
              "MultiHead": "MHA", "QKV": "[Q K V]", "E·√d": "E·√d_model", "log p": "log-probs",
              "Σ −log p(y)": "", **SEED}

# the symbols a score carries (the inputs a mask and the attention softmax accept)
SCORES = ("QKᵀ", "QKᵀ/√d_k", "Q/√d_k", "QKᵀ + M", "QKᵀ/√d_k + M", "Q/√d_k + M")


def sublayer_kind(module):
    """"cross", "attn" or "ffn" for a sublayer's module path, else None."""
    last = module.rsplit(".", 1)[-1]
    if "cross" in last or "src_attn" in last:
        return "cross"
    if "attn" in last or "attention" in last:
        return "attn"
    if last in ("mlp", "ff", "ffn", "feed_forward") or "ff" in last or "mlp" in last:
        return "ffn"
    return None


class SeedNames:
    """name_all and its helpers (DataFlow inherits them)."""

    def name_all(self):
        """Give every op node its seed name. Needs the whole graph (who consumes a node tells
        whether a residual add is the block output or is followed by its LayerNorm, Post-LN)."""
        self.update()
        g, flows = self.g, self.flows
        consumers = g.consumers()
        for f in flows:
            f.formula = f.base
            if f.op is not None:
                f.name = f.seed if f.seed is not None else \
                    SEED_NAMES.get(f.symbol, f.symbol if f.symbol not in ("x", "Y") else "")
        for i, f in enumerate(flows):
            if f.op == "add" and f.formula.startswith("x + Sublayer"):
                self._name_residual(i, f, consumers.get(i, []))
        for i, f in enumerate(flows):            # the encoder's output, read by the decoder
            if f.op is None or f.backward or g.scopes[i].split(".")[0] != "encoder":
                continue
            if any(g.scopes[c].split(".")[0] != "encoder" for c in consumers.get(i, [])):
                rhs = f.formula.split(" = ", 1)[-1] if " = " in f.formula else ""
                also = f"{f.name} = " if f.name in ("Y_next", "x_{l+1}") else ""
                f.name = "H"
                f.formula = f"H = {also}{rhs}  (encoder output)" if rhs else \
                    "H  (encoder output)"
        for f in flows:
            if f.name in ("x_{l+1}", "Y_next") and "(block output)" not in f.formula:
                f.formula += "  (block output)"
        for i, f in enumerate(flows):            # a name the user set on the tensor
            user = getattr(g.nodes[i], "name", None) if g.nodes[i] is not None else None
            if f.op is not None and isinstance(user, str) and user:
                rhs = f.formula.split(" = ", 1)[-1] if " = " in f.formula else f.formula
                f.name, f.formula = user, f"{user} = {rhs}"
        return flows

    def _name_residual(self, i, f, cs):
        """The skip add i (x + Sublayer(x)) and, Post-LN, the LayerNorm after it."""
        g, flows = self.g, self.flows
        ps = g.parents(i)
        skip = skip_input(g, i)
        other = ps[1] if ps[0] == skip else ps[0]
        kind = sublayer_kind(sublayer(g.scopes[i], g.scopes[other]) or "")
        sub = {"attn": "MHA", "cross": "MHA", "ffn": "FFN"}.get(kind, "Sublayer")
        post = self._post_norm(i, cs)
        if post is not None:
            # Post-LN: LayerNorm(x + Sublayer(x)) is the sublayer's output; its input is named
            # as the seed names it (X into the attention, Y_attn into the FFN)
            out = {"attn": "Y_attn", "cross": "y", "ffn": "Y_next"}.get(kind, "")
            x = flows[skip].name if flows[skip].name in ("Y_attn", "y") else \
                "X" if kind else "x"
            arg = f"{x}, H" if kind == "cross" else x
            norm, name = post
            f.name = f"{x} + {sub}({arg})"
            f.formula = f"{x} + {sub}({arg})  (residual)"
            flows[norm].name = out
            flows[norm].formula = f"{out} = {name}({x} + {sub}({arg}))  (Add & Norm)" \
                if out else f"{name}(x + Sublayer(x))  (Add & Norm)"
            return
        out = {"attn": "Y_attn", "cross": "y", "ffn": "x_{l+1}"}.get(kind, "")
        f.name = out
        norm = self._behind_ln(other, skip) if g.ops[other] is not None else None
        if out:
            arg = f"{norm}(x)" if norm else "x"
            arg += ", H" if kind == "cross" else ""
            f.formula = f"{out} = x + {sub}({arg})  (residual)"

    def _post_norm(self, i, cs):
        """(the norm node, "LayerNorm" or "RMSNorm") when the add i feeds only a norm of a
        module below its own (Post-LN), else None."""
        g = self.g
        if not cs or not all(within(g.scopes[c], g.scopes[i]) and g.scopes[c] != g.scopes[i]
                             for c in cs):
            return None
        if len(cs) == 1 and g.ops[cs[0]] == "layer_norm":
            return cs[0], "LayerNorm"
        rms = next((k for k in range(i + 1, len(self.flows)) if self.flows[k].of == i and
                    self.flows[k].symbol == "RMSNorm(x)"), None)
        if rms is not None and all(g.scopes[c] == g.scopes[rms] for c in cs):
            return rms, "RMSNorm"
        return None

    def _behind_ln(self, j, skip):
        """"LN" or "RMSNorm" when the sublayer output j reads its input through a LayerNorm or
        an RMSNorm of `skip` (Pre-LN), else None."""
        g, stack, seen = self.g, [j], set()
        while stack:
            k = stack.pop()
            for p in g.parents(k):
                if p == skip:
                    continue
                if g.ops[p] == "layer_norm" and skip in g.parents(p):
                    return "LN"
                if self.flows[p].symbol == "RMSNorm(x)" and self.flows[p].of == skip:
                    return "RMSNorm"
                if p > skip and p not in seen and g.ops[p] is not None:
                    seen.add(p)
                    stack.append(p)
        return None

    # -- the loss: log-probabilities, the target's log-prob, the mean -------------------------
    def _log_prob_step(self, i, f, x, syms):
        """After log_softmax: log p[y] (getitem), −log p(y) (neg), a weighted or masked
        −log p(y) (mul), its sum, and the mean: loss."""
        if f.op == "getitem":
            f.symbol, f.formula = "log p(y)", "log p(y) = log p[y]  (the target's log-prob)"
        elif f.op == "neg":
            f.symbol, f.formula = "−log p(y)", "−log p(y)  (each token's loss)"
        elif f.op == "mul":
            f.formula, f.seed = f"{x}·w  (weights or padding mask)", ""
        elif f.op == "sum" and f.out_shape == ():
            f.symbol, f.formula = "Σ −log p(y)", "Σ −log p(y)"
        elif f.out_shape == ():
            f.symbol, f.formula = "loss", "loss = mean −log p(y)"
        else:
            f.symbol, f.formula = "", f.op


def log_prob_test(f, x):
    """An op on the log-probabilities on the way to the loss."""
    if x == "log p":
        return f.op == "getitem"
    if x in ("log p(y)", "−log p(y)"):
        return f.op in ("neg", "mul", "sum", "mean") or (f.op == "div" and f.out_shape == ())
    return x == "Σ −log p(y)" and f.op in ("div", "mean", "mul") and f.out_shape == ()
