"""The same inputs give the same bits whatever ran before in the process.

Which version of a function runs (a compiled loop, the C pool, numpy) is decided from the call
and the settings alone (tinygradx/fast/dispatch.py), never from what the process did before:
the kernels' build and the pool's start happen the first time any call chooses them. So a run
resumed from its checkpoint in a new process takes the straight run's paths step for step, and
its weights are the straight run's bit for bit, with the compiled kernels and the pool on (two
OpenBLAS threads here, as a user's machine has; the rest of the suite runs one).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAKESPEARE = os.path.join(REPO, "..", "shared", "data", "tinyshakespeare.txt")
MODEL = ["--task", "chars", "--n_layer", "2", "--d_model", "128", "--n_head", "4",
         "--block_size", "64", "--batch_size", "12", "--eval_interval", "0",
         "--health_interval", "0", "--progress", "false"]


def train(*argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYGRADX_")}
    env.update(OPENBLAS_NUM_THREADS="2", PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-m", "tinygradx", "train", *map(str, argv)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def weights(run_dir):
    with np.load(os.path.join(run_dir, "checkpoint.npz"), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.slow
def test_a_resumed_run_equals_the_straight_run_bit_for_bit(tmp_path):
    text = tmp_path / "text.txt"
    if os.path.exists(SHAKESPEARE):
        with open(SHAKESPEARE, encoding="utf-8") as f:
            text.write_text(f.read()[:200_000], encoding="utf-8")
    else:                                   # the shared data is not here: a text of our own
        rng = np.random.default_rng(0)
        words = ["the", "king", "shall", "speak", "of", "love", "and", "war", "to", "thee"]
        text.write_text(" ".join(rng.choice(words, 30_000)), encoding="utf-8")
    straight, first = tmp_path / "straight", tmp_path / "resumed"
    train(*MODEL, "--text", text, "--max_steps", 22, "--out_dir", straight)
    train(*MODEL, "--text", text, "--max_steps", 10, "--out_dir", first)
    train("--resume", first / "checkpoint.npz", "--max_steps", 22)
    a, b = weights(straight), weights(first)
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k].dtype != object and not np.array_equal(a[k], b[k])]
    assert not differ, f"{len(differ)} of {len(a)} arrays differ, e.g. {differ[:3]}"
