"""torch's functions of several tensors (or of sizes) beyond cat and stack: the stacking
variants (hstack, vstack, dstack, column_stack, row_stack, concat, atleast_1d/2d/3d), grids
and broadcasting (meshgrid, broadcast_tensors, broadcast_shapes, cartesian_prod,
combinations), block and triangle builders (block_diag, tril_indices, triu_indices, vander),
the trapezoid rule, tensordot, chain_matmul, distances (cdist, pdist), unravel_index, and the
function forms of matrix_methods.py's Tensor methods (torch.diag(x) is x.diag(), ...).

Each is written with the engine's ops (cat, expand, reshape, index_select, matmul, norm), so
it differentiates as they do. Index and size results are int64 tensors, as torch's.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..autograd import OpError
from ..core.dims import check_dim
from ..shapes import Size
from ..core.tensor_base import TensorBase
from ..ops import movement
from ..ops.dtypes import as_dtype, refuse_unsigned, result_type
from . import Tensor
from .matrix_methods import MatrixMethods
from .more_math import function_form


def _tensors(name, tensors):
    """tensors given as f(a, b) or f([a, b]), each a Tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if not isinstance(t, TensorBase):
            raise TypeError(f"{name}: expected Tensors, got {type(t).__name__}")
    return tuple(tensors)


def _cat(tensors, dim):
    return movement.Cat.apply(*tensors, dim=dim)


# -- reshaping to a least number of dims, and stacking ---------------------------------------

def _least(t, n):
    """t with at least n dims (1 to 3), as torch's atleast_nd: (k,) -> (1, k) -> (1, k, 1),
    (a, b) -> (a, b, 1)."""
    if t.ndim >= n:
        return t
    if n == 1 or t.ndim == 0:
        return t.reshape((1,) * n)
    if n == 2:
        return t.reshape(1, -1)
    return t.reshape(1, -1, 1) if t.ndim == 1 else t.unsqueeze(-1)


def _atleast(name, n, tensors):
    ts = _tensors(name, tensors)
    out = tuple(_least(t, n) for t in ts)
    one = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    return out[0] if one else out


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d one becomes (1,))."""
    return _atleast("atleast_1d", 1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims ((n,) becomes (1, n))."""
    return _atleast("atleast_2d", 2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims ((n,) becomes (1, n, 1), (a, b) becomes (a, b, 1))."""
    return _atleast("atleast_3d", 3, tensors)


def hstack(tensors):
    """Join along dim 1 (dim 0 for 1-d tensors)."""
    ts = [atleast_1d(t) for t in _tensors("hstack", (tensors,))]
    return _cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Join along dim 0, 1-d tensors as rows."""
    return _cat([atleast_2d(t) for t in _tensors("vstack", (tensors,))], 0)


row_stack = vstack


def dstack(tensors):
    """Join along dim 2, after atleast_3d."""
    return _cat([atleast_3d(t) for t in _tensors("dstack", (tensors,))], 2)


def column_stack(tensors):
    """Join along dim 1, 0-d and 1-d tensors as columns."""
    ts = _tensors("column_stack", (tensors,))
    return _cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in ts], 1)


def concat(tensors, dim=0):
    """torch.concat: cat."""
    return _cat(_tensors("concat", (tensors,)), dim)


# -- grids and broadcasting ------------------------------------------------------------------

def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a Size)."""
    norm = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {norm} are not broadcastable") from None


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape (views)."""
    ts = _tensors("broadcast_tensors", tensors)
    shape = tuple(broadcast_shapes(*(tuple(t.shape) for t in ts)))
    return tuple(t if tuple(t.shape) == shape else t.expand(*shape) for t in ts)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-d (or 0-d) tensors: "ij" (the default, as torch's) gives
    grids of shape (len(t0), len(t1), ...), "xy" swaps the first two dims."""
    ts = _tensors("meshgrid", tensors)
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in ts:
        if t.ndim > 1:
            raise OpError(f"meshgrid: expects 0-d or 1-d tensors, got shape {tuple(t.shape)}")
    ts = [t.reshape(-1) for t in ts]
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    grids = [t.reshape(tuple(-1 if i == k else 1 for i in range(len(ts)))).expand(*shape)
             for k, t in enumerate(ts)]
    if indexing == "xy" and len(ts) >= 2:        # the grids back in the inputs' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, one row each (a single tensor
    comes back as it is)."""
    ts = _tensors("cartesian_prod", tensors)
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return movement.Stack.apply(*(g.reshape(-1) for g in grids), dim=1)


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-d tensor's elements, one row each (as
    itertools.combinations, or combinations_with_replacement)."""
    if input.ndim != 1:
        raise OpError(f"combinations: expects a 1-d tensor, got {input.ndim} dims")
    refuse_unsigned("combinations", input)
    if r == 0:                                   # torch: an empty 1-d constant
        return input._op_class._from_op(np.zeros(0, input.dtype), None)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return input[rows]


# -- builders ------------------------------------------------------------------------------

def _indices(fn, row, col, offset, dtype):
    rows, cols = fn(row, offset, col)
    return Tensor(np.stack([rows, cols]).astype(as_dtype(dtype) or np.int64))


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) coordinates of the lower triangle (j <= i + offset) of a row x col matrix."""
    return _indices(np.tril_indices, row, col, offset, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) coordinates of the upper triangle (j >= i + offset) of a row x col matrix."""
    return _indices(np.triu_indices, row, col, offset, dtype)


def block_diag(*tensors):
    """The tensors (0-d, 1-d as a row, 2-d) on the diagonal of one matrix, zeros elsewhere."""
    ts = _tensors("block_diag", tensors)
    if not ts:
        raise OpError("block_diag: needs at least one tensor")
    dt = result_type(*ts)
    blocks = []
    for t in ts:
        if t.ndim > 2:
            raise OpError(f"block_diag: expects 0-d, 1-d or 2-d tensors, got {t.ndim} dims")
        blocks.append((t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1
                       else t).to(dt))
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = b.shape
        parts = [b]
        if left:
            parts.insert(0, b.new_zeros(h, left))
        if width - left - w:
            parts.append(b.new_zeros(h, width - left - w))
        rows.append(_cat(parts, 1) if len(parts) > 1 else b)
        left += w
    return _cat(rows, 0)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: column j is x ** (N - 1 - j) (x ** j when
    increasing); int and bool inputs give int64."""
    if x.ndim != 1:
        raise OpError(f"vander: x must be a 1-d tensor, got {x.ndim} dims")
    refuse_unsigned("vander", x)
    n = x.shape[0] if N is None else N
    if n < 0:
        raise OpError(f"vander: N must be non-negative, got {N}")
    powers = np.arange(n) if increasing else np.arange(n)[::-1].copy()
    base = x if x.dtype.kind == "f" else x.long()
    cols = [base ** int(p) for p in powers]
    if not cols:                                 # (n, 0), still a function of x
        return base.unsqueeze(1)[:, :0]
    return movement.Stack.apply(*cols, dim=1)


# -- integrals, contractions, distances -------------------------------------------------------

def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoid rule: spacing dx (1) or the points x."""
    d = check_dim("trapezoid", dim, y.ndim)
    lead = (slice(None),) * d
    mid = (y[lead + (slice(1, None),)] + y[lead + (slice(0, -1),)]) / 2
    if x is None:
        return mid.sum(d) * (1 if dx is None else dx)
    steps = x.diff(dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1 and y.ndim > 1:
        steps = steps.reshape(tuple(-1 if i == d else 1 for i in range(y.ndim)))
    return (mid * steps).sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid integral along dim (one element shorter)."""
    d = check_dim("cumulative_trapezoid", dim, y.ndim)
    lead = (slice(None),) * d
    mid = (y[lead + (slice(1, None),)] + y[lead + (slice(0, -1),)]) / 2
    if x is None:
        return (mid * (1 if dx is None else dx)).cumsum(d)
    steps = x.diff(dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1 and y.ndim > 1:
        steps = steps.reshape(tuple(-1 if i == d else 1 for i in range(y.ndim)))
    return (mid * steps).cumsum(d)


def tensordot(a, b, dims=2):
    """The sum over a's last dims and b's first (dims an int), or over the listed pairs
    (dims = ([a dims], [b dims])): one matmul after a permute and a reshape of each."""
    if isinstance(dims, (int, np.integer)):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    da = [check_dim("tensordot", d, a.ndim) for d in da]
    db = [check_dim("tensordot", d, b.ndim) for d in db]
    if [a.shape[i] for i in da] != [b.shape[i] for i in db]:
        raise OpError(f"tensordot: contracted dims differ in size: {[a.shape[i] for i in da]} "
                      f"and {[b.shape[i] for i in db]}")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [i for i in range(b.ndim) if i not in db]
    k = int(np.prod([a.shape[i] for i in da]))
    am = a.permute(*fa, *da).reshape(int(np.prod([a.shape[i] for i in fa])), k)
    bm = b.permute(*db, *fb).reshape(k, int(np.prod([b.shape[i] for i in fb])))
    return (am @ bm).reshape(tuple(a.shape[i] for i in fa) + tuple(b.shape[i] for i in fb))


def chain_matmul(*matrices):
    """The product of the matrices, left to right (torch.chain_matmul)."""
    ms = _tensors("chain_matmul", matrices)
    if not ms:
        raise OpError("chain_matmul: expects at least one matrix")
    out = ms[0]
    for m in ms[1:]:
        out = out.mm(m)
    return out


def _minkowski(d, p, dim=-1):
    """The p-norm of d along dim, for any p >= 0 (0: the count of non-zero entries)."""
    if p == 0:
        return (d != 0).sum(dim).to(d.dtype)
    if p >= 1 or p == float("inf"):
        return d.norm(p, dim=dim)
    return (d.abs() ** p).sum(dim) ** (1 / p)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M):
    (..., P, R)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise OpError(f"cdist: expects (..., P, M) and (..., R, M), got {tuple(x1.shape)} "
                      f"and {tuple(x2.shape)}")
    _check_distance_args("cdist", p, x1, x2)
    return _minkowski(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def _check_distance_args(name, p, *tensors):
    # torch refuses both before computing: a negative p is no norm, and integer rows no distance
    if p < 0:
        raise OpError(f"{name}: p must be non-negative, got {p}")
    for t in tensors:
        if t.dtype.kind != "f":
            raise TypeError(f"{name}: only floating-point inputs are supported (as torch), got "
                            f"{t.dtype}")


def pdist(input, p=2):
    """The p-norm distances between the rows of a (N, M) matrix, i < j, as one vector."""
    if input.ndim != 2:
        raise OpError(f"pdist: expects a 2-d input, got {input.ndim} dims")
    _check_distance_args("pdist", p, input)
    i, j = np.triu_indices(input.shape[0], 1)
    return _minkowski(input[i] - input[j], p)


def unravel_index(indices, shape):
    """The coordinates of flat indices into shape: a tuple of int64 tensors (an index
    outside 0..numel-1 is taken modulo numel, as torch does)."""
    idx = indices._data if isinstance(indices, TensorBase) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"unravel_index: expected an integer tensor, got {idx.dtype}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape))
    coords = np.unravel_index(idx % n if n else idx, shape)   # torch wraps any index around
    return tuple(indices._op_class._from_op(c.astype(np.int64), None) for c in coords)


# -- the function forms of MatrixMethods (torch.diag(x) is x.diag(), ...) ----------------------

def _form(name):
    return function_form(name, owner=MatrixMethods)


diag, diag_embed, diagflat, trace = (_form("diag"), _form("diag_embed"), _form("diagflat"),
                                     _form("trace"))
kron, cross, dist, renorm = _form("kron"), _form("cross"), _form("dist"), _form("renorm")
rot90, fliplr, flipud, diff = _form("rot90"), _form("fliplr"), _form("flipud"), _form("diff")
tensor_split, hsplit, vsplit, dsplit = (_form("tensor_split"), _form("hsplit"),
                                        _form("vsplit"), _form("dsplit"))
gcd, lcm = _form("gcd"), _form("lcm")
gcd_, lcm_ = _form("gcd_"), _form("lcm_")
