"""A stateful fuzzer for the graph: random programs of element-wise ops, matmul, reductions,
broadcasting, views (reshape, transpose, slicing), in-place changes (of leaves under no_grad,
of non-leaf results), detach, no_grad blocks, custom Functions in PyTorch's style (several save
patterns: an input, the output, an intermediate, the setup_context form, two inputs, two
outputs, once_differentiable), hooks on any tensor (recording, replacing the gradient by an
equal one, removing themselves), and gradients taken again and again from one retained graph,
first derivatives and, with torch, second ones under create_graph. After each gradient the
machine checks:

- against central finite differences in float64 of the program replayed on moved leaves
  (an in-place change or a no_grad/detach cut is replayed as it happened: a node keeps the
  value its input had when it was made);
- against PyTorch running the same program, when torch is installed: the same values, the same
  gradients, and an in-place error wherever PyTorch raises one, except where the node kept its
  own copy of the value changed (then its answer must pass the finite differences);
- with no torch, a node whose input changed in place afterwards may raise the version error,
  but if it answers, the answer must be right (never a silent wrong gradient);
- with torch: what every hook saw (per tensor, in order), and second derivatives (the
  gradient of a weighted sum of the first ones, taken with create_graph=True) equal to torch's,
  or both raising.

The short CI profile (CI=true) runs few programs of few steps; HYPOTHESIS_PROFILE=dev more.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)

import tinygradx as tgx

try:
    import torch
except ImportError:                  # the oracle is optional: finite differences always run
    torch = None

from tinygradx.compat.lookalike import torch as lookalike

SHAPES = [(3,), (2, 3), (3, 3), (1, 3), (2, 1), ()]
EPS, ATOL, RTOL = 1e-6, 1e-6, 1e-4

# element-wise ops on one tensor (bounded, smooth, defined everywhere)
UNARY = {
    "tanh": lambda x: x.tanh(),
    "sin": lambda x: x.sin(),
    "exp_tanh": lambda x: x.tanh().exp(),
    "square": lambda x: x * x,
    "neg": lambda x: -x,
    "sigmoid": lambda x: x.sigmoid(),
    "scale": lambda x: x * 0.5 + 0.25,
}
# two tensors, broadcast
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (1.0 + b * b),
}


# custom Functions, written once for both libraries (m: torch or the look-alike): name ->
# (number of Tensor inputs, forward, backward, setup_context or None)
def _tanh_in(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh()

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - x.tanh() ** 2)
    return forward, backward, None


def _sigmoid_out(m):
    def forward(ctx, x):
        y = x.sigmoid()
        ctx.save_for_backward(y)
        return y

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)
    return forward, backward, None


def _tanh_mid(m):                     # an intermediate: a constant to the second derivative
    def forward(ctx, x):
        e = x.tanh()
        ctx.save_for_backward(e)
        return e * 0.5

    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        return g * 0.5 * (1 - e * e)
    return forward, backward, None


def _sigmoid_setup(m):
    def forward(x):
        return x.sigmoid()

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)
    return forward, backward, setup_context


def _scaled_by_tanh(m):               # two inputs, broadcast: gradients summed back
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w.tanh()

    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w.tanh(), g * x * (1 - w.tanh() ** 2)
    return forward, backward, None


def _two_outputs(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh(), x * x

    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * (1 - x.tanh() ** 2) + g2 * 2 * x
    return forward, backward, None


def _once(m):
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @m.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()
    return forward, backward, None


CUSTOM = {"save input": (1, _tanh_in), "save output": (1, _sigmoid_out),
          "save intermediate": (1, _tanh_mid), "setup_context": (1, _sigmoid_setup),
          "two inputs": (2, _scaled_by_tanh), "two outputs": (1, _two_outputs),
          "once_differentiable": (1, _once)}
_CLASSES = {}


def custom_fn(name):
    """fn(*tensors) applying custom Function `name` of the tensors' own library."""
    def fn(*xs):
        m = torch if torch is not None and isinstance(xs[0], torch.Tensor) else lookalike
        key = (name, m is lookalike)
        if key not in _CLASSES:
            forward, backward, setup = CUSTOM[name][1](m)
            body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
            if setup is not None:
                body["setup_context"] = staticmethod(setup)
            _CLASSES[key] = type(name.title().replace(" ", ""), (m.autograd.Function,), body)
        out = _CLASSES[key].apply(*xs)
        return out[0] * out[1] if isinstance(out, tuple) else out
    return fn


class Node:
    """A value of the program: its tinygradx and torch tensors, and how to recompute it from
    moved leaves (`replay(deltas, memo)` -> tinygradx Tensor, under no_grad)."""

    def __init__(self, tg, th, replay, differentiable):
        self.tg, self.th, self.replay_fn = tg, th, replay
        self.differentiable = differentiable      # depends on a leaf through recorded ops
        self.stale = False                        # an input it may have saved changed since
        self.retired = False                      # its tensor was changed in place since: the
        # new value is a new Node (same tensor); this one keeps replaying the old value for
        # the nodes made from it

    def replay(self, deltas, memo):
        key = id(self)
        if key not in memo:
            memo[key] = self.replay_fn(deltas, memo)
        return memo[key]


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


class GraphMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.rng = np.random.default_rng(0)
        self.leaves = []        # (tgx leaf, torch leaf)
        self.nodes = []
        self.logs = {"tg": [], "th": []}          # what the hooks saw: (node index, grad)

    # -- leaves ---------------------------------------------------------------------------
    @precondition(lambda self: len(self.leaves) < 3)
    @rule(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**16))
    def new_leaf(self, shape, seed):
        data = np.random.default_rng(seed).uniform(-1.5, 1.5, size=shape)
        tg = tgx.tensor(data, requires_grad=True)
        th = torch.tensor(data, requires_grad=True) if torch else None
        k = len(self.leaves)
        self.leaves.append((tg, th))
        snapshot = data.copy()
        # a leaf's value when a node used it, moved by that leaf's delta
        self._add(tg, th, lambda d, m, k=k, s=snapshot: tgx.tensor(s + d[k]), True)

    def _add(self, tg, th, replay, differentiable):
        node = Node(tg, th, replay, differentiable)
        self.nodes.append(node)
        return node

    def _pick(self, data, pred=lambda n: True):
        choices = [n for n in self.nodes if not n.retired and pred(n)]
        if not choices:
            return None
        return data.draw(st.sampled_from(choices))

    # -- ops --------------------------------------------------------------------------------
    def _apply(self, fn, inputs, name):
        """Apply fn to the inputs' current tensors in both libraries (under no_grad when
        `self.grad_off`), and record how to replay it."""
        tg = fn(*[n.tg for n in inputs])
        th = fn(*[n.th for n in inputs]) if torch else None
        if th is not None:
            np.testing.assert_allclose(tg.detach().numpy(), th.detach().numpy(), rtol=1e-12,
                                       atol=1e-12, err_msg=name)
        if np.abs(tg.detach().numpy()).max(initial=0) > 1e4:
            return None                                       # keep the values tame
        diff = tg.requires_grad
        if th is not None:
            assert th.requires_grad == diff, name
        if diff:
            def replay(d, m, fn=fn, inputs=tuple(inputs)):
                return fn(*[n.replay(d, m) for n in inputs])
        else:                                                 # cut from the graph: a constant
            value = tg.detach().numpy().copy()

            def replay(d, m, value=value):
                return tgx.tensor(value)
        node = self._add(tg, th, replay, diff)
        node.stale = any(n.stale for n in inputs)     # its backward passes through theirs
        return node

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), op=st.sampled_from(sorted(UNARY)))
    def unary(self, data, op):
        self._apply(UNARY[op], [self._pick(data)], op)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), op=st.sampled_from(sorted(BINARY)))
    def binary(self, data, op):
        a = self._pick(data)
        b = self._pick(data, lambda n: _broadcastable(n.tg.shape, a.tg.shape))
        self._apply(BINARY[op], [a, b], op)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def matmul(self, data):
        a = self._pick(data, lambda n: n.tg.ndim in (1, 2))
        if a is None:
            return
        k = a.tg.shape[-1]
        b = self._pick(data, lambda n: n.tg.ndim in (1, 2) and n.tg.shape[0] == k)
        if b is not None:
            self._apply(lambda x, y: x @ y, [a, b], "matmul")

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), how=st.sampled_from(["sum", "mean", "sum0", "mean_keep", "max"]))
    def reduce(self, data, how):
        a = self._pick(data)
        if how == "sum":
            fn = lambda x: x.sum()  # noqa: E731
        elif how == "mean":
            fn = lambda x: x.mean()  # noqa: E731
        elif how == "max":
            fn = lambda x: x.max()  # noqa: E731
        elif a.tg.ndim == 0:
            return
        elif how == "sum0":
            fn = lambda x: x.sum(0)  # noqa: E731
        else:
            fn = lambda x: x.mean(-1, keepdim=True)  # noqa: E731
        self._apply(fn, [a], how)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), how=st.sampled_from(["reshape", "transpose", "slice", "flatten"]))
    def view(self, data, how):
        a = self._pick(data, lambda n: n.tg.ndim >= 1)
        if a is None:
            return
        shape = a.tg.shape
        if how == "reshape":
            fn = lambda x: x.reshape(-1, 1)  # noqa: E731
        elif how == "flatten":
            fn = lambda x: x.reshape(-1)  # noqa: E731
        elif how == "transpose":
            if len(shape) != 2:
                return
            fn = lambda x: x.transpose(0, 1)  # noqa: E731
        else:
            if shape[0] < 2:
                return
            fn = lambda x: x[1:]  # noqa: E731
        self._apply(fn, [a], how)

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), name=st.sampled_from(sorted(CUSTOM)))
    def custom(self, data, name):
        """A custom Function in PyTorch's style on one or two nodes."""
        a = self._pick(data)
        inputs = [a]
        if CUSTOM[name][0] == 2:
            b = self._pick(data, lambda n: _broadcastable(n.tg.shape, a.tg.shape))
            inputs.append(b)
        self._apply(custom_fn(name), inputs, name)

    @precondition(lambda self: any(n.differentiable for n in self.nodes))
    @rule(data=st.data(), kind=st.sampled_from(["record", "same value", "remove itself"]))
    def hook(self, data, kind):
        """A hook on a tensor in both libraries: it records what it sees, may return an equal
        gradient (the replacing path) or remove itself the first time it runs."""
        node = self._pick(data, lambda n: n.differentiable and n.tg.requires_grad)
        if node is None:
            return
        k = self.nodes.index(node)
        for side, t in (("tg", node.tg), ("th", node.th)):
            if t is None:
                continue
            handle = {}

            def h(g, side=side, handle=handle):
                self.logs[side].append((k, np.array(g.detach().numpy(), copy=True)))
                if kind == "remove itself":
                    handle["h"].remove()
                return g * 1.0 if kind == "same value" else None

            handle["h"] = t.register_hook(h)

    def _same_logs(self, tg_log, th_log):
        """What each tensor's hooks saw, tensor by tensor (between tensors with no path from one
        to the other the walk's order is its own)."""
        def grouped(log):
            out = {}
            for k, g in log:
                out.setdefault(k, []).append(g)
            return out
        a, b = grouped(tg_log), grouped(th_log)
        assert sorted(a) == sorted(b), (sorted(a), sorted(b))
        for k in a:
            assert len(a[k]) == len(b[k]), k
            for x, y in zip(a[k], b[k], strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-10, err_msg=f"hook on {k}")

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def detach(self, data):
        self._apply(lambda x: x.detach(), [self._pick(data)], "detach")

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), op=st.sampled_from(sorted(UNARY)))
    def under_no_grad(self, data, op):
        a = self._pick(data)
        ctx = (tgx.no_grad(), torch.no_grad()) if torch else (tgx.no_grad(),)
        for c in ctx:
            c.__enter__()
        try:
            self._apply(UNARY[op], [a], f"no_grad {op}")
        finally:
            for c in reversed(ctx):
                c.__exit__(None, None, None)

    # -- in-place changes ---------------------------------------------------------------------
    def _shares_memory(self, node):
        """Whether another live node's tensor is a view of this one's memory (a reshape, a
        slice, a detach): an in-place change would change it too; such programs are left
        out rather than modelled."""
        return any(n.tg is not node.tg and np.shares_memory(n.tg._data, node.tg._data)
                   for n in self.nodes if not n.retired)

    def _new_version(self, node, replay):
        """`node`'s tensor was changed in place: everything made so far may have saved the old
        value (stale); the new value is a new Node."""
        for n in self.nodes:
            n.stale = True
        node.retired = True
        new = self._add(node.tg, node.th, replay, node.differentiable)
        new.stale = True                   # its backward passes through the old node
        return new

    @precondition(lambda self: self.nodes)
    @rule(data=st.data(), how=st.sampled_from(["add_", "mul_"]))
    def inplace_non_leaf(self, data, how):
        """y.add_(0.5) / y.mul_(0.5) on a result that requires grad (not a leaf, not a view)."""
        a = self._pick(data, lambda n: n.differentiable and n.tg._ctx is not None)
        if a is None or self._shares_memory(a):
            return
        fn = (lambda x: x.add_(0.5)) if how == "add_" else (lambda x: x.mul_(0.5))
        fn(a.tg)
        if torch:
            try:
                fn(a.th)
            except RuntimeError:      # torch refuses in place on some views: skip the program
                return
        self._new_version(a, lambda d, m, a=a, fn=fn: fn(a.replay(d, m) * 1.0))

    @precondition(lambda self: self.leaves)
    @rule(data=st.data())
    def inplace_leaf_under_no_grad(self, data):
        """with no_grad(): leaf.mul_(0.9): later nodes read the new value, earlier ones the
        old one (replayed from snapshots), and backward through a node that saved the old
        value is the version error."""
        k = data.draw(st.integers(0, len(self.leaves) - 1))
        tg, th = self.leaves[k]
        (current,) = [n for n in self.nodes if n.tg is tg and not n.retired]
        if self._shares_memory(current):
            return
        with tgx.no_grad():
            tg.mul_(0.9)
        if torch:
            with torch.no_grad():
                th.mul_(0.9)
        snapshot = tg.detach().numpy().copy()
        self._new_version(current, lambda d, m, k=k, s=snapshot: tgx.tensor(s + d[k]))

    # -- gradients -------------------------------------------------------------------------
    @precondition(lambda self: any(n.differentiable for n in self.nodes))
    @rule(data=st.data(), twice=st.booleans(), accumulate=st.booleans())
    def gradient(self, data, twice, accumulate):
        node = self._pick(data, lambda n: n.differentiable)
        w = self.rng.standard_normal(node.tg.shape)
        leaves = [tg for tg, _ in self.leaves]
        self.logs = {"tg": [], "th": []}
        try:
            got = self._grad(node, w, leaves, accumulate)
            tg_log, self.logs["tg"] = self.logs["tg"], []
            if twice:                          # the same retained graph, once more
                again = self._grad(node, w, leaves, accumulate)
                for a, b in zip(got, again, strict=True):
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            error = None
        except RuntimeError as err:
            error = err
        if torch:
            try:
                want = [g.numpy() if g is not None else np.zeros(t.shape) for g, t in zip(
                    torch.autograd.grad((node.th * torch.tensor(w)).sum(),
                                        [th for _, th in self.leaves], retain_graph=True,
                                        allow_unused=True), [th for _, th in self.leaves],
                    strict=True)]
                torch_error = None
            except RuntimeError as err:
                torch_error = err
            if error is None and torch_error is not None:
                # PyTorch refuses once any value its node saved has changed; ours only when the
                # value the node kept was overwritten (the max of a 0-d tensor keeps a copy of
                # its own), and then its answer is held to finite differences below
                assert "inplace" in str(torch_error), torch_error
            else:
                assert (error is None) == (torch_error is None), (error, torch_error)
                if error is not None:
                    assert "in-place" in str(error) or "inplace" in str(error), error
                    return
                for a, b in zip(got, want, strict=True):
                    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
                self._same_logs(tg_log, self.logs["th"])
        elif error is not None:                # only a node that saw an in-place change
            assert node.stale and "in-place" in str(error), error
            return
        self._check_finite_differences(node, w, got)

    @precondition(lambda self: torch is not None and any(n.differentiable for n in self.nodes))
    @rule(data=st.data())
    def second_derivative(self, data):
        """d/d leaves of sum_k <u_k, d<w, node>/d leaf_k>, the first derivatives taken with
        create_graph=True: torch's numbers, or both raising (an in-place change, a
        once_differentiable backward differentiated again)."""
        node = self._pick(data, lambda n: n.differentiable)
        w = self.rng.standard_normal(node.tg.shape)
        us = [self.rng.standard_normal(tg.shape) for tg, _ in self.leaves]
        self.logs = {"tg": [], "th": []}

        def run(m, value, leaves):
            gs = m.autograd.grad((value * m.tensor(w)).sum(), leaves, create_graph=True,
                                 allow_unused=True)
            terms = [(g * m.tensor(u)).sum() for g, u in zip(gs, us, strict=True)
                     if g is not None and g.requires_grad]
            if not terms:
                return [None] * len(leaves)
            return m.autograd.grad(sum(terms), leaves, retain_graph=True, allow_unused=True)

        outcome = {}
        for side, m, value, leaves in (
                ("tg", lookalike, node.tg, [tg for tg, _ in self.leaves]),
                ("th", torch, node.th, [th for _, th in self.leaves])):
            try:
                outcome[side] = [None if h is None else h.detach().numpy().copy()
                                 for h in run(m, value, leaves)]
            except RuntimeError as err:
                outcome[side] = err
        ours, theirs = outcome["tg"], outcome["th"]
        if isinstance(theirs, Exception) or isinstance(ours, Exception):
            if not isinstance(ours, Exception):
                # torch refuses once any value its node saved has changed (see gradient)
                assert "inplace" in str(theirs), theirs
                return
            assert isinstance(theirs, Exception), (ours, theirs)
            for err in (ours, theirs):
                text = str(err)
                assert ("in-place" in text or "inplace" in text or "twice" in text
                        or "does not require grad" in text or "not have a grad_fn" in text
                        or "was not used" in text or "not have been used" in text), text
            return
        for a, b, (tg, _) in zip(ours, theirs, self.leaves, strict=True):
            a = np.zeros(tg.shape) if a is None else a
            b = np.zeros(tg.shape) if b is None else b
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)
        self._same_logs(self.logs["tg"], self.logs["th"])

    def _grad(self, node, w, leaves, accumulate):
        loss = (node.tg * tgx.tensor(w)).sum()
        if not accumulate:
            gs = tgx.grad(loss, leaves, retain_graph=True, allow_unused=True)
            return [np.zeros(t.shape) if g is None else g.numpy().copy()
                    for g, t in zip(gs, leaves, strict=True)]
        before = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
        loss.backward(retain_graph=True)       # into .grad: the difference is this gradient
        out = []
        for t, b in zip(leaves, before, strict=True):
            now = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
            out.append(now - (0 if b is None else b))
        return out

    def _check_finite_differences(self, node, w, got):
        deltas = [np.zeros(tg.shape) for tg, _ in self.leaves]

        def value():
            with tgx.no_grad():
                return float((node.replay(deltas, {}).numpy() * w).sum())

        for k, (tg, _) in enumerate(self.leaves):
            numeric = np.zeros(tg.shape)
            for e in range(tg.numel()):
                deltas[k].reshape(-1)[e] = EPS
                plus = value()
                deltas[k].reshape(-1)[e] = -EPS
                minus = value()
                deltas[k].reshape(-1)[e] = 0.0
                numeric.reshape(-1)[e] = (plus - minus) / (2 * EPS)
            np.testing.assert_allclose(got[k], numeric, rtol=RTOL, atol=ATOL,
                                       err_msg=f"leaf {k}")

    @invariant()
    def values_replay(self):
        """Every node's value is what its replay computes (the bookkeeping is right)."""
        if not self.nodes:
            return
        node = self.nodes[-1]
        with tgx.no_grad():
            again = node.replay([np.zeros(tg.shape) for tg, _ in self.leaves], {}).numpy()
        np.testing.assert_allclose(node.tg.detach().numpy(), again, rtol=1e-12, atol=1e-12)


# CI's short profile: 15 programs of up to 40 steps (seconds; under a minute on a loaded box)
CI = os.environ.get("CI") or os.environ.get("HYPOTHESIS_PROFILE") == "ci"
FUZZ = settings(max_examples=15 if CI else 60, stateful_step_count=40 if CI else 50,
                deadline=None, derandomize=bool(CI),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.slow
def test_graph_fuzzer():
    run_state_machine_as_test(GraphMachine, settings=FUZZ)
