"""TensorBase: what the engine knows of a tensor, below the Tensor class users see.

The node and the walk make and read tensors, but the class with the methods (`tensor.Tensor`,
and tinygradx.Tensor, its subclass) sits above them and calls them. So the engine holds only
this base: the fields every tensor has, and the constructors of an op's result. It never names
the class above; an op's result takes its operands' class instead, as numpy's subclasses do:

    a * b      a and b are Tensors        ->  a Tensor (Tensor is a subclass of TensorBase)
    w * 2      w is an nn.Parameter       ->  a Tensor (Parameter's results are Tensors)
    mask * g   mask a TensorBase constant ->  g's class (a subclass wins over its base)

Each class names the class of its ops' results in `_op_class`: itself, unless it says otherwise
(`class Parameter(Tensor, op_class=Tensor)`), so `w * 2` is not a parameter a Module would take.
"""
from __future__ import annotations

import numbers

import numpy as np


class TensorBase:
    """The fields of a tensor: a numpy array (`_data`), `requires_grad`, `.grad`, the node that
    made it (`_ctx`), hooks, and the version counter in-place ops share with views."""

    # _version: the version counter, a list [n] (and, once changed, [n, "what changed it"])
    # shared by the tensors that share this memory: views, detach(); in-place ops bump it.
    # _base: the tensor a view was made from (None if not a view); _history: [(version,
    # Tensor)] the graphs in-place ops replaced, for nodes recorded before (versions.py).
    __slots__ = ("_data", "requires_grad", "grad", "_ctx", "_hooks", "_retain_grad", "name",
                 "_version", "_base", "_history", "__weakref__")

    def __init_subclass__(cls, op_class=None, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._op_class = cls if op_class is None else op_class

    def __init__(self, data, dtype=None, requires_grad=False, name=None):
        # no checks: the engine's own constants and the core's Tensor; tinygradx.Tensor checks
        # and converts what users give (a dtype it supports, requires_grad on floats only)
        self._data = np.asarray(data, dtype=dtype)
        self.requires_grad = bool(requires_grad)
        self.grad = self._ctx = self._hooks = self._base = self._history = None
        self._retain_grad = False
        self.name = name
        self._version = [0]

    @classmethod
    def _from_op(cls, data, ctx):
        """Fast constructor for op results: no conversion, no checks."""
        t = object.__new__(cls)
        t._data = data if isinstance(data, np.ndarray) else _op_result(data, ctx)
        t.requires_grad = ctx is not None
        t.grad = t._hooks = t.name = t._base = t._history = None
        t._ctx = ctx
        t._retain_grad = False
        t._version = [0]
        return t

    @staticmethod
    def _array(data):
        """Data given as an operand (a list, an array), as an array; tinygradx.Tensor checks its
        dtype here (ops/dtypes.to_array)."""
        return np.asarray(data)

    @classmethod
    def _const(cls, x, ref_dtype):
        """A constant operand: Python scalars follow the other operand's dtype; anything else
        becomes an array as the class says (`_array`)."""
        if isinstance(x, (bool, np.bool_)):
            arr = np.asarray(x)
        elif isinstance(x, numbers.Integral) and not isinstance(x, np.ndarray):
            kind = ref_dtype.kind if ref_dtype is not None else "i"
            arr = np.asarray(x, dtype=ref_dtype if kind in "iuf" else np.int64)
        elif isinstance(x, numbers.Real) and not isinstance(x, np.ndarray):
            kind = ref_dtype.kind if ref_dtype is not None else "i"
            arr = np.asarray(x, dtype=ref_dtype if kind == "f" else np.float32)
        elif x is None:
            raise TypeError("expected a Tensor, array or number, got None")
        else:
            arr = cls._array(x)
        return cls._from_op(arr, None)


TensorBase._op_class = TensorBase   # the engine's constants (no class above is involved)


def result_class(tensors):
    """The class of an op's result: the operands' `_op_class`, the most derived one when they
    differ (a Tensor beats a TensorBase constant)."""
    cls = tensors[0]._op_class
    for t in tensors:
        c = t._op_class
        if c is not cls and issubclass(c, cls):
            cls = c
    return cls


def _op_result(data, ctx):
    """A forward's result that is not an array: a number becomes one; a tuple is refused (numpy
    would stack it into one array, and backward would fail far from the cause)."""
    if isinstance(data, (tuple, list)):
        op = ctx.name() if ctx is not None else "a Function"
        raise TypeError(f"{op}: forward on arrays returned a {type(data).__name__}, but an op "
                        f"written with methods on arrays has one output; write an op with "
                        f"several outputs in PyTorch's style (tinygradx.autograd.Function, "
                        f"@staticmethod forward(ctx, ...))")
    arr = np.asarray(data)
    if ctx is not None:                 # a saved output (0-d: a numpy scalar) is this array,
        for k, v in ctx.__dict__.items():    # so create_graph finds it (backprop.graph_view)
            if v is data:
                ctx.__dict__[k] = arr
    return arr
