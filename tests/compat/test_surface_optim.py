"""torch.optim against torch itself (the differential harness, tests/oracle.py): every optimizer
over generated parameter shapes (0-d, vectors, matrices, size-0), dtypes, parameter groups,
options and step sequences (a parameter without a gradient on some steps), holding equal the
parameters after every step, the state dict's structure and values (PyTorch's: indices,
'step' 0-d float32 tensors, the groups' hyperparameters), a state dict carried across in
both directions and continued, and the constructors' refusals. The test ids carry the full
torch names, so docs/pytorch-coverage.md counts these names as compared with torch.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import assert_equal, both, lookalike, requires_torch, run, torch

pytestmark = requires_torch

F32, F64 = np.float32, np.float64

# name -> (constructor defaults used by the cases, option space: kwarg -> choices)
OPTIONS = {
    "SGD": ({"lr": 0.1}, {"momentum": [0, 0.9], "dampening": [0, 0.3], "nesterov": [False, True],
                          "weight_decay": [0, 0.1], "maximize": [False, True]}),
    "Adam": ({"lr": 0.05}, {"betas": [(0.9, 0.999), (0.5, 0.9)], "eps": [1e-8, 1e-3],
                            "weight_decay": [0, 0.1], "amsgrad": [False, True],
                            "maximize": [False, True], "decoupled_weight_decay": [False, True],
                            "fused": [None, True], "foreach": [None, False]}),
    "AdamW": ({"lr": 0.05}, {"betas": [(0.9, 0.999), (0.5, 0.9)], "weight_decay": [0, 0.1],
                             "amsgrad": [False, True], "maximize": [False, True]}),
    "RMSprop": ({"lr": 0.01}, {"alpha": [0.99, 0.5], "eps": [1e-8, 1e-2], "weight_decay": [0, 0.1],
                               "momentum": [0, 0.9], "centered": [False, True],
                               "maximize": [False, True]}),
    "Adagrad": ({"lr": 0.1}, {"lr_decay": [0, 0.1], "weight_decay": [0, 0.1],
                              "initial_accumulator_value": [0, 0.5], "eps": [1e-10, 1e-3],
                              "maximize": [False, True]}),
    "Adadelta": ({"lr": 1.0}, {"rho": [0.9, 0.5], "eps": [1e-6, 1e-3], "weight_decay": [0, 0.1],
                               "maximize": [False, True]}),
    "Adamax": ({"lr": 0.02}, {"betas": [(0.9, 0.999), (0.5, 0.9)], "eps": [1e-8, 1e-3],
                              "weight_decay": [0, 0.1], "maximize": [False, True]}),
    "NAdam": ({"lr": 0.02}, {"betas": [(0.9, 0.999), (0.5, 0.9)], "weight_decay": [0, 0.1],
                             "momentum_decay": [4e-3, 0.1],
                             "decoupled_weight_decay": [False, True],
                             "maximize": [False, True]}),
    "RAdam": ({"lr": 0.02}, {"betas": [(0.9, 0.999), (0.5, 0.6)], "weight_decay": [0, 0.1],
                             "decoupled_weight_decay": [False, True],
                             "maximize": [False, True]}),
    "Rprop": ({"lr": 0.01}, {"etas": [(0.5, 1.2), (0.3, 1.5)], "step_sizes": [(1e-6, 50),
                                                                            (1e-3, 0.02)],
                             "maximize": [False, True]}),
    "ASGD": ({"lr": 0.05}, {"lambd": [1e-4, 0.1], "alpha": [0.75, 0.5], "t0": [1e6, 2.0],
                            "weight_decay": [0, 0.1], "maximize": [False, True]}),
    "Adafactor": ({"lr": 0.05}, {"beta2_decay": [-0.8, -0.5], "eps": [(None, 1e-3),
                                                                       (1e-6, 1e-2)],
                                 "d": [1.0, 2.0], "weight_decay": [0, 0.1],
                                 "maximize": [False, True]}),
}
# a group's own hyperparameter (the second group of a case overrides it)
GROUP_KEY = {"Adadelta": "rho", "Rprop": "lr", "ASGD": "lambd"}


@st.composite
def optim_case(draw, name):
    defaults, space = OPTIONS[name]
    r = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dt = draw(st.sampled_from([F32, F64]))
    shapes = draw(st.lists(st.sampled_from([(), (3,), (2, 3), (4, 1), (0,), (2, 0)]),
                           min_size=1, max_size=3))
    if name == "Adafactor":                  # PyTorch divides by the size: nothing empty
        shapes = [s for s in shapes if 0 not in s] or [(2, 3)]
    kw = dict(defaults)
    for k, choices in space.items():
        kw[k] = draw(st.sampled_from(choices))
    if name == "SGD" and kw["nesterov"] and not (kw["momentum"] and not kw["dampening"]):
        kw["nesterov"] = False
    init = [r.normal(size=s).astype(dt) for s in shapes]
    steps = draw(st.integers(1, 5))
    grads = [[None if (i and r.random() < 0.25) else r.normal(size=s).astype(dt)
              for i, s in enumerate(shapes)] for _ in range(steps)]
    split = len(shapes) > 1 and draw(st.booleans())
    return dict(name=name, kw=kw, init=init, grads=grads, split=split)


def build(m, case):
    params = [m.tensor(a.copy()).requires_grad_(True) for a in case["init"]]
    cls = getattr(m.optim, case["name"])
    if case["split"]:
        key = GROUP_KEY.get(case["name"], "lr")
        own = {key: case["kw"].get(key, 0.1) * 0.5}
        groups = [{"params": params[:1]}, {"params": params[1:], **own}]
        return params, cls(groups, **case["kw"])
    return params, cls(params, **case["kw"])


def steps(m, params, opt, grads):
    """Set each step's gradients (None for some), step, and record the parameters."""
    seen = []
    for gs in grads:
        for p, g in zip(params, gs, strict=True):
            p.grad = None if g is None else m.tensor(g)
        opt.step()
        seen.append([p.detach().clone() for p in params])
    return seen


def trajectory(m, case):
    params, opt = build(m, case)
    seen = steps(m, params, opt, case["grads"])
    return seen, opt.state_dict()


def _tol(case):
    return 2e-5 if case["init"][0].dtype == F32 else 1e-10


@pytest.mark.parametrize("name", [f"torch.optim.{n}" for n in OPTIONS])
@settings(max_examples=25)
@given(data=st.data())
def test_optimizer_matches_torch(name, data):
    """Each step's parameters and the final state dict, structure and values."""
    case = data.draw(optim_case(name.split(".")[-1]))
    tol = _tol(case)
    both(lambda: trajectory(lookalike(), case), lambda: trajectory(torch, case),
         atol=tol, rtol=tol)


def _carry(m, sd):
    """A state dict's tensors as m's tensors (the other library's state dict, carried over)."""
    if isinstance(sd, dict):
        return {k: _carry(m, v) for k, v in sd.items()}
    if isinstance(sd, list):
        return [_carry(m, v) for v in sd]
    if hasattr(sd, "detach") and hasattr(sd, "shape"):
        return m.tensor(np.array(sd.detach().numpy()))
    return sd


@pytest.mark.parametrize("name", [f"torch.optim.{n}" for n in OPTIONS])
@settings(max_examples=10)
@given(data=st.data())
def test_state_dicts_cross_between_the_libraries(name, data):
    """A state dict saved by either library after k steps loads into both (PyTorch's into
    tinygradx, tinygradx's into PyTorch), which then continue alike."""
    case = data.draw(optim_case(name.split(".")[-1]))
    k = len(case["grads"]) // 2 + 1
    first, rest = case["grads"][:k], case["grads"][k:] + case["grads"][:1]
    tol = _tol(case)
    for src in (torch, lookalike()):
        params, opt = build(src, case)
        steps(src, params, opt, first)
        sd, values = opt.state_dict(), [p.detach().numpy().copy() for p in params]

        def resume(m, sd=sd, values=values):
            params2, opt2 = build(m, dict(case, init=values))
            opt2.load_state_dict(_carry(m, sd))
            return steps(m, params2, opt2, rest), opt2.state_dict()
        both(lambda: resume(lookalike()), lambda: resume(torch), atol=tol, rtol=tol)


REFUSALS = {   # kwargs -> PyTorch raises at construction (or at the first step)
    "SGD": [{"lr": -0.1}, {"lr": 0.1, "momentum": -1}, {"lr": 0.1, "weight_decay": -1},
            {"lr": 0.1, "nesterov": True}, {"lr": 0.1, "momentum": 0.9, "dampening": 0.1,
                                            "nesterov": True},
            {"lr": 0.1, "fused": True, "foreach": True}],
    "Adam": [{"lr": -1}, {"eps": -1e-3}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)},
             {"weight_decay": -0.1}, {"capturable": True}],
    "AdamW": [{"betas": (0.9, 1.0)}, {"weight_decay": -1e-2}],
    "RMSprop": [{"lr": -1}, {"eps": -1}, {"momentum": -1}, {"weight_decay": -1},
                {"alpha": -0.5}],
    "Adagrad": [{"lr_decay": -1}, {"initial_accumulator_value": -1}, {"eps": -1}],
    "Adadelta": [{"rho": 1.5}, {"rho": -0.1}, {"eps": -1}],
    "Adamax": [{"betas": (1.0, 0.9)}, {"eps": -1}],
    "NAdam": [{"momentum_decay": -1}, {"betas": (0.9, 1.0)}],
    "RAdam": [{"betas": (-0.1, 0.9)}, {"weight_decay": -1}],
    "Rprop": [{"etas": (1.5, 1.2)}, {"etas": (0.5, 0.9)}, {"lr": -1}],
    "ASGD": [{"lr": -1}, {"weight_decay": -1}],
    "Adafactor": [{"beta2_decay": 0.5}, {"eps": (-1.0, 1e-3)}, {"eps": (None, -1.0)},
                  {"d": 0.5}, {"weight_decay": -1}],
    "LBFGS": [{"lr": -1}],
}


@pytest.mark.parametrize("name,kw", [(f"torch.optim.{n}", kw) for n, kws in REFUSALS.items()
                                     for kw in kws])
def test_bad_hyperparameters_are_refused_as_torch_refuses_them(name, kw):
    def make(m):
        p = m.zeros(3, requires_grad=True)
        opt = getattr(m.optim, name.split(".")[-1])([p], **kw)
        p.grad = m.ones(3)
        opt.step(lambda: (p * p).sum()) if name.endswith("LBFGS") else opt.step()
        return p
    both(lambda: make(lookalike()), lambda: make(torch))


@pytest.mark.parametrize("name", ["torch.optim.Optimizer"])
def test_the_base_class_groups_and_refusals(name):
    """Optimizer's own rules: no parameters, a single Tensor, a set, a parameter in two groups,
    a group without 'params', a non-leaf; duplicate parameters warn; named parameters give
    'param_names'; the groups are the dicts given, completed in place."""
    def cases(m):
        p, q = m.zeros(2, requires_grad=True), m.zeros(3, requires_grad=True)
        out = []
        for make in (lambda: m.optim.SGD([], lr=0.1), lambda: m.optim.SGD(p, lr=0.1),
                     lambda: m.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
                     lambda: m.optim.SGD([{"lr": 0.1}], lr=0.1),
                     lambda: m.optim.SGD([p * 2], lr=0.1),
                     lambda: m.optim.SGD([{"params": {p}}], lr=0.1)):
            got = run(make)
            out.append(type(got).__name__)
        g = {"params": [q], "weight_decay": 0.5}
        opt = m.optim.SGD([{"params": [p]}, g], lr=0.1, momentum=0.9)
        named = m.optim.Adam([("w", p), ("b", q)])
        return out, g is opt.param_groups[1], opt.state_dict(), named.state_dict()
    ours, theirs = run(lambda: cases(lookalike())), run(lambda: cases(torch))
    assert_equal(ours, theirs)


_A = np.array([[2.0, 0.5, 0.0, 0.3], [0.5, 1.5, 0.2, 0.0], [0.0, 0.2, 1.0, 0.4],
               [0.3, 0.0, 0.4, 3.0]])
_B = np.array([1.0, -2.0, 0.5, 1.5])


def _objective(m, x):
    """A smooth, well-conditioned bowl (a quadratic plus a quartic): its minimiser is found in
    a few dozen evaluations, and rounding differences stay small rather than being amplified
    (as they are along the Rosenbrock valley, where both libraries' float32 runs part)."""
    r = m.tensor(_A, dtype=x.dtype) @ x - m.tensor(_B, dtype=x.dtype)
    return 0.5 * (r * r).sum() + 0.25 * (x ** 4).sum()


@pytest.mark.parametrize("name", ["torch.optim.LBFGS"])
@pytest.mark.parametrize("kw", [{}, {"line_search_fn": "strong_wolfe"},
                                {"history_size": 3, "max_iter": 5},
                                {"lr": 0.5, "line_search_fn": "strong_wolfe", "max_eval": 8},
                                {"tolerance_grad": 1e-3, "tolerance_change": 1e-4}])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lbfgs_follows_torchs_iterates(name, kw, dtype):
    """L-BFGS on a smooth bowl, both libraries from the same point: the closure's losses, the
    iterates and the state's counts agree step by step."""
    # float32: one step of at most 5 iterations (near the minimum, whether |loss - previous|
    # is below tolerance_change is decided by each library's last-bit rounding)
    n = 4 if dtype == "float64" else 1
    kw = kw if dtype == "float64" else dict(kw, max_iter=min(kw.get("max_iter", 5), 5))

    def go(m):
        x = m.tensor(np.array([-1.2, 1.0, 0.5, -0.3]), dtype=getattr(m, dtype),
                     requires_grad=True)
        opt = m.optim.LBFGS([x], **kw)

        def closure():
            opt.zero_grad()
            loss = _objective(m, x)
            loss.backward()
            return loss
        out = []
        for _ in range(n):
            out.append((opt.step(closure).detach().clone(), x.detach().clone()))
        st = opt.state_dict()["state"][0]
        return out, st["func_evals"], st["n_iter"], m.tensor(float(st["prev_loss"]))
    tol = 1e-9 if dtype == "float64" else 1e-4
    both(lambda: go(lookalike()), lambda: go(torch), atol=tol, rtol=tol)


def test_lbfgs_refuses_groups_and_a_missing_closure():
    for m in (lookalike(), torch):
        p, q = m.zeros(2, requires_grad=True), m.zeros(2, requires_grad=True)
        with pytest.raises(ValueError):
            m.optim.LBFGS([{"params": [p]}, {"params": [q]}])
        with pytest.raises(TypeError):
            m.optim.LBFGS([p]).step()


@pytest.mark.parametrize("name", ["torch.optim.Muon", "torch.optim.SparseAdam"])
def test_the_optimizers_left_out_are_refused_by_name(name):
    """Muon (its Newton-Schulz iteration runs in bfloat16, a dtype numpy has not) and
    SparseAdam (sparse gradients) are refused with the reason, not a bare missing name."""
    with pytest.raises(AttributeError) as err:
        getattr(lookalike().optim, name.split(".")[-1])
    assert name in str(err.value) and ":" in str(err.value)


def test_the_step_counts_in_state_are_float32_as_torchs():
    for m in (lookalike(), torch):
        p = m.zeros(2, dtype=m.float64, requires_grad=True)
        opt = m.optim.Adam([p])
        p.grad = m.ones(2, dtype=m.float64)
        opt.step()
        step = opt.state_dict()["state"][0]["step"]
        assert str(step.dtype).endswith("float32") and step.shape == () and math.isclose(
            float(step), 1.0)
