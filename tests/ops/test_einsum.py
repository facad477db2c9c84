"""tgx.einsum beyond the op-info entry: one graph node, no aliasing, the call forms, the
cached plan (values and gradients against torch are in tests/opinfo.py)."""
import numpy as np

import tinygradx as tgx
from tinygradx import Tensor


def _nodes(out):
    return [type(p._ctx).__name__ for p in out._ctx.parents if p._ctx is not None]


def test_one_node_whatever_the_equation():
    a = tgx.randn(2, 3, requires_grad=True)
    b = tgx.randn(5, 1, 3, 3, requires_grad=True)
    out = tgx.einsum("...ii,ki->...k", b, a)
    assert type(out._ctx).__name__ == "Einsum"
    assert out._ctx.parents == (b, a) and not _nodes(out)
    out.sum().backward()
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


def test_output_never_aliases_an_input():
    x = tgx.randn(2, 3)
    y = tgx.einsum("ij->ji", x)            # numpy's einsum would return a view
    y.numpy()[...] = 0
    assert np.all(x.numpy() != 0)


def test_list_and_sublist_forms():
    a, b = tgx.randn(2, 3), tgx.randn(3, 4)
    want = (a @ b).numpy()
    np.testing.assert_allclose(tgx.einsum("ij,jk->ik", [a, b]).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(tgx.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), want,
                               rtol=1e-6)
    np.testing.assert_allclose(tgx.einsum(a, [Ellipsis, 1], [1]).numpy(),
                               a.numpy().sum(0), rtol=1e-6)


def test_gradient_of_a_repeated_operand_sums_both_uses():
    x = Tensor(np.arange(3.0), requires_grad=True)
    tgx.einsum("i,i->", x, x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(3.0))


def test_diagonal_gradient_is_zero_off_the_diagonal():
    x = Tensor(np.ones((3, 3)), requires_grad=True)
    tgx.einsum("ii->i", x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3))
