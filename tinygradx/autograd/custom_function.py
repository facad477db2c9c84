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
- `backward` gets one gradient per output (zeros for an output no gradient reached or marked
  with `ctx.mark_non_differentiable`, None for a non-Tensor output) and returns one per argument
  (None for a non-Tensor one; trailing extra Nones are allowed, as in PyTorch);
- the array walk runs `backward` on Tensors under no_grad; create_graph=True runs it with grad
  enabled, so a backward written with Tensor ops on `ctx.saved_tensors` is differentiated again;
- several differentiable outputs hang off one hidden flat tensor (`CustomNode`'s output) through
  one `Output` node each, whose gradient is a slice of the flat one: the walk collects the
  outputs' gradients into one buffer (gradbuf's slices) and calls `backward` once.

The user's `ctx` is a `FunctionCtx`, not the node, so its attributes never collide with the
engine's (parents, frame, ...) and are freed with the node after backward.
"""
from __future__ import annotations

import functools
import inspect
import time

import numpy as np

from ..core.node import Function as Node
from ..core.node import STATE, OpError, no_grad, unbroadcast_axes, user_line
from ..core.fastpath import Slice, fast_backward
from ..core.tensor_base import TensorBase


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


class FunctionCtx:
    """The `ctx` of a PyTorch-style Function: what forward leaves for backward.

    Any attribute may be set on it (`ctx.dim = dim`); the methods are PyTorch's.
    """

    def __init__(self, op, needs_input_grad):
        self._op = op
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._non_differentiable = set()

    def save_for_backward(self, *tensors):
        """Keep Tensors (or None) for backward; an in-place change to one of them before
        backward is an error when `saved_tensors` is read, as in PyTorch."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, TensorBase):
                raise TypeError(f"{self._op}: save_for_backward takes Tensors or None, "
                                f"argument {i} is a {type(t).__name__}; keep other values as "
                                f"attributes of ctx (ctx.value = ...)")
        self._saved = tuple((t, None if t is None else t._version[0]) for t in tensors)

    @property
    def saved_tensors(self):
        for t, version in self._saved:
            if t is not None and t._version[0] != version:
                raise RuntimeError(
                    f"{self._op}: a tensor of shape {tuple(t.shape)} saved with "
                    f"ctx.save_for_backward was modified by an in-place operation (version "
                    f"{t._version[0]}, saved at version {version}); backward needs its old "
                    f"value. Use .clone() before the in-place change.")
        return tuple(t for t, _ in self._saved)

    def mark_non_differentiable(self, *outputs):
        """These outputs (the Tensors forward returns) get no gradient and never require grad;
        backward still receives a gradient for each: zeros."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value):
        """PyTorch's switch for None instead of zeros for unused outputs; only True (zeros,
        PyTorch's default) is available here."""
        if not value:
            raise NotImplementedError(f"{self._op}: ctx.set_materialize_grads(False) is not "
                                      f"available; backward receives zeros for outputs no "
                                      f"gradient reached")

    def mark_dirty(self, *tensors):
        """PyTorch's mark for an input changed in place by forward: refused here."""
        raise NotImplementedError(f"{self._op}: ctx.mark_dirty (a custom op changing its input "
                                  f"in place) is not available; return a new Tensor instead")


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


def apply(cls, *args, **kwargs):
    """Function.apply for a class in PyTorch's style (see the module docstring)."""
    args, rest = _forward_args(cls, args, kwargs)
    here = STATE.here                     # this thread's grad mode, module call, observers
    grad_on = here.grad_enabled
    needs = tuple(grad_on and isinstance(a, TensorBase) and a.requires_grad for a in args)
    ctx = FunctionCtx(cls.name(), needs)
    record = True in needs
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
    single = not isinstance(out, (tuple, list))
    items = (out,) if single else tuple(out)
    inputs = {id(a) for a in args if isinstance(a, TensorBase)}
    results, diff = [], []                 # diff: positions of the differentiable outputs
    for k, o in enumerate(items):
        if not isinstance(o, TensorBase):
            results.append(o)
            continue
        data = o._data.copy() if id(o) in inputs else o._data   # an input returned as is
        r = o._op_class._from_op(data, None)
        if id(o) not in inputs:
            r._version = o._version       # in place on r is in place on what ctx may have saved
        results.append(r)
        if record and o._data.dtype.kind in "fc" and id(o) not in ctx._non_differentiable:
            diff.append(k)
    if diff:
        _record(cls, ctx, frame, args, results, diff, time.perf_counter() - start)
    return results[0] if single else tuple(results)


def _node_class(cls):
    """The CustomNode subclass of a Function class, made once."""
    node_cls = cls.__dict__.get("_node_class")
    if node_cls is None:
        node_cls = type(f"{cls.__name__}Backward", (CustomNode,),
                        {"fn": cls, "op_name": cls.name(), "__slots__": ()})
        cls._node_class = node_cls
    return node_cls


def _record(cls, ctx, frame, args, results, diff, seconds):
    """Make the node and hang the differentiable outputs off it."""
    node = object.__new__(_node_class(cls))
    node.frame = frame
    node.ctx = ctx
    node.positions = tuple(i for i, a in enumerate(args) if isinstance(a, TensorBase))
    node.parents = tuple(args[i] for i in node.positions)
    node.needs_input_grad = tuple(ctx.needs_input_grad[i] for i in node.positions)
    node.versions = tuple([p._version[0] for p in node.parents])
    node.outputs = tuple(None if not isinstance(r, TensorBase) else (r.shape, r._data.dtype)
                         for r in results)
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
            out._version, out._ctx.out_version = r._version, r._version[0]
            results[k] = out


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
        grads = []
        for k, meta in enumerate(self.outputs):
            if meta is None:
                grads.append(None)
                continue
            shape, dtype = meta
            if k == self.direct:
                piece = g
            elif self.spans is not None and k in self.spans:
                a, b = self.spans[k]
                piece = g[a:b].reshape(shape)
                if piece.dtype != dtype:
                    piece = piece.to(dtype) if as_tensors else piece.astype(dtype)
            else:                            # not differentiable: zeros, as PyTorch
                piece = np.zeros(shape, dtype)
                if as_tensors:
                    piece = cls._from_op(piece, None)
            grads.append(piece if as_tensors else cls._from_op(piece, None))
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
        if self.fn.backward is Function.backward:     # a class with forward only, as PyTorch
            raise RuntimeError(f"{self.name()}: the Function defines no backward, so no "
                               f"gradient flows through it; write @staticmethod backward")
        return self.fn.backward

    def backward(self, g):
        rule = self._rule()
        if isinstance(g, (np.ndarray, np.generic)):     # the array walk: Tensors in no_grad
            with no_grad():
                res = rule(self.ctx, *self._output_grads(g, False))
            return self._input_grads(res, False)
        # create_graph=True: grad is enabled here, so the user's Tensor ops are recorded
        return self._input_grads(rule(self.ctx, *self._output_grads(g, True)), True)


def once_differentiable(backward):
    """PyTorch's decorator for a backward that cannot be differentiated (it leaves Tensors,
    through numpy say): it runs under no_grad, and under create_graph=True it refuses rather
    than hand back gradients whose own derivative would silently be zero."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        if STATE.grad_enabled:
            raise RuntimeError(f"{ctx._op}: its backward is marked @once_differentiable, so it "
                               f"cannot be differentiated (create_graph=True)")
        with no_grad():
            return backward(ctx, *grads)

    return wrapper


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
        if isinstance(g, (np.ndarray, np.generic)):
            return Place.__new__(Place).forward(g, size=flat.shape[0], start=self.start)
        return Place.apply(g, size=flat.shape[0], start=self.start)    # recorded


@fast_backward(Output)
def _output_backward(ctx, g):
    """The outputs' gradients go into one shared buffer (a Slice), then one backward."""
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
