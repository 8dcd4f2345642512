"""``bcast check`` for OpenVINO IR: the IR checker's findings (:mod:`bcast.openvino.ir`) as a report."""

from __future__ import annotations

import os
from typing import Any

from .report import CheckInputError, NodeReport, Problem, Report

__all__ = ["check_ir"]

#: the IR checker's problem kinds, as the report's kinds; warnings that are no problem map to None
_KINDS = {
    "broadcast": "cannot-broadcast",
    "invalid": "invalid",
    "output_mismatch": "declared-shape",
    "input_mismatch": "declared-shape",
    "quirk": "quirk",
    "output_imprecise": None,
}


def check_ir(path: str | os.PathLike[str], *, progress: Any = None) -> Report:  # progress(phase, done, total)
    """Check every Broadcast layer and every layer with ``auto_broadcast`` of an IR (``.xml`` + ``.bin``)."""
    from ..openvino.ir import IRError, read_ir
    from ..openvino.ir import check_ir as check_layers

    p = os.fspath(path)
    try:
        model = read_ir(p)
        layers = check_layers(model)
    except IRError as e:
        raise CheckInputError(str(e)) from None
    report = Report(model=p, format="openvino-ir")
    for i, lc in enumerate(layers):
        if progress is not None:
            progress("check", i, len(layers))
        name = "/".join((*lc.path, lc.name))
        inputs = tuple(f"{inp.source or f'port {inp.port}'} {inp.shape}" for inp in lc.inputs)
        out = None if lc.inferred_output is None else str(lc.inferred_output)
        report.nodes.append(NodeReport(name, lc.op, inputs, out, f"OpenVINO {lc.rule}"))
        for prob in lc.problems:
            kind = _KINDS.get(prob.kind, prob.kind)
            if kind is None:
                continue
            report.problems.append(Problem(name, lc.op, kind, prob.message, axis=prob.axis, dims=tuple(prob.dims)))
    if progress is not None:
        progress("check", len(layers), len(layers))
    return report.finish()
