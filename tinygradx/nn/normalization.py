"""torch.nn's normalization modules (re-exported by tinygradx.nn): BatchNorm1d/2d/3d,
InstanceNorm1d/2d/3d, GroupNorm and LocalResponseNorm, with torch's arguments, parameter and
buffer names, state dict and errors. Each calls its F function (functional/normalization.py),
which is written with the engine's ops; the modules keep the parameters and the running
statistics and decide which statistics a call uses:

    BatchNorm     training: the batch's (and the buffers move towards them); evaluation: the
                  running ones, or the batch's when the module tracks none
    InstanceNorm  each sample's own, unless track_running_stats and evaluation
    GroupNorm     each sample's own, always (no buffers)

momentum=None makes BatchNorm's running statistics the cumulative mean of every batch seen
(factor 1 / num_batches_tracked), as torch.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import functional as F
from ..autograd import Function, no_grad
from ..autograd.function_ctx import once_differentiable
from ..tensor import Tensor
from .layers import int_arg
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _positive_number(cls, name, v, allow_none=False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{cls}: {name} must be a number{' or None' if allow_none else ''}, "
                        f"got {v!r}")
    return float(v) if isinstance(v, (float, np.floating)) else v


def _reset_affine(m):
    with no_grad():
        if m.weight is not None:
            m.weight.fill_(1)
        if m.bias is not None:
            m.bias.zero_()


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share (torch's _NormBase): weight (ones) and bias (zeros)
    per channel when affine; running_mean (zeros), running_var (ones) and num_batches_tracked
    (an int64 0-d count) as buffers when track_running_stats."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        cls = type(self).__name__
        self.num_features = int_arg(cls, "num_features", num_features, low=0)
        self.eps = _positive_number(cls, "eps", eps)
        self.momentum = _positive_number(cls, "momentum", momentum, allow_none=True)
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        C = self.num_features
        self.weight = Parameter(np.ones(C, np.float32)) if self.affine else None
        self.bias = Parameter(np.zeros(C, np.float32)) if self.affine and bias else None
        if self.track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(C, np.float32)))
            self.register_buffer("running_var", Tensor(np.ones(C, np.float32)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        if device is not None or dtype is not None:       # torch's factory arguments
            self.to(device=device, dtype=dtype)

    def reset_running_stats(self):
        """running_mean to 0, running_var to 1, num_batches_tracked to 0 (in place)."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """The running statistics reset, weight to 1 and bias to 0 (in place)."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor, got "
                            f"{type(input).__name__}")
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"{type(self).__name__}: expected {want} input, got {input.ndim}D "
                             f"input of shape {tuple(input.shape)}")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.detach().numpy()[...] += 1   # a count, outside the graph
            if self.momentum is None:              # the cumulative mean of every batch seen
                factor = 1.0 / float(self.num_batches_tracked.item())
        # the batch's statistics while training, and in evaluation when none are kept
        use_batch = self.training or self.running_mean is None
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """torch.nn.BatchNorm1d: input (N, C) or (N, C, L), standardised per channel over the
    batch (and L): y = (x - mean) / sqrt(var + eps) * weight + bias."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d: input (N, C, H, W), per channel over N, H and W."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """torch.nn.BatchNorm3d: input (N, C, D, H, W), per channel over N, D, H and W."""
    _dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype, bias=bias)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.ndim == self._dims[0]            # (C, *spatial)
        feature_dim = 0 if unbatched else 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"{type(self).__name__}: expected the input's size at dim="
                                 f"{feature_dim} to match num_features ({self.num_features}), "
                                 f"got {input.shape[feature_dim]} (input {tuple(input.shape)})")
            warnings.warn(f"{type(self).__name__}: the input's size at dim={feature_dim} does "
                          f"not match num_features; num_features is not used because "
                          f"affine=False", stacklevel=2)
        x = input.unsqueeze(0) if unbatched else input
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """torch.nn.InstanceNorm1d: input (N, C, L) or (C, L), each sample's channel standardised
    over L (no affine parameters and no running statistics by default)."""
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """torch.nn.InstanceNorm2d: input (N, C, H, W) or (C, H, W), over H and W."""
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """torch.nn.InstanceNorm3d: input (N, C, D, H, W) or (C, D, H, W), over D, H and W."""
    _dims = (4, 5)


class GroupNorm(Module):
    """torch.nn.GroupNorm: the channels of input (N, C, *) in num_groups groups, each sample's
    group standardised over its channels and positions, then weight * x_hat + bias per
    channel (weight ones, bias zeros when affine)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        self.num_groups = int_arg("GroupNorm", "num_groups", num_groups)
        self.num_channels = int_arg("GroupNorm", "num_channels", num_channels, low=0)
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.eps, self.affine = _positive_number("GroupNorm", "eps", eps), bool(affine)
        C = self.num_channels
        self.weight = Parameter(np.ones(C, np.float32)) if self.affine else None
        self.bias = Parameter(np.zeros(C, np.float32)) if self.affine and bias else None
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    def reset_parameters(self):
        """weight to 1 and bias to 0 (in place)."""
        _reset_affine(self)

    def forward(self, input):
        if isinstance(input, Tensor) and input.ndim >= 2 and self.affine and \
                input.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected {self.num_channels} channels at dim 1 of "
                             f"the input, got shape {tuple(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """torch.nn.LocalResponseNorm: x_c / (k + alpha / size * sum of x^2 over the size channels
    around c)^beta, for input (N, C, *) with at least 3 dims."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        self.size = int_arg("LocalResponseNorm", "size", size)
        self.alpha, self.beta, self.k = alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# -- CrossMapLRN2d: torch's legacy (Lua Torch) cross-channel LRN, numbers and gradients as its --

class _CrossMapLRN(Function):
    """torch's CrossMapLRN2d as one custom node, because its numbers are not LocalResponseNorm's
    and its gradient is not the derivative of its own output (torch.autograd.gradcheck fails
    on torch's module): a model trained with it in torch trains with exactly these.

    forward: scale_c = k + alpha / size * S_c with S_0 the sum of x^2 over the first
    pre = (size - 1) // 2 + 1 channels and S_c = S_{c-1} + x^2_{c + pre - 1} (while that channel
    exists) - x^2_{c - pre} (only for c > pre: channel 0 is never taken out again), and
    y = x * scale^-beta. backward: dx_c = scale_c^-beta g_c - (2 alpha beta / size) x_c
    * sum of (g y / scale) over channels c - (size - 1) // 2 .. c + size // 2 (zero padded).
    Once differentiable, as torch's (a second derivative is refused)."""

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        a = x.detach().numpy()
        sq = a * a
        C, pre = a.shape[1], int((size - 1) / 2 + 1)
        s = np.empty_like(a)
        s[:, 0] = sq[:, :min(pre, C)].sum(1)
        for c in range(1, C):
            s[:, c] = s[:, c - 1]
            if c < C - pre + 1:
                s[:, c] += sq[:, c + pre - 1]
            if c > pre:
                s[:, c] -= sq[:, c - pre]
        scale = s * (alpha / size) + k
        y = a * scale ** -beta
        ctx.save_for_backward(x)
        ctx.arrays, ctx.consts = (a, y, scale), (size, alpha, beta)
        return Tensor(y.astype(a.dtype, copy=False))

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        a, y, scale = ctx.arrays
        size, alpha, beta = ctx.consts
        if size == 1:           # torch's backward reads past its buffer there and raises
            raise RuntimeError("CrossMapLRN2d: torch's backward has no answer for size=1 (it "
                               "fails there); use nn.LocalResponseNorm(1), whose gradient is "
                               "its derivative")
        gy = g.detach().numpy()
        C, lead = a.shape[1], int(size - (size - 1) / 2)
        ratio = np.zeros((a.shape[0], C + size - 1) + a.shape[2:], a.dtype)
        ratio[:, lead:lead + C] = gy * y / scale
        csum = np.concatenate([np.zeros_like(ratio[:, :1]), np.cumsum(ratio, 1)], 1)
        window = csum[:, size:size + C] - csum[:, :C]               # channels c .. c + size - 1
        dx = scale ** -beta * gy - (2 * alpha * beta / size) * a * window
        return Tensor(dx.astype(a.dtype, copy=False)), None, None, None, None


class CrossMapLRN2d(Module):
    """torch.nn.CrossMapLRN2d: the legacy cross-channel local response normalization of a 4-d
    input (N, C, H, W), with torch's numbers and gradients (see _CrossMapLRN: they differ from
    LocalResponseNorm's, and torch's gradient is not the derivative of its output, so this is
    one custom node rather than a composition of ops; prefer nn.LocalResponseNorm)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        self.size = int_arg("CrossMapLRN2d", "size", size)
        self.alpha, self.beta, self.k = alpha, beta, k

    def forward(self, input):
        if not isinstance(input, Tensor) or input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: expected a 4-d input (N, C, H, W), got "
                             f"{getattr(input, 'shape', type(input).__name__)}")
        if input.dtype.kind != "f":
            raise TypeError(f"CrossMapLRN2d: needs a floating-point input, got {input.dtype}")
        return _CrossMapLRN.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
