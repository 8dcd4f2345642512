"""NumPy broadcasting: one-directional (data -> target) and multidirectional (N operands).

One-directional is Broadcast-1's ``numpy`` mode and ONNX's unidirectional broadcasting
(Gemm's C, PRelu's slope); multidirectional is ONNX's and NumPy's elementwise rule.
"""

from __future__ import annotations

from collections.abc import Callable

from ..alignment import Alignment, ElementwiseAlignment
from ..constraints import Constraint, Constraints
from ..dims import Dim, Shape, StaticDim, dim_text, joined
from ..errors import BroadcastError
from ..merge import ClashError, merge_multi, merge_uni
from .common import RuleContext

__all__ = ["multidirectional_output", "plan_multidirectional", "plan_numpy"]


def plan_numpy(data: Shape, target: Shape, ctx: RuleContext) -> Alignment:
    """Right-align data with target; each data dim must be 1 or the target's dim."""

    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_numpy(d, t, ctx)

    if target.rank is None:
        return ctx.align(data, target, target, None, (), replan)
    if data.rank is None:
        return ctx.align(data, target, target, None, (), replan)
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
    return ctx.align(data, target, Shape.of_dims(out), tuple(range(off, big_r)), cons, replan)


def plan_multidirectional(shapes: tuple[Shape, ...], given: tuple[str, ...]) -> ElementwiseAlignment:
    """NumPy's rule for any number of operands: right-align, pad with 1, merge per axis.

    Each operand's dims are visited once (never every output axis for every operand), so the
    cost is linear in the total number of dims. Several symbols that meet on one axis in a row
    make one derived symbol (``A|B|C``) and one constraint, not a chain of ever longer names.
    """
    out, checked = multidirectional_output(shapes, given)
    return ElementwiseAlignment("numpy", shapes, out, _operand_plans(shapes, given, out, out.rank, checked), checked)


def multidirectional_output(shapes: tuple[Shape, ...], given: tuple[str, ...]) -> tuple[Shape, Constraints]:
    """The output shape and the constraints of :func:`plan_multidirectional`, without a plan per operand: what a
    consumer that only asks whether (and when) shapes broadcast needs (shape propagation over a graph).

    >>> from bcast import Shape
    >>> out, cons = multidirectional_output((Shape("[N]"), Shape("[M]")), ("a", "b"))
    >>> str(out), [str(c) for c in cons]
    ('[M|N]', ['N == M or N == 1 or M == 1'])
    """
    mode = "numpy"
    if any(s.rank is None for s in shapes):
        return Shape.dynamic_rank(), Constraints()
    big_r = max((s.rank or 0 for s in shapes), default=0)
    one = Dim(1)
    cur: list[Dim] = [one] * big_r
    src: list[int | None] = [None] * big_r  # the operand that last set each axis's size
    runs: dict[int, dict[str, None]] = {}  # axis -> the symbols met in a row there, not yet merged
    cons: dict[int, list[Constraint]] = {}  # axis -> its constraints, in operand order
    clashes: dict[int, tuple[int | None, Dim, Dim, int, str]] = {}  # axis -> its first clash
    for j, s in enumerate(shapes):
        off = big_r - (s.rank or 0)
        for i, d in enumerate(s.dims):
            k = off + i
            c = cur[k]
            if isinstance(c, StaticDim) and isinstance(d, StaticDim):  # two static dims: the common case
                if c == d or d == 1:
                    if src[k] is None and d != 1:
                        src[k] = j
                elif c == 1:
                    cur[k], src[k] = d, j
                elif k not in clashes:
                    clashes[k] = (src[k], c, d, j, "dims that are equal, or a 1 on either side")
                continue
            if k in clashes:
                continue
            run = runs.get(k)
            if run is not None and isinstance(d, StaticDim) and d == 1:  # a 1 leaves the symbols as they are
                continue
            if c.name is not None and d.name is not None:
                if d.name == c.name or (run is not None and d.name in run):
                    continue
                if run is None:
                    run = runs[k] = {c.name: None}
                run[d.name] = None
                src[k] = j
                continue
            if run is not None:  # the symbols met in a row give way to a non-symbol
                c = cur[k] = _flush(runs.pop(k), k, cons)
            try:
                merged, found = merge_multi(c, d)
            except ClashError as e:
                clashes[k] = (src[k], c, d, j, e.accepted)
                continue
            if merged != c or (src[k] is None and not (d.is_static and d.value == 1)):
                src[k] = j
            cur[k] = merged
            if found:
                cons.setdefault(k, []).extend(
                    Constraint(x.kind, x.symbols, x.allowed, axis=k, mode=mode) for x in found
                )
    if clashes:
        k = min(clashes)
        at, c, d, j, accepted = clashes[k]
        raise BroadcastError(
            f"numpy: shapes {_list(given)} cannot be broadcast together: at output axis {k}, "
            f"dim {dim_text(c)} of operand {at} ({given[at or 0]}) meets dim {dim_text(d)} of operand {j} "
            f"({given[j]}); accepted there: {accepted}.",
            mode=mode,
            shapes=given,
            axis=k,
            dims=(str(c), str(d)),
            accepted=accepted,
        )
    for k, run in runs.items():
        cur[k] = _flush(run, k, cons)
    ordered = [x for k in sorted(cons) for x in cons[k]]
    checked = RuleContext(mode, "", "", phrase=f"shapes {_list(given)} together").check(ordered)
    return Shape.of_dims(cur), checked


def _flush(run: dict[str, None], axis: int, cons: dict[int, list[Constraint]]) -> Dim:
    """The derived symbol of several symbols met on ``axis``, recording that they broadcast together."""
    names = tuple(run)
    cons.setdefault(axis, []).append(Constraint("broadcast", names, axis=axis, mode="numpy"))
    return joined(names)


def _operand_plans(
    shapes: tuple[Shape, ...], given: tuple[str, ...], out: Shape, big_r: int | None, cons: Constraints
) -> tuple[Alignment, ...]:
    plans = []
    out_text = str(out)  # once, not once per operand
    for s, g in zip(shapes, given, strict=True):
        ctx = RuleContext("numpy", g, out_text)
        mapping = None if big_r is None or s.rank is None else tuple(range(big_r - s.rank, big_r))
        plans.append(ctx.align(s, out, out, mapping, cons, _replan_numpy(ctx), checked=True))
    return tuple(plans)


def _replan_numpy(ctx: RuleContext) -> Callable[[Shape, Shape], Alignment]:
    def replan(d: Shape, t: Shape) -> Alignment:
        return plan_numpy(d, t, ctx)

    return replan


def _list(given: tuple[str, ...]) -> str:
    if len(given) == 2:
        return f"{given[0]} and {given[1]}"
    if len(given) > 8:  # hundreds of operands: the first and last few
        return ", ".join([*given[:5], f"...({len(given) - 7:,} more)...", *given[-2:]])
    return ", ".join(given)
