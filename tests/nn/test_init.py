"""tgx.nn.init: PyTorch's initialisers. Names, argument order and defaults as torch's;
distributions checked by their moments and ranges (no fixed-seed equality with torch: another
generator), fans and gains against torch's own when it is installed."""
import inspect
import math

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn
from tinygradx.nn import init

try:
    import torch
    import torch.nn.init as tinit
except ImportError:
    torch = tinit = None

NAMES = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
         "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
         "kaiming_normal_", "orthogonal_", "sparse_", "_calculate_fan_in_and_fan_out",
         "_calculate_correct_fan"]


def big(*shape):
    return nn.Parameter(tgx.zeros(*shape))


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name", NAMES)
def test_signatures_are_torchs(name):
    ours = inspect.signature(getattr(init, name)).parameters
    theirs = inspect.signature(getattr(tinit, name)).parameters
    theirs = list(theirs.values())
    assert [p.name for p in ours.values()] == [p.name for p in theirs]
    for p, t in zip(ours.values(), theirs, strict=True):
        assert p.default == t.default or (p.default is inspect.Parameter.empty
                                          and t.default is inspect.Parameter.empty), p.name


def test_gains_match_torch():
    cases = [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
             ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]
    want = [1, 1, 1, 5 / 3, math.sqrt(2), math.sqrt(2 / (1 + 0.01 ** 2)),
            math.sqrt(2 / 1.04), 0.75]
    for (nl, p), w in zip(cases, want, strict=True):
        assert init.calculate_gain(nl, p) == pytest.approx(w)
        if torch is not None:
            assert init.calculate_gain(nl, p) == pytest.approx(tinit.calculate_gain(nl, p))
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


def test_each_returns_its_tensor_in_place_under_no_grad():
    w = big(8, 4)
    for fn, args in ((init.uniform_, ()), (init.normal_, ()), (init.trunc_normal_, ()),
                     (init.constant_, (0.5,)), (init.ones_, ()), (init.zeros_, ()),
                     (init.eye_, ()), (init.xavier_uniform_, ()), (init.xavier_normal_, ()),
                     (init.kaiming_uniform_, ()), (init.kaiming_normal_, ())):
        data = w.detach().numpy()
        assert fn(w, *args) is w and w.detach().numpy() is data, fn.__name__
        assert w.requires_grad and w.is_leaf and w.grad is None
    assert init.constant_(w, 0.5).detach().numpy().min() == 0.5
    assert init.ones_(w).detach().numpy().min() == 1 and not init.zeros_(w).detach().numpy().any()
    np.testing.assert_array_equal(init.eye_(w).detach().numpy(), np.eye(8, 4))


def test_uniform_and_normal_moments_and_argument_order():
    tgx.manual_seed(0)
    u = init.uniform_(big(300, 300), -2.0, 4.0).detach().numpy()      # (tensor, a, b), as torch
    assert u.min() >= -2 and u.max() < 4
    assert u.mean() == pytest.approx(1.0, abs=0.02) and u.var() == pytest.approx(3.0, abs=0.05)
    n = init.normal_(big(300, 300), 3.0, 0.5).detach().numpy()   # (tensor, mean, std), as torch
    assert n.mean() == pytest.approx(3.0, abs=0.01) and n.std() == pytest.approx(0.5, abs=0.01)
    n = init.normal_(big(300, 300), std=0.02).detach().numpy()
    assert abs(n.mean()) < 1e-3 and n.std() == pytest.approx(0.02, rel=0.02)


def test_manual_seed_makes_them_repeatable():
    tgx.manual_seed(5)
    a = init.kaiming_uniform_(big(16, 8)).detach().numpy().copy()
    tgx.manual_seed(5)
    assert np.array_equal(init.kaiming_uniform_(big(16, 8)).detach().numpy(), a)


def test_trunc_normal_stays_inside_and_keeps_the_shape_of_the_normal():
    tgx.manual_seed(1)
    t = init.trunc_normal_(big(400, 250), mean=0.0, std=1.0, a=-1.0, b=2.0).detach().numpy()
    assert t.min() >= -1.0 and t.max() <= 2.0
    # the mean of N(0, 1) truncated to [-1, 2]: (phi(-1) - phi(2)) / (Phi(2) - Phi(-1))
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)     # noqa: E731
    Phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))             # noqa: E731
    assert t.mean() == pytest.approx((phi(-1) - phi(2)) / (Phi(2) - Phi(-1)), abs=0.01)
    g = init.trunc_normal_(big(500, 200),
                           std=0.02).detach().numpy()            # ViT's use: +-2 absolute
    assert g.std() == pytest.approx(0.02, rel=0.02)
    with pytest.raises(ValueError, match="expects a < b"):
        init.trunc_normal_(big(2, 2), a=1.0, b=0.0)


@pytest.mark.parametrize("shape", [(256, 128), (64, 32, 3, 3), (8, 512)])
def test_xavier_and_kaiming_use_torchs_fans(shape):
    fan_in = shape[1] * math.prod(shape[2:])
    fan_out = shape[0] * math.prod(shape[2:])
    tgx.manual_seed(2)
    w = init.xavier_uniform_(big(*shape), gain=2.0).detach().numpy()
    bound = 2.0 * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    w = init.xavier_normal_(big(*shape)).detach().numpy()
    assert w.std() == pytest.approx(math.sqrt(2 / (fan_in + fan_out)), rel=0.05)
    w = init.kaiming_uniform_(big(*shape), a=math.sqrt(5)).detach().numpy()  # nn.Linear's own init
    bound = math.sqrt(3) * math.sqrt(2 / (1 + 5)) / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    w = init.kaiming_normal_(big(*shape), mode="fan_out", nonlinearity="relu").detach().numpy()
    assert w.std() == pytest.approx(math.sqrt(2) / math.sqrt(fan_out), rel=0.05)
    if torch is not None:      # the same spread as torch's own draw
        t = torch.empty(*shape)
        tinit.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
        assert w.std() == pytest.approx(float(t.std()), rel=0.08)
        tinit.xavier_uniform_(t, gain=2.0)
        assert float(t.abs().max()) <= 2.0 * math.sqrt(6 / (fan_in + fan_out)) + 1e-6


def test_bad_arguments_name_the_initialiser():
    with pytest.raises(ValueError, match=r"init.xavier_uniform_: fan in and fan out .* fewer "
                                         r"than 2 dims \(shape \(5,\)\)"):
        init.xavier_uniform_(big(5))
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_normal_(big(2, 2), mode="in")
    with pytest.raises(TypeError, match="init.normal_: expected a Tensor"):
        init.normal_(np.zeros(3))
    with pytest.raises(TypeError, match="normal_: needs a floating-point tensor"):
        init.normal_(tgx.zeros(3, dtype=tgx.int64))
    assert init.xavier_uniform_(big(0, 3)).shape == (0, 3)     # nothing to fill


def test_module_apply_with_init_as_pytorch_code_writes_it():
    def weights_init(m):
        if isinstance(m, nn.Linear):
            init.xavier_uniform_(m.weight)
            init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            init.normal_(m.weight, mean=0.0, std=0.02)
    net = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 4))
    assert net.apply(weights_init) is net
    assert not net[1].bias.detach().numpy().any()
    assert np.abs(net[1].weight.detach().numpy()).max() <= math.sqrt(6 / 12)


def test_models_use_the_public_initialisers():
    import tinygradx.models.nets.layers as layers
    for name in ("normal_", "xavier_uniform_", "zeros_"):
        assert not hasattr(layers, name), f"layers.{name}: the duplicate is back"
