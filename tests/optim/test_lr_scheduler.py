"""tgx.optim.lr_scheduler: PyTorch's schedulers. Each one's lr sequence over N steps is
compared with hand formulas always and with torch's own scheduler when torch is installed
(two parameter groups with different lrs); the initial step, initial_lr, last_epoch,
state_dict round trips, momentum cycling and user-written lrs are checked too."""
import math

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import optim
from tinygradx.optim import lr_scheduler as S

try:
    import torch
except ImportError:
    torch = None

N = 40
BASE = (0.1, 0.02)


def _groups(lib, opt_name="SGD", **kw):
    """An optimizer over two groups (lrs 0.1 and 0.02) of one parameter each."""
    p1, p2 = (lib.zeros(2, requires_grad=True) for _ in range(2))
    cls = getattr(lib.optim, opt_name)
    return cls([{"params": [p1], "lr": BASE[0]}, {"params": [p2], "lr": BASE[1]}], **kw)


def _sequence(lib, make, n=N, opt_name="SGD", **kw):
    opt = _groups(lib, opt_name, **kw)
    sched = make(lib.optim.lr_scheduler, opt)
    seq = []
    for _ in range(n):
        seq.append(list(sched.get_last_lr()))
        opt.step()
        sched.step()
    return np.array(seq)


CASES = {
    "LambdaLR": (lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e),
                 lambda b, e: b * 0.95 ** e),
    "LambdaLR[per_group]": (lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: e]),
                            lambda b, e: b * (1 / (e + 1) if b == BASE[0] else e)),
    "StepLR": (lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
               lambda b, e: b * 0.5 ** (e // 7)),
    "MultiStepLR": (lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3),
                    lambda b, e: b * 0.3 ** sum(e >= k for k in (5, 12, 12, 30))),
    "ExponentialLR": (lambda m, o: m.ExponentialLR(o, gamma=0.9),
                      lambda b, e: b * 0.9 ** e),
    "LinearLR": (lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=8),
                 lambda b, e: b * (0.25 + 0.75 * min(e, 8) / 8)),
    "CosineAnnealingLR": (lambda m, o: m.CosineAnnealingLR(o, T_max=15, eta_min=1e-3),
                          lambda b, e: 1e-3 + (b - 1e-3) * (1 + math.cos(math.pi * e / 15)) / 2),
    "OneCycleLR": (lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=N + 1),
                   None),
    "OneCycleLR[linear,three_phase]": (
        lambda m, o: m.OneCycleLR(o, max_lr=0.4, epochs=4, steps_per_epoch=11,
                                  anneal_strategy="linear", three_phase=True), None),
    "SequentialLR": (lambda m, o: m.SequentialLR(o, [
        m.LinearLR(o, start_factor=0.1, total_iters=5),
        m.CosineAnnealingLR(o, T_max=30)], milestones=[5]),
        lambda b, e: b * (0.1 + 0.9 * e / 5) if e < 5 else
        b * (1 + math.cos(math.pi * (e - 5) / 30)) / 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_lr_sequence_matches_the_formula(name):
    make, formula = CASES[name]
    got = _sequence(tgx, make, momentum=0.9)
    if formula is None:
        assert got.shape == (N, 2)
        return
    want = np.array([[formula(b, e) for b in BASE] for e in range(N)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name", list(CASES))
def test_lr_sequence_matches_torch(name):
    make, _ = CASES[name]
    got = _sequence(tgx, make, momentum=0.9)
    want = _sequence(torch, make, momentum=0.9)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def _torch_momenta(lib, opt_name, **kw):
    opt = _groups(lib, opt_name, **kw)
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.3, total_steps=20)
    key = "betas" if opt_name == "Adam" else "momentum"
    out = []
    for _ in range(19):
        out.append([g[key][0] if key == "betas" else g[key] for g in opt.param_groups])
        opt.step()
        sched.step()
    return np.array(out)


@pytest.mark.parametrize("opt_name,kw", [("SGD", {"momentum": 0.9}), ("Adam", {})])
def test_one_cycle_cycles_the_momentum(opt_name, kw):
    m = _torch_momenta(tgx, opt_name, **kw)
    assert m[0, 0] == pytest.approx(0.95) and m.min() == pytest.approx(0.85, abs=1e-3)
    if torch is not None:
        np.testing.assert_allclose(m, _torch_momenta(torch, opt_name, **kw), rtol=1e-12)


def test_initial_step_initial_lr_and_last_epoch():
    opt = _groups(tgx)
    sched = S.StepLR(opt, step_size=2)
    assert sched.last_epoch == 0 and sched.base_lrs == list(BASE)
    assert [g["initial_lr"] for g in opt.param_groups] == list(BASE)
    sched = S.LambdaLR(_groups(tgx), lambda e: 0.5)
    assert sched.get_last_lr() == [0.05, 0.01]            # set at construction, as torch
    assert sched.optimizer.param_groups[0]["lr"] == 0.05
    with pytest.raises(KeyError, match=r"param_groups\[0\] has no 'initial_lr'"):
        S.StepLR(_groups(tgx), step_size=2, last_epoch=5)
    with pytest.raises(TypeError, match="expected an optimizer"):
        S.StepLR([1, 2], 3)
    with pytest.raises(ValueError, match="step_size must be a positive int"):
        S.StepLR(_groups(tgx), 0)
    with pytest.raises(ValueError, match="OneCycleLR: give total_steps"):
        S.OneCycleLR(_groups(tgx), max_lr=1.0)


def test_one_cycle_refuses_to_step_past_total_steps():
    opt = _groups(tgx)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=3, cycle_momentum=False)
    sched.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="stepped 4 times, but total_steps is 3"):
        sched.step()


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR",
                                  "OneCycleLR", "MultiStepLR"])
def test_state_dict_round_trip_continues_the_sequence(name):
    make, _ = CASES[name]
    full = _sequence(tgx, make, n=30)
    opt = _groups(tgx)
    sched = make(S, opt)
    for _ in range(12):
        opt.step()
        sched.step()
    state, opt_state = sched.state_dict(), opt.state_dict()
    assert "optimizer" not in state
    opt2 = _groups(tgx)
    opt2.load_state_dict(opt_state)
    sched2 = make(S, opt2)
    sched2.load_state_dict(state)
    for g, lr in zip(opt2.param_groups, sched2.get_last_lr(), strict=True):
        g["lr"] = lr
    seq = []
    for _ in range(18):
        seq.append(sched2.get_last_lr())
        opt2.step()
        sched2.step()
    np.testing.assert_allclose(np.array(seq), full[12:], rtol=1e-12)


def test_user_written_lr_is_honoured_by_the_optimizer_and_the_chain():
    p = tgx.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = tgx.tensor([1.0])
    opt.param_groups[0]["lr"] = 0.5                  # as torch code does to adjust the rate
    opt.step()
    assert p.item() == pytest.approx(0.5)
    sched = S.ExponentialLR(opt, gamma=0.5)
    opt.param_groups[0]["lr"] = 2.0
    sched.step()                                     # chainable: from the written lr
    assert opt.param_groups[0]["lr"] == 1.0 and sched.get_last_lr() == [1.0]
    if torch is not None:
        t = torch.tensor([1.0], requires_grad=True)
        topt = torch.optim.SGD([t], lr=0.1)
        ts = torch.optim.lr_scheduler.ExponentialLR(topt, gamma=0.5)
        topt.param_groups[0]["lr"] = 2.0
        topt.step()
        ts.step()
        assert ts.get_last_lr() == sched.get_last_lr()


def test_step_with_epoch_uses_the_closed_form():
    opt = _groups(tgx)
    sched = S.StepLR(opt, step_size=3, gamma=0.1)
    sched.step(7)
    np.testing.assert_allclose(sched.get_last_lr(), [b * 0.01 for b in BASE])
    assert sched.last_epoch == 7


def test_tinygradx_schedule_writer_is_a_scheduler():
    opt = _groups(tgx)
    sched = optim.LRScheduler(opt, lambda i: 0.01 * (i + 1))
    assert isinstance(sched, S.LRScheduler) and sched.last_step == sched.last_epoch == 0
    assert sched.get_last_lr() == [0.01, 0.01]
    sched.step()
    assert sched.get_last_lr() == [0.02, 0.02] and sched.state_dict() == {"last_step": 1}
    resumed = optim.LRScheduler(_groups(tgx), lambda i: 0.01 * (i + 1), last_step=5)
    assert resumed.get_last_lr() == [pytest.approx(0.06)] * 2
    with pytest.raises(TypeError, match="tgx.optim.lr_scheduler.LRScheduler"):
        optim.LRScheduler(opt)
    chained = S.SequentialLR(opt, [S.ExponentialLR(opt, 0.5),
                                   S.LambdaLR(opt, lambda e: 1.0)], milestones=[2])
    assert len(chained.get_last_lr()) == 2


def test_clip_grad_value_and_norm_as_torch():
    def run(lib):
        a = lib.tensor([3.0, -4.0, 0.5], requires_grad=True)
        b = lib.tensor([[12.0]], requires_grad=True)
        (a * lib.tensor([1.0, 1.0, 1.0])).sum().backward()
        a.grad = lib.tensor([3.0, -4.0, 0.5])
        b.grad = lib.tensor([[12.0]])
        total = (torch.nn.utils if lib is torch else lib.optim).clip_grad_norm_([a, b], 5.0)
        (torch.nn.utils if lib is torch else lib.optim).clip_grad_value_(iter([a, b]), 0.2)
        return total, a.grad, b.grad
    total, ga, gb = run(tgx)
    assert isinstance(total, tgx.Tensor) and total.shape == () and total.dtype == np.float32
    assert total.item() == pytest.approx(math.sqrt(9 + 16 + 0.25 + 144), rel=1e-6)
    assert np.abs(ga.numpy()).max() <= np.float32(0.2) and gb.item() == pytest.approx(0.2)
    if torch is not None:
        t_total, t_ga, t_gb = run(torch)
        assert total.item() == pytest.approx(t_total.item(), rel=1e-6)
        np.testing.assert_allclose(ga.numpy(), t_ga.numpy(), rtol=1e-6)
        np.testing.assert_allclose(gb.numpy(), t_gb.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="clip_value must be >= 0"):
        optim.clip_grad_value_([], -1.0)


def test_optimizer_zero_grad_sets_none_by_default_as_torch():
    p = tgx.tensor([1.0], requires_grad=True)
    opt = optim.Adam([p])
    p.grad = tgx.tensor([2.0])
    opt.zero_grad(set_to_none=False)
    assert p.grad.item() == 0.0
    opt.zero_grad()
    assert p.grad is None
