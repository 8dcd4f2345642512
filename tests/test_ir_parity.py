"""IR parity: every model of the kept corpus, converted by ``openvino.convert_model``, gets the verdict its
ONNX file gets: a bug found in the ONNX model is found in the IR made of it, a clean one stays clean.

The IR has no names for its dims (each input's dynamic dim is a symbol of its own), other layer names
and its own ops (ShapeOf, StridedSlice, ScaledDotProductAttention...), so this is the checker's two
readers and two op sets agreeing on the same bugs. A model that OpenVINO refuses to convert is
skipped with OpenVINO's reason (an op its converter lacks, or the bug itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_corpus import CORPUS, ENTRIES, _id

ov = pytest.importorskip("openvino", reason="the IRs are made by openvino.convert_model", exc_type=ImportError)
pytest.importorskip("onnx", reason="the ONNX side is read with the onnx package", exc_type=ImportError)

#: a clean model and a bug in every run; the rest with the full suite (each conversion takes seconds)
_EVERY_RUN = {"onnx/bert.torchscript.onnx", "onnx/bert.torchscript.mask-wrong-axis.onnx"}
ONNX = [
    pytest.param(e, id=_id(e), marks=() if e["model"] in _EVERY_RUN else pytest.mark.full)
    for e in ENTRIES
    if e["format"] == "onnx"
]


@pytest.mark.parametrize("entry", ONNX)
def test_the_ir_of_a_model_gets_its_verdict(entry: dict[str, Any], tmp_path: Path) -> None:
    from bcast.check import check

    xml = tmp_path / (Path(entry["model"]).stem + ".xml")
    try:
        ov.save_model(ov.convert_model(str(CORPUS / entry["model"])), str(xml), compress_to_fp16=False)
    except Exception as e:  # an op OpenVINO's converter lacks, or the bug itself
        pytest.skip(f"openvino.convert_model cannot convert {entry['model']}: {str(e).splitlines()[0][:160]}")
    onnx_report, ir_report = check(str(CORPUS / entry["model"])), check(str(xml))
    assert onnx_report.fails("warning") == bool(entry["bug"]), onnx_report.render()
    assert ir_report.fails("warning") == bool(entry["bug"]), ir_report.render()
