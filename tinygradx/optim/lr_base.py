"""The base class of tinygradx.optim.lr_scheduler's schedulers, PyTorch's `LRScheduler`, and
what the schedulers share (their modules: lr_scheduler.py, lr_cycles.py, lr_combined.py; every
name is public there, at tinygradx.optim.lr_scheduler)."""
from __future__ import annotations

import types
import warnings

EPOCH_WARNING = ("scheduler.step(epoch): the epoch argument is deprecated (in PyTorch too); "
                 "call step() once per epoch or batch. With an epoch the closed form is used "
                 "where there is one")


def group_lrs(optimizer):
    """Every group's current lr (what get_last_lr() gives)."""
    return [g["lr"] for g in optimizer.param_groups]


def per_group(name, optimizer, value, who):
    """A value per parameter group: a list or tuple of one each, or one value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{who}: {name} needs one value per parameter group ({n}), got "
                             f"{len(value)}")
        return list(value)
    return [value] * n


def check_optimizer(who, optimizer):
    from .optimizer import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{who}: expected an optimizer, got {type(optimizer).__name__}")


def function_state(fns):
    """A LambdaLR's callables in a state dict: a callable object's attributes, else None."""
    return [None if isinstance(f, types.FunctionType) else dict(vars(f)) for f in fns]


class LRScheduler:
    """PyTorch's base class: subclasses define get_lr() (the lrs at self.last_epoch, from the
    groups' current lrs and self.base_lrs) and may define _get_closed_form_lr()."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        name = type(self).__name__
        check_optimizer(name, optimizer)
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

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn(f"{type(self).__name__}.get_lr() outside step(): the last rates the "
                          f"scheduler set are get_last_lr() (as PyTorch warns)", UserWarning,
                          stacklevel=3)

    def step(self, epoch=None):
        """Advance one step (after optimizer.step()) and write the new lrs into the groups."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(f"{type(self).__name__}.step() was called before the optimizer's "
                          f"first step(): call optimizer.step() first, else the schedule's "
                          f"first value is skipped (as PyTorch warns)", UserWarning,
                          stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for g, lr in zip(self.optimizer.param_groups, values, strict=True):
            g["lr"] = lr
        self._last_lr = group_lrs(self.optimizer)

    def get_last_lr(self):
        """The lrs last written into the groups, one per group."""
        return self._last_lr

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
