"""Hypothesis strategies for property tests of tinygradx ops (yours or ours).

    from hypothesis import given
    from tinygradx.testing import broadcastable_shapes, arrays
    import tinygradx as tgx

    @given(broadcastable_shapes(num_shapes=2))
    def test_my_op(shapes):
        a, b = (tgx.randn(*s, dtype="float64", requires_grad=True) for s in shapes)
        assert tgx.gradcheck(my_op, (a, b))

Needs the `hypothesis` package (the `test` extra).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..tensor import Tensor

MATMUL_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Array shapes with ndim in [min_dims, max_dims] and every side in [min_side, max_side]."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Tuples of `num_shapes` shapes that broadcast together (numpy rules), size-1 dims and
    missing leading dims included."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
        max_side=max_side).map(lambda r: r.input_shapes)


def matmul_shapes(max_batch_dims=2, min_side=1, max_side=5, allow_vectors=True):
    """Pairs (shape_a, shape_b) valid for a @ b: (..., n, k) @ (..., k, m) with batch dims that
    broadcast, plus 1-D operands as numpy defines them when allow_vectors."""
    sig = MATMUL_SIGNATURE if allow_vectors else "(n,k),(k,m)->(n,m)"
    return hnp.mutually_broadcastable_shapes(
        signature=sig, max_dims=max_batch_dims, min_side=min_side,
        max_side=max_side).map(lambda r: r.input_shapes)


def arrays(shape, dtype=np.float64, min_value=-3.0, max_value=3.0):
    """numpy arrays of a shape (or a shape strategy) with finite values in a range."""
    elements = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False,
                         width=64 if np.dtype(dtype) == np.float64 else 32)
    return hnp.arrays(dtype=dtype, shape=shape, elements=elements)


def tensors(shape, dtype=np.float64, min_value=-3.0, max_value=3.0, requires_grad=True):
    """Tensors of a shape (or a shape strategy), float64 by default for gradcheck."""
    return arrays(shape, dtype, min_value, max_value).map(
        lambda a: Tensor(a, requires_grad=requires_grad))
