"""An op the model's opset does not define (BC304), judged by onnxruntime, which refuses such a model at load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bcast.check import check

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle", exc_type=ImportError)

from onnx import TensorProto, helper  # noqa: E402


def _model(op: str, opset: int, *, function: bool = False) -> object:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="act")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    functions = []
    if function:  # a model-local function of the default domain defines the op
        body = [helper.make_node("Relu", ["a"], ["b"])]
        functions = [helper.make_function("", op, ["a"], ["b"], body, [helper.make_opsetid("", opset)])]
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], functions=functions)


def _loads(model: object) -> bool:
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]
        session.run(None, {"x": np.ones((2, 8), np.float32)})
    except Exception:  # onnxruntime's NotImplemented / InvalidGraph: the model does not load
        return False
    return True


@pytest.mark.parametrize(
    ("op", "opset", "function", "words"),
    [
        ("Gelu", 17, False, "from opset 20 on"),
        ("FooBar", 17, False, "defines no op FooBar"),
        ("Gelu", 20, False, None),
        ("Relu", 17, False, None),
        ("FooBar", 17, True, "a local function defines it"),
    ],
)
def test_an_op_the_opset_lacks_is_unsupported(op: str, opset: int, function: bool, words: str | None) -> None:
    model = _model(op, opset, function=function)
    found = [p for p in check(model).problems if p.kind == "unsupported"]
    if function:  # what the function's body does is what the model runs, whatever onnxruntime makes of it
        assert found == []
        return
    assert _loads(model) == (words is None)
    if words is None:
        assert found == []
    else:
        [p] = found
        assert (p.code, p.severity, p.node) == ("BC304", "error", "act") and words in p.message


def _normalisation(op: str, opset: int) -> object:
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale"], ["y"], name="norm", axis=-1, epsilon=1e-5)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("scale", TensorProto.FLOAT, [8], [1.0] * 8)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _openvino_runs(model: object, tmp_path: Path) -> bool | None:
    """Whether OpenVINO reads, compiles and runs the model; ``None`` where openvino is not installed."""
    try:
        import openvino as ov
    except ImportError:
        return None
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())  # type: ignore[attr-defined]
    try:
        core = ov.Core()
        core.compile_model(core.read_model(str(path)), "CPU")({"x": np.ones((2, 8), np.float32)})
    except Exception:
        return False
    return True


@pytest.mark.parametrize(
    ("op", "opset"),
    [("SimplifiedLayerNormalization", 13), ("SimplifiedLayerNormalization", 17), ("LayerNormalization", 13)],
)
def test_a_normalisation_the_runtimes_define_in_the_default_domain_is_supported(
    op: str, opset: int, tmp_path: Path
) -> None:
    """onnxruntime's optimizer writes SimplifiedLayerNormalization (and, before opset 17, LayerNormalization) in the
    default domain, where ONNX defines neither: onnxruntime registers both there, and OpenVINO reads them, so the
    model runs; only onnx.checker refuses it. No BC304, and the node's shape is checked as any normalisation's."""
    model = _normalisation(op, opset)
    assert _loads(model)
    assert _openvino_runs(model, tmp_path) in (True, None)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)  # type: ignore[arg-type]
    report = check(model)
    assert report.problems == [], report.render()
    assert [(n.name, n.output) for n in report.nodes] == [("norm", "[B,8]")]
