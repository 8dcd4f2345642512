"""A tensor every element of which holds one value (a ConstantOfShape, a scalar expanded, the IR's Broadcast of a
constant) has a known NonZero count: all its elements, or none. The TorchScript exporter counts positions that way
(Longformer's ``NonZero(ConstantOfShape(shape, 1))``), and a count left unknown made every reshape of the indices a
warning at sizes where the model runs. Each model is run by onnxruntime (and its IR by OpenVINO) at several sizes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the models", exc_type=ImportError)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bcast.check import check  # noqa: E402

SIZES = [(1, 1), (2, 3), (3, 5), (4, 16)]


def _indices(fill: float, how: str) -> Any:
    """The indices of the non-zero elements of a [B, S] tensor filled with ``fill`` (``how``: a ConstantOfShape of
    x's shape, or a scalar Expanded to it), transposed to [count, 2] and reshaped to [B, S, 2]: right wherever the
    count is B * S."""
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["shape"], name="shape")]
    if how == "constant_of_shape":
        value = numpy_helper.from_array(np.array([fill], np.float32), "value")
        nodes.append(n("ConstantOfShape", ["shape"], ["filled"], name="fill", value=value))
    else:
        nodes.append(n("Expand", ["scalar"], ["filled"], name="fill"))
        nodes[-1].input.append("shape")
    nodes += [
        n("NonZero", ["filled"], ["idx"], name="nonzero"),
        n("Transpose", ["idx"], ["pairs"], name="pairs", perm=[1, 0]),
        n("Concat", ["shape", "two"], ["target"], name="target", axis=0),
        n("Reshape", ["pairs", "target"], ["y"], name="per_element"),
    ]
    inits = [
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array(fill, np.float32), "scalar"),
    ]
    return _model(nodes, inits, TensorProto.INT64)


def _model(nodes: list[Any], inits: list[Any], out_type: int) -> Any:
    """The nodes as a model of the input ``x`` [B, S] and the output ``y``."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S"])],
        [helper.make_tensor_value_info("y", out_type, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _runs(model: Any, b: int, s: int) -> bool:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    try:
        sess.run(None, {"x": np.ones((b, s), np.float32)})
    except Exception:  # onnxruntime's RuntimeException: the reshape of the indices fails
        return False
    return True


@pytest.mark.parametrize("how", ["constant_of_shape", "expand"])
@pytest.mark.parametrize("fill", [1.0, -0.5])
def test_the_indices_of_a_filled_tensor_count_its_elements(how: str, fill: float) -> None:
    model = _indices(fill, how)
    assert all(_runs(model, b, s) for b, s in SIZES)
    report = check(model)
    assert report.problems == [], report.render()


@pytest.mark.parametrize("how", ["constant_of_shape", "expand"])
def test_a_tensor_filled_with_zeros_has_no_indices(how: str) -> None:
    """None of its elements is non-zero: the indices are [0, 2], which the reshape to [B, S, 2] refuses at every
    size; said as an error, not as a count that might be right."""
    model = _indices(0.0, how)
    assert not any(_runs(model, b, s) for b, s in SIZES)
    report = check(model)
    assert [p.severity for p in report.problems] == ["error"], report.render()
    assert report.problems[0].node == "per_element"


def test_an_ir_broadcast_of_a_constant_counts_its_elements(tmp_path: Path) -> None:
    """OpenVINO converts the ConstantOfShape to a Broadcast of the constant 1: the same count."""
    ov = pytest.importorskip("openvino", reason="the IR is converted by openvino", exc_type=ImportError)
    src = tmp_path / "m.onnx"
    onnx.save(_indices(1.0, "constant_of_shape"), src)
    xml = tmp_path / "m.xml"
    ov.save_model(ov.convert_model(str(src)), str(xml))
    assert "NonZero" in xml.read_text() and 'type="Broadcast"' in xml.read_text()
    compiled = ov.Core().compile_model(str(xml), "CPU")
    for b, s in SIZES:
        got = compiled({0: np.ones((b, s), np.float32)})[0]
        assert got.shape == (b, s, 2)
    report = check(str(xml))
    assert [p for p in report.problems if p.severity in ("error", "warning")] == [], report.render()


def _strided_reads(scale: int) -> Any:
    """Longformer's ``as_strided`` as the TorchScript exporter writes it: ``x`` [B, S] flattened (B*S elements) and
    read at an arange made by ``NonZero(ConstantOfShape([scale*S], 1))``: past its end where ``scale*S > B*S``."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Gather", ["shape", "one"], ["s"], name="length", axis=0),
        n("Mul", ["s", "scale"], ["count"], name="count"),
        n("Unsqueeze", ["count", "axis0"], ["count1"], name="count1"),
        n("ConstantOfShape", ["count1"], ["ones"], name="ones", value=numpy_helper.from_array(np.array([1], np.int64))),
        n("NonZero", ["ones"], ["nz"], name="arange"),
        n("Squeeze", ["nz", "axis0"], ["idx"], name="positions"),
        n("Reshape", ["x", "flat_shape"], ["flat"], name="flatten"),
        n("Gather", ["flat", "idx"], ["y"], name="read", axis=0),
    ]
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array(scale, np.int64), "scale"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([-1], np.int64), "flat_shape"),
    ]
    return _model(nodes, inits, TensorProto.FLOAT)


def test_an_arange_counted_by_nonzero_reads_a_flattened_tensor_within_its_size() -> None:
    """Read at ``2*S`` positions, the B*S elements suffice from B = 2 on (onnxruntime: "indices element out of data
    bounds" at B = 1); at ``S`` positions, at every size."""
    past, within = _strided_reads(2), _strided_reads(1)
    assert not _runs(past, 1, 3) and _runs(past, 2, 3) and _runs(past, 3, 5)
    assert all(_runs(within, b, s) for b, s in SIZES)
    [read] = check(past).problems
    assert (read.kind, read.severity, read.node) == ("index-out-of-range", "warning", "read"), read.message
    assert "fails at B = 1" in read.message, read.message
    assert check(within).problems == []
