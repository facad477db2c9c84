"""PyTorch as an oracle (float64): a sample of ops and every fused op, forward and gradients.

Skipped, with the reason, when torch is not installed (the `oracle` extra: make test ORACLE=1).
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the test oracle) not installed: "
                                            "make test ORACLE=1")
import torch.nn.functional as TF  # noqa: E402

import tinygradx as tgx  # noqa: E402
import tinygradx.functional as F  # noqa: E402
from tinygradx import Tensor, nn  # noqa: E402

from helpers import make_inputs  # noqa: E402


def compare(torch_fn, tgx_fn, shapes, seed=0, low=-2.0, high=2.0, atol=1e-9, rtol=1e-7):
    """Same float64 inputs to both; compare the outputs and the grads of sum(g * out)."""
    arrays = make_inputs(shapes, seed, low, high)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    xt = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    out_t, out_x = torch_fn(*tt), tgx_fn(*xt)
    np.testing.assert_allclose(out_x.detach().numpy(), out_t.detach().numpy(), atol=atol, rtol=rtol)
    g = np.random.default_rng(seed + 7).standard_normal(tuple(out_t.shape))
    out_t.backward(torch.tensor(g))
    out_x.backward(g)
    for i, (a, b) in enumerate(zip(xt, tt, strict=True)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i}")


SAMPLE = [
    ("add_broadcast", lambda a, b: a + b, lambda a, b: a + b, [(3, 1, 4), (5, 1)], {}),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [(3, 4), (4,)], dict(low=0.5)),
    ("pow", lambda a, b: a ** b, lambda a, b: a ** b, [(3, 4), (3, 1)], dict(low=0.5)),
    ("rpow", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [(3,)], {}),
    ("maximum", torch.maximum, tgx.maximum, [(2, 3), (3,)], {}),
    ("exp_log", lambda a: a.exp() + a.abs().log(), lambda a: a.exp() + a.abs().log(),
     [(4, 3)], {}),
    ("rsqrt", torch.rsqrt, Tensor.rsqrt, [(5,)], dict(low=0.2)),
    ("sigmoid_tanh", lambda a: a.sigmoid() * a.tanh(), lambda a: a.sigmoid() * a.tanh(),
     [(3, 3)], {}),
    ("erf", torch.erf, Tensor.erf, [(10,)], {}),
    ("gelu", TF.gelu, F.gelu, [(4, 5)], {}),
    ("gelu_tanh", lambda a: TF.gelu(a, approximate="tanh"),
     lambda a: F.gelu(a, approximate="tanh"), [(4, 5)], {}),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [(4, 4)], {}),
    ("sum_tuple", lambda a: a.sum(dim=(0, 2), keepdim=True),
     lambda a: a.sum(dim=(0, 2), keepdim=True), [(2, 3, 4)], {}),
    ("mean", lambda a: a.mean(dim=-1), lambda a: a.mean(dim=-1), [(2, 3, 4)], {}),
    ("var_unbiased", lambda a: a.var(dim=1), lambda a: a.var(dim=1), [(3, 5)], {}),
    ("var_biased", lambda a: a.var(dim=(0, 1), unbiased=False, keepdim=True),
     lambda a: a.var(dim=(0, 1), unbiased=False, keepdim=True), [(3, 5, 2)], {}),
    ("logsumexp", lambda a: a.logsumexp(dim=1), lambda a: a.logsumexp(dim=1), [(3, 5)], {}),
    ("amax", lambda a: a.amax(dim=0), lambda a: a.amax(dim=0), [(4, 3)], {}),
    ("max_dim", lambda a: a.max(dim=1).values, lambda a: a.max(dim=1).values, [(4, 3)], {}),
    ("matmul_batch", torch.matmul, lambda a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], {}),
    ("matmul_vec", torch.matmul, lambda a, b: a @ b, [(4,), (2, 4, 3)], {}),
    ("matmul_vec_vec", torch.matmul, lambda a, b: a @ b, [(4,), (4,)], {}),
    ("getitem", lambda a: a[1:, None, [0, 2, 2]], lambda a: a[1:, None, [0, 2, 2]],
     [(3, 4)], {}),
    ("permute_reshape", lambda a: a.permute(2, 0, 1).reshape(4, -1),
     lambda a: a.permute(2, 0, 1).reshape(4, -1), [(2, 3, 4)], {}),
    ("cat_stack", lambda a, b: torch.stack([torch.cat([a, b], 1), torch.cat([b, a], 1)]),
     lambda a, b: tgx.stack([tgx.cat([a, b], 1), tgx.cat([b, a], 1)]), [(2, 3), (2, 3)], {}),
    ("triu_tril", lambda a: a.triu(1) + a.tril(-1), lambda a: a.triu(1) + a.tril(-1),
     [(2, 4, 4)], {}),
    ("softmax", lambda a: TF.softmax(a, dim=1), lambda a: F.softmax(a, dim=1), [(2, 5, 3)], {}),
    ("log_softmax", lambda a: TF.log_softmax(a, dim=-1), lambda a: F.log_softmax(a, dim=-1),
     [(3, 6)], {}),
    ("layer_norm", lambda a: TF.layer_norm(a, (4,)), lambda a: F.layer_norm(a, (4,)),
     [(3, 4)], {}),
    ("layer_norm_affine_2d", lambda a, w, b: TF.layer_norm(a, (3, 4), w, b),
     lambda a, w, b: F.layer_norm(a, (3, 4), w, b), [(2, 3, 4), (3, 4), (3, 4)], {}),
]


@pytest.mark.parametrize("name,torch_fn,tgx_fn,shapes,kw", SAMPLE, ids=[s[0] for s in SAMPLE])
def test_against_torch(name, torch_fn, tgx_fn, shapes, kw):
    compare(torch_fn, tgx_fn, shapes, **kw)


@pytest.mark.parametrize("which", ["max", "min", "amax", "amin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_with_ties_against_torch(which, keepdim):
    a = np.random.default_rng(0).integers(0, 3, size=(5, 4)).astype(np.float64)
    t, x = torch.tensor(a, requires_grad=True), Tensor(a, requires_grad=True)
    out_t, out_x = getattr(t, which)(dim=0, keepdim=keepdim), getattr(x, which)(0, keepdim)
    if which in ("max", "min"):
        np.testing.assert_array_equal(out_x.indices.numpy(), out_t.indices.numpy())
        out_t, out_x = out_t.values, out_x.values
    np.testing.assert_array_equal(out_x.detach().numpy(), out_t.detach().numpy())
    out_t.sum().backward()
    out_x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_against_torch(reduction, smoothing, ignore_index):
    t = np.array([0, 1, 3, 1, 2])
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=ignore_index)
    compare(lambda x: TF.cross_entropy(x, torch.tensor(t), **kw),
            lambda x: F.cross_entropy(x, Tensor(t), **kw), [(5, 4)])


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_n_c_d_against_torch(reduction):
    t = np.random.default_rng(0).integers(0, 3, size=(2, 4, 2))
    t[1, 2, 0] = -100
    kw = dict(reduction=reduction, label_smoothing=0.1)
    compare(lambda x: TF.cross_entropy(x, torch.tensor(t), **kw),
            lambda x: F.cross_entropy(x, t, **kw), [(2, 3, 4, 2)])


def test_embedding_with_padding_idx_against_torch():
    ids = np.array([[1, 2, 1], [0, 4, 2]])
    compare(lambda w: TF.embedding(torch.tensor(ids), w, padding_idx=2),
            lambda w: F.embedding(ids, w, padding_idx=2), [(5, 3)])


def test_dropout_scaling_matches_torch_semantics():
    # the masks differ (different generators); the kept values and the expectation match
    x = np.random.default_rng(0).standard_normal((64, 64)) + 5
    tgx.manual_seed(0)
    y = F.dropout(Tensor(x), p=0.25).numpy()
    yt = TF.dropout(torch.tensor(x), p=0.25).numpy()
    for out in (y, yt):
        kept = out != 0
        np.testing.assert_allclose(out[kept], x[kept] / 0.75)


@pytest.mark.parametrize("masks", ["none", "bool", "float", "padding", "causal"])
def test_multi_head_attention_against_torch(masks):
    tgx.manual_seed(0)
    E, H, B, n, m = 8, 2, 2, 3, 4
    mha = nn.MultiHeadAttention(E, H).double()
    ref = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.tensor(np.concatenate(
            [mha.w_q.weight.detach().numpy(), mha.w_k.weight.detach().numpy(),
             mha.w_v.weight.detach().numpy()])))
        ref.in_proj_bias.copy_(torch.tensor(np.concatenate(
            [mha.w_q.bias.detach().numpy(), mha.w_k.bias.detach().numpy(),
             mha.w_v.bias.detach().numpy()])))
        ref.out_proj.weight.copy_(torch.tensor(mha.w_o.weight.detach().numpy()))
        ref.out_proj.bias.copy_(torch.tensor(mha.w_o.bias.detach().numpy()))
    rng = np.random.default_rng(1)
    q = rng.standard_normal((B, n, E))
    kv = rng.standard_normal((B, m if masks != "causal" else n, E))
    kw_t, kw_x = {}, {}
    mm = kv.shape[1]
    if masks == "bool":
        am = rng.random((n, mm)) < 0.3
        am[:, 0] = False                               # keep one key per row (torch: NaN)
        kw_t["attn_mask"], kw_x["attn_mask"] = torch.tensor(am), am
    elif masks == "float":
        am = rng.standard_normal((n, mm))
        kw_t["attn_mask"], kw_x["attn_mask"] = torch.tensor(am), am
    elif masks == "padding":
        kp = np.zeros((B, mm), bool)
        kp[1, -2:] = True
        kw_t["key_padding_mask"], kw_x["key_padding_mask"] = torch.tensor(kp), kp
    elif masks == "causal":
        causal = np.triu(np.ones((n, n), bool), 1)
        kw_t["attn_mask"], kw_t["is_causal"] = torch.tensor(causal), True
        kw_x["is_causal"] = True
    qt, kvt = torch.tensor(q, requires_grad=True), torch.tensor(kv, requires_grad=True)
    qx, kvx = Tensor(q, requires_grad=True), Tensor(kv, requires_grad=True)
    out_t, w_t = ref(qt, kvt, kvt, need_weights=True, average_attn_weights=False, **kw_t)
    out_x, w_x = mha(qx, kvx, kvx, need_weights=True, average_attn_weights=False, **kw_x)
    np.testing.assert_allclose(out_x.detach().numpy(), out_t.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w_x.detach().numpy(), w_t.detach().numpy(), atol=1e-10)
    out_t.sum().backward()
    out_x.sum().backward()
    np.testing.assert_allclose(qx.grad.numpy(), qt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(kvx.grad.numpy(), kvt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(mha.w_o.weight.grad.numpy(), ref.out_proj.weight.grad.numpy(),
                               atol=1e-10)


def test_linear_and_embedding_init_match_torch_statistics():
    tgx.manual_seed(0)
    lin = nn.Linear(256, 128)
    ref = torch.nn.Linear(256, 128)
    for a, b in ((lin.weight.detach().numpy(), ref.weight.detach().numpy()),
                 (lin.bias.detach().numpy(), ref.bias.detach().numpy())):
        assert abs(np.abs(a).max() - np.abs(b).max()) < 0.01
        assert abs(a.std() - b.std()) < 0.01
