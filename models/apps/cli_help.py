"""What the `tinygradx` command says about itself: the flags' groups and task-aware defaults,
the examples under each --help, the command list of a bare `tinygradx`, "did you mean" for a
mistyped flag or command, one spelling of every flag, and docs/cli.md (with docs/zh/cli.md)
written from the parser.

cli.py builds the parser from these; nothing here imports cli.py (docs/make_cli_reference.py
hands the parser to `reference_markdown`).
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import re

# what each TrainConfig field means, for train's --help (a test checks every field has a line)
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
    "bias": "GPT tasks: biases in the Linears and LayerNorms; --no_bias drops them (LLaMA)",
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
    "progress": "show progress: a bar on a terminal; elsewhere (a pipe, a file) one plain line "
                "every --log_interval steps",
    "log_interval": "off a terminal, print one progress line every this many steps (0: only "
                    "the evaluation lines)",
}


# train's flags in the groups its --help shows them in; every TrainConfig field (and --resume,
# --overwrite) is in exactly one (tests/models/test_cli_help.py checks it)
TRAIN_GROUPS = {
    "data": ("what the model learns", ["task", "n_train", "ndigit", "text", "path"]),
    "model": ("the network's shape (a checkpoint keeps its own on --resume)",
              ["n_layer", "d_model", "n_head", "d_ff", "dropout", "norm_first", "block_size",
               "norm", "pos", "mlp", "n_kv_head", "bias"]),
    "optimisation": ("optimizer, schedule and batches",
                     ["optimizer", "lr", "min_lr", "schedule", "warmup", "weight_decay",
                      "beta2", "grad_clip", "label_smoothing", "batch_size", "grad_accum",
                      "teacher_forcing"]),
    "run": ("how long, how it is seeded and evaluated, resuming",
            ["seed", "max_steps", "eval_interval", "eval_batches", "eval_examples", "resume",
             "allow_nonfinite"]),
    "output": ("where the run is written and what it prints",
               ["out_dir", "overwrite", "save_interval", "health_interval", "progress",
                "log_interval"]),
}

# two to four command lines under each command's --help (its epilog) and in docs/cli.md
EXAMPLES = {
    "train": ["tinygradx train --task copy --max_steps 300",
              "tinygradx train --task chars --text input.txt --d_model 64 --out_dir runs/mine",
              "tinygradx train --resume runs/copy/checkpoint.npz --max_steps 600"],
    "eval": ["tinygradx eval --checkpoint runs/copy/checkpoint.npz",
             "tinygradx eval --checkpoint runs/dates/best.npz --split valid --beam 4"],
    "translate": ['tinygradx translate --checkpoint runs/demo/checkpoint.npz "4 July 1976"',
                  "tinygradx translate --checkpoint runs/tsv/checkpoint.npz < sentences.txt"],
    "generate": ['tinygradx generate --checkpoint runs/chars/checkpoint.npz --prompt "The "',
                 "tinygradx generate --checkpoint runs/chars/checkpoint.npz --temperature 0.8 "
                 "--top_k 20"],
    "demo": ["tinygradx demo",
             "tinygradx demo --task numbers --steps 600 --out runs/numbers_demo"],
    "graph": ["tinygradx graph --out gpt.svg",
              "tinygradx graph --model transformer --norm pre --layers 6 --out pre.svg",
              "tinygradx graph --checkpoint runs/demo/checkpoint.npz --out demo.html"],
    "trace": ["tinygradx trace",
              "tinygradx trace --model transformer --norm pre --format markdown",
              "tinygradx trace --checkpoint runs/demo/checkpoint.npz --format markdown"],
    "experiment": ["tinygradx experiment ln-grad",
                   "tinygradx experiment warmup --layers 6 --steps 300"],
    "attention": ['tinygradx attention --checkpoint runs/demo/checkpoint.npz "4 July 1976"',
                  'tinygradx attention --checkpoint runs/chars/checkpoint.npz "To be" '
                  '--layer 3 --no_png'],
    "plot": ["tinygradx plot runs/copy", "tinygradx plot runs/demo --out pictures"],
}

# the two examples of a bare `tinygradx` and of `tinygradx --help`
FIRST_STEPS = ["tinygradx demo", "tinygradx train --task copy --max_steps 300"]


class Formatter(argparse.HelpFormatter):
    """argparse's formatter, but an indented line of a description or epilog (an example
    command) is kept as written instead of being joined into the paragraph."""

    def _fill_text(self, text, width, indent):
        return "\n".join(line if line.startswith("  ") or not line.strip()
                         else super(Formatter, self)._fill_text(line, width, indent)
                         for line in text.splitlines())


def epilog(command):
    """The examples block under `tinygradx COMMAND --help`."""
    return "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[command])


def overview(commands, version):
    """What a bare `tinygradx` prints: each command with its one line, and two examples."""
    width = max(len(name) for name in commands)
    lines = [f"tinygradx {version}: train, inspect and draw small Transformers.", "",
             "usage: tinygradx COMMAND [flags]   (tinygradx COMMAND --help: its flags)", "",
             "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, text in commands.items()]
    lines += ["", "examples:"] + [f"  {line}" for line in FIRST_STEPS]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# defaults: the task's own
# ------------------------------------------------------------------------------------------

def show(value):
    """A default as a user would type it: 0.003, adamw, true, '' for an empty string."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return value if value else "''"
    return repr(value)


def per_task_values(name):
    """{task: the value of TrainConfig field `name` that `train --task TASK` starts from}."""
    from tinygradx.models.training.config import TASK_DEFAULTS, TrainConfig
    plain = {f.name: f.default for f in dataclasses.fields(TrainConfig)}[name]
    return {task: over.get(name, plain) for task, over in TASK_DEFAULTS.items()}


def default_text(name, task=None):
    """The default of train's --NAME as its help states it.

    With `task` (`train --task copy --help`): that task's value. Without: the one value every
    task starts from, or "per task" and each value with its tasks.
    """
    from tinygradx.models.training.config import TrainConfig
    if name == "task":
        return f"default {task or TrainConfig.task}"
    values = per_task_values(name)
    if task in values:
        return f"default for {task}: {show(values[task])}"
    distinct = list(dict.fromkeys(values.values()))
    if len(distinct) == 1:
        return f"default {show(distinct[0])}"
    by_value = {v: [t for t, x in values.items() if x == v] for v in distinct}
    common = max(distinct, key=lambda v: len(by_value[v]))
    if len(by_value[common]) * 2 <= len(values):          # no value most tasks share
        common = None
    parts = [f"{show(v)} for {', '.join(tasks)}" for v, tasks in by_value.items()
             if v != common]
    if common is not None:
        parts.append(f"{show(common)} for the others")
    return f"default per task: {'; '.join(parts)}"


# ------------------------------------------------------------------------------------------
# one spelling of every flag, and "did you mean"
# ------------------------------------------------------------------------------------------

_FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_-]*")


def canonical_argv(argv):
    """`--max-steps 5` -> `--max_steps 5` (and `--max-steps=5`): every flag is registered
    with underscores, its name as in TrainConfig, and either spelling is accepted. Values and
    everything after a bare `--` are left alone."""
    out = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + list(argv[i:])
        m = _FLAG.match(arg) if isinstance(arg, str) else None
        if m and (m.end() == len(arg) or arg[m.end()] == "="):
            arg = "--" + arg[2:m.end()].replace("-", "_") + arg[m.end():]
        out.append(arg)
    return out


def near(word, candidates):
    """The candidate closest to a mistyped `word`, or None when none is close."""
    hit = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return hit[0] if hit else None


def unknown_flag_message(extras, parser, command):
    """One line for what argparse left over: the first unknown flag with the nearest real one,
    or the first unexpected argument."""
    flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    for arg in extras:
        if arg.startswith("-") and len(arg) > 1:
            flag = arg.split("=", 1)[0]
            guess = near(flag.lstrip("-"), [f[2:] for f in flags])
            hint = f"did you mean --{guess}?" if guess else f"see {command} --help"
            return f"unknown flag {flag}; {hint}"
    return f"unexpected argument {extras[0]!r}; see {command} --help"


def unknown_command_message(word, commands):
    guess = near(word, commands)
    hint = f"did you mean {guess}? " if guess else ""
    return (f"unknown command {word!r}; {hint}(commands: {', '.join(commands)}; "
            f"tinygradx --help)")


# ------------------------------------------------------------------------------------------
# docs/cli.md, written from the parser
# ------------------------------------------------------------------------------------------

REFERENCE_HEADER = """\
# The `tinygradx` command

Generated from the parser by `python docs/make_cli_reference.py`; `tests/models/test_cli_help.py`
fails when this page and the parser differ, so edit the help texts in `models/apps/cli.py` (and
`models/apps/cli_help.py`) and regenerate instead of editing this page. `tinygradx COMMAND --help`
prints the same, and `tinygradx train --task TASK --help` the defaults of that one task.

Every flag is written here with underscores (`--max_steps`); the same flag with dashes
(`--max-steps`) is accepted too. A mistake on the command line is one line on stderr and exit
code 2; a bare `tinygradx` lists the commands (exit code 2, as a missing command is a usage
mistake); `tinygradx --version` prints the installed version.
"""


# docs/zh/cli.md: the same tables under a Chinese title, introduction and headings; the help
# texts stay as the parser prints them (English), which the introduction says. One line per
# paragraph: a line break inside Chinese text shows as a space.
REFERENCE_HEADER_ZH = "\n\n".join([
    "# `tinygradx` 命令",
    "本页由 `python docs/make_cli_reference.py` 从命令行解析器生成"
    "（英文版见 [../cli.md](../cli.md)）；"
    "本页与解析器不一致时 `tests/models/test_cli_help.py` 会失败，"
    "所以请修改 `models/apps/cli.py`"
    "（以及 `models/apps/cli_help.py`）中的帮助文本并重新生成，而不要直接编辑本页。"
    "`tinygradx COMMAND --help` 打印同样的内容，`tinygradx train --task TASK --help` "
    "则打印某一个任务的默认值。",
    "表格中的命令说明、参数分组和参数说明就是 `--help` 打印的文字，因此保持英文原样。",
    "这里的每个参数都用下划线书写（`--max_steps`）；"
    "用连字符书写的同一个参数（`--max-steps`）同样可以使用。"
    "命令行上的错误会在 stderr 上输出一行，退出码为 2；只输入 `tinygradx` "
    "会列出所有命令（退出码 2，因为缺少命令属于用法错误）；"
    "`tinygradx --version` 打印已安装的版本。",
]) + "\n"

# per language: the page's header, the heading of the command list, the two table heads
REFERENCE_TEXT = {
    "en": (REFERENCE_HEADER, "## Commands", "| command | what it does |", "| flag | meaning |"),
    "zh": (REFERENCE_HEADER_ZH, "## 命令", "| 命令 | 作用 |", "| 参数 | 含义 |"),
}


def _cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def _flag_cell(action):
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    if action.choices is not None:
        meta = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        meta = action.metavar or action.dest.upper()
    if action.nargs == "?":
        meta = f"[{meta}]"
    elif action.nargs in ("*", "+"):
        meta = f"[{meta} ...]"
    return f"`{names} {meta}`"


def _groups(parser):
    """(title, [actions]) of a parser's argument groups, --help left out, empty groups too."""
    out = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
                   and a.help != argparse.SUPPRESS]
        if actions:
            out.append((group.title, group.description, actions))
    return out


def reference_markdown(parser, lang="en"):
    """docs/cli.md (lang="zh": docs/zh/cli.md): the commands, then each command's flags by
    group and its examples."""
    header, commands, command_head, flag_head = REFERENCE_TEXT[lang]
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in subs._choices_actions}
    lines = [header, commands, "", command_head, "|---|---|"]
    lines += [f"| [`{name}`](#tinygradx-{name}) | {_cell(helps[name])} |" for name in subs.choices]
    lines += ["", "```text"] + FIRST_STEPS + ["```", ""]
    for name, sub in subs.choices.items():
        lines += [f"## tinygradx {name}", "", _cell(sub.description or helps[name]), ""]
        for title, description, actions in _groups(sub):
            lines += [f"**{title}**" + (f": {_cell(description)}" if description else ""), "",
                      flag_head, "|---|---|"]
            lines += [f"| {_flag_cell(a)} | {_cell(a.help)} |" for a in actions]
            lines.append("")
        lines += ["```text"] + EXAMPLES[name] + ["```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
