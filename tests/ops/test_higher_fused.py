"""Second derivatives of the fused ops (fused.py) and the movement ops (movement.py).

Hessian-vector products H v = d<grad f(x), v>/dx through the ops' backward formulas, against
torch's double backward in float64; gradgradcheck for what torch cannot mirror (a drawn
dropout mask, packed attention, broadcast attention batches); a third derivative; and that the
graph walk never takes the array walk's getitem shortcut.
"""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor

torch = pytest.importorskip("torch")
TF = torch.nn.functional
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
TOL = dict(atol=1e-6, rtol=1e-6)


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _hvp_tgx(fn, arrays, vs, weights):
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    f = (out * Tensor(weights)).sum()
    gs = tgx.grad(f, xs, create_graph=True)
    dot = sum((g * Tensor(v)).sum() for g, v in zip(gs, vs, strict=True))
    hs = tgx.grad(dot, xs, allow_unused=True)
    return [g.detach().numpy() for g in gs], [np.zeros(a.shape) if h is None else h.detach().numpy()
                                     for a, h in zip(arrays, hs, strict=True)]


def _hvp_torch(fn, arrays, vs, weights):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    with sdpa_kernel(SDPBackend.MATH):        # the fused CPU kernels have no double backward
        f = (fn(*xs) * torch.tensor(weights)).sum()
    gs = torch.autograd.grad(f, xs, create_graph=True)
    dot = sum((g * torch.tensor(v)).sum() for g, v in zip(gs, vs, strict=True))
    hs = torch.autograd.grad(dot, xs, allow_unused=True)
    return [g.detach().numpy() for g in gs], [np.zeros(a.shape) if h is None else h.numpy()
                                              for a, h in zip(arrays, hs, strict=True)]


def check_hvp(fn_tgx, fn_torch, arrays, seed=1):
    """The gradient and the Hessian-vector product of sum(w * fn(x)) agree with torch's."""
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(a.shape) for a in arrays]
    out_shape = np.shape(fn_tgx(*[Tensor(a) for a in arrays]).numpy())
    weights = rng.standard_normal(out_shape)
    g1, h1 = _hvp_tgx(fn_tgx, arrays, vs, weights)
    g2, h2 = _hvp_torch(fn_torch, arrays, vs, weights)
    for i, (a, b) in enumerate(zip(g1, g2, strict=True)):
        np.testing.assert_allclose(a, b, err_msg=f"gradient of input {i}", **TOL)
    for i, (a, b) in enumerate(zip(h1, h2, strict=True)):
        np.testing.assert_allclose(a, b, err_msg=f"Hessian-vector product, input {i}", **TOL)


# --------------------------------------------------------------------------------------------
# fused ops vs torch
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax(dim):
    check_hvp(lambda x: F.softmax(x, dim), lambda x: TF.softmax(x, dim), _arrays((3, 4, 5)))


@pytest.mark.parametrize("dim", [-1, 1])
def test_log_softmax(dim):
    check_hvp(lambda x: F.log_softmax(x, dim), lambda x: TF.log_softmax(x, dim),
              _arrays((3, 4, 5)))


def test_softmax_with_a_fully_masked_row():
    """A -inf row gives zero weights, gradients and second derivatives (torch: NaN), while the
    other rows match torch's."""
    x = _arrays((3, 4))[0]
    x[1] = -np.inf
    _, h = _hvp_tgx(lambda t: F.softmax(t, -1), [x], _arrays((3, 4), seed=2),
                    _arrays((3, 4), seed=3)[0])
    assert np.all(h[0][1] == 0) and np.all(np.isfinite(h[0]))
    rows = [0, 2]
    check_hvp(lambda t: F.softmax(t, -1), lambda t: TF.softmax(t, -1), [x[rows]])


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("normalized", [(5,), (4, 5)])
def test_layer_norm(affine, normalized):
    x, w, b = _arrays((3, 4, 5), normalized, normalized)
    if affine:
        check_hvp(lambda x, w, b: F.layer_norm(x, normalized, w, b, eps=1e-3),
                  lambda x, w, b: TF.layer_norm(x, normalized, w, b, eps=1e-3), [x, w, b])
    else:
        check_hvp(lambda x: F.layer_norm(x, normalized), lambda x: TF.layer_norm(x, normalized),
                  [x])


def test_layer_norm_weight_only():
    x, w = _arrays((2, 6), (6,))
    check_hvp(lambda x, w: F.layer_norm(x, 6, w), lambda x, w: TF.layer_norm(x, (6,), w), [x, w])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = _arrays((4, 6))[0] * 2
    check_hvp(lambda x: F.gelu(x, approximate), lambda x: TF.gelu(x, approximate=approximate),
              [x])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy(reduction, smoothing):
    x = _arrays((5, 4))[0]
    t = np.array([0, 3, -100, 1, 3])                  # one ignored row
    kw = dict(ignore_index=-100, reduction=reduction, label_smoothing=smoothing)
    check_hvp(lambda x: F.cross_entropy(x, t, **kw),
              lambda x: TF.cross_entropy(x, torch.tensor(t), **kw), [x])


def test_cross_entropy_class_dim_in_the_middle():
    x = _arrays((2, 4, 3))[0]
    t = np.array([[0, 1, 3], [2, 2, 0]])
    check_hvp(lambda x: F.cross_entropy(x, t), lambda x: TF.cross_entropy(x, torch.tensor(t)),
              [x])


def _torch_causal(n, m):
    return torch.ones(n, m, dtype=torch.bool).tril()


@pytest.mark.parametrize("n,m", [(3, 3), (2, 4), (4, 2)])
def test_attention_causal(n, m):
    q, k, v = _arrays((2, 2, n, 3), (2, 2, m, 3), (2, 2, m, 4))
    check_hvp(lambda q, k, v: F.attention(q, k, v, is_causal=True),
              lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
              [q, k, v])


def test_attention_bool_and_float_masks_and_scale():
    q, k, v = _arrays((2, 3, 2), (2, 4, 2), (2, 4, 3))
    keep = np.random.default_rng(5).random((3, 4)) < 0.6
    keep[:, 0] = True
    check_hvp(lambda q, k, v: F.attention(q, k, v, attn_mask=keep, scale=0.7),
              lambda q, k, v: TF.scaled_dot_product_attention(
                  q, k, v, attn_mask=torch.tensor(keep), scale=0.7), [q, k, v])
    bias = _arrays((3, 4), seed=6)[0]
    check_hvp(lambda q, k, v: F.attention(q, k, v, attn_mask=Tensor(bias)),
              lambda q, k, v: TF.scaled_dot_product_attention(q, k, v,
                                                              attn_mask=torch.tensor(bias)),
              [q, k, v])


@pytest.mark.parametrize("causal", [False, True])
def test_attention_learned_mask(causal):
    """A float mask that requires grad is a 4th input: its second derivatives too."""
    q, k, v, bias = _arrays((2, 3, 2), (2, 4, 2), (2, 4, 3), (3, 4))

    def ref(q, k, v, b):
        if causal:
            b = b.masked_fill(~_torch_causal(3, 4), float("-inf"))
        return TF.scaled_dot_product_attention(q, k, v, attn_mask=b)

    check_hvp(lambda q, k, v, b: F.attention(q, k, v, attn_mask=b, is_causal=causal), ref,
              [q, k, v, bias])


def test_packed_attention_matches_torch():
    B, T, h, d = 2, 4, 2, 3
    (qkv,) = _arrays((B, T, 3 * h * d))

    def ref(x):
        q, k, v = (t.reshape(B, T, h, d).transpose(1, 2) for t in x.split(h * d, dim=-1))
        z = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        return z.transpose(1, 2).reshape(B, T, h * d)

    check_hvp(lambda x: F.packed_attention(x, h, is_causal=True), ref, [qkv])


# --------------------------------------------------------------------------------------------
# movement ops vs torch
# --------------------------------------------------------------------------------------------

def test_getitem_advanced_indices_with_repeats():
    """x[idx] of repeated rows, squared so the Hessian is not zero: repeats add up twice."""
    idx = np.array([0, 2, 2, -1])
    check_hvp(lambda x: x[idx] * x[idx] * x[1:3, None, [0, 2]].sum(),
              lambda x: x[torch.tensor(idx)] * x[torch.tensor(idx)] * x[1:3, None, [0, 2]].sum(),
              _arrays((4, 3)))


def test_getitem_bool_mask_and_int_mix():
    (x,) = _arrays((2, 3, 4))
    mask = x[0] > 0
    check_hvp(lambda t: t[1][mask].exp() * t[0, :, [0, 1]].sum(),
              lambda t: t[1][torch.tensor(mask)].exp() * t[0, :, [0, 1]].sum(), [x])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    a, b, c = _arrays((2, 3, 2), (2, 3, 2), (2, 3, 2))
    check_hvp(lambda a, b, c: (lambda y: y * y)(tgx.cat([a * b, c.exp(), a], dim)),
              lambda a, b, c: (lambda y: y * y)(torch.cat([a * b, c.exp(), a], dim)), [a, b, c])


def test_stack_permute_tri():
    a, b = _arrays((3, 3), (3, 3))
    check_hvp(lambda a, b: tgx.stack([a, b * a], 1).permute(2, 0, 1).triu(1).exp(),
              lambda a, b: torch.stack([a, b * a], 1).permute(2, 0, 1).triu(1).exp(), [a, b])


def test_setitem_fill_copy():
    a, b = _arrays((3, 4), (3, 4))

    def make(lib):
        def fn(a, b):
            y = a * b
            y[:, 1:3] = (a * a)[:, :2]
            y[0] = b[0].exp()
            z = (a * 1)
            z.fill_(0.5)
            w = (a * 1)
            w.copy_(b * b)
            return y * y + z + w * a
        return fn

    check_hvp(make(tgx), make(torch), [a, b])


# --------------------------------------------------------------------------------------------
# what torch cannot mirror: gradgradcheck
# --------------------------------------------------------------------------------------------

def _leaves(*shapes, seed=0):
    return tuple(Tensor(a, requires_grad=True) for a in _arrays(*shapes, seed=seed))


def test_dropout_mask_is_a_constant():
    def fn(x):
        tgx.manual_seed(3)                    # the same mask on every call
        return F.dropout(x * x, 0.4)
    assert tgx.gradgradcheck(fn, _leaves((4, 5)))


def test_attention_with_dropout():
    def fn(q, k, v):
        tgx.manual_seed(7)
        return F.attention(q, k, v, dropout_p=0.3, is_causal=True)
    assert tgx.gradgradcheck(fn, _leaves((2, 3, 2), (2, 3, 2), (2, 3, 2)))


def test_attention_broadcast_batches_and_a_mask_that_adds_dims():
    q, k, v = _leaves((3, 2), (2, 1, 4, 2), (1, 4, 3))
    bias = np.random.default_rng(4).standard_normal((2, 2, 3, 4))
    assert tgx.gradgradcheck(lambda q, k, v: F.attention(q, k, v, attn_mask=bias), (q, k, v))
    blocked = np.ones((3, 4), dtype=bool)
    blocked[1] = False                       # a query that sees no key: zero weights
    assert tgx.gradgradcheck(lambda q, k, v: F.attention(q, k, v, attn_mask=blocked),
                             (q, k, v))


@pytest.mark.parametrize("n_query", [None, 2])
def test_packed_attention(n_query):
    def fn(x):
        tgx.manual_seed(1)
        return F.packed_attention(x, 2, dropout_p=0.2, is_causal=True, n_query=n_query)
    assert tgx.gradgradcheck(fn, _leaves((2, 3, 12)))


# --------------------------------------------------------------------------------------------
# beyond the second derivative, and the walk's shortcut
# --------------------------------------------------------------------------------------------

def test_third_derivative_of_softmax_and_getitem():
    """The rules are written with ops that have rules, so they differentiate again."""
    (x,) = _arrays((3, 4))
    idx = np.array([1, 1, 3])

    def third(lib, t):
        y = (lib.softmax(t, -1) if lib is F else torch.softmax(t, -1))[:, idx]
        (g,) = (tgx.grad if lib is F else torch.autograd.grad)(
            (y * y).sum(), t, create_graph=True)
        (h,) = (tgx.grad if lib is F else torch.autograd.grad)(
            (g * g).sum(), t, create_graph=True)
        (k,) = (tgx.grad if lib is F else torch.autograd.grad)(h.sum(), t)
        return k

    got = third(F, Tensor(x, requires_grad=True)).numpy()
    want = third(torch, torch.tensor(x, requires_grad=True)).numpy()
    np.testing.assert_allclose(got, want, **TOL)


def test_graph_walk_records_getitem_adjoint_as_an_op():
    """The split of one tensor goes through IndexPut nodes (the array walk's slice buffer
    buffer is not used), and those nodes belong to the backward."""
    x = Tensor(np.arange(6.0), requires_grad=True)
    a, b = x.split(3)
    (g,) = tgx.grad((a * a).sum() + (b * b * b).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.r_[2 * np.arange(3.0), 3 * np.arange(3.0,
                                                                                           6) ** 2])
    names = set()
    stack = [g]
    while stack:
        t = stack.pop()
        if t._ctx is not None:
            names.add(t._ctx.name())
            stack += [p for p in t._ctx.parents if p.requires_grad]
    assert "index_put" in names


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "exp"])
def test_create_graph_after_an_input_changed_in_place(op):
    """Softmax and exp save their output, not x, so both walks are right after `x.mul_(2)`
    and agree with torch; layer_norm saves x (as torch's), so both refuse, naming the fix."""
    a0, w = _arrays((2, 3), (2, 3))

    def run(lib, a):
        x = a * 1
        y = {"softmax": lambda: x.softmax(-1), "exp": lambda: x.exp(),
             "layer_norm": lambda: (F if lib is tgx else TF).layer_norm(x, (3,))}[op]()
        x.mul_(2.0)
        grad = tgx.grad if lib is tgx else torch.autograd.grad
        (g,) = grad((y * lib.tensor(w)).sum(), a, create_graph=True)
        (h,) = grad((g * g).sum(), a)
        return g, h

    if op == "layer_norm":
        with pytest.raises(RuntimeError, match="modified by an in-place operation.*clone"):
            run(tgx, Tensor(a0, requires_grad=True))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            run(torch, torch.tensor(a0, requires_grad=True))
        return
    for ours, ref in zip(run(tgx, Tensor(a0, requires_grad=True)),
                         run(torch, torch.tensor(a0, requires_grad=True)), strict=True):
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), **TOL)


# --------------------------------------------------------------------------------------------
# with the other rules: the op-by-op attention, and a Transformer block end to end
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,m", [(3, 3), (2, 4)])
def test_scaled_dot_product_attention_causal(n, m):
    """The op-by-op attention (matmul, masked_fill, softmax rules) against torch's."""
    q, k, v = _arrays((2, n, 3), (2, m, 3), (2, m, 2))
    check_hvp(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
              lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
              [q, k, v])


def test_transformer_block_end_to_end():
    """layer_norm -> qkv projection -> packed causal attention -> projection -> residual ->
    gelu -> cross_entropy: the fused ops' rules chained with linear, getitem and the rest."""
    B, T, C, h, V = 2, 3, 4, 2, 5
    x, w_ln, b_ln, w_qkv, w_o, w_out = _arrays((B, T, C), (C,), (C,), (3 * C, C), (C, C),
                                               (V, C))
    t = np.array([1, 4, 0, 2, 2, 3])

    def block(lib, x, w_ln, b_ln, w_qkv, w_o, w_out):
        fn = F if lib is tgx else TF
        y = fn.layer_norm(x, (C,), w_ln, b_ln)
        qkv = fn.linear(y, w_qkv)
        if lib is tgx:
            z = F.packed_attention(qkv, h, is_causal=True)
        else:
            q, k, v = (a.reshape(B, T, h, C // h).transpose(1, 2) for a in qkv.split(C, -1))
            z = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
            z = z.transpose(1, 2).reshape(B, T, C)
        hid = fn.gelu(x + fn.linear(z, w_o), approximate="tanh")
        logits = fn.linear(hid, w_out).reshape(B * T, V)
        return fn.cross_entropy(logits, t if lib is tgx else torch.tensor(t),
                                label_smoothing=0.1)

    check_hvp(lambda *a: block(tgx, *a), lambda *a: block(torch, *a),
              [x, w_ln, b_ln, w_qkv, w_o, w_out])


def _torch_layer_norm(t, shape, eps=1e-5):
    c = t - t.mean(dim=-1, keepdim=True)
    return c * ((c * c).mean(dim=-1, keepdim=True) + eps).rsqrt()


@pytest.mark.parametrize("fn", ["attention", "layer_norm", "gelu"])
def test_third_derivative_of_fused_ops(fn):
    """A rule's own ops have rules, so a third derivative comes out right as well."""
    (x,) = _arrays((2, 3, 4))
    ops = {"attention": lambda lib, t: (F.attention if lib is tgx else
                                        TF.scaled_dot_product_attention)(t, t, t, is_causal=True),
           # torch's native layer_norm disagrees with its own composite at third order, so
           # the reference here is the composite
           "layer_norm": lambda lib, t: (F.layer_norm if lib is tgx else _torch_layer_norm)(
               t, (4,)),
           "gelu": lambda lib, t: (F if lib is tgx else TF).gelu(t)}

    def third(lib, t):
        grad = tgx.grad if lib is tgx else torch.autograd.grad
        y = ops[fn](lib, t)
        (g,) = grad((y * y * y).sum(), t, create_graph=True)
        (h,) = grad((g * g).sum(), t, create_graph=True)
        (k,) = grad((h * h).sum(), t)
        return k

    got = third(tgx, Tensor(x, requires_grad=True)).numpy()
    with sdpa_kernel(SDPBackend.MATH):
        want = third(torch, torch.tensor(x, requires_grad=True)).numpy()
    np.testing.assert_allclose(got, want, **TOL)
