"""tinygradx.func: derivatives as functions, with PyTorch's names (torch.func and
torch.autograd.functional).

    import tinygradx.func as tf
    tf.grad(loss_fn)(w, x)                     # torch.func.grad: d loss_fn / d w, as a function
    tf.grad_and_value(loss_fn)(w, x)           # (gradient, loss); value_and_grad: (loss, gradient)
    out, vjp_fn = tf.vjp(f, x); vjp_fn(v)      # v^T J, one tuple entry per primal
    out, jv = tf.jvp(f, (x,), (u,))            # J u
    tf.jacrev(f)(x), tf.jacfwd(f)(x)           # the Jacobian, by rows or by columns
    tf.jacobian(f, x), tf.hessian(f, x)        # torch.autograd.functional's
    tf.hessian(f)(x)                           # torch.func.hessian's form (no inputs given)
    tf.hvp(f, x, v), tf.vhp(f, x, v)           # (f(x), H v), (f(x), v^T H)
    tf.functional_call(model, {"fc.weight": w}, (x,))   # model(x) with fc.weight = w

Each function calls `f` on fresh inputs that require grad and differentiates with `tgx.grad`, so
nothing here touches a `.grad` or the caller's graph. Forward-mode products (`jvp`, `jacfwd`,
`hvp`) are exact: the vjp u -> J^T u is recorded with create_graph=True, and since it is linear
in u its derivative in u along t is J t (the "double vjp"). So everything second-order needs
every op of `f` to have a `backward` that runs on Tensors (the engine's all do).

The torch.func transforms (grad, grad_and_value, value_and_grad, vjp, jvp, jacrev, jacfwd)
compose with ordinary autograd as PyTorch's do: when an input, a tangent or cotangent, or a
tensor `f` closes over (a module's parameters) requires grad, the results carry a graph back to
it (a gradient penalty is `tf.grad(lambda x: D(x).sum())(x)` then a backward). Otherwise they
are constants and no graph is recorded. The torch.autograd.functional ones (jacobian, hessian,
hvp, vhp) return constants unless create_graph=True, as PyTorch's do.
"""
from __future__ import annotations

import numpy as np

from ..autograd import backprop
from ..autograd import enable_grad, is_grad_enabled
from ..tensor.creation import stack
from ..ops.movement import Reshape
from ..tensor import Tensor

__all__ = ["grad", "grad_and_value", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd",
           "functional_call", "jacobian", "hessian", "hvp", "vhp"]


# --------------------------------------------------------------------------------------------
# checks and plumbing shared by every transform
# --------------------------------------------------------------------------------------------

def _check_tensor(x, fname, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}: {what} is a {type(x).__name__}, expected a Tensor")
    if x.dtype.kind != "f":
        raise TypeError(f"{fname}: {what} has dtype {x.dtype}; only floating-point Tensors can "
                        f"be differentiated")
    return x


def _as_tuple(xs, fname, what):
    """(was a tuple, the Tensors as a tuple): one Tensor or a tuple/list of them."""
    if isinstance(xs, Tensor):
        return False, (_check_tensor(xs, fname, what),)
    if not isinstance(xs, (tuple, list)) or not xs:
        raise TypeError(f"{fname}: {what} must be a Tensor or a non-empty tuple of Tensors, got "
                        f"{type(xs).__name__}")
    return True, tuple(_check_tensor(x, fname, f"{what}[{i}]") for i, x in enumerate(xs))


def _check_like(vs, xs, fname, what, of):
    """vs must match xs one to one in shape; a dtype that differs is cast (as PyTorch's engine
    casts a seed gradient)."""
    if len(vs) != len(xs):
        raise ValueError(f"{fname}: {len(vs)} {what} for {len(xs)} {of}")
    out = []
    for i, (v, x) in enumerate(zip(vs, xs, strict=True)):
        if v.shape != x.shape:
            raise ValueError(f"{fname}: {what}[{i}] has shape {v.shape} but {of}[{i}] has "
                             f"shape {x.shape}; they must match")
        out.append(v if v.dtype == x.dtype else v.to(x.dtype))
    return tuple(out)


def _enter(x, connect):
    """x as an input of the differentiated call: a new node after x when x's own graph must be
    kept (the results then reach x too), else a detached alias that requires grad."""
    if connect and x.requires_grad:
        return Reshape.apply(x, shape=x.shape)
    return x.detach().requires_grad_(True)


def _outputs(out, fname):
    """(was a tuple, the Tensors as a tuple) of what the user's function returned."""
    if isinstance(out, Tensor):
        return False, (out,)
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return True, tuple(out)
    raise TypeError(f"{fname}: the function must return a Tensor or a tuple of Tensors, got "
                    f"{type(out).__name__}")


def _split_aux(out, has_aux, fname):
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{fname}: with has_aux=True the function must return a pair "
                        f"(output, aux), got {type(out).__name__}")
    return out[0], out[1]


def _reaches_outer(outs, inner):
    """Whether the graph of `outs` reaches a tensor that requires grad other than through the
    `inner` inputs: a parameter the function closes over, or a graph of the caller's."""
    inner = {id(x) for x in inner}
    stack_, seen = [o for o in outs if o.requires_grad], set()
    while stack_:
        t = stack_.pop()
        if id(t) in seen or id(t) in inner:
            continue
        seen.add(id(t))
        if t._ctx is None:
            return True
        stack_ += [p for p, need in zip(t._ctx.parents, t._ctx.needs_input_grad, strict=True)
                   if need]
    return False


def _release(x, keep):
    """A result handed back: itself when it keeps the caller's graph, else detached (Tensors
    inside tuples, lists and dicts too, for `aux`)."""
    if keep:
        return x
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_release(v, keep) for v in x)
    if isinstance(x, dict):
        return {k: _release(v, keep) for k, v in x.items()}
    return x


def _vjp(outs, xs, cots, create_graph, retain_graph=True):
    """sum_k <cots[k], outs[k]> differentiated w.r.t. each of xs; None where an x is unused."""
    live = [(o, c) for o, c in zip(outs, cots, strict=True) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(xs)
    with enable_grad():
        return backprop.grad([o for o, _ in live], list(xs), [c for _, c in live],
                             retain_graph=retain_graph, create_graph=create_graph,
                             allow_unused=True)


def _zeros_if_none(gs, xs):
    return tuple(Tensor(np.zeros(x.shape, x.dtype)) if g is None else g
                 for g, x in zip(gs, xs, strict=True))


def _one_hot(shape, dtype, j):
    e = np.zeros(shape, dtype)
    e.reshape(-1)[j] = 1
    return Tensor(e)


def _stack_rows(rows, shape, create_graph):
    """Tensors (one per output element) stacked to one Tensor of `shape`."""
    if create_graph:
        return stack(rows).reshape(shape)
    return Tensor(np.stack([r.detach().numpy() for r in rows]).reshape(shape))


# --------------------------------------------------------------------------------------------
# Jacobians by rows (reverse mode) and by columns (the double vjp)
# --------------------------------------------------------------------------------------------

def _jac_rows(outs, xs, create_graph):
    """[[d outs[k] / d xs[i]]]: one backward per output element; None where unused."""
    result = []
    for o in outs:
        rows = [[] for _ in xs]
        for j in range(o.numel() if o.requires_grad else 0):
            gs = _vjp([o], xs, [_one_hot(o.shape, o.dtype, j)], create_graph)
            for i, g in enumerate(gs):
                if g is not None:
                    rows[i].append(g)
        result.append([_stack_rows(rows[i], o.shape + x.shape, create_graph) if rows[i] else None
                       for i, x in enumerate(xs)])
    return result


def _linear_vjp(outs, xs):
    """(dummy cotangents u, the recorded J^T u per x): J^T u is linear in u, so its derivative
    in u along a tangent t is J t. u is None for an output that needs no gradient."""
    us = [None if o is None or not o.requires_grad else
          Tensor(np.zeros(o.shape, o.dtype), requires_grad=True) for o in outs]
    return us, _vjp(outs, xs, us, create_graph=True)


def _jvp_from(us, gs, tangents, create_graph):
    """J t per output from the recorded J^T u (_linear_vjp); None where J t is zero."""
    pairs = [(g, t) for g, t in zip(gs, tangents, strict=True)
             if g is not None and g.requires_grad]
    live = [u for u in us if u is not None]
    if not pairs or not live:
        return (None,) * len(us)
    with enable_grad():
        res = iter(backprop.grad([g for g, _ in pairs], live, [t for _, t in pairs],
                                 retain_graph=True, create_graph=create_graph,
                                 allow_unused=True))
    return tuple(None if u is None else next(res) for u in us)


def _jac_columns(outs, xs, create_graph):
    """[[d outs[k] / d xs[i]]] one input element at a time (a jvp per element)."""
    us, gs = _linear_vjp(outs, xs)
    cols = [[[] for _ in xs] for _ in outs]
    for i, x in enumerate(xs):
        for e in range(x.numel()):
            tangents = [_one_hot(x.shape, x.dtype, e) if m == i else Tensor(np.zeros(y.shape,
                                                                                   y.dtype))
                        for m, y in enumerate(xs)]
            jv = _jvp_from(us, gs, tangents, create_graph)
            for k, o in enumerate(outs):
                cols[k][i].append(jv[k] if jv[k] is not None else
                                  Tensor(np.zeros(o.shape, o.dtype)))
    result = []
    for k, o in enumerate(outs):
        per_x = []
        for i, x in enumerate(xs):
            used = gs[i] is not None and gs[i].requires_grad
            if not used:
                per_x.append(None)
            elif create_graph:
                per_x.append(stack(cols[k][i], dim=-1).reshape(o.shape + x.shape))
            else:
                per_x.append(Tensor(np.stack([c.detach().numpy() for c in cols[k][i]], axis=-1)
                                    .reshape(o.shape + x.shape)))
        result.append(per_x)
    return result


def _nest(table, outs, xs, out_tuple, in_tuple):
    """A Jacobian table [[J_ki]] shaped as PyTorch returns it: a Tensor, a tuple per output or
    per input, or a tuple (per output) of tuples (per input); zeros where None."""
    table = [[Tensor(np.zeros(o.shape + x.shape, o.dtype)) if j is None else j
              for j, x in zip(row, xs, strict=True)] for row, o in zip(table, outs, strict=True)]
    rows = [tuple(row) if in_tuple else row[0] for row in table]
    return tuple(rows) if out_tuple else rows[0]


# --------------------------------------------------------------------------------------------
# torch.func: transforms that return functions, composable with ordinary autograd
# --------------------------------------------------------------------------------------------

def _argnums(argnums, args, fname):
    """The argument positions to differentiate, checked as torch.func checks them."""
    def is_int(a):
        return isinstance(a, int) and not isinstance(a, bool)

    if not (is_int(argnums) or (isinstance(argnums, tuple) and all(map(is_int, argnums)))):
        raise TypeError(f"{fname}: argnums must be an int or a tuple of ints, got {argnums!r}")
    nums = (argnums,) if is_int(argnums) else argnums
    if not nums:
        raise ValueError(f"{fname}: argnums must not be empty")
    n = len(args)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"{fname}: argnums {a} is out of range for a call with {n} "
                             f"positional arguments")
    nums = [a % n for a in nums]
    if len(set(nums)) != len(nums):
        raise ValueError(f"{fname}: argnums must be unique, got {argnums}")
    return nums


def _call(func, argnums, args, kwargs, has_aux, fname):
    """Run func with the arguments at argnums entered (see _enter): (primals, xs, out, aux,
    keep) where keep says whether the results must carry the caller's graph."""
    nums = _argnums(argnums, args, fname)
    primals = [_check_tensor(args[i], fname, f"argument {i}") for i in nums]
    outer = is_grad_enabled()          # a transform ignores an outer no_grad for its own work
    xs = [_enter(p, outer) for p in primals]
    call = list(args)
    for i, x in zip(nums, xs, strict=True):
        call[i] = x
    with enable_grad():
        out, aux = _split_aux(func(*call, **kwargs), has_aux, fname)
    return primals, xs, out, aux, outer


def _keep(outer, originals, outs, xs):
    return outer and (any(t.requires_grad for t in originals) or _reaches_outer(outs, xs))


def _grad_and_value(func, argnums, has_aux, args, kwargs, fname):
    primals, xs, out, aux, outer = _call(func, argnums, args, kwargs, has_aux, fname)
    if not isinstance(out, Tensor) or out.ndim != 0:
        got = f"shape {out.shape}" if isinstance(out, Tensor) else type(out).__name__
        raise RuntimeError(f"{fname}(f)(*args): f must return a scalar (0-d) Tensor, got {got}; "
                           f"for other outputs use vjp or jacrev")
    keep = _keep(outer, primals, [out], xs)
    gs = _zeros_if_none(_vjp([out], xs, [Tensor(np.ones((), out.dtype))], create_graph=keep,
                             retain_graph=keep), xs)
    g = gs[0] if not isinstance(argnums, tuple) else gs
    value = _release(out, keep)
    return g, ((value, _release(aux, keep)) if has_aux else value)


def _named(wrapper, func, fname):
    wrapper.__name__ = f"{fname}({getattr(func, '__name__', 'f')})"
    wrapper.__doc__ = f"{fname} of {getattr(func, '__name__', 'a function')} (tinygradx.func)"
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function computing the gradient of `func` (which returns a scalar
    Tensor) w.r.t. its argument(s) at `argnums`: a Tensor, or a tuple for a tuple of argnums.
    With has_aux=True `func` returns (output, aux) and the result is (gradient, aux)."""
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs, "grad")
        return (g, value[1]) if has_aux else g
    return _named(wrapper, func, "grad")


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: like `grad`, returning (gradient, output); with has_aux=True
    (gradient, (output, aux))."""
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs, "grad_and_value")
    return _named(wrapper, func, "grad_and_value")


def value_and_grad(func, argnums=0, has_aux=False):
    """`grad_and_value` with the pair the other way round, JAX's order: (output, gradient), or
    ((output, aux), gradient) with has_aux=True."""
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs, "value_and_grad")
        return value, g
    return _named(wrapper, func, "value_and_grad")


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]). `vjp_fn(cotangents)` (a Tensor, or a
    tuple for a tuple output, shaped like the output) returns v^T J as a tuple with one Tensor
    per primal (zeros for a primal the output does not use); call it as often as needed."""
    if not primals:
        raise TypeError("vjp: expected at least one primal Tensor after the function")
    primals, xs, out, aux, outer = _call(func, tuple(range(len(primals))), primals, {},
                                         has_aux, "vjp")
    out_tuple, outs = _outputs(out, "vjp")
    keep = _keep(outer, primals, outs, xs)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if out_tuple == isinstance(cotangents, Tensor):
            raise TypeError(f"vjp_fn: the output is a {'tuple' if out_tuple else 'Tensor'}, so "
                            f"the cotangents must be one too, got {type(cotangents).__name__}")
        _, cots = _as_tuple(cotangents, "vjp_fn", "cotangents")
        cots = _check_like(cots, outs, "vjp_fn", "cotangents", "outputs")
        if create_graph is None:
            create_graph = is_grad_enabled() and (keep or any(c.requires_grad for c in cots))
        return _zeros_if_none(_vjp(outs, xs, cots, create_graph, retain_graph), xs)

    result = (_release(out, keep), vjp_fn)
    return result + (_release(aux, keep),) if has_aux else result


def jvp(func, primals, tangents, *, has_aux=False):
    """torch.func.jvp: (func(*primals), J t) for tangents t shaped like the primals; J t is
    shaped like the output (a tuple for a tuple output). Exact: the derivative of the recorded
    vjp u -> J^T u in u along t, so every op of func needs a backward that runs on Tensors."""
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"jvp(f, primals, tangents): {what} must be a tuple of Tensors "
                            f"(f(*primals) is called), got {type(v).__name__}")
    if not primals:
        raise TypeError("jvp: expected at least one primal Tensor")
    _, tangents = _as_tuple(tuple(tangents), "jvp", "tangents")
    primals, xs, out, aux, outer = _call(func, tuple(range(len(primals))), tuple(primals), {},
                                         has_aux, "jvp")
    tangents = _check_like(tangents, primals, "jvp", "tangents", "primals")
    out_tuple, outs = _outputs(out, "jvp")
    keep = _keep(outer, primals + list(tangents), outs, xs)
    us, gs = _linear_vjp(outs, xs)
    jv = _zeros_if_none(_jvp_from(us, gs, tangents, keep), outs)
    result = (_release(out, keep), jv if out_tuple else jv[0])
    return result + (_release(aux, keep),) if has_aux else result


def _jac_transform(func, argnums, has_aux, args, kwargs, fname, method):
    primals, xs, out, aux, outer = _call(func, argnums, args, kwargs, has_aux, fname)
    out_tuple, outs = _outputs(out, fname)
    keep = _keep(outer, primals, outs, xs)
    jac = _nest(method(outs, xs, keep), outs, xs, out_tuple, isinstance(argnums, tuple))
    return (jac, _release(aux, keep)) if has_aux else jac


def jacrev(func, argnums=0, *, has_aux=False):
    """torch.func.jacrev: a function computing the Jacobian of `func` w.r.t. the argument(s) at
    `argnums` by reverse mode (one vjp per output element): shape output.shape + input.shape;
    tuples for a tuple of argnums and/or a tuple output (outputs outermost)."""
    def wrapper(*args, **kwargs):
        return _jac_transform(func, argnums, has_aux, args, kwargs, "jacrev", _jac_rows)
    return _named(wrapper, func, "jacrev")


def jacfwd(func, argnums=0, *, has_aux=False):
    """torch.func.jacfwd: as `jacrev`, column by column (one jvp per input element): the same
    numbers, cheaper when the inputs have fewer elements than the outputs."""
    def wrapper(*args, **kwargs):
        return _jac_transform(func, argnums, has_aux, args, kwargs, "jacfwd", _jac_columns)
    return _named(wrapper, func, "jacfwd")


def _attribute_slots(module):
    """{dotted name: (owning module, attribute, tensor)} of every attribute holding one of the
    module's parameters or buffers, tied names included (duck-typed: floor 2 cannot import
    Module, and needs only named_modules/named_parameters/named_buffers)."""
    tracked = {id(t) for _, t in module.named_parameters()}
    tracked |= {id(t) for _, t in module.named_buffers()}
    slots = {}
    for mname, m in module.named_modules():
        for attr, obj in vars(m).items():
            if id(obj) in tracked:
                slots[f"{mname}.{attr}" if mname else attr] = (m, attr, obj)
    return slots


def _swaps(module, given, tie_weights, strict):
    """[(owning module, attribute, new tensor)] for functional_call, checked."""
    slots = _attribute_slots(module)
    by_tensor = {}
    for name, value in given.items():
        if name not in slots:
            raise ValueError(f"functional_call: {type(module).__name__} has no parameter or "
                             f"buffer named {name!r} (held as a module attribute)")
        if not isinstance(value, Tensor):
            raise TypeError(f"functional_call: the value for {name!r} is a "
                            f"{type(value).__name__}, expected a Tensor")
        old = slots[name][2]
        if tie_weights and by_tensor.get(id(old), (name, value))[1] is not value:
            raise ValueError(f"functional_call: {by_tensor[id(old)][0]!r} and {name!r} are tied "
                             f"(one tensor) but were given different values")
        by_tensor[id(old)] = (name, value)
    if strict:
        missing = [n for n, (_, _, t) in slots.items() if id(t) not in by_tensor]
        if missing:
            raise ValueError(f"functional_call: strict=True needs every parameter and buffer; "
                             f"missing {', '.join(missing)}")
    if tie_weights:
        return [(m, attr, by_tensor[id(t)][1]) for m, attr, t in slots.values()
                if id(t) in by_tensor]
    return [(slots[n][0], slots[n][1], v) for n, v in given.items()]


def functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, *,
                    tie_weights=True, strict=False):
    """torch.func.functional_call: module(*args, **kwargs) with the parameters and buffers named
    in the dict(s) (as named_parameters() names them) replaced by the given Tensors for this
    one call, then put back. Gradients flow to the given Tensors, so `hessian`, `grad` and a
    meta-learning step can treat a module's weights as function arguments. A tied weight
    (one tensor under two names) is replaced under both unless tie_weights=False."""
    dicts = parameter_and_buffer_dicts
    dicts = dicts if isinstance(dicts, (tuple, list)) else (dicts,)
    given = {}
    for d in dicts:
        for name, value in d.items():
            if name in given:
                raise ValueError(f"functional_call: {name!r} is given more than once")
            given[name] = value
    swaps = _swaps(module, given, tie_weights, strict)
    saved = [(m, attr, getattr(m, attr)) for m, attr, _ in swaps]
    args = args if isinstance(args, tuple) else (args,)
    try:
        for m, attr, value in swaps:
            setattr(m, attr, value)
        return module(*args, **(kwargs or {}))
    finally:
        for m, attr, value in reversed(saved):
            setattr(m, attr, value)


# --------------------------------------------------------------------------------------------
# torch.autograd.functional: functions of (func, inputs) returning values
# --------------------------------------------------------------------------------------------

def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """torch.autograd.functional.jacobian: the Jacobian of func at `inputs` (a Tensor or a tuple
    of Tensors): a Tensor of shape output.shape + input.shape, or tuples as PyTorch nests them
    (per output, then per input). strict=True refuses an output independent of an input
    instead of giving zeros; create_graph=True keeps the result differentiable. `vectorize`
    changes nothing here (PyTorch's batching; the numbers are the same); strategy
    "forward-mode" builds it column by column."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got "
                         f"{strategy!r}")
    in_tuple, inputs = _as_tuple(inputs, "jacobian", "inputs")
    xs = tuple(_enter(x, create_graph) for x in inputs)
    with enable_grad():
        out_tuple, outs = _outputs(func(*xs), "jacobian")
    method = _jac_columns if strategy == "forward-mode" else _jac_rows
    table = method(outs, xs, create_graph)
    for k, row in enumerate(table):
        for i, j in enumerate(row):
            if strict and j is None:
                raise RuntimeError(f"jacobian: output {k} of the function is independent of "
                                   f"input {i}, which strict=True does not allow")
    return _release(_nest(table, outs, xs, out_tuple, in_tuple), create_graph)


def _scalar_and_grad(func, xs, fname, strict):
    """(func(*xs), its gradient per x recorded with create_graph=True; None where unused)."""
    with enable_grad():
        out = func(*xs)
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}: the function must return a single Tensor, got "
                        f"{type(out).__name__}")
    if out.numel() != 1:
        raise ValueError(f"{fname}: the function must return a Tensor with a single element, "
                         f"got shape {out.shape}")
    gs = _vjp([out], xs, [Tensor(np.ones(out.shape, out.dtype))], create_graph=True)
    for i, g in enumerate(gs):
        if strict and (g is None or not g.requires_grad):
            raise RuntimeError(f"{fname}: the gradient w.r.t. input {i} does not depend on the "
                               f"inputs (that part of the Hessian is zero), which strict=True "
                               f"does not allow")
    return out, gs


def hessian(func, inputs=None, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode", *, argnums=None):
    """torch.autograd.functional.hessian: the Hessian of func (returning one element) at
    `inputs`: shape input.shape + input.shape, or a tuple of tuples for a tuple of inputs.

    Called without inputs, or with argnums (an int or a tuple of ints, as torch.func.hessian),
    it is torch.func's transform instead: `hessian(f)(x)` is `jacrev(jacrev(f))(x)`.
    """
    if argnums is not None or inputs is None or isinstance(inputs, int) or (
            isinstance(inputs, tuple) and inputs and all(type(i) is int for i in inputs)):
        nums = argnums if argnums is not None else 0 if inputs is None else inputs
        return _named(jacrev(jacrev(func, nums), nums), func, "hessian")
    in_tuple, inputs = _as_tuple(inputs, "hessian", "inputs")

    def gradient(*xs):
        _, gs = _scalar_and_grad(func, xs, "hessian", strict)
        gs = _zeros_if_none(gs, xs)
        return gs if in_tuple else gs[0]

    return jacobian(gradient, inputs if in_tuple else inputs[0], create_graph, strict,
                    vectorize, outer_jacobian_strategy)


def _vectors(v, inputs, create_graph, fname):
    """The v of hvp/vhp, one per input, checked; detached unless create_graph keeps it."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise ValueError(f"{fname}: v may be None only when the input is a single Tensor "
                             f"with one element")
        return (Tensor(np.ones(inputs[0].shape, inputs[0].dtype)),)
    _, vs = _as_tuple(v, fname, "v")
    vs = _check_like(vs, inputs, fname, "v", "inputs")
    return tuple(x if create_graph and x.requires_grad else x.detach() for x in vs)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.hvp: (func(inputs), H v) for func returning one element, v
    shaped like the inputs (a tuple for a tuple of inputs). H v is the derivative, in u along
    v, of the recorded u -> H^T u, as PyTorch computes it."""
    in_tuple, inputs = _as_tuple(inputs, "hvp", "inputs")
    vs = _vectors(v, inputs, create_graph, "hvp")
    xs = tuple(_enter(x, create_graph) for x in inputs)
    out, gs = _scalar_and_grad(func, xs, "hvp", strict)
    us, double = _linear_vjp(gs, xs)
    res = _zeros_if_none(_jvp_from(us, double, vs, create_graph), xs)
    return _release(out, create_graph), _release(res if in_tuple else res[0], create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vhp: (func(inputs), v^T H), one backward through the recorded
    gradient; equal to hvp's H v wherever the Hessian is symmetric."""
    in_tuple, inputs = _as_tuple(inputs, "vhp", "inputs")
    vs = _vectors(v, inputs, create_graph, "vhp")
    xs = tuple(_enter(x, create_graph) for x in inputs)
    out, gs = _scalar_and_grad(func, xs, "vhp", strict)
    res = _zeros_if_none(_vjp(gs, xs, vs, create_graph), xs)
    return _release(out, create_graph), _release(res if in_tuple else res[0], create_graph)
