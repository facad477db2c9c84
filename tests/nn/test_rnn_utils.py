"""torch.nn.utils.rnn (tinygradx/nn/utils/rnn.py) and a PackedSequence through nn.RNN, GRU and
LSTM (nn/rnn.py), against torch: every function's values, dtypes, structure and refusals, and
the recurrent nets' outputs, final states (per sequence length, in the caller's order) and
gradients (inputs, initial states, every parameter) from the same weights. The op table
(tests/opinfo_norm.py) adds random shapes, gradcheck and gradgradcheck."""
import warnings

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.nn.utils import rnn as R
from oracle import lookalike, requires_torch, same, torch

pytestmark = requires_torch


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _seqs(m, lengths, feat=(2,), dtype=None, grad=False):
    return [m.tensor(np.arange(n * int(np.prod(feat)), dtype=np.float64).reshape((n,) + feat)
                     + 10 * i, dtype=dtype or m.float32, requires_grad=grad)
            for i, n in enumerate(lengths)]


@pytest.mark.parametrize("call", [
    lambda m: m.nn.utils.rnn.pad_sequence(_seqs(m, [3, 2, 1])),
    lambda m: m.nn.utils.rnn.pad_sequence(_seqs(m, [1, 4, 2], feat=(2, 3)), batch_first=True,
                                          padding_value=-1.0),
    lambda m: m.nn.utils.rnn.pad_sequence(_seqs(m, [3, 2, 1]), True, 7.0, "left"),
    lambda m: m.nn.utils.rnn.pad_sequence(_seqs(m, [0, 2], feat=())),
    lambda m: m.nn.utils.rnn.pad_sequence(m.ones(2, 3, 4)),
    lambda m: m.nn.utils.rnn.pad_sequence(tuple(_seqs(m, [2, 3], dtype=m.float64))),
    lambda m: m.nn.utils.rnn.pad_sequence([m.ones(2, dtype=m.int64), m.ones(3, dtype=m.int64)],
                                          padding_value=1.5),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.nn.utils.rnn.pad_sequence(
        _seqs(m, [3, 2, 1])), [3, 2, 1]),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.nn.utils.rnn.pad_sequence(
        _seqs(m, [2, 3, 1]), batch_first=True), m.tensor([2, 3, 1]), batch_first=True,
        enforce_sorted=False),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 5, 1), [1, 3, 1, 3, 2],
                                                  enforce_sorted=False),        # ties: stable
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 3, 1), [3.0, 2.0, 1.0]),
    lambda m: m.nn.utils.rnn.pad_packed_sequence(m.nn.utils.rnn.pack_sequence(
        _seqs(m, [2, 4, 1]), enforce_sorted=False)),
    lambda m: m.nn.utils.rnn.pad_packed_sequence(m.nn.utils.rnn.pack_sequence(
        _seqs(m, [4, 2, 1])), batch_first=True, padding_value=9.0, total_length=6),
    lambda m: m.nn.utils.rnn.pack_sequence(_seqs(m, [1, 3, 2]), enforce_sorted=False),
    lambda m: m.nn.utils.rnn.unpack_sequence(m.nn.utils.rnn.pack_sequence(
        _seqs(m, [2, 3, 1]), enforce_sorted=False)),
    lambda m: m.nn.utils.rnn.unpad_sequence(m.nn.utils.rnn.pad_sequence(_seqs(m, [3, 1, 2])),
                                            m.tensor([3, 1, 2])),
    lambda m: m.nn.utils.rnn.unpad_sequence(m.nn.utils.rnn.pad_sequence(
        _seqs(m, [3, 1, 2]), batch_first=True), m.tensor([3, 1, 2]), batch_first=True),
    lambda m: m.nn.utils.rnn.invert_permutation(m.tensor([2, 0, 3, 1])),
    lambda m: m.nn.utils.rnn.invert_permutation(None),
    lambda m: m.nn.utils.rnn.PackedSequence(m.ones(3, 2), m.tensor([2, 1])),
    lambda m: m.nn.utils.rnn.PackedSequence((m.ones(3, 2), m.tensor([2, 1]))),
    lambda m: (lambda p: [_name(p.data.dtype), _name(p.to(m.float64).data.dtype),
                          _name(p.double().data.dtype),
                          p.float() is p, p.is_cuda, len(p), list(p._fields),
                          isinstance(p, tuple), p.cpu() is p])(
        m.nn.utils.rnn.pack_sequence(_seqs(m, [2, 1]))),
], ids=lambda c: "")
def test_functions_as_torch(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.utils.rnn.pad_sequence([]),
    lambda m: m.nn.utils.rnn.pad_sequence(_seqs(m, [2, 1]), padding_side="middle"),
    lambda m: m.nn.utils.rnn.pad_sequence([m.ones(2, 2), m.ones(2, 3)]),
    lambda m: m.nn.utils.rnn.pad_sequence([m.tensor(1.0), m.tensor(2.0)]),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 3, 2), [2, 3, 1]),
    lambda m: m.nn.utils.rnn.pack_sequence(_seqs(m, [1, 3, 2])),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 3, 2), [3, 2, 0]),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 3, 2), [3, 2]),
    lambda m: m.nn.utils.rnn.pack_padded_sequence(m.zeros(3, 3, 2), m.tensor([[3, 2, 1]])),
    lambda m: m.nn.utils.rnn.pad_packed_sequence(m.nn.utils.rnn.pack_sequence(
        _seqs(m, [3, 2])), total_length=2),
    lambda m: m.nn.GRU(2, 3)(m.nn.utils.rnn.pack_sequence(_seqs(m, [3, 2])), m.zeros(1, 3, 3)),
], ids=lambda c: "")
def test_refusals_as_torch(call):
    same(call)


def test_a_length_beyond_the_padding_is_refused():
    """torch reads past the padded tensor there (batch_sizes [3, 2, 1, 1] for 6 rows of data);
    tinygradx says so instead."""
    with pytest.raises(Exception, match="longer than the padded input's 3 steps"):
        R.pack_padded_sequence(tgx.zeros(3, 3, 2), [4, 2, 1])


def test_gradients_flow_through_pack_and_pad_as_torchs():
    def grads(m):
        seqs = _seqs(m, [2, 4, 1], feat=(3,), dtype=m.float64, grad=True)
        padded = m.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=0.5)
        packed = m.nn.utils.rnn.pack_padded_sequence(padded, [2, 4, 1], batch_first=True,
                                                     enforce_sorted=False)
        out, _ = m.nn.utils.rnn.pad_packed_sequence(packed, total_length=5, padding_value=-2)
        (out * out.sin()).sum().backward()
        return [out] + [s.grad for s in seqs]
    same(grads, atol=1e-12, rtol=1e-12)


def _run_rnn(m, cls, kw, lengths, enforce_sorted, with_h0, dtype):
    """The module on packed sequences: padded output, lengths, final states and every gradient
    (sequences, initial states, parameters by name)."""
    rng = np.random.default_rng(0)
    D = 2 if kw.get("bidirectional") else 1
    seqs = [m.tensor(rng.standard_normal((n, kw["input_size"])), dtype=dtype,
                     requires_grad=True) for n in lengths]
    hshape = (D * kw.get("num_layers", 1), len(lengths), kw["hidden_size"])
    states = [m.tensor(rng.standard_normal(hshape), dtype=dtype, requires_grad=True)
              for _ in range((1 + (cls == "LSTM")) if with_h0 else 0)]
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(**kw).to(getattr(torch, str(np.dtype(dtype))
                                                     if m is not torch else "float32"))
    if m is torch:
        net = theirs.to(dtype)
    else:
        net = getattr(m.nn, cls)(**kw).to(dtype)
        net.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    packed = m.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=enforce_sorted)
    hx = None if not states else (tuple(states) if cls == "LSTM" else states[0])
    out, h = net(packed, hx)
    padded, lens = m.nn.utils.rnn.pad_packed_sequence(out, batch_first=kw.get("batch_first",
                                                                              False))
    finals = list(h) if isinstance(h, tuple) else [h]
    loss = (padded * padded.sin()).sum() + sum((f * f.cos()).sum() for f in finals)
    loss.backward()
    params = {n: p.grad for n, p in net.named_parameters()}
    return [padded, lens] + finals + [s.grad for s in seqs + states] + [params,
                                                                        type(out).__name__,
                                                                        out.batch_sizes]


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("kw", [
    {"input_size": 3, "hidden_size": 4},
    {"input_size": 3, "hidden_size": 2, "num_layers": 2, "bidirectional": True},
    {"input_size": 2, "hidden_size": 3, "batch_first": True, "bidirectional": True,
     "bias": False},
    {"input_size": 2, "hidden_size": 3, "num_layers": 3}], ids=lambda k: "-".join(
        f"{a}={b}" for a, b in k.items()))
@pytest.mark.parametrize("lengths, enforce_sorted", [([5, 3, 3, 1], True),
                                                     ([2, 5, 1, 3, 5], False)])
@pytest.mark.parametrize("with_h0", [False, True])
def test_packed_sequences_through_recurrent_nets_as_torch(cls, kw, lengths, enforce_sorted,
                                                          with_h0):
    def call(m):
        dtype = np.float64 if m is not torch else torch.float64
        return _run_rnn(m, cls, kw, lengths, enforce_sorted, with_h0, dtype)
    same(call, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("cls", ["GRU", "LSTM"])
def test_packed_float32_as_torch(cls):
    kw = {"input_size": 3, "hidden_size": 4, "num_layers": 2, "bidirectional": True}

    def call(m):
        dtype = np.float32 if m is not torch else torch.float32
        return _run_rnn(m, cls, kw, [4, 1, 3], False, True, dtype)
    same(call, atol=1e-5, rtol=1e-5)


def test_the_final_state_is_each_sequences_last_step():
    """Packed, h_n of a sequence is its state after its own last step: the same as running it
    alone, and the same as the padded run's output at that step (forward direction)."""
    tgx.manual_seed(0)
    gru = tgx.nn.GRU(2, 3)
    seqs = [tgx.randn(n, 2) for n in (3, 5, 1)]
    out, h_n = gru(R.pack_sequence(seqs, enforce_sorted=False))
    for i, s in enumerate(seqs):
        _, alone = gru(s.unsqueeze(1))
        np.testing.assert_allclose(h_n[0, i].detach().numpy(), alone[0, 0].detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
    padded, lengths = R.pad_packed_sequence(out)
    assert lengths.tolist() == [3, 5, 1]
    np.testing.assert_allclose(padded[2, 0].detach().numpy(), h_n[0, 0].detach().numpy())
    assert np.all(padded[3:, 0].detach().numpy() == 0)


def test_packed_lstm_draws_and_differentiates_twice():
    from tinygradx.graph import viz
    lstm = tgx.nn.LSTM(2, 2, bidirectional=True)
    x = tgx.randn(4, 3, 2, requires_grad=True)
    packed = R.pack_padded_sequence(x, [4, 2, 1])
    out, (h, c) = lstm(packed)
    assert "sigmoid" in viz.to_dot_source(h.sum())
    (g,) = tgx.grad((h * h).sum(), x, create_graph=True)
    (gg,) = tgx.grad(g.sum(), x)
    assert gg.shape == x.shape


def test_the_lookalike_imports_it_as_torch_code_does():
    ns = lookalike()
    assert ns.nn.utils.rnn.pad_sequence is R.pad_sequence
    assert ns.nn.utils.rnn.PackedSequence is R.PackedSequence
    assert ns.nn.utils.clip_grad_norm_ is not None
    from tinygradx.compat import installed
    with installed():
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: F401
        import torch.nn.utils.rnn as rnn_utils
        assert rnn_utils.pack_sequence is R.pack_sequence
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert R.PackedSequence(tgx.ones(2, 1), tgx.tensor([1, 1])).unsorted_indices is None
