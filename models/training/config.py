"""A run's config: TrainConfig, the per-task defaults, and the one validation of its values.

`validate_config` checks every field (command-line flags, TrainConfig(...) and checkpoints read
back from disk alike) and `check_memory` the model's size, before anything is allocated or
written (docs/tasks.md, "Runs").
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

# Per-task defaults: the settings measured to reach each task's target on held-out data on 2 CPU
# cores (docs/tasks.md has the runs, their wall times and the commands). TrainConfig.for_task
# applies them under the user's explicit overrides; TrainConfig(...) itself never does.
_TOY = dict(n_layer=2, d_model=64, n_head=4, dropout=0.0, lr=3e-3, min_lr=1e-4, warmup=100,
            batch_size=64, max_steps=800, eval_interval=200)   # the synthetic translation tasks
TASK_DEFAULTS: dict[str, dict] = {
    "copy": _TOY,
    "reverse": _TOY,
    "sort": _TOY,
    "numbers": {**_TOY, "max_steps": 1200},
    "numbers_zh": {**_TOY, "max_steps": 1200},
    "dates": {**_TOY, "max_steps": 1200},
    # real corpora (eng-fra.txt) are larger and noisier than the toy tasks: a wider model with
    # dropout and label smoothing; measured only on a small synthetic file (docs/tasks.md)
    "tsv": dict(n_layer=2, d_model=128, n_head=4, dropout=0.1, lr=1e-3, min_lr=1e-4,
                warmup=200, batch_size=64, max_steps=2000, eval_interval=250,
                label_smoothing=0.1),
    # minGPT's adder is a Pre-LN GPT; the sum is read greedily, digit by digit
    "add": dict(n_layer=2, d_model=64, n_head=4, dropout=0.0, lr=2e-3, min_lr=1e-4,
                warmup=100, batch_size=64, max_steps=2000, eval_interval=250,
                weight_decay=0.1, norm_first=True),
    # nanoGPT's CPU run of shakespeare_char (README): 4 layers, 4 heads, n_embd 128, block 64,
    # batch 12, 2000 iterations, lr 1e-3 cosine to 1e-4 over 2000 iterations, dropout 0, beta2 0.99
    "chars": dict(n_layer=4, d_model=128, n_head=4, dropout=0.0, block_size=64, lr=1e-3,
                  min_lr=1e-4, warmup=100, batch_size=12, max_steps=2000, eval_interval=250,
                  beta2=0.99, weight_decay=0.1, norm_first=True),
}


@dataclass
class TrainConfig:
    """Everything a run needs; each field is also a CLI flag (`--d_model 64`)."""

    task: str = "dates"
    seed: int = 0
    # task options (n_train etc. are passed to the task builder when set)
    n_train: int = 0
    ndigit: int = 2
    text: str = ""                 # chars task: a UTF-8 file (default: stdlib docstrings)
    path: str = ""                 # tsv task: a tab-separated file of sentence pairs
    # model
    n_layer: int = 2               # encoder and decoder layers each, or GPT blocks
    d_model: int = 128
    n_head: int = 4
    d_ff: int = 0                  # 0 means 4 * d_model
    dropout: float = 0.1
    norm_first: bool = False       # Pre-LN (True) or the original Post-LN (False)
    block_size: int = 64           # GPT context length (chars task)
    # the LLaMA-style switches of the GPT tasks (add, chars), named as in GPTConfig
    norm: str = "layernorm"        # layernorm (GPT-2) | rmsnorm
    pos: str = "learned"           # learned position table (GPT-2) | rope (rotary, no table)
    mlp: str = "gelu"              # gelu (GPT-2) | swiglu
    n_kv_head: int = 0             # K/V heads: grouped-query attention (0: n_head)
    bias: bool = True              # biases in Linears and LayerNorms (false: none, as LLaMA)
    # optimisation
    optimizer: str = "adamw"       # adam | adamw | sgd
    lr: float = 1e-3
    min_lr: float = 1e-4
    schedule: str = "cosine"       # cosine (warmup + cosine, nanoGPT) | noam | constant
    warmup: int = 100
    weight_decay: float = 0.01
    beta2: float = 0.98
    grad_clip: float = 1.0
    label_smoothing: float = 0.0
    batch_size: int = 64
    grad_accum: int = 1            # micro-batches of batch_size per optimizer step
    teacher_forcing: float = 1.0   # translation: share of gold decoder inputs (1.0: all gold)
    max_steps: int = 2000
    # evaluation, logging, checkpoints
    eval_interval: int = 250
    eval_batches: int = 20
    eval_examples: int = 500       # translation/add: how many held-out examples to decode
    out_dir: str = ""              # "" means runs/<task>
    save_interval: int = 0         # 0: save at eval points and at the end
    health_interval: int = 50      # per-layer gradient norms and update ratios (0: off)
    progress: bool = True          # a bar on a terminal; elsewhere a plain line per log_interval
    log_interval: int = 50         # off a terminal: one progress line every this many steps

    @classmethod
    def for_task(cls, task: str = "dates", **overrides) -> "TrainConfig":
        """The config of `task`: dataclass defaults, then TASK_DEFAULTS[task], then `overrides`."""
        return cls(**{**TASK_DEFAULTS.get(task, {}), **overrides, "task": task})

    def __post_init__(self):
        validate_config(dataclasses.asdict(self))
        if self.d_ff == 0:
            self.d_ff = 4 * self.d_model
        if not self.out_dir:                 # one directory per task: runs/dates, runs/chars, ...
            self.out_dir = default_out_dir(self.task)


def default_out_dir(task: str) -> str:
    """Where a run of `task` goes when --out_dir is not given: runs/<task>."""
    return os.path.join("runs", task)


# the GPT switches of TrainConfig and their GPT-2 values: any other value needs a GPT task
GPT_SWITCHES = {"norm": "layernorm", "pos": "learned", "mlp": "gelu", "n_kv_head": 0,
                "bias": True}


def gpt_switches(cfg: "TrainConfig") -> dict:
    """The GPTConfig keyword arguments of cfg's LLaMA-style switches."""
    return dict(norm=cfg.norm, pos=cfg.pos, mlp=cfg.mlp, n_kv_head=cfg.n_kv_head or None,
                bias=cfg.bias)


# flags that may differ from the checkpoint's config on --resume
RESUMABLE = ("out_dir", "max_steps", "lr", "min_lr", "eval_interval", "eval_batches",
             "eval_examples", "save_interval", "health_interval", "progress", "log_interval",
             "text", "path", "teacher_forcing")


# ------------------------------------------------------------------------------------------
# one validation of a run's config: CLI flags, TrainConfig(...) and checkpoints all pass here
# ------------------------------------------------------------------------------------------

class ConfigError(ValueError):
    """A config value that cannot make a run: one line naming the flag (`--lr: ...`)."""


def is_finite(x):
    """A real number (int or float, not bool), neither inf nor nan."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_int(x):
    """An int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


# field -> (predicate, what a valid value is). Kinds are checked first, from the field's type.
_RULES = {
    "seed": (lambda v: v >= 0, "an integer >= 0"),
    "n_train": (lambda v: v >= 0, "an integer >= 0 (0: the task's default)"),
    "ndigit": (lambda v: 1 <= v <= 18, "an integer in [1, 18]"),
    "n_layer": (lambda v: v >= 1, "an integer >= 1"),
    "d_model": (lambda v: v >= 1, "an integer >= 1"),
    "n_head": (lambda v: v >= 1, "an integer >= 1"),
    "d_ff": (lambda v: v >= 0, "an integer >= 0 (0: 4 * d_model)"),
    "dropout": (lambda v: is_finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "block_size": (lambda v: v >= 1, "an integer >= 1"),
    "norm": (lambda v: v in ("layernorm", "rmsnorm"), "one of layernorm, rmsnorm"),
    "pos": (lambda v: v in ("learned", "rope"), "one of learned, rope"),
    "mlp": (lambda v: v in ("gelu", "swiglu"), "one of gelu, swiglu"),
    "n_kv_head": (lambda v: v >= 0, "an integer >= 0 (0: n_head)"),
    "optimizer": (lambda v: v in ("adam", "adamw", "sgd"), "one of adam, adamw, sgd"),
    "lr": (lambda v: is_finite(v) and v > 0, "a finite number > 0"),
    "min_lr": (lambda v: is_finite(v) and v >= 0, "a finite number >= 0"),
    "schedule": (lambda v: v in ("cosine", "noam", "constant"), "one of cosine, noam, constant"),
    "warmup": (lambda v: v >= 0, "an integer >= 0"),
    "weight_decay": (lambda v: is_finite(v) and v >= 0, "a finite number >= 0"),
    "beta2": (lambda v: is_finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "grad_clip": (lambda v: is_finite(v) and v >= 0, "a finite number >= 0 (0: no clipping)"),
    "label_smoothing": (lambda v: is_finite(v) and 0 <= v < 1, "a finite number in [0, 1)"),
    "batch_size": (lambda v: v >= 1, "an integer >= 1"),
    "grad_accum": (lambda v: v >= 1, "an integer >= 1"),
    "teacher_forcing": (lambda v: is_finite(v) and 0 <= v <= 1, "a finite number in [0, 1]"),
    "max_steps": (lambda v: v >= 1, "an integer >= 1"),
    "eval_interval": (lambda v: v >= 1, "an integer >= 1"),
    "eval_batches": (lambda v: v >= 1, "an integer >= 1"),
    "eval_examples": (lambda v: v >= 1, "an integer >= 1"),
    "save_interval": (lambda v: v >= 0, "an integer >= 0 (0: at evaluations only)"),
    "health_interval": (lambda v: v >= 0, "an integer >= 0 (0: off)"),
    "log_interval": (lambda v: v >= 0, "an integer >= 0 (0: only the evaluation lines)"),
}

# Upper bounds: every size a user can pass has one, so a typo (--grad_accum 100000000) is a
# one-line error naming the flag and the bound instead of a hang or an allocation that never
# ends. They are far beyond what a run on a laptop needs; check_memory bounds the bytes of the
# model and of its activations as well.
MAX_STEPS = 10**8
UPPER = {
    "seed": 2**32 - 1, "n_train": 10**7, "n_layer": 256, "d_model": 2**20, "n_head": 1024,
    "d_ff": 2**22, "block_size": 65536, "n_kv_head": 1024, "warmup": MAX_STEPS,
    "batch_size": 65536, "grad_accum": 4096, "max_steps": MAX_STEPS, "eval_interval": MAX_STEPS,
    "eval_batches": 10000, "eval_examples": 10**6, "save_interval": MAX_STEPS,
    "health_interval": MAX_STEPS, "log_interval": MAX_STEPS,
}

# field type -> does v have it (a float field takes an int too; inf and nan pass here, and
# the field's rule in _RULES names them)
_KINDS = {
    "bool": lambda v: isinstance(v, bool),
    "int": is_int,
    "float": lambda v: is_finite(v) or (isinstance(v, float) and not isinstance(v, bool)),
    "str": lambda v: isinstance(v, str),
}

# parameters + gradients + two Adam moments, float32: 16 bytes per parameter
BYTES_PER_PARAMETER = 16
MEMORY_LIMIT = 4 * 2**30


def validate_config(values: dict, where: str = "") -> None:
    """Check every field of a TrainConfig's values; raise ConfigError naming the first bad one.

    `where` prefixes the message (a checkpoint's path), so the same rules serve the command
    line (`--lr: must be a finite number > 0, got inf`) and a file read back from disk.
    """
    def fail(name, text):
        raise ConfigError(f"{where}--{name}: {text}")

    kinds = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
    for name, kind in kinds.items():
        if name not in values:
            continue
        v = values[name]
        kind = getattr(kind, "__name__", kind)
        ok = _KINDS[kind](v)
        if not ok:
            fail(name, f"must be {'a number' if kind == 'float' else 'a ' + kind}, got {v!r}")
        if name in _RULES and not _RULES[name][0](v):
            fail(name, f"must be {_RULES[name][1]}, got {v!r}")
        if name in UPPER and v > UPPER[name]:
            fail(name, f"must be at most {UPPER[name]:_} (the upper bound of --{name}), "
                       f"got {v:_}")
    if "task" in values:
        from tinygradx.models.tasks import TASK_NAMES
        if values["task"] not in TASK_NAMES:
            fail("task", f"unknown task {values['task']!r}; known: {', '.join(TASK_NAMES)}")
    if {"d_model", "n_head"} <= values.keys() and values["d_model"] % values["n_head"]:
        fail("n_head", f"must be a divisor of --d_model {values['d_model']} (d_model must be "
                       f"divisible by n_head), got {values['n_head']}")
    if values.get("schedule", "cosine") == "cosine" and {"lr", "min_lr"} <= values.keys() \
            and values["min_lr"] > values["lr"]:
        fail("min_lr", f"must be at most --lr {values['lr']:g} (the cosine schedule decays "
                       f"from --lr down to --min_lr), got {values['min_lr']:g}")
    if values.get("schedule") == "noam" and "warmup" in values and values["warmup"] < 1:
        fail("warmup", "must be >= 1 with --schedule noam (its peak is at step warmup), got "
                       f"{values['warmup']}")
    _check_gpt_switches(values, fail)


def _check_gpt_switches(values, fail):
    """The LLaMA-style switches: only for a GPT task, K/V heads dividing the heads, RoPE's
    pairs fitting a head."""
    if "task" in values:
        from tinygradx.models.tasks import is_lm_task
        for name, plain in GPT_SWITCHES.items():
            if name in values and values[name] != plain and not is_lm_task(values["task"]):
                fail(name, f"the LLaMA-style switches (--norm, --pos, --mlp, --n_kv_head, "
                           f"--bias) build the GPT of the tasks add and chars; task "
                           f"{values['task']} trains an encoder-decoder, got "
                           f"{str(values[name]).lower() if name == 'bias' else repr(values[name])}")
    kv, heads = values.get("n_kv_head", 0), values.get("n_head")
    if kv and heads and heads % kv:
        fail("n_kv_head", f"must divide --n_head {heads} (each K/V head serves n_head // "
                          f"n_kv_head query heads), got {kv}")
    d, heads = values.get("d_model"), values.get("n_head")
    if values.get("pos") == "rope" and d and heads and not d % heads and (d // heads) % 2:
        fail("pos", f"rope rotates pairs of a head's dims: the head size d_model // n_head "
                    f"must be even, got {d} // {heads} = {d // heads}")


def estimate_parameters(cfg: "TrainConfig", vocab_sizes, max_len: int) -> int:
    """Parameter count of the model cfg would build, from the sizes alone (nothing allocated)."""
    d, ff, L = cfg.d_model, cfg.d_ff or 4 * cfg.d_model, cfg.n_layer
    if len(vocab_sizes) == 1:
        (v,) = vocab_sizes
        return _gpt_parameters(cfg, v, max_len)
    vs, vt = vocab_sizes                            # encoder 4d^2 + 2d*ff, decoder 8d^2 + 2d*ff
    per = 4 * d * d + 2 * d * ff + ff + 9 * d
    return L * (per + per + 4 * d * d + 6 * d) + (vs + 2 * vt) * d + max_len * d + 4 * d


def _gpt_parameters(cfg, v, max_len):
    """GPT: per block 2 norms, attention (c_attn d -> d + 2 kv, c_proj), the MLP (2 matrices
    of d x H, or 3 for SwiGLU); wte (tied to the head), wpe unless RoPE, ln_f if Pre-LN."""
    from tinygradx.models.nets.gpt import GPTConfig
    d, b = cfg.d_model, int(cfg.bias)
    g = GPTConfig(n_embd=d, n_head=cfg.n_head, **gpt_switches(cfg))
    kv, hidden = 2 * g.kv_heads * (d // cfg.n_head), g.hidden_size
    norm = d * (1 + b) if cfg.norm == "layernorm" else d
    mats = 3 if cfg.mlp == "swiglu" else 2
    attn = d * (d + kv) + d * d + b * (2 * d + kv)
    mlp = mats * d * hidden + b * ((mats - 1) * hidden + d)
    pos = max_len * d if cfg.pos == "learned" else 0
    return cfg.n_layer * (2 * norm + attn + mlp) + v * d + pos + norm * cfg.norm_first


def estimate_activations(cfg: "TrainConfig", vocab_sizes, max_len: int) -> int:
    """Bytes (float32) that one micro-batch's forward keeps for backward, roughly: per layer
    and position ~12 d_model + 2 d_ff values and 3 attention maps of T keys per head; the
    logits three times. An encoder-decoder counts its two stacks and three attentions."""
    d, ff, T, B = cfg.d_model, cfg.d_ff or 4 * cfg.d_model, max_len, cfg.batch_size
    stacks, attns = (1, 1) if len(vocab_sizes) == 1 else (2, 1.5)
    per_layer = B * T * (12 * d + 2 * ff) + 3 * attns * B * cfg.n_head * T * T
    return int(4 * (stacks * cfg.n_layer * per_layer + 3 * B * T * vocab_sizes[-1]))


def check_memory(cfg: "TrainConfig", vocab_sizes, max_len: int, where: str = "") -> int:
    """Refuse a model whose parameters and optimizer state would not fit a sane budget."""
    n = estimate_parameters(cfg, vocab_sizes, max_len)
    need = n * BYTES_PER_PARAMETER
    act = estimate_activations(cfg, vocab_sizes, max_len)
    if need <= MEMORY_LIMIT < need + act:
        raise ConfigError(
            f"{where}one step would hold ~{act / 2**30:.1f} GiB of activations for backward "
            f"(limit {MEMORY_LIMIT / 2**30:.0f} GiB with the model's ~{need / 2**30:.2f} GiB); "
            f"lower --batch_size ({cfg.batch_size}; --grad_accum keeps the batch of a step), "
            f"--block_size ({cfg.block_size}), --d_model ({cfg.d_model}) or --n_layer "
            f"({cfg.n_layer})")
    if need > MEMORY_LIMIT:
        raise ConfigError(
            f"{where}the model would have ~{n:,} parameters, ~{need / 2**30:.1f} GiB with its "
            f"gradients and optimizer state (limit {MEMORY_LIMIT / 2**30:.0f} GiB); lower "
            f"--d_model ({cfg.d_model}), --d_ff ({cfg.d_ff}), --n_layer ({cfg.n_layer}) or "
            f"--block_size ({cfg.block_size})")
    return n


def config_from_args(pairs, base=None):
    """Apply `--key value` overrides to a TrainConfig, with type checks and clear errors."""
    # without a base, start from the field defaults: TrainConfig() would have resolved d_ff = 0
    # to 4 * 128 already, and --d_model 64 would then keep d_ff 512
    cfg = dataclasses.asdict(base) if base is not None else {
        f.name: f.default for f in dataclasses.fields(TrainConfig)}
    types = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
    for key, value in pairs.items():
        if key not in types:
            raise ValueError(f"unknown option --{key}; known: "
                             f"{', '.join('--' + k for k in types)}")
        kind = types[key]
        try:
            if kind in (bool, "bool"):
                if str(value).lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError
                cfg[key] = str(value).lower() in ("1", "true", "yes")
            elif kind in (int, "int"):
                cfg[key] = int(value)
            elif kind in (float, "float"):
                cfg[key] = float(value)
            else:
                cfg[key] = str(value)
        except ValueError:
            raise ValueError(f"--{key}: expected {getattr(kind, '__name__', kind)}, "
                             f"got {value!r}") from None
    return TrainConfig(**cfg)
