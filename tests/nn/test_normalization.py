"""The normalization family (functional/normalization.py, nn/normalization.py) against torch:
running statistics over several training steps (momentum, momentum=None's cumulative mean,
track_running_stats=False, evaluation), the state dict (num_batches_tracked), a torch state
dict loaded as it is, and every refusal torch makes, refused here with a clear line. Values
and gradients over random shapes are the op table's (tests/opinfo_norm.py)."""
import warnings

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn
from oracle import assert_clear, requires_torch, same, torch

pytestmark = requires_torch


def _steps(ns, module, batches, train=True):
    """Outputs, input gradients and the state dict after running module on each batch."""
    module.train(train)
    outs = []
    for b in batches:
        x = ns.tensor(b, requires_grad=True)
        y = module(x)
        (y * y.sin()).sum().backward()
        outs += [y, x.grad]
    return outs + [dict(module.state_dict())]


@pytest.mark.parametrize("cls, ctor, shape", [
    ("BatchNorm1d", {}, (4, 3)), ("BatchNorm1d", {"momentum": None}, (3, 3, 5)),
    ("BatchNorm1d", {"affine": False}, (2, 3, 2)), ("BatchNorm1d", {"bias": False}, (5, 3)),
    ("BatchNorm2d", {"momentum": 0.5}, (2, 3, 2, 3)),
    ("BatchNorm2d", {"track_running_stats": False}, (2, 3, 2, 2)),
    ("BatchNorm3d", {"eps": 0.1}, (2, 3, 1, 2, 2)),
    ("InstanceNorm1d", {}, (2, 3, 4)), ("InstanceNorm1d", {"track_running_stats": True},
                                        (3, 4)),
    ("InstanceNorm2d", {"affine": True, "track_running_stats": True, "momentum": None},
     (2, 3, 2, 2)),
    ("InstanceNorm3d", {"affine": True}, (3, 2, 2, 2)),
    ("GroupNorm", {"num_groups": 3}, (2, 3, 4)), ("GroupNorm", {"num_groups": 1}, (2, 3)),
    ("LocalResponseNorm", {"size": 2}, (2, 3, 4)),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_training_steps_then_evaluation_as_torch(cls, ctor, shape, dtype):
    """Three training steps (outputs, gradients, buffers after each), then evaluation."""
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal(shape).astype(dtype) * 2 + 1 for _ in range(3)]
    ctor = dict(ctor)
    if cls == "GroupNorm":
        ctor["num_channels"] = 3
    elif cls == "LocalResponseNorm":
        pass
    else:
        ctor["num_features"] = 3

    def run(ns):
        m = getattr(ns.nn, cls)(**ctor).to(getattr(ns, dtype))
        return _steps(ns, m, batches) + _steps(ns, m, batches[:1], train=False)
    tol = 1e-10 if dtype == "float64" else 2e-5
    same(run, atol=tol, rtol=tol)


def test_momentum_none_is_the_cumulative_mean():
    m = nn.BatchNorm1d(2, momentum=None)
    batches = [np.random.default_rng(i).standard_normal((6, 2)) for i in range(4)]
    for b in batches:
        m(tgx.tensor(b, dtype=tgx.float32))
    means = [b.mean(0) for b in batches]
    np.testing.assert_allclose(m.running_mean.numpy(), np.mean(means, 0), rtol=1e-5)
    unbiased = [b.var(0, ddof=1) for b in batches]
    np.testing.assert_allclose(m.running_var.numpy(), np.mean(unbiased, 0), rtol=1e-5)
    assert m.num_batches_tracked.item() == 4 and m.num_batches_tracked.dtype == np.int64


def test_state_dict_buffers_and_dtype_conversion():
    def state(ns):
        m = ns.nn.BatchNorm2d(3)
        m(ns.ones(2, 3, 2, 2))
        m.double()
        return [list(m.state_dict()), m.num_batches_tracked, m.running_var,
                [n for n, _ in m.named_buffers()]]
    same(state)
    same(lambda ns: list(ns.nn.BatchNorm1d(3, affine=False, track_running_stats=False)
                         .state_dict()))
    same(lambda ns: list(ns.nn.InstanceNorm1d(3, track_running_stats=True).state_dict()))
    same(lambda ns: list(ns.nn.GroupNorm(1, 3, affine=False).state_dict()))
    # the first line: tinygradx's repr then lists the parameters (its own format)
    same(lambda ns: [repr(m).splitlines()[0].split("  #")[0] for m in (
        ns.nn.BatchNorm1d(3, momentum=None, bias=False), ns.nn.InstanceNorm2d(4),
        ns.nn.LocalResponseNorm(2))])


def test_reset_running_stats_and_parameters():
    def reset(ns):
        m = ns.nn.BatchNorm1d(2)
        m(ns.tensor([[1.0, 2.0], [3.0, 5.0]]))
        with ns.no_grad():
            m.weight.mul_(3)
        m.reset_running_stats()
        first = dict(m.state_dict())
        m(ns.tensor([[1.0, 2.0], [3.0, 5.0]]))
        m.reset_parameters()
        return [first, dict(m.state_dict())]
    same(reset)


def test_a_torch_state_dict_loads_and_evaluates_the_same():
    theirs = torch.nn.BatchNorm2d(3)
    theirs.train()
    for i in range(3):
        theirs(torch.randn(4, 3, 2, 2) * (i + 1) + i)
    theirs.eval()
    mine = nn.BatchNorm2d(3)
    missing, unexpected = mine.load_state_dict({k: v.numpy() for k, v in
                                                theirs.state_dict().items()})
    assert not missing and not unexpected
    mine.eval()
    x = np.random.default_rng(1).standard_normal((2, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(mine(tgx.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), atol=1e-6)
    assert mine.num_batches_tracked.item() == 3


@pytest.mark.parametrize("call", [
    lambda m: m.nn.BatchNorm1d(3)(m.ones(1, 3)),                          # one value/channel
    lambda m: m.nn.functional.batch_norm(m.ones(1, 3), None, None, training=True),
    lambda m: m.nn.BatchNorm1d(3)(m.ones(2, 3, 4, 5)),                    # 4-d into 1d
    lambda m: m.nn.BatchNorm1d(3)(m.ones(3)),
    lambda m: m.nn.BatchNorm2d(3)(m.ones(3, 4, 5)),
    lambda m: m.nn.BatchNorm3d(3)(m.ones(2, 3, 4, 5)),
    lambda m: m.nn.BatchNorm2d(3)(m.ones(2, 4, 4, 5)),                    # wrong channels
    lambda m: m.nn.BatchNorm1d(-1),
    lambda m: m.nn.BatchNorm1d(2.0),
    lambda m: m.nn.BatchNorm1d(2, eps=0)(m.ones(3, 2)),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None),       # eval, no stats
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), m.zeros(2), m.ones(2)),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), None, None, m.ones(2), training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3, dtype=m.float64), m.zeros(3),
                                         m.ones(3), training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3, dtype=m.int64), None, None,
                                         training=True),
    lambda m: m.nn.functional.batch_norm(m.ones(4, 3), m.zeros(3), m.ones(3), training=True,
                                         momentum=None),
    lambda m: m.nn.GroupNorm(2, 3),
    lambda m: m.nn.GroupNorm(1, 3)(m.ones(3)),
    lambda m: m.nn.GroupNorm(1, 3)(m.ones(3, 4)),                         # unbatched
    lambda m: m.nn.GroupNorm(1, 3)(m.ones(2, 4, 5)),
    lambda m: m.nn.functional.group_norm(m.ones(2, 4, 5), 3),
    lambda m: m.nn.InstanceNorm1d(3)(m.ones(2, 3, 1)),                    # one position
    lambda m: m.nn.InstanceNorm1d(3)(m.ones(2, 3, 1, 3)),
    lambda m: m.nn.InstanceNorm2d(3)(m.ones(3, 4)),
    lambda m: m.nn.InstanceNorm1d(3, affine=True)(m.ones(2, 4, 4)),
    lambda m: m.nn.functional.instance_norm(m.ones(2, 3)),
    lambda m: m.nn.functional.instance_norm(m.ones(3)),
    lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 4), use_input_stats=False),
    lambda m: m.nn.LocalResponseNorm(2)(m.ones(2, 3)),
    lambda m: m.nn.LocalResponseNorm(0)(m.ones(2, 3, 4)),
], ids=lambda c: "")
def test_refusals_as_torch(call):
    same(call)


def test_edge_cases_that_work_as_torch():
    same(lambda m: m.nn.BatchNorm1d(3).eval()(m.ones(1, 3)))               # eval: one row is fine
    same(lambda m: m.nn.BatchNorm1d(3)(m.ones(1, 3, 2) * m.arange(2.0)))   # 1 x 2 values
    same(lambda m: (lambda b: [b(m.zeros(0, 3)), dict(b.state_dict())])(m.nn.BatchNorm1d(3)))
    same(lambda m: m.nn.functional.local_response_norm(m.zeros(0, 3, 4), 2))
    same(lambda m: m.nn.functional.group_norm(m.arange(8.0).reshape(2, 4), 4))
    same(lambda m: m.nn.BatchNorm1d(3, track_running_stats=False).eval()(
        m.arange(6.0).reshape(2, 3)))                                         # batch stats
    same(lambda m: m.nn.InstanceNorm1d(3, track_running_stats=True).eval()(
        m.arange(12.0).reshape(2, 3, 2)))                                     # running stats


def test_instance_norm_warns_on_channels_without_affine():
    def call(m):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = m.nn.InstanceNorm1d(3)(m.arange(16.0).reshape(2, 4, 2))
        return [y, len(w), "num_features" in str(w[0].message)]
    same(call)


def test_lazy_modules_are_refused_by_name():
    from tinygradx.compat.lookalike import torch as lookalike
    for name in ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyInstanceNorm3d", "LazyLinear"):
        with pytest.raises(AttributeError) as e:
            getattr(lookalike.nn, name)
        assert_clear(e.value, f"torch.nn.{name}", "lazy")


def test_the_graph_draws_batch_norm_from_its_ops():
    from tinygradx.graph import viz
    m = nn.BatchNorm1d(3)
    dot = viz.to_dot_source(m(tgx.randn(4, 3, requires_grad=True)).sum())
    assert "mean" in dot and "rsqrt" in dot
    x = tgx.randn(4, 3, requires_grad=True)
    (g,) = tgx.grad(nn.GroupNorm(1, 3)(x).pow(3).sum(), x, create_graph=True)
    assert g.requires_grad                               # second derivatives come free


@pytest.mark.parametrize("size", [2, 3, 4, 7])
@pytest.mark.parametrize("channels", [1, 3, 6])
def test_cross_map_lrn2d_numbers_and_gradients_are_torchs(size, channels):
    """torch's legacy CrossMapLRN2d: its own numbers (not LocalResponseNorm's) and its own
    gradient, which is not the derivative of its output (torch's gradcheck fails on it)."""
    x = np.random.default_rng(size + channels).standard_normal((2, channels, 3, 2))
    g = np.random.default_rng(1).standard_normal(x.shape)

    def call(m):
        xt = m.tensor(x, requires_grad=True)
        y = m.nn.CrossMapLRN2d(size, 0.3, 0.8, 1.5)(xt)
        y.backward(m.tensor(g))
        return [y, xt.grad]
    same(call, atol=1e-12, rtol=1e-12)


def test_cross_map_lrn2d_refusals_as_torch():
    def twice(m):
        xt = m.tensor(np.ones((1, 4, 2, 2)), requires_grad=True)
        (gx,) = m.autograd.grad(m.nn.CrossMapLRN2d(3)(xt).sum(), xt, create_graph=True)
        gx.sum().backward()
    for call in (lambda m: m.nn.CrossMapLRN2d(3)(m.ones(3, 4, 4)),
                 lambda m: (lambda x: m.nn.CrossMapLRN2d(1)(x).sum().backward())(
                     m.ones(1, 2, 2, 2, requires_grad=True)),
                 twice):
        same(call)
    same(lambda m: repr(m.nn.CrossMapLRN2d(3, 1e-4)))
    x = torch.randn(1, 5, 2, 2, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(torch.nn.CrossMapLRN2d(3, 0.5), (x,),
                                        raise_exception=False)
