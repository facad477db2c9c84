"""uint16, uint32 and uint64 as torch 2.13 has them: made, converted, printed, moved, indexed,
joined and compared for equality, a few ops computed on them, promotion only with floats, and
every other op refused by name (where torch has no kernel for them). Each call runs on the
look-alike and on torch (tests/oracle.py): the same values and dtypes, or both refusing.
"""
import pytest

from oracle import requires_torch, same

DTYPES = ("uint16", "uint32", "uint64")


def _x(m, dt):
    return m.tensor([1, 2, 3], dtype=getattr(m, dt))


CALLS = {
    # made, converted, read back
    "repr": lambda m, x: repr(x).replace("torch.", ""),
    "tolist": lambda m, x: x.tolist(), "item": lambda m, x: x[1].item(),
    "to_float": lambda m, x: x.float(), "to_long": lambda m, x: x.long(),
    "to_int32": lambda m, x: x.int(), "to_bool": lambda m, x: x.bool(),
    "from_float": lambda m, x: m.tensor([1.7, 2.0]).to(x.dtype),
    "zeros": lambda m, x: m.zeros(2, dtype=x.dtype), "full": lambda m, x: m.full(
        (2,), 7, dtype=x.dtype), "arange": lambda m, x: m.arange(4, dtype=x.dtype),
    "max_value": lambda m, x: m.tensor([2**16 - 1], dtype=x.dtype).long(),
    # moved, indexed, joined
    "reshape": lambda m, x: x.reshape(3, 1), "permute": lambda m, x: x.reshape(3, 1).t(),
    "expand": lambda m, x: x.reshape(3, 1).expand(3, 2), "slice": lambda m, x: x[1:],
    "index": lambda m, x: x[m.tensor([0, 2])], "mask": lambda m, x: x[m.tensor(
        [True, False, True])], "cat": lambda m, x: m.cat([x, x]),
    "stack": lambda m, x: m.stack([x, x]), "roll": lambda m, x: x.roll(1),
    "repeat": lambda m, x: x.repeat(2), "setitem": lambda m, x: _set(x),
    "fill_": lambda m, x: x.clone().fill_(5), "clone": lambda m, x: x.clone(),
    "where": lambda m, x: m.where(m.tensor([True, False, True]), x, x),
    "repeat_interleave": lambda m, x: x.repeat_interleave(2),
    # computed
    "mul": lambda m, x: x * x, "mul_scalar": lambda m, x: x * 2, "div": lambda m, x: x / x,
    "div_scalar": lambda m, x: x / 2, "prod": lambda m, x: x.prod(),
    "cumsum": lambda m, x: x.cumsum(0), "cumprod": lambda m, x: x.cumprod(0),
    "exp": lambda m, x: x.exp(), "sqrt": lambda m, x: x.sqrt(), "sin": lambda m, x: x.sin(),
    "sigmoid": lambda m, x: x.sigmoid(), "floor": lambda m, x: x.floor(),
    "round": lambda m, x: x.round(), "eq": lambda m, x: x == x, "ne": lambda m, x: x != 2,
    "bitwise_and": lambda m, x: x & x, "bitwise_or": lambda m, x: x | x,
    "xor": lambda m, x: x ^ x, "any": lambda m, x: x.any(), "all": lambda m, x: x.all(),
    "isnan": lambda m, x: x.isnan(), "add_float": lambda m, x: x + m.tensor([0.5, 1, 2]),
    # refused by torch (no kernel for these dtypes): refused here by name
    "add": lambda m, x: x + x, "add_scalar": lambda m, x: x + 1, "sub": lambda m, x: x - x,
    "neg": lambda m, x: -x, "pow": lambda m, x: x ** 2, "floordiv": lambda m, x: x // x,
    "remainder": lambda m, x: x % 2, "abs": lambda m, x: x.abs(), "sign": lambda m, x: x.sign(),
    "mean": lambda m, x: x.mean(), "max": lambda m, x: x.max(),
    "min": lambda m, x: x.min(), "amax": lambda m, x: x.amax(),
    "argmax": lambda m, x: x.argmax(), "lt": lambda m, x: x < x, "ge": lambda m, x: x >= 2,
    "maximum": lambda m, x: m.maximum(x, x), "clamp": lambda m, x: x.clamp(0, 2),
    "masked_fill": lambda m, x: x.masked_fill(m.tensor([True, False, True]), 0),
    "flip": lambda m, x: x.flip(0), "gather": lambda m, x: x.gather(0, m.tensor([0])),
    "topk": lambda m, x: x.topk(1), "matmul": lambda m, x: x @ x,
    "invert": lambda m, x: ~x, "lshift": lambda m, x: x << 1, "nonzero": lambda m, x: x.nonzero(),
    "var": lambda m, x: x.float().var() if False else x.var(),
    "count_nonzero": lambda m, x: m.count_nonzero(x), "tril": lambda m, x: x.reshape(3, 1).tril(),
    "index_select": lambda m, x: x.index_select(0, m.tensor([1])),
    # found by a wider sweep after the first version (each departed from torch then)
    "sum": lambda m, x: x.sum(), "sum_dim": lambda m, x: x.sum(0),
    "nansum": lambda m, x: x.nansum(),
    "sort": lambda m, x: tuple(x.sort()),
    "msort": lambda m, x: x.msort(), "diag": lambda m, x: x.diag(),
    "pow_float": lambda m, x: x ** 0.5, "clamp_float": lambda m, x: x.clamp(0.5, 2.5),
    "nan_to_num": lambda m, x: x.nan_to_num(), "mul_big_scalar": lambda m, x: x * (2**40),
    "logical_not": lambda m, x: x.logical_not(), "logical_and": lambda m, x: x.logical_and(x),
    "index_fill": lambda m, x: x.index_fill(0, m.tensor([0]), 1),
    "masked_select": lambda m, x: x.masked_select(m.tensor([True, False, True])),
    "take": lambda m, x: x.take(m.tensor([0])), "bincount": lambda m, x: x.bincount(),
    "index_put": lambda m, x: x.index_put((m.tensor([0]),), x[:1]),
    "linspace": lambda m, x: m.linspace(0, 4, 3, dtype=x.dtype),
    "eye": lambda m, x: m.eye(2, dtype=x.dtype),
    "negative_literal": lambda m, x: m.tensor([-1], dtype=x.dtype),
    "as_index": lambda m, x: m.ones(4)[x], "as_gather_index": lambda m, x: m.ones(4).gather(0, x),
    "as_embedding_index": lambda m, x: m.nn.functional.embedding(x, m.ones(4, 2)),
    "cat_int64": lambda m, x: m.cat([x, m.tensor([1])]),
    "uint64_above_int64": lambda m, x: m.tensor([2**63 + 5], dtype=m.uint64).item(),
    "uint64_above_int64_long": lambda m, x: m.tensor([2**63 + 5], dtype=m.uint64).long(),
    # found by a sweep of every torch.Tensor method, in-place method and torch function on
    # these dtypes (each departed before the fix)
    "sum_wraps": lambda m, x: m.tensor([2**64 - 1, 1], dtype=m.uint64).sum(),
    "sum_dtype": lambda m, x: m.sum(x.long(), dtype=x.dtype),
    "flip_rows": lambda m, x: x.reshape(3, 1).t().expand(2, 3).flip(0),
    "flip_inner": lambda m, x: x.reshape(3, 1).t().expand(2, 3).flip(1),
    "flip_column": lambda m, x: x.reshape(3, 1).flip(0),
    "logsumexp": lambda m, x: x.logsumexp(0), "gcd": lambda m, x: x.gcd(x),
    "trace": lambda m, x: x.diag().trace(), "searchsorted": lambda m, x: m.searchsorted(x, x),
    "isin": lambda m, x: m.isin(x, x), "logical_or_fn": lambda m, x: m.logical_or(x, x),
    "logical_not_fn": lambda m, x: m.logical_not(x),
    "tensor_split_by": lambda m, x: x.tensor_split(x[:1]),
    "repeat_interleave_by": lambda m, x: x.repeat_interleave(x),
    "bernoulli_": lambda m, x: x.clone().bernoulli_(), "vander": lambda m, x: m.vander(x),
    "amin": lambda m, x: x.amin(), "median": lambda m, x: x.median(),
    "cummax": lambda m, x: x.cummax(0), "triu": lambda m, x: x.diag().triu(),
    "diff": lambda m, x: x.diff(), "pow_float_tensor": lambda m, x: x.pow(m.tensor(0.5)),
    "rpow_float": lambda m, x: 0.5 ** x, "rpow_int": lambda m, x: 2 ** x,
    "clamp_int_bound": lambda m, x: x.clamp(min=1), "mul_scalar_negative": lambda m, x: x * -1,
    "mul_too_big_scalar": lambda m, x: x * 2**70, "argsort": lambda m, x: x.argsort(),
    "sort_descending": lambda m, x: tuple(x.sort(descending=True)),
    "as_0d_index": lambda m, x: m.ones(4)[x[1]],
    # promotion: only with floats
    "promote_int64": lambda m, x: x * m.tensor([1, 2, 3]),
    "promote_uint8": lambda m, x: x * m.tensor([1, 2, 3], dtype=m.uint8),
    "promote_bool": lambda m, x: x * m.tensor([True, False, True]),
}


def _set(x):
    y = x.clone()
    y[0] = 9
    return y


@requires_torch
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(CALLS))
def test_wide_unsigned_like_torch(name, dt):
    same(lambda m: CALLS[name](m, _x(m, dt)))


@requires_torch
def test_bfloat16_and_complex_refused_by_name():
    import tinygradx as tgx
    for name in ("bfloat16", "cfloat", "complex64"):
        with pytest.raises(TypeError, match=name):
            tgx.zeros(2, dtype=name)
    with pytest.raises(TypeError, match="numpy has no bfloat16"):
        tgx.ones(2).bfloat16()


@requires_torch
@pytest.mark.parametrize("dt", DTYPES)
def test_refusals_name_the_op_and_the_dtype(dt):
    """Where torch refuses, the refusal is one line (same() checks that) naming the dtype, and
    a missing kernel names the op the user called, not an inner one (min is not "max", topk
    not "gather", tril not "tri")."""
    from oracle import Raised, lookalike, run
    m = lookalike()
    for name, call in CALLS.items():
        got = run(call, m, _x(m, dt))
        if not isinstance(got, Raised) or name.startswith("uint64_"):
            continue
        msg = str(got.exc)
        assert dt in msg or "too big" in msg, f"{name}: {msg}"
        if "not implemented for" in msg:
            op = msg.split(":")[0]
            assert _ALIASES.get(name, name) in op or op in name, f"{name}: {msg}"


_ALIASES = {"add_scalar": "add", "floordiv": "floor_divide (//)", "remainder": "remainder (%)",
            "lt": "less", "ge": "greater_equal", "invert": "bitwise_not (~)", "lshift": "<<",
            "rpow_int": "pow", "clamp_int_bound": "clamp", "flip_inner": "flip",
            "flip_column": "flip",
            "logical_or_fn": "logical_or", "logical_not_fn": "logical_not",
            "repeat_interleave_by": "repeat_interleave", "tensor_split_by": "tensor_split"}


def test_python_ints_wrap_into_every_integer_dtype_as_torch():
    """A Python int operand out of the tensor's range wraps modulo 2**bits, as torch's does
    (numpy raises its own OverflowError); beyond 64 bits it is refused in one line."""
    import tinygradx as tgx
    assert (tgx.tensor([1, 2], dtype=tgx.int32) * 2**40).tolist() == [0, 0]
    assert (tgx.tensor([1, 2], dtype=tgx.uint8) * (2**40 + 3)).tolist() == [3, 6]
    assert (tgx.tensor([1, 2], dtype=tgx.uint32) * -1).tolist() == [2**32 - 1, 2**32 - 2]
    with pytest.raises(OverflowError, match="too big"):
        tgx.tensor([1], dtype=tgx.int64) * 2**64


_BIG = 2**40 + 3
INT_VALUES = {     # a Python int beyond the dtype: arithmetic wraps, these ops refuse it
    "where": lambda m, x: m.where(x > 1, x, _BIG), "where_neg": lambda m, x: m.where(x > 1, x, -1),
    "clamp": lambda m, x: x.clamp(max=_BIG), "clamp_neg": lambda m, x: x.clamp(max=-1),
    "clamp_min_neg": lambda m, x: x.clamp(min=-1), "fill_": lambda m, x: x.clone().fill_(_BIG),
    "fill_neg": lambda m, x: x.clone().fill_(-1),
    "masked_fill": lambda m, x: x.masked_fill(x > 1, _BIG),
    "masked_fill_neg": lambda m, x: x.masked_fill(x > 1, -1),
    "masked_fill_256": lambda m, x: x.masked_fill(x > 1, 256), "mul": lambda m, x: x * _BIG,
    "add": lambda m, x: x + _BIG, "clamp_float": lambda m, x: x.clamp(0.5, 1.5),
}


@requires_torch
@pytest.mark.parametrize("dt", ("int32", "uint8", "int64", "int16"))
@pytest.mark.parametrize("name", list(INT_VALUES))
def test_python_int_values_like_torch(name, dt):
    same(lambda m: INT_VALUES[name](m, m.tensor([1, 2], dtype=getattr(m, dt))))


def test_sums_of_unsigned_and_joins_promote_as_torch():
    """uint8 sums in int64 (numpy: uint64); cat/stack promote by torch's rule (float32 with
    int64 is float32; numpy's concatenate made float64)."""
    import tinygradx as tgx
    assert tgx.tensor([200, 100], dtype=tgx.uint8).sum().dtype == tgx.int64
    assert tgx.cat([tgx.tensor([1.0]), tgx.tensor([1])]).dtype == tgx.float32
    assert tgx.stack([tgx.tensor([1.0]), tgx.tensor([1])]).dtype == tgx.float32
    assert tgx.tensor([1, 2], dtype=tgx.int32).clamp(0.5, 1.5).dtype == tgx.float32
