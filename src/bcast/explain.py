"""Plain-text explanations of plans: the aligned axes side by side, and what is replicated."""

from __future__ import annotations

from collections.abc import Sequence

from .alignment import Alignment, ElementwiseAlignment
from .dims import Dim, Shape, StaticDim, dim_text, given_text, shape_text
from .errors import BroadcastError
from .rules.placement import Row, placement

__all__ = ["explain_elementwise", "explain_error", "explain_plan"]

#: ANSI styles: a replicated cell, the output row, a clash, the header
_STYLE = {"rep": "33", "out": "1", "clash": "1;31", "head": "2"}

_LABELS = {"pdpd": ("B", "A"), "legacy": ("B", "A")}

#: A table of more axes than this shows the first :data:`_HEAD_COLS` and last :data:`_TAIL_COLS`
#: with a ``...`` column between: an explanation of a 30,000-axis plan stays readable and is
#: made in time linear in the plan, not in operands x axes.
_MAX_COLS, _HEAD_COLS, _TAIL_COLS = 128, 96, 32
#: Likewise for the operands of an elementwise plan (rows) and the lines of prose.
_MAX_ROWS, _HEAD_ROWS, _TAIL_ROWS = 64, 48, 16
_MAX_LINES, _HEAD_LINES, _TAIL_LINES = 128, 96, 32
_GAP = "..."


def _window(n: int, most: int, head: int, tail: int) -> list[int | None]:
    """The indices ``0..n-1`` shown: all when ``n <= most``, else the first ``head``, ``None``, the last ``tail``."""
    if n <= most:
        return list(range(n))
    return [*range(head), None, *range(n - tail, n)]


def _columns(rank: int, focus: int | None = None) -> list[int | None]:
    """The output axes a table shows (``None``: a ``...`` column); ``focus`` (a clash) is always shown."""
    cols = _window(rank, _MAX_COLS, _HEAD_COLS, _TAIL_COLS)
    if None not in cols or focus is None or not _HEAD_COLS + 3 <= focus < rank - _TAIL_COLS - 3:
        return cols
    middle = list(range(focus - 3, focus + 4))
    return [*range(_HEAD_COLS), None, *middle, None, *range(rank - _TAIL_COLS, rank)]


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``2 lines``, ``1,024 lines``: a count and its noun, singular only for one."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _size_one(d: Dim) -> bool:
    """Whether ``d`` is known to be 1: an output axis of size 1 replicates nothing, new or not."""
    return isinstance(d, StaticDim) and d == 1


def _lines_window(lines: list[str]) -> list[str]:
    if len(lines) <= _MAX_LINES:
        return lines
    skipped = len(lines) - _HEAD_LINES - _TAIL_LINES
    return [*lines[:_HEAD_LINES], f"... ({_count(skipped, 'more line')}) ...", *lines[len(lines) - _TAIL_LINES :]]


def _axes_list(axes: Sequence[int]) -> str:
    """Axes as ``0, 2, 3``; a long list shows its first and last few and how many it skips."""
    if len(axes) <= 24:
        return ", ".join(map(str, axes))
    return ", ".join([*map(str, axes[:16]), f"...({len(axes) - 20:,} more)...", *map(str, axes[-4:])])


def _output_axes(axes: Sequence[int]) -> str:
    """``output axis 2`` for one axis, ``output axes 0, 2`` for several."""
    return f"output {'axis' if len(axes) == 1 else 'axes'} {_axes_list(axes)}"


def _row_cells(plan: Alignment, cols: list[int | None]) -> list[str]:
    """The data's dims placed under the output axes they map to ('-' where none does)."""
    where = {a: i for i, a in enumerate(plan.axes_mapping or ()) if a is not None}
    data = plan.data_shape
    return [_GAP if k is None else (dim_text(data[where[k]]) if k in where else "-") for k in cols]


def _target_cells(plan: Alignment, cols: list[int | None]) -> list[str] | None:
    t, out = plan.target_shape, plan.output_shape
    if t.rank is None or out.rank is None:
        return None
    pad = out.rank - t.rank
    if pad < 0:
        return None
    return [_GAP if k is None else ("-" if k < pad else dim_text(t[k - pad])) for k in cols]


def _dim_cells(shape: Shape, cols: list[int | None]) -> list[str]:
    return [_GAP if k is None else dim_text(shape[k]) for k in cols]


def _axis_cells(cols: list[int | None]) -> list[str]:
    return [_GAP if k is None else str(k) for k in cols]


def _table(
    rows: list[tuple[str, list[str]]],
    styles: dict[tuple[int, int], str] | None = None,
    colour: bool = False,
) -> list[str]:
    """Rows of cells right-aligned in columns; ``styles[(row, col)]`` names a style from ``_STYLE``."""
    width = max(len(label) for label, _ in rows)
    ncol = max(len(cells) for _, cells in rows)
    cols = [1] * ncol
    for _, cells in rows:
        for k, c in enumerate(cells):
            if len(c) > cols[k]:
                cols[k] = len(c)
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
        return _count(int(d), "copy", "copies")
    return f"{dim_text(d)} copies"


def _replicating(plan: Alignment) -> set[int]:
    """The plan's broadcast axes that replicate: all but those of output size 1 (a new axis of size 1 adds nothing)."""
    out = plan.output_shape
    return {k for k in plan.broadcast_axes or () if not _size_one(out[k])}


def _replication_lines(plan: Alignment, who: str) -> list[str]:
    lines = []
    out = plan.output_shape
    mapping = plan.axes_mapping or ()
    broadcast = set(plan.broadcast_axes or ())
    maybe = set(plan.maybe_broadcast_axes or ())
    for i, a in enumerate(mapping):
        d = dim_text(plan.data_shape[i])
        if a is None:
            lines.append(f"{who} axis {i} ({d}) is dropped (a trailing 1 the rule ignores)")
            continue
        o = out[a]
        if a in broadcast:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({dim_text(o)}): the 1 is stretched, {_copies(o)}")
        elif a in maybe:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({dim_text(o)}): stretched only if {d} is 1")
        else:
            lines.append(f"{who} axis {i} ({d}) -> output axis {a} ({dim_text(o)})")
    for k in plan.new_axes or ():
        if _size_one(out[k]):
            lines.append(f"output axis {k} (1) is new, of size 1: nothing is replicated along it")
        else:
            lines.append(f"output axis {k} ({dim_text(out[k])}) is new: {who} replicated, {_copies(out[k])}")
    return _lines_window(lines)


def _constraints_line(constraints: Sequence[object]) -> str:
    shown = [str(c) for c in constraints[:_MAX_LINES]]
    more = f"; ...({len(constraints) - len(shown):,} more)" if len(constraints) > len(shown) else ""
    return "constraints: " + "; ".join(shown) + more


def explain_plan(plan: Alignment, *, colour: bool = False) -> str:
    who, tgt = _LABELS.get(plan.mode, ("data", "target"))
    if plan.mode == "like":
        tgt = "like"
    attrs = "".join(f", {k}={_brief_list(v) if isinstance(v, tuple) else v}" for k, v in plan.attrs.items())
    head = (
        f"{plan.mode}{attrs}: {who} {shape_text(plan.data_shape, 800)} -> {tgt} "
        f"{shape_text(plan.target_shape, 800)} = output {shape_text(plan.output_shape, 800)}"
    )
    lines = [head]
    if plan.axes_mapping is None:
        lines.append("  (a rank is dynamic: the axes cannot be lined up until it is known)")
    else:
        rank = plan.output_shape.rank or 0
        cols = _columns(rank)
        broadcast = _replicating(plan)
        maybe = set(plan.maybe_broadcast_axes or ())
        marks = ["" if k is None else "^" if k in broadcast else "?" if k in maybe else "" for k in cols]
        marked = any(marks)
        rows = [("output axis", _axis_cells(cols)), (who, _row_cells(plan, cols))]
        tcells = _target_cells(plan, cols)
        if tcells is not None:
            rows.append((tgt, tcells))
        rows.append(("output", _dim_cells(plan.output_shape, cols)))
        if marked:
            rows.append(("replicated", marks))
        n = len(cols)
        styles = {(0, k): "head" for k in range(n)}
        styles.update({(len(rows) - 1 - marked, k): "out" for k in range(n)})
        styles.update({(1, k): "rep" for k in range(n) if marks[k]})
        styles.update({(len(rows) - 1, k): "rep" for k in range(n) if marks[k]})
        lines.append("")
        lines.extend(_table(rows, styles, colour))
        lines.append("")
        lines.extend(_replication_lines(plan, who))
        if not broadcast and not maybe:
            new = len(plan.new_axes or ())
            as_is = f"with {'a new axis' if new == 1 else 'new axes'} of size 1" if new else "itself"
            lines.append(f"nothing is replicated: the output is the {who} {as_is}")
    if plan.constraints:
        lines.append(_constraints_line(plan.constraints))
    return "\n".join(lines)


def _brief_list(v: tuple[object, ...]) -> str:
    return given_text(list(v), 800)


def _replicated(p: Alignment, rank: int) -> tuple[int, set[int]]:
    """An operand's replicated output axes as (``off``, ``rep``): every axis below ``off``, and ``rep``.

    An elementwise operand maps onto the last output axes, so this costs the operand's own
    rank, not the output's (an explanation of 20,000 operands stays linear). The axes below
    ``off`` that have output size 1 replicate nothing: :func:`_leading` leaves them out.
    """
    mapping = p.axes_mapping or ()
    r = len(mapping)
    if mapping != tuple(range(rank - r, rank)):  # not right-aligned: the general (output-rank) way
        return 0, _replicating(p)
    out, data = p.output_shape, p.data_shape
    rep = set()
    for i, d in enumerate(data):
        if isinstance(d, StaticDim) and d == 1:
            o = out[rank - r + i]
            if not (isinstance(o, StaticDim) and o == 1):
                rep.add(rank - r + i)
    return rank - r, rep


def _leading(off: int, ones: set[int]) -> list[int]:
    """The output axes below ``off`` (those an operand lacks) that replicate it: not those of size 1."""
    return [k for k in range(off) if k not in ones] if ones else list(range(off))


def explain_elementwise(ep: ElementwiseAlignment, *, colour: bool = False) -> str:
    shown = _window(len(ep.shapes), _MAX_ROWS, _HEAD_ROWS, _TAIL_ROWS)
    shapes = ", ".join(_GAP if j is None else shape_text(ep.shapes[j]) for j in shown)
    lines = [f"{ep.mode} (elementwise): {shapes} -> output {shape_text(ep.output_shape, 800)}"]
    if ep.output_shape.rank is None or any(p.axes_mapping is None for p in ep.operands):
        lines.append("  (a rank is dynamic: the axes cannot be lined up until it is known)")
    else:
        rank = ep.output_shape.rank
        ones = {k for k, d in enumerate(ep.output_shape) if _size_one(d)}
        cols = _columns(rank)
        replicated = {j: _replicated(ep.operands[j], rank) for j in shown if j is not None}
        rows = [("output axis", _axis_cells(cols))]
        styles = {(0, k): "head" for k in range(len(cols))}
        for j in shown:
            if j is None:
                rows.append((_GAP, [""] * len(cols)))
                continue
            p = ep.operands[j]
            cells = _row_cells(p, cols)
            off, rep = replicated[j]
            r = len(rows)
            for c, k in enumerate(cols):
                if k is not None and ((k < off and k not in ones) or k in rep):
                    styles[(r, c)] = "rep"
                    if cells[c] != "-":
                        cells[c] += "*"
            rows.append((f"operand {j}", cells))
        rows.append(("output", _dim_cells(ep.output_shape, cols)))
        styles.update({(len(rows) - 1, k): "out" for k in range(len(cols))})
        lines.append("")
        lines.extend(_table(rows, styles, colour))
        lines.append("  (* a 1 stretched, - an axis the operand lacks)")
        lines.append("")
        for j in shown:
            if j is None:
                lines.append(f"... ({_count(len(ep.operands) - _HEAD_ROWS - _TAIL_ROWS, 'more operand')}) ...")
                continue
            off, rep = replicated[j]
            axes = [*_leading(off, ones), *sorted(rep)]
            if axes:
                lines.append(f"operand {j} is replicated along {_output_axes(axes)}")
            else:
                lines.append(f"operand {j} is not replicated")
    if ep.constraints:
        lines.append(_constraints_line(ep.constraints))
    return "\n".join(lines)


def _row_of(row: Row | None, shape: Shape | None, rank: int) -> tuple[str, list[str]]:
    """An operand's cells under the output's axes: its dims where the mode places them, ``-`` elsewhere."""
    if row is None or shape is None:
        return _GAP, [""] * rank
    cells = ["-"] * row.width
    for d, k in zip(shape.dims, row.axes, strict=True):
        if k is not None:
            cells[k] = dim_text(d)
    return row.label, cells


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
    shown = _window(len(shapes), _MAX_ROWS, _HEAD_ROWS, _TAIL_ROWS)
    names_shown = ", ".join(_GAP if j is None else shape_text(shapes[j]) for j in shown)
    lines = [f"cannot broadcast {names_shown} ({mode})"]
    if any(s.rank is None for s in shapes):
        return "\n".join([*lines, "", str(error)])
    rank, placed = placement(
        shapes,
        mode,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
        labels=labels,
        shown=None if len(shapes) == 2 else shown,
    )
    rows = [_row_of(row, None if j is None else shapes[j], rank) for j, row in zip(shown, placed, strict=False)]
    focus = error.axis if error.axis is not None and 0 <= error.axis < rank else None
    cols = _columns(rank, focus)
    rows = [
        (label, [_GAP if k is None else (cells[k] if k < len(cells) else "") for k in cols]) for label, cells in rows
    ]
    header = [("output axis", _axis_cells(cols))]
    styles: dict[tuple[int, int], str] = {(0, c): "head" for c in range(len(cols))}
    marks = ["X" if k is not None and k == focus else "" for k in cols]
    if focus is not None:
        at = cols.index(focus)
        for r in range(1, len(rows) + 2):
            styles[(r, at)] = "clash"
    table = header + rows + ([("clash", marks)] if focus is not None else [])
    lines.append("")
    lines.extend(_table(table, styles, colour))
    lines.append("")
    lines.append(str(error))
    return "\n".join(lines)
