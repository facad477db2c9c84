"""`python -m tinygradx.compat --check SCRIPT`: a PyTorch script's model on PyTorch and on
tinygradx from the same weights and inputs, the first op whose value or gradient departs named.

- a departure planted in tinygradx (F.gelu made the tanh approximation; F.gelu with a wrong
  derivative) is named: its module path, the op, the shapes, the two values;
- a script whose own PyTorch-style custom Function departs only under tinygradx (its forward,
  or its backward) gets that Function named;
- every PyTorch-style script of tests/compat_models/ agrees (one test per file, so a script
  added there is checked too);
- without PyTorch, with no such script, a script with no model, a script that fails, a bad
  flag: one line, exit status 2, no traceback.
"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.functional as TF
from tinygradx.compat import check
from tinygradx.compat.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "tests", "compat_models")
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="--check compares with PyTorch, which "
                                                        "is not installed (the oracle extra)")

# a small pre-LN model whose MLPs call F.gelu from the script's own code
BLOCKS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class Net(nn.Module):
    def __init__(self, d=4, n=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(2, 5, 4)
    print(model(x).sum())
'''

# a PyTorch-style custom Function whose forward (PLANT_FORWARD) or backward (PLANT_BACKWARD)
# departs under tinygradx only: the deliberate departure of a port
SQUARE = '''
import torch
import torch.nn as nn

UNDER_TINYGRADX = type(torch).__module__.startswith("tinygradx")
FORWARD = 1.001 if UNDER_TINYGRADX and PLANT == "forward" else 1.0
BACKWARD = 1.25 if UNDER_TINYGRADX and PLANT == "backward" else 1.0


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * FORWARD

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * x * grad * BACKWARD


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 6)
        self.outer = nn.Linear(6, 2)

    def forward(self, x):
        return self.outer(Square.apply(self.inner(x)).tanh())


if __name__ == "__main__":
    torch.manual_seed(0)
    Net()(torch.randn(4, 3)).sum().backward()
'''


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(capsys, *argv):
    """(exit status, stdout, stderr) of the command, in this process."""
    status = main(["--check", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def field(report, name):
    """The text after `name` on the report's line that starts with it."""
    for line in report.splitlines():
        if line.strip().startswith(name + " "):
            return line.strip()[len(name):].strip()
    raise AssertionError(f"no {name!r} line in:\n{report}")


# -- departures planted in tinygradx --------------------------------------------------------------

@needs_torch
def test_names_a_planted_forward_op(tmp_path, capsys, monkeypatch):
    """tinygradx's F.gelu turned into the tanh approximation (a departure of ~1e-4): the report
    names the first MLP's gelu, the line of the script, the shapes and both values."""
    script = write(tmp_path, "blocks.py", BLOCKS)
    real = TF.gelu
    monkeypatch.setattr(TF, "gelu", lambda x, approximate="none": real(x, approximate="tanh"))
    status, out, err = run(capsys, script)
    assert status == 1 and err == "", err
    assert out.startswith("--check blocks.py: the forward pass departs at op "), out
    assert field(out, "module") == "blocks.0.mlp (MLP)"
    assert field(out, "op").startswith("gelu: PyTorch F.gelu, tinygradx gelu, at blocks.py:14")
    assert field(out, "shapes") == "(2, 5, 16) -> (2, 5, 16)"
    assert field(out, "PyTorch").startswith("[") and field(out, "tinygradx").startswith("[")
    diff = float(field(out, "max |diff|").split(",")[0])
    assert 1e-6 < diff < 1e-3, out                 # the tanh approximation's error, in float32


@needs_torch
def test_names_a_planted_backward(tmp_path, capsys, monkeypatch):
    """tinygradx's F.gelu with the right values and a learner's wrong derivative, Phi(x) (the
    x * phi(x) term forgotten): the forward agrees, and the report names the backward of the
    last gelu, the gradient it gives and both values."""
    script = write(tmp_path, "blocks.py", BLOCKS)
    real = TF.gelu

    class HalfGelu(tgx.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return real(x)

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * 0.5 * (1 + tgx.erf(x / 2 ** 0.5))

    monkeypatch.setattr(TF, "gelu", lambda x, approximate="none": HalfGelu.apply(x))
    status, out, err = run(capsys, script)
    assert status == 1 and err == "", err
    assert "the forward pass agrees" in out and "the gradients depart" in out, out
    assert field(out, "module") == "blocks.1.mlp (MLP)"
    assert field(out, "op").startswith("HalfGelu (its backward): PyTorch F.gelu, tinygradx "
                                       "HalfGelu")
    assert field(out, "shapes") == "(2, 5, 16) -> (2, 5, 16)"
    assert field(out, "gradient") == ("of its input 1 of 1: the output of blocks.1.mlp.fc, "
                                      "shape (2, 5, 16)")


# -- a PyTorch-style custom Function -------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("plant", ["forward", "backward"])
def test_names_a_custom_function_that_departs(tmp_path, capsys, plant):
    script = write(tmp_path, "square.py", f"PLANT = {plant!r}\n" + SQUARE)
    status, out, err = run(capsys, script)
    assert status == 1 and err == "", err
    assert field(out, "module") == "the model (Net)"
    if plant == "forward":
        assert out.startswith("--check square.py: the forward pass departs at op 1 of 2 "), out
        assert field(out, "op").startswith("Square: PyTorch Square.apply "
                                           "(torch.autograd.Function), tinygradx Square, at "
                                           "square.py:")
        assert field(out, "shapes") == "(4, 6) -> (4, 6)"
    else:
        assert "the forward pass agrees (2 ops, 3 module calls); the gradients depart" in out
        assert field(out, "op").startswith("Square (its backward): PyTorch Square.apply "
                                           "(torch.autograd.Function), tinygradx Square")
        assert field(out, "shapes") == "(4, 6) -> (4, 6)"
        assert field(out, "gradient") == ("of its input 1 of 1: the output of inner, shape "
                                          "(4, 6)")
        rel = float(field(out, "max |diff|").split(", ")[1].split()[0])
        assert 0.1 < rel < 0.5, out                # 1.25 against 1: a quarter of the gradient


@needs_torch
def test_the_same_custom_function_agrees(tmp_path, capsys):
    script = write(tmp_path, "square.py", "PLANT = None\n" + SQUARE)
    status, out, err = run(capsys, script)
    assert status == 0 and err == "", err
    assert out.startswith("--check square.py: PyTorch and tinygradx agree on 2 ops in 3 module "
                          "calls and on the gradients of 4 parameters (float32)"), out
    assert out.count("\n") == 1


# -- every PyTorch-style script of tests/compat_models -------------------------------------------

SCRIPTS = sorted(f for f in os.listdir(MODELS) if f.endswith(".py"))


@needs_torch
@pytest.mark.parametrize("script", SCRIPTS)
def test_every_compat_model_script_agrees(script):
    report = check.check(os.path.join(MODELS, script))
    assert report.agree, report.text
    assert report.text.startswith(f"--check {script}: PyTorch and tinygradx agree on ")
    assert "\n" not in report.text


@needs_torch
def test_float64_and_the_flags(capsys):
    status, out, _ = run(capsys, "--float64", "--rtol", "1e-9", "--seed=3",
                         os.path.join(MODELS, "small_cnn.py"), "--epochs", "1")
    assert status == 0 and "(float64)" in out, out
    rel = float(out.split("largest difference ")[1].split()[0])
    assert rel < 1e-12, out


@needs_torch
def test_random_draws_and_dropout_in_a_forward(tmp_path, capsys):
    """A forward that draws (torch.randn_like, torch.rand) and drops out (nn.Dropout, F.dropout
    in training mode): PyTorch's draws are replayed, dropout is off on both sides."""
    script = write(tmp_path, "noisy.py", '''
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Noisy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                h = self.drop(self.fc(x)) + torch.randn_like(x)
                h = F.dropout(h, 0.3, training=self.training) * torch.rand(x.shape)
                return h.sum(-1)

        if __name__ == "__main__":
            Noisy().train()(torch.ones(3, 4))
        ''')
    status, out, err = run(capsys, script)
    assert status == 0 and err == "", out + err


@needs_torch
def test_a_compiled_model(tmp_path, capsys):
    """A script that compiles its model (nanoGPT's train.py does, unless --compile=False): the
    check runs the model itself on both sides and agrees."""
    script = write(tmp_path, "compiled.py", '''
        import torch
        import torch.nn as nn

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = torch.compile(nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)))
            model(torch.randn(3, 4)).sum().backward()
        ''')
    status, out, err = run(capsys, script)
    assert status == 0 and err == "", out + err
    assert out.startswith("--check compiled.py: PyTorch and tinygradx agree on "), out


# -- one line when the check cannot run ----------------------------------------------------------

def one_line(err):
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("argv, says", [
    ([], "no script given"),
    (["--rtol"], "--rtol needs a value"),
    (["--rtol", "abc", "x.py"], "--rtol takes a number, got 'abc'"),
    (["--atol=-1", "x.py"], "--atol takes a finite number >= 0, got '-1'"),
    (["--seed", "1.5", "x.py"], "--seed takes an integer, got '1.5'"),
    (["--float64=yes", "x.py"], "--float64 takes no value"),
    (["--bogus", "x.py"], "unknown option --bogus"),
    (["no_such_script.py"], "no such file: no_such_script.py"),
])
def test_bad_arguments_are_one_line(capsys, argv, says):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert says in one_line(err)
    assert err.startswith("python -m tinygradx.compat --check: error: ")


def test_without_torch_one_line(tmp_path):
    """PyTorch hidden from the import system: the one line says so, exit status 2."""
    script = write(tmp_path, "m.py", "import torch\n")
    code = ("import sys; sys.modules['torch'] = None\n"
            "from tinygradx.compat.__main__ import main\n"
            f"sys.exit(main(['--check', {script!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert one_line(r.stderr) == ("python -m tinygradx.compat --check: PyTorch is not "
                                  "installed, and the check compares with it (pip install torch)")


@needs_torch
@pytest.mark.parametrize("text, says", [
    ("import torch\nx = torch.ones(3)\nprint(x.sum())\n",
     "m.py calls no nn.Module when run as a script"),
    ("import torch\nraise ValueError('the data file\\nis missing')\n",
     "m.py raised ValueError under PyTorch before calling a model (line 2): the data file is "
     "missing"),
    ("import sys\nsys.exit(3)\n", "m.py exited with status 3 under PyTorch before calling a "
                                  "model"),
    ("def broken(:\n", "m.py raised SyntaxError under PyTorch before calling a model"),
    ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
     "        return x.fancy()\nM()(torch.ones(2))\n",
     "m.py: the model raised AttributeError under PyTorch on its own inputs"),
])
def test_script_problems_are_one_line(tmp_path, capsys, text, says):
    script = write(tmp_path, "m.py", text)
    status, out, err = run(capsys, script)
    assert status == 2 and out == ""
    assert says in one_line(err), err


@needs_torch
def test_a_script_that_stops_only_under_tinygradx(tmp_path, capsys):
    """What the look-alike lacks stops the script before its model: a departure (status 1),
    one line naming it."""
    script = write(tmp_path, "m.py", "import torch\nx = torch.fft.rfft(torch.ones(4))\n"
                                     "torch.nn.Linear(4, 1)(torch.ones(4))\n")
    status, out, err = run(capsys, script)
    assert status == 1 and err == ""
    assert out.strip() == ("--check m.py: m.py raised AttributeError under tinygradx before "
                           "calling a model (line 2): torch.fft is not available in "
                           "tinygradx's PyTorch compatibility layer (tinygradx.compat)")


def test_the_command_line(tmp_path):
    """The command itself, in a fresh process: agreement is one line and status 0 (or, without
    PyTorch, the one line saying so and status 2)."""
    r = subprocess.run([sys.executable, "-m", "tinygradx.compat", "--check",
                        os.path.join(MODELS, "custom_op.py")], capture_output=True, text=True,
                       timeout=600, cwd=str(tmp_path))
    if not HAS_TORCH:
        assert r.returncode == 2 and "PyTorch is not installed" in r.stderr
        return
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("--check custom_op.py: PyTorch and tinygradx agree on "), r.stdout
    assert r.stdout.count("\n") == 1


def test_difference_and_tolerance():
    from tinygradx.compat.check_compare import Tolerance, difference
    a = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    assert difference(a, a) == (0.0, 2.0)
    assert difference(a, a[::-1].copy())[0] == np.inf           # NaN and inf elsewhere
    tol = Tolerance()
    assert not tol.departs(np.float32([1, 2]) * (1 + 1e-6), np.float32([1, 2]))[0]
    assert tol.departs(np.float32([1, 2]) * (1 + 1e-4), np.float32([1, 2]))[0]
    assert tol.departs(np.float64([1, 2]) * (1 + 1e-8), np.float64([1, 2]))[0]
    assert tol.departs(np.float64([1, 2]), np.float32([1, 2]))[0]     # another dtype
    assert tol.departs(np.int64([1, 2]), np.int64([1, 3]))[0]
    assert not Tolerance(rtol=1e-3).departs(np.float64([1, 2]) * (1 + 1e-4),
                                            np.float64([1, 2]))[0]
