"""The Transformer family (models/nets/gpt.py, models/nets/transformer.py) against their formulas.

Shapes through every block at odd sizes, causality, padding, gradcheck of whole blocks in float64,
parameter counts against the papers, overfitting one batch, state_dict round trips, and the KV
cache equal to recomputation. Small sizes throughout: the file runs in seconds.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.models.nets import gpt as gpt_mod
from tinygradx.models.nets import transformer as tf_mod
from tinygradx.models.nets.layers import KVCache, pad_mask, sample_next
from tinygradx.models.nets.gpt import GPT, Block, CausalSelfAttention, GPTConfig, MLP
from tinygradx.models.nets.transformer import (DecoderLayer, EncoderLayer, Embeddings, Generator,
                                          PositionalEncoding, PositionwiseFeedForward,
                                          TransformerConfig, make_model, sinusoidal_table)

B, T, S, D, H = 3, 7, 5, 24, 4          # odd sizes: batch, target/GPT length, source length, d, h


def tiny_gpt(seed=0, **kw):
    tgx.manual_seed(seed)
    cfg = dict(block_size=16, vocab_size=11, n_layer=2, n_head=H, n_embd=D)
    cfg.update(kw)
    return GPT(GPTConfig(**cfg))


def tiny_tf(seed=0, **kw):
    tgx.manual_seed(seed)
    cfg = dict(N=2, d_model=D, d_ff=40, h=H, dropout=0.0, max_len=64)
    cfg.update(kw)
    return make_model(11, 13, **cfg)


def ids(shape, high, seed=1, low=0):
    return Tensor(np.random.default_rng(seed).integers(low, high, shape))


def randn(*shape, seed=2, dtype=np.float32):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ------------------------------------------------------------------------------------------
# shapes through every block
# ------------------------------------------------------------------------------------------

def test_gpt_block_shapes():
    cfg = GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=H, n_embd=D)
    x = randn(B, T, D)
    attn = CausalSelfAttention(cfg)
    attn.record_attn = True
    assert attn(x).shape == (B, T, D)
    assert attn.attn_weights.shape == (B, H, T, T)                  # A: (B, nh, T, T)
    np.testing.assert_allclose(attn.attn_weights.numpy().sum(-1), 1.0, rtol=1e-5)
    assert MLP(cfg)(x).shape == (B, T, D)
    for norm_first in (True, False):
        cfg.norm_first = norm_first
        assert Block(cfg)(x).shape == (B, T, D)
    model = tiny_gpt()
    logits, loss = model(ids((B, T), 11), ids((B, T), 11, seed=3))
    assert logits.shape == (B, T, 11) and loss.shape == ()
    logits, loss = model(ids((B, T), 11))
    assert loss is None


def test_transformer_block_shapes():
    x, mem = randn(B, T, D), randn(B, S, D, seed=3)
    assert Embeddings(13, D)(ids((B, T), 13)).shape == (B, T, D)
    assert PositionalEncoding(D, 0.0, 32)(x).shape == (B, T, D)
    assert PositionwiseFeedForward(D, 40)(x).shape == (B, T, D)
    for norm_first in (False, True):
        enc = EncoderLayer(D, H, 40, 0.0, norm_first)
        enc.record_attn = True
        assert enc(mem, pad_mask(ids((B, S), 3), 0)).shape == (B, S, D)
        assert enc.attn_weights.shape == (B, H, S, S)
        dec = DecoderLayer(D, H, 40, 0.0, norm_first)
        dec.record_attn = True
        assert dec(x, mem).shape == (B, T, D)
        assert dec.self_attn_weights.shape == (B, H, T, T)
        assert dec.cross_attn_weights.shape == (B, H, T, S)         # Q from decoder, K from H
    assert Generator(D, 13)(x).shape == (B, T, 13)
    model = tiny_tf()
    src, tgt = ids((B, S), 11), ids((B, T), 13)
    memory = model.encode(src)
    assert memory.shape == (B, S, D)
    assert model.decode(memory, None, tgt).shape == (B, T, D)
    logp = model(src, tgt)
    assert logp.shape == (B, T, 13)
    np.testing.assert_allclose(logp.exp().sum(-1).detach().numpy(), 1.0,
                               rtol=1e-5)   # log-probabilities


def test_parameter_names_match_the_benchmark_references():
    names = dict((n, tuple(p.shape)) for n, p in tiny_gpt(n_layer=1).named_parameters())
    C = D
    assert names == {
        "transformer.wte.weight": (11, C), "transformer.wpe.weight": (16, C),
        "transformer.h.0.ln_1.weight": (C,), "transformer.h.0.ln_1.bias": (C,),
        "transformer.h.0.attn.c_attn.weight": (3 * C, C),
        "transformer.h.0.attn.c_attn.bias": (3 * C,),
        "transformer.h.0.attn.c_proj.weight": (C, C), "transformer.h.0.attn.c_proj.bias": (C,),
        "transformer.h.0.ln_2.weight": (C,), "transformer.h.0.ln_2.bias": (C,),
        "transformer.h.0.mlp.c_fc.weight": (4 * C, C), "transformer.h.0.mlp.c_fc.bias": (4 * C,),
        "transformer.h.0.mlp.c_proj.weight": (C, 4 * C), "transformer.h.0.mlp.c_proj.bias": (C,),
        "transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,)}
    model = tiny_gpt()
    assert model.lm_head.weight is model.transformer.wte.weight     # tied: one Parameter

    tf_names = dict((n, tuple(p.shape)) for n, p in tiny_tf(N=1).named_parameters())
    expected = {"src_embed.weight": (11, D), "tgt_embed.weight": (13, D),
                "generator.weight": (13, D), "generator.bias": (13,)}
    for layer, attns, norms in (("encoder.layers.0", ["self_attn"], 2),
                                ("decoder.layers.0", ["self_attn", "cross_attn"], 3)):
        for a in attns:
            for w in ("w_q", "w_k", "w_v", "w_o"):
                expected[f"{layer}.{a}.{w}.weight"] = (D, D)
                expected[f"{layer}.{a}.{w}.bias"] = (D,)
        expected[f"{layer}.ff.w_1.weight"], expected[f"{layer}.ff.w_1.bias"] = (40, D), (40,)
        expected[f"{layer}.ff.w_2.weight"], expected[f"{layer}.ff.w_2.bias"] = (D, 40), (D,)
        for k in range(1, norms + 1):
            expected[f"{layer}.norm{k}.weight"] = expected[f"{layer}.norm{k}.bias"] = (D,)
    assert tf_names == expected
    pre = dict(tiny_tf(N=1, norm_first=True).named_parameters())
    assert set(pre) - set(tf_names) == {"encoder.norm.weight", "encoder.norm.bias",
                                        "decoder.norm.weight", "decoder.norm.bias"}


def test_sinusoidal_table_is_the_seed_formula():
    for d in (24, 7):                                                # odd d_model too
        pe = sinusoidal_table(50, d)
        for pos in (0, 1, 13, 49):
            for j in range(d):
                i = j // 2
                angle = pos / 10000 ** (2 * i / d)
                want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
                assert pe[pos, j] == pytest.approx(want, abs=1e-12)


def test_embeddings_are_scaled_by_sqrt_d_model_before_pe():
    model = tiny_tf()
    tok = ids((1, 4), 11)
    x = model.pos_encoding(model.src_embed(tok))
    want = (model.src_embed.weight.detach().numpy()[tok.detach().numpy()] * math.sqrt(D)
            + sinusoidal_table(64, D)[:4])
    np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_gpt_initialisation():
    model = tiny_gpt(seed=0, n_layer=3, n_embd=96, vocab_size=300)
    sd = dict(model.named_parameters())
    assert np.std(sd["transformer.wte.weight"].detach().numpy()) == pytest.approx(0.02, rel=0.05)
    proj = np.concatenate([sd[f"transformer.h.{i}.mlp.c_proj.weight"].detach().numpy().ravel()
                           for i in range(3)])
    assert np.std(proj) == pytest.approx(0.02 / math.sqrt(6), rel=0.05)
    assert not sd["transformer.h.0.attn.c_attn.bias"].detach().numpy().any()
    assert (sd["transformer.h.0.ln_1.weight"].detach().numpy() == 1).all()


# ------------------------------------------------------------------------------------------
# causality and padding
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [True, False])
def test_gpt_is_causal(norm_first):
    model = tiny_gpt(norm_first=norm_first).double()
    idx = ids((B, T), 11).numpy()
    base, _ = model(idx)
    for t in range(T - 1):
        changed = idx.copy()
        changed[:, t + 1] = (changed[:, t + 1] + 1) % 11
        out, _ = model(changed)
        np.testing.assert_allclose(out.detach().numpy()[:, :t + 1], base.detach().numpy()[:,
                                                                                          :t + 1],
                                   rtol=0, atol=1e-12)
        assert not np.allclose(out.detach().numpy()[:, t + 1], base.detach().numpy()[:, t + 1])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = tiny_tf(norm_first=norm_first).double()
    src, tgt = ids((B, S), 11), ids((B, T), 13).numpy()
    base = model(src, tgt)
    for t in range(T - 1):
        changed = tgt.copy()
        changed[:, t + 1] = (changed[:, t + 1] + 1) % 13
        out = model(src, changed)
        np.testing.assert_allclose(out.detach().numpy()[:, :t + 1], base.detach().numpy()[:,
                                                                                          :t + 1],
                                   rtol=0, atol=1e-12)
        assert not np.allclose(out.detach().numpy()[:, t + 1], base.detach().numpy()[:, t + 1])


def test_padded_source_tokens_do_not_change_outputs():
    model = tiny_tf().double()
    src = ids((B, S), 11, low=1).numpy()
    src[0, 3:] = 0                                                   # row 0: 3 real, 2 pads
    src[1, 1:] = 0                                                   # row 1: 1 real, 4 pads
    tgt = ids((B, T), 13)
    pad = pad_mask(src, 0)
    base, mem = model(src, tgt, pad), model.encode(src, pad)
    other = src.copy()
    other[pad] = 7                                           # other tokens, still masked
    out, mem2 = model(other, tgt, pad), model.encode(other, pad)
    np.testing.assert_allclose(out.detach().numpy(), base.detach().numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(mem2.detach().numpy()[~pad], mem.detach().numpy()[~pad], rtol=0,
                               atol=1e-12)


def test_padded_target_keys_do_not_change_real_positions():
    # left padding, so the padded keys come *before* the real ones and causality does not hide them
    model = tiny_tf().double()
    src, tgt = ids((B, S), 11, low=1), ids((B, T), 13, low=1).numpy()
    tgt[0, :2] = 0
    pad = pad_mask(tgt, 0)
    base = model(src, tgt, None, pad)
    other = tgt.copy()
    other[pad] = 5
    out = model(src, other, None, pad)
    np.testing.assert_allclose(out.detach().numpy()[~pad], base.detach().numpy()[~pad], rtol=0,
                               atol=1e-12)


def test_fully_padded_rows_give_no_nan():
    model = tiny_tf()
    src = ids((B, S), 11, low=1).numpy()
    src[1] = 0                                                       # a source row of pads only
    tgt = ids((B, T), 13, low=1).numpy()
    tgt[2] = 0
    logp = model(src, tgt, pad_mask(src, 0), pad_mask(tgt, 0))
    assert np.isfinite(logp.detach().numpy()).all()
    logp.sum().backward()
    assert all(np.isfinite(p.grad.numpy()).all() for p in model.parameters() if p.grad is not None)


def test_mha_key_padding_hides_keys():
    tgx.manual_seed(0)
    mha = nn.MultiHeadAttention(D, H).double()
    q, kv = randn(B, T, D, dtype=np.float64), randn(B, S, D, seed=4, dtype=np.float64)
    kp = np.zeros((B, S), dtype=bool)
    kp[0, 1], kp[2, [0, 4]] = True, True
    base, a = mha(q, kv, kv, key_padding_mask=kp, need_weights=True, average_attn_weights=False)
    assert (a.detach().numpy()[0, :, :,
                               1] == 0).all() and (a.detach().numpy()[2][..., [0, 4]] == 0).all()
    kv2 = kv.numpy().copy()
    kv2[kp] += 10.0
    out, _ = mha(q, Tensor(kv2), Tensor(kv2), key_padding_mask=kp)
    np.testing.assert_allclose(out.detach().numpy(), base.detach().numpy(), rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------
# gradients: gradcheck (fast mode) in float64 w.r.t. inputs and every parameter
# ------------------------------------------------------------------------------------------

def _slots(module):
    """For each parameter, every (owner module, attribute) holding it: a tied weight has two."""
    slots = {}
    for _, m in module.named_modules():
        for attr, value in vars(m).items():
            if isinstance(value, nn.Parameter):
                slots.setdefault(id(value), []).append((m, attr))
    return slots


def check_module_grads(module, fn, inputs):
    """gradcheck of fn(*inputs) w.r.t. the float inputs and all of module's parameters: the
    perturbed copies gradcheck makes are put in place of the parameters for each evaluation."""
    module.double()
    params = list(module.parameters())
    slots = _slots(module)
    k = len(inputs)

    def put(values):
        for p, value in zip(params, values, strict=True):
            for owner, attr in slots[id(p)]:
                setattr(owner, attr, value)

    def wrapped(*args):
        put(args[k:])
        try:
            return fn(*args[:k])
        finally:
            put(params)

    return tgx.gradcheck(wrapped, tuple(inputs) + tuple(params), fast_mode=True)


def _x(*shape, seed=5):
    return Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_gradcheck_post_ln_encoder_layer():
    tgx.manual_seed(0)
    layer = EncoderLayer(D, H, 40, dropout=0.0, norm_first=False)
    pad = np.zeros((B, S), dtype=bool)
    pad[1, 3:] = True
    assert check_module_grads(layer, lambda x: layer(x, pad), [_x(B, S, D)])


def test_gradcheck_pre_ln_gpt_block():
    tgx.manual_seed(0)
    block = Block(GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=H, n_embd=D))
    assert check_module_grads(block, lambda x: block(x), [_x(B, T, D)])


def test_gradcheck_decoder_layer_with_cross_attention():
    tgx.manual_seed(0)
    layer = DecoderLayer(D, H, 40, dropout=0.0, norm_first=False)
    src_pad = np.zeros((B, S), dtype=bool)
    src_pad[0, 4:] = True
    fn = lambda x, mem: layer(x, mem, src_pad)                       # noqa: E731
    assert check_module_grads(layer, fn, [_x(B, T, D), _x(B, S, D, seed=6)])


def test_gradcheck_multi_head_attention_with_masks():
    tgx.manual_seed(0)
    mha = nn.MultiHeadAttention(D, H)
    kp = np.zeros((B, S), dtype=bool)
    kp[2, :2] = True
    additive = np.random.default_rng(7).standard_normal((T, S))     # a float mask, added
    additive[0, 1] = -np.inf
    fn = lambda q, kv: mha(q, kv, kv, key_padding_mask=kp, attn_mask=additive)[0]   # noqa: E731
    assert check_module_grads(mha, fn, [_x(B, T, D), _x(B, S, D, seed=8)])


def test_gradcheck_whole_gpt_with_tied_embedding():
    model = tiny_gpt(n_layer=1).double()
    idx, tgt = ids((2, 5), 11), ids((2, 5), 11, seed=9)
    assert check_module_grads(model, lambda: model(idx, tgt)[1], [])


# ------------------------------------------------------------------------------------------
# parameter counts against the papers
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("norm_first", [True, False])
def test_gpt_count_formula_matches_built_models(bias, norm_first):
    cfg = GPTConfig(block_size=9, vocab_size=13, n_layer=3, n_head=2, n_embd=10, bias=bias,
                    norm_first=norm_first)
    assert gpt_mod.count_parameters(cfg) == GPT(cfg).num_parameters()


def test_gpt2_small_parameter_count():
    # GPT-2 small: counted from the config (building it means drawing 124M floats)
    cfg = GPTConfig(block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768)
    assert gpt_mod.count_parameters(cfg) == 124_439_808
    cfg.bias = False
    assert gpt_mod.count_parameters(cfg) == 124_337_664


@pytest.mark.slow
def test_gpt2_small_built():
    model = GPT(GPTConfig(block_size=1024, vocab_size=50257, n_layer=12, n_head=12, n_embd=768))
    assert model.num_parameters() == 124_439_808
    assert model.num_parameters(non_embedding=True) == 124_439_808 - 1024 * 768


@pytest.mark.parametrize("flags", [
    dict(), dict(norm_first=True), dict(share_embeddings=True),
    dict(tie_generator=True, generator_bias=False),
    dict(share_embeddings=True, tie_generator=True, norm_first=True, generator_bias=False)])
def test_transformer_count_formula_matches_built_models(flags):
    cfg = TransformerConfig(src_vocab=13, tgt_vocab=13, N=2, d_model=8, d_ff=12, h=2,
                            max_len=16, **flags)
    model = tf_mod.EncoderDecoder(cfg)
    assert tf_mod.count_parameters(cfg) == model.num_parameters()


def test_transformer_base_parameter_count():
    # Vaswani et al. Table 3, base model: "65M" with one shared 37,000-token vocabulary
    base = dict(src_vocab=37000, tgt_vocab=37000, share_embeddings=True, tie_generator=True)
    post = tf_mod.count_parameters(TransformerConfig(**base, generator_bias=False))
    hand = tf_mod.count_parameters(TransformerConfig(**base, generator_bias=False,
                                                     norm_first=True))
    with_bias = tf_mod.count_parameters(TransformerConfig(**base))
    assert hand == 63_084_544                      # the hand count: + the 2 final LayerNorms
    assert post == 63_082_496 and with_bias == post + 37_000
    for n in (post, hand, with_bias):
        assert abs(n - 65e6) <= 0.03 * 65e6


@pytest.mark.slow
def test_transformer_base_built():
    model = make_model(37000, 37000, share_embeddings=True, tie_generator=True,
                       generator_bias=False, norm_first=True)
    assert model.num_parameters() == 63_084_544


# ------------------------------------------------------------------------------------------
# overfitting one batch
# ------------------------------------------------------------------------------------------

def _adam(params, lr):
    """tinygradx.optim.Adam if present, else a minimal Adam (Kingma & Ba) on p.numpy()."""
    try:
        from tinygradx import optim
        return optim.Adam(params, lr=lr)
    except ImportError:
        pass

    class MiniAdam:
        def __init__(self):
            self.t, self.m = 0, [np.zeros_like(p.numpy()) for p in params]
            self.v = [np.zeros_like(p.numpy()) for p in params]

        def zero_grad(self):
            for p in params:
                p.grad = None

        def step(self):
            self.t += 1
            for p, m, v in zip(params, self.m, self.v, strict=True):
                if p.grad is None:
                    continue
                g = p.grad.numpy()
                m[...] = 0.9 * m + 0.1 * g
                v[...] = 0.999 * v + 0.001 * g * g
                mhat, vhat = m / (1 - 0.9 ** self.t), v / (1 - 0.999 ** self.t)
                p.data -= lr * mhat / (np.sqrt(vhat) + 1e-8)
    return MiniAdam()


def test_gpt_overfits_one_batch():
    model = tiny_gpt(n_layer=1, n_embd=32)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 11, (4, 12))
    y = np.roll(x, -1, axis=1)
    _fit(model, lambda: model(x, y)[1], lr=1e-2, steps=150)


def _fit(model, loss_fn, lr, steps):
    """Adam on one fixed batch until the loss is below 0.02 (or `steps`); it must end < 0.05."""
    opt = _adam(model.parameters(), lr=lr)
    for step in range(steps):  # noqa: B007 (read after the loop)
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.02:
            break
    assert loss.item() < 0.05, f"loss {loss.item():.4f} after {step + 1} steps"


def test_transformer_overfits_one_batch():
    model = tiny_tf(N=1, d_model=32, d_ff=64)
    rng = np.random.default_rng(0)
    src = rng.integers(1, 11, (4, 6))
    src[1, 4:] = 0
    tgt = np.concatenate([np.full((4, 1), 1), src[:, ::-1] + 1], axis=1)  # BOS, reversed source
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    _fit(model, lambda: F.nll_loss(model(src, tgt_in, pad_mask(src, 0)).reshape(-1, 13),
                                   tgt_out.reshape(-1)), lr=3e-3, steps=200)


# ------------------------------------------------------------------------------------------
# state_dict
# ------------------------------------------------------------------------------------------

def test_gpt_state_dict_round_trip():
    a, b = tiny_gpt(seed=0), tiny_gpt(seed=1)
    idx = ids((2, 6), 11)
    assert not np.allclose(a(idx)[0].detach().numpy(), b(idx)[0].detach().numpy())
    sd = {k: v.numpy().copy() for k, v in a.state_dict().items()}
    assert "lm_head.weight" not in sd                               # tied: stored once
    b.load_state_dict(sd)
    np.testing.assert_array_equal(a(idx)[0].detach().numpy(), b(idx)[0].detach().numpy())
    assert b.lm_head.weight is b.transformer.wte.weight             # still tied after loading


def test_transformer_state_dict_round_trip():
    a, b = tiny_tf(seed=0), tiny_tf(seed=1)
    src, tgt = ids((2, 5), 11), ids((2, 4), 13)
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(src, tgt).detach().numpy(), b(src, tgt).detach().numpy())
    assert not any("pe" in k.split(".") for k in a.state_dict())    # PE table is not stored
    assert a.double().pos_encoding.pe.dtype == np.float64           # ... but double() converts it


def test_load_state_dict_errors_are_clear():
    model = tiny_gpt()
    sd = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    bad = dict(sd)
    bad["transformer.wpe.weight"] = np.zeros((3, D), np.float32)
    with pytest.raises(nn.StateDictError, match=r"transformer\.wpe\.weight.*\(3, 24\)"):
        model.load_state_dict(bad)
    extra = dict(sd, **{"transformer.h.9.ln_1.weight": np.ones(D, np.float32)})
    with pytest.raises(nn.StateDictError, match=r"unexpected key 'transformer\.h\.9\.ln_1"):
        model.load_state_dict(extra)
    missing = dict(sd)
    del missing["transformer.ln_f.bias"]
    with pytest.raises(nn.StateDictError, match=r"missing key 'transformer\.ln_f\.bias'"):
        model.load_state_dict(missing)
    # Post-LN has no ln_f: its checkpoints do not load into Pre-LN models silently
    with pytest.raises(nn.StateDictError, match="ln_f"):
        model.load_state_dict(tiny_gpt(norm_first=False).state_dict())


# ------------------------------------------------------------------------------------------
# KV cache == recomputation
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_first", [True, False])
def test_gpt_kv_cache_logits_equal_uncached(norm_first):
    model = tiny_gpt(norm_first=norm_first).double().eval()
    idx = ids((B, 10), 11).numpy()
    full, _ = model(idx)                                             # (B, 10, V)
    cache = KVCache(len(model.transformer.h))
    with tgx.no_grad():
        first, _ = model(idx[:, :4], kv_cache=cache)                 # a prefix in one go
        steps = [model(idx[:, t:t + 1], kv_cache=cache)[0] for t in range(4, 10)]
    cached = np.concatenate([first.data] + [s.numpy() for s in steps], axis=1)
    assert cache.length == 10
    np.testing.assert_allclose(cached, full.detach().numpy(), rtol=0, atol=1e-10)


def test_gpt_kv_cache_refuses_to_run_past_block_size():
    model = tiny_gpt()
    cache = KVCache(2)
    model(ids((1, 16), 11), kv_cache=cache)
    with pytest.raises(ValueError, match="block size"):
        model(ids((1, 1), 11), kv_cache=cache)


@pytest.mark.parametrize("kw", [dict(), dict(top_k=3), dict(top_p=0.8, temperature=0.7)])
def test_gpt_generate_cache_equals_no_cache(kw):
    model = tiny_gpt().double().eval()
    prompt = ids((2, 5), 11)
    outs = []
    for use_cache in (True, False):
        tgx.manual_seed(123)
        outs.append(model.generate(prompt, 20, use_cache=use_cache, **kw).numpy())  # past block 16
    assert outs[0].shape == (2, 25)
    np.testing.assert_array_equal(outs[0][:, :5], prompt.numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_gpt_generate_is_repeatable_and_greedy_at_temperature_zero():
    model = tiny_gpt().eval()
    prompt = ids((1, 3), 11)
    tgx.manual_seed(7)
    a = model.generate(prompt, 8).numpy()
    tgx.manual_seed(7)
    b = model.generate(prompt, 8).numpy()
    np.testing.assert_array_equal(a, b)
    g = model.generate(prompt, 8, temperature=0).numpy()
    seq = prompt.numpy()
    for _ in range(8):                                               # greedy by hand, uncached
        logits, _ = model(seq[:, -16:])
        seq = np.concatenate([seq, logits.detach().numpy()[:, -1].argmax(-1)[:, None]], axis=1)
    np.testing.assert_array_equal(g, seq)


def test_gpt_generate_stops_at_eos():
    model = tiny_gpt().eval()
    first = model.generate(ids((2, 3), 11), 1, temperature=0).numpy()[:, -1]
    out = model.generate(ids((2, 3), 11), 10, temperature=0, eos_id=int(first[0])).numpy()
    assert (out[0, 3:] == first[0]).all()                           # row 0 ended at once
    if first[1] == first[0]:
        assert out.shape[1] == 4                                    # every row ended: stop


def test_sample_next_top_k_and_top_p():
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05]] * 2000))
    rng = np.random.default_rng(0)
    assert set(sample_next(logits, top_k=2, rng=rng)) == {0, 1}
    assert set(sample_next(logits, top_p=0.75, rng=rng)) == {0, 1}    # 0.5 + 0.3 covers 0.75
    assert set(sample_next(logits, top_p=0.5, rng=rng)) == {0}
    freq = np.bincount(sample_next(logits, rng=rng), minlength=4) / 2000
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.04)
    assert (sample_next(logits, temperature=0) == 0).all()


@pytest.mark.parametrize("norm_first", [False, True])
def test_decode_step_equals_full_decode(norm_first):
    model = tiny_tf(norm_first=norm_first).double().eval()
    src = ids((B, S), 11, low=1).numpy()
    src[0, 3:] = 0
    src_pad = pad_mask(src, 0)
    tgt = ids((B, T), 13).numpy()
    full = model(src, tgt, src_pad)                                  # (B, T, Vt)
    with tgx.no_grad():
        state = model.init_decode_state(model.encode(src, src_pad), src_pad)
        steps = [model.decode_step(tgt[:, t:t + 1], state).numpy() for t in range(T)]
    assert state.length == T
    np.testing.assert_allclose(np.stack(steps, axis=1), full.detach().numpy(), rtol=0, atol=1e-10)
    # a prefix in one call, then one token
    with tgx.no_grad():
        state = model.init_decode_state(model.encode(src, src_pad), src_pad)
        last = model.decode_step(tgt[:, :4], state)
    np.testing.assert_allclose(last.data, full.detach().numpy()[:, 3], rtol=0, atol=1e-10)


def test_decode_state_reorder_for_beams():
    model = tiny_tf().double().eval()
    src = ids((2, S), 11, low=1).numpy()
    tgt = ids((2, 4), 13).numpy()
    order = np.array([1, 1, 0])                                       # beams: row 1 twice, row 0
    with tgx.no_grad():
        state = model.init_decode_state(model.encode(src), None)
        model.decode_step(tgt[:, :3], state)
        state.reorder(order)
        logp = model.decode_step(tgt[order, 3:4], state)
    want = model(src[order], tgt[order])[:, 3]
    np.testing.assert_allclose(logp.detach().numpy(), want.detach().numpy(), rtol=0, atol=1e-10)


# ------------------------------------------------------------------------------------------
# smaller API pieces
# ------------------------------------------------------------------------------------------

def test_crop_block_size_and_configure_optimizers():
    model = tiny_gpt()
    model.crop_block_size(8)
    assert model.transformer.wpe.weight.shape == (8, D) and model.config.block_size == 8
    model(ids((1, 8), 11))
    with pytest.raises(ValueError, match="block size"):
        model(ids((1, 9), 11))
    opt = model.configure_optimizers(0.1, 1e-3)
    groups = opt if isinstance(opt, list) else opt.param_groups
    decay = {id(p) for p in groups[0]["params"]}
    names = {id(p): n for n, p in model.named_parameters()}
    assert {names[i] for i in decay} == {n for n, p in model.named_parameters() if p.ndim == 2}
    assert groups[0]["weight_decay"] == 0.1 and groups[1]["weight_decay"] == 0.0
    assert len(decay) + len(groups[1]["params"]) == len(list(model.parameters()))


def test_shared_and_tied_embeddings():
    model = make_model(13, 13, N=1, d_model=8, d_ff=16, h=2, share_embeddings=True,
                       tie_generator=True, max_len=16)
    assert model.src_embed.weight is model.tgt_embed.weight is model.generator.weight
    assert [n for n, _ in model.named_parameters()].count("src_embed.weight") == 1
    with pytest.raises(ValueError, match="one vocabulary"):
        make_model(13, 14, N=1, d_model=8, d_ff=16, h=2, share_embeddings=True)


def test_gpt_num_parameters_non_embedding():
    model = tiny_gpt()
    assert model.num_parameters(non_embedding=True) == model.num_parameters() - 16 * D
    assert model.num_parameters() == sum(p.detach().numpy().size for p in model.parameters())


def test_annotated_layer_norm_form_and_how_it_differs_from_torchs():
    """layer_norm="annotated" builds the Annotated Transformer's form, gamma (x - mean) /
    (std + eps) + beta with the unbiased std and eps 1e-6 outside the root; far from eps it is
    torch's LayerNorm times sqrt((d - 1) / d)."""
    from tinygradx.models.nets.layers import AnnotatedLayerNorm, layer_norm
    x = np.random.default_rng(0).standard_normal((3, 4, 64))
    ln = AnnotatedLayerNorm(64).double()
    got = ln(tgx.tensor(x)).detach().numpy()
    mean, std = x.mean(-1, keepdims=True), x.std(-1, ddof=1, keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / (std + 1e-6), rtol=1e-12, atol=1e-12)
    torch_form = tgx.nn.LayerNorm(64).double()(tgx.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, torch_form * np.sqrt(63 / 64), rtol=2e-5, atol=1e-5)
    model = make_model(11, 11, N=1, d_model=8, d_ff=16, h=2, dropout=0.0,
                       layer_norm="annotated").double()
    norms = [m for _, m in model.named_modules() if isinstance(m, AnnotatedLayerNorm)]
    assert len(norms) == 5                        # the encoder layer 2, the decoder layer 3
    src, tgt = np.array([[1, 2, 3]]), np.array([[1, 4]])
    model(src, tgt).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(ValueError, match="layer_norm must be one of 'torch', 'annotated'"):
        layer_norm(8, "rms")
