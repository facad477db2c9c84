"""The optimizer base class, PyTorch's `torch.optim.Optimizer`: parameter groups, `step` /
`zero_grad`, the state dict and the hooks. Each optimizer (sgd.py, adam.py, adaptive.py,
adam_variants.py, second_order.py) subclasses it and writes only its update, on the numpy
arrays behind the parameters. Re-exported by tinygradx.optim (`tgx.optim.Optimizer`).

Parameter groups work as in PyTorch: pass a list of dicts, each with 'params' and any
hyperparameters that differ from the defaults, e.g. to keep biases, LayerNorm and embeddings out
of weight decay::

    opt = AdamW([{"params": decay, "weight_decay": 0.1},
                 {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)

`params` may also be `model.named_parameters()` (then each group holds 'param_names'). The
group dicts are the ones given, completed with the defaults in place, as PyTorch's.

`state[p]` is a dict of Tensors per parameter (a 0-d float32 'step' and the buffers, PyTorch's
names), created at the parameter's first update. `state_dict()` is PyTorch's structure:
``{"state": {index: state}, "param_groups": [{hyperparameters..., "params": [index, ...]}]}``
with the parameters numbered across the groups in order, the state's Tensors themselves (not
copies, as PyTorch's). `load_state_dict` takes that structure (from PyTorch itself too, its
tensors as Tensors or numpy arrays; JSON's string indices and lists for tuples are read back),
and the layout older tinygradx versions wrote ('param_shapes', "group.position" names), so
their checkpoints still resume. It checks every entry before it changes anything.
"""
from __future__ import annotations

import numbers
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

from ..autograd import enable_grad
from ..tensor import Tensor

__all__ = ["Optimizer"]


def as_scalar(v):
    """0-d arrays (what np.load gives back for a saved number) become Python numbers."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    return v


class RemovableHandle:
    """What register_*_hook returns: `handle.remove()` takes the hook out."""

    def __init__(self, hooks, key):
        self._hooks, self.id = hooks, key

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def hyper_value(x):
    """A hyperparameter's number: a 0-d Tensor's item, else the number itself."""
    return x.item() if isinstance(x, Tensor) else x


def _is_number(v):
    return (isinstance(v, numbers.Real) and not isinstance(v, bool)) or (
        isinstance(v, Tensor) and v.ndim == 0 and v.dtype.kind == "f")


class Optimizer:
    """Holds parameter groups and per-parameter state; subclasses implement `_update_group`
    (one group's update, in place on the arrays) and list their state entries:
    `_state_keys` (every one a parameter's state holds), `_array_keys` (those shaped like the
    parameter)."""

    _state_keys: tuple = ()
    _array_keys: tuple = ()

    def __init__(self, params, defaults):
        name = self._name()
        self.defaults = dict(defaults)
        self.state = defaultdict(dict)
        self.param_groups = []
        self._scratch = {}       # dtype -> a work buffer shared by all parameters, and
                                 # (dtype, shape, k) -> views of it (not state)
        self._hooks = {k: OrderedDict() for k in ("step_pre", "step_post", "sd_pre", "sd_post",
                                                  "load_pre", "load_post")}
        self._opt_called = False
        for key in ("differentiable", "capturable"):
            if self.defaults.get(key):
                raise NotImplementedError(
                    f"{name}: {key}=True is not supported: tinygradx's optimizers update the "
                    f"parameters' arrays outside the graph, on the CPU (leave it False)")
        if self.defaults.get("fused") and self.defaults.get("foreach"):
            raise RuntimeError(f"{name}: fused and foreach cannot both be True (as in PyTorch)")
        if isinstance(params, Tensor):
            raise TypeError(f"{name}: params must be an iterable of Tensors or of dicts "
                            f"(parameter groups), got a single Tensor; wrap it in a list")
        if isinstance(params, dict):
            raise TypeError(f"{name}: params must be an iterable of Tensors or of dicts, got a "
                            f"dict; pass a list of parameter groups: [{{'params': ...}}]")
        groups = list(params)
        if not groups:
            raise ValueError(f"{name}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def _name(self):
        return type(self).__name__

    # -- groups and validation -------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a dict with 'params' (Tensors, or (name, Tensor) pairs) and hyperparameters; the
        missing ones are filled in from the defaults, in the dict itself (as PyTorch)."""
        name, gi = self._name(), len(self.param_groups)
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}: a parameter group must be a dict with 'params', got "
                            f"{type(param_group).__name__}")
        if "params" not in param_group:
            raise KeyError(f"{name}: a parameter group needs a 'params' entry, got keys "
                           f"{sorted(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(f"{name}: the parameters of a group must be in an ordered "
                            f"collection (a list), not a set, whose order changes between runs")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names and len(names) != len(params):
            raise ValueError(f"{name}: give every parameter of group {gi} a name, or none")
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        for i, p in enumerate(params):
            where = f"parameter {i} of group {gi}"
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: {where} is a {type(p).__name__}, not a Tensor")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError(f"{name}: {where} (shape {p.shape}) is not a leaf tensor (it "
                                 f"was computed by an op); optimize the leaf it came from")
        param_group["params"] = params
        if names:
            param_group["param_names"] = names
        for key, default in self.defaults.items():
            param_group.setdefault(key, default)
        self._check_hyper(param_group, gi)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(f"{name}: group {gi} holds a parameter twice; each step updates it "
                          f"twice (as in PyTorch, which will refuse it in the future)",
                          UserWarning, stacklevel=3)
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in param_group):
                raise ValueError(f"{name}: give every parameter group names, or none")
            if {id(p) for p in g["params"]} & {id(p) for p in params}:
                raise ValueError(f"{name}: a parameter of group {gi} is already in an earlier "
                                 f"group; each parameter may belong to one group only")
        self.param_groups.append(param_group)

    def _check_hyper(self, group, gi):
        """Raise a ValueError naming the optimizer, group and value for a bad hyperparameter."""
        lr = group.get("lr")
        if not _is_number(lr) or not hyper_value(lr) >= 0:
            raise ValueError(f"{self._name()}: invalid learning rate lr={lr!r} (group {gi}); "
                             f"must be a number >= 0")
        if "weight_decay" in group:
            self._check_float(group, "weight_decay", gi, 0, np.inf)

    def _check_float(self, group, key, gi, lo, hi, lo_open=False, hi_open=True):
        v = group[key]
        ok = _is_number(v) and (hyper_value(v) > lo if lo_open else hyper_value(v) >= lo) and \
            (hyper_value(v) < hi if hi_open else hyper_value(v) <= hi)
        if not ok:
            rng = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
            raise ValueError(f"{self._name()}: invalid {key}={v!r} (group {gi}); must be in "
                             f"{rng}")

    def _check_pair(self, group, key, gi, names, ranges):
        """A pair of numbers (betas, etas, step_sizes): a tuple (lists, as JSON gives them back,
        too), each in its [lo, hi) range, named in the error (beta1, beta2)."""
        v = group[key]
        if isinstance(v, list):
            v = group[key] = tuple(v)
        if not isinstance(v, tuple) or len(v) != 2:
            raise ValueError(f"{self._name()}: {key} must be a pair ({', '.join(names)}), got "
                             f"{v!r} (group {gi})")
        for b, n, (lo, hi) in zip(v, names, ranges, strict=True):
            if not _is_number(b) or not lo <= hyper_value(b) < hi:
                raise ValueError(f"{self._name()}: invalid {n}={b!r} in {key}={v!r} (group "
                                 f"{gi}); must be in [{lo}, {hi})")

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

        `closure`, if given, is called first with gradients on (it recomputes the loss and
        calls backward) and its value is returned, as in PyTorch.
        """
        args, kwargs = self._run_pre_hooks((closure,), {})
        closure = (args + (None,))[0] if "closure" not in kwargs else kwargs["closure"]
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._check_writable()
        for group in self.param_groups:
            self._update_group(group)
        self._opt_called = True
        for hook in list(self._hooks["step_post"].values()):
            hook(self, args, kwargs)
        return loss

    def _check_writable(self):
        """A parameter about to be updated must be writable (numpy would refuse half-way)."""
        for gi, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                if p.grad is not None and not p._data.flags.writeable:
                    raise ValueError(
                        f"{self._name()}.step: parameter {i} of group {gi} (shape {p.shape}) "
                        f"is read-only (a memory-mapped file opened with mmap_mode='r', or "
                        f"setflags(write=False)); give the model a writable copy, e.g. "
                        f"p.data = tgx.tensor(p.detach().numpy()) under no_grad()")

    def _run_pre_hooks(self, args, kwargs):
        for hook in list(self._hooks["step_pre"].values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"{self._name()}: a step pre-hook must return None or "
                                       f"(args, kwargs), got {out!r}")
                args, kwargs = out
        return args, kwargs

    def _update_group(self, group):
        raise NotImplementedError(f"{self._name()} must define _update_group")

    def _params_with_grad(self, group):
        """(p, its gradient array) for the parameters of group that have a gradient."""
        for p in group["params"]:
            if p.grad is not None:
                yield p, self._grad_of(p)

    def _work(self, p, k=1):
        """k scratch arrays shaped like p, views into one buffer reused across parameters
        (the views of each shape made once per buffer: a step asks for them per parameter)."""
        shape, dt = p._data.shape, p._data.dtype
        views = self._scratch.get((dt, shape, k))
        if views is not None:
            return views
        n = p._data.size
        buf = self._scratch.get(dt)
        if buf is None or buf.shape[1] < n or buf.shape[0] < k:
            rows = max(k, 0 if buf is None else buf.shape[0])
            cols = max(n, 0 if buf is None else buf.shape[1])
            self._scratch.clear()              # views of the old buffer go with it
            buf = self._scratch[dt] = np.empty((rows, cols), dt)
        views = self._scratch[dt, shape, k] = [buf[i, :n].reshape(shape) for i in range(k)]
        return views

    @staticmethod
    def _grad_of(p):
        g = p.grad._data if isinstance(p.grad, Tensor) else np.asarray(p.grad)
        if g.shape != p._data.shape:
            raise ValueError(f"optimizer step: a parameter of shape {p.shape} has a gradient "
                             f"of shape {g.shape}")
        return g

    @staticmethod
    def _step_tensor(value=0.0):
        """A state's step count: a 0-d float32 Tensor, as PyTorch keeps it."""
        return Tensor(np.array(value, dtype=np.float32))

    @staticmethod
    def _advance(st):
        """step += 1 in the state; the new count as a Python float."""
        count = st["step"]._data
        count[()] = float(count) + 1          # (an item write: a ufunc call costs ~1 us more)
        return float(count)

    @staticmethod
    def _zeros(p):
        return Tensor(np.zeros_like(p._data))

    # -- hooks -----------------------------------------------------------------------------
    def _register(self, kind, hook, prepend=False):
        hooks = self._hooks[kind]
        key = max(hooks, default=-1) + 1
        hooks[key] = hook
        if prepend:
            hooks.move_to_end(key, last=False)
        return RemovableHandle(hooks, key)

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) before each step; may return new (args, kwargs)."""
        return self._register("step_pre", hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) after each step."""
        return self._register("step_post", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer) before state_dict() builds the dict."""
        return self._register("sd_pre", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) after; may return the dict to give instead."""
        return self._register("sd_post", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) before loading; may return the dict to load instead."""
        return self._register("load_pre", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer) after loading."""
        return self._register("load_post", hook, prepend)

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self):
        """PyTorch's structure: {"state": {index: state}, "param_groups": [group, ...]}, each
        group its hyperparameters and "params": the indices of its parameters (numbered across
        the groups in order); the state holds the optimizer's own Tensors (not copies)."""
        for hook in list(self._hooks["sd_pre"].values()):
            hook(self)
        index, groups = {}, []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: st for p, st in self.state.items() if id(p) in index}
        out = {"state": state, "param_groups": groups}
        for hook in list(self._hooks["sd_post"].values()):
            new = hook(self, out)
            out = out if new is None else new
        return out

    def load_state_dict(self, state_dict):
        """Restore hyperparameters and state saved by `state_dict` (or by PyTorch's).

        The groups must match this optimizer's in number and size, the state's buffers the
        parameters' shapes; any mismatch is a ValueError naming the group, position and
        shapes, and nothing is changed unless the whole dict is valid. Buffers are copied
        into the parameter's dtype ('step' stays float32, as PyTorch's).
        """
        name = self._name()
        if not isinstance(state_dict, dict):
            raise TypeError(f"{name}.load_state_dict: expected a dict, got "
                            f"{type(state_dict).__name__}")
        state_dict = dict(state_dict)
        for hook in list(self._hooks["load_pre"].values()):
            new = hook(self, state_dict)
            state_dict = state_dict if new is None else new
        for key in ("param_groups", "state"):
            if key not in state_dict:
                raise ValueError(f"{name}.load_state_dict: missing key {key!r}; got keys "
                                 f"{sorted(state_dict)}")
        if _is_legacy(state_dict):
            state_dict = self._from_legacy(state_dict)
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{name}.load_state_dict: the state dict has {len(saved_groups)} "
                             f"parameter groups, this optimizer has {len(self.param_groups)}")
        params, new_groups = [], []
        for gi, (saved, group) in enumerate(zip(saved_groups, self.param_groups, strict=True)):
            ids = list(np.asarray(saved.get("params", []), dtype=np.int64).reshape(-1))
            if len(ids) != len(group["params"]):
                raise ValueError(f"{name}.load_state_dict: group {gi} has {len(ids)} "
                                 f"parameters in the state dict, {len(group['params'])} here")
            params += list(zip(ids, group["params"], strict=True))
            new = {}
            for k, v in saved.items():
                if k == "params":
                    continue
                v = as_scalar(v)
                if isinstance(group.get(k), tuple) and isinstance(v, (list, tuple, np.ndarray)):
                    v = tuple(as_scalar(x) for x in v)   # betas: JSON and npz give a list
                new[k] = v
            merged = {**new, "params": group["params"]}
            if "param_names" in group and "param_names" not in new:
                merged["param_names"] = group["param_names"]
            for k, default in self.defaults.items():     # a dict from before a new option
                merged.setdefault(k, default)
            checked = dict(merged)
            if _is_number(checked.get("lr")) and hyper_value(checked["lr"]) < 0:
                # torch loads a negative lr (its schedulers round one to -5.5e-19: LinearLR
                # to a factor of 0); a constructor still refuses it, as torch's does
                checked["lr"] = 0.0
            self._check_hyper(checked, gi)
            new_groups.append(merged)
        where = dict(params)
        new_state = defaultdict(dict)
        for key, st in state_dict["state"].items():
            k = int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else key
            p = where.get(as_scalar(k))
            if p is None:
                raise ValueError(f"{name}.load_state_dict: state for parameter {key!r}, which "
                                 f"no group of the state dict lists")
            new_state[p] = self._load_entry(str(key), p, st)
        for group, merged in zip(self.param_groups, new_groups, strict=True):
            group.clear()
            group.update(merged)
        self.state = new_state
        for hook in list(self._hooks["load_post"].values()):
            hook(self)

    def _load_entry(self, key, p, st):
        """One parameter's saved state as this optimizer keeps it, checked."""
        name = self._name()
        if not isinstance(st, dict):
            raise ValueError(f"{name}.load_state_dict: the state of parameter {key} is a "
                             f"{type(st).__name__}, not a dict")
        missing = [k for k in self._required_state(p) if k not in st]
        foreign = [k for k in st if k not in self._allowed_state()]
        if missing or foreign:
            what = f"lacks {missing}" if missing else f"holds {foreign}, which {name} keeps not"
            raise ValueError(f"{name}.load_state_dict: the state of parameter {key} {what}; it "
                             f"has {sorted(st)} (saved from another optimizer?)")
        entry = {}
        for k, v in st.items():
            if v is None or isinstance(v, (list, str)) or (
                    not isinstance(v, (Tensor, np.ndarray)) and np.isscalar(v)
                    and k not in self._tensor_scalars()):
                entry[k] = as_scalar(v)
                continue
            arr = v.detach().numpy() if isinstance(v, Tensor) else np.asarray(v)
            if k in self._array_keys and arr.shape != p.shape:
                raise ValueError(f"{name}.load_state_dict: {k!r} of parameter {key} has shape "
                                 f"{arr.shape}, the parameter has {p.shape}")
            scalar = k in self._tensor_scalars()
            dtype = np.float32 if k == "step" or (scalar and p._data.dtype.kind != "f") else (
                p._data.dtype if arr.dtype.kind == "f" or scalar else arr.dtype)
            # a fresh contiguous copy: the updates run in place on it
            entry[k] = Tensor(np.array(arr, dtype=dtype, copy=True, order="C"))
        return entry

    def _required_state(self, p):
        return self._state_keys

    def _allowed_state(self):
        return set(self._state_keys) | set(self._array_keys) | set(self._tensor_scalars())

    def _tensor_scalars(self):
        """State entries that are 0-d Tensors (step, ASGD's eta and mu, NAdam's mu_product)."""
        return ("step",)

    def _from_legacy(self, sd):
        """The layout of tinygradx before PyTorch's structure: groups with 'param_shapes', the
        state keyed "group.position", 'step' a Python int."""
        name = self._name()
        saved_name = as_scalar(sd.get("optimizer", name))
        if saved_name != name:
            raise ValueError(f"{name}.load_state_dict: the state dict was saved from a "
                             f"{saved_name}, not a {name}")
        groups, offsets, n = [], [], 0
        for gi, g in enumerate(sd["param_groups"]):
            shapes = g.get("param_shapes")
            if shapes is None:
                raise ValueError(f"{name}.load_state_dict: group {gi} has no 'param_shapes'")
            shapes = [tuple(int(d) for d in np.asarray(s).reshape(-1)) for s in shapes]
            mine = self.param_groups[gi]["params"] if gi < len(self.param_groups) else []
            for i, (s, p) in enumerate(zip(shapes, mine, strict=False)):
                if s != p.shape:
                    raise ValueError(f"{name}.load_state_dict: parameter {i} of group {gi} has "
                                     f"shape {s} in the state dict but {p.shape} here")
            offsets.append(n)
            groups.append({**{k: v for k, v in g.items() if k != "param_shapes"},
                           "params": list(range(n, n + len(shapes)))})
            n += len(shapes)
        state = {}
        for key, st in sd["state"].items():
            gi, _, i = str(key).partition(".")
            if not (gi.isdigit() and i.isdigit() and int(gi) < len(offsets)):
                raise ValueError(f"{name}.load_state_dict: state for parameter {key!r}, which "
                                 f"does not exist here (names are 'group.position')")
            state[offsets[int(gi)] + int(i)] = dict(st)
        return {"state": state, "param_groups": groups}

    def __repr__(self):
        lines = [f"{self._name()} ("]
        for gi, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {gi}")
            lines += [f"    {k}: {g[k]}" for k in sorted(g) if k != "params"]
            if gi < len(self.param_groups) - 1:
                lines.append("")
        return "\n".join(lines + [")"])


def _is_legacy(sd):
    groups = sd.get("param_groups") or []
    return "optimizer" in sd or any(isinstance(g, dict) and "param_shapes" in g for g in groups)
