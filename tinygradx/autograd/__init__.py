"""Reverse-mode autograd: the Function node, the backward walk, and the switches around them.

The path of one op (see docs/design.md):

    a * b  ->  Tensor.__mul__  ->  ops.Mul.apply(a, b)
           ->  Function.apply: ctx = Mul(); out = ctx.forward(a._data, b._data)  (numpy arrays)
           ->  Tensor(out) with out._ctx = ctx, ctx.parents = (a, b)  (only if a grad is needed)
    loss.backward()  ->  toposort(loss)  ->  for each node, newest first:
           g = grads.pop(node); in_grads = node._ctx.backward(g); unbroadcast each to its parent's
           shape; grads.add(parent, ...) sums it (gradbuf.Grads: who may add in place, slice
           buffers); a leaf's g goes into leaf.grad; free the node's saved arrays.

Invariants: a node records its parents as a tuple (order and multiplicity kept, so `x * x` has the
parent x twice); forward and backward see numpy arrays (a PyTorch-style op's Tensors under
no_grad, custom_function.py), so this walk never builds a graph (backprop.py holds the public
backward()/grad() and the walk for create_graph=True);
broadcasting is undone in exactly one place (`unbroadcast`, called by the walk on every edge); a
node never refers to its own output tensor, so the graph has no reference cycles and is freed by
reference counting alone.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
import time
import traceback

import numpy as np

from .fastpath import FAST_BACKWARD, Slice, fast_backward  # noqa: F401  (the public hook)
from .gradbuf import Grads
from .versions import resolve_parents
# numpy.exceptions is new in numpy 1.25; before it AxisError lived at the top level (gone in 2.0)
_AxisError = getattr(np, "exceptions", np).AxisError

Tensor = None  # set by tensor.py once the class exists (tensor.py imports this module)
apply_static = None  # set by custom_function.py: Function.apply of PyTorch's style


class OpError(ValueError):
    """A bad shape, dim, dtype or argument given to an op, named in the user's terms."""


class _State:
    """Process-wide switches. One object, so the hot path reads one attribute per switch."""

    def __init__(self):
        self.grad_enabled = True
        self.frame = None          # the innermost call (a Frame, ROOT outside any; see below)
        self.instrumented = False  # True while any observer below is active (slow path)
        self.anomaly = False
        self.observers = []        # callables(ctx, inputs, out, seconds), e.g. trace and profile
        self.backward_observers = []  # callables(ctx, seconds) after each node's backward
        self.rng = np.random.default_rng(0)

    def refresh(self):
        self.instrumented = self.anomaly or bool(self.observers)


STATE = _State()


# --------------------------------------------------------------------------------------------
# switches: no_grad, scope, anomaly detection, observers
# --------------------------------------------------------------------------------------------

class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = self.enabled

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False

    def _recreate_cm(self):        # a decorated function's every call gets its own switch
        return _GradMode(self.enabled)


def no_grad(func=None):
    """Context manager and decorator: ops inside record no graph (their outputs need no grad).
    `@no_grad()` and a bare `@no_grad` alike, as torch."""
    return _GradMode(False) if func is None else _GradMode(False)(func)


def enable_grad(func=None):
    """Context manager and decorator: turn graph recording back on inside a no_grad block
    (`@enable_grad()` or a bare `@enable_grad`)."""
    return _GradMode(True) if func is None else _GradMode(True)(func)


def is_grad_enabled():
    """Whether ops currently record the graph (False inside no_grad())."""
    return STATE.grad_enabled


@contextlib.contextmanager
def scope(name):
    """Record `name` as the module path of every node created inside."""
    prev, STATE.frame = STATE.frame, Frame(STATE.frame, name)
    try:
        yield
    finally:
        STATE.frame = prev


def current_scope():
    return STATE.frame.path


@contextlib.contextmanager
def detect_anomaly():
    """Raise at the first NaN/Inf produced by an op, forward or backward.

    The error names the op, its module path and the line of user code that created the node.
    Costs a finiteness check per op and a stack walk per node, so use it while debugging.
    """
    prev = STATE.anomaly
    STATE.anomaly = True
    STATE.refresh()
    try:
        yield
    finally:
        STATE.anomaly = prev
        STATE.refresh()


@contextlib.contextmanager
def observe(fn):
    """Call fn(ctx, inputs, out, seconds) after every op while active (trace and profile use it)."""
    STATE.observers.append(fn)
    STATE.refresh()
    try:
        yield fn
    finally:
        STATE.observers.remove(fn)
        STATE.refresh()


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tinygradx/


def _user_callsite():
    """The innermost stack frame outside tinygradx itself: the line that created a node."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PKG_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line}"
    return "<unknown>"


def user_line():
    """file:line of the innermost frame outside tinygradx (cheap: no source lookup)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


# --------------------------------------------------------------------------------------------
# the node
# --------------------------------------------------------------------------------------------

def fmt_shapes(arrays):
    return ", ".join(str(tuple(np.shape(a))) for a in arrays)


class Function:
    """Base class of every differentiable op, built-in or user-written.

    Users write PyTorch's style: `@staticmethod forward(ctx, ...)` and `backward(ctx, *grads)`
    on Tensors, several outputs allowed (custom_function.py runs it). The engine's own ops, and
    users who want the lower level, subclass it with two methods on numpy arrays:

        class Cube(Function):
            def forward(self, x):              # arrays in, one array out
                self.save_for_backward(x)
                return x ** 3
            def backward(self, grad):          # d(loss)/d(out) in, one grad per input out
                (x,) = self.saved_tensors
                return 3 * x ** 2 * grad

        y = Cube.apply(t)

    Positional arguments of `apply` are the differentiable inputs (Tensors, arrays or Python
    scalars); keyword arguments are passed to `forward` unchanged (axes, shapes, flags).
    `backward` returns one array (or None) per positional input, in order; it may return a
    broadcast-shaped gradient, which the engine sums back to the input's shape.
    `self.needs_input_grad[i]` tells whether input i needs a gradient at all.

    `backward` is the op's one derivative: on arrays in the ordinary walk, on Tensors under
    `create_graph=True` (backprop.graph_view: a saved input is then the input Tensor, the
    saved output the output Tensor, masks stay as saved). Written with operators (and
    `ops.xp` for exp, where, ...) it has higher derivatives for free, as Cube does. A faster
    array version goes beside the op, `@fast_backward(Op)` (fastpath.py), never a second method.
    """

    __slots__ = ("parents", "needs_input_grad", "frame", "callsite", "__dict__")
    scope = property(lambda self: self.frame.path, doc="the module path, worked out when read")
    # A short lower-case name used in error messages, graphs and traces; defaults to the class name.
    op_name = None

    # -- subclass API ------------------------------------------------------------------------
    def forward(self, *arrays, **kwargs):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays

    # The version of the output tensor when this node made it: 0, except for a node that an
    # in-place op made the new history of an existing tensor (Tensor._inplace sets it)
    out_version = 0
    # True when backward always returns new arrays, not g, not saved arrays, not views of them
    # and never one array for two inputs: the walk may then add into them in place and hand
    # them to a leaf's .grad without a copy
    fresh_grads = False

    @classmethod
    def explain(cls, arrays, kwargs, err):
        """Turn a numpy failure inside forward into a sentence in the op's own terms."""
        return f"cannot apply to input shapes {fmt_shapes(arrays)}: {err}"

    # -- engine ------------------------------------------------------------------------------
    static_style = False             # forward is a staticmethod: PyTorch's style

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        f, b = (isinstance(inspect.getattr_static(cls, m), staticmethod)
                for m in ("forward", "backward"))
        if f != b and inspect.getattr_static(cls, "backward") is not Function.backward:
            raise TypeError(f"{cls.__name__}: forward and backward must both be @staticmethods "
                            f"taking ctx (PyTorch's style) or both plain methods on arrays")
        cls.static_style = f

    @classmethod
    def name(cls):
        return cls.op_name or cls.__name__.lower()

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run forward on the inputs' arrays and, if a gradient is needed, record the node."""
        if cls.static_style:
            return apply_static(cls, inputs, kwargs)
        tensors = _as_tensors(inputs)
        ctx = cls.__new__(cls)
        if STATE.grad_enabled:
            needs = tuple([t.requires_grad for t in tensors])
        else:
            needs = (False,) * len(tensors)
        ctx.needs_input_grad = needs
        ctx.frame = STATE.frame
        arrays = [t._data for t in tensors]
        if STATE.instrumented:
            return _apply_instrumented(cls, ctx, tensors, arrays, kwargs)
        try:
            out = ctx.forward(*arrays, **kwargs)
        except (ValueError, IndexError, TypeError, _AxisError) as err:
            raise _op_error(cls, ctx.scope, arrays, kwargs, err) from None
        if True in needs:
            ctx.parents = tensors
            ctx.versions = tuple([t._version[0] for t in tensors])  # see versions.resolve_parents
            return Tensor._from_op(out, ctx)
        return Tensor._from_op(out, None)

    def free(self):
        """Drop saved arrays and parents: the graph behind this node is gone."""
        self.__dict__.clear()
        self.parents = None

    def __repr__(self):
        where = f" at {self.scope}" if self.scope else ""
        return f"<{self.name()}{where}>"


def _op_error(cls, scope, arrays, kwargs, err):
    if isinstance(err, OpError):
        msg = str(err)
    else:
        msg = cls.explain(arrays, kwargs, err)
    where = f" (in {scope})" if scope else ""
    return OpError(f"{cls.name()}{where}: {msg}")


def _apply_instrumented(cls, ctx, tensors, arrays, kwargs):
    """The slow path of apply: anomaly checks and observers (trace, profile)."""
    if STATE.anomaly:
        ctx.callsite = _user_callsite()
    start = time.perf_counter()
    try:
        out = ctx.forward(*arrays, **kwargs)
    except (ValueError, IndexError, TypeError, _AxisError) as err:
        raise _op_error(cls, ctx.scope, arrays, kwargs, err) from None
    seconds = time.perf_counter() - start
    if STATE.anomaly and np.issubdtype(np.asarray(out).dtype, np.floating):
        if not np.all(np.isfinite(out)):
            raise FloatingPointError(
                f"detect_anomaly: {cls.name()} produced NaN/Inf in its forward output "
                f"(shape {np.shape(out)}, module {ctx.scope or '<top>'}); created at "
                f"{ctx.callsite}")
    if True in ctx.needs_input_grad:
        ctx.parents = tensors
        ctx.versions = tuple([t._version[0] for t in tensors])
        result = Tensor._from_op(out, ctx)
    else:
        result = Tensor._from_op(out, None)
    for fn in list(STATE.observers):
        fn(ctx, tensors, result, seconds)
    return result


def _as_tensors(inputs):
    """Tensors pass through; arrays and Python scalars become constants.

    A Python scalar takes the dtype of the first Tensor input, so `x * 0.5` stays float32.
    """
    for x in inputs:
        if not isinstance(x, Tensor):
            break
    else:
        return inputs              # all Tensors already (the common case): nothing to convert
    ref = None
    for x in inputs:
        if isinstance(x, Tensor):
            ref = x._data.dtype
            break
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            out.append(x)
        else:
            out.append(Tensor._const(x, ref))
    if ref is not None and ref.kind in "iub" and any(isinstance(x, float) for x in inputs):
        # as PyTorch: an integer tensor with a Python float computes in float32, not float64
        out = [Tensor._from_op(t._data.astype(np.float32), None) if t._data.dtype.kind in "iub"
               else t for t in out]
    return tuple(out)


# --------------------------------------------------------------------------------------------
# broadcasting, undone in one place
# --------------------------------------------------------------------------------------------

def unbroadcast_axes(gshape, shape):
    """The axes to sum a gradient of shape `gshape` over to get back to `shape` (the axes
    broadcasting added or stretched), or an OpError if gshape cannot come from shape."""
    lead = len(gshape) - len(shape)
    if lead < 0:
        raise OpError(f"unbroadcast: gradient of shape {gshape} cannot belong to an input "
                      f"of shape {shape}")
    axes = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
        elif n != gshape[lead + i]:
            raise OpError(f"unbroadcast: gradient of shape {gshape} does not broadcast "
                          f"from input shape {shape}")
    return tuple(axes)


def unbroadcast(grad, shape):
    """Sum `grad` down to `shape`: the adjoint of numpy broadcasting `shape` up to grad.shape."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    return grad.sum(axis=unbroadcast_axes(grad.shape, shape), keepdims=True).reshape(shape)


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
                 carrier=None):
    """Propagate gradients from `roots` to every tensor behind them that needs one (with
    `inputs`, only along the paths to them: `toposort_to`). Each complete gradient goes to
    `store(t, g, owned)` (default: leaves and retain_grad tensors accumulate into `.grad`).
    `carrier`: arrays (ArrayWalk, training) or Tensors (backprop.GraphWalk, create_graph)."""
    carrier = carrier or ArrayWalk
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
                node_backward(t._ctx, g, grads, t)
                if not retain_graph:
                    t._ctx.free()


def _node_backward(ctx, g, grads, t=None):
    """Call one node's derivative with its output's gradient and hand the results to `grads`."""
    fast = FAST_BACKWARD.get(type(ctx))
    in_grads = fast(ctx, g) if fast is not None else None
    if in_grads is None:
        in_grads = ctx.backward(g)
    elif type(in_grads) is Slice:                 # getitem: values at index, zeros elsewhere
        (p,) = ctx.parents
        grads.add_slice(p, in_grads.index, _cast(in_grads.values, p, ctx))
        return
    in_grads = grads_per_input(ctx, in_grads, "backward")
    for i, (p, ig, need) in enumerate(zip(ctx.parents, in_grads, ctx.needs_input_grad,
                                          strict=True)):
        if ig is not None and need:
            try:
                new = _cast(unbroadcast(ig, p._data.shape), p, ctx)
            except (OpError, AttributeError):
                raise bad_grad(ctx, "backward", i, ig, p) from None
            grads.add(p, new, ctx.fresh_grads or new is not ig)  # made here: ours to write


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


def _cast(ig, p, ctx):
    """`ig` in its parent's dtype, checked for NaN/Inf under detect_anomaly()."""
    if ig.dtype != p._data.dtype:
        ig = ig.astype(p._data.dtype)
    if STATE.anomaly:
        _check_finite(ig, ctx, p)
    return ig


def _timed(node_backward):
    """node_backward for `tgx.profile()`: tell each backward observer how long a node took."""
    def timed(ctx, g, grads, t):
        start = time.perf_counter()
        node_backward(ctx, g, grads, t)
        seconds = time.perf_counter() - start
        for fn in STATE.backward_observers:
            fn(ctx, seconds)
    return timed


def check_root(r):
    if not r.requires_grad:
        raise RuntimeError(
            f"backward: the output (shape {r.shape}) does not require grad and has no "
            f"graph: no input had requires_grad=True, or it was computed under no_grad()")


def _run_hooks(t, g):
    for _, hook in t._hooks:
        replaced = hook(Tensor._from_op(g, None))
        if replaced is not None:
            g = replaced._data if isinstance(replaced, Tensor) else np.asarray(replaced)
    return g


def _store_grad(t, g, owned):
    """Leaves (and retain_grad tensors) accumulate across backward calls, as in PyTorch."""
    if t._ctx is not None and not t._retain_grad:
        return
    if t.grad is None:
        if not (owned and t._ctx is None and g.dtype == t._data.dtype):
            g = np.array(g, dtype=t._data.dtype, copy=True)
        t.grad = Tensor._from_op(g, None)
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


# --------------------------------------------------------------------------------------------
# frames: the calls a node was created in, named only when asked
# --------------------------------------------------------------------------------------------

class Frame:
    """One call on the scope stack: the frame below it (`parent`) and a fixed name (`scope`).

    Every node keeps the frame on top when it was created (ctx.frame) and ctx.scope reads its
    `path`, worked out by `resolve` when first asked and then cached. nn.Module.__call__ pushes
    module._ModuleFrame, whose path comes from the module tree (one small object per module
    call, nothing per op).
    """

    __slots__ = ("parent", "name", "_path")

    def __init__(self, parent, name):
        self.parent = parent
        self.name = name

    @property
    def path(self):
        try:
            return self._path
        except AttributeError:
            path = self._path = self.resolve()
            return path

    def resolve(self):
        return self.name

    def __repr__(self):
        return f"<{type(self).__name__} {self.path or '<top>'}>"


ROOT = Frame(None, "")  # the frame of code outside any call
STATE.frame = ROOT
