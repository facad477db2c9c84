"""The page's step-through shows each op's backward formula (tinygradx/graph/vjps.py): a line for
every op class of tinygradx, and the formulas of the ops a Transformer draws checked against the
ops' own backward in float64 (what the line says is what the op computes).

It used to print the first line of the op's docstring, which for LayerNorm, GELU and
cross-entropy is the forward formula.
"""
import importlib
import math
import os
import pkgutil

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.autograd import custom_function
from tinygradx.core import elementwise
from tinygradx.core.node import Function
from tinygradx.graph.vjps import VJPS, vjp_text


def _all_op_classes():
    for m in pkgutil.walk_packages(tgx.__path__, "tinygradx."):
        importlib.import_module(m.name)

    def walk(c):
        for s in c.__subclasses__():
            yield s
            yield from walk(s)
    abstract = {custom_function.Function, custom_function.CustomNode, elementwise.Binary}
    return {c for c in walk(Function) if c.__module__.startswith("tinygradx.")
            and c not in abstract and not c.__name__.startswith("_")
            and not issubclass(c, custom_function.CustomNode)}


def test_every_op_class_has_its_own_line():
    """An op added to tinygradx without a line here fails (a subclass does not inherit its
    base's line: Copy is not Fill, PackedAttention is not Attention)."""
    ops = _all_op_classes()
    assert len(ops) > 90
    missing = sorted(f"{c.__module__}.{c.__qualname__}" for c in ops if c not in VJPS)
    assert not missing, (f"ops without a backward formula for the graph page's step-through: "
                         f"{missing}; add a line for each to VJPS in tinygradx/graph/vjps.py")
    for cls, (en, zh) in VJPS.items():
        assert issubclass(cls, Function) and en and zh and en != "" and "\n" not in en + zh


def test_the_lines_are_the_backward_not_the_forward():
    """LayerNorm, GELU and cross-entropy showed their forward ("y = (x - mean)/sqrt(var + eps)
    * w + b ..."); each line now has the gradient of the input on its right-hand side."""
    from tinygradx.core.rows import LayerNorm
    from tinygradx.ops.fused import CrossEntropy, Gelu
    for cls in (LayerNorm, Gelu, CrossEntropy):
        en = VJPS[cls][0]
        assert "dx = " in en and "g" in en.split("dx = ", 1)[1], en
    # the walkthrough's derivation, symbol by symbol (docs/walkthrough.md §10)
    assert VJPS[LayerNorm][0].startswith(
        "x̂ = (x − μ)/σ, h = γ ⊙ g: dx = (h − mean(h) − mean(h ⊙ x̂) ⊙ x̂)/σ")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "walkthrough.md"), encoding="utf-8") as f:
        walkthrough = f.read()
    assert r"h=\gamma\odot g" in walkthrough and \
        r"h-\operatorname{mean}(h)\,\mathbf 1-\operatorname{mean}(h\odot\hat x)\,\hat x" \
        in walkthrough


def test_a_users_op_and_a_leaf():
    class Twice(tgx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    x = tgx.ones(3, requires_grad=True)
    y = Twice.apply(x)
    assert vjp_text(y._ctx) == "a user's Function: its own backward()"
    assert vjp_text(None, "zh").startswith("叶子节点")


# -- the formulas against the ops' backward, float64 ------------------------------------------

def grads(fn, *arrays, g):
    """The ops' own gradients of sum(fn(*tensors) * g) with respect to each array."""
    ts = [tgx.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    (out * tgx.tensor(g)).sum().backward()
    return [t.grad.numpy() for t in ts]


rng = np.random.default_rng(0)


def test_layer_norm_line():
    """x̂ = (x − μ)/σ, h = γ ⊙ g: dx = (h − mean(h) − mean(h ⊙ x̂) ⊙ x̂)/σ, dγ = Σ g ⊙ x̂,
    dβ = Σ g."""
    x, gamma, beta, g = rng.normal(size=(4, 6)), rng.normal(size=6), rng.normal(size=6), \
        rng.normal(size=(4, 6))
    dx, dgamma, dbeta = grads(lambda a, w, b: F.layer_norm(a, (6,), w, b), x, gamma, beta, g=g)
    mu = x.mean(-1, keepdims=True)
    sigma = np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    xh = (x - mu) / sigma
    h = gamma * g
    want = (h - h.mean(-1, keepdims=True) - (h * xh).mean(-1, keepdims=True) * xh) / sigma
    assert np.allclose(dx, want, atol=1e-12)
    assert np.allclose(dgamma, (g * xh).sum(0), atol=1e-12)
    assert np.allclose(dbeta, g.sum(0), atol=1e-12)


def test_softmax_line():
    """s = softmax(x): dx = s ⊙ (g − Σ g ⊙ s) over the row."""
    x, g = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    (dx,) = grads(lambda a: F.softmax(a, -1), x, g=g)
    s = np.exp(x - x.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    assert np.allclose(dx, s * (g - (g * s).sum(-1, keepdims=True)), atol=1e-12)


def test_gelu_line():
    """GELU(x) = x·Φ(x): dx = g ⊙ (Φ(x) + x·φ(x))."""
    x, g = rng.normal(size=(7,)), rng.normal(size=(7,))
    (dx,) = grads(lambda a: F.gelu(a), x, g=g)
    phi = np.exp(-x ** 2 / 2) / math.sqrt(2 * math.pi)
    Phi = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    assert np.allclose(dx, g * (Phi + x * phi), atol=1e-12)


def test_cross_entropy_line():
    """loss = −log softmax(x)[y]: dx = (softmax(x) − onehot(y)) ⊙ g, ÷ N for the mean."""
    x, y = rng.normal(size=(4, 5)), np.array([0, 3, 1, 4])
    ts = tgx.tensor(x, requires_grad=True)
    (F.cross_entropy(ts, tgx.tensor(y)) * 1.7).backward()
    s = np.exp(x - x.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    assert np.allclose(ts.grad.numpy(), (s - np.eye(5)[y]) * 1.7 / 4, atol=1e-12)


def test_linear_line():
    """y = x·Wᵀ + b: dx = g·W, dW = gᵀ·x, db = Σ g."""
    x, W, b, g = rng.normal(size=(3, 4)), rng.normal(size=(2, 4)), rng.normal(size=2), \
        rng.normal(size=(3, 2))
    dx, dW, db = grads(F.linear, x, W, b, g=g)
    assert np.allclose(dx, g @ W) and np.allclose(dW, g.T @ x) and np.allclose(db, g.sum(0))


@pytest.mark.parametrize("packed", [False, True])
def test_attention_lines(packed):
    """Z = A·V, A = softmax(S): dV = Aᵀ·g, dA = g·Vᵀ, dS = A ⊙ (dA − Σ dA ⊙ A),
    dQ = dS·K/√d_k, dK = dSᵀ·Q/√d_k (packed: the same per head, into one d[Q K V])."""
    n, d, h = 4, 3, 2
    q, k, v = (rng.normal(size=(1, h, n, d)) for _ in range(3))
    g = rng.normal(size=(1, h, n, d))
    if packed:
        qkv = np.concatenate([m.transpose(0, 2, 1, 3).reshape(1, n, h * d) for m in (q, k, v)],
                             -1)
        gz = g.transpose(0, 2, 1, 3).reshape(1, n, h * d)
        (dqkv,) = grads(lambda t: F.packed_attention(t, h), qkv, g=gz)
        dq, dk, dv = (dqkv[..., i * h * d:(i + 1) * h * d].reshape(1, n, h, d)
                      .transpose(0, 2, 1, 3) for i in range(3))
    else:
        dq, dk, dv = grads(F.attention, q, k, v, g=g)
    S = q @ k.swapaxes(-1, -2) / math.sqrt(d)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    dA = g @ v.swapaxes(-1, -2)
    dS = A * (dA - (dA * A).sum(-1, keepdims=True))
    assert np.allclose(dv, A.swapaxes(-1, -2) @ g, atol=1e-12)
    assert np.allclose(dq, dS @ k / math.sqrt(d), atol=1e-12)
    assert np.allclose(dk, dS.swapaxes(-1, -2) @ q / math.sqrt(d), atol=1e-12)
