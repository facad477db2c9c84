"""The device surface: tinygradx has one device, the CPU. PyTorch code that names it runs
unchanged; code that asks for another device is refused in one line at the place it asks."""
import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import nn

try:
    import torch
except ImportError:
    torch = None

FACTORIES = [
    ("zeros", lambda d: tgx.zeros(2, 3, device=d)),
    ("ones", lambda d: tgx.ones(2, device=d)),
    ("empty", lambda d: tgx.empty(2, device=d)),
    ("full", lambda d: tgx.full((2,), 1.5, device=d)),
    ("arange", lambda d: tgx.arange(0, 4, 2, dtype=tgx.int64, device=d)),
    ("eye", lambda d: tgx.eye(2, device=d)),
    ("randn", lambda d: tgx.randn(2, device=d)),
    ("rand", lambda d: tgx.rand(2, device=d)),
    ("randint", lambda d: tgx.randint(0, 5, (2,), device=d)),
    ("tensor", lambda d: tgx.tensor([1.0], device=d)),
    ("as_tensor", lambda d: tgx.as_tensor([1.0], device=d)),
    ("zeros_like", lambda d: tgx.zeros_like(tgx.ones(2), device=d)),
    ("ones_like", lambda d: tgx.ones_like(tgx.ones(2), device=d)),
    ("empty_like", lambda d: tgx.empty_like(tgx.ones(2), device=d)),
    ("full_like", lambda d: tgx.full_like(tgx.ones(2), 3.0, device=d)),
    ("randn_like", lambda d: tgx.randn_like(tgx.ones(2), device=d)),
    ("rand_like", lambda d: tgx.rand_like(tgx.ones(2), device=d)),
    ("new_zeros", lambda d: tgx.ones(2).new_zeros(3, device=d)),
    ("new_ones", lambda d: tgx.ones(2).new_ones((3,), device=d)),
    ("new_empty", lambda d: tgx.ones(2).new_empty(3, device=d)),
    ("new_full", lambda d: tgx.ones(2).new_full((3,), 2.0, device=d)),
    ("new_tensor", lambda d: tgx.ones(2).new_tensor([1, 2], device=d)),
]


def test_device_object_as_torch():
    d = tgx.device("cpu")
    assert d.type == "cpu" and d.index is None
    assert str(d) == "cpu" and repr(d) == "device(type='cpu')"
    assert d == tgx.device("cpu") and hash(d) == hash(tgx.device("cpu"))
    assert tgx.device("cpu:0") == tgx.device("cpu", 0) != d
    assert str(tgx.device("cpu", 0)) == "cpu:0"
    assert tgx.device(d) == d
    assert tgx.ones(2).device == d and tgx.ones(2).device.type == "cpu"
    assert not tgx.ones(2).is_cuda
    if torch is not None:      # the same answers as torch's device
        t = torch.device("cpu")
        assert (t.type, t.index, str(t), repr(t)) == (d.type, d.index, str(d), repr(d))
        assert str(torch.device("cpu", 0)) == str(tgx.device("cpu", 0))


@pytest.mark.parametrize("name", ["cuda", "cuda:0", "mps", "xpu"])
def test_other_devices_are_refused_in_one_line(name):
    with pytest.raises(RuntimeError, match=r"runs on the CPU only") as err:
        tgx.device(name)
    assert "\n" not in str(err.value) and repr(name) in str(err.value)
    with pytest.raises(RuntimeError, match=r"zeros: device .* runs on the CPU only"):
        tgx.zeros(2, device=name)
    with pytest.raises(RuntimeError, match=r"to: device .* runs on the CPU only"):
        tgx.ones(2).to(name)
    with pytest.raises(RuntimeError, match="CPU only"):
        nn.Linear(2, 2).to(name)


def test_bad_device_strings_and_types():
    with pytest.raises(RuntimeError, match="'gpu' is not a device"):
        tgx.zeros(2, device="gpu")
    with pytest.raises(RuntimeError, match="'foo' is not a device"):
        tgx.device("foo")
    with pytest.raises(RuntimeError, match="GPU ordinal"):
        tgx.ones(2, device=0)
    with pytest.raises(TypeError, match="device must be a string"):
        tgx.ones(2, device=1.5)
    with pytest.raises(RuntimeError, match="Tensor.cuda: tinygradx runs on the CPU only"):
        tgx.ones(2).cuda()
    with pytest.raises(RuntimeError, match="Module.cuda"):
        nn.Linear(2, 2).cuda()


@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_every_factory_takes_the_cpu_device(name, make):
    for d in (None, "cpu", "cpu:0", tgx.device("cpu")):
        assert make(d).device == tgx.device("cpu")
    with pytest.raises(RuntimeError, match=f"{name}: device 'cuda' .*CPU only"):
        make("cuda")


def test_to_and_cpu_forms():
    x = tgx.ones(2, 3, requires_grad=True)
    assert x.cpu() is x and x.to("cpu") is x and x.to(tgx.device("cpu")) is x
    assert x.to(tgx.float32) is x and x.to(device="cpu", dtype=tgx.float32) is x
    y = x.to("cpu", tgx.float64)
    assert y.dtype == np.float64 and y.requires_grad           # a float cast keeps the graph
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    assert x.to(tgx.zeros(1, dtype=tgx.int64)).dtype == np.int64   # to(other)
    assert x.to("float64").dtype == np.float64                     # a dtype name is a dtype
    c = x.to(copy=True)
    assert c is not x and not np.shares_memory(c.detach().numpy(), x.detach().numpy())
    with pytest.raises(TypeError, match="to: the dtype is given twice"):
        x.to(tgx.float32, dtype=tgx.float64)
    with pytest.raises(TypeError, match="at most 2 positional"):
        x.to("cpu", tgx.float32, tgx.float64)


def test_module_to_device_and_dtype():
    m = nn.Linear(2, 3)
    assert m.to("cpu") is m and m.cpu() is m and m.to(tgx.device("cpu")) is m
    assert m.to("cpu", tgx.float64) is m and m.weight.dtype == np.float64
    m.to(dtype=tgx.float32)
    assert m.weight.dtype == np.float32
    m.to(tgx.zeros(1, dtype=tgx.float64))
    assert m.bias.dtype == np.float64
    with pytest.raises(TypeError, match="Module.to: only floating-point dtypes"):
        m.to(tgx.int64)
