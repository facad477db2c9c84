"""SGD with optional momentum, Nesterov momentum, L2 weight decay and maximize, PyTorch's rule;
and ASGD, averaged SGD.

The update works on the numpy arrays behind the parameters in place (see tinygradx.optim). With
g = p.grad (-p.grad with maximize), lr = the group's learning rate, wd = weight_decay, momentum
mu, dampening tau::

    g <- g + wd * p                                 (L2 term, if wd != 0)
    b <- g                       on the first step  (if mu != 0)
    b <- mu * b + (1 - tau) * g  afterwards
    g <- g + mu * b  if nesterov  else  g <- b
    p <- p - lr * g

As in PyTorch a parameter has state only with momentum: state[p]["momentum_buffer"].
The update kernel (`_sgd_update`) takes plain arrays and scalars, so a later version can run it
once over a flat buffer holding every parameter.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, hyper_value

__all__ = ["SGD", "ASGD"]


def _sgd_update(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, tmp, tmp2,
                maximize=False):
    """One SGD step on arrays, in place; tmp, tmp2 are scratch arrays shaped like p.

    `buf` is the momentum buffer, None before the first step; returns it (new on the first step).
    """
    d = g                            # (p.grad itself is never written: the user may read it)
    if weight_decay:
        np.multiply(p, weight_decay, out=tmp)
        if maximize:
            tmp -= g                 # -g + wd*p
        else:
            tmp += g                 # g + wd*p
        d = tmp
    elif maximize:
        d = np.negative(g, out=tmp)
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

    PyTorch's rule: g <- -g if maximize; g <- g + wd*p; b <- g (first step),
    b <- mu*b + (1-dampening)*g (later); g <- g + mu*b if nesterov else b; p <- p - lr*g.
    `foreach` and `fused` (PyTorch's choices of kernel) are accepted and change nothing here.
    """

    _state_keys = ("momentum_buffer",)
    _array_keys = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_float(group, "momentum", gi, 0, np.inf)
        self._check_float(group, "dampening", gi, -np.inf, np.inf)
        m, d = group["momentum"], group["dampening"]
        if group["nesterov"] and (m <= 0 or d != 0):
            raise ValueError(f"SGD: nesterov=True needs momentum > 0 and dampening = 0 "
                             f"(group {gi} has momentum={m!r}, dampening={d!r})")

    def _required_state(self, p):
        return ()

    def _update_group(self, group):
        lr, mu, damp = hyper_value(group["lr"]), group["momentum"], group["dampening"]
        wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        for p, g in self._params_with_grad(group):
            st = self.state[p] if mu else None
            buf = st.get("momentum_buffer") if mu else None
            tmp, tmp2 = self._work(p, 2)
            new = _sgd_update(p._data, g, None if buf is None else buf._data, lr, mu, damp, wd,
                              nesterov, tmp, tmp2, maximize)
            if mu and buf is None:
                st["momentum_buffer"] = Tensor(new)


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky 1992), PyTorch's: a decaying step, and from step t0 on a
    running average `ax` of the iterates (the averaged parameters, in the state).

    g <- g + wd*p; p <- p (1 - lambd eta) - eta g; ax <- ax + mu (p - ax) (ax <- p while
    mu = 1); then eta <- lr / (1 + lambd lr t)^alpha, mu <- 1 / max(1, t - t0). eta and mu are
    0-d float32 Tensors in the state, as PyTorch keeps them (so they round alike).
    """

    _state_keys = ("step", "eta", "mu", "ax")
    _array_keys = ("ax",)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _tensor_scalars(self):
        return ("step", "eta", "mu")

    def _update_group(self, group):
        lr, lambd, alpha, t0 = hyper_value(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        wd = group["weight_decay"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), eta=self._step_tensor(lr),
                          mu=self._step_tensor(1.0), ax=self._zeros(p))
            t = self._advance(st)
            x = p._data
            g = -g if group["maximize"] else g
            if wd:
                g = g + wd * x
            eta = float(st["eta"]._data)
            x *= 1 - lambd * eta
            x += (-eta) * g
            ax = st["ax"]._data
            if float(st["mu"]._data) != 1:
                ax += (x - ax) * st["mu"]._data
            else:
                ax[...] = x
            # PyTorch makes each new value a float32 tensor, then copies it into the state
            st["eta"]._data[...] = np.float32(lr / ((1 + lambd * lr * t) ** alpha))
            st["mu"]._data[...] = np.float32(1 / max(1, t - t0))
