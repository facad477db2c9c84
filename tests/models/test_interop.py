"""GPT weights across to PyTorch and back (models/nets/interop.py).

A GPT-2 written below in plain torch (Conv1D weights (in, out), as Hugging Face stores them)
loads our exported folder and gives our logits, and the other way round; with `transformers`
installed the same against GPT2LMHeadModel. Broken folders are refused with every problem in
one error, and no model comes back half-loaded. Torch tests skip when torch is absent.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.io import load_safetensors, read_safetensors_header, save_safetensors
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.nets.interop import (InteropError, from_nanogpt, from_pretrained,
                                           nanogpt_model_args, nanogpt_state,
                                           save_nanogpt, save_pretrained)

SIZES = dict(block_size=16, vocab_size=23, n_layer=2, n_head=4, n_embd=32)


def trained_like(seed=0, **kw):
    """A small GPT with every parameter random (biases and gains too, so a swapped or
    untransposed tensor cannot go unnoticed)."""
    tgx.manual_seed(seed)
    m = GPT(GPTConfig(**{**SIZES, **kw}))
    rng = np.random.default_rng(seed)
    for _, p in m.named_parameters():
        p.detach().numpy()[...] = rng.normal(0, 0.2,
                                             p.shape) + (1.0 if p.ndim == 1 and "ln" in _ else 0.0)
    return m.eval()


def ids(seed=1, shape=(3, 11)):
    return np.random.default_rng(seed).integers(0, SIZES["vocab_size"], shape)


# ------------------------------------------------------------------------------------------
# a GPT-2 in plain torch, written for these tests
# ------------------------------------------------------------------------------------------

def torch_gpt2(config):
    """A GPT2LMHeadModel-shaped torch module built from the config.json dict: parameter names
    and layouts of Hugging Face's GPT-2 (Conv1D: y = x @ W + b with W (in, out))."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    C, nh, L = config["n_embd"], config["n_head"], config["n_layer"]
    eps = config["layer_norm_epsilon"]
    approximate = "tanh" if config["activation_function"] == "gelu_new" else "none"

    class Conv1D(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.2)
            self.bias = nn.Parameter(torch.randn(n_out) * 0.2)

        def forward(self, x):
            return x @ self.weight + self.bias

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = Conv1D(C, 3 * C), Conv1D(C, C)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
            s = q @ k.transpose(-1, -2) / math.sqrt(C // nh)
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            a = s.masked_fill(future, float("-inf")).softmax(-1)
            return self.c_proj((a @ v).transpose(1, 2).reshape(B, T, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc, self.c_proj = Conv1D(C, 4 * C), Conv1D(4 * C, C)

        def forward(self, x):
            return self.c_proj(nn.functional.gelu(self.c_fc(x), approximate=approximate))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(C, eps=eps), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(C, eps=eps), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config["vocab_size"], C),
                wpe=nn.Embedding(config["n_positions"], C),
                h=nn.ModuleList([Block() for _ in range(L)]),
                ln_f=nn.LayerNorm(C, eps=eps)))

        def forward(self, idx):
            pos = torch.arange(idx.shape[1])
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            return self.transformer.ln_f(x) @ self.transformer.wte.weight.T   # tied head

    return GPT2()


def torch_load_folder(directory):
    torch = pytest.importorskip("torch")
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    model = torch_gpt2(config)
    state = {k: torch.from_numpy(np.array(v))
             for k, v in load_safetensors(os.path.join(directory, "model.safetensors")).items()}
    model.load_state_dict(state, strict=True)
    return model.eval()


# ------------------------------------------------------------------------------------------
# to torch and back
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gelu", ["tanh", "none"])
def test_export_runs_in_torch_with_the_same_logits(tmp_path, gelu):
    torch = pytest.importorskip("torch")
    ours = trained_like(gelu_approximate=gelu)
    save_pretrained(ours, tmp_path)
    theirs = torch_load_folder(tmp_path)
    x = ids()
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    got = ours(x)[0].detach().numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_export_layout(tmp_path):
    ours = trained_like()
    save_pretrained(ours, tmp_path)
    header, meta = read_safetensors_header(tmp_path / "model.safetensors")
    assert meta == {"format": "pt"}
    assert "lm_head.weight" not in header                        # tied: stored once
    assert header["transformer.h.0.attn.c_attn.weight"]["shape"] == [32, 96]   # (in, out)
    assert header["transformer.h.1.mlp.c_proj.weight"]["shape"] == [128, 32]
    assert header["transformer.wte.weight"]["shape"] == [23, 32]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "gpt2" and config["n_positions"] == 16
    assert config["activation_function"] == "gelu_new"


def test_torch_weights_import_with_the_same_logits(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    config = dict(model_type="gpt2", vocab_size=23, n_positions=16, n_embd=32, n_layer=2,
                  n_head=4, activation_function="gelu_new", layer_norm_epsilon=1e-5)
    theirs = torch_gpt2(config).eval()
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if "ln" in name:
                p.add_(torch.randn_like(p) * 0.2)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    # as an HF GPT2Model file: no "transformer." prefix, with the old mask buffers
    state = {k[len("transformer."):]: v for k, v in state.items()}
    state["h.0.attn.bias"] = np.tril(np.ones((1, 1, 16, 16), np.float32))
    save_safetensors(tmp_path / "model.safetensors", state, metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps(config))
    ours = from_pretrained(tmp_path)
    x = ids(2)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(x)[0].detach().numpy(), want, rtol=0, atol=1e-5)


def test_round_trip_is_exact(tmp_path):
    ours = trained_like()
    save_pretrained(ours, tmp_path)
    back = from_pretrained(tmp_path)
    for (n, p), (_, q) in zip(ours.named_parameters(), back.named_parameters(), strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    for p in back.parameters():     # written in place, as load_state_dict: leaves that train
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert back.config.gelu_approximate == "tanh"
    assert from_pretrained(tmp_path, dtype=np.float64).transformer.wte.weight.dtype == np.float64


def test_against_transformers_gpt2(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    ours = trained_like()
    save_pretrained(ours, tmp_path / "ours")
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "ours").eval()
    x = ids()
    with torch.no_grad():
        want = hf(torch.from_numpy(x)).logits.numpy()
    np.testing.assert_allclose(ours(x)[0].numpy(), want, rtol=0, atol=1e-5)
    hf.save_pretrained(tmp_path / "theirs")                       # and back
    back = from_pretrained(tmp_path / "theirs")
    np.testing.assert_allclose(back(x)[0].numpy(), want, rtol=0, atol=1e-5)


# ------------------------------------------------------------------------------------------
# refusals
# ------------------------------------------------------------------------------------------

def broken_folder(tmp_path, edit_state=None, edit_config=None):
    save_pretrained(trained_like(), tmp_path)
    state = load_safetensors(tmp_path / "model.safetensors")
    config = json.loads((tmp_path / "config.json").read_text())
    if edit_state:
        edit_state(state)
    if edit_config:
        edit_config(config)
    save_safetensors(tmp_path / "model.safetensors", state)
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_every_problem_in_one_error(tmp_path):
    def state(s):
        del s["transformer.h.1.ln_2.bias"]                                      # missing
        s["transformer.h.0.attn.c_attn.weight"] = s["transformer.h.0.attn.c_attn.weight"].T
        s["transformer.h.0.extra.weight"] = np.zeros(3, np.float32)             # unexpected
        s["transformer.wpe.weight"] = s["transformer.wpe.weight"].astype(np.int32)

    folder = broken_folder(tmp_path, state)
    with pytest.raises(InteropError) as e:
        from_pretrained(folder)
    msg = str(e.value)
    assert "4 problem(s)" in msg
    assert "missing tensor 'transformer.h.1.ln_2.bias'" in msg
    assert "wrong shape for 'transformer.h.0.attn.c_attn.weight'" in msg and "(32, 96)" in msg
    assert "unexpected tensor 'transformer.h.0.extra.weight'" in msg
    assert "int32" in msg


def test_a_config_that_does_not_match_the_weights(tmp_path):
    def config(c):
        c["n_embd"] = 48                                      # every tensor now has a wrong shape
        c["activation_function"] = "relu"
        c["scale_attn_by_inverse_layer_idx"] = True

    with pytest.raises(InteropError) as e:
        from_pretrained(broken_folder(tmp_path, edit_config=config))
    msg = str(e.value)
    assert "activation_function 'relu'" in msg and "scale_attn_by_inverse_layer_idx" in msg
    assert "wrong shape for 'transformer.wte.weight'" in msg and "(23, 48)" in msg


def test_missing_files_and_bad_json(tmp_path):
    with pytest.raises(InteropError, match="(?s)no config.json.*no model.safetensors"):
        from_pretrained(tmp_path)
    save_pretrained(trained_like(), tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InteropError, match="not readable JSON"):
        from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(InteropError, match="(?s)model_type is 'llama'.*n_positions"):
        from_pretrained(tmp_path)


def test_untied_head_is_refused(tmp_path):
    def state(s):
        s["lm_head.weight"] = s["transformer.wte.weight"] + 1

    with pytest.raises(InteropError, match="lm_head.weight differs"):
        from_pretrained(broken_folder(tmp_path, state))


def test_llama_switches_are_not_exported_as_gpt2(tmp_path):
    m = GPT(GPTConfig.llama(**SIZES, n_kv_head=2))
    with pytest.raises(InteropError) as e:
        save_pretrained(m, tmp_path)
    msg = str(e.value)
    for word in ("norm", "pos", "mlp", "bias", "n_kv_head"):
        assert f"config.{word}" in msg
    assert not os.listdir(tmp_path)


# ------------------------------------------------------------------------------------------
# nanoGPT
# ------------------------------------------------------------------------------------------

def test_nanogpt_state_round_trip(tmp_path):
    ours = trained_like(gelu_approximate="none", bias=False)
    state = nanogpt_state(ours)
    assert state["lm_head.weight"] is state["transformer.wte.weight"]
    assert state["transformer.h.0.attn.c_attn.weight"].shape == (96, 32)   # nn.Linear (out, in)
    # a torch.compile'd checkpoint, with the mask buffers of torch < 2.0
    ckpt = {"_orig_mod." + k: v.copy() for k, v in state.items()}
    ckpt["_orig_mod.transformer.h.0.attn.bias"] = np.ones((1, 1, 16, 16), np.float32)
    back = from_nanogpt(ckpt, nanogpt_model_args(ours.config))
    x = ids()
    np.testing.assert_array_equal(back(x)[0].detach().numpy(), ours(x)[0].detach().numpy())
    save_nanogpt(ours, tmp_path / "ckpt.safetensors")
    again = from_nanogpt(tmp_path / "ckpt.safetensors")           # model_args from metadata
    np.testing.assert_array_equal(again(x)[0].detach().numpy(), ours(x)[0].detach().numpy())


def test_nanogpt_against_torch():
    """nanoGPT's layout in torch: (out, in) Linear weights, the exact GELU, bias=False."""
    torch = pytest.importorskip("torch")
    ours = trained_like(gelu_approximate="none")
    state = nanogpt_state(ours)
    config = dict(vocab_size=23, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                  activation_function="gelu", layer_norm_epsilon=1e-5)
    theirs = torch_gpt2(config)
    conv = ("c_attn.weight", "c_proj.weight", "c_fc.weight")
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.T if k.endswith(conv) else v))
                            for k, v in state.items() if k != "lm_head.weight"})
    x = ids()
    with torch.no_grad():
        want = theirs.eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours(x)[0].detach().numpy(), want, rtol=0, atol=1e-5)


def test_nanogpt_refusals():
    with pytest.raises(InteropError, match="exact GELU"):
        nanogpt_state(trained_like())                            # tanh GELU: not nanoGPT's
    state = nanogpt_state(trained_like(gelu_approximate="none"))
    args = nanogpt_model_args(trained_like().config)
    with pytest.raises(InteropError, match="no model_args"):
        from_nanogpt(state)
    bad = dict(state)
    del bad["transformer.ln_f.bias"]
    bad["transformer.wpe.weight"] = bad["transformer.wpe.weight"][:8]
    with pytest.raises(InteropError) as e:
        from_nanogpt(bad, args)
    assert "2 problem(s)" in str(e.value)
    assert "missing tensor 'transformer.ln_f.bias'" in str(e.value)
    assert "wrong shape for 'transformer.wpe.weight'" in str(e.value)
