"""All of torch.nn.init against torch: every public name exists; the deterministic ones
(constant_, ones_, zeros_, eye_, dirac_, calculate_gain, the fans) give torch's values and
errors; the random ones give torch's distributions (bounds, moments, orthogonality, zeros per
column) over torch's every mode and nonlinearity, with generator= as torch's. The values
differ from torch's: another generator."""
import math
import warnings

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.nn import init
from oracle import requires_torch, same, torch

pytestmark = requires_torch

NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d", "sigmoid", "tanh", "relu",
                  "leaky_relu", "selu"]


def test_every_public_name_of_torch_nn_init_is_here():
    public = [n for n in dir(torch.nn.init) if not n.startswith("_") and
              callable(getattr(torch.nn.init, n)) and
              getattr(getattr(torch.nn.init, n), "__module__", "") == "torch.nn.init"]
    assert len(public) >= 25, public
    assert [n for n in public if not hasattr(init, n)] == []
    from tinygradx.compat.lookalike import torch as lookalike
    assert [n for n in public + ["_calculate_fan_in_and_fan_out", "_calculate_correct_fan"]
            if not lookalike.nn.init.provides(n)] == []


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
@pytest.mark.parametrize("param", [None, 0.2, 3])
def test_calculate_gain_is_torchs(nonlinearity, param):
    same(lambda m: m.nn.init.calculate_gain(nonlinearity, param))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.init.calculate_gain("swish"),
    lambda m: m.nn.init.calculate_gain("leaky_relu", True),
    lambda m: m.nn.init.calculate_gain("leaky_relu", "0.1"),
    lambda m: m.nn.init.kaiming_normal_(m.empty(3, 4), mode="fan_avg"),
    lambda m: m.nn.init.kaiming_uniform_(m.empty(3), mode="fan_in"),
    lambda m: m.nn.init.xavier_normal_(m.empty(5)),
    lambda m: m.nn.init.orthogonal_(m.empty(5)),
    lambda m: m.nn.init.sparse_(m.empty(2, 3, 4), 0.5),
    lambda m: m.nn.init.dirac_(m.empty(3, 3)),
    lambda m: m.nn.init.dirac_(m.empty(3, 2, 3), groups=2),
    lambda m: m.nn.init.eye_(m.empty(2, 3, 4)),
    lambda m: m.nn.init.uniform_(m.empty(2, 2), generator=3),
    lambda m: m.nn.init._calculate_fan_in_and_fan_out(m.empty(4)),
    lambda m: m.nn.init._calculate_correct_fan(m.empty(4, 5), "fan_middle"),
], ids=lambda c: "")
def test_refusals_as_torch(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.init.constant_(m.empty(2, 3), 0.25),
    lambda m: m.nn.init.ones_(m.empty(2, 3, dtype=m.float64)),
    lambda m: m.nn.init.zeros_(m.empty(4)),
    lambda m: m.nn.init.eye_(m.empty(3, 5)),
    lambda m: m.nn.init.eye_(m.empty(4, 2)),
    lambda m: m.nn.init.dirac_(m.empty(4, 2, 3)),
    lambda m: m.nn.init.dirac_(m.empty(6, 2, 3, 3), groups=3),
    lambda m: m.nn.init.dirac_(m.empty(2, 4, 1, 2, 3)),
    lambda m: m.nn.init._calculate_fan_in_and_fan_out(m.empty(6, 3, 2, 5)),
    lambda m: m.nn.init._calculate_correct_fan(m.empty(6, 3, 2), "FAN_OUT"),
    lambda m: m.nn.init.orthogonal_(m.empty(0, 3)),
    lambda m: m.nn.init.xavier_uniform_(m.empty(0, 3)),
], ids=lambda c: "")
def test_deterministic_ones_are_torchs(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)        # torch: zero-element tensors
        same(call)


@pytest.mark.parametrize("shape", [(64, 48), (32, 16, 3, 3), (20, 8, 5)])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_kaiming_every_mode_and_nonlinearity_as_torch(shape, mode, nonlinearity):
    a = 0.2 if nonlinearity == "leaky_relu" else 0
    fan_in = shape[1] * math.prod(shape[2:])
    fan = fan_in if mode == "fan_in" else shape[0] * math.prod(shape[2:])
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    tgx.manual_seed(0)
    torch.manual_seed(0)
    ours = init.kaiming_uniform_(tgx.empty(*shape), a, mode, nonlinearity).numpy()
    theirs = torch.nn.init.kaiming_uniform_(torch.empty(*shape), a, mode, nonlinearity).numpy()
    bound = math.sqrt(3) * std
    for w in (ours, theirs):
        assert np.abs(w).max() <= bound * (1 + 1e-6) and np.abs(w).max() > 0.97 * bound
        assert w.std() == pytest.approx(std, rel=0.08)
    ours = init.kaiming_normal_(tgx.empty(*shape), a, mode, nonlinearity).numpy()
    theirs = torch.nn.init.kaiming_normal_(torch.empty(*shape), a, mode, nonlinearity).numpy()
    for w in (ours, theirs):
        assert w.std() == pytest.approx(std, rel=0.08) and abs(w.mean()) < 0.1 * std


@pytest.mark.parametrize("gain", [1.0, 0.5, 3.0])
def test_xavier_with_gain_as_torch(gain):
    shape = (50, 30, 2)
    fan_in, fan_out = 60, 100
    for ns, mod, make in ((tgx, init, tgx.empty), (torch, torch.nn.init, torch.empty)):
        ns.manual_seed(1)
        w = mod.xavier_uniform_(make(*shape), gain=gain).numpy()
        bound = gain * math.sqrt(6 / (fan_in + fan_out))
        assert np.abs(w).max() <= bound * (1 + 1e-6) and np.abs(w).max() > 0.97 * bound
        w = mod.xavier_normal_(make(*shape), gain=gain).numpy()
        assert w.std() == pytest.approx(gain * math.sqrt(2 / (fan_in + fan_out)), rel=0.06)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (5, 5), (3, 2, 2, 2), (1, 7)])
@pytest.mark.parametrize("gain", [1, 2.5])
def test_orthogonal_is_orthogonal_as_torchs(shape, gain):
    for mod, make in ((init, tgx.empty), (torch.nn.init, torch.empty)):
        w = mod.orthogonal_(make(*shape), gain=gain).numpy().reshape(shape[0], -1)
        small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(small, gain ** 2 * np.eye(len(small)), atol=1e-5)


def test_orthogonal_is_uniform_over_signs():
    """R's diagonal fixes the signs, so Q's first column is not biased to one half-space."""
    firsts = np.array([init.orthogonal_(tgx.empty(3, 3)).numpy()[0, 0] for _ in range(400)])
    assert 0.35 < (firsts > 0).mean() < 0.65


@pytest.mark.parametrize("sparsity", [0.0, 0.1, 0.5, 0.99])
def test_sparse_zeros_per_column_and_std_as_torch(sparsity):
    for mod, make in ((init, tgx.empty), (torch.nn.init, torch.empty)):
        w = mod.sparse_(make(200, 300), sparsity, std=0.05).numpy()
        zeros = (w == 0).sum(0)
        assert np.all(zeros == math.ceil(sparsity * 200)), zeros[:5]
        nz = w[w != 0]
        assert nz.std() == pytest.approx(0.05, rel=0.05)


def test_uniform_normal_trunc_normal_moments_as_torch():
    for ns, mod, make in ((tgx, init, tgx.empty), (torch, torch.nn.init, torch.empty)):
        ns.manual_seed(2)
        u = mod.uniform_(make(300, 300), -1.0, 3.0).numpy()
        assert u.min() >= -1 and u.max() < 3 and u.mean() == pytest.approx(1.0, abs=0.02)
        n = mod.normal_(make(300, 300), 2.0, 0.5).numpy()
        assert n.mean() == pytest.approx(2.0, abs=0.01) and n.std() == pytest.approx(0.5,
                                                                                      rel=0.02)
        t = mod.trunc_normal_(make(300, 300), 1.0, 2.0, -1.0, 1.5).numpy()
        assert t.min() >= -1.0 and t.max() <= 1.5
        # N(1, 4) truncated to [-1, 1.5]: the mean of a standard normal on [-1, 0.25], times 2,
        # plus 1
        phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)          # noqa: E731
        Phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))                  # noqa: E731
        want = 1 + 2 * (phi(-1) - phi(0.25)) / (Phi(0.25) - Phi(-1))
        assert t.mean() == pytest.approx(want, abs=0.02)
        far = mod.trunc_normal_(make(200, 200), 0.0, 1.0, 5.0, 7.0).numpy()  # a far tail
        assert far.min() >= 5 and far.mean() == pytest.approx(5.19, abs=0.02)


@pytest.mark.parametrize("name, args", [
    ("uniform_", (-1.0, 1.0)), ("normal_", (0.0, 2.0)), ("trunc_normal_", ()),
    ("xavier_uniform_", ()), ("xavier_normal_", ()), ("kaiming_uniform_", ()),
    ("kaiming_normal_", ()), ("orthogonal_", ()), ("sparse_", (0.3,))])
def test_generator_gives_its_own_repeatable_stream(name, args):
    fn = getattr(init, name)

    def draw(seed):
        return fn(tgx.empty(8, 6), *args, generator=tgx.Generator().manual_seed(seed)).numpy()
    tgx.manual_seed(0)
    a = draw(7)
    before = tgx.get_rng_state()
    b = draw(7)
    assert np.array_equal(a, b) and not np.array_equal(a, draw(8))
    assert np.array_equal(tgx.get_rng_state(), before) or tgx.get_rng_state() == before
    # torch takes the same argument
    getattr(torch.nn.init, name)(torch.empty(8, 6), *args,
                                 generator=torch.Generator().manual_seed(7))


@pytest.mark.parametrize("old", ["uniform", "normal", "constant", "eye", "dirac",
                                 "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                 "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_names_warn_and_fill_as_torch(old):
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(old, ())
    shape = (4, 2, 3) if old == "dirac" else (3, 4)

    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = getattr(m.nn.init, old)(m.empty(*shape), *args)
        return [tuple(t.shape), [(x.category.__name__, str(x.message)) for x in w]]
    same(call)


def test_parameters_stay_leaves_under_every_initialiser():
    w = tgx.nn.Parameter(tgx.zeros(4, 3, 3))
    for fn, args in ((init.orthogonal_, ()), (init.dirac_, ()), (init.trunc_normal_, ()),
                     (init.kaiming_normal_, ()), (init.uniform_, ())):
        assert fn(w, *args, **({} if fn is init.dirac_ else
                               {"generator": tgx.Generator()})) is w
        assert w.is_leaf and w.requires_grad and w.grad is None
    w2 = tgx.nn.Parameter(tgx.zeros(5, 4))
    assert init.sparse_(w2, 0.5) is w2 and w2.is_leaf
