"""A propagation's result (:mod:`bcast.graph`) as ``bcast check``'s :class:`~bcast.check.report.Report`.

One function for ONNX and OpenVINO IR alike: every broadcasting node, every finding with its root
cause (and a second root where two branches of a clash are as suspect) and the chain from it, the
constraints joined per symbol, and where propagation stopped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..constraints import Constraint
from ..graph import BroadcastRecord, Expr, Finding, Result
from ..graph.expr import digests
from ..graph.roots import root_causes
from ..native import load, slots
from .report import NodeReport, Problem, Report, ShapeJSON, Unchecked

__all__ = ["report_from_result"]


def _text(dims: Sequence[Expr] | None) -> str:
    return "[...]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def _json(dims: Sequence[Expr] | None) -> ShapeJSON:
    if dims is None:
        return None
    return tuple(int(d.value) if d.value is not None else str(d) for d in dims)


def _merged(records: Sequence[BroadcastRecord]) -> list[BroadcastRecord]:
    """One record per node: a node that broadcasts several operands one by one (LayerNormalization's
    scale and bias) is one line of the report, its output an error if any of them failed."""
    out: list[BroadcastRecord] = []
    for rec in records:
        last = out[-1] if out else None
        if last is not None and last.node is rec.node and last.rule == rec.rule:
            known = {n for n, _ in last.inputs}
            inputs = [*last.inputs, *((n, s) for n, s in rec.inputs if n not in known)]
            failed = last.output is None or rec.output is None
            out[-1] = BroadcastRecord(
                last.node, last.rule, inputs, None if failed else last.output, mode=last.mode, axes=last.axes
            )
        else:
            out.append(rec)
    return out


#: the compiled twin of :func:`_node_reports`'s loop (``bcast.check._rows``, csrc/rows.c), or ``None``: not built, or
#: ``BCAST_PURE_PYTHON=1``; and the NodeReport's fields' slots, in order, that it fills
_ROWS = load(f"{__package__}._rows")
_LAYOUT = (NodeReport, slots(NodeReport))


def _node_reports(report: Report, result: Result) -> None:
    """Every broadcasting node of ``result`` as a line of ``report``."""
    # a wide graph broadcasts the same few shapes at thousands of nodes: each shape's text is made once, found by
    # the shape's identity first (the nodes share their operands' tuples; hashing one hashes each of its dims)
    by_id: dict[int, tuple[str, ShapeJSON]] = {}
    by_value: dict[tuple[Expr, ...], tuple[str, ShapeJSON]] = {}
    keep: list[object] = []  # what by_id's keys are the ids of, alive while they are used

    def show(dims: Sequence[Expr] | None) -> tuple[str, ShapeJSON]:
        got = by_id.get(id(dims))
        if got is None:
            if not isinstance(dims, tuple):
                return _text(dims), _json(dims)
            got = by_value.get(dims)
            if got is None:
                got = by_value[dims] = (_text(dims), _json(dims))
            by_id[id(dims)] = got
            keep.append(dims)
        return got

    records = _merged(result.records)
    if _ROWS is not None:  # the loop below, compiled
        report.nodes.extend(_ROWS.rows(records, _LAYOUT, by_id, show))
        return
    append = report.nodes.append
    find = by_id.get  # each shape's text and JSON by its tuple's identity, as show() finds them first
    for rec in records:
        texts: list[str] = []
        jsons: list[ShapeJSON] = []
        names: list[str] = []
        any_unknown = False
        for n, s in rec.inputs:
            text, js = find(id(s)) or show(s)
            texts.append(f"{n} {text}")
            jsons.append(js)  # a tuple, shared by the nodes of the same shape
            names.append(n)
            if s is None:
                any_unknown = True
        out_text, out_json = find(id(rec.output)) or show(rec.output)
        append(
            NodeReport(
                rec.node.label,
                rec.node.op,
                tuple(texts),
                out_text if rec.output is not None or any_unknown else None,
                rec.rule,
                tuple(names),
                tuple(jsons),
                out_json,
                mode=rec.mode,
                axes=rec.axes,
            )
        )


def _implied_least_sizes(findings: Sequence[Finding]) -> set[int]:
    """The notes of a least input size (``H >= 16``) that a larger one of the same symbols implies (``H >= 32``, a
    window deeper in the network): the report lists, of each symbol, the note that binds it, the first where two
    say the same size."""
    best: dict[str, int] = {}
    for f in findings:
        if f.severity == "info":
            for c in f.bounds:
                best[c.symbols[0]] = max(best.get(c.symbols[0], 0), c.allowed[0].lo)
    claimed: set[str] = set()
    implied: set[int] = set()
    for i, f in enumerate(findings):
        if f.severity != "info" or not f.bounds:
            continue
        binds = {c.symbols[0] for c in f.bounds if c.allowed[0].lo == best[c.symbols[0]]} - claimed
        if binds:
            claimed |= binds
        else:
            implied.add(i)
    return implied


def report_from_result(
    result: Result, model: str, fmt: str, *, extra: Sequence[Problem] = (), given: Sequence[Constraint] = ()
) -> Report:
    """The report of one propagation; ``extra`` problems (the reader's findings) come first; ``given`` are the
    ranges the user gives symbols, joined with what the model needs of them (an empty join: a contradiction)."""
    report = Report(model=model, format=fmt)
    report.problems.extend(extra)
    report.add_constraints("--dim", "given", given)
    _node_reports(report, result)
    # what inputs must agree on (a relation) is listed with the symbols: it has no root to find. The notes (a length
    # limit, a least input size) find their roots among themselves: a convolution's note that its window needs 4
    # rows names its weight, which must not outweigh, by the notes it covers, the edit that a problem points to
    implied = _implied_least_sizes(result.findings)
    gate = [i for i, f in enumerate(result.findings) if f.severity not in ("relation", "info")]
    notes = [i for i, f in enumerate(result.findings) if f.severity == "info" and i not in implied]
    causes = root_causes(result, gate) + root_causes(result, notes)
    cause_of: dict[int, tuple[int, list[str]]] = {}
    for ci, c in enumerate(causes):
        for i in c.findings:
            cause_of[i] = (ci, c.chains.get(i, []))
        report.affects[c.origin.name] = c.affects
    for i, f in enumerate(result.findings):
        if i in implied:
            continue
        if f.severity == "relation":  # inputs' unnamed dims that must agree: a symbol constraint, no problem
            if f.constraint is not None:
                report.add_constraints(f.node.label, f.node.op, [f.constraint], relation=True)
            continue
        ci, chain = cause_of.get(i, (-1, []))
        origin = causes[ci].origin if ci >= 0 else None
        here = f.node.name
        root = origin.name if origin is not None and (origin.name != here or len(causes[ci].findings) > 1) else None
        also = causes[ci].also if root and ci >= 0 else None
        report.problems.append(
            Problem(
                f.node.label,
                f.node.op,
                f.kind,
                f.message,
                axis=f.axis,
                dims=f.dims,
                severity=f.severity,
                root=root,
                root_op=origin.op if root and origin else None,
                root_kind=origin.kind if root and origin else None,
                chain=tuple(chain) if root else (),
                also=also.name if also else None,
                also_op=also.op if also else None,
                also_kind=also.kind if also else None,
            )
        )
        if f.constraint is not None or f.bounds:
            report.add_constraints(f.node.label, f.node.op, [c for c in (f.constraint, *f.bounds) if c is not None])
    for stop in result.unknown:
        report.unchecked.append(Unchecked(stop.node.label, stop.node.op, stop.reason, stop.downstream))
    report = report.finish()
    report.legend = _legend(report)
    return report


_DIGEST = re.compile(r"expr_[0-9a-f]{12}")


def _legend(report: Report) -> dict[str, str]:
    """What each digest name in the report's problems and symbols' sizes stands for: an expression too long to be a
    dim's name is named by a digest (``expr_61bd5ec0de9a``), and the report says what it is. The links between an
    IR's unnamed input dims, which the text report counts rather than lists, are left out."""
    said = [p.message for p in report.problems] + [str(d) for p in report.problems for d in p.dims]
    said += [text for c in report.constraints if not c.relation for text in (c.dim, c.allowed)]
    names = dict.fromkeys(n for text in said if "expr_" in text for n in _DIGEST.findall(text))
    return digests(names) if names else {}
