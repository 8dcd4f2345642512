"""``Plan.to_onnx``: the emitted ONNX graph, run in onnxruntime, against NumPy and bcast.

Every expected value is computed with NumPy alone (``np.broadcast_to`` after a plain
``reshape``/``transpose`` that lines the data up as each dialect's text says); the plan's
own ``materialize`` is compared too, so the ONNX graph, the NumPy engine and NumPy agree.
Shapes are drawn so that they broadcast validly, with zero-size dims and scalars.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcast
from bcast import BroadcastError, Constraints, Plan, Shape

onnx = pytest.importorskip("onnx", reason='the ONNX lowering needs the onnx package (pip install "bcast[onnx]")')
ort = pytest.importorskip("onnxruntime", reason='the emitted graphs are run in onnxruntime (pip install "bcast[onnx]")')

from onnx import helper, shape_inference  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from bcast.onnx.lowering import MIN_OPSET, max_opset, plan_to_onnx  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None)
DIM = st.sampled_from((0, 1, 1, 2, 3))
DTYPES = (np.float32, np.int64, np.bool_)


# -- helpers ------------------------------------------------------------------------------


def run_ort(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    result: np.ndarray = session.run(None, feeds)[0]
    return result


def make_data(shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    """Distinct values (for bool: a pattern), so a misplaced axis shows."""
    x = np.arange(math.prod(shape)).reshape(shape)
    return np.asarray(x % 3 == 1) if dtype is np.bool_ else x.astype(dtype)


def aligned_oracle(x: np.ndarray, aligned_shape: tuple[int, ...], out: tuple[int, ...]) -> np.ndarray:
    """NumPy alone: reshape to the data's aligned shape (1s elsewhere), then broadcast."""
    return np.broadcast_to(x.reshape(aligned_shape), out)


def check_against(plan: Plan, x: np.ndarray, expected: np.ndarray, **options: Any) -> None:
    """Run the plan's ONNX model on ``x``; compare with NumPy's ``expected`` and ``plan.materialize``."""
    model = plan.to_onnx(dtype=x.dtype, **options)
    feeds = {"data": x}
    if len(model.graph.input) == 2:
        feeds["target_shape"] = np.array(plan.target_shape.to_tuple(), dtype=np.int64)
    got = run_ort(model, feeds)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected, strict=True)
    np.testing.assert_array_equal(plan.materialize(x), expected, strict=True)


def declared_dims(value_info: Any) -> list[int | str | None]:
    dims = value_info.type.tensor_type.shape.dim
    return [
        d.dim_value if d.HasField("dim_value") else (d.dim_param if d.HasField("dim_param") else None) for d in dims
    ]


def plan_dims(shape: Shape) -> list[int | str | None]:
    return [int(d) if d.is_static else d.name for d in shape]


def inferred_output(model: Any) -> list[int | str | None]:
    """ONNX's own shape inference of the output, with the declared output shape erased first."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    inferred = shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    return declared_dims(inferred.graph.output[0])


# -- strategies: valid broadcasts for each core dialect, with NumPy's expected result ------


@st.composite
def numpy_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    target = tuple(draw(st.lists(DIM, max_size=4)))
    r = draw(st.integers(0, len(target)))
    data = tuple(t if draw(st.booleans()) else 1 for t in target[len(target) - r :])
    x = make_data(data, draw(st.sampled_from(DTYPES)))
    return bcast.plan(data, target, "numpy"), x, np.broadcast_to(x, target)


@st.composite
def bidirectional_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    out = tuple(draw(st.lists(DIM, max_size=4)))
    ra, rb = draw(st.integers(0, len(out))), draw(st.integers(0, len(out)))
    data = tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - ra :])
    target = tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - rb :])
    x = make_data(data, draw(st.sampled_from(DTYPES)))
    expected = np.broadcast_to(x, np.broadcast_shapes(data, target))
    return bcast.plan(data, target, "bidirectional"), x, expected


@st.composite
def explicit_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    target = tuple(draw(st.lists(DIM, max_size=4)))
    axes = sorted(draw(st.sets(st.integers(0, len(target) - 1), max_size=len(target)))) if target else []
    data = tuple(target[a] if draw(st.booleans()) else 1 for a in axes)
    aligned = [1] * len(target)
    for d, a in zip(data, axes, strict=True):
        aligned[a] = d
    x = make_data(data, draw(st.sampled_from(DTYPES)))
    plan = bcast.plan(data, target, "explicit", axes_mapping=axes)
    return plan, x, aligned_oracle(x, tuple(aligned), target)


@st.composite
def pdpd_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    a = tuple(draw(st.lists(DIM, max_size=4)))
    start = draw(st.integers(0, len(a)))
    kept = draw(st.integers(0, len(a) - start))
    core = [a[start + i] if draw(st.booleans()) else 1 for i in range(kept)]
    if core and core[-1] == 1:
        core[-1] = a[start + kept - 1]  # B's last kept dim must not be a 1, or it would be a trailing 1
        if core[-1] == 1:
            kept -= 1
            core.pop()
    # B's trailing 1s: ignored, and dropped when they run past A's last axis (rank(B) <= rank(A) still)
    ones = draw(st.integers(0, min(2, len(a) - len(core))))
    b = (*core, *([1] * ones))
    axis = -1 if len(b) <= len(a) and start == len(a) - len(b) and draw(st.booleans()) else start
    aligned = [1] * len(a)
    aligned[start : start + len(core)] = core
    x = make_data(b, draw(st.sampled_from(DTYPES)))
    return bcast.plan(b, a, "pdpd", axis=axis), x, aligned_oracle(x, tuple(aligned), a)


@st.composite
def axes_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    target = tuple(draw(st.lists(DIM, max_size=4)))
    new = sorted(draw(st.sets(st.integers(0, len(target) - 1), max_size=len(target)))) if target else []
    data = tuple(d for k, d in enumerate(target) if k not in new)
    x = make_data(data, draw(st.sampled_from(DTYPES)))
    expected = np.broadcast_to(np.expand_dims(x, tuple(new)), target)
    mode = draw(st.sampled_from(("axes", "like"))) if new else "axes"
    return bcast.plan(data, target, mode, broadcast_axes=new), x, expected


@st.composite
def like_derived_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    """BroadcastLike with its axes derived: the data is a left-aligned prefix of the like shape."""
    like = tuple(draw(st.lists(DIM, max_size=4)))
    r = draw(st.integers(0, len(like)))
    data = like[:r]
    x = make_data(data, draw(st.sampled_from(DTYPES)))
    expected = np.broadcast_to(x.reshape(data + (1,) * (len(like) - r)), like)
    return bcast.plan(data, like, "like"), x, expected


@st.composite
def none_case(draw: st.DrawFn) -> tuple[Plan, np.ndarray, np.ndarray]:
    shape = tuple(draw(st.lists(DIM, max_size=4)))
    x = make_data(shape, draw(st.sampled_from(DTYPES)))
    return bcast.plan(shape, shape, "none"), x, x


CASES = {
    "numpy": numpy_case(),
    "bidirectional": bidirectional_case(),
    "explicit": explicit_case(),
    "pdpd": pdpd_case(),
    "axes": axes_case(),
    "like": like_derived_case(),
    "none": none_case(),
}


@pytest.mark.parametrize("mode", list(CASES))
@SETTINGS
@given(data=st.data())
def test_every_mode_matches_numpy_and_materialize(mode: str, data: st.DataObject) -> None:
    plan, x, expected = data.draw(CASES[mode])
    check_against(plan, x, expected)
    # ONNX's own shape inference, from the graph alone, agrees with the plan.
    assert inferred_output(plan.to_onnx(dtype=x.dtype)) == plan_dims(plan.output_shape)


@SETTINGS
@given(case=st.one_of(*CASES.values()), opset=st.integers(MIN_OPSET, max_opset()))
def test_every_opset_checks_and_runs(case: tuple[Plan, np.ndarray, np.ndarray], opset: int) -> None:
    """From opset 13 to the newest onnx knows; onnx's reference evaluator runs what onnxruntime cannot."""
    plan, x, expected = case
    model = plan.to_onnx(opset=opset, dtype=x.dtype)
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == opset
    got = ReferenceEvaluator(model).run(None, {"data": x})[0]
    np.testing.assert_array_equal(got, expected, strict=True)


def test_onnxruntime_runs_every_opset_it_supports() -> None:
    plan = bcast.plan("[2,0,1]", "[3,2,0,4]")
    x = make_data((2, 0, 1))
    ran = []
    for opset in range(MIN_OPSET, max_opset() + 1):
        model = plan.to_onnx(opset=opset)
        refused = ""
        try:
            session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime lags onnx: a newer opset (or its IR version) is refused
            refused = str(e).lower()
        if refused:
            assert "opset" in refused or "ir version" in refused, refused
            continue
        np.testing.assert_array_equal(session.run(None, {"data": x})[0], np.broadcast_to(x, (3, 2, 0, 4)))
        ran.append(opset)
    assert ran[: 22 - MIN_OPSET] == list(range(MIN_OPSET, 22))  # through the default opset 21 at least


# -- symbolic and dynamic dims: one graph, several concrete sizes -----------------------------

# (data, target, mode, options, graph inputs, concrete (data, target) pairs)
SYMBOLIC = [
    ("[N,1]", "[N,4]", "numpy", {}, ["data"], [((3, 1), (3, 4)), ((0, 1), (0, 4)), ((1, 1), (1, 4))]),
    ("[?,3]", "[?,3]", "numpy", {}, ["data", "target_shape"], [((1, 3), (5, 3)), ((2, 3), (2, 3)), ((1, 3), (0, 3))]),
    ("[N]", "[N,N]", "explicit", {"axes_mapping": [0]}, ["data"], [((2,), (2, 2)), ((0,), (0, 0)), ((3,), (3, 3))]),
    ("[1,N]", "[N,N]", "numpy", {}, ["data"], [((1, 3), (3, 3)), ((1, 0), (0, 0))]),
    ("[?]", "[1]", "bidirectional", {}, ["data"], [((4,), (1,)), ((0,), (1,)), ((1,), (1,))]),
    ("[?,1]", "[M]", "bidirectional", {}, ["data", "target_shape"], [((3, 1), (5,)), ((1, 1), (0,)), ((2, 1), (1,))]),
    ("[2..5,1]", "[?,?]", "numpy", {}, ["data", "target_shape"], [((2, 1), (2, 6)), ((5, 1), (5, 0))]),
    ("[?]", "[2,?]", "pdpd", {"axis": 1}, ["data", "target_shape"], [((1,), (2, 3)), ((3,), (2, 3))]),
    ("[?,1]", "[2,?,4,5]", "pdpd", {"axis": 1}, ["data", "target_shape"], [((1, 1), (2, 3, 4, 5))]),
    ("[?]", "[3,?]", "axes", {"broadcast_axes": [0]}, ["data", "target_shape"], [((4,), (3, 4)), ((0,), (3, 0))]),
    ("[N,?]", "[N,?]", "none", {}, ["data", "target_shape"], [((2, 3), (2, 3))]),
    ("[B,1,C]", "[B,H,C]", "numpy", {}, ["data", "target_shape"], [((2, 1, 3), (2, 4, 3)), ((0, 1, 2), (0, 2, 2))]),
]


@pytest.mark.parametrize(("data", "target", "mode", "kwargs", "inputs", "concrete"), SYMBOLIC)
def test_symbolic_plans_run_on_several_sizes(
    data: str,
    target: str,
    mode: str,
    kwargs: dict[str, Any],
    inputs: list[str],
    concrete: list[tuple[tuple[int, ...], tuple[int, ...]]],
) -> None:
    plan = bcast.plan(data, target, mode, **kwargs)
    model = plan.to_onnx()
    assert [i.name for i in model.graph.input] == inputs
    assert declared_dims(model.graph.input[0]) == plan_dims(plan.data_shape)
    assert declared_dims(model.graph.output[0]) == plan_dims(plan.output_shape)
    # ONNX's shape inference (with data propagation through Shape/Gather/Concat) agrees: static
    # sizes exactly, and the plan's symbols wherever the graph alone can know them.
    for k, (want, got) in enumerate(zip(plan_dims(plan.output_shape), inferred_output(model), strict=True)):
        if isinstance(want, int) or (want is not None and "target_shape" not in inputs):
            assert got == want, (k, want, got)
        else:
            assert got in (want, None) or str(got).startswith("unk__"), (k, want, got)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for data_shape, target_shape in concrete:
        x = make_data(data_shape)
        feeds = {"data": x}
        if "target_shape" in inputs:
            feeds["target_shape"] = np.array(target_shape, dtype=np.int64)
        got = session.run(None, feeds)[0]
        concrete_plan = bcast.plan(data_shape, target_shape, mode, **kwargs)
        expected = np.broadcast_to(x.reshape(_aligned_numpy(concrete_plan, data_shape)), concrete_plan.output_shape)
        np.testing.assert_array_equal(got, expected, strict=True)
        np.testing.assert_array_equal(concrete_plan.materialize(x), expected, strict=True)
        if "target_shape" not in inputs:  # else the symbolic plan itself cannot know the output's size
            np.testing.assert_array_equal(plan.materialize(x), expected, strict=True)


def _aligned_numpy(plan: Plan, data_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The data's shape lined up on the output's axes, read from the concrete plan's mapping."""
    aligned = [1] * (plan.output_shape.rank or 0)
    for d, a in zip(data_shape, plan.axes_mapping or (), strict=True):
        if a is not None:
            aligned[a] = d
    return tuple(aligned)


def test_runtime_data_outside_the_plan_is_refused_by_onnxruntime() -> None:
    model = bcast.plan("[N,1]", "[N,4]").to_onnx()
    with pytest.raises(Exception, match=r"(?i)expand|broadcast|invalid|dim"):
        run_ort(model, {"data": make_data((3, 2))})


def test_target_input_true_declares_it_always() -> None:
    plan = bcast.plan("[3]", "[2,3]")
    model = plan.to_onnx(target_input=True)
    assert [i.name for i in model.graph.input] == ["data", "target_shape"]
    assert declared_dims(model.graph.input[1]) == [2]
    x = make_data((3,))
    got = run_ort(model, {"data": x, "target_shape": np.array([2, 3], dtype=np.int64)})
    np.testing.assert_array_equal(got, np.broadcast_to(x, (2, 3)))


# -- dtypes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize(
    ("data", "target", "mode", "kwargs"),
    [
        ((3, 1), (2, 3, 4), "numpy", {}),
        ((4, 5, 1), (2, 3, 4, 5), "pdpd", {"axis": 2}),
        ((), (0, 2), "numpy", {}),
        ((3,), (3, 2), "explicit", {"axes_mapping": [0]}),
    ],
)
def test_dtypes(dtype: Any, data: tuple[int, ...], target: tuple[int, ...], mode: str, kwargs: dict[str, Any]) -> None:
    plan = bcast.plan(data, target, mode, **kwargs)
    x = make_data(data, dtype)
    model = plan.to_onnx(dtype=dtype)
    assert model.graph.input[0].type.tensor_type.elem_type == helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    got = run_ort(model, {"data": x})
    np.testing.assert_array_equal(got, np.broadcast_to(x.reshape(_aligned_numpy(plan, data)), target), strict=True)


# -- the graph's structure ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "target", "mode", "kwargs", "ops"),
    [
        ("[3,1]", "[2,3,4]", "numpy", {}, ["Unsqueeze", "Expand"]),
        ("[2,3]", "[2,3]", "none", {}, ["Expand"]),
        ("[4,5,1]", "[2,3,4,5]", "pdpd", {"axis": 2}, ["Squeeze", "Unsqueeze", "Expand"]),
        ("[N]", "[N,N]", "explicit", {"axes_mapping": [0]}, ["Unsqueeze", "Shape", "Gather", "Concat", "Expand"]),
        ("[1,3]", "[?,3]", "numpy", {}, ["Gather", "Concat", "Expand"]),
    ],
)
def test_emitted_ops(data: str, target: str, mode: str, kwargs: dict[str, Any], ops: list[str]) -> None:
    model = bcast.plan(data, target, mode, **kwargs).to_onnx()
    assert [n.op_type for n in model.graph.node] == ops
    assert all(n.name.startswith("bcast_") for n in model.graph.node)
    assert all(t.name.startswith("bcast_") for t in model.graph.initializer)


def test_unsorted_axes_mapping_is_transposed() -> None:
    """A broadcast_in_dim plan with an unsorted mapping (no core front end makes one): data axis 0 -> 2, 1 -> 0."""
    data, target = Shape((2, 3)), Shape((3, 4, 2))
    plan = Plan(
        mode="explicit",
        data_shape=data,
        target_shape=target,
        output_shape=target,
        axes_mapping=(2, 0),
        constraints=Constraints(),
        attrs={},
        given=("(2, 3)", "(3, 4, 2)"),
        replan=lambda d, t: plan,
    )
    model = plan_to_onnx(plan)
    assert [n.op_type for n in model.graph.node] == ["Transpose", "Unsqueeze", "Expand"]
    x = make_data((2, 3))
    expected = np.broadcast_to(x.T[:, None, :], (3, 4, 2))
    np.testing.assert_array_equal(run_ort(model, {"data": x}), expected, strict=True)


# -- splicing the graph into a bigger one ----------------------------------------------------


def test_splice_into_a_bigger_graph_followed_by_add() -> None:
    """Both operands of a multidirectional Add, each lowered with its own prefix, then one Add."""
    ep = bcast.elementwise_plan("[1,4,0]", "[3,1,1]")
    a_shape, b_shape = (1, 4, 0), (3, 1, 1)
    parts = [
        plan_to_onnx(p, as_model=False, data_name=name, output_name=f"{name}_b", name_prefix=f"{name}_bcast/")
        for p, name in zip(ep.operands, ("a", "b"), strict=True)
    ]
    nodes = [n for g in parts for n in g.node]
    nodes.append(helper.make_node("Add", ["a_b", "b_b"], ["sum"]))
    graph = helper.make_graph(
        nodes,
        "bigger",
        [parts[0].input[0], parts[1].input[0]],
        [helper.make_tensor_value_info("sum", onnx.TensorProto.FLOAT, [3, 4, 0])],
        initializer=[t for g in parts for t in g.initializer],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    a, b = make_data(a_shape), make_data(b_shape)
    np.testing.assert_array_equal(run_ort(model, {"a": a, "b": b}), a + b, strict=True)

    # Nonzero sizes, with the symbolic plan's target read from the bigger graph at run time.
    plan = bcast.plan("[1,?]", "[?,?]")
    g = plan_to_onnx(plan, as_model=False, data_name="x", output_name="xb", target_name="y_shape", name_prefix="p/")
    assert [i.name for i in g.input] == ["x", "y_shape"]
    big = helper.make_graph(
        [helper.make_node("Shape", ["y"], ["y_shape"]), *g.node, helper.make_node("Add", ["xb", "y"], ["z"])],
        "bigger2",
        [g.input[0], helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, None])],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [None, None])],
        initializer=list(g.initializer),
    )
    model = helper.make_model(big, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    x, y = make_data((1, 3)), make_data((4, 3))
    np.testing.assert_array_equal(run_ort(model, {"x": x, "y": y}), x + y, strict=True)


# -- errors ----------------------------------------------------------------------------------

STATIC = bcast.plan("[3,1]", "[2,3,4]")
NEEDS_TARGET = bcast.plan("[1,3]", "[?,3]")


@pytest.mark.parametrize(
    ("plan", "options", "error", "match"),
    [
        (STATIC, {"opset": 12}, BroadcastError, r"opset 12 .*minimum opset 13"),
        (STATIC, {"opset": 10_000}, BroadcastError, r"opset 10000 .*newest"),
        (STATIC, {"opset": "21"}, TypeError, r"opset must be an integer"),
        (STATIC, {"opset": True}, TypeError, r"opset must be an integer"),
        (STATIC, {"data_name": 3}, TypeError, r"data_name must be a string"),
        (STATIC, {"name_prefix": None}, TypeError, r"name_prefix must be a string"),
        (STATIC, {"graph_name": 1}, TypeError, r"graph_name must be a string"),
        (STATIC, {"dtype": "no such dtype"}, TypeError, r"dtype must be a NumPy dtype"),
        (STATIC, {"dtype": "datetime64[s]"}, TypeError, r"datetime64\[s\] has no ONNX tensor type"),
        (STATIC, {"as_model": "yes"}, TypeError, r"as_model must be True or False"),
        (STATIC, {"target_input": 1}, TypeError, r"target_input must be True, False or None"),
        (STATIC, {"check": None}, TypeError, r"check must be True or False"),
        (STATIC, {"output_name": "data"}, BroadcastError, r"distinct"),
        (STATIC, {"data_name": ""}, BroadcastError, r"non-empty"),
        (STATIC, {"data_name": "bcast_x"}, BroadcastError, r"name_prefix 'bcast_'"),
        (STATIC, {"name_prefix": ""}, BroadcastError, r"name_prefix must not be empty"),
        (NEEDS_TARGET, {"target_input": False}, BroadcastError, r"output axis 0 of \[\?,3\] is \?"),
        (bcast.plan("[...]", "[2,3]"), {}, BroadcastError, r"numpy: cannot lower to ONNX: .*dynamic rank"),
        (bcast.plan("[2,3]", "[...]", "bidirectional"), {}, BroadcastError, r"dynamic rank"),
        (bcast.plan("[2]", "[...]", "pdpd"), {}, BroadcastError, r"pdpd: .*dynamic rank"),
    ],
)
def test_bad_options_and_plans(plan: Plan, options: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        plan.to_onnx(**options)


def test_not_a_plan() -> None:
    with pytest.raises(TypeError, match=r"plan must be a bcast.Plan"):
        plan_to_onnx("[2,3]")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ElementwisePlan .* \.operands"):
        plan_to_onnx(bcast.elementwise_plan("[2,1]", "[3]"))  # type: ignore[arg-type]


def test_error_attributes_name_the_axis() -> None:
    with pytest.raises(BroadcastError) as info:
        NEEDS_TARGET.to_onnx(target_input=False)
    assert (info.value.mode, info.value.axis, info.value.dims) == ("numpy", 0, ("?",))
    assert info.value.shapes == ("[1,3]", "[?,3]")


def test_lowering_a_plan_at_the_rank_cap_is_linear() -> None:
    """A rank-32768 plan (bcast.MAX_RANK) lowers, in work linear in the rank (a set built per axis was not)."""
    import bcast
    from hostile import assert_linear

    p = bcast.plan((1,) * bcast.MAX_RANK, (2,) * bcast.MAX_RANK)
    model = p.to_onnx()
    assert len(model.graph.output[0].type.tensor_type.shape.dim) == bcast.MAX_RANK
    assert_linear(lambda r: bcast.plan((1,) * r, (2,) * r).to_onnx, 256, what="to_onnx")
