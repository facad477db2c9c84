"""nanoGPT's own train.py, unchanged, at its README's CPU settings: its step time under PyTorch
and through tinygradx's look-alike (`python -m tinygradx.compat train.py`), in alternating rounds.

    python bench/bench_nanogpt.py NANOGPT_DIR --rounds 4 --iters 500
    python bench/bench_nanogpt.py NANOGPT_DIR --rounds 1 --iters 2000      # the README's run
    python bench/bench_nanogpt.py NANOGPT_DIR --threads 1                  # one thread each

NANOGPT_DIR is a nanoGPT checkout whose data/shakespeare_char/ holds train.bin, val.bin and
meta.pkl (made by its prepare.py). Its files are copied into a temporary directory and run
there; nothing is written into the checkout. Each round runs the file once on each side, in
a fresh process each, the order swapped every round (the machine is shared: a slow minute
then falls on both sides). A step's time is what train.py itself prints (`iter N: loss X,
time T ms`: the forward, backward and AdamW step of one batch, and the `.item()` that reads
the loss); iteration 0 and the iterations that evaluated first (their time includes the
evaluation) are left out. Printed: per run the median step and the last losses; per round the
ratio look-alike / PyTorch; at the end the medians over the rounds. --threads N sets
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and TINYGRADX_THREADS in both arms' processes (without
it each side runs with its defaults, as a user's run does).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import machine_facts  # noqa: E402

README_CPU = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False",
              "--eval_iters=20", "--log_interval=1", "--block_size=64", "--batch_size=12",
              "--n_layer=4", "--n_head=4", "--n_embd=128", "--lr_decay_iters=2000",
              "--dropout=0.0"]
FILES = ("train.py", "model.py", "configurator.py", "config/train_shakespeare_char.py",
         "data/shakespeare_char/train.bin", "data/shakespeare_char/val.bin",
         "data/shakespeare_char/meta.pkl")
ARMS = {"torch": [sys.executable], "look-alike": [sys.executable, "-m", "tinygradx.compat"]}


def run(arm, workdir, iters, eval_interval, env):
    out_dir = os.path.join(workdir, f"out-{arm}")
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = [*ARMS[arm], "train.py", *README_CPU, f"--max_iters={iters}",
            f"--eval_interval={eval_interval}", f"--out_dir={out_dir}"]
    r = subprocess.run(argv, cwd=workdir, capture_output=True, text=True,
                       env=dict(os.environ, **env))
    if r.returncode != 0:
        raise SystemExit(f"{arm}: train.py failed:\n{r.stdout[-1000:]}\n{r.stderr[-2000:]}")
    steps = {int(m[1]): (float(m[2]), float(m[3])) for m in re.finditer(
        r"^iter (\d+): loss ([\d.]+), time ([\d.]+)ms", r.stdout, re.M)}
    evals = {int(m[1]): (float(m[2]), float(m[3])) for m in re.finditer(
        r"^step (\d+): train loss ([\d.]+), val loss ([\d.]+)", r.stdout, re.M)}
    times = [t for i, (_, t) in steps.items() if i > 0 and i not in evals]
    return statistics.median(times), steps[max(steps)][0], evals[max(evals)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--eval-interval", type=int, default=250, help="train_shakespeare_char's")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    env = {} if a.threads is None else {k: str(a.threads) for k in (
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TINYGRADX_THREADS")}
    os.environ.update(env)                      # the facts below then report them too
    print(machine_facts())
    print("command per arm: [python -m tinygradx.compat] train.py " + " ".join(README_CPU)
          + f" --max_iters={a.iters} --eval_interval={a.eval_interval}", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        for f in FILES:
            os.makedirs(os.path.dirname(os.path.join(workdir, f)), exist_ok=True)
            shutil.copy(os.path.join(a.checkout, f), os.path.join(workdir, f))
        medians = {arm: [] for arm in ARMS}
        ratios = []
        for rnd in range(a.rounds):
            order = list(ARMS) if rnd % 2 == 0 else list(ARMS)[::-1]
            for arm in order:
                step, loss, (train, val) = run(arm, workdir, a.iters, a.eval_interval, env)
                medians[arm].append(step)
                print(f"round {rnd + 1} {arm:10s} step {step:7.2f} ms (median), last iter loss "
                      f"{loss:.4f}, last eval train {train:.4f} val {val:.4f}", flush=True)
            ratios.append(medians["look-alike"][-1] / medians["torch"][-1])
            print(f"round {rnd + 1} look-alike / torch {ratios[-1]:.2f}", flush=True)
    for arm, ms in medians.items():
        print(f"{arm}: {statistics.median(ms):.2f} ms [{min(ms):.2f}, {max(ms):.2f}]")
    print(f"look-alike / torch: {statistics.median(ratios):.2f} "
          f"[{min(ratios):.2f}, {max(ratios):.2f}] over {len(ratios)} rounds")


if __name__ == "__main__":
    main()
