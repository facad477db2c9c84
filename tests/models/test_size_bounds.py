"""Every size a user can pass has an upper bound (a one-line error naming the flag and the
bound, or a memory estimate checked up front), relations between flags are checked, and GPT-2 /
nanoGPT files are checked against their own weights before anything is allocated."""
import dataclasses
import json

import pytest

from tinygradx.models.apps.cli import main
from tinygradx.models.training.config import UPPER, TrainConfig


def run(argv, capsys):
    """(exit code, the one stderr line) of the command, in process."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:                      # argparse's own errors
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return code, err[0]


INT_FIELDS = [f.name for f in dataclasses.fields(TrainConfig) if f.type in (int, "int")]


def test_every_integer_field_has_an_upper_bound():
    assert set(INT_FIELDS) - {"ndigit"} <= set(UPPER), set(INT_FIELDS) - set(UPPER)


@pytest.mark.parametrize("name", sorted(UPPER))
def test_train_flag_beyond_its_bound_is_one_line(name, capsys, tmp_path):
    code, line = run(["train", f"--{name}", UPPER[name] + 1, "--out_dir", tmp_path / "r"],
                     capsys)
    assert code == 2 and f"--{name}: must be at most {UPPER[name]:_}" in line, line
    assert not (tmp_path / "r").exists()


COMMAND_BOUNDS = [
    (["graph", "--layers", "100000"], "argument --layers: must be at most 48"),
    (["graph", "--depth", "100000"], "argument --depth: must be at most 64"),
    (["trace", "--layers", "1000"], "argument --layers: must be at most 48"),
    (["eval", "--checkpoint", "x", "--beam", "1000"], "argument --beam: must be at most 64"),
    (["translate", "--checkpoint", "x", "--beam", "1000"], "argument --beam: must be at most"),
    (["generate", "--checkpoint", "x", "--max_new_tokens", "10000000"],
     "argument --max_new_tokens: must be at most 100_000"),
    (["generate", "--checkpoint", "x", "--temperature", "1e300"], "argument --temperature"),
    (["generate", "--checkpoint", "x", "--seed", "-1"], "argument --seed: must be >= 0"),
    (["generate", "--checkpoint", "x", "--top_k", str(2**40)], "argument --top_k"),
    (["demo", "--steps", "1000000000"], "argument --steps: must be at most 100_000"),
    (["experiment", "ln-grad", "--layers", "2,100000"], "argument --layers: give 1 to 8"),
    (["experiment", "warmup", "--steps", "1000000000"], "argument --steps: must be at most"),
]


@pytest.mark.parametrize("argv,needle", COMMAND_BOUNDS)
def test_command_sizes_are_bounded(argv, needle, capsys):
    code, line = run(argv, capsys)
    assert code == 2 and needle in line, line


RELATIONS = [
    (["--lr", "0.01", "--min_lr", "0.1"], "--min_lr: must be at most --lr 0.01"),
    (["--lr", "1e-5"], "--min_lr: must be at most --lr 1e-05"),        # the default min_lr
    (["--warmup", "5000", "--max_steps", "100"], "--warmup: must be at most --max_steps 100"),
    (["--task", "chars", "--batch_size", "65536", "--block_size", "4096"],
     "GiB of activations"),
]


@pytest.mark.parametrize("flags,needle", RELATIONS)
def test_relations_between_flags(flags, needle, capsys, tmp_path):
    code, line = run(["train", *flags, "--out_dir", tmp_path / "r"], capsys)
    assert code == 2 and needle in line, line
    assert not (tmp_path / "r").exists()


def test_relations_still_allow_what_they_should():
    TrainConfig(lr=1e-5, min_lr=0.0)
    TrainConfig(lr=1e-5, min_lr=1e-4, schedule="constant")     # min_lr unused there


# ------------------------------------------------------------------------------------------
# GPT-2 config.json and nanoGPT metadata, checked before anything is allocated
# ------------------------------------------------------------------------------------------

def _folder(tmp_path):
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    from tinygradx.models.nets.interop import save_pretrained
    model = GPT(GPTConfig(block_size=8, vocab_size=11, n_layer=1, n_head=2, n_embd=8,
                          norm_first=True))
    return model, save_pretrained(model, str(tmp_path / "gpt2"))


@pytest.mark.parametrize("value", ["abc", -1e-5, 0, None, True, float("inf")])
def test_bad_layer_norm_epsilon_is_named(tmp_path, value):
    from tinygradx.models.nets.interop import InteropError, from_pretrained
    _, folder = _folder(tmp_path)
    path = tmp_path / "gpt2" / "config.json"
    d = json.loads(path.read_text())
    d["layer_norm_epsilon"] = value
    path.write_text(json.dumps(d))
    with pytest.raises(InteropError) as e:
        from_pretrained(folder)
    msg = str(e.value)
    assert "\n" not in msg and "config.json: layer_norm_epsilon must be a finite number > 0" \
        in msg, msg


def test_n_positions_beyond_the_files_rows_is_refused_before_allocating(tmp_path,
                                                                       monkeypatch):
    from tinygradx.models.nets import interop
    _, folder = _folder(tmp_path)
    path = tmp_path / "gpt2" / "config.json"
    d = json.loads(path.read_text())
    d["n_positions"] = d["n_ctx"] = 10**9
    path.write_text(json.dumps(d))
    monkeypatch.setattr(interop, "GPT", lambda *a: pytest.fail("allocated a model"))
    with pytest.raises(interop.InteropError) as e:
        interop.from_pretrained(folder)
    msg = str(e.value)
    assert "config.json: n_positions is 1_000_000_000" in msg and "8 rows" in msg, msg


def test_nanogpt_metadata_that_is_not_json(tmp_path):
    from tinygradx import io
    from tinygradx.models.nets.gpt import GPT, GPTConfig
    from tinygradx.models.nets.interop import InteropError, from_nanogpt, save_nanogpt
    model = GPT(GPTConfig(block_size=8, vocab_size=11, n_layer=1, n_head=2, n_embd=8,
                          norm_first=True, gelu_approximate="none"))
    path = save_nanogpt(model, str(tmp_path / "n.safetensors"))
    state = io.load_safetensors(path)
    for bad, needle in (("{not json", "model_args is not JSON"),
                        ("[1, 2]", "model_args is not a JSON object")):
        io.save_safetensors(path, state, metadata={"model_args": bad})
        with pytest.raises(InteropError, match=needle) as e:
            from_nanogpt(path)
        assert path in str(e.value)
    args = json.dumps({"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 10**9,
                       "vocab_size": 11})
    io.save_safetensors(path, state, metadata={"model_args": args})
    with pytest.raises(InteropError, match="block_size is 1_000_000_000"):
        from_nanogpt(path)
    args = json.dumps({"n_layer": "1", "n_head": 2, "n_embd": 8, "block_size": 8,
                       "vocab_size": 11})
    io.save_safetensors(path, state, metadata={"model_args": args})
    with pytest.raises(InteropError, match="n_layer must be a positive int, got '1'"):
        from_nanogpt(path)


def test_save_pretrained_into_a_file_is_refused(tmp_path):
    from tinygradx.models.nets.interop import InteropError, save_pretrained
    model, _ = _folder(tmp_path)
    target = tmp_path / "a_file"
    target.write_bytes(b"keep me")
    with pytest.raises(InteropError, match="is a file, not a folder"):
        save_pretrained(model, str(target))
    assert target.read_bytes() == b"keep me"
