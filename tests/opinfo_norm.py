"""Op-info entries of the normalization, dropout, sequence and remaining nn-module families
(loaded at the end of opinfo.py, into the same OPS table): F.batch_norm, F.instance_norm,
F.group_norm, F.local_response_norm with numpy references, and torch's modules as functions
of their input and parameters (nn.BatchNorm1d/2d/3d, nn.InstanceNorm1d/2d/3d, nn.GroupNorm,
nn.LocalResponseNorm, nn.RMSNorm), whose running statistics are outputs too, so the torch
check compares them after the call.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import OpInfo, S, Sample, TF, _f64, add, array, family, torch

# ------------------------------------------------------------------------------------------
# numpy references
# ------------------------------------------------------------------------------------------


def _cview(v, ndim):
    return np.asarray(v, np.float64).reshape((-1,) + (1,) * (ndim - 2))


def _affine(y, w, b):
    if w is not None:
        y = y * _cview(w, y.ndim)
    if b is not None:
        y = y + _cview(b, y.ndim)
    return y


def np_batch_norm(x, weight=None, bias=None, running_mean=None, running_var=None,
                  training=False, momentum=0.1, eps=1e-5):
    """(y, running_mean after, running_var after), or (y,) without running statistics."""
    x = x.astype(np.float64)
    if not training:
        y = (x - _cview(running_mean, x.ndim)) / np.sqrt(_cview(running_var, x.ndim) + eps)
        return (_affine(y, weight, bias),) + \
            ((running_mean, running_var) if running_mean is not None else ())
    if x.size == 0:                                      # an empty batch: the statistics stay
        return (_affine(x, weight, bias), running_mean, running_var)[:1 + 2 * (
            running_mean is not None)]
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    y = _affine((x - mean) / np.sqrt(var + eps), weight, bias)
    if running_mean is None:
        return (y,)
    n = x.size // x.shape[1]
    rm = (1 - momentum) * running_mean + momentum * mean.reshape(-1)
    rv = (1 - momentum) * running_var + momentum * var.reshape(-1) * n / (n - 1)
    return y, rm, rv


def np_instance_norm(x, weight=None, bias=None, running_mean=None, running_var=None,
                     use_input_stats=True, momentum=0.1, eps=1e-5):
    x = x.astype(np.float64)
    if not use_input_stats:
        return np_batch_norm(x, weight, bias, running_mean, running_var, False, momentum, eps)
    axes = tuple(range(2, x.ndim))
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    y = _affine((x - mean) / np.sqrt(var + eps), weight, bias)
    if running_mean is None:
        return (y,)
    n = math.prod(x.shape[2:])
    N, C = x.shape[:2]
    rm = (1 - momentum) * running_mean + momentum * mean.reshape(N, C).mean(0)
    rv = (1 - momentum) * running_var + momentum * (var.reshape(N, C) * n / (n - 1)).mean(0)
    return y, rm, rv


def np_group_norm(x, weight=None, bias=None, num_groups=1, eps=1e-5):
    x = x.astype(np.float64)
    g = x.reshape(x.shape[0], num_groups, -1)
    y = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps)
    return _affine(y.reshape(x.shape), weight, bias)


def np_local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    x = x.astype(np.float64)
    C = x.shape[1]
    out = np.empty_like(x)
    for c in range(C):
        lo, hi = max(c - size // 2, 0), min(c + (size - 1) // 2, C - 1)
        s = (x[:, lo:hi + 1] ** 2).sum(1)
        out[:, c] = x[:, c] / (k + alpha / size * s) ** beta
    return out


# ------------------------------------------------------------------------------------------
# samples
# ------------------------------------------------------------------------------------------


# Groups of at least 3 values: x_hat of two values is +-1 whatever they are, so its gradient is
# a float32 rounding of almost nothing (two-value groups are float64 fixed samples instead).
def _spatial(draw, lo, hi):
    return tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(lo, hi))))


def _norm_stats(draw, dt, C):
    """Running statistics (mean anywhere, variance positive) as kwargs arrays, or none."""
    if not draw(st.booleans()):
        return {}
    return {"running_mean": array(draw, (C,), dt, -1, 1, layout=False),
            "running_var": array(draw, (C,), dt, 0.5, 2, layout=False)}


def _wb(draw, dt, C):
    k = draw(st.sampled_from((0, 1, 2)))                # none, weight, weight and bias
    return tuple(array(draw, (C,), dt, 0.5, 1.5) for _ in range(k))


def _batch_norm_family(draw, dt):
    N, C = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sp = _spatial(draw, 0, 2)
    training = draw(st.booleans())
    if training and N * math.prod(sp) < 3:
        N = 3                   # one value per channel is refused, two are ill-conditioned
    kw = _norm_stats(draw, dt, C)
    if not training and not kw:
        kw = {"running_mean": np.zeros(C, dt), "running_var": np.ones(C, dt)}
    kw.update(training=training, momentum=draw(st.sampled_from((0.1, 0.5, 1.0))),
              eps=draw(st.sampled_from((1e-5, 0.1))))
    return Sample((array(draw, (N, C) + sp, dt),) + _wb(draw, dt, C), kw)


def _instance_norm_family(draw, dt):
    N, C = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sp = _spatial(draw, 1, 2)
    use = draw(st.booleans())
    if use and math.prod(sp) < 3:
        sp = (3,) + sp[1:]
    kw = _norm_stats(draw, dt, C)
    if not use and not kw:
        kw = {"running_mean": np.zeros(C, dt), "running_var": np.ones(C, dt)}
    kw.update(use_input_stats=use, momentum=draw(st.sampled_from((0.1, 0.7))),
              eps=draw(st.sampled_from((1e-5, 0.1))))
    return Sample((array(draw, (N, C) + sp, dt),) + _wb(draw, dt, C), kw)


def _group_norm_family(draw, dt):
    G, per = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    N, sp = draw(st.integers(1, 2)), _spatial(draw, 0, 2)
    if per * math.prod(sp) < 3:
        sp = (3,) + sp[1:]           # a group of one value is constant, of two ill-conditioned
    return Sample((array(draw, (N, G * per) + sp, dt),) + _wb(draw, dt, G * per),
                  {"num_groups": G, "eps": draw(st.sampled_from((1e-5, 0.1)))})


def _lrn_family(draw, dt):
    N, C, sp = draw(st.integers(1, 2)), draw(st.integers(1, 5)), _spatial(draw, 1, 2)
    return Sample((array(draw, (N, C) + sp, dt),),
                  {"size": draw(st.integers(1, 6)), "alpha": draw(st.sampled_from((1e-4, 0.5))),
                   "beta": draw(st.sampled_from((0.75, 0.5, 1.3))),
                   "k": draw(st.sampled_from((1.0, 2.0)))})


def _with_stats(fn, stats=False):
    """op(x, *weight_bias, running_mean=..., running_var=..., **kw) on copies of the running
    statistics; returns the output, or with stats=True the statistics after the call (an
    entry of their own: they depend on x but carry no gradient, as in torch)."""
    def op(x, *wb, running_mean=None, running_var=None, **kw):
        rm = None if running_mean is None else running_mean.clone()
        rv = None if running_var is None else running_var.clone()
        y = fn(x, rm, rv, *wb, **kw)
        return (rm, rv) if stats else y
    return op


def _stats_ref(ref):
    return lambda *a, **kw: ref(*a, **kw)[1:]


def _tracked(build):
    """build's samples with running statistics always given (the [running_stats] entries)."""
    def with_stats(draw, dt):
        s = build(draw, dt)
        if "running_mean" not in s.kwargs:
            C = s.inputs[0].shape[1]
            s.kwargs.update(running_mean=array(draw, (C,), dt, -1, 1, layout=False),
                            running_var=array(draw, (C,), dt, 0.5, 2, layout=False))
        return s
    return with_stats


def _group_norm(fn):
    return lambda x, *wb, num_groups, eps: fn(x, num_groups, *wb, eps=eps)


_STATS = "the running statistics are updated outside the graph (no gradient, as in torch)"
add(
    OpInfo("F.batch_norm", _with_stats(F.batch_norm),
           torch_op=_with_stats(TF.batch_norm) if torch else None,
           torch_reason="torch is not installed", ref=lambda *a, **kw: np_batch_norm(*a, **kw)[0],
           samples=family(_batch_norm_family),
           fixed=(S(_f64(2, 3), desc="two_rows_training", training=True),
                  S(_f64(4, 2, 3), _f64(2, seed=1), _f64(2, seed=2),
                    running_mean=np.zeros(2), running_var=np.ones(2), training=True,
                    momentum=1.0, desc="momentum_1"),
                  S(np.zeros((0, 3)), desc="empty_batch", training=True))),
    OpInfo("F.batch_norm[running_stats]", _with_stats(F.batch_norm, True),
           torch_op=_with_stats(TF.batch_norm, True) if torch else None,
           torch_reason="torch is not installed", ref=_stats_ref(np_batch_norm),
           samples=family(_tracked(_batch_norm_family)), grad=False, grad_reason=_STATS),
    OpInfo("F.instance_norm", _with_stats(F.instance_norm),
           torch_op=_with_stats(TF.instance_norm) if torch else None,
           torch_reason="torch is not installed",
           ref=lambda *a, **kw: np_instance_norm(*a, **kw)[0],
           samples=family(_instance_norm_family)),
    OpInfo("F.instance_norm[running_stats]", _with_stats(F.instance_norm, True),
           torch_op=_with_stats(TF.instance_norm, True) if torch else None,
           torch_reason="torch is not installed", ref=_stats_ref(np_instance_norm),
           samples=family(_tracked(_instance_norm_family)), grad=False, grad_reason=_STATS),
    OpInfo("F.group_norm", _group_norm(F.group_norm),
           torch_op=_group_norm(TF.group_norm) if torch else None,
           torch_reason="torch is not installed", ref=np_group_norm,
           samples=family(_group_norm_family)),
    OpInfo("F.local_response_norm", lambda x, **kw: F.local_response_norm(x, **kw),
           torch_op=lambda x, **kw: TF.local_response_norm(x, **kw), ref=np_local_response_norm,
           samples=family(_lrn_family)),
)


# ------------------------------------------------------------------------------------------
# the modules, as functions of (input, parameters...): running statistics are outputs too
# ------------------------------------------------------------------------------------------

def _stateful_module(cls, torch_side=False, stats=False):
    """op(x, *params, ctor, train=True, warm=0): the module built with ctor in x's dtype, called
    on `warm` batches of x's shape in training mode and then once on x in the mode `train`
    says, with its parameters replaced by the given tensors; returns the output, or with
    stats=True its buffers after (running_mean, running_var, num_batches_tracked)."""
    def op(x, *params, ctor, train=True, warm=0):
        ns = torch if torch_side else tgx
        m = getattr(ns.nn, cls)(**ctor).to(x.dtype)
        names = [n for n, _ in m.named_parameters()]
        given = dict(zip(names, params, strict=True))
        # warm-up batches that do not depend on x (the running statistics carry no gradient)
        for i in range(warm):
            w = (ns.arange(x.numel()).to(x.dtype) % (5 + i)) * 0.5 - 1.0     # exact values
            ns.func.functional_call(m.train(), given, (w.reshape(tuple(x.shape)),))
        y = ns.func.functional_call(m.train(train), given, (x,))
        if not stats:
            return y
        return tuple(getattr(m, b).clone() for b in ("running_mean", "running_var",
                                                      "num_batches_tracked")
                     if getattr(m, b, None) is not None)
    return op


def _params(draw, dt, cls, ctor):
    m = getattr(tgx.nn, cls)(**ctor)
    return tuple(array(draw, p.shape, dt, 0.5, 1.5) for p in m.parameters())


def _bn_module_family(cls, n_sp, batch_dims=(2,)):
    def build(draw, dt):
        C = draw(st.integers(1, 3))
        ctor = {"num_features": C, "eps": draw(st.sampled_from((1e-5, 0.1))),
                "momentum": draw(st.sampled_from((0.1, None, 0.6))),
                "affine": draw(st.booleans()),
                "track_running_stats": draw(st.booleans())}
        if ctor["affine"] and draw(st.booleans()):
            ctor["bias"] = False
        sp = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.sampled_from(n_sp))))
        N = draw(st.integers(1, 3))
        if N * math.prod(sp) < 3:
            N = 3
        kw = {"ctor": ctor, "train": draw(st.booleans()), "warm": draw(st.integers(0, 2))}
        return Sample((array(draw, (N, C) + sp, dt),) + _params(draw, dt, cls, ctor), kw)
    return build


def _in_module_family(cls, n_sp):
    def build(draw, dt):
        C = draw(st.integers(1, 3))
        ctor = {"num_features": C, "eps": draw(st.sampled_from((1e-5, 0.1))),
                "momentum": draw(st.sampled_from((0.1, None, 0.6))),
                "affine": draw(st.booleans()),
                "track_running_stats": draw(st.booleans())}
        sp = tuple(draw(st.integers(1, 3)) for _ in range(n_sp))
        if math.prod(sp) < 3:
            sp = (3,) + sp[1:]
        batch = draw(st.sampled_from(((), (1,), (2,))))
        kw = {"ctor": ctor, "train": draw(st.booleans()), "warm": draw(st.integers(0, 2))}
        return Sample((array(draw, batch + (C,) + sp, dt),) + _params(draw, dt, cls, ctor), kw)
    return build


def _gn_module_family(draw, dt):
    G, per = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    sp = _spatial(draw, 0, 2)
    if per * math.prod(sp) < 3:
        sp = (3,) + sp[1:]
    ctor = {"num_groups": G, "num_channels": G * per, "affine": draw(st.booleans()),
            "eps": draw(st.sampled_from((1e-5, 0.1)))}
    return Sample((array(draw, (draw(st.integers(1, 2)), G * per) + sp, dt),) +
                  _params(draw, dt, "GroupNorm", ctor), {"ctor": ctor})


def _lrn_module_family(draw, dt):
    ctor = {"size": draw(st.integers(1, 4)), "alpha": draw(st.sampled_from((1e-4, 0.5))),
            "beta": draw(st.sampled_from((0.75, 1.2))), "k": draw(st.sampled_from((1.0, 2.0)))}
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4))) + _spatial(draw, 1, 2)
    return Sample((array(draw, shape, dt),), {"ctor": ctor})


def _rms_module_family(draw, dt):
    shape = _spatial(draw, 1, 3)
    k = draw(st.integers(1, len(shape)))
    ctor = {"normalized_shape": shape[len(shape) - k:], "eps": draw(st.sampled_from(
        (None, 1e-5, 0.1))), "elementwise_affine": draw(st.booleans())}
    return Sample((array(draw, shape, dt),) + _params(draw, dt, "RMSNorm", ctor),
                  {"ctor": ctor})


def _tracking(build):
    def tracking(draw, dt):
        s = build(draw, dt)
        s.kwargs["ctor"]["track_running_stats"] = True
        return s
    return tracking


for _cls, _build in (
        ("BatchNorm1d", _bn_module_family("BatchNorm1d", (0, 1))),
        ("BatchNorm2d", _bn_module_family("BatchNorm2d", (2,))),
        ("BatchNorm3d", _bn_module_family("BatchNorm3d", (3,))),
        ("InstanceNorm1d", _in_module_family("InstanceNorm1d", 1)),
        ("InstanceNorm2d", _in_module_family("InstanceNorm2d", 2)),
        ("InstanceNorm3d", _in_module_family("InstanceNorm3d", 3))):
    add(OpInfo(f"nn.{_cls}", _stateful_module(_cls),
               torch_op=_stateful_module(_cls, True) if torch else None,
               torch_reason="torch is not installed", samples=family(_build), grad_atol=1e-4),
        OpInfo(f"nn.{_cls}[running_stats]", _stateful_module(_cls, stats=True),
               torch_op=_stateful_module(_cls, True, stats=True) if torch else None,
               torch_reason="torch is not installed", samples=family(_tracking(_build)),
               grad=False, grad_reason=_STATS))
for _cls, _build in (("GroupNorm", _gn_module_family), ("LocalResponseNorm", _lrn_module_family),
                     ("RMSNorm", _rms_module_family)):
    add(OpInfo(f"nn.{_cls}", _stateful_module(_cls),
               torch_op=_stateful_module(_cls, True) if torch else None,
               torch_reason="torch is not installed", samples=family(_build)))


# ------------------------------------------------------------------------------------------
# dropout of channels and alpha dropout: a seeded mask (gradcheck calls the op again), and
# the evaluation mode against torch (the masks are another generator's: tests/nn/
# test_dropout.py checks their statistics against torch's)
# ------------------------------------------------------------------------------------------

_RANDOM_MASK = "random mask: torch's generator differs (tests/nn/test_dropout.py compares the " \
               "statistics with torch's)"


def _seeded(fn, **fixed):
    def op(x, **kw):
        tgx.manual_seed(0)
        return fn(x, **fixed, **kw)
    return op


def _dropout_family(min_dims, max_dims):
    def build(draw, dt):
        shape = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(min_dims,
                                                                              max_dims))))
        return Sample((array(draw, shape, dt),), {"p": draw(st.sampled_from((0.0, 0.3, 0.5)))})
    return family(build)


def _eval_family(min_dims, max_dims):
    def build(draw, dt):
        shape = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(min_dims,
                                                                              max_dims))))
        return Sample((array(draw, shape, dt),), {"p": draw(st.sampled_from((0.0, 0.5, 1.0))),
                                                  "training": False})
    return family(build)


for _name, _lo, _hi in (("dropout1d", 2, 3), ("dropout2d", 4, 4), ("dropout3d", 4, 5),
                        ("alpha_dropout", 0, 3), ("feature_alpha_dropout", 2, 4)):
    _f, _tf = getattr(F, _name), getattr(TF, _name) if torch else None
    add(OpInfo(f"F.{_name}", _seeded(_f, training=True), torch_op=None,
               torch_reason=_RANDOM_MASK, samples=_dropout_family(_lo, _hi)),
        OpInfo(f"F.{_name}[eval]", lambda x, _f=_f, **kw: _f(x, **kw),
               torch_op=(lambda x, _tf=_tf, **kw: _tf(x, **kw)) if torch else None,
               torch_reason="torch is not installed", ref=lambda x, **kw: x,
               samples=_eval_family(_lo, _hi)))


# ------------------------------------------------------------------------------------------
# torch.nn.utils.rnn and a PackedSequence through nn.RNN / GRU / LSTM
# ------------------------------------------------------------------------------------------

def _rnn_utils(torch_side):
    return torch.nn.utils.rnn if torch_side else tgx.nn.utils.rnn


def np_pad_sequence(*seqs, batch_first=False, padding_value=0.0, padding_side="right"):
    T = max(s.shape[0] for s in seqs)
    out = np.full((len(seqs), T) + seqs[0].shape[1:], padding_value, np.float64)
    for i, s in enumerate(seqs):
        if padding_side == "right":
            out[i, :s.shape[0]] = s
        else:
            out[i, T - s.shape[0]:] = s
    return out if batch_first else out.swapaxes(0, 1)


def _pad_sequence_op(torch_side=False):
    return lambda *seqs, **kw: _rnn_utils(torch_side).pad_sequence(list(seqs), **kw)


def _pad_sequence_family(draw, dt):
    rest = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2))))
    seqs = tuple(array(draw, (draw(st.integers(0, 4)),) + rest, dt)
                 for _ in range(draw(st.integers(1, 4))))
    return Sample(seqs, {"batch_first": draw(st.booleans()),
                         "padding_value": draw(st.sampled_from((0.0, -1.5))),
                         "padding_side": draw(st.sampled_from(("right", "left")))})


def _padded_batch(draw, dt, feature=None):
    """A padded batch (T, B, *) or (B, T, *) with lengths in 1..T, sorted or not."""
    B, T = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rest = (feature,) if feature else tuple(draw(st.integers(1, 3)) for _ in range(
        draw(st.integers(0, 1))))
    lengths = np.array([draw(st.integers(1, T)) for _ in range(B)], np.int64)
    lengths[draw(st.integers(0, B - 1))] = T                 # the longest fills the batch
    sort = draw(st.booleans())
    if sort:
        lengths = np.sort(lengths)[::-1].copy()
    batch_first = draw(st.booleans())
    x = array(draw, ((B, T) if batch_first else (T, B)) + rest, dt)
    return x, {"lengths": lengths, "batch_first": batch_first, "enforce_sorted": sort}


def _pack_op(torch_side=False, part="data"):
    def op(x, lengths, batch_first, enforce_sorted):
        p = _rnn_utils(torch_side).pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        if part == "data":
            return p.data
        return (p.batch_sizes,) + ((p.sorted_indices, p.unsorted_indices)
                                   if p.sorted_indices is not None else ())
    return op


def np_pack(x, lengths, batch_first, enforce_sorted):
    x = x.swapaxes(0, 1) if batch_first else x                   # (T, B, *)
    order = np.arange(len(lengths)) if enforce_sorted else np.argsort(-lengths, kind="stable")
    return np.concatenate([x[t, [b for b in order if lengths[b] > t]]
                           for t in range(lengths.max())])


def _pad_packed_op(torch_side=False):
    def op(x, lengths, batch_first, enforce_sorted, total_extra, padding_value):
        R = _rnn_utils(torch_side)
        p = R.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        return R.pad_packed_sequence(p, batch_first, padding_value,
                                     total_length=int(lengths.max()) + total_extra)[0]
    return op


def np_pad_packed(x, lengths, batch_first, enforce_sorted, total_extra, padding_value):
    xt = x.swapaxes(0, 1) if batch_first else x                  # (T, B, *)
    T = int(lengths.max()) + total_extra
    out = np.full((T,) + xt.shape[1:], padding_value, np.float64)
    for b, n in enumerate(lengths):
        out[:n, b] = xt[:n, b]
    return out.swapaxes(0, 1) if batch_first else out


def _pack_family(draw, dt):
    x, kw = _padded_batch(draw, dt)
    return Sample((x,), kw)


def _pad_packed_family(draw, dt):
    x, kw = _padded_batch(draw, dt)
    kw.update(total_extra=draw(st.integers(0, 2)),
              padding_value=draw(st.sampled_from((0.0, 2.5))))
    return Sample((x,), kw)


_NO_GRAD_INTS = "batch sizes and permutations are integers"
add(
    OpInfo("nn.utils.rnn.pad_sequence", _pad_sequence_op(),
           torch_op=_pad_sequence_op(True) if torch else None,
           torch_reason="torch is not installed", ref=np_pad_sequence,
           samples=family(_pad_sequence_family)),
    OpInfo("nn.utils.rnn.pack_padded_sequence", _pack_op(),
           torch_op=(lambda x, lengths, **kw: _pack_op(True)(
               x, lengths.numpy().tolist(), **kw)) if torch else None,
           torch_reason="torch is not installed", ref=np_pack, samples=family(_pack_family)),
    OpInfo("nn.utils.rnn.pack_padded_sequence[batch_sizes]", _pack_op(part="sizes"),
           torch_op=_pack_op(True, "sizes") if torch else None,
           torch_reason="torch is not installed", samples=family(_pack_family),
           grad=False, grad_reason=_NO_GRAD_INTS),
    OpInfo("nn.utils.rnn.pad_packed_sequence", _pad_packed_op(),
           torch_op=_pad_packed_op(True) if torch else None,
           torch_reason="torch is not installed", ref=np_pad_packed,
           samples=family(_pad_packed_family)),
)


def _packed_rnn_op(cls, torch_side=False):
    """op(x, [h0 | h0, c0], *params, ctor, lengths, batch_first, enforce_sorted, _n): the padded
    batch packed, run through the module (parameters given), and padded again; returns the
    padded output and the final states (in the caller's order)."""
    def op(*tensors, ctor, lengths, batch_first, enforce_sorted, _n):
        ns = torch if torch_side else tgx
        R = _rnn_utils(torch_side)
        m = getattr(ns.nn, cls)(**ctor).to(tensors[0].dtype)
        names = [n for n, _ in m.named_parameters()]
        x, states, params = tensors[0], tensors[1:_n], tensors[_n:]
        packed = R.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        hx = None if not states else (tuple(states) if cls == "LSTM" else states[0])
        out, h = ns.func.functional_call(m, dict(zip(names, params, strict=True)), (packed, hx))
        padded = R.pad_packed_sequence(out, batch_first)[0]
        return (padded,) + (h if isinstance(h, tuple) else (h,))
    return op


def _packed_rnn_family(cls):
    def build(draw, dt):
        H, D_in = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        x, kw = _padded_batch(draw, dt, feature=D_in)
        ctor = {"input_size": D_in, "hidden_size": H, "num_layers": draw(st.integers(1, 2)),
                "bias": draw(st.booleans()), "batch_first": kw["batch_first"],
                "bidirectional": draw(st.booleans())}
        if cls == "RNN":
            ctor["nonlinearity"] = draw(st.sampled_from(("tanh", "relu")))
        inputs = (x,)
        if draw(st.booleans()):
            B = x.shape[0] if kw["batch_first"] else x.shape[1]
            hs = (ctor["num_layers"] * (1 + ctor["bidirectional"]), B, H)
            inputs += tuple(array(draw, hs, dt) for _ in range(1 + (cls == "LSTM")))
        kw.update(ctor=ctor, _n=len(inputs))
        m = getattr(tgx.nn, cls)(**ctor)
        params = tuple(array(draw, p.shape, dt, -0.6, 0.6) for p in m.parameters())
        return Sample(inputs + params, kw)
    return build


for _cls in ("RNN", "GRU", "LSTM"):
    add(OpInfo(f"nn.{_cls}[packed]", _packed_rnn_op(_cls),
               torch_op=_packed_rnn_op(_cls, True) if torch else None,
               torch_reason="torch is not installed",
               samples=family(_packed_rnn_family(_cls)), api=()))

# the rest of torch's activations and the remaining nn modules (tests/opinfo_nn_more.py)
import opinfo_nn_more  # noqa: E402, F401
