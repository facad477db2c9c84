"""Optimizers, gradient clipping and learning-rate schedules, in PyTorch's names and semantics.

Every update works on the numpy arrays behind the parameters (``p._data``, ``p.grad._data``) in
place, so no graph is recorded and references to ``p._data`` (a module's weight, a tied embedding)
stay valid. With g = p.grad, lr = the group's learning rate, t = the parameter's step count
(1 on the first update), wd = weight_decay:

SGD (momentum mu, dampening tau, PyTorch's rule)::

    g <- g + wd * p                                 (L2 term, if wd != 0)
    b <- g                       on the first step  (if mu != 0)
    b <- mu * b + (1 - tau) * g  afterwards
    g <- g + mu * b  if nesterov  else  g <- b
    p <- p - lr * g

Adam (Kingma & Ba; weight decay is an L2 term added to the gradient)::

    g <- g + wd * p
    m <- beta1 * m + (1 - beta1) * g
    v <- beta2 * v + (1 - beta2) * g^2
    p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

AdamW (Loshchilov & Hutter; decoupled weight decay, applied before the Adam step)::

    p <- p - lr * wd * p
    then Adam's m, v and p updates with wd = 0

Gradient clipping (`clip_grad_norm_`, `clip_grad_value_`) is in clip_grad.py, re-exported here.
The learning-rate schedules (`noam`, `warmup_cosine`, `constant`) are plain functions of the step
in lr_scheduler.py, re-exported here; `LRScheduler` writes one into every group's 'lr'. PyTorch's
schedulers (LambdaLR, StepLR, CosineAnnealingLR, OneCycleLR, ...) are `optim.lr_scheduler`
(lr_scheduler.py), whose base class `LRScheduler` subclasses.

Parameter groups work as in PyTorch: pass a list of dicts, each with 'params' and any
hyperparameters that differ from the defaults, e.g. to keep biases, LayerNorm and embeddings out
of weight decay::

    opt = AdamW([{"params": decay, "weight_decay": 0.1},
                 {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)

`Optimizer.state_dict` holds only numpy arrays, Python numbers, strings and lists/dicts of them
(parameters are named by "group.position", never by id), so it can be written with `np.savez` +
JSON and read back with ``allow_pickle=False``.

The update kernels (`_sgd_update`, `_adam_update`) take plain arrays and scalars, so a later
version can run them once over a flat buffer holding every parameter.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..fast import kernels, parallel
from . import lr_scheduler
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .lr_scheduler import constant, noam, warmup_cosine
from ..tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "clip_grad_norm_", "clip_grad_value_", "noam",
           "warmup_cosine", "constant", "LRScheduler", "lr_scheduler"]


# --------------------------------------------------------------------------------------------
# the base class
# --------------------------------------------------------------------------------------------

def _as_scalar(v):
    """0-d arrays (what np.load gives back for a saved number) become Python numbers."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses implement `_update_group`.

    `param_groups` is a list of dicts: 'params' (a list of Tensors) plus every hyperparameter.
    `state` maps a parameter (the Tensor object) to a dict of its buffers (numpy arrays, ints).
    """

    # names of the per-parameter state entries a subclass keeps (checked by load_state_dict)
    _state_keys: tuple = ()
    _array_keys: tuple = ()  # the state entries that are arrays shaped like the parameter

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}
        self._scratch = {}  # dtype -> flat work buffer shared by all parameters (not state)
        if isinstance(params, Tensor):
            raise TypeError(f"{self._name()}: params must be an iterable of Tensors or of dicts "
                            f"(parameter groups), got a single Tensor; wrap it in a list")
        if isinstance(params, dict):
            params = [params]
        groups = list(params)
        if not groups:
            raise ValueError(f"{self._name()}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)
        if not any(g["params"] for g in self.param_groups):
            raise ValueError(f"{self._name()}: got an empty parameter list (every group is "
                             f"empty)")

    def _name(self):
        return type(self).__name__

    # -- groups and validation -------------------------------------------------------------
    def add_param_group(self, group):
        """Add a dict with 'params' (Tensors) and hyperparameters; missing ones get defaults."""
        name = self._name()
        if not isinstance(group, dict):
            raise TypeError(f"{name}: a parameter group must be a dict with 'params', got "
                            f"{type(group).__name__} (don't mix Tensors and dicts)")
        if "params" not in group:
            raise ValueError(f"{name}: a parameter group needs a 'params' entry, got keys "
                             f"{sorted(group)}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        # An empty group is allowed, as in PyTorch (nanoGPT's no-decay group may be empty for a
        # model without biases); only an optimizer with no parameters at all is refused.
        gi = len(self.param_groups)
        for i, p in enumerate(params):
            where = f"parameter {i} of group {gi}"
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: {where} is a {type(p).__name__}, not a Tensor")
            if p._data.dtype.kind != "f":
                raise TypeError(f"{name}: {where} (shape {p.shape}) has dtype {p.dtype}; only "
                                f"floating-point tensors can be optimized")
            # requires_grad=False is allowed, as in PyTorch: a frozen tensor keeps grad None,
            # and step() skips a parameter whose grad is None
            if not p.is_leaf:
                raise ValueError(f"{name}: {where} (shape {p.shape}) is not a leaf tensor (it "
                                 f"was computed by an op); optimize the leaf it came from")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        local = set()
        for i, p in enumerate(params):
            if id(p) in seen or id(p) in local:
                raise ValueError(f"{name}: parameter {i} of group {gi} (shape {p.shape}) "
                                 f"appears more than once (in this group or an earlier one); "
                                 f"each parameter may belong to one group only, once")
            local.add(id(p))
        new = {k: v for k, v in self.defaults.items()}
        new.update({k: v for k, v in group.items() if k != "params"})
        self._check_hyper(new, gi)
        new["params"] = params
        self.param_groups.append(new)

    def _check_hyper(self, group, gi):
        """Raise a ValueError naming the optimizer, group and value for a bad hyperparameter."""
        name, where = self._name(), f"(group {gi})"
        lr = group.get("lr")
        if not isinstance(lr, numbers.Real) or isinstance(lr, bool) or not lr >= 0:
            raise ValueError(f"{name}: invalid learning rate lr={lr!r} {where}; must be a "
                             f"number >= 0")
        wd = group.get("weight_decay", 0)
        if not isinstance(wd, numbers.Real) or not wd >= 0:
            raise ValueError(f"{name}: invalid weight_decay={wd!r} {where}; must be >= 0")

    def _check_float(self, group, key, gi, lo, hi, lo_open=False, hi_open=True):
        v = group[key]
        ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and \
            (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
        if not ok:
            rng = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
            raise ValueError(f"{self._name()}: invalid {key}={v!r} (group {gi}); must be in "
                             f"{rng}")

    # -- the training-loop API -------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Forget the gradients: drop them (default, frees memory) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    def step(self, closure=None):
        """Update every parameter that has a gradient; parameters with grad None are skipped.

        `closure`, if given, is called first (it should recompute the loss and call backward)
        and its return value is returned, as in PyTorch.
        """
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            self._update_group(group)
        return loss

    def _update_group(self, group):
        raise NotImplementedError

    def _work(self, p, k=1):
        """k scratch arrays shaped like p, views into one buffer reused across parameters."""
        n, dt = p._data.size, p._data.dtype
        buf = self._scratch.get(dt)
        if buf is None or buf.shape[1] < n or buf.shape[0] < k:
            rows = max(k, 0 if buf is None else buf.shape[0])
            cols = max(n, 0 if buf is None else buf.shape[1])
            buf = self._scratch[dt] = np.empty((rows, cols), dt)
        return [buf[i, :n].reshape(p._data.shape) for i in range(k)]

    @staticmethod
    def _grad_of(p):
        g = p.grad._data if isinstance(p.grad, Tensor) else np.asarray(p.grad)
        if g.shape != p._data.shape:
            raise ValueError(f"optimizer step: a parameter of shape {p.shape} has a gradient "
                             f"of shape {g.shape}")
        return g

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self):
        """A checkpointable copy of the optimizer: hyperparameters and buffers.

        ``{"optimizer": class name,
           "param_groups": [{hyperparameters..., "param_shapes": [[...], ...]}, ...],
           "state": {"g.i": {"step": int, buffer name: array, ...}, ...}}``

        Leaves are numpy arrays (copies), Python numbers and strings; tuples become lists.
        Parameter i of group g is named "g.i" (its position), so the dict is valid for any
        optimizer built over parameters of the same shapes in the same order.
        """
        groups, state = [], {}
        for gi, group in enumerate(self.param_groups):
            d = {}
            for k, v in group.items():
                if k == "params":
                    continue
                d[k] = list(v) if isinstance(v, tuple) else v
            d["param_shapes"] = [list(p.shape) for p in group["params"]]
            groups.append(d)
            for i, p in enumerate(group["params"]):
                st = self.state.get(p)
                if st:
                    state[f"{gi}.{i}"] = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                          for k, v in st.items()}
        return {"optimizer": self._name(), "param_groups": groups, "state": state}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and buffers saved by `state_dict` (maybe via npz + JSON).

        The groups must match this optimizer's in number, parameter count and shapes; any
        mismatch is a ValueError naming the group, position and shapes. Nothing is changed
        unless the whole dict is valid. Scalars may come back as 0-d arrays, lists as arrays.
        """
        name = self._name()
        for key in ("param_groups", "state"):
            if key not in state_dict:
                raise ValueError(f"{name}.load_state_dict: missing key {key!r}; got keys "
                                 f"{sorted(state_dict)}")
        saved_name = _as_scalar(state_dict.get("optimizer", name))
        if saved_name != name:
            raise ValueError(f"{name}.load_state_dict: the state dict was saved from a "
                             f"{saved_name}, not a {name}")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state dict has {len(saved_groups)} "
                             f"parameter groups, this optimizer has {len(self.param_groups)}")
        new_groups = []
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups, strict=True)):
            params = group["params"]
            shapes = saved.get("param_shapes")
            if shapes is None:
                raise ValueError(f"{name}.load_state_dict: group {gi} has no 'param_shapes'")
            shapes = [tuple(int(n) for n in np.asarray(s).reshape(-1)) for s in shapes]
            if len(shapes) != len(params):
                raise ValueError(f"{name}.load_state_dict: group {gi} has {len(shapes)} "
                                 f"parameters in the state dict, {len(params)} here")
            for i, (s, p) in enumerate(zip(shapes, params, strict=True)):
                if s != p.shape:
                    raise ValueError(f"{name}.load_state_dict: parameter {i} of group {gi} has "
                                     f"shape {s} in the state dict but {p.shape} here")
            new = {}
            for k, v in saved.items():
                if k in ("param_shapes", "params"):  # the parameters themselves stay ours
                    continue
                v = _as_scalar(v)
                if isinstance(group.get(k), tuple):  # betas: JSON and npz turn tuples into lists
                    v = tuple(_as_scalar(x) for x in v)
                new[k] = v
            merged = {**{k: v for k, v in group.items() if k != "params"}, **new}
            self._check_hyper(merged, gi)
            new_groups.append(merged)

        positions = {f"{gi}.{i}": p for gi, g in enumerate(self.param_groups)
                     for i, p in enumerate(g["params"])}
        new_state = {}
        for key, st in state_dict["state"].items():
            p = positions.get(str(key))
            if p is None:
                raise ValueError(f"{name}.load_state_dict: state for parameter {key!r}, which "
                                 f"does not exist here (names are 'group.position')")
            missing = [k for k in self._state_keys if k not in st]
            if missing:
                raise ValueError(f"{name}.load_state_dict: state of parameter {key!r} lacks "
                                 f"{missing}; it has {sorted(st)}")
            entry = {}
            for k, v in st.items():
                if isinstance(v, np.ndarray) and v.ndim > 0 or k in self._array_keys:
                    arr = np.asarray(v)
                    if arr.shape != p.shape:
                        raise ValueError(f"{name}.load_state_dict: {k!r} of parameter {key!r} "
                                         f"has shape {arr.shape}, the parameter has {p.shape}")
                    # a fresh contiguous copy in the parameter's dtype: updates run in place
                    entry[k] = np.array(arr, dtype=p._data.dtype, copy=True, order="C")
                else:
                    entry[k] = _as_scalar(v)
            new_state[p] = entry

        for group, merged in zip(self.param_groups, new_groups, strict=True):
            group.update(merged)
        self.state = new_state

    def __repr__(self):
        lines = [f"{self._name()} ("]
        for gi, g in enumerate(self.param_groups):
            hyper = ", ".join(f"{k}={v}" for k, v in g.items() if k != "params")
            n = sum(p._data.size for p in g["params"])
            lines.append(f"  group {gi}: {len(g['params'])} tensors, {n:,} values; {hyper}")
        return "\n".join(lines + [")"])


# --------------------------------------------------------------------------------------------
# SGD
# --------------------------------------------------------------------------------------------

def _sgd_update(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, tmp, tmp2):
    """One SGD step on arrays, in place; tmp, tmp2 are scratch arrays shaped like p.

    `buf` is the momentum buffer, None before the first step; returns it (new on the first step).
    """
    d = g
    if weight_decay:
        np.multiply(p, weight_decay, out=tmp)
        tmp += g  # g + wd*p without touching p.grad: the user may read it after step()
        d = tmp
    if momentum:
        if buf is None:
            buf = np.array(d, dtype=p.dtype, copy=True)  # PyTorch: first buffer = g, undamped
        else:
            buf *= momentum
            if dampening:
                # d may be tmp itself; that is fine, as nesterov (which reads d again below)
                # requires dampening == 0
                np.multiply(d, 1 - dampening, out=tmp)
                buf += tmp
            else:
                buf += d
        if nesterov:
            np.multiply(buf, momentum, out=tmp2)
            tmp2 += d
            d = tmp2
        else:
            d = buf
    np.multiply(d, -lr, out=tmp)
    p += tmp
    return buf


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and L2 decay.

    PyTorch's rule: g <- g + wd*p; b <- g (first step), b <- mu*b + (1-dampening)*g (later);
    g <- g + mu*b if nesterov else b; p <- p - lr*g.
    """

    _state_keys = ("momentum_buffer",)
    _array_keys = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        m, d = group["momentum"], group["dampening"]
        if not isinstance(m, numbers.Real) or not m >= 0:
            raise ValueError(f"SGD: invalid momentum={m!r} (group {gi}); must be >= 0")
        if not isinstance(d, numbers.Real) or not d >= 0:
            raise ValueError(f"SGD: invalid dampening={d!r} (group {gi}); must be >= 0")
        if group["nesterov"] and (m <= 0 or d != 0):
            raise ValueError(f"SGD: nesterov=True needs momentum > 0 and dampening = 0 "
                             f"(group {gi} has momentum={m!r}, dampening={d!r})")

    def _update_group(self, group):
        lr, mu, damp = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov = group["weight_decay"], group["nesterov"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            st = self.state.get(p)
            buf = None if st is None else st["momentum_buffer"]
            tmp, tmp2 = self._work(p, 2)
            buf = _sgd_update(p._data, g, buf, lr, mu, damp, wd, nesterov, tmp, tmp2)
            if buf is not None and st is None:
                self.state[p] = {"momentum_buffer": buf}


# --------------------------------------------------------------------------------------------
# Adam and AdamW
# --------------------------------------------------------------------------------------------

def _adam_update(p, g, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled, tmp, tmp2):
    """One Adam/AdamW step on arrays, in place; `step` is t after incrementing (1 at first).

    Memory passes: 12 (13 with weight decay) over arrays of p's size, with no temporaries allocated.
    """
    if weight_decay:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:
            np.multiply(p, weight_decay, out=tmp2)
            tmp2 += g  # g + wd*p without touching p.grad
            g = tmp2
    m *= beta1
    np.multiply(g, 1 - beta1, out=tmp)
    m += tmp
    v *= beta2
    np.multiply(g, g, out=tmp)
    tmp *= 1 - beta2
    v += tmp
    bias1 = 1 - beta1 ** step
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    # m / (sqrt(v)/s + eps) = s * m / (sqrt(v) + eps*s) with s = sqrt(1-beta2^t): the same value
    # as PyTorch's denominator (eps added after the correction) with one pass fewer
    np.sqrt(v, out=tmp)
    tmp += eps * bias2_sqrt
    np.divide(m, tmp, out=tmp)
    tmp *= -lr * bias2_sqrt / bias1
    p += tmp


class Adam(Optimizer):
    """Adam with bias correction; weight_decay is an L2 term added to the gradient.

    g <- g + wd*p; m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")
    _array_keys = ("exp_avg", "exp_avg_sq")
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=tuple(betas) if not isinstance(betas, tuple)
                                      else betas, eps=eps, weight_decay=weight_decay))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        betas = group["betas"]
        if isinstance(betas, list):
            betas = group["betas"] = tuple(betas)
        if not isinstance(betas, tuple) or len(betas) != 2:
            raise ValueError(f"{self._name()}: betas must be a pair (beta1, beta2), got "
                             f"{betas!r} (group {gi})")
        for i, b in enumerate(betas):
            if not isinstance(b, numbers.Real) or not 0 <= b < 1:
                raise ValueError(f"{self._name()}: invalid beta{i + 1}={b!r} in betas={betas!r}"
                                 f" (group {gi}); must be in [0, 1)")
        self._check_float(group, "eps", gi, 0, math.inf, lo_open=True)

    def _update_group(self, group):
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"step": 0, "exp_avg": np.zeros_like(p._data),
                                      "exp_avg_sq": np.zeros_like(p._data)}
            st["step"] += 1
            step = st["step"]
            if self._adam_kernel(p._data, g, st, step, lr, b1, b2, eps, wd):
                continue                                   # one compiled pass, no scratch
            tmp, tmp2 = self._work(p, 2)
            arrays = (p._data, g, st["exp_avg"], st["exp_avg_sq"], tmp, tmp2)
            if all(a.flags.c_contiguous for a in arrays):     # flat views split evenly
                arrays = tuple(a.reshape(-1) for a in arrays)
            parallel.rows(lambda p_, g_, m_, v_, t_, t2_, step=step: _adam_update(
                p_, g_, m_, v_, step, lr, b1, b2, eps, wd, self._decoupled, t_, t2_), *arrays)

    def _adam_kernel(self, p, g, st, step, lr, b1, b2, eps, wd):
        """The update as kernels.adam on flat views when it applies (the kernel's arguments
        C-contiguous and of p's dtype, no coupled weight decay); False otherwise, and
        _adam_update's numpy passes run: the same formula, the coefficients as it computes
        them."""
        m, v = st["exp_avg"], st["exp_avg_sq"]
        if not (kernels.ENABLED and (self._decoupled or not wd)
                and all(a.flags.c_contiguous for a in (p, g, m, v))):   # flat views, no copies
            return False
        bias2_sqrt = math.sqrt(1 - b2 ** step)
        return parallel.rows(
            lambda p_, g_, m_, v_: kernels.adam(p_, g_, m_, v_, b1, b2, 1 - lr * wd,
                                                eps * bias2_sqrt,
                                                -lr * bias2_sqrt / (1 - b1 ** step)),
            p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1),
            min_elements=parallel.MIN_KERNEL_ELEMENTS)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's AdamW.

    p <- p - lr*wd*p; then m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    """

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


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
        self.last_epoch = int(_as_scalar(state_dict["last_step"])) - 1
        self.step()
