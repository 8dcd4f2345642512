"""QuantizeLinear and DequantizeLinear parameters' shapes, against onnxruntime: a scalar and a 1-element vector
are one per-tensor value; a per-axis zero point has the scale's length."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bcast.check import check


def _model(op: str, scale: tuple[int, ...], zero: tuple[int, ...], axis: int | None) -> Any:
    """One ``op`` on an input of ``[2, 3]``, with a scale and a zero point of these shapes."""
    attrs = {} if axis is None else {"axis": axis}
    x_type = TensorProto.INT8 if op == "DequantizeLinear" else TensorProto.FLOAT
    y_type = TensorProto.FLOAT if op == "DequantizeLinear" else TensorProto.INT8
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], "q", **attrs)],
        "g",
        [helper.make_tensor_value_info("x", x_type, [2, 3])],
        [helper.make_tensor_value_info("y", y_type, None)],
        [
            numpy_helper.from_array(np.full(scale, 0.5, np.float32), "s"),
            numpy_helper.from_array(np.zeros(zero, np.int8), "z"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _runs(m: Any, op: str) -> bool:
    dtype = np.int8 if op == "DequantizeLinear" else np.float32
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {"x": np.ones((2, 3), dtype)})
    except Exception:  # onnxruntime's Fail: the model does not run
        return False
    return True


OPS = ["DequantizeLinear", "QuantizeLinear"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("scale", "zero"), [((1,), ()), ((), (1,)), ((1,), (1,)), ((), ()), ((3,), (3,))])
def test_what_onnxruntime_runs_is_clean(op: str, scale: tuple[int, ...], zero: tuple[int, ...]) -> None:
    """onnxruntime's own quantizer writes a bias's scale as ``[1]`` and its zero point as a scalar."""
    m = _model(op, scale, zero, 1 if scale == (3,) else None)
    assert _runs(m, op)
    assert check(m).problems == []


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("scale", "zero"), [((3,), (2,)), ((3,), ()), ((1,), (3,)), ((1,), (1, 1))])
def test_what_onnxruntime_refuses_is_found(op: str, scale: tuple[int, ...], zero: tuple[int, ...]) -> None:
    """A per-axis zero point of another length, or a per-tensor one of several values."""
    m = _model(op, scale, zero, 1)
    assert not _runs(m, op)
    got = [(p.kind, p.node, p.severity) for p in check(m).problems]
    assert got == [("shape-mismatch", "q", "error")]
