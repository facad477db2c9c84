"""The `tinygradx` command: train, eval, translate, generate, demo, graph, trace, experiment,
plot.

Every user mistake (unknown task, bad value, missing file) is one line on stderr and exit
code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys


class UsageError(Exception):
    """A mistake in the command line or its files: printed as one line, exit code 2."""


# what each TrainConfig field means, for --help (a test checks every field has a line here)
TRAIN_HELP = {
    "task": "the task to learn (copy, reverse, sort, numbers, numbers_zh, dates, tsv, add, "
            "chars)",
    "seed": "seed of the initial weights and of the batches",
    "n_train": "training pairs to generate (0: the task's default)",
    "ndigit": "add task: digits per operand",
    "text": "chars task: a UTF-8 text file (empty: stdlib docstrings)",
    "path": "tsv task: a tab-separated file of sentence pairs",
    "n_layer": "encoder and decoder layers each, or GPT blocks",
    "d_model": "model width",
    "n_head": "attention heads (must divide d_model)",
    "d_ff": "feed-forward width (0: 4 * d_model)",
    "dropout": "dropout probability, in [0, 1)",
    "norm_first": "Pre-LN (true) or the original Post-LN (false)",
    "block_size": "GPT context length (chars task)",
    "norm": "GPT tasks (add, chars): layernorm (GPT-2) or rmsnorm (LLaMA); the placement is "
            "--norm_first",
    "pos": "GPT tasks: learned (a position table, GPT-2) or rope (rotary embeddings of Q and "
           "K, no table)",
    "mlp": "GPT tasks: gelu (GPT-2) or swiglu ((SiLU(x W1) * x W3) W2, hidden 8/3 d_model)",
    "n_kv_head": "GPT tasks: K/V heads for grouped-query attention, a divisor of n_head "
                 "(0: n_head; 1: multi-query)",
    "bias": "GPT tasks: biases in the Linears and LayerNorms; --no-bias drops them (LLaMA)",
    "optimizer": "adam, adamw or sgd",
    "lr": "peak learning rate",
    "min_lr": "final learning rate of the cosine schedule",
    "schedule": "cosine (warmup then cosine), noam or constant",
    "warmup": "warm-up steps (>= 1 for noam)",
    "weight_decay": "decoupled weight decay of the matrices (adamw)",
    "beta2": "Adam's second-moment decay",
    "grad_clip": "clip the global gradient norm to this (0: no clipping)",
    "label_smoothing": "label smoothing of the cross-entropy",
    "batch_size": "examples per micro-batch",
    "grad_accum": "micro-batches summed into each optimizer step (batch = batch_size * this)",
    "teacher_forcing": "translation: share of decoder inputs that are the reference tokens; "
                       "the rest are the model's own predictions (scheduled sampling)",
    "max_steps": "optimizer steps of the whole run",
    "eval_interval": "evaluate (and save) every this many steps",
    "eval_batches": "validation batches per evaluation",
    "eval_examples": "held-out examples decoded per evaluation (exact match)",
    "out_dir": "the run's directory: checkpoint.npz, best.npz, metrics.jsonl (empty: "
               "runs/TASK; with --resume: the checkpoint's directory)",
    "save_interval": "also save every this many steps (0: only at evaluations)",
    "health_interval": "log per-layer gradient norms and update:data ratios every this many "
                       "steps (0: off)",
    "progress": "show a progress bar",
}


# bool fields that also take a bare --name (true) and --no-name (false)
NEGATABLE = ("bias",)


def _train_config_args(parser):
    """One flag per TrainConfig field, typed, with its meaning and default in --help."""
    from tinygradx.models.training.trainer import TrainConfig
    for f in dataclasses.fields(TrainConfig):
        default = f.default
        text = TRAIN_HELP.get(f.name, f.name.replace("_", " "))
        if f.name in NEGATABLE:        # --bias, --bias false, --no-bias
            parser.add_argument(f"--{f.name}", type=_bool, nargs="?", const=True, default=None,
                                metavar="BOOL", help=f"{text} (default {default})")
            parser.add_argument(f"--no-{f.name}", f"--no_{f.name}", dest=f.name,
                                action="store_const", const=False, default=None,
                                help=f"the same as --{f.name} false (default {default})")
        elif f.type in (bool, "bool"):
            parser.add_argument(f"--{f.name}", type=_bool, default=None, metavar="BOOL",
                                help=f"{text} (default {default})")
        else:
            kind = {"int": int, "float": float, "str": str}.get(f.type, f.type)
            parser.add_argument(f"--{f.name}", type=_typed(kind, f.name), default=None,
                                help=f"{text} (default {default!r})")


def _typed(kind, name):
    def parse(text):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    parse.__name__ = kind.__name__
    return parse


GRAPH_FORMATS = ("svg", "png", "pdf", "jpeg", "jpg", "dot", "gv", "html")


def _graph_file(text):
    ext = os.path.splitext(text)[1].lstrip(".").lower()
    if ext not in GRAPH_FORMATS:
        raise argparse.ArgumentTypeError(
            f"cannot write {text!r}: unknown format {('.' + ext) if ext else '(no suffix)'}; "
            f"use {', '.join('.' + e for e in GRAPH_FORMATS)}")
    return text


def _bool(text):
    low = text.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _int_at_least(low, high=None):
    """An integer >= low (and <= high: every size a user can pass has an upper bound, so a
    typo is a one-line error, not a hang)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:_}, got {value:_}")
        return value
    parse.__name__ = f"int >= {low}"
    return parse


# the upper bounds of the commands' own sizes (TrainConfig's are config.UPPER)
MAX_BEAM, MAX_NEW_TOKENS, MAX_DRAWN_LAYERS, MAX_EXPERIMENT_STEPS = 64, 100_000, 48, 100_000


def _layer_list(text):
    """experiment --layers: 2 to 8 comma-separated depths, each in [1, MAX_DRAWN_LAYERS]."""
    try:
        depths = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 2,6,12, got "
                                         f"{text!r}") from None
    if not 2 <= len(depths) <= 8 or depths[0] < 1 or depths[-1] > MAX_DRAWN_LAYERS:
        raise argparse.ArgumentTypeError(f"give 2 to 8 depths in [1, {MAX_DRAWN_LAYERS}], got "
                                         f"{text!r}")
    return text


def _float_in(low, high, low_open=False):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not ((low < value) if low_open else (low <= value)) or value > high:
            lo = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"must be in {lo}{low}, {high}], got {value}")
        return value
    parse.__name__ = "float"
    return parse


def _overrides(args):
    from tinygradx.models.training.trainer import TrainConfig
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    return {k: v for k, v in vars(args).items() if k in names and v is not None}


def _need_file(path, what="checkpoint"):
    if not path:
        raise UsageError(f"--{what} FILE is required")
    if not os.path.isfile(path):
        raise UsageError(f"{what} file not found: {path}")


def _load_trainer(path, **overrides):
    from tinygradx import io
    from tinygradx.models.training.trainer import Trainer
    _need_file(path)
    try:
        return Trainer.from_checkpoint(path, **overrides)
    except io.CheckpointError as err:
        raise UsageError(str(err).splitlines()[0]) from None


# ------------------------------------------------------------------------------------------
# commands
# ------------------------------------------------------------------------------------------

def cmd_train(args):
    """Every check (flags, run directory, checkpoint) comes before anything is written."""
    from tinygradx.models.training.config import (ConfigError, TrainConfig, default_out_dir,
                                                  validate_config)
    from tinygradx.models.training.rundir import check_run_dir
    from tinygradx.models.training.trainer import Trainer
    over = _overrides(args)
    validate_config(over)
    if args.resume:
        if args.resume == "auto":
            run_dir = over.get("out_dir") or default_out_dir(over.get("task", TrainConfig.task))
            path = os.path.join(run_dir, "checkpoint.npz")
        else:
            path = args.resume
        _need_file(path)
        # a resumed run writes beside the checkpoint it was given (or to --out_dir), never to
        # a directory recorded inside the file
        over.setdefault("out_dir", os.path.dirname(path) or ".")
        trainer = _load_trainer(path, overwrite=args.overwrite,
                                allow_nonfinite=args.allow_nonfinite, **over)
        if trainer.cfg.max_steps <= trainer.step:
            raise ConfigError(f"--max_steps: {path} is already at step {trainer.step}; pass a "
                              f"larger --max_steps to train on, got {trainer.cfg.max_steps}")
        check_run_dir(trainer.cfg.out_dir, resume=path, overwrite=args.overwrite)
        print(f"resumed from {path} at step {trainer.step}")
    else:
        cfg = TrainConfig.for_task(over.pop("task", TrainConfig.task), **over)
        if "warmup" in over and cfg.schedule != "constant" and cfg.warmup > cfg.max_steps:
            raise ConfigError(f"--warmup: must be at most --max_steps {cfg.max_steps} (the "
                              f"learning rate would still be rising when the run ends), got "
                              f"{cfg.warmup}")
        trainer = Trainer(cfg, overwrite=args.overwrite)       # checks the model's size too
        check_run_dir(cfg.out_dir, overwrite=args.overwrite)
    print(f"task {trainer.cfg.task}: {type(trainer.model).__name__} with "
          f"{trainer.model.num_parameters():,} parameters")
    from tinygradx.models.training.health import NonFiniteError
    try:
        finished = trainer.train()
    except NonFiniteError as err:          # diverged: one line, exit 3, good checkpoint kept
        print(f"tinygradx train: error: {err}", file=sys.stderr)
        return 3
    if not finished:                       # Ctrl-C 130, SIGTERM 143, as a shell reports them
        return 128 + int(trainer.stopped_by or signal.SIGINT)
    _report(trainer)
    return 0


def _report(trainer):
    res = trainer.evaluate("test" if trainer.cfg.task != "chars" else "val")
    if "exact_match" in res:
        print(f"held-out exact match: {100 * res['exact_match']:.2f}% "
              f"(loss {res['loss']:.4f})")
    else:
        print(f"validation loss: {res['loss']:.4f} nats per character")
    print(f"checkpoint: {trainer.checkpoint_path()}")


def cmd_eval(args):
    trainer = _load_trainer(args.checkpoint, progress=False,
                            allow_nonfinite=args.allow_nonfinite)
    split = "valid" if args.split == "val" else args.split
    if trainer.cfg.task == "chars" and split == "test":
        split = "valid"                # chars has only train/valid (90/10 in file order)
    res = trainer.evaluate(split)
    if "exact_match" in res and args.beam > 1:
        res["exact_match_beam"] = trainer.exact_match(split, beam_size=args.beam)
    for k, v in res.items():
        print(f"{k}: {v}")
    return 0


def cmd_translate(args):
    trainer = _load_trainer(args.checkpoint, progress=False,
                            allow_nonfinite=args.allow_nonfinite)
    if trainer.lm:
        raise UsageError(f"the checkpoint is a {trainer.cfg.task} language model; use "
                         f"`tinygradx generate`")
    import warnings
    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = trainer.translate(sentences, beam_size=args.beam)
    for w in caught:                       # one line each, not Python's two-line format
        print(f"tinygradx translate: warning: {w.message}", file=sys.stderr)
    for src, out in zip(sentences, outs, strict=True):
        print(f"{src}\t{out}")
    return 0


def cmd_generate(args):
    import numpy as np
    import tinygradx as tgx
    from tinygradx.models.nets import decoding
    trainer = _load_trainer(args.checkpoint, progress=False, need_data=False,
                            allow_nonfinite=args.allow_nonfinite)
    if not trainer.lm:
        raise UsageError("the checkpoint is a translation model; use `tinygradx translate`")
    tgx.manual_seed(args.seed)
    task = trainer.task
    if trainer.cfg.task == "add":
        raise UsageError("the add task is evaluated with `tinygradx eval`")
    unknown = sorted(set(args.prompt) - set(task.vocab))
    if unknown:
        raise UsageError(f"the prompt has characters the model never saw: {unknown[:5]}")
    # no prompt: start from a newline as nanoGPT does, or the first character if the text has none
    start = args.prompt or ("\n" if "\n" in task.vocab else task.vocab[0])
    ids = np.array([task.encode(start)], dtype=np.int64)
    out = decoding.sample(trainer.model, ids, args.max_new_tokens, temperature=args.temperature,
                          top_k=args.top_k, top_p=args.top_p)
    print(task.decode(out[0].tolist()))
    return 0


def cmd_demo(args):
    from tinygradx.models.apps.demo import run_demo
    return run_demo(steps=args.steps, out_dir=args.out, task=args.task)


def cmd_graph(args):
    from tinygradx.models.apps.inspect_models import build_graph_for_cli
    depth = None if args.depth == "all" else args.depth
    try:
        build_graph_for_cli(args.model, args.norm, args.layers, depth, args.out,
                            checkpoint=args.checkpoint, lang=args.lang, llama=args.llama)
    except RuntimeError as err:          # no renderer, or the renderer failed
        raise UsageError(f"cannot write {args.out}: {str(err).splitlines()[0]}") from None
    return 0


def cmd_plot(args):
    from tinygradx.models.apps import pictures
    if not os.path.isfile(os.path.join(args.run_dir, "metrics.jsonl")):
        raise UsageError(f"{args.run_dir} has no metrics.jsonl (is it a run directory?)")
    written = pictures.training_health(args.run_dir, out_dir=args.out or args.run_dir)
    for path in written:
        print(f"wrote {path}")
    return 0


def cmd_trace(args):
    from tinygradx.models.apps.inspect_models import trace_cli
    print(trace_cli(args.model, norm=args.norm, layers=args.layers, fmt=args.format,
                    lang=args.lang, llama=args.llama))
    return 0


def _depth(text):
    return "all" if text == "all" else _int_at_least(1, 64)(text)


def cmd_experiment(args):
    from tinygradx.models.apps import experiments
    return experiments.main(args.name, args.out, layers=args.layers, steps=args.steps)


# ------------------------------------------------------------------------------------------
# the parser
# ------------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):          # one line and exit 2, as argparse does, minus usage spam
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser():
    p = _Parser(prog="tinygradx", description="Train, inspect and draw small Transformers.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_model_commands(sub)
    _add_drawing_commands(sub)
    return p


def _allow_nonfinite(parser):
    parser.add_argument("--allow_nonfinite", "--allow-nonfinite", action="store_true",
                        help="load a checkpoint whose weights hold NaN or inf (default: refuse)")


def _add_model_commands(sub):
    """train, eval, translate, generate, demo: the commands that train or run a model."""
    t = sub.add_parser("train", help="train a model on a built-in task")
    t.add_argument("--resume", nargs="?", const="auto", default=None, metavar="CHECKPOINT",
                   help="continue from CHECKPOINT (bare --resume: OUT_DIR/checkpoint.npz); "
                        "the run goes on in the checkpoint's directory unless --out_dir is "
                        "given (default: a new run)")
    t.add_argument("--overwrite", action="store_true",
                   help="let a new run replace the run already in --out_dir (default: refuse)")
    _allow_nonfinite(t)
    _train_config_args(t)
    t.set_defaults(fn=cmd_train)

    e = sub.add_parser("eval", help="evaluate a checkpoint on held-out data")
    e.add_argument("--checkpoint", required=True, help="a checkpoint.npz (required)")
    e.add_argument("--split", default="test", choices=["valid", "test", "val"],
                   help="held-out split (default test; chars: valid)")
    e.add_argument("--beam", type=_int_at_least(1, MAX_BEAM), default=1,
                   help="also report beam-search exact match with this beam (default 1: off)")
    _allow_nonfinite(e)
    e.set_defaults(fn=cmd_eval)

    tr = sub.add_parser("translate", help="translate sentences (arguments or stdin)")
    tr.add_argument("--checkpoint", required=True, help="a translation checkpoint (required)")
    tr.add_argument("--beam", type=_int_at_least(1, MAX_BEAM), default=1,
                    help="beam size (default 1: greedy)")
    tr.add_argument("sentences", nargs="*",
                    help="sentences to translate (default: one per line from stdin)")
    _allow_nonfinite(tr)
    tr.set_defaults(fn=cmd_translate)

    g = sub.add_parser("generate", help="sample text from a language-model checkpoint")
    g.add_argument("--checkpoint", required=True, help="a chars checkpoint (required)")
    g.add_argument("--prompt", default="",
                   help="text to continue (default: a newline, or the first character)")
    g.add_argument("--max_new_tokens", "--max-new-tokens",
                   type=_int_at_least(0, MAX_NEW_TOKENS), default=200,
                   help="characters to sample (default 200)")
    g.add_argument("--temperature", type=_float_in(0, 1e6), default=1.0,
                   help="softmax temperature; 0 is greedy (default 1.0)")
    g.add_argument("--top_k", "--top-k", type=_int_at_least(1, 2**31 - 1), default=None,
                   help="sample among the k likeliest tokens only (default: all)")
    g.add_argument("--top_p", "--top-p", type=_float_in(0, 1, low_open=True), default=None,
                   help="nucleus sampling: the smallest set with this much mass (default: off)")
    g.add_argument("--seed", type=_int_at_least(0, 2**32 - 1), default=0,
                   help="sampling seed (default 0)")
    _allow_nonfinite(g)
    g.set_defaults(fn=cmd_generate)

    d = sub.add_parser("demo", help="the main job: train, translate, save, draw")
    d.add_argument("--task", default="dates",
                   help="a translation task (default dates)")
    d.add_argument("--steps", type=_int_at_least(1, MAX_EXPERIMENT_STEPS), default=None,
                   help="training steps (default 1200)")
    d.add_argument("--out", default="runs/demo",
                   help="output directory; an earlier demo there is replaced "
                        "(default runs/demo)")
    d.set_defaults(fn=cmd_demo)


_NORM_HELP = "LayerNorm placement (default: the model's own, gpt pre, transformer post)"
_LLAMA_HELP = ("--model gpt: a LLaMA-style GPT (RMSNorm, RoPE, SwiGLU, grouped-query attention, "
               "no biases) instead of GPT-2's block (default: GPT-2's)")


def _add_drawing_commands(sub):
    """graph, trace, experiment, plot: the commands that draw, trace and measure."""
    gr = sub.add_parser("graph", help="draw a model's graph with its residual path")
    gr.add_argument("--model", choices=["gpt", "transformer"], default="gpt",
                    help="which model (default gpt)")
    gr.add_argument("--norm", choices=["pre", "post"], default=None,
                    help=_NORM_HELP)
    gr.add_argument("--layers", type=_int_at_least(1, MAX_DRAWN_LAYERS), default=2,
                    help="layers (default 2)")
    gr.add_argument("--depth", type=_depth, default=4,
                    help="merge modules below this depth into boxes (default 4; 'all': every op)")
    gr.add_argument("--out", type=_graph_file, default="graph.svg",
                    help=f"output file; its suffix picks the format: "
                         f"{', '.join(GRAPH_FORMATS)}; .html is the interactive page "
                         f"(default graph.svg)")
    gr.add_argument("--checkpoint", default=None,
                    help="draw this checkpoint's model (default: a fresh small model)")
    gr.add_argument("--lang", choices=["en", "zh"], default="en",
                    help="label language (default en)")
    gr.add_argument("--llama", action="store_true", help=_LLAMA_HELP)
    gr.set_defaults(fn=cmd_graph)

    tc = sub.add_parser("trace", help="print the shape trace table of one forward pass")
    tc.add_argument("--model", choices=["gpt", "transformer", "attention"], default="transformer",
                    help="which model (default transformer)")
    tc.add_argument("--norm", choices=["pre", "post"], default=None,
                    help=_NORM_HELP)
    tc.add_argument("--layers", type=_int_at_least(1, MAX_DRAWN_LAYERS), default=1,
                    help="layers (default 1)")
    tc.add_argument("--format", choices=["text", "markdown", "html"], default="text",
                    help="table format; html writes the interactive page to stdout (default text)")
    tc.add_argument("--lang", choices=["en", "zh"], default="en",
                    help="label language (default en)")
    tc.add_argument("--llama", action="store_true", help=_LLAMA_HELP)
    tc.set_defaults(fn=cmd_trace)

    x = sub.add_parser("experiment", help="the LN-placement experiments (Xiong et al. 2020)")
    x.add_argument("name", choices=["ln-grad", "warmup"], help="which experiment")
    x.add_argument("--out", default="runs/experiments",
                   help="output directory (default runs/experiments)")
    x.add_argument("--layers", type=_layer_list, default="2,6,12",
                   help="comma-separated depths (default 2,6,12)")
    x.add_argument("--steps", type=_int_at_least(1, MAX_EXPERIMENT_STEPS), default=None,
                   help="training steps per run (default: the experiment's own)")
    x.set_defaults(fn=cmd_experiment)

    pl = sub.add_parser("plot", help="draw a run's loss, lr, gradient norms and update ratios")
    pl.add_argument("run_dir", help="a run directory holding metrics.jsonl")
    pl.add_argument("--out", default=None,
                    help="where to write health.png / health.csv (default: RUN_DIR)")
    pl.set_defaults(fn=cmd_plot)


def main(argv=None):
    # interrupted and the checkpoint is saved: a further Ctrl-C while Python shuts down would
    # kill the process by the signal (exit -2) instead of returning 130, so SIGINT is ignored
    # from then on. Both calls sit inside the try: one more Ctrl-C landing anywhere on the way
    # (even inside signal.signal, which is Python code) is caught here, not printed.
    try:
        code = _main(argv)
        if code == 130 and argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:             # a Ctrl-C that landed outside _main's own handler
        code = 130
        if argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _main(argv):
    import tinygradx as tgx
    parser = build_parser()
    args = parser.parse_args(argv)
    tgx.process.keep_freed_memory()          # the command owns the process (see tinygradx.process)
    try:
        return args.fn(args) or 0
    except UsageError as err:
        print(f"tinygradx {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError, KeyError) as err:
        # configuration and data mistakes (and unusable paths) surface as these: one line
        # (TINYGRADX_DEBUG=1 shows the traceback instead)
        if os.environ.get("TINYGRADX_DEBUG"):
            raise
        msg = str(err).strip("'\"") if isinstance(err, KeyError) else str(err)
        line = msg.splitlines()[0] if msg else repr(err)
        print(f"tinygradx {args.command}: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if argv is None:                  # the command line: no third Ctrl-C mid-message
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(f"tinygradx {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
