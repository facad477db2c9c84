"""Memory of a training process: peak RSS, RSS over many steps, and reference cycles.

    python bench/bench_memory.py [--steps 1000] [--every 100]

Trains the GPT at nanoGPT's shakespeare-char CPU config (vocab 65, 4 layers, 4 heads,
n_embd 128, block 64, batch 12, AdamW) on random tokens and prints:
  - VmRSS every --every steps and the growth from the first sample to the last (flat means
    no leak: the graph of each step is freed when the loss goes out of scope);
  - peak RSS (VmHWM) of the whole process, against the 150 MB target;
  - what gc.collect() finds after a step with the cyclic collector disabled: 0 means the
    graph held no reference cycles, so reference counting alone freed it.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys


import _blas_env  # noqa: F401,E402  (before numpy: see bench/_blas_env.py)

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import tinygradx as tgx                                   # noqa: E402
from harness import machine_facts                         # noqa: E402
from tinygradx.models.nets.gpt import GPT, GPTConfig           # noqa: E402


def _status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--every", type=int, default=100)
    args = ap.parse_args(argv)
    print("# bench_memory\n")
    print(machine_facts(torch_info=False))
    tgx.manual_seed(0)
    model = GPT(GPTConfig(block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128))
    opt = model.configure_optimizers(weight_decay=0.1, lr=1e-3, betas=(0.9, 0.99))
    rng = np.random.default_rng(0)

    def step():
        x = rng.integers(0, 65, (12, 64))
        y = rng.integers(0, 65, (12, 64))
        _, loss = model(tgx.tensor(x), tgx.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    gc.collect()
    gc.disable()                       # any cycle would now survive until collect() below
    step()
    found = gc.collect()
    gc.enable()
    print(f"\ngc.collect() after one step with the collector disabled: {found} objects "
          f"(0 = no reference cycles)\n")
    print("| step | VmRSS MB |")
    print("|---|---|")
    samples = []
    for i in range(1, args.steps + 1):
        step()
        if i % args.every == 0 or i == 1:
            rss = _status_mb("VmRSS")
            samples.append(rss)
            print(f"| {i} | {rss:.1f} |")
    print(f"\nRSS growth from step 1 to step {args.steps}: {samples[-1] - samples[0]:+.1f} MB; "
          f"from step {args.every} on: {samples[-1] - samples[1]:+.1f} MB")
    print(f"peak RSS (VmHWM): {_status_mb('VmHWM'):.1f} MB (target <= 150 MB)")


if __name__ == "__main__":
    main()
