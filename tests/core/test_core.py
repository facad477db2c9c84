"""The learner's core stands alone: tinygradx/core/, copied out of the library into an empty
folder, runs the seed's Transformer encoder layer forward and backward in a fresh Python that
has no tinygradx, and gives what the full library gives (its EncoderLayer, its fused attention,
its compiled kernels) for the output and every parameter's gradient."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np

import tinygradx
from tinygradx import Tensor
from tinygradx.models.nets.transformer import Embeddings, EncoderLayer, PositionalEncoding

CORE = os.path.join(os.path.dirname(tinygradx.__file__), "core")
LINES_BUDGET = 2500

# The seed's encoder layer written with the core alone: every step is a formula of the seed.
LAYER = r'''
import sys
import numpy as np
import core
from core import Tensor, embedding, layer_norm, linear

loaded = sorted(m for m in sys.modules if m == "tinygradx" or m.startswith("tinygradx."))
assert not loaded, f"the core loaded {loaded}"
w = dict(np.load(sys.argv[1]))
ids, pe, pad, probe = (w.pop(k) for k in ("ids", "pe", "pad", "probe"))
P = {k: Tensor(v, requires_grad=True) for k, v in w.items()}
B, S = ids.shape
d = P["emb"].shape[1]
h = 4
dk = d // h


def heads(t):                                        # (B, S, d) -> (B, h, S, d_k)
    return t.reshape(B, S, h, dk).transpose(1, 2)


def self_attention(x, blocked):
    q, k, v = (heads(linear(x, P["w" + n], P["b" + n])) for n in "qkv")   # Q = X W^Q, ...
    score = q @ k.transpose(-2, -1) / dk ** 0.5      # Q K^T / sqrt(d_k): (B, h, S, S)
    a = score.masked_fill(blocked, -1e9).softmax(-1)  # A: each row sums to 1
    z = (a @ v).transpose(1, 2).reshape(B, S, d)     # Concat(head_1..head_h): (B, S, d)
    return linear(z, P["wo"], P["bo"])               # W^O


def ffn(y):
    return linear(linear(y, P["w1"], P["c1"]).relu(), P["w2"], P["c2"])


x = embedding(ids, P["emb"]) * d ** 0.5 + pe         # X = sqrt(d_model) Emb + PE: (B, S, d)
y = layer_norm(x + self_attention(x, pad[:, None, None, :]), (d,), P["g1"], P["n1"])
y = layer_norm(y + ffn(y), (d,), P["g2"], P["n2"])    # Post-LN Add & Norm, twice
(y * probe).sum().backward()

# the formulas alone (no fast backward registered here): a bias gradient that is the incoming
# gradient itself must still be a fresh array, or the second backward adds into a read-only one
x1, b1 = Tensor(np.arange(5.0), requires_grad=True), Tensor(np.zeros(5), requires_grad=True)
for _ in range(2):
    layer_norm(x1, (5,), None, b1).sum().backward()
assert b1.grad.numpy().tolist() == [2.0] * 5
np.savez(sys.argv[2], y=y.detach().numpy(), **{"grad_" + k: p.grad.numpy() for k, p in P.items()})
'''

NAMES = {"wq": "self_attn.w_q.weight", "bq": "self_attn.w_q.bias",
         "wk": "self_attn.w_k.weight", "bk": "self_attn.w_k.bias",
         "wv": "self_attn.w_v.weight", "bv": "self_attn.w_v.bias",
         "wo": "self_attn.w_o.weight", "bo": "self_attn.w_o.bias",
         "w1": "ff.w_1.weight", "c1": "ff.w_1.bias", "w2": "ff.w_2.weight", "c2": "ff.w_2.bias",
         "g1": "norm1.weight", "n1": "norm1.bias", "g2": "norm2.weight", "n2": "norm2.bias"}


def _core_lines():
    return sum(sum(1 for _ in open(os.path.join(CORE, f), encoding="utf-8"))
               for f in os.listdir(CORE) if f.endswith(".py"))


def test_the_core_reads_in_one_sitting():
    assert 1500 < _core_lines() <= LINES_BUDGET


def test_a_transformer_layer_on_the_core_alone_equals_the_full_library(tmp_path):
    rng = np.random.default_rng(0)
    B, S, d, V = 2, 5, 16, 11
    layer = EncoderLayer(d, 4, 32, dropout=0.0).double()
    emb, pos = Embeddings(V, d).double(), PositionalEncoding(d, 0.0)
    state = {k: v.numpy().astype(np.float64) for k, v in layer.state_dict().items()}
    for k in state:                      # away from the init's zeros and ones
        state[k] = state[k] + 0.1 * rng.standard_normal(state[k].shape)
    layer.load_state_dict({k: Tensor(v) for k, v in state.items()})
    ids = rng.integers(0, V, (B, S))
    pad = np.zeros((B, S), bool)
    pad[1, 3:] = True                    # the second sentence has two pad positions
    probe = rng.standard_normal((B, S, d))
    arrays = {k: state[NAMES[k]] for k in NAMES} | {
        "emb": emb.weight.detach().numpy(), "ids": ids, "pad": pad, "probe": probe,
        "pe": pos.pe.numpy()[:S].astype(np.float64)}   # the buffer: float32

    # the core, copied out of the library, in a Python that never sees tinygradx
    alone = tmp_path / "alone"
    shutil.copytree(CORE, alone / "core", ignore=shutil.ignore_patterns("__pycache__"))
    np.savez(tmp_path / "in.npz", **arrays)
    (alone / "layer.py").write_text(LAYER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-E", "-s", "layer.py", str(tmp_path / "in.npz"),
                          str(tmp_path / "out.npz")], cwd=alone, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = dict(np.load(tmp_path / "out.npz"))

    # the full library: the models' EncoderLayer, as training runs it
    for p in (*layer.parameters(), emb.weight):
        p.grad = None
    y = layer(pos(emb(Tensor(ids))), src_key_padding_mask=Tensor(pad))
    (y * Tensor(probe)).sum().backward()
    params = dict(layer.named_parameters())
    np.testing.assert_allclose(got["y"], y.detach().numpy(), rtol=1e-10, atol=1e-12)
    for k, name in NAMES.items():
        np.testing.assert_allclose(got["grad_" + k], params[name].grad.numpy(),
                                   rtol=1e-9, atol=1e-11, err_msg=name)
    np.testing.assert_allclose(got["grad_emb"], emb.weight.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert np.abs(got["grad_wq"]).max() > 1e-3      # a gradient flowed through attention
