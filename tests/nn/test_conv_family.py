"""The convolution, pooling, resampling and padding families against torch itself (the oracle
harness of tests/oracle.py): the same call on the look-alike and on torch, equal in values,
dtypes and shapes, or both refusing, tinygradx's refusal one clear line raised by its own code.

The values and gradients over generated arguments are the op-info table's
(tests/opinfo_conv.py); here: every argument error, the dtypes each op takes, the modules
working together, and the issue's examples; each module alone against torch's:
tests/compat/test_surface_conv.py.
"""
import numpy as np
import pytest

import tinygradx as tgx
from oracle import Raised, both, requires_torch, same, torch

pytestmark = requires_torch

R = np.random.default_rng(0)
X4 = R.standard_normal((1, 3, 5, 5))          # (N, C, H, W)
X3 = R.standard_normal((2, 3, 6))             # (N, C, L)
X5 = R.standard_normal((1, 2, 3, 4, 4))       # (N, C, D, H, W)


def t(m, a, dtype=None):
    return m.tensor(a, dtype=dtype) if dtype is not None else m.tensor(a)


# ------------------------------------------------------------------------------------------
# the examples
# ------------------------------------------------------------------------------------------

def test_uint8_bilinear_is_torchs_not_a_cast_blend():
    """issue 43: uint8 bilinear gave [[0, 20], [80, 100]] (the weights cast to uint8)."""
    grid = (np.arange(16).reshape(1, 1, 4, 4) * 10).astype(np.uint8)
    ours, theirs = same(lambda m: m.nn.functional.interpolate(t(m, grid), size=(2, 2),
                                                             mode="bilinear"))
    assert ours.numpy()[0, 0].tolist() == [[25, 45], [105, 125]]


@pytest.mark.parametrize("C", [1, 3, 4, 5, 8])       # torch: an AVX path up to 4 channels
@pytest.mark.parametrize("mode,aa", [("bilinear", False), ("bicubic", False),
                                     ("bilinear", True), ("bicubic", True)])
def test_uint8_images_bit_for_bit(C, mode, aa):
    img = R.integers(0, 256, (2, C, 9, 7)).astype(np.uint8)
    for size in ((13, 11), (4, 3), (9, 12), (5, 7)):
        same(lambda m, size=size: m.nn.functional.interpolate(t(m, img), size=size, mode=mode,
                                                              antialias=aa), atol=0, rtol=0)
    same(lambda m: m.nn.functional.interpolate(t(m, img), scale_factor=1.7, mode=mode,
                                               align_corners=True), atol=0, rtol=0)


# ------------------------------------------------------------------------------------------
# every argument error: torch refuses, so does tinygradx, in one line of its own
# ------------------------------------------------------------------------------------------

def _f(m):
    return m.nn.functional


ERRORS = {
    # convolution
    "conv2d: 2-d input": lambda m: _f(m).conv2d(t(m, X4[0, 0]), t(m, X4[:, :1])),
    "conv2d: 3-d weight": lambda m: _f(m).conv2d(t(m, X4), t(m, X4[0])),
    "conv2d: channels": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 2, 3, 3)))),
    "conv2d: kernel > input": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 6, 6)))),
    "conv2d: negative padding": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3))),
                                                       padding=-1),
    "conv2d: stride 0": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3))), stride=0),
    "conv2d: bias shape": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3))),
                                                 t(m, np.ones(3))),
    "conv2d: groups 0": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3))), groups=0),
    "conv2d: groups": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 1, 3, 3))), groups=2),
    "conv2d: mixed dtypes": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3)),
                                                               m.float32)),
    "conv2d: bool": lambda m: _f(m).conv2d(t(m, X4 > 0), t(m, np.ones((2, 3, 3, 3)) > 0)),
    "conv2d: same + stride": lambda m: _f(m).conv2d(t(m, X4), t(m, np.ones((2, 3, 3, 3))),
                                                    stride=2, padding="same"),
    "conv3d: 4-d weight": lambda m: _f(m).conv3d(t(m, X5), t(m, np.ones((2, 2, 3, 3)))),
    "conv1d: dilation 0": lambda m: _f(m).conv1d(t(m, X3), t(m, np.ones((2, 3, 2))),
                                                 dilation=0),
    "conv_transpose2d: output_padding": lambda m: _f(m).conv_transpose2d(
        t(m, X4), t(m, np.ones((3, 2, 3, 3))), stride=2, output_padding=2),
    "conv_transpose2d: channels": lambda m: _f(m).conv_transpose2d(
        t(m, X4), t(m, np.ones((2, 2, 3, 3)))),
    "conv_transpose2d: empty output": lambda m: _f(m).conv_transpose2d(
        t(m, X4[:, :, :1, :1]), t(m, np.ones((3, 2, 1, 1))), padding=1),
    "conv_transpose2d: int32": lambda m: _f(m).conv_transpose2d(
        t(m, X4.astype(np.int32)), t(m, np.ones((3, 2, 3, 3), np.int32))),
    "conv_transpose2d: padding string": lambda m: _f(m).conv_transpose2d(
        t(m, X4), t(m, np.ones((3, 2, 3, 3))), padding="same"),
    "conv_transpose1d: bias": lambda m: _f(m).conv_transpose1d(
        t(m, X3), t(m, np.ones((3, 2, 2))), t(m, np.ones(3))),
    "conv_tbc: channels": lambda m: _f(m).conv_tbc(t(m, X3), t(m, np.ones((2, 3, 4))),
                                                   t(m, np.ones(4))),
    # pooling
    "max_pool2d: kernel 0": lambda m: _f(m).max_pool2d(t(m, X4), 0),
    "max_pool2d: stride 0": lambda m: _f(m).max_pool2d(t(m, X4), 2, 0),
    "max_pool2d: padding": lambda m: _f(m).max_pool2d(t(m, X4), 3, padding=2),
    "max_pool2d: negative padding": lambda m: _f(m).max_pool2d(t(m, X4), 2, padding=-1),
    "max_pool2d: too small": lambda m: _f(m).max_pool2d(t(m, X4), 6),
    "max_pool2d: dilation 0": lambda m: _f(m).max_pool2d(t(m, X4), 2, dilation=0),
    "max_pool2d: 2-d input": lambda m: _f(m).max_pool2d(t(m, X4[0, 0]), 2),
    "max_pool2d: bool": lambda m: _f(m).max_pool2d(t(m, X4 > 0), 2),
    "max_pool1d: int64": lambda m: _f(m).max_pool1d(t(m, X3.astype(np.int64)), 2),
    "max_pool3d: 3-d input": lambda m: _f(m).max_pool3d(t(m, X3), 2),
    "avg_pool2d: padding": lambda m: _f(m).avg_pool2d(t(m, X4), 2, padding=2),
    "avg_pool2d: divisor 0": lambda m: _f(m).avg_pool2d(t(m, X4), 2, divisor_override=0),
    "avg_pool2d: int32": lambda m: _f(m).avg_pool2d(t(m, X4.astype(np.int32)), 2),
    "avg_pool3d: input < kernel": lambda m: _f(m).avg_pool3d(t(m, X5), (4, 2, 2), padding=(2, 0,
                                                                                          0)),
    "avg_pool3d: float16": lambda m: _f(m).avg_pool3d(t(m, X5, m.float16), 2),
    "lp_pool1d: int32": lambda m: _f(m).lp_pool1d(t(m, X3.astype(np.int32)), 2, 2),
    "lp_pool1d: tuple kernel": lambda m: _f(m).lp_pool1d(t(m, X3), 2, (2,)),
    "max_unpool2d: output_size": lambda m: _f(m).max_unpool2d(
        t(m, X4[:, :, :2, :2]), t(m, np.zeros((1, 3, 2, 2), np.int64)), 2, output_size=(7, 7)),
    "max_unpool2d: index": lambda m: _f(m).max_unpool2d(
        t(m, X4[:, :, :2, :2]), t(m, np.full((1, 3, 2, 2), 16, np.int64)), 2),
    "max_unpool2d: output_size length": lambda m: _f(m).max_unpool2d(
        t(m, X4[:, :, :2, :2]), t(m, np.zeros((1, 3, 2, 2), np.int64)), 2, output_size=(3,)),
    "max_unpool1d: int64 values": lambda m: _f(m).max_unpool1d(
        t(m, X3.astype(np.int64)), t(m, np.zeros((2, 3, 6), np.int64)), 2),
    "adaptive_avg_pool2d: empty dim": lambda m: _f(m).adaptive_avg_pool2d(
        t(m, np.ones((1, 3, 0, 4))), 2),
    "adaptive_avg_pool2d: int64": lambda m: _f(m).adaptive_avg_pool2d(
        t(m, X4.astype(np.int64)), 2),
    "adaptive_avg_pool2d: negative": lambda m: _f(m).adaptive_avg_pool2d(t(m, X4), -1),
    "adaptive_max_pool2d: int64": lambda m: _f(m).adaptive_max_pool2d(
        t(m, X4.astype(np.int64)), 2),
    "adaptive_max_pool1d: 4-d": lambda m: _f(m).adaptive_max_pool1d(t(m, X4), 2),
    "fractional: too large": lambda m: _f(m).fractional_max_pool2d(t(m, X4), 3, output_size=4),
    "fractional: no size": lambda m: _f(m).fractional_max_pool2d(t(m, X4), 2),
    "fractional 3d: strict": lambda m: _f(m).fractional_max_pool3d(t(m, X5), 2, output_size=2),
    "fractional: samples": lambda m: _f(m).fractional_max_pool2d(
        t(m, X4), 2, output_size=3, _random_samples=t(m, np.full((1, 2, 2), 0.5))),
    # resampling
    "interpolate: both": lambda m: _f(m).interpolate(t(m, X4), size=3, scale_factor=2),
    "interpolate: neither": lambda m: _f(m).interpolate(t(m, X4)),
    "interpolate: mode": lambda m: _f(m).interpolate(t(m, X4), size=3, mode="cubic"),
    "interpolate: align_corners": lambda m: _f(m).interpolate(t(m, X4), size=3,
                                                              align_corners=True),
    "interpolate: antialias": lambda m: _f(m).interpolate(t(m, X4), size=3, antialias=True),
    "interpolate: 3-d bilinear": lambda m: _f(m).interpolate(t(m, X3), size=3, mode="bilinear"),
    "interpolate: 4-d linear": lambda m: _f(m).interpolate(t(m, X4), size=3, mode="linear"),
    "interpolate: 2-d input": lambda m: _f(m).interpolate(t(m, X4[0, 0]), size=3),
    "interpolate: 6-d input": lambda m: _f(m).interpolate(t(m, X5[None]), size=3),
    "interpolate: size 0": lambda m: _f(m).interpolate(t(m, X4), size=0),
    "interpolate: size length": lambda m: _f(m).interpolate(t(m, X4), size=(2, 3, 4)),
    "interpolate: scale length": lambda m: _f(m).interpolate(t(m, X4), scale_factor=(2, 3, 4)),
    "interpolate: recompute + size": lambda m: _f(m).interpolate(
        t(m, X4), size=3, recompute_scale_factor=True),
    "interpolate: int64": lambda m: _f(m).interpolate(t(m, X4.astype(np.int64)), size=3),
    "interpolate: uint8 linear": lambda m: _f(m).interpolate(
        t(m, X3.astype(np.uint8)), size=3, mode="linear"),
    "interpolate: uint8 area": lambda m: _f(m).interpolate(
        t(m, X4.astype(np.uint8)), size=3, mode="area"),
    "interpolate: scale 0": lambda m: _f(m).interpolate(t(m, X4), scale_factor=0.0),
    "interpolate: trilinear 4-d": lambda m: _f(m).interpolate(t(m, X4), size=3,
                                                              mode="trilinear"),
    "unfold: 5-d": lambda m: _f(m).unfold(t(m, X5), 2),
    "unfold: kernel > input": lambda m: _f(m).unfold(t(m, X4), 6),
    "unfold: int64": lambda m: _f(m).unfold(t(m, X4.astype(np.int64)), 2),
    "fold: blocks": lambda m: _f(m).fold(t(m, np.ones((1, 12, 5))), (4, 4), 2),
    "fold: channels": lambda m: _f(m).fold(t(m, np.ones((1, 10, 9))), (4, 4), 2),
    "fold: 4-d": lambda m: _f(m).fold(t(m, X4), (4, 4), 2),
    "pixel_shuffle: channels": lambda m: _f(m).pixel_shuffle(t(m, X4), 2),
    "pixel_shuffle: 2-d": lambda m: _f(m).pixel_shuffle(t(m, X4[0, 0]), 1),
    "pixel_unshuffle: width": lambda m: _f(m).pixel_unshuffle(t(m, X4), 2),
    "channel_shuffle: groups": lambda m: _f(m).channel_shuffle(t(m, X4), 2),
    "channel_shuffle: 2-d": lambda m: _f(m).channel_shuffle(t(m, X4[0, :, :, 0]), 3),
    "grid_sample: mode": lambda m: _f(m).grid_sample(t(m, X4), t(m, np.zeros((1, 2, 2, 2))),
                                                     mode="area", align_corners=False),
    "grid_sample: padding_mode": lambda m: _f(m).grid_sample(
        t(m, X4), t(m, np.zeros((1, 2, 2, 2))), padding_mode="wrap", align_corners=False),
    "grid_sample: last dim": lambda m: _f(m).grid_sample(
        t(m, X4), t(m, np.zeros((1, 2, 2, 3))), align_corners=False),
    "grid_sample: 3-d input": lambda m: _f(m).grid_sample(
        t(m, X3), t(m, np.zeros((2, 2, 2))), align_corners=False),
    "grid_sample: bicubic 5-d": lambda m: _f(m).grid_sample(
        t(m, X5), t(m, np.zeros((1, 2, 2, 2, 3))), mode="bicubic", align_corners=False),
    "grid_sample: dtypes": lambda m: _f(m).grid_sample(
        t(m, X4), t(m, np.zeros((1, 2, 2, 2)), m.float32), align_corners=False),
    "grid_sample: int64": lambda m: _f(m).grid_sample(
        t(m, X4.astype(np.int64)), t(m, np.zeros((1, 2, 2, 2), np.int64)), align_corners=False),
    "grid_sample: batch": lambda m: _f(m).grid_sample(
        t(m, X4), t(m, np.zeros((2, 2, 2, 2))), align_corners=False),
    "affine_grid: 3-d size": lambda m: _f(m).affine_grid(t(m, np.ones((1, 2, 3))), (1, 1, 2, 2, 2),
                                                         align_corners=False),
    "affine_grid: int theta": lambda m: _f(m).affine_grid(
        t(m, np.ones((1, 2, 3), np.int64)), (1, 1, 2, 2), align_corners=False),
    "affine_grid: batch": lambda m: _f(m).affine_grid(t(m, np.ones((1, 2, 3))), (2, 1, 2, 2),
                                                      align_corners=False),
    "affine_grid: empty": lambda m: _f(m).affine_grid(t(m, np.ones((1, 2, 3))), (1, 1, 0, 2),
                                                      align_corners=False),
    "affine_grid: 3-d": lambda m: _f(m).affine_grid(t(m, np.ones((1, 2, 3))), (1, 2, 3),
                                                    align_corners=False),
    # padding
    "pad: reflect too far": lambda m: _f(m).pad(t(m, X3), (6, 0), mode="reflect"),
    "pad: reflect crops all": lambda m: _f(m).pad(t(m, X3), (-3, -3), mode="reflect"),
    "pad: circular twice": lambda m: _f(m).pad(t(m, X3), (7, 0), mode="circular"),
    "pad: reflect bool": lambda m: _f(m).pad(t(m, X5 > 0), (1, 1) * 3, mode="reflect"),
    "pad: replicate dims": lambda m: _f(m).pad(t(m, X3), (1, 1) * 3, mode="replicate"),
    "pad: odd amounts": lambda m: _f(m).pad(t(m, X3), (1, 1, 1)),
    "pad: replicate empty dim": lambda m: _f(m).pad(t(m, np.ones((2, 0, 3))), (1, 1),
                                                    mode="replicate"),
    # modules
    "ConvTranspose2d: padding_mode": lambda m: m.nn.ConvTranspose2d(2, 2, 3,
                                                                   padding_mode="reflect"),
    "Conv3d: groups": lambda m: m.nn.Conv3d(3, 4, 2, groups=2),
    "ConvTranspose2d: output_size": lambda m: m.nn.ConvTranspose2d(3, 2, 3, stride=2)(
        t(m, X4.astype(np.float32)), output_size=(20, 20)),
    "FractionalMaxPool2d: no size": lambda m: m.nn.FractionalMaxPool2d(2),
    "FractionalMaxPool2d: both": lambda m: m.nn.FractionalMaxPool2d(2, 3, 0.5),
    "FractionalMaxPool2d: ratio": lambda m: m.nn.FractionalMaxPool2d(2, output_ratio=1.5),
}


@pytest.mark.parametrize("name", ERRORS)
def test_argument_errors_as_torch(name):
    ours, theirs = same(ERRORS[name])
    assert isinstance(theirs, Raised), f"{name}: torch no longer refuses it"


# ------------------------------------------------------------------------------------------
# dtypes: each op takes what torch takes, gives the dtype torch gives, refuses the rest
# ------------------------------------------------------------------------------------------

DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _x(m, n, dt, C=2):
    return m.ones(*((2, C) + (4,) * n)).to(getattr(m, dt))


DTYPE_CALLS = {
    "conv2d": lambda m, dt: _f(m).conv2d(_x(m, 2, dt), m.ones(3, 2, 2, 2).to(getattr(m, dt))),
    "conv3d": lambda m, dt: _f(m).conv3d(_x(m, 3, dt), m.ones(3, 2, 2, 2, 2).to(getattr(m, dt))),
    "conv_transpose2d": lambda m, dt: _f(m).conv_transpose2d(
        _x(m, 2, dt), m.ones(2, 3, 2, 2).to(getattr(m, dt))),
    "max_pool1d": lambda m, dt: _f(m).max_pool1d(_x(m, 1, dt), 2),
    "max_pool1d indices": lambda m, dt: _f(m).max_pool1d(_x(m, 1, dt), 2, return_indices=True),
    "max_pool2d": lambda m, dt: _f(m).max_pool2d(_x(m, 2, dt), 2),
    "max_pool3d indices": lambda m, dt: _f(m).max_pool3d(_x(m, 3, dt), 2, return_indices=True),
    "avg_pool2d": lambda m, dt: _f(m).avg_pool2d(_x(m, 2, dt), 2),
    "avg_pool3d": lambda m, dt: _f(m).avg_pool3d(_x(m, 3, dt), 2),
    "adaptive_avg_pool2d": lambda m, dt: _f(m).adaptive_avg_pool2d(_x(m, 2, dt), 3),
    "adaptive_max_pool3d": lambda m, dt: _f(m).adaptive_max_pool3d(_x(m, 3, dt), 3),
    "lp_pool2d": lambda m, dt: _f(m).lp_pool2d(_x(m, 2, dt), 2, 2),
    "max_unpool2d": lambda m, dt: _f(m).max_unpool2d(
        _x(m, 2, dt), m.zeros(2, 2, 4, 4, dtype=m.int64), 2),
    "unfold": lambda m, dt: _f(m).unfold(_x(m, 2, dt), 2),
    "fold": lambda m, dt: _f(m).fold(m.ones(2, 8, 9).to(getattr(m, dt)), (4, 4), 2),
    "pixel_shuffle": lambda m, dt: _f(m).pixel_shuffle(_x(m, 2, dt, 4), 2),
    "channel_shuffle": lambda m, dt: _f(m).channel_shuffle(_x(m, 2, dt, 4), 2),
    "pad constant": lambda m, dt: _f(m).pad(_x(m, 2, dt), (1, 1)),
    "pad reflect": lambda m, dt: _f(m).pad(_x(m, 3, dt), (1, 1) * 3, mode="reflect"),
    "pad circular": lambda m, dt: _f(m).pad(_x(m, 2, dt), (1, 1, 1, 1), mode="circular"),
    "interpolate nearest": lambda m, dt: _f(m).interpolate(_x(m, 2, dt), scale_factor=2),
    "interpolate bicubic": lambda m, dt: _f(m).interpolate(_x(m, 2, dt), scale_factor=2,
                                                           mode="bicubic"),
    "interpolate trilinear": lambda m, dt: _f(m).interpolate(_x(m, 3, dt), scale_factor=2,
                                                             mode="trilinear"),
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op", DTYPE_CALLS)
def test_dtypes_as_torch(op, dt):
    same(lambda m: DTYPE_CALLS[op](m, dt), atol=1e-3, rtol=1e-3)


# ------------------------------------------------------------------------------------------
# modules together (each module alone: tests/compat/test_surface_conv.py)
# ------------------------------------------------------------------------------------------

def test_unpool_inverts_pool_with_the_modules():
    def run(lib):
        pool = lib.nn.MaxPool2d(2, return_indices=True)
        unpool = lib.nn.MaxUnpool2d(2)
        x = lib.tensor(X4, requires_grad=True)
        y, idx = pool(x)
        z = unpool(y, idx, output_size=x.shape)
        z.sum().backward()
        return z, idx, x.grad
    both(lambda: run(tgx), lambda: run(torch))


def test_fold_of_unfold_counts_the_overlaps():
    def run(m):
        x = t(m, X4)
        cols = m.nn.Unfold(3, padding=1)(x)
        return m.nn.Fold((5, 5), 3, padding=1)(cols) / m.nn.Fold((5, 5), 3, padding=1)(
            m.nn.Unfold(3, padding=1)(m.ones(1, 3, 5, 5).to(m.float64)))
    ours, _ = same(run)
    np.testing.assert_allclose(ours.numpy(), X4)


def test_a_spatial_transformer_with_torchs_numbers():
    """The tutorial's use: theta from a layer, affine_grid, grid_sample; the identity map
    reads the input back exactly, a rotation and shift as torch's, gradients to theta too."""
    import warnings
    ident = np.tile(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 1, 1))
    for F in (tgx.functional, torch.nn.functional):
        m = tgx if F is tgx.functional else torch
        grid = F.affine_grid(t(m, ident), X4.shape, align_corners=False)
        back = F.grid_sample(t(m, X4), grid, align_corners=False)
        np.testing.assert_allclose(back.detach().numpy(), X4, atol=1e-12)
    c, s_ = np.cos(0.3), np.sin(0.3)
    theta = np.array([[[c, -s_, 0.1], [s_, c, -0.2]]])

    def run(m, F):
        th, x = m.tensor(theta, requires_grad=True), m.tensor(X4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grid = F.affine_grid(th, X4.shape)                      # torch's default, warned
            y = F.grid_sample(x, grid, padding_mode="reflection")
        (y * y).sum().backward()
        return y, th.grad, x.grad
    both(lambda: run(tgx, tgx.functional), lambda: run(torch, torch.nn.functional), atol=1e-10,
         rtol=1e-10)


def test_the_families_draw_as_graphs():
    """Built from the engine's ops: a graph of known nodes, no new backward rule."""
    from tinygradx.graph import walk
    x = tgx.Tensor(X4, requires_grad=True)
    w = tgx.Tensor(R.standard_normal((3, 2, 3, 3)), requires_grad=True)
    y = tgx.functional.conv_transpose2d(x, w, stride=2)
    y = tgx.functional.max_pool2d(y, 2, return_indices=True)[0]
    y = tgx.functional.interpolate(y, scale_factor=1.5, mode="bicubic")
    ops = set(walk(y).ops)
    assert {"matmul", "index_put", "stack", "where", "getitem"} <= ops
