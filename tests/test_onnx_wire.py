"""Reading ONNX models without their weights (``bcast.onnx.wire``), against onnx's own reading.

The oracle is ``onnx.load`` (or ``ModelProto.FromString``) followed by clearing, through onnx's
API, every tensor payload field whose serialized size (``TensorProto.ByteSize`` of a tensor holding
only that field) is over ``KEEP_BYTES``: never the code under test. ``read_model`` must give exactly
that model, plus a mark on each tensor it stripped. Malformed files must be refused with a
``CheckInputError`` naming the problem, quickly; random mutations of a valid model must give a model
or that error, nothing else.
"""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import assert_linear, mutated, steps

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bcast.check.report import CheckInputError  # noqa: E402
from bcast.onnx import wire  # noqa: E402
from bcast.onnx.reader import validate  # noqa: E402
from bcast.onnx.wire import KEEP_BYTES, read_model, small_array, stripped_payload  # noqa: E402

PAYLOAD = ("float_data", "int32_data", "string_data", "int64_data", "raw_data", "double_data", "uint64_data")
RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------------------------
# the oracle: onnx's reading, big payloads cleared through onnx's API


def _graph_tensors(g: Any) -> Iterator[Any]:
    yield from g.initializer
    for st_ in g.sparse_initializer:
        yield st_.values
        yield st_.indices
    for node in g.node:
        yield from _attr_tensors(node.attribute)


def _attr_tensors(attrs: Any) -> Iterator[Any]:
    for a in attrs:
        if a.HasField("t"):
            yield a.t
        yield from a.tensors
        if a.HasField("sparse_tensor"):
            yield a.sparse_tensor.values
            yield a.sparse_tensor.indices
        for s in a.sparse_tensors:
            yield s.values
            yield s.indices
        if a.HasField("g"):
            yield from _graph_tensors(a.g)
        for g in a.graphs:
            yield from _graph_tensors(g)


def all_tensors(model: Any) -> Iterator[Any]:
    """Every TensorProto of a model, in a fixed order: graphs, bodies, functions, training info."""
    yield from _graph_tensors(model.graph)
    for f in model.functions:
        yield from _attr_tensors(f.attribute_proto)
        for node in f.node:
            yield from _attr_tensors(node.attribute)
    for ti in model.training_info:
        yield from _graph_tensors(ti.initialization)
        yield from _graph_tensors(ti.algorithm)


def _field_size(t: Any, field: str) -> int:
    """The bytes ``field`` of ``t`` takes when serialized (tags and lengths included), per protobuf."""
    probe = TensorProto()
    if field == "raw_data":
        if not t.HasField("raw_data"):
            return 0
        probe.raw_data = t.raw_data
    else:
        getattr(probe, field).extend(getattr(t, field))
    return int(probe.ByteSize())


def oracle(model: Any) -> tuple[Any, list[bool]]:
    """A copy of ``model`` with every payload field of more than KEEP_BYTES cleared, and which tensors were."""
    out = copy.deepcopy(model)
    cleared = []
    for t in all_tensors(out):
        big = [f for f in PAYLOAD if _field_size(t, f) > wire.KEEP_BYTES]
        for f in big:
            t.ClearField(f)
        cleared.append(bool(big))
    return out, cleared


def _marked(t: Any) -> bool:
    """Whether ``t`` carries the reader's mark, read with protobuf's own unknown-field API."""
    from google.protobuf import unknown_fields

    return any(f.field_number == wire.STRIPPED_FIELD for f in unknown_fields.UnknownFieldSet(t))


def assert_reads_as_oracle(data: bytes) -> Any:
    """``read_model(data)`` is onnx's parse of ``data`` with the big payloads cleared, each stripped tensor
    marked and no other; returns what ``read_model`` gave."""
    want, cleared = oracle(onnx.ModelProto.FromString(data))
    got = read_model(data)
    assert [_marked(t) for t in all_tensors(got)] == cleared
    got.DiscardUnknownFields()
    assert got == want
    return got


# ------------------------------------------------------------------------------------------------
# the models


def _vi(name: str, dims: Any = None, elem: int = TensorProto.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, elem, dims)


def _model(nodes: list[Any], inits: Any = (), outputs: Any = ("y",), opset_imports: Any = None) -> Any:
    g = helper.make_graph(nodes, "g", [_vi("x", ["N", 4])], [_vi(o) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=opset_imports or [helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def _identity_chain(names: list[str]) -> list[Any]:
    return [helper.make_node("Identity", [n], [f"o_{n}"]) for n in names] + [helper.make_node("Identity", ["x"], ["y"])]


BIG = 40_000  # elements: over KEEP_BYTES in every encoding but 1-bit ones
SMALL = 7

# numpy dtype -> (TensorProto type, typed field the values go to with raw=False)
DTYPES: list[tuple[Any, int]] = [
    (np.float32, TensorProto.FLOAT),
    (np.float16, TensorProto.FLOAT16),
    (np.float64, TensorProto.DOUBLE),
    (np.int8, TensorProto.INT8),
    (np.uint8, TensorProto.UINT8),
    (np.int16, TensorProto.INT16),
    (np.uint16, TensorProto.UINT16),
    (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64),
    (np.uint32, TensorProto.UINT32),
    (np.uint64, TensorProto.UINT64),
    (np.bool_, TensorProto.BOOL),
    (np.complex64, TensorProto.COMPLEX64),
    (np.complex128, TensorProto.COMPLEX128),
]


def _values(dtype: Any, n: int) -> np.ndarray[Any, Any]:
    if dtype == np.bool_:
        return RNG.integers(0, 2, n).astype(bool)
    if np.issubdtype(dtype, np.complexfloating):
        return (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        return RNG.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def model_initializers() -> Any:
    """Big and small initializers of many dtypes, as raw_data and as typed fields."""
    inits = []
    for dtype, elem in DTYPES:
        for n in (SMALL, BIG):
            arr = _values(dtype, n)
            name = f"{np.dtype(dtype).name}_{n}"
            inits.append(numpy_helper.from_array(arr, name + "_raw"))
            inits.append(helper.make_tensor(name + "_typed", elem, [n], arr.tolist(), raw=False))
    # strings, in string_data
    for n in (SMALL, BIG):
        inits.append(helper.make_tensor(f"str_{n}", TensorProto.STRING, [n], [b"abc%d" % i for i in range(n)]))
    inits.append(numpy_helper.from_array(np.zeros((0, 5), np.float32), "empty"))
    inits.append(numpy_helper.from_array(np.array(3.5, np.float32), "scalar"))
    return _model(_identity_chain([t.name for t in inits]), inits)


def model_constants() -> Any:
    """Constant nodes with big and small tensors, and attributes holding lists of tensors."""
    small = numpy_helper.from_array(np.array([2, -1], np.int64), "")
    big = numpy_helper.from_array(_values(np.float32, BIG), "")
    nodes = [
        helper.make_node("Constant", [], ["c_small"], value=small),
        helper.make_node("Constant", [], ["c_big"], value=big),
        helper.make_node("Constant", [], ["c_floats"], value_floats=[1.0, 2.0]),
        helper.make_node("Custom", ["x"], ["z"], domain="my", tensors=[small, big, big], names=["a", "b"]),
        helper.make_node("Identity", ["x"], ["y"]),
    ]
    return _model(nodes, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my", 1)])


def _body(tag: str, big: bool) -> Any:
    w = numpy_helper.from_array(_values(np.float32, BIG if big else SMALL), f"w_{tag}")
    s = numpy_helper.from_array(np.array([1, 4], np.int64), f"s_{tag}")
    c = numpy_helper.from_array(_values(np.float32, BIG), "")
    nodes = [
        helper.make_node("Constant", [], [f"c_{tag}"], value=c),
        helper.make_node("Reshape", [f"w_{tag}", f"s_{tag}"], [f"r_{tag}"]),
    ]
    return helper.make_graph(nodes, f"body_{tag}", [], [_vi(f"r_{tag}")], [w, s])


def model_bodies() -> Any:
    """If and Loop bodies holding initializers and Constants, big and small, one If inside another."""
    inner = helper.make_node("If", ["cond"], ["r_then"], then_branch=_body("ii", True), else_branch=_body("ie", False))
    then = _body("then", True)
    then.node.append(inner)
    loop_body = _body("loop", True)
    loop_body.input.extend([_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL)])
    nodes = [
        helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=_body("else", False)),
        helper.make_node("Loop", ["", "cond"], ["l"], body=loop_body),
    ]
    return _model(nodes)


def model_functions() -> Any:
    """Model-local functions whose nodes hold big and small constants, and big attribute defaults."""
    big = numpy_helper.from_array(_values(np.float32, BIG), "")
    body = [
        helper.make_node("Constant", [], ["k"], value=big),
        helper.make_node("Constant", [], ["s"], value_ints=[1, 2]),
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array([1, 2], np.int64))),
        helper.make_node("Add", ["a", "k"], ["o"]),
    ]
    f = helper.make_function("dom", "F", ["a"], ["o"], body, [helper.make_opsetid("", 17)], attributes=["alpha"])
    default = helper.make_attribute("beta", big)
    f.attribute_proto.append(default)
    nodes = [helper.make_node("F", ["x"], ["y"], domain="dom")]
    m = _model(nodes, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("dom", 1)])
    m.functions.append(f)
    return m


def model_sparse() -> Any:
    """Sparse initializers (values and indices big and small) and a sparse Constant."""

    def sparse(n: int, name: str) -> Any:
        values = numpy_helper.from_array(_values(np.float32, n), name)
        indices = numpy_helper.from_array(np.arange(n, dtype=np.int64) * 3, "")
        return helper.make_sparse_tensor(values, indices, [n * 3])

    m = _model([helper.make_node("Identity", ["x"], ["y"])])
    m.graph.sparse_initializer.extend([sparse(SMALL, "sp_small"), sparse(BIG, "sp_big")])
    m.graph.node.append(helper.make_node("Constant", [], ["sc"], sparse_value=sparse(BIG, "")))
    return m


def model_training() -> Any:
    """Training info whose initialization graph holds a big initializer."""
    m = _model([helper.make_node("Identity", ["x"], ["y"])])
    ti = m.training_info.add()
    ti.initialization.CopyFrom(_body("init", True))
    ti.algorithm.CopyFrom(_body("algo", False))
    return m


def model_boundary() -> Any:
    """raw_data whose field takes exactly KEEP_BYTES bytes (kept) and one byte more (dropped)."""

    def raw(name: str, size: int) -> Any:
        n = size - 1 - len(wire._varint_bytes(size))  # the tag, the length, the bytes
        assert TensorProto(raw_data=b"\0" * n).ByteSize() == size
        return TensorProto(name=name, data_type=TensorProto.UINT8, dims=[n], raw_data=bytes(n))

    inits = [raw("at", wire.KEEP_BYTES), raw("over", wire.KEEP_BYTES + 1)]
    return _model(_identity_chain(["at", "over"]), inits)


MODELS: dict[str, Callable[[], Any]] = {
    "initializers": model_initializers,
    "constants": model_constants,
    "bodies": model_bodies,
    "functions": model_functions,
    "sparse": model_sparse,
    "training": model_training,
    "boundary": model_boundary,
}
_CACHE: dict[str, bytes] = {}


def model_bytes(kind: str) -> bytes:
    if kind not in _CACHE:
        _CACHE[kind] = MODELS[kind]().SerializeToString()
    return _CACHE[kind]


# ------------------------------------------------------------------------------------------------
# reading valid models


@pytest.mark.parametrize("keep", [None, 0, 16, 1000])
@pytest.mark.parametrize("kind", list(MODELS))
def test_reads_as_onnx_with_big_payloads_cleared(kind: str, keep: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same model as onnx reads, less exactly the payloads over KEEP_BYTES (also with a lowered
    threshold, so that every message is walked, not copied)."""
    if keep is not None:
        monkeypatch.setattr(wire, "KEEP_BYTES", keep)
    data = model_bytes(kind)
    got = assert_reads_as_oracle(data)
    if keep is None:
        assert len(got.SerializeToString()) < len(data)  # something big was dropped in each


def test_the_oracle_clears_something_and_keeps_something() -> None:
    for kind in MODELS:
        _, cleared = oracle(onnx.ModelProto.FromString(model_bytes(kind)))
        assert any(cleared) and not all(cleared), kind


def test_small_tensors_keep_their_values_stripped_ones_their_metadata() -> None:
    original = onnx.ModelProto.FromString(model_bytes("initializers"))
    got = read_model(model_bytes("initializers"))
    for t0, t in zip(original.graph.initializer, got.graph.initializer, strict=True):
        assert (t.name, list(t.dims), t.data_type) == (t0.name, list(t0.dims), t0.data_type)
        n = int(np.prod(t0.dims))
        if n <= 4096:
            want = numpy_helper.to_array(t0)
            value = small_array(t)
            assert value is not None, t.name
            np.testing.assert_array_equal(value, want)
            assert not stripped_payload(t)
        else:
            assert small_array(t) is None
    stripped = [t.name for t in got.graph.initializer if stripped_payload(t)]
    assert "float32_40000_raw" in stripped and "int64_40000_typed" in stripped and "str_40000" in stripped
    assert not any(name.endswith(f"_{SMALL}_raw") or name.endswith(f"_{SMALL}_typed") for name in stripped)


def test_every_numeric_tensor_of_4096_elements_keeps_its_data() -> None:
    """The widest encodings onnx writes: negative int64 varints (ten bytes each), doubles, raw int64."""
    vals = [-(2**62)] * 4096
    inits = [
        helper.make_tensor("i64", TensorProto.INT64, [4096], vals),
        helper.make_tensor("i32", TensorProto.INT32, [4096], [-1] * 4096),
        helper.make_tensor("u64", TensorProto.UINT64, [4096], [2**64 - 1] * 4096),
        helper.make_tensor("f64", TensorProto.DOUBLE, [4096], [0.5] * 4096),
        numpy_helper.from_array(np.full(4096, -7, np.int64), "raw"),
    ]
    got = read_model(_model(_identity_chain([t.name for t in inits]), inits).SerializeToString())
    for t in got.graph.initializer:
        value = small_array(t)
        assert value is not None and value.size == 4096, t.name
        assert small_array(t, limit=4095) is None


def test_external_data_is_never_opened(tmp_path: Path) -> None:
    """Saved with external data, the data file then deleted: the model still reads, tensors EXTERNAL."""
    model = onnx.ModelProto.FromString(model_bytes("initializers"))
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=1024)
    assert (tmp_path / "w.bin").stat().st_size > 100_000
    want, cleared = oracle(onnx.load(str(path), load_external_data=False))
    os.remove(tmp_path / "w.bin")
    got = read_model(path)
    # onnx moves raw_data out, not typed fields: those big ones are still stripped
    assert [_marked(t) for t in all_tensors(got)] == cleared and any(cleared)
    got.DiscardUnknownFields()
    assert got == want
    external = [t for t in got.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    assert len(external) > 10
    for t in external:
        assert {e.key for e in t.external_data} >= {"location", "offset", "length"}
        assert small_array(t) is None
        assert not stripped_payload(t)
    assert validate(read_model(str(path))) == []


def test_bytes_paths_and_model_protos_agree(tmp_path: Path) -> None:
    data = model_bytes("bodies")
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    from_bytes = read_model(data)
    for source in (str(path), path, bytearray(data), memoryview(data)):
        assert read_model(source) == from_bytes, type(source)
    assert read_model(from_bytes) is from_bytes
    # a view of another shape is read as its bytes
    assert read_model(memoryview(np.frombuffer(data, np.uint8).reshape(1, -1))) == from_bytes


def test_a_model_with_nothing_to_strip_is_copied_as_it_is() -> None:
    data = _model([helper.make_node("Identity", ["x"], ["y"])]).SerializeToString()
    assert wire.strip(data) == data
    assert read_model(data) == onnx.ModelProto.FromString(data)


def test_an_overridden_raw_data_is_dropped_and_the_last_one_wins() -> None:
    """raw_data twice in one tensor: protobuf keeps the last; the reader too, whether big or small."""
    big, small = bytes(range(256)) * 400, bytes(range(16))
    for first, last in ((big, small), (small, big), (big, big)):
        t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[len(last)], raw_data=first)
        enc = t.SerializeToString() + TensorProto(raw_data=last).SerializeToString()
        m = _model(_identity_chain(["w"]))
        m.graph.initializer.add().ParseFromString(enc)
        data = m.SerializeToString()
        # onnx's parse keeps `last` (re-serialising writes one raw_data): the reader must agree
        got = read_model(data)
        assert got.graph.initializer[0].raw_data == (last if len(last) < 1000 else b"")
        assert len(wire.strip(data)) < 2 * len(big)


def test_a_stripped_tensor_is_not_missing_data_but_a_wrong_length_still_is(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((300, 100), np.float32), "w")
    good = _model([helper.make_node("Add", ["x", "b"], ["y"]), helper.make_node("Identity", ["w"], ["v"])], [w])
    good.graph.initializer.append(numpy_helper.from_array(np.ones(4, np.float32), "b"))
    assert validate(read_model(good.SerializeToString())) == []
    short = copy.deepcopy(good)
    short.graph.initializer[0].raw_data = bytes(90_000)  # dims need 120,000
    with pytest.raises(CheckInputError, match=r"holds 90,000 bytes of data where its dims .* need 120,000"):
        validate(read_model(short.SerializeToString()))
    none = copy.deepcopy(good)
    none.graph.initializer[0].ClearField("raw_data")  # really no data: still invalid
    with pytest.raises(CheckInputError, match="holds no data for its 30,000 elements"):
        validate(read_model(none.SerializeToString()))
    typed = copy.deepcopy(good)
    typed.graph.initializer[0].CopyFrom(helper.make_tensor("w", TensorProto.FLOAT, [300, 100], [1.0] * 30_000))
    assert validate(read_model(typed.SerializeToString())) == []


def test_the_check_of_a_model_with_big_weights(tmp_path: Path) -> None:
    """Through ``bcast.check.check``: the clash is found, the weights never needed."""
    from bcast.check import check

    w = numpy_helper.from_array(np.ones((512, 300), np.float32), "w")
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [w])
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    report = check(str(path))
    assert any(p.kind == "cannot-broadcast" for p in report.problems), report.problems


def test_a_hundred_thousand_nodes_read_in_linear_time() -> None:
    def build(n: int) -> bytes:
        nodes = [helper.make_node("Add", ["x" if i == 0 else f"t{i - 1}", "x"], [f"t{i}"]) for i in range(n)]
        w = numpy_helper.from_array(np.ones(100_000, np.float32), "w")
        return _model(nodes, [w], outputs=[f"t{n - 1}"]).SerializeToString()

    wire.strip(build(100_000))  # a hundred thousand nodes are read
    # the work at 1,000, 2,000 and 4,000 nodes: linear in the nodes, never in the weights' bytes
    assert_linear(lambda n: functools.partial(wire.strip, build(n)), 1000, what="wire.strip")


def test_importing_the_module_needs_no_onnx() -> None:
    code = "import sys; sys.modules['onnx'] = None; import bcast.onnx.wire as w; print(w.KEEP_BYTES)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == str(KEEP_BYTES), out.stderr


def test_a_source_of_another_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="read_model: the model is a path"):
        read_model(12)


# ------------------------------------------------------------------------------------------------
# malformed input


def _key(field: int, wire_type: int) -> bytes:
    return wire._varint_bytes(field << 3 | wire_type)


def _ld(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + wire._varint_bytes(len(payload)) + payload


def _big_graph(node_bytes: bytes = b"") -> bytes:
    """A GraphProto (as a ModelProto's field 7) big enough to be walked, with ``node_bytes`` appended."""
    w = numpy_helper.from_array(np.ones(50_000, np.float32), "w").SerializeToString()
    return _ld(1, _ld(1, b"x") + _ld(2, b"y")) + _ld(5, w) + node_bytes


def _nested(depth: int) -> bytes:
    """``depth`` If bodies inside each other, the innermost holding a big initializer: every level walked."""
    g = _big_graph()
    for _ in range(depth):
        attr = _ld(1, b"then_branch") + _ld(6, g) + _key(20, 0) + b"\x05"
        g = _ld(1, _ld(5, attr) + _ld(4, b"If"))
    return _key(1, 0) + b"\x09" + _ld(7, g)


VALID = _model([helper.make_node("Identity", ["x"], ["y"])]).SerializeToString()

MALFORMED: list[tuple[str, bytes, list[str]]] = [
    ("truncated", VALID[: len(VALID) // 2], ["not a readable ONNX model", "truncated"]),
    ("truncated-big", model_bytes("bodies")[:-3000], ["truncated"]),
    ("garbage", RNG.integers(0, 256, 100_000, dtype=np.uint8).tobytes(), ["ONNX model"]),
    ("text", b"this is a README, not a model\n" * 50, ["ONNX model"]),
    ("varint-overrun", _key(1, 0) + b"\xff" * 11, ["a malformed number at byte 1"]),
    ("varint-past-the-end", _key(1, 0) + b"\xff\xff", ["truncated", "a number at byte 1"]),
    ("tag-past-the-end", b"\x80", ["truncated", "a number at byte 0"]),
    ("length-past-the-end", _key(7, 2) + b"\x10abc", ["truncated", "field 7 at byte 0 runs to byte 18"]),
    ("length-overflow", _key(7, 2) + b"\xff" * 9 + b"\x01", ["truncated", "field 7"]),
    ("group", _key(7, 3), ["group", "wire type 3"]),
    ("end-group", _key(7, 4), ["group", "wire type 4"]),
    ("wire-type-6", _key(7, 6), ["byte 0 is not a protobuf field"]),
    ("field-0", b"\x00\x00", ["byte 0 is not a protobuf field"]),
    ("graph-as-a-number", _key(7, 0) + b"\x01", ["not an ONNX model", "field 7", "wire type 0"]),
    ("zeros-after-a-model", VALID + bytes(1000), [f"byte {len(VALID):,} is not a protobuf field"]),
    ("a-tensor-not-a-model", numpy_helper.from_array(np.ones(3, np.float32)).SerializeToString(), ["ONNX model"]),
    ("no-graph", _key(1, 0) + b"\x08", ["not an ONNX model", "no graph"]),
    (
        "nested-length-past-its-message",
        _ld(7, _big_graph(_key(1, 2) + b"\x7f" + b"\0" * 10)),
        ["field 1 of a GraphProto", "past the end of the message holding it"],
    ),
    ("nested-group", _ld(7, _big_graph(_key(3, 3))), ["group"]),
    ("node-as-a-number", _ld(7, _big_graph(_key(1, 0) + b"\x01")), ["field 1", "wire type 0", "GraphProto"]),
    ("nested-far-too-deep", _nested(1000), ["nested more than 100 deep"]),
    ("nested-one-too-deep", _nested(33), ["nested more than 100 deep"]),
]


@pytest.mark.parametrize(("kind", "data", "words"), MALFORMED, ids=[k for k, _, _ in MALFORMED])
def test_malformed_input_is_refused_naming_the_problem(kind: str, data: bytes, words: list[str]) -> None:
    with pytest.raises(CheckInputError) as info:
        read_model(data)
    assert steps(lambda: read_model(data), (CheckInputError,)) < 200_000  # refused at once, whatever it holds
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.startswith("<bytes>: ")
    for w in words:
        assert w in message, message
    assert "\n" not in message and len(message) < 2000


#: a file's top-level fields are scanned before it is mapped, in the words ``bcast check`` has always used
#: for them (the same faults as in bytes: only these words differ)
SCAN_WORDS: dict[str, list[str]] = {
    "truncated": ["not a readable ONNX model: truncated (field 7 runs to byte"],
    "varint-overrun": ["a malformed number at byte 0"],
    "varint-past-the-end": ["a malformed number at byte 0"],
    "tag-past-the-end": ["byte 0 is not a protobuf field"],
    "length-past-the-end": ["truncated (field 7 runs to byte 18, past the end of the file at 5)"],
    "length-overflow": ["truncated (field 7 runs to byte"],
    "group": ["byte 0 is not a protobuf field"],
    "end-group": ["byte 0 is not a protobuf field"],
}


@pytest.mark.parametrize(("kind", "data", "words"), MALFORMED, ids=[k for k, _, _ in MALFORMED])
def test_a_malformed_file_is_refused_as_its_bytes_are(
    kind: str, data: bytes, words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan and the walk are one walker: a file is refused for the fault its bytes are refused for; one
    refused by the scan of its top-level fields is never mapped."""
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    if kind in SCAN_WORDS:

        def no_map(*_: object, **__: object) -> None:
            raise AssertionError("a file the scan refuses is mapped")

        monkeypatch.setattr(wire.mmap, "mmap", no_map)
    with pytest.raises(CheckInputError) as info:
        read_model(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for w in SCAN_WORDS.get(kind, words):
        assert w in message, message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=40).map(lambda b: VALID[: len(VALID) // 2] + b) | st.binary(max_size=60))
def test_a_file_reads_or_is_refused_as_its_bytes(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    outcomes = []
    for source in (path, data):
        try:
            outcomes.append(read_model(source))
        except CheckInputError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]


def test_nesting_up_to_protobufs_limit_reads() -> None:
    """32 bodies deep, the innermost initializer is 98 messages down: protobuf parses it, so must the reader
    (33 is refused by both: see above)."""
    data = _nested(32)
    onnx.ModelProto.FromString(data)
    with pytest.raises(Exception, match="MaxDepth"):
        onnx.ModelProto.FromString(_nested(33))
    got = read_model(data)
    depth, g = 0, got.graph
    while g.node[0].attribute:
        g, depth = g.node[0].attribute[0].g, depth + 1
    assert depth == 32 and list(g.initializer[0].dims) == [50_000] and not g.initializer[0].raw_data


def test_malformed_files_name_the_path(tmp_path: Path) -> None:
    path = tmp_path / "m\x1b[2J.onnx"
    path.write_bytes(VALID[: len(VALID) // 2])
    with pytest.raises(CheckInputError, match=r"m\\x1b\[2J\.onnx: not a readable ONNX model.*truncated"):
        read_model(str(path))
    empty = tmp_path / "e.onnx"
    empty.write_bytes(b"")
    with pytest.raises(CheckInputError, match="an empty file"):
        read_model(empty)
    with pytest.raises(CheckInputError, match="is a directory"):
        read_model(tmp_path)
    with pytest.raises(CheckInputError, match="no such file"):
        read_model(tmp_path / "missing.onnx")


def test_the_map_is_closed_after_an_error(tmp_path: Path) -> None:
    """A refusal leaves no view of the mapped file behind: read twice, the file then replaced."""
    path = tmp_path / "m.onnx"
    path.write_bytes(_ld(7, _big_graph(_key(3, 3))))
    for _ in range(2):
        with pytest.raises(CheckInputError, match="group"):
            read_model(path)
    path.write_bytes(model_bytes("constants"))
    assert_reads_as_oracle(path.read_bytes())


# ------------------------------------------------------------------------------------------------
# random mutations: a model or a CheckInputError, nothing else


def _fuzz_model() -> bytes:
    """A small model with a bit of everything; walked everywhere once KEEP_BYTES is lowered to 8."""
    small = numpy_helper.from_array(np.arange(6, dtype=np.float32), "w")
    shape = numpy_helper.from_array(np.array([2, 3], np.int64), "s")
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=shape)], "b", [], [_vi("c", [2], TensorProto.INT64)], [small]
    )
    nodes = [
        helper.make_node("Reshape", ["w", "s"], ["r"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body),
    ]
    m = _model(nodes, [small, shape, helper.make_tensor("t", TensorProto.INT64, [3], [1, -2, 3])])
    return m.SerializeToString()


FUZZ = _fuzz_model()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated(st.just(FUZZ)), keep=st.sampled_from([8, 64, KEEP_BYTES]))
def test_mutated_models_read_or_are_refused(data: bytes, keep: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "KEEP_BYTES", keep)
    try:
        model = read_model(data)
    except CheckInputError as e:
        refusal = str(e)
    else:
        refusal = ""
    if refusal:
        assert refusal.startswith("<bytes>: ") and "\n" not in refusal
        return
    assert type(model).__name__ == "ModelProto" and model.HasField("graph")
    # what reads is what onnx reads, less the payloads (onnx may be laxer: then it reads too)
    try:
        original = onnx.ModelProto.FromString(data)
    except Exception:  # a payload the reader dropped unparsed was corrupt: onnx refuses, the reader need not
        return
    want, _ = oracle(original)
    # a mutation may leave unknown fields: compared apart from them (and from the reader's marks)
    want.DiscardUnknownFields()
    model.DiscardUnknownFields()
    assert model == want


# -- the reader's quick check of a plain tensor against its full one ------------------------------------------------


@st.composite
def _decoded_tensor(draw: st.DrawFn) -> Any:
    """A decoded TensorProto of the kinds a graph's constants are, and of their near misses: dims that are negative or
    too many, raw_data a byte short or long, a type with no raw encoding or none known, stored outside the file,
    raw_data beside typed data or left out."""
    from bcast.onnx import proto

    t = proto.TensorProto()
    dims = draw(st.lists(st.integers(-1, 4), max_size=draw(st.sampled_from([3, 3, 3, 34]))))
    fields: dict[str, Any] = {"dims": dims}
    data_type = draw(st.sampled_from([1, 6, 7, 11, 10, 9, 8, 0, 40]))
    fields["data_type"] = data_type
    count = 1
    for d in dims:
        count *= max(d, 0)
    bits = {1: 32, 6: 32, 7: 64, 11: 64, 10: 16, 9: 8}.get(data_type, 8)
    if draw(st.booleans()) or data_type in (8, 0, 40):
        fields["raw_data"] = bytes(max((count * bits + 7) // 8 + draw(st.sampled_from([0, 0, 0, -1, 1])), 0))
    if draw(st.integers(0, 9)) == 0:
        fields["data_location"] = draw(st.sampled_from([0, 1]))
    if draw(st.integers(0, 9)) == 0:
        fields["int64_data"] = [1] * count
    t.__dict__.update(fields)
    return t


@settings(max_examples=400, deadline=None)
@given(t=_decoded_tensor())
def test_a_tensor_the_quick_check_passes_passes_the_full_one(t: Any) -> None:
    """What the reader takes for a plain tensor without the full check is one the full check passes, and the quick
    check takes the commonest tensors (raw data of its dims' bytes)."""
    from bcast.onnx import reader

    quick = reader._plain_raw(t)
    try:
        reader._check_tensor(t, "the tensor")
        passes = True
    except CheckInputError:
        passes = False
    assert passes or not quick
    plain = (
        "raw_data" in t.__dict__
        and t.data_type in (1, 6, 7, 11, 10, 9)
        and t.__dict__.get("data_location", 0) != 1
        and len(t.dims) <= 32
        and all(d >= 0 for d in t.dims)
    )
    assert quick == (plain and passes)
