"""`python -m tinygradx.compat --check SCRIPT [ARGS...]`: run a PyTorch script's model on
PyTorch and on tinygradx from the same weights and inputs, and name the first op whose value or
gradient departs.

Which model, which inputs: the script runs as `python SCRIPT ARGS...` would, once with PyTorch
and once with the look-alike, each until it first calls a module (its model, on the inputs it
made: a batch, an example); that call is stopped there. A script that calls no module when run
gets its `main()` called, if it has one. PyTorch's model gives its weights to tinygradx's (the
state dict: buffers too), each module is put in the same train/eval mode, and both run the
inputs of PyTorch's call, every op recorded (check_record.py). The loss whose gradients are
compared is a fixed random projection of the outputs, sum(out * R) with R seeded, which
reaches every output element with a different weight (a plain sum would hide a softmax's
gradient). check_compare.py pairs the records and finds the first departure.

Exit status: 0 when the two agree, 1 at a departure, 2 when the check cannot run (no PyTorch,
no such script, no model to find, a bad flag, the script failing under PyTorch); each of those
is one line on stderr.
"""
from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from . import check_compare as cmp
from .check_record import TinySide, TorchSide, dropout_off, loss_terms

USAGE = """usage: python -m tinygradx.compat --check [OPTIONS] SCRIPT [ARGS...]

Run SCRIPT (a Python file written for PyTorch) with PyTorch and with tinygradx's look-alike up
to the first model it calls, give both models PyTorch's weights and inputs, and name the first
op whose value or gradient departs: its module path, the op, the shapes and the two values.
Needs PyTorch installed. ARGS are passed on as sys.argv[1:].

  --rtol R     relative tolerance (default by dtype: 1e-5 float32, 1e-10 float64)
  --atol A     absolute tolerance (default by dtype: 1e-7 float32, 1e-13 float64)
  --float64    run both models in float64 (model.double(), float inputs cast)
  --seed N     the seed of the loss's random projection (default 0)

Exit status: 0 agree, 1 departure, 2 the check could not run."""

PROG = "python -m tinygradx.compat --check"


class CheckError(Exception):
    """What keeps the check from running (the script, its model, a flag): one line, exit 2."""


class _Found(BaseException):
    """The first module call of a script run (a BaseException: the script's own `except
    Exception` must not swallow it)."""

    def __init__(self, model, args=(), kwargs=None):
        super().__init__()
        self.model, self.args, self.kwargs = model, args, kwargs or {}


@dataclass
class Options:
    rtol: float | None = None
    atol: float | None = None
    float64: bool = False
    seed: int = 0


@dataclass
class Report:
    agree: bool
    text: str


def parse(argv):
    """(Options, script, script arguments) from the arguments after --check."""
    opts, argv = Options(), list(argv)
    while argv and argv[0].startswith("-"):
        flag = argv.pop(0)
        name, eq, value = flag.partition("=")
        if name in ("-h", "--help"):
            raise SystemExit(0)
        if name == "--float64":
            if eq:
                raise CheckError("--float64 takes no value")
            opts.float64 = True
            continue
        if name not in ("--rtol", "--atol", "--seed"):
            raise CheckError(f"unknown option {name} (options: --rtol, --atol, --float64, "
                             f"--seed; then the script)")
        if not eq:
            if not argv:
                raise CheckError(f"{name} needs a value")
            value = argv.pop(0)
        try:
            number = int(value) if name == "--seed" else float(value)
        except ValueError:
            kind = "an integer" if name == "--seed" else "a number"
            raise CheckError(f"{name} takes {kind}, got {value!r}") from None
        if name != "--seed" and not (number >= 0 and np.isfinite(number)):
            raise CheckError(f"{name} takes a finite number >= 0, got {value!r}")
        if name == "--seed" and number < 0:
            raise CheckError(f"--seed takes an integer >= 0, got {value!r}")
        setattr(opts, name[2:], number)
    if not argv:
        raise CheckError("no script given")
    script = argv.pop(0)
    if not os.path.isfile(script):
        raise CheckError(f"no such file: {script}")
    return opts, script, argv


def main(argv):
    """The command: prints the report (or one line on stderr) and returns the exit status."""
    try:
        opts, script, args = parse(argv)
    except SystemExit:
        print(USAGE)
        return 0
    except CheckError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401  (PyTorch itself: the reference)
    except ImportError:
        print(f"{PROG}: PyTorch is not installed, and the check compares with it "
              f"(pip install torch)", file=sys.stderr)
        return 2
    try:
        report = check(script, args, opts)
    except CheckError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(report.text)
    return 0 if report.agree else 1


# --------------------------------------------------------------------------------------------
# the script, run to its first model call
# --------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _stop_at_first_call_torch(torch):
    """PyTorch's side stops at the first module call. torch.compile gives the model itself
    meanwhile, as the look-alike's does: compiling changes how fast a model runs, not what it
    computes, and a compiled wrapper would keep this stop in its cache."""
    Module = torch.nn.Module
    original, compile_ = Module.__dict__["__call__"], torch.compile

    def call(self, *args, **kwargs):
        raise _Found(self, args, kwargs)

    def eager(model=None, *args, **kwargs):
        return (lambda m: m) if model is None else model

    Module.__call__, torch.compile = call, eager
    try:
        yield
    finally:
        Module.__call__, torch.compile = original, compile_


@contextlib.contextmanager
def _stop_at_first_call_tiny():
    """tinygradx's side stops at the first op inside a module call: its outermost module."""
    from tinygradx import autograd

    def seen(ctx, inputs, out, seconds):
        frame, outer = ctx.frame, None
        while frame is not None:
            outer = getattr(frame, "module", None) or outer
            frame = frame.parent
        if outer is not None:
            raise _Found(outer)

    with autograd.observe(seen):
        yield


def _run_to_first_call(path, argv, side, stop):
    """The script's first module call (a _Found), or None when it ran to its end without one
    (then its main(), if it defines one and never checks __name__, is called)."""
    name = os.path.basename(path)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path))
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(), stop:
            warnings.simplefilter("ignore")
            try:
                globs = runpy.run_path(path, run_name="__main__")
                with open(path, encoding="utf-8") as f:
                    guarded = "__main__" in f.read()
                if callable(globs.get("main")) and not guarded:
                    globs["main"]()
            except _Found as found:
                return found
    except SystemExit as e:
        if e.code not in (None, 0):
            last = (err.getvalue().strip().splitlines() or [""])[-1]
            raise _Stopped(side, f"{name} exited with status {e.code} under {side} before "
                                 f"calling a model" + (f": {last}" if last else "")) from None
    except Exception as e:                                  # noqa: BLE001 (any error is news)
        raise _Stopped(side, f"{name} raised {type(e).__name__} under {side} before calling a "
                             f"model{_line_in(e, path)}: {_one_line(e)}") from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    return None


class _Stopped(Exception):
    def __init__(self, side, message):
        super().__init__(message)
        self.side = side


def _line_in(exc, path):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return f" (line {frames[-1].lineno})" if frames else ""


def _one_line(e):
    return " ".join(str(e).split()) or type(e).__name__


# --------------------------------------------------------------------------------------------
# the model's inputs, from PyTorch's call to either side
# --------------------------------------------------------------------------------------------

class _Array:
    def __init__(self, array, requires_grad):
        self.array, self.requires_grad = array, requires_grad


class _Named:
    def __init__(self, cls, items):
        self.cls, self.items = cls, items


class _Dtype:
    def __init__(self, name):
        self.name = name


def _neutral(obj, torch, where):
    """PyTorch's arguments as arrays and plain values, for either side."""
    if isinstance(obj, torch.Tensor):
        return _Array(obj.detach().cpu().numpy().copy(), obj.requires_grad)
    if isinstance(obj, torch.dtype):
        return _Dtype(str(obj).rpartition(".")[2])
    if isinstance(obj, torch.device):
        return str(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return _Named(type(obj), [_neutral(o, torch, where) for o in obj])
    if isinstance(obj, (tuple, list)):
        return type(obj)(_neutral(o, torch, where) for o in obj)
    if isinstance(obj, dict):
        return {k: _neutral(v, torch, f"{where}[{k!r}]") for k, v in obj.items()}
    if obj is None or isinstance(obj, (bool, int, float, str, slice)):
        return obj
    raise CheckError(f"the model's argument {where} is a {type(obj).__module__}."
                     f"{type(obj).__qualname__}; --check hands a model tensors, numbers, "
                     f"strings, dtypes and tuples, lists or dicts of them")


def _build(obj, tensor, dtype, named, float64, grad_inputs):
    """Either side's arguments from _neutral's."""
    def go(o):
        if isinstance(o, _Array):
            a = o.array
            if float64 and a.dtype.kind == "f":
                a = a.astype(np.float64)
            t = tensor(a)
            if a.dtype.kind == "f" and (o.requires_grad or grad_inputs):
                t.requires_grad_()
            return t
        if isinstance(o, _Dtype):
            return dtype(o.name)
        if isinstance(o, _Named):
            return named(o.cls)(*[go(x) for x in o.items])
        if isinstance(o, (tuple, list)):
            return type(o)(go(x) for x in o)
        if isinstance(o, dict):
            return {k: go(v) for k, v in o.items()}
        return o
    return go(obj)


def _lookalike_class(cls):
    """The look-alike's class of PyTorch's class `cls` (torch.nn.utils.rnn.PackedSequence)."""
    from .lookalike import MODULES
    facade = MODULES.get(cls.__module__)
    found = getattr(facade, cls.__qualname__, None) if facade is not None and \
        facade.provides(cls.__qualname__) else None
    if found is None:
        raise CheckError(f"the model takes a {cls.__module__}.{cls.__qualname__}, which the "
                         f"look-alike does not have")
    return found


# --------------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------------

def check(script, argv=(), opts=None):
    """Run the check of one script (see the module docstring); returns a Report."""
    opts = opts or Options()
    path = os.path.abspath(script)
    name = os.path.basename(path)
    theirs = _pytorch_side(path, name, argv, opts)
    mine = _tinygradx_side(path, name, argv, opts, theirs)
    if isinstance(mine, Report):
        return mine
    from .check_report import agreement, backward_departure, forward_departure
    tol = cmp.Tolerance(opts.rtol, opts.atol)
    al = cmp.Alignment(theirs.rec.records, mine.rec.records, tol)
    dep = al.forward_departure()
    if dep is not None:
        return Report(False, forward_departure(name, al, dep, mine.names, tol, mine.rec))
    params = _param_pairs(theirs.model, mine.model)
    grad = al.gradient_departure(_grad_of, params, _current) if theirs.terms else None
    if grad is not None:
        return Report(False, backward_departure(name, al, grad, mine.names, tol))
    return Report(True, agreement(name, al, params, theirs.terms, opts))


class _Side:
    """What one side's run leaves: its model, its record, ..."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _pytorch_side(path, name, argv, opts):
    """The script under PyTorch to its first model call; that model's weights, modes and
    inputs kept; its forward recorded, then the loss's backward."""
    from . import pytorch
    with pytorch(), warnings.catch_warnings():
        try:
            import torch
        except ImportError as e:
            raise CheckError(f"PyTorch is not installed, and the check compares with it: "
                             f"{e}") from None
        try:
            found = _run_to_first_call(path, argv, "PyTorch", _stop_at_first_call_torch(torch))
        except _Stopped as e:
            raise CheckError(str(e)) from None
        if found is None:
            raise CheckError(f"{name} calls no nn.Module when run as a script: --check checks "
                             f"the first model a script calls; add a few lines under `if "
                             f"__name__ == \"__main__\":` that build it and call it on an "
                             f"example input")
        warnings.simplefilter("ignore")
        model = found.model
        side = _Side(model=model, aliases=_aliases(model),
                     state={k: v.detach().cpu().numpy().copy()
                            for k, v in model.state_dict().items()},
                     modes=[(p, m.training) for p, m in model.named_modules()],
                     inputs=_neutral((tuple(found.args), dict(found.kwargs)), torch, "list"),
                     grad_inputs=not any(p.requires_grad for p in model.parameters()))
        side.quiet = dropout_off(model)
        if opts.float64:
            model.double()
        args, kwargs = _build(side.inputs, lambda a: torch.from_numpy(a.copy()),
                              lambda n: getattr(torch, n), lambda c: c, opts.float64,
                              side.grad_inputs)
        side.rec = TorchSide(torch, model)
        try:
            with torch.enable_grad(), side.rec:
                out = model(*args, **kwargs)
        except Exception as e:                              # noqa: BLE001
            raise CheckError(f"{name}: the model raised {type(e).__name__} under PyTorch on "
                             f"its own inputs: {_one_line(e)}") from None
        for r in side.rec.records:                  # every recorded tensor keeps its gradient
            for t in r.outs:
                if t is not None and t.requires_grad and t.grad_fn is not None:
                    t.retain_grad()
        side.terms = loss_terms(out, side.rec, opts.seed)
        if side.terms:
            sum((t * torch.from_numpy(w)).sum() for t, w in side.terms).backward()
    return side


def _tinygradx_side(path, name, argv, opts, theirs):
    """The script under the look-alike to its first model call; that model given PyTorch's
    weights and modes, its forward on PyTorch's inputs recorded, then the loss's backward.
    A Report when it departs before the forward's ops can be compared."""
    import tinygradx as tgx

    from . import installed
    with installed() as lookalike, warnings.catch_warnings():
        try:
            found = _run_to_first_call(path, argv, "tinygradx", _stop_at_first_call_tiny())
        except _Stopped as e:
            return Report(False, f"--check {name}: {e}")
        warnings.simplefilter("ignore")
        their_cls = type(theirs.model).__name__
        if found is None:
            return Report(False, f"--check {name}: under tinygradx the script called no model "
                                 f"(under PyTorch it called {their_cls})")
        model = found.model
        if type(model).__name__ != their_cls:
            return Report(False, f"--check {name}: the first model called differs: "
                                 f"{their_cls} under PyTorch, {type(model).__name__} under "
                                 f"tinygradx")
        problem = _copy_weights(theirs.state, theirs.aliases, model)
        if problem:
            return Report(False, f"--check {name}: {problem}")
        ours = dict(model.named_modules())
        for p, training in theirs.modes + [(p, False) for p in theirs.quiet]:
            if p in ours:                           # parents first: each keeps its own mode
                ours[p].train(training)
        if opts.float64:
            model.double()
        args, kwargs = _build(theirs.inputs, tgx.tensor, lambda n: getattr(lookalike, n),
                              _lookalike_class, opts.float64, theirs.grad_inputs)
        side = _Side(model=model, rec=TinySide(tgx, lookalike, model, theirs.rec.draws))
        try:
            with tgx.enable_grad(), side.rec:
                out = model(*args, **kwargs)
        except Exception as e:                              # noqa: BLE001
            return Report(False, f"--check {name}: the model raised {type(e).__name__} under "
                                 f"tinygradx on PyTorch's inputs (PyTorch ran them): "
                                 f"{_one_line(e)}")
        side.names = seed_names(side.rec.records)
        terms = loss_terms(out, side.rec, opts.seed)
        if terms and [w.shape for _, w in terms] == [w.shape for _, w in theirs.terms]:
            loss = sum((t * tgx.tensor(w)).sum() for t, w in terms)
            loss.backward(retain_graph=True)     # the nodes keep their module paths for names
    return side


def _aliases(model):
    """{state dict key: the first key holding the same tensor} for tied weights."""
    seen, out = {}, {}
    for k, v in model.state_dict(keep_vars=True).items():
        first = seen.setdefault(id(v), k)
        if first != k:
            out[k] = first
    return out


def _copy_weights(state, aliases, mine):
    """Load PyTorch's state dict into tinygradx's model; a problem as a sentence, or None."""
    try:
        missing, unexpected = mine.load_state_dict(state, strict=False)
    except Exception as e:                                  # noqa: BLE001
        return f"PyTorch's weights do not load into tinygradx's model: {_one_line(e)}"
    unexpected = [k for k in unexpected if k not in aliases]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"tinygradx's model has {', '.join(missing[:4])} which PyTorch's "
                         f"state dict lacks")
        if unexpected:
            parts.append(f"PyTorch's state dict has {', '.join(unexpected[:4])} which "
                         f"tinygradx's model lacks")
        return "the two models differ: " + "; ".join(parts)
    return None


def _param_pairs(theirs, mine):
    """(name, PyTorch's parameter, tinygradx's) under tinygradx's names (a tied weight is
    listed once there, under one of PyTorch's names for it)."""
    every = dict(theirs.named_parameters(remove_duplicate=False))
    return [(n, every[n], p) for n, p in mine.named_parameters() if n in every]


def _grad_of(t, side):
    g = t.grad
    if g is None:
        return None
    return g.detach().cpu().numpy() if side == "theirs" else g.numpy()


def _current(t, side):
    return t.detach().cpu().numpy() if side == "theirs" else t.detach().numpy()


def seed_names(records):
    """{id(tensor): seed name} of tinygradx's recorded ops (the names of tinygradx.graph's
    data flow: Q, K, V, Score, A, Z, ...); {} when the graph cannot be named."""
    from tinygradx.graph import Graph
    from tinygradx.graph.dataflow import DataFlow
    g = Graph()
    try:
        for r in records:
            if r.kind == "op" and r.node is not None:
                g.record(r.node, r.ins, r.outs[0])
        flow = DataFlow(g)
        flow.name_all()
    except Exception:                                       # noqa: BLE001 (names are a hint)
        return {}
    return {id(g.nodes[i]): f.name for i, f in enumerate(flow.flows) if f.name}
