"""tinygradx.perf: the profile table, and the allocator setting changes no result."""
import json
import os
import subprocess
import sys

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
                  "w": float(np.abs(m.transformer.wte.weight.numpy()).sum())}))
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
