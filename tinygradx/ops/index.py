"""The primitives that scan, reorder, repeat and index along a dim: cumsum/cumprod, prod, flip,
roll, repeat, repeat_interleave, diagonal, gather, scatter, scatter_add. Forward and backward
side by side, on numpy arrays, as in ops.py; every `dim` arrives already checked (a
non-negative int, see dims.check_dim) from the Tensor methods in tensor_index.py.

Each op's backward is written once, with ops (`xp.run(Op, ...)`: the op's forward on arrays,
the recorded op on Tensors under create_graph). The adjoints that are not user-facing ops are
Functions here too, each with its own backward, so every derivative can be taken again: Shift
and Scan (a linear recurrence: the division-free rules of cumprod and prod), SumRepeats (of
repeat_interleave) and DiagonalAdjoint (of diagonal); gather's adjoint is scatter_add into
zeros.
"""
from __future__ import annotations

import numpy as np

from ..core.node import Function, OpError
from ..core.xp import of


def _scan_dtype(x):
    """torch's scan/product result dtype: integers and bool accumulate in int64."""
    return np.int64 if x.dtype.kind in "biu" else x.dtype


def _shift(a, by, axis):
    """a moved `by` places along axis (toward higher indices when by > 0), zeros coming in."""
    out = np.zeros_like(a)
    n = a.shape[axis]
    if abs(by) < n:
        dst, src = [slice(None)] * a.ndim, [slice(None)] * a.ndim
        dst[axis], src[axis] = (slice(by, n), slice(0, n - by)) if by > 0 else \
            (slice(0, n + by), slice(-by, n))
        out[tuple(dst)] = a[tuple(src)]
    return out


def _scan(b, a, axis, reverse, shifted):
    """h_i = b_i + c_i * h_p along axis, p the position before i in scan order (i-1, or i+1
    when reverse), c_i = a_p if shifted else a_i; h = b at the first position."""
    bm, am = np.moveaxis(b, axis, 0), np.moveaxis(a, axis, 0)
    h = np.empty(bm.shape, np.result_type(b, a))
    n = len(h)
    if n:
        step = 1 if reverse else -1                  # p = i + step
        first = n - 1 if reverse else 0
        h[first] = bm[first]
        for i in (range(n - 2, -1, -1) if reverse else range(1, n)):
            h[i] = bm[i] + am[i + step if shifted else i] * h[i + step]
    return np.moveaxis(h, 0, axis)


class Shift(Function):
    """y_i = x_{i-by} along dim, zeros shifted in: dx = shift(g, -by). A helper of the graph
    rules of cumprod and prod."""
    def forward(self, x, dim, by):
        self.dim, self.by = dim, by
        return _shift(x, by, dim)

    def backward(self, g):
        return of(g).run(Shift, g, dim=self.dim, by=-self.by)


class Scan(Function):
    """h = scan(b, a): the linear recurrence of `_scan` along dim, forward or reverse. The
    graph rules of cumprod and prod are written with it, so, like cumprod's backward, their
    derivatives never divide and are exact with zeros.

    Its adjoint is the same recurrence run the other way with the other alignment of the
    coefficients: db = scan(g, a, not reverse, not shifted). The coefficient a_k multiplies
    h at one position and adds to h at the next in scan order, so da_k = (db there) *
    (h here): db_i h_p (unaligned), db_q h_k with q after k (shifted); zero for the
    coefficient the recurrence never uses."""
    def forward(self, b, a, dim, reverse, shifted):
        if b.shape != a.shape:
            raise OpError(f"b {b.shape} and a {a.shape} must have one shape")
        self.dim, self.reverse, self.shifted, self.a = dim, reverse, shifted, a
        self.h = _scan(b, a, dim, reverse, shifted)
        return self.h

    def _by(self):
        """The shift that brings h (db when shifted) to the position of each coefficient."""
        toward = -1 if self.reverse else 1          # the scan's direction
        return -toward if self.shifted else toward

    def backward(self, g):
        xp, d = of(g), self.dim
        db = xp.run(Scan, g, self.a, dim=d, reverse=not self.reverse, shifted=not self.shifted)
        if not self.needs_input_grad[1]:
            return db, None
        if self.shifted:
            return db, xp.run(Shift, db, dim=d, by=self._by()) * self.h
        return db, db * xp.run(Shift, self.h, dim=d, by=self._by())


def _exclusive_products(xp, x, dim, reverse=False):
    """The product of the elements strictly before (after, when reverse) each one along dim:
    a cumprod shifted by one, with a 1 in front."""
    if reverse:
        x = xp.run(Flip, x, dims=(dim,))
    first = np.zeros(x.shape, x.dtype)
    if x.shape[dim]:
        first[(slice(None),) * dim + (0,)] = 1
    out = xp.run(Shift, xp.run(CumProd, x, dim=dim), dim=dim, by=1) + first
    return xp.run(Flip, out, dims=(dim,)) if reverse else out


class CumSum(Function):
    """y_i = sum_{j<=i} x_j; dx_i = sum_{j>=i} g_j (a reverse cumsum of g)"""
    def forward(self, x, dim):
        self.dim = dim
        return np.cumsum(x.reshape(x.shape or (1,)), axis=dim,
                         dtype=_scan_dtype(x)).reshape(x.shape)

    def backward(self, g):
        if g.ndim == 0:
            return g
        xp, d = of(g), (self.dim,)
        return xp.run(Flip, xp.run(CumSum, xp.run(Flip, g, dims=d), dim=self.dim), dims=d)


class CumProd(Function):
    """y_i = prod_{j<=i} x_j; dx_i = P_{i-1} * S_i with P the exclusive prefix product and
    S_i = g_i + x_{i+1} S_{i+1} (a reverse recurrence): no division, exact with zeros."""
    def forward(self, x, dim):
        self.x, self.dim = x, dim
        return np.cumprod(x.reshape(x.shape or (1,)), axis=dim,
                          dtype=_scan_dtype(x)).reshape(x.shape)

    def backward(self, g):
        xp, x, d = of(g), self.x, self.dim
        if x.ndim == 0 or x.shape[d] == 0:
            return g * 1
        # S_i = g_i + x_{i+1} S_{i+1} is a reverse Scan of g: division-free, exact with zeros
        return _exclusive_products(xp, x, d) * xp.run(Scan, g, x, dim=d, reverse=True,
                                                      shifted=True)


class Prod(Function):
    """y = prod x (over dim, or all); dx_i = g * prod_{j != i} x_j, as the product of the
    exclusive prefix and suffix products: no division, exact with zeros."""
    def forward(self, x, dim=None, keepdim=False):
        self.shape, self.dim, self.keepdim = x.shape, dim, keepdim
        self.x = x
        if dim is None or x.ndim == 0:
            out = np.prod(x, dtype=_scan_dtype(x))
            return out.reshape((1,) * x.ndim if keepdim and dim is not None else ())
        return np.prod(x, axis=dim, keepdims=keepdim, dtype=_scan_dtype(x))

    def backward(self, g):
        xp, x, d = of(g), self.x, self.dim
        if d is None:
            flat = x.reshape(-1)
            others = _exclusive_products(xp, flat, 0) * _exclusive_products(xp, flat, 0, True)
            return (g * others).reshape(self.shape)
        if x.ndim == 0:
            return g * 1
        others = _exclusive_products(xp, x, d) * _exclusive_products(xp, x, d, True)
        return others * (g if self.keepdim else xp.expand_dims(g, d))


class Flip(Function):
    """d(flip x) = flip(g) over the same dims"""
    def forward(self, x, dims):
        self.dims = dims
        return np.flip(x, dims).copy()

    def backward(self, g):
        return of(g).run(Flip, g, dims=self.dims)


class Roll(Function):
    """d(roll x by s) = roll(g by -s)"""
    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return np.roll(x, shifts, dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return of(g).run(Roll, g, shifts=neg, dims=self.dims)


class Repeat(Function):
    """y = tile(x, sizes); dx = g viewed as (s0, d0, s1, d1, ...) summed over each s"""
    def forward(self, x, sizes):
        lead = len(sizes) - x.ndim
        self.shape = x.shape
        self.full = (1,) * lead + x.shape
        self.sizes = sizes
        return np.tile(x.reshape(self.full), sizes)

    def backward(self, g):
        pairs = tuple(v for s, d in zip(self.sizes, self.full, strict=True) for v in (s, d))
        return of(g).sum(g.reshape(pairs), tuple(range(0, len(pairs), 2))).reshape(self.shape)


class RepeatInterleave(Function):
    """y = x's slices along dim, slice i repeated r_i times; dx_i = the sum of its copies"""
    def forward(self, x, repeats, dim):
        self.dim, self.n = dim, x.shape[dim]
        self.r = int(repeats) if np.ndim(repeats) == 0 else None
        if self.r is None:
            self.src = np.repeat(np.arange(self.n), repeats)
        return np.repeat(x, repeats, axis=dim)

    def backward(self, g):
        xp, d = of(g), self.dim
        if self.r is not None:    # one count for all: the copies are an axis to sum (no add.at)
            return xp.sum(g.reshape(tuple(g.shape[:d]) + (self.n, self.r)
                                    + tuple(g.shape[d + 1:])), d + 1)
        return xp.run(SumRepeats, g, repeats=np.bincount(self.src, minlength=self.n), dim=d)


class SumRepeats(Function):
    """The adjoint of repeat_interleave: y_k = the sum of g's slices along dim that are
    copies of slice k (repeats[k] of them, in order); dg = repeat_interleave(u, repeats)."""
    op_name = "sum_repeats"

    def forward(self, g, repeats, dim):
        self.repeats, self.dim = repeats, dim
        gm = np.moveaxis(g, dim, 0)
        out = np.zeros((len(repeats),) + gm.shape[1:], g.dtype)
        np.add.at(out, np.repeat(np.arange(len(repeats)), repeats), gm)
        return np.moveaxis(out, 0, dim)

    def backward(self, u):
        return of(u).run(RepeatInterleave, u, repeats=self.repeats, dim=self.dim)


def _diag_view(a, offset, dim1, dim2):
    """A writable view of the diagonal of a along (dim1, dim2), as the last dim."""
    m = np.moveaxis(a, (dim1, dim2), (-2, -1))
    n1, n2 = m.shape[-2:]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(n1 - r0, n2 - c0))
    return m, np.arange(r0, r0 + length), np.arange(c0, c0 + length)


class Diagonal(Function):
    """y = the (dim1, dim2) diagonal at offset, as the last dim; dx = g written on that
    diagonal of zeros"""
    def forward(self, x, offset, dim1, dim2):
        if dim1 == dim2:
            raise OpError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        self.shape, self.args = x.shape, (offset, dim1, dim2)
        m, r, c = _diag_view(x, *self.args)
        return m[..., r, c]

    def backward(self, g):
        return of(g).run(DiagonalAdjoint, g, shape=self.shape, args=self.args)


class DiagonalAdjoint(Function):
    """The adjoint of diagonal: zeros of `shape` with g written on the (offset, dim1, dim2)
    diagonal; du = the diagonal of u."""
    op_name = "diagonal_adjoint"

    def forward(self, g, shape, args):
        self.args = args
        out = np.zeros(shape, g.dtype)
        m, r, c = _diag_view(out, *args)
        m[..., r, c] = g
        return out

    def backward(self, u):
        offset, dim1, dim2 = self.args
        return of(u).run(Diagonal, u, offset=offset, dim1=dim1, dim2=dim2)


def index_grid(index, dim):
    """numpy index tuple that picks, at each position of index, the element index[pos] along
    dim (torch's gather addressing: the other dims run over index's own shape)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


def box_index(shape, dim):
    """The index that addresses the box `shape` itself (index[p] = p[dim]): scattering
    through it writes src's leading box of that shape in place."""
    k = shape[dim]
    line = np.arange(k, dtype=np.int64).reshape([k if i == dim else 1 for i in range(len(shape))])
    return np.broadcast_to(line, shape).copy()


def check_index(name, x_shape, index, dim, src_shape=None):
    if index.dtype != np.int64:
        raise OpError(f"{name}: index must be int64, got {index.dtype}")
    if index.ndim != len(x_shape) and not (index.ndim <= 1 and len(x_shape) <= 1):
        raise OpError(f"{name}: index has {index.ndim} dims, the input {len(x_shape)}")
    for d, n in enumerate(index.shape):
        if d != dim and index.ndim == len(x_shape) and n > x_shape[d]:
            raise OpError(f"{name}: index {index.shape} is larger than the input "
                          f"{tuple(x_shape)} in dim {d}")
        if src_shape is not None and len(src_shape) == index.ndim and n > src_shape[d]:
            raise OpError(f"{name}: index {index.shape} is larger than src {tuple(src_shape)} "
                          f"in dim {d}")
    size = x_shape[dim] if x_shape else 1
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = int(index.min() if index.min() < 0 else index.max())
        raise OpError(f"{name}: index {bad} is out of bounds for dim {dim} with size {size} "
                      f"(0..{size - 1}; negative indices are refused, as in torch)")


class Gather(Function):
    """y[p] = x[p with p[dim] = index[p]]; dx = zeros with g added at those positions"""
    def forward(self, x, dim, index):
        check_index("gather", x.shape, index, dim)
        self.shape, self.grid, self.dim = x.shape, index_grid(index, dim), dim
        return x[self.grid]

    def backward(self, g):
        # scatter_add into zeros (np.add.at: repeated positions add up)
        return of(g).run(Scatter, np.zeros(self.shape, g.dtype), g, dim=self.dim,
                         index=self.grid[self.dim], add=True)


class Scatter(Function):
    """y = x with x[p with p[dim] = index[p]] = src[p] (add: +=), for p over index's shape;
    dx = g (zero where overwritten), dsrc = g at those positions (zero where index has none)"""
    def forward(self, x, src, dim, index, add=False):
        check_index("scatter_add" if add else "scatter", x.shape, index, dim, src.shape)
        self.add, self.src_shape, self.dim = add, src.shape, dim
        self.grid = index_grid(index, dim)
        self.sub = tuple(slice(0, n) for n in index.shape)
        out = x.astype(np.result_type(x, src), copy=True)
        vals = src[self.sub] if src.ndim else np.broadcast_to(src, index.shape)
        if add:
            np.add.at(out, self.grid, vals)
        else:
            out[self.grid] = vals
        return out

    def backward(self, g):
        xp, (nx, ns) = of(g), self.needs_input_grad
        index = self.grid[self.dim]
        dx = dsrc = None
        if nx:           # overwritten positions get zero: scatter zeros there
            dx = g if self.add else xp.run(Scatter, g, np.zeros(index.shape, g.dtype),
                                           dim=self.dim, index=index)
        if ns:
            picked = xp.run(Gather, g, dim=self.dim, index=index)
            if not self.src_shape:
                dsrc = picked.sum()
            elif self.src_shape == index.shape:
                dsrc = picked
            else:        # src larger than index: picked in its leading box, zeros elsewhere
                dsrc = xp.run(Scatter, np.zeros(self.src_shape, g.dtype), picked,
                              dim=self.dim, index=box_index(index.shape, self.dim))
        return dx, dsrc

