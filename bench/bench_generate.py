"""KV-cached generation speed: tinygradx GPT.generate against the same loop in PyTorch eager.

    python bench/bench_generate.py [--tokens 200] [--pairs 10] [--batch 1]
    python bench/bench_generate.py --rev main --no-torch   # this checkout against another

Both start from the same weights and one prompt token and decode greedily with a per-layer
cache of K and V (B, nh, t, hs), so each new token costs one position of attention, not a full
recompute. The generated tokens must agree before the timings are printed. Reports tokens/s
(median [min, max] over interleaved pairs) and the ratio. Timings are never asserted.
With --rev, another git revision's GPT.generate (exported as bench_versions.py does) runs
the same weights as a third arm, so one change of the engine is an A/B in one process.
With --floor, the same loop written directly in numpy (`numpy_generate`: per-head K, V
buffers, about 15 numpy calls per layer) runs too: the floor of any engine on numpy.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile


import _blas_env  # noqa: F401,E402  (before numpy: see bench/_blas_env.py)

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import tinygradx as tgx                                          # noqa: E402
from harness import ab_compare, format_ratio, machine_facts      # noqa: E402
from tinygradx.models.nets.gpt import GPT, GPTConfig                  # noqa: E402


def torch_generate(torch, F, params, cfg, idx, n_new):
    """Greedy decoding with a KV cache, written directly on the weight tensors."""
    C, nh, L = cfg.n_embd, cfg.n_head, cfg.n_layer
    hs = C // nh
    p = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in params.items()}
    out = idx.clone()
    cache = [None] * L
    tokens = idx
    with torch.inference_mode():
        for _ in range(n_new):
            B, T = tokens.shape
            start = 0 if cache[0] is None else cache[0][0].shape[2]
            x = p["transformer.wte.weight"][tokens] + p["transformer.wpe.weight"][start:start + T]
            for i in range(L):
                pre = f"transformer.h.{i}."
                h = F.layer_norm(x, (C,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])
                q, k, v = F.linear(h, p[pre + "attn.c_attn.weight"],
                                   p[pre + "attn.c_attn.bias"]).split(C, dim=2)
                q = q.view(B, T, nh, hs).transpose(1, 2)                  # (B, nh, T, hs)
                k = k.view(B, T, nh, hs).transpose(1, 2)
                v = v.view(B, T, nh, hs).transpose(1, 2)
                if cache[i] is not None:
                    k = torch.cat([cache[i][0], k], dim=2)                # (B, nh, t, hs)
                    v = torch.cat([cache[i][1], v], dim=2)
                cache[i] = (k, v)
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))   # (B, nh, T, t)
                t = k.shape[2]
                mask = torch.ones(T, t, dtype=torch.bool).triu(1 + t - T)
                att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
                y = (att @ v).transpose(1, 2).reshape(B, T, C)            # (B, T, C)
                x = x + F.linear(y, p[pre + "attn.c_proj.weight"], p[pre + "attn.c_proj.bias"])
                h = F.layer_norm(x, (C,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
                h = F.gelu(F.linear(h, p[pre + "mlp.c_fc.weight"], p[pre + "mlp.c_fc.bias"]),
                           approximate="tanh")
                x = x + F.linear(h, p[pre + "mlp.c_proj.weight"], p[pre + "mlp.c_proj.bias"])
            x = F.layer_norm(x[:, -1:], (C,), p["transformer.ln_f.weight"],
                             p["transformer.ln_f.bias"])
            logits = x @ p["transformer.wte.weight"].T                    # (B, 1, V)
            tokens = logits[:, -1].argmax(-1, keepdim=True)
            out = torch.cat([out, tokens], dim=1)
    return out.numpy()


def numpy_generate(params, cfg, idx, n_new):
    """The greedy cached loop in plain numpy on the same weights: the numpy floor."""
    C, nh, L = cfg.n_embd, cfg.n_head, cfg.n_layer
    hs = C // nh
    p = {k: np.ascontiguousarray(v) for k, v in params.items()}
    B = idx.shape[0]
    cache = [(np.empty((B, nh, n_new, hs), np.float32), np.empty((B, nh, n_new, hs), np.float32))
             for _ in range(L)]
    out, tok = [], idx[:, 0]

    def ln(x, pre):
        xc = x - np.add.reduce(x, axis=-1, keepdims=True) / C
        var = np.einsum("ij,ij->i", xc, xc)[:, None] / C
        xc *= 1.0 / np.sqrt(var + 1e-5)
        xc *= p[pre + ".weight"]
        xc += p[pre + ".bias"]
        return xc

    for t in range(n_new):
        x = p["transformer.wte.weight"][tok] + p["transformer.wpe.weight"][t]      # (B, C)
        for i in range(L):
            pre = f"transformer.h.{i}."
            qkv = ln(x, pre + "ln_1") @ p[pre + "attn.c_attn.weight"].T
            qkv += p[pre + "attn.c_attn.bias"]
            q, k, v = qkv.reshape(B, 3, nh, 1, hs).transpose(1, 0, 2, 3, 4)      # (B, nh, 1, hs)
            kc, vc = cache[i]
            kc[:, :, t:t + 1], vc[:, :, t:t + 1] = k, v
            s = (q * (1.0 / math.sqrt(hs))) @ kc[:, :, :t + 1].swapaxes(-1, -2)  # (B, nh, 1, t)
            s -= np.maximum.reduce(s, axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= np.add.reduce(s, axis=-1, keepdims=True)
            y = (s @ vc[:, :, :t + 1]).reshape(B, C)                           # (B, C)
            y = y @ p[pre + "attn.c_proj.weight"].T
            y += p[pre + "attn.c_proj.bias"]
            x = x + y
            h = ln(x, pre + "ln_2") @ p[pre + "mlp.c_fc.weight"].T
            h += p[pre + "mlp.c_fc.bias"]
            h = 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h ** 3)))
            h = h @ p[pre + "mlp.c_proj.weight"].T
            h += p[pre + "mlp.c_proj.bias"]
            x = x + h
        logits = ln(x, "transformer.ln_f") @ p["transformer.wte.weight"].T           # (B, V)
        tok = logits.argmax(-1)
        out.append(tok)
    return np.concatenate([idx, np.stack(out, axis=1)], axis=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads (default: torch's own, one per core)")
    ap.add_argument("--rev", help="also time this git revision's GPT.generate")
    ap.add_argument("--no-torch", action="store_true", help="leave torch out")
    ap.add_argument("--floor", action="store_true", help="also time the plain numpy loop")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run(args, tmp)


def rev_arm(rev, tmp, params, prompt, n):
    """GPT.generate of git revision `rev` on the same weights (a zero-argument callable)."""
    import importlib
    from bench_versions import PKG, export_revision
    commit = export_revision(rev, tmp)
    tgx_rev = importlib.import_module(PKG)
    gpt = importlib.import_module(f"{PKG}.models.nets.gpt")
    cfg = gpt.GPTConfig(block_size=256, vocab_size=65, n_layer=4, n_head=4, n_embd=128)
    model = gpt.GPT(cfg).eval()
    model.load_state_dict(params)

    def fn():
        with tgx_rev.no_grad():
            return model.generate(tgx_rev.tensor(prompt), n, temperature=0.0).numpy()
    return f"rev {commit}", fn


def run(args, tmp):
    cfg = GPTConfig(block_size=256, vocab_size=65, n_layer=4, n_head=4, n_embd=128)
    tgx.manual_seed(0)
    model = GPT(cfg).eval()
    params = {k: v.numpy() for k, v in model.state_dict().items()}
    prompt = np.zeros((args.batch, 1), dtype=np.int64)
    n = min(args.tokens, cfg.block_size - 1)

    def run_tgx():
        with tgx.no_grad():
            return model.generate(tgx.tensor(prompt), n, temperature=0.0).numpy()

    fns = {"tinygradx": run_tgx}
    if args.torch_threads:
        try:
            import torch
            torch.set_num_threads(args.torch_threads)
        except ImportError:
            pass
    print("# bench_generate\n")
    print(machine_facts(torch_info=not args.no_torch))
    if args.floor:
        fns["numpy floor"] = lambda: numpy_generate(params, cfg, prompt, n)
        print(f"\nsame tokens as the numpy floor: "
              f"{np.array_equal(fns['numpy floor'](), run_tgx())}")
    if args.rev:
        label, fns[label] = rev_arm(args.rev, tmp, params, prompt, n)
        print(f"\nsame tokens as {label}: {np.array_equal(fns[label](), run_tgx())}")
    try:
        if args.no_torch:
            raise ImportError
        import torch
        import torch.nn.functional as F
        tp = torch.from_numpy(prompt)
        fns["torch"] = lambda: torch_generate(torch, F, params, cfg, tp, n)
        same = np.array_equal(fns["torch"](), run_tgx())
        print(f"\nsame tokens as torch: {same}")
    except ImportError:
        print("\ntorch left out or not installed")
    res = ab_compare(fns, pairs=args.pairs, warmup=2, baseline="tinygradx")
    print(f"\n## KV-cached greedy generation, GPT 4x128 (CPU config), batch {args.batch}, "
          f"{n} new tokens\n")
    print("| implementation | tokens/s (median) | time ratio to tinygradx |")
    print("|---|---|---|")
    for name in fns:
        tps = args.batch * n / res["stats"][name]["median"]
        print(f"| {name} | {tps:,.0f} | {format_ratio(res['ratios'][name])} |")


if __name__ == "__main__":
    main()
