"""Learning-rate schedules: plain functions of the step.

`tinygradx.optim.LRScheduler` writes one into every parameter group's 'lr'. The names are
re-exported from tinygradx.optim (`optim.noam`, `optim.warmup_cosine`, `optim.constant`)::

    noam(s)          = factor * d_model^-0.5 * min(s^-0.5, s * warmup^-1.5)       s = 1, 2, ...
    warmup_cosine(i) = max_lr * (i + 1) / (warmup + 1)                           i < warmup
                     = min_lr + (max_lr - min_lr) * (1 + cos(pi * r)) / 2        warmup <= i < decay
                       with r = (i - warmup) / (decay - warmup)
                     = min_lr                                                    i >= decay
    constant(i)      = lr
"""
from __future__ import annotations

import math

__all__ = ["noam", "warmup_cosine", "constant"]


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
