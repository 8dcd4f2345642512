"""The kept broadcasting-bug corpus (``tests/data/corpus``): each bug proven by a runtime, found by ``bcast check``.

The corpus holds real exports of tiny Hugging Face models (TorchScript and dynamo exporters, and
OpenVINO IR converted from them) with realistic broadcasting bugs injected, built by
``python -m benchmarks.corpus.build --out tests/data/corpus --small``. Its ``manifest.json`` says,
for each file, the bug (or ``null`` for a clean model), the nodes a good checker should name, the
sizes where the runtime fails and, for a latent bug, the sizes where it still runs.

The oracles are the runtimes, never bcast:

* (a) onnxruntime / OpenVINO fail on every bugged model at its ``fails`` sizes, run a latent one at
  its ``passes`` sizes, and run every clean model: the bugs are real and the clean models are clean;
* (b) ``bcast check`` reports, for every bug, a problem naming one of its ``expect_nodes``;
* (c) ``bcast check`` reports nothing at all on the clean models.

Only the kept files are read: no exporter or model library is needed here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CORPUS = Path(__file__).parent / "data" / "corpus"
MANIFEST = CORPUS / "manifest.json"


def _entries() -> list[dict[str, Any]]:
    if not MANIFEST.is_file():
        return []
    with open(MANIFEST) as f:
        return list(json.load(f)["models"])


ENTRIES = _entries()
BUGGED = [e for e in ENTRIES if e["bug"]]
CLEAN = [e for e in ENTRIES if not e["bug"]]


def _id(e: dict[str, Any]) -> str:
    return str(e["model"])


def _needs(entry: dict[str, Any]) -> None:
    """Skip (with the reason) when the runtime for this entry's format is not installed."""
    if entry["format"] == "onnx":
        pytest.importorskip("onnx", reason="the ONNX part of the corpus needs the onnx package", exc_type=ImportError)
        pytest.importorskip("onnxruntime", reason="proving the ONNX bugs needs onnxruntime", exc_type=ImportError)
    else:
        pytest.importorskip("openvino", reason="proving the OpenVINO IR bugs needs openvino", exc_type=ImportError)


def feeds(entry: dict[str, Any], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Inputs for ``entry`` with its symbolic axes set to ``sizes`` (as the corpus builder makes them)."""
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for name, axes in entry["inputs"].items():
        shape = tuple(sizes[a] if isinstance(a, str) else int(a) for a in axes)
        if name in {"input_ids", "decoder_input_ids"}:
            out[name] = rng.integers(3, 90, size=shape, dtype=np.int64)
        elif name == "attention_mask":
            mask = np.ones(shape, dtype=np.int64)
            if len(shape) == 2 and shape[1] > 2:
                mask[-1, -1] = 0
            out[name] = mask
        else:
            out[name] = rng.standard_normal(shape).astype(entry["dtypes"][name])
    return out


def run(entry: dict[str, Any], sizes: dict[str, int]) -> str | None:
    """Load and run the entry's model at ``sizes`` with its runtime: ``None`` if it runs, else the error."""
    path = str(CORPUS / entry["model"])
    try:
        if entry["format"] == "onnx":
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.log_severity_level = 4
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            sess.run(None, feeds(entry, sizes))
        else:
            import openvino as ov

            core = ov.Core()
            req = core.compile_model(core.read_model(path), "CPU").create_infer_request()
            req.infer(feeds(entry, sizes))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def test_manifest_is_consistent() -> None:
    """The kept set is there, small, and every entry names existing files and its expected nodes."""
    assert ENTRIES, f"no corpus at {MANIFEST}: rebuild it with python -m benchmarks.corpus.build --small"
    total = sum(f.stat().st_size for f in CORPUS.rglob("*") if f.is_file())
    assert total < 8 * 2**20, f"the kept corpus is {total} bytes"
    assert len(BUGGED) >= 15 and len(CLEAN) >= 3
    assert sum(e["format"] == "openvino-ir" for e in BUGGED) >= 4
    for e in ENTRIES:
        assert (CORPUS / e["model"]).is_file(), e["model"]
        if e["format"] == "openvino-ir":
            assert (CORPUS / e["model"]).with_suffix(".bin").is_file(), e["model"]
        if e["bug"]:
            assert e["expect_nodes"] and e["edited"] and e["fails"], e["model"]
            assert (e["passes"] is not None) == e["latent"], e["model"]


@pytest.mark.parametrize("entry", BUGGED, ids=_id)
def test_bug_is_proven_by_the_runtime(entry: dict[str, Any]) -> None:
    """(a) The runtime rejects the bugged model at its ``fails`` sizes; a latent one runs at ``passes``."""
    _needs(entry)
    assert run(entry, entry["fails"]) is not None, f"{entry['model']} runs at {entry['fails']}: not a bug"
    if entry["latent"]:
        err = run(entry, entry["passes"])
        assert err is None, f"{entry['model']} is latent but fails at {entry['passes']}: {err}"


@pytest.mark.parametrize("entry", CLEAN, ids=_id)
def test_clean_model_runs(entry: dict[str, Any]) -> None:
    """(a) Every clean model runs at its default sizes."""
    _needs(entry)
    err = run(entry, entry["passes"])
    assert err is None, err


def _problems(entry: dict[str, Any]) -> list[dict[str, Any]]:
    if entry["format"] == "onnx":
        pytest.importorskip("onnx", reason="bcast check reads ONNX models with the onnx package", exc_type=ImportError)
    from bcast.check import check

    return list(check(os.fspath(CORPUS / entry["model"])).to_dict()["problems"])


def _named(problem: dict[str, Any]) -> list[str]:
    """Every node a finding involves: the clash, its root cause and the chain between them."""
    nodes = problem.get("nodes")
    return list(nodes) if nodes else [problem["node"]]


@pytest.mark.parametrize("entry", BUGGED, ids=_id)
def test_checker_finds_the_bug(entry: dict[str, Any]) -> None:
    """(b) ``bcast check`` reports a problem that names one of the bug's expected nodes."""
    problems = _problems(entry)
    assert problems, f"{entry['model']}: no problem found ({entry['bug']}: {entry['description']})"
    expect = set(entry["expect_nodes"])
    named = [p for p in problems if expect & set(_named(p))]
    assert named, (
        f"{entry['model']}: {len(problems)} problems, none names one of {sorted(expect)}; "
        f"they name {sorted({n for p in problems for n in _named(p)})[:10]}"
    )


@pytest.mark.parametrize("entry", CLEAN, ids=_id)
def test_checker_is_silent_on_clean_models(entry: dict[str, Any]) -> None:
    """(c) ``bcast check`` finds no error and no warning in a clean export (its notes say how it may be called)."""
    problems = [p for p in _problems(entry) if p["severity"] in ("error", "warning")]
    assert not problems, [(p["kind"], p["node"], p["message"][:120]) for p in problems[:5]]


def _size_name(entry: dict[str, Any], symbol: str) -> str:
    """The corpus's name of a size: the symbol itself, or an IR's ``input_axis`` symbol's."""
    for name, axes in entry["inputs"].items():
        for k, a in enumerate(axes):
            if symbol == f"{name}_{k}" and isinstance(a, str):
                return a
    return symbol


@pytest.mark.parametrize("entry", CLEAN, ids=_id)
def test_every_length_limit_of_a_clean_model_is_where_the_runtime_stops(entry: dict[str, Any]) -> None:
    """A note "works only for S <= n" is proven: the runtime runs at S = n and fails at S = n + 1."""
    import re

    limits = set()
    for p in _problems(entry):
        if p["kind"] == "length-limit":
            m = re.search(r"works only for (\w+) <= (\d+)", p["message"])
            assert m, p["message"]
            limits.add((_size_name(entry, m.group(1)), int(m.group(2))))
    if not limits:
        pytest.skip(f"{entry['model']} has no length limit")
    _needs(entry)
    for size, n in sorted(limits):
        assert run(entry, {**entry["passes"], size: n}) is None, f"{entry['model']} fails at {size}={n}"
        assert run(entry, {**entry["passes"], size: n + 1}) is not None, f"{entry['model']} runs at {size}={n + 1}"
