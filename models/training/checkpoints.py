"""Training checkpoints: nested state dicts as flat arrays + JSON, written atomically, and read
back with every entry checked before a trainer is built from them.

A checkpoint is one .npz (tinygradx.io): the model's parameters under model/..., the
optimizer's arrays under optim/..., and a JSON meta entry with the config, step, schedule,
both RNG states, the vocabulary and the best validation loss so far.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

import tinygradx as tgx
from tinygradx import io

from tinygradx.models.training.config import (RESUMABLE, ConfigError, TrainConfig, is_int,
                                              validate_config)
from tinygradx.models.training.rundir import remove_stale_temp_files


class CheckpointSaveError(OSError):
    """A checkpoint could not be written; the message names the file and the reason."""


def flatten(obj, prefix, arrays):
    """Move every numpy array (and Tensor: an optimizer's state) of a nested dict/list into
    `arrays`; return the JSON skeleton."""
    if isinstance(obj, tgx.Tensor):
        arrays[prefix] = obj.detach().numpy().copy()
        return {"__tensor__": prefix}
    if isinstance(obj, np.ndarray):
        arrays[prefix] = obj
        return {"__array__": prefix}
    if isinstance(obj, dict):
        return {str(k): flatten(v, f"{prefix}/{k}", arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [flatten(v, f"{prefix}/{i}", arrays) for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def unflatten(obj, arrays):
    """The nested dict/list that `flatten` made `obj` from, its arrays taken from `arrays`."""
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]]
        if set(obj) == {"__tensor__"}:
            return tgx.Tensor(arrays[obj["__tensor__"]])
        return {k: unflatten(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unflatten(v, arrays) for v in obj]
    return obj


def write_checkpoint(path, arrays, meta):
    """Write one checkpoint atomically; the directory is created and cleared of stale temp files.

    A failed save (disk full, file too large, no permission) raises CheckpointSaveError
    naming the file and the reason; the previous file at `path` is left as it was.
    """
    try:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        remove_stale_temp_files(directory)
        io.save_checkpoint(path, arrays, meta)
    except (OSError, TypeError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise CheckpointSaveError(
            f"checkpoint not saved: {path}: {reason}"
            + ("; the previous checkpoint is intact" if os.path.exists(path) else "")
        ) from None
    return path


def read_checkpoint(path, overrides):
    """(arrays, meta, config values) of a training checkpoint, every entry checked first.

    A file that is not a training checkpoint, or lacks an entry, or holds an invalid config, is
    an io.CheckpointError naming it. `overrides` may change only RESUMABLE fields; any other
    field given with a value different from the checkpoint's is a ConfigError listing them.
    The config values returned are the checkpoint's with `overrides` applied.
    """
    arrays, meta = io.load_checkpoint(path)
    where = f"checkpoint {path}: "
    if "config" not in meta or "step" not in meta:
        raise io.CheckpointError(f"{path}: not a training checkpoint (no config/step)")
    missing = [k for k in ("optimizer", "scheduler", "rng", "data_rng", "vocab")
               if k not in meta]
    if missing:
        raise io.CheckpointError(f"{where}damaged: no {', '.join(missing)} entry")
    if not isinstance(meta["config"], dict):
        raise io.CheckpointError(f"{where}damaged: config is not a JSON object")
    step = meta["step"]
    if not is_int(step) or step < 0:
        raise io.CheckpointError(f"{where}damaged: step must be an integer >= 0, "
                                 f"got {step!r}")
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    saved = {k: v for k, v in meta["config"].items() if k in known}
    try:
        validate_config(saved, where)
    except ConfigError as err:
        raise io.CheckpointError(str(err).replace("--", "config ", 1)) from None
    conflicts = []
    for k, v in overrides.items():
        same = saved.get(k) == v or (k == "d_ff" and v == 0)
        if k not in RESUMABLE and k in saved and not same:
            conflicts.append(f"--{k} {v} (checkpoint: {saved[k]})")
    if conflicts:
        raise ConfigError(
            f"on resume these flags conflict with {path}: {'; '.join(conflicts)}; only "
            f"{', '.join('--' + k for k in RESUMABLE)} may change")
    return arrays, meta, {**saved, **overrides}


def one_line(err):
    """The first line of an error; a 'N problem(s):' header keeps its first problem."""
    lines = [line.strip() for line in str(err).strip("'\"").splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}" + (" ..." if len(lines) > 2 else "")
    return lines[0]


def vocab_mismatch(cfg, saved, now, path):
    """One line: which data file disagrees with the checkpoint's vocabulary, and how.

    `saved` is the vocabulary in the checkpoint at `path`, `now` the one the data of `cfg`
    gives (both as Trainer._vocab_meta returns them).
    """
    flag = "--text " + cfg.text if cfg.task == "chars" and cfg.text else \
        "--path " + cfg.path if cfg.task == "tsv" else f"task {cfg.task}"
    parts = []
    for key in sorted(set(saved) | set(now)):
        a, b = saved.get(key) or [], now.get(key) or []
        added, gone = [t for t in b if t not in set(a)], [t for t in a if t not in set(b)]
        if added or gone:
            parts.append(f"{key}: {len(added)} new ({''.join(map(str, added[:5]))!r}...), "
                         f"{len(gone)} missing" if added else
                         f"{key}: {len(gone)} missing ({''.join(map(str, gone[:5]))!r}...)")
        elif a != b:
            parts.append(f"{key}: same tokens, different order")
    return (f"{flag}: the data no longer matches the vocabulary saved in {path} "
            f"({'; '.join(parts)}); pass the file the model was trained on")
