"""What proves a finding of the checker: whether a model's runtime runs it, onnxruntime for an ONNX file and OpenVINO
for an IR. The callers skip where the runtime is not installed (``pytest.importorskip``) before they ask."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def runs(path: Path, feeds: dict[str, np.ndarray]) -> bool:
    """Whether the model's runtime runs it on ``feeds``: onnxruntime for ONNX, OpenVINO for an IR."""
    try:
        if path.suffix == ".xml":
            import openvino as ov

            core = ov.Core()
            core.compile_model(core.read_model(str(path)), "CPU").create_infer_request().infer(feeds)
        else:
            import onnxruntime as ort

            ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:  # the runtime's refusal is the proof
        return False
    return True
