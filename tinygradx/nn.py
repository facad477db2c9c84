"""tinygradx.nn: Module, Parameter and the layers a Transformer is made of.

A Module finds its Parameters and sub-Modules by walking its attributes (lists, tuples and dicts
included), so layers need no registration calls. Calling a module pushes a frame (the calling
frame and the module); every graph node created inside keeps it, and its dotted path (e.g.
`transformer.h.0.attn.c_attn`, read as `ctx.scope` by the graph drawer, the shape trace and
error messages) is worked out from the frames only when asked (_ModuleFrame).
"""
from __future__ import annotations

import math
import weakref
from collections import OrderedDict

import numpy as np

from . import functional as F
from .autograd import ROOT, STATE, Frame, OpError, current_scope
from .tensor import Tensor


class StateDictError(KeyError):
    """Missing, unexpected or wrongly shaped keys in load_state_dict, listed one per line."""

    def __str__(self):
        return self.args[0]


# the dtype kinds a checkpoint value may have, by the kind of the tensor it is loaded into
_LOADABLE_KINDS = {"f": "fiu", "i": "iub", "u": "iub", "b": "b"}


def _check_loaded(key, value, target):
    """(problem, None) or (None, array) for one state-dict entry loaded into `target`."""
    if isinstance(value, Tensor):
        value = value.data
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


def _int_arg(cls, name, value, low=1):
    """value as an int >= low, or an error naming the class and the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{cls}: {name} must be an int, got {value!r}")
    if value < low:
        what = "positive" if low == 1 else f">= {low}"
        raise ValueError(f"{cls}: {name} must be {what}, got {value}")
    return int(value)


def _prob_arg(cls, name, value, upper_open=False):
    """A probability in [0, 1] (or [0, 1) with upper_open), else an error naming both."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{cls}: {name} must be a number, got {value!r}")
    if not (0.0 <= value < 1.0 if upper_open else 0.0 <= value <= 1.0):
        raise ValueError(f"{cls}: {name} must be in [0, {'1)' if upper_open else '1]'}, "
                         f"got {value}")
    return float(value)


class Parameter(Tensor):
    """A Tensor that a Module owns and an optimizer updates (requires_grad=True by default)."""

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        data = data.data if isinstance(data, Tensor) else data
        super().__init__(np.asarray(data), requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def _walk(value, prefix):
    """Yield (name, obj) for every Parameter, buffer Tensor or Module inside an attribute."""
    if isinstance(value, (Module, Tensor)):
        yield prefix, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{prefix}.{i}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{prefix}.{k}")


class Module:
    """Base class of layers and models: override `forward`, call the module like a function."""

    training = True

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        # one frame per call, nothing per op: nodes created inside keep the frame on top, and
        # their module path is resolved from the frames when an error, a graph or a trace asks
        parent = STATE.frame
        if parent is ROOT:
            _called_outermost(self)
        STATE.frame = _ModuleFrame(parent, self)
        try:
            return self.forward(*args, **kwargs)
        finally:
            STATE.frame = parent

    # -- the tree ------------------------------------------------------------------------
    def _members(self):
        for key, value in vars(self).items():
            if key.startswith("_"):
                continue
            yield from _walk(value, key)

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

    def named_parameters(self, prefix=""):
        """(dotted name, Parameter) for every parameter, each once (tied weights: first name)."""
        seen = set()
        for mname, m in self.named_modules(prefix):
            for name, obj in m._members():
                if isinstance(obj, Parameter) and id(obj) not in seen:
                    seen.add(id(obj))
                    yield (f"{mname}.{name}" if mname else name), obj

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        """Tensors that are state but not parameters (e.g. a positional-encoding table)."""
        for mname, m in self.named_modules():
            for name in getattr(m, "_buffer_names", ()):
                yield (f"{mname}.{name}" if mname else name), getattr(m, name)

    def register_buffer(self, name, tensor, persistent=True):
        setattr(self, name, tensor)
        if persistent:
            self._buffer_names = getattr(self, "_buffer_names", ()) + (name,)
        else:  # not in state_dict, but still converted by to()/double()
            self._nonpersistent_names = getattr(self, "_nonpersistent_names", ()) + (name,)

    def num_parameters(self, trainable_only=False):
        return sum(p.data.size for p in self.parameters() if p.requires_grad or not trainable_only)

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
                p.grad.data[...] = 0

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad = flag
        return self

    def to(self, dtype):
        """Convert every parameter and buffer (persistent or not) to a float dtype, in place."""
        buffers = [b for _, b in self.named_buffers()]
        for m in self.modules():
            buffers += [getattr(m, n) for n in getattr(m, "_nonpersistent_names", ())]
        for p in list(self.parameters()) + buffers:
            if p.data.dtype.kind == "f":
                p.data = p.data.astype(dtype)
                if p.grad is not None:
                    p.grad = None
        return self

    def double(self):
        return self.to(np.float64)

    def float(self):
        return self.to(np.float32)

    def apply(self, fn):
        for m in self.modules():
            fn(m)
        return self

    # -- state -----------------------------------------------------------------------------
    def state_dict(self):
        """Ordered {dotted name: Tensor} of parameters and persistent buffers (shared data)."""
        out = OrderedDict()
        for name, p in self.named_parameters():
            out[name] = p.detach()
        for name, b in self.named_buffers():
            out[name] = b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays into the parameters in place, all or nothing; one error lists every problem.

        Every entry is checked before anything is written: a value that is not numeric, a
        shape that differs, or a dtype that would lose information (floats into an integer
        buffer, anything but bools into a bool one) is a problem whatever `strict` says;
        missing and unexpected keys are problems when strict. Non-finite values load (a buffer
        may hold an additive -inf mask). Returns (missing_keys, unexpected_keys).
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"load_state_dict for {type(self).__name__}: expected a mapping of "
                            f"names to arrays, got {type(state_dict).__name__}")
        own = OrderedDict(self.named_parameters())
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems, staged = [], []
        for k, target in own.items():
            if k not in state_dict:
                continue
            problem, value = _check_loaded(k, state_dict[k], target.data)
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
            target.data[...] = value
        return missing, unexpected

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
        n = self.num_parameters()
        if len(lines) == 1:
            return lines[0]
        lines[0] = lines[0][:-1] + f")  # {n:,} parameters"
        return "\n".join(lines)


class Sequential(Module):
    """Modules applied one after another."""

    def __init__(self, *layers):
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layer {i} is a {type(layer).__name__}, not a "
                                f"module or callable")
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def _members(self):
        for i, m in enumerate(self.layers):
            yield from _walk(m, str(i))

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)


class ModuleList(Module):
    """A list of modules whose names are their indices (`h.0`, `h.1`, ...)."""

    def __init__(self, modules=()):
        self._list = list(modules)

    def _members(self):
        for i, m in enumerate(self._list):
            yield from _walk(m, str(i))

    def __getitem__(self, i):
        return self._list[i]

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def append(self, m):
        self._list.append(m)
        return self


class ModuleDict(Module):
    """A dict of modules whose names are their keys (`transformer.wte`, ...)."""

    def __init__(self, modules=None):
        self._dict = dict(modules or {})

    def _members(self):
        for k, m in self._dict.items():
            yield from _walk(m, k)

    def __getitem__(self, k):
        return self._dict[k]

    def __getattr__(self, k):
        d = self.__dict__.get("_dict", {})
        if k in d:
            return d[k]
        raise AttributeError(k)

    def __contains__(self, k):
        return k in self._dict

    def keys(self):
        return self._dict.keys()

    def items(self):
        return self._dict.items()


class Identity(Module):
    def forward(self, x):
        return x


# ------------------------------------------------------------------------------------------
# layers
# ------------------------------------------------------------------------------------------

def _uniform(shape, bound):
    return STATE.rng.uniform(-bound, bound, size=shape).astype(np.float32)


class Linear(Module):
    """y = x W^T + b. weight: (out_features, in_features), bias: (out_features,).

    Initialised as PyTorch: U(-1/sqrt(in), 1/sqrt(in)) for both weight and bias.
    """

    def __init__(self, in_features, out_features, bias=True):
        in_features = _int_arg("Linear", "in_features", in_features)
        out_features = _int_arg("Linear", "out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound))
        self.bias = Parameter(_uniform((out_features,), bound)) if bias else None

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise OpError(f"Linear at {current_scope() or '<top>'}: input of shape "
                          f"{x.shape} has {x.shape[-1]} features, expected "
                          f"in_features={self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A table of num_embeddings vectors of size embedding_dim, indexed by integer ids.

    Initialised N(0, 1) as PyTorch; the padding_idx row starts at zero and gets no gradient.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None):
        num_embeddings = _int_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = _int_arg("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            padding_idx = _int_arg("Embedding", "padding_idx", padding_idx, -num_embeddings)
            if padding_idx >= num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be in {-num_embeddings}.."
                                 f"{num_embeddings - 1} (num_embeddings={num_embeddings}), "
                                 f"got {padding_idx}")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        w = STATE.rng.standard_normal((num_embeddings, embedding_dim)).astype(np.float32)
        if padding_idx is not None:
            w[padding_idx] = 0
        self.weight = Parameter(w)

    def forward(self, ids):
        return F.embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """LN(x) = (x - mean)/sqrt(var + eps) * weight + bias over the last dims (biased var)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
            raise TypeError(f"LayerNorm: normalized_shape must be an int or a non-empty tuple "
                            f"of ints, got {normalized_shape!r}")
        normalized_shape = tuple(_int_arg("LayerNorm", "normalized_shape", n)
                                 for n in normalized_shape)
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) or eps < 0:
            raise ValueError(f"LayerNorm: eps must be a non-negative number, got {eps!r}")
        self.normalized_shape, self.eps = normalized_shape, eps
        self.weight = Parameter(np.ones(self.normalized_shape, np.float32)) \
            if elementwise_affine else None
        self.bias = Parameter(np.zeros(self.normalized_shape, np.float32)) \
            if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Dropout(Module):
    """Zero each element with probability p while training (inverted: survivors scale 1/(1-p))."""

    def __init__(self, p=0.5):
        _prob_arg("Dropout", "p", p)
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """x * Phi(x); approximate='tanh' for the GPT-2 approximation."""

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class MultiHeadAttention(Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K,
    V W_i^V), with explicit projections w_q, w_k, w_v (d_model -> h*d_k) and w_o.

    Shapes (batch first): query (B, n, d_model), key/value (B, m, d_model) -> (B, n, d_model).
    Self-attention passes the same tensor three times; cross-attention passes the decoder state
    as query and the encoder output H as key and value.

    Masks follow torch.nn.MultiheadAttention: `attn_mask` (n, m) or (B*h or B, h, n, m) is a
    bool mask where True means "may NOT attend", or a float mask added to the scores;
    `key_padding_mask` (B, m) is True at padded keys. A query row whose keys are all masked
    gets zero weights (no NaN). With need_weights the attention weights A are returned as
    (B, h, n, m), or averaged over heads to (B, n, m) with average_attn_weights=True.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, kdim=None, vdim=None):
        embed_dim = _int_arg("MultiHeadAttention", "embed_dim", embed_dim)
        num_heads = _int_arg("MultiHeadAttention", "num_heads", num_heads)
        _prob_arg("MultiHeadAttention", "dropout", dropout, upper_open=True)
        for name, d in (("kdim", kdim), ("vdim", vdim)):
            if d is not None:
                _int_arg("MultiHeadAttention", name, d)
        if embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} is not divisible by "
                             f"num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.w_q = Linear(embed_dim, embed_dim, bias)
        self.w_k = Linear(kdim or embed_dim, embed_dim, bias)
        self.w_v = Linear(vdim or embed_dim, embed_dim, bias)
        self.w_o = Linear(embed_dim, embed_dim, bias)

    def _split(self, x):
        B, n, _ = x.shape
        x = x.reshape(B, n, self.num_heads, self.head_dim)   # (B, n, h, d_k)
        return x.transpose(1, 2)                              # (B, h, n, d_k)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None,
                need_weights=False, average_attn_weights=True, is_causal=False):
        B, n, d = query.shape
        m = key.shape[1]
        q = self._split(self.w_q(query))                      # Q = X W^Q: (B, h, n, d_k)
        k = self._split(self.w_k(key))                        # K = X W^K: (B, h, m, d_k)
        v = self._split(self.w_v(value))                      # V = X W^V: (B, h, m, d_v)
        blocked = None                                        # True = may not attend
        additive = None
        if attn_mask is not None:
            if isinstance(attn_mask, Tensor) and attn_mask.requires_grad:
                raise TypeError("MultiHeadAttention: attn_mask is read as a constant here and "
                                "would get no gradient; for a learned bias call "
                                "F.scaled_dot_product_attention or F.attention with it")
            am = attn_mask.data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
            if am.ndim == 3:                                  # (B*h, n, m) as in PyTorch
                am = am.reshape(B, self.num_heads, n, m)      # (B, h, n, m)
            if am.dtype == np.bool_:
                blocked = am
            else:
                additive = am
        if key_padding_mask is not None:
            kp = key_padding_mask.data if isinstance(key_padding_mask, Tensor) \
                else np.asarray(key_padding_mask)
            if kp.shape != (B, m):
                raise OpError(f"MultiHeadAttention at {current_scope() or '<top>'}: "
                              f"key_padding_mask has shape {kp.shape}, expected (B, m) = "
                              f"{(B, m)}")
            kp = kp.astype(bool)[:, None, None, :]            # (B, 1, 1, m)
            blocked = kp if blocked is None else (blocked | kp)
        if is_causal:
            causal = np.triu(np.ones((n, m), dtype=bool), k=1 + m - n)
            blocked = causal if blocked is None else (blocked | causal)
        mask = None
        if blocked is not None:
            mask = ~blocked
            if additive is not None:
                additive = np.where(blocked, -np.inf, additive)
                mask = None
        if additive is not None:
            mask = additive
        z, a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0,
            return_weights=True)                              # Z: (B, h, n, d_v)
        z = z.transpose(1, 2).reshape(B, n, d)                # Concat(head_1..head_h): (B, n, h*d_v)
        out = self.w_o(z)                                     # Concat(...) W^O: (B, n, d_model)
        if not need_weights:
            return out, None
        return out, (a.mean(dim=1) if average_attn_weights else a)

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


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
        ref = weakref.ref(module, lambda r, key=key: _OUTERMOST.get(key) is r
                          and _OUTERMOST.pop(key))
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
