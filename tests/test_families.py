"""Exports of many families, each verdict proven by the runtime: clean models pass the gate, bugs are found.

``tests/data/families`` keeps a few models of each family the corpus builders export
(``benchmarks/corpus/vision.py``: timm ConvNeXt, Swin, ResNet (QDQ), hand-written and diffusers U-Nets,
an fp16 copy; ``llm.py``: decoder LLMs with a KV cache from the TorchScript and dynamo exporters and
from OpenVINO's converter; ``others.py``: scikit-learn through skl2onnx, Keras through tf2onnx). Each
bug was kept only when onnxruntime (or OpenVINO) failed on it where its manifest says and, for a latent
one, ran where it says; each clean model ran at two sizes. The manifest records them, and the tests
here run onnxruntime again on a sample of both kinds so that the proof is not only taken on trust.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check

HERE = Path(__file__).parent / "data" / "families"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
MODELS: list[dict[str, Any]] = MANIFEST["models"]
#: the bug classes whose finding is a note: a length that works only up to a table's size (exit 0 by design)
LIMITS = {"rotary-table-length", "position-table-length"}


def _id(e: dict[str, Any]) -> str:
    return str(e["model"])


@pytest.mark.parametrize("entry", [e for e in MODELS if not e["bug"]], ids=_id)
def test_a_clean_export_passes_the_gate(entry: dict[str, Any]) -> None:
    report = check(str(HERE / entry["model"]))
    assert report.clean, report.render()
    assert not report.unchecked or all("pip install" not in u.reason for u in report.unchecked)


@pytest.mark.parametrize("entry", [e for e in MODELS if e["bug"]], ids=_id)
def test_a_proven_bug_is_found_at_its_node(entry: dict[str, Any]) -> None:
    report = check(str(HERE / entry["model"]))
    if entry["bug"] in LIMITS:
        found = [p for p in report.problems if p.kind == "length-limit"]
    else:
        assert not report.clean, report.render()
        found = [p for p in report.problems if p.severity in ("error", "warning")]
    assert found, report.render()
    named = {n for p in found for n in p.nodes}
    assert named & set(entry["expect_nodes"]), (entry["expect_nodes"], report.render())


def _feeds(entry: dict[str, Any], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for name, axes in entry["inputs"].items():
        shape = tuple(a if isinstance(a, int) else _size(a, sizes) for a in axes)
        dtype = np.dtype(entry["dtypes"][name])
        out[name] = rng.integers(1, 50, shape).astype(dtype) if dtype.kind in "iu" else rng.random(shape).astype(dtype)
    return out


def _size(axis: str, sizes: dict[str, int]) -> int:
    if axis in sizes:
        return sizes[axis]
    # an exporter's sum of the symbols (past_seq + seq)
    return sum(sizes[part.strip()] for part in axis.split("+"))


#: models whose verdict is proven again here by onnxruntime (the rest were proven when the corpus was built)
PROVEN = [
    "vision/unet_nofit.torchscript.onnx",
    "others/keras_unet.tf2onnx.onnx",
    "vision/timm_convnext.torchscript.onnx",
]


@pytest.mark.parametrize("name", PROVEN)
def test_the_runtime_agrees(name: str) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle", exc_type=ImportError)
    [entry] = [e for e in MODELS if e["model"] == name]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(HERE / name), opts, providers=["CPUExecutionProvider"])
    if entry["passes"]:
        session.run(None, _feeds(entry, entry["passes"]))
    if entry["bug"]:
        with pytest.raises(Exception, match="Concat"):
            session.run(None, _feeds(entry, entry["fails"]))
