"""tinygradx.compat, the `torch` look-alike: what it re-exports, what it refuses (every refusal
names the PyTorch API), and how it enters and leaves sys.modules, with or without PyTorch.

The model files run under it are tested in test_compat_models.py.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.compat as compat
import tinygradx.functional as tF
import tinygradx.nn as tnn
import tinygradx.optim as toptim
from tinygradx.compat.facade import LAYER, REASONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytorch_installed():
    import importlib.util
    return "torch" in compat._PYTORCH or (
        not isinstance(sys.modules.get("torch"), compat.Facade)
        and importlib.util.find_spec("torch") is not None)


# ------------------------------------------------------------------------------------------
# what the look-alike is: tinygradx's own objects under PyTorch's names
# ------------------------------------------------------------------------------------------

def test_the_lookalike_hands_out_tinygradx_objects():
    with compat.installed() as torch:
        import torch as imported
        import torch.nn as nn
        import torch.nn.functional as F
        import torch.optim as optim
        from torch import Tensor, no_grad
        assert imported is torch is compat.torch
        assert torch.Tensor is Tensor and isinstance(tgx.zeros(1), Tensor)
        assert issubclass(tnn.Parameter, Tensor) and Tensor.masked_fill is tgx.Tensor.masked_fill
        assert nn.Linear is tnn.Linear and nn.Module is tnn.Module and nn.Parameter is \
            tnn.Parameter and nn.ModuleList is tnn.ModuleList and nn.KLDivLoss is tnn.KLDivLoss
        assert F.softmax is tF.softmax and F.cross_entropy is tF.cross_entropy and \
            F.kl_div is tF.kl_div
        assert optim.AdamW is toptim.AdamW and optim.Adam is toptim.Adam
        assert torch.nn.utils.clip_grad_norm_ is toptim.clip_grad_norm_
        assert torch.nn.utils.clip_grad_value_ is toptim.clip_grad_value_
        assert nn.init.xavier_uniform_ is tnn.init.xavier_uniform_
        assert optim.lr_scheduler.LambdaLR is toptim.lr_scheduler.LambdaLR
        assert no_grad is tgx.no_grad and torch.manual_seed is tgx.manual_seed
        assert torch.cat is tgx.cat and torch.topk is tgx.topk and torch.zeros is tgx.zeros
        assert torch.autograd.grad is tgx.grad and torch.autograd.no_grad is tgx.no_grad


def test_dtype_names():
    torch = compat.torch
    for name, np_type in [("float32", np.float32), ("float", np.float32),
                          ("float64", np.float64), ("double", np.float64),
                          ("float16", np.float16), ("half", np.float16), ("int64", np.int64),
                          ("long", np.int64), ("int32", np.int32), ("int", np.int32),
                          ("int16", np.int16), ("short", np.int16), ("int8", np.int8),
                          ("uint8", np.uint8), ("bool", np.bool_)]:
        assert getattr(torch, name) is np_type, name
    x = torch.zeros(2, 3, dtype=torch.long)
    assert x.dtype == torch.long and x.dtype == torch.int64
    assert torch.ones(2).double().dtype == torch.float64


def test_cuda_says_there_is_no_gpu():
    torch = compat.torch
    assert torch.cuda.is_available() is False
    assert torch.cuda.device_count() == 0
    assert torch.cuda.manual_seed(0) is None and torch.cuda.manual_seed_all(0) is None


def test_dir_lists_what_is_provided():
    torch = compat.torch
    names = dir(torch)
    assert {"nn", "optim", "cat", "Tensor", "float32", "no_grad"} <= set(names)
    assert "trace" not in names and "functional" not in names
    assert "Linear" in dir(torch.nn) and "softmax" in dir(torch.nn.functional)


# ------------------------------------------------------------------------------------------
# refusals: every missing API names itself
# ------------------------------------------------------------------------------------------

def message(name):
    return f"{name} is not available in {LAYER}"


# attribute access: (expression, the name the error must give)
ATTRIBUTES = [
    ("torch.fft", "torch.fft"),
    ("torch.linalg.norm", "torch.linalg"),
    ("torch.special", "torch.special"),
    ("torch.jit", "torch.jit"),
    ("torch.trace", "torch.trace"),
    ("torch.fft.rfft", "torch.fft"),
    ("torch.hub", "torch.hub"),
    ("torch.backends.mkldnn", "torch.backends.mkldnn"),
    ("torch.distributed.rpc", "torch.distributed.rpc"),
    ("torch.nn.LazyLinear", "torch.nn.LazyLinear"),
    ("torch.functional", "torch.functional"),
    ("torch.profiler", "torch.profiler"),
    ("torch.autograd.forward_ad", "torch.autograd.forward_ad"),
    ("torch.nn.LazyBatchNorm2d", "torch.nn.LazyBatchNorm2d"),
    ("torch.nn.LazyConv3d", "torch.nn.LazyConv3d"),
    ("torch.nn.LazyConvTranspose2d", "torch.nn.LazyConvTranspose2d"),
    ("torch.nn.functional.scaled_mm", "torch.nn.functional.scaled_mm"),
    ("torch.nn.SyncBatchNorm", "torch.nn.SyncBatchNorm"),
    ("torch.nn.utils.parametrize", "torch.nn.utils.parametrize"),
    ("torch.nn.utils.spectral_norm", "torch.nn.utils.spectral_norm"),
    ("torch.optim.swa_utils", "torch.optim.swa_utils"),
    ("torch.cuda.graphs", "torch.cuda.graphs"),
    ("torch.utils.data.IterDataPipe", "torch.utils.data.IterDataPipe"),
    ("torch.utils.checkpoint", "torch.utils.checkpoint"),
    ("torch.__version__", "torch.__version__"),
]


@pytest.mark.parametrize("expr,name", ATTRIBUTES, ids=[a for a, _ in ATTRIBUTES])
def test_a_missing_attribute_names_itself(expr, name):
    with pytest.raises(AttributeError) as e:
        eval(expr, {"torch": compat.torch})
    assert str(e.value).startswith(message(name)), str(e.value)
    parent, _, leaf = name.rpartition(".")
    assert not hasattr(compat.lookalike.MODULES[parent], leaf)   # hasattr-style checks work


# import statements: (statement, the name the error must give)
IMPORTS = [
    ("import torch.fft", "torch.fft"),
    ("from torch import fft", "torch.fft"),
    ("import torch.distributed.rpc as rpc", "torch.distributed.rpc"),
    ("from torch.utils.tensorboard import SummaryWriter", "torch.utils.tensorboard"),
    ("import torch.utils.data.datapipes", "torch.utils.data.datapipes"),
    ("from torch.utils.checkpoint import checkpoint", "torch.utils.checkpoint"),
    ("from torch.nn.parallel import replicate", "torch.nn.parallel.replicate"),
    ("from torch.nn import LazyBatchNorm1d", "torch.nn.LazyBatchNorm1d"),
    ("from torch.nn.utils.parametrizations import weight_norm",
     "torch.nn.utils.parametrizations"),
    ("import torch.backends.mkldnn", "torch.backends.mkldnn"),
    ("from torch.cuda.graphs import graph", "torch.cuda.graphs"),
    ("from torch.optim.swa_utils import AveragedModel", "torch.optim.swa_utils"),
    ("from torch.func import vmap", "torch.func.vmap"),
    ("from torch.autograd.functional import vjp", "torch.autograd.functional.vjp"),
    ("import torch.jit", "torch.jit"),
    ("from torch import jit", "torch.jit"),
]


@pytest.mark.parametrize("stmt,name", IMPORTS, ids=[s for s, _ in IMPORTS])
def test_a_missing_import_names_itself(stmt, name):
    with compat.installed():
        with pytest.raises(ImportError) as e:
            exec(stmt, {})
    assert str(e.value).startswith(message(name)), str(e.value)


@pytest.mark.parametrize("name", sorted(REASONS))
def test_every_refusal_with_a_reason_names_the_api_and_gives_the_reason(name):
    """Each entry of the reasons table, as an attribute and as an import."""
    parent, _, leaf = name.rpartition(".")
    facade = compat.lookalike.MODULES[parent]
    with pytest.raises(AttributeError) as e:
        getattr(facade, leaf)
    assert str(e.value) == f"{message(name)}: {REASONS[name]}"
    with compat.installed():
        with pytest.raises(ImportError) as e:
            exec(f"from {parent} import {leaf}", {})
    assert str(e.value) == f"{message(name)}: {REASONS[name]}"


def test_a_name_tinygradx_has_with_another_meaning_is_refused():
    """tgx.trace (a shape table) is not torch.trace (the sum of a diagonal)."""
    assert callable(tgx.trace)
    with pytest.raises(AttributeError, match="torch.trace is not available.*diagonal"):
        _ = compat.torch.trace
    for module in ("fused", "ops", "perf", "functional"):        # engine modules of tinygradx
        assert not compat.torch.provides(module)
    assert compat.torch.autograd is compat.lookalike.autograd    # its own facade, not the engine


def test_messages_name_the_module_a_submodule_import_asked_for():
    """`from torch.utils.checkpoint import checkpoint`: the missing piece is the module."""
    with compat.installed():
        with pytest.raises(ImportError) as e:
            exec("from torch.utils.checkpoint import checkpoint", {})
    assert e.value.name == "torch.utils.checkpoint"
    assert "not available" in str(e.value)


# ------------------------------------------------------------------------------------------
# sys.modules: installed for a block, restored after; PyTorch set aside and put back
# ------------------------------------------------------------------------------------------

def torch_entries():
    return {n: m for n, m in sys.modules.items() if n == "torch" or n.startswith("torch.")}


def test_installed_restores_sys_modules():
    before = torch_entries()
    meta = list(sys.meta_path)
    with compat.installed() as torch:
        assert sys.modules["torch"] is torch
        assert sys.modules["torch.nn.functional"] is torch.nn.functional
        assert sys.meta_path[0] is compat._REFUSER
    assert torch_entries() == before
    assert sys.meta_path == meta


def test_installed_restores_sys_modules_after_an_error():
    before = torch_entries()
    with pytest.raises(ZeroDivisionError):
        with compat.installed():
            raise ZeroDivisionError
    assert torch_entries() == before
    assert compat._REFUSER not in sys.meta_path


def test_a_module_imported_inside_the_block_is_dropped_after(tmp_path, monkeypatch):
    (tmp_path / "uses_torch.py").write_text("import torch\nKIND = type(torch).__name__\n")
    (tmp_path / "plain.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with compat.installed():
        import plain  # noqa: F401
        import uses_torch
        assert uses_torch.torch is compat.torch
    assert "uses_torch" not in sys.modules                 # took the look-alike: dropped
    assert "plain" in sys.modules                          # took nothing from it: kept
    del sys.modules["plain"]


def test_nested_blocks():
    with compat.installed() as outer:
        with compat.installed() as inner:
            assert inner is outer is sys.modules["torch"]
        assert sys.modules["torch"] is outer
        with pytest.raises(ImportError, match="torch.fft is not available"):
            exec("import torch.fft", {})                  # still refused in the outer block
    assert not isinstance(sys.modules.get("torch"), compat.Facade)
    assert compat._REFUSER not in sys.meta_path


def test_a_pytorch_load_inside_a_lookalike_block(tmp_path):
    if not pytorch_installed():
        pytest.skip("PyTorch is not installed")
    (tmp_path / "m.py").write_text("import torch\nimport torch.nn.functional as F\n")
    with compat.installed() as torch:
        theirs = compat.load_module(tmp_path / "m.py", pytorch=True)
        assert not isinstance(theirs.torch, compat.Facade)
        assert sys.modules["torch"] is torch and sys.meta_path[0] is compat._REFUSER
        with pytest.raises(ImportError, match="torch.fft is not available"):
            exec("import torch.fft", {})
    assert compat._REFUSER not in sys.meta_path


def test_load_module_twice_gives_two_modules(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        from helper_layer import Double

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 2)
                self.double_it = Double()

            def forward(self, x):
                return self.double_it(self.fc(x))
    """))
    (tmp_path / "helper_layer.py").write_text(textwrap.dedent("""
        import torch.nn as nn

        class Double(nn.Module):
            def forward(self, x):
                return x * 2
    """))
    a = compat.load_module(path)
    b = compat.load_module(path)
    assert a is not b and a.Net is not b.Net and a.__name__ != b.__name__
    assert a.__name__.startswith("model__tinygradx")
    assert sys.modules[a.__name__] is a                    # kept under its unique name
    assert "helper_layer" not in sys.modules               # its sibling import was dropped
    assert issubclass(a.Net, tnn.Module) and a.torch is compat.torch
    net = a.Net()
    out = net(tgx.ones(1, 3))
    assert isinstance(out, tgx.Tensor) and out.shape == (1, 2)
    named = dict(net.named_parameters())
    assert set(named) == {"fc.weight", "fc.bias"}


def test_load_module_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="load_module: no such file"):
        compat.load_module(tmp_path / "nope.py")


def test_load_module_error_leaves_sys_modules_clean(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import torch\nimport torch.fft\n")
    before = set(sys.modules)
    with pytest.raises(ImportError, match="torch.fft is not available"):
        compat.load_module(path)
    assert set(sys.modules) - before == set()


def test_load_module_under_pytorch_and_under_the_lookalike(tmp_path):
    if not pytorch_installed():
        pytest.skip("PyTorch is not installed: only the look-alike side can run")
    path = tmp_path / "layer.py"
    path.write_text("import torch\nimport torch.nn as nn\nLINEAR = nn.Linear\n")
    mine = compat.load_module(path)
    theirs = compat.load_module(path, pytorch=True)
    again = compat.load_module(path)
    assert mine.LINEAR is tnn.Linear is again.LINEAR
    assert theirs.LINEAR.__module__.startswith("torch.nn")
    assert theirs.torch.__name__ == "torch" and not isinstance(theirs.torch, compat.Facade)
    import torch
    assert torch is theirs.torch                           # PyTorch was never imported twice


def test_pytorch_is_set_aside_inside_the_block_and_comes_back():
    if not pytorch_installed():
        pytest.skip("PyTorch is not installed")
    import torch
    real = torch
    with compat.installed():
        import torch
        assert torch is compat.torch
    import torch
    assert torch is real and sys.modules["torch"] is real


SUBPROCESS_ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1")


def run_python(code, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=cwd, env=SUBPROCESS_ENV, timeout=120)


def test_without_pytorch_installed(tmp_path):
    """sys.modules['torch'] = None makes `import torch` fail as if it were not installed."""
    (tmp_path / "m.py").write_text("import torch\nX = torch.zeros(2).sum().item()\n")
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None
        import tinygradx.compat as compat
        print(compat.load_module(sys.argv[1]).X)
        try:
            compat.load_module(sys.argv[1], pytorch=True)
        except ImportError as e:
            print(str(e).split(":")[0])
        try:
            import torch
        except ImportError:
            print("no torch outside")
    """)
    r = run_python(code, str(tmp_path / "m.py"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "0.0"
    assert lines[1].endswith("pytorch=True) needs PyTorch installed")
    assert lines[2] == "no torch outside"


# ------------------------------------------------------------------------------------------
# python -m tinygradx.compat SCRIPT ARGS
# ------------------------------------------------------------------------------------------

def run_main(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tinygradx.compat", *args],
                          capture_output=True, text=True, cwd=cwd, env=SUBPROCESS_ENV,
                          timeout=120)


def test_main_runs_a_script(tmp_path):
    (tmp_path / "layers.py").write_text("import torch.nn as nn\nLinear = nn.Linear\n")
    (tmp_path / "script.py").write_text(textwrap.dedent("""
        import sys
        import torch
        from layers import Linear

        if __name__ == "__main__":
            torch.manual_seed(0)
            layer = Linear(4, 2)
            print(type(layer).__module__, sys.argv[1:], layer(torch.ones(3, 4)).shape)
            sys.exit(int(sys.argv[1]))
    """))
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    r = run_main(str(tmp_path / "script.py"), "3", "--flag", cwd=elsewhere)
    assert r.returncode == 3, r.stderr
    # the layer is tinygradx's own (its class lives in the module that defines nn.Linear)
    assert r.stdout.strip() == f"{tgx.nn.Linear.__module__} ['3', '--flag'] (3, 2)"


def test_main_reports_a_refusal_with_a_traceback(tmp_path):
    (tmp_path / "script.py").write_text("import torch\nx = torch.fft.rfft(torch.ones(4))\n")
    r = run_main("script.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == f"AttributeError: {message('torch.fft')}"
    assert 'script.py", line 2' in r.stderr


def test_main_usage_and_mistakes(tmp_path):
    r = run_main("--help", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("usage: python -m tinygradx.compat SCRIPT")
    r = run_main(cwd=tmp_path)
    assert r.returncode == 2 and "usage:" in r.stdout
    r = run_main("missing.py", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "python -m tinygradx.compat: error: no such file: missing.py"
    r = run_main("--steps", cwd=tmp_path)
    assert r.returncode == 2 and "unknown option --steps" in r.stderr


def test_the_lookalike_imports_no_models():
    code = ("import sys, tinygradx.compat as c\n"
            "with c.installed():\n    import torch.nn\n"
            "print(sorted(m for m in sys.modules if m.startswith('tinygradx.models')))")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_autograd_and_func_are_tinygradx_own():
    """torch.autograd.Function / gradcheck / gradgradcheck / grad and torch.func are the
    engine's objects under PyTorch's names, importable both ways."""
    torch = compat.torch
    assert torch.autograd.Function is tgx.Function
    assert torch.autograd.gradcheck is tgx.gradcheck
    assert torch.autograd.gradgradcheck is tgx.gradgradcheck
    assert torch.autograd.grad is tgx.grad
    assert torch.func.grad is tgx.func.grad and torch.func.functional_call is \
        tgx.func.functional_call
    assert torch.autograd.functional.hessian is tgx.func.hessian
    with compat.installed():
        ns = {}
        exec("from torch.autograd import Function, gradcheck\n"
             "from torch.func import jacrev, vjp\n"
             "import torch.autograd.functional as AF", ns)
    assert ns["Function"] is tgx.Function and ns["jacrev"] is tgx.func.jacrev
    assert ns["AF"].vhp is tgx.func.vhp


def test_torch_style_function_through_the_look_alike():
    torch = compat.torch

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64, requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0]
    assert torch.autograd.gradcheck(Square.apply, (x,))
    # torch.func takes a Function only in the setup_context form, as PyTorch's
    # (tests/autograd/test_torch_diff_functions.py holds every transform to torch's rules)
    with pytest.raises(RuntimeError, match="square: .*must define setup_context"):
        torch.func.grad(lambda t: Square.apply(t).sum())(x)


def test_autograd_function_module():
    with compat.installed():
        ns = {}
        exec("from torch.autograd.function import Function, FunctionCtx, once_differentiable",
             ns)
    assert ns["Function"] is tgx.Function
    assert ns["once_differentiable"] is tgx.autograd.custom_function.once_differentiable


def test_gradcheck_takes_pytorch_keywords():
    torch = compat.torch
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch.tanh, (x,), eps=1e-6, atol=1e-5, nondet_tol=0.0,
                                    check_undefined_grad=False, check_batched_grad=False)
    assert torch.autograd.gradgradcheck(torch.tanh, (x,), check_fwd_over_rev=False,
                                        gen_non_contig_grad_outputs=False)
    with pytest.raises(ValueError, match="gradcheck: check_forward_ad=True is not available"):
        torch.autograd.gradcheck(torch.tanh, (x,), check_forward_ad=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'epsilon'"):
        torch.autograd.gradcheck(torch.tanh, (x,), epsilon=1e-6)
