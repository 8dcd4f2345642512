"""ONNX's legacy broadcasting (opsets 1 to 6, ``broadcast=1`` with an optional ``axis``).

The old operator texts (e.g. ``Add-6``) say: the right-hand operand B is broadcast to the
left-hand A, and either

1. B has exactly one element (a scalar, or any shape of 1s of rank <= rank(A)), or
2. B's shape is a contiguous run of A's shape, starting at ``axis`` (suffix matching
   when ``axis`` is not set); "1-dim expansion doesn't work yet": B's dims must *equal*
   A's there, a 1 does not stretch.

It is the pdpd placement without pdpd's 1-stretching and trailing-1 dropping, so it
produces the same kind of plan.
"""

from __future__ import annotations

from ..alignment import Alignment
from ..constraints import Constraint
from ..dims import Shape, int_text
from ..merge import merge_equal
from .common import RuleContext

__all__ = ["plan_legacy"]


def plan_legacy(b: Shape, a: Shape, axis: int, ctx: RuleContext) -> Alignment:
    """Broadcast B (the data) to A (the target) as ONNX opsets 1-6 do; ``axis=-1``: not set."""

    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_legacy(d, t, axis, ctx)

    attrs: dict[str, object] = {"axis": axis}
    if axis < -1:
        raise ctx.error(f"axis {int_text(axis)} is negative", accepted="no axis (suffix matching) or a start axis >= 0")
    if a.rank is None or b.rank is None:
        return ctx.align(b, a, a, None, (), replan, attrs)
    ra, rb = a.rank, b.rank
    if rb > ra:
        raise ctx.error(
            f"B has rank {rb}, more than A's rank {ra}",
            accepted=f"B of rank at most {ra}: legacy broadcasting only broadcasts B to A",
        )
    start = ra - rb if axis == -1 else axis
    if start > ra - rb:
        raise ctx.error(
            f"B (rank {rb}) placed at axis {int_text(start)} runs past A's last axis {ra - 1}",
            axis=ra,
            accepted=f"an axis from 0 to {ra - rb}",
        )
    attrs["start"] = start
    mapping = tuple(range(start, start + rb))
    if all(d.is_static and d.value == 1 for d in b):
        return ctx.align(b, a, a, mapping, (), replan, attrs)  # one element: it goes anywhere
    out = list(a.dims)
    cons: list[Constraint] = []
    for i in range(rb):
        out[start + i], c = ctx.meet(
            merge_equal,
            b[i],
            a[start + i],
            start + i,
            hint=" (legacy broadcasting: B's dims must equal A's, unless B has one element)",
        )
        cons.extend(c)
    return ctx.align(b, a, Shape.of_dims(out), mapping, cons, replan, attrs)
