"""The op-info table: one entry per public op, checked against numpy, torch and gradcheck.

tests/ops/test_opinfo.py runs three checks on every entry of OPS, over hypothesis-drawn samples
(0-d tensors, size-0 dims, broadcasting pairs, negative dims, transposed and strided inputs,
int/bool inputs where the op takes them):

    numpy      forward values vs `ref` (when the entry has one)
    torch      forward values, shape and result dtype, and the gradient of every float input,
               vs `torch_op` (skipped when torch is not installed)
    gradcheck  tgx.gradcheck of every float input, in float64 (when `grad` is True)

and runs the same checks on each entry's `fixed` samples: hand-picked edge cases, among them
the known discrepancies with torch, each marked `xfail=defect(CLASS, "repro", checks)` so the
suite stays green and turns red (strict xfail) when the engine is fixed.

Adding an op = adding one entry to OPS:

    OpInfo("Tensor.exp",                       # "Tensor.x", "tgx.x" or "F.x" (+ "[variant]")
           op=lambda x: x.exp(),               # tinygradx: op(*inputs, **kwargs)
           torch_op=SAME,                      # or a torch callable, or None + torch_reason
           ref=np.exp,                         # numpy: ref(*arrays, **kwargs), or None
           samples=unary(low=-2, high=2),      # a sample family (below) or your own
           dtypes=FLOATS)                      # dtypes the random samples are drawn in

A Sample is (inputs, kwargs): `inputs` are numpy arrays handed to the op as Tensors (float
ones require grad), `kwargs` are passed as they are, except numpy arrays, which become
Tensors / torch tensors without grad (ids, targets, masks). The coverage test in
test_opinfo.py fails when docs/api.md lists an op that no entry covers (`api=` names what an
entry covers when its name is not enough, e.g. the operator `+`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor
from tinygradx.gradcheck.testing import matmul_shapes

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch check is skipped; the table still builds
    torch = TF = None

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
I64, I32, BOOL = np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.bool_)
FLOATS = (F64, F32)
NUMERIC = (F64, F32, I64, I32)
ALL = (F64, F32, I64, I32, BOOL)
SAME = "same"          # torch_op=SAME: the tinygradx lambda runs on torch tensors as it is

# ------------------------------------------------------------------------------------------
# defect classes: every xfail names one (the work order for the engine is grouped by them)
# ------------------------------------------------------------------------------------------
DTYPE_INT = "int/bool promotion"          # int/bool inputs: wrong result dtype or a crash
DTYPE_MIXED = "mixed-dtype promotion"     # float32 with int64 tensors gives float64
INDEXING = "advanced indexing"            # numpy's rules where torch's differ
GRAD_EDGE = "gradient at an edge"         # NaN/inf/crash in backward where torch is finite
EMPTY = "size-0 / degenerate input"       # crash on an empty reduction torch allows
SEMANTICS = "semantics differ from torch"  # a different answer on valid input


def defect(cls, repro, checks=("torch",)):
    """xfail=defect(...): the sample fails these checks because of a known engine defect."""
    return {c: f"{cls}: {repro}" for c in checks}


@dataclass
class Sample:
    inputs: tuple                      # numpy arrays -> Tensors (float ones require grad)
    kwargs: dict = field(default_factory=dict)
    desc: str = ""                     # a name for fixed samples (the pytest id)
    xfail: dict = field(default_factory=dict)   # check -> reason (fixed samples only)
    only: tuple = ()                   # fixed samples: run only these checks (e.g. a
                                       # singular point where finite differences mean nothing)


@dataclass
class OpInfo:
    name: str
    op: Callable
    torch_op: Callable | str | None = SAME
    torch_reason: str = ""             # why torch_op is None
    ref: Callable | None = None
    samples: Callable = None           # samples(dtypes) -> strategy of Sample
    dtypes: tuple = FLOATS             # dtypes of the random samples (gradcheck: float64)
    grad: bool = True                  # float inputs are differentiable
    grad_reason: str = ""              # why not
    gradcheck: bool = True             # run tgx.gradcheck (needs float64 outputs)
    values: bool = True                # False: random output, compare only shape and dtype
    atol: float = 1e-9                 # forward and gradient tolerance in float64
    rtol: float = 1e-7
    atol32: float = 1e-5               # in float32
    rtol32: float = 1e-4
    grad_atol: float = 1e-5            # gradcheck
    grad_rtol: float = 1e-3
    fixed: tuple = ()
    api: tuple = ()                    # the api.md names covered (default: the name itself)
    # kink(sample) -> True where the first derivative jumps (maximum's ties, |x - target| = 0
    # for l1): the second derivative does not exist there, so gradgradcheck skips the sample
    kink: Callable | None = None

    def covers(self):
        return self.api or (self.name.split("[")[0],)

    def torch_fn(self):
        return self.op if self.torch_op == SAME else self.torch_op


# ------------------------------------------------------------------------------------------
# sample building blocks
# ------------------------------------------------------------------------------------------

def _values(rng, shape, dtype, low, high, avoid, margin=0.1):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo, hi = math.ceil(low), math.floor(high)
        x = rng.integers(lo, max(hi, lo) + 1, size=shape)
        for k in avoid:
            x = np.where(x == k, k + 1 if k + 1 <= hi else k - 1, x)
        return x.astype(dtype)
    x = rng.uniform(low, high, size=shape)
    for k in avoid:  # pushed at least `margin` away from each kink
        near = np.abs(x - k) < margin
        x = np.where(near, k + np.where(x >= k, margin, -margin), x)
    return x.astype(dtype)


def array(draw, shape, dtype=F64, low=-2.0, high=2.0, avoid=(), layout=True):
    """A numpy array of `shape`: C-contiguous, a transposed view, or a strided slice."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lay = draw(st.sampled_from(("c", "T", "strided"))) if layout else "c"
    shape = tuple(shape)
    if lay == "T" and len(shape) >= 2:
        return _values(rng, shape[::-1], dtype, low, high, avoid).T
    if lay == "strided" and len(shape) >= 1:
        wide = shape[:-1] + (2 * shape[-1],)
        return _values(rng, wide, dtype, low, high, avoid)[..., ::2]
    return _values(rng, shape, dtype, low, high, avoid)


def shape(draw, min_dims=0, max_dims=3, min_side=1, max_side=4, empty=True):
    """A shape; one time in six a dim is 0 (when `empty`)."""
    s = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                              max_side=max_side))
    if empty and s and draw(st.integers(0, 5)) == 0:
        i = draw(st.integers(0, len(s) - 1))
        s = s[:i] + (0,) + s[i + 1:]
    return tuple(s)


def dims(draw, ndim, none=True, tuples=True):
    """None, an int (negative too) or a tuple of distinct dims for a reduction."""
    n = max(ndim, 1)
    kinds = (["none"] if none else []) + ["int"] + (["tuple"] if tuples and ndim else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


def broadcast_shapes(draw, n=2, max_dims=3, empty=True):
    """n shapes that broadcast together; one time in six the result has a size-0 dim."""
    r = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims,
                                               min_side=1, max_side=4))
    shapes = [list(s) for s in r.input_shapes]
    out = r.result_shape
    if empty and out and draw(st.integers(0, 5)) == 0:
        ax = draw(st.integers(1, len(out)))
        hit = [s for s in shapes if len(s) >= ax and s[-ax] != 1] or \
              [s for s in shapes if len(s) >= ax][:1]
        for s in hit:
            s[-ax] = 0
    return [tuple(s) for s in shapes]


def family(build):
    """Turn build(draw, dtype) -> Sample into samples(dtypes) -> strategy."""
    def samples(dtypes):
        @st.composite
        def strat(draw):
            return build(draw, draw(st.sampled_from(dtypes)))
        return strat()
    return samples


def unary(low=-2.0, high=2.0, avoid=(), kw=None, min_dims=0, max_dims=3, empty=True,
          min_side=1):
    """One input of any shape; kw(draw, shape) -> kwargs."""
    def build(draw, dt):
        s = shape(draw, min_dims, max_dims, min_side=min_side, empty=empty)
        x = array(draw, s, dt, low, high, avoid)
        return Sample((x,), kw(draw, s) if kw else {})
    return family(build)


def binary(low=-2.0, high=2.0, avoid=(), low_b=None, high_b=None, avoid_b=None):
    """Two inputs whose shapes broadcast (size-0 dims and 0-d included)."""
    def build(draw, dt):
        sa, sb = broadcast_shapes(draw, 2)
        a = array(draw, sa, dt, low, high, avoid)
        b = array(draw, sb, dt, low if low_b is None else low_b,
                  high if high_b is None else high_b, avoid if avoid_b is None else avoid_b)
        return Sample((a, b))
    return family(build)


def scalar_operand(values, low=-2.0, high=2.0, avoid=()):
    """One tensor and a Python scalar `s` (kwargs)."""
    def build(draw, dt):
        s = shape(draw)
        return Sample((array(draw, s, dt, low, high, avoid),), {"s": draw(st.sampled_from(values))})
    return family(build)


def none(kwargs):
    """No tensor inputs: constructors; kwargs drawn from a strategy."""
    def samples(dtypes):
        return kwargs.map(lambda kw: Sample((), kw))
    return samples


def S(*inputs, desc, xfail=None, only=(), **kwargs):
    """A fixed sample: numpy inputs (lists become arrays), kwargs, an id, known defects."""
    return Sample(tuple(np.asarray(a) for a in inputs), kwargs, desc, xfail or {}, only)


def _f64(*shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


_ints = np.arange(6).reshape(2, 3)


# ------------------------------------------------------------------------------------------
# numpy references
# ------------------------------------------------------------------------------------------
_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_gelu(x, approximate="none"):
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _np_erf(x / math.sqrt(2)))


def np_softmax(x, dim=-1):
    dim = _ax(dim, x)
    e = np.exp(x - x.max(axis=dim, keepdims=True)) if x.size else x
    return e / e.sum(axis=dim, keepdims=True) if x.size else x


def np_log_softmax(x, dim=-1):
    dim = _ax(dim, x)
    if not x.size:
        return x
    s = x - x.max(axis=dim, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=dim, keepdims=True))


def np_logsumexp(x, dim, keepdim=False):
    dim = _ax(dim, x)
    m = x.max(axis=dim, keepdims=True)
    out = m + np.log(np.exp(x - m).sum(axis=dim, keepdims=True))
    return out if keepdim else np.squeeze(out, axis=dim)


def _ax(dim, x=None):
    """dim as numpy's axis (a 0-d tensor takes dim 0 or -1 in torch: no axis in numpy)."""
    if x is not None and x.ndim == 0 and dim is not None:
        return ()
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def _arg_axis(dim, x):
    return None if dim is None or x.ndim == 0 else dim


def np_layer_norm(x, normalized_shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), 1)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    return np_softmax(s, -1) @ v


# ------------------------------------------------------------------------------------------
# torch helpers (called only when torch is installed)
# ------------------------------------------------------------------------------------------

def tdtype(dt):
    return {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
            "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8,
            "bool": torch.bool}[np.dtype(dt).name]


def bottom_right_causal(n, m):
    """torch bool mask (True = may attend) with the queries the last n of m positions."""
    return torch.ones(n, m, dtype=torch.bool).tril(m - n)


def torch_packed_attention(qkv, n_head, is_causal=False, n_query=None, scale=None):
    B, T, C3 = qkv.shape
    d = C3 // (3 * n_head)
    q, k, v = qkv.reshape(B, T, 3, n_head, d).permute(2, 0, 3, 1, 4)   # (B, h, T, d) each
    n = T if n_query is None else n_query
    q = q[:, :, T - n:]
    mask = bottom_right_causal(n, T) if is_causal else None
    out = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    return out.transpose(1, 2).reshape(B, n, n_head * d)


def _ids(v):
    return v.numpy() if isinstance(v, Tensor) else np.asarray(v)


# ------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------
OPS: list[OpInfo] = []


def add(*entries):
    OPS.extend(entries)


def _int_float(only=(), **kwargs):
    """A fixed int64 sample for a float op that torch promotes to float32 (as we do)."""
    return S(_ints + 1, desc="int64", only=only, **kwargs)


# --- element-wise unary ---------------------------------------------------------------------
_POS = dict(low=0.2, high=3.0)
_UNARY = [
    # name, op, ref, sample kwargs, torch result for int input (None: int works as in torch)
    ("Tensor.exp", lambda x: x.exp(), np.exp, {}, "x.exp()"),
    ("Tensor.log", lambda x: x.log(), np.log, _POS, "x.log()"),
    ("Tensor.sqrt", lambda x: x.sqrt(), np.sqrt, _POS, "x.sqrt()"),
    ("Tensor.rsqrt", lambda x: x.rsqrt(), lambda x: 1 / np.sqrt(x), _POS, "x.rsqrt()"),
    ("Tensor.tanh", lambda x: x.tanh(), np.tanh, {}, "x.tanh()"),
    ("Tensor.sigmoid", lambda x: x.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), {}, "x.sigmoid()"),
    ("Tensor.erf", lambda x: x.erf(), _np_erf, {}, "x.erf()"),
    ("Tensor.gelu", lambda x: x.gelu(), np_gelu, {}, None),
    ("Tensor.gelu[tanh]", lambda x: TF.gelu(x, approximate="tanh") if torch is not None
     and isinstance(x, torch.Tensor) else x.gelu(approximate="tanh"),
     lambda x: np_gelu(x, "tanh"), {}, None),
    ("F.relu", F.relu, lambda x: np.maximum(x, 0), dict(avoid=(0,)), None),
    ("F.sigmoid", F.sigmoid, lambda x: 1 / (1 + np.exp(-x)), {}, "F.sigmoid(x)"),
    ("F.tanh", F.tanh, np.tanh, {}, "F.tanh(x)"),
    ("F.gelu", F.gelu, np_gelu, {}, None),
    ("F.gelu[tanh]", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: np_gelu(x, "tanh"), {}, None),
    ("F.gelu_composite", F.gelu_composite, np_gelu, {}, None),
    ("F.gelu_composite[tanh]", lambda x: F.gelu_composite(x, approximate="tanh"),
     lambda x: np_gelu(x, "tanh"), {}, None),
]
_TORCH_UNARY = {
    "Tensor.gelu": lambda x: TF.gelu(x), "F.relu": lambda x: TF.relu(x),
    "F.sigmoid": lambda x: torch.sigmoid(x), "F.tanh": lambda x: torch.tanh(x),
    "F.gelu": lambda x: TF.gelu(x), "F.gelu[tanh]": lambda x: TF.gelu(x, approximate="tanh"),
    "F.gelu_composite": lambda x: TF.gelu(x),
    "F.gelu_composite[tanh]": lambda x: TF.gelu(x, approximate="tanh"),
}
for _name, _op, _ref, _kw, _intcall in _UNARY:
    add(OpInfo(_name, _op, torch_op=_TORCH_UNARY.get(_name, SAME), ref=_ref,
               samples=unary(**_kw),
               fixed=(_int_float(),) if _intcall else ()))
add(
    OpInfo("Tensor.relu", lambda x: x.relu(), ref=lambda x: np.maximum(x, 0),
           samples=unary(avoid=(0,)), dtypes=NUMERIC),
    OpInfo("Tensor.neg", lambda x: -x, ref=np.negative, samples=unary(), dtypes=NUMERIC,
           api=("Tensor.-",)),
    OpInfo("Tensor.abs", lambda x: x.abs(), ref=np.abs, samples=unary(avoid=(0,)),
           dtypes=NUMERIC),
    OpInfo("Tensor.square", lambda x: x.square(), ref=np.square, samples=unary(),
           dtypes=NUMERIC),
    OpInfo("Tensor.clamp", lambda x, lo, hi: x.clamp(lo, hi), ref=lambda x, lo, hi: np.clip(
        x, lo, hi), samples=unary(avoid=(-0.5, 0.7), kw=lambda d, s: {"lo": -0.5, "hi": 0.7}),
           fixed=(S(_ints - 2, lo=-1, hi=1, desc="int64"),
                  S(_ints, lo=0.5, hi=2.5, desc="int64_float_bounds"),
                  S(_ints.astype(np.uint32), lo=0.5, hi=2.5, desc="uint32_float_bounds"))),
    OpInfo("Tensor.clamp[min]", lambda x, lo: x.clamp(min=lo),
           ref=lambda x, lo: np.maximum(x, lo), samples=unary(avoid=(0.3,), kw=lambda d, s: {
               "lo": 0.3})),
    OpInfo("Tensor.clamp[max]", lambda x, hi: x.clamp(max=hi),
           ref=lambda x, hi: np.minimum(x, hi), samples=unary(avoid=(-0.3,), kw=lambda d, s: {
               "hi": -0.3})),
    OpInfo("Tensor.clip", lambda x: x.clip(-1.0, 1.0), ref=lambda x: np.clip(x, -1, 1),
           samples=unary(avoid=(-1, 1))),
    OpInfo("Tensor.pow[scalar]", lambda x, s: x ** s, ref=lambda x, s: x ** s,
           samples=scalar_operand((2, 3, -1, 0.5, 1.5, -2.0), low=0.3, high=2.0),
           api=("Tensor.**",),
           # int ** -1 raises in torch and here (tests/ops/test_ops.py)
           fixed=(S([0.0, 1.0, -2.0], s=0, desc="x**0_at_0", only=("torch",)),
                  S(_ints, s=2, desc="int64**2"),
                  S(_ints > 2, s=2, desc="bool**2"),
                  S(_ints + 1, s=0.5, desc="int64**0.5"))),
    OpInfo("Tensor.pow", lambda a, b: a.pow(b), ref=np.power,
           samples=binary(low=0.3, high=2.0, low_b=-2.0, high_b=2.0), api=("Tensor.pow",),
           fixed=(S([0.0, 0.0, 2.0], [-1.0, 2.0, 1.0], desc="0**x_x<0", only=("torch",)),
                  S([0.0, 0.0], [0.0, 2.0], desc="0**0", only=("torch",)),
                  S([-2.0, -1.5], [2.0, 0.5], desc="negative_base", only=("torch",)),
                  S(_ints + 1, [0.5, 2.0, -1.0], desc="int64_float32", only=("torch",)))),
    OpInfo("Tensor.rpow", lambda x, s: s ** x, ref=lambda x, s: s ** x,
           samples=scalar_operand((2.0, 0.5, 3)), api=("Tensor.__rpow__",)),
)

# --- element-wise binary --------------------------------------------------------------------
_MIXED = S(_f64(2, 3).astype(np.float32), _ints, desc="float32_int64")
# 0-d tensors count by category only (torch.result_type): float32 with a 0-d float64 is float32
_MIXED_0D = S(_f64(2, 3).astype(np.float32), np.float64(1.5), desc="float32_0d_float64")
_MIXED_INT_0D = S(_ints, np.float64(1.5), desc="int64_0d_float64")
_BINARY = [
    ("Tensor.add", lambda a, b: a + b, np.add, {}, ("Tensor.+", "Tensor.add")),
    ("Tensor.sub", lambda a, b: a - b, np.subtract, {}, ("Tensor.-", "Tensor.sub")),
    ("Tensor.mul", lambda a, b: a * b, np.multiply, {}, ("Tensor.*", "Tensor.mul")),
    ("Tensor.div", lambda a, b: a / b, np.divide, dict(low_b=0.5, high_b=2.0),
     ("Tensor./", "Tensor.div")),
    ("Tensor.maximum", lambda a, b: a.maximum(b), np.maximum, {}, ()),
    ("Tensor.minimum", lambda a, b: a.minimum(b), np.minimum, {}, ()),
    ("tgx.maximum", tgx.maximum, np.maximum, {}, ()),
    ("tgx.minimum", tgx.minimum, np.minimum, {}, ()),
]
_TORCH_BINARY = {"tgx.maximum": lambda a, b: torch.maximum(a, b),
                 "tgx.minimum": lambda a, b: torch.minimum(a, b)}
# a / b with an int b holding 0 has an inf gradient there, which gradcheck counts as a failure
_MIXED_DIV = S(_f64(2, 3).astype(np.float32), _ints + 1, desc="float32_int64")
for _name, _op, _ref, _kw, _api in _BINARY:
    _fixed = [_MIXED_DIV if _name == "Tensor.div" else _MIXED, _MIXED_0D, _MIXED_INT_0D,
              S(_f64(3, 2), _f64(3, 2, seed=1).astype(np.float32), desc="f64_f32")]
    if _name in ("Tensor.add", "Tensor.mul", "tgx.maximum"):
        _fixed.append(S(_ints > 2, _ints < 4, desc="bool_bool"))
    add(OpInfo(_name, _op, torch_op=_TORCH_BINARY.get(_name, SAME), ref=_ref,
               samples=binary(**_kw), dtypes=NUMERIC, api=_api, fixed=tuple(_fixed)))
# method spellings with a tensor operand
add(*(OpInfo(f"Tensor.{m}[method]", (lambda name: lambda a, b: getattr(a, name)(b))(m),
             ref=r, samples=binary(low_b=0.5) if m == "div" else binary(), api=(f"Tensor.{m}",))
      for m, r in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("div", np.divide))))
# Python scalar operands, both sides (int tensors with float scalars promote as in torch)
add(*(OpInfo(f"Tensor.{n}[scalar]", f, ref=f, samples=scalar_operand((2.5, -3, 1)),
             dtypes=NUMERIC, api=(f"Tensor.{n}",))
      for n, f in (("add", lambda x, s: x + s), ("radd", lambda x, s: s + x),
                   ("sub", lambda x, s: x - s), ("rsub", lambda x, s: s - x),
                   ("mul", lambda x, s: x * s), ("rmul", lambda x, s: s * x),
                   ("div", lambda x, s: x / s))))
add(OpInfo("Tensor.rdiv[scalar]", lambda x, s: s / x, ref=lambda x, s: s / x,
           samples=scalar_operand((2.5, -3), low=0.5, high=2.0), api=("Tensor.__rtruediv__",)))

# --- comparison and logic (bool results, no gradient) ---------------------------------------
_NOGRAD = "a bool (or int) result has no gradient"
for _sym, _m, _f in (("==", "eq", np.equal), ("!=", "ne", np.not_equal), ("<", "lt", np.less),
                     ("<=", "le", np.less_equal), (">", "gt", np.greater),
                     (">=", "ge", np.greater_equal)):
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda a, b: getattr(a, m)(b))(_m), ref=_f,
               samples=binary(low=-2, high=2), dtypes=(F64, I64, BOOL), grad=False,
               grad_reason=_NOGRAD, api=(f"Tensor.{_m}", f"Tensor.{_sym}")))
# & | ^: bitwise on integers, logical on bools (as torch)
add(
    OpInfo("Tensor.and", lambda a, b: a & b, ref=np.bitwise_and, samples=binary(),
           dtypes=(BOOL, I64, I32), grad=False, grad_reason=_NOGRAD, api=("Tensor.&",),
           fixed=(S([1, 2, 6], [3, 3, 3], desc="int64"),
                  S([True, False, True], [3, 3, 2], desc="bool_int64"))),
    OpInfo("Tensor.or", lambda a, b: a | b, ref=np.bitwise_or, samples=binary(),
           dtypes=(BOOL, I64, I32), grad=False, grad_reason=_NOGRAD, api=("Tensor.|",),
           fixed=(S([1, 2, 4], [2, 2, 0], desc="int64"),)),
    OpInfo("Tensor.xor", lambda a, b: a ^ b, ref=np.bitwise_xor, samples=binary(),
           dtypes=(BOOL, I64, I32), grad=False, grad_reason=_NOGRAD, api=("Tensor.^",),
           fixed=(S([1, 2, 4], [3, 2, 0], desc="int64"),)),
    OpInfo("Tensor.invert", lambda a: ~a, ref=np.invert, samples=unary(), dtypes=(BOOL, I64),
           grad=False, grad_reason=_NOGRAD, api=("Tensor.~",)),
    OpInfo("Tensor.any", lambda a: a.any(), ref=np.any, samples=unary(), dtypes=(BOOL, F64),
           grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.all", lambda a: a.all(), ref=np.all, samples=unary(), dtypes=(BOOL, F64),
           grad=False, grad_reason=_NOGRAD),
)

# --- reductions -----------------------------------------------------------------------------


def _red_kw(none=True, tuples=True, keepdim=True):
    def kw(draw, s):
        out = {"dim": dims(draw, len(s), none, tuples)}
        if keepdim:
            out["keepdim"] = draw(st.booleans())
        return out
    return kw


def _np_red(f):
    return lambda x, dim=None, keepdim=False: f(x, axis=_ax(dim, x), keepdims=keepdim)


_EMPTY_AMAX = S(np.zeros((0, 3)), dim=1, desc="empty_kept_dim")
add(
    OpInfo("Tensor.sum", lambda x, dim=None, keepdim=False: x.sum(dim, keepdim),
           ref=_np_red(np.sum), samples=unary(kw=_red_kw()), dtypes=ALL,
           fixed=(S(_ints.astype(np.int32), dim=1, desc="int32"),
                  S(_ints.astype(np.uint8), dim=1, desc="uint8"),
                  S(_ints.astype(np.uint32), dim=1, desc="uint32"),
                  S(_ints.astype(np.uint64), desc="uint64"))),
    OpInfo("Tensor.mean", lambda x, dim=None, keepdim=False: x.mean(dim, keepdim),
           ref=_np_red(np.mean), samples=unary(kw=_red_kw(), empty=False),
           fixed=(S(np.zeros((0, 3)), dim=0, desc="empty_dim"),)),
    OpInfo("Tensor.amax", lambda x, dim=None, keepdim=False: x.amax(dim, keepdim),
           ref=_np_red(np.max), samples=unary(kw=_red_kw(), empty=False), dtypes=NUMERIC,
           fixed=(_EMPTY_AMAX,)),
    OpInfo("Tensor.amin", lambda x, dim=None, keepdim=False: x.amin(dim, keepdim),
           ref=_np_red(np.min), samples=unary(kw=_red_kw(), empty=False), dtypes=NUMERIC),
    OpInfo("Tensor.max", lambda x: x.max(), ref=np.max, samples=unary(empty=False),
           dtypes=NUMERIC),
    OpInfo("Tensor.min", lambda x: x.min(), ref=np.min, samples=unary(empty=False),
           dtypes=NUMERIC),
    OpInfo("Tensor.max[dim]", lambda x, dim, keepdim: tuple(x.max(dim, keepdim)),
           ref=lambda x, dim, keepdim: (np.max(x, _ax(dim, x), keepdims=keepdim),
                                        np.argmax(x, _arg_axis(dim, x), keepdims=keepdim)),
           samples=unary(kw=_red_kw(none=False, tuples=False), empty=False, min_dims=1),
           dtypes=NUMERIC, fixed=(S(1.5, dim=0, keepdim=False, desc="0-d", only=("torch",
                                                                                 "gradcheck")),)),
    OpInfo("Tensor.min[dim]", lambda x, dim, keepdim: tuple(x.min(dim, keepdim)),
           ref=lambda x, dim, keepdim: (np.min(x, _ax(dim, x), keepdims=keepdim),
                                        np.argmin(x, _arg_axis(dim, x), keepdims=keepdim)),
           samples=unary(kw=_red_kw(none=False, tuples=False), empty=False, min_dims=1),
           dtypes=NUMERIC, fixed=(S(1.5, dim=0, keepdim=False, desc="0-d", only=("torch",
                                                                                 "gradcheck")),)),
    OpInfo("Tensor.argmax", lambda x, dim=None, keepdim=False: x.argmax(dim, keepdim),
           ref=lambda x, dim=None, keepdim=False: np.argmax(x, _arg_axis(dim, x), keepdims=keepdim),
           samples=unary(kw=_red_kw(tuples=False), empty=False), dtypes=NUMERIC, grad=False,
           grad_reason="an index result has no gradient"),
    OpInfo("Tensor.argmin", lambda x, dim=None, keepdim=False: x.argmin(dim, keepdim),
           ref=lambda x, dim=None, keepdim=False: np.argmin(x, _arg_axis(dim, x), keepdims=keepdim),
           samples=unary(kw=_red_kw(tuples=False), empty=False), dtypes=NUMERIC, grad=False,
           grad_reason="an index result has no gradient"),
    OpInfo("Tensor.var", lambda x, dim=None, unbiased=True, keepdim=False:
           x.var(dim, unbiased=unbiased, keepdim=keepdim),
           ref=lambda x, dim=None, unbiased=True, keepdim=False: np.var(
               x, axis=_ax(dim, x), ddof=int(unbiased), keepdims=keepdim),
           samples=unary(min_side=2, min_dims=1, empty=False, kw=lambda d, s: dict(
               _red_kw()(d, s), unbiased=d(st.booleans()))),
           fixed=(S([1.5], desc="N=1_unbiased", only=("torch",)),)),
    OpInfo("Tensor.var[correction]", lambda x, dim=None, correction=1, keepdim=False:
           x.var(dim, correction=correction, keepdim=keepdim),
           torch_op=lambda x, dim=None, correction=1, keepdim=False:
           x.var(dim, correction=correction, keepdim=keepdim),
           ref=lambda x, dim=None, correction=1, keepdim=False: np.var(
               x, axis=_ax(dim, x), ddof=correction, keepdims=keepdim),
           samples=unary(min_side=3, min_dims=1, empty=False, kw=lambda d, s: dict(
               _red_kw()(d, s), correction=d(st.sampled_from((0, 1, 2))))),
           api=("Tensor.var",),
           fixed=(S(_f64(2, 3), dim=1, correction=3, desc="N-correction=0", only=("torch",)),
                  S(_f64(2, 3), dim=1, correction=4, desc="N-correction<0", only=("torch",)))),
    OpInfo("Tensor.std", lambda x, dim=None, unbiased=True, keepdim=False:
           x.std(dim, unbiased=unbiased, keepdim=keepdim),
           ref=lambda x, dim=None, unbiased=True, keepdim=False: np.std(
               x, axis=_ax(dim, x), ddof=int(unbiased), keepdims=keepdim),
           samples=unary(min_side=2, min_dims=1, empty=False, kw=lambda d, s: dict(
               _red_kw()(d, s), unbiased=d(st.booleans()))),
           fixed=(S([1.5], desc="N=1_unbiased", only=("torch",)),)),
    OpInfo("Tensor.logsumexp", lambda x, dim, keepdim=False: x.logsumexp(dim, keepdim),
           ref=np_logsumexp, samples=unary(kw=_red_kw(none=False), empty=False),
           # (the numpy reference cannot take a max over a size-0 dim)
           fixed=(S(np.zeros((2, 0)), dim=1, desc="size0", only=("torch", "gradcheck")),
                  S(_ints, dim=1, desc="int64", only=("torch",)))),
    OpInfo("Tensor.softmax", lambda x, dim: x.softmax(dim), ref=np_softmax,
           samples=unary(kw=_red_kw(none=False, tuples=False, keepdim=False), empty=False,
                         min_dims=1),
           # an int tensor's softmax is float32 here; torch refuses Long (docs/design.md)
           fixed=(S(1.5, dim=-1, desc="0-d"),
                  _int_float(only=("numpy",), dim=0),
                  S(np.zeros((2, 0)), dim=1, desc="size0"))),
    OpInfo("Tensor.log_softmax", lambda x, dim: x.log_softmax(dim), ref=np_log_softmax,
           samples=unary(kw=_red_kw(none=False, tuples=False, keepdim=False), empty=False),
           fixed=(S(np.zeros((2, 0)), dim=1, desc="size0"),)),
    OpInfo("F.softmax", lambda x, dim: F.softmax(x, dim), torch_op=lambda x, dim: TF.softmax(
        x, dim), ref=np_softmax, samples=unary(kw=_red_kw(none=False, tuples=False,
                                                           keepdim=False), empty=False,
                                                min_dims=1),
           fixed=(S(1.5, dim=-1, desc="0-d"),)),
    OpInfo("F.log_softmax", lambda x, dim: F.log_softmax(x, dim),
           torch_op=lambda x, dim: TF.log_softmax(x, dim), ref=np_log_softmax,
           samples=unary(kw=_red_kw(none=False, tuples=False, keepdim=False), empty=False)),
    OpInfo("F.softmax_composite", lambda x, dim: F.softmax_composite(x, dim),
           torch_op=lambda x, dim: TF.softmax(x, dim), ref=np_softmax,
           samples=unary(kw=_red_kw(none=False, tuples=False, keepdim=False), empty=False)),
    OpInfo("F.log_softmax_composite", lambda x, dim: F.log_softmax_composite(x, dim),
           torch_op=lambda x, dim: TF.log_softmax(x, dim), ref=np_log_softmax,
           samples=unary(kw=_red_kw(none=False, tuples=False, keepdim=False), empty=False)),
)

# --- movement -------------------------------------------------------------------------------


def _reshape_kw(draw, s):
    n = math.prod(s)
    targets = [(-1,), s[::-1], s + (1,), (1,) + s, (n,)]
    if n and len(s) >= 2:
        targets.append((s[0], -1))
    return {"shape": tuple(draw(st.sampled_from(targets)))}


def _perm_kw(draw, s):
    p = draw(st.permutations(range(len(s))))
    return {"dims": tuple(d - len(s) if draw(st.booleans()) else d for d in p)}


def _flatten_kw(draw, s):
    a, b = sorted(draw(st.integers(0, len(s) - 1)) for _ in range(2))
    return {"start": a - len(s) if draw(st.booleans()) else a, "end": b}


def _pair_kw(draw, s):
    n = max(len(s), 1)
    return {"d0": draw(st.integers(-n, n - 1)), "d1": draw(st.integers(-n, n - 1))}


def _expand_kw(draw, s):
    out = [draw(st.sampled_from((1, 2, 3, -1))) if d == 1 else draw(st.sampled_from((d, -1)))
           for d in s]
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    return {"shape": tuple(lead + out)}


def _dim_kw(extra=0, name="dim"):
    def kw(draw, s):
        n = len(s) + extra
        return {name: draw(st.integers(-max(n, 1), max(n, 1) - 1))}
    return kw


def _split_kw(draw, s):
    dim = draw(st.integers(-len(s), len(s) - 1))
    n = s[dim]
    if draw(st.booleans()) or n == 0:
        return {"size": draw(st.integers(1, max(n, 1) + 1)), "dim": dim}
    cut = sorted(draw(st.lists(st.integers(0, n), max_size=2)))
    return {"size": [b - a for a, b in zip([0] + cut, cut + [n], strict=True)], "dim": dim}


def _basic_index(draw, s):
    idx = draw(hnp.basic_indices(s, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    items = idx if isinstance(idx, tuple) else (idx,)
    # torch has no negative slice steps
    return {"index": tuple(slice(i.start, i.stop, abs(i.step)) if isinstance(i, slice) and
                           i.step is not None and i.step < 0 else i for i in items)}


def _np_split(x, size, dim):
    if isinstance(size, int):
        cuts = list(range(size, x.shape[dim], size))
    else:
        cuts = list(np.cumsum(size)[:-1])
    return tuple(np.split(x, cuts, axis=dim))


def _masked_fill_kw(draw, s):
    ms = tuple(1 if draw(st.booleans()) else d for d in s)[draw(st.integers(0, len(s))):]
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    return {"mask": np.asarray(rng.random(ms) < 0.5),
            "value": draw(st.sampled_from((0.0, -1e9, 2.5)))}


_ADV = [0, 2, 2]
add(
    OpInfo("Tensor.reshape", lambda x, shape: x.reshape(shape), ref=lambda x, shape: x.reshape(
        shape), samples=unary(kw=_reshape_kw), dtypes=ALL),
    OpInfo("Tensor.view", lambda x, shape: x.view(*shape), ref=lambda x, shape: x.reshape(
        shape), torch_op=lambda x, shape: x.reshape(shape), samples=unary(kw=_reshape_kw)),
    OpInfo("Tensor.flatten", lambda x, start, end: x.flatten(start, end),
           ref=lambda x, start, end: x.reshape(x.shape[:start % max(x.ndim, 1)] + (-1,) + x.shape[
               end % max(x.ndim, 1) + 1:]) if x.ndim else x.reshape(1),
           samples=unary(min_dims=1, kw=_flatten_kw, empty=False),
           # (the numpy reference reshapes to (-1, 0), which numpy refuses)
           fixed=(S(np.zeros((1, 0)), start=0, end=0, desc="size0", only=("torch", "gradcheck")),
                  S(np.zeros((2, 0, 3)), start=0, end=1, desc="size0_middle",
                    only=("torch", "gradcheck")))),
    OpInfo("Tensor.permute", lambda x, dims: x.permute(*dims),
           torch_op=lambda x, dims: x.permute(dims),
           ref=lambda x, dims: np.transpose(x, [d % x.ndim for d in dims]) if x.ndim else x,
           samples=unary(kw=_perm_kw), dtypes=ALL),
    OpInfo("Tensor.transpose", lambda x, d0, d1: x.transpose(d0, d1),
           ref=lambda x, d0, d1: np.swapaxes(x, d0, d1) if x.ndim else x,
           samples=unary(kw=_pair_kw, min_dims=1), dtypes=ALL),
    OpInfo("Tensor.swapaxes", lambda x, d0, d1: x.swapaxes(d0, d1),
           ref=lambda x, d0, d1: np.swapaxes(x, d0, d1), samples=unary(kw=_pair_kw, min_dims=1)),
    OpInfo("Tensor.T", lambda x: x.T, ref=lambda x: x.T, samples=unary(max_dims=2)),
    OpInfo("Tensor.mT", lambda x: x.mT, ref=lambda x: np.swapaxes(x, -1, -2),
           samples=unary(min_dims=2)),
    OpInfo("Tensor.expand", lambda x, shape: x.expand(*shape), samples=unary(kw=_expand_kw),
           torch_op=lambda x, shape: x.expand(shape),
           ref=lambda x, shape: np.broadcast_to(x, tuple(
               s if s != -1 else x.shape[i - (len(shape) - x.ndim)] for i, s in enumerate(shape))),
           dtypes=ALL),
    OpInfo("Tensor.expand_as", lambda x, other: x.expand_as(other),
           ref=lambda x, other: np.broadcast_to(x, other.shape),
           samples=unary(kw=lambda d, s: {"other": np.zeros(tuple(
               d(st.sampled_from((1, 3))) if k == 1 else k for k in s))})),
    OpInfo("Tensor.unsqueeze", lambda x, dim: x.unsqueeze(dim),
           ref=lambda x, dim: np.expand_dims(x, dim), samples=unary(kw=_dim_kw(extra=1)),
           dtypes=ALL),
    OpInfo("Tensor.squeeze", lambda x: x.squeeze(), ref=np.squeeze,
           samples=unary(kw=None, max_dims=4), dtypes=ALL),
    OpInfo("Tensor.squeeze[dim]", lambda x, dim: x.squeeze(dim),
           ref=lambda x, dim: np.squeeze(x, dim) if x.ndim and x.shape[dim] == 1 else x,
           samples=unary(kw=_dim_kw(), min_dims=1), api=("Tensor.squeeze",)),
    OpInfo("Tensor.split", lambda x, size, dim: x.split(size, dim), ref=_np_split,
           samples=unary(kw=_split_kw, min_dims=1, empty=False),
           fixed=(S(np.zeros((0, 2)), size=1, dim=0, desc="size0"),)),
    OpInfo("Tensor.chunk", lambda x, chunks, dim: x.chunk(chunks, dim),
           ref=lambda x, chunks, dim: _np_split(x, -(-x.shape[dim] // chunks), dim),
           samples=unary(min_dims=1, empty=False, kw=lambda d, s: {
               "chunks": d(st.integers(1, 4)), "dim": d(st.integers(-len(s), len(s) - 1))})),
    OpInfo("Tensor.getitem", lambda x, index: x[index], ref=lambda x, index: x[index],
           samples=unary(kw=_basic_index), dtypes=ALL, api=("Tensor.[...]",),
           fixed=(S(_f64(4, 3), index=([0, 2, 2, -1],), desc="int_list_repeats"),
                  S(_f64(4, 3), index=(slice(1, None), None, _ADV), desc="slice_none_list"),
                  S(_f64(3, 4), index=(_f64(3, 4) > 0,), desc="bool_mask"),
                  S(_f64(2, 3, 4), index=([1, 0], slice(None), [0, 3]), desc="list_slice_list"),
                  # torch applies ints first: (3, 2) where numpy gives (2, 3); the numpy
                  # reference follows numpy, so only torch and gradcheck (more mixes:
                  # tests/ops/test_semantics.py)
                  S(_f64(2, 3, 4), index=(0, slice(None), [0, 1]), desc="int_slice_list",
                    only=("torch", "gradcheck")))),
    OpInfo("Tensor.masked_fill", lambda x, mask, value: x.masked_fill(mask, value),
           ref=lambda x, mask, value: np.where(mask, value, x).astype(x.dtype),
           samples=unary(kw=_masked_fill_kw, min_dims=1), dtypes=NUMERIC),
    OpInfo("Tensor.triu", lambda x, k: x.triu(k), ref=lambda x, k: np.triu(x, k),
           samples=unary(min_dims=2, kw=lambda d, s: {"k": d(st.integers(-3, 3))}),
           dtypes=NUMERIC),
    OpInfo("Tensor.tril", lambda x, k: x.tril(k), ref=lambda x, k: np.tril(x, k),
           samples=unary(min_dims=2, kw=lambda d, s: {"k": d(st.integers(-3, 3))}),
           dtypes=NUMERIC),
)

# --- functions of several tensors -----------------------------------------------------------


def _cat_family(stack):
    def build(draw, dt):
        s = shape(draw, min_dims=0 if stack else 1, max_dims=3, empty=False)
        k = draw(st.integers(1, 3))
        nd = len(s) + (1 if stack else 0)
        dim = draw(st.integers(-nd, nd - 1))
        xs = []
        for _ in range(k):
            si = list(s)
            if not stack:
                si[dim] = draw(st.integers(0, 3))
            xs.append(array(draw, si, dt))
        return Sample(tuple(xs), {"dim": dim})
    return family(build)


def _where_family(draw, dt):
    sc, sa, sb = broadcast_shapes(draw, 3)
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    return Sample((array(draw, sa, dt), array(draw, sb, dt)),
                  {"cond": np.asarray(rng.random(sc) < 0.5)})


def _matmul_family(draw, dt):
    sa, sb = draw(matmul_shapes(max_batch_dims=2, min_side=1, max_side=4))
    return Sample((array(draw, sa, dt), array(draw, sb, dt)))


add(
    OpInfo("tgx.cat", lambda *xs, dim: tgx.cat(xs, dim), torch_op=lambda *xs, dim: torch.cat(
        xs, dim), ref=lambda *xs, dim: np.concatenate(xs, dim), samples=_cat_family(False),
           dtypes=NUMERIC, fixed=(S(_ints.astype(np.uint32), _ints.astype(np.uint32), dim=1,
                                    desc="uint32"),)),
    OpInfo("tgx.concatenate", lambda *xs, dim: tgx.concatenate(xs, dim),
           torch_op=lambda *xs, dim: torch.cat(xs, dim),
           ref=lambda *xs, dim: np.concatenate(xs, dim), samples=_cat_family(False)),
    OpInfo("tgx.stack", lambda *xs, dim: tgx.stack(xs, dim), torch_op=lambda *xs, dim:
           torch.stack(xs, dim), ref=lambda *xs, dim: np.stack(xs, dim),
           samples=_cat_family(True), dtypes=NUMERIC,
           fixed=(S(_ints.astype(np.uint16), _ints.astype(np.uint16), dim=0, desc="uint16"),)),
    OpInfo("tgx.where", lambda a, b, cond: tgx.where(cond, a, b),
           torch_op=lambda a, b, cond: torch.where(cond, a, b),
           ref=lambda a, b, cond: np.where(cond, a, b), samples=family(_where_family),
           dtypes=NUMERIC, fixed=(S(_f64(2, 3).astype(np.float32), _ints, cond=_ints > 2,
                                    desc="float32_int64", xfail=_MIXED.xfail),)),
    OpInfo("F.where", lambda a, b, cond: F.where(cond, a, b),
           torch_op=lambda a, b, cond: torch.where(cond, a, b),
           ref=lambda a, b, cond: np.where(cond, a, b), samples=family(_where_family)),
    OpInfo("tgx.matmul", tgx.matmul, torch_op=lambda a, b: torch.matmul(a, b), ref=np.matmul,
           samples=family(_matmul_family), api=("tgx.matmul", "Tensor.matmul")),
    OpInfo("Tensor.@", lambda a, b: a @ b, ref=np.matmul, samples=family(_matmul_family),
           fixed=(S(_ints, _ints.T, desc="int64"),)),
)

# --- dtype conversion -----------------------------------------------------------------------
_CAST = ("a cast to an int/bool dtype has no gradient; a cast to float32/16 cannot be "
         "gradchecked (its gradient is compared with torch's)")
for _m, _dt in (("double", F64), ("float", F32), ("half", np.dtype(np.float16)), ("long", I64),
                ("int", I32), ("bool", BOOL)):
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda x: getattr(x, m)())(_m),
               ref=(lambda dt: lambda x: x.astype(dt))(_dt), samples=unary(), dtypes=ALL,
               atol32=1e-3, rtol32=1e-3, grad=_dt.kind == "f", gradcheck=_dt == F64,
               grad_reason=_CAST))
add(
    OpInfo("Tensor.to", lambda x, dtype: x.to(dtype),
           torch_op=lambda x, dtype: x.to(tdtype(dtype)), ref=lambda x, dtype: x.astype(dtype),
           samples=unary(kw=lambda d, s: {"dtype": d(st.sampled_from(ALL))}), dtypes=ALL,
           gradcheck=False, grad_reason=_CAST),
    OpInfo("Tensor.type", lambda x, dtype: x.type(dtype),
           torch_op=lambda x, dtype: x.type(tdtype(dtype)), ref=lambda x, dtype: x.astype(dtype),
           samples=unary(kw=lambda d, s: {"dtype": d(st.sampled_from(FLOATS))}),
           gradcheck=False, grad_reason=_CAST),
    OpInfo("Tensor.clone", lambda x: x.clone(), ref=np.copy, samples=unary(), dtypes=ALL),
    OpInfo("Tensor.detach", lambda x: x.detach(), ref=np.copy, samples=unary(), dtypes=ALL,
           grad=False, grad_reason="cut from the graph by definition"),
)

# --- constructors (no tensor inputs unless *_like) ------------------------------------------
_SIZE = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4).map(tuple)
_CONST = "a constructor: no differentiable input"
_RANDOM = "random values: torch's generator differs (shape and dtype are compared)"
add(
    OpInfo("tgx.zeros", lambda size: tgx.zeros(*size), torch_op=lambda size: torch.zeros(size),
           ref=lambda size: np.zeros(size, np.float32),
           samples=none(st.fixed_dictionaries({"size": _SIZE})), grad=False, grad_reason=_CONST),
    OpInfo("tgx.ones", lambda size: tgx.ones(*size), torch_op=lambda size: torch.ones(size),
           ref=lambda size: np.ones(size, np.float32),
           samples=none(st.fixed_dictionaries({"size": _SIZE})), grad=False, grad_reason=_CONST),
    OpInfo("tgx.full", lambda size, v: tgx.full(size, v), torch_op=lambda size, v: torch.full(
        size, v), ref=lambda size, v: np.full(size, v),
           samples=none(st.fixed_dictionaries({"size": _SIZE, "v": st.sampled_from(
               (1.5, 2, True))})), grad=False, grad_reason=_CONST),
    OpInfo("tgx.arange", lambda a, b, step: tgx.arange(a, b, step),
           torch_op=lambda a, b, step: torch.arange(a, b, step),
           ref=lambda a, b, step: np.arange(a, b, step),
           samples=none(st.fixed_dictionaries({"a": st.sampled_from((0, 1, 0.5, -2)),
                                               "b": st.sampled_from((5, 3.5, 7)),
                                               "step": st.sampled_from((1, 2, 0.5))})),
           grad=False, grad_reason=_CONST),
    OpInfo("tgx.eye", lambda n, m: tgx.eye(n, m), torch_op=lambda n, m: torch.eye(n, m),
           ref=lambda n, m: np.eye(n, m), samples=none(st.fixed_dictionaries({
               "n": st.integers(0, 4), "m": st.integers(0, 4)})), grad=False, grad_reason=_CONST),
    OpInfo("tgx.tensor", lambda data: tgx.tensor(data), torch_op=lambda data: torch.tensor(data),
           ref=lambda data: np.asarray(data),
           samples=none(st.fixed_dictionaries({"data": st.sampled_from(
               ([[1.5, 2.0]], [1, 2, 3], [True, False], 2.5, 3, [[1, 2.5]]))})),
           grad=False, grad_reason=_CONST, fixed=(S(data=np.arange(3, dtype=np.int32),
                                                    desc="int32_array"),)),
    OpInfo("tgx.randint", lambda lo, hi, size: tgx.randint(lo, hi, size),
           torch_op=lambda lo, hi, size: torch.randint(lo, hi, size),
           samples=none(st.fixed_dictionaries({"lo": st.just(0), "hi": st.just(5),
                                               "size": _SIZE})),
           values=False, torch_reason=_RANDOM, grad=False, grad_reason=_CONST),
    OpInfo("tgx.randn", lambda size: tgx.randn(*size), torch_op=lambda size: torch.randn(size),
           samples=none(st.fixed_dictionaries({"size": _SIZE})), values=False,
           grad=False, grad_reason=_CONST),
    OpInfo("tgx.rand", lambda size: tgx.rand(*size), torch_op=lambda size: torch.rand(size),
           samples=none(st.fixed_dictionaries({"size": _SIZE})), values=False,
           grad=False, grad_reason=_CONST),
)
for _n in ("zeros_like", "ones_like", "randn_like", "rand_like"):
    add(OpInfo(f"tgx.{_n}", (lambda n: lambda x: getattr(tgx, n)(x))(_n),
               torch_op=(lambda n: lambda x: getattr(torch, n)(x))(_n),
               ref={"zeros_like": np.zeros_like, "ones_like": np.ones_like}.get(_n),
               samples=unary(), values=_n in ("zeros_like", "ones_like"),
               grad=False, grad_reason=_CONST))
add(OpInfo("tgx.full_like", lambda x, v: tgx.full_like(x, v),
           torch_op=lambda x, v: torch.full_like(x, v), ref=lambda x, v: np.full_like(x, v),
           samples=unary(kw=lambda d, s: {"v": d(st.sampled_from((1.5, -2)))}), dtypes=NUMERIC,
           grad=False, grad_reason=_CONST))

# --- tinygradx.functional: layers, losses, attention ----------------------------------------


def _linear_family(bias):
    def build(draw, dt):
        lead = shape(draw, 0, 2, empty=True)
        i, o = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        xs = (array(draw, lead + (i,), dt), array(draw, (o, i), dt))
        return Sample(xs + ((array(draw, (o,), dt),) if bias else ()))
    return family(build)


def _embedding_family(draw, dt, padding):
    v, c = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    ids = rng.integers(0, v, size=shape(draw, 0, 2))
    pad = draw(st.sampled_from([None] + list(range(v)))) if padding else None
    return Sample((array(draw, (v, c), dt),), {"ids": ids, "padding_idx": pad})


def _layer_norm_family(affine):
    def build(draw, dt):
        ns = shape(draw, 1, 2, empty=False)
        lead = shape(draw, 0, 2, empty=True)
        xs = (array(draw, lead + ns, dt),)
        if affine:
            xs += (array(draw, ns, dt), array(draw, ns, dt))
        return Sample(xs, {"ns": ns})
    return family(build)


def _attention_family(packed=False, weights=False):
    def build(draw, dt):
        b = shape(draw, 0, 2, max_side=2, empty=False)
        n, m, d, dv = (draw(st.integers(1, 3)) for _ in range(4))
        causal = draw(st.booleans())
        kw = {"is_causal": causal}
        if not causal and draw(st.booleans()):
            rng = np.random.default_rng(draw(st.integers(0, 99)))
            if draw(st.booleans()):
                mask = rng.random((n, m)) < 0.7
                mask[:, 0] = True        # every query sees a key (torch: NaN otherwise)
            else:
                mask = rng.standard_normal((n, m)).astype(dt)   # torch: the query's dtype
            kw["attn_mask"] = mask
        kw["scale"] = draw(st.sampled_from((None, 0.5)))
        return Sample((array(draw, b + (n, d), dt), array(draw, b + (m, d), dt),
                       array(draw, b + (m, dv), dt)), kw)
    return family(build)


def _packed_family(draw, dt):
    bsz, t, h, d = (draw(st.integers(1, 3)) for _ in range(4))
    nq = draw(st.sampled_from((None,) + tuple(range(1, t + 1))))
    return Sample((array(draw, (bsz, t, 3 * h * d), dt),),
                  {"n_head": h, "is_causal": draw(st.booleans()), "n_query": nq,
                   "scale": draw(st.sampled_from((None, 0.5)))})


def _torch_attention(q, k, v, attn_mask=None, is_causal=False, scale=None):
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                           scale=scale)


def _torch_learned_mask(q, k, v, mask, is_causal=False):
    """torch refuses attn_mask with is_causal: add the top-left causal mask to it."""
    if is_causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask = mask + torch.zeros(keep.shape, dtype=mask.dtype).masked_fill(~keep, -math.inf)
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _learned_mask_family(draw, dt):
    """q, k, v and a float mask (a learned bias, broadcast over the batch) as inputs."""
    b = shape(draw, 0, 2, max_side=2, empty=False)
    n, m, d = (draw(st.integers(1, 3)) for _ in range(3))
    ms = draw(st.sampled_from(((n, m), (1, m), b + (n, m))))
    return Sample((array(draw, b + (n, d), dt), array(draw, b + (m, d), dt),
                   array(draw, b + (m, d), dt), array(draw, ms, dt)),
                  {"is_causal": draw(st.booleans())})


def _torch_sdpa_weights(q, k, v, attn_mask=None, is_causal=False, scale=None):
    out = TF.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                          scale=scale)
    s = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if is_causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
            else s + attn_mask
    return out, torch.softmax(s, -1)


def _dropout_seeded(x, p):
    tgx.manual_seed(0)                  # the same mask on every call (gradcheck re-runs it)
    return F.dropout(x, p)


def _causal_np(n, m):
    return np.triu(np.full((n, m), -np.inf, np.float32), 1 + m - n)


_Q = _f64(1, 3, 2)
add(
    OpInfo("F.linear", F.linear, torch_op=lambda *a: TF.linear(*a),
           ref=lambda x, w, b=None: x @ w.T + (0 if b is None else b),
           samples=_linear_family(True), api=("F.linear",)),
    OpInfo("F.linear[nobias]", F.linear, torch_op=lambda *a: TF.linear(*a),
           ref=lambda x, w: x @ w.T, samples=_linear_family(False)),
    OpInfo("F.embedding", lambda w, ids, padding_idx: F.embedding(ids, w, padding_idx),
           torch_op=lambda w, ids, padding_idx: TF.embedding(ids, w, padding_idx),
           ref=lambda w, ids, padding_idx: w[ids], samples=family(
               lambda d, dt: _embedding_family(d, dt, False)), api=("F.embedding",)),
    OpInfo("F.embedding[padding_idx]", lambda w, ids, padding_idx: F.embedding(
        ids, w, padding_idx), torch_op=lambda w, ids, padding_idx: TF.embedding(
            ids, w, padding_idx), ref=lambda w, ids, padding_idx: w[ids],
           samples=family(lambda d, dt: _embedding_family(d, dt, True)), gradcheck=False,
           grad_reason="the padding row gets no gradient by definition (torch too): finite "
           "differences disagree there; the gradient is compared with torch's",
           fixed=(S(_f64(4, 2), ids=np.array([0, 3, 3]), padding_idx=-1, desc="padding_idx=-1"),)),
    OpInfo("F.layer_norm", lambda x, ns: F.layer_norm(x, ns),
           torch_op=lambda x, ns: TF.layer_norm(x, ns), ref=lambda x, ns: np_layer_norm(x, ns),
           samples=_layer_norm_family(False), atol=1e-8, rtol=1e-6),
    OpInfo("F.layer_norm[affine]", lambda x, w, b, ns: F.layer_norm(x, ns, w, b),
           torch_op=lambda x, w, b, ns: TF.layer_norm(x, ns, w, b),
           ref=lambda x, w, b, ns: np_layer_norm(x, ns, w, b),
           samples=_layer_norm_family(True), atol=1e-8, rtol=1e-6),
    OpInfo("F.layer_norm_composite", lambda x, w, b, ns: F.layer_norm_composite(x, ns, w, b),
           torch_op=lambda x, w, b, ns: TF.layer_norm(x, ns, w, b),
           ref=lambda x, w, b, ns: np_layer_norm(x, ns, w, b),
           samples=_layer_norm_family(True), atol=1e-8, rtol=1e-6),
    OpInfo("F.dropout", _dropout_seeded, torch_op=None,
           torch_reason="random mask: torch's generator differs (tests/ops/test_torch_oracle.py "
           "checks the scaling)", samples=unary(kw=lambda d, s: {"p": d(st.sampled_from(
               (0.25, 0.5)))})),
    OpInfo("F.dropout[eval]", lambda x, p, training: F.dropout(x, p, training),
           torch_op=lambda x, p, training: TF.dropout(x, p, training), ref=lambda x, **kw: x,
           samples=unary(kw=lambda d, s: {"p": d(st.sampled_from((0.0, 0.5))),
                                          "training": False})),
    OpInfo("F.dropout_composite", lambda x, mask, p: F.dropout_composite(x, _ids(mask), p),
           torch_op=lambda x, mask, p: x * mask / (1 - p),
           ref=lambda x, mask, p: x * mask / (1 - p),
           samples=unary(kw=lambda d, s: {"mask": np.asarray(np.random.default_rng(
               d(st.integers(0, 99))).random(s) < 0.6), "p": 0.4})),
    OpInfo("F.scaled_dot_product_attention", lambda q, k, v, **kw:
           F.scaled_dot_product_attention(q, k, v, **kw),
           torch_op=lambda q, k, v, **kw: TF.scaled_dot_product_attention(q, k, v, **kw),
           ref=np_sdpa, samples=_attention_family(), atol=1e-8,
           # is_causal is top-left as in torch (n < m and n > m too); causal_mask is the
           # bottom-right one the KV cache needs
           fixed=(S(_Q, _f64(1, 5, 2, seed=1), _f64(1, 5, 2, seed=2), is_causal=True,
                    desc="causal_n<m"),
                  S(_f64(1, 5, 2), _Q, _f64(1, 3, 2, seed=2), is_causal=True,
                    desc="causal_n>m"))),
    OpInfo("F.scaled_dot_product_attention[learned_mask]", lambda q, k, v, mask, **kw:
           F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw),
           torch_op=_torch_learned_mask, samples=family(_learned_mask_family),
           atol=1e-8, api=("F.scaled_dot_product_attention",)),
    OpInfo("F.attention[learned_mask]", lambda q, k, v, mask, **kw:
           F.attention(q, k, v, attn_mask=mask, **kw),
           torch_op=_torch_learned_mask, samples=family(_learned_mask_family),
           atol=1e-8, api=("F.attention",)),
    OpInfo("F.scaled_dot_product_attention[weights]", lambda q, k, v, **kw:
           F.scaled_dot_product_attention(q, k, v, return_weights=True, **kw),
           torch_op=_torch_sdpa_weights, samples=_attention_family(weights=True), atol=1e-8),
    OpInfo("F.attention", lambda q, k, v, **kw: F.attention(q, k, v, **kw),
           torch_op=_torch_attention, samples=_attention_family(), atol=1e-8),
    OpInfo("F.packed_attention", lambda qkv, **kw: F.packed_attention(qkv, **kw),
           torch_op=torch_packed_attention, samples=family(_packed_family), atol=1e-8),
    OpInfo("F.causal_mask", lambda n, m: Tensor(F.causal_mask(n, m)),
           torch_op=lambda n, m: torch.full((n, m), float("-inf")).triu(1 + m - n),
           ref=_causal_np, samples=none(st.integers(1, 4).flatmap(
               lambda n: st.fixed_dictionaries({"n": st.just(n), "m": st.integers(n, 5)}))),
           grad=False, grad_reason=_CONST),
    OpInfo("tgx.unbroadcast", lambda g, shape: Tensor(tgx.unbroadcast(g.numpy(), shape)),
           torch_op=lambda g, shape: g.detach().sum_to_size(shape),
           ref=lambda g, shape: np.sum(g, axis=tuple(range(g.ndim - len(shape))) + tuple(
               g.ndim - len(shape) + i for i, s in enumerate(shape) if s == 1 and
               g.shape[g.ndim - len(shape) + i] != 1), keepdims=False).reshape(shape),
           samples=family(lambda d, dt: (lambda sa, sb: Sample(
               (array(d, np.broadcast_shapes(sa, sb), dt),), {"shape": sa}))(
                   *broadcast_shapes(d, 2))),
           grad=False, grad_reason="works on numpy arrays (the walk's helper): no graph"),
)


def _same_shape_pair_min1():
    """Two inputs of one shape with at least one dim of size >= 1 (for x[..., :1] = v)."""
    def build(draw, dt):
        s = shape(draw, 1, 3, min_side=1, empty=False)
        return Sample((array(draw, s, dt, -2.0, 2.0, ()), array(draw, s, dt, -2.0, 2.0, ())))
    return family(build)

# --- in place (on a non-leaf copy, as torch allows; the gradient reaches the original) -----
def _same_shape_pair(low=-2.0, high=2.0):
    """Two inputs of one shape (an in-place op keeps its tensor's shape)."""
    def build(draw, dt):
        s = shape(draw)
        return Sample((array(draw, s, dt, low, high, ()), array(draw, s, dt, low, high, ())))
    return family(build)


def _setitem(x, v):
    y = x.clone()
    y[..., :1] = v[..., :1]            # basic index: v's first column over y's
    return y


_ROW = S(_f64(2, 3), _f64(3, seed=1), desc="broadcast_row")
add(*(OpInfo(f"Tensor.{m}_", (lambda name: lambda a, b: getattr(a.clone(), name + "_")(b))(m),
             ref=r, samples=_same_shape_pair(**({"low": 0.5} if m == "div" else {})),
             fixed=(_ROW,) if m != "div" else ())
      for m, r in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("div", np.divide))))
add(
    OpInfo("Tensor.clamp_", lambda x: x.clone().clamp_(-0.5, 0.7),
           ref=lambda x: np.clip(x, -0.5, 0.7), samples=unary(avoid=(-0.5, 0.7))),
    OpInfo("Tensor.clip_", lambda x: x.clone().clip_(-0.5, 0.7),
           ref=lambda x: np.clip(x, -0.5, 0.7), samples=unary(avoid=(-0.5, 0.7))),
    OpInfo("Tensor.masked_fill_", lambda x, mask, value: x.clone().masked_fill_(mask, value),
           ref=lambda x, mask, value: np.where(mask, value, x).astype(x.dtype),
           samples=unary(kw=_masked_fill_kw, min_dims=1)),
    OpInfo("Tensor.fill_", lambda x: x.clone().fill_(0.5),
           ref=lambda x: np.full_like(x, 0.5), samples=unary()),
    OpInfo("Tensor.copy_", lambda x, src: x.clone().copy_(src), ref=lambda x, src: src.copy(),
           samples=_same_shape_pair()),
    OpInfo("Tensor.setitem", _setitem, api=("Tensor.x",),
           ref=lambda x, v: np.concatenate([v[..., :1], x[..., 1:]], axis=-1),
           samples=_same_shape_pair_min1()),
)

# --- scans, products, reordering, repetition, gather/scatter, sorting -----------------------

def _dim_kw(draw, s):
    n = max(len(s), 1)
    return {"dim": draw(st.integers(-n, n - 1))}


def _prod_kw(draw, s):
    n = max(len(s), 1)
    return {"dim": draw(st.one_of(st.none(), st.integers(-n, n - 1))),
            "keepdim": draw(st.booleans())}


def _np_prod(x, dim=None, keepdim=False):
    if dim is None:
        return np.prod(x)
    return np.prod(x, axis=_ax(dim, x), keepdims=keepdim)


def _flip_kw(draw, s):
    return {"dims": tuple(draw(st.lists(st.integers(-len(s), len(s) - 1), min_size=0,
                                        max_size=len(s), unique_by=lambda d: d % len(s))))}


def _roll_kw(draw, s):
    dims = draw(st.lists(st.integers(-len(s), len(s) - 1), min_size=1, max_size=len(s),
                         unique_by=lambda d: d % len(s)))
    return {"shifts": tuple(draw(st.integers(-5, 5)) for _ in dims), "dims": tuple(dims)}


def _repeat_kw(draw, s):
    extra = draw(st.integers(0 if s else 1, 2))
    return {"sizes": tuple(draw(st.integers(0, 3)) for _ in range(len(s) + extra))}


def _interleave_kw(draw, s):
    d = draw(st.integers(-len(s), len(s) - 1))
    if draw(st.booleans()):
        return {"repeats": draw(st.integers(0, 3)), "dim": d}
    return {"repeats": np.asarray([draw(st.integers(0, 3)) for _ in range(s[d])], np.int64),
            "dim": d}


def _unflatten_kw(draw, s):
    d = draw(st.integers(-len(s), len(s) - 1))
    minus = [(1, -1), (-1,)] if 0 not in s else []    # -1 of no elements: ambiguous
    return {"dim": d, "sizes": draw(st.sampled_from([(s[d], 1)] + minus))}


def _diagonal_kw(draw, s):
    d1, d2 = draw(st.lists(st.integers(0, len(s) - 1), min_size=2, max_size=2, unique=True))
    return {"offset": draw(st.integers(-3, 3)), "dim1": d1 - len(s) * draw(st.booleans()),
            "dim2": d2}


def _reduce_bool_kw(draw, s):
    return {"dim": dims(draw, len(s), none=False, tuples=bool(s)), "keepdim": draw(st.booleans())}


def _grid_ref(index, dim):
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


@st.composite
def _index_sample(draw, dt, kind):
    """x (>= 1 dim), dim and an int64 index for gather / scatter / scatter_add."""
    s = shape(draw, 1, 3, empty=False)
    dim = draw(st.integers(-len(s), len(s) - 1))
    d = dim % len(s)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ishape = tuple(draw(st.integers(0 if i == d else 1, n + (i == d and kind == "gather")))
                   for i, n in enumerate(s))
    if kind == "scatter":                 # distinct targets per fiber: a defined result
        k = min(ishape[d], s[d])
        ishape = ishape[:d] + (k,) + ishape[d + 1:]
        fibers = np.moveaxis(np.zeros(ishape, np.int64), d, -1)
        for pos in np.ndindex(fibers.shape[:-1]):
            fibers[pos] = rng.permutation(s[d])[:k]
        index = np.moveaxis(fibers, -1, d)
    else:
        index = rng.integers(0, s[d], size=ishape).astype(np.int64)
    x = array(draw, s, dt)
    if kind == "gather":
        return Sample((x,), {"dim": dim, "index": index})
    return Sample((x, array(draw, ishape, dt, layout=False)), {"dim": dim, "index": index})


def _index_family(kind):
    def samples(dtypes):
        return st.sampled_from(dtypes).flatmap(lambda dt: _index_sample(dt, kind))
    return samples


def _np_scatter(x, src, dim, index, add=False):
    out = x.copy()
    g = _grid_ref(index, dim % x.ndim)
    if add:
        np.add.at(out, g, src)
    else:
        out[g] = src
    return out


def _masked_select_kw(draw, s):
    k = draw(st.integers(0, len(s)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return {"mask": np.asarray(rng.random(s[len(s) - k:]) < 0.5)}


def _sort_kw(draw, s):
    return {**_dim_kw(draw, s), "descending": draw(st.booleans())}


def _topk_kw(draw, s):
    kw = _dim_kw(draw, s)
    n = s[kw["dim"]] if s else 1
    return {**kw, "k": draw(st.integers(0, n)), "largest": draw(st.booleans())}


def _np_sort(x, dim=-1, descending=False):
    if x.ndim == 0:
        return x
    s = np.sort(x, axis=dim)
    return np.flip(s, dim) if descending else s


_ZEROS = np.array([[1.5, 0.0, 2.0, 0.0], [0.0, 3.0, 2.0, 1.0], [1.0, 0.5, 0.0, 2.0]])
add(
    OpInfo("Tensor.cumsum", lambda x, dim: x.cumsum(dim),
           ref=lambda x, dim: np.cumsum(x, axis=dim) if x.ndim else x,
           samples=unary(kw=_dim_kw), dtypes=NUMERIC,
           fixed=(S(_ints.astype(np.uint32), dim=1, desc="uint32"),)),
    OpInfo("Tensor.cumprod", lambda x, dim: x.cumprod(dim),
           ref=lambda x, dim: np.cumprod(x, axis=dim) if x.ndim else x,
           samples=unary(kw=_dim_kw, low=-1.5, high=1.5), dtypes=NUMERIC,
           fixed=(S(_ZEROS, dim=1, desc="zeros"), S(_ZEROS, dim=0, desc="zeros-dim0"))),
    OpInfo("Tensor.prod", lambda x, **kw: x.prod(**kw), ref=_np_prod,
           torch_op=lambda x, dim=None, keepdim=False: x.prod() if dim is None
           else x.prod(dim, keepdim=keepdim),
           samples=unary(kw=_prod_kw, low=-1.5, high=1.5), dtypes=NUMERIC,
           fixed=(S(_ZEROS, dim=1, desc="zeros"), S(_ZEROS, desc="zeros-all"),
                  S(_ZEROS[0], desc="one-zero"))),
    OpInfo("Tensor.flip", lambda x, dims: x.flip(dims), ref=lambda x, dims: np.flip(x, dims),
           samples=unary(kw=_flip_kw, min_dims=1), dtypes=ALL),
    OpInfo("Tensor.roll", lambda x, shifts, dims=None: x.roll(shifts, dims),
           ref=lambda x, shifts, dims=None: np.roll(x, shifts, dims),
           samples=unary(kw=_roll_kw, min_dims=1), dtypes=ALL,
           fixed=(S(_ZEROS, shifts=5, desc="flat"),)),
    OpInfo("Tensor.repeat", lambda x, sizes: x.repeat(*sizes),
           ref=lambda x, sizes: np.tile(x.reshape((1,) * (len(sizes) - x.ndim) + x.shape),
                                        sizes),
           samples=unary(kw=_repeat_kw), dtypes=ALL),
    OpInfo("Tensor.repeat_interleave", lambda x, repeats, dim: x.repeat_interleave(repeats, dim),
           ref=lambda x, repeats, dim: np.repeat(x, repeats, axis=dim),
           samples=unary(kw=_interleave_kw, min_dims=1), dtypes=ALL,
           fixed=(S(_ZEROS, repeats=2, dim=None, desc="flat"),)),
    OpInfo("Tensor.unflatten", lambda x, dim, sizes: x.unflatten(dim, sizes),
           ref=lambda x, dim, sizes: x.reshape(
               x.shape[:dim % x.ndim] + sizes + x.shape[dim % x.ndim + 1:]),
           samples=unary(kw=_unflatten_kw, min_dims=1), dtypes=ALL),
    OpInfo("Tensor.diagonal", lambda x, **kw: x.diagonal(**kw),
           ref=lambda x, offset, dim1, dim2: np.diagonal(x, offset, dim1, dim2),
           samples=unary(kw=_diagonal_kw, min_dims=2), dtypes=ALL),
    OpInfo("Tensor.any[dim]", lambda x, **kw: x.any(**kw), api=("Tensor.any",),
           ref=lambda x, dim, keepdim: np.any(x, axis=_ax(dim, x), keepdims=keepdim),
           samples=unary(kw=_reduce_bool_kw), dtypes=ALL, grad=False,
           grad_reason="bool result"),
    OpInfo("Tensor.all[dim]", lambda x, **kw: x.all(**kw), api=("Tensor.all",),
           ref=lambda x, dim, keepdim: np.all(x, axis=_ax(dim, x), keepdims=keepdim),
           samples=unary(kw=_reduce_bool_kw), dtypes=ALL, grad=False,
           grad_reason="bool result"),
    OpInfo("Tensor.gather", lambda x, dim, index: x.gather(dim, index),
           ref=lambda x, dim, index: x[_grid_ref(index, dim % x.ndim)],
           samples=_index_family("gather"), dtypes=NUMERIC),
    OpInfo("Tensor.scatter", lambda x, src, dim, index: x.scatter(dim, index, src),
           ref=_np_scatter, samples=_index_family("scatter"), dtypes=NUMERIC),
    OpInfo("Tensor.scatter_add", lambda x, src, dim, index: x.scatter_add(dim, index, src),
           ref=lambda x, src, dim, index: _np_scatter(x, src, dim, index, add=True),
           samples=_index_family("scatter_add"), dtypes=NUMERIC),
    OpInfo("F.one_hot", lambda t, **kw: F.one_hot(t, **kw),
           torch_op=lambda t, **kw: TF.one_hot(t, **kw),
           ref=lambda t, num_classes=-1: np.eye(t.max() + 1 if num_classes < 0 else num_classes,
                                                dtype=np.int64)[t],
           samples=unary(low=0, high=3, empty=False, kw=lambda draw, s: {
               "num_classes": draw(st.sampled_from([-1, 5]))}), dtypes=(I64,),
           grad=False, grad_reason="int result",
           fixed=(S([[0, 2], [1, 0]], desc="infer"), S([3, 0, 1], num_classes=5, desc="num"),
                  S(np.int64(2), num_classes=3, desc="0-d"))),
    OpInfo("Tensor.masked_select", lambda x, mask: x.masked_select(mask),
           ref=lambda x, mask: x[np.broadcast_to(mask, x.shape)],
           samples=unary(kw=_masked_select_kw), dtypes=ALL),
    OpInfo("Tensor.sort", lambda x, **kw: x.sort(**kw),
           ref=lambda x, dim, descending: (_np_sort(x, dim, descending),
                                           np.argsort(-x if descending else x, axis=dim)
                                           if x.ndim else np.int64(0)),
           samples=unary(kw=_sort_kw),
           fixed=(S(_ints[::-1].astype(np.uint64), dim=0, descending=False, desc="uint64"),)),
    OpInfo("Tensor.argsort", lambda x, **kw: x.argsort(**kw),
           ref=lambda x, dim, descending: np.argsort(-x if descending else x, axis=dim)
           if x.ndim else np.int64(0),
           samples=unary(kw=_sort_kw), grad=False, grad_reason="int result",
           fixed=(S(_ints[::-1].astype(np.uint32), dim=0, descending=False, desc="uint32"),)),
    OpInfo("Tensor.topk", lambda x, **kw: x.topk(**kw),
           ref=lambda x, dim, k, largest: tuple(
               np.take(a, range(k), axis=dim) if x.ndim else a for a in
               (_np_sort(x, dim, largest),
                np.argsort(-x if largest else x, axis=dim) if x.ndim else np.int64(0))),
           samples=unary(kw=_topk_kw)),
)


def _as_function(name, entry_name):
    """The tgx.name(x, **kw) twin of a Tensor entry, checked against torch.name."""
    e = next(o for o in OPS if o.name == entry_name)
    if name in ("scatter", "scatter_add"):
        def op(x, src, **kw):
            return getattr(tgx, name)(x, src=src, **kw)

        def top(x, src, **kw):
            return getattr(torch, name)(x, src=src, **kw)
    else:
        def op(x, **kw):
            return getattr(tgx, name)(x, **kw)

        def top(x, **kw):
            return getattr(torch, name)(x, **kw)
    return OpInfo(f"tgx.{name}", op, torch_op=top if torch is not None else None,
                  ref=e.ref, samples=e.samples, dtypes=e.dtypes, grad=e.grad,
                  grad_reason=e.grad_reason)


add(*(_as_function(n, f"Tensor.{n}") for n in (
    "cumsum", "cumprod", "flip", "roll", "repeat_interleave", "unflatten", "diagonal",
    "gather", "scatter", "scatter_add", "masked_select", "sort", "argsort", "topk")))

# --- the PyTorch surface: torch's function forms, conversions, new_*, in place, random ------
_NEW_SIZE = st.sampled_from(((2, 3), (0,), (), (4,)))


def _twin(name, entry_name, call=lambda f, *xs, **kw: f(*xs, **kw), suffix=""):
    """tgx.name checked against torch.name, called as call(fn, *inputs, **kwargs), on the
    samples and reference of a Tensor entry."""
    e = next(o for o in OPS if o.name == entry_name)
    return OpInfo(f"tgx.{name}{suffix}", lambda *xs, **kw: call(getattr(tgx, name), *xs, **kw),
                  torch_op=(lambda *xs, **kw: call(getattr(torch, name), *xs, **kw))
                  if torch is not None else None, ref=e.ref, samples=e.samples,
                  dtypes=e.dtypes, grad=e.grad, grad_reason=e.grad_reason)


def _reduce_call(f, x, dim=None, keepdim=False):
    return f(x, dim, keepdim)


add(*(_twin(n, f"Tensor.{n}") for n in ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "eq")),
    _twin("pow", "Tensor.pow"),
    _twin("clamp", "Tensor.clamp", lambda f, x, lo, hi: f(x, lo, hi)),
    _twin("clip", "Tensor.clamp", lambda f, x, lo, hi: f(x, lo, hi)),
    _twin("tril", "Tensor.tril", lambda f, x, k: f(x, k)),
    _twin("triu", "Tensor.triu", lambda f, x, k: f(x, diagonal=k)),
    _twin("max", "Tensor.max"), _twin("min", "Tensor.min"),
    _twin("max", "Tensor.max[dim]", lambda f, x, dim, keepdim: tuple(f(x, dim, keepdim)),
          "[dim]"),
    _twin("min", "Tensor.min[dim]", lambda f, x, dim, keepdim: tuple(f(x, dim, keepdim)),
          "[dim]"),
    _twin("max", "tgx.maximum", suffix="[other]"), _twin("min", "tgx.minimum", suffix="[other]"),
    _twin("argmax", "Tensor.argmax", _reduce_call), _twin("argmin", "Tensor.argmin", _reduce_call),
    _twin("sum", "Tensor.sum", _reduce_call), _twin("mean", "Tensor.mean", _reduce_call),
    _twin("softmax", "Tensor.softmax"), _twin("log_softmax", "Tensor.log_softmax"))


def _bmm_family(draw, dt):
    b, n, m, p = (draw(st.integers(0 if i == 0 else 1, 3)) for i in range(4))
    return Sample((array(draw, (b, n, m), dt), array(draw, (b, m, p), dt)))


def _iop(sym):
    """x.clone() OP= y: in place on the clone (torch's semantics), the clone returned."""
    def op(a, b):
        y = a.clone()
        if sym == "+":
            y += b
        elif sym == "-":
            y -= b
        elif sym == "*":
            y *= b
        else:
            y /= b
        return y
    return op


def _random_fill(call):
    return lambda x: call(x.clone())


def _np_index_fill(x, dim, index, value):
    out = x.copy()
    key = (slice(None),) * (dim % x.ndim) + (index,)
    out[key] = value
    return out


def _index_fill_kw(draw, s):
    d = draw(st.integers(-len(s), len(s) - 1))
    n = s[d]
    k = draw(st.integers(0, n))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    return {"dim": d, "index": rng.permutation(n)[:k].astype(np.int64),
            "value": draw(st.sampled_from((-1.5, 0.0, 2.0)))}


def _new_sample(draw, dt):
    return Sample((array(draw, shape(draw), dt),), {"size": draw(_NEW_SIZE)})


def _nonzero_ref(x):
    return np.argwhere(x).astype(np.int64)


def _multinomial_samples(dtypes):
    return st.sampled_from([
        S(np.array([0.0, 1.0, 2.0, 3.0]), k=2, repl=False, desc="1d"),
        S(np.array([[1.0, 0.0, 5.0], [0.5, 0.5, 0.0]]), k=2, repl=False, desc="rows"),
        S(np.array([[1.0, 0.0, 5.0], [0.5, 0.5, 0.0]]), k=5, repl=True, desc="repl")])


_CONVERT = "a conversion of the tensor itself"
_LAYOUT = unary(max_dims=3)
add(
    OpInfo("tgx.bmm", tgx.bmm, torch_op=lambda a, b: torch.bmm(a, b), ref=np.matmul,
           samples=family(_bmm_family)),
    OpInfo("Tensor.nonzero", lambda x: x.nonzero(), ref=_nonzero_ref, samples=unary(),
           dtypes=(F64, I64, BOOL), grad=False, grad_reason=_NOGRAD),
    OpInfo("Tensor.nonzero[as_tuple]", lambda x: x.nonzero(as_tuple=True),
           ref=lambda x: tuple(i.astype(np.int64) for i in np.nonzero(np.atleast_1d(x))),
           samples=unary(), dtypes=(F64, I64, BOOL), grad=False, grad_reason=_NOGRAD),
    OpInfo("tgx.nonzero", lambda x: tgx.nonzero(x), torch_op=lambda x: torch.nonzero(x),
           ref=_nonzero_ref, samples=unary(), dtypes=(F64, I64, BOOL), grad=False,
           grad_reason=_NOGRAD),
    OpInfo("Tensor.multinomial", lambda x, k, repl: x.multinomial(k, repl),
           samples=_multinomial_samples, values=False, grad=False, grad_reason=_RANDOM),
    OpInfo("tgx.multinomial", lambda x, k, repl: tgx.multinomial(x, k, repl),
           torch_op=lambda x, k, repl: torch.multinomial(x, k, repl),
           samples=_multinomial_samples, values=False, grad=False, grad_reason=_RANDOM),
    OpInfo("tgx.empty", lambda size: tgx.empty(*size), torch_op=lambda size: torch.empty(size),
           samples=none(st.fixed_dictionaries({"size": _SIZE})), values=False, grad=False,
           grad_reason=_CONST),
    OpInfo("tgx.empty_like", lambda x: tgx.empty_like(x), torch_op=lambda x: torch.empty_like(x),
           samples=unary(), dtypes=ALL, values=False, grad=False, grad_reason=_CONST),
    OpInfo("tgx.from_numpy", lambda x: tgx.from_numpy(x.numpy()),
           torch_op=lambda x: torch.from_numpy(x.detach().numpy()), ref=np.copy,
           samples=unary(), dtypes=ALL, grad=False, grad_reason=_CONST),
    OpInfo("tgx.as_tensor", lambda x: tgx.as_tensor(x.numpy()),
           torch_op=lambda x: torch.as_tensor(x.detach().numpy()), ref=np.copy,
           samples=unary(), dtypes=ALL, grad=False, grad_reason=_CONST),
    OpInfo("Tensor.contiguous", lambda x: x.contiguous(), ref=np.copy, samples=_LAYOUT,
           dtypes=ALL),
    OpInfo("Tensor.cpu", lambda x: x.cpu(), ref=np.copy, samples=_LAYOUT, dtypes=ALL),
    OpInfo("Tensor.type_as", lambda x, other: x.type_as(other),
           ref=lambda x, other: x.astype(other.dtype),
           samples=unary(kw=lambda d, s: {"other": np.zeros(1, d(st.sampled_from(ALL)))}),
           dtypes=FLOATS, gradcheck=False, grad_reason=_CAST),
    OpInfo("Tensor.view_as", lambda x, other: x.view_as(other),
           ref=lambda x, other: x.reshape(other.shape),
           samples=unary(kw=lambda d, s: {"other": np.zeros((int(np.prod(s)),), np.int64)})),
)
for _n, _np_fn in (("new_zeros", np.zeros), ("new_ones", np.ones), ("new_empty", None)):
    add(OpInfo(f"Tensor.{_n}", (lambda n: lambda x, size: getattr(x, n)(size))(_n),
               ref=(lambda f: (lambda x, size: f(size, x.dtype)) if f else None)(_np_fn),
               samples=family(_new_sample), dtypes=ALL, values=_np_fn is not None,
               grad=False, grad_reason=_CONST))
add(OpInfo("Tensor.new_full", lambda x, size: x.new_full(size, 2.5),
           ref=lambda x, size: np.full(size, 2.5, x.dtype), samples=family(_new_sample),
           dtypes=NUMERIC, grad=False, grad_reason=_CONST),
    OpInfo("Tensor.new_tensor", lambda x, size: x.new_tensor([[1, 2], [3, 4]]),
           ref=lambda x, size: np.array([[1, 2], [3, 4]], x.dtype), samples=family(_new_sample),
           dtypes=ALL, grad=False, grad_reason=_CONST))
for _n, _dt in (("FloatTensor", F32), ("DoubleTensor", F64), ("LongTensor", I64),
                ("IntTensor", I32), ("BoolTensor", BOOL), ("ByteTensor", np.dtype(np.uint8))):
    add(OpInfo(f"tgx.{_n}", (lambda n: lambda data: getattr(tgx, n)(data))(_n),
               torch_op=(lambda n: lambda data: getattr(torch, n)(data))(_n),
               ref=(lambda dt: lambda data: np.array(data, dt))(_dt),
               samples=none(st.fixed_dictionaries({"data": st.sampled_from(
                   ([1, 0, 2], [[1.0, 2.5]], [True, False], []))})),
               grad=False, grad_reason=_CONST))

# in place: augmented assignment (x += y is x.add_(y), as torch), scatter_, index_fill_, pow_
add(*(OpInfo(f"Tensor.i{m}", _iop(sym), ref=r, api=(f"Tensor.{sym}=",),
             samples=_same_shape_pair(**({"low": 0.5} if sym == "/" else {})))
      for sym, m, r in (("+", "add", np.add), ("-", "sub", np.subtract),
                        ("*", "mul", np.multiply), ("/", "div", np.divide))))
add(OpInfo("Tensor.pow_", lambda a, b: a.clone().pow_(b), ref=np.power,
           samples=_same_shape_pair(low=0.3, high=2.0)),
    OpInfo("Tensor.scatter_", lambda x, src, dim, index: x.clone().scatter_(dim, index, src),
           ref=lambda x, src, dim, index: _np_scatter(x, src, dim, index),
           samples=_index_family("scatter")),
    OpInfo("Tensor.scatter_[value]", lambda x, src, dim, index: x.clone().scatter_(
        dim, index, 0.25), ref=lambda x, src, dim, index: _np_scatter(x, 0.25, dim, index),
           samples=_index_family("scatter"), api=("Tensor.scatter_",)),
    OpInfo("Tensor.scatter_add_", lambda x, src, dim, index: x.clone().scatter_add_(
        dim, index, src), ref=lambda x, src, dim, index: _np_scatter(x, src, dim, index, True),
           samples=_index_family("scatter_add")),
    OpInfo("Tensor.index_fill", lambda x, dim, index, value: x.index_fill(dim, index, value),
           ref=_np_index_fill, samples=unary(min_dims=1, kw=_index_fill_kw), dtypes=NUMERIC),
    OpInfo("Tensor.index_fill_", lambda x, dim, index, value: x.clone().index_fill_(
        dim, index, value), ref=_np_index_fill, samples=unary(min_dims=1, kw=_index_fill_kw)))

# random fills (tinygradx's generator): shape, dtype and a zero gradient for the old value
add(OpInfo("Tensor.normal_", _random_fill(lambda y: y.normal_(0.5, 2.0)), samples=unary(),
           values=False, gradcheck=False, grad_reason=_RANDOM),
    OpInfo("Tensor.uniform_", _random_fill(lambda y: y.uniform_(-1.0, 3.0)), samples=unary(),
           values=False, gradcheck=False, grad_reason=_RANDOM),
    OpInfo("Tensor.bernoulli_", _random_fill(lambda y: y.bernoulli_(0.3)), samples=unary(),
           values=False, gradcheck=False, grad_reason=_RANDOM),
    OpInfo("Tensor.exponential_", _random_fill(lambda y: y.exponential_(2.0)), samples=unary(),
           values=False, gradcheck=False, grad_reason=_RANDOM))

# --- grouped-query attention (enable_gqa) ---------------------------------------------------

def _gqa_family(draw, dt):
    """query (..., Hq, n, d) with key / value of Hkv heads dividing Hq (each on its own)."""
    b = shape(draw, 0, 1, max_side=2, empty=False)
    hk, hv = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    hq = hk * hv * draw(st.integers(1, 2))
    n, m, d, dv = (draw(st.integers(1, 3)) for _ in range(4))
    kw = {"is_causal": draw(st.booleans()), "scale": draw(st.sampled_from((None, 0.5)))}
    if not kw["is_causal"] and draw(st.booleans()):
        mask = np.random.default_rng(draw(st.integers(0, 99))).random((hq, n, m)) < 0.7
        mask[..., 0] = True              # every query sees a key (torch: NaN otherwise)
        kw["attn_mask"] = mask
    return Sample((array(draw, b + (hq, n, d), dt), array(draw, b + (hk, m, d), dt),
                   array(draw, b + (hv, m, dv), dt)), kw)


def np_gqa(q, k, v, **kw):
    hq = q.shape[-3]
    return np_sdpa(q, np.repeat(k, hq // k.shape[-3], axis=-3),
                   np.repeat(v, hq // v.shape[-3], axis=-3), **kw)


_GQA_FIXED = (S(_f64(1, 4, 3, 2), _f64(1, 2, 5, 2, seed=1), _f64(1, 2, 5, 3, seed=2),
                desc="groups_of_2"),
              S(_f64(2, 4, 3, 2), _f64(2, 1, 3, 2, seed=1), _f64(2, 1, 3, 2, seed=2),
                is_causal=True, desc="multi_query_causal"),
              S(_f64(1, 4, 3, 2), _f64(1, 2, 5, 2, seed=1), _f64(1, 4, 5, 2, seed=2),
                desc="value_heads_differ"),
              S(_f64(6, 2, 2), _f64(3, 4, 2, seed=1), _f64(3, 4, 2, seed=2),
                desc="3d_heads_first"))
add(
    OpInfo("F.scaled_dot_product_attention[gqa]", lambda q, k, v, **kw:
           F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw),
           torch_op=lambda q, k, v, **kw: TF.scaled_dot_product_attention(q, k, v,
                                                                          enable_gqa=True, **kw),
           ref=np_gqa, samples=family(_gqa_family), atol=1e-8,
           api=("F.scaled_dot_product_attention",), fixed=_GQA_FIXED),
    OpInfo("F.attention[gqa]", lambda q, k, v, **kw: F.attention(q, k, v, enable_gqa=True, **kw),
           torch_op=lambda q, k, v, **kw: TF.scaled_dot_product_attention(q, k, v,
                                                                          enable_gqa=True, **kw),
           ref=np_gqa, samples=family(_gqa_family), atol=1e-8, api=("F.attention",),
           fixed=_GQA_FIXED),
)


# --- element-wise math (ops_math.py): Tensor methods and tgx functions ----------------------
_INTS_GRID = tuple(float(k) for k in range(-3, 4))
_HALVES = tuple(k + 0.5 for k in range(-3, 3))
_MATH = [
    # name, ref, sample kwargs, dtypes, int fixed sample (torch promotes to float32)
    ("sin", np.sin, {}, FLOATS, True),
    ("cos", np.cos, {}, FLOATS, True),
    ("log2", np.log2, _POS, FLOATS, True),
    ("log10", np.log10, _POS, FLOATS, True),
    ("exp2", np.exp2, {}, FLOATS, True),
    ("floor", np.floor, dict(avoid=_INTS_GRID), NUMERIC, False),
    ("ceil", np.ceil, dict(avoid=_INTS_GRID), NUMERIC, False),
    ("trunc", np.trunc, dict(avoid=_INTS_GRID), NUMERIC, False),
    ("round", np.round, dict(avoid=_HALVES), NUMERIC, False),
    ("sign", np.sign, dict(avoid=(0,)), NUMERIC, False),
]
for _m, _ref, _kw, _dts, _intcall in _MATH:
    _fx = (_int_float(),) if _intcall else ()
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda x: getattr(x, m)())(_m), ref=_ref,
               samples=unary(**_kw), dtypes=_dts, fixed=_fx),
        OpInfo(f"tgx.{_m}", getattr(tgx, _m), torch_op=(lambda m: lambda x: getattr(torch, m)(
            x))(_m), ref=_ref, samples=unary(**_kw), dtypes=_dts, fixed=_fx))
add(
    OpInfo("Tensor.round[decimals]", lambda x: x.round(decimals=1),
           ref=lambda x: np.round(x, 1), samples=unary(), gradcheck=False,
           fixed=(S([0.25, -1.35, 2.0], desc="halves"),)),
    OpInfo("Tensor.sign[bool]", lambda x: x.sign(), ref=lambda x: x, samples=unary(),
           dtypes=(BOOL,)),
    OpInfo("Tensor.logaddexp", lambda a, b: a.logaddexp(b), ref=np.logaddexp,
           samples=binary(), fixed=(S([1000.0, -np.inf, 0.0], [1000.0, 1.0, -1.0],
                                      desc="large_and_inf", only=("numpy", "torch")),)),
    OpInfo("tgx.logaddexp", tgx.logaddexp, torch_op=lambda a, b: torch.logaddexp(a, b),
           ref=np.logaddexp, samples=binary()),
)


def _lerp_family(tensor_weight):
    def build(draw, dt):
        shapes = broadcast_shapes(draw, 3 if tensor_weight else 2)
        a, b = array(draw, shapes[0], dt), array(draw, shapes[1], dt)
        if tensor_weight:
            return Sample((a, b, array(draw, shapes[2], dt, low=-0.5, high=1.5)))
        return Sample((a, b), {"w": draw(st.sampled_from((0.0, 0.3, 0.5, 0.9, 1.0, 1.5)))})
    return family(build)


add(
    OpInfo("Tensor.lerp", lambda a, b, w: a.lerp(b, w), ref=lambda a, b, w: a + w * (b - a),
           samples=_lerp_family(True)),
    OpInfo("Tensor.lerp[scalar]", lambda a, b, w: a.lerp(b, w),
           ref=lambda a, b, w: a + w * (b - a), samples=_lerp_family(False)),
    OpInfo("tgx.lerp", tgx.lerp, torch_op=lambda a, b, w: torch.lerp(a, b, w),
           ref=lambda a, b, w: a + w * (b - a), samples=_lerp_family(True)),
)
_SPECIAL = S([0.0, np.nan, np.inf, -np.inf, -1.5], desc="nan_inf")
for _m, _ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    add(OpInfo(f"Tensor.{_m}", (lambda m: lambda x: getattr(x, m)())(_m), ref=_ref,
               samples=unary(), dtypes=ALL, grad=False, grad_reason=_NOGRAD,
               fixed=(_SPECIAL,)),
        OpInfo(f"tgx.{_m}", getattr(tgx, _m), torch_op=(lambda m: lambda x: getattr(torch, m)(
            x))(_m), ref=_ref, samples=unary(), dtypes=ALL, grad=False, grad_reason=_NOGRAD,
            fixed=(_SPECIAL,)))


def _isclose_family():
    def build(draw, dt):
        sa, sb = broadcast_shapes(draw, 2)
        a = array(draw, sa, dt)
        b = np.broadcast_to(a, np.broadcast_shapes(sa, sb)).copy() if draw(st.booleans()) \
            else array(draw, sb, dt)
        if b.dtype.kind == "f" and draw(st.booleans()):
            b = b + 1e-7
        return Sample((a, b))
    return family(build)


add(
    OpInfo("Tensor.isclose", lambda a, b: a.isclose(b), ref=np.isclose,
           samples=_isclose_family(), dtypes=(F64, F32, I64), grad=False, grad_reason=_NOGRAD,
           fixed=(S([np.nan, np.inf, 1.0], [np.nan, np.inf, 1.0 + 1e-6], desc="nan_inf"),)),
    OpInfo("tgx.isclose", lambda a, b, equal_nan=False: tgx.isclose(
        a, b, rtol=1e-3, atol=1e-4, equal_nan=equal_nan),
           torch_op=lambda a, b, equal_nan=False: torch.isclose(a, b, rtol=1e-3, atol=1e-4,
                                                                equal_nan=equal_nan),
           ref=lambda a, b, equal_nan=False: np.isclose(a, b, rtol=1e-3, atol=1e-4,
                                                        equal_nan=equal_nan),
           samples=_isclose_family(),
           grad=False, grad_reason=_NOGRAD,
           fixed=(S([np.nan, 1.0], [np.nan, 1.0], desc="equal_nan", equal_nan=True,
                    only=("torch",)),)),
)

# --- activations (activations.py, re-exported by F) -----------------------------------------
def np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
_ACT = [
    # name, op, torch op, ref, sample kwargs
    ("F.silu", F.silu, lambda x: TF.silu(x), lambda x: x / (1 + np.exp(-x)), {}),
    ("F.softplus", F.softplus, lambda x: TF.softplus(x), np_softplus, dict(low=-4, high=4)),
    ("F.softplus[beta]", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
     lambda x: TF.softplus(x, beta=2.0, threshold=3.0),
     lambda x: np_softplus(x, 2.0, 3.0), dict(low=-3, high=3, avoid=(1.5,))),
    ("F.logsigmoid", F.logsigmoid, lambda x: TF.logsigmoid(x),
     lambda x: -np.logaddexp(0, -x), dict(low=-6, high=6)),
    ("F.leaky_relu", F.leaky_relu, lambda x: TF.leaky_relu(x), lambda x: np.where(
        x > 0, x, 0.01 * x), dict(avoid=(0,))),
    ("F.leaky_relu[slope]", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2),
     lambda x: np.where(x > 0, x, 0.2 * x), dict(avoid=(0,))),
    ("F.elu", F.elu, lambda x: TF.elu(x), np_elu, dict(avoid=(0,))),
    ("F.elu[alpha]", lambda x: F.elu(x, alpha=0.5), lambda x: TF.elu(x, alpha=0.5),
     lambda x: np_elu(x, 0.5), dict(avoid=(0,))),
    ("F.selu", F.selu, lambda x: TF.selu(x), lambda x: _SELU[1] * np_elu(x, _SELU[0]),
     dict(avoid=(0,))),
    ("F.mish", F.mish, lambda x: TF.mish(x), lambda x: x * np.tanh(np.logaddexp(0, x)), {}),
    ("F.hardtanh", F.hardtanh, lambda x: TF.hardtanh(x), lambda x: np.clip(x, -1, 1),
     dict(avoid=(-1, 1))),
    ("F.hardtanh[bounds]", lambda x: F.hardtanh(x, -0.5, 1.5),
     lambda x: TF.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5),
     dict(avoid=(-0.5, 1.5))),
    ("F.relu6", F.relu6, lambda x: TF.relu6(x), lambda x: np.clip(x, 0, 6),
     dict(low=-3, high=8, avoid=(0, 6))),
]
for _name, _op, _top, _ref, _kw in _ACT:
    add(OpInfo(_name, _op, torch_op=_top, ref=_ref, samples=unary(**_kw),
               fixed=(S([-30.0, -1.3, 0.5, 30.0], desc="large"),)))


def np_rms_norm(x, normalized_shape, w=None, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def _rms_family(weight):
    def build(draw, dt):
        s = shape(draw, min_dims=1, empty=False)
        k = draw(st.integers(1, len(s)))
        ns = s[len(s) - k:]
        x = array(draw, s, dt)
        kw = {"normalized_shape": ns, "eps": draw(st.sampled_from((None, 1e-5)))}
        return Sample((x, array(draw, ns, dt)) if weight else (x,), kw)
    return family(build)


add(
    OpInfo("F.rms_norm", lambda x, normalized_shape, eps: F.rms_norm(x, normalized_shape,
                                                                     eps=eps),
           torch_op=lambda x, normalized_shape, eps: TF.rms_norm(x, normalized_shape, eps=eps),
           ref=lambda x, normalized_shape, eps: np_rms_norm(x, normalized_shape, eps=eps),
           samples=_rms_family(False)),
    OpInfo("F.rms_norm[weight]", lambda x, w, normalized_shape, eps: F.rms_norm(
        x, normalized_shape, w, eps),
           torch_op=lambda x, w, normalized_shape, eps: TF.rms_norm(x, normalized_shape, w,
                                                                    eps),
           ref=lambda x, w, normalized_shape, eps: np_rms_norm(x, normalized_shape, w, eps),
           samples=_rms_family(True)),
)

# --- einsum ---------------------------------------------------------------------------------

def _einsum_family(draw, dt):
    """1-3 operands over subscripts a-d: repeated subscripts (diagonals), size-1 dims that
    broadcast, '...' with right-aligned broadcast dims, implicit or explicit output."""
    sizes = {c: draw(st.integers(0 if draw(st.integers(0, 7)) == 0 else 1, 3)) for c in "abcd"}
    n_ops = draw(st.integers(1, 3))
    ell = draw(st.lists(st.integers(1, 3), max_size=2)) if draw(st.booleans()) else None
    terms, shapes = [], []
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from("abcd"), min_size=min(draw(st.integers(0, 4)), 1),
                               max_size=3))
        ones = {c for c in labels if draw(st.integers(0, 5)) == 0}    # broadcast as size 1
        shp = [1 if c in ones else sizes[c] for c in labels]
        term = "".join(labels)
        if ell is not None and draw(st.booleans()):
            e = ell[len(ell) - draw(st.integers(0, len(ell))):]
            e = [1 if draw(st.integers(0, 3)) == 0 else n for n in e]
            at = draw(st.integers(0, len(labels)))
            term, shp = term[:at] + "..." + term[at:], shp[:at] + e + shp[at:]
        terms.append(term)
        shapes.append(tuple(shp))
    eq = ",".join(terms)
    if draw(st.booleans()):                 # explicit output: some used subscripts, any order
        used = sorted({c for t in terms for c in t if c != "."})
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        out = "".join(out)
        if "..." in eq and draw(st.booleans()):
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        eq += "->" + out
    return Sample(tuple(array(draw, s, dt) for s in shapes), {"equation": eq})


def _einsum(*xs, equation):
    return tgx.einsum(equation, *xs)


def _torch_einsum(*xs, equation):
    return torch.einsum(equation, *xs)


def _np_einsum(*xs, equation):
    """numpy's einsum after PyTorch's size-1 broadcasting of named subscripts (numpy does not
    broadcast them): each operand broadcast to the size its subscripts have elsewhere."""
    from tinygradx.ops.einsum import plan
    p = plan(equation, tuple(x.shape for x in xs))
    full = [np.squeeze(x, ax) if ax else x for x, ax in zip(xs, p.squeeze, strict=True)]
    return np.einsum(p.equation, *full)


_EIN_A, _EIN_B = _f64(2, 3), _f64(3, 4, seed=1)
add(OpInfo("tgx.einsum", _einsum, torch_op=_torch_einsum, ref=_np_einsum,
           samples=family(_einsum_family), atol=1e-8,
           fixed=(S(_EIN_A, _EIN_B, equation="ij,jk->ik", desc="matmul"),
                  S(_EIN_A, _EIN_B, equation="ij,jk", desc="implicit"),
                  S(_f64(2, 3), _f64(4, 3, seed=1), equation="Ba,Ca", desc="implicit_upper"),
                  S(_f64(2, 3, 4, 5), _f64(2, 3, 6, 5, seed=1), equation="bhqd,bhkd->bhqk",
                    desc="attention_scores"),
                  S(_f64(3, 3), equation="ii->i", desc="diagonal"),
                  S(_f64(3, 3), equation="ii", desc="trace"),
                  S(_f64(3, 2, 3), _f64(3, seed=1), equation="iji,i->j", desc="diag_two"),
                  S(_f64(3), _f64(4, seed=1), equation="i,j->ij", desc="outer"),
                  S(_f64(2, 3), equation="ij->ji", desc="transpose"),
                  S(_f64(2, 3), equation="ij->", desc="sum_all"),
                  S(_f64(5, 1, 2, 3), _f64(4, 3, 2, seed=1), equation="...ij,...jk->...ik",
                    desc="ellipsis_broadcast"),
                  S(_f64(2, 3), equation="...i->i", desc="ellipsis_summed"),
                  S(_f64(2, 3), _f64(5, 1, 3, seed=1), equation="...i,...i",
                    desc="ellipsis_implicit"),
                  S(_f64(1, 3), _f64(2, 3, seed=1), equation="ij,ij->ij", desc="size1_bcast"),
                  S(_f64(2, 3), _f64(3, 4, seed=1), _f64(4, 2, seed=2), equation="ij,jk,kl->il",
                    desc="three_operands"),
                  S(np.array(2.0), _f64(3), equation=",i->i", desc="0d_operand"),
                  S(_f64(0, 3), _f64(3, 2, seed=1), equation="ij,jk->ik", desc="size0"),
                  S(_ints, _ints.T + 1, equation="ij,jk->ik", desc="int64", only=("torch",)),
                  S(_ints.astype(np.int32), equation="ij->j", desc="int32_sum",
                    only=("torch",)),
                  S(_ints.astype(np.int32), _ints.T.astype(np.int32), equation="ij,jk->ik",
                    desc="int32", only=("torch",)))))

# --- more of torch's names: log1p, expm1, neg, reciprocal and the function forms -----------
add(
    OpInfo("Tensor.log1p", lambda x: x.log1p(), ref=np.log1p, samples=unary(low=-0.9, high=3.0),
           fixed=(_int_float(), S([1e-12, -3e-10, 2e-8], desc="tiny"))),
    OpInfo("Tensor.expm1", lambda x: x.expm1(), ref=np.expm1, samples=unary(),
           fixed=(_int_float(), S([1e-12, -3e-10, 2e-8], desc="tiny"))),
    OpInfo("Tensor.neg[method]", lambda x: x.neg(), ref=np.negative, samples=unary(),
           dtypes=NUMERIC, api=("Tensor.neg",)),
    OpInfo("Tensor.negative", lambda x: x.negative(), ref=np.negative, samples=unary(),
           dtypes=NUMERIC),
    OpInfo("Tensor.reciprocal", lambda x: x.reciprocal(), ref=lambda x: 1 / x,
           samples=unary(avoid=(0,)), dtypes=NUMERIC,
           fixed=(S([True, False], desc="bool", only=("torch",)),)),
    OpInfo("Tensor.addmm", lambda x, a, b, **kw: x.addmm(a, b, **kw),
           torch_op=lambda x, a, b, **kw: x.addmm(a, b, **kw), ref=lambda x, a, b, **kw:
           _np_addmm(x, a, b, **kw), samples=family(lambda d, dt: _addmm_sample(d, dt))),
)


def _addmm_sample(draw, dt):
    n, m, p = (draw(st.integers(0 if i == 1 else 1, 3)) for i in range(3))
    inp = draw(st.sampled_from(((n, p), (p,), (1, p), (n, 1), (), (1, 1))))
    beta, alpha = draw(st.sampled_from(((1, 1), (0.5, -2.0), (0, 1), (0, 1.5))))
    return Sample((array(draw, inp, dt), array(draw, (n, m), dt), array(draw, (m, p), dt)),
                  {"beta": beta, "alpha": alpha})


def _np_addmm(x, a, b, beta=1, alpha=1):
    out = alpha * (a @ b)
    return out if beta == 0 else out + beta * x


def _call_dims(f, x, d0, d1):
    return f(x, d0, d1)


add(*(_twin(n, f"Tensor.{n}") for n in ("log1p", "expm1", "reciprocal", "square")),
    _twin("rsqrt", "Tensor.rsqrt"), _twin("neg", "Tensor.neg[method]"),
    _twin("negative", "Tensor.negative"),
    _twin("addmm", "Tensor.addmm", lambda f, x, a, b, **kw: f(x, a, b, **kw)))


# --- movement: t, swapdims, movedim, select, narrow, unbind, index_select, function forms ---

def _movedim_kw(draw, s):
    nd = len(s)
    k = draw(st.integers(0, nd))
    src = draw(st.permutations(range(nd)))[:k]
    dst = draw(st.permutations(range(nd)))[:k]
    neg = draw(st.booleans())
    src = [d - nd if neg else d for d in src]
    if k == 1 and draw(st.booleans()):
        return {"source": src[0], "destination": dst[0]}
    return {"source": tuple(src), "destination": list(dst)}


def _select_kw(draw, s):
    dim = draw(st.integers(-len(s), len(s) - 1))
    n = s[dim]
    return {"dim": dim, "index": draw(st.integers(-n, n - 1))}


def _narrow_kw(draw, s):
    dim = draw(st.integers(-len(s), len(s) - 1))
    n = s[dim]
    start = draw(st.integers(0, n))
    length = draw(st.integers(0, n - start))
    return {"dim": dim, "start": start - n if start < n and draw(st.booleans()) else start,
            "length": length}


def _index_select_kw(draw, s):
    dim = draw(st.integers(-len(s), len(s) - 1))
    n = s[dim]
    idx = draw(st.lists(st.integers(0, n - 1), max_size=5)) if n else []
    return {"dim": dim, "index": np.asarray(idx, dtype=draw(st.sampled_from((I64, I32))))}


def _np_narrow(x, dim, start, length):
    start = start % x.shape[dim] if start < 0 else start
    return np.take(x, np.arange(start, start + length), axis=dim)


add(
    OpInfo("Tensor.t", lambda x: x.t(), ref=lambda x: x.T, samples=unary(max_dims=2), dtypes=ALL),
    OpInfo("Tensor.swapdims", lambda x, d0, d1: x.swapdims(d0, d1),
           ref=lambda x, d0, d1: np.swapaxes(x, d0, d1), samples=unary(kw=_pair_kw, min_dims=1),
           dtypes=ALL),
    OpInfo("Tensor.movedim", lambda x, source, destination: x.movedim(source, destination),
           ref=lambda x, source, destination: np.moveaxis(x, source, destination),
           samples=unary(kw=_movedim_kw, min_dims=1), dtypes=ALL),
    OpInfo("Tensor.moveaxis", lambda x, source, destination: x.moveaxis(source, destination),
           ref=lambda x, source, destination: np.moveaxis(x, source, destination),
           samples=unary(kw=_movedim_kw, min_dims=1)),
    OpInfo("Tensor.select", lambda x, dim, index: x.select(dim, index),
           ref=lambda x, dim, index: np.take(x, index, axis=dim),
           samples=unary(kw=_select_kw, min_dims=1, empty=False), dtypes=ALL),
    OpInfo("Tensor.narrow", lambda x, dim, start, length: x.narrow(dim, start, length),
           ref=_np_narrow, samples=unary(kw=_narrow_kw, min_dims=1), dtypes=ALL),
    OpInfo("Tensor.unbind", lambda x, dim: x.unbind(dim),
           ref=lambda x, dim: tuple(np.moveaxis(x, dim, 0)),
           samples=unary(kw=_dim_kw, min_dims=1, empty=False), dtypes=ALL),
    OpInfo("Tensor.index_select", lambda x, dim, index: x.index_select(dim, index),
           ref=lambda x, dim, index: np.take(x, np.atleast_1d(index), axis=dim),
           samples=unary(kw=_index_select_kw, min_dims=1), dtypes=ALL,
           fixed=(S(_f64(2, 3), dim=0, index=np.array(1), desc="0d_index"),
                  S(np.array(1.5), dim=0, index=np.array([0]), desc="0d_input",
                    only=("torch", "gradcheck")))),
)
add(_twin("t", "Tensor.t"),
    _twin("transpose", "Tensor.transpose", _call_dims),
    _twin("swapaxes", "Tensor.swapaxes", _call_dims),
    _twin("swapdims", "Tensor.swapdims", _call_dims),
    _twin("movedim", "Tensor.movedim"), _twin("moveaxis", "Tensor.moveaxis"),
    _twin("select", "Tensor.select"), _twin("narrow", "Tensor.narrow"),
    _twin("unbind", "Tensor.unbind"), _twin("index_select", "Tensor.index_select"),
    _twin("reshape", "Tensor.reshape", lambda f, x, shape: f(x, shape)),
    _twin("permute", "Tensor.permute", lambda f, x, dims: f(x, dims)),
    _twin("flatten", "Tensor.flatten", lambda f, x, start, end: f(x, start, end)),
    _twin("squeeze", "Tensor.squeeze"),
    _twin("squeeze", "Tensor.squeeze[dim]", lambda f, x, dim: f(x, dim), "[dim]"),
    _twin("unsqueeze", "Tensor.unsqueeze", lambda f, x, dim: f(x, dim)),
    _twin("split", "Tensor.split", lambda f, x, size, dim: f(x, size, dim)),
    _twin("chunk", "Tensor.chunk", lambda f, x, chunks, dim: f(x, chunks, dim)))


# --- reductions: norm, std/var with correction, prod, all, any as functions ----------------
_INF = math.inf


def _norm_kw(draw, s):
    p = draw(st.sampled_from((2, 1, 3, 2.5, _INF, -_INF, "fro")))
    dim = dims(draw, len(s))
    if p == "fro" and isinstance(dim, tuple) and len(dim) > 2:
        dim = dim[:2]
    return {"p": p, "dim": dim, "keepdim": draw(st.booleans())}


def np_norm(x, p="fro", dim=None, keepdim=False):
    ax, a = _ax(dim, x), np.abs(x)
    if p in ("fro", 2):
        return np.sqrt((a * a).sum(axis=ax, keepdims=keepdim))
    if abs(p) == _INF:
        return (np.max if p > 0 else np.min)(a, axis=ax, keepdims=keepdim)
    return ((a ** p).sum(axis=ax, keepdims=keepdim)) ** (1 / p)


_ZERO_ROW = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
add(
    OpInfo("Tensor.norm", lambda x, p, dim, keepdim: x.norm(p, dim, keepdim), ref=np_norm,
           samples=unary(kw=_norm_kw, avoid=(0,), empty=False),
           # a zero vector: the gradient is 0, as torch's (finite differences see a kink)
           fixed=tuple(S(_ZERO_ROW, p=p, dim=1, keepdim=False, desc=f"zero_row_p{p}",
                         only=("numpy", "torch")) for p in (2, 1, 3, _INF, "fro")) +
           (S(np.zeros((0, 3)), p=2, dim=None, keepdim=False, desc="size0",
              only=("numpy", "torch")),)),
    OpInfo("Tensor.norm[dtype]", lambda x: x.norm(dtype=tgx.float64),
           torch_op=lambda x: x.norm(dtype=torch.float64),
           ref=lambda x: np.sqrt((x.astype(np.float64) ** 2).sum()), samples=unary(),
           dtypes=(F32,), api=("Tensor.norm",)),
    OpInfo("Tensor.std[correction]", lambda x, dim=None, correction=1, keepdim=False:
           x.std(dim, correction=correction, keepdim=keepdim),
           ref=lambda x, dim=None, correction=1, keepdim=False: np.std(
               x, axis=_ax(dim, x), ddof=correction, keepdims=keepdim),
           samples=unary(min_side=3, min_dims=1, empty=False, kw=lambda d, s: dict(
               _red_kw()(d, s), correction=d(st.sampled_from((0, 1, 2))))),
           api=("Tensor.std",)),
)
add(_twin("norm", "Tensor.norm", lambda f, x, p, dim, keepdim: f(x, p, dim, keepdim)),
    _twin("std", "Tensor.std"), _twin("var", "Tensor.var"),
    _twin("std", "Tensor.std[correction]", suffix="[correction]"),
    _twin("var", "Tensor.var[correction]", suffix="[correction]"),
    _twin("prod", "Tensor.prod", lambda f, x, dim=None, keepdim=False: f(x) if dim is None
          else f(x, dim, keepdim)),
    _twin("all", "Tensor.all"), _twin("any", "Tensor.any"),
    _twin("all", "Tensor.all[dim]", suffix="[dim]"),
    _twin("any", "Tensor.any[dim]", suffix="[dim]"))


# --- outer, linspace, logspace ------------------------------------------------------------
def _outer_sample(draw, dt):
    return Sample((array(draw, (draw(st.integers(0, 4)),), dt),
                   array(draw, (draw(st.integers(0, 4)),), dt)))


_SPACE = st.fixed_dictionaries({"start": st.sampled_from((0, -3, 2.5, 1)),
                                "end": st.sampled_from((1, 10, -1.25, 2.5)),
                                "steps": st.integers(0, 9)})
add(
    OpInfo("tgx.outer", tgx.outer, torch_op=lambda a, b: torch.outer(a, b), ref=np.outer,
           samples=family(_outer_sample), dtypes=NUMERIC,
           fixed=(S(_ints[0], _f64(3).astype(np.float32), desc="int64_float32"),)),
    OpInfo("tgx.linspace", lambda start, end, steps: tgx.linspace(start, end, steps),
           torch_op=lambda start, end, steps: torch.linspace(start, end, steps),
           ref=lambda start, end, steps: np.linspace(start, end, steps).astype(np.float32),
           samples=none(_SPACE), grad=False, grad_reason=_CONST),
    OpInfo("tgx.linspace[dtype]", lambda start, end, steps, dtype: tgx.linspace(
        start, end, steps, dtype=dtype),
           torch_op=lambda start, end, steps, dtype: torch.linspace(start, end, steps,
                                                                    dtype=tdtype(dtype)),
           # integer dtypes: exact values here, torch's floating-point ones may be one less
           # where a value is an integer (tests/ops/test_more_torch.py), so fixed cases only
           samples=lambda dtypes: st.sampled_from([
               S(start=0, end=10, steps=5, dtype=I64, desc="int64"),
               S(start=-3, end=2.5, steps=7, dtype=I64, desc="int64_float_end"),
               S(start=5, end=-5, steps=9, dtype=I32, desc="int32_down"),
               S(start=0, end=1, steps=5, dtype=F64, desc="float64")]),
           grad=False, grad_reason=_CONST, api=("tgx.linspace",)),
    OpInfo("tgx.logspace", lambda start, end, steps, base: tgx.logspace(start, end, steps, base),
           torch_op=lambda start, end, steps, base: torch.logspace(start, end, steps, base),
           ref=lambda start, end, steps, base: np.logspace(start, end, steps, base=base).astype(
               np.float32),
           samples=none(_SPACE.map(lambda kw: dict(kw, end=min(kw["end"], 3))).flatmap(
               lambda kw: st.sampled_from((10.0, 2.0, 0.5)).map(lambda b: dict(kw, base=b)))),
           rtol32=1e-5, grad=False, grad_reason=_CONST),
)


# --- F.pad, F.normalize, F.cosine_similarity -------------------------------------------------
_NP_PAD = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
           "circular": "wrap"}


def np_pad(x, pad, mode="constant", value=None):
    for i in range(len(pad) // 2):               # crop first (negative amounts)
        d = x.ndim - 1 - i
        lo, hi = max(-pad[2 * i], 0), x.shape[d] - max(-pad[2 * i + 1], 0)
        x = np.take(x, np.arange(lo, hi), axis=d)
    width = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        width[x.ndim - 1 - i] = (max(pad[2 * i], 0), max(pad[2 * i + 1], 0))
    if mode == "constant":
        return np.pad(x, width, constant_values=np.asarray(value or 0).astype(x.dtype))
    return np.pad(x, width, mode=_NP_PAD[mode])


def _pad_family(mode):
    def build(draw, dt):
        if mode == "constant":
            s = shape(draw, 1, 4)
            k = draw(st.integers(1, len(s)))
            amounts = []
            for i in range(k):
                n = s[len(s) - 1 - i]
                left = draw(st.integers(-n, 3))
                amounts += [left, draw(st.integers(-(n - max(-left, 0)), 3))]
            kw = {"pad": tuple(amounts), "mode": mode}
            if draw(st.booleans()):
                kw["value"] = draw(st.sampled_from((1.5, -2.0, 0.0)))
            return Sample((array(draw, s, dt),), kw)
        k = draw(st.integers(1, 3))
        s = shape(draw, k + 1, k + 2, min_side=2, empty=False)
        amounts = []
        for i in range(k):
            n = s[len(s) - 1 - i]
            top = n - 1 if mode == "reflect" else n if mode == "circular" else 3
            amounts += [draw(st.integers(0, top)), draw(st.integers(0, top))]
        return Sample((array(draw, s, dt),), {"pad": tuple(amounts), "mode": mode})
    return family(build)


def _normalize_kw(draw, s):
    return {"p": draw(st.sampled_from((2.0, 1, 3, _INF))),
            "dim": draw(st.integers(-len(s), len(s) - 1))}


def np_normalize(x, p=2.0, dim=1, eps=1e-12):
    return x / np.maximum(np_norm(x, p, dim, keepdim=True), eps)


def _cos_sample(draw, dt):
    sa, sb = broadcast_shapes(draw, 2, empty=False)
    nd = max(len(sa), len(sb), 1)
    return Sample((array(draw, sa, dt), array(draw, sb, dt)),
                  {"dim": draw(st.integers(-nd, nd - 1))})


def np_cosine_similarity(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    if a.ndim == 0:
        a, b = a.reshape(1), b.reshape(1)
    na = np.maximum(np_norm(a, 2, dim, keepdim=True), eps)
    nb = np.maximum(np_norm(b, 2, dim, keepdim=True), eps)
    return (a / na * (b / nb)).sum(axis=dim).reshape(np.broadcast_shapes(a.shape, b.shape)[
        :dim % a.ndim] + np.broadcast_shapes(a.shape, b.shape)[dim % a.ndim + 1:])


add(*(OpInfo(f"F.pad[{m}]" if m != "constant" else "F.pad",
             lambda x, **kw: F.pad(x, **kw), torch_op=lambda x, **kw: TF.pad(x, **kw),
             ref=np_pad, samples=_pad_family(m), dtypes=NUMERIC if m == "constant" else FLOATS,
             api=("F.pad",)) for m in ("constant", "reflect", "replicate", "circular")),
    OpInfo("F.normalize", lambda x, **kw: F.normalize(x, **kw),
           torch_op=lambda x, **kw: TF.normalize(x, **kw), ref=np_normalize,
           samples=unary(kw=_normalize_kw, min_dims=1, avoid=(0,), empty=False),
           fixed=(S(_ZERO_ROW, p=2.0, dim=1, desc="zero_row", only=("numpy", "torch")),)),
    OpInfo("F.cosine_similarity", lambda a, b, **kw: F.cosine_similarity(a, b, **kw),
           torch_op=lambda a, b, **kw: TF.cosine_similarity(a, b, **kw),
           ref=np_cosine_similarity, samples=family(_cos_sample),
           fixed=(S(_ZERO_ROW, _f64(2, 3), dim=1, desc="zero_row", only=("numpy", "torch")),
                  S(_ZERO_ROW * 1e-9, _f64(2, 3), dim=1, eps=1e-6, desc="below_eps",
                    only=("numpy", "torch")),
                  S(_f64(2, 3).astype(np.float32), _f64(3), dim=-1, desc="f32_f64"))),
)

# --- the everyday surface: //, %, fmod, shifts, function forms, random permutations ---------
_DIV_B = dict(low_b=-2.0, high_b=2.0, avoid_b=(0,))      # no division by (nearly) zero


def _away_from_steps(a, b):
    """a moved so that a / b is at least 0.1 from an integer: the quotient's floor and trunc
    are constant near every sample, so finite differences see no step."""
    if a.dtype.kind != "f":
        return a
    q = a / b
    frac = np.clip(q - np.floor(q), 0.1, 0.9)
    return np.broadcast_to((np.floor(q) + frac) * b, np.broadcast_shapes(a.shape, b.shape)
                           ).astype(a.dtype)


def _quotient_samples(rounding=False):
    """a, b for //, %, fmod and div(rounding_mode=): b at least 0.1 from 0, a / b away from
    integers (a takes the broadcast shape)."""
    def build(draw, dt):
        sa, sb = broadcast_shapes(draw, 2)
        b = array(draw, sb, dt, avoid=(0,))
        a = _away_from_steps(array(draw, sa, dt), b)
        kw = {"mode": draw(st.sampled_from(("floor", "trunc")))} if rounding else {}
        return Sample((a, b), kw)
    return family(build)


def _rounded_div_samples():
    return _quotient_samples(rounding=True)


def _mm_samples(nd_a, nd_b):
    """mm (2, 2), mv (2, 1), dot (1, 1): operands that chain."""
    def build(draw, dt):
        n, k, m = (draw(st.integers(0, 3)) for _ in range(3))
        a = array(draw, (n, k)[2 - nd_a:], dt)
        return Sample((a, array(draw, (k, m)[:nd_b], dt)))
    return family(build)


_NODERIV = "floor_divide has no derivative in torch (backward raises there and here)"
add(
    OpInfo("Tensor.floordiv", lambda a, b: a // b, ref=np.floor_divide, samples=binary(**_DIV_B),
           dtypes=NUMERIC, grad=False, grad_reason=_NODERIV,
           api=("Tensor.//", "Tensor.floor_divide"),
           fixed=(S([5, -5, 7, -7], [2, 2, -3, -3], desc="int_signs"),
                  S([1.0, -1.0, 5.0], [0.1, 0.1, 0.0], desc="float_rounding_and_zero"),
                  S([5.0, -5.0], np.array([2, 2], np.int64), desc="float_int"))),
    OpInfo("Tensor.mod", lambda a, b: a % b, ref=np.remainder, samples=_quotient_samples(),
           dtypes=NUMERIC, api=("Tensor.%", "Tensor.remainder"),
           fixed=(S([5, -5, 7, -7], [2, 2, -3, -3], desc="int_signs"),
                  S([5.5, -5.5, 1.0], [2.0, 2.0, -3.0], desc="float_signs"))),
    OpInfo("tgx.fmod", lambda a, b: tgx.fmod(a, b), torch_op=lambda a, b: torch.fmod(a, b),
           ref=np.fmod, samples=_quotient_samples(), dtypes=NUMERIC,
           api=("tgx.fmod", "Tensor.fmod"),
           fixed=(S([5, -5, 7, -7], [2, 2, -3, -3], desc="int_signs"),)),
    OpInfo("tgx.remainder", lambda a, b: tgx.remainder(a, b),
           torch_op=lambda a, b: torch.remainder(a, b), ref=np.remainder,
           samples=_quotient_samples(), dtypes=NUMERIC),
    OpInfo("tgx.floor_divide", lambda a, b: tgx.floor_divide(a, b),
           torch_op=lambda a, b: torch.floor_divide(a, b), ref=np.floor_divide,
           samples=binary(**_DIV_B), dtypes=NUMERIC, grad=False, grad_reason=_NODERIV),
    OpInfo("Tensor.div[rounding_mode]", lambda a, b, mode: a.div(b, rounding_mode=mode),
           ref=lambda a, b, mode: (np.floor_divide(a, b) if mode == "floor" else
                                   np.trunc(a / b).astype(np.result_type(a, b))),
           samples=_rounded_div_samples(), dtypes=NUMERIC,
           api=("tgx.div", "tgx.divide", "Tensor.divide"),
           fixed=(S([7, -7, 7, -7], [2, 2, -2, -2], mode="trunc", desc="int_trunc"),
                  S([7, -7, 7, -7], [2, 2, -2, -2], mode="floor", desc="int_floor"))),
)
# Python scalars on either side
# (torch has no derivative of `number % tensor` either)
add(*(OpInfo(f"Tensor.{n}[scalar]", f, ref=f,
             samples=scalar_operand((2.5, -3, 2), avoid=(0, 2, -2)), dtypes=NUMERIC,
             grad=n == "mod", grad_reason=_NODERIV,
             api=(f"Tensor.__{n}__",))
      for n, f in (("floordiv", lambda x, s: x // s), ("rfloordiv", lambda x, s: s // x),
                   ("mod", lambda x, s: x % s), ("rmod", lambda x, s: s % x))))
add(
    OpInfo("Tensor.lshift", lambda a, b: a << b, ref=np.left_shift,
           samples=binary(low=0, high=3), dtypes=(I64, I32), grad=False, grad_reason=_NOGRAD,
           api=("Tensor.<<", "tgx.bitwise_left_shift")),
    OpInfo("Tensor.rshift", lambda a, b: a >> b, ref=np.right_shift,
           samples=binary(low=0, high=3), dtypes=(I64, I32), grad=False, grad_reason=_NOGRAD,
           api=("Tensor.>>", "tgx.bitwise_right_shift")),
)
# torch's function forms of comparisons, logic, bit operations and arithmetic
for _n, _f in (("gt", np.greater), ("lt", np.less), ("ge", np.greater_equal),
               ("le", np.less_equal), ("ne", np.not_equal), ("greater", np.greater),
               ("less", np.less), ("greater_equal", np.greater_equal),
               ("less_equal", np.less_equal), ("not_equal", np.not_equal),
               ("logical_and", np.logical_and), ("logical_or", np.logical_or),
               ("logical_xor", np.logical_xor)):
    add(OpInfo(f"tgx.{_n}", (lambda n: lambda a, b: getattr(tgx, n)(a, b))(_n),
               torch_op=(lambda n: lambda a, b: getattr(torch, n)(a, b))(_n), ref=_f,
               samples=binary(), dtypes=(F64, I64, BOOL), grad=False, grad_reason=_NOGRAD))
for _n, _f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
               ("bitwise_xor", np.bitwise_xor)):
    add(OpInfo(f"tgx.{_n}", (lambda n: lambda a, b: getattr(tgx, n)(a, b))(_n),
               torch_op=(lambda n: lambda a, b: getattr(torch, n)(a, b))(_n), ref=_f,
               samples=binary(), dtypes=(BOOL, I64, I32), grad=False, grad_reason=_NOGRAD))
add(OpInfo("tgx.logical_not", lambda a: tgx.logical_not(a), torch_op=lambda a: torch.logical_not(a),
           ref=np.logical_not, samples=unary(), dtypes=(F64, I64, BOOL), grad=False,
           grad_reason=_NOGRAD),
    OpInfo("tgx.bitwise_not", lambda a: tgx.bitwise_not(a), torch_op=lambda a: torch.bitwise_not(a),
           ref=np.invert, samples=unary(), dtypes=(BOOL, I64), grad=False, grad_reason=_NOGRAD))
for _n, _f in (("add", np.add), ("sub", np.subtract), ("subtract", np.subtract),
               ("mul", np.multiply), ("multiply", np.multiply), ("true_divide", np.true_divide)):
    add(OpInfo(f"tgx.{_n}", (lambda n: lambda a, b: getattr(tgx, n)(a, b))(_n),
               torch_op=(lambda n: lambda a, b: getattr(torch, n)(a, b))(_n), ref=_f,
               samples=binary(**_DIV_B) if _n == "true_divide" else binary()))
add(OpInfo("Tensor.multiply", lambda a, b: a.multiply(b), ref=np.multiply, samples=binary()),
    OpInfo("Tensor.subtract", lambda a, b: a.subtract(b), ref=np.subtract, samples=binary()),
    OpInfo("Tensor.true_divide", lambda a, b: a.true_divide(b), ref=np.true_divide,
           samples=binary(**_DIV_B)),
    OpInfo("tgx.erf", lambda x: tgx.erf(x), torch_op=lambda x: torch.erf(x), samples=unary(),
           dtypes=(F64, F32, I64)),
    OpInfo("tgx.relu", lambda x: tgx.relu(x), torch_op=lambda x: torch.relu(x),
           ref=lambda x: np.maximum(x, 0), samples=unary(avoid=(0,))),
    OpInfo("tgx.clone", lambda x: tgx.clone(x), torch_op=lambda x: torch.clone(x),
           ref=np.copy, samples=unary(), dtypes=ALL),
    OpInfo("tgx.amax", lambda x: tgx.amax(x), torch_op=lambda x: torch.amax(x), ref=np.max,
           samples=unary(min_side=1, empty=False)),
    OpInfo("tgx.amin", lambda x: tgx.amin(x, -1), torch_op=lambda x: torch.amin(x, -1),
           ref=lambda x: np.min(x, -1), samples=unary(min_dims=1, empty=False)),
    OpInfo("tgx.logsumexp", lambda x: tgx.logsumexp(x, -1),
           torch_op=lambda x: torch.logsumexp(x, -1), samples=unary(min_dims=1)),
    OpInfo("tgx.masked_fill", lambda x, mask, value: tgx.masked_fill(x, mask, value),
           torch_op=lambda x, mask, value: torch.masked_fill(x, mask, value),
           samples=unary(kw=_masked_fill_kw, min_dims=1)),
    OpInfo("tgx.clamp_min", lambda x: tgx.clamp_min(x, 0.5),
           torch_op=lambda x: torch.clamp_min(x, 0.5), samples=unary(avoid=(0.5,))),
    OpInfo("tgx.clamp_max", lambda x: tgx.clamp_max(x, 0.5),
           torch_op=lambda x: torch.clamp_max(x, 0.5), samples=unary(avoid=(0.5,))),
    OpInfo("tgx.mm", lambda a, b: tgx.mm(a, b), torch_op=lambda a, b: torch.mm(a, b),
           ref=np.matmul, samples=_mm_samples(2, 2)),
    OpInfo("tgx.mv", lambda a, b: tgx.mv(a, b), torch_op=lambda a, b: torch.mv(a, b),
           ref=np.matmul, samples=_mm_samples(2, 1)),
    OpInfo("tgx.dot", lambda a, b: tgx.dot(a, b), torch_op=lambda a, b: torch.dot(a, b),
           ref=np.dot, samples=_mm_samples(1, 1)),
    OpInfo("tgx.broadcast_to", lambda x: tgx.broadcast_to(x, (2,) + x.shape),
           torch_op=lambda x: torch.broadcast_to(x, (2,) + x.shape),
           ref=lambda x: np.broadcast_to(x, (2,) + x.shape), samples=unary()),
    OpInfo("tgx.ravel", lambda x: tgx.ravel(x), torch_op=lambda x: torch.ravel(x),
           ref=np.ravel, samples=unary(), dtypes=ALL),
    OpInfo("tgx.count_nonzero", lambda x: tgx.count_nonzero(x),
           torch_op=lambda x: torch.count_nonzero(x), ref=np.count_nonzero, samples=unary(),
           dtypes=(F64, I64, BOOL), grad=False, grad_reason=_NOGRAD),
    OpInfo("tgx.argwhere", lambda x: tgx.argwhere(x), torch_op=lambda x: torch.argwhere(x),
           ref=np.argwhere, samples=unary(), dtypes=(I64, BOOL), grad=False,
           grad_reason=_NOGRAD),
    OpInfo("tgx.where[condition]", lambda c: tgx.where(c)[-1] if c.ndim else tgx.where(c)[0],
           torch_op=lambda c: torch.where(c)[-1] if c.ndim else torch.where(c)[0],
           samples=unary(), dtypes=(BOOL,), grad=False, grad_reason=_NOGRAD,
           api=("tgx.where",)),
    OpInfo("tgx.randperm", lambda n: tgx.randperm(n), torch_op=lambda n: torch.randperm(n),
           samples=none(st.fixed_dictionaries({"n": st.integers(0, 6)})), values=False,
           torch_reason=_RANDOM, grad=False, grad_reason=_CONST),
    OpInfo("tgx.bernoulli", lambda p: tgx.bernoulli(p), torch_op=lambda p: torch.bernoulli(p),
           samples=unary(low=0.0, high=1.0), values=False, grad=False, grad_reason=_CONST),
    OpInfo("tgx.randint_like", lambda x: tgx.randint_like(x, 5),
           torch_op=lambda x: torch.randint_like(x, 5), samples=unary(), dtypes=(F64, I64),
           values=False, grad=False, grad_reason=_CONST),
    OpInfo("Tensor.masked_fill[input_up_to_mask]",
           lambda x, mask, value: x.masked_fill(mask, value),
           samples=unary(kw=lambda d, s: {"mask": np.ones((2,) + s, bool), "value": 1.5}),
           fixed=(S(_f64(3), mask=np.array([[True, False, False], [False, False, True]]),
                    value=1.0, desc="row_to_matrix"),
                  S(_f64(2, 1), mask=np.array([[True, False, True]]), value=-1e9,
                    desc="both_broadcast")),
           api=("Tensor.masked_fill",)),
)

# convolution, pooling, interpolate and torch's recurrent / attention / Transformer modules
import opinfo_layers  # noqa: E402, F401  (adds its entries to OPS)
# the op families beyond the Transformer's: trigonometric, special, float-aware, scans, ...
import opinfo_ops  # noqa: E402, F401  (adds its entries to OPS)
# normalization, dropout, sequences and the remaining nn modules
import opinfo_norm  # noqa: E402, F401  (adds its entries to OPS)
# every loss of torch.nn.functional and torch.nn
import opinfo_losses  # noqa: E402, F401  (adds its entries to OPS)
# conv3d and transposed convolutions, pooling with indices and its inverse, interpolate's other
# modes, F.pad's crops, unfold/fold, the shuffles
import opinfo_conv  # noqa: E402, F401  (adds its entries to OPS)

# ------------------------------------------------------------------------------------------
# names in docs/api.md's op sections that are not ops (the coverage test skips only these)
# ------------------------------------------------------------------------------------------
NOT_OPS = {
    # classes and dtypes
    "tgx.Tensor", "tgx.Function", "tgx.GradcheckError", "tgx.OpError",
    "tgx.float16", "tgx.float32", "tgx.float64", "tgx.int32", "tgx.int64", "tgx.uint8",
    "tgx.bool_", "tgx.uint16", "tgx.uint32", "tgx.uint64",
    # autograd machinery, switches and context managers (tests/autograd/test_engine.py and friends)
    "tgx.grad", "tgx.no_grad", "tgx.enable_grad", "tgx.is_grad_enabled", "tgx.detect_anomaly",
    "tgx.manual_seed", "tgx.get_rng_state", "tgx.set_rng_state", "tgx.default_rng",
    "tgx.gradcheck", "tgx.trace",
    "tgx.gradgradcheck",
    "tgx.profile",
    # Tensor attributes and accessors: no computation
    "Tensor.shape", "Tensor.ndim", "Tensor.dtype", "Tensor.size", "Tensor.numel", "Tensor.dim",
    "Tensor.is_leaf", "Tensor.grad_fn", "Tensor.numpy", "Tensor.item", "Tensor.tolist",
    # Tensor autograd bookkeeping and in-place reset
    "Tensor.backward", "Tensor.requires_grad_", "Tensor.retain_grad", "Tensor.register_hook",
    "Tensor.register_post_accumulate_grad_hook", "Tensor.retains_grad", "Tensor.zero_",
    # the device (one: the CPU), layout queries, dtype names, predicates and counts
    "tgx.device", "Tensor.device", "Tensor.is_cuda", "Tensor.is_contiguous", "tgx.is_tensor",
    "tgx.numel", "tgx.int8", "tgx.int16", "tgx.long", "tgx.float", "tgx.double", "tgx.half",
    "tgx.int", "tgx.short", "tgx.bool",
    # switches, dtype limits and the default dtype, Size (tests/ops/test_more_torch.py)
    "tgx.set_grad_enabled", "tgx.inference_mode", "tgx.finfo", "tgx.iinfo",
    "tgx.get_default_dtype", "tgx.set_default_dtype", "tgx.Size",
    # predicates with a Python bool result (tests/ops/test_more_torch.py, against torch)
    "tgx.allclose", "tgx.equal",
    # a generator, a dtype predicate, saving (tests/tensor/test_torch_idioms.py)
    "tgx.Generator", "tgx.is_floating_point", "tgx.save", "tgx.load",
} | opinfo_ops.NOT_OPS


def work_order():
    """The known discrepancies, grouped by defect class: `python tests/opinfo.py`."""
    groups = {}
    for e in OPS:
        for s in e.fixed:
            for check, reason in s.xfail.items():
                cls, repro = reason.split(": ", 1)
                groups.setdefault(cls, {}).setdefault((e.name, s.desc, repro), []).append(check)
    lines = []
    for cls, items in groups.items():
        lines.append(f"{cls} ({len(items)})")
        lines += [f"  {name} [{desc}] ({', '.join(c)}): {repro}"
                  for (name, desc, repro), c in items.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(f"{len(OPS)} entries")
    print(work_order())


# ------------------------------------------------------------------------------------------
# kinks: samples where a first derivative jumps have no second derivative
# ------------------------------------------------------------------------------------------

def _near(a, b, tol=1e-3):
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    return bool(np.any(np.abs(a - b) < tol))


def _tie(sample):
    return len(sample.inputs) == 2 and _near(*sample.inputs)


def _loss_kink(sample):
    d = np.abs(np.asarray(sample.inputs[0], np.float64) - sample.kwargs["target"])
    edge = sample.kwargs.get("beta", sample.kwargs.get("delta"))
    return _near(d, 0) or (edge is not None and _near(d, edge))


for _e in OPS:
    if _e.name.split("[")[0] in ("Tensor.maximum", "Tensor.minimum", "tgx.maximum",
                                 "tgx.minimum") or _e.name in ("tgx.max[other]",
                                                               "tgx.min[other]"):
        _e.kink = _tie
    elif _e.name.split("[")[0] in ("F.l1_loss", "F.smooth_l1_loss", "F.huber_loss",
                                   "nn.L1Loss", "nn.SmoothL1Loss", "nn.HuberLoss"):
        _e.kink = _loss_kink

