"""The node and the switches around it: `Function` (the base of every op: run forward on the
inputs' arrays, record the node), grad mode, module frames, anomaly detection, observers, and
`unbroadcast`. The walk that runs the nodes backward is `walk.py`; a PyTorch-style Function
(static forward/backward on Tensors) is tinygradx.autograd's `custom_function.py`, a subclass.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback

import numpy as np

from .dtypes import check_unsigned_op
from .tensor_base import TensorBase
from .xp import of
# numpy.exceptions is new in numpy 1.25; before it AxisError lived at the top level (gone in 2.0)
_AxisError = getattr(np, "exceptions", np).AxisError


class OpError(ValueError):
    """A bad shape, dim, dtype or argument given to an op, named in the user's terms."""


class _State:
    """The switches in one object (the hot path reads one attribute each). Anomaly detection,
    observers, the generator: the process's; grad mode, module calls: each thread's (`here`)."""

    def __init__(self):
        self.here = None           # this thread's switches (_ThreadSwitches, made below ROOT)
        self.instrumented = False  # True while any observer below is active (slow path)
        self.anomaly = False
        self.observers = []        # callables(ctx, inputs, out, seconds), e.g. trace and profile
        self.backward_observers = []  # callables(ctx, seconds) after each node's backward
        self.rng = np.random.default_rng(0)

    def refresh(self):
        self.instrumented = self.anomaly or bool(self.observers)

    grad_enabled = property(lambda s: s.here.grad_enabled,
                            lambda s, on: setattr(s.here, "grad_enabled", on))
    frame = property(lambda s: s.here.frame, lambda s, f: setattr(s.here, "frame", f))


class _ThreadSwitches(threading.local):
    """A thread's own switches, as PyTorch's grad mode: a new thread records, outside any call."""

    def __init__(self):    # observed: False inside a custom Function's forward (its inner ops)
        self.grad_enabled, self.frame, self.observed = True, ROOT, True


STATE = _State()


# --------------------------------------------------------------------------------------------
# switches: no_grad, scope, anomaly detection, observers
# --------------------------------------------------------------------------------------------

class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        self.prev, STATE.grad_enabled = STATE.grad_enabled, self.enabled

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
    prev, STATE.anomaly = STATE.anomaly, True
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


# The library's own frames, skipped when naming the user's line: the whole package the core
# sits in (tinygradx/), or the core's folder alone when it runs on its own (`import core`).
_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG_DIR = (os.path.dirname(_HERE) if __name__.count(".") >= 2 else _HERE) + os.sep


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

    Users of tinygradx write PyTorch's style: `@staticmethod forward(ctx, ...)` and
    `backward(ctx, *grads)` on Tensors, several outputs allowed (tinygradx.autograd's
    custom_function.py runs it, a subclass of this one). The engine's own ops, and
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
    scalars, at least one a Tensor: the result takes its class); keyword arguments are passed
    to `forward` unchanged (axes, shapes, flags).
    `backward` returns one array (or None) per positional input, in order; it may return a
    broadcast-shaped gradient, which the engine sums back to the input's shape.
    `self.needs_input_grad[i]` tells whether input i needs a gradient at all.

    `backward` is the op's one derivative: on arrays in the ordinary walk, on Tensors under
    `create_graph=True` (backprop.graph_view: a saved input is then the input Tensor, the
    saved output the output Tensor, masks stay as saved). Written with operators (and
    `xp.py` for exp, where, ...) it has higher derivatives for free, as Cube does. A faster
    array version goes beside the op in the speed layer (`tgx.autograd.fast_backward(Op)`,
    fast/dispatch.py), never as a second method.
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
    # True when backward returns new arrays (or g itself, which the walk checks for), not saved
    # arrays, not views of them and never one array for two inputs: the walk may then add into
    # them in place and hand them to a leaf's .grad without a copy
    fresh_grads = False

    @classmethod
    def explain(cls, arrays, kwargs, err):
        """Turn a numpy failure inside forward into a sentence in the op's own terms."""
        return f"cannot apply to input shapes {fmt_shapes(arrays)}: {err}"

    # -- engine ------------------------------------------------------------------------------
    @classmethod
    def name(cls):
        return cls.op_name or cls.__name__.lower()

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run forward on the inputs' arrays and, if a gradient is needed, record the node."""
        tensors, out_cls = _as_tensors(cls, inputs)
        ctx = cls.__new__(cls)
        here = STATE.here                  # this thread's grad mode and module call
        if here.grad_enabled:
            needs = tuple([t.requires_grad for t in tensors])
        else:
            needs = (False,) * len(tensors)
        ctx.needs_input_grad = needs
        ctx.frame = here.frame
        arrays = [t._data for t in tensors]
        check_unsigned_op(cls, arrays)     # most ops refuse uint16/32/64, as torch's do
        watched = STATE.instrumented       # anomaly detection or an observer (trace, profile)
        if watched:
            start = _watch_start(ctx)
        try:
            out = ctx.forward(*arrays, **kwargs)
        except (ValueError, IndexError, TypeError, _AxisError) as err:
            raise _op_error(cls, ctx.scope, arrays, kwargs, err) from None
        if True in needs:
            ctx.parents = tensors
            ctx.versions = tuple([t._version[0] for t in tensors])  # see versions.resolve_parents
            result = out_cls._from_op(out, ctx)
        else:
            result = out_cls._from_op(out, None)
        if watched:
            _watched(ctx, tensors, out, result, start)
        return result

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


def _watch_start(ctx):
    """Before a watched op's forward: where it was created (anomaly detection), the clock."""
    if STATE.anomaly:
        ctx.callsite = _user_callsite()
    return time.perf_counter()


def _watched(ctx, tensors, out, result, start):
    """After a watched op's forward: anomaly detection's check, then the observers."""
    seconds = time.perf_counter() - start
    if STATE.anomaly and np.issubdtype(np.asarray(out).dtype, np.floating):
        if not np.all(np.isfinite(out)):
            raise FloatingPointError(
                f"detect_anomaly: {ctx.name()} produced NaN/Inf in its forward output "
                f"(shape {np.shape(out)}, module {ctx.scope or '<top>'}); created at "
                f"{ctx.callsite}")
    for fn in list(STATE.observers) if STATE.here.observed else ():
        fn(ctx, tensors, result, seconds)


def _as_tensors(op, inputs):
    """(the inputs as tensors, the class of the op's result).

    Tensors of one class pass as they are, and their class makes the result. Otherwise tensors
    pass through; arrays and Python scalars become constants of the result's class, the
    most derived of the tensors' (tensor_base.result_class). A Python scalar takes the dtype of
    the first Tensor input, so `x * 0.5` stays float32. With no tensor among the inputs there is
    no class to follow (this module never names the Tensor class): refused, as PyTorch's ops
    refuse numpy arrays.
    """
    first = type(inputs[0]) if inputs else None
    for x in inputs:
        if type(x) is not first:
            break
    else:
        cls = getattr(first, "_op_class", None)
        if cls is not None:
            return inputs, cls
    cls = ref = None               # the most derived class (as result_class), the first dtype
    constants = False
    for x in inputs:
        if isinstance(x, TensorBase):
            c = x._op_class
            if cls is None:
                cls, ref = c, x._data.dtype
            elif c is not cls and issubclass(c, cls):
                cls = c
        else:
            constants = True
    if cls is None:
        raise no_tensor(op.name(), inputs)
    if not constants:              # tensors of several classes (x @ w, w a Parameter)
        return inputs, cls
    out = []
    for x in inputs:
        out.append(x if isinstance(x, TensorBase) else cls._const(x, ref))
    if ref.kind in "iub" and any(isinstance(x, float) for x in inputs):
        # as PyTorch: an integer tensor with a Python float computes in float32, not float64
        out = [cls._from_op(t._data.astype(np.float32), None) if t._data.dtype.kind in "iub"
               else t for t in out]
    return tuple(out), cls


def no_tensor(name, inputs):
    """The error for an op given no tensor at all (only arrays and numbers)."""
    got = ", ".join(type(x).__name__ for x in inputs) or "nothing"
    return TypeError(f"{name}: expected a Tensor among the inputs, got {got} (make one with "
                     f"tgx.tensor(...))")


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
    """Sum `grad` down to `shape`: the adjoint of numpy broadcasting `shape` up to grad.shape
    (an array, or a Tensor when create_graph records the walk: xp.py)."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    return of(grad).sum(grad, unbroadcast_axes(grad.shape, shape), True).reshape(shape)


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
STATE.here = _ThreadSwitches()   # made after ROOT: each thread's first frame
