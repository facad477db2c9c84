"""More of PyTorch's names, beyond the op-info table (tests/opinfo.py holds every op): the
switches set_grad_enabled and inference_mode, finfo/iinfo and the default dtype, Size, the
predicates allclose and equal, the one-line errors of the new ops, and every name through the
compat layer (`import torch` giving the look-alike), checked against torch where it is
installed."""
import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.compat as compat
import tinygradx.functional as F

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# -- set_grad_enabled, inference_mode --------------------------------------------------------

def _records():
    return (tgx.ones(2, requires_grad=True) * 2).requires_grad


def test_set_grad_enabled_as_a_call_takes_effect_and_stays():
    assert tgx.is_grad_enabled()
    try:
        tgx.set_grad_enabled(False)
        assert not tgx.is_grad_enabled() and not _records()
        tgx.set_grad_enabled(True)
        assert tgx.is_grad_enabled() and _records()
    finally:
        tgx.set_grad_enabled(True)


def test_set_grad_enabled_as_a_block_puts_the_mode_back():
    with tgx.set_grad_enabled(False):
        assert not _records()
        with tgx.set_grad_enabled(True):
            assert _records()
        assert not _records()
    assert _records()
    with tgx.no_grad():
        with tgx.set_grad_enabled(True):
            assert _records()
        assert not _records()
    with pytest.raises(ValueError):
        with tgx.set_grad_enabled(False):
            raise ValueError("inside")
    assert tgx.is_grad_enabled()


def test_set_grad_enabled_as_a_decorator_changes_nothing_until_called():
    @tgx.set_grad_enabled(False)
    def f():
        return tgx.is_grad_enabled()

    assert tgx.is_grad_enabled()
    assert f() is False and tgx.is_grad_enabled()
    with tgx.no_grad():
        assert tgx.set_grad_enabled(True)(tgx.is_grad_enabled)() is True
        assert not tgx.is_grad_enabled()


def test_set_grad_enabled_refuses_a_mode_that_is_not_a_bool():
    with pytest.raises(TypeError, match="set_grad_enabled: mode must be True or False"):
        tgx.set_grad_enabled("no")
    assert tgx.is_grad_enabled()


@needs_torch
def test_set_grad_enabled_follows_torch_step_by_step():
    def run(lib):
        seen = [lib.is_grad_enabled()]
        with lib.set_grad_enabled(False):
            seen.append(lib.is_grad_enabled())
        seen.append(lib.is_grad_enabled())
        deco = lib.set_grad_enabled(False)
        seen.append(lib.is_grad_enabled())           # a call: off at once
        lib.set_grad_enabled(True)
        g = deco(lib.is_grad_enabled)
        seen += [g(), lib.is_grad_enabled()]
        return seen
    assert run(tgx) == run(torch)


def test_inference_mode_is_no_grad():
    with tgx.inference_mode():
        assert not _records()
    with tgx.inference_mode(False):
        assert _records()
    with tgx.no_grad(), tgx.inference_mode(False):
        assert not _records()                         # mode=False changes nothing

    @tgx.inference_mode()
    def called():
        return tgx.is_grad_enabled()

    @tgx.inference_mode
    def bare():
        return tgx.is_grad_enabled()

    assert called() is False and bare() is False and tgx.is_grad_enabled()
    assert bare.__name__ == "bare"
    mode = tgx.inference_mode()
    with mode:
        with mode:                                    # the same object, nested
            assert not tgx.is_grad_enabled()
        assert not tgx.is_grad_enabled()
    assert tgx.is_grad_enabled()
    with pytest.raises(TypeError, match="inference_mode: mode must be True or False"):
        tgx.inference_mode(1)


# -- finfo, iinfo, the default dtype ---------------------------------------------------------

FLOAT_DTYPES = ["float16", "float32", "float64"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]


@needs_torch
@pytest.mark.parametrize("name", FLOAT_DTYPES)
def test_finfo_as_torch(name):
    mine, theirs = tgx.finfo(getattr(tgx, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
        assert type(getattr(mine, attr)) is type(getattr(theirs, attr)), attr
    assert tgx.finfo(name) == mine and tgx.finfo(np.dtype(name)) == mine


@needs_torch
def test_finfo_default_is_float32_and_repr_as_torch():
    assert tgx.finfo() == tgx.finfo(tgx.float32)
    assert repr(tgx.finfo()) == repr(torch.finfo())
    assert tgx.finfo(tgx.float32).eps == 2.0 ** -23


@needs_torch
@pytest.mark.parametrize("name", INT_DTYPES)
def test_iinfo_as_torch(name):
    mine, theirs = tgx.iinfo(getattr(tgx, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "min", "max", "dtype"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
        assert type(getattr(mine, attr)) is type(getattr(theirs, attr)), attr


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(TypeError, match="finfo: needs a floating-point dtype, got int64"):
        tgx.finfo(tgx.int64)
    with pytest.raises(TypeError, match="iinfo: needs an integer dtype, got float32"):
        tgx.iinfo(tgx.float32)
    with pytest.raises(TypeError, match="iinfo: needs an integer dtype, got bool"):
        tgx.iinfo(tgx.bool)
    with pytest.raises(TypeError, match="unknown dtype"):
        tgx.finfo("float128")


def test_default_dtype_is_float32_and_fixed():
    assert tgx.get_default_dtype() is tgx.float32
    assert tgx.tensor(1.5).dtype == tgx.get_default_dtype()
    tgx.set_default_dtype(tgx.float32)                # the default itself: accepted
    tgx.set_default_dtype("float32")
    with pytest.raises(NotImplementedError, match=r"set_default_dtype\(float64\): tinygradx's "
                                                  r"default dtype is always float32.*dtype="):
        tgx.set_default_dtype(tgx.float64)
    with pytest.raises(NotImplementedError, match="float16"):
        tgx.set_default_dtype(tgx.float16)
    with pytest.raises(TypeError, match="only a floating-point dtype can be the default"):
        tgx.set_default_dtype(tgx.int64)
    assert tgx.tensor(1.5).dtype == np.float32


@needs_torch
def test_default_dtype_compares_as_torch():
    assert (tgx.get_default_dtype() == tgx.float32) == (torch.get_default_dtype() ==
                                                        torch.float32)


# -- Size ------------------------------------------------------------------------------------

def test_size_is_a_tuple_of_ints():
    s = tgx.Size([2, 3, 4])
    assert isinstance(s, tuple) and s == (2, 3, 4) and s.numel() == 24
    assert tgx.Size().numel() == 1 and tgx.Size() == ()
    assert type(s[1:]) is tgx.Size and s[1:] == (3, 4) and s[-1] == 4
    assert type(s + (5,)) is tgx.Size and type((1,) + s) is tgx.Size and (1,) + s == (1, 2, 3, 4)
    assert repr(s) == "Size([2, 3, 4])"
    assert tgx.Size([np.int64(2), tgx.tensor(3)]) == (2, 3)
    x = tgx.zeros(2, 3)
    assert x.shape == tgx.Size([2, 3]) and x.size() == tgx.Size([2, 3])
    assert x.view(tgx.Size([3, 2])).shape == (3, 2)
    assert tgx.zeros(tgx.Size([2, 3])).shape == (2, 3)
    assert isinstance(x.shape, tgx.Size) and repr(x.shape) == "(2, 3)"   # a Size, printed plain
    with pytest.raises(TypeError, match=r"Size: takes ints, got 2\.5"):
        tgx.Size([2.5])
    with pytest.raises(TypeError, match="Size: takes ints, got True"):
        tgx.Size([True])


@needs_torch
def test_size_as_torch():
    for sizes in ([2, 3], [], [0, 4]):
        mine, theirs = tgx.Size(sizes), torch.Size(sizes)
        assert mine == theirs and mine.numel() == theirs.numel()
        assert tuple(mine[1:]) == tuple(theirs[1:]) and tuple(mine + (7,)) == tuple(theirs + (7,))


# -- allclose, equal -------------------------------------------------------------------------

PAIRS = [
    ([1.0, 2.0], [1.0, 2.0 + 1e-9]),
    ([1.0, 2.0], [1.0, 2.1]),
    ([1.0, np.nan], [1.0, np.nan]),
    ([[1.0, 2.0]], [1.0, 2.0]),                        # broadcast
    ([np.inf, -np.inf], [np.inf, -np.inf]),
    ([], []),
]


@needs_torch
@pytest.mark.parametrize("a,b", PAIRS)
def test_allclose_and_equal_as_torch(a, b):
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1, "atol": 0.0}):
        mine = tgx.allclose(tgx.tensor(a), tgx.tensor(b), **kw)
        assert mine is torch.allclose(torch.tensor(a), torch.tensor(b), **kw), kw
    assert tgx.equal(tgx.tensor(a), tgx.tensor(b)) is torch.equal(torch.tensor(a),
                                                                   torch.tensor(b))


@needs_torch
def test_equal_compares_values_across_dtypes_as_torch():
    for a, b in (([1, 2], [1.0, 2.0]), ([1, 2], [[1, 2]]), ([True, False], [1, 0])):
        assert tgx.equal(tgx.tensor(a), tgx.tensor(b)) is torch.equal(torch.tensor(a),
                                                                       torch.tensor(b))


def test_allclose_promotes_where_torch_refuses():
    """A float32/float64 pair compares in the promoted dtype (torch refuses the mix)."""
    assert tgx.allclose(tgx.tensor([1.0, 2.0]), tgx.tensor([1.0, 2.0], dtype=tgx.float64))
    with pytest.raises(TypeError, match="allclose: expected a Tensor"):
        tgx.allclose([1.0], tgx.tensor([1.0]))


# -- the arguments torch's forms take --------------------------------------------------------

@needs_torch
def test_std_var_argument_forms_as_torch():
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    x, t = tgx.tensor(a), torch.tensor(a)
    for call in (lambda m, v: m.std(v, False), lambda m, v: m.std(v, 1, False, True),
                 lambda m, v: m.std(v, dim=0, correction=0), lambda m, v: v.std(False),
                 lambda m, v: v.var(False), lambda m, v: m.var(v, (0, 1), correction=2),
                 lambda m, v: v.std(1, correction=0, keepdim=True)):
        np.testing.assert_allclose(call(tgx, x).numpy(), call(torch, t).numpy(), rtol=1e-12)


@needs_torch
def test_linspace_with_an_integer_dtype_is_exact():
    """Where torch's floating-point steps land just below an integer, torch truncates one
    less than the exact value; here the values are exact (docs/design.md)."""
    assert tgx.linspace(-3, 1, 7, dtype=tgx.int64).tolist() == [-3, -2, -1, -1, 0, 0, 1]
    assert torch.linspace(-3, 1, 7, dtype=torch.int64).tolist() == [-3, -2, -1, 0, 0, 0, 1]
    for args in ((0, 10, 5), (5, -5, 9), (-7, 3, 4), (2, 11, 8), (0, -1.25, 6), (0, 1, 1)):
        assert tgx.linspace(*args, dtype=tgx.int64).tolist() == torch.linspace(
            *args, dtype=torch.int64).tolist(), args


def test_linspace_takes_0d_tensors_and_requires_grad():
    x = tgx.linspace(tgx.tensor(0.0), tgx.tensor(1.0), 3, requires_grad=True)
    assert x.tolist() == [0.0, 0.5, 1.0] and x.requires_grad and x.is_leaf
    assert tgx.logspace(0, 2, 3, base=2, dtype=tgx.float64).tolist() == [1.0, 2.0, 4.0]


def test_norm_gradient_of_a_zero_vector_is_zero_at_every_order():
    x = tgx.zeros(2, 3, dtype=tgx.float64, requires_grad=True)
    for p in (2, "fro", 3, 1, float("inf")):
        (g,) = tgx.grad(x.norm(p, dim=1).sum(), [x], create_graph=True)
        assert np.array_equal(g.detach().numpy(), np.zeros((2, 3))), p
    y = tgx.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=tgx.float64, requires_grad=True)
    (g,) = tgx.grad(y.norm(dim=1).sum(), [y], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[0, 0], [0.6, 0.8]])
    assert tgx.gradgradcheck(lambda t: t.norm(dim=1), (tgx.tensor(
        [[1.0, -2.0], [0.5, 0.25]], dtype=tgx.float64, requires_grad=True),))


# -- views and gradients of the movement ops -------------------------------------------------

def test_unbind_pieces_share_one_gradient():
    x = tgx.randn(3, 4, requires_grad=True)
    a, b, c = x.unbind(0)
    (a * 1 + b * 2 + c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))


def test_views_share_memory_as_torch():
    x = tgx.zeros(2, 3)
    x.narrow(1, 1, 2).numpy()[...] = 1.0
    x.select(0, 1).numpy()[0] = 5.0
    x.t().numpy()[2, 0] = 7.0
    assert x.tolist() == [[0.0, 1.0, 7.0], [5.0, 1.0, 1.0]]
    v = tgx.zeros(3)
    assert v.t().shape == (3,) and tgx.tensor(2.0).t().shape == ()


# -- one-line errors that name the op --------------------------------------------------------

ERRORS = [
    (lambda: tgx.zeros(2, 3, 4).t(), tgx.OpError, r"t: expects a tensor with at most 2 dims"),
    (lambda: tgx.zeros(2, 3).select(1, 3), tgx.OpError,
     r"select: index 3 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).select(1, 1.0), tgx.OpError, r"select: index must be an int"),
    (lambda: tgx.tensor(1.0).select(0, 0), tgx.OpError,
     r"select: needs a tensor with at least 1 dim"),
    (lambda: tgx.zeros(2, 3).narrow(1, 2, 2), tgx.OpError,
     r"narrow: start 2 and length 2 do not fit in dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, -4, 1), tgx.OpError,
     r"narrow: start -4 is out of range for dim 1 of size 3"),
    (lambda: tgx.zeros(2, 3).narrow(1, 0, -1), tgx.OpError, r"narrow: start 0 and length -1"),
    (lambda: tgx.tensor(1.0).unbind(), tgx.OpError, r"unbind: needs a tensor with at least"),
    (lambda: tgx.zeros(2, 3).unbind(2), tgx.OpError, r"unbind: dim 2 is out of range"),
    (lambda: tgx.zeros(2, 3).movedim((0, 0), (1, 0)), tgx.OpError,
     r"movedim: repeated dim in source \(0, 0\)"),
    (lambda: tgx.zeros(2, 3).movedim((0, 1), (1,)), tgx.OpError,
     r"movedim: source \(0, 1\) has 2 dims but destination \(1,\) has 1"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([2])), tgx.OpError,
     r"index_select: index \[2\] is out of range for dim 0 of size 2"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([-1])), tgx.OpError,
     r"index_select: .*negative indices are refused"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([[0]])), tgx.OpError,
     r"index_select: index must be 1-d"),
    (lambda: tgx.zeros(2, 3).index_select(0, tgx.tensor([0.0])), tgx.OpError,
     r"index_select: index must be an int64 or int32 tensor"),
    (lambda: tgx.tensor([1, 2]).norm(), TypeError, r"norm: needs a floating-point tensor"),
    (lambda: tgx.zeros(2, 2).norm("nuc"), ValueError, r"norm: p must be.*singular values"),
    (lambda: tgx.zeros(2, 2).norm(0.5), ValueError, r"norm: p must be 'fro', inf, -inf or"),
    (lambda: tgx.zeros(2, 2, 2).norm("fro", (0, 1, 2)), tgx.OpError,
     r"norm: p='fro' takes one dim or two"),
    (lambda: tgx.zeros(2, 2).norm(dim=2), tgx.OpError, r"norm: dim 2 is out of range"),
    (lambda: tgx.outer(tgx.zeros(2, 2), tgx.zeros(2)), tgx.OpError,
     r"outer: expects two 1-d tensors, got shapes \(2, 2\) and \(2,\)"),
    (lambda: tgx.addmm(tgx.zeros(3), tgx.zeros(2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: mat1 and mat2 must be matrices that chain"),
    (lambda: tgx.addmm(tgx.zeros(2, 1, 3), tgx.zeros(2, 2), tgx.zeros(2, 3)), tgx.OpError,
     r"addmm: input of shape \(2, 1, 3\) does not broadcast"),
    (lambda: tgx.addmm(tgx.zeros(3, dtype=tgx.long), tgx.zeros(2, 2), tgx.zeros(2, 3)),
     TypeError, r"addmm: input, mat1 and mat2 must have one dtype"),
    (lambda: tgx.linspace(0, 1, -1), ValueError, r"linspace: steps must be a non-negative"),
    (lambda: tgx.logspace(tgx.zeros(2), 1, 3), ValueError, r"logspace: start must be a number"),
    (lambda: tgx.tensor([True]).neg(), tgx.OpError, r"neg: .*`~`"),
    (lambda: tgx.reshape([1, 2], (2,)), TypeError, r"reshape: expected a Tensor"),
]


@pytest.mark.parametrize("call,kind,pattern", ERRORS, ids=[p[:40] for _, _, p in ERRORS])
def test_errors_name_the_op(call, kind, pattern):
    with pytest.raises(kind, match=pattern) as e:
        call()
    assert "\n" not in str(e.value)


F_ERRORS = [
    (lambda: F.pad(tgx.zeros(2, 3), (1,)), ValueError, r"pad: needs two amounts"),
    (lambda: F.pad(tgx.zeros(2, 3), (1, 1, 1, 1, 1, 1)), ValueError,
     r"pad: 6 amounts pad 3 dims, but the input has only 2"),
    (lambda: F.pad(tgx.zeros(2, 3), (1.0, 1)), TypeError, r"pad: pad must be a sequence of ints"),
    (lambda: F.pad(tgx.zeros(2, 3), (1, 1), mode="wrap"), ValueError,
     r"pad: mode must be one of 'constant', 'reflect', 'replicate', 'circular'"),
    (lambda: F.pad(tgx.zeros(2, 3), (-2, -2)), tgx.OpError,
     r"pad: cropping \(-2, -2\) from dim 1 of size 3"),
    (lambda: F.pad(tgx.zeros(1, 2, 3), (3, 0), mode="reflect"), tgx.OpError,
     r"pad: reflect amounts must be smaller than the dim"),
    (lambda: F.pad(tgx.zeros(1, 2, 3), (4, 0), mode="circular"), tgx.OpError,
     r"pad: circular \(4, 0\) for dim 2 of size 3: each amount must be at most the size"),
    (lambda: F.pad(tgx.zeros(1, 2, 3), (1, 1), mode="reflect", value=1.0), ValueError,
     r"pad: mode 'reflect' takes no value"),
    (lambda: F.pad(tgx.zeros(6), (1, 1), mode="replicate"), tgx.OpError,
     r"pad: mode 'replicate' pads the last 1, 2 or 3 dims"),
    (lambda: F.pad(tgx.zeros(1, 2, 3), (1, 1, 1, 1, 1, 1), mode="circular"), tgx.OpError,
     r"pad: mode 'circular' pads the last 1, 2 or 3 dims"),
    (lambda: F.cosine_similarity(tgx.tensor([1, 2]), tgx.tensor([1, 2]), dim=0), TypeError,
     r"cosine_similarity: needs floating-point tensors"),
    (lambda: F.cosine_similarity(tgx.zeros(2, 3), tgx.zeros(2, 4)), tgx.OpError,
     r"cosine_similarity: shapes \(2, 3\) and \(2, 4\) do not broadcast"),
    (lambda: F.normalize(tgx.zeros(3)), tgx.OpError, r"norm: dim 1 is out of range"),
]


@pytest.mark.parametrize("call,kind,pattern", F_ERRORS, ids=[p[:40] for _, _, p in F_ERRORS])
def test_functional_errors_name_the_op(call, kind, pattern):
    test_errors_name_the_op(call, kind, pattern)


# -- through the compat layer: `import torch` gives the look-alike --------------------------

TORCH_NAMES = [
    "set_grad_enabled", "inference_mode", "finfo", "iinfo", "outer", "linspace", "logspace",
    "rsqrt", "allclose", "equal", "get_default_dtype", "set_default_dtype", "Size", "std", "var",
    "prod", "all", "any", "reshape", "transpose", "squeeze", "unsqueeze", "flatten", "permute",
    "chunk", "split", "norm", "neg", "negative", "reciprocal", "log1p", "expm1", "index_select",
    "unbind", "t", "einsum", "square", "narrow", "select", "movedim", "moveaxis", "swapaxes",
    "swapdims", "addmm",
]
F_NAMES = ["pad", "normalize", "cosine_similarity", "one_hot", "gelu"]
METHODS = ["t", "unbind", "index_select", "neg", "negative", "reciprocal", "log1p", "expm1",
           "norm", "square", "narrow", "select", "movedim", "moveaxis", "swapaxes", "swapdims",
           "addmm", "std", "var"]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_torch_names_through_the_lookalike(name):
    with compat.installed():
        import torch as lookalike
        assert getattr(lookalike, name) is getattr(tgx, name)
        assert name in dir(lookalike)


@pytest.mark.parametrize("name", F_NAMES)
def test_functional_names_through_the_lookalike(name):
    with compat.installed():
        import torch.nn.functional as lookalike_F
        assert getattr(lookalike_F, name) is getattr(F, name)


def test_autograd_switches_and_tensor_methods_through_the_lookalike():
    with compat.installed():
        import torch as lookalike
        assert lookalike.autograd.set_grad_enabled is tgx.set_grad_enabled
        assert lookalike.autograd.inference_mode is tgx.inference_mode
        from torch.autograd import inference_mode, set_grad_enabled  # noqa: F401
        x = lookalike.zeros(2, 3)
        for m in METHODS:
            assert callable(getattr(x, m)), m


PROGRAM = '''
import torch
import torch.nn.functional as F

def run(x, w, ids):
    torch.manual_seed(0)
    h = F.pad(x, (1, 1), value=0.5).narrow(-1, 0, 4)             # (2, 3, 4)
    h = F.normalize(h, dim=-1) + h.square().log1p() - h.reciprocal().neg() * 0.1
    a, b = h.unbind(0)
    y = torch.addmm(torch.zeros(4, dtype=w.dtype), a.t().t(), w) + b.index_select(0, ids) @ w
    z = torch.movedim(y.unsqueeze(0), 0, -1).squeeze(-1)
    c = F.cosine_similarity(z, torch.outer(torch.linspace(0, 1, 3), torch.ones(4)), dim=-1)
    loss = c.sum() + z.norm(dim=1).sum() + z.std(0, correction=0).sum()
    loss = loss + z.select(1, 0).expm1().sum() + torch.norm(z, float("inf"))
    with torch.set_grad_enabled(False):
        frozen = (loss * 2).requires_grad
    with torch.inference_mode():
        also = (loss * 2).requires_grad
    return loss, frozen, also, torch.finfo(x.dtype).eps, torch.Size(z.shape).numel()
'''


def _run_program(lib_module_path, pytorch):
    mod = compat.load_module(lib_module_path, pytorch=pytorch)
    t = mod.torch
    x = t.tensor(np.linspace(0.5, 2.0, 12).reshape(2, 3, 2), requires_grad=True)
    w = t.tensor(np.linspace(-1.0, 1.0, 16).reshape(4, 4), requires_grad=True)
    ids = t.tensor([2, 0, 1])
    loss, frozen, also, eps, n = mod.run(x, w, ids)
    loss.backward()
    return (loss.item(), frozen, also, eps, n, x.grad.detach().numpy().copy(),
            w.grad.detach().numpy().copy())


@needs_torch
def test_a_pytorch_program_of_these_names_gives_torch_numbers(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    mine, theirs = _run_program(path, False), _run_program(path, True)
    np.testing.assert_allclose(mine[0], theirs[0], rtol=1e-12)
    assert mine[1:5] == theirs[1:5] == (False, False, 2.0 ** -52, 12)
    for g, h in zip(mine[5:], theirs[5:], strict=True):
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("amounts", [(-1, 2), (2, -1), (-1, -1, 1, 0), (-2, 1, -1, 1)])
def test_negative_pad_amounts_crop_as_torchs(mode, amounts):
    """A negative amount crops in every mode, as torch's pad does (values and shape)."""
    torch = pytest.importorskip("torch")
    x = np.arange(30, dtype=np.float64).reshape((1, 2, 3)[:1 + len(amounts) // 2] + (-1,))
    want = torch.nn.functional.pad(torch.tensor(x), amounts, mode=mode).numpy()
    np.testing.assert_array_equal(F.pad(tgx.tensor(x), amounts, mode=mode).numpy(), want)
