"""GPT weights in and out: Hugging Face GPT-2 folders and nanoGPT state dicts, through safetensors.

Two layouts of the same GPT-2 weights:

* **Hugging Face GPT-2** (`save_pretrained` / `from_pretrained`): a folder with `config.json`
  (model_type "gpt2") and `model.safetensors`, as `GPT2LMHeadModel.save_pretrained` writes it.
  The names are ours (nanoGPT took them from GPT-2), but GPT-2 stores its four projections as
  `Conv1D` weights of shape (in, out) -- x @ W + b -- where our `nn.Linear` keeps (out, in), so
  `c_attn`, `c_proj` and `c_fc` weights are transposed on the way. The tied `lm_head.weight` is
  not stored: it is `transformer.wte.weight`.
* **nanoGPT** (`nanogpt_state` / `from_nanogpt`): the `state_dict()` of nanoGPT's `GPT`, with
  (out, in) `nn.Linear` weights and the tied head listed under both names (torch's state dict
  does that), as a plain dict of numpy arrays, a safetensors file of them, or the `ckpt.pt`
  nanoGPT's train.py writes with torch.save (`{"model": state_dict, "optimizer": ...,
  "model_args": ..., "iter_num": ..., "best_val_loss": ..., "config": ...}`, or a bare
  `torch.save(model.state_dict())`), read by `tgx.load`'s restricted reader (tinygradx/ptfile:
  tensors and containers only, no code run). nanoGPT's MLP uses the exact (erf) GELU.

Reading is all or nothing: the config and every tensor are checked before a model is built, and
every problem -- a config field we cannot express, a missing or unexpected tensor, a wrong
shape -- is listed in one `InteropError`. Nothing here touches the network: a "pretrained"
model is a local folder.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

import numpy as np

import tinygradx as tgx
from tinygradx.io import (atomic_write, load_safetensors, read_safetensors_header,
                          save_safetensors)

from .gpt import GPT, GPTConfig

__all__ = ["InteropError", "hf_gpt2_config", "hf_gpt2_state", "save_pretrained",
           "from_pretrained", "nanogpt_state", "nanogpt_model_args", "save_nanogpt",
           "from_nanogpt"]

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
# GPT-2's Conv1D weights, stored (in, out): the transpose of our nn.Linear's (out, in)
_CONV1D = re.compile(r"\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
# buffers some checkpoints carry that are not parameters (causal masks): dropped on reading
_BUFFERS = re.compile(r"\.attn\.(bias|masked_bias)$")
_GELU_NAMES = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu": "none"}


class InteropError(ValueError):
    """A folder, file or state dict that cannot become (or come from) this GPT; the message
    lists every problem found."""


def _fail(what, problems):
    if len(problems) == 1:                  # one problem: one line
        raise InteropError(f"{what}: {problems[0]}")
    raise InteropError(f"{what}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))


def _gpt2_problems(config, gelu=None):
    """What keeps `config` from being a GPT-2 block (empty if it is one)."""
    problems = []
    for name, want in (("norm", "layernorm"), ("pos", "learned"), ("mlp", "gelu"),
                       ("bias", True), ("norm_first", True)):
        if getattr(config, name) != want:
            problems.append(f"config.{name} is {getattr(config, name)!r}; GPT-2 has {want!r}")
    if config.kv_heads != config.n_head:
        problems.append(f"config.n_kv_head is {config.n_kv_head}; GPT-2 has one K/V head per "
                        f"query head ({config.n_head})")
    if config.hidden_size != 4 * config.n_embd:
        problems.append(f"config.mlp_hidden is {config.hidden_size}; this export writes the "
                        f"GPT-2 MLP of 4 * n_embd = {4 * config.n_embd}")
    if gelu is not None and config.gelu_approximate != gelu:
        problems.append(f"config.gelu_approximate is {config.gelu_approximate!r}; nanoGPT's "
                        f"MLP uses the exact GELU ({gelu!r}) -- the logits would differ")
    return problems


def _arrays(model):
    """{name: the parameter's array}, shared with the model (no copy): for reading only."""
    return {name: p.detach().numpy() for name, p in model.named_parameters()}


# ------------------------------------------------------------------------------------------
# Hugging Face GPT-2
# ------------------------------------------------------------------------------------------

def hf_gpt2_config(config):
    """The `config.json` dict of a Hugging Face GPT-2 with these sizes."""
    problems = _gpt2_problems(config)
    if problems:
        _fail("hf_gpt2_config: this GPT is not a GPT-2 (LLaMA-style switches have no GPT-2 "
              "layout; save its state_dict with tinygradx.io.save_safetensors instead)", problems)
    activation = {"tanh": "gelu_new", "none": "gelu"}[config.gelu_approximate]
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": config.vocab_size, "n_positions": config.block_size,
        "n_ctx": config.block_size, "n_embd": config.n_embd, "n_layer": config.n_layer,
        "n_head": config.n_head, "n_inner": None, "activation_function": activation,
        "resid_pdrop": config.dropout, "embd_pdrop": config.dropout,
        "attn_pdrop": config.dropout, "layer_norm_epsilon": config.norm_eps,
        "initializer_range": 0.02, "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
        "tie_word_embeddings": True, "use_cache": True, "torch_dtype": "float32",
    }


def hf_gpt2_state(model):
    """{Hugging Face GPT-2 name: array}: Conv1D weights transposed to (in, out), no lm_head."""
    hf_gpt2_config(model.config)                            # refuses a non-GPT-2 model
    out = {}
    for name, a in _arrays(model).items():
        out[name] = np.ascontiguousarray(a.T) if _CONV1D.search(name) else a
    return out


def save_pretrained(model, directory):
    """Write `config.json` and `model.safetensors` (float32) to `directory`, the layout of
    `GPT2LMHeadModel.save_pretrained`; `from_pretrained` here or in transformers reads it."""
    config = hf_gpt2_config(model.config)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InteropError(f"save_pretrained: {os.fspath(directory)!r} is a file, not a "
                           f"folder: give a folder (it holds config.json and "
                           f"model.safetensors)")
    state = {k: v.astype(np.float32, copy=False) for k, v in hf_gpt2_state(model).items()}
    os.makedirs(directory, exist_ok=True)
    save_safetensors(os.path.join(directory, WEIGHTS_NAME), state, metadata={"format": "pt"})
    text = (json.dumps(config, indent=2) + "\n").encode("utf-8")
    atomic_write(os.path.join(directory, CONFIG_NAME), lambda f: f.write(text))
    return directory


def _config_from_hf(d, problems):
    """GPTConfig from a GPT-2 config.json dict; what cannot be expressed goes to `problems`."""
    if d.get("model_type", "gpt2") != "gpt2":
        problems.append(f"config.json: model_type is {d.get('model_type')!r}, expected 'gpt2'")
    fields = {}
    for ours, theirs in (("vocab_size", "vocab_size"), ("block_size", "n_positions"),
                         ("n_embd", "n_embd"), ("n_layer", "n_layer"), ("n_head", "n_head")):
        value = d.get(theirs)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(f"config.json: {theirs} must be a positive int, got {value!r}")
        else:
            fields[ours] = value
    act = d.get("activation_function", "gelu_new")
    if act not in _GELU_NAMES:
        problems.append(f"config.json: activation_function {act!r} is not one of "
                        f"{sorted(_GELU_NAMES)}")
    fields["gelu_approximate"] = _GELU_NAMES.get(act, "tanh")
    if d.get("n_inner") not in (None, 4 * d.get("n_embd", 0)):
        problems.append(f"config.json: n_inner is {d['n_inner']}; only 4 * n_embd is supported")
    for key, want in (("tie_word_embeddings", True), ("scale_attn_weights", True),
                      ("scale_attn_by_inverse_layer_idx", False), ("add_cross_attention", False)):
        if d.get(key, want) != want:
            problems.append(f"config.json: {key} is {d[key]!r}; only {want!r} is supported")
    eps = d.get("layer_norm_epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not np.isfinite(eps) \
            or eps <= 0:
        problems.append(f"config.json: layer_norm_epsilon must be a finite number > 0, got "
                        f"{eps!r}")
    else:
        fields["norm_eps"] = float(eps)
    if "n_embd" in fields and "n_head" in fields and fields["n_embd"] % fields["n_head"]:
        problems.append(f"config.json: n_embd {fields['n_embd']} is not divisible by n_head "
                        f"{fields['n_head']}")
        return None
    if len(fields) < 7:                                     # a size is missing or invalid
        return None
    return GPTConfig(**fields)


def _check_sizes(config, shapes, source, positions, what):
    """Refuse, before a model is allocated, a config far larger than its weights: one whose
    parameters would outnumber the weights' values more than twice (n_positions 10**9 beside
    a table of 1024 rows), naming the sizes the weights' shapes contradict: the position
    table's rows (`positions`: n_positions / block_size), the vocabulary, the width and the
    number of blocks. `shapes` maps our tensor names to shapes. A config of about the
    weights' size goes on to the full check, which lists every problem."""
    d, L = config.n_embd, config.n_layer
    wanted = L * (12 * d * d + 13 * d) + (config.vocab_size + config.block_size + 2) * d
    held = sum(int(np.prod(s)) for s in shapes.values())
    if wanted <= 2 * held + 2**20:
        return
    problems = []
    wte, wpe = shapes.get("transformer.wte.weight"), shapes.get("transformer.wpe.weight")
    if wpe is not None and len(wpe) == 2 and wpe[0] != config.block_size:
        problems.append(f"{source}: {positions} is {config.block_size:_}, but the weights' "
                        f"position table transformer.wpe.weight has {wpe[0]:_} rows")
    if wte is not None and len(wte) == 2 and (wte[0], wte[1]) != (config.vocab_size,
                                                                  config.n_embd):
        problems.append(f"{source}: vocab_size {config.vocab_size:_} x n_embd "
                        f"{config.n_embd:_}, but transformer.wte.weight is {wte[0]:_} x "
                        f"{wte[1]:_}")
    blocks = {int(m.group(1)) for k in shapes
              if (m := re.match(r"transformer\.h\.(\d+)\.", k))}
    if blocks and config.n_layer > max(blocks) + 1:
        problems.append(f"{source}: n_layer is {config.n_layer:_}, but the weights hold "
                        f"{max(blocks) + 1} blocks")
    if not problems:
        problems.append(f"{source}: the config's sizes make ~{wanted:_} parameters, the "
                        f"weights hold {held:_} values")
    _fail(what, problems)


def _normalize_hf(arrays):
    """Our names for a GPT-2 file's tensors: the `transformer.` prefix added when the file was
    saved from GPT2Model, mask buffers dropped. Returns (state, origin: ours -> file name, extra
    lm_head or None)."""
    state, origin, head = {}, {}, None
    for key, value in arrays.items():
        if _BUFFERS.search(key):
            continue
        if key == "lm_head.weight":
            head = value
            continue
        name = key if key.startswith("transformer.") else "transformer." + key
        state[name], origin[name] = value, key
    return state, origin, head


def _check_state(model, state, origin, layout, problems, transpose=False):
    """Append every missing / unexpected / wrongly shaped or typed tensor to `problems`."""
    own = _arrays(model)
    for name, p in own.items():
        if name not in state:
            problems.append(f"missing tensor {name!r} (the model needs it, the {layout} lacks it)")
            continue
        a = state[name]
        shape = tuple(a.shape)
        want = tuple(p.shape[::-1]) if transpose and _CONV1D.search(name) else tuple(p.shape)
        if shape != want:
            problems.append(f"wrong shape for {origin.get(name, name)!r}: the {layout} has "
                            f"{shape}, the config needs {want}")
        elif np.asarray(a).dtype.kind != "f":
            problems.append(f"{origin.get(name, name)!r} has dtype {np.asarray(a).dtype}, "
                            f"expected a float tensor")
    problems += [f"unexpected tensor {origin.get(k, k)!r} (the {layout} has it, the model "
                 f"does not)" for k in state if k not in own]


def _load_checked(model, state, transpose):
    # as torch's load_state_dict: copy_ under no_grad writes into each parameter's memory
    # (cast to its dtype) and bumps its version counter
    with tgx.no_grad():
        for name, p in model.named_parameters():
            a = np.asarray(state[name])
            p.copy_(a.T if transpose and _CONV1D.search(name) else a)


def from_pretrained(directory, dtype=np.float32):
    """A GPT from a Hugging Face GPT-2 folder (`config.json` + `model.safetensors`, a local path;
    the file may or may not carry the `transformer.` prefix and the attention mask buffers).
    Every problem is listed in one InteropError before anything is built."""
    directory = os.fspath(directory)
    what = f"from_pretrained({directory!r})"
    paths = {n: os.path.join(directory, n) for n in (CONFIG_NAME, WEIGHTS_NAME)}
    missing = [n for n, p in paths.items() if not os.path.isfile(p)]
    if missing:
        _fail(what, [f"no {n} in the folder" for n in missing])
    try:
        with open(paths[CONFIG_NAME], encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        _fail(what, [f"config.json is not readable JSON: {e}"])
    if not isinstance(d, dict):
        _fail(what, ["config.json does not hold a JSON object"])
    problems = []
    config = _config_from_hf(d, problems)
    if config is None:
        _fail(what, problems)
    # the sizes against the file's own tensors, from its header: a config asking for far more
    # than the file holds (n_positions 10**9) is refused before anything is allocated
    shapes = {k if k.startswith("transformer.") else "transformer." + k: tuple(v["shape"])
              for k, v in read_safetensors_header(paths[WEIGHTS_NAME])[0].items()}
    _check_sizes(config, shapes, f"{paths[CONFIG_NAME]}", "n_positions", what)
    state, origin, head = _normalize_hf(load_safetensors(paths[WEIGHTS_NAME]))
    model = GPT(config)
    _check_state(model, state, origin, "file", problems, transpose=True)
    wte = state.get("transformer.wte.weight")
    if head is not None and wte is not None and (head.shape != wte.shape
                                                 or not np.array_equal(head, wte)):
        problems.append("lm_head.weight differs from transformer.wte.weight, but GPT-2 ties "
                        "them (this GPT has no separate output matrix)")
    return _finish(model, state, True, dtype, what, problems)


# ------------------------------------------------------------------------------------------
# nanoGPT
# ------------------------------------------------------------------------------------------

def nanogpt_state(model):
    """{nanoGPT name: array}: our own names and (out, in) weights, plus the tied
    `lm_head.weight` that torch's state_dict lists as well. Refuses what nanoGPT's GPT cannot
    express (LLaMA switches, the tanh GELU)."""
    problems = _gpt2_problems(model.config, gelu="none")
    problems = [p for p in problems if not p.startswith("config.bias")]  # nanoGPT has bias=False
    if problems:
        _fail("nanogpt_state: nanoGPT's GPT cannot hold this model", problems)
    state = dict(_arrays(model))
    state["lm_head.weight"] = state["transformer.wte.weight"]
    return state


def nanogpt_model_args(config):
    """nanoGPT's `model_args` dict (GPTConfig fields) for these sizes."""
    return dict(n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
                block_size=config.block_size, bias=config.bias, vocab_size=config.vocab_size,
                dropout=config.dropout)


def save_nanogpt(model, path):
    """Write nanoGPT's state dict as a safetensors file (`lm_head.weight` left out, since
    safetensors refuses shared tensors; `from_nanogpt` and nanoGPT's load_state_dict(...,
    strict=False) tie it back). The model_args go into the file's metadata."""
    state = {k: v.astype(np.float32, copy=False) for k, v in nanogpt_state(model).items()
             if k != "lm_head.weight"}
    meta = {"format": "pt", "model_args": json.dumps(nanogpt_model_args(model.config))}
    save_safetensors(path, state, metadata=meta)
    return path


def _torch_checkpoint(path):
    """Whether `path` starts as torch.save's files do (a zip archive, or the old format's
    pickle), not as a safetensors file (an 8-byte header length)."""
    with open(path, "rb") as f:
        head = f.read(3)
    return head.startswith(b"PK") or head == b"\x80\x02\x8a"


def _from_torch_file(path, model_args, what):
    """(state, model_args) of a torch.save file: nanoGPT's checkpoint dict, or a state dict."""
    ckpt = tgx.load(path, map_location="cpu")
    if isinstance(ckpt, Mapping) and isinstance(ckpt.get("model"), Mapping):
        args = ckpt.get("model_args")
        if model_args is None and isinstance(args, Mapping):
            model_args = dict(args)
        ckpt = ckpt["model"]
    if not isinstance(ckpt, Mapping):
        _fail(what, [f"the file holds a {type(ckpt).__name__}, not a state dict or nanoGPT's "
                     f"checkpoint dict"])
    return ckpt, model_args


def from_nanogpt(state, model_args=None, dtype=np.float32):
    """A GPT from nanoGPT weights: `state` is a dict of arrays or tensors, the path of a
    safetensors file, or the path of a torch.save file (nanoGPT's `ckpt.pt`, or a state dict
    saved alone); `model_args` is nanoGPT's dict, read from the ckpt's "model_args" or the
    safetensors metadata when omitted. The `_orig_mod.` prefix of a torch.compile'd model
    and the `attn.bias` mask buffers are dropped."""
    what = "from_nanogpt"
    if isinstance(state, (str, os.PathLike)) and os.path.isfile(state) and \
            _torch_checkpoint(state):
        what = f"from_nanogpt({os.fspath(state)!r})"
        state, model_args = _from_torch_file(state, model_args, what)
    if isinstance(state, (str, os.PathLike)):
        what = f"from_nanogpt({os.fspath(state)!r})"
        if model_args is None:
            meta = read_safetensors_header(state)[1]
            if "model_args" in meta:
                try:
                    model_args = json.loads(meta["model_args"])
                except ValueError as e:
                    _fail(what, [f"the metadata entry model_args is not JSON ({e}): "
                                 f"{meta['model_args'][:60]!r}"])
                if not isinstance(model_args, dict):
                    _fail(what, [f"the metadata entry model_args is not a JSON object: "
                                 f"{meta['model_args'][:60]!r}"])
        state = load_safetensors(state)
    if not isinstance(state, Mapping):
        raise TypeError(f"{what}: state must be a dict of arrays or a path, got {type(state)}")
    if model_args is None:
        _fail(what, ["no model_args: pass nanoGPT's model_args dict (n_layer, n_head, n_embd, "
                     "block_size, bias, vocab_size)"])
    args = dict(model_args)
    problems = [f"model_args lacks {k!r}" for k in ("n_layer", "n_head", "n_embd", "block_size",
                                                     "vocab_size") if k not in args]
    for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
        v = args[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            problems.append(f"model_args: {k} must be a positive int, got {v!r}")
    if not problems and args["n_embd"] % args["n_head"]:
        problems.append(f"model_args: n_embd {args['n_embd']} is not divisible by n_head "
                        f"{args['n_head']}")
    if problems:
        _fail(what, problems)
    config = GPTConfig(n_layer=args["n_layer"], n_head=args["n_head"], n_embd=args["n_embd"],
                       block_size=args["block_size"], vocab_size=args["vocab_size"],
                       bias=bool(args.get("bias", True)), dropout=float(args.get("dropout", 0)),
                       gelu_approximate="none")
    clean, origin, head = {}, {}, None
    for key, value in state.items():
        name = key[len("_orig_mod."):] if key.startswith("_orig_mod.") else key
        if _BUFFERS.search(name):
            continue
        value = value.detach().numpy() if isinstance(value, tgx.Tensor) else \
            np.asarray(getattr(value, "data", value))
        if name == "lm_head.weight":
            head = value
            continue
        clean[name], origin[name] = value, key
    _check_sizes(config, {k: v.shape for k, v in clean.items()}, "model_args", "block_size",
                 what)
    model = GPT(config)
    _check_state(model, clean, origin, "state dict", problems)
    wte = clean.get("transformer.wte.weight")
    if head is not None and wte is not None and not np.array_equal(head, wte):
        problems.append("lm_head.weight differs from transformer.wte.weight; nanoGPT ties them")
    return _finish(model, clean, False, dtype, what, problems)


def _finish(model, state, transpose, dtype, what, problems):
    """Refuse with every problem found, or load all of `state` and cast: never half a model."""
    if problems:
        _fail(what, problems)
    _load_checked(model, state, transpose=transpose)
    if dtype != np.float32:
        model.to(dtype)
    return model.eval()
