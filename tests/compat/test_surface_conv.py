"""torch.nn's convolution, pooling, resampling, shuffle and padding modules, each against
torch's own class (test ids are the torch names, so docs/make_pytorch_coverage.py counts them):
the same arguments, the same parameters, forward and backward equal in float64, and the same
repr a learner prints.
"""
import numpy as np
import pytest

import tinygradx as tgx
from oracle import Raised, both, requires_torch, torch

pytestmark = requires_torch
if torch is None:   # the cases below are made by torch itself
    pytest.skip("torch (the test oracle) not installed", allow_module_level=True)

R = np.random.default_rng(0)
X4 = R.standard_normal((1, 3, 5, 5))          # (N, C, H, W)
X3 = R.standard_normal((2, 3, 6))             # (N, C, L)
X5 = R.standard_normal((1, 2, 3, 4, 4))       # (N, C, D, H, W)
POS4 = np.abs(X4) + 0.1


def _pooled(n, x, k):
    """(values, indices) of torch's max pooling with kernel k: MaxUnpool's inputs."""
    v, i = getattr(torch.nn.functional, f"max_pool{n}d")(torch.tensor(x), k,
                                                       return_indices=True)
    return v.numpy(), i.numpy()


# torch name -> [(constructor args, constructor kwargs, input, forward kwargs)]
CASES = {
    "Conv1d": [((3, 4, 3), dict(stride=2, padding=1, padding_mode="reflect"), X3, {})],
    "Conv2d": [((3, 6, (2, 3)), dict(groups=3, dilation=(2, 1), padding="same"), X4, {})],
    "Conv3d": [((2, 4, 3), dict(padding=1, padding_mode="circular"), X5, {}),
               ((2, 2, (1, 2, 2)), dict(stride=(1, 2, 1), groups=2, bias=False), X5, {})],
    "ConvTranspose1d": [((3, 2, 3), dict(stride=3, output_padding=2, bias=False), X3, {})],
    "ConvTranspose2d": [((3, 4, 3), dict(stride=2, padding=1), X4, {}),
                        ((3, 6, (2, 3)), dict(stride=(2, 1), groups=3, dilation=(1, 2)), X4, {}),
                        ((3, 2, 3), dict(stride=2, padding=1), X4, {"output_size": (10, 10)})],
    "ConvTranspose3d": [((2, 2, 2), dict(stride=2), X5, {"output_size": (1, 2, 7, 8, 9)})],
    "Unfold": [((2,), dict(dilation=2, padding=1), X4, {})],
    "Fold": [(((4, 5), 2), dict(stride=(1, 2)), R.standard_normal((2, 12, 6)), {})],
    "MaxPool1d": [((3,), dict(stride=2, padding=1, return_indices=True), X3, {})],
    "MaxPool2d": [((3,), dict(stride=2, padding=1, return_indices=True, ceil_mode=True), X4, {})],
    "MaxPool3d": [((2,), dict(dilation=(1, 2, 1)), X5, {})],
    "AvgPool1d": [((3,), dict(stride=2, padding=1, ceil_mode=True), X3, {})],
    "AvgPool2d": [((3,), dict(stride=2, padding=1, divisor_override=2), X4, {})],
    "AvgPool3d": [((2,), dict(stride=1, padding=1, count_include_pad=False), X5, {})],
    "MaxUnpool1d": [((2,), {}, _pooled(1, X3, 2), {}),
                    ((3,), dict(stride=3), _pooled(1, X3, 3), {"output_size": (7,)})],
    "MaxUnpool2d": [((2,), {}, _pooled(2, X4, 2), {"output_size": (1, 3, 5, 5)})],
    "MaxUnpool3d": [((2,), {}, _pooled(3, X5, 2), {})],
    "LPPool1d": [((2, 3), dict(stride=2), np.abs(X3) + 0.1, {})],
    "LPPool2d": [((2, 3), dict(stride=2, ceil_mode=True), POS4, {})],
    "LPPool3d": [((1.5, 2), {}, np.abs(X5) + 0.1, {})],
    "AdaptiveMaxPool1d": [((4,), dict(return_indices=True), X3, {})],
    "AdaptiveMaxPool2d": [(((3, None),), dict(return_indices=True), X4, {})],
    "AdaptiveMaxPool3d": [(((2, 3, 3),), {}, X5, {})],
    "AdaptiveAvgPool1d": [((4,), {}, X3, {})],
    "AdaptiveAvgPool2d": [(((1, 1),), {}, X4, {})],
    "AdaptiveAvgPool3d": [(((2, 1, 3),), {}, X5, {})],
    "FractionalMaxPool2d": [((2,), dict(output_size=(3, 2), return_indices=True,
                                        _random_samples=np.full((1, 3, 2), 0.3)), X4, {})],
    "FractionalMaxPool3d": [((2,), dict(output_size=(1, 2, 2),
                                        _random_samples=np.full((1, 2, 3), 0.6)), X5, {})],
    "Upsample": [((), dict(scale_factor=1.5, mode="bicubic", align_corners=True), X4, {}),
                 ((), dict(size=(2, 5, 7), mode="trilinear"), X5, {}),
                 ((), dict(scale_factor=0.5, mode="bilinear"), X4, {})],
    "UpsamplingNearest2d": [((), dict(scale_factor=2), X4, {})],
    "UpsamplingBilinear2d": [((), dict(size=(3, 7)), X4, {})],
    "PixelShuffle": [((1,), {}, X4, {})],
    "PixelUnshuffle": [((5,), {}, X4, {})],
    "ChannelShuffle": [((3,), {}, X4, {})],
    "ZeroPad1d": [(((2, -1),), {}, X3, {})],
    "ZeroPad2d": [(((1, 0, 2, -2),), {}, X4, {})],
    "ZeroPad3d": [((1,), {}, X5, {})],
    "ConstantPad1d": [((2, -1.5), {}, X3, {})],
    "ConstantPad2d": [(((0, 1, 2, 3), 0.5), {}, X4, {})],
    "ConstantPad3d": [((1, 2.5), {}, X5, {})],
    "ReflectionPad1d": [(((3, -2),), {}, X3, {})],
    "ReflectionPad2d": [(((1, 2, -1, 3),), {}, X4, {})],
    "ReflectionPad3d": [((1,), {}, X5, {})],
    "ReplicationPad1d": [(((4, 1),), {}, X3, {})],
    "ReplicationPad2d": [(((1, 2, 0, -3),), {}, X4, {})],
    "ReplicationPad3d": [((1,), {}, X5, {})],
    "CircularPad1d": [(((2, -1),), {}, X3, {})],
    "CircularPad2d": [(((1, 2, 2, 0),), {}, X4, {})],
    "CircularPad3d": [((1,), {}, X5, {})],
}
# torch prints no arguments for these (its extra_repr is empty)
_BARE_REPR = ("FractionalMaxPool2d", "FractionalMaxPool3d")


def _build(lib, cls, args, kwargs):
    wrap = torch.tensor if lib is torch else tgx.Tensor
    kw = {k: wrap(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    if lib is tgx:
        tgx.manual_seed(0)
    return getattr(lib.nn, cls)(*args, **kw)


def _share(ours, theirs):
    """theirs takes our parameters; both in float64."""
    ours.double()
    theirs.double()
    with torch.no_grad():
        mine = dict(ours.named_parameters())
        for name, p in theirs.named_parameters():
            p.copy_(torch.tensor(mine[name].detach().numpy()))


def _run(module, lib, x, **call):
    x, *more = x if isinstance(x, tuple) else (x,)      # (input, indices) for MaxUnpool
    xs = lib.tensor(x, requires_grad=True)
    out = module(xs, *[lib.tensor(m) for m in more], **call)
    y = out[0] if isinstance(out, tuple) else out
    weights = np.arange(y.numel()).reshape(tuple(y.shape)) % 7 - 3.0
    (y * lib.tensor(weights)).sum().backward()
    return out, [xs.grad] + [p.grad for _, p in sorted(module.named_parameters())]


@pytest.mark.parametrize("cls", CASES, ids=[f"torch.nn.{c}" for c in CASES])
def test_module(cls):
    for args, kwargs, x, call in CASES[cls]:
        _compare(cls, args, kwargs, x, call)


def _compare(cls, args, kwargs, x, call):
    ours, theirs = _build(tgx, cls, args, kwargs), _build(torch, cls, args, kwargs)
    _share(ours, theirs)
    _, theirs_out = both(lambda: _run(ours, tgx, x, **call),
                         lambda: _run(theirs, torch, x, **call), atol=1e-10, rtol=1e-10)
    assert not isinstance(theirs_out, Raised), f"torch refuses the {cls} case: {theirs_out}"
    if not list(theirs.parameters()) and cls not in _BARE_REPR:
        assert repr(ours) == repr(theirs)
