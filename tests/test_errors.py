"""Errors name the op, the shapes and what was expected, never a bare numpy traceback.

Each test asserts on the message text and (assert_clear_error) that the exception was raised
by tinygradx itself, with no numpy frame at the top of the traceback.
"""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as F
from tinygradx import OpError, Tensor, nn

from helpers import assert_clear_error


def t(*shape):
    return Tensor(np.zeros(shape, dtype=np.float32))


def test_matmul_inner_dimensions():
    with pytest.raises(OpError) as err:
        t(2, 5, 8) @ t(7, 8)
    assert_clear_error(err, "matmul", "(2, 5, 8) @ (7, 8)", "inner dimensions 8 and 7 differ")
    assert str(err.value) == "matmul: (2, 5, 8) @ (7, 8): inner dimensions 8 and 7 differ"


@pytest.mark.parametrize("a,b", [((3,), (4, 2)), ((2, 3), (4,)), ((2, 3, 4), (5, 4, 2))],
                         ids=["vec-mat", "mat-vec", "batch"])
def test_matmul_other_mismatches(a, b):
    with pytest.raises(OpError) as err:
        t(*a) @ t(*b)
    assert_clear_error(err, "matmul", str(a), str(b))


def test_matmul_of_a_scalar():
    with pytest.raises(OpError) as err:
        t(2, 3) @ 2.0
    assert_clear_error(err, "matmul", "at least 1 dim")


@pytest.mark.parametrize("op,name", [(lambda a, b: a + b, "add"), (lambda a, b: a * b, "mul"),
                                     (lambda a, b: a - b, "sub"), (lambda a, b: a / b, "div"),
                                     (tgx.maximum, "maximum")])
def test_non_broadcastable_shapes_name_both(op, name):
    with pytest.raises(OpError) as err:
        op(t(2, 5, 8), t(7, 8))
    assert_clear_error(err, f"{name}:", "(2, 5, 8)", "(7, 8)", "not broadcastable")


def test_where_shapes():
    with pytest.raises(OpError) as err:
        tgx.where(Tensor(np.ones((2, 3), bool)), t(4, 3), t(3))
    assert_clear_error(err, "where", "(2, 3)", "(4, 3)")


@pytest.mark.parametrize("call,name", [
    (lambda x: x.sum(dim=5), "sum"), (lambda x: x.mean(dim=-4), "mean"),
    (lambda x: x.amax(dim=3), "max"), (lambda x: x.var(dim=3), "var"),
    (lambda x: x.logsumexp(dim=3), "logsumexp"), (lambda x: x.max(dim=3), "max"),
    (lambda x: x.argmax(dim=3), "argmax"), (lambda x: x.transpose(0, 3), "transpose"),
    (lambda x: x.squeeze(4), "squeeze"), (lambda x: x.unsqueeze(5), "unsqueeze"),
    (lambda x: x.flatten(0, 7), "flatten"), (lambda x: F.softmax(x, dim=3), "softmax"),
    (lambda x: F.log_softmax(x, dim=-4), "log_softmax"),
])
def test_bad_dim(call, name):
    with pytest.raises(OpError) as err:
        call(t(2, 3, 4))
    assert_clear_error(err, f"{name}", "out of range")
    assert str(err.value).startswith(name)


def test_repeated_and_float_dims():
    with pytest.raises(OpError) as err:
        t(2, 3).sum(dim=(1, -1))
    assert_clear_error(err, "sum", "repeats")
    with pytest.raises(OpError) as err:
        t(2, 3).sum(dim=1.0)
    assert_clear_error(err, "sum", "dim must be an int")


def test_bad_permutation():
    with pytest.raises(OpError) as err:
        t(2, 3).permute(0, 0)
    assert_clear_error(err, "permute", "(0, 0)", "not a permutation", "(2, 3)")


@pytest.mark.parametrize("index", [1.5, np.float32(0.0), np.array([0.5, 1.0]),
                                   (0, 1.0), Tensor([0.0])])
def test_float_index(index):
    with pytest.raises(OpError) as err:
        t(3, 4)[index]
    assert_clear_error(err, "getitem", "float", "(3, 4)")


def test_index_out_of_range():
    with pytest.raises(OpError) as err:
        t(3, 4)[5]
    assert_clear_error(err, "getitem", "(3, 4)", "out of bounds")


@pytest.mark.parametrize("make", [lambda: Tensor([1, 2], requires_grad=True),
                                  lambda: tgx.arange(3).requires_grad_(),
                                  lambda: Tensor(np.array([True]), requires_grad=True)])
def test_requires_grad_on_a_non_float_tensor(make):
    with pytest.raises(TypeError) as err:
        make()
    assert_clear_error(err, "floating-point")


def test_reshape_to_a_wrong_size():
    with pytest.raises(OpError) as err:
        t(2, 3).reshape(4, 2)
    assert_clear_error(err, "reshape", "(2, 3)", "6 elements", "(4, 2)")
    with pytest.raises(OpError) as err:
        t(2, 3).view(-1, 4)
    assert_clear_error(err, "reshape", "(-1, 4)")


def test_expand_cat_stack_split():
    with pytest.raises(OpError) as err:
        t(2, 3).expand(3, 3)
    assert_clear_error(err, "expand", "(2, 3)", "(3, 3)")
    with pytest.raises(OpError) as err:
        tgx.cat([t(2, 3), t(3, 2)], dim=0)
    assert_clear_error(err, "cat", "(2, 3)", "(3, 2)", "dim 0")
    with pytest.raises(OpError) as err:
        tgx.stack([t(2, 3), t(3, 2)])
    assert_clear_error(err, "stack", "same shape", "(2, 3)", "(3, 2)")
    with pytest.raises(OpError) as err:
        tgx.cat([])
    assert_clear_error(err, "cat", "non-empty")
    with pytest.raises(OpError) as err:
        t(2, 3).split([1, 1], dim=1)
    assert_clear_error(err, "split", "[1, 1]", "size 3")


def test_cross_entropy_target_shape():
    with pytest.raises(OpError) as err:
        F.cross_entropy(t(4, 3), tgx.tensor([1, 2]))
    assert_clear_error(err, "cross_entropy", "(4, 3)", "(4,)", "(2,)")
    with pytest.raises(OpError) as err:
        F.cross_entropy(t(2, 5, 7), tgx.zeros(2, 5, dtype="int64"))
    assert_clear_error(err, "cross_entropy", "(2, 5, 7)", "(2, 7)", "class dim")


def test_cross_entropy_class_out_of_range_and_bad_target_dtype():
    with pytest.raises(OpError) as err:
        F.cross_entropy(t(4, 3), tgx.tensor([1, 2, 3, 0]))
    assert_clear_error(err, "cross_entropy", "target 3", "3 classes", "0..2")
    with pytest.raises(OpError) as err:
        F.cross_entropy(t(2, 3), tgx.tensor([-1, 0]))
    assert_clear_error(err, "cross_entropy", "target -1")
    with pytest.raises(OpError) as err:
        F.cross_entropy(t(2, 3), tgx.tensor([1.0, 0.0]))
    assert_clear_error(err, "cross_entropy", "integer", "float32")


def test_cross_entropy_bad_arguments():
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(t(2, 3), tgx.tensor([1, 0]), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(t(2, 3), tgx.tensor([1, 0]), label_smoothing=1.5)


def test_layer_norm_wrong_normalized_shape():
    with pytest.raises(OpError) as err:
        F.layer_norm(t(2, 4), (5,))
    assert_clear_error(err, "layer_norm", "(2, 4)", "(5,)")
    with pytest.raises(OpError) as err:
        F.layer_norm(t(2, 3, 4), (2, 4))
    assert_clear_error(err, "layer_norm", "(2, 3, 4)", "(2, 4)")
    with pytest.raises(OpError) as err:
        F.layer_norm(t(2, 4), (4,), weight=t(3))
    assert_clear_error(err, "layer_norm", "weight", "(3,)", "(4,)")
    with pytest.raises(OpError) as err:
        nn.LayerNorm(5)(t(2, 4))
    assert_clear_error(err, "layer_norm", "(5,)")


def test_embedding_index_out_of_range_and_dtype():
    with pytest.raises(OpError) as err:
        F.embedding(tgx.tensor([0, 7]), t(5, 2))
    assert_clear_error(err, "embedding", "index 7", "5 rows", "(5, 2)")
    with pytest.raises(OpError) as err:
        nn.Embedding(5, 2)(tgx.tensor([[1, -1]]))
    assert_clear_error(err, "embedding", "index -1")
    with pytest.raises(OpError) as err:
        F.embedding(tgx.tensor([0.0, 1.0]), t(5, 2))
    assert_clear_error(err, "embedding", "integer", "float32")


def test_masked_fill_mask():
    with pytest.raises(TypeError) as err:
        t(2, 3).masked_fill(tgx.tensor([1, 0, 1]), 0.0)
    assert_clear_error(err, "masked_fill", "bool", "int64")
    with pytest.raises(OpError) as err:
        t(2, 3).masked_fill(Tensor(np.array([True, False])), 0.0)
    assert_clear_error(err, "masked_fill", "(2,)", "(2, 3)")
    with pytest.raises(TypeError) as err:
        tgx.where(tgx.tensor([1, 0, 1]), t(3), t(3))
    assert_clear_error(err, "where", "bool")


def test_other_argument_errors():
    with pytest.raises(ValueError) as err:
        t(2).gelu("exact")
    assert_clear_error(err, "gelu", "'none' or 'tanh'")
    with pytest.raises(TypeError) as err:
        tgx.tensor([1, 2]).mean()
    assert_clear_error(err, "mean", "floating-point", "int64")
    with pytest.raises(OpError) as err:
        t(3).triu()
    assert_clear_error(err, "tri", "at least 2 dims", "(3,)")
    with pytest.raises(TypeError) as err:
        Tensor("abc")
    assert_clear_error(err, "cannot make a tensor", "str")
    with pytest.raises(ValueError) as err:
        t(2).clamp()
    assert_clear_error(err, "clamp", "min", "max")
    with pytest.raises(ValueError) as err:
        F.dropout(t(2), p=1.5)
    assert_clear_error(err, "dropout", "[0, 1]")
    with pytest.raises(ValueError) as err:
        bool(t(2))
    assert_clear_error(err, "ambiguous", "(2,)")


# ------------------------------------------------------------------------------------------
# inside nn.Module: the error names the module path
# ------------------------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self, d_in, d_out):
        self.w = nn.Parameter(np.ones((d_in, d_out), np.float32))

    def forward(self, x):
        return x @ self.w


class Net(nn.Module):
    def __init__(self):
        self.blocks = nn.ModuleList([Block(8, 8), Block(7, 8)])
        self.head = nn.Linear(8, 3)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.norm(self.head(x))


def test_op_error_inside_a_module_names_the_module_path():
    with pytest.raises(OpError) as err:
        Net()(t(2, 5, 8))
    assert_clear_error(err, "matmul (in blocks.1)", "(2, 5, 8) @ (7, 8)",
                       "inner dimensions 8 and 7 differ")


def test_layer_errors_name_the_module_path():
    net = Net()
    net.blocks = nn.ModuleList([Block(8, 8), Block(8, 8)])
    with pytest.raises(OpError) as err:
        net(t(2, 5, 8))
    assert_clear_error(err, "layer_norm (in norm)", "(2, 5, 3)", "(4,)")
    seq = nn.Sequential(nn.Linear(4, 3), nn.GELU(), nn.Linear(4, 2))
    with pytest.raises(OpError) as err:
        seq(t(2, 4))
    assert_clear_error(err, "Linear at 2", "(2, 3)", "in_features=4")


def test_attention_mask_shape_error_names_the_module():
    class Wrap(nn.Module):
        def __init__(self):
            self.attn = nn.MultiHeadAttention(8, 2)

        def forward(self, x, kpm):
            return self.attn(x, x, x, key_padding_mask=kpm)

    with pytest.raises(OpError) as err:
        Wrap()(t(2, 3, 8), np.zeros((2, 4), bool))
    assert_clear_error(err, "MultiHeadAttention at attn", "(2, 4)", "(2, 3)")


def test_masked_fill_mask_that_does_not_broadcast():
    # a larger mask broadcasts the input up to it, as torch: (1,) with (2,) gives (2,)
    assert t(1).masked_fill(np.array([True, False]), 0.0).shape == (2,)
    with pytest.raises(OpError, match=r"masked_fill: mask of shape \(2,\) does not broadcast "
                                      r"to the input shape \(3,\)"):
        t(3).masked_fill(np.array([True, False]), 0.0)


# ------------------------------------------------------------------------------------------
# the boundary (more in test_boundary.py)
# ------------------------------------------------------------------------------------------

def test_unsupported_dtype_is_refused_at_the_constructor():
    with pytest.raises(TypeError) as err:
        Tensor(np.array(["a", "b"]))
    assert_clear_error(err, "Tensor: dtype <U1 is not supported", "float32")
    with pytest.raises(TypeError) as err:
        Tensor(np.zeros(2, complex))
    assert_clear_error(err, "Tensor: dtype complex128 is not supported")


def test_nll_loss_target_out_of_range():
    with pytest.raises(OpError) as err:
        F.nll_loss(t(2, 3), tgx.tensor([-1, 0]))
    assert_clear_error(err, "nll_loss", "target -1", "3 classes")


def test_split_chunk_stack_dims():
    for call, name in [(lambda: t(2, 3).split(1, dim=5), "split"),
                       (lambda: t(2, 3).chunk(2, dim=5), "chunk"),
                       (lambda: tgx.stack([t(2, 3), t(2, 3)], dim=77), "stack")]:
        with pytest.raises(OpError) as err:
            call()
        assert_clear_error(err, f"{name}: dim", "out of range for a 2-d tensor")
    with pytest.raises(OpError) as err:
        t(2, 3).split(0)
    assert_clear_error(err, "split", "positive")


# ------------------------------------------------------------------------------------------
# einsum: a malformed equation or mismatched dims name the subscript and the sizes
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("equation,shapes,expected", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript 'j' has size 4 in operand 1 but 3 in operand 0"),
    ("ii->i", [(2, 3)], "subscript 'i' is repeated in operand 0 with different sizes 2 and 3"),
    ("ij->i", [(3,)], "operand 0 has 1 dims but its term 'ij' names 2"),
    ("...ij", [(3,)], "operand 0 has 1 dims, fewer than the 2 subscripts"),
    ("i,j", [(3,)], "2 input terms but 1 operand given"),
    ("i->ii", [(3,)], "output subscript 'i' appears more than once"),
    ("i->j", [(3,)], "output subscript 'j' appears in no input term"),
    ("i1", [(3, 2)], "invalid subscript '1' at index 1"),
    ("..i", [(3,)], "'.' must come as one '...'"),
    ("ij-i", [(3, 3)], "'-' and '>' may appear only together"),
    ("ij->ij->", [(3, 3)], "'->' may appear only once"),
], ids=["sizes", "diagonal", "dims", "ellipsis_dims", "operands", "out_twice", "out_unknown",
        "char", "dots", "arrow", "two_arrows"])
def test_einsum_equation_errors(equation, shapes, expected):
    with pytest.raises(OpError) as err:
        tgx.einsum(equation, *[t(*s) for s in shapes])
    assert_clear_error(err, "einsum: ", expected, repr(equation))
    assert "\n" not in str(err.value)


def test_einsum_operand_errors():
    for call, expected in [
            (lambda: tgx.einsum("i,i", t(3), t(3).double()), "share one dtype"),
            (lambda: tgx.einsum("i", t(3).bool()), "bool operands"),
            (lambda: tgx.einsum("i", np.zeros(3)), "operand 0 must be a Tensor"),
            (lambda: tgx.einsum(t(3), [60]), "ints in 0..51")]:
        with pytest.raises((TypeError, OpError)) as err:
            call()
        assert_clear_error(err, "einsum: ", expected)


def test_class_weight_and_probability_target_errors():
    ids = tgx.tensor([0, 1])
    for call, expected in [
            (lambda: F.cross_entropy(t(2, 3), ids, weight=t(2)), "one value per class, shape (3,)"),
            (lambda: F.nll_loss(t(2, 3), ids, weight=t(3).double()), "weight has dtype float64"),
            (lambda: F.cross_entropy(t(2, 3), ids, weight=tgx.ones(3, requires_grad=True)),
             "weight is read as a constant"),
            (lambda: F.cross_entropy(t(2, 3), ids, weight=[1.0, 2.0, 3.0]), "must be a Tensor"),
            (lambda: F.cross_entropy(t(2, 3), t(2, 3), ignore_index=0),
             "ignore_index=0 applies to class-index targets"),
            (lambda: F.cross_entropy(t(2, 3), t(3, 2)), "needs the input's shape (2, 3)")]:
        with pytest.raises((TypeError, OpError)) as err:
            call()
        assert_clear_error(err, expected)


def test_grouped_query_attention_errors():
    q, k, v = t(1, 4, 3, 2), t(1, 2, 5, 2), t(1, 2, 5, 2)
    for fn in (F.scaled_dot_product_attention, F.attention):
        with pytest.raises(OpError) as err:
            fn(q, k, v)                           # fewer K/V heads without enable_gqa
        assert_clear_error(err, "query has 4 heads (dim -3) but key 2", "enable_gqa=True")
        with pytest.raises(OpError) as err:
            fn(q, t(1, 3, 5, 2), t(1, 3, 5, 2), enable_gqa=True)
        assert_clear_error(err, "heads of key (3) and value (3) must each divide the "
                                "query's 4 heads")
        with pytest.raises(OpError) as err:
            fn(t(3, 2), t(5, 2), t(5, 2), enable_gqa=True)
        assert_clear_error(err, "enable_gqa needs the heads at dim -3")
    # one K/V head broadcasts without enable_gqa, as in PyTorch
    assert F.scaled_dot_product_attention(q, t(1, 1, 5, 2), t(1, 1, 5, 2)).shape == (1, 4, 3, 2)
