"""Normalization as functions (re-exported by F): batch_norm, instance_norm, group_norm and
local_response_norm, with torch.nn.functional's names, arguments, running statistics and errors.

Every one is written with the engine's ops (mean, subtract, multiply, rsqrt, reshape, cat), so
the graph and trace tools draw each step and second derivatives come free. They share one
formula, standardisation over some dims of x:

    x_hat = (x - mean) / sqrt(var + eps)        mean, var: biased, over `dims`
    y     = x_hat * weight + bias                weight, bias: one per channel (dim 1)

batch_norm      dims = every dim but the channel (the statistics of a channel over the batch)
instance_norm   dims = the spatial dims (each sample's channel on its own)
group_norm      dims = the channels of a group and the spatial dims, per sample

Running statistics (batch_norm, instance_norm while training) are updated in place, outside
the graph, as torch updates them: r = (1 - momentum) * r + momentum * s, where the variance's s
is the unbiased one (n / (n - 1) times the batch's biased variance). The module classes of
nn (nn/normalization.py) keep those buffers and choose momentum (None: the cumulative mean).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import OpError, current_scope
from ..tensor import Tensor
from ..tensor.creation import cat, zeros

__all__ = ["batch_norm", "instance_norm", "group_norm", "local_response_norm"]


def _where():
    s = current_scope()
    return f" (in {s})" if s else ""


def _input(name, x, min_dims):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise TypeError(f"{name}: needs a floating-point input, got {x.dtype}")
    if x.ndim < min_dims:
        raise OpError(f"{name}{_where()}: expected an input of at least {min_dims} dims "
                      f"(N, C, ...), got shape {tuple(x.shape)}")
    return x


def _per_channel(name, what, t, C, dtype):
    """t (a per-channel Tensor or None) checked: C elements of the input's dtype (torch refuses
    a float64 weight for a float32 input, and so do we: no silent cast either way)."""
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: {what} must be a Tensor or None, got {type(t).__name__}")
    if t.numel() != C:
        raise OpError(f"{name}{_where()}: {what} should contain {C} elements (one per channel "
                      f"of the input's dim 1), not {t.numel()}")
    if t.dtype != dtype:
        raise TypeError(f"{name}: {what} is {t.dtype} but the input is {dtype}; convert one "
                        f"(e.g. model.to(dtype))")
    return t


def _number(name, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {arg} must be a number, got {v!r}")
    return float(v)


def _channel_view(t, ndim):
    """A per-channel vector (C,) shaped to broadcast against (N, C, *spatial)."""
    return t.reshape((-1,) + (1,) * (ndim - 2))                    # (C, 1, ..., 1)


def _standardize(x, dims, eps):
    """(x - mean) / sqrt(var + eps) over dims, with the mean and biased variance it used."""
    mean = x.mean(dim=dims, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dim=dims, keepdim=True)                   # biased
    return xc * (var + eps).rsqrt(), mean, var


def _affine(y, weight, bias):
    if weight is not None:
        y = y * _channel_view(weight, y.ndim)
    if bias is not None:
        y = y + _channel_view(bias, y.ndim)
    return y


def _update(running, stat, momentum):
    """running = (1 - momentum) * running + momentum * stat (an array), in place, outside the
    graph: on the buffer's array, as an optimizer writes a parameter (no op is recorded, so a
    trace or a graph of the forward shows the normalization only; no node holds the buffer's
    memory)."""
    buf = running.detach().numpy()
    buf *= 1.0 - momentum
    buf += momentum * stat.reshape(buf.shape)


def _running_pair(name, running_mean, running_var, C, dtype):
    if (running_mean is None) != (running_var is None):
        raise OpError(f"{name}{_where()}: running_mean and running_var must both be given or "
                      f"both be None")
    _per_channel(name, "running_mean", running_mean, C, dtype)
    _per_channel(name, "running_var", running_var, C, dtype)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization (torch.nn.functional.batch_norm): input (N, C, *) standardised per
    channel with the batch's statistics (training) or the running ones (evaluation), then
    weight * x_hat + bias. While training, running_mean/running_var (when given) move towards
    the batch's mean and unbiased variance by momentum, in place."""
    x = _input("batch_norm", input, 2)
    C = x.shape[1]
    _running_pair("batch_norm", running_mean, running_var, C, x.dtype)
    weight = _per_channel("batch_norm", "weight", weight, C, x.dtype)
    bias = _per_channel("batch_norm", "bias", bias, C, x.dtype)
    momentum, eps = _number("batch_norm", "momentum", momentum), _number("batch_norm", "eps", eps)
    if not training:
        if running_mean is None:
            raise OpError(f"batch_norm{_where()}: running_mean and running_var must be given "
                          f"in evaluation mode (training=False)")
        x_hat = (x - _channel_view(running_mean.detach(), x.ndim)) * \
            (_channel_view(running_var.detach(), x.ndim) + eps).rsqrt()
        return _affine(x_hat, weight, bias)
    if eps <= 0:
        raise ValueError(f"batch_norm: eps must be positive while training, got {eps}")
    n = x.numel() // C if C else 0
    if n == 1:
        raise ValueError(f"batch_norm{_where()}: expected more than 1 value per channel when "
                         f"training, got input of shape {tuple(x.shape)}")
    if x.numel() == 0:                        # nothing to normalise; the statistics stay
        return _affine(x * 1.0, weight, bias)
    dims = (0,) + tuple(range(2, x.ndim))
    x_hat, mean, var = _standardize(x, dims, eps)
    if running_mean is not None:
        _update(running_mean, mean.detach().numpy(), momentum)
        _update(running_var, var.detach().numpy() * (n / (n - 1)), momentum)   # unbiased
    return _affine(x_hat, weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization (torch.nn.functional.instance_norm): each sample's channel of
    input (N, C, *spatial) standardised over its spatial dims, then weight * x_hat + bias.
    With use_input_stats and running statistics given, they move towards the batch's mean of
    the per-instance means and unbiased variances; use_input_stats=False standardises with
    the running statistics instead."""
    x = _input("instance_norm", input, 1)
    C = x.shape[1] if x.ndim > 1 else 0
    spatial = math.prod(x.shape[2:])
    if use_input_stats and spatial == 1 or x.ndim < 2:
        raise ValueError(f"instance_norm{_where()}: expected more than 1 spatial element when "
                         f"training, got input of shape {tuple(x.shape)}")
    _running_pair("instance_norm", running_mean, running_var, C, x.dtype)
    weight = _per_channel("instance_norm", "weight", weight, C, x.dtype)
    bias = _per_channel("instance_norm", "bias", bias, C, x.dtype)
    momentum = _number("instance_norm", "momentum", momentum)
    eps = _number("instance_norm", "eps", eps)
    if not use_input_stats:
        if running_mean is None:
            raise OpError(f"instance_norm{_where()}: running_mean and running_var must be "
                          f"given when use_input_stats is False")
        x_hat = (x - _channel_view(running_mean.detach(), x.ndim)) * \
            (_channel_view(running_var.detach(), x.ndim) + eps).rsqrt()
        return _affine(x_hat, weight, bias)
    if x.numel() == 0:
        return _affine(x * 1.0, weight, bias)
    x_hat, mean, var = _standardize(x, tuple(range(2, x.ndim)), eps)    # (N, C, 1, ...)
    if running_mean is not None:                # the batch's mean of per-instance statistics
        N = x.shape[0]
        _update(running_mean, mean.detach().numpy().reshape(N, C).mean(0), momentum)
        _update(running_var, (var.detach().numpy() * (spatial / (spatial - 1)))
                .reshape(N, C).mean(0), momentum)
    return _affine(x_hat, weight, bias)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization (torch.nn.functional.group_norm): the C channels of input
    (N, C, *) split into num_groups groups; each sample's group is standardised over its
    channels and spatial dims together, then weight * x_hat + bias per channel."""
    x = _input("group_norm", input, 2)
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or \
            num_groups < 1:
        raise ValueError(f"group_norm: num_groups must be a positive int, got {num_groups!r}")
    N, C = x.shape[0], x.shape[1]
    if C % num_groups:
        raise OpError(f"group_norm{_where()}: the input's {C} channels (dim 1 of "
                      f"{tuple(x.shape)}) are not divisible by num_groups={num_groups}")
    weight = _per_channel("group_norm", "weight", weight, C, x.dtype)
    bias = _per_channel("group_norm", "bias", bias, C, x.dtype)
    eps = _number("group_norm", "eps", eps)
    if x.numel() == 0:
        return _affine(x * 1.0, weight, bias)
    groups = x.reshape(N, num_groups, -1)                 # (N, G, C/G * spatial)
    x_hat, _, _ = _standardize(groups, (2,), eps)
    return _affine(x_hat.reshape(x.shape), weight, bias)  # (N, C, *)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels (torch.nn.functional.local_response_norm):

        y_c = x_c / (k + alpha / size * sum of x_j^2 over the channels j of c's window)^beta

    where c's window is channels c - size//2 .. c + (size-1)//2, zero beyond the edges (the sum
    is always divided by size). input (N, C, *) with at least 3 dims."""
    x = _input("local_response_norm", input, 3)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size!r}")
    alpha = _number("local_response_norm", "alpha", alpha)
    beta = _number("local_response_norm", "beta", beta)
    k = _number("local_response_norm", "k", k)
    if x.numel() == 0:
        return x * 1.0
    sq = x * x
    C, front, back = x.shape[1], size // 2, (size - 1) // 2
    pad = [zeros(*((x.shape[0], n) + tuple(x.shape[2:])), dtype=x.dtype) for n in (front, back)]
    padded = cat([pad[0], sq, pad[1]], dim=1)             # (N, front + C + back, *)
    window = padded[:, 0:C]
    for j in range(1, size):                              # the sum over each channel's window
        window = window + padded[:, j:j + C]
    div = (window * (alpha / size) + k) ** beta
    return x / div
