"""tinygradx.optim.lr_scheduler: PyTorch's learning-rate schedulers, with its semantics.

A scheduler owns the 'lr' of every parameter group of its optimizer. At construction it
records each group's 'initial_lr' (base_lrs) and takes its initial step (last_epoch -1 -> 0),
so the first optimizer step already runs at the schedule's first value; call `step()` after
each `optimizer.step()`. As in PyTorch most schedules are chainable: each step scales the
group's *current* lr, so an lr the user wrote into `param_groups[i]["lr"]` carries on:

    LambdaLR            lr = initial_lr * lr_lambda(last_epoch)
    StepLR              lr *= gamma when last_epoch is a multiple of step_size
    MultiStepLR         lr *= gamma (per milestone) when last_epoch is a milestone
    ExponentialLR       lr *= gamma
    LinearLR            factor from start_factor to end_factor over total_iters steps
    CosineAnnealingLR   eta_min + (initial_lr - eta_min) (1 + cos(pi t / T_max)) / 2,
                        in the recursive form torch uses (the same numbers)
    OneCycleLR          warm up from max_lr/div_factor to max_lr over pct_start of
                        total_steps, anneal to initial_lr/final_div_factor (cos or linear);
                        the momentum (or Adam's beta1) cycles the other way
    SequentialLR        one scheduler after another, switching at milestones

`step(epoch)` (deprecated in PyTorch) sets last_epoch and uses the closed form where one
exists. `state_dict()` is every attribute but the optimizer (LambdaLR keeps a callable
object's attributes, not a function); `load_state_dict` puts them back. tinygradx's own
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
import types
from bisect import bisect_right
from collections import Counter

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "LinearLR",
           "CosineAnnealingLR", "OneCycleLR", "SequentialLR"]


def _lrs(optimizer):
    return [g["lr"] for g in optimizer.param_groups]


class LRScheduler:
    """PyTorch's base class: subclasses define get_lr() (the lrs at self.last_epoch, from
    the groups' current lrs and self.base_lrs) and may define _closed_form()."""

    def __init__(self, optimizer, last_epoch=-1):
        name = type(self).__name__
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{name}: expected an optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"{name}: param_groups[{i}] has no 'initial_lr', which "
                                   f"resuming with last_epoch={last_epoch} needs: load the "
                                   f"optimizer state it was saved with, or use last_epoch=-1")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def step(self, epoch=None):
        """Advance one step (after optimizer.step()) and write the new lrs into the groups."""
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_closed_form", None)
            values = closed() if closed is not None else self.get_lr()
        for g, lr in zip(self.optimizer.param_groups, values, strict=True):
            g["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

    def get_last_lr(self):
        """The lrs last written into the groups, one per group."""
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(last_epoch); lr_lambda one callable or one per group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"LambdaLR: expected {n} lr_lambdas (one per group), got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for f in self.lr_lambdas:
            if not callable(f):
                raise TypeError(f"LambdaLR: lr_lambda must be callable, got {type(f).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs,
                                                             strict=True)]

    def state_dict(self):
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        out["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(vars(f))
                             for f in self.lr_lambdas]
        return out

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for f, attrs in zip(self.lr_lambdas, saved, strict=True):
            if attrs is not None:
                vars(f).update(attrs)


class StepLR(LRScheduler):
    """lr *= gamma every step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return _lrs(self.optimizer)
        return [lr * self.gamma for lr in _lrs(self.optimizer)]

    def _closed_form(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone (a milestone listed twice multiplies twice)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        hits = self.milestones.get(self.last_epoch, 0)
        if not hits:
            return _lrs(self.optimizer)
        return [lr * self.gamma ** hits for lr in _lrs(self.optimizer)]

    def _closed_form(self):
        k = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** k for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _lrs(self.optimizer)
        return [lr * self.gamma for lr in _lrs(self.optimizer)]

    def _closed_form(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


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
        lrs = _lrs(self.optimizer)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor
                              + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in lrs]

    def _closed_form(self):
        f = self.start_factor + (self.end_factor - self.start_factor) * min(
            self.total_iters, self.last_epoch) / self.total_iters
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
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        lrs = _lrs(self.optimizer)
        if self._is_initial:
            return lrs
        if self._step_count == 1 and t > 0:        # resumed at last_epoch > 0
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:             # the bottom of a period
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, lr in zip(self.base_lrs, lrs, strict=True)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - lo) + lo for lr in lrs]

    def _closed_form(self):
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]


def _per_group(name, optimizer, value):
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"OneCycleLR: expected {n} values of {name} (one per group), got "
                             f"{len(value)}")
        return list(value)
    return [value] * n


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin 2017), as PyTorch's; needs total_steps, or epochs
    and steps_per_epoch. Stepping past total_steps raises."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float in [0, 1], got "
                             f"{pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        self._phases = ([(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                         (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                          "base_momentum", "max_momentum"),
                         (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                          "max_momentum")] if three_phase else
                        [(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                         (self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                          "max_momentum")])
        groups = optimizer.param_groups
        if last_epoch == -1:
            for g, top in zip(groups, _per_group("max_lr", optimizer, max_lr), strict=True):
                g["initial_lr"] = top / div_factor
                g["max_lr"] = top
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = getattr(optimizer, "defaults", {})
            if "momentum" not in defaults and "betas" not in defaults:
                raise ValueError("OneCycleLR: cycle_momentum=True needs an optimizer with "
                                 "momentum or betas (pass cycle_momentum=False)")
            self.use_beta1 = "betas" in defaults
            if last_epoch == -1:
                for g, hi, lo in zip(groups, _per_group("max_momentum", optimizer, max_momentum),
                                     _per_group("base_momentum", optimizer, base_momentum),
                                     strict=True):
                    self._set_momentum(g, hi)
                    g["max_momentum"], g["base_momentum"] = hi, lo
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, m):
        if self.use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        n = self.last_epoch
        if n > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {n} times, but total_steps is "
                             f"{self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if n <= end or i == len(self._phases) - 1:
                    pct = (n - start) / (end - start)
                    lrs.append(self._anneal(g[lr0], g[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(g, self._anneal(g[m0], g[m1], pct))
                    break
                start = end
        return lrs


def _total_steps(total_steps, epochs, steps_per_epoch):
    def positive(name, v):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"OneCycleLR: {name} must be a positive int, got {v!r}")
        return v
    if total_steps is not None:
        return positive("total_steps", total_steps)
    if epochs is not None and steps_per_epoch is not None:
        return positive("epochs", epochs) * positive("steps_per_epoch", steps_per_epoch)
    raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")


class SequentialLR(LRScheduler):
    """schedulers[0] until milestones[0], then schedulers[1] (restarted at its epoch 0), and
    so on; all on the same optimizer."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR: expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} ({type(s).__name__}) belongs to "
                                 f"another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        for s in self._schedulers:                 # their construction stepped them once
            _undo_step(s)
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


def _undo_step(s):
    if hasattr(s, "_schedulers"):
        for sub in s._schedulers:
            _undo_step(sub)
    elif hasattr(s, "last_epoch"):
        s.last_epoch -= 1


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
