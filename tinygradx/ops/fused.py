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
The in-place kernels above are each op's `@fast_backward`, beside the op: the ordinary walk
runs them instead of the formula (same values, fewer passes over memory), and the tests hold
the two equal.

The core's softmax and layer_norm (tinygradx/core/rows.py, re-exported here) get their speed
here too: a compiled forward row loop each (`fastpath.use_kernel`) and a fast backward each.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import fastpath
from ..core.elementwise import as_float
from ..core.node import Function, OpError
from ..core.rows import LayerNorm, Softmax  # noqa: F401  (the core's ops, made fast here)
from ..core.xp import ARRAYS, of
from ..fast import kernels, parallel, pool
from ..fast._erf import erf as _erf
from . import rowwise


# ------------------------------------------------------------------------------------------
# GELU, with in-place kernels
# ------------------------------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_forward(x, approximate):
    """(GELU(x), what backward keeps): tanh(...) for approximate='tanh', else Phi(x)."""
    if approximate == "tanh":
        t = np.empty(x.shape, dtype=x.dtype)
        y = np.empty(x.shape, dtype=x.dtype)
        flat = _flat(x), t.reshape(-1), y.reshape(-1)               # 1-D views (t, y: fresh)
        if x.size >= pool.MIN_GELU and pool.gelu_tanh(*flat):        # one pass, both cores
            return y, t
        # (two loops around np.tanh, ~0.6 ns per element: split from MIN_KERNEL_ELEMENTS as the
        # other kernels. Alone (768, 512) took 237 us on one thread and 195 us split, but in a
        # GPT CPU config step the split cost more than it saved: its Python threads park the
        # C pool, whose next GEMM then waits for a thread to wake; the step unsplit was 0.930
        # of the step split, 60 alternating rounds)
        if not (kernels.ENABLED and parallel.rows(kernels.gelu_tanh, *flat,
                                                  min_elements=parallel.MIN_KERNEL_ELEMENTS)):
            parallel.rows(_gelu_tanh, *flat)
        return y, t
    if kernels.ENABLED and x.dtype == np.float32:           # one compiled pass, both cores
        cdf, y = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
        if parallel.rows(kernels.gelu_erf, _flat(x), cdf.reshape(-1), y.reshape(-1),
                         min_elements=parallel.MIN_KERNEL_ELEMENTS):
            return y, cdf
    cdf = np.asarray(_erf(x * (1 / math.sqrt(2))))
    cdf += 1
    cdf *= 0.5                                   # Phi(x)
    return x * cdf, cdf


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
        if self.approximate == "tanh":
            t = xp.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI)
            du = (x * x * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
            return g * ((t + 1) * 0.5 + x * (1 - t * t) * du * 0.5)
        u = x * (1 / math.sqrt(2))
        cdf = ((_erf(u) if xp is ARRAYS else u.erf()) + 1) * 0.5
        pdf = xp.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + x * pdf)


@fastpath.fast_backward(Gelu)
def _gelu_backward(ctx, g):
    """Gelu's derivative in one compiled pass, or in place with the kept Phi(x) / tanh."""
    x = ctx.x
    if ctx.approximate == "tanh":
        d = np.empty(x.shape, dtype=x.dtype)
        flat = _flat(x), _flat(ctx.t), _flat(g), d.reshape(-1)     # 1-D views (d: fresh)
        if x.size >= pool.MIN_GELU and pool.gelu_tanh_grad(*flat):
            return d                                 # one pass, both cores
        if kernels.ENABLED and g.dtype == x.dtype and parallel.rows(
                kernels.gelu_tanh_grad, *flat, min_elements=parallel.MIN_KERNEL_ELEMENTS):
            return d                                 # one compiled pass
        du = np.empty(x.shape, dtype=x.dtype)
        parallel.rows(_gelu_tanh_grad, *flat, du.reshape(-1))
        return d
    d = np.empty(x.shape, dtype=x.dtype)
    if kernels.ENABLED and g.dtype == x.dtype and parallel.rows(
            kernels.gelu_erf_grad, _flat(x), _flat(ctx.cdf), _flat(g), d.reshape(-1),
            min_elements=parallel.MIN_KERNEL_ELEMENTS):
        return d                                     # three passes around numpy's exp
    pdf = np.multiply(x, x, out=d)
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= 1 / math.sqrt(2 * math.pi)       # phi(x)
    pdf *= x
    pdf += ctx.cdf                           # Phi(x) + x phi(x)
    pdf *= g
    return pdf


def _flat(a):
    """A 1-D C-order view (a copy only when `a` is not contiguous)."""
    return a.reshape(-1)


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

@fastpath.fast_backward(Softmax)
def _softmax_backward(ctx, g):
    """Softmax's derivative row by row into one new array (a compiled pass when available)."""
    if ctx.out.ndim == 0 or ctx.out.size == 0:
        return None
    return rowwise.softmax_grad(g, ctx.out, np.empty_like(ctx.out), ctx.dim)


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
        shifted = x - rowwise.safe_max(x, dim)
        total = np.exp(shifted).sum(axis=dim, keepdims=True)
        if not np.all(total):
            total[total == 0] = 1
        shifted -= np.log(total)
        self.out = shifted
        return shifted

    def backward(self, g):
        xp = of(g)
        return g - xp.exp(self.out) * xp.sum(g, self.dim, True)


def _layer_norm_kernel(x2, w, b, eps, keep):
    """core.LayerNorm's forward row loop: one compiled pass per row (None: numpy's)."""
    return kernels.layer_norm(x2, w, b, eps, keep) if kernels.ENABLED else None


fastpath.use_kernel("layer_norm", _layer_norm_kernel)


@fastpath.fast_backward(LayerNorm)
def _layer_norm_backward(ctx, g):
    """LayerNorm's derivative from the kept xhat and rstd: one compiled pass per row, or
    in-place numpy with the row sums as BLAS matrix-vector products."""
    xhat, w = ctx.xhat, ctx.w
    n = xhat.shape[1]
    g2 = g.reshape(-1, n)
    done = kernels.layer_norm_backward(g2, xhat, ctx.rstd, w) if kernels.ENABLED else None
    if done is not None:
        out, gw, gb = done
        need = ctx.needs_input_grad
        gw = gw.reshape(ctx.wshape) if ctx.affine[0] and need[1] else None
        gb = gb.reshape(ctx.wshape) if ctx.affine[1] and need[-1] else None
        return (out.reshape(ctx.shape),) + (gw,) * ctx.affine[0] + (gb,) * ctx.affine[1]
    gx = g2 * xhat                                          # temporary, reused below
    gw = gx.sum(axis=0) if ctx.affine[0] and ctx.needs_input_grad[1] else None
    gb = g2.sum(axis=0) if ctx.affine[1] and ctx.needs_input_grad[-1] else None
    if w is not None:
        mean_gh = (g2 @ w) / n                              # mean(g*w) per row
        mean_ghx = (gx @ w) / n                             # mean(g*w*xhat) per row
        out = g2 * w
    else:
        mean_gh, mean_ghx = g2.mean(axis=1), gx.mean(axis=1)
        out = g2.copy()
    out -= mean_gh[:, None]
    np.multiply(xhat, mean_ghx[:, None], out=gx)
    out -= gx
    out *= ctx.rstd
    grads = [out.reshape(ctx.shape)]
    if ctx.affine[0]:
        grads.append(None if gw is None else gw.reshape(ctx.wshape))
    if ctx.affine[1]:
        grads.append(None if gb is None else gb.reshape(ctx.wshape))
    return tuple(grads)


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
        logp = x - rowwise.safe_max(x, 1)
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


@fastpath.fast_backward(CrossEntropy)
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
