"""Tensor: the learner's core Tensor (tinygradx/core/tensor.py) with the rest of torch's surface.

The core's Tensor has the fields, the arithmetic, exp/log/sqrt/tanh/relu, softmax, sum/mean and
reshape/permute/transpose/expand; this subclass adds torch's constructor checks, dtype
conversion (convert.py), in-place ops (inplace.py), indexing by torch's rules and the other
reductions and movements (shape_methods.py, index_methods.py), more element-wise math
(math_methods.py), hooks and create_graph. Methods only check arguments and call an op's
`apply`; the math lives in the ops (tinygradx/core/, tinygradx/ops/). The constructors (zeros,
randn, ...) and the functions of several tensors (cat, stack, where, ...) are in creation.py.
Names, argument names and semantics follow PyTorch where it has the same function.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import autograd, ops
from ..autograd import backprop, hooks
from .. import core
from ..ops import fused, movement
from ..fast import process
from ..autograd import OpError
from ..core.dims import check_dim, normalize_dims
from ..shapes import Shape
from ..ops.dtypes import (WIDE_UNSIGNED, as_dtype, int_scalar, refuse_unsigned, result_type,
                          to_array)
from .math_methods import MathMethods
from .more_math import MoreMathMethods
from .aliases import AliasMethods
from .scatter_methods import ScatterMethods
from .stats_methods import StatsMethods
from .matrix_methods import MatrixMethods
from .convert import ConvertMethods
from .index_methods import IndexMethods
from .inplace import InplaceMethods
from .shape_methods import ShapeMethods


class Tensor(ShapeMethods, IndexMethods, ScatterMethods, StatsMethods, MatrixMethods,
             MathMethods, MoreMathMethods, AliasMethods, ConvertMethods, InplaceMethods,
             core.Tensor):
    """An n-d array that can record the graph of ops applied to it.

    >>> x = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([[2., 4.],
            [6., 8.]])
    """

    # the fields (_data, grad, _ctx, the version counter, ...) and the constructors of op
    # results (_from_op, _const) are TensorBase's, the part of a tensor the engine knows; the
    # mixins come first so their torch versions (masked_fill, indexing) win over the core's
    __slots__ = ()
    __array_priority__ = 1000  # numpy scalars/arrays on the left defer to our reflected ops

    def __init__(self, data, dtype=None, requires_grad=False, name=None):
        self._data = to_array(data, as_dtype(dtype))
        if requires_grad and self._data.dtype.kind != "f":
            raise TypeError(f"Tensor: only floating-point tensors can require gradients; this "
                            f"one has dtype {self._data.dtype} (indices and masks never need "
                            f"them)")
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self._ctx = None
        self._hooks = None
        self._retain_grad = False
        self.name = name
        self._version = [0]
        self._base = self._history = None

    @staticmethod
    def _array(data):
        """An operand that is no tensor, through the boundary's dtype checks."""
        return to_array(data, None)

    # -- basic attributes -----------------------------------------------------------------
    @property
    def data(self):
        """A Tensor on the same memory, cut from the graph, as PyTorch's `.data`.

        Changes made through it are not tracked by autograd (its version counter is its own),
        which is what an optimizer step or an initialiser wants. `.numpy()` gives the array.
        """
        return Tensor._from_op(self._data, None)

    @data.setter
    def data(self, value):
        """`t.data = other` swaps the memory behind t (shape and dtype may change)."""
        arr = value._data if isinstance(value, Tensor) else to_array(value, None)
        if self.requires_grad and arr.dtype.kind != "f":
            raise TypeError(f"Tensor.data: a tensor that requires grad cannot take data of "
                            f"dtype {arr.dtype}")
        self._data = arr

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def shape(self):
        """The shape as torch.Size (the core's Tensor gives numpy's plain tuple)."""
        return Shape.of(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Shape.of(self._data.shape)
        return self._data.shape[check_dim("size", dim, self._data.ndim)]

    def numel(self):
        return self._data.size

    def dim(self):
        return self._data.ndim

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t): the array itself (shared), or a copy when a dtype or copy asks. As in
        PyTorch, refused for a tensor that requires grad (numpy would drop its gradient)."""
        if self.requires_grad and autograd.STATE.grad_enabled:    # as torch: fine in no_grad
            raise RuntimeError(f"numpy: a tensor that requires grad (shape {self.shape}) was "
                               f"given to numpy, which would drop its gradient; use "
                               f"t.detach() (np.asarray(t.detach()), t.detach().numpy())")
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def numpy(self, *, force=False):
        """The underlying array (shared, not copied), as torch's `.numpy()`: refused on a
        tensor that requires grad while grad mode is on (inside no_grad, a custom Function's
        backward among them, it is given, as torch gives it); `t.detach().numpy()` or
        `force=True` says you mean it."""
        if self.requires_grad and not force and autograd.STATE.grad_enabled:
            raise RuntimeError("Can't call numpy() on a Tensor that requires grad: use "
                               "tensor.detach().numpy() instead")
        return self._data

    def item(self):
        if self._data.size != 1:
            raise ValueError(f"item: only a one-element tensor converts to a Python number, "
                             f"this one has shape {self.shape}")
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def clone(self):
        return self * 1 if self.requires_grad else Tensor._from_op(self._data.copy(), None)

    def requires_grad_(self, flag=True):
        if flag and self._data.dtype.kind != "f":
            raise TypeError(f"requires_grad_: only floating-point tensors can require "
                            f"gradients, this one is {self.dtype}")
        self.requires_grad = flag
        return self

    def retain_grad(self):
        """Keep .grad on this non-leaf tensor after backward (a leaf keeps it anyway); returns
        None, as torch's."""
        if not self.requires_grad:
            raise RuntimeError(f"retain_grad: the tensor (shape {tuple(self.shape)}) does not "
                               f"require grad, so it has no gradient to keep")
        if self._ctx is not None:
            self._retain_grad = True

    @property
    def retains_grad(self):
        """Whether retain_grad() was called on this non-leaf tensor (False for a leaf)."""
        return bool(self._retain_grad) and self._ctx is not None

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is complete; it may return a
        replacement (a Tensor of the gradient's shape and dtype: anything else is refused, as
        torch refuses it). Returns a RemovableHandle (`handle.remove()`), as PyTorch."""
        return self._add_hook("register_hook", hook, False)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after backward() has added this leaf's gradient into .grad (not
        after tgx.grad, which accumulates nothing); it must return None. Returns a
        RemovableHandle."""
        if self.requires_grad and self._ctx is not None:
            raise RuntimeError(f"register_post_accumulate_grad_hook: the tensor (shape "
                               f"{tuple(self.shape)}) is not a leaf; post-accumulate-grad hooks "
                               f"go on leaves (use register_hook on others)")
        return self._add_hook("register_post_accumulate_grad_hook", hook, True)

    def _add_hook(self, name, hook, post):
        if not self.requires_grad:
            raise RuntimeError(f"{name}: cannot register a hook on a tensor (shape "
                               f"{tuple(self.shape)}) that does not require grad")
        if not callable(hook):
            raise TypeError(f"{name}: the hook must be callable, got {type(hook).__name__}")
        if self._hooks is None:
            self._hooks = []
        return hooks.add_tensor_hook(self._hooks, hook, post)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into the .grad of every leaf that requires grad (with
        `inputs`, into those tensors only, leaves or not).

        create_graph=True records the backward pass itself, so .grad can be differentiated
        again (backprop.py); retain_graph defaults to create_graph, as in PyTorch."""
        if process.MALLOC_PENDING:               # the process's first backward: the allocator
            process.first_backward()             # setting of process.py, said once
        backprop.backward(self, None if gradient is None else [gradient], retain_graph,
                          create_graph, inputs=inputs)

    # -- in-place ops (docs/design.md, "In-place operations") ------------------------------
    def _inplace(self, name, compute, *args):
        """Make self the result of compute(old, *args) in place, as PyTorch's x.op_(...).

        `old` is self as it was (same memory, same producer); the result is computed out of
        place, written into self's memory (views and aliases see it) and self becomes the
        output of the new node. The version counter goes up, so nodes that saved the old
        value refuse to run backward. A tensor that is an argument is read as it was.
        """
        grad_on = autograd.STATE.grad_enabled
        if grad_on and self.requires_grad and self._ctx is None:
            raise RuntimeError(
                f"{name}: a leaf tensor that requires grad (shape {self.shape}) is being used "
                f"in an in-place operation; do it under tgx.no_grad() (as optimizers do), or "
                f"change a .clone()")
        if not self._data.flags.writeable:
            raise RuntimeError(
                f"{name}: this tensor (shape {self.shape}) is read-only memory (e.g. an "
                f"expand()ed view, where many elements share one memory location); clone() "
                f"it before changing it in place")
        old = Tensor._from_op(self._data, self._ctx)
        old._version = self._version
        args = tuple(old if a is self else a for a in args)
        out = compute(old, *args)
        if out.shape != self.shape:
            raise OpError(f"{name}: the result has shape {out.shape}, but an in-place op must "
                          f"keep the shape {self.shape} (the other operand broadcasts to a "
                          f"larger shape)")
        if out.dtype != self.dtype:
            if not np.can_cast(out.dtype, self.dtype, "same_kind"):
                raise TypeError(f"{name}: the result type {out.dtype} can't be cast to the "
                                f"dtype {self.dtype} of the tensor changed in place")
            out = out.to(self.dtype)
        if out._ctx is None and grad_on and self.requires_grad:
            # a constant made from the old value (a comparison, a logical op): its gradient
            # is zero, and x keeps a history through which it reaches the old graph, as torch's
            out = old.masked_fill(np.ones((), bool), 0) + out
        ctx = out._ctx
        if ctx is not None and self._base is not None:
            raise RuntimeError(
                f"{name}: in-place change of a view (shape {self.shape}) inside a graph: "
                f"tinygradx does not rewrite the base tensor's history as PyTorch does. Change "
                f"the base instead (base[index] = value), or clone() the view first")
        cell = self._version
        if ctx is not None:
            copies = {}
            for k, v in list(ctx.__dict__.items()):   # what the new node saved of the old value:
                if isinstance(v, np.ndarray) and np.may_share_memory(v, self._data):
                    if id(v) not in copies:           # its own copy (PyTorch saves a clone)
                        copies[id(v)] = v.copy()
                    ctx.__dict__[k] = v = copies[id(v)]
                    if v.shape == self.shape:
                        # the whole old value: under create_graph the formula reads it with
                        # the input's gradient path (backprop.graph_view, Restore)
                        ctx.old_inputs = {i: v for i, p in enumerate(ctx.parents)
                                          if p is old}
        self._data[...] = out._data
        cell[0] += 1
        cell[1:] = [f"{name} at {autograd.user_line()}"]
        if ctx is not None:
            for k, v in ctx.__dict__.items():         # a saved output is self's memory now
                if v is out._data:
                    ctx.__dict__[k] = self._data
            ctx.versions = tuple([cell[0] if p._version is cell else v
                                  for p, v in zip(ctx.parents, ctx.versions, strict=True)])
            ctx.out_version = cell[0]
            # nodes that used self before keep reaching this graph (versions.resolve_parents)
            self._history = (self._history or []) + [(cell[0] - 1, old)]
            self._ctx = ctx
            self.requires_grad = True
            # as PyTorch's: a hook registered so far belongs to the value it was registered on
            # (it sees that value's gradient); retain_grad follows the tensor
            old._hooks, self._hooks = self._hooks, None
        return self

    def add_(self, other, alpha=1):
        """self += alpha * other, in place."""
        return self._inplace("add_", lambda t, o: t + (o if alpha == 1 else o * alpha), other)

    def sub_(self, other, alpha=1):
        """self -= alpha * other, in place."""
        return self._inplace("sub_", lambda t, o: t - (o if alpha == 1 else o * alpha), other)

    def mul_(self, other):
        """self *= other, in place."""
        return self._inplace("mul_", lambda t, o: t * o, other)

    def div_(self, other):
        """self /= other, in place."""
        return self._inplace("div_", lambda t, o: t / o, other)

    def clamp_(self, min=None, max=None):
        """Clamp self into [min, max], in place."""
        return self._inplace("clamp_", lambda t: t.clamp(min, max))

    clip_ = clamp_

    def masked_fill_(self, mask, value):
        """Put value where mask is True, in place."""
        return self._inplace("masked_fill_", lambda t, v: t.masked_fill(mask, v), value)

    def fill_(self, value):
        """Every element becomes value (a number or a 0-d tensor, as torch), in place."""
        if isinstance(value, core.tensor_base.TensorBase) and value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions (as torch)")
        if isinstance(value, int) and not isinstance(value, bool) and self._data.dtype.kind in "iu":
            value = int_scalar(value, self._data.dtype, "fill_")   # out of range: refused
        return self._inplace("fill_", lambda t, v: movement.Fill.apply(t, v), value)

    def zero_(self):
        """Every element becomes 0, in place."""
        return self._inplace("zero_", lambda t: movement.Fill.apply(t, 0))

    def copy_(self, src):
        """Copy src (broadcast to self's shape, cast to its dtype) into self, in place."""
        return self._inplace("copy_", lambda t, s: movement.Copy.apply(t, s), src)

    # -- repr -----------------------------------------------------------------------------
    def __repr__(self):
        body = np.array2string(self._data, separator=", ", prefix="tensor(", precision=4,
                               threshold=200, edgeitems=3)
        extras = []
        if self._data.dtype not in (np.float32, np.int64, np.bool_):
            extras.append(f"dtype={self._data.dtype}")
        if self._ctx is not None:
            extras.append(f"grad_fn=<{self._ctx.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    def __bool__(self):
        if self._data.size != 1:
            raise ValueError(f"the truth value of a tensor with shape {self.shape} is ambiguous"
                             f"; use .any() or .all()")
        return bool(self._data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only a one-element integer tensor can be used as an index")
        return int(self._data)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    __hash__ = object.__hash__

    # -- arithmetic (+ - * / @ and neg: the core's Tensor) ------------------------------------
    def __pow__(self, other):
        if isinstance(other, numbers.Real) and not isinstance(other, Tensor):
            x = self
            if x._data.dtype in WIDE_UNSIGNED and isinstance(other, float):
                x = x.float()      # uint32 ** 0.5 is float32 (torch has no uint power)
            return ops.PowScalar.apply(x, p=other)
        return ops.Pow.apply(self, other)

    def __rpow__(self, other):  # other ** self
        return ops.Pow.apply(other, self)

    pow = __pow__

    def __matmul__(self, other):
        """self @ other; both of one dtype, as torch's matmul (it never promotes)."""
        if isinstance(other, Tensor) and other._data.dtype != self._data.dtype:
            raise TypeError(f"@ (matmul): expected operands of one dtype (as torch: no "
                            f"promotion), got {self.dtype} and {other.dtype}; convert one, e.g. "
                            f"b.to(a.dtype)")
        return core.Tensor.__matmul__(self, other)

    matmul = __matmul__

    # comparisons make boolean tensors (no gradient flows through them); both sides are
    # compared in the dtype dtypes.result_type gives (float32 vs 0-d float64: in float32)
    def _cmp(self, other, fn):
        if fn is not np.equal and fn is not np.not_equal and (
                self._data.dtype in WIDE_UNSIGNED or getattr(other, "dtype", None) in
                WIDE_UNSIGNED):
            refuse_unsigned(fn.__name__, self, other)      # torch: == and != only
        a, b = self._data, other._data if isinstance(other, Tensor) else other
        if not (isinstance(b, np.ndarray) and b.dtype == a.dtype):
            dt = result_type(self, other)
            a, b = a.astype(dt, copy=False), np.asarray(b).astype(dt, copy=False)
        try:
            return Tensor._from_op(fn(a, b), None)
        except ValueError as err:
            raise OpError(f"compare: {ops.explain_broadcast([a, b])}") from err

    def _bitwise(self, other, fn, symbol):
        """& | ^ as torch: bitwise on integers, logical on bools (bool with int is int)."""
        dt = result_type(self, other)
        if dt.kind not in "biu":
            raise TypeError(f"{symbol}: needs bool or integer tensors, got {self.dtype} and "
                            f"{getattr(other, 'dtype', type(other).__name__)}")
        b = other._data if isinstance(other, Tensor) else np.asarray(other)
        try:
            return Tensor._from_op(fn(self._data.astype(dt, copy=False),
                                      b.astype(dt, copy=False)), None)
        except ValueError as err:
            raise OpError(f"{symbol}: {ops.explain_broadcast([self._data, b])}") from err

    def __lt__(self, o):
        return self._cmp(o, np.less)

    def __le__(self, o):
        return self._cmp(o, np.less_equal)

    def __gt__(self, o):
        return self._cmp(o, np.greater)

    def __ge__(self, o):
        return self._cmp(o, np.greater_equal)

    def __eq__(self, o):
        return self._cmp(o, np.equal)

    def __ne__(self, o):
        return self._cmp(o, np.not_equal)

    def __invert__(self):
        refuse_unsigned("bitwise_not (~)", self)
        return Tensor._from_op(~self._data, None)

    def __and__(self, o):
        return self._bitwise(o, np.bitwise_and, "&")

    def __or__(self, o):
        return self._bitwise(o, np.bitwise_or, "|")

    def __xor__(self, o):
        return self._bitwise(o, np.bitwise_xor, "^")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def any(self, dim=None, keepdim=False):
        """True where any element (along dim: an int or a tuple) is non-zero; bool."""
        axes = normalize_dims(dim, self.ndim) if dim is not None and self.ndim else None
        return Tensor._from_op(np.any(self._data, axis=axes, keepdims=keepdim and
                                      axes is not None), None)

    def all(self, dim=None, keepdim=False):
        """True where every element (along dim: an int or a tuple) is non-zero; bool."""
        axes = normalize_dims(dim, self.ndim) if dim is not None and self.ndim else None
        return Tensor._from_op(np.all(self._data, axis=axes, keepdims=keepdim and
                                      axes is not None), None)

    # -- element-wise math ----------------------------------------------------------------
    def rsqrt(self):
        return ops.Rsqrt.apply(self)

    def sigmoid(self):
        return ops.Sigmoid.apply(self)

    def gelu(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return fused.Gelu.apply(self, approximate=approximate)

    def erf(self):
        return ops.Erf.apply(self)

    def abs(self):
        if self.dtype.kind == "b":
            raise TypeError("abs: not implemented for bool tensors (as in PyTorch)")
        return ops.Abs.apply(self)

    def square(self):
        return ops.PowScalar.apply(self, p=2)

    def maximum(self, other):
        return ops.Maximum.apply(self, other)

    def minimum(self, other):
        return ops.Minimum.apply(self, other)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise ValueError("clamp: give at least one of min and max")
        min, max = (_constant("clamp", b, "x.maximum(t) / x.minimum(t)") for b in (min, max))
        # an integer tensor with a float bound clamps in the promoted float dtype (torch:
        # int64.clamp(0.5) is float32)
        x = self.to(result_type(self, *(b for b in (min, max) if b is not None)))
        if x._data.dtype.kind in "iu":        # an int bound in x's dtype, refused out of range
            min, max = (int_scalar(b, x._data.dtype, "clamp") if isinstance(b, int)
                        and not isinstance(b, bool) else b for b in (min, max))
        return ops.Clamp.apply(x, min=min, max=max)

    clip = clamp

    def log_softmax(self, dim):
        return fused.LogSoftmax.apply(self, dim=check_dim("log_softmax", dim,
                                                              self._data.ndim))


def _constant(name, x, instead):
    """A bound given as a Tensor is read as a constant: refuse one that needs a gradient."""
    if not isinstance(x, Tensor):
        return x
    if x.requires_grad:
        raise TypeError(f"{name}: a bound that requires grad would get no gradient here; use "
                        f"{instead}")
    return x._data

