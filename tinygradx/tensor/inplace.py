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


def _floating(name, t):
    if t.dtype.kind != "f":
        raise TypeError(f"{name}: needs a floating-point tensor, got {t.dtype} (PyTorch "
                        f"refuses it too)")


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

    # -- scatter and index fills ----------------------------------------------------------
    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        """In place: self[index[p] along dim] = src[p] (a tensor) or value (a number); a
        number given as src is read as value, as torch's scatter_(dim, index, 0.9)."""
        if reduce is not None:
            raise NotImplementedError("scatter_: reduce= is not supported (PyTorch deprecates "
                                      "it); use scatter_add_ or scatter_reduce")
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter_: give src (a tensor) or value (a number)")
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
        d = check_dim(name, dim, max(self.ndim, 1))
        idx = index._data if isinstance(index, TensorBase) else np.asarray(index)
        if idx.dtype.kind not in "iu" or idx.ndim > 1:
            raise TypeError(f"{name}: index must be a 0-d or 1-d integer tensor, got dtype "
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

