"""Threads: grad mode and the module-call stack are each thread's own, as PyTorch's grad mode is.

A `no_grad()` block, an `inference_mode()` block or a module call in one thread must not change
what another thread's ops record (whether they build a graph, which module path their nodes
name). Each test holds the other thread inside its block with events, so the interleaving that
used to go wrong happens every time; the last one trains in two threads at once against a
one-thread run.
"""
import threading

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx.autograd import Function

WAIT = 30        # seconds: an event not set by then is a hung test, not a slow machine


def _inside(enter, *, block=None):
    """Run `enter` (a context manager factory) in a thread and hold the thread inside it until
    released; returns (release, join)."""
    inside, release = threading.Event(), threading.Event()
    errors = []

    def run():
        try:
            with enter():
                inside.set()
                assert release.wait(WAIT)
                if block is not None:
                    block()
        except BaseException as e:          # surfaced by join()
            errors.append(e)
            inside.set()

    t = threading.Thread(target=run)
    t.start()
    assert inside.wait(WAIT)

    def join():
        release.set()
        t.join(WAIT)
        assert not t.is_alive()
        if errors:
            raise errors[0]
    return join


@pytest.mark.parametrize("enter", [tgx.no_grad, lambda: tgx.set_grad_enabled(False),
                                   tgx.inference_mode],
                         ids=["no_grad", "set_grad_enabled", "inference_mode"])
def test_grad_mode_in_another_thread_leaves_this_thread_recording(enter):
    lin = tgx.nn.Linear(4, 3)
    join = _inside(enter)
    try:
        assert tgx.is_grad_enabled()
        y = lin(tgx.randn(2, 4))
        assert y.requires_grad and y._ctx is not None
        y.sum().backward()
        assert lin.weight.grad is not None
    finally:
        join()
    assert tgx.is_grad_enabled()


def test_a_thread_starts_with_grad_on_even_when_started_inside_no_grad():
    seen = {}

    def run():
        seen["enabled"] = tgx.is_grad_enabled()
        seen["records"] = (tgx.ones(2, requires_grad=True) * 2).requires_grad

    with tgx.no_grad():
        t = threading.Thread(target=run)
        t.start()
        t.join(WAIT)
        assert not tgx.is_grad_enabled()
    assert seen == {"enabled": True, "records": True}


def test_the_thread_inside_no_grad_still_records_nothing():
    seen = {}

    def block():
        seen["enabled"] = tgx.is_grad_enabled()
        seen["records"] = (tgx.ones(2, requires_grad=True) * 2).requires_grad

    join = _inside(tgx.no_grad, block=block)
    y = tgx.ones(2, requires_grad=True) * 2           # this thread records meanwhile
    join()
    assert seen == {"enabled": False, "records": False} and y.requires_grad


class _Paused(tgx.nn.Module):
    """A model whose forward stops halfway until released (its thread is then inside it)."""

    def __init__(self, inside, release):
        super().__init__()
        self.fc = tgx.nn.Linear(4, 4)
        self.inside, self.release = inside, release

    def forward(self, x):
        h = self.fc(x)
        self.inside.set()
        assert self.release.wait(WAIT)
        return self.fc(h)


def test_module_paths_are_each_threads_own():
    inside, release = threading.Event(), threading.Event()
    paused = _Paused(inside, release)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("y", paused(tgx.randn(1, 4))))
    t.start()
    assert inside.wait(WAIT)
    other = tgx.nn.Sequential(tgx.nn.Linear(4, 4), tgx.nn.ReLU(), tgx.nn.Linear(4, 2))
    try:
        y = other(tgx.randn(1, 4))
        assert y._ctx.scope == "2"                         # not inside the paused model's fc
        assert other[0](tgx.randn(1, 4))._ctx.scope == "0"
    finally:
        release.set()
        t.join(WAIT)
    assert out["y"]._ctx.scope == "fc"                     # nor the other way round
    top = tgx.randn(1, 4, requires_grad=True) * 2
    assert top._ctx.scope == ""                            # every stack back at the top


class _Scale(Function):
    """A custom Function whose forward waits until released (its ops are hidden from the
    observers, in its own thread only)."""
    inside = release = None

    @staticmethod
    def forward(ctx, x):
        _Scale.inside.set()
        assert _Scale.release.wait(WAIT)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_a_custom_functions_forward_hides_only_its_own_threads_ops_from_observers():
    _Scale.inside, _Scale.release = threading.Event(), threading.Event()
    seen = []
    out = {}
    with tgx.autograd.observe(lambda ctx, inputs, result, s: seen.append(ctx.name())):
        t = threading.Thread(
            target=lambda: out.setdefault("y", _Scale.apply(tgx.ones(2, requires_grad=True))))
        t.start()
        assert _Scale.inside.wait(WAIT)
        try:
            tgx.ones(3, requires_grad=True).exp()              # this thread's op: observed
        finally:
            _Scale.release.set()
            t.join(WAIT)
    assert "exp" in seen                     # the main thread's op, while the other hid its own
    assert "mul" not in seen                 # the op inside the custom forward stayed hidden
    assert out["y"].requires_grad


def _train(seed, steps, toggle=None):
    """A few SGD steps of a small MLP; its weights after them (no_grad toggled elsewhere)."""
    rng = np.random.default_rng(seed)
    w1 = tgx.nn.Parameter(tgx.tensor(rng.standard_normal((8, 16)).astype(np.float32)))
    w2 = tgx.nn.Parameter(tgx.tensor(rng.standard_normal((16, 1)).astype(np.float32)))
    x = tgx.tensor(rng.standard_normal((32, 8)).astype(np.float32))
    y = tgx.tensor(rng.standard_normal((32, 1)).astype(np.float32))
    opt = tgx.optim.SGD([w1, w2], lr=0.01)
    for _ in range(steps):
        loss = F.mse_loss(F.relu(x @ w1) @ w2, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if toggle is not None:
            toggle()
    return w1.detach().numpy().copy(), w2.detach().numpy().copy()


def test_training_in_two_threads_while_a_third_toggles_no_grad_matches_one_thread():
    want = {seed: _train(seed, 40) for seed in (1, 2)}
    stop = threading.Event()

    def evaluator():                         # an evaluation loop entering no_grad over and over
        while not stop.is_set():
            with tgx.no_grad():
                (tgx.ones(64, 64) @ tgx.ones(64, 64)).sum()

    got, errors = {}, []

    def trainer(seed):
        try:
            got[seed] = _train(seed, 40)
        except BaseException as e:
            errors.append(e)

    ev = threading.Thread(target=evaluator)
    ev.start()
    threads = [threading.Thread(target=trainer, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 4)
    stop.set()
    ev.join(WAIT)
    assert not errors, errors[0]
    for seed in (1, 2):
        for a, b in zip(got[seed], want[seed], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("create_graph", [False, True], ids=["backward", "create_graph"])
def test_backward_in_two_threads_into_shared_leaves_loses_no_contribution(create_graph):
    # PyTorch accumulates into .grad under a lock; without one, two threads adding into the
    # same (large: numpy lets go of the GIL) buffer lose each other's updates
    n, calls = (1 << 20, 100) if not create_graph else (1 << 12, 200)
    w = tgx.nn.Parameter(tgx.zeros(n))
    x = tgx.ones(n)
    errors = []

    def work():
        try:
            for _ in range(calls):
                (w * x).sum().backward(create_graph=create_graph)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 4)
    assert not errors, errors[0]
    np.testing.assert_array_equal(w.grad.detach().numpy(), np.full(n, 2.0 * calls))
