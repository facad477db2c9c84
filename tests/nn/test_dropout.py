"""The dropout family (functional/dropouts.py, nn/dropout.py): the masks come from tinygradx's
generator, so their values are not torch's; their statistics are checked here against the same
statistics of torch's masks (the share dropped within binomial bounds of p on both sides, whole
channels, the survivors' scale, alpha dropout's mean and variance), and everything that is not
random (evaluation, p = 0 and 1, in place, warnings, refusals) against torch itself."""
import math
import warnings

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn
from oracle import requires_torch, same, torch

pytestmark = requires_torch


def _within_binomial(share, p, n, z=5.0):
    return abs(share - p) <= z * math.sqrt(p * (1 - p) / n) + 1e-12


def _channel_stats(y, lead):
    """(share of channels dropped, the distinct non-zero values, whether each channel is
    constant) for the output of channel dropout on a tensor of ones."""
    chans = y.reshape(y.shape[:lead] + (-1,))
    constant = bool(np.all(chans == chans[..., :1]))
    first = chans[..., 0]
    return float((first == 0).mean()), np.unique(first[first != 0]), constant, first.size


@pytest.mark.parametrize("name, shape, lead", [
    ("dropout1d", (200, 40, 5), 2), ("dropout1d", (400, 3), 1),
    ("dropout2d", (100, 60, 2, 3), 2), ("dropout3d", (50, 80, 2, 1, 2), 2),
    ("dropout3d", (400, 2, 2, 1), 1)])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_channel_dropout_statistics_as_torchs(name, shape, lead, p):
    tgx.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(F, name)(tgx.ones(*shape), p).numpy()
    theirs = getattr(torch.nn.functional, name)(torch.ones(*shape), p).numpy()
    for y in (ours, theirs):
        share, values, constant, n = _channel_stats(y, lead)
        assert constant, "a channel was partly dropped"
        assert _within_binomial(share, p, n), (share, p, n)
        np.testing.assert_allclose(values, [1 / (1 - p)], rtol=1e-6)


def test_masks_differ_between_channels_and_samples_and_follow_the_seed():
    tgx.manual_seed(3)
    a = F.dropout2d(tgx.ones(8, 16, 2, 2)).numpy()
    tgx.manual_seed(3)
    b = F.dropout2d(tgx.ones(8, 16, 2, 2)).numpy()
    np.testing.assert_array_equal(a, b)
    c = F.dropout2d(tgx.ones(8, 16, 2, 2)).numpy()
    assert not np.array_equal(a, c)
    assert len({tuple(row) for row in a[:, :, 0, 0]}) > 1     # samples draw their own


@pytest.mark.parametrize("feature", [False, True])
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_keeps_mean_and_variance_as_torchs(feature, p):
    name = "feature_alpha_dropout" if feature else "alpha_dropout"
    shape = (400, 300, 4) if feature else (800, 600)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tgx.manual_seed(0)
    ours = getattr(F, name)(tgx.tensor(x), p, training=True).numpy()
    theirs = getattr(torch.nn.functional, name)(torch.tensor(x), p, training=True).numpy()
    for y in (ours, theirs):
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02, (y.mean(), y.std())
        # dropped elements (channels) all take one value; kept ones an affine map of x
        a = 1 / math.sqrt((1 - p) * (1 + p * 1.7580993408473766 ** 2))
        dropped_value = a * -1.7580993408473766 * (1 - p)
        kept_value = x * a + a * 1.7580993408473766 * p
        at_value = np.isclose(y, dropped_value, atol=1e-6)
        if feature:                                      # whole channels of 4 values
            dropped = np.broadcast_to(at_value.all(-1, keepdims=True), y.shape)
            n = shape[0] * shape[1]
        else:                                            # (a kept x may land there: rare)
            dropped = at_value & ~np.isclose(kept_value, dropped_value, atol=1e-6)
            n = y.size
        assert _within_binomial(dropped[..., 0].mean() if feature else dropped.mean(), p, n)
        np.testing.assert_allclose(y[~dropped], kept_value[~dropped], rtol=1e-5, atol=1e-5)


def test_the_gradient_is_the_mask_and_second_derivatives_come_free():
    x = tgx.randn(6, 5, 4, requires_grad=True)
    tgx.manual_seed(1)
    y = F.dropout1d(x, 0.4)
    (g,) = tgx.grad(y.sum(), x, create_graph=True)
    ratio = (y / x).detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), ratio, rtol=1e-5)
    x = tgx.randn(6, 5, requires_grad=True)
    y = F.alpha_dropout(x, 0.3, training=True)
    (g,) = tgx.grad((y * y).sum(), x, create_graph=True)
    (gg,) = tgx.grad(g.sum(), x)
    assert gg.shape == x.shape


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.dropout1d(m.arange(6.0).reshape(2, 3), training=False),
    lambda m: m.nn.functional.dropout2d(m.arange(8.0).reshape(1, 2, 2, 2), 0.0),
    lambda m: m.nn.functional.dropout1d(m.arange(6.0).reshape(2, 3) - 2, 1.0),
    lambda m: m.nn.functional.dropout3d(m.ones(2, 2, 2, 2), 1.0),
    lambda m: m.nn.functional.alpha_dropout(m.arange(6.0) - 2, 0.5),          # not training
    lambda m: m.nn.functional.alpha_dropout(m.arange(6.0) - 2, 1.0, True),
    lambda m: m.nn.functional.feature_alpha_dropout(m.ones(2, 3), 1.0, True),
    lambda m: m.nn.functional.alpha_dropout(m.arange(6.0), 0.0, True),
    lambda m: m.nn.functional.dropout1d(m.zeros(0, 3, 2)),
    lambda m: m.nn.functional.alpha_dropout(m.zeros(0, 3), training=True),
    lambda m: m.nn.functional.dropout1d(m.ones(2, 3, dtype=m.int64), training=False),
    lambda m: m.nn.Dropout1d(0.3).eval()(m.arange(6.0).reshape(2, 3)),
    lambda m: m.nn.AlphaDropout(0.3).eval()(m.arange(6.0)),
    lambda m: [repr(d) for d in (m.nn.Dropout(0.2), m.nn.Dropout1d(0.3, inplace=True),
                                 m.nn.Dropout2d(), m.nn.Dropout3d(), m.nn.AlphaDropout(0.2),
                                 m.nn.FeatureAlphaDropout())],
])
def test_what_is_not_random_is_torchs(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.dropout1d(m.ones(3)),
    lambda m: m.nn.functional.dropout1d(m.ones(2, 3, 4, 5)),
    lambda m: m.nn.functional.dropout1d(m.ones(2, 3), p=1.5),
    lambda m: m.nn.functional.dropout2d(m.ones(2, 3), p=-0.1),
    lambda m: m.nn.functional.dropout3d(m.ones(())),
    lambda m: m.nn.functional.feature_alpha_dropout(m.ones(4), training=True),
    lambda m: m.nn.functional.dropout1d(m.ones(2, 3, dtype=m.int64)),
    lambda m: m.nn.functional.alpha_dropout(m.ones(2, 3, dtype=m.int64), training=True),
    lambda m: m.nn.Dropout1d(p=-0.1),
    lambda m: m.nn.AlphaDropout(p=2),
    lambda m: m.nn.FeatureAlphaDropout(p=1.01),
    lambda m: m.nn.Dropout2d(inplace=True)(m.ones(2, 3, 2, 2, requires_grad=True)),
    lambda m: m.nn.functional.dropout(m.ones(2, 3, requires_grad=True), inplace=True),
], ids=lambda c: "")
def test_refusals_as_torch(call):
    same(call)


@pytest.mark.parametrize("name, shape, warns", [
    ("dropout2d", (2, 3), True), ("dropout2d", (2, 3, 4), True),
    ("dropout2d", (1, 2, 3, 4, 2), True), ("dropout2d", (1, 2, 3, 4), False),
    ("dropout3d", (2, 3, 4), True), ("dropout3d", (2, 3, 4, 5), False),
    ("dropout3d", (1, 2, 3, 4, 2, 1), True), ("dropout3d", (3,), True)])
def test_deprecated_dims_warn_as_torch(name, shape, warns):
    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = getattr(m.nn.functional, name)(m.ones(*shape), 0.5)
        return [tuple(y.shape), len(w) > 0]
    ours, _ = same(call)
    assert ours[1] == warns


def test_inplace_writes_into_the_input_and_its_views():
    def inplace(m):
        m.manual_seed(0)
        base = m.ones(4, 6, 3)
        view = base[1:]
        y = m.nn.functional.dropout1d(base, 0.5, inplace=True)
        return [y is base, bool((view == base[1:]).all()),
                sorted({round(float(v), 4) for v in base.flatten().tolist()}) in ([0.0, 2.0],
                                                                                  [2.0], [0.0])]
    same(inplace)
    for fn, kw in ((F.dropout2d, {}), (F.dropout, {}), (F.alpha_dropout, {"training": True}),
                   (F.feature_alpha_dropout, {"training": True})):
        x = tgx.randn(3, 4, 2, 2)
        tgx.manual_seed(5)
        want = fn(x, 0.5, **kw).numpy()
        tgx.manual_seed(5)
        assert fn(x, 0.5, inplace=True, **kw) is x
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)


def test_inplace_inside_a_graph_differentiates():
    w = tgx.randn(3, 4, 5, requires_grad=True)
    h = w * 2
    tgx.manual_seed(2)
    y = F.dropout1d(h, 0.5, inplace=True)
    y.sum().backward()
    keep = (y.detach().numpy() != 0)
    np.testing.assert_allclose(w.grad.numpy(), keep * 2 / 0.5, rtol=1e-6)


def test_modules_train_and_eval():
    m = nn.Dropout1d(0.5)
    x = tgx.ones(50, 20, 3)
    assert not np.array_equal(m(x).numpy(), x.numpy())
    m.eval()
    assert m(x) is x
    assert isinstance(nn.FeatureAlphaDropout(), nn.Module)


@pytest.mark.parametrize("tau, hard", [(1.0, False), (0.5, True), (2.0, True)])
def test_gumbel_softmax_samples_the_categorical_as_torchs(tau, hard):
    """Hard samples are one-hot with the frequencies softmax(logits) gives (torch's too); soft
    ones sum to 1; both have torch's mean; the hard sample's gradient is the soft one's
    (straight through)."""
    probs = np.array([0.1, 0.25, 0.65])
    logits = np.log(probs)
    tgx.manual_seed(0)
    ours = np.stack([F.gumbel_softmax(tgx.tensor(logits), tau, hard).numpy()
                     for _ in range(3000)])
    torch.manual_seed(0)
    theirs = np.stack([torch.nn.functional.gumbel_softmax(torch.tensor(logits), tau, hard)
                       .numpy() for _ in range(3000)])
    for y in (ours, theirs):
        np.testing.assert_allclose(y.sum(1), 1.0, rtol=1e-6)
        if hard:
            assert set(np.unique(y)) <= {0.0, 1.0}
            for share, p in zip(y.mean(0), probs, strict=True):
                assert _within_binomial(share, p, len(y)), (share, p)
    # soft or hard, the two libraries' samples have the same mean (within 5 standard errors)
    spread = 5 * np.sqrt((ours.var(0) + theirs.var(0)) / len(ours)) + 1e-12
    assert np.all(np.abs(ours.mean(0) - theirs.mean(0)) <= spread), (ours.mean(0),
                                                                     theirs.mean(0))
    x = tgx.tensor(logits, requires_grad=True)
    tgx.manual_seed(4)
    F.gumbel_softmax(x, tau, hard=True)[2].backward()
    hard_grad = x.grad.numpy().copy()
    x.grad = None
    tgx.manual_seed(4)
    F.gumbel_softmax(x, tau, hard=False)[2].backward()
    np.testing.assert_allclose(hard_grad, x.grad.numpy(), rtol=1e-6)


def test_gumbel_softmax_arguments_as_torch():
    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = m.nn.functional.gumbel_softmax(m.zeros(2, 3), eps=1e-3, dim=0)
        return [tuple(y.shape), len(w), bool((y.sum(0) - 1).abs().max() < 1e-6)]
    same(call)
    same(lambda m: m.nn.functional.gumbel_softmax(m.zeros(2, 3), dim=2))


@pytest.mark.parametrize("case", [
    lambda m: m.nn.functional.gumbel_softmax(m.tensor(0.5), hard=True),        # one category
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(3, 0), hard=True),        # none to pick
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(3, 0)).shape,
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(0, 3), hard=True).shape,
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(2, 3, dtype=m.float64), hard=True).sum(-1),
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(2, 3, dtype=m.int64)),
    lambda m: m.nn.functional.gumbel_softmax([0.0, 1.0]),
    lambda m: m.nn.functional.gumbel_softmax(m.zeros(2, 3), dim=None),
], ids=["0d_hard", "empty_dim_hard", "empty_dim", "empty_rows_hard", "float64", "int64",
        "list", "dim_none"])
def test_gumbel_softmax_edges_as_torch(case):
    same(case)
