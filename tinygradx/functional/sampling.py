"""F.gumbel_softmax (re-exported by F): a differentiable sample from a categorical
distribution (Jang et al. 2016; Maddison et al. 2016), with torch.nn.functional's arguments.

    y = softmax((logits + g) / tau),  g = -log(e), e ~ Exponential(1) per element  (Gumbel noise)

With hard=True the result is the one-hot vector of y's argmax in value, and y in gradient (the
straight-through estimator: one_hot - y.detach() + y). The noise comes from tinygradx's one
generator (`tgx.manual_seed`), so samples are not torch's; their distribution is. Written with
ops (add, divide, softmax, a constant one-hot), so it draws and differentiates.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..autograd import STATE
from ..core.dims import check_dim
from ..ops import fused
from ..tensor import Tensor

__all__ = ["gumbel_softmax"]


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau) along dim; hard=True: its one-hot argmax with the
    soft sample's gradient."""
    if not isinstance(logits, Tensor) or logits.dtype.kind != "f":
        raise TypeError(f"gumbel_softmax: logits must be a floating-point Tensor, got "
                        f"{getattr(logits, 'dtype', type(logits).__name__)}")
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` is deprecated and has no effect (as in torch)",
                      stacklevel=2)
    d = check_dim("gumbel_softmax", dim, logits.ndim)
    noise = -np.log(STATE.rng.exponential(1.0, logits.shape)).astype(logits.dtype)
    y = fused.Softmax.apply((logits + Tensor(noise)) / tau, dim=d)
    if not hard:
        return y
    if logits.ndim and logits.shape[d] == 0:       # no category to pick: torch's argmax refuses
        raise IndexError(f"gumbel_softmax(hard=True): dim {dim} of {tuple(logits.shape)} has "
                         f"size 0, so there is no category to pick")
    values = y.detach().numpy().reshape(y.shape or (1,))   # a 0-d sample is one category
    one_hot = np.zeros_like(values)
    np.put_along_axis(one_hot, np.expand_dims(values.argmax(d), d), 1.0, axis=d)
    return Tensor(one_hot.reshape(y.shape)) - y.detach() + y
