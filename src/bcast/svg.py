"""Pictures of a broadcast, as SVG.

:func:`broadcast_svg`: each operand's cells, the replicated ones shaded, the output beside
them. The drawing shows the output's last two axes as a grid (at most 6 rows and 8 columns
are drawn; an ellipsis marks the rest); leading axes are listed under each panel. A cell an
operand really holds is solid, a cell that exists only by replication is hatched.

:func:`axes_svg`: operands lined up under the output axes as a mode places them, one axis
marked (a clash, or a constraint); :func:`clash_svg` draws a failed broadcast with it, and
``bcast check --html`` each finding.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from html import escape

from .alignment import Alignment, ElementwiseAlignment
from .dims import Shape, shape_text
from .errors import BroadcastError, clean
from .rules.placement import placement

__all__ = ["axes_svg", "broadcast_svg", "clash_svg"]

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
#: the lined-up axes: row height, pixels per character (12px monospace), most characters in a cell or a label
_ROW_H, _CHAR_W, _CELL_CHARS, _LABEL_CHARS = 24, 7.5, 18, 24
#: a lined-up picture draws at most this many output axes (windowed around the marked one)
_MAX_AXES = 24


def _text(text: object, limit: int) -> str:
    """``text`` as SVG text or attribute: control characters escaped, cut to ``limit`` bytes, then markup escaped."""
    return escape(clean(str(text), limit, newlines=False), quote=True)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _shown(n: int) -> list[int]:
    """The operands a picture draws: all, or the first ones and the last two."""
    return list(range(n)) if n <= _MAX_PANELS else [*range(_MAX_PANELS - 2), n - 2, n - 1]


def _window(rank: int, focus: int | None) -> list[int | None]:
    """The output axes a picture draws (``None``: a gap); the marked axis is always drawn."""
    if rank <= _MAX_AXES:
        return list(range(rank))
    if focus is None or focus < 16:
        return [*range(16), None, *range(rank - 7, rank)]
    if focus >= rank - 16:
        return [*range(7), None, *range(rank - 16, rank)]
    return [*range(6), None, *range(focus - 4, focus + 5), None, *range(rank - 6, rank)]


def axes_svg(
    shapes: Sequence[Sequence[object] | None],
    mode: str,
    *,
    title: str,
    labels: Sequence[str] | None = None,
    axes: Sequence[int] | None = None,
    axes_mapping: Sequence[int] | None = None,
    axis: int = -1,
    broadcast_axes: Sequence[int] | None = None,
    output: Sequence[object] | None = None,
    marked: int | None = None,
    mark: str = "X",
    notes: Sequence[tuple[str, str]] = (),
) -> str:
    """An SVG picture of operands lined up: each operand's dims under the output axes where ``mode`` places
    them (:func:`bcast.rules.placement.placement`, which reads ``axes``, ``axes_mapping``, ``axis`` and
    ``broadcast_axes``), the output's dims under them where ``output`` is given, and output axis ``marked``
    framed and labelled ``mark`` below; then ``notes``, each a line of text and its colour.

    ``shapes`` are the operands' dims (anything printable; ``None``: a rank unknown, and nothing is
    lined up); ``labels`` name the rows (by default the placement's: ``operand 0``, ``A``, ``data``...).
    Only the operands and axes drawn are read: at most 8 operands and 24 axes (a window around
    ``marked``), whatever the ranks. Every text is escaped.

    >>> svg = axes_svg([[3, 1], [2, 4, 1]], "numpy", title="add", marked=1, mark="clash")
    >>> svg.count('class="clash"'), 'data-clash-axis="1"' in svg, ">clash</text>" in svg
    (1, True, True)
    """
    shown = _shown(len(shapes))
    if any(s is None for s in shapes):
        rank, pairs = 0, []
    else:
        ranks = [Shape((1,) * len(s)) for s in shapes if s is not None]
        rank, rows = placement(
            ranks,
            mode,
            axes=axes,
            axes_mapping=axes_mapping,
            axis=axis,
            broadcast_axes=broadcast_axes,
            labels=labels,
            shown=shown,
        )
        order = shown if len(rows) == len(shown) else range(len(shapes))
        pairs = [(j, r) for j, r in zip(order, rows, strict=False) if r is not None]
    focus = marked if marked is not None and 0 <= marked < rank else None
    cols = _window(rank, focus)
    # (label, cells, whether the row is an operand's: its dims are boxed)
    lines: list[tuple[str, list[str], bool]] = [("output axis", ["…" if k is None else str(k) for k in cols], False)]
    where = {k: c for c, k in enumerate(cols) if k is not None}
    for j, row in pairs:
        cells = ["…" if k is None else "-" for k in cols]
        dims = shapes[j]
        assert dims is not None
        for i, k in enumerate(row.axes):  # only the dims drawn are read: the picture's size is its window's
            if k is not None and k in where:
                cells[where[k]] = str(dims[i])
        label = labels[j] if labels is not None and j < len(labels) else row.label
        lines.append((label, cells, True))
    if output is not None and len(output) == rank:
        lines.append(("output", ["…" if k is None else str(output[k]) for k in cols], False))
    texts = [[_cut(clean(c, 80, newlines=False), _CELL_CHARS) for c in cells] for _, cells, _ in lines]
    widths = [int(_CHAR_W * max(4, *(len(t[c]) for t in texts))) + 14 for c in range(len(cols))]
    label_w = int(_CHAR_W * min(_LABEL_CHARS, max(len(label) for label, _, _ in lines))) + 16
    xs = [label_w]
    for w in widths:
        xs.append(xs[-1] + w)
    bottom = 30 + _ROW_H * len(lines)
    note_y = bottom + (22 if focus is not None else 0) + 18
    height = note_y + 18 * len(notes)
    longest = max([len(title), *(len(t) for t, _ in notes)])
    width = max(xs[-1] + 10, 360, min(int(6.5 * longest) + 20, 1200))
    parts = [
        f'<svg class="axes" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="monospace" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="4" y="16" font-family="sans-serif" fill="#333">{_text(title, 400)}</text>',
    ]
    if focus is not None:
        c = cols.index(focus)
        x, w = xs[c], widths[c]
        parts.append(
            f'<rect class="clash" data-clash-axis="{focus}" x="{x}" y="24" width="{w - 2}" '
            f'height="{_ROW_H * len(lines) + 4}" fill="#fde2e2" stroke="{_CLASH}" stroke-width="2">'
            f"<title>{_text(mark, 40)} at output axis {focus}</title></rect>"
        )
        parts.append(
            f'<text x="{x + w // 2 - 1}" y="{bottom + 14}" text-anchor="middle" fill="{_CLASH}" '
            f'font-weight="bold">{_text(mark, 40)}</text>'
        )
    for r, (label, cells, boxed) in enumerate(lines):
        y = 28 + r * _ROW_H
        parts.append(
            f'<text x="4" y="{y + 16}" font-weight="bold"><title>{_text(label, 80)}</title>'
            f"{_text(_cut(clean(label, 80, newlines=False), _LABEL_CHARS), 80)}</text>"
        )
        for c, cell in enumerate(cells):
            x, w, text = xs[c], widths[c], texts[r][c]
            held = boxed and cell not in ("-", "…")
            hit = held and cols[c] is not None and cols[c] == focus
            if held:
                parts.append(
                    f'<rect x="{x + 2}" y="{y + 2}" width="{w - 6}" height="{_ROW_H - 4}" '
                    f'fill="{_CLASH if hit else _COPY}" stroke="{_HOLD}" stroke-width="0.5"/>'
                )
            colour = ' fill="white"' if hit else ""
            parts.append(
                f'<text x="{x + w // 2 - 1}" y="{y + 16}" text-anchor="middle"{colour}>'
                f"<title>{_text(cell, 80)}</title>{_text(text, 80)}</text>"
            )
    for k, (line, colour) in enumerate(notes):
        parts.append(
            f'<text x="4" y="{note_y + 18 * k}" font-family="sans-serif" fill="{colour}">{_text(line, 400)}</text>'
        )
    parts.append("</svg>\n")
    return "".join(parts)


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
    """An SVG picture of shapes that cannot be broadcast (:func:`axes_svg`): each operand's dims in the
    output axes where ``mode`` places them, the clashing output axis (``error.axis``) marked in red,
    the message below.

    >>> import bcast
    >>> shapes = [bcast.Shape.parse("[3,1,5]"), bcast.Shape.parse("[4,4,5]")]
    >>> try:
    ...     bcast.broadcast_shapes(*shapes)
    ... except bcast.BroadcastError as e:
    ...     svg = clash_svg(e, shapes, "numpy")
    >>> svg.startswith("<svg") and 'data-clash-axis="0"' in svg
    True
    """
    clash = error.axis
    title = f"cannot broadcast {', '.join(shape_text(s, 60) for s in shapes[:_MAX_PANELS])}" + (
        f", ...({len(shapes) - _MAX_PANELS:,} more)" if len(shapes) > _MAX_PANELS else ""
    )
    where = f"clash at output axis {clash}" if clash is not None else "the shapes clash"
    lines = textwrap.wrap(str(error)[:1800], 110, max_lines=6, placeholder=" ...")
    return axes_svg(
        [None if s.rank is None else s for s in shapes],
        mode,
        title=f"{title} ({mode})",
        labels=labels,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
        marked=clash,
        notes=[(where, _CLASH), *((line, "#333") for line in lines)],
    )
