"""A GPT training loop as a user writes it: tinygradx's public ops, one by one, nothing tuned.

    python bench/plain_gpt.py --steps 20                 # ms, page faults per step
    TINYGRADX_MALLOC_TUNE=0 python bench/plain_gpt.py    # without the allocator setting
    python bench/plain_gpt.py --params P.npz --serve     # bench_floor.py's "plain" arm

This file is the benchmark's stand-in for a user's own script, so it may only do what such a
script does: import numpy and tinygradx's public API (Tensor ops, tinygradx.functional's
layer_norm / softmax / gelu / linear / cross_entropy, masked_fill, optim.AdamW) and nothing
from bench/ or from tinygradx's internals, and call no setting. bench/bench_floor.py runs it in
a fresh process and drives it over stdin (--serve: one step per line read, the loss written
back), so the step is timed next to torch's in the same rounds.

The model is nanoGPT's shape at its CPU config (V 65, 4 layers, 4 heads, C 128, T 64, B 12):
Pre-LN blocks, causal attention written out (QK^T, masked_fill, softmax, AV), tanh GELU, the
output head tied to the token embedding, AdamW with decay on the matrices only.
"""
import argparse
import math
import resource
import sys
import time

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
import tinygradx.optim as optim


def init_params(V, T, C, L, seed=0):
    """nanoGPT's names and initialisation, as numpy arrays."""
    rng = np.random.default_rng(seed)
    p = {"transformer.wte.weight": rng.normal(0, 0.02, (V, C)),
         "transformer.wpe.weight": rng.normal(0, 0.02, (T, C))}
    for i in range(L):
        h = f"transformer.h.{i}."
        for ln in ("ln_1", "ln_2"):
            p[h + ln + ".weight"], p[h + ln + ".bias"] = np.ones(C), np.zeros(C)
        for name, (n_out, n_in) in {"attn.c_attn": (3 * C, C), "attn.c_proj": (C, C),
                                    "mlp.c_fc": (4 * C, C), "mlp.c_proj": (C, 4 * C)}.items():
            std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj") else 0.02
            p[h + name + ".weight"] = rng.normal(0, std, (n_out, n_in))
            p[h + name + ".bias"] = np.zeros(n_out)
    p["transformer.ln_f.weight"], p["transformer.ln_f.bias"] = np.ones(C), np.zeros(C)
    return {k: v.astype(np.float32) for k, v in p.items()}


def attention(x, w, b, n_head):
    B, T, C = x.shape
    hs = C // n_head
    q, k, v = F.linear(x, w, b).split(C, dim=2)                     # 3 x (B, T, C)
    q = q.reshape(B, T, n_head, hs).transpose(1, 2)                 # (B, nh, T, hs)
    k = k.reshape(B, T, n_head, hs).transpose(1, 2)                 # (B, nh, T, hs)
    v = v.reshape(B, T, n_head, hs).transpose(1, 2)                 # (B, nh, T, hs)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))         # (B, nh, T, T)
    att = att.masked_fill(np.triu(np.ones((T, T), bool), 1), -np.inf)
    att = F.softmax(att, dim=-1)
    return (att @ v).transpose(1, 2).reshape(B, T, C)               # (B, T, C)


def forward(P, idx, targets, n_layer, n_head):
    B, T = idx.shape
    C = P["transformer.wte.weight"].shape[1]
    x = F.embedding(idx, P["transformer.wte.weight"]) + P["transformer.wpe.weight"][:T]
    for i in range(n_layer):
        h = f"transformer.h.{i}."
        a = F.layer_norm(x, (C,), P[h + "ln_1.weight"], P[h + "ln_1.bias"])
        a = attention(a, P[h + "attn.c_attn.weight"], P[h + "attn.c_attn.bias"], n_head)
        x = x + F.linear(a, P[h + "attn.c_proj.weight"], P[h + "attn.c_proj.bias"])
        m = F.layer_norm(x, (C,), P[h + "ln_2.weight"], P[h + "ln_2.bias"])
        m = F.gelu(F.linear(m, P[h + "mlp.c_fc.weight"], P[h + "mlp.c_fc.bias"]),
                   approximate="tanh")
        x = x + F.linear(m, P[h + "mlp.c_proj.weight"], P[h + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), P["transformer.ln_f.weight"], P["transformer.ln_f.bias"])
    logits = F.linear(x, P["transformer.wte.weight"])               # (B, T, V), tied head
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", help="an .npz of nanoGPT-named weights and a batch (idx, tgt)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    a = ap.parse_args()
    if a.params:
        data = dict(np.load(a.params))
        idx, tgt = data.pop("batch.idx"), data.pop("batch.tgt")
    else:
        data = init_params(65, 64, 128, a.layers)
        rng = np.random.default_rng(1)
        idx, tgt = rng.integers(0, 65, (12, 64)), rng.integers(0, 65, (12, 64))
    P = {k: tgx.tensor(v, requires_grad=True) for k, v in data.items()}
    opt = optim.AdamW([{"params": [p for p in P.values() if p.ndim >= 2], "weight_decay": 0.1},
                       {"params": [p for p in P.values() if p.ndim < 2], "weight_decay": 0.0}],
                      lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    idx, tgt = tgx.tensor(idx), tgx.tensor(tgt)

    def step():
        loss = forward(P, idx, tgt, a.layers, a.heads)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    if a.serve:
        print("ready", flush=True)
        for _ in sys.stdin:                     # one step per line; EOF ends the process
            print(repr(step()), flush=True)
        return
    for _ in range(a.steps):                    # with the page faults each step took
        t0, f0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        loss = step()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        print(f"loss {loss:.4f}  {(time.perf_counter() - t0) * 1e3:.1f} ms  {faults} page faults")


if __name__ == "__main__":
    main()
