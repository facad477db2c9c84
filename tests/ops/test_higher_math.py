"""Second (and third) derivatives of the ops of ops_math.py and ops_index.py: Hessian-vector
products against torch in float64, the recorded first derivative against the plain one at
the edges (zeros, inf, NaN), and gradgradcheck of the first derivatives themselves."""
import warnings

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor
from tinygradx.ops.index import Scan, Shift

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped
    torch = TF = None

RNG = np.random.default_rng(0)
ZEROS = np.array([[1.5, 0.0, 2.0, 0.0], [0.0, 3.0, 2.0, 1.0], [1.0, 0.5, 0.0, 2.0]])
IDX = np.array([[0, 0, 3], [1, 2, 2], [3, 3, 3]])        # repeated targets
PERM = np.array([[0, 2], [3, 1], [1, 0]])                 # distinct targets per row


def _normal(*shape):
    return RNG.standard_normal(shape)


def _ix(lib, a):
    """An index array in the library's type: numpy for tgx, a torch tensor for torch."""
    return a if lib == "tgx" else torch.tensor(a)


def _sq(y):
    return y * y


def _cube(y):
    return y * y * y


# name, inputs, f(lib, *xs): the same expression on tgx Tensors and on torch tensors
CASES = [
    ("sin", (_normal(3, 4),), lambda lib, x: x.sin()),
    ("cos", (_normal(3, 4),), lambda lib, x: x.cos()),
    ("log2", (RNG.uniform(0.3, 3, (3, 4)),), lambda lib, x: x.log2()),
    ("log10", (RNG.uniform(0.3, 3, (3, 4)),), lambda lib, x: x.log10()),
    ("exp2", (_normal(3, 4),), lambda lib, x: x.exp2()),
    ("logaddexp", (_normal(3, 4), _normal(4)), lambda lib, a, b: a.logaddexp(b)),
    ("lerp", (_normal(3, 4), _normal(3, 4), RNG.uniform(-0.5, 1.5, (3, 1))),
     lambda lib, a, b, w: a.lerp(b, w)),
    ("silu", (_normal(3, 4) * 3,), lambda lib, x: (F if lib == "tgx" else TF).silu(x)),
    ("softplus", (_normal(3, 4) * 3,), lambda lib, x: (F if lib == "tgx" else TF).softplus(x)),
    ("softplus[beta,threshold]", (RNG.uniform(-2, 2, (3, 4)),),    # some above the threshold
     lambda lib, x: (F if lib == "tgx" else TF).softplus(x, beta=2.0, threshold=1.0)),
    ("logsigmoid", (_normal(3, 4) * 3,), lambda lib, x: (F if lib == "tgx" else TF).logsigmoid(x)),
    ("elu", (_normal(3, 4) * 2,), lambda lib, x: (F if lib == "tgx" else TF).elu(x, alpha=0.5)),
    ("selu", (_normal(3, 4) * 2,), lambda lib, x: (F if lib == "tgx" else TF).selu(x)),
    ("leaky_relu", (_normal(3, 4),),
     lambda lib, x: _sq((F if lib == "tgx" else TF).leaky_relu(x, 0.2))),
    ("hardtanh", (_normal(3, 4),),
     lambda lib, x: _cube((F if lib == "tgx" else TF).hardtanh(x, -0.5, 0.5))),
    ("floor", (_normal(3, 4) + 0.5,), lambda lib, x: x.floor() * x * x),
    ("cumsum", (_normal(3, 4),), lambda lib, x: _sq(x.cumsum(1))),
    ("cumprod", (_normal(3, 4),), lambda lib, x: x.cumprod(1)),
    ("cumprod[zeros]", (ZEROS,), lambda lib, x: x.cumprod(1)),
    ("cumprod[zeros,dim0]", (ZEROS,), lambda lib, x: x.cumprod(0)),
    ("prod[zeros]", (ZEROS,), lambda lib, x: x.prod()),
    ("prod[two_zeros,dim1]", (ZEROS,), lambda lib, x: x.prod(1)),
    ("prod[zeros,keepdim]", (ZEROS,), lambda lib, x: x.prod(0, keepdim=True)),
    ("prod[one_zero]", (ZEROS[1],), lambda lib, x: x.prod()),
    ("flip", (_normal(3, 4),), lambda lib, x: x.flip(1) * x),
    ("roll", (_normal(3, 4),), lambda lib, x: x.roll((1, -2), (0, 1)) * x),
    ("repeat", (_normal(3, 4),), lambda lib, x: _sq(x.repeat(2, 1, 2))),
    ("repeat_interleave", (_normal(3, 4),),
     lambda lib, x: _sq(x.repeat_interleave(_ix(lib, np.array([0, 2, 1])), dim=0))),
    ("diagonal", (_normal(3, 4),), lambda lib, x: _cube(x.diagonal(1))),
    ("gather", (_normal(3, 4),), lambda lib, x: _sq(x.gather(1, _ix(lib, IDX)))),
    ("scatter", (_normal(3, 4), _normal(3, 2)),
     lambda lib, x, s: _sq(x.scatter(1, _ix(lib, PERM), s * s))),
    ("scatter[larger_src]", (_normal(3, 4), _normal(4, 3)),
     lambda lib, x, s: _sq(x.scatter(1, _ix(lib, PERM), s * s))),
    ("scatter_add", (_normal(3, 4), _normal(3, 3)),
     lambda lib, x, s: _sq((x * x).scatter_add(1, _ix(lib, IDX), s))),
    ("sort", (_normal(3, 4),), lambda lib, x: _cube(x.sort(1)[0])),
    ("topk", (_normal(3, 4),), lambda lib, x: _cube(x.topk(2, 1)[0])),
]


def _hvp_tgx(f, arrays, w, vs):
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    out = f("tgx", *xs)
    gs = tgx.grad((out * Tensor(w)).sum(), xs, create_graph=True)
    inner = sum((g * Tensor(v)).sum() for g, v in zip(gs, vs, strict=True))
    return [h.numpy() for h in tgx.grad(inner, xs)]


def _hvp_torch(f, arrays, w, vs):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = f("torch", *xs)
    gs = torch.autograd.grad((out * torch.tensor(w)).sum(), xs, create_graph=True)
    inner = sum((g * torch.tensor(v)).sum() for g, v in zip(gs, vs, strict=True))
    return [np.zeros(x.shape) if h is None else h.numpy()
            for x, h in zip(xs, torch.autograd.grad(inner, xs, allow_unused=True),
                            strict=True)]


# torch's own scatter backward refuses a src larger than the index (a shape error)
_TORCH_CASES = [c for c in CASES if c[0] != "scatter[larger_src]"]


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name,arrays,f", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
def test_hessian_vector_product_matches_torch(name, arrays, f):
    w = RNG.standard_normal(f("tgx", *[Tensor(a) for a in arrays]).shape)
    vs = [RNG.standard_normal(a.shape) for a in arrays]
    got, want = _hvp_tgx(f, arrays, w, vs), _hvp_torch(f, arrays, w, vs)
    for i, (g, t) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, t, rtol=1e-6, atol=1e-6, err_msg=f"{name}: input {i}")


def test_prod_second_derivative_between_two_zeros():
    # d2/dx_i dx_j prod(x) = the product of the others, also where x_i = x_j = 0
    x = Tensor(np.array([1.5, 0.0, 2.0, 0.0]), requires_grad=True)
    (g,) = tgx.grad(x.prod(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), 0.0)
    (h,) = tgx.grad(g[1], x)
    np.testing.assert_array_equal(h.numpy(), [0.0, 0.0, 0.0, 3.0])


# ------------------------------------------------------------------------------------------
# the recorded first derivative is the plain one, at the edges too
# ------------------------------------------------------------------------------------------

_EDGES = (_normal(3, 4) * 3, ZEROS, np.array([[np.inf, -np.inf, np.nan, 0.0]] * 3))
_FIRST = [c for c in CASES if len(c[1]) == 1 and c[0] not in ("log2", "log10")] + [
    ("log2", None, lambda lib, x: (x * x + 0.1).log2()),
    ("log10", None, lambda lib, x: (x * x + 0.1).log10()),
    ("logaddexp[inf]", None, lambda lib, x: x.logaddexp(x.flip(1) * 3)),
    ("lerp[scalar]", None, lambda lib, x: x.lerp(x * 2, 0.3)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,f", [(c[0], c[2]) for c in _FIRST], ids=[c[0] for c in _FIRST])
def test_create_graph_gives_the_plain_first_derivative(name, f, dtype):
    for base in _EDGES:
        x = Tensor(base.astype(dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            v = Tensor(RNG.standard_normal(f("tgx", x).shape).astype(dtype))
            (plain,) = tgx.grad(f("tgx", x), x, v)
            (recorded,) = tgx.grad(f("tgx", x), x, v, create_graph=True)
        assert recorded.dtype == plain.dtype
        if name in ("log2", "log10", "exp2"):
            # backward multiplies by the float64 scalar log(2) (in float64, then rounded);
            # the recorded rule stays in the input's dtype, and numpy versions order the
            # constant's product differently: one rounding apart
            np.testing.assert_allclose(recorded.detach().numpy(), plain.detach().numpy(),
                                       rtol=1e-6 if dtype == np.float32 else 1e-14)
        else:
            np.testing.assert_array_equal(recorded.detach().numpy(), plain.detach().numpy())


# ------------------------------------------------------------------------------------------
# the rules are differentiable again: third derivatives
# ------------------------------------------------------------------------------------------

def _first_derivative(f):
    def d(*args):
        xs, v = args[:-1], args[-1]
        return tgx.grad(f("tgx", *xs), list(xs), v, create_graph=True)
    return d


@pytest.mark.parametrize("name,arrays,f", CASES, ids=[c[0] for c in CASES])
def test_third_derivative(name, arrays, f):
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    v = Tensor(RNG.standard_normal(f("tgx", *xs).shape), requires_grad=True)
    assert tgx.gradgradcheck(_first_derivative(f), (*xs, v))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shifted", [False, True])
def test_scan_helper(reverse, shifted):
    """The recurrence the cumprod/prod rules use: its value, and two orders of gradients."""
    b, a = Tensor(_normal(3, 5), requires_grad=True), Tensor(_normal(3, 5), requires_grad=True)
    h = Scan.apply(b, a, dim=1, reverse=reverse, shifted=shifted).detach().numpy()
    bb, aa = b.detach().numpy(), a.detach().numpy()
    for i in range(5):                       # the definition, term by term
        js = range(i, 5) if reverse else range(0, i + 1)
        want = 0.0
        for j in js:
            lo, hi = (i, j) if reverse else (j, i)
            coef = np.prod(aa[:, lo:hi] if shifted == (not reverse) else aa[:, lo + 1:hi + 1],
                           axis=1)
            want = want + bb[:, j] * coef
        np.testing.assert_allclose(h[:, i], want, rtol=1e-12, atol=1e-12)
    assert tgx.gradgradcheck(lambda p, q: Scan.apply(p, q, dim=1, reverse=reverse,
                                                     shifted=shifted), (b, a))
    assert tgx.gradgradcheck(lambda p: Shift.apply(p, dim=1, by=2 if reverse else -1), (b,))
