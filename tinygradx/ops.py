"""The differentiable primitives: one Function per op, forward and backward side by side.

Every forward takes numpy arrays and returns one array; every backward takes d(loss)/d(out) and
returns one gradient per input (None where the input needs none). Gradients may keep the
broadcast shape: the engine's `unbroadcast` sums them back. The docstring of each op is its
vector-Jacobian product. The fused ops (GELU, softmax, layer norm, cross-entropy, dropout,
attention) live in fused.py; the ones that only move or overwrite elements (reshape, permute,
expand, indexing, cat/stack, triu/tril, fill/copy/setitem) in movement.py.
"""
from __future__ import annotations


import numpy as np

from ._erf import erf as _erf, erf_grad as _erf_grad
from . import autograd
from .autograd import Function, OpError
from .dtypes import result_type


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


def promote(operands, true_divide=False):
    """The operands of an element-wise op in the dtype `dtypes.result_type` gives (torch's
    rule); with true_divide an integer or bool result becomes float32 (int / int).

    An operand already of that dtype, or a float of a lower precision (numpy widens it on
    the fly, and the walk casts its gradient back), is left alone; any other tensor is cast:
    one that needs a gradient through a Cast node, a constant directly.
    """
    Tensor = autograd.Tensor
    # arrays and lists go through the Tensor boundary (its dtype check) before they count
    operands = [x if isinstance(x, (Tensor, bool, int, float)) else Tensor._const(x, None)
                for x in operands]
    dt = result_type(*operands)
    if true_divide and dt.kind != "f":
        dt = np.dtype(np.float32)
    out = []
    for x in operands:
        if not isinstance(x, Tensor):
            out.append(Tensor._from_op(np.asarray(x._data if isinstance(x, Tensor) else x,
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


class _Binary(Function):
    """An element-wise op of two operands: they are promoted to one dtype first (`promote`)."""
    true_divide = False

    @classmethod
    def apply(cls, a, b, **kwargs):
        Tensor = autograd.Tensor
        if isinstance(a, Tensor):
            da = a._data.dtype
            if isinstance(b, Tensor):
                if da == b._data.dtype and (da.kind == "f" or not cls.true_divide):
                    return Function.apply.__func__(cls, a, b, **kwargs)
            elif da.kind == "f" and isinstance(b, (int, float)):   # x * 0.5: a's dtype
                return Function.apply.__func__(cls, a, b, **kwargs)
        elif isinstance(b, Tensor) and b._data.dtype.kind == "f" and isinstance(a, (int, float)):
            return Function.apply.__func__(cls, a, b, **kwargs)
        return Function.apply.__func__(cls, *promote((a, b), cls.true_divide), **kwargs)

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

    def backward_graph(self, g, a, b):
        return g, g


class Sub(_Binary):
    """d(a-b) = (g, -g)"""
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
    """d(a/b) = (g/b, -g*a/b^2). int / int is float32, as in PyTorch (true division)."""
    true_divide = True

    def forward(self, a, b):
        self.b = b
        self.out = a / b
        return self.out

    def backward(self, g):
        ga = g / self.b
        gb = -ga * self.out if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g, a, b):
        ga = g / b
        return ga, -ga * a / b


class Pow(_Binary):
    """d(a**b) = (g*b*a**(b-1), g*a**b*log a), with torch's values at the edges: the first
    term is 0 where b == 0, the second 0 where a == 0 and b >= 0."""
    def forward(self, a, b):
        self.a, self.b = a, b
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


class Maximum(_Binary):
    """The larger input gets g; on ties each gets g/2 (as PyTorch)."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.maximum(a, b)

    def backward(self, g):
        wa = (self.a > self.b) + 0.5 * (self.a == self.b)
        return g * wa.astype(g.dtype), g * (1 - wa).astype(g.dtype)


class Minimum(_Binary):
    """The smaller input gets g; on ties each gets g/2."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return np.minimum(a, b)

    def backward(self, g):
        wa = (self.a < self.b) + 0.5 * (self.a == self.b)
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


class Relu(Function):
    """d(max(x,0)) = g where x > 0"""
    def forward(self, x):
        self.out = np.maximum(x, 0)
        return self.out

    def backward(self, g):
        return g * (self.out > 0)


class Abs(Function):
    """d|x| = g*sign(x) (0 at 0)"""
    def forward(self, x):
        self.x = x
        return np.abs(x)

    def backward(self, g):
        return g * np.sign(self.x)


class Erf(Function):
    """d(erf x) = g * 2/sqrt(pi) exp(-x^2)"""
    def forward(self, x):
        x = as_float(x)
        self.x = x
        return _erf(x)

    def backward(self, g):
        return g * _erf_grad(self.x)


class Clamp(Function):
    """g passes where min <= x <= max."""
    def forward(self, x, min=None, max=None):
        self.x, self.lo, self.hi = x, min, max
        return np.clip(x, min, max)

    def backward(self, g):
        keep = np.ones(self.x.shape, dtype=bool)
        if self.lo is not None:
            keep &= self.x >= self.lo
        if self.hi is not None:
            keep &= self.x <= self.hi
        return g * keep


class Cast(Function):
    """Change the float dtype; the gradient is cast back."""
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
        return np.where(self.mask, np.zeros((), dtype=g.dtype), g)


# ------------------------------------------------------------------------------------------
# matmul and friends
# ------------------------------------------------------------------------------------------

def _mm(a, b):
    """np.matmul, but (..., n, k) @ (k, m) runs as ONE 2-D GEMM on a (prod(...)*n, k) view.

    numpy loops over the batch for an N-d @ 2-d product and, when the 2-d operand is a
    transposed view (x @ W.T), falls back to a non-BLAS loop that is ~50x slower.
    """
    if b.ndim == 2 and a.ndim > 2:
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[1],))
    return np.matmul(a, b)


class MatMul(Function):
    """(...,n,k)@(...,k,m): da = g @ b^T, db = a^T @ g; batch dims broadcast; 1-D as numpy."""
    def forward(self, a, b):
        self.a, self.b = a, b
        return _mm(a, b)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        a, b = arrays
        if a.ndim == 0 or b.ndim == 0:
            return f"{a.shape} @ {b.shape}: both operands need at least 1 dim"
        ka = a.shape[-1]
        kb = b.shape[-2] if b.ndim >= 2 else b.shape[0]
        if ka != kb:
            return f"{a.shape} @ {b.shape}: inner dimensions {ka} and {kb} differ"
        return f"{a.shape} @ {b.shape}: batch dims do not broadcast ({err})"

    def backward(self, g):
        a, b = self.a, self.b
        a2 = a[None, :] if a.ndim == 1 else a       # numpy's rule: a 1-D left operand is a row
        b2 = b[:, None] if b.ndim == 1 else b       # and a 1-D right operand a column
        if b.ndim == 1:                             # (vector @ vector gives a 0-d g: add
            g = np.expand_dims(g, -1)               # the column axis first, then the row)
        if a.ndim == 1:
            g = np.expand_dims(g, -2)
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = _mm(g, np.swapaxes(b2, -1, -2))
            if a.ndim == 1:
                ga = ga[..., 0, :]
        if self.needs_input_grad[1]:
            if b2.ndim == 2 and a2.ndim > 2:
                # a shared 2-D weight: fold the batch into one GEMM instead of a batched GEMM
                # followed by a sum over the batch
                k = a2.shape[-1]
                gb = a2.reshape(-1, k).T @ g.reshape(-1, g.shape[-1])
            else:
                gb = np.matmul(np.swapaxes(a2, -1, -2), g)
            if b.ndim == 1:
                gb = gb[..., 0]
        return ga, gb


class Linear(Function):
    """y = x W^T + b with W in PyTorch's [out, in] layout: dx = g W, dW = g^T x, db = sum g."""
    fresh_grads = True
    op_name = "linear"

    def forward(self, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise OpError(f"input {x.shape} has {x.shape[-1]} features but the weight "
                          f"{w.shape} expects {w.shape[-1]} (weight is [out, in])")
        self.x, self.w = x, w
        y = _mm(x, w.T)
        if b is not None:
            y += b
        return y

    def backward(self, g):
        x, w = self.x, self.w
        gx = _mm(g, w) if self.needs_input_grad[0] else None
        g2 = g.reshape(-1, g.shape[-1])
        gw = g2.T @ x.reshape(-1, x.shape[-1]) if self.needs_input_grad[1] else None
        if len(self.needs_input_grad) == 3:
            return gx, gw, (g2.sum(axis=0) if self.needs_input_grad[2] else None)
        return gx, gw


class Embedding(Function):
    """out = W[ids]; dW = scatter-add of g into the rows named by ids (repeated ids sum)."""
    fresh_grads = True
    def forward(self, w, ids, padding_idx=None):
        if not np.issubdtype(ids.dtype, np.integer):
            raise OpError(f"indices must be an integer tensor, got dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= w.shape[0]):
            bad = ids[(ids < 0) | (ids >= w.shape[0])].ravel()[0]
            raise OpError(f"index {bad} is out of range for a table of {w.shape[0]} rows "
                          f"(weight shape {w.shape})")
        self.ids, self.shape, self.padding_idx = ids, w.shape, padding_idx
        return w[ids]

    def backward(self, g):
        ids = self.ids.ravel()
        g2 = g.reshape(-1, self.shape[1])
        if self.padding_idx is not None:
            g2 = g2 * (ids != self.padding_idx)[:, None]
        if self.shape[0] <= 1024:
            # a small vocabulary: one dense GEMM with the one-hot matrix beats np.add.at
            onehot = np.zeros((self.shape[0], ids.size), dtype=g.dtype)
            onehot[ids, np.arange(ids.size)] = 1
            return onehot @ g2
        out = np.zeros(self.shape, dtype=g.dtype)
        np.add.at(out, ids, g2)
        return out
