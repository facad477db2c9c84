"""The activation modules and RMSNorm of tinygradx.nn against torch.nn (values, gradients,
parameters and repr)."""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import nn

torch = pytest.importorskip("torch")

CASES = [
    ("SiLU", {}), ("Softplus", {"beta": 2.0, "threshold": 3.0}),
    ("LeakyReLU", {"negative_slope": 0.2}),
    ("ELU", {"alpha": 0.5}), ("SELU", {}), ("Mish", {}), ("LogSigmoid", {}),
    ("Hardtanh", {"min_val": -0.5, "max_val": 1.5}), ("ReLU6", {}),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[c[0] for c in CASES])
def test_activation_module_matches_torch(name, kwargs):
    x = np.random.default_rng(0).uniform(-8, 8, size=(3, 5))
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    xt, tt = tgx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, yt = ours(xt), theirs(tt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert not list(ours.parameters())


@pytest.mark.parametrize("eps", [None, 1e-5])
def test_rms_norm_module_matches_torch(eps):
    x = np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32)
    ours, theirs = nn.RMSNorm((3, 4), eps=eps), torch.nn.RMSNorm((3, 4), eps=eps)
    w = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
    ours.weight.detach().numpy()[...] = w
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    xt, tt = tgx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, yt = ours(xt), theirs(tt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-4, atol=1e-5)
    assert [n for n, _ in ours.named_parameters()] == ["weight"]
    assert "eps=" in repr(ours)


def test_rms_norm_without_affine_and_bad_args():
    assert not list(nn.RMSNorm(4, elementwise_affine=False).parameters())
    with pytest.raises(ValueError):
        nn.RMSNorm(4, eps=-1.0)
    with pytest.raises(ValueError):
        nn.Hardtanh(1.0, -1.0)
    x = tgx.tensor([-1.0, 2.0])                        # inplace=True: x itself, as torch
    assert nn.SiLU(inplace=True)(x) is x
    np.testing.assert_allclose(x.numpy(), [-1 / (1 + np.e), 2 / (1 + np.exp(-2))], rtol=1e-6)


@pytest.mark.parametrize("fn", [F.silu, F.softplus, F.logsigmoid, F.leaky_relu, F.elu, F.selu,
                                F.mish, lambda x: F.rms_norm(x, (3,)),
                                lambda x: x.logaddexp(x), lambda x: x.lerp(x, 0.5),
                                lambda x: x.round(decimals=1)])
def test_float_only_ops_refuse_int_and_bool_as_torch(fn):
    for x in (tgx.tensor([1, 2, 3]), tgx.tensor([True, False, True])):
        with pytest.raises(TypeError, match="floating-point"):
            fn(x)


def test_hardtanh_keeps_integers_and_refuses_bool_as_torch():
    x = tgx.tensor([-2, 0, 3, 8])
    assert F.hardtanh(x).tolist() == [-1, 0, 1, 1] and F.hardtanh(x).dtype == tgx.int64
    assert F.relu6(x).tolist() == [0, 0, 3, 6]
    with pytest.raises(TypeError):
        F.relu6(x > 0)
