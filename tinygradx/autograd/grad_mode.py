"""torch's other switches of graph recording, next to autograd's no_grad / enable_grad:
`set_grad_enabled(mode)` (a call that takes effect at once, and a context manager and
decorator that put the previous mode back) and `inference_mode(mode=True)` (as no_grad:
tinygradx has no separate inference tensors); and torch's forms of anomaly detection,
`detect_anomaly(check_nan=True)` and `set_detect_anomaly(mode, check_nan=True)`, over the core's
switch.
"""
from __future__ import annotations

import functools

from ..core.node import STATE


def _check_mode(name, mode):
    if not isinstance(mode, bool):
        raise TypeError(f"{name}: mode must be True or False, got {mode!r}")
    return mode


class set_grad_enabled:  # lower case: torch's name (a class, as torch's)
    """Turn graph recording on (True) or off (False), as torch.set_grad_enabled.

    Called on its own it takes effect at once and stays (`tgx.set_grad_enabled(False)`);
    `with tgx.set_grad_enabled(mode):` restores the mode of before when the block ends, and
    `@tgx.set_grad_enabled(mode)` runs each call of the function under that mode.
    """

    def __init__(self, mode):
        self.mode = _check_mode("set_grad_enabled", mode)
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = self.mode

    def __enter__(self):
        STATE.grad_enabled = self.mode
        return None

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False

    def __call__(self, fn):
        # as a decorator it changes nothing now, only during each call
        STATE.grad_enabled = self.prev

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with _Mode(self.mode):
                return fn(*args, **kwargs)
        return run


class _Mode:
    """Recording set to `mode` inside the block, the previous mode after it."""

    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.prev, STATE.grad_enabled = STATE.grad_enabled, self.mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False


class inference_mode:  # lower case: torch's name
    """torch.inference_mode: here the same as no_grad (mode=True) or nothing (mode=False).

    torch also marks the tensors made inside as inference tensors, which autograd later
    refuses; tinygradx has no such tensors, so code that runs under torch runs here
    unchanged. A context manager and a decorator, with or without the call:
    `@tgx.inference_mode()` and `@tgx.inference_mode` alike.
    """

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):      # @inference_mode, no call
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = _check_mode("inference_mode", mode)
        self.prev = []

    def __enter__(self):
        self.prev.append(STATE.grad_enabled)
        if self.mode:
            STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with inference_mode(self.mode):
                return fn(*args, **kwargs)
        return run


class detect_anomaly:  # lower case: torch's name
    """torch.autograd.detect_anomaly(check_nan=True): raise at the first NaN/Inf an op produces,
    forward or backward, naming the op, its module path and the line that made it (the core's
    anomaly detection). A context manager, as PyTorch's (not a decorator). check_nan=False
    checks nothing here (PyTorch then only keeps tracebacks for its error messages)."""

    def __init__(self, check_nan=True):
        self.check_nan = _check_mode("detect_anomaly: check_nan", check_nan)
        self.prev = []

    def __enter__(self):
        self.prev.append(STATE.anomaly)
        STATE.anomaly = self.check_nan or STATE.anomaly
        STATE.refresh()

    def __exit__(self, *exc):
        STATE.anomaly = self.prev.pop()
        STATE.refresh()
        return False

    def __call__(self, *args, **kwargs):
        raise TypeError("detect_anomaly: use it as a context manager (with detect_anomaly(): "
                        "...), not as a decorator or a function, as PyTorch's")


class set_detect_anomaly:  # lower case: torch's name
    """torch.autograd.set_detect_anomaly(mode, check_nan=True): anomaly detection on or off, at
    once as a call, for the block as `with` (the mode before comes back)."""

    def __init__(self, mode, check_nan=True):
        mode = _check_mode("set_detect_anomaly", mode)
        check_nan = _check_mode("set_detect_anomaly: check_nan", check_nan)
        self.prev = STATE.anomaly
        STATE.anomaly = mode and check_nan
        STATE.refresh()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        STATE.anomaly = self.prev
        STATE.refresh()
        return False
