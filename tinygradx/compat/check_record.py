"""The two recorders of `--check` (check.py): every op and every module call of one forward
pass, on PyTorch's side and on tinygradx's, as the same kind of record.

PyTorch's side sees its ops through `torch.overrides.TorchFunctionMode` (each call of a torch
function or Tensor method, as the model's code made it; what a function does inside is one op),
a PyTorch-style `torch.autograd.Function` through its `apply` (one op, its inside unrecorded),
and module calls through forward hooks. tinygradx's side sees its ops through
`tinygradx.autograd.observe` (each node; a custom Function is one node, as there) and module
calls through the same forward hooks, so both sides name a module call by its path in the
model (`blocks.0.attn`) and its count (the third call of a shared layer is `(path, 2)`).

Two things of a forward pass cannot be equal across the libraries and are made equal here:
random draws and dropout. The draws a forward makes through torch's functions (`torch.randn`,
`torch.rand_like`, `torch.bernoulli`, ...) are recorded on PyTorch's side and handed back, in
order, on tinygradx's; dropout is the identity on both sides (its masks come from the draws of
two different generators), by putting dropout modules, and the modules that drop out inside
(nn.MultiheadAttention, nn.RNN/LSTM/GRU), in eval mode, and by calling the functional forms
with training=False.
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field

import numpy as np

# the functions whose result is random: replayed from PyTorch's draws on tinygradx's side
RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal",
          "bernoulli", "multinomial", "randperm", "poisson")
# Tensor methods that draw (not replayed: a departure there says so)
RANDOM_METHODS = ("bernoulli_", "normal_", "uniform_", "random_", "exponential_", "geometric_",
                  "cauchy_", "log_normal_", "bernoulli", "multinomial")
# ops that make a new tensor from a tensor's shape or dtype only: sources, as factories
MAKERS = ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "zeros_like",
          "ones_like", "full_like", "empty_like")
# the functional forms of dropout: the identity during a check
DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
            "feature_alpha_dropout")
# modules that drop out: in eval mode during a check (a Dropout's only difference in eval;
# MultiheadAttention and the recurrent layers drop out only in training, and only when p > 0)
DROPOUT_MODULES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                   "FeatureAlphaDropout")
INNER_DROPOUT = ("MultiheadAttention", "RNN", "LSTM", "GRU")

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# the files PyTorch's API passes through on its way to __torch_function__ (not its own work)
TORCH_PLUMBING = ("overrides.py", "nn/functional.py", "_jit_internal.py", "_tensor.py",
                  "functional.py")


@dataclass
class Record:
    """One op or one module call of a recorded forward pass.

    kind "op": `name` the op ("gelu", "SoftplusGate"), `call` the module call it ran in;
    kind "call": `name` the module's class, `call` the call itself, `parent` the call it ran in.
    `outs` are the output tensors, `values` their arrays when recorded (copies), `ins` the
    input tensors, `site` the line of the user's code that made it, (file, line)."""
    kind: str
    name: str
    label: str
    call: tuple
    ins: list
    outs: list
    values: list
    site: tuple | None = None
    parent: tuple | None = None
    node: object = None              # tinygradx: the graph node (its seed name comes from it)
    factory: bool = False            # no tensor among its inputs (torch.zeros, torch.arange)
    random: bool = False
    in_shapes: list = field(default_factory=list)
    extra: list = field(default_factory=list)  # (tensor, array) of inputs no recorded op made


def called_from(library, plumbing=()):
    """(site, internal) of an op being recorded: site is (file, line) of the innermost frame
    outside `library` (a folder: the library's code) and this package, the user's code that
    made the op; internal is True when a frame of the library between them is not one of
    `plumbing` (the files through which the library's API reaches the recorder), i.e. the
    library's own code made the op (nn.LSTM.forward's)."""
    f = sys._getframe(2)
    internal = False
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(_HERE):
            pass
        elif name.startswith(library):
            if not name[len(library):].replace(os.sep, "/").endswith(plumbing or ("\0",)):
                internal = True
        else:
            return (name, f.f_lineno), internal
        f = f.f_back
    return None, internal


def fmt_site(site):
    return f"{os.path.basename(site[0])}:{site[1]}" if site else ""


def flatten(obj, is_tensor, out=None):
    """The tensors in obj (nested tuples, lists, dicts, named tuples), in order."""
    out = [] if out is None else out
    if is_tensor(obj):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            flatten(o, is_tensor, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            flatten(o, is_tensor, out)
    return out


def is_packed(obj):
    """A PackedSequence of either library (a named tuple of four)."""
    return isinstance(obj, tuple) and type(obj).__name__ == "PackedSequence" and len(obj) == 4


def padded(data, batch_sizes, order):
    """The (B, T, ...) batch a packed sequence stands for: its data rows put back by sequence
    (PyTorch leaves the order of equal lengths unspecified, so two libraries may pack the
    same batch in two orders)."""
    out = np.zeros((int(batch_sizes[0]), len(batch_sizes)) + data.shape[1:], data.dtype)
    order = np.arange(out.shape[0]) if order is None else order
    start = 0
    for t, n in enumerate(batch_sizes.tolist()):
        out[order[:n], t] = data[start:start + n]
        start += n
    return out


def outputs(obj, side):
    """(tensors, arrays) of what an op or module returned, in order: nested tuples, lists and
    dicts opened; a PackedSequence as its padded batch (no tensor: its gradient is not
    compared) and its batch sizes."""
    ts, arrays = [], []

    def go(o):
        if side.is_tensor(o):
            ts.append(o)
            arrays.append(side.array(o))
        elif is_packed(o):
            order = None if o[2] is None else side.array(o[2])
            ts.append(None)
            arrays.append(padded(side.array(o[0]), side.array(o[1]), order))
            ts.append(o[1])
            arrays.append(side.array(o[1]))
        elif isinstance(o, (tuple, list)):
            for x in o:
                go(x)
        elif isinstance(o, dict):
            for x in o.values():
                go(x)
    go(obj)
    return ts, arrays


def loss_terms(out, side, seed):
    """[(tensor, weights)] of the loss sum(out * R) over what a model returned (R seeded: the
    same on both sides for outputs of one structure): every floating-point output that needs
    a gradient, a PackedSequence's data through its padded batch."""
    rng = np.random.default_rng(seed)
    terms = []

    def go(o):
        if side.is_tensor(o):
            a = side.array(o)
            if a.dtype.kind == "f" and o.requires_grad:
                terms.append((o, rng.standard_normal(a.shape).astype(a.dtype)))
        elif is_packed(o):
            data, sizes = side.array(o[0]), side.array(o[1])
            if data.dtype.kind != "f" or not o[0].requires_grad:
                return
            order = np.arange(int(sizes[0])) if o[2] is None else side.array(o[2])
            r = rng.standard_normal(padded(data, sizes, order).shape).astype(data.dtype)
            rows, start = np.empty_like(data), 0
            for t, n in enumerate(sizes.tolist()):
                rows[start:start + n] = r[order[:n], t]
                start += n
            terms.append((o[0], rows))
        elif isinstance(o, (tuple, list)):
            for x in o:
                go(x)
        elif isinstance(o, dict):
            for x in o.values():
                go(x)
    go(out)
    return terms


class _Calls:
    """The module-call stack both recorders keep with forward hooks."""

    def __init__(self, model, side):
        self.names = {id(m): n for n, m in model.named_modules()}
        self.counts, self.stack, self.side, self.handles = {}, [], side, []
        for _, m in model.named_modules():
            self.handles.append(m.register_forward_pre_hook(self.enter))
            self.handles.append(m.register_forward_hook(self.leave))

    def enter(self, module, args):
        side = self.side
        side.busy += 1
        try:
            path = self.names.get(id(module), type(module).__name__)
            k = self.counts.get(path, 0)
            self.counts[path] = k + 1
            self.stack.append((path, k))
            if len(self.stack) == 1:
                side.inputs = flatten(args, side.is_tensor)
        finally:
            side.busy -= 1

    def leave(self, module, args, out):
        side = self.side
        side.busy += 1
        try:
            key = self.stack.pop()
            outs, values = outputs(out, side)
            side.records.append(Record(
                "call", type(module).__name__, type(module).__name__, key,
                flatten(args, side.is_tensor), outs, values,
                parent=self.stack[-1] if self.stack else None))
        finally:
            side.busy -= 1

    def current(self):
        return self.stack[-1] if self.stack else None

    def remove(self):
        for h in self.handles:
            h.remove()


def dropout_off(model):
    """Put the modules of a PyTorch model that drop out in eval mode; returns their paths (the
    same paths of tinygradx's model are put in eval mode too)."""
    paths = []
    for path, m in model.named_modules():
        kind = type(m).__name__
        p = getattr(m, "p", None) if kind in DROPOUT_MODULES else getattr(m, "dropout", 0)
        if (kind in DROPOUT_MODULES or kind in INNER_DROPOUT) and m.training and \
                isinstance(p, (int, float)) and p > 0:
            m.eval()
            paths.append(path)
    return paths


# --------------------------------------------------------------------------------------------
# PyTorch's side
# --------------------------------------------------------------------------------------------

def torch_names(torch):
    """{id(function): its public name} for torch.nn.functional's and torch's functions (some
    are builtins whose __module__ does not say where they are public)."""
    names = {}
    for prefix, module in (("torch", torch), ("F", torch.nn.functional)):
        for n in dir(module):
            if not n.startswith("_"):
                names[id(getattr(module, n, None))] = f"{prefix}.{n}"
    names.pop(id(None), None)
    return names


def torch_label(func, names):
    """(short name, PyTorch's name) of a function the mode saw: ("gelu", "F.gelu")."""
    name = getattr(func, "__name__", None) or type(func).__name__
    public = names.get(id(func))
    if public is not None:
        return public.rpartition(".")[2].strip("_"), public
    owner = getattr(func, "__self__", None)
    if name == "__get__" and owner is not None:         # a property: x.T, x.mT, x.data
        name = getattr(owner, "__name__", name)
        return name, f"Tensor.{name}"
    module = getattr(func, "__module__", None) or ""
    qual = getattr(func, "__qualname__", name)
    short = name.strip("_")
    if short.startswith(("r", "i")) and name.startswith("__") and \
            short[1:] in ("add", "sub", "mul", "truediv", "matmul", "pow", "floordiv", "mod",
                          "and", "or", "xor", "lshift", "rshift"):
        short = short[1:]
    if module == "torch.nn.functional":
        return short, f"F.{name}"
    if qual.startswith(("TensorBase.", "Tensor.")):
        return short, f"Tensor.{name}"
    return short, f"torch.{name}"


class TorchSide:
    """Records one forward pass of a PyTorch model (use as a context manager around it)."""

    def __init__(self, torch, model):
        self.torch, self.model = torch, model
        self.library = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        self.records, self.draws, self.inputs = [], [], []
        self.busy = 0
        self.inside_function = 0
        self.is_tensor = lambda o: isinstance(o, torch.Tensor)
        F = torch.nn.functional
        self.random = {getattr(torch, n) for n in RANDOM if hasattr(torch, n)}
        self.dropouts = {getattr(F, n) for n in DROPOUTS if hasattr(F, n)}
        self.dropouts |= {getattr(torch, n) for n in ("dropout", "alpha_dropout",
                                                      "feature_alpha_dropout")}
        self.sdpa = getattr(F, "scaled_dot_product_attention", None)
        self.names = torch_names(torch)

    def array(self, t):
        return t.detach().cpu().numpy().copy()

    def __enter__(self):
        from torch.overrides import TorchFunctionMode
        side = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return side.torch_function(func, args, kwargs or {})

        self.calls = _Calls(self.model, self)
        Function = self.torch.autograd.Function
        self.apply = Function.__dict__["apply"]
        original = self.apply.__func__

        def apply(cls, *args, **kwargs):          # one op per call, its inside unrecorded
            if side.busy or side.inside_function or side.calls.current() is None:
                return original(cls, *args, **kwargs)
            site, internal = called_from(side.library, TORCH_PLUMBING)
            if internal:
                return original(cls, *args, **kwargs)
            side.inside_function += 1
            try:
                out = original(cls, *args, **kwargs)
            finally:
                side.inside_function -= 1
            side.op(cls.__name__, f"{cls.__name__}.apply (torch.autograd.Function)", args,
                    kwargs, out, site)
            return out

        Function.apply = classmethod(apply)
        self.mode = Mode()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        self.torch.autograd.Function.apply = self.apply
        self.calls.remove()
        return False

    def torch_function(self, func, args, kwargs):
        if self.busy or self.inside_function or self.calls.current() is None:
            return func(*args, **kwargs)
        if func in self.dropouts:                 # the identity (see the module docstring)
            return args[0] if args else kwargs["input"]
        if func is self.sdpa and self.sdpa is not None:
            if len(args) > 4:
                args = args[:4] + (0.0,) + tuple(args[5:])
            else:
                kwargs = dict(kwargs, dropout_p=0.0)
        site, internal = called_from(self.library, TORCH_PLUMBING)
        if internal:               # PyTorch's own code (a layer's forward): not the user's op
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        if func in self.random:
            self.busy += 1
            try:
                self.draws.append((func.__name__, [self.array(t) for t in
                                                   flatten(out, self.is_tensor)]))
            finally:
                self.busy -= 1
        self.op(*torch_label(func, self.names), args, kwargs, out, site,
                random=func in self.random, source=func in self.random)
        return out

    def op(self, name, label, args, kwargs, out, site, random=False, source=False):
        """Record an op (`source`: a random draw, replayed on tinygradx's side, is made
        there without an op, as a factory's result)."""
        self.busy += 1
        try:
            outs, values = outputs(out, self)
            if not outs:
                return
            ins = flatten((args, kwargs), self.is_tensor)
            if label.startswith("Tensor.") and name in RANDOM_METHODS:
                random = True
            self.records.append(Record(
                "op", name, label, self.calls.current(), ins, outs, values, site,
                factory=source or not ins or name in MAKERS, random=random,
                in_shapes=[tuple(t.shape) for t in ins]))
        finally:
            self.busy -= 1


# --------------------------------------------------------------------------------------------
# tinygradx's side
# --------------------------------------------------------------------------------------------

class TinySide:
    """Records one forward pass of a tinygradx model, its random draws replayed from `draws`
    (PyTorch's, in order) and dropout off; a context manager around the forward."""

    def __init__(self, tgx, lookalike, model, draws):
        self.tgx, self.lookalike, self.model = tgx, lookalike, model
        self.library = os.path.dirname(os.path.abspath(tgx.__file__)) + os.sep
        self.draws = list(draws)
        self.records, self.inputs = [], []
        self.busy = 0
        self.replay_misses = []
        self.made = set()                # ids of the tensors recorded ops made
        self.is_tensor = lambda o: isinstance(o, tgx.Tensor)

    def array(self, t):
        return t.detach().numpy().copy()

    def __enter__(self):
        from tinygradx import autograd
        self.calls = _Calls(self.model, self)
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(autograd.observe(self.observe))
        torch, F = self.lookalike, self.lookalike.nn.functional
        self.set = []
        for name in RANDOM:
            if torch.provides(name):
                self._override(torch, name, self._replay(name, getattr(torch, name)))
        for name in DROPOUTS:
            if F.provides(name):
                self._override(F, name, _identity)
        if F.provides("scaled_dot_product_attention"):
            self._override(F, "scaled_dot_product_attention",
                           _no_dropout(F.scaled_dot_product_attention))
        return self

    def _override(self, facade, name, value):
        """Shadow a look-alike name for the check (an attribute of the facade object itself,
        found before its lookup in tinygradx; removed after)."""
        facade.__dict__[name] = value
        self.set.append((facade, name))

    def __exit__(self, *exc):
        for facade, name in self.set:
            facade.__dict__.pop(name, None)
        self.stack.close()
        self.calls.remove()
        return False

    def _replay(self, name, real):
        side = self

        def draw(*args, **kwargs):
            out = real(*args, **kwargs)
            if not side.draws:
                side.replay_misses.append(name)
                return out
            theirs, arrays = side.draws[0]
            outs = flatten(out, side.is_tensor)
            if theirs != name or [a.shape for a in arrays] != [tuple(t.shape) for t in outs]:
                side.replay_misses.append(name)
                return out
            side.draws.pop(0)
            if len(outs) == 1 and outs[0] is out:
                made = side.tgx.tensor(arrays[0].astype(out.dtype, copy=True))
                return made.requires_grad_() if out.requires_grad else made
            return out
        return draw

    def observe(self, ctx, inputs, out, seconds):
        if self.busy or self.calls.current() is None:
            return
        self.busy += 1
        try:
            if out.requires_grad and out.grad_fn is not None:
                out.retain_grad()
            fn = getattr(type(ctx), "fn", None)        # a PyTorch-style Function's node
            name = fn.__name__ if fn is not None else ctx.name()
            ins = [t for t in inputs if self.is_tensor(t)]
            # inputs no recorded op made (masks, constants, the model's inputs): values too,
            # since PyTorch's op that made them may have no node here (a comparison)
            extra = [(t, self.array(t)) for t in ins if id(t) not in self.made]
            self.made.add(id(out))
            self.records.append(Record(
                "op", name, name, self.calls.current(), ins, [out], [self.array(out)],
                called_from(self.library)[0], node=ctx, factory=not ins or name in MAKERS,
                in_shapes=[tuple(t.shape) for t in ins], extra=extra))
        finally:
            self.busy -= 1


def _identity(input, *args, **kwargs):
    """Dropout during a check (both sides): the input itself."""
    return input


def _no_dropout(sdpa):
    def attention(query, key, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
        return sdpa(query, key, value, attn_mask, 0.0, *args, **kwargs)
    return attention
