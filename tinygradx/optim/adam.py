"""Adam and AdamW, PyTorch's. With g = p.grad, lr = the group's learning rate, t = the
parameter's step count (1 on the first update), wd = weight_decay:

Adam (Kingma & Ba; weight decay is an L2 term added to the gradient)::

    g <- g + wd * p
    m <- beta1 * m + (1 - beta1) * g
    v <- beta2 * v + (1 - beta2) * g^2
    p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

AdamW (Loshchilov & Hutter; decoupled weight decay, applied before the Adam step)::

    p <- p - lr * wd * p
    then Adam's m, v and p updates with wd = 0

The update runs in place on the parameters' arrays: the compiled kernel (`kernels.adam`) when
it applies, else `_adam_update`'s numpy passes, which take plain arrays and scalars, so a later
version can run them once over a flat buffer holding every parameter.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..fast import kernels, parallel
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


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
