"""The same inputs give the same bits whatever ran before in the process.

Which version of a function runs (a compiled loop, the C pool, numpy) is decided from the call
and the settings alone (tinygradx/fast/dispatch.py), never from what the process did before:
the kernels' build and the pool's start happen the first time any call chooses them. So a run
resumed from its checkpoint in a new process takes the straight run's paths step for step, and
its weights are the straight run's bit for bit, with the compiled kernels and the pool on (two
OpenBLAS threads here, as a user's machine has; the rest of the suite runs one).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHAKESPEARE = os.path.join(REPO, "..", "shared", "data", "tinyshakespeare.txt")
MODEL = ["--task", "chars", "--n_layer", "2", "--d_model", "128", "--n_head", "4",
         "--block_size", "64", "--batch_size", "12", "--eval_interval", "1000",
         "--health_interval", "0", "--progress", "false"]


DRIVER = ("import sys\n"
          "from tinygradx.models.apps.cli import main\n"
          "code = main(sys.argv[1:])\n"
          "from tinygradx.fast import kernels, pool\n"
          "print('kernels', kernels.ENABLED, '|', pool.status())\n"
          "sys.exit(code)\n")


def train(*argv):
    """`tinygradx train ARGV` in a new process with two OpenBLAS threads; what it said of the
    kernels and the pool at its end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYGRADX_")}
    env.update(OPENBLAS_NUM_THREADS="2", PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-c", DRIVER, "train", *map(str, argv)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def weights(run_dir):
    """Every array of a run's checkpoint, and its metadata without the run's own directory."""
    with np.load(os.path.join(run_dir, "checkpoint.npz"), allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files if k != "__meta__"}
        meta = json.loads(f["__meta__"].tobytes().decode("utf-8"))
    meta["meta"]["config"].pop("out_dir")
    return arrays, meta


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
    said = train(*MODEL, "--text", text, "--max_steps", 22, "--out_dir", straight)
    train(*MODEL, "--text", text, "--max_steps", 10, "--out_dir", first)
    train("--resume", first / "checkpoint.npz", "--max_steps", 22)
    (a, meta_a), (b, meta_b) = weights(straight), weights(first)
    assert a.keys() == b.keys() and meta_a == meta_b
    differ = [k for k in a if not np.array_equal(a[k], b[k])]
    assert not differ, f"{len(differ)} of {len(a)} arrays differ, e.g. {differ[:3]} ({said})"
    from tinygradx.fast import kernels
    if kernels.ENABLED:                     # CI's main run: the paths this test is about ran
        assert said.startswith("kernels True | on:"), said
