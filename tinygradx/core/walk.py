"""The backward walk: `toposort` and `run_backward`, one loop for training and create_graph.

The path of one op (see docs/design.md):

    a * b  ->  Tensor.__mul__  ->  Mul.apply(a, b)   (tensor.py, elementwise.py)
           ->  Function.apply: ctx = Mul(); out = ctx.forward(a._data, b._data)  (numpy arrays)
           ->  Tensor(out) with out._ctx = ctx, ctx.parents = (a, b)  (only if a grad is needed;
               the result takes a's and b's class, tensor_base.py: no module here names Tensor)
    loss.backward()  ->  toposort(loss)  ->  for each node, newest first:
           g = grads.pop(node); in_grads = node._ctx.backward(g); unbroadcast each to its
           parent's shape; grads.add(parent, ...) sums it (gradbuf.Grads); a leaf's g goes
           into leaf.grad; free the node's saved arrays. (The speed layer installs a carrier
           of its own, fastpath.walk_carrier: the same loop with faster array versions.)

Invariants: a node records its parents as a tuple (order and multiplicity kept, so `x * x` has the
parent x twice); there is one walk, `run_backward`, and its carrier says what the gradients are:
numpy arrays in training (`ArrayWalk`: nothing is recorded), Tensors under create_graph=True
(`backprop.GraphWalk`: every step is an op, so the gradient has a graph of its own); each op's
one `backward` runs on either; broadcasting is undone in exactly one place (`unbroadcast`,
called by the walk on every edge); a node never refers to its own output tensor, so the graph
has no reference cycles and is freed by reference counting alone.
"""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

from .fastpath import walk_carrier
from .gradbuf import Grads
from .versions import resolve_parents
from .tensor_base import TensorBase
from .node import STATE, OpError, unbroadcast


# --------------------------------------------------------------------------------------------
# the backward walk
# --------------------------------------------------------------------------------------------

def toposort(roots):
    """Every tensor that needs a gradient behind `roots`, each after all of its consumers.

    Iterative (an explicit stack instead of recursion) so a chain of 100,000 ops is fine.
    """
    order, seen = [], set()
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        ctx = t._ctx
        if ctx is None:
            continue
        if ctx.parents is None:
            raise RuntimeError(
                f"backward: trying to backward through the graph a second time: the "
                f"{ctx.name()} node{' in ' + ctx.scope if ctx.scope else ''} was freed by an "
                f"earlier backward(). Pass retain_graph=True to the first backward() if you "
                f"need to walk the graph again.")
        if t._version[0] != ctx.out_version or ctx.versions != tuple(
                [p._version[0] for p in ctx.parents]):
            resolve_parents(t, ctx)               # something was changed in place since
        for p, need in zip(ctx.parents, ctx.needs_input_grad, strict=True):
            if need and id(p) not in seen:
                stack.append((p, False))
    order.reverse()
    return order


def toposort_to(roots, inputs):
    """(the tensors of toposort(roots) on a path to one of `inputs`, ids of the inputs whose own
    producer must not run): what `tgx.grad` walks. As in PyTorch, nothing behind an input is
    computed or freed unless another input lies behind it."""
    want = {id(x) for x in inputs}
    order, reach = toposort(roots), set()      # reach: an input lies strictly behind
    for t in reversed(order):                  # parents before their consumers
        ctx = t._ctx
        if ctx is not None and any(need and (id(p) in want or id(p) in reach) for p, need in
                                   zip(ctx.parents, ctx.needs_input_grad, strict=True)):
            reach.add(id(t))
    kept = [t for t in order if id(t) in reach or id(t) in want]
    return kept, {id(t) for t in kept if id(t) not in reach}


def run_backward(roots, root_grads, retain_graph=False, store=None, inputs=None,
                 carrier=None, on_edge=None):
    """Propagate gradients from `roots` to every tensor behind them that needs one (with
    `inputs`, only along the paths to them: `toposort_to`). Each complete gradient goes to
    `store(t, g, owned)` (default: leaves and retain_grad tensors accumulate into `.grad`).
    `carrier`: arrays (ArrayWalk, training) or Tensors (backprop.GraphWalk, create_graph).
    `on_edge(ctx, slot, parent, grad)` sees each edge's gradient as it is handed on (see
    _node_backward): the pictures' gradient norms, graph.edge_grads."""
    carrier = carrier or walk_carrier(ArrayWalk)
    store = store or carrier.store
    node_backward = carrier.node_backward
    if STATE.backward_observers:
        node_backward = _timed(node_backward)
    grads = carrier.new_grads()
    with carrier.recording():
        for r, g in zip(roots, root_grads, strict=True):
            check_root(r)
            grads.add(r, g)
        order, stop = (toposort(roots), ()) if inputs is None else toposort_to(roots, inputs)
        for t in order:
            g, owned = grads.pop(t)
            if g is None:
                continue  # no gradient reached this tensor (e.g. every path returned None)
            if t._hooks:
                g, owned = carrier.run_hooks(t, g), False   # a hook may keep what it was shown
            store(t, g, owned)
            if t._ctx is not None and id(t) not in stop:
                node_backward(t._ctx, g, grads, t, on_edge)
                if not retain_graph:
                    t._ctx.free()


def _node_backward(ctx, g, grads, t=None, on_edge=None):
    """Call one node's derivative with its output's gradient and hand the results to `grads`
    (and to `on_edge`, when run_backward was given one: each edge's gradient unbroadcast, in
    the parent's dtype)."""
    in_grads = grads_per_input(ctx, ctx.backward(g), "backward")
    for i, (p, ig, need) in enumerate(zip(ctx.parents, in_grads, ctx.needs_input_grad,
                                          strict=True)):
        if ig is not None and need:
            new = edge_grad(ctx, i, ig, p)
            if on_edge is not None:
                on_edge(ctx, i, p, new)
            grads.add(p, new)


def edge_grad(ctx, i, ig, p):
    """Input i's gradient `ig` summed back to its parent's shape (`unbroadcast`) and cast to
    its dtype; a gradient that cannot belong to the input is the op's bug, named."""
    try:
        return cast_grad(unbroadcast(ig, p._data.shape), p, ctx)
    except (OpError, AttributeError):
        raise bad_grad(ctx, "backward", i, ig, p) from None


def bad_grad(ctx, rule, i, ig, p):
    """The error for a gradient that cannot belong to input i of ctx: the op's bug, named."""
    what = f"shape {tuple(ig.shape)}" if hasattr(ig, "shape") else f"a {type(ig).__name__}"
    return OpError(f"{ctx.name()}.{rule} returned a gradient of {what} for input {i} of shape "
                   f"{tuple(p.shape)}")


def grads_per_input(ctx, in_grads, rule):
    """A backward rule's result as a tuple of one gradient per input of ctx (a rule may
    return a single gradient bare); a wrong count is the rule's bug, named here."""
    if not isinstance(in_grads, tuple):
        in_grads = (in_grads,)
    if len(in_grads) != len(ctx.parents):
        raise RuntimeError(f"{ctx.name()}.{rule} returned {len(in_grads)} gradients "
                           f"for {len(ctx.parents)} inputs")
    return in_grads


def cast_grad(ig, p, ctx):
    """`ig` in its parent's dtype, checked for NaN/Inf under detect_anomaly()."""
    if ig.dtype != p._data.dtype:
        ig = ig.astype(p._data.dtype)
    if STATE.anomaly:
        _check_finite(ig, ctx, p)
    return ig


def _timed(node_backward):
    """node_backward for `tgx.profile()`: tell each backward observer how long a node took."""
    def timed(ctx, g, grads, t, on_edge=None):
        start = time.perf_counter()
        node_backward(ctx, g, grads, t, on_edge)
        seconds = time.perf_counter() - start
        for fn in STATE.backward_observers:
            fn(ctx, seconds)
    return timed


def initial_grad(root, gradient):
    """The gradient the walk starts from: ones for a one-element output, else the given one."""
    if gradient is None:
        if root._data.size != 1:
            raise RuntimeError(
                f"backward: grad can be created implicitly only for a scalar output, but the "
                f"output has shape {root.shape}; pass backward(gradient) with that shape "
                f"(e.g. loss.sum().backward() or y.backward(tgx.ones_like(y))).")
        return np.ones(root._data.shape, dtype=root._data.dtype)
    g = gradient._data if isinstance(gradient, TensorBase) else np.asarray(gradient,
                                                                       root._data.dtype)
    if g.shape != root._data.shape:
        raise OpError(f"backward: gradient has shape {g.shape} but the output has shape "
                      f"{root.shape}; they must match")
    return g


def check_root(r):
    if not r.requires_grad:
        raise RuntimeError(
            f"backward: the output (shape {r.shape}) does not require grad and has no "
            f"graph: no input had requires_grad=True, or it was computed under no_grad()")


def _run_hooks(t, g):
    for _, hook in tuple(t._hooks):      # a snapshot: one added or removed meanwhile: next pass
        replaced = hook(t._op_class._from_op(g, None))
        if replaced is not None:
            g = replaced._data if isinstance(replaced, TensorBase) else np.asarray(replaced)
    return g


def _store_grad(t, g, owned=False):
    """Leaves (and retain_grad tensors) accumulate across backward calls, as in PyTorch: the
    first gradient is copied (others may hold g: an Add hands one array to both inputs), later
    ones are added into .grad. (`owned`: a faster carrier's grads may know g is theirs alone.)"""
    if t._ctx is not None and not t._retain_grad:
        return
    with ArrayWalk.grad_lock:
        if t.grad is None:
            t.grad = t._op_class._from_op(np.array(g, dtype=t._data.dtype, copy=True), None)
        else:
            t.grad._data += g


def _check_finite(ig, ctx, p):
    if not np.all(np.isfinite(ig)):
        raise FloatingPointError(
            f"detect_anomaly: the backward of {ctx.name()} (module {ctx.scope or '<top>'}) "
            f"produced NaN/Inf in the gradient of an input of shape {p.shape}; the node was "
            f"created at {getattr(ctx, 'callsite', '<unknown>')}")


class ArrayWalk:
    """The ordinary walk's carrier: arrays in a `Grads` (backprop.GraphWalk: Tensors)."""

    new_grads = Grads
    recording = staticmethod(contextlib.nullcontext)
    run_hooks = staticmethod(_run_hooks)
    store = staticmethod(_store_grad)
    node_backward = staticmethod(_node_backward)
    grad_lock = threading.RLock()  # one .grad change at a time: walks in two threads share leaves
