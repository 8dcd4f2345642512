"""The compiled field loop of the ONNX decoder (``bcast.onnx._wire``, csrc/wire.c) against the Python one.

``bcast.onnx.proto._merge`` is the reference: on every input the compiled loop must build the same
objects (every ``__dict__``, in the same order, each ``NodeProto``'s ``_span`` included) or raise a
``ProtoError`` with the same message (the same text and byte offsets).

* Every ONNX model of the repository decodes to the same objects both ways.
* Random messages of the decoder's schema (wrong wire types, packed and unpacked numbers, long and
  overlong varints, unknown fields and groups, stripped-tensor marks, oneofs given twice, strings
  that are not UTF-8), then mutated (bytes set, inserted, deleted, the end cut), give the same
  outcome both ways; so do mutations of small real models.
* The hostile bytes of ``tests/test_numpy_only.py`` are refused with the same message both ways, and
  nesting is read up to :data:`~bcast.onnx.proto.MAX_DEPTH` and refused one deeper, both ways.
* A failed decoding keeps no reference: neither to the bytes nor to the objects made.

Without the compiled module (``BCAST_PURE_PYTHON=1`` at install, or no compiler) these tests skip.
"""

from __future__ import annotations

import contextlib
import gc
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcast.check import sample_model_path
from bcast.files import graph_structure
from bcast.onnx import proto, reader, wire
from hostile import mutated, python_calls
from test_numpy_only import FUZZ, HOSTILE, _chain, _deep_bodies, _deep_type, _key, _ld, _num, _varint

ROOT = Path(__file__).resolve().parents[1]
MODELS = [Path(sample_model_path()), *sorted((ROOT / "tests" / "data").rglob("*.onnx"))]
NOT_BUILT = "the native decoder is not built (BCAST_PURE_PYTHON or no compiler)"


@pytest.fixture
def native() -> Any:
    """The compiled module; the test skips where it was not built."""
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    return proto._wire


def _tree(x: Any, data: bytes) -> Any:
    """``x`` as plain nested values, to compare: each message's ``__dict__`` in its order, floats by their
    bits (NaN and -0.0 included), the decoded bytes themselves (held by each ``_span``) by name."""
    if x is data:
        return "<the bytes decoded>"
    if isinstance(x, proto._Message):
        return (type(x).__qualname__, [(k, _tree(v, data)) for k, v in x.__dict__.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_tree(v, data) for v in x])
    if isinstance(x, dict):
        return ("dict", [(k, _tree(v, data)) for k, v in x.items()])
    if isinstance(x, float):
        return ("float", struct.pack("<d", x))
    return (type(x).__name__, x)


def _decode(data: bytes, compiled: bool) -> Any:
    """What ``decode_model(data)`` gives, with the compiled loop or the Python one: the objects as
    :func:`_tree`, or the ``ProtoError``'s message."""
    saved = proto._wire
    proto._wire = saved if compiled else None
    try:
        return _tree(proto.decode_model(data), data)
    except proto.ProtoError as e:
        return ("ProtoError", str(e))
    finally:
        proto._wire = saved


def _same_both_ways(data: bytes) -> Any:
    got, want = _decode(data, True), _decode(data, False)
    assert got == want
    return got


def _python_calls(fn: Callable[[], object], name: str) -> int:
    """How many times fn() calls a Python function of ``proto`` called ``name``."""
    return python_calls(fn, name, proto.__file__)


# ------------------------------------------------------------------------------------------------
# the compiled loop is there, and used


def test_the_compiled_loop_decodes_without_the_python_one(native: Any) -> None:
    data = _chain(50)
    assert _python_calls(lambda: proto.decode_model(data), "_merge") == 0
    saved = proto._wire
    proto._wire = None
    try:  # the count sees the Python loop where it runs: one call per message
        assert _python_calls(lambda: proto.decode_model(data), "_merge") > 50
    finally:
        proto._wire = saved


def test_the_compiled_module_is_loaded_where_it_was_built() -> None:
    built = list(Path(proto.__file__).parent.glob("_wire.*"))
    if not built:
        pytest.skip(NOT_BUILT)
    if os.environ.get("BCAST_PURE_PYTHON", "").strip() not in ("", "0"):
        assert proto._wire is None
    else:
        assert proto._wire is not None, built


def test_bcast_pure_python_decodes_in_python() -> None:
    code = (
        "from bcast.onnx import proto\n"
        "m = proto.decode_model(bytes.fromhex('0809')  + b'\\x3a\\x0d\\x0a\\x0b\\x0a\\x01x\\x12\\x01y\\x22\\x03Abs')\n"
        "print(proto._wire is None, m.graph.node[0].op_type)\n"
    )
    env = {**os.environ, "BCAST_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "Abs"]


def test_the_compiled_loop_refuses_what_it_cannot_read(native: Any) -> None:
    model = proto.ModelProto()
    with pytest.raises(TypeError, match="bytes"):
        native.merge(model, bytearray(b"\x08\x01"), 0, 2, 0, proto._NATIVE_CONTEXT)
    with pytest.raises(ValueError, match="within data"):
        native.merge(model, b"\x08\x01", 0, 3, 0, proto._NATIVE_CONTEXT)
    with pytest.raises(ValueError, match="within data"):
        native.merge(model, b"\x08\x01", -1, 2, 0, proto._NATIVE_CONTEXT)
    with pytest.raises(TypeError, match="a 6-tuple"):
        native.merge(model, b"\x08\x01", 0, 2, 0, proto._NATIVE_CONTEXT[:5])
    kinds = proto._NATIVE_CONTEXT[5][::-1]
    with pytest.raises(ValueError, match="kinds"):
        native.merge(model, b"\x08\x01", 0, 2, 0, (*proto._NATIVE_CONTEXT[:5], kinds))
    assert not model.__dict__


def test_other_buffers_decode_in_python(native: Any) -> None:
    """The compiled loop reads bytes only: a bytearray decodes in Python, to the same fields."""
    data = _chain(3)
    got = proto.decode_model(bytearray(data))
    assert isinstance(got.graph.node[0].__dict__["_span"][0], bytearray)
    assert [n.op_type for n in got.graph.node] == ["Abs"] * 3
    assert got.graph.node[2].SerializeToString() == proto.decode_model(data).graph.node[2].SerializeToString()


# ------------------------------------------------------------------------------------------------
# the same objects


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.name, marks=() if k % 2 == 0 else pytest.mark.full) for k, p in enumerate(MODELS)]
)  # every other model in every run, all of them with the full suite
def test_every_model_decodes_to_the_same_objects(path: Path, native: Any) -> None:
    data, _ = wire._strip_file(str(path), False)
    tree = _same_both_ways(data)
    assert tree[0] == "ModelProto" and any(k == "graph" for k, _ in tree[1]), tree[:1]


def test_a_stripped_weight_keeps_its_mark_both_ways(native: Any) -> None:
    weight = _ld(8, b"w") + _num(2, 1) + _num(1, 50_000) + _ld(9, bytes(200_000))
    node = _ld(1, b"x") + _ld(2, b"y") + _ld(4, b"Abs")
    data, _ = wire._strip_bytes(_num(1, 9) + _ld(7, _ld(5, weight) + _ld(1, node)), "m")
    tree = _same_both_ways(data)
    tensor = proto.decode_model(data).graph.initializer[0]
    assert tensor.stripped() == {9: 200_000} and "_stripped" in repr(tree)


def test_oneofs_given_twice_keep_the_last_member_in_order(native: Any) -> None:
    dim = _ld(1, _num(1, 3) + _ld(2, b"N") + _ld(3, b"d") + _num(1, 5))  # value, then param, then value again
    tensor_type = _ld(1, _num(1, 1) + _ld(2, dim))
    type_proto = tensor_type + _ld(4, b"") + tensor_type  # tensor, sequence, tensor
    data = _num(1, 9) + _ld(7, _ld(11, _ld(1, b"x") + _ld(2, type_proto)))
    tree = _same_both_ways(data)
    t = proto.decode_model(data).graph.input[0].type
    assert t.WhichOneof("value") == "tensor_type" and not t.HasField("sequence_type")
    d = t.tensor_type.shape.dim[0]
    assert (d.WhichOneof("value"), d.dim_value, d.HasField("dim_param")) == ("dim_value", 5, False)
    assert "sequence_type" not in repr(tree)


def test_numbers_read_as_their_types_both_ways(native: Any) -> None:
    minus_one = _varint(-1)
    dims = _key(1, 0) + minus_one + _ld(1, _varint(7) + minus_one + _varint(1 << 40))  # unpacked, then packed
    floats = _key(4, 5) + struct.pack("<f", 1.5) + _ld(4, struct.pack("<2f", float("nan"), -0.0))
    doubles = _key(10, 1) + struct.pack("<d", 2.5) + _ld(10, struct.pack("<d", float("inf")))
    tensor = dims + _key(2, 0) + _varint((1 << 40) | 3) + floats + doubles + _ld(11, b"") + _key(11, 0) + minus_one
    data = _num(1, 9) + _ld(7, _ld(5, tensor))
    _same_both_ways(data)
    t = proto.decode_model(data).graph.initializer[0]
    assert list(t.dims) == [-1, 7, -1, 1 << 40] and t.data_type == 3
    assert t.float_data[0] == 1.5 and t.float_data[1] != t.float_data[1] and str(t.float_data[2]) == "-0.0"
    assert list(t.double_data) == [2.5, float("inf")] and list(t.uint64_data) == [(1 << 64) - 1]


# ------------------------------------------------------------------------------------------------
# the same errors


@pytest.mark.parametrize(("kind", "data", "words"), HOSTILE, ids=[k for k, _, _ in HOSTILE])
def test_hostile_bytes_are_refused_the_same_both_ways(kind: str, data: bytes, words: list[str], native: Any) -> None:
    outcome = _same_both_ways(data)
    assert outcome[0] == "ProtoError", kind
    for w in words:
        assert w in outcome[1], outcome


def _faults(native: Any, data: bytes, cls: type[proto._Message], depth: int) -> Iterator[Any]:
    """The outcome of merging ``data`` into a new ``cls`` at ``depth``, the Python way and the compiled way."""
    for merge in (proto._merge, lambda *a: native.merge(*a, proto._NATIVE_CONTEXT)):
        obj = cls()
        try:
            merge(obj, data, 0, len(data), depth)
            yield _tree(obj, data)
        except proto._FaultError as e:
            yield ("fault", e.text, e.offsets)


_A = proto.AttributeProto
#: (class, bytes, what the outcome holds): each fault the compiled loop raises itself, and its neighbours
FAULTS: list[tuple[type[proto._Message], bytes, str]] = [
    (proto.OperatorSetIdProto, _key(2, 0) + b"\xff" * 10 + b"\x01", "a malformed number at byte"),
    (proto.OperatorSetIdProto, _key(2, 0) + b"\xff" * 9 + b"\x01", "OperatorSetIdProto"),  # ten bytes: read
    (proto.OperatorSetIdProto, _key(2, 0) + b"\xff" * 10, "runs past the end"),
    (proto.OperatorSetIdProto, _key(2, 0) + b"\xff", "a number at byte"),
    (proto.OperatorSetIdProto, _key(2, 0), "a number at byte"),
    (proto.OperatorSetIdProto, b"\xff", "a number at byte"),
    (proto.OperatorSetIdProto, b"\x80" * 10 + b"\x01", "a malformed number at byte"),
    (proto.OperatorSetIdProto, b"\x90\x00\x01", "OperatorSetIdProto"),  # an overlong key: field 2
    (proto.OperatorSetIdProto, b"\x00", "byte {} is not a protobuf field"),
    (proto.OperatorSetIdProto, _key(2, 6), "byte {} is not a protobuf field"),
    (proto.OperatorSetIdProto, _num(3, 1) + _key(2, 7) + b"\x01", "byte {} is not a protobuf field"),
    (proto.OperatorSetIdProto, _varint((1 << 61) - 1 << 3) + b"\x05" + _num(2, 3), "OperatorSetIdProto"),
    (proto.OperatorSetIdProto, _key(1, 2) + b"\x05ab", "field 1 of a OperatorSetIdProto at byte"),
    (proto.OperatorSetIdProto, _key(1, 2) + _varint((1 << 64) - 1), "field 1 of a OperatorSetIdProto at byte"),
    (proto.OperatorSetIdProto, _key(1, 2) + b"\x80", "a number at byte"),
    (proto.OperatorSetIdProto, _key(1, 2), "a number at byte"),
    (proto.OperatorSetIdProto, _ld(1, b"\xc3\x28") + _ld(1, b"\xed\xa0\x80"), "OperatorSetIdProto"),  # not UTF-8
    (proto.TensorProto, _key(4, 5) + b"ab", "field 4 of a TensorProto at byte"),
    (proto.TensorProto, _key(10, 1) + b"abcdefg", "field 10 of a TensorProto at byte"),
    (proto.TensorProto, _key(4, 5) + b"abcd" + _key(10, 1) + b"abcdefgh", "TensorProto"),
    (proto.TensorProto, _ld(4, b"abcdef"), "not a whole number of 4-byte values"),
    (proto.TensorProto, _ld(7, b"\x01\xff"), "a number at byte"),  # packed, cut short
    (proto.TensorProto, _ld(3, _key(1, 0) + b"\xff"), "a number at byte"),  # inside a message
    (proto.TensorProto, _ld(3, _ld(2, b"x")) + _num(14, 2), "TensorProto"),  # wrong wire type, unknown enum
    (_A, _num(20, 99) + _num(20, 3) + _num(20, 2**40 + 3) + _num(20, 2**64 - 1), "AttributeProto"),
    (_A, _key(6, 2) + b"\x02" + _key(1, 2) + b"\x05", "field 1 of a GraphProto at byte"),
    (proto.TensorShapeProto, _ld(1, _num(1, 2) + _ld(2, b"N")) + _ld(1, _ld(2, b"M") + _num(1, 3)), "Dimension"),
]


@pytest.mark.parametrize(("cls", "data", "holds"), FAULTS, ids=[f"{c.__name__}-{d.hex()[:24]}" for c, d, _ in FAULTS])
def test_faults_of_the_compiled_loop_are_the_pythons(
    cls: type[proto._Message], data: bytes, holds: str, native: Any
) -> None:
    got, want = _faults(native, data, cls, 0)
    assert got == want
    assert holds in repr(got)


def test_nesting_up_to_max_depth_is_read_and_one_deeper_refused_both_ways(native: Any) -> None:
    tree = _same_both_ways(_deep_bodies(32))
    assert tree[0] == "ModelProto"
    refused = _same_both_ways(_deep_bodies(33))
    assert refused[0] == "ProtoError" and f"nested more than {proto.MAX_DEPTH} deep" in refused[1]
    entry = _ld(1, b"k") + _ld(2, b"v")
    at_the_cap, over = (list(_faults(native, entry, proto.StringStringEntryProto, d)) for d in (proto.MAX_DEPTH, 101))
    assert at_the_cap[0] == at_the_cap[1] and at_the_cap[0][0] == "StringStringEntryProto"
    assert over[0] == over[1] == ("fault", f"messages nested more than {proto.MAX_DEPTH} deep at byte {{}}", (0,))
    # a message field's own message one level down, at the cap
    nested = _ld(4, _ld(1, _deep_type(0)))
    for depth in (proto.MAX_DEPTH - 3, proto.MAX_DEPTH - 2, proto.MAX_DEPTH - 1):
        got, want = _faults(native, nested, proto.TypeProto, depth)
        assert got == want, depth
    assert got[0] == "fault" and got[2] == (4,)


@pytest.mark.parametrize("groups", [1, 2, 3])
def test_groups_nested_at_the_cap_are_refused_the_same_both_ways(groups: int, native: Any) -> None:
    body = _num(1, 1)
    for k in range(groups):
        body = _key(30 + k, 3) + body + _key(30 + k, 4)
    outcomes = set()
    for depth in range(proto.MAX_DEPTH - 3, proto.MAX_DEPTH + 1):
        got, want = _faults(native, body + _ld(1, b"k"), proto.StringStringEntryProto, depth)
        assert got == want, depth
        outcomes.add(got[0])
    assert outcomes == {"StringStringEntryProto", "fault"}


def test_a_failed_decoding_keeps_no_reference(native: Any) -> None:
    """Forty nodes read, each holding the bytes, then a fault: in the compiled loop (a key cut short), in an
    unknown field's Python skipping (a number cut short), or deeper down (a length past the end)."""
    good = _chain(40)
    bad = [good + b"\xff", good + _key(30, 0) + b"\xff", good + _ld(7, _ld(1, _key(3, 2) + b"\x40abc"))]

    def attempt() -> None:
        for data in bad:
            with pytest.raises(proto.ProtoError, match="past the end"):
                proto.decode_model(data)
        proto.decode_model(good)

    attempt()
    gc.collect()
    refs, objects = [sys.getrefcount(d) for d in (good, *bad)], len(gc.get_objects())
    for _ in range(30):
        attempt()
    gc.collect()
    assert [sys.getrefcount(d) for d in (good, *bad)] == refs
    assert len(gc.get_objects()) - objects < 30  # a leak of the objects made would be thousands


# ------------------------------------------------------------------------------------------------
# random messages, and mutations of them


def _overlong(value: int, extra: int) -> bytes:
    """``value``'s varint with ``extra`` more continuation bytes (at most ten bytes in all stay readable)."""
    v = bytearray(_varint(value))
    if extra:
        v[-1] |= 0x80
        v += b"\x80" * (extra - 1) + b"\x00"
    return bytes(v)


_NUMBERS = st.one_of(
    st.integers(0, 200), st.integers(-(2**63), 2**64 - 1), st.sampled_from([0x7F, 0x80, 2**31, 2**32 - 1, -1])
)


@st.composite
def _value(draw: st.DrawFn, wire_type: int, kind: int, sub: Any, depth: int, number: int) -> bytes:
    if wire_type == 0:
        return _overlong(draw(_NUMBERS), draw(st.sampled_from([0, 0, 0, 1, 3, 9, 10])))
    if wire_type == 1:
        return draw(st.binary(min_size=8, max_size=8))
    if wire_type == 5:
        return draw(st.binary(min_size=4, max_size=4))
    if wire_type == 3:
        inner = b"".join(draw(st.lists(_field(proto._Message, depth + 1), max_size=3)))
        return inner + _key(number, 4)
    # length-delimited
    if kind == proto._MESSAGE and depth < 6:
        payload = draw(_message(sub, depth + 1))
    elif kind in (proto._FLOAT, proto._DOUBLE):
        payload = draw(st.binary(max_size=20))  # packed: a whole number of values or not
    elif kind in proto._DELIMITED:
        payload = draw(st.one_of(st.text(max_size=6).map(str.encode), st.binary(max_size=6)))
    else:
        payload = b"".join(_overlong(v, 0) for v in draw(st.lists(_NUMBERS, max_size=4)))
    return _varint(len(payload)) + payload


@st.composite
def _field(draw: st.DrawFn, cls: type[proto._Message], depth: int) -> bytes:
    """One field of a ``cls``: mostly a known one of its own wire type, else of another wire type, packed, an
    unknown one, a group or a stripped tensor's mark."""
    known = sorted(cls._FIELDS)
    number = draw(st.sampled_from(known) if known and draw(st.integers(0, 5)) else st.integers(1, 40))
    spec = cls._FIELDS.get(number)
    kind, sub = (spec[1], spec[2]) if spec else (proto._BYTES, None)
    if cls is proto.TensorProto and not draw(st.integers(0, 15)):
        return _key(proto.STRIPPED_FIELD, 0) + _varint(draw(st.integers(0, 1 << 40)))
    right = proto._WIRE[kind]
    wire_type = draw(st.sampled_from([right, right, right, 2, 0, 1, 5, 3] if depth < 6 else [right, 2, 0]))
    if kind == proto._ENUM and wire_type == 0:
        return _key(number, 0) + _varint(draw(st.integers(0, 20)))
    return _key(number, wire_type) + draw(_value(wire_type, kind, sub, depth, number))


@st.composite
def _message(draw: st.DrawFn, cls: type[proto._Message], depth: int = 0) -> bytes:
    return b"".join(draw(st.lists(_field(cls, depth), max_size=6 if depth < 3 else 2)))


def _small_models() -> list[bytes]:
    small = [p for p in MODELS if p.name.startswith("sk_scaler_logreg") or p == Path(sample_model_path())]
    return [FUZZ, *(wire._strip_file(str(p), False)[0] for p in small)]


_RANDOM = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _classes() -> list[type[proto._Message]]:
    """Every message class the decoder knows, from ModelProto down."""
    seen: list[type[proto._Message]] = [proto.ModelProto]
    for cls in seen:
        for spec in cls._FIELDS.values():
            if spec[1] == proto._MESSAGE and spec[2] not in seen:
                seen.append(spec[2])
    return seen


CLASSES = _classes()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(_message(proto.ModelProto), 0, 3))
def test_random_models_decode_the_same_both_ways(data: bytes) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    _same_both_ways(data)


@pytest.mark.full  # five times as many models: every run draws 100
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated(_message(proto.ModelProto), 0, 3))
def test_many_random_models_decode_the_same_both_ways(data: bytes) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    _same_both_ways(data)


_EVERY_CLASS = st.sampled_from(CLASSES).flatmap(lambda c: st.tuples(st.just(c), mutated(_message(c), 0, 3)))


def _merge_the_same_both_ways(cls_data: tuple[Any, bytes]) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    cls, data = cls_data
    got, want = _faults(proto._wire, data, cls, 0)
    assert got == want


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cls_data=_EVERY_CLASS)
def test_random_messages_of_every_class_merge_the_same_both_ways(cls_data: tuple[Any, bytes]) -> None:
    _merge_the_same_both_ways(cls_data)


@pytest.mark.full  # fifteen times as many messages: every run draws 100
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cls_data=_EVERY_CLASS)
def test_many_random_messages_of_every_class_merge_the_same_both_ways(cls_data: tuple[Any, bytes]) -> None:
    _merge_the_same_both_ways(cls_data)


@_RANDOM
@given(data=mutated(st.sampled_from(_small_models()), 0, 3))
def test_mutated_models_decode_the_same_both_ways(data: bytes) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    _same_both_ways(data)


@_RANDOM
@given(data=st.binary(max_size=64))
def test_random_bytes_decode_the_same_both_ways(data: bytes) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    _same_both_ways(data)


def test_a_decoded_model_given_to_check_is_not_changed(tmp_path: Path) -> None:
    """A model read from a file or bytes lets go of its decoded nodes as they are converted (it is the read's own);
    a decoded model handed to ``check`` is the caller's, and keeps every node."""
    from bcast.check import check, sample_model_path

    data = Path(sample_model_path()).read_bytes()
    model = proto.decode_model(data)
    before = len(model.graph.node)
    report = check(model)
    assert [n for n in model.graph.node if n is None] == [] and len(model.graph.node) == before
    assert report.to_dict()["problems"] == check(data).to_dict()["problems"] != []


def test_the_compiled_loops_work_is_linear_in_the_nodes_and_stops_at_a_fault(native: Any) -> None:
    """The compiled loop counts the fields it reads (it takes no Python steps to count): twice the nodes, twice
    the fields, as many as the Python loop's messages hold; a fault in the first bytes stops it at once, however
    long the bytes after it."""

    def fields(data: bytes) -> int:
        before = native.fields_read()
        with contextlib.suppress(proto.ProtoError):
            proto.decode_model(data)
        return int(native.fields_read() - before)

    counts = [fields(_chain(n)) for n in (1_000, 2_000, 3_000)]
    assert counts[0] > 1_000 * 3  # each node's op, input and output at least
    assert counts[2] - counts[1] == counts[1] - counts[0]  # the same fields for each thousand nodes more: linear
    # a ModelProto whose first field (the graph) claims more bytes than there are: that field read, then the fault
    broken = b"\x3a\xff\xff\xff\x0f" + _chain(3_000)
    assert fields(broken) == 1


# -- the graph's structure: the compiled scan against bcast.files.graph_structure ------------------------------

#: few names, so that nodes read and write the same ones: produced twice, read before produced, read by the node
#: that writes them, left out (""), never produced, a graph's source
_NAME = st.sampled_from(["", "x", "w", "a", "b", "c", "d", "e"])
_NAMES = st.lists(_NAME, max_size=3)


def _both_structures(
    inputs: list[list[Any]], outputs: list[list[Any]], sources: dict[Any, int], graph_outputs: list[Any]
) -> tuple[Any, Any]:
    """(the Python scan's structure, the compiled one's), either an exception's type and text."""

    def python() -> Any:
        return graph_structure(iter(inputs), iter(outputs), sources, graph_outputs)

    def compiled() -> Any:
        return reader._compiled_structure(iter(inputs), iter(outputs), sources, graph_outputs)

    got = []
    for scan in (python, compiled):
        try:
            got.append(scan())
        except Exception as e:  # the same refusal both ways is the point
            got.append((type(e), str(e)))
    return got[0], got[1]


@settings(max_examples=400, deadline=None)
@given(
    nodes=st.lists(st.tuples(_NAMES, _NAMES), max_size=8),
    sources=st.dictionaries(st.sampled_from(["x", "w", "a"]), st.sampled_from([-1, -2, -3]), max_size=3),
    graph_outputs=st.lists(_NAME.filter(bool), max_size=3),
)
def test_the_compiled_structure_scan_finds_what_the_python_one_does(
    nodes: list[tuple[list[str], list[str]]], sources: dict[str, int], graph_outputs: list[str]
) -> None:
    """Random nodes over few names: the same producers, predecessors and first fault of each kind (its place in the
    scan, node, slot, name and source) both ways."""
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    python, compiled = _both_structures([i for i, _ in nodes], [o for _, o in nodes], sources, graph_outputs)
    assert compiled == python


@pytest.mark.parametrize(
    ("inputs", "outputs", "graph_outputs"),
    [
        ([["x"]], [3], []),  # a node's outputs that are no sequence
        ([5], [["y"]], []),  # nor its inputs
        ([[["unhashable"]]], [["y"]], []),  # a name that is no key
        ([["x"]], [[["unhashable"]]], []),
        ([["x"]], [["y"]], 7),  # graph outputs that are not iterable
        ([["x"]], [["y"]], [["unhashable"]]),
    ],
)
def test_the_compiled_structure_scan_refuses_what_the_python_one_does(
    native: Any, inputs: Any, outputs: Any, graph_outputs: Any
) -> None:
    python, compiled = _both_structures(inputs, outputs, {"x": -1}, graph_outputs)
    assert isinstance(python, tuple) and isinstance(compiled, tuple)
    assert compiled[0] is python[0] is TypeError


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_models_structure_is_the_same_both_ways(path: Path, native: Any) -> None:
    g = proto.decode_model(path.read_bytes()).graph
    sources, _ = reader._sources(g)
    nodes = list(g.node)
    python, compiled = _both_structures(
        [n.input for n in nodes], [n.output for n in nodes], sources, [vi.name for vi in g.output]
    )
    assert compiled == python and not isinstance(python, tuple)


def test_a_name_that_changes_its_node_while_scanned_is_read_as_python_reads_it(native: Any) -> None:
    """A name whose hash empties the list it is in (no decoded model's name does: they are str): the compiled scan
    looks at the list's size again at each step, as Python's iteration does, and reads no freed name."""

    class Emptying(str):
        def __hash__(self) -> int:
            holder.clear()
            return str.__hash__(self)

    for where in ("inputs", "outputs"):
        got = []
        for scan in ("python", "compiled"):
            holder: list[Any] = [Emptying("a"), "b", "c"]
            ins, outs = ([holder], [["z"]]) if where == "inputs" else ([["z"]], [holder])
            if scan == "python":
                got.append(graph_structure(ins, outs, {"y": -1}, []))
            else:
                got.append(reader._compiled_structure(ins, outs, {"y": -1}, []))
        assert got[0] == got[1]
        assert len(got[0].producer) == 2  # y, and the first name of the list, before it was emptied


# -- the reader's scan of the nodes' fields: the compiled scan against reader._scan_nodes ----------------------------


def _decoded(cls: type, **fields: Any) -> Any:
    """A message as the decoder makes one: the fields set, in its ``__dict__``."""
    m = cls()
    m.__dict__.update(fields)
    return m


class _OwnAttribute:
    """An attribute of another kind than the decoder's (onnx's own, say): the scan looks at every such one."""

    name = "value"


_TEXT = st.one_of(
    st.sampled_from(["", "Constant", "Reshape", "Expand", "ConstantOfShape", "Add", "ai.onnx", "com.x", "n"]),
    st.binary(max_size=2),  # a field that is not UTF-8, as the decoder gives it
    st.integers(-1, 1),
)
_TENSOR_FIELDS = st.fixed_dictionaries(
    {}, optional={"dims": st.just([2]), "data_location": st.sampled_from([0, 1]), "raw_data": st.just(b"\0" * 8)}
)


def _valued(t: dict[str, Any], **more: Any) -> Any:
    """A decoded attribute ``value`` holding a decoded tensor of the fields ``t`` (and the fields ``more``)."""
    return _decoded(proto.AttributeProto, name="value", t=_decoded(proto.TensorProto, **t), **more)


_ATTRIBUTE = st.one_of(
    st.builds(
        lambda f: _decoded(proto.AttributeProto, name="axis", **f),
        st.fixed_dictionaries({}, optional={"i": st.just(1), "ints": st.just([1, 2]), "s": st.just(b"x")}),
    ),
    st.builds(_valued, _TENSOR_FIELDS),
    st.builds(
        lambda t, extra: _valued(t, **{extra: [1]}),
        _TENSOR_FIELDS,
        st.sampled_from(["tensors", "graphs", "sparse_tensors"]),
    ),
    st.builds(
        lambda k: _decoded(proto.AttributeProto, name="body", **{k: object()}),
        st.sampled_from(["g", "sparse_tensor", "tensors", "graphs", "sparse_tensors"]),
    ),
    st.just(_OwnAttribute()),
    st.builds(lambda: _decoded(proto.AttributeProto, name="value", t=_OwnAttribute())),  # a tensor of another kind
)

# nodes whose fields are as they should be, so that the scan goes past them; a test then spoils one field of one
_OP = st.sampled_from(["Constant", "Reshape", "Expand", "ConstantOfShape", "Add"])
_GOOD = st.sampled_from(["", "x", "ai.onnx", "com.x"])
_NODE = st.builds(
    lambda fields: _decoded(proto.NodeProto, **fields),
    st.fixed_dictionaries(
        {"op_type": _OP},
        optional={
            "name": _GOOD,
            "domain": _GOOD,
            "input": st.lists(_GOOD, max_size=3),
            "output": st.lists(_GOOD, max_size=2),
            "attribute": st.lists(_ATTRIBUTE, max_size=3),
        },
    ),
)
_SPOILED = st.one_of(
    st.none(),
    st.tuples(st.integers(0, 7), st.sampled_from(["name", "op_type", "domain", "input", "output"]), _TEXT),
)


_SCANS = {"python": reader._scan_nodes, "compiled": lambda *args: proto._wire.node_scan(*args)}


def _node_scan(how: str, nodes: Any, twice_node: int = -1, bad_node: int = -1) -> Any:
    """The scan of the nodes, ``how`` ("python" or "compiled"), by the reader's own arguments."""
    return _SCANS[how](nodes, twice_node, bad_node, reader._SHAPE_INPUTS, proto.AttributeProto, proto.TensorProto)


def _both_node_scans(nodes: Any, twice_node: int, bad_node: int) -> tuple[Any, Any]:
    """(reader._scan_nodes of the nodes, the compiled scan's), either an exception's type and text."""
    got = []
    for how in ("python", "compiled"):
        try:
            got.append(_node_scan(how, nodes, twice_node, bad_node))
        except Exception as e:  # the same refusal both ways is the point
            got.append((type(e), str(e)))
    return got[0], got[1]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(_NODE, max_size=8),
    spoiled=_SPOILED,
    twice_node=st.one_of(st.just(-1), st.integers(0, 8)),
    bad_node=st.one_of(st.just(-1), st.integers(0, 8)),
)
def test_the_compiled_node_scan_notes_what_the_python_one_does(
    nodes: list[Any], spoiled: tuple[int, str, Any] | None, twice_node: int, bad_node: int
) -> None:
    """Random nodes (attributes holding numbers, tensors inline or outside the file, graphs, or of another kind), one
    field of one of them maybe spoiled (empty, bytes or a number; an input or output among text): the same node to
    stop at, holders, first node with a bad read, nodes taking a shape, Constant nodes and use of the default domain,
    both ways."""
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    if spoiled is not None and spoiled[0] < len(nodes):
        i, name, value = spoiled
        fields = nodes[i].__dict__
        fields[name] = [*fields.get(name, ()), value] if name in ("input", "output") else value
    python, compiled = _both_node_scans(nodes, twice_node, bad_node)
    assert compiled == python


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_models_node_scan_is_the_same_both_ways(path: Path, native: Any) -> None:
    nodes = proto.decode_model(path.read_bytes()).graph.node
    python, compiled = _both_node_scans(nodes, -1, -1)
    assert compiled == python and python[0] == len(nodes)


@pytest.mark.parametrize(
    ("nodes", "kind"),
    [
        (5, TypeError),  # no sequence of nodes
        ([object()], AttributeError),  # a node without fields
        ([_decoded(proto.NodeProto, op_type="Add", output=7)], TypeError),  # outputs that are no sequence
        ([_decoded(proto.NodeProto, op_type="Add", input=7)], TypeError),
        ([_decoded(proto.NodeProto, op_type="Add", attribute=7)], TypeError),
    ],
)
def test_the_compiled_node_scan_refuses_what_the_python_one_does(native: Any, nodes: Any, kind: type) -> None:
    python, compiled = _both_node_scans(nodes, -1, -1)
    assert isinstance(python, tuple) and isinstance(compiled, tuple)
    assert compiled[0] is python[0] is kind


def test_only_attributes_that_may_hold_a_graph_or_outside_data_are_looked_at_again() -> None:
    """A Constant's value held in the file is not looked at again by the checks of bodies and external data; a value
    stored outside the file, a graph, or an attribute of onnx's own is. Both ways."""

    def node(op: str, out: str, attribute: Any) -> Any:
        return _decoded(proto.NodeProto, op_type=op, output=[out], attribute=[attribute])

    nodes = [
        node("Constant", "a", _valued({"dims": [2], "raw_data": b"\0" * 8})),
        node("Constant", "b", _valued({"dims": [2], "data_location": 1})),
        node("If", "c", _decoded(proto.AttributeProto, g=object())),
        node("Add", "d", _OwnAttribute()),
        node("Reshape", "e", _decoded(proto.AttributeProto, i=1)),
    ]
    want = (5, [1, 2, 3], None, [4], [0, 1], True)
    assert _node_scan("python", nodes) == want
    if proto._wire is not None:
        assert _node_scan("compiled", nodes) == want


# -- the strip walk's compiled field loop against wire._fields ----------------------------------------------------

#: the messages whose fields the walk passes over (a tensor's are all read in Python)
_WALKED_KINDS = [k for k in range(len(wire._SCHEMA)) if k != wire._TENSOR]


def _big_fields(data: bytes, kind: int, keep: int, compiled: bool) -> Any:
    """The fields of more than ``keep`` bytes of the message of ``kind`` in ``data``, as the walk reads them (the
    compiled loop, then the Python one from where it stops), or the walk's refusal."""
    buf = memoryview(data)
    try:
        if not compiled:
            return [f for f in wire._fields(buf, 0, len(data), kind) if f[4] == 2 and f[2] - f[1] > keep]
        assert proto._wire is not None
        big, stop = proto._wire.big_fields(buf, 0, len(data), wire._WIRES[kind], keep)
        rest = [f for f in wire._fields(buf, stop, len(data), kind) if f[4] == 2 and f[2] - f[1] > keep]
        return [*big, *rest]
    except wire._MalformedError as e:
        return ("refused", str(e))


@_RANDOM
@given(
    data=st.one_of(mutated(_message(proto.GraphProto), 0, 3), mutated(st.sampled_from(_small_models()), 0, 3)),
    kind=st.sampled_from(_WALKED_KINDS),
    keep=st.sampled_from([0, 1, 3, 8]),
)
def test_the_compiled_walk_finds_the_big_fields_the_python_one_does(data: bytes, kind: int, keep: int) -> None:
    """Random and mutated messages read as every kind the walk knows (wrong wire types, groups, overlong and
    truncated numbers, lengths past the end): the same big fields, or the same refusal, both ways."""
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    assert _big_fields(data, kind, keep, True) == _big_fields(data, kind, keep, False)


@pytest.mark.parametrize(
    "data",
    [
        _key(1, 2) + b"\xff" * 9 + b"\x02",  # a length of more than 64 bits
        b"\xff" * 9 + b"\x7f" + b"\x00",  # a tag of more than 64 bits
        _key(1, 2) + b"\xff" * 9 + b"\x01" + b"x",  # a length of 2**63 and more, in ten bytes
        _key(5, 0) + b"\xff" * 9 + b"\x7f",  # a number of more than 64 bits: protobuf reads it, masked
        _key(1, 2) + _varint(3) + b"abc" + _key(2, 3),  # a group after a big field
        _key(1, 1) + b"1234567",  # a fixed64 cut short
        _key(2**29, 2) + _varint(0),  # a field number past protobuf's
    ],
)
def test_the_compiled_walk_reads_wide_numbers_as_the_python_one(data: bytes, native: Any) -> None:
    for kind in _WALKED_KINDS:
        assert _big_fields(data, kind, 0, True) == _big_fields(data, kind, 0, False)


def test_a_model_strips_the_same_both_ways(native: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every field of a few bytes walked into (so that the walk rewrites submessages at every level), each model
    of the repository strips to the same bytes with the compiled loop and without it."""
    monkeypatch.setattr(wire, "KEEP_BYTES", 16)
    for path in MODELS[:12]:
        data = path.read_bytes()
        got = wire.strip(data)
        monkeypatch.setattr(proto, "_wire", None)
        want = wire.strip(data)
        monkeypatch.setattr(proto, "_wire", native)
        assert got == want


# -- decoded nodes converted by the compiled loop against graph_read._node ------------------------------------------


def _graph_both_ways(model: Any) -> tuple[Any, Any]:
    """``graph_of(model)`` by the compiled conversion and by the Python one, each as comparable values (every node's
    fields, its source included, and its bodies'), or the refusal."""
    from bcast.onnx import graph_read

    def plain(g: Any) -> Any:
        return [
            (
                n.index, n.name, n.op, n.inputs, n.outputs, dict(n.attrs), n.domain, n.path, n.source,
                {k: plain(b) for k, b in n.bodies.items()},
            )
            for n in g.nodes
        ]  # fmt: skip

    got = []
    for compiled in (True, False):
        saved = proto._wire
        proto._wire = saved if compiled else None
        try:
            g = graph_read.graph_of(model)
            got.append((plain(g), {k: plain(f) for k, f in g.functions.items()}))
        except Exception as e:  # the same refusal both ways is the point
            got.append((type(e), str(e)))
        finally:
            proto._wire = saved
    return got[0], got[1]


@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_models_nodes_convert_the_same_both_ways(path: Path, native: Any) -> None:
    compiled, python = _graph_both_ways(proto.decode_model(path.read_bytes()))
    assert compiled == python and not isinstance(compiled[0], type)


def test_attributes_of_every_plain_type_convert_the_same_both_ways(native: Any) -> None:
    """Each attribute type the compiled loop reads itself (float, int, string, and their lists; text that is not
    UTF-8; a value left out), beside those it leaves to Python (a tensor, a graph, a function's reference, a type
    left out), on nodes with and without names."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    a = helper.make_attribute
    attrs = [
        a("f", 0.5), a("i", -3), a("s", "text"), a("floats", [1.0, 2.5]), a("ints", [1, -2]), a("strings", ["p", "q"]),
        a("empty_ints", [], attr_type=onnx.AttributeProto.INTS), a("t", helper.make_tensor("t", 7, [2], [4, 5])),
    ]  # fmt: skip
    raw = onnx.AttributeProto(name="bad", type=onnx.AttributeProto.STRING, s=b"\xff\xfe")
    bad_list = onnx.AttributeProto(name="badl", type=onnx.AttributeProto.STRINGS, strings=[b"\xff", b"ok"])
    no_value = onnx.AttributeProto(name="nv", type=onnx.AttributeProto.INT)
    no_type = onnx.AttributeProto(name="nt")
    ref = onnx.AttributeProto(name="r", ref_attr_name="outer", type=onnx.AttributeProto.INT)
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y1"])], "then", [], [helper.make_value_info("y1", onnx.TypeProto())]
    )
    nodes = [
        helper.make_node("Custom", ["x"], ["a"], domain="my", name="plain"),
        helper.make_node("Custom", ["x"], ["b"], domain="my"),  # no name: "Custom_1"
        helper.make_node("Relu", ["x"], ["c"]),
        helper.make_node("Custom", ["x"], ["d"], domain="my"),
        helper.make_node("If", ["cond"], ["e"], then_branch=then, else_branch=then),
    ]
    nodes[0].attribute.extend(attrs[:7])
    nodes[1].attribute.extend([raw, bad_list, no_value])
    nodes[3].attribute.extend([attrs[7], no_type])
    nodes[2].attribute.extend([attrs[0], attrs[1]])
    fn_node = helper.make_node("Custom", ["x"], ["y"], domain="my")
    fn_node.attribute.append(ref)
    fn = helper.make_function("local", "fn", ["x"], ["y"], [fn_node], [helper.make_opsetid("", 17)])
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", 1, [2]), helper.make_tensor_value_info("cond", 9, [])],
        [helper.make_tensor_value_info("e", 1, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], functions=[fn])
    compiled, python = _graph_both_ways(proto.decode_model(model.SerializeToString()))
    assert compiled == python
    first = compiled[0][0]
    assert first[5] == {
        "f": 0.5,
        "i": -3,
        "s": "text",
        "floats": [1.0, 2.5],
        "ints": [1, -2],
        "strings": ["p", "q"],
        "empty_ints": [],
    }
    assert compiled[0][1][1] == "Custom_1" and compiled[0][1][5] == {
        "bad": "\ufffd\ufffd",
        "badl": ["\ufffd", "ok"],
        "nv": 0,
    }


@_RANDOM
@given(data=mutated(st.sampled_from(_small_models()), 0, 3))
def test_mutated_models_convert_the_same_both_ways(data: bytes) -> None:
    if proto._wire is None:
        pytest.skip(NOT_BUILT)
    try:
        model = proto.decode_model(data)
    except proto.ProtoError:
        return
    compiled, python = _graph_both_ways(model)
    assert compiled == python


def test_a_read_lets_go_of_each_decoded_node_and_keeps_its_lists(native: Any) -> None:
    """With ``consume``, the compiled conversion empties the decoded model's node list as the Python one does, and the
    nodes take the decoded names' lists (nothing else holds them) where the caller's model keeps its own."""
    from bcast.onnx import graph_read

    data = Path(sample_model_path()).read_bytes()
    model = proto.decode_model(data)
    inputs = [n.input for n in model.graph.node]
    g = graph_read.graph_of(model, consume=True)
    assert all(n is None for n in model.graph.node)
    assert all(node.inputs is names for node, names in zip(g.nodes, inputs, strict=True))
    kept = proto.decode_model(data)
    g = graph_read.graph_of(kept)
    assert all(n is not None for n in kept.graph.node)
    assert all(
        node.inputs is not n.input and node.inputs == n.input for node, n in zip(g.nodes, kept.graph.node, strict=True)
    )


# -- a small tensor's values by the compiled reader against graph_read's Python one -----------------------------------


@st.composite
def _raw_tensor(draw: st.DrawFn) -> Any:
    """A decoded TensorProto holding raw data: the four types the compiled reader takes and others, dims that are
    negative, zero or past the limits, data a byte short or long, stored outside the file, a segment, NaN and
    infinities among the floats."""
    t = proto.TensorProto()
    dims = draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 65, 4097, -1]), max_size=3))
    data_type = draw(st.sampled_from([1, 6, 7, 11, 1, 7, 10, 9, 0]))
    size = {1: 4, 6: 4, 7: 8, 11: 8, 10: 2, 9: 1}.get(data_type, 1)
    count = 1
    for d in dims:
        count *= max(d, 0)
    count = min(count, 5000)
    length = max(count * size + draw(st.sampled_from([0, 0, 0, 0, -1, 1])), 0)
    fields: dict[str, Any] = {
        "dims": dims,
        "data_type": data_type,
        "raw_data": draw(st.binary(min_size=length, max_size=length)),
    }
    if data_type == 1 and length >= 4 and draw(st.booleans()):
        special = struct.pack("<f", draw(st.sampled_from([float("nan"), float("inf"), -0.0, 1e-45])))
        fields["raw_data"] = special + fields["raw_data"][4:]
    if not draw(st.integers(0, 7)):
        fields["data_location"] = draw(st.sampled_from([0, 1]))
    if not draw(st.integers(0, 9)):
        fields["segment"] = proto.TensorProto.Segment() if hasattr(proto.TensorProto, "Segment") else object()
    if not draw(st.integers(0, 9)):
        del fields["dims"]
    t.__dict__.update(fields)
    return t


def _value_both_ways(t: Any) -> tuple[Any, Any]:
    from bcast.onnx import graph_read

    def plain(v: Any) -> Any:
        data = None if v.data is None else tuple(struct.pack("<d", x) if isinstance(x, float) else x for x in v.data)
        return (v.dtype, v.shape, data, v.origins, v.data_origins)

    got = plain(graph_read.initializer_value(t))
    saved = graph_read._RAW_VALUE
    graph_read._RAW_VALUE = None
    try:
        want = plain(graph_read.initializer_value(t))
    finally:
        graph_read._RAW_VALUE = saved
    return got, want


@_RANDOM
@given(t=_raw_tensor())
def test_a_small_tensors_value_is_read_the_same_both_ways(t: Any) -> None:
    if getattr(proto._wire, "raw_value", None) is None:
        pytest.skip(NOT_BUILT)
    got, want = _value_both_ways(t)
    assert got == want


def test_the_compiled_reader_takes_the_commonest_tensors(native: Any) -> None:
    """A float32 scalar, an int64 shape and a double, each as raw data: read by the compiled reader (its value is
    made without Python's struct), and what it leaves (strings, a stored-outside tensor) left to Python."""
    from bcast.onnx import graph_read

    def tensor(data_type: int, dims: list[int], raw: bytes, **more: Any) -> Any:
        t = proto.TensorProto()
        t.__dict__.update({"data_type": data_type, "dims": dims, "raw_data": raw, **more})
        return t

    taken = [
        tensor(1, [], struct.pack("<f", 0.5)),
        tensor(7, [3], struct.pack("<3q", 2, -1, 2**40)),
        tensor(11, [1, 1], struct.pack("<d", -2.25)),
        tensor(6, [2], struct.pack("<2i", -7, 7)),
    ]
    for t in taken:
        assert native.raw_value(t, graph_read._RAW_SPEC) is not None
        got, want = _value_both_ways(t)
        assert got == want
    assert [int(x.value) for x in graph_read.initializer_value(taken[1]).data] == [2, -1, 2**40]
    left = [tensor(8, [1], b"x"), tensor(1, [], struct.pack("<f", 1.0), data_location=1), tensor(1, [-1], b"")]
    assert all(native.raw_value(t, graph_read._RAW_SPEC) is None for t in left)
