"""tinygradx.perf: the profile table, and the allocator setting changes no result."""
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STEP = """
import json, numpy as np, tinygradx as tgx
from tinygradx.models.nets.gpt import GPT, GPTConfig
tgx.process.keep_freed_memory()   # what the Trainer and the CLI do
tgx.manual_seed(0)
m = GPT(GPTConfig(block_size=8, vocab_size=11, n_layer=1, n_head=2, n_embd=16))
opt = m.configure_optimizers(weight_decay=0.1, lr=1e-2)
rng = np.random.default_rng(0)
losses = []
for _ in range(3):
    x, y = rng.integers(0, 11, (2, 8)), rng.integers(0, 11, (2, 8))
    _, loss = m(tgx.tensor(x), tgx.tensor(y))
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
print(json.dumps({"tuned": tgx.process.MALLOC_TUNED, "losses": losses,
                  "w": float(np.abs(m.transformer.wte.weight.detach().numpy()).sum())}))
"""


def _run(env_value):
    env = dict(os.environ, TINYGRADX_MALLOC_TUNE=env_value)
    out = subprocess.run([sys.executable, "-c", STEP], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_allocator_setting_changes_no_result():
    on, off = _run("1"), _run("0")
    assert off["tuned"] is False
    assert on["losses"] == off["losses"] and on["w"] == off["w"]


def test_profile_counts_every_op_type_forward_and_backward():
    x = tgx.randn(4, 8, requires_grad=True)
    with tgx.profile() as prof:
        F.gelu(x @ x.T).sum().backward()
    totals = prof.totals()
    assert set(totals) == {"matmul", "permute", "gelu", "sum"}
    fwd, bwd, calls = totals["gelu"]
    assert calls == 1 and fwd > 0 and bwd > 0
    table = prof.table()
    assert "gelu" in table and "ops total" in table and "wall" in table
    # the observers are gone after the block: the hot path is back to one flag
    assert not tgx.autograd.STATE.observers and not tgx.autograd.STATE.backward_observers
    assert not tgx.autograd.STATE.instrumented


def test_keep_freed_memory_reports_whether_it_applied():
    assert tgx.process.keep_freed_memory() in (True, False)
    assert isinstance(np.zeros(3), np.ndarray)


# ---- the allocator setting at the first backward: done once, printed never ----------------

FIRST_BACKWARD = """
import sys, tinygradx as tgx
if "refuse" in sys.argv: tgx.process.set_auto_malloc(False)
if "explicit" in sys.argv: tgx.process.keep_freed_memory()
before = tgx.process.MALLOC_TUNED
x = tgx.randn(3, requires_grad=True)
(x * x).sum().backward()
tgx.grad((x * x).sum(), x)
(x * x).sum().backward()
print(before, tgx.process.MALLOC_TUNED)
print("heap" in tgx.process.report())
"""


def _first_backward(*args, malloc_env="1"):
    env = dict(os.environ, TINYGRADX_MALLOC_TUNE=malloc_env)
    out = subprocess.run([sys.executable, "-c", FIRST_BACKWARD, *args], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert out.stderr == "", out.stderr                  # a first backward prints nothing
    before, after, reported = out.stdout.split()
    return (before, after), reported == "True"


def test_first_backward_keeps_freed_memory_silently_and_reports_it():
    (before, after), reported = _first_backward()
    glibc = after == "True"             # other C libraries: nothing applied, nothing reported
    assert before == "False" and reported == glibc


def test_first_backward_setting_can_be_refused():
    for args, env in (((), "0"), (("refuse",), "1")):
        (before, after), reported = _first_backward(*args, malloc_env=env)
        assert (before, after) == ("False", "False") and not reported


def test_an_explicit_call_is_silent():
    _first_backward("explicit")


# ---- the first kernel build says so; a failed one says why (a fake build, no compiler) -----

@pytest.fixture
def fresh_kernels(monkeypatch, tmp_path, caplog):
    from tinygradx.fast import kernels, process
    monkeypatch.setenv("TINYGRADX_CACHE_DIR", str(tmp_path))
    for name, value in (("_module", None), ("_compiled", {}), ("ENABLED", True),
                        ("BUILD_ERROR", None)):
        monkeypatch.setattr(kernels, name, value)
    monkeypatch.setattr(process, "DONE", {})
    caplog.set_level(logging.INFO, logger="tinygradx")
    return kernels


def test_first_kernel_build_says_what_why_how_long_once(fresh_kernels, tmp_path, caplog):
    kernels = fresh_kernels
    builds = []

    def fake_build(where, name):
        builds.append(name)
        (tmp_path / f"{name}.py").write_text("FAKE = 1\n")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "_build", fake_build)
        assert kernels._load().FAKE == 1
        kernels._module = None                              # a second load finds the cache
        assert kernels._load().FAKE == 1
    assert len(builds) == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "tinygradx"]
    assert len(lines) == 1
    assert all(w in lines[0] for w in ("building", "numba", "C compiler", "pool.c",
                                       "about 20 s", "once", "without", str(tmp_path)))
    assert kernels.ENABLED and kernels.BUILD_ERROR is None


def test_failed_kernel_build_records_why_and_falls_back(fresh_kernels, caplog, monkeypatch):
    kernels = fresh_kernels

    def failing_build(where, name):
        raise subprocess.CalledProcessError(1, ["build"], stderr="Traceback...\n"
                                            "numba.core.errors.LoweringError: no compiler\n")

    monkeypatch.setattr(kernels, "_build", failing_build)
    assert kernels._load() is None and kernels._load() is None
    assert not kernels.ENABLED
    assert kernels.BUILD_ERROR == ("the build exited with 1: numba.core.errors.LoweringError: "
                                   "no compiler")
    lines = [r.getMessage() for r in caplog.records if r.name == "tinygradx"]
    assert len(lines) == 2                                  # "compiling ..." then why it failed
    assert kernels.BUILD_ERROR in lines[1] and "numpy code" in lines[1]
    from tinygradx.fast import dispatch
    x = np.ones((4, 8), np.float32)                         # the compiled versions decline
    assert dict(dispatch.explain("softmax_rows", x, np.empty_like(x), -1))["compiled"] \
        .startswith("the kernels backend is off")


# ---- FLOPs per step and what the graph holds for backward: hand counts ---------------------

def _linear_relu(x_grad=False, dtype=np.float32):
    tgx.manual_seed(0)
    model = tgx.nn.Sequential(tgx.nn.Linear(3, 4), tgx.nn.ReLU())
    if dtype == np.float64:
        model = model.double()
    x = tgx.tensor(np.ones((2, 3), dtype), requires_grad=x_grad)
    return model(x).reshape(-1).sum(), model


def test_step_flops_of_linear_relu_sum_by_hand():
    # forward x W^T: 2 * (2 rows * 3 in * 4 out) = 48; backward dW = g^T x: 48 more, and
    # dX = g W another 48 only when x needs a gradient; ReLU, reshape and sum count nothing
    loss, _ = _linear_relu()
    assert tgx.perf.step_flops(loss) == 96
    loss, _ = _linear_relu(x_grad=True)
    assert tgx.perf.step_flops(loss) == 144
    a = tgx.randn(5, 3, 4, requires_grad=True)
    b = tgx.randn(4, 6, requires_grad=True)
    assert tgx.perf.step_flops((a @ b).sum()) == 3 * (2 * 5 * 3 * 4 * 6)
    loss.backward()
    with pytest.raises(RuntimeError, match="before backward"):
        tgx.perf.step_flops(loss)


def test_step_flops_of_a_gpt_is_the_mfu_formula():
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    B, T, V, L, C = 2, 8, 11, 2, 16
    for fused in (True, False):
        tgx.manual_seed(0)
        m = GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=L, n_head=2, n_embd=C,
                          fused_attention=fused))
        idx = tgx.tensor(np.zeros((B, T), np.int64))
        _, loss = m(idx, idx)
        weights = L * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + V * C    # head tied to wte
        assert tgx.perf.step_flops(loss) == 6 * weights * B * T + 12 * L * T * C * B * T


def test_saved_tensors_report_by_hand():
    loss, model = _linear_relu(dtype=np.float64)
    r = tgx.perf.saved_tensors_report(loss)
    # held for backward: the Linear's output (2x4 float64 = 64 B; the reshape's output is a
    # view of the ReLU's, counted once) and the ReLU's output (64 B); leaves: x (2x3 = 48 B),
    # W (4x3 = 96 B), b (4 = 32 B)
    assert r.activations == 64 + 64 and r.leaves == 48 + 96 + 32
    assert dict(r.by_op) == {"linear": 0, "relu": 128, "reshape": 0, "sum": 0}
    assert r.by_module["1"] == 128 and r.by_module["0"] == 0
    assert "relu" in r.table() and "0.1 KiB" in r.table()


def test_peak_flops_is_measured_once():
    first = tgx.perf.peak_flops()
    assert first > 0 and tgx.perf.peak_flops() == first
    assert "GFLOP/step" in tgx.perf.flops_line(2e9, 1.0)


def test_train_log_has_flops_and_mfu(tmp_path, capsys):
    from tinygradx.models.training.config import TrainConfig
    from tinygradx.models.training.trainer import Trainer
    cfg = TrainConfig(task="reverse", n_layer=1, d_model=16, n_head=2, max_steps=2,
                      eval_interval=2, n_train=50, out_dir=str(tmp_path / "run"),
                      progress=False)
    Trainer(cfg, log=lambda *a: None).train()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert all(r["flops"] > 0 and r["flop_per_s"] > 0 and 0 < r["mfu"] for r in rows)
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step 2")][0]
    assert "GFLOP/step" in line and "GFLOP/s" in line and "MFU" in line
