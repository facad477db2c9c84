"""tinygradx.nn.module: Module, Parameter and module paths; the public names are re-exported by
tinygradx.nn (use `tgx.nn.Module`), where the layers live. The containers (Sequential,
ModuleList, ModuleDict, ...) are in containers.py.

A Module finds its Parameters and sub-Modules by walking its attributes (lists, tuples and dicts
included), so layers need no registration calls. Calling a module pushes a frame (the calling
frame and the module); every graph node created inside keeps it, and its dotted path (e.g.
`transformer.h.0.attn.c_attn`, read as `ctx.scope` by the graph drawer, the shape trace and
error messages) is worked out from the frames only when asked (_ModuleFrame).
"""
from __future__ import annotations

import functools
import weakref
from collections import OrderedDict, namedtuple

import numpy as np

from ..autograd import ROOT, STATE, Frame
from ..autograd.hooks import ModuleHooks
from ..tensor import Tensor
from ..tensor.convert import parse_to


class StateDictError(KeyError):
    """Missing, unexpected or wrongly shaped keys in load_state_dict, listed one per line."""

    def __str__(self):
        return self.args[0]


# the dtype kinds a checkpoint value may have, by the kind of the tensor it is loaded into
_LOADABLE_KINDS = {"f": "fiu", "i": "iub", "u": "iub", "b": "b"}


# what load_state_dict returns: torch's named tuple (result.missing_keys, or unpacked)
IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _check_loaded(key, value, target):
    """(problem, None) or (None, array) for one state-dict entry loaded into `target`."""
    if isinstance(value, Tensor):
        value = value._data
    else:
        try:
            value = np.asarray(value)
        except (ValueError, TypeError) as err:
            return f"value for {key!r} is not an array ({err})", None
    if value.dtype.kind not in "biuf":
        return (f"dtype mismatch for {key!r}: the checkpoint has {value.dtype}, which is not "
                f"numeric (the model has {target.dtype})"), None
    if value.shape != target.shape:
        return (f"size mismatch for {key!r}: the checkpoint has shape {value.shape}, the "
                f"model has {target.shape}"), None
    if value.dtype.kind not in _LOADABLE_KINDS.get(target.dtype.kind, "biuf"):
        return (f"dtype mismatch for {key!r}: the checkpoint has {value.dtype}, the model has "
                f"{target.dtype} (the values would be truncated)"), None
    return None, value


class Parameter(Tensor, op_class=Tensor):
    """A Tensor that a Module owns and an optimizer updates (requires_grad=True by default)."""

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        data = data._data if isinstance(data, Tensor) else data
        super().__init__(np.asarray(data), requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def members_of(value, prefix):
    """Yield (name, obj) for every Parameter, buffer Tensor or Module inside an attribute."""
    if isinstance(value, (Module, Tensor)):
        yield prefix, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from members_of(v, f"{prefix}.{i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from members_of(v, f"{prefix}.{k}")


class Module(ModuleHooks):
    """Base class of layers and models: override `forward`, call the module like a function."""

    training = True

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        # one frame per call, nothing per op: nodes created inside keep the frame on top, and
        # their module path is resolved from the frames when an error, a graph or a trace asks
        here = STATE.here                                  # this thread's call stack
        parent = here.frame
        if parent is ROOT:
            _called_outermost(self)
        here.frame = _ModuleFrame(parent, self)
        try:
            if "_hooks_with_kwargs" in self.__dict__:     # a hook was registered (hooks.py)
                return self._call_with_hooks(args, kwargs)
            return self.forward(*args, **kwargs)
        finally:
            here.frame = parent

    # -- the tree ------------------------------------------------------------------------
    def _members(self):
        for key, value in vars(self).items():
            if key.startswith("_"):
                continue
            yield from members_of(value, key)

    def named_children(self):
        """(name, module) for each direct submodule; lists/dicts of modules count."""
        for name, obj in self._members():
            if isinstance(obj, Module):
                yield name, obj

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, prefix=""):
        """(dotted path, module) for this module and every module below it, each once."""
        seen = set()
        stack = [(prefix, self)]
        while stack:                      # depth-first, parents before children (as PyTorch)
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{c}" if name else c, child) for c, child in m.named_children()]
            stack.extend(reversed(kids))

    def modules(self):
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter) for every parameter, each once (tied weights: first name)."""
        seen = set()
        for mname, m in (self.named_modules(prefix) if recurse else [(prefix, self)]):
            for name, obj in m._members():
                if isinstance(obj, Parameter) and id(obj) not in seen:
                    seen.add(id(obj))
                    yield (f"{mname}.{name}" if mname else name), obj

    def parameters(self, recurse=True):
        """A generator of the parameters, each once, as PyTorch's (`next(m.parameters())`
        works; take `list(...)` to count or index them)."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        """(dotted name, Tensor) for every buffer registered with register_buffer, persistent
        or not (as PyTorch's); buffers set to None are skipped."""
        return self._named_buffers(prefix, recurse, persistent_only=False)

    def _named_buffers(self, prefix, recurse, persistent_only):
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mname, m in modules:
            skip = getattr(m, "_nonpersistent_names", ()) if persistent_only else ()
            for name in getattr(m, "_buffer_names", ()):
                value = getattr(m, name, None)
                if value is not None and name not in skip:
                    yield (f"{mname}.{name}" if mname else name), value

    def buffers(self):
        """A generator of the buffers (persistent or not)."""
        return (b for _, b in self.named_buffers())

    def register_buffer(self, name, tensor, persistent=True):
        """Keep tensor as state that is not a parameter: in state_dict() unless persistent is
        False, converted by to() either way (a positional-encoding table, a mask)."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: the name must be a non-empty string without "
                           f"'.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, got "
                            f"{type(tensor).__name__}")
        setattr(self, name, tensor)
        if name not in getattr(self, "_buffer_names", ()):
            self._buffer_names = getattr(self, "_buffer_names", ()) + (name,)
        others = tuple(n for n in getattr(self, "_nonpersistent_names", ()) if n != name)
        self._nonpersistent_names = others if persistent else others + (name,)

    def register_parameter(self, name, param):
        """self.name = param (a Parameter, or None for an absent one such as a bias)."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None, got "
                            f"{type(param).__name__}")
        setattr(self, name, param)

    def add_module(self, name, module):
        """self.name = module (a Module or None), as PyTorch's add_module."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got "
                            f"{type(module).__name__}")
        setattr(self, name, module)

    register_module = add_module

    def num_parameters(self, trainable_only=False):
        return sum(p._data.size for p in self.parameters() if p.requires_grad or not trainable_only)

    # -- modes and grads -----------------------------------------------------------------
    def train(self, mode=True):
        for m in self.modules():
            m.training = mode
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad._data[...] = 0

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad = flag
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """torch's Module.to: to(dtype), to(device), to(device, dtype), to(tensor). The
        device must be the CPU (tinygradx's only one); a float dtype converts every float
        parameter and buffer (persistent or not) in place. Returns the module."""
        dtype = parse_to(args, dtype, device)
        if dtype is None:
            return self
        if dtype.kind != "f":
            raise TypeError(f"Module.to: only floating-point dtypes convert a module (its "
                            f"integer buffers keep their dtype), got {dtype}")
        for p in list(self.parameters()) + list(self.buffers()):
            if p._data.dtype.kind == "f":
                p._data = p._data.astype(dtype)
                if p.grad is not None:
                    p.grad = None
        return self

    def cpu(self):
        """The module itself: its tensors already are on the CPU."""
        return self

    def cuda(self, device=None):
        raise RuntimeError("Module.cuda: tinygradx runs on the CPU only; use .cpu() or "
                           ".to('cpu') (torch.cuda.is_available() is False here)")

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    def apply(self, fn):
        """fn(module) for every submodule, children before their parent (as PyTorch), then
        self; returns self. The usual initialiser hook: model.apply(init_weights)."""
        seen = set()
        for child in self.children():
            if id(child) not in seen:
                seen.add(id(child))
                child.apply(fn)
        fn(self)
        return self

    # -- state -----------------------------------------------------------------------------
    def state_dict(self):
        """Ordered {dotted name: Tensor} of parameters and persistent buffers (shared data), in
        PyTorch's order: module by module, each one's own parameters, then its own buffers."""
        out = OrderedDict()
        seen = set()
        for mname, m in self.named_modules():
            for name, p in m.named_parameters(mname, recurse=False):
                if id(p) not in seen:                     # a tied weight: its first name
                    seen.add(id(p))
                    out[name] = p.detach()
            for name, b in m._named_buffers(mname, False, persistent_only=True):
                out[name] = b.detach()
        return out

    def _other_names(self, own):
        """{other name: name in `own`} of every parameter or persistent buffer reachable under
        more than one path. PyTorch's state dict lists each path (a tied weight, a module
        shared by two parents: all its entries); ours lists the first only."""
        first = {id(obj): name for name, obj in own.items()}
        aliases = {}

        def walk(prefix, m, above):
            state = set(getattr(m, "_buffer_names", ())) - set(
                getattr(m, "_nonpersistent_names", ()))
            for name, obj in m._members():
                full = prefix + name
                if isinstance(obj, Module):
                    if id(obj) not in above:        # a module inside itself is no new path
                        walk(full + ".", obj, above | {id(obj)})
                elif ((isinstance(obj, Parameter) or name in state) and id(obj) in first
                      and first[id(obj)] != full):
                    aliases[full] = first[id(obj)]
        walk("", self, {id(self)})
        return aliases

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays into the parameters in place, all or nothing; one error lists every problem.

        Every entry is checked before anything is written: a value that is not numeric, a
        shape that differs, or a dtype that would lose information (floats into an integer
        buffer, anything but bools into a bool one) is a problem whatever `strict` says;
        missing and unexpected keys are problems when strict. Non-finite values load (a buffer
        may hold an additive -inf mask). Returns (missing_keys, unexpected_keys), a named
        tuple as torch's (`.missing_keys`, `.unexpected_keys`).
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"load_state_dict for {type(self).__name__}: expected a mapping of "
                            f"names to arrays, got {type(state_dict).__name__}")
        own = OrderedDict(self.named_parameters())
        own.update(self._named_buffers("", True, persistent_only=True))
        # a tied weight's or shared module's other names (PyTorch's state dict lists them
        # all, ours the first): PyTorch's state dict of such a model loads strictly, and an
        # entry under any of the names loads into the one tensor
        aliases = self._other_names(own)
        given = {aliases.get(k, k) for k in state_dict}
        missing = [k for k in own if k not in given]
        unexpected = [k for k in state_dict if k not in own and k not in aliases]
        problems, staged = [], []
        for k in state_dict:
            name = aliases.get(k, k)
            if name not in own:
                continue
            target = own[name]
            problem, value = _check_loaded(k, state_dict[k], target._data)
            if problem:
                problems.append(problem)
            else:
                staged.append((target, value))
        if strict:
            problems += [f"missing key {k!r} (the model has it, the state dict does not)"
                         for k in missing]
            problems += [f"unexpected key {k!r} (the state dict has it, the model does not)"
                         for k in unexpected]
        if problems:
            raise StateDictError(f"load_state_dict for {type(self).__name__}: {len(problems)} "
                           f"problem(s):\n  " + "\n  ".join(problems))
        for target, value in staged:           # checked above: these writes cannot fail
            target._data[...] = value
        return IncompatibleKeys(missing, unexpected)

    # -- repr ------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()})"]
        own = [(n, p) for n, p in self._members() if isinstance(p, Parameter)]
        for name, p in own:
            lines.append(f"  ({name}): Parameter{tuple(p.shape)}")
        for name, child in self.named_children():
            sub = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        n = Module.num_parameters(self)       # PReLU has its own num_parameters (an int)
        if len(lines) == 1:
            return lines[0]
        lines[0] = lines[0][:-1] + f")  # {n:,} parameters"
        return "\n".join(lines)


class Identity(Module):
    def forward(self, x):
        return x


# ------------------------------------------------------------------------------------------
# module paths: worked out from the call frames when an error, a graph or a trace asks
# ------------------------------------------------------------------------------------------

class _ModuleFrame(Frame):
    """One module call (Module.__call__ pushes it). Its path: walk up the calling frames to
    the nearest module that holds this one among its attributes (the walk named_modules does)
    and append the name found there. A module called outermost is named inside the most
    recently called outermost module that holds it, so a block GPT.generate calls directly
    keeps its path `transformer.h.0`; a module held by none is named from itself ("")."""

    __slots__ = ("module", "_held")

    def __init__(self, parent, module):
        self.parent = parent
        self.module = module

    def resolve(self):
        f = self.parent
        while f is not ROOT:
            if isinstance(f, _ModuleFrame):
                name = f._name_of(self.module)
                if name is not None:
                    return f"{f.path}.{name}" if f.path else name
            f = f.parent
        path = _outermost_path(self.module)
        if path is None:    # held by nothing: named from itself, or by its class inside a call
            path = "" if self.parent is ROOT else type(self.module).__name__
        return path

    def _name_of(self, module):
        """module's dotted name below this frame's module, or None if it does not hold it."""
        held = getattr(self, "_held", None)
        if held is not None:
            hit = held.get(id(module))
            if hit is not None and hit[1] is module:
                return hit[0]
        # the first ask, or a miss: (re)build, as the forward may have added a module since
        held = self._held = _held_by(self.module)
        hit = held.get(id(module))
        return hit[0] if hit is not None and hit[1] is module else None


def _held_by(module):
    """{id(m): (dotted name, m)} for every module below `module` (not itself)."""
    return {id(m): (name, m) for name, m in module.named_modules() if name}


_OUTERMOST = {}   # id(module) -> weak reference, the modules called outermost, oldest first


def _called_outermost(module):
    key = id(module)
    ref = _OUTERMOST.pop(key, None)
    if ref is None or ref() is not module:
        # the callback is dict.pop(key, r): C code, so a Ctrl-C cannot land inside it (a
        # KeyboardInterrupt raised in a Python callback is printed as "Exception ignored").
        # It cannot drop a newer entry: CPython runs it before the module's id can be reused
        ref = weakref.ref(module, functools.partial(_OUTERMOST.pop, key))
    _OUTERMOST[key] = ref


def _outermost_path(module):
    """module's path inside the newest outermost-called module that holds it, followed up to
    one that none holds; None if none holds it."""
    roots = [r() for r in reversed(list(_OUTERMOST.values()))]
    held = {}
    path, seen = None, {id(module)}
    while True:
        for r in roots:
            if r is None or id(r) in seen:
                continue
            if id(r) not in held:
                held[id(r)] = _held_by(r)
            hit = held[id(r)].get(id(module))
            if hit is not None and hit[1] is module:
                break
        else:
            return path
        path = hit[0] if path is None else f"{hit[0]}.{path}"
        seen.add(id(r))
        module = r
