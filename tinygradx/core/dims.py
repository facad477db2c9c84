"""Dim arguments: every `dim` a user passes goes through check_dim or normalize_dims, so a dim
out of range always gets the same message ("dim 5 is out of range for a 2-d tensor
(expected -2..1)"), whichever op it was given to.
"""
from __future__ import annotations

import numpy as np

from .node import OpError


def dim_error(dim, ndim, extra=0):
    """The one message for a dim outside a tensor's range (extra=1: a new dim may be added)."""
    n = max(ndim + extra, 1)
    return OpError(f"dim {dim} is out of range for a {ndim}-d tensor (expected {-n}..{n - 1})")


def check_dim(name, dim, ndim, extra=0):
    """One dim argument as a non-negative int, or an OpError starting with `name: `.

    extra=1 for an op that inserts a dim (unsqueeze, stack): dims -ndim-1..ndim are valid. A
    0-d tensor accepts dim 0 and -1, as in PyTorch. Costs two comparisons on the happy path.
    """
    n = ndim + extra
    if type(dim) is int and -n <= dim < n:
        return dim + n if dim < 0 else dim
    prefix = f"{name}: " if name else ""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise OpError(f"{prefix}dim must be an int, got {dim!r}")
    if n == 0 and -1 <= dim <= 0:
        return 0
    if -n <= dim < n:                                # a numpy integer
        return int(dim) % n
    raise OpError(prefix + str(dim_error(dim, ndim, extra)))


def normalize_dims(dim, ndim):
    """Normalise dim (None, int or tuple) to a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if not isinstance(dim, (int, np.integer, tuple, list)) or isinstance(dim, bool):
        raise OpError(f"dim must be an int or a tuple of ints, got {dim!r}")
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise OpError(f"dim must be an int or a tuple of ints, got {d!r}")
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise dim_error(d, ndim)
        out.append(int(d) % max(ndim, 1) if ndim else 0)
    if len(set(out)) != len(out):
        raise OpError(f"dim {dim} repeats an axis")
    return tuple(sorted(out)) if ndim else ()
