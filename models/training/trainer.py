"""One training loop for every task: config, batches, optimizer, schedule, eval, checkpoints.

    cfg = TrainConfig(task="dates", max_steps=2000)
    trainer = Trainer(cfg)
    trainer.train()            # progress bar, metrics log, checkpoints in cfg.out_dir
    trainer.evaluate("test")   # exact match on held-out data (or val loss for `chars`)

Determinism: the model is initialised from tgx.manual_seed(cfg.seed); every batch is drawn from
one numpy Generator; both generators' states go into the checkpoint, so N steps, save, resume,
M steps gives the same weights as N+M steps in one go.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import io, optim

from tinygradx.models.nets import decoding
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.tasks import BOS, EOS, IGNORE, PAD, is_lm_task, make_task, pad_batch
from tinygradx.models.nets.transformer import make_model


# Per-task defaults: the settings measured to reach each task's target on held-out data on 2 CPU
# cores (docs/tasks.md has the runs, their wall times and the commands). TrainConfig.for_task
# applies them under the user's explicit overrides; TrainConfig(...) itself never does.
_TOY = dict(n_layer=2, d_model=64, n_head=4, dropout=0.0, lr=3e-3, min_lr=1e-4, warmup=100,
            batch_size=64, max_steps=800, eval_interval=200)   # the synthetic translation tasks
TASK_DEFAULTS: dict[str, dict] = {
    "copy": _TOY,
    "reverse": _TOY,
    "sort": _TOY,
    "numbers": {**_TOY, "max_steps": 1200},
    "numbers_zh": {**_TOY, "max_steps": 1200},
    "dates": {**_TOY, "max_steps": 1200},
    # real corpora (eng-fra.txt) are larger and noisier than the toy tasks: a wider model with
    # dropout and label smoothing; measured only on a small synthetic file (docs/tasks.md)
    "tsv": dict(n_layer=2, d_model=128, n_head=4, dropout=0.1, lr=1e-3, min_lr=1e-4,
                warmup=200, batch_size=64, max_steps=2000, eval_interval=250,
                label_smoothing=0.1),
    # minGPT's adder is a Pre-LN GPT; the sum is read greedily, digit by digit
    "add": dict(n_layer=2, d_model=64, n_head=4, dropout=0.0, lr=2e-3, min_lr=1e-4,
                warmup=100, batch_size=64, max_steps=2000, eval_interval=250,
                weight_decay=0.1, norm_first=True),
    # nanoGPT's CPU run of shakespeare_char (README): 4 layers, 4 heads, n_embd 128, block 64,
    # batch 12, 2000 iterations, lr 1e-3 cosine to 1e-4 over 2000 iterations, dropout 0, beta2 0.99
    "chars": dict(n_layer=4, d_model=128, n_head=4, dropout=0.0, block_size=64, lr=1e-3,
                  min_lr=1e-4, warmup=100, batch_size=12, max_steps=2000, eval_interval=250,
                  beta2=0.99, weight_decay=0.1, norm_first=True),
}


@dataclass
class TrainConfig:
    """Everything a run needs; each field is also a CLI flag (`--d_model 64`)."""

    task: str = "dates"
    seed: int = 0
    # task options (n_train etc. are passed to the task builder when set)
    n_train: int = 0
    ndigit: int = 2
    text: str = ""                 # chars task: a UTF-8 file (default: stdlib docstrings)
    path: str = ""                 # tsv task: a tab-separated file of sentence pairs
    # model
    n_layer: int = 2               # encoder and decoder layers each, or GPT blocks
    d_model: int = 128
    n_head: int = 4
    d_ff: int = 0                  # 0 means 4 * d_model
    dropout: float = 0.1
    norm_first: bool = False       # Pre-LN (True) or the original Post-LN (False)
    block_size: int = 64           # GPT context length (chars task)
    # optimisation
    optimizer: str = "adamw"       # adam | adamw | sgd
    lr: float = 1e-3
    min_lr: float = 1e-4
    schedule: str = "cosine"       # cosine (warmup + cosine, nanoGPT) | noam | constant
    warmup: int = 100
    weight_decay: float = 0.01
    beta2: float = 0.98
    grad_clip: float = 1.0
    label_smoothing: float = 0.0
    batch_size: int = 64
    max_steps: int = 2000
    # evaluation, logging, checkpoints
    eval_interval: int = 250
    eval_batches: int = 20
    eval_examples: int = 500       # translation/add: how many held-out examples to decode
    out_dir: str = "runs/default"
    save_interval: int = 0         # 0: save at eval points and at the end
    progress: bool = True

    @classmethod
    def for_task(cls, task: str = "dates", **overrides) -> "TrainConfig":
        """The config of `task`: dataclass defaults, then TASK_DEFAULTS[task], then `overrides`."""
        return cls(**{**TASK_DEFAULTS.get(task, {}), **overrides, "task": task})

    def __post_init__(self):
        if self.d_ff == 0:
            self.d_ff = 4 * self.d_model
        checks = [
            (self.max_steps >= 0, "max_steps must be >= 0"),
            (self.batch_size > 0, "batch_size must be > 0"),
            (self.d_model > 0 and self.n_head > 0, "d_model and n_head must be > 0"),
            (self.d_model % self.n_head == 0,
             f"d_model {self.d_model} must be divisible by n_head {self.n_head}"),
            (0.0 <= self.dropout < 1.0, "dropout must be in [0, 1)"),
            (self.lr > 0, "lr must be > 0"),
            (self.optimizer in ("adam", "adamw", "sgd"), "optimizer must be adam|adamw|sgd"),
            (self.schedule in ("cosine", "noam", "constant"),
             "schedule must be cosine|noam|constant"),
            (self.eval_interval > 0, "eval_interval must be > 0"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"TrainConfig: {msg}")


# ------------------------------------------------------------------------------------------
# checkpoints: nested state dicts <-> flat arrays + JSON
# ------------------------------------------------------------------------------------------

def _flatten(obj, prefix, arrays):
    """Move every numpy array of a nested dict/list into `arrays`; return the JSON skeleton."""
    if isinstance(obj, np.ndarray):
        arrays[prefix] = obj
        return {"__array__": prefix}
    if isinstance(obj, dict):
        return {str(k): _flatten(v, f"{prefix}/{k}", arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_flatten(v, f"{prefix}/{i}", arrays) for i, v in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _unflatten(obj, arrays):
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]]
        return {k: _unflatten(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unflatten(v, arrays) for v in obj]
    return obj


# ------------------------------------------------------------------------------------------
# the trainer
# ------------------------------------------------------------------------------------------

class Trainer:
    """Builds the task, model, optimizer and schedule from a TrainConfig and runs them."""

    def __init__(self, cfg: TrainConfig, log=print):
        self.cfg, self.log = cfg, log
        tgx.process.keep_freed_memory()      # the training process owns the allocator
        tgx.manual_seed(cfg.seed)
        self.data_rng = np.random.default_rng(cfg.seed + 1)
        self.task = self._make_task()
        self.lm = is_lm_task(cfg.task)
        self.model = self._make_model()
        self.optimizer = self._make_optimizer()
        self.scheduler = optim.LRScheduler(self.optimizer, self._schedule())
        self.step = 0
        self.metrics = []
        self._stop = False

    # -- construction ----------------------------------------------------------------------
    def _make_task(self):
        cfg, kw = self.cfg, {}
        if cfg.task == "add":
            kw["ndigit"] = cfg.ndigit
        elif cfg.task == "chars":
            if cfg.text:
                kw["path"] = cfg.text
        elif cfg.task == "tsv":
            if not cfg.path:
                raise ValueError("task tsv needs --path FILE (a tab-separated file of "
                                 "sentence pairs)")
            kw["path"] = cfg.path
        if cfg.n_train and not is_lm_task(cfg.task):
            kw["n_train"] = cfg.n_train
        return make_task(cfg.task, seed=cfg.seed, **kw)

    def _make_model(self):
        cfg = self.cfg
        if self.lm:
            block = self.task.block_size if cfg.task == "add" else cfg.block_size
            gcfg = GPTConfig(block_size=block, vocab_size=self.task.vocab_size,
                             n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.d_model,
                             dropout=cfg.dropout, norm_first=cfg.norm_first)
            return GPT(gcfg)
        src_len, tgt_len = self.task.max_lengths()
        return make_model(len(self.task.src_vocab), len(self.task.tgt_vocab), N=cfg.n_layer,
                          d_model=cfg.d_model, d_ff=cfg.d_ff, h=cfg.n_head, dropout=cfg.dropout,
                          norm_first=cfg.norm_first, max_len=max(src_len, tgt_len) + 2)

    def _make_optimizer(self):
        cfg = self.cfg
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            # nanoGPT's rule: matrices decay; biases, LayerNorm gains and 1-D params do not
            (decay if p.ndim >= 2 else no_decay).append(p)
        groups = [{"params": decay, "weight_decay": cfg.weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        if cfg.optimizer == "sgd":
            return optim.SGD(groups, lr=cfg.lr, momentum=0.9)
        if cfg.optimizer == "adam":
            for g in groups:
                g["weight_decay"] = 0.0
            return optim.Adam(groups, lr=cfg.lr, betas=(0.9, cfg.beta2), eps=1e-9)
        return optim.AdamW(groups, lr=cfg.lr, betas=(0.9, cfg.beta2), eps=1e-9)

    def _schedule(self):
        cfg = self.cfg
        if cfg.schedule == "noam":
            # scaled so the peak (at step = warmup) equals cfg.lr
            return lambda i: cfg.lr * math.sqrt(cfg.warmup) * min(
                (i + 1) ** -0.5, (i + 1) * cfg.warmup ** -1.5)
        if cfg.schedule == "constant":
            return lambda i: cfg.lr
        decay = max(cfg.max_steps, cfg.warmup + 1)
        return lambda i: optim.warmup_cosine(i, cfg.lr, cfg.warmup, decay, cfg.min_lr)

    # -- batches and loss ------------------------------------------------------------------
    def _lm_batch(self, split, rng):
        cfg = self.cfg
        if cfg.task == "add":
            return self.task.get_batch(split, cfg.batch_size, rng)
        return self.task.get_batch(split, cfg.batch_size, cfg.block_size, rng)

    def _translation_batch(self, split, rng, size=None):
        pairs = self.task.encoded(split)
        idx = rng.choice(len(pairs), size=min(size or self.cfg.batch_size, len(pairs)),
                         replace=False)
        return pad_batch([pairs[i] for i in idx])

    def loss_on(self, split, rng):
        """(loss Tensor, number of target tokens) of one random batch of a split."""
        if self.lm:
            x, y = self._lm_batch(split, rng)
            logits, _ = self.model(tgx.tensor(x))                          # (B, T, V)
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1),   # (B*T, V)
                                   ignore_index=IGNORE,
                                   label_smoothing=self.cfg.label_smoothing)
            return loss, int((y != IGNORE).sum())
        b = self._translation_batch(split, rng)
        logp = self.model(tgx.tensor(b.src), tgx.tensor(b.tgt_in), b.src_key_padding,
                          b.tgt_key_padding)                               # (B, T, V)
        V = logp.shape[-1]
        # the padding mask, not the ids, says which positions are padding (as in pad_batch)
        target = np.where(b.tgt_key_padding, PAD, b.tgt_out)              # (B, T)
        loss = F.cross_entropy(logp.reshape(-1, V), target.reshape(-1),     # (B*T, V)
                               ignore_index=PAD, label_smoothing=self.cfg.label_smoothing)
        return loss, int(b.n_tokens)

    def train_step(self):
        self.model.train()
        loss, ntok = self.loss_on("train", self.data_rng)
        self.optimizer.zero_grad()
        loss.backward()
        norm = optim.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip) \
            if self.cfg.grad_clip > 0 else float("nan")
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return loss.item(), ntok, lr, norm

    # -- evaluation ------------------------------------------------------------------------
    def val_loss(self, split="valid"):
        rng = np.random.default_rng(1234)   # the same batches at every evaluation
        split = "valid" if split == "val" else split    # every task knows "valid"; add no "val"
        total = 0.0
        with tgx.no_grad():
            self.model.eval()
            for _ in range(self.cfg.eval_batches):
                loss, _ = self.loss_on(split, rng)
                total += loss.item()
        self.model.train()
        return total / self.cfg.eval_batches

    def exact_match(self, split="valid", limit=None, beam_size=1):
        """Fraction of held-out examples whose decoded output equals the reference."""
        if self.cfg.task == "chars":
            raise ValueError("exact match is not defined for the chars task (use val_loss)")
        limit = limit or self.cfg.eval_examples
        if self.cfg.task == "add":
            pairs = getattr(self.task, "test" if split == "test" else "valid")[:limit]
            prompt = self.task.prompt(pairs)
            # temperature 0: argmax without a draw from the global RNG (top_k=1 still drew one
            # per token, so an evaluation shifted the dropout masks of the following steps)
            out = decoding.sample(self.model, prompt, self.task.ndigit + 1, temperature=0)
            return float(self.task.exact_match(pairs, out[:, prompt.shape[1]:]))
        pairs = self.task.split(split)[:limit]
        hyps = self.translate([s for s, _ in pairs], beam_size=beam_size, as_tokens=True)
        refs = [list(t) for _, t in pairs]
        return float(np.mean([h == r for h, r in zip(hyps, refs)]))

    def translate(self, sentences, beam_size=1, as_tokens=False, batch=1024):
        """Decode source strings (or token lists) into target strings (or token lists)."""
        out = []
        src_vocab, tgt_vocab = self.task.src_vocab, self.task.tgt_vocab
        max_len = self.task.max_lengths()[1] + 2
        for start in range(0, len(sentences), batch):
            chunk = sentences[start:start + batch]
            ids = [src_vocab.encode(s if isinstance(s, (list, tuple))
                                    else self.task.tokenize_src(s)) for s in chunk]
            b = pad_batch([(i or [PAD], [EOS]) for i in ids])
            if beam_size == 1:
                res = decoding.greedy_decode(self.model, b.src, b.src_key_padding, max_len,
                                             BOS, EOS)
            else:
                res = decoding.beam_search(self.model, b.src, b.src_key_padding, max_len, BOS,
                                           EOS, beam_size=beam_size)
            for r in res:
                toks = tgt_vocab.decode(r)
                out.append(toks if as_tokens else self.task.detok_tgt(toks))
        return out

    def evaluate(self, split="valid"):
        """The task's headline metrics on a split, as a dict."""
        res = {"step": self.step, "split": split, "loss": self.val_loss(split)}
        if self.cfg.task != "chars":
            res["exact_match"] = self.exact_match(split)
        return res

    # -- the loop --------------------------------------------------------------------------
    def train(self, steps=None):
        """Train until cfg.max_steps (or `steps` more); Ctrl-C saves a checkpoint and stops."""
        cfg = self.cfg
        end = cfg.max_steps if steps is None else self.step + steps
        os.makedirs(cfg.out_dir, exist_ok=True)
        log_path = os.path.join(cfg.out_dir, "metrics.jsonl")
        bar = _progress(end, self.step, cfg.progress)
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        t0, tokens = time.perf_counter(), 0
        try:
            # a fresh run starts a new log; a resumed one (step > 0) continues it
            with open(log_path, "a" if self.step else "w", encoding="utf-8") as logf:
                while self.step < end and not self._stop:
                    loss, ntok, lr, norm = self.train_step()
                    tokens += ntok
                    rate = tokens / max(time.perf_counter() - t0, 1e-9)
                    bar.update(loss, lr, rate)
                    row = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm,
                           "tokens_per_s": rate}
                    if self.step % cfg.eval_interval == 0 or self.step == end:
                        ev = self.evaluate("valid")
                        row["val_loss"] = ev["loss"]
                        if "exact_match" in ev:
                            row["val_exact_match"] = ev["exact_match"]
                        bar.write(_fmt_eval(row))
                        self.save()
                    elif cfg.save_interval and self.step % cfg.save_interval == 0:
                        self.save()
                    self.metrics.append(row)
                    logf.write(json.dumps(row) + "\n")
                    if "val_loss" in row:
                        logf.flush()           # so a run can be watched at each evaluation
        finally:
            signal.signal(signal.SIGINT, previous)
            bar.close()
        if self._stop:
            path = self.save()
            self.log(f"interrupted at step {self.step}: checkpoint saved to {path}")
            return False
        return True

    def _on_sigint(self, signum, frame):
        if self._stop:                 # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        self._stop = True              # finish the current step, then save and leave

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint_path(self):
        return os.path.join(self.cfg.out_dir, "checkpoint.npz")

    def save(self, path=None):
        """Model, optimizer, schedule step, both RNG states and the config, atomically."""
        path = path or self.checkpoint_path()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        arrays = {f"model/{k}": v.numpy() for k, v in self.model.state_dict().items()}
        opt_meta = _flatten(self.optimizer.state_dict(), "optim", arrays)
        meta = {"config": dataclasses.asdict(self.cfg), "step": self.step,
                "scheduler": self.scheduler.state_dict(), "optimizer": opt_meta,
                "rng": tgx.get_rng_state(), "data_rng": self.data_rng.bit_generator.state,
                "vocab": self._vocab_meta()}
        io.save_checkpoint(path, arrays, meta)
        return path

    def _vocab_meta(self):
        if self.lm:
            return {"tokens": list(self.task.vocab)}
        return {"src": self.task.src_vocab.to_list(), "tgt": self.task.tgt_vocab.to_list()}

    @classmethod
    def from_checkpoint(cls, path, log=print, **overrides):
        """Rebuild a trainer from a checkpoint; its config wins unless overridden."""
        arrays, meta = io.load_checkpoint(path)
        if "config" not in meta or "step" not in meta:
            raise io.CheckpointError(f"{path}: not a training checkpoint (no config/step)")
        cfg_dict = dict(meta["config"])
        cfg_dict.update(overrides)
        known = {f.name for f in dataclasses.fields(TrainConfig)}
        cfg = TrainConfig(**{k: v for k, v in cfg_dict.items() if k in known})
        trainer = cls(cfg, log=log)
        trainer.load_state(arrays, meta, path)
        return trainer

    def load_state(self, arrays, meta, path="<checkpoint>"):
        model_sd = {k[len("model/"):]: v for k, v in arrays.items() if k.startswith("model/")}
        try:
            self.model.load_state_dict(model_sd)
        except KeyError as err:
            raise io.CheckpointError(f"{path}: the checkpoint does not fit this model "
                                     f"(config changed?): {err}") from None
        self.optimizer.load_state_dict(_unflatten(meta["optimizer"], arrays))
        self.scheduler.load_state_dict(meta["scheduler"])
        self.step = int(meta["step"])
        tgx.set_rng_state(meta["rng"])
        self.data_rng.bit_generator.state = meta["data_rng"]


class _progress:
    """A tqdm bar with loss, lr and tokens/s when tqdm is installed and wanted; else quiet."""

    def __init__(self, total, initial, enabled):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True,
                                file=sys.stderr)
            except ImportError:
                pass

    def update(self, loss, lr, rate):
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}",
                                 refresh=False)
            self.bar.update(1)

    def write(self, text):
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _fmt_eval(row):
    parts = [f"step {row['step']}", f"train loss {row['loss']:.4f}",
             f"val loss {row['val_loss']:.4f}"]
    if "val_exact_match" in row:
        parts.append(f"val exact match {100 * row['val_exact_match']:.1f}%")
    return " | ".join(parts)


def config_from_args(pairs, base=None):
    """Apply `--key value` overrides to a TrainConfig, with type checks and clear errors."""
    # without a base, start from the field defaults: TrainConfig() would have resolved d_ff = 0
    # to 4 * 128 already, and --d_model 64 would then keep d_ff 512
    cfg = dataclasses.asdict(base) if base is not None else {
        f.name: f.default for f in dataclasses.fields(TrainConfig)}
    types = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
    for key, value in pairs.items():
        if key not in types:
            raise ValueError(f"unknown option --{key}; known: "
                             f"{', '.join('--' + k for k in types)}")
        kind = types[key]
        try:
            if kind in (bool, "bool"):
                if str(value).lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError
                cfg[key] = str(value).lower() in ("1", "true", "yes")
            elif kind in (int, "int"):
                cfg[key] = int(value)
            elif kind in (float, "float"):
                cfg[key] = float(value)
            else:
                cfg[key] = str(value)
        except ValueError:
            raise ValueError(f"--{key}: expected {getattr(kind, '__name__', kind)}, "
                             f"got {value!r}") from None
    return TrainConfig(**cfg)

