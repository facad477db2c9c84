"""Custom ops in PyTorch's style: `forward(ctx, ...)` and `backward(ctx, ...)` as staticmethods.

    class MulAdd(tgx.Function):
        @staticmethod
        def forward(ctx, x, y, alpha=1.0):       # Tensors (and anything else) in, run in no_grad
            ctx.save_for_backward(x, y)
            ctx.alpha = alpha
            return x * y + alpha, x - y           # one Tensor or a tuple of them
        @staticmethod
        def backward(ctx, g_prod, g_diff):        # one gradient per output, Tensors
            x, y = ctx.saved_tensors
            return g_prod * y + g_diff, g_prod * x - g_diff, None   # one per forward argument

    out, diff = MulAdd.apply(a, b, alpha=2.0)

`Function` below is the public class (`tinygradx.Function`, `tinygradx.autograd.Function`): the
engine's node (`node.Function`, forward and backward on numpy arrays, which the engine's own ops
use) plus this style. A subclass whose `forward` is a staticmethod gets `apply` from here when the
class is made (`Function.__init_subclass__`); the engine's `apply` never looks for it. One call
makes one node, a `CustomNode` named after the class, that the walk treats like any other op:

- its parents are the Tensor arguments (keyword arguments are bound to their positions first,
  defaults included, as PyTorch does), `ctx.needs_input_grad` has one flag per argument;
- `backward` (or `vjp`, its other name) gets one gradient per output (zeros for an output no
  gradient reached or marked with `ctx.mark_non_differentiable`, or None for those after
  `ctx.set_materialize_grads(False)`; None for a non-Tensor output) and returns one per argument
  (None for a non-Tensor one; trailing extra Nones are allowed, as in PyTorch);
- the array walk runs `backward` on Tensors under no_grad; create_graph=True runs it with grad
  enabled, so a backward written with Tensor ops on `ctx.saved_tensors` is differentiated again.
  What was saved reads as PyTorch's saved tensors do there: an input is the input Tensor, an
  output is the output Tensor of this very node (its graph included, so `Exp`'s backward
  `g * result` has a second derivative), anything made inside forward (an intermediate, a
  `detach()`, an attribute of ctx) is a constant;
- several differentiable outputs hang off one hidden flat tensor (`CustomNode`'s output) through
  one `Output` node each, whose gradient is a slice of the flat one: the walk collects the
  outputs' gradients into one buffer (gradbuf's slices) and calls `backward` once;
- an input returned as it is comes back as a view of it (same memory, same version counter), an
  input changed in place and marked with `ctx.mark_dirty` comes back as that very Tensor, with
  the node as its new history (as `Tensor.add_` makes it);
- inside tinygradx.func's transforms (torch.func's) a Function must meet PyTorch's conditions:
  the setup_context form; a jvp staticmethod for forward mode and a vmap rule where PyTorch's
  transform vmaps (`_NEEDS`), else the same refusal as PyTorch's.

The user's `ctx` is a `FunctionCtx`, not the node, so its attributes never collide with the
engine's (parents, frame, ...) and are freed with the node after backward.
"""
from __future__ import annotations

import contextlib
import inspect
import threading
import time

import numpy as np

from ..core.node import Function as Node
from ..core.node import STATE, OpError, no_grad, unbroadcast_axes, user_line
from ..core.fastpath import Slice
from ..fast.dispatch import fast_backward
from ..core.tensor_base import TensorBase
from .function_ctx import FunctionCtx, once_differentiable  # noqa: F401  (their public home)


class Function(Node):
    """Base class of every differentiable op: the engine's node (`Node`, methods on
    numpy arrays) or, with `@staticmethod forward(ctx, ...)` and `backward(ctx, ...)` on
    Tensors, PyTorch's style (this module)."""

    __slots__ = ()
    static_style = False             # forward is a staticmethod: PyTorch's style

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        f, b = (isinstance(inspect.getattr_static(cls, m), staticmethod)
                for m in ("forward", "backward"))
        if f != b and inspect.getattr_static(cls, "backward") is not Node.backward:
            raise TypeError(f"{cls.__name__}: forward and backward must both be @staticmethods "
                            f"taking ctx (PyTorch's style) or both plain methods on arrays")
        cls.static_style = f
        if f:                        # the engine's apply (arrays) stays for every other class
            cls.apply = classmethod(apply)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__}: a Function is applied with "
                        f"{type(self).__name__}.apply(...), not by calling an instance "
                        f"(PyTorch's legacy style, which it no longer runs either)")


def _forward_args(cls, args, kwargs):
    """(positional arguments with keywords and defaults bound as PyTorch binds them, the
    keywords forward takes as **kwargs)."""
    sig = cls.__dict__.get("_forward_signature")
    if sig is None:
        sig = cls._forward_signature = inspect.signature(cls.forward)
    with_ctx = not _has_setup_context(cls)   # PyTorch's other form: forward without ctx
    try:
        bound = sig.bind(*((None,) if with_ctx else ()), *args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{cls.name()}.apply: {err}") from None
    bound.apply_defaults()
    return bound.args[1 if with_ctx else 0:], bound.kwargs


def _has_setup_context(cls):
    return getattr(cls, "setup_context", None) is not None


# torch.func's transforms (tinygradx.func) and what each asks of a custom Function applied
# inside it, as PyTorch asks it: setup_context always; vmap support (generate_vmap_rule = True
# or a vmap staticmethod) for those that batch their forward-mode products; a jvp staticmethod
# for forward mode. tinygradx computes forward-mode products from the recorded backward, so a
# Function's jvp is required, as PyTorch requires it, but never called.
_NEEDS = {"jvp": ("jvp",), "jacfwd": ("vmap", "jvp"), "hessian": ("vmap", "jvp")}


class _Transforms(threading.local):
    def __init__(self):
        self.active = []                # the transforms this thread's call runs inside


_TRANSFORMS = _Transforms()


@contextlib.contextmanager
def inside_transform(name):
    """Mark this thread's calls as running inside torch.func transform `name` (tinygradx.func's
    transforms wrap the user's function with it)."""
    _TRANSFORMS.active.append(name)
    try:
        yield
    finally:
        _TRANSFORMS.active.pop()


def _check_transforms(cls):
    """Refuse a Function that the enclosing torch.func transforms cannot take, as PyTorch."""
    names = _TRANSFORMS.active
    outer = names[0]
    if not _has_setup_context(cls):
        raise RuntimeError(f"{cls.name()}: a custom Function used inside tinygradx.func's "
                           f"{outer} must define setup_context(ctx, inputs, output) and a "
                           f"forward without ctx, as PyTorch's torch.func transforms require")
    needs = {n for t in names for n in _NEEDS.get(t, ())}
    if "vmap" in needs and not (getattr(cls, "generate_vmap_rule", False)
                                or getattr(cls, "vmap", None) is not None):
        which = next(t for t in names if "vmap" in _NEEDS.get(t, ()))
        raise RuntimeError(f"{cls.name()}: tinygradx.func's {which} batches the Function as "
                           f"PyTorch's vmap does: set generate_vmap_rule = True on the class (or "
                           f"define vmap), as PyTorch requires")
    if "jvp" in needs and getattr(cls, "jvp", None) is None:
        which = next(t for t in names if "jvp" in _NEEDS.get(t, ()))
        raise NotImplementedError(f"{cls.name()}: tinygradx.func's {which} takes forward-mode "
                                  f"derivatives: define @staticmethod jvp(ctx, *tangents), as "
                                  f"PyTorch requires")


def apply(cls, *args, **kwargs):
    """Function.apply for a class in PyTorch's style (see the module docstring)."""
    if _TRANSFORMS.active:                # inside tinygradx.func's grad, jvp, jacfwd, ...
        _check_transforms(cls)
    args, rest = _forward_args(cls, args, kwargs)
    here = STATE.here                     # this thread's grad mode, module call, observers
    grad_on = here.grad_enabled
    needs = tuple(grad_on and isinstance(a, TensorBase) and a.requires_grad for a in args)
    ctx = FunctionCtx(cls.name(), needs)
    record = True in needs
    before = {id(a): a._version[0] for a in args if isinstance(a, TensorBase)}
    frame, start, observed = here.frame, time.perf_counter(), here.observed
    if record:                    # trace and profile see the node, not the ops inside
        here.observed = False     # (this thread's ops only: the observers stay the process's)
    try:
        with no_grad():
            if _has_setup_context(cls):
                out = cls.forward(*args, **rest)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **rest)
    finally:
        here.observed = observed
    single = not isinstance(out, tuple)        # a list is one (non-Tensor) output, as PyTorch
    items = (out,) if single else out
    inputs = {id(a) for a in args if isinstance(a, TensorBase)}
    dirty = _dirty(cls, ctx, args, items, record)
    results, diff, roles = [], [], {}          # diff: positions of the differentiable outputs
    for k, o in enumerate(items):
        if not isinstance(o, TensorBase):
            results.append(o)
            continue
        if id(o) in dirty:                     # changed in place: the input itself
            r = o
            roles[id(o)] = k
        else:
            r = o._op_class._from_op(o._data, None)
            r._version = o._version            # in place on r is in place on what ctx saved
            if id(o) in inputs:                # an input returned as is: a view of it
                r._base = o if o._base is None else o._base
            else:
                roles[id(o)] = k
        results.append(r)
        if record and o._data.dtype.kind in "fc" and id(o) not in ctx._non_differentiable:
            diff.append(k)
    for d in dirty.values():                   # as Tensor._inplace: the change is a version
        d._version[0] += 1
        d._version[1:] = [f"{cls.name()} (mark_dirty) at {user_line()}"]
    if diff:
        _record(cls, ctx, frame, args, results, diff, dirty, before,
                time.perf_counter() - start)
        ctx._keep(roles)
    return results[0] if single else tuple(results)


def _dirty(cls, ctx, args, items, record):
    """The ids of the inputs forward marked dirty, checked as PyTorch checks them."""
    inputs = {id(a) for a in args if isinstance(a, TensorBase)}
    dirty = {id(d): d for d in ctx._dirty if id(d) in inputs}   # others: ignored, as PyTorch
    returned = {id(o) for o in items}
    name = cls.name()
    for d in dirty.values():
        if id(d) not in returned:
            raise RuntimeError(f"{name}: a tensor of shape {tuple(d.shape)} marked with "
                               f"ctx.mark_dirty was not returned by forward; an input changed "
                               f"in place must be one of the outputs")
        if not record:
            continue
        if d.requires_grad and d._ctx is None:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad (shape "
                               f"{tuple(d.shape)}) was changed in place by forward "
                               f"(ctx.mark_dirty); change a .clone(), or do it under no_grad()")
        if d._base is not None:
            raise RuntimeError(f"{name}: ctx.mark_dirty on a view (shape {tuple(d.shape)}) "
                               f"inside a graph: tinygradx does not rewrite the base tensor's "
                               f"history as PyTorch does; pass the base tensor, or a clone()")
    return dirty


def _node_class(cls):
    """The CustomNode subclass of a Function class, made once."""
    node_cls = cls.__dict__.get("_node_class")
    if node_cls is None:
        node_cls = type(f"{cls.__name__}Backward", (CustomNode,),
                        {"fn": cls, "op_name": cls.name(), "__slots__": ()})
        cls._node_class = node_cls
    return node_cls


def _record(cls, ctx, frame, args, results, diff, dirty, before, seconds):
    """Make the node and hang the differentiable outputs off it."""
    node = object.__new__(_node_class(cls))
    node.frame = frame
    node.ctx = ctx
    node.positions = tuple(i for i, a in enumerate(args) if isinstance(a, TensorBase))
    olds = {id(d): _old_self(d) for d in dirty.values()}       # a dirty input as it was
    node.parents = tuple(olds.get(id(args[i]), args[i]) for i in node.positions)
    node.needs_input_grad = tuple(ctx.needs_input_grad[i] for i in node.positions)
    node.versions = tuple([p._version[0] for p in node.parents])
    node.outputs = tuple(None if not isinstance(r, TensorBase) else (r.shape, r._data.dtype)
                         for r in results)
    if not ctx._materialize:
        node.reached = set()              # the outputs a gradient reached (Output.backward)
    node.views = [(k, results[k]._version, results[k]._version[0]) for k in diff
                  if results[k]._base is not None and id(results[k]) not in dirty]
    if STATE.anomaly:
        node.callsite = user_line()
    if len(diff) == 1:                    # the node's output is the output itself
        (k,) = diff
        node.direct, node.spans = k, None
        r = results[k]
        node.out_version = r._version[0]
        r._ctx, r.requires_grad = node, True
        _observe(node, r, seconds)
    else:                                 # one flat hidden output, a slice of it per output
        node.direct, spans, start = None, {}, 0
        for k in diff:
            spans[k] = (start, start + results[k]._data.size)
            start += results[k]._data.size
        node.spans = spans
        flat_dtype = np.result_type(*[results[k]._data.dtype for k in diff])
        hidden = results[diff[0]]._op_class._from_op(
            np.broadcast_to(np.zeros((), flat_dtype), (start,)), node)
        _observe(node, hidden, seconds)
        for k in diff:
            r = results[k]
            a, b = spans[k]
            out = Output.apply(hidden, value=r._data, start=a, stop=b)
            out._ctx.out_version = r._version[0]
            if id(r) in dirty:            # the dirty input itself takes the output's node
                r._ctx, r.requires_grad = out._ctx, True
                continue
            out._version, out._base = r._version, r._base
            results[k] = out
    for d in dirty.values():              # nodes that used d before reach its old graph
        d._history = (d._history or []) + [(before[id(d)], olds[id(d)])]


def _old_self(d):
    """A dirty input as it was: its memory (now changed) and its producer, as Tensor._inplace's
    `old`; the node's edge goes there."""
    old = d._op_class._from_op(d._data, d._ctx)
    old.requires_grad, old._version, old._history = d.requires_grad, d._version, d._history
    old._hooks, d._hooks = d._hooks, None    # a hook stays with the value it was put on
    return old


def _observe(node, out, seconds):
    if not STATE.here.observed:           # inside another custom Function's forward
        return
    for fn in list(STATE.observers):      # trace, profile: the node as one op
        fn(node, node.parents, out, seconds)


class CustomNode(Function):
    """The node of one call of a PyTorch-style Function (one subclass per Function class, so
    that graphs and errors show the class's name)."""

    fn = None                        # the user's Function class

    def _output_grads(self, g, as_tensors):
        """One gradient per forward output from the node's output gradient g."""
        cls = self.parents[0]._op_class             # the class of the Tensors forward was given
        reached = None if self.ctx._materialize else self.__dict__.get("reached", set())
        grads = []
        for k, meta in enumerate(self.outputs):
            if meta is None:
                grads.append(None)
                continue
            shape, dtype = meta
            if k == self.direct:
                piece = g
            elif self.spans is not None and k in self.spans and (
                    reached is None or self.spans[k][0] in reached):
                a, b = self.spans[k]
                piece = g[a:b].reshape(shape)
                if piece.dtype != dtype:
                    piece = piece.to(dtype) if as_tensors else piece.astype(dtype)
            elif reached is not None:        # set_materialize_grads(False): None
                grads.append(None)
                continue
            else:                            # not differentiable or not reached: zeros
                piece = np.zeros(shape, dtype)
                if as_tensors:
                    piece = cls._from_op(piece, None)
            grads.append(piece if as_tensors else cls._from_op(piece, None))
        if reached is not None:
            reached.clear()                  # a retained graph's next pass starts afresh
        return grads

    def _input_grads(self, res, as_tensors):
        """The user's backward result as one gradient per parent (the Tensor arguments)."""
        name, n = self.name(), len(self.ctx.needs_input_grad)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) > n and all(r is None for r in res[n:]):
            res = res[:n]
        if len(res) != n:
            raise RuntimeError(f"{name}.backward returned {len(res)} gradients for {n} "
                               f"arguments of forward (one per argument, None where none)")
        for i, r in enumerate(res):
            if r is not None and i not in self.positions:
                raise RuntimeError(f"{name}.backward returned a gradient for argument {i}, "
                                   f"which is not a Tensor; return None for it")
            if r is not None and not isinstance(r, TensorBase):
                raise TypeError(f"{name}.backward returned a {type(r).__name__} for input {i}; "
                                f"expected a Tensor or None")
        out = []
        for i, p in zip(self.positions, self.parents, strict=True):
            r = res[i]
            if r is not None:
                check_grad_shape(self, i, r.shape, p.shape)
                if not as_tensors:
                    r = r._data
            out.append(r)
        return tuple(out)

    def _rule(self):
        fn = self.fn
        if fn.backward is not Function.backward:
            return fn.backward
        vjp = getattr(fn, "vjp", None)       # PyTorch's other name for backward
        if vjp is not None:
            return vjp
        raise RuntimeError(f"{self.name()}: the Function defines no backward, so no "
                           f"gradient flows through it; write @staticmethod backward")

    def backward(self, g):
        rule = self._rule()
        for k, counter, version in self.views:
            if counter[0] != version:
                by = f"{counter[1]}; " if len(counter) > 1 else ""
                raise RuntimeError(
                    f"{self.name()}: output {k} is an input forward returned as it is (a view "
                    f"of it), and it was changed in place since ({by}version {counter[0]}, "
                    f"made at {version}); PyTorch forbids backward through such a view, whose "
                    f"gradient would be wrong: return x.clone() from forward instead")
        if isinstance(g, (np.ndarray, np.generic)):     # the array walk: Tensors in no_grad
            with no_grad():
                res = rule(self.ctx, *self._output_grads(g, False))
            return self._input_grads(res, False)
        # create_graph=True: grad is enabled here, so the user's Tensor ops are recorded, and
        # a saved output reads as this node's output Tensor (graph_output)
        ctx = self.ctx
        prev, ctx._run = ctx._run, self
        try:
            res = rule(ctx, *self._output_grads(g, True))
        finally:
            ctx._run = prev
        return self._input_grads(res, True)

    def graph_output(self, k, saved):
        """Output k (saved: the Tensor forward returned there) as a Tensor of the graph being
        differentiated (create_graph), or None for an output that has none (not
        differentiable): the node's output Tensor in this walk (backprop.graph_view's
        `graph_out`), or its slice of the hidden flat one."""
        out = self.__dict__.get("graph_out")
        if out is None:
            return None
        if k == self.direct:
            return out
        if self.spans is None or k not in self.spans:
            return None
        made = self.__dict__.setdefault("graph_outputs", {})
        if k not in made:
            a, b = self.spans[k]
            made[k] = Output.apply(out, value=saved._data, start=a, stop=b)
        return made[k]

    def free(self):
        ctx = self.__dict__.get("ctx")
        if ctx is not None:                    # as PyTorch: saved tensors go with the graph
            ctx._freed, ctx._saved = True, ()
        super().free()


def check_grad_shape(ctx, index, gshape, shape):
    """A gradient must have its input's shape or broadcast to it (then it is summed back)."""
    try:
        unbroadcast_axes(tuple(gshape), tuple(shape))
    except OpError:
        raise OpError(f"{ctx.name()}.backward returned a gradient of shape {tuple(gshape)} for "
                      f"input {index} of shape {tuple(shape)}") from None


class Output(Function):
    """One differentiable output of a PyTorch-style Function with several: forward gives the
    value forward computed, backward puts its gradient at its place in the node's flat one."""

    op_name = "output"

    def forward(self, flat, *, value, start, stop):
        self.start, self.stop = start, stop
        return value

    def backward(self, g):
        (flat,) = self.parents
        _reached(flat, self.start)
        if isinstance(g, (np.ndarray, np.generic)):
            return Place.__new__(Place).forward(g, size=flat.shape[0], start=self.start)
        return Place.apply(g, size=flat.shape[0], start=self.start)    # recorded


def _reached(flat, start):
    """Note, for a node with set_materialize_grads(False), that this output got a gradient."""
    node = flat._ctx
    reached = None if node is None else node.__dict__.get("reached")
    if reached is not None:
        reached.add(start)


@fast_backward(Output, name="slice")
def _output_backward(ctx, g):
    """The outputs' gradients go into one shared buffer (a Slice), then one backward."""
    _reached(ctx.parents[0], ctx.start)
    return Slice((slice(ctx.start, ctx.stop),), g.reshape(-1))


class Place(Function):
    """g flattened into zeros of length `size` at `start`: Output's backward as an op."""

    op_name = "place"

    def forward(self, g, *, size, start):
        self.span = slice(start, start + g.size)
        out = np.zeros(size, g.dtype)
        out[self.span] = g.reshape(-1)
        return out

    def backward(self, g):
        (x,) = self.parents
        return g[self.span].reshape(x.shape)
