"""Run nanoGPT's own train.py under PyTorch and under the look-alike from the same weights and
the same batches, without changing its files (tests/compat/test_nanogpt.py, bench/RESULTS.md).

Run from a nanoGPT checkout (train.py, model.py, configurator.py, data/shakespeare_char/ with
train.bin, val.bin and meta.pkl made by its prepare.py):

    python nanogpt_run.py init OUT_TORCH OUT_LOOK --n_layer=4 --n_head=4 --n_embd=128 \\
        --block_size=64
        # one GPT of model.py under PyTorch (torch.manual_seed(1337), its own init) and a fresh
        # AdamW, written by torch.save as a resumable checkpoint, the same file in both
        # directories: both runs resume from it
    python nanogpt_run.py record DRAWS.npy train.py ARGS...
        # train.py under PyTorch; every torch.randint draw (the batches' offsets) is kept
    python nanogpt_run.py replay DRAWS.npy train.py ARGS...
        # train.py through the look-alike, whose torch.randint hands out those draws in order

train.py draws its batches with torch.randint, and the two libraries' generators draw other
numbers; replaying PyTorch's draws feeds both runs the same batches, so with --init_from=resume
from the one checkpoint the runs differ only in their arithmetic. Both scripts run unchanged
(runpy, as `python train.py` and `python -m tinygradx.compat train.py` run them).
"""
from __future__ import annotations

import os
import runpy
import sys

import numpy as np


def _arg(args, key, default):
    for a in args:
        if a.startswith(f"--{key}="):
            return type(default)(a.split("=", 1)[1])
    return default


def init(out_torch, out_look, args):
    """Write the starting checkpoint (see the module docstring): torch.save's file, the same
    bytes in both directories (the look-alike's torch.load reads PyTorch's format)."""
    import shutil

    import torch

    import tinygradx.compat as compat
    model_args = dict(n_layer=_arg(args, "n_layer", 4), n_head=_arg(args, "n_head", 4),
                      n_embd=_arg(args, "n_embd", 128), block_size=_arg(args, "block_size", 64),
                      bias=False, vocab_size=65, dropout=0.0)
    opt_args = (0.1, 1e-3, (0.9, 0.99), "cpu")          # train_shakespeare_char's AdamW
    theirs = compat.load_module("model.py", pytorch=True)
    torch.manual_seed(1337)
    model = theirs.GPT(theirs.GPTConfig(**model_args))
    optimizer = model.configure_optimizers(*opt_args)
    for d in (out_torch, out_look):
        os.makedirs(d, exist_ok=True)
    path = os.path.join(out_torch, "ckpt.pt")
    torch.save(dict(model=model.state_dict(), optimizer=optimizer.state_dict(),
                    model_args=model_args, iter_num=0, best_val_loss=1e9,
                    config={"dataset": "shakespeare_char"}), path)
    shutil.copyfile(path, os.path.join(out_look, "ckpt.pt"))


def record(draws_path, script, argv):
    """train.py under PyTorch, keeping each torch.randint draw as (high, values...)."""
    import torch
    kept = []
    randint = torch.randint

    def recording(high, size, *a, **kw):
        out = randint(high, size, *a, **kw)
        kept.append([high, *out.tolist()])
        return out
    torch.randint = recording
    try:
        _run(script, argv)
    finally:
        torch.randint = randint
        np.save(draws_path, np.array(kept, dtype=np.int64), allow_pickle=False)


def replay(draws_path, script, argv):
    """train.py through the look-alike, its torch.randint replaying the recorded draws."""
    import tinygradx.compat as compat
    draws = iter(np.load(draws_path, allow_pickle=False))
    look = compat.install()

    def replaying(high, size, *a, **kw):
        row = next(draws)
        if int(row[0]) != high or len(row) - 1 != int(np.prod(size)):
            raise RuntimeError(f"replay: train.py asked torch.randint({high}, {size}), the "
                               f"recorded draw was of {int(row[0])} and {len(row) - 1} values")
        return look.tensor(row[1:].reshape(size))
    look.randint = replaying
    _run(script, argv)


def _run(script, argv):
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


def main(argv):
    verb, rest = argv[0], argv[1:]
    if verb == "init":
        init(rest[0], rest[1], rest[2:])
    elif verb == "record":
        record(rest[0], rest[1], rest[2:])
    elif verb == "replay":
        replay(rest[0], rest[1], rest[2:])
    else:
        raise SystemExit(f"nanogpt_run.py: unknown verb {verb!r} (init, record, replay)")


if __name__ == "__main__":
    main(sys.argv[1:])
