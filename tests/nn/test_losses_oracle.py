"""Every loss of torch.nn.functional and torch.nn against torch itself (the differential
harness, tests/oracle.py): values, dtypes, shapes, the gradient of every float input, the
warnings (their classes), and the errors, over generated shapes (size-0 dims, 0-d, broadcast
targets), dtypes (float32, float64, mixed, integer targets) and options (reductions, the
legacy size_average/reduce, weights, ignore_index, label_smoothing, pos_weight, margins, ...).

Each case is written once against torch's names and run on both: `loss_case(m)` builds the
tensors from the same numpy arrays in namespace m (the look-alike, or torch) and returns
(loss, gradients, warning classes). Degenerate means match too: a 'mean' over no terms (every
target ignored, weights of 0, an empty batch) is NaN, as in PyTorch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_clear, both, lookalike, requires_torch, torch

pytestmark = requires_torch

F32, F64 = np.float32, np.float64
REDS = ("mean", "sum", "none")
# (size_average, reduce): every combination PyTorch maps, None meaning "not given"
LEGACY = [(None, None), (True, None), (False, None), (None, True), (None, False),
          (True, True), (True, False), (False, True), (False, False)]


def _to(m, v, grad):
    t = m.tensor(v)
    return t.requires_grad_(True) if grad and v.dtype.kind == "f" else t


def run_loss(m, name, inputs, kwargs, module=None, ctor=None):
    """(loss, grads of the float inputs, warning classes) of F.name(*inputs, **kwargs) or of
    nn.module(**ctor)(*inputs) in namespace m. Numpy arrays become tensors (the inputs'
    float ones requiring grad); a kwarg array becomes a constant tensor."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = [_to(m, v, True) if isinstance(v, np.ndarray) else v for v in inputs]
        kw = {k: (m.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        if module is None:
            loss = getattr(m.nn.functional, name)(*ts, **kw)
        else:
            ck = {k: (m.tensor(v) if isinstance(v, np.ndarray) else v)
                  for k, v in (ctor or {}).items()}
            loss = getattr(m.nn, module)(**ck)(*ts, **kw)
        grads = []
        if loss.requires_grad:
            loss.sum().backward()
            grads = [t.grad for t in ts if hasattr(t, "requires_grad") and t.requires_grad]
    kinds = sorted({w.category.__name__ for w in caught
                    if issubclass(w.category, (UserWarning, DeprecationWarning))})
    return loss, grads, kinds


def check(name, inputs, kwargs=None, module=None, ctor=None, tol=None):
    """The case on both sides, held equal (values, dtypes, shapes, grads, warnings, errors)."""
    kwargs = kwargs or {}
    dts = [v.dtype for v in inputs if isinstance(v, np.ndarray)]
    low = any(d == F32 or d.kind != "f" for d in dts)      # (ints compute in float32)
    atol = tol or (2e-5 if low else 1e-10)
    return both(lambda: run_loss(lookalike(), name, inputs, kwargs, module, ctor),
                lambda: run_loss(torch, name, inputs, kwargs, module, ctor),
                atol=atol, rtol=atol)


def rng(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------------
# generated inputs
# ------------------------------------------------------------------------------------------

shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)
floats = st.sampled_from([F32, F64])


@st.composite
def elementwise_case(draw):
    """(F name, inputs, kwargs, module name, module kwargs) for the losses whose target has a
    value per element."""
    name = draw(st.sampled_from([
        "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
        "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "soft_margin_loss",
        "hinge_embedding_loss", "multilabel_soft_margin_loss", "gaussian_nll_loss"]))
    s = draw(shapes)
    dt = draw(floats)
    r = rng(draw(st.integers(0, 2 ** 16)))
    tshape = s
    if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                "poisson_nll_loss") and s and draw(st.booleans()):
        tshape = s[draw(st.integers(0, len(s))):]              # a broadcasting target
    tdt = draw(st.sampled_from([dt, dt, F64 if dt == F32 else F32]))
    x = r.uniform(-2, 2, s).astype(dt)
    t = r.uniform(-2, 2, tshape).astype(tdt)
    kw, ctor = {}, {}
    red = draw(st.sampled_from(REDS))
    if name == "binary_cross_entropy":
        x = r.uniform(0.02, 0.98, s).astype(dt)
        t = r.uniform(0, 1, s).astype(tdt)
    if name == "binary_cross_entropy_with_logits":
        t = r.uniform(0, 1, s).astype(tdt)
    if name in ("soft_margin_loss", "hinge_embedding_loss"):
        t = r.choice([-1.0, 1.0], s).astype(tdt)
    if name == "multilabel_soft_margin_loss":
        if not s:
            s = (2,)
            x = r.uniform(-2, 2, s).astype(dt)
        t = r.integers(0, 2, s).astype(tdt)
    if name == "kl_div":
        x = np.log(r.uniform(0.05, 1, s)).astype(dt)
        t = r.uniform(0.0, 1, tshape).astype(tdt)
        t[t < 0.2] = 0
        if draw(st.booleans()):
            kw["log_target"] = ctor["log_target"] = True
            t = np.log(r.uniform(0.05, 1, tshape)).astype(tdt)
        red = draw(st.sampled_from(REDS + ("batchmean",)))
    if name == "poisson_nll_loss":
        t = r.uniform(0, 3, tshape).astype(tdt)
        for k in ("log_input", "full"):
            kw[k] = ctor[k] = draw(st.booleans())
        if not kw["log_input"]:
            x = r.uniform(0.1, 2, s).astype(dt)
    if name == "smooth_l1_loss":
        kw["beta"] = ctor["beta"] = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    if name == "huber_loss":
        kw["delta"] = ctor["delta"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    if name == "hinge_embedding_loss":
        kw["margin"] = ctor["margin"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
    inputs = [x, t]
    if name == "gaussian_nll_loss":
        t = t.astype(dt)
        inputs = [x, t]
        form = draw(st.sampled_from(["same", "short", "one", "float"]))
        if form == "same" or not s:
            var = r.uniform(0.0, 2, s).astype(dt)
        elif form == "short":
            var = r.uniform(0.0, 2, s[:-1]).astype(dt)
        elif form == "one":
            var = r.uniform(0.0, 2, s[:-1] + (1,)).astype(dt)
        else:
            var = float(r.uniform(0.1, 2))
        inputs.append(var)
        for k in ("full",):
            kw[k] = ctor[k] = draw(st.booleans())
        kw["eps"] = ctor["eps"] = draw(st.sampled_from([1e-6, 0.5]))
    if name in ("mse_loss", "l1_loss", "huber_loss") and tshape == s and draw(st.booleans()):
        kw["weight"] = r.uniform(0.1, 2, s).astype(dt)
    if name in ("binary_cross_entropy", "binary_cross_entropy_with_logits",
                "multilabel_soft_margin_loss") and draw(st.booleans()):
        ws = s[len(s) - draw(st.integers(0, len(s))):]
        kw["weight"] = ctor["weight"] = r.uniform(0.1, 2, ws).astype(dt)
    if name == "binary_cross_entropy_with_logits" and s and draw(st.booleans()):
        kw["pos_weight"] = ctor["pos_weight"] = r.uniform(0.5, 3, s[-1:]).astype(dt)
    kw["reduction"] = ctor["reduction"] = red

    def arr(v):
        return np.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v

    return (name, [arr(v) for v in inputs], {k: arr(v) for k, v in kw.items()},
            {k: arr(v) for k, v in ctor.items()})


MODULES = {"mse_loss": "MSELoss", "l1_loss": "L1Loss", "smooth_l1_loss": "SmoothL1Loss",
           "huber_loss": "HuberLoss", "binary_cross_entropy": "BCELoss",
           "binary_cross_entropy_with_logits": "BCEWithLogitsLoss", "kl_div": "KLDivLoss",
           "poisson_nll_loss": "PoissonNLLLoss", "gaussian_nll_loss": "GaussianNLLLoss",
           "soft_margin_loss": "SoftMarginLoss", "hinge_embedding_loss": "HingeEmbeddingLoss",
           "multilabel_soft_margin_loss": "MultiLabelSoftMarginLoss",
           "cross_entropy": "CrossEntropyLoss", "nll_loss": "NLLLoss",
           "multi_margin_loss": "MultiMarginLoss",
           "multilabel_margin_loss": "MultiLabelMarginLoss",
           "cosine_embedding_loss": "CosineEmbeddingLoss",
           "margin_ranking_loss": "MarginRankingLoss",
           "triplet_margin_loss": "TripletMarginLoss",
           "triplet_margin_with_distance_loss": "TripletMarginWithDistanceLoss"}
# the module takes these F arguments in forward, not in its constructor
FORWARD_ONLY = {"gaussian_nll_loss": ()}


def _module_form(name, inputs, kw, ctor):
    """The module's constructor kwargs: the F kwargs the module holds (weights included)."""
    c = dict(ctor)
    if name not in ("mse_loss", "l1_loss", "huber_loss") and "weight" in kw:
        c["weight"] = kw["weight"]          # (those three take weight in F only)
    for k in ("pos_weight", "ignore_index", "label_smoothing", "p", "margin",
              "swap", "eps", "full", "log_input", "log_target", "beta", "delta",
              "distance_function"):
        if k in kw:
            c[k] = kw[k]
    c["reduction"] = kw.get("reduction", "mean")
    return c


@settings(max_examples=60)
@given(elementwise_case())
def test_elementwise_losses_match_torch(case):
    name, inputs, kw, ctor = case
    check(name, inputs, kw)
    check(name, inputs, {}, module=MODULES[name], ctor=_module_form(name, inputs, kw, ctor))


@st.composite
def class_case(draw):
    """cross_entropy / nll_loss: layouts (C,), (N, C), (N, C, d), N = 0 too; class indices
    (some or all ignored, ignore_index given or not) or probabilities; weight; smoothing."""
    name = draw(st.sampled_from(["cross_entropy", "nll_loss"]))
    r = rng(draw(st.integers(0, 2 ** 16)))
    dt = draw(floats)
    c = draw(st.integers(1, 4))
    layout = draw(st.sampled_from(["1d", "2d", "2d", "nd"]))
    n = draw(st.integers(0, 4))
    shape = (c,) if layout == "1d" else (n, c) if layout == "2d" else (n, c, draw(
        st.integers(1, 3)))
    x = r.normal(size=shape).astype(dt)
    if name == "nll_loss":                  # log-probabilities along the class dim
        x = np.log(r.uniform(0.01, 1, shape)).astype(dt)
    kw = {}
    probs = name == "cross_entropy" and draw(st.integers(0, 3)) == 0
    tshape = () if layout == "1d" else (n,) + shape[2:]
    if probs:
        t = r.random(shape).astype(dt)
    else:
        t = r.integers(0, c, tshape).astype(np.int64)
        ign = draw(st.sampled_from([None, -100, 1]))
        if ign is not None:
            kw["ignore_index"] = ign
        which = draw(st.sampled_from(["none", "some", "all"]))
        fill = -100 if ign is None else ign
        if which == "all":
            t[...] = fill
        elif which == "some" and t.size:
            t.reshape(-1)[0] = fill
    if draw(st.booleans()):
        w = r.uniform(0.1, 2, c).astype(dt)
        if draw(st.integers(0, 4)) == 0:
            w[:] = 0                                        # weights summing to 0: NaN mean
        kw["weight"] = w
    if name == "cross_entropy" and draw(st.booleans()):
        kw["label_smoothing"] = draw(st.sampled_from([0.1, 0.5, 1.0]))
    kw["reduction"] = draw(st.sampled_from(REDS))
    return name, [x, t], kw


@settings(max_examples=80)
@given(class_case())
def test_class_losses_match_torch(case):
    name, inputs, kw = case
    check(name, inputs, kw)
    check(name, inputs, {}, module=MODULES[name], ctor=_module_form(name, inputs, kw, {}))


@st.composite
def margin_case(draw):
    """multi_margin_loss, multilabel_margin_loss, margin_ranking_loss, cosine_embedding_loss,
    triplet_margin_loss (+ with_distance), pairwise_distance."""
    name = draw(st.sampled_from(["multi_margin_loss", "multilabel_margin_loss",
                                 "margin_ranking_loss", "cosine_embedding_loss",
                                 "triplet_margin_loss", "triplet_margin_with_distance_loss",
                                 "pairwise_distance"]))
    r = rng(draw(st.integers(0, 2 ** 16)))
    dt = draw(floats)
    n, c = draw(st.integers(0, 4)), draw(st.integers(1, 4))
    one = draw(st.integers(0, 3)) == 0
    kw = {}
    if name == "multi_margin_loss":
        n = max(n, 1)       # PyTorch's 'mean' over an empty batch is uninitialised memory
        x = r.normal(size=(c,) if one else (n, c)).astype(dt)
        t = r.integers(0, c, () if one else (n,)).astype(np.int64)
        kw["p"] = draw(st.sampled_from([1, 2]))
        kw["margin"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
        if draw(st.booleans()):
            kw["weight"] = r.uniform(0.1, 2, c).astype(dt)
        inputs = [x, t]
    elif name == "multilabel_margin_loss":
        # (N >= 1: PyTorch's 'mean' over an empty batch returns uninitialised memory)
        shape = (c,) if one else (max(n, 1), c)
        x = r.normal(size=shape).astype(dt)
        t = np.full(shape, -1, np.int64)
        for row in t.reshape(-1, c):
            k = r.integers(0, c + 1)
            row[:k] = r.permutation(c)[:k]
        inputs = [x, t]
    elif name == "margin_ranking_loss":
        s = (n,) if not one else ()
        inputs = [r.normal(size=s).astype(dt), r.normal(size=s).astype(dt),
                  r.choice([-1.0, 1.0], s).astype(dt)]
        kw["margin"] = draw(st.sampled_from([0.0, 0.5]))
    elif name == "cosine_embedding_loss":
        # d >= 2: with one feature cos is +-1 everywhere, its gradient 0 plus float32
        # rounding amplified by 1/|x| (both sides' noise, not a difference)
        d = draw(st.integers(2, 4))
        s = (d,) if one else (n, d)
        inputs = [r.normal(size=s).astype(dt), r.normal(size=s).astype(dt),
                  r.choice([-1.0, 1.0], () if one else (n,)).astype(dt)]
        kw["margin"] = draw(st.sampled_from([0.0, 0.5, -0.2]))
    else:
        d = draw(st.integers(1, 4))
        s = (d,) if one else (n, d)
        inputs = [r.normal(size=s).astype(dt) for _ in range(2 if name == "pairwise_distance"
                                                             else 3)]
        if name == "pairwise_distance":
            kw["p"] = draw(st.sampled_from([1.0, 2.0, 3.0, float("inf")]))
            kw["keepdim"] = draw(st.booleans())
            return name, inputs, kw
        kw["margin"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
        kw["swap"] = draw(st.booleans())
        if name == "triplet_margin_loss":
            kw["p"] = draw(st.sampled_from([1.0, 2.0, 3.0]))
    kw["reduction"] = draw(st.sampled_from(REDS))
    return name, inputs, kw


@settings(max_examples=60)
@given(margin_case())
def test_margin_and_pair_losses_match_torch(case):
    name, inputs, kw = case
    check(name, inputs, kw)
    if name in MODULES:
        check(name, inputs, {}, module=MODULES[name], ctor=_module_form(name, inputs, kw, {}))


# ------------------------------------------------------------------------------------------
# the legacy arguments: every loss that has them in PyTorch, functional and module
# ------------------------------------------------------------------------------------------

_r = rng(0)
_X = _r.uniform(-1, 1, (3, 4))
_P = _r.uniform(0.05, 0.95, (3, 4))
_T01 = _r.uniform(0, 1, (3, 4))
_PM = _r.choice([-1.0, 1.0], (3, 4))
_IDS = np.array([0, 3, 1])
LEGACY_CASES = {   # F name: (inputs, module name); every one has size_average and reduce
    "mse_loss": ([_X, _T01], "MSELoss"), "l1_loss": ([_X, _T01], "L1Loss"),
    "smooth_l1_loss": ([_X, _T01], "SmoothL1Loss"),
    "binary_cross_entropy": ([_P, _T01], "BCELoss"),
    "binary_cross_entropy_with_logits": ([_X, _T01], "BCEWithLogitsLoss"),
    "kl_div": ([np.log(_P), _T01], "KLDivLoss"),
    "poisson_nll_loss": ([_X, _T01], "PoissonNLLLoss"),
    "soft_margin_loss": ([_X, _PM], "SoftMarginLoss"),
    "hinge_embedding_loss": ([_X, _PM], "HingeEmbeddingLoss"),
    "multilabel_soft_margin_loss": ([_X, (_T01 > 0.5).astype(float)],
                                    "MultiLabelSoftMarginLoss"),
    "cross_entropy": ([_X, _IDS], "CrossEntropyLoss"),
    "nll_loss": ([np.log(_P), _IDS], "NLLLoss"),
    "multi_margin_loss": ([_X, _IDS], "MultiMarginLoss"),
    "multilabel_margin_loss": ([_X, np.array([[0, 1, -1, 0], [3, -1, 0, 0], [2, 1, 0, -1]])],
                               "MultiLabelMarginLoss"),
    "cosine_embedding_loss": ([_X, _T01, _PM[:, 0]], "CosineEmbeddingLoss"),
    "margin_ranking_loss": ([_X[:, 0], _T01[:, 0], _PM[:, 0]], "MarginRankingLoss"),
    "triplet_margin_loss": ([_X, _T01, _P], "TripletMarginLoss"),
}


@pytest.mark.parametrize("name", list(LEGACY_CASES))
@pytest.mark.parametrize("size_average,reduce", LEGACY)
def test_legacy_size_average_and_reduce(name, size_average, reduce):
    inputs, module = LEGACY_CASES[name]
    legacy = {k: v for k, v in (("size_average", size_average), ("reduce", reduce))
              if v is not None}
    for reduction in ("mean", "none"):      # the legacy pair wins over reduction when given
        check(name, inputs, dict(legacy, reduction=reduction))
        check(name, inputs, {}, module=module, ctor=dict(legacy, reduction=reduction))


def test_legacy_arguments_positionally():
    """torch's positional order: cross_entropy(input, target, weight, size_average,
    ignore_index, reduce, reduction, label_smoothing)."""
    w = _r.uniform(0.5, 1.5, 4)
    both(lambda: run_loss(lookalike(), "cross_entropy",
                          [_X, _IDS, None, False, 1, True, "mean", 0.1], {})[:2],
         lambda: run_loss(torch, "cross_entropy",
                          [_X, _IDS, None, False, 1, True, "mean", 0.1], {})[:2])
    check("nll_loss", [np.log(_P), _IDS], {"weight": w, "size_average": False})
    check("binary_cross_entropy", [_P, _T01, None, True, False], {})


@pytest.mark.parametrize("module", ["HuberLoss", "GaussianNLLLoss",
                                    "TripletMarginWithDistanceLoss"])
def test_losses_without_legacy_arguments_refuse_them_as_torch(module):
    """PyTorch's HuberLoss, GaussianNLLLoss and TripletMarginWithDistanceLoss have no
    size_average: both refuse it (a TypeError naming the argument)."""
    for m in (lookalike(), torch):
        with pytest.raises(TypeError, match="size_average"):
            getattr(m.nn, module)(size_average=False)


# ------------------------------------------------------------------------------------------
# degenerate means, the class of issue 43's example: NaN as in PyTorch, the same gradients
# ------------------------------------------------------------------------------------------

_L = _r.normal(size=(3, 4))
DEGENERATE = {
    "all_ignored": ("cross_entropy", [_L, np.full(3, -100)], {}),
    "all_ignored_own_index": ("cross_entropy", [_L, np.full(3, 2)], {"ignore_index": 2}),
    "all_ignored_smoothing": ("cross_entropy", [_L, np.full(3, -100)],
                              {"label_smoothing": 0.2}),
    "all_ignored_weight": ("cross_entropy", [_L, np.full(3, -100)],
                           {"weight": np.ones(4)}),
    "zero_weights": ("cross_entropy", [_L, np.array([0, 1, 2])],
                     {"weight": np.array([0.0, 0.0, 0.0, 1.0])}),
    "zero_weights_some_ignored": ("cross_entropy", [_L, np.array([0, -100, 2])],
                                  {"weight": np.array([0.0, 1.0, 0.0, 1.0])}),
    "zero_weights_smoothing": ("cross_entropy", [_L, np.array([0, -100, 2])],
                               {"weight": np.array([0.0, 1.0, 0.0, 1.0]),
                                "label_smoothing": 0.3}),
    "empty_batch": ("cross_entropy", [np.zeros((0, 4)), np.zeros(0, np.int64)], {}),
    "empty_batch_probs": ("cross_entropy", [np.zeros((0, 4)), np.zeros((0, 4))], {}),
    "empty_batch_nd": ("cross_entropy", [np.zeros((0, 4, 2)), np.zeros((0, 2), np.int64)], {}),
    "nll_all_ignored": ("nll_loss", [_L, np.full(3, -100)], {}),
    "nll_zero_weights": ("nll_loss", [_L, np.array([0, 1, 2])],
                         {"weight": np.array([0.0, 0.0, 0.0, 1.0])}),
    "nll_empty": ("nll_loss", [np.zeros((0, 4)), np.zeros(0, np.int64)], {}),
    "mse_empty": ("mse_loss", [np.zeros((0, 3)), np.zeros((0, 3))], {}),
    "bce_empty": ("binary_cross_entropy", [np.zeros((0, 3)), np.zeros((0, 3))], {}),
    "kl_batchmean_empty": ("kl_div", [np.zeros((0, 3)), np.zeros((0, 3))],
                           {"reduction": "batchmean"}),
    "mse_weight_zero": ("mse_loss", [_L, _L * 0], {"weight": np.zeros((3, 4))}),
}


@pytest.mark.parametrize("case", list(DEGENERATE))
@pytest.mark.parametrize("reduction", REDS)
def test_degenerate_means_are_torchs(case, reduction):
    name, inputs, kw = DEGENERATE[case]
    kw = dict(kw, reduction=kw.get("reduction", reduction))
    check(name, inputs, kw)
    check(name, inputs, {}, module=MODULES[name], ctor=_module_form(name, inputs, kw, {}))


def test_issue_example_all_ignored_mean_is_nan():
    """Issue 43: cross_entropy's mean over all-ignored targets is NaN in torch (was 0.0)."""
    ours, theirs = check("cross_entropy", [_L, np.full(3, -100)], {})
    assert np.isnan(ours[0].item()) and np.isnan(theirs[0].item())


# ------------------------------------------------------------------------------------------
# errors: where torch raises, a one-line error of tinygradx's own naming the thing
# ------------------------------------------------------------------------------------------

_I = np.array([0, 1, 2])
ERRORS = {
    "bad_reduction": ("mse_loss", [_X, _X], {"reduction": "avg"}),
    "bad_reduction_ce": ("cross_entropy", [_L, _I], {"reduction": "batchmean"}),
    "no_broadcast": ("mse_loss", [_X, _X[:, :3]], {}),
    "int_pair": ("mse_loss", [_IDS, _IDS], {}),
    "bce_size": ("binary_cross_entropy", [_P, _T01[0]], {}),
    "bce_dtype": ("binary_cross_entropy", [_P.astype(F32), _T01], {}),
    "bce_logits_size": ("binary_cross_entropy_with_logits", [_X, _T01[0]], {}),
    "ce_int32_target": ("cross_entropy", [_L, _I.astype(np.int32)], {}),
    "ce_float_ids": ("cross_entropy", [_L, _I.astype(F64)], {}),
    "ce_target_shape": ("cross_entropy", [_L, np.array([0, 1])], {}),
    "ce_out_of_range": ("cross_entropy", [_L, np.array([0, 1, 4])], {}),
    "ce_negative": ("cross_entropy", [_L, np.array([0, -1, 2])], {}),
    "ce_weight_shape": ("cross_entropy", [_L, _I], {"weight": np.ones(3)}),
    "ce_weight_dtype": ("cross_entropy", [_L, _I], {"weight": np.ones(4, F32)}),
    "ce_smoothing": ("cross_entropy", [_L, _I], {"label_smoothing": 1.5}),
    "ce_probs_shape": ("cross_entropy", [_L, _L[:, :3]], {}),
    "ce_int_input": ("cross_entropy", [_I.reshape(3, 1), np.array([0, 0, 0])], {}),
    "ce_0d_input": ("cross_entropy", [np.array(1.0), np.array(0)], {}),
    "nll_out_of_range": ("nll_loss", [_L, np.array([0, 1, 9])], {}),
    "huber_delta": ("huber_loss", [_X, _X], {"delta": 0.0}),
    "smooth_beta": ("smooth_l1_loss", [_X, _X], {"beta": -1.0}),
    "mse_weight_shape": ("mse_loss", [_X, _X], {"weight": np.ones(4)}),
    "gaussian_negative_var": ("gaussian_nll_loss", [_X, _X, -np.ones((3, 4))], {}),
    "gaussian_var_shape": ("gaussian_nll_loss", [_X, _X, np.ones((2, 4))], {}),
    "multi_margin_p": ("multi_margin_loss", [_X, _IDS], {"p": 3}),
    "multi_margin_weight": ("multi_margin_loss", [_X, _IDS], {"weight": np.ones((2, 2))}),
    "multi_margin_range": ("multi_margin_loss", [_X, np.array([0, 1, 7])], {}),
    "multilabel_shape": ("multilabel_margin_loss", [_X, _IDS], {}),
    "ranking_dims": ("margin_ranking_loss", [_X, _X, _X[:, 0]], {}),
    "cosine_dims": ("cosine_embedding_loss", [_X, _X, _X], {}),
    "cosine_1d_target_1d_inputs": ("cosine_embedding_loss", [_X[0], _X[0], _PM[:, 0]], {}),
    "triplet_dims": ("triplet_margin_loss", [_X, _X, _X[0]], {}),
    "triplet_margin": ("triplet_margin_loss", [_X, _X, _X], {"margin": 0.0}),
    "bce_out_of_range": ("binary_cross_entropy", [_X, _T01], {}),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case):
    name, inputs, kw = ERRORS[case]
    ours, theirs = check(name, inputs, kw)
    assert_clear(ours.exc)


# ------------------------------------------------------------------------------------------
# dtypes: which pairs each loss promotes, computes in one operand's dtype, or refuses
# ------------------------------------------------------------------------------------------

_DT = {"f32": F32, "f64": F64, "i64": np.int64}
DTYPE_LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
                "soft_margin_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss"]


@pytest.mark.parametrize("name", DTYPE_LOSSES)
@pytest.mark.parametrize("xdt,tdt", [("f32", "f64"), ("f64", "f32"), ("f32", "i64"),
                                     ("i64", "f32"), ("i64", "i64")])
def test_dtype_pairs_match_torch(name, xdt, tdt):
    x = (_P * (1 if name == "binary_cross_entropy" else 2)).astype(_DT[xdt])
    t = (np.sign(_X) if name in ("soft_margin_loss", "hinge_embedding_loss")
         else _T01).astype(_DT[tdt])
    check(name, [x, t], {})


@pytest.mark.parametrize("name,kw", [
    ("binary_cross_entropy", {"weight": _T01}),
    ("binary_cross_entropy_with_logits", {"weight": _T01}),
    ("binary_cross_entropy_with_logits", {"pos_weight": _T01[0]}),
    ("mse_loss", {"weight": _T01}), ("l1_loss", {"weight": _T01}),
    ("huber_loss", {"weight": _T01}), ("multilabel_soft_margin_loss", {"weight": _T01}),
])
def test_float64_weights_on_float32_losses(name, kw):
    """A float64 weight on float32 tensors: PyTorch's kernels read it in float32, its
    composites promote."""
    check(name, [_P.astype(F32), _T01.astype(F32)], kw)
