"""Optional compiled kernels: one loop over memory where numpy needs a chain of calls.

numpy runs LayerNorm as about ten calls (mean, subtract, variance, square root, scale, shift),
each a pass over memory with ~1 us of call cost of its own. On a Transformer's activations
that is ten passes; on the one row of a generated token it is ~12 us of mostly call cost for
128 numbers. With numba installed (`pip install tinygradx[fast]`), the few ops below run as
one compiled loop per row instead. Nothing else changes: each kernel is a version of a
reference written in numpy (core/rows.py, ops/fused.py, ops/rowwise.py, optim/adam.py),
registered beside it with the declaration of what it takes (fast/dispatch.py), and
tests/fast/test_differential.py holds each to its reference within its declared bound. Sums
run in float64 here (numpy sums float32 pairwise in float32), so the kernels round no worse
than the reference.

    TINYGRADX_KERNELS=0        numpy only, even with numba installed (CI runs both ways)
    TINYGRADX_CACHE_DIR=path   where the compiled module is kept (default ~/.cache/tinygradx)

The loops below are plain Python. On first use a child process (`python -m
tinygradx.fast.kernels_build`) compiles them ahead of time with numba into one small extension
module for this machine's CPU, float32 and float64 each, and caches it; this process then
imports that module and never numba itself, whose LLVM would add ~100 MB of resident memory.
The fast-math flags allow reordering sums (so loops vectorise) but not assuming finite
values: NaN and inf propagate as in numpy. The compiled functions trust their arguments'
layout: the dispatcher calls the functions below only for arrays their declarations take
(C-ordered, of one dtype, outputs writable and apart from the inputs), and `_call` refuses a
non-C-ordered argument before a loop runs, so a declaration that let one through fails loudly.

The first build says so in one line on the "tinygradx" logger (`process.announce`: stderr
unless logging is configured; what it builds, with which C compiler), since the step that
triggers it waits ~20 s; a build that fails turns the kernels off for the process, keeps the
reason in `BUILD_ERROR` and says so once.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import platform
import subprocess
import sys
import threading

import numpy as np

from . import parallel, process
from ._erf import CLAMP_F, PF, QF

ENABLED = (process.env("TINYGRADX_KERNELS", True)
           and importlib.util.find_spec("numba") is not None)
FLAGS = {"reassoc", "contract", "nsz", "arcp"}      # no "nnan"/"ninf": NaN and inf stay exact
BUILD_ERROR = None      # why the compiled module could not be had, when it could not
_module = None
_compiled = {}          # (loop, dtype) -> (the compiled function, its array arguments)
_LOAD_LOCK = threading.Lock()


def set_enabled(flag):
    """Use the compiled kernels (when numba is installed) or numpy only; returns the old setting."""
    global ENABLED
    old = ENABLED
    ENABLED = bool(flag) and importlib.util.find_spec("numba") is not None
    return old


def cache_dir():
    """Where the compiled module lives: $TINYGRADX_CACHE_DIR, else ~/.cache/tinygradx."""
    path = process.env("TINYGRADX_CACHE_DIR", None)
    if path:
        return path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tinygradx")


def module_name():
    """tgx_kernels_<hash>: the loops' source, the builder, Python, numpy and the CPU (the module
    is compiled for this CPU's instruction set) all go into the name."""
    h = hashlib.sha256()
    for fn in (*HELPERS, *LOOPS):
        h.update(inspect.getsource(fn).encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for built_from in ("kernels_build.py", "pool.c"):     # pool.c: built beside the module
        with open(os.path.join(here, built_from), "rb") as f:
            h.update(f.read())
    h.update(repr((CLAMP_F, PF, QF)).encode())            # constants the erf GELU loop bakes in
    h.update(f"{sys.version} {np.__version__} {platform.machine()} {_cpu()}".encode())
    return f"tgx_kernels_{h.hexdigest()[:16]}"


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            return "".join(line for line in f.read().splitlines(True)[:30]
                           if line.startswith(("model name", "flags")))
    except OSError:
        return platform.processor()


def ready():
    """Whether the compiled kernels are on and built (building them now, once, if needed;
    the build also compiles fast/pool.py's pool.c beside them). Once loaded, no lock: the
    dispatcher asks this on every call of a compiled version."""
    if _module is not None:
        return ENABLED
    return ENABLED and _load() is not None


def _load():
    """The compiled module, built by a child process if it is not cached yet; None if it
    cannot be had (the kernels are then off for this process). Two row blocks may ask at
    once: the lock makes one build, and the other waits for it."""
    with _LOAD_LOCK:
        return _load_locked()


def _load_locked():
    global _module, ENABLED, BUILD_ERROR
    if _module is None:
        name, where = module_name(), cache_dir()
        try:
            path = _built(where, name)
            if path is None:
                process.announce("kernels-build", build_notice(where))
                _build(where, name)
                path = _built(where, name)
                if path is None:
                    raise RuntimeError(f"the build wrote no module {name} into {where}")
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            _module = mod
        except Exception as e:   # no compiler setup, an unwritable cache, a failed build
            ENABLED = False
            BUILD_ERROR = _reason(e)
            process.announce("kernels-failed", f"the compiled kernels are off for this process "
                             f"({BUILD_ERROR}); tinygradx's numpy code runs instead, with the "
                             f"same results")
            return None
    return _module


def compiler():
    """The C compiler the build uses (numba's, from Python's build configuration), as named."""
    import sysconfig
    return (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]


def build_notice(where):
    """What the first build says, once: what it builds, with what, and what happens without."""
    return (f"building the compiled kernels for this CPU, once (about 20 s, cached in {where}): "
            f"LayerNorm, softmax, GELU, masked_fill, the embedding's scatter and AdamW loops "
            f"with numba's ahead-of-time compiler, and the thread pool (pool.c) with the C "
            f"compiler {compiler()}; without numba or a C "
            f"compiler tinygradx runs its numpy code, with the same results "
            f"(TINYGRADX_KERNELS=0 skips the build)")


def _build(where, name):
    """Compile the loops into module `name` in `where` in a child process (kernels_build.py)."""
    subprocess.run([sys.executable, "-m", "tinygradx.fast.kernels_build", where, name],
                   check=True, capture_output=True, text=True, timeout=900)


def _reason(e):
    """One line saying why the compiled module could not be had."""
    if isinstance(e, subprocess.CalledProcessError):
        lines = [ln for ln in (e.stderr or "").strip().splitlines() if ln.strip()]
        return f"the build exited with {e.returncode}: {lines[-1] if lines else 'no output'}"
    if isinstance(e, subprocess.TimeoutExpired):
        return f"the build took over {e.timeout:.0f} s"
    return f"{type(e).__name__}: {e}"


def cached():
    """The path of this machine's compiled module in the cache, or None if not built yet."""
    return _built(cache_dir(), module_name())


def _built(where, name):
    """The path of the compiled module `name` in `where`, or None."""
    try:
        found = [f for f in os.listdir(where) if f.startswith(name + ".")]
    except OSError:
        return None
    return os.path.join(where, found[0]) if found else None


def _call(fn, dtype, *args):
    """Run loop `fn` compiled for `dtype` on args. The dispatcher (dispatch.py) calls the
    functions below only for arrays their declarations take (C-ordered, the float arrays of
    one dtype, a mask bool and ids int64, outputs writable and apart from the inputs): a call
    that is not one of those is a bug of the caller, refused here before the loop, which
    trusts its arguments' layout, runs."""
    found = _compiled.get((fn, dtype))
    if found is None:
        if _load() is None:
            raise RuntimeError(f"kernels.{fn.__name__[1:]}: the compiled kernels are off "
                               f"({BUILD_ERROR or 'switched off'})")
        compiled = getattr(_module, f"{fn.__name__[1:]}_{'f4' if dtype == np.float32 else 'f8'}")
        arrays = tuple(i for i, kind in enumerate(LOOPS[fn].split()) if kind[0] in "awmi")
        found = _compiled[fn, dtype] = compiled, arrays
    compiled, arrays = found
    for i in arrays:                          # (the loop's array arguments, from LOOPS)
        if not args[i].flags.c_contiguous:
            raise ValueError(f"kernels.{fn.__name__[1:]}: an argument of shape "
                             f"{args[i].shape} is not C-ordered (the dispatcher checks this)")
    compiled(*args)
    return True


# ------------------------------------------------------------------------------------------
# LayerNorm over the last axis of a (rows, n) array
# ------------------------------------------------------------------------------------------

def _row_stats(x, i, eps):
    """(mean, r, inv) of row i in float64: the row normalises as (x * inv - mean) * r, with
    inv = 1 unless its squares overflow (a float64 row of 1e200), where inv = 1/max|x| and
    mean, r are those of the scaled row, as core/rows.py's normalize does."""
    n = x.shape[1]
    total = 0.0
    for j in range(n):
        total += x[i, j]
    mean = total / n
    v = 0.0
    for j in range(n):
        d = x[i, j] - mean
        v += d * d
    if np.isfinite(v):
        return mean, 1.0 / np.sqrt(v / n + eps), 1.0
    top = 0.0
    for j in range(n):
        top = max(top, abs(x[i, j]))
    if not np.isfinite(top) or top == 0.0:          # inf or NaN in the row: NaN, as numpy
        return mean, 1.0 / np.sqrt(v / n + eps), 1.0
    inv = 1.0 / top
    total = 0.0
    for j in range(n):
        total += x[i, j] * inv
    mean = total / n
    v = 0.0
    for j in range(n):
        d = x[i, j] * inv - mean
        v += d * d
    return mean, 1.0 / np.sqrt(v / n + eps * inv * inv), inv


def _ln_forward(x, w, b, eps, y):
    rows, n = x.shape
    for i in range(rows):
        mean, r, inv = _row_stats(x, i, eps)           # biased variance, eps inside the root
        for j in range(n):
            y[i, j] = (x[i, j] * inv - mean) * r * w[j] + b[j]


def layer_norm(x2, w, b, eps):
    """y of LayerNorm over the rows of x2 (rows, n); w, b (n,) or None; all C-ordered, of one
    dtype (the dispatcher's declaration)."""
    n = x2.shape[1]
    w = np.ones(n, x2.dtype) if w is None else w
    b = np.zeros(n, x2.dtype) if b is None else b
    y = np.empty(x2.shape, x2.dtype)
    # (768, 128): 65 us on one thread, 95 us split; (2048, 384): 401 -> 271 us split
    parallel.rows(lambda x_, y_: _call(_ln_forward, x2.dtype, x_, w, b, float(eps), y_),
                  x2, y, min_elements=parallel.MIN_KERNEL_ELEMENTS)
    return y


def _ln_backward(g, x, w, eps, dx, gw, gb):
    rows, n = g.shape
    for i in range(rows):
        mean, r, inv = _row_stats(x, i, eps)           # recomputed: the row is in cache
        a = 0.0
        c = 0.0
        for j in range(n):
            h = (x[i, j] * inv - mean) * r             # xhat
            gh = g[i, j] * w[j]
            a += gh
            c += gh * h
        a /= n                                          # mean(g w)
        c /= n                                          # mean(g w xhat)
        rstd = r * inv
        for j in range(n):
            h = (x[i, j] * inv - mean) * r
            dx[i, j] = rstd * (g[i, j] * w[j] - a - h * c)
            gw[j] += g[i, j] * h
            gb[j] += g[i, j]


def layer_norm_backward(g2, x2, w, eps):
    """dx (rows, n), dw (n,), db (n,) of LayerNorm given g2 and x2 (rows, n); w (n,) or None;
    all C-ordered, of one dtype. The column sums of dw and db in float64."""
    n = g2.shape[1]
    w = np.ones(n, g2.dtype) if w is None else w
    dx = np.empty(g2.shape, g2.dtype)
    gw, gb = np.zeros(n), np.zeros(n)                   # float64 column sums
    _call(_ln_backward, g2.dtype, g2, x2, w, float(eps), dx, gw, gb)
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
    """t <- tanh(sqrt(2/pi) (x + 0.044715 x^3)), y <- 0.5 x (1 + t); all 1-D of one dtype.
    Two compiled loops around numpy's tanh (three passes instead of eight)."""
    f = x.dtype.type
    c1 = np.sqrt(2.0 / np.pi)
    _call(_gelu_tanh_inner, x.dtype, x, t, f(c1), f(0.044715 * c1))
    np.tanh(t, out=t)
    _call(_gelu_tanh_outer, x.dtype, x, t, y, f(0.5), f(1))


def _gelu_tanh_grad(x, t, g, d, half, one, c1, c3):
    for i in range(x.size):
        xi, ti = x[i], t[i]
        du = c1 + c3 * xi * xi                          # sqrt(2/pi) (1 + 3*0.044715 x^2)
        d[i] = g[i] * (half * (one + ti) + half * xi * (one - ti * ti) * du)


def gelu_tanh_grad(x, t, g, d):
    """d <- GELU (tanh form)'s dx from x, t = tanh(...) and g, all 1-D of one dtype."""
    f = x.dtype.type
    c1 = np.sqrt(2.0 / np.pi)
    _call(_gelu_tanh_grad, x.dtype, x, t, g, d, f(0.5), f(1), f(c1), f(3 * 0.044715 * c1))


# The exact GELU, x Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2. _erf.py's float32 erf is a
# rational function, no transcendental, so one compiled loop vectorises it where numpy needs
# ~24 passes; it is evaluated in float64 and rounded once, then the float32 steps of
# fused.gelu_forward's numpy path follow, so both give the same numbers.

def _gelu_erf(x, cdf, y, r, half, one):
    for i in range(x.size):
        v = float(x[i] * r)                             # x / sqrt(2) in x's dtype, then f8
        if v > CLAMP_F:                                 # (NaN passes both tests unchanged)
            v = CLAMP_F
        elif v < -CLAMP_F:
            v = -CLAMP_F
        t = v * v
        p = PF[0] + t * (PF[1] + t * (PF[2] + t * (PF[3] + t * (PF[4] + t * PF[5]))))
        q = QF[0] + t * (QF[1] + t * (QF[2] + t * (QF[3] + t * (QF[4] + t * (QF[5]
                                                                          + t * QF[6])))))
        cdf[i] = v * p / q                              # erf, rounded once to x's dtype
        c = (cdf[i] + one) * half
        cdf[i] = c
        y[i] = x[i] * c


def gelu_erf(x, cdf, y):
    """cdf <- Phi(x), y <- x Phi(x) for 1-D float32 arrays (the rational is float32's erf:
    float64 keeps _erf.py's full-precision path)."""
    f = np.float32
    _call(_gelu_erf, x.dtype, x, cdf, y, f(1 / np.sqrt(2)), f(0.5), f(1))


def _gelu_erf_grad_inner(x, d, m):
    for i in range(x.size):
        d[i] = x[i] * x[i] * m                          # -x^2 / 2


def _gelu_erf_grad_outer(x, cdf, g, d, c):
    for i in range(x.size):
        d[i] = (d[i] * c * x[i] + cdf[i]) * g[i]         # g (Phi(x) + x phi(x))


def gelu_erf_grad(x, cdf, g, d):
    """d <- the exact GELU's dx from x, the kept Phi(x) and g, all 1-D of one dtype: two
    compiled loops around numpy's exp (three passes instead of seven)."""
    f = x.dtype.type
    _call(_gelu_erf_grad_inner, x.dtype, x, d, f(-0.5))
    np.exp(d, out=d)
    _call(_gelu_erf_grad_outer, x.dtype, x, cdf, g, d, f(1 / np.sqrt(2 * np.pi)))


def _row_dot(g, s, i):
    dot = 0.0
    for j in range(g.shape[1]):
        dot += g[i, j] * s[i, j]
    return dot                                          # sum_j g_ij s_ij, in float64


def _softmax_grad(g, s, out):
    for i in range(g.shape[0]):
        dot = _row_dot(g, s, i)
        for j in range(g.shape[1]):
            out[i, j] = s[i, j] * (g[i, j] - dot)


def _softmax_grad_inplace(g, s):
    for i in range(g.shape[0]):
        dot = _row_dot(g, s, i)
        for j in range(g.shape[1]):
            g[i, j] = s[i, j] * (g[i, j] - dot)


def softmax_grad(g, s, out, inplace=False):
    """out <- s * (g - rowsum(g s)) for 2-D g, s, out; inplace=True when out is g (its own
    loop: with two aliased arguments the compiled loop does not vectorise, (3072, 64) 144 us
    against 60)."""
    if inplace:
        _call(_softmax_grad_inplace, g.dtype, g, s)
    else:
        _call(_softmax_grad, g.dtype, g, s, out)


def _adam(p, g, m, v, b1, c1, b2, c2, shrink, eps_s, step_size):
    for i in range(p.size):
        gi = g[i]
        mi = m[i] * b1 + gi * c1
        vi = v[i] * b2 + gi * gi * c2
        m[i] = mi
        v[i] = vi
        p[i] = p[i] * shrink + mi / (np.sqrt(vi) + eps_s) * step_size


def adam(p, g, m, v, beta1, beta2, shrink, eps_s, step_size):
    """One Adam step on 1-D arrays in place (the coefficients as optim.Adam._adam_kernel
    computes them: shrink = 1 - lr wd for AdamW, else 1)."""
    f = p.dtype.type
    _call(_adam, p.dtype, p, g, m, v, f(beta1), f(1 - beta1), f(beta2), f(1 - beta2),
                 f(shrink), f(eps_s), f(step_size))


# ------------------------------------------------------------------------------------------
# softmax over the last axis of (rows, n), around numpy's exp: the row max and the shift in
# one loop, then np.exp, then the row sum and the division in another
# ------------------------------------------------------------------------------------------

def _row_top(x, i):
    top = x[i, 0]
    bad = 0
    for j in range(x.shape[1]):
        top = max(top, x[i, j])
        bad += x[i, j] != x[i, j]                       # a NaN makes the row max NaN
    if bad:
        top = np.nan
    elif top == -np.inf:
        top = 0                                         # a fully masked row: zeros, not NaN
    return top


def _softmax_shift(x, out):
    for i in range(x.shape[0]):
        top = _row_top(x, i)
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] - top


def _softmax_shift_inplace(x):
    for i in range(x.shape[0]):
        top = _row_top(x, i)
        for j in range(x.shape[1]):
            x[i, j] = x[i, j] - top


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


def softmax(x, out, inplace=False):
    """out <- softmax(x) over the last axis of 2-D x, out; inplace=True when out is x (the
    shift's own loop, as softmax_grad's); rows of at least one value."""
    if inplace:
        _call(_softmax_shift_inplace, x.dtype, x)
    else:
        _call(_softmax_shift, x.dtype, x, out)
    np.exp(out, out=out)
    _call(_softmax_normalize, x.dtype, out)


# ------------------------------------------------------------------------------------------
# masked_fill: a value where a mask holds, the mask repeated over the leading dims (a causal
# (T, T) mask over (B, heads, T, T) scores); numpy's copy and masked write over a broadcast
# mask take ~4x as long as this one pass
# ------------------------------------------------------------------------------------------

def _masked_fill(x, m, value, out):
    outer, inner = x.shape
    for o in range(outer):
        for i in range(inner):
            out[o, i] = value if m[i] else x[o, i]


def masked_fill(x, mask, value):
    """x with `value` (0-d, of x's dtype) where `mask` holds: x C-ordered, mask a C-ordered
    bool array of x's trailing shape (the declaration's)."""
    inner = mask.size
    out = np.empty(x.shape, x.dtype)
    _call(_masked_fill, x.dtype, x.reshape(x.size // inner, inner), mask.reshape(inner),
          value.item(), out.reshape(x.size // inner, inner))
    return out


# ------------------------------------------------------------------------------------------
# the embedding's scatter: each row of g added into the table row its id names, in order
# ------------------------------------------------------------------------------------------

def _scatter_rows(g, ids, out):
    n, c = g.shape
    for i in range(n):
        r = ids[i]
        for j in range(c):
            out[r, j] += g[i, j]


def scatter_rows(g2, ids, rows):
    """A (rows, C) table of zeros with each row g2[i] added into row ids[i], one add at a time
    in the order of i, as np.add.at adds them (the same bits): g2 C-ordered, ids int64 in
    [0, rows) (the declaration's)."""
    out = np.zeros((rows, g2.shape[1]), g2.dtype)
    _call(_scatter_rows, g2.dtype, g2, ids, out)
    return out


# Row helpers that two loops share: the build compiles them first, inlined into the loops
# that call them (the two-array and the in-place loops differ only in where they write).
HELPERS = (_row_dot, _row_top, _row_stats)

# The loops and their arguments, for the ahead-of-time build (kernels_build.py): "a" an array
# of the kernel's dtype with that many dims, "s" a scalar of it, "d" a float64 scalar, "w1" a
# 1-D float64 array, "m1" a 1-D bool array, "i1" a 1-D int64 array.
LOOPS = {
    _ln_forward: "a2 a1 a1 d a2",
    _ln_backward: "a2 a2 a1 d a2 w1 w1",
    _gelu_tanh_inner: "a1 a1 s s",
    _gelu_tanh_outer: "a1 a1 a1 s s",
    _gelu_tanh_grad: "a1 a1 a1 a1 s s s s",
    _gelu_erf: "a1 a1 a1 s s s",
    _gelu_erf_grad_inner: "a1 a1 s",
    _gelu_erf_grad_outer: "a1 a1 a1 a1 s",
    _softmax_grad: "a2 a2 a2",
    _softmax_grad_inplace: "a2 a2",
    _adam: "a1 a1 a1 a1 s s s s s s s",
    _softmax_shift: "a2 a2",
    _softmax_shift_inplace: "a2",
    _softmax_normalize: "a2",
    _masked_fill: "a2 m1 s a2",
    _scatter_rows: "a2 i1 a2",
}
