"""Broadcast-1 / Broadcast-3 shape inference exactly as OpenVINO 2026.4 does it.

A re-implementation of ``broadcast_base_shape_infer`` (OpenVINO's
``broadcast_shape_inference.hpp``), check for check and in the same order, on bcast's
:class:`~bcast.Shape`. Where OpenVINO agrees with the core rules it calls them (the
bidirectional merge is the core's; the pairwise dim checks of numpy and explicit mode
are the core's ``merge_uni``); the differences are listed in
:mod:`bcast.openvino.differences`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..dims import Dim, Shape, ShapeLike
from ..errors import BroadcastError, as_given, brief
from ..merge import ClashError, merge_uni
from ..rules.bidirectional import plan_bidirectional
from ..rules.common import Ctx
from ..rules.pdpd import read_axis
from .inputs import Input, read_data_shape, read_input
from .quirks import quirk

__all__ = ["Inferred", "broadcast_shape", "infer_broadcast", "read_mode"]

#: The mode names each opset's enum accepts (case-insensitive) and what they mean; "none" is explicit.
MODE_NAMES: dict[int, dict[str, str]] = {
    1: {"numpy": "numpy", "explicit": "explicit", "none": "explicit", "pdpd": "pdpd"},
    3: {"numpy": "numpy", "explicit": "explicit", "none": "explicit", "pdpd": "pdpd", "bidirectional": "bidirectional"},
}

_U64 = 2**64


@dataclass(frozen=True)
class Inferred:
    """What shape inference found, and what the value computation needs from it.

    ``axes``: the explicit ``axes_mapping`` values (when known); ``start``: pdpd's first
    target axis; ``unrunnable``: why values cannot be computed although the shape is
    accepted (``None`` when they can).
    """

    shape: Shape
    mode: str
    data: Shape
    axes: tuple[int, ...] | None = None
    start: int | None = None
    unrunnable: str | None = None


def read_mode(mode: object, opset: object) -> tuple[str, int]:
    """The canonical mode name and opset; OpenVINO's enum names are case-insensitive."""
    if isinstance(opset, bool) or opset not in (1, 3):
        raise TypeError(f"openvino: opset must be 1 (Broadcast-1) or 3 (Broadcast-3), got {brief(opset)}")
    names = MODE_NAMES[int(opset)]
    if not isinstance(mode, str):
        raise TypeError(f"openvino: mode must be a string, one of {', '.join(map(repr, names))}; got {brief(mode)}")
    m = mode.strip().lower()
    if m not in names:
        hint = " (bidirectional is Broadcast-3 only: opset=3)" if m == "bidirectional" else ""
        raise BroadcastError(
            f"Broadcast-{opset}: unknown mode {mode!r}{hint}; accepted: {', '.join(map(repr, names))}",
            mode=mode,
            accepted=", ".join(names),
        )
    return names[m], int(opset)


def broadcast_shape(
    data_shape: ShapeLike,
    target_shape: Any,
    mode: str = "numpy",
    axes_mapping: Any = None,
    axis: int = -1,
    opset: int = 3,
) -> Shape:
    """The output shape of OpenVINO's Broadcast-1 (``opset=1``) or Broadcast-3 (``opset=3``).

    Parameters
    ----------
    data_shape : Shape, str or sequence of int
        The data's partial shape: static, ``?``, intervals ``a..b``, or ``[...]``.
    target_shape, axes_mapping
        OpenVINO inputs, each: integers or an integer array (a Constant; its dtype and
        rank are checked as OpenVINO does, and a value -1 means ``?``); a :class:`~bcast.Shape`
        or string such as ``"[?,16,50,50]"`` (a partially known value, as from ``ShapeOf``
        or a ``Concat``); or :class:`~bcast.openvino.Unknown` (a Parameter).
        ``axes_mapping`` is an input of explicit mode only.
    mode : {"numpy", "explicit", "none", "pdpd", "bidirectional"}
        ``"none"`` is OpenVINO's other name for explicit; bidirectional needs ``opset=3``.
    axis : int
        pdpd's start axis; -1 (the C++ default) right-aligns the data with the target.
    opset : {1, 3}

    Returns
    -------
    Shape
        What ``node.get_output_partial_shape(0)`` gives.

    Raises
    ------
    BroadcastError
        Wherever OpenVINO's validation rejects the node.
    TypeError
        For arguments of the wrong kind (``axis`` outside pdpd mode, a non-integer opset).

    Warns
    -----
    QuirkWarning
        Where OpenVINO accepts something without a defined result (duplicate axes,
        negative target values, a 0 against a data 1 in bidirectional mode, ...).

    Examples
    --------
    >>> import bcast.openvino as bov
    >>> bov.broadcast_shape("[16]", "[?,16,?]")          # numpy: the output is the target, unrefined
    Shape('[?,16,?]')
    >>> bov.broadcast_shape("[3,5]", [2, 3, 1], "pdpd", axis=1)   # pdpd stretches both ways
    Shape('[2,3,5]')
    >>> bov.broadcast_shape("[]", [2, 1, 3], "explicit", axes_mapping=[1])
    Shape('[2,1,3]')
    >>> bov.broadcast_shape("[3,1]", [2, 1, 6], "bidirectional")
    Shape('[2,3,6]')
    """
    return infer_broadcast(data_shape, target_shape, mode, axes_mapping, axis, opset).shape


def infer_broadcast(
    data_shape: ShapeLike,
    target_shape: Any,
    mode: str = "numpy",
    axes_mapping: Any = None,
    axis: int = -1,
    opset: int = 3,
) -> Inferred:
    """:func:`broadcast_shape` with the facts the value computation needs (see :class:`Inferred`)."""
    m, op = read_mode(mode, opset)
    if m != "pdpd":
        ax = read_axis(axis, m)
        if ax != -1:
            raise TypeError(f"Broadcast-{op} {m}: axis belongs to mode 'pdpd' (given {brief(axis)}); {m} takes none")
        ax = -1
    else:
        ax = read_axis(axis, m)
    data = read_data_shape(data_shape, "data_shape")
    target = read_input(target_shape, "target_shape")
    axes = None if axes_mapping is None else read_input(axes_mapping, "axes_mapping")
    name = f"Broadcast-{op} {m}"
    extra = f"axes_mapping {axes.given}" if axes is not None and m == "explicit" else ""
    ctx = Ctx(name, as_given(data_shape), target.given, extra=extra or (f"axis {ax}" if m == "pdpd" else ""))

    # Input count: Broadcast-3 checks it; Broadcast-1 quietly ignores a third input, or
    # (with only two inputs) turns explicit into numpy.
    if op == 3 and m == "explicit" and axes is None:
        raise ctx.error("explicit mode needs the axes_mapping input", accepted="an axes_mapping input")
    if op == 3 and m != "explicit" and axes is not None:
        raise ctx.error(
            f"axes_mapping {axes.given} is given, but only explicit mode takes it",
            accepted="no axes_mapping input outside explicit mode",
        )
    if op == 1 and m != "explicit" and axes is not None:
        quirk(f"{name}: axes_mapping {axes.given} is ignored: Broadcast-1 reads its third input in explicit mode only")
        axes = None
    if op == 1 and m == "explicit" and axes is None:
        quirk(
            f"{name}: no axes_mapping given: Broadcast-1 with two inputs silently runs numpy mode "
            f"(data {ctx.data} to target {target.given})"
        )
        m, name = "numpy", f"Broadcast-{op} numpy"
        ctx = Ctx(name, ctx.data, ctx.target)

    # Element types, then ranks of the inputs, in OpenVINO's order.
    if not target.is_integral:
        raise ctx.error(
            f"target_shape {target.given} has element type {target.dtype}, not an integer type",
            accepted="target_shape of an integer element type (int8..int64, uint8..uint64)",
        )
    if axes is not None and not axes.is_integral:
        raise ctx.error(
            f"axes_mapping {axes.given} has element type {axes.dtype}, not an integer type",
            accepted="axes_mapping of an integer element type (int8..int64, uint8..uint64)",
        )
    if not target.rank_is_one:
        raise ctx.error(
            f"target_shape {target.given} is a tensor of rank {target.shape.rank} (shape {target.shape})",
            accepted="a 1-D target_shape (one value per output axis)",
        )
    if axes is not None and not axes.rank_is_one:
        raise ctx.error(
            f"axes_mapping {axes.given} is a tensor of rank {axes.shape.rank} (shape {axes.shape})",
            accepted="a 1-D axes_mapping (one output axis per data axis)",
        )
    if target.negatives:
        quirk(
            f"{name}: target_shape {target.given} has negative values {list(target.negatives)}: OpenVINO reads -1 "
            "as ? and other negatives as 0; the CPU plugin segfaults running it"
        )

    if m == "numpy":
        return _numpy(data, target, ctx)
    if m == "explicit":
        assert axes is not None
        return _explicit(data, target, axes, ctx)
    if m == "pdpd":
        return _pdpd(data, target, ax, ctx)
    return _bidirectional(data, target, ctx)


def _unknown_output(target: Input) -> Shape:
    """The output when the target's values are unknown: one ``?`` per value if their number is known."""
    if target.shape.is_static:
        return Shape.of_dims([Dim.dynamic()] * int(target.shape[0]))
    return Shape.dynamic_rank()


def _unrunnable_negatives(target: Input) -> str | None:
    if target.negatives:
        return f"target_shape {target.given} has negative values (the CPU plugin segfaults on it)"
    return None


def _numpy(data: Shape, target: Input, ctx: Ctx) -> Inferred:
    if target.value is None:
        return Inferred(_unknown_output(target), "numpy", data)
    t = Shape.of_dims(target.value)
    if data.rank is not None:
        r, rt = data.rank, len(t)
        if rt < r:
            raise ctx.error(
                f"the target has rank {rt}, smaller than the data's rank {r}",
                accepted=f"a target of rank at least {r}: numpy mode only prepends axes to the data",
            )
        off = rt - r
        never: list[str] = []
        for i, d in enumerate(data):
            k = off + i
            if d.is_static and t[k].is_static:
                ctx.meet(merge_uni, d, t[k], k)
                continue
            # OpenVINO skips every pair with a non-static dim; note those that can never be valid.
            try:
                merge_uni(d, t[k])
            except ClashError:
                never.append(f"output axis {k}: data {d} into target {t[k]}")
        if never:
            quirk(
                f"{ctx.mode}: data {ctx.data} to target {ctx.target} is accepted because OpenVINO checks only "
                f"pairs of static dims, but no size fits at {'; '.join(never)} (the data dim must be 1 or the "
                "target's dim)"
            )
    return Inferred(t, "numpy", data, unrunnable=_unrunnable_negatives(target))


def _axis_text(v: int) -> str:
    return str(v) if v >= 0 else f"{v} (read as the unsigned {v % _U64})"


def _explicit(data: Shape, target: Input, axes: Input, ctx: Ctx) -> Inferred:
    out = _unknown_output(target) if target.value is None else Shape.of_dims(target.value)
    checked = False
    if data.rank is not None and target.shape.rank is not None and axes.shape.is_static:
        r, k = data.rank, int(axes.shape[0])
        want = 1 if (r == 0 and k > 0) else r
        if k != want:
            raise ctx.error(
                f"axes_mapping has {k} entr{'y' if k == 1 else 'ies'} but the data has rank {r}",
                accepted=f"{r} axes, one per data axis" + (" (scalar data: 0 or 1 axis)" if r == 0 else ""),
            )
        if target.value is not None and axes.ints is not None:
            _validate_explicit(data, Shape.of_dims(target.value), axes.ints, ctx)
            checked = True
    vals = axes.ints
    if not checked and vals is not None:
        why = (
            "the target's values are unknown"
            if target.value is None
            else "the data's rank is unknown"
            if data.rank is None
            else "the axes input's length is unknown"
        )
        bad = _axes_problems(vals, len(target.value) if target.value is not None else None)
        if bad:
            quirk(f"{ctx.mode}: axes_mapping {axes.given} {bad}; OpenVINO does not check it because {why}")
    unrunnable = _unrunnable_negatives(target)
    if vals is not None and len(set(vals)) < len(vals):
        unrunnable = f"axes_mapping {axes.given} repeats an axis (the CPU plugin returns undefined values)"
    return Inferred(out, "explicit", data, axes=vals, unrunnable=unrunnable)


def _axes_problems(vals: tuple[int, ...], rank: int | None) -> str:
    if any(v < 0 for v in vals):
        return "has negative entries"
    if any(vals[i] < vals[i - 1] for i in range(1, len(vals))):
        return "is not in increasing order"
    if len(set(vals)) < len(vals):
        return "repeats an axis"
    if rank is not None and any(v >= rank for v in vals):
        return f"has an axis out of range for the target's rank {rank}"
    return ""


def _validate_explicit(data: Shape, t: Shape, vals: tuple[int, ...], ctx: Ctx) -> None:
    """OpenVINO's ``validate_target_shape_none``: the axes are read as unsigned 64-bit integers."""
    u = [v % _U64 for v in vals]
    for i in range(1, len(u)):
        if u[i] < u[i - 1]:
            raise ctx.error(
                f"axes_mapping entry {i} ({_axis_text(vals[i])}) comes after {_axis_text(vals[i - 1])}",
                accepted="axes in non-decreasing order (a broadcast never transposes)",
            )
    rt = t.rank or 0
    if data.rank == 0 and u:
        if u[0] >= rt:
            raise ctx.error(
                f"axes_mapping[0] = {_axis_text(vals[0])} is out of range for the target of rank {rt}",
                accepted=f"an axis in 0..{rt - 1}" if rt else "no axis (the target is a scalar shape)",
            )
        if not t[u[0]].may_be(1):
            raise ctx.error(
                f"scalar data is mapped to output axis {u[0]}, where the target is {t[u[0]]}",
                axis=u[0],
                dims=(t[u[0]],),
                accepted="a target dim that may be 1 at the one axis of scalar data",
            )
    for i, a in enumerate(u):
        if a >= rt:
            raise ctx.error(
                f"axes_mapping[{i}] = {_axis_text(vals[i])} is out of range for the target of rank {rt}",
                accepted=f"axes in 0..{rt - 1}" if rt else "no axis (the target is a scalar shape)",
            )
        if data.rank:
            # OpenVINO: compatible(target dim, data dim) or compatible(data dim, 1): exactly the core's merge_uni.
            ctx.meet(merge_uni, data[i], t[a], a)
    if len(set(u)) < len(u):
        quirk(
            f"{ctx.mode}: axes_mapping {list(vals)} repeats an axis; OpenVINO accepts it (its sort check is "
            "non-strict) but the result has no defined values (the CPU plugin returns garbage)"
        )


def _pdpd(data: Shape, target: Input, axis: int, ctx: Ctx) -> Inferred:
    if target.value is None:
        return Inferred(_unknown_output(target), "pdpd", data)
    t = Shape.of_dims(target.value)
    rt = len(t)
    if data.rank is None:
        return Inferred(Shape.of_dims([Dim.dynamic()] * rt), "pdpd", data)
    r = data.rank
    start = rt - r if axis == -1 else axis
    if start < 0:
        why = (
            f"axis {axis}"
            if axis != -1
            else f"axis -1 gives {rt} - {r} = {start} (the data's rank exceeds the target's)"
        )
        raise ctx.error(
            f"the start axis is negative: {why}", accepted="axis -1 with rank(data) <= rank(target), or >= 0"
        )
    out = list(t)
    for i in range(start, rt):
        j = i - start
        if j >= r:
            raise ctx.error(
                f"the data (rank {r}) placed at axis {start} ends at axis {start + r - 1}, before the target's "
                f"last axis {rt - 1}",
                accepted=f"axis {rt - r} (the data must reach the target's last axis)",
            )
        a, b = data[j], t[i]
        if a.is_static and a.value == 1:
            out[i] = b
        elif b.is_static and b.value == 1:
            out[i] = a  # OpenVINO's Broadcast op stretches the target's 1s too
        else:
            m = a.intersect(b)
            if m is None:
                raise ctx.error(
                    f"at output axis {i}, the data dim {a} meets the target dim {b}",
                    axis=i,
                    dims=(a, b),
                    accepted=f"a 1 on either side, or dims that may be equal ({a})",
                )
            out[i] = m
    unrunnable = _unrunnable_negatives(target)
    if start + r > rt:
        unused = f"data axes {start + r - rt}.." if r else ""
        quirk(
            f"{ctx.mode}: the data {ctx.data} placed at axis {start} runs past the target's last axis {rt - 1}; "
            f"OpenVINO never reads the data's axes from {rt - start} on ({unused.strip()}) and gives the target; "
            "the CPU plugin then fails ('Tile with non-positive repeats')"
        )
        unrunnable = f"the data placed at axis {start} runs past the target's last axis (the CPU plugin fails)"
    return Inferred(Shape.of_dims(out), "pdpd", data, start=start, unrunnable=unrunnable)


def _bidirectional(data: Shape, target: Input, ctx: Ctx) -> Inferred:
    if target.value is None:
        if data.rank is None or not target.shape.is_static:
            return Inferred(Shape.dynamic_rank(), "bidirectional", data)
        # OpenVINO: broadcast_merge_into(?*n, data, NUMPY), the core's bidirectional merge against ?s.
        t = _unknown_output(target)
    else:
        t = Shape.of_dims(target.value)
    out = plan_bidirectional(data, t, ctx).output_shape
    if target.value is not None and data.rank is not None:
        zeros = [
            k
            for k in range(1, min(data.rank, len(t)) + 1)
            if t[-k].is_static and t[-k].value == 0 and data[-k].may_be(1)
        ]
        if zeros:
            axes = ", ".join(str(len(out) - k) for k in zeros)
            quirk(
                f"{ctx.mode}: the target's 0 meets a data dim that may be 1 at output axis {axes}; shape inference "
                "gives 0 there, but the CPU plugin keeps the data's 1 (it takes the larger dim)"
            )
    return Inferred(out, "bidirectional", data, unrunnable=_unrunnable_negatives(target))
