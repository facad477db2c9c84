"""gradcheck: compare the analytic gradient of any function of Tensors with finite differences.

A public API, not a test helper: users check their own `Function` subclasses with it.

    tgx.gradcheck(lambda a, b: F.softmax(a @ b, dim=-1), (x.double(), w.double()))

Full mode builds both Jacobians (one backward per output element, two forwards per input
element). fast_mode compares one random projection v^T J u per input (one backward, two
forwards), so whole Transformer blocks are checked in seconds.
"""
from __future__ import annotations

import numpy as np

from ..autograd import backprop
from ..autograd import enable_grad, no_grad
from ..tensor import Tensor


class GradcheckError(AssertionError):
    """The analytic and numeric gradients disagree; the message says where and by how much."""


def _outputs(fn, inputs):
    out = fn(*inputs)
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"gradcheck: output {i} of the function is {type(o).__name__}, "
                            f"expected Tensors")
    return outs


def _numeric_outputs(fn, inputs, keep):
    """The outputs at positions `keep` as flat float64 arrays, computed without a graph."""
    with no_grad():
        outs = _outputs(fn, inputs)
        return [outs[k]._data.astype(np.float64).ravel() for k in keep]


def _prepare(name, fn, inputs):
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable (the function to check), got "
                        f"{type(fn).__name__}")
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not isinstance(inputs, (tuple, list)):
        raise TypeError(f"{name}: inputs must be a Tensor or a tuple of the function's "
                        f"arguments, got {type(inputs).__name__}")
    inputs = tuple(inputs)
    checked = []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype != np.float64:
                raise TypeError(
                    f"{name}: input {i} (shape {x.shape}) is {x.dtype}; finite differences "
                    f"need float64 (eps=1e-6 is below float32's resolution of ~1e-7 relative). "
                    f"Pass x.double() (and make the function compute in float64).")
            checked.append(i)
    if not checked:
        raise ValueError(f"{name}: no input has requires_grad=True, so there is nothing to "
                         f"check")
    return inputs, checked


def _perturbed_outputs(fn, inputs, i, flat_index, delta, keep):
    """fn's outputs with one element (or a whole direction) of input i moved.

    The input Tensor itself is moved (its array swapped for a moved copy, then restored), as
    PyTorch's gradcheck does, so a function that closes over the input (a module's own
    Parameter) sees the change too.
    """
    x = inputs[i]
    saved = x._data
    data = saved.copy()
    if flat_index is None:
        data += delta
    else:
        data.reshape(-1)[flat_index] += delta
    x._data = data
    try:
        return _numeric_outputs(fn, inputs, keep)
    finally:
        x._data = saved


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


# PyTorch's further keywords, per function, with their defaults. Those that only name what to
# check are accepted at any value where the check is the engine's own (check_grad_dtypes: a
# gradient always takes its input's dtype; masked: for sparse inputs; nondet_tol: the engine is
# deterministic, see _options), refused by name where tinygradx has nothing to check with.
GRADCHECK_FLAGS = {"nondet_tol": 0.0, "check_undefined_grad": True, "check_grad_dtypes": False,
                   "check_batched_grad": False, "check_batched_forward_grad": False,
                   "check_forward_ad": False, "check_backward_ad": True, "masked": None}
GRADGRADCHECK_FLAGS = {"nondet_tol": 0.0, "check_undefined_grad": True,
                       "check_grad_dtypes": False, "check_batched_grad": False,
                       "gen_non_contig_grad_outputs": False, "check_fwd_over_rev": False,
                       "check_rev_over_rev": True, "masked": False}
TORCH_FLAGS = {**GRADCHECK_FLAGS, **GRADGRADCHECK_FLAGS}
# why a flag set away from its default cannot be honoured (truthy: refused when true; falsy:
# refused when false)
_UNAVAILABLE = {
    "check_batched_grad": (True, "it checks gradients batched by vmap, and tinygradx has no "
                                 "vmap"),
    "check_batched_forward_grad": (True, "it checks forward-mode gradients batched by vmap; "
                                         "tinygradx has neither"),
    "check_forward_ad": (True, "tinygradx has no forward-mode AD to check (tinygradx.func.jvp "
                               "is computed in reverse mode)"),
    "check_fwd_over_rev": (True, "tinygradx has no forward-mode AD to check"),
    "check_backward_ad": (False, "tinygradx checks reverse-mode gradients only, so nothing "
                                 "would be checked"),
    "check_rev_over_rev": (False, "tinygradx checks reverse-mode second derivatives only, so "
                                  "nothing would be checked"),
}


def _real(x):
    return isinstance(x, (int, float, np.integer, np.floating))


def _options(name, flags, known, eps, atol, rtol):
    """Every argument checked as PyTorch checks it (the first three as its arithmetic would),
    each refusal one line naming the argument; returns nondet_tol."""
    for key in flags:
        if key not in known:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
    for key, (refused_when, why) in _UNAVAILABLE.items():
        if key in flags and bool(flags[key]) == refused_when:
            raise ValueError(f"{name}: {key}={flags[key]!r} is not available: {why}; leave it "
                             f"at {known[key]!r}")
    if isinstance(eps, bool) or not _real(eps):
        raise TypeError(f"{name}: eps must be a number (the finite-difference step), got "
                        f"{type(eps).__name__}")
    for arg, value in (("atol", atol), ("rtol", rtol)):
        if not _real(value):
            raise TypeError(f"{name}: {arg} must be a number >= 0, got {type(value).__name__}")
        if not value >= 0:                      # NaN too
            raise ValueError(f"{name}: {arg} must be a number >= 0, got {value!r}")
    nondet_tol = flags.get("nondet_tol", 0.0)
    if not _real(nondet_tol):
        raise TypeError(f"{name}: nondet_tol must be a number, got {type(nondet_tol).__name__}")
    return nondet_tol


def _positional(name, args, takes):
    if args:
        raise TypeError(f"{name}() takes {len(takes)} positional arguments ({', '.join(takes)}) "
                        f"but {len(takes) + len(args)} were given; pass eps, atol, rtol and the "
                        f"rest by keyword, as PyTorch's")


def _nonfinite(a):
    """'NaN at element (i, j)' / 'inf at ...' of the first non-finite entry of a, else None."""
    a = np.asarray(a)
    if a.dtype.kind not in "fc" or np.isfinite(a).all():
        return None
    e = np.argwhere(~np.isfinite(a))[0]
    kind = "NaN" if np.isnan(a[tuple(e)]) else "inf"
    return f"{kind} at element {tuple(int(i) for i in e)}"


def _bad_setup(name, inputs, checked, eps, nondet_tol):
    """Why the check cannot pass (eps zero or not finite: no difference quotient; nondet_tol
    negative: even two equal backward runs differ by more; an input holding NaN or inf: a
    difference of NaNs compares as no mismatch at all), else None. PyTorch reports each as a
    failed check too."""
    if not np.isfinite(eps) or eps == 0:
        return f"{name}: eps must be a finite number other than 0, got {eps!r}"
    if nondet_tol < 0:
        return (f"{name}: nondet_tol={nondet_tol!r} is negative, so two runs of the backward "
                f"with the same inputs (which agree exactly) already differ by more")
    for i in checked:
        where = _nonfinite(inputs[i]._data)
        if where is not None:
            return (f"{name}: input {i} (shape {inputs[i].shape}) holds {where}; finite "
                    f"differences of a non-finite input check nothing")
    return None


def _bad_jacobian(name, which, i, shape, jac):
    """A failure message when a Jacobian (analytic or numeric) holds NaN or inf, else None."""
    where = _nonfinite(jac)
    if where is None:
        return None
    return (f"{name}: the {which} Jacobian for input {i} (shape {shape}) holds {where} "
            f"(rows: input elements, columns: output elements); NaN or inf is never a match")


def gradcheck(fn, inputs, *args, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              fast_mode=False, seed=0, **torch_flags):
    """Check d fn(*inputs) / d inputs against central finite differences in float64.

    Parameters (after fn and inputs, by keyword only, as PyTorch's)
    ----------
    fn : callable taking the inputs and returning a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple; those with requires_grad=True are checked and must be float64.
    eps, atol, rtol : step of the central difference and the tolerance
        |analytic - numeric| <= atol + rtol * |numeric|, PyTorch's defaults.
    fast_mode : compare v^T J u for random u, v instead of the full Jacobian.
    raise_exception : raise GradcheckError on a mismatch (default) or return False. An error
        raised by the function or its backward goes on either way, as PyTorch's.
    seed : the random u, v of fast_mode (tinygradx's own; PyTorch draws from its global RNG).
    torch_flags : PyTorch's other keywords (`GRADCHECK_FLAGS`), each checked as PyTorch checks
        it, or refused by name where tinygradx has nothing to check with.

    Returns True when every checked gradient matches.
    """
    _positional("gradcheck", args, ("fn", "inputs"))
    nondet_tol = _options("gradcheck", torch_flags, GRADCHECK_FLAGS, eps, atol, rtol)
    inputs, checked = _prepare("gradcheck", fn, inputs)
    bad = _bad_setup("gradcheck", inputs, checked, eps, nondet_tol)
    if bad:
        return _fail(bad, raise_exception)
    outs = _outputs(fn, inputs)
    for i, o in enumerate(outs):
        if o.dtype.kind == "f" and o.dtype != np.float64:
            raise TypeError(f"gradcheck: output {i} is {o.dtype}; compute in float64 so the "
                            f"finite differences mean something")
    keep = [k for k, o in enumerate(outs) if o.requires_grad]
    if not keep:                 # as PyTorch: then no output may change with any input
        return _no_differentiable_outputs(fn, inputs, checked, outs, eps, atol,
                                          raise_exception)
    # outputs that do not require grad (an index, a detached value) are left out, as PyTorch
    if fast_mode:
        return _check_fast(fn, inputs, checked, outs, keep, eps, atol, rtol, raise_exception,
                           seed)
    return _check_full(fn, inputs, checked, outs, keep, eps, atol, rtol, raise_exception)


def _no_differentiable_outputs(fn, inputs, checked, outs, eps, atol, raise_exception):
    """No output requires grad: the check passes only if none changes with the inputs."""
    floats = [k for k, o in enumerate(outs) if o.dtype.kind == "f"]
    for i in checked:
        for e in range(inputs[i]._data.size):
            plus = _perturbed_outputs(fn, inputs, i, e, eps, floats)
            minus = _perturbed_outputs(fn, inputs, i, e, -eps, floats)
            for k, p, m in zip(floats, plus, minus, strict=True):
                d = np.abs((p - m) / (2 * eps)).max(initial=0.0)
                if not d <= atol:
                    return _fail(f"gradcheck: no output requires grad, so every derivative "
                                 f"must be zero, but output {k} changes with input {i} (shape "
                                 f"{inputs[i].shape}) at element "
                                 f"{tuple(int(w) for w in np.unravel_index(e, inputs[i].shape))}"
                                 f" (numeric derivative {d:.3g}): was it computed under "
                                 f"no_grad or detached?", raise_exception)
    return True


def _analytic_vjp(outs, inputs, checked, seeds):
    """sum_k <seed_k, out_k> differentiated w.r.t. the checked inputs (zeros where unused)."""
    pairs = [(o, s) for o, s in zip(outs, seeds, strict=True) if o.requires_grad]
    grads = backprop.grad([o for o, _ in pairs], [inputs[i] for i in checked],
                          grad_outputs=[Tensor(s.reshape(o.shape)) for o, s in pairs],
                          retain_graph=True, allow_unused=True)
    return [np.zeros(inputs[i].shape) if g is None else g._data
            for i, g in zip(checked, grads, strict=True)]


def _check_full(fn, inputs, checked, outs, keep, eps, atol, rtol, raise_exception):
    outs = [outs[k] for k in keep]
    sizes = [o._data.size for o in outs]
    n_out = sum(sizes)
    # analytic Jacobian rows: one VJP with a one-hot seed per output element
    analytic = {i: np.zeros((inputs[i]._data.size, n_out)) for i in checked}
    col = 0
    for k in range(len(outs)):
        for j in range(sizes[k]):
            seeds = [np.zeros(s) for s in sizes]
            seeds[k][j] = 1.0
            for i, g in zip(checked, _analytic_vjp(outs, inputs, checked, seeds), strict=True):
                analytic[i][:, col] = g.ravel()
            col += 1
    for i in checked:
        numeric = np.zeros_like(analytic[i])
        for e in range(inputs[i]._data.size):
            plus = _perturbed_outputs(fn, inputs, i, e, eps, keep)
            minus = _perturbed_outputs(fn, inputs, i, e, -eps, keep)
            numeric[e] = (np.concatenate(plus) - np.concatenate(minus)) / (2 * eps)
        for which, jac in (("analytic", analytic[i]), ("numeric", numeric)):
            msg = _bad_jacobian("gradcheck", which, i, inputs[i].shape, jac)
            if msg:
                return _fail(msg, raise_exception)
        bad = np.abs(analytic[i] - numeric) > atol + rtol * np.abs(numeric)
        if bad.any():
            e, c = np.argwhere(bad)[0]
            where = np.unravel_index(e, inputs[i].shape)
            k = int(np.searchsorted(np.cumsum(sizes), c, side="right"))
            msg = (f"gradcheck: Jacobian mismatch for input {i} (shape {inputs[i].shape}) at "
                   f"element {tuple(int(w) for w in where)}, output {keep[k]} element "
                   f"{int(c - sum(sizes[:k]))}: "
                   f"analytic {analytic[i][e, c]:.8g} vs numeric {numeric[e, c]:.8g} "
                   f"(|diff| {abs(analytic[i][e, c] - numeric[e, c]):.3g} > "
                   f"atol {atol} + rtol {rtol} * |numeric|); "
                   f"{int(bad.sum())} of {bad.size} entries differ, max |diff| "
                   f"{np.abs(analytic[i] - numeric).max():.3g}")
            return _fail(msg, raise_exception)
    return True


def _check_fast(fn, inputs, checked, outs, keep, eps, atol, rtol, raise_exception, seed):
    outs = [outs[k] for k in keep]
    rng = np.random.default_rng(seed)
    seeds = [rng.standard_normal(o._data.size) for o in outs]           # v, one per output
    analytic = _analytic_vjp(outs, inputs, checked, seeds)              # J^T v per input
    for i, g in zip(checked, analytic, strict=True):
        u = rng.standard_normal(inputs[i].shape)
        lhs = float(np.sum(g * u))                                       # v^T J u, analytic
        plus = _perturbed_outputs(fn, inputs, i, None, eps * u, keep)
        minus = _perturbed_outputs(fn, inputs, i, None, -eps * u, keep)
        rhs = sum(float(np.dot(v, (p - m) / (2 * eps)))                  # v^T J u, numeric
                  for v, p, m in zip(seeds, plus, minus, strict=True))
        for which, value in (("analytic", lhs), ("numeric", rhs)):
            if not np.isfinite(value):
                return _fail(f"gradcheck (fast_mode): the {which} v^T J u for input {i} (shape "
                             f"{inputs[i].shape}) is {value}; NaN or inf is never a match",
                             raise_exception)
        if abs(lhs - rhs) > atol + rtol * abs(rhs):
            msg = (f"gradcheck (fast_mode): mismatch for input {i} (shape {inputs[i].shape}): "
                   f"v^T J u analytic {lhs:.8g} vs numeric {rhs:.8g} (|diff| "
                   f"{abs(lhs - rhs):.3g} > atol {atol} + rtol {rtol} * |numeric|). Run with "
                   f"fast_mode=False on a smaller input to find the element.")
            return _fail(msg, raise_exception)
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *args, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, fast_mode=False, seed=0, **torch_flags):
    """Check the second derivatives of fn against finite differences, as PyTorch's gradgradcheck.

    It runs `gradcheck` on the first derivative: the function (inputs, v) -> d<v, fn(inputs)>/d
    inputs, computed with create_graph=True. So every op's `backward` on Tensors is checked, both
    in the inputs (the second derivative proper) and in v (that it is linear in the incoming
    gradient). `grad_outputs` are the v's (random float64 ones by default, one per output
    that needs a gradient; given ones are taken in the output's dtype); the other arguments are
    gradcheck's, by keyword only (`GRADGRADCHECK_FLAGS` for PyTorch's others).
    """
    _positional("gradgradcheck", args, ("fn", "inputs", "grad_outputs"))
    nondet_tol = _options("gradgradcheck", torch_flags, GRADGRADCHECK_FLAGS, eps, atol, rtol)
    inputs, checked = _prepare("gradgradcheck", fn, inputs)
    # a NaN input or eps is named here, before the comparison below could blame an op's rule
    bad = _bad_setup("gradgradcheck", inputs, checked, eps, nondet_tol)
    if bad:
        return _fail(bad, raise_exception)
    all_outs = _outputs(fn, inputs)
    diff = [k for k, o in enumerate(all_outs) if o.requires_grad]
    outs = [all_outs[k] for k in diff]
    if not outs:
        raise ValueError("gradgradcheck: no output of the function requires grad, so it has no "
                         "first derivative to check (was it computed under no_grad, or "
                         "detached?)")
    grad_outputs = _grad_outputs(grad_outputs, outs, seed)
    for k, v in enumerate(grad_outputs):
        where = _nonfinite(v._data)
        if where is not None:
            return _fail(f"gradgradcheck: grad_outputs[{k}] holds {where}", raise_exception)
    n = len(inputs)

    def first_derivative(*args):
        xs, vs = args[:n], args[n:]
        with enable_grad():                # gradcheck runs its finite differences in no_grad
            os = _outputs(fn, xs)
            gs = backprop.grad([os[k] for k in diff], [xs[i] for i in checked],
                               grad_outputs=list(vs), create_graph=True, allow_unused=True)
        return tuple(Tensor(np.zeros(xs[i].shape)) if g is None else g
                     for i, g in zip(checked, gs, strict=True))

    # the graph rules must give the first derivative that the array rules give, or the check
    # below would only test a wrong rule against itself (an error of the function or its
    # backward goes on, as PyTorch's)
    plain = backprop.grad(outs, [inputs[i] for i in checked], grad_outputs=[
        v.detach() for v in grad_outputs], retain_graph=True, allow_unused=True)
    recorded = first_derivative(*inputs, *grad_outputs)
    for i, a, b in zip(checked, plain, recorded, strict=True):
        a = np.zeros(inputs[i].shape) if a is None else a._data
        for which, arr in (("without", a), ("with", b._data)):
            where = _nonfinite(arr)
            if where is not None:
                return _fail(f"gradgradcheck: the first derivative for input {i} (shape "
                             f"{inputs[i].shape}) {which} create_graph=True holds {where}; "
                             f"the function is not differentiable at these inputs",
                             raise_exception)
        if not np.allclose(a, b._data, atol=atol, rtol=rtol):
            return _fail(f"gradgradcheck: for input {i} (shape {inputs[i].shape}) the "
                         f"first derivative with create_graph=True differs from the one without "
                         f"(max |diff| {np.abs(a - b._data).max():.3g}): some op's "
                         f"fast backward (autograd.fast_backward) disagrees with its formula",
                         raise_exception)
    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, fast_mode=fast_mode, raise_exception=raise_exception, seed=seed)


def _grad_outputs(grad_outputs, outs, seed):
    """The v's of gradgradcheck: given (a Tensor or a sequence, one per output that needs a
    gradient, each of its output's shape; taken in the output's dtype and requiring grad), or
    random float64 ones."""
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        return [Tensor(rng.standard_normal(o.shape), requires_grad=True) for o in outs]
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    elif not isinstance(grad_outputs, (tuple, list)):
        raise TypeError(f"gradgradcheck: grad_outputs must be None, a Tensor or a sequence of "
                        f"Tensors, got {type(grad_outputs).__name__}")
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: {len(grad_outputs)} grad_outputs for "
                         f"{len(outs)} outputs that need a gradient")
    vs = []
    for k, (v, o) in enumerate(zip(grad_outputs, outs, strict=True)):
        if not isinstance(v, Tensor):
            raise TypeError(f"gradgradcheck: grad_outputs[{k}] is a {type(v).__name__}, "
                            f"expected a Tensor")
        if v.shape != o.shape:
            raise ValueError(f"gradgradcheck: grad_outputs[{k}] has shape {tuple(v.shape)}, "
                             f"but output {k} has shape {tuple(o.shape)}")
        vs.append(Tensor(v.detach().numpy().astype(o.dtype), requires_grad=True))
    return vs
