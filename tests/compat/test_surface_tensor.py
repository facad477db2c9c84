"""torch.Tensor's methods and the torch.* functions through the look-alike, name by name against
torch itself (the coverage table, docs/pytorch-coverage.md, reads these test ids: the parameter
is the full torch name).

The op-info table (tests/opinfo.py) compares each op in one spelling (`Tensor.exp`,
`tgx.maximum`); here every other spelling of the same op that torch has is run on the same
samples and held to torch's (values, dtypes, shapes, and the gradient of every float input):

    test_function_form   torch.X(x, ...) where the table has the method x.X(...)
    test_method_form     x.X(...) where the table has the function torch.X(x, ...)
    test_inplace         x.X_(...) against torch's x.X_(...), on a copy, for every op the table
                         has whose in-place variant both libraries have (torch's errors, such as
                         an integer tensor taking a float result, must be ours too)
    test_attribute       the Tensor's attributes and non-op methods (dim, size, item, tolist,
                         dtype conversions, requires_grad_, ...), one call each
    test_function        the torch.* functions that are no op of the table (no_grad, is_tensor,
                         manual_seed, Size, finfo, ...), one call each
"""
from __future__ import annotations

import os
import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import tinygradx.compat as compat
from oracle import assert_equal, run

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from opinfo import OPS  # noqa: E402

LOOK = compat.torch
HYPO = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _entries(prefix):
    """{op name: the first op-info entry named exactly prefix + name (no variant) whose torch
    check runs}."""
    found = {}
    for e in OPS:
        if e.name.startswith(prefix) and "[" not in e.name and e.torch_fn() is not None:
            found.setdefault(e.name[len(prefix):], e)
    return found


METHODS, FUNCTIONS = _entries("Tensor."), _entries("tgx.")


def _tensor_has(name):
    import tinygradx
    return hasattr(tinygradx.Tensor, name)


def _tensors(ns, sample, grad):
    out = []
    for a in sample.inputs:
        t = ns.tensor(a.copy())
        if grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        out.append(t)
    kwargs = {k: ns.tensor(v) if isinstance(v, np.ndarray) else v
              for k, v in sample.kwargs.items()}
    return out, kwargs


def _outs(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _same_call(entry, sample, call, grad=True):
    """call(ns, tensors, kwargs) on both sides: the same outputs and input gradients."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xs_t, kw_t = _tensors(torch, sample, grad)
        xs_m, kw_m = _tensors(LOOK, sample, grad)
        theirs = run(call, torch, xs_t, kw_t)
        mine = run(call, LOOK, xs_m, kw_m)
    tol = dict(atol=entry.atol, rtol=entry.rtol)
    if any(a.dtype in (np.float32, np.float16) for a in sample.inputs):
        tol = dict(atol=entry.atol32, rtol=entry.rtol32)
    if not entry.values:
        mine = [m.shape for m in _outs(mine)] if not hasattr(mine, "exc") else mine
        theirs = [tuple(t.shape) for t in _outs(theirs)] if not hasattr(theirs, "exc") else theirs
    assert_equal(mine, theirs, where=entry.name, **tol)
    if hasattr(theirs, "exc") or not grad or not entry.values:
        return
    pairs = [(m, t) for m, t in zip(_outs(mine), _outs(theirs), strict=True)
             if getattr(t, "requires_grad", False)]
    wrt = [(m, t) for m, t in zip(xs_m, xs_t, strict=True) if t.requires_grad]
    if not pairs or not wrt:
        return
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal(tuple(t.shape)).astype(_np_dtype(t)) for _, t in pairs]
    want = torch.autograd.grad([t for _, t in pairs], [t for _, t in wrt],
                               [torch.tensor(g) for g in gs], allow_unused=True)
    got = LOOK.autograd.grad([m for m, _ in pairs], [m for m, _ in wrt],
                             [LOOK.tensor(g) for g in gs], allow_unused=True)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            continue
        np.testing.assert_allclose(g.numpy(), w.numpy(), err_msg=f"gradient of input {i}",
                                   **tol)


def _np_dtype(t):
    return np.dtype(str(t.dtype).replace("torch.", ""))


def _for_samples(entry, check):
    @HYPO
    @given(sample=entry.samples(entry.dtypes))
    def go(sample):
        check(sample)
    go()


# -- spellings of the table's ops ------------------------------------------------------------

def _plain(entry, call):
    """Whether torch takes the entry's samples in this spelling (an entry's lambda may rename
    its arguments: `lambda x, lo: x.clamp(min=lo)`); asked of the entry's first sample
    (derandomized: the same at every collection)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sample = _first_sample(entry)
        xs, kw = _tensors(torch, sample, grad=False)
        try:
            call(torch, xs, kw)
        except TypeError:
            return False
        except Exception:                       # noqa: BLE001 (a value error is still a call)
            return True
    return True


def _first_sample(entry):
    got = []

    @settings(max_examples=1, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(sample=entry.samples(entry.dtypes))
    def grab(sample):
        got.append(sample)
    grab()
    return got[0]


def _fn(name):
    return lambda ns, xs, kw: getattr(ns, name)(*xs, **kw)


def _method(name):
    return lambda ns, xs, kw: getattr(xs[0], name)(*xs[1:], **kw)


FUNCTION_FORMS = sorted(n for n in METHODS if n not in FUNCTIONS and hasattr(torch, n)
                        and LOOK.provides(n) and n.isidentifier()
                        and not isinstance(getattr(torch, n), (torch.dtype, types.ModuleType))
                        and _plain(METHODS[n], _fn(n)))
METHOD_FORMS = sorted(n for n in FUNCTIONS if n not in METHODS and hasattr(torch.Tensor, n)
                      and _tensor_has(n) and _plain(FUNCTIONS[n], _method(n)))


@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.{n}") for n in FUNCTION_FORMS])
def test_function_form(name):
    entry = METHODS[name]
    _for_samples(entry, lambda s: _same_call(entry, s, _fn(name), grad=entry.grad))


@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.Tensor.{n}") for n in METHOD_FORMS])
def test_method_form(name):
    entry = FUNCTIONS[name]
    _for_samples(entry, lambda s: _same_call(entry, s, _method(name), grad=entry.grad))


def _inplace_ops():
    out = []
    for name in sorted(set(METHODS) | set(FUNCTIONS)):
        inplace = name + "_"
        if name.endswith("_") or not hasattr(torch.Tensor, inplace) or not _tensor_has(inplace):
            continue
        entry = METHODS.get(name) or FUNCTIONS[name]
        if _plain(entry, _method(name) if name in METHODS else _fn(name)):
            out.append(pytest.param(inplace, entry, id=f"torch.Tensor.{inplace}"))
    return out


# in-place ops whose job is to change the shape (the others keep it)
SHAPE_OPS = {"squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_"}


@pytest.mark.parametrize("name,entry", _inplace_ops())
def test_inplace(name, entry):
    def call(ns, xs, kw):
        target = xs[0].detach().clone()
        shape = tuple(target.shape)
        out = getattr(target, name)(*xs[1:], **kw)
        assert out is target, "an in-place method returns its tensor"
        if ns is torch and name not in SHAPE_OPS and tuple(target.shape) != shape:
            # torch resizes a one-element tensor to a broadcast result (deprecated, with a
            # warning); tinygradx refuses with an error naming the shapes, which this makes
            # the expected outcome
            raise RuntimeError(f"{name} resized its tensor from {shape}")
        return target
    _for_samples(entry, lambda s: _same_call(entry, s, call, grad=False))


# -- the Tensor's attributes and non-op methods ----------------------------------------------

def _x(ns, grad=False):
    t = ns.tensor(np.arange(6.0).reshape(2, 3) - 2.5)
    return t.requires_grad_(True) if grad else t


def _backward(ns):
    x = _x(ns, grad=True)
    (x * x).sum().backward()
    return x.grad


def _retain(ns):
    x = _x(ns, grad=True)
    h = x * 3
    before = h.retains_grad
    h.retain_grad()
    (h ** 2).sum().backward()
    return h.grad, (before, h.retains_grad)


def _hook(ns):
    x = _x(ns, grad=True)
    handle = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    handle.remove()
    (x * 2).sum().backward()
    return x.grad


def _data(ns):
    x = _x(ns, grad=True)
    d = x.data
    d[0, 0] = 7.0                           # writes through to x, without a graph
    return x.detach(), d.requires_grad


def _zero(ns):
    x = _x(ns)
    out = x.zero_()
    return out is x, x


ATTRIBUTES = {
    "dim": lambda ns: _x(ns).dim(), "ndim": lambda ns: _x(ns).ndim,
    "numel": lambda ns: _x(ns).numel(), "size": lambda ns: (tuple(_x(ns).size()),
                                                           _x(ns).size(1), _x(ns).size(-2)),
    "shape": lambda ns: tuple(_x(ns).shape),
    "dtype": lambda ns: str(_x(ns).dtype).replace("torch.", ""),
    "item": lambda ns: _x(ns)[1, 2].item(), "tolist": lambda ns: _x(ns).tolist(),
    "numpy": lambda ns: (_x(ns).numpy().tolist(), str(_x(ns).numpy().dtype)),
    "is_contiguous": lambda ns: (_x(ns).is_contiguous(), _x(ns).t().contiguous()
                                 .is_contiguous()),
    "is_cuda": lambda ns: _x(ns).is_cuda, "device": lambda ns: str(_x(ns).device),
    "requires_grad": lambda ns: (_x(ns).requires_grad, _x(ns, True).requires_grad),
    "requires_grad_": lambda ns: _x(ns).requires_grad_().requires_grad,
    "is_leaf": lambda ns: (_x(ns, True).is_leaf, (_x(ns, True) * 2).is_leaf),
    "grad": lambda ns: _x(ns, True).grad, "grad_fn": lambda ns: (
        _x(ns, True).grad_fn is None, (_x(ns, True) * 2).grad_fn is None),
    "backward": _backward, "retain_grad": _retain, "register_hook": _hook, "data": _data,
    "zero_": _zero, "name": lambda ns: _x(ns).name,
    "bitwise_left_shift": lambda ns: ns.tensor([1, 2, 3]).bitwise_left_shift(2),
    "bitwise_right_shift": lambda ns: ns.tensor([8, 9, -7]).bitwise_right_shift(1),
    "allclose": lambda ns: (_x(ns).allclose(_x(ns) + 1e-9), _x(ns).allclose(_x(ns) + 1)),
    "equal": lambda ns: (_x(ns).equal(_x(ns)), _x(ns).equal(_x(ns) * 2)),
    "element_size": lambda ns: [ns.ones(1, dtype=d).element_size()
                                for d in (ns.float32, ns.float64, ns.int64, ns.uint8)],
    "itemsize": lambda ns: [ns.ones(1, dtype=d).itemsize for d in (ns.float16, ns.int32)],
    "nbytes": lambda ns: _x(ns).nbytes, "ndimension": lambda ns: _x(ns).ndimension(),
    "nelement": lambda ns: _x(ns).nelement(), "is_cpu": lambda ns: _x(ns).is_cpu,
    "is_floating_point": lambda ns: (_x(ns).is_floating_point(),
                                     ns.ones(1, dtype=ns.long).is_floating_point()),
    "is_signed": lambda ns: [ns.ones(1, dtype=d).is_signed()
                             for d in (ns.float32, ns.int8, ns.uint8, ns.bool)],
    "is_inference": lambda ns: _x(ns).is_inference(),
    "is_nonzero": lambda ns: (ns.tensor([1.5]).is_nonzero(), ns.tensor(0).is_nonzero()),
    "is_same_size": lambda ns: (_x(ns).is_same_size(_x(ns)), _x(ns).is_same_size(ns.ones(3))),
    "retains_grad": lambda ns: _retain(ns)[1],
}


@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.Tensor.{n}")
                                  for n in ATTRIBUTES if _tensor_has(n)])
def test_attribute(name):
    assert_equal(run(ATTRIBUTES[name], LOOK), run(ATTRIBUTES[name], torch), where=name)


# -- the torch.* functions that are no op of the table ------------------------------------------

def _grad_mode(ns, name):
    x = ns.ones(2, requires_grad=True)
    if name == "set_grad_enabled":
        with ns.set_grad_enabled(False):
            inside = (x * 2).requires_grad, ns.is_grad_enabled()
    elif name == "enable_grad":
        with ns.no_grad():
            with ns.enable_grad():
                inside = (x * 2).requires_grad, ns.is_grad_enabled()
    else:
        with getattr(ns, name)():
            inside = (x * 2).requires_grad, ns.is_grad_enabled()
    return inside, (x * 2).requires_grad, ns.is_grad_enabled()


def _decorated(ns):
    @ns.no_grad()
    def f(x):
        return x * 2
    return f(ns.ones(1, requires_grad=True)).requires_grad


def _rng_state(ns):
    ns.manual_seed(3)
    state = ns.get_rng_state()
    a = ns.rand(4)
    ns.set_rng_state(state)
    return bool((ns.rand(4) == a).all())


def _generator(ns):
    g = ns.Generator().manual_seed(5)
    a = ns.rand(3, generator=g)
    g.manual_seed(5)
    return bool((ns.rand(3, generator=g) == a).all()), ns.rand(2, generator=g).shape


def _seed(ns):
    g = ns.manual_seed(11)                  # the default generator, as torch returns it
    a = ns.randn(5)
    ns.manual_seed(11)
    return bool((ns.randn(5) == a).all()), ns.rand(2, generator=g).shape


def _save_load(ns, tmp):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "state.pt")
        ns.save({"w": ns.arange(4.0), "step": 3, "name": "x", "nested": [ns.ones(2)]}, path)
        back = ns.load(path, map_location="cpu")
    return back


def _default_dtype(ns):
    ns.set_default_dtype(ns.float32)
    return str(ns.get_default_dtype()).replace("torch.", "").replace("<class 'numpy.", "") \
        .rstrip("'>"), str(ns.ones(1).dtype).replace("torch.", "")


FUNCTION_CALLS = {
    "no_grad": lambda ns: (_grad_mode(ns, "no_grad"), _decorated(ns)),
    "enable_grad": lambda ns: _grad_mode(ns, "enable_grad"),
    "set_grad_enabled": lambda ns: _grad_mode(ns, "set_grad_enabled"),
    "inference_mode": lambda ns: _grad_mode(ns, "inference_mode"),
    "is_grad_enabled": lambda ns: _grad_mode(ns, "no_grad"),
    "manual_seed": _seed, "get_rng_state": _rng_state, "set_rng_state": _rng_state,
    "Generator": _generator,
    "Size": lambda ns: (ns.Size([2, 3]) == (2, 3), ns.Size([2, 3]).numel(),
                        isinstance(ns.ones(2, 3).shape, ns.Size)),
    "Tensor": lambda ns: (tuple(ns.Tensor(2, 3).shape), str(ns.Tensor([1, 2]).dtype)
                          .replace("torch.", ""), isinstance(ns.ones(1), ns.Tensor)),
    "allclose": lambda ns: (ns.allclose(ns.ones(3), ns.ones(3) + 1e-9),
                            ns.allclose(ns.ones(3), ns.zeros(3))),
    "equal": lambda ns: (ns.equal(ns.ones(3), ns.ones(3)), ns.equal(ns.ones(3), ns.ones(2))),
    "finfo": lambda ns: [(ns.finfo(d).eps, ns.finfo(d).max, ns.finfo(d).tiny)
                         for d in (ns.float32, ns.float64, ns.float16)],
    "iinfo": lambda ns: [(ns.iinfo(d).max, ns.iinfo(d).min)
                         for d in (ns.int8, ns.int32, ns.int64, ns.uint8)],
    "is_tensor": lambda ns: (ns.is_tensor(ns.ones(1)), ns.is_tensor([1.0])),
    "is_floating_point": lambda ns: (ns.is_floating_point(ns.ones(1)),
                                     ns.is_floating_point(ns.ones(1, dtype=ns.long))),
    "numel": lambda ns: ns.numel(ns.ones(2, 3)),
    "get_default_dtype": _default_dtype, "set_default_dtype": _default_dtype,
    "device": lambda ns: (ns.device("cpu").type, str(ns.ones(1, device=ns.device("cpu"))
                                                      .device)),
    "save": lambda ns: _save_load(ns, None), "load": lambda ns: _save_load(ns, None),
    "is_inference": lambda ns: ns.is_inference(ns.ones(1)),
    "is_nonzero": lambda ns: (ns.is_nonzero(ns.tensor([2.0])), ns.is_nonzero(ns.tensor(0.0))),
}
for _dtype in ("float32", "float", "float64", "double", "float16", "half", "int64", "long",
               "int32", "int", "int16", "short", "int8", "uint8", "bool", "uint16", "uint32",
               "uint64"):
    FUNCTION_CALLS[_dtype] = (lambda name: lambda ns: str(
        ns.zeros(2, dtype=getattr(ns, name)).dtype).replace("torch.", ""))(_dtype)


@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.{n}") for n in FUNCTION_CALLS
                                  if LOOK.provides(n)])
def test_function(name):
    assert_equal(run(FUNCTION_CALLS[name], LOOK), run(FUNCTION_CALLS[name], torch), where=name)

