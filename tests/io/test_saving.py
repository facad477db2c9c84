"""tgx.save / tgx.load on tinygradx's own files: round trips (shared tensors, views, every
container, any depth, file objects, map_location's forms), and a file that describes something
it cannot be (a tensor named but missing, a node of the wrong kind, a view past its storage, a
forward reference, damaged or truncated bytes, the structure of earlier versions) refused in
one line naming the file and what is wrong."""
import collections
import io as pyio
import json
import zipfile

import numpy as np
import pytest

import tinygradx as tgx
from tinygradx import io, nn
from tinygradx.tensor import saving_format as fmt

from oracle import assert_clear


def _write(path, nodes, arrays):
    """A file whose structure is `nodes`, whatever they say."""
    io.save_checkpoint(path, arrays, {fmt.KEY: {"nodes": nodes}})


def _refused(path, *fragments, error=io.CheckpointError):
    with pytest.raises(error) as e:
        tgx.load(path)
    assert_clear(e.value, *fragments)
    return str(e.value)


def test_round_trip_of_every_kind(tmp_path):
    t = tgx.arange(6.0).reshape(2, 3).requires_grad_()
    obj = {"t": t, "alias": t, "view": t.detach()[1], "T": t.detach().t(),
           "ints": tgx.tensor([1, 2], dtype=tgx.int8), "empty": tgx.zeros(0, 3),
           "od": collections.OrderedDict(b=1, a=[2.5, None]), "set": {1, "x"},
           "counter": collections.Counter("aab"), "bytes": b"\x00\xff", "ba": bytearray(b"q"),
           "c": 1 - 2j, "nan": float("nan"), "inf": -float("inf"), "big": 2 ** 80,
           "tuple": (1, (2,)), 3: "int key", None: "none key", 1.5: "float key",
           "size": tgx.zeros(2, 3).shape, "dtype": tgx.float16, "device": tgx.device("cpu"),
           "array": np.arange(4, dtype=np.uint16), "np_scalar": np.float32(1.5)}
    path = tmp_path / "all.pt"
    tgx.save(obj, path)
    back = tgx.load(path)
    assert list(back) == list(obj)
    assert back["t"] is back["alias"] and back["t"].requires_grad
    np.testing.assert_array_equal(back["t"].detach().numpy(), t.detach().numpy())
    with tgx.no_grad():
        back["t"].add_(10)                      # one storage: the views see the change
    assert back["view"].tolist() == [13.0, 14.0, 15.0] and back["T"][0, 1].item() == 13.0
    assert back["ints"].dtype == np.int8 and back["empty"].shape == (0, 3)
    assert type(back["od"]) is collections.OrderedDict and back["od"] == obj["od"]
    assert back["set"] == {1, "x"} and back["counter"] == collections.Counter("aab")
    assert back["bytes"] == b"\x00\xff" and back["ba"] == bytearray(b"q")
    assert back["c"] == 1 - 2j and np.isnan(back["nan"]) and back["inf"] == -float("inf")
    assert back["big"] == 2 ** 80 and back["tuple"] == (1, (2,))
    assert back[3] == "int key" and back[None] == "none key" and back[1.5] == "float key"
    assert back["size"] == (2, 3) and type(back["size"]).__name__ == "Size"
    assert back["dtype"] is tgx.float16 and back["device"] == tgx.device("cpu")
    assert back["array"].dtype == np.uint16 and back["np_scalar"] == 1.5


def test_a_shared_list_loads_as_one_list_and_any_depth_loads(tmp_path):
    shared = [1, 2]
    deep = cur = []
    for _ in range(5_000):                      # past Python's recursion limit (1,000)
        cur.append([])
        cur = cur[0]
    tgx.save({"a": shared, "b": shared, "deep": deep}, tmp_path / "x.pt")
    back = tgx.load(tmp_path / "x.pt")
    assert back["a"] is back["b"]
    depth, cur = 0, back["deep"]
    while cur:
        depth, cur = depth + 1, cur[0]
    assert depth == 5_000


def test_file_objects(tmp_path):
    buffer = pyio.BytesIO()
    tgx.save({"w": tgx.ones(2)}, buffer)
    buffer.seek(0)
    assert tgx.load(buffer)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="f must be a file path"):
        tgx.save({}, 5)


def test_save_refuses_what_is_not_data_and_touches_nothing(tmp_path):
    path = tmp_path / "x.pt"
    cyclic = [1]
    cyclic.append(cyclic)
    point = collections.namedtuple("Point", "x y")(1, 2)
    for obj, fragments in [({"m": nn.Linear(2, 2)}, ["obj['m']", "Linear"]),
                           ([1, lambda: 0], ["obj[1]", "function"]),
                           (cyclic, ["obj[1]", "contains itself"]),
                           ({"p": point}, ["obj['p']", "named tuple"]),
                           (frozenset([1]), ["frozenset"]),
                           (collections.defaultdict(int), ["defaultdict"]),
                           (np.array(["a"]), ["dtype <U1"])]:
        with pytest.raises(TypeError) as e:
            tgx.save(obj, path)
        assert_clear(e.value, *fragments)
    assert not path.exists()


def test_a_tensor_named_but_missing(tmp_path):
    path = tmp_path / "x.pt"
    _write(path, [["tensor", {"s": "t7", "grad": False}]], {"s0": np.ones(2)})
    _refused(path, repr(str(path)), "'t7'", "does not hold")


@pytest.mark.parametrize("nodes, fragments", [
    ([["int", 1], ["dict", 5]], ["node 1 (dict)", "[key, value] pairs"]),
    ([["dict", [[1, 0]]]], ["node 0 names node", "not one before it"]),
    ([["list", [0]]], ["node 0 names node 0"]),
    ([["int", "x"]], ["node 0 (int)", "not of its kind"]),
    ([["float", "lots"]], ["node 0 (float)", "not a number"]),
    ([["spam", 1]], ["unknown kind 'spam'"]),
    ([{"dict": 5}], ["node 0 is not a [kind, value] entry"]),
    ([["list", []], ["list", []], ["set", [0, 1]]], ["not hashable"]),
    ([["tensor", {"s": "s0", "grad": False, "dtype": "float32", "shape": [3],
                  "strides": [4], "offset": 8}]], ["reaches bytes 8..20", "storage of 16"]),
    ([["tensor", {"s": "s0", "grad": False, "dtype": "float32", "shape": [2],
                  "strides": [-4], "offset": 0}]], ["reaches bytes -4"]),
    ([["tensor", {"s": "s0", "grad": False, "dtype": "object", "shape": [1],
                  "strides": [8], "offset": 0}]], ["dtype 'object'"]),
    ([["tensor", {"s": "s0", "grad": "yes"}]], ["requires_grad='yes'"]),
    ([["device", "cuda"]], ["not the CPU"]),
])
def test_a_structure_that_lies_is_refused_by_name(tmp_path, nodes, fragments):
    path = tmp_path / "x.pt"
    _write(path, nodes, {"s0": np.zeros(16, np.uint8) if "dtype" in str(nodes) else
                         np.ones(2, np.float32)})
    _refused(path, "is damaged", *fragments)


def test_the_structure_of_earlier_versions(tmp_path):
    """Files written before the node table (nested JSON) still load, checked the same way;
    deep nesting there is refused cleanly, not with a RecursionError."""
    path = tmp_path / "old.pt"
    old = {"dict": [["w", {"tensor": "t0", "requires_grad": True}], ["n", [1, {"float": "nan"}]],
                    [3, {"tuple": ["a", None]}], ["a", {"array": "t1"}]]}
    io.save_checkpoint(path, {"t0": np.ones(2, np.float32), "t1": np.arange(3)},
                       {fmt.KEY_V1: old})
    back = tgx.load(path)
    assert back["w"].requires_grad and back["n"][0] == 1 and np.isnan(back["n"][1])
    assert back[3] == ("a", None) and back["a"].tolist() == [0, 1, 2]
    io.save_checkpoint(path, {}, {fmt.KEY_V1: {"tensor": "t9", "requires_grad": False}})
    _refused(path, "'t9'")
    io.save_checkpoint(path, {}, {fmt.KEY_V1: {"dict": 5}})
    _refused(path, "not a list of [scalar key, value]")
    deep = "[" * 100_000 + "]" * 100_000            # what json itself cannot parse
    text = json.dumps({"format": "tinygradx-checkpoint", "version": 1, "meta": {}})
    text = text.replace('"meta": {}', f'"meta": {{"{fmt.KEY_V1}": {deep}}}')
    with zipfile.ZipFile(path, "w") as z:
        with z.open(io.META_KEY + ".npy", "w") as entry:
            np.lib.format.write_array(entry, np.frombuffer(text.encode(), np.uint8))
    _refused(path, "nested too deeply")


def test_damaged_and_truncated_files(tmp_path):
    path = tmp_path / "x.pt"
    tgx.save({"w": tgx.ones(1000)}, path)
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[:len(data) // 2])
    _refused(tmp_path / "cut.pt", "cut.pt")
    flipped = bytearray(data)
    flipped[200:210] = b"\xff" * 10                  # inside the array's bytes: a CRC error
    (tmp_path / "bad.pt").write_bytes(bytes(flipped))
    _refused(tmp_path / "bad.pt", "bad.pt", "truncated or corrupt")
    (tmp_path / "empty.pt").write_bytes(b"")
    _refused(tmp_path / "empty.pt", "empty")
    (tmp_path / "text.pt").write_bytes(b"hello world")
    _refused(tmp_path / "text.pt", "text.pt", "neither writes")
    _refused(tmp_path / "missing.pt", "missing.pt", "does not exist")
    _refused(tmp_path, "is a directory")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("readme.txt", "hi")
    _refused(tmp_path / "other.zip", "neither a tinygradx checkpoint nor torch.save's")


def test_map_location_forms(tmp_path):
    path = tmp_path / "x.pt"
    tgx.save({"w": tgx.ones(2)}, path)
    seen = []

    def keep(storage, location):
        seen.append((location, storage.size()))
        return storage
    for ml in (None, "cpu", tgx.device("cpu"), {"cuda:0": "cpu"}, {"cpu": "cpu"}, keep,
               lambda s, loc: None, lambda s, loc: s.cpu()):
        assert tgx.load(path, map_location=ml)["w"].tolist() == [1.0, 1.0]
    assert seen == [("cpu", 2)]
    for ml, fragments, error in [
            ("cuda", ["map_location='cuda'", "no GPU"], RuntimeError),
            ({"cpu": "cuda:1"}, ["map_location", "'cuda:1'"], RuntimeError),
            (lambda s, loc: s.cuda(), ["map_location", "CUDA"], RuntimeError),
            (lambda s, loc: 5, ["map_location returned 5"], TypeError),
            ({"cpu": tgx.device("cpu")}, ["map_location's dict"], TypeError),
            (0, ["map_location must be"], TypeError),
            ("gpu", ["map_location='gpu'", "'gpu'"], RuntimeError)]:
        with pytest.raises(error) as e:
            tgx.load(path, map_location=ml)
        assert_clear(e.value, *fragments)
