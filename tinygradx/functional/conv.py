"""Convolution as torch.nn.functional has it (re-exported by tinygradx.functional): conv1d/2d/3d,
conv_transpose1d/2d/3d, conv_tbc, unfold (im2col) and fold (col2im), and the helpers the
pooling and resampling files share (argument tuples, the batch dim, dtype checks, windows).

Each is a composition of ops the engine already differentiates to any order, so the graph
tools draw it and gradgradcheck holds without a new backward rule.

A convolution is im2col written with ops: the padded input is read at every kernel offset with
one strided slice (getitem with a step; its gradient fills a shared buffer, so the slices'
gradients add into one array: col2im for free), the slices are stacked into the column tensor,
and one (batched) matmul contracts it with the weight.

A transposed convolution runs the other way: one matmul turns each input position into a
column of kernel-sized output patches, and col2im adds every patch into the output. col2im is
written with `index_put` (getitem's adjoint as an op: zeros with a tensor written at a strided
slice), one per kernel offset and dim at a time: the patches are folded along the last spatial
dim first, then the next, so a 3 x 3 kernel costs 3 + 3 placements, not 9. F.fold is the same
col2im.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..autograd import OpError
from ..ops.movement import IndexPut
from ..tensor.creation import stack
from .padding import pad as _pad_op
from ..tensor import Tensor

# dtypes by torch's name, for the dtype checks of this file and its neighbours
FLOAT = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")


def ntuple(name, value, n, low=0):
    """An int or a sequence of n ints, each >= low, as a tuple of n ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        vals = (value,) * n
    elif isinstance(value, (tuple, list)):
        vals = tuple(value)
    else:
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    if len(vals) == 1 and n > 1:               # torch takes (k,) for every dim
        vals = vals * n
    if len(vals) != n or any(isinstance(v, (bool, np.bool_)) or
                             not isinstance(v, (int, np.integer)) for v in vals):
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    if any(v < low for v in vals):
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return tuple(int(v) for v in vals)


def check_tensor(op, name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")


def check_dtype(op, x, allowed, name="input"):
    """Refuse a dtype torch does not implement the op for (one line, naming both)."""
    if str(x.dtype) not in allowed:
        raise TypeError(f"{op}: {name} of dtype {x.dtype} is not supported (as in torch, "
                        f"which implements it for {', '.join(allowed)})")


def batched(op, x, n, batch_only=False):
    """x with a batch dim (torch takes (C, *spatial) as one sample) and whether it was added."""
    check_tensor(op, "input", x)
    if x.ndim == n + 1 and not batch_only:
        return x.unsqueeze(0), True
    if x.ndim != n + 2:
        want = f"a {n + 2}-d (batched)" if batch_only else \
            f"a {n + 1}-d (unbatched) or {n + 2}-d (batched)"
        raise OpError(f"{op}: expected {want} input, got shape {tuple(x.shape)}")
    return x, False


def windows(x, kernel, stride, dilation, out):
    """[x read at each kernel offset]: (N, C, *out) strided slices, kernel offsets in
    row-major order (the order torch scans a window in)."""
    views = []
    for offs in itertools.product(*[range(k) for k in kernel]):
        idx = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offs, dilation, stride, out, strict=True))
        views.append(x[idx])
    return views


def out_size(op, size, pad_total, kernel, stride, dilation, ceil_mode=False, pad_left=0):
    """torch's output length: floor((size + padding - span) / stride) + 1, rounded up with
    ceil_mode (whose last window may then run past the input, but must start inside it)."""
    span = dilation * (kernel - 1) + 1
    num = size + pad_total - span + (stride - 1 if ceil_mode else 0)
    n = num // stride + 1
    if ceil_mode and (n - 1) * stride >= size + pad_left:
        n -= 1                                  # the last window must start inside the input
    if n < 1:
        raise OpError(f"{op}: the kernel spans {span} but the input has {size} (with padding "
                      f"{size + pad_total}): the output would be empty")
    return n


def pairs_to_pad(pads):
    """[(left, right) per spatial dim, first dim first] as F.pad's list (last dim first)."""
    return [v for pair in reversed(pads) for v in pair]


def im2col(x, kernel, stride, dilation):
    """(N, C, *L) -> (N, C, K, *out): the input at every kernel offset, K = prod(kernel)."""
    n = len(kernel)
    out = [out_size("im2col", x.shape[2 + i], 0, kernel[i], stride[i], dilation[i])
           for i in range(n)]
    return stack(windows(x, kernel, stride, dilation, out), dim=2), out


def col2im(cols, kernel, stride, dilation):
    """(N, C, *kernel, *L) -> (N, C, *F), F = (L - 1) stride + dilation (k - 1) + 1: each
    patch added at its place (overlaps add up), one dim at a time."""
    n = len(kernel)
    y = cols
    for i in range(n):
        # y: (N, C, k_i .. k_n-1, F_0 .. F_i-1, L_i .. L_n-1); fold k_i (axis 2) into L_i
        k, s, d = kernel[i], stride[i], dilation[i]
        L = y.shape[2 + n]
        full = (L - 1) * s + d * (k - 1) + 1
        shape = list(y.shape[:2]) + list(y.shape[3:])
        shape[1 + n] = full
        total = None
        for off in range(k):
            index = (slice(None),) * (1 + n) + (slice(off * d, off * d + s * (L - 1) + 1, s),)
            placed = IndexPut.apply(y.select(2, off), index=index, shape=tuple(shape))
            total = placed if total is None else total + placed
        y = total
    return y


def _padding(op, padding, n, kernel, dilation, stride, allow_str=True):
    """[(left, right)] per spatial dim from an int, a tuple, 'same' or 'valid'."""
    if isinstance(padding, str) and allow_str:
        if padding == "valid":
            return [(0, 0)] * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided "
                                 f"convolutions (as in torch)")
            return [(t // 2, t - t // 2) for t in
                    (d * (k - 1) for d, k in zip(dilation, kernel, strict=True))]
        raise ValueError(f"{op}: padding must be an int, a tuple, 'same' or 'valid', got "
                         f"{padding!r}")
    return [(p, p) for p in ntuple(f"{op}: padding", padding, n)]


def _groups(op, groups):
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return int(groups)


def _same_dtypes(op, x, weight, bias):
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != x.dtype:
            raise TypeError(f"{op}: input is {x.dtype} but {name} is {t.dtype} (as torch, a "
                            f"convolution takes one dtype: convert one of them)")


def _conv(op, n, input, weight, bias, stride, padding, dilation, groups):
    x, added = batched(op, input, n)
    check_tensor(op, "weight", weight)
    if weight.ndim != n + 2:
        raise OpError(f"{op}: weight must be a {n + 2}-d Tensor (out_channels, "
                      f"in_channels/groups, *kernel), got shape {tuple(weight.shape)}")
    if bias is not None:
        check_tensor(op, "bias", bias)
    _same_dtypes(op, x, weight, bias)
    check_dtype(op, x, FLOAT + INTS)
    stride = ntuple(f"{op}: stride", stride, n, 1)
    dilation = ntuple(f"{op}: dilation", dilation, n, 1)
    groups = _groups(op, groups)
    N, C = x.shape[:2]
    n_out, Cg = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if C != Cg * groups or n_out % groups or n_out == 0:
        raise OpError(f"{op}: input of shape {tuple(input.shape)} has {C} channels, but weight "
                      f"{tuple(weight.shape)} with groups={groups} expects {Cg * groups} (and "
                      f"out_channels {n_out} a positive multiple of groups)")
    if bias is not None and tuple(bias.shape) != (n_out,):
        raise OpError(f"{op}: bias must have shape ({n_out},), got {tuple(bias.shape)}")
    pads = _padding(op, padding, n, kernel, dilation, stride)
    if any(p for pair in pads for p in pair):
        x = _pad_op(x, pairs_to_pad(pads))
    for i in range(n):
        if x.shape[2 + i] < dilation[i] * (kernel[i] - 1) + 1:
            raise OpError(f"{op}: the padded input {tuple(x.shape[2:])} is smaller than the "
                          f"kernel {kernel} (dilation {dilation}) in spatial dim {i}")
    cols, out = im2col(x, kernel, stride, dilation)           # (N, C, K, *out)
    CK, P = Cg * math.prod(kernel), math.prod(out)
    cols = cols.reshape(N, groups, CK, P)                     # (N, G, C/G*K, positions)
    w = weight.reshape(groups, n_out // groups, CK)           # (G, O/G, C/G*K)
    y = w @ cols                                              # (N, G, O/G, positions)
    y = y.reshape(N, n_out, *out)                             # (N, O, *out)
    if bias is not None:
        y = y + bias.reshape(n_out, *([1] * n))
    return y.squeeze(0) if added else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: (N, C, L) * (O, C/groups, k) -> (N, O, L_out); padding an
    int, a tuple, 'same' (stride 1) or 'valid'; (C, L) is one sample."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: (N, C, H, W) * (O, C/groups, kh, kw) -> (N, O, H_out,
    W_out); stride, padding, dilation an int or a pair; padding 'same' or 'valid' too."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv3d: (N, C, D, H, W) * (O, C/groups, kd, kh, kw)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """torch.nn.functional.conv_tbc: a 1-d convolution of a (time, batch, channels) input by
    a (k, C_in, C_out) weight, with `pad` zeros at both ends of time -> (T', B, C_out)."""
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        check_tensor("conv_tbc", name, t)
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise OpError(f"conv_tbc: expected input (T, B, C_in), weight (k, C_in, C_out) and "
                      f"bias (C_out,), got {tuple(input.shape)}, {tuple(weight.shape)}, "
                      f"{tuple(bias.shape)}")
    if input.shape[2] != weight.shape[1] or bias.shape[0] != weight.shape[2]:
        raise OpError(f"conv_tbc: input channels {input.shape[2]}, weight "
                      f"{tuple(weight.shape)} and bias {tuple(bias.shape)} do not agree "
                      f"(C_in at weight dim 1, C_out at weight dim 2 and in bias)")
    y = _conv("conv_tbc", 1, input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1,
              ntuple("conv_tbc: pad", pad, 1), 1, 1)          # (B, C_out, T')
    return y.permute(2, 0, 1)                                 # (T', B, C_out)


# ------------------------------------------------------------------------------------------
# transposed convolution
# ------------------------------------------------------------------------------------------

def _conv_transpose(op, n, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    x, added = batched(op, input, n)
    check_tensor(op, "weight", weight)
    if weight.ndim != n + 2:
        raise OpError(f"{op}: weight must be a {n + 2}-d Tensor (in_channels, "
                      f"out_channels/groups, *kernel), got shape {tuple(weight.shape)}")
    if bias is not None:
        check_tensor(op, "bias", bias)
    _same_dtypes(op, x, weight, bias)
    check_dtype(op, x, FLOAT + ("int64",))
    stride = ntuple(f"{op}: stride", stride, n, 1)
    dilation = ntuple(f"{op}: dilation", dilation, n, 1)
    padding = ntuple(f"{op}: padding", padding, n)
    out_pad = ntuple(f"{op}: output_padding", output_padding, n)
    groups = _groups(op, groups)
    if any(op_ >= max(s, d) for op_, s, d in zip(out_pad, stride, dilation, strict=True)):
        raise ValueError(f"{op}: output_padding {out_pad} must be smaller than either stride "
                         f"{stride} or dilation {dilation}, in each dim (as in torch)")
    N, C = x.shape[:2]
    Cg = weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if weight.shape[0] != C or C % groups:
        raise OpError(f"{op}: input of shape {tuple(input.shape)} has {C} channels, but weight "
                      f"{tuple(weight.shape)} (in_channels first) with groups={groups} "
                      f"expects {weight.shape[0]}, divisible by groups")
    n_out = Cg * groups
    if bias is not None and tuple(bias.shape) != (n_out,):
        raise OpError(f"{op}: bias must have shape ({n_out},), got {tuple(bias.shape)}")
    L = tuple(x.shape[2:])
    full = [(li - 1) * s + d * (k - 1) + 1 for li, s, d, k in
            zip(L, stride, dilation, kernel, strict=True)]
    out = [f - 2 * p + o for f, p, o in zip(full, padding, out_pad, strict=True)]
    if min(out) < 1 or min(L) < 1:
        raise OpError(f"{op}: input size {L} gives output size {tuple(out)} (kernel {kernel}, "
                      f"stride {stride}, padding {padding}, dilation {dilation}, "
                      f"output_padding {out_pad}): too small")
    K, P = math.prod(kernel), math.prod(L)
    xg = x.reshape(N, groups, C // groups, P)                  # (N, G, C/G, positions)
    w = weight.reshape(groups, C // groups, Cg * K).transpose(1, 2)   # (G, O/G*K, C/G)
    cols = (w @ xg).reshape(N, n_out, *kernel, *L)             # (N, O, *kernel, *L)
    y = col2im(cols, kernel, stride, dilation)                 # (N, O, *full)
    # the output drops `padding` at both ends and gains output_padding at the far end
    crop = [(-p, o - p) for p, o in zip(padding, out_pad, strict=True)]
    if any(c for pair in crop for c in pair):
        y = _pad_op(y, pairs_to_pad(crop))
    if bias is not None:
        y = y + bias.reshape(n_out, *([1] * n))
    return y.squeeze(0) if added else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose1d: (N, C_in, L) * (C_in, C_out/groups, k) ->
    (N, C_out, (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1); the
    gradient of conv1d with respect to its input, as a layer."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose2d: (N, C_in, H, W) * (C_in, C_out/groups, kh, kw)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose3d: (N, C_in, D, H, W) * (C_in, C_out/groups, *k)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def transpose_output_padding(op, input, output_size, stride, padding, kernel, dilation):
    """The output_padding that makes a transposed convolution's output `output_size` (nn's
    forward(input, output_size=...)), checked against the sizes it can reach."""
    n = len(kernel)
    size = list(output_size)
    if len(size) == n + 2:
        size = size[2:]
    elif len(size) == n + 1 and input.ndim == n + 1:
        size = size[1:]
    if len(size) != n:
        raise ValueError(f"{op}: output_size must have {n} or {n + 2} elements (the spatial "
                         f"sizes), got {tuple(output_size)}")
    pads = []
    for i in range(n):
        lo = (input.shape[-n + i] - 1) * stride[i] - 2 * padding[i] + \
            dilation[i] * (kernel[i] - 1) + 1
        hi = lo + stride[i] - 1
        if not lo <= size[i] <= hi:
            raise ValueError(f"{op}: requested an output size of {tuple(size)}, but valid "
                             f"sizes range from {lo} to {hi} in spatial dim {i} (for an "
                             f"input of {tuple(input.shape[-n:])})")
        pads.append(size[i] - lo)
    return tuple(pads)


# ------------------------------------------------------------------------------------------
# unfold (im2col) and fold (col2im)
# ------------------------------------------------------------------------------------------

def _fold_args(op, kernel_size, dilation, padding, stride):
    return (ntuple(f"{op}: kernel_size", kernel_size, 2, 1),
            ntuple(f"{op}: dilation", dilation, 2, 1),
            ntuple(f"{op}: padding", padding, 2),
            ntuple(f"{op}: stride", stride, 2, 1))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): (N, C, H, W) -> (N, C * kh * kw, L), one column
    per sliding block (L blocks, row-major), each column C's kernel-sized patches in turn."""
    op = "unfold"
    check_tensor(op, "input", input)
    if input.ndim not in (3, 4):
        raise OpError(f"unfold: expected a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape "
                      f"{tuple(input.shape)}")
    check_dtype(op, input, FLOAT + ("bool",))
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    x, added = batched(op, input, 2)
    blocks = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if min(blocks) < 1:
        raise OpError(f"unfold: input of spatial size {tuple(x.shape[2:])} with kernel_size="
                      f"{k}, dilation={d}, padding={p}, stride={s} gives {tuple(blocks)} "
                      f"sliding blocks; each must be at least one")
    if any(p):
        x = _pad_op(x, pairs_to_pad([(pi, pi) for pi in p]))
    cols, out = im2col(x, k, s, d)                            # (N, C, K, bh, bw)
    N, C = x.shape[:2]
    y = cols.reshape(N, C * k[0] * k[1], out[0] * out[1])     # (N, C*K, L)
    return y.squeeze(0) if added else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im): (N, C * kh * kw, L) -> (N, C, *output_size), each
    column's patches added at their block's place (overlaps add up; unfold's adjoint)."""
    op = "fold"
    check_tensor(op, "input", input)
    if input.ndim not in (2, 3):
        raise OpError(f"fold: expected a 2-d (C*kh*kw, L) or 3-d (N, C*kh*kw, L) input, got "
                      f"shape {tuple(input.shape)}")
    check_dtype(op, input, FLOAT + ("bool",))
    size = ntuple("fold: output_size", output_size, 2, 1)
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    x, added = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    N, CK, L = x.shape
    K = k[0] * k[1]
    if CK % K:
        raise OpError(f"fold: input's dim 1 ({CK}, shape {tuple(input.shape)}) must be "
                      f"divisible by the kernel's size {k[0]} * {k[1]} = {K}")
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if min(blocks) < 1 or blocks[0] * blocks[1] != L:
        raise OpError(f"fold: output_size={size}, kernel_size={k}, dilation={d}, padding={p}, "
                      f"stride={s} give {blocks[0]} * {blocks[1]} sliding blocks, but the "
                      f"input (shape {tuple(input.shape)}) has {L}")
    if x.dtype == np.bool_:                     # torch ORs overlapping booleans
        y = fold(x.to(np.float64), size, k, d, p, s) > 0
        return y.squeeze(0) if added else y
    cols = x.reshape(N, CK // K, k[0], k[1], blocks[0], blocks[1])
    y = col2im(cols, k, s, d)                                 # (N, C, F_h, F_w)
    # the padded canvas starts `padding` before the output and may stop short of its end
    crop = [(-p[i], size[i] + p[i] - y.shape[2 + i]) for i in range(2)]
    if any(c for pair in crop for c in pair):
        y = _pad_op(y, pairs_to_pad(crop))
    return y.squeeze(0) if added else y


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_tbc", "unfold", "fold"]
