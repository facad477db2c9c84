"""The faster versions of the core's ops, each with the declaration of what it takes.

The core (tinygradx/core) is the reference and knows nothing of these: it marks the array
functions a version may replace `@fastpath.dispatched` (softmax's and layer_norm's rows, a
product of arrays, the embedding's row scatter, masked_fill's written value), and its ops'
formulas are their derivatives.
Here each faster version is registered with `dispatch.register` (fast/dispatch.py, which
decides which one runs); versions of the fused ops beyond the core's sit beside those ops in
fused.py and attention.py, the Adam update's in optim/adam.py. Importing this module installs
the dispatcher and the speed layer's backward walk (fast/walk.py) into the core.

    softmax_rows        pool (float32 rows of 32+ filling 16-float vectors, or 256+, from 16k
                        values), compiled (two loops around numpy's exp)
    softmax_grad_rows   pool, compiled (one loop a row)
    Softmax.backward    rows: softmax_grad_rows into a new array
    layer_norm_rows     pool (float32 from 4k values: float32 sums with a correction, rows cut
                        between the threads), compiled (one loop a row, float64 sums)
    LayerNorm.backward  pool (the same), compiled (one loop a row); both with the statistics
                        recomputed from x
    matmul              pool (a stack of small products in batch blocks), few_rows (3-64 rows
                        times a transposed weight as (W x^T)^T)
    linear_forward      pool (x W^T + b as one GEMM into rows holding b: no pass adding b),
                        few_rows (matmul's, then b)
    Linear.backward     pool (dX = g W and dW = g^T X side by side, one per core, then db's
                        column sums, half on each)
    MatMul.backward     pool (the same for a batch times a shared 2-D weight)
    Getitem.backward    slice (the walk adds the pieces of a split into one buffer)
    masked_fill_array   compiled (one pass, the mask repeated over the leading dims)
    MaskedFill.backward fill (masked_fill_array of g with 0)
    scatter_rows        compiled (one add a row, in order), flat (np.add.at on the flat table):
                        both one id a row and np.add.at's bits, so a run's gradients do not
                        depend on whether numba is installed
"""
from __future__ import annotations

import math

import numpy as np

from ..core.elementwise import MaskedFill, masked_fill_array
from ..core.linalg import Linear, MatMul
from ..core.movement import Getitem, is_advanced
from ..core.rows import LayerNorm, Softmax
from ..core.fastpath import Slice
from ..fast import kernels, pool, walk
from ..fast.dispatch import FLOAT32, Version, register
from .rowwise import softmax_grad_rows


def _last_axis(x, axis):
    return x.ndim > 0 and axis in (-1, x.ndim - 1)


def _matrix(a):
    """a (..., n) as a (rows, n) view (rows counted, not -1: n may be 0)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def _rows2(*arrays):
    """(rows, n) views of C-ordered arrays over their last axis."""
    return [_matrix(a) for a in arrays]


# ------------------------------------------------------------------------------------------
# softmax and its derivative
# ------------------------------------------------------------------------------------------

def _softmax_pool(x, out, axis):
    pool.softmax(*_rows2(x, out))
    return out


def _softmax_compiled(x, out, axis):
    x2, out2 = _rows2(x, out)
    kernels.softmax(x2, out2, out is x)
    return out


_ROWS = dict(outputs=(1,), inplace=(0,))        # softmax_rows(x, out, axis): out may be x
register("softmax_rows", Version(
    "pool", _softmax_pool, backend="pool", dtypes=FLOAT32, min_size=pool.MIN_SOFTMAX,
    in_blocks=False, ulp=4, **_ROWS,
    accepts=lambda x, out, axis: _last_axis(x, axis) and pool.rows_fit(x.shape[-1])))
register("softmax_rows", Version(
    "compiled", _softmax_compiled, backend="kernels", ulp=4, **_ROWS,
    accepts=lambda x, out, axis: _last_axis(x, axis)))


def _softmax_grad_pool(g, s, out, axis):
    pool.softmax_grad(*_rows2(g, s, out))
    return out


def _softmax_grad_compiled(g, s, out, axis):
    g2, s2, out2 = _rows2(g, s, out)
    kernels.softmax_grad(g2, s2, out2, out is g)
    return out


_GRAD_ROWS = dict(outputs=(2,), inplace=(0,))   # softmax_grad_rows(g, s, out, axis): out may be g
register("softmax_grad_rows", Version(
    "pool", _softmax_grad_pool, backend="pool", dtypes=FLOAT32, min_size=pool.MIN_SOFTMAX,
    in_blocks=False, ulp=4, **_GRAD_ROWS,
    accepts=lambda g, s, out, axis: _last_axis(s, axis) and g.shape == s.shape
    and pool.rows_fit(s.shape[-1])))
register("softmax_grad_rows", Version(
    "compiled", _softmax_grad_compiled, backend="kernels", ulp=4, **_GRAD_ROWS,
    accepts=lambda g, s, out, axis: _last_axis(s, axis) and g.shape == s.shape))


register(Softmax, Version(
    "rows", lambda ctx, g: softmax_grad_rows(g, ctx.out, np.empty_like(ctx.out), ctx.dim),
    ulp=4, accepts=lambda ctx, g: ctx.out.ndim > 0 and g.dtype == ctx.out.dtype
    and g.shape == ctx.out.shape))


# ------------------------------------------------------------------------------------------
# layer_norm
# ------------------------------------------------------------------------------------------

register("layer_norm_rows", Version(
    "pool", pool.layer_norm, backend="pool", dtypes=FLOAT32, arrays=(0, 1, 2),
    min_size=pool.MIN_LAYER_NORM, in_blocks=False, ulp=4))
register("layer_norm_rows", Version(
    "compiled", kernels.layer_norm, backend="kernels", arrays=(0, 1, 2), ulp=4))


def _layer_norm_backward_with(rows_backward):
    def backward(ctx, g):
        """dx, dw, db in one pass a row, the row's statistics recomputed from x."""
        n = math.prod(ctx.wshape)
        w = ctx.wb[0].reshape(n) if ctx.affine[0] else None
        dx, gw, gb = rows_backward(
            np.ascontiguousarray(g.reshape(g.size // n, n)),            # (rows, n)
            np.ascontiguousarray(ctx.x.reshape(ctx.x.size // n, n)),    # (rows, n)
            None if w is None else np.ascontiguousarray(w), ctx.eps)
        need = ctx.needs_input_grad
        gw = gw.reshape(ctx.wshape) if ctx.affine[0] and need[1] else None
        gb = gb.reshape(ctx.wshape) if ctx.affine[1] and need[-1] else None
        return (dx.reshape(ctx.shape),) + (gw,) * ctx.affine[0] + (gb,) * ctx.affine[1]
    return backward


def _same_dtypes(ctx, g):
    return g.dtype == ctx.x.dtype and all(a.dtype == g.dtype for a in ctx.wb)


register(LayerNorm, Version(
    "pool", _layer_norm_backward_with(pool.layer_norm_backward), backend="pool",
    dtypes=FLOAT32, in_blocks=False, ulp=16,
    accepts=lambda ctx, g: g.size >= pool.MIN_LAYER_NORM and _same_dtypes(ctx, g)))
register(LayerNorm, Version(
    "compiled", _layer_norm_backward_with(kernels.layer_norm_backward), backend="kernels",
    ulp=16, accepts=_same_dtypes))


def _trailing_mask(x, mask, value):
    """mask, a C-ordered bool array, without its leading 1s is x's trailing shape (a causal
    (T, T) mask over (B, heads, T, T) scores): the compiled loop repeats it over the rest; the
    value is one number of x's dtype (the reference would broadcast an array of them)."""
    if type(mask) is not np.ndarray or type(value) is not np.ndarray:
        return False
    shape = mask.shape[next((i for i, n in enumerate(mask.shape) if n != 1), mask.ndim):]
    return (mask.dtype == np.bool_ and mask.flags.c_contiguous and mask.ndim <= x.ndim
            and 0 < len(shape) and x.shape[x.ndim - len(shape):] == shape
            and value.ndim == 0 and value.dtype == x.dtype)


register("masked_fill_array", Version(
    "compiled", kernels.masked_fill, backend="kernels", arrays=(0,), accepts=_trailing_mask,
    ulp=0))

# the derivative: g with zeros where the mask held, as the forward writes its value (the
# dispatched function above: the compiled loop when it takes g, else a copy and a masked
# write; np.where with a broadcast (T, T) mask walks the scores ~2.7x slower)
register(MaskedFill, Version(
    "fill", lambda ctx, g: masked_fill_array(g, ctx.mask, np.zeros((), g.dtype)), ulp=0,
    accepts=lambda ctx, g: np.broadcast_shapes(np.shape(ctx.mask), g.shape) == g.shape))


# ------------------------------------------------------------------------------------------
# products
# ------------------------------------------------------------------------------------------

# OpenBLAS multiplies a few rows by a transposed weight (x @ W.T, W (out, in) C-ordered) up to
# 4x slower than W @ x.T, the same product with the operands swapped: 8 rows against a
# (384, 128) weight, 32.5 us against 16.6 us (one or two threads alike). From 128 rows on
# the plain order is as fast or faster.
_FEW_ROWS = 64


def _few_rows(a, b, out):
    a2 = _matrix(a)
    y = np.ascontiguousarray((b.T @ a2.T).T)               # (rows, m)
    return y.reshape(a.shape[:-1] + (b.shape[1],))


def _few_rows_fit(a, b, out):
    """(a (..., k) of 3 to _FEW_ROWS rows, b (k, m) 2-D: the declaration's dims)"""
    return (out is None and 2 < a.size // a.shape[-1] <= _FEW_ROWS and b.flags.f_contiguous
            and not b.flags.c_contiguous and a.shape[-1] == b.shape[0])


_PRODUCT = dict(arrays=(0, 1, 2), contiguous=(), outputs=(2,))   # matmul(a, b, out)
register("matmul", Version("pool", pool.matmul, backend="pool", **_PRODUCT,
                           ndim={0: (3, 6), 1: (3, 6)}, accepts=pool.matmul_fits, ulp=0))
register("matmul", Version("few_rows", _few_rows, ndim={0: (2, None), 1: (2, 2)},
                           accepts=_few_rows_fit, ulp=16, **_PRODUCT))


def _few_rows_linear(x, w, b):
    y = _few_rows(x, w.T, None)
    if b is not None:
        y += b
    return y


register("linear_forward", Version("pool", pool.linear, backend="pool", arrays=(0, 1, 2),
                                   ndim={0: (2, None), 1: (2, 2), 2: (1, 1)},
                                   min_size=pool.MIN_LINEAR, accepts=pool.linear_fits, ulp=0))
register("linear_forward", Version("few_rows", _few_rows_linear, arrays=(0, 1, 2),
                                   ndim={0: (2, None), 1: (2, 2)}, ulp=16,
                                   min_size=256,       # a generated token's row leaves at once
                                   accepts=lambda x, w, b: _few_rows_fit(x, w.T, None)))


def _linear_backward_pool(ctx, g):
    """dX = g W and dW = g^T X side by side, one per core; db = the column sums of g, half
    on each core after its product (numpy's additions in numpy's order: g2.sum(0)'s bits)."""
    g2 = _matrix(g)                                      # (rows, out)
    x = ctx.x
    need = ctx.needs_input_grad
    with_db = len(need) == 3 and need[2] and g2.flags.c_contiguous and g2.shape[0] > 0
    gx, gw, *db = pool.pair(g2, ctx.w, g2.T, _matrix(x),      # (rows, in), (out, in)
                            column_sums_of=g2 if with_db else None)
    gx = gx.reshape(x.shape)                             # (..., in)
    if len(need) == 3:
        return gx, gw, (db[0] if with_db else g2.sum(0) if need[2] else None)
    return gx, gw


def _linear_pair_fits(ctx, g):
    need = ctx.needs_input_grad
    if not (need[0] and need[1]) or not g.dtype == ctx.x.dtype == ctx.w.dtype:
        return False
    g2 = _matrix(g)
    return pool.pair_fits(g2, ctx.w, g2.T, _matrix(ctx.x))


register(Linear, Version("pool", _linear_backward_pool, backend="pool",
                         accepts=_linear_pair_fits, ulp=16))


def _matmul_backward_pool(ctx, g):
    """(..., n, k) @ W (k, m), W shared by the batch: dA = g W^T and dW = A^T g as two 2-D
    products side by side."""
    a, b = ctx.a, ctx.b
    a2 = _matrix(a)                      # (rows, k)
    g2 = _matrix(g)                      # (rows, m)
    ga, gb = pool.pair(g2, b.T, a2.T, g2)                # (rows, k), (k, m)
    return ga.reshape(a.shape), gb                       # (..., n, k)


def _matmul_pair_fits(ctx, g):
    need = ctx.needs_input_grad
    if ctx.nd[1] != 2 or ctx.nd[0] < 2 or not (need[0] and need[1]):
        return False
    a, b = ctx.a, ctx.b
    if not g.dtype == a.dtype == b.dtype:
        return False
    a2, g2 = _matrix(a), _matrix(g)
    return g2.shape[0] == a2.shape[0] and pool.pair_fits(g2, b.T, a2.T, g2)


register(MatMul, Version("pool", _matmul_backward_pool, backend="pool",
                         accepts=_matmul_pair_fits, ulp=16))


# ------------------------------------------------------------------------------------------
# indexing, the embedding's scatter
# ------------------------------------------------------------------------------------------

register(Getitem, Version("slice", lambda ctx, g: Slice(ctx.index, g), dtypes=None,
                          accepts=lambda ctx, g: not is_advanced(ctx.index)))


def _scatter_flat(g2, ids, rows):
    """np.add.at on the flat table: entry (ids[i], c) of the table gets g2[i, c], the same
    additions in the same order as the reference's rows, so the same bits, without the
    reference's row-at-a-time loop (numpy 1.25+ runs a 1-d add.at in one pass): 3.5-5x
    faster on a GPT step's 768 x 128 gradient, and what runs when the compiled loop cannot."""
    c = g2.shape[1]
    flat = np.where(ids < 0, ids + rows, ids).astype(np.intp) * c    # -1 is row rows - 1
    out = np.zeros(rows * c, dtype=g2.dtype)
    np.add.at(out, (flat[:, None] + np.arange(c)).ravel(), g2.ravel())
    return out.reshape(rows, c)


def _one_id_a_row(g2, ids, rows, lowest=None):
    """An integer id for each row of g2, each naming a row of the table: from -rows (np.add.at
    counts a negative id from the end), or from `lowest`, to rows - 1 (np.add.at would raise
    on a larger one, and broadcast g2's rows to the ids)."""
    lowest = -rows if lowest is None else lowest
    return (type(ids) is np.ndarray and ids.dtype.kind in "iu" and ids.shape == g2.shape[:1]
            and (not len(ids) or lowest <= ids.min() and ids.max() < rows))


def _ids_in_range(g2, ids, rows):
    """The compiled loop's ids: C-ordered int64, none negative."""
    return (type(ids) is np.ndarray and ids.dtype == np.int64 and ids.flags.c_contiguous
            and _one_id_a_row(g2, ids, rows, lowest=0))


register("scatter_rows", Version("compiled", kernels.scatter_rows, backend="kernels",
                                 arrays=(0,), ndim={0: (2, 2)}, accepts=_ids_in_range, ulp=0))
register("scatter_rows", Version("flat", _scatter_flat, arrays=(0,), contiguous=(),
                                 ndim={0: (2, 2)}, accepts=_one_id_a_row, ulp=0))


walk.install()
