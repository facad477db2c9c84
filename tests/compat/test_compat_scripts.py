"""Two training scripts written in the style of public PyTorch code run unchanged through the
look-alike, and agree with PyTorch from the same weights and inputs:

    char_gpt.py   a lecture-style character GPT: get_batch with torch.randint, a bigram model,
                  heads with a registered tril buffer, pre-LN blocks, F.cross_entropy, AdamW,
                  estimate_loss under @torch.no_grad(), generate with torch.multinomial or
                  greedily
    bert_mlm.py   a BERT-style masked-LM loop: masking with torch.bernoulli / torch.rand,
                  attention from nn.Linear with the padding mask filled into `q @ k.T / d` in
                  place, Post-LN, a decoder tied to the embedding, DataLoader(TensorDataset,
                  shuffle, generator), AdamW with clip_grad_norm_

Compared: logits and losses to 1e-10 in float64 and 1e-5 in float32, every parameter's
gradient likewise, parameters after a few AdamW steps on the same batches, and the tokens of
greedy decoding exactly. The random draws themselves (batches, masks, shuffles) differ between
the generators, so the tests feed both sides the same arrays; the tinygradx runs of the
scripts' own random paths are checked on their own.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from test_compat_models import MODELS, load

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}


def arr(t):
    return t.detach().numpy() if hasattr(t, "detach") else t.numpy()


def copy_weights(src, dst):
    state = {k: v.detach().numpy() for k, v in src.state_dict().items()}
    missing, unexpected = dst.load_state_dict(state, strict=False)
    assert list(missing) == [] and list(unexpected) == []


def same_grads(theirs, mine, tol):
    grads = dict(mine.named_parameters())
    for name, p in theirs.named_parameters():
        g, w = grads[name].grad, p.grad
        assert (g is None) == (w is None), name
        if w is not None:
            np.testing.assert_allclose(arr(g), arr(w), err_msg=name, **tol)


def same_params(theirs, mine, tol):
    params = dict(mine.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(arr(params[name]), arr(p), err_msg=name, **tol)


# -- the lecture-style GPT ----------------------------------------------------------------------

def _gpt_batches(mod, n, seed=0):
    data = arr(mod.train_data)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        ix = rng.integers(0, len(data) - mod.block_size, mod.batch_size)
        x = np.stack([data[i:i + mod.block_size] for i in ix])
        y = np.stack([data[i + 1:i + mod.block_size + 1] for i in ix])
        yield x, y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_char_gpt_matches_pytorch(dtype):
    theirs_mod, mine_mod = load("char_gpt.py", pytorch=True), load("char_gpt.py")
    T, M = theirs_mod.torch, mine_mod.torch
    T.manual_seed(0)
    theirs = theirs_mod.GPTLanguageModel()
    mine = mine_mod.GPTLanguageModel()
    if dtype == np.float64:
        theirs, mine = theirs.double(), mine.double()
    copy_weights(theirs, mine)
    tol = TOL[dtype]
    opt_t = T.optim.AdamW(theirs.parameters(), lr=theirs_mod.learning_rate)
    opt_m = M.optim.AdamW(mine.parameters(), lr=mine_mod.learning_rate)
    for x, y in _gpt_batches(mine_mod, 3):
        lt, loss_t = theirs(T.tensor(x), T.tensor(y))
        lm, loss_m = mine(M.tensor(x), M.tensor(y))
        np.testing.assert_allclose(arr(lm), arr(lt), **tol)
        np.testing.assert_allclose(loss_m.item(), loss_t.item(), **tol)
        opt_t.zero_grad(set_to_none=True)
        opt_m.zero_grad(set_to_none=True)
        loss_t.backward()
        loss_m.backward()
        same_grads(theirs, mine, tol)
        opt_t.step()
        opt_m.step()
    same_params(theirs, mine, {np.float64: dict(rtol=1e-9, atol=1e-12),
                               np.float32: dict(rtol=1e-4, atol=1e-5)}[dtype])
    context = mine_mod.encode("the c")
    got = mine.generate(M.tensor([context]), max_new_tokens=20, greedy=True)
    want = theirs.generate(T.tensor([context]), max_new_tokens=20, greedy=True)
    assert got[0].tolist() == want[0].tolist()


def test_char_gpt_bigram_and_its_own_random_paths():
    theirs_mod, mine_mod = load("char_gpt.py", pytorch=True), load("char_gpt.py")
    T, M = theirs_mod.torch, mine_mod.torch
    bigram_t = theirs_mod.BigramLanguageModel(theirs_mod.vocab_size).double()
    bigram_m = mine_mod.BigramLanguageModel(mine_mod.vocab_size).double()
    copy_weights(bigram_t, bigram_m)
    x, y = next(_gpt_batches(mine_mod, 1, seed=3))
    np.testing.assert_allclose(bigram_m(M.tensor(x), M.tensor(y))[1].item(),
                               bigram_t(T.tensor(x), T.tensor(y))[1].item(), rtol=1e-12)
    M.manual_seed(0)
    model = mine_mod.GPTLanguageModel()
    lines = []
    mine_mod.train(model, 30, eval_interval=29, log=lines.append)
    first = float(lines[0].split("train loss ")[1].split(",")[0])
    last = float(lines[-1].split("train loss ")[1].split(",")[0])
    assert last < first
    losses = mine_mod.estimate_loss(model)
    assert not losses["train"].requires_grad and model.training
    sampled = model.generate(M.zeros((1, 1), dtype=M.long), max_new_tokens=30)
    assert sampled.shape == (1, 31) and 0 <= int(sampled.min()) and \
        int(sampled.max()) < mine_mod.vocab_size


# -- the BERT-style masked LM -------------------------------------------------------------------

def _bert_batch(seed=0, n=6):
    rng = np.random.default_rng(seed)
    max_len, vocab = 16, 16
    ids = np.zeros((n, max_len), np.int64)
    for i in range(n):
        L = int(rng.integers(3, max_len - 1))
        ids[i, 0], ids[i, L + 1] = 1, 2
        ids[i, 1:L + 1] = rng.integers(4, vocab, L)
    chosen = (rng.random(ids.shape) < 0.3) & (ids > 3)
    return (ids, ids != 0, chosen, rng.random(ids.shape) < 0.8, rng.random(ids.shape) < 0.5,
            rng.integers(4, vocab, ids.shape))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bert_mlm_matches_pytorch(dtype):
    theirs_mod, mine_mod = load("bert_mlm.py", pytorch=True), load("bert_mlm.py")
    T, M = theirs_mod.torch, mine_mod.torch
    T.manual_seed(0)
    theirs, mine = theirs_mod.BertForMLM(theirs_mod.Config()), mine_mod.BertForMLM(
        mine_mod.Config())
    if dtype == np.float64:
        theirs, mine = theirs.double(), mine.double()
    copy_weights(theirs, mine)
    tol = TOL[dtype]
    opt_t = T.optim.AdamW(theirs.parameters(), lr=2e-3, weight_decay=0.01)
    opt_m = M.optim.AdamW(mine.parameters(), lr=2e-3, weight_decay=0.01)
    for seed in range(3):
        ids, pad, *choices = _bert_batch(seed)
        inp_t, lab_t = theirs_mod.apply_masks(T.tensor(ids), *map(T.tensor, choices))
        inp_m, lab_m = mine_mod.apply_masks(M.tensor(ids), *map(M.tensor, choices))
        assert inp_m.tolist() == inp_t.tolist() and lab_m.tolist() == lab_t.tolist()
        lt, loss_t = theirs(inp_t, T.tensor(pad), lab_t)
        lm, loss_m = mine(inp_m, M.tensor(pad), lab_m)
        np.testing.assert_allclose(arr(lm), arr(lt), **tol)
        np.testing.assert_allclose(loss_m.item(), loss_t.item(), **tol)
        opt_t.zero_grad()
        opt_m.zero_grad()
        loss_t.backward()
        loss_m.backward()
        same_grads(theirs, mine, tol)
        norm_t = T.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        norm_m = M.nn.utils.clip_grad_norm_(mine.parameters(), 1.0)
        np.testing.assert_allclose(norm_m.item(), norm_t.item(), **tol)
        opt_t.step()
        opt_m.step()
    same_params(theirs, mine, {np.float64: dict(rtol=1e-9, atol=1e-12),
                               np.float32: dict(rtol=1e-4, atol=1e-5)}[dtype])
    ids, pad, *choices = _bert_batch(7)
    inp, _ = mine_mod.apply_masks(M.tensor(ids), *map(M.tensor, choices))
    got = mine_mod.fill_masks(mine, inp, M.tensor(pad))
    want = theirs_mod.fill_masks(theirs, T.tensor(inp.numpy()), T.tensor(pad))
    assert got.tolist() == want.tolist()


def test_bert_mlm_trains_through_its_own_dataloader_and_masking():
    mod = load("bert_mlm.py")
    M = mod.torch
    M.manual_seed(0)
    cfg = mod.Config()
    ids, pad = mod.make_corpus(32, cfg.max_len, generator=M.Generator().manual_seed(0))
    assert ids.shape == (32, cfg.max_len) and pad.dtype == np.bool_
    inputs, labels = mod.mask_tokens(ids)
    chosen = labels != mod.IGNORE
    assert not chosen[ids <= mod.SEP].any() and (labels[chosen] == ids[chosen]).all()
    model = mod.BertForMLM(cfg)
    lines = []
    mod.train(model, ids, pad, steps=26, generator=M.Generator().manual_seed(1),
              log=lines.append)
    assert len(lines) == 2 and all(np.isfinite(float(s.split()[-1])) for s in lines)


@pytest.mark.parametrize("script,steps", [("char_gpt.py", "3"), ("bert_mlm.py", "3")])
def test_the_scripts_run_unchanged_from_the_command_line(script, steps):
    out = subprocess.run([sys.executable, "-m", "tinygradx.compat",
                          os.path.join(MODELS, script), "--steps", steps],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "loss" in out.stdout
