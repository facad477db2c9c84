"""The optimizer base class: parameter groups, their checks, `step`/`zero_grad`, and the
optimizer's state dict; `SGD` (sgd.py) and `Adam`/`AdamW` (adam.py) subclass it and write only
their update. Re-exported by tinygradx.optim (use `tgx.optim.Optimizer`).

Parameter groups work as in PyTorch: pass a list of dicts, each with 'params' and any
hyperparameters that differ from the defaults, e.g. to keep biases, LayerNorm and embeddings out
of weight decay::

    opt = AdamW([{"params": decay, "weight_decay": 0.1},
                 {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)

`Optimizer.state_dict` holds only numpy arrays, Python numbers, strings and lists/dicts of them
(parameters are named by "group.position", never by id), so it can be written with `np.savez` +
JSON and read back with ``allow_pickle=False``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..tensor import Tensor

__all__ = ["Optimizer"]


def as_scalar(v):
    """0-d arrays (what np.load gives back for a saved number) become Python numbers."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses implement `_update_group`.

    `param_groups` is a list of dicts: 'params' (a list of Tensors) plus every hyperparameter.
    `state` maps a parameter (the Tensor object) to a dict of its buffers (numpy arrays, ints).
    """

    # names of the per-parameter state entries a subclass keeps (checked by load_state_dict)
    _state_keys: tuple = ()
    _array_keys: tuple = ()  # the state entries that are arrays shaped like the parameter

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self.state = {}
        self._scratch = {}  # dtype -> flat work buffer shared by all parameters (not state)
        if isinstance(params, Tensor):
            raise TypeError(f"{self._name()}: params must be an iterable of Tensors or of dicts "
                            f"(parameter groups), got a single Tensor; wrap it in a list")
        if isinstance(params, dict):
            params = [params]
        groups = list(params)
        if not groups:
            raise ValueError(f"{self._name()}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)
        if not any(g["params"] for g in self.param_groups):
            raise ValueError(f"{self._name()}: got an empty parameter list (every group is "
                             f"empty)")

    def _name(self):
        return type(self).__name__

    # -- groups and validation -------------------------------------------------------------
    def add_param_group(self, group):
        """Add a dict with 'params' (Tensors) and hyperparameters; missing ones get defaults."""
        name = self._name()
        if not isinstance(group, dict):
            raise TypeError(f"{name}: a parameter group must be a dict with 'params', got "
                            f"{type(group).__name__} (don't mix Tensors and dicts)")
        if "params" not in group:
            raise ValueError(f"{name}: a parameter group needs a 'params' entry, got keys "
                             f"{sorted(group)}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        # An empty group is allowed, as in PyTorch (nanoGPT's no-decay group may be empty for a
        # model without biases); only an optimizer with no parameters at all is refused.
        gi = len(self.param_groups)
        for i, p in enumerate(params):
            where = f"parameter {i} of group {gi}"
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: {where} is a {type(p).__name__}, not a Tensor")
            if p._data.dtype.kind != "f":
                raise TypeError(f"{name}: {where} (shape {p.shape}) has dtype {p.dtype}; only "
                                f"floating-point tensors can be optimized")
            # requires_grad=False is allowed, as in PyTorch: a frozen tensor keeps grad None,
            # and step() skips a parameter whose grad is None
            if not p.is_leaf:
                raise ValueError(f"{name}: {where} (shape {p.shape}) is not a leaf tensor (it "
                                 f"was computed by an op); optimize the leaf it came from")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        local = set()
        for i, p in enumerate(params):
            if id(p) in seen or id(p) in local:
                raise ValueError(f"{name}: parameter {i} of group {gi} (shape {p.shape}) "
                                 f"appears more than once (in this group or an earlier one); "
                                 f"each parameter may belong to one group only, once")
            local.add(id(p))
        new = {k: v for k, v in self.defaults.items()}
        new.update({k: v for k, v in group.items() if k != "params"})
        self._check_hyper(new, gi)
        new["params"] = params
        self.param_groups.append(new)

    def _check_hyper(self, group, gi):
        """Raise a ValueError naming the optimizer, group and value for a bad hyperparameter."""
        name, where = self._name(), f"(group {gi})"
        lr = group.get("lr")
        if not isinstance(lr, numbers.Real) or isinstance(lr, bool) or not lr >= 0:
            raise ValueError(f"{name}: invalid learning rate lr={lr!r} {where}; must be a "
                             f"number >= 0")
        wd = group.get("weight_decay", 0)
        if not isinstance(wd, numbers.Real) or not wd >= 0:
            raise ValueError(f"{name}: invalid weight_decay={wd!r} {where}; must be >= 0")

    def _check_float(self, group, key, gi, lo, hi, lo_open=False, hi_open=True):
        v = group[key]
        ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and \
            (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
        if not ok:
            rng = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
            raise ValueError(f"{self._name()}: invalid {key}={v!r} (group {gi}); must be in "
                             f"{rng}")

    # -- the training-loop API -------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Forget the gradients: drop them (default, frees memory) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    def step(self, closure=None):
        """Update every parameter that has a gradient; parameters with grad None are skipped.

        `closure`, if given, is called first (it should recompute the loss and call backward)
        and its return value is returned, as in PyTorch.
        """
        loss = closure() if closure is not None else None
        for gi, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                if p.grad is not None and not p._data.flags.writeable:
                    raise ValueError(
                        f"{self._name()}.step: parameter {i} of group {gi} (shape {p.shape}) "
                        f"is read-only (a memory-mapped file opened with mmap_mode='r', or "
                        f"setflags(write=False)); give the model a writable copy, e.g. "
                        f"p.data = tgx.tensor(p.detach().numpy()) under no_grad()")
            self._update_group(group)
        return loss

    def _update_group(self, group):
        raise NotImplementedError

    def _work(self, p, k=1):
        """k scratch arrays shaped like p, views into one buffer reused across parameters."""
        n, dt = p._data.size, p._data.dtype
        buf = self._scratch.get(dt)
        if buf is None or buf.shape[1] < n or buf.shape[0] < k:
            rows = max(k, 0 if buf is None else buf.shape[0])
            cols = max(n, 0 if buf is None else buf.shape[1])
            buf = self._scratch[dt] = np.empty((rows, cols), dt)
        return [buf[i, :n].reshape(p._data.shape) for i in range(k)]

    @staticmethod
    def _grad_of(p):
        g = p.grad._data if isinstance(p.grad, Tensor) else np.asarray(p.grad)
        if g.shape != p._data.shape:
            raise ValueError(f"optimizer step: a parameter of shape {p.shape} has a gradient "
                             f"of shape {g.shape}")
        return g

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self):
        """A checkpointable copy of the optimizer: hyperparameters and buffers.

        ``{"optimizer": class name,
           "param_groups": [{hyperparameters..., "param_shapes": [[...], ...]}, ...],
           "state": {"g.i": {"step": int, buffer name: array, ...}, ...}}``

        Leaves are numpy arrays (copies), Python numbers and strings; tuples become lists.
        Parameter i of group g is named "g.i" (its position), so the dict is valid for any
        optimizer built over parameters of the same shapes in the same order.
        """
        groups, state = [], {}
        for gi, group in enumerate(self.param_groups):
            d = {}
            for k, v in group.items():
                if k == "params":
                    continue
                d[k] = list(v) if isinstance(v, tuple) else v
            d["param_shapes"] = [list(p.shape) for p in group["params"]]
            groups.append(d)
            for i, p in enumerate(group["params"]):
                st = self.state.get(p)
                if st:
                    state[f"{gi}.{i}"] = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                          for k, v in st.items()}
        return {"optimizer": self._name(), "param_groups": groups, "state": state}

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and buffers saved by `state_dict` (maybe via npz + JSON).

        The groups must match this optimizer's in number, parameter count and shapes; any
        mismatch is a ValueError naming the group, position and shapes. Nothing is changed
        unless the whole dict is valid. Scalars may come back as 0-d arrays, lists as arrays.
        """
        name = self._name()
        for key in ("param_groups", "state"):
            if key not in state_dict:
                raise ValueError(f"{name}.load_state_dict: missing key {key!r}; got keys "
                                 f"{sorted(state_dict)}")
        saved_name = as_scalar(state_dict.get("optimizer", name))
        if saved_name != name:
            raise ValueError(f"{name}.load_state_dict: the state dict was saved from a "
                             f"{saved_name}, not a {name}")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state dict has {len(saved_groups)} "
                             f"parameter groups, this optimizer has {len(self.param_groups)}")
        new_groups = []
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups, strict=True)):
            params = group["params"]
            shapes = saved.get("param_shapes")
            if shapes is None:
                raise ValueError(f"{name}.load_state_dict: group {gi} has no 'param_shapes'")
            shapes = [tuple(int(n) for n in np.asarray(s).reshape(-1)) for s in shapes]
            if len(shapes) != len(params):
                raise ValueError(f"{name}.load_state_dict: group {gi} has {len(shapes)} "
                                 f"parameters in the state dict, {len(params)} here")
            for i, (s, p) in enumerate(zip(shapes, params, strict=True)):
                if s != p.shape:
                    raise ValueError(f"{name}.load_state_dict: parameter {i} of group {gi} has "
                                     f"shape {s} in the state dict but {p.shape} here")
            new = {}
            for k, v in saved.items():
                if k in ("param_shapes", "params"):  # the parameters themselves stay ours
                    continue
                v = as_scalar(v)
                if isinstance(group.get(k), tuple):  # betas: JSON and npz turn tuples into lists
                    v = tuple(as_scalar(x) for x in v)
                new[k] = v
            merged = {**{k: v for k, v in group.items() if k != "params"}, **new}
            self._check_hyper(merged, gi)
            new_groups.append(merged)

        positions = {f"{gi}.{i}": p for gi, g in enumerate(self.param_groups)
                     for i, p in enumerate(g["params"])}
        new_state = {}
        for key, st in state_dict["state"].items():
            p = positions.get(str(key))
            if p is None:
                raise ValueError(f"{name}.load_state_dict: state for parameter {key!r}, which "
                                 f"does not exist here (names are 'group.position')")
            missing = [k for k in self._state_keys if k not in st]
            if missing:
                raise ValueError(f"{name}.load_state_dict: state of parameter {key!r} lacks "
                                 f"{missing}; it has {sorted(st)}")
            entry = {}
            for k, v in st.items():
                if isinstance(v, np.ndarray) and v.ndim > 0 or k in self._array_keys:
                    arr = np.asarray(v)
                    if arr.shape != p.shape:
                        raise ValueError(f"{name}.load_state_dict: {k!r} of parameter {key!r} "
                                         f"has shape {arr.shape}, the parameter has {p.shape}")
                    # a fresh contiguous copy in the parameter's dtype: updates run in place
                    entry[k] = np.array(arr, dtype=p._data.dtype, copy=True, order="C")
                else:
                    entry[k] = as_scalar(v)
            new_state[p] = entry

        for group, merged in zip(self.param_groups, new_groups, strict=True):
            group.update(merged)
        self.state = new_state

    def __repr__(self):
        lines = [f"{self._name()} ("]
        for gi, g in enumerate(self.param_groups):
            hyper = ", ".join(f"{k}={v}" for k, v in g.items() if k != "params")
            n = sum(p._data.size for p in g["params"])
            lines.append(f"  group {gi}: {len(g['params'])} tensors, {n:,} values; {hyper}")
        return "\n".join(lines + [")"])
