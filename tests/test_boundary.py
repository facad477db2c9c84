"""The boundary lets no garbage in: every argument a user passes is checked where it enters.

Unsupported dtypes, dims out of range, bad loss targets and reductions, bad layer arguments and
bad checkpoint entries are refused in one line, before anything is computed or written; the
valid edge cases next to them keep working (and, for the losses, agree with PyTorch).
"""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import OpError, Tensor, nn

from helpers import assert_clear_error


def t(*shape):
    return Tensor(np.zeros(shape, dtype=np.float32))


# ------------------------------------------------------------------------------------------
# dtypes
# ------------------------------------------------------------------------------------------

BAD_ARRAYS = {"complex128": np.array([1 + 2j, 3]), "object": np.array([1, None], dtype=object),
              "<U1": np.array(["a", "b"]), "datetime64[D]": np.array(["2020-01-01"], "M8[D]"),
              "float128": np.array([1.0], np.longdouble)}
# uint16, uint32 and uint64 are tensors now, with torch 2.13's few ops (tests/ops/test_unsigned.py)


@pytest.mark.parametrize("name", sorted(BAD_ARRAYS))
@pytest.mark.parametrize("entry", ["Tensor", "tensor", "operand", "Parameter"])
def test_unsupported_array_dtypes_are_refused_everywhere(name, entry):
    arr = BAD_ARRAYS[name]
    if name == "float128" and arr.dtype == np.float64:
        pytest.skip("this platform's longdouble is float64")
    make = {"Tensor": Tensor, "tensor": tgx.tensor, "Parameter": nn.Parameter,
            "operand": lambda a: t(*a.shape) + a}[entry]
    with pytest.raises(TypeError) as err:
        make(arr)
    assert_clear_error(err, f"dtype {arr.dtype} is not supported", "float32, float64")
    assert len(str(err.value).splitlines()) == 1


def test_a_string_array_no_longer_fails_later_as_a_shape_error():
    with pytest.raises(TypeError, match=r"^Tensor: dtype <U1 is not supported; use one of "
                                        r"float32, float64, float16, int64, int32, int16, int8, "
                                        r"uint8, bool, uint16, uint32, uint64$"):
        Tensor(np.array(["a", "b"])) + 1


@pytest.mark.parametrize("dtype", [np.complex64, np.longdouble, object, "U3"])
def test_unsupported_dtype_arguments(dtype):
    for make in (lambda: Tensor([1.0], dtype=dtype), lambda: tgx.zeros(2, dtype=dtype),
                 lambda: t(2).to(dtype)):
        with pytest.raises(TypeError) as err:
            make()
        assert_clear_error(err, "dtype")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16,
                                   np.int32, np.int64, np.uint8, np.bool_])
def test_supported_dtypes_are_kept(dtype):
    arr = np.zeros(3, dtype)
    assert Tensor(arr).dtype == dtype
    assert Tensor(arr).numpy() is arr                 # no copy on the hot path


def test_other_inputs():
    assert Tensor(np.arange(3, dtype=">f8")).dtype == np.float64   # big-endian: native copy
    assert Tensor(np.array([1, 2], np.uint32), dtype="int64").dtype == np.int64  # explicit
    with pytest.raises(ValueError, match="ragged nested list"):
        Tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="complex128 is not supported"):
        Tensor([1 + 2j])
    with pytest.raises(TypeError, match="randn: dtype must be a floating-point dtype"):
        tgx.randn(2, dtype="int64")


@pytest.mark.parametrize("call,msg", [
    (lambda: tgx.zeros(-1, 2), "zeros: size (-1, 2) has a negative dim"),
    (lambda: tgx.ones(2.5), "ones: size must be ints"),
    (lambda: tgx.full((-1,), 1.0), "full: size (-1,) has a negative dim"),
    (lambda: tgx.eye(-2), "eye: size (-2,) has a negative dim"),
    (lambda: tgx.randint(5, 2, (3,)), "randint: low must be below high"),
    (lambda: tgx.arange(0, 5, 0), "arange: step must not be zero"),
])
def test_constructor_arguments(call, msg):
    with pytest.raises((TypeError, ValueError)) as err:
        call()
    assert_clear_error(err, msg)


# ------------------------------------------------------------------------------------------
# dims: one check, one message
# ------------------------------------------------------------------------------------------

DIM_CALLS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "var": lambda x, d: x.var(d),
    "std": lambda x, d: x.std(d), "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d),
    "max": lambda x, d: x.max(d), "min": lambda x, d: x.min(d),
    "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: x.argmin(d),
    "softmax": lambda x, d: x.softmax(d), "log_softmax": lambda x, d: x.log_softmax(d),
    "F.softmax": lambda x, d: F.softmax(x, d), "F.log_softmax": lambda x, d: F.log_softmax(x, d),
    "logsumexp": lambda x, d: x.logsumexp(d), "transpose": lambda x, d: x.transpose(0, d),
    "permute": lambda x, d: x.permute(0, d), "squeeze": lambda x, d: x.squeeze(d),
    "flatten": lambda x, d: x.flatten(d), "split": lambda x, d: x.split(1, d),
    "chunk": lambda x, d: x.chunk(2, d), "size": lambda x, d: x.size(d),
    "cat": lambda x, d: tgx.cat([x, x], d),
}


@pytest.mark.parametrize("name", sorted(DIM_CALLS))
@pytest.mark.parametrize("dim", [5, -3])
def test_every_dim_argument_has_one_message(name, dim):
    with pytest.raises(OpError) as err:
        DIM_CALLS[name](t(2, 3), dim)
    op = name.replace("F.", "")
    op = {"std": "var", "amax": "max", "amin": "max", "logsumexp": "logsumexp"}.get(op, op)
    assert_clear_error(err, f"dim {dim} is out of range for a 2-d tensor (expected -2..1)")
    assert str(err.value).startswith(op), str(err.value)


@pytest.mark.parametrize("call,msg", [
    (lambda: t(2, 3).unsqueeze(5), "unsqueeze: dim 5 is out of range for a 2-d tensor "
                                   "(expected -3..2)"),
    (lambda: tgx.stack([t(2, 3), t(2, 3)], dim=77), "stack: dim 77 is out of range for a 2-d "
                                                    "tensor (expected -3..2)"),
    (lambda: t(2, 3).transpose(0, 1.0), "transpose: dim must be an int, got 1.0"),
    (lambda: t(2, 3).size(True), "size: dim must be an int, got True"),
    (lambda: t(2, 3).split(0), "split: split_size must be a positive int, got 0"),
    (lambda: t(2, 3).split(-1), "split: split_size must be a positive int, got -1"),
    (lambda: t(2, 3).split([2, -1, 2], 1), "split: section sizes must be non-negative ints"),
    (lambda: t(2, 3).chunk(0), "chunk: chunks must be a positive int, got 0"),
    (lambda: t(3).expand(-1, 3), "-1 is only allowed for an existing dim"),
    (lambda: t(2, 3, 4).flatten(1, 0), "flatten: start_dim 1 comes after end_dim 0"),
    (lambda: tgx.cat([t(), t()]), "cat: 0-d tensors cannot be concatenated"),
    (lambda: tgx.cat(t(2, 3)), "cat: expected a sequence of tensors"),
])
def test_other_dim_and_size_arguments(call, msg):
    with pytest.raises((OpError, TypeError)) as err:
        call()
    assert_clear_error(err, msg)


def test_valid_dims_still_work():
    x = Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.permute(-1, 0, 1).shape == (4, 2, 3)
    assert x.permute(np.int64(2), 0, 1).shape == (4, 2, 3)
    assert x.sum(np.int64(-1)).shape == (2, 3)
    assert x.unsqueeze(-4).shape == (1, 2, 3, 4) and x.unsqueeze(3).shape == (2, 3, 4, 1)
    assert [p.shape for p in x.split(2, dim=-1)] == [(2, 3, 2), (2, 3, 2)]
    assert [p.shape for p in x.chunk(5, dim=1)] == [(2, 1, 4)] * 3
    assert tgx.stack([x, x], dim=-1).shape == (2, 3, 4, 2)
    assert tgx.cat([x, x], dim=-2).shape == (2, 6, 4)
    assert x.flatten(-2).shape == (2, 12) and x.size(-1) == 4
    assert t(3).expand(2, -1).shape == (2, 3)
    assert Tensor(np.float32(2.0)).sum(0).item() == 2.0     # a 0-d tensor takes dim 0, -1


# ------------------------------------------------------------------------------------------
# losses
# ------------------------------------------------------------------------------------------

LOSSES = ["cross_entropy", "nll_loss", "cross_entropy_composite"]


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_targets_are_checked(loss):
    f = getattr(F, loss)
    for target, fragments in [([-1, 0], ("target -1", "0..2", "ignore_index=-100")),
                              ([3, 0], ("target 3", "3 classes")),
                              ([1, 0, 1], ("(2, 3)", "(2,)", "(3,)")),
                              (np.array([[1], [0]]), ("(2, 1)",))]:
        with pytest.raises(OpError) as err:
            f(t(2, 3), Tensor(np.asarray(target)))
        assert_clear_error(err, loss, *fragments)
    for target in ([1.0, 0.0], np.array([True, False])):
        with pytest.raises(OpError) as err:
            f(t(2, 3), Tensor(np.asarray(target)))
        assert_clear_error(err, loss, "integer")


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("reduction", ["avg", None, "MEAN", ""])
def test_loss_reduction_is_checked(loss, reduction):
    with pytest.raises(ValueError) as err:
        getattr(F, loss)(t(2, 3), tgx.tensor([1, 0]), reduction=reduction)
    assert_clear_error(err, loss, "reduction must be 'mean', 'sum' or 'none'")


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_inputs_are_checked(loss):
    f = getattr(F, loss)
    with pytest.raises(TypeError, match="ignore_index must be an int"):
        f(t(2, 3), tgx.tensor([1, 0]), ignore_index=1.5)
    with pytest.raises(TypeError, match="floating-point"):
        f(tgx.tensor([[1, 2, 3]]), tgx.tensor([1]))
    with pytest.raises(OpError, match="0-d"):
        f(Tensor(np.float32(1.0)), tgx.tensor(1))


def test_ignore_index_may_be_out_of_range():
    logp = F.log_softmax(Tensor(np.random.default_rng(0).standard_normal((3, 4))), dim=1)
    for ignore in (-100, -1, 7):
        out = F.nll_loss(logp, tgx.tensor([ignore, 2, 1]), ignore_index=ignore)
        ref = -(logp.numpy()[1, 2] + logp.numpy()[2, 1]) / 2
        np.testing.assert_allclose(out.item(), ref)


@pytest.mark.parametrize("shape,tshape", [((4, 3), (4,)), ((3,), ()), ((2, 3, 5), (2, 5)),
                                          ((2, 3, 4, 5), (2, 4, 5))])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_layouts_match_torch(shape, tshape, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    tgt = rng.integers(0, 3, tshape)
    if tgt.ndim:
        tgt.flat[0] = -100
    a = Tensor(x, requires_grad=True)
    out = F.nll_loss(a, Tensor(tgt), reduction=reduction)
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.nll_loss(xt, torch.tensor(tgt), reduction=reduction)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), xt.grad.numpy(), atol=1e-12)


def test_embedding_padding_idx():
    w = Tensor(np.ones((5, 2), np.float32), requires_grad=True)
    F.embedding(tgx.tensor([4, 1]), w, padding_idx=-1).sum().backward()
    assert w.grad.numpy()[4].sum() == 0 and w.grad.numpy()[1].sum() == 2   # -1 is row 4
    with pytest.raises(OpError) as err:
        F.embedding(tgx.tensor([0]), w, padding_idx=9)
    assert_clear_error(err, "embedding", "padding_idx", "-5..4", "9")


# ------------------------------------------------------------------------------------------
# nn constructors
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,fragments", [
    (lambda: nn.Linear(-1, 3), ("Linear", "in_features", ">= 0")),
    (lambda: nn.Linear(3, -1), ("Linear", "out_features", ">= 0")),
    (lambda: nn.Linear(2.5, 3), ("Linear", "in_features", "int")),
    (lambda: nn.Embedding(0, 3), ("Embedding", "num_embeddings")),
    (lambda: nn.Embedding(5, 3, padding_idx=5), ("Embedding", "padding_idx", "-5..4")),
    (lambda: nn.Embedding(5, 3, padding_idx=-6), ("Embedding", "padding_idx")),
    (lambda: nn.Embedding(5, 3, padding_idx=1.0), ("Embedding", "padding_idx", "int")),
    (lambda: nn.LayerNorm(0), ("LayerNorm", "normalized_shape")),
    (lambda: nn.LayerNorm(()), ("LayerNorm", "normalized_shape")),
    (lambda: nn.LayerNorm((4, -1)), ("LayerNorm", "normalized_shape")),
    (lambda: nn.LayerNorm("4"), ("LayerNorm", "normalized_shape")),
    (lambda: nn.LayerNorm(4, eps=-1), ("LayerNorm", "eps")),
    (lambda: nn.Dropout(1.5), ("Dropout", "p", "[0, 1]")),
    (lambda: nn.Dropout("0.1"), ("Dropout", "p", "number")),
    (lambda: nn.GELU("exact"), ("GELU", "approximate")),
    (lambda: nn.MultiHeadAttention(10, 3), ("MultiHeadAttention", "not divisible")),
    (lambda: nn.MultiHeadAttention(8, 0), ("MultiHeadAttention", "num_heads", "positive")),
    (lambda: nn.MultiHeadAttention(8, 2, dropout=1.0), ("MultiHeadAttention", "dropout")),
    (lambda: nn.MultiHeadAttention(8, 2, kdim=0), ("MultiHeadAttention", "kdim")),
    (lambda: nn.Sequential(3), ("Sequential", "layer 0")),
])
def test_layer_constructors_check_their_arguments(make, fragments):
    with pytest.raises((TypeError, ValueError)) as err:
        make()
    assert_clear_error(err, *fragments)


def test_valid_constructor_edges():
    assert nn.Embedding(5, 3, padding_idx=-1).padding_idx == 4
    assert nn.Embedding(5, 3, padding_idx=np.int64(2)).padding_idx == 2
    assert nn.LayerNorm([2, 3]).normalized_shape == (2, 3)
    assert nn.Dropout(0).p == 0 and nn.Dropout(1.0).p == 1.0
    assert nn.MultiHeadAttention(8, 2, dropout=0.1).head_dim == 4


# ------------------------------------------------------------------------------------------
# load_state_dict: all or nothing
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,fragment", [
    (np.array(["a", "b"]), "not numeric"), (np.array([1 + 1j, 2j]), "complex128"),
    ([None, None], "not numeric"), (np.array([1, 2], object), "not numeric"),
    (np.zeros(3, np.float32), "size mismatch"),
])
def test_load_state_dict_is_all_or_nothing(bad, fragment):
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    sd = {k: np.full(v.shape, 7.0, np.float32) for k, v in net.state_dict().items()}
    sd["1.bias"] = bad
    for strict in (True, False):
        with pytest.raises(nn.StateDictError) as err:
            net.load_state_dict(sd, strict=strict)
        assert_clear_error(err, "'1.bias'", fragment)
        for k, v in net.state_dict().items():
            np.testing.assert_array_equal(v.numpy(), before[k])   # nothing was written


def test_load_state_dict_lists_every_kind_of_problem_in_one_error():
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    sd = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    del sd["0.bias"]
    sd["extra"] = np.zeros(1)
    sd["0.weight"] = np.zeros((3, 3))
    sd["1.bias"] = np.array(["x", "y"])
    with pytest.raises(nn.StateDictError) as err:
        net.load_state_dict(sd)
    msg = str(err.value)
    assert "4 problem(s)" in msg
    for fragment in ("missing key '0.bias'", "unexpected key 'extra'",
                     "size mismatch for '0.weight'", "dtype mismatch for '1.bias'"):
        assert fragment in msg


def test_load_state_dict_dtype_kinds():
    class M(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(2, 2)
            self.register_buffer("ids", Tensor(np.arange(3)))

    m = M()
    sd = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    with pytest.raises(nn.StateDictError, match=r"dtype mismatch for 'ids'.*float64.*int64"):
        m.load_state_dict(dict(sd, ids=np.array([0.5, 1.5, 2.7])))
    m.load_state_dict(dict(sd, ids=np.array([2, 1, 0], np.int32)))    # ints into ints: fine
    m.load_state_dict(dict(sd, **{"lin.bias": np.array([1, 2])}))     # ints into floats: fine
    inf = np.array([-np.inf, np.nan])
    m.load_state_dict(dict(sd, **{"lin.bias": inf}))                  # non-finite values load
    np.testing.assert_array_equal(m.lin.bias.detach().numpy(), inf.astype(np.float32))
    with pytest.raises(TypeError, match="expected a mapping"):
        m.load_state_dict([("lin.bias", np.zeros(2))])
