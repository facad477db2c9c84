"""tinygradx.func against torch.func / torch.autograd.functional (when torch is installed) and
against finite differences (always); argument errors; Hessian-vector products through the
Transformer's ops and a tiny attention + MLP + cross-entropy model, in float64 to 1e-6."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.gradcheck import func as tf
from tinygradx import Tensor

try:
    import torch
    import torch.autograd.functional as taf
    import torch.func as tcf
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped; finite differences still run
    torch = taf = tcf = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _arr(shape, seed, low=-1.5, high=1.5):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _x(a, rg=False):
    return Tensor(np.array(a, dtype=np.float64), requires_grad=rg)


def _t(a, rg=False):
    return torch.tensor(np.array(a, dtype=np.float64), requires_grad=rg)


def _np(v):
    if isinstance(v, Tensor):
        return v.numpy()
    return v.detach().numpy()


def assert_close(ours, ref, tol=1e-10):
    """Nested tuples of Tensors (ours) against torch tensors or arrays (ref), same nesting."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(ref), (type(ours), len(ref))
        for a, b in zip(ours, ref, strict=True):
            assert_close(a, b, tol)
        return
    assert isinstance(ours, Tensor), type(ours)
    b = ref if isinstance(ref, np.ndarray) else _np(ref)
    assert ours.shape == b.shape, (ours.shape, b.shape)
    np.testing.assert_allclose(ours.numpy(), b, atol=tol, rtol=tol)


# smooth functions made only of ops that have had graph rules from the start (mul, div, add,
# exp, sum, reshape), so the API tests do not wait for the rule branches
def f2(x, y):
    return (x.exp() * y / (1 + x * x)).sum()


def g1(x):
    return x.exp() * x


def h2(x, y):
    return x * y, (x - y).exp()


# --------------------------------------------------------------------------------------------
# finite differences
# --------------------------------------------------------------------------------------------

def fd_jacobian(fn, arrays, i, eps=1e-6):
    """d fn(*arrays) / d arrays[i] by central differences: shape out.shape + in.shape."""
    def val(a):
        args = [Tensor(b) for b in arrays]
        args[i] = Tensor(a)
        with tgx.no_grad():
            return fn(*args).numpy().copy()
    x = arrays[i]
    cols = []
    for e in range(x.size):
        d = np.zeros(x.size)
        d[e] = eps
        d = d.reshape(x.shape)
        cols.append((val(x + d) - val(x - d)) / (2 * eps))
    out = val(x)
    return np.stack(cols, axis=-1).reshape(out.shape + x.shape)


def fd_hvp(fn, arrays, vs, eps=1e-6):
    """H v of a scalar fn by central differences of its first derivative (first order only)."""
    def gradient(shift):
        xs = [Tensor(a + shift * v, requires_grad=True) for a, v in zip(arrays, vs, strict=True)]
        return [g.numpy() for g in tgx.grad(fn(*xs), xs, materialize_grads=True)]
    plus, minus = gradient(eps), gradient(-eps)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


# --------------------------------------------------------------------------------------------
# torch.func transforms against torch
# --------------------------------------------------------------------------------------------

A, B, V = _arr(4, 0), _arr(4, 1), _arr(4, 2)


@needs_torch
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_and_grad_and_value_match_torch(argnums):
    assert_close(tf.grad(f2, argnums)(_x(A), _x(B)), tcf.grad(f2, argnums)(_t(A), _t(B)))
    assert_close(tf.grad_and_value(f2, argnums)(_x(A), _x(B)),
                 tcf.grad_and_value(f2, argnums)(_t(A), _t(B)))


@needs_torch
def test_has_aux_and_value_and_grad_order():
    def fa(x, y):
        return f2(x, y), {"scale": x * 2}
    ours = tf.grad_and_value(fa, has_aux=True)(_x(A), _x(B))
    ref = tcf.grad_and_value(fa, has_aux=True)(_t(A), _t(B))
    assert_close((ours[0], ours[1][0], ours[1][1]["scale"]),
                 (ref[0], ref[1][0], ref[1][1]["scale"]))
    (value, aux), g = tf.value_and_grad(fa, has_aux=True)(_x(A), _x(B))
    assert_close((value, g, aux["scale"]), (ref[1][0], ref[0], ref[1][1]["scale"]))
    g, aux = tf.grad(fa, has_aux=True)(_x(A), _x(B))
    assert_close((g, aux["scale"]), (ref[0], ref[1][1]["scale"]))
    assert not aux["scale"].requires_grad          # nothing outside requires grad


@needs_torch
def test_vjp_matches_torch():
    out, fn = tf.vjp(g1, _x(A))
    ref_out, ref_fn = tcf.vjp(g1, _t(A))
    assert_close((out, fn(_x(V))), (ref_out, ref_fn(_t(V))))
    out, fn = tf.vjp(h2, _x(A), _x(B))
    ref_out, ref_fn = tcf.vjp(h2, _t(A), _t(B))
    assert_close((out, fn((_x(V), _x(A)))), (ref_out, ref_fn((_t(V), _t(A)))))
    out, fn = tf.vjp(lambda x, y: x * 2, _x(A), _x(B))     # an unused primal gets zeros
    assert_close(fn(_x(V)), (2 * V, np.zeros(4)))


@needs_torch
def test_jvp_matches_torch():
    assert_close(tf.jvp(g1, (_x(A),), (_x(V),)), tcf.jvp(g1, (_t(A),), (_t(V),)))
    assert_close(tf.jvp(h2, (_x(A), _x(B)), (_x(V), _x(A))),
                 tcf.jvp(h2, (_t(A), _t(B)), (_t(V), _t(A))))
    assert_close(tf.jvp(f2, (_x(A), _x(B)), (_x(V), _x(A))),
                 tcf.jvp(f2, (_t(A), _t(B)), (_t(V), _t(A))))


@needs_torch
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacrev_jacfwd_match_torch(transform, argnums):
    ours, ref = getattr(tf, transform), getattr(tcf, transform)
    assert_close(ours(h2, argnums)(_x(A), _x(B)), ref(h2, argnums)(_t(A), _t(B)))
    assert_close(ours(f2, argnums)(_x(A), _x(B)), ref(f2, argnums)(_t(A), _t(B)))
    m = _arr((2, 3), 3)
    assert_close(ours(lambda x: x.exp().reshape(3, 2) * 2)(_x(m)),
                 ref(lambda x: x.exp().reshape(3, 2) * 2)(_t(m)))


@needs_torch
def test_hessian_transform_form_matches_torch_func():
    assert_close(tf.hessian(f2)(_x(A), _x(B)), tcf.hessian(f2)(_t(A), _t(B)))
    assert_close(tf.hessian(f2, argnums=(0, 1))(_x(A), _x(B)),
                 tcf.hessian(f2, argnums=(0, 1))(_t(A), _t(B)))
    assert_close(tf.hessian(f2, 1)(_x(A), _x(B)), tcf.hessian(f2, 1)(_t(A), _t(B)))


# --------------------------------------------------------------------------------------------
# torch.autograd.functional against torch
# --------------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_nests_as_torch(strategy):
    kw = dict(strategy=strategy, vectorize=strategy == "forward-mode")
    assert_close(tf.jacobian(g1, _x(A), strategy=strategy), taf.jacobian(g1, _t(A), **kw))
    assert_close(tf.jacobian(h2, (_x(A), _x(B)), strategy=strategy),
                 taf.jacobian(h2, (_t(A), _t(B)), **kw))
    assert_close(tf.jacobian(lambda x: h2(x, x), _x(A), strategy=strategy),
                 taf.jacobian(lambda x: h2(x, x), _t(A), **kw))
    assert_close(tf.jacobian(f2, (_x(A), _x(B)), strategy=strategy),
                 taf.jacobian(f2, (_t(A), _t(B)), **kw))


@needs_torch
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian_matches_torch(strategy):
    assert_close(tf.hessian(f2, (_x(A), _x(B)), outer_jacobian_strategy=strategy),
                 taf.hessian(f2, (_t(A), _t(B))))
    one = _arr((2, 2), 4)
    assert_close(tf.hessian(lambda x: f2(x, x), _x(one), outer_jacobian_strategy=strategy),
                 taf.hessian(lambda x: f2(x, x), _t(one)))


@needs_torch
@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_vhp_match_torch(name):
    ours, ref = getattr(tf, name), getattr(taf, name)
    assert_close(ours(f2, (_x(A), _x(B)), (_x(V), _x(A))),
                 ref(f2, (_t(A), _t(B)), (_t(V), _t(A))))
    assert_close(ours(lambda x: f2(x, x), _x(A), _x(V)), ref(lambda x: f2(x, x), _t(A), _t(V)))
    s = np.array([0.3])
    assert_close(ours(lambda x: (x * x * x).sum(), _x(s)),
                 ref(lambda x: (x * x * x).sum(), _t(s)))       # v=None: one element


# --------------------------------------------------------------------------------------------
# against finite differences (no torch needed)
# --------------------------------------------------------------------------------------------

def test_jacobians_match_finite_differences():
    for i in (0, 1):
        fd = fd_jacobian(lambda x, y: h2(x, y)[1], [A, B], i)
        for method in (tf.jacrev, tf.jacfwd):
            np.testing.assert_allclose(method(lambda x, y: h2(x, y)[1], i)(_x(A), _x(B))
                                       .numpy(), fd, atol=1e-8)
    _, jv = tf.jvp(g1, (_x(A),), (_x(V),))
    np.testing.assert_allclose(jv.numpy(), fd_jacobian(g1, [A], 0) @ V, atol=1e-8)


def test_hessian_and_hvp_match_finite_differences():
    def grad_y(x, y):
        return tgx.grad(f2(x, y), y, create_graph=True)[0]
    hess = tf.hessian(f2, (_x(A), _x(B)))
    for i in (0, 1):
        fd = fd_jacobian(lambda x, y: tf.grad(f2, (0, 1))(x, y)[0], [A, B], i)
        np.testing.assert_allclose(hess[0][i].numpy(), fd, atol=1e-7)
    np.testing.assert_allclose(hess[1][1].numpy(), np.zeros((4, 4)))
    expected = fd_hvp(f2, [A, B], [V, A])
    for name in ("hvp", "vhp"):
        _, res = getattr(tf, name)(f2, (_x(A), _x(B)), (_x(V), _x(A)))
        for got, want in zip(res, expected, strict=True):
            np.testing.assert_allclose(got.numpy(), want, atol=1e-7)


# --------------------------------------------------------------------------------------------
# composition with ordinary autograd
# --------------------------------------------------------------------------------------------

def test_closed_over_parameters_keep_their_graph():
    w = _x(B, rg=True)
    g = tf.grad(lambda x: (x * w).exp().sum())(_x(A))
    assert g.requires_grad                        # as torch.func: differentiable w.r.t. w
    (g * g).sum().backward()
    # d/dw sum((w e^{xw})^2) = 2 w e^{2xw} (1 + x w)
    np.testing.assert_allclose(w.grad.numpy(), 2 * B * np.exp(2 * A * B) * (1 + A * B))


def test_results_are_constants_when_nothing_outside_requires_grad():
    x = _x(A)
    g = tf.grad(f2)(x, _x(B))
    out, fn = tf.vjp(g1, x)
    assert not g.requires_grad and not out.requires_grad and not fn(_x(V))[0].requires_grad
    assert not tf.jacobian(g1, x).requires_grad
    assert tf.jacobian(g1, x, create_graph=True).requires_grad     # as torch's create_graph
    with tgx.no_grad():                           # an outer no_grad: computed, but constant
        w = _x(B, rg=True)
        g = tf.grad(lambda x: (x * w).exp().sum())(_x(A))
    assert not g.requires_grad
    np.testing.assert_allclose(g.numpy(), B * np.exp(A * B))


def test_inputs_that_require_grad_are_differentiated_through():
    x = _x(A, rg=True)
    _, fn = tf.vjp(lambda t: f2(t, _x(B)), x)
    (g,) = fn(_x(1.0))                            # the gradient, with a graph back to x
    assert g.requires_grad
    (hv,) = tgx.grad(g, x, grad_outputs=_x(V))
    _, ref = tf.hvp(lambda t: f2(t, _x(B)), _x(A), _x(V))
    np.testing.assert_allclose(hv.numpy(), ref.numpy(), atol=1e-12)
    assert x.grad is None                         # the transforms never write .grad


def test_the_callers_graph_is_left_intact():
    w = _x(A, rg=True)
    y = w.exp()                                   # a graph that is not the transform's
    tf.grad(lambda t: (t * t).sum())(y)
    tf.hessian(lambda t: (t * t * t).sum(), y)
    y.sum().backward()                            # still there: nothing behind y was freed
    np.testing.assert_allclose(w.grad.numpy(), np.exp(A))


def test_nested_transforms():
    h = tf.jacrev(tf.jacrev(lambda x: (x * x * x).sum()))(_x(A))
    np.testing.assert_allclose(h.numpy(), np.diag(6 * A))
    third = tf.grad(lambda x: tf.grad(lambda y: tf.grad(lambda z: (z * z * z * z).sum())(y)
                                      .sum())(x).sum())(_x(A))
    np.testing.assert_allclose(third.numpy(), 24 * A)


# --------------------------------------------------------------------------------------------
# functional_call: a module's weights as arguments
# --------------------------------------------------------------------------------------------

class _Tied(tgx.nn.Module):
    """emb is used twice: directly and as the (tied) weight of head; a buffer scales."""

    def __init__(self):
        self.emb = tgx.nn.Parameter(_arr((3, 2), 5))
        self.head = tgx.nn.Linear(2, 3, bias=False)
        self.head.weight = self.emb
        self.register_buffer("scale", _x([2.0]))

    def forward(self, x):
        return self.head(x * self.emb[0] * self.scale).exp()


def _tied_value(emb, head, scale, x):
    return np.exp((x * emb[0] * scale) @ head.T)


def test_functional_call_replaces_weights_for_one_call():
    m, x = _Tied(), np.ones((1, 2))
    emb = m.emb.detach().numpy().copy()
    w = _x(_arr((3, 2), 6), rg=True)
    out = tf.functional_call(m, {"emb": w}, (_x(x),))            # tied: head.weight is w too
    np.testing.assert_allclose(out.detach().numpy(), _tied_value(w.detach().numpy(),
                                                                 w.detach().numpy(), 2.0, x))
    out = tf.functional_call(m, ({"emb": w}, {"scale": _x([3.0])}), _x(x), tie_weights=False)
    np.testing.assert_allclose(out.detach().numpy(), _tied_value(w.detach().numpy(), emb, 3.0, x))
    assert m.head.weight is m.emb and np.array_equal(m.emb.detach().numpy(), emb)    # put back
    (g,) = tgx.grad(tf.functional_call(m, {"emb": w}, (_x(x),)).sum(), w)
    assert g.shape == (3, 2) and m.emb.grad is None              # the gradient reaches w only
    with pytest.raises(ValueError):
        tf.functional_call(m, {"emb": _x(np.ones((3, 5)))}, (_x(x),))
    assert m.head.weight is m.emb and m.scale.numpy()[0] == 2.0  # put back after an error


@needs_torch
def test_functional_call_hessian_of_a_module_matches_torch():
    tgx.manual_seed(0)
    lin = tgx.nn.Linear(3, 2).double()
    ref = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        ref.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    xa = _arr((4, 3), 8)

    def ours(w):
        return tf.functional_call(lin, {"weight": w}, (_x(xa),)).exp().sum()

    def theirs(w):
        return tcf.functional_call(ref, {"weight": w}, (_t(xa),)).exp().sum()
    h = tf.hessian(ours, _x(lin.weight.detach().numpy()))
    assert_close(h, taf.hessian(theirs, ref.weight.detach()), tol=1e-10)


# --------------------------------------------------------------------------------------------
# argument errors: one line each, naming the argument
# --------------------------------------------------------------------------------------------

x4, y3 = _x(A), _x(A[:3])
ERRORS = [
    (lambda: tf.grad(f2)(3.0, x4), TypeError, r"grad: argument 0 is a float, expected a Tensor"),
    (lambda: tf.grad(f2)(Tensor(np.arange(4)), x4), TypeError, r"dtype int64; only floating"),
    (lambda: tf.grad(g1)(x4), RuntimeError, r"must return a scalar \(0-d\) Tensor, got shape"),
    (lambda: tf.value_and_grad(g1)(x4), RuntimeError, r"value_and_grad\(f\)\(\*args\): f must"),
    (lambda: tf.grad(f2, argnums=2)(x4, x4), ValueError, r"argnums 2 is out of range for a call"
                                                         r" with 2"),
    (lambda: tf.grad(f2, argnums=1.0)(x4, x4), TypeError, r"argnums must be an int or a tuple"),
    (lambda: tf.grad(f2, argnums=(0, 0))(x4, x4), ValueError, r"argnums must be unique"),
    (lambda: tf.grad(f2, argnums=())(x4, x4), ValueError, r"argnums must not be empty"),
    (lambda: tf.grad(f2, has_aux=True)(x4, x4), TypeError, r"has_aux=True the function must "
                                                           r"return a pair"),
    (lambda: tf.vjp(g1), TypeError, r"vjp: expected at least one primal"),
    (lambda: tf.vjp(g1, x4)[1](y3), ValueError, r"cotangents\[0\] has shape \(3,\) but "
                                                r"outputs\[0\] has shape \(4,\)"),
    (lambda: tf.vjp(h2, x4, x4)[1](x4), TypeError, r"the output is a tuple, so the cotangents"),
    (lambda: tf.vjp(lambda x: 3.0, x4), TypeError, r"must return a Tensor or a tuple of Tens"),
    (lambda: tf.jvp(g1, x4, (x4,)), TypeError, r"primals must be a tuple of Tensors"),
    (lambda: tf.jvp(g1, (x4,), (y3,)), ValueError, r"jvp: tangents\[0\] has shape \(3,\) but "
                                                   r"primals\[0\] has shape \(4,\)"),
    (lambda: tf.jvp(g1, (x4,), (x4, x4)), ValueError, r"jvp: 2 tangents for 1 primals"),
    (lambda: tf.jacobian(g1, [1.0]), TypeError, r"jacobian: inputs\[0\] is a float"),
    (lambda: tf.jacobian(g1, "x"), TypeError, r"inputs must be a Tensor or a non-empty tuple"),
    (lambda: tf.jacobian(g1, x4, strategy="fast"), ValueError, r"strategy must be"),
    (lambda: tf.jacobian(lambda x, y: x.exp().sum(), (x4, y3), strict=True), RuntimeError,
     r"output 0 of the function is independent of input 1, which strict=True"),
    (lambda: tf.hessian(g1, x4), ValueError, r"hessian: the function must return a Tensor "
                                             r"with a single element, got shape \(4,\)"),
    (lambda: tf.hessian(lambda x: x.sum(), x4, strict=True), RuntimeError,
     r"hessian: the gradient w.r.t. input 0 does not depend on the inputs"),
    (lambda: tf.hvp(f2, (x4, x4), (x4, y3)), ValueError, r"hvp: v\[1\] has shape \(3,\) but "
                                                         r"inputs\[1\] has shape \(4,\)"),
    (lambda: tf.hvp(lambda x: x.sum(), x4), ValueError, r"v may be None only when the input"),
    (lambda: tf.vhp(f2, (x4, x4), x4), ValueError, r"vhp: 1 v for 2 inputs"),
    (lambda: tf.hvp(lambda x: (x, x), x4, x4), TypeError, r"must return a single Tensor"),
    (lambda: tf.functional_call(_Tied(), {"nope": x4}, (x4,)), ValueError,
     r"_Tied has no parameter or buffer named 'nope'"),
    (lambda: tf.functional_call(_Tied(), {"emb": x4, "head.weight": y3}, (x4,)), ValueError,
     r"'emb' and 'head.weight' are tied \(one tensor\) but were given different values"),
    (lambda: tf.functional_call(_Tied(), {"emb": x4}, (x4,), strict=True), ValueError,
     r"strict=True needs every parameter and buffer; missing scale"),
    (lambda: tf.functional_call(_Tied(), ({"emb": x4}, {"emb": x4}), (x4,)), ValueError,
     r"'emb' is given more than once"),
    (lambda: tf.functional_call(_Tied(), {"emb": 1.0}, (x4,)), TypeError,
     r"the value for 'emb' is a float, expected a Tensor"),
]


@pytest.mark.parametrize("call, exc, match", ERRORS, ids=[m[:30] for _, _, m in ERRORS])
def test_argument_errors_are_one_line(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------------------
# the criterion: HVPs through the Transformer's ops, float64, 1e-6 from torch
# --------------------------------------------------------------------------------------------

TARGETS = np.array([2, 0, 4])


def _torch_attention(q, k, v):
    n = q.shape[-2]
    s = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
    s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
    return torch.softmax(s, -1) @ v


# name: (our op, torch's op, input shapes, input range); the scalar is sum(w * op(inputs))
OP_CASES = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 2)], (-1.5, 1.5)),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), [(3, 4)], (-2, 2)),
    "softmax": (lambda x: F.softmax(x, dim=-1), lambda x: torch.softmax(x, -1), [(3, 5)],
                (-2, 2)),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), lambda x: torch.log_softmax(x, -1),
                    [(3, 5)], (-2, 2)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b),
                   lambda x, w, b: TF.layer_norm(x, (5,), w, b), [(3, 5), (5,), (5,)], (-2, 2)),
    "gelu": (lambda x: F.gelu(x), lambda x: TF.gelu(x), [(3, 4)], (-3, 3)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: TF.gelu(x, approximate="tanh"), [(3, 4)], (-3, 3)),
    "cross_entropy": (lambda x: F.cross_entropy(x, Tensor(TARGETS)),
                      lambda x: TF.cross_entropy(x, torch.tensor(TARGETS)), [(3, 5)], (-2, 2)),
    "exp": (lambda x: x.exp(), lambda x: x.exp(), [(3, 4)], (-2, 2)),
    "log": (lambda x: x.log(), lambda x: x.log(), [(3, 4)], (0.3, 3)),
    "pow": (lambda x, y: x ** y, lambda x, y: x ** y, [(3, 4), (3, 4)], (0.3, 2)),
    "pow_scalar": (lambda x: x ** 3, lambda x: x ** 3, [(3, 4)], (-2, 2)),
    "sqrt": (lambda x: x.sqrt(), lambda x: x.sqrt(), [(3, 4)], (0.3, 3)),
    "attention": (lambda q, k, v: F.attention(q, k, v, is_causal=True), _torch_attention,
                  [(2, 4, 3), (2, 4, 3), (2, 4, 3)], (-1.5, 1.5)),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             _torch_attention, [(2, 4, 3), (2, 4, 3), (2, 4, 3)], (-1.5, 1.5)),
}


def _op_problem(name):
    ours, theirs, shapes, (lo, hi) = OP_CASES[name]
    rng = np.random.default_rng(sorted(OP_CASES).index(name))
    xs = [rng.uniform(lo, hi, s) for s in shapes]
    vs = [rng.standard_normal(s) for s in shapes]
    with tgx.no_grad():
        out_shape = ours(*[Tensor(x) for x in xs]).shape
    w = rng.standard_normal(out_shape)
    return (lambda *a: (ours(*a) * Tensor(w)).sum(),
            lambda *a: (theirs(*a) * torch.tensor(w)).sum(), xs, vs)


@pytest.mark.parametrize("name", sorted(OP_CASES))
def test_op_hvp_matches_finite_differences(name):
    ours, _, xs, vs = _op_problem(name)
    out, hv = tf.hvp(ours, tuple(_x(x) for x in xs), tuple(_x(v) for v in vs))
    for got, want in zip(hv, fd_hvp(ours, xs, vs), strict=True):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-6, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("name", sorted(OP_CASES))
def test_op_hvp_matches_torch(name):
    ours, theirs, xs, vs = _op_problem(name)
    out, hv = tf.hvp(ours, tuple(_x(x) for x in xs), tuple(_x(v) for v in vs))
    ref_out, ref_hv = taf.hvp(theirs, tuple(_t(x) for x in xs), tuple(_t(v) for v in vs))
    assert_close((out,) + hv, (ref_out,) + ref_hv, tol=1e-6)


# a tiny Transformer block and LM head: embedding, LayerNorm, causal attention (one fused
# node), residuals, a GELU MLP, the tied head and cross-entropy
VOCAB, D, HEADS, SEQ = 7, 8, 2, 4
SHAPES = {"wte": (VOCAB, D), "ln1_w": (D,), "ln1_b": (D,), "wq": (D, D), "wk": (D, D),
          "wv": (D, D), "wo": (D, D), "ln2_w": (D,), "ln2_b": (D,), "w1": (2 * D, D),
          "b1": (2 * D,), "w2": (D, 2 * D), "b2": (D,)}
IDS = np.array([[1, 5, 2, 6], [3, 0, 4, 4]])
NEXT = np.array([[5, 2, 6, 0], [0, 4, 4, 1]])


def _block_loss(lib, ids, targets):
    """The same model in tinygradx (lib "tgx") or torch (lib "torch")."""
    Fn = F if lib == "tgx" else TF

    def heads(t):
        b, n, _ = t.shape
        return t.reshape(b, n, HEADS, D // HEADS).permute(0, 2, 1, 3)

    def loss(wte, ln1_w, ln1_b, wq, wk, wv, wo, ln2_w, ln2_b, w1, b1, w2, b2):
        x = Fn.embedding(ids, wte)
        h = Fn.layer_norm(x, (D,), ln1_w, ln1_b)
        q, k, v = (heads(Fn.linear(h, w)) for w in (wq, wk, wv))
        a = F.attention(q, k, v, is_causal=True) if lib == "tgx" else _torch_attention(q, k, v)
        x = x + Fn.linear(a.permute(0, 2, 1, 3).reshape(x.shape), wo)
        h = Fn.layer_norm(x, (D,), ln2_w, ln2_b)
        x = x + Fn.linear(Fn.gelu(Fn.linear(h, w1, b1), approximate="tanh"), w2, b2)
        logits = x @ wte.T
        return Fn.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    return loss


def _block_problem():
    rng = np.random.default_rng(7)
    params = {k: rng.standard_normal(s) * (0.5 if len(s) == 2 else 0.2) + (k.endswith("_w"))
              for k, s in SHAPES.items()}
    vs = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    return list(params.values()), list(vs.values())


def test_block_hvp_matches_finite_differences():
    params, vs = _block_problem()
    loss = _block_loss("tgx", Tensor(IDS), Tensor(NEXT))
    _, hv = tf.hvp(loss, tuple(_x(p) for p in params), tuple(_x(v) for v in vs))
    for got, want in zip(hv, fd_hvp(loss, params, vs), strict=True):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-6, rtol=1e-6)


@needs_torch
def test_block_hvp_matches_torch():
    params, vs = _block_problem()
    loss = _block_loss("tgx", Tensor(IDS), Tensor(NEXT))
    ref_loss = _block_loss("torch", torch.tensor(IDS), torch.tensor(NEXT))
    out, hv = tf.hvp(loss, tuple(_x(p) for p in params), tuple(_x(v) for v in vs))
    vh = tf.vhp(loss, tuple(_x(p) for p in params), tuple(_x(v) for v in vs))[1]
    ref_out, ref_hv = taf.hvp(ref_loss, tuple(_t(p) for p in params),
                              tuple(_t(v) for v in vs))
    assert_close((out,) + hv, (ref_out,) + ref_hv, tol=1e-6)
    assert_close(vh, ref_hv, tol=1e-6)                 # the Hessian is symmetric
