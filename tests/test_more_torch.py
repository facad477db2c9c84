"""More of PyTorch's names, beyond the op-info table (tests/opinfo.py holds every op): the
views and shared gradients of the movement ops torch adds, and the one-line errors of the new
ops."""
import numpy as np
import pytest

import tinygradx as tgx

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# -- views and gradients of the movement ops -------------------------------------------------

def test_unbind_pieces_share_one_gradient():
    x = tgx.randn(3, 4, requires_grad=True)
    a, b, c = x.unbind(0)
    (a * 1 + b * 2 + c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))


def test_views_share_memory_as_torch():
    x = tgx.zeros(2, 3)
    x.narrow(1, 1, 2).numpy()[...] = 1.0
    x.select(0, 1).numpy()[0] = 5.0
    x.t().numpy()[2, 0] = 7.0
    assert x.tolist() == [[0.0, 1.0, 7.0], [5.0, 1.0, 1.0]]
    v = tgx.zeros(3)
    assert v.t().shape == (3,) and tgx.tensor(2.0).t().shape == ()


# -- one-line errors that name the op --------------------------------------------------------

ERRORS = [
    (lambda: tgx.zeros(2, 3, 4).t(), tgx.OpError, r"t: expects a tensor with at most 2 dims"),
    (lambda: tgx.zeros(2, 3).select(1, 3), tgx.OpError,
     r"select: index 3 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).select(1, 1.0), tgx.OpError, r"select: index must be an int"),
    (lambda: tgx.tensor(1.0).select(0, 0), tgx.OpError,
     r"select: needs a tensor with at least 1 dim"),
    (lambda: tgx.zeros(2, 3).narrow(1, 2, 2), tgx.OpError,
     r"narrow: start 2 and length 2 do not fit in dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, -4, 1), tgx.OpError,
     r"narrow: start -4 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, 0, -1), tgx.OpError, r"narrow: start 0 and length -1"),
    (lambda: tgx.tensor(1.0).unbind(), tgx.OpError, r"unbind: needs a tensor with at least"),
    (lambda: tgx.zeros(2, 3).unbind(2), tgx.OpError, r"unbind: dim 2 is out of range"),
    (lambda: tgx.zeros(2, 3).movedim((0, 0), (1, 0)), tgx.OpError,
     r"movedim: repeated dim in source \(0, 0\)"),
    (lambda: tgx.zeros(2, 3).movedim((0, 1), (1,)), tgx.OpError,
     r"movedim: source \(0, 1\) has 2 dims but destination \(1,\) has 1"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([2])), tgx.OpError,
     r"index_select: index \[2\] is out of range for dim 0 of size 2"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([-1])), tgx.OpError,
     r"index_select: .*negative indices are refused"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([[0]])), tgx.OpError,
     r"index_select: index must be 1-d"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([0.0])), tgx.OpError,
     r"index_select: index must be an integer tensor"),
    (lambda: tgx.addmm(tgx.zeros(3), tgx.zeros(2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: mat1 and mat2 must be matrices that chain"),
    (lambda: tgx.addmm(tgx.zeros(2, 1, 3), tgx.zeros(2, 2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: input of shape \(2, 1, 3\) does not broadcast"),
    (lambda: tgx.addmm(tgx.zeros(3, dtype=tgx.long), tgx.zeros(2, 2), tgx.zeros(2, 3)),
     TypeError, r"addmm: input, mat1 and mat2 must have one dtype"),
    (lambda: tgx.tensor([True]).neg(), tgx.OpError, r"neg: .*`~`"),
    (lambda: tgx.reshape([1, 2], (2,)), TypeError, r"reshape: expected a Tensor"),
]


@pytest.mark.parametrize("call,kind,pattern", ERRORS, ids=[p[:40] for _, _, p in ERRORS])
def test_errors_name_the_op(call, kind, pattern):
    with pytest.raises(kind, match=pattern) as e:
        call()
    assert "\n" not in str(e.value)
