"""Prove each injected ONNX bug with onnxruntime: it must fail where it should, and run where latent.

Why: a corpus of "bugs" that no runtime rejects would measure a checker against our guesses. A bug
is kept only when onnxruntime refuses the model (at load, or when running it) at the sizes the
bug class names, and, for a latent bug, still runs at the sizes where it should work. The node
that onnxruntime names in its error ("Name:'/encoder/layer.0/Add'" or "node name: ...") joins the
bug's ``expect_nodes``: a good checker should point there, or at the edited nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import onnx

from .bugs import Injection
from .models import ModelSpec, feeds_for

__all__ = ["Proof", "error_node", "ort_run", "prove"]

_NODE_PATTERNS = (
    re.compile(r"Name:'([^']*)'"),
    re.compile(r"node name: ([^)\n]+)\)"),
    re.compile(r"Node \(([^)]+)\)"),
    re.compile(r"node \(([^)]+)\)"),
)


def error_node(message: str) -> str | None:
    """The node that onnxruntime names in an error message, if any."""
    for pat in _NODE_PATTERNS:
        m = pat.search(message)
        if m:
            return m.group(1).strip()
    return None


def _session(model: onnx.ModelProto | str) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    # no fusion: the error must name the node as the exporter wrote it, not a fused kernel
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def ort_run(model: onnx.ModelProto | str, spec: ModelSpec, sizes: dict[str, int]) -> str | None:
    """Load and run ``model`` at ``sizes``: ``None`` when it runs, else the error (one line)."""
    return ort_try(model, spec, sizes)[1]


def ort_try(model: onnx.ModelProto | str, spec: ModelSpec, sizes: dict[str, int]) -> tuple[bool, str | None]:
    """(whether onnxruntime loads ``model``, the error of loading or running it at ``sizes`` or None)."""
    try:
        sess = _session(model)
    except Exception as exc:
        return False, " ".join(f"{type(exc).__name__}: {exc}".split())
    try:
        sess.run(None, feeds_for(spec, **sizes))
    except Exception as exc:
        return True, " ".join(f"{type(exc).__name__}: {exc}".split())
    return True, None


@dataclass
class Proof:
    """What onnxruntime said about one injected bug."""

    ok: bool
    latent: bool
    error: str | None
    node: str | None
    checker: str | None  # onnx.checker.check_model's complaint, if any
    why: str = ""
    loads: bool = True  # onnxruntime loads the model (the failure comes when running it)


#: ops whose failure is a broadcasting failure: operands combined elementwise (multidirectional or
#: unidirectional), Expand, MatMul's batch dims, a normalisation's scale and bias
BROADCASTING_OPS = frozenset(
    {
        "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Where", "Expand", "MatMul",
        "Gemm", "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "PRelu",
        "BitShift", "LayerNormalization", "BatchNormalization", "InstanceNormalization",
    }
)  # fmt: skip


def prove(
    inj: Injection,
    spec: ModelSpec,
    clean_runs: Any,
    *,
    must_be_latent: bool = False,
    fail_ops: frozenset[str] | None = None,
) -> Proof:
    """Run the bugged model at ``inj.fails`` (must fail) and ``inj.passes`` (must run, if latent).

    ``clean_runs(sizes)`` says whether the clean model runs at those sizes: a failure that the
    clean model shares proves nothing.
    """
    assert inj.model is not None
    checker = None
    try:
        onnx.checker.check_model(inj.model)
    except Exception as exc:
        checker = " ".join(str(exc).split())[:300]
    if not clean_runs(inj.fails):
        return Proof(False, False, None, None, checker, "clean model fails at these sizes")
    loads, err = ort_try(inj.model, spec, inj.fails)
    if err is None:
        return Proof(False, False, None, None, checker, f"runs at {inj.fails}")
    node = error_node(err)
    ops = {n.name: n.op_type for n in inj.model.graph.node}
    if node is None or ops.get(node) not in (fail_ops or BROADCASTING_OPS):
        return Proof(False, False, err, node, checker, f"fails at {node} ({ops.get(node)}), not a broadcasting node")
    latent = inj.latent and inj.passes is not None
    if latent and (not clean_runs(inj.passes) or ort_run(inj.model, spec, inj.passes) is not None):
        latent = False
    if must_be_latent and not latent:
        return Proof(False, False, err, node, checker, "fails at every size, meant to be latent")
    return Proof(True, latent, err, node, checker, loads=loads)
