"""The free functions of the tensor API: constructors (zeros, ones, randn, arange, eye, full,
..., tensor) and the functions of several tensors (cat, stack, where, matmul, maximum,
minimum, einsum). All of them are re-exported by the package: `tgx.zeros(2, 3)`, `tgx.cat([a, b])`.
"""
from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from ..core import linalg as ops_linalg
from ..ops import movement, einsum as ops_einsum
from .. import ops
from ..autograd import STATE, OpError
from ..core.dims import check_dim
from .devices import check_device
from ..ops.dtypes import (as_dtype, bool_, check_int_range, float32, int64, promote_types,
                          refuse_unsigned, to_array)
from . import Tensor


# ------------------------------------------------------------------------------------------
# constructors
# ------------------------------------------------------------------------------------------

def _shape(size, name="size"):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return _check_size(name, size)


def _check_size(name, size):
    """A shape as a tuple of non-negative Python ints, or a one-line error naming the caller."""
    try:
        size = tuple(size)
    except TypeError:
        raise TypeError(f"{name}: size must be a sequence of ints, got {size!r}") from None
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{name}: size must be ints, got {size!r}")
        if s < 0:
            raise ValueError(f"{name}: size {size} has a negative dim")
    return tuple(int(s) for s in size)


def _float_dtype(dtype):
    return as_dtype(dtype) or np.dtype(np.float32)


def _random_dtype(name, dtype):
    out = _float_dtype(dtype)
    if out.kind != "f":
        raise TypeError(f"{name}: dtype must be a floating-point dtype, got {out}")
    return out


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new Tensor holding a copy of data (numbers, nested lists, an array, a Tensor), as
    torch.tensor: Python floats become float32, Python ints int64, arrays keep their dtype.
    `from_numpy` / `as_tensor` share an array's memory instead."""
    check_device("tensor", device)
    arr = to_array(data, as_dtype(dtype))
    if isinstance(data, (np.ndarray, Tensor)) and np.may_share_memory(
            arr, data._data if isinstance(data, Tensor) else data):
        arr = arr.copy()
    return Tensor(arr, requires_grad=requires_grad)


def from_numpy(ndarray):
    """A Tensor on the array's memory (no copy), as torch.from_numpy: a change through
    either shows in the other. The array must have a supported dtype."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    t = Tensor(ndarray)
    if t._data is not ndarray:
        raise TypeError(f"from_numpy: an array of dtype {ndarray.dtype} (byte order "
                        f"{ndarray.dtype.byteorder!r}) cannot be shared; convert it first")
    return t


def as_tensor(data, dtype=None, device=None):
    """A Tensor sharing data's memory when it can (an array or Tensor of the same dtype),
    else a converted copy, as torch.as_tensor."""
    check_device("as_tensor", device)
    if isinstance(data, Tensor) and (dtype is None or as_dtype(dtype) == data.dtype):
        return data
    return Tensor(data, dtype=dtype)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros of the given size (float32 unless dtype says otherwise)."""
    check_device("zeros", device)
    return Tensor(np.zeros(_shape(size, "zeros"), _float_dtype(dtype)), requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones of the given size (float32 unless dtype says otherwise)."""
    check_device("ones", device)
    return Tensor(np.ones(_shape(size, "ones"), _float_dtype(dtype)), requires_grad=requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of the given size (float32 unless dtype says otherwise): its
    values are whatever the memory held, as in PyTorch; fill it before reading it."""
    check_device("empty", device)
    return Tensor(np.empty(_shape(size, "empty"), _float_dtype(dtype)), requires_grad=requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` filled with fill_value (its dtype follows the value unless given)."""
    check_device("full", device)
    if dtype is None and isinstance(fill_value, (bool, np.bool_)):
        dtype = bool_
    elif dtype is None and isinstance(fill_value, numbers.Integral):
        dtype = int64
    size = _check_size("full", (size,) if isinstance(size, (int, np.integer)) else size)
    dt = _float_dtype(dtype)
    if isinstance(fill_value, numbers.Real):     # 2**63 into int64, 300 into uint8: torch raises
        check_int_range("full", fill_value, dt)
        if dt.kind == "u" and fill_value < 0:    # -1 into uint8 wraps to 255, as torch's
            fill_value = np.array(fill_value, np.int64).astype(dt)
    return Tensor(np.full(size, fill_value, dt),
                  requires_grad=requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples from tinygradx's generator (seed it with tgx.manual_seed)."""
    check_device("randn", device)
    dtype = _random_dtype("randn", dtype)
    data = generator_rng("randn", generator).standard_normal(_shape(size, "randn"),
                                                             dtype=np.float64)
    return Tensor(data.astype(dtype), requires_grad=requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples from tinygradx's generator (seed it with tgx.manual_seed)."""
    check_device("rand", device)
    dtype = _random_dtype("rand", dtype)
    data = generator_rng("rand", generator).random(_shape(size, "rand"), dtype=np.float64)
    return Tensor(data.astype(dtype), requires_grad=requires_grad)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Random integers in [low, high) of the given size (int64), from tinygradx's generator;
    randint(high, size) draws from [0, high), as in PyTorch."""
    check_device("randint", device)
    if size is None:
        if high is None:
            raise TypeError("randint: expected randint(low, high, size) or randint(high, size)")
        low, high, size = 0, low, high
    size = _check_size("randint", (size,) if isinstance(size, (int, np.integer)) else size)
    if not low < high:
        raise ValueError(f"randint: low must be below high (the range is [low, high)), got "
                         f"low={low}, high={high}")
    draw = generator_rng("randint", generator).integers(low, high, size=size)
    return Tensor(draw.astype(as_dtype(dtype) or int64), requires_grad=requires_grad)


class Generator:
    """A random generator of its own (torch.Generator): `g = tgx.Generator().manual_seed(0)`
    draws a stream independent of tgx.manual_seed's, for randperm(..., generator=g) and the
    shuffles of tinygradx.data. Its numbers are not PyTorch's."""

    def __init__(self, device="cpu"):
        check_device("Generator", device)
        self._seed = 0
        self.rng = np.random.default_rng(0)

    def manual_seed(self, seed):
        """Restart the stream from seed; returns the generator (as torch)."""
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        return self.manual_seed(int(np.random.SeedSequence().entropy % 2 ** 63))._seed

    def get_state(self):
        return self.rng.bit_generator.state

    def set_state(self, state):
        self.rng.bit_generator.state = state


def generator_rng(name, generator):
    """The numpy generator a `generator=` argument stands for: tinygradx's global one for None,
    a tgx.Generator's own stream, else a one-line TypeError naming the function."""
    if generator is None:
        return STATE.rng
    if not isinstance(generator, Generator):
        raise TypeError(f"{name}: generator must be a tgx.Generator (torch.Generator), got "
                        f"{type(generator).__name__}")
    return generator.rng


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1 (int64), from tinygradx's generator or `generator`."""
    check_device("randperm", device)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"randperm: n must be a non-negative int, got {n!r}")
    perm = generator_rng("randperm", generator).permutation(int(n))
    return Tensor(perm.astype(as_dtype(dtype) or int64), requires_grad=requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples, 1 with probability input (a float tensor of probabilities), or with
    probability p for every element (input then gives the shape and dtype); no gradient."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli: expected a Tensor of probabilities, got "
                        f"{type(input).__name__}")
    probs = input._data if p is None else np.asarray(p, dtype=np.float64)
    if input.dtype.kind != "f":
        raise TypeError(f"bernoulli: expects a floating-point tensor, got {input.dtype}")
    if probs.size and not (np.all(probs >= 0) and np.all(probs <= 1)):
        raise ValueError("bernoulli: probabilities must be in [0, 1]")
    draw = generator_rng("bernoulli", generator).random(input.shape) < probs
    return Tensor(draw.astype(input.dtype))


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    """randint over input's shape (and dtype, unless dtype= says otherwise)."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device,
                   requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Evenly spaced values in [start, end); int64 for integer arguments, else float32."""
    check_device("arange", device)
    refuse_unsigned("arange", as_dtype(dtype))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    for v in (start, end, step):                 # numpy would compute in uint64 or objects
        if isinstance(v, numbers.Integral):
            check_int_range("arange", v, int64)
    data = np.arange(start, end, step)
    if dtype is None:
        dtype = float32 if data.dtype.kind == "f" else int64
    return Tensor(data.astype(as_dtype(dtype)), requires_grad=requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """An n x m identity matrix (m defaults to n)."""
    check_device("eye", device)
    _check_size("eye", (n,) if m is None else (n, m))
    refuse_unsigned("eye", _float_dtype(dtype))
    return Tensor(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad=requires_grad)


def _like(name, t, make, dtype, device, requires_grad):
    check_device(name, device)
    return Tensor(make(t.shape, as_dtype(dtype) or t.dtype), requires_grad=requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False):
    """Zeros with t's shape and dtype."""
    return _like("zeros_like", t, np.zeros, dtype, device, requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False):
    """Ones with t's shape and dtype."""
    return _like("ones_like", t, np.ones, dtype, device, requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor with t's shape and dtype."""
    return _like("empty_like", t, np.empty, dtype, device, requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    """fill_value with t's shape and dtype."""
    return _like("full_like", t, lambda s, d: np.full(s, fill_value, d), dtype, device,
                 requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False):
    """Standard normal samples with t's shape and dtype."""
    check_device("randn_like", device)
    return randn(*t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


def rand_like(t, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples with t's shape and dtype."""
    check_device("rand_like", device)
    return rand(*t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


# ------------------------------------------------------------------------------------------
# functions of several tensors
# ------------------------------------------------------------------------------------------

def _many(name, tensors):
    if isinstance(tensors, (Tensor, np.ndarray)):
        raise TypeError(f"{name}: expected a sequence of tensors, got one "
                        f"{type(tensors).__name__}; wrap it in a list")
    tensors = list(tensors)
    if not tensors:
        raise OpError(f"{name}: expected a non-empty sequence of tensors")
    return tensors


def cat(tensors, dim=0):
    """Join tensors along an existing dim; all other dims must match. Backward slices g."""
    tensors = _many("cat", tensors)
    nd = np.ndim(tensors[0]._data if isinstance(tensors[0], Tensor) else tensors[0])
    if nd == 0:
        raise OpError("cat: 0-d tensors cannot be concatenated; use stack")
    return movement.Cat.apply(*_one_dtype("cat", tensors), dim=check_dim("cat", dim, nd))


concatenate = cat


def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim. Backward takes g apart along it."""
    tensors = _many("stack", tensors)
    nd = np.ndim(tensors[0]._data if isinstance(tensors[0], Tensor) else tensors[0])
    return movement.Stack.apply(*_one_dtype("stack", tensors),
                                dim=check_dim("stack", dim, nd, extra=1))


def _one_dtype(name, tensors):
    """The tensors to join, in the dtype torch.promote_types gives them all (float32 with
    int64 -> float32, where numpy's concatenate would make float64; uint32 with int64 is
    refused, as in torch)."""
    dtypes = [t._data.dtype for t in tensors if isinstance(t, Tensor)]
    if len(set(dtypes)) < 2:
        return tensors
    try:
        dt = functools.reduce(promote_types, dtypes)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    return [t.to(dt) if isinstance(t, Tensor) and t._data.dtype != dt else t for t in tensors]


def where(condition, input=None, other=None):
    """Elements of input where condition is True, else of other (both may broadcast);
    where(condition) alone is condition.nonzero(as_tuple=True): a tuple of index tensors."""
    if input is None and other is None:
        if not isinstance(condition, Tensor):
            condition = Tensor(np.asarray(condition))
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: give both input and other, or neither (where(condition) is "
                        "the indices where condition holds)")
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool tensor, got dtype {cond.dtype}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = Tensor._const(input, None)        # numbers alone still make a Tensor
    return ops.Where.apply(input, other, cond=cond)


def matmul(a, b):
    """a @ b with numpy's rules: (..., n, k) @ (..., k, m), batch dims broadcast, 1-D allowed;
    two Tensors of one dtype, as torch.matmul (it never promotes)."""
    if isinstance(a, Tensor):
        return a @ b
    return ops_linalg.MatMul.apply(a, b)


def maximum(a, b):
    """Element-wise max (broadcasting); on ties each input gets half the gradient."""
    return ops.Maximum.apply(a, b)


def minimum(a, b):
    """Element-wise min (broadcasting); on ties each input gets half the gradient."""
    return ops.Minimum.apply(a, b)


def einsum(equation, *operands):
    """Sum of products over the subscripts of an Einstein equation, as torch.einsum.

    `einsum("ij,jk->ik", a, b)` is a @ b; without `->` the output is every subscript used
    exactly once, in ASCII order (A-Z before a-z); a subscript repeated in one term takes the
    diagonal (`"ii->i"`); subscripts missing from the output are summed; `...` stands for the
    leading dims, broadcast across the operands (a dim of size 1 also broadcasts against the
    same subscript elsewhere). The operands may also come as one list, or in the sublist form
    `einsum(a, [0, 1], b, [1, 2], [0, 2])` (ints 0..51, `...` as Ellipsis). One graph node;
    the gradient of each operand is an einsum too. Operands share one dtype (float or int);
    integers keep it, except that one operand summed over a subscript gives int64 (as
    torch.sum).
    """
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: operand {k} must be a Tensor, got {type(t).__name__}")
    if operands:
        dt = operands[0].dtype
        for k, t in enumerate(operands):
            if t.dtype != dt:
                raise TypeError(f"einsum: operands must share one dtype, got {dt} (operand 0) "
                                f"and {t.dtype} (operand {k}); convert one with .to()")
        if dt == np.bool_:
            raise TypeError("einsum: bool operands are not supported (as in PyTorch); "
                            "convert them to an int or float dtype")
    plan = ops_einsum.plan(equation, tuple(t.shape for t in operands))
    return ops_einsum.Einsum.apply(*operands, plan=plan)


def _sublist_equation(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]) -> (equation, operands)."""
    def term(sub, what):
        chars = []
        for s in sub:
            if s is Ellipsis:
                chars.append("...")
            elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < 52:
                chars.append(ops_einsum.LETTERS[s])
            else:
                raise OpError(f"einsum: {what} holds {s!r}; sublists hold ints in 0..51 "
                              f"or Ellipsis")
        return "".join(chars)

    pairs, out = args[:len(args) // 2 * 2], args[len(args) // 2 * 2:]
    operands = pairs[0::2]
    terms = [term(sub, f"the sublist of operand {k}") for k, sub in enumerate(pairs[1::2])]
    equation = ",".join(terms) + ("->" + term(out[0], "the output sublist") if out else "")
    return equation, tuple(operands)


def _steps(name, start, end, steps):
    """linspace's and logspace's arguments as floats and a non-negative int."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"{name}: steps must be a non-negative int, got {steps!r}")
    for what, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.ndim != 0:
            raise ValueError(f"{name}: {what} must be a number or a 0-d tensor, got shape "
                             f"{v.shape}")
    return float(start), float(end), int(steps)


def _spaced(start, end, steps):
    """steps values from start to end, both ends exact: the first half counted from start,
    the second from end (torch's order of operations, so the middle rounds as torch's)."""
    if steps == 1:
        return np.array([start])
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end, both included (float32 unless dtype=).
    An integer dtype truncates the ends, then the exact values, toward zero (torch computes
    those in floating point, so where a value is an integer it may give one less)."""
    check_device("linspace", device)
    start, end, steps = _steps("linspace", start, end, steps)
    dtype = _float_dtype(dtype)
    refuse_unsigned("linspace", dtype)
    if dtype.kind == "b":
        raise TypeError("linspace: dtype bool is not supported (as in torch): give a numeric "
                        "dtype and compare, e.g. linspace(...) > 0")
    if dtype.kind == "f":
        data = _spaced(start, end, steps)
    else:                                # the ends become integers first, as torch's
        a, b, n = math.trunc(start), math.trunc(end), max(steps - 1, 1)
        num = a * n + (b - a) * np.arange(steps, dtype=np.int64)
        data = np.sign(num) * (np.abs(num) // n)      # exact, truncated toward zero
    return Tensor(data.astype(dtype), requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps): `steps` values from base^start to base^end
    (float32 unless dtype=)."""
    check_device("logspace", device)
    start, end, steps = _steps("logspace", start, end, steps)
    dtype = _float_dtype(dtype)
    if dtype.kind != "f":                # torch: the ends become integers first
        start, end = math.trunc(start), math.trunc(end)
    data = np.power(float(base), _spaced(start, end, steps)).astype(dtype)
    return Tensor(data, requires_grad=requires_grad)
