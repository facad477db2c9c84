"""torch.func's transforms, with PyTorch's names: `grad`, `grad_and_value` (and JAX's
`value_and_grad`), `vjp`, `jvp`, `jacrev`, `jacfwd` return functions (or a function with the
value), and `functional_call` calls a module with some of its weights replaced. Re-exported by
tinygradx.func, whose docstring shows them at work.

They compose with ordinary autograd as PyTorch's do: when an input, a tangent or cotangent, or a
tensor `f` closes over (a module's parameters) requires grad, the results carry a graph back to
it (a gradient penalty is `tf.grad(lambda x: D(x).sum())(x)` then a backward). Otherwise they
are constants and no graph is recorded.
"""
from __future__ import annotations

import numpy as np

from ..autograd import enable_grad, is_grad_enabled
from ..autograd.custom_function import inside_transform
from ..tensor import Tensor
from .jacobians import (as_tuple, check_like, check_tensor, enter, jac_columns, jac_rows,
                        jvp_from, linear_vjp, named, nest, outputs_of, release, vjp_of,
                        zeros_if_none)

__all__ = ["grad", "grad_and_value", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd",
           "functional_call"]


# --------------------------------------------------------------------------------------------
# what the transforms share: the arguments differentiated, and whether a graph is kept
# --------------------------------------------------------------------------------------------

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
    """Run func with the arguments at argnums entered (see enter): (primals, xs, out, aux,
    keep) where keep says whether the results must carry the caller's graph."""
    nums = _argnums(argnums, args, fname)
    primals = [check_tensor(args[i], fname, f"argument {i}") for i in nums]
    outer = is_grad_enabled()          # a transform ignores an outer no_grad for its own work
    xs = [enter(p, outer) for p in primals]
    call = list(args)
    for i, x in zip(nums, xs, strict=True):
        call[i] = x
    with enable_grad(), inside_transform(fname):     # custom Functions: PyTorch's conditions
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
    gs = zeros_if_none(vjp_of([out], xs, [Tensor(np.ones((), out.dtype))], create_graph=keep,
                             retain_graph=keep), xs)
    g = gs[0] if not isinstance(argnums, tuple) else gs
    value = release(out, keep)
    return g, ((value, release(aux, keep)) if has_aux else value)


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function computing the gradient of `func` (which returns a scalar
    Tensor) w.r.t. its argument(s) at `argnums`: a Tensor, or a tuple for a tuple of argnums.
    With has_aux=True `func` returns (output, aux) and the result is (gradient, aux)."""
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs, "grad")
        return (g, value[1]) if has_aux else g
    return named(wrapper, func, "grad")


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: like `grad`, returning (gradient, output); with has_aux=True
    (gradient, (output, aux))."""
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs, "grad_and_value")
    return named(wrapper, func, "grad_and_value")


def value_and_grad(func, argnums=0, has_aux=False):
    """`grad_and_value` with the pair the other way round, JAX's order: (output, gradient), or
    ((output, aux), gradient) with has_aux=True."""
    def wrapper(*args, **kwargs):
        g, value = _grad_and_value(func, argnums, has_aux, args, kwargs, "value_and_grad")
        return value, g
    return named(wrapper, func, "value_and_grad")


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]). `vjp_fn(cotangents)` (a Tensor, or a
    tuple for a tuple output, shaped like the output) returns v^T J as a tuple with one Tensor
    per primal (zeros for a primal the output does not use); call it as often as needed."""
    if not primals:
        raise TypeError("vjp: expected at least one primal Tensor after the function")
    primals, xs, out, aux, outer = _call(func, tuple(range(len(primals))), primals, {},
                                         has_aux, "vjp")
    out_tuple, outs = outputs_of(out, "vjp")
    keep = _keep(outer, primals, outs, xs)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        if out_tuple == isinstance(cotangents, Tensor):
            raise TypeError(f"vjp_fn: the output is a {'tuple' if out_tuple else 'Tensor'}, so "
                            f"the cotangents must be one too, got {type(cotangents).__name__}")
        _, cots = as_tuple(cotangents, "vjp_fn", "cotangents")
        cots = check_like(cots, outs, "vjp_fn", "cotangents", "outputs")
        if create_graph is None:
            create_graph = is_grad_enabled() and (keep or any(c.requires_grad for c in cots))
        return zeros_if_none(vjp_of(outs, xs, cots, create_graph, retain_graph), xs)

    result = (release(out, keep), vjp_fn)
    return result + (release(aux, keep),) if has_aux else result


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
    _, tangents = as_tuple(tuple(tangents), "jvp", "tangents")
    primals, xs, out, aux, outer = _call(func, tuple(range(len(primals))), tuple(primals), {},
                                         has_aux, "jvp")
    tangents = check_like(tangents, primals, "jvp", "tangents", "primals")
    out_tuple, outs = outputs_of(out, "jvp")
    keep = _keep(outer, primals + list(tangents), outs, xs)
    us, gs = linear_vjp(outs, xs)
    jv = zeros_if_none(jvp_from(us, gs, tangents, keep), outs)
    result = (release(out, keep), jv if out_tuple else jv[0])
    return result + (release(aux, keep),) if has_aux else result


def _jac_transform(func, argnums, has_aux, args, kwargs, fname, method):
    primals, xs, out, aux, outer = _call(func, argnums, args, kwargs, has_aux, fname)
    out_tuple, outs = outputs_of(out, fname)
    keep = _keep(outer, primals, outs, xs)
    jac = nest(method(outs, xs, keep), outs, xs, out_tuple, isinstance(argnums, tuple))
    return (jac, release(aux, keep)) if has_aux else jac


def jacrev(func, argnums=0, *, has_aux=False):
    """torch.func.jacrev: a function computing the Jacobian of `func` w.r.t. the argument(s) at
    `argnums` by reverse mode (one vjp per output element): shape output.shape + input.shape;
    tuples for a tuple of argnums and/or a tuple output (outputs outermost)."""
    def wrapper(*args, **kwargs):
        return _jac_transform(func, argnums, has_aux, args, kwargs, "jacrev", jac_rows)
    return named(wrapper, func, "jacrev")


def jacfwd(func, argnums=0, *, has_aux=False):
    """torch.func.jacfwd: as `jacrev`, column by column (one jvp per input element): the same
    numbers, cheaper when the inputs have fewer elements than the outputs."""
    def wrapper(*args, **kwargs):
        return _jac_transform(func, argnums, has_aux, args, kwargs, "jacfwd", jac_columns)
    return named(wrapper, func, "jacfwd")


# --------------------------------------------------------------------------------------------
# functional_call: a module's weights as arguments of one call
# --------------------------------------------------------------------------------------------

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

