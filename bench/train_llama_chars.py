"""Tiny Shakespeare, character level: the LLaMA-style GPT against the Pre-LN GPT, same recipe.

    python bench/train_llama_chars.py --text PATH/tinyshakespeare.txt --model llama
    python bench/train_llama_chars.py --text PATH/tinyshakespeare.txt --model gpt

Both runs are `tinygradx train --task chars` (the Trainer with the task's defaults: nanoGPT's
CPU config, 4 layers, 4 heads, n_embd 128, block 64, batch 12, 2,000 steps, lr 1e-3 cosine to
1e-4, warmup 100, dropout 0, beta2 0.99, weight decay 0.1, validation loss over 20 batches every
250 steps). Only the model differs: `--model llama` adds the switches of
`tinygradx train --norm rmsnorm --pos rope --mlp swiglu --no-bias` (RMSNorm, RoPE, SwiGLU, no
biases; --n_kv_head for grouped-query attention) at the same sizes; `--model gpt` is the Pre-LN
GPT. Prints the validation curve, the final loss and the wall time.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tinygradx.models.training.trainer import TrainConfig, Trainer  # noqa: E402

LLAMA = dict(norm="rmsnorm", pos="rope", mlp="swiglu", bias=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--text", required=True, help="the training text (Tiny Shakespeare)")
    ap.add_argument("--model", choices=["llama", "gpt"], default="llama")
    ap.add_argument("--n_kv_head", type=int, default=0)
    ap.add_argument("--max_steps", type=int, default=2000)
    ap.add_argument("--out_dir", default=None)
    args = ap.parse_args(argv)
    switches = dict(LLAMA, n_kv_head=args.n_kv_head) if args.model == "llama" else {}
    cfg = TrainConfig.for_task("chars", text=args.text, max_steps=args.max_steps,
                               out_dir=args.out_dir or f"runs/chars_{args.model}",
                               progress=False, **switches)
    trainer = Trainer(cfg)
    print(f"model {args.model}: {trainer.model.num_parameters():,} parameters; "
          f"{trainer.model.config}")
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    curve = [(r["step"], r["val_loss"]) for r in trainer.metrics if "val_loss" in r]
    print("val loss: " + " · ".join(f"{s}: {v:.3f}" for s, v in curve))
    print(f"final val loss {curve[-1][1]:.4f} at step {curve[-1][0]}; wall {wall:.0f} s, "
          f"CPU {cpu:.0f} s, {cfg.max_steps / wall:.1f} steps/s")


if __name__ == "__main__":
    main()
