"""``bcast check`` on ONNX models with NumPy as the only dependency: the pure decoder (``bcast.onnx.proto``).

* Without onnx (``import onnx`` fails in a subprocess), ``python -m bcast check`` gives the sample's and
  every corpus model's problems (kind, node, severity) as the check in this process, with onnx, does;
  the sample exits 1, not 2. An op that only onnx's own inference can follow is left unchecked, never
  an error.
* With onnx installed, ``bcast.check.check`` never imports it on a model that needs no fallback.
* The decoder reads what onnx reads: every field of every corpus model, and of random mutations of a
  small model, is the same (onnx as the oracle, skipped without it).
* The table of operator arities (``bcast.onnx.arity``) is what ``onnx.defs`` (and onnxruntime's
  schemas, for ``com.microsoft``) say, for every op at every opset.
* Malformed bytes (truncated numbers, lengths past the end, wrong wire types, groups, packed fields
  of a bad length, messages nested past protobuf's limit) are refused as a one-line
  ``CheckInputError`` naming the byte of the file, quickly; the decoding is linear in the bytes.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcast.check import check, sample_model_path
from bcast.check.report import CheckInputError
from bcast.files import model_source
from bcast.onnx import arity, proto, wire
from hostile import assert_linear, mutated, steps

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "tests" / "data" / "corpus" / "onnx").glob("*.onnx"))
MODELS = [Path(sample_model_path()), *CORPUS]


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


HAS_ONNX = _has("onnx")
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="onnx is the oracle here (pip install onnx)")


# ------------------------------------------------------------------------------------------------
# encoding by hand: models built without onnx


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _ld(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _num(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _s(field: int, text: str) -> bytes:
    return _ld(field, text.encode())


def _vi(name: str, dims: list[int | str] | None = None) -> bytes:
    """A ValueInfoProto of a float tensor."""
    shape = b"".join(_ld(1, _num(1, d) if isinstance(d, int) else _s(2, d)) for d in dims or [])
    tensor = _num(1, 1) + (_ld(2, shape) if dims is not None else b"")
    return _s(1, name) + _ld(2, _ld(1, tensor))


def _node(op: str, inputs: list[str], outputs: list[str], extra: bytes = b"") -> bytes:
    return b"".join(_s(1, i) for i in inputs) + b"".join(_s(2, o) for o in outputs) + _s(4, op) + extra


def _model(nodes: list[bytes], inputs: list[bytes], outputs: list[bytes], inits: Sequence[bytes] = ()) -> bytes:
    graph = b"".join(_ld(1, n) for n in nodes) + _s(2, "g") + b"".join(_ld(5, t) for t in inits)
    graph += b"".join(_ld(11, i) for i in inputs) + b"".join(_ld(12, o) for o in outputs)
    return _num(1, 9) + _ld(8, _s(1, "") + _num(2, 17)) + _ld(7, graph)


def _chain(n: int) -> bytes:
    nodes = [_node("Abs", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"]) for i in range(n)]
    return _model(nodes, [_vi("x", ["N", 4])], [_vi(f"t{n - 1}")])


def _load(data: bytes) -> Any:
    return wire.load_source(model_source(data, "test"))


# ------------------------------------------------------------------------------------------------
# without onnx: the same findings


_BLOCKED = ("onnx", "onnxruntime")


@pytest.fixture(scope="module")
def no_onnx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a subprocess where ``import onnx`` (and onnxruntime) fails: a folder ahead on
    PYTHONPATH whose ``onnx`` and ``onnxruntime`` packages raise ModuleNotFoundError."""
    shim = tmp_path_factory.mktemp("no_onnx")
    for name in _BLOCKED:
        (shim / name).mkdir()
        (shim / name / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\")\n")
    path = os.pathsep.join([str(shim), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _run_check(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "bcast", "check", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, json.loads(out.stdout)


def _problems(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(p["kind"], p["node"], p["severity"]) for p in report["problems"]]


def test_the_shim_blocks_onnx(no_onnx: dict[str, str]) -> None:
    code = "import onnx"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=no_onnx, check=False)
    assert out.returncode == 1 and "ModuleNotFoundError" in out.stderr


def test_the_sample_without_onnx_exits_1_with_its_findings(
    no_onnx: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, report = _run_check(no_onnx, "--sample")
    assert rc == 1, report
    assert (rc, _problems(report)) == (lambda r: (r[0], _problems(r[1])))(_in_process(capsys, "--sample"))
    assert any(p["node"] == "add_mask" and p["severity"] == "error" for p in report["problems"])


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """``bcast check ARGS --json`` in this process, onnx installed or not."""
    from bcast.cli import main

    capsys.readouterr()
    rc = main(["check", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


#: the corpus models every run checks without onnx: the clean ones and every third bug (a process each); the rest
#: with the full suite
_SAMPLED = [
    pytest.param(p, id=p.name, marks=() if p.name.count(".") == 2 or k % 3 == 0 else pytest.mark.full)
    for k, p in enumerate(CORPUS)
]


@pytest.mark.parametrize("path", _SAMPLED)
def test_every_corpus_model_without_onnx_gives_the_same_problems(
    path: Path, no_onnx: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, report = _run_check(no_onnx, str(path))
    want_rc, want = _in_process(capsys, str(path))
    assert _problems(report) == _problems(want)
    assert rc == want_rc and report["summary"] == want["summary"]
    assert report["unchecked"] == want["unchecked"] == []


def test_check_with_onnx_installed_never_imports_it() -> None:
    code = (
        "import sys; from bcast.check import check, sample_model_path; r = check(sample_model_path()); "
        "assert r.problems; print('onnx' in sys.modules, 'onnxruntime' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def _det_model() -> bytes:
    """Det (no shape function in bcast: onnx's inference follows it) feeding an Add that clashes."""
    det = _node("Det", ["x"], ["d"])
    add = _node("Add", ["d", "b"], ["y"])
    bias = _s(8, "b") + _num(2, 1) + _num(1, 5) + _ld(9, bytes(20))
    return _model([det, add], [_vi("x", [3, 2, 2])], [_vi("y")], [bias])


def test_an_op_only_onnx_can_follow_is_left_unchecked_without_it(no_onnx: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "det.onnx"
    path.write_bytes(_det_model())
    rc, report = _run_check(no_onnx, str(path))
    assert rc in (0, 1), report  # never a refusal (2) or an internal error (3)
    assert [(u["node"], u["op"]) for u in report["unchecked"]] == [("Det_0", "Det")]
    if HAS_ONNX:  # with onnx, its inference follows Det: [3] + [5] clashes
        with_onnx = check(str(path)).to_dict()
        assert with_onnx["unchecked"] == [] and any(p["node"] == "Add_1" for p in with_onnx["problems"])
    reason = report["unchecked"][0]["reason"]
    assert "pip install onnx" in reason and "\n" not in reason


# ------------------------------------------------------------------------------------------------
# the decoder reads what onnx reads


def _same(got: Any, want: Any, where: str) -> None:
    """Every field the decoder knows, of ``got`` (decoded) and ``want`` (onnx's), the same."""
    for name, kind, _, repeated, _ in type(got)._FIELDS.values():
        a, b = getattr(got, name), getattr(want, name)
        here = f"{where}.{name}"
        if repeated:
            assert len(a) == len(b), here
            for k, (x, y) in enumerate(zip(a, b, strict=True)):
                if kind == proto._MESSAGE:
                    _same(x, y, f"{here}[{k}]")
                else:
                    assert _equal(x, y), f"{here}[{k}]: {x!r} != {y!r}"
            continue
        assert got.HasField(name) == want.HasField(name), here
        if kind == proto._MESSAGE:
            if got.HasField(name):  # an unset message reads as an empty one, of a type that may hold itself
                _same(a, b, here)
        else:
            assert _equal(a, b) and type(a) is type(b), f"{here}: {a!r} != {b!r}"
    for group in type(got)._ONEOFS:
        assert got.WhichOneof(group) == want.WhichOneof(group), where
    if isinstance(got, proto.TensorProto):
        assert wire.stripped_payload(got) == wire.stripped_payload(want), where


def _equal(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@needs_onnx
@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_the_decoder_reads_every_field_as_onnx(path: Path) -> None:
    got = wire.load_source(model_source(str(path)))
    assert isinstance(got, proto.ModelProto)
    _same(got, wire.read_model(str(path)), "model")


@needs_onnx
def test_big_payloads_are_dropped_and_marked_as_onnx_reads_them() -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(np.ones((300, 100), np.float32), "w"),
        helper.make_tensor("i", TensorProto.INT64, [40_000], [10**9] * 40_000),
        helper.make_tensor("s", TensorProto.INT64, [3], [2, -1, 4]),
        helper.make_tensor("f", TensorProto.FLOAT, [2], [0.5, float("nan")]),
        helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.0, 2.0]),
        helper.make_tensor("b", TensorProto.BFLOAT16, [2], [1.5, -2.0]),
    ]
    big = numpy_helper.from_array(np.zeros(40_000, np.float32), "c")
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value=big)], "body", [], [helper.make_tensor_value_info("k", 1, None)]
    )
    nodes = [
        helper.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body),
        helper.make_node("Identity", ["w"], ["z"], name="ident"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", 1, None), helper.make_tensor_value_info("z", 1, ["N", 3])],
        inits,
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    got = _load(data)
    _same(got, wire.read_model(data), "model")
    assert wire.stripped_payload(got.graph.initializer[0]) == {9: 120_000}
    assert 7 in wire.stripped_payload(got.graph.initializer[1])
    values: list[Any] = [wire.small_array(t) for t in got.graph.initializer]
    assert values[0] is None and values[1] is None and values[2].tolist() == [2, -1, 4]
    assert math.isnan(values[3][1]) and values[4].tolist() == [1.0, 2.0] and values[5].tolist() == [1.5, -2.0]
    node_bytes = got.graph.node[1].SerializeToString()
    from onnx import NodeProto

    assert NodeProto.FromString(node_bytes) == wire.read_model(data).graph.node[1]


_FUZZ_NODES = [
    _node("Reshape", ["x", "s"], ["r"], _ld(5, _s(1, "allowzero") + _num(20, 2) + _num(3, 0))),
    _node("Cast", ["r"], ["y"], _ld(5, _s(1, "to") + _num(20, 2) + _num(3, 7))),
]
_SHAPE = _s(8, "s") + _num(2, 7) + _num(1, 2) + _ld(7, _varint(2) + _varint((1 << 64) - 1))
FUZZ = _model(_FUZZ_NODES, [_vi("x", ["N", 4])], [_vi("y", [2, "M"])], [_SHAPE])


@needs_onnx
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated(st.just(FUZZ)), keep=st.sampled_from([8, wire.KEEP_BYTES]))
def test_mutated_models_decode_as_onnx_parses_them(data: bytes, keep: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model or a one-line refusal, as onnx: whatever onnx parses decodes to the same fields."""
    monkeypatch.setattr(wire, "KEEP_BYTES", keep)
    try:
        got = _load(data)
    except CheckInputError as e:
        message = str(e)
        assert message.startswith("<bytes>: ") and "\n" not in message
        got = None
    try:
        want = wire.read_model(data)
    except CheckInputError:
        want = None
    assert (got is None) == (want is None), (got, want)
    if got is not None:
        _same(got, want, "model")


# ------------------------------------------------------------------------------------------------
# the arity table


@needs_onnx
def test_the_arity_table_is_onnx_defs_for_every_op_and_opset() -> None:
    import onnx.defs

    newest = int(onnx.defs.onnx_opset_version())
    assert newest == arity.OPSET, f"onnx {onnx.__version__} knows opset {newest}: python -m tools.gen_onnx_arity"
    ops = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""} | set(arity.DEFAULT)
    for op in sorted(ops):
        for v in range(1, newest + 1):
            try:
                schema = onnx.defs.get_schema(op, v, "")
                want: tuple[int, int] | None = (int(schema.min_input), int(schema.max_input))
            except onnx.defs.SchemaError:
                want = None
            assert arity.lookup(op, v) == want, (op, v)
            assert arity.lookup(op, v, "ai.onnx") == want, (op, v)
            optional = (
                ()
                if want is None
                else tuple(i for i, p in enumerate(schema.inputs) if i < want[0] and p.option.name == "Optional")
            )
            assert arity.optional_inputs(op, v) == optional, (op, v)


def test_the_arity_table_without_onnx() -> None:
    assert arity.lookup("Add", 17) == (2, 2) and arity.lookup("Concat", 13) == (1, arity.N)
    # a Loop's trip count and condition must be there, and may be empty; Scan-8's sequence lengths too
    assert arity.optional_inputs("Loop", 17) == (0, 1) and arity.optional_inputs("Add", 17) == ()
    assert arity.optional_inputs("Scan", 8) == (0,) and arity.optional_inputs("Scan", 9) == ()
    assert arity.lookup("Add", 0) is None and arity.lookup("NoSuchOp", 17) is None
    assert arity.lookup("Upsample", arity.OPSET) == (2, 2)  # deprecated, still defined
    assert arity.lookup("Attention", 1, "other.domain") is None


def test_the_com_microsoft_table_is_onnxruntimes() -> None:
    ort_state = pytest.importorskip(
        "onnxruntime.capi.onnxruntime_pybind11_state", reason="the com.microsoft schemas are onnxruntime's"
    )
    schemas = {s.name: s for s in ort_state.get_all_operator_schema() if s.domain == "com.microsoft"}
    assert arity.MICROSOFT and "Attention" in arity.MICROSOFT
    for op, versions in arity.MICROSOFT.items():
        since, low, high = versions[-1]
        s = schemas[op]
        assert (since, low, high) == (int(s.since_version), int(s.min_input), int(s.max_input)), op
        assert arity.lookup(op, since, "com.microsoft") == (low, high)


def test_the_generated_file_is_up_to_date() -> None:
    pytest.importorskip("onnx", reason="the table is generated from onnx.defs")
    pytest.importorskip("onnxruntime", reason="the com.microsoft table is generated from onnxruntime's schemas")
    import onnx

    if onnx.__version__ != arity.ONNX_VERSION:
        pytest.skip(f"the table is of onnx {arity.ONNX_VERSION}, onnx {onnx.__version__} is installed")
    from tools.gen_onnx_arity import OUT, render

    assert OUT.read_text(encoding="utf-8") == render(), "regenerate it: python -m tools.gen_onnx_arity"


# ------------------------------------------------------------------------------------------------
# hostile bytes


def _deep_type(depth: int) -> bytes:
    """A TypeProto of sequences nested ``depth`` deep around a tensor."""
    tp = _ld(1, _num(1, 1))
    for _ in range(depth):
        tp = _ld(4, _ld(1, tp))
    return tp


def _deep_bodies(depth: int) -> bytes:
    """``depth`` small If bodies inside each other (each a node, an attribute and a graph deeper)."""
    g = _ld(1, _node("Abs", ["x"], ["y"])) + _ld(12, _vi("y"))
    for _ in range(depth):
        attr = _s(1, "then_branch") + _num(20, 5) + _ld(6, g)
        g = _ld(1, _node("If", ["c"], ["y"], _ld(5, attr))) + _ld(12, _vi("y"))
    return _num(1, 9) + _ld(8, _num(2, 17)) + _ld(7, g)


#: (name, bytes, words the refusal holds): faults in small messages, which only the decoder reads
HOSTILE: list[tuple[str, bytes, list[str]]] = [
    (
        "truncated-number",
        _model([_node("Abs", ["x"], ["y"], _key(30, 0) + b"\xff\xff")], [_vi("x")], [_vi("y")]),
        ["a number at byte", "runs past the end of the message holding it"],
    ),
    (
        "eleven-byte-number",
        _model([_node("Abs", ["x"], ["y"], _key(30, 0) + b"\xff" * 10 + b"\x01")], [_vi("x")], [_vi("y")]),
        ["a malformed number at byte"],
    ),
    (
        "length-past-the-end",
        _model([_node("Abs", ["x"], ["y"], _key(3, 2) + b"\x40abc")], [_vi("x")], [_vi("y")]),
        ["field 3 of a NodeProto at byte", "past the end of the message holding it"],
    ),
    (
        "end-group-without-a-group",
        _model([_node("Abs", ["x"], ["y"], _key(9, 4))], [_vi("x")], [_vi("y")]),
        ["ends a group that is not open"],
    ),
    (
        "unterminated-group",
        _model([_node("Abs", ["x"], ["y"], _key(30, 3) + _num(1, 1))], [_vi("x")], [_vi("y")]),
        ["the group at byte", "has no end"],
    ),
    (
        "packed-floats-of-a-bad-length",
        _model([_node("Abs", ["x"], ["y"], _ld(5, _s(1, "a") + _ld(7, b"\0" * 6)))], [_vi("x")], [_vi("y")]),
        ["a packed field at byte", "not a whole number of 4-byte values"],
    ),
    ("wire-type-7", _model([_node("Abs", ["x"], ["y"], _key(3, 7))], [_vi("x")], [_vi("y")]), ["not a protobuf field"]),
    (
        "nested-types",
        _model([_node("Abs", ["x"], ["y"])], [_s(1, "x") + _ld(2, _deep_type(200))], [_vi("y")]),
        ["nested more than 100 deep at byte"],
    ),
    ("nested-bodies", _deep_bodies(40), ["nested more than 100 deep at byte"]),
    ("nested-bodies-far", _deep_bodies(2000), ["nested more than 100 deep at byte"]),
]


@pytest.mark.parametrize(("kind", "data", "words"), HOSTILE, ids=[k for k, _, _ in HOSTILE])
def test_hostile_bytes_are_refused_naming_the_byte(
    kind: str, data: bytes, words: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CheckInputError) as info:
        _load(data)
    message = str(info.value)
    assert message.startswith("<bytes>: not a readable ONNX model (") and "\n" not in message, message
    for w in words:
        assert w in message, message
    # the steps are counted in Python's loop, the reference the compiled one is proven equal to
    # (tests/test_proto_native.py): a compiled loop takes no Python steps to count
    with monkeypatch.context() as m:
        m.setattr(proto, "_wire", None)
        assert steps(lambda: _load(data), (CheckInputError,)) < 400_000  # refused at once
    if HAS_ONNX:  # onnx refuses them too
        with pytest.raises(CheckInputError):
            wire.read_model(data)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    with pytest.raises(CheckInputError, match="not a readable ONNX model"):
        check(str(path))


def test_nesting_up_to_protobufs_limit_decodes() -> None:
    """32 bodies deep, the innermost output's tensor type is 100 messages down: read; 33 deep, the innermost
    body's output is 101 down: refused, as by protobuf."""
    model = _load(_deep_bodies(32))
    depth, g = 0, model.graph
    while g.node[0].attribute:
        g, depth = g.node[0].attribute[0].g, depth + 1
    assert depth == 32 and g.node[0].op_type == "Abs" and g.output[0].type.WhichOneof("value") == "tensor_type"
    with pytest.raises(CheckInputError, match="nested more than 100 deep"):
        _load(_deep_bodies(33))
    if HAS_ONNX:
        wire.read_model(_deep_bodies(32))
        with pytest.raises(CheckInputError):
            wire.read_model(_deep_bodies(33))


def test_the_byte_named_is_the_files_after_a_dropped_payload() -> None:
    """A fault after a stripped weight is named at its byte in the file, not in what the reader kept."""
    weight = _s(8, "w") + _num(2, 1) + _num(1, 50_000) + _ld(9, bytes(200_000))
    bad = _node("Abs", ["x"], ["y"], _key(30, 0) + b"\xff\xff")
    data = _num(1, 9) + _ld(8, _num(2, 17)) + _ld(7, _ld(5, weight) + _ld(1, bad) + _ld(12, _vi("y")))
    with pytest.raises(CheckInputError) as info:
        _load(data)
    at = data.index(b"\xf0\x01\xff\xff") + 2  # the number after the unknown field's tag
    assert f"a number at byte {at:,} runs past the end of the message holding it at byte {at + 2:,}" in str(info.value)


def test_wrong_wire_types_and_unknown_fields_are_skipped_as_protobuf_skips_them() -> None:
    extra = _key(4, 0) + b"\x05" + _key(30, 3) + _num(1, 1) + _key(30, 4) + _num(99, 7) + _key(3, 5) + b"abcd"
    data = _model([_node("Abs", ["x"], ["y"], extra)], [_vi("x")], [_vi("y")])
    node = _load(data).graph.node[0]
    assert node.op_type == "Abs" and not node.HasField("name") and list(node.input) == ["x"]
    attr = _ld(5, _s(1, "to") + _num(20, 99) + _num(3, 7))  # an AttributeType the enum lacks: unset
    cast = _load(_model([_node("Cast", ["x"], ["y"], attr)], [_vi("x")], [_vi("y")])).graph.node[0]
    assert cast.attribute[0].type == 0 and not cast.attribute[0].HasField("type") and cast.attribute[0].i == 7
    if HAS_ONNX:
        _same(_load(data), wire.read_model(data), "model")


def test_names_that_are_not_utf8_are_bytes_and_refused_by_the_reader(tmp_path: Path) -> None:
    data = _model([_node("Abs", ["x"], ["y"], _ld(3, b"\xff\xfe"))], [_vi("x")], [_vi("y")])
    assert _load(data).graph.node[0].name == b"\xff\xfe"
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    with pytest.raises(CheckInputError, match="is not UTF-8 text"):
        check(str(path))


def test_decoding_is_linear_in_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    proto.decode_model(_chain(100_000))  # the loop in use, compiled where it was built
    monkeypatch.setattr(proto, "_wire", None)  # Python's loop, whose steps can be counted
    assert_linear(lambda n: functools.partial(proto.decode_model, _chain(n)), 1000, what="decode_model")


def test_the_decoded_model_needs_no_onnx_to_be_checked(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_chain(5))
    report = check(str(path))
    assert report.to_dict()["unchecked"] == [] and not report.problems
