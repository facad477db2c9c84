"""torch.Tensor's methods that spell an op another way, and the in-place variants of the ops,
each run on the look-alike and on torch through the differential harness (tests/oracle.py):
the same values, dtype and shape, the same object returned (`x.sin_() is x`), the same
memory changed, or both refusing (ours with one clear line). A test's id is the full torch
name it compares (docs/make_pytorch_coverage.py reads them).
"""
import pytest

from oracle import requires_torch, same

UNIT = [[0.25, 0.5, 0.75], [0.1, 0.3, 0.9]]          # inside every domain (asin, logit, ...)
ABOVE_ONE = [[1.25, 1.5, 2.75], [1.1, 3.3, 1.9]]     # acosh
INTS = [[1, -2, 3], [4, 0, -6]]
BOOLS = [[True, False, True], [False, False, True]]


def _x(m, kind):
    return {"unit": lambda: m.tensor(UNIT), "unit64": lambda: m.tensor(UNIT, dtype=m.float64),
            "above1": lambda: m.tensor(ABOVE_ONE), "int": lambda: m.tensor(INTS),
            "bool": lambda: m.tensor(BOOLS), "mat": lambda: m.tensor([[0.5, -1.0], [2.0, 0.25]]),
            "vec": lambda: m.tensor([0.5, -1.0, 2.0])}[kind]()


def _unit(m):
    return m.tensor([[0.5, 0.2, 0.4], [0.7, 0.8, 0.1]])


# name -> (input kind, the arguments as a function of the namespace); the in-place variant
# name_ takes the same arguments
SPECS = {
    "abs": ("unit", lambda m: ()), "absolute": ("unit", lambda m: ()),
    "neg": ("unit", lambda m: ()), "negative": ("unit", lambda m: ()),
    "sign": ("unit", lambda m: ()), "sgn": ("unit", lambda m: ()),
    "exp": ("unit", lambda m: ()), "exp2": ("unit", lambda m: ()),
    "expm1": ("unit", lambda m: ()), "log": ("unit", lambda m: ()),
    "log2": ("unit", lambda m: ()), "log10": ("unit", lambda m: ()),
    "log1p": ("unit", lambda m: ()), "sqrt": ("unit", lambda m: ()),
    "rsqrt": ("unit", lambda m: ()), "square": ("unit", lambda m: ()),
    "reciprocal": ("unit", lambda m: ()), "sigmoid": ("unit", lambda m: ()),
    "relu": ("unit", lambda m: ()), "logit": ("unit", lambda m: ()),
    "sin": ("unit", lambda m: ()), "cos": ("unit", lambda m: ()), "tan": ("unit", lambda m: ()),
    "asin": ("unit", lambda m: ()), "acos": ("unit", lambda m: ()),
    "atan": ("unit", lambda m: ()), "arcsin": ("unit", lambda m: ()),
    "arccos": ("unit", lambda m: ()), "arctan": ("unit", lambda m: ()),
    "sinh": ("unit", lambda m: ()), "cosh": ("unit", lambda m: ()),
    "tanh": ("unit", lambda m: ()), "asinh": ("unit", lambda m: ()),
    "acosh": ("above1", lambda m: ()), "atanh": ("unit", lambda m: ()),
    "arcsinh": ("unit", lambda m: ()), "arccosh": ("above1", lambda m: ()),
    "arctanh": ("unit", lambda m: ()),
    "atan2": ("unit", lambda m: (_unit(m),)), "arctan2": ("unit", lambda m: (_unit(m),)),
    "hypot": ("unit", lambda m: (_unit(m),)), "sinc": ("unit", lambda m: ()),
    "deg2rad": ("unit", lambda m: ()), "rad2deg": ("unit", lambda m: ()),
    "erf": ("unit", lambda m: ()), "erfc": ("unit", lambda m: ()),
    "erfinv": ("unit", lambda m: ()), "lgamma": ("unit", lambda m: ()),
    "digamma": ("unit", lambda m: ()), "polygamma": ("unit", lambda m: (1,)),
    "mvlgamma": ("above1", lambda m: (2,)), "xlogy": ("unit", lambda m: (_unit(m),)),
    "floor": ("unit", lambda m: ()), "ceil": ("unit", lambda m: ()),
    "round": ("unit", lambda m: ()), "trunc": ("unit", lambda m: ()),
    "fix": ("unit", lambda m: ()), "frac": ("above1", lambda m: ()),
    "copysign": ("unit", lambda m: (-_unit(m),)),
    "nextafter": ("unit", lambda m: (_unit(m),)),
    "heaviside": ("unit", lambda m: (_unit(m),)),
    "nan_to_num": ("unit", lambda m: ()),
    "ldexp": ("unit", lambda m: (m.tensor([[1, 2, -1], [0, 3, 1]]),)),
    "float_power": ("unit64", lambda m: (2.5,)),
    "lerp": ("unit", lambda m: (_unit(m), 0.25)),
    "clamp_min": ("unit", lambda m: (0.3,)), "clamp_max": ("unit", lambda m: (0.3,)),
    "multiply": ("unit", lambda m: (_unit(m),)), "divide": ("unit", lambda m: (_unit(m),)),
    "true_divide": ("unit", lambda m: (_unit(m),)),
    "subtract": ("unit", lambda m: (_unit(m),)),
    "eq": ("unit", lambda m: (_unit(m),)), "ne": ("unit", lambda m: (_unit(m),)),
    "lt": ("unit", lambda m: (_unit(m),)), "le": ("unit", lambda m: (_unit(m),)),
    "gt": ("unit", lambda m: (_unit(m),)), "ge": ("unit", lambda m: (_unit(m),)),
    "greater": ("unit", lambda m: (_unit(m),)),
    "greater_equal": ("unit", lambda m: (_unit(m),)),
    "less": ("unit", lambda m: (_unit(m),)), "less_equal": ("unit", lambda m: (_unit(m),)),
    "not_equal": ("unit", lambda m: (_unit(m),)),
    "logical_and": ("int", lambda m: (m.tensor(INTS) - 1,)),
    "logical_or": ("int", lambda m: (m.tensor(INTS) - 1,)),
    "logical_xor": ("int", lambda m: (m.tensor(INTS) - 1,)),
    "logical_not": ("int", lambda m: ()),
    "bitwise_and": ("int", lambda m: (m.tensor(INTS) + 5,)),
    "bitwise_or": ("int", lambda m: (m.tensor(INTS) + 5,)),
    "bitwise_xor": ("int", lambda m: (m.tensor(INTS) + 5,)),
    "bitwise_not": ("int", lambda m: ()),
    "bitwise_left_shift": ("int", lambda m: (2,)),
    "bitwise_right_shift": ("int", lambda m: (1,)),
    "addmm": ("mat", lambda m: (_x(m, "mat"), _x(m, "mat").t())),
    "addmv": ("vec", lambda m: (m.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]]),
                                m.tensor([0.25, -2.0]))),
    "addr": ("mat", lambda m: (m.tensor([1.0, 2.0]), m.tensor([0.5, -3.0]))),
    "addbmm": ("mat", lambda m: (m.ones(3, 2, 4), m.ones(3, 4, 2) * 0.5)),
    "baddbmm": ("mat", lambda m: (m.ones(3, 2, 4), m.ones(3, 4, 2) * 0.5)),
    "addcmul": ("unit", lambda m: (_unit(m), _unit(m))),
    "addcdiv": ("unit", lambda m: (_unit(m), _unit(m) + 1)),
    "cumsum": ("unit", lambda m: (1,)), "cumprod": ("unit", lambda m: (0,)),
    "tril": ("unit", lambda m: ()), "triu": ("unit", lambda m: (1,)),
    "squeeze": ("unit", lambda m: ()), "unsqueeze": ("unit", lambda m: (1,)),
    "t": ("unit", lambda m: ()), "transpose": ("unit", lambda m: (0, 1)),
    "swapaxes": ("unit", lambda m: (0, 1)), "swapdims": ("unit", lambda m: (1, 0)),
}
KWARGS = {"addmm": {"beta": 0.5, "alpha": 2.0}, "addcdiv": {"value": -0.5},
          "addcmul": {"value": 2.0}, "addbmm": {"alpha": 0.5}, "baddbmm": {"beta": 2.0}}


def _method_call(name, inplace):
    kind, args = SPECS[name]
    op = name + "_" if inplace else name
    kwargs = KWARGS.get(name, {})

    def call(m):
        x = _x(m, kind)
        if name == "baddbmm":
            x = m.ones(3, 2, 2)
        out = getattr(x, op)(*args(m), **kwargs)
        return (out, x, out is x) if inplace else out
    return call


@requires_torch
@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.Tensor.{n}") for n in SPECS])
def test_method(name):
    same(_method_call(name, inplace=False))


@requires_torch
@pytest.mark.parametrize("name", [pytest.param(n, id=f"torch.Tensor.{n}_") for n in SPECS])
def test_inplace(name):
    same(_method_call(name, inplace=True))


@requires_torch
def test_inplace_refusals_like_torch():
    same(lambda m: m.ones(2).float_power_(2))             # float64 only
    same(lambda m: m.tensor([1, 2]).sin_())               # a float result into int64
    same(lambda m: m.ones(2, requires_grad=True).exp_())  # a leaf that requires grad
    same(lambda m: m.ones(2, requires_grad=True).unsqueeze_(0))
    same(lambda m: m.ones(2, 3).add_(m.ones(4, 2, 3)))    # the result would be larger


@requires_torch
def test_inplace_view_ops_keep_the_graph_like_torch():
    def call(m):
        w = m.tensor([1.0, 2.0], requires_grad=True)
        a = w * 3
        b = a.sum()
        a.unsqueeze_(0)
        (b + (a * a).sum()).backward()
        return a, w.grad
    same(call)
