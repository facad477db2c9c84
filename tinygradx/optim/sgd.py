"""SGD with optional momentum, Nesterov momentum and L2 weight decay, PyTorch's rule.

The update works on the numpy arrays behind the parameters in place (see tinygradx.optim). With
g = p.grad, lr = the group's learning rate, wd = weight_decay, momentum mu, dampening tau::

    g <- g + wd * p                                 (L2 term, if wd != 0)
    b <- g                       on the first step  (if mu != 0)
    b <- mu * b + (1 - tau) * g  afterwards
    g <- g + mu * b  if nesterov  else  g <- b
    p <- p - lr * g

The update kernel (`_sgd_update`) takes plain arrays and scalars, so a later version can run it
once over a flat buffer holding every parameter.
"""
from __future__ import annotations

import numbers

import numpy as np

from .optimizer import Optimizer

__all__ = ["SGD"]


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
