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

The functions live by kind: the torch.func transforms and `functional_call` in transforms.py,
torch.autograd.functional's in autograd_functional.py, and what both stand on (input checks,
the vjp, Jacobians by rows and by columns) in jacobians.py.
"""
from __future__ import annotations

from .autograd_functional import hessian, hvp, jacobian, vhp
from .transforms import (functional_call, grad, grad_and_value, jacfwd, jacrev, jvp,
                         value_and_grad, vjp)

__all__ = ["grad", "grad_and_value", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd",
           "functional_call", "jacobian", "hessian", "hvp", "vhp"]
