"""A size an exporter froze in an intermediate annotation (the dynamo exporter's ``value_info``: ``[B, 1]`` where
the tensor is ``[B, S]``) is wrong wherever the two differ, and onnxruntime may fail there: it plans its buffers by
the annotation and reuses one that was truly ``[B, 1]``. The check says for which sizes, proven by onnxruntime; a
graph output's annotation (which onnxruntime only compares with) and a data-dependent count say nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the models", exc_type=ImportError)
from onnx import TensorProto, helper  # noqa: E402

from bcast.check import check  # noqa: E402

F = TensorProto.FLOAT


def _model(declared: dict[str, list[Any]], output: list[Any] | None = None) -> Any:
    """A mean over S ([B, 1], truly), then ``q = x * -mean`` ([B, S]) and ``exp(q) + x``; ``declared``: the
    value_info the file holds, ``output``: the graph output's annotation."""
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["x"], ["p"], name="mean", axes=[1], keepdims=1),
        n("Neg", ["p"], ["r"], name="negate"),
        n("Mul", ["x", "r"], ["q"], name="scale"),
        n("Exp", ["q"], ["q2"], name="exp"),
        n("Add", ["q2", "x"], ["z"], name="residual"),
    ]
    infos = [helper.make_tensor_value_info(t, F, dims) for t, dims in declared.items()]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, ["B", "S"])],
        [helper.make_tensor_value_info("z", F, output if output is not None else ["B", "S"])],
        value_info=infos,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _runs(model: Any, s: int) -> bool:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    try:
        sess.run(None, {"x": np.ones((2, s), np.float32)})
    except Exception:  # onnxruntime's Fail: "Shape mismatch attempting to re-use buffer"
        return False
    return True


@pytest.mark.parametrize("tensor", ["q", "q2"])
def test_a_size_frozen_inside_the_graph_is_said_where_it_fails(tensor: str) -> None:
    model = _model({tensor: ["B", 1]})
    assert _runs(model, 1) and not _runs(model, 2) and not _runs(model, 5)
    report = check(model)
    [frozen] = [p for p in report.problems if p.kind == "declared-shape"]
    assert frozen.severity == "warning"
    assert f"declares {tensor} as [B,1], 1 at axis 1 where propagation gives S" in frozen.message
    assert "it fails unless S is 1" in frozen.message, frozen.message


def test_right_annotations_and_an_output_annotation_say_nothing() -> None:
    right = _model({"p": ["B", 1], "q": ["B", "S"], "q2": ["B", "S"]})
    assert all(_runs(right, s) for s in (1, 2, 5))
    assert check(right).problems == []
    output = _model({}, output=["B", 1])  # onnxruntime only logs that the output's shape differs
    assert all(_runs(output, s) for s in (1, 2, 5))
    assert check(output).problems == []


def test_a_count_the_data_decides_is_not_a_frozen_size() -> None:
    """NonZero's count annotated as the export's 3: a count of the data, which no size of the inputs decides."""
    n = helper.make_node
    nodes = [n("NonZero", ["x"], ["idx"], name="nonzero"), n("Relu", ["idx"], ["z"], name="relu")]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, ["B", "S"])],
        [helper.make_tensor_value_info("z", TensorProto.INT64, None)],
        value_info=[helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert check(model).problems == []
