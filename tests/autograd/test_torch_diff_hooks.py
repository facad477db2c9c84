"""The differential harness for Tensor hooks: every call below runs on tinygradx's look-alike and on
real torch (tests/oracle.py), and the two must agree: the same values, dtypes and shapes, or both
raising (ours a one-line error raised by tinygradx's own code).

What a hook may return (a Tensor of the gradient's shape and dtype, or None; every other return
refused), the order hooks run in while one removes or registers another, retain_grad, post-
accumulate-grad hooks, hooks under tgx.grad and create_graph; then a state machine that
registers, removes and runs hooks in random sequences on a small graph (hypothesis), each step
held to torch. Without torch these tests skip.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from oracle import assert_clear, both, lookalike, requires_torch, run, same, torch, Raised

pytestmark = requires_torch


def leaf(m, shape=(2, 3), fill=1.0):
    return m.full(shape, fill, dtype=m.float64, requires_grad=True)


# ------------------------------------------------------------------------------------------
# what a hook returns
# ------------------------------------------------------------------------------------------

RETURNS = {
    "None": lambda m, g: None,
    "g*2": lambda m, g: g * 2,
    "same tensor": lambda m, g: g,
    "g.sum(0)": lambda m, g: g.sum(0),
    "0": lambda m, g: 0,
    "0.5": lambda m, g: 0.5,
    "0-d tensor": lambda m, g: m.tensor(0.0, dtype=m.float64),
    "(4, 2, 3)": lambda m, g: g.expand(4, *g.shape),
    "unsqueeze": lambda m, g: g.unsqueeze(0),
    "g[:1] (broadcastable)": lambda m, g: g[:1],
    "'abc'": lambda m, g: "abc",
    "True": lambda m, g: True,
    "(g,)": lambda m, g: (g,),
    "[g]": lambda m, g: [g],
    "numpy": lambda m, g: g.numpy(),
    "float32": lambda m, g: g.float(),
    "int64": lambda m, g: g.long(),
    "transposed values": lambda m, g: g.flip(0),
    "requires grad": lambda m, g: g * m.ones(g.shape, dtype=m.float64, requires_grad=True),
}


@pytest.mark.parametrize("what", sorted(RETURNS))
@pytest.mark.parametrize("where", ["leaf", "non-leaf", "grad() input", "create_graph"])
def test_what_a_hook_returns(what, where):
    def call(m):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=m.float64, requires_grad=True)
        if where == "non-leaf":
            y = x * 2
            y.register_hook(lambda g: RETURNS[what](m, g))
            (y * y).sum().backward()
            return x.grad
        x.register_hook(lambda g: RETURNS[what](m, g))
        if where == "grad() input":
            return m.autograd.grad((x * x).sum(), x)
        if where == "create_graph":
            (g,) = m.autograd.grad((x * x * x).sum(), x, create_graph=True)
            return g, m.autograd.grad(g.sum(), x)
        (x * 3).sum().backward()
        return x.grad

    same(call)


def test_a_refused_return_names_the_hook_the_shape_and_what_it_returned():
    tg = lookalike()
    for what, fragments in [("g.sum(0)", ("'size_hook'", "changed the size", "(2, 3)", "(3,)")),
                            ("(4, 2, 3)", ("(2, 3)", "(4, 2, 3)")),
                            ("0", ("'size_hook'", "returned an int", "None or a Tensor")),
                            ("'abc'", ("returned a str",)),
                            ("float32", ("changed the type", "float64", "float32"))]:
        x = leaf(tg)

        def size_hook(g, what=what):
            return RETURNS[what](tg, g)

        x.register_hook(size_hook)
        out = run(lambda x=x: (x * 3).sum().backward())
        assert isinstance(out, Raised), what
        assert_clear(out.exc, *fragments)


# ------------------------------------------------------------------------------------------
# the order hooks run in, while hooks are removed or registered
# ------------------------------------------------------------------------------------------

def _three_hooks(m, action, on="leaf"):
    x = leaf(m)
    target = x * 2 if on == "non-leaf" else x
    seen, handles = [], {}

    def hook(i):
        def h(g):
            seen.append(i)
            if i == 1:
                action(handles, target, seen)
        return h

    for i in (1, 2, 3):
        handles[i] = target.register_hook(hook(i))
    for _ in range(2):
        (target * 2).sum().backward(retain_graph=True)
        seen.append("|")
    return seen


ACTIONS = {
    "remove itself": lambda h, t, seen: h[1].remove(),
    "remove the next": lambda h, t, seen: h[2].remove(),
    "remove the last": lambda h, t, seen: h[3].remove(),
    "remove all": lambda h, t, seen: [x.remove() for x in list(h.values())],
    "register one": lambda h, t, seen: t.register_hook(lambda g: seen.append("new")),
    "remove twice": lambda h, t, seen: (h[2].remove(), h[2].remove()),
}


@pytest.mark.parametrize("on", ["leaf", "non-leaf"])
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_hooks_removed_or_registered_during_backward(action, on):
    same(lambda m: _three_hooks(m, ACTIONS[action], on))


def test_a_hook_on_one_tensor_changes_the_hooks_of_a_later_one():
    def call(m, remove):
        x = leaf(m)
        y = x * 2
        seen = []
        hx = x.register_hook(lambda g: seen.append("x"))

        def on_y(g):
            seen.append("y")
            if remove:
                hx.remove()
            else:
                x.register_hook(lambda g: seen.append("x-new"))

        y.register_hook(on_y)
        y.sum().backward(retain_graph=True)
        seen.append("|")
        y.sum().backward()
        return seen

    same(lambda m: call(m, True))
    same(lambda m: call(m, False))


def test_hooks_chain_and_see_the_previous_result():
    def call(m):
        x = leaf(m)
        seen = []
        x.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: seen.append(g.clone()) or g + 1)
        (x * 3).sum().backward()
        return x.grad, seen

    same(call)


def test_a_hook_may_change_the_gradient_in_place():
    def call(m):
        x = leaf(m)
        x.register_hook(lambda g: g.mul_(2))
        (x * 3).sum().backward()
        return x.grad

    same(call)


def test_a_hook_stays_with_the_value_it_was_registered_on():
    """An in-place op makes a tensor the output of a new node: a hook registered before sees
    the old value's gradient (all its uses), one registered after the new value's; retain_grad
    follows the tensor. The same for a custom Function's mark_dirty."""
    def call(m, how):
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(("before", g.clone())))
        y.retain_grad()
        z = y * 3                                   # uses the old value
        if how == "mul_":
            y.mul_(10)
        else:
            def forward(ctx, t):
                t.mul_(10)
                ctx.mark_dirty(t)
                return t
            F = type("Times10_", (m.autograd.Function,), {
                "forward": staticmethod(forward),
                "backward": staticmethod(lambda ctx, g: g * 10)})
            F.apply(y)
        y.register_hook(lambda g: seen.append(("after", g.clone())))
        (z.sum() + (y * y).sum()).backward()
        return sorted(seen, key=lambda e: e[0]), y.grad, x.grad

    same(lambda m: call(m, "mul_"))
    same(lambda m: call(m, "mark_dirty"))


# ------------------------------------------------------------------------------------------
# registration, retain_grad, post-accumulate-grad hooks
# ------------------------------------------------------------------------------------------

def test_registration_errors():
    same(lambda m: m.ones(2).register_hook(lambda g: g))
    same(lambda m: m.ones(2).retain_grad())
    same(lambda m: (leaf(m) * 2).register_post_accumulate_grad_hook(lambda t: None))
    same(lambda m: m.ones(2).register_post_accumulate_grad_hook(lambda t: None))
    same(lambda m: leaf(m).retain_grad())                          # a leaf: nothing, None
    same(lambda m: (leaf(m) * 2).retain_grad())                    # None, as torch's


def test_retain_grad_sees_the_hooked_gradient_and_accumulates():
    def call(m, hook_first, passes):
        x = leaf(m)
        y = x * 2
        before = y.retains_grad
        if hook_first:
            y.register_hook(lambda g: g * 10)
        y.retain_grad()
        if not hook_first:
            y.register_hook(lambda g: g * 10)
        x.retain_grad()
        for _ in range(passes):
            (y * y).sum().backward(retain_graph=True)
        return y.grad, x.grad, before, y.retains_grad, x.retains_grad

    for hook_first in (True, False):
        for passes in (1, 2):
            same(lambda m, a=hook_first, b=passes: call(m, a, b))


def test_retain_grad_under_create_graph():
    def call(m):
        x = leaf(m)
        y = x * x
        y.retain_grad()
        (y * y).sum().backward(create_graph=True)
        return y.grad, y.grad.requires_grad, x.grad

    same(call)


def test_post_accumulate_grad_hooks():
    def call(m, how):
        x = leaf(m)
        seen = []
        handles = {}

        def first(t):
            seen.append(("first", t is x, t.grad.clone()))
            if how == "remove the next":
                handles[2].remove()

        handles[1] = x.register_post_accumulate_grad_hook(first)
        handles[2] = x.register_post_accumulate_grad_hook(
            lambda t: seen.append(("second", t.grad.sum().item())))
        x.register_hook(lambda g: g * 2)                  # runs before accumulation
        if how == "grad()":
            return m.autograd.grad((x * 3).sum(), x), seen
        for _ in range(2):
            (x * 3).sum().backward()
        if how == "create_graph":
            (x * x).sum().backward(create_graph=True)
            return x.grad, seen
        return x.grad, seen

    for how in ("plain", "remove the next", "grad()", "create_graph"):
        same(lambda m, how=how: call(m, how))


def test_post_accumulate_hook_must_return_none():
    def call(m):
        x = leaf(m)
        x.register_post_accumulate_grad_hook(lambda t: t.grad * 2)
        (x * 3).sum().backward()

    same(call)


def test_a_hook_may_scale_grad_in_place_after_accumulation():
    def call(m):
        x = leaf(m)

        def scale(t):
            t.grad.mul_(0.5)

        x.register_post_accumulate_grad_hook(scale)
        (x * 4).sum().backward()
        (x * 4).sum().backward()
        return x.grad

    same(call)


# ------------------------------------------------------------------------------------------
# generated: hooks returning scaled gradients on a small graph, against torch
# ------------------------------------------------------------------------------------------

@settings(max_examples=25)
@given(data=st.data())
def test_random_hooks_on_a_small_graph(data):
    """Each tensor of a*b + sin(a) may carry hooks scaling its gradient by a drawn factor (or
    only recording it); leaves may also retain or accumulate twice; every gradient is
    torch's."""
    values = data.draw(st.lists(st.floats(-2, 2), min_size=6, max_size=6))
    plan = data.draw(st.lists(st.tuples(st.sampled_from(["a", "b", "ab", "s", "out"]),
                                        st.sampled_from([None, 0.5, 2.0, -1.0])),
                              max_size=6))
    retain = data.draw(st.sets(st.sampled_from(["ab", "s", "out"])))
    passes = data.draw(st.integers(1, 2))

    def call(m):
        a = m.tensor(values[:3], dtype=m.float64, requires_grad=True)
        b = m.tensor(values[3:], dtype=m.float64, requires_grad=True)
        ab = a * b
        s = a.sin()
        out = ab + s
        named = {"a": a, "b": b, "ab": ab, "s": s, "out": out}
        seen = []
        for name, factor in plan:
            if factor is None:
                named[name].register_hook(lambda g, n=name: seen.append((n, g.clone())))
            else:
                named[name].register_hook(lambda g, f=factor: g * f)
        for name in sorted(retain):
            named[name].retain_grad()
        for _ in range(passes):
            (out * out).sum().backward(retain_graph=True)
        # per tensor, in the order they ran: between tensors with no path from one to the
        # other (a and b, ab and s) the walk's order is its own, not a promise (torch's differs)
        per_tensor = [[g for n, g in seen if n == name] for name in sorted(named)]
        return a.grad, b.grad, [named[n].grad for n in sorted(retain)], per_tensor

    same(call, atol=1e-12, rtol=1e-12)


class HookMachine(RuleBasedStateMachine):
    """Random sequences of registering, removing and running hooks (some of which remove or
    register others while they run) on one leaf and one non-leaf, each backward compared with
    torch: the order the hooks ran in and the gradients."""

    def __init__(self):
        super().__init__()
        self.sides = {}
        for name, m in (("tgx", lookalike()), ("torch", torch)):
            x = leaf(m, (3,), 0.5)
            y = x * 3
            self.sides[name] = {"m": m, "x": x, "y": y, "handles": [], "log": []}
        self.count = 0

    def _each(self, fn):
        return {name: run(fn, side) for name, side in self.sides.items()}

    @rule(on=st.sampled_from(["x", "y"]), kind=st.sampled_from(["log", "scale", "remove-self",
                                                              "remove-first", "add-more"]))
    def register(self, on, kind):
        self.count += 1
        k = self.count

        def add(side):
            handles, log = side["handles"], side["log"]
            target = side[on]

            def hook(g):
                log.append((on, k))
                if kind == "scale":
                    return g * 1.5
                if kind == "remove-self":
                    handles[k - 1].remove()
                if kind == "remove-first" and handles:
                    handles[0].remove()
                if kind == "add-more":
                    target.register_hook(lambda g: log.append((on, k, "added")))
                return None

            handles.append(target.register_hook(hook))

        self._each(add)

    @rule(i=st.integers(0, 20))
    def remove(self, i):
        self._each(lambda side: side["handles"][i % len(side["handles"])].remove()
                   if side["handles"] else None)

    @rule(how=st.sampled_from(["backward", "grad"]))
    def run_backward(self, how):
        def go(side):
            x, y = side["x"], side["y"]
            loss = (y * y).sum()
            if how == "grad":
                return side["m"].autograd.grad(loss, x, retain_graph=True)[0]
            loss.backward(retain_graph=True)
            return x.grad

        results = self._each(go)
        both(lambda: _value(results["tgx"]), lambda: _value(results["torch"]), atol=1e-12,
             rtol=1e-12)

    @invariant()
    def same_log(self):
        assert self.sides["tgx"]["log"] == self.sides["torch"]["log"]


def _value(v):
    if isinstance(v, Raised):
        raise v.exc
    return v


def test_hook_machine():
    run_state_machine_as_test(HookMachine, settings=settings(max_examples=15,
                                                             stateful_step_count=15))


def test_ours_and_torch_agree_on_numpy_values():
    """A sanity check of the harness itself: a hook's scaled gradient has torch's numbers."""
    ours, theirs = both(lambda: _scaled(lookalike()), lambda: _scaled(torch))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def _scaled(m):
    x = leaf(m)
    x.register_hook(lambda g: g * 3)
    (x * 2).sum().backward()
    return x.grad


def test_an_optimizer_step_inside_the_post_accumulate_hook():
    """PyTorch's "optimizer step in backward" recipe: one optimizer per parameter, stepped by
    its post-accumulate-grad hook, so each gradient is freed as soon as it is used."""
    def call(m):
        lin = m.nn.Linear(3, 2).double()
        with m.no_grad():
            lin.weight.copy_(m.tensor([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]]))
            lin.bias.copy_(m.tensor([0.05, -0.1]))
        optims = {p: m.optim.SGD([p], lr=0.1, momentum=0.9) for p in lin.parameters()}

        def step(p):
            optims[p].step()
            optims[p].zero_grad()

        for p in lin.parameters():
            p.register_post_accumulate_grad_hook(step)
        x = m.tensor([[1.0, -1.0, 0.5], [0.2, 0.3, -0.4]], dtype=m.float64)
        for _ in range(3):
            (lin(x).tanh() ** 2).sum().backward()
        return lin.weight, lin.bias, lin.weight.grad

    same(call, atol=1e-12, rtol=1e-12)
