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


def _numeric_outputs(fn, inputs):
    with no_grad():
        return [o._data.astype(np.float64).ravel() for o in _outputs(fn, inputs)]


def _prepare(inputs):
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    checked = []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype != np.float64:
                raise TypeError(
                    f"gradcheck: input {i} (shape {x.shape}) is {x.dtype}; finite differences "
                    f"need float64 (eps=1e-6 is below float32's resolution of ~1e-7 relative). "
                    f"Pass x.double() (and make the function compute in float64).")
            checked.append(i)
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True, so there is nothing to "
                         "check")
    return inputs, checked


def _perturbed_outputs(fn, inputs, i, flat_index, delta):
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
        return _numeric_outputs(fn, inputs)
    finally:
        x._data = saved


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


# PyTorch's further keywords of gradcheck / gradgradcheck with their defaults: accepted at
# the default; nondet_tol and check_undefined_grad at any value (the engine is deterministic,
# and a backward always receives zeros, never None, for an unused output)
TORCH_FLAGS = {"nondet_tol": 0.0, "check_undefined_grad": True, "check_grad_dtypes": False,
               "check_batched_grad": False, "check_batched_forward_grad": False,
               "check_forward_ad": False, "check_backward_ad": True, "masked": None,
               "gen_non_contig_grad_outputs": False, "check_fwd_over_rev": False,
               "check_rev_over_rev": True}


def _torch_flags(name, flags):
    for key, value in flags.items():
        if key not in TORCH_FLAGS:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        if key not in ("nondet_tol", "check_undefined_grad") and value != TORCH_FLAGS[key]:
            raise ValueError(f"{name}: {key}={value!r} is not available (tinygradx checks "
                             f"reverse-mode gradients only); leave it at {TORCH_FLAGS[key]!r}")


def _nonfinite(a):
    """'NaN at element (i, j)' / 'inf at ...' of the first non-finite entry of a, else None."""
    a = np.asarray(a)
    if a.dtype.kind not in "fc" or np.isfinite(a).all():
        return None
    e = np.argwhere(~np.isfinite(a))[0]
    kind = "NaN" if np.isnan(a[tuple(e)]) else "inf"
    return f"{kind} at element {tuple(int(i) for i in e)}"


def _bad_setup(name, inputs, checked, eps):
    """Why the check cannot mean anything (eps not a finite number > 0, or an input holding NaN
    or inf: a difference of NaNs compares as no mismatch at all), else None."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)) \
            or not np.isfinite(eps) or eps <= 0:
        return f"{name}: eps must be a finite number > 0, got {eps!r}"
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


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, fast_mode=False,
              raise_exception=True, seed=0, **torch_flags):
    """Check d fn(*inputs) / d inputs against central finite differences in float64.

    Parameters
    ----------
    fn : callable taking the inputs and returning a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple; those with requires_grad=True are checked and must be float64.
    eps, atol, rtol : step of the central difference and the tolerance
        |analytic - numeric| <= atol + rtol * |numeric|, PyTorch's defaults.
    fast_mode : compare v^T J u for random u, v instead of the full Jacobian.
    raise_exception : raise GradcheckError on a mismatch (default) or return False (also
        when the function's backward raises).
    torch_flags : PyTorch's other keywords (`TORCH_FLAGS`), accepted at their defaults.

    Returns True when every checked gradient matches.
    """
    _torch_flags("gradcheck", torch_flags)
    inputs, checked = _prepare(inputs)
    bad = _bad_setup("gradcheck", inputs, checked, eps)
    if bad:
        return _fail(bad, raise_exception)
    outs = _outputs(fn, inputs)
    for i, o in enumerate(outs):
        if o.dtype.kind == "f" and o.dtype != np.float64:
            raise TypeError(f"gradcheck: output {i} is {o.dtype}; compute in float64 so the "
                            f"finite differences mean something")
    diff_outs = [o for o in outs if o.requires_grad]
    if not diff_outs:
        return _fail("gradcheck: no output depends differentiably on the inputs",
                     raise_exception)
    try:
        if fast_mode:
            return _check_fast(fn, inputs, checked, outs, eps, atol, rtol, raise_exception,
                               seed)
        return _check_full(fn, inputs, checked, outs, eps, atol, rtol, raise_exception)
    except _BackwardFailed as failed:
        return _backward_failed(failed.__cause__, raise_exception)


class _BackwardFailed(Exception):
    """The checked function's backward raised (its cause): a failed check, not a crash."""


def _backward_failed(err, raise_exception):
    """raise_exception: the backward's own error, as it was; else False, as PyTorch."""
    if raise_exception:
        raise err from None
    return False


def _analytic_vjp(outs, inputs, checked, seeds):
    """sum_k <seed_k, out_k> differentiated w.r.t. the checked inputs (zeros where unused)."""
    pairs = [(o, s) for o, s in zip(outs, seeds, strict=True) if o.requires_grad]
    try:
        grads = backprop.grad([o for o, _ in pairs], [inputs[i] for i in checked],
                              grad_outputs=[Tensor(s.reshape(o.shape)) for o, s in pairs],
                              retain_graph=True, allow_unused=True)
    except Exception as err:
        raise _BackwardFailed() from err
    return [np.zeros(inputs[i].shape) if g is None else g._data
            for i, g in zip(checked, grads, strict=True)]


def _check_full(fn, inputs, checked, outs, eps, atol, rtol, raise_exception):
    sizes = [o._data.size for o in outs]
    n_out = sum(sizes)
    # analytic Jacobian rows: one VJP with a one-hot seed per output element
    analytic = {i: np.zeros((inputs[i]._data.size, n_out)) for i in checked}
    col = 0
    for k, o in enumerate(outs):
        for j in range(sizes[k]):
            seeds = [np.zeros(s) for s in sizes]
            seeds[k][j] = 1.0
            if o.requires_grad:
                for i, g in zip(checked, _analytic_vjp(outs, inputs, checked, seeds), strict=True):
                    analytic[i][:, col] = g.ravel()
            col += 1
    for i in checked:
        numeric = np.zeros_like(analytic[i])
        for e in range(inputs[i]._data.size):
            plus = np.concatenate(_perturbed_outputs(fn, inputs, i, e, eps))
            minus = np.concatenate(_perturbed_outputs(fn, inputs, i, e, -eps))
            numeric[e] = (plus - minus) / (2 * eps)
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
                   f"element {tuple(int(w) for w in where)}, output {k} element "
                   f"{int(c - sum(sizes[:k]))}:\n"
                   f"  analytic {analytic[i][e, c]:.8g} vs numeric {numeric[e, c]:.8g} "
                   f"(|diff| {abs(analytic[i][e, c] - numeric[e, c]):.3g} > "
                   f"atol {atol} + rtol {rtol} * |numeric|)\n"
                   f"  {int(bad.sum())} of {bad.size} entries differ; max |diff| "
                   f"{np.abs(analytic[i] - numeric).max():.3g}")
            return _fail(msg, raise_exception)
    return True


def _check_fast(fn, inputs, checked, outs, eps, atol, rtol, raise_exception, seed):
    rng = np.random.default_rng(seed)
    seeds = [rng.standard_normal(o._data.size) for o in outs]           # v, one per output
    analytic = _analytic_vjp(outs, inputs, checked, seeds)              # J^T v per input
    for i, g in zip(checked, analytic, strict=True):
        u = rng.standard_normal(inputs[i].shape)
        lhs = float(np.sum(g * u))                                       # v^T J u, analytic
        plus = _perturbed_outputs(fn, inputs, i, None, eps * u)
        minus = _perturbed_outputs(fn, inputs, i, None, -eps * u)
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


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  fast_mode=False, raise_exception=True, seed=0, **torch_flags):
    """Check the second derivatives of fn against finite differences, as PyTorch's gradgradcheck.

    It runs `gradcheck` on the first derivative: the function (inputs, v) -> d<v, fn(inputs)>/d
    inputs, computed with create_graph=True. So every op's `backward` on Tensors is checked, both
    in the inputs (the second derivative proper) and in v (that it is linear in the incoming
    gradient). `grad_outputs` are the v's (random float64 ones by default, one per output
    that needs a gradient); the other arguments are gradcheck's.
    """
    _torch_flags("gradgradcheck", torch_flags)
    inputs, checked = _prepare(inputs)
    # a NaN input or eps is named here, before the comparison below could blame an op's rule
    bad = _bad_setup("gradgradcheck", inputs, checked, eps)
    if bad:
        return _fail(bad, raise_exception)
    all_outs = _outputs(fn, inputs)
    diff = [k for k, o in enumerate(all_outs) if o.requires_grad]
    outs = [all_outs[k] for k in diff]
    if not outs:
        return _fail("gradgradcheck: no output depends differentiably on the inputs",
                     raise_exception)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [Tensor(rng.standard_normal(o.shape), requires_grad=True) for o in outs]
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        if len(grad_outputs) != len(outs):
            raise ValueError(f"gradgradcheck: {len(grad_outputs)} grad_outputs for "
                             f"{len(outs)} outputs that need a gradient")
    for k, v in enumerate(grad_outputs):
        where = _nonfinite(v._data) if isinstance(v, Tensor) else None
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
    # below would only test a wrong rule against itself
    try:
        plain = backprop.grad(outs, [inputs[i] for i in checked], grad_outputs=[
            v.detach() for v in grad_outputs], retain_graph=True, allow_unused=True)
        recorded = first_derivative(*inputs, *grad_outputs)
    except Exception as err:              # the backward (or its graph rule) raised
        return _backward_failed(err, raise_exception)
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
    try:
        return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps, atol,
                         rtol, fast_mode, raise_exception, seed)
    except GradcheckError:
        raise
    except Exception as err:              # first_derivative runs the backward as its forward
        return _backward_failed(err, raise_exception)
