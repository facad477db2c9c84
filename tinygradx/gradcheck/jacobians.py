"""The machinery every derivative-as-function of tinygradx.func shares: the checks of inputs
and cotangents, how an input enters the differentiated call and how a result leaves it, the
vector-Jacobian product (`vjp_of`, one `tgx.grad`), and Jacobians built from it by rows (one vjp
per output element) or by columns (the double vjp: J^T u is recorded with create_graph=True and,
being linear in u, its derivative in u along t is J t).

The torch.func transforms (transforms.py), torch.autograd.functional's functions
(autograd_functional.py) and `functional_call` all stand on these; `tinygradx.func` re-exports
the public ones.
"""
from __future__ import annotations

import numpy as np

from ..autograd import backprop
from ..autograd import enable_grad
from ..tensor.creation import stack
from ..ops.movement import Reshape
from ..tensor import Tensor


# --------------------------------------------------------------------------------------------
# checks and plumbing shared by every transform
# --------------------------------------------------------------------------------------------

def check_tensor(x, fname, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}: {what} is a {type(x).__name__}, expected a Tensor")
    if x.dtype.kind != "f":
        raise TypeError(f"{fname}: {what} has dtype {x.dtype}; only floating-point Tensors can "
                        f"be differentiated")
    return x


def as_tuple(xs, fname, what):
    """(was a tuple, the Tensors as a tuple): one Tensor or a tuple/list of them."""
    if isinstance(xs, Tensor):
        return False, (check_tensor(xs, fname, what),)
    if not isinstance(xs, (tuple, list)) or not xs:
        raise TypeError(f"{fname}: {what} must be a Tensor or a non-empty tuple of Tensors, got "
                        f"{type(xs).__name__}")
    return True, tuple(check_tensor(x, fname, f"{what}[{i}]") for i, x in enumerate(xs))


def check_like(vs, xs, fname, what, of):
    """vs must match xs one to one in shape; a dtype that differs is cast (as PyTorch's engine
    casts a seed gradient)."""
    if len(vs) != len(xs):
        raise ValueError(f"{fname}: {len(vs)} {what} for {len(xs)} {of}")
    out = []
    for i, (v, x) in enumerate(zip(vs, xs, strict=True)):
        if v.shape != x.shape:
            raise ValueError(f"{fname}: {what}[{i}] has shape {v.shape} but {of}[{i}] has "
                             f"shape {x.shape}; they must match")
        out.append(v if v.dtype == x.dtype else v.to(x.dtype))
    return tuple(out)


def enter(x, connect):
    """x as an input of the differentiated call: a new node after x when x's own graph must be
    kept (the results then reach x too), else a detached alias that requires grad."""
    if connect and x.requires_grad:
        return Reshape.apply(x, shape=x.shape)
    return x.detach().requires_grad_(True)


def outputs_of(out, fname):
    """(was a tuple, the Tensors as a tuple) of what the user's function returned."""
    if isinstance(out, Tensor):
        return False, (out,)
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return True, tuple(out)
    raise TypeError(f"{fname}: the function must return a Tensor or a tuple of Tensors, got "
                    f"{type(out).__name__}")



def release(x, keep):
    """A result handed back: itself when it keeps the caller's graph, else detached (Tensors
    inside tuples, lists and dicts too, for `aux`)."""
    if keep:
        return x
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(release(v, keep) for v in x)
    if isinstance(x, dict):
        return {k: release(v, keep) for k, v in x.items()}
    return x


def vjp_of(outs, xs, cots, create_graph, retain_graph=True):
    """sum_k <cots[k], outs[k]> differentiated w.r.t. each of xs; None where an x is unused."""
    live = [(o, c) for o, c in zip(outs, cots, strict=True) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(xs)
    with enable_grad():
        return backprop.grad([o for o, _ in live], list(xs), [c for _, c in live],
                             retain_graph=retain_graph, create_graph=create_graph,
                             allow_unused=True)


def zeros_if_none(gs, xs):
    return tuple(Tensor(np.zeros(x.shape, x.dtype)) if g is None else g
                 for g, x in zip(gs, xs, strict=True))


def _one_hot(shape, dtype, j):
    e = np.zeros(shape, dtype)
    e.reshape(-1)[j] = 1
    return Tensor(e)


def _stack_rows(rows, shape, create_graph):
    """Tensors (one per output element) stacked to one Tensor of `shape`."""
    if create_graph:
        return stack(rows).reshape(shape)
    return Tensor(np.stack([r.detach().numpy() for r in rows]).reshape(shape))



def named(wrapper, func, fname):
    wrapper.__name__ = f"{fname}({getattr(func, '__name__', 'f')})"
    wrapper.__doc__ = f"{fname} of {getattr(func, '__name__', 'a function')} (tinygradx.func)"
    return wrapper


# --------------------------------------------------------------------------------------------
# Jacobians by rows (reverse mode) and by columns (the double vjp)
# --------------------------------------------------------------------------------------------

def jac_rows(outs, xs, create_graph):
    """[[d outs[k] / d xs[i]]]: one backward per output element; None where unused."""
    result = []
    for o in outs:
        rows = [[] for _ in xs]
        for j in range(o.numel() if o.requires_grad else 0):
            gs = vjp_of([o], xs, [_one_hot(o.shape, o.dtype, j)], create_graph)
            for i, g in enumerate(gs):
                if g is not None:
                    rows[i].append(g)
        result.append([_stack_rows(rows[i], o.shape + x.shape, create_graph) if rows[i] else None
                       for i, x in enumerate(xs)])
    return result


def linear_vjp(outs, xs):
    """(dummy cotangents u, the recorded J^T u per x): J^T u is linear in u, so its derivative
    in u along a tangent t is J t. u is None for an output that needs no gradient."""
    us = [None if o is None or not o.requires_grad else
          Tensor(np.zeros(o.shape, o.dtype), requires_grad=True) for o in outs]
    return us, vjp_of(outs, xs, us, create_graph=True)


def jvp_from(us, gs, tangents, create_graph):
    """J t per output from the recorded J^T u (linear_vjp); None where J t is zero."""
    pairs = [(g, t) for g, t in zip(gs, tangents, strict=True)
             if g is not None and g.requires_grad]
    live = [u for u in us if u is not None]
    if not pairs or not live:
        return (None,) * len(us)
    with enable_grad():
        res = iter(backprop.grad([g for g, _ in pairs], live, [t for _, t in pairs],
                                 retain_graph=True, create_graph=create_graph,
                                 allow_unused=True))
    return tuple(None if u is None else next(res) for u in us)


def jac_columns(outs, xs, create_graph):
    """[[d outs[k] / d xs[i]]] one input element at a time (a jvp per element)."""
    us, gs = linear_vjp(outs, xs)
    cols = [[[] for _ in xs] for _ in outs]
    for i, x in enumerate(xs):
        for e in range(x.numel()):
            tangents = [_one_hot(x.shape, x.dtype, e) if m == i else Tensor(np.zeros(y.shape,
                                                                                   y.dtype))
                        for m, y in enumerate(xs)]
            jv = jvp_from(us, gs, tangents, create_graph)
            for k, o in enumerate(outs):
                cols[k][i].append(jv[k] if jv[k] is not None else
                                  Tensor(np.zeros(o.shape, o.dtype)))
    result = []
    for k, o in enumerate(outs):
        per_x = []
        for i, x in enumerate(xs):
            used = gs[i] is not None and gs[i].requires_grad
            if not used:
                per_x.append(None)
            elif create_graph:
                per_x.append(stack(cols[k][i], dim=-1).reshape(o.shape + x.shape))
            else:
                per_x.append(Tensor(np.stack([c.detach().numpy() for c in cols[k][i]], axis=-1)
                                    .reshape(o.shape + x.shape)))
        result.append(per_x)
    return result


def nest(table, outs, xs, out_tuple, in_tuple):
    """A Jacobian table [[J_ki]] shaped as PyTorch returns it: a Tensor, a tuple per output or
    per input, or a tuple (per output) of tuples (per input); zeros where None."""
    table = [[Tensor(np.zeros(o.shape + x.shape, o.dtype)) if j is None else j
              for j, x in zip(row, xs, strict=True)] for row, o in zip(table, outs, strict=True)]
    rows = [tuple(row) if in_tuple else row[0] for row in table]
    return tuple(rows) if out_tuple else rows[0]

