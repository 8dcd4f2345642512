"""Reading OpenVINO IR files and checking their broadcasting layers (``bcast.openvino.ir_read``, ``bcast check``).

An IR is checked by one engine: the propagation of :mod:`bcast.graph` over the graph that
``graph_of_ir`` makes of it (``bcast.check.check``). The oracle is the real ``openvino`` package
throughout:

* graphs built with ``openvino`` (Broadcast-1/-3 in every mode with constant, Parameter, ShapeOf and
  Concat targets; every op with ``auto_broadcast`` in numpy/pdpd/none; static, dynamic, interval and
  dynamic-rank dims) are written by ``openvino.save_model``; for every broadcasting layer,
  what propagation knows of its output must be what OpenVINO inferred in memory (the same rank, a
  known dim one OpenVINO's may be, and all of it where OpenVINO's is static), with no error and no quirk;
* mutated IR files (a Parameter's shape replaced by random dims) are read back by
  ``openvino.Core().read_model``, which re-runs shape inference: where it fails ``bcast check`` must
  not call the layer fine, elsewhere it must report no error there (but where a quirk says that
  OpenVINO accepts inputs without a defined result) and agree with OpenVINO's output;
* ``evaluate_layer`` against the model compiled and run on the CPU plugin (data never has zero
  elements: the CPU plugin crashes on those, docs/openvino-findings.md 1);
* the IR snippets of docs/specs/openvino-broadcast-1.rst, completed into files that
  ``openvino`` itself reads;
* malicious and corrupt files (entities, external references, truncated ``.bin``, bad offsets and
  element types) must be refused with an ``IRError``, never a crash.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcast.check import Report, check
from bcast.dims import Dim, Shape
from bcast.graph import Expr, propagate
from bcast.graph.propagate import Result
from bcast.openvino.graph_read import graph_of_ir, ir_fallback
from bcast.openvino.ir_check import evaluate_layer, is_broadcasting
from bcast.openvino.ir_read import IRError, parse_ir, read_ir

ov = pytest.importorskip("openvino", reason="openvino is not installed; the IR tests need it to write IR files")
opset1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
opset3 = pytest.importorskip("openvino.opset3", reason="openvino.opset3 is missing")
opset13 = pytest.importorskip("openvino.opset13", reason="openvino.opset13 is missing")
node_factory = pytest.importorskip("openvino.utils.node_factory", reason="openvino's NodeFactory is missing")

#: the Broadcast-1 specification text, kept in the repository (docs/specs/) so that these tests run in any clone
SPEC = Path(__file__).resolve().parents[1] / "docs" / "specs" / "openvino-broadcast-1.rst"
RNG = np.random.default_rng(0)


# -- building and saving graphs ------------------------------------------------------------------


def param(name: str, shape: Any, t: Any = None) -> Any:
    """A Parameter; ``shape`` is a list of ints / (lo, hi) intervals, or None for a dynamic rank."""
    if shape is None:
        ps = ov.PartialShape.dynamic()
    else:
        ps = ov.PartialShape([ov.Dimension(*d) if isinstance(d, tuple) else ov.Dimension(d) for d in shape])
    p = ov.op.Parameter(t or ov.Type.f32, ps)
    p.set_friendly_name(name)
    return p


def const(values: Any, dtype: Any = np.int64) -> Any:
    # ov.op.Constant accepts an empty array (opsetN.constant does not); int64 because a u8 target breaks
    # the CPU plugin (reference section 5.2).
    return ov.op.Constant(np.asarray(values, dtype=dtype))


def named(node: Any, name: str) -> Any:
    node.set_friendly_name(name)
    return node


def nf(opset: str, op: str, inputs: list[Any], attrs: dict[str, Any]) -> Any:
    return node_factory.NodeFactory(opset).create(op, [i.output(0) for i in inputs], attrs)


def ov_shape(ps: Any) -> str:
    """OpenVINO's PartialShape in bcast's notation (0..b is written 0..b, not ..b)."""
    if ps.rank.is_dynamic:
        return "[...]"
    dims: list[Dim] = []
    for d in ps:
        if d.is_static:
            dims.append(Dim(d.get_length()))
        else:
            hi = d.get_max_length()
            dims.append(Dim.interval(d.get_min_length(), None if hi == -1 else hi))
    return str(Shape(dims))


def save(model: Any, path: Path) -> Path:
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def propagated(path: Path) -> Result:
    return propagate(graph_of_ir(read_ir(path)), fallback=ir_fallback, debug=True)


def output_of(result: Result, name: str) -> tuple[Expr, ...] | None:
    """The propagated output dims of the layer ``name``."""
    [node] = [n for n in result.graph.nodes if n.name == name]
    return result.values[node.outputs[0]].shape


def agrees(dims: tuple[Expr, ...] | None, ps: Any, *, exact: bool = False) -> None:
    """What propagation knows of an output is what OpenVINO inferred (``ps``): the same rank, and each dim
    known as a number one OpenVINO's dim may be; ``exact`` (a model whose inputs are static): every dim,
    where OpenVINO's are all static. (A dynamic input dim is a symbol, which a dim OpenVINO narrows to a
    number, ``none`` mode's ``?`` met by a 3, keeps: the symbol's constraint says it must be 3.)"""
    if ps.rank.is_dynamic or dims is None:
        return
    want = Shape(ov_shape(ps))
    assert len(dims) == len(want), ([str(d) for d in dims], str(want))
    for e, d in zip(dims, want, strict=True):
        assert e.value is None or d.may_be(e.value), ([str(d) for d in dims], str(want))
    if exact and want.is_static:
        assert [e.value for e in dims] == [int(d) for d in want], ([str(d) for d in dims], str(want))


def at(report: Report, name: str) -> list[str]:
    """The kinds of the problems the report places at the layer ``name`` (errors and warnings)."""
    return [p.kind for p in report.problems if p.node == name]


def errors_at(report: Report, name: str) -> list[str]:
    return [p.kind for p in report.problems if p.node == name and p.severity == "error"]


Case = Callable[[], tuple[list[Any], list[Any]]]  # -> (outputs, parameters)


def _broadcast_cases() -> dict[str, Case]:
    def numpy1() -> tuple[list[Any], list[Any]]:
        x = param("x", [16, 1, 1])
        return [named(opset1.broadcast(x, const([1, 16, 50, 50])), "b")], [x]

    def numpy3_dynamic() -> tuple[list[Any], list[Any]]:
        x = param("x", [-1, (1, 10), 1])
        return [named(opset3.broadcast(x, const([2, 5, 4, 3]), broadcast_spec="NUMPY"), "b")], [x]

    def explicit1() -> tuple[list[Any], list[Any]]:
        x = param("x", [50, 50])
        return [named(opset1.broadcast(x, const([1, 50, 50, 16]), const([1, 2]), mode="EXPLICIT"), "b")], [x]

    def explicit3_interval() -> tuple[list[Any], list[Any]]:
        x = param("x", [(2, 3), 1])
        return [named(opset3.broadcast(x, const([3, 4, 5]), const([0, 2]), broadcast_spec="EXPLICIT"), "b")], [x]

    def bidirectional() -> tuple[list[Any], list[Any]]:
        x = param("x", [3, 1, (1, 4)])
        return [named(opset3.broadcast(x, const([2, 1, 6, 1], np.int32), broadcast_spec="BIDIRECTIONAL"), "b")], [x]

    def pdpd1() -> tuple[list[Any], list[Any]]:
        x = param("x", [3, 5])
        b = nf(
            "opset1",
            "Broadcast",
            [x, const([2, 3, 1]), const(0, np.uint8)],
            {"mode": "pdpd", "mode.auto_broadcast_axis": 1},
        )
        return [named(b, "b")], [x]

    def pdpd3() -> tuple[list[Any], list[Any]]:
        x = param("x", [1, 4])
        return [named(nf("opset3", "Broadcast", [x, const([2, 3, 4])], {"mode": "pdpd", "mode.mode.axis": 1}), "b")], [
            x
        ]

    def param_targets() -> tuple[list[Any], list[Any]]:
        x, t, t2, ax = (
            param("x", [2, 1]),
            param("t", [3], ov.Type.i64),
            param("t2", [-1], ov.Type.i32),
            param("ax", [2], ov.Type.i64),
        )
        return [
            named(opset3.broadcast(x, t, broadcast_spec="NUMPY"), "numpy_t"),
            named(opset3.broadcast(x, t, broadcast_spec="BIDIRECTIONAL"), "bidi_t"),
            named(opset3.broadcast(x, t2, broadcast_spec="BIDIRECTIONAL"), "bidi_unknown_len"),
            named(opset1.broadcast(x, t, const([0, 1]), mode="EXPLICIT"), "explicit_t"),
            named(opset3.broadcast(x, const([2, 5, 1]), ax, broadcast_spec="EXPLICIT"), "explicit_axes"),
        ], [x, t, t2, ax]

    def shapeof_targets() -> tuple[list[Any], list[Any]]:
        x, y, z, n = param("x", [1, 3]), param("y", [(1, 8), 4, 3]), param("z", [4, -1]), param("n", [1], ov.Type.i64)
        shape_y = opset3.shape_of(y)
        return [
            named(opset3.broadcast(x, shape_y, broadcast_spec="NUMPY"), "shapeof"),
            named(opset1.broadcast(x, opset1.shape_of(y), mode="NUMPY"), "shapeof_v1"),
            named(opset3.broadcast(x, opset1.concat([const([7]), shape_y], 0), broadcast_spec="NUMPY"), "concat_known"),
            named(
                opset3.broadcast(x, opset1.concat([opset1.convert(n, "i64"), const([5]), const([3])], 0)),
                "concat_unknown",
            ),
            named(opset3.broadcast(z, opset1.convert(shape_y, "i32"), broadcast_spec="BIDIRECTIONAL"), "convert"),
        ], [x, y, z, n]

    def dynamic_rank() -> tuple[list[Any], list[Any]]:
        x = param("x", None)
        return [
            named(opset3.broadcast(x, const([2, 3]), broadcast_spec="NUMPY"), "numpy_rank"),
            named(opset3.broadcast(x, const([2, 3]), broadcast_spec="BIDIRECTIONAL"), "bidi_rank"),
        ], [x]

    return {
        f.__name__: f
        for f in (
            numpy1,
            numpy3_dynamic,
            explicit1,
            explicit3_interval,
            bidirectional,
            pdpd1,
            pdpd3,
            param_targets,
            shapeof_targets,
            dynamic_rank,
        )
    }


def _eltwise_cases() -> dict[str, Case]:
    def numpy_ops() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [2, 1, 5]), param("b", [3, 1])
        ops = (
            "add",
            "subtract",
            "multiply",
            "maximum",
            "minimum",
            "squared_difference",
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
        )
        return [named(getattr(opset1, op)(a, b), op) for op in ops], [a, b]

    def intervals() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [(1, 5), -1, 3]), param("b", [(3, 8), 1])
        return [named(opset1.add(a, b), "add_iv"), named(opset1.multiply(b, a), "mul_iv")], [a, b]

    def none_mode() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [2, -1]), param("b", [-1, 3])
        return [named(opset1.subtract(a, b, auto_broadcast="NONE"), "sub_none")], [a, b]

    def pdpd_mode() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [2, 3, 4, 5]), param("b", [3, 4])
        attrs = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": 1}
        return [
            named(nf("opset1", "Add", [a, b], attrs), "add_pdpd"),
            named(nf("opset1", "Maximum", [a, b], attrs), "max_pdpd"),
        ], [a, b]

    def int_ops() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [4, 1], ov.Type.i32), param("b", [3], ov.Type.i32)
        return [
            named(opset1.floor_mod(a, b), "floor_mod"),
            named(opset1.mod(a, b), "mod"),
            named(opset1.divide(a, b), "divide"),
            named(opset1.power(a, b), "power"),
            named(opset13.bitwise_and(a, b), "bitwise_and"),
        ], [a, b]

    def logical() -> tuple[list[Any], list[Any]]:
        a, b = param("a", [2, 1], ov.Type.boolean), param("b", [1, 3], ov.Type.boolean)
        return [named(opset1.logical_and(a, b), "and"), named(opset1.logical_xor(a, b), "xor")], [a, b]

    def select() -> tuple[list[Any], list[Any]]:
        c, t, e = param("c", [2, 1, 1], ov.Type.boolean), param("t", [3, 1]), param("e", [4])
        c2, t2, e2 = param("c2", [3], ov.Type.boolean), param("t2", [2, 3]), param("e2", [2, 3])
        return [
            named(opset1.select(c, t, e), "select"),
            named(opset1.select(opset1.convert(t2, "boolean"), t2, e2, auto_broadcast="NONE"), "select_none"),
            named(
                nf(
                    "opset1",
                    "Select",
                    [c2, t2, e2],
                    {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": -1},
                ),
                "select_pdpd",
            ),
        ], [c, t, e, c2, t2, e2]

    def fake_quantize() -> tuple[list[Any], list[Any]]:
        x, lo, hi = param("x", [2, 3, 4]), param("lo", [3, 1]), param("hi", [1])
        return [named(opset1.fake_quantize(x, lo, hi, lo, hi, 5), "fq")], [x, lo, hi]

    def dynamic_rank() -> tuple[list[Any], list[Any]]:
        a, b = param("a", None), param("b", [2, 3])
        return [named(opset1.add(a, b), "add_rank"), named(opset1.add(b, a, auto_broadcast="NONE"), "add_none_rank")], [
            a,
            b,
        ]

    return {
        f.__name__: f
        for f in (numpy_ops, intervals, none_mode, pdpd_mode, int_ops, logical, select, fake_quantize, dynamic_rank)
    }


CASES = {
    **{f"broadcast_{k}": v for k, v in _broadcast_cases().items()},
    **{f"eltwise_{k}": v for k, v in _eltwise_cases().items()},
}


def _built(case: Case) -> tuple[Any, dict[str, Any]]:
    outputs, params = case()
    model = ov.Model(outputs, params, "m")
    return model, {op.get_friendly_name(): op for op in model.get_ordered_ops()}


# -- saved IR agrees with OpenVINO's shape inference ------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_saved_ir_agrees_with_openvino(case: str, tmp_path: Path) -> None:
    model, nodes = _built(CASES[case])
    path = save(model, tmp_path / "m.xml")
    result = propagated(path)
    broadcasting = {
        n for n, op in nodes.items() if op.get_type_name() == "Broadcast" or "auto_broadcast" in op.get_attributes()
    }
    assert {r.node.name for r in result.records} == broadcasting
    exact = all(p.get_partial_shape().is_static for p in model.get_parameters())
    for name in broadcasting:
        agrees(output_of(result, name), nodes[name].get_output_partial_shape(0), exact=exact)
    assert [f.message for f in result.findings if f.severity == "error" or f.kind == "quirk"] == []
    report = check(path)
    assert {n.name for n in report.nodes} == broadcasting
    assert not [p for p in report.problems if p.severity == "error" or p.kind == "quirk"], report.to_dict()


def test_partial_values_are_propagated(tmp_path: Path) -> None:
    """The values OpenVINO knows for each target, symbolically: ShapeOf keeps y's dim (OpenVINO's 1..8 is the
    symbol y_0), Concat its Const piece. (OpenVINO also knows concat_unknown's target as [?,5,3], a Concat
    of one unknown value and two constants; propagation knows no value of a Concat with an unknown piece.)"""
    model, _ = _built(_broadcast_cases()["shapeof_targets"])
    result = propagated(save(model, tmp_path / "m.xml"))
    nodes = {n.name: n for n in result.graph.nodes}

    def target(name: str) -> list[str]:
        data = result.values[nodes[name].inputs[1]].data
        assert data is not None, name
        return [str(e) for e in data]

    assert target("shapeof") == ["y_0", "4", "3"]
    assert target("concat_known") == ["7", "y_0", "4", "3"]
    assert [str(d) for d in output_of(result, "shapeof") or ()] == ["y_0", "4", "3"]


def test_model_to_dict_and_navigation(tmp_path: Path) -> None:
    model, _ = _built(_broadcast_cases()["explicit1"])
    m = read_ir(save(model, tmp_path / "m.xml"))
    b = m.layer("b")
    assert (b.type, b.version, b.data["mode"]) == (
        "Broadcast",
        "opset1",
        "none",
    )  # Broadcast-1 writes explicit as "none"
    assert m.layer(b.id) is b
    src = m.producer(b, b.inputs[1].id)
    assert src is not None and src[0].type == "Const"
    assert m.const_value(src[0]).tolist() == [1, 50, 50, 16]
    d = m.to_dict()
    assert any(layer["name"] == "b" for layer in d["layers"]) and d["edges"]
    with pytest.raises(KeyError, match="no layer with name 'nope'"):
        m.layer("nope")


# -- mutated IR: openvino's reader re-runs shape inference and is the oracle -----------------------


def _set_param_shapes(xml: Path, shapes: dict[str, str], out: Path) -> Path:
    """Rewrite the named Parameters' shape (attribute, port dims, and the dims of every port they feed)."""
    tree = ET.parse(xml)
    root = tree.getroot()
    ids: dict[str, Shape] = {}
    for layer in root.iter("layer"):
        if layer.get("type") == "Parameter" and layer.get("name") in shapes:
            s = Shape(shapes[str(layer.get("name"))])
            data = layer.find("data")
            assert data is not None
            data.set("shape", str(s)[1:-1] if s.rank is not None else "...")
            ids[str(layer.get("id"))] = s
    ports = {(e.get("to-layer"), e.get("to-port")) for e in root.iter("edge") if e.get("from-layer") in ids}
    feeds = {
        (e.get("to-layer"), e.get("to-port")): ids[str(e.get("from-layer"))]
        for e in root.iter("edge")
        if e.get("from-layer") in ids
    }
    for layer in root.iter("layer"):
        lid = layer.get("id")
        targets = [(p, ids[str(lid)]) for p in layer.iterfind("output/port")] if lid in ids else []
        targets += [(p, feeds[(lid, p.get("id"))]) for p in layer.iterfind("input/port") if (lid, p.get("id")) in ports]
        for port, s in targets:
            for d in list(port):
                port.remove(d)
            for d in s.dims if s.rank is not None else ():
                ET.SubElement(port, "dim").text = str(int(d)) if d.is_static else "-1"
    tree.write(out)
    (out.with_suffix(".bin")).write_bytes(xml.with_suffix(".bin").read_bytes())
    return out


def _ov_read(path: Path) -> dict[str, str] | str:
    """Output shape per node as openvino reads the file, or the text of the error it raises."""
    try:
        m = ov.Core().read_model(str(path))
    except RuntimeError as e:
        return str(e)
    return {
        op.get_friendly_name(): ov_shape(op.get_output_partial_shape(0))
        for op in m.get_ordered_ops()
        if op.get_output_size()
    }


def _agrees_with_reader(path: Path, name: str) -> None:
    """``bcast check`` on a mutated file against openvino reading it.

    Where openvino refuses the file, the check must not call the layer fine: a problem at it, or a
    constraint from it (a dim the IR gives as an interval is a symbol to propagation, so that a clash of
    intervals is a constraint on it, which the report lists). Where openvino accepts it, the file is saved
    again by openvino, so that the declared dims downstream of the mutation are openvino's own: the check
    must then report no error at the layer (but where a quirk says OpenVINO accepts inputs without a defined
    result) and agree with openvino's output.
    """
    try:
        model = ov.Core().read_model(str(path))
    except RuntimeError as e:
        refusal: str | None = str(e)
    else:
        refusal = None
    if refusal is not None:
        report = check(path)
        constrained = [c.dim for c in report.constraints if name in c.nodes]
        assert at(report, name) or constrained, (refusal, report.to_dict())
        return
    [op] = [op for op in model.get_ordered_ops() if op.get_friendly_name() == name]
    resaved = save(model, path.with_name("resaved.xml"))
    report = check(resaved)
    if "quirk" in at(report, name):  # OpenVINO accepts what has no defined result: an error may say why
        return
    assert errors_at(report, name) == [], report.to_dict()
    agrees(output_of(propagated(resaved), name), op.get_output_partial_shape(0))


DIM_TEXT = st.sampled_from(["1", "1", "2", "3", "4", "?", "1..3", "2..4", "0"])
SHAPES = st.lists(DIM_TEXT, min_size=0, max_size=4).map(lambda ds: "[" + ",".join(ds) + "]")
MUTATION = settings(max_examples=40, deadline=None)


@pytest.fixture(scope="module")
def base_irs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("base")
    x = param("x", [1, 1, 1])
    models = {
        "numpy": [named(opset3.broadcast(x, const([2, 1, 4, 3]), broadcast_spec="NUMPY"), "b")],
        "bidirectional": [named(opset3.broadcast(x, const([2, 1, 4]), broadcast_spec="BIDIRECTIONAL"), "b")],
        "explicit": [named(opset1.broadcast(x, const([3, 2, 4, 1]), const([0, 1, 3]), mode="EXPLICIT"), "b")],
        "pdpd": [
            named(nf("opset3", "Broadcast", [x, const([2, 3, 4, 1])], {"mode": "pdpd", "mode.mode.axis": 1}), "b")
        ],
    }
    out = {k: save(ov.Model(v, [x], k), d / f"{k}.xml") for k, v in models.items()}
    a, b = param("a", [1, 1, 1]), param("b", [1, 1, 1])
    attrs = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": -1}
    elt = {
        "add_numpy": named(opset1.add(a, b), "e"),
        "add_none": named(opset1.add(a, b, auto_broadcast="NONE"), "e"),
        "add_pdpd": named(nf("opset1", "Add", [a, b], attrs), "e"),
    }
    out.update({k: save(ov.Model([v], [a, b], k), d / f"{k}.xml") for k, v in elt.items()})
    return out


@MUTATION
@given(mode=st.sampled_from(["numpy", "bidirectional", "explicit", "pdpd"]), data=SHAPES)
def test_mutated_broadcast_data_matches_openvino_reader(
    mode: str, data: str, base_irs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = _set_param_shapes(base_irs[mode], {"x": data}, tmp_path_factory.mktemp("mut") / "m.xml")
    _agrees_with_reader(path, "b")


@MUTATION
@given(mode=st.sampled_from(["add_numpy", "add_none", "add_pdpd"]), a=SHAPES, b=SHAPES)
def test_mutated_eltwise_shapes_match_openvino_reader(
    mode: str, a: str, b: str, base_irs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = _set_param_shapes(base_irs[mode], {"a": a, "b": b}, tmp_path_factory.mktemp("mut") / "m.xml")
    _agrees_with_reader(path, "e")


def test_clash_is_reported_with_axis_and_dims(base_irs: dict[str, Path], tmp_path: Path) -> None:
    path = _set_param_shapes(base_irs["numpy"], {"x": "[5,3]"}, tmp_path / "m.xml")
    assert isinstance(_ov_read(path), str)  # openvino refuses the file
    report = check(path)
    [p] = report.problems
    assert (p.node, p.kind, p.axis, p.dims) == ("b", "cannot-broadcast", 2, (5, 4)), p.to_dict()
    assert "[5,3]" in p.message and p.severity == "error"


@pytest.mark.parametrize(
    ("declared", "axis"),
    [
        (["2", "1", "4", "7"], 3),
        (["2", "3", "4", "3"], 1),  # the rule's 1 is static: a declared 3 contradicts it
        (["2", "1", "4"], None),  # the rank
        (["-1", "1", "4", "3"], False),  # a dim the IR leaves unknown contradicts nothing
        ([], False),  # no dims: a scalar or a dynamic rank, the IR cannot tell which
    ],
)
def test_wrong_declared_output_is_reported(
    declared: list[str], axis: int | bool | None, base_irs: dict[str, Path], tmp_path: Path
) -> None:
    """The declared output is evidence, not truth: a contradiction is a warning (``declared-shape``) and the
    derived shape goes on, as openvino itself re-infers it."""
    tree = ET.parse(base_irs["numpy"])
    [port] = [layer.find("output/port") for layer in tree.getroot().iter("layer") if layer.get("name") == "b"]
    assert port is not None
    for d in list(port):
        port.remove(d)
    for d in declared:
        ET.SubElement(port, "dim").text = d
    path = tmp_path / "m.xml"
    tree.write(path)
    path.with_suffix(".bin").write_bytes(base_irs["numpy"].with_suffix(".bin").read_bytes())
    oracle = _ov_read(path)  # openvino itself re-infers [2,1,4,3], whatever the file declares
    assert isinstance(oracle, dict) and oracle["b"] == "[2,1,4,3]"
    assert [str(d) for d in output_of(propagated(path), "b") or ()] == ["2", "1", "4", "3"]
    report = check(path)
    if axis is False:
        assert report.clean, report.to_dict()
        return
    assert [(p.node, p.kind, p.axis, p.severity) for p in report.problems] == [("b", "declared-shape", axis, "warning")]


def test_input_port_dims_are_not_read(base_irs: dict[str, Path], tmp_path: Path) -> None:
    """An input port's dims say nothing the producer does not: openvino's reader takes the producer's shape,
    and so does propagation."""
    tree = ET.parse(base_irs["numpy"])
    [port] = [layer.find("input/port") for layer in tree.getroot().iter("layer") if layer.get("name") == "b"]
    assert port is not None
    port[0].text = "5"  # x is [1,1,1]; the Broadcast's data port now claims [5,1,1]
    path = tmp_path / "m.xml"
    tree.write(path)
    path.with_suffix(".bin").write_bytes(base_irs["numpy"].with_suffix(".bin").read_bytes())
    oracle = _ov_read(path)
    assert isinstance(oracle, dict) and oracle["b"] == "[2,1,4,3]"
    result = propagated(path)
    [node] = [n for n in result.graph.nodes if n.name == "b"]
    assert [str(d) for d in result.values[node.inputs[0]].shape or ()] == ["1", "1", "1"]
    assert check(path).clean


# -- values: evaluate_layer against the CPU plugin ---------------------------------------------------

VALUE_CASES = [
    "broadcast_numpy1",
    "broadcast_explicit1",
    "broadcast_bidirectional",
    "broadcast_pdpd3",
    "eltwise_numpy_ops",
    "eltwise_pdpd_mode",
    "eltwise_int_ops",
    "eltwise_logical",
    "eltwise_select",
    "eltwise_fake_quantize",
]


def _random(param: Any) -> np.ndarray:
    shape = tuple(d.get_length() if d.is_static else 3 for d in param.get_output_partial_shape(0))
    t = param.get_element_type()
    if t == ov.Type.boolean:
        return RNG.integers(0, 2, shape).astype(bool)
    if t == ov.Type.i32:
        return RNG.integers(1, 6, shape).astype(np.int32)  # positive: Divide/Mod by zero is undefined
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("case", VALUE_CASES)
def test_evaluate_layer_matches_cpu(case: str, tmp_path: Path) -> None:
    model, _ = _built(CASES[case])
    params = {p.get_friendly_name(): p for p in model.get_parameters()}
    if case == "broadcast_bidirectional":  # the interval dim needs a size for the CPU plugin
        model.reshape({params["x"].output(0): ov.PartialShape([3, 1, 4])})
    feed = {name: _random(p) for name, p in params.items()}
    compiled = ov.Core().compile_model(model, "CPU")
    results = compiled([feed[p.get_friendly_name()] for p in model.get_parameters()])
    # Results in model order (the CPU plugin renames some producers, e.g. adding a Convert after a boolean op).
    cpu = {
        res.get_node().input_value(0).get_node().get_friendly_name(): results[out]
        for res, out in zip(model.outputs, compiled.outputs, strict=True)
    }
    ir = read_ir(save(model, tmp_path / "m.xml"))
    layers = [layer for layer in ir.topological() if is_broadcasting(layer)]
    assert {layer.name for layer in layers} == set(cpu)  # every broadcasting layer is an output, and is compared
    for layer in layers:
        args: dict[int, Any] = {}
        for i, port in enumerate(layer.inputs):
            src = ir.producer(layer, port.id)
            assert src is not None
            if src[0].name in feed:
                args[i] = feed[src[0].name]
            elif src[0].type == "Convert":  # select_none's condition: Convert(t2 -> boolean)
                args[i] = feed["t2"] != 0
        got = evaluate_layer(ir, layer.name, args)
        want = np.asarray(cpu[layer.name])
        assert got.shape == want.shape, layer.name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=layer.name)
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=layer.name)


def test_evaluate_layer_errors(tmp_path: Path) -> None:
    model, _ = _built(_broadcast_cases()["numpy1"])
    ir = read_ir(save(model, tmp_path / "m.xml"))
    with pytest.raises(IRError, match=r"fed by 'x'.*give its array"):
        evaluate_layer(ir, "b", {})
    with pytest.raises(IRError, match="not a broadcasting layer"):
        evaluate_layer(ir, "x", {})
    with pytest.raises(TypeError, match=r"inputs 0\.\.2"):
        evaluate_layer(ir, "b", {5: np.ones(3)})
    from bcast.errors import BroadcastError

    with pytest.raises(BroadcastError):  # data [16,2,1] does not fit numpy into [1,16,50,50]
        evaluate_layer(ir, "b", {0: np.ones((16, 2, 1), np.float32)})


# -- the IR snippets of the Broadcast-1 specification -------------------------------------------------

SPEC_SNIPPETS = [
    ("numpy", [16, 1, 1], [1, 16, 50, 50], None, [1, 16, 50, 50]),
    ("explicit", [16], [1, 16, 50, 50], [1], [1, 16, 50, 50]),
    ("explicit", [50, 50], [1, 50, 50, 16], [1, 2], [1, 50, 50, 16]),
]


def _spec_layers() -> list[str]:
    text = SPEC.read_text()
    return re.findall(r"<layer \.\.\. type=\"Broadcast\" \.\.\.>.*?</layer>", text, flags=re.S)


def _spec_ir(snippet: str, data: list[int], target: list[int], axes: list[int] | None) -> tuple[str, bytes]:
    """The snippet completed into a whole IR: a Parameter, Const target/axes (values from its comments), a Result."""
    body = snippet.replace(
        '<layer ... type="Broadcast" ...>', '<layer id="9" name="b" type="Broadcast" version="opset1">'
    )
    # openvino's reader insists on a precision for every port, which the snippets leave out: the data
    # input and the output are f32, target_shape and axes_mapping i64.
    head, sep, tail = body.partition("<output>")
    first = head.index('<port id="0">') + len('<port id="0">')
    head = head[:first].replace('<port id="0">', '<port id="0" precision="FP32">') + re.sub(
        r'<port id="(\d+)">', r'<port id="\1" precision="I64">', head[first:]
    )
    body = head + sep + re.sub(r'<port id="(\d+)">', r'<port id="\1" precision="FP32">', tail)
    dims = "".join(f"<dim>{d}</dim>" for d in data)
    weights = np.asarray(target, np.int64).tobytes() + np.asarray(axes or [], np.int64).tobytes()
    consts = (
        f'<layer id="1" name="t" type="Const" version="opset1"><data element_type="i64" shape="{len(target)}" '
        f'offset="0" size="{8 * len(target)}"/><output><port id="0" precision="I64"><dim>{len(target)}</dim>'
        "</port></output></layer>"
    )
    edges = (
        '<edge from-layer="0" from-port="0" to-layer="9" to-port="0"/><edge from-layer="1" from-port="0" '
        'to-layer="9" to-port="1"/>'
    )
    if axes is not None:
        consts += (
            f'<layer id="2" name="ax" type="Const" version="opset1"><data element_type="i64" '
            f'shape="{len(axes)}" offset="{8 * len(target)}" size="{8 * len(axes)}"/><output>'
            f'<port id="0" precision="I64"><dim>{len(axes)}</dim></port></output></layer>'
        )
        edges += '<edge from-layer="2" from-port="0" to-layer="9" to-port="2"/>'
    out_dims = re.search(r'<output>\s*<port id="(\d+)"[^>]*>(.*?)</port>', body, flags=re.S)
    assert out_dims is not None
    result = (
        f'<layer id="10" name="r" type="Result" version="opset1"><input><port id="0">{out_dims.group(2)}'
        "</port></input></layer>"
    )
    edges += f'<edge from-layer="9" from-port="{out_dims.group(1)}" to-layer="10" to-port="0"/>'
    xml = (
        f'<?xml version="1.0"?><net name="spec" version="11"><layers><layer id="0" name="x" type="Parameter" '
        f'version="opset1"><data shape="{",".join(map(str, data))}" element_type="f32"/><output><port id="0" '
        f'precision="FP32">{dims}</port></output></layer>{consts}{body}{result}</layers><edges>{edges}</edges></net>'
    )
    return xml, weights


def _renumbered(snippet: str) -> str:
    """The snippet with axes_mapping on port 2 and the output on port 3, as OpenVINO numbers them."""
    head, sep, tail = snippet.partition("<output>")
    second = head.index('<port id="1">', head.index('<port id="1">') + 1)
    head = head[:second] + '<port id="2">' + head[second + len('<port id="1">') :]
    return head + sep + tail.replace('<port id="2">', '<port id="3">', 1)


@pytest.mark.parametrize(("i", "snippet"), list(enumerate(SPEC_SNIPPETS)))
def test_spec_snippets(i: int, snippet: tuple[Any, ...], tmp_path: Path) -> None:
    layers = _spec_layers()
    assert len(layers) == len(SPEC_SNIPPETS)
    mode, data, target, axes, out = snippet
    assert f'mode="{mode}"' in layers[i]
    xml, weights = _spec_ir(layers[i], data, target, axes)
    if axes is not None:
        # The spec numbers both target_shape and axes_mapping port 1: an edge cannot tell them apart.
        with pytest.raises(IRError, match="two input ports with the same id"):
            parse_ir(xml, weights)
        xml, weights = _spec_ir(_renumbered(layers[i]), data, target, axes)
    (tmp_path / "m.xml").write_text(xml)
    (tmp_path / "m.bin").write_bytes(weights)
    oracle = _ov_read(tmp_path / "m.xml")  # openvino reads the completed snippet and infers the output
    assert isinstance(oracle, dict), oracle
    assert oracle["b"] == str(Shape(out))
    report = check(tmp_path / "m.xml")
    [node] = report.nodes
    assert (node.rule, node.output, report.clean) == (f"OpenVINO Broadcast-1 {mode}", str(Shape(out)), True)
    result = propagated(tmp_path / "m.xml")
    [b] = [n for n in result.graph.nodes if n.name == "b"]
    assert [str(e) for e in result.values[b.inputs[1]].data or ()] == [str(v) for v in target]
    [record] = result.records  # how the rule lined the data up: explicit, on the axes mapping
    assert (record.mode, record.axes) == (("explicit", tuple(axes)) if axes is not None else ("numpy", None))
    got = evaluate_layer(
        read_ir(tmp_path / "m.xml"), "b", {0: np.arange(np.prod(data), dtype=np.float32).reshape(data)}
    )
    assert got.shape == tuple(out)


# -- malicious and corrupt files ---------------------------------------------------------------------

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE net [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<net name="&lol9;" version="11"><layers/></net>"""

MALICIOUS = {
    "billion_laughs": (BILLION_LAUGHS, "DOCTYPE"),
    "external_entity": (
        '<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<net><layers><layer id='0' name='&x;' type='Relu'/></layers></net>",
        "DOCTYPE",
    ),
    "external_dtd": ('<!DOCTYPE net SYSTEM "http://127.0.0.1:9/x.dtd"><net><layers/></net>', "DOCTYPE"),
    "parameter_entity": ('<!DOCTYPE net [<!ENTITY % p SYSTEM "http://127.0.0.1:9/p">%p;]><net/>', "DOCTYPE"),
    "not_xml": ("<net><layers></net>", "not well-formed"),
    "not_an_ir": ("<model/>", "not <net>"),
    "no_layers": ("<net/>", "no <layers>"),
    "bad_id": ("<net><layers><layer id='x' name='a' type='Relu'/></layers></net>", "'x', not an integer"),
    "duplicate_id": (
        "<net><layers><layer id='0' name='a' type='Relu'/><layer id='0' name='b' type='Relu'/></layers></net>",
        "two layers have id 0",
    ),
    "bad_dim": (
        "<net><layers><layer id='0' name='a' type='Relu'><output><port id='0'><dim>x</dim></port></output>"
        "</layer></layers></net>",
        "dim 0 is 'x'",
    ),
    "negative_dim": (
        "<net><layers><layer id='0' name='a' type='Relu'><output><port id='0'><dim>-5</dim></port>"
        "</output></layer></layers></net>",
        "dim 0 is '-5'",
    ),
    "dangling_edge": (
        "<net><layers><layer id='0' name='a' type='Relu'/></layers><edges><edge from-layer='0' "
        "from-port='0' to-layer='7' to-port='0'/></edges></net>",
        "layer 7, which does not exist",
    ),
    "bad_port_edge": (
        "<net><layers><layer id='0' name='a' type='Relu'><output><port id='1'/></output></layer>"
        "<layer id='1' name='b' type='Relu'><input><port id='0'/></input></layer></layers><edges>"
        "<edge from-layer='0' from-port='3' to-layer='1' to-port='0'/></edges></net>",
        "output port 3 of layer 'a'",
    ),
}


@pytest.mark.parametrize("case", MALICIOUS, ids=str)
def test_malicious_or_malformed_xml_is_refused(case: str, tmp_path: Path) -> None:
    text, message = MALICIOUS[case]
    with pytest.raises(IRError, match=re.escape(message)):
        parse_ir(text)
    path = tmp_path / "m.xml"
    path.write_text(text)
    with pytest.raises(IRError, match=re.escape(str(path))):  # read_ir names the file
        read_ir(path)


def _relu_chain(dims: list[str]) -> str:
    """Relu layers in a chain, each on its own line, whose output ports have ``dims`` (one per layer)."""
    layers = "".join(
        f"\n<layer id='{i}' name='r{i}' type='Relu' version='opset1'>"
        f"<output><port id='1' precision='FP32'><dim>{d}</dim><dim>4</dim></port></output></layer>"
        for i, d in enumerate(dims)
    )
    return f"<net version='11'><layers>{layers}\n</layers><edges/></net>"


def test_equal_ports_are_read_once_and_a_bad_one_after_them_is_refused_at_its_line() -> None:
    """A port is immutable: the ports an IR repeats (the same id, dims and precision) are one object. A port that
    differs in any of them is read on its own, and a bad one is refused with its own layer and line."""
    model = parse_ir(_relu_chain(["-1", "-1", "-1", "3"]))
    ports = [layer.outputs[0] for layer in model.layers]
    assert ports[0] is ports[1] is ports[2] and ports[3] is not ports[0]
    assert [str(p.shape) for p in ports] == ["[?,4]", "[?,4]", "[?,4]", "[3,4]"]
    with pytest.raises(IRError, match=re.escape("line 5: layer 'r3'")) as e:
        parse_ir(_relu_chain(["-1", "-1", "-1", "x"]))
    assert "dim 0 is 'x'" in str(e.value)


def _expat_layer_lines(text: str) -> list[int]:
    """The line of each ``<layer>`` start tag, by expat itself: the oracle of the lines the reader keeps."""
    from xml.parsers import expat

    lines: list[int] = []
    p = expat.ParserCreate()

    def start(tag: str, _: object) -> None:
        if tag == "layer":
            lines.append(p.CurrentLineNumber)

    p.StartElementHandler = start
    p.Parse(text.encode(), True)
    return lines


#: one IR, spelled in ways that ElementTree's own parser may read (with the layers' lines found by a scan) or that
#: must go to the careful reader; each gives the same layers, at the lines expat gives
SPELLINGS: dict[str, tuple[Callable[[str], str], bool]] = {
    "as OpenVINO writes it": (lambda t: t, True),
    "a declaration first": (lambda t: '<?xml version="1.0"?>\n' + t, True),
    "a tag spelled in a comment": (lambda t: t.replace("<layers>", "<layers><!-- <layer id='9'> -->\n"), False),
    "a tag spelled in CDATA": (lambda t: t.replace("<layers>", "<layers><![CDATA[<layer \n]]>"), False),
    "a tag spelled in a processing instruction": (lambda t: t.replace("<layers>", "<layers><?pi <layer ?>\n"), False),
    "carriage returns": (lambda t: t.replace("\n", "\r\n"), False),
    "a namespace": (lambda t: t.replace("<net ", "<net xmlns:x='urn:x' "), False),
    "an undefined entity": (lambda t: t.replace("name='r2'", "name='&x;'"), False),
}


@pytest.mark.parametrize("spelling", SPELLINGS, ids=str)
def test_the_fast_read_keeps_every_layer_and_its_line(spelling: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from bcast.openvino import ir_read

    careful: list[int] = []
    parse = ir_read._Reader.parse
    monkeypatch.setattr(ir_read._Reader, "parse", lambda self, chunks: careful.append(1) or parse(self, chunks))
    text = _relu_chain(["-1", "-1", "2", "3"]).replace("<layer ", "<layer\n  ", 1)
    spelled, fast = SPELLINGS[spelling]
    spelled_text = spelled(text)
    if spelling == "an undefined entity":  # not well-formed: refused by the careful reader, in its words
        with pytest.raises(IRError, match="undefined entity"):
            parse_ir(spelled_text)
        assert careful == [1]
        return
    model = parse_ir(spelled_text)
    assert careful == ([] if fast else [1])
    assert [layer.name for layer in model.layers] == ["r0", "r1", "r2", "r3"]
    assert [str(layer.outputs[0].shape) for layer in model.layers] == ["[?,4]", "[?,4]", "[2,4]", "[3,4]"]
    assert [layer.line for layer in model.layers] == _expat_layer_lines(spelled_text.replace("\r\n", "\n"))


@pytest.mark.parametrize("fast", [True, False], ids=["as written", "with a comment"])
def test_a_fault_found_by_the_fast_read_is_said_at_its_line(fast: bool, tmp_path: Path) -> None:
    """The fast read knows the layers' lines only: a fault it finds is read again by the careful reader, whose
    message names the line of the element at fault (a port, an edge), as when the careful reader read first."""
    text = _relu_chain(["-1", "-1", "-1", "x"]) if fast else "<!-- c -->" + _relu_chain(["-1", "-1", "-1", "x"])
    path = tmp_path / "m.xml"
    path.write_text(text)
    for read in (lambda: parse_ir(text), lambda: read_ir(path)):
        with pytest.raises(IRError, match=re.escape("line 5: layer 'r3'")) as e:
            read()
        assert "dim 0 is 'x'" in str(e.value)
    edge = text.replace("<edges/>", "<edges>\n<edge from-layer='0' from-port='1' to-layer='7' to-port='0'/></edges>")
    with pytest.raises(IRError, match=re.escape("line 7: ")):
        parse_ir(edge.replace(">x<", ">3<"))


@pytest.mark.parametrize("fast", [True, False], ids=["as written", "with a comment"])
def test_each_layer_of_the_tree_is_let_go_once_read(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parsed tree and the model built from it are never whole together: when a layer is read, no layer
    read before it is still held (by the tree, its lines or the reader), so the tree shrinks as the model grows."""
    import weakref

    from bcast.openvino import ir_read

    seen: list[weakref.ref[ET.Element]] = []
    held: list[int] = []
    layer = ir_read._Ctx.layer

    def counting(self: Any, el: ET.Element, *args: Any) -> Any:
        held.append(sum(r() is not None for r in seen))
        seen.append(weakref.ref(el))
        return layer(self, el, *args)

    monkeypatch.setattr(ir_read._Ctx, "layer", counting)
    text = _relu_chain(["-1"] * 50)
    model = parse_ir(text if fast else "<!-- c -->" + text)
    assert len(model.layers) == 50 and [layer.line for layer in model.layers][-1] == 51
    assert held == [0] * 50, held


def _two_inputs_ir(first: tuple[str, str], second: tuple[str, str]) -> str:
    """Two Parameters ``(layer name, tensor names)`` added: ``[?, 4]`` each."""
    layers = "".join(
        f"<layer id='{i}' name='{name}' type='Parameter' version='opset1'><data shape='?,4' element_type='f32'/>"
        f"<output><port id='0' precision='FP32' names='{names}'><dim>-1</dim><dim>4</dim></port></output></layer>"
        for i, (name, names) in enumerate((first, second))
    )
    add = (
        "<layer id='2' name='add' type='Add' version='opset1'><input><port id='0'><dim>-1</dim><dim>4</dim></port>"
        "<port id='1'><dim>-1</dim><dim>4</dim></port></input><output><port id='2' precision='FP32'><dim>-1</dim>"
        "<dim>4</dim></port></output></layer>"
    )
    edges = "".join(f"<edge from-layer='{i}' from-port='0' to-layer='2' to-port='{i}'/>" for i in (0, 1))
    return f"<net name='n' version='11'><layers>{layers}{add}</layers><edges>{edges}</edges></net>"


@pytest.mark.parametrize(
    ("first", "second", "inputs"),
    [
        (("x", "x"), ("y", "y"), ["x", "y"]),
        # OpenVINO's torch frontend names the layers of flattened inputs by number, their tensors by the caller's names
        (("3", "past_key_0"), ("4", "past_value_0"), ["past_key_0", "past_value_0"]),
        # a conversion adds the name of a cast it folded into the input: the layer's own name is among the tensor's
        (("mask", "/m/Cast_output_0,mask"), ("y", ""), ["mask", "y"]),
    ],
)
def test_an_ir_input_is_called_by_the_name_a_caller_feeds_it_by(
    first: tuple[str, str], second: tuple[str, str], inputs: list[str], tmp_path: Path
) -> None:
    """An IR input is called by its layer's name where that is one of its tensor's names, else by its tensor's first
    name: the root causes, the dims' symbols (``past_key_0_0``) and the messages say what the caller feeds."""
    text = _two_inputs_ir(first, second)
    assert list(graph_of_ir(parse_ir(text)).inputs) == inputs
    path = tmp_path / "m.xml"
    path.write_text(text)
    (link,) = check(str(path)).constraints  # the two batches: a link between the inputs' unnamed dims
    assert link.relation and {f"{name}_0" for name in inputs} <= set(re.findall(r"[\w/]+_0", link.allowed))


def _const_ir(data: str) -> str:
    return (
        f"<net version='11'><layers><layer id='0' name='c' type='Const' version='opset1'><data {data}/>"
        "<output><port id='0' precision='I64'><dim>2</dim></port></output></layer></layers><edges/></net>"
    )


BAD_CONSTS = {
    "past_end": ('element_type="i64" shape="2" offset="8" size="16"', "past the end"),
    "huge_offset": ('element_type="i64" shape="2" offset="99999999999999999999" size="16"', "past the end"),
    "negative_offset": ('element_type="i64" shape="2" offset="-8" size="16"', "must not be negative"),
    "size_mismatch": ('element_type="i64" shape="2" offset="0" size="12"', "does not match 2 elements of i64"),
    "bad_element_type": ('element_type="i65" shape="2" offset="0" size="16"', "unknown element_type 'i65'"),
    "bad_shape": ('element_type="i64" shape="2,?" offset="0" size="16"', "shape '2,?'"),
    "missing_size": ('element_type="i64" shape="2" offset="0"', "lacks size"),
    "bad_size": ('element_type="i64" shape="2" offset="0" size="sixteen"', "'sixteen', not an integer"),
}


@pytest.mark.parametrize("case", BAD_CONSTS, ids=str)
def test_corrupt_constants_are_refused(case: str) -> None:
    data, message = BAD_CONSTS[case]
    with pytest.raises(IRError, match=re.escape(message)):
        parse_ir(_const_ir(data), bytes(16))


def test_truncated_or_missing_bin(tmp_path: Path) -> None:
    model, _ = _built(_broadcast_cases()["numpy1"])
    path = save(model, tmp_path / "m.xml")
    m = read_ir(path)
    assert m.const_value(next(layer for layer in m.layers if layer.type == "Const")).tolist() == [1, 16, 50, 50]
    data = path.with_suffix(".bin").read_bytes()
    path.with_suffix(".bin").write_bytes(data[:-3])
    with pytest.raises(IRError, match="truncated"):
        read_ir(path)
    path.with_suffix(".bin").unlink()
    with pytest.raises(IRError, match="is missing"):
        read_ir(path)
    with pytest.raises(IRError, match="does not exist"):
        read_ir(path, tmp_path / "other.bin")
    # The file shrinking after it was read is caught when the value is decoded.
    path.with_suffix(".bin").write_bytes(data)
    m = read_ir(path)
    path.with_suffix(".bin").write_bytes(data[:4])
    const = next(layer for layer in m.layers if layer.type == "Const")
    with pytest.raises(IRError, match="truncated after the model was read"):
        m.const_value(const)


@pytest.mark.parametrize(
    ("et", "raw", "expected"),
    [
        ("i64", np.array([-1, 5], "<i8").tobytes(), [-1, 5]),
        ("i32", np.array([7, -2], "<i4").tobytes(), [7, -2]),
        ("u64", np.array([2**63, 1], "<u8").tobytes(), [2**63, 1]),
        ("u8", bytes([3, 250]), [3, 250]),
        ("i8", np.array([-128, 127], "<i1").tobytes(), [-128, 127]),
        ("i16", np.array([-300, 2], "<i2").tobytes(), [-300, 2]),
        ("u16", np.array([65535, 0], "<u2").tobytes(), [65535, 0]),
        ("u32", np.array([2**32 - 1, 9], "<u4").tobytes(), [2**32 - 1, 9]),
        ("f64", np.array([0.1, -1e300], "<f8").tobytes(), [0.1, -1e300]),
        ("boolean", bytes([0, 2]), [False, True]),
        ("f16", np.array([1.5, -2], "<f2").tobytes(), [1.5, -2.0]),
        ("f32", np.array([0.25, 3], "<f4").tobytes(), [0.25, 3.0]),
        ("bf16", np.array([1.0, -3.0], "<f4").view("<u2")[1::2].tobytes(), [1.0, -3.0]),
    ],
)
def test_element_types_decode_like_openvino(et: str, raw: bytes, expected: list[Any], tmp_path: Path) -> None:
    size = len(raw)
    xml = _const_ir(f'element_type="{et}" shape="2" offset="0" size="{size}"')
    value = parse_ir(xml, raw).const_value(parse_ir(xml, raw).layers[0])
    assert value.tolist() == expected
    # the neutral graph reads the common types' bytes without NumPy (struct): the same numbers
    data = graph_of_ir(parse_ir(xml, raw)).constants["c"].data
    assert data is not None
    assert [x.value if isinstance(x, Expr) else x for x in data] == expected
    # openvino reads the same bytes to the same values
    (tmp_path / "m.xml").write_text(
        xml.replace("<edges/>", "").replace(
            "</layers>",
            "<layer id='1' name='r' type='Result' version='opset1'><input><port id='0'><dim>2</dim></port>"
            "</input></layer></layers><edges><edge from-layer='0' from-port='0' to-layer='1' to-port='0'/></edges>",
        )
    )
    (tmp_path / "m.bin").write_bytes(raw)
    const = next(
        op for op in ov.Core().read_model(str(tmp_path / "m.xml")).get_ordered_ops() if op.get_type_name() == "Constant"
    )
    np.testing.assert_array_equal(const.get_data().astype(value.dtype) if et != "bf16" else value, value)
    if et != "bf16":
        assert const.get_data().tolist() == expected


def test_undecoded_element_type_is_a_clear_error() -> None:
    m = parse_ir(_const_ir('element_type="i4" shape="2" offset="0" size="1"'), bytes(1))
    with pytest.raises(IRError, match="element type i4 is not decoded"):
        m.const_value(m.layers[0])


def test_layers_inside_if_bodies_are_checked(tmp_path: Path) -> None:
    opset8 = pytest.importorskip("openvino.opset8", reason="openvino.opset8 (If) is missing")
    x, cond = param("x", [2, 1]), param("c", [], ov.Type.boolean)
    then_x, else_x = param("tx", [2, 1]), param("ex", [2, 1])
    then_add = named(opset1.add(then_x, const(np.ones(3), np.float32)), "then_add")
    else_bcast = named(opset3.broadcast(else_x, const([2, 3])), "else_bcast")
    then_body = ov.Model([opset1.result(then_add)], [then_x])
    else_body = ov.Model([opset1.result(else_bcast)], [else_x])
    node = opset8.if_op(cond)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x.output(0), then_x, else_x)
    node.set_friendly_name("if")
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    path = save(ov.Model([out], [x, cond], "m"), tmp_path / "m.xml")
    report = check(path)
    nodes = {n.name: n for n in report.nodes}
    expected = {"then_add": then_add, "else_bcast": else_bcast}
    assert set(nodes) == {f"if/{name.split('_')[0]}_body/{name}" for name in expected}
    for name, ov_node in expected.items():
        node = nodes[f"if/{name.split('_')[0]}_body/{name}"]
        assert node.output == ov_shape(ov_node.get_output_partial_shape(0)) == "[2,3]"
    assert report.clean, report.to_dict()


def test_the_per_layer_checker_is_gone_with_a_message_that_names_the_one_engine() -> None:
    import bcast.openvino as bov

    for name in ("check_ir", "LayerCheck"):
        with pytest.raises(AttributeError, match=r"bcast\.check\.check\(path\)"):
            getattr(bov, name)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        bov.nonesuch  # noqa: B018


def test_small_constants_are_read_with_one_opening_of_the_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's small constants are read from the ``.bin`` together (each opening is three system calls), their
    values those read one by one; a ``.bin`` cut short after the model was read leaves each constant its shape."""
    import bcast.openvino.ir_read as ir_read

    x = opset1.parameter([2, 3], np.float32, name="x")
    out = x
    for k in range(20):
        out = opset1.add(out, opset1.constant(np.full((3,), k, np.float32)))
    out = opset1.reshape(out, opset1.constant(np.array([3, 2], np.int64)), False)
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([out], [x]), str(xml), compress_to_fp16=False)
    opened: list[object] = []
    real = ir_read._open_regular

    def counted(path: Path) -> tuple[int, int]:
        opened.append(path)
        return real(path)

    monkeypatch.setattr(ir_read, "_open_regular", counted)
    model = read_ir(str(xml))
    before = len(opened)
    graph = graph_of_ir(model)
    assert len(opened) - before == 1  # the 21 constants in one reading
    one_by_one = read_ir(str(xml))
    consts = [layer for layer in one_by_one.layers if layer.type == "Const"]
    assert len(consts) == 21
    for layer in consts:
        value = one_by_one.const_value(layer)
        assert np.array_equal(model.const_value(layer), value)
    assert sum(v.data is not None for v in graph.constants.values()) == 21
    # cut the .bin after the model is read: no constant has a value, and the check goes on
    cut = read_ir(str(xml))
    xml.with_suffix(".bin").write_bytes(b"")
    graph = graph_of_ir(cut)
    assert len(graph.constants) == 21 and all(v.data is None for v in graph.constants.values())
    assert all(v.shape is not None for v in graph.constants.values())


@pytest.mark.parametrize(("shape", "runs"), [((-1, 16, 32), (2, 16, 32)), ((-1, 1, 32), (2, 1, 32))])
def test_an_ir_squeeze_of_an_axis_of_a_size_other_than_1_leaves_it(
    tmp_path: Path, shape: tuple[int, ...], runs: tuple[int, ...]
) -> None:
    """Squeeze-1 on axis 1 of ``[?, 16, 32]``: OpenVINO builds it as ``[?, 16, 32]`` and runs it (the PyTorch
    frontend's ``aten::squeeze(1)``, a no-op there in PyTorch too), where its spec says an error: no finding, and
    the axis is kept downstream (a MatMul by a [32, 8] weight then meets 32)."""
    ov = pytest.importorskip("openvino", reason="the IR is built and run by openvino", exc_type=ImportError)
    from openvino import opset1

    p = opset1.parameter(ov.PartialShape(list(shape)), ov.Type.f32, name="x")
    squeezed = opset1.squeeze(p, opset1.constant(np.array([1], np.int64)))
    out = opset1.matmul(squeezed, opset1.constant(np.ones((32, 8), np.float32)), False, False)
    xml = tmp_path / "squeeze.xml"
    ov.save_model(ov.Model([out], [p]), str(xml), compress_to_fp16=False)
    got = ov.Core().compile_model(str(xml), "CPU")({0: np.ones(runs, np.float32)})[0]
    report = check(str(xml))
    assert report.problems == [], report.render()
    want = runs[:1] + ((runs[1],) if runs[1] != 1 else ()) + (8,)
    assert got.shape == want
