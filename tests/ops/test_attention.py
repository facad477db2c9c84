"""The fused attention ops (F.attention, F.packed_attention) against the op-by-op formula.

Both are one graph node each with a hand-written backward; the composite they must equal is
F.scaled_dot_product_attention (matmul, add/fill M, softmax, dropout, matmul). Checked: value
and gradients over hypothesis shapes in float64, gradcheck of the node, the node's own
backward, masks (causal with n != m as under a KV cache, bool, float), dropout drawn as
F.dropout draws it, and the GPT built either way.
"""
import functools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor
from tinygradx.autograd import OpError

from helpers import assert_same, check_direct_backward, check_op, value_and_grads

SEEDS = st.integers(0, 2**16)
# fused and op-by-op must agree to rounding in float64
same = functools.partial(assert_same, atol=1e-12, rtol=1e-12)


@st.composite
def qkv_shapes(draw):
    """(batch dims..., n, d_k), (..., m, d_k), (..., m, d_v) with m >= n (a cache has more
    keys than new queries)."""
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n = draw(st.integers(1, 5))
    m = draw(st.integers(n, 6))
    dk, dv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return (*batch, n, dk), (*batch, m, dk), (*batch, m, dv)


@given(shapes=qkv_shapes(), causal=st.booleans(), seed=SEEDS)
def test_attention_equals_composite(shapes, causal, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    same(lambda q, k, v: F.attention(q, k, v, is_causal=causal),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
         arrays, g_seed=seed)


@given(shapes=qkv_shapes(), seed=SEEDS, data=st.data())
def test_attention_with_bool_and_float_masks(shapes, seed, data):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    n, m = shapes[0][-2], shapes[1][-2]
    allowed = rng.random((n, m)) < 0.7
    allowed[:, 0] = True                       # every query row keeps at least one key
    additive = np.where(rng.random((n, m)) < 0.3, -np.inf, rng.standard_normal((n, m)))
    additive[:, 0] = 0.0
    mask = data.draw(st.sampled_from(["bool", "float"]))
    am = allowed if mask == "bool" else additive
    same(lambda q, k, v: F.attention(q, k, v, attn_mask=am),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=am), arrays, g_seed=seed)


def test_attention_fully_masked_row_gives_zeros_not_nan():
    rng = np.random.default_rng(0)
    q, k, v = (Tensor(rng.standard_normal((2, 3, 4)), requires_grad=True) for _ in range(3))
    allowed = np.ones((3, 3), dtype=bool)
    allowed[1] = False                         # query 1 may read nothing
    z = F.attention(q, k, v, attn_mask=allowed)
    z.sum().backward()
    assert np.all(z.detach().numpy()[:, 1] == 0)
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad.numpy()))


@given(shapes=qkv_shapes(), causal=st.booleans(), seed=SEEDS)
def test_attention_gradcheck_and_own_backward(shapes, causal, seed):
    check_op(None, lambda q, k, v: F.attention(q, k, v, is_causal=causal), list(shapes),
             seed=seed)


def _split_heads(qkv, h):
    B, T, C3 = qkv.shape
    d = C3 // (3 * h)
    q, k, v = qkv.split(C3 // 3, dim=2)
    return [x.reshape(B, T, h, d).transpose(1, 2) for x in (q, k, v)]   # (B, h, T, d) each


def _packed_composite(qkv, h, causal, p=0.0):
    B, T, _ = qkv.shape
    q, k, v = _split_heads(qkv, h)
    z = F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p)  # (B, h, T, d)
    return z.transpose(1, 2).reshape(B, T, -1)                                   # (B, T, h*d)


@given(B=st.integers(1, 3), T=st.integers(1, 5), h=st.integers(1, 3), d=st.integers(1, 3),
       causal=st.booleans(), seed=SEEDS)
def test_packed_attention_equals_split_heads_composite(B, T, h, d, causal, seed):
    qkv = np.random.default_rng(seed).standard_normal((B, T, 3 * h * d))
    same(lambda x: F.packed_attention(x, h, is_causal=causal),
         lambda x: _packed_composite(x, h, causal), [qkv], g_seed=seed)


@given(B=st.integers(1, 2), T=st.integers(1, 4), h=st.integers(1, 2), d=st.integers(1, 3),
       seed=SEEDS)
def test_packed_attention_gradcheck_and_own_backward(B, T, h, d, seed):
    check_op(None, lambda x: F.packed_attention(x, h, is_causal=True), [(B, T, 3 * h * d)],
             seed=seed)


def test_dropout_inside_the_fused_ops_draws_as_f_dropout():
    rng = np.random.default_rng(1)
    qkv = rng.standard_normal((2, 5, 12))
    outs = []
    for fn in (lambda x: F.packed_attention(x, 2, is_causal=True, dropout_p=0.3),
               lambda x: _packed_composite(x, 2, True, p=0.3),
               lambda x: F.attention(*_split_heads(x, 2), is_causal=True, dropout_p=0.3)
               .transpose(1, 2).reshape(2, 5, 4)):
        tgx.manual_seed(7)
        outs.append(value_and_grads(fn, [qkv], g_seed=3))
    for v, g in outs[1:]:
        np.testing.assert_allclose(v, outs[0][0], atol=1e-12)
        np.testing.assert_allclose(g[0], outs[0][1][0], atol=1e-12)


def test_causal_mask_is_cached_read_only_and_bottom_right_aligned():
    m = F.causal_mask(2, 4, np.float64)
    assert m.tolist() == [[0, 0, 0, -math.inf], [0, 0, 0, 0]]
    assert F.causal_mask(2, 4, np.float64) is m
    assert not m.flags.writeable
    assert F.causal_mask(3).dtype == np.float32 and F.causal_mask(3).shape == (3, 3)


def test_errors_name_the_op_and_the_shapes():
    with pytest.raises(OpError, match=r"attention.*\(2, 3, 4\).*\(2, 3, 5\)"):
        F.attention(tgx.randn(2, 3, 4), tgx.randn(2, 3, 5), tgx.randn(2, 3, 5))
    with pytest.raises(OpError, match=r"attention.*packed \[Q K V\].*h=2.*\(2, 3, 10\)"):
        F.packed_attention(tgx.randn(2, 3, 10), 2)
    with pytest.raises(OpError, match="n_head must be a positive int"):
        F.packed_attention(tgx.randn(2, 3, 12), 0)


# ------------------------------------------------------------------------------------------
# the GPT, fused (default) or op by op
# ------------------------------------------------------------------------------------------

def _gpt_pair(**kw):
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    cfg = dict(block_size=16, vocab_size=13, n_layer=2, n_head=2, n_embd=8, **kw)
    tgx.manual_seed(0)
    fused = GPT(GPTConfig(**cfg)).double()
    tgx.manual_seed(0)
    explicit = GPT(GPTConfig(fused_attention=False, **cfg)).double()
    return fused, explicit


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_gpt_fused_attention_equals_op_by_op(dropout):
    fused, explicit = _gpt_pair(dropout=dropout)
    idx = np.random.default_rng(0).integers(0, 13, (3, 7))
    losses = []
    for model in (fused, explicit):
        tgx.manual_seed(5)
        loss = model(idx, idx)[1]
        loss.backward()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], abs=1e-12)
    pairs = zip(fused.named_parameters(), explicit.named_parameters(), strict=True)
    for (name, p), (_, q) in pairs:
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-12, err_msg=name)


def test_gpt_fused_graph_has_one_attention_node_per_block():
    fused, explicit = _gpt_pair()
    idx = np.random.default_rng(0).integers(0, 13, (2, 5))
    names = []
    for model in (fused, explicit):
        with tgx.trace() as t:
            model(idx)
        names.append([r.op for r in t.rows])
    assert names[0].count("attention") == 2 and "softmax" not in names[0]
    assert "attention" not in names[1] and names[1].count("softmax") == 2


def test_gpt_kv_cache_generation_matches_either_way():
    fused, explicit = _gpt_pair()
    prompt = np.array([[1, 2, 3]])
    a = fused.generate(prompt, max_new_tokens=6, temperature=0).numpy()
    b = explicit.generate(prompt, max_new_tokens=6, temperature=0).numpy()
    assert a.tolist() == b.tolist()
    tgx.manual_seed(0)
    with tgx.no_grad():
        full = fused(np.array([[1, 2, 3, 4, 5]]))[0].numpy()
    from tinygradx.models.nets.layers import KVCache
    cache = KVCache(2)
    with tgx.no_grad():
        first = fused(np.array([[1, 2, 3]]), kv_cache=cache)[0].numpy()
        rest = fused(np.array([[4, 5]]), kv_cache=cache)[0].numpy()
    np.testing.assert_allclose(np.concatenate([first, rest], axis=1), full, atol=1e-12)


def test_record_attn_takes_the_op_by_op_path():
    fused, _ = _gpt_pair()
    attn = fused.transformer.h[0].attn
    attn.record_attn = True
    fused(np.array([[1, 2, 3, 4]]))
    a = attn.attn_weights.numpy()
    assert a.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(a.sum(-1), 1.0)
    assert np.all(np.triu(a[0, 0], 1) == 0)


def test_direct_backward_of_attention_with_a_mask():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3))]
    check_direct_backward(lambda q, k, v: F.attention(q, k, v, is_causal=True), arrays)


def test_dropout_p_out_of_range_is_refused():
    q = tgx.randn(1, 2, 3)
    for p in (-0.1, 1.0):
        with pytest.raises(ValueError, match=r"attention: dropout_p must be in \[0, 1\)"):
            F.attention(q, q, q, dropout_p=p)
        with pytest.raises(ValueError, match=r"packed_attention: dropout_p must be in"):
            F.packed_attention(tgx.randn(1, 2, 6), 1, dropout_p=p)


@given(B=st.integers(1, 2), T=st.integers(1, 5), h=st.integers(1, 2), d=st.integers(1, 3),
       data=st.data(), seed=SEEDS)
def test_packed_attention_with_n_query_reads_the_last_rows(B, T, h, d, data, seed):
    n = data.draw(st.integers(1, T))
    qkv = np.random.default_rng(seed).standard_normal((B, T, 3 * h * d))

    def composite(x):
        q, k, v = _split_heads(x, h)                                   # (B, h, T, d) each
        z = F.scaled_dot_product_attention(q[:, :, T - n:], k, v,
                                           attn_mask=F.causal_mask(n, T, np.float64))
        return z.transpose(1, 2).reshape(B, n, h * d)

    same(lambda x: F.packed_attention(x, h, is_causal=True, n_query=n), composite, [qkv],
         g_seed=seed)
    check_op(None, lambda x: F.packed_attention(x, h, is_causal=True, n_query=n),
             inputs=[qkv], seed=seed)


def test_n_query_out_of_range_is_refused():
    with pytest.raises(OpError, match=r"n_query must be an int in 1\.\.3"):
        F.packed_attention(tgx.randn(1, 3, 6), 1, n_query=4)


def test_cache_rows_grow_and_reorder_and_refuse_mixing():
    from tinygradx.models.nets.layers import LayerCache
    c = LayerCache()
    for t in range(40):                                  # past the first capacity (16)
        rows = c.append_rows(np.full((2, 1, 6), float(t)))
    assert c.length == 40 and rows.shape == (2, 40, 6)
    assert rows.numpy()[0, :, 0].tolist() == [float(t) for t in range(40)]
    c.reorder(np.array([1, 1]))
    assert c.append_rows(np.zeros((2, 1, 6))).shape == (2, 41, 6)
    with pytest.raises(RuntimeError, match="packed rows"):
        c.update(tgx.zeros(2, 1, 1, 6), tgx.zeros(2, 1, 1, 6))


def test_cache_head_buffers_grow_and_reorder_and_refuse_mixing():
    from tinygradx.models.nets.layers import LayerCache
    c = LayerCache()
    for t in range(40):                                  # past the first capacity (16)
        k, v = c.append_heads(np.full((2, 3, 1, 4), float(t)), np.full((2, 3, 1, 5), -t))
    assert c.length == 40 and k.shape == (2, 3, 40, 4) and v.shape == (2, 3, 40, 5)
    assert k.numpy()[1, 2, :, 0].tolist() == [float(t) for t in range(40)]
    assert k.numpy().strides[-1] == k.numpy().itemsize   # each (t, d_k) block is contiguous
    c.reorder(np.array([1, 1, 0]))
    k, v = c.append_heads(np.zeros((3, 3, 2, 4)), np.zeros((3, 3, 2, 5)))
    assert k.shape == (3, 3, 42, 4) and k.numpy()[0, 0, 39, 0] == 39.0
    with pytest.raises(RuntimeError, match="K, V buffers"):
        c.append_rows(np.zeros((3, 1, 6)))


def test_gpt_cache_with_grad_enabled_takes_the_differentiable_path():
    fused, _ = _gpt_pair()
    from tinygradx.models.nets.layers import KVCache
    cache = KVCache(2)
    full = fused(np.array([[1, 2, 3, 4]]))[0]
    first = fused(np.array([[1, 2, 3]]), kv_cache=cache)[0]
    last = fused(np.array([[4]]), kv_cache=cache)[0]      # K, V of rows 0..2 from the cache
    assert last.requires_grad
    np.testing.assert_allclose(last.detach().numpy()[0, 0], full.detach().numpy()[0, 3], atol=1e-12)
    np.testing.assert_allclose(first.detach().numpy(), full.detach().numpy()[:, :3], atol=1e-12)
    assert cache[0].rows is None and cache[0].length == 4


@pytest.mark.parametrize("shapes", [
    ((2, 4, 3, 8), (2, 1, 5, 8), (2, 1, 5, 8)),      # K, V shared by the heads (multi-query)
    ((2, 4, 3, 8), (5, 8), (5, 8)),                  # K, V without batch dims
    ((1, 4, 3, 8), (2, 4, 5, 8), (2, 4, 5, 6)),      # Q broadcast over the batch, d_v != d_k
])
def test_attention_broadcasts_like_the_composite(shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    same(lambda q, k, v: F.attention(q, k, v, is_causal=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), arrays)


def test_attention_mask_with_more_dims_than_the_scores():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (5, 4), (5, 2))]
    mask = np.where(rng.random((2, 3, 5)) < 0.3, -np.inf, 0.0)
    mask[..., 0] = 0.0
    same(lambda q, k, v: F.attention(q, k, v, attn_mask=mask),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), arrays)


def test_attention_mixed_dtypes_give_the_wider_one():
    """tinygradx's own F.attention promotes; scaled_dot_product_attention refuses, as torch's."""
    rng = np.random.default_rng(2)
    q = Tensor(rng.standard_normal((2, 3, 4)).astype(np.float32), requires_grad=True)
    k, v = (Tensor(rng.standard_normal((2, 5, 4)), requires_grad=True) for _ in range(2))
    z = F.attention(q, k, v)
    assert z.dtype == np.float64
    with pytest.raises(Exception, match=r"scaled_dot_product_attention: query, key and value "
                                        r"must have one dtype, got float32, float64, float64"):
        F.scaled_dot_product_attention(q, k, v)
    z.sum().backward()
    assert q.grad.dtype == np.float32 and k.grad.dtype == np.float64


def test_n_query_may_be_a_numpy_integer():
    out = F.packed_attention(tgx.randn(1, 3, 6), 1, n_query=np.int64(2))
    assert out.shape == (1, 2, 2)


def test_gpt_cached_path_applies_attention_dropout_in_training_mode():
    from tinygradx.models.nets.layers import KVCache
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    idx = np.random.default_rng(0).integers(0, 20, (2, 6))
    for fused in (True, False):
        tgx.manual_seed(0)
        m = GPT(GPTConfig(block_size=16, vocab_size=20, n_layer=1, n_head=2, n_embd=16,
                          dropout=0.5, fused_attention=fused)).train()
        with tgx.no_grad():
            tgx.manual_seed(1)
            a, _ = m(idx)
            tgx.manual_seed(1)
            b, _ = m(idx, kv_cache=KVCache(1))
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6, err_msg=str(fused))
