"""The functions an op's one derivative needs beyond operators, for both of its carriers.

An op's `backward` runs on numpy arrays in the ordinary walk and on Tensors under
`create_graph=True` (tinygradx.autograd's backprop.graph_view, on tinygradx.Tensor). Operators
(+ - * / ** @ and comparisons), `.reshape`, `.shape`, `.ndim` and `.dtype` mean the same on
both; for the rest a formula writes `xp = of(g)` and calls `xp.exp(x)`, `xp.where(c, a, b)`,
`xp.sum(x, axes, keepdims)`, ...: numpy's function on arrays, the op of the same meaning on
Tensors (recorded, so differentiable again). Both namespaces have the same names, so one
formula reads as math.
"""
from __future__ import annotations

import numpy as np



def of(g):
    """The namespace for a formula whose incoming gradient is g: ARRAYS or TENSORS."""
    return ARRAYS if isinstance(g, (np.ndarray, np.generic)) else TENSORS


def value(x):
    """The array behind x (x itself if it is one): for masks and tie-splits, which are
    constants of a formula on either carrier."""
    return x if isinstance(x, (np.ndarray, np.generic)) else x._data


def sigmoid(x):
    """1/(1+exp(-x)) without overflow, in x's dtype."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _arr(c):
    """A constant operand (a mask, an index) as an array: a Tensor one gives its data."""
    return c if isinstance(c, np.ndarray) else np.asarray(getattr(c, "_data", c))


class _Arrays:
    """numpy, plus the few functions numpy has under another name or not at all."""

    def __getattr__(self, name):          # any numpy function, looked up once
        fn = getattr(np, name)
        setattr(self, name, fn)
        return fn

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def astype(x, dtype):
        return np.asarray(x).astype(dtype, copy=False)

    sigmoid = staticmethod(sigmoid)

    @staticmethod
    def zeros_like(g):
        return np.zeros_like(g)

    @staticmethod
    def run(op, *args, **kwargs):
        """op's forward on arrays (a linear op applied to g, say)."""
        return op.__new__(op).forward(*args, **kwargs)

    @staticmethod
    def unstack(x, axis):
        return tuple(np.moveaxis(x, axis, 0))


class _Tensors:
    """The same names on Tensors, each an op of the engine (so recorded under create_graph, which
    tinygradx.autograd runs with tinygradx.Tensor: `clip`, `astype` use its clamp and to)."""

    # exp(x) is x.exp(), and so on: the names whose Tensor method has the same name and takes
    # nothing more (clip is clamp; the rest below need more than one call)
    _METHODS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid")

    def __getattr__(self, name):          # looked up once, then an attribute of its own
        if name not in self._METHODS:
            raise AttributeError(f"xp on Tensors has no {name!r}")

        def method(x):
            return getattr(x, name)()
        setattr(self, name, method)
        return method

    @staticmethod
    def clip(x, lo, hi):
        return x.clamp(lo, hi)

    @staticmethod
    def zeros_like(g):
        """Exact zeros (also where g is inf), recorded as a function of g, so a first
        derivative that is zero still depends on g."""
        return g.masked_fill(np.ones((), bool), 0)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        return x.mean(dim=axis, keepdim=keepdims)

    @staticmethod
    def astype(x, dtype):
        return x.to(dtype) if x.dtype != dtype else x

    @staticmethod
    def where(cond, a, b):
        """a where cond, else b, one of them a number; cond is a constant (a mask: no gradient
        flows through it)."""
        cond = _arr(cond)
        if isinstance(a, (int, float)):
            return b.masked_fill(cond, a)
        return a.masked_fill(~cond, b)

    @staticmethod
    def broadcast_to(x, shape):
        return x.expand(*shape)

    @staticmethod
    def expand_dims(x, axes):
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        n = x.ndim + len(axes)
        axes = sorted(a % n for a in axes)
        shape, it = [], iter(x.shape)
        for i in range(n):
            shape.append(1 if i in axes else next(it))
        return x.reshape(tuple(shape))

    @staticmethod
    def transpose(x, axes=None):
        return x.permute(*(reversed(range(x.ndim)) if axes is None else axes))

    @staticmethod
    def swapaxes(x, a, b):
        return x.transpose(a, b)

    @staticmethod
    def matmul(a, b):
        return a @ b

    @staticmethod
    def run(op, *args, **kwargs):
        """op applied to Tensors (a linear op applied to g, say): recorded."""
        return op.apply(*args, **kwargs)

    @staticmethod
    def unstack(x, axis):
        lead = (slice(None),) * (axis % x.ndim)
        return tuple(x[lead + (i,)] for i in range(x.shape[axis]))

    @staticmethod
    def split(x, bounds, axis):
        lead, pieces, start = (slice(None),) * (axis % x.ndim), [], 0
        for stop in [*bounds, x.shape[axis]]:
            pieces.append(x[lead + (slice(int(start), int(stop)),)])
            start = stop
        return pieces


ARRAYS = _Arrays()
TENSORS = _Tensors()
