"""More in-place methods of Tensor: `InplaceMethods`, a mixin Tensor inherits (the machinery,
`Tensor._inplace`, and add_/mul_/fill_/copy_/... are in tensor/__init__.py).

- Augmented assignment is in place, as in PyTorch: `x += y` is `x.add_(y)` (the same object,
  the same memory: every alias sees it; a leaf that requires grad refuses it outside
  `no_grad()`), likewise `-= *= /= **= //= %=` and `&= |= ^= <<= >>=`. `x @= y` rebinds
  (torch has no in-place matmul either).
- scatter_, scatter_add_, index_fill_ (and its out-of-place index_fill), pow_.
- Random fills drawn from tinygradx's one generator (`tgx.manual_seed`): normal_, uniform_,
  bernoulli_, exponential_. Where no graph is recorded (no_grad, or a tensor that does not
  require grad: an initialiser's case) they draw straight into the tensor's memory, without
  a float64 copy of a large table.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from ..core.tensor_base import TensorBase
from ..ops import movement
from ..core.dims import check_dim
from ..autograd import rng as _rng
from ..ops.dtypes import refuse_unsigned


def _floating(name, t):
    if t.dtype.kind != "f":
        raise TypeError(f"{name}: needs a floating-point tensor, got {t.dtype} (PyTorch "
                        f"refuses it too)")


def _variant(op):
    """torch's x.op_(...): x.op(...) computed out of place and written into x's memory
    (Tensor._inplace: x's dtype and shape are kept, the version counter goes up, a leaf that
    requires grad refuses it outside no_grad)."""
    def compute(t, *a, **kwargs):
        # a composite op may save the old value in a node before its last one, which the write
        # would then change: with a graph, it reads a copy (the last node's own saves are
        # copied by _inplace anyway)
        if t.requires_grad and autograd.STATE.grad_enabled:
            t = t.clone()
        return getattr(t, op)(*a, **kwargs)

    def method(self, *args, **kwargs):
        return self._inplace(f"{op}_", lambda t, *a: compute(t, *a, **kwargs), *args)
    method.__name__ = method.__qualname__ = f"{op}_"
    method.__doc__ = f"x.{op}_(...): x.{op}(...) written into x, in place."
    return method


def _view_variant(op):
    """torch's in-place view ops (x.unsqueeze_(0), x.t_()): x becomes x.op(...), a view of
    the same memory with a new shape. The version counter goes up, as torch's: a node that
    saved x refuses to run backward, and the others reach x's graph as it was."""
    def method(self, *args, **kwargs):
        if autograd.STATE.grad_enabled and self.requires_grad and self._ctx is None:
            raise RuntimeError(f"{op}_: a leaf tensor that requires grad (shape {self.shape}) "
                               f"is being used in an in-place operation; write "
                               f"x = x.{op}(...) instead")
        old = self._op_class._from_op(self._data, self._ctx)
        old._version = self._version
        out = getattr(old, op)(*args, **kwargs)
        cell = self._version
        cell[0] += 1
        cell[1:] = [f"{op}_ at {autograd.user_line()}"]
        self._data = out._data
        if out._ctx is not None:
            out._ctx.out_version = cell[0]
            self._history = (self._history or []) + [(cell[0] - 1, old)]
            self._ctx = out._ctx
        return self
    method.__name__ = method.__qualname__ = f"{op}_"
    method.__doc__ = f"x.{op}_(...): x becomes x.{op}(...) (a view, its new shape), in place."
    return method


class InplaceMethods:
    """Augmented assignment, scatter_/index_fill_ and the random fills; mixed into Tensor."""

    __slots__ = ()

    # -- augmented assignment: in place, as PyTorch ---------------------------------------
    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    def __iand__(self, other):
        return self._inplace("__iand__", lambda t, o: t & o, other)

    def __ior__(self, other):
        return self._inplace("__ior__", lambda t, o: t | o, other)

    def __ixor__(self, other):
        return self._inplace("__ixor__", lambda t, o: t ^ o, other)

    def __ifloordiv__(self, other):
        return self._inplace("floor_divide_", lambda t, o: t // o, other)

    def __imod__(self, other):
        return self._inplace("remainder_", lambda t, o: t % o, other)

    def __ilshift__(self, other):
        return self._inplace("__ilshift__", lambda t, o: t << o, other)

    def __irshift__(self, other):
        return self._inplace("__irshift__", lambda t, o: t >> o, other)

    floor_divide_, remainder_ = __ifloordiv__, __imod__

    def fmod_(self, other):
        return self._inplace("fmod_", lambda t, o: t.fmod(o), other)

    def pow_(self, exponent):
        """self **= exponent, in place."""
        return self._inplace("pow_", lambda t, e: t ** e, exponent)

    # -- torch's in-place variants of the element-wise ops: x.sin_() is x.sin() into x ----
    abs_, absolute_, neg_, negative_, sign_, sgn_ = (
        _variant("abs"), _variant("absolute"), _variant("neg"), _variant("negative"),
        _variant("sign"), _variant("sgn"))
    exp_, exp2_, expm1_, log_, log2_, log10_, log1p_ = (
        _variant("exp"), _variant("exp2"), _variant("expm1"), _variant("log"), _variant("log2"),
        _variant("log10"), _variant("log1p"))
    sqrt_, rsqrt_, square_, reciprocal_, sigmoid_, relu_, logit_ = (
        _variant("sqrt"), _variant("rsqrt"), _variant("square"), _variant("reciprocal"),
        _variant("sigmoid"), _variant("relu"), _variant("logit"))
    sin_, cos_, tan_, asin_, acos_, atan_, arcsin_, arccos_, arctan_ = (
        _variant("sin"), _variant("cos"), _variant("tan"), _variant("asin"), _variant("acos"),
        _variant("atan"), _variant("arcsin"), _variant("arccos"), _variant("arctan"))
    sinh_, cosh_, tanh_, asinh_, acosh_, atanh_, arcsinh_, arccosh_, arctanh_ = (
        _variant("sinh"), _variant("cosh"), _variant("tanh"), _variant("asinh"),
        _variant("acosh"), _variant("atanh"), _variant("arcsinh"), _variant("arccosh"),
        _variant("arctanh"))
    atan2_, arctan2_, hypot_, sinc_, deg2rad_, rad2deg_ = (
        _variant("atan2"), _variant("arctan2"), _variant("hypot"), _variant("sinc"),
        _variant("deg2rad"), _variant("rad2deg"))
    erf_, erfc_, erfinv_, lgamma_, digamma_, polygamma_, mvlgamma_, xlogy_ = (
        _variant("erf"), _variant("erfc"), _variant("erfinv"), _variant("lgamma"),
        _variant("digamma"), _variant("polygamma"), _variant("mvlgamma"), _variant("xlogy"))
    floor_, ceil_, round_, trunc_, fix_, frac_ = (
        _variant("floor"), _variant("ceil"), _variant("round"), _variant("trunc"),
        _variant("fix"), _variant("frac"))
    copysign_, nextafter_, heaviside_, nan_to_num_, ldexp_, lerp_ = (
        _variant("copysign"), _variant("nextafter"), _variant("heaviside"),
        _variant("nan_to_num"), _variant("ldexp"), _variant("lerp"))

    def float_power_(self, exponent):
        """self ** exponent in float64, in place: self must be float64 (as torch)."""
        if self.dtype != np.float64:
            raise TypeError(f"float_power_: the base has dtype {self.dtype} but the result is "
                            f"float64 (as torch: use x.double().float_power_(...) or "
                            f"x.float_power(...))")
        return self._inplace("float_power_", lambda t, e: t.float_power(e), exponent)
    clamp_min_, clamp_max_, multiply_, divide_, true_divide_, subtract_ = (
        _variant("clamp_min"), _variant("clamp_max"), _variant("multiply"), _variant("divide"),
        _variant("true_divide"), _variant("subtract"))
    eq_, ne_, lt_, le_, gt_, ge_ = (_variant("eq"), _variant("ne"), _variant("lt"),
                                    _variant("le"), _variant("gt"), _variant("ge"))
    greater_, greater_equal_, less_, less_equal_, not_equal_ = (
        _variant("greater"), _variant("greater_equal"), _variant("less"),
        _variant("less_equal"), _variant("not_equal"))
    logical_and_, logical_or_, logical_xor_, logical_not_ = (
        _variant("logical_and"), _variant("logical_or"), _variant("logical_xor"),
        _variant("logical_not"))
    bitwise_and_, bitwise_or_, bitwise_xor_, bitwise_not_ = (
        _variant("bitwise_and"), _variant("bitwise_or"), _variant("bitwise_xor"),
        _variant("bitwise_not"))
    bitwise_left_shift_, bitwise_right_shift_ = (_variant("bitwise_left_shift"),
                                                 _variant("bitwise_right_shift"))
    addmm_, addmv_, addr_, addbmm_, baddbmm_, addcmul_, addcdiv_ = (
        _variant("addmm"), _variant("addmv"), _variant("addr"), _variant("addbmm"),
        _variant("baddbmm"), _variant("addcmul"), _variant("addcdiv"))
    cumsum_, cumprod_, tril_, triu_ = (_variant("cumsum"), _variant("cumprod"),
                                       _variant("tril"), _variant("triu"))
    # ... and of the view ops, which change the shape (x.unsqueeze_(0))
    squeeze_, unsqueeze_, t_, transpose_, swapaxes_, swapdims_ = (
        _view_variant("squeeze"), _view_variant("unsqueeze"), _view_variant("t"),
        _view_variant("transpose"), _view_variant("swapaxes"), _view_variant("swapdims"))

    def detach_(self):
        """self cut from its graph, in place: a leaf that needs no gradient."""
        self._ctx = None
        self.requires_grad = False
        return self

    # -- scatter and index fills ----------------------------------------------------------
    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        """In place: self[index[p] along dim] = src[p] (a tensor) or value (a number); a
        number given as src is read as value, as torch's scatter_(dim, index, 0.9)."""
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter_: give src (a tensor) or value (a number)")
        if reduce is not None:        # "add" or "multiply": torch's values, no derivative
            return self._inplace("scatter_", lambda t, s: t._scatter_with_reduce(
                dim, index, s, reduce), src)
        return self._inplace("scatter_", lambda t, s: t.scatter(dim, index, s), src)

    def scatter_add_(self, dim, index, src):
        """In place: self[index[p] along dim] += src[p] (repeated indices add up)."""
        return self._inplace("scatter_add_", lambda t, s: t.scatter_add(dim, index, s), src)

    def index_fill(self, dim, index, value):
        """A copy of self with every position whose coordinate along dim is in index (a 1-d
        int tensor, list or int) set to value (a number or a 0-d tensor)."""
        return self._index_fill(dim, index, value, "index_fill")

    def index_fill_(self, dim, index, value):
        """index_fill in place: t.index_fill_(1, idx, 0) is t[:, idx] = 0."""
        return self._inplace("index_fill_", lambda t, v: t._index_fill(
            dim, index, v, "index_fill_"), value)

    def _index_fill(self, dim, index, value, name):
        refuse_unsigned(name, self)
        d = check_dim(name, dim, max(self.ndim, 1))
        idx = index._data if isinstance(index, TensorBase) else np.asarray(index)
        if idx.dtype not in (np.int64, np.int32) or idx.ndim > 1:
            raise TypeError(f"{name}: index must be a 0-d or 1-d int64 or int32 tensor, got dtype "
                            f"{idx.dtype} and shape {idx.shape}")
        if isinstance(value, TensorBase) and value.ndim != 0:
            raise ValueError(f"{name}: value must be a number or a 0-d tensor, got shape "
                             f"{value.shape}")
        n = self.shape[d] if self.ndim else 1
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"{name}: index {idx.tolist()} is out of range for dim {dim} of "
                             f"size {n}")
        # the value takes self's dtype (a float into an int tensor truncates, as in torch)
        value = value.to(self.dtype) if isinstance(value, TensorBase) else \
            self._op_class._from_op(np.asarray(value).astype(self.dtype), None)
        if self.ndim == 0:
            return movement.Fill.apply(self, value) if idx.size else self * 1
        key = (slice(None),) * d + (idx.reshape(-1) % n if n else idx.reshape(-1),)
        return movement.Setitem.apply(self, value, index=key)

    # -- random fills (tinygradx's one generator) -----------------------------------------
    def _random_fill(self, name, draw):
        """Fill self with draw(array) in place: straight into memory when no graph is
        recorded, else as a fill node (the old value gets a zero gradient, as in PyTorch)."""
        if autograd.STATE.grad_enabled and self.requires_grad:
            vals = np.empty_like(self._data)
            draw(vals)
            fresh = self._op_class._from_op(vals, None)
            return self._inplace(name, lambda t, v: movement.Fill.apply(t, v), fresh)
        if not self._data.flags.writeable:
            raise RuntimeError(f"{name}: this tensor (shape {self.shape}) is read-only memory "
                               f"(e.g. an expand()ed view); clone() it first")
        draw(self._data)
        cell = self._version
        cell[0] += 1
        cell[1:] = [f"{name} at {autograd.user_line()}"]
        return self

    def normal_(self, mean=0.0, std=1.0):
        """Fill with N(mean, std^2) samples, in place."""
        _floating("normal_", self)
        if std < 0:
            raise ValueError(f"normal_: std must be >= 0, got {std}")

        def draw(out):
            rng = _rng.default_rng()
            if out.flags.c_contiguous and out.dtype in (np.float32, np.float64):
                rng.standard_normal(out=out, dtype=out.dtype)   # no float64 copy
            else:
                out[...] = rng.standard_normal(out.shape)
            out *= std
            out += mean
        return self._random_fill("normal_", draw)

    def uniform_(self, a=0.0, b=1.0):
        """Fill with U[a, b) samples, in place (torch's from/to, positionally)."""
        _floating("uniform_", self)
        if not a <= b:
            raise ValueError(f"uniform_: expects a <= b, got a={a}, b={b}")

        def draw(out):
            out[...] = _rng.default_rng().uniform(a, b, size=out.shape)
        return self._random_fill("uniform_", draw)

    def bernoulli_(self, p=0.5):
        """Fill with 0/1 samples that are 1 with probability p (a number or a tensor that
        broadcasts to self), in place; any numeric dtype."""
        refuse_unsigned("bernoulli_", self)
        pa = p._data if isinstance(p, TensorBase) else np.asarray(p, dtype=np.float64)
        if pa.size and not (np.all(pa >= 0) and np.all(pa <= 1)):
            raise ValueError("bernoulli_: p must be in [0, 1]")

        def draw(out):
            out[...] = _rng.default_rng().random(out.shape) < pa
        if self.dtype.kind == "f":
            return self._random_fill("bernoulli_", draw)
        return self._inplace("bernoulli_", lambda t: _drawn(t, draw))

    def exponential_(self, lambd=1.0):
        """Fill with Exponential(lambd) samples (mean 1/lambd), in place."""
        _floating("exponential_", self)
        if not lambd > 0:
            raise ValueError(f"exponential_: lambd must be > 0, got {lambd}")

        def draw(out):
            out[...] = _rng.default_rng().exponential(1.0 / lambd, size=out.shape)
        return self._random_fill("exponential_", draw)


def _drawn(t, draw):
    out = np.empty_like(t._data)
    draw(out)
    return t._op_class._from_op(out, None)

