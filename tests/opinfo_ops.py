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
from opinfo import (ALL, F32, F64, _f64, _mm_samples, BOOL, I64, NUMERIC, OpInfo, S, Sample,
                    _int_float, TF, add, array, broadcast_shapes, binary, family, none, shape,
                    torch, unary)

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


# --- the scatter family (ops/scatter_reduce.py, tensor/scatter_methods.py) -------------------
def np_scatter_reduce(x, src, dim, index, reduce, include_self=True):
    """One src element at a time, from the definition."""
    x = np.asarray(x)
    dim = dim % x.ndim
    groups = {}
    for pos in np.ndindex(*index.shape):
        target = pos[:dim] + (int(index[pos]),) + pos[dim + 1:]
        groups.setdefault(target, []).append(src[pos])
    out = x.copy()
    for target, vals in groups.items():
        vals = ([x[target]] if include_self else []) + vals
        if reduce == "sum":
            out[target] = np.sum(vals)
        elif reduce == "prod":
            out[target] = np.prod(vals)
        elif reduce == "amax":
            out[target] = np.max(vals)
        elif reduce == "amin":
            out[target] = np.min(vals)
        elif x.dtype.kind == "f":
            out[target] = np.sum(vals) / len(vals)
        else:
            out[target] = np.floor_divide(np.sum(vals), len(vals))
    return out


def _scatter_reduce_sample(reduces, src_bigger=True):
    def build(draw, dt):
        s = shape(draw, 1, 3, empty=False)
        dim = draw(st.integers(-len(s), len(s) - 1))
        d = dim % len(s)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        ishape = tuple(draw(st.integers(0 if i == d else 1, n + 1 if i == d else n))
                       for i, n in enumerate(s))
        index = rng.integers(0, s[d], size=ishape).astype(np.int64)
        sshape = tuple(n + (src_bigger and draw(st.integers(0, 4)) == 0) for n in ishape)
        reduce = draw(st.sampled_from(reduces))
        low, high = (0.5, 1.5) if reduce == "prod" else (-2.0, 2.0)
        x = array(draw, s, dt, low=low, high=high)
        src = array(draw, sshape, dt, low=low, high=high, layout=False)
        return Sample((x, src), {"dim": dim, "index": index, "reduce": reduce,
                                 "include_self": draw(st.booleans())})
    return family(build)


_SR = ("sum", "prod", "mean", "amax", "amin")


def _zeros_sample():
    """prod with zeros: one zero in a group, two, and x itself zero. Where a group holds two
    zeros, the first derivative of each is 0 by the formula (torch's too), so its second
    derivative is 0 there where the true one is the product of the rest: gradgradcheck leaves
    these samples out."""
    x = np.array([2.0, 0.0, 3.0, 5.0])
    src = np.array([0.0, 4.0, 0.0, 0.0, 7.0, 1.5])
    index = np.array([0, 0, 2, 2, 1, 3])
    return [S(x, src, dim=0, index=index, reduce="prod", include_self=inc,
              desc=f"prod_zeros_{inc}", only=("numpy", "torch", "gradcheck"))
            for inc in (True, False)]


def _ties_sample():
    x = np.array([1.0, 4.0, 2.0])
    src = np.array([1.0, 1.0, 4.0, 0.5])
    index = np.array([0, 0, 1, 2])
    return [S(x, src, dim=0, index=index, reduce=r, include_self=True, desc=f"{r}_ties",
              only=("numpy", "torch")) for r in ("amax", "amin", "mean")]


add(
    OpInfo("Tensor.scatter_reduce", lambda x, src, dim, index, reduce, include_self:
           x.scatter_reduce(dim, index, src, reduce, include_self=include_self),
           ref=np_scatter_reduce, samples=_scatter_reduce_sample(_SR, False), dtypes=NUMERIC,
           fixed=(*_zeros_sample(), *_ties_sample())),
    # src larger than index (only index's box is read): torch's values agree, but its
    # backward refuses the shape ("invalid gradient ... got [1] but expected [2]"): our
    # gradient (zeros beyond the box) is held to numpy and finite differences
    OpInfo("Tensor.scatter_reduce[src_bigger]", lambda x, src, dim, index, reduce,
           include_self: x.scatter_reduce(dim, index, src, reduce, include_self=include_self),
           torch_op=None, torch_reason="torch's backward refuses a src larger than index",
           ref=np_scatter_reduce, samples=_scatter_reduce_sample(_SR),
           api=("Tensor.scatter_reduce",)),
    OpInfo("tgx.scatter_reduce", lambda x, src, dim, index, reduce, include_self:
           tgx.scatter_reduce(x, dim, index, src, reduce, include_self=include_self),
           torch_op=lambda x, src, dim, index, reduce, include_self: torch.scatter_reduce(
               x, dim, index, src, reduce, include_self=include_self),
           ref=np_scatter_reduce, samples=_scatter_reduce_sample(_SR, False)),
    OpInfo("Tensor.scatter_reduce_", lambda x, src, dim, index, reduce, include_self:
           x.clone().scatter_reduce_(dim, index, src, reduce, include_self=include_self),
           ref=np_scatter_reduce, samples=_scatter_reduce_sample(("sum", "prod", "amax"),
                                                                 False)),
    OpInfo("Tensor.scatter[reduce]", lambda x, src, dim, index, reduce, include_self:
           x.scatter(dim, index, src, reduce={"sum": "add", "prod": "multiply"}[reduce]),
           ref=lambda x, src, dim, index, reduce, include_self: np_scatter_reduce(
               x, src, dim, index, reduce), samples=_scatter_reduce_sample(("sum", "prod")),
           dtypes=NUMERIC, grad=False, grad_reason=_NODERIV, api=("Tensor.scatter",)),
    OpInfo("Tensor.scatter_[reduce]", lambda x, src, dim, index, reduce, include_self:
           x.clone().scatter_(dim, index, src, reduce={"sum": "add", "prod": "multiply"}[reduce]),
           ref=lambda x, src, dim, index, reduce, include_self: np_scatter_reduce(
               x, src, dim, index, reduce), samples=_scatter_reduce_sample(("sum", "prod")),
           dtypes=NUMERIC, grad=False, grad_reason=_NODERIV, api=("Tensor.scatter_",)),
)


def _index_op_sample(kind):
    """self, source and a 1-d index along dim for index_add / index_copy / index_reduce."""
    def build(draw, dt):
        s = shape(draw, 0, 3, empty=False)
        nd = max(len(s), 1)
        dim = draw(st.integers(-nd, nd - 1))
        d = dim % nd
        full = s or (1,)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        k = draw(st.integers(0, full[d] + 2)) if s else 1
        index = (rng.permutation(full[d])[:min(k, full[d])] if kind == "copy" else
                 rng.integers(0, full[d], size=k)).astype(np.int64)
        sshape = full[:d] + (len(index),) + full[d + 1:] if s else ()
        low, high = (0.5, 1.5) if kind == "reduce" else (-2.0, 2.0)
        kw = {"dim": dim, "index": index}
        if kind == "reduce":
            kw.update(reduce=draw(st.sampled_from(("prod", "mean", "amax", "amin"))),
                      include_self=draw(st.booleans()))
        return Sample((array(draw, s, dt, low=low, high=high),
                       array(draw, sshape, dt, low=low, high=high, layout=False)), kw)
    return family(build)


def np_index_op(kind):
    def ref(x, source, dim, index, reduce="sum", include_self=True, alpha=1):
        x1 = x.reshape(x.shape or (1,))
        d = dim % x1.ndim
        shape = [1] * x1.ndim
        shape[d] = -1
        full = np.broadcast_to(index.reshape(shape), source.reshape(source.shape or (1,)).shape)
        src = source.reshape(full.shape) * alpha
        if kind == "copy":
            out = x1.copy()
            out[_grid(full, d)] = src
        else:
            out = np_scatter_reduce(x1, src, d, full, reduce, include_self)
        return out.reshape(x.shape)
    return ref


def _grid(index, dim):
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


for _m, _kind in (("index_add", "add"), ("index_copy", "copy"), ("index_reduce", "reduce")):
    _call = (lambda m: lambda x, s, **kw: getattr(x, m)(kw.pop("dim"), kw.pop("index"), s,
                                                         *([kw.pop("reduce")] if "reduce" in kw
                                                           else []), **kw))(_m)
    _fn = (lambda m: lambda x, s, **kw: getattr(tgx, m)(x, kw.pop("dim"), kw.pop("index"), s,
                                                         *([kw.pop("reduce")] if "reduce" in kw
                                                           else []), **kw))(_m)
    _tfn = (lambda m: lambda x, s, **kw: getattr(torch, m)(x, kw.pop("dim"), kw.pop("index"), s,
                                                            *([kw.pop("reduce")] if "reduce" in
                                                              kw else []), **kw))(_m)
    _ref = np_index_op("sum" if _kind == "add" else _kind)
    _ref = (lambda r, k: (lambda x, s, **kw: r(x, s, **({"reduce": "sum"} if k == "add" else {}),
                                                **kw)))(np_index_op("reduce" if _kind != "copy"
                                                                    else "copy"), _kind)
    add(OpInfo(f"Tensor.{_m}", _call, ref=_ref, samples=_index_op_sample(_kind)),
        OpInfo(f"tgx.{_m}", _fn, torch_op=_tfn, ref=_ref, samples=_index_op_sample(_kind)),
        OpInfo(f"Tensor.{_m}_", (lambda m: lambda x, s, **kw: getattr(x.clone(), m + "_")(
            kw.pop("dim"), kw.pop("index"), s, *([kw.pop("reduce")] if "reduce" in kw else []),
            **kw))(_m), ref=_ref, samples=_index_op_sample(_kind)))


def _masked_scatter_sample(draw, dt):
    s = shape(draw, 0, 3)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = draw(st.integers(0, len(s)))
    mask = np.asarray(rng.random(s[len(s) - k:]) < 0.5)     # broadcasts to s
    n = int(np.broadcast_to(mask, s).sum())
    return Sample((array(draw, s, dt), array(draw, (n + draw(st.integers(0, 2)),), dt)),
                  {"mask": mask})


def np_masked_scatter(x, source, mask):
    out = x.copy()
    m = np.broadcast_to(mask, x.shape)
    out[m] = source[:m.sum()]
    return out


def _flat_sample(accumulate_ok):
    def build(draw, dt):
        s = shape(draw, 0, 3, empty=False)
        n = int(np.prod(s))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        ishape = shape(draw, 0, 2)
        acc = accumulate_ok and draw(st.booleans())
        index = (rng.integers(-n, n, size=ishape) if acc else
                 rng.permutation(np.arange(-n, 0) if draw(st.booleans()) else np.arange(n))[
                     :int(np.prod(ishape))].reshape(-1)).astype(np.int64)
        kw = {"index": index}
        if accumulate_ok:
            kw["accumulate"] = acc
        return Sample((array(draw, s, dt), array(draw, index.shape, dt)), kw)
    return family(build)


def np_put(x, source, index, accumulate=False):
    out = x.copy().reshape(-1)
    if accumulate:
        np.add.at(out, index.reshape(-1), source.reshape(-1))
    else:
        out[index.reshape(-1)] = source.reshape(-1)
    return out.reshape(x.shape)


def _take_along_sample(draw, dt):
    s = shape(draw, 1, 3, empty=False)
    dim = draw(st.integers(-len(s), len(s) - 1))
    d = dim % len(s)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ishape = tuple(draw(st.integers(0, 3)) if i == d else draw(st.sampled_from((1, n)))
                   for i, n in enumerate(s))
    return Sample((array(draw, s, dt),), {"indices": rng.integers(0, s[d], size=ishape)
                                          .astype(np.int64), "dim": dim})


def np_take_along(x, indices, dim):
    lead = np.broadcast_shapes(*[tuple(1 if i == dim % x.ndim else n for i, n in enumerate(a))
                                 for a in (x.shape, indices.shape)])
    xs = np.broadcast_to(x, tuple(n if i != dim % x.ndim else x.shape[i]
                                  for i, n in enumerate(lead)))
    ix = np.broadcast_to(indices, tuple(n if i != dim % x.ndim else indices.shape[i]
                                        for i, n in enumerate(lead)))
    return np.take_along_axis(xs, ix, dim)


def _index_put_sample(draw, dt):
    s = shape(draw, 1, 3, empty=False)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = draw(st.integers(1, len(s)))
    n = draw(st.integers(0, 4))
    acc = draw(st.booleans())
    if acc:
        idx = tuple(rng.integers(0, s[i], size=n) for i in range(k))
    else:                                       # distinct positions: a defined result
        flat = rng.permutation(int(np.prod(s[:k])))[:min(n, int(np.prod(s[:k])))]
        idx = np.unravel_index(flat, s[:k])
    vshape = (len(idx[0]),) + s[k:]
    return Sample((array(draw, s, dt), array(draw, vshape[draw(st.integers(0, 1)):] if
                                                draw(st.booleans()) else vshape, dt)),
                  {"indices": tuple(np.asarray(i, np.int64) for i in idx), "accumulate": acc})


def np_index_put(x, values, indices, accumulate):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), np.broadcast_to(values, out[tuple(indices)].shape))
    else:
        out[tuple(indices)] = values
    return out


def _tup(kw):
    """index_put's indices as tensors on either side (the table turns only top-level arrays
    into tensors)."""
    return kw


add(
    OpInfo("Tensor.masked_scatter", lambda x, s, mask: x.masked_scatter(mask, s),
           ref=np_masked_scatter, samples=family(_masked_scatter_sample), dtypes=NUMERIC),
    OpInfo("tgx.masked_scatter", lambda x, s, mask: tgx.masked_scatter(x, mask, s),
           torch_op=lambda x, s, mask: torch.masked_scatter(x, mask, s),
           ref=np_masked_scatter, samples=family(_masked_scatter_sample)),
    OpInfo("Tensor.masked_scatter_", lambda x, s, mask: x.clone().masked_scatter_(mask, s),
           ref=np_masked_scatter, samples=family(_masked_scatter_sample)),
    OpInfo("Tensor.take", lambda x, s, index: x.take(index), ref=lambda x, s, index:
           x.reshape(-1)[index], samples=_flat_sample(False), dtypes=NUMERIC),
    OpInfo("tgx.take", lambda x, s, index: tgx.take(x, index),
           torch_op=lambda x, s, index: torch.take(x, index), ref=lambda x, s, index:
           x.reshape(-1)[index], samples=_flat_sample(False)),
    OpInfo("Tensor.put", lambda x, s, index, accumulate: x.put(index, s, accumulate),
           ref=np_put, samples=_flat_sample(True), dtypes=NUMERIC),
    OpInfo("tgx.put", lambda x, s, index, accumulate: tgx.put(x, index, s, accumulate),
           torch_op=lambda x, s, index, accumulate: torch.put(x, index, s, accumulate),
           ref=np_put, samples=_flat_sample(True)),
    OpInfo("Tensor.put_", lambda x, s, index, accumulate: x.clone().put_(index, s, accumulate),
           ref=np_put, samples=_flat_sample(True)),
    OpInfo("Tensor.take_along_dim", lambda x, indices, dim: x.take_along_dim(indices, dim),
           ref=np_take_along, samples=family(_take_along_sample), dtypes=NUMERIC),
    OpInfo("tgx.take_along_dim", lambda x, indices, dim: tgx.take_along_dim(x, indices, dim),
           torch_op=lambda x, indices, dim: torch.take_along_dim(x, indices, dim),
           ref=np_take_along, samples=family(_take_along_sample)),
    OpInfo("Tensor.take_along_dim[flat]", lambda x, s, index: x.take_along_dim(index % max(
        x.numel(), 1)), ref=lambda x, s, index: x.reshape(-1)[index.reshape(-1)],
           samples=_flat_sample(False), api=("Tensor.take_along_dim",)),
    OpInfo("Tensor.index_put", lambda x, v, indices, accumulate: x.index_put(
        tuple(tgx.tensor(i) for i in indices) if isinstance(x, tgx.Tensor) else
        tuple(torch.tensor(i) for i in indices), v, accumulate),
           ref=np_index_put, samples=family(_index_put_sample)),
    OpInfo("tgx.index_put", lambda x, v, indices, accumulate: tgx.index_put(
        x, tuple(tgx.tensor(i) for i in indices), v, accumulate),
           torch_op=lambda x, v, indices, accumulate: torch.index_put(
               x, tuple(torch.tensor(i) for i in indices), v, accumulate),
           ref=np_index_put, samples=family(_index_put_sample)),
    OpInfo("Tensor.index_put_", lambda x, v, indices, accumulate: x.clone().index_put_(
        tuple(tgx.tensor(i) for i in indices) if isinstance(x, tgx.Tensor) else
        tuple(torch.tensor(i) for i in indices), v, accumulate),
           ref=np_index_put, samples=family(_index_put_sample)),
    OpInfo("tgx.index_fill", lambda x, dim, index: tgx.index_fill(x, dim, index, -1.5),
           torch_op=lambda x, dim, index: torch.index_fill(x, dim, index, -1.5),
           samples=family(lambda d, dt: Sample((array(d, (3, 4), dt),), {
               "dim": d(st.sampled_from((0, 1, -1))), "index": np.array([0, 2])}))),
)


# --- order statistics, counting (tensor/stats_methods.py) -----------------------------------
def _opt_dim_kw(draw, s):
    return {"dim": draw(st.integers(-max(len(s), 1), max(len(s), 1) - 1)),
            "keepdim": draw(st.booleans())}


def _ties(low=-3, high=3):
    """int-valued floats (many ties, where torch's choice of index shows)."""
    def build(draw, dt):
        s = shape(draw, 0, 3, empty=False)
        x = np.round(array(draw, s, F64, low=low, high=high, layout=False)).astype(dt)
        kw = _opt_dim_kw(draw, s)
        return Sample((x,), kw)
    return family(build)


def np_lower_median(x, dim, keepdim):
    xs = np.sort(x.reshape(x.shape or (1,)), axis=dim)
    n = xs.shape[dim]
    v = np.take(xs, (n - 1) // 2, axis=dim)
    v = np.where(np.isnan(x.reshape(x.shape or (1,))).any(dim), np.nan, v) if x.dtype.kind == "f" \
        else v
    return (np.expand_dims(v, dim) if keepdim and x.ndim else v.reshape(v.shape if x.ndim else
                                                                        ())),


_TIED = ("among equal values torch's kernel picks the index (unspecified): values only here; "
          "indices and gradients are held to torch on untied samples")


def _untied_dim(draw, dt):
    s = shape(draw, 0, 3, empty=False)
    return Sample((array(draw, s, dt),), _opt_dim_kw(draw, s))


for _m in ("median", "nanmedian"):
    add(OpInfo(f"Tensor.{_m}[dim]", lambda x, dim, keepdim, m=_m: getattr(x, m)(dim, keepdim),
               samples=family(_untied_dim), api=(f"Tensor.{_m}",),
               fixed=(S([[3.0, 1.0, 2.0, np.nan], [4.0, 5.0, 1.0, 0.5]], dim=1, keepdim=False,
                        desc="nan", only=("torch",)),)),
        OpInfo(f"Tensor.{_m}[ties]", lambda x, dim, keepdim, m=_m: getattr(x, m)(
            dim, keepdim).values, samples=_ties(), dtypes=NUMERIC, grad=False,
               grad_reason=_TIED, api=(f"Tensor.{_m}",)),
        OpInfo(f"tgx.{_m}", lambda x, m=_m: getattr(tgx, m)(x),
               torch_op=lambda x, m=_m: getattr(torch, m)(x), samples=unary()))
add(
    OpInfo("Tensor.median", lambda x: x.median(), ref=lambda x: np_lower_median(
        x.reshape(-1), 0, False)[0], samples=unary(empty=False), dtypes=NUMERIC),
    OpInfo("Tensor.kthvalue", lambda x, dim, keepdim: x.kthvalue(1 + (x.shape[dim] > 1) if x.ndim
                                                                 else 1, dim, keepdim),
           samples=family(_untied_dim)),
    OpInfo("Tensor.kthvalue[ties]", lambda x, dim, keepdim: x.kthvalue(
        1 + (x.shape[dim] > 1) if x.ndim else 1, dim, keepdim).values, samples=_ties(),
           dtypes=NUMERIC, grad=False, grad_reason=_TIED, api=("Tensor.kthvalue",)),
    OpInfo("tgx.kthvalue", lambda x, dim, keepdim: tgx.kthvalue(x, 1, dim, keepdim),
           torch_op=lambda x, dim, keepdim: torch.kthvalue(x, 1, dim, keepdim),
           samples=family(_untied_dim)),
    OpInfo("Tensor.mode", lambda x, dim, keepdim: x.mode(dim, keepdim), samples=family(
        _untied_dim), fixed=(S([1.0, 2.0, 2.0, 3.0, 3.0], dim=0, keepdim=False,
                               desc="two_modes", only=("torch",)),)),
    OpInfo("Tensor.mode[ties]", lambda x, dim, keepdim: x.mode(dim, keepdim).values,
           samples=_ties(), dtypes=NUMERIC, grad=False, grad_reason=_TIED,
           api=("Tensor.mode",)),
    OpInfo("tgx.mode", lambda x, dim, keepdim: tgx.mode(x, dim, keepdim),
           torch_op=lambda x, dim, keepdim: torch.mode(x, dim, keepdim),
           samples=family(_untied_dim)),
    OpInfo("Tensor.msort", lambda x: x.msort(), ref=lambda x: np.sort(x, 0) if x.ndim else x,
           samples=unary(), dtypes=NUMERIC),
    OpInfo("tgx.msort", lambda x: tgx.msort(x), torch_op=lambda x: torch.msort(x),
           samples=unary()),
)


def _quantile_sample(nan):
    def build(draw, dt):
        s = shape(draw, 0, 3, empty=False)
        x = array(draw, s, dt)
        if nan and x.size and draw(st.booleans()):
            x = x.copy()
            x.reshape(-1)[draw(st.integers(0, x.size - 1))] = np.nan
        dim = draw(st.sampled_from((None,) + tuple(range(-max(len(s), 1), max(len(s), 1)))))
        q = draw(st.sampled_from((0.0, 0.3, 0.5, 1.0, "vector")))
        kw = {"dim": dim, "keepdim": draw(st.booleans()),
              "interpolation": draw(st.sampled_from(("linear", "lower", "higher", "nearest",
                                                     "midpoint")))}
        kw["q"] = np.array([0.1, 0.5, 0.75], dt) if q == "vector" else q
        return Sample((x,), kw)
    return family(build)


for _m, _nan in (("quantile", False), ("nanquantile", True)):
    add(OpInfo(f"Tensor.{_m}", lambda x, q, dim, keepdim, interpolation, m=_m: getattr(x, m)(
        q, dim, keepdim, interpolation=interpolation), samples=_quantile_sample(_nan),
               gradcheck=not _nan),
        OpInfo(f"tgx.{_m}", lambda x, q, dim, keepdim, interpolation, m=_m: getattr(tgx, m)(
            x, q, dim, keepdim, interpolation=interpolation),
               torch_op=lambda x, q, dim, keepdim, interpolation, m=_m: getattr(torch, m)(
                   x, q, dim, keepdim, interpolation=interpolation),
               samples=_quantile_sample(_nan), gradcheck=not _nan))


def _nan_sample(draw, dt):
    """One NaN in a tensor whose every dim has 2+ entries (so no slice is all NaN, where
    torch's nanmean gradient is NaN and ours 0)."""
    s = shape(draw, 1, 3, min_side=2)
    x = array(draw, s, dt).copy()
    if x.size and dt.kind == "f":
        x.reshape(-1)[draw(st.integers(0, x.size - 1))] = np.nan
    kw = {}
    if draw(st.booleans()) and s:
        kw = {"dim": draw(st.integers(-len(s), len(s) - 1)), "keepdim": draw(st.booleans())}
    return Sample((x,), kw)


add(
    OpInfo("Tensor.nansum", lambda x, **kw: x.nansum(**kw), ref=lambda x, **kw: np.nansum(
        x, axis=kw.get("dim"), keepdims=kw.get("keepdim", False)), samples=family(_nan_sample),
           dtypes=(F64, F32, I64), gradcheck=False),
    OpInfo("tgx.nansum", lambda x, **kw: tgx.nansum(x, **kw), torch_op=lambda x, **kw:
           torch.nansum(x, **kw), samples=family(_nan_sample), gradcheck=False),
    OpInfo("Tensor.nanmean", lambda x, **kw: x.nanmean(**kw), samples=family(_nan_sample),
           gradcheck=False),
    OpInfo("tgx.nanmean", lambda x, **kw: tgx.nanmean(x, **kw), torch_op=lambda x, **kw:
           torch.nanmean(x, **kw), samples=family(_nan_sample), gradcheck=False),
    OpInfo("Tensor.aminmax", lambda x, **kw: x.aminmax(**kw), samples=unary(
        empty=False, kw=lambda d, s: {"dim": d(st.integers(-len(s), len(s) - 1)), "keepdim":
                                      d(st.booleans())} if s else {}), dtypes=NUMERIC),
    OpInfo("tgx.aminmax", lambda x: tgx.aminmax(x), torch_op=lambda x: torch.aminmax(x),
           samples=unary(empty=False)),
    OpInfo("tgx.std_mean", lambda x, **kw: tgx.std_mean(x, **kw), torch_op=lambda x, **kw:
           torch.std_mean(x, **kw), samples=unary(min_dims=1, min_side=2, empty=False,
                                                   kw=lambda d, s: {"dim": d(st.integers(
                                                       -len(s), len(s) - 1)),
                                                                    "correction": d(
                                                                        st.sampled_from((0, 1)))
                                                                    })),
    OpInfo("tgx.var_mean", lambda x, **kw: tgx.var_mean(x, **kw), torch_op=lambda x, **kw:
           torch.var_mean(x, **kw), samples=unary(min_dims=1, min_side=2, empty=False,
                                                   kw=lambda d, s: {"dim": d(st.integers(
                                                       -len(s), len(s) - 1))})),
    OpInfo("Tensor.cov", lambda x, **kw: x.cov(**kw), ref=lambda x, correction=1: np.cov(
        x, ddof=correction), samples=unary(min_dims=1, max_dims=2, min_side=3, empty=False,
                                          kw=lambda d, s: {"correction": d(st.sampled_from(
                                              (0, 1)))})),
    OpInfo("tgx.cov", lambda x: tgx.cov(x), torch_op=lambda x: torch.cov(x),
           samples=unary(min_dims=2, max_dims=2, min_side=3, empty=False)),
    OpInfo("Tensor.corrcoef", lambda x: x.corrcoef(), ref=np.corrcoef,
           samples=unary(min_dims=2, max_dims=2, min_side=3, empty=False)),
    OpInfo("tgx.corrcoef", lambda x: tgx.corrcoef(x), torch_op=lambda x: torch.corrcoef(x),
           samples=unary(min_dims=2, max_dims=2, min_side=3, empty=False)),
)
_COUNT = "an integer result: counts and positions have no gradient"


def _count_sample(draw, dt):
    n = draw(st.integers(0, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return Sample((rng.integers(0, 5, size=n).astype(np.int64),),
                  {"minlength": draw(st.integers(0, 7))})


add(
    OpInfo("Tensor.bincount", lambda x, minlength: x.bincount(minlength=minlength),
           ref=lambda x, minlength: np.bincount(x, minlength=minlength),
           samples=family(_count_sample), dtypes=(I64,), grad=False, grad_reason=_COUNT),
    OpInfo("tgx.bincount", lambda x, minlength: tgx.bincount(x, minlength=minlength),
           torch_op=lambda x, minlength: torch.bincount(x, minlength=minlength),
           samples=family(_count_sample), dtypes=(I64,), grad=False, grad_reason=_COUNT),
    OpInfo("Tensor.histc", lambda x: x.histc(bins=4, min=-1, max=1.5), samples=unary(),
           grad=False, grad_reason=_COUNT),
    OpInfo("tgx.histc", lambda x: tgx.histc(x, bins=5), torch_op=lambda x: torch.histc(
        x, bins=5), samples=unary(empty=False), grad=False, grad_reason=_COUNT),
    OpInfo("Tensor.histogram", lambda x: x.histogram(4, range=(-2.0, 2.0)), samples=unary(
        min_dims=1, max_dims=1), dtypes=(F64, F32), grad=False, grad_reason=_COUNT),
    OpInfo("tgx.histogram", lambda x: tgx.histogram(x, 3), torch_op=lambda x: torch.histogram(
        x, 3), samples=unary(min_dims=1, max_dims=1, empty=False), grad=False,
           grad_reason=_COUNT),
    OpInfo("Tensor.unique", lambda x, dim, keepdim: x.unique(return_inverse=True,
                                                             return_counts=True),
           samples=_ties(), dtypes=(I64, F64, BOOL), grad=False, grad_reason=_COUNT),
    OpInfo("tgx.unique", lambda x, dim, keepdim: tgx.unique(x), torch_op=lambda x, dim, keepdim:
           torch.unique(x), samples=_ties(), dtypes=(I64,), grad=False, grad_reason=_COUNT),
    OpInfo("Tensor.unique[dim]", lambda x, dim, keepdim: x.unique(dim=dim) if x.ndim else
           x.unique(), samples=_ties(0, 1), dtypes=(I64,), grad=False, grad_reason=_COUNT,
           api=("Tensor.unique",)),
    OpInfo("Tensor.unique_consecutive", lambda x, dim, keepdim: x.unique_consecutive(
        return_inverse=True, return_counts=True), samples=_ties(0, 1), dtypes=(I64, F64),
           grad=False, grad_reason=_COUNT),
    OpInfo("tgx.unique_consecutive", lambda x, dim, keepdim: tgx.unique_consecutive(x),
           torch_op=lambda x, dim, keepdim: torch.unique_consecutive(x), samples=_ties(0, 1),
           dtypes=(I64,), grad=False, grad_reason=_COUNT),
    OpInfo("tgx.isin", lambda x: tgx.isin(x, x.flatten()[:1] if x.ndim else x),
           torch_op=lambda x: torch.isin(x, x.flatten()[:1] if x.ndim else x),
           samples=unary(), dtypes=(I64,), grad=False, grad_reason=_COUNT),
)


def _sorted_sample(draw, dt):
    n = draw(st.integers(0, 6))
    seq = np.sort(array(draw, (n,), dt, layout=False))
    if draw(st.booleans()) and n:
        seq = np.round(seq)
    vals = array(draw, shape(draw, 0, 2), dt)
    return Sample((seq, vals), {"right": draw(st.booleans())})


add(
    OpInfo("tgx.searchsorted", lambda s, v, right: tgx.searchsorted(s, v, right=right),
           torch_op=lambda s, v, right: torch.searchsorted(s, v, right=right),
           ref=lambda s, v, right: np.searchsorted(s, v, side="right" if right else "left"),
           samples=family(_sorted_sample), grad=False, grad_reason=_COUNT),
    OpInfo("tgx.bucketize", lambda s, v, right: tgx.bucketize(v, s, right=right),
           torch_op=lambda s, v, right: torch.bucketize(v, s, right=right),
           samples=family(_sorted_sample), grad=False, grad_reason=_COUNT),
)


# --- diagonals, blocks, grids, splits (tensor/matrix_methods.py, tensor/array_functions.py) --
def _two_d(min_side=1):
    return unary(min_dims=2, max_dims=2, min_side=min_side)


def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.ndim + 1
    L = (x.shape[-1] if x.ndim else 1) + abs(offset)
    out = np.zeros(x.shape[:-1] + (L, L), x.dtype)
    idx = np.arange(x.shape[-1] if x.ndim else 1)
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., r, c] = x.reshape(x.shape or (1,))
    return np.moveaxis(out, (-2, -1), (dim1 % n, dim2 % n))


def _split_kw(draw, s):
    d = draw(st.integers(-len(s), len(s) - 1))
    spec = draw(st.sampled_from((1, 2, 3, "list")))
    return {"dim": d, "spec": [1, 3] if spec == "list" else spec}


def _np_tensor_split(x, dim, spec):
    return tuple(np.array_split(x, spec, axis=dim))


def _two_vectors(draw, dt):
    return Sample((array(draw, (draw(st.integers(0, 3)),), dt),
                   array(draw, (draw(st.integers(0, 3)),), dt)))


def _cross_sample(draw, dt):
    sa, sb = broadcast_shapes(draw, 2, empty=False)
    n = max(len(sa), len(sb))                   # torch: one number of dims for both
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    return Sample((array(draw, sa + (3,), dt), array(draw, sb + (3,), dt)), {"dim": -1})


def _cdist_sample(draw, dt):
    b = draw(st.sampled_from(((), (2,))))
    p, r, m = (draw(st.integers(1, 3)) for _ in range(3))
    return Sample((array(draw, b + (p, m), dt), array(draw, b + (r, m), dt) + 3.0),
                  {"p": draw(st.sampled_from((1.0, 2.0, 3.0, float("inf"), 0.5)))})


def _tensordot_sample(draw, dt):
    k = draw(st.integers(0, 2))
    shared = tuple(draw(st.integers(1, 3)) for _ in range(k))
    a = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))) + shared
    b = shared + tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    return Sample((array(draw, a, dt), array(draw, b, dt)), {"dims": k})


def _vecs(n):
    def build(draw, dt):
        return Sample(tuple(array(draw, (draw(st.integers(1, 3)),), dt) for _ in range(n)))
    return family(build)


def _blocks(draw, dt):
    shapes = [draw(st.sampled_from(((), (2,), (1, 3), (2, 2), (0, 2)))) for _ in range(3)]
    return Sample(tuple(array(draw, s, dt) for s in shapes))


def _np_block_diag(*xs):
    mats = [np.atleast_2d(x) for x in xs]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)),
                   np.result_type(*xs))
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


add(
    OpInfo("Tensor.diag", _method("diag", 1), ref=lambda x: np.diag(x, 1), samples=unary(
        min_dims=1, max_dims=2), dtypes=NUMERIC),
    OpInfo("tgx.diag", lambda x: tgx.diag(x, -1), torch_op=lambda x: torch.diag(x, -1),
           ref=lambda x: np.diag(x, -1), samples=unary(min_dims=1, max_dims=2)),
    OpInfo("Tensor.diag_embed", _method("diag_embed", 1, 0, -1), ref=lambda x: _np_diag_embed(
        x, 1, 0, -1), samples=unary(min_dims=1, max_dims=2)),
    OpInfo("tgx.diag_embed", lambda x: tgx.diag_embed(x), torch_op=lambda x: torch.diag_embed(x),
           ref=_np_diag_embed, samples=unary(min_dims=1, max_dims=3)),
    OpInfo("Tensor.diagflat", _method("diagflat", -1), ref=lambda x: np.diagflat(x, -1),
           samples=unary(), dtypes=NUMERIC),
    OpInfo("tgx.diagflat", lambda x: tgx.diagflat(x), torch_op=lambda x: torch.diagflat(x),
           ref=np.diagflat, samples=unary()),
    OpInfo("Tensor.trace", _method("trace"), ref=np.trace, samples=_two_d(), dtypes=NUMERIC),
    OpInfo("Tensor.kron", _method("kron"), ref=np.kron, samples=binary(), dtypes=NUMERIC),
    OpInfo("tgx.kron", tgx.kron, torch_op=_torch_fn("kron"), ref=np.kron, samples=binary()),
    OpInfo("Tensor.cross", lambda a, b, dim: a.cross(b, dim=dim), ref=lambda a, b, dim:
           np.cross(a, b), samples=family(_cross_sample)),
    OpInfo("tgx.cross", lambda a, b, dim: tgx.cross(a, b, dim=dim), torch_op=lambda a, b, dim:
           torch.cross(a, b, dim=dim), samples=family(_cross_sample)),
    OpInfo("Tensor.dist", lambda a, b, p: a.dist(b, p), samples=family(lambda d, dt: Sample(
        (array(d, (3,), dt), array(d, (3,), dt) + 3.0), {"p": d(st.sampled_from(
            (1, 2, 3, float("inf"))))}))),
    OpInfo("tgx.dist", lambda a, b: tgx.dist(a, b), torch_op=lambda a, b: torch.dist(a, b),
           samples=binary(low_b=3, high_b=5)),
    OpInfo("Tensor.renorm", lambda x: x.renorm(2, 0, 1.0), samples=unary(
        min_dims=2, max_dims=3, empty=False)),
    OpInfo("tgx.renorm", lambda x: tgx.renorm(x, 1, -1, 0.8), torch_op=lambda x: torch.renorm(
        x, 1, -1, 0.8), samples=unary(min_dims=2, max_dims=3, empty=False, avoid=(0,))),
    OpInfo("Tensor.renorm_", lambda x: (x * 1).renorm_(3, 1, 1.5), samples=unary(
        min_dims=2, max_dims=3, empty=False)),
    OpInfo("Tensor.rot90", lambda x, k: x.rot90(k, (0, -1)), ref=lambda x, k: np.rot90(
        x, k, (0, -1)), samples=unary(min_dims=2, kw=lambda d, s: {"k": d(st.integers(-2, 5))}),
           dtypes=ALL),
    OpInfo("tgx.rot90", lambda x: tgx.rot90(x), torch_op=lambda x: torch.rot90(x),
           ref=np.rot90, samples=unary(min_dims=2)),
    OpInfo("Tensor.fliplr", _method("fliplr"), ref=np.fliplr, samples=unary(min_dims=2)),
    OpInfo("tgx.fliplr", tgx.fliplr, torch_op=_torch_fn("fliplr"), ref=np.fliplr,
           samples=unary(min_dims=2)),
    OpInfo("Tensor.flipud", _method("flipud"), ref=np.flipud, samples=unary(min_dims=1)),
    OpInfo("tgx.flipud", tgx.flipud, torch_op=_torch_fn("flipud"), ref=np.flipud,
           samples=unary(min_dims=1)),
    OpInfo("Tensor.diff", lambda x, n, dim: x.diff(n, dim), ref=lambda x, n, dim: np.diff(
        x, n, dim), samples=unary(min_dims=1, kw=lambda d, s: {"n": d(st.integers(0, 2)),
                                                               "dim": d(st.integers(
                                                                   -len(s), len(s) - 1))}),
           dtypes=ALL),
    OpInfo("tgx.diff", lambda x, p: tgx.diff(x, prepend=p, append=p), torch_op=lambda x, p:
           torch.diff(x, prepend=p, append=p), ref=lambda x, p: np.diff(x, prepend=p, append=p),
           samples=family(lambda d, dt: Sample((array(d, (d(st.integers(0, 4)),), dt),
                                                array(d, (2,), dt))))),
    OpInfo("Tensor.tensor_split", lambda x, dim, spec: x.tensor_split(spec, dim),
           ref=_np_tensor_split, samples=unary(min_dims=1, kw=_split_kw)),
    OpInfo("tgx.tensor_split", lambda x, dim, spec: tgx.tensor_split(x, spec, dim),
           torch_op=lambda x, dim, spec: torch.tensor_split(x, spec, dim),
           ref=_np_tensor_split, samples=unary(min_dims=1, kw=_split_kw)),
    OpInfo("Tensor.hsplit", lambda x: x.hsplit([1]), ref=lambda x: tuple(np.hsplit(x, [1])),
           samples=unary(min_dims=1)),
    OpInfo("tgx.hsplit", lambda x: tgx.hsplit(x, 1), torch_op=lambda x: torch.hsplit(x, 1),
           samples=unary(min_dims=1)),
    OpInfo("Tensor.vsplit", lambda x: x.vsplit([1, 2]), ref=lambda x: tuple(np.vsplit(
        x, [1, 2])), samples=unary(min_dims=2)),
    OpInfo("tgx.vsplit", lambda x: tgx.vsplit(x, 1), torch_op=lambda x: torch.vsplit(x, 1),
           samples=unary(min_dims=2)),
    OpInfo("Tensor.dsplit", lambda x: x.dsplit([1]), ref=lambda x: tuple(np.dsplit(x, [1])),
           samples=unary(min_dims=3)),
    OpInfo("tgx.dsplit", lambda x: tgx.dsplit(x, 1), torch_op=lambda x: torch.dsplit(x, 1),
           samples=unary(min_dims=3)),
    OpInfo("Tensor.fill_diagonal_", lambda x: (x * 1).fill_diagonal_(2.5), samples=_two_d()),
    OpInfo("Tensor.fill_diagonal_[wrap]", lambda x: (x * 1).fill_diagonal_(-1.0, wrap=True),
           samples=family(lambda d, dt: Sample((array(d, (7, 2), dt),))),
           api=("Tensor.fill_diagonal_",)),
    OpInfo("Tensor.sum_to_size", lambda x: x.sum_to_size((1,) * max(x.ndim - 1, 0) + (
        x.shape[-1],) if x.ndim else ()), samples=unary(), dtypes=NUMERIC),
    OpInfo("Tensor.gcd", _method("gcd"), ref=np.gcd, samples=binary(low=-9, high=9),
           dtypes=(I64,), grad=False, grad_reason=_NOGRAD),
    OpInfo("tgx.gcd", tgx.gcd, torch_op=_torch_fn("gcd"), ref=np.gcd, samples=binary(
        low=-9, high=9), dtypes=(I64,), grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.lcm", _method("lcm"), ref=np.lcm, samples=binary(low=-9, high=9),
           dtypes=(I64,), grad=False, grad_reason=_NOGRAD),
    OpInfo("tgx.lcm", tgx.lcm, torch_op=_torch_fn("lcm"), ref=np.lcm, samples=binary(
        low=-9, high=9), dtypes=(I64,), grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.gcd_", lambda a, b: a.clone().gcd_(b), samples=family(lambda d, dt: Sample(
        (array(d, (2, 3), dt, -9, 9), array(d, (3,), dt, -9, 9)))), dtypes=(I64,), grad=False,
           grad_reason=_NOGRAD),
    OpInfo("Tensor.lcm_", lambda a, b: a.clone().lcm_(b), samples=family(lambda d, dt: Sample(
        (array(d, (2, 3), dt, -9, 9), array(d, (3,), dt, -9, 9)))), dtypes=(I64,), grad=False,
           grad_reason=_NOGRAD),
    # the functions of several tensors
    OpInfo("tgx.block_diag", tgx.block_diag, torch_op=_torch_fn("block_diag"),
           ref=_np_block_diag, samples=family(_blocks)),
    OpInfo("tgx.cartesian_prod", tgx.cartesian_prod, torch_op=_torch_fn("cartesian_prod"),
           samples=_vecs(3)),
    OpInfo("tgx.combinations", lambda x, r, w: tgx.combinations(x, r, w),
           torch_op=lambda x, r, w: torch.combinations(x, r, w), samples=unary(
               min_dims=1, max_dims=1, kw=lambda d, s: {"r": d(st.integers(0, 3)),
                                                        "w": d(st.booleans())})),
    OpInfo("tgx.meshgrid", lambda a, b, indexing: tgx.meshgrid(a, b, indexing=indexing),
           torch_op=lambda a, b, indexing: torch.meshgrid(a, b, indexing=indexing),
           samples=family(lambda d, dt: Sample(_two_vectors(d, dt).inputs, {
               "indexing": d(st.sampled_from(("ij", "xy")))}))),
    OpInfo("tgx.broadcast_tensors", tgx.broadcast_tensors, torch_op=_torch_fn(
        "broadcast_tensors"), samples=binary(), dtypes=ALL),
    OpInfo("tgx.atleast_1d", tgx.atleast_1d, torch_op=_torch_fn("atleast_1d"), samples=unary()),
    OpInfo("tgx.atleast_2d", tgx.atleast_2d, torch_op=_torch_fn("atleast_2d"), samples=unary()),
    OpInfo("tgx.atleast_3d", tgx.atleast_3d, torch_op=_torch_fn("atleast_3d"), samples=unary()),
    OpInfo("tgx.hstack", lambda a, b: tgx.hstack([a, b]), torch_op=lambda a, b: torch.hstack(
        [a, b]), samples=family(lambda d, dt: Sample((array(d, (2, 1), dt),
                                                      array(d, (2, 3), dt))))),
    OpInfo("tgx.vstack", lambda a, b: tgx.vstack([a, b]), torch_op=lambda a, b: torch.vstack(
        [a, b]), samples=family(lambda d, dt: Sample((array(d, (3,), dt),
                                                      array(d, (2, 3), dt)))),
           api=("tgx.vstack", "tgx.row_stack")),
    OpInfo("tgx.dstack", lambda a, b: tgx.dstack([a, b]), torch_op=lambda a, b: torch.dstack(
        [a, b]), samples=family(lambda d, dt: Sample((array(d, (2, 3), dt),
                                                      array(d, (2, 3, 2), dt))))),
    OpInfo("tgx.column_stack", lambda a, b: tgx.column_stack([a, b]),
           torch_op=lambda a, b: torch.column_stack([a, b]), samples=family(
               lambda d, dt: Sample((array(d, (2,), dt), array(d, (2, 3), dt))))),
    OpInfo("tgx.concat", lambda a, b: tgx.concat([a, b], 1), torch_op=lambda a, b: torch.concat(
        [a, b], 1), samples=family(lambda d, dt: Sample((array(d, (2, 1), dt),
                                                         array(d, (2, 2), dt))))),
    OpInfo("tgx.tril_indices", lambda r, c, o: tgx.tril_indices(r, c, o),
           torch_op=lambda r, c, o: torch.tril_indices(r, c, o), samples=none(
               st.fixed_dictionaries({"r": st.integers(0, 4), "c": st.integers(0, 4),
                                      "o": st.integers(-2, 2)})), grad=False,
           grad_reason=_NOGRAD),
    OpInfo("tgx.triu_indices", lambda r, c, o: tgx.triu_indices(r, c, o),
           torch_op=lambda r, c, o: torch.triu_indices(r, c, o), samples=none(
               st.fixed_dictionaries({"r": st.integers(0, 4), "c": st.integers(0, 4),
                                      "o": st.integers(-2, 2)})), grad=False,
           grad_reason=_NOGRAD),
    # torch's own backward of vander fails for some inputs (an in-place error inside it):
    # torch's values here, the gradient against finite differences in the next entry
    OpInfo("tgx.vander", lambda x, n, inc: tgx.vander(x, n, inc), torch_op=lambda x, n, inc:
           torch.vander(x, n, inc), samples=unary(min_dims=1, max_dims=1, kw=lambda d, s: {
               "n": d(st.sampled_from((None, 0, 2, 4))), "inc": d(st.booleans())}),
           dtypes=NUMERIC, grad=False, grad_reason="torch's backward of vander fails"),
    OpInfo("tgx.vander[grad]", lambda x, n, inc: tgx.vander(x, n, inc), torch_op=None,
           torch_reason="torch's backward of vander fails for some inputs",
           samples=unary(min_dims=1, max_dims=1, kw=lambda d, s: {
               "n": d(st.sampled_from((None, 0, 2, 4))), "inc": d(st.booleans())}),
           api=("tgx.vander",)),
    OpInfo("tgx.trapezoid", lambda y, x: tgx.trapezoid(y, x), torch_op=lambda y, x:
           torch.trapezoid(y, x), samples=family(lambda d, dt: Sample(
               (array(d, (2, 4), dt), np.sort(array(d, (4,), dt)))))),
    OpInfo("tgx.trapz", lambda y: tgx.trapz(y, dx=0.5), torch_op=lambda y: torch.trapz(
        y, dx=0.5), samples=unary(min_dims=1, empty=False)),
    OpInfo("tgx.cumulative_trapezoid", lambda y: tgx.cumulative_trapezoid(y, dim=0),
           torch_op=lambda y: torch.cumulative_trapezoid(y, dim=0), samples=unary(min_dims=1)),
    OpInfo("tgx.tensordot", lambda a, b, dims: tgx.tensordot(a, b, dims),
           torch_op=lambda a, b, dims: torch.tensordot(a, b, dims),
           ref=lambda a, b, dims: np.tensordot(a, b, dims), samples=family(_tensordot_sample)),
    OpInfo("tgx.chain_matmul", lambda a, b: tgx.chain_matmul(a, b.t(), a),
           torch_op=lambda a, b: torch.chain_matmul(a, b.t(), a), samples=family(
               lambda d, dt: Sample((array(d, (2, 2), dt), array(d, (2, 2), dt))))),
    OpInfo("tgx.cdist", lambda a, b, p: tgx.cdist(a, b, p), torch_op=lambda a, b, p:
           torch.cdist(a, b, p), samples=family(_cdist_sample)),
    OpInfo("tgx.pdist", lambda x: tgx.pdist(x), torch_op=lambda x: torch.pdist(x),
           samples=family(lambda d, dt: Sample((np.arange(6.0).reshape(3, 2).astype(dt) ** 2 +
                                                array(d, (3, 2), dt, 0, 0.5),)))),
    OpInfo("tgx.unravel_index", lambda i: tgx.unravel_index(i, (3, 4)),
           torch_op=lambda i: torch.unravel_index(i, (3, 4)), samples=unary(low=0, high=11),
           dtypes=(I64,), grad=False, grad_reason=_NOGRAD),
)
NOT_OPS |= {"tgx.broadcast_shapes"}
