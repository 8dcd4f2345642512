"""Bidirectional broadcasting: ``data * ones(target)`` (Broadcast-3 bidirectional, ONNX Expand)."""

from __future__ import annotations

from ..alignment import Alignment
from ..constraints import Constraint
from ..dims import Dim, Shape
from ..merge import merge_multi
from .common import RuleContext

__all__ = ["plan_bidirectional"]


def plan_bidirectional(data: Shape, target: Shape, ctx: RuleContext) -> Alignment:
    """Right-align and merge both ways: the output may be larger than the target."""

    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_bidirectional(d, t, ctx)

    if data.rank is None or target.rank is None:
        return ctx.align(data, target, Shape.dynamic_rank(), None, (), replan)
    r, rt = data.rank, target.rank
    big_r = max(r, rt)
    out = []
    cons: list[Constraint] = []
    one = Dim(1)
    for k in range(big_r):
        d = data[k - (big_r - r)] if k >= big_r - r else one
        t = target[k - (big_r - rt)] if k >= big_r - rt else one
        o, c = ctx.meet(merge_multi, d, t, k)
        out.append(o)
        cons.extend(c)
    return ctx.align(data, target, Shape.of_dims(out), tuple(range(big_r - r, big_r)), cons, replan)
