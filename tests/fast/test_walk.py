"""The speed layer's backward walk (tinygradx/fast/walk.py): its buffers on their own
(ownership, slice buffers), and the whole walk against a plain textbook walk on a GPT training
step, bit for bit (the same derivatives: only the bookkeeping differs)."""
import inspect

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import Tensor, autograd
from tinygradx.autograd import toposort, unbroadcast
from tinygradx.fast import dispatch
from tinygradx.fast.walk import OwnedGrads as Grads
from helpers import small_gpt_step


def t(*shape, dtype=np.float64):
    return Tensor(np.zeros(shape, dtype=dtype), requires_grad=True)


def arr(*values):
    return np.array(values, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# ownership: the walk adds in place only into arrays nothing else holds
# ------------------------------------------------------------------------------------------

def test_one_array_given_to_two_inputs_is_never_written():
    a, b = t(3), t(3)
    g = arr(1, 2, 3)
    grads = Grads()
    grads.add(a, g)                                  # Add.backward returns g to both inputs
    grads.add(b, g)
    grads.add(a, arr(10, 10, 10))
    grads.add(a, arr(100, 100, 100), owned=True)
    assert g.tolist() == [1, 2, 3]
    ga, owned_a = grads.pop(a)
    gb, owned_b = grads.pop(b)
    assert ga.tolist() == [111, 112, 113] and owned_a
    assert gb is g and not owned_b                   # never handed on as ours


def test_owned_array_is_summed_in_place_and_stays_owned():
    x = t(2)
    mine, other = arr(1, 2), arr(10, 20)
    grads = Grads()
    grads.add(x, mine, owned=True)                   # e.g. a fresh_grads op's output
    grads.add(x, other)
    g, owned = grads.pop(x)
    assert g is mine and owned and g.tolist() == [11, 22] and other.tolist() == [10, 20]


def test_owned_newcomer_takes_the_sum_and_the_shared_one_is_untouched():
    x = t(2)
    shared, fresh = arr(1, 2), arr(10, 20)
    grads = Grads()
    grads.add(x, shared)
    grads.add(x, fresh, owned=True)
    g, owned = grads.pop(x)
    assert g is fresh and owned and g.tolist() == [11, 22] and shared.tolist() == [1, 2]


def test_sum_of_two_shared_arrays_is_a_new_owned_array():
    x = t(2)
    p, q = arr(1, 2), arr(3, 4)
    grads = Grads()
    grads.add(x, p)
    grads.add(x, q)
    g, owned = grads.pop(x)
    assert owned and g is not p and g is not q and p.tolist() == [1, 2] and q.tolist() == [3, 4]


def test_numpy_scalars_and_other_dtypes_are_not_added_in_place():
    x = t()
    grads = Grads()
    grads.add(x, np.float64(2.0), owned=True)        # immutable: cannot be ours to write
    assert grads.pop(x) == (2.0, False)
    y = t(2, dtype=np.float32)
    seed = np.array([1, 2], np.float16)
    grads.add(y, seed)
    grads.add(y, np.array([3, 4], np.float16))       # sum: owned, float16
    contribution = np.array([0.1, 0.2], np.float32)
    grads.add(y, contribution)                       # float32 would be cut to float16 in place
    g, _ = grads.pop(y)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.array([4, 6], np.float16) + contribution)


def test_pop_forgets_and_reports_missing_gradients():
    x = t(2)
    grads = Grads()
    assert grads.pop(x) == (None, False)
    grads.add(x, arr(1, 1))
    grads.pop(x)
    assert grads.pop(x) == (None, False) and not grads.entries


def test_walk_never_writes_into_an_array_an_op_returned_twice():
    a, b = Tensor(np.ones(3), requires_grad=True), Tensor(np.ones(3), requires_grad=True)
    c = a + b
    seen = []
    c.register_hook(lambda g: seen.append(g.numpy()) or None)
    (c * 2 + a * 5 + b * 7).sum().backward()
    assert a.grad.numpy().tolist() == [7, 7, 7] and b.grad.numpy().tolist() == [9, 9, 9]
    assert seen[0].tolist() == [2, 2, 2]             # what the hook was shown is unchanged
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


def test_fresh_grads_output_becomes_the_leaf_grad_without_a_copy():
    class Twice(tgx.Function):
        fresh_grads = True

        def forward(self, x):
            return 2 * x

        def backward(self, g):
            self.made = 2 * g
            return self.made

    x = Tensor(np.ones(3), requires_grad=True)
    y = Twice.apply(x)
    node = y.grad_fn
    y.backward(np.ones(3), retain_graph=True)
    assert x.grad.numpy() is node.made               # owned: handed over as is


# ------------------------------------------------------------------------------------------
# slices: what getitem's fast backward hands over (autograd.Slice), into one buffer per tensor
# ------------------------------------------------------------------------------------------

def test_slices_covering_everything_need_no_zero_fill():
    x = t(2, 6)
    grads = Grads()
    for k, v in enumerate([1.0, 2.0, 3.0]):
        grads.add_slice(x, (slice(None), slice(2 * k, 2 * k + 2)), np.full((2, 2), v))
    assert grads.entries[id(x)][2] == (1, [(0, 2), (2, 4), (4, 6)])   # written, never zeroed
    g, owned = grads.pop(x)
    assert owned and g.tolist() == [[1, 1, 2, 2, 3, 3]] * 2


def test_partial_slices_leave_zeros_in_the_gaps():
    x = t(7, 2)
    grads = Grads()
    grads.add_slice(x, (slice(5, 7),), np.full((2, 2), 3.0))
    grads.add_slice(x, (slice(1, 3),), np.full((2, 2), 1.0))
    g, _ = grads.pop(x)
    assert g[:, 0].tolist() == [0, 1, 1, 0, 0, 3, 3]


def test_overlapping_and_strided_slices_add_up():
    x = t(2, 6)
    grads = Grads()
    grads.add_slice(x, (slice(None), slice(0, 3)), np.ones((2, 3)))
    grads.add_slice(x, (slice(None), slice(2, 5)), np.full((2, 3), 10.0))   # overlaps col 2
    grads.add_slice(x, (slice(None), slice(None, None, 2)), np.full((2, 3), 100.0))
    grads.add_slice(x, (0, slice(1, 2)), np.full((1,), 1000.0))            # an int index
    g, _ = grads.pop(x)
    assert g.tolist() == [[101, 1001, 111, 10, 110, 0], [101, 1, 111, 10, 110, 0]]


def test_slice_after_a_shared_gradient_adds_into_a_copy():
    x = t(4)
    shared = arr(1, 1, 1, 1)
    grads = Grads()
    grads.add(x, shared)
    grads.add_slice(x, (slice(1, 3),), arr(5, 5))
    grads.add(x, arr(10, 10, 10, 10))
    g, owned = grads.pop(x)
    assert g.tolist() == [11, 16, 16, 11] and owned and shared.tolist() == [1, 1, 1, 1]


def test_dense_gradient_after_partial_slices_fills_the_gaps_first():
    x = t(4)
    grads = Grads()
    grads.add_slice(x, (slice(0, 1),), arr(5))
    grads.add(x, arr(1, 2, 3, 4))
    g, _ = grads.pop(x)
    assert g.tolist() == [6, 2, 3, 4]


@pytest.mark.parametrize("seed", range(30))
def test_random_contributions_equal_a_plain_sum(seed):
    # any mix of dense (owned or not) and sliced contributions gives the plain sum, bit for bit
    rng = np.random.default_rng(seed)
    shape = (5, 8)
    x = t(*shape, dtype=np.float32)
    grads, ref, given = Grads(), None, []
    for _ in range(rng.integers(1, 7)):
        if rng.random() < 0.5:
            g = rng.standard_normal(shape).astype(np.float32)
            full = g.copy()                        # an owned g may take the sum in place
            owned = bool(rng.random() < 0.5)
            if not owned:
                given.append((g, g.copy()))
            grads.add(x, g, owned=owned)
        else:
            axis = int(rng.integers(0, 2))
            a = int(rng.integers(0, shape[axis]))
            b = int(rng.integers(a + 1, shape[axis] + 1))
            step = int(rng.choice([1, 1, 2]))
            index = [slice(None), slice(None)]
            index[axis] = slice(a, b, step)
            index = tuple(index)
            values = rng.standard_normal(np.zeros(shape)[index].shape).astype(np.float32)
            grads.add_slice(x, index, values)
            full = np.zeros(shape, np.float32)
            full[index] = values
        ref = full if ref is None else ref + full
    g, _ = grads.pop(x)
    assert np.array_equal(g, ref)
    for shared, before in given:                   # arrays given without ownership: unwritten
        assert np.array_equal(shared, before)


# ------------------------------------------------------------------------------------------
# the whole walk against a plain one: toposort, backward, unbroadcast, sums with copies
# ------------------------------------------------------------------------------------------

def reference_walk(loss):
    """The textbook walk, without ownership or slice buffers: d(loss)/d(leaf) per leaf id."""
    grads, leaves = {id(loss): np.ones_like(loss.detach().numpy())}, {}
    for node in toposort([loss]):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        if node._ctx is None:
            leaves[id(node)] = g
            continue
        in_grads = dispatch.backward(node._ctx, g)          # the derivative the walk runs
        if isinstance(in_grads, autograd.Slice):
            full = np.zeros(node._ctx.parents[0].shape, g.dtype)
            full[in_grads.index] = in_grads.values
            in_grads = full
        in_grads = in_grads if isinstance(in_grads, tuple) else (in_grads,)
        edges = zip(node._ctx.parents, in_grads, node._ctx.needs_input_grad, strict=True)
        for p, ig, need in edges:
            if ig is None or not need:
                continue
            ig = np.array(unbroadcast(ig, p.detach().numpy().shape),
                          dtype=p.detach().numpy().dtype, copy=True)
            grads[id(p)] = ig if id(p) not in grads else grads[id(p)] + ig
    return leaves


@pytest.mark.parametrize("fused", [True, False], ids=["fused-attention", "op-by-op"])
def test_gpt_training_step_gradients_equal_the_reference_walk(fused):
    model, idx, tgt, opt = small_gpt_step(fused)
    model(idx, tgt)[1].backward()                  # one step first, so the weights have moved
    opt.step()
    opt.zero_grad()
    loss = model(idx, tgt)[1]
    expected = reference_walk(loss)                # frees nothing: the graph is walked again
    loss.backward()
    named = list(model.named_parameters())
    assert len(named) == len(expected)
    for name, p in named:
        assert p.grad.dtype == expected[id(p)].dtype, name
        assert np.array_equal(p.grad.numpy(), expected[id(p)]), name


def test_run_backward_fits_on_one_screen():
    lines = inspect.getsource(autograd.run_backward).splitlines()
    assert len(lines) <= 30, f"run_backward grew to {len(lines)} lines"


@pytest.mark.parametrize("fused", [True, False], ids=["fused-attention", "op-by-op"])
def test_with_every_version_off_the_fast_walk_is_the_cores_walk_bit_for_bit(fused):
    """Ownership and slice buffers change memory traffic only: with every faster version off,
    the speed layer's walk gives the core's reference walk's gradients to the bit."""
    from tinygradx.fast import walk

    def grads(install):
        model, idx, tgt, _ = small_gpt_step(fused)
        if not install:
            walk.uninstall()
        try:
            with dispatch.switched_off(every=True):
                model(idx, tgt)[1].backward()
        finally:
            walk.install()
        return {n: p.grad.numpy() for n, p in model.named_parameters()}

    fast, core = grads(True), grads(False)
    assert fast.keys() == core.keys()
    for name in fast:
        assert np.array_equal(fast[name], core[name]), name
