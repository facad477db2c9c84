"""Op-info entries of the losses (loaded at the end of opinfo.py, into the same OPS table):
every loss of torch.nn.functional and its torch.nn module, checked against numpy references
(where one is written), torch's values, gradients and dtypes, and gradcheck/gradgradcheck in
float64. tests/nn/test_losses_oracle.py holds the options, legacy arguments, dtypes, warnings
and errors against torch with the differential harness.
"""
from __future__ import annotations


import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import (OpInfo, S, Sample, TF, _f64, add, array, family, np_log_softmax, shape,
                    torch)

# ------------------------------------------------------------------------------------------
# cross_entropy and nll_loss: numpy references and samples
# ------------------------------------------------------------------------------------------

def np_cross_entropy(x, target, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if x.ndim != 2:                    # (C,) or (N, C, d1, ...): as rows of (N*d1.., C)
        t = np.asarray(target)
        rows = np.moveaxis(x.reshape((1,) * (x.ndim == 1) + x.shape), 1, -1)
        out = np_cross_entropy(rows.reshape(-1, rows.shape[-1]), t.reshape(-1), ignore_index,
                               reduction, label_smoothing)
        return out.reshape(t.shape) if reduction == "none" else out
    logp = np_log_softmax(x, 1)
    keep = target != ignore_index
    t = np.where(keep, target, 0)
    nll = -np.take_along_axis(logp, t[:, None], 1)[:, 0]
    if label_smoothing:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=1)
    nll = nll * keep
    if reduction == "none":
        return nll
    with np.errstate(invalid="ignore", divide="ignore"):     # none kept: NaN, as torch
        return nll.sum() if reduction == "sum" else nll.sum() / keep.sum()


def np_nll_loss(x, target, ignore_index=-100, reduction="mean"):
    keep = target != ignore_index
    nll = -x[np.arange(len(target)), np.where(keep, target, 0)] * keep
    if reduction == "none":
        return nll
    with np.errstate(invalid="ignore", divide="ignore"):
        return nll.sum() if reduction == "sum" else nll.sum() / keep.sum()



def _ce_family(layout_nd=True, smoothing=True, ignore=True):
    def build(draw, dt):
        n, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        extra = shape(draw, 0, 1 if layout_nd else 0, empty=False)
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        t = rng.integers(0, c, size=(n,) + extra)
        red = draw(st.sampled_from(("mean", "sum", "none")))
        if ignore and t.size > 1 and draw(st.booleans()):
            t.reshape(-1)[0] = -100        # one ignored target (all of them: fixed samples)
        kw = {"target": t, "reduction": red}
        if smoothing:
            kw["label_smoothing"] = draw(st.sampled_from((0.0, 0.1)))
        x = array(draw, (n, c) + extra, dt)
        return Sample((x,), kw)
    return family(build)




add(
    OpInfo("F.cross_entropy", lambda x, **kw: F.cross_entropy(x, **kw),
           torch_op=lambda x, **kw: TF.cross_entropy(x, **kw), samples=_ce_family(),
           ref=np_cross_entropy,
           fixed=(S(_f64(4), target=np.array(2), desc="1d_logits"),)),
    OpInfo("F.cross_entropy_composite", lambda x, **kw: F.cross_entropy_composite(x, **kw),
           torch_op=lambda x, **kw: TF.cross_entropy(x, **kw),
           ref=lambda x, target, **kw: np_cross_entropy(x, target, **kw),
           samples=_ce_family(layout_nd=False)),
    OpInfo("F.nll_loss", lambda x, **kw: F.nll_loss(x, **kw),
           torch_op=lambda x, **kw: TF.nll_loss(x, **kw),
           ref=np_nll_loss,
           samples=_ce_family(layout_nd=False, smoothing=False)),
)


# --- element-wise losses (F.*) and their modules ---------------------------------------------

def _loss_family(low=-2.0, high=2.0, tlow=-2.0, thigh=2.0, extra=None,
                 reductions=("mean", "sum", "none")):
    """input (any shape) and a same-shaped target kwarg (no grad), a reduction, extra(draw, s)."""
    def build(draw, dt):
        s = shape(draw)
        kw = {"target": array(draw, s, dt, tlow, thigh, layout=False),
              "reduction": draw(st.sampled_from(reductions))}
        kw.update(extra(draw, s, dt) if extra else {})
        return Sample((array(draw, s, dt, low, high),), kw)
    return family(build)


def _bce_weight(draw, s, dt):
    if not draw(st.booleans()):
        return {}
    return {"weight": array(draw, s[len(s) - draw(st.integers(0, len(s))):], dt, 0.1, 2.0,
                            layout=False)}


def _bce_logits_extra(draw, s, dt):
    kw = _bce_weight(draw, s, dt)
    if s and draw(st.booleans()):
        kw["pos_weight"] = array(draw, s[-1:], dt, 0.5, 3.0, layout=False)
    return kw


def _loss_entry(name, fn, tfn, samples, **kw):
    return OpInfo(name, lambda x, **k: fn(x, **k), torch_op=lambda x, **k: tfn(x, **k),
                  samples=samples, **kw)


_NN_LOSSES = [  # module, F function, its samples' kwargs that go to the module
    ("MSELoss", "mse_loss"), ("L1Loss", "l1_loss"), ("SmoothL1Loss", "smooth_l1_loss"),
    ("HuberLoss", "huber_loss"), ("BCELoss", "binary_cross_entropy"),
    ("BCEWithLogitsLoss", "binary_cross_entropy_with_logits"), ("KLDivLoss", "kl_div")]
_LOSS_SAMPLES = {
    "mse_loss": _loss_family(), "l1_loss": _loss_family(),
    "smooth_l1_loss": _loss_family(extra=lambda draw, s, dt: {
        "beta": draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))}),
    "huber_loss": _loss_family(extra=lambda draw, s, dt: {
        "delta": draw(st.sampled_from([0.5, 1.0, 2.0]))}),
    "binary_cross_entropy": _loss_family(0.05, 0.95, 0.0, 1.0, extra=_bce_weight),
    "binary_cross_entropy_with_logits": _loss_family(-4.0, 4.0, 0.0, 1.0,
                                                     extra=_bce_logits_extra),
    "kl_div": _loss_family(-3.0, 0.0, 0.05, 1.0, reductions=("mean", "sum", "none",
                                                             "batchmean")),
}


def _module_call(cls_name, mod):
    def call(x, target, **kw):
        return getattr(mod, cls_name)(**kw)(x, target)
    return call


for _fname, _samples in _LOSS_SAMPLES.items():
    add(_loss_entry(f"F.{_fname}", getattr(F, _fname), getattr(TF, _fname, None)
                    if TF is not None else None, _samples))
add(_loss_entry("F.kl_div[log_target]", lambda x, **k: F.kl_div(x, log_target=True, **k),
                lambda x, **k: TF.kl_div(x, log_target=True, **k),
                _loss_family(-3.0, 0.0, -3.0, 0.0)),
    OpInfo("F.binary_cross_entropy_with_logits[large]",
           lambda x, target: F.binary_cross_entropy_with_logits(x, target, reduction="none"),
           torch_op=lambda x, target: TF.binary_cross_entropy_with_logits(x, target,
                                                                          reduction="none"),
           samples=lambda dtypes: st.just(S([1.0, -2.0], target=np.array([1.0, 0.0]),
                                             desc="small")),
           fixed=(S([-800.0, -30.0, 0.0, 30.0, 800.0],
                                   target=np.array([1.0, 0.0, 1.0, 1.0, 0.0]),
                                   desc="stable", only=("torch",)),)))
for _cls, _fname in _NN_LOSSES:
    add(OpInfo(f"nn.{_cls}", _module_call(_cls, tgx.nn), api=(f"nn.{_cls}",),
               torch_op=_module_call(_cls, torch.nn) if torch is not None else None,
               samples=_LOSS_SAMPLES[_fname]))
add(OpInfo("nn.CrossEntropyLoss", _module_call("CrossEntropyLoss", tgx.nn),
           torch_op=_module_call("CrossEntropyLoss", torch.nn) if torch is not None else None,
           samples=_ce_family(layout_nd=False)),
    OpInfo("nn.NLLLoss", _module_call("NLLLoss", tgx.nn),
           torch_op=_module_call("NLLLoss", torch.nn) if torch is not None else None,
           samples=_ce_family(layout_nd=False, smoothing=False)))


# --- cross_entropy / nll_loss with class weights and probability targets ---------------------

def np_class_loss(x, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0, log_probs=False):
    """PyTorch's cross_entropy (nll_loss with log_probs) with a class weight and class-index
    or class-probability targets, on (N, C) rows: 'mean' of class indices divides by the sum
    of the targets' weights (NaN when it is 0: every target ignored, weights of 0, as torch)."""
    t = np.asarray(target)
    if x.ndim != 2:                    # (C,) or (N, C, d1, ...): as rows of (N*d1.., C)
        rows = np.moveaxis(x.reshape((1,) * (x.ndim == 1) + x.shape), 1, -1)
        c = rows.shape[-1]
        tr = np.moveaxis(t.reshape((1,) * (x.ndim == 1) + t.shape), 1, -1).reshape(-1, c) \
            if t.dtype.kind == "f" else t.reshape(-1)
        out = np_class_loss(rows.reshape(-1, c), tr, weight, ignore_index, reduction,
                            label_smoothing, log_probs)
        return out.reshape(x.shape[:1] + x.shape[2:] if x.ndim > 1 else ()) \
            if reduction == "none" else out
    n, c = x.shape
    w = np.ones(c) if weight is None else weight
    logp = x if log_probs else np_log_softmax(x, 1)
    if t.dtype.kind == "f":            # probabilities
        q = t * (1 - label_smoothing) + label_smoothing / c
        rows = -(logp * q * w).sum(axis=1)
        if reduction == "none":
            return rows
        with np.errstate(invalid="ignore", divide="ignore"):
            return rows.sum() if reduction == "sum" else rows.sum() / n
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    wt = np.where(keep, w[safe], 0)
    rows = -logp[np.arange(n), safe] * wt
    if label_smoothing:
        rows = (1 - label_smoothing) * rows - label_smoothing / c * (logp * w).sum(1) * keep
    if reduction == "none":
        return rows
    with np.errstate(invalid="ignore", divide="ignore"):
        return rows.sum() if reduction == "sum" else rows.sum() / wt.sum()


def _class_loss_family(probs=False, weight=True, smoothing=True, layout_nd=True,
                       target_input=False):
    """Logits (N, C[, d]) with class-index targets (one ignored at times) or probabilities
    (rows on the simplex, or any non-negative values), a (C,) weight, a reduction."""
    def build(draw, dt):
        n, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        extra = shape(draw, 0, 1 if layout_nd else 0, empty=False)
        one_d = layout_nd and draw(st.integers(0, 4)) == 0
        xs = (c,) if one_d else (n, c) + extra
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        kw = {"reduction": draw(st.sampled_from(("mean", "sum", "none")))}
        if probs:
            p = rng.random(xs)
            if draw(st.booleans()):
                p = p / p.sum(axis=0 if one_d else 1, keepdims=True)
            t = p.astype(dt)
        else:
            t = rng.integers(0, c, size=() if one_d else (n,) + extra)
            if t.size > 1 and draw(st.booleans()):
                t.reshape(-1)[0] = -100
        if weight and (draw(st.booleans()) or not probs):
            kw["weight"] = rng.uniform(0.1, 2.0, size=c).astype(dt)
        if smoothing:
            kw["label_smoothing"] = draw(st.sampled_from((0.0, 0.1)))
        if target_input:
            return Sample((array(draw, xs, dt), t), kw)
        kw["target"] = t
        return Sample((array(draw, xs, dt),), kw)
    return family(build)


_W3 = np.array([0.5, 2.0, 1.0])
_T_IDS = np.array([0, 2, -100, 1])
_P43 = np.random.default_rng(5).dirichlet(np.ones(3), size=4)
add(
    OpInfo("F.cross_entropy[weight]", lambda x, **kw: F.cross_entropy(x, **kw),
           torch_op=lambda x, **kw: TF.cross_entropy(x, **kw), ref=np_class_loss,
           samples=_class_loss_family(), api=("F.cross_entropy",),
           fixed=(S(_f64(4, 3), target=_T_IDS, weight=_W3, desc="weight_ignore_mean"),
                  S(_f64(4, 3), target=_T_IDS, weight=_W3, label_smoothing=0.2,
                    desc="weight_ignore_smoothing"),
                  S(_f64(4, 3), target=_T_IDS, weight=_W3, label_smoothing=0.2,
                    reduction="none", desc="weight_smoothing_none"),
                  S(_f64(2, 3, 2), target=np.array([[0, 2], [1, -100]]), weight=_W3,
                    label_smoothing=0.1, desc="weight_nd"),
                  S(_f64(3), target=np.array(1), weight=_W3, desc="weight_1d"),
                  S(_f64(2, 3), target=np.array([0, 1]), weight=np.zeros(3),
                    desc="zero_weights_give_nan", only=("numpy", "torch")),
                  S(_f64(3, 4), target=np.array([-100, -100, -100]), weight=np.ones(4),
                    desc="all_ignored_gives_nan", only=("numpy", "torch")))),
    OpInfo("F.cross_entropy[probs]", lambda x, **kw: F.cross_entropy(x, **kw),
           torch_op=lambda x, **kw: TF.cross_entropy(x, **kw), ref=np_class_loss,
           samples=_class_loss_family(probs=True), api=("F.cross_entropy",),
           fixed=(S(_f64(4, 3), target=_P43, desc="probs_mean"),
                  S(_f64(4, 3), target=_P43, weight=_W3, label_smoothing=0.2,
                    desc="probs_weight_smoothing"),
                  S(_f64(4, 3), target=_P43, weight=_W3, reduction="none",
                    desc="probs_weight_none"),
                  S(_f64(2, 3, 2), target=np.moveaxis(_P43.reshape(2, 2, 3), 2, 1),
                    weight=_W3, desc="probs_nd"),
                  S(_f64(3), target=_P43[0], label_smoothing=0.1, desc="probs_1d"),
                  S(_f64(4, 3).astype(np.float32), target=_P43, desc="float64_target"))),
    OpInfo("F.cross_entropy[probs_grad]", lambda x, p, **kw: F.cross_entropy(x, p, **kw),
           torch_op=lambda x, p, **kw: TF.cross_entropy(x, p, **kw),
           ref=lambda x, p, **kw: np_class_loss(x, p, **kw), api=("F.cross_entropy",),
           samples=_class_loss_family(probs=True, target_input=True)),
    OpInfo("F.nll_loss[weight]", lambda x, **kw: F.nll_loss(x, **kw),
           torch_op=lambda x, **kw: TF.nll_loss(x, **kw),
           ref=lambda x, **kw: np_class_loss(x, log_probs=True, **kw),
           samples=_class_loss_family(smoothing=False), api=("F.nll_loss",),
           fixed=(S(_f64(4, 3, high=0.0), target=_T_IDS, weight=_W3, desc="weight_ignore"),
                  S(_f64(2, 3, 2, high=0.0), target=np.array([[0, 2], [1, -100]]),
                    weight=_W3, reduction="none", desc="weight_nd_none"))),
    OpInfo("nn.CrossEntropyLoss[weight]", _module_call("CrossEntropyLoss", tgx.nn),
           torch_op=_module_call("CrossEntropyLoss", torch.nn) if torch is not None else None,
           samples=_class_loss_family(layout_nd=False), api=("nn.CrossEntropyLoss",)),
    OpInfo("nn.CrossEntropyLoss[probs]", _module_call("CrossEntropyLoss", tgx.nn),
           torch_op=_module_call("CrossEntropyLoss", torch.nn) if torch is not None else None,
           samples=_class_loss_family(probs=True), api=("nn.CrossEntropyLoss",)),
    OpInfo("nn.NLLLoss[weight]", _module_call("NLLLoss", tgx.nn),
           torch_op=_module_call("NLLLoss", torch.nn) if torch is not None else None,
           samples=_class_loss_family(smoothing=False, layout_nd=False), api=("nn.NLLLoss",)),
)


# --- the rest of torch's losses: per-element, margin, pair and triplet losses ----------------

def _sign(draw, s, dt):
    return np.where(array(draw, s, dt, layout=False) >= 0, 1.0, -1.0).astype(dt)


def _away(draw, s, dt):
    """Offsets of size 0.3..1 in each entry, either sign."""
    mag = array(draw, s, dt, 0.3, 1.0, layout=False)
    return np.where(array(draw, s, dt, layout=False) >= 0, mag, -mag)


def _new_family(kind):
    """Samples for the losses added with the harness (tests/nn/test_losses_oracle.py holds
    their options and errors against torch): inputs that require grad, a constant target."""
    def build(draw, dt):
        red = draw(st.sampled_from(("mean", "sum", "none")))
        kw = {"reduction": red}
        if kind == "poisson":
            s = shape(draw)
            log_input = draw(st.booleans())
            kw.update(target=array(draw, s, dt, 0.0, 3.0, layout=False), log_input=log_input,
                      full=draw(st.booleans()))
            return Sample((array(draw, s, dt, *((-1.0, 1.0) if log_input else (0.2, 2.0))),),
                          kw)
        if kind == "gaussian":
            s = shape(draw, 1, 3)
            kw.update(target=array(draw, s, dt, layout=False), full=draw(st.booleans()))
            vs = draw(st.sampled_from((s, s[:-1], s[:-1] + (1,))))
            return Sample((array(draw, s, dt), array(draw, vs, dt, 0.2, 2.0)), kw)
        if kind in ("soft_margin", "hinge"):
            s = shape(draw)
            kw["target"] = _sign(draw, s, dt)
            if kind == "hinge":
                kw["margin"] = draw(st.sampled_from((0.5, 1.0)))
            return Sample((array(draw, s, dt, avoid=(kw.get("margin", 0.0),)),), kw)
        if kind == "multilabel_soft":
            s = shape(draw, 1, 2)
            kw["target"] = (array(draw, s, dt, layout=False) > 0).astype(dt)
            if draw(st.booleans()):
                kw["weight"] = array(draw, s[-1:], dt, 0.1, 2.0, layout=False)
            return Sample((array(draw, s, dt),), kw)
        n, c = draw(st.integers(1, 3)), draw(st.integers(1, 4))
        if kind == "multi_margin":
            rng = np.random.default_rng(draw(st.integers(0, 99)))
            kw.update(target=rng.integers(0, c, n), p=draw(st.sampled_from((1, 2))),
                      margin=draw(st.sampled_from((0.5, 1.0))))
            if draw(st.booleans()):
                kw["weight"] = array(draw, (c,), dt, 0.1, 2.0, layout=False)
            # each x[i] - x[y] away from -margin, where the hinge has a kink
            x = np.round(array(draw, (n, c), dt, layout=False) * 4) / 4 + 0.1 * np.arange(c)
            return Sample((x.astype(dt),), kw)
        if kind == "multilabel_margin":
            rng = np.random.default_rng(draw(st.integers(0, 99)))
            t = np.full((n, c), -1)
            for row in t:
                k = rng.integers(0, c + 1)
                row[:k] = rng.permutation(c)[:k]
            x = np.round(array(draw, (n, c), dt, layout=False) * 4) / 4 + 0.1 * np.arange(c)
            return Sample((x.astype(dt),), dict(kw, target=t))
        d = draw(st.integers(2, 4))
        if kind == "cosine":
            kw.update(target=_sign(draw, (n,), dt), margin=draw(st.sampled_from((0.0, -0.5))))
            return Sample((array(draw, (n, d), dt), array(draw, (n, d), dt)), kw)
        if kind == "ranking":
            kw.update(target=_sign(draw, (n,), dt), margin=draw(st.sampled_from((0.0, 0.5))))
            a = array(draw, (n,), dt)
            b = a + np.where(array(draw, (n,), dt) > 0, 1.0, -1.0) * (kw["margin"] + 0.3)
            return Sample((a, b.astype(dt)), kw)
        # the points apart (a distance near 0 is the norm's kink, where finite differences
        # mean nothing) and the hinge away from 0
        a = array(draw, (n, d), dt)
        apart = [(a + _away(draw, (n, d), dt)).astype(dt) for _ in range(2)]
        if kind == "pairwise":
            return Sample((a, apart[0]), {"p": draw(st.sampled_from((1.0, 2.0, 3.0))),
                                          "keepdim": draw(st.booleans())})
        kw.update(margin=draw(st.sampled_from((0.5, 1.0, 3.0))), swap=draw(st.booleans()))
        if kind == "triplet":
            kw["p"] = draw(st.sampled_from((1.0, 2.0)))
        return Sample((a, *apart), kw)
    return family(build)


def _f_call(name, lib):
    """lib's F.name(*inputs, **kwargs), the target (a kwarg in the samples) placed second, or
    third after two inputs, as torch's positional arguments."""
    def call(*inputs, target=None, **kw):
        fn = getattr(lib, name)
        args = inputs if target is None else (
            (inputs[0], target, *inputs[1:]) if len(inputs) != 2 or name == "gaussian_nll_loss"
            else (*inputs, target))
        return fn(*args, **kw)
    return call


def _m_call(cls, lib, forward=()):
    """nn.cls(**kwargs)(*inputs, target): the module form; `forward` names the kwargs that go
    to forward (GaussianNLLLoss's var is an input)."""
    def call(*inputs, target=None, **kw):
        args = inputs if target is None else (
            (inputs[0], target, *inputs[1:]) if len(inputs) != 2 or cls == "GaussianNLLLoss"
            else (*inputs, target))
        return getattr(lib, cls)(**kw)(*args)
    return call


_NEW = [  # F name, module name, sample kind
    ("poisson_nll_loss", "PoissonNLLLoss", "poisson"),
    ("gaussian_nll_loss", "GaussianNLLLoss", "gaussian"),
    ("soft_margin_loss", "SoftMarginLoss", "soft_margin"),
    ("hinge_embedding_loss", "HingeEmbeddingLoss", "hinge"),
    ("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", "multilabel_soft"),
    ("multi_margin_loss", "MultiMarginLoss", "multi_margin"),
    ("multilabel_margin_loss", "MultiLabelMarginLoss", "multilabel_margin"),
    ("cosine_embedding_loss", "CosineEmbeddingLoss", "cosine"),
    ("margin_ranking_loss", "MarginRankingLoss", "ranking"),
    ("triplet_margin_loss", "TripletMarginLoss", "triplet"),
    ("triplet_margin_with_distance_loss", "TripletMarginWithDistanceLoss", "triplet_distance"),
    ("pairwise_distance", None, "pairwise"),
]
for _fname, _cls, _kind in _NEW:
    add(OpInfo(f"F.{_fname}", _f_call(_fname, F),
               torch_op=_f_call(_fname, TF) if TF is not None else None,
               samples=_new_family(_kind)))
    if _cls is not None:
        add(OpInfo(f"nn.{_cls}", _m_call(_cls, tgx.nn),
                   torch_op=_m_call(_cls, torch.nn) if torch is not None else None,
                   samples=_new_family(_kind)))


def _weighted_family(draw, dt):
    s = shape(draw)
    return Sample((array(draw, s, dt),),
                  {"target": array(draw, s, dt, layout=False),
                   "weight": array(draw, s, dt, 0.1, 2.0, layout=False),
                   "reduction": draw(st.sampled_from(("mean", "sum", "none")))})


for _fname in ("mse_loss", "l1_loss", "huber_loss"):     # torch 2.13's per-element weight
    add(OpInfo(f"F.{_fname}[weight]", _f_call(_fname, F),
               torch_op=_f_call(_fname, TF) if TF is not None else None,
               samples=family(_weighted_family), api=(f"F.{_fname}",)))
