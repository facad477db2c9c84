"""tinygradx.optim: update equations against hand-computed steps, groups, checkpoints, schedules."""
import json
import math

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx.optim import (SGD, Adam, AdamW, LRScheduler, clip_grad_norm_, constant, noam,
                             warmup_cosine)


def param(values, dtype=np.float64):
    return tgx.Tensor(np.array(values, dtype=dtype), requires_grad=True)


def set_grad(p, g):
    p.grad = tgx.Tensor(np.array(g, dtype=p.detach().numpy().dtype))


# A fixed non-quadratic objective, so that later gradients depend on earlier updates:
# f(p) = sum(c * p^2) / 2 + sum(d * p) + sum(p^4) / 4,  grad = c*p + d + p^3.
C = np.array([1.0, 3.0, 0.5, 2.0])
D = np.array([0.3, -1.0, 0.0, 0.7])
P0 = np.array([1.0, -0.5, 2.0, 0.25])


def grad_fn(p):
    return C * p + D + p ** 3


def engine_step(p):
    """Compute f with the engine and backward, so the optimizer sees a real .grad."""
    c, d = tgx.Tensor(C), tgx.Tensor(D)
    loss = (c * p * p).sum() * 0.5 + (d * p).sum() + (p * p * p * p).sum() * 0.25
    loss.backward()


def run(opt, p, steps):
    for _ in range(steps):
        opt.zero_grad()
        engine_step(p)
        opt.step()
    return p.detach().numpy().copy()


# -- reference updates in plain numpy (the formulas of the module docstring) ------------------

def ref_sgd(p, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, b = p.copy(), None
    for _ in range(steps):
        g = grad_fn(p) + weight_decay * p
        if momentum:
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
    return p


def ref_adam(p, steps, lr, b1, b2, eps, weight_decay, decoupled):
    p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
    for t in range(1, steps + 1):
        g = grad_fn(p)
        if decoupled:
            p = p - lr * weight_decay * p
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


# -- SGD -------------------------------------------------------------------------------------

def test_sgd_plain_step_by_hand():
    p = param([1.0, -2.0])
    opt = SGD([p], lr=0.1)
    set_grad(p, [0.5, 0.5])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.95, -2.05], rtol=0, atol=1e-15)


def test_sgd_momentum_two_steps_by_hand():
    p = param([1.0, 1.0])
    opt = SGD([p], lr=0.1, momentum=0.9)
    set_grad(p, [1.0, 2.0])
    opt.step()                      # b = g = [1, 2];              p = [0.9, 0.8]
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.8], atol=1e-15)
    set_grad(p, [0.5, -1.0])
    opt.step()                      # b = 0.9b + g = [1.4, 0.8];   p = [0.76, 0.72]
    np.testing.assert_allclose(p.detach().numpy(), [0.76, 0.72], atol=1e-15)
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"], [1.4, 0.8], atol=1e-15)


def test_sgd_nesterov_weight_decay_one_step_by_hand():
    p = param([2.0])
    opt = SGD([p], lr=0.1, momentum=0.5, weight_decay=0.25, nesterov=True)
    set_grad(p, [1.0])
    opt.step()  # g = 1 + 0.25*2 = 1.5; b = 1.5; g = 1.5 + 0.5*1.5 = 2.25; p = 2 - 0.225
    np.testing.assert_allclose(p.detach().numpy(), [1.775], atol=1e-15)


@pytest.mark.parametrize("kw", [
    dict(lr=0.05),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.02, momentum=0.9),
    dict(lr=0.02, momentum=0.9, dampening=0.3, weight_decay=0.05),
    dict(lr=0.02, momentum=0.9, nesterov=True),
    dict(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.1),
])
def test_sgd_trajectory_matches_formula(kw):
    p = param(P0)
    got = run(SGD([p], **kw), p, 6)
    np.testing.assert_allclose(got, ref_sgd(P0, 6, **kw), rtol=1e-12, atol=1e-12)


# -- Adam / AdamW ----------------------------------------------------------------------------

def test_adam_first_step_by_hand():
    # after bias correction m_hat = g and v_hat = g^2, so the first step is lr * g / (|g| + eps)
    p = param([1.0, -1.0])
    opt = Adam([p], lr=0.01)
    set_grad(p, [0.2, -0.4])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [1 - 0.01 * 0.2 / (0.2 + 1e-8),
                                        -1 + 0.01 * 0.4 / (0.4 + 1e-8)], atol=1e-15)
    np.testing.assert_allclose(opt.state[p]["exp_avg"], [0.02, -0.04], atol=1e-15)
    np.testing.assert_allclose(opt.state[p]["exp_avg_sq"], [0.001 * 0.04, 0.001 * 0.16],
                               atol=1e-15)
    assert opt.state[p]["step"] == 1


def test_adamw_first_step_decays_then_steps():
    p = param([2.0])
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    set_grad(p, [3.0])
    opt.step()  # p = 2 * (1 - 0.1*0.5) - 0.1 * 3/(3 + 1e-8) = 1.9 - 0.1
    np.testing.assert_allclose(p.detach().numpy(), [1.8], atol=1e-9)


def test_adam_l2_first_step_by_hand():
    p = param([2.0])
    opt = Adam([p], lr=0.1, weight_decay=0.5)
    set_grad(p, [-3.0])
    opt.step()  # g = -3 + 0.5*2 = -2; step = lr * sign(g)
    np.testing.assert_allclose(p.detach().numpy(), [2.1], atol=1e-9)
    np.testing.assert_array_equal(p.grad.numpy(), [-3.0])  # the L2 term never leaks into .grad


@pytest.mark.parametrize("cls,kw", [
    (Adam, dict(lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)),
    (Adam, dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (AdamW, dict(lr=0.05, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)),
    (AdamW, dict(lr=0.01, betas=(0.0, 0.5), eps=1e-3, weight_decay=0.0)),
])
def test_adam_trajectory_matches_formula(cls, kw):
    p = param(P0)
    got = run(cls([p], **kw), p, 7)
    want = ref_adam(P0, 7, kw["lr"], *kw["betas"], kw["eps"], kw["weight_decay"],
                    decoupled=cls is AdamW)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_adamw_default_weight_decay_and_adam_default():
    p = param([1.0])
    assert AdamW([p]).param_groups[0]["weight_decay"] == 1e-2
    assert Adam([p]).param_groups[0]["weight_decay"] == 0
    assert Adam([p]).param_groups[0]["betas"] == (0.9, 0.999)


def test_float32_updates_in_place_and_keep_dtype():
    p = param(P0, dtype=np.float32)
    data = p.detach().numpy()
    opt = AdamW([p], lr=0.05, weight_decay=0.1)
    run(opt, p, 3)
    assert p.detach().numpy() is data and p.detach().numpy().dtype == np.float32
    assert opt.state[p]["exp_avg"].dtype == np.float32
    want = ref_adam(P0, 3, 0.05, 0.9, 0.999, 1e-8, 0.1, decoupled=True)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert p._ctx is None  # no graph was recorded by the update


# -- parameter groups, skipping, zero_grad ---------------------------------------------------

def test_param_groups_with_different_weight_decay():
    w, b = param(P0), param(P0[::-1])
    opt = AdamW([{"params": [w], "weight_decay": 0.2}, {"params": [b], "weight_decay": 0.0,
                                                        "lr": 0.01}], lr=0.05)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.01]
    for _ in range(5):
        opt.zero_grad()
        engine_step(w)
        engine_step(b)
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), ref_adam(P0, 5, 0.05, 0.9, 0.999, 1e-8, 0.2,
                                                            True),
                               atol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), ref_adam(P0[::-1], 5, 0.01, 0.9, 0.999, 1e-8,
                                                            0.0, True),
                               atol=1e-12)


def test_an_empty_group_is_allowed_beside_a_full_one():
    p = param([1.0])
    opt = AdamW([{"params": [p]}, {"params": [], "weight_decay": 0.0}], lr=0.1)
    set_grad(p, [1.0])
    opt.step()
    assert opt.state_dict()["param_groups"][1]["params"] == []


def test_params_without_grad_are_skipped():
    a, b = param([1.0, 2.0]), param([3.0])
    opt = Adam([a, b], lr=0.1)
    set_grad(a, [1.0, 1.0])
    opt.step()
    assert b.detach().numpy()[0] == 3.0 and b not in opt.state
    assert opt.state[a]["step"] == 1


def test_zero_grad_to_none_and_to_zeros():
    a = param([1.0, 2.0])
    opt = SGD([a], lr=0.1)
    set_grad(a, [1.0, 1.0])
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g and np.all(a.grad.numpy() == 0)
    opt.zero_grad()
    assert a.grad is None
    opt.zero_grad()  # no grad at all is fine


def test_grads_accumulate_without_zero_grad_and_step_uses_the_sum():
    p = param([1.0])
    opt = SGD([p], lr=0.1)
    (p * 2.0).sum().backward()
    (p * 3.0).sum().backward()
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.5], atol=1e-15)


# -- state_dict round trip through npz + JSON (no pickle) ------------------------------------

def save_state_dict(sd, path):
    """Arrays go to an .npz, everything else (numbers, strings, the nesting) to JSON."""
    arrays = {}

    def walk(x, key):
        if isinstance(x, dict):
            return {k: walk(v, f"{key}/{k}") for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, f"{key}/{i}") for i, v in enumerate(x)]
        if isinstance(x, tuple):
            return [walk(v, f"{key}/{i}") for i, v in enumerate(x)]
        if isinstance(x, tgx.Tensor):
            x = x.detach().numpy()
        if isinstance(x, np.ndarray):
            arrays[key] = x
            return {"__array__": key}
        assert x is None or isinstance(x, (bool, int, float, str)), (key, type(x))
        return x

    meta = walk(sd, "sd")
    np.savez(path / "opt.npz", **arrays)
    (path / "opt.json").write_text(json.dumps(meta))


def load_state_dict_file(path):
    with np.load(path / "opt.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}

    def walk(x):
        if isinstance(x, dict):
            return arrays[x["__array__"]] if "__array__" in x else {k: walk(v)
                                                                   for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(json.loads((path / "opt.json").read_text()))


@pytest.mark.parametrize("make", [
    lambda ps: SGD(ps, lr=0.03, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda ps: Adam(ps, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1),
    lambda ps: AdamW([{"params": ps[:1]}, {"params": ps[1:], "weight_decay": 0.0}], lr=0.05),
])
def test_state_dict_round_trip_through_npz_and_json(tmp_path, make):
    a, b = param(P0), param(P0[::-1] * 0.5)
    opt = make([a, b])
    for _ in range(3):
        opt.zero_grad()
        engine_step(a)
        engine_step(b)
        opt.step()
    save_state_dict(opt.state_dict(), tmp_path)

    a2, b2 = param(a.detach().numpy().copy()), param(b.detach().numpy().copy())
    opt2 = make([a2, b2])
    opt2.param_groups[0]["lr"] = 123.0  # overwritten by the load
    opt2.load_state_dict(load_state_dict_file(tmp_path))
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for _ in range(3):
        for o, x, y in ((opt, a, b), (opt2, a2, b2)):
            o.zero_grad()
            engine_step(x)
            engine_step(y)
            o.step()
    np.testing.assert_array_equal(a2.detach().numpy(), a.detach().numpy())
    np.testing.assert_array_equal(b2.detach().numpy(), b.detach().numpy())


def test_state_dict_is_pytorchs_structure_and_holds_the_live_state():
    """PyTorch's layout: parameters numbered across the groups, the state's own Tensors (a
    later step changes what an earlier state_dict() holds, as in PyTorch)."""
    p, q = param([1.0, 2.0]), param([3.0])
    opt = Adam([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
    set_grad(p, [1.0, 1.0])
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"} and set(sd["state"]) == {0}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999) and sd["param_groups"][1]["lr"] == 0.5
    st = sd["state"][0]
    assert st["step"].dtype == np.float32 and st["step"].item() == 1.0
    assert st["exp_avg"] is opt.state[p]["exp_avg"]
    before = st["exp_avg"].numpy().copy()
    opt.step()
    assert not np.array_equal(sd["state"][0]["exp_avg"].numpy(), before)


def test_an_old_tinygradx_state_dict_still_loads():
    """The layout tinygradx wrote before PyTorch's structure ('param_shapes', "g.i" names, an
    int step, arrays): a checkpoint of an earlier run resumes, with the same next steps."""
    a, b = param(P0), param([0.5, -0.5])
    opt = Adam([{"params": [a]}, {"params": [b], "weight_decay": 0.1}], lr=0.05)
    for _ in range(2):
        opt.zero_grad()
        engine_step(a)
        set_grad(b, [1.0, -2.0])
        opt.step()
    legacy = {"optimizer": "Adam", "param_groups": [], "state": {}}
    for gi, g in enumerate(opt.param_groups):
        legacy["param_groups"].append(
            {**{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()
                if k != "params"}, "param_shapes": [list(p.shape) for p in g["params"]]})
        for i, p in enumerate(g["params"]):
            st = opt.state[p]
            legacy["state"][f"{gi}.{i}"] = {"step": int(st["step"].item()),
                                           "exp_avg": st["exp_avg"].numpy().copy(),
                                           "exp_avg_sq": st["exp_avg_sq"].numpy().copy()}
    a2, b2 = param(a.detach().numpy().copy()), param(b.detach().numpy().copy())
    opt2 = Adam([{"params": [a2]}, {"params": [b2]}], lr=0.05)
    opt2.load_state_dict(legacy)
    assert opt2.param_groups[1]["weight_decay"] == 0.1
    for o, x, y in ((opt, a, b), (opt2, a2, b2)):
        o.zero_grad()
        engine_step(x)
        set_grad(y, [1.0, -2.0])
        o.step()
    np.testing.assert_array_equal(a2.detach().numpy(), a.detach().numpy())
    np.testing.assert_array_equal(b2.detach().numpy(), b.detach().numpy())


def test_load_state_dict_mismatches_are_clear_and_change_nothing():
    a, b = param([1.0, 2.0]), param([3.0])
    opt = Adam([a, b], lr=0.1)
    set_grad(a, [1.0, 1.0])
    set_grad(b, [1.0])
    opt.step()
    sd = opt.state_dict()

    with pytest.raises(ValueError, match="2 parameters in the state dict, 1 here"):
        Adam([param([1.0, 2.0])]).load_state_dict(sd)
    with pytest.raises(ValueError, match="1 parameter groups, this optimizer has 2"):
        Adam([{"params": [param([1.0, 2.0])]}, {"params": [param([1.0])]}]).load_state_dict(sd)
    fresh = Adam([param([1.0, 2.0]), param([3.0, 4.0])], lr=0.5)
    with pytest.raises(ValueError, match=r"'exp_avg' of parameter 1 has shape \(1,\), the "
                                         r"parameter has \(2,\)"):
        fresh.load_state_dict(sd)
    assert fresh.state == {} and fresh.param_groups[0]["lr"] == 0.5
    with pytest.raises(ValueError, match="holds .*'exp_avg'.* which SGD keeps not"):
        SGD([param([1.0, 2.0]), param([3.0])], lr=0.1, momentum=0.9).load_state_dict(sd)
    bad = {"state": {0: dict(sd["state"][0], exp_avg=np.zeros(3)), 1: sd["state"][1]},
           "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match="'exp_avg' of parameter 0 has shape"):
        Adam([param([1.0, 2.0]), param([3.0])]).load_state_dict(bad)
    bad = {"state": {0: sd["state"][0], 1: {k: v for k, v in sd["state"][1].items()
                                            if k != "exp_avg_sq"}},
           "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match="lacks"):
        Adam([param([1.0, 2.0]), param([3.0])]).load_state_dict(bad)


# -- clip_grad_norm_ -------------------------------------------------------------------------

def test_clip_grad_norm_returns_total_and_clips():
    a, b, c = param([0.0, 0.0]), param([0.0]), param([5.0])
    set_grad(a, [3.0, 4.0])
    set_grad(b, [12.0])            # total 2-norm sqrt(9 + 16 + 144) = 13; c has no grad
    total = clip_grad_norm_([a, b, c], max_norm=1.0)
    assert isinstance(total, tgx.Tensor) and total.shape == () and total.dtype == np.float64
    assert total.item() == pytest.approx(13.0, abs=1e-12)
    scale = 1.0 / (13.0 + 1e-6)
    np.testing.assert_allclose(a.grad.numpy(), [3 * scale, 4 * scale], rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), [12 * scale], rtol=1e-12)
    assert c.grad is None
    assert clip_grad_norm_([a, b], 1.0).item() == pytest.approx(1.0, abs=1e-6)


def test_clip_grad_norm_below_threshold_leaves_grads_alone():
    a = param([0.0, 0.0])
    set_grad(a, [0.3, 0.4])
    assert clip_grad_norm_(a, max_norm=1.0).item() == pytest.approx(0.5)
    np.testing.assert_array_equal(a.grad.numpy(), [0.3, 0.4])
    assert clip_grad_norm_([param([1.0])], 1.0).item() == 0.0  # no grads at all


def test_clip_grad_norm_other_norms():
    a, b = param([0.0, 0.0]), param([0.0])
    set_grad(a, [1.0, -6.0])
    set_grad(b, [2.0])
    assert clip_grad_norm_([a, b], 100.0, norm_type=math.inf).item() == 6.0
    assert clip_grad_norm_([a, b], 100.0, norm_type=1).item() == pytest.approx(9.0)
    assert clip_grad_norm_([a, b], 3.0, norm_type=1).item() == pytest.approx(9.0)
    np.testing.assert_allclose(a.grad.numpy(), np.array([1.0, -6.0]) * 3 / (9 + 1e-6))


# -- schedules -------------------------------------------------------------------------------

def test_noam_value_and_peak():
    assert abs(noam(4000, d_model=512, warmup=4000) - 6.99e-4) < 1e-6
    assert noam(4000, 512, 4000) == pytest.approx((512 * 4000) ** -0.5, rel=1e-12)
    steps = np.arange(1, 20001)
    values = np.array([noam(int(s), 512, 4000) for s in steps])
    assert steps[values.argmax()] == 4000
    assert noam(1, 512, 4000) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    assert noam(16000, 512, 4000, factor=2.0) == pytest.approx(2 * 512 ** -0.5 / 16000 ** 0.5)


def test_warmup_cosine_endpoints():
    kw = dict(max_lr=6e-4, warmup_iters=100, lr_decay_iters=1100, min_lr=6e-5)
    assert warmup_cosine(0, **kw) == pytest.approx(6e-4 / 101)
    assert warmup_cosine(99, **kw) == pytest.approx(6e-4 * 100 / 101)
    assert warmup_cosine(100, **kw) == pytest.approx(6e-4)
    assert warmup_cosine(600, **kw) == pytest.approx((6e-4 + 6e-5) / 2)
    assert warmup_cosine(1100, **kw) == pytest.approx(6e-5)
    assert warmup_cosine(5000, **kw) == 6e-5
    assert constant(123, lr=0.5) == 0.5


def test_lr_scheduler_sets_every_group_and_round_trips():
    opt = SGD([{"params": [param([1.0])]}, {"params": [param([2.0])], "lr": 9.0}], lr=1.0)
    sched = LRScheduler(opt, lambda i: noam(i + 1, d_model=16, warmup=4))
    assert sched.get_last_lr() == [noam(1, 16, 4)] * 2
    for _ in range(5):
        opt.step()
        sched.step()
    assert [g["lr"] for g in opt.param_groups] == [noam(6, 16, 4)] * 2
    assert sched.get_last_lr() == [noam(6, 16, 4)] * 2
    sd = json.loads(json.dumps(sched.state_dict()))
    opt2 = SGD([param([1.0]), param([2.0])], lr=1.0)
    sched2 = LRScheduler(opt2, lambda i: noam(i + 1, d_model=16, warmup=4))
    sched2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == noam(6, 16, 4) and sched2.last_step == 5


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("build,exc,msg", [
    (lambda p: SGD([p], lr=-0.1), ValueError, r"SGD: invalid learning rate lr=-0\.1"),
    (lambda p: Adam([p], lr=-1), ValueError, r"Adam: invalid learning rate lr=-1"),
    (lambda p: Adam([p], betas=(1.0, 0.999)), ValueError, r"Adam: invalid beta1=1\.0"),
    (lambda p: AdamW([p], betas=(0.9, -0.1)), ValueError, r"AdamW: invalid beta2=-0\.1"),
    (lambda p: AdamW([p], eps=-1e-8), ValueError, r"AdamW: invalid eps=-1e-08"),
    (lambda p: AdamW([p], weight_decay=-1e-2), ValueError, r"AdamW: invalid weight_decay"),
    (lambda p: SGD([p], lr=0.1, momentum=-0.5), ValueError, r"SGD: invalid momentum=-0\.5"),
    (lambda p: SGD([p], lr=0.1, nesterov=True), ValueError, r"nesterov=True needs momentum"),
    (lambda p: SGD([], lr=0.1), ValueError, r"SGD: got an empty parameter list"),
    (lambda p: SGD(p, lr=0.1), TypeError, r"single Tensor"),
    (lambda p: Adam([{"params": [p]}, {"params": [p], "weight_decay": 0}]), ValueError,
     r"a parameter of group 1 is already in an earlier group"),
    (lambda p: Adam([np.zeros(3)]), TypeError, r"is a ndarray, not a Tensor"),
    (lambda p: Adam([p * 2]), ValueError, r"not a leaf"),
])
def test_bad_arguments_are_clear_errors(build, exc, msg):
    with pytest.raises(exc, match=msg):
        build(param([1.0, 2.0]))


def test_schedule_errors():
    with pytest.raises(ValueError, match="noam: step counts from 1"):
        noam(0, 512, 4000)
    with pytest.raises(ValueError, match="lr_decay_iters=5 is smaller than warmup_iters=10"):
        warmup_cosine(0, 1e-3, 10, 5, 0.0)
    with pytest.raises(ValueError, match="clip_grad_norm_: max_norm must be >= 0"):
        clip_grad_norm_([param([1.0])], -1.0)


# -- against PyTorch, when it is installed ---------------------------------------------------

@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.02, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.02, momentum=0.9, dampening=0.2, weight_decay=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)),
])
def test_matches_torch_optim(name, kw):
    torch = pytest.importorskip("torch", reason="torch (the test oracle) not installed: "
                                                "make test ORACLE=1")
    ours = {"SGD": SGD, "Adam": Adam, "AdamW": AdamW}[name]
    rng = np.random.default_rng(0)
    p0 = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    mine = [param(x) for x in p0]
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in p0]
    opt = ours(mine, **kw)
    topt = getattr(torch.optim, name)(theirs, **kw)
    for _ in range(20):
        for p, t in zip(mine, theirs, strict=True):
            g = grad_fn_any(p.detach().numpy())
            set_grad(p, g)
            t.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        topt.step()
        for p, t in zip(mine, theirs, strict=True):
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


def grad_fn_any(x):
    return 0.5 * x + x ** 3 - 0.2


def test_a_state_dict_with_a_negative_lr_loads_as_in_torch():
    """torch's load_state_dict takes any number as lr (LinearLR to a factor of 0 rounds one to
    -5.5e-19); its constructor, and ours, refuse a negative one; a non-number stays refused."""
    p = tgx.nn.Parameter(tgx.ones(2))
    opt = tgx.optim.SGD([p], lr=0.1)
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = -5.551115123125785e-19
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == -5.551115123125785e-19
    saved["param_groups"][0]["lr"] = "x"
    with pytest.raises(ValueError, match="invalid learning rate lr='x'"):
        opt.load_state_dict(saved)
    with pytest.raises(ValueError, match="invalid learning rate lr=-1"):
        tgx.optim.SGD([p], lr=-1)
