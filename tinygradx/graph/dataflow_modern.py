"""The rows of the LLaMA-style blocks in `tinygradx.graph.dataflow`: RMSNorm, rotary position
embeddings (RoPE), grouped-query attention and the SwiGLU feed-forward network.

Each is found from the ops and the symbols their inputs carry, as the attention rows are (an
RMSNorm is the chain x·x, mean, + eps, rsqrt, x·(...), ·g, whichever module runs it):

    RMSNorm(x) = x/√(mean(x²) + ε)·g              the chain's last row; each step has its part
    RoPE(Q) = Q·cos(mθ) + rotate_half(Q)·sin(mθ)  rotate_half(Q) = [−Q₂, Q₁]: the pairs
                                                  (q_i, q_{i+d_k/2}) rotated by mθ
    K repeated for the h/h_kv query heads of each group (grouped-query attention)
    FFN(X) = (SiLU(X·W_1) ⊙ X·W_3)·W_2             SwiGLU

`ModernRules` holds the methods (DataFlow inherits them), the `*_test` functions decide which
rule a node takes (dataflow.RULES lists them in order).
"""
from __future__ import annotations

# the symbols of the RMSNorm chain, step by step
SQ, MEAN_SQ, MEAN_EPS, INV_RMS, NORMED, RMS = (
    "x²", "mean(x²)", "mean(x²) + ε", "1/√(mean(x²) + ε)", "x/√(mean(x²) + ε)", "RMSNorm(x)")
CHAIN = (SQ, MEAN_SQ, MEAN_EPS, INV_RMS, NORMED)
# what the rows of these formulas are called in the graph labels ("" keeps a step unnamed)
SEED = {SQ: "", MEAN_SQ: "", MEAN_EPS: "", INV_RMS: "", NORMED: "", RMS: "RMSNorm(x)",
        "σ(H_ff)": "", "SiLU(H_ff)": "SiLU(H_ff)", "H_up": "H_up", "SwiGLU": "SwiGLU"}
_HALVES = {"₁": "first", "₂": "second"}


# -- which rule a node takes ------------------------------------------------------------------

def square_test(f, x):
    return f.kinds == ["op", "op"] and f.same_inputs


def rms_step_test(f, x):
    """The later steps of the RMSNorm chain (the first input carries the previous step)."""
    if f.op == "mean":
        return x == SQ
    if f.op == "add":
        return x == MEAN_SQ and f.kinds[1:] == ["const"]
    if f.op == "rsqrt":
        return x == MEAN_EPS
    return f.op == "mul" and (f.syms[1:] == [INV_RMS] or (x == NORMED and f.kinds[1] != "op"))


def rope_half_test(f, x):
    """x[..., :d/2] or x[..., d/2:] of Q or K (the halves rotate_half swaps)."""
    out, inp = f.out_shape, f.in_shapes[0]
    return x in ("Q", "K") and len(out) == len(inp) and inp[:-1] == out[:-1] and \
        inp and 2 * out[-1] == inp[-1] and inp[-1] > 0


def rope_test(f, x):
    """neg of a half, cat of the halves, the products with the cos/sin tables and their sum."""
    if f.op == "neg":
        return x[-1:] == "₂"
    if f.op == "cat":
        return len(f.syms) == 2 and f.syms[0][:1] == "−" and f.syms[1][-1:] == "₁"
    if f.op == "mul":
        return len(f.kinds) == 2 and f.kinds[1] in ("input", "const") and \
            len(f.in_shapes[1]) >= 2 and (x in ("Q", "K") or x.startswith("rotate_half"))
    return f.op == "add" and x.endswith("·cos(mθ)") and f.syms[1:2] and \
        f.syms[1].endswith("·sin(mθ)")


def kv_repeat_test(f, x):
    return x in ("K", "V")


def swiglu_test(f, x):
    """SiLU(H_ff) = H_ff·σ(H_ff), then SiLU(X·W_1) ⊙ X·W_3."""
    return f.syms == ["H_ff", "σ(H_ff)"] or (f.syms == ["SiLU(H_ff)", "H_up"])


class ModernRules:
    """The methods of the rules above (DataFlow inherits them)."""

    def _rms_norm(self, i, f, x, syms):
        ps = self.g.parents(i)
        if f.op == "mul" and f.same_inputs:
            f.symbol, f.formula, f.of, f.show = SQ, SQ, ps[0], [0]
            return
        src = self.flows[ps[0]].of
        if f.op == "mean":
            f.symbol, f.formula = MEAN_SQ, MEAN_SQ
        elif f.op == "add":
            f.symbol, f.formula = MEAN_EPS, MEAN_EPS
        elif f.op == "rsqrt":
            f.symbol, f.formula = INV_RMS, INV_RMS
        elif syms[1:] == [INV_RMS]:
            src = self.flows[ps[1]].of
            f.symbol, f.formula = NORMED, NORMED
        else:
            f.symbol, f.formula = RMS, f"{RMS} = {NORMED}·g"
            f.show = [0]
        f.of = src

    def _rope_half(self, i, f, x, syms):
        index = getattr(self.g.ctxs[i], "index", None)
        last = index[-1] if isinstance(index, tuple) and index else index
        second = isinstance(last, slice) and (last.start or 0) > 0
        sub = "₂" if second else "₁"
        f.symbol, f.hint = x + sub, "d_k/2"
        part = "[..., d_k/2:]" if second else "[..., :d_k/2]"
        f.formula = f"{x}{sub} = {x}{part}  ({_HALVES[sub]} of each rotated pair)"

    def _rope(self, i, f, x, syms):
        if f.op == "neg":
            f.symbol = f.formula = "−" + x
            f.hint = "d_k/2"
        elif f.op == "cat":
            q = syms[1][:-1]
            f.symbol, f.hint = f"rotate_half({q})", "d_k"
            f.formula = f"{f.symbol} = [{syms[0]}, {syms[1]}]  (pairs (x_i, x_{{i+d_k/2}}))"
        elif f.op == "mul":
            trig = "cos" if x in ("Q", "K") else "sin"
            f.symbol = f.formula = f"{x}·{trig}(mθ)"
            f.hint, f.show = "d_k", [0, 1]
        else:
            q = x.split("·")[0]
            f.symbol, f.seed, f.hint = q, f"RoPE({q})", "d_k"
            f.formula = f"RoPE({q}) = {x} + {syms[1]}  (rotary position embedding)"

    def _kv_repeat(self, i, f, x, syms):
        f.hint = "d_v" if x == "V" else "d_k"
        f.formula = f"{x} repeated: each of h_kv heads serves h/h_kv query heads  " \
                    f"(grouped-query attention)"

    def _swiglu(self, i, f, x, syms):
        f.hint = "d_ff"
        if syms[0] == "H_ff":
            f.symbol, f.formula = "SiLU(H_ff)", "SiLU(H_ff) = H_ff·σ(H_ff)"
        else:
            f.symbol, f.formula = "SwiGLU", "SwiGLU(X) = SiLU(X·W_1) ⊙ X·W_3"
