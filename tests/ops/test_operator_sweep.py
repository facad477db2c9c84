"""Every Python operator on every kind of operand, as a table checked against torch.

Operators: + - * / // % ** @ << >> & | ^ < <= > >= == != (both sides: a Tensor on the left or
the right), their augmented forms (+= ... >>=, in place on the left Tensor), and unary -, +, ~,
abs(). Operands: float32, int64 and bool tensors, Python int, float and bool, a numpy scalar.
(numpy arrays as operands belong to the numpy protocol: tests/models/test_interop.py and friends.)

For each cell: where torch gives a result, tinygradx gives the same values and dtype; where
torch raises, tinygradx either gives a result (the cells in PERMISSIVE, on purpose) or raises
an error of one line that names the operator (its symbol or torch's name for it: `add_` for
+=) and is not Python's generic "unsupported operand type(s)".
"""
import operator

import numpy as np
import pytest

import tinygradx as tgx

torch = pytest.importorskip("torch")

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
          "<<": operator.lshift, ">>": operator.rshift, "&": operator.and_, "|": operator.or_,
          "^": operator.xor, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
INPLACE = {"+=": (operator.iadd, "add_"), "-=": (operator.isub, "sub_"),
           "*=": (operator.imul, "mul_"), "/=": (operator.itruediv, "div_"),
           "//=": (operator.ifloordiv, "floor_divide_"), "%=": (operator.imod, "remainder_"),
           "**=": (operator.ipow, "pow_"), "@=": (operator.imatmul, "@"),
           "<<=": (operator.ilshift, "__ilshift__"), ">>=": (operator.irshift, "__irshift__"),
           "&=": (operator.iand, "__iand__"), "|=": (operator.ior, "__ior__"),
           "^=": (operator.ixor, "__ixor__")}
UNARY = {"-x": operator.neg, "+x": operator.pos, "~x": operator.invert, "abs": abs}
NAMES = {"//": ("//", "floor_divide"), "%": ("%", "remainder"), "**": ("**", "pow"),
         "@": ("@", "matmul"), "-": ("-", "sub")}

TENSORS = {"f32": np.array([[1.5, -2.0], [3.0, 0.5]], np.float32),
           "i64": np.array([[3, -2], [1, 4]]),
           "bool": np.array([[True, False], [True, True]])}
SCALARS = {"int": 2, "float": 1.5, "bool": True, "np_f64": np.float64(2.0)}

# torch refuses, tinygradx computes, on purpose: matmul promotes its operands as every other
# binary op does (torch wants one dtype, and no bools); docs/pytorch-code.md lists it
PERMISSIVE = {("@", a, b) for a in TENSORS for b in TENSORS if a != b or a == "bool"} | \
    {("@=", a, b) for a in TENSORS for b in TENSORS if a != b or a == "bool"}


def make(lib, kind):
    if kind in TENSORS:
        return (torch.tensor if lib == "torch" else tgx.tensor)(TENSORS[kind].copy())
    return SCALARS[kind]


def outcome(fn, *args):
    try:
        out = fn(*args)
    except Exception as err:     # noqa: BLE001 (the table records what each side raises)
        return None, err
    if isinstance(out, torch.Tensor):
        out = out.numpy()
    elif isinstance(out, tgx.Tensor):
        out = out.numpy()
    return np.asarray(out), None


def cells():
    for sym in BINARY:
        for a in list(TENSORS) + list(SCALARS):
            for b in list(TENSORS) + list(SCALARS):
                if a in TENSORS or b in TENSORS:
                    yield sym, a, b
    for sym in INPLACE:
        for a in TENSORS:
            for b in list(TENSORS) + list(SCALARS):
                yield sym, a, b
    for sym in UNARY:
        for a in TENSORS:
            yield sym, a, None


def run(lib, sym, a, b):
    if sym in UNARY:
        return outcome(UNARY[sym], make(lib, a))
    fn = BINARY[sym] if sym in BINARY else INPLACE[sym][0]
    return outcome(fn, make(lib, a), make(lib, b))


def names(sym):
    if sym in INPLACE:
        return (sym, INPLACE[sym][1]) + NAMES.get(sym[:-1], (sym[:-1],))
    if sym in UNARY:
        return {"-x": ("-", "neg"), "+x": ("+",), "~x": ("~", "invert"), "abs": ("abs",)}[sym]
    return NAMES.get(sym, (sym,))


@pytest.mark.parametrize("sym,a,b", list(cells()))
def test_operator_cell(sym, a, b):
    want, their_err = run("torch", sym, a, b)
    got, err = run("tgx", sym, a, b)
    if their_err is None:
        assert err is None, f"{sym} {a} {b}: torch gives a result, tinygradx raised {err!r}"
        assert got.dtype == want.dtype, f"{sym} {a} {b}: dtype {got.dtype}, torch {want.dtype}"
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=1e-6, equal_nan=True)
        return
    if err is None:
        assert (sym, a, b) in PERMISSIVE, (f"{sym} {a} {b}: torch raises ({their_err}), "
                                           f"tinygradx gives {got!r}")
        return
    msg = str(err)
    assert "\n" not in msg, f"{sym} {a} {b}: a message of several lines: {msg!r}"
    assert "unsupported operand" not in msg, f"{sym} {a} {b}: Python's message: {msg}"
    assert any(n in msg for n in names(sym)), f"{sym} {a} {b}: does not name it: {msg}"
