"""The schedules of tinygradx.optim.lr_scheduler that combine schedulers or follow a metric,
PyTorch's:

    SequentialLR        schedulers[0] until milestones[0], then schedulers[1] (restarted at
                        its epoch 0), and so on; all on the same optimizer
    ChainedScheduler    every scheduler's step at each step, their factors multiplying
    ReduceLROnPlateau   lr *= factor once the metric given to step(metric) has not improved
                        (by threshold, relative or absolute, for mode 'min' or 'max') for more
                        than patience steps; then cooldown steps without counting; never below
                        min_lr, nor by less than eps

Each keeps PyTorch's attributes (its state dict), so state dicts go between the libraries.
"""
from __future__ import annotations

import math
import warnings
from bisect import bisect_right

from .lr_base import EPOCH_WARNING, LRScheduler, check_optimizer, group_lrs


def _check_members(who, schedulers, optimizer):
    if len(schedulers) < 1:
        raise ValueError(f"{who}: expects at least one scheduler")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{who}: scheduler {i} ({type(s).__name__}) has no optimizer")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{who}: scheduler {i} is a ReduceLROnPlateau, whose step needs "
                             f"the metric; step it on its own")
        if s.optimizer is not optimizer:
            raise ValueError(f"{who}: scheduler {i} ({type(s).__name__}) belongs to another "
                             f"optimizer")


def _undo_step(s):
    """Take back the initial step a scheduler's construction took (nested ones too)."""
    if hasattr(s, "_schedulers"):
        for sub in s._schedulers:
            _undo_step(sub)
    elif hasattr(s, "last_epoch"):
        s.last_epoch -= 1


class _Combined(LRScheduler):
    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        subs = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, sd in zip(self._schedulers, subs, strict=True):
            s.load_state_dict(sd)


class SequentialLR(_Combined):
    """schedulers[0] until milestones[0], then schedulers[1] (restarted at its epoch 0), and
    so on; all on the same optimizer."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        _check_members("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        _undo_step(self)                          # their construction stepped them once
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self):
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s._update_lr(0)                         # the next scheduler starts from its epoch 0
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Combined):
    """Every scheduler steps at each step(), in order, on the same optimizer: their effects
    compose (e.g. a warm-up factor on top of a decay)."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler: expects at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        _check_members("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = group_lrs(self._schedulers[-1].optimizer)

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = group_lrs(self._schedulers[-1].optimizer)


class ReduceLROnPlateau(LRScheduler):
    """lr *= factor when the metric has stopped improving for more than patience steps:
    `step(metric)` after each evaluation (a number or a 0-d Tensor)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if not factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor}")
        self.factor = factor
        check_optimizer("ReduceLROnPlateau", optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"ReduceLROnPlateau: expected {n} min_lrs (one per group), "
                                 f"got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * n
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = group_lrs(optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        """Count the metric (a number or a 0-d Tensor): better by threshold than the best so
        far resets the count; more than patience bad steps in a row reduce the lr."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0                 # bad steps in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = group_lrs(self.optimizer)

    def _reduce_lr(self, epoch):
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has "
                                   f"{len(self.optimizer.param_groups)} parameter groups, "
                                   f"{len(self.min_lrs)} when the scheduler was made; set "
                                   f"min_lrs to one value per group")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, g in enumerate(self.optimizer.param_groups):
            old = float(g["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                g["lr"] = new

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel"
                        else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel"
                    else best + self.threshold)

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
