"""The two ways to ask for gradients, `backward()` and `grad()`, and the walk that records a graph.

`create_graph=False` (the default, and what training does) runs `autograd.run_backward`: every
node's `backward` works on numpy arrays, so the pass records nothing and costs nothing beyond
the arithmetic.

`create_graph=True` runs `run_backward_graph` below instead. It visits the same nodes in the
same order, but calls each node's `backward_graph(g, *inputs)`: the same formula as `backward`,
written with Tensor operations on the node's input Tensors. Every operation it performs is an
ordinary op, so the gradients it returns are Tensors with a history of their own, and
`grad(grad(f(x), x), x)` (a second derivative), a Hessian-vector product or a gradient penalty
is just one more backward through that history, to any order.

The nodes a create_graph pass records are created inside a `BackwardFrame`, so their module
path reads `<the node's own path>/backward(mul)` and the graph drawer can tell them apart from
the forward's nodes.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from . import (STATE, Frame, OpError, run_backward, toposort, toposort_to,
               unbroadcast_axes)
from .tensor_base import TensorBase


class BackwardFrame(Frame):
    """The frame of the ops a create_graph pass records: those computing the gradient of one
    node (`of`, named `backward(op)` under the node's own module path), or the walk's own
    sums and casts (`of` None, named `backward`)."""

    __slots__ = ("of",)

    def __init__(self, ctx):
        if ctx is None:
            super().__init__(STATE.frame, "backward")
        else:
            super().__init__(ctx.frame, f"backward({ctx.name()})")
        self.of = ctx

    def resolve(self):
        above = self.parent.path if self.parent is not None else ""
        return f"{above}/{self.name}" if above else self.name


def _initial_grad(root, gradient):
    Tensor = TensorBase
    if gradient is None:
        if root._data.size != 1:
            raise RuntimeError(
                f"backward: grad can be created implicitly only for a scalar output, but the "
                f"output has shape {root.shape}; pass backward(gradient) with that shape "
                f"(e.g. loss.sum().backward() or y.backward(tgx.ones_like(y))).")
        return np.ones(root._data.shape, dtype=root._data.dtype)
    g = gradient._data if isinstance(gradient, Tensor) else np.asarray(gradient,
                                                                       root._data.dtype)
    if g.shape != root._data.shape:
        raise OpError(f"backward: gradient has shape {g.shape} but the output has shape "
                      f"{root.shape}; they must match")
    return g


def backward(tensor, gradient=None, retain_graph=None, create_graph=False):
    """Accumulate d(tensor)/d(leaf) into every leaf's .grad (Tensor.backward calls this).

    With create_graph=True the gradients are Tensors with a graph of their own (a leaf's .grad
    can be differentiated again); retain_graph defaults to create_graph, as in PyTorch.
    """
    retain_graph = create_graph if retain_graph is None else retain_graph
    if create_graph:
        seed = gradient if isinstance(gradient, TensorBase) else None
        run_backward_graph([tensor], [_seed(tensor, gradient, seed)], retain_graph)
    else:
        run_backward([tensor], [_initial_grad(tensor, gradient)], retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) as a tuple of Tensors, without touching any `.grad`.

    Like torch.autograd.grad: `outputs` and `inputs` are Tensors or sequences of them;
    `grad_outputs` gives the seed gradient for non-scalar outputs (a seed that requires grad
    is part of the recorded graph under create_graph=True). With create_graph=True the results
    carry a graph (differentiate them again); otherwise they are plain constants. Only the
    nodes between the outputs and the inputs run (and are freed without retain_graph). An input
    the outputs do not depend on is an error, or None with allow_unused=True, or zeros with
    materialize_grads=True.
    """
    Tensor = TensorBase
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"grad: input {i} is a {type(x).__name__}, expected a Tensor")
        if not x.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {x.shape}) does not require grad")
    if allow_unused is False and materialize_grads:
        raise ValueError("grad: allow_unused=False contradicts materialize_grads=True (which "
                         "returns zeros for unused inputs)")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    retain_graph = create_graph if retain_graph is None else retain_graph
    capture = {id(x): None for x in inputs}

    def store(t, g, owned):
        if id(t) in capture:
            capture[id(t)] = g if capture[id(t)] is None else capture[id(t)] + g

    if create_graph:
        seeds = [_seed(o, g, g if isinstance(g, Tensor) else None)
                 for o, g in zip(outputs, grad_outputs, strict=True)]
        run_backward_graph(outputs, seeds, retain_graph, store, inputs)
    else:
        seeds = [_initial_grad(o, g) for o, g in zip(outputs, grad_outputs, strict=True)]
        run_backward(outputs, seeds, retain_graph, store, inputs)
    result = []
    for i, x in enumerate(inputs):
        g = capture[id(x)]
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: input {i} (shape {x.shape}) was not used to compute "
                                   f"the outputs; pass allow_unused=True to get None for it")
            result.append(x._op_class._from_op(np.zeros_like(x._data), None)
                          if materialize_grads else None)
        elif isinstance(g, Tensor):
            result.append(g)
        else:
            result.append(x._op_class._from_op(np.array(g, copy=True), None))
    return tuple(result)


# --------------------------------------------------------------------------------------------
# the walk that records a graph
# --------------------------------------------------------------------------------------------

def _seed(root, gradient, as_tensor):
    """The root's gradient as a Tensor; a Tensor seed is kept (it may itself need grad)."""
    if as_tensor is not None:
        if as_tensor.shape != root.shape:
            raise OpError(f"backward: gradient has shape {as_tensor.shape} but the output has "
                          f"shape {root.shape}; they must match")
        return as_tensor
    return root._op_class._from_op(_initial_grad(root, gradient), None)


def unbroadcast_graph(g, shape):
    """`autograd.unbroadcast` with Tensor ops: sum g down to `shape`, recorded in the graph."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    return g.sum(dim=unbroadcast_axes(g.shape, shape), keepdim=True).reshape(shape)


def run_backward_graph(roots, root_grads, retain_graph=True, store=None, inputs=None):
    """`autograd.run_backward` with Tensor gradients: every step is an op, so it is recorded.

    Same order, same hooks, same leaf accumulation as the array walk (and with `inputs`, the
    same pruning: `autograd.toposort_to`); only each node's `backward_graph` replaces its
    `backward`, and sums, casts and unbroadcasts are Tensor ops.
    """
    store = store or _store_grad_graph
    grads = {}
    for r, g in zip(roots, root_grads, strict=True):
        autograd.check_root(r)
        grads[id(r)] = grads[id(r)] + g if id(r) in grads else g
    changed = changed_inputs(roots)          # before toposort re-points those edges
    prev, prev_frame = STATE.grad_enabled, STATE.frame
    STATE.grad_enabled, STATE.frame = True, BackwardFrame(None)
    try:
        order, stop = (toposort(roots), ()) if inputs is None else toposort_to(roots, inputs)
        for t in order:
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._hooks:
                for _, hook in t._hooks:
                    replaced = hook(g)
                    if replaced is not None:
                        g = replaced
            store(t, g, False)
            if t._ctx is not None and id(t) not in stop:
                _node_backward_graph(t._ctx, g, grads, changed.get(id(t._ctx), ()))
                if not retain_graph:
                    t._ctx.free()
    finally:
        STATE.grad_enabled, STATE.frame = prev, prev_frame


def changed_inputs(roots):
    """{id(node): indices of its inputs changed in place since the node used them}.

    The graph rules read their inputs' values, which an in-place change has overwritten (the
    array walk is safe: a node that saved the memory refuses, one that did not never reads
    it). Such an input is given back its old value (`Restore`) when the in-place op kept one
    (`ctx.old_inputs`), or the rule is refused with the in-place error, unless the op's rule
    reads no input values (`graph_reads_inputs = False`: add, sum, reshape, ...).
    """
    changed, seen, stack = {}, set(), list(roots)
    while stack:
        t = stack.pop()
        ctx = t._ctx
        if ctx is None or id(ctx) in seen or ctx.parents is None:
            continue
        seen.add(id(ctx))
        bad = tuple(i for i, (p, v) in enumerate(zip(ctx.parents, ctx.versions, strict=True))
                    if p._version[0] != v)
        if bad:
            changed[id(ctx)] = bad
        stack.extend(p for p, need in zip(ctx.parents, ctx.needs_input_grad, strict=True)
                     if need)
    return changed


class Restore(autograd.Function):
    """An input's value from before an in-place change, with the input's gradient path:
    forward gives the kept copy, backward passes g on to the input unchanged."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "restore"

    def forward(self, x, value):
        return value

    def backward(self, g):
        return g

    def backward_graph(self, g, x):
        return g


def _rule_inputs(ctx, changed):
    """The node's inputs for its graph rule, old values restored where they were kept."""
    args = list(ctx.parents)
    gone = set(changed).union(getattr(ctx, "overwritten", ()))   # an in-place node's own input
    if not gone or not getattr(ctx, "graph_reads_inputs", True):
        return args
    kept = getattr(ctx, "old_inputs", {})
    for i in sorted(gone):
        if i in kept:
            args[i] = Restore.apply(args[i], value=kept[i])
        else:
            p = args[i]
            raise RuntimeError(
                f"{ctx.name()}{' (in ' + ctx.scope + ')' if ctx.scope else ''}: an input of "
                f"shape {tuple(p.shape)} was modified by an in-place operation after "
                f"{ctx.name()} used it; create_graph=True recomputes the gradient from the "
                f"inputs' values, which are gone. Use .clone() before the in-place change.")
    return args


def _node_backward_graph(ctx, g, grads, changed=()):
    rule = getattr(ctx, "backward_graph", None)
    if rule is None:
        raise RuntimeError(
            f"create_graph: the backward of {ctx.name()}"
            f"{' (in ' + ctx.scope + ')' if ctx.scope else ''} cannot be differentiated: the "
            f"op has no backward_graph rule. Use create_graph=False for first derivatives.")
    prev, STATE.frame = STATE.frame, BackwardFrame(ctx)
    try:
        in_grads = rule(g, *_rule_inputs(ctx, changed))
    finally:
        STATE.frame = prev
    in_grads = autograd.grads_per_input(ctx, in_grads, "backward_graph")
    for i, (p, ig, need) in enumerate(zip(ctx.parents, in_grads, ctx.needs_input_grad,
                                          strict=True)):
        if ig is None or not need:
            continue
        if not isinstance(ig, TensorBase):
            ig = p._op_class._from_op(np.asarray(ig), None)
        try:
            ig = unbroadcast_graph(ig, p.shape)
        except OpError:
            raise autograd.bad_grad(ctx, "backward_graph", i, ig, p) from None
        if ig.dtype != p.dtype:
            ig = ig.to(p.dtype)
        if STATE.anomaly and not np.all(np.isfinite(ig._data)):
            raise FloatingPointError(
                f"detect_anomaly: the backward_graph of {ctx.name()} produced NaN/Inf in the "
                f"gradient of an input of shape {p.shape}")
        grads[id(p)] = grads[id(p)] + ig if id(p) in grads else ig


def _store_grad_graph(t, g, owned):
    """As autograd's leaf store, but .grad keeps g's graph (accumulation is an op too)."""
    if t._ctx is not None and not t._retain_grad:
        return
    t.grad = g if t.grad is None else t.grad + g
