"""The element-wise ops: one Function per op, forward and backward side by side.

Every forward takes numpy arrays and returns one array; every backward takes d(loss)/d(out) and
returns one gradient per input (None where the input needs none). A gradient may keep the
broadcast shape: the walk's `unbroadcast` sums it back to the input's. The docstring of each op
is its vector-Jacobian product, and its `backward` is that formula, written once: it runs on
arrays in the ordinary walk and on Tensors when the backward pass is itself recorded (xp.py).
"""
from __future__ import annotations

import numpy as np

from .dtypes import int_scalar, result_type
from .fastpath import dispatched
from .node import STATE, Function, OpError
from .tensor_base import TensorBase, result_class
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


def promote(operands, true_divide=False, op="promote", wrap=True):
    """The operands of an element-wise op in the dtype `dtypes.result_type` gives (torch's
    rule); with true_divide an integer or bool result becomes float32 (int / int). A Python int
    out of an integer result's range wraps (`wrap`, arithmetic) or is refused (where), as torch.

    An operand already of that dtype, or a float of a lower precision (numpy widens it on
    the fly, and the walk casts its gradient back), is left alone; any other tensor is cast:
    one that needs a gradient through a Cast node, a constant directly.
    """
    given = [x for x in operands if isinstance(x, TensorBase)]
    if not given:                       # no class to make the result with (node.py)
        raise TypeError(f"{op}: expected a Tensor among the operands, got "
                        f"{', '.join(type(x).__name__ for x in operands)} (make one with "
                        f"tgx.tensor(...))")
    Tensor = result_class(given)        # the class of the result: the operands'
    # arrays and lists go through the Tensor boundary (its dtype check) before they count
    operands = [x if isinstance(x, (TensorBase, bool, int, float)) else Tensor._const(x, None)
                for x in operands]
    try:
        dt = result_type(*operands)
    except TypeError as e:              # uint32 with int64, a string: name the op
        raise TypeError(f"{op}: {e}") from None
    if true_divide and dt.kind != "f":
        dt = np.dtype(np.float32)
    out = []
    for x in operands:
        if not isinstance(x, TensorBase):
            if isinstance(x, int) and not isinstance(x, bool) and dt.kind in "iu":
                out.append(Tensor._from_op(int_scalar(x, dt, None if wrap else op), None))
            else:
                out.append(Tensor._from_op(np.asarray(x, dtype=dt), None))
            continue
        d = x._data.dtype
        if d == dt or (d.kind == dt.kind == "f" and np.can_cast(d, dt)):
            out.append(x)
        elif x.requires_grad and STATE.grad_enabled:
            out.append(Cast.apply(x, dtype=dt))
        else:
            out.append(Tensor._from_op(x._data.astype(dt), None))
    return out


def _one_dtype(a, b, true_divide):
    """Whether a and b already compute in one dtype, as torch's rule says (so `promote` has
    nothing to do): two tensors of one dtype (but int / int is float), or a float tensor with
    a Python number (x * 0.5 keeps x's dtype)."""
    if isinstance(a, TensorBase):
        da = a._data.dtype
        if isinstance(b, TensorBase):
            return da == b._data.dtype and (da.kind == "f" or not true_divide)
        return da.kind == "f" and isinstance(b, (int, float))
    return (isinstance(b, TensorBase) and b._data.dtype.kind == "f"
            and isinstance(a, (int, float)))


class Binary(Function):
    """An element-wise op of two operands: they are promoted to one dtype first (`promote`)."""
    true_divide = False
    wrap = True                 # a Python int beyond an integer dtype wraps (False: refused)

    @classmethod
    def apply(cls, a, b, **kwargs):
        if _one_dtype(a, b, cls.true_divide):
            return Function.apply.__func__(cls, a, b, **kwargs)
        return Function.apply.__func__(cls, *promote((a, b), cls.true_divide, cls.name(),
                                                     cls.wrap),
                                       **kwargs)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return explain_broadcast(arrays)


# ------------------------------------------------------------------------------------------
# element-wise binary
# ------------------------------------------------------------------------------------------

class Add(Binary):
    """d(a+b) = (g, g)"""
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(Binary):
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


class Mul(Binary):
    """d(a*b) = (g*b, g*a)"""
    def forward(self, a, b):
        na, nb = self.needs_input_grad     # keep only what backward reads (as PyTorch: a
        self.a = a if nb else None         # constant factor is not saved, so x[i] = x[i] * 2
        self.b = b if na else None         # may change x in place)
        return a * b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (g * self.b if na else None), (g * self.a if nb else None)


class Div(Binary):
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



# ------------------------------------------------------------------------------------------
# element-wise unary
# ------------------------------------------------------------------------------------------

def as_float(x):
    """x itself if it is floating point, else x in float32: exp, log, sqrt, tanh, softmax (and
    the library's other float ops) of an int or bool tensor are float32 (torch's default
    dtype), not float64."""
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


class Tanh(Function):
    """d(tanh x) = g*(1 - tanh^2 x)"""
    def forward(self, x):
        x = as_float(x)
        self.out = np.tanh(x)
        return self.out

    def backward(self, g):
        return g * (1 - self.out * self.out)


class Relu(Function):
    """d(max(x,0)) = g where x > 0"""
    def forward(self, x):
        self.out = np.maximum(x, 0)
        return self.out

    def backward(self, g):
        return g * (value(self.out) > 0)


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

class Where(Binary):
    """where(c, a, b): a gets g where c, b gets g elsewhere; c gets none."""
    wrap = False                # torch refuses a number its dtype cannot hold, not wraps it
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


@dispatched
def masked_fill_array(x, mask, value):
    """x with `value` (0-d, of x's dtype) written where `mask` (broadcast to x) holds."""
    out = x.copy()
    np.copyto(out, value, where=mask)
    return out


class MaskedFill(Function):
    """Filled positions are constants: their gradient is zero."""
    op_name = "masked_fill"

    def forward(self, x, mask, value):
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            # np.where would silently grow the output to the mask's shape; PyTorch refuses
            raise OpError(f"mask of shape {mask.shape} does not broadcast to the input shape "
                          f"{x.shape} (the output keeps the input's shape)")
        self.mask = mask
        return masked_fill_array(x, mask, np.asarray(value, dtype=x.dtype))

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"mask of shape {np.shape(kwargs['mask'])} does not broadcast to the input "
                f"shape {arrays[0].shape}")

    def backward(self, g):
        return of(g).where(self.mask, 0.0, g)

