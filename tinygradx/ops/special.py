"""Special functions: erfc, erfinv, lgamma, digamma, polygamma, xlogy, logit. One Function per
op, forward and backward side by side; int and bool inputs give float32, as torch.

numpy has none of erfc, erfinv or the gamma family as ufuncs, so their forwards are written
here in float64 and cast back: erfc through Python's math.erfc (exact where 1 - erf(x) loses
every digit), erfinv by Newton's method on erf, lgamma through math.lgamma, and the
polygamma functions psi^(n) (digamma is n = 0) by the recurrence psi^(n)(x) =
psi^(n)(x + 1) - (-1)^n n!/x^(n+1), which moves x up to 12 or more, and the asymptotic series
there (Bernoulli numbers); below 1/2 digamma reflects (psi(x) = psi(1 - x) - pi/tan(pi x)).
Each derivative is the next function of the family (lgamma -> digamma -> polygamma(1) ->
...), so every order of derivative is exact.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.elementwise import as_float
from ..core.node import Function, OpError
from ..core.xp import of, value
from ..fast._erf import erf as _erf

_erfc = np.frompyfunc(math.erfc, 1, 1)


def _lgamma_one(v):
    """log |Gamma(v)| of one float: inf at the poles (non-positive integers) and at +-inf."""
    if not math.isfinite(v):
        return abs(v)                      # inf at +-inf, NaN at NaN
    if v <= 0 and v == math.floor(v):
        return math.inf
    try:
        return math.lgamma(v)
    except OverflowError:                  # beyond float64's range (v > 2.5e305)
        return math.inf


_lgamma = np.frompyfunc(_lgamma_one, 1, 1)
# the Bernoulli numbers B_2k, k = 1..8: the asymptotic series of digamma and psi^(n)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_SHIFT_TO = 12.0


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _back(out, like):
    return np.asarray(out, dtype=np.float64).astype(like.dtype, copy=False)


def _shifted(x, term):
    """(x moved up to _SHIFT_TO or more by steps of 1, the sum of term(x + k) over the steps
    taken). Non-finite x is left where it is."""
    y, acc = np.array(x, ndmin=1), np.zeros(np.shape(x) or (1,))
    low = np.isfinite(y) & (y < _SHIFT_TO)
    while low.any():
        acc[low] += term(y[low])
        y[low] += 1
        low[low] = y[low] < _SHIFT_TO
    return y.reshape(np.shape(x)), acc.reshape(np.shape(x))


def digamma(x):
    """psi(x) = d lgamma(x)/dx in float64: -inf at +0, +inf at -0, NaN at negative integers
    and -inf (torch's values)."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        refl = x < 0.5
        t = np.where(refl, 1 - x, x)
        y, acc = _shifted(t, lambda v: -1 / v)
        inv2 = 1 / (y * y)
        series, p = np.zeros_like(y), inv2.copy()
        for k, b in enumerate(_BERNOULLI, start=1):      # - sum B_2k / (2k y^2k)
            series -= b / (2 * k) * p
            p = p * inv2
        out = np.log(y) - 0.5 / y + series + acc
        out = np.where(refl, out - np.pi / np.tan(np.pi * x), out)
        out = np.where(x == np.inf, np.inf, out)
        bad = (x < 0) & (x == np.floor(x))       # negative integers and -inf
        out = np.where(bad, np.nan, out)
        return np.where(x == 0, np.copysign(np.inf, -np.copysign(1.0, x)), out)


def polygamma(n, x):
    """psi^(n)(x) for n >= 1 in float64: (-1)^(n+1) n! sum_k 1/(x + k)^(n+1), summed
    directly up to x + k >= 12 and by its asymptotic series beyond; +-inf at the poles
    (x a non-positive integer), NaN at -inf."""
    x = _f64(x)
    fact = math.factorial(n)
    sign = 1.0 if n % 2 else -1.0
    with np.errstate(all="ignore"):
        y, acc = _shifted(x, lambda v: fact / v ** (n + 1))
        # psi^(n)(y) ~ (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1))
        #                          + sum_k B_2k (2k+n-1)!/((2k)! y^(2k+n))]
        s = math.factorial(n - 1) / y ** n + fact / (2 * y ** (n + 1))
        for k, b in enumerate(_BERNOULLI, start=1):
            s = s + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / y ** (2 * k + n)
        out = sign * (s + acc)
        out = np.where(x == np.inf, 0.0, out)
        pole = (x <= 0) & (x == np.floor(x)) & np.isfinite(x)
        return np.where(pole, sign * np.inf, np.where(x == -np.inf, np.nan, out))


class Erfc(Function):
    """d(erfc x) = -g * 2/sqrt(pi) exp(-x^2)"""
    def forward(self, x):
        self.x = as_float(x)
        return _back(_erfc(_f64(self.x)), self.x)

    def backward(self, g):
        return g * (of(g).exp(-(self.x * self.x)) * (-2 / math.sqrt(math.pi)))


def _erfinv(x):
    """erfinv on an array (float dtypes; the caller casts integers): y with erf(y) = x."""
    v = _f64(x)
    with np.errstate(all="ignore"):
        # a start within 1e-3 (Winitzki's formula), then Newton's method on erf
        a = 0.147
        ln = np.log1p(-v * v)
        t = 2 / (np.pi * a) + ln / 2
        y = np.sign(v) * np.sqrt(np.sqrt(t * t - ln / a) - t)
        inside = np.abs(v) < 1
        for _ in range(3):
            step = (_erf(y) - v) / (2 / math.sqrt(math.pi) * np.exp(-y * y))
            y = np.where(inside, y - step, y)
        # near +-1, erf(y) - v loses the digits that 1 - |v| keeps: finish on erfc there
        tail = inside & (np.abs(v) > 0.5)
        if tail.any():
            z, t = np.abs(y[tail]), 1 - np.abs(v[tail])       # 1 - |v| is exact here
            for _ in range(2):
                z = z + (_erfc(z).astype(np.float64) - t) / (
                    2 / math.sqrt(math.pi) * np.exp(-z * z))
            y[tail] = np.copysign(z, v[tail])
        y = np.where(np.abs(v) == 1, np.copysign(np.inf, v), y)
        y = np.where((np.abs(v) > 1) | np.isnan(v), np.nan, y)
    return _back(y, x)


class Erfinv(Function):
    """y with erf(y) = x (+-inf at +-1, NaN outside): d = g * sqrt(pi)/2 exp(y^2).

    Keeps x and computes y again in backward, as torch does: an in-place change of the output
    after the call is allowed (under create_graph y is x.erfinv(), so it has derivatives)."""
    def forward(self, x):
        self.x = as_float(x)
        return _erfinv(self.x)

    def backward(self, g):
        y = _erfinv(self.x) if isinstance(self.x, np.ndarray) else self.x.erfinv()
        return g * (of(g).exp(y * y) * (math.sqrt(math.pi) / 2))


class Lgamma(Function):
    """log |Gamma(x)| (inf at the poles): d = g * digamma(x)"""
    def forward(self, x):
        self.x = as_float(x)
        return _back(_lgamma(_f64(self.x)), self.x)

    def backward(self, g):
        return g * of(g).run(Polygamma, self.x, n=0)


class Polygamma(Function):
    """psi^(n)(x), the n-th derivative of digamma (n = 0: digamma itself): d = g * psi^(n+1)(x)"""
    def forward(self, x, n):
        self.x, self.n = as_float(x), n
        return _back(digamma(self.x) if n == 0 else polygamma(n, self.x), self.x)

    def backward(self, g):
        return g * of(g).run(Polygamma, self.x, n=self.n + 1)


class Xlogy(Function):
    """x * log(y), 0 where x == 0 (unless y is NaN): d = (g*log(y) there 0, g*x/y); the
    caller promotes x and y to one float dtype."""
    def forward(self, x, y):
        self.x, self.y = x, y
        with np.errstate(all="ignore"):
            self.zero = (x == 0) & ~np.isnan(y)
            out = np.where(self.zero, 0, x * np.log(y))
        return out.astype(np.result_type(x, y), copy=False)

    def backward(self, g):
        xp, (nx, ny) = of(g), self.needs_input_grad
        gx = g * xp.where(self.zero, 0.0, xp.log(self.y)) if nx else None
        return gx, (g * self.x / self.y if ny else None)


class Logit(Function):
    """log(z/(1 - z)), z = x clamped into [eps, 1 - eps] when eps is given: d = g/(x(1 - x)),
    0 outside [eps, 1 - eps] with eps, NaN outside [0, 1] without (torch's values)."""
    def forward(self, x, eps=None):
        x = as_float(x)
        self.x = x
        z = x if eps is None else np.clip(x, eps, 1 - eps)
        with np.errstate(all="ignore"):
            self.outside = (x < 0) | (x > 1) if eps is None else (x < eps) | (x > 1 - eps)
            self.fill = np.nan if eps is None else 0.0
            return np.log(z / (1 - z))

    def backward(self, g):
        xp, x, outside = of(g), self.x, self.outside
        if not value(outside).any():
            return g / (x * (1 - x))
        x = xp.where(outside, 0.5, x)        # no 1/0 on the filled side, in any derivative
        return xp.where(outside, self.fill, g / (x * (1 - x)))


def check_polygamma_order(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OpError(f"polygamma: n must be a non-negative int, got {n!r}")
    return int(n)
