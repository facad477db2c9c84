"""tinygradx.inference: the ops' forward code on arrays, and the models' fast paths built on it.

Each array function must give the op's numbers bit for bit (it is the op's forward), with the
compiled kernels on and off; a model's fast path must give the op path's logits bit for bit,
and must step aside whenever it would compute something else (a swapped module, dropout, a
recorded attention map, a trace or profile watching the ops).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import Tensor, nn
from tinygradx.ops import inference
from tinygradx.fast import kernels
from tinygradx.models.nets import fastpath, gpt, transformer
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.nets.layers import KVCache


@pytest.fixture(params=[True, False], ids=["kernels", "numpy"])
def kernels_on(request):
    old = kernels.set_enabled(request.param)
    yield request.param
    kernels.set_enabled(old)


def _op(fn, *args, **kw):
    with tgx.no_grad():
        return fn(*[Tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kw).numpy()


dims = st.integers(0, 5)
KEEP = [HealthCheck.function_scoped_fixture]     # kernels_on is a switch, the same for every draw
dtypes = st.sampled_from([np.float32, np.float64])


@settings(max_examples=30, deadline=None, suppress_health_check=KEEP)
@given(rows=st.lists(dims, min_size=0, max_size=2), n=st.integers(1, 40), dtype=dtypes,
       bias=st.booleans(), seed=st.integers(0, 99))
def test_linear_and_layer_norm_are_the_ops_forward(kernels_on, rows, n, dtype, bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(tuple(rows) + (n,)).astype(dtype)
    w = rng.standard_normal((7, n)).astype(dtype)
    b = rng.standard_normal(7).astype(dtype) if bias else None
    want = _op(F.linear, x, w, b)
    got = inference.linear(x, w, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    g, beta = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    want = _op(F.layer_norm, x, (n,), g if bias else None, beta if bias else None, eps=1e-5)
    got = inference.layer_norm(x, g if bias else None, beta if bias else None, 1e-5)
    assert np.array_equal(got, want)


@settings(max_examples=30, deadline=None, suppress_health_check=KEEP)
@given(shape=st.lists(dims, min_size=1, max_size=3), dtype=dtypes,
       approximate=st.sampled_from(["none", "tanh"]), seed=st.integers(0, 99))
def test_gelu_is_the_ops_forward(kernels_on, shape, dtype, approximate, seed):
    x = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)
    assert np.array_equal(inference.gelu(x, approximate), _op(F.gelu, x, approximate))


@settings(max_examples=30, deadline=None, suppress_health_check=KEEP)
@given(shape=st.lists(st.integers(0, 900), min_size=1, max_size=2), dtype=dtypes,
       seed=st.integers(0, 99))
def test_relu_is_the_ops_forward_also_in_place(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    x.flat[::7] = -0.0
    want = _op(F.relu, x)
    assert np.array_equal(inference.relu(x), want)
    y = x.copy()
    assert inference.relu(y, inplace=True) is y and np.array_equal(y, want)
    assert np.array_equal(np.signbit(y), np.signbit(want))     # -0.0 stays as the op leaves it


@settings(max_examples=30, deadline=None, suppress_health_check=KEEP)
@given(B=st.integers(1, 3), h=st.integers(1, 3), n=st.integers(1, 6), past=st.integers(0, 5),
       d=st.integers(1, 8), dtype=dtypes, causal=st.booleans(), seed=st.integers(0, 99))
def test_attention_is_the_ops_forward(kernels_on, B, h, n, past, d, dtype, causal, seed):
    rng = np.random.default_rng(seed)
    m = n + past
    q = rng.standard_normal((B, n, h, d)).astype(dtype).transpose(0, 2, 1, 3)  # strided heads
    k, v = (rng.standard_normal((B, h, m, d)).astype(dtype) for _ in range(2))
    mask = F.causal_mask(n, m, dtype) if causal else None
    want = _op(F.attention, q, k, v, attn_mask=mask)
    got = inference.attention(q, k, v, mask)
    assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("kind", ["bool", "float64"])
def test_attention_masks_follow_F_attention(kind):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, m, 4)).astype(np.float32) for m in (5, 6, 6))
    keep = rng.random((2, 1, 5, 6)) < 0.7
    keep[..., 0] = True
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf)   # float64 for float32
    want = _op(F.attention, q, k, v, attn_mask=mask)
    got = inference.attention(q, k, v, mask)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    # a bool mask added as 0/1 would be a silent wrong answer: it must block, not shift
    assert not np.array_equal(got, inference.attention(q, k, v, keep.astype(np.float32)))


def test_the_array_functions_name_themselves_on_bad_shapes():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(tgx.OpError, match=r"inference\.linear: input \(2, 3\)"):
        inference.linear(x, np.zeros((4, 5), np.float32))
    with pytest.raises(tgx.OpError, match=r"inference\.layer_norm: weight has shape \(4,\)"):
        inference.layer_norm(x, np.ones(4, np.float32), None)
    with pytest.raises(tgx.OpError, match=r"inference\.gelu: approximate"):
        inference.gelu(x, "fast")
    with pytest.raises(tgx.OpError, match=r"inference\.relu: expected a float array"):
        inference.relu(np.zeros(3, np.int64))
    with pytest.raises(tgx.OpError, match=r"inference\.attention: query"):
        inference.attention(np.zeros((1, 2, 3)), np.zeros((1, 2, 4)), np.zeros((1, 2, 4)))


def test_fast_path_only_without_gradients_and_observers():
    assert not inference.fast_path()                  # gradients are on
    with tgx.no_grad():
        assert inference.fast_path()
        with tgx.profile():
            assert not inference.fast_path()
        with tgx.detect_anomaly():
            assert not inference.fast_path()
        with tgx.trace():
            assert not inference.fast_path()
        assert inference.fast_path()


# ------------------------------------------------------------------------------------------
# GPT's fast path (models/nets/fastpath.py, planned by generate)
# ------------------------------------------------------------------------------------------

def _gpt(**kw):
    tgx.manual_seed(3)
    cfg = dict(block_size=32, vocab_size=20, n_layer=2, n_head=2, n_embd=16)
    cfg.update(kw)
    return GPT(GPTConfig(**cfg)).eval()


def _plan(model):
    with tgx.no_grad():
        return fastpath.plan(model, gpt.STOCK)


def _cached_logits(model, ids, step):
    """Last-position logits of a prompt then two single tokens through a KV cache, each step
    by `step` (the planned runner, or the modules' GPT._last_logits)."""
    cache, out = KVCache(model.config.n_layer), []
    with tgx.no_grad():
        for part in (ids[:, :5], ids[:, 5:6], ids[:, 6:7]):
            out.append(step(part, cache))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpt_fast_path_gives_the_op_paths_logits_bit_for_bit(kernels_on, dtype):
    model = _gpt()
    if dtype == np.float64:
        model.double()
    ids = np.random.default_rng(0).integers(0, 20, (3, 7))
    runner = _plan(model)
    assert runner is not None
    for fast, slow in zip(_cached_logits(model, ids, runner),
                          _cached_logits(model, ids, model._last_logits), strict=True):
        assert fast.dtype == dtype and fast.shape == (3, 20) and np.array_equal(fast, slow)


def test_gpt_generate_takes_the_fast_path_and_matches_the_uncached_tokens():
    model = _gpt()
    prompt = np.random.default_rng(1).integers(0, 20, (2, 3))
    with tgx.profile() as prof:                       # observed: the op path, counted per op
        slow = model.generate(prompt, 12, temperature=0.0).numpy()
    assert prof.totals()["linear"][2] > 0
    fast = model.generate(prompt, 12, temperature=0.0).numpy()
    assert np.array_equal(fast, slow)
    assert np.array_equal(fast, model.generate(prompt, 12, temperature=0.0,
                                               use_cache=False).numpy())


def test_gpt_fast_path_is_planned_only_without_gradients_or_observers():
    model = _gpt()
    assert fastpath.plan(model, gpt.STOCK) is None    # gradients are on
    with tgx.no_grad():
        assert fastpath.plan(model, gpt.STOCK) is not None
        with tgx.profile():
            assert fastpath.plan(model, gpt.STOCK) is None


def test_gpt_fast_path_names_a_prompt_id_out_of_range():
    model = _gpt()
    for bad in (20, -1):
        with pytest.raises(tgx.OpError, match=f"token id {bad} is out of range.*20 ids"):
            model.generate(np.array([[1, bad]]), 2, temperature=0.0)


class Doubled(nn.Linear):
    """A Linear subclass (as a LoRA wrapper would be): the fast path must not bypass it."""

    def forward(self, x):
        return super().forward(x) * 2


def _swap_c_fc(model):
    old = model.transformer.h[1].mlp.c_fc
    new = Doubled(old.in_features, old.out_features)
    new.load_state_dict(old.state_dict())
    model.transformer.h[1].mlp.c_fc = new


def _drop_active(model):
    model.transformer.h[0].attn.resid_dropout.p = 0.1
    model.train()
    model.transformer.h[0].attn.resid_dropout.train()


@pytest.mark.parametrize("change", [
    _swap_c_fc,
    lambda m: setattr(m.transformer.h[0].ln_2, "forward", lambda x: x),
    lambda m: setattr(m.transformer.h[0].attn, "record_attn", True),
    lambda m: setattr(m.lm_head, "forward", lambda x: x @ m.lm_head.weight.T * 2),
    lambda m: setattr(m.transformer.wte, "forward", lambda ids: m.transformer.wte.weight[ids]),
    _drop_active,
], ids=["subclassed-linear", "instance-forward", "record-attn", "lm-head", "embedding",
        "dropout"])
def test_gpt_fast_path_steps_aside_when_the_block_is_not_stock(change):
    model = _gpt()
    change(model)
    assert _plan(model) is None
    prompt = np.random.default_rng(2).integers(0, 20, (2, 3))
    if model.training:                                # dropout: only that it is not used
        return
    cached = model.generate(prompt, 8, temperature=0.0).numpy()
    assert np.array_equal(cached, model.generate(prompt, 8, temperature=0.0,
                                                 use_cache=False).numpy())


@pytest.mark.parametrize("kw", [dict(norm_first=False), dict(norm="rmsnorm"),
                                dict(pos="rope"), dict(mlp="swiglu"), dict(n_kv_head=1),
                                dict(fused_attention=False)])
def test_gpt_fast_path_is_only_for_the_stock_gpt2_block(kw):
    assert _plan(_gpt(**kw)) is None


# ------------------------------------------------------------------------------------------
# the forwards are the formulas: no inference guard in them
# ------------------------------------------------------------------------------------------

def test_training_forwards_evaluate_no_inference_guard(monkeypatch):
    """A training step of GPT and of the encoder-decoder never asks whether it could run on
    arrays: that is planned by generate / encode / init_decode_state only."""
    def refuse():
        raise AssertionError("a training forward asked inference.fast_path()")

    monkeypatch.setattr(inference, "fast_path", refuse)
    model = _gpt().train()
    ids = np.random.default_rng(3).integers(0, 20, (2, 6))
    model(ids, ids)[1].backward()
    tgx.manual_seed(4)
    ed = transformer.make_model(9, 9, N=1, d_model=8, d_ff=16, h=2, dropout=0.1)
    src = np.random.default_rng(5).integers(3, 9, (2, 5))
    ed(src, src, src == 8, src == 8).sum().backward()
    with tgx.no_grad():                               # no_grad changes nothing in a forward
        ed.eval()(src, src)
        model.eval()(ids)


def test_only_the_planner_reads_the_grad_mode():
    """No forward in models/nets branches on grad mode or on inference.fast_path()."""
    import os
    import re
    folder = os.path.dirname(gpt.__file__)
    hits = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and name != "fastpath.py":
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                hits += [f"{name}:{i}" for i, line in enumerate(f, 1)
                         if re.search(r"is_grad_enabled|grad_enabled|fast_path\(", line)]
    assert hits == []
