"""Real exports of small transformers, kept as they came (``tests/data/zoo``): the shapes of each class of export
that once made bcast warn of a clean model, and one model that really fails where bcast says.

Each was built from a ``transformers`` config with random weights and run by its runtime (OpenVINO for an IR,
onnxruntime for ONNX) where its manifest says it runs, and where it says it fails. The classes: an IR of the
torch frontend, whose inputs' dims have no names and meet through shape arithmetic (BLOOM's batch folded
into its heads, GPT-2's mask reshaped by the ids' batch, DeBERTa's nested batch); an IR of a dynamo ONNX export
(a reshape's -1 over one input's elements by another's; a position table cut to the mask's length); an
onnxruntime-optimised model (SimplifiedLayerNormalization in the default domain); an IR whose cache inputs'
layers are numbered; and a ViT whose image dims were all left open (a table of 17 positions fits one size). Then the
caches' own classes: OPT's positions counted along the mask from the cache's length on (its IR, and its dynamo
export's ``total_seq - past_seq``), BLOOM's later layers whose length is their cache's elements over the first
layer's batch, and a BART decoding step whose encoder's length is axis 1 of its states and mask and axis 2 of its
cross-attention cache, in both IRs (the PyTorch frontend's leaves the caches' heads open). And a ``diffusers`` SD3
transformer's dynamo export, every dim named apart, whose grid of positions cropped to the latents' height and width
is met again by residuals past the length limit it notes.

Two more once hid what their runtime does, their dims lost to shape arithmetic: a GPT-NeoX whose heads pass
through ``torch.chunk``'s computed split sizes (the cache's heads are checked again), and a Swin traced at a
size that needed no window padding, so its crop is missing: its windows' reshape fails at 36x36, a size the
patch merging alone allows, and OpenVINO fails it there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check

ZOO = Path(__file__).resolve().parent / "data" / "zoo"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())["models"]


def _feeds(entry: dict[str, Any], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for name, dims in entry["inputs"].items():
        shape = [d if isinstance(d, int) else sum(sizes[p] for p in d.split(" + ")) for d in dims]
        if name.endswith("input_ids"):
            out[name] = rng.integers(3, 100, size=shape, dtype=np.int64)
        elif name.endswith("attention_mask"):
            out[name] = np.ones(shape, np.int64)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32)
    return out


def _runs(entry: dict[str, Any], sizes: dict[str, int]) -> bool:
    """Whether the model's runtime runs it at ``sizes`` (skipped where that runtime is not installed)."""
    path, feeds = ZOO / entry["model"], _feeds(entry, sizes)
    if path.suffix == ".xml":
        ov = pytest.importorskip("openvino", reason="OpenVINO is the IR's oracle", exc_type=ImportError)
        try:
            core = ov.Core()
            core.compile_model(core.read_model(str(path)), "CPU").create_infer_request().infer(feeds)
        except Exception:  # OpenVINO's refusal, at compile or infer time, is the proof
            return False
        return True
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the ONNX model's oracle", exc_type=ImportError)
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["model"])
def test_each_export_is_reported_as_its_runtime_runs_it(entry: dict[str, Any]) -> None:
    report = check(str(ZOO / entry["model"]))
    assert report.clean is entry["clean"], report.render()
    kinds = {p.kind for p in report.problems if p.severity != "info"}
    assert kinds == set(entry.get("warnings", [])), report.render()
    assert {p.kind for p in report.problems if p.severity == "info"} == set(entry["notes"]), report.render()
    # an IR's cache input is called by the name a caller feeds it by (past_key_0), whatever its layer is called (3):
    # each layer's keys meet its queries, so each is named (an ONNX file names the dims themselves)
    said = " ".join([c.allowed for c in report.constraints] + [p.message for p in report.problems])
    if entry["model"].endswith(".xml"):
        assert all(f"{name}_0" in said for name in entry["inputs"] if name.startswith("past_key_")), said[:400]


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["model"])
def test_each_export_runs_and_fails_where_its_manifest_says(entry: dict[str, Any]) -> None:
    for sizes in entry["runs"]:
        assert _runs(entry, sizes), sizes
    if "fails" in entry:
        assert not _runs(entry, entry["fails"]), entry["fails"]
