"""A PyTorch training loop for a nanoGPT-style model file, run unchanged on PyTorch or tinygradx.

    python bench/gpt_loop.py --steps 10                        # PyTorch
    python -m tinygradx.compat bench/gpt_loop.py --steps 10    # the same file on tinygradx
    ... --serve                                                # bench_floor.py's arms

The model is tests/compat_models/gpt.py (a GPT written for PyTorch: a fused qkv Linear, a
causal `tril` buffer and masked_fill, F.softmax, nn.GELU, weight tying, configure_optimizer
with AdamW), at nanoGPT's CPU config (V 65, 4 layers, 4 heads, C 128, T 64, B 12). Nothing
here knows about tinygradx. bench/bench_floor.py runs this file in a fresh process either way
("compat" and "torch-script" arms) and drives it over stdin (--serve: one step per line read,
the loss written back), so the two are timed in the same rounds.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests",
                                "compat_models"))
from gpt import GPT, GPTConfig  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--serve", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=65, context=64, n_layer=4, n_head=4, d_model=128, dropout=0.0)
    model = GPT(cfg)
    model.train()
    opt = model.configure_optimizer(lr=1e-3, weight_decay=0.1)
    idx = torch.randint(0, cfg.vocab_size, (12, cfg.context))
    targets = torch.randint(0, cfg.vocab_size, (12, cfg.context))

    def step():
        _, loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    if a.serve:
        print("ready", flush=True)
        for _ in sys.stdin:                     # one step per line; EOF ends the process
            print(repr(step()), flush=True)
        return
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        print(f"loss {loss:.4f}  {(time.perf_counter() - t0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
