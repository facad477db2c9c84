"""Adam's relatives, PyTorch's: NAdam (Nesterov momentum in Adam), RAdam (the variance of the
adaptive rate rectified), Adafactor (second moments factored into row and column means). Each
update runs in numpy on the parameter's array, in the order of PyTorch's operations, with
g = p.grad (-p.grad with maximize); weight decay as an L2 term on g, or decoupled
(p <- p (1 - lr wd)) with decoupled_weight_decay=True (Adafactor: always decoupled):

    NAdam     mu_t = b1 (1 - 0.5 * 0.96^(t psi)), psi = momentum_decay;  M_t = prod mu_1..t
              m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  d = sqrt(v / (1 - b2^t)) + eps
              p <- p - lr (1 - mu_t) / (1 - M_t) g / d - lr mu_{t+1} / (1 - M_t mu_{t+1}) m / d
    RAdam     m, v as Adam's;  rho_inf = 2 / (1 - b2) - 1,  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
              rho_t > 5: p <- p - lr m / (1 - b1^t) * r_t sqrt(1 - b2^t) / (sqrt(v) + eps),
              r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
              else:      p <- p - lr m / (1 - b1^t)       (the variance is not yet tractable)
    Adafactor beta2_t = 1 - t^beta2_decay;  rho_t = min(lr, 1 / sqrt(t));
              alpha = max(eps2, RMS(p)) rho_t;  a matrix keeps row and column means of g^2
              (R, C; the estimate R C / mean(R)), a vector the mean of g^2 itself (V);
              u = g / sqrt(max(V, eps1^2));  p <- p - alpha / max(1, RMS(u) / d) * u

A parameter's state holds PyTorch's entries under PyTorch's names ('step' and NAdam's
'mu_product' 0-d float32 Tensors, as PyTorch keeps them, which rounds M_t to float32 too).
"""
from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, hyper_value

__all__ = ["NAdam", "RAdam", "Adafactor"]


def _prepare(g, x, group, lr):
    """-g with maximize, then the weight decay: L2 into g, or decoupled into x (in place)."""
    if group["maximize"]:
        g = -g
    wd = group["weight_decay"]
    if wd:
        if group.get("decoupled_weight_decay"):
            x *= 1 - lr * wd
        else:
            g = g + wd * x
    return g


class _AdamLike(Optimizer):
    _state_keys = ("step", "exp_avg", "exp_avg_sq")
    _array_keys = ("exp_avg", "exp_avg_sq")

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_pair(group, "betas", gi, ("beta1", "beta2"), ((0, 1), (0, 1)))
        self._check_float(group, "eps", gi, 0, math.inf)

    def _moments(self, p, extra=()):
        st = self.state[p]
        if not st:
            st.update(step=self._step_tensor(), **dict(extra), exp_avg=self._zeros(p),
                      exp_avg_sq=self._zeros(p))
        return st


class NAdam(_AdamLike):
    """NAdam (Dozat 2016), PyTorch's: Adam with Nesterov momentum, the momentum warmed up by
    momentum_decay."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        super().__init__(params, dict(
            lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas, eps=eps,
            weight_decay=weight_decay, momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable))

    _state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def _tensor_scalars(self):
        return ("step", "mu_product")

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_float(group, "momentum_decay", gi, 0, math.inf)

    def _update_group(self, group):
        lr, eps, psi = hyper_value(group["lr"]), group["eps"], group["momentum_decay"]
        b1, b2 = (hyper_value(b) for b in group["betas"])
        for p, g in self._params_with_grad(group):
            st = self._moments(p, {"mu_product": self._step_tensor(1.0)})
            t = self._advance(st)
            x = p._data
            g = _prepare(g, x, group, lr)
            bias2 = 1 - b2 ** t
            mu = b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
            mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
            st["mu_product"]._data *= mu                    # kept in float32, as PyTorch
            prod = float(st["mu_product"]._data)
            m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
            m += (1 - b1) * (g - m)
            v *= b2
            v += (1 - b2) * g * g
            denom = np.sqrt(v / bias2) + eps
            x += (-lr * (1.0 - mu) / (1.0 - prod)) * (g / denom)
            x += ((-lr * mu_next) / (1.0 - prod * mu_next)) * (m / denom)


class RAdam(_AdamLike):
    """RAdam (Liu et al. 2019), PyTorch's: Adam whose adaptive rate is used only once its
    variance is tractable (rho_t > 5), rectified by r_t; plain momentum SGD before."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        super().__init__(params, dict(
            lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas, eps=eps,
            weight_decay=weight_decay, maximize=maximize, foreach=foreach,
            capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable))

    def _update_group(self, group):
        lr, eps = hyper_value(group["lr"]), group["eps"]
        b1, b2 = (hyper_value(b) for b in group["betas"])
        for p, g in self._params_with_grad(group):
            st = self._moments(p)
            t = self._advance(st)
            x = p._data
            g = _prepare(g, x, group, lr)
            m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
            m += (1 - b1) * (g - m)
            v *= b2
            v += (1 - b2) * g * g
            bias1, bias2 = 1 - b1 ** t, 1 - b2 ** t
            corrected = m / bias1
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * t * (b2 ** t) / bias2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bias2 ** 0.5) / (np.sqrt(v) + eps)
                x -= corrected * lr * adaptive * rect
            else:
                x -= corrected * lr


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern 2018) as PyTorch implements it: a matrix (or a stack of
    them: the last two dims) keeps only the row and column means of g^2; the step is
    relative to the parameter's RMS and clipped by d. eps = (eps1, eps2); eps1 None is the
    dtype's machine epsilon."""

    _state_keys = ("step",)
    _array_keys = ("variance",)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_float(group, "beta2_decay", gi, -math.inf, 0, hi_open=False)
        eps = group["eps"] = tuple(group["eps"])
        if len(eps) != 2 or (eps[0] is not None and not eps[0] >= 0) or not eps[1] >= 0:
            raise ValueError(f"Adafactor: invalid eps={eps!r} (group {gi}); need (eps1 >= 0 "
                             f"or None, eps2 >= 0)")
        self._check_float(group, "d", gi, 1, math.inf)

    def _allowed_state(self):
        return {"step", "row_var", "col_var", "variance"}

    def _load_entry(self, key, p, st):
        entry = super()._load_entry(key, p, st)
        want = ({"row_var": p.shape[:-1] + (1,), "col_var": p.shape[:-2] + (1, p.shape[-1])}
                if p.ndim > 1 else {})
        for k, shape in want.items():
            if k not in entry or entry[k].shape != shape:
                raise ValueError(f"Adafactor.load_state_dict: {k!r} of parameter {key} must "
                                 f"have shape {shape} for a parameter of {p.shape}")
        return entry

    def _update_group(self, group):
        lr, decay, d, wd = hyper_value(group["lr"]), group["beta2_decay"], group["d"], \
            group["weight_decay"]
        eps1, eps2 = group["eps"]
        for p, g in self._params_with_grad(group):
            x = p._data
            st = self.state[p]
            if not st:
                st["step"] = self._step_tensor()
                if g.ndim > 1:
                    st["row_var"] = Tensor(np.zeros(g.shape[:-1] + (1,), g.dtype))
                    st["col_var"] = Tensor(np.zeros(g.shape[:-2] + (1, g.shape[-1]), g.dtype))
                else:
                    st["variance"] = self._zeros(p)
            if not x.size:        # (PyTorch divides by the size there: ZeroDivisionError)
                raise ValueError(f"Adafactor: a parameter of shape {p.shape} has no elements; "
                                 f"its RMS, which scales the step, is not defined")
            e1 = np.finfo(x.dtype).eps if eps1 is None else eps1
            g = -g if group["maximize"] else g
            t = self._advance(st)
            one_minus_beta2 = t ** decay
            rho = min(lr, 1 / (t ** 0.5))
            rms = float(np.sqrt(np.sum(x * x, dtype=x.dtype))) / (x.size ** 0.5)
            alpha = max(eps2, rms) * rho
            if wd:
                x *= 1 - lr * wd
            if g.ndim > 1:
                r, c = st["row_var"]._data, st["col_var"]._data
                r += one_minus_beta2 * ((g * g).sum(axis=-1, keepdims=True) / g.shape[-1] - r)
                c += one_minus_beta2 * ((g * g).sum(axis=-2, keepdims=True) / g.shape[-2] - c)
                estimate = r @ c
                estimate /= np.maximum(r.mean(axis=-2, keepdims=True), e1)
            else:
                v = st["variance"]._data
                v += one_minus_beta2 * (g * g - v)
                estimate = v.copy()
            update = g / np.sqrt(np.maximum(estimate, e1 * e1))
            norm = float(np.sqrt(np.sum(update * update, dtype=update.dtype)))
            denom = max(1.0, norm / ((update.size ** 0.5) * d))
            x += (-alpha / denom) * update
