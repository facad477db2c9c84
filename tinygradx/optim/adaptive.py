"""The optimizers that scale each coordinate by its own history of gradients, PyTorch's:
RMSprop, Adagrad, Adadelta, Adamax, Rprop. Each update runs in numpy on the parameter's
array, in the order of PyTorch's operations (so float32 rounds alike), with g = p.grad
(-p.grad with maximize) and g <- g + wd * p when weight_decay is set:

    RMSprop   s <- alpha s + (1 - alpha) g^2;  centered: a <- alpha a + (1 - alpha) g,
              d = sqrt(s - a^2) + eps, else sqrt(s) + eps;
              momentum: b <- mu b + g / d, p <- p - lr b;  else p <- p - lr g / d
    Adagrad   S <- S + g^2;  p <- p - lr / (1 + (t - 1) lr_decay) * g / (sqrt(S) + eps)
              (S starts at initial_accumulator_value, from construction on, as PyTorch)
    Adadelta  s <- rho s + (1 - rho) g^2;  dx = sqrt(u + eps) / sqrt(s + eps) * g;
              u <- rho u + (1 - rho) dx^2;  p <- p - lr dx
    Adamax    m <- b1 m + (1 - b1) g;  u <- max(b2 u, |g| + eps);
              p <- p - lr / (1 - b1^t) * m / u
    Rprop     s <- clamp(s * (etaplus if g g_prev > 0, etaminus if < 0, else 1), step_sizes);
              g <- 0 where the sign flipped;  p <- p - sign(g) s;  g_prev <- g

A parameter's state holds PyTorch's entries under PyTorch's names ('step' a 0-d float32
Tensor), so state dicts go between the two libraries.
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, hyper_value

__all__ = ["RMSprop", "Adagrad", "Adadelta", "Adamax", "Rprop"]


def _signed(g, maximize):
    return -g if maximize else g


def _decayed(g, p, weight_decay):
    return g + weight_decay * p if weight_decay else g


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e), PyTorch's: a running mean of g^2 divides the step;
    centered subtracts the squared running mean of g; optional momentum."""

    _state_keys = ("step", "square_avg")
    _array_keys = ("square_avg", "momentum_buffer", "grad_avg")

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        for key in ("eps", "momentum", "alpha"):
            self._check_float(group, key, gi, 0, math.inf)

    def _required_state(self, p):
        return self._state_keys

    def _update_group(self, group):
        lr, alpha, eps, wd = hyper_value(group["lr"]), group["alpha"], group["eps"], \
            group["weight_decay"]
        mu, centered = group["momentum"], group["centered"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), square_avg=self._zeros(p))
                if mu > 0:
                    st["momentum_buffer"] = self._zeros(p)
                if centered:
                    st["grad_avg"] = self._zeros(p)
            self._advance(st)
            x = p._data
            g = _decayed(_signed(g, group["maximize"]), x, wd)
            s = st["square_avg"]._data
            s *= alpha
            s += (1 - alpha) * g * g
            if centered:
                a = st["grad_avg"]._data
                a += (1 - alpha) * (g - a)               # lerp toward g
                avg = np.sqrt(s - a * a)
            else:
                avg = np.sqrt(s)
            avg += eps
            if mu > 0:
                b = st["momentum_buffer"]._data
                b *= mu
                b += g / avg
                x -= lr * b
            else:
                x += (-lr) * (g / avg)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al. 2011), PyTorch's: the sum of every squared gradient divides the
    step, with the rate decayed as lr / (1 + (t - 1) lr_decay). The state exists from
    construction on (the sum starts at initial_accumulator_value), as PyTorch's."""

    _state_keys = ("step", "sum")
    _array_keys = ("sum",)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(step=self._step_tensor(), sum=Tensor(np.full_like(
                    p._data, group["initial_accumulator_value"])))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        for key in ("lr_decay", "initial_accumulator_value", "eps"):
            self._check_float(group, key, gi, 0, math.inf)

    def _update_group(self, group):
        lr, lr_decay, eps, wd = hyper_value(group["lr"]), group["lr_decay"], group["eps"], \
            group["weight_decay"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:          # a group added after construction (PyTorch fails there)
                st.update(step=self._step_tensor(), sum=Tensor(np.full_like(
                    p._data, group["initial_accumulator_value"])))
            step = self._advance(st)
            x = p._data
            g = _decayed(_signed(g, group["maximize"]), x, wd)
            clr = lr / (1 + (step - 1) * lr_decay)
            s = st["sum"]._data
            s += g * g
            x += (-clr) * (g / (np.sqrt(s) + eps))


class Adadelta(Optimizer):
    """Adadelta (Zeiler 2012), PyTorch's: running means of g^2 and of the squared steps set
    each coordinate's step; lr scales it (1.0 by default)."""

    _state_keys = ("step", "square_avg", "acc_delta")
    _array_keys = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_float(group, "rho", gi, 0, 1, hi_open=False)
        self._check_float(group, "eps", gi, 0, math.inf)

    def _update_group(self, group):
        lr, rho, eps = hyper_value(group["lr"]), group["rho"], group["eps"]
        wd = group["weight_decay"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), square_avg=self._zeros(p),
                          acc_delta=self._zeros(p))
            self._advance(st)
            x = p._data
            g = _decayed(_signed(g, group["maximize"]), x, wd)
            s, u = st["square_avg"]._data, st["acc_delta"]._data
            s *= rho
            s += (1 - rho) * g * g
            delta = np.sqrt(u + eps) / np.sqrt(s + eps) * g
            u *= rho
            u += (1 - rho) * delta * delta
            x += (-lr) * delta


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7.1), PyTorch's: Adam with the infinity norm, u_t =
    max(b2 u, |g| + eps) in place of the root mean square."""

    _state_keys = ("step", "exp_avg", "exp_inf")
    _array_keys = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas) if isinstance(betas, list)
                                      else betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_pair(group, "betas", gi, ("beta1", "beta2"), ((0, 1), (0, 1)))
        self._check_float(group, "eps", gi, 0, math.inf)

    def _update_group(self, group):
        lr, eps, wd = hyper_value(group["lr"]), group["eps"], group["weight_decay"]
        b1, b2 = (hyper_value(b) for b in group["betas"])
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), exp_avg=self._zeros(p),
                          exp_inf=self._zeros(p))
            step = self._advance(st)
            x = p._data
            g = _decayed(_signed(g, group["maximize"]), x, wd)
            m, u = st["exp_avg"]._data, st["exp_inf"]._data
            m += (1 - b1) * (g - m)                       # lerp toward g
            u *= b2
            np.maximum(u, np.abs(g) + eps, out=u)
            x += (-lr / (1 - b1 ** step)) * (m / u)


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun 1993), PyTorch's: each coordinate's step
    grows by etaplus while its gradient keeps its sign and shrinks by etaminus when it flips
    (that step then skipped), within step_sizes; only the gradient's sign is used."""

    _state_keys = ("step", "prev", "step_size")
    _array_keys = ("prev", "step_size")

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        etas = group["etas"] = tuple(group["etas"])
        if len(etas) != 2 or not 0 < etas[0] < 1 < etas[1]:
            raise ValueError(f"Rprop: invalid etas={etas!r} (group {gi}); need 0 < etaminus < "
                             f"1 < etaplus")
        group["step_sizes"] = tuple(group["step_sizes"])

    def _update_group(self, group):
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), prev=self._zeros(p),
                          step_size=Tensor(np.full_like(p._data, hyper_value(group["lr"]))))
            self._advance(st)
            g = _signed(g, group["maximize"])
            prev, size = st["prev"]._data, st["step_size"]._data
            sign = np.sign(g * prev)
            factor = np.where(sign > 0, etaplus, np.where(sign < 0, etaminus, 1.0))
            size *= factor.astype(size.dtype)
            np.clip(size, lo, hi, out=size)
            g = np.where(sign < 0, 0, g).astype(g.dtype)     # a flipped sign: no step now
            p._data -= np.sign(g) * size
            prev[...] = g
