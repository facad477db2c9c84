"""nanoGPT's own train.py and sample.py, unchanged, through the look-alike at its README's CPU
settings on Tiny Shakespeare (characters): train, evaluate, save, resume, sample; and the same
train.py under PyTorch from the same weights and batches, the losses held equal.

Needs a nanoGPT checkout: NANOGPT_DIR=/path/to/nanoGPT (its train.py, model.py, sample.py,
configurator.py, config/train_shakespeare_char.py, data/shakespeare_char/prepare.py) and the
text, either in the checkout as data/shakespeare_char/input.txt or given by TINYSHAKESPEARE=path
(prepare.py would download it). Nothing is written into the checkout: its files are copied
into a temporary directory and run there. Skipped, with the reason, without them.

The runs are short (20 iterations, evaluation every 10); bench/RESULTS.md has the step times
of the same train.py through the look-alike and on PyTorch (bench/bench_nanogpt.py).
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.environ.get("NANOGPT_DIR")
FILES = ("train.py", "model.py", "sample.py", "configurator.py",
         os.path.join("config", "train_shakespeare_char.py"),
         os.path.join("data", "shakespeare_char", "prepare.py"))
README_CPU = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False",
              "--eval_iters=20", "--log_interval=1", "--block_size=64", "--batch_size=12",
              "--n_layer=4", "--n_head=4", "--n_embd=128", "--lr_decay_iters=2000",
              "--dropout=0.0"]

pytestmark = pytest.mark.slow


def _text():
    inside = CHECKOUT and os.path.join(CHECKOUT, "data", "shakespeare_char", "input.txt")
    if inside and os.path.isfile(inside):
        return inside
    given = os.environ.get("TINYSHAKESPEARE")
    return given if given and os.path.isfile(given) else None


def _missing():
    if not CHECKOUT:
        return "NANOGPT_DIR is not set (the path of a nanoGPT checkout)"
    absent = [f for f in FILES if not os.path.isfile(os.path.join(CHECKOUT, f))]
    if absent:
        return f"NANOGPT_DIR={CHECKOUT} lacks {', '.join(absent)}"
    if _text() is None:
        return ("no Tiny Shakespeare text: put it at data/shakespeare_char/input.txt in the "
                "checkout or set TINYSHAKESPEARE=path (prepare.py would download it)")
    return ""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    why = _missing()
    if why:
        pytest.skip(why)
    pytest.importorskip("requests", reason="nanoGPT's prepare.py imports requests")
    d = tmp_path_factory.mktemp("nanogpt")
    for f in FILES:
        os.makedirs(os.path.dirname(os.path.join(d, f)) or d, exist_ok=True)
        shutil.copy(os.path.join(CHECKOUT, f), os.path.join(d, f))
    shutil.copy(_text(), os.path.join(d, "data", "shakespeare_char", "input.txt"))
    run(d, [sys.executable, os.path.join("data", "shakespeare_char", "prepare.py")])
    return d


def run(cwd, argv, env=None):
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=1800,
                         env=dict(os.environ, **(env or {})))
    assert out.returncode == 0, f"{' '.join(argv)} failed:\n{out.stdout[-1500:]}\n" \
                                f"{out.stderr[-3000:]}"
    return out.stdout


def losses(stdout):
    """{iter: loss} of train.py's `iter N: loss X` lines and {step: (train, val)} of its
    evaluations."""
    iters = {int(m[1]): float(m[2]) for m in re.finditer(r"^iter (\d+): loss ([\d.]+)", stdout,
                                                          re.M)}
    evals = {int(m[1]): (float(m[2]), float(m[3])) for m in re.finditer(
        r"^step (\d+): train loss ([\d.]+), val loss ([\d.]+)", stdout, re.M)}
    return iters, evals


LOOK = [sys.executable, "-m", "tinygradx.compat"]


def test_train_evaluate_save_and_resume_through_the_lookalike(workdir):
    out_dir = os.path.join(workdir, "out-look")
    first = run(workdir, [*LOOK, "train.py", *README_CPU, "--max_iters=20",
                          "--eval_interval=10", "--eval_iters=4", f"--out_dir={out_dir}"])
    iters, evals = losses(first)
    assert sorted(iters) == list(range(21)) and sorted(evals) == [0, 10, 20]
    assert iters[20] < iters[0] - 0.3, iters            # it learns
    assert "saving checkpoint" in first and os.path.isfile(os.path.join(out_dir, "ckpt.pt"))
    again = run(workdir, [*LOOK, "train.py", *README_CPU, "--max_iters=30",
                          "--eval_interval=10", "--eval_iters=4", f"--out_dir={out_dir}",
                          "--init_from=resume"])
    iters2, evals2 = losses(again)
    assert min(iters2) == 20 and max(iters2) == 30, "the resumed run starts where it stopped"
    assert evals2[20][1] == pytest.approx(evals[20][1], abs=0.1)    # other batches, same model


def test_sample_through_the_lookalike(workdir):
    pytest.importorskip("tiktoken", reason="nanoGPT's sample.py imports tiktoken")
    out_dir = os.path.join(workdir, "out-sample")
    run(workdir, [*LOOK, "train.py", *README_CPU, "--max_iters=10", "--eval_interval=10",
                  "--eval_iters=2", f"--out_dir={out_dir}"])
    text = run(workdir, [*LOOK, "sample.py", f"--out_dir={out_dir}", "--device=cpu",
                         "--num_samples=2", "--max_new_tokens=40"])
    assert text.count("---------------") == 2 and "Loading meta from" in text


def test_the_losses_equal_pytorchs_from_the_same_weights_and_batches(workdir):
    """Both runs resume from one checkpoint that PyTorch's torch.save wrote (the look-alike's
    torch.load reads it); PyTorch's torch.randint draws are replayed in the look-alike's run
    (tests/compat/nanogpt_run.py), so the batches are the same and only the arithmetic
    differs: the losses printed (4 decimals) are equal and the weights after 20 steps agree to
    float32's rounding."""
    torch = pytest.importorskip("torch")
    driver = os.path.join(HERE, "nanogpt_run.py")
    t_dir, m_dir = os.path.join(workdir, "cmp-torch"), os.path.join(workdir, "cmp-look")
    shape = ["--n_layer=4", "--n_head=4", "--n_embd=128", "--block_size=64"]
    run(workdir, [sys.executable, driver, "init", t_dir, m_dir, *shape])
    args = ["train.py", *README_CPU, "--max_iters=20", "--eval_interval=10", "--eval_iters=4",
            "--init_from=resume", "--always_save_checkpoint=True"]
    draws = os.path.join(workdir, "draws.npy")
    theirs = run(workdir, [sys.executable, driver, "record", draws, *args, f"--out_dir={t_dir}"],
                 env={"OMP_NUM_THREADS": "1"})
    mine = run(workdir, [sys.executable, driver, "replay", draws, *args, f"--out_dir={m_dir}"])
    assert losses(mine) == losses(theirs)
    import tinygradx
    want = torch.load(os.path.join(t_dir, "ckpt.pt"), map_location="cpu", weights_only=False)
    got = tinygradx.load(os.path.join(m_dir, "ckpt.pt"))
    assert got["iter_num"] == want["iter_num"] == 20
    for k, v in got["model"].items():
        np.testing.assert_allclose(np.asarray(v), want["model"][k].numpy(), rtol=1e-4,
                                   atol=2e-5, err_msg=k)
