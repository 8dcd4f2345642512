"""Where each mode puts each operand's axes in the output, read without checking a single dim.

A broadcast that fails has no alignment, yet a user wants to see the shapes lined up as
the mode lines them up, with the clash marked. This module answers that from the mode's
rule alone (which is why it lives with the rules: they are the only place that knows the
modes); :func:`bcast.explain.explain_error` draws the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..dims import Shape

__all__ = ["Row", "layout", "placement"]


@dataclass(frozen=True)
class Row:
    """One operand as drawn: its label, the output axis of each of its dims (``None``: not shown).

    ``width`` output axes, from the first, belong to the row (``-`` where it has no dim);
    the row has nothing at the axes past it (modes that do not align ranks).
    """

    label: str
    axes: tuple[int | None, ...]
    width: int


def placement(
    shapes: Sequence[Shape],
    mode: str,
    *,
    axes_mapping: Sequence[int] | None = None,
    axis: int = -1,
    broadcast_axes: Sequence[int] | None = None,
    labels: Sequence[str] | None = None,
    shown: Sequence[int | None] | None = None,
    axes: Sequence[int] | None = None,
) -> tuple[int, list[Row | None]]:
    """The output's rank and, for each operand in ``shown`` (``None`` entries: a gap), where its axes land.

    Shapes must be of known rank. Axes given out of range are simply not shown: the
    error, not the picture, says what is wrong with them. ``axes`` gives the mode's axes as a
    broadcast record of :mod:`bcast.graph` carries them (``explicit``: the axes mapping;
    ``pdpd``, ``legacy``: the one start axis), in place of ``axes_mapping`` and ``axis``.

    >>> rank, rows = placement([Shape((2, 3, 4, 5)), Shape((3, 4))], "pdpd", axis=1)
    >>> rank, [(r.label, r.axes) for r in rows if r]
    (4, [('A', (0, 1, 2, 3)), ('B', (1, 2))])
    """
    if axes is not None and mode == "explicit":
        axes_mapping = axes
    elif axes is not None and mode in ("pdpd", "legacy") and len(axes) == 1:
        axis = axes[0]
    ranks = [s.rank or 0 for s in shapes]
    if len(shapes) == 2 and mode in ("pdpd", "legacy"):
        rank = ranks[0]
        start = rank - ranks[1] if axis == -1 else axis
        b = tuple(start + i if 0 <= start + i < rank else None for i in range(ranks[1]))
        return rank, [Row("A", tuple(range(rank)), rank), Row("B", b, rank)]
    if len(shapes) == 2 and mode == "explicit" and axes_mapping is not None:
        rank = ranks[1]
        data = tuple(ax if 0 <= ax < rank else None for ax in list(axes_mapping)[: ranks[0]])
        data += (None,) * (ranks[0] - len(data))
        return rank, [Row("data", data, rank), Row("target", tuple(range(rank)), rank)]
    if len(shapes) == 2 and mode in ("axes", "like"):
        rank = ranks[1]
        new = set(broadcast_axes or ())
        kept = [k for k in range(rank) if k not in new]
        data = tuple(kept[i] if i < len(kept) else None for i in range(ranks[0]))
        return rank, [Row("data", data, rank), Row("target", tuple(range(rank)), rank)]
    if len(shapes) == 2 and mode == "none":
        rows = [Row(name, tuple(range(r)), r) for name, r in zip(("data", "target"), ranks, strict=True)]
        return max(ranks), list(rows)
    rank = max(ranks, default=0)
    names = tuple(labels) if labels else ()
    out: list[Row | None] = []
    order: Sequence[int | None] = range(len(shapes)) if shown is None else shown
    for j in order:  # only the operands shown: never operands x axes
        if j is None:
            out.append(None)
            continue
        label = names[j] if j < len(names) else f"operand {j}"
        out.append(Row(label, tuple(range(rank - ranks[j], rank)), rank))
    return rank, out


def layout(mode: str, axes: Sequence[int] | None = None) -> str:
    """How ``mode`` lines the operands up, in words (``axes`` as :func:`placement` reads them).

    >>> layout("numpy"), layout("pdpd", (1,)), layout("explicit", (0, 2))
    ('right-aligned', 'pdpd, from axis 1', 'explicit, axes mapping [0, 2]')
    """
    if mode in ("pdpd", "legacy"):
        return f"{mode}, from axis {axes[0]}" if axes and axes[0] != -1 else f"{mode}, right-aligned"
    if mode == "explicit":
        return f"explicit, axes mapping {list(axes)}" if axes is not None else "explicit"
    if mode == "none":
        return "none: equal shapes"
    if mode in ("axes", "like"):
        return f"{mode}: the data's axes in order, skipping the broadcast axes"
    return "right-aligned"
