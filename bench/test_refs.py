"""Checks of the numpy floor references; not part of the main suite (testpaths = tests/).

    python -m pytest bench/test_refs.py
"""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_refs as cr  # noqa: E402
import harness  # noqa: E402
import numpy_gpt as ngpt  # noqa: E402

needs_torch = pytest.mark.skipif(not cr.HAVE_TORCH, reason="torch not installed")
needs_tgx = pytest.mark.skipif(not cr.HAVE_TGX, reason="tinygradx not importable")


def _assert_small(errs, tol):
    worst = max(errs, key=errs.get)
    assert errs[worst] <= tol, f"{worst}: rel err {errs[worst]:.3g} > {tol:g}"


@needs_torch
def test_gpt_matches_torch():
    _assert_small(cr.check_gpt_vs_torch(), cr.RTOL)


@needs_torch
@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_encdec_matches_torch(dropout):
    _assert_small(cr.check_encdec_vs_torch(dropout), cr.RTOL)


@needs_torch
def test_optimizers_match_torch():
    _assert_small(cr.check_optim_vs_torch(), cr.RTOL)


@needs_tgx
def test_gpt_matches_tinygradx():
    _assert_small(cr.check_gpt_vs_tinygradx(), cr.RTOL)


@needs_tgx
def test_encdec_matches_tinygradx():
    _assert_small(cr.check_encdec_vs_tinygradx(), cr.RTOL)


def test_gpt_finite_differences():
    _assert_small(cr.check_gpt_fd(), 1e-5)


def test_encdec_finite_differences():
    _assert_small(cr.check_encdec_fd(), 1e-5)


def test_float32_path_matches_float64():
    _assert_small(cr.check_float32_matches_float64(), 1e-3)


def test_gpt_init_statistics():
    cfg = ngpt.GPTConfig(vocab_size=50, block_size=16, n_layer=3, n_head=2, n_embd=64)
    p = ngpt.init_params(cfg, seed=0)
    assert p["transformer.wte.weight"].dtype == np.float32
    assert abs(p["transformer.h.0.attn.c_attn.weight"].std() - 0.02) < 2e-3
    assert abs(p["transformer.h.0.mlp.c_proj.weight"].std() - 0.02 / math.sqrt(6)) < 1e-3
    assert np.all(p["transformer.h.1.ln_2.weight"] == 1) and np.all(p["transformer.ln_f.bias"] == 0)
    q = ngpt.init_params(cfg, seed=0)
    assert all(np.array_equal(p[k], q[k]) for k in p)


def test_reused_buffers_give_same_step():
    """Buffers are reused across steps and shapes: a repeated step gives bit-identical grads."""
    cfg = cr.GPT_SMALL
    p = ngpt.init_params(cfg, seed=0)
    net = ngpt.NumpyGPT(cfg)
    idx, tgt = cr.gpt_batch(cfg)
    l1, g = net.loss_and_grads(p, idx, tgt)
    g1 = {k: v.copy() for k, v in g.items()}
    net.loss_and_grads(p, idx[:2, :5], tgt[:2, :5])          # another (B, T) in between
    l2, g2 = net.loss_and_grads(p, idx, tgt)
    assert l1 == l2 and all(np.array_equal(g1[k], g2[k]) for k in g1)


def test_ab_compare_shape():
    res = harness.ab_compare({"a": lambda: None, "b": lambda: sum(range(100))}, pairs=3, warmup=1)
    assert len(res["times"]["a"]) == 3 and res["baseline"] == "a"
    assert res["ratios"]["a"]["median"] == 1.0
    assert "numpy" in harness.machine_facts()


@needs_tgx
def test_plain_script_gpt_matches_the_floor():
    """bench/plain_gpt.py (the user-script arm) computes the floor's loss and gradients."""
    import plain_gpt
    import tinygradx as tgx
    cfg = ngpt.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16,
                         dtype="float64")
    params = ngpt.init_params(cfg, seed=0)
    rng = np.random.default_rng(1)
    idx, tgt = rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))
    loss, grads = ngpt.NumpyGPT(cfg).loss_and_grads(params, idx, tgt)
    P = {k: tgx.tensor(np.array(v), requires_grad=True) for k, v in params.items()}
    mine = plain_gpt.forward(P, tgx.tensor(idx), tgx.tensor(tgt), n_layer=2, n_head=2)
    mine.backward()
    assert abs(mine.item() - loss) <= 1e-12 * abs(loss)
    for k, g in grads.items():
        np.testing.assert_allclose(P[k].grad.numpy(), g, rtol=1e-9, atol=1e-12, err_msg=k)


def test_ab_compare_times_only_the_last_step_of_a_burst():
    """--isolated's rounds: `burst - 1` untimed calls, then the timed one, after each gap."""
    calls = {"a": 0, "b": 0}

    def fn(name):
        def f():
            calls[name] += 1
        return f
    # the "clock" counts calls, so a timed span holds exactly as many steps as it reads
    res = harness.ab_compare({"a": fn("a"), "b": fn("b")}, pairs=4, warmup=1, gap=0.001,
                             burst=3, timer=lambda: calls["a"] + calls["b"])
    assert calls == {"a": 15, "b": 15}                  # (1 + 4) rounds x 3 calls
    assert all(len(ts) == 4 and all(t == 1 for t in ts) for ts in res["times"].values())
