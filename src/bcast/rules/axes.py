"""nGraph v0 ``Broadcast(arg, shape, broadcast_axes)`` and ``BroadcastLike``.

``broadcast_axes`` are the output axes that are *new*; the data must equal the output
with those axes removed, exactly: no 1 is ever stretched. ``BroadcastLike`` derives the
axes from a "like" shape by nGraph's designed rule (reference/ngraph-paddle.md section 2).

``broadcast_axes`` is nGraph's ``AxisSet``: a set, so its order does not matter and a
repeated axis counts once; it is read as its sorted unique axes. A negative or
out-of-range axis is still an error.
"""

from __future__ import annotations

from ..alignment import Alignment, Realign
from ..constraints import Constraint
from ..dims import Shape, Tri, dim_text, int_text, shape_text
from ..merge import merge_equal
from .common import RuleContext, axes_text

__all__ = ["axis_set", "like_axes", "plan_axes", "plan_like"]


def axis_set(axes: tuple[int, ...], name: str, rank: int | None, ctx: RuleContext) -> tuple[int, ...]:
    """nGraph's ``AxisSet``: ``axes`` checked in range (each as given), then sorted, each once.

    >>> axis_set((2, 0, 2), "broadcast_axes", 3, RuleContext("axes", "[3]", "[2,3,4]"))
    (0, 2)
    """
    for i, a in enumerate(axes):
        if a < 0:
            raise ctx.error(
                f"{name}[{i}] = {int_text(a)} is negative",
                accepted="axes counted from 0 in the output" + (f", i.e. 0..{rank - 1}" if rank else ""),
            )
        if rank is not None and a >= rank:
            raise ctx.error(
                f"{name}[{i}] = {int_text(a)} is out of range for the output of rank {rank}",
                axis=a,
                accepted=f"axes 0..{rank - 1}" if rank else "no axis at all (the target is a scalar)",
            )
    return tuple(sorted(set(axes)))


def plan_axes(
    data: Shape, target: Shape, axes: tuple[int, ...], ctx: RuleContext, replan: Realign | None = None
) -> Alignment:
    """``replan``: how to rebuild for other shapes (default: these axes again; BroadcastLike re-derives them)."""

    def again(d: Shape, t: Shape) -> Alignment:
        return plan_axes(d, t, axes, ctx)

    replan = replan or again

    axes = axis_set(axes, "broadcast_axes", target.rank, ctx)
    attrs = {"broadcast_axes": axes}
    if target.rank is None or data.rank is None:
        return ctx.align(data, target, target, None, (), replan, attrs)
    new = set(axes)
    keep = tuple(k for k in range(target.rank) if k not in new)
    required = Shape.of_dims(target[k] for k in keep)
    if data.rank != len(keep):
        raise ctx.error(
            f"the data has rank {data.rank}, but the target without broadcast_axes "
            f"{axes_text(axes)} is {shape_text(required)}, of rank {len(keep)}",
            accepted=f"data of shape {shape_text(required)}",
        )
    out = list(target.dims)
    cons: list[Constraint] = []
    hint = f"; data of shape {shape_text(required)} (mode {ctx.mode!r} never stretches a 1)"  # once, not per axis
    for i, k in enumerate(keep):
        out[k], c = ctx.meet(
            merge_equal,
            data[i],
            target[k],
            k,
            hint=hint,
        )
        cons.extend(c)
    return ctx.align(data, target, Shape.of_dims(out), keep, cons, replan, attrs)


def like_axes(data: Shape, like: Shape, ctx: RuleContext) -> tuple[int, ...]:
    """BroadcastLike's axes when none are given: a data dim 1 under a like dim > 1, and
    every like axis past the data's rank (the data is left-aligned)."""
    if data.rank is None or like.rank is None:
        raise ctx.error(
            "the broadcast axes cannot be derived from a shape of dynamic rank",
            accepted="initial_broadcast_axes given explicitly, or shapes of known rank",
        )
    axes = []
    for i in range(like.rank):
        if i >= data.rank:
            axes.append(i)
            continue
        d, t = data[i], like[i]
        if not (d.is_static and d.value == 1):
            continue
        above_one = Tri.YES if t.lo > 1 else (Tri.NO if t.hi is not None and t.hi <= 1 else Tri.MAYBE)
        if above_one is Tri.MAYBE:
            raise ctx.error(
                f"at axis {i} the data dim 1 meets the like dim {dim_text(t)}, which may or may not be "
                "larger than 1, so BroadcastLike's rule cannot decide whether the axis is broadcast",
                axis=i,
                dims=(d, t),
                accepted="a static like dim there, or initial_broadcast_axes given explicitly",
            )
        if above_one is Tri.YES:
            axes.append(i)
    return tuple(axes)


def plan_like(data: Shape, like: Shape, initial: tuple[int, ...] | None, ctx: RuleContext) -> Alignment:
    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_like(d, t, initial, ctx)

    if initial:
        return plan_axes(data, like, initial, ctx, replan)
    axes = like_axes(data, like, ctx)
    stretched = [i for i in axes if data.rank is not None and i < data.rank]
    if stretched:
        # The designed rule marks the axis as broadcast but keeps the data's 1 there, so the
        # data can never equal the like shape with those axes removed.
        k = stretched[0]
        raise ctx.error(
            f"at output axis {k}, the data dim 1 meets the like dim {dim_text(like[k])}: BroadcastLike's rule makes "
            f"axis {k} a broadcast axis but keeps the data's 1 there, so the ranks cannot agree "
            "(nGraph's designed rule)",
            axis=k,
            dims=(data[k], like[k]),
            accepted=f"a data dim equal to the like dim ({dim_text(like[k])}), explicit initial_broadcast_axes, "
            "or mode 'numpy', which stretches 1s",
        )
    return plan_axes(data, like, axes, ctx, replan)
