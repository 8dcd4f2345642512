"""PDPD broadcasting as OpenVINO's broadcast-rules text defines it: B placed into A at ``axis``.

The text's rules, each checked here:

1. rank(B) <= rank(A);
2. B (its trailing 1s ignored) is a continuous run of A's axes, starting at ``axis``;
3. only B is broadcast: each of B's dims is 1 or A's dim there;
4. ``axis = -1`` means ``rank(A) - rank(B)``, with B's rank counted before its
   trailing 1s are dropped; no other negative axis is allowed.

Real systems differ (OpenVINO's Broadcast op stretches both ways, Paddle lets X be
the smaller operand): those are profiles, not this rule.
"""

from __future__ import annotations

import operator

import numpy as np

from ..alignment import Alignment
from ..constraints import Constraint
from ..dims import Shape, int_text, shape_text
from ..errors import brief
from ..merge import merge_uni
from .common import RuleContext

__all__ = ["pdpd_start", "plan_pdpd", "read_axis"]


def read_axis(axis: object, mode: str) -> int:
    """``axis`` as an int: an integer (NumPy's too), never a bool, float or string.

    A huge one is kept (the rule then says it is out of range, naming the shapes); messages
    print it with :func:`~bcast.dims.int_text`, so even 100,000 digits cost nothing.
    """
    if type(axis) is int:
        return axis
    if isinstance(axis, (bool, np.bool_, float, complex, str, bytes, np.floating)) or axis is None:
        raise TypeError(f"{mode}: axis must be an integer, got {type(axis).__name__} {brief(axis)}")
    try:
        ax = operator.index(axis)  # type: ignore[arg-type]
    except Exception as e:  # not an integer, or a hostile __index__
        why = "" if isinstance(e, TypeError) else f" ({type(e).__name__} from its __index__: {brief(str(e))})"
        raise TypeError(f"{mode}: axis must be an integer, got {type(axis).__name__} {brief(axis)}{why}") from None
    return ax


def pdpd_start(a_rank: int, b_rank: int, axis: int) -> int:
    """Where pdpd places B inside A: the axis of A that B's first axis lands on, ``axis`` itself, or for
    ``axis = -1`` ``rank(A) - rank(B)`` (B right-aligned, its trailing 1s counted). Every pdpd there is
    places B so: this rule, OpenVINO's elementwise ops and its Broadcast op (:mod:`bcast.rules.openvino`),
    and the IR's shape functions (:mod:`bcast.graph.ops.openvino`); what each then asks of the dims
    differs (see :mod:`bcast.openvino.differences`).

    >>> pdpd_start(4, 2, -1), pdpd_start(4, 2, 1)
    (2, 1)
    """
    return a_rank - b_rank if axis == -1 else axis


def plan_pdpd(b: Shape, a: Shape, axis: int, ctx: RuleContext) -> Alignment:
    """Broadcast B (the data) into A (the target) starting at ``axis``."""

    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_pdpd(d, t, axis, ctx)

    attrs: dict[str, object] = {"axis": axis}
    if axis < -1:
        raise ctx.error(
            f"axis {int_text(axis)} is negative",
            accepted="axis -1 (B right-aligned with A) or a start axis >= 0",
        )
    if a.rank is None:
        return ctx.align(b, a, a, None, (), replan, attrs)
    if b.rank is None:
        return ctx.align(b, a, a, None, (), replan, attrs)
    ra, rb = a.rank, b.rank
    if rb > ra:
        raise ctx.error(
            f"B has rank {rb}, more than A's rank {ra}",
            accepted=f"B of rank at most {ra}: pdpd only broadcasts B into A",
        )
    start = pdpd_start(ra, rb, axis)
    kept = rb
    while kept > 0 and b[kept - 1].is_static and b[kept - 1].value == 1:
        kept -= 1
    attrs["start"] = start
    if start + kept > ra:
        trimmed = f" (its trailing 1s ignored: {shape_text(b[:kept])})" if kept < rb else ""
        raise ctx.error(
            f"B{trimmed} placed at axis {int_text(start)} runs past A's last axis {ra - 1}",
            axis=ra,
            accepted=f"an axis from 0 to {ra - kept}",
        )
    cons: list[Constraint] = []
    out = list(a.dims)
    for i in range(kept):
        out[start + i], c = ctx.meet(merge_uni, b[i], a[start + i], start + i, hint=" (pdpd broadcasts B into A only)")
        cons.extend(c)
    if start + rb <= ra:
        mapping: tuple[int | None, ...] = tuple(range(start, start + rb))
    else:  # the ignored trailing 1s have no axis of A left to sit on: they are dropped
        mapping = tuple(range(start, start + kept)) + (None,) * (rb - kept)
    return ctx.align(b, a, Shape.of_dims(out), mapping, cons, replan, attrs)
