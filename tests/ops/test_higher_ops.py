"""Second derivatives of the ops in ops.py, ops_reduce.py and ops_linalg.py against PyTorch.

Each case is a Hessian-vector product in float64: g = d f / d xs recorded with
create_graph=True, then d <g, v> / d xs, compared with torch's to 1e-6. The function is
f = sum(w * y + y * y / 2) with y = op(*xs), so that the incoming gradient of the op's
backward depends on the inputs too (the rule must be differentiable in g as well as in xs).
"""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor

torch = pytest.importorskip("torch", reason="torch (the test oracle) not installed: "
                            "pip install torch")
import torch.nn.functional as TF  # noqa: E402

TOL = dict(atol=1e-6, rtol=1e-6)


def _arrays(shapes, seed, low, high):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, s) for s in shapes]


def _hvp(op, xs, w, vs, grad_mod):
    """(f, g, Hv) of f = sum(w * y + y^2 / 2), y = op(*xs), with grad_mod's autograd."""
    y = op(*xs)
    f = (w * y + y * y * 0.5).sum()
    gs = grad_mod(f, xs, create_graph=True)
    inner = sum((g * v).sum() for g, v in zip(gs, vs, strict=True))
    return f, gs, grad_mod(inner, xs)


def check_hvp(tgx_op, torch_op, shapes, seed=0, low=-2.0, high=2.0):
    arrays = _arrays(shapes, seed, low, high)
    rng = np.random.default_rng(seed + 100)
    vs = [rng.standard_normal(a.shape) for a in arrays]
    xs = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    out_shape = tgx_op(*xs).shape
    w = rng.standard_normal(out_shape)
    ts = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    f, gs, hv = _hvp(tgx_op, xs, Tensor(w), [Tensor(v) for v in vs],
                     lambda o, i, **k: tgx.grad(o, i, **k))
    tf, tgs, thv = _hvp(torch_op, ts, torch.tensor(w), [torch.tensor(v) for v in vs],
                        lambda o, i, **k: torch.autograd.grad(o, i, **k))
    np.testing.assert_allclose(f.item(), tf.item(), **TOL)
    for i, (a, b) in enumerate(zip(gs, tgs, strict=True)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), err_msg=f"gradient {i}",
                                   **TOL)
    for i, (a, b) in enumerate(zip(hv, thv, strict=True)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), err_msg=f"Hv of input {i}", **TOL)


# (id, tinygradx op, torch op, input shapes, uniform range of the inputs)
CASES = [
    ("exp", lambda x: x.exp(), torch.exp, [(3, 4)], (-2, 2)),
    ("log", lambda x: x.log(), torch.log, [(3, 4)], (0.3, 3)),
    ("sqrt", lambda x: x.sqrt(), torch.sqrt, [(5,)], (0.3, 3)),
    ("rsqrt", lambda x: x.rsqrt(), torch.rsqrt, [(5,)], (0.3, 3)),
    ("tanh", lambda x: x.tanh(), torch.tanh, [(3, 4)], (-2, 2)),
    ("sigmoid", lambda x: x.sigmoid(), torch.sigmoid, [(3, 4)], (-4, 4)),
    ("erf", lambda x: x.erf(), torch.erf, [(7,)], (-2, 2)),
    ("relu", lambda x: x.relu(), torch.relu, [(3, 4)], (-2, 2)),
    ("abs", lambda x: x.abs(), torch.abs, [(3, 4)], (-2, 2)),
    ("clamp", lambda x: x.clamp(-0.5, 0.7), lambda x: x.clamp(-0.5, 0.7), [(4, 5)], (-2, 2)),
    ("pow", lambda a, b: a ** b, lambda a, b: a ** b, [(3, 4), (4,)], (0.3, 2)),
    ("pow_scalar3", lambda x: x ** 3, lambda x: x ** 3, [(6,)], (-2, 2)),
    ("pow_scalar-1.5", lambda x: x ** -1.5, lambda x: x ** -1.5, [(6,)], (0.3, 2)),
    ("square", lambda x: x.square(), torch.square, [(6,)], (-2, 2)),
    ("rpow", lambda x: 2.5 ** x, lambda x: 2.5 ** x, [(6,)], (-2, 2)),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [(3, 1), (4,)], (0.5, 2)),
    ("mul_sub", lambda a, b: a * b - b, lambda a, b: a * b - b, [(2, 3), (3,)], (-2, 2)),
    ("maximum", tgx.maximum, torch.maximum, [(3, 4), (4,)], (-2, 2)),
    ("minimum", tgx.minimum, torch.minimum, [(3, 4), (4,)], (-2, 2)),
    ("amax", lambda x: x.amax(1), lambda x: x.amax(1), [(3, 5)], (-2, 2)),
    ("amin_keepdim", lambda x: x.amin((0, 2), keepdim=True),
     lambda x: x.amin((0, 2), keepdim=True), [(2, 3, 4)], (-2, 2)),
    ("max_all", lambda x: x.max(), lambda x: x.max(), [(3, 4)], (-2, 2)),
    ("var", lambda x: x.var(1), lambda x: x.var(1), [(3, 5)], (-2, 2)),
    ("var_correction0", lambda x: x.var(0, correction=0, keepdim=True),
     lambda x: x.var(0, correction=0, keepdim=True), [(4, 3)], (-2, 2)),
    ("var_all", lambda x: x.var(), lambda x: x.var(), [(3, 4)], (-2, 2)),
    ("std", lambda x: x.std(-1), lambda x: x.std(-1), [(2, 6)], (-2, 2)),
    ("logsumexp", lambda x: x.logsumexp(1), lambda x: x.logsumexp(1), [(3, 5)], (-3, 3)),
    ("logsumexp_keepdim", lambda x: x.logsumexp((0, 2), keepdim=True),
     lambda x: x.logsumexp((0, 2), keepdim=True), [(2, 3, 4)], (-3, 3)),
    ("sum_mean", lambda x: x.sum(0) * x.mean(1).sum(), lambda x: x.sum(0) * x.mean(1).sum(),
     [(3, 4)], (-2, 2)),
]


@pytest.mark.parametrize("name,op,top,shapes,bounds", CASES, ids=[c[0] for c in CASES])
def test_hvp_vs_torch(name, op, top, shapes, bounds):
    check_hvp(op, top, shapes, low=bounds[0], high=bounds[1])


_COND = np.array([[True, False, True, False]] * 2 + [[False, True, True, False]])


def test_hvp_where_and_masked_fill():
    check_hvp(lambda a, b: tgx.where(Tensor(_COND), a * a, b.exp()),
              lambda a, b: torch.where(torch.tensor(_COND), a * a, b.exp()), [(3, 4), (4,)])
    check_hvp(lambda x: (x * x).masked_fill(Tensor(_COND), 1.5),
              lambda x: (x * x).masked_fill(torch.tensor(_COND), 1.5), [(3, 4)])


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),          # a shared 2-D right operand (the folded GEMM)
    ((4,), (2, 4, 3)),            # 1-D left operand, broadcast over the batch
    ((2, 1, 3, 4), (5, 4, 2)),    # batch dims broadcast both ways
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (4,)),            # 1-D right operand
    ((4,), (4,)),                 # vector @ vector: a 0-d result
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_hvp_matmul_vs_torch(sa, sb):
    check_hvp(lambda a, b: a @ b, lambda a, b: a @ b, [sa, sb])


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xshape", [(2, 3, 4), (4,)])
def test_hvp_linear_vs_torch(bias, xshape):
    shapes = [xshape, (5, 4)] + ([(5,)] if bias else [])
    check_hvp(lambda *a: F.linear(*a).tanh(), lambda *a: TF.linear(*a).tanh(), shapes)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_hvp_embedding_vs_torch(padding_idx):
    """The weight gradient (a scatter-add of rows, repeated ids summed, the padding row
    left out) is itself differentiated: through the tanh after the lookup."""
    ids = np.array([[0, 2, 3], [3, 3, 1]])
    check_hvp(lambda w: F.embedding(Tensor(ids), w, padding_idx).tanh(),
              lambda w: TF.embedding(torch.tensor(ids), w, padding_idx).tanh(), [(5, 4)])


def test_third_derivative_vs_torch():
    """The rules are made of ops that have rules: differentiate three times."""
    a = np.random.default_rng(0).uniform(0.3, 2.0, (3, 4))

    def third(x, grad, f):
        (g,) = grad(f(x), x, create_graph=True)
        (h,) = grad(g.sum(), x, create_graph=True)
        return grad(h.sum(), x)[0]

    for f in (lambda x: x.tanh().sum(), lambda x: (x.log() * x.exp()).sum(),
              lambda x: (x ** 2.5 + x.sigmoid() / x.sqrt()).sum(),
              lambda x: x.logsumexp(1).sum()):
        got = third(Tensor(a, requires_grad=True), lambda o, i, **k: tgx.grad(o, i, **k), f)
        want = third(torch.tensor(a, requires_grad=True),
                     lambda o, i, **k: torch.autograd.grad(o, i, **k), f)
        np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL)


def test_pow_edges():
    """At a == 0 or b == 0 the recorded first derivative is backward's (torch's values), and
    the second derivatives are finite: 0**0 and 0**2 give no NaN (torch gives NaN there), and
    at b == 0 the mixed derivative is the true 1/a from both sides (torch gives 0 for d ga/db
    but 1/a for d gb/da)."""
    a0, b0 = np.array([2.0, 0.0, 0.0, 3.0]), np.array([0.0, 0.0, 2.0, 1.5])
    a, b = Tensor(a0, requires_grad=True), Tensor(b0, requires_grad=True)
    plain = tgx.grad((a ** b).sum(), (a, b))
    ga, gb = tgx.grad((a ** b).sum(), (a, b), create_graph=True)
    for p, r in zip(plain, (ga, gb), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (a0, b0))
    tga, tgb = torch.autograd.grad((ta ** tb).sum(), (ta, tb))
    np.testing.assert_allclose(ga.detach().numpy(), tga.detach().numpy())
    np.testing.assert_allclose(gb.detach().numpy(), tgb.detach().numpy())
    daa, dab = tgx.grad(ga.sum(), (a, b), retain_graph=True)
    dba, dbb = tgx.grad(gb.sum(), (a, b))
    for h in (daa, dab, dba, dbb):
        assert np.all(np.isfinite(h.numpy()))
    np.testing.assert_allclose(dab.numpy()[0], 0.5)          # 1/a at a = 2, b = 0
    np.testing.assert_allclose(dba.numpy()[0], 0.5)
    np.testing.assert_allclose(daa.numpy()[2], 2.0)          # d2(a^2)/da2 at a = 0
    # away from the edges (the last element), torch's values
    tga, tgb = torch.autograd.grad((ta ** tb).sum(), (ta, tb), create_graph=True)
    want = (*torch.autograd.grad(tga.sum(), (ta, tb), retain_graph=True),
            *torch.autograd.grad(tgb.sum(), (ta, tb)))
    for ours, theirs in zip((daa, dab, dba, dbb), want, strict=True):
        np.testing.assert_allclose(ours.numpy()[3], theirs.numpy()[3], **TOL)


def test_inplace_clamp_reads_the_saved_input():
    """x.clamp_() overwrites its input's memory: the rule's mask comes from the node's copy."""
    a = Tensor(np.array([-2.0, 0.1, 3.0]), requires_grad=True)
    y = (a * 1.0).clamp_(-1.0, 1.0)
    (g,) = tgx.grad((y * y).sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [0.0, 0.2, 0.0])
    (h,) = tgx.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), [0.0, 2.0, 0.0])


_TIES = np.array([[1.0, 3.0, 3.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
EDGES = [   # (id, op, inputs): ties, zeros, bounds, inf/NaN, N - correction <= 0
    ("max_ties", lambda x: x.amax(1), [_TIES]),
    ("max_all_ties", lambda x: x.max(), [_TIES]),
    ("maximum_ties", tgx.maximum, [_TIES, _TIES[::-1].copy()]),
    ("minimum_ties", tgx.minimum, [_TIES, np.zeros(4)]),
    ("relu_abs_at_0", lambda x: x.relu() + x.abs(), [_TIES]),
    ("clamp_at_bounds", lambda x: x.clamp(0.0, 3.0), [_TIES]),
    ("var_n_minus_correction_0", lambda x: x.var(1, correction=4), [_TIES]),
    ("var_n_minus_correction_neg", lambda x: x.var(1, correction=6), [_TIES]),
    ("var_one_element", lambda x: x.var(0), [_TIES[:1]]),
    ("logsumexp_-inf_row", lambda x: x.logsumexp(1), [np.array([[-np.inf] * 3, [0, 1, 2]])]),
    ("log_sqrt_at_0", lambda x: x.log() + x.sqrt() + x.rsqrt(), [np.array([0.0, 1.0])]),
    ("pow_scalar_at_0", lambda x: x ** 0 + x ** 0.5 + x ** 2, [np.array([0.0, 1.0])]),
    ("pow_negative_base", lambda a, b: a ** b, [np.array([-2.0, -1.5]), np.array([2.0, 0.5])]),
    ("div_by_0", lambda a, b: a / b, [np.array([1.0, 0.0]), np.array([0.0, 0.0])]),
]


@pytest.mark.parametrize("name,op,arrays", EDGES, ids=[e[0] for e in EDGES])
def test_recorded_first_derivative_is_backwards_at_edges(name, op, arrays):
    """create_graph=True gives bit for bit what the ordinary backward gives, NaN and inf
    included (the rules compute the same formula in the same order)."""
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    with np.errstate(all="ignore"):
        y = op(*xs)
        seed = Tensor(np.random.default_rng(0).standard_normal(y.shape))
        plain = tgx.grad(y, xs, grad_outputs=seed, retain_graph=True)
        recorded = tgx.grad(y, xs, grad_outputs=seed, create_graph=True)
    for p, r in zip(plain, recorded, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), r.detach().numpy())


@pytest.mark.parametrize("op", ["mul_", "div_"])
def test_create_graph_through_an_inplace_op(op):
    """The in-place node's own input is overwritten memory: its graph rule gets the old value
    back (backprop.Restore), so first and second derivatives match torch."""
    a0, b0 = np.array([2.0, -1.0]), np.array([3.0, 0.5])

    def run(lib, a, b):
        y = getattr(a * 1, op)(b)
        grad = tgx.grad if lib is tgx else torch.autograd.grad
        return grad((y * y).sum(), (a, b), create_graph=True)

    got = run(tgx, *(Tensor(x, requires_grad=True) for x in (a0, b0)))
    want = run(torch, *(torch.tensor(x, requires_grad=True) for x in (a0, b0)))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), **TOL)
