"""One training loop for every task: config, batches, optimizer, schedule, eval, checkpoints.

    cfg = TrainConfig(task="dates", max_steps=2000)
    trainer = Trainer(cfg)
    trainer.train()            # progress bar, metrics log, checkpoints in cfg.out_dir
    trainer.evaluate("test")   # exact match on held-out data (or val loss for `chars`)

Determinism: the model is initialised from tgx.manual_seed(cfg.seed); every batch is drawn from
one numpy Generator; both generators' states go into the checkpoint, so N steps, save, resume,
M steps gives the same weights as N+M steps in one go.

Trust (docs/tasks.md, "Runs"): `validate_config` (config.py) checks every field (flags and
checkpoints alike) and the model's size before anything is allocated or written; a run
directory (default runs/<task>) belongs to one run (`check_run_dir`, rundir.py); metrics.jsonl
is flushed every row and cut back to the checkpoint's step on resume; a failed save is a
CheckpointSaveError naming the file, with the previous checkpoint intact (checkpoints.py).
Per-layer gradient norms and update ratios are in health.py.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import time
import warnings

import numpy as np

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import io, optim

from tinygradx.models.nets import decoding
from tinygradx.models.nets.gpt import GPT, GPTConfig
from tinygradx.models.tasks import BOS, EOS, IGNORE, PAD, is_lm_task, make_task, pad_batch
from tinygradx.models.nets.transformer import make_model
from tinygradx.models.training.checkpoints import (flatten, one_line, read_checkpoint,
                                                   unflatten, vocab_mismatch, write_checkpoint)
from tinygradx.models.training.config import (TrainConfig, check_memory, gpt_switches,
                                              is_finite, validate_config)
from tinygradx.models.training.health import (NonFiniteError, check_step_finite,
                                               check_weights_finite, first_nonfinite,
                                               grad_sq_per_layer, layer_health)
from tinygradx.models.training.progress import Progress, ctrl_c_after, fmt_eval
from tinygradx.models.training.rundir import RunLock, claim_run_dir

__all__ = ["Trainer", "UnknownTokenWarning"]


# ------------------------------------------------------------------------------------------
# the trainer
# ------------------------------------------------------------------------------------------

class UnknownTokenWarning(UserWarning):
    """Trainer.translate met source tokens outside the task's vocabulary (read as <unk>)."""


class Trainer:
    """Builds the task, model, optimizer and schedule from a TrainConfig and runs them."""

    def __init__(self, cfg: TrainConfig, log=print, overwrite=False, _where="",
                 _saved_vocab=None):
        """`overwrite`: a fresh run may replace the run in cfg.out_dir (else it refuses)."""
        self.cfg, self.log, self.overwrite = cfg, log, overwrite
        self._saved_vocab = _saved_vocab
        tgx.process.own_process()            # the training process owns the allocator
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
        self.last_flops = 0            # GEMM FLOPs of the last step, forward and backward
        self._stop = False
        self.stopped_by = None         # the signal that stopped train() (SIGINT or SIGTERM)

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
            saved = self._saved_vocab or {}
            if saved.get("max_lengths") and not os.path.exists(cfg.path):
                # decoding needs the vocabularies and lengths the checkpoint carries, not the
                # sentence pairs (evaluation and training still need the file)
                from tinygradx.models.tasks.tsv import tsv_task_from_vocab
                return tsv_task_from_vocab(saved["src"], saved["tgt"], saved["max_lengths"],
                                           source=cfg.path)
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
                             dropout=cfg.dropout, norm_first=cfg.norm_first,
                             **gpt_switches(cfg))
            return GPT(gcfg)
        src_len, tgt_len = self.task.max_lengths()
        return make_model(len(self.task.src_vocab), len(self.task.tgt_vocab), N=cfg.n_layer,
                          d_model=cfg.d_model, d_ff=cfg.d_ff, h=cfg.n_head, dropout=cfg.dropout,
                          norm_first=cfg.norm_first, max_len=max(src_len, tgt_len) + 2)

    def _make_optimizer(self):
        cfg = self.cfg
        decay, no_decay = [], []
        for _name, p in self.model.named_parameters():
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
        A micro-batch whose every target is padding is skipped: its mean loss would be NaN
        (the mean of no terms, as in PyTorch) and it has no gradient. When the whole step has
        no target token the step changes no weight (no parameter gets a gradient, and the
        optimizer skips those), still counts (the schedule follows the step count), and logs
        a NaN loss, as a grad_norm without clipping is NaN.
        self.last_flops holds the step's GEMM FLOPs, forward and backward (tgx.perf.step_flops,
        counted from each micro-batch's graph before its backward).
        Every health_interval steps, self.last_health holds per-layer gradient norms and
        update:data ratios (else None).
        """
        cfg = self.cfg
        self.model.train()
        batches = [self.draw_batch("train", self.data_rng) for _ in range(cfg.grad_accum)]
        total = sum(self.batch_tokens(b) for b in batches)
        self.optimizer.zero_grad()
        loss_value, ntok, self.last_flops = 0.0, 0, 0
        for b in batches:
            if not self.batch_tokens(b):     # all padding: no loss term, no gradient
                continue
            loss, n = self.loss_on_batch(b)
            self.last_flops += tgx.perf.step_flops(loss)
            (loss * (n / total)).backward()
            loss_value += loss.item() * n / total
            ntok += n
        named = list(self.model.named_parameters())
        if not total:                        # nothing to learn from: no update (docstring)
            loss_value = float("nan")
        else:   # a NaN/inf loss or gradient stops here, before the update spoils the weights
            check_step_finite(self.step + 1, loss_value, named, self._kept_checkpoint())
        health = cfg.health_interval and (self.step + 1) % cfg.health_interval == 0
        if health:
            grad_sq = grad_sq_per_layer(named)
            before = [p.numpy(force=True).copy() for _, p in named]
        norm = float(optim.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)) \
            if cfg.grad_clip > 0 else float("nan")
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.last_health = None
        if health:
            self.last_health = layer_health(named, before, grad_sq)
        return loss_value, ntok, lr, norm

    # -- evaluation ------------------------------------------------------------------------
    def val_loss(self, split="valid"):
        rng = np.random.default_rng(1234)   # the same batches at every evaluation
        split = "valid" if split == "val" else split    # every task knows "valid"; add no "val"
        total, counted = 0.0, 0
        with tgx.no_grad():
            self.model.eval()
            for _ in range(self.cfg.eval_batches):
                batch = self.draw_batch(split, rng)
                if not self.batch_tokens(batch):   # all padding: its mean is NaN, skip it
                    continue
                loss, _ = self.loss_on_batch(batch)
                total += loss.item()
                counted += 1
        self.model.train()
        if not counted:
            raise ValueError(f"val_loss: every target of the {self.cfg.eval_batches} batches "
                             f"drawn from the {split!r} split is padding; there is no loss to "
                             f"measure")
        return total / counted

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
        return float(np.mean([h == r for h, r in zip(hyps, refs, strict=True)]))

    def translate(self, sentences, beam_size=1, as_tokens=False, batch=1024):
        """Decode source strings (or token lists) into target strings (or token lists)."""
        out = []
        src_vocab, tgt_vocab = self.task.src_vocab, self.task.tgt_vocab
        max_len = self.task.max_lengths()[1] + 2
        tokens = [s if isinstance(s, (list, tuple)) else self.task.tokenize_src(s)
                  for s in sentences]
        unknown = sorted({t for toks in tokens for t in toks if t not in src_vocab})
        if unknown:                          # they become <unk>: say so, never silently
            warnings.warn(f"translate: {len(unknown)} source token(s) outside the vocabulary "
                          f"of task {self.cfg.task} are read as <unk>: "
                          f"{', '.join(map(repr, unknown[:10]))}"
                          f"{' ...' if len(unknown) > 10 else ''}", UnknownTokenWarning,
                          stacklevel=2)
        for start in range(0, len(sentences), batch):
            ids = [src_vocab.encode(t) for t in tokens[start:start + batch]]
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

        The first call claims cfg.out_dir (see `rundir.claim_run_dir`); metrics.jsonl gets one row a
        step, flushed as it is written, so the log survives a kill up to the last step done.
        """
        cfg = self.cfg
        end = cfg.max_steps if steps is None else self.step + steps
        lock = RunLock(cfg.out_dir, log=self.log)      # one process per run directory
        try:
            self._claim()
            return self._train_until(end)
        finally:
            lock.release()

    def _train_until(self, end):
        cfg = self.cfg
        log_path = os.path.join(cfg.out_dir, "metrics.jsonl")
        bar = Progress(end, self.step, cfg.progress, cfg.log_interval)
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        # SIGTERM (kill, a scheduler's stop) ends the run as Ctrl-C does: finish the step, save,
        # release the run directory
        previous_term = signal.signal(signal.SIGTERM, self._on_sigint)
        t0, tokens = time.perf_counter(), 0
        try:
            # numpy's overflow warnings are noise here: a NaN/inf loss, gradient or validation
            # loss stops the run with one line naming it (NonFiniteError)
            with open(log_path, "a", encoding="utf-8") as logf, \
                    np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                while self.step < end and not self._stop:
                    started = time.perf_counter()
                    loss, ntok, lr, norm = self.train_step()
                    seconds = time.perf_counter() - started
                    tokens += ntok
                    rate = tokens / max(time.perf_counter() - t0, 1e-9)
                    bar.update(loss, lr, rate)
                    flop_s = self.last_flops / max(seconds, 1e-9)
                    # MFU: the step's GEMM FLOP/s over this CPU's measured GEMM peak
                    row = {"step": self.step, "loss": loss, "lr": lr, "grad_norm": norm,
                           "tokens_per_s": rate, "flops": self.last_flops, "flop_per_s": flop_s,
                           "mfu": flop_s / tgx.perf.peak_flops()}
                    if self.last_health:
                        row["layers"] = self.last_health
                    evaluate = self.step % cfg.eval_interval == 0 or self.step == end
                    if evaluate:
                        ev = self.evaluate("valid")
                        check_weights_finite(self.step, ev["loss"],
                                             list(self.model.named_parameters()),
                                             self._kept_checkpoint())
                        row["val_loss"] = ev["loss"]
                        if "exact_match" in ev:
                            row["val_exact_match"] = ev["exact_match"]
                        bar.write(fmt_eval(row))
                    self.metrics.append(row)
                    # the row goes to disk before the checkpoint of its step: a kill between
                    # the two leaves a row past the checkpoint, which a resume drops
                    logf.write(json.dumps(row) + "\n")
                    logf.flush()
                    if evaluate:
                        self.save()
                        if is_finite(row["val_loss"]) and (
                                self.best_val is None or row["val_loss"] < self.best_val):
                            self.best_val = row["val_loss"]
                            self.save(self.best_path())
                    elif cfg.save_interval and self.step % cfg.save_interval == 0:
                        self.save()
        finally:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, previous_term)
            bar.close()
        if self._stop:
            path = self.save()
            how = "terminated" if self.stopped_by == signal.SIGTERM else "interrupted"
            self.log(f"{how} at step {self.step}: checkpoint saved to {path}")
            return False
        return True

    # -- the run directory -----------------------------------------------------------------
    def _claim(self):
        """Claim cfg.out_dir for this run once (rundir.claim_run_dir)."""
        if self._owns_dir:
            return
        claim_run_dir(self.cfg.out_dir, self.step, resumed_from=self.resumed_from,
                      overwrite=self.overwrite, log=self.log)
        self._owns_dir = True

    def _on_sigint(self, signum, frame):
        if self._stop:                 # a second Ctrl-C: stop at once
            raise KeyboardInterrupt
        self.stopped_by = signum
        self._stop = True              # finish the current step, then save and leave

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint_path(self):
        return os.path.join(self.cfg.out_dir, "checkpoint.npz")

    def best_path(self):
        return os.path.join(self.cfg.out_dir, "best.npz")

    def _kept_checkpoint(self, path=None):
        """Which checkpoint a stop for non-finite values leaves as it was (one clause)."""
        path = path or self.checkpoint_path()
        if not self._owns_dir or not os.path.exists(path):
            return "no checkpoint was written"
        return f"the last good checkpoint {path} is kept"

    def save(self, path=None):
        """Model, optimizer, schedule step, both RNG states, config and vocabulary, atomically.

        A failed save (disk full, file too large, no permission) raises CheckpointSaveError
        naming the file and the reason; the previous file at `path` is left as it was.
        """
        path = path or self.checkpoint_path()
        arrays = {f"model/{k}": v.numpy() for k, v in self.model.state_dict().items()}
        bad = first_nonfinite(arrays)
        if bad:                                   # never over a good checkpoint
            raise NonFiniteError(
                f"step {self.step}: checkpoint not saved: {path}: the weights hold NaN or inf "
                f"({bad[0][len('model/'):]}: {bad[1]} of {bad[2]} entries); "
                f"{self._kept_checkpoint(path)}")
        opt_meta = flatten(self.optimizer.state_dict(), "optim", arrays)
        meta = {"config": dataclasses.asdict(self.cfg), "step": self.step,
                "scheduler": self.scheduler.state_dict(), "optimizer": opt_meta,
                "rng": tgx.get_rng_state(), "data_rng": self.data_rng.bit_generator.state,
                "vocab": self._vocab_meta(), "best_val": self.best_val}
        if not self.lm:               # the decoding length and PE rows, without the data
            meta["max_lengths"] = [int(n) for n in self.task.max_lengths()]
        with ctrl_c_after():
            return write_checkpoint(path, arrays, meta)

    def _vocab_meta(self):
        if self.lm:
            return {"tokens": list(self.task.vocab)}
        return {"src": self.task.src_vocab.to_list(), "tgt": self.task.tgt_vocab.to_list()}

    @classmethod
    def from_checkpoint(cls, path, log=print, overwrite=False, need_data=True,
                        allow_nonfinite=False, **overrides):
        """Rebuild a trainer from a checkpoint; its config wins.

        A checkpoint whose weights hold NaN or inf is refused unless `allow_nonfinite`.
        `need_data=False` (decoding only): a chars or tsv checkpoint whose data file is gone
        still loads, from the vocabularies (and, tsv, the longest lengths) it carries. A data
        file that is there is always checked against that vocabulary (an edited file is an
        error, not a silently different model).

        `overrides` may change only RESUMABLE fields (out_dir, max_steps, lr, ...); any other
        field given with a value different from the checkpoint's is a ConfigError listing them.
        The checkpoint's config is validated like the command line's before anything is built.
        """
        validate_config(overrides)
        arrays, meta, values = read_checkpoint(path, overrides)
        bad = first_nonfinite({k: v for k, v in arrays.items() if k.startswith("model/")})
        if bad and not allow_nonfinite:           # a diverged run's weights decode garbage
            raise io.CheckpointError(
                f"checkpoint {path}: the weights hold NaN or inf ({bad[0][len('model/'):]}: "
                f"{bad[1]} of {bad[2]} entries); load an earlier checkpoint, or pass "
                f"--allow_nonfinite (allow_nonfinite=True) to load it anyway")
        where = f"checkpoint {path}: "
        cfg = TrainConfig(**values)
        vocab = meta["vocab"] if isinstance(meta["vocab"], dict) else {}
        saved = None if need_data else dict(vocab, max_lengths=meta.get("max_lengths"))
        trainer = cls(cfg, log=log, overwrite=overwrite, _where=where, _saved_vocab=saved)
        trainer.load_state(arrays, meta, path)
        trainer.resumed_from = os.fspath(path)
        return trainer

    def load_state(self, arrays, meta, path="<checkpoint>"):
        if meta.get("vocab") is not None and meta["vocab"] != self._vocab_meta():
            raise io.CheckpointError(
                vocab_mismatch(self.cfg, meta["vocab"], self._vocab_meta(), path))
        model_sd = {k[len("model/"):]: v for k, v in arrays.items() if k.startswith("model/")}
        try:
            self.model.load_state_dict(model_sd)
        except (KeyError, ValueError) as err:
            raise io.CheckpointError(f"{path}: the checkpoint does not fit this model "
                                     f"(config changed?): {one_line(err)}") from None
        try:
            self.optimizer.load_state_dict(unflatten(meta["optimizer"], arrays))
            self.scheduler.load_state_dict(meta["scheduler"])
            tgx.set_rng_state(meta["rng"])
            self.data_rng.bit_generator.state = meta["data_rng"]
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as err:
            raise io.CheckpointError(f"checkpoint {path}: damaged optimizer, schedule or RNG "
                                     f"state ({type(err).__name__}: {one_line(err)})") from None
        self.step = int(meta["step"])
        best = meta.get("best_val")
        self.best_val = best if is_finite(best) else None
