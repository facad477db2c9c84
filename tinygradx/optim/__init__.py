"""Optimizers, gradient clipping and learning-rate schedules, in PyTorch's names and semantics.

Every update works on the numpy arrays behind the parameters (``p._data``, ``p.grad._data``) in
place, so no graph is recorded and references to ``p._data`` (a module's weight, a tied embedding)
stay valid. The package holds one module per concept, all re-exported here:

    optimizer.py     `Optimizer`: parameter groups, their checks, step/zero_grad, PyTorch's
                     state dict (and the layout of older tinygradx checkpoints), hooks
    sgd.py           `SGD` (momentum, Nesterov, L2 decay, maximize), `ASGD` (averaged SGD)
    adam.py          `Adam` and `AdamW` (decoupled weight decay, amsgrad, maximize)
    adaptive.py      `RMSprop`, `Adagrad`, `Adadelta`, `Adamax`, `Rprop`
    adam_variants.py `NAdam`, `RAdam`, `Adafactor`
    lbfgs.py         `LBFGS` (two-loop recursion, strong Wolfe line search)
    clip_grad.py     gradient clipping (`clip_grad_norm_`, `clip_grad_value_`)
    lr_scheduler.py  the learning-rate schedules: PyTorch's schedulers (LambdaLR, StepLR,
                     CosineAnnealingLR, OneCycleLR, ...) as `optim.lr_scheduler`, and tinygradx's
                     own (`noam`, `warmup_cosine`, `constant`) as plain functions of the step

`LRScheduler` (below) writes one of those functions into every group's 'lr'; it subclasses
PyTorch's base class `lr_scheduler.LRScheduler`.
"""
from __future__ import annotations

from . import lr_scheduler
from .adam import Adam, AdamW
from .adam_variants import Adafactor, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, Adamax, RMSprop, Rprop
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .lbfgs import LBFGS
from .lr_scheduler import constant, noam, warmup_cosine
from .optimizer import Optimizer, as_scalar
from .sgd import ASGD, SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "Rprop", "ASGD", "LBFGS", "Adafactor", "clip_grad_norm_",
           "clip_grad_value_", "noam", "warmup_cosine", "constant", "LRScheduler",
           "lr_scheduler"]


# --------------------------------------------------------------------------------------------
# learning-rate scheduler (the schedules themselves are in lr_scheduler.py)
# --------------------------------------------------------------------------------------------

class LRScheduler(lr_scheduler.LRScheduler):
    """tinygradx's schedule writer: schedule(i) is the learning rate itself, written into
    every parameter group's 'lr', i = 0, 1, 2, ...

    i is the index of the optimizer update about to run (nanoGPT's iter_num): the constructor
    sets schedule(0), and each `step()` (call it after ``optimizer.step()``, as in PyTorch)
    advances i and sets schedule(i). `schedule` is any callable of one int, e.g.::

        sched = LRScheduler(opt, lambda i: noam(i + 1, d_model=512, warmup=4000))
        sched = LRScheduler(opt, lambda i: warmup_cosine(i, 6e-4, 2000, 600000, 6e-5))

    It is a scheduler of `lr_scheduler` (PyTorch's base class, so `get_last_lr()`,
    `last_epoch` (= `last_step`) and the groups' 'initial_lr' are there), and differs from
    `lr_scheduler.LambdaLR` only in giving the rate, not a factor on initial_lr.
    `state_dict()` holds only the step count (the schedule is code, rebuilt by the caller).
    """

    def __init__(self, optimizer, schedule=None, last_step=0):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LRScheduler: expected an Optimizer, got "
                            f"{type(optimizer).__name__}")
        if not callable(schedule):
            raise TypeError(f"LRScheduler(optimizer, schedule): schedule must be a callable "
                            f"step -> lr, got {type(schedule).__name__}. (This is tinygradx's "
                            f"schedule writer; PyTorch's base class torch.optim.lr_scheduler."
                            f"LRScheduler is tgx.optim.lr_scheduler.LRScheduler)")
        self.schedule = schedule
        for g in optimizer.param_groups:        # resuming at last_step > 0 needs no history
            g.setdefault("initial_lr", g["lr"])
        super().__init__(optimizer, last_epoch=int(last_step) - 1)

    @property
    def last_step(self):
        return self.last_epoch

    def get_lr(self):
        lr = float(self.schedule(self.last_epoch))
        if not lr >= 0:
            raise ValueError(f"LRScheduler: the schedule gave lr={lr} at step {self.last_epoch}"
                             f"; a learning rate must be >= 0")
        return [lr] * len(self.optimizer.param_groups)

    def state_dict(self):
        return {"last_step": self.last_epoch}

    def load_state_dict(self, state_dict):
        if "last_step" not in state_dict:
            raise ValueError(f"LRScheduler.load_state_dict: missing 'last_step'; got keys "
                             f"{sorted(state_dict)}")
        self.last_epoch = int(as_scalar(state_dict["last_step"])) - 1
        self._update_lr()       # the rate at the saved step (a resume, not a step of training)
