"""The training loop (models/training/trainer.py): every task learns, determinism, resumable
checkpoints, checkpoint errors, Ctrl-C, the padding-blind loss, the masks and the metrics log.

Tiny models throughout (d_model 32, one layer, small batches), so the whole file takes seconds.
"""
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import io
from tinygradx.models.tasks import BOS, EOS, IGNORE, PAD, pad_batch
from tinygradx.models.training.checkpoints import flatten
from tinygradx.models.training.config import TrainConfig, config_from_args
from tinygradx.models.training.trainer import Trainer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

def _quiet(*args, **kwargs):
    pass


_SUBJECTS = [("I", "Je"), ("You", "Tu"), ("We", "Nous"), ("They", "Ils")]
_VERBS = [("go", "vais"), ("run", "cours"), ("stop", "arrête"), ("wait", "attends"),
          ("eat", "mange"), ("sleep", "dors"), ("come", "viens"), ("look", "regarde")]


def write_tsv(path):
    """A small Tatoeba-style file: source TAB target TAB attribution, accents and punctuation."""
    lines = [f"{s} {v} now.\t{fs} {fv} maintenant !\tCC-BY 2.0 (France) #{i}"
             for i, ((s, fs), (v, fv)) in enumerate((a, b) for a in _SUBJECTS for b in _VERBS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def write_text(path):
    """A small UTF-8 text for the chars task (a few distinct characters, some repetition)."""
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "cat"]
    rng = np.random.default_rng(0)
    text = "\n".join(" ".join(rng.choice(words, size=8)) + "." for _ in range(120))
    path.write_text(text, encoding="utf-8")
    return str(path)


def tiny(tmp_path, task="copy", **kw):
    """A TrainConfig small enough for a unit test; task files are written into tmp_path."""
    cfg = dict(task=task, d_model=32, n_head=2, n_layer=1, batch_size=16, n_train=400,
               block_size=16, dropout=0.0, lr=1e-2, schedule="constant", warmup=5,
               max_steps=40, eval_interval=10**6, eval_batches=2, eval_examples=8,
               progress=False, out_dir=str(tmp_path / f"run_{task}"))
    if task == "tsv":
        cfg["path"] = write_tsv(tmp_path / "pairs.tsv")
    if task == "chars":
        cfg["text"] = write_text(tmp_path / "text.txt")
    cfg.update(kw)
    return TrainConfig(**cfg)


def weights(trainer):
    return {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}


def assert_same_weights(a, b, atol=1e-6):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        np.testing.assert_allclose(wa[k], wb[k], rtol=0, atol=atol, err_msg=k)


def vocab_size(trainer):
    return trainer.task.vocab_size if trainer.lm else len(trainer.task.tgt_vocab)


# ------------------------------------------------------------------------------------------
# every task learns something in seconds
# ------------------------------------------------------------------------------------------

# task -> (steps, overrides, the largest allowed mean loss of the last 10 steps as a fraction
# of the uniform baseline log V; measured values are 0.6-0.8 of these bounds). copy and
# reverse need attention to line up, so they get more steps; add's answer digits stay near
# random until the carries are learnt (its top digit, 0 or 1, is learnt at once).
LEARN = {
    "copy": (60, {}, 0.7),
    "reverse": (60, {}, 0.75),
    "sort": (40, {}, 0.45),
    "numbers": (40, {}, 0.55),
    "numbers_zh": (40, {}, 0.55),
    "dates": (40, {}, 0.55),
    "tsv": (30, {}, 0.2),
    "add": (40, {"batch_size": 64, "lr": 3e-2}, 0.8),
    "chars": (40, {}, 0.5),
}


@pytest.mark.parametrize("task", list(LEARN))
def test_short_run_beats_uniform_baseline(tmp_path, task):
    steps, over, frac = LEARN[task]
    cfg = dict(dict(batch_size=32, max_steps=steps), **over)
    trainer = Trainer(tiny(tmp_path, task, **cfg), log=_quiet)
    baseline = math.log(vocab_size(trainer))
    losses = [trainer.train_step()[0] for _ in range(steps)]
    assert all(np.isfinite(losses))
    late = float(np.mean(losses[-10:]))
    assert late < frac * baseline, (task, losses[:3], late, baseline)
    assert late < 0.8 * float(np.mean(losses[:3]))       # and it fell while training
    assert trainer.step == steps


# ------------------------------------------------------------------------------------------
# determinism and resumption
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task", ["copy", "chars"])
def test_same_seed_same_losses_and_weights(tmp_path, task):
    runs = []
    for _ in range(2):
        t = Trainer(tiny(tmp_path, task, dropout=0.1), log=_quiet)
        runs.append((t, [t.train_step()[0] for _ in range(4)]))
    (a, la), (b, lb) = runs
    assert la == lb
    assert_same_weights(a, b, atol=0)
    other = Trainer(tiny(tmp_path, task, dropout=0.1, seed=1), log=_quiet)
    assert [other.train_step()[0] for _ in range(4)] != la


@pytest.mark.parametrize("task", ["copy", "chars", "add"])
def test_resume_equals_straight_run(tmp_path, task):
    """N steps, save, from_checkpoint, M steps == N + M steps (dropout on, cosine schedule)."""
    cfg = dict(dropout=0.2, schedule="cosine", warmup=2, max_steps=7, lr=3e-3)
    straight = Trainer(tiny(tmp_path, task, out_dir=str(tmp_path / "a"), **cfg), log=_quiet)
    for _ in range(7):
        straight.train_step()

    first = Trainer(tiny(tmp_path, task, out_dir=str(tmp_path / "b"), **cfg), log=_quiet)
    for _ in range(4):
        first.train_step()
    path = first.save()
    for _ in range(2):          # steps after the save must not leak into the resumed run
        first.train_step()
    resumed = Trainer.from_checkpoint(path, log=_quiet)
    assert resumed.step == 4
    assert resumed.scheduler.get_last_lr()[0] == pytest.approx(resumed._schedule()(4))
    for _ in range(3):
        resumed.train_step()
    assert resumed.step == straight.step == 7
    assert_same_weights(resumed, straight)
    # the optimizer state came back too (Adam moments), not only the weights
    (ma, aa), (mb, ab) = [(flatten(t.optimizer.state_dict(), "o", arr), arr)
                          for t, arr in ((straight, {}), (resumed, {}))]
    assert ma == mb and aa.keys() == ab.keys()
    for k in aa:
        np.testing.assert_allclose(aa[k], ab[k], rtol=0, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("task", ["copy", "add"])
def test_resume_through_train_with_evaluations(tmp_path, task):
    """Via train(): evaluations (decoding, val loss) at different steps must not touch the
    RNGs, or a resumed run would drift from the straight one."""
    cfg = dict(dropout=0.2, schedule="cosine", warmup=2, max_steps=6, eval_interval=2, lr=3e-3)
    straight = Trainer(tiny(tmp_path, task, out_dir=str(tmp_path / "a"), **cfg), log=_quiet)
    assert straight.train() is True
    first = Trainer(tiny(tmp_path, task, out_dir=str(tmp_path / "b"), **cfg), log=_quiet)
    first.train(steps=3)                                # evaluates at 2 and 3, saves at 3
    resumed = Trainer.from_checkpoint(first.checkpoint_path(), log=_quiet)
    assert resumed.step == 3
    resumed.train()
    assert resumed.step == 6
    assert_same_weights(resumed, straight)
    rows = [json.loads(line) for line in open(tmp_path / "b" / "metrics.jsonl")]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]    # the resumed run appends


def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    trainer = Trainer(tiny(tmp_path, "copy"), log=_quiet)
    trainer.train_step()
    path = trainer.save()
    trainer.train_step()
    calls = []

    def failing_write_array(*args, **kwargs):
        calls.append(1)
        if len(calls) > 3:                              # a few entries in, then "Ctrl-C"
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    real = np.lib.format.write_array
    monkeypatch.setattr(np.lib.format, "write_array", failing_write_array)
    with pytest.raises(KeyboardInterrupt):
        trainer.save()
    monkeypatch.undo()
    assert Trainer.from_checkpoint(path, log=_quiet).step == 1
    assert os.listdir(os.path.dirname(path)) == ["checkpoint.npz"]   # no temp file left


# ------------------------------------------------------------------------------------------
# checkpoint errors
# ------------------------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    trainer = Trainer(tiny(tmp_path, "copy"), log=_quiet)
    trainer.train_step()
    return trainer.save()


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    missing = str(tmp_path / "nope.npz")
    with pytest.raises(io.CheckpointError, match="does not exist") as err:
        Trainer.from_checkpoint(missing, log=_quiet)
    assert missing in str(err.value)


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.95])
def test_truncated_checkpoint_is_a_clear_error(tmp_path, saved, keep):
    data = open(saved, "rb").read()
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(data[:int(keep * len(data))])
    with pytest.raises(io.CheckpointError, match="truncated|empty|not"):
        Trainer.from_checkpoint(str(bad), log=_quiet)


def test_mismatched_checkpoint_is_a_clear_error(saved, tmp_path):
    # a config that disagrees with the arrays (an edited file) is named, not a traceback
    arrays, meta = io.load_checkpoint(saved)
    meta["config"].update(d_model=64, d_ff=256)
    edited = str(tmp_path / "edited.npz")
    io.save_checkpoint(edited, arrays, meta)
    with pytest.raises(io.CheckpointError, match="does not fit|size mismatch") as err:
        Trainer.from_checkpoint(edited, log=_quiet)
    assert "size mismatch" in str(err.value) and edited in str(err.value)


def test_resume_flags_that_conflict_with_the_checkpoint_are_refused(saved):
    from tinygradx.models.training.config import ConfigError
    with pytest.raises(ConfigError, match="conflict") as err:
        Trainer.from_checkpoint(saved, log=_quiet, d_model=64, n_head=2, max_steps=99)
    assert "--d_model 64 (checkpoint: 32)" in str(err.value)
    assert "--n_head 2" not in str(err.value)        # the same value as saved is no conflict
    assert Trainer.from_checkpoint(saved, log=_quiet, max_steps=99, lr=1e-4).cfg.lr == 1e-4


def test_foreign_checkpoint_is_a_clear_error(tmp_path):
    path = str(tmp_path / "other.npz")
    io.save_checkpoint(path, {"w": np.zeros(3)}, {"hello": 1})
    with pytest.raises(io.CheckpointError, match="not a training checkpoint"):
        Trainer.from_checkpoint(path, log=_quiet)


# ------------------------------------------------------------------------------------------
# Ctrl-C
# ------------------------------------------------------------------------------------------

def test_sigint_saves_a_checkpoint_and_stops(tmp_path):
    trainer = Trainer(tiny(tmp_path, "copy", max_steps=1000), log=_quiet)
    step = trainer.train_step

    def step_then_ctrl_c():
        out = step()
        if trainer.step == 3:
            os.kill(os.getpid(), signal.SIGINT)         # the handler runs before the next step
        return out

    trainer.train_step = step_then_ctrl_c
    before = signal.getsignal(signal.SIGINT)
    assert trainer.train() is False
    assert signal.getsignal(signal.SIGINT) is before    # the handler is put back
    assert trainer.step == 3
    assert Trainer.from_checkpoint(trainer.checkpoint_path(), log=_quiet).step == 3


def test_ctrl_c_on_the_command_line_saves_and_exits_without_traceback(tmp_path):
    out_dir = tmp_path / "run"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tinygradx", "train", "--task", "copy", "--d_model", "32",
         "--n_head", "2", "--n_layer", "1", "--batch_size", "8", "--n_train", "200",
         "--max_steps", "100000", "--eval_interval", "100000", "--progress", "false",
         "--out_dir", str(out_dir)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # metrics.jsonl is opened after the SIGINT handler is installed
        deadline = time.monotonic() + 60
        while not (out_dir / "metrics.jsonl").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "training did not start"
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert "interrupted at step" in out
    step = int(out.split("interrupted at step ")[1].split(":")[0])
    resumed = Trainer.from_checkpoint(str(out_dir / "checkpoint.npz"), log=_quiet)
    assert resumed.step == step


# ------------------------------------------------------------------------------------------
# the loss ignores padding; masks
# ------------------------------------------------------------------------------------------

def _fixed_batch(trainer, batch):
    trainer._translation_batch = lambda split, rng, size=None: batch


def test_loss_ignores_padding(tmp_path):
    trainer = Trainer(tiny(tmp_path, "copy", dropout=0.1), log=_quiet)
    trainer.model.eval()
    pairs = sorted(trainer.task.encoded("train")[:6], key=lambda p: len(p[0]))
    assert len(pairs[0][0]) < len(pairs[-1][0])         # ragged, so there is padding
    batch = pad_batch(pairs)
    _fixed_batch(trainer, batch)
    loss, ntok = trainer.loss_on("train", None)
    assert ntok == sum(len(t) + 1 for _, t in pairs)

    # scribble over every padded position: source ids, decoder inputs and targets
    rng = np.random.default_rng(0)
    V = len(trainer.task.tgt_vocab)
    noisy = pad_batch(pairs)
    noisy.src[noisy.src_key_padding] = rng.integers(4, len(trainer.task.src_vocab),
                                                    size=noisy.src_key_padding.sum())
    noisy.tgt_in[noisy.tgt_key_padding] = rng.integers(4, V, size=noisy.tgt_key_padding.sum())
    noisy.tgt_out[noisy.tgt_key_padding] = rng.integers(4, V, size=noisy.tgt_key_padding.sum())
    _fixed_batch(trainer, noisy)
    loss2, _ = trainer.loss_on("train", None)
    np.testing.assert_allclose(loss2.item(), loss.item(), rtol=1e-6)

    # and the padded batch's loss is the token-weighted mean of each pair's loss alone
    alone = []
    for p in pairs:
        _fixed_batch(trainer, pad_batch([p]))
        loss_p, n = trainer.loss_on("train", None)
        alone.append((loss_p.item(), n))
    expect = sum(v * n for v, n in alone) / sum(n for _, n in alone)
    np.testing.assert_allclose(loss.item(), expect, rtol=1e-5)


def test_lm_loss_ignores_the_prompt_of_add(tmp_path):
    trainer = Trainer(tiny(tmp_path, "add"), log=_quiet)
    x, y = trainer._lm_batch("train", np.random.default_rng(0))
    nd = trainer.task.ndigit
    assert (y[:, :2 * nd - 1] == IGNORE).all() and (y[:, 2 * nd - 1:] != IGNORE).all()
    _, ntok = trainer.loss_on("train", np.random.default_rng(0))
    assert ntok == y.shape[0] * (nd + 1)


def test_batch_masks_and_the_masks_inside_the_model(tmp_path):
    trainer = Trainer(tiny(tmp_path, "copy"), log=_quiet)
    pairs = [([5, 6, 7], [5, 6, 7]), ([8], [8]), ([5, 9], [9, 5])]
    b = pad_batch(pairs)
    np.testing.assert_array_equal(b.src_key_padding, [[0, 0, 0], [0, 1, 1], [0, 0, 1]])
    np.testing.assert_array_equal(b.tgt_key_padding,
                                  [[0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]])
    np.testing.assert_array_equal(b.tgt_in[:, 0], [BOS] * 3)
    np.testing.assert_array_equal(b.tgt_out, [[5, 6, 7, EOS], [8, EOS, PAD, PAD],
                                              [9, 5, EOS, PAD]])
    np.testing.assert_array_equal(b.tgt_in, [[BOS, 5, 6, 7], [BOS, 8, PAD, PAD],
                                             [BOS, 9, 5, PAD]])
    model = trainer.model
    model.eval()
    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    enc.record_attn = dec.record_attn = True
    with tgx.no_grad():
        model(tgx.tensor(b.src), tgx.tensor(b.tgt_in), b.src_key_padding, b.tgt_key_padding)
    enc_a = enc.attn_weights.numpy()                    # (B, h, S, S)
    self_a = dec.self_attn_weights.numpy()              # (B, h, T, T)
    cross_a = dec.cross_attn_weights.numpy()            # (B, h, T, S)
    for a in (enc_a, self_a, cross_a):
        np.testing.assert_allclose(a.sum(-1), 1, rtol=1e-5)
    # source padding: no encoder or cross-attention weight on a padded source position
    assert (enc_a[np.broadcast_to(b.src_key_padding[:, None, None, :], enc_a.shape)] == 0).all()
    assert (cross_a[np.broadcast_to(b.src_key_padding[:, None, None, :],
                                    cross_a.shape)] == 0).all()
    # causal: position i never looks at j > i; and real positions never at padded targets
    T = b.tgt_in.shape[1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert (self_a[..., future] == 0).all()
    pad_keys = np.broadcast_to(b.tgt_key_padding[:, None, None, :], self_a.shape)
    real_queries = np.broadcast_to(~b.tgt_key_padding[:, None, :, None], self_a.shape)
    assert (self_a[pad_keys & real_queries] == 0).all()


# ------------------------------------------------------------------------------------------
# metrics log, config
# ------------------------------------------------------------------------------------------

def test_metrics_jsonl_rows(tmp_path):
    cfg = tiny(tmp_path, "copy", max_steps=4, eval_interval=2, schedule="cosine", warmup=2)
    trainer = Trainer(cfg, log=_quiet)
    assert trainer.train() is True
    path = os.path.join(cfg.out_dir, "metrics.jsonl")
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert rows == trainer.metrics
    for r in rows:
        assert {"step", "loss", "lr", "grad_norm", "tokens_per_s"} <= r.keys()
        assert np.isfinite(r["loss"]) and r["lr"] > 0 and r["grad_norm"] >= 0
        assert r["tokens_per_s"] > 0
    assert [("val_loss" in r) for r in rows] == [False, True, False, True]
    assert all(0 <= r["val_exact_match"] <= 1 for r in rows if "val_loss" in r)
    assert rows[0]["lr"] < rows[1]["lr"]                # warm-up
    assert os.path.exists(trainer.checkpoint_path())
    # a fresh run into the same directory is refused; with overwrite it starts a new log
    from tinygradx.models.training.rundir import RunDirError
    with pytest.raises(RunDirError, match="--resume.*--overwrite"):
        Trainer(cfg, log=_quiet).train(steps=1)
    assert len(open(path).readlines()) == 4
    Trainer(cfg, log=_quiet, overwrite=True).train(steps=1)
    assert [json.loads(line)["step"] for line in open(path)] == [1]


def test_chars_metrics_have_no_exact_match(tmp_path):
    trainer = Trainer(tiny(tmp_path, "chars", max_steps=2, eval_interval=2), log=_quiet)
    trainer.train()
    assert "val_loss" in trainer.metrics[-1] and "val_exact_match" not in trainer.metrics[-1]
    res = trainer.evaluate("valid")
    assert set(res) == {"step", "split", "loss"}
    with pytest.raises(ValueError, match="not defined"):
        trainer.exact_match()


def test_evaluate_reports_exact_match_and_translate_round_trip(tmp_path):
    trainer = Trainer(tiny(tmp_path, "dates"), log=_quiet)
    res = trainer.evaluate("test")
    assert res["split"] == "test" and 0 <= res["exact_match"] <= 1 and res["loss"] > 0
    out = trainer.translate(["30 Nov 2026", "11/30/26"])
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    assert trainer.translate(["30 Nov 2026"], beam_size=2)[0] is not None


def test_config_checks_and_overrides():
    cfg = config_from_args({"d_model": "64", "dropout": "0.2", "progress": "no", "task": "sort"})
    assert (cfg.d_model, cfg.dropout, cfg.progress, cfg.task, cfg.d_ff) == (64, 0.2, False,
                                                                            "sort", 256)
    with pytest.raises(ValueError, match="--d_model: expected int"):
        config_from_args({"d_model": "abc"})
    with pytest.raises(ValueError, match="unknown option --frob"):
        config_from_args({"frob": "1"})
    for bad, flag in [(dict(dropout=2.0), "--dropout"), (dict(d_model=30, n_head=4), "--n_head"),
                      (dict(lr=0), "--lr"), (dict(batch_size=0), "--batch_size"),
                      (dict(optimizer="rmsprop"), "--optimizer"),
                      (dict(schedule="linear"), "--schedule"), (dict(lr=float("inf")), "--lr"),
                      (dict(max_steps=0), "--max_steps"), (dict(d_ff=-1), "--d_ff"),
                      (dict(n_layer="2"), "--n_layer"), (dict(progress=1), "--progress")]:
        with pytest.raises(ValueError, match=f"^{flag}: must be"):
            TrainConfig(**bad)


def test_tsv_needs_a_path(tmp_path):
    with pytest.raises(ValueError, match="--path"):
        Trainer(TrainConfig(task="tsv", out_dir=str(tmp_path)), log=_quiet)


# ------------------------------------------------------------------------------------------
# gradient accumulation, scheduled sampling, health rows, best.npz, the saved vocabulary
# ------------------------------------------------------------------------------------------

def _grads(trainer):
    return {n: (None if p.grad is None else p.grad.numpy().copy())
            for n, p in trainer.model.named_parameters()}


@pytest.mark.parametrize("task", ["copy", "chars"])
def test_grad_accum_equals_one_big_batch(tmp_path, task):
    """k micro-batches of b examples == one step on the k*b examples: same gradients, same
    parameters after the step (float32 tolerance)."""
    k, b = 3, 4
    kw = dict(optimizer="sgd", grad_clip=0.0, dropout=0.0, schedule="constant", lr=0.1)
    big = Trainer(tiny(tmp_path, task, batch_size=k * b, **kw), log=_quiet)
    acc = Trainer(tiny(tmp_path, task, batch_size=b, grad_accum=k, **kw), log=_quiet)
    rng = np.random.default_rng(5)
    if task == "chars":
        x, y = big.task.get_batch("train", k * b, big.cfg.block_size, rng)
        whole, parts = (x, y), [(x[i * b:(i + 1) * b], y[i * b:(i + 1) * b]) for i in range(k)]
    else:
        pairs = big.task.encoded("train")
        chosen = [pairs[i] for i in rng.choice(len(pairs), k * b, replace=False)]
        whole = pad_batch(chosen)      # padded to the longest of all k*b; parts to their own
        parts = [pad_batch(chosen[i * b:(i + 1) * b]) for i in range(k)]
    big.draw_batch = lambda split, r: whole
    queue = list(parts)
    acc.draw_batch = lambda split, r: queue.pop(0)
    loss_big, ntok_big, _, _ = big.train_step()
    loss_acc, ntok_acc, _, _ = acc.train_step()
    assert not queue and ntok_big == ntok_acc
    assert loss_acc == pytest.approx(loss_big, rel=1e-5)
    ga, gb = _grads(acc), _grads(big)
    for name in gb:
        np.testing.assert_allclose(ga[name], gb[name], rtol=1e-4, atol=1e-6, err_msg=name)
    assert_same_weights(acc, big, atol=1e-6)


@pytest.mark.parametrize("task", ["add", "copy"])
def test_a_step_whose_every_target_is_padding_changes_nothing(tmp_path, task):
    """cross_entropy's mean over no targets is NaN (PyTorch's rule). The Trainer skips such a
    micro-batch: mixed with real ones, the step equals the step on the real ones alone; alone,
    the step changes no weight, raises nothing, still counts, and logs a NaN loss. A
    validation split of padding only is a clear error, not a NaN blamed on the weights."""
    kw = dict(grad_accum=2, batch_size=4, optimizer="adamw", grad_clip=1.0)
    a = Trainer(tiny(tmp_path, task, **kw), log=_quiet)
    b = Trainer(tiny(tmp_path / "b", task, **kw), log=_quiet)
    real = a.draw_batch("train", np.random.default_rng(3))
    if task == "add":
        x, y = real
        padding = (x, np.full_like(y, IGNORE))
    else:
        padding = pad_batch(a.task.encoded("train")[:4])
        padding.tgt_key_padding[:] = True
    assert a.batch_tokens(padding) == 0
    queue = [real, padding]
    a.draw_batch = lambda split, r: queue.pop(0)
    b.draw_batch = lambda split, r: real
    b.cfg.grad_accum = 1
    loss_a, ntok_a, _, _ = a.train_step()
    loss_b, ntok_b, _, _ = b.train_step()
    assert (loss_a, ntok_a) == pytest.approx((loss_b, ntok_b), rel=1e-6)
    assert_same_weights(a, b, atol=1e-7)

    before, step = weights(a), a.step
    a.draw_batch = lambda split, r: padding
    loss, ntok, _, _ = a.train_step()
    assert math.isnan(loss) and ntok == 0 and a.step == step + 1
    for k, v in weights(a).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)
    with pytest.raises(ValueError, match="padding"):
        a.val_loss()


def test_teacher_forcing_one_is_todays_training_and_lower_feeds_predictions(tmp_path):
    a = Trainer(tiny(tmp_path, "copy"), log=_quiet)
    b = Trainer(tiny(tmp_path, "copy", teacher_forcing=1.0), log=_quiet)
    assert [a.train_step()[0] for _ in range(3)] == [b.train_step()[0] for _ in range(3)]
    c = Trainer(tiny(tmp_path, "copy", teacher_forcing=0.0), log=_quiet)
    batch = c.draw_batch("train", np.random.default_rng(0))
    c.model.train()
    mixed = c._scheduled_sampling(batch)
    pad = np.asarray(batch.tgt_key_padding, dtype=bool)
    assert (mixed[:, 0] == BOS).all()                       # <bos> stays
    assert (mixed[pad] == batch.tgt_in[pad]).all()          # padding stays
    assert (mixed[:, 1:] != batch.tgt_in[:, 1:])[~pad[:, 1:]].any()   # predictions fed in
    loss, _, _, _ = c.train_step()
    assert np.isfinite(loss)


def test_health_rows_and_best_checkpoint(tmp_path):
    cfg = tiny(tmp_path, "copy", max_steps=4, eval_interval=2, health_interval=2)
    trainer = Trainer(cfg, log=_quiet)
    trainer.train()
    rows = [json.loads(line) for line in open(os.path.join(cfg.out_dir, "metrics.jsonl"))]
    assert [("layers" in r) for r in rows] == [False, True, False, True]
    layers = rows[1]["layers"]
    assert {"src_embed", "encoder.layers.0", "decoder.layers.0", "generator"} <= set(layers)
    for v in layers.values():
        assert v["grad_norm"] >= 0 and 0 < v["update_ratio"] < 1
    best = os.path.join(cfg.out_dir, "best.npz")
    _, meta = io.load_checkpoint(best)
    val = [r["val_loss"] for r in rows if "val_loss" in r]
    assert meta["best_val"] == min(val)
    assert meta["step"] == [r["step"] for r in rows if r.get("val_loss") == min(val)][0]
    from tinygradx.models.apps import pictures
    written = pictures.training_health(cfg.out_dir)
    header = open(written[0]).readline().strip().split(",")
    assert header[:5] == ["step", "loss", "lr", "grad_norm", "val_loss"]
    assert "update_ratio/encoder.layers.0" in header


def test_memory_estimate_matches_the_models(tmp_path):
    from tinygradx.models.training.config import estimate_parameters
    for task in ("copy", "chars"):
        t = Trainer(tiny(tmp_path, task), log=_quiet)
        est = estimate_parameters(t.cfg, t._vocab_sizes(), t._max_len())
        assert est == pytest.approx(t.model.num_parameters(), rel=0.02), task


def test_edited_text_file_is_refused_and_a_missing_one_still_decodes(tmp_path):
    trainer = Trainer(tiny(tmp_path, "chars"), log=_quiet)
    trainer.train_step()
    path = trainer.save()
    text = tmp_path / "text.txt"
    text.write_text(text.read_text() + " QZ!", encoding="utf-8")
    with pytest.raises(io.CheckpointError, match=r"--text .*text.txt: the data no longer "
                                                 r"matches the vocabulary.*3 new"):
        Trainer.from_checkpoint(path, log=_quiet)
    text.unlink()
    decoder = Trainer.from_checkpoint(path, log=_quiet, need_data=False)
    assert decoder.task.vocab == trainer.task.vocab
    with pytest.raises(FileNotFoundError, match="not found"):
        Trainer.from_checkpoint(path, log=_quiet)            # training needs the file


def test_default_run_directory_is_per_task():
    assert TrainConfig(task="chars").out_dir == os.path.join("runs", "chars")
    assert TrainConfig.for_task("add").out_dir == os.path.join("runs", "add")
    assert TrainConfig(task="add", out_dir="x").out_dir == "x"


def test_memory_estimate_is_exact_for_every_gpt_switch(tmp_path):
    """estimate_parameters counts the GPT the switches build (wpe gone with RoPE, narrower
    c_attn with fewer K/V heads, SwiGLU's third matrix, no biases), parameter for parameter."""
    import itertools
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    from tinygradx.models.training.config import gpt_switches
    from tinygradx.models.training.config import estimate_parameters
    for norm, pos, mlp, kv, bias, first in itertools.product(
            ("layernorm", "rmsnorm"), ("learned", "rope"), ("gelu", "swiglu"), (0, 2),
            (True, False), (True, False)):
        cfg = TrainConfig(task="chars", d_model=32, n_head=4, n_layer=2, block_size=16,
                          norm=norm, pos=pos, mlp=mlp, n_kv_head=kv, bias=bias,
                          norm_first=first, out_dir=str(tmp_path))
        model = GPT(GPTConfig(block_size=16, vocab_size=20, n_layer=2, n_head=4, n_embd=32,
                              norm_first=first, **gpt_switches(cfg)))
        assert estimate_parameters(cfg, (20,), 16) == model.num_parameters(), cfg
