"""Tensor: a numpy array that remembers the ops applied to it, so `.backward()` can walk back.

The fields are TensorBase's (tensor_base.py: the array `_data`, `requires_grad`, `.grad`, the
node `_ctx` that made it). This class adds the methods the seed's Transformer is written with;
each checks its arguments and calls one op's `apply` (elementwise.py, reduce.py, linalg.py,
movement.py, rows.py), which runs the forward on arrays and, when an input needs a gradient,
records the node the walk (walk.py) will visit. Names and semantics are PyTorch's:

    x = Tensor(np.random.randn(2, 4), requires_grad=True)
    y = (x @ w).softmax(-1)            # (2, 4) @ (4, 3) -> (2, 3), rows sum to 1
    y.sum().backward()                 # x.grad, w.grad: d(sum y)/dx, d(sum y)/dw

`tinygradx.Tensor` (tinygradx/tensor/) is a subclass of this one with the rest of torch's
surface: constructors, dtype conversion, in-place ops, indexing by torch's rules, create_graph.
"""
from __future__ import annotations

import numbers

import numpy as np

from .dims import check_dim
from .elementwise import Add, Div, Exp, Log, MaskedFill, Mul, Neg, PowScalar, Relu, Sqrt, Sub, Tanh
from .linalg import Embedding, Linear, MatMul
from .movement import Expand, Getitem, Permute, Reshape
from .reduce import Mean, Sum
from .rows import LayerNorm, Softmax
from .tensor_base import TensorBase
from .walk import initial_grad, run_backward


def _shape_args(shape):
    """reshape(2, 3) and reshape((2, 3)) alike."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


class Tensor(TensorBase):
    """An n-d array that can record the graph of ops applied to it."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy scalars/arrays on the left defer to our reflected ops

    def _view_of(self, base):
        """Mark self as a view of base: same memory, same version counter (versions.py)."""
        self._version = base._version
        self._base = base._base if base._base is not None else base
        return self

    # -- what it is ----------------------------------------------------------------------
    @property
    def shape(self):
        return self._data.shape

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def is_leaf(self):
        return self._ctx is None

    @property
    def grad_fn(self):
        return self._ctx

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    def numpy(self, *, force=False):
        """The underlying array (shared, not copied), as torch's `.numpy()`.

        Refused on a tensor that requires grad, as in PyTorch: a write into the array would
        change values a graph node saved behind the version counter's back, and the gradient
        would silently use them. `t.detach().numpy()` (or `force=True`, as torch's) says you
        mean it.
        """
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on a Tensor that requires grad: use "
                               "tensor.detach().numpy() instead")
        return self._data

    def detach(self):
        """The same data, cut from the graph (it shares the version counter, as in PyTorch)."""
        t = self._op_class._from_op(self._data, None)
        t._version = self._version
        return t

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({self._data!r}{grad})"

    # -- arithmetic: broadcasting, and torch's dtype promotion (dtypes.py) ------------------
    def __add__(self, other):
        return Add.apply(self, other)

    def __radd__(self, other):  # other + self
        return Add.apply(other, self)

    def __sub__(self, other):
        return Sub.apply(self, other)

    def __rsub__(self, other):  # other - self
        return Sub.apply(other, self)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def __rmul__(self, other):  # other * self
        return Mul.apply(other, self)

    def __truediv__(self, other):
        return Div.apply(self, other)

    def __rtruediv__(self, other):  # other / self
        return Div.apply(other, self)

    def __pow__(self, p):        # a constant power (tinygradx.Tensor adds a tensor one)
        if not isinstance(p, numbers.Real):
            raise TypeError(f"**: the core's power is by a number, got {type(p).__name__}")
        return PowScalar.apply(self, p=p)

    def __neg__(self):
        return Neg.apply(self)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def __rmatmul__(self, other):  # other @ self
        return MatMul.apply(other, self)

    add, sub, mul, matmul = __add__, __sub__, __mul__, __matmul__   # torch's method names
    __hash__ = object.__hash__

    # -- element-wise -----------------------------------------------------------------------
    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def sqrt(self):
        return Sqrt.apply(self)

    def tanh(self):
        return Tanh.apply(self)

    def relu(self):
        return Relu.apply(self)

    def softmax(self, dim):
        return Softmax.apply(self, dim=check_dim("softmax", dim, self._data.ndim))

    # -- reductions -------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False):
        return Sum.apply(self, dim=dim, keepdim=keepdim)

    def mean(self, dim=None, keepdim=False):
        if self.dtype.kind != "f":
            raise TypeError(f"mean: needs a floating-point tensor, got {self.dtype}")
        return Mean.apply(self, dim=dim, keepdim=keepdim)

    # -- movement: views of the same memory where numpy gives one ---------------------------
    def reshape(self, *shape):
        shape = _shape_args(shape)
        if shape == self._data.shape:
            return self
        out = Reshape.apply(self, shape=shape)
        return out._view_of(self) if np.may_share_memory(out._data, self._data) else out

    view = reshape

    def permute(self, *dims):
        return Permute.apply(self, dims=_shape_args(dims))._view_of(self)

    def transpose(self, dim0, dim1):
        nd = self._data.ndim
        dim0 = check_dim("transpose", dim0, nd)
        dim1 = check_dim("transpose", dim1, nd)
        order = list(range(nd))
        order[dim0], order[dim1] = order[dim1], order[dim0]
        return Permute.apply(self, dims=tuple(order))._view_of(self)

    swapaxes = transpose

    def expand(self, *shape):
        return Expand.apply(self, shape=_shape_args(shape))._view_of(self)

    def __getitem__(self, index):
        """numpy's indexing (ints, slices, None, ..., integer arrays); tinygradx.Tensor adds
        torch's rules where they differ."""
        index = index if isinstance(index, tuple) else (index,)
        index = tuple(i._data if isinstance(i, TensorBase) else i for i in index)
        return Getitem.apply(self, index=index)

    def masked_fill(self, mask, value):
        """value where mask (a bool array or tensor that broadcasts to self) is True."""
        mask = mask._data if isinstance(mask, TensorBase) else np.asarray(mask)
        value = value._data if isinstance(value, TensorBase) else value   # a constant here
        return MaskedFill.apply(self, mask=mask, value=value)

    # -- the walk ---------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None):
        """Add d(self)/d(leaf) into the .grad of every leaf that requires grad (walk.py)."""
        run_backward([self], [initial_grad(self, gradient)], bool(retain_graph))


def linear(x, weight, bias=None):
    """x @ weight.T + bias, one node (torch.nn.functional.linear)."""
    return Linear.apply(x, weight) if bias is None else Linear.apply(x, weight, bias)


def embedding(ids, weight):
    """Rows of weight picked by integer ids: (...,) -> (..., d) (torch.nn.functional.embedding)."""
    return Embedding.apply(weight, ids=ids._data if isinstance(ids, TensorBase) else ids)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean)/sqrt(var + eps) * weight + bias over the last dims `normalized_shape`."""
    n_axes = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
    wb = [t for t in (weight, bias) if t is not None]
    return LayerNorm.apply(x, *wb, n_axes=n_axes, eps=eps,
                           affine=(weight is not None, bias is not None))
