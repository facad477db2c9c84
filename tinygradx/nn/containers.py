"""tinygradx.nn.containers: the modules that hold other modules or parameters, with PyTorch's
names and behaviour: `Sequential`, `ModuleList`, `ModuleDict`, `ParameterList`, `ParameterDict`.
Re-exported by tinygradx.nn (use `tgx.nn.Sequential`).

A container names what it holds by position (`h.0`, `h.1`, ...) or by key (`transformer.wte`),
through `_members`, the hook `Module` walks for names, parameters and state dicts. `Sequential`
and `ModuleList` are one list of modules (`_ModuleSequence`: indexing, slicing, append, insert,
delete, iteration) and differ only where PyTorch's do: `Sequential(*layers)` is called and runs
the layers in order; `ModuleList(modules)` only holds them.
"""
from __future__ import annotations

from collections import OrderedDict

from ..tensor import Tensor
from .module import Module, Parameter, members_of

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class _ModuleSequence(Module):
    """A list of modules named by their positions ("0", "1", ...), or by the keys a Sequential
    was built with; what Sequential and ModuleList share."""

    _keys = None            # the names when they are not the positions (a Sequential's)

    def _names(self):
        return self._keys if self._keys is not None else [str(i) for i in range(len(self._list))]

    def _members(self):
        for name, m in zip(self._names(), self._list, strict=True):
            yield from members_of(m, name)

    def _index(self, i):
        n = len(self._list)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return i % n

    def _renumbered(self):
        self._keys = None   # as torch: a deletion or insertion numbers the modules again

    def __getitem__(self, i):
        if isinstance(i, slice):             # a container of the same kind, as in PyTorch
            return self._slice(i)
        return self._list[self._index(i)]

    def __setitem__(self, i, m):
        self._list[self._index(i)] = m

    def __delitem__(self, i):
        if isinstance(i, slice):
            del self._list[i]
        else:
            del self._list[self._index(i)]
        self._renumbered()

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def append(self, m):
        if self._keys is not None:
            self._keys = self._keys + [str(len(self._list))]
        self._list.append(m)
        return self

    def extend(self, modules):
        if not hasattr(modules, "__iter__"):
            raise TypeError(f"{type(self).__name__}.extend should be called with an iterable, "
                            f"but got {type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def pop(self, i=-1):
        m = self[i]
        del self[i]
        return m


class Sequential(_ModuleSequence):
    """Modules applied one after another: Sequential(*layers), or Sequential(OrderedDict) to
    name them by its keys, as in PyTorch."""

    def __init__(self, *layers):
        if len(layers) == 1 and isinstance(layers[0], OrderedDict):
            self._keys = [str(k) for k in layers[0]]
            layers = tuple(layers[0].values())
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layer {i} is a {type(layer).__name__}, not a "
                                f"module or callable")
        self._list = list(layers)

    def forward(self, x):
        for layer in self._list:
            x = layer(x)
        return x

    def _slice(self, i):
        # the layers keep their names, as torch's slice of a Sequential does
        return type(self)(OrderedDict(zip(self._names()[i], self._list[i], strict=True)))

    def insert(self, index, m):
        n = len(self._list)
        if not -n <= index <= n:
            raise IndexError(f"index {index} is out of range")
        self._list.insert(index + n if index < 0 else index, m)
        self._renumbered()
        return self


class ModuleList(_ModuleSequence):
    """A list of modules whose names are their indices (`h.0`, `h.1`, ...)."""

    def __init__(self, modules=None):
        self._list = []
        if modules is not None:
            self.extend(modules)

    def _slice(self, i):
        return type(self)(self._list[i])

    def insert(self, index, m):
        self._list.insert(index, m)


class _DictMethods:
    """The read side of a dict over `self._dict` (ModuleDict, ParameterDict)."""

    def __contains__(self, k):
        return k in self._dict

    def __len__(self):
        return len(self._dict)

    def __iter__(self):
        return iter(self._dict)

    def keys(self):
        return self._dict.keys()

    def items(self):
        return self._dict.items()

    def values(self):
        return self._dict.values()


class ModuleDict(_DictMethods, Module):
    """A dict of modules whose names are their keys (`transformer.wte`, ...)."""

    def __init__(self, modules=None):
        self._dict = dict(modules or {})

    def _members(self):
        for k, m in self._dict.items():
            yield from members_of(m, k)

    def __getitem__(self, k):
        return self._dict[k]

    def __getattr__(self, k):
        d = self.__dict__.get("_dict", {})
        if k in d:
            return d[k]
        raise AttributeError(k)

    def __setitem__(self, k, m):
        self._dict[k] = m

    def update(self, modules):
        self._dict.update(modules)


class ParameterList(Module):
    """A list of Parameters named by their indices (`0`, `1`, ...); tensors given to it
    become Parameters, as in PyTorch."""

    def __init__(self, values=None):
        self._list = [_as_parameter(v) for v in (values or ())]

    def _members(self):
        for i, p in enumerate(self._list):
            yield str(i), p

    def __getitem__(self, i):
        return self._list[i]

    def __setitem__(self, i, value):
        self._list[i] = _as_parameter(value)

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def append(self, value):
        self._list.append(_as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self


class ParameterDict(_DictMethods, Module):
    """A dict of Parameters named by their keys; tensors given to it become Parameters."""

    def __init__(self, parameters=None):
        self._dict = {k: _as_parameter(v) for k, v in dict(parameters or {}).items()}

    def _members(self):
        yield from self._dict.items()

    def __getitem__(self, k):
        return self._dict[k]

    def __setitem__(self, k, value):
        self._dict[k] = _as_parameter(value)


def _as_parameter(value):
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value, requires_grad=value.dtype.kind == "f")
    raise TypeError(f"a parameter container holds Parameters or Tensors, got "
                    f"{type(value).__name__}")
