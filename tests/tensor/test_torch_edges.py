"""Edges where tinygradx once departed from torch without a word: a uint8 index (torch reads a
bool mask), a fill value with dims (torch refuses), a split size of 0 (torch refuses). Each is
checked against torch when it is installed, and against the values torch gives otherwise."""
import warnings

import numpy as np
import pytest

import tinygradx as tgx

try:
    import torch
except ImportError:          # the expected values below are torch's
    torch = None


def _x(m):
    return m.arange(6.0).reshape(2, 3)


def _u8(m, values):
    return m.tensor(np.array(values, np.uint8)) if m is tgx else \
        torch.tensor(values, dtype=torch.uint8)


def _libs():
    return [tgx] + ([torch] if torch is not None else [])


@pytest.mark.parametrize("index, want", [([1, 0], [[0.0, 1.0, 2.0]]),
                                         ([0, 1], [[3.0, 4.0, 5.0]])])
def test_a_uint8_index_is_a_bool_mask_with_a_warning(index, want):
    for m in _libs():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _x(m)[_u8(m, index)]
        assert got.numpy().tolist() == want, m.__name__
        assert any("uint8" in str(w.message) for w in caught), m.__name__
    with pytest.warns(UserWarning, match="uint8"):
        assert tuple(_x(tgx)[_u8(tgx, 1)].shape) == (1, 2, 3)    # a 0-d mask adds a dim
    with pytest.warns(UserWarning, match="uint8"):
        got = _x(tgx)[:, np.array([1, 0, 1], np.uint8)]
    assert got.numpy().tolist() == [[0.0, 2.0], [3.0, 5.0]]


def test_setting_through_a_uint8_mask():
    for m in _libs():
        with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
            _x(m)[_u8(m, [1, 0])] = 9.0                         # one value: masked_fill_
        x = _x(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x[_u8(m, [1, 0])] = m.ones(3)                        # a tensor: index_put_
        assert x.numpy().tolist() == [[1.0, 1.0, 1.0], [3.0, 4.0, 5.0]], m.__name__


def test_a_fill_value_must_be_0_d():
    for m in _libs():
        with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
            m.zeros(3).fill_(m.ones(1))
        assert m.zeros(3).fill_(m.tensor(2.0)).numpy().tolist() == [2.0, 2.0, 2.0]
    mask = tgx.tensor([True, False, True])
    with pytest.raises(tgx.OpError, match="0-d tensor"):
        tgx.zeros(3).masked_fill(mask, tgx.ones(1))
    with pytest.raises(tgx.OpError, match="0-d tensor"):
        tgx.zeros(3).masked_fill_(mask, tgx.ones(2))
    assert tgx.zeros(3).masked_fill(mask, tgx.tensor(5.0)).numpy().tolist() == [5.0, 0.0, 5.0]
    if torch is not None:
        with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
            torch.zeros(3).masked_fill(torch.tensor([True, False, True]), torch.ones(1))


@pytest.mark.parametrize("name, shape", [("hsplit", (2, 4)), ("vsplit", (2, 4)),
                                         ("dsplit", (2, 4, 6))])
def test_a_split_size_of_0_is_refused(name, shape):
    with pytest.raises(tgx.OpError, match="not divisible by the split size 0"):
        getattr(tgx, name)(tgx.zeros(*shape), 0)
    if torch is not None:
        with pytest.raises(RuntimeError, match="split_size 0"):
            getattr(torch, name)(torch.zeros(*shape), 0)
