"""The nn surface PyTorch model code instantiates: containers (ParameterList/Dict, the dict and
list operations of ModuleList/ModuleDict), Softmax/LogSoftmax/Tanh/Sigmoid/Flatten/Unflatten,
Module.apply (children first), parameters() as a generator, buffers (persistent or not),
register_parameter/add_module, zero_grad, and the loss modules built with torch's arguments."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(3, 2)
        self.scales = nn.ParameterList([tgx.ones(2), nn.Parameter(tgx.zeros(2))])
        self.extra = nn.ParameterDict({"gain": tgx.full((2,), 2.0)})
        self.register_buffer("running", tgx.zeros(2))
        self.register_buffer("table", tgx.arange(4.0), persistent=False)
        self.register_parameter("unused_bias", None)

    def forward(self, x):
        return self.fc(x) * self.scales[0] + self.scales[1] * self.extra["gain"]


def test_parameter_containers_are_found_named_and_trained():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc.weight", "fc.bias", "scales.0", "scales.1", "extra.gain"]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    net(tgx.ones(4, 3)).sum().backward()
    assert net.scales[1].grad is not None and net.extra["gain"].grad is not None
    net.scales.append(tgx.ones(1))
    assert len(net.scales) == 3 and "scales.2" in dict(net.named_parameters())
    assert list(net.extra) == ["gain"] and "gain" in net.extra
    with pytest.raises(TypeError, match="holds Parameters or Tensors"):
        nn.ParameterList([3.0])


def test_parameters_is_a_generator_as_torch():
    net = Net()
    first = next(net.parameters())                 # the device/dtype idiom
    assert first is net.fc.weight and first.device == tgx.device("cpu")
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_parameters(recurse=False)] == []
    assert len(list(net.fc.parameters(recurse=False))) == 2


def test_buffers_persistent_and_not():
    net = Net()
    assert [n for n, _ in net.named_buffers()] == ["running", "table"]     # both, as torch
    assert len(list(net.buffers())) == 2
    sd = net.state_dict()
    assert "running" in sd and "table" not in sd                           # persistent only
    net.load_state_dict(sd)
    net.double()
    assert net.table.dtype == np.float64 and net.running.dtype == np.float64
    net.register_buffer("running", tgx.ones(2), persistent=False)          # re-registered
    assert "running" not in net.state_dict() and net.running.numpy().sum() == 2
    with pytest.raises(KeyError, match="without '.'"):
        net.register_buffer("a.b", tgx.ones(1))
    with pytest.raises(TypeError, match="must be a Tensor or None"):
        net.register_buffer("x", np.ones(2))
    if torch is not None:
        class T(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("running", torch.zeros(2))
                self.register_buffer("table", torch.arange(4.0), persistent=False)
        t = T()
        assert [n for n, _ in t.named_buffers()] == ["running", "table"]
        assert list(t.state_dict()) == ["running"]


def test_apply_visits_children_before_parents_as_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU(),
                                                                         lib.nn.Linear(2, 1)))
    order = []
    m = build(tgx)
    assert m.apply(lambda mod: order.append(type(mod).__name__)) is m
    assert order == ["Linear", "ReLU", "Linear", "Sequential", "Sequential"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    assert len(list(m.modules())) == 5
    if torch is not None:
        want = []
        build(torch).apply(lambda mod: want.append(type(mod).__name__))
        assert order == want


def test_module_containers_take_dict_and_list_operations():
    d = nn.ModuleDict({"a": nn.Linear(2, 2)})
    d["b"] = nn.Tanh()
    d.update({"c": nn.Sigmoid()})
    assert list(d) == ["a", "b", "c"] and len(d) == 3 and isinstance(list(d.values())[1], nn.Tanh)
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Sigmoid())
    ml[2] = nn.Identity()
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "ReLU", "Identity"]
    m = nn.Module()
    m.add_module("head", nn.Linear(2, 3))
    assert [n for n, _ in m.named_parameters()] == ["head.weight", "head.bias"]
    with pytest.raises(TypeError, match="add_module: 'x' must be a Module"):
        m.add_module("x", 3)


def _layout(m):
    """(class name, [(child name, child class name)]) of a container, for comparing with torch."""
    return type(m).__name__, [(n, type(c).__name__) for n, c in m.named_children()]


@needs_torch
@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
def test_sequential_and_module_list_edit_and_slice_as_torch(kind):
    """One list behind both containers: index, slice, set, delete, pop, insert, append and
    extend give torch's names, classes and return values."""
    from collections import OrderedDict

    def build(lib):
        layers = [lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid()]
        return lib.nn.Sequential(*layers) if kind == "Sequential" else lib.nn.ModuleList(layers)

    def edits(lib, c):
        out = [_layout(c[1:]), _layout(c[::2]), type(c[-1]).__name__]
        c[0] = lib.nn.Identity()
        del c[1]
        out.append(_layout(c))
        out.append(type(c.pop(0)).__name__)
        got = c.insert(0, lib.nn.Tanh())
        out.append(got is c if kind == "Sequential" else got)
        out.append(c.append(lib.nn.ReLU()) is c)
        out.append(c.extend([lib.nn.Sigmoid()]) is c)
        out.append(_layout(c))
        out.append([type(m).__name__ for m in c])
        with pytest.raises(IndexError, match="out of range"):
            c[len(c)]
        return out

    assert edits(tgx, build(tgx)) == edits(torch, build(torch))
    assert isinstance(build(tgx), nn.ModuleList) == (kind == "ModuleList")
    if kind == "Sequential":                  # names from an OrderedDict, kept by a slice
        named = {lib: lib.nn.Sequential(OrderedDict(a=lib.nn.ReLU(), b=lib.nn.Tanh()))
                 for lib in (tgx, torch)}
        assert _layout(named[tgx]) == _layout(named[torch])
        assert _layout(named[tgx][1:]) == _layout(named[torch][1:])
        x = tgx.tensor([-1.0, 2.0])
        np.testing.assert_allclose(named[tgx](x).numpy(), np.tanh([0.0, 2.0]))
    else:
        with pytest.raises(TypeError, match="iterable"):
            nn.ModuleList(3)
        again = nn.ModuleList(build(tgx))              # a container is an iterable of modules
        assert _layout(again) == _layout(torch.nn.ModuleList(build(torch)))


def test_zero_grad_sets_none_by_default():
    net = Net()
    net(tgx.ones(1, 3)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert not net.fc.weight.grad.numpy().any()
    net.zero_grad()
    assert net.fc.weight.grad is None


@needs_torch
@pytest.mark.parametrize("name,kw,shape", [
    ("Softmax", {"dim": -1}, (2, 3)), ("Softmax", {}, (2, 3, 4)), ("Softmax", {}, (2, 3)),
    ("LogSoftmax", {"dim": 1}, (2, 3, 4)), ("LogSoftmax", {}, (5,)),
    ("Tanh", {}, (2, 3)), ("Sigmoid", {}, (2, 3)),
    ("Flatten", {}, (2, 3, 4)), ("Flatten", {"start_dim": 0, "end_dim": 1}, (2, 3, 4)),
    ("Unflatten", {"dim": 1, "unflattened_size": (2, 2)}, (3, 4)),
])
def test_small_modules_match_torch(name, kw, shape):
    import warnings
    x = np.random.default_rng(0).normal(size=shape)
    ours, xt = getattr(nn, name)(**kw), tgx.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)       # torch's implicit-dim warning
        theirs, tt = getattr(torch.nn, name)(**kw), torch.tensor(x, requires_grad=True)
        yt = theirs(tt)
    y = ours(xt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(1).normal(size=y.shape)
    (y * tgx.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name,kw", [
    ("KLDivLoss", {"reduction": "batchmean", "log_target": False}),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}),
    ("CrossEntropyLoss", {"ignore_index": 0, "label_smoothing": 0.1}),
    ("NLLLoss", {"reduction": "sum"}),
    ("MSELoss", {}), ("L1Loss", {"reduction": "none"}), ("SmoothL1Loss", {"beta": 0.5}),
    ("HuberLoss", {"delta": 0.5}), ("BCELoss", {}), ("BCEWithLogitsLoss", {}),
])
def test_loss_modules_take_torchs_arguments(name, kw):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 5))
    if name in ("CrossEntropyLoss", "NLLLoss"):
        target = rng.integers(0, 5, size=4)
        if name == "NLLLoss":
            x = x - np.log(np.exp(x).sum(1, keepdims=True))
    elif name == "KLDivLoss":
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
        p = rng.dirichlet(np.ones(5), size=4)
        target = np.log(p) if kw["log_target"] else p
    elif name == "BCELoss":
        x, target = 1 / (1 + np.exp(-x)), rng.random((4, 5))
    else:
        target = rng.normal(size=(4, 5))
    ours = getattr(nn, name)(**kw)(tgx.tensor(x), tgx.tensor(target))
    theirs = getattr(torch.nn, name)(**kw)(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
