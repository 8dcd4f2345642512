"""OpenVINO's broadcasting as OpenVINO 2026.4 does it: its names, its ops, and its rules, quirks included.

The one place that holds OpenVINO's vocabulary: the ``mode`` names of Broadcast-1 and -3
(:data:`BROADCAST_MODES`), the ``auto_broadcast`` names (:data:`AUTO_BROADCAST`), the elementwise
ops that carry it (:data:`ELTWISE`, :data:`ARITY`), and the element types and port precisions of
an IR (:data:`ELEMENT_TYPES`, :func:`dtype_of_element`, :func:`dtype_of_precision`). And OpenVINO's
own rules: :func:`infer_broadcast` (``broadcast_base_shape_infer``, check for check and in the same
order) and :func:`eltwise_shape` / :func:`eltwise_output` (``eltwise_shape_infer``).

Two callers share them: the per-call profile (:mod:`bcast.openvino`: ``broadcast_shape``,
``eltwise_shape``, ``broadcast``), which reads its arguments into :class:`Input` and warns each
quirk as a :class:`~bcast.openvino.QuirkWarning`, and the IR's shape functions
(:mod:`bcast.graph.ops.openvino`), which report each quirk as a finding of the layer. A *quirk* is
an input OpenVINO's shape inference accepts although the result has no defined meaning; the rules
append its words to the ``quirks`` list they are given, and never warn themselves.

>>> quirks: list[str] = []
>>> infer_broadcast(Shape("[1,1]"), constant_input(np.array([6]), "[6]"), "explicit",
...                 constant_input(np.array([0, 0]), "[0, 0]"), -1, 3, quirks).shape
Shape('[6]')
>>> print(quirks[0][:64])
Broadcast-3 explicit: axes_mapping [0, 0] repeats an axis; OpenV
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dims import Dim, Shape
from ..errors import BroadcastError
from ..merge import ClashError, merge_multi, merge_uni
from . import align_elementwise
from .bidirectional import plan_bidirectional
from .common import RuleContext
from .pdpd import pdpd_start

__all__ = [
    "ARITY",
    "AUTO_BROADCAST",
    "AUTO_BROADCAST_AXIS",
    "BROADCAST_AXIS",
    "BROADCAST_MODES",
    "ELEMENT_TYPES",
    "ELTWISE",
    "V1_EXPLICIT_AS_NUMPY",
    "ElementType",
    "Eltwise",
    "Inferred",
    "Input",
    "broadcast_opset",
    "constant_input",
    "dtype_of_element",
    "dtype_of_precision",
    "eltwise_output",
    "eltwise_shape",
    "infer_broadcast",
    "missing_axis",
    "unknown_input",
    "unknown_text",
    "value_input",
]

# -- names -----------------------------------------------------------------------------------------

#: Broadcast's ``mode`` names per opset (1: Broadcast-1, 3: Broadcast-3), case-insensitive, and the
#: mode each means: ``none`` is OpenVINO's other name for ``explicit``.
BROADCAST_MODES: dict[int, dict[str, str]] = {
    1: {"numpy": "numpy", "explicit": "explicit", "none": "explicit", "pdpd": "pdpd"},
    3: {"numpy": "numpy", "explicit": "explicit", "none": "explicit", "pdpd": "pdpd", "bidirectional": "bidirectional"},
}

#: ``auto_broadcast`` names (OpenVINO's ``AutoBroadcastType``, case-insensitive) and the mode each means:
#: ``explicit`` is its other name for ``none``.
AUTO_BROADCAST: dict[str, str] = {"none": "none", "explicit": "none", "numpy": "numpy", "pdpd": "pdpd"}

#: where an IR keeps pdpd's axis: Broadcast-1 and Broadcast-3 each under an attribute of its own ...
BROADCAST_AXIS: dict[int, str] = {1: "mode.auto_broadcast_axis", 3: "mode.mode.axis"}
#: ... and every layer with ``auto_broadcast``
AUTO_BROADCAST_AXIS = "auto_broadcast.auto_broadcast_axis"


def broadcast_opset(version: object) -> int:
    """A Broadcast layer's opset as its IR ``version`` says (``opset1``, ``opset2``: 1; any other: 3).

    >>> broadcast_opset("opset1"), broadcast_opset("opset3"), broadcast_opset(None)
    (1, 3, 3)
    """
    return 1 if str(version or "").strip().removeprefix("opset") in ("1", "2") else 3


@dataclass(frozen=True)
class Eltwise:
    """One binary op with ``auto_broadcast``: the ONNX op whose evaluation on small values it shares (``None``:
    none does), NumPy's function of that name that computes it (``None``: none does), and whether its
    output is boolean."""

    onnx: str | None
    numpy: str | None
    boolean: bool = False


#: The binary ops that carry ``auto_broadcast`` (openvino 2026.4, every opset). ``Select`` and
#: ``FakeQuantize`` carry it too, with more inputs (:data:`ARITY`).
ELTWISE: dict[str, Eltwise] = {
    "Add": Eltwise("Add", "add"),
    "Subtract": Eltwise("Sub", "subtract"),
    "Multiply": Eltwise("Mul", "multiply"),
    "Divide": Eltwise("Div", "divide"),  # integer inputs: floored (pythondiv) or truncated
    "Power": Eltwise("Pow", "power"),
    "Maximum": Eltwise("Max", "maximum"),
    "Minimum": Eltwise("Min", "minimum"),
    "SquaredDifference": Eltwise(None, None),  # (a - b) ** 2
    "FloorMod": Eltwise("Mod", "mod"),  # the result takes the divisor's sign
    "Mod": Eltwise(None, "fmod"),  # the result takes the dividend's sign
    "Equal": Eltwise("Equal", "equal", True),
    "NotEqual": Eltwise("Equal", "not_equal", True),  # Equal's evaluation, negated
    "Less": Eltwise("Less", "less", True),
    "LessEqual": Eltwise("LessOrEqual", "less_equal", True),
    "Greater": Eltwise("Greater", "greater", True),
    "GreaterEqual": Eltwise("GreaterOrEqual", "greater_equal", True),
    "LogicalAnd": Eltwise("And", "logical_and", True),
    "LogicalOr": Eltwise("Or", "logical_or", True),
    "LogicalXor": Eltwise(None, "logical_xor", True),
    "BitwiseAnd": Eltwise(None, "bitwise_and"),
    "BitwiseOr": Eltwise(None, "bitwise_or"),
    "BitwiseXor": Eltwise(None, "bitwise_xor"),
    "BitwiseLeftShift": Eltwise(None, "left_shift"),
    "BitwiseRightShift": Eltwise(None, "right_shift"),
}

#: How many inputs an op with ``auto_broadcast`` takes, where it is not 2.
ARITY: dict[str, int] = {"Select": 3, "FakeQuantize": 5}


@dataclass(frozen=True)
class ElementType:
    """One IR ``element_type``: the dtype name the graph computes in (``None``: one bcast does not compute
    on), how its constants are stored in the ``.bin`` (a NumPy dtype, ``None``: not decoded) and the bits
    per element (``None``: no fixed number)."""

    dtype: str | None
    decode: str | None
    bits: int | None


#: Every element type an IR may name (OpenVINO's ``element::Type`` names).
ELEMENT_TYPES: dict[str, ElementType] = {
    "boolean": ElementType("bool", "bool", 8),
    "u8": ElementType("uint8", "<u1", 8),
    "i8": ElementType("int8", "<i1", 8),
    "u16": ElementType("uint16", "<u2", 16),
    "i16": ElementType("int16", "<i2", 16),
    "u32": ElementType("uint32", "<u4", 32),
    "i32": ElementType("int32", "<i4", 32),
    "u64": ElementType("uint64", "<u8", 64),
    "i64": ElementType("int64", "<i8", 64),
    "f16": ElementType("float16", "<f2", 16),
    "f32": ElementType("float32", "<f4", 32),
    "f64": ElementType("float64", "<f8", 64),
    "bf16": ElementType("bfloat16", "bf16", 16),  # decoded by hand into float32 (no ml_dtypes needed)
    "u1": ElementType(None, None, 1),
    "u2": ElementType(None, None, 2),
    "u3": ElementType(None, None, None),
    "u4": ElementType(None, None, 4),
    "u6": ElementType(None, None, None),
    "i4": ElementType(None, None, 4),
    "nf4": ElementType(None, None, 4),
    "f4e2m1": ElementType(None, None, 4),
    "f8e4m3": ElementType(None, None, 8),
    "f8e5m2": ElementType(None, None, 8),
    "f8e8m0": ElementType(None, None, 8),
    "string": ElementType(None, None, None),
    "dynamic": ElementType(None, None, None),
}

#: port precisions that are not their element type's name in capitals
_PRECISIONS = {"BOOL": "boolean", "FP16": "f16", "FP32": "f32", "FP64": "f64"}


def dtype_of_element(element_type: str | None) -> str | None:
    """An IR ``element_type`` (``f32``, ``i64``, ``boolean``) as the graph's dtype name (``float32``, ...); a
    type bcast does not compute on keeps its own name.

    >>> dtype_of_element("f32"), dtype_of_element("boolean"), dtype_of_element("nf4"), dtype_of_element(None)
    ('float32', 'bool', 'nf4', None)
    """
    if element_type is None:
        return None
    t = element_type.strip().lower()
    known = ELEMENT_TYPES.get(t)
    return known.dtype if known is not None and known.dtype is not None else (t or None)


def dtype_of_precision(precision: str | None) -> str | None:
    """A port's ``precision`` (``FP32``, ``I64``, ``BOOL``) as the graph's dtype name.

    >>> dtype_of_precision("FP32"), dtype_of_precision("I64"), dtype_of_precision("BOOL"), dtype_of_precision("U4")
    ('float32', 'int64', 'bool', 'u4')
    """
    if precision is None:
        return None
    p = precision.strip().upper()
    return dtype_of_element(_PRECISIONS.get(p, p.lower()))


#: a Broadcast-1 layer in explicit mode with no axes_mapping input (a quirk)
V1_EXPLICIT_AS_NUMPY = "Broadcast-1 explicit with 2 inputs: OpenVINO silently runs it as numpy"


def missing_axis(key: str) -> str:
    """The quirk of a pdpd layer without its axis attribute ``key``."""
    return (
        f"pdpd without a {key!r} attribute: OpenVINO reads the axis as 0 (its default constructor's), "
        "not -1 (rank(A) - rank(B))"
    )


# -- inputs ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """One OpenVINO input (``target_shape``, ``axes_mapping``) as shape inference sees it.

    ``given`` is how messages show it; ``shape`` and ``dtype`` are the input tensor's own; ``value``
    is its known (partial) value, or ``None``; ``ints`` the exact integers of a constant (``None``
    unless every value is known); ``negatives`` the constant's values below 0, which OpenVINO
    rewrites (-1 to ``?``, the others to 0).
    """

    given: str
    shape: Shape
    dtype: np.dtype[Any]
    value: tuple[Dim, ...] | None
    ints: tuple[int, ...] | None
    negatives: tuple[int, ...] = ()

    @property
    def is_integral(self) -> bool:
        """OpenVINO's ``is_integral_number``: any signed or unsigned integer type, not boolean."""
        return self.dtype.kind in "iu"

    @property
    def rank_is_one(self) -> bool:
        """Whether the tensor's rank is compatible with 1 (a dynamic rank is)."""
        return self.shape.rank is None or self.shape.rank == 1


def _dim_of_constant(v: int) -> Dim:
    # OpenVINO reads a constant shape value -1 as a dynamic dim and clamps other negatives to 0.
    if v == -1:
        return Dim.dynamic()
    return Dim(max(v, 0))


def constant_input(arr: np.ndarray, given: str) -> Input:
    """A Constant: its values are known (its dtype and rank are checked by the rule, as OpenVINO does)."""
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        # OpenVINO's own checks (element type, rank 1) report these; keep the input for them.
        return Input(given, Shape(arr.shape), arr.dtype, None, None)
    raw = tuple(int(v) for v in arr.tolist())
    dims = tuple(_dim_of_constant(v) for v in raw)
    return Input(given, Shape(arr.shape), arr.dtype, dims, raw, tuple(v for v in raw if v < 0))


def value_input(value: Shape, given: str) -> Input:
    """A partially known value (``ShapeOf``, a ``Concat`` of constants and unknowns): an i64 vector."""
    if value.rank is None:  # ShapeOf of a tensor of unknown rank: not even the length is known
        return Input(given, Shape("[?]"), np.dtype(np.int64), None, None)
    ints = tuple(int(d) for d in value) if value.is_static else None
    return Input(given, Shape((value.rank,)), np.dtype(np.int64), value.dims, ints)


def unknown_text(shape: Shape, dtype: np.dtype[Any]) -> str:
    """How a non-constant input is shown: ``Unknown('[3]', dtype=int64)``."""
    return f"Unknown({str(shape)!r}, dtype={dtype.name})"


def unknown_input(shape: Shape, dtype: np.dtype[Any]) -> Input:
    """A non-constant input (a Parameter): its values unknown, its own shape and dtype known."""
    return Input(unknown_text(shape, dtype), shape, dtype, None, None)


# -- Broadcast-1 and -3 -------------------------------------------------------------------------------

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


def infer_broadcast(
    data: Shape,
    target: Input,
    mode: str,
    axes: Input | None,
    axis: int,
    opset: int,
    quirks: list[str],
    *,
    data_given: str | None = None,
) -> Inferred:
    """OpenVINO's ``broadcast_base_shape_infer`` for Broadcast-``opset`` in ``mode`` (a name of
    :data:`BROADCAST_MODES`' values); ``axis`` is pdpd's (-1 elsewhere). Raises
    :class:`~bcast.BroadcastError` where OpenVINO's validation fails; appends each quirk to ``quirks``."""
    m, name = mode, f"Broadcast-{opset} {mode}"
    extra = f"axes_mapping {axes.given}" if axes is not None and m == "explicit" else ""
    given = str(data) if data_given is None else data_given
    ctx = RuleContext(name, given, target.given, extra=extra or (f"axis {axis}" if m == "pdpd" else ""))

    # Input count: Broadcast-3 checks it; Broadcast-1 quietly ignores a third input, or
    # (with only two inputs) turns explicit into numpy.
    if opset == 3 and m == "explicit" and axes is None:
        raise ctx.error("explicit mode needs the axes_mapping input", accepted="an axes_mapping input")
    if opset == 3 and m != "explicit" and axes is not None:
        raise ctx.error(
            f"axes_mapping {axes.given} is given, but only explicit mode takes it",
            accepted="no axes_mapping input outside explicit mode",
        )
    if opset == 1 and m != "explicit" and axes is not None:
        quirks.append(
            f"{name}: axes_mapping {axes.given} is ignored: Broadcast-1 reads its third input in explicit mode only"
        )
        axes = None
    if opset == 1 and m == "explicit" and axes is None:
        quirks.append(
            f"{name}: no axes_mapping given: Broadcast-1 with two inputs silently runs numpy mode "
            f"(data {ctx.data} to target {target.given})"
        )
        m, name = "numpy", f"Broadcast-{opset} numpy"
        ctx = RuleContext(name, ctx.data, ctx.target)
    _check_inputs(target, axes, ctx)
    if target.negatives:
        quirks.append(
            f"{name}: target_shape {target.given} has negative values {list(target.negatives)}: OpenVINO reads -1 "
            "as ? and other negatives as 0; the CPU plugin segfaults running it"
        )
    if m == "numpy":
        return _numpy(data, target, ctx, quirks)
    if m == "explicit":
        assert axes is not None
        return _explicit(data, target, axes, ctx, quirks)
    if m == "pdpd":
        return _pdpd(data, target, axis, ctx, quirks)
    return _bidirectional(data, target, ctx, quirks)


def _check_inputs(target: Input, axes: Input | None, ctx: RuleContext) -> None:
    """Element types, then ranks of the inputs, in OpenVINO's order."""
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


def _unknown_output(target: Input) -> Shape:
    """The output when the target's values are unknown: one ``?`` per value if their number is known."""
    if target.shape.is_static:
        return Shape.of_dims([Dim.dynamic()] * int(target.shape[0]))
    return Shape.dynamic_rank()


def _unrunnable_negatives(target: Input) -> str | None:
    if target.negatives:
        return f"target_shape {target.given} has negative values (the CPU plugin segfaults on it)"
    return None


def _numpy(data: Shape, target: Input, ctx: RuleContext, quirks: list[str]) -> Inferred:
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
            quirks.append(
                f"{ctx.mode}: data {ctx.data} to target {ctx.target} is accepted because OpenVINO checks only "
                f"pairs of static dims, but no size fits at {'; '.join(never)} (the data dim must be 1 or the "
                "target's dim)"
            )
    return Inferred(t, "numpy", data, unrunnable=_unrunnable_negatives(target))


def _axis_text(v: int) -> str:
    return str(v) if v >= 0 else f"{v} (read as the unsigned {v % _U64})"


def _explicit(data: Shape, target: Input, axes: Input, ctx: RuleContext, quirks: list[str]) -> Inferred:
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
            _validate_explicit(data, Shape.of_dims(target.value), axes.ints, ctx, quirks)
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
            quirks.append(f"{ctx.mode}: axes_mapping {axes.given} {bad}; OpenVINO does not check it because {why}")
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


def _validate_explicit(data: Shape, t: Shape, vals: tuple[int, ...], ctx: RuleContext, quirks: list[str]) -> None:
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
        quirks.append(
            f"{ctx.mode}: axes_mapping {list(vals)} repeats an axis; OpenVINO accepts it (its sort check is "
            "non-strict) but the result has no defined values (the CPU plugin returns garbage)"
        )


def _pdpd(data: Shape, target: Input, axis: int, ctx: RuleContext, quirks: list[str]) -> Inferred:
    if target.value is None:
        return Inferred(_unknown_output(target), "pdpd", data)
    t = Shape.of_dims(target.value)
    rt = len(t)
    if data.rank is None:
        return Inferred(Shape.of_dims([Dim.dynamic()] * rt), "pdpd", data)
    r = data.rank
    start = pdpd_start(rt, r, axis)
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
        quirks.append(
            f"{ctx.mode}: the data {ctx.data} placed at axis {start} runs past the target's last axis {rt - 1}; "
            f"OpenVINO never reads the data's axes from {rt - start} on ({unused.strip()}) and gives the target; "
            "the CPU plugin then fails ('Tile with non-positive repeats')"
        )
        unrunnable = f"the data placed at axis {start} runs past the target's last axis (the CPU plugin fails)"
    return Inferred(Shape.of_dims(out), "pdpd", data, start=start, unrunnable=unrunnable)


def _bidirectional(data: Shape, target: Input, ctx: RuleContext, quirks: list[str]) -> Inferred:
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
            quirks.append(
                f"{ctx.mode}: the target's 0 meets a data dim that may be 1 at output axis {axes}; shape inference "
                "gives 0 there, but the CPU plugin keeps the data's 1 (it takes the larger dim)"
            )
    return Inferred(out, "bidirectional", data, unrunnable=_unrunnable_negatives(target))


# -- elementwise ---------------------------------------------------------------------------------------


def eltwise_shape(
    a: Shape, b: Shape, mode: str, axis: int, quirks: list[str], given: tuple[str, str] | None = None
) -> Shape:
    """OpenVINO's ``eltwise_shape_infer`` for A and B under ``auto_broadcast`` ``mode`` (a value of
    :data:`AUTO_BROADCAST`): the output starts as A's shape and B is merged in with
    ``broadcast_merge_into`` (numpy, pdpd) or ``merge_into`` (none). numpy and none agree with the
    core (:func:`~bcast.rules.align_elementwise`); pdpd is OpenVINO's own: B placed inside A from
    ``axis`` (its trailing 1s counted), each pair merged by ``broadcast_merge``, so that B may stretch
    an A that may be 1 (a quirk). ``given``: how messages show A and B."""
    ga, gb = given if given is not None else (str(a), str(b))
    if mode != "pdpd":
        try:
            return align_elementwise((a, b), mode).output_shape
        except BroadcastError as e:
            raise BroadcastError(
                f"openvino eltwise {e}", mode=mode, shapes=(ga, gb), axis=e.axis, dims=e.dims, accepted=e.accepted
            ) from None
    ctx = RuleContext("openvino eltwise pdpd", gb, ga, f"axis {axis}", "B", "A")
    if a.rank is None or b.rank is None:
        return Shape.dynamic_rank()
    ra, rb = a.rank, b.rank
    if rb > ra:
        raise ctx.error(f"B has rank {rb}, more than A's rank {ra}", accepted=f"B of rank at most {ra}")
    if axis < -1:
        raise ctx.error(f"axis {axis} is negative", accepted="axis -1 (B right-aligned with A) or a start axis >= 0")
    start = pdpd_start(ra, rb, axis)
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
        quirks.append(
            f"{ctx.mode}: B {ctx.data} stretches A {ctx.target}, which pdpd never does ({'; '.join(odd)}); "
            "OpenVINO's broadcast_merge lets B's dim win where A's may be 1"
        )
    return Shape.of_dims(out)


def eltwise_output(op: str, shapes: Sequence[Shape], mode: str, axis: int, quirks: list[str]) -> Shape:
    """The output shape of a layer with ``auto_broadcast`` (``shapes``: its inputs', :data:`ARITY` of them)
    from OpenVINO's pairwise rule, in OpenVINO's merge order: Select pdpd broadcasts ``else``, then
    ``cond``, into ``then``; Select numpy and none merge ``then`` into ``else``, that into ``cond``;
    FakeQuantize broadcasts each range input into X; a binary op B into A."""

    def merge(a: Shape, b: Shape) -> Shape:
        return eltwise_shape(a, b, mode, axis, quirks)

    if op == "Select":
        cond, then, other = shapes
        if mode == "pdpd":
            return merge(merge(then, other), cond)
        return merge(cond, merge(other, then))
    out = shapes[0]
    for other_shape in shapes[1:]:
        out = merge(out, other_shape)
    return out
