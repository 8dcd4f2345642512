"""Explicit broadcasting: data axis ``i`` lands on output axis ``axes_mapping[i]``.

Broadcast-1/-3 ``explicit`` mode. The spec's requirements, all checked: one entry per
data axis, sorted (no transposes), unique, within the target's rank, and at each
mapped axis the data dim is 1 or the target's dim.
"""

from __future__ import annotations

from ..alignment import Alignment
from ..constraints import Constraint
from ..dims import Shape
from ..merge import merge_uni
from .common import RuleContext, axes_text, check_axes

__all__ = ["plan_explicit"]


def plan_explicit(data: Shape, target: Shape, axes: tuple[int, ...], ctx: RuleContext) -> Alignment:
    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_explicit(d, t, axes, ctx)

    attrs = {"axes_mapping": axes}
    check_axes(axes, "axes_mapping", target.rank, ctx, want="the target")
    if data.rank is not None and len(axes) != data.rank:
        raise ctx.error(
            f"axes_mapping {axes_text(axes)} has {len(axes)} entr{'y' if len(axes) == 1 else 'ies'} "
            f"but the data has rank {data.rank}",
            accepted=f"one output axis per data axis: {data.rank} increasing axes"
            + (f" in 0..{target.rank - 1}" if target.rank else ""),
        )
    if target.rank is None or data.rank is None:
        out = Shape.dynamic_rank() if target.rank is None else target
        return ctx.align(data, target, out, None, (), replan, attrs)
    dims = list(target.dims)
    cons: list[Constraint] = []
    for i, a in enumerate(axes):
        dims[a], c = ctx.meet(merge_uni, data[i], target[a], a)
        cons.extend(c)
    return ctx.align(data, target, Shape.of_dims(dims), axes, cons, replan, attrs)
