"""The differential harness for a Module's hooks and for hooks on saved tensors: forward
pre-hooks and forward hooks with PyTorch's options (with_kwargs, prepend, always_call), full
backward hooks and backward pre-hooks (`register_full_backward_hook`,
`register_full_backward_pre_hook`), and `torch.autograd.graph.saved_tensors_hooks` /
`save_on_cpu` / `disable_saved_tensors_hooks`, each run through tinygradx's look-alike and real
torch (tests/oracle.py): what the hooks see, what their return values do, the gradients, and the
errors. Without torch these tests skip.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import Raised, assert_clear, lookalike, requires_torch, run, same

pytestmark = [requires_torch, pytest.mark.filterwarnings("ignore::UserWarning")]

W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
B = np.array([0.05, -0.1])


def linear(m, w=W, b=B):
    """nn.Linear in float64 with fixed weights, the same in both libraries."""
    lin = m.nn.Linear(w.shape[1], w.shape[0]).double()
    with m.no_grad():
        lin.weight.copy_(m.tensor(w))
        lin.bias.copy_(m.tensor(b))
    return lin


def x_in(m, requires_grad=True, rows=4):
    return m.tensor(np.linspace(-1, 1, rows * 3).reshape(rows, 3), dtype=m.float64,
                    requires_grad=requires_grad)


def desc(t):
    """What a hook saw, comparable across libraries."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(desc(a) for a in t)
    return (t.detach().clone(), t.requires_grad)


def module_class(m, forward, name="Mod"):
    def init(self):
        m.nn.Module.__init__(self)
    return type(name, (m.nn.Module,), {"__init__": init, "forward": forward})


# ------------------------------------------------------------------------------------------
# full backward hooks and backward pre-hooks
# ------------------------------------------------------------------------------------------

def _linear_hooks(m, case):
    lin = linear(m)
    seen = []
    if case != "pre only":
        lin.register_full_backward_hook(
            lambda mod, gi, go: seen.append(("hook", mod is lin, desc(gi), desc(go))))
    if case != "hook only":
        lin.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", desc(go))))
    x = x_in(m, requires_grad=case != "input without grad")
    (lin(x) ** 2).sum().backward()
    return seen, lin.weight.grad, x.grad


@pytest.mark.parametrize("case", ["both", "hook only", "pre only", "input without grad"])
def test_linear_backward_hooks_see_torchs_gradients(case):
    same(lambda m: _linear_hooks(m, case))


RETURNS = {
    "gi * 0 + 7": ("hook", lambda m, g: (g[0] * 0 + 7,)),
    "go * 2": ("pre", lambda m, g: (g[0] * 2,)),
    "None": ("hook", lambda m, g: None),
    "(None,)": ("hook", lambda m, g: (None,)),
    "two": ("hook", lambda m, g: (g[0], g[0])),
    "two (pre)": ("pre", lambda m, g: (g[0], g[0])),
    "wrong shape": ("hook", lambda m, g: (g[0].sum(0),)),
    "wrong shape (pre)": ("pre", lambda m, g: (g[0].sum(0),)),
    "a tensor, not a tuple": ("hook", lambda m, g: g[0]),
    "a list": ("hook", lambda m, g: [g[0] * 3]),
    "float32": ("hook", lambda m, g: (g[0].float(),)),
    "a number inside": ("pre", lambda m, g: (3.0,)),
}


@pytest.mark.parametrize("what", sorted(RETURNS))
@pytest.mark.parametrize("input_grad", [True, False])
def test_what_backward_hooks_return(what, input_grad):
    def call(m):
        lin = linear(m)
        kind, ret = RETURNS[what]
        if kind == "hook":                 # no input requires grad: gi is (None,), use go
            lin.register_full_backward_hook(lambda mod, gi, go: ret(m, go if gi[0] is None
                                                                    else gi))
        else:
            lin.register_full_backward_pre_hook(lambda mod, go: ret(m, go))
        x = x_in(m, input_grad)
        (lin(x) ** 2).sum().backward()
        return lin.weight.grad, lin.bias.grad, x.grad

    same(call)


def _two(m):
    def forward(self, a, b, k=None):
        return a * b, a.exp(), 3
    return module_class(m, forward, "Two")()


@pytest.mark.parametrize("use", ["both", "first", "second"])
@pytest.mark.parametrize("b_grad", [True, False])
def test_several_inputs_and_outputs(use, b_grad):
    def call(m):
        mod = _two(m)
        seen = []
        mod.register_full_backward_hook(lambda md, gi, go: seen.append(("hook", desc(gi),
                                                                        desc(go))))
        mod.register_full_backward_pre_hook(lambda md, go: seen.append(("pre", desc(go))))
        a = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([2.0, -1.0], dtype=m.float64, requires_grad=b_grad)
        p, e, k = mod(a, b, k=m.ones(1))
        loss = {"both": p.sum() + e.sum(), "first": p.sum(), "second": e.sum()}[use]
        loss.backward()
        return seen, a.grad, b.grad, k

    same(call)


def test_an_unused_input_gets_zeros():
    def call(m):
        mod = module_class(m, lambda self, a, b: a * 2)()
        seen = []
        mod.register_full_backward_hook(lambda md, gi, go: seen.append(desc(gi)))
        a = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([1.0, 1.0], dtype=m.float64, requires_grad=True)
        mod(a, b).sum().backward()
        return seen, a.grad, b.grad

    same(call)


def test_sequential_order_and_inputs_without_grad():
    def call(m, input_grad):
        s = m.nn.Sequential(linear(m, W.T @ W), m.nn.Tanh(), linear(m, W[:1], B[:1]))
        seen = []
        for i, mod in enumerate(s):
            mod.register_full_backward_hook(lambda md, gi, go, i=i: seen.append(("h", i,
                                                                                desc(gi))))
            mod.register_full_backward_pre_hook(lambda md, go, i=i: seen.append(("pre", i)))
        s(x_in(m, input_grad, rows=2)).sum().backward()
        return seen

    same(lambda m: call(m, True))
    same(lambda m: call(m, False))


def test_not_called_without_grad_or_without_tensor_outputs():
    def call(m, case):
        seen = []
        if case == "dict output":
            mod = module_class(m, lambda self, a: {"y": a * 2})()
        else:
            mod = linear(m)
        mod.register_full_backward_hook(lambda md, gi, go: seen.append(1))
        x = x_in(m)
        if case == "no_grad":
            with m.no_grad():
                y = mod(x)
            return seen, y.requires_grad
        out = mod(x)
        (out["y"] if case == "dict output" else out).sum().backward()
        return seen

    for case in ("no_grad", "dict output"):
        same(lambda m, case=case: call(m, case))


def test_under_create_graph_the_hooks_run_in_both_passes():
    def call(m):
        lin = linear(m)
        seen = []
        lin.register_full_backward_hook(lambda md, gi, go: seen.append((desc(gi), desc(go))))
        x = x_in(m)
        (g,) = m.autograd.grad((lin(x) ** 2).sum(), x, create_graph=True)
        seen.append("|")
        g.sum().backward()
        return seen, x.grad, lin.weight.grad

    same(call, atol=1e-12, rtol=1e-12)


def test_a_module_called_twice_and_keyword_tensors():
    def call(m):
        lin = linear(m, W.T @ W, np.zeros(3))
        seen = []
        lin.register_full_backward_hook(lambda md, gi, go: seen.append(desc(go)))
        lin(lin(x_in(m, rows=1))).sum().backward()
        kw = module_class(m, lambda self, *, a: a * 2)()
        kw.register_full_backward_hook(lambda md, gi, go: seen.append(("kw", desc(gi))))
        kw(a=m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)).sum().backward()
        return seen

    same(call)


def test_in_place_on_a_hooked_modules_input_or_output_is_refused():
    def call(m, where):
        def double_(self, x):                  # as nn.ReLU(inplace=True) would
            return x.mul_(2)

        mod = module_class(m, double_)() if where == "input" else linear(m)
        mod.register_full_backward_hook(lambda md, gi, go: None)
        x = x_in(m)
        if where == "input":
            out = mod(x * 1)
        else:
            out = mod(x)
            out.add_(1)
        out.sum().backward()
        return x.grad

    same(lambda m: call(m, "input"))
    same(lambda m: call(m, "output"))


def test_a_non_callable_hook_and_the_old_api():
    """torch takes a non-callable hook and fails at the call; tinygradx names it at once. The
    deprecated register_backward_hook (the module's last op) is refused by name."""
    for register in ("register_full_backward_hook", "register_full_backward_pre_hook",
                     "register_forward_hook", "register_forward_pre_hook"):
        out = run(lambda r=register: getattr(linear(lookalike()), r)(3))
        assert isinstance(out, Raised)
        assert_clear(out.exc, "the hook must be callable, got int")
    out = run(lambda: linear(lookalike()).register_backward_hook(lambda *a: None))
    assert isinstance(out, Raised)
    assert_clear(out.exc, "register_backward_hook", "register_full_backward_hook")


def test_handles_and_prepend():
    def call(m):
        lin = linear(m)
        order = []
        h1 = lin.register_full_backward_hook(lambda md, gi, go: order.append(1))
        lin.register_full_backward_hook(lambda md, gi, go: order.append(2))
        lin.register_full_backward_hook(lambda md, gi, go: order.append(0), prepend=True)
        lin.register_full_backward_pre_hook(lambda md, go: order.append("p1"))
        lin.register_full_backward_pre_hook(lambda md, go: order.append("p0"), prepend=True)
        lin(x_in(m)).sum().backward()
        h1.remove()
        h1.remove()
        order.append("|")
        lin(x_in(m)).sum().backward()
        return order

    same(call)


@settings(max_examples=10)
@given(scale_in=st.sampled_from([None, 0.5, -2.0]), scale_out=st.sampled_from([None, 3.0]),
       rows=st.integers(1, 3), input_grad=st.booleans())
def test_generated_hook_scalings(scale_in, scale_out, rows, input_grad):
    def call(m):
        lin = linear(m)
        if scale_out is not None:
            lin.register_full_backward_pre_hook(lambda md, go: (go[0] * scale_out,))
        if scale_in is not None and input_grad:
            lin.register_full_backward_hook(lambda md, gi, go: (gi[0] * scale_in,))
        x = x_in(m, input_grad, rows)
        (lin(x).tanh() ** 2).sum().backward()
        return x.grad, lin.weight.grad, lin.bias.grad

    same(call, atol=1e-12, rtol=1e-12)


# ------------------------------------------------------------------------------------------
# forward hooks with PyTorch's options
# ------------------------------------------------------------------------------------------

def test_forward_hook_options():
    def call(m):
        lin = linear(m)
        order = []
        lin.register_forward_pre_hook(lambda md, args: order.append("pre1"))
        lin.register_forward_pre_hook(lambda md, args: order.append("pre0"), prepend=True)

        def with_kw(md, args, kwargs):
            order.append(("prekw", len(args), sorted(kwargs)))
            return (args[0] * 2,), kwargs

        lin.register_forward_pre_hook(with_kw, with_kwargs=True)
        lin.register_forward_hook(lambda md, args, out: order.append("fwd1"))
        lin.register_forward_hook(lambda md, args, kwargs, out: order.append(("fwdkw",
                                                                             sorted(kwargs)))
                                  or out + 1, with_kwargs=True)
        lin.register_forward_hook(lambda md, args, out: order.append("fwd0"), prepend=True)
        return lin(x_in(m)), order

    same(call)


def test_forward_pre_hook_results():
    for ret in (lambda m, args: args[0] * 3, lambda m, args: (args[0] * 3,),
                lambda m, args: None):
        def call(m, ret=ret):
            lin = linear(m)
            lin.register_forward_pre_hook(lambda md, args: ret(m, args))
            return lin(x_in(m))
        same(call)
    same(lambda m: _kw_pre_hook_returning(m, "bad"))
    same(lambda m: _kw_pre_hook_returning(m, (1, 2, 3)))


def _kw_pre_hook_returning(m, value):
    lin = linear(m)
    lin.register_forward_pre_hook(lambda md, args, kwargs: value, with_kwargs=True)
    return lin(x_in(m))


def test_always_call():
    def call(m, always, hook_raises):
        seen = []

        def broken(self, x):
            raise ValueError("forward failed")

        mod = module_class(m, broken)()

        def hook(md, args, out):
            seen.append(("hook", out))
            if hook_raises:
                raise KeyError("the hook failed too")

        mod.register_forward_hook(hook, always_call=always)
        mod.register_forward_hook(lambda md, args, out: seen.append("plain"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run(lambda: mod(m.ones(2)))
        return type(out.exc).__name__, str(out.exc), seen

    for always in (True, False):
        for hook_raises in (True, False):
            same(lambda m, a=always, b=hook_raises: call(m, a, b))


def test_always_call_hook_runs_once_on_success():
    def call(m):
        lin = linear(m)
        seen = []
        lin.register_forward_hook(lambda md, args, out: seen.append(1), always_call=True)
        lin(x_in(m))
        return seen

    same(call)


# ------------------------------------------------------------------------------------------
# hooks on saved tensors
# ------------------------------------------------------------------------------------------

OPS = {
    "mul": lambda m, x, w: x * w, "mul by a constant": lambda m, x, w: x * 2,
    "mul, w detached": lambda m, x, w: x * w.detach(), "exp": lambda m, x, w: x.exp(),
    "add": lambda m, x, w: x + w, "tanh": lambda m, x, w: x.tanh(),
    "matmul": lambda m, x, w: x @ w, "sum": lambda m, x, w: x.sum(),
    "pow 2": lambda m, x, w: x ** 2, "div": lambda m, x, w: x / w,
    "sigmoid": lambda m, x, w: x.sigmoid(), "log": lambda m, x, w: x.log(),
    "sqrt": lambda m, x, w: x.sqrt(), "mean": lambda m, x, w: x.mean(),
    "reshape": lambda m, x, w: x.reshape(2, 1), "x * exp(x)": lambda m, x, w: x.exp() * x,
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_what_is_packed_and_unpacked(op):
    """Which tensors each op keeps for backward, as pack sees them (shape, whether it is an
    input, requires_grad), and how often unpack runs: the element-wise ops and products keep
    what PyTorch's keep."""
    def call(m):
        packed, unpacked = [], []
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([2.0, 3.0], dtype=m.float64, requires_grad=True)

        def number(t):        # a Python number (x * 2) is a 0-d tensor here, which PyTorch
            return t.ndim == 0 and not t.requires_grad    # keeps outside its saved tensors

        def pack(t):
            if not number(t):
                packed.append((tuple(t.shape), t is x, t is w, t.requires_grad))
            return t

        def unpack(t):
            if not number(t):
                unpacked.append(tuple(t.shape))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = OPS[op](m, x, w)
        y.sum().backward()
        # the order one node hands its tensors to pack in is its own (mul: torch's other first)
        return sorted(packed), sorted(unpacked), x.grad, w.grad

    same(call)


def test_unpack_decides_what_backward_reads():
    def call(m, case):
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        hooks = {
            "times 10": (lambda t: t.detach().numpy().copy(), lambda a: m.from_numpy(a * 10)),
            "copy": (lambda t: t.detach().clone(), lambda t: t),
            "returns an int": (lambda t: t, lambda t: 3),
            "returns None": (lambda t: None, lambda t: t if t is not None else None),
        }[case]
        with m.autograd.graph.saved_tensors_hooks(*hooks):
            y = (x * x * x).sum()
        if case == "copy":
            (g,) = m.autograd.grad(y, x, create_graph=True)
            return g, g.requires_grad, m.autograd.grad(g.sum(), x)
        y.backward()
        return x.grad

    for case in ("times 10", "copy", "returns an int", "returns None"):
        same(lambda m, case=case: call(m, case))


def test_saved_tensor_hooks_blocks():
    def call(m, case):
        log = []
        x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
        hooks = m.autograd.graph.saved_tensors_hooks
        if case == "nested":
            with hooks(lambda t: log.append("p1") or t, lambda t: log.append("u1") or t):
                with hooks(lambda t: log.append("p2") or t, lambda t: log.append("u2") or t):
                    y = x.exp()
                z = x.exp()
            (y.sum() + z.sum()).backward()
            log = log[:2] + sorted(log[2:])     # y's and z's nodes: no order between them
        elif case == "no_grad":
            with hooks(lambda t: log.append("p") or t, lambda t: t):
                with m.no_grad():
                    x.exp()
        elif case == "retained":
            with hooks(lambda t: log.append("p") or t, lambda t: log.append("u") or t):
                y = x.exp().sum()
            y.backward(retain_graph=True)
            y.backward()
        elif case == "disabled":
            with m.autograd.graph.disable_saved_tensors_hooks("no hooks in here"):
                with hooks(lambda t: t, lambda t: t):
                    pass
        elif case == "save_on_cpu":
            with m.autograd.graph.save_on_cpu():
                (x * x).sum().backward()
        elif case == "in place after (identity)":
            a = x * 1
            with hooks(lambda t: t, lambda t: t):
                y = (a * a).sum()
            a.add_(1)
            y.backward()
        elif case == "in place after (copy)":
            a = x * 1
            with hooks(lambda t: t.detach().clone(), lambda t: t):
                y = (a * a).sum()
            a.add_(1)
            y.backward()
        return log, x.grad

    for case in ("nested", "no_grad", "retained", "disabled", "save_on_cpu",
                 "in place after (identity)", "in place after (copy)"):
        same(lambda m, case=case: call(m, case))


def test_saved_tensors_hooks_around_a_module():
    def call(m):
        shapes = []
        lin = linear(m)
        with m.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t,
                                                  lambda t: t):
            y = lin(x_in(m, requires_grad=False)).sum()
        y.backward()
        return shapes, lin.weight.grad

    same(call)


def test_an_identity_pack_leaves_no_reference_cycle():
    """Invariant 4 with saved-tensor hooks on: what pack keeps never holds the node's own
    output, so the graph is freed by reference counting alone."""
    import gc

    m = lookalike()
    x = m.tensor([0.5, 1.0], dtype=m.float64, requires_grad=True)
    for _ in range(2):                    # the first also loads what the process loads once
        gc.collect()
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            loss = (x.exp() * x).tanh().sum()
        loss.backward()
        del loss
        found = gc.collect()
    assert found == 0
