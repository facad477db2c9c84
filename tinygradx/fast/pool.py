"""Both cores for matrix products and the work between them: one pool of threads for numpy's
OpenBLAS and for tinygradx.

Where a GPT step's time goes beyond its large GEMMs is in products too small for OpenBLAS to
thread: attention multiplies 48 (64, 32) matrices at a time, six stacks per layer, each on
one core while the other waits. PyTorch runs them on both. Python threads cannot help: a
hand-off costs 20-50 us against 50-200 us of work (parallel.py). So pool.c keeps a few C
threads that take a task in about a microsecond. Each call below is a version of a function
of the core or ops/, registered there with its declaration (fast/dispatch.py) and called only
for what the declaration takes:

- `matmul(a, b)`: a stack of small products, its batch cut in blocks, one block per thread
  (each product still one cblas_?gemm call of numpy's OpenBLAS, so each is computed as by
  numpy's own loop);
- `pair(a1, b1, a2, b2)`: two large products at once, one per thread, OpenBLAS on one thread
  meanwhile: a layer's backward dX = g W and dW = g^T X (the same FLOPs each; side by side
  they skip the hand-offs and the shared packing of two threaded GEMMs). Each is the GEMM
  numpy computes on one thread; against OpenBLAS's split over two threads an edge column may
  round differently in the last bit, as numpy's own results do between thread counts.
- `attention(q, k, v, mask, scale, out, draw=None)` and `attention_backward(...)`: float32
  attention head by head, a block of heads per thread, each head's products (numpy's cblas_sgemm
  calls) and its softmax in one go while its scores sit in the core's cache, instead of
  whole-stack passes over every head's scores (pool.c says how; ops/attention.py's versions).
- `gelu_tanh(x, t, y)` and `gelu_tanh_grad(x, t, g, d)`: the tanh GELU in float32 in one pass
  (with pool.c's own tanh) cut between the threads (ops/fused.py's versions).
- `softmax(x2, out2)` and `softmax_grad(g2, s2, out2)`: the last-axis softmax in float32, rows
  cut between the threads, with attention's row loops (ops/versions.py).
- `linear(x, w, b)`: x W^T + b as one GEMM into rows that hold b (the bias costs no pass of
  its own), and `pair(..., column_sums_of=g)`: a layer's db summed in the pair's threads.
- `layer_norm(x2, w, b, eps)`, `layer_norm_backward(g2, x2, w, eps)` and `adam(...)`: float32
  LayerNorm rows and the Adam update, cut between the threads (ops/versions.py, optim/adam.py).

A second pool beside OpenBLAS's own threads would fight them for the cores (a GPT step 3x
slower, measured), so this one also runs OpenBLAS's parallel jobs: OpenBLAS >= 0.3.28 takes
a program's threading through `openblas_set_threads_callback_function`, and numpy's wheels
ship such an OpenBLAS. That is a change to the whole process (numpy's threaded GEMMs anywhere
in it run on these threads, with the same numbers), so it is taken the first time the
dispatcher chooses one of the versions below (whatever op asks first: the paths never depend
on what ran before), listed by `process.report()`, and can be refused: TINYGRADX_POOL=0 in the
environment, or `set_enabled(False)` (which gives OpenBLAS its own threads back). Without
OpenBLAS with that callback (numpy on MKL or Accelerate, an older OpenBLAS), on one thread
(TINYGRADX_THREADS=1, OPENBLAS_NUM_THREADS=1), off Linux, or without the compiled kernels
(kernels.py builds pool.c next to them), nothing changes: the pool's versions decline and the
references run. `status()` says which.
"""
from __future__ import annotations

import ctypes
import math
import os
import sys
import threading

import numpy as np

from . import kernels, openblas, parallel, process

ENABLED = process.env("TINYGRADX_POOL", True)
# how long a thread that ran a task polls for the next before it sleeps: long enough to span
# the element-wise work between two GEMMs of a step, short enough to free the core soon after
POLL_US = process.env("TINYGRADX_POOL_POLL_US", 2000)
# OpenBLAS threads a GEMM from m*n*k above 4 * 65536 (GEMM_MULTITHREAD_THRESHOLD x
# SMP_THRESHOLD_MIN in its interface/gemm.c): a stack's products must stay at or below it,
# so each runs on the thread of its block
ONE_THREAD_GEMM = 1 << 18
MIN_SPLIT = 1 << 15          # a stack's output elements from which two blocks pay
MIN_PAIR = 1 << 16           # m*n*k of each product from which a pair pays
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112           # CBLAS's constants

_lib = None                  # pool.c's library, once started
_blas = None                 # the OpenBLAS it drives (openblas.OpenBLAS)
_parts = 1                   # blocks a stack is cut into
_why = "not started (it starts at the first backward pass that multiplies matrices)"
_tried = False
_stopped = None              # (library, status) of a pool set_enabled(False) stopped
_LOCK = threading.Lock()


def _library_path():
    return os.path.join(kernels.cache_dir(), kernels.module_name() + "_pool.so")


def start():
    """Start the pool and give it OpenBLAS's parallel jobs (see the module docstring), once;
    the dispatcher calls it the first time a version of the pool is chosen. Returns whether
    it runs; idempotent."""
    global _tried, _why
    if _lib is not None or _tried:
        return _lib is not None
    with _LOCK:
        if _lib is None and not _tried:
            _tried = True
            try:
                _start()
            except Exception as e:       # never a failed training step for a speed-up
                _why = f"off: {type(e).__name__}: {e}"
                return False
            if _lib is not None:
                process.notice("pool", "ran numpy's OpenBLAS jobs and tinygradx's matrix "
                               "products on one pool of threads, for both cores (fast/pool.py)"
                               "; TINYGRADX_POOL=0 or tinygradx.pool.set_enabled(False) turns "
                               "it off")
    return _lib is not None


def _start():
    global _lib, _blas, _parts, _why
    if not ENABLED:
        _why = "off (TINYGRADX_POOL=0 or set_enabled(False))"
        return
    if not sys.platform.startswith("linux"):
        _why = f"off: Linux only (futexes), this is {sys.platform}"
        return
    if parallel.THREADS < 2:
        _why = "off: one thread (TINYGRADX_THREADS=1 or one usable core)"
        return
    try:
        blas = openblas.find()
    except (OSError, LookupError) as e:
        _why = f"off: numpy's OpenBLAS could not be used ({e})"
        return
    if blas is None:
        _why = "off: numpy does not run on OpenBLAS here"
        return
    if blas.set_callback is None:
        _why = (f"off: this OpenBLAS ({blas.config.split(' ')[1] if ' ' in blas.config else '?'})"
                f" has no threads callback (0.3.28 and later have)")
        return
    threads = blas.get_threads()
    if threads < 2 or threads > 64:
        _why = f"off: OpenBLAS runs {threads} thread(s) (the pool takes 2 to 64)"
        return
    if not kernels.ready():
        _why = "off: the compiled kernels are off (" + (kernels.BUILD_ERROR or "numba is not "
                                                         "installed or TINYGRADX_KERNELS=0") + ")"
        return
    try:
        lib = ctypes.CDLL(_library_path())
    except OSError as e:
        _why = f"off: {e}"
        return
    addr = _address
    lib.tgx_counter.restype = ctypes.c_long
    lib.tgx_setup(threads, ctypes.c_long(POLL_US), addr(blas.sgemm), addr(blas.dgemm),
                  int(blas.ilp64), addr(blas.get_threads), addr(blas.set_threads))
    blas.set_callback(addr(lib.tgx_openblas_jobs))
    parallel.set_before_split(lib.tgx_park)
    _lib, _blas = lib, blas
    _parts = min(threads, parallel.THREADS)
    _why = f"on: {threads} threads, running OpenBLAS's jobs ({blas.config})"


def _address(fn):
    return ctypes.c_void_p(ctypes.cast(fn, ctypes.c_void_p).value)


def set_enabled(flag):
    """Use the pool (True) or numpy and OpenBLAS's own threads only (False); returns the old
    setting. Turning it off hands OpenBLAS its threads back at once; on again gives them to
    the pool again (at once if it ran before, else at the next start())."""
    global ENABLED, _lib, _tried, _why, _stopped
    old = ENABLED
    ENABLED = bool(flag)
    with _LOCK:
        if not ENABLED and _lib is not None:
            _blas.set_callback(None)
            parallel.set_before_split(None)
            _stopped, _lib = (_lib, _why), None   # (its threads stay, asleep on their futex)
            _why = "off (set_enabled(False))"
        elif ENABLED and _lib is None and _stopped is not None:
            (lib, why), _stopped = _stopped, None
            _blas.set_callback(_address(lib.tgx_openblas_jobs))
            parallel.set_before_split(lib.tgx_park)
            _lib, _why = lib, why
        elif _lib is None:
            _tried = False                        # the next start() tries again
            if not ENABLED:
                _why = "off (set_enabled(False))"
    return old


def running():
    """Whether the pool runs (its calls may apply)."""
    return _lib is not None


def park():
    """Let the pool's idle threads sleep now instead of polling (parallel.rows calls it
    before handing blocks to its Python threads, which need the core)."""
    if _lib is not None:
        _lib.tgx_park()


def status():
    """One line: whether the pool runs, and why not when it does not."""
    return _why


def counters():
    """(tasks run on the pool, OpenBLAS jobs that needed threads of their own because the pool
    was taken), for tests and reports; (0, 0) when it does not run."""
    if _lib is None:
        return 0, 0
    return _lib.tgx_counter(0), _lib.tgx_counter(1)


# ------------------------------------------------------------------------------------------
# the calls. Each is a faster version of a function of the core or ops/, registered with its
# declaration (dtypes, layouts, sizes) beside that function; the dispatcher (dispatch.py) calls
# it only for a call the declaration and the `*_fits` predicate here accept, with the pool
# running and outside a block of parallel.rows, so these functions check nothing again.
# ------------------------------------------------------------------------------------------

def _ptr(a):
    """An array's data address for a ctypes call (the caller keeps the array alive)."""
    return ctypes.c_void_p(a.ctypes.data)


def _layout(x):
    """(transposed, leading dimension) of the last two dims of x as a BLAS operand, or None
    when neither they nor their transpose have unit stride along a row."""
    size = x.itemsize
    s0, s1 = x.strides[-2], x.strides[-1]
    if s0 % size or s1 % size:
        return None
    r, c = x.shape[-2], x.shape[-1]
    if s1 == size and s0 >= max(1, c) * size:
        return 0, s0 // size
    if s0 == size and s1 >= max(1, r) * size:
        return 1, s1 // size
    return None


def _stack(a, b, out, batch):
    """The int64 block pool.c's `struct stack` reads: out[i] = a[i] @ b[i] over `batch`."""
    la, lb = _layout(a), _layout(b)
    if la is None or lb is None:
        return None
    dims = len(batch)
    steps = []
    for x in (a, b, out):
        pad = dims - (x.ndim - 2)                 # a broadcast dim steps by 0
        sizes, strides = (1,) * pad + x.shape[:-2], (0,) * pad + x.strides[:-2]
        steps.append([0 if n == 1 else s for n, s in zip(sizes, strides, strict=True)]
                     + [0] * (4 - dims))
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    ldc = out.strides[-2] // out.itemsize
    return np.array([math.prod(batch), dims, *batch, *([1] * (4 - dims)), *steps[0], *steps[1],
                     *steps[2], la[0], lb[0], m, n, k, la[1], lb[1], ldc,
                     a.ctypes.data, b.ctypes.data, out.ctypes.data, a.dtype == np.float64],
                    dtype=np.int64)


def _batch(a, b):
    """The batch dims of a stack a @ b (both at least 3-D), or None if they do not broadcast."""
    if a.shape[:-2] == b.shape[:-2]:
        return a.shape[:-2]
    try:
        return np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None


def matmul_fits(a, b, out):
    """Whether `matmul` takes a @ b (into out, or None): stacks (both 3-D to 6-D, which the
    version's `ndim` declares and the dispatcher checks first) of products small enough for
    OpenBLAS to run each on one thread and together large enough to pay for the hand-off,
    layouts BLAS takes, an `out` of row-major rows and of the result's shape. Vectors (m or n
    of 1) and X @ X^T stay with numpy, which calls gemv and syrk there, not GEMM, so the
    numbers stay numpy's."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if m == 1 or n == 1 or b.shape[-2] != k or not 0 < m * n * k <= ONE_THREAD_GEMM:
        return False
    if a.ctypes.data == b.ctypes.data and a.strides[-2:] == b.strides[-2:][::-1]:
        return False
    batch = _batch(a, b)
    if batch is None or len(batch) > 4 or math.prod(batch) * m * n < MIN_SPLIT:
        return False
    if _layout(a) is None or _layout(b) is None:
        return False
    return out is None or (out.shape == batch + (m, n) and out.strides[-1] == out.itemsize
                           and out.strides[-2] % out.itemsize == 0)


def matmul(a, b, out=None):
    """a @ b for a stack of small products, in batch blocks on the pool (each product one
    cblas_?gemm call, as numpy's own loop makes it: numpy's numbers); into `out` when given."""
    batch = _batch(a, b)
    if out is None:
        out = np.empty(batch + (a.shape[-2], b.shape[-1]), a.dtype)
    block = _stack(a, b, out, batch)          # (kept alive until the call returns)
    _lib.tgx_stack(_ptr(block), _parts)
    return out


def pair_fits(a1, b1, a2, b2):
    """Whether `pair` takes (a1 @ b1, a2 @ b2): 2-D operands, each product at least MIN_PAIR
    multiply-adds, layouts BLAS takes."""
    for a, b in ((a1, b1), (a2, b2)):
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
            return False
        if a.shape[0] * a.shape[1] * b.shape[1] < MIN_PAIR:
            return False
        if _layout(a) is None or _layout(b) is None:
            return False
    return True


def pair(a1, b1, a2, b2, column_sums_of=None):
    """(a1 @ b1, a2 @ b2), side by side on two threads, OpenBLAS on one thread each (so each
    is the product numpy computes on one thread). With `column_sums_of` g, a C-ordered
    (rows, n) array of the products' dtype, also g.sum(0) (a linear layer's db), half the
    columns on each thread after its product, added down each column in numpy's order (the
    same bits): (o1, o2, sums)."""
    o1 = np.empty((a1.shape[0], b1.shape[1]), a1.dtype)
    o2 = np.empty((a2.shape[0], b2.shape[1]), a1.dtype)
    s1, s2 = _stack(a1, b1, o1, ()), _stack(a2, b2, o2, ())   # (alive until the call returns)
    if column_sums_of is None:
        _lib.tgx_pair(_ptr(s1), _ptr(s2), None)
        return o1, o2
    g = column_sums_of
    sums = np.empty(g.shape[1], g.dtype)
    block = np.array([g.ctypes.data, sums.ctypes.data, g.shape[0], g.shape[1],
                      g.dtype == np.float64], dtype=np.int64)   # pool.c's struct colsums
    _lib.tgx_pair(_ptr(s1), _ptr(s2), _ptr(block))
    return o1, o2, sums


ONE_PANEL = 256              # the most inner-dimension a linear's GEMM-with-bias takes
MIN_LINEAR = 1 << 12         # values of x from which it is tried (a token's rows never are)


def linear_fits(x, w, b):
    """Whether `linear` takes x W^T + b: a bias, x (..., k) over more rows than the few-row
    product takes (ops/versions.py's few_rows), w (n, k), b (n,) with n > 1 (numpy calls
    gemv, not GEMM, for one column), k at most ONE_PANEL (OpenBLAS adds a product's inner
    dimension in panels of a few hundred: with more than one, the bias would join the first
    panel's sum instead of the whole one, a last bit off), and at least MIN_PAIR
    multiply-adds."""
    if b is None:
        return False
    k, n = w.shape[1], w.shape[0]
    rows = x.size // k if k else 0
    return (x.shape[-1] == k and b.shape == (n,) and 1 < n and 0 < k <= ONE_PANEL
            and rows > 64 and rows * n * k >= MIN_PAIR)


def linear(x, w, b):
    """x W^T + b as one GEMM whose output starts as b in every row (beta = 1), instead of the
    product into a zero-filled output and a pass adding b: OpenBLAS adds its whole sum to
    each entry once either way, so the bits are the reference's (one panel: linear_fits).
    The GEMM is numpy's call (the same operands, layouts and threads)."""
    k, n = w.shape[1], w.shape[0]
    rows = x.size // k
    y = np.empty(x.shape[:-1] + (n,), x.dtype)
    y.reshape(rows, n)[...] = b                            # (rows, n): b in every row
    gemm = _blas.gemm_into[x.dtype == np.float64]
    gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, rows, n, k, 1.0, x.ctypes.data, k, w.ctypes.data, k,
         1.0, y.ctypes.data, n)
    return y


# ------------------------------------------------------------------------------------------
# attention, one head at a time (pool.c's tgx_attention): float32 only
# ------------------------------------------------------------------------------------------

_HEAD_MATS = ("q", "k", "v", "qs", "a", "z", "g", "ds", "dq", "dk", "dv", "keep")   # pool.c's


def _rows(x, cols):
    """x's row stride in elements when its last two dims are rows of `cols` unit-stride
    float32 values (what pool.c's attention takes), else None."""
    size = x.itemsize
    s0, s1 = x.strides[-2], x.strides[-1]
    if x.dtype != np.float32 or (s1 != size and x.shape[-1] > 1) or s0 % size \
            or s0 < cols * size:
        return None
    return s0 // size


def _heads(mats, mask, scale, scratch=None):
    """The int64 block of pool.c's `struct attn` for `mats` (name -> array, all with the same
    batch dims), or None when a layout does not fit; `scratch` from _scratch."""
    batch = mats["q"].shape[:-2]
    if not 0 < len(batch) <= 4:
        return None
    m, d = mats["q"].shape[-2:]
    n, dv = mats["v"].shape[-2:]
    shapes = {"q": (m, d), "k": (n, d), "v": (n, dv), "qs": (m, d), "a": (m, n), "z": (m, dv),
              "g": (m, dv), "ds": (m, n), "dq": (m, d), "dk": (n, d), "dv": (n, dv),
              "keep": (m, n)}                 # what pool.c reads and writes of each, per head
    steps, lds, bases = [], [], []
    for name in _HEAD_MATS:
        x = mats.get(name)
        if x is None:
            steps.append([0] * 4)
            lds.append(0)
            bases.append(0)
            continue
        ld = _rows(x, x.shape[-1])
        if ld is None or x.shape != batch + shapes[name]:
            return None
        steps.append(list(x.strides[:-2]) + [0] * (4 - len(batch)))
        lds.append(ld)
        bases.append(x.ctypes.data)
    ld_mask = 0
    if mask is not None:
        ld_mask = _rows(mask, n) if mask.shape == (m, n) else None
        if ld_mask is None:
            return None
    head = [math.prod(batch), len(batch), *batch, *([1] * (4 - len(batch)))]
    for step in steps:
        head += step
    head += lds + bases + [m, n, d, dv, 0 if mask is None else mask.ctypes.data, ld_mask,
                           0 if scratch is None else scratch.ctypes.data]
    return np.array(head + [np.float64(scale).view(np.int64)], dtype=np.int64)


def _scratch(q, v):
    """pool.c's per-part scratch for attention: A' = A D (m, n) and K^T or V^T (n, max(d, dv))."""
    m, d = q.shape[-2:]
    n, dv = v.shape[-2:]
    return np.empty((_parts, m * n + n * max(d, dv)), np.float32)


def _small_heads(q, k, v):
    """Q (.., m, d), K (.., n, d), V (.., n, dv) of one batch shape, each head's products
    small enough for OpenBLAS to run them on one thread, and enough of them to pay for the
    hand-off; one query (a generated token's) stays with numpy."""
    if q.ndim < 3 or not q.shape[:-2] == k.shape[:-2] == v.shape[:-2] \
            or k.shape[-2] != v.shape[-2]:
        return False
    m, n, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    return (k.shape[-1] == d and m * n * max(d, dv) <= ONE_THREAD_GEMM and m > 1 and n > 1
            and math.prod(q.shape[:-2]) * m * n >= MIN_SPLIT)


def attention_fits(q, k, v, mask, out):
    """Whether `attention` takes these (float32 arrays, checked by the declaration): heads as
    _small_heads says, no mask or one (m, n) mask for every head, unit-stride rows."""
    if not _small_heads(q, k, v):
        return False
    return _heads({"q": q, "k": k, "v": v, "z": out}, mask, 1.0) is not None


def attention(q, k, v, mask, scale, out, draw=None):
    """out <- softmax(Q scale K^T + M) V head by head on the pool, or with dropout (A D) V where
    D = draw(shape of A), the scaled keep-mask; returns (Q scale, A, D or None)."""
    qs = np.empty_like(q)
    a = np.empty(q.shape[:-1] + k.shape[-2:-1], np.float32)
    mats = {"q": q, "k": k, "v": v, "qs": qs, "a": a, "z": out}
    scratch = _scratch(q, v)
    keep = None
    if draw is not None:
        keep = np.ascontiguousarray(draw(a.shape), dtype=np.float32)
        mats["keep"] = keep
    block = _heads(mats, mask, scale, scratch)   # (alive until the call returns)
    _lib.tgx_attention(_ptr(block), 0, _parts)
    return qs, a, keep


def attention_backward_fits(g, qs, k, v, a, gq, gk, gv, keep):
    """Whether `attention_backward` takes these (float32, checked by the declaration)."""
    if not _small_heads(qs, k, v) or (keep is not None and keep.shape != a.shape):
        return False
    mats = {"qs": qs, "k": k, "v": v, "a": a, "g": g, "dq": gq, "dk": gk, "dv": gv, "q": qs,
            "keep": keep}
    return _heads(mats, None, 1.0) is not None


def attention_backward(g, qs, k, v, a, scale, gq, gk, gv, keep=None):
    """Attention's backward head by head on the pool: dQ, dK, dV into gq, gk, gv (each None
    or an array to fill), `keep` the forward's dropout mask D or None; returns dS."""
    ds = np.empty(a.shape, np.float32)
    scratch = _scratch(qs, v)                 # (alive until the call returns)
    block = _heads({"qs": qs, "k": k, "v": v, "a": a, "g": g, "ds": ds, "dq": gq, "dk": gk,
                    "dv": gv, "q": qs, "keep": keep}, None, scale, scratch)
    _lib.tgx_attention(_ptr(block), 1, _parts)
    return ds


# ------------------------------------------------------------------------------------------
# the tanh GELU and the last-axis softmax on both cores: float32, C-ordered
# ------------------------------------------------------------------------------------------

MIN_GELU = 1 << 14           # values from which the pool's threads share a GELU
MIN_SOFTMAX = 1 << 14        # values from which the pool's threads share a softmax
MIN_ADAM = 1 << 14           # values from which the pool's threads share an Adam update
MIN_LAYER_NORM = 1 << 12     # values from which the pool's threads share a LayerNorm


def gelu_tanh(x, t, y):
    """t <- tanh(sqrt(2/pi) (x + 0.044715 x^3)), y <- 0.5 x (1 + t) in one pass on the pool's
    threads, with pool.c's tanh (within 2 ulp of the rounded tanh); 1-D arrays of one size."""
    _lib.tgx_gelu_tanh(_ptr(x), _ptr(t), _ptr(y), ctypes.c_int64(x.size), _parts)


def gelu_tanh_grad(x, t, g, d):
    """d <- g GELU'(x) from x and the kept t, in one pass on the pool's threads."""
    _lib.tgx_gelu_tanh_grad(_ptr(x), _ptr(t), _ptr(g), _ptr(d), ctypes.c_int64(x.size),
                            _parts)


def rows_fit(n):
    """Rows the C loops run faster than numba's: at least 32 values filling whole 16-float
    vectors (AVX-512's width, this machine's), or 256+. A ragged row leaves each loop's
    remainder to scalar code: (3072, 24) took 177 us against numba's 137, (768, 65)'s
    backward 33 against 21; (3072, 64) 158 against 324, (100, 1000) 38 against 153."""
    return n >= 32 and (n % 16 == 0 or n >= 256)


def softmax(x2, out2):
    """out2 <- softmax(x2) over the rows of (rows, n) float32 arrays in C order (out2 may be
    x2), rows cut between the pool's threads, with pool.c's exp (within 1 ulp of e^x)."""
    _lib.tgx_softmax(_ptr(x2), None, _ptr(out2), ctypes.c_int64(x2.shape[0]),
                     ctypes.c_int64(x2.shape[1]), _parts)


def softmax_grad(g2, s2, out2):
    """out2 <- s2 (g2 - rowsum(g2 s2)) over the rows of (rows, n) float32 arrays in C order
    (out2 may be g2): softmax's backward on the pool's threads."""
    _lib.tgx_softmax(_ptr(g2), _ptr(s2), _ptr(out2), ctypes.c_int64(g2.shape[0]),
                     ctypes.c_int64(g2.shape[1]), _parts)


def layer_norm(x2, w, b, eps):
    """LayerNorm of each row of x2 (rows, n), float32 in C order, times w and plus b ((n,) or
    None), rows cut between the pool's threads (pool.c says how its float32 statistics keep
    a row of nearly equal values exact, and which rows it computes in float64)."""
    y = np.empty(x2.shape, np.float32)
    _lib.tgx_layer_norm(_ptr(x2), None if w is None else _ptr(w), None if b is None else _ptr(b),
                        None, _ptr(y), None, ctypes.c_int64(x2.shape[0]),
                        ctypes.c_int64(x2.shape[1]), ctypes.c_double(eps), _parts)
    return y


def layer_norm_backward(g2, x2, w, eps):
    """dx (rows, n), dw (n,), db (n,) of LayerNorm from g2 and x2 (rows, n) and w ((n,) or
    None), float32 in C order, rows cut between the threads. dw and db are summed per block
    of rows and the blocks then added in order, so their bits depend on the thread count
    only, never on whether the pool was free."""
    rows, n = g2.shape
    w = np.ones(n, np.float32) if w is None else w
    dx = np.empty(g2.shape, np.float32)
    sums = np.zeros((_parts, 2, n), np.float32)          # per block: dw, db
    _lib.tgx_layer_norm(_ptr(x2), _ptr(w), None, _ptr(g2), _ptr(dx), _ptr(sums),
                        ctypes.c_int64(rows), ctypes.c_int64(n), ctypes.c_double(eps), _parts)
    total = sums[0]
    for part in sums[1:]:                                # in order (np.sum's would pair them)
        total = total + part
    return dx, total[0], total[1]


def adam(p, g, m, v, beta1, beta2, shrink, eps_s, step_size):
    """One Adam step in place on 1-D float32 arrays (kernels.adam's formula and coefficients),
    the values cut between the pool's threads."""
    k = np.array([beta1, 1 - beta1, beta2, 1 - beta2, shrink, eps_s, step_size], np.float32)
    _lib.tgx_adam(_ptr(p), _ptr(g), _ptr(m), _ptr(v), ctypes.c_int64(p.size), _ptr(k), _parts)
