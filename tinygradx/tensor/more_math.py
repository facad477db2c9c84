"""More element-wise math as Tensor methods (`MoreMathMethods`, a mixin Tensor inherits): the
trigonometric and hyperbolic family (ops/trig.py), the special functions (ops/special.py) and
the float-aware ops (ops/ieee.py), with torch's names, aliases (arcsin, arctan2, ...),
argument names, dtypes and refusals. Their function forms (`tgx.tan(x)`, ...) are made at the
end from the methods' names, each refusing a first argument that is no Tensor by name.

deg2rad, rad2deg, ldexp, float_power, logaddexp2, frac, fix, mvlgamma, angle, sgn, positive
and absolute are compositions of other ops (no Function: their derivatives come with them).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..core.tensor_base import TensorBase
from ..ops import ieee, special, trig
from ..ops import math_ops
from ..ops.dtypes import result_type


def _as_tensor_arg(name, arg, other):
    """torch refuses a Python number where these ops take a tensor: say so by name."""
    if not isinstance(other, TensorBase):
        raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, not "
                        f"{type(other).__name__} (as in torch; wrap it: tgx.tensor(...))")
    return other


def _to_float(name, xs, ints=True):
    """The promoted operands in a float dtype: integer and bool ones become float32 (torch's
    rule for atan2, copysign, xlogy, ...), or a TypeError when the op takes floats only."""
    if xs[0].dtype.kind == "f":
        return xs
    if not ints:
        raise TypeError(f"{name}: not implemented for {xs[0].dtype} tensors (as in torch); "
                        f"use floating-point tensors")
    return [x._op_class._from_op(x._data.astype(np.float32), None) for x in xs]


def _numeric(d):
    """A bool array as int8 (numpy's signbit and isposinf take no bools; torch's do)."""
    return d.astype(np.int8) if d.dtype == np.bool_ else d


def _promoted_float(name, a, b, ints=True):
    return _to_float(name, ops.promote((a, b), op=name), ints)


class MoreMathMethods:
    """tan ... atanh, hypot, sinc, the special functions and the float-aware ops."""

    __slots__ = ()

    # -- trigonometric and hyperbolic ----------------------------------------------------
    def tan(self):
        return trig.Tan.apply(self)

    def asin(self):
        return trig.Asin.apply(self)

    def acos(self):
        return trig.Acos.apply(self)

    def atan(self):
        return trig.Atan.apply(self)

    def sinh(self):
        return trig.Sinh.apply(self)

    def cosh(self):
        return trig.Cosh.apply(self)

    def asinh(self):
        return trig.Asinh.apply(self)

    def acosh(self):
        return trig.Acosh.apply(self)

    def atanh(self):
        return trig.Atanh.apply(self)

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def sinc(self):
        """sin(pi x)/(pi x), 1 at 0 (the normalised sinc, as torch)."""
        return trig.Sinc.apply(self)

    def atan2(self, other):
        """The angle of the point (other, self) in (-pi, pi]: atan2(y, x) = self.atan2(x)."""
        a, b = _promoted_float("atan2", self, _as_tensor_arg("atan2", "other", other))
        return trig.Atan2.apply(a, b)

    arctan2 = atan2

    def hypot(self, other):
        """sqrt(self^2 + other^2) without overflow (float tensors, as torch)."""
        a, b = _promoted_float("hypot", self, _as_tensor_arg("hypot", "other", other), False)
        return trig.Hypot.apply(a, b)

    def deg2rad(self):
        """Degrees to radians: x * pi/180 (int and bool inputs give float32)."""
        return self * (math.pi / 180)

    def rad2deg(self):
        """Radians to degrees: x * 180/pi (int and bool inputs give float32)."""
        return self * (180 / math.pi)

    # -- special functions ---------------------------------------------------------------
    def erfc(self):
        """1 - erf(x), exact where erf(x) is close to 1."""
        return special.Erfc.apply(self)

    def erfinv(self):
        """The inverse of erf on (-1, 1); +-inf at +-1."""
        return special.Erfinv.apply(self)

    def lgamma(self):
        """log |Gamma(x)| (inf at 0, -1, -2, ...)."""
        return special.Lgamma.apply(self)

    def digamma(self):
        """psi(x) = d lgamma(x)/dx."""
        return special.Polygamma.apply(self, n=0)

    def polygamma(self, n):
        """psi^(n)(x), the n-th derivative of digamma (x.polygamma(n), as torch)."""
        return special.Polygamma.apply(self, n=special.check_polygamma_order(n))

    def mvlgamma(self, p):
        """The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log pi
        (meant for x > (p - 1)/2; below, torch 2.13 computes the same sum and so do we)."""
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ValueError(f"mvlgamma: p must be a positive int, got {p!r}")
        x = self if self.dtype.kind == "f" else self.float()
        shifts = x._op_class._from_op(-np.arange(p, dtype=x.dtype) / 2, None)
        return (x.unsqueeze(-1) + shifts).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)

    def xlogy(self, other):
        """self * log(other), 0 where self == 0 (unless other is NaN); either may be a
        number."""
        a, b = _promoted_float("xlogy", self, other)
        return special.Xlogy.apply(a, b)

    def logit(self, eps=None):
        """log(x/(1 - x)), x clamped into [eps, 1 - eps] first when eps is given."""
        return special.Logit.apply(self, eps=None if eps is None else float(eps))

    # -- float-aware ---------------------------------------------------------------------
    def copysign(self, other):
        """|self| with the sign of other (a tensor or a number); a float result."""
        a, b = _promoted_float("copysign", self, other)
        return ieee.Copysign.apply(a, b)

    def fmax(self, other):
        """The element-wise maximum, a NaN ignored where the other value is a number."""
        return ieee.Fmax.apply(self, _as_tensor_arg("fmax", "other", other))

    def fmin(self, other):
        """The element-wise minimum, a NaN ignored where the other value is a number."""
        return ieee.Fmin.apply(self, _as_tensor_arg("fmin", "other", other))

    def frexp(self):
        """(mantissa, exponent) with self = mantissa * 2**exponent, 0.5 <= |mantissa| < 1;
        the exponent is int32, as torch."""
        if self.dtype.kind != "f":
            raise TypeError(f"frexp: only supports floating-point dtypes, got {self.dtype} "
                            f"(as torch)")
        exponent = np.frexp(self._data)[1].astype(np.int32)
        return ieee.FrexpMantissa.apply(self), self._op_class._from_op(exponent, None)

    def ldexp(self, other):
        """self * 2**other in the operands' promoted dtype, float32 when that is no float."""
        other = _as_tensor_arg("ldexp", "other", other)
        if other.dtype.kind == "b" and self.dtype.kind == "f":
            raise TypeError("ldexp: not implemented for a float input with a bool exponent "
                            "(as in torch); use other.long()")
        dt = result_type(self, other)
        dt = dt if dt.kind == "f" else np.dtype(np.float32)
        x = self if self.dtype == dt else self.to(dt)
        return x * other.to(dt).exp2()

    def nextafter(self, other):
        """The next float after self toward other (float tensors); the gradient passes to self,
        as torch's."""
        a, b = _promoted_float("nextafter", self, _as_tensor_arg("nextafter", "other", other),
                               False)
        return ieee.Nextafter.apply(a, b)

    def heaviside(self, values):
        """0 where x < 0, values where x == 0, 1 where x > 0 (one dtype for both, as torch;
        no derivative)."""
        return ieee.Heaviside.apply(self, _as_tensor_arg("heaviside", "values", values))

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest and
        lowest values)."""
        return ieee.NanToNum.apply(self, nan=nan, posinf=posinf, neginf=neginf)

    def float_power(self, exponent):
        """self ** exponent in float64 (either may be a number), as torch.float_power."""
        base = self.double()
        if isinstance(exponent, TensorBase):
            return base ** exponent.double()
        return base ** float(exponent)

    def logaddexp2(self, other):
        """log2(2**self + 2**other) without overflow (float tensors)."""
        a, b = _promoted_float("logaddexp2", self, _as_tensor_arg("logaddexp2", "other", other),
                               False)
        ln2 = math.log(2)
        return math_ops.LogAddExp.apply(a * ln2, b * ln2) / ln2

    def frac(self):
        """x - trunc(x), the sign of x (float tensors, as torch)."""
        if self.dtype.kind != "f":
            raise TypeError(f"frac: not implemented for {self.dtype} tensors (as in torch)")
        return self - self.trunc()

    def fix(self):
        """trunc(x), rounded toward zero (torch's alias)."""
        if self.dtype.kind == "b":
            raise TypeError("fix: not implemented for bool tensors (as in torch)")
        return self.trunc()

    def sgn(self):
        """sign(x) (for real tensors torch's sgn is sign; bool stays bool)."""
        return self.sign()

    def signbit(self):
        """True where the sign bit is set (-0.0 included); bool, no gradient."""
        return self._op_class._from_op(np.signbit(_numeric(self._data)), None)

    def positive(self):
        """x itself (a bool tensor is refused, as torch)."""
        return +self

    def absolute(self):
        """|x| (torch's alias of abs)."""
        return self.abs()

    def angle(self):
        """The angle of a real number: 0 for x >= 0, pi for x < 0 (NaN stays); float32 for
        int and bool inputs; a zero gradient."""
        x = self if self.dtype.kind == "f" else self.float()
        d = x._data
        with np.errstate(invalid="ignore"):
            const = np.where(np.isnan(d), np.nan, np.where(d < 0, np.pi, 0)).astype(x.dtype)
        # x's zeros (a zero gradient, as torch's) plus the constant angles
        return x.masked_fill(np.ones((), bool), 0) + x._op_class._from_op(const, None)

    def isposinf(self):
        """True where x is +inf; bool."""
        return self._op_class._from_op(np.isposinf(_numeric(self._data)), None)

    def isneginf(self):
        """True where x is -inf; bool."""
        return self._op_class._from_op(np.isneginf(_numeric(self._data)), None)

    def isreal(self):
        """True everywhere: tinygradx has no complex dtype; bool."""
        return self._op_class._from_op(np.ones(self.shape, bool), None)


def function_form(name, method=None, owner=None):
    """torch's function form of the Tensor method `method` (default: name) of the mixin
    `owner` (default: MoreMathMethods), input first: torch.diag(x) is x.diag()."""
    method = method or name
    doc = (getattr(owner or MoreMathMethods, method).__doc__ or "").split("\n")[0]

    def fn(input, *args, **kwargs):
        if not isinstance(input, TensorBase):
            raise TypeError(f"{name}(): argument 'input' must be a Tensor, not "
                            f"{type(input).__name__} (make one with tgx.tensor(...))")
        return getattr(input, method)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"tgx.{name}(input, ...) = input.{method}(...)" + (f": {doc}" if doc else "")
    return fn


def xlogy(input, other):
    """tgx.xlogy(input, other) = input * log(other), 0 where input == 0; either may be a
    number, not both (as torch)."""
    if not isinstance(input, TensorBase):
        if not isinstance(other, TensorBase):
            raise TypeError(f"xlogy(): expected a Tensor among input and other, got "
                            f"{type(input).__name__} and {type(other).__name__}")
        a, b = _promoted_float("xlogy", input, other)
        return special.Xlogy.apply(a, b)
    return input.xlogy(other)


def polygamma(n, input):
    """tgx.polygamma(n, input) = input.polygamma(n) (torch's argument order)."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"polygamma(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    return input.polygamma(n)


# the function forms (torch.tan(x) is x.tan(), torch.atan2(y, x) is y.atan2(x), ...)
tan = function_form("tan")
asin = function_form("asin")
acos = function_form("acos")
atan = function_form("atan")
sinh = function_form("sinh")
cosh = function_form("cosh")
asinh = function_form("asinh")
acosh = function_form("acosh")
atanh = function_form("atanh")
arcsin = function_form("arcsin")
arccos = function_form("arccos")
arctan = function_form("arctan")
arcsinh = function_form("arcsinh")
arccosh = function_form("arccosh")
arctanh = function_form("arctanh")
sinc = function_form("sinc")
atan2 = function_form("atan2")
arctan2 = function_form("arctan2")
hypot = function_form("hypot")
deg2rad = function_form("deg2rad")
rad2deg = function_form("rad2deg")
erfc = function_form("erfc")
erfinv = function_form("erfinv")
lgamma = function_form("lgamma")
digamma = function_form("digamma")
mvlgamma = function_form("mvlgamma")
logit = function_form("logit")
copysign = function_form("copysign")
fmax = function_form("fmax")
fmin = function_form("fmin")
frexp = function_form("frexp")
ldexp = function_form("ldexp")
nextafter = function_form("nextafter")
heaviside = function_form("heaviside")
nan_to_num = function_form("nan_to_num")
float_power = function_form("float_power")
logaddexp2 = function_form("logaddexp2")
frac = function_form("frac")
fix = function_form("fix")
sgn = function_form("sgn")
signbit = function_form("signbit")
positive = function_form("positive")
absolute = function_form("absolute")
angle = function_form("angle")
isposinf = function_form("isposinf")
isneginf = function_form("isneginf")
isreal = function_form("isreal")
