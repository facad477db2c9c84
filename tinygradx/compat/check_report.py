"""The words of `--check` (check.py): a departure as a few aligned lines (where, which op, the
shapes, the two values, the difference against the tolerance), agreement as one line."""
from __future__ import annotations

import numpy as np

from .check_compare import at_largest, difference, excerpt, fmt_shape, relative, shapes, where
from .check_record import fmt_site


def _module(al, call, side="theirs"):
    """"blocks.0.mlp (MLP)" for a module call."""
    recs = al.theirs if side == "theirs" else al.mine
    cls = next((r.name for r in recs if r.kind == "call" and r.call == call), "")
    return f"{where(call)} ({cls})" if cls else where(call)


def _values(tol, mine, theirs):
    """The lines of the two values and their difference."""
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    lines = [f"  PyTorch     {excerpt(theirs)}", f"  tinygradx   {excerpt(mine)}"]
    if mine.shape != theirs.shape:
        lines.append(f"  shapes differ: PyTorch {fmt_shape(theirs.shape)}, tinygradx "
                     f"{fmt_shape(mine.shape)}")
        return lines
    if mine.dtype != theirs.dtype:
        lines.append(f"  dtypes differ: PyTorch {theirs.dtype}, tinygradx {mine.dtype}")
    rtol, atol = tol.of(theirs)
    both = np.ones(theirs.shape, bool)
    if theirs.dtype.kind in "fc" or mine.dtype.kind in "fc":
        x, y = mine.astype(np.float64), theirs.astype(np.float64)
        both = np.isfinite(x) & np.isfinite(y)
        if not np.array_equal(np.isfinite(x), np.isfinite(y)) or \
                not np.array_equal(x[~both], y[~both], equal_nan=True):
            lines.append(f"  not finite  PyTorch {_count(y)}, tinygradx {_count(x)} (of "
                         f"{y.size})")
    if both.any():
        diff, scale = difference(mine[both], theirs[both])
        rel = relative(diff, scale)
        lines.append(f"  max |diff|  {diff:.3g}, {rel:.3g} of max |PyTorch|"
                     f"{' where both are finite' if not both.all() else ''} (tolerance rtol "
                     f"{rtol:g}, atol {atol:g} for {theirs.dtype})")
        if diff > atol + rtol * scale:       # where the finite values themselves depart
            lines.append(f"  {at_largest(np.where(both, mine, 0), np.where(both, theirs, 0))}")
    return lines


def _count(a):
    """"18 NaN, 2 inf" of an array, or "none"."""
    nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    parts = [f"{nan} NaN"] * bool(nan) + [f"{inf} inf"] * bool(inf)
    return ", ".join(parts) or "none"


def _seed(names, tensor):
    name = names.get(id(tensor)) if tensor is not None else None
    return f"  seed name   {name}" if name else None


def forward_departure(script, al, dep, names, tol, my_rec):
    kind, i, j = dep
    n_ops = sum(1 for r in al.theirs if r.kind == "op")
    if kind == "call":                       # no op of the call explains it: the call itself
        r = al.theirs[i]
        m = al.calls.get(r.call)
        lines = [f"--check {script}: the forward pass departs at the output of "
                 f"{_module(al, r.call)} (everything before it agrees)",
                 f"  module      {_module(al, r.call)}"]
        if j is None:
            lines.append(f"  outputs     PyTorch {len(r.outs)}, tinygradx {len(m.outs)}")
            return "\n".join(lines)
        lines.append(f"  output      {j + 1} of {len(r.outs)}, shape "
                     f"{fmt_shape(r.values[j].shape)}")
        seed = _seed(names, m.outs[j])
        if seed:
            lines.append(seed)
        lines += _values(tol, m.values[j], r.values[j])
        return "\n".join(lines)
    r = al.theirs[i]
    k = al.place.get((i, j))
    mine = al.mine[k] if k is not None else None
    number = sum(1 for q in al.theirs[:i + 1] if q.kind == "op")
    lines = [f"--check {script}: the forward pass departs at op {number} of {n_ops} "
             f"(everything before it agrees)",
             f"  module      {_module(al, r.call)}"]
    op = f"  op          {r.name}: PyTorch {r.label}"
    op += f", tinygradx {mine.name}" if mine is not None else ", tinygradx: none in its place"
    if r.site:
        op += f", at {fmt_site(r.site)}"
    lines.append(op)
    lines.append(f"  shapes      {shapes(r)}")
    if mine is not None:
        seed = _seed(names, mine.outs[0])
        if seed:
            lines.append(seed)
        lines += _values(tol, mine.values[0], r.values[j])
    else:
        lines.append(f"  PyTorch     {excerpt(r.values[j])}")
    unseen = [q for q in _sources(al, i) if al.status.get(q) == "unseen"]
    if unseen:
        q = al.theirs[unseen[0][0]]
        lines.append(f"  note        an input comes from {q.label} at {fmt_site(q.site)}, whose "
                     f"result ({q.values[unseen[0][1]].dtype}) tinygradx makes without a graph "
                     f"node: not compared by itself")
    if r.random:
        lines.append("  note        this op draws random numbers, which differ between the two "
                     "libraries: only torch's functions (torch.rand, torch.randn_like, ...) are "
                     "replayed from PyTorch's draws, not Tensor methods")
    if my_rec.replay_misses:
        lines.append(f"  note        random draws not replayed: "
                     f"{', '.join(sorted(set(my_rec.replay_misses)))}")
    return "\n".join(lines)


def _sources(al, i):
    """(op index, output position) of their ops that made an input of their op i."""
    made = {}
    for k in range(i):
        for j, t in enumerate(al.theirs[k].outs):
            if t is not None:
                made[id(t)] = (k, j)
    return [made[id(x)] for x in al.theirs[i].ins if id(x) in made]


def backward_departure(script, al, grad, names, tol):
    order, t, m, g, h, diff, scale, what = grad
    n_ops = sum(1 for r in al.theirs if r.kind == "op")
    calls = sum(1 for r in al.theirs if r.kind == "call")
    users = al.consumers(m)
    lines = [f"--check {script}: the forward pass agrees ({n_ops} ops, {calls} module calls); "
             f"the gradients depart"]
    if users:
        k = users[0]
        u = al.mine[k]
        theirs_u = next((al.theirs[i] for (i, _), kk in sorted(al.place.items())
                         if kk == k), None)
        label = theirs_u.label if theirs_u is not None else u.name
        site = theirs_u.site if theirs_u is not None and theirs_u.site else u.site
        slot = next(n for n, x in enumerate(u.ins) if x is m)
        lines.append(f"  module      {_module(al, u.call, 'mine')}")
        op = f"  op          {u.name} (its backward): PyTorch {label}, tinygradx {u.name}"
        if site:
            op += f", at {fmt_site(site)}"
        lines.append(op)
        if len(users) > 1:
            others = ", ".join(f"{al.mine[x].name} in {where(al.mine[x].call)}"
                               for x in users[1:4])
            lines.append(f"  or          {others} (they take the same tensor)")
        lines.append(f"  shapes      {shapes(u)}")
        lines.append(f"  gradient    of its input {slot + 1} of {len(u.ins)}: "
                     f"{_what(al, what)}, shape {fmt_shape(tuple(t.shape))}")
    else:
        lines.append(f"  gradient    of {_what(al, what)}, shape {fmt_shape(tuple(t.shape))}")
    seed = _seed(names, m)
    if seed:
        lines.append(seed)
    lines += _values(tol, h, g)
    return "\n".join(lines)


def _what(al, what):
    if isinstance(what, str):
        return f"the parameter {what}"
    r = al.theirs[what]
    if r.kind == "call":
        return f"the output of {where(r.call)}"
    return f"the output of {r.name} in {where(r.call)}"


def agreement(script, al, params, terms, opts):
    n_ops = sum(1 for r in al.theirs if r.kind == "op")
    calls = sum(1 for r in al.theirs if r.kind == "call")
    dtype = "float64" if opts.float64 else (terms[0][1].dtype.name if terms else "")
    rel, what = al.largest
    grads = f" and on the gradients of {len(params)} parameters" if terms and params else \
        (" (no output needs a gradient: no backward)" if not terms else "")
    largest = f"; largest difference {rel:.2g} (relative), {what}" if what else ""
    return (f"--check {script}: PyTorch and tinygradx agree on {n_ops} ops in {calls} module "
            f"calls{grads} ({dtype}){largest}")
