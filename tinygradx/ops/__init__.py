"""The differentiable primitives: one Function per op, forward and backward side by side.

Every forward takes numpy arrays and returns one array; every backward takes d(loss)/d(out) and
returns one gradient per input (None where the input needs none). Gradients may keep the
broadcast shape: the engine's `unbroadcast` sums them back. The docstring of each op is its
vector-Jacobian product. The fused ops (GELU, softmax, layer norm, cross-entropy, dropout,
attention) live in fused.py; the ones that only move or overwrite elements (reshape, permute,
expand, indexing, cat/stack, triu/tril, fill/copy/setitem) in movement.py; matmul, linear and
embedding in ops_linalg.py.
"""
from __future__ import annotations


import math

import numpy as np

from ..fast._erf import erf as _erf, erf_grad as _erf_grad
from .. import autograd
from ..fast import parallel
from ..autograd import Function, OpError
from ..autograd.tensor_base import TensorBase, result_class
from .dtypes import result_type

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def explain_broadcast(arrays):
    """Explain a broadcasting failure: which dimensions clash."""
    shapes = [tuple(np.shape(a)) for a in arrays]
    n = max(len(s) for s in shapes)
    padded = [(1,) * (n - len(s)) + s for s in shapes]
    for axis in range(n):
        sizes = {p[axis] for p in padded} - {1}
        if len(sizes) > 1:
            return (f"shapes {' and '.join(map(str, shapes))} are not broadcastable: sizes "
                    f"{' vs '.join(str(p[axis]) for p in padded)} at dim {axis - n}")
    return f"shapes {' and '.join(map(str, shapes))}"


def promote(operands, true_divide=False, op="promote"):
    """The operands of an element-wise op in the dtype `dtypes.result_type` gives (torch's
    rule); with true_divide an integer or bool result becomes float32 (int / int).

    An operand already of that dtype, or a float of a lower precision (numpy widens it on
    the fly, and the walk casts its gradient back), is left alone; any other tensor is cast:
    one that needs a gradient through a Cast node, a constant directly.
    """
    given = [x for x in operands if isinstance(x, TensorBase)]
    if not given:                       # no class to make the result with (autograd.node)
        raise TypeError(f"{op}: expected a Tensor among the operands, got "
                        f"{', '.join(type(x).__name__ for x in operands)} (make one with "
                        f"tgx.tensor(...))")
    Tensor = result_class(given)        # the class of the result: the operands'
    # arrays and lists go through the Tensor boundary (its dtype check) before they count
    operands = [x if isinstance(x, (TensorBase, bool, int, float)) else Tensor._const(x, None)
                for x in operands]
    dt = result_type(*operands)
    if true_divide and dt.kind != "f":
        dt = np.dtype(np.float32)
    out = []
    for x in operands:
        if not isinstance(x, TensorBase):
            out.append(Tensor._from_op(np.asarray(x._data if isinstance(x, TensorBase) else x,
                                                  dtype=dt), None))
            continue
        d = x._data.dtype
        if d == dt or (d.kind == dt.kind == "f" and np.can_cast(d, dt)):
            out.append(x)
        elif x.requires_grad and autograd.STATE.grad_enabled:
            out.append(Cast.apply(x, dtype=dt))
        else:
            out.append(Tensor._from_op(x._data.astype(dt), None))
    return out


def const(array):
    """A constant Tensor (no gradient) around an array: the masks and weights that graph rules
    take from what forward saved (where a gradient passes, how a tie is split). They are read
    from the saved arrays, not from the inputs: an in-place op (x.clamp_()) overwrites its
    input's memory, but its node keeps a copy of what it saved (Tensor._inplace)."""
    return TensorBase._from_op(np.asarray(array), None)


def _put(x, mask, value):
    """x with `value` where mask (a constant there: no gradient flows to x through it)."""
    return Where.apply(value, x, cond=mask) if mask.any() else x


class _Binary(Function):
    """An element-wise op of two operands: they are promoted to one dtype first (`promote`)."""
    true_divide = False

    @classmethod
    def apply(cls, a, b, **kwargs):
        if isinstance(a, TensorBase):
            da = a._data.dtype
            if isinstance(b, TensorBase):
                if da == b._data.dtype and (da.kind == "f" or not cls.true_divide):
                    return Function.apply.__func__(cls, a, b, **kwargs)
            elif da.kind == "f" and isinstance(b, (int, float)):   # x * 0.5: a's dtype
                return Function.apply.__func__(cls, a, b, **kwargs)
        elif (isinstance(b, TensorBase) and b._data.dtype.kind == "f"
              and isinstance(a, (int, float))):
            return Function.apply.__func__(cls, a, b, **kwargs)
        return Function.apply.__func__(cls, *promote((a, b), cls.true_divide, cls.name()),
                                       **kwargs)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return explain_broadcast(arrays)


# ------------------------------------------------------------------------------------------
# element-wise binary
# ------------------------------------------------------------------------------------------

class Add(_Binary):
    """d(a+b) = (g, g)"""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g

    def backward_graph(self, g, a, b):
        return g, g


class Sub(_Binary):
    """d(a-b) = (g, -g). A bool tensor operand is refused, as in PyTorch."""
    graph_reads_inputs = False     # its backward_graph reads no input values

    @classmethod
    def apply(cls, a, b, **kwargs):
        for x in (a, b):
            if isinstance(x, TensorBase) and x._data.dtype.kind == "b":
                raise TypeError("-: subtraction with a bool tensor is not supported (as in "
                                "PyTorch); use ~x, x ^ y or logical_xor for bools, or cast "
                                "with .long() first")
        return super().apply(a, b, **kwargs)
    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, (-g if self.needs_input_grad[1] else None)

    def backward_graph(self, g, a, b):
        return g, -g


class Mul(_Binary):
    """d(a*b) = (g*b, g*a)"""
    def forward(self, a, b):
        na, nb = self.needs_input_grad     # keep only what backward reads (as PyTorch: a
        self.a = a if nb else None         # constant factor is not saved, so x[i] = x[i] * 2
        self.b = b if na else None         # may change x in place)
        return a * b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (g * self.b if na else None), (g * self.a if nb else None)

    def backward_graph(self, g, a, b):
        return g * b, g * a


class Div(_Binary):
    """d(a/b) = (g/b, -g*a/b^2). int / int is float32, as in PyTorch (true division).

    Keeps what backward reads, as PyTorch: b when any input needs a gradient, a only when b
    does; never the output, so `s = q @ k.T / d; s.masked_fill_(m, -1e9)` may change s."""
    true_divide = True

    def forward(self, a, b):
        na, nb = self.needs_input_grad
        self.b = b if na or nb else None
        self.a = a if nb else None
        return a / b

    def backward(self, g):
        na, nb = self.needs_input_grad
        ga = g / self.b
        gb = -ga * self.a / self.b if nb else None
        return (ga if na else None), gb

    def backward_graph(self, g, a, b):
        ga = g / b
        return ga, -ga * a / b


class Pow(_Binary):
    """d(a**b) = (g*b*a**(b-1), g*a**b*log a), with torch's values at the edges: the first
    term is 0 where b == 0, the second 0 where a == 0 and b >= 0."""
    def forward(self, a, b):
        if a.dtype.kind == "b":
            raise OpError("not defined for two bool tensors (PyTorch refuses them too)")
        self.a, self.b = a, b
        if a.dtype.kind in "iu" and np.any(b < 0):
            self.out = _int_pow(a, b)
        else:
            self.out = a ** b
        return self.out

    def backward(self, g):
        a, b = self.a, self.b
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                # b * a**(b-1), taken as 0 where b == 0 (so 0**0 has gradient 0, as torch)
                ga = g * np.where(b == 0, 0, b * a ** (b - 1)).astype(g.dtype, copy=False)
            if self.needs_input_grad[1]:
                # a**b log a, taken as 0 where a == 0 and b >= 0; 0**b with b < 0 gives -inf
                # and a negative base NaN, as in torch
                dlog = np.where((a == 0) & (b >= 0), 0, self.out * np.log(a))
                gb = g * dlog.astype(g.dtype, copy=False)
        return ga, gb

    def backward_graph(self, g, a, b):
        ad, bd = self.a, self.b              # for the masks only (a copy if a changed in place)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                # b * a**(b-1) is 0 where b == 0 by itself, except where a**(b-1) is 0**-1 =
                # inf (or a is NaN): there the base becomes 1 and the term 0, so no 0 * inf
                # turns the next derivative into NaN. Elsewhere at b == 0 the formula stays,
                # and its derivative in b is the true one (1/a), not 0.
                edge = (bd == 0) & ((ad == 0) | np.isnan(ad))
                base = _put(a, edge, 1.0)
                ga = g * _put(b * base ** (b - 1), edge, 0.0)
            if self.needs_input_grad[1]:
                edge = (ad == 0) & (bd >= 0)          # 0 * log 0: taken as 0, as backward
                base = _put(a, edge, 1.0)
                gb = g * _put(base ** b * base.log(), edge, 0.0)
        return ga, gb


def _int_pow(a, b):
    """Integer a ** b with negative exponents as torch's tensors (C's integer power): 1 ** b
    is 1, (-1) ** b is +-1, anything else ** negative is 0 (0 ** -1 included)."""
    neg = b < 0
    out = a ** np.where(neg, 0, b)
    at_neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, at_neg, out).astype(out.dtype, copy=False)


class PowScalar(Function):
    """d(x**p) = g*p*x**(p-1) for a constant exponent p."""
    op_name = "pow"

    def forward(self, x, p):
        if isinstance(p, np.generic):
            p = p.item()                     # a Python number: it must not widen x's dtype
        if x.dtype.kind != "f":
            if isinstance(p, float):
                x = x.astype(np.float32)     # int ** 0.5 is float32, as in torch
            elif p < 0:
                raise OpError(f"integers to negative integer powers are not allowed (as in "
                              f"torch): {x.dtype} tensor ** {p}; use a float tensor")
            elif x.dtype.kind == "b":
                x = x.astype(np.int64)       # bool ** 2 is int64, as in torch
        self.x, self.p = x, p
        return x ** p

    def backward(self, g):
        p = self.p
        if p == 2:
            return g * (2 * self.x)
        if p == 0:
            return np.zeros_like(g)          # d(x**0)/dx = 0, also at x = 0 (torch)
        return g * (p * self.x ** (p - 1))

    def backward_graph(self, g, x):
        p = self.p
        if p == 2:
            return g * (2 * x)
        if p == 0:
            return g * 0
        return g * (p * x ** (p - 1))


class Maximum(_Binary):
    """The larger input gets g; on ties each gets g/2 (as PyTorch)."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.maximum(a, b)

    def backward(self, g):
        wa = (self.a > self.b) + 0.5 * (self.a == self.b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)

    def backward_graph(self, g, a, b):
        wa = (self.a > self.b) + 0.5 * (self.a == self.b)
        dt = g._data.dtype
        return g * const(wa.astype(dt)), g * const((1 - wa).astype(dt))


class Minimum(_Binary):
    """The smaller input gets g; on ties each gets g/2."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.minimum(a, b)

    def backward(self, g):
        wa = (self.a < self.b) + 0.5 * (self.a == self.b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)

    def backward_graph(self, g, a, b):
        wa = (self.a < self.b) + 0.5 * (self.a == self.b)
        dt = g._data.dtype
        return g * const(wa.astype(dt)), g * const((1 - wa).astype(dt))


# ------------------------------------------------------------------------------------------
# element-wise unary
# ------------------------------------------------------------------------------------------

def as_float(x):
    """x itself if it is floating point, else x in float32: exp, log, sqrt, tanh, sigmoid,
    erf, softmax of an int or bool tensor are float32 (torch's default dtype), not float64."""
    return x if x.dtype.kind == "f" else x.astype(np.float32)


class Neg(Function):
    """d(-x) = -g"""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x):
        return -x

    def backward(self, g):
        return -g

    def backward_graph(self, g, x):
        return -g


class Exp(Function):
    """d(exp x) = g*exp(x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.exp(x)
        return self.out

    def backward(self, g):
        return g * self.out

    def backward_graph(self, g, x):
        return g * x.exp()


class Log(Function):
    """d(log x) = g/x"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return np.log(x)

    def backward(self, g):
        return g / self.x

    def backward_graph(self, g, x):
        return g / x


class Sqrt(Function):
    """d(sqrt x) = g/(2 sqrt x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * 0.5 / self.out

    def backward_graph(self, g, x):
        return g * 0.5 / x.sqrt()


class Rsqrt(Function):
    """d(x^-1/2) = -g x^-3/2 / 2"""
    def forward(self, x):
        x = as_float(x)
        self.out = 1.0 / np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * (-0.5 * self.out ** 3)

    def backward_graph(self, g, x):
        return g * (-0.5 * x.rsqrt() ** 3)


class Tanh(Function):
    """d(tanh x) = g*(1 - tanh^2 x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.tanh(x)
        return self.out

    def backward(self, g):
        return g * (1 - self.out * self.out)

    def backward_graph(self, g, x):
        t = x.tanh()
        return g * (1 - t * t)


class Sigmoid(Function):
    """d(s(x)) = g*s*(1-s)"""
    def forward(self, x):
        x = as_float(x)
        # exp(-|x|) never overflows; the two branches give the same s(x)
        e = np.exp(-np.abs(x))
        self.out = np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
        return self.out

    def backward(self, g):
        return g * self.out * (1 - self.out)

    def backward_graph(self, g, x):
        s = x.sigmoid()
        return g * s * (1 - s)


def relu_forward(x, out=None):
    """max(x, 0) of a float array into `out` (a new array if None; x itself is allowed), in
    row blocks on both cores when large (an FFN's widest activation): ReLU's forward."""
    out = np.empty(x.shape, x.dtype) if out is None else out
    parallel.rows(lambda x_, o_: np.maximum(x_, 0, out=o_), x, out,
                  min_elements=parallel.MIN_KERNEL_ELEMENTS)
    return out


class Relu(Function):
    """d(max(x,0)) = g where x > 0"""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x):
        self.out = relu_forward(x) if x.dtype.kind == "f" else np.maximum(x, 0)
        return self.out

    def backward(self, g):
        if g.dtype == self.out.dtype and g.dtype.kind == "f" and g.shape == self.out.shape:
            d = np.empty(g.shape, g.dtype)          # g where out > 0, else 0: one pass a block
            parallel.rows(lambda g_, o_, d_: np.multiply(g_, o_ > 0, out=d_), g, self.out, d,
                          min_elements=parallel.MIN_KERNEL_ELEMENTS)
            return d
        return g * (self.out > 0)

    def backward_graph(self, g, x):
        return g * const(self.out > 0)


class Abs(Function):
    """d|x| = g*sign(x) (0 at 0)"""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x):
        self.x = x
        return np.abs(x)

    def backward(self, g):
        return g * np.sign(self.x)

    def backward_graph(self, g, x):
        return g * const(np.sign(self.x))


class Erf(Function):
    """d(erf x) = g * 2/sqrt(pi) exp(-x^2)"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return _erf(x)

    def backward(self, g):
        return g * _erf_grad(self.x)

    def backward_graph(self, g, x):
        # the engine's own erf has no Tensor form, but its derivative is plain exp
        return g * ((-(x * x)).exp() * _TWO_OVER_SQRT_PI)


class Clamp(Function):
    """g passes where min <= x <= max."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, x, min=None, max=None):
        self.x, self.lo, self.hi = x, min, max
        return np.clip(x, min, max)

    def _keep(self, x):
        keep = np.ones(x.shape, dtype=bool)
        if self.lo is not None:
            keep &= x >= self.lo
        if self.hi is not None:
            keep &= x <= self.hi
        return keep

    def backward(self, g):
        return g * self._keep(self.x)

    def backward_graph(self, g, x):
        return g * const(self._keep(self.x))


class Cast(Function):
    """Change the float dtype; the gradient is cast back."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "cast"

    def forward(self, x, dtype):
        self.dtype = x.dtype
        return x.astype(dtype)

    def backward(self, g):
        return g.astype(self.dtype)

    def backward_graph(self, g, x):
        return g.to(x.dtype)


# ------------------------------------------------------------------------------------------
# selection: where, masked_fill
# ------------------------------------------------------------------------------------------

class Where(_Binary):
    """where(c, a, b): a gets g where c, b gets g elsewhere; c gets none."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    def forward(self, a, b, cond):
        self.cond = cond
        return np.where(cond, a, b)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return explain_broadcast([kwargs["cond"], *arrays])

    def backward(self, g):
        zero = np.zeros((), dtype=g.dtype)
        ga = np.where(self.cond, g, zero) if self.needs_input_grad[0] else None
        gb = np.where(self.cond, zero, g) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g, a, b):
        ga = Where.apply(g, 0.0, cond=self.cond) if self.needs_input_grad[0] else None
        gb = Where.apply(0.0, g, cond=self.cond) if self.needs_input_grad[1] else None
        return ga, gb


class MaskedFill(Function):
    """Filled positions are constants: their gradient is zero."""
    graph_reads_inputs = False     # its backward_graph reads no input values
    op_name = "masked_fill"

    def forward(self, x, mask, value):
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            # np.where would silently grow the output to the mask's shape; PyTorch refuses
            raise OpError(f"mask of shape {mask.shape} does not broadcast to the input shape "
                          f"{x.shape} (the output keeps the input's shape)")
        self.mask = mask
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"mask of shape {np.shape(kwargs['mask'])} does not broadcast to the input "
                f"shape {arrays[0].shape}")

    def backward(self, g):
        return np.where(self.mask, np.zeros((), dtype=g.dtype), g)

    def backward_graph(self, g, x):
        return MaskedFill.apply(g, mask=self.mask, value=0)
