"""What a model needs of its inputs' dims, when the file leaves them unnamed (an OpenVINO IR), is no bug.

OpenVINO drops the dims' names, so every input's dynamic dim is a symbol of its own
(``input_ids_0``, ``attention_mask_1``). That two inputs' batches agree, or that the mask's length is
``past + seq``, is how the model must be called: listed with the symbols, not reported. That a batch
must equal a length (a mask reshaped with its axes swapped) is a bug, in the IR as in the ONNX model
it was converted from. The oracles are onnxruntime and OpenVINO, run where the dims agree and where
they differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bcast.check import check

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ov = pytest.importorskip("openvino", reason="the IRs are converted by openvino", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the ONNX models", exc_type=ImportError)

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _mask_model(directory: Path, *, swapped: bool) -> tuple[Path, Path]:
    """Embeddings ``[B, S, 8]`` times the mask reshaped to ``[B, S, 1]`` (or, swapped, ``[S, B, 1]``)."""
    first, second = ("seq", "batch") if swapped else ("batch", "seq")
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"], name="embed_tokens"),
        helper.make_node("Shape", ["attention_mask"], ["shape"], name="mask_shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="mask_batch", axis=0),
        helper.make_node("Gather", ["shape", "one"], ["seq"], name="mask_seq", axis=0),
        helper.make_node("Concat", [first, second, "one"], ["target"], name="mask_target", axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], name="mask_float", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["mask_f", "target"], ["mask"], name="mask_3d"),
        helper.make_node("Mul", ["x", "mask"], ["y"], name="masked"),
    ]
    graph = helper.make_graph(
        nodes,
        "mask",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((16, 8), np.float32), "embed"),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            numpy_helper.from_array(np.array([1], np.int64), "one"),
        ],
    )
    path = directory / ("swapped.onnx" if swapped else "mask.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return path, xml


def _feeds(b: int, s: int) -> dict[str, np.ndarray]:
    return {"input_ids": np.ones((b, s), np.int64), "attention_mask": np.ones((b, s), np.int64)}


def _runs_onnx(path: Path, b: int, s: int) -> bool:
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, _feeds(b, s))
    except Exception:
        return False
    return True


def _runs_ir(xml: Path, b: int, s: int) -> bool:
    core = ov.Core()
    try:
        core.compile_model(core.read_model(str(xml)), "CPU").create_infer_request().infer(_feeds(b, s))
    except Exception:
        return False
    return True


def test_inputs_that_agree_by_contract_are_no_problem_in_the_ir(tmp_path: Path) -> None:
    path, xml = _mask_model(tmp_path, swapped=False)
    assert _runs_onnx(path, 2, 5) and _runs_ir(xml, 2, 5)
    assert check(str(path)).problems == []
    report = check(str(xml))
    assert report.clean and report.problems == [], report.problems
    assert report.constraints, "the IR's inputs must agree: that is listed with the symbols"


def test_a_batch_made_to_meet_a_length_is_found_in_the_ir_as_in_onnx(tmp_path: Path) -> None:
    path, xml = _mask_model(tmp_path, swapped=True)
    assert _runs_onnx(path, 3, 3) and not _runs_onnx(path, 2, 5)  # latent: only when batch == seq
    assert _runs_ir(xml, 3, 3) and not _runs_ir(xml, 2, 5)
    for model in (path, xml):
        report = check(str(model))
        assert not report.clean, (model.suffix, report.render())
        # the IR names the layer after its output (y)
        assert {p.op for p in report.problems if p.severity == "warning"} & {"Mul", "Multiply"}, report.render()
