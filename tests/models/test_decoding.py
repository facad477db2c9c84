"""Decoding (models/nets/decoding.py): greedy, beam search, GPT sampling.

The model-level KV-cache checks (GPT cache == recompute, decode_step == full decode) live in
test_models.py; here: beam size 1 == greedy, a beam as wide as the search space == exhaustive
search, greedy on a briefly trained copy model, greedy through the decode_step cache ==
greedy_decode, and sample(top_k=1) == uncached argmax decoding.
"""
import itertools
import tempfile

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.models.nets import decoding
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.tasks import BOS, EOS, PAD, copy_task, pad_batch
from tinygradx.models.training.trainer import Trainer, TrainConfig
from tinygradx.models.nets.transformer import make_model


class _ShortCopy(Trainer):
    """copy over 5 symbols, 2..4 long: a 1-layer d_model 32 model learns it in ~100 steps."""

    def _make_task(self):
        return copy_task(seed=0, n_train=300, n_valid=40, n_test=40, alphabet_size=5,
                         min_len=2, max_len=4)


@pytest.fixture(scope="module")
def copy_trainer():
    with tempfile.TemporaryDirectory() as out_dir:
        cfg = TrainConfig(task="copy", d_model=32, n_head=2, n_layer=1, batch_size=32,
                          dropout=0.0, lr=1e-2, schedule="constant", progress=False,
                          out_dir=out_dir)
        trainer = _ShortCopy(cfg, log=lambda *a: None)
        for _ in range(100):
            trainer.train_step()
        yield trainer


def _test_batch(trainer, n=40):
    pairs = trainer.task.encoded("test")[:n]
    return pairs, pad_batch(pairs)


def _max_len(trainer):
    return trainer.task.max_lengths()[1] + 2


# ------------------------------------------------------------------------------------------
# greedy and beam search on the trained copy model
# ------------------------------------------------------------------------------------------

def test_greedy_copies_held_out_inputs(copy_trainer):
    pairs, b = _test_batch(copy_trainer)
    V = len(copy_trainer.task.tgt_vocab)
    out = decoding.greedy_decode(copy_trainer.model, b.src, b.src_key_padding,
                                 _max_len(copy_trainer), BOS, EOS)
    assert len(out) == len(pairs)
    for ids in out:
        assert len(ids) <= _max_len(copy_trainer)
        assert all(0 <= i < V and i not in (PAD, BOS, EOS) for i in ids)
    hits = [ids == list(t) for ids, (_, t) in zip(out, pairs, strict=True)]
    assert np.mean(hits) >= 0.3, np.mean(hits)          # about 0.65 after 100 steps
    # stopping at <eos>: a correct copy is exactly as long as its source, nothing trails it
    assert all(len(ids) == len(s) for ids, (s, _), h in zip(out, pairs, hits, strict=True) if h)
    # and the trainer's string API agrees
    em = copy_trainer.exact_match("test", limit=len(pairs))
    assert em == pytest.approx(np.mean(hits))


def test_beam_size_one_equals_greedy(copy_trainer):
    _, b = _test_batch(copy_trainer, 12)
    args = (copy_trainer.model, b.src, b.src_key_padding, _max_len(copy_trainer), BOS, EOS)
    greedy = decoding.greedy_decode(*args)
    for alpha in (0.0, 0.6):
        assert decoding.beam_search(*args, beam_size=1, length_penalty=alpha) == greedy


def test_beam_search_output_is_a_valid_sequence(copy_trainer):
    pairs, b = _test_batch(copy_trainer, 12)
    V = len(copy_trainer.task.tgt_vocab)
    max_len = _max_len(copy_trainer)
    for k in (2, 4):
        out = decoding.beam_search(copy_trainer.model, b.src, b.src_key_padding, max_len,
                                   BOS, EOS, beam_size=k)
        assert len(out) == len(pairs)
        for ids in out:
            assert isinstance(ids, list) and all(isinstance(i, int) for i in ids)
            assert len(ids) <= max_len
            assert all(0 <= i < V and i not in (PAD, BOS, EOS) for i in ids)
    hits = np.mean([o == list(t) for o, (_, t) in zip(out, pairs, strict=True)])
    assert hits >= 0.3
    # a tiny max_len cuts every hypothesis
    short = decoding.beam_search(copy_trainer.model, b.src, b.src_key_padding, 1, BOS, EOS,
                                 beam_size=3)
    assert all(len(ids) <= 1 for ids in short)


def test_decoding_restores_training_mode(copy_trainer):
    model = copy_trainer.model
    _, b = _test_batch(copy_trainer, 3)
    model.train()
    decoding.greedy_decode(model, b.src, b.src_key_padding, 4, BOS, EOS)
    decoding.beam_search(model, b.src, b.src_key_padding, 4, BOS, EOS, beam_size=2)
    assert model.training
    model.eval()
    decoding.greedy_decode(model, b.src, b.src_key_padding, 4, BOS, EOS)
    assert not model.training
    model.train()


def test_cached_greedy_equals_greedy_decode(copy_trainer):
    """Greedy through init_decode_state/decode_step (KV cache, padded sources in the batch)
    picks the same tokens as greedy_decode, which recomputes the whole prefix each step."""
    model = copy_trainer.model
    _, b = _test_batch(copy_trainer, 16)
    assert b.src_key_padding.any()
    max_len = _max_len(copy_trainer)
    want = decoding.greedy_decode(model, b.src, b.src_key_padding, max_len, BOS, EOS)
    model.eval()
    with tgx.no_grad():
        state = model.init_decode_state(model.encode(tgx.tensor(b.src), b.src_key_padding),
                                        b.src_key_padding)
        tok = np.full((len(b), 1), BOS, dtype=np.int64)
        rows, done = [], np.zeros(len(b), dtype=bool)
        for _ in range(max_len):
            nxt = model.decode_step(tok, state).numpy().argmax(-1)
            nxt = np.where(done, EOS, nxt)
            rows.append(nxt)
            done |= nxt == EOS
            tok = nxt[:, None]
            if done.all():
                break
    model.train()
    got = []
    for row in np.stack(rows, axis=1).tolist():
        got.append(row[:row.index(EOS)] if EOS in row else row)
    assert got == want


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_batched_decoding_equals_the_uncached_reference(copy_trainer, norm_first):
    """greedy_decode and beam_search (one batch, KV cache, cross-attention K/V once per
    source, finished sentences leaving the batch) pick the tokens of the reference that
    recomputes every prefix: on the trained copy model (float32, padded sources) and on a
    random float64 model of either LayerNorm placement."""
    _, b = _test_batch(copy_trainer, 24)
    cases = [(copy_trainer.model, b.src, b.src_key_padding, _max_len(copy_trainer))]
    tgx.manual_seed(5)
    model = make_model(9, 9, N=2, d_model=16, d_ff=32, h=2, dropout=0.0,
                       norm_first=norm_first).double()
    src = np.random.default_rng(0).integers(3, 9, size=(7, 6))
    pad = np.zeros_like(src, dtype=bool)
    pad[2, 4:] = pad[5, 3:] = True
    cases.append((model, src, pad, 7))
    for model, src, pad, max_len in cases:
        args = (model, src, pad, max_len, BOS, EOS)
        assert decoding.greedy_decode(*args) == decoding.greedy_decode(*args, cached=False)
        for k, alpha in ((1, 0.6), (3, 0.0), (4, 0.6)):
            assert (decoding.beam_search(*args, beam_size=k, length_penalty=alpha)
                    == decoding.beam_search(*args, beam_size=k, length_penalty=alpha,
                                            cached=False))


# ------------------------------------------------------------------------------------------
# beam search == exhaustive search when the beam holds every hypothesis
# ------------------------------------------------------------------------------------------

def _sequence_logprob(model, memory, src_pad, seq):
    """log p(seq | src) of one target sequence (ids after <bos>), by one full forward."""
    tgt_in = np.array([[BOS] + seq[:-1]], dtype=np.int64)
    states = model.decode(memory, src_pad, tgx.tensor(tgt_in), None)
    logp = model.generator(states).numpy()[0]                            # (T, V)
    return float(sum(logp[t, tok] for t, tok in enumerate(seq)))


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_equals_exhaustive_search(alpha):
    tgx.manual_seed(3)
    V, max_len = 6, 3
    model = make_model(7, V, N=1, d_model=16, d_ff=32, h=2, dropout=0.0).double().eval()
    src = np.array([[4, 5, 6]], dtype=np.int64)
    pad = np.zeros_like(src, dtype=bool)
    with tgx.no_grad():
        memory = model.encode(tgx.tensor(src), pad)
        finished = []
        for n in range(max_len):                       # n tokens, then <eos> (if it fits)
            for body in itertools.product([t for t in range(V) if t != EOS], repeat=n):
                seq = list(body) + [EOS]
                score = _sequence_logprob(model, memory, pad, seq)
                finished.append((score / decoding._length_penalty(len(seq), alpha), list(body)))
    best = max(finished)[1]
    got = decoding.beam_search(model, src, pad, max_len, BOS, EOS, beam_size=V ** max_len,
                               length_penalty=alpha)
    assert got == [best]


# ------------------------------------------------------------------------------------------
# GPT sampling
# ------------------------------------------------------------------------------------------

def _tiny_gpt(block_size=12, dropout=0.1):
    tgx.manual_seed(0)
    return GPT(GPTConfig(block_size=block_size, vocab_size=11, n_layer=2, n_head=2, n_embd=16,
                         dropout=dropout))


def _argmax_uncached(model, idx, n):
    """Greedy decoding by re-running the full (cropped) context every step, no cache."""
    model.eval()
    idx = np.array(idx)
    with tgx.no_grad():
        for _ in range(n):
            logits, _ = model(tgx.tensor(idx[:, -model.config.block_size:]))
            idx = np.concatenate([idx, logits.numpy()[:, -1].argmax(-1)[:, None]], axis=1)
    model.train()
    return idx


def test_sample_top_k_1_equals_argmax_decoding():
    model = _tiny_gpt()
    prompt = np.array([[1, 2, 3], [4, 4, 0]], dtype=np.int64)
    want = _argmax_uncached(model, prompt, 15)              # runs past block_size 12
    for kw in (dict(top_k=1), dict(top_k=1, temperature=0.5), dict(temperature=0),
               dict(top_p=1e-9)):
        got = decoding.sample(model, prompt, 15, **kw)
        np.testing.assert_array_equal(got, want, err_msg=str(kw))
    assert model.training                                   # restored after sampling


def test_sample_is_seeded_and_stops_at_eos():
    model = _tiny_gpt()
    prompt = np.array([[1, 2]], dtype=np.int64)
    tgx.manual_seed(5)
    a = decoding.sample(model, prompt, 8, temperature=1.0, top_k=5)
    tgx.manual_seed(5)
    b = decoding.sample(model, prompt, 8, temperature=1.0, top_k=5)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (1, 10) and a.dtype.kind == "i"
    np.testing.assert_array_equal(a[:, :2], prompt)
    first = int(decoding.sample(model, prompt, 1, temperature=0)[0, -1])
    out = decoding.sample(model, prompt, 8, temperature=0, eos_id=first)
    assert out.shape == (1, 3) and out[0, -1] == first


# ------------------------------------------------------------------------------------------
# sources encoded in groups of similar length
# ------------------------------------------------------------------------------------------

def test_length_groups_cover_every_row_once_in_length_order():
    lengths = np.random.default_rng(1).integers(1, 30, size=500)
    groups = decoding._length_groups(lengths)
    rows = np.concatenate(groups)
    assert sorted(rows.tolist()) == list(range(500))
    assert np.all(np.diff(lengths[rows]) >= 0)
    assert len(groups) > 1                               # 500 rows of 1..29: worth splitting


def test_grouped_encoding_equals_one_encode_and_decodes_the_same(monkeypatch):
    """Encoding by length groups gives H of the one padded encode at every real position
    (float64), and greedy / beam search over it pick the same tokens, cached or not."""
    tgx.manual_seed(3)
    model = make_model(9, 9, N=2, d_model=16, d_ff=32, h=2, dropout=0.0).double().eval()
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 9, size=12)
    src = rng.integers(3, 9, size=(12, 8))
    pad = np.arange(8) >= lengths[:, None]
    monkeypatch.setattr(decoding, "_GROUP_COST", 0)      # a group per distinct length
    with tgx.no_grad():
        want = model.encode(tgx.tensor(src), pad).numpy()
        got = decoding._encode_by_length(model, src, pad).numpy()
    np.testing.assert_allclose(got[~pad], want[~pad], atol=1e-12)
    assert np.all(got[pad] == 0)
    args = (model, src, pad, 6, BOS, EOS)
    greedy = decoding.greedy_decode(*args)
    assert greedy == decoding.greedy_decode(*args, cached=False)
    assert decoding.beam_search(*args, beam_size=3) == decoding.beam_search(*args, beam_size=3,
                                                                             cached=False)
    monkeypatch.setattr(decoding, "_GROUP_COST", 10 ** 9)  # one group: the plain encode
    assert decoding.greedy_decode(*args) == greedy


@pytest.mark.parametrize("norm_first", [False, True])
def test_inference_encoder_attention_equals_the_module_path(norm_first):
    """Under no_grad the encoder's self-attention runs as one QKV GEMM and one attention
    node; it gives nn.MultiHeadAttention's H (float64, padded sources)."""
    tgx.manual_seed(4)
    model = make_model(9, 9, N=2, d_model=16, d_ff=32, h=4, dropout=0.0,
                       norm_first=norm_first).double().eval()
    src = np.random.default_rng(3).integers(3, 9, size=(5, 7))
    pad = np.arange(7) >= np.array([7, 3, 5, 1, 6])[:, None]
    want = model.encode(tgx.tensor(src), pad)                # graph on: the module path
    assert want.requires_grad
    with tgx.no_grad():
        got = model.encode(tgx.tensor(src), pad)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=0, atol=1e-12)


def test_decode_state_reorders_memory_lazily():
    """reorder composes the row index; H is gathered when read, as memory[index1][index2]."""
    tgx.manual_seed(6)
    model = make_model(9, 9, N=1, d_model=8, d_ff=16, h=2, dropout=0.0).eval()
    src = np.random.default_rng(4).integers(3, 9, size=(3, 4))
    with tgx.no_grad():
        memory = model.encode(tgx.tensor(src))
        state = model.init_decode_state(memory)
        model.decode_step(np.full((3, 1), BOS), state)       # K, V of H kept: H not read again
        state.reorder([2, 0, 0, 1])
        state.reorder([3, 1])
        assert state._index.tolist() == [1, 0]
        np.testing.assert_array_equal(state.memory.numpy(), memory.numpy()[[1, 0]])
        assert state._index is None


class _Doubled(tgx.nn.Linear):
    """A Linear subclass (as a LoRA wrapper would be): no inference path may bypass it."""

    def forward(self, x):
        return super().forward(x) * 2


def _swap(mha, name):
    old = getattr(mha, name)
    new = _Doubled(old.in_features, old.out_features).double()
    new.load_state_dict(old.state_dict())
    setattr(mha, name, new)


@pytest.mark.parametrize("where", ["encoder.w_q", "decoder.self.w_k", "decoder.cross.w_v",
                                   "decoder.cross.forward"])
def test_inference_paths_step_aside_for_modules_that_are_not_stock(where):
    """The encoder's and the decoder's inference paths read W^Q, W^K, W^V stacked; a subclassed
    projection or a MultiHeadAttention with its own forward must take the module path, so the
    no-grad H and the cached log-probs equal the graph path's (they were silently the stock
    model's before)."""
    tgx.manual_seed(5)
    model = make_model(9, 9, N=1, d_model=16, d_ff=32, h=4, dropout=0.0).double().eval()
    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    if where == "encoder.w_q":
        _swap(enc.self_attn, "w_q")
    elif where == "decoder.self.w_k":
        _swap(dec.self_attn, "w_k")
    elif where == "decoder.cross.w_v":
        _swap(dec.cross_attn, "w_v")
    else:                                          # the attention itself rewritten
        mha = dec.cross_attn
        plain = mha.forward
        mha.forward = lambda *a, **k: (lambda out, w: (out * 2, w))(*plain(*a, **k))
    src, pad, tgt = _sources(6, [5, 2, 4])
    if where != "decoder.cross.forward":
        _assert_no_grad_equals_graph(model, src, pad, tgt)
        return
    _assert_no_grad_equals_graph(model, src, pad, tgt, steps=False)
    assert not model.cacheable()                   # the cache cannot honour it: it says so
    with tgx.no_grad():
        state = model.init_decode_state(model.encode(tgx.tensor(src), pad), pad)
        with pytest.raises(ValueError, match="MultiHeadAttention.*cached=False"):
            model.decode_step(tgt[:, :1], state)
    args = (model, src, pad, 6, BOS, EOS)
    assert decoding.greedy_decode(*args) == decoding.greedy_decode(*args, cached=False)


def _sources(seed, lengths):
    """src (B, 5) with trailing padding of the given lengths, its pad mask, tgt (B, 4)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(3, 9, size=(len(lengths), 5))
    pad = np.arange(5) >= np.array(lengths)[:, None]
    return src, pad, rng.integers(3, 9, size=(len(lengths), 4))


def _assert_no_grad_equals_graph(model, src, pad, tgt, steps=True):
    """The no-grad H (and with steps the cached log-probs, one decode_step per position)
    equal the graph path's, which runs every module (float64: 1e-12 and 1e-10)."""
    want_h = model.encode(tgx.tensor(src), pad)                # graph on: the module path
    want = model.generator(model.decode(want_h, pad, tgx.tensor(tgt), None)).detach().numpy()
    with tgx.no_grad():
        h = model.encode(tgx.tensor(src), pad)
        np.testing.assert_allclose(h.detach().numpy(), want_h.detach().numpy(), rtol=0, atol=1e-12)
        state = model.init_decode_state(h, pad)
        for t in range(tgt.shape[1] if steps else 0):
            got = model.decode_step(tgt[:, t:t + 1], state).numpy()
            np.testing.assert_allclose(got, want[:, t], rtol=0, atol=1e-10)


def _module_path(monkeypatch):
    """Layers through their modules (nothing planned on arrays): the array path's reference."""
    from tinygradx.models.nets import fastpath
    monkeypatch.setattr(fastpath, "plan", lambda model, stock: None)


def _planned(stack):
    """The runner fastpath.plan builds for an Encoder or Decoder under no_grad, or None."""
    from tinygradx.models.nets import fastpath, transformer
    with tgx.no_grad():
        return fastpath.plan(stack, transformer.STOCK)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layers_on_arrays_give_the_module_paths_numbers(norm_first, dtype, monkeypatch):
    """Under no_grad the encoder (planned by encode) and a decode step (planned by
    init_decode_state) run their stock layers on arrays (models/nets/fastpath.py). The layers'
    LayerNorms, FFN and residual adds are the modules' own forward code; attention takes Q, K,
    V from one GEMM of the stacked weights and is one fused node, where nn.MultiHeadAttention
    makes three GEMMs and computes attention op by op, so the two agree to rounding (at
    d_model 32 they differ in the last bits): 1e-12 in float64, 1e-5 in float32."""
    tgx.manual_seed(8)
    model = make_model(9, 9, N=2, d_model=32, d_ff=64, h=4, dropout=0.1, norm_first=norm_first)
    model = (model.double() if dtype == "float64" else model).eval()
    src = np.random.default_rng(9).integers(3, 9, size=(4, 6))
    pad = np.arange(6) >= np.array([6, 2, 5, 1])[:, None]
    tgt = np.random.default_rng(10).integers(3, 9, size=(4, 5))

    def run():
        with tgx.no_grad():
            h = model.encode(tgx.tensor(src), pad)
            state = model.init_decode_state(h, pad)
            steps = [model.decode_step(tgt[:, :2], state).numpy()]    # two positions at once
            steps += [model.decode_step(tgt[:, t:t + 1], state).numpy() for t in range(2, 5)]
        return state.plan, h.numpy(), steps

    plan, h_arrays, steps_arrays = run()
    assert plan is not None and _planned(model.encoder) is not None
    _module_path(monkeypatch)
    plan, h_modules, steps_modules = run()
    assert plan is None
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert h_arrays.dtype == np.dtype(dtype)
    np.testing.assert_allclose(h_arrays, h_modules, rtol=0, atol=tol)
    for a, b in zip(steps_arrays, steps_modules, strict=True):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, rtol=0, atol=tol)


def _double_ffn(layer):
    from tinygradx.models.nets.transformer import PositionwiseFeedForward

    class Doubled(PositionwiseFeedForward):
        def forward(self, x):
            return super().forward(x) * 2

    old = layer.ff
    layer.ff = Doubled(old.w_1.in_features, old.w_1.out_features, 0.0).double()
    layer.ff.load_state_dict(old.state_dict())


@pytest.mark.parametrize("change", [
    _double_ffn,
    lambda layer: setattr(layer.norm2, "forward", lambda x: x * 3),
    lambda layer: setattr(layer, "forward", lambda *a, **k: type(layer).forward(layer, *a, **k)),
], ids=["subclassed-ffn", "instance-forward-norm", "instance-forward-layer"])
@pytest.mark.parametrize("where", ["encoder", "decoder"])
def test_layers_on_arrays_step_aside_for_modules_that_are_not_stock(change, where):
    """A layer whose modules are not all stock runs through its modules, so the no-grad H and
    the cached log-probs still equal the graph path's."""
    tgx.manual_seed(11)
    model = make_model(9, 9, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).double().eval()
    stack = model.encoder if where == "encoder" else model.decoder
    change(stack.layers[1])
    assert _planned(stack) is None
    _assert_no_grad_equals_graph(model, *_sources(12, [5, 3, 2]))


def test_layers_on_arrays_only_without_dropout_recording_or_observers():
    tgx.manual_seed(14)
    model = make_model(9, 9, N=1, d_model=16, d_ff=32, h=4, dropout=0.1)
    layer = model.encoder.layers[0]
    assert _planned(model.encoder) is None                # training, dropout 0.1: active
    model.eval()
    assert _planned(model.encoder) is not None
    layer.record_attn = True
    assert _planned(model.encoder) is None
    layer.record_attn = False
    with tgx.profile():
        assert _planned(model.encoder) is None            # the ops are being watched
    from tinygradx.models.nets import fastpath, transformer
    assert fastpath.plan(model.encoder, transformer.STOCK) is None   # gradients on
