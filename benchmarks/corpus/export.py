"""Export the tiny models of :mod:`benchmarks.corpus.models` with both PyTorch ONNX exporters.

Why both: the TorchScript exporter (``dynamo=False``) and the dynamo exporter (``dynamo=True``)
write very different graphs for the same module (node names, Shape/Gather chains versus symbolic
shape ops, folded constants), and a broadcasting checker must read both. Every export keeps the
batch and sequence (or image, or time) axes dynamic, and is proven dynamic: onnxruntime must run it
at two different sets of sizes and match PyTorch. An exporter that fails for an architecture is
recorded and skipped, never fatal.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import torch

from .models import ModelSpec, feeds_for

__all__ = ["EXPORTERS", "ExportResult", "check_runs", "export", "probe_sizes"]

EXPORTERS = ("torchscript", "dynamo")
OPSET = 18


@dataclass
class ExportResult:
    """One export: the file written (or ``None``) and what went wrong, if anything."""

    spec: str
    exporter: str
    path: str | None
    error: str | None = None
    seconds: float = 0.0


def probe_sizes(spec: ModelSpec) -> list[dict[str, int]]:
    """Two sets of sizes to prove an export dynamic: the trace sizes, then different ones."""
    first = dict(spec.sizes)
    second = {
        k: v + (1 if k == "batch" else 3 if k == "seq" else 8 if k in {"height", "width"} else 80)
        for k, v in first.items()
    }
    return [first, second]


def _dynamic_axes(spec: ModelSpec) -> dict[str, dict[int, str]]:
    return {n: {i: a for i, a in enumerate(axes) if isinstance(a, str)} for n, axes in spec.inputs.items()}


#: smallest size each symbolic axis is exported for (torch.export specialises 0 and 1, and the
#: strided convolutions of the vision and audio models need a few pixels or samples)
_MIN_DIM = {"height": 16, "width": 16, "time": 400}


def _dynamic_shapes(spec: ModelSpec) -> tuple[tuple[dict[int, Any], ...]]:
    dims: dict[str, Any] = {}
    out = []
    for axes in spec.inputs.values():
        d: dict[int, Any] = {}
        for i, a in enumerate(axes):
            if isinstance(a, str):
                if a not in dims:
                    top = spec.limits.get(a, 4096)
                    dims[a] = torch.export.Dim(a, min=_MIN_DIM.get(a, 2), max=top)
                d[i] = dims[a]
        out.append(d)
    return (tuple(out),)  # forward(*args): one varargs parameter holding every input


def _export_one(spec: ModelSpec, exporter: str, path: str) -> None:
    module = spec.module()
    args = spec.example()
    names = list(spec.inputs)
    sink = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(
                module,
                args,
                path,
                dynamo=False,
                input_names=names,
                output_names=["output"],
                dynamic_axes={**_dynamic_axes(spec), "output": {0: "batch"}},
                opset_version=OPSET,
            )
        else:
            torch.onnx.export(
                module,
                args,
                path,
                dynamo=True,
                input_names=names,
                output_names=["output"],
                dynamic_shapes=_dynamic_shapes(spec),
                opset_version=OPSET,
                external_data=False,
            )
    with torch.no_grad():
        expected = [module(*spec.example(**s)).numpy() for s in probe_sizes(spec)]
    got = check_runs(path, spec)
    for e, g in zip(expected, got, strict=True):
        if e.shape != g.shape or not np.allclose(e, g, atol=1e-3, rtol=1e-3):
            raise RuntimeError(f"onnxruntime disagrees with torch: {e.shape} vs {g.shape}")


def check_runs(path: str, spec: ModelSpec, sizes: list[dict[str, int]] | None = None) -> list[np.ndarray]:
    """Run ``path`` with onnxruntime at each of ``sizes`` (default :func:`probe_sizes`); raise if any fails."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return [sess.run(None, feeds_for(spec, **s))[0] for s in (sizes or probe_sizes(spec))]


def export(spec: ModelSpec, exporter: str, out_dir: str) -> ExportResult:
    """Export ``spec`` with ``exporter`` into ``out_dir``; record (do not raise) a failure."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{spec.name}.{exporter}.onnx")
    start = time.perf_counter()
    try:
        _export_one(spec, exporter, path)
        model = onnx.load(path)
        onnx.checker.check_model(model)
        _name_nodes(model)
        onnx.save(model, path)
    except Exception as exc:
        for p in (path, path + ".data"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)
        msg = f"{type(exc).__name__}: {exc}".strip().splitlines()
        return ExportResult(spec.name, exporter, None, " ".join(msg)[:300], time.perf_counter() - start)
    return ExportResult(spec.name, exporter, path, None, time.perf_counter() - start)


def _name_nodes(model: onnx.ModelProto) -> None:
    """Give a name to any node the exporter left unnamed (names of named nodes are kept as they are).

    Why: the manifest and a checker's findings refer to nodes by name.
    """
    seen = {n.name for n in model.graph.node if n.name}
    for i, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in seen:
                name += "_"
            node.name = name
            seen.add(name)
