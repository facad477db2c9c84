"""tinygradx.optim.lr_scheduler: PyTorch's learning-rate schedulers, every one, with its
semantics (torch.optim.lr_scheduler's names, arguments, lr sequences, warnings and state).

A scheduler owns the 'lr' of every parameter group of its optimizer. At construction it
records each group's 'initial_lr' (base_lrs) and takes its initial step (last_epoch -1 -> 0),
so the first optimizer step already runs at the schedule's first value; call `step()` after
each `optimizer.step()` (calling it before the optimizer's first step warns, as PyTorch). As in
PyTorch most schedules are chainable: each step scales the group's *current* lr, so an lr the
user wrote into `param_groups[i]["lr"]` carries on:

    LambdaLR            lr = initial_lr * lr_lambda(last_epoch)
    MultiplicativeLR    lr *= lr_lambda(last_epoch)
    StepLR              lr *= gamma when last_epoch is a multiple of step_size
    MultiStepLR         lr *= gamma (per milestone) when last_epoch is a milestone
    ConstantLR          lr = initial_lr * factor until total_iters, then initial_lr
    LinearLR            factor from start_factor to end_factor over total_iters steps
    ExponentialLR       lr *= gamma
    PolynomialLR        lr = initial_lr (1 - min(t, total_iters) / total_iters)^power
    CosineAnnealingLR   eta_min + (initial_lr - eta_min) (1 + cos(pi t / T_max)) / 2,
                        in the recursive form torch uses (the same numbers)
and, in lr_cycles.py: CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts; in lr_combined.py:
SequentialLR, ChainedScheduler, ReduceLROnPlateau (driven by a metric); the base class in
lr_base.py. All are at this module's path, as in PyTorch.

`step(epoch)` (deprecated in PyTorch, with its warning) sets last_epoch and uses the closed
form where one exists. `state_dict()` is every attribute but the optimizer, under PyTorch's
names (a LambdaLR keeps a callable object's attributes, not a function), so a state dict goes
between the two libraries; `load_state_dict` puts them back. tinygradx's own
`optim.LRScheduler(optimizer, schedule)` is a subclass whose schedule(i) is the rate itself.

The schedules that subclass is given are plain functions of the step, at the end of this file
and re-exported from tinygradx.optim (`optim.noam`, `optim.warmup_cosine`, `optim.constant`);
they stay out of `__all__`, which lists PyTorch's names only::

    noam(s)          = factor * d_model^-0.5 * min(s^-0.5, s * warmup^-1.5)       s = 1, 2, ...
    warmup_cosine(i) = max_lr * (i + 1) / (warmup + 1)                           i < warmup
                     = min_lr + (max_lr - min_lr) * (1 + cos(pi * r)) / 2        warmup <= i < decay
                       with r = (i - warmup) / (decay - warmup)
                     = min_lr                                                    i >= decay
    constant(i)      = lr
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter

from .lr_base import (EPOCH_WARNING, LRScheduler, check_optimizer,  # noqa: F401
                      function_state, group_lrs, per_group)
from .lr_combined import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .lr_cycles import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
           "OneCycleLR", "PolynomialLR"]

class _LambdaBased(LRScheduler):
    """LambdaLR and MultiplicativeLR: one callable of the epoch per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        name = type(self).__name__
        check_optimizer(name, optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"{name}: expected {n} lr_lambdas (one per group), got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"{name}: lr_lambda must be callable, got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        out["lr_lambdas"] = function_state(self.lr_lambdas)
        return out

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for f, attrs in zip(self.lr_lambdas, saved, strict=True):
            if attrs is not None:
                vars(f).update(attrs)


class LambdaLR(_LambdaBased):
    """lr = initial_lr * lr_lambda(last_epoch); lr_lambda one callable or one per group."""

    def get_lr(self):
        self._warn_outside_step()
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs,
                                                             strict=True)]


class MultiplicativeLR(_LambdaBased):
    """lr *= lr_lambda(last_epoch) at every step after the first."""

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return group_lrs(self.optimizer)
        return [g["lr"] * f(self.last_epoch) for f, g in zip(
            self.lr_lambdas, self.optimizer.param_groups, strict=True)]


class StepLR(LRScheduler):
    """lr *= gamma every step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return group_lrs(self.optimizer)
        return [lr * self.gamma for lr in group_lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone (a milestone listed twice multiplies twice)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        hits = self.milestones.get(self.last_epoch, 0)
        if not hits:
            return group_lrs(self.optimizer)
        return [lr * self.gamma ** hits for lr in group_lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        k = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** k for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor for the first total_iters steps, then initial_lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        lrs = group_lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        if not self.factor:
            raise ValueError("ConstantLR: factor=0 set lr to 0, which the step at total_iters "
                             "cannot scale back (PyTorch divides by the factor there); use a "
                             "factor > 0")
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _get_closed_form_lr(self):
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * f for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor on initial_lr goes linearly from start_factor to end_factor over
    total_iters steps, then stays."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        lrs = group_lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor
                              + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in lrs]

    def _get_closed_form_lr(self):
        f = self.start_factor + (self.end_factor - self.start_factor) * min(
            self.total_iters, self.last_epoch) / self.total_iters
        return [base * f for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return group_lrs(self.optimizer)
        return [lr * self.gamma for lr in group_lrs(self.optimizer)]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr (1 - min(t, total_iters) / total_iters)^power: a polynomial decay to 0
    at total_iters (power 1: linear), then 0."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        lrs = group_lrs(self.optimizer)
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        t, n = self.last_epoch, self.total_iters
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * decay for lr in lrs]

    def _get_closed_form_lr(self):
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base * f for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2 (SGDR without
    restarts; past T_max it rises again, as in PyTorch)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if not T_max > 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be > 0, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        lrs = group_lrs(self.optimizer)
        if self._is_initial:
            return lrs
        if self._step_count == 1 and t > 0:        # resumed at last_epoch > 0
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:             # the bottom of a period
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, lr in zip(self.base_lrs, lrs, strict=True)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - lo) + lo for lr in lrs]

    def _get_closed_form_lr(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]


# -- learning-rate schedules: plain functions of the step ------------------------------------
def noam(step, d_model, warmup, factor=1.0):
    """Vaswani et al.'s schedule: factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    `step` counts from 1; the rate rises linearly for `warmup` steps, peaks at step = warmup with
    factor / sqrt(d_model * warmup), then decays as step^-0.5.
    """
    if step < 1:
        raise ValueError(f"noam: step counts from 1, got {step} (with LRScheduler, which counts "
                         f"from 0, use lambda i: noam(i + 1, ...))")
    if warmup <= 0 or d_model <= 0:
        raise ValueError(f"noam: d_model and warmup must be > 0, got d_model={d_model}, "
                         f"warmup={warmup}")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def warmup_cosine(step, max_lr, warmup_iters, lr_decay_iters, min_lr):
    """nanoGPT's get_lr: linear warmup, cosine decay to min_lr, then min_lr (step from 0).

    step < warmup_iters: max_lr * (step + 1) / (warmup_iters + 1);
    up to lr_decay_iters: min_lr + (max_lr - min_lr) * (1 + cos(pi * r)) / 2 with
    r = (step - warmup_iters) / (lr_decay_iters - warmup_iters); afterwards min_lr.
    """
    if lr_decay_iters < warmup_iters:
        raise ValueError(f"warmup_cosine: lr_decay_iters={lr_decay_iters} is smaller than "
                         f"warmup_iters={warmup_iters}")
    if step < warmup_iters:
        return max_lr * (step + 1) / (warmup_iters + 1)
    if step >= lr_decay_iters:  # also covers lr_decay_iters == warmup_iters (no decay phase)
        return min_lr
    ratio = (step - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def constant(step, lr):
    """The same rate at every step."""
    return lr
