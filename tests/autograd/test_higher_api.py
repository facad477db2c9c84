"""backward(create_graph=True) and tgx.grad(create_graph=True) against torch: accumulation into
an existing .grad, hooks, retain_graph defaults, grad_outputs that require grad, allow_unused,
a walk that stops at grad's inputs; then two uses end to end: a WGAN-GP gradient penalty
through an nn.Module critic and a one-step meta-learning (MAML) update."""
from __future__ import annotations

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.gradcheck import func as tf
from tinygradx import Tensor, nn

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the torch comparisons are skipped
    torch = TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

A = np.random.default_rng(0).uniform(-1.5, 1.5, 4)
B = np.random.default_rng(1).uniform(-1.5, 1.5, 4)


def _pair(a, rg=True):
    """The same float64 values as a tinygradx Tensor and (when installed) a torch tensor."""
    a = np.array(a, dtype=np.float64)
    t = torch.tensor(a, requires_grad=rg) if torch is not None else None
    return Tensor(a.copy(), requires_grad=rg), t


def _same(ours, ref, tol=1e-10):
    ref = ref.detach().numpy() if torch is not None and isinstance(ref, torch.Tensor) else ref
    np.testing.assert_allclose(ours.detach().numpy(), ref, atol=tol, rtol=tol)


def cubic(lib_x):
    return (lib_x * lib_x * lib_x).sum()


# --------------------------------------------------------------------------------------------
# accumulation into .grad
# --------------------------------------------------------------------------------------------

@needs_torch
def test_create_graph_adds_to_a_plain_grad_out_of_place():
    (x, xt) = _pair(A)
    for v in (x, xt):
        (v * v).sum().backward()
    before = x.grad
    for v in (x, xt):
        cubic(v).backward(create_graph=True)
    assert x.grad is not before and x.grad.requires_grad      # a new tensor with a graph
    _same(before, 2 * A)                                       # the old one is untouched
    _same(x.grad, xt.grad)
    (h,) = tgx.grad(x.grad.sum(), x)                           # only the recorded part: 6x
    (ht,) = torch.autograd.grad(xt.grad.sum(), xt)
    _same(h, ht)


@needs_torch
def test_plain_backward_adds_into_a_recorded_grad_in_place():
    (x, xt) = _pair(A)
    for v in (x, xt):
        cubic(v).backward(create_graph=True)
    before = x.grad
    for v in (x, xt):
        (v * v).sum().backward()
    assert x.grad is before                                    # torch keeps the object too
    _same(x.grad, xt.grad)


@needs_torch
def test_two_recorded_passes_accumulate_a_differentiable_sum():
    (x, xt) = _pair(A)
    for v in (x, xt):
        cubic(v).backward(create_graph=True)
        (v.exp() * v).sum().backward(create_graph=True)
    _same(x.grad, xt.grad)
    (h,) = tgx.grad((x.grad * x.grad).sum(), x)
    (ht,) = torch.autograd.grad((xt.grad * xt.grad).sum(), xt)
    _same(h, ht)


# --------------------------------------------------------------------------------------------
# hooks
# --------------------------------------------------------------------------------------------

@needs_torch
def test_hooks_see_and_replace_recorded_gradients():
    (x, xt), (w, wt) = _pair(A), _pair(B)
    seen, active = [], [True]                  # the hooks act during the recorded pass only
    for v, s in ((x, w), (xt, wt)):
        h = v.exp()
        h.register_hook(lambda g, s=s: (seen.append(g.requires_grad), g * s)[1]
                        if active[0] else None)                     # depends on w
        v.register_hook(lambda g: g * 2 if active[0] else None)     # a leaf's hook
        (h * h).sum().backward(create_graph=True)
    active[0] = False
    assert seen == [True, True]                # the hook is shown a gradient with a graph
    _same(x.grad, xt.grad)
    (gx, gw) = tgx.grad(x.grad.sum(), [x, w])
    (gxt, gwt) = torch.autograd.grad(xt.grad.sum(), [xt, wt])
    _same(gx, gxt)
    _same(gw, gwt)                             # what the hook multiplied in is differentiable


# --------------------------------------------------------------------------------------------
# retain_graph defaults
# --------------------------------------------------------------------------------------------

def test_create_graph_retains_the_graph_by_default():
    x = Tensor(A, requires_grad=True)
    y = x.exp().sum()
    y.backward(create_graph=True)
    (g,) = tgx.grad(y, x, create_graph=True)   # retain_graph defaulted to create_graph
    y.backward()                               # and here too; this plain pass frees it
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        tgx.grad(y, x)
    np.testing.assert_allclose(g.detach().numpy(), np.exp(A))
    np.testing.assert_allclose(x.grad.detach().numpy(), 2 * np.exp(A))


def test_create_graph_with_retain_graph_false_frees_it():
    x = Tensor(A, requires_grad=True)
    y = (x * x).sum()
    y.backward(create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    (x.grad * x.grad).sum().backward()         # the recorded gradient has its own graph
    np.testing.assert_allclose(x.grad.detach().numpy(), 2 * A + 8 * A)
    x = Tensor(A, requires_grad=True)
    x.exp().sum().backward(create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (x.grad * x.grad).sum().backward()     # exp's gradient reads its freed output, as torch


# --------------------------------------------------------------------------------------------
# seeds that require grad, unused inputs
# --------------------------------------------------------------------------------------------

@needs_torch
def test_grad_outputs_that_require_grad_are_part_of_the_graph():
    (x, xt), (v, vt) = _pair(A), _pair(B)
    (g,) = tgx.grad(x.exp(), x, grad_outputs=v, create_graph=True)
    (gt,) = torch.autograd.grad(xt.exp(), xt, grad_outputs=vt, create_graph=True)
    assert g.requires_grad
    for ours, ref in zip(tgx.grad((g * g).sum(), [x, v]),
                         torch.autograd.grad((gt * gt).sum(), [xt, vt]), strict=True):
        _same(ours, ref)
    (g,) = tgx.grad(x.exp(), x, grad_outputs=v)            # no create_graph: a constant
    assert not g.requires_grad
    for s, t in ((x, v), (xt, vt)):                         # Tensor.backward's gradient too
        s.grad = None
        s.exp().backward(t, create_graph=True)
    (gv,) = tgx.grad(x.grad.sum(), v)
    (gvt,) = torch.autograd.grad(xt.grad.sum(), vt)
    _same(gv, gvt)


@pytest.mark.parametrize("create_graph", [False, True])
def test_allow_unused_and_materialize_grads(create_graph):
    x, w = Tensor(A, requires_grad=True), Tensor(B, requires_grad=True)

    def grads(**kw):
        return tgx.grad(x.exp().sum(), [x, w], retain_graph=True, create_graph=create_graph,
                        **kw)
    with pytest.raises(RuntimeError, match=r"grad: input 1 \(shape \(4,\)\) was not used"):
        grads()
    assert grads(allow_unused=True)[1] is None
    zeros = grads(materialize_grads=True)[1]
    assert zeros.shape == (4,) and not zeros.numpy().any()
    with pytest.raises(ValueError, match="allow_unused=False contradicts materialize_grads"):
        grads(allow_unused=False, materialize_grads=True)


# --------------------------------------------------------------------------------------------
# grad walks only between its outputs and its inputs, as torch's does
# --------------------------------------------------------------------------------------------

class _NoRule(tgx.Function):
    """A user's op (its backward runs on Tensors under create_graph)."""

    def forward(self, x):
        return x * 2

    def backward(self, g):
        return g * 2


def test_grad_leaves_the_graph_behind_its_inputs_alone():
    x = Tensor(A, requires_grad=True)
    h = _NoRule.apply(x).exp()
    behind = []
    x.register_hook(lambda g: behind.append(1))
    y = (h * h).sum()
    (g,) = tgx.grad(y, h)                      # frees y's nodes, not h's
    (gg,) = tgx.grad((h * h * h).sum(), h, create_graph=True)   # no rule needed behind h
    assert behind == []
    y2 = h.sum()
    y2.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * A))
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(2 * A))
    np.testing.assert_allclose(gg.detach().numpy(), 3 * np.exp(4 * A))


def test_grad_of_an_input_behind_another_input_sums_both_paths():
    x = Tensor(A, requires_grad=True)
    h = x * 3
    gx, gh = tgx.grad((h * x).sum(), [x, h], create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), 6 * A)           # through h and directly
    np.testing.assert_allclose(gh.detach().numpy(), A)


# --------------------------------------------------------------------------------------------
# WGAN-GP: the norm of dD(x)/dx, then backward to the critic's and generator's parameters
# --------------------------------------------------------------------------------------------

class Critic(nn.Module):
    def __init__(self, act):
        self.fc1, self.fc2, self.fc3 = nn.Linear(3, 8), nn.Linear(8, 8), nn.Linear(8, 1)
        self.act = act

    def forward(self, x):
        act = F.tanh if self.act == "tanh" else F.relu
        return self.fc3(act(self.fc2(act(self.fc1(x)))))


def _torch_twin(module):
    """A torch function with module's parameter values (in named order), and those tensors."""
    ps = {n: torch.tensor(p.detach().numpy().copy(), requires_grad=True)
          for n, p in module.named_parameters()}
    act = torch.tanh if getattr(module, "act", "tanh") == "tanh" else torch.relu

    def critic(x):
        h = act(TF.linear(x, ps["fc1.weight"], ps["fc1.bias"]))
        h = act(TF.linear(h, ps["fc2.weight"], ps["fc2.bias"]))
        return TF.linear(h, ps["fc3.weight"], ps["fc3.bias"])
    return critic, ps


def _wgan_gp_loss(D, G, real, z, eps, lam=10.0, use_func=False):
    """The critic's loss of WGAN-GP: D(fake) - D(real) + lam (||dD/dx at x_hat|| - 1)^2."""
    fake = G(z)
    x_hat = eps * real + (1 - eps) * fake       # needs grad through the generator
    if use_func:
        g = tf.grad(lambda x: D(x).sum())(x_hat)
    else:
        (g,) = tgx.grad(D(x_hat).sum(), x_hat, create_graph=True)
    norm = ((g * g).sum(dim=1) + 1e-12).sqrt()
    return D(fake).mean() - D(real).mean() + lam * ((norm - 1) ** 2).mean()


@needs_torch
@pytest.mark.parametrize("act", ["tanh", "relu"])
@pytest.mark.parametrize("use_func", [False, True], ids=["grad", "func.grad"])
def test_gradient_penalty_matches_torch(act, use_func):
    tgx.manual_seed(3)
    D, G = Critic(act).double(), nn.Linear(2, 3).double()
    rng = np.random.default_rng(5)
    real, z, eps = rng.standard_normal((6, 3)), rng.standard_normal((6, 2)), rng.uniform(
        size=(6, 1))
    loss = _wgan_gp_loss(D, G, Tensor(real), Tensor(z), Tensor(eps), use_func=use_func)
    loss.backward()
    critic, ps = _torch_twin(D)
    gw = torch.tensor(G.weight.detach().numpy().copy(), requires_grad=True)
    gb = torch.tensor(G.bias.detach().numpy().copy(), requires_grad=True)
    fake = TF.linear(torch.tensor(z), gw, gb)
    et = torch.tensor(eps)
    x_hat = et * torch.tensor(real) + (1 - et) * fake
    (g,) = torch.autograd.grad(critic(x_hat).sum(), x_hat, create_graph=True)
    norm = ((g * g).sum(dim=1) + 1e-12).sqrt()
    ref = critic(fake).mean() - critic(torch.tensor(real)).mean() + 10 * ((norm - 1) ** 2).mean()
    ref.backward()
    _same(loss, ref)
    for name, p in D.named_parameters():
        _same(p.grad, ps[name].grad)
    _same(G.weight.grad, gw.grad)
    _same(G.bias.grad, gb.grad)


def test_gradient_penalty_matches_finite_differences():
    tgx.manual_seed(3)
    D, G = Critic("tanh").double(), nn.Linear(2, 3).double()
    rng = np.random.default_rng(5)
    data = [Tensor(a) for a in (rng.standard_normal((6, 3)), rng.standard_normal((6, 2)),
                                rng.uniform(size=(6, 1)))]
    _wgan_gp_loss(D, G, *data).backward()
    w, d = D.fc1.weight, rng.standard_normal(D.fc1.weight.shape)
    saved = w.detach().numpy().copy()

    def at(shift):
        w.data = Tensor(saved + shift * d)
        return _wgan_gp_loss(D, G, *data).item()
    numeric = (at(1e-6) - at(-1e-6)) / 2e-6
    w.data = Tensor(saved)
    np.testing.assert_allclose(np.sum(w.grad.numpy() * d), numeric, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------------------------
# meta-learning: one inner SGD step taken with create_graph, the outer loss differentiated
# w.r.t. the weights the step started from (MAML)
# --------------------------------------------------------------------------------------------

def _mlp(x, ws, lib):
    lin = F.linear if lib == "tgx" else TF.linear
    return lin(lin(x, ws[0], ws[1]).tanh(), ws[2], ws[3])


def _maml_outer(ws, data, lib, alpha=0.3, create_graph=True):
    xs, ys, xq, yq = data
    inner = ((_mlp(xs, ws, lib) - ys) ** 2).mean()
    grad = tgx.grad if lib == "tgx" else torch.autograd.grad
    gs = grad(inner, list(ws), create_graph=create_graph)
    fast = [w - alpha * g for w, g in zip(ws, gs, strict=True)]
    return ((_mlp(xq, fast, lib) - yq) ** 2).mean()


def _maml_problem():
    rng = np.random.default_rng(11)
    ws = [rng.standard_normal(s) * 0.5 for s in ((5, 2), (5,), (1, 5), (1,))]
    data = [rng.standard_normal(s) for s in ((8, 2), (8, 1), (8, 2), (8, 1))]
    return ws, data


@needs_torch
def test_meta_learning_step_matches_torch():
    ws, data = _maml_problem()
    ours = [Tensor(w, requires_grad=True) for w in ws]
    ref = [torch.tensor(w, requires_grad=True) for w in ws]
    loss = _maml_outer(ours, [Tensor(d) for d in data], "tgx")
    loss.backward()
    ref_loss = _maml_outer(ref, [torch.tensor(d) for d in data], "torch")
    ref_loss.backward()
    _same(loss, ref_loss)
    for a, b in zip(ours, ref, strict=True):
        _same(a.grad, b.grad)


def test_meta_learning_step_matches_finite_differences():
    ws, data = _maml_problem()
    ours = [Tensor(w, requires_grad=True) for w in ws]
    data = [Tensor(d) for d in data]
    _maml_outer(ours, data, "tgx").backward()
    rng = np.random.default_rng(0)
    dirs = [rng.standard_normal(w.shape) for w in ws]

    def at(shift):                     # the plain inner gradient is enough for the value
        moved = [Tensor(w + shift * d, requires_grad=True) for w, d in zip(ws, dirs,
                                                                            strict=True)]
        return _maml_outer(moved, data, "tgx", create_graph=False).item()
    numeric = (at(1e-6) - at(-1e-6)) / 2e-6
    analytic = sum(np.sum(w.grad.numpy() * d) for w, d in zip(ours, dirs, strict=True))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
    # first-order MAML (no create_graph) drops the second-order term: a different number
    for w in ours:
        w.grad = None
    _maml_outer(ours, data, "tgx", create_graph=False).backward()
    first_order = sum(np.sum(w.grad.numpy() * d) for w, d in zip(ours, dirs, strict=True))
    assert abs(first_order - numeric) > 1e-4
