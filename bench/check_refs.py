"""Correctness of the numpy floor references (bench/numpy_gpt.py, bench/numpy_encdec.py).

In float64 on small configs:
  * with torch installed: loss and every gradient against bench/torch_models.py (the encoder-
    decoder also with dropout 0.2, torch replaying the numpy dropout masks), and a few AdamW/Adam
    steps against torch.optim;
  * with tinygradx importable: loss and every gradient against its own models/nets/gpt.py and
    models/nets/transformer.py (issue 7, goal 1 asks that the floor and tinygradx compute the
    same step);
  * always: central finite differences at a few random coordinates of every parameter tensor.
Relative error of a tensor = max|ours - ref| / max(max|ref|, 1e-8); the floor of 1e-8 keeps
gradients that are zero analytically (e.g. attention key biases, which shift a softmax row by a
constant) from dividing round-off by round-off.

    python bench/check_refs.py            # prints a report, exits 1 on failure
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy_encdec as ned  # noqa: E402
import numpy_gpt as ngpt  # noqa: E402
from numpy_common import adam_step, adamw_step  # noqa: E402

try:
    import torch
    import torch_models as tm
    HAVE_TORCH = True
except ImportError:                                    # the floor must work without torch
    HAVE_TORCH = False

try:
    import tinygradx as tgx
    import tinygradx.functional as tgxF
    HAVE_TGX = True
except ImportError:                                    # engine not importable (yet)
    HAVE_TGX = False

RTOL = 1e-5

GPT_SMALL = ngpt.GPTConfig(vocab_size=13, block_size=9, n_layer=2, n_head=3, n_embd=12,
                           dtype="float64")
ENCDEC_SMALL = dict(src_vocab=11, tgt_vocab=13, d_model=12, h=3, n_enc=2, n_dec=2, d_ff=20,
                    max_len=32, dtype="float64")


def rel_err(ours, ref, floor=1e-8):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(ours - ref).max() / max(float(np.abs(ref).max()), floor))


def gpt_batch(cfg, B=3, T=None, seed=1):
    rng = np.random.default_rng(seed)
    T = T or cfg.block_size
    return (rng.integers(0, cfg.vocab_size, (B, T)), rng.integers(0, cfg.vocab_size, (B, T)))


def encdec_batch(cfg, B=3, S=7, T=6, seed=1):
    """Random tokens with pads (id 0) at the ends, one fully padded source row, padded targets."""
    g = lambda n: cfg[n] if isinstance(cfg, dict) else getattr(cfg, n)   # noqa: E731
    rng = np.random.default_rng(seed)
    src = rng.integers(1, g("src_vocab"), (B, S))
    tgt_in = rng.integers(1, g("tgt_vocab"), (B, T))
    tgt_out = rng.integers(1, g("tgt_vocab"), (B, T))
    src[0, S - 2:] = 0
    if B > 2:
        src[2, :] = 0                                  # fully padded source row: no NaN allowed
    tgt_out[1, T - 2:] = 0
    tgt_in[1, T - 1:] = 0
    return src, tgt_in, tgt_out


# ----------------------------------------------------------------------------------------------
def check_gpt_vs_torch():
    cfg = GPT_SMALL
    params = ngpt.init_params(cfg, seed=0)
    idx, tgt = gpt_batch(cfg)
    loss, grads = ngpt.NumpyGPT(cfg).loss_and_grads(params, idx, tgt)
    model = tm.params_to_torch(tm.TorchGPT(cfg).double(), params)
    lt = model(torch.from_numpy(idx), torch.from_numpy(tgt))
    lt.backward()
    tg = tm.torch_grads(model)
    errs = {k: rel_err(grads[k], tg[k]) for k in tg}
    errs["<loss>"] = rel_err(loss, lt.item())
    return errs


def check_encdec_vs_torch(dropout):
    cfg = dict(ENCDEC_SMALL, dropout=dropout)
    params = ned.init_params(cfg, seed=0)
    batch = encdec_batch(cfg)
    model_np = ned.NumpyEncDec(cfg, seed=5, record_masks=True)
    loss, grads = model_np.loss_and_grads(params, *batch)
    model = tm.params_to_torch(tm.TorchEncDec(cfg).double(), params)
    model.drop.replay = iter(model_np.recorded)
    lt = model(*(torch.from_numpy(a) for a in batch))
    assert next(model.drop.replay, None) is None, "torch used fewer dropout masks than numpy"
    lt.backward()
    tg = tm.torch_grads(model)
    errs = {k: rel_err(grads[k], tg[k]) for k in tg}
    errs["<loss>"] = rel_err(loss, lt.item())
    return errs


def check_optim_vs_torch(steps=3):
    """AdamW (GPT, nanoGPT decay rule) and Adam (encoder-decoder) against torch.optim."""
    out = {}
    cfg = GPT_SMALL
    params = ngpt.init_params(cfg, seed=0)
    model = tm.params_to_torch(tm.TorchGPT(cfg).double(), params)
    opt = model.configure_optimizer(lr=1e-2)
    net, state = ngpt.NumpyGPT(cfg), {}
    idx, tgt = gpt_batch(cfg)
    for _ in range(steps):
        _, grads = net.loss_and_grads(params, idx, tgt)
        adamw_step(params, grads, state, lr=1e-2)
        opt.zero_grad(set_to_none=True)
        model(torch.from_numpy(idx), torch.from_numpy(tgt)).backward()
        opt.step()
    tp = tm.torch_to_params(model)
    # Parameters are compared on the scale of their updates (lr): biases start at 0, and
    # analytically-zero gradients (round-off) move them by ~lr*1e-8 in either implementation.
    out["gpt AdamW"] = max(rel_err(params[k], tp[k], floor=1e-2) for k in tp)

    ecfg = dict(ENCDEC_SMALL, dropout=0.0)
    params = ned.init_params(ecfg, seed=0)
    model = tm.params_to_torch(tm.TorchEncDec(ecfg).double(), params)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    net, state = ned.NumpyEncDec(ecfg), {}
    batch = encdec_batch(ecfg)
    for _ in range(steps):
        _, grads = net.loss_and_grads(params, *batch)
        adam_step(params, grads, state, lr=1e-2)
        opt.zero_grad(set_to_none=True)
        model(*(torch.from_numpy(a) for a in batch)).backward()
        opt.step()
    tp = tm.torch_to_params(model)
    out["encdec Adam"] = max(rel_err(params[k], tp[k], floor=1e-2) for k in tp)
    return out


# ---- against tinygradx's own models (issue 7, goal 1: the floor computes the same step) -------
def _tgx_grads(model):
    return {k: np.asarray(p.grad.numpy()) for k, p in model.named_parameters()}


def check_gpt_vs_tinygradx():
    from bench_floor import _import_tgx
    tgpt = _import_tgx()[3]
    cfg = GPT_SMALL
    params = ngpt.init_params(cfg, seed=0)
    idx, tgt = gpt_batch(cfg)
    loss, grads = ngpt.NumpyGPT(cfg).loss_and_grads(params, idx, tgt)
    model = tgpt.GPT(tgpt.GPTConfig(block_size=cfg.block_size, vocab_size=cfg.vocab_size,
                                    n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd,
                                    dropout=0.0, gelu_approximate="tanh"))
    model.double()
    model.load_state_dict(dict(params), strict=True)
    lt = model(tgx.Tensor(idx), tgx.Tensor(tgt))[1]
    lt.backward()
    tg = _tgx_grads(model)
    errs = {k: rel_err(grads[k], tg[k]) for k in tg}
    errs["<loss>"] = rel_err(loss, lt.item())
    return errs


def check_encdec_vs_tinygradx(full_pad_row=False):
    """Dropout 0. By default the fully padded source row is left out: what attention does on a
    row with no real key is a convention (here masked_fill -1e9, i.e. uniform weights), and
    tinygradx's may differ without either being wrong."""
    from bench_floor import _import_tgx
    ttr = _import_tgx()[4]
    cfg = dict(ENCDEC_SMALL, dropout=0.0)
    params = ned.init_params(cfg, seed=0)
    batch = encdec_batch(cfg)
    if not full_pad_row:
        batch = tuple(a[:2] for a in batch)
    loss, grads = ned.NumpyEncDec(cfg).loss_and_grads(params, *batch)
    assert cfg["n_enc"] == cfg["n_dec"]
    model = ttr.make_model(cfg["src_vocab"], cfg["tgt_vocab"], N=cfg["n_enc"],
                           d_model=cfg["d_model"], d_ff=cfg["d_ff"], h=cfg["h"], dropout=0.0,
                           max_len=cfg["max_len"])
    model.double()
    model.load_state_dict(dict(params), strict=True)
    src, tgt_in, tgt_out = batch
    logp = model(tgx.Tensor(src), tgx.Tensor(tgt_in), src_pad_mask=src == 0)
    B, T, V = logp.shape
    lt = tgxF.nll_loss(logp.reshape(B * T, V), tgx.Tensor(tgt_out).reshape(B * T),
                       ignore_index=0)
    lt.backward()
    tg = _tgx_grads(model)
    errs = {k: rel_err(grads[k], tg[k]) for k in tg}
    errs["<loss>"] = rel_err(loss, lt.item())
    return errs


# ----------------------------------------------------------------------------------------------
def _fd_check(loss_fn, params, grads, n_coords=3, h=1e-6, seed=0):
    """Central differences at ``n_coords`` random coordinates of every tensor. Returns the max
    relative error per tensor, relative to the tensor's largest analytic gradient entry."""
    rng = np.random.default_rng(seed)
    errs = {}
    for k, a in params.items():
        g = grads[k]
        scale = max(float(np.abs(g).max()), 1e-8)
        worst = 0.0
        for _ in range(n_coords):
            i = tuple(int(rng.integers(0, s)) for s in a.shape)
            old = a[i]
            a[i] = old + h
            lp = loss_fn()
            a[i] = old - h
            lm = loss_fn()
            a[i] = old
            worst = max(worst, abs((lp - lm) / (2 * h) - g[i]) / scale)
        errs[k] = worst
    return errs


def check_gpt_fd():
    cfg = ngpt.GPTConfig(vocab_size=7, block_size=5, n_layer=2, n_head=2, n_embd=6,
                         dtype="float64")
    params = ngpt.init_params(cfg, seed=0)
    net = ngpt.NumpyGPT(cfg)
    idx, tgt = gpt_batch(cfg, B=2)
    _, grads = net.loss_and_grads(params, idx, tgt)
    grads = {k: v.copy() for k, v in grads.items()}
    return _fd_check(lambda: net.loss(params, idx, tgt), params, grads)


def check_encdec_fd():
    cfg = dict(src_vocab=7, tgt_vocab=8, d_model=6, h=2, n_enc=1, n_dec=2, d_ff=10, max_len=16,
               dtype="float64", dropout=0.0)
    params = ned.init_params(cfg, seed=0)
    net = ned.NumpyEncDec(cfg)
    batch = encdec_batch(cfg, B=3, S=5, T=4)
    _, grads = net.loss_and_grads(params, *batch)
    grads = {k: v.copy() for k, v in grads.items()}
    return _fd_check(lambda: net.loss(params, *batch), params, grads)


def check_float32_matches_float64():
    """The benchmarked float32 path computes the same step as the checked float64 one."""
    out = {}
    cfg64 = GPT_SMALL
    cfg32 = ngpt.GPTConfig(**{**cfg64.__dict__, "dtype": "float32"})
    idx, tgt = gpt_batch(cfg64)
    l64, g64 = ngpt.NumpyGPT(cfg64).loss_and_grads(ngpt.init_params(cfg64, 0), idx, tgt)
    l32, g32 = ngpt.NumpyGPT(cfg32).loss_and_grads(ngpt.init_params(cfg32, 0), idx, tgt)
    # floor 1e-4: float32 round-off of analytically-zero gradients (key biases) is ~1e-9, not 0.
    out["gpt"] = max([rel_err(l32, l64)] + [rel_err(g32[k], g64[k], 1e-4) for k in g64])
    e64 = dict(ENCDEC_SMALL, dropout=0.0)
    e32 = dict(e64, dtype="float32")
    batch = encdec_batch(e64)
    l64, g64 = ned.NumpyEncDec(e64).loss_and_grads(ned.init_params(e64, 0), *batch)
    l32, g32 = ned.NumpyEncDec(e32).loss_and_grads(ned.init_params(e32, 0), *batch)
    out["encdec"] = max([rel_err(l32, l64)] + [rel_err(g32[k], g64[k], 1e-4) for k in g64])
    return out


def main():
    ok = True

    def report(name, errs, tol):
        nonlocal ok
        worst = max(errs, key=errs.get)
        good = errs[worst] <= tol and all(math.isfinite(v) for v in errs.values())
        ok &= good
        print(f"{'PASS' if good else 'FAIL'}  {name:<48} max rel err {errs[worst]:.2e} "
              f"({worst}; {len(errs)} checked, tol {tol:g})")

    if HAVE_TORCH:
        print(f"torch {torch.__version__}: comparing float64 loss and all gradients")
        report("GPT vs torch", check_gpt_vs_torch(), RTOL)
        report("enc-dec vs torch, dropout 0", check_encdec_vs_torch(0.0), RTOL)
        report("enc-dec vs torch, dropout 0.2 (replayed)", check_encdec_vs_torch(0.2), RTOL)
        report("optimizer steps vs torch.optim", check_optim_vs_torch(), RTOL)
    else:
        print("torch not installed: skipping the torch comparisons")
    if HAVE_TGX:
        print("tinygradx importable: comparing float64 loss and all gradients with its models")
        for name, fn in (("GPT vs tinygradx", check_gpt_vs_tinygradx),
                         ("enc-dec vs tinygradx, dropout 0, no all-pad row",
                          lambda: check_encdec_vs_tinygradx(full_pad_row=False))):
            try:
                report(name, fn(), RTOL)
            except Exception as e:                     # models under construction: say so
                ok = False
                print(f"FAIL  {name:<48} {e!r}")
    report("GPT vs central differences", check_gpt_fd(), 1e-5)
    report("enc-dec vs central differences", check_encdec_fd(), 1e-5)
    report("float32 vs float64 path", check_float32_matches_float64(), 1e-3)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
