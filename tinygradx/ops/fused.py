"""The fused ops beyond the core's: one graph node each, with a hand-derived backward written
for speed (the core's softmax and layer_norm, tinygradx/core/rows.py, are fused ops too).

Each is the same function as a chain of primitives, with fewer passes over memory
and fewer temporaries: in-place numpy calls, the softmax run inside the score buffer, gradients
written in the layout of the inputs. Each docstring names its composite twin in functional.py
(the same math built from primitives), and the tests hold the pair equal in value and gradient.

Each op's `backward` is its one derivative, the formula in operators and `xp` functions that
runs on arrays and, under create_graph=True, on Tensors (differentiated again). It reads only the
saved input or output and constants (masks, targets, shapes), recomputing the rest:
  Gelu: g * (Phi(x) + x phi(x)) from erf and exp of x (the tanh form from tanh of x).
  LogSoftmax: g - exp(y) * sum(g), from the output.
  CrossEntropy: (softmax(x) - q) * g per row, q the (smoothed) target distribution.
  Dropout: g times the mask drawn in forward (a constant).
Faster versions (a compiled loop, the C pool, in-place numpy) are registered beside each op
with the declaration of what they take (`dispatch.register`, fast/dispatch.py): GELU's
forward as versions of `gelu_forward`, and faster array forms of the derivatives, which the
speed layer's walk runs instead of the formula; tests/fast/test_differential.py holds each to
the formula. (The core's softmax and layer_norm get theirs in ops/versions.py.)
"""
from __future__ import annotations

import math

import numpy as np

from ..core.elementwise import as_float
from ..core.fastpath import dispatched
from ..core.node import Function, OpError
from ..core.rows import F32, LayerNorm, Softmax, safe_max, working  # noqa: F401  (re-exported)
from ..core.xp import ARRAYS, of
from ..fast import kernels, parallel, pool
from ..fast.dispatch import FLOAT32, Version, register
from ..fast._erf import erf as _erf


# ------------------------------------------------------------------------------------------
# GELU, with in-place kernels
# ------------------------------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@dispatched
def gelu_forward(x, approximate):
    """(GELU(x), what its faster derivatives read): for approximate='tanh' (y, t) with t the
    tanh(...), else (y, Phi(x)). float16 is computed in float32, y rounded once."""
    if x.dtype == np.float16:
        y, kept = gelu_forward(x.astype(F32), approximate)
        return y.astype(np.float16), kept
    if approximate == "tanh":
        t = np.empty(x.shape, dtype=x.dtype)
        y = np.empty(x.shape, dtype=x.dtype)
        _gelu_tanh(_flat(x), t.reshape(-1), y.reshape(-1))
        return y, t
    cdf = np.asarray(_erf(x * (1 / math.sqrt(2))))
    cdf += 1
    cdf *= 0.5                                   # Phi(x)
    return np.asarray(x * cdf), cdf              # asarray: a 0-d product is a numpy scalar


def _gelu_pool(x, approximate):
    """The tanh GELU in one pass on the C pool's threads (pool.c's tanh)."""
    t, y = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    pool.gelu_tanh(x.reshape(-1), t.reshape(-1), y.reshape(-1))
    return y, t


def _gelu_compiled(x, approximate):
    """Two compiled loops around numpy's tanh, or the exact GELU's one float32 loop (its erf a
    rational function: one pass where numpy needs ~24)."""
    a, y = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    fn = kernels.gelu_tanh if approximate == "tanh" else kernels.gelu_erf
    # (split from MIN_KERNEL_ELEMENTS, as the other one-pass kernels: in a GPT CPU config step
    # a tanh split from 256k cost more than it saved, its Python threads parking the C pool)
    parallel.rows(fn, x.reshape(-1), a.reshape(-1), y.reshape(-1),
                  min_elements=parallel.MIN_KERNEL_ELEMENTS)
    return y, a


register("gelu_forward", Version(
    "pool", _gelu_pool, backend="pool", dtypes=FLOAT32, arrays=(0,), min_size=pool.MIN_GELU,
    in_blocks=False, accepts=lambda x, approximate: approximate == "tanh", ulp=4))
register("gelu_forward", Version(
    "compiled", _gelu_compiled, backend="kernels", arrays=(0,), ulp=4,
    accepts=lambda x, approximate: approximate == "tanh" or x.dtype == np.float32))


class Gelu(Function):
    """GELU(x) = x*Phi(x); approximate='tanh' uses 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))).

    Written with in-place numpy calls: GELU runs on the widest activation of a Transformer
    (B, T, 4*d_model), so every avoided temporary is a pass over memory saved.
    Composite twin: `F.gelu_composite`.
    """
    fresh_grads = True
    def forward(self, x, approximate="none"):
        self.x, self.approximate = x, approximate
        y, kept = gelu_forward(x, approximate)
        if approximate == "tanh":
            self.t = kept                                    # tanh(...), for backward
        else:
            self.cdf = kept                                  # Phi(x), for backward
        return y

    def backward(self, g):
        xp, x = of(g), self.x
        if x.dtype == np.float16:            # in float32; the walk rounds dx once
            x, g = xp.astype(x, F32), xp.astype(g, F32)
        if self.approximate == "tanh":
            t = xp.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI)
            du = (x * x * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
            return g * ((t + 1) * 0.5 + x * (1 - t * t) * du * 0.5)
        u = x * (1 / math.sqrt(2))
        cdf = ((_erf(u) if xp is ARRAYS else u.erf()) + 1) * 0.5
        pdf = xp.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + x * pdf)


def _gelu_tanh_ok(ctx, g):
    return ctx.approximate == "tanh" and g.dtype == ctx.x.dtype == ctx.t.dtype


def _gelu_backward_pool(ctx, g):
    """The tanh GELU's derivative in one pass on the C pool's threads."""
    d = np.empty(ctx.x.shape, dtype=ctx.x.dtype)
    pool.gelu_tanh_grad(_flat(ctx.x), _flat(ctx.t), _flat(g), d.reshape(-1))
    return d


def _gelu_backward_compiled(ctx, g):
    """The derivative in one compiled pass (tanh), or two around numpy's exp (exact)."""
    x = ctx.x
    d = np.empty(x.shape, dtype=x.dtype)
    fn, kept = ((kernels.gelu_tanh_grad, ctx.t) if ctx.approximate == "tanh"
                else (kernels.gelu_erf_grad, ctx.cdf))
    parallel.rows(fn, _flat(x), _flat(kept), _flat(g), d.reshape(-1),
                  min_elements=parallel.MIN_KERNEL_ELEMENTS)
    return d


def _gelu_backward_numpy(ctx, g):
    """The derivative in place, from the kept Phi(x) or tanh(...): fewer passes than the
    formula, which recomputes them."""
    x = ctx.x
    d = np.empty(x.shape, dtype=x.dtype)
    if ctx.approximate == "tanh":
        du = np.empty(x.shape, dtype=x.dtype)
        _gelu_tanh_grad(_flat(x), _flat(ctx.t), _flat(g), d.reshape(-1), du.reshape(-1))
        return d
    pdf = np.multiply(x, x, out=d)
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= 1 / math.sqrt(2 * math.pi)       # phi(x)
    pdf *= x
    pdf += ctx.cdf                           # Phi(x) + x phi(x)
    pdf *= g
    return pdf


def _same_dtype(ctx, g):
    kept = ctx.t if ctx.approximate == "tanh" else ctx.cdf
    return g.dtype == ctx.x.dtype == kept.dtype


register(Gelu, Version("pool", _gelu_backward_pool, backend="pool", dtypes=FLOAT32,
                       in_blocks=False, ulp=16, accepts=lambda ctx, g: _gelu_tanh_ok(ctx, g)
                       and g.size >= pool.MIN_GELU))
register(Gelu, Version("compiled", _gelu_backward_compiled, backend="kernels", ulp=16,
                       accepts=_same_dtype))
register(Gelu, Version("numpy", _gelu_backward_numpy, ulp=16, accepts=_same_dtype))


def _flat(a):
    """A 1-D C-ordered view of a (a copy when a is not C-ordered, or is a broadcast view)."""
    return np.ascontiguousarray(a).reshape(-1)


def _gelu_tanh(x, t, y):
    """y = 0.5 x (1 + t), t = tanh(sqrt(2/pi) (x + 0.044715 x^3)); in place on t and y."""
    np.multiply(x, x, out=t)
    t *= 0.044715 * _SQRT_2_OVER_PI
    t += _SQRT_2_OVER_PI
    t *= x                                   # sqrt(2/pi) * (x + 0.044715 x^3)
    np.tanh(t, out=t)
    np.add(t, 1, out=y)
    y *= x
    y *= 0.5


def _gelu_tanh_grad(x, t, g, d, du):
    """d = g * (0.5 (1 + t) + 0.5 x (1 - t^2) du), du = sqrt(2/pi) (1 + 3*0.044715 x^2)."""
    np.multiply(x, x, out=du)
    du *= 3 * 0.044715 * _SQRT_2_OVER_PI
    du += _SQRT_2_OVER_PI
    np.multiply(t, t, out=d)
    np.subtract(1, d, out=d)                 # 1 - t^2
    d *= du
    d *= x
    d += t
    d += 1
    d *= 0.5
    d *= g

# ------------------------------------------------------------------------------------------
# the speed versions of the core's softmax and layer_norm; log_softmax, losses, dropout
# ------------------------------------------------------------------------------------------

class LogSoftmax(Function):
    """y = x - logsumexp(x); dx = g - softmax(x) * sum(g). A fully -inf row gives -inf, grad 0.

    Composite twin: `F.log_softmax_composite`.
    """
    op_name = "log_softmax"

    def forward(self, x, dim=-1):
        x = as_float(x)
        self.dim = dim
        if x.size == 0:
            self.out = np.empty_like(x)
            return self.out
        if x.dtype == np.float16:            # in float32, rounded once (as core/rows.py)
            self.out = LogSoftmax.forward(self, x.astype(F32), dim).astype(np.float16)
            return self.out
        shifted = x - safe_max(x, dim)
        total = np.exp(shifted).sum(axis=dim, keepdims=True)
        if not np.all(total):
            total[total == 0] = 1
        shifted -= np.log(total)
        self.out = shifted
        return shifted

    def backward(self, g):
        xp = of(g)
        return g - xp.exp(self.out) * xp.sum(g, self.dim, True)


class CrossEntropy(Function):
    """Mean/sum/none of -log softmax(x)[y] over (N, C) logits with class-index targets.

    With label smoothing e the target distribution is q = (1-e)*onehot(y) + e/C, and
    dx = (softmax(x) - q) * g_row; rows whose target is ignore_index get zero loss and grad;
    'mean' divides by the number of rows that are not ignored (as PyTorch: NaN when there are
    none, every target ignored or no rows at all, with a zero gradient).
    Composite twin: `F.cross_entropy_composite`.
    """
    fresh_grads = True
    op_name = "cross_entropy"

    def forward(self, x, target, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        n, c = x.shape
        self.keep = target != ignore_index
        safe_t = np.where(self.keep, target, 0)
        if safe_t.size and (safe_t.min() < 0 or safe_t.max() >= c):
            bad = safe_t[(safe_t < 0) | (safe_t >= c)][0]
            raise OpError(f"target {bad} is out of range for {c} classes (logits {x.shape}); "
                          f"valid targets are 0..{c - 1} or ignore_index={ignore_index}")
        logp = x - safe_max(x, 1)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        rows = np.arange(n)
        nll = -logp[rows, safe_t]
        if label_smoothing:
            nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
        nll = nll * self.keep
        self.x, self.logp, self.t = x, logp, safe_t
        self.eps, self.reduction = label_smoothing, reduction
        self.count = int(self.keep.sum())        # 0: the mean of no terms is NaN (torch)
        if reduction == "mean":
            total = nll.sum()
            return np.asarray(total / self.count if self.count else math.nan, dtype=x.dtype)
        if reduction == "sum":
            return np.asarray(nll.sum(), dtype=x.dtype)
        return nll.astype(x.dtype, copy=False)

    def backward(self, g):
        x = self.x
        n, c = x.shape
        q = np.full((n, c), self.eps / c, dtype=x.dtype)   # the target distribution
        q[np.arange(n), self.t] += 1 - self.eps
        keep = self.keep.astype(x.dtype)
        if self.reduction == "mean" and self.count:     # count 0: every row's keep is 0
            keep /= self.count
        scale = g * keep                                   # (n,): g is 0-d or (n,)
        return (of(g).run(Softmax, x, dim=1) - q) * scale.reshape(n, 1)


def _cross_entropy_backward(ctx, g):
    """The same (softmax(x) - q) * g, in place of the saved log-probabilities."""
    n, c = ctx.logp.shape
    grad = np.exp(ctx.logp)            # softmax, in place of the saved log-probs
    if ctx.eps:
        grad -= ctx.eps / c
    grad[np.arange(n), ctx.t] -= 1 - ctx.eps
    if ctx.reduction == "none":
        scale = g * ctx.keep
    else:
        scale = ctx.keep * (g / max(ctx.count, 1) if ctx.reduction == "mean" else g)
    grad *= scale.astype(grad.dtype, copy=False)[:, None]
    return grad


register(CrossEntropy, Version("numpy", _cross_entropy_backward, ulp=4,
                               accepts=lambda ctx, g: g.dtype == ctx.logp.dtype))


def dropout_scale(rng, shape, p, dtype):
    """Inverted dropout's mask: 1/(1-p) where an element is kept, 0 where it is dropped, each
    dropped with probability p on its own; drawn from generator `rng` (numpy's).

    Each element gets 32 random bits and is dropped when they fall below p * 2**32 (p exact to
    2**-33). numpy draws a float32 uniform at ~3 ns, 32 raw bits at ~1.2, and a Transformer
    drops millions of elements a step: the encoder-decoder benchmark's 3.2 million took its
    step to 0.958 of the one with a float32 uniform each (bench/bench_ab.py dropout).
    Dropout and attention's dropout draw through here, so the same seed gives both the same
    mask.
    """
    n = math.prod(shape)
    bits = rng.bit_generator.random_raw((n + 1) // 2).view(np.uint32)[:n].reshape(shape)
    cut = round(p * 2.0 ** 32)
    keep = bits >= np.uint32(cut) if cut < 2 ** 32 else np.zeros(shape, bool)
    return keep * np.asarray(1.0 / (1.0 - p) if p < 1 else 0.0, dtype=dtype)


class Dropout(Function):
    """Inverted dropout: y = x * mask / (1-p); dx = g * mask / (1-p).

    Composite twin: `F.dropout_composite` (given the same mask).
    """
    def forward(self, x, p=0.5, rng=None):
        self.scale = dropout_scale(rng, x.shape, p, x.dtype)
        return x * self.scale

    def backward(self, g):
        return g * self.scale
