"""`backward()` and `grad()`, and the carrier that records a graph (create_graph=True).

Both run the one walk, `walk.run_backward`. `create_graph=False` (the default, and what
training does) carries numpy arrays: every node's `backward` works on the arrays its forward
saved, so the pass records nothing and costs nothing beyond the arithmetic.

`create_graph=True` passes `GraphWalk` below instead: the same walk (same order, hooks, stores,
frees), but gradients are Tensors and each node's same `backward` runs on a `graph_view` of
the node, whose saved arrays are replaced by Tensors with a history: a saved input by the input
Tensor, the saved output by the output Tensor. Every operation the formula performs is then an
ordinary op, so the gradients it returns are Tensors with a history of their own, and
`grad(grad(f(x), x), x)` (a second derivative), a Hessian-vector product or a gradient penalty
is just one more backward through that history, to any order.

The nodes a create_graph pass records are created inside a `BackwardFrame`, so their module
path reads `<the node's own path>/backward(mul)` and the graph drawer can tell them apart from
the forward's nodes.
"""
from __future__ import annotations

import numpy as np

from ..core import walk
from ..core.node import STATE, Frame, OpError, unbroadcast
from ..core.fastpath import walk_carrier
from ..core.walk import initial_grad, run_backward
from ..core.tensor_base import TensorBase
from .hooks import run_post_hooks
from .saved_hooks import Restore, unpacked


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


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """torch.autograd.backward: accumulate d(tensors)/d(leaf) into every leaf's .grad
    (Tensor.backward calls this with one tensor).

    `tensors` is a Tensor or a sequence of them, `grad_tensors` their seeds (None for a
    one-element tensor; `grad_variables` is its old name). With `inputs` (a Tensor or a
    sequence) only those accumulate, leaves or not, and only the nodes on a path to them run.
    With create_graph=True the gradients are Tensors with a graph of their own (a leaf's .grad
    can be differentiated again); retain_graph defaults to create_graph, as in PyTorch.
    """
    Tensor = TensorBase
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("backward: grad_tensors and grad_variables (its old name) were "
                               "both given")
        grad_tensors = grad_variables
    if grad_tensors is None:
        seeds = [None] * len(roots)
    elif isinstance(grad_tensors, Tensor):
        seeds = [grad_tensors]
    else:
        seeds = list(grad_tensors)
    if len(seeds) != len(roots):
        raise RuntimeError(f"backward: {len(seeds)} grad_tensors for {len(roots)} tensors")
    for i, r in enumerate(roots):
        if not isinstance(r, Tensor):
            raise TypeError(f"backward: tensors[{i}] is a {type(r).__name__}, expected a Tensor")
    store, wanted = None, None
    if inputs is not None:
        wanted = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        if not wanted:
            raise RuntimeError("backward: inputs is empty; give the tensors to accumulate "
                               "into, or leave inputs out")
        for i, x in enumerate(wanted):
            if not isinstance(x, Tensor):
                raise TypeError(f"backward: inputs[{i}] is a {type(x).__name__}, expected a "
                                f"Tensor")
            if not x.requires_grad:
                raise RuntimeError(f"backward: inputs[{i}] (shape {tuple(x.shape)}) does not "
                                   f"require grad")
        store = _store_into(wanted, create_graph)
    retain_graph = create_graph if retain_graph is None else retain_graph
    if create_graph:
        grads = [_seed(r, g, g if isinstance(g, Tensor) else None)
                 for r, g in zip(roots, seeds, strict=True)]
        run_backward(roots, grads, retain_graph, store, wanted, carrier=GraphWalk)
    else:
        grads = [initial_grad(r, g) for r, g in zip(roots, seeds, strict=True)]
        run_backward(roots, grads, retain_graph, store or _store_grad, wanted)


def _store_grad(t, g, owned):
    """The array walk's leaf store (the speed layer's, once installed: it may hand an owned
    gradient to .grad without a copy), then the leaf's post-accumulate-grad hooks (only a
    backward() accumulates: grad() runs none, as PyTorch)."""
    walk_carrier(walk.ArrayWalk).store(t, g, owned)
    if t._hooks:
        run_post_hooks(t)


def _store_into(wanted, create_graph):
    """backward(inputs=...)'s store: only those tensors accumulate, leaves or not."""
    ids = {id(x) for x in wanted}

    def store(t, g, owned):
        if id(t) not in ids:
            return
        with walk.ArrayWalk.grad_lock:
            if create_graph:
                t.grad = g if t.grad is None else t.grad + g
            elif t.grad is None:
                t.grad = t._op_class._from_op(np.array(g, dtype=t._data.dtype, copy=True), None)
            else:
                t.grad._data += g
        if t._hooks and t._ctx is None:
            run_post_hooks(t)
    return store


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) as a tuple of Tensors, without touching any `.grad`.

    Like torch.autograd.grad: `outputs` and `inputs` are Tensors or sequences of them;
    `grad_outputs` gives the seed gradient for non-scalar outputs (a seed that requires grad
    is part of the recorded graph under create_graph=True). With create_graph=True the results
    carry a graph (differentiate them again); otherwise they are plain constants. Only the
    nodes between the outputs and the inputs run (and are freed without retain_graph). An input
    the outputs do not depend on is an error, or None with allow_unused=True, or zeros with
    materialize_grads=True. `only_inputs` is accepted and ignored, as PyTorch now ignores it;
    is_grads_batched=True takes each grad_output's first dimension as a batch of seeds and
    returns each gradient with that dimension in front (one backward per seed here).
    """
    Tensor = TensorBase
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise RuntimeError("grad: inputs is empty; give the tensors to differentiate with "
                           "respect to")
    if is_grads_batched:
        return _batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                        allow_unused, materialize_grads)
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
        run_backward(outputs, seeds, retain_graph, store, inputs, carrier=GraphWalk)
    else:
        seeds = [initial_grad(o, g) for o, g in zip(outputs, grad_outputs, strict=True)]
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


def _batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
             materialize_grads):
    """grad(..., is_grads_batched=True): one grad() per seed along the first dimension, each
    result stacked along a new first dimension (with create_graph, by ops that keep the
    graph)."""
    Tensor = TensorBase
    if grad_outputs is None:
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs, each with the "
                           "batch as its first dimension")
    seeds = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(seeds) != len(outputs):
        raise ValueError(f"grad: {len(seeds)} grad_outputs for {len(outputs)} outputs")
    sizes = set()
    for k, (g, o) in enumerate(zip(seeds, outputs, strict=True)):
        if not isinstance(g, Tensor) or tuple(g.shape[1:]) != tuple(o.shape) or g.ndim < 1:
            shape = tuple(g.shape) if isinstance(g, Tensor) else type(g).__name__
            raise RuntimeError(f"grad: with is_grads_batched=True, grad_outputs[{k}] must have "
                               f"shape (batch, *{tuple(o.shape)}), got {shape}")
        sizes.add(g.shape[0])
    if len(sizes) != 1:
        raise RuntimeError(f"grad: the grad_outputs' batch sizes differ: {sorted(sizes)}")
    (n,) = sizes
    rows = []
    for b in range(n):
        last = b == n - 1
        rows.append(grad(outputs, inputs, [g[b] for g in seeds],
                         retain_graph=retain_graph if last else True,
                         create_graph=create_graph, allow_unused=allow_unused,
                         materialize_grads=materialize_grads))
    result = []
    for i, x in enumerate(inputs):
        parts = [row[i] for row in rows]
        if all(p is None for p in parts):
            result.append(None)
            continue
        parts = [x._op_class._from_op(np.zeros(x._data.shape, x._data.dtype), None)
                 if p is None else p for p in parts]
        if not any(p.requires_grad for p in parts):
            result.append(x._op_class._from_op(np.stack([p._data for p in parts]), None))
            continue
        stacked = None                       # sum_b onehot_b * part_b: Mul and Add keep the graph
        for b, p in enumerate(parts):
            onehot = np.zeros((n,) + (1,) * p.ndim, p._data.dtype)
            onehot[b] = 1
            term = p.reshape(1, *p.shape) * x._op_class._from_op(onehot, None)
            stacked = term if stacked is None else stacked + term
        result.append(stacked)
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
    return root._op_class._from_op(initial_grad(root, gradient), None)


class TensorGrads:
    """The gradient of each tensor so far, as Tensors: a sum is an op, so it is recorded."""

    def __init__(self):
        self.entries = {}

    def add(self, t, g, owned=False):
        prev = self.entries.get(id(t))
        self.entries[id(t)] = g if prev is None else prev + g

    def pop(self, t):
        return self.entries.pop(id(t), None), False


def _run_hooks_graph(t, g):
    for _, hook in tuple(t._hooks):         # a snapshot: hooks added meanwhile run next pass
        replaced = hook(g)                  # (hooks.TensorHook checks what it returns)
        if replaced is not None:
            g = replaced
    return g


def _store_grad_graph(t, g, owned):
    """As autograd's leaf store, but .grad keeps g's graph (accumulation is an op too); then
    the leaf's post-accumulate-grad hooks."""
    if t._ctx is not None and not t._retain_grad:
        return
    with walk.ArrayWalk.grad_lock:          # walks in two threads may share a leaf
        t.grad = g if t.grad is None else t.grad + g
    if t._hooks:
        run_post_hooks(t)


class _Recording:
    """Grad mode on and the walk's own sums inside a BackwardFrame, for one create_graph walk."""

    def __enter__(self):
        self.prev = STATE.grad_enabled, STATE.frame
        STATE.grad_enabled, STATE.frame = True, BackwardFrame(None)

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.frame = self.prev
        return False


def graph_view(ctx, out):
    """A copy of node `ctx` for running its `backward` on Tensors (create_graph=True): every
    saved array that is an input's array becomes that input's Tensor (or, for an input an
    in-place op overwrote after the node kept a copy, `ctx.old_inputs`, the copy with the
    input's gradient path: `Restore`), the output's array becomes the output Tensor `out`;
    anything else (masks, indices, constants) stays as forward saved it."""
    view = object.__new__(type(ctx))
    view.parents, view.needs_input_grad, view.frame = ctx.parents, ctx.needs_input_grad, ctx.frame
    view.graph_out = out            # a custom Function's saved output reads it (custom_function)
    carry = {}
    for p in reversed(ctx.parents):               # x * x: the first of equal inputs
        carry[id(p._data)] = p
    carry[id(out._data)] = out      # after x.exp_() its input's memory holds the output
    for i, old in getattr(ctx, "old_inputs", {}).items():
        carry[id(old)] = Restore.apply(ctx.parents[i], value=old)

    kept = ctx.__dict__
    if type(ctx).__dict__.get("_unpacks") is not None:     # saved_tensors_hooks packed them
        kept = unpacked(ctx, out)
    view.__dict__.update({k: _swap(v, carry) for k, v in kept.items()})
    return view


def _swap(v, carry):
    """v with every array that `carry` maps replaced by its Tensor (inside tuples and lists
    too). A plain function: a closure calling itself would be a reference cycle holding the
    node's view until Python's cyclic collector ran."""
    if isinstance(v, np.ndarray):
        return carry.get(id(v), v)
    if isinstance(v, (tuple, list)) and any(isinstance(a, np.ndarray) for a in v):
        return type(v)(_swap(a, carry) for a in v)
    return v


def _node_backward_graph(ctx, g, grads, t, on_edge=None):
    """One node's derivative on Tensors (its same `backward` on `graph_view(ctx, t)`); each
    edge's gradient is shown to `on_edge` too, when the walk was given one."""
    prev, STATE.frame = STATE.frame, BackwardFrame(ctx)
    try:
        in_grads = type(ctx).backward(graph_view(ctx, t), g)
    except RuntimeError as err:
        if not str(err).startswith("numpy: a tensor that requires grad"):
            raise
        old = (" (a backward_graph method is no longer used: backward itself runs on Tensors"
               " here)" if hasattr(type(ctx), "backward_graph") else "")
        raise RuntimeError(
            f"create_graph: the backward of {ctx.name()}"
            f"{' (in ' + ctx.scope + ')' if ctx.scope else ''} cannot be differentiated: it "
            f"gives a Tensor to numpy ({err}). Write it with operators and Tensor methods "
            f"(they work on arrays too), or use create_graph=False for first "
            f"derivatives{old}.") from None
    finally:
        STATE.frame = prev
    in_grads = walk.grads_per_input(ctx, in_grads, "backward")
    for i, (p, ig, need) in enumerate(zip(ctx.parents, in_grads, ctx.needs_input_grad,
                                          strict=True)):
        if ig is None or not need:
            continue
        if not isinstance(ig, TensorBase):
            ig = p._op_class._from_op(np.asarray(ig), None)
        try:
            ig = unbroadcast(ig, p.shape)
        except OpError:
            raise walk.bad_grad(ctx, "backward", i, ig, p) from None
        if ig.dtype != p.dtype:
            ig = ig.to(p.dtype)
        if STATE.anomaly and not np.all(np.isfinite(ig._data)):
            raise FloatingPointError(
                f"detect_anomaly: the backward of {ctx.name()} (create_graph) produced NaN/Inf "
                f"in the gradient of an input of shape {p.shape}")
        if on_edge is not None:
            on_edge(ctx, i, p, ig)
        grads.add(p, ig)


class GraphWalk:
    """The create_graph carrier of `walk.run_backward`: gradients are Tensors, each node's
    `backward` runs on Tensors with grad enabled, so the whole pass is recorded."""

    new_grads = TensorGrads
    recording = _Recording
    run_hooks = staticmethod(_run_hooks_graph)
    store = staticmethod(_store_grad_graph)
    node_backward = staticmethod(_node_backward_graph)
