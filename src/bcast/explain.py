"""Plain-text explanations of plans: the aligned axes side by side, and what is replicated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dims import Dim

if TYPE_CHECKING:  # pragma: no cover
    from .plan import ElementwisePlan, Plan

__all__ = ["explain_elementwise", "explain_plan"]

_LABELS = {"pdpd": ("B", "A")}


def _row_cells(plan: Plan) -> list[str]:
    """The data's dims placed under the output axes they map to ('-' where none does)."""
    rank = plan.output_shape.rank or 0
    cells = ["-"] * rank
    for i, a in enumerate(plan.axes_mapping or ()):
        if a is not None:
            cells[a] = str(plan.data_shape[i])
    return cells


def _target_cells(plan: Plan) -> list[str] | None:
    t, out = plan.target_shape, plan.output_shape
    if t.rank is None or out.rank is None:
        return None
    pad = out.rank - t.rank
    return ["-"] * pad + [str(d) for d in t] if pad >= 0 else None


def _table(rows: list[tuple[str, list[str]]]) -> list[str]:
    width = max(len(label) for label, _ in rows)
    ncol = max(len(cells) for _, cells in rows)
    cols = [max((len(c[k]) for _, c in rows if k < len(c)), default=1) for k in range(ncol)]
    lines = []
    for label, cells in rows:
        body = "  ".join(c.rjust(cols[k]) for k, c in enumerate(cells))
        lines.append(f"  {label.ljust(width)} | {body}".rstrip())
    return lines


def _copies(d: Dim) -> str:
    if d.is_static:
        n = int(d)
        return f"{n} cop{'y' if n == 1 else 'ies'}"
    return f"{d} copies"


def _replication_lines(plan: Plan, who: str) -> list[str]:
    lines = []
    out = plan.output_shape
    mapping = plan.axes_mapping or ()
    for i, a in enumerate(mapping):
        d = plan.data_shape[i]
        if a is None:
            lines.append(f"{who} axis {i} ({d}) is dropped (a trailing 1 the rule ignores)")
            continue
        o = out[a]
        if plan.broadcast_axes is not None and a in plan.broadcast_axes:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({o}): the 1 is stretched, {_copies(o)}")
        elif plan.maybe_broadcast_axes and a in plan.maybe_broadcast_axes:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({o}): stretched only if {d} is 1")
        else:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({o})")
    for k in plan.new_axes or ():
        lines.append(f"output axis {k} ({out[k]}) is new: {who} replicated, {_copies(out[k])}")
    return lines


def explain_plan(plan: Plan) -> str:
    who, tgt = _LABELS.get(plan.mode, ("data", "target"))
    if plan.mode == "like":
        tgt = "like"
    attrs = "".join(f", {k}={list(v) if isinstance(v, tuple) else v}" for k, v in plan.attrs.items())
    head = f"{plan.mode}{attrs}: {who} {plan.data_shape} -> {tgt} {plan.target_shape} = output {plan.output_shape}"
    lines = [head]
    if plan.axes_mapping is None:
        lines.append("  (a rank is dynamic: the axes cannot be lined up until it is known)")
    else:
        rank = plan.output_shape.rank or 0
        marks = [
            "^"
            if plan.broadcast_axes and k in plan.broadcast_axes
            else "?"
            if plan.maybe_broadcast_axes and k in plan.maybe_broadcast_axes
            else ""
            for k in range(rank)
        ]
        rows = [("output axis", [str(k) for k in range(rank)]), (who, _row_cells(plan))]
        tcells = _target_cells(plan)
        if tcells is not None:
            rows.append((tgt, tcells))
        rows.append(("output", [str(d) for d in plan.output_shape]))
        if any(marks):
            rows.append(("replicated", marks))
        lines.append("")
        lines.extend(_table(rows))
        lines.append("")
        lines.extend(_replication_lines(plan, who))
        if not plan.broadcast_axes and not plan.maybe_broadcast_axes:
            lines.append(f"nothing is replicated: the output is the {who} itself")
    if plan.constraints:
        lines.append("constraints: " + "; ".join(str(c) for c in plan.constraints))
    return "\n".join(lines)


def explain_elementwise(ep: ElementwisePlan) -> str:
    shapes = ", ".join(str(s) for s in ep.shapes)
    lines = [f"{ep.mode} (elementwise): {shapes} -> output {ep.output_shape}"]
    if ep.output_shape.rank is None or any(p.axes_mapping is None for p in ep.operands):
        lines.append("  (a rank is dynamic: the axes cannot be lined up until it is known)")
    else:
        rank = ep.output_shape.rank
        rows = [("output axis", [str(k) for k in range(rank)])]
        for j, p in enumerate(ep.operands):
            cells = _row_cells(p)
            for k in p.broadcast_axes or ():
                if cells[k] != "-":
                    cells[k] += "*"
            rows.append((f"operand {j}", cells))
        rows.append(("output", [str(d) for d in ep.output_shape]))
        lines.append("")
        lines.extend(_table(rows))
        lines.append("  (* a 1 stretched, - an axis the operand lacks)")
        lines.append("")
        for j, p in enumerate(ep.operands):
            axes = p.broadcast_axes or ()
            if axes:
                lines.append(f"operand {j} is replicated along output axes {', '.join(map(str, axes))}")
            else:
                lines.append(f"operand {j} is not replicated")
    if ep.constraints:
        lines.append("constraints: " + "; ".join(str(c) for c in ep.constraints))
    return "\n".join(lines)
