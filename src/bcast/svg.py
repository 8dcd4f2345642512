"""A picture of a broadcast: each operand's cells, the replicated ones shaded, the output beside them.

The drawing shows the output's last two axes as a grid (at most 6 rows and 8 columns are
drawn; an ellipsis marks the rest); leading axes are listed under each panel. A cell an
operand really holds is solid, a cell that exists only by replication is hatched.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from html import escape

from .alignment import Alignment, ElementwiseAlignment
from .dims import Shape, shape_text
from .errors import BroadcastError

__all__ = ["broadcast_svg", "clash_svg"]

_CELL = 22
_MAX_ROWS, _MAX_COLS = 6, 8
_HOLD, _COPY, _OUT = "#4a7fc1", "#d9e3f0", "#5aa469"
#: At most this many operand panels are drawn (the first ones and the last); a note counts the rest.
_MAX_PANELS = 8


def _axes(axes: Sequence[int]) -> str:
    if len(axes) <= 24:
        return ", ".join(map(str, axes))
    return ", ".join([*map(str, axes[:16]), f"...({len(axes) - 20:,} more)...", *map(str, axes[-4:])])


def _size(d: object) -> int | None:
    v = getattr(d, "value", None)
    return int(v) if v is not None else None


def _grid_axes(rank: int) -> tuple[int | None, int | None]:
    if rank == 0:
        return None, None
    if rank == 1:
        return None, 0
    return rank - 2, rank - 1


def _panel(
    x: int,
    y: int,
    title: str,
    out_dims: Sequence[object],
    replicated: set[int],
    colour: str,
    notes: Sequence[str],
) -> tuple[list[str], int, int]:
    rank = len(out_dims)
    ra, ca = _grid_axes(rank)
    rows = _size(out_dims[ra]) if ra is not None else 1
    cols = _size(out_dims[ca]) if ca is not None else 1
    shown_r = min(rows if rows is not None else 3, _MAX_ROWS)
    shown_c = min(cols if cols is not None else 3, _MAX_COLS)
    parts = [f'<text x="{x}" y="{y}" font-size="13" font-weight="bold">{escape(title)}</text>']
    top = y + 10
    for i in range(shown_r):
        for j in range(shown_c):
            copied = (ra in replicated and i > 0) or (ca in replicated and j > 0)
            fill = "url(#hatch)" if copied else colour
            parts.append(
                f'<rect x="{x + j * _CELL}" y="{top + i * _CELL}" width="{_CELL - 2}" height="{_CELL - 2}" '
                f'fill="{fill}" stroke="#555" stroke-width="0.5"><title>{"replicated" if copied else "held"}'
                "</title></rect>"
            )
    more_r = rows is None or rows > shown_r
    more_c = cols is None or cols > shown_c
    if more_c:
        parts.append(f'<text x="{x + shown_c * _CELL + 2}" y="{top + 14}" font-size="12">…</text>')
    if more_r:
        parts.append(f'<text x="{x + 4}" y="{top + shown_r * _CELL + 12}" font-size="12">⋮</text>')
    text_y = top + shown_r * _CELL + (20 if more_r else 14)
    for k, line in enumerate(notes):
        parts.append(f'<text x="{x}" y="{text_y + 15 * k}" font-size="11" fill="#333">{escape(line)}</text>')
    width = max(shown_c * _CELL + 16, 7 * max([len(title), *(len(n) for n in notes)]))
    height = text_y + 15 * len(notes) - y
    return parts, width, height


def broadcast_svg(p: Alignment | ElementwiseAlignment) -> str:
    """An SVG document picturing ``p``: one panel per operand and one for the output.

    >>> import bcast
    >>> svg = broadcast_svg(bcast.plan("[3,1]", "[2,3,4]"))
    >>> svg.startswith("<svg") and "replicated along output axes 0, 2" in svg
    True
    """
    skipped = 0
    if isinstance(p, ElementwiseAlignment):
        n = len(p.operands)
        shown = list(range(n)) if n <= _MAX_PANELS else [*range(_MAX_PANELS - 2), n - 2, n - 1]
        skipped = n - len(shown)
        operands = [p.operands[j] for j in shown]
        labels = [f"operand {j} {shape_text(p.shapes[j], 60)}" for j in shown]
        out = p.output_shape
    else:
        operands = [p]
        labels = [f"data {shape_text(p.data_shape, 60)}"]
        out = p.output_shape
    if out.rank is None:
        raise BroadcastError(
            f"{p.mode}: cannot draw a broadcast whose output rank is unknown (output {out})", mode=p.mode
        )
    rank = out.rank
    parts: list[str] = []
    x, y = 10, 40
    heights = []
    for q, label in zip(operands, labels, strict=True):
        rep = set(q.broadcast_axes or ())
        notes = []
        if rep:
            notes.append("replicated along output axes " + _axes(sorted(rep)))
        else:
            notes.append("not replicated")
        panel, w, h = _panel(x, y, label, out, rep, _HOLD, notes)
        parts.extend(panel)
        heights.append(h)
        x += w + 30
    arrow_y = y + 40
    parts.append(f'<text x="{x - 22}" y="{arrow_y}" font-size="18">→</text>')
    out_notes = [f"rank {rank}"] + ([f"({skipped:,} more operands not drawn)"] if skipped else [])
    panel, w, h = _panel(x, y, f"output {shape_text(out, 60)}", out, set(), _OUT, out_notes)
    parts.extend(panel)
    heights.append(h)
    width = x + w + 20
    height = y + max(heights) + 20
    title = escape(
        f"{p.mode}: "
        + (
            ", ".join(shape_text(s, 60) for s in p.shapes[:_MAX_PANELS])
            + (f", ...({len(p.shapes) - _MAX_PANELS:,} more)" if len(p.shapes) > _MAX_PANELS else "")
            if isinstance(p, ElementwiseAlignment)
            else f"{shape_text(p.data_shape)} -> {shape_text(p.target_shape)}"
        )
        + f" = {shape_text(out)}"
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">'
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d9e3f0"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#7a9cc6" stroke-width="2"/></pattern></defs>'
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f'<text x="10" y="20" font-size="14">{title}</text>'
    )
    return head + "".join(parts) + "</svg>\n"


_CLASH = "#d9534f"


def clash_svg(
    error: BroadcastError,
    shapes: Sequence[Shape],
    mode: str,
    *,
    axes_mapping: Sequence[int] | None = None,
    axis: int = -1,
    broadcast_axes: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
) -> str:
    """An SVG picture of shapes that cannot be broadcast: each operand's dims in the output axes where
    ``mode`` places them (:func:`bcast.rules.placement.placement`), the clashing output axis
    (``error.axis``) marked in red.

    >>> import bcast
    >>> shapes = [bcast.Shape.parse("[3,1,5]"), bcast.Shape.parse("[4,4,5]")]
    >>> try:
    ...     bcast.broadcast_shapes(*shapes)
    ... except bcast.BroadcastError as e:
    ...     svg = clash_svg(e, shapes, "numpy")
    >>> svg.startswith("<svg") and 'data-clash-axis="0"' in svg
    True
    """
    from .rules.placement import placement

    clash = error.axis
    title = f"cannot broadcast {', '.join(shape_text(s, 60) for s in shapes[:_MAX_PANELS])}" + (
        f", ...({len(shapes) - _MAX_PANELS:,} more)" if len(shapes) > _MAX_PANELS else ""
    )
    title += f" ({mode})"
    if any(s.rank is None for s in shapes):
        rank, pairs = 0, []
    else:
        n = len(shapes)
        shown = list(range(n)) if n <= _MAX_PANELS else [*range(_MAX_PANELS - 2), n - 2, n - 1]
        rank, rows = placement(
            shapes,
            mode,
            axes_mapping=axes_mapping,
            axis=axis,
            broadcast_axes=broadcast_axes,
            labels=labels,
            shown=shown,
        )
        pairs = [
            (r, shapes[j])
            for j, r in zip(shown if len(rows) == len(shown) else range(n), rows, strict=False)
            if r is not None
        ]
    lo = 0 if rank <= 2 * _MAX_COLS else max(0, min(rank - 2 * _MAX_COLS, (clash or 0) - _MAX_COLS))
    cols = list(range(lo, min(rank, lo + 2 * _MAX_COLS)))
    label_w = 8 * max([len("output axis"), *(len(r.label) for r, _ in pairs)]) + 10
    cell_w = 44
    x0, y0 = 10 + label_w, 50
    parts: list[str] = []
    parts.append(f'<text x="10" y="{y0 + 15}" font-size="12" font-weight="bold">output axis</text>')
    for k, ax in enumerate(cols):
        parts.append(f'<text x="{x0 + k * cell_w + 14}" y="{y0 + 15}" font-size="12">{ax}</text>')
    for i, (row, shape) in enumerate(pairs):
        y = y0 + (i + 1) * _CELL * 1.4
        parts.append(f'<text x="10" y="{y + 15}" font-size="12" font-weight="bold">{escape(row.label)}</text>')
        where = {ax: j for j, ax in enumerate(row.axes) if ax is not None}
        for k, ax in enumerate(cols):
            j = where.get(ax)
            text = "-" if j is None else str(shape[j])
            fill = _CLASH if ax == clash and j is not None else (_HOLD if j is not None else "#eeeeee")
            colour = "white" if j is not None else "#777"
            parts.append(
                f'<rect x="{x0 + k * cell_w}" y="{y}" width="{cell_w - 4}" height="{_CELL}" fill="{fill}" '
                f'stroke="#555" stroke-width="0.5"/>'
                f'<text x="{x0 + k * cell_w + 4}" y="{y + 15}" font-size="11" fill="{colour}">'
                f"{escape(_short(text))}</text>"
            )
    bottom = y0 + (len(pairs) + 1) * _CELL * 1.4
    if clash is not None and clash in cols:
        k = cols.index(clash)
        parts.append(
            f'<rect x="{x0 + k * cell_w - 2}" y="{y0}" width="{cell_w}" height="{bottom - y0 + 4}" fill="none" '
            f'stroke="{_CLASH}" stroke-width="2.5" class="clash" data-clash-axis="{clash}">'
            f"<title>clash at output axis {clash}</title></rect>"
        )
        parts.append(
            f'<text x="{x0 + k * cell_w + 12}" y="{bottom + 20}" font-size="16" font-weight="bold" '
            f'fill="{_CLASH}">X</text>'
        )
    where_text = f"clash at output axis {clash}" if clash is not None else "the shapes clash"
    note_y = bottom + 42
    parts.append(f'<text x="10" y="{note_y}" font-size="12" fill="{_CLASH}">{escape(where_text)}</text>')
    lines = textwrap.wrap(str(error)[:1800], 110, max_lines=6, placeholder=" ...")
    for i, line in enumerate(lines):
        parts.append(f'<text x="10" y="{note_y + 18 * (i + 1)}" font-size="11" fill="#333">{escape(line)}</text>')
    width = max(x0 + len(cols) * cell_w + 20, 10 + 7 * min(len(title), 120), 800 if lines else 0)
    height = int(note_y + 18 * (len(lines) + 1))
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">'
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f'<text x="10" y="20" font-size="14">{escape(title)}</text>'
    )
    return head + "".join(parts) + "</svg>\n"


def _short(text: str) -> str:
    return text if len(text) <= 6 else text[:5] + "…"
