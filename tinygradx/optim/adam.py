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

With maximize, g <- -g first. With amsgrad (Reddi et al.) the denominator reads the running
maximum of v: vmax <- max(vmax, v); p <- p - lr / (1 - beta1^t) * m / (sqrt(vmax) /
sqrt(1 - beta2^t) + eps). Adam(decoupled_weight_decay=True) is AdamW. A parameter's state is
PyTorch's: 'step' (a 0-d float32 Tensor), 'exp_avg', 'exp_avg_sq' (+ 'max_exp_avg_sq').

The update runs in place on the parameters' arrays: `adam_update`'s numpy passes, the
reference; its faster versions (one loop in C on the pool's threads for float32, `pool.adam`;
one compiled loop, `kernels.adam`; the numpy passes in row blocks on both cores) are
registered below with what they take (fast/dispatch.py), and decline amsgrad and maximize,
which only the reference computes.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.fastpath import dispatched
from ..fast import kernels, parallel, pool
from ..fast.dispatch import FLOAT32, Version, register
from .optimizer import Optimizer, hyper_value

__all__ = ["Adam", "AdamW"]


@dispatched
def adam_update(p, g, m, v, tmp, tmp2, step, lr, beta1, beta2, eps, weight_decay, decoupled,
                vmax=None, maximize=False):
    """One Adam/AdamW step on arrays, in place; `step` is t after incrementing (1 at first);
    tmp, tmp2 are scratch arrays of p's shape; `vmax` the amsgrad maximum of v (None without
    amsgrad); maximize steps up the gradient.

    Memory passes: 12 (13 with weight decay) over arrays of p's size, with no temporaries allocated.
    """
    if weight_decay and not decoupled:   # (p.grad itself is never written)
        np.multiply(p, weight_decay, out=tmp2)
        if maximize:
            tmp2 -= g                        # -g + wd*p
        else:
            tmp2 += g                        # g + wd*p
        g = tmp2
    elif maximize:
        g = np.negative(g, out=tmp2)
    if weight_decay and decoupled:
        p *= 1 - lr * weight_decay
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
    if vmax is not None:
        np.maximum(vmax, v, out=vmax)
    np.sqrt(v if vmax is None else vmax, out=tmp)
    tmp += eps * bias2_sqrt
    np.divide(m, tmp, out=tmp)
    tmp *= -lr * bias2_sqrt / bias1
    p += tmp


def _adam_compiled(p, g, m, v, tmp, tmp2, step, lr, beta1, beta2, eps, weight_decay,
                   decoupled, vmax=None, maximize=False):
    """The update as one compiled loop over flat views, in row blocks on both cores when
    large; the coefficients as adam_update computes them."""
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    parallel.rows(
        lambda p_, g_, m_, v_: kernels.adam(p_, g_, m_, v_, beta1, beta2, 1 - lr * weight_decay,
                                            eps * bias2_sqrt,
                                            -lr * bias2_sqrt / (1 - beta1 ** step)),
        p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1),
        min_elements=parallel.MIN_KERNEL_ELEMENTS)


def _adam_pool(p, g, m, v, tmp, tmp2, step, lr, beta1, beta2, eps, weight_decay,
               decoupled, vmax=None, maximize=False):
    """The compiled loop's formula in C on the pool's threads (float32), the values cut
    between them: a GPT's weights (16k to 65k values) are too small for Python threads."""
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    pool.adam(p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), beta1, beta2,
              1 - lr * weight_decay, eps * bias2_sqrt, -lr * bias2_sqrt / (1 - beta1 ** step))


def _adam_blocks(p, g, m, v, tmp, tmp2, *hyper):
    """adam_update's numpy passes on row blocks of flat views, on both cores (the same bits)."""
    parallel.rows(lambda *blocks: adam_update.reference(*blocks, *hyper),
                  *(a.reshape(-1) for a in (p, g, m, v, tmp, tmp2)))


def _plain(*args):
    """Neither amsgrad (a vmax array) nor maximize: the options only the reference computes."""
    return (len(args) < 14 or args[13] is None) and not (len(args) > 14 and args[14])


# p, g, m, v, tmp, tmp2 are arrays; p, m, v (and the scratch) are written
def _loop_form(*args):
    """The compiled loop's form: weight decay decoupled or none (args 12, 11), and _plain."""
    return (args[12] or not args[11]) and _plain(*args)


register("adam_update", Version(
    "pool", _adam_pool, backend="pool", dtypes=FLOAT32, arrays=(0, 1, 2, 3), outputs=(0, 2, 3),
    min_size=pool.MIN_ADAM, in_blocks=False, ulp=4, accepts=_loop_form))
register("adam_update", Version(
    "compiled", _adam_compiled, backend="kernels", arrays=(0, 1, 2, 3), outputs=(0, 2, 3),
    ulp=4, accepts=_loop_form))
register("adam_update", Version(
    "blocks", _adam_blocks, backend="threads", arrays=(0, 1, 2, 3, 4, 5),
    outputs=(0, 2, 3, 4, 5), min_size=parallel.MIN_ELEMENTS, ulp=0, accepts=_plain))


class Adam(Optimizer):
    """Adam with bias correction; weight_decay is an L2 term added to the gradient (decoupled,
    as AdamW, with decoupled_weight_decay=True); amsgrad and maximize as PyTorch's.

    g <- g + wd*p; m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    `foreach` and `fused` (PyTorch's choices of kernel) are accepted and change nothing here.
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")
    _array_keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        super().__init__(params, dict(
            lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas, eps=eps,
            weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize, foreach=foreach,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay))

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        self._check_pair(group, "betas", gi, ("beta1", "beta2"), ((0, 1), (0, 1)))
        self._check_float(group, "eps", gi, 0, math.inf)

    def _required_state(self, p):
        return self._state_keys

    def _update_group(self, group):
        lr, eps, wd = hyper_value(group["lr"]), group["eps"], group["weight_decay"]
        b1, b2 = (hyper_value(b) for b in group["betas"])
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        for p, g in self._params_with_grad(group):
            st = self.state[p]
            if not st:
                st.update(step=self._step_tensor(), exp_avg=self._zeros(p),
                          exp_avg_sq=self._zeros(p))
                if amsgrad:
                    st["max_exp_avg_sq"] = self._zeros(p)
            step = self._advance(st)
            tmp, tmp2 = self._work(p, 2)
            adam_update(p._data, g, st["exp_avg"]._data, st["exp_avg_sq"]._data, tmp, tmp2,
                        step, lr, b1, b2, eps, wd, decoupled,
                        st["max_exp_avg_sq"]._data if amsgrad else None, maximize)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's AdamW.

    p <- p - lr*wd*p; then m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
