"""Optional compiled kernels: one loop over memory where numpy needs a chain of calls.

numpy runs LayerNorm as about ten calls (mean, subtract, variance, square root, scale, shift),
each a pass over memory with ~1 us of call cost of its own. On a Transformer's activations
that is ten passes; on the one row of a generated token it is ~12 us of mostly call cost for
128 numbers. When numba is installed (`pip install tinygradx[fast]`), the few ops below run as
one compiled loop per row instead. Nothing else changes: each kernel has the numpy code in
fused.py as its fallback and reference, and tests/test_kernels.py holds the two equal to
float32 rounding. Sums run in float64 here (numpy sums float32 pairwise in float32), so the
kernels round no worse than the numpy path.

    TINYGRADX_KERNELS=0     numpy only, even with numba installed (CI runs both ways)

numba is imported and each kernel compiled on first use (cached on disk next to this file
when the directory is writable), so `import tinygradx` does not pay for it. The fast-math
flags allow reordering sums (so loops vectorise) but not assuming finite values: NaN and inf
propagate as in numpy.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

ENABLED = (os.environ.get("TINYGRADX_KERNELS", "1") != "0"
           and importlib.util.find_spec("numba") is not None)
_compiled = {}
_FLAGS = {"reassoc", "contract", "nsz", "arcp"}      # no "nnan"/"ninf": NaN and inf stay exact


def set_enabled(flag):
    """Use the compiled kernels (when numba is installed) or numpy only; returns the old setting."""
    global ENABLED
    old = ENABLED
    ENABLED = bool(flag) and importlib.util.find_spec("numba") is not None
    return old


def _kernel(fn):
    """fn compiled by numba on first use; None (the caller's numpy path) if it cannot be."""
    global ENABLED
    k = _compiled.get(fn)
    if k is None:
        if not ENABLED:
            return None
        try:
            import numba
            k = numba.njit(cache=True, nogil=True, fastmath=_FLAGS, error_model="numpy")(fn)
        except Exception:        # an import or setup failure of the optional package: numpy
            ENABLED = False
            return None
        _compiled[fn] = k
    return k


# ------------------------------------------------------------------------------------------
# LayerNorm over the last axis of a (rows, n) array
# ------------------------------------------------------------------------------------------

def _ln_forward(x, w, b, eps, y, xhat, rstd):
    rows, n = x.shape
    for i in range(rows):
        s = 0.0
        for j in range(n):
            s += x[i, j]
        mean = s / n
        v = 0.0
        for j in range(n):
            d = x[i, j] - mean
            v += d * d
        r = 1.0 / np.sqrt(v / n + eps)                  # biased variance, eps inside the root
        rstd[i, 0] = r
        for j in range(n):
            h = (x[i, j] - mean) * r
            xhat[i, j] = h                              # xhat may be y itself (no backward)
            y[i, j] = h * w[j] + b[j]


def layer_norm(x2, w, b, eps, keep):
    """y, xhat (None unless keep), rstd (rows, 1) of x2 (rows, n); w, b (n,) or None."""
    k = _kernel(_ln_forward)
    if k is None:
        return None
    n = x2.shape[1]
    w = np.ones(n, x2.dtype) if w is None else w
    b = np.zeros(n, x2.dtype) if b is None else b
    y = np.empty(x2.shape, x2.dtype)
    xhat = np.empty(x2.shape, x2.dtype) if keep else y
    rstd = np.empty((x2.shape[0], 1), x2.dtype)
    k(x2, w, b, eps, y, xhat, rstd)
    return y, (xhat if keep else None), rstd


def _ln_backward(g, xhat, rstd, w, dx, gw, gb):
    rows, n = g.shape
    for i in range(rows):
        a = 0.0
        c = 0.0
        for j in range(n):
            gh = g[i, j] * w[j]
            a += gh
            c += gh * xhat[i, j]
        a /= n                                          # mean(g w)
        c /= n                                          # mean(g w xhat)
        r = rstd[i, 0]
        for j in range(n):
            dx[i, j] = r * (g[i, j] * w[j] - a - xhat[i, j] * c)
            gw[j] += g[i, j] * xhat[i, j]
            gb[j] += g[i, j]


def layer_norm_backward(g2, xhat, rstd, w):
    """dx (rows, n), dw (n,), db (n,) of LayerNorm given g2 (rows, n); w (n,) or None."""
    k = _kernel(_ln_backward)
    if k is None:
        return None
    n = g2.shape[1]
    w = np.ones(n, g2.dtype) if w is None else w
    dx = np.empty(g2.shape, g2.dtype)
    gw, gb = np.zeros(n), np.zeros(n)                   # float64 column sums
    k(g2, xhat, rstd, w, dx, gw, gb)
    return dx, gw.astype(g2.dtype), gb.astype(g2.dtype)


# ------------------------------------------------------------------------------------------
# element-wise chains without a transcendental function (numpy's exp and tanh are vectorised;
# numba's are not, so those stay with numpy)
# ------------------------------------------------------------------------------------------

def _gelu_tanh_inner(x, u, c1, c3):
    for i in range(x.size):
        xi = x[i]
        u[i] = (xi * xi * c3 + c1) * xi                 # sqrt(2/pi) (x + 0.044715 x^3)


def _gelu_tanh_outer(x, t, y, half, one):
    for i in range(x.size):
        y[i] = (t[i] + one) * x[i] * half


def gelu_tanh(x, t, y):
    """t <- tanh(sqrt(2/pi) (x + 0.044715 x^3)), y <- 0.5 x (1 + t); all 1-D of one dtype;
    False when off. Two compiled loops around numpy's tanh (three passes instead of eight)."""
    inner, outer = _kernel(_gelu_tanh_inner), _kernel(_gelu_tanh_outer)
    if inner is None or outer is None:
        return False
    f = x.dtype.type
    c1 = np.sqrt(2.0 / np.pi)
    inner(x, t, f(c1), f(0.044715 * c1))
    np.tanh(t, out=t)
    outer(x, t, y, f(0.5), f(1))
    return True


def _gelu_tanh_grad(x, t, g, d, half, one, c1, c3):
    for i in range(x.size):
        xi, ti = x[i], t[i]
        du = c1 + c3 * xi * xi                          # sqrt(2/pi) (1 + 3*0.044715 x^2)
        d[i] = g[i] * (half * (one + ti) + half * xi * (one - ti * ti) * du)


def gelu_tanh_grad(x, t, g, d):
    """d <- GELU (tanh form)'s dx from x, t = tanh(...) and g, all 1-D of one dtype; False
    when off."""
    k = _kernel(_gelu_tanh_grad)
    if k is None:
        return False
    f = x.dtype.type
    c1 = np.sqrt(2.0 / np.pi)
    k(x, t, g, d, f(0.5), f(1), f(c1), f(3 * 0.044715 * c1))
    return True


def _softmax_grad(g, s, out):
    rows, n = g.shape
    for i in range(rows):
        dot = 0.0
        for j in range(n):
            dot += g[i, j] * s[i, j]
        for j in range(n):
            out[i, j] = s[i, j] * (g[i, j] - dot)


def softmax_grad(g, s, out):
    """out <- s * (g - rowsum(g s)) for 2-D g, s, out (out may be g); False when off."""
    k = _kernel(_softmax_grad)
    if k is None:
        return False
    k(g, s, out)
    return True


def _adam(p, g, m, v, b1, c1, b2, c2, shrink, eps_s, step_size):
    for i in range(p.size):
        gi = g[i]
        mi = m[i] * b1 + gi * c1
        vi = v[i] * b2 + gi * gi * c2
        m[i] = mi
        v[i] = vi
        p[i] = p[i] * shrink + mi / (np.sqrt(vi) + eps_s) * step_size


def adam(p, g, m, v, beta1, beta2, shrink, eps_s, step_size):
    """One Adam step on 1-D arrays in place (the coefficients as optim._adam_update computes
    them: shrink = 1 - lr wd for AdamW, else 1); False when off."""
    k = _kernel(_adam)
    if k is None:
        return False
    f = p.dtype.type
    k(p, g, m, v, f(beta1), f(1 - beta1), f(beta2), f(1 - beta2), f(shrink), f(eps_s),
      f(step_size))
    return True


# ------------------------------------------------------------------------------------------
# softmax over the last axis of (rows, n), around numpy's exp: the row max and the shift in
# one loop, then np.exp, then the row sum and the division in another
# ------------------------------------------------------------------------------------------

def _softmax_shift(x, out):
    rows, n = x.shape
    for i in range(rows):
        top = x[i, 0]
        bad = 0
        for j in range(n):
            top = max(top, x[i, j])
            bad += x[i, j] != x[i, j]                   # a NaN makes the row max NaN
        if bad:
            top = np.nan
        elif top == -np.inf:
            top = 0                                     # a fully masked row: zeros, not NaN
        for j in range(n):
            out[i, j] = x[i, j] - top


def _softmax_normalize(out):
    rows, n = out.shape
    for i in range(rows):
        total = 0.0
        for j in range(n):
            total += out[i, j]
        if total == 0:
            total = 1.0                                 # a fully masked row stays zeros
        for j in range(n):
            out[i, j] = out[i, j] / total


def softmax(x, out):
    """out <- softmax(x) over the last axis of 2-D x, out (out may be x); False when off or
    when a row is empty (the caller's numpy path handles it)."""
    if x.shape[1] == 0:
        return False
    shift, norm = _kernel(_softmax_shift), _kernel(_softmax_normalize)
    if shift is None or norm is None:
        return False
    shift(x, out)
    np.exp(out, out=out)
    norm(out)
    return True
