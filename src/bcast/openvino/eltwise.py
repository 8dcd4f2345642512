"""Elementwise auto-broadcast shape inference (``Add``, ``Multiply``, ...) as OpenVINO does it.

OpenVINO's ``eltwise_shape_infer``: the output starts as A's shape and B is merged in
with ``PartialShape::broadcast_merge_into`` (numpy, pdpd) or ``merge_into`` (none).
numpy and none agree with the core (:func:`bcast.broadcast_shapes`), so they call it;
pdpd is OpenVINO's own rule (see :mod:`bcast.openvino.differences`).
"""

from __future__ import annotations

from ..dims import Shape, ShapeLike
from ..errors import BroadcastError, as_given, brief
from ..merge import ClashError, merge_multi
from ..rules import Ctx, align_elementwise
from ..rules.pdpd import read_axis
from .inputs import read_data_shape
from .quirks import quirk

__all__ = ["AUTO_BROADCAST_NAMES", "eltwise_shape"]

#: auto_broadcast names OpenVINO's ``AutoBroadcastType`` accepts (case-insensitive); "explicit" is "none".
AUTO_BROADCAST_NAMES: dict[str, str] = {"none": "none", "explicit": "none", "numpy": "numpy", "pdpd": "pdpd"}


def eltwise_shape(a_shape: ShapeLike, b_shape: ShapeLike, auto_broadcast: str = "numpy", axis: int = -1) -> Shape:
    """The output shape of an OpenVINO binary elementwise op on inputs of shapes A and B.

    Parameters
    ----------
    a_shape, b_shape : Shape, str or sequence of int
        Partial shapes: static, ``?``, intervals, or ``[...]``.
    auto_broadcast : {"numpy", "pdpd", "none", "explicit"}
        ``"explicit"`` is OpenVINO's other name for ``"none"``.
    axis : int
        pdpd only: where B starts inside A; -1 (the C++ default) right-aligns B.

    Raises
    ------
    BroadcastError
        Where OpenVINO reports ``Argument shapes are inconsistent``.

    Warns
    -----
    QuirkWarning
        pdpd only, where B stretches A (A ``[1]`` with B ``[0]`` gives ``[0]``) or the
        output grows past A's bounds (A ``[1..4]`` with B ``[2..6]`` gives ``[2..6]``).

    Examples
    --------
    >>> import bcast.openvino as bov
    >>> bov.eltwise_shape("[2,?]", "[?,3]", "none")
    Shape('[2,3]')
    >>> bov.eltwise_shape("[...]", "[2,3]")                 # numpy: a dynamic rank wins
    Shape('[...]')
    >>> bov.eltwise_shape("[2,3,4,5]", "[3,1]", "pdpd", axis=1)
    Shape('[2,3,4,5]')
    """
    if not isinstance(auto_broadcast, str):
        raise TypeError(
            f"openvino: auto_broadcast must be a string, one of 'numpy', 'pdpd', 'none'; got {brief(auto_broadcast)}"
        )
    mode = AUTO_BROADCAST_NAMES.get(auto_broadcast.strip().lower())
    if mode is None:
        raise BroadcastError(
            f"openvino eltwise: unknown auto_broadcast {auto_broadcast!r}; accepted: "
            + ", ".join(map(repr, AUTO_BROADCAST_NAMES)),
            mode=auto_broadcast,
            accepted=", ".join(AUTO_BROADCAST_NAMES),
        )
    ax = read_axis(axis, mode)
    if mode != "pdpd" and ax != -1:
        raise TypeError(f"openvino eltwise {mode}: axis belongs to auto_broadcast 'pdpd' (given {brief(axis)})")
    a = read_data_shape(a_shape, "A")
    b = read_data_shape(b_shape, "B")
    ga, gb = as_given(a_shape), as_given(b_shape)
    if mode != "pdpd":
        try:
            return align_elementwise((a, b), mode).output_shape
        except BroadcastError as e:
            raise BroadcastError(
                f"openvino eltwise {e}", mode=mode, shapes=(ga, gb), axis=e.axis, dims=e.dims, accepted=e.accepted
            ) from None
    return _pdpd(a, b, ax, Ctx("openvino eltwise pdpd", gb, ga, f"axis {ax}", "B", "A"))


def _pdpd(a: Shape, b: Shape, axis: int, ctx: Ctx) -> Shape:
    """``broadcast_merge_into(A, B, PDPD)``: B into A at ``axis``, each pair by ``broadcast_merge``."""
    if a.rank is None or b.rank is None:
        return Shape.dynamic_rank()
    ra, rb = a.rank, b.rank
    if rb > ra:
        raise ctx.error(f"B has rank {rb}, more than A's rank {ra}", accepted=f"B of rank at most {ra}")
    if axis < -1:
        raise ctx.error(f"axis {axis} is negative", accepted="axis -1 (B right-aligned with A) or a start axis >= 0")
    start = ra - rb if axis == -1 else axis
    if start + rb > ra:
        raise ctx.error(
            f"B (rank {rb}) placed at axis {start} runs past A's last axis {ra - 1}",
            accepted=f"an axis from 0 to {ra - rb}",
        )
    out = list(a)
    odd: list[str] = []
    for i, d in enumerate(b):
        k = start + i
        x = out[k]
        if x.is_static and d.is_static and d.value > x.value:  # type: ignore[operator]
            raise ctx.error(
                f"at output axis {k}, B's dim {d} is larger than A's dim {x}",
                axis=k,
                dims=(d, x),
                accepted=f"a B dim of 1 or {x} (pdpd broadcasts B into A only)",
            )
        try:
            merged, _ = merge_multi(x, d)  # OpenVINO's Dimension::broadcast_merge, which the core follows
        except ClashError:
            raise ctx.error(
                f"at output axis {k}, B's dim {d} meets A's dim {x}",
                axis=k,
                dims=(d, x),
                accepted=f"a B dim of 1 or one that may equal {x}",
            ) from None
        within = x.lo <= merged.lo and (x.hi is None or (merged.hi is not None and merged.hi <= x.hi))
        if not within:
            odd.append(f"output axis {k}: A's {x} with B's {d} gives {merged}")
        out[k] = merged
    if odd:
        quirk(
            f"{ctx.mode}: B {ctx.data} stretches A {ctx.target}, which pdpd never does ({'; '.join(odd)}); "
            "OpenVINO's broadcast_merge lets B's dim win where A's may be 1"
        )
    return Shape.of_dims(out)
