"""Op-info entries of F.relu_, F.rrelu in evaluation, F.embedding_bag, F.bilinear and the
modules nn.PReLU, nn.Bilinear and nn.EmbeddingBag as functions of their inputs and parameters
(loaded by tests/opinfo_norm.py; torch's other activations are tests/opinfo_ops.py's). Every
value is checked against numpy and torch; gradients against torch and gradcheck, and second
derivatives by gradgradcheck."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import tinygradx as tgx
import tinygradx.functional as F
from opinfo import OpInfo, Sample, TF, add, array, family, shape, torch, unary













def _cloned(fn):
    """An in-place form on a copy (the table's inputs are leaves that require grad)."""
    return lambda x, **kw: fn(x * 1, **kw)








# torch's other activations and their in-place forms are tests/opinfo_ops.py's entries; F.relu_
# (relu's in-place form, with nn.ReLU(inplace=True)) and rrelu, rrelu_ in evaluation are here
add(
    OpInfo("F.relu_", _cloned(F.relu_), torch_op=_cloned(TF.relu_) if torch else None,
           torch_reason="torch is not installed", ref=lambda x: np.maximum(x, 0),
           samples=unary(avoid=(0.0,))),
    OpInfo("F.rrelu_[eval]", lambda x: F.rrelu_(x * 1), torch_op=lambda x: TF.rrelu_(x * 1),
           ref=lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2),
           samples=unary(avoid=(0.0,))),
    OpInfo("F.rrelu[eval]", lambda x, **kw: F.rrelu(x, **kw),
           torch_op=lambda x, **kw: TF.rrelu(x, **kw),
           ref=lambda x, lower, upper: np.where(x >= 0, x, x * (lower + upper) / 2),
           samples=unary(avoid=(0.0,), kw=lambda d, s: {"lower": 0.1, "upper": d(
               st.sampled_from((0.3, 0.5)))})),
)


# -- embedding bags, the bilinear form and their modules ---------------------------------------

def _bag_family(draw, dt):
    V, D = draw(st.integers(2, 5)), draw(st.integers(1, 3))
    mode = draw(st.sampled_from(("sum", "mean", "max")))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    kw = {"mode": mode}
    if draw(st.booleans()):                                   # 2-d: bags of equal length
        ids = rng.integers(0, V, (draw(st.integers(1, 3)), draw(st.integers(1, 3))))
    else:                                                     # 1-d with offsets
        ids = rng.integers(0, V, draw(st.integers(1, 6)))
        cuts = np.sort(rng.integers(0, ids.size + 1, draw(st.integers(0, 3))))
        kw["offsets"] = np.concatenate([[0], cuts]).astype(np.int64)
    if draw(st.booleans()):
        kw["padding_idx"] = int(draw(st.integers(0, V - 1)))
    inputs = (array(draw, (V, D), dt, layout=False),)
    if mode == "sum" and draw(st.booleans()):
        inputs += (array(draw, ids.shape, dt),)               # per-sample weights
    kw["ids"] = ids.astype(np.int64)
    return Sample(inputs, kw)


def _bag(torch_side=False):
    def op(weight, *psw, ids, **kw):
        fn = TF.embedding_bag if torch_side else F.embedding_bag
        return fn(ids, weight, kw.pop("offsets", None), per_sample_weights=psw[0] if psw
                  else None, **kw)
    return op


def np_embedding_bag(weight, *psw, ids, mode, offsets=None, padding_idx=None):
    flat = ids.reshape(-1)
    if ids.ndim == 2:
        bags = [list(range(i * ids.shape[1], (i + 1) * ids.shape[1])) for i in range(ids.shape[0])]
    else:
        ends = list(offsets[1:]) + [flat.size]
        bags = [list(range(s, e)) for s, e in zip(offsets, ends, strict=True)]
    w = psw[0].reshape(-1) if psw else np.ones(flat.size)
    out = []
    for bag in bags:
        bag = [j for j in bag if padding_idx is None or flat[j] != padding_idx]
        if not bag:
            out.append(np.zeros(weight.shape[1]))
            continue
        rows = np.array([weight[flat[j]] * w[j] for j in bag])
        if mode == "sum":
            out.append(rows.sum(0))
        elif mode == "mean":
            out.append(rows.mean(0))
        else:
            out.append(rows.max(0))
    return np.array(out).reshape(len(bags), weight.shape[1])


def _bilinear_family(draw, dt):
    lead = shape(draw, 0, 2, empty=True)
    i1, i2, o = (draw(st.integers(1, 3)) for _ in range(3))
    inputs = (array(draw, lead + (i1,), dt), array(draw, lead + (i2,), dt),
              array(draw, (o, i1, i2), dt))
    if draw(st.booleans()):
        inputs += (array(draw, (o,), dt),)
    return Sample(inputs)


def _ties(sample):
    """max bags: equal rows in a bag make max's first derivative jump."""
    return sample.kwargs.get("mode") == "max"


add(
    OpInfo("F.embedding_bag", _bag(), torch_op=_bag(True) if torch else None,
           torch_reason="torch is not installed", ref=np_embedding_bag,
           samples=family(_bag_family), kink=_ties),
    OpInfo("F.bilinear", lambda *a: F.bilinear(*a), torch_op=lambda *a: TF.bilinear(*a),
           ref=lambda x1, x2, w, b=None: np.einsum("...i,oij,...j->...o", x1, w, x2) + (
               0 if b is None else b), samples=family(_bilinear_family)),
)


_WB = ("weight", "bias")                 # a module's parameters, bias when given


def _prelu_module_family(draw, dt):
    s = shape(draw, 2, 4, empty=False)
    n = draw(st.sampled_from((1, s[1])))
    return Sample((array(draw, s, dt, avoid=(0.0,)), array(draw, (n,), dt, -0.5, 0.5)),
                  {"ctor": {"num_parameters": n}})


def _bilinear_module_family(draw, dt):
    i1, i2, o = (draw(st.integers(1, 3)) for _ in range(3))
    ctor = {"in1_features": i1, "in2_features": i2, "out_features": o,
            "bias": draw(st.booleans())}
    N = draw(st.integers(1, 3))
    params = (array(draw, (o, i1, i2), dt),) + ((array(draw, (o,), dt),) if ctor["bias"]
                                                else ())
    return Sample((array(draw, (N, i1), dt), array(draw, (N, i2), dt)) + params,
                  {"ctor": ctor})


add(
    OpInfo("nn.PReLU", lambda x, w, ctor: tgx.func.functional_call(
        tgx.nn.PReLU(**ctor), {"weight": w}, (x,)),
           torch_op=(lambda x, w, ctor: torch.func.functional_call(
               torch.nn.PReLU(**ctor), {"weight": w}, (x,))) if torch else None,
           torch_reason="torch is not installed", samples=family(_prelu_module_family)),
    OpInfo("nn.Bilinear", lambda x1, x2, *p, ctor: tgx.func.functional_call(
        tgx.nn.Bilinear(**ctor), dict(zip(_WB, p, strict=False)), (x1, x2)),
           torch_op=(lambda x1, x2, *p, ctor: torch.func.functional_call(
               torch.nn.Bilinear(**ctor), dict(zip(_WB, p, strict=False)), (x1, x2)))
           if torch else None, torch_reason="torch is not installed",
           samples=family(_bilinear_module_family)),
    OpInfo("nn.EmbeddingBag", lambda w, *psw, ids, mode, offsets=None, padding_idx=None:
           tgx.func.functional_call(tgx.nn.EmbeddingBag(*w.shape, mode=mode,
                                                         padding_idx=padding_idx),
                                    {"weight": w}, (ids, offsets, psw[0] if psw else None)),
           torch_op=(lambda w, *psw, ids, mode, offsets=None, padding_idx=None:
                     torch.func.functional_call(torch.nn.EmbeddingBag(
                         *w.shape, mode=mode, padding_idx=padding_idx),
                         {"weight": w}, (ids, offsets, psw[0] if psw else None)))
           if torch else None, torch_reason="torch is not installed",
           samples=family(_bag_family), kink=_ties),
)


# -- the Gumbel-softmax sample (seeded: gradcheck calls it again) and F.pdist ------------------

def _seeded_gumbel(x, **kw):
    tgx.manual_seed(0)
    return F.gumbel_softmax(x, **kw)


def _pdist_family(draw, dt):
    # rows apart in every coordinate (squares of a range, then noise below their gaps), so no
    # difference sits on |.|'s kink; at least 2 rows, as torch's pdist backward crashes the
    # process on fewer (its forward gives an empty result there, as ours: tests/ops/
    # test_op_families.py)
    n, m = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    x = np.arange(n * m).reshape(n, m).astype(dt) ** 2 + array(draw, (n, m), dt, 0, 0.5)
    return Sample((x,), {"p": draw(st.sampled_from((1.0, 2.0, 3.0)))})


def np_pdist(x, p):
    i, j = np.triu_indices(x.shape[0], 1)
    return (np.abs(x[i] - x[j]) ** p).sum(-1) ** (1 / p)


add(
    OpInfo("F.gumbel_softmax", _seeded_gumbel, torch_op=None,
           torch_reason="random Gumbel noise: torch's generator differs (tests/nn/"
           "test_dropout.py compares the sampled frequencies with torch's)",
           samples=unary(min_dims=1, kw=lambda d, s: {"tau": d(st.sampled_from((1.0, 0.5))),
                                                      "hard": False})),
    # hard=True: a one-hot in value, the soft sample's gradient (straight through), which is on
    # purpose not the derivative of the one-hot (0), so gradcheck cannot hold it; tests/nn/
    # test_dropout.py holds it equal to the soft sample's gradient from the same noise
    OpInfo("F.gumbel_softmax[hard]", lambda x, **kw: _seeded_gumbel(x, hard=True, **kw),
           torch_op=None, torch_reason="random Gumbel noise: torch's generator differs (tests/"
           "nn/test_dropout.py compares the sampled frequencies with torch's)",
           samples=unary(min_dims=1, empty=False,
                         kw=lambda d, s: {"tau": d(st.sampled_from((1.0, 0.5)))}),
           gradcheck=False, grad_reason="the straight-through gradient is the soft sample's, "
           "not the one-hot's derivative"),
    OpInfo("F.pdist", lambda x, p: F.pdist(x, p), torch_op=lambda x, p: TF.pdist(x, p),
           ref=np_pdist, samples=family(_pdist_family)),
)
