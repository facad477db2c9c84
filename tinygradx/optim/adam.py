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

The update runs in place on the parameters' arrays: `adam_update`'s numpy passes, the
reference; its faster versions (one compiled loop, `kernels.adam`; the numpy passes in row
blocks on both cores) are registered below with what they take (fast/dispatch.py).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.fastpath import dispatched
from ..fast import kernels, parallel
from ..fast.dispatch import Version, register
from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


@dispatched
def adam_update(p, g, m, v, tmp, tmp2, step, lr, beta1, beta2, eps, weight_decay, decoupled):
    """One Adam/AdamW step on arrays, in place; `step` is t after incrementing (1 at first);
    tmp, tmp2 are scratch arrays of p's shape.

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


def _adam_compiled(p, g, m, v, tmp, tmp2, step, lr, beta1, beta2, eps, weight_decay,
                   decoupled):
    """The update as one compiled loop over flat views, in row blocks on both cores when
    large; the coefficients as adam_update computes them."""
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    parallel.rows(
        lambda p_, g_, m_, v_: kernels.adam(p_, g_, m_, v_, beta1, beta2, 1 - lr * weight_decay,
                                            eps * bias2_sqrt,
                                            -lr * bias2_sqrt / (1 - beta1 ** step)),
        p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1),
        min_elements=parallel.MIN_KERNEL_ELEMENTS)


def _adam_blocks(p, g, m, v, tmp, tmp2, *hyper):
    """adam_update's numpy passes on row blocks of flat views, on both cores (the same bits)."""
    parallel.rows(lambda *blocks: adam_update.reference(*blocks, *hyper),
                  *(a.reshape(-1) for a in (p, g, m, v, tmp, tmp2)))


# p, g, m, v, tmp, tmp2 are arrays; p, m, v (and the scratch) are written
register("adam_update", Version(
    "compiled", _adam_compiled, backend="kernels", arrays=(0, 1, 2, 3), outputs=(0, 2, 3),
    ulp=4, accepts=lambda p, g, m, v, tmp, tmp2, step, lr, b1, b2, eps, wd, decoupled:
    decoupled or not wd))
register("adam_update", Version(
    "blocks", _adam_blocks, backend="threads", arrays=(0, 1, 2, 3, 4, 5),
    outputs=(0, 2, 3, 4, 5), min_size=parallel.MIN_ELEMENTS, ulp=0))


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
            tmp, tmp2 = self._work(p, 2)
            adam_update(p._data, g, st["exp_avg"], st["exp_avg_sq"], tmp, tmp2, st["step"], lr,
                        b1, b2, eps, wd, self._decoupled)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's AdamW.

    p <- p - lr*wd*p; then m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    """

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
