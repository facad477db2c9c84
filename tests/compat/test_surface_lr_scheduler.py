"""torch.optim.lr_scheduler against torch itself (the differential harness, tests/oracle.py):
every scheduler over generated arguments and step sequences, holding equal each step's
get_last_lr(), the groups' lr and momentum (or Adam's beta1), the warnings (their classes),
the state dict (keys and values), a state dict carried across in both directions and
continued, step(epoch)'s closed forms, and the refusals. The test ids carry the full torch
names, so docs/pytorch-coverage.md counts these names as compared with torch.
"""
from __future__ import annotations

import warnings

import numpy as np

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oracle import Raised, both, lookalike, requires_torch, run, torch

pytestmark = requires_torch

N = 30
LR = "torch.optim.lr_scheduler."


def decay(epoch):
    return 0.95 ** epoch


def halving(epoch):
    return 0.5 if epoch % 3 == 0 else 1.0


class Warmup:
    """A callable object: LambdaLR keeps its attributes in the state dict."""

    def __init__(self, n):
        self.n = n

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.n)


def _opt(m, kind):
    p, q = m.zeros(2, requires_grad=True), m.zeros(3, requires_grad=True)
    groups = [{"params": [p], "lr": 0.1}, {"params": [q], "lr": 0.02}]
    if kind == "adam":
        return m.optim.Adam(groups)
    return m.optim.SGD(groups, momentum=0.9)


@st.composite
def scheduler_case(draw, name):
    """(optimizer kind, make(S, opt) -> scheduler, metrics or None, steps)."""
    kind = "sgd"
    metrics = None
    f = draw
    if name == "LambdaLR":
        fn = f(st.sampled_from(["one", "list", "object"]))
        lam = {"one": decay, "list": [decay, halving], "object": Warmup(f(st.integers(1, 6)))}[fn]

        def make(S, o):
            return S.LambdaLR(o, lam)
    elif name == "MultiplicativeLR":
        lam = f(st.sampled_from([decay, halving]))

        def make(S, o):
            return S.MultiplicativeLR(o, lambda e: lam(e))
    elif name == "StepLR":
        kw = dict(step_size=f(st.integers(1, 8)), gamma=f(st.sampled_from([0.1, 0.5, 0.9])))

        def make(S, o):
            return S.StepLR(o, **kw)
    elif name == "MultiStepLR":
        ms = sorted(f(st.lists(st.integers(1, N), min_size=1, max_size=4)))
        gamma = f(st.sampled_from([0.1, 0.5]))

        def make(S, o):
            return S.MultiStepLR(o, ms, gamma)
    elif name == "ConstantLR":
        kw = dict(factor=f(st.sampled_from([0.0, 0.25, 1 / 3, 1.0])),
                  total_iters=f(st.integers(0, 10)))

        def make(S, o):
            return S.ConstantLR(o, **kw)
    elif name == "LinearLR":
        kw = dict(start_factor=f(st.sampled_from([0.1, 1 / 3, 1.0])),
                  end_factor=f(st.sampled_from([0.0, 0.5, 1.0])), total_iters=f(st.integers(1, 12)))

        def make(S, o):
            return S.LinearLR(o, **kw)
    elif name == "ExponentialLR":
        gamma = f(st.sampled_from([0.5, 0.9, 0.99]))

        def make(S, o):
            return S.ExponentialLR(o, gamma)
    elif name == "PolynomialLR":
        kw = dict(total_iters=f(st.integers(1, 12)), power=f(st.sampled_from([0.5, 1.0, 2.0])))

        def make(S, o):
            return S.PolynomialLR(o, **kw)
    elif name == "CosineAnnealingLR":
        kw = dict(T_max=f(st.integers(1, 12)), eta_min=f(st.sampled_from([0.0, 1e-3])))

        def make(S, o):
            return S.CosineAnnealingLR(o, **kw)
    elif name == "SequentialLR":
        m1, m2 = sorted(f(st.lists(st.integers(1, 12), min_size=2, max_size=2, unique=True)))

        def make(S, o):
            return S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=m1), S.ExponentialLR(o, 0.9),
                                      S.CosineAnnealingLR(o, T_max=8)], milestones=[m1, m2])
    elif name == "ChainedScheduler":
        def make(S, o):
            return S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=4),
                                       S.ExponentialLR(o, 0.9), S.StepLR(o, 5, 0.5)])
    elif name == "ReduceLROnPlateau":
        kw = dict(mode=f(st.sampled_from(["min", "max"])),
                  factor=f(st.sampled_from([0.1, 0.5])), patience=f(st.integers(0, 3)),
                  threshold=f(st.sampled_from([1e-4, 0.1])),
                  threshold_mode=f(st.sampled_from(["rel", "abs"])),
                  cooldown=f(st.integers(0, 2)),
                  min_lr=f(st.sampled_from([0, 1e-3, [1e-3, 1e-4]])),
                  eps=f(st.sampled_from([1e-8, 1e-2])))
        metrics = f(st.lists(st.sampled_from([1.0, 0.9, 0.95, 1.2, 0.5, 0.5]), min_size=N,
                             max_size=N))

        def make(S, o):
            return S.ReduceLROnPlateau(o, **kw)
    elif name == "CyclicLR":
        kind = f(st.sampled_from(["sgd", "adam"]))
        kw = dict(base_lr=f(st.sampled_from([0.01, [0.01, 0.001]])), max_lr=0.1,
                  step_size_up=f(st.integers(1, 6)),
                  step_size_down=f(st.sampled_from([None, 2, 5])),
                  mode=f(st.sampled_from(["triangular", "triangular2", "exp_range"])),
                  gamma=f(st.sampled_from([1.0, 0.9])), cycle_momentum=f(st.booleans()))

        def make(S, o):
            return S.CyclicLR(o, **kw)
    elif name == "CosineAnnealingWarmRestarts":
        kw = dict(T_0=f(st.integers(1, 6)), T_mult=f(st.integers(1, 3)),
                  eta_min=f(st.sampled_from([0.0, 1e-3])))

        def make(S, o):
            return S.CosineAnnealingWarmRestarts(o, **kw)
    elif name == "OneCycleLR":
        kind = f(st.sampled_from(["sgd", "adam"]))
        kw = dict(max_lr=f(st.sampled_from([1.0, [1.0, 0.5]])), total_steps=N + 1,
                  pct_start=f(st.sampled_from([0.1, 0.3, 0.5])),
                  anneal_strategy=f(st.sampled_from(["cos", "linear"])),
                  cycle_momentum=f(st.booleans()), three_phase=f(st.booleans()),
                  div_factor=f(st.sampled_from([25.0, 10.0])),
                  final_div_factor=f(st.sampled_from([1e4, 100.0])))

        def make(S, o):
            return S.OneCycleLR(o, **kw)
    else:
        raise AssertionError(name)
    return kind, make, metrics


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def _state(sd):
    """A state dict compared as a mapping (its key order is not part of it)."""
    if isinstance(sd, dict):
        return {k: _state(sd[k]) for k in sorted(sd, key=str)}
    if isinstance(sd, list):
        return [_state(v) for v in sd]
    return sd


def drive(m, case, n=N, sched=None, opt=None, start=0):
    kind, make, metrics = case
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if sched is None:
            opt = _opt(m, kind)
            sched = make(m.optim.lr_scheduler, opt)
        seen = [(list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt))]
        for i in range(start, start + n):
            opt.step()
            if metrics is not None:
                sched.step(metrics[i % len(metrics)])
            else:
                sched.step()
            seen.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                         _momenta(opt)))
    kinds = sorted({w.category.__name__ for w in caught})
    return seen, _state(sched.state_dict()), kinds, (sched, opt)


NAMES = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
         "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR",
         "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
         "OneCycleLR"]


@pytest.mark.parametrize("name", [LR + n for n in NAMES])
@settings(max_examples=15)
@given(data=st.data())
def test_scheduler_matches_torch(name, data):
    case = data.draw(scheduler_case(name.rsplit(".", 1)[-1]))
    both(lambda: drive(lookalike(), case)[:3], lambda: drive(torch, case)[:3],
         atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", [LR + n for n in NAMES])
@settings(max_examples=6)
@given(data=st.data())
def test_scheduler_state_dicts_cross_between_the_libraries(name, data):
    """A scheduler's (and its optimizer's) state dict after k steps, saved by either library,
    loads into a new scheduler of both, which continue alike."""
    case = data.draw(scheduler_case(name.rsplit(".", 1)[-1]))
    k = data.draw(st.integers(1, N - 5))
    assume(not isinstance(run(lambda: drive(torch, case)), Raised))   # (a ConstantLR of 0)
    for src in (torch, lookalike()):
        _, _, _, (sched, opt) = drive(src, case, n=k)
        saved, opt_saved = sched.state_dict(), opt.state_dict()

        def resume(m, saved=saved, opt_saved=opt_saved):
            opt2 = _opt(m, case[0])
            sched2 = case[1](m.optim.lr_scheduler, opt2)
            opt2.load_state_dict(_carry(m, opt_saved))
            sched2.load_state_dict(dict(saved))
            return drive(m, case, n=5, sched=sched2, opt=opt2, start=k)[:2]
        both(lambda: resume(lookalike()), lambda: resume(torch), atol=1e-12, rtol=1e-12)


def _carry(m, sd):
    if isinstance(sd, dict):
        return {k: _carry(m, v) for k, v in sd.items()}
    if isinstance(sd, list):
        return [_carry(m, v) for v in sd]
    if hasattr(sd, "detach") and hasattr(sd, "shape"):
        return m.tensor(np.array(sd.detach().numpy()))
    return sd


CLOSED_FORM = {"StepLR": dict(step_size=3, gamma=0.5), "MultiStepLR": dict(milestones=[2, 5, 5],
                                                                            gamma=0.5),
               "ConstantLR": dict(factor=0.25, total_iters=4),
               "LinearLR": dict(start_factor=0.2, total_iters=6),
               "ExponentialLR": dict(gamma=0.8), "PolynomialLR": dict(total_iters=6, power=2.0),
               "CosineAnnealingLR": dict(T_max=7, eta_min=0.01)}


@pytest.mark.parametrize("name", [LR + n for n in CLOSED_FORM])
def test_step_with_an_epoch_uses_the_closed_form_and_warns(name):
    def go(m):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = _opt(m, "sgd")
            sched = getattr(m.optim.lr_scheduler, name.rsplit(".", 1)[-1])(
                opt, **CLOSED_FORM[name.rsplit(".", 1)[-1]])
            out = []
            for e in (3, 0, 7, 12, 5):
                opt.step()
                sched.step(e)
                out.append(list(sched.get_last_lr()))
        return out, sorted({w.category.__name__ for w in caught})
    both(lambda: go(lookalike()), lambda: go(torch), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", [LR + "CosineAnnealingWarmRestarts"])
def test_warm_restarts_at_fractional_epochs(name):
    def go(m):
        opt = _opt(m, "sgd")
        sched = m.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        out = []
        for e in (0.5, 1.25, 3.0, 4.5, 9.0, 10.75, 21.0, 2.0):
            opt.step()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sched.step(e)
            out.append((list(sched.get_last_lr()), sched.T_cur, sched.T_i, sched.last_epoch))
        return out
    both(lambda: go(lookalike()), lambda: go(torch), atol=1e-12, rtol=1e-12)


def _user_scheduler(S):
    """A user's own scheduler: a subclass of the base class with its own get_lr."""
    class Halving(S.LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]
    return Halving


@pytest.mark.parametrize("name", [LR + "LRScheduler"])
def test_a_subclass_of_the_base_class(name):
    def go(m):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = _opt(m, "sgd")
            sched = _user_scheduler(m.optim.lr_scheduler)(opt)
            sched.step()                         # before optimizer.step(): warns
            out = [list(sched.get_last_lr())]
            for _ in range(4):
                opt.step()
                sched.step()
                out.append(list(sched.get_last_lr()))
            sched.get_lr()                       # outside step(): warns
        return out, sorted({w.category.__name__ for w in caught}), _state(sched.state_dict())
    both(lambda: go(lookalike()), lambda: go(torch), atol=1e-12, rtol=1e-12)


REFUSALS = [
    ("StepLR", dict(step_size=0)), ("ConstantLR", dict(factor=1.5)),
    ("LinearLR", dict(start_factor=0.0)), ("LinearLR", dict(end_factor=1.5)),
    ("OneCycleLR", dict(max_lr=1.0)), ("OneCycleLR", dict(max_lr=1.0, total_steps=0)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, pct_start=1.5)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=10, anneal_strategy="exp")),
    ("OneCycleLR", dict(max_lr=[1.0], total_steps=10)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, mode="sawtooth")),
    ("CosineAnnealingWarmRestarts", dict(T_0=0)), ("CosineAnnealingWarmRestarts",
                                                   dict(T_0=2, T_mult=0)),
    ("ReduceLROnPlateau", dict(factor=1.0)), ("ReduceLROnPlateau", dict(mode="median")),
    ("ReduceLROnPlateau", dict(threshold_mode="percent")),
    ("ReduceLROnPlateau", dict(min_lr=[0.1])),
    ("LambdaLR", dict(lr_lambda=[decay])), ("MultiplicativeLR", dict(lr_lambda=3)),
    ("SequentialLR", dict(schedulers=[], milestones=[])),
]


@pytest.mark.parametrize("name,kw", [(LR + n, kw) for n, kw in REFUSALS])
def test_bad_arguments_are_refused_as_torch_refuses_them(name, kw):
    """Refused at construction, or (where PyTorch accepts the argument and fails later, as
    StepLR(step_size=0) does at its first step) by the first steps at the latest."""
    def make(m):
        opt = _opt(m, "sgd")
        sched = getattr(m.optim.lr_scheduler, name.rsplit(".", 1)[-1])(opt, **kw)
        for _ in range(3):
            opt.step()
            sched.step(1.0) if "Plateau" in name else sched.step()
    both(lambda: make(lookalike()), lambda: make(torch))


def test_a_constant_factor_of_zero_is_refused_where_torch_divides_by_it():
    """ConstantLR(factor=0) sets lr 0, then at total_iters divides by the factor: PyTorch's
    ZeroDivisionError there, a one-line error naming the factor here."""
    def go(m):
        opt = _opt(m, "sgd")
        sched = m.optim.lr_scheduler.ConstantLR(opt, factor=0.0, total_iters=2)
        for _ in range(3):
            opt.step()
            sched.step()
    ours, _ = both(lambda: go(lookalike()), lambda: go(torch))
    assert "factor" in str(ours.exc)


def test_one_cycle_refuses_to_step_past_its_total():
    def go(m):
        opt = _opt(m, "sgd")
        sched = m.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(4):
            opt.step()
            sched.step()
    both(lambda: go(lookalike()), lambda: go(torch))


def test_momentum_cycles_need_an_optimizer_with_momentum():
    def go(m):
        p = m.zeros(2, requires_grad=True)
        return m.optim.lr_scheduler.CyclicLR(m.optim.Adagrad([p]), 0.01, 0.1)
    both(lambda: go(lookalike()), lambda: go(torch))
