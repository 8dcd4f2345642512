"""No broadcasting: the shapes must match exactly (OpenVINO auto_broadcast ``none``)."""

from __future__ import annotations

from ..alignment import Alignment
from ..constraints import Constraint
from ..dims import Shape, shape_text
from ..merge import merge_equal
from .common import RuleContext

__all__ = ["plan_none"]


def plan_none(data: Shape, target: Shape, ctx: RuleContext) -> Alignment:
    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_none(d, t, ctx)

    if data.rank is None or target.rank is None:
        out = target if data.rank is None else data
        mapping = None if out.rank is None or data.rank is None else tuple(range(data.rank))
        return ctx.align(data, target, out, mapping, (), replan)
    if data.rank != target.rank:
        raise ctx.error(
            f"the ranks differ ({data.rank} and {target.rank})",
            accepted=f"exactly the shape {shape_text(target)} (mode 'none' never broadcasts)",
        )
    dims = []
    cons: list[Constraint] = []
    for k, (d, t) in enumerate(zip(data.dims, target.dims, strict=True)):
        o, c = ctx.meet(merge_equal, d, t, k, hint=" (mode 'none' never broadcasts)")
        dims.append(o)
        cons.extend(c)
    return ctx.align(data, target, Shape.of_dims(dims), tuple(range(data.rank)), cons, replan)
