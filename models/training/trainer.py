"""One training loop for every task: config, batches, optimizer, schedule, eval, checkpoints.

    cfg = TrainConfig(task="dates", max_steps=2000)
    trainer = Trainer(cfg)
    trainer.train()            # progress bar, metrics log, checkpoints in cfg.out_dir
    trainer.evaluate("test")   # exact match on held-out data (or val loss for `chars`)

Determinism: the model is initialised from tgx.manual_seed(cfg.seed); every batch is drawn from
one numpy Generator; both generators' states go into the checkpoint, so N steps, save, resume,
M steps gives the same weights as N+M steps in one go.

Trust (docs/tasks.md, "Runs"): `validate_config` checks every field (flags and checkpoints
alike) and the model's size before anything is allocated or written; a run directory
(default runs/<task>) belongs to one run (`check_run_dir`); metrics.jsonl is flushed every row
and cut back to the checkpoint's step on resume; a failed save is a CheckpointSaveError naming
the file, with the previous checkpoint intact.
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
    grad_accum: int = 1            # micro-batches of batch_size per optimizer step
    teacher_forcing: float = 1.0   # translation: share of gold decoder inputs (1.0: all gold)
    max_steps: int = 2000
    # evaluation, logging, checkpoints
    eval_interval: int = 250
    eval_batches: int = 20
    eval_examples: int = 500       # translation/add: how many held-out examples to decode
    out_dir: str = ""              # "" means runs/<task>
    save_interval: int = 0         # 0: save at eval points and at the end
    health_interval: int = 50      # per-layer gradient norms and update ratios (0: off)
    progress: bool = True

    @classmethod
    def for_task(cls, task: str = "dates", **overrides) -> "TrainConfig":
        """The config of `task`: dataclass defaults, then TASK_DEFAULTS[task], then `overrides`."""
        return cls(**{**TASK_DEFAULTS.get(task, {}), **overrides, "task": task})

    def __post_init__(self):
        validate_config(dataclasses.asdict(self))
        if self.d_ff == 0:
            self.d_ff = 4 * self.d_model
        if not self.out_dir:                 # one directory per task: runs/dates, runs/chars, ...
            self.out_dir = default_out_dir(self.task)


def default_out_dir(task: str) -> str:
    """Where a run of `task` goes when --out_dir is not given: runs/<task>."""
    return os.path.join("runs", task)


# ------------------------------------------------------------------------------------------
# one validation of a run's config: CLI flags, TrainConfig(...) and checkpoints all pass here
# ------------------------------------------------------------------------------------------

class ConfigError(ValueError):
    """A config value that cannot make a run: one line naming the flag (`--lr: ...`)."""


def _finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _int(x):
    return isinstance(x, int) and not isinstance(x, bool)


# field -> (predicate, what a valid value is). Kinds are checked first, from the field's type.
_RULES = {
    "seed": (lambda v: v >= 0, "an integer >= 0"),
    "n_train": (lambda v: v >= 0, "an integer >= 0 (0: the task's default)"),
    "ndigit": (lambda v: 1 <= v <= 18, "an integer in [1, 18]"),
    "n_layer": (lambda v: v >= 1, "an integer >= 1"),
    "d_model": (lambda v: v >= 1, "an integer >= 1"),
    "n_head": (lambda v: v >= 1, "an integer >= 1"),
    "d_ff": (lambda v: v >= 0, "an integer >= 0 (0: 4 * d_model)"),
    "dropout": (lambda v: _finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "block_size": (lambda v: v >= 1, "an integer >= 1"),
    "optimizer": (lambda v: v in ("adam", "adamw", "sgd"), "one of adam, adamw, sgd"),
    "lr": (lambda v: _finite(v) and v > 0, "a finite number > 0"),
    "min_lr": (lambda v: _finite(v) and v >= 0, "a finite number >= 0"),
    "schedule": (lambda v: v in ("cosine", "noam", "constant"), "one of cosine, noam, constant"),
    "warmup": (lambda v: v >= 0, "an integer >= 0"),
    "weight_decay": (lambda v: _finite(v) and v >= 0, "a finite number >= 0"),
    "beta2": (lambda v: _finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "grad_clip": (lambda v: _finite(v) and v >= 0, "a finite number >= 0 (0: no clipping)"),
    "label_smoothing": (lambda v: _finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "batch_size": (lambda v: v >= 1, "an integer >= 1"),
    "grad_accum": (lambda v: v >= 1, "an integer >= 1"),
    "teacher_forcing": (lambda v: _finite(v) and 0 <= v <= 1, "a finite number in [0, 1]"),
    "max_steps": (lambda v: v >= 1, "an integer >= 1"),
    "eval_interval": (lambda v: v >= 1, "an integer >= 1"),
    "eval_batches": (lambda v: v >= 1, "an integer >= 1"),
    "eval_examples": (lambda v: v >= 1, "an integer >= 1"),
    "save_interval": (lambda v: v >= 0, "an integer >= 0 (0: at evaluations only)"),
    "health_interval": (lambda v: v >= 0, "an integer >= 0 (0: off)"),
}

# parameters + gradients + two Adam moments, float32: 16 bytes per parameter
BYTES_PER_PARAMETER = 16
MEMORY_LIMIT = 4 * 2**30


def validate_config(values: dict, where: str = "") -> None:
    """Check every field of a TrainConfig's values; raise ConfigError naming the first bad one.

    `where` prefixes the message (a checkpoint's path), so the same rules serve the command
    line (`--lr: must be a finite number > 0, got inf`) and a file read back from disk.
    """
    def fail(name, text):
        raise ConfigError(f"{where}--{name}: {text}")

    kinds = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
    for name, kind in kinds.items():
        if name not in values:
            continue
        v = values[name]
        kind = getattr(kind, "__name__", kind)
        ok = {"bool": lambda: isinstance(v, bool), "int": lambda: _int(v),
              "float": lambda: _finite(v) or (isinstance(v, float) and not isinstance(v, bool)),
              "str": lambda: isinstance(v, str)}[kind]()
        if not ok:
            fail(name, f"must be {'a number' if kind == 'float' else 'a ' + kind}, got {v!r}")
        if name in _RULES and not _RULES[name][0](v):
            fail(name, f"must be {_RULES[name][1]}, got {v!r}")
    if "task" in values:
        from tinygradx.models.tasks import TASK_NAMES
        if values["task"] not in TASK_NAMES:
            fail("task", f"unknown task {values['task']!r}; known: {', '.join(TASK_NAMES)}")
    if {"d_model", "n_head"} <= values.keys() and values["d_model"] % values["n_head"]:
        fail("n_head", f"must be a divisor of --d_model {values['d_model']} (d_model must be "
                       f"divisible by n_head), got {values['n_head']}")
    if values.get("schedule") == "noam" and "warmup" in values and values["warmup"] < 1:
        fail("warmup", "must be >= 1 with --schedule noam (its peak is at step warmup), got "
                       f"{values['warmup']}")


def estimate_parameters(cfg: "TrainConfig", vocab_sizes, max_len: int) -> int:
    """Parameter count of the model cfg would build, from the sizes alone (nothing allocated)."""
    d, ff, L = cfg.d_model, cfg.d_ff or 4 * cfg.d_model, cfg.n_layer
    if len(vocab_sizes) == 1:                       # GPT: attention 4d^2, MLP 8d^2, 2 norms
        (v,) = vocab_sizes
        return L * (12 * d * d + 13 * d) + v * d + max_len * d + 2 * d   # wte tied to the head
    vs, vt = vocab_sizes                            # encoder 4d^2 + 2d*ff, decoder 8d^2 + 2d*ff
    per = 4 * d * d + 2 * d * ff + ff + 9 * d
    return L * (per + per + 4 * d * d + 6 * d) + (vs + 2 * vt) * d + max_len * d + 4 * d


def check_memory(cfg: "TrainConfig", vocab_sizes, max_len: int, where: str = "") -> int:
    """Refuse a model whose parameters and optimizer state would not fit a sane budget."""
    n = estimate_parameters(cfg, vocab_sizes, max_len)
    need = n * BYTES_PER_PARAMETER
    if need > MEMORY_LIMIT:
        raise ConfigError(
            f"{where}the model would have ~{n:,} parameters, ~{need / 2**30:.1f} GiB with its "
            f"gradients and optimizer state (limit {MEMORY_LIMIT / 2**30:.0f} GiB); lower "
            f"--d_model ({cfg.d_model}), --d_ff ({cfg.d_ff}), --n_layer ({cfg.n_layer}) or "
            f"--block_size ({cfg.block_size})")
    return n


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

    def __init__(self, cfg: TrainConfig, log=print, overwrite=False, _where="",
                 _saved_vocab=None):
        """`overwrite`: a fresh run may replace the run in cfg.out_dir (else it refuses)."""
        self.cfg, self.log, self.overwrite = cfg, log, overwrite
        self._saved_vocab = _saved_vocab
        tgx.process.keep_freed_memory()      # the training process owns the allocator
        tgx.manual_seed(cfg.seed)
        self.data_rng = np.random.default_rng(cfg.seed + 1)
        self.task = self._make_task()
        self.lm = is_lm_task(cfg.task)
        # sizes first: a config asking for 300 GB is refused before anything is allocated
        check_memory(cfg, self._vocab_sizes(), self._max_len(), _where)
        self.model = self._make_model()
        self.optimizer = self._make_optimizer()
        self.scheduler = optim.LRScheduler(self.optimizer, self._schedule())
        self.step = 0
        self.metrics = []
        self.best_val = None           # the lowest validation loss so far (best.npz holds it)
        self.resumed_from = None       # the checkpoint this trainer was loaded from
        self._owns_dir = False         # set once train() has claimed cfg.out_dir
        self.last_health = None        # per-layer gradient norms / update ratios of the last step
        self._stop = False

    # -- construction ----------------------------------------------------------------------
    def _make_task(self):
        cfg, kw = self.cfg, {}
        if cfg.task == "add":
            kw["ndigit"] = cfg.ndigit
        elif cfg.task == "chars":
            if cfg.text:
                kw["path"] = cfg.text
                saved = (self._saved_vocab or {}).get("tokens")
                if saved and not os.path.exists(cfg.text):
                    # decoding needs only the vocabulary, which the checkpoint carries; the
                    # stand-in text has no data worth evaluating on
                    from tinygradx.models.tasks import CharTask
                    return CharTask("".join(saved), source=f"{cfg.text} (vocabulary only: "
                                                          f"the file is gone)")
        elif cfg.task == "tsv":
            if not cfg.path:
                raise ValueError("task tsv needs --path FILE (a tab-separated file of "
                                 "sentence pairs)")
            kw["path"] = cfg.path
        if cfg.n_train and not is_lm_task(cfg.task):
            kw["n_train"] = cfg.n_train
        return make_task(cfg.task, seed=cfg.seed, **kw)

    def _vocab_sizes(self):
        if self.lm:
            return (self.task.vocab_size,)
        return (len(self.task.src_vocab), len(self.task.tgt_vocab))

    def _max_len(self):
        if self.lm:
            return self.task.block_size if self.cfg.task == "add" else self.cfg.block_size
        return max(self.task.max_lengths()) + 2

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

    def draw_batch(self, split, rng):
        """One random batch of a split: (x, y) for a language model, a Batch for translation."""
        if self.lm:
            return self._lm_batch(split, rng)
        return self._translation_batch(split, rng)

    @staticmethod
    def batch_tokens(batch):
        """Target tokens the loss averages over (padding and prompts excluded)."""
        if isinstance(batch, tuple):
            return int((batch[1] != IGNORE).sum())
        return int(batch.n_tokens)

    def loss_on(self, split, rng):
        """(loss Tensor, number of target tokens) of one random batch of a split."""
        return self.loss_on_batch(self.draw_batch(split, rng))

    def loss_on_batch(self, batch):
        """(mean loss Tensor over the target tokens, their number) of one drawn batch."""
        if self.lm:
            x, y = batch
            logits, _ = self.model(tgx.tensor(x))                          # (B, T, V)
            V = logits.shape[-1]
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1),   # (B*T, V)
                                   ignore_index=IGNORE,
                                   label_smoothing=self.cfg.label_smoothing)
            return loss, int((y != IGNORE).sum())
        b = batch
        tgt_in = b.tgt_in
        if self.model.training and self.cfg.teacher_forcing < 1.0:
            tgt_in = self._scheduled_sampling(b)
        logp = self.model(tgx.tensor(b.src), tgx.tensor(tgt_in), b.src_key_padding,
                          b.tgt_key_padding)                               # (B, T, V)
        V = logp.shape[-1]
        # the padding mask, not the ids, says which positions are padding (as in pad_batch)
        target = np.where(b.tgt_key_padding, PAD, b.tgt_out)              # (B, T)
        loss = F.cross_entropy(logp.reshape(-1, V), target.reshape(-1),     # (B*T, V)
                               ignore_index=PAD, label_smoothing=self.cfg.label_smoothing)
        return loss, int(b.n_tokens)

    def _scheduled_sampling(self, b):
        """Decoder inputs where each token after <bos> is, with probability 1 - teacher_forcing,
        the model's own prediction of it instead of the reference (scheduled sampling, Bengio
        et al. 2015, in the two-pass form for Transformers of Mihaylova & Martins 2019)."""
        with tgx.no_grad():
            logp = self.model(tgx.tensor(b.src), tgx.tensor(b.tgt_in), b.src_key_padding,
                              b.tgt_key_padding)                           # (B, T, V)
        pred = logp.numpy().argmax(-1)             # pred[:, t]: the guess for position t + 1
        mixed = b.tgt_in.copy()                                            # (B, T)
        swap = self.data_rng.random(mixed[:, 1:].shape) >= self.cfg.teacher_forcing
        swap &= ~np.asarray(b.tgt_key_padding, dtype=bool)[:, 1:]
        mixed[:, 1:] = np.where(swap, pred[:, :-1], mixed[:, 1:])
        return mixed

    def train_step(self):
        """One optimizer step over grad_accum micro-batches; (loss, tokens, lr, grad norm).

        Each micro-batch's mean loss is weighted by its share of the step's target tokens, so
        k micro-batches of b examples give the gradient of one batch of the k * b examples.
        Every health_interval steps, self.last_health holds per-layer gradient norms and
        update:data ratios (else None).
        """
        cfg = self.cfg
        self.model.train()
        batches = [self.draw_batch("train", self.data_rng) for _ in range(cfg.grad_accum)]
        total = max(sum(self.batch_tokens(b) for b in batches), 1)
        self.optimizer.zero_grad()
        loss_value, ntok = 0.0, 0
        for b in batches:
            loss, n = self.loss_on_batch(b)
            (loss * (n / total)).backward()
            loss_value += loss.item() * n / total
            ntok += n
        health = cfg.health_interval and (self.step + 1) % cfg.health_interval == 0
        if health:
            named = list(self.model.named_parameters())
            grad_sq = _per_layer([(n, p.grad.data) for n, p in named if p.grad is not None],
                                 _sq)
            before = [p.data.copy() for _, p in named]
        norm = optim.clip_grad_norm_(self.model.parameters(), cfg.grad_clip) \
            if cfg.grad_clip > 0 else float("nan")
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.last_health = None
        if health:
            # the update:data ratio ||lr * update|| / ||param|| of each layer, from the change
            # the optimizer actually made (clipping, momentum and weight decay included)
            deltas = [(n, p.data - b0) for (n, p), b0 in zip(named, before)]
            upd_sq = _per_layer(deltas, _sq)
            par_sq = _per_layer([(n, b0) for (n, _), b0 in zip(named, before)], _sq)
            self.last_health = {
                layer: {"grad_norm": math.sqrt(grad_sq.get(layer, 0.0)),
                        "update_ratio": math.sqrt(upd_sq[layer]) / max(math.sqrt(
                            par_sq[layer]), 1e-12)}
                for layer in par_sq}
        return loss_value, ntok, lr, norm

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
        """Train until cfg.max_steps (or `steps` more); Ctrl-C saves a checkpoint and stops.

        The first call claims cfg.out_dir (see `claim_run_dir`); metrics.jsonl gets one row a
        step, flushed as it is written, so the log survives a kill up to the last step done.
        """
        cfg = self.cfg
        end = cfg.max_steps if steps is None else self.step + steps
        self._claim()
        log_path = os.path.join(cfg.out_dir, "metrics.jsonl")
        bar = _progress(end, self.step, cfg.progress)
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        t0, tokens = time.perf_counter(), 0
        try:
            with open(log_path, "a", encoding="utf-8") as logf:
                while self.step < end and not self._stop:
                    loss, ntok, lr, norm = self.train_step()
                    tokens += ntok
                    rate = tokens / max(time.perf_counter() - t0, 1e-9)
                    bar.update(loss, lr, rate)
                    row = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm,
                           "tokens_per_s": rate}
                    if self.last_health:
                        row["layers"] = self.last_health
                    evaluate = self.step % cfg.eval_interval == 0 or self.step == end
                    if evaluate:
                        ev = self.evaluate("valid")
                        row["val_loss"] = ev["loss"]
                        if "exact_match" in ev:
                            row["val_exact_match"] = ev["exact_match"]
                        bar.write(_fmt_eval(row))
                    self.metrics.append(row)
                    # the row goes to disk before the checkpoint of its step: a kill between
                    # the two leaves a row past the checkpoint, which a resume drops
                    logf.write(json.dumps(row) + "\n")
                    logf.flush()
                    if evaluate:
                        self.save()
                        if _finite_number(row["val_loss"]) and (
                                self.best_val is None or row["val_loss"] < self.best_val):
                            self.best_val = row["val_loss"]
                            self.save(self.best_path())
                    elif cfg.save_interval and self.step % cfg.save_interval == 0:
                        self.save()
        finally:
            signal.signal(signal.SIGINT, previous)
            bar.close()
        if self._stop:
            path = self.save()
            self.log(f"interrupted at step {self.step}: checkpoint saved to {path}")
            return False
        return True

    # -- the run directory -----------------------------------------------------------------
    def _claim(self):
        """Check cfg.out_dir is this run's, create it, clean it up, line the log up with step."""
        if self._owns_dir:
            return
        cfg = self.cfg
        check_run_dir(cfg.out_dir, resume=self.resumed_from, overwrite=self.overwrite)
        os.makedirs(cfg.out_dir, exist_ok=True)
        remove_stale_temp_files(cfg.out_dir)
        log_path = os.path.join(cfg.out_dir, "metrics.jsonl")
        if self.resumed_from is None:
            # a fresh run: the directory held no checkpoint (or --overwrite), so any old log
            # and best.npz belong to nothing that will remain
            for name in ("metrics.jsonl", "best.npz", "checkpoint.npz"):
                path = os.path.join(cfg.out_dir, name)
                if os.path.exists(path):
                    os.unlink(path)
        else:
            source = os.path.join(os.path.dirname(os.path.abspath(self.resumed_from)),
                                  "metrics.jsonl")
            if not os.path.exists(log_path) and os.path.exists(source):
                source_log = source                  # resumed elsewhere: start from its log
            else:
                source_log = log_path
            truncate_metrics(source_log, self.step, out=log_path)
        self._owns_dir = True

    def _on_sigint(self, signum, frame):
        if self._stop:                 # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        self._stop = True              # finish the current step, then save and leave

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint_path(self):
        return os.path.join(self.cfg.out_dir, "checkpoint.npz")

    def best_path(self):
        return os.path.join(self.cfg.out_dir, "best.npz")

    def save(self, path=None):
        """Model, optimizer, schedule step, both RNG states, config and vocabulary, atomically.

        A failed save (disk full, file too large, no permission) raises CheckpointSaveError
        naming the file and the reason; the previous file at `path` is left as it was.
        """
        path = path or self.checkpoint_path()
        arrays = {f"model/{k}": v.numpy() for k, v in self.model.state_dict().items()}
        opt_meta = _flatten(self.optimizer.state_dict(), "optim", arrays)
        meta = {"config": dataclasses.asdict(self.cfg), "step": self.step,
                "scheduler": self.scheduler.state_dict(), "optimizer": opt_meta,
                "rng": tgx.get_rng_state(), "data_rng": self.data_rng.bit_generator.state,
                "vocab": self._vocab_meta(), "best_val": self.best_val}
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

    def _vocab_meta(self):
        if self.lm:
            return {"tokens": list(self.task.vocab)}
        return {"src": self.task.src_vocab.to_list(), "tgt": self.task.tgt_vocab.to_list()}

    @classmethod
    def from_checkpoint(cls, path, log=print, overwrite=False, need_data=True, **overrides):
        """Rebuild a trainer from a checkpoint; its config wins.

        `need_data=False` (decoding only): a chars checkpoint whose text file is gone still
        loads, from the vocabulary it carries. A data file that is there is always checked
        against that vocabulary (an edited file is an error, not a silently different model).

        `overrides` may change only RESUMABLE fields (out_dir, max_steps, lr, ...); any other
        field given with a value different from the checkpoint's is a ConfigError listing them.
        The checkpoint's config is validated like the command line's before anything is built.
        """
        validate_config(overrides)
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
        if not _int(step) or step < 0:
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
        cfg = TrainConfig(**{**saved, **overrides})
        trainer = cls(cfg, log=log, overwrite=overwrite, _where=where,
                      _saved_vocab=None if need_data else meta["vocab"])
        trainer.load_state(arrays, meta, path)
        trainer.resumed_from = os.fspath(path)
        return trainer

    def load_state(self, arrays, meta, path="<checkpoint>"):
        if meta.get("vocab") is not None and meta["vocab"] != self._vocab_meta():
            raise io.CheckpointError(self._vocab_mismatch(meta["vocab"], path))
        model_sd = {k[len("model/"):]: v for k, v in arrays.items() if k.startswith("model/")}
        try:
            self.model.load_state_dict(model_sd)
        except (KeyError, ValueError) as err:
            raise io.CheckpointError(f"{path}: the checkpoint does not fit this model "
                                     f"(config changed?): {_one_line(err)}") from None
        try:
            self.optimizer.load_state_dict(_unflatten(meta["optimizer"], arrays))
            self.scheduler.load_state_dict(meta["scheduler"])
            tgx.set_rng_state(meta["rng"])
            self.data_rng.bit_generator.state = meta["data_rng"]
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as err:
            raise io.CheckpointError(f"checkpoint {path}: damaged optimizer, schedule or RNG "
                                     f"state ({type(err).__name__}: {_one_line(err)})") from None
        self.step = int(meta["step"])
        best = meta.get("best_val")
        self.best_val = best if _finite_number(best) else None

    def _vocab_mismatch(self, saved, path):
        """One line: which data file disagrees with the checkpoint's vocabulary, and how."""
        flag = "--text " + self.cfg.text if self.cfg.task == "chars" and self.cfg.text else \
            "--path " + self.cfg.path if self.cfg.task == "tsv" else f"task {self.cfg.task}"
        now = self._vocab_meta()
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


# flags that may differ from the checkpoint's config on --resume
RESUMABLE = ("out_dir", "max_steps", "lr", "min_lr", "eval_interval", "eval_batches",
             "eval_examples", "save_interval", "health_interval", "progress", "text", "path",
             "teacher_forcing")


class CheckpointSaveError(OSError):
    """A checkpoint could not be written; the message names the file and the reason."""


class RunDirError(ValueError):
    """A new run was pointed at a directory that holds another run's checkpoint."""


def check_run_dir(out_dir, resume=None, overwrite=False):
    """A run directory belongs to one run: refuse a new run into a directory with a checkpoint.

    Allowed: no checkpoint there; `overwrite`; or `resume` is that very checkpoint file (or
    resuming from elsewhere into a directory without a checkpoint).
    """
    ckpt = os.path.join(out_dir, "checkpoint.npz")
    if not os.path.exists(ckpt) or overwrite:
        return
    if resume is not None and os.path.exists(resume) and os.path.samefile(ckpt, resume):
        return
    if resume is not None:
        raise RunDirError(f"--out_dir {out_dir} already holds another run's checkpoint; "
                          f"choose another --out_dir or pass --overwrite to replace it")
    raise RunDirError(f"--out_dir {out_dir} already holds a run (checkpoint.npz); continue it "
                      f"with --resume, replace it with --overwrite, or choose another --out_dir")


def remove_stale_temp_files(directory):
    """Delete temp files of saves killed midway (.NAME.PID.RANDOM.tmp of a dead process)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        if not (name.startswith(".") and name.endswith(".tmp") and len(parts) >= 5):
            continue
        try:
            pid = int(parts[-3])
        except ValueError:
            continue
        if pid != os.getpid() and _alive(pid):
            continue                       # another live process is writing it
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def read_metrics(path):
    """The rows of a metrics.jsonl; a torn last line (a kill mid-write) is skipped."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and _int(row.get("step")):
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


def truncate_metrics(path, step, out=None):
    """Write the rows of `path` up to `step` to `out` (default: in place), atomically, so the
    log of a resumed run matches its checkpoint's weights."""
    out = out or path
    rows = [r for r in read_metrics(path) if r["step"] <= step]
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    io.atomic_write(out, lambda f: f.write(text))


def layer_of(name):
    """The layer a parameter belongs to: 'encoder.layers.0.ff.w_1.weight' -> 'encoder.layers.0',
    'transformer.h.3.attn.c_attn.weight' -> 'transformer.h.3', 'generator.weight' ->
    'generator'."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i + 1])
    return ".".join(parts[:-1]) or name


def _per_layer(named, value):
    """Sum value(array) over the (name, array) pairs of each layer, in model order."""
    out = {}
    for name, arr in named:
        layer = layer_of(name)
        out[layer] = out.get(layer, 0.0) + value(arr)
    return out


def _sq(a):
    """Squared L2 norm, summed in float64."""
    a = np.asarray(a).ravel()
    return float(np.dot(a.astype(np.float64, copy=False), a.astype(np.float64, copy=False)))


def _finite_number(x):
    return _finite(x) and not isinstance(x, bool)


def _one_line(err):
    """The first line of an error; a 'N problem(s):' header keeps its first problem."""
    lines = [line.strip() for line in str(err).strip("'\"").splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}" + (" ..." if len(lines) > 2 else "")
    return lines[0]


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

