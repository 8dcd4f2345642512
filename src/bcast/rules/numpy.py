"""NumPy broadcasting: one-directional (data -> target) and multidirectional (N operands).

One-directional is Broadcast-1's ``numpy`` mode and ONNX's unidirectional broadcasting
(Gemm's C, PRelu's slope); multidirectional is ONNX's and NumPy's elementwise rule.
"""

from __future__ import annotations

from collections.abc import Callable

from ..constraints import Constraint, Constraints
from ..dims import Dim, Shape
from ..errors import BroadcastError
from ..merge import ClashError, merge_multi, merge_uni
from ..plan import ElementwisePlan, Plan
from ._common import Ctx

__all__ = ["plan_multidirectional", "plan_numpy"]


def plan_numpy(data: Shape, target: Shape, ctx: Ctx) -> Plan:
    """Right-align data with target; each data dim must be 1 or the target's dim."""

    def replan(d: Shape, t: Shape) -> Plan:
        return plan_numpy(d, t, ctx)

    if target.rank is None:
        return ctx.plan(data, target, target, None, (), replan)
    if data.rank is None:
        return ctx.plan(data, target, target, None, (), replan)
    r, big_r = data.rank, target.rank
    if r > big_r:
        raise ctx.error(
            f"the data has rank {r}, more than the target's rank {big_r}",
            accepted=f"data of rank at most {big_r}: numpy mode only prepends axes to the data "
            "(mode 'bidirectional' lets the data's rank win)",
        )
    off = big_r - r
    out = list(target.dims)
    cons: list[Constraint] = []
    for i, d in enumerate(data.dims):
        out[off + i], c = ctx.meet(merge_uni, d, target[off + i], off + i)
        cons.extend(c)
    return ctx.plan(data, target, Shape._of(out), tuple(range(off, big_r)), cons, replan)


def plan_multidirectional(shapes: tuple[Shape, ...], given: tuple[str, ...]) -> ElementwisePlan:
    """NumPy's rule for any number of operands: right-align, pad with 1, merge per axis."""
    mode = "numpy"
    if any(s.rank is None for s in shapes):
        out = Shape.dynamic_rank()
        return ElementwisePlan(
            mode, shapes, out, _operand_plans(shapes, given, out, None, Constraints()), Constraints()
        )
    big_r = max((s.rank or 0 for s in shapes), default=0)
    out_dims: list[Dim] = []
    cons: list[Constraint] = []
    for k in range(big_r):
        cur: Dim = Dim(1)
        src: int | None = None
        for j, s in enumerate(shapes):
            off = big_r - (s.rank or 0)
            if k < off:
                continue
            d = s[k - off]
            try:
                merged, c = merge_multi(cur, d)
            except ClashError as e:
                raise BroadcastError(
                    f"numpy: shapes {_list(given)} cannot be broadcast together: at output axis {k}, "
                    f"dim {cur} of operand {src} ({given[src or 0]}) meets dim {d} of operand {j} "
                    f"({given[j]}); accepted there: {e.accepted}.",
                    mode=mode,
                    shapes=given,
                    axis=k,
                    dims=(str(cur), str(d)),
                    accepted=e.accepted,
                ) from None
            if merged != cur or (src is None and not (d.is_static and d.value == 1)):
                src = j  # the operand that last set this axis's size
            cur = merged
            cons.extend(Constraint(x.kind, x.symbols, x.allowed, axis=k, mode=mode) for x in c)
        out_dims.append(cur)
    out = Shape._of(out_dims)
    checked = Ctx(mode, "", "", phrase=f"shapes {_list(given)} together").check(cons)
    return ElementwisePlan(mode, shapes, out, _operand_plans(shapes, given, out, big_r, checked), checked)


def _operand_plans(
    shapes: tuple[Shape, ...], given: tuple[str, ...], out: Shape, big_r: int | None, cons: Constraints
) -> tuple[Plan, ...]:
    plans = []
    for s, g in zip(shapes, given, strict=True):
        ctx = Ctx("numpy", g, str(out))
        mapping = None if big_r is None or s.rank is None else tuple(range(big_r - s.rank, big_r))
        plans.append(ctx.plan(s, out, out, mapping, cons, _replan_numpy(ctx)))
    return tuple(plans)


def _replan_numpy(ctx: Ctx) -> Callable[[Shape, Shape], Plan]:
    def replan(d: Shape, t: Shape) -> Plan:
        return plan_numpy(d, t, ctx)

    return replan


def _list(given: tuple[str, ...]) -> str:
    if len(given) == 2:
        return f"{given[0]} and {given[1]}"
    return ", ".join(given)
