"""Reverse-mode autograd: the Function node, the backward walk, and the switches around them.

The path of one op (see docs/design.md):

    a * b  ->  Tensor.__mul__  ->  ops.Mul.apply(a, b)
           ->  Function.apply: ctx = Mul(); out = ctx.forward(a.data, b.data)   (numpy arrays)
           ->  Tensor(out) with out._ctx = ctx, ctx.parents = (a, b)           (only if a grad is needed)
    loss.backward()  ->  toposort(loss)  ->  for each node, newest first:
           g = grads.pop(node); in_grads = node._ctx.backward(g); unbroadcast each to its parent's
           shape; sum into the parent's entry (or into leaf.grad); free the node's saved arrays.

Invariants: a node records its parents as a tuple (order and multiplicity kept, so `x * x` has the
parent x twice); forward and backward see numpy arrays only, so backward never builds a graph;
broadcasting is undone in exactly one place (`unbroadcast`, called by the walk on every edge); a
node never refers to its own output tensor, so the graph has no reference cycles and is freed by
reference counting alone.
"""
from __future__ import annotations

import contextlib
import os
import time
import traceback

import numpy as np

# numpy.exceptions is new in numpy 1.25; before it AxisError lived at the top level (gone in 2.0)
_AxisError = getattr(np, "exceptions", np).AxisError

Tensor = None  # set by tensor.py once the class exists (tensor.py imports this module)


class OpError(ValueError):
    """A bad shape, dim, dtype or argument given to an op, named in the user's terms."""


class _State:
    """Process-wide switches. One object, so the hot path reads one attribute per switch."""

    def __init__(self):
        self.grad_enabled = True
        self.scope = [""]          # module path stack, pushed by nn.Module.__call__
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


def no_grad():
    """Context manager and decorator: ops inside record no graph (their outputs need no grad)."""
    return _GradMode(False)


def enable_grad():
    """Context manager and decorator: turn graph recording back on inside a no_grad block."""
    return _GradMode(True)


def is_grad_enabled():
    """Whether ops currently record the graph (False inside no_grad())."""
    return STATE.grad_enabled


@contextlib.contextmanager
def scope(name):
    """Record `name` as the module path of every node created inside (nn.Module uses this)."""
    STATE.scope.append(name)
    try:
        yield
    finally:
        STATE.scope.pop()


def current_scope():
    return STATE.scope[-1]


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


_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_callsite():
    """The innermost stack frame outside tinygradx itself: the line that created a node."""
    for frame in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(frame.filename).startswith(_PKG_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line}"
    return "<unknown>"


# --------------------------------------------------------------------------------------------
# the node
# --------------------------------------------------------------------------------------------

def fmt_shapes(arrays):
    return ", ".join(str(tuple(np.shape(a))) for a in arrays)


class Function:
    """Base class of every differentiable op, built-in or user-written.

    Subclass it and write two methods that take and return numpy arrays:

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
    """

    __slots__ = ("parents", "needs_input_grad", "scope", "callsite", "__dict__")
    # A short lower-case name used in error messages, graphs and traces; defaults to the class name.
    op_name = None

    # -- subclass API ------------------------------------------------------------------------
    def forward(self, *arrays, **kwargs):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays

    # Optional, for one-input ops whose input gradient is zero outside a slice (indexing): return
    # (index, values) meaning "values at input[index], zeros elsewhere", or None to fall back to
    # backward. The walk then adds `values` into one shared gradient buffer, so the slices of a
    # split (q, k, v) fill one array instead of each making a full-size one that gets summed.
    backward_slice = None
    # True when backward always returns new arrays, not g, not saved arrays, not views of them
    # and never one array for two inputs: the walk may then add into them in place and hand
    # them to a leaf's .grad without a copy
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
        tensors = _as_tensors(inputs)
        ctx = cls.__new__(cls)
        if STATE.grad_enabled:
            needs = tuple([t.requires_grad for t in tensors])
        else:
            needs = (False,) * len(tensors)
        ctx.needs_input_grad = needs
        ctx.scope = STATE.scope[-1]
        arrays = [t.data for t in tensors]
        if STATE.instrumented:
            return _apply_instrumented(cls, ctx, tensors, arrays, kwargs)
        try:
            out = ctx.forward(*arrays, **kwargs)
        except (ValueError, IndexError, TypeError, _AxisError) as err:
            raise _op_error(cls, ctx.scope, arrays, kwargs, err) from None
        if True in needs:
            ctx.parents = tensors
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
    ref = None
    for x in inputs:
        if isinstance(x, Tensor):
            ref = x.data.dtype
            break
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            out.append(x)
        else:
            out.append(Tensor._const(x, ref))
    if ref is not None and ref.kind in "iub" and any(isinstance(x, float) for x in inputs):
        # as PyTorch: an integer tensor with a Python float computes in float32, not float64
        out = [Tensor._from_op(t.data.astype(np.float32), None) if t.data.dtype.kind in "iub"
               else t for t in out]
    return tuple(out)


# --------------------------------------------------------------------------------------------
# broadcasting, undone in one place
# --------------------------------------------------------------------------------------------

def unbroadcast(grad, shape):
    """Sum `grad` down to `shape`: the adjoint of numpy broadcasting `shape` up to grad.shape."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    if lead < 0:
        raise OpError(f"unbroadcast: gradient of shape {grad.shape} cannot belong to an input "
                      f"of shape {shape}")
    axes = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[lead + i] != 1:
            axes.append(lead + i)
        elif n != grad.shape[lead + i]:
            raise OpError(f"unbroadcast: gradient of shape {grad.shape} does not broadcast "
                          f"from input shape {shape}")
    return grad.sum(axis=tuple(axes), keepdims=True).reshape(shape)


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
        for p, need in zip(ctx.parents, ctx.needs_input_grad):
            if need and id(p) not in seen:
                stack.append((p, False))
    order.reverse()
    return order


def _initial_grad(root, gradient):
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward: grad can be created implicitly only for a scalar output, but the "
                f"output has shape {root.shape}; pass backward(gradient) with that shape "
                f"(e.g. loss.sum().backward() or y.backward(tgx.ones_like(y))).")
        return np.ones(root.data.shape, dtype=root.data.dtype)
    g = gradient.data if isinstance(gradient, Tensor) else np.asarray(gradient, root.data.dtype)
    if g.shape != root.data.shape:
        raise OpError(f"backward: gradient has shape {g.shape} but the output has shape "
                      f"{root.shape}; they must match")
    return g


def run_backward(roots, root_grads, retain_graph=False, capture=None):
    """Propagate gradients from `roots` to every tensor behind them that needs one.

    With `capture` (a dict id(tensor) -> None) the gradients of those tensors are stored in it
    and no `.grad` is touched (this is `tgx.grad`); otherwise leaves accumulate into `.grad`.
    """
    grads = {}
    for r, g in zip(roots, root_grads):
        if not r.requires_grad:
            raise RuntimeError(
                f"backward: the output (shape {r.shape}) does not require grad and has no "
                f"graph: no input had requires_grad=True, or it was computed under no_grad()")
        grads[id(r)] = g if id(r) not in grads else grads[id(r)] + g
    anomaly = STATE.anomaly
    timers = STATE.backward_observers
    # ids of gradient arrays the walk allocated itself (sums, slice buffers): nothing else holds
    # them, so further contributions are added in place and a leaf may keep one without a copy
    owned = set()
    # slice buffers not yet fully written: id(tensor) -> (axis, [(start, stop), ...]). The first
    # slice of a split goes into an uninitialised buffer; the gaps are zeroed only if they are
    # still open when the gradient is read (q, k, v cover it all: no zero-fill at all)
    partial = {}
    for t in toposort(roots):
        g = grads.pop(id(t), None)
        if g is None:
            continue  # no gradient reached this tensor (e.g. every path returned None)
        if partial and id(t) in partial:
            _fill_gaps(g, partial.pop(id(t)))
        mine = id(g) in owned
        if mine:
            owned.discard(id(g))
        if t._hooks:
            mine = False                    # a hook may keep the array it was shown
            for hook in t._hooks:
                replaced = hook(Tensor._from_op(g, None))
                if replaced is not None:
                    g = replaced.data if isinstance(replaced, Tensor) else np.asarray(replaced)
        ctx = t._ctx
        if capture is not None:
            if id(t) in capture:
                capture[id(t)] = g
        elif ctx is None or t._retain_grad:
            # leaves (and retain_grad tensors) accumulate across backward calls, as in PyTorch
            if t.grad is None:
                if not (mine and ctx is None and g.dtype == t.data.dtype):
                    g = np.array(g, dtype=t.data.dtype, copy=True)
                t.grad = Tensor._from_op(g, None)
            else:
                t.grad.data += g
        if ctx is None:
            continue
        if timers:
            start = time.perf_counter()
        part = ctx.backward_slice(g) if ctx.backward_slice is not None else None
        if part is not None:
            _add_slice(grads, owned, partial, ctx, part, anomaly)
        else:
            in_grads = ctx.backward(g)
            if not isinstance(in_grads, tuple):
                in_grads = (in_grads,)
            if len(in_grads) != len(ctx.parents):
                raise RuntimeError(f"{ctx.name()}.backward returned {len(in_grads)} gradients "
                                   f"for {len(ctx.parents)} inputs")
            fresh = ctx.fresh_grads
            for p, ig, need in zip(ctx.parents, in_grads, ctx.needs_input_grad):
                if ig is None or not need:
                    continue
                made = False
                if ig.shape != p.data.shape:
                    ig, made = unbroadcast(ig, p.data.shape), True
                if ig.dtype != p.data.dtype:
                    ig, made = ig.astype(p.data.dtype), True
                new = (fresh or made) and type(ig) is np.ndarray   # numpy scalars are immutable
                if anomaly:
                    _check_finite(ig, ctx, p)
                prev = grads.get(id(p))
                if partial and id(p) in partial:
                    _fill_gaps(prev, partial.pop(id(p)))
                if prev is None:
                    grads[id(p)] = ig
                    if new:
                        owned.add(id(ig))
                elif id(prev) in owned:
                    prev += ig
                elif new:
                    ig += prev                          # ours to overwrite: no third array
                    grads[id(p)] = ig
                    owned.add(id(ig))
                else:
                    grads[id(p)] = total = prev + ig
                    if type(total) is np.ndarray:
                        owned.add(id(total))
        if timers:
            for fn in timers:
                fn(ctx, time.perf_counter() - start)
        if not retain_graph:
            ctx.free()


def _check_finite(ig, ctx, p):
    if not np.all(np.isfinite(ig)):
        raise FloatingPointError(
            f"detect_anomaly: the backward of {ctx.name()} (module {ctx.scope or '<top>'}) "
            f"produced NaN/Inf in the gradient of an input of shape {p.shape}; the node was "
            f"created at {getattr(ctx, 'callsite', '<unknown>')}")


def _add_slice(grads, owned, partial, ctx, part, anomaly):
    """Add a backward_slice result (index, values) into the parent's gradient buffer."""
    (p,) = ctx.parents
    index, values = part
    if values.dtype != p.data.dtype:
        values = values.astype(p.data.dtype)
    if anomaly:
        _check_finite(values, ctx, p)
    key = id(p)
    buf = grads.get(key)
    span = _axis_span(index, p.data.shape)
    if buf is None and span is not None:
        grads[key] = buf = np.empty(p.data.shape, dtype=p.data.dtype)
        owned.add(id(buf))
        buf[index] = values
        partial[key] = (span[0], [span[1:]])
        return
    cover = partial.get(key)
    if cover is not None:
        if span is not None and span[0] == cover[0] and \
                all(span[2] <= a or span[1] >= b for a, b in cover[1]):
            buf[index] = values                  # a part not written yet: a copy, no add
            cover[1].append(span[1:])
            return
        _fill_gaps(buf, partial.pop(key))
    if buf is None or id(buf) not in owned:
        if buf is None:
            buf = np.zeros(p.data.shape, dtype=p.data.dtype)
        else:
            buf = np.array(buf, copy=True)      # it may be shared: add into a copy
        grads[key] = buf
        owned.add(id(buf))
    buf[index] += values


def _axis_span(index, shape):
    """(axis, start, stop) when `index` selects a contiguous run along one axis and everything
    along the others (what split/chunk make); None for anything else."""
    if type(index) is not tuple or len(index) > len(shape):
        return None
    found = None
    for axis, ix in enumerate(index):
        if type(ix) is not slice:
            return None
        start, stop, step = ix.indices(shape[axis])
        if step != 1 or stop <= start:
            return None
        if start == 0 and stop == shape[axis]:
            continue
        if found is not None:
            return None
        found = (axis, start, stop)
    return found


def _fill_gaps(buf, cover):
    """Zero the parts of a partly written slice buffer that no slice wrote."""
    axis, spans = cover
    idx = [slice(None)] * buf.ndim
    pos = 0
    for a, b in sorted(spans):
        if a > pos:
            idx[axis] = slice(pos, a)
            buf[tuple(idx)] = 0
        pos = max(pos, b)
    if pos < buf.shape[axis]:
        idx[axis] = slice(pos, None)
        buf[tuple(idx)] = 0


def backward(tensor, gradient=None, retain_graph=False):
    """Accumulate d(tensor)/d(leaf) into every leaf's .grad (Tensor.backward calls this)."""
    run_backward([tensor], [_initial_grad(tensor, gradient)], retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """Return d(outputs)/d(inputs) as a tuple of Tensors, without touching any `.grad`.

    Like torch.autograd.grad: `outputs` and `inputs` are Tensors or sequences of them;
    `grad_outputs` gives the seed gradient for non-scalar outputs.
    """
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    seeds = [_initial_grad(o, g) for o, g in zip(outputs, grad_outputs)]
    for i, x in enumerate(inputs):
        if not x.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {x.shape}) does not require grad")
    capture = {id(x): None for x in inputs}
    run_backward(outputs, seeds, retain_graph, capture)
    result = []
    for i, x in enumerate(inputs):
        g = capture[id(x)]
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: input {i} (shape {x.shape}) was not used to compute "
                                   f"the outputs; pass allow_unused=True to get None for it")
            result.append(None)
        else:
            result.append(Tensor._from_op(np.array(g, copy=True), None))
    return tuple(result)


def manual_seed(seed):
    """Seed tinygradx's one random generator (randn, rand, dropout, initialisation)."""
    STATE.rng = np.random.default_rng(seed)


def get_rng_state():
    """The generator's state as a JSON-serialisable dict (for checkpoints)."""
    return STATE.rng.bit_generator.state


def set_rng_state(state):
    """Restore the generator from a dict made by get_rng_state()."""
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    STATE.rng = rng


def default_rng():
    return STATE.rng

