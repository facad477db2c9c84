"""The `tinygradx` command: train, eval, translate, generate, demo, graph, trace, experiment,
plot.

Every user mistake (unknown task, bad value, missing file, unknown flag) is one line on stderr
and exit code 2, never a traceback. What the command says about itself (train's per-task
defaults, the groups, examples, the command list of a bare `tinygradx`, "did you mean", the
page docs/cli.md) is in cli_help.py.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys

from tinygradx.models.apps.cli_types import (GRAPH_FORMATS, MAX_BEAM, MAX_DRAWN_LAYERS,
                                             MAX_EXPERIMENT_STEPS, MAX_NEW_TOKENS, bool_value,
                                             depth_value, float_in, graph_file, int_at_least,
                                             layer_list, typed)
from tinygradx.models.apps.cli_help import (FIRST_STEPS, TRAIN_GROUPS, TRAIN_HELP, Formatter,
                                            canonical_argv, default_text, epilog, overview,
                                            unknown_command_message, unknown_flag_message)


class UsageError(Exception):
    """A mistake in the command line or its files: printed as one line, exit code 2."""


# bool fields that also take a bare --name (true) and --no_name (false)
NEGATABLE = ("bias",)


def _train_config_args(parser, task=None):
    """One flag per TrainConfig field, typed, in its group of --help, with its meaning and the
    default `train` really uses: the task's own (TASK_DEFAULTS), listed per task unless `task`
    names one."""
    from tinygradx.models.training.config import TrainConfig
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    groups = {}
    for title, (description, names) in TRAIN_GROUPS.items():
        group = parser.add_argument_group(title, description)
        groups.update(dict.fromkeys(names, group))
    for name, f in fields.items():
        group = groups[name]
        text = f"{TRAIN_HELP.get(name, name.replace('_', ' '))} ({default_text(name, task)})"
        if name in NEGATABLE:        # --bias, --bias false, --no_bias
            group.add_argument(f"--{name}", type=bool_value, nargs="?", const=True, default=None,
                               metavar="BOOL", help=text)
            group.add_argument(f"--no_{name}", dest=name, action="store_const", const=False,
                               default=None, help=f"the same as --{name} false "
                                                  f"({default_text(name, task)})")
        elif f.type in (bool, "bool"):
            group.add_argument(f"--{name}", type=bool_value, default=None, metavar="BOOL",
                               help=text)
        else:
            kind = {"int": int, "float": float, "str": str}.get(f.type, f.type)
            metavar = {int: "N", float: "X"}.get(kind, name.upper())
            group.add_argument(f"--{name}", type=typed(kind, name), default=None,
                               metavar=metavar, help=text)
    return groups


def _overrides(args):
    from tinygradx.models.training.config import TrainConfig
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
    for k, v in res.items():               # the numbers as train prints them
        if k.startswith("exact_match"):
            v = f"{100 * v:.2f}%"
        elif k == "loss":
            v = f"{v:.4f}"
        print(f"{k}: {v}")
    return 0


def cmd_translate(args):
    # decoding needs only the vocabularies the checkpoint carries: a tsv task's data file may
    # be gone (one that is there is still checked against them)
    trainer = _load_trainer(args.checkpoint, progress=False, need_data=False,
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
    if args.checkpoint:
        _need_file(args.checkpoint)
    depth = None if args.depth == "all" else args.depth
    try:
        build_graph_for_cli(args.model, args.norm, args.layers, depth, args.out,
                            checkpoint=args.checkpoint, lang=args.lang, llama=args.llama,
                            values=args.values)
    except RuntimeError as err:          # no renderer, or the renderer failed
        raise UsageError(f"cannot write {args.out}: {str(err).splitlines()[0]}") from None
    return 0


def cmd_plot(args):
    from tinygradx.models.apps import pictures
    if not os.path.isfile(os.path.join(args.run_dir, "metrics.jsonl")):
        raise UsageError(f"{args.run_dir} has no metrics.jsonl (is it a run directory?)")
    written = pictures.training_health(args.run_dir, out_dir=args.out or args.run_dir,
                                       lang=args.lang)
    for path in written:
        print(f"wrote {path}")
    return 0


def cmd_trace(args):
    from tinygradx.models.apps.inspect_models import trace_cli
    if args.checkpoint:
        _need_file(args.checkpoint)
        if args.model == "attention":
            raise UsageError("--model attention traces one built-in sublayer; drop "
                             "--checkpoint, or drop --model to trace the checkpoint's model")
    print(trace_cli(args.model, norm=args.norm, layers=args.layers, fmt=args.format,
                    lang=args.lang, llama=args.llama, checkpoint=args.checkpoint))
    return 0


def cmd_experiment(args):
    from tinygradx.models.apps import experiments
    return experiments.main(args.name, args.out, layers=args.layers, steps=args.steps,
                            lang=args.lang)


# ------------------------------------------------------------------------------------------
# the parser
# ------------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse with the house rules: one spelling of every flag (`--max-steps` is
    `--max_steps`), "did you mean" for an unknown flag or command, errors of one line."""

    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", Formatter)       # examples kept line by line
        # no prefix matching: `--max_step` is a typo to point out, not --max_steps to guess
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)

    def error(self, message):          # one line and exit 2, as argparse does, minus usage spam
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else args
        return super().parse_known_args(canonical_argv([str(a) for a in args]), namespace)

    def parse_args(self, args=None, namespace=None):
        args = canonical_argv([str(a) for a in (sys.argv[1:] if args is None else args)])
        subs = _subcommands(self)
        if subs is not None:
            word = next((a for a in args if not a.startswith("-")), None)
            if word is not None and word not in subs.choices:
                self.error(unknown_command_message(word, list(subs.choices)))
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(ns, "command", None)
            parser = subs.choices[command] if subs is not None and command else self
            parser.error(unknown_flag_message(extras, parser, parser.prog))
        return ns


def _subcommands(parser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def version():
    """The installed distribution's version (package metadata), else the source's."""
    from importlib import metadata
    try:
        return metadata.version("tinygradx")
    except metadata.PackageNotFoundError:
        import tinygradx
        return tinygradx.__version__


def build_parser(task=None):
    """The whole command line. `task` (from `train --task TASK`) makes train's --help show
    that task's defaults instead of every task's."""
    p = _Parser(prog="tinygradx", description="Train, inspect and draw small Transformers.",
                epilog="examples:\n" + "\n".join(f"  {line}" for line in FIRST_STEPS))
    p.add_argument("--version", action="version", version=f"tinygradx {version()}",
                   help="print the installed version and exit")
    # not required: a bare `tinygradx` lists the commands (_main), rather than an error line
    sub = p.add_subparsers(title="commands", dest="command", metavar="COMMAND",
                           parser_class=_Parser)
    _add_model_commands(sub, task)
    _add_drawing_commands(sub)
    return p


def _command(sub, name, text, description=None):
    """A subcommand whose --help ends with its examples."""
    return sub.add_parser(name, help=text, description=description or text[0].upper() + text[1:],
                          epilog=epilog(name))


def _groups(parser, *titles):
    """Argument groups of --help, named as train's (data, model, optimisation, run, output)."""
    return [parser.add_argument_group(title) for title in titles]


def _allow_nonfinite(group):
    group.add_argument("--allow_nonfinite", action="store_true",
                       help="load a checkpoint whose weights hold NaN or inf (default: refuse)")


def _add_model_commands(sub, task=None):
    """train, eval, translate, generate, demo: the commands that train or run a model."""
    t = _command(sub, "train", "train a model on a built-in task",
                 "Train a model on a built-in task. Each task starts from its own measured "
                 "defaults (TASK_DEFAULTS, docs/tasks.md) and the flags given override them; "
                 + (f"the defaults below are task {task}'s." if task else
                    "`tinygradx train --task TASK --help` shows one task's."))
    groups = _train_config_args(t, task)
    groups["resume"].add_argument(
        "--resume", nargs="?", const="auto", default=None, metavar="CHECKPOINT",
        help="continue from CHECKPOINT (bare --resume: OUT_DIR/checkpoint.npz); the run goes "
             "on in the checkpoint's directory unless --out_dir is given (default: a new run)")
    groups["overwrite"].add_argument(
        "--overwrite", action="store_true",
        help="let a new run replace the run already in --out_dir (default: refuse)")
    _allow_nonfinite(groups["allow_nonfinite"])
    t.set_defaults(fn=cmd_train)

    e = _command(sub, "eval", "evaluate a checkpoint on held-out data")
    model, data, run = _groups(e, "model", "data", "run")
    model.add_argument("--checkpoint", required=True, help="a checkpoint.npz (required)")
    data.add_argument("--split", default="test", choices=["valid", "test", "val"],
                      help="held-out split (default test; chars: valid)")
    run.add_argument("--beam", type=int_at_least(1, MAX_BEAM), default=1, metavar="N",
                     help="also report beam-search exact match with this beam (default 1: off)")
    _allow_nonfinite(model)
    e.set_defaults(fn=cmd_eval)

    tr = _command(sub, "translate", "translate sentences (arguments or stdin)")
    model, data, run = _groups(tr, "model", "data", "run")
    model.add_argument("--checkpoint", required=True,
                       help="a translation checkpoint (required); a tsv checkpoint needs no "
                            "data file")
    run.add_argument("--beam", type=int_at_least(1, MAX_BEAM), default=1, metavar="N",
                     help="beam size (default 1: greedy)")
    _allow_nonfinite(model)
    data.add_argument("sentences", nargs="*",
                      help="sentences to translate (default: one per line from stdin)")
    tr.set_defaults(fn=cmd_translate)

    g = _command(sub, "generate", "sample text from a language-model checkpoint")
    model, data, run = _groups(g, "model", "data", "run")
    model.add_argument("--checkpoint", required=True, help="a chars checkpoint (required)")
    data.add_argument("--prompt", default="",
                      help="text to continue (default: a newline, or the first character)")
    run.add_argument("--max_new_tokens", type=int_at_least(0, MAX_NEW_TOKENS), default=200,
                     metavar="N",
                     help="characters to sample (default 200)")
    run.add_argument("--temperature", type=float_in(0, 1e6), default=1.0, metavar="X",
                     help="softmax temperature; 0 is greedy (default 1.0)")
    run.add_argument("--top_k", type=int_at_least(1, 2**31 - 1), default=None, metavar="N",
                     help="sample among the k likeliest tokens only (default: all)")
    run.add_argument("--top_p", type=float_in(0, 1, low_open=True), default=None, metavar="X",
                     help="nucleus sampling: the smallest set with this much mass (default: off)")
    run.add_argument("--seed", type=int_at_least(0, 2**32 - 1), default=0, metavar="N",
                     help="sampling seed (default 0)")
    _allow_nonfinite(model)
    g.set_defaults(fn=cmd_generate)

    d = _command(sub, "demo", "the main job: train, translate, save, draw",
                 "The main job: train the encoder-decoder Transformer (Post-LN, 2+2 layers, "
                 "d_model 64) on a translation task, report held-out exact match, translate "
                 "examples, save the checkpoint and draw the graph, attention and health plot.")
    data, run, output = _groups(d, "data", "run", "output")
    data.add_argument("--task", default="dates",
                      help="a translation task (default dates)")
    run.add_argument("--steps", type=int_at_least(1, MAX_EXPERIMENT_STEPS), default=None,
                     metavar="N", help="training steps (default 1200)")
    output.add_argument("--out", default="runs/demo",
                        help="output directory; an earlier demo there is replaced "
                             "(default runs/demo)")
    d.set_defaults(fn=cmd_demo)


_NORM_HELP = ("LayerNorm placement (default: the model's own, gpt pre, transformer post; with "
              "--checkpoint: the checkpoint's)")
_LLAMA_HELP = ("--model gpt: a LLaMA-style GPT (RMSNorm, RoPE, SwiGLU, grouped-query attention, "
               "no biases) instead of GPT-2's block (default: GPT-2's)")


def _model_flags(group, models):
    """The flags graph and trace share, with the same defaults (the small models of
    inspect_models: DEFAULT_MODEL, DEFAULT_LAYERS, the model's own LayerNorm placement). Each
    defaults to None, so a checkpoint's own config can tell a flag given from one not given."""
    from tinygradx.models.apps.inspect_models import DEFAULT_LAYERS, DEFAULT_MODEL
    group.add_argument("--model", choices=models, default=None,
                       help=f"which model (default {DEFAULT_MODEL}; with --checkpoint: the "
                            f"checkpoint's)")
    group.add_argument("--norm", choices=["pre", "post"], default=None, help=_NORM_HELP)
    group.add_argument("--layers", type=int_at_least(1, MAX_DRAWN_LAYERS), default=None,
                       metavar="N",
                       help=f"layers (default {DEFAULT_LAYERS}; with --checkpoint: the "
                            f"checkpoint's)")
    group.add_argument("--llama", action="store_true", help=_LLAMA_HELP)


def _add_drawing_commands(sub):
    """graph, trace, experiment, plot: the commands that draw, trace and measure."""
    from tinygradx.models.apps.inspect_models import DEFAULT_DEPTH
    gr = _command(sub, "graph", "draw a model's graph with its residual path")
    model, output = _groups(gr, "model", "output")
    _model_flags(model, ["gpt", "transformer"])
    model.add_argument("--checkpoint", default=None,
                       help="draw this checkpoint's model (default: a fresh small model)")
    output.add_argument("--out", type=graph_file, default="graph.svg",
                        help=f"output file; its suffix picks the format: "
                             f"{', '.join(GRAPH_FORMATS)}; .html is the interactive page "
                             f"(default graph.svg)")
    output.add_argument("--depth", type=depth_value, default=DEFAULT_DEPTH,
                        help=f"merge modules below this depth into boxes (default "
                             f"{DEFAULT_DEPTH}; 'all': every op); one attention is always "
                             f"drawn op by op")
    output.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="label language (default en)")
    output.add_argument("--values", action="store_true",
                        help="add each tensor's mean and std to its node (default: shapes and "
                             "gradient norms only)")
    gr.set_defaults(fn=cmd_graph)

    tc = _command(sub, "trace", "print the shape trace table of one forward pass")
    model, output = _groups(tc, "model", "output")
    _model_flags(model, ["gpt", "transformer", "attention"])
    model.add_argument("--checkpoint", default=None,
                       help="trace this checkpoint's model (default: a fresh small model)")
    output.add_argument("--format", choices=["text", "markdown", "html"], default="text",
                        help="table format; html writes the interactive page to stdout "
                             "(default text)")
    output.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="label language (default en)")
    tc.set_defaults(fn=cmd_trace)

    x = _command(sub, "experiment", "the LN-placement experiments (Xiong et al. 2020)")
    run, output = _groups(x, "run", "output")
    run.add_argument("name", choices=["ln-grad", "warmup"], help="which experiment")
    output.add_argument("--out", default="runs/experiments",
                        help="output directory (default runs/experiments)")
    run.add_argument("--layers", type=layer_list, default=None,
                     help="comma-separated depths; ln-grad compares them, warmup trains one "
                          "(default: ln-grad 2,6,12, warmup 2)")
    run.add_argument("--steps", type=int_at_least(1, MAX_EXPERIMENT_STEPS), default=None,
                     metavar="N",
                     help="training steps per run (default: the experiment's own, warmup 200)")
    output.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="the picture's label language (default en)")
    x.set_defaults(fn=cmd_experiment)

    from tinygradx.models.apps.attention_cli import add_attention_command
    add_attention_command(sub, _command, _groups)

    pl = _command(sub, "plot", "draw a run's loss, exact match, lr, gradient norms and "
                               "update ratios")
    data, output = _groups(pl, "data", "output")
    data.add_argument("run_dir", help="a run directory holding metrics.jsonl")
    output.add_argument("--out", default=None,
                        help="where to write health.png / health.csv (default: RUN_DIR)")
    output.add_argument("--lang", choices=["en", "zh"], default="en",
                        help="the picture's label language (default en)")
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
        if argv is None:
            sys.stdout.flush()            # a closed pipe shows here, not at interpreter exit
    except KeyboardInterrupt:             # a Ctrl-C that landed outside _main's own handler
        code = 130
        if argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except BrokenPipeError:
        code = _closed_pipe()
    return code


def _closed_pipe():
    """The reader of our output went away (`tinygradx trace | head`): stop quietly, as a Unix
    tool killed by SIGPIPE does (exit 141), with stdout pointed at /dev/null so that Python's
    own flush at exit finds no closed pipe to complain about."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):         # no real stdout (a test's capture): nothing to flush
        pass
    return 128 + 13


def _task_asked(argv):
    """The TASK of `train ... --task TASK` (either spelling, `--task=TASK` too), so that
    `train --task copy --help` shows copy's defaults; None when there is none or it is unknown."""
    from tinygradx.models.training.config import TASK_DEFAULTS
    argv = canonical_argv(argv)
    if "train" not in argv:
        return None
    task = None
    for i, arg in enumerate(argv):
        if arg == "--task" and i + 1 < len(argv):
            task = argv[i + 1]
        elif arg.startswith("--task="):
            task = arg.split("=", 1)[1]
    return task if task in TASK_DEFAULTS else None


def _main(argv):
    import tinygradx as tgx
    words = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    parser = build_parser(_task_asked(words))
    args = parser.parse_args(words)
    if args.command is None:                 # a bare `tinygradx`: what there is to run
        commands = {c.dest: c.help for c in _subcommands(parser)._choices_actions}
        print(overview(commands, version()))
        return 2                             # argparse's code for a command line missing a part
    tgx.process.own_process()                # the command owns the process (see tinygradx.process)
    try:
        return args.fn(args) or 0
    except UsageError as err:
        print(f"tinygradx {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:                  # the reader of stdout went away: no error line
        return _closed_pipe()
    except (ValueError, OSError, KeyError) as err:
        # configuration and data mistakes (and unusable paths) surface as these: one line
        # (TINYGRADX_DEBUG=1 shows the traceback instead)
        if tgx.process.env("TINYGRADX_DEBUG", False):
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
