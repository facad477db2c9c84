"""The differential harness: the same call on tinygradx and on real torch, held equal.

Every public API that carries a PyTorch name is checked here against torch itself (the `oracle`
extra, installed by `make test ORACLE=1` and CI): values, dtypes, shapes, and errors.

    from oracle import requires_torch, torch, same, both

    @requires_torch
    def test_collate_promotes_like_torch():
        same(lambda m: m.utils.data.default_collate([1, 2.5]))

`same(call)` runs `call(tgx_ns)` and `call(torch_ns)`, where each namespace is the library with
torch's names (`tinygradx.compat`'s look-alike on one side, `torch` on the other), and:
- torch raises -> tinygradx must raise too, with a clear error: one line, not empty, raised by
  tinygradx's own code (not from inside numpy or Python's internals);
- torch returns -> tinygradx returns the same structure: tensors with the same values (to
  atol/rtol), dtype and shape; numbers, strings, None, containers compared element by element.
`both(tgx_call, torch_call)` is the same with a call written for each side.
With `exact=True` both also hold the kinds to torch's: each container's type (a list is not a
tuple, an OrderedDict not a dict, a named tuple its own class, by name) and the error's class
(tinygradx's error is an instance of the built-in class torch's derives from: a ValueError for
a ValueError, a pickle.UnpicklingError for one; torch's AssertionErrors excepted, for which any
clear error will do).

Without torch, tests marked `requires_torch` skip with the reason.
"""
from __future__ import annotations

import os
import traceback

import numpy as np
import pytest

try:
    import torch
except ImportError:        # the oracle is optional: these tests then skip
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="torch (the test oracle) not "
                                                          "installed: make test ORACLE=1")

_OURS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d)
              + os.sep for d in ("tinygradx", "models"))


class Raised:
    """What a call raised, kept for comparison."""

    def __init__(self, exc):
        self.exc = exc

    def __repr__(self):
        return f"raised {type(self.exc).__name__}: {self.exc}"


def run(call, *args):
    """call(*args)'s value, or Raised(exception)."""
    try:
        return call(*args)
    except Exception as e:              # noqa: BLE001 (any error is an outcome to compare)
        return Raised(e)


def lookalike():
    """The torch look-alike namespace (tinygradx.compat's `torch`)."""
    from tinygradx.compat.lookalike import torch as namespace
    return namespace


def assert_clear(exc, *fragments):
    """exc is a clear error: one non-empty line holding every fragment, raised by tinygradx's own
    code (its innermost frame in tinygradx/ or models/), not deep inside numpy or Python."""
    msg = str(exc)
    assert msg.strip(), f"{type(exc).__name__} with an empty message"
    assert "\n" not in msg.strip(), f"a multi-line error: {msg!r}"
    for f in fragments:
        assert f in msg, f"{f!r} not in the error {msg!r}"
    frames = traceback.extract_tb(exc.__traceback__)
    assert frames, f"no traceback for {exc!r}"
    where = frames[-1].filename
    assert where.startswith(_OURS), (f"{type(exc).__name__}: {msg} was raised at {where}:"
                                     f"{frames[-1].lineno}, not by tinygradx's own code")


def to_numpy(x):
    """A tinygradx or torch tensor (or anything array-like) as a numpy array."""
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().numpy()
    return np.asarray(x)


def _is_tensor(x):
    from tinygradx import Tensor
    return isinstance(x, Tensor) or (torch is not None and isinstance(x, torch.Tensor))


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "").replace("tinygradx.", "")


def _builtin_base(exc):
    """The class of exc that tinygradx's error must share: the first of its classes defined by
    Python itself (builtins, or pickle's UnpicklingError), not by torch."""
    for cls in type(exc).__mro__:
        if cls.__module__ in ("builtins", "_pickle", "pickle"):
            return cls
    return Exception


def assert_equal(ours, theirs, atol=1e-6, rtol=1e-6, where="result", check_dtype=True, *,
                 exact=False):
    """ours (tinygradx) equals theirs (torch) in structure, values, dtypes and shapes (and
    with exact=True in container types and error classes: see the module docstring)."""
    if isinstance(theirs, Raised):
        assert isinstance(ours, Raised), f"{where}: torch {theirs!r}; tinygradx returned {ours!r}"
        assert_clear(ours.exc)
        base = _builtin_base(theirs.exc)
        assert not exact or base is AssertionError or isinstance(ours.exc, base), (
            f"{where}: tinygradx raised {type(ours.exc).__name__} ({ours.exc}), torch "
            f"{type(theirs.exc).__name__}, a {base.__name__} ({theirs.exc})")
        return
    assert not isinstance(ours, Raised), (
        f"{where}: tinygradx {ours!r}"
        + "".join(traceback.format_exception(ours.exc)[-3:])
        + f"; torch returned {theirs!r}")
    if _is_tensor(theirs):
        assert _is_tensor(ours), f"{where}: torch gave a tensor, tinygradx {type(ours).__name__}"
        a, b = to_numpy(ours), to_numpy(theirs)
        assert a.shape == b.shape, f"{where}: shape {a.shape}, torch {b.shape}"
        if check_dtype:
            assert _dtype_name(ours) == _dtype_name(theirs), (
                f"{where}: dtype {_dtype_name(ours)}, torch {_dtype_name(theirs)}")
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif exact and isinstance(theirs, (dict, list, tuple)) and \
            type(ours).__name__ != type(theirs).__name__:
        raise AssertionError(f"{where}: tinygradx gave a {type(ours).__name__}, torch a "
                             f"{type(theirs).__name__}")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{where}: torch gave a dict, tinygradx {type(ours)}"
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)}, torch {list(theirs)}"
        for k in theirs:
            assert_equal(ours[k], theirs[k], atol, rtol, f"{where}[{k!r}]", check_dtype,
                         exact=exact)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)), f"{where}: torch gave {type(theirs).__name__}, " \
                                                f"tinygradx {type(ours).__name__}"
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items, torch {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_equal(a, b, atol, rtol, f"{where}[{i}]", check_dtype, exact=exact)
    elif isinstance(theirs, np.ndarray):              # a numpy array passed through as it is
        assert isinstance(ours, np.ndarray), f"{where}: torch gave an ndarray, tinygradx " \
                                             f"{type(ours).__name__}"
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (
            f"{where}: {ours.dtype} {ours.shape}, torch {theirs.dtype} {theirs.shape}")
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(theirs, float) and np.isnan(theirs):
        assert isinstance(ours, float) and np.isnan(ours), f"{where}: {ours!r}, torch nan"
    elif isinstance(theirs, (bool, int, float, str, type(None))):
        assert type(ours) is type(theirs) and ours == theirs, (
            f"{where}: {ours!r} ({type(ours).__name__}), torch {theirs!r} "
            f"({type(theirs).__name__})")
    else:
        assert ours == theirs, f"{where}: {ours!r}, torch {theirs!r}"


def both(tgx_call, torch_call, atol=1e-6, rtol=1e-6, check_dtype=True, *, exact=False):
    """Run each call; hold tinygradx's outcome to torch's (see the module docstring). Returns
    (ours, theirs) for further checks."""
    theirs = run(torch_call)
    ours = run(tgx_call)
    assert_equal(ours, theirs, atol, rtol, check_dtype=check_dtype, exact=exact)
    return ours, theirs


def same(call, atol=1e-6, rtol=1e-6, check_dtype=True, *, exact=False):
    """both() with one call written against torch's names: call(namespace)."""
    return both(lambda: call(lookalike()), lambda: call(torch), atol, rtol, check_dtype,
                exact=exact)
