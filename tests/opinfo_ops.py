"""Op-info entries of the op families torch users meet beyond the Transformer's (loaded at the end
of opinfo.py, into the same OPS table): the trigonometric and hyperbolic functions, the
special functions (erfc, erfinv, the gamma family, xlogy, logit), the float-aware ops
(copysign, fmax/fmin, frexp, nextafter, heaviside, nan_to_num), and the compositions
(deg2rad, ldexp, float_power, ...). Each as a Tensor method and as torch's function form.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import (ALL, F64, _f64, _mm_samples, BOOL, I64, NUMERIC, OpInfo, S, Sample, _int_float,
                    TF, add, array, broadcast_shapes, binary, family, shape, torch, unary)

_NOGRAD = "not differentiable (bool or integer result)"
_NODERIV = ("torch has no derivative for it (its backward raises; ours too: "
            "tests/ops/test_op_families.py)")


def _vec(fn):
    return np.vectorize(fn, otypes=[np.float64])


def _np_lgamma(v):
    return math.inf if v <= 0 and v == math.floor(v) else math.lgamma(v)


def _method(m, *args, **kwargs):
    return lambda x, *rest, **kw: getattr(x, m)(*rest, *args, **kwargs, **kw)


def _torch_fn(m, *args, **kwargs):
    return lambda *xs, **kw: getattr(torch, m)(*xs, *args, **kwargs, **kw)


def _f32(fn):
    """numpy's fn with int and bool inputs in float32 first (torch's result dtype)."""
    return lambda *xs: fn(*(x if x.dtype.kind == "f" else x.astype(np.float32) for x in xs))


def _both(m, ref, samples, api=(), fixed=(), torch_op=None, **kw):
    """Tensor.m and tgx.m (the function form), each checked against torch's own."""
    return (OpInfo(f"Tensor.{m}", _method(m), ref=ref, samples=samples, fixed=fixed,
                   api=tuple(f"Tensor.{a}" for a in (m, *api)),
                   torch_op=torch_op or "same", **kw),
            OpInfo(f"tgx.{m}", getattr(tgx, m), torch_op=torch_op or _torch_fn(m), ref=ref,
                   samples=samples, fixed=fixed, api=tuple(f"tgx.{a}" for a in (m, *api)),
                   **kw))


# --- trigonometric and hyperbolic (ops/trig.py) -------------------------------------------
_UNIT = dict(low=-0.9, high=0.9)
_TRIG = [
    # name, numpy reference, sample range, torch's aliases
    ("tan", np.tan, dict(low=-1.3, high=1.3), ()),
    ("asin", np.arcsin, _UNIT, ("arcsin",)),
    ("acos", np.arccos, _UNIT, ("arccos",)),
    ("atan", np.arctan, dict(low=-4, high=4), ("arctan",)),
    ("sinh", np.sinh, dict(low=-3, high=3), ()),
    ("cosh", np.cosh, dict(low=-3, high=3), ()),
    ("asinh", np.arcsinh, dict(low=-4, high=4), ("arcsinh",)),
    ("acosh", np.arccosh, dict(low=1.1, high=4), ("arccosh",)),
    ("atanh", np.arctanh, _UNIT, ("arctanh",)),
    ("sinc", np.sinc, dict(low=-2.5, high=2.5), ()),
    # a product with the constant rounded to the input's dtype, as torch's
    ("deg2rad", lambda x: x * x.dtype.type(math.pi / 180), dict(low=-360, high=360), ()),
    ("rad2deg", lambda x: x * x.dtype.type(180 / math.pi), {}, ()),
]
for _m, _ref, _kw, _alias in _TRIG:
    add(*_both(_m, _f32(_ref), unary(**_kw), api=_alias, fixed=(_int_float(),)))
add(
    # torch's first derivative at 0 is a constant 0 of its formula, so its second derivative
    # there is 0 too where the true one is -pi^2/3: gradgradcheck leaves that point out
    OpInfo("Tensor.sinc[zero]", _method("sinc"), ref=np.sinc, samples=unary(),
           fixed=(S([0.0, 1e-20, 0.5, -1.0], desc="at_zero",
                    only=("numpy", "torch", "gradcheck")),), api=("Tensor.sinc",)),
    OpInfo("Tensor.asin[edges]", _method("asin"), ref=np.arcsin, samples=unary(**_UNIT),
           fixed=(S([-1.0, 1.0, 1.5, np.nan], desc="edges", only=("numpy", "torch")),),
           api=("Tensor.asin",)),
    OpInfo("Tensor.deg2rad[int]", _method("deg2rad"),
           ref=lambda x: x.astype(np.float32) * np.float32(math.pi / 180),
           samples=unary(low=-200, high=200),
           dtypes=(I64, BOOL), grad=False, grad_reason=_NOGRAD, api=("Tensor.deg2rad",)),
)
for _m, _ref in (("atan2", np.arctan2), ("hypot", np.hypot)):
    add(*_both(_m, _ref, binary(low=-2, high=2, avoid=(0,)), api=("arctan2",) if _m == "atan2"
               else (), fixed=(S([0.0, 1.0, -2.0], [0.0, -0.5, 0.0], desc="origin",
                                 only=("numpy", "torch")),)))
add(OpInfo("tgx.atan2[int]", tgx.atan2, torch_op=_torch_fn("atan2"), ref=_f32(np.arctan2),
           samples=binary(), dtypes=(I64, BOOL), grad=False, grad_reason=_NOGRAD,
           api=("tgx.atan2",)))


# --- special functions (ops/special.py) --------------------------------------------------
add(
    *_both("erfc", _vec(math.erfc), unary(low=-3, high=6), fixed=(
        S([-30.0, 0.0, 5.0, 10.0, 27.0], desc="tail"), _int_float())),
    *_both("erfinv", None, unary(low=-0.95, high=0.95), fixed=(
        S([-1.0, 1.0, 0.0, 0.999999, 1e-10], desc="edges", only=("torch",)), _int_float())),
    *_both("lgamma", _vec(_np_lgamma), unary(low=0.1, high=6, avoid=(-1, -2)), fixed=(
        S([0.0, -1.0, -2.5, 0.5, 1e5, 200.5], desc="poles", only=("numpy", "torch")),
        _int_float())),
    *_both("digamma", None, unary(low=0.1, high=20), rtol=1e-9, fixed=(
        S([-2.5, -0.3, 0.5, 1e-8, 30.0, 1e10], desc="wide", only=("torch",)),
        # (at the negative integers both give NaN, and torch's derivative there is a large
        # finite number where ours is inf: left out)
        S([0.0, -0.0, np.inf, -np.inf, np.nan], desc="poles", only=("torch",)),
        _int_float())),
    OpInfo("Tensor.polygamma", _method("polygamma", 1), ref=None, samples=unary(low=0.2, high=8),
           rtol=1e-8, rtol32=1e-4, fixed=(S([-2.5, 0.5, 3.7, 100.0], desc="wide"),)),
    OpInfo("Tensor.polygamma[n3]", _method("polygamma", 3), ref=None,
           samples=unary(low=0.5, high=8), rtol=1e-8, api=("Tensor.polygamma",)),
    OpInfo("tgx.polygamma", lambda x: tgx.polygamma(2, x), torch_op=lambda x: torch.polygamma(
        2, x), ref=None, samples=unary(low=0.3, high=8), rtol=1e-8),
    OpInfo("Tensor.mvlgamma", _method("mvlgamma", 3), ref=lambda x: sum(
        _vec(_np_lgamma)(x - i / 2) for i in range(3)) + 1.5 * math.log(math.pi),
           samples=unary(low=1.2, high=5)),
    OpInfo("tgx.mvlgamma", lambda x: tgx.mvlgamma(x, 2), torch_op=lambda x: torch.mvlgamma(
        x, 2), samples=unary(low=0.7, high=5)),
    *_both("xlogy", lambda a, b: np.where(a == 0, 0, a * np.log(b)),
           binary(low=-2, high=2, low_b=0.2, high_b=3), fixed=(
               S([0.0, 0.0, 1.0, 0.0, 2.0], [0.0, 1.0, 0.0, np.nan, -1.0], desc="zeros",
                 only=("torch",)),)),
    OpInfo("tgx.xlogy[scalar]", lambda b: tgx.xlogy(2.0, b), torch_op=lambda b: torch.xlogy(
        2.0, b), samples=unary(low=0.2, high=3), api=("tgx.xlogy",)),
    *_both("logit", lambda x: np.log(x / (1 - x)), unary(low=0.05, high=0.95), fixed=(
        S([0.0, 0.5, 1.0, 1.5, -0.5], desc="edges", only=("torch",)),)),
    OpInfo("Tensor.logit[eps]", _method("logit", 0.1), samples=unary(low=-0.2, high=1.2,
                                                                  avoid=(0.1, 0.9)),
           fixed=(S([0.0, 0.1, 0.5, 0.9, 1.0, 1.5], desc="clamped", only=("torch",)),),
           api=("Tensor.logit",)),
)


# --- float-aware (ops/ieee.py) -----------------------------------------------------------
_NAN_INF = S([np.nan, 1.0, np.inf, -np.inf, 0.0, np.nan, -0.0],
             [1.0, np.nan, 2.0, np.nan, -0.0, np.nan, 0.0], desc="nan_inf",
             only=("numpy", "torch"))


def _untied():
    """Two broadcasting inputs that never tie where they are floats (fmax/fmin give a tie
    wholly to the first input, so finite differences there see the halves of a kink)."""
    def build(draw, dt):
        sa, sb = broadcast_shapes(draw, 2)
        a, b = array(draw, sa, dt), array(draw, sb, dt)
        if dt.kind == "f":          # the same draw twice is a == b: b = 0.9 a + 0.3 is not
            b = (b * 0.9 + 0.3).astype(dt)
        return Sample((a, b))
    return family(build)


def _ldexp_family():
    def build(draw, dt):
        sa, sb = broadcast_shapes(draw, 2)
        return Sample((array(draw, sa, dt), array(draw, sb, I64, low=0, high=4)))
    return family(build)


# torch's derivative of ldexp computes 2**e in the integers, so it is 0 where e < 0 (its
# value is right): the negative exponents are held to numpy and finite differences only
_LDEXP_NEG = S(_f64(3), np.array([-1, -3, 2]), desc="negative_exponent",
               only=("numpy", "gradcheck", "gradgradcheck"))


add(
    *_both("copysign", np.copysign, binary(avoid=(0,)), fixed=(
        S([0.0, -0.0, 1.0, -2.0, np.nan, np.inf], [-1.0, 1.0, -0.0, 2.0, -1.0, 0.0],
          desc="signed_zero", only=("numpy", "torch")),
        S(np.arange(4), np.array([-1, 1, -2, 0]), desc="ints", only=("numpy", "torch")))),
    OpInfo("tgx.copysign[scalar]", lambda a: tgx.copysign(a, -1.0),
           torch_op=lambda a: torch.copysign(a, -1.0), ref=lambda a: np.copysign(a, -1.0),
           samples=unary(avoid=(0,)), api=("tgx.copysign",)),
    *_both("fmax", np.fmax, _untied(), dtypes=NUMERIC, fixed=(_NAN_INF,)),
    *_both("fmin", np.fmin, _untied(), dtypes=NUMERIC, fixed=(_NAN_INF,)),
    *_both("nextafter", np.nextafter, _untied()),
    *_both("heaviside", lambda x, v: np.where(x == 0, v, x > 0).astype(x.dtype),
           binary(avoid=(0.5,)), dtypes=NUMERIC, grad=False, grad_reason=_NODERIV, fixed=(
               S([-1.0, 0.0, 2.0, np.nan, -0.0], [0.5, 0.5, 0.5, 0.5, 7.0], desc="zero_nan"),)),
    *_both("nan_to_num", np.nan_to_num, unary(), dtypes=ALL, fixed=(
        S([np.nan, np.inf, -np.inf, 1.5], desc="special", only=("numpy", "torch")),
        S(np.array([np.nan, np.inf, -np.inf], np.float32), desc="special_f32",
          only=("numpy", "torch")))),
    OpInfo("Tensor.nan_to_num[values]", _method("nan_to_num", 1.0, 9.0, -9.0),
           ref=lambda x: np.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0), samples=unary(),
           fixed=(S([np.nan, np.inf, -np.inf, 1.5], desc="special", only=("numpy", "torch")),),
           api=("Tensor.nan_to_num",)),
    *_both("frexp", lambda x: np.frexp(x), unary(low=-40, high=40), fixed=(
        S([0.0, np.inf, -np.inf, np.nan, 1e-310, 0.5, 1.0], desc="special",
          only=("numpy", "torch")),)),
    *_both("ldexp", lambda x, e: x * np.exp2(e), _ldexp_family(), fixed=(_LDEXP_NEG,)),
    *_both("float_power", lambda a, b: np.float_power(a, b), binary(low=0.2, high=2)),
    OpInfo("Tensor.float_power[scalar]", _method("float_power", 2.5),
           ref=lambda x: np.float_power(x, 2.5), samples=unary(low=0.2, high=2),
           fixed=(_int_float(only=("numpy", "torch")),), api=("Tensor.float_power",)),
    *_both("logaddexp2", np.logaddexp2, binary()),
    *_both("frac", lambda x: x - np.trunc(x), unary(low=-4, high=4, avoid=tuple(range(-4, 5)))),
    *_both("fix", np.trunc, unary(low=-4, high=4, avoid=tuple(range(-4, 5))), dtypes=NUMERIC),
    # torch's gradient of sgn is a ZeroTensor numpy cannot read: + 0 * x makes it a tensor
    *_both("sgn", np.sign, unary(avoid=(0,)), dtypes=NUMERIC,
           torch_op=lambda x: torch.sgn(x) + 0 * x),
    *_both("positive", lambda x: x, unary(), dtypes=NUMERIC),
    *_both("absolute", np.abs, unary(avoid=(0,)), dtypes=NUMERIC),
    *_both("angle", lambda x: np.where(np.isnan(x), np.nan, np.where(x < 0, np.pi, 0.0)),
           unary(avoid=(0,)), fixed=(S([np.nan, -1.0, 0.0, -0.0, 2.0], desc="nan",
                                       only=("numpy", "torch")),
                                     _int_float(only=("torch",)))),
)
def _numeric(fn):
    return lambda x: fn(x.astype(np.int8) if x.dtype == BOOL else x)


for _m, _ref in (("signbit", _numeric(np.signbit)), ("isposinf", _numeric(np.isposinf)),
                 ("isneginf", _numeric(np.isneginf)), ("isreal", lambda x: np.ones(x.shape, bool))):
    add(*_both(_m, _ref, unary(), dtypes=ALL, grad=False, grad_reason=_NOGRAD,
               fixed=(S([0.0, -0.0, np.inf, -np.inf, np.nan, -2.0], desc="special"),)))


# --- scans (ops/scans.py): the running extremes and logcumsumexp ----------------------------
def np_running(x, dim, largest):
    x = np.asarray(x)
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    xm = np.moveaxis(x, dim, 0)
    vals, idx = np.empty_like(xm), np.zeros(xm.shape, np.int64)
    for i in range(len(xm)):
        if i == 0:
            vals[0], idx[0] = xm[0], 0
            continue
        take = np.isnan(xm[i]) | (xm[i] >= vals[i - 1] if largest else xm[i] <= vals[i - 1])
        take &= ~np.isnan(vals[i - 1]) | np.isnan(xm[i])
        vals[i] = np.where(take, xm[i], vals[i - 1])
        idx[i] = np.where(take, i, idx[i - 1])
    return np.moveaxis(vals, 0, dim), np.moveaxis(idx, 0, dim)


def _dim_kw(draw, s):
    return {"dim": draw(st.integers(-max(len(s), 1), max(len(s), 1) - 1))}


def np_logcumsumexp(x, dim):
    return np.logaddexp.accumulate(x, axis=dim) if x.ndim else x


_TIES = S([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 1.0], desc="ties_nan", dim=0,
          only=("numpy", "torch"))
for _m, _largest in (("cummax", True), ("cummin", False)):
    add(*_both(_m, (lambda lg: lambda x, dim: np_running(x, dim, lg))(_largest),
               unary(kw=_dim_kw), dtypes=NUMERIC, fixed=(
                   _TIES, S(np.array([2, 2, 1, 2, 1]), desc="int_ties", dim=0))))
add(*_both("logcumsumexp", np_logcumsumexp, unary(low=-5, high=5, kw=_dim_kw), fixed=(
    S([-1000.0, 0.0, 1000.0, 999.0], desc="wide", dim=0),
    S(np.array([[-800.0, 3.0], [2.0, -900.0]]), desc="wide_rows", dim=1))))


# --- torch's other spellings (tensor/aliases.py): products by rank, fused add* forms, ... ----
def _np_inner(a, b):
    return a * b if a.ndim == 0 or b.ndim == 0 else np.inner(a, b)


def _inner_family():
    def build(draw, dt):
        k = draw(st.integers(0, 3))
        sa = shape(draw, 0, 2) + (k,) if draw(st.integers(0, 4)) else ()
        sb = shape(draw, 0, 2) + (k,) if sa else shape(draw, 0, 2)
        return Sample((array(draw, sa, dt), array(draw, sb, dt)))
    return family(build)


def _fused_family(kind):
    """(input, a, b) and beta/alpha for addmv, addr, baddbmm, addbmm."""
    def build(draw, dt):
        b, n, m, p = (draw(st.integers(1, 3)) for _ in range(4))
        a_shape, b_shape, out = {"addmv": ((n, m), (m,), (n,)),
                                 "addr": ((n,), (p,), (n, p)),
                                 "baddbmm": ((b, n, m), (b, m, p), (b, n, p)),
                                 "addbmm": ((b, n, m), (b, m, p), (n, p))}[kind]
        inp = out[draw(st.integers(0, len(out))):]          # a suffix: it broadcasts
        beta, alpha = draw(st.sampled_from(((1, 1), (0.5, -2.0), (0, 1))))
        return Sample((array(draw, inp, dt), array(draw, a_shape, dt), array(draw, b_shape, dt)),
                      {"beta": beta, "alpha": alpha})
    return family(build)


def _np_fused(kind):
    def ref(x, a, b, beta=1, alpha=1):
        prod = {"addmv": lambda: a @ b, "addr": lambda: np.outer(a, b),
                "baddbmm": lambda: a @ b, "addbmm": lambda: (a @ b).sum(0)}[kind]()
        return alpha * prod if beta == 0 else alpha * prod + beta * x
    return ref


def _addc_family():
    def build(draw, dt):
        shapes = broadcast_shapes(draw, 3)
        return Sample((array(draw, shapes[0], dt), array(draw, shapes[1], dt),
                       array(draw, shapes[2], dt, low=0.5, high=2)),
                      {"value": draw(st.sampled_from((1, 0.5, -2.0)))})
    return family(build)


_PRODUCTS = [
    # name, samples, numpy reference
    ("mm", _mm_samples(2, 2), np.matmul), ("mv", _mm_samples(2, 1), np.matmul),
    ("dot", _mm_samples(1, 1), np.dot), ("vdot", _mm_samples(1, 1), np.dot),
    ("inner", _inner_family(), _np_inner), ("ger", _mm_samples(1, 1), np.outer),
    ("outer", _mm_samples(1, 1), np.outer),
]
for _m, _s, _ref in _PRODUCTS:
    add(OpInfo(f"Tensor.{_m}", _method(_m), ref=_ref, samples=_s))
for _m in ("inner", "ger", "vdot"):
    add(OpInfo(f"tgx.{_m}", getattr(tgx, _m), torch_op=_torch_fn(_m), ref=dict(
        (p[0], p[2]) for p in _PRODUCTS)[_m], samples=dict((p[0], p[1]) for p in _PRODUCTS)[_m]))
add(OpInfo("Tensor.bmm", _method("bmm"), ref=np.matmul, samples=family(
    lambda d, dt: Sample(tuple(array(d, s, dt) for s in ((2, 3, 1), (2, 1, 4)))))))
for _m in ("addmv", "addr", "baddbmm", "addbmm"):
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda x, a, b, **kw: getattr(x, m)(a, b, **kw))(_m),
               ref=_np_fused(_m), samples=_fused_family(_m)),
        OpInfo(f"tgx.{_m}", getattr(tgx, _m), torch_op=(lambda m: lambda x, a, b, **kw: getattr(
            torch, m)(x, a, b, **kw))(_m), ref=_np_fused(_m), samples=_fused_family(_m)))
for _m, _f in (("addcmul", np.multiply), ("addcdiv", np.divide)):
    _r = (lambda f: lambda x, a, b, value=1: x + value * f(a, b))(_f)
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda x, a, b, **kw: getattr(x, m)(a, b, **kw))(_m),
               ref=_r, samples=_addc_family()),
        OpInfo(f"tgx.{_m}", getattr(tgx, _m), torch_op=(lambda m: lambda x, a, b, **kw: getattr(
            torch, m)(x, a, b, **kw))(_m), ref=_r, samples=_addc_family()))
for _m, _f in (("greater", np.greater), ("greater_equal", np.greater_equal),
               ("less", np.less), ("less_equal", np.less_equal), ("not_equal", np.not_equal),
               ("logical_and", np.logical_and), ("logical_or", np.logical_or),
               ("logical_xor", np.logical_xor)):
    add(OpInfo(f"Tensor.{_m}", _method(_m), ref=_f, samples=binary(), dtypes=ALL, grad=False,
               grad_reason=_NOGRAD))
for _m, _f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
               ("bitwise_xor", np.bitwise_xor)):
    add(OpInfo(f"Tensor.{_m}", _method(_m), ref=_f, samples=binary(), dtypes=(I64, BOOL),
               grad=False, grad_reason=_NOGRAD))
add(
    OpInfo("Tensor.logical_not", _method("logical_not"), ref=np.logical_not, samples=unary(),
           dtypes=ALL, grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.bitwise_not", _method("bitwise_not"), ref=np.invert, samples=unary(),
           dtypes=(I64, BOOL), grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.clamp_min", _method("clamp_min", 0.5), ref=lambda x: np.maximum(x, 0.5),
           samples=unary(avoid=(0.5,))),
    OpInfo("Tensor.clamp_max", _method("clamp_max", 0.5), ref=lambda x: np.minimum(x, 0.5),
           samples=unary(avoid=(0.5,))),
    OpInfo("Tensor.where", lambda x, y, cond: x.where(cond, y),
           ref=lambda x, y, cond: np.where(cond, x, y), samples=family(lambda d, dt: Sample(
               (array(d, (2, 3), dt), array(d, (3,), dt)),
               {"cond": array(d, (2, 1), BOOL)}))),
    OpInfo("Tensor.tile", _method("tile", (2, 1)), ref=lambda x: np.tile(x, (2, 1)),
           samples=unary(), dtypes=ALL),
    OpInfo("tgx.tile", lambda x: tgx.tile(x, (1, 2, 1, 2)), torch_op=lambda x: torch.tile(
        x, (1, 2, 1, 2)), ref=lambda x: np.tile(x, (1, 2, 1, 2)), samples=unary()),
    OpInfo("Tensor.ravel", _method("ravel"), ref=np.ravel, samples=unary(), dtypes=ALL),
    OpInfo("Tensor.reshape_as", lambda x: x.reshape_as(x.flatten()), ref=np.ravel,
           samples=unary()),
    OpInfo("Tensor.broadcast_to", lambda x: x.broadcast_to((2,) + tuple(x.shape)),
           ref=lambda x: np.broadcast_to(x, (2,) + x.shape), samples=unary()),
    OpInfo("Tensor.argwhere", _method("argwhere"), ref=np.argwhere, samples=unary(),
           dtypes=(I64, BOOL), grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.count_nonzero", _method("count_nonzero"), ref=np.count_nonzero,
           samples=unary(), dtypes=(F64, I64, BOOL), grad=False, grad_reason=_NOGRAD),
)
for _m, _dt in (("byte", np.uint8), ("char", np.int8), ("short", np.int16)):
    add(OpInfo(f"Tensor.{_m}", _method(_m), ref=(lambda d: lambda x: x.astype(d))(_dt),
               samples=unary(low=-5, high=5, avoid=tuple(range(-5, 6))) if _m != "byte" else
               unary(low=0.5, high=9, avoid=tuple(range(0, 10))), dtypes=(F64, I64, BOOL),
               grad=False, grad_reason=_NOGRAD))


# --- in-place variants: the gradient through the new history of x, against torch -------------
def _half_equal(draw, dt):
    """a, and b of a's shape equal to it at about half the positions."""
    s = shape(draw)
    a = array(draw, s, dt)
    b = np.where(array(draw, s, BOOL), a, array(draw, s, dt))
    return Sample((a, b))


def _ip(m, *args):
    return lambda x, *rest: getattr(x.clone(), m + "_")(*rest, *args)


add(
    OpInfo("Tensor.sin_", _ip("sin"), ref=np.sin, samples=unary()),
    OpInfo("Tensor.atan2_", _ip("atan2"), ref=np.arctan2, samples=family(
        lambda d, dt: Sample((array(d, (2, 3), dt), array(d, (3,), dt, avoid=(0,)))))),
    OpInfo("Tensor.eq_", lambda a, b: a.clone().eq_(b.detach()), ref=lambda a, b: (
        a == b).astype(a.dtype), samples=family(_half_equal), fixed=(
            S([1.0, 2.0], [1.0, 3.0], desc="equal"),)),
    OpInfo("Tensor.float_power_", lambda x: x.clone().float_power_(2.5),
           ref=lambda x: np.float_power(x, 2.5), samples=unary(low=0.2, high=2), dtypes=(F64,)),
    OpInfo("Tensor.cumsum_", _ip("cumsum", -1), ref=lambda x: np.cumsum(x, -1),
           samples=unary(min_dims=1)),
    OpInfo("Tensor.addmm_", lambda x, a, b: x.clone().addmm_(a, b, beta=0.5),
           ref=lambda x, a, b: 0.5 * x + a @ b, samples=family(lambda d, dt: Sample(tuple(
               array(d, s, dt) for s in ((2, 4), (2, 3), (3, 4)))))),
    OpInfo("Tensor.unsqueeze_", lambda x: (x * 1).unsqueeze_(-1),
           ref=lambda x: x[..., None], samples=unary()),
    OpInfo("Tensor.squeeze_", lambda x: (x * 1).squeeze_(), ref=np.squeeze, samples=unary()),
    OpInfo("Tensor.t_", lambda x: (x * 1).t_(), ref=lambda x: x.T, samples=unary(max_dims=2)),
    OpInfo("Tensor.transpose_", lambda x: (x * 1).transpose_(0, -1),
           ref=lambda x: np.swapaxes(x, 0, -1), samples=unary(min_dims=1)),
)

# names in docs/api.md that are no ops (Python values, predicates, refusals): opinfo.NOT_OPS
NOT_OPS = {
    "Tensor.nelement", "Tensor.ndimension", "Tensor.element_size", "Tensor.itemsize",
    "Tensor.nbytes", "Tensor.is_cpu", "Tensor.is_floating_point", "Tensor.is_complex",
    "Tensor.is_signed", "Tensor.is_inference", "Tensor.is_nonzero", "Tensor.is_same_size",
    "Tensor.allclose", "Tensor.equal", "Tensor.detach_", "tgx.is_nonzero", "tgx.is_complex",
    "tgx.is_inference",
}


# --- activations (functional/activations.py) ------------------------------------------------
def _np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True)) if x.size else x
    return e / e.sum(axis=dim, keepdims=True) if x.size else x


_ACTS = [
    # name, tinygradx op, torch op, numpy reference, sample kwargs
    ("F.celu", F.celu, lambda x: TF.celu(x), _np_elu, dict(avoid=(0,))),
    ("F.celu[alpha]", lambda x: F.celu(x, 0.5), lambda x: TF.celu(x, 0.5),
     lambda x: 0.5 * _np_elu(x / 0.5), dict(avoid=(0,))),
    ("F.hardsigmoid", F.hardsigmoid, lambda x: TF.hardsigmoid(x),
     lambda x: np.clip(x / 6 + 0.5, 0, 1), dict(low=-5, high=5, avoid=(-3, 3))),
    ("F.hardswish", F.hardswish, lambda x: TF.hardswish(x),
     lambda x: x * np.clip(x + 3, 0, 6) / 6, dict(low=-5, high=5, avoid=(-3, 3))),
    ("F.softsign", F.softsign, lambda x: TF.softsign(x), lambda x: x / (1 + np.abs(x)),
     dict(avoid=(0,))),
    ("F.tanhshrink", F.tanhshrink, lambda x: TF.tanhshrink(x), lambda x: x - np.tanh(x), {}),
    ("F.softshrink", F.softshrink, lambda x: TF.softshrink(x),
     lambda x: x - np.clip(x, -0.5, 0.5), dict(avoid=(-0.5, 0.5))),
    ("F.hardshrink", F.hardshrink, lambda x: TF.hardshrink(x),
     lambda x: np.where(np.abs(x) > 0.5, x, 0), dict(avoid=(-0.5, 0.5))),
    ("Tensor.hardshrink", lambda x: x.hardshrink(0.3), "same",
     lambda x: np.where(np.abs(x) > 0.3, x, 0), dict(avoid=(-0.3, 0.3))),
    ("F.threshold", lambda x: F.threshold(x, 0.25, -3.0), lambda x: TF.threshold(x, 0.25, -3.0),
     lambda x: np.where(x > 0.25, x, -3.0), dict(avoid=(0.25,))),
    ("F.rrelu", F.rrelu, lambda x: TF.rrelu(x), lambda x: np.where(
        x > 0, x, x * (1 / 8 + 1 / 3) / 2), dict(avoid=(0,))),
]
for _name, _op, _top, _ref, _kw in _ACTS:
    add(OpInfo(_name, _op, torch_op=_top, ref=_ref, samples=unary(**_kw),
               fixed=(S([-30.0, -3.0, -1.3, 0.0, 0.5, 3.0, 30.0], desc="edges",
                        only=("numpy", "torch")),)))


def _dim_sample(min_dims=1):
    def build(draw, dt):
        s = shape(draw, min_dims)
        return Sample((array(draw, s, dt),), {"dim": draw(st.integers(-len(s), len(s) - 1))})
    return family(build)


def _glu_sample(draw, dt):
    s = list(shape(draw, 1, empty=False))
    d = draw(st.integers(-len(s), len(s) - 1))
    s[d] *= 2
    return Sample((array(draw, tuple(s), dt),), {"dim": d})


def _np_glu(x, dim):
    a, b = np.split(x, 2, axis=dim)
    return a * _np_sigmoid(b)


def _prelu_sample(draw, dt):
    s = shape(draw, 1, 4, empty=False)
    n = draw(st.sampled_from((1, s[1] if len(s) >= 2 else 1)))
    return Sample((array(draw, s, dt, avoid=(0,)), array(draw, (n,), dt, low=0, high=1)))


def _np_prelu(x, w):
    w = w.reshape((len(w),) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and len(w) > 1 else w[0]
    return np.where(x > 0, x, w * x)


add(
    OpInfo("F.softmin", F.softmin, torch_op=lambda x, dim: TF.softmin(x, dim),
           ref=lambda x, dim: _np_softmax(-x, dim), samples=_dim_sample()),
    OpInfo("F.glu", F.glu, torch_op=lambda x, dim: TF.glu(x, dim), ref=_np_glu,
           samples=family(_glu_sample)),
    OpInfo("F.prelu", F.prelu, torch_op=lambda x, w: TF.prelu(x, w), ref=_np_prelu,
           samples=family(_prelu_sample)),
    OpInfo("Tensor.prelu", lambda x, w: x.prelu(w), ref=_np_prelu, samples=family(_prelu_sample)),
    # random slopes (tinygradx's generator): only shape and dtype are torch's to compare, and
    # the slopes between 1/8 and 1/3 (tests/ops/test_op_families.py)
    OpInfo("F.rrelu[training]", lambda x: F.rrelu(x, training=True), torch_op=None,
           torch_reason="random slopes from another generator", samples=unary(avoid=(0,)),
           values=False, gradcheck=False, api=("F.rrelu", "F.rrelu_")),
)
for _m in ("elu_", "leaky_relu_", "hardtanh_", "celu_", "selu_"):
    add(OpInfo(f"F.{_m}", (lambda m: lambda x: getattr(F, m)(x * 1))(_m),
               torch_op=(lambda m: lambda x: getattr(TF, m)(x * 1))(_m), samples=unary(
                   avoid=(0, -1, 1))))
add(OpInfo("F.threshold_", lambda x: F.threshold_(x * 1, 0.5, 2.0),
           torch_op=lambda x: TF.threshold_(x * 1, 0.5, 2.0), samples=unary(avoid=(0.5,))),
    OpInfo("F.leaky_relu[inplace]", lambda x: F.leaky_relu(x * 1, 0.2, inplace=True),
           torch_op=lambda x: TF.leaky_relu(x * 1, 0.2, inplace=True),
           samples=unary(avoid=(0,)), api=("F.leaky_relu",)))
