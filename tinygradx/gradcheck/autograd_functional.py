"""torch.autograd.functional's functions of (func, inputs), with PyTorch's names: `jacobian`,
`hessian`, `hvp`, `vhp`. They return values, not functions, and constants unless
create_graph=True, as PyTorch's do. Re-exported by tinygradx.func.

`hvp` is exact: H v is the derivative, in u along v, of the recorded u -> H^T u (the double vjp
of jacobians.py), so every op of `func` needs a backward that runs on Tensors.
"""
from __future__ import annotations

import numpy as np

from ..autograd import enable_grad
from ..autograd.custom_function import inside_transform
from ..tensor import Tensor
from .jacobians import (as_tuple, check_like, enter, jac_columns, jac_rows, jvp_from,
                        linear_vjp, named, nest, outputs_of, release, vjp_of, zeros_if_none)
from .transforms import jacrev

__all__ = ["jacobian", "hessian", "hvp", "vhp"]


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
    in_tuple, inputs = as_tuple(inputs, "jacobian", "inputs")
    xs = tuple(enter(x, create_graph) for x in inputs)
    with enable_grad():
        out_tuple, outs = outputs_of(func(*xs), "jacobian")
    method = jac_columns if strategy == "forward-mode" else jac_rows
    table = method(outs, xs, create_graph)
    for k, row in enumerate(table):
        for i, j in enumerate(row):
            if strict and j is None:
                raise RuntimeError(f"jacobian: output {k} of the function is independent of "
                                   f"input {i}, which strict=True does not allow")
    return release(nest(table, outs, xs, out_tuple, in_tuple), create_graph)


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
    gs = vjp_of([out], xs, [Tensor(np.ones(out.shape, out.dtype))], create_graph=True)
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
        twice = jacrev(jacrev(func, nums), nums)

        def transform(*args, **kwargs):   # torch's is jacfwd(jacrev(f)): its conditions
            with inside_transform("hessian"):
                return twice(*args, **kwargs)
        return named(transform, func, "hessian")
    in_tuple, inputs = as_tuple(inputs, "hessian", "inputs")

    def gradient(*xs):
        _, gs = _scalar_and_grad(func, xs, "hessian", strict)
        gs = zeros_if_none(gs, xs)
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
    _, vs = as_tuple(v, fname, "v")
    vs = check_like(vs, inputs, fname, "v", "inputs")
    return tuple(x if create_graph and x.requires_grad else x.detach() for x in vs)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.hvp: (func(inputs), H v) for func returning one element, v
    shaped like the inputs (a tuple for a tuple of inputs). H v is the derivative, in u along
    v, of the recorded u -> H^T u, as PyTorch computes it."""
    in_tuple, inputs = as_tuple(inputs, "hvp", "inputs")
    vs = _vectors(v, inputs, create_graph, "hvp")
    xs = tuple(enter(x, create_graph) for x in inputs)
    out, gs = _scalar_and_grad(func, xs, "hvp", strict)
    us, double = linear_vjp(gs, xs)
    res = zeros_if_none(jvp_from(us, double, vs, create_graph), xs)
    return release(out, create_graph), release(res if in_tuple else res[0], create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vhp: (func(inputs), v^T H), one backward through the recorded
    gradient; equal to hvp's H v wherever the Hessian is symmetric."""
    in_tuple, inputs = as_tuple(inputs, "vhp", "inputs")
    vs = _vectors(v, inputs, create_graph, "vhp")
    xs = tuple(enter(x, create_graph) for x in inputs)
    out, gs = _scalar_and_grad(func, xs, "vhp", strict)
    res = zeros_if_none(vjp_of(gs, xs, vs, create_graph), xs)
    return release(out, create_graph), release(res if in_tuple else res[0], create_graph)
