"""Nothing silent: non-finite training, gradient checks that meet NaN, integer overflow at
the boundary, `.numpy()` on a tensor that requires grad, dtype mixes torch refuses, and the
messages that must name their problem (docs/tasks.md, "When things go wrong")."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import io
from tinygradx.gradcheck import GradcheckError, gradcheck, gradgradcheck

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--task", "copy", "--d_model", "16", "--n_head", "2", "--n_layer", "1",
        "--batch_size", "4", "--n_train", "40", "--eval_batches", "1", "--eval_examples", "2",
        "--health_interval", "0", "--progress", "false"]


def cli(*argv, stdin=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "tinygradx", *map(str, argv)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=180, input=stdin)


def error_line(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ------------------------------------------------------------------------------------------
# training that turns NaN
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("good") / "run"
    proc = cli("train", *TINY, "--max_steps", "2", "--eval_interval", "2", "--out_dir", run_dir)
    assert proc.returncode == 0, proc.stderr
    return run_dir


def test_nan_training_stops_names_the_step_and_keeps_the_checkpoint(good_run):
    before = (good_run / "checkpoint.npz").read_bytes()
    proc = cli("train", "--resume", good_run / "checkpoint.npz", "--lr", "1e30",
               "--max_steps", "20", "--eval_interval", "5")
    line = error_line(proc, 3)
    assert "step " in line and "non-finite loss" in line and "largest gradient" in line, line
    assert "the last good checkpoint" in line and "is kept" in line, line
    assert (good_run / "checkpoint.npz").read_bytes() == before


def test_nan_validation_loss_is_not_saved(good_run, tmp_path):
    # evaluating after every step: the update that blows the weights up is never saved
    import shutil
    run = shutil.copytree(good_run, tmp_path / "run")
    before = (run / "checkpoint.npz").read_bytes()
    proc = cli("train", "--resume", run / "checkpoint.npz", "--lr", "1e30",
               "--max_steps", "20", "--eval_interval", "1")
    line = error_line(proc, 3)
    assert "non-finite" in line and "is kept" in line, line
    assert (run / "checkpoint.npz").read_bytes() == before


@pytest.fixture(scope="module")
def nan_checkpoint(good_run, tmp_path_factory):
    arrays, meta = io.load_checkpoint(str(good_run / "checkpoint.npz"))
    name = sorted(k for k in arrays if k.startswith("model/"))[0]
    arrays[name] = arrays[name].copy()
    arrays[name].reshape(-1)[0] = np.nan
    path = tmp_path_factory.mktemp("nan") / "checkpoint.npz"
    io.save_checkpoint(str(path), arrays, meta)
    return path, name[len("model/"):]


def test_checkpoint_with_nan_weights_is_refused_unless_allowed(nan_checkpoint):
    path, name = nan_checkpoint
    line = error_line(cli("eval", "--checkpoint", path), 2)
    assert "NaN or inf" in line and name in line and "--allow_nonfinite" in line, line
    line = error_line(cli("translate", "--checkpoint", path, "12"), 2)
    assert "NaN or inf" in line
    proc = cli("eval", "--checkpoint", path, "--allow_nonfinite")
    assert proc.returncode == 0, proc.stderr


def test_trainer_from_checkpoint_refuses_nan_weights(nan_checkpoint):
    from tinygradx.models.training.trainer import Trainer
    path, name = nan_checkpoint
    with pytest.raises(io.CheckpointError, match="NaN or inf"):
        Trainer.from_checkpoint(path, progress=False)
    trainer = Trainer.from_checkpoint(path, progress=False, allow_nonfinite=True)
    # and a save of such weights never replaces a file
    target = path.parent / "again.npz"
    from tinygradx.models.training.health import NonFiniteError
    with pytest.raises(NonFiniteError, match="checkpoint not saved"):
        trainer.save(str(target))
    assert not target.exists()


def test_sampling_refuses_nan_probabilities():
    from tinygradx.models.nets.layers import sample_next
    logits = np.zeros((2, 5))
    logits[1, 2] = np.nan
    with pytest.raises(ValueError, match="row 1 contain NaN"):
        sample_next(logits)
    with pytest.raises(ValueError, match="NaN"):
        sample_next(logits, temperature=0)
    with pytest.raises(ValueError, match="NaN or inf"):
        sample_next(np.array([[np.inf, 0.0]]))
    assert sample_next(np.array([[0.0, -np.inf]]), temperature=1.0).tolist() == [0]


def test_gpt_generate_refuses_nan_weights():
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    tgx.manual_seed(0)
    model = GPT(GPTConfig(block_size=8, vocab_size=5, n_layer=1, n_head=1, n_embd=4))
    with tgx.no_grad():
        model.lm_head.weight._data[...] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.generate(tgx.tensor([[1]]), 3)


# ------------------------------------------------------------------------------------------
# gradcheck / gradgradcheck meeting NaN and inf
# ------------------------------------------------------------------------------------------

def _x(values=(0.5, 1.5)):
    return tgx.tensor(np.array(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize("eps", [float("nan"), 0.0, float("inf")])
@pytest.mark.parametrize("check", [gradcheck, gradgradcheck])
def test_bad_eps_is_a_failure(check, eps):
    with pytest.raises(GradcheckError, match="eps must be a finite number other than 0"):
        check(lambda a: a * a, (_x(),), eps=eps)
    assert check(lambda a: a * a, (_x(),), eps=eps, raise_exception=False) is False
    assert check(lambda a: a * a, (_x(),), eps=-1e-6)     # a central difference, as torch


@pytest.mark.parametrize("check", [gradcheck, gradgradcheck])
def test_nan_input_is_a_failure_naming_the_input(check):
    x = _x((0.5, float("nan")))
    with pytest.raises(GradcheckError) as err:
        check(lambda a: a * a, (x,))
    msg = str(err.value)
    assert "input 0" in msg and "NaN at element (1,)" in msg, msg
    assert "fast backward" not in msg           # not blamed on a fast path disagreeing
    assert check(lambda a: a * a, (x,), raise_exception=False) is False


def test_inf_in_the_jacobians_is_a_failure():
    x = _x((0.0, 1.0))
    with pytest.raises(GradcheckError, match="Jacobian .*holds (NaN|inf)"):
        gradcheck(lambda a: a.sqrt(), (x,))       # d sqrt at 0 is inf
    assert gradcheck(lambda a: a.sqrt(), (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="NaN or inf"):
        gradcheck(lambda a: a.sqrt(), (x,), fast_mode=True)
    with pytest.raises(GradcheckError, match="holds"):
        gradgradcheck(lambda a: a.sqrt(), (x,))


def test_nan_grad_outputs_is_named():
    v = tgx.tensor(np.array([np.nan, 1.0]), requires_grad=True)
    with pytest.raises(GradcheckError, match=r"grad_outputs\[0\] holds NaN"):
        gradgradcheck(lambda a: a * a, (_x(),), grad_outputs=[v])


def test_finite_checks_still_pass():
    assert gradcheck(lambda a: (a * a).sum(), (_x(),))
    assert gradgradcheck(lambda a: (a * a * a).sum(), (_x(),))


# ------------------------------------------------------------------------------------------
# integers that do not fit: raise, as torch, instead of wrapping
# ------------------------------------------------------------------------------------------

OVERFLOWS = [
    lambda: tgx.tensor(2**63), lambda: tgx.tensor(-2**63 - 1), lambda: tgx.tensor([1, 2**63]),
    lambda: tgx.tensor([[1, 2], [3, 2**65]]), lambda: tgx.tensor([True, 2**63]),
    lambda: tgx.tensor(300, dtype=tgx.uint8), lambda: tgx.tensor([-256], dtype=tgx.uint8),
    lambda: tgx.tensor(128, dtype=tgx.int8), lambda: tgx.tensor(2**40, dtype=tgx.int32),
    lambda: tgx.tensor(300.0, dtype=tgx.uint8), lambda: tgx.full((2,), 2**63),
    lambda: tgx.full((2,), 300, dtype=tgx.uint8), lambda: tgx.arange(2**63 - 2, 2**63 + 1),
    lambda: tgx.arange(0, 2**64),
]


@pytest.mark.parametrize("i", range(len(OVERFLOWS)))
def test_integer_overflow_raises(i):
    with pytest.raises(OverflowError, match="without overflow"):
        OVERFLOWS[i]()


def test_values_in_range_and_float_targets_still_work():
    assert tgx.tensor(2**63 - 1).item() == 2**63 - 1
    assert tgx.tensor(-2**63).item() == -2**63
    assert tgx.tensor(2**63, dtype=tgx.float32).item() == float(2**63)
    assert tgx.tensor(2**70, dtype=tgx.float64).item() == float(2**70)
    assert tgx.tensor([1.5, 2**63]).dtype == tgx.float32          # a float among them: float
    assert tgx.tensor(-1, dtype=tgx.uint8).item() == 255            # torch wraps these
    assert tgx.full((2,), -1, dtype=tgx.uint8).tolist() == [255, 255]
    assert tgx.tensor(2, dtype=tgx.bool).item() is True
    assert tgx.tensor(2**63, dtype=tgx.bool).item() is True
    assert tgx.arange(0, 300, 100, dtype=tgx.uint8).tolist() == [0, 100, 200]


def test_overflow_matches_torch():
    pytest.importorskip("torch")
    import torch  # noqa: F401  (the expressions below name it)
    for make in ("tensor(2**63)", "tensor([1, 2**63])", "tensor(300, dtype={m}.uint8)",
                 "full((2,), 2**63)", "arange(0, 2**64)"):
        with pytest.raises((ValueError, RuntimeError, OverflowError)):
            eval("torch." + make.format(m="torch"))
        with pytest.raises(OverflowError):
            eval("tgx." + make.format(m="tgx"))


def test_linspace_bool_is_refused():
    with pytest.raises(TypeError, match="linspace: dtype bool"):
        tgx.linspace(0, 1, 3, dtype=tgx.bool)


# ------------------------------------------------------------------------------------------
# .numpy() of a tensor that requires grad, and scatter of another dtype
# ------------------------------------------------------------------------------------------

def test_numpy_refused_on_a_tensor_that_requires_grad():
    x = tgx.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"use tensor.detach\(\).numpy\(\)"):
        x.numpy()
    y = x * x
    with pytest.raises(RuntimeError, match="requires grad"):
        y.numpy()
    assert x.detach().numpy() is x._data
    assert x.numpy(force=True) is x._data                   # torch's force=True: detach()
    with tgx.no_grad():
        assert isinstance((x * 2).numpy(), np.ndarray)


def test_scatter_of_another_dtype_raises():
    x = tgx.zeros(3, dtype=tgx.float16)
    idx = tgx.tensor([0, 1])
    for call in (lambda: x.scatter(0, idx, tgx.ones(2)), lambda: x.scatter_add(0, idx, tgx.ones(2)),
                 lambda: x.clone().scatter_(0, idx, tgx.ones(2))):
        with pytest.raises(ValueError, match="expected src of the same dtype"):
            call()
    assert x.scatter(0, idx, 1.5).dtype == tgx.float16                 # a number is fine
    assert x.scatter(0, idx, tgx.ones(2, dtype=tgx.float16)).tolist() == [1.0, 1.0, 0.0]


# ------------------------------------------------------------------------------------------
# messages that name the problem
# ------------------------------------------------------------------------------------------

def test_tsv_with_too_few_pairs_names_the_file_and_counts(tmp_path):
    path = tmp_path / "two.tsv"
    path.write_text("hi\tsalut\nbye\tau revoir\n", encoding="utf-8")
    line = error_line(cli("train", "--task", "tsv", "--path", path, "--out_dir",
                          tmp_path / "run", "--max_steps", "1", "--progress", "false"), 2)
    assert str(path) in line and "too few sentence pairs: 2 read" in line, line
    assert "need at least 3" in line, line


def test_resume_of_the_runs_own_best_is_named_so(good_run, tmp_path):
    import shutil
    run = shutil.copytree(good_run, tmp_path / "run")
    line = error_line(cli("train", "--resume", run / "best.npz", "--max_steps", "5"), 2)
    assert "another run" not in line, line
    assert "earlier checkpoint of the run in" in line and "--overwrite" in line, line


def test_translate_names_characters_outside_the_vocabulary(good_run):
    proc = cli("translate", "--checkpoint", good_run / "checkpoint.npz", "12", "1z2@")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "warning" in lines[0], proc.stderr
    assert "'@'" in lines[0] and "'z'" in lines[0] and "<unk>" in lines[0], lines[0]
    assert len(proc.stdout.strip().splitlines()) == 2


# ------------------------------------------------------------------------------------------
# docs/tasks.md, "When things go wrong", quotes the errors in their own words
# ------------------------------------------------------------------------------------------

def doc_text(name="tasks.md"):
    """A docs page with its line breaks and runs of spaces folded into single spaces."""
    with open(os.path.join(REPO, "docs", name), encoding="utf-8") as f:
        return " ".join(f.read().split())


def test_docs_quote_the_non_finite_errors():
    from tinygradx.models.training.health import NonFiniteError, check_step_finite
    doc = doc_text()
    p = tgx.nn.Parameter(tgx.zeros(2))
    p.grad = tgx.tensor([np.nan, 0.0])
    with pytest.raises(NonFiniteError) as e:
        check_step_finite(4, float("nan"), [("src_embed.weight", p)],
                          "the last good checkpoint runs/dates/checkpoint.npz is kept")
    assert f"tinygradx train: error: {e.value}" in doc
    for fragment in ("; load an earlier checkpoint, or pass --allow_nonfinite "
                     "(allow_nonfinite=True) to load it anyway", "the weights hold NaN or inf (",
                     "non-finite validation loss (loss nan, largest weight",
                     "training stopped before saving this step"):
        assert fragment in doc, fragment
    from tinygradx.models.nets.layers import sample_next
    with pytest.raises(ValueError) as e:
        sample_next(np.array([[np.nan, 0.0]]))
    assert str(e.value) in doc


def test_docs_quote_the_bounds_and_relations(capsys):
    from tinygradx.models.training.config import ConfigError, validate_config
    doc = doc_text()
    for values in ({"grad_accum": 100_000_000}, {"lr": 0.01, "min_lr": 0.1}):
        with pytest.raises(ConfigError) as e:
            validate_config(values)
        assert str(e.value) in doc, str(e.value)
    from tinygradx.models.apps.cli import main
    with pytest.raises(SystemExit):
        main(["graph", "--layers", "100000"])
    assert capsys.readouterr().err.strip() in doc
    for fragment in ("source token(s) outside the vocabulary of task", "are read as <unk>",
                     "terminated at step N: checkpoint saved to", "exits with code 3"):
        assert fragment in doc, fragment
    graphs = doc_text("graphs.md")
    assert "\\u003c" in graphs and "dot_text" in graphs
