"""``bcast check`` for OpenVINO IR: the same symbolic shape and value propagation as for ONNX models.

The IR is read by :func:`~bcast.openvino.ir_read.read_ir` (bounded, weights unread but for small
shape constants), turned into bcast's neutral graph (:func:`~bcast.openvino.graph_read.graph_of_ir`)
and propagated (:mod:`bcast.graph`): every dynamic dim a symbol of its own, named after its input and
axis, every shape value followed through ShapeOf, Gather, Concat and arithmetic, every layer whose
definition broadcasts checked by bcast's rules as OpenVINO applies them. So two dims that must be
equal are compared, a batch that must be both 1 and 4 is a contradiction, and a computed Reshape
target is known; the port dims the IR declares are evidence, compared with what propagation derives.

An IR names no dim: a dynamic one is ``-1``. So two inputs that a model means to share a length
(``input_ids`` and ``attention_mask``) get two symbols, and every model with two inputs would say
"``input_ids_1 == attention_mask_1`` or one of them is 1". Such a *relation between two inputs' dims*
is how the model must be called, not a bug: it is listed with the symbolic dims (where it takes part
in finding contradictions, and names its layers), not as a problem. Any other constraint is a problem
as for ONNX: a dim that must take given sizes (``seq in {1, 32}``), a computed dim that must equal an
input's (``batch*seq == seq``).

OpenVINO's *quirks* (inputs its shape inference accepts but whose result has no defined meaning:
repeated ``axes_mapping`` entries, negative target values, a pdpd layer without its axis, ...) are
found by the same propagation: each broadcasting layer's shape function also runs OpenVINO 2026.4's
own rule (:mod:`bcast.rules.openvino`) and reports what it finds as a ``quirk`` finding of the layer.
OpenVINO accepts those inputs, so nothing downstream is a consequence of one: the report lists them
first, as warnings, each at its layer and without a root cause.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from ..graph import Finding, Graph, Result
from ..graph.sizes import SizesLike, read_sizes
from ..openvino.graph_read import graph_of_ir, ir_fallback
from ..openvino.ir_read import IRError, read_ir
from .pipeline import check_graph, no_cycle_collection, read_graph
from .report import CheckInputError, Problem, Report

__all__ = ["check_ir"]

#: ``progress(phase, done, total)``: phase is "read", "propagate" or "check"
Progress = Callable[[str, int, int], None]


def _quirks(result: Result) -> tuple[Result, list[Problem]]:
    """The propagation's quirks (warnings, placed at their layers) apart from its other findings.

    A quirk is no source of consequences (propagation does not pass it downstream), so taking it out
    leaves every other finding's cause pointing at the same finding, renumbered.
    """
    findings = result.findings
    if not any(f.kind == "quirk" for f in findings):
        return result, []
    quirks = [
        Problem(f.node.label, f.node.op, f.kind, f.message, severity=f.severity) for f in findings if f.kind == "quirk"
    ]
    index: dict[int, int] = {}
    kept: list[Finding] = []
    for i, f in enumerate(findings):
        if f.kind != "quirk":
            index[i] = len(kept)
            kept.append(f)
    rest = [f if f.cause is None else replace(f, cause=index.get(f.cause)) for f in kept]
    return replace(result, findings=rest), quirks


def _read(p: str) -> Graph:
    try:
        return graph_of_ir(read_ir(p))
    except IRError as e:
        raise CheckInputError(str(e)) from None


def check_ir(
    path: str | os.PathLike[str],
    *,
    dims: SizesLike = None,
    progress: Progress | None = None,
    debug: bool = False,
    strict: bool = True,
) -> Report:
    """Check an IR (``.xml`` with its ``.bin`` beside it): every layer propagated, every broadcast checked,
    OpenVINO's quirks included (see the module's text).

    Raises :class:`~bcast.check.report.CheckInputError` when the IR cannot be read.
    """
    p = os.fspath(path)
    with no_cycle_collection():  # the graph read is freed before the collector runs again
        return _check_ir(p, dims, progress, debug, strict)


def _check_ir(p: str, dims: SizesLike, progress: Progress | None, debug: bool, strict: bool) -> Report:
    graph = read_graph(lambda: _read(p), progress)
    return check_graph(
        graph,
        fallback=ir_fallback,
        name=p,
        fmt="openvino-ir",
        progress=progress,
        debug=debug,
        set_apart=_quirks,
        sizes=read_sizes(dims),
        strict=strict,
    )
