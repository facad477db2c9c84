"""check_op: one call tests an op's forward against numpy and its backward three ways.

    check_op(np.multiply, lambda a, b: a * b, [(3, 1), (4,)])

1. forward: tgx_fn on float64 Tensors equals np_fn on the same arrays;
2. backward through the engine: tgx.gradcheck (the full Jacobian for small inputs, the random
   projection v^T J u otherwise);
3. the op's backward on its own: `out._ctx.backward(g)` for a random g, compared with central
   differences of sum(g * f(x)). This checks the node's VJP without the engine's walk (only
   `unbroadcast` is applied, as the walk would).
"""
from __future__ import annotations


import numpy as np

import tinygradx as tgx
from tinygradx import Tensor
from tinygradx.autograd import unbroadcast

FULL_JACOBIAN_LIMIT = 600  # (input elements) x (output elements) above which fast_mode is used


def sample(shape, rng, low=-2.0, high=2.0, avoid=(), margin=0.1):
    """Uniform float64 values in [low, high), pushed at least `margin` away from each kink."""
    x = rng.uniform(low, high, size=shape)
    for k in avoid:
        near = np.abs(x - k) < margin
        x = np.where(near, k + np.where(x >= k, margin, -margin), x)
    return np.asarray(x, dtype=np.float64)


def make_inputs(shapes, seed=0, low=-2.0, high=2.0, avoid=()):
    rng = np.random.default_rng(seed)
    return [sample(s, rng, low, high, avoid) for s in shapes]


def _outputs(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _forward_value(tgx_fn, arrays):
    with tgx.no_grad():
        outs = _outputs(tgx_fn(*[Tensor(a) for a in arrays]))
    return [o.numpy() for o in outs]


def check_forward(np_fn, tgx_fn, arrays, atol=1e-7, rtol=1e-7):
    expected = _outputs(np_fn(*[a.copy() for a in arrays]))
    got = _outputs(tgx_fn(*[Tensor(a, requires_grad=True) for a in arrays]))
    assert len(expected) == len(got), f"{len(got)} outputs, numpy gave {len(expected)}"
    for e, g in zip(expected, got, strict=True):
        e = np.asarray(e)
        assert g.shape == e.shape, f"forward shape {g.shape}, numpy {e.shape}"
        assert g.dtype == np.float64 or g.dtype.kind != "f", f"float64 in, {g.dtype} out"
        np.testing.assert_allclose(g.detach().numpy(), e, atol=atol, rtol=rtol)


def check_direct_backward(tgx_fn, arrays, seed=0, eps=1e-6, atol=1e-5, rtol=1e-4):
    """Call the output node's own backward and compare it with finite differences.

    tgx_fn must be a single op (its output node's parents are the given inputs, plus
    constants); the reference is d/dx_i of sum(g * tgx_fn(x)) by central differences.
    """
    rng = np.random.default_rng(seed + 1)
    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    out = _outputs(tgx_fn(*tensors))[0]
    ctx = out._ctx
    assert ctx is not None, "the output has no graph node"
    slot = {}
    for k, p in enumerate(ctx.parents):
        for i, t in enumerate(tensors):
            if p is t:
                slot.setdefault(i, []).append(k)
    assert slot, f"{ctx.name()}: none of the inputs is a parent of the output node"
    g = rng.standard_normal(out.shape)
    in_grads = ctx.backward(g.copy())
    if not isinstance(in_grads, tuple):
        in_grads = (in_grads,)
    assert len(in_grads) == len(ctx.parents), (
        f"{ctx.name()}.backward returned {len(in_grads)} grads for {len(ctx.parents)} inputs")
    for i, ks in slot.items():
        analytic = sum(unbroadcast(np.asarray(in_grads[k]), arrays[i].shape) for k in ks)
        assert analytic.shape == arrays[i].shape
        numeric = np.zeros(arrays[i].shape)
        flat = numeric.reshape(-1)
        for e in range(arrays[i].size):
            vals = []
            for d in (eps, -eps):
                moved = [a.copy() for a in arrays]
                moved[i].reshape(-1)[e] += d
                vals.append(np.sum(g * _forward_value(tgx_fn, moved)[0]))
            flat[e] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, atol=atol, rtol=rtol,
                                   err_msg=f"{ctx.name()}.backward, input {i}")


def check_op(np_fn, tgx_fn, shapes=None, *, inputs=None, seed=0, low=-2.0, high=2.0,
             avoid=(), atol=1e-7, rtol=1e-7, grad=True, direct=True, fast_mode=None,
             grad_atol=1e-5, grad_rtol=1e-3):
    """Forward vs numpy, backward via gradcheck and via the node's own backward.

    shapes: one shape per input (random float64 values from a seeded generator, in
    [low, high) and away from the `avoid` kinks), or pass `inputs` (arrays) directly.
    np_fn=None skips the forward comparison; direct=False skips the direct backward (for
    functions made of several ops); fast_mode=None picks full mode for small problems.
    """
    arrays = ([np.asarray(a, dtype=np.float64) for a in inputs] if inputs is not None
              else make_inputs(shapes, seed, low, high, avoid))
    if np_fn is not None:
        check_forward(np_fn, tgx_fn, arrays, atol, rtol)
    if not grad:
        return
    tensors = tuple(Tensor(a.copy(), requires_grad=True) for a in arrays)
    if fast_mode is None:
        n_in = sum(a.size for a in arrays)
        n_out = sum(o.size for o in _forward_value(tgx_fn, arrays))
        fast_mode = n_in * n_out > FULL_JACOBIAN_LIMIT
    assert tgx.gradcheck(tgx_fn, tensors, atol=grad_atol, rtol=grad_rtol, fast_mode=fast_mode,
                         seed=seed)
    if direct and not _is_passthrough(tgx_fn, tensors):
        check_direct_backward(tgx_fn, arrays, seed=seed)


def _is_passthrough(tgx_fn, tensors):
    """A no-op call (e.g. reshape to the same shape) returns its input: there is no node."""
    out = _outputs(tgx_fn(*tensors))[0]
    return any(out is t for t in tensors)


def assert_clear_error(excinfo, *fragments):
    """The error text contains every fragment and was raised by tinygradx, not deep in numpy."""
    msg = str(excinfo.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in error message {msg!r}"
    assert "operands could not be broadcast" not in msg.split(":")[0]
    last = excinfo.traceback[-1]
    assert "numpy" not in str(last.path), f"raised inside numpy at {last.path}: {msg}"


def value_and_grads(fn, arrays, g_seed=0):
    """fn's output and the gradients of sum(g * fn(x)) for a fixed random g."""
    xs = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(*xs)
    g = np.random.default_rng(g_seed).standard_normal(out.shape)
    out.backward(g)
    return out.detach().numpy(), [x.grad.detach().numpy() for x in xs]


def assert_same(fused, composite, arrays, atol=1e-10, rtol=1e-8, g_seed=0):
    """Two implementations of one function agree in value and in every input's gradient."""
    v1, g1 = value_and_grads(fused, arrays, g_seed)
    v2, g2 = value_and_grads(composite, arrays, g_seed)
    np.testing.assert_allclose(v1, v2, atol=atol, rtol=rtol)
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


def small_gpt_step(fused=True):
    """A 2-layer GPT (C 32, V 65, T 16), a fixed (3, 16) batch and AdamW at lr 1e-2, all from
    seed 0: the training step the engine tests compare bit for bit. Returns (model, idx, tgt,
    opt)."""
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    tgx.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=65, n_layer=2, n_head=4, n_embd=32,
                          fused_attention=fused))
    rng = np.random.default_rng(0)
    idx, tgt = (Tensor(rng.integers(0, 65, (3, 16))) for _ in range(2))
    return model, idx, tgt, tgx.optim.AdamW(model.parameters(), lr=1e-2)

