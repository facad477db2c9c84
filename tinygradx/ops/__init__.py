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



import numpy as np

from ..fast._erf import erf as _erf
from .. import autograd
from ..fast import parallel
from ..autograd import Function, OpError
from ..autograd.tensor_base import TensorBase, result_class
from .dtypes import result_type
from .xp import of, value



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


def _put(xp, x, mask, fill):
    """x with `fill` where mask (a constant there: no gradient flows to x through it)."""
    return xp.where(mask, fill, x) if mask.any() else x


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
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(_Binary):
    """d(a-b) = (g, -g). A bool tensor operand is refused, as in PyTorch."""

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
        xp, a, b = of(g), self.a, self.b
        ad, bd = value(a), value(b)           # for the masks only (constants)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                # b * a**(b-1), taken as 0 where b == 0 (so 0**0 has gradient 0, as torch).
                # It is 0 there by itself except where a**(b-1) is 0**-1 = inf (or a is NaN):
                # there the base becomes 1 and the term 0, so no 0 * inf turns the next
                # derivative into NaN; elsewhere at b == 0 the formula stays, and its
                # derivative in b is the true one (1/a), not 0.
                edge = (bd == 0) & ((ad == 0) | np.isnan(ad))
                ga = g * _put(xp, b * _put(xp, a, edge, 1.0) ** (b - 1), edge, 0.0)
            if self.needs_input_grad[1]:
                # a**b log a, taken as 0 where a == 0 and b >= 0; 0**b with b < 0 gives -inf
                # and a negative base NaN, as in torch
                edge = (ad == 0) & (bd >= 0)
                gb = g * _put(xp, self.out * xp.log(_put(xp, a, edge, 1.0)), edge, 0.0)
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
            return of(g).zeros_like(g)       # d(x**0)/dx = 0, also at x = 0 (torch)
        return g * (p * self.x ** (p - 1))


class Maximum(_Binary):
    """The larger input gets g; on ties each gets g/2 (as PyTorch)."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.maximum(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)        # which input wins: a constant
        wa = (a > b) + 0.5 * (a == b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)


class Minimum(_Binary):
    """The smaller input gets g; on ties each gets g/2."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.minimum(a, b)

    def backward(self, g):
        a, b = value(self.a), value(self.b)
        wa = (a < b) + 0.5 * (a == b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)


# ------------------------------------------------------------------------------------------
# element-wise unary
# ------------------------------------------------------------------------------------------

def as_float(x):
    """x itself if it is floating point, else x in float32: exp, log, sqrt, tanh, sigmoid,
    erf, softmax of an int or bool tensor are float32 (torch's default dtype), not float64."""
    return x if x.dtype.kind == "f" else x.astype(np.float32)


class Neg(Function):
    """d(-x) = -g"""
    def forward(self, x):
        return -x

    def backward(self, g):
        return -g


class Exp(Function):
    """d(exp x) = g*exp(x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.exp(x)
        return self.out

    def backward(self, g):
        return g * self.out


class Log(Function):
    """d(log x) = g/x"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return np.log(x)

    def backward(self, g):
        return g / self.x


class Sqrt(Function):
    """d(sqrt x) = g/(2 sqrt x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * 0.5 / self.out


class Rsqrt(Function):
    """d(x^-1/2) = -g x^-3/2 / 2"""
    def forward(self, x):
        x = as_float(x)
        self.out = 1.0 / np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * (-0.5 * self.out ** 3)


class Tanh(Function):
    """d(tanh x) = g*(1 - tanh^2 x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.tanh(x)
        return self.out

    def backward(self, g):
        return g * (1 - self.out * self.out)


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


def relu_forward(x, out=None):
    """max(x, 0) of a float array into `out` (a new array if None; x itself is allowed), in
    row blocks on both cores when large (an FFN's widest activation): ReLU's forward."""
    out = np.empty(x.shape, x.dtype) if out is None else out
    parallel.rows(lambda x_, o_: np.maximum(x_, 0, out=o_), x, out,
                  min_elements=parallel.MIN_KERNEL_ELEMENTS)
    return out


class Relu(Function):
    """d(max(x,0)) = g where x > 0"""
    def forward(self, x):
        self.out = relu_forward(x) if x.dtype.kind == "f" else np.maximum(x, 0)
        return self.out

    def backward(self, g):
        return g * (value(self.out) > 0)


@autograd.fast_backward(Relu)
def _relu_backward(ctx, g):
    """g where out > 0, else 0: one pass a row block, on both cores when large."""
    if g.dtype == ctx.out.dtype and g.dtype.kind == "f" and g.shape == ctx.out.shape:
        d = np.empty(g.shape, g.dtype)
        parallel.rows(lambda g_, o_, d_: np.multiply(g_, o_ > 0, out=d_), g, ctx.out, d,
                      min_elements=parallel.MIN_KERNEL_ELEMENTS)
        return d
    return None


class Abs(Function):
    """d|x| = g*sign(x) (0 at 0)"""
    def forward(self, x):
        self.x = x
        return np.abs(x)

    def backward(self, g):
        return g * np.sign(value(self.x))


class Erf(Function):
    """d(erf x) = g * 2/sqrt(pi) exp(-x^2)"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return _erf(x)

    def backward(self, g):
        return g * of(g).erf_grad(self.x)


class Clamp(Function):
    """g passes where min <= x <= max."""
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
        return g * self._keep(value(self.x))


class Cast(Function):
    """Change the float dtype; the gradient is cast back."""
    op_name = "cast"

    def forward(self, x, dtype):
        self.dtype = x.dtype
        return x.astype(dtype)

    def backward(self, g):
        return of(g).astype(g, self.dtype)


# ------------------------------------------------------------------------------------------
# selection: where, masked_fill
# ------------------------------------------------------------------------------------------

class Where(_Binary):
    """where(c, a, b): a gets g where c, b gets g elsewhere; c gets none."""
    def forward(self, a, b, cond):
        self.cond = cond
        return np.where(cond, a, b)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return explain_broadcast([kwargs["cond"], *arrays])

    def backward(self, g):
        xp = of(g)
        ga = xp.where(self.cond, g, 0.0) if self.needs_input_grad[0] else None
        gb = xp.where(self.cond, 0.0, g) if self.needs_input_grad[1] else None
        return ga, gb


class MaskedFill(Function):
    """Filled positions are constants: their gradient is zero."""
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
        return of(g).where(self.mask, 0.0, g)

