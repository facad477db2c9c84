"""tinygradx.nn.init: PyTorch's initialisers (`tgx.nn.init.xavier_uniform_(w)`, or
`from tinygradx.nn import init`), with torch's names, argument order and defaults.

Each one fills its tensor in place under `no_grad()` (so a Parameter takes it), draws from
tinygradx's one generator (`tgx.manual_seed`) and returns the tensor. Fans are torch's: for a
weight of shape (out, in, *k), fan_in = in * prod(k) and fan_out = out * prod(k) (a Linear
weight (out, in) has fan_in = in). The distributions are torch's; the bits are not (another
generator).

    calculate_gain(nonlinearity, param=None)       1, 5/3 (tanh), sqrt(2) (relu),
                                                   sqrt(2 / (1 + slope^2)) (leaky_relu), 3/4 (selu)
    uniform_(t, a, b)        U(a, b)               normal_(t, mean, std)   N(mean, std^2)
    trunc_normal_(t, mean, std, a, b)              N(mean, std^2) redrawn until inside [a, b]
    constant_(t, val), ones_(t), zeros_(t), eye_(t)
    xavier_uniform_(t, gain)  U(-g sqrt(6 / (fan_in + fan_out)), +...)
    xavier_normal_(t, gain)   N(0, g^2 * 2 / (fan_in + fan_out))
    kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu")
                              U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nl, a)
    kaiming_normal_(...)      N(0, (gain / sqrt(fan))^2)
    orthogonal_(t, gain)      gain * Q, Q with orthonormal rows or columns (QR of a normal draw,
                              signs fixed by R's diagonal, as torch)
    sparse_(t, sparsity, std) N(0, std^2), then ceil(sparsity * rows) zeros in every column
    dirac_(t, groups)         a convolution weight that passes its input through (3-5 dims)

The random ones take `generator=` (a tgx.Generator, torch.Generator in the look-alike): its own
stream instead of the global one. torch's deprecated names without the underscore (`uniform`,
`xavier_uniform`, ...) call the new ones with torch's FutureWarning, and torch's helpers
`_calculate_fan_in_and_fan_out` and `_calculate_correct_fan`, which custom `reset_parameters`
code calls, are here too.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd import no_grad
from ..tensor import Tensor
from ..tensor.creation import generator_rng

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_",
           "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse",
           "_calculate_fan_in_and_fan_out", "_calculate_correct_fan"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def _tensor(name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"init.{name}: expected a Tensor (e.g. a Parameter), got "
                        f"{type(t).__name__}")
    return t


def calculate_gain(nonlinearity, param=None):
    """The gain torch recommends for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for
    tanh, sqrt(2) for relu, sqrt(2 / (1 + negative_slope^2)) for leaky_relu (param, default
    0.01), 3/4 for selu."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(name, t):
    """(fan_in, fan_out) as torch computes them; a tensor needs at least 2 dims."""
    if t.ndim < 2:
        raise ValueError(f"init.{name}: fan in and fan out cannot be computed for a tensor "
                         f"with fewer than 2 dims (shape {t.shape})")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(name, t, mode):
    if not isinstance(mode, str) or mode.lower() not in ("fan_in", "fan_out"):
        raise ValueError(f"init.{name}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(name, t)
    return fan_in if mode.lower() == "fan_in" else fan_out


def _calculate_fan_in_and_fan_out(tensor):
    """torch's helper: (fan_in, fan_out) of a weight (out, in, *k): in * prod(k), out * prod(k)."""
    return _fans("_calculate_fan_in_and_fan_out", _tensor("_calculate_fan_in_and_fan_out",
                                                         tensor))


def _calculate_correct_fan(tensor, mode):
    """torch's helper: the fan_in or fan_out of a weight, as mode says."""
    return _fan("_calculate_correct_fan", _tensor("_calculate_correct_fan", tensor), mode)


def _write(tensor, values):
    """Copy values into tensor in place (outside the graph); returns the tensor."""
    with no_grad():
        return tensor.copy_(Tensor(np.asarray(values).astype(tensor.dtype, copy=False)))


def _floating(name, t):
    if t.dtype.kind != "f":
        raise TypeError(f"init.{name}: needs a floating-point tensor, got {t.dtype}")
    return t


def _normal(name, tensor, mean, std, generator):
    """N(mean, std^2) into tensor. With generator=None it is the tensor's own normal_ (the
    draws models made before generator= existed); with one, the same draw from its stream."""
    _floating(name, _tensor(name, tensor))
    if generator is None:
        with no_grad():
            return tensor.normal_(mean, std)
    rng = generator_rng(f"init.{name}", generator)
    kind = tensor.dtype if tensor.dtype in (np.float32, np.float64) else np.float64
    return _write(tensor, rng.standard_normal(tensor.shape, dtype=kind) * std + mean)


def _uniform(name, tensor, a, b, generator):
    _floating(name, _tensor(name, tensor))
    if generator is None:
        with no_grad():
            return tensor.uniform_(a, b)
    if not a <= b:
        raise ValueError(f"init.{name}: expects a <= b, got a={a}, b={b}")
    return _write(tensor, generator_rng(f"init.{name}", generator).uniform(a, b, tensor.shape))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b) samples, in place; returns the tensor."""
    return _uniform("uniform_", tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2) samples, in place; returns the tensor."""
    return _normal("normal_", tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) samples restricted to [a, b] (absolute bounds, as torch), in
    place; returns the tensor. Drawn by rejection: from the normal itself while [a, b] holds
    at least 5% of it, else uniformly on [a, b], each kept with the normal's density relative
    to its peak there (a narrow or far interval then needs few rounds as well)."""
    _floating("trunc_normal_", _tensor("trunc_normal_", tensor))
    if not a < b:
        raise ValueError(f"init.trunc_normal_: expects a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"init.trunc_normal_: std must be > 0, got {std}")
    lo, hi = (a - mean) / std, (b - mean) / std
    if hi < -8 or lo > 8:
        raise ValueError(f"init.trunc_normal_: [a, b] = [{a}, {b}] is more than 8 std from "
                         f"the mean {mean}; no sample would land there")
    rng = generator_rng("init.trunc_normal_", generator)
    mass = 0.5 * (math.erf(hi / math.sqrt(2)) - math.erf(lo / math.sqrt(2)))
    peak = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))   # where the density is highest

    def draw(n):
        if mass >= 0.05:
            z = rng.standard_normal(n)
            return z, (z >= lo) & (z <= hi)
        z = rng.uniform(lo, hi, n)
        return z, rng.random(n) < np.exp((peak * peak - z * z) / 2)

    z, ok = draw(tensor.numel())
    while not ok.all():           # each round keeps a fixed share: a few rounds at most
        z[~ok], ok[~ok] = draw(int((~ok).sum()))
    return _write(tensor, np.clip(z * std + mean, a, b).reshape(tensor.shape))


def constant_(tensor, val):
    """Fill with val, in place; returns the tensor."""
    with no_grad():
        return _tensor("constant_", tensor).fill_(val)


def ones_(tensor):
    """Fill with 1, in place; returns the tensor."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0, in place; returns the tensor."""
    with no_grad():
        return _tensor("zeros_", tensor).zero_()


def eye_(tensor):
    """The identity matrix in a 2-d tensor, in place; returns the tensor."""
    if _tensor("eye_", tensor).ndim != 2:
        raise ValueError(f"init.eye_: only 2-d tensors are supported, got shape {tensor.shape}")
    with no_grad():
        return tensor.copy_(Tensor(np.eye(*tensor.shape, dtype=tensor.dtype)))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010), in
    place; returns the tensor."""
    fan_in, fan_out = _fans("xavier_uniform_", _tensor("xavier_uniform_", tensor))
    if tensor.numel() == 0:            # nothing to fill (torch warns and returns it too)
        return tensor
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _uniform("xavier_uniform_", tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)), in place; returns it."""
    fan_in, fan_out = _fans("xavier_normal_", _tensor("xavier_normal_", tensor))
    if tensor.numel() == 0:
        return tensor
    return _normal("xavier_normal_", tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)),
                   generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound), bound = gain * sqrt(3 / fan) with gain = calculate_gain(nonlinearity,
    a) and fan the fan_in or fan_out (He et al. 2015), in place; returns the tensor."""
    fan = _fan("kaiming_uniform_", _tensor("kaiming_uniform_", tensor), mode)
    if tensor.numel() == 0:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return _uniform("kaiming_uniform_", tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2), std = gain / sqrt(fan) (He et al. 2015), in place; returns the tensor."""
    fan = _fan("kaiming_normal_", _tensor("kaiming_normal_", tensor), mode)
    if tensor.numel() == 0:
        return tensor
    return _normal("kaiming_normal_", tensor, 0.0,
                   calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """gain * Q, Q a (semi-)orthogonal matrix (Saxe et al. 2013) of the tensor viewed as
    (rows, the rest): orthonormal rows when rows < columns, else orthonormal columns. Q comes
    from the QR decomposition of a N(0, 1) draw, each column's sign set by R's diagonal (so Q
    is uniformly distributed), as torch. In place; returns the tensor."""
    _floating("orthogonal_", _tensor("orthogonal_", tensor))
    if tensor.ndim < 2:
        raise ValueError(f"init.orthogonal_: only tensors with 2 or more dims are supported, "
                         f"got shape {tensor.shape}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = generator_rng("init.orthogonal_", generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T                                   # QR of the tall side
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))                         # column j times sign(R_jj)
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-d tensor drawn from N(0, std^2), then ceil(sparsity * rows) entries of every column
    set to zero at rows picked at random (Martens 2010). In place; returns the tensor. torch
    picks the zero rows from its global generator even when given one; here `generator`
    draws both."""
    _floating("sparse_", _tensor("sparse_", tensor))
    if tensor.ndim != 2:
        raise ValueError(f"init.sparse_: only 2-d tensors are supported, got shape "
                         f"{tensor.shape}")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    rng = generator_rng("init.sparse_", generator)
    kind = tensor.dtype if tensor.dtype in (np.float32, np.float64) else np.float64
    values = rng.standard_normal((rows, cols), dtype=kind) * std
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return _write(tensor, values)


def dirac_(tensor, groups=1):
    """A convolution weight (out, in, *k) with 3, 4 or 5 dims that passes its input through:
    a 1 at the kernel's centre for output channel d of each group and input channel d (as many
    channels as both have), 0 elsewhere. In place; returns the tensor."""
    _tensor("dirac_", tensor)
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"init.dirac_: only tensors with 3, 4 or 5 dims are supported, got "
                         f"shape {tensor.shape}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"init.dirac_: groups must be a positive int, got {groups!r}")
    if tensor.shape[0] % groups:
        raise ValueError(f"init.dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups "
                         f"({groups})")
    per_group = tensor.shape[0] // groups
    centre = tuple(k // 2 for k in tensor.shape[2:])
    w = np.zeros(tensor.shape, tensor.dtype)
    for g in range(groups):
        for d in range(min(per_group, tensor.shape[1])):
            w[(g * per_group + d, d) + centre] = 1
    return _write(tensor, w)


def _deprecated(new):
    """torch's old name of an initialiser (no trailing underscore): calls the new one with
    torch's FutureWarning."""
    old = new.__name__[:-1]

    def call(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    call.__name__ = call.__qualname__ = old
    call.__doc__ = f"Deprecated (as in torch): {new.__name__}, with a FutureWarning."
    return call


uniform, normal, constant, eye, dirac = (_deprecated(f) for f in (uniform_, normal_, constant_,
                                                                  eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)
