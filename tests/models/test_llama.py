"""The LLaMA-style switches of GPTConfig (models/nets/gpt.py): RMSNorm, RoPE, SwiGLU,
grouped-query attention and no biases, each against its formula, and the whole model's KV cache
against recomputation. Small sizes, float64 where values are compared exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Tensor
from tinygradx.gradcheck import gradcheck
from tinygradx.models.nets.gpt import (GPT, MLP, CausalSelfAttention, GPTConfig, RMSNorm,
                                       apply_rope, count_parameters, rope_tables)
from tinygradx.models.nets.layers import KVCache


def small(**kw):
    cfg = dict(block_size=12, vocab_size=17, n_layer=2, n_head=4, n_embd=16)
    cfg.update(kw)
    return GPTConfig.llama(**cfg)


def model(seed=0, dtype=np.float64, **kw):
    tgx.manual_seed(seed)
    m = GPT(small(**kw))
    return m.double() if dtype == np.float64 else m


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ------------------------------------------------------------------------------------------
# the config
# ------------------------------------------------------------------------------------------

def test_defaults_are_the_gpt2_block():
    cfg = GPTConfig()
    assert (cfg.norm, cfg.pos, cfg.mlp, cfg.n_kv_head, cfg.bias) == \
        ("layernorm", "learned", "gelu", None, True)
    names = list(GPT(cfg).state_dict())
    assert "transformer.wpe.weight" in names and "transformer.h.0.ln_1.bias" in names
    assert not any("c_up" in n for n in names)


def test_llama_names_and_counts():
    m = model(n_kv_head=2)
    names = dict(m.named_parameters())
    assert "transformer.wpe.weight" not in names                   # RoPE: no position table
    assert not any(n.endswith(".bias") for n in names)             # bias=False
    assert names["transformer.h.0.ln_1.weight"].shape == (16,)     # RMSNorm: a gain only
    hs = 16 // 4
    assert names["transformer.h.0.attn.c_attn.weight"].shape == (16 + 2 * 2 * hs, 16)
    H = m.config.hidden_size
    assert H == 48 and H % 8 == 0 and H >= 8 * 16 / 3              # 8/3 C rounded up to 8
    assert names["transformer.h.0.mlp.c_up.weight"].shape == (H, 16)
    for cfg in (small(), small(n_kv_head=1), small(mlp="gelu", bias=True),
                small(norm="layernorm", pos="learned", n_kv_head=2)):
        assert GPT(cfg).num_parameters() == count_parameters(cfg)


@pytest.mark.parametrize("fields, words", [
    (dict(n_kv_head=3), "divisible by n_kv_head"),
    (dict(n_kv_head=8), "at most n_head"),
    (dict(n_kv_head=0), "n_kv_head must be a positive int"),
    (dict(norm="batchnorm"), "norm must be one of"),
    (dict(pos="alibi"), "pos must be one of"),
    (dict(mlp="geglu"), "mlp must be one of"),
    (dict(n_embd=18), "divisible by n_head"),
    (dict(n_embd=12, n_head=4), "even head size"),
])
def test_config_errors(fields, words):
    with pytest.raises(ValueError, match=words):
        small(**fields)


def test_config_lists_every_problem_at_once():
    with pytest.raises(ValueError) as e:
        small(norm="x", pos="y", n_kv_head=3)
    msg = str(e.value)
    assert "norm must" in msg and "pos must" in msg and "n_kv_head" in msg


def test_model_checks_a_config_changed_after_construction():
    cfg = small()
    cfg.n_kv_head = 3
    with pytest.raises(ValueError, match="n_kv_head"):
        GPT(cfg)


# ------------------------------------------------------------------------------------------
# the pieces against their formulas
# ------------------------------------------------------------------------------------------

def test_rmsnorm_formula_and_gradient():
    norm = RMSNorm(6, eps=1e-5).double()
    norm.weight.detach().numpy()[...] = rand(6, seed=3)
    x = rand(2, 3, 6)
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5) * norm.weight.detach().numpy()
    np.testing.assert_allclose(norm(Tensor(x)).detach().numpy(), want, rtol=1e-12)
    xt = Tensor(x, requires_grad=True)
    assert gradcheck(lambda a: norm(a), (xt,))


def test_rope_rotates_pairs_and_keeps_relative_positions():
    hs, T = 8, 10
    cos, sin = rope_tables(T, hs)
    q, k = rand(1, 1, 1, hs, seed=1), rand(1, 1, 1, hs, seed=2)

    def at(x, m):                       # the same vector placed at position m
        return apply_rope(Tensor(x), cos[m:m + 1], sin[m:m + 1]).numpy()

    # a rotation keeps the norm; q_m . k_n depends only on m - n
    np.testing.assert_allclose(np.linalg.norm(at(q, 7)), np.linalg.norm(q), rtol=1e-12)
    dots = [float((at(q, m + 2) * at(k, m)).sum()) for m in range(6)]
    np.testing.assert_allclose(dots, dots[0], rtol=1e-10)
    # pair (x_i, x_{i+hs/2}) turns by the angle m * 10000^(-2i/hs)
    m, i = 3, 1
    theta = m * 10000.0 ** (-2 * i / hs)
    x = at(q, m)[0, 0, 0]
    a, b = q[0, 0, 0, i], q[0, 0, 0, i + hs // 2]
    np.testing.assert_allclose([x[i], x[i + hs // 2]],
                               [a * np.cos(theta) - b * np.sin(theta),
                                b * np.cos(theta) + a * np.sin(theta)], rtol=1e-12)
    xt = Tensor(rand(2, 3, 4, hs), requires_grad=True)
    assert gradcheck(lambda a: apply_rope(a, cos[:4], sin[:4]), (xt,))


def test_swiglu_formula():
    tgx.manual_seed(0)
    mlp = MLP(small()).double()
    x = rand(2, 3, 16)
    W1, W3, W2 = (mlp.c_fc.weight.detach().numpy(), mlp.c_up.weight.detach().numpy(),
                  mlp.c_proj.weight.detach().numpy())
    g = x @ W1.T
    want = (g / (1 + np.exp(-g)) * (x @ W3.T)) @ W2.T
    np.testing.assert_allclose(mlp(Tensor(x)).detach().numpy(), want, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("n_kv_head", [1, 2, 4])
def test_gqa_against_numpy(n_kv_head):
    """Query head i reads K/V head i // (nh / nkv); RoPE on Q and K; causal softmax."""
    tgx.manual_seed(0)
    cfg = small(n_kv_head=n_kv_head)
    attn = CausalSelfAttention(cfg).double()
    B, T, C, nh, hs = 2, 5, 16, 4, 4
    x = rand(B, T, C)
    qkv = x @ attn.c_attn.weight.detach().numpy().T
    q = qkv[..., :C].reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
    k = qkv[..., C:C + n_kv_head * hs].reshape(B, T, n_kv_head, hs).transpose(0, 2, 1, 3)
    v = qkv[..., C + n_kv_head * hs:].reshape(B, T, n_kv_head, hs).transpose(0, 2, 1, 3)
    cos, sin = rope_tables(T, hs)

    def rot(a):
        return a * cos + np.concatenate([-a[..., hs // 2:], a[..., :hs // 2]], -1) * sin

    q, k = rot(q), rot(k)
    g = nh // n_kv_head
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)       # (B, nh, T, hs)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs) + np.triu(np.full((T, T), -np.inf), 1)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    y = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, C) @ attn.c_proj.weight.detach().numpy().T
    for fused in (True, False):
        attn.fused = fused
        np.testing.assert_allclose(attn(Tensor(x)).detach().numpy(), y, rtol=1e-10, atol=1e-13)


def test_fused_and_op_by_op_paths_agree_with_gradients():
    a, b = model(n_kv_head=2), model(n_kv_head=2, fused_attention=False)
    x = np.random.default_rng(0).integers(0, 17, (2, 9))
    la, lossa = a(x, x)
    lb, lossb = b(x, x)
    np.testing.assert_allclose(la.detach().numpy(), lb.detach().numpy(), rtol=1e-10, atol=1e-12)
    lossa.backward()
    lossb.backward()
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-8, atol=1e-12,
                                   err_msg=n)


def test_whole_model_gradcheck():
    m = model(n_layer=1, n_kv_head=2)
    x = np.random.default_rng(0).integers(0, 17, (2, 5))
    emb = m.transformer.wte.weight
    assert gradcheck(lambda w: m(x, x)[1], (emb,), fast_mode=True)


# ------------------------------------------------------------------------------------------
# the KV cache with RoPE and GQA
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(n_kv_head=2), dict(n_kv_head=1), dict(),
                                dict(n_kv_head=2, fused_attention=False),
                                dict(pos="learned", n_kv_head=2)])
def test_cached_logits_equal_recomputation(kw):
    m = model(**kw).eval()
    x = np.random.default_rng(5).integers(0, 17, (3, 11))
    with tgx.no_grad():
        full, _ = m(x)                                             # (B, 11, V)
        cache = KVCache(m.config.n_layer)
        steps = [m(x[:, :4], kv_cache=cache)[0]]                   # a 4-token prompt
        for t in range(4, 11):
            steps.append(m(x[:, t:t + 1], kv_cache=cache)[0])      # then one token at a time
    np.testing.assert_allclose(np.concatenate([s.numpy() for s in steps], 1), full.numpy(),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("kw", [dict(n_kv_head=2), dict(n_kv_head=1, fused_attention=False)])
def test_cached_generation_equals_uncached(kw):
    m = model(**kw).eval()
    prompt = np.random.default_rng(6).integers(0, 17, (2, 3))
    # 20 new tokens: past block_size 12, so the context is cropped and the cache rebuilt
    a = m.generate(prompt, 20, temperature=0, use_cache=True)
    b = m.generate(prompt, 20, temperature=0, use_cache=False)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    tgx.manual_seed(3)
    c = m.generate(prompt, 20, temperature=1.0, top_k=5, use_cache=True)
    tgx.manual_seed(3)
    d = m.generate(prompt, 20, temperature=1.0, top_k=5, use_cache=False)
    np.testing.assert_array_equal(c.numpy(), d.numpy())


def test_crop_block_size_with_rope():
    m = model()
    x = np.random.default_rng(0).integers(0, 17, (1, 8))
    before = m(x)[0].detach().numpy()
    m.crop_block_size(8)
    np.testing.assert_allclose(m(x)[0].detach().numpy(), before, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="block size"):
        m(np.zeros((1, 9), np.int64))


def test_llama_overfits_one_batch():
    m = model(dtype=np.float32, n_kv_head=2)
    opt = tgx.optim.AdamW(m.parameters(), lr=1e-2)
    x = np.random.default_rng(0).integers(0, 17, (4, 12))
    for _ in range(60):
        _, loss = m(x[:, :-1], x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1


def test_trace_runs_on_the_llama_model():
    m = model(dtype=np.float32, n_layer=1, n_kv_head=2)
    with tgx.trace() as t:
        m(np.zeros((2, 5), np.int64))
    scopes = {r.scope for r in t.rows}
    assert {"transformer.h.0.ln_1", "transformer.h.0.attn", "transformer.h.0.mlp.c_up",
            "transformer.ln_f"} <= scopes
    assert any(r.op == "attention" for r in t.rows)                # F.attention, one node
    assert "transformer.wpe" not in scopes
