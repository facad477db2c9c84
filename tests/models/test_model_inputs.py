"""Degenerate and wrong inputs of the models' forward and decoding: torch/nanoGPT's answer, or
a one-line error of our own naming the argument (tests/oracle.py's assert_clear), never
numpy's internals (issue 43: a GPT forward on a batch of 0 sequences, GPT.generate(idx, -1),
an empty prompt).

A batch of 0 sequences is a valid batch: GPT's logits are (0, T, V), the mean loss over no
targets is NaN and every gradient 0, as the same weights give in torch (the GPT-2 written in
plain torch in test_interop.py). A sequence of 0 tokens has no last position to continue from
(nanoGPT's generate fails on it inside torch's indexing): it is refused by name.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
from oracle import assert_clear
from test_interop import torch_gpt2, trained_like
from tinygradx.models.nets import decoding
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.nets.interop import nanogpt_state
from tinygradx.models.nets.transformer import make_model

V = 23


def _torch_twin(ours):
    torch = pytest.importorskip("torch")
    theirs = torch_gpt2(dict(vocab_size=V, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                             activation_function="gelu", layer_norm_epsilon=1e-5))
    conv = ("c_attn.weight", "c_proj.weight", "c_fc.weight")
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.T if k.endswith(conv) else v))
                            for k, v in nanogpt_state(ours).items() if k != "lm_head.weight"})
    return torch, theirs.double()


@pytest.mark.parametrize("fused", [True, False])
def test_gpt_on_a_batch_of_no_sequences_is_torchs(fused):
    """(0, T) ids: logits (0, T, V), the mean cross-entropy NaN, every gradient zero, as
    torch computes them from the same weights."""
    ours = trained_like(gelu_approximate="none", fused_attention=fused).double().train()
    torch, theirs = _torch_twin(ours)
    x = np.zeros((0, 5), np.int64)
    logits, loss = ours(x, x)
    want = theirs(torch.from_numpy(x))
    tloss = torch.nn.functional.cross_entropy(want.reshape(-1, V), torch.from_numpy(x)
                                              .reshape(-1))
    assert logits.shape == tuple(want.shape) == (0, 5, V)
    assert np.isnan(loss.item()) and np.isnan(tloss.item())
    loss.backward()
    tloss.backward()
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None and not p.grad.numpy().any(), name
    assert not any(g.grad.any() for g in grads.values())


def test_gpt_generate_on_no_sequences_and_zero_new_tokens():
    m = GPT(GPTConfig(vocab_size=V, block_size=8, n_layer=1, n_head=2, n_embd=8)).eval()
    for cache in (True, False):
        out = m.generate(np.zeros((0, 3), np.int64), 4, use_cache=cache)
        assert out.shape == (0, 7) and out.dtype == np.int64
    idx = np.array([[1, 2, 3]])
    np.testing.assert_array_equal(m.generate(idx, 0).numpy(), idx)    # nanoGPT's: idx itself


def _gpt():
    return GPT(GPTConfig(vocab_size=V, block_size=8, n_layer=1, n_head=2, n_embd=8)).eval()


_IDX = np.array([[1, 2, 3]])
GPT_REFUSALS = {   # call -> fragments the one-line error must hold
    "negative max_new_tokens": (lambda m: m.generate(_IDX, -1), ("max_new_tokens", "-1")),
    "fractional max_new_tokens": (lambda m: m.generate(_IDX, 2.5), ("max_new_tokens",)),
    "bool max_new_tokens": (lambda m: m.generate(_IDX, True), ("max_new_tokens",)),
    "empty prompt": (lambda m: m.generate(np.zeros((1, 0), np.int64), 3), ("idx", "(1, 0)")),
    "empty prompt, no cache": (lambda m: m.generate(np.zeros((2, 0), np.int64), 3,
                                                    use_cache=False), ("idx",)),
    "1-d prompt": (lambda m: m.generate(np.array([1, 2]), 3), ("idx", "(B, T)")),
    "float prompt": (lambda m: m.generate(np.zeros((1, 3), np.float32), 3), ("idx", "float32")),
    "negative temperature": (lambda m: m.generate(_IDX, 2, temperature=-1.0),
                             ("temperature",)),
    "NaN temperature": (lambda m: m.generate(_IDX, 2, temperature=float("nan")),
                        ("temperature",)),
    "top_k 0": (lambda m: m.generate(_IDX, 2, top_k=0), ("top_k",)),
    "top_p 0": (lambda m: m.generate(_IDX, 2, top_p=0.0), ("top_p",)),
    "top_p above 1": (lambda m: m.generate(_IDX, 2, top_p=1.5), ("top_p",)),
    "forward of 0 positions": (lambda m: m(np.zeros((2, 0), np.int64)), ("idx", "(2, 0)")),
    "forward of a 3-d idx": (lambda m: m(np.zeros((1, 2, 3), np.int64)), ("idx",)),
    "targets of another shape": (lambda m: m(_IDX, np.array([[1, 2]])), ("targets", "(1, 2)")),
    "float targets": (lambda m: m(_IDX, np.zeros((1, 3))), ("targets",)),
}


@pytest.mark.parametrize("case", list(GPT_REFUSALS))
def test_gpt_refuses_by_name(case):
    call, fragments = GPT_REFUSALS[case]
    with pytest.raises(ValueError) as err:
        call(_gpt())
    assert_clear(err.value, *fragments)


def test_sampling_from_decoding_names_its_arguments():
    m = _gpt()
    with pytest.raises(ValueError) as err:
        decoding.sample(m, _IDX, -2)
    assert_clear(err.value, "max_new_tokens")


# ------------------------------------------------------------------------------------------
# the encoder-decoder's decoders
# ------------------------------------------------------------------------------------------

def _encdec():
    return make_model(9, 9, N=1, d_model=16, d_ff=32, h=2, dropout=0.0).eval()


_SRC = np.random.default_rng(0).integers(3, 9, size=(2, 5))
_PAD = np.zeros_like(_SRC, bool)
DECODERS = {"greedy_decode": decoding.greedy_decode, "beam_search": decoding.beam_search}
DECODE_REFUSALS = {
    "negative max_len": (dict(max_len=-1), ("max_len", "-1")),
    "fractional max_len": (dict(max_len=2.5), ("max_len",)),
    "src without positions": (dict(src=_SRC[:, :0], src_pad=_PAD[:, :0]), ("src", "(2, 0)")),
    "1-d src": (dict(src=_SRC[0], src_pad=_PAD[0]), ("src", "(B, S)")),
    "float src": (dict(src=_SRC.astype(float)), ("src", "float64")),
    "src_pad of another shape": (dict(src_pad=_PAD[:, :3]), ("src_pad", "(2, 3)")),
    "bos_id outside the vocabulary": (dict(bos_id=100), ("bos_id", "100")),
    "eos_id outside the vocabulary": (dict(eos_id=-1), ("eos_id",)),
}


@pytest.mark.parametrize("decoder", list(DECODERS))
@pytest.mark.parametrize("case", list(DECODE_REFUSALS))
def test_decoders_refuse_by_name(decoder, case):
    change, fragments = DECODE_REFUSALS[case]
    args = dict(src=_SRC, src_pad=_PAD, max_len=4, bos_id=1, eos_id=2)
    args.update(change)
    with pytest.raises(ValueError) as err:
        DECODERS[decoder](_encdec(), args["src"], args["src_pad"], args["max_len"],
                          args["bos_id"], args["eos_id"])
    assert_clear(err.value, decoder, *fragments)


@pytest.mark.parametrize("beam_size", [0, -1, 1.5, True])
def test_beam_search_refuses_a_beam_size_that_is_no_count(beam_size):
    with pytest.raises(ValueError) as err:
        decoding.beam_search(_encdec(), _SRC, _PAD, 4, 1, 2, beam_size=beam_size)
    assert_clear(err.value, "beam_size")


def test_beam_search_refuses_a_length_penalty_that_is_not_finite():
    with pytest.raises(ValueError) as err:
        decoding.beam_search(_encdec(), _SRC, _PAD, 4, 1, 2, length_penalty=float("nan"))
    assert_clear(err.value, "length_penalty")


@pytest.mark.parametrize("decoder", list(DECODERS))
def test_decoders_on_no_sources_and_zero_steps(decoder):
    """A batch of 0 sources decodes to no outputs; max_len 0 to an empty output each."""
    m = _encdec()
    assert DECODERS[decoder](m, _SRC[:0], _PAD[:0], 4, 1, 2) == []
    assert DECODERS[decoder](m, _SRC, _PAD, 0, 1, 2) == [[], []]
    assert DECODERS[decoder](m, tgx.tensor(_SRC), None, 0, 1, 2) == [[], []]
