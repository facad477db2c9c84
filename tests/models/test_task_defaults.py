"""Every task has measured defaults (models/training/config.py TASK_DEFAULTS) and they build a
valid config.

Fast: only configs are built, plus one tiny model per task with the default *shape* rules checked
through TrainConfig validation; no training here (docs/tasks.md has the measured runs).
"""
from __future__ import annotations

import dataclasses

import pytest

from tinygradx.models.tasks import TASK_NAMES
from tinygradx.models.training.config import TASK_DEFAULTS, TrainConfig

FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}


def test_every_task_has_defaults():
    assert set(TASK_DEFAULTS) == set(TASK_NAMES)


@pytest.mark.parametrize("task", sorted(TASK_DEFAULTS))
def test_defaults_are_config_fields_and_build(task):
    defaults = TASK_DEFAULTS[task]
    assert set(defaults) <= FIELDS, set(defaults) - FIELDS
    assert "task" not in defaults
    cfg = TrainConfig.for_task(task)
    assert cfg.task == task
    for key, value in defaults.items():
        assert getattr(cfg, key) == value, key
    assert cfg.d_ff == 4 * cfg.d_model
    assert cfg.warmup < cfg.max_steps


def test_user_overrides_win_over_task_defaults():
    cfg = TrainConfig.for_task("copy", d_model=32, max_steps=7)
    assert (cfg.d_model, cfg.max_steps) == (32, 7)
    assert cfg.n_layer == TASK_DEFAULTS["copy"]["n_layer"]


def test_plain_constructor_ignores_task_defaults():
    # checkpoints and the demo build TrainConfig(**fields) and must get exactly those fields
    assert TrainConfig(task="copy").d_model == TrainConfig.d_model


def test_chars_defaults_are_nanogpt_cpu_config():
    cfg = TrainConfig.for_task("chars")
    assert (cfg.n_layer, cfg.n_head, cfg.d_model, cfg.block_size, cfg.batch_size) == \
        (4, 4, 128, 64, 12)
    assert (cfg.max_steps, cfg.lr, cfg.min_lr, cfg.dropout, cfg.beta2) == \
        (2000, 1e-3, 1e-4, 0.0, 0.99)
    assert cfg.schedule == "cosine" and cfg.norm_first


def test_cli_train_applies_task_defaults(tmp_path, monkeypatch):
    from tinygradx.models.apps import cli
    from tinygradx.models.training import trainer as train_mod

    seen = {}

    class Stop(Exception):
        pass

    def fake_trainer(cfg, *a, **k):
        seen["cfg"] = cfg
        raise Stop

    monkeypatch.setattr(train_mod, "Trainer", fake_trainer)
    args = cli.build_parser().parse_args(
        ["train", "--task", "reverse", "--max_steps", "3", "--out_dir", str(tmp_path)])
    with pytest.raises(Stop):
        cli.cmd_train(args)
    cfg = seen["cfg"]
    assert cfg.task == "reverse" and cfg.max_steps == 3
    assert cfg.d_model == TASK_DEFAULTS["reverse"]["d_model"]


@pytest.mark.parametrize("task", sorted(TASK_DEFAULTS))
def test_default_model_builds_and_runs(task):
    # the model of each default config, on a small stand-in vocabulary (no task data is built)
    import numpy as np

    import tinygradx as tgx
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    from tinygradx.models.tasks import is_lm_task
    from tinygradx.models.nets.transformer import make_model

    cfg = TrainConfig.for_task(task)
    tgx.manual_seed(0)
    x = np.array([[1, 2, 3, 4]])
    with tgx.no_grad():
        if is_lm_task(task):
            model = GPT(GPTConfig(block_size=cfg.block_size, vocab_size=12, n_layer=cfg.n_layer,
                                  n_head=cfg.n_head, n_embd=cfg.d_model, dropout=cfg.dropout,
                                  norm_first=cfg.norm_first))
            model.eval()
            logits, _ = model(tgx.tensor(x))
            assert logits.shape == (1, 4, 12)
        else:
            model = make_model(12, 13, N=cfg.n_layer, d_model=cfg.d_model, d_ff=cfg.d_ff,
                               h=cfg.n_head, dropout=cfg.dropout, norm_first=cfg.norm_first,
                               max_len=16)
            model.eval()
            pad = np.zeros((1, 4), dtype=bool)
            out = model(tgx.tensor(x), tgx.tensor(x), pad, pad)
            assert out.shape == (1, 4, 13)
    assert np.isfinite(out.numpy() if not is_lm_task(task) else logits.numpy()).all()
