"""The differentiable primitives: one Function per op, forward and backward side by side.

Every forward takes numpy arrays and returns one array; every backward takes d(loss)/d(out) and
returns one gradient per input (None where the input needs none). Gradients may keep the
broadcast shape: the engine's `unbroadcast` sums them back. The docstring of each op is its
vector-Jacobian product.
"""
from __future__ import annotations

import math

import numpy as np

from ._erf import erf as _erf, erf_grad as _erf_grad
from . import parallel
from .autograd import Function, OpError, fmt_shapes


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


class _Binary(Function):
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
    """d(a-b) = (g, -g)"""
    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, (-g if self.needs_input_grad[1] else None)


class Mul(_Binary):
    """d(a*b) = (g*b, g*a)"""
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (g * self.b if na else None), (g * self.a if nb else None)


class Div(_Binary):
    """d(a/b) = (g/b, -g*a/b^2)"""
    def forward(self, a, b):
        self.b = b
        self.out = a / b
        if a.dtype.kind in "iub" and b.dtype.kind in "iub":
            self.out = self.out.astype(np.float32)  # int / int is float32, as in PyTorch
        return self.out

    def backward(self, g):
        ga = g / self.b
        gb = -ga * self.out if self.needs_input_grad[1] else None
        return ga, gb


class Pow(_Binary):
    """d(a**b) = (g*b*a**(b-1), g*a**b*log a); the log term is taken as 0 where a <= 0."""
    def forward(self, a, b):
        self.a, self.b = a, b
        self.out = a ** b
        return self.out

    def backward(self, g):
        a, b = self.a, self.b
        ga = g * b * a ** (b - 1) if self.needs_input_grad[0] else None
        gb = None
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                loga = np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0).astype(self.out.dtype)
            gb = g * self.out * loga
        return ga, gb


class PowScalar(Function):
    """d(x**p) = g*p*x**(p-1) for a constant exponent p."""
    op_name = "pow"

    def forward(self, x, p):
        self.x, self.p = x, p
        return x ** p

    def backward(self, g):
        p = self.p
        if p == 2:
            return g * (2 * self.x)
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

class Neg(Function):
    """d(-x) = -g"""
    def forward(self, x):
        return -x

    def backward(self, g):
        return -g


class Exp(Function):
    """d(exp x) = g*exp(x)"""
    def forward(self, x):
        self.out = np.exp(x)
        return self.out

    def backward(self, g):
        return g * self.out


class Log(Function):
    """d(log x) = g/x"""
    def forward(self, x):
        self.x = x
        return np.log(x)

    def backward(self, g):
        return g / self.x


class Sqrt(Function):
    """d(sqrt x) = g/(2 sqrt x)"""
    def forward(self, x):
        self.out = np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * 0.5 / self.out


class Rsqrt(Function):
    """d(x^-1/2) = -g x^-3/2 / 2"""
    def forward(self, x):
        self.out = 1.0 / np.sqrt(x)
        return self.out

    def backward(self, g):
        return g * (-0.5 * self.out ** 3)


class Tanh(Function):
    """d(tanh x) = g*(1 - tanh^2 x)"""
    def forward(self, x):
        self.out = np.tanh(x)
        return self.out

    def backward(self, g):
        return g * (1 - self.out * self.out)


class Sigmoid(Function):
    """d(s(x)) = g*s*(1-s)"""
    def forward(self, x):
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
        self.x = x
        return _erf(x)

    def backward(self, g):
        return g * _erf_grad(self.x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class Gelu(Function):
    """GELU(x) = x*Phi(x); approximate='tanh' uses 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))).

    Written with in-place numpy calls: GELU runs on the widest activation of a Transformer
    (B, T, 4*d_model), so every avoided temporary is a pass over memory saved.
    """
    fresh_grads = True
    def forward(self, x, approximate="none"):
        self.x, self.approximate = x, approximate
        if approximate == "tanh":
            self.t = t = np.empty(x.shape, dtype=x.dtype)    # tanh(...), kept for backward
            y = np.empty(x.shape, dtype=x.dtype)
            parallel.rows(_gelu_tanh, _flat(x), t.reshape(-1), y.reshape(-1))
            return y
        cdf = np.asarray(_erf(x * (1 / math.sqrt(2))))
        cdf += 1
        cdf *= 0.5                               # Phi(x)
        self.cdf = cdf
        return x * cdf

    def backward(self, g):
        x = self.x
        if self.approximate == "tanh":
            d = np.empty(x.shape, dtype=x.dtype)
            du = np.empty(x.shape, dtype=x.dtype)
            parallel.rows(_gelu_tanh_grad, _flat(x), _flat(self.t), _flat(g), d.reshape(-1),
                          du.reshape(-1))
            return d
        pdf = np.multiply(x, x, out=np.empty_like(x))
        pdf *= -0.5
        np.exp(pdf, out=pdf)
        pdf *= 1 / math.sqrt(2 * math.pi)       # phi(x)
        pdf *= x
        pdf += self.cdf                          # Phi(x) + x phi(x)
        pdf *= g
        return pdf


def _flat(a):
    """A 1-D C-order view (a copy only when `a` is not contiguous)."""
    return a.reshape(-1)


def _gelu_tanh(x, t, y):
    """y = 0.5 x (1 + t), t = tanh(sqrt(2/pi) (x + 0.044715 x^3)); in place on t and y."""
    np.multiply(x, x, out=t)
    t *= 0.044715 * _SQRT_2_OVER_PI
    t += _SQRT_2_OVER_PI
    t *= x                                   # sqrt(2/pi) * (x + 0.044715 x^3)
    np.tanh(t, out=t)
    np.add(t, 1, out=y)
    y *= x
    y *= 0.5


def _gelu_tanh_grad(x, t, g, d, du):
    """d = g * (0.5 (1 + t) + 0.5 x (1 - t^2) du), du = sqrt(2/pi) (1 + 3*0.044715 x^2)."""
    np.multiply(x, x, out=du)
    du *= 3 * 0.044715 * _SQRT_2_OVER_PI
    du += _SQRT_2_OVER_PI
    np.multiply(t, t, out=d)
    np.subtract(1, d, out=d)                 # 1 - t^2
    d *= du
    d *= x
    d += t
    d += 1
    d *= 0.5
    d *= g


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


# ------------------------------------------------------------------------------------------
# reductions
# ------------------------------------------------------------------------------------------

def normalize_dims(dim, ndim):
    """Normalise dim (None, int or tuple) to a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if not isinstance(dim, (int, np.integer, tuple, list)):
        raise OpError(f"dim must be an int or a tuple of ints, got {dim!r}")
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise OpError(f"dim must be an int or a tuple of ints, got {d!r}")
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise OpError(f"dim {d} is out of range for a tensor with {ndim} dims "
                          f"(valid: {-max(ndim, 1)}..{max(ndim, 1) - 1})")
        out.append(int(d) % max(ndim, 1) if ndim else 0)
    if len(set(out)) != len(out):
        raise OpError(f"dim {dim} repeats an axis")
    return tuple(sorted(out)) if ndim else ()


def _expand_back(g, shape, axes, keepdim):
    """Re-insert the reduced axes (size 1) so g broadcasts against the input."""
    if keepdim or not axes:
        return g
    return np.expand_dims(g, axes)


class Sum(Function):
    """d(sum x) = g broadcast over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        self.shape, self.axes, self.keepdim = x.shape, normalize_dims(dim, x.ndim), keepdim
        return np.sum(x, axis=self.axes, keepdims=keepdim)

    def backward(self, g):
        return np.broadcast_to(_expand_back(g, self.shape, self.axes, self.keepdim), self.shape)


class Mean(Function):
    """d(mean x) = g/N broadcast over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        self.shape, self.axes, self.keepdim = x.shape, normalize_dims(dim, x.ndim), keepdim
        self.n = max(1, math.prod(x.shape[a] for a in self.axes))
        return np.mean(x, axis=self.axes, keepdims=keepdim)

    def backward(self, g):
        g = _expand_back(g, self.shape, self.axes, self.keepdim) * (1.0 / self.n)
        return np.broadcast_to(g.astype(g.dtype, copy=False), self.shape)


class Max(Function):
    """d(max x) = g split evenly among the positions that attain the max."""
    def forward(self, x, dim=None, keepdim=False, minimum=False):
        self.x, self.axes, self.keepdim = x, normalize_dims(dim, x.ndim), keepdim
        if x.size == 0:
            raise OpError(f"cannot reduce an empty tensor of shape {x.shape}")
        red = np.min if minimum else np.max
        self.out = red(x, axis=self.axes, keepdims=True)
        return self.out if keepdim else np.squeeze(self.out, axis=self.axes)

    def backward(self, g):
        hit = (self.x == self.out)
        count = hit.sum(axis=self.axes, keepdims=True)
        g = _expand_back(g, self.x.shape, self.axes, self.keepdim)
        return hit * (g / count).astype(g.dtype, copy=False)


class Var(Function):
    """d(var x) = g * 2(x - mean)/(N - correction)"""
    def forward(self, x, dim=None, correction=1, keepdim=False):
        self.axes, self.keepdim = normalize_dims(dim, x.ndim), keepdim
        n = math.prod(x.shape[a] for a in self.axes)
        self.denom = max(n - correction, 0)
        self.xc = x - x.mean(axis=self.axes, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(self.xc * self.xc, axis=self.axes, keepdims=keepdim) / self.denom

    def backward(self, g):
        g = _expand_back(g, self.xc.shape, self.axes, self.keepdim)
        return g * (2.0 / self.denom) * self.xc


class LogSumExp(Function):
    """d(logsumexp x) = g * softmax(x) over the reduced axes."""
    def forward(self, x, dim=None, keepdim=False):
        self.x, self.axes, self.keepdim = x, normalize_dims(dim, x.ndim), keepdim
        m = np.max(x, axis=self.axes, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        self.out = m + np.log(np.sum(np.exp(x - m), axis=self.axes, keepdims=True))
        return self.out if keepdim else np.squeeze(self.out, axis=self.axes)

    def backward(self, g):
        g = _expand_back(g, self.x.shape, self.axes, self.keepdim)
        return g * np.exp(self.x - self.out)


# ------------------------------------------------------------------------------------------
# movement
# ------------------------------------------------------------------------------------------

class Reshape(Function):
    """d(reshape x) = reshape(g, x.shape)"""
    def forward(self, x, shape):
        self.shape = x.shape
        return x.reshape(shape)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        x = arrays[0]
        return (f"cannot reshape {x.shape} ({x.size} elements) into {tuple(kwargs['shape'])}")

    def backward(self, g):
        return g.reshape(self.shape)


class Permute(Function):
    """d(permute x) = permute(g, inverse order)"""
    def forward(self, x, dims):
        if len(dims) != x.ndim or sorted(d % max(x.ndim, 1) for d in dims) != list(range(x.ndim)):
            raise OpError(f"dims {tuple(dims)} is not a permutation of the {x.ndim} dims of "
                          f"a tensor of shape {x.shape}")
        self.dims = dims = tuple(d % x.ndim for d in dims)
        inverse = [0] * len(dims)
        for i, d in enumerate(dims):
            inverse[d] = i
        self.inverse = tuple(inverse)
        return x.transpose(dims)

    def backward(self, g):
        return g.transpose(self.inverse)


class Expand(Function):
    """d(broadcast_to x) = g; the engine's unbroadcast sums it back."""
    def forward(self, x, shape):
        shape = tuple(x.shape[i - len(shape) + x.ndim] if s == -1 else s
                      for i, s in enumerate(shape))
        return np.broadcast_to(x, shape)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"cannot expand shape {arrays[0].shape} to {tuple(kwargs['shape'])}"

    def backward(self, g):
        return g


def _is_advanced(index):
    return any(isinstance(i, (np.ndarray, list)) for i in index)


class Getitem(Function):
    """Basic indexing scatters g into zeros; integer-array gathers scatter-add (repeats sum)."""
    op_name = "getitem"

    def forward(self, x, index):
        self.shape, self.dtype, self.index = x.shape, x.dtype, index
        return x[index]

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"index {kwargs['index']!r} is invalid for a tensor of shape {arrays[0].shape}: {err}"

    def backward_slice(self, g):
        # basic indexing: the gradient is g inside the slice (the walk adds it into one buffer)
        return None if _is_advanced(self.index) else (self.index, g)

    def backward(self, g):
        out = np.zeros(self.shape, dtype=g.dtype)
        if _is_advanced(self.index):
            np.add.at(out, self.index, g)
        else:
            out[self.index] = g
        return out


class Cat(Function):
    """d(cat xs) = the slices of g that each input filled."""
    def forward(self, *xs, dim=0):
        self.dim = dim
        self.sizes = [x.shape[dim] for x in xs]
        return np.concatenate(xs, axis=dim)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return (f"inputs of shapes {fmt_shapes(arrays)} must match in every dim except dim "
                f"{kwargs.get('dim', 0)}: {err}")

    def backward(self, g):
        bounds = np.cumsum(self.sizes)[:-1]
        return tuple(np.split(g, bounds, axis=self.dim))


class Stack(Function):
    """d(stack xs) = g taken apart along the new dim."""
    def forward(self, *xs, dim=0):
        self.dim = dim
        return np.stack(xs, axis=dim)

    @classmethod
    def explain(cls, arrays, kwargs, err):
        return f"inputs must all have the same shape, got {fmt_shapes(arrays)}"

    def backward(self, g):
        return tuple(np.moveaxis(g, self.dim, 0))


class Where(Function):
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


class Tri(Function):
    """triu/tril keep a triangle; g passes only through the kept entries."""
    def forward(self, x, diagonal=0, upper=True):
        if x.ndim < 2:
            raise OpError(f"needs a tensor with at least 2 dims, got shape {x.shape}")
        self.diagonal, self.upper = diagonal, upper
        return np.triu(x, diagonal) if upper else np.tril(x, diagonal)

    def backward(self, g):
        return np.triu(g, self.diagonal) if self.upper else np.tril(g, self.diagonal)


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


# ------------------------------------------------------------------------------------------
# fused ops: one node, hand-derived backward (each has a composite twin in functional.py)
# ------------------------------------------------------------------------------------------

def _safe_max(x, axis):
    """Row max with -inf rows (fully masked) replaced by 0, so x - max never makes NaN."""
    m = np.max(x, axis=axis, keepdims=True)
    if not np.all(np.isfinite(m)):
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
    return m


def _softmax(x, out, axis=-1):
    """out <- softmax(x) along axis (out may be x itself). A row that is entirely -inf (every
    key masked) gives zeros: its max is treated as 0 and its empty sum as 1."""
    np.subtract(x, _safe_max(x, axis), out=out)
    np.exp(out, out=out)
    total = out.sum(axis=axis, keepdims=True)
    if not np.all(total):
        total[total == 0] = 1
    out /= total
    return out


def _softmax_grad(g, s, out, axis=-1):
    """out <- s * (g - sum(g*s)) along axis (out may be g itself): softmax's backward."""
    if axis in (-1, s.ndim - 1) and s.ndim <= 26:
        # sum_j g_j s_j as a row-wise dot: no (..., n) temporary for g*s
        sub = "abcdefghijklmnopqrstuvwxyz"[:s.ndim]
        row = np.einsum(f"{sub},{sub}->{sub[:-1]}", g, s)[..., None]
    else:
        row = (g * s).sum(axis=axis, keepdims=True)
    np.subtract(g, row, out=out)
    out *= s
    return out


class Softmax(Function):
    """s = exp(x - max)/sum; dx = s * (g - sum(g*s)).

    A row that is entirely -inf (every key masked) gives all-zero probabilities and zero
    gradient instead of NaN: the max is treated as 0 and the empty sum as 1.
    """
    fresh_grads = True

    def forward(self, x, dim=-1):
        self.dim = dim
        self.out = _softmax(x, np.empty_like(x), dim)
        return self.out

    def backward(self, g):
        return _softmax_grad(g, self.out, np.empty_like(self.out), self.dim)


class Attention(Function):
    """Z = softmax(Q K^T * scale + M) V as one node: scaled dot-product attention, fused.

    The same numbers as the composite (matmul, add M, softmax, dropout, matmul), with fewer
    passes over memory: the scale goes on Q, M is added and the softmax runs in place on the
    score buffer, and Z, dQ, dK, dV are written in the memory layout of Q, K, V (so the head
    split (B, T, h, d) -> (B, h, T, d) before the call and the merge after it stay views).
    Backward, with A the attention weights and D the dropout's scaled keep-mask (A' = A * D):
        dV = A'^T g;  dA = (g V^T) * D;  dS = A * (dA - rowsum(dA * A));
        dQ = dS K * scale;  dK = dS^T (Q * scale)
    `mask` is additive (0 keeps, -inf blocks) and broadcasts to the scores (..., n, m); a row
    with every key blocked gives zero weights, as softmax does.
    """
    fresh_grads = True
    op_name = "attention"

    def forward(self, q, k, v, mask=None, scale=1.0, p=0.0, rng=None):
        # Z has the batch dims of the scores (Q, K, V and the mask broadcast together) and is
        # laid out like Q when it can be, so a head merge after the call stays a view
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                    () if mask is None else np.shape(mask)[:-2])
        dtype = np.result_type(q.dtype, k.dtype, v.dtype)
        shape = batch + (q.shape[-2], v.shape[-1])
        out = np.empty_like(q, dtype=dtype) if q.shape == shape else np.empty(shape, dtype)
        return self._forward(q, k, v, out, mask, scale, p, rng)

    def backward(self, g):
        need = self.needs_input_grad
        batch = g.shape[:-2]
        grads = []
        for x, needed in zip((self.qs, self.k, self.v), need[:3]):
            full = batch + x.shape[-2:]       # the walk sums broadcast dims back (unbroadcast)
            grads.append(None if not needed else
                         np.empty_like(x, dtype=g.dtype) if x.shape == full else
                         np.empty(full, dtype=g.dtype))
        self._backward(g, *grads)
        return tuple(grads) + (None,) * (len(need) - 3)

    # the math, on arrays or views given by the caller (PackedAttention passes views)
    def _forward(self, q, k, v, out, mask, scale, p, rng):
        qs = np.multiply(q, np.asarray(scale, dtype=q.dtype), out=np.empty_like(q))
        s = np.matmul(qs, np.swapaxes(k, -1, -2))                # S = (Q scale) K^T: (.., n, m)
        if mask is not None and np.broadcast_shapes(s.shape, mask.shape) != s.shape:
            s, mask = s + mask, None                             # the mask adds batch dims
        if s.ndim > 2 and (mask is None or mask.ndim < s.ndim or mask.shape[0] == 1):
            parallel.rows(lambda blk: _masked_softmax(blk, mask), s)   # blocks of the batch
        else:
            _masked_softmax(s, mask)                             # A = softmax(S + M), in place
        self.qs, self.k, self.v, self.a, self.scale = qs, k, v, s, scale
        self.keep = None
        a = s
        if p > 0.0:
            keep = rng.random(s.shape, dtype=np.float32) >= p   # as ops.Dropout draws it
            self.keep = keep * np.asarray(1.0 / (1.0 - p), dtype=s.dtype)
            a = s * self.keep
        return np.matmul(a, v, out=out)                          # Z = A V: (..., n, d_v)

    def _backward(self, g, gq, gk, gv):
        qs, k, v, a = self.qs, self.k, self.v, self.a
        if gv is not None:
            ad = a if self.keep is None else a * self.keep
            np.matmul(np.swapaxes(ad, -1, -2), g, out=gv)        # dV = A'^T g
        da = np.matmul(g, np.swapaxes(v, -1, -2))                # dA' = g V^T: (..., n, m)
        if self.keep is not None:
            da *= self.keep
        parallel.rows(lambda d, a_: _softmax_grad(d, a_, d), da, a)   # dS = A (dA - rowsum(dA A))
        if gq is not None:
            np.matmul(da, k, out=gq)
            gq *= np.asarray(self.scale, dtype=gq.dtype)         # dQ = dS K scale
        if gk is not None:
            np.matmul(np.swapaxes(da, -1, -2), qs, out=gk)       # dK = dS^T (Q scale)


def _masked_softmax(s, mask):
    """s <- softmax(s + mask) over the last axis, in place."""
    if mask is not None:
        s += mask                                                # + M
    _softmax(s, s)


class PackedAttention(Attention):
    """Multi-head attention on a packed [Q K V] (B, T, 3*h*d) -> Concat(head_1..head_h)
    (B, T, h*d), as one node (the layout of a fused c_attn projection, as flash-attn's
    qkv-packed call). The heads are strided views into the input, the output is written with
    the heads already side by side, and the backward writes dQ, dK, dV straight into one
    (B, T, 3*h*d) gradient: no split, transpose or concat nodes, no copies between them.
    """

    def forward(self, qkv, n_head=1, mask=None, scale=None, p=0.0, rng=None, n_query=None):
        if qkv.ndim != 3 or qkv.shape[-1] % (3 * n_head):
            raise OpError(f"expected a packed [Q K V] of shape (B, T, 3*h*d) with h={n_head}, "
                          f"got {qkv.shape}")
        B, T, C3 = qkv.shape
        self.heads = (B, T, n_head, C3 // (3 * n_head))
        self.n = n = T if n_query is None else n_query       # queries: the last n rows
        q, k, v = self._views(qkv)
        out = np.empty((B, n, C3 // 3), dtype=qkv.dtype)
        if scale is None:
            scale = 1.0 / math.sqrt(self.heads[3])
        self._forward(q, k, v, self._split(out), mask, scale, p, rng)
        return out

    def backward(self, g):
        B, T, h, d = self.heads
        # rows that were not queries get no dQ: zeros there (only with n_query < T)
        dqkv = (np.empty if self.n == T else np.zeros)((B, T, 3 * h * d), dtype=g.dtype)
        self._backward(self._split(g), *self._views(dqkv))
        return dqkv

    def _views(self, a):
        B, T, h, d = self.heads
        a5 = a.reshape(B, T, 3, h, d)                            # (B, T, 3, h, d)
        q, k, v = (a5[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (B, h, T, d) each
        return q[:, :, T - self.n:], k, v                        # Q: the last n rows only

    def _split(self, a):
        B, _, h, d = self.heads
        return a.reshape(B, -1, h, d).transpose(0, 2, 1, 3)      # (B, n, h*d) -> (B, h, n, d)


class LogSoftmax(Function):
    """y = x - logsumexp(x); dx = g - softmax(x) * sum(g). A fully -inf row gives -inf, grad 0."""
    op_name = "log_softmax"

    def forward(self, x, dim=-1):
        self.dim = dim
        shifted = x - _safe_max(x, dim)
        total = np.exp(shifted).sum(axis=dim, keepdims=True)
        if not np.all(total):
            total[total == 0] = 1
        shifted -= np.log(total)
        self.out = shifted
        return shifted

    def backward(self, g):
        return g - np.exp(self.out) * g.sum(axis=self.dim, keepdims=True)


class LayerNorm(Function):
    """y = (x - mean)/sqrt(var + eps) * w + b over the last len(normalized_shape) dims.

    Biased variance, eps inside the square root (as torch.nn.LayerNorm). With xhat the
    normalised input and gh = g*w: dx = rstd * (gh - mean(gh) - xhat * mean(gh*xhat)).
    """
    fresh_grads = True
    op_name = "layer_norm"

    def forward(self, x, *wb, n_axes=1, eps=1e-5, affine=(False, False)):
        # work on a (rows, n) view: every reduction is then along axis 1, and the row dot
        # products of the backward become BLAS matrix-vector products
        self.shape, self.wshape = x.shape, x.shape[x.ndim - n_axes:]
        n = math.prod(self.wshape)
        x2 = x.reshape(-1, n)
        xc = x2 - x2.mean(axis=1, keepdims=True)
        var = np.einsum("ij,ij->i", xc, xc) / n                 # biased variance, no temporary
        rstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)[:, None]
        xc *= rstd
        self.xhat, self.rstd, self.affine = xc, rstd, affine
        wb = list(wb)
        self.w = wb.pop(0).reshape(n) if affine[0] else None
        y = xc * self.w if self.w is not None else xc.copy()
        if affine[1]:
            y += wb.pop(0).reshape(n)
        return y.reshape(x.shape)

    def backward(self, g):
        xhat, w = self.xhat, self.w
        n = xhat.shape[1]
        g2 = g.reshape(-1, n)
        gx = g2 * xhat                                          # temporary, reused below
        gw = gx.sum(axis=0) if self.affine[0] and self.needs_input_grad[1] else None
        gb = g2.sum(axis=0) if self.affine[1] and self.needs_input_grad[-1] else None
        if w is not None:
            mean_gh = (g2 @ w) / n                              # mean(g*w) per row
            mean_ghx = (gx @ w) / n                             # mean(g*w*xhat) per row
            out = g2 * w
        else:
            mean_gh, mean_ghx = g2.mean(axis=1), gx.mean(axis=1)
            out = g2.copy()
        out -= mean_gh[:, None]
        np.multiply(xhat, mean_ghx[:, None], out=gx)
        out -= gx
        out *= self.rstd
        grads = [out.reshape(self.shape)]
        if self.affine[0]:
            grads.append(None if gw is None else gw.reshape(self.wshape))
        if self.affine[1]:
            grads.append(None if gb is None else gb.reshape(self.wshape))
        return tuple(grads)


class CrossEntropy(Function):
    """Mean/sum/none of -log softmax(x)[y] over (N, C) logits with class-index targets.

    With label smoothing e the target distribution is q = (1-e)*onehot(y) + e/C, and
    dx = (softmax(x) - q) * g_row; rows whose target is ignore_index get zero loss and grad;
    'mean' divides by the number of rows that are not ignored (as PyTorch).
    """
    fresh_grads = True
    op_name = "cross_entropy"

    def forward(self, x, target, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        n, c = x.shape
        self.keep = target != ignore_index
        safe_t = np.where(self.keep, target, 0)
        if safe_t.size and (safe_t.min() < 0 or safe_t.max() >= c):
            bad = safe_t[(safe_t < 0) | (safe_t >= c)][0]
            raise OpError(f"target {bad} is out of range for {c} classes (logits {x.shape}); "
                          f"valid targets are 0..{c - 1} or ignore_index={ignore_index}")
        logp = x - _safe_max(x, 1)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        rows = np.arange(n)
        nll = -logp[rows, safe_t]
        if label_smoothing:
            nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
        nll = nll * self.keep
        self.logp, self.t, self.eps, self.reduction = logp, safe_t, label_smoothing, reduction
        self.count = max(int(self.keep.sum()), 1)
        if reduction == "mean":
            return np.asarray(nll.sum() / self.count, dtype=x.dtype)
        if reduction == "sum":
            return np.asarray(nll.sum(), dtype=x.dtype)
        return nll.astype(x.dtype, copy=False)

    def backward(self, g):
        n, c = self.logp.shape
        grad = np.exp(self.logp)            # softmax, in place of the saved log-probs
        if self.eps:
            grad -= self.eps / c
        grad[np.arange(n), self.t] -= 1 - self.eps
        if self.reduction == "none":
            scale = g * self.keep
        else:
            scale = self.keep * (g / self.count if self.reduction == "mean" else g)
        grad *= scale.astype(grad.dtype, copy=False)[:, None]
        return grad


class Dropout(Function):
    """Inverted dropout: y = x * mask / (1-p); dx = g * mask / (1-p)."""
    def forward(self, x, p=0.5, rng=None):
        keep = rng.random(x.shape, dtype=np.float32) >= p
        self.scale = keep * np.asarray(1.0 / (1.0 - p), dtype=x.dtype)
        return x * self.scale

    def backward(self, g):
        return g * self.scale
