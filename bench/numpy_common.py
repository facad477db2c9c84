"""Shared pieces of the hand-written numpy references (the "floor" of issue 7).

Everything here is plain numpy: flat parameter/gradient storage, LayerNorm and cross-entropy with
hand-derived backward passes, and fused Adam/AdamW updates. The aim is the fastest straightforward
numpy, not readability at any price: intermediates go into preallocated buffers via ``out=`` so a
training step allocates (almost) nothing, which matters because freshly allocated large arrays are
returned to the OS and page-faulted in again on every step.
"""
from __future__ import annotations

import math

import numpy as np


def cfg_get(cfg, name, default=None):
    """Read a config field from a dataclass-like object or a dict."""
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


class FlatDict(dict):
    """A ``dict[name, ndarray]`` whose arrays are views into one contiguous buffer ``flat``.

    It behaves as an ordinary dict; the flat buffer only lets the optimizer update every parameter
    with a handful of whole-buffer ufunc calls instead of a few calls per tensor. ``layout`` lists
    (name, offset, shape) in buffer order; ``n_decay`` is the length of the buffer prefix that
    receives weight decay (2-D weights are laid out first for that reason).
    """

    def __init__(self, layout, dtype, n_decay=0):
        super().__init__()
        total = sum(math.prod(shape) for _, shape in layout)
        self.flat = np.zeros(total, dtype=dtype)
        self.layout = []
        self.n_decay = n_decay
        off = 0
        for name, shape in layout:
            n = math.prod(shape)
            self.layout.append((name, off, tuple(shape)))
            self[name] = self.flat[off:off + n].reshape(shape)
            off += n

    def intact(self):
        """True if no entry was replaced by a foreign array since construction."""
        return all(self[name].base is self.flat for name, _, _ in self.layout)


def flat_dict(names_shapes, dtype, order=None, decay=lambda name, shape: False):
    """Build a FlatDict. ``order`` gives the dict's key order (defaults to ``names_shapes``);
    in the buffer, names for which ``decay`` is true come first so decay is a prefix slice."""
    dec = [(n, s) for n, s in names_shapes if decay(n, s)]
    rest = [(n, s) for n, s in names_shapes if not decay(n, s)]
    d = FlatDict(dec + rest, dtype, n_decay=sum(math.prod(s) for _, s in dec))
    if order is None:
        order = [n for n, _ in names_shapes]
    # Re-insert in the natural (model) order so iteration matches nanoGPT / torch naming order.
    views = {k: dict.__getitem__(d, k) for k in order}
    dict.clear(d)
    dict.update(d, views)
    return d


def contiguous_group(d, names):
    """If ``d[names[0]], d[names[1]], ...`` are adjacent in one flat buffer, return the stacked
    view (no copy) along axis 0, else None. Used to run Q, K, V projections as one matmul."""
    flat = getattr(d, "flat", None)
    if flat is None:
        return None
    arrs = [d[n] for n in names]
    if any(a.base is not flat for a in arrs):
        return None
    itemsize = flat.itemsize
    start = (arrs[0].__array_interface__["data"][0] - flat.__array_interface__["data"][0])
    off = start // itemsize
    for a in arrs:
        a_off = (a.__array_interface__["data"][0] - flat.__array_interface__["data"][0]) // itemsize
        if a_off != off or a.shape[1:] != arrs[0].shape[1:]:
            return None
        off += a.size
    rows = sum(a.shape[0] for a in arrs)
    return flat[start // itemsize:off].reshape((rows,) + arrs[0].shape[1:])


def stacked(d, names):
    """Stacked view if possible (flat params from ``init_params``), else a concatenated copy (e.g.
    for params converted from torch); the copy costs one pass over small weight matrices."""
    v = contiguous_group(d, names)
    return v if v is not None else np.concatenate([d[n] for n in names], axis=0)


# ----------------------------------------------------------------------------------------------
# LayerNorm: y = xhat * w + b, xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps), biased var.
# ----------------------------------------------------------------------------------------------

class LNBuf:
    """Saved tensors of one LayerNorm call: xhat (N, C) and rstd (N, 1)."""
    __slots__ = ("xhat", "rstd", "mean")

    def __init__(self, n, c, dtype):
        self.xhat = np.empty((n, c), dtype)
        self.rstd = np.empty((n, 1), dtype)
        self.mean = np.empty((n, 1), dtype)


def layernorm_fwd(x, w, b, eps, buf: LNBuf, out):
    """x (N, C) -> out (N, C); saves xhat and rstd in ``buf``. 5 passes over x-sized memory."""
    c = x.shape[1]
    np.mean(x, axis=1, keepdims=True, out=buf.mean)
    xc = buf.xhat
    np.subtract(x, buf.mean, out=xc)
    # Variance via a row-wise dot (xc . xc) avoids an (N, C) temporary for xc**2.
    var = buf.rstd
    np.einsum("ij,ij->i", xc, xc, out=var[:, 0])
    var *= 1.0 / c
    var += eps
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)          # now rstd
    xc *= buf.rstd                       # xc is now xhat (same buffer)
    np.multiply(xc, w, out=out)
    out += b
    return out


def layernorm_bwd(dy, w, buf: LNBuf, dw, db, dx, tmp, accumulate=False):
    """Backward of layernorm_fwd.

    dxhat = dy * w;  dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    dw = sum_rows(dy * xhat), db = sum_rows(dy). Writes dw, db; writes or (accumulate=True) adds
    into dx. ``tmp`` is an (N, C) scratch buffer. Destroys buf.xhat (one backward per forward).
    """
    c = dy.shape[1]
    xhat = buf.xhat
    np.multiply(dy, xhat, out=tmp)
    np.sum(tmp, axis=0, out=dw)
    np.sum(dy, axis=0, out=db)
    np.multiply(dy, w, out=tmp)                          # tmp = dxhat
    m1 = np.mean(tmp, axis=1, keepdims=True)             # (N, 1): small allocations only
    m2 = np.einsum("ij,ij->i", tmp, xhat)[:, None]
    m2 *= 1.0 / c
    tmp -= m1
    # xhat is not needed after this backward, so xhat * m2 overwrites it instead of allocating.
    np.multiply(xhat, m2, out=xhat)
    if accumulate:
        tmp -= xhat
        tmp *= buf.rstd
        dx += tmp
    else:
        np.subtract(tmp, xhat, out=dx)
        dx *= buf.rstd
    return dx


# ----------------------------------------------------------------------------------------------
# Cross-entropy over rows of logits (N, V) with integer targets (N,), mean over counted rows.
# ----------------------------------------------------------------------------------------------

def softmax_xent_fwd_bwd(logits, targets, weight_rows=None):
    """In place: turns ``logits`` into d(loss)/d(logits) and returns the mean loss.

    loss_i = logsumexp(z_i) - z_i[t_i];  dz_i = softmax(z_i) - onehot(t_i), scaled by 1/count.
    ``weight_rows`` (N,) bool/float masks rows out (e.g. pad targets); mean is over kept rows.
    """
    n = logits.shape[0]
    rows = np.arange(n)
    mx = np.max(logits, axis=1, keepdims=True)
    logits -= mx
    picked = logits[rows, targets]                       # (N,) shifted target logits
    np.exp(logits, out=logits)
    s = np.sum(logits, axis=1, keepdims=True)
    per_row = np.log(s[:, 0]) - picked                   # (N,)
    logits /= s                                          # probabilities
    logits[rows, targets] -= 1.0
    if weight_rows is None:
        count = n
        loss = float(per_row.sum(dtype=np.float64)) / count
        logits *= 1.0 / count
    else:
        wr = weight_rows.astype(logits.dtype)
        count = max(float(wr.sum()), 1.0)
        loss = float((per_row * wr).sum(dtype=np.float64)) / count
        logits *= (wr / count)[:, None]
    return loss


# ----------------------------------------------------------------------------------------------
# Optimizers. Same equations as torch.optim.Adam / AdamW (bias-corrected, eps outside the sqrt).
# ----------------------------------------------------------------------------------------------

def _adam_core(p, g, m, v, tmp, lr, b1, b2, eps, step):
    """One Adam moment update + parameter step on (flat or per-tensor) arrays, in place."""
    bc1 = 1.0 - b1 ** step
    bc2 = 1.0 - b2 ** step
    m *= b1
    np.multiply(g, 1.0 - b1, out=tmp)
    m += tmp
    v *= b2
    np.multiply(g, g, out=tmp)
    tmp *= 1.0 - b2
    v += tmp
    # p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
    np.sqrt(v, out=tmp)
    tmp *= 1.0 / math.sqrt(bc2)
    tmp += eps
    np.divide(m, tmp, out=tmp)
    tmp *= lr / bc1
    p -= tmp


def _init_state(params, state):
    if "step" in state:
        return
    state["step"] = 0
    flat = getattr(params, "flat", None)
    if flat is not None and params.intact():
        state["flat"] = True
        state["m"] = np.zeros_like(flat)
        state["v"] = np.zeros_like(flat)
        state["tmp"] = np.empty_like(flat)
    else:
        state["flat"] = False
        state["m"] = {k: np.zeros_like(a) for k, a in params.items()}
        state["v"] = {k: np.zeros_like(a) for k, a in params.items()}
        state["tmp"] = {k: np.empty_like(a) for k, a in params.items()}


def _flat_ok(params, grads):
    return (getattr(params, "flat", None) is not None and getattr(grads, "flat", None) is not None
            and [(n, o, s) for n, o, s in params.layout] == [(n, o, s) for n, o, s in grads.layout]
            and params.intact() and grads.intact())


def adamw_step(params, grads, state, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
               decay=None):
    """Fused AdamW in place (torch.optim.AdamW equations: p *= 1 - lr*wd, then the Adam step).

    Decays only 2-D tensors (nanoGPT's rule: matmul weights and embeddings, not biases/LayerNorm),
    or the names for which ``decay(name, array)`` is true. When params and grads are FlatDicts of
    the same layout (as ``init_params`` and ``loss_and_grads`` give), the whole update is ~12 ufunc
    calls over one flat buffer; otherwise it loops over tensors.
    """
    b1, b2 = betas
    _init_state(params, state)
    state["step"] += 1
    step = state["step"]
    if state["flat"] and _flat_ok(params, grads) and decay is None:
        if weight_decay:
            params.flat[:params.n_decay] *= 1.0 - lr * weight_decay
        _adam_core(params.flat, grads.flat, state["m"], state["v"], state["tmp"],
                   lr, b1, b2, eps, step)
        return
    if state["flat"]:
        raise ValueError("adamw_step: state was created for flat params but params/grads changed")
    for k, p in params.items():
        if weight_decay and (decay(k, p) if decay is not None else p.ndim >= 2):
            p *= 1.0 - lr * weight_decay
        _adam_core(p, grads[k], state["m"][k], state["v"][k], state["tmp"][k], lr, b1, b2, eps,
                   step)


def adam_step(params, grads, state, lr, betas=(0.9, 0.98), eps=1e-9):
    """Fused Adam in place (the original Transformer's betas/eps defaults). See adamw_step."""
    adamw_step(params, grads, state, lr, betas=betas, eps=eps, weight_decay=0.0)
