"""tinygradx.parallel: large element-wise work split over threads gives the same bits as one
thread (the accelerator path and the plain path are both run here, in one process)."""
import threading

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import optim
from tinygradx.fast import parallel


@pytest.fixture
def threads():
    old = parallel.set_threads(2)
    yield
    parallel.set_threads(old)


def test_rows_covers_every_row_once_in_blocks(threads):
    a = np.zeros((1001, 80))
    seen = []

    def fn(block):
        seen.append((block.shape[0], threading.current_thread().name))
        block += 1

    parallel.rows(fn, a)
    assert np.all(a == 1)
    assert sorted(n for n, _ in seen) == [500, 501]
    assert len({name for _, name in seen}) == 2          # the caller and one pool thread


def test_a_block_that_splits_again_runs_inline_on_its_thread(threads):
    # a worker waiting on its own one-thread pool would hang; the caller's block would wait
    # for the worker's: both run the inner split inline
    a = np.zeros((1000, 200))
    inner = []

    def outer(block):
        def fn(b):
            inner.append((b.shape[0], threading.current_thread().name))
            b += 1
        parallel.rows(fn, block, min_elements=1)

    done = threading.Event()
    t = threading.Thread(target=lambda: (parallel.rows(outer, a), done.set()), daemon=True)
    t.start()
    assert done.wait(timeout=20), "parallel.rows inside parallel.rows did not return"
    assert np.all(a == 1)
    assert sorted(n for n, _ in inner) == [500, 500]       # one inner call per outer block
    assert len({name for _, name in inner}) == 2


def test_small_arrays_and_one_thread_run_inline():
    calls = []
    parallel.rows(lambda b: calls.append(b.shape), np.zeros((4, 4)))
    old = parallel.set_threads(1)
    try:
        parallel.rows(lambda b: calls.append(b.shape), np.zeros((1000, 100)))
    finally:
        parallel.set_threads(old)
    assert calls == [(4, 4), (1000, 100)]


def test_an_error_in_a_block_reaches_the_caller(threads):
    def fn(block):
        if np.any(block > 0):
            raise ValueError("boom in a block")

    a = np.zeros((1000, 100))
    a[600:] = 1
    with pytest.raises(ValueError, match="boom"):
        parallel.rows(fn, a)


def _train(n_threads, steps=2, dropout=0.1):
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    old = parallel.set_threads(n_threads)
    try:
        tgx.manual_seed(0)
        model = GPT(GPTConfig(block_size=64, vocab_size=32, n_layer=2, n_head=4, n_embd=64,
                              dropout=dropout))
        opt = optim.AdamW(model.parameters(), lr=1e-3)
        idx = np.random.default_rng(0).integers(0, 32, (8, 65))
        for _ in range(steps):
            _, loss = model(idx[:, :-1], idx[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return {k: np.array(v.numpy() if hasattr(v, "numpy") else v)
                for k, v in model.state_dict().items()}
    finally:
        parallel.set_threads(old)


@pytest.mark.parametrize("dropout", [0.1, 0.0])
def test_gpt_training_steps_are_bitwise_identical_with_and_without_threads(dropout):
    # GELU (512 x 256), attention scores (8, 4, 64, 64) and Adam on c_fc (256 x 64 = 16k,
    # below the split size) and wte: the split paths and the plain ones all run. Attention's
    # forward runs in batch blocks either way; its backward only without dropout
    one, two = _train(1, dropout=dropout), _train(2, dropout=dropout)
    assert one.keys() == two.keys()
    for k in one:
        assert np.array_equal(one[k], two[k]), k


def test_every_block_has_finished_when_an_error_is_raised(threads):
    import time
    a = np.zeros((1000, 100))

    def fn(block):
        if block is not None and block.base is a and block.__array_interface__["data"][0] \
                == a.__array_interface__["data"][0]:
            raise ValueError("first block fails at once")
        time.sleep(0.2)
        block += 1                                   # the other block, later

    with pytest.raises(ValueError, match="first block"):
        parallel.rows(fn, a)
    assert a[500:].sum() == 500 * 100                # written before rows() raised
    time.sleep(0.3)
    assert a.sum() == 500 * 100                      # and nothing changes afterwards


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_gets_a_fresh_pool(threads):
    import os
    import time
    parallel.rows(lambda b: b.__iadd__(1), np.zeros((1000, 100)))   # the parent's pool exists
    pid = os.fork()
    if pid == 0:                                     # the child: must not wait forever
        try:
            parallel.rows(lambda b: b.__iadd__(1), np.zeros((1000, 100)))
            os._exit(0)
        except BaseException:
            os._exit(1)
    for _ in range(100):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on the inherited thread pool")
    assert os.WEXITSTATUS(status) == 0
