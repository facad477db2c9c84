"""Three PyTorch scripts built on torch's layers (tests/compat_models/) run unchanged through
tinygradx.compat and, when PyTorch is installed, under PyTorch from the same weights and the
same data, step by step through the scripts' own functions:

    char_rnn.py             Embedding + LSTM / GRU / RNN (2 layers, batch_first) + Linear,
                            truncated BPTT (the state carried and detached), clip_grad_norm_,
                            Adam; greedy continuation of a prompt
    small_cnn.py            Conv2d (padding 1 and 'same'), MaxPool2d, F.avg_pool2d,
                            AdaptiveAvgPool2d, flatten, Linear; SGD with momentum; accuracy
    reverse_transformer.py  nn.Transformer(batch_first=True) with a causal target mask and
                            source / target padding masks, CrossEntropyLoss(ignore_index),
                            greedy decoding

Compared: losses and logits (float64 to rtol 1e-10, float32 to 1e-5), every parameter's
gradient and value after each optimizer step (float64 to 1e-9), greedy tokens exactly. The
data are drawn with numpy (the two sides' random generators differ). Without PyTorch the
tinygradx runs still execute (training lowers the loss); only the comparisons are skipped.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from test_compat_models import MODELS, assert_same_params, both, copy_weights, load, numpy_of

TOL64 = dict(rtol=1e-10, atol=1e-12)
GRAD64 = dict(rtol=1e-9, atol=1e-11)
TOL32 = dict(rtol=1e-5, atol=1e-6)


def pair(tm, xm, build, dtype):
    """The same model on both sides (PyTorch's weights copied), in dtype."""
    tm.torch.manual_seed(0)
    theirs = build(tm)
    mine = build(xm)
    if dtype == "float64":
        theirs, mine = theirs.double(), mine.double()
    assert copy_weights(theirs, mine) == []
    return theirs, mine


def _close(a, b, dtype):
    np.testing.assert_allclose(a, b, **(TOL64 if dtype == "float64" else TOL32))


# ------------------------------------------------------------------------------------------
# char_rnn.py
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cell", ("lstm", "gru", "rnn"))
@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_char_rnn_matches_pytorch(cell, dtype):
    tm, xm = both("char_rnn.py")
    vocab = len(tm.Vocab(tm.TEXT).chars)
    theirs, mine = pair(tm, xm, lambda s: s.CharRNN(vocab, embed=6, hidden=8, cell=cell),
                        dtype)
    rng = np.random.default_rng(0)
    data = rng.integers(0, vocab, (3, 4 * 6 + 1))
    opts = [s.torch.optim.Adam(m.parameters(), lr=1e-2) for s, m in ((tm, theirs), (xm, mine))]
    states = [None, None]
    for i in range(0, 4 * 6, 6):
        x, y = data[:, i:i + 6], data[:, i + 1:i + 7]
        losses = []
        for k, (s, m) in enumerate(((tm, theirs), (xm, mine))):
            loss, states[k] = s.train_step(m, opts[k], s.torch.tensor(x), s.torch.tensor(y),
                                           states[k])
            losses.append(loss)
        _close(losses[1], losses[0], dtype)
        if dtype == "float64":
            assert_same_params(theirs, mine, "grad", GRAD64)
            assert_same_params(theirs, mine, "data", GRAD64)
    for a, b in zip(tm_flat(states[0]), tm_flat(states[1]), strict=True):
        _close(numpy_of(b), numpy_of(a), dtype)
    prompt = tm.Vocab(tm.TEXT).encode("the quick ").numpy()
    t_ids = tm.greedy(theirs, tm.torch.tensor(prompt), 15)
    m_ids = xm.greedy(mine, xm.torch.tensor(prompt), 15)
    assert m_ids == t_ids


def tm_flat(state):
    return list(state) if isinstance(state, tuple) else [state]


def test_char_rnn_trains_on_tinygradx():
    script = load("char_rnn.py")
    torch = script.torch
    torch.manual_seed(0)
    vocab = script.Vocab(script.TEXT)
    model = script.CharRNN(len(vocab.chars), cell="gru")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(4):                                   # four passes over the text
        state = None
        for x, y in script.batches(vocab.encode(script.TEXT), 4, 16):
            loss, state = script.train_step(model, opt, x, y, state)
            losses.append(loss)
    assert isinstance(state, torch.Tensor) and not state.requires_grad
    assert losses[-1] < 0.8 * losses[0], losses
    out = script.greedy(model, vocab.encode("the "), 10)
    assert len(out) == 10 and all(0 <= i < len(vocab.chars) for i in out)


# ------------------------------------------------------------------------------------------
# small_cnn.py
# ------------------------------------------------------------------------------------------

def cnn_data(seed, n=12):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    return rng.standard_normal((n, 1, 12, 12)), labels


@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_small_cnn_matches_pytorch(dtype):
    tm, xm = both("small_cnn.py")
    theirs, mine = pair(tm, xm, lambda s: s.SmallCNN(width=4), dtype)
    np.testing.assert_array_equal(xm.patterns().numpy(), tm.patterns().numpy())
    opts = [s.torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            for s, m in ((tm, theirs), (xm, mine))]
    for epoch in range(2):
        images, labels = cnn_data(epoch)
        images = images.astype(dtype)
        losses = [s.train_epoch(m, opt, s.torch.tensor(images), s.torch.tensor(labels), 4)
                  for (s, m), opt in zip(((tm, theirs), (xm, mine)), opts, strict=True)]
        _close(losses[1], losses[0], dtype)
        if dtype == "float64":
            assert_same_params(theirs, mine, "grad", GRAD64)
            assert_same_params(theirs, mine, "data", GRAD64)
    images, labels = cnn_data(7)
    images = images.astype(dtype)
    t_logits = theirs(tm.torch.tensor(images))
    m_logits = mine(xm.torch.tensor(images))
    _close(numpy_of(m_logits), numpy_of(t_logits), dtype)
    assert xm.accuracy(mine, xm.torch.tensor(images), xm.torch.tensor(labels)) == \
        tm.accuracy(theirs, tm.torch.tensor(images), tm.torch.tensor(labels))


# ------------------------------------------------------------------------------------------
# reverse_transformer.py
# ------------------------------------------------------------------------------------------

def reverse_data(seed, batch=4, max_len=5, vocab=10):
    """numpy's version of the script's make_batch: padded sources, BOS reversed EOS."""
    rng = np.random.default_rng(seed)
    src = np.zeros((batch, max_len), np.int64)
    tgt = np.zeros((batch, max_len + 2), np.int64)
    for i in range(batch):
        n = rng.integers(2, max_len + 1)
        seq = rng.integers(3, vocab, n)
        src[i, :n], tgt[i, 0], tgt[i, 1:n + 1], tgt[i, n + 1] = seq, 1, seq[::-1], 2
    return src, tgt


@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_reverse_transformer_matches_pytorch(dtype):
    tm, xm = both("reverse_transformer.py")
    theirs, mine = pair(tm, xm, lambda s: s.Seq2Seq(10, d_model=8, nhead=2, layers=2, d_ff=16,
                                                   dropout=0.0, max_len=8), dtype)
    src, tgt = reverse_data(0)
    t_logits = theirs(tm.torch.tensor(src), tm.torch.tensor(tgt[:, :-1]))
    m_logits = mine(xm.torch.tensor(src), xm.torch.tensor(tgt[:, :-1]))
    _close(numpy_of(m_logits), numpy_of(t_logits), dtype)
    sides = []
    for s, m in ((tm, theirs), (xm, mine)):
        sides.append((s, m, s.torch.nn.CrossEntropyLoss(ignore_index=s.PAD),
                      s.torch.optim.Adam(m.parameters(), lr=1e-2)))
    for step in range(3):
        src, tgt = reverse_data(step + 1)
        losses = [s.train_step(m, crit, opt, s.torch.tensor(src), s.torch.tensor(tgt))
                  for s, m, crit, opt in sides]
        _close(losses[1], losses[0], dtype)
        if dtype == "float64":
            assert_same_params(theirs, mine, "grad", GRAD64)
            # the key third of in_proj_bias has a zero gradient but for rounding, which Adam
            # turns into steps of ~lr * 1e-9 (as KEY_BIASES in test_compat_models.py)
            assert_same_params(theirs, mine, "data", GRAD64, noise=("in_proj_bias",))
    src, _ = reverse_data(9)
    t_out = tm.greedy_decode(theirs, tm.torch.tensor(src), 7)
    m_out = xm.greedy_decode(mine, xm.torch.tensor(src), 7)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_reverse_transformer_learns_on_tinygradx():
    script = load("reverse_transformer.py")
    torch = script.torch
    torch.manual_seed(0)
    model = script.Seq2Seq(8, d_model=16, nhead=2, layers=1, d_ff=32, dropout=0.0)
    assert isinstance(model.transformer, torch.nn.Transformer)
    crit = torch.nn.CrossEntropyLoss(ignore_index=script.PAD)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = [script.train_step(model, crit, opt, *script.make_batch(16, 4, 8))
              for _ in range(40)]
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses
    out = script.greedy_decode(model, script.make_batch(3, 4, 8)[0], 6)
    assert out.shape == (3, 6) and (out[:, 0] == script.BOS).all().item()


# ------------------------------------------------------------------------------------------
# as scripts: python -m tinygradx.compat FILE
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,first", [
    (["char_rnn.py", "--steps", "3", "--cell", "lstm"], "step    0  loss "),
    (["small_cnn.py", "--epochs", "1", "--n", "32"], "epoch 0  loss "),
    (["reverse_transformer.py", "--steps", "2", "--batch", "4"], "step    0  loss "),
])
def test_scripts_run_through_the_lookalike(argv, first):
    r = subprocess.run([sys.executable, "-m", "tinygradx.compat", *argv], cwd=MODELS,
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith(first), r.stdout


def test_reverse_transformer_trains_from_a_dataloader():
    """The script feeds nn.Transformer from torch.utils.data (TensorDataset, DataLoader with
    shuffle, drop_last and a seeded generator): through the look-alike every batch has the
    batch size, each (src, tgt) pair stays together, and a seed repeats the order."""
    script = load("reverse_transformer.py")
    script.torch.manual_seed(0)                           # the pairs come from the global RNG
    first = [(s.numpy().copy(), t.numpy().copy()) for s, t in script.loader(40, 8, 4, 8, 0)]
    script.torch.manual_seed(0)
    again = [(s.numpy(), t.numpy()) for s, t in script.loader(40, 8, 4, 8, 0)]
    assert len(first) == 5 and all(s.shape == (8, 4) and t.shape == (8, 6) for s, t in first)
    for (s, t), (s2, t2) in zip(first, again, strict=True):
        assert np.array_equal(s, s2) and np.array_equal(t, t2)
        n = (s != script.PAD).sum(axis=1)                 # tgt = BOS reversed(src) EOS, row by row
        for row in range(8):
            assert list(t[row, 1:n[row] + 1]) == list(s[row, :n[row]][::-1])
