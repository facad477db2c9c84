"""The norm/dropout/sequence/initialiser families and the remaining nn modules, name by name
against torch (each test's parameter is the full torch name, which the coverage table reads):

    test_module[torch.nn.X]        the module built with the same arguments in the look-alike
                                   and in torch, the same weights, called on the same input:
                                   outputs and input gradients equal (dropout: in evaluation,
                                   and at p=0 in training; its masks' statistics are
                                   tests/nn/test_dropout.py's)
    test_init[torch.nn.init.X]     deterministic initialisers: torch's values; random ones:
                                   torch's distribution (moments, bounds, structure), in place

The op table (tests/opinfo_norm.py) holds the normalization modules over random shapes.
"""
import math
import warnings

import numpy as np
import pytest

from oracle import lookalike, requires_torch, same, to_numpy, torch

pytestmark = requires_torch


def _copy_weights(ours, theirs):
    """Load torch's state dict into the look-alike's module (same names, same shapes)."""
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    missing, unexpected = ours.load_state_dict(state)
    assert not missing and not unexpected


def _run(ns, module, inputs, train):
    module.train(train)
    xs = [ns.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    out = module(*xs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum((o * o.sin()).sum() for o in outs if o.dtype.is_floating_point
                if hasattr(o.dtype, "is_floating_point")) if ns is torch else \
        sum((o * o.sin()).sum() for o in outs if o.dtype.kind == "f")
    grads = []
    if any(x.requires_grad for x in xs):
        total.backward()
        grads = [x.grad for x in xs if x.requires_grad]
    return list(outs) + grads


def _compare_module(cls, args, kwargs, inputs, trains=(True, False), atol=1e-5):
    """Build cls(*args, **kwargs) on both sides, torch's weights in ours, and compare."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs)
    ours = getattr(lookalike().nn, cls)(*args, **kwargs)
    _copy_weights(ours, theirs)
    for train in trains:
        got = _run(lookalike(), ours, inputs, train)
        want = _run(torch, theirs, inputs, train)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(to_numpy(g), to_numpy(w), atol=atol, rtol=atol,
                                       err_msg=f"{cls} (train={train})")
    assert repr(ours).splitlines()[0].split("  #")[0] == repr(theirs).splitlines()[0]


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


MODULES = {
    # dropout: evaluation (the identity) and p=0 in training are torch's exactly
    "Dropout1d": ((0.4,), {}, (_x(2, 3, 4),), (False,)),
    "Dropout2d": ((0.0,), {}, (_x(2, 3, 2, 2),), (True, False)),
    "Dropout3d": ((0.3,), {}, (_x(2, 3, 2, 1, 2),), (False,)),
    "AlphaDropout": ((0.0,), {}, (_x(3, 4),), (True, False)),
    "FeatureAlphaDropout": ((0.5,), {}, (_x(3, 4, 2),), (False,)),
}


@pytest.mark.parametrize("cls", [pytest.param(c, id=f"torch.nn.{c}") for c in MODULES])
def test_module(cls):
    args, kwargs, inputs, trains = MODULES[cls]
    _compare_module(cls, args, kwargs, inputs, trains)


# -- torch.nn.init ---------------------------------------------------------------------------

def _same_values(name, *args, shape=(3, 4)):
    def check():
        def call(m):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                t = m.empty(*shape)
                out = getattr(m.nn.init, name)(t, *args)
            return [out is t, out, [(x.category.__name__, str(x.message)) for x in w]]
        same(call)
    return check


def _stats(name, *args, shape=(200, 150), check=None, bounded=False):
    """The distribution of a random initialiser on both sides: in place, the same shape and
    dtype, the same mean and spread (to sampling error), the same range when the distribution
    is bounded, and `check` on each."""
    def run():
        def draw(m):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                t = m.empty(*shape)
                out = getattr(m.nn.init, name)(t, *args)
            assert out is t
            return to_numpy(out).astype(np.float64)
        ours, theirs = draw(lookalike()), draw(torch)
        assert ours.shape == theirs.shape
        n = ours.size
        spread = max(theirs.std(), 1e-12)
        assert abs(ours.mean() - theirs.mean()) < 6 * spread / math.sqrt(n) + 1e-9, name
        assert ours.std() == pytest.approx(theirs.std(), rel=0.05, abs=1e-9), name
        if bounded:          # both reach close to the bounds, neither beyond the other's
            assert abs(ours.min() - theirs.min()) < 0.05 * spread and \
                abs(ours.max() - theirs.max()) < 0.05 * spread, name
        if check is not None:
            check(ours)
            check(theirs)
    return run


def _orthonormal(gain):
    def check(w):
        w = w.reshape(w.shape[0], -1)
        small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(small, gain ** 2 * np.eye(len(small)), atol=1e-4)
    return check


def _zeros_per_column(k):
    def check(w):
        assert np.all((w == 0).sum(0) == k)
    return check


def _gain():
    def check():
        for nl in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                   "conv_transpose2d", "conv_transpose3d", "sigmoid", "tanh", "relu", "selu"):
            same(lambda m, nl=nl: m.nn.init.calculate_gain(nl))
        for p in (None, 0.2, 3):
            same(lambda m, p=p: m.nn.init.calculate_gain("leaky_relu", p))
        same(lambda m: m.nn.init.calculate_gain("swish"))
    return check


INIT = {
    "calculate_gain": _gain(),
    "constant_": _same_values("constant_", 0.3), "constant": _same_values("constant", 0.3),
    "ones_": _same_values("ones_"), "zeros_": _same_values("zeros_"),
    "eye_": _same_values("eye_", shape=(3, 5)), "eye": _same_values("eye", shape=(4, 2)),
    "dirac_": _same_values("dirac_", 2, shape=(4, 3, 3, 3)),
    "dirac": _same_values("dirac", shape=(2, 3, 3)),
    "uniform_": _stats("uniform_", -0.5, 2.0, bounded=True),
    "uniform": _stats("uniform", -0.5, 2.0, bounded=True),
    "normal_": _stats("normal_", 1.0, 0.3), "normal": _stats("normal", 1.0, 0.3),
    "trunc_normal_": _stats("trunc_normal_", 0.0, 1.0, -0.5, 1.5, bounded=True),
    "xavier_uniform_": _stats("xavier_uniform_", 2.0, shape=(60, 40, 3), bounded=True),
    "xavier_uniform": _stats("xavier_uniform", shape=(60, 40, 3), bounded=True),
    "xavier_normal_": _stats("xavier_normal_", 0.5, shape=(60, 40, 3)),
    "xavier_normal": _stats("xavier_normal", shape=(60, 40, 3)),
    "kaiming_uniform_": _stats("kaiming_uniform_", math.sqrt(5), shape=(80, 30, 3), bounded=True),
    "kaiming_uniform": _stats("kaiming_uniform", 0, "fan_out", "relu", shape=(80, 30, 3),
                              bounded=True),
    "kaiming_normal_": _stats("kaiming_normal_", 0, "fan_out", "tanh", shape=(80, 30, 3)),
    "kaiming_normal": _stats("kaiming_normal", shape=(80, 30, 3)),
    "orthogonal_": _stats("orthogonal_", 1.5, shape=(40, 60), check=_orthonormal(1.5)),
    "orthogonal": _stats("orthogonal", shape=(60, 4, 5), check=_orthonormal(1)),
    "sparse_": _stats("sparse_", 0.3, 0.05, shape=(100, 80), check=_zeros_per_column(30)),
    "sparse": _stats("sparse", 0.1, shape=(100, 80), check=_zeros_per_column(10)),
}


@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.nn.init.{n}") for n in INIT])
def test_init(name):
    INIT[name]()


def test_every_initialiser_of_torch_is_in_the_table():
    import inspect
    public = [n for n in dir(torch.nn.init) if not n.startswith("_") and
              inspect.isfunction(getattr(torch.nn.init, n)) and
              getattr(torch.nn.init, n).__module__ == "torch.nn.init"]
    assert sorted(public) == sorted(INIT)


@pytest.mark.parametrize("name", [pytest.param("Container", id="torch.nn.Container")])
def test_deprecated_container(name):
    """torch's deprecated Container: the modules given as keywords, with torch's warning."""
    def build(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = getattr(m.nn, name)(fc=m.nn.Linear(2, 3), act=m.nn.ReLU())
        return [[n for n, _ in c.named_children()], [str(x.message) for x in w],
                list(c.state_dict()), [tuple(p.shape) for p in c.parameters()]]
    same(build)
