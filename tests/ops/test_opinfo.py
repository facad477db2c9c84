"""Every entry of the op-info table (tests/opinfo.py) against numpy, torch and gradcheck.

    test_numpy / test_torch / test_gradcheck   hypothesis-drawn samples of each entry
    test_fixed                                 each entry's hand-picked samples (known
                                               discrepancies are strict xfails)
    test_api_coverage                          every op listed in docs/api.md has an entry

Examples per entry: OPINFO_EXAMPLES (default 8), derandomized so CI runs are repeatable.
"""
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tinygradx as tgx
from tinygradx import Tensor

from opinfo import OPS, NOT_OPS, torch

EXAMPLES = int(os.environ.get("OPINFO_EXAMPLES", "8"))
HYPO = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
CHECKS = ("numpy", "torch", "gradcheck", "gradgradcheck")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------------------------------------
# the three checks
# ------------------------------------------------------------------------------------------

def _outs(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _np(x):
    if isinstance(x, Tensor):
        return x.detach().numpy()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _tgx_kwargs(kwargs):
    return {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _torch_kwargs(kwargs):
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _tol(entry, dtype):
    if np.dtype(dtype) in (np.float32, np.float16):
        return dict(atol=entry.atol32, rtol=entry.rtol32)
    return dict(atol=entry.atol, rtol=entry.rtol)


def _call_tgx(entry, sample, grad=True):
    """The op on Tensors that share the sample's arrays (layouts kept); float ones need grad."""
    saved = [a.copy() for a in sample.inputs]
    xs = [Tensor(a, requires_grad=grad and entry.grad and a.dtype.kind == "f")
          for a in sample.inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = entry.op(*xs, **_tgx_kwargs(sample.kwargs))
    for a, b in zip(sample.inputs, saved, strict=True):
        np.testing.assert_array_equal(a, b, err_msg="the op changed its input in place")
    return xs, _outs(out)


def _compare(got, want, tol, what):
    got, want = _np(got), _np(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if got.dtype == np.bool_ or want.dtype == np.bool_:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   equal_nan=True, err_msg=what, **tol)


def check_numpy(entry, sample):
    _, outs = _call_tgx(entry, sample, grad=False)
    want = _outs(entry.ref(*[a.copy() for a in sample.inputs], **sample.kwargs))
    assert len(outs) == len(want), f"{len(outs)} outputs, numpy gave {len(want)}"
    dt = sample.inputs[0].dtype if sample.inputs else np.float32
    for i, (o, w) in enumerate(zip(outs, want, strict=True)):
        _compare(o, w, _tol(entry, dt), f"{entry.name} output {i} vs numpy")


def check_torch(entry, sample):
    xs, outs = _call_tgx(entry, sample)
    ts = [torch.tensor(a.copy(order="C"),
                       requires_grad=entry.grad and a.dtype.kind == "f") for a in sample.inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        touts = _outs(entry.torch_fn()(*ts, **_torch_kwargs(sample.kwargs)))
    assert len(outs) == len(touts), f"{len(outs)} outputs, torch gave {len(touts)}"
    for i, (o, t) in enumerate(zip(outs, touts, strict=True)):
        assert o.dtype == np.dtype(_np(t).dtype), (
            f"{entry.name} output {i}: dtype {o.dtype}, torch {t.dtype}")
        if entry.values:
            _compare(o, t, _tol(entry, o.dtype), f"{entry.name} output {i} vs torch")
        else:
            assert o.shape == tuple(t.shape)
    pairs = [(o, t) for o, t in zip(outs, touts, strict=True) if t.requires_grad]
    assert len(pairs) == sum(o.requires_grad for o in outs), "differentiable outputs differ"
    wrt = [(x, t) for x, t in zip(xs, ts, strict=True) if t.requires_grad]
    if not pairs or not wrt:
        return
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal(o.shape).astype(o.dtype) for o, _ in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tgx.grad([o for o, _ in pairs], [x for x, _ in wrt],
                       grad_outputs=[Tensor(g) for g in gs], allow_unused=True)
    want = torch.autograd.grad([t for _, t in pairs], [t for _, t in wrt],
                               grad_outputs=[torch.tensor(g) for g in gs], allow_unused=True)
    for i, ((x, _), g, w) in enumerate(zip(wrt, got, want, strict=True)):
        g = np.zeros(x.shape, x.dtype) if g is None else g.numpy()
        w = np.zeros(x.shape, x.dtype) if w is None else w.detach().numpy()
        assert g.dtype == x.dtype, f"gradient {i}: dtype {g.dtype}, input {x.dtype}"
        _compare(g, w, _tol(entry, x.dtype), f"{entry.name} gradient of input {i} vs torch")


def check_gradcheck(entry, sample):
    xs = [Tensor(a.astype(np.float64) if a.dtype.kind == "f" else a,
                 requires_grad=a.dtype.kind == "f") for a in sample.inputs]
    if not any(x.requires_grad for x in xs):
        return
    kwargs = _tgx_kwargs(sample.kwargs)
    n = sum(x.numel() for x in xs) * sum(o.numel() for o in _outs(entry.op(*xs, **kwargs)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert tgx.gradcheck(lambda *a: tuple(_outs(entry.op(*a, **kwargs))), tuple(xs),
                             atol=entry.grad_atol, rtol=entry.grad_rtol, fast_mode=n > 400)


def check_gradgradcheck(entry, sample):
    """Second derivatives: the recorded first derivative (create_graph=True) equals the
    ordinary one and its own gradient matches finite differences, in float64."""
    xs = [Tensor(a.astype(np.float64) if a.dtype.kind == "f" else a,
                 requires_grad=a.dtype.kind == "f") for a in sample.inputs]
    if not any(x.requires_grad for x in xs) or (entry.kink and entry.kink(sample)):
        return
    kwargs = _tgx_kwargs(sample.kwargs)
    outs = _outs(entry.op(*xs, **kwargs))
    if not any(o.requires_grad for o in outs):
        return
    n_in = sum(x.numel() for x in xs) + sum(o.numel() for o in outs)
    n = n_in * sum(x.numel() for x in xs if x.requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert tgx.gradgradcheck(lambda *a: tuple(_outs(entry.op(*a, **kwargs))), tuple(xs),
                                 atol=entry.grad_atol, rtol=entry.grad_rtol, fast_mode=n > 400)


RUN = {"numpy": check_numpy, "torch": check_torch, "gradcheck": check_gradcheck,
       "gradgradcheck": check_gradgradcheck}


def applies(entry, check):
    return {"numpy": entry.ref is not None, "torch": entry.torch_fn() is not None,
            "gradcheck": entry.grad and entry.gradcheck,
            "gradgradcheck": entry.grad and entry.gradcheck}[check]


def _needs_torch(check):
    if check == "torch" and torch is None:
        pytest.skip("torch is not installed")


# ------------------------------------------------------------------------------------------
# the tests
# ------------------------------------------------------------------------------------------

def _entries(check):
    return [pytest.param(e, id=e.name) for e in OPS if applies(e, check)]


def _random_test(check):
    @pytest.mark.parametrize("entry", _entries(check))
    def test(entry):
        _needs_torch(check)
        dtypes = (np.dtype(np.float64),) if check.startswith("grad") else entry.dtypes

        @HYPO
        @given(sample=entry.samples(dtypes))
        def run(sample):
            RUN[check](entry, sample)
        run()
    test.__name__ = f"test_{check}"
    return test


test_numpy = _random_test("numpy")
test_torch = _random_test("torch")
test_gradcheck = _random_test("gradcheck")
test_gradgradcheck = _random_test("gradgradcheck")


def _fixed_params():
    params = []
    for e in OPS:
        for s in e.fixed:
            for check in CHECKS:
                if not applies(e, check) or (s.only and check not in s.only):
                    continue
                marks = ([pytest.mark.xfail(strict=True, reason=s.xfail[check])]
                         if check in s.xfail else [])
                params.append(pytest.param(e, s, check, id=f"{e.name}-{s.desc}-{check}",
                                           marks=marks))
    return params


@pytest.mark.parametrize("entry,sample,check", _fixed_params())
def test_fixed(entry, sample, check):
    _needs_torch(check)
    RUN[check](entry, sample)


def test_xfails_name_checks_that_run():
    """An xfail on a check the entry does not run would never be seen: refuse it."""
    for e in OPS:
        for s in e.fixed:
            for check in s.xfail:
                assert check in CHECKS and applies(e, check), f"{e.name} {s.desc}: {check}"


def test_entry_names_are_unique():
    names = [e.name for e in OPS]
    assert len(names) == len(set(names))


# ------------------------------------------------------------------------------------------
# coverage: every op in docs/api.md has an entry
# ------------------------------------------------------------------------------------------

def api_op_names():
    """Qualified names ("tgx.x", "Tensor.x", "F.x") in api.md's tinygradx and functional
    sections: first column of each table, the methods column of the Tensor methods table;
    operators (`+ - * /`, `[...]`) are split into one name each."""
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read().split("## `tinygradx.nn`")[0]
    names, where = set(), None
    for line in text.splitlines():
        if line.startswith("#"):
            where = ("Tensor" if "`Tensor` methods" in line else
                     "F" if "functional" in line else "tgx")
            continue
        if not line.startswith("|") or line.startswith("|---") or where is None:
            continue
        cells = [c.strip() for c in line.replace("\\|", "\0").split("|")[1:-1]]
        if cells[0] in ("name", "group"):
            continue
        for span in re.findall(r"`([^`]*)`", cells[1] if where == "Tensor" else cells[0]):
            span = span.replace("\0", "|")
            if span.startswith("("):
                continue                  # a result, e.g. `(values, indices)`, not a name
            m = re.match(r"[A-Za-z_]\w*", span)
            for tok in ([m.group(0)] if m else span.split()):
                names.add(f"{where}.{tok}")
    return names


def test_api_coverage():
    listed = api_op_names()
    assert len(listed) > 100, f"parsed only {len(listed)} names from docs/api.md"
    covered = {c for e in OPS for c in e.covers()}
    missing = sorted(listed - covered - NOT_OPS)
    assert not missing, "public ops in docs/api.md without an op-info entry: " + ", ".join(
        missing)
    stale = sorted(NOT_OPS - listed)
    assert not stale, "NOT_OPS names that docs/api.md no longer lists: " + ", ".join(stale)
