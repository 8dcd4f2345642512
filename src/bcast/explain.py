"""Plain-text explanations of plans: the aligned axes side by side, and what is replicated."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .dims import Dim, Shape
from .errors import BroadcastError

if TYPE_CHECKING:  # pragma: no cover
    from .plan import ElementwisePlan, Plan

__all__ = ["explain_elementwise", "explain_error", "explain_plan"]

#: ANSI styles: a replicated cell, the output row, a clash, the header
_STYLE = {"rep": "33", "out": "1", "clash": "1;31", "head": "2"}

_LABELS = {"pdpd": ("B", "A"), "legacy": ("B", "A")}


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


def _table(
    rows: list[tuple[str, list[str]]],
    styles: dict[tuple[int, int], str] | None = None,
    colour: bool = False,
) -> list[str]:
    """Rows of cells right-aligned in columns; ``styles[(row, col)]`` names a style from ``_STYLE``."""
    width = max(len(label) for label, _ in rows)
    ncol = max(len(cells) for _, cells in rows)
    cols = [max((len(c[k]) for _, c in rows if k < len(c)), default=1) for k in range(ncol)]
    lines = []
    for r, (label, cells) in enumerate(rows):
        parts = []
        for k, c in enumerate(cells):
            text = c.rjust(cols[k])
            style = (styles or {}).get((r, k))
            parts.append(f"\033[{_STYLE[style]}m{text}\033[0m" if colour and style else text)
        body = "  ".join(parts)
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


def explain_plan(plan: Plan, *, colour: bool = False) -> str:
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
        styles = {(0, k): "head" for k in range(rank)}
        styles.update({(len(rows) - 1 - bool(any(marks)), k): "out" for k in range(rank)})
        styles.update({(1, k): "rep" for k in range(rank) if marks[k]})
        styles.update({(len(rows) - 1, k): "rep" for k in range(rank) if marks[k]})
        lines.append("")
        lines.extend(_table(rows, styles, colour))
        lines.append("")
        lines.extend(_replication_lines(plan, who))
        if not plan.broadcast_axes and not plan.maybe_broadcast_axes:
            lines.append(f"nothing is replicated: the output is the {who} itself")
    if plan.constraints:
        lines.append("constraints: " + "; ".join(str(c) for c in plan.constraints))
    return "\n".join(lines)


def explain_elementwise(ep: ElementwisePlan, *, colour: bool = False) -> str:
    shapes = ", ".join(str(s) for s in ep.shapes)
    lines = [f"{ep.mode} (elementwise): {shapes} -> output {ep.output_shape}"]
    if ep.output_shape.rank is None or any(p.axes_mapping is None for p in ep.operands):
        lines.append("  (a rank is dynamic: the axes cannot be lined up until it is known)")
    else:
        rank = ep.output_shape.rank
        rows = [("output axis", [str(k) for k in range(rank)])]
        styles = {(0, k): "head" for k in range(rank)}
        for j, p in enumerate(ep.operands):
            cells = _row_cells(p)
            for k in p.broadcast_axes or ():
                styles[(j + 1, k)] = "rep"
                if cells[k] != "-":
                    cells[k] += "*"
            rows.append((f"operand {j}", cells))
        rows.append(("output", [str(d) for d in ep.output_shape]))
        styles.update({(len(rows) - 1, k): "out" for k in range(rank)})
        lines.append("")
        lines.extend(_table(rows, styles, colour))
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


def _placed(dims: list[str], rank: int, start: int) -> list[str]:
    cells = ["-"] * rank
    for i, d in enumerate(dims):
        if 0 <= start + i < rank:
            cells[start + i] = d
    return cells


def explain_error(
    error: BroadcastError,
    shapes: Sequence[Shape],
    mode: str,
    *,
    axes_mapping: Sequence[int] | None = None,
    axis: int = -1,
    broadcast_axes: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    colour: bool = False,
) -> str:
    """Why ``shapes`` cannot be broadcast: the shapes lined up as ``mode`` places them, the clash marked.

    >>> import bcast
    >>> from bcast.explain import explain_error
    >>> shapes = [bcast.Shape.parse("[2,3]"), bcast.Shape.parse("[4]")]
    >>> try:
    ...     bcast.broadcast_shapes(*shapes)
    ... except bcast.BroadcastError as e:
    ...     print(explain_error(e, shapes, "numpy"))
    cannot broadcast [2,3], [4] (numpy)
    <BLANKLINE>
      output axis | 0  1
      operand 0   | 2  3
      operand 1   | -  4
      clash       |    X
    <BLANKLINE>
    numpy: shapes [2,3] and [4] cannot be broadcast together: at output axis 1, ...
    """
    ranks = [s.rank for s in shapes]
    lines = [f"cannot broadcast {', '.join(str(s) for s in shapes)} ({mode})"]
    if any(r is None for r in ranks):
        return "\n".join([*lines, "", str(error)])
    cells_of = [[str(d) for d in s] for s in shapes]
    two = len(shapes) == 2
    if mode in ("pdpd", "legacy") and two:
        a, b = cells_of
        rank = len(a)
        start = rank - len(b) if axis == -1 else axis
        rows = [("A", a), ("B", _placed(b, rank, start))]
    elif mode == "explicit" and two and axes_mapping is not None:
        data, target = cells_of
        rank = len(target)
        cells = ["-"] * rank
        for i, ax in enumerate(axes_mapping):
            if 0 <= ax < rank and i < len(data):
                cells[ax] = data[i]
        rows = [("data", cells), ("target", target)]
    elif mode in ("axes", "like") and two:
        data, target = cells_of
        rank = len(target)
        new = set(broadcast_axes or ())
        kept = [k for k in range(rank) if k not in new]
        cells = ["-"] * rank
        for i, k in enumerate(kept[: len(data)]):
            cells[k] = data[i]
        rows = [("data", cells), ("target", target)]
    elif mode == "none" and two:
        rank = max(len(c) for c in cells_of)
        rows = [("data", cells_of[0]), ("target", cells_of[1])]
    else:
        rank = max(len(c) for c in cells_of)
        names = tuple(labels) if labels else tuple(f"operand {j}" for j in range(len(shapes)))
        rows = [(names[j], ["-"] * (rank - len(c)) + c) for j, c in enumerate(cells_of)]
    header = [("output axis", [str(k) for k in range(rank)])]
    styles: dict[tuple[int, int], str] = {(0, k): "head" for k in range(rank)}
    marks = [""] * rank
    if error.axis is not None and 0 <= error.axis < rank:
        marks[error.axis] = "X"
        for r in range(1, len(rows) + 2):
            styles[(r, error.axis)] = "clash"
    table = header + rows + ([("clash", marks)] if any(marks) else [])
    lines.append("")
    lines.extend(_table(table, styles, colour))
    lines.append("")
    lines.append(str(error))
    return "\n".join(lines)
