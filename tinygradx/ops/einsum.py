"""einsum as one graph node: the equation parsed with PyTorch's rules, forward by np.einsum,
backward by one more einsum per input.

`plan(equation, shapes)` reads the equation once per (equation, shapes) and turns it into a
plain numpy equation in which nothing is implicit: every `...` is spelled out as letters the
equation does not use (right-aligned, as broadcasting aligns dims), the implicit output is
written out (the dims of `...` first, then each subscript used exactly once, in ASCII order:
A-Z before a-z, as PyTorch), and a size-1 dim that broadcasts against a larger size of the
same subscript is squeezed away (its value is the same all along that subscript). What
remains has one size per subscript, so np.einsum never broadcasts and every gradient is an
einsum of the output gradient with the other inputs.
"""
from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from ..core.node import Function, OpError
from ..core.xp import ARRAYS, of

LETTERS = string.ascii_uppercase + string.ascii_lowercase   # PyTorch's label order
_PLANS = {}
_PATHS = {}


@dataclass(frozen=True)
class Plan:
    specs: tuple        # per input: its numpy subscripts after squeezing
    squeeze: tuple      # per input: the axes squeezed (size 1 against a larger size)
    out: str            # the output subscripts
    sizes: dict         # subscript -> size

    @property
    def equation(self):
        return ",".join(self.specs) + "->" + self.out


def _bad(equation, why):
    return OpError(f"einsum: {why} (equation {equation!r})")


def _split_terms(equation, n_operands):
    """The input terms and the output term (None when implicit), spaces removed, each
    character checked."""
    for i, ch in enumerate(equation):
        if ch not in LETTERS and ch not in ".,-> ":
            raise _bad(equation, f"invalid subscript {ch!r} at index {i} (subscripts must be "
                                 f"in [a-zA-Z], '...' for broadcast dims, ',' between inputs)")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _bad(equation, "'->' may appear only once")
    lhs, arrow, rhs = eq.partition("->")
    if "-" in lhs + rhs or ">" in lhs + rhs:
        raise _bad(equation, "'-' and '>' may appear only together, as '->'")
    if "," in rhs:
        raise _bad(equation, "the output (after '->') is one term, without ','")
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise _bad(equation, f"{len(terms)} input term{'s' * (len(terms) != 1)} but "
                             f"{n_operands} operand{'s' * (n_operands != 1)} given")
    return terms, (rhs if arrow else None)


def _labels(term, equation, what):
    """A term as a list of subscripts with None where its '...' stands."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise _bad(equation, f"{what} {term!r}: '.' must come as one '...'")
    head, ell, tail = term.partition("...")
    return list(head) + ([None] if ell else []) + list(tail)


def _expand(labels, ndim, ell, equation, k):
    """Replace the None of '...' by the last (ndim - named) letters of `ell`."""
    named = [c for c in labels if c is not None]
    if None not in labels:
        if len(named) != ndim:
            raise _bad(equation, f"operand {k} has {ndim} dims but its term "
                                 f"{''.join(named)!r} names {len(named)} (and no '...')")
        return named
    extra = ndim - len(named)
    if extra < 0:
        raise _bad(equation, f"operand {k} has {ndim} dims, fewer than the {len(named)} "
                             f"subscripts its term names besides '...'")
    i = labels.index(None)
    return named[:i] + list(ell[len(ell) - extra:] if extra else "") + named[i:]


def _sizes(specs, shapes, equation):
    """One size per subscript: equal within an input, equal or 1 across inputs."""
    sizes, first = {}, {}
    for k, (spec, shape) in enumerate(zip(specs, shapes, strict=True)):
        own = {}
        for c, n in zip(spec, shape, strict=True):
            if own.setdefault(c, n) != n:
                raise _bad(equation, f"subscript {c!r} is repeated in operand {k} with "
                                     f"different sizes {own[c]} and {n}")
        for c, n in own.items():
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c], first[c] = n, k
            elif n not in (1, seen):
                raise _bad(equation, f"subscript {c!r} has size {n} in operand {k} but "
                                     f"{seen} in operand {first[c]} (sizes must match or "
                                     f"one must be 1)")
    return sizes


def _output(rhs, specs, ell, has_ell, equation):
    if rhs is None:                  # implicit: '...' first, then the subscripts used once
        counts = {}
        for spec in specs:
            for c in spec:
                counts[c] = counts.get(c, 0) + 1
        once = sorted((c for c, n in counts.items() if n == 1 and c not in ell),
                      key=LETTERS.index)
        return (ell if has_ell else "") + "".join(once)
    out = _labels(rhs, equation, "the output")
    out = "".join(ell if c is None else c for c in out)
    used = set("".join(specs))
    for c in out:
        if out.count(c) > 1:
            raise _bad(equation, f"output subscript {c!r} appears more than once")
        if c not in used:
            raise _bad(equation, f"output subscript {c!r} appears in no input term")
    return out


def plan(equation, shapes):
    """The Plan of an equation for these input shapes (cached), or an OpError naming the
    problem: a bad character, a term that does not fit its operand's dims, a subscript whose
    sizes differ."""
    key = (equation, shapes)
    p = _PLANS.get(key)
    if p is not None:
        return p
    terms, rhs = _split_terms(equation, len(shapes))
    labels = [_labels(t, equation, f"input term {k}") for k, t in enumerate(terms)]
    used = {c for ls in labels for c in ls if c is not None} | set(rhs or "")
    n_ell = max([len(s) - (len(ls) - 1) for ls, s in zip(labels, shapes, strict=True)
                 if None in ls] + [0])
    free = [c for c in LETTERS if c not in used]
    if n_ell > len(free):
        raise _bad(equation, f"'...' covers {n_ell} dims but only {len(free)} subscripts "
                             f"are left of 52")
    ell = "".join(free[:n_ell])
    specs = ["".join(_expand(ls, len(s), ell, equation, k))
             for k, (ls, s) in enumerate(zip(labels, shapes, strict=True))]
    sizes = _sizes(specs, shapes, equation)
    has_ell = any(None in ls for ls in labels)
    out = _output(rhs, specs, ell, has_ell, equation)
    squeeze, kept = [], []
    for spec, shape in zip(specs, shapes, strict=True):
        axes = tuple(i for i, (c, n) in enumerate(zip(spec, shape, strict=True))
                     if n == 1 and sizes[c] != 1)
        squeeze.append(axes)
        kept.append("".join(c for i, c in enumerate(spec) if i not in axes))
    p = Plan(tuple(kept), tuple(squeeze), out, sizes)
    if len(_PLANS) > 256:
        _PLANS.clear()
    _PLANS[key] = p
    return p


def contract(equation, arrays):
    """np.einsum with a contraction order found once per (equation, shapes): BLAS for the
    pairwise products, the best order for three or more inputs."""
    if len(arrays) < 2:
        return np.asarray(np.einsum(equation, *arrays))
    key = (equation, tuple(a.shape for a in arrays))
    path = _PATHS.get(key)
    if path is None:
        path = np.einsum_path(equation, *arrays, optimize="greedy")[0]
        if len(_PATHS) > 256:
            _PATHS.clear()
        _PATHS[key] = path
    return np.asarray(np.einsum(equation, *arrays, optimize=path))


def _unique(spec):
    return "".join(dict.fromkeys(spec))


def _on_diagonal(values, spec, shape):
    """Zeros of `shape` with `values` (indexed by the distinct subscripts of spec) written
    where the repeated subscripts of spec are equal: the adjoint of taking a diagonal."""
    full = np.zeros(shape, values.dtype)
    uniq = _unique(spec)
    strides = [sum(full.strides[i] for i, c in enumerate(spec) if c == u) for u in uniq]
    view = np.lib.stride_tricks.as_strided(full, values.shape, strides)
    view[...] = values
    return full


class Einsum(Function):
    """out = einsum(equation, *inputs); the gradient of input k is einsum(g and the other
    inputs -> input k's subscripts), broadcast over the subscripts only input k has and
    written onto its diagonal where input k repeats a subscript."""
    op_name = "einsum"

    def forward(self, *arrays, plan):
        # input j is kept (as given: the formula squeezes it) only for the gradients of the
        # others; a kept input that needs no gradient is copied, as torch's einsum (its bmm
        # reads permuted copies), so that an in-place change of that constant is allowed
        self.plan, self.shapes = plan, [a.shape for a in arrays]
        xs = [np.squeeze(a, axis) if axis else a
              for a, axis in zip(arrays, plan.squeeze, strict=True)]
        self.squeezed = [x.shape for x in xs]
        needs = self.needs_input_grad
        self.xs = [None if not any(n for k, n in enumerate(needs) if k != j) else
                   a if needs[j] else x.copy() for j, (a, x) in enumerate(zip(arrays, xs,
                                                                       strict=True))]
        out = contract(plan.equation, xs)
        if len(xs) == 1 and out.dtype.kind in "iu" and set(plan.specs[0]) - set(plan.out):
            out = out.astype(np.int64)   # one input summed: torch.sum's rule, int64
        elif any(np.may_share_memory(out, a) for a in arrays):   # 'ij->ji' is a view
            out = out.copy()
        return out

    def _gradients(self):
        """For each input k that needs a gradient: (k, eq, others, broadcast shape or None,
        whether it repeats a subscript). Its gradient is einsum(eq, g, *others), broadcast
        over the subscripts only input k has, then written onto its diagonal."""
        p = self.plan
        for k, spec in enumerate(p.specs):
            if not self.needs_input_grad[k]:
                continue
            others = [j for j in range(len(p.specs)) if j != k]
            reach = set(p.out).union(*(p.specs[j] for j in others))
            uniq = _unique(spec)
            target = "".join(c for c in uniq if c in reach)
            eq = ",".join([p.out] + [p.specs[j] for j in others]) + "->" + target
            spread = None
            if len(target) < len(uniq):        # summed in forward by input k alone
                spread = ([p.sizes[c] if c in target else 1 for c in uniq],
                          [p.sizes[c] for c in uniq])
            yield k, eq, others, spread, len(uniq) < len(spec)

    def backward(self, g):
        xp = of(g)
        xs = [None if x is None else x.reshape(s)                     # squeezed
              for x, s in zip(self.xs, self.squeezed, strict=True)]
        grads = [None] * len(xs)
        for k, eq, others, spread, diagonal in self._gradients():
            gk = _contract(xp, eq, [g] + [xs[j] for j in others])
            if spread:
                gk = xp.broadcast_to(gk.reshape(tuple(spread[0])), tuple(spread[1]))
            if diagonal:
                gk = xp.run(OnDiagonal, gk, spec=self.plan.specs[k], shape=self.squeezed[k])
            grads[k] = gk.reshape(self.shapes[k])
        return tuple(grads)


class OnDiagonal(Function):
    """y = zeros with the values written where spec's repeated subscripts are equal (the
    adjoint of an einsum diagonal such as 'ii->i'); dvalues = that diagonal of g."""
    op_name = "on_diagonal"

    def forward(self, values, spec, shape):
        self.spec = spec
        return _on_diagonal(values, spec, shape)

    def backward(self, g):
        return _contract(of(g), f"{self.spec}->{_unique(self.spec)}", [g])


def _contract(xp, equation, operands):
    """`contract` on arrays; on Tensors the recorded Einsum node of the same equation."""
    if xp is ARRAYS:
        return contract(equation, operands)
    return Einsum.apply(*operands, plan=plan(equation, tuple(t.shape for t in operands)))

