"""``bcast.openvino`` against the real ``openvino`` package (2026.4.1) as oracle.

* Broadcast-1/-3 shape inference, every mode, random static and partial data shapes (``?``, intervals,
  dynamic rank) and targets of three kinds: integer Constants (several dtypes and ranks), partially known
  values (``ShapeOf`` of Parameters concatenated with Constants) and ``Unknown`` inputs (a Parameter): the
  output PartialShape must equal ours, and ours raises ``BroadcastError`` exactly where OpenVINO raises.
* elementwise auto-broadcast (``Add``) with none / numpy / pdpd (with axis), same comparison.
* values: models compiled on the CPU plugin against ``bcast.openvino.broadcast``; cases where the plugin is
  known to crash (SIGFPE on zero-element data, segfault on negative targets and scalar -> []) are never run
  in-process: the profile warns or refuses there, and only that is checked.
* a table per quirk: the QuirkWarning is emitted and the shape equals OpenVINO's; and the examples of
  ``bcast.openvino.DIFFERENCES`` hold (for the core and for the profile, the latter checked against OpenVINO).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcast
import bcast.openvino as bov
from bcast import BroadcastError, Dim, Shape

ov = pytest.importorskip("openvino", reason="openvino is not installed; the OpenVINO profile tests need it")
opset1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
opset3 = pytest.importorskip("openvino.opset3", reason="openvino.opset3 is missing")
node_factory = pytest.importorskip("openvino.utils.node_factory", reason="openvino's NodeFactory is missing")

OPSETS = {1: opset1, 3: opset3}
SHAPES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALUES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- OpenVINO side ---------------------------------------------------------------------------------


def to_shape(ps: Any) -> Shape:
    """An OpenVINO PartialShape as a bcast Shape (OpenVINO prints 0..b as ..b, so compare values, not text)."""
    if ps.rank.is_dynamic:
        return Shape.dynamic_rank()
    dims = []
    for d in ps:
        hi = d.get_max_length()
        dims.append(Dim(d.get_length()) if d.is_static else Dim.interval(d.get_min_length(), None if hi < 0 else hi))
    return Shape.of_dims(dims)


def ov_input(spec: Any) -> Any:
    """An OpenVINO node for a profile input: Constant, ShapeOf/Concat (partial value) or Parameter (Unknown)."""
    if isinstance(spec, bov.Unknown):
        return opset3.parameter(ov.PartialShape(str(spec.shape)), ov.Type(spec.dtype))
    if isinstance(spec, str):
        shape = Shape.parse(spec)
        if shape.rank is None:  # ShapeOf a tensor of unknown rank
            return opset3.shape_of(opset3.parameter(ov.PartialShape.dynamic(), ov.Type.f32))
        if shape.rank == 0:
            return ov.op.Constant(np.zeros((0,), np.int64))
        parts = [
            ov.op.Constant(np.array([int(d)], np.int64))
            if d.is_static
            else opset3.shape_of(opset3.parameter(ov.PartialShape(f"[{d}]"), ov.Type.f32))
            for d in shape
        ]
        return parts[0] if len(parts) == 1 else opset3.concat(parts, 0)
    # ov.op.Constant, not opsetN.constant: the latter refuses an empty array
    return ov.op.Constant(np.asarray(spec) if isinstance(spec, np.ndarray) else np.asarray(spec, np.int64))


def _rejection(err: Exception) -> str:
    return "OpenVINO rejects: " + [ln for ln in str(err).splitlines() if ln.strip()][-1].strip()


def ov_broadcast_node(data: Any, target: Any, mode: str, axes: Any, axis: int, opset: int) -> Any:
    """A Broadcast node built through NodeFactory, as the C++ constructors build it.

    Not the Python ``opsetN.broadcast`` wrappers: they drop the axes input unless the mode is spelled
    "EXPLICIT" (so "none" loses it), and give pdpd the axis 0 instead of the C++ default -1.
    """
    inputs = [data.output(0), ov_input(target).output(0)]
    attrs: dict[str, Any] = {"mode": mode}
    if axes is not None:
        inputs.append(ov_input(axes).output(0))
    if mode == "pdpd":
        attrs["mode.auto_broadcast_axis" if opset == 1 else "mode.mode.axis"] = axis
        if opset == 1 and axes is None:  # Broadcast-1 pdpd reads a third input; the C++ ctor adds a dummy u8
            inputs.append(ov.op.Constant(np.array(0, np.uint8)).output(0))
    return node_factory.NodeFactory(f"opset{opset}").create("Broadcast", inputs, attrs)


def ov_shape(
    data: str, target: Any, mode: str = "numpy", axes: Any = None, axis: int = -1, opset: int = 3
) -> Shape | str:
    try:
        node = ov_broadcast_node(opset3.parameter(ov.PartialShape(data), ov.Type.f32), target, mode, axes, axis, opset)
    except RuntimeError as err:
        return _rejection(err)
    return to_shape(node.get_output_partial_shape(0))


def ov_eltwise(a: str, b: str, auto_broadcast: str, axis: int) -> Shape | str:
    pa = opset1.parameter(ov.PartialShape(a), ov.Type.f32)
    pb = opset1.parameter(ov.PartialShape(b), ov.Type.f32)
    try:
        if auto_broadcast == "pdpd":
            node = node_factory.NodeFactory("opset1").create(
                "Add",
                [pa.output(0), pb.output(0)],
                {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": axis},
            )
        else:
            node = opset1.add(pa, pb, auto_broadcast=auto_broadcast.upper())
    except RuntimeError as err:
        return _rejection(err)
    return to_shape(node.get_output_partial_shape(0))


@functools.cache
def _core() -> Any:
    return ov.Core()


def ov_run(
    x: np.ndarray, target: Sequence[int], mode: str, axes: Sequence[int] | None, axis: int, opset: int
) -> np.ndarray:
    p = OPSETS[opset].parameter(list(x.shape), ov.Type(x.dtype))
    node = ov_broadcast_node(p, list(target), mode, None if axes is None else list(axes), axis, opset)
    compiled = _core().compile_model(ov.Model([node], [p]), "CPU", {"INFERENCE_NUM_THREADS": 1})
    return np.asarray(compiled([x])[0])


# -- bcast side --------------------------------------------------------------------------------------


def ours_shape(
    data: str, target: Any, mode: str = "numpy", axes: Any = None, axis: int = -1, opset: int = 3
) -> Shape | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bov.QuirkWarning)
        try:
            return bov.broadcast_shape(data, target, mode, axes_mapping=axes, axis=axis, opset=opset)
        except BroadcastError as err:
            return f"bcast rejects: {err}"


def assert_same(theirs: Shape | str, ours: Shape | str, where: str) -> None:
    if isinstance(theirs, str):
        assert isinstance(ours, str), f"{where}: {theirs}, but the profile gives {ours}"
    else:
        assert not isinstance(ours, str), f"{where}: OpenVINO gives {theirs}, but {ours}"
        assert ours == theirs, f"{where}: OpenVINO gives {theirs}, the profile gives {ours}"


def check(data: str, target: Any, mode: str, axes: Any = None, axis: int = -1, opset: int = 3) -> None:
    where = f"Broadcast-{opset} {mode} data {data} target {target!r} axes {axes!r} axis {axis}"
    assert_same(
        ov_shape(data, target, mode, axes, axis, opset), ours_shape(data, target, mode, axes, axis, opset), where
    )


# -- generators ----------------------------------------------------------------------------------------

STATIC = st.sampled_from((0, 1, 1, 1, 2, 3, 4))


@st.composite
def dims(draw: st.DrawFn, partial: bool = True) -> str:
    kind = draw(st.sampled_from(("static",) * 5 + (("?", "interval", "lower") if partial else ())))
    if kind == "static":
        return str(draw(STATIC))
    if kind == "?":
        return "?"
    lo = draw(st.integers(0, 4))
    return f"{lo}.." if kind == "lower" else f"{lo}..{draw(st.integers(lo, 6))}"


def shapes(partial: bool = True, max_rank: int = 4, dynamic_rank: bool = True) -> st.SearchStrategy[str]:
    ranked = st.lists(dims(partial), max_size=max_rank).map(lambda ds: "[" + ",".join(ds) + "]")
    if not dynamic_rank:
        return ranked
    # [...] about one time in eight: it short-cuts every rule, so it must not crowd out the rest
    return st.one_of(*[ranked] * 7, st.just("[...]"))


def _constant(values: list[int], dtype: Any) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


@st.composite
def targets(draw: st.DrawFn, partial: bool = True) -> Any:
    """A target input: int list, integer array of some dtype, a partial value string, or Unknown."""
    kind = draw(st.sampled_from(("ints", "ints", "ints", "array", "partial", "unknown") if partial else ("ints",)))
    values = draw(st.lists(STATIC, max_size=5))
    if kind == "ints":
        if partial and values and draw(st.integers(0, 9)) == 0:
            values[draw(st.integers(0, len(values) - 1))] = -1  # OpenVINO: -1 in a constant is ?
        return values
    if kind == "array":
        dtype = draw(st.sampled_from((np.int32, np.int64, np.uint8, np.int8, np.uint64)))
        return _constant(values, dtype)
    if kind == "partial":
        return draw(shapes(True, 5, dynamic_rank=draw(st.integers(0, 9)) == 0))
    return bov.Unknown(draw(st.sampled_from(("[3]", "[0]", "[1]", "[?]", "[2..4]", "[...]"))))


# -- shape inference, random ---------------------------------------------------------------------------


@st.composite
def related(draw: st.DrawFn, mode: str) -> tuple[str, Any, Any, int]:
    """(data, target, axes, axis): a target built around the data (so that most cases pass), or unrelated."""
    data = draw(shapes())
    if data == "[...]" or draw(st.integers(0, 4)) == 0:
        return data, draw(targets()), draw(explicit_axes()), draw(st.integers(-2, 5))
    ds = list(Shape.parse(data))
    lead = draw(st.lists(STATIC, max_size=2))
    body: list[Any] = []
    for d in ds:  # the data's own dim, a 1, anything static, or a partial dim
        choice = draw(st.sampled_from(("same", "same", "one", "static", "partial", "disjoint")))
        if choice == "same":
            body.append(d if d.is_static else draw(STATIC))
        elif choice == "one":
            body.append(1)
        elif choice == "static":
            body.append(draw(STATIC))
        elif choice == "partial":
            body.append(Dim.parse(draw(dims())))
        elif d.is_static:  # an interval that cannot hold the data's size
            body.append(Dim.interval(int(d) + 1, int(d) + 3))
        else:  # a size the data's interval cannot take
            body.append(Dim(d.hi + 1) if d.hi is not None else Dim(d.lo - 1) if d.lo > 1 else Dim(draw(STATIC)))
    tail: list[Any] = draw(st.lists(STATIC, max_size=1)) if mode == "explicit" else []
    dims_ = [*lead, *body, *tail]
    target: Any = (
        [int(d) for d in dims_] if all(Dim(d).is_static for d in dims_) else "[" + ",".join(str(d) for d in dims_) + "]"
    )
    if mode == "bidirectional" and isinstance(target, list) and draw(st.booleans()):
        target = target[draw(st.integers(0, len(target))) :]  # the target may be the shorter one
    axes: Any = list(range(len(lead), len(lead) + len(ds)))
    if mode == "explicit" and axes and draw(st.integers(0, 3)) == 0:  # repeat, swap or shift an axis
        i = draw(st.integers(0, len(axes) - 1))
        axes[i] = draw(st.sampled_from((axes[i - 1] if i else axes[i], axes[i] + 3, -1)))
    axis = draw(st.sampled_from((-1, -1, len(lead), draw(st.integers(-2, 5)))))
    return data, target, axes, axis


@SHAPES
@given(case=related("numpy"), opset=st.sampled_from((1, 3)))
def test_numpy_shape(case: tuple[str, Any, Any, int], opset: int) -> None:
    check(case[0], case[1], "numpy", opset=opset)


@SHAPES
@given(case=related("bidirectional"))
def test_bidirectional_shape(case: tuple[str, Any, Any, int]) -> None:
    check(case[0], case[1], "bidirectional", opset=3)


@SHAPES
@given(case=related("pdpd"), opset=st.sampled_from((1, 3)))
def test_pdpd_shape(case: tuple[str, Any, Any, int], opset: int) -> None:
    check(case[0], case[1], "pdpd", axis=case[3], opset=opset)


@SHAPES
@given(case=related("explicit"), opset=st.sampled_from((1, 3)), mode=st.sampled_from(("explicit", "none")))
def test_explicit_shape(case: tuple[str, Any, Any, int], opset: int, mode: str) -> None:
    check(case[0], case[1], mode, axes=case[2], opset=opset)


@st.composite
def explicit_axes(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(("sorted", "sorted", "sorted", "random", "unknown", "partial")))
    if kind == "unknown":
        return bov.Unknown(draw(st.sampled_from(("[0]", "[1]", "[2]", "[?]", "[...]"))))
    if kind == "partial":
        return draw(st.sampled_from(("[?]", "[0,?]", "[1,2]", "[2,1]", "[...]")))
    axes = draw(st.lists(st.integers(-1, 5), max_size=4))
    return sorted(axes) if kind == "sorted" else axes


@SHAPES
@given(
    data=shapes(False, 3, dynamic_rank=False).filter(lambda s: s != "[]"),
    extra=st.lists(STATIC, min_size=0, max_size=2),
    opset=st.sampled_from((1, 3)),
)
def test_explicit_valid_mappings_shape(data: str, extra: list[int], opset: int) -> None:
    """Random valid explicit cases (random axes are nearly always rejected, so build accepted ones too)."""
    ds = [int(d) for d in Shape.parse(data)]
    target = ds + extra
    check(data, target, "explicit", axes=list(range(len(ds))), opset=opset)
    # a duplicate: still accepted by OpenVINO wherever the dims fit
    if len(ds) >= 2 and ds[0] in (1, target[0]) and ds[1] in (1, target[0]):
        check(data, target, "explicit", axes=[0, 0, *range(2, len(ds))], opset=opset)


@st.composite
def eltwise_cases(draw: st.DrawFn) -> tuple[str, str, int]:
    """(A, B, axis): B drawn around a window of A's dims (so that most cases pass), or unrelated."""
    a = draw(shapes())
    if a == "[...]" or draw(st.integers(0, 4)) == 0:
        return a, draw(shapes()), draw(st.integers(-2, 4))
    ad = [str(d) for d in Shape.parse(a)]
    start = draw(st.integers(0, len(ad)))
    stop = draw(st.integers(start, len(ad)))
    b = [draw(st.sampled_from((d, d, "1", str(draw(STATIC)), draw(dims())))) for d in ad[start:stop]]
    axis = draw(st.sampled_from((-1, start, draw(st.integers(-2, 4)))))
    return a, "[" + ",".join(b) + "]", axis


@SHAPES
@given(case=eltwise_cases(), auto_broadcast=st.sampled_from(("none", "numpy", "pdpd", "explicit")))
def test_eltwise_shape(case: tuple[str, str, int], auto_broadcast: str) -> None:
    a, b, axis = case
    if auto_broadcast != "pdpd":
        axis = -1
    theirs = ov_eltwise(a, b, auto_broadcast, axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bov.QuirkWarning)
        try:
            ours: Shape | str = bov.eltwise_shape(a, b, auto_broadcast, axis=axis)
        except BroadcastError as err:
            ours = f"bcast rejects: {err}"
    assert_same(theirs, ours, f"Add {auto_broadcast} axis {axis}: {a} and {b}")


# -- inputs of every kind, pinned ----------------------------------------------------------------------

INPUT_CASES = [
    # (data, target, mode, axes, axis, opset)
    ("[2,1]", np.array([3, 2, 4], np.int32), "numpy", None, -1, 3),
    ("[2,1]", np.array([3, 2, 4], np.uint8), "numpy", None, -1, 1),
    ("[2,1]", np.array([3, 2, 4], np.uint64), "bidirectional", None, -1, 3),
    ("[2,1]", np.array([3.0, 2.0]), "numpy", None, -1, 3),  # f64 target: rejected
    ("[2,1]", np.array([True, True]), "numpy", None, -1, 3),  # boolean target: rejected
    ("[2,1]", np.array(3), "numpy", None, -1, 3),  # 0-D target: rejected
    ("[2,1]", np.array([[2, 1]]), "numpy", None, -1, 3),  # 2-D target: rejected
    ("[2,1]", [], "bidirectional", None, -1, 3),  # T = []: the data's shape
    ("[]", [], "numpy", None, -1, 1),
    ("[2]", "[?,16,50,50]", "numpy", None, -1, 3),  # Concat(ShapeOf, 16, 50, 50)
    ("[16,1,1]", "[?,16,2..5,50]", "numpy", None, -1, 1),
    ("[16,1,1]", "[?,16,2..5,50]", "bidirectional", None, -1, 3),
    ("[3]", "[...]", "numpy", None, -1, 3),  # ShapeOf of a dynamic-rank tensor: unknown length
    ("[2,1]", bov.Unknown("[3]"), "bidirectional", None, -1, 3),
    ("[2,3,4]", bov.Unknown("[2]"), "bidirectional", None, -1, 3),
    ("[0,1]", bov.Unknown("[2]"), "bidirectional", None, -1, 3),
    ("[2,1]", bov.Unknown("[?]"), "bidirectional", None, -1, 3),
    ("[2,1]", bov.Unknown("[3]", np.int32), "pdpd", None, -1, 3),
    ("[2,1]", bov.Unknown("[3]", np.float32), "numpy", None, -1, 3),  # f32 Parameter: rejected
    ("[2,1]", bov.Unknown("[]"), "numpy", None, -1, 3),  # 0-D Parameter: rejected
    ("[3]", [2, 3], "explicit", np.array([1], np.int32), -1, 3),
    ("[3]", [2, 3], "explicit", np.array([1.0]), -1, 3),  # f64 axes: rejected
    ("[3]", [2, 3], "explicit", np.array([[1]]), -1, 1),  # 2-D axes: rejected
    ("[3]", [2, 3], "explicit", np.array(1), -1, 3),  # 0-D axes: rejected
    ("[2,2]", [3, 2, 2], "explicit", "[2,1]", -1, 3),  # axes from ShapeOf of a static tensor: constant, unsorted
    ("[2,2]", [3, 2, 2], "explicit", "[?,1]", -1, 3),  # partially known axes: unchecked
    ("[2,2]", bov.Unknown("[3]"), "explicit", [2, 1], -1, 3),  # unknown target: unchecked
    ("[2,2]", bov.Unknown("[3]"), "explicit", [0], -1, 3),  # the length is checked all the same
    ("[]", [2, 1, 3], "explicit", [1], -1, 1),
    ("[]", [2, 1, 3], "explicit", [0], -1, 3),
    ("[]", [2, 1, 3], "explicit", [5], -1, 3),
    ("[]", [2, 1, 3], "explicit", [0, 1], -1, 3),
    ("[2,2]", [3, 2, 2], "explicit", [0, -1], -1, 3),  # -1 read as 2**64-1
    ("[2,2]", [3, 2, 2], "explicit", [-1, 0], -1, 3),
    ("[3,5]", [2, 3, 1], "pdpd", None, 1, 3),
    ("[3,4]", [2, 3, 4, 5], "pdpd", None, 1, 1),
    ("[1..3]", [4], "pdpd", None, -1, 3),
    ("[?]", [1], "pdpd", None, -1, 3),
    ("[2..5]", "[1..3]", "pdpd", None, -1, 3),
]


@pytest.mark.parametrize(("data", "target", "mode", "axes", "axis", "opset"), INPUT_CASES)
def test_inputs_of_every_kind(data: str, target: Any, mode: str, axes: Any, axis: int, opset: int) -> None:
    check(data, target, mode, axes, axis, opset)


@pytest.mark.parametrize("mode", ["none", "NONE", "Explicit", "explicit"])
@pytest.mark.parametrize("opset", [1, 3])
def test_mode_names(mode: str, opset: int) -> None:
    """OpenVINO's enums are case-insensitive and "none" is explicit in Broadcast-1 and -3 alike."""
    p = OPSETS[opset].parameter([3], ov.Type.f32)
    t, a = ov_input([2, 3]), ov_input([1])
    # NodeFactory: the Python opsetN.broadcast wrappers drop the axes input unless the mode is spelled EXPLICIT
    node = node_factory.NodeFactory(f"opset{opset}").create(
        "Broadcast", [p.output(0), t.output(0), a.output(0)], {"mode": mode}
    )
    assert bov.broadcast_shape("[3]", [2, 3], mode, axes_mapping=[1], opset=opset) == to_shape(
        node.get_output_partial_shape(0)
    )
    with pytest.raises(BroadcastError):  # the axis must fit the data: OpenVINO rejects [2, 3] with axes [0]
        bov.broadcast_shape("[3]", [2, 3], mode, axes_mapping=[0], opset=opset)


def test_bidirectional_is_broadcast3_only() -> None:
    with pytest.raises(RuntimeError, match="BIDIRECTIONAL"):
        opset1.broadcast(opset1.parameter([3], ov.Type.f32), ov_input([2, 3]), mode="BIDIRECTIONAL")
    with pytest.raises(BroadcastError, match="opset=3"):
        bov.broadcast_shape("[3]", [2, 3], "bidirectional", opset=1)


def test_broadcast3_input_count() -> None:
    """Broadcast-3 wants axes exactly in explicit mode; Broadcast-1 ignores them elsewhere (C++ node, 3 inputs)."""
    nf3, nf1 = node_factory.NodeFactory("opset3"), node_factory.NodeFactory("opset1")
    p, t, a = opset3.parameter([3], ov.Type.f32), ov_input([2, 3]), ov_input([1])
    with pytest.raises(RuntimeError, match="should not be provided"):
        nf3.create("Broadcast", [p.output(0), t.output(0), a.output(0)], {"mode": "numpy"})
    with pytest.raises(BroadcastError, match="only explicit mode takes it"):
        bov.broadcast_shape("[3]", [2, 3], "numpy", axes_mapping=[1], opset=3)
    with pytest.raises(RuntimeError, match="should be provided"):
        nf3.create("Broadcast", [p.output(0), t.output(0)], {"mode": "explicit"})
    with pytest.raises(BroadcastError, match="needs the axes_mapping"):
        bov.broadcast_shape("[3]", [2, 3], "explicit", opset=3)
    node = nf1.create("Broadcast", [p.output(0), t.output(0), ov_input([0]).output(0)], {"mode": "numpy"})
    with pytest.warns(bov.QuirkWarning, match="ignored"):
        ours = bov.broadcast_shape("[3]", [2, 3], "numpy", axes_mapping=[0], opset=1)
    assert isinstance(ours, Shape)
    assert ours == to_shape(node.get_output_partial_shape(0))


# -- the quirks: warned, and shaped as OpenVINO shapes them ----------------------------------------------

QUIRKS = [
    # (data, target, mode, axes, axis, opset, what the warning says)
    ("[1,1]", [6], "explicit", [0, 0], -1, 3, "repeats an axis"),
    ("[2,1]", [2, 2, 3], "explicit", [1, 1], -1, 1, "repeats an axis"),
    ("[1]", [-7, 3], "numpy", None, -1, 3, "negative values"),
    ("[1]", [-1, 3], "bidirectional", None, -1, 3, "negative values"),
    ("[1]", [0], "bidirectional", None, -1, 3, "CPU plugin keeps"),
    ("[2,1]", [0], "bidirectional", None, -1, 3, "CPU plugin keeps"),
    ("[?,3]", [0, 3], "bidirectional", None, -1, 3, "CPU plugin keeps"),
    ("[4..5]", [3], "numpy", None, -1, 3, "checks only pairs of static dims"),
    ("[4..8,2..4]", [1, 6], "numpy", None, -1, 1, "checks only pairs of static dims"),
    ("[2,3,4]", [2, 3], "pdpd", None, 0, 3, "runs past"),
    ("[3]", [2, 3], "pdpd", None, 5, 1, "runs past"),
    ("[3,1]", [2, 3], "pdpd", None, 1, 3, "runs past"),
    ("[...]", [2, 3, 4], "explicit", [2, 1], -1, 3, "does not check"),
    ("[2,2]", bov.Unknown("[3]"), "explicit", [2, 1], -1, 3, "does not check"),
    ("[3]", [2, 3], "explicit", None, -1, 1, "numpy mode"),
]


@pytest.mark.parametrize(("data", "target", "mode", "axes", "axis", "opset", "says"), QUIRKS)
def test_quirk_warns_and_matches_openvino(
    data: str, target: Any, mode: str, axes: Any, axis: int, opset: int, says: str
) -> None:
    with pytest.warns(bov.QuirkWarning, match=says):
        ours = bov.broadcast_shape(data, target, mode, axes_mapping=axes, axis=axis, opset=opset)
    theirs = ov_shape(data, target, mode, axes, axis, opset)
    assert isinstance(theirs, Shape), f"OpenVINO rejects what the profile accepts: {theirs}"
    assert ours == theirs


ELTWISE_QUIRKS = [
    ("[1]", "[0]", -1, "stretches A"),
    ("[1..4]", "[2..6]", -1, "stretches A"),
    ("[1,3]", "[0]", 0, "stretches A"),
]


@pytest.mark.parametrize(("a", "b", "axis", "says"), ELTWISE_QUIRKS)
def test_eltwise_quirk_warns_and_matches_openvino(a: str, b: str, axis: int, says: str) -> None:
    with pytest.warns(bov.QuirkWarning, match=says):
        ours = bov.eltwise_shape(a, b, "pdpd", axis=axis)
    assert ours == ov_eltwise(a, b, "pdpd", axis)


def test_no_warning_where_openvino_is_well_defined() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", bov.QuirkWarning)
        bov.broadcast_shape("[16,1,1]", [1, 16, 50, 50])
        bov.broadcast_shape("[2..3]", [3])  # a pair that can fit: not a quirk
        bov.broadcast_shape("[2]", [0, 2], "bidirectional")  # a 0 facing no data axis runs fine
        bov.eltwise_shape("[?]", "[3]", "pdpd")
        bov.broadcast(np.ones((2, 1)), [2, 3], "explicit", axes_mapping=[0, 1])


# -- values on the CPU plugin --------------------------------------------------------------------------

NONZERO = st.sampled_from((1, 1, 2, 3))


@st.composite
def value_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], list[int], str, list[int] | None, int, int]:
    mode = draw(st.sampled_from(("numpy", "explicit", "bidirectional", "pdpd")))
    opset = 3 if mode == "bidirectional" else draw(st.sampled_from((1, 3)))
    data = tuple(draw(st.lists(NONZERO, max_size=3)))
    lead = draw(st.lists(st.sampled_from((0, 1, 2, 3)), max_size=2))
    body = [draw(st.sampled_from((1, 2, 3, 0))) if d == 1 else d for d in data]
    axis = -1
    axes = None
    if mode == "explicit":
        target = body + lead
        axes = list(range(len(data)))
    elif mode == "pdpd":
        target = lead + [draw(st.sampled_from((1, d))) for d in data]  # pdpd lets the target's 1 stretch
        axis = draw(st.sampled_from((-1, len(lead))))
    else:
        target = lead + body
        if mode == "bidirectional" and data:  # the target may also be the shorter one
            target = target[draw(st.integers(0, len(target))) :]
    return data, target, mode, axes, axis, opset


@VALUES
@given(case=value_cases(), dtype=st.sampled_from((np.float32, np.int32)), seed=st.integers(0, 2**31))
def test_values_match_cpu_plugin(case: tuple[Any, ...], dtype: Any, seed: int) -> None:
    data, target, mode, axes, axis, opset = case
    x = np.asarray(np.random.default_rng(seed).integers(-100, 100, size=data), dtype=dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ours = bov.broadcast(x, target, mode, axes_mapping=axes, axis=axis, opset=opset)
        except BroadcastError:
            assert isinstance(ov_shape(str(Shape(data)), target, mode, axes, axis, opset), (str, Shape))
            return
    quirks = [w for w in caught if issubclass(w.category, bov.QuirkWarning)]
    # Crash-prone inputs (zero-element data, scalar -> []) are never run in-process; the profile warns there.
    if any("crashes" in str(w.message) or "segfaults" in str(w.message) for w in quirks):
        return
    theirs = ov_run(x, target, mode, axes, axis, opset)
    where = f"Broadcast-{opset} {mode} data {data} target {target} axes {axes} axis {axis}"
    assert ours.shape == theirs.shape, where
    assert ours.dtype == x.dtype, where
    np.testing.assert_array_equal(ours, theirs, err_msg=where)


@pytest.mark.parametrize(
    ("data", "target"), [((1, 2), [0, 2]), ((2, 1), [0]), ((1, 1), [0]), ((1, 3), [2, 0, 3]), ((1,), [0, 3])]
)
def test_bidirectional_zero_values_follow_the_cpu_plugin(data: tuple[int, ...], target: list[int]) -> None:
    x = np.arange(1, int(np.prod(data)) + 1, dtype=np.float32).reshape(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bov.QuirkWarning)
        ours = bov.broadcast(x, target, "bidirectional")
    theirs = ov_run(x, target, "bidirectional", None, -1, 3)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


CRASHES = [
    # Known CPU-plugin crashes (docs/openvino-findings.md): the profile returns the defined result with a warning
    (np.zeros((0,), np.float32), [0], "numpy", None, 3, "SIGFPE"),
    (np.zeros((0, 1), np.float32), [0, 3], "numpy", None, 1, "SIGFPE"),
    (np.zeros((0,), np.float32), [0, 2], "explicit", [0], 3, "SIGFPE"),
    (np.zeros((0,), np.float32), [1], "bidirectional", None, 3, "SIGFPE"),
    (np.float32(2.5), [], "numpy", None, 1, "segfaults"),
    (np.float32(2.5), [], "bidirectional", None, 3, "segfaults"),
    (np.ones(3, np.float32), np.array([2, 3], np.uint8), "numpy", None, 3, "u8"),
]


@pytest.mark.parametrize(("x", "target", "mode", "axes", "opset", "says"), CRASHES)
def test_cpu_crash_cases_warn_and_give_the_defined_result(
    x: Any, target: Any, mode: str, axes: Any, opset: int, says: str
) -> None:
    with pytest.warns(bov.QuirkWarning, match=says):
        got = bov.broadcast(x, target, mode, axes_mapping=axes, opset=opset)
    expected = ov_shape(str(Shape(np.shape(x))), target, mode, axes, -1, opset)  # shape inference only: safe
    assert isinstance(expected, Shape)
    assert got.shape == tuple(int(d) for d in expected)
    if got.size:  # scalar -> [] and the u8 target: the data itself, broadcast
        np.testing.assert_array_equal(got, np.broadcast_to(x, got.shape))


UNDEFINED = [
    (np.ones((1, 1)), [6], "explicit", [0, 0], -1, "repeats an axis"),
    (np.ones(1), [-7, 3], "numpy", None, -1, "negative"),
    (np.ones((2, 3, 4)), [2, 3], "pdpd", None, 0, "runs past"),
    (np.ones(2), bov.Unknown("[2]"), "numpy", None, -1, "output shape is"),
    (np.ones(2), [-1, 2], "numpy", None, -1, "negative"),
]


@pytest.mark.parametrize(("x", "target", "mode", "axes", "axis", "says"), UNDEFINED)
def test_undefined_values_are_refused(x: Any, target: Any, mode: str, axes: Any, axis: int, says: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bov.QuirkWarning)
        with pytest.raises(BroadcastError, match=says):
            bov.broadcast(x, target, mode, axes_mapping=axes, axis=axis)
        # ... while OpenVINO's shape inference accepts them
        assert isinstance(ov_shape(str(Shape(x.shape)), target, mode, axes, axis, 3), Shape)


# -- the differences table -----------------------------------------------------------------------------


def _run(call: str) -> tuple[str, bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = repr(eval(call, {"bov": bov, "bcast": bcast, "np": np}))
        except Exception as err:  # the table names the exception's type
            result = type(err).__name__
    return result, any(issubclass(w.category, bov.QuirkWarning) for w in caught)


@pytest.mark.parametrize("diff", bov.DIFFERENCES, ids=lambda d: d.key)
def test_differences_table_examples_hold(diff: bov.Difference) -> None:
    assert _run(diff.profile_call) == (diff.profile_result, diff.warns)
    assert _run(diff.core_call)[0] == diff.core_result
    assert diff.profile_result != diff.core_result


@pytest.mark.parametrize(
    "diff",
    [d for d in bov.DIFFERENCES if d.profile_call.startswith(("bov.broadcast_shape(", "bov.eltwise_shape("))],
    ids=lambda d: d.key,
)
def test_differences_table_profile_side_is_openvino(diff: bov.Difference) -> None:
    """Replay each profile example on OpenVINO itself (the symbol example has no OpenVINO form)."""
    if diff.key == "no-symbols":
        pytest.skip("OpenVINO has no named symbols to pass")
    fn = "ov_eltwise" if diff.profile_call.startswith("bov.eltwise_shape(") else "ov_shape"
    args = diff.profile_call.split("(", 1)[1]
    call = f"{fn}({args}".replace("axes_mapping=", "axes=")
    if fn == "ov_eltwise" and "axis=" not in call:
        call = call[:-1] + ", axis=-1)"
    theirs = eval(call, {"ov_shape": ov_shape, "ov_eltwise": ov_eltwise, "np": np})
    if diff.profile_result in ("BroadcastError", "TypeError"):
        assert isinstance(theirs, str), f"{diff.key}: OpenVINO gives {theirs}"
    else:
        assert repr(theirs) == diff.profile_result
