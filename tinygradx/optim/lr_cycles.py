"""The schedules of tinygradx.optim.lr_scheduler that run in cycles, PyTorch's:

    CyclicLR            the lr rises from base_lr to max_lr over step_size_up steps and falls
                        back over step_size_down (Smith 2017): "triangular", "triangular2"
                        (the height halves each cycle), "exp_range" (scaled by gamma^t), or a
                        scale_fn of the cycle or of the step; the momentum (or Adam's beta1)
                        cycles the other way
    OneCycleLR          warm up from max_lr/div_factor to max_lr over pct_start of
                        total_steps, anneal to initial_lr/final_div_factor (cos or linear),
                        optionally in three phases; the momentum cycles the other way
    CosineAnnealingWarmRestarts
                        SGDR (Loshchilov & Hutter 2016): a cosine from initial_lr down to
                        eta_min over T_i steps, then a restart, T_i growing by T_mult

Each keeps PyTorch's attributes (its state dict), so state dicts go between the libraries.
"""
from __future__ import annotations

import math
import types
from functools import partial

from .lr_base import LRScheduler, check_optimizer, group_lrs, per_group


def _set_momentum(group, m, use_beta1):
    if use_beta1:
        group["betas"] = (m, *group["betas"][1:])
    else:
        group["momentum"] = m


def _momentum_groups(who, optimizer, cycle, base, top, last_epoch):
    """The per-group momentum bounds of a cycling schedule: checked, and written into the groups
    (the start of a cycle is the top) when the schedule starts fresh. Returns use_beta1."""
    if not cycle:
        return None
    defaults = getattr(optimizer, "defaults", {})
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError(f"{who}: cycle_momentum=True needs an optimizer with momentum or betas "
                         f"(pass cycle_momentum=False)")
    use_beta1 = "betas" in defaults
    if last_epoch == -1:
        for g, hi, lo in zip(optimizer.param_groups, top, base, strict=True):
            _set_momentum(g, hi, use_beta1)
            g["max_momentum"], g["base_momentum"] = hi, lo
    return use_beta1


def _triangular(x):
    return 1.0


def _triangular2(x):
    return 1 / (2.0 ** (x - 1))


def _exp_range(gamma, x):
    return gamma ** x


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017), PyTorch's CyclicLR; step it after every batch."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        who = "CyclicLR"
        check_optimizer(who, optimizer)
        self.optimizer = optimizer
        base_lrs = per_group("base_lr", optimizer, base_lr, who)
        if last_epoch == -1:
            for lr, g in zip(base_lrs, optimizer.param_groups, strict=True):
                g["lr"] = lr
        self.max_lrs = per_group("max_lr", optimizer, max_lr, who)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if not up + down > 0:
            raise ValueError(f"{who}: step_size_up + step_size_down must be > 0, got {up} + "
                             f"{down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"{who}: mode must be 'triangular', 'triangular2' or 'exp_range' "
                             f"(or give scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{who}: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r}")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_groups(
                who, optimizer, True, per_group("base_momentum", optimizer, base_momentum, who),
                per_group("max_momentum", optimizer, max_momentum, who), last_epoch)
            self.base_momentums = per_group("base_momentum", optimizer, base_momentum, who)
            self.max_momentums = per_group("max_momentum", optimizer, max_momentum, who)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = _triangular, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = _triangular2, "cycle"
        else:
            self._scale_fn_ref, self.scale_mode = partial(_exp_range, self.gamma), "iterations"

    def scale_fn(self, x):
        """The height's scale at cycle (or step) x."""
        fn = self._scale_fn_custom if self._scale_fn_custom is not None else self._scale_fn_ref
        return fn(x)

    def get_lr(self):
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle        # position in the cycle
        if x <= self.step_ratio:
            rise = x / self.step_ratio
        else:
            rise = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [lo + (hi - lo) * rise * self.scale_fn(at)
               for lo, hi in zip(self.base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for g, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                 self.max_momentums, strict=True):
                _set_momentum(g, hi - (hi - lo) * rise * self.scale_fn(at), self.use_beta1)
        return lrs

    def state_dict(self):
        out = super().state_dict()
        out.pop("_scale_fn_ref", None)
        fn = out.pop("_scale_fn_custom")
        out["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                   else dict(vars(fn)))
        return out

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            vars(self._scale_fn_custom).update(fn)
        self._init_scale_fn()


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin 2017), as PyTorch's; needs total_steps, or epochs
    and steps_per_epoch. Stepping past total_steps raises."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        who = "OneCycleLR"
        check_optimizer(who, optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        n = self.total_steps
        up = float(pct_start * n) - 1
        self._schedule_phases = ([
            phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum",
                  "max_momentum"),
            phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
            if three_phase else [
            phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")])
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"{who}: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{who}: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        tops = per_group("max_lr", optimizer, max_lr, who)
        if last_epoch == -1:
            for g, top in zip(optimizer.param_groups, tops, strict=True):
                g["initial_lr"] = top / div_factor
                g["max_lr"] = top
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_groups(
                who, optimizer, True, per_group("base_momentum", optimizer, base_momentum, who),
                per_group("max_momentum", optimizer, max_momentum, who), last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        self._warn_outside_step()
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {t} times, but total_steps is "
                             f"{self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if t <= end or i == len(self._schedule_phases) - 1:
                    pct = (t - start) / (end - start)
                    lrs.append(self._anneal(g[ph["start_lr"]], g[ph["end_lr"]], pct))
                    if self.cycle_momentum:
                        _set_momentum(g, self._anneal(g[ph["start_momentum"]],
                                                      g[ph["end_momentum"]], pct),
                                      self.use_beta1)
                    break
                start = end
        return lrs


def phase(end, lr0, lr1, m0, m1):
    """One phase of OneCycleLR: the step it ends at, the group keys it anneals between."""
    return {"end_step": end, "start_lr": lr0, "end_lr": lr1, "start_momentum": m0,
            "end_momentum": m1}


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


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: lr = eta_min + (initial_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, restarting
    when T_cur reaches T_i (T_0 at first, then times T_mult). step(epoch) may take a fractional
    epoch (a batch's position), as in PyTorch."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        who = "CosineAnnealingWarmRestarts"
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"{who}: T_0 must be a positive int, got {T_0!r}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"{who}: T_mult must be an int >= 1, got {T_mult!r}")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (int, float)):
            raise ValueError(f"{who}: eta_min must be a float or an int, got {eta_min!r}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    def step(self, epoch=None):
        """One step, or jump to `epoch` (a float may be within an epoch)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be >= 0, got "
                                 f"{epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    k = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** k - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** k
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            lrs = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            g["lr"] = lr
        self._last_lr = group_lrs(self.optimizer)
