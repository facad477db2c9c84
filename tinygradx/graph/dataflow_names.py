"""The seed names of `tinygradx.graph.dataflow`: which node is Q, Score, A, Z, Y_attn, Y_next, H,
... and the formulas that read them.

A node gets a name only where a rule of DataFlow recognised the formula it computes (a softmax
is `A` only when its input is a scaled score, a matmul is `Z` only when it is A·V); an op that
no rule knows keeps no name, and a name a user set on a tensor (`t.name = "ctx"`) wins over all.

Linear layers are the one exception: a Linear's output is named from its module path (`w_q` is
Q, `c_fc` is H_ff, `lm_head` gives logits; dataflow.LINEARS), and only when the module that
calls it is of that kind (an attention module for Q, K, V and W^O, a feed-forward one for W_1,
W_2) and the data flow bears it out: a "Q" that never reaches a score, or "logits" that never
reach a softmax or a loss, are demoted to a plain `Y = x·Wᵀ + b`. So a Linear called `w_q`
inside a plain MLP is no Q.

One name per tensor. Every formula reads its inputs by their names (`H_ff = Y_attn·W_1 + b_1`,
`Q = LayerNorm(X)·W^Q + b^Q`, `logits = Y_next·W_vocab + b_vocab`), biases are written wherever
the layer has one, and each block type keeps the one notation the paper writes it in:

    Post-LN (the boxed formulas)             Y_attn = LayerNorm(X + MHA(X))
                                             Y_next = LayerNorm(Y_attn + FFN(Y_attn))
    Pre-LN encoder-decoder                   Y_attn = X + MHA(LayerNorm(X))
                                             Y_next = Y_attn + FFN(LayerNorm(Y_attn))
    Pre-LN GPT (GPT-2's block)               u_l = x_l + CausalMHA(LayerNorm(x_l))
                                             x_{l+1} = u_l + MLP(LayerNorm(u_l))

with l the block's own index (x_0 is the embeddings' sum, the paper's X; u_0, x_1, u_1, x_2, ...),
so a block's output and the next block's input are one name. In the encoder-decoder every block
reads the name of what feeds it: the second layer's Q is `Y_next·W^Q` (the first layer's Y_next),
the decoder's cross-attention Q is the decoder's current state (`Y_attn·W^Q`). The decoder's
cross-attention sublayer output, which the paper leaves unnamed, is the `y` of its Add & Norm
y = LayerNorm(x + Sublayer(x)). The encoder's output is H (its last block's Y_next; the paper
also writes H for §4's Concat, which the pictures call Concat).
"""
from __future__ import annotations

import re

from .dataflow_modern import CHAIN, RMS, SEED
from . import skip_input, sublayer, within

# the name shown for a symbol (the symbols are what the rules pass from op to op); a symbol not
# listed is its own name
SEED_NAMES = {"QKᵀ": "Score", "QKᵀ/√d_k": "Score/√d_k", "QKᵀ/√d_k + M": "Score/√d_k + M",
              "Q/√d_k + M": "Score/√d_k + M", "QKᵀ + M": "Score + M",
              "MultiHead": "MHA", "QKV": "[Q K V]", "E·√d": "E·√d_model",
              "Σ −log p(y)": "", **SEED}

# the symbols a score carries (the inputs a mask and the attention softmax accept)
SCORES = ("QKᵀ", "QKᵀ/√d_k", "Q/√d_k", "QKᵀ + M", "QKᵀ/√d_k + M", "Q/√d_k + M")

# a linear's bias as the formulas write it, per symbol of its output
BIAS = {"Q": "b^Q", "K": "b^K", "V": "b^V", "QKV": "[b^Q b^K b^V]", "MultiHead": "b^O",
        "H_ff": "b_1", "H_up": "b_3", "FFN": "b_2", "logits": "b_vocab"}
ATTENTION_SYMBOLS = ("Q", "K", "V", "QKV", "MultiHead")
FFN_SYMBOLS = ("H_ff", "H_up", "FFN")


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


def caller_kind(path, cls):
    """The kind of the module that calls a Linear, from its path and its class's name: "attn"
    (or "cross"), "ffn" or None. A top-level model is known by its class (a user's
    `CausalSelfAttention` called on its own has the path "")."""
    kind = sublayer_kind(path) if path else None
    if kind is None and re.search(r"attn|attention", cls, re.I):
        kind = "attn"
    if kind is None and re.search(r"mlp|feed_?forward|ffn", cls, re.I):
        kind = "ffn"
    return kind


# the x of the RMSNorm chain's formulas (x², mean(x²), x/√(...)), not the x of another word
_X = re.compile(r"(?<![A-Za-z_])x(?![A-Za-z_0-9])")


def _operand(name):
    """A name as an operand: "(E + MHA(E))" where it is a sum, else as it is."""
    return name if re.fullmatch(r"[\w^{}]+(\(.*\))?", name) else f"({name})"


def _block_index(scope):
    """The block's number in its stack: "transformer.h.3" -> 3, else None."""
    m = re.search(r"\.(\d+)(?:\.|$)", "." + scope)
    return int(m.group(1)) if m else None


class SeedNames:
    """name_all and its helpers (DataFlow inherits them)."""

    # -- the structure the names need ----------------------------------------------------------
    def _unborne_linears(self):
        """Linears named from their module path whose data flow does not bear the name out:
        a Q/K/V/[Q K V] that reaches no score and no attention node inside its module, an H_ff
        that reaches no W_2 inside its module, logits that reach no softmax, log-softmax or
        loss (through views) and are not the output."""
        g, flows = self.g, self.flows
        consumers = g.consumers()
        out = set()
        for i, f in enumerate(flows):
            if f.op != "linear" or f.backward:
                continue
            if f.symbol in ("Q", "K", "V", "QKV"):
                module = f.scope.rsplit(".", 1)[0] if "." in f.scope else ""
                if not self._reaches(i, consumers, lambda k: flows[k].op == "attention" or
                                     flows[k].symbol in SCORES or
                                     flows[k].formula.startswith("Z = A·V"),
                                     lambda k, m=module: within(g.scopes[k], m)):
                    out.add(i)
            elif f.symbol in ("H_ff", "H_up"):
                module = f.scope.rsplit(".", 1)[0] if "." in f.scope else ""
                if not self._reaches(i, consumers, lambda k: flows[k].symbol == "FFN",
                                     lambda k, m=module: within(g.scopes[k], m)):
                    out.add(i)
            elif f.symbol == "logits" and i != len(flows) - 1:
                if not self._reaches(i, consumers, lambda k: flows[k].op in (
                        "softmax", "log_softmax", "cross_entropy"),
                        lambda k: flows[k].op in ("reshape", "contiguous", "permute")):
                    out.add(i)
        return out

    @staticmethod
    def _reaches(i, consumers, goal, through):
        seen, stack = set(), [i]
        while stack:
            for c in consumers.get(stack.pop(), []):
                if goal(c):
                    return True
                if c not in seen and through(c):
                    seen.add(c)
                    stack.append(c)
        return False

    def _plan(self, consumers):
        """The skip adds {index: (skip input, sublayer output, kind, post-LN norm or None)}, the
        notation ("gpt" for a decoder-only Pre-LN model, else "seed") and the node that is x_0
        in the GPT notation."""
        g, flows = self.g, self.flows
        adds = {}
        for i, f in enumerate(flows):
            if f.op == "add" and not f.backward and f.base.startswith("x + Sublayer"):
                ps = g.parents(i)
                skip = skip_input(g, i)
                other = ps[1] if ps[0] == skip else ps[0]
                kind = sublayer_kind(sublayer(g.scopes[i], g.scopes[other]) or "")
                adds[i] = (skip, other, kind, self._post_norm(i, consumers.get(i, [])))
        decoder_only = not any(k == "cross" for _, _, k, _ in adds.values()) and \
            not any(s.split(".")[0] == "encoder" for s in g.scopes)
        pre = any(post is None for *_, post in adds.values())
        notation = "gpt" if adds and decoder_only and pre else "seed"
        first = adds[min(adds)][0] if adds else None
        return adds, notation, first

    # -- the names ----------------------------------------------------------------------------
    def name_all(self):
        """Give every op node its seed name and every formula its inputs' names. Needs the whole
        graph (who consumes a node tells whether a residual add is the block output or is
        followed by its LayerNorm, Post-LN; whether a Q ever reaches a score)."""
        self.update()
        unborne = self._unborne_linears()
        if unborne - self.plain:                 # describe again with those linears plain
            self.plain |= unborne
            self.flows, self._getitems, self._q_heads = [], {}, {}
            self.update()
        g, flows = self.g, self.flows
        consumers = g.consumers()
        adds, self._notation, first = self._plan(consumers)
        self._sub_in = {}                  # sublayer module -> {"Q"/"K"/"ffn": input's name}
        done = set()                       # nodes a look-ahead has named already
        for i, f in enumerate(flows):
            if f.op is None or f.backward:
                continue
            if i not in done:
                f.formula = f.base
                f.name = f.seed if f.seed is not None else \
                    SEED_NAMES.get(f.symbol, f.symbol if f.symbol not in ("x", "Y") else "")
            if f.op == "linear" and f.symbol in BIAS:
                self._name_linear(i, f)
            elif i in adds:
                done |= self._name_residual(i, f, *adds[i])
            elif i not in done and (f.op == "layer_norm" or f.symbol == RMS):
                self._name_norm(i, f)
            elif f.symbol == "SwiGLU":
                a, b = (self._in_name(p) for p in self.g.parents(i))
                f.formula = f"SwiGLU = {a} ⊙ {b}"
            elif f.symbol in CHAIN and f.of is not None:     # an RMSNorm's step: x is its input
                x = _operand(self._in_name(f.of))
                f.formula = _X.sub(lambda m, x=x: x, f.formula)
            if i == first and (self._notation == "gpt" or f.name != "X"):
                # the first block's input: x_0 in the GPT notation, else the paper's X (a
                # model without a position embedding feeds its token embedding straight in)
                rhs = f.formula.split(" = ", 1)[-1] if " = " in f.formula else f.formula
                rhs, _, note = rhs.partition("  (")
                note = f"{note[:-1]}; " if note else ""
                name = "x_0" if self._notation == "gpt" else "X"
                f.name = name
                f.formula = f"{name} = {rhs}  ({note}the paper's X)" if name == "x_0" else \
                    f"X = {rhs}  ({note}the first block's input)"
            self._encoder_output(i, f, consumers)
            if (i in adds or f.op == "layer_norm" or f.symbol == RMS) and \
                    re.fullmatch(r"Y_next|x_\d+", f.name):
                f.formula += "  (block output)"
        for i, f in enumerate(flows):            # a name the user set on the tensor
            user = getattr(g.nodes[i], "name", None) if g.nodes[i] is not None else None
            if f.op is not None and isinstance(user, str) and user:
                rhs = f.formula.split(" = ", 1)[-1] if " = " in f.formula else f.formula
                f.name, f.formula = user, f"{user} = {rhs}"
        return flows

    def _in_name(self, p):
        """What node p is called where a formula reads it: its name; an unnamed leaf the caller
        gave is X (the paper's input), an unnamed op x."""
        f = self.flows[p]
        if f.name:
            return f.name
        t = self.g.nodes[p]
        user = getattr(t, "name", None) if t is not None else None
        if isinstance(user, str) and user:
            return user
        return "X" if f.op is None else "x"

    def _name_linear(self, i, f):
        """Q, K, V, [Q K V], MHA, H_ff, H_up, FFN and logits, each reading its input's name,
        with its bias when the layer has one."""
        sym, inp = f.symbol, self._in_name(self.g.parents(i)[0])
        bias = f" + {BIAS[sym]}" if len(f.kinds) > 2 else ""
        module = f.scope.rsplit(".", 1)[0] if "." in f.scope else ""
        ins = self._sub_in.setdefault(module, {})
        gpt = self._notation == "gpt"
        if sym in ("Q", "K", "V"):
            ins.setdefault(sym, inp)
            note = "  (H: the encoder output)" if f.base.endswith("(H: the encoder output)") \
                else ""
            f.formula = f"{sym} = {inp}·W^{sym}{bias}{note}"
        elif sym == "QKV":
            ins.setdefault("Q", inp)
            gqa = "  (K, V: h_kv heads)" if f.base.endswith("(K, V: h_kv heads)") else ""
            f.formula = f"[Q K V] = {inp}·[W^Q W^K W^V]{bias}{gqa}"
        elif sym == "MultiHead":
            f.name = "CausalMHA" if gpt and self._masked(module) else "MHA"
            q, kv = ins.get("Q", "X"), ins.get("K", ins.get("Q", "X"))
            arg = q if kv == q else f"{q}, {kv}"
            what = "causal multi-head attention" if f.name == "CausalMHA" else \
                "multi-head attention"
            f.formula = f"{f.name}({arg}) = Concat(head_1..head_h)·W^O{bias}  ({what})"
        elif sym in ("H_ff", "H_up"):
            ins.setdefault("ffn", inp)
            w = "W_1" if sym == "H_ff" else "W_3"
            f.formula = f"{sym} = {inp}·{w}{bias}"
        elif sym == "FFN":
            f.name = "MLP" if gpt else "FFN"
            arg = ins.get("ffn", "x")
            f.formula = f"{f.name}({arg}) = {inp}·W_2{bias}  (feed-forward network" + \
                (": (SiLU(x·W_1) ⊙ x·W_3)·W_2)" if inp == "SwiGLU" else ")")
        elif sym == "logits":
            f.formula = f"logits = {inp}·W_vocab{bias}"

    def _masked(self, module):
        """Whether the attention of `module` adds a mask M to its scores (GPT's causal one)."""
        g = self.g
        return any(within(g.scopes[k], module) and (
            self.flows[k].symbol.endswith(" + M") or (self.flows[k].op == "attention" and
                                                      getattr(g.ctxs[k], "mask", None)
                                                      is not None))
            for k in range(len(self.flows)))

    def _name_norm(self, i, f):
        """A norm no residual named (Pre-LN's sublayer and final norms): LayerNorm(its input),
        RMSNorm(its input)."""
        if f.op == "layer_norm":
            inp = self._in_name(self.g.parents(i)[0])
            f.name = f.formula = f"LayerNorm({inp})"
        else:
            inp = self._in_name(f.of) if f.of is not None else "x"
            f.name = f"RMSNorm({inp})"
            lhs, _, rhs = f.formula.partition(" = ")
            x = _operand(inp)
            f.formula = f"{f.name} = {_X.sub(lambda m: x, rhs)}" if rhs else f.name

    def _name_residual(self, i, f, skip, other, kind, post):
        """The skip add i (x + Sublayer(x)) and, Post-LN, the norm after it; returns the nodes
        it named ahead of the loop."""
        flows = self.flows
        x = self._in_name(skip)
        sub = flows[other].name if flows[other].name in ("MHA", "CausalMHA", "FFN", "MLP") \
            else "Sublayer"
        if post is not None:
            # Post-LN: LayerNorm(x + Sublayer(x)) is the sublayer's output
            out = {"attn": "Y_attn", "cross": "y", "ffn": "Y_next"}.get(kind, "")
            arg = f"{x}, H" if kind == "cross" else x
            norm, word = post
            f.name = f"{x} + {sub}({arg})"
            f.formula = f"{x} + {sub}({arg})  (residual)"
            flows[norm].name = out
            flows[norm].formula = f"{out} = {word}({x} + {sub}({arg}))  (Add & Norm)" \
                if out else f"{word}({x} + {sub}({arg}))  (Add & Norm)"
            return {norm}
        # Pre-LN: x + Sublayer(Norm(x)), the norm on the branch
        branch = self._behind_norm(other, skip)
        arg = self._in_name(branch) if branch is not None else x
        arg += ", H" if kind == "cross" else ""
        if self._notation == "gpt":
            m = re.fullmatch(r"[ux]_(\d+)", x)
            n = int(m.group(1)) if m else _block_index(f.scope) or 0
            out = {"attn": f"u_{n}", "ffn": f"x_{n + 1}"}.get(kind, "")
        else:
            out = {"attn": "Y_attn", "cross": "y", "ffn": "Y_next"}.get(kind, "")
        f.name = out
        f.formula = f"{out} = {x} + {sub}({arg})  (residual)" if out else \
            f"{x} + {sub}({arg})  (residual)"
        return set()

    def _encoder_output(self, i, f, consumers):
        """The encoder's output (its last node, read by the decoder) is H."""
        g = self.g
        if g.scopes[i].split(".")[0] != "encoder":
            return
        if any(g.scopes[c].split(".")[0] != "encoder" for c in consumers.get(i, [])):
            rhs = f.formula.split(" = ", 1)[-1] if " = " in f.formula else f.formula
            rhs = rhs.replace("  (Add & Norm)", "")
            was = f"the last layer's {f.name}" if f.name in ("Y_next",) else ""
            f.name = "H"
            f.formula = f"H = {rhs}  (encoder output{': ' + was if was else ''})"

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
                    self.flows[k].symbol == RMS), None)
        if rms is not None and all(g.scopes[c] == g.scopes[rms] for c in cs):
            return rms, "RMSNorm"
        return None

    def _behind_norm(self, j, skip):
        """The LayerNorm node (or the last node of an RMSNorm) of `skip` that the sublayer
        output j reads its input through (Pre-LN), else None."""
        g, stack, seen = self.g, [j], set()
        while stack:
            k = stack.pop()
            for p in g.parents(k):
                if p == skip:
                    continue
                if g.ops[p] == "layer_norm" and skip in g.parents(p):
                    return p
                if self.flows[p].symbol == RMS and self.flows[p].of == skip:
                    return p
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
