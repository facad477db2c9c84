"""torch's function forms of Tensor methods (`tgx.exp(x)` is `x.exp()`, `tgx.max(x, 1)` is
`x.max(1)`), the functions that have no method twin here (`bmm`, `is_tensor`,
`multinomial`'s function form, `outer`, `addmm`, `allclose`, `equal`) and the legacy typed
constructors (`tgx.LongTensor([1, 2])`). All are re-exported by the package:
`tgx.softmax(x, dim=-1)`, `tgx.reshape(x, (2, 3))`.
"""
from __future__ import annotations

import builtins

import numpy as np

from .devices import check_device
from ..ops.dtypes import (as_dtype, bool_, float32, float64, int32, int64, refuse_unsigned,
                          uint8)
from . import Tensor


def _tensor(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__} (make one with "
                        f"tgx.tensor(...))")
    return x


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


# -- element-wise ----------------------------------------------------------------------------

def exp(input):
    """e^x element-wise (int and bool inputs give float32)."""
    return _tensor("exp", input).exp()


def log(input):
    """The natural log element-wise (int and bool inputs give float32)."""
    return _tensor("log", input).log()


def sqrt(input):
    """The square root element-wise (int and bool inputs give float32)."""
    return _tensor("sqrt", input).sqrt()


def tanh(input):
    """tanh(x) element-wise (int and bool inputs give float32)."""
    return _tensor("tanh", input).tanh()


def sigmoid(input):
    """1 / (1 + e^-x) element-wise (int and bool inputs give float32)."""
    return _tensor("sigmoid", input).sigmoid()


def abs(input):
    """|x| element-wise."""
    return _tensor("abs", input).abs()


def pow(input, exponent):
    """input ** exponent; either may be a number (torch.pow(2, x) is 2 ** x)."""
    if not isinstance(input, Tensor):
        return _tensor("pow", exponent).__rpow__(input)
    return input ** exponent


def clamp(input, min=None, max=None):
    """input clamped into [min, max] (either bound may be None)."""
    return _tensor("clamp", input).clamp(min, max)


clip = clamp


def eq(input, other):
    """input == other element-wise (bool, broadcasting)."""
    return _tensor("eq", input) == other


def tril(input, diagonal=0):
    """The lower triangle (j <= i + diagonal) of the last two dims; the rest 0."""
    return _tensor("tril", input).tril(diagonal)


def triu(input, diagonal=0):
    """The upper triangle (j >= i + diagonal) of the last two dims; the rest 0."""
    return _tensor("triu", input).triu(diagonal)


# -- reductions ------------------------------------------------------------------------------

def _max_min(name, input, dim, keepdim, other):
    x = _tensor(name, input)
    if isinstance(dim, Tensor) and other is None:     # torch.max(input, other): element-wise
        dim, other = None, dim
    if other is not None:
        if dim is not None or keepdim:
            raise TypeError(f"{name}(input, other) takes no dim or keepdim")
        return x.maximum(other) if name == "max" else x.minimum(other)
    return getattr(x, name)(dim, keepdim) if dim is not None else getattr(x, name)()


def max(input, dim=None, keepdim=False, *, other=None):
    """max(input) -> the largest value; max(input, dim, keepdim=False) -> (values, indices)
    as a named tuple; max(input, other) -> the element-wise maximum (as torch.max)."""
    return _max_min("max", input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):
    """min(input) -> the smallest value; min(input, dim, keepdim=False) -> (values,
    indices); min(input, other) -> the element-wise minimum (as torch.min)."""
    return _max_min("min", input, dim, keepdim, other)


def argmax(input, dim=None, keepdim=False):
    """The index of the largest value (of the flattened input when dim is None), int64."""
    return _tensor("argmax", input).argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest value (of the flattened input when dim is None), int64."""
    return _tensor("argmin", input).argmin(dim, keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum (over dim: an int or a tuple); dtype= casts the input first, as torch."""
    refuse_unsigned("sum", as_dtype(dtype))      # torch has no uint16/32/64 sum to ask for
    return _cast(_tensor("sum", input), dtype).sum(dim, keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean (over dim: an int or a tuple) of a float tensor; dtype= casts first."""
    return _cast(_tensor("mean", input), dtype).mean(dim, keepdim)


def softmax(input, dim, dtype=None):
    """e^x / sum e^x along dim; dtype= casts the input first, as torch."""
    return _cast(_tensor("softmax", input), dtype).softmax(dim)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along dim; dtype= casts the input first, as torch."""
    return _cast(_tensor("log_softmax", input), dtype).log_softmax(dim)


def numel(input):
    """The number of elements of input (a Python int)."""
    return _tensor("numel", input).numel()


def nonzero(input, *, as_tuple=False):
    """The indices of the non-zero elements: an int64 (n, input.ndim) tensor, or with
    as_tuple=True one 1-d tensor per dim (what x[...] = v takes)."""
    return _tensor("nonzero", input).nonzero(as_tuple=as_tuple)


def multinomial(input, num_samples, replacement=False):
    """num_samples category ids per row drawn with probabilities proportional to input's
    non-negative weights (1-d or 2-d); int64 (num_samples,) or (rows, num_samples)."""
    return _tensor("multinomial", input).multinomial(num_samples, replacement)


def std(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """The standard deviation (over dim); unbiased=True or correction=1 divides by N-1;
    std(input, False) is unbiased=False, as torch."""
    return _tensor("std", input).std(dim, unbiased, keepdim, correction=correction)


def var(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """The variance (over dim); unbiased=True or correction=1 divides by N-1."""
    return _tensor("var", input).var(dim, unbiased, keepdim, correction=correction)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product of all elements, or along one dim; dtype= casts the input first."""
    return _cast(_tensor("prod", input), dtype).prod(dim, keepdim)


def all(input, dim=None, keepdim=False):
    """True where every element (along dim: an int or a tuple) is non-zero; bool."""
    return _tensor("all", input).all(dim, keepdim)


def any(input, dim=None, keepdim=False):
    """True where any element (along dim: an int or a tuple) is non-zero; bool."""
    return _tensor("any", input).any(dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm (p = 'fro', 2, 1, inf, -inf or a number >= 1) over dim."""
    return _tensor("norm", input).norm(p, dim, keepdim, dtype)


# -- movement --------------------------------------------------------------------------------

def reshape(input, shape):
    """input.reshape(shape) (a view when the memory allows)."""
    return _tensor("reshape", input).reshape(shape)


def transpose(input, dim0, dim1):
    """input with dims dim0 and dim1 swapped (a view)."""
    return _tensor("transpose", input).transpose(dim0, dim1)


swapdims = transpose


def swapaxes(input, axis0, axis1):
    """input with axes axis0 and axis1 swapped (a view), numpy's name for transpose."""
    return _tensor("swapaxes", input).transpose(axis0, axis1)


def t(input):
    """The transpose of a 2-d tensor; a 0-d or 1-d one as it is."""
    return _tensor("t", input).t()


def permute(input, dims):
    """input with its dims in the order `dims` (a view)."""
    return _tensor("permute", input).permute(dims)


def movedim(input, source, destination):
    """input with the dims `source` moved to `destination` (ints or sequences)."""
    return _tensor("movedim", input).movedim(source, destination)


moveaxis = movedim


def squeeze(input, dim=None):
    """input without its size-1 dims (only those in dim, when given)."""
    return _tensor("squeeze", input).squeeze(dim)


def unsqueeze(input, dim):
    """input with a new size-1 dim at dim."""
    return _tensor("unsqueeze", input).unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):
    """input with the dims start_dim..end_dim merged into one."""
    return _tensor("flatten", input).flatten(start_dim, end_dim)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size (the last may be smaller), or of the given section sizes."""
    return _tensor("split", tensor).split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    """At most `chunks` pieces of equal size (the last may be smaller) along dim."""
    return _tensor("chunk", input).chunk(chunks, dim)


def unbind(input, dim=0):
    """The slices along dim, that dim removed, as a tuple."""
    return _tensor("unbind", input).unbind(dim)


def select(input, dim, index):
    """The slice at index along dim, that dim removed."""
    return _tensor("select", input).select(dim, index)


def narrow(input, dim, start, length):
    """The `length` elements from `start` along dim (a view)."""
    return _tensor("narrow", input).narrow(dim, start, length)


# -- several tensors -------------------------------------------------------------------------

def bmm(input, mat2):
    """Batched matrix product of (b, n, m) and (b, m, p) -> (b, n, p); no broadcasting."""
    return _tensor("bmm", input).bmm(mat2)


def is_tensor(obj):
    """True if obj is a tinygradx Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


def outer(input, vec2):
    """The outer product of two 1-d tensors: (n,), (m,) -> (n, m), promoted as `*`."""
    return _tensor("outer", input).outer(vec2)


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2) (input.addmm(mat1, mat2, beta=, alpha=))."""
    return _tensor("addmm", input).addmm(mat1, mat2, beta=beta, alpha=alpha)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every |input - other| <= atol + rtol * |other| (broadcasting): a Python bool,
    as torch.allclose."""
    return bool(_tensor("allclose", input).isclose(_tensor("allclose", other), rtol=rtol,
                                                    atol=atol, equal_nan=equal_nan).all())


def equal(input, other):
    """True if the two tensors have the same shape and the same values (compared in the
    promoted dtype; NaN is unequal to itself): a Python bool, as torch.equal."""
    a, b = _tensor("equal", input), _tensor("equal", other)
    return a.shape == b.shape and bool((a == b).all())


# -- typed constructors (torch.LongTensor([1, 2]), torch.FloatTensor(2, 3)) -------------------

def _typed(name, dtype):
    def make(*args, device=None):
        check_device(name, device)
        if not args:
            return Tensor(np.empty((0,), dtype))
        if builtins.all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                        for a in args):
            return Tensor(np.zeros(args, dtype))         # sizes (torch leaves it uninitialised)
        if len(args) != 1:
            raise TypeError(f"{name}: expected sizes (ints) or one sequence of data, got "
                            f"{len(args)} arguments")
        data = args[0]
        if isinstance(data, Tensor):
            return data.to(dtype)
        return Tensor(np.array(data, dtype=dtype))
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"{name}(data) or {name}(*sizes): a {np.dtype(dtype).name} tensor from "
                    f"data (copied), or of zeros of the given sizes (torch's legacy "
                    f"constructor; x.type(tgx.{name}) converts)")
    make.dtype = as_dtype(dtype)
    return make


FloatTensor = _typed("FloatTensor", float32)
DoubleTensor = _typed("DoubleTensor", float64)
LongTensor = _typed("LongTensor", int64)
IntTensor = _typed("IntTensor", int32)
BoolTensor = _typed("BoolTensor", bool_)
ByteTensor = _typed("ByteTensor", uint8)


# -- more of torch's function forms: comparisons, logical and bitwise ops, arithmetic --------

def _compare(name, method):
    def fn(input, other):
        return getattr(_tensor(name, input), method)(other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"input.{method}(other) element-wise (bool, broadcasting), as torch.{name}."
    return fn


gt, lt, ge, le, ne = (_compare(n, f"__{n}__") for n in ("gt", "lt", "ge", "le", "ne"))
greater, less = _compare("greater", "__gt__"), _compare("less", "__lt__")
greater_equal, less_equal = _compare("greater_equal", "__ge__"), _compare("less_equal", "__le__")
not_equal = _compare("not_equal", "__ne__")


def _truth(x):
    return (x if isinstance(x, Tensor) else Tensor(np.asarray(x)))._data.astype(bool, copy=False)


def logical_and(input, other):
    """input and other are non-zero, element-wise (bool)."""
    refuse_unsigned("logical_and", input, other)
    return Tensor(np.logical_and(_truth(_tensor("logical_and", input)), _truth(other)))


def logical_or(input, other):
    """input or other is non-zero, element-wise (bool)."""
    refuse_unsigned("logical_or", input, other)
    return Tensor(np.logical_or(_truth(_tensor("logical_or", input)), _truth(other)))


def logical_xor(input, other):
    """Exactly one of input and other is non-zero, element-wise (bool)."""
    refuse_unsigned("logical_xor", input, other)
    return Tensor(np.logical_xor(_truth(_tensor("logical_xor", input)), _truth(other)))


def logical_not(input):
    """input == 0, element-wise (bool)."""
    refuse_unsigned("logical_not", input)
    return Tensor(np.logical_not(_truth(_tensor("logical_not", input))))


def bitwise_and(input, other):
    """input & other (bool or integer tensors)."""
    return _tensor("bitwise_and", input) & other


def bitwise_or(input, other):
    """input | other (bool or integer tensors)."""
    return _tensor("bitwise_or", input) | other


def bitwise_xor(input, other):
    """input ^ other (bool or integer tensors)."""
    return _tensor("bitwise_xor", input) ^ other


def bitwise_not(input):
    """~input (bool or integer tensors)."""
    return ~_tensor("bitwise_not", input)


def bitwise_left_shift(input, other):
    """input << other (integer tensors)."""
    return _tensor("bitwise_left_shift", input) << other


def bitwise_right_shift(input, other):
    """input >> other (integer tensors; arithmetic shift, as torch)."""
    return _tensor("bitwise_right_shift", input) >> other


def erf(input):
    """The error function element-wise (int and bool inputs give float32)."""
    return _tensor("erf", input).erf()


def add(input, other, *, alpha=1):
    """input + alpha * other, as torch.add."""
    return _tensor("add", input) + (other if alpha == 1 else other * alpha)


def sub(input, other, *, alpha=1):
    """input - alpha * other, as torch.sub."""
    return _tensor("sub", input) - (other if alpha == 1 else other * alpha)


subtract = sub


def mul(input, other):
    """input * other, as torch.mul."""
    return _tensor("mul", input) * other


multiply = mul


def div(input, other, *, rounding_mode=None):
    """input / other (true division), or rounded: rounding_mode "floor" or "trunc" (a zero
    gradient, as torch.div)."""
    return _tensor("div", input).div(other, rounding_mode=rounding_mode)


divide = div


def true_divide(input, other):
    """input / other (true division: int / int is float32)."""
    return _tensor("true_divide", input) / other


def amax(input, dim=(), keepdim=False):
    """The largest value along dim (all dims by default); ties share the gradient."""
    return _tensor("amax", input).amax(dim=dim if dim != () else None, keepdim=keepdim)


def amin(input, dim=(), keepdim=False):
    """The smallest value along dim (all dims by default); ties share the gradient."""
    return _tensor("amin", input).amin(dim=dim if dim != () else None, keepdim=keepdim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) along dim, computed stably."""
    return _tensor("logsumexp", input).logsumexp(dim, keepdim=keepdim)


def masked_fill(input, mask, value):
    """input with value where mask is True (input.masked_fill(mask, value))."""
    return _tensor("masked_fill", input).masked_fill(mask, value)


def clone(input):
    """A copy of input that keeps its graph (the gradient flows back to input)."""
    return _tensor("clone", input).clone()


def relu(input):
    """max(x, 0) element-wise."""
    return _tensor("relu", input).relu()


def clamp_min(input, min):
    """input clamped from below."""
    return _tensor("clamp_min", input).clamp(min=min)


def clamp_max(input, max):
    """input clamped from above."""
    return _tensor("clamp_max", input).clamp(max=max)


def mm(input, mat2):
    """The product of two matrices of one dtype, (n, m) @ (m, p)."""
    return _tensor("mm", input).mm(mat2)


def mv(input, vec):
    """The product of a matrix and a vector of one dtype, (n, m) @ (m,)."""
    return _tensor("mv", input).mv(vec)


def dot(input, other):
    """The dot product of two 1-d tensors of one size and dtype (a 0-d tensor)."""
    return _tensor("dot", input).dot(other)


vdot = dot


def inner(input, other):
    """The sum over the last dims of both: input.shape[:-1] + other.shape[:-1]."""
    return _tensor("inner", input).inner(other)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _tensor("addmv", input).addmv(mat, vec, beta=beta, alpha=alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _tensor("addr", input).addr(vec1, vec2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2)."""
    return _tensor("baddbmm", input).baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1[b] @ batch2[b])."""
    return _tensor("addbmm", input).addbmm(batch1, batch2, beta=beta, alpha=alpha)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    return _tensor("addcmul", input).addcmul(tensor1, tensor2, value=value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2."""
    return _tensor("addcdiv", input).addcdiv(tensor1, tensor2, value=value)


def tile(input, dims):
    """input repeated dims times along each dim (as torch.tile)."""
    return _tensor("tile", input).tile(dims)


def is_nonzero(input):
    """The truth of a one-element tensor (an error for any other size)."""
    return _tensor("is_nonzero", input).is_nonzero()


def is_complex(input):
    """False: tinygradx has no complex dtypes."""
    return _tensor("is_complex", input).is_complex()


def is_inference(input):
    """False: tinygradx has no inference tensors."""
    return _tensor("is_inference", input).is_inference()


def broadcast_to(input, size):
    """input expanded to size (input.expand(size))."""
    return _tensor("broadcast_to", input).expand(*size)


def ravel(input):
    """input flattened to one dim."""
    return _tensor("ravel", input).reshape(-1)


def count_nonzero(input, dim=None):
    """How many elements are non-zero (along dim: an int or a tuple), int64."""
    x = _tensor("count_nonzero", input)
    return x.count_nonzero(dim)


def is_floating_point(input):
    """True if input's dtype is a floating-point one."""
    return _tensor("is_floating_point", input).dtype.kind == "f"


def argwhere(input):
    """The indices of the non-zero elements, one row each: (n, ndim) int64."""
    return _tensor("argwhere", input).nonzero()
