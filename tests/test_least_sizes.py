"""The least input size a model works from: a convolution's window past its padded input (BC211), and any
requirement that holds exactly from a least size of its symbols on, noted as the model's smallest input.

Each model is proven by a runtime: the least size ``bcast check`` names is the least size onnxruntime runs the
model at (every size below it fails, every size tried above it runs); for the IR, the least size at which
OpenVINO's output is not empty. A condition that fails above a size or at some residues is no least size, and
stays what it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcast.check import check
from bcast.graph.ops import least_sizes

onnx = pytest.importorskip("onnx", reason='the models are ONNX (pip install "bcast[onnx]")')
ort = pytest.importorskip("onnxruntime", reason='the oracle is onnxruntime (pip install "bcast[onnx]")')

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

#: the sizes each model is run at
SIZES = range(1, 49)

#: chains of convolutions along H (W fixed at 40 where a case says so): (kernel, stride, pad each side, dilation)
CHAINS: dict[str, list[tuple[int, int, int, int]]] = {
    "one unpadded 3x3": [(3, 1, 0, 1)],
    "stride 2 then an unpadded 5x5": [(3, 2, 1, 1), (5, 1, 0, 1)],
    "three strided downsamplings then a 3x3": [(3, 2, 1, 1), (3, 2, 1, 1), (3, 2, 1, 1), (3, 1, 0, 1)],
    "a dilated 3x3": [(1, 1, 0, 1), (3, 1, 0, 3)],
    "stride 4 patches then a 2x2": [(4, 4, 0, 1), (2, 1, 0, 1)],
    "padding more than the kernel needs": [(3, 1, 2, 1), (5, 2, 0, 1)],
}


def _chain(layers: list[tuple[int, int, int, int]], width: int | str = 40) -> Any:
    nodes, inits = [], []
    x = "x"
    for i, (k, s, p, d) in enumerate(layers):
        inits.append(numpy_helper.from_array(np.full((2, 2, k, 1), 0.1, np.float32), f"w{i}"))
        nodes.append(
            helper.make_node(
                "Conv", [x, f"w{i}"], [f"h{i}"], f"conv{i}", strides=[s, 1], pads=[p, 0, p, 0], dilations=[d, 1]
            )
        )
        x = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", width])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _session(m: Any) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    # the model as ONNX defines it: onnxruntime's fusions rewrite a reshape's target computed from a shape
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _ort_runs(session: Any, shape: tuple[int, ...]) -> bool:
    options = ort.RunOptions()
    options.log_severity_level = 4
    try:
        session.run(None, {"x": np.zeros(shape, np.float32)}, options)
    except Exception:  # onnxruntime's InvalidArgument: "Invalid input shape"
        return False
    return True


def _least_said(report: Any, symbol: str) -> int | None:
    """The least size of ``symbol`` that the report's notes name (``the model works only for H >= 9``)."""
    found = {int(n) for p in report.problems for n in re.findall(rf"works only for .*?\b{symbol} >= (\d+)", p.message)}
    assert len(found) <= 1, found
    return found.pop() if found else None


@pytest.mark.parametrize("case", list(CHAINS))
def test_the_least_size_named_is_where_onnxruntime_starts_to_run(case: str) -> None:
    m = _chain(CHAINS[case])
    session = _session(m)
    runs = [h for h in SIZES if _ort_runs(session, (1, 2, h, 40))]
    assert runs, "the model runs at some size"
    least = runs[0]
    assert runs == list(range(least, SIZES.stop)), "it runs from a least size on, and above it at every size tried"
    report = check(m)
    assert not report.fails(), [p.message for p in report.problems]
    if least == 1:
        assert not report.problems
        return
    # of the convolutions whose windows may not fit, the one that binds says the least size: the runtime's (a
    # smaller one earlier in the chain, which it implies, is no note of its own)
    assert [(p.code, p.severity) for p in report.problems] == [("BC211", "info")]
    assert _least_said(report, "H") == least
    assert [(c.dim, c.allowed) for c in report.constraints] == [("H", f"{{{least}..}}")]


def test_a_static_size_past_the_window_is_an_error() -> None:
    m = _chain(CHAINS["stride 2 then an unpadded 5x5"], width=40)
    fixed = onnx.helper.make_model(m.graph, opset_imports=m.opset_import, ir_version=10)
    fixed.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 8  # H = 8: 4 rows meet the 5x5 window
    assert not _ort_runs(_session(fixed), (1, 2, 8, 40))
    problems = check(fixed).problems
    assert [(p.code, p.severity) for p in problems] == [("BC211", "error")]
    assert "the window spans 5" in problems[0].message and "the padded input has 4" in problems[0].message


def test_ranges_below_the_least_size_warn_and_ranges_above_it_say_nothing() -> None:
    m = _chain(CHAINS["stride 2 then an unpadded 5x5"])
    below = check(m, dims={"H": "1..512"})
    assert [(p.code, p.severity) for p in below.problems] == [("BC211", "warning")]
    assert "H is given as 1..512" in below.problems[0].message
    assert below.fails()
    assert not check(m, dims={"H": "9..512"}).problems


@pytest.mark.parametrize(("op", "least"), [("MaxPool", 4), ("AveragePool", 4)])
def test_a_pooling_fails_only_where_it_would_give_fewer_than_no_windows(op: str, least: int) -> None:
    """onnxruntime gives an empty output for a pooling window one row past its input, and fails beyond that (a
    negative output size): a pooling's least size is where its windows are no fewer than none."""
    pool = helper.make_node(op, ["x"], ["y"], "pool", kernel_shape=[5, 1])
    graph = helper.make_graph(
        [pool],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    session = _session(m)
    assert [h for h in SIZES if _ort_runs(session, (1, 2, h, 4))] == list(range(least, SIZES.stop))
    report = check(m)
    assert [(p.code, p.severity) for p in report.problems] == [("BC211", "info")]
    assert _least_said(report, "H") == least
    # the same with static sizes: an error only where onnxruntime fails, none where it gives no windows
    for h in (least - 1, least, least + 1):
        static = onnx.helper.make_model(m.graph, opset_imports=m.opset_import, ir_version=10)
        static.graph.input[0].type.tensor_type.shape.dim[2].dim_value = h
        want = [] if _ort_runs(session, (1, 2, h, 4)) else [("BC211", "error")]
        assert [(p.code, p.severity) for p in check(static).problems] == want, h


def test_an_ir_pooling_needs_its_window_to_fit_as_openvino_does(tmp_path: Path) -> None:
    """OpenVINO refuses a pooling window past its padded input (``cmp::le(kernel, dim.get_length())``), where
    onnxruntime gives no windows one row past it: the IR's least size is the window's, one more than the ONNX
    file's; and a window wider than the input at every size tried is a warning (HF's EfficientNet pools with a fixed
    window as wide as its hidden size: 320 rows of a map 32 times smaller than the image, in a small config)."""
    ov = pytest.importorskip("openvino", reason="the IR is OpenVINO's (pip install openvino)")
    for kernel, least in ((5, 5), (5000, None)):
        pool = helper.make_node("AveragePool", ["x"], ["y"], "pool", kernel_shape=[kernel, 1])
        graph = helper.make_graph(
            [pool],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        )
        onnx.save(
            helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), tmp_path / "p.onnx"
        )
        ir = tmp_path / f"p{kernel}.xml"
        ov.save_model(ov.convert_model(str(tmp_path / "p.onnx")), str(ir))
        compiled = ov.Core().compile_model(str(ir), "CPU")

        def runs(h: int, compiled: Any = compiled) -> bool:
            try:
                compiled([np.zeros((1, 2, h, 4), np.float32)])
            except RuntimeError:
                return False
            return True

        ran = [h for h in SIZES if runs(h)]
        report = check(str(ir))
        if least is None:
            assert ran == []
            assert [(p.code, p.severity) for p in report.problems] == [("BC211", "warning")]
            assert "it holds only from x_2 >= 5000 on, past every size tried" in report.problems[0].message
        else:
            assert ran == list(range(least, SIZES.stop))
            assert [(p.code, p.severity) for p in report.problems] == [("BC211", "info")]
            assert _least_said(report, "x_2") == least


def _flattened_pool(kernel: int) -> Any:
    """A network downsampling by 8, a fixed window of ``kernel`` with ceil_mode as a global pooling, and a reshape of
    the result to [N, C] (as torch's ``AvgPool2d(k, ceil_mode=True)`` and ``view(N, -1)`` export, HF's EfficientNet
    with a window of 1280): the window gives one row from 1 to ``kernel`` rows in, so the reshape fails below 8 and
    from ``8 * kernel + 8`` on, past the sizes tried for a large window."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["h"], "down", strides=[8, 8]),
        helper.make_node(
            "AveragePool", ["h"], ["p"], "pool", kernel_shape=[kernel, kernel], strides=[kernel, kernel], ceil_mode=1
        ),
        helper.make_node("Shape", ["x"], ["s"], "shape"),
        helper.make_node("Slice", ["s", "zero", "one", "zero"], ["n"], "batch"),
        helper.make_node("Concat", ["n", "channels"], ["target"], "target", axis=0),
        helper.make_node("Reshape", ["p", "target"], ["y"], "flatten"),
    ]
    inits = [
        numpy_helper.from_array(np.full((4, 3, 8, 8), 0.1, np.float32), "w"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([4], np.int64), "channels"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_requirements_after_a_window_are_tried_from_its_least_size_on() -> None:
    """The reshape after the pooling fails where the downsampling leaves no rows: below the least size its window
    needs, where the model fails anyway. It is no finding of its own; the window's note says the least size."""
    m = _flattened_pool(1024)
    session = _session(m)
    runs = [h for h in SIZES if _ort_runs(session, (2, 3, h, h))]
    assert runs == list(range(8, SIZES.stop))
    report = check(m)
    assert not report.fails()
    assert [(p.code, p.severity, p.node) for p in report.problems] == [("BC211", "info", "down")] * 2
    assert _least_said(report, "H") == 8 and _least_said(report, "W") == 8
    assert {(c.dim, c.allowed) for c in report.constraints} == {("H", "{8..}"), ("W", "{8..}")}


def test_a_requirement_of_another_rule_that_fails_below_a_size_stays_a_warning() -> None:
    """A constant index 3 along a sequence fails for fewer than 4 tokens: no window makes that the model's least
    size, and the index is the bug it usually is (an index meant for a longer input)."""
    pick = helper.make_node("Gather", ["x", "three"], ["y"], "pick", axis=2)
    graph = helper.make_graph(
        [pick],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, "H", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(3, np.int64), "three")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    session = _session(m)
    assert [h for h in SIZES if _ort_runs(session, (1, 2, h, 4))] == list(range(4, SIZES.stop))
    assert [(p.code, p.severity) for p in check(m).problems] == [("BC207", "warning")]


def test_a_requirement_that_fails_above_a_size_stays_a_warning() -> None:
    """A fixed window of 2 after the downsampling gives one row for 8 to 23 rows in, two from 24 on: the reshape
    to [N, 4] fails below 8 and from 24 on, which is no least size."""
    m = _flattened_pool(2)
    session = _session(m)
    assert [h for h in SIZES if _ort_runs(session, (2, 3, h, h))] == list(range(8, 24))
    problems = [p for p in check(m).problems if p.code == "BC203"]
    assert [(p.code, p.severity) for p in problems] == [("BC203", "warning")]
    assert "works only for" not in problems[0].message


def test_the_ir_names_the_same_least_size(tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino", reason="the IR is OpenVINO's (pip install openvino)")
    m = _chain(CHAINS["three strided downsamplings then a 3x3"])
    onnx.save(m, tmp_path / "m.onnx")
    ir = tmp_path / "m.xml"
    ov.save_model(ov.convert_model(str(tmp_path / "m.onnx")), str(ir))
    compiled = ov.Core().compile_model(str(ir), "CPU")

    def rows_out(h: int) -> bool:
        try:
            return bool(compiled([np.zeros((1, 2, h, 40), np.float32)])[0].size)
        except RuntimeError:  # the CPU plugin's "Can't clone desc if new dims are undefined"
            return False

    # where onnxruntime refuses, OpenVINO's CPU plugin gives an empty output or fails: the least size with rows out
    nonempty = [h for h in SIZES if rows_out(h)]
    assert nonempty == list(range(nonempty[0], SIZES.stop))
    report = check(str(ir))
    assert [(p.code, p.severity) for p in report.problems] == [("BC211", "info")]
    assert _least_said(report, "x_2") == nonempty[0] == 17


# -- the classifier ------------------------------------------------------------------------------------


def _brute_least(holds: Any, top: int = 4096) -> int | None:
    ok = [h for h in range(1, top + 1) if holds({"H": h})]
    return ok[0] if ok and ok == list(range(ok[0], top + 1)) else None


@settings(max_examples=100, deadline=None)
@given(st.integers(-5, 5), st.integers(1, 8), st.integers(1, 8), st.integers(1, 5), st.sampled_from(["floor", "ceil"]))
def test_least_sizes_of_a_window_after_strides_is_the_brute_force_one(
    pad: int, stride: int, stride2: int, need: int, rounding: str
) -> None:
    def size(h: int) -> int:
        a = (h + pad) // stride if rounding == "floor" else -(-(h + pad) // stride)
        return a // stride2

    def holds(env: dict[str, int]) -> bool:
        return size(env["H"]) >= need

    want = _brute_least(holds)
    got = least_sizes(holds, ["H"])
    assert (got or {}).get("H", 1 if want == 1 else None) == want


@pytest.mark.parametrize(
    ("why", "holds"),
    [
        ("fails above a size", lambda env: env["H"] <= 40),
        ("fails at odd sizes", lambda env: env["H"] % 2 == 0),
        ("fails below and above", lambda env: 8 <= env["H"] <= 15),
        ("fails everywhere", lambda env: False),
        ("holds everywhere", lambda env: True),
        ("a least size and odd sizes", lambda env: env["H"] >= 8 and env["H"] % 2 == 0),
    ],
)
def test_least_sizes_is_none_for_any_other_condition(why: str, holds: Any) -> None:
    assert least_sizes(holds, ["H"]) is None, why


def test_least_sizes_of_two_symbols_and_one_that_does_not_count() -> None:
    def holds(env: dict[str, int]) -> bool:
        return env["H"] // 32 >= 1 and env["W"] // 16 >= 2 and env["B"] >= 0

    assert least_sizes(holds, ["B", "H", "W"]) == {"H": 32, "W": 32}
    # a range that starts above a symbol's least size leaves it out
    assert least_sizes(holds, ["B", "H", "W"], {"H": (40, None)}) == {"W": 32}


def test_the_notes_of_a_window_do_not_name_the_root_of_a_problem() -> None:
    """A patch embedding's 4x4 window needs 4 rows and columns (two notes naming its weight, whose 16 channels meet
    a scale of 12 after it): the notes find their roots among themselves, so the scale is the problem's root, not
    the weight that the notes would add their weight to."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["h"], "patches", strides=[4, 4]),
        helper.make_node("Transpose", ["h"], ["t"], "to_channels_last", perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["t", "scale"], ["y"], "scaled"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((16, 3, 4, 4), np.float32), "w"),
            numpy_helper.from_array(np.ones(12, np.float32), "scale"),
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    with pytest.raises(Exception, match="Incompatible dimensions"):  # onnxruntime refuses it when it loads it
        _session(m)
    report = check(m)
    (problem,) = [p for p in report.problems if p.severity == "error"]
    assert (problem.code, problem.root) == ("BC101", "scale")
    assert {p.root for p in report.problems if p.code == "BC211"} <= {None, "w"}


@pytest.mark.parametrize(("pads", "least"), [([0, -2, 0, -1], 3), ([0, -4, 0, 0], 4), ([0, 1, 0, -1], 1)])
def test_a_crop_of_a_symbolic_axis_has_a_least_size(pads: list[int], least: int) -> None:
    """Negative pads crop an axis: onnxruntime fails where fewer than no rows would be left ("Tensor shape.Size() must
    be >= 0"), and gives an empty tensor where none are: the axis's least size is the rows the crop takes off."""
    crop = helper.make_node("Pad", ["x", "p"], ["y"], "crop")
    graph = helper.make_graph(
        [crop],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "H"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(pads, np.int64), "p")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    session = _session(m)
    ran = [h for h in SIZES if _ort_runs(session, (1, h))]
    assert ran == list(range(least, SIZES.stop))
    report = check(m)
    if least == 1:
        assert not report.problems
    else:
        assert [(p.code, p.severity) for p in report.problems] == [("BC211", "info")]
        assert _least_said(report, "H") == least


# -- a -1 inferred from an empty rest of the target ----------------------------------------------------------------


def _pooled_heads(conv: tuple[int, int], pool: int) -> Any:
    """[N, 8, L] through an unpadded convolution (kernel, stride) and an average pooling of window ``pool`` (stride
    1), transposed to [N, L', 8] and split into heads by ``Reshape(h, [0, 0, -1, 4])``: where L' is 0 (a pooling
    gives no windows of an input one row short of its window), the -1 cannot be inferred."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], "conv", strides=[conv[1]]),
        n("AveragePool", ["c"], ["p"], "pool", kernel_shape=[pool]),
        n("Transpose", ["p"], ["t"], "to_rows", perm=[0, 2, 1]),
        n("Reshape", ["t", "heads"], ["y"], "split_heads"),
    ]
    inits = [
        numpy_helper.from_array(np.full((8, 8, conv[0]), 0.1, np.float32), "w"),
        numpy_helper.from_array(np.array([0, 0, -1, 4], np.int64), "heads"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


@pytest.mark.parametrize(("conv", "pool"), [((3, 1), 2), ((5, 2), 3), ((1, 4), 2)])
def test_a_minus_one_with_nothing_else_to_fill_is_the_models_least_size(conv: tuple[int, int], pool: int) -> None:
    """The pooled length is 0 one row below the pooling's window; the reshape's -1 then has no elements to be
    inferred from (onnxruntime: "The input tensor cannot be reshaped"), which is where the model starts to run.
    (A strided pooling of an input shorter than its window is one partial window in onnxruntime, none in the
    ONNX spec and its reference evaluator, which bcast follows: the poolings here have stride 1.)"""
    m = _pooled_heads(conv, pool)
    session = _session(m)
    runs = [n for n in SIZES if _ort_runs(session, (2, 8, n))]
    least = runs[0]
    assert runs == list(range(least, SIZES.stop)) and least == conv[0] + (pool - 1) * conv[1]
    report = check(m)
    assert not report.fails(), [p.message for p in report.problems]
    assert _least_said(report, "L") == least, [p.message for p in report.problems]
    assert [c.allowed for c in report.constraints if c.dim == "L"] == [f"{{{least}..}}"]


def test_a_target_with_nothing_besides_its_minus_one_is_an_error() -> None:
    """A literal 0 (allowzero) beside the -1: no size of the input gives the -1 anything to be inferred from;
    onnxruntime refuses the model ("Product cannot be 0 in combination with -1")."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Reshape", ["x", "t"], ["y"], "reshape", allowzero=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0, -1], np.int64), "t")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    with pytest.raises(Exception, match="Product cannot be 0 in combination with -1"):
        _session(m)
    report = check(m)
    assert [(p.code, p.severity) for p in report.problems] == [("BC203", "error")], report.render()


def test_a_broadcast_that_fails_only_below_the_least_size_is_a_note() -> None:
    """A convolution of window 5 needs L >= 5; the input's first 4 steps, ``x[..., :4]`` (``min(4, L)`` of them),
    meet a table of 4: a clash only where L < 4, where the model fails anyway. A note of what the least size says,
    not a warning."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], "conv"),
        n("Slice", ["x", "zero", "four", "two"], ["head"], "first_steps"),
        n("Add", ["head", "table"], ["y"], "add_table"),
    ]
    inits = [
        numpy_helper.from_array(np.full((8, 8, 5), 0.1, np.float32), "w"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([4], np.int64), "four"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "table"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, "L"])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("c", TensorProto.FLOAT, None),
        ],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    session = _session(m)
    runs = [n for n in SIZES if _ort_runs(session, (2, 8, n))]
    assert runs == list(range(5, SIZES.stop))  # the window binds; at L = 3 the table clashes too
    report = check(m)
    assert not report.fails(), [p.message for p in report.problems]
    assert _least_said(report, "L") == 5
    [clash] = [p for p in report.problems if p.node == "add_table"]
    assert clash.severity == "info" and "holds from the model's least sizes on (L >= 5)" in clash.message
