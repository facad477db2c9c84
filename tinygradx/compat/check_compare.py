"""The comparison of `--check` (check.py): two recorded forward passes (check_record.py) set
side by side, the first departure found, and the report written.

Alignment. Module calls pair by path and count (`blocks.0.attn`, its first call). Ops pair by
value: each PyTorch op's output is looked for among the tinygradx values of the same module
call, of its shape, near where the last one was found (the ops of the two libraries are not one
to one: `F.multi_head_attention_forward` is one op there and a dozen here, `x.contiguous()`
none here), then anywhere. An op that only passes a value through (`.contiguous()`,
`.detach()`, `.data`) and an op without a tensor input (`torch.zeros`) are not compared.

Forward. The first module call (in the order calls end, so the innermost first) whose outputs
depart holds the departure; within it, the first PyTorch op whose output has no tinygradx
value is the op named. Backward: every paired tensor's gradient is compared (the outputs of
module calls and ops, the parameters); the tensor made last whose gradient departs is the
input of an op whose own output gradient agrees, so that op's backward is named.

A difference departs when max |a - b| > atol + rtol * max |b| (b PyTorch's, over the tensor:
small elements of a large tensor are held to the tensor's scale), NaN and inf where the other
has them.
"""
from __future__ import annotations

import math

import numpy as np

from .check_record import fmt_site

# (rtol, atol) by dtype
TOLERANCES = {"float64": (1e-10, 1e-13), "float32": (1e-5, 1e-7), "float16": (1e-3, 1e-4)}
INPLACE_DUNDERS = ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                   "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__imatmul__",
                   "__setitem__")
# ops that make a copy of their input, or the input itself: nothing to compare
PASS_THROUGH = ("contiguous", "clone", "detach", "data", "to", "float", "double", "half",
                "type", "type_as", "cpu", "requires_grad_", "detach_", "view_as", "reshape_as")


def tolerance(dtype, rtol=None, atol=None):
    r, a = TOLERANCES.get(np.dtype(dtype).name, (0.0, 0.0))
    return (r if rtol is None else rtol), (a if atol is None else atol)


def difference(a, b):
    """(max |a - b|, max |b|) of two arrays; (inf, ...) when their shapes, their NaN or inf
    places, or (not floating point) any element differ."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return math.inf, 0.0
    if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
        same = np.array_equal(a, b)
        return (0.0 if same else math.inf), float(np.abs(b).max()) if b.size else 0.0
    x, y = a.astype(np.float64), b.astype(np.float64)
    fx, fy = np.isfinite(x), np.isfinite(y)
    if not np.array_equal(fx, fy) or not np.array_equal(np.isnan(x), np.isnan(y)) or \
            not np.array_equal(x[~fx & ~np.isnan(x)], y[~fy & ~np.isnan(y)]):
        return math.inf, 0.0
    if not fx.any():
        return 0.0, 0.0
    return float(np.abs(x[fx] - y[fy]).max()), float(np.abs(y[fy]).max())


def relative(diff, scale):
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)


class Tolerance:
    """(rtol, atol) per dtype, the flags' values where given."""

    def __init__(self, rtol=None, atol=None):
        self.rtol, self.atol = rtol, atol

    def of(self, array):
        return tolerance(np.asarray(array).dtype, self.rtol, self.atol)

    def departs(self, a, b, floor=0.0):
        """(departs, max |a - b|, max |b|): a (tinygradx's) against b (PyTorch's); `floor`
        raises the scale the relative tolerance is taken of. Another dtype departs."""
        a, b = np.asarray(a), np.asarray(b)
        diff, scale = difference(a, b)
        if a.dtype != b.dtype:
            return True, diff, scale
        rtol, atol = self.of(b)
        return diff > atol + rtol * max(scale, floor), diff, scale


class Alignment:
    """The pairing of PyTorch's records (`theirs`) with tinygradx's (`mine`)."""

    def __init__(self, theirs, mine, tol):
        self.theirs, self.mine, self.tol = theirs, mine, tol
        self.by_site, self.by_call, self.pointer, self.last = {}, {}, {}, {}
        for k, r in enumerate(mine):
            for t, a in zip(r.outs, r.values, strict=True):
                if r.kind == "op":
                    self.by_site.setdefault((r.call, r.site), []).append((k, t, a))
                    self.by_call.setdefault(r.call, []).append((k, t, a))
                else:                       # a module's output is a value of its caller
                    self.by_call.setdefault(r.parent, []).append((k, t, a))
            for t, a in r.extra:
                self.by_call.setdefault(r.call, []).append((k, t, a))
        self.calls = {r.call: r for r in mine if r.kind == "call"}
        self.status = {}        # (i, j) -> matched, near, passed, source, unseen or None
        self.place = {}         # (i, j) -> my record in the place of their output j of op i
        self.pairs = []         # (order, their tensor, my tensor, their index, my index or None)
        self.largest = (0.0, "")
        for i, r in enumerate(theirs):
            if r.kind == "op":
                self._match(i, r)
            else:
                self._pair_call(i, r)

    def note(self, diff, scale, what):
        rel = relative(diff, scale)
        if math.isfinite(rel) and rel > self.largest[0]:
            self.largest = (rel, what)

    def _match(self, i, r):
        """Find each output of their op i among my values made at the same line of the user's
        code in the same module call, in order; else anywhere in that call."""
        key = (r.call, r.site)
        bucket = self.by_site.get(key, [])
        start = furthest = self.pointer.get(key, 0)
        for j, (t, a) in enumerate(zip(r.outs, r.values, strict=True)):
            if r.factory:
                self.status[i, j] = "source"
                continue
            if passes(r, j):
                self.status[i, j] = "passed"
                continue
            hit = None
            for n in range(start, len(bucket)):
                k, mt, ma = bucket[n]
                if ma.shape == a.shape:
                    bad, diff, scale = self.tol.departs(ma, a)
                    if not bad:
                        hit = n, k, mt, diff, scale
                        break
            if hit is not None:
                n, k, mt, diff, scale = hit
                furthest = max(furthest, n + 1)
                self.status[i, j], self.place[i, j] = "matched", k
                self.last[r.call] = max(self.last.get(r.call, -1), k)
                self.note(diff, scale, f"{r.name} at {fmt_site(r.site)}" if r.site else
                          f"{r.name} in {where(r.call)}")
                if not inplace(r) and t is not None and mt is not None:
                    self.pairs.append((i, t, mt, i, k))
                continue
            in_call = self.by_call.get(r.call, ())
            near = [k for k, _, ma in in_call
                    if ma.shape == a.shape and not self.tol.departs(ma, a)[0]]
            # a comparison or an integer op of PyTorch's may have no node here (tinygradx makes
            # masks and indices without a graph): unseen, its uses are compared
            self.status[i, j] = "near" if near else ("unseen" if a.dtype.kind in "biu"
                                                     else None)
            # in its place: the next of my values at that line, else in that call, after the
            # last one matched; of its shape where there is one
            after = self.last.get(r.call, -1)
            rest = bucket[start:] or [e for e in in_call if e[0] > after and
                                      self.mine[e[0]].kind == "op"]
            same = [k for k, _, ma in rest if ma.shape == a.shape]
            self.place[i, j] = near[0] if near else (same[0] if same else
                                                     (rest[0][0] if rest else None))
        self.pointer[key] = furthest

    def _pair_call(self, i, r):
        m = self.calls.get(r.call)
        if m is None or len(m.outs) != len(r.outs):
            return
        for t, mt in zip(r.outs, m.outs, strict=True):
            if t is not None and mt is not None:
                self.pairs.append((i, t, mt, i, None))

    # -- the forward ---------------------------------------------------------------------
    def forward_departure(self):
        """The first departure of the forward pass, in the order things happened: ("op", i, j)
        for output j of their op i that has no tinygradx value, ("call", i, j) for output j
        of their module call i (j None: another number of outputs), or None.

        An op counts only inside a module call whose outputs depart (where the departure
        shows); a call counts when none of its ops explains it (a layer of PyTorch's own, whose
        inside is one op or none here)."""
        departing = {}
        for r in self.theirs:
            if r.kind != "call" or r.call not in self.calls:
                continue
            m = self.calls[r.call]
            if len(m.outs) != len(r.outs):
                departing[r.call] = None
                continue
            for j, (a, b) in enumerate(zip(m.values, r.values, strict=True)):
                bad, diff, scale = self.tol.departs(a, b)
                self.note(diff, scale, f"the output of {where(r.call)}")
                if bad:
                    departing.setdefault(r.call, j)
        for i, r in enumerate(self.theirs):
            if r.kind == "op" and r.call in departing:
                for j in range(len(r.outs)):
                    if (i, j) in self.status and self.status[i, j] is None:
                        return "op", i, j
            elif r.kind == "call" and r.call in departing:
                return "call", i, departing[r.call]
        return None

    # -- the backward --------------------------------------------------------------------
    def gradient_departure(self, grads_of, params, current):
        """The departing pair made last: (order, their tensor, my tensor, their grad, my grad,
        diff, scale, their record index or a parameter's name), or None.

        `grads_of(t, side)` is t's gradient as an array (None without one), `current(t, side)`
        its value now (a tensor changed in place after it was recorded is skipped: its
        gradient is its last version's); `params` are (name, theirs, mine). A gradient is held
        to rtol of its own scale and of the largest gradient in the model: the rounding of
        sums leaves about that much in a gradient that is zero in exact arithmetic (a bias
        before a batch norm, a key's bias in attention)."""
        cands = [(-1, t, m, name) for name, t, m in params]
        values = {}
        for r in (self.theirs, self.mine):
            for rec in r:
                for t, a in zip(rec.outs, rec.values, strict=True):
                    values[id(t)] = a
        for order, t, m, i, _ in self.pairs:
            a, b = values.get(id(t)), values.get(id(m))
            if a is not None and not np.array_equal(current(t, "theirs"), a, equal_nan=True):
                continue
            if b is not None and not np.array_equal(current(m, "mine"), b, equal_nan=True):
                continue
            cands.append((order, t, m, i))
        grads = []
        for order, t, m, what in cands:
            g, h = grads_of(t, "theirs"), grads_of(m, "mine")
            if g is None and h is None:
                continue
            shape = tuple(t.shape)
            g = np.zeros(shape, h.dtype) if g is None else g
            h = np.zeros(shape, g.dtype) if h is None else h
            grads.append((order, t, m, g, h, what))
        floor = max((float(np.abs(g[np.isfinite(g)]).max(initial=0)) for *_, g, _, _ in grads),
                    default=0.0)
        found = None
        for order, t, m, g, h, what in sorted(grads, key=lambda c: c[0]):
            bad, diff, scale = self.tol.departs(h, g, floor)
            self.note(diff, max(scale, floor), f"the gradient of {describe(self, what)}")
            if bad:
                found = (order, t, m, g, h, diff, scale, what)
        return found

    def consumers(self, tensor):
        """My op records that took `tensor` as an input."""
        return [k for k, r in enumerate(self.mine)
                if r.kind == "op" and any(x is tensor for x in r.ins)]


def inplace(r):
    short = r.label.rsplit(".", 1)[-1]
    return (short.endswith("_") and not short.endswith("__")) or short in INPLACE_DUNDERS


def passes(r, j):
    """Whether output j of op record r only passes an input through: the input itself (not
    changed in place), or a copy of it (`.contiguous()`, `.clone()`, `.data`, `.float()` of a
    float tensor), which tinygradx may not make."""
    t, a = r.outs[j], r.values[j]
    for x in r.ins:
        if x is t:
            return not inplace(r)
    return r.name in PASS_THROUGH and any(tuple(s) == a.shape for s in r.in_shapes)


def where(call):
    path = call[0] if call else ""
    name = path or "the model"
    return name if not call or call[1] == 0 else f"{name} (call {call[1] + 1})"


def describe(al, what):
    if isinstance(what, str):
        return f"parameter {what}"
    r = al.theirs[what]
    if r.kind == "call":
        return f"the output of {where(r.call)}"
    return f"{r.name} in {where(r.call)}"


def shapes(r):
    ins = ", ".join(fmt_shape(s) for s in r.in_shapes) or "()"
    outs = ", ".join(fmt_shape(v.shape) for v in r.values)
    return f"{ins} -> {outs}"


def fmt_shape(s):
    return "(" + ", ".join(str(n) for n in s) + ("," if len(s) == 1 else "") + ")"


def excerpt(a, n=4):
    """The first n values of an array, flattened, short."""
    a = np.asarray(a)
    flat = a.reshape(-1)[:n]
    if a.dtype.kind in "fc":
        items = [f"{float(v):.6g}" for v in flat]
    else:
        items = [str(v) for v in flat.tolist()]
    return "[" + ", ".join(items) + (", ...]" if a.size > n else "]")


def at_largest(a, b):
    """"at [i, j]: PyTorch x, tinygradx y" where the two differ most (same shape)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        return ""
    d = np.abs(np.nan_to_num(a - b, nan=np.inf))
    idx = np.unravel_index(int(np.argmax(d)), a.shape)
    pos = "[" + ", ".join(str(int(i)) for i in idx) + "]"
    return f"largest at {pos}: PyTorch {b[idx]:.8g}, tinygradx {a[idx]:.8g}"
