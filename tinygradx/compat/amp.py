"""torch.amp and torch.cuda.amp in the look-alike: mixed precision as PyTorch runs it on a
machine without a GPU.

A training script written for a GPU often carries a `GradScaler` and an `autocast` block, and
switches them off on the CPU itself (nanoGPT: `GradScaler(enabled=(dtype == 'float16'))`,
`nullcontext()` when `device_type == 'cpu'`). Both must import, build and run here as they do
under PyTorch on such a machine:

    GradScaler("cuda") (the default, and torch.cuda.amp.GradScaler)
        PyTorch warns that CUDA is not available and disables the scaler, so do we: scale(loss)
        is loss, step(opt) is opt.step(), get_scale() is 1.0.
    GradScaler("cpu")
        PyTorch scales on the CPU, and so do we: the loss times the scale (a power of two, so
        the gradients are the same numbers, exactly, unless they overflow), unscale_ divides the
        gradients back and looks for inf/NaN, step skips the update when it found one, and
        update() halves the scale then (or doubles it after `growth_interval` clean steps).
    autocast(device_type, dtype, enabled)
        "cuda" without a GPU: PyTorch warns and disables it; so do we. enabled=False: nothing.
        "cpu", enabled: PyTorch would run matrix products in bfloat16; tinygradx has no
        bfloat16, so the block runs in the tensors' own dtype, and says so once (a warning):
        the numbers are float32's, closer to exact than PyTorch's.
"""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

import tinygradx

_DEVICES = ("cpu", "cuda", "mps", "xpu", "hpu", "xla", "mtia", "meta")
_SCALER_STAGES = ("ready", "unscaled", "stepped")


class GradScaler:
    """torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True); see the module docstring."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if device not in _DEVICES:
            raise ValueError(f"torch.amp.GradScaler: unknown device {device!r} "
                             f"(expected one of {', '.join(_DEVICES)})")
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device != "cpu":
            warnings.warn(f"torch.amp.GradScaler is enabled for {device!r}, but tinygradx "
                          f"computes on the CPU: disabling it (as PyTorch does without a "
                          f"GPU)", UserWarning, stacklevel=2 + (type(self) is not GradScaler))
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: growth_factor must be > 1.0, got "
                                 f"{growth_factor}")
            if not 0.0 < backoff_factor < 1.0:
                raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got "
                                 f"{backoff_factor}")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}           # id(optimizer) -> {"stage": ..., "found_inf": ...}

    # -- what PyTorch's scaler answers ---------------------------------------------------------

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale (1.0 when disabled, as PyTorch)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    # -- the training step ---------------------------------------------------------------------

    def scale(self, outputs):
        """outputs (a tensor, or lists/tuples of them) times the scale; as they are when
        disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, tinygradx.Tensor):
            # a power of two: the product is exact in every float dtype (unless it overflows)
            return outputs * float(self._scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of "
                         f"Tensors, got {type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": "ready",
                                                              "found_inf": False})

    def unscale_(self, optimizer):
        """Divide the gradients of `optimizer`'s parameters by the scale, in place, and note
        whether any is inf or NaN (then step() skips the update)."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == "unscaled":
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] == "stepped":
            raise RuntimeError("unscale_() is being called after step().")
        # PyTorch multiplies by the reciprocal computed in float64, then cast to float32
        inv = float(np.float32(1.0 / self._scale))
        found = False
        with tinygradx.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad
                    g.mul_(inv)
                    found = found or not bool(np.isfinite(g.numpy()).all())
        state["found_inf"] = found
        state["stage"] = "unscaled"

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(), unless unscale_ found inf/NaN gradients (then the step is
        skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        state = self._state(optimizer)
        if state["stage"] == "stepped":
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == "ready":
            self.unscale_(optimizer)
        state["stage"] = "stepped"
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """The next scale: new_scale when given; else backed off after a skipped step, grown
        after growth_interval clean steps in a row."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = new_scale.item() if isinstance(new_scale, tinygradx.Tensor) else new_scale
            self._scale = float(value)
        else:
            found = any(s["found_inf"] for s in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if math.isfinite(np.float32(grown)):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    # -- checkpoints ---------------------------------------------------------------------------

    def state_dict(self):
        """PyTorch's keys; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class CudaGradScaler(GradScaler):
    """torch.cuda.amp.GradScaler(...): torch.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


_WARNED_CPU = []


class autocast:  # noqa: N801  (PyTorch's class name)
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager and a decorator that changes no dtype here (see the module docstring)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"torch.autocast: device_type must be a string such as 'cpu' or "
                             f"'cuda', got {type(device_type).__name__}")
        if device_type not in _DEVICES:
            raise RuntimeError(f"torch.autocast: unsupported device_type {device_type!r} "
                               f"(expected one of {', '.join(_DEVICES)})")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = bool(enabled)
        if self._enabled and device_type != "cpu":
            warnings.warn(f"torch.autocast(device_type={device_type!r}): tinygradx computes on "
                          f"the CPU; disabling autocast (as PyTorch does without the device)",
                          UserWarning, stacklevel=2 + (type(self) is not autocast))
            self._enabled = False
        if self._enabled and not _WARNED_CPU:
            _WARNED_CPU.append(True)
            warnings.warn("torch.autocast(device_type='cpu'): tinygradx has no mixed "
                          "precision (no bfloat16); the ops inside run in their tensors' own "
                          "dtype, where PyTorch would compute matrix products in lower "
                          "precision", UserWarning, stacklevel=2 + (type(self) is not autocast))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


class cuda_autocast(autocast):  # noqa: N801
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class cpu_autocast(autocast):  # noqa: N801
    """torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def is_autocast_available(device_type):
    """torch.amp.is_autocast_available: the CPU's autocast exists (and changes nothing here)."""
    return device_type == "cpu"


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """torch.amp.custom_fwd: without autocast there is nothing to cast; the function itself."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type="cuda"):
    """torch.amp.custom_bwd: the function itself (see custom_fwd)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
