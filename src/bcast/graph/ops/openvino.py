"""OpenVINO IR ops (domain ``openvino``): shape functions over the same expressions as the ONNX ones.

An IR read by :func:`bcast.openvino.graph_read.graph_of_ir` has nodes of domain ``"openvino"`` whose
attributes are the IR's ``<data>`` text; each function here parses what its op reads and computes
the outputs as :class:`~bcast.graph.expr.Expr` over the model's symbols, so that two dims that must
be equal are compared (``batch`` against ``batch``, not ``?`` against ``?``) and a shape computed
through ``ShapeOf -> Gather -> Concat -> Reshape`` is known as a value.

Where an IR op means exactly what an ONNX op means (Concat, ShapeOf, Reshape with ``special_zero``,
Unsqueeze, Slice-8 once its inputs are reordered, ...), its ONNX function is called on a *view* of the
node: the same name and op, the attributes as the ONNX function reads them. Everything that
broadcasts is checked here, with OpenVINO's rule named in each record (``OpenVINO Add numpy``,
``OpenVINO Broadcast-3 explicit``): ``auto_broadcast`` ``numpy`` is NumPy's multidirectional rule,
``none`` needs equal shapes, ``pdpd`` places B inside A at ``axis`` and broadcasts it into A;
Broadcast's ``numpy`` is unidirectional (the output is the target), ``bidirectional`` is ONNX Expand,
``explicit`` maps the data's axes onto ``axes_mapping`` and ``pdpd`` places the data at ``axis`` and
lets a 1 stretch on either side (OpenVINO's own rule, see :mod:`bcast.openvino.differences`). The
last two are reduced to the first by placing the data's dims on the target's axes, with 1s between
(an exact reduction: each placed dim must be 1 or the target's), so every constraint and error goes
through :class:`~bcast.graph.context.Ctx` like any other.

OpenVINO's names and op lists are :mod:`bcast.rules.openvino`'s. Its *quirks* (inputs its shape
inference accepts whose result has no defined meaning: repeated ``axes_mapping`` entries, negative
target values, a pdpd layer without its axis, B stretching A in an elementwise pdpd, ...) are findings
of kind ``quirk`` (warnings) of the layer: each broadcasting layer also runs OpenVINO's own rule
(:func:`bcast.rules.openvino.infer_broadcast`, :func:`~bcast.rules.openvino.eltwise_output`) on what
propagation knows of its inputs, as OpenVINO sees them (a dim that is no constant is ``?``, or the
interval an input's declaration gives it), and reports each quirk that rule finds.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ...dims import Dim, Shape, Tri
from ...errors import BroadcastError, as_given
from ...files import MAX_MODEL_RANK
from ...rules.openvino import (
    ARITY,
    AUTO_BROADCAST,
    AUTO_BROADCAST_AXIS,
    BROADCAST_AXIS,
    BROADCAST_MODES,
    ELTWISE,
    V1_EXPLICIT_AS_NUMPY,
    Input,
    broadcast_opset,
    constant_input,
    dtype_of_element,
    eltwise_output,
    infer_broadcast,
    missing_axis,
    unknown_input,
    value_input,
)
from ...rules.pdpd import pdpd_start
from ..context import BroadcastRecord, Ctx, ShapeError, Suspect
from ..expr import Expr
from ..model import Node, Origin, Value
from ._base import (
    SHAPES,
    agree,
    axis_of,
    fill_of,
    input_value,
    known,
    nonzero_count,
    norm_findings,
    note_fill,
    numel,
    origins_of,
    rational_scale,
    register,
    require,
    same_as,
)
from .elementwise import clamp, dtype_name, evaluate, expanded_data
from .indexing import constant_indices, onehot_data, out_of_range
from .nn import WINDOW, group_normalization, window_fits
from .recurrent import operand_dims
from .shape import reshape, slice_bounds, split_data

__all__ = ["BINARY", "INTERVALS", "UNARY", "binary", "dtype_of_element", "parse_bool", "parse_int", "parse_ints"]

Dims = tuple[Expr, ...]
Origins = tuple[Origin | None, ...]

_ONE = Expr.const(1)
_ZERO = Expr.const(0)

# -- attributes: the IR's text, parsed where read ------------------------------------------------


def _name(node: Node) -> str:
    return f"{node.op} {node.label}"


def _t(dims: Sequence[Any] | None) -> str:
    return "[...]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def parse_int(node: Node, key: str, default: int) -> int:
    """An integer attribute (``"-1"``); a :class:`ShapeError` (invalid) for text that is none."""
    raw = node.attrs.get(key)
    if raw is None:
        return default
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    text = str(raw).strip()
    try:
        if not text.isascii():
            raise ValueError(text)
        return int(text, 10)
    except ValueError:
        raise ShapeError(
            f"{_name(node)}: the attribute {key}={text[:40]!r} is not an integer", kind="invalid"
        ) from None


def parse_ints(node: Node, key: str, default: Sequence[int] | None = None) -> list[int] | None:
    """A list attribute (``"1,2"``, ``""`` for none); ``default`` when absent."""
    raw = node.attrs.get(key)
    if raw is None:
        return None if default is None else list(default)
    if isinstance(raw, (list, tuple)):
        return [int(x) for x in raw]
    text = str(raw).strip()
    if not text:
        return []
    out: list[int] = []
    for part in text.split(","):
        p = part.strip()
        try:
            if not p.isascii():
                raise ValueError(p)
            out.append(int(p, 10))
        except ValueError:
            raise ShapeError(
                f"{_name(node)}: the attribute {key}={text[:60]!r} is not a list of integers", kind="invalid"
            ) from None
        if len(out) > 4 * MAX_MODEL_RANK:
            raise ShapeError(
                f"{_name(node)}: the attribute {key} holds more than {4 * MAX_MODEL_RANK} values", kind="invalid"
            )
    return out


def parse_bool(node: Node, key: str, default: bool) -> bool:
    """A boolean attribute: ``true``/``false`` (any case) or ``1``/``0``."""
    raw = node.attrs.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ShapeError(f"{_name(node)}: the attribute {key}={text[:40]!r} is not true or false", kind="invalid")


#: the dtype names the graph computes in, as the ONNX type code that Convert casts to (ONNX's Cast)
_CAST_CODES = {dtype_name(code): code for code in range(1, 17)}


def _text(node: Node, key: str, default: str) -> str:
    raw = node.attrs.get(key)
    return default if raw is None else str(raw).strip().lower()


def _version(node: Node) -> int:
    """The layer's opset number (``opset8`` -> 8); 0 for another op set (an extension, ``ie_internal_opset``)."""
    v = str(node.attrs.get("version", "")).removeprefix("opset")
    return int(v) if v.isascii() and v.isdigit() and len(v) < 4 else 0


def _view(node: Node, attrs: dict[str, Any], *, op: str | None = None, inputs: list[str] | None = None) -> Node:
    """The node as an ONNX function reads it: same name, index and path, other attributes (and op)."""
    return replace(node, attrs=attrs, op=op or node.op, inputs=list(node.inputs if inputs is None else inputs))


def _call(op: str, view: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return SHAPES[op](view, ins, ctx)


def _scalar_int(node: Node, v: Value | None, what: str) -> int | None:
    """A scalar or one-element integer input (an axis), ``None`` when its value is unknown."""
    if v is None:
        return None
    c = v.consts
    if c is None:
        return None
    if len(c) != 1:
        raise ShapeError(f"{_name(node)}: {what} holds {len(c)} values; it is one integer", kind="invalid")
    return c[0]


def _fresh_dims(node: Node, ctx: Ctx, n: int) -> Dims:
    return tuple(ctx.fresh(f"{node.name}_{k}") for k in range(n))


def _here(node: Node) -> Origin:
    return Origin(node.name, node.op)


def _rank_of_values(node: Node, v: Value, what: str) -> int | None:
    """How many values a 1-D shape input holds (its rank), a :class:`ShapeError` past the most a model has."""
    if v.shape is None or len(v.shape) != 1:
        return None
    n = v.shape[0].value
    if n is not None and n > MAX_MODEL_RANK:
        raise ShapeError(
            f"{_name(node)}: {what} holds {n:,} values: an output rank above {MAX_MODEL_RANK} (no runtime has one)",
            dims=(n,),
            kind="invalid",
        )
    return n


def _ranked(node: Node, v: Value | None, what: str) -> None:
    """A shape-like input with more values than any tensor has axes: refused before a dim of it is made."""
    n = len(v.data) if v is not None and v.data is not None else 0
    if n > MAX_MODEL_RANK:
        raise ShapeError(
            f"{_name(node)}: {what} holds {n:,} values: a rank above {MAX_MODEL_RANK} (the most a model's tensor may "
            "have)",
            dims=(n,),
            kind="invalid",
        )


def _fix_record(
    ctx: Ctx,
    start: int,
    node: Node,
    inputs: list[tuple[str, Dims | None]] | None = None,
    *,
    mode: str | None = None,
    axes: tuple[int, ...] | None = None,
) -> None:
    """Records made since ``start`` for ``node``: shown with the original operands (before placing), and
    with the ``mode`` that placed them and its ``axes`` (explicit: the axes mapping; pdpd: the start axis)."""
    for rec in ctx.records[start:]:
        rec.node = node
        if inputs is not None:
            rec.inputs = list(inputs)
        if mode is not None:
            rec.mode, rec.axes = mode, axes


# -- placing a tensor's dims on a target's axes (explicit, pdpd) -------------------------------------


def _placed(v: Value, rank: int, axes: Sequence[int]) -> Value:
    """``v`` with its dim ``i`` on axis ``axes[i]`` of a rank-``rank`` tensor and 1s elsewhere (its data
    kept: placing inserts only 1s, which moves no element)."""
    assert v.shape is not None
    dims: list[Expr] = [_ONE] * rank
    origins: list[Origin | None] = [None] * rank
    for i, a in enumerate(axes):
        dims[a] = v.shape[i]
        origins[a] = v.origin(i)
    return Value(v.dtype, tuple(dims), v.data, tuple(origins), v.data_origins)


def _record(
    ctx: Ctx,
    node: Node,
    rule: str,
    inputs: list[tuple[str, Dims | None]],
    output: Dims | None,
    mode: str,
    axes: tuple[int, ...] | None = None,
) -> None:
    """A broadcast recorded without bcast's rule running (an operand or the axes unknown, or an error first)."""
    ctx.records.append(BroadcastRecord(node, rule, inputs, output, mode=mode, axes=axes))


def _error(
    node: Node,
    ctx: Ctx,
    rule: str,
    inputs: list[tuple[str, Dims | None]],
    message: str,
    mode: str,
    axes: tuple[int, ...] | None = None,
) -> None:
    """A broadcast that fails before bcast's rule can run (a rank or an axis): recorded, then a finding."""
    _record(ctx, node, rule, inputs, None, mode, axes)
    ctx.problem(node, "cannot-broadcast", message)


# -- OpenVINO's own view of a layer's inputs, and its quirks ---------------------------------------------

#: the attribute in which :mod:`bcast.openvino.graph_read` gives each broadcasting layer the declared shape
#: of every Parameter (of its graph) that has an interval dim: ``{tensor name: Shape}``, shared by the layers
INTERVALS = "#intervals"


def _intervals(node: Node, ctx: Ctx) -> dict[Expr, Dim]:
    """The interval (``2..4``) that the IR declares for each input dim propagation holds as a symbol."""
    declared = node.attrs.get(INTERVALS)
    if not declared or ctx.values is None:
        return {}
    key = (INTERVALS, id(declared))  # one dict for every layer of a graph: looked into once
    known: dict[Expr, Dim] | None = ctx.memo.get(key)
    if known is not None:
        return known
    out: dict[Expr, Dim] = {}
    ctx.memo[key] = out
    for name, shape in declared.items():
        v = ctx.values.get(name)
        if v is None or v.shape is None or shape.rank != len(v.shape):
            continue
        for e, d in zip(v.shape, shape, strict=True):
            if e.value is None and not d.is_static:
                out.setdefault(e, d)
    return out


def _ov_dim(e: Expr, intervals: dict[Expr, Dim], *, value: bool = False) -> Dim:
    """A dim as OpenVINO knows it; ``value``: an element of a shape value, where -1 is ``?`` and another
    negative number 0 (as OpenVINO reads them)."""
    v = e.value
    if value and v is not None and v < 0:
        return Dim.dynamic() if v == -1 else Dim.static(0)
    if v is not None and v >= 0:
        try:
            return Dim.static(v)
        except BroadcastError:  # past the largest size: nothing OpenVINO could hold
            return Dim.dynamic()
    return intervals.get(e, Dim.dynamic())


def _ov_shape(dims: Dims | None, intervals: dict[Expr, Dim]) -> Shape:
    """Dims as OpenVINO knows them: a constant, else ``?`` (or the interval the IR declares for an input dim)."""
    if dims is None:
        return Shape.dynamic_rank()
    return Shape.of_dims([_ov_dim(e, intervals) for e in dims])


def _np_dtype(dtype: str | None) -> np.dtype[Any]:
    try:
        return np.dtype(dtype or "int64")
    except TypeError:  # bfloat16, u4, ...: no NumPy type of that name
        return np.dtype(np.float32 if (dtype or "").startswith(("float", "bfloat")) else np.int64)


def _ov_input(node: Node, k: int, v: Value, intervals: dict[Expr, Dim]) -> Input:
    """Input ``k`` (target_shape, axes_mapping) as OpenVINO's shape inference takes it: a Constant's values
    (as the ``.bin`` holds them), a value that propagation knows (as ``ShapeOf`` and ``Concat`` give it),
    else only its own shape and element type."""
    name = node.inputs[k] if k < len(node.inputs) else ""
    shape = _ov_shape(v.shape, intervals)
    direct = any(
        o is not None and o.kind == "initializer" and o.name == name
        for o in (*(v.origins or ()), *(v.data_origins or ()))
    )
    if v.data is not None and len(v.data) <= MAX_MODEL_RANK and v.shape is not None:
        if direct:
            dims = tuple(e.value for e in v.shape)
            values = [x.value if isinstance(x, Expr) else x for x in v.data]
            try:
                if None in dims or None in values:
                    raise ValueError("a dim or a value is symbolic")
                arr = np.array(values, dtype=_np_dtype(v.dtype)).reshape(tuple(int(d or 0) for d in dims))
            except (TypeError, ValueError, OverflowError):  # not a constant OpenVINO could hold: unknown values
                pass
            else:
                return constant_input(arr, as_given(arr))
        elif all(isinstance(x, Expr) for x in v.data):
            value = Shape.of_dims([_ov_dim(x, intervals, value=True) for x in v.data])
            return value_input(value, str(value))
    return unknown_input(shape, _np_dtype(v.dtype))


def _quirks(node: Node, ctx: Ctx, quirks: Sequence[str]) -> None:
    for q in quirks:
        ctx.problem(node, "quirk", q, severity="warning")


def _pdpd_axis(node: Node, ctx: Ctx, key: str) -> int:
    """pdpd's axis attribute; absent, OpenVINO reads it as 0 (a quirk)."""
    if node.attrs.get(key) is None:
        _quirks(node, ctx, [missing_axis(key)])
        return 0
    return parse_int(node, key, 0)


def _eltwise_quirks(node: Node, ctx: Ctx, vals: Sequence[Value], axis: int) -> None:
    """OpenVINO's elementwise pdpd on the inputs as it knows them: where B stretches A (a quirk)."""
    intervals = _intervals(node, ctx)
    quirks: list[str] = []
    with contextlib.suppress(BroadcastError, TypeError):  # OpenVINO refuses them: bcast's own rule says why
        eltwise_output(node.op, [_ov_shape(v.shape, intervals) for v in vals], "pdpd", axis, quirks)
    _quirks(node, ctx, quirks)


# -- elementwise: auto_broadcast numpy / none / pdpd -------------------------------------------------

#: the binary ops with ``auto_broadcast``, and the ONNX op whose evaluation on small values they share
BINARY: dict[str, str | None] = {op: e.onnx for op, e in ELTWISE.items()}

_BOOL_OUT = frozenset(op for op, e in ELTWISE.items() if e.boolean)


def _auto_broadcast(node: Node, ctx: Ctx) -> tuple[str, int, str]:
    """(bcast mode, pdpd axis, the rule's words) of a layer's ``auto_broadcast``."""
    text = _text(node, "auto_broadcast", "numpy")
    mode = AUTO_BROADCAST.get(text)
    if mode is None:
        raise ShapeError(
            f"{_name(node)}: unknown auto_broadcast {text[:40]!r}; known: {', '.join(AUTO_BROADCAST)}", kind="invalid"
        )
    if mode != "pdpd":
        return mode, -1, f"OpenVINO {node.op} {text}"
    axis = _pdpd_axis(node, ctx, AUTO_BROADCAST_AXIS)
    return mode, axis, f"OpenVINO {node.op} pdpd axis={axis}"


def _eltwise_mode(node: Node, ctx: Ctx, vals: Sequence[Value]) -> tuple[str, int, str]:
    """:func:`_auto_broadcast`, and in pdpd the quirks of OpenVINO's own rule on the layer's inputs."""
    mode, axis, rule = _auto_broadcast(node, ctx)
    if mode == "pdpd":
        _eltwise_quirks(node, ctx, vals, axis)
    return mode, axis, rule


def _pdpd_into(node: Node, ctx: Ctx, a: Value, b: Value, axis: int, rule: str, names: Sequence[str]) -> Dims | None:
    """OpenVINO's eltwise pdpd: B (its trailing 1s counted) placed inside A from ``axis`` (-1: right-aligned)
    and broadcast into A; the output is A's shape."""
    shown = [(names[0], a.shape), (names[1], b.shape)]
    if a.shape is None or b.shape is None:
        _record(ctx, node, rule, shown, None, "pdpd")
        return None
    ra, rb = len(a.shape), len(b.shape)
    if axis < -1:
        _error(node, ctx, rule, shown, f"{_name(node)}: pdpd axis {axis} is negative (only -1 is allowed)", "pdpd")
        return None
    start = pdpd_start(ra, rb, axis)
    if rb > ra or start + rb > ra:
        _error(
            node,
            ctx,
            rule,
            shown,
            f"{_name(node)}: pdpd places B {_t(b.shape)} inside A {_t(a.shape)} from axis {start}: it runs past "
            f"A's last axis {ra - 1}",
            "pdpd",
            (start,),
        )
        return None
    mark = len(ctx.records)
    placed = _placed(b, ra, range(start, start + rb))
    out = ctx.broadcast_into(node, placed, a.shape, rule, mode="numpy", target_value=a, names=[names[1], names[0]])
    _fix_record(ctx, mark, node, shown, mode="pdpd", axes=(start,))
    return out


def _broadcast_pair(
    node: Node, ctx: Ctx, vals: list[Value], mode: str, axis: int, rule: str, names: Sequence[str]
) -> Dims | None:
    if mode == "pdpd":
        return _pdpd_into(node, ctx, vals[0], vals[1], axis, rule, names)
    return ctx.broadcast(node, vals, rule, mode=mode, names=list(names))


def _after_error(node: Node, ctx: Ctx, vals: Sequence[Value], mode: str) -> Dims | None:
    """After a failed broadcast: fresh dims, so one mistake is reported once, not at every node after it."""
    if any(v.shape is None for v in vals):
        return None
    rank = max(len(v.shape or ()) for v in vals) if mode == "numpy" else len(vals[0].shape or ())
    return _fresh_dims(node, ctx, rank)


def _eval_binary(node: Node, vals: list[Value], out: Dims) -> tuple[Any, ...] | None:
    onnx_op = BINARY.get(node.op)
    if onnx_op is None and node.op == "Mod" and all(_non_negative(v) for v in vals):
        onnx_op = "Mod"  # the remainder's sign is the dividend's, ONNX's the divisor's: on sizes they are one
    if onnx_op is None:
        return None
    if node.op == "Divide":
        ints = [v.consts for v in vals]
        if all(c is not None for c in ints) and any(x < 0 for c in ints for x in (c or ())):
            return None  # OpenVINO floors (pythondiv) where ONNX truncates: only sizes are evaluated
    data = evaluate(onnx_op, vals, out)
    if data is not None and node.op == "NotEqual":
        flipped = [Expr.const(1 - e.value) if isinstance(e, Expr) and e.value is not None else None for e in data]
        return None if any(e is None for e in flipped) else tuple(flipped)
    return data


def _non_negative(v: Value) -> bool:
    """Every element of ``v``'s small value is an integer known to be at least 0 (a size, a count)."""
    return v.data is not None and all(isinstance(e, Expr) and e.lo is not None and e.lo >= 0 for e in v.data)


@register(*(f"openvino:{op}" for op in BINARY))
def _binary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return binary(node, ins, ctx)


def binary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """A binary elementwise layer (also any unknown layer with ``auto_broadcast``: the IR says it broadcasts)."""
    if len(ins) != 2:
        raise ShapeError(f"{_name(node)}: takes 2 inputs, the layer has {len(ins)}", kind="invalid")
    vals = [known(v) for v in ins]
    mode, axis, rule = _eltwise_mode(node, ctx, vals)
    names = [n or f"input {k}" for k, n in enumerate(node.inputs)]
    out = _broadcast_pair(node, ctx, vals, mode, axis, rule, names)
    dtype = "bool" if node.op in _BOOL_OUT else vals[0].dtype
    if out is None:
        return [Value(dtype, _after_error(node, ctx, vals, mode))]
    data = _eval_binary(node, vals, out) if mode != "pdpd" else None
    return [Value(dtype, out, data)]


@register("openvino:Select")
def _select(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Select(cond, then, else): numpy broadcasts all three; none needs equal shapes; pdpd places else,
    then cond, into then (OpenVINO's merge order)."""
    if len(ins) != ARITY["Select"]:
        raise ShapeError(f"{_name(node)}: takes {ARITY['Select']} inputs, the layer has {len(ins)}", kind="invalid")
    c, t, e = (known(v) for v in ins)
    mode, axis, rule = _eltwise_mode(node, ctx, [c, t, e])
    names = [n or f"input {k}" for k, n in enumerate(node.inputs)]
    out: Dims | None
    if mode == "numpy":
        out = ctx.broadcast(node, [c, t, e], rule, mode="numpy", names=names)
    else:
        first = _broadcast_pair(node, ctx, [t, e], mode, axis, rule, [names[1], names[2]])
        second = _broadcast_pair(node, ctx, [t, c], mode, axis, rule, [names[1], names[0]])
        out = first if first is not None and second is not None else None
    if out is None:
        return [Value(t.dtype, _after_error(node, ctx, [c, t, e] if mode == "numpy" else [t], mode))]
    data = evaluate("Where", [c, t, e], out) if mode == "numpy" else None
    return [Value(t.dtype, out, data)]


@register("openvino:FakeQuantize")
def _fake_quantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """FakeQuantize: its four range inputs are merged with X as ``auto_broadcast`` says (OpenVINO's
    shape inference: numpy merges both ways, so a range wider than X widens the output)."""
    if len(ins) != ARITY["FakeQuantize"]:
        raise ShapeError(
            f"{_name(node)}: takes {ARITY['FakeQuantize']} inputs, the layer has {len(ins)}", kind="invalid"
        )
    vals = [known(v) for v in ins]
    mode, axis, rule = _eltwise_mode(node, ctx, vals)
    names = [n or f"input {k}" for k, n in enumerate(node.inputs)]
    x = vals[0]
    if mode == "numpy":
        out = ctx.broadcast(node, vals, rule, mode="numpy", names=names)
        return [Value(x.dtype, out if out is not None else _after_error(node, ctx, vals, mode))]
    ok = True
    for k in range(1, 5):
        ok = _broadcast_pair(node, ctx, [x, vals[k]], mode, axis, rule, [names[0], names[k]]) is not None and ok
    return [same_as(x) if ok else Value(x.dtype, _after_error(node, ctx, [x], mode))]


@register("openvino:PRelu", "openvino:PReLU")
def _prelu(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """PRelu: a 1-D slope as long as X's channel axis (axis 1) runs along it, as OpenVINO runs it; any other
    slope broadcasts into X (numpy, one way)."""
    x, slope = known(ins[0]), known(input_value(ins, 1))
    names = [n or f"input {k}" for k, n in enumerate(node.inputs)]
    rule = "OpenVINO PRelu (slope to X)"
    if (
        x.shape is not None
        and slope.shape is not None
        and len(slope.shape) == 1
        and len(x.shape) >= 2
        and slope.shape[0].eq(x.shape[1]) is Tri.YES
    ):
        placed = _placed(slope, len(x.shape), [1])
        mark = len(ctx.records)
        ctx.broadcast_into(node, placed, x.shape, "OpenVINO PRelu (slope along channels)", mode="numpy", target_value=x)
        _fix_record(ctx, mark, node, [(names[1], slope.shape), (names[0], x.shape)], mode="explicit", axes=(1,))
    else:
        ctx.broadcast_into(node, slope, x.shape, rule, mode="numpy", target_value=x, names=[names[1], names[0]])
    return [same_as(x)]


# -- Broadcast-1 and -3 -------------------------------------------------------------------------------


def _target_dims(node: Node, ctx: Ctx, target: Value) -> tuple[Dims, Origins] | None:
    """Broadcast's target_shape as dims: each value (``-1`` read as an unknown dim, as OpenVINO does), or
    fresh dims when only its length is known; ``None`` when neither is."""
    ints = target.ints
    if target.data is not None and ints is None:
        raise ShapeError(f"{_name(node)}: target_shape holds values that are not integers", kind="invalid")
    if ints is None:
        n = _rank_of_values(node, target, "target_shape")
        if n is None:
            return None
        return _fresh_dims(node, ctx, n), (_here(node),) * n
    if len(ints) > MAX_MODEL_RANK:
        raise ShapeError(
            f"{_name(node)}: target_shape holds {len(ints):,} values: an output rank above {MAX_MODEL_RANK}",
            kind="invalid",
        )
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    for k, e in enumerate(ints):
        o = target.data_origin(k)
        if e.value == -1:
            dims.append(ctx.fresh(f"{node.name}_{k}"))
            origins.append(_here(node))
        elif e.value is not None and e.value < 0:
            raise ShapeError(
                f"{_name(node)}: target_shape {_t(ints)} holds {e.value} at position {k}: a size is 0 or more",
                dims=(e.value,),
                suspects=[Suspect(o, e.value)] if o is not None else (),
                kind="invalid",
            )
        else:
            dims.append(e)
            origins.append(o)
    return tuple(dims), tuple(origins)


def _broadcast_mode(node: Node, n: int) -> tuple[int, str, str]:
    """(version, mode, the mode's text) of a Broadcast layer with ``n`` inputs, checked as OpenVINO checks
    them before any shape is read: a mode its version lacks, or an axes_mapping input that the mode does
    not take (Broadcast-3), is an invalid layer."""
    version = broadcast_opset(node.attrs.get("version"))
    modes = BROADCAST_MODES[version]
    mode_text = _text(node, "mode", "numpy")
    mode = modes.get(mode_text)
    if mode is None:
        raise ShapeError(
            f"{_name(node)}: Broadcast-{version} has no mode {mode_text[:40]!r}; its modes: {', '.join(modes)}",
            kind="invalid",
        )
    if not 2 <= n <= 3:
        raise ShapeError(f"{_name(node)}: Broadcast takes 2 or 3 inputs, the layer has {n}", kind="invalid")
    if version == 3 and (n == 3) != (mode == "explicit"):
        raise ShapeError(
            f"{_name(node)}: Broadcast-3: axes_mapping input should be provided if explicit mode is used"
            if mode == "explicit"
            else f"{_name(node)}: Broadcast-3: axes_mapping input should not be provided for mode other than explicit",
            kind="invalid",
        )
    if mode == "explicit" and n == 2:
        mode = "numpy"  # Broadcast-1 explicit without axes runs as numpy (a quirk, see _broadcast_quirks)
    return version, mode, mode_text


def _broadcast_quirks(node: Node, ctx: Ctx, ins: list[Value | None]) -> None:
    """OpenVINO's own Broadcast rule on the inputs as OpenVINO knows them: each quirk it finds is a finding of
    the layer, in OpenVINO's order (a pdpd axis missing, Broadcast-1 explicit without axes, then the rule's).
    Where OpenVINO refuses the layer, bcast's own checks (:func:`_broadcast`) say why."""
    version = broadcast_opset(node.attrs.get("version"))
    mode = BROADCAST_MODES[version].get(_text(node, "mode", "numpy"))
    n = len(ins)
    if mode is None or not 2 <= n <= 3:
        return
    intervals = _intervals(node, ctx)
    target = _ov_input(node, 1, known(ins[1]), intervals)
    if target.shape.rank == 1 and target.shape[0].is_static and int(target.shape[0]) > MAX_MODEL_RANK:
        return  # no output has that many axes: _target_dims says so
    axes = _ov_input(node, 2, known(ins[2]), intervals) if n == 3 and mode == "explicit" else None
    axis = -1
    if mode == "pdpd":
        raw = node.attrs.get(BROADCAST_AXIS[version])
        if raw is None:
            _quirks(node, ctx, [missing_axis(BROADCAST_AXIS[version])])
        try:
            axis = 0 if raw is None else int(str(raw))
        except ValueError:  # not an integer: parse_int says so
            axis = 0
    if version == 3 and (n == 3) != (mode == "explicit"):
        return
    quirks: list[str] = []
    if version == 1 and mode == "explicit" and n == 2:
        quirks.append(V1_EXPLICIT_AS_NUMPY)
        mode = "numpy"
    with contextlib.suppress(BroadcastError, TypeError):  # OpenVINO refuses the layer: bcast's own rule says why
        infer_broadcast(_ov_shape(known(ins[0]).shape, intervals), target, mode, axes, axis, version, quirks)
    _quirks(node, ctx, quirks)


@register("openvino:Broadcast")
def _broadcast(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Broadcast-1 / -3: ``numpy`` (one way: the output is the target), ``bidirectional`` (ONNX Expand),
    ``explicit`` (data axis ``i`` on ``axes_mapping[i]``) and ``pdpd`` (the data from ``axis`` on, a 1
    stretching on either side)."""
    _broadcast_quirks(node, ctx, ins)
    version, mode, mode_text = _broadcast_mode(node, len(ins))
    rule = f"OpenVINO Broadcast-{version} {mode_text}"
    x, target = known(ins[0]), known(ins[1])
    names = [n_ or f"input {k}" for k, n_ in enumerate(node.inputs)]
    got = _target_dims(node, ctx, target)
    if got is None:
        _record(ctx, node, rule, [(names[0], x.shape), (names[1], None)], None, mode)
        return [Value(x.dtype, None)]
    dims, origins = got
    tv = Value(target.dtype, dims, None, origins)
    shown = [(names[0], x.shape), (names[1], dims)]
    if mode in ("numpy", "bidirectional"):
        out = ctx.broadcast_into(node, x, dims, rule, mode=mode, target_value=tv, names=names[:2])
        if out is None:
            return [Value(x.dtype, dims if mode == "numpy" else None)]
        note_fill(ctx, node, fill_of(ctx, node.inputs[0], x))
        out_o = origins if mode == "numpy" else None
        return [Value(x.dtype, out, expanded_data(x, out), out_o)]
    if x.shape is None:
        _record(ctx, node, rule, shown, dims if mode == "explicit" else None, mode)
        return [Value(x.dtype, dims if mode == "explicit" else None)]
    if mode == "explicit":
        return [_broadcast_explicit(node, ctx, x, known(ins[2]), tv, rule, shown, names)]
    axis = parse_int(node, BROADCAST_AXIS[version], 0)  # absent: 0, as OpenVINO reads it (a quirk)
    return [_broadcast_pdpd(node, ctx, x, axis, tv, rule, shown, names)]


def _broadcast_explicit(
    node: Node,
    ctx: Ctx,
    x: Value,
    axes_mapping: Value,
    tv: Value,
    rule: str,
    shown: list[tuple[str, Dims | None]],
    names: Sequence[str],
) -> Value:
    """Broadcast's ``explicit`` mode on a data of known rank: the data's dims placed on ``axes_mapping``'s
    axes of the target ``tv`` and broadcast into it (numpy, one way); the output is the target."""
    assert x.shape is not None and tv.shape is not None
    dims, origins = tv.shape, tv.origins
    axes = axes_mapping.consts
    if axes is None:  # unknown axes: the output is still the target
        _record(ctx, node, rule, shown, dims, "explicit")
        return Value(x.dtype, dims, None, origins)
    rt = len(dims)
    norm = _explicit_axes(node, ctx, rule, shown, axes, len(x.shape), rt, x)
    if norm is None:
        return Value(x.dtype, dims, None, origins)
    placed = _placed(x, rt, norm)
    mark = len(ctx.records)
    out = ctx.broadcast_into(node, placed, dims, rule, mode="numpy", target_value=tv, names=names[:2])
    _fix_record(ctx, mark, node, shown, mode="explicit", axes=tuple(norm))
    return Value(x.dtype, dims, expanded_data(placed, dims) if out is not None else None, origins)


def _broadcast_pdpd(
    node: Node,
    ctx: Ctx,
    x: Value,
    axis: int,
    tv: Value,
    rule: str,
    shown: list[tuple[str, Dims | None]],
    names: Sequence[str],
) -> Value:
    """Broadcast's ``pdpd`` mode (OpenVINO's) on a data of known rank: the data from ``axis`` on must reach
    the target's end; each pair of dims must be equal or one of them 1 (bidirectional once placed)."""
    assert x.shape is not None and tv.shape is not None
    dims = tv.shape
    rt, rd = len(dims), len(x.shape)
    start = pdpd_start(rt, rd, axis)
    if axis < -1 or start < 0 or start + rd != rt:
        why = (
            "it ends before the target's last axis"
            if start >= 0 and start + rd < rt
            else "it runs past the target's last axis"
            if start >= 0
            else "no such axis"
        )
        _error(
            node,
            ctx,
            rule,
            shown,
            f"{_name(node)}: pdpd places the data {_t(x.shape)} on the target {_t(dims)} from axis {axis}: {why}",
            "pdpd",
            (start,) if axis >= -1 else None,
        )
        return Value(x.dtype, _fresh_dims(node, ctx, rt))
    placed = _placed(x, rt, range(start, rt))
    mark = len(ctx.records)
    out = ctx.broadcast_into(node, placed, dims, rule, mode="bidirectional", target_value=tv, names=names[:2])
    _fix_record(ctx, mark, node, shown, mode="pdpd", axes=(start,))
    if out is None:
        return Value(x.dtype, _fresh_dims(node, ctx, rt))
    return Value(x.dtype, out, expanded_data(placed, out))


def _explicit_axes(
    node: Node,
    ctx: Ctx,
    rule: str,
    shown: list[tuple[str, Dims | None]],
    axes: list[int],
    rd: int,
    rt: int,
    x: Value,
) -> list[int] | None:
    """``axes_mapping`` checked as OpenVINO checks it (one axis per data axis, increasing, inside the target);
    a scalar's single axis is dropped (its one element goes anywhere)."""
    if rd == 0 and len(axes) <= 1:
        return []
    where = f"{_name(node)}: axes_mapping {_t(axes)} for the data {_t(x.shape)} and a target of rank {rt}"
    given = tuple(axes)
    if len(axes) != rd:
        _error(node, ctx, rule, shown, f"{where}: it needs one axis per data axis ({rd})", "explicit", given)
        return None
    if any(a < 0 or a >= rt for a in axes):
        _error(node, ctx, rule, shown, f"{where}: an axis lies outside the target", "explicit", given)
        return None
    if any(b < a for a, b in itertools.pairwise(axes)):
        _error(node, ctx, rule, shown, f"{where}: the axes are not in increasing order", "explicit", given)
        return None
    if len(set(axes)) != len(axes):
        # repeated axes: OpenVINO's shape inference passes them, the output is the target (a quirk that
        # _broadcast_quirks reports: the CPU plugin computes garbage)
        _record(ctx, node, rule, shown, shown[1][1], "explicit", given)
        return None
    return axes


# -- shape and value ops -------------------------------------------------------------------------------


@register("openvino:ShapeOf")
def _shape_of(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    out = _call("Shape", _view(node, {}), ins, ctx)[0]
    dtype = "int32" if _version(node) >= 3 and _text(node, "output_type", "i64") == "i32" else "int64"
    return [replace(out, dtype=dtype)]


@register("openvino:Reshape")
def _reshape(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, target = known(ins[0]), known(input_value(ins, 1))
    _ranked(node, target, "the target shape")
    special_zero = parse_bool(node, "special_zero", False)
    return [reshape(node, ctx, x, target, special_zero=special_zero)]


@register("openvino:Concat")
def _concat(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _call("Concat", _view(node, {"axis": parse_int(node, "axis", 0)}), ins, ctx)


@register("openvino:Unsqueeze")
def _unsqueeze(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    av = input_value(ins, 1)
    _ranked(node, av, "axes")
    axes = av.consts if av is not None else None
    if av is not None and axes is not None and len(set(axes)) != len(axes):  # OpenVINO ignores a repeated axis
        uniq = list(dict.fromkeys(axes))
        ins = [ins[0], Value(av.dtype, (Expr.const(len(uniq)),), tuple(Expr.const(a) for a in uniq))]
    return _call("Unsqueeze", _view(node, {}), ins, ctx)


@register("openvino:Squeeze")
def _squeeze(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Squeeze-1: an axis of a known size other than 1 is left as it is, where the spec says an error (OpenVINO
    2026.4 builds ``[?, 16, 32]`` squeezed on axis 1 as ``[?, 16, 32]`` and runs it: the PyTorch frontend's
    ``aten::squeeze(1)``, a no-op on such an axis in PyTorch too); an axis of a size not known is taken for a 1,
    and fails when it is not."""
    x, axes_in = known(ins[0]), input_value(ins, 1)
    consts = axes_in.consts if axes_in is not None else None
    if x.shape is None or consts is None:
        return _call("Squeeze", _view(node, {}), ins, ctx)
    r = len(x.shape)
    kept = [a for a in consts if not -r <= a < r or x.shape[a % r].value in (None, 1)]
    return _call("Squeeze", _view(node, {"axes": kept}, inputs=node.inputs[:1]), ins[:1], ctx)


@register("openvino:Transpose")
def _transpose(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, order = known(ins[0]), known(input_value(ins, 1))
    _ranked(node, order, "the order")
    perm = order.consts
    if perm is None:
        if x.shape is None:
            return [Value(x.dtype, None)]
        return [Value(x.dtype, _fresh_dims(node, ctx, len(x.shape)))]
    if x.shape is not None:
        r = len(x.shape)
        perm = [p + r if p < 0 else p for p in perm]  # OpenVINO takes negative axes too
    return _call("Transpose", _view(node, {"perm": perm}), [x], ctx)


@register("openvino:Convert")
def _convert(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    to = _text(node, "destination_type", "f32")
    code = _CAST_CODES.get(dtype_of_element(to) or "")
    if code is None:  # a type bcast does not compute on (u4, nf4, f8...): the shape is all there is
        return [Value(to, known(ins[0]).shape, None, known(ins[0]).origins)]
    return _call("Cast", _view(node, {"to": code}), ins, ctx)


@register("openvino:ConvertLike")
def _convert_like(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _call("CastLike", _view(node, {}, op="CastLike"), ins, ctx)


@register("openvino:Gather")
def _gather(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Gather-1/7/8: the axis is an input; ``batch_dims`` leading axes are shared by data and indices."""
    x, idx = known(ins[0]), known(input_value(ins, 1))
    axis = _scalar_int(node, input_value(ins, 2), "the axis input")
    b = parse_int(node, "batch_dims", 0) if _version(node) >= 7 else 0
    if x.shape is None or idx.shape is None:
        return [Value(x.dtype, None)]
    r, q = len(x.shape), len(idx.shape)
    if b < 0:
        b += q
    if axis is None:
        n = r + q - 1 - b
        return [Value(x.dtype, _fresh_dims(node, ctx, max(n, 0)))]
    axis = axis_of(node, axis, r)
    if not 0 <= b <= min(axis, q):
        raise ShapeError(
            f"{_name(node)}: batch_dims {b} must be at most the axis {axis} and the indices' rank {q}", kind="invalid"
        )
    if b == 0:
        # the layer's version goes along: what an index past the axis reads depends on it
        return _call("Gather", _view(node, {"axis": axis, "version": node.attrs.get("version")}), [x, idx], ctx)
    length = x.shape[axis].value
    pairs = [(e, idx.data_origin(k)) for k, e in enumerate(idx.data or ()) if isinstance(e, Expr)]
    for e, o in pairs:
        k = e.value
        if length is not None and k is not None and not -length <= k < length:
            message = (
                f"{_name(node)}: index {k} is out of range for axis {axis} of size {length} (the data is {_t(x.shape)})"
            )
            out_of_range(node, ctx, message, (k, length), [Suspect(o, k)] if o else [], axis=axis)
            break  # one warning a node
    if length is None and pairs and len(pairs) == len(idx.data or ()):
        constant_indices(node, ctx, x, axis, pairs)
    dims = (*x.shape[:axis], *idx.shape[b:], *x.shape[axis + 1 :])
    origins = (*origins_of(x)[:axis], *origins_of(idx)[b:], *origins_of(x)[axis + 1 :])
    return [Value(x.dtype, dims, None, origins)]


@register("openvino:GatherElements")
def _gather_elements(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _call("GatherElements", _view(node, {"axis": parse_int(node, "axis", 0)}), ins, ctx)


@register("openvino:GatherND")
def _gather_nd(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """GatherND-8 is ONNX's; GatherND-5 folds the batch axes of the output into one."""
    b = parse_int(node, "batch_dims", 0)
    out = _call("GatherND", _view(node, {"batch_dims": b}), ins, ctx)
    idx = known(input_value(ins, 1))
    if _version(node) == 5 and b > 0 and out and out[0].shape is not None and idx.shape is not None:
        dims = out[0].shape
        return [Value(out[0].dtype, (numel(dims[:b]), *dims[b:]))]
    return out


#: StridedSlice's masks: per value of ``begin``, a 1 marks that value
_MASKS = ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")

#: the masks that change the output's rank: with an unknown begin they leave it unknown
_RANK_MASKS = ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask")

_MaskBit = Callable[[str, int], bool]


def _mask_bits(node: Node) -> _MaskBit:
    """StridedSlice's masks, parsed once: ``bit(mask, i)`` says whether ``mask`` marks value ``i`` (a mask
    shorter than ``begin`` marks none of the rest)."""
    masks = {k: parse_ints(node, k, []) or [] for k in _MASKS}

    def bit(k: str, i: int) -> bool:
        m = masks[k]
        return i < len(m) and m[i] == 1

    return bit


@register("openvino:StridedSlice")
def _strided_slice(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """StridedSlice: begin/end/stride with TensorFlow's masks (a 1 in begin_mask or end_mask ignores that
    bound; new_axis_mask inserts a 1; shrink_axis_mask drops the axis; ellipsis_mask stands for the rest)."""
    x = known(ins[0])
    begin, end = known(input_value(ins, 1)), known(input_value(ins, 2))
    sv = input_value(ins, 3)
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    bv, ev = begin.ints, end.ints
    n = len(bv) if bv is not None else (begin.shape[0].value if begin.shape and len(begin.shape) == 1 else None)
    steps = known(sv).consts if sv is not None else None
    bit = _mask_bits(node)
    if n is None or (sv is not None and steps is None):
        if n is None or any(bit(k, i) for i in range(n) for k in _RANK_MASKS):
            return [Value(x.dtype, None)]
        return [Value(x.dtype, _fresh_dims(node, ctx, r))]
    if n > MAX_MODEL_RANK:
        raise ShapeError(f"{_name(node)}: begin holds {n:,} values", kind="invalid")
    steps_l = steps if steps is not None else [1] * n
    if len(steps_l) != n or (ev is not None and len(ev) != n):
        raise ShapeError(f"{_name(node)}: begin, end and stride differ in length", kind="invalid")
    if any(bit("ellipsis_mask", i) for i in range(n)) and sum(bit("ellipsis_mask", i) for i in range(n)) > 1:
        raise ShapeError(f"{_name(node)}: ellipsis_mask marks more than one axis", kind="invalid")
    dims, origins, data_slice, shrunk_first = _strided_dims(node, ctx, x, bv, ev, steps_l, bit)
    data, data_origins = _strided_data(x, dims, data_slice, shrunk_first)
    return [Value(x.dtype, tuple(dims), data, tuple(origins), data_origins)]


def _strided_dims(
    node: Node,
    ctx: Ctx,
    x: Value,
    bv: list[Expr] | None,
    ev: list[Expr] | None,
    steps: list[int],
    bit: _MaskBit,
) -> tuple[list[Expr], list[Origin | None], tuple[int, int, int] | None, bool]:
    """StridedSlice's output dims and their origins, one value of begin/end/stride at a time (the masks say
    what each does); also the element range a 1-D value keeps, when known, and whether its one axis was
    shrunk (the range then picks one element)."""
    assert x.shape is not None
    r, n = len(x.shape), len(steps)
    consumed = sum(1 for i in range(n) if not bit("new_axis_mask", i) and not bit("ellipsis_mask", i))
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    axis = 0
    data_slice: tuple[int, int, int] | None = None
    shrunk_first = False
    for i in range(n):
        if bit("ellipsis_mask", i):
            for _ in range(max(0, r - consumed)):
                if axis < r:
                    dims.append(x.shape[axis])
                    origins.append(x.origin(axis))
                axis += 1
            continue
        if bit("new_axis_mask", i):
            dims.append(_ONE)
            origins.append(_here(node))
            continue
        if axis >= r:
            raise ShapeError(f"{_name(node)}: begin holds {n} values for {_t(x.shape)} (rank {r})", kind="invalid")
        st = steps[i]
        if st == 0:
            raise ShapeError(f"{_name(node)}: a stride of 0", kind="invalid")
        b_e = None if bv is None else bv[i]
        e_e = None if ev is None else ev[i]
        if bit("shrink_axis_mask", i):
            picked = _shrunk_index(node, x, axis, b_e)
            if picked is not None:
                data_slice, shrunk_first = picked, True
            axis += 1
            continue
        lo = (Expr.const(2**62) if st < 0 else _ZERO) if bit("begin_mask", i) else b_e
        hi = (Expr.const(-(2**62)) if st < 0 else Expr.const(2**62)) if bit("end_mask", i) else e_e
        d, o, picked = _strided_axis(node, ctx, x, axis, len(dims), lo, hi, st)
        dims.append(d)
        origins.append(o)
        if picked is not None:
            data_slice = picked
        axis += 1
    while axis < r:
        dims.append(x.shape[axis])
        origins.append(x.origin(axis))
        axis += 1
    return dims, origins, data_slice, shrunk_first


def _shrunk_index(node: Node, x: Value, axis: int, index: Expr | None) -> tuple[int, int, int] | None:
    """A shrunk axis (shrink_axis_mask): its index checked against the axis where both are known, and, on
    a 1-D value's only axis, the range of the one element it keeps."""
    assert x.shape is not None
    size = x.shape[axis]
    if index is None or index.value is None or size.value is None:
        return None
    if not -size.value <= index.value < size.value:
        raise ShapeError(
            f"{_name(node)}: index {index.value} is out of range for axis {axis} of {_t(x.shape)}",
            axis=axis,
            dims=(index.value, size.value),
            kind="index-out-of-range",
        )
    if axis == 0 and len(x.shape) == 1:
        return (index.value % size.value, index.value % size.value + 1, 1)
    return None


def _strided_axis(
    node: Node, ctx: Ctx, x: Value, axis: int, k: int, lo: Expr | None, hi: Expr | None, st: int
) -> tuple[Expr, Origin | None, tuple[int, int, int] | None]:
    """One sliced axis, output axis ``k``: its length (fresh where a bound is unknown) and origin (the
    input's when the axis is kept whole), and on axis 0 the element range a 1-D value keeps."""
    assert x.shape is not None
    if lo is None or hi is None:
        return ctx.fresh(f"{node.name}_{k}"), _here(node), None
    size = x.shape[axis]
    b0, f0, d = slice_bounds(lo, hi, size, st)
    origin = x.origin(axis) if d == size else _here(node)
    if axis == 0 and b0.value is not None and f0.value is not None:
        return d, origin, (b0.value, f0.value, st)
    return d, origin, None


def _strided_data(
    x: Value, dims: list[Expr], data_slice: tuple[int, int, int] | None, shrunk_first: bool
) -> tuple[tuple[Any, ...] | None, tuple[Origin | None, ...] | None]:
    """The elements a 1-D value keeps and their origins, when the slice's range is known; a slice (not a
    shrink) then has the length of what it keeps, which ``dims`` is set to."""
    assert x.shape is not None
    if x.data is None or len(x.shape) != 1 or data_slice is None or x.shape[0].value is None:
        return None, None
    b0v, f0v, stv = data_slice
    picked = [k for k in range(b0v, f0v, stv) if 0 <= k < len(x.data)]
    data = tuple(x.data[k] for k in picked)
    if not shrunk_first and dims and len(dims) == 1:
        dims[0] = Expr.const(len(data))
    return data, tuple(x.data_origin(k) for k in picked)


@register("openvino:Slice")
def _slice8(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Slice-8 (data, start, stop, step, axes) is ONNX's Slice (data, starts, ends, axes, steps)."""
    reordered = [
        input_value(ins, 0),
        input_value(ins, 1),
        input_value(ins, 2),
        input_value(ins, 4),
        input_value(ins, 3),
    ]
    names = [node.inputs[k] if k < len(node.inputs) else "" for k in (0, 1, 2, 4, 3)]
    return _call("Slice", _view(node, {}, inputs=names), reordered, ctx)


@register("openvino:Tile")
def _tile(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Tile: the shorter of the data's shape and the repeats is padded with leading 1s."""
    x, reps = known(ins[0]), known(input_value(ins, 1))
    _ranked(node, reps, "repeats")
    if x.shape is None:
        return [Value(x.dtype, None)]
    ints = reps.ints
    if ints is None:
        n = _rank_of_values(node, reps, "repeats")
        return [Value(x.dtype, _fresh_dims(node, ctx, max(len(x.shape), n or len(x.shape))))]
    r = max(len(ints), len(x.shape))
    shape = (_ONE,) * (r - len(x.shape)) + x.shape
    rep = [_ONE] * (r - len(ints)) + ints
    return [Value(x.dtype, tuple(d * k for d, k in zip(shape, rep, strict=True)))]


@register("openvino:Range")
def _range(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    out = _call("Range", _view(node, {}), ins, ctx)
    if _version(node) >= 4:
        to = _text(node, "output_type", "")
        if to:
            return [replace(out[0], dtype=dtype_of_element(to))]
    return out


def _split_axis(node: Node, x: Value, ins: list[Value | None]) -> int | None:
    a = _scalar_int(node, input_value(ins, 1), "the axis input")
    if a is None or x.shape is None:
        return None
    return axis_of(node, a, len(x.shape))


@register("openvino:Split")
def _split(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    n_out = len(node.outputs)
    parts = parse_int(node, "num_splits", n_out)
    axis = _split_axis(node, x, ins)
    if x.shape is None or axis is None:
        return [Value(x.dtype, None if x.shape is None else _fresh_dims(node, ctx, len(x.shape))) for _ in range(n_out)]
    if parts <= 0:
        raise ShapeError(f"{_name(node)}: num_splits {parts} must be positive", kind="invalid")
    size = x.shape[axis]
    sv = size.value
    o = x.origin(axis)
    sus = [Suspect(o, sv)] if o is not None else []
    if sv is not None and sv % parts:
        raise ShapeError(
            f"{_name(node)}: axis {axis} of {_t(x.shape)} ({sv}) does not split into {parts} equal parts",
            axis=axis,
            dims=(sv, parts),
            suspects=sus,
            kind="split-sizes",
        )
    if sv is None and (size // parts * parts).eq(size) is not Tri.YES:
        require(
            node,
            ctx,
            "split-sizes",
            f"axis {axis} of {_t(x.shape)} is {size}, which must split into {parts} equal parts",
            lambda env: size.evaluate(env) % parts == 0,
            (size,),
            axis=axis,
            suspects=sus,
        )
    part = size // parts
    dims = list(x.shape)
    dims[axis] = part
    origins = origins_of(x)
    origins[axis] = _here(node)
    return split_data(x, axis, [Value(x.dtype, tuple(dims), None, tuple(origins)) for _ in range(n_out)])


@register("openvino:VariadicSplit")
def _variadic_split(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    n_out = len(node.outputs)
    axis = _split_axis(node, x, ins)
    lengths = known(input_value(ins, 2)).ints
    if x.shape is None or axis is None or lengths is None:
        return [Value(x.dtype, None if x.shape is None else _fresh_dims(node, ctx, len(x.shape))) for _ in range(n_out)]
    size = x.shape[axis]
    minus = [k for k, e in enumerate(lengths) if e.value == -1]
    if len(minus) > 1:
        raise ShapeError(f"{_name(node)}: split_lengths {_t(lengths)} has more than one -1", kind="invalid")
    rest = Expr.const(0)
    for k, e in enumerate(lengths):
        if k not in minus:
            rest = rest + e
    sizes = list(lengths)
    lv = known(input_value(ins, 2))
    o = x.origin(axis)
    sus = [
        *(Suspect(p, e.value) for k, e in enumerate(lengths) if (p := lv.data_origin(k)) is not None),
        *([Suspect(o, size.value)] if o is not None else []),
    ]
    said = f"split_lengths {_t(lengths)} add up to {rest}, but axis {axis} of {_t(x.shape)} is {size}"
    if minus:
        left = size - rest
        sizes[minus[0]] = left
        bad = left.value is not None and left.value < 0
        if left.value is None and (left.lo is None or left.lo < 0):
            require(
                node,
                ctx,
                "split-sizes",
                f"split_lengths {_t(lengths)} take {rest} of axis {axis} of {_t(x.shape)}: it needs {size} >= {rest}",
                lambda env: left.evaluate(env) >= 0,
                (size, rest),
                axis=axis,
                suspects=sus,
            )
    else:
        t = rest.eq(size)
        bad = t is Tri.NO
        if t is Tri.MAYBE:
            require(
                node,
                ctx,
                "split-sizes",
                f"{said}: it needs {rest} == {size}",
                lambda env: rest.evaluate(env) == size.evaluate(env),
                (rest, size),
                axis=axis,
                suspects=sus,
            )
    if bad:
        raise ShapeError(f"{_name(node)}: {said}", axis=axis, dims=(rest, size), suspects=sus, kind="split-sizes")
    outs = []
    for s in sizes[:n_out]:
        dims = list(x.shape)
        dims[axis] = s
        origins = origins_of(x)
        origins[axis] = _here(node)
        outs.append(Value(x.dtype, tuple(dims), None, tuple(origins)))
    return split_data(x, axis, outs)


_REDUCE = {
    "ReduceMean": "ReduceMean",
    "ReduceSum": "ReduceSum",
    "ReduceMax": "ReduceMax",
    "ReduceMin": "ReduceMin",
    "ReduceProd": "ReduceProd",
    "ReduceL1": "ReduceL1",
    "ReduceL2": "ReduceL2",
    "ReduceLogicalAnd": "ReduceMin",
    "ReduceLogicalOr": "ReduceMax",
}


@register(*(f"openvino:{op}" for op in _REDUCE))
def _reduce(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Reductions: the axes are an input, ``keep_dims`` keeps them as 1s; an empty axes list reduces nothing."""
    keep = int(parse_bool(node, "keep_dims", False))
    view = _view(node, {"keepdims": keep, "noop_with_empty_axes": 1}, op=_REDUCE[node.op])
    out = _call(_REDUCE[node.op], view, ins, ctx)
    if node.op.startswith("ReduceLogical"):
        return [replace(v, dtype="bool") for v in out]
    return out


# -- MatMul ---------------------------------------------------------------------------------------------


def _swapped(v: Value) -> Value:
    """The last two axes exchanged (transpose_a/b); a 1-D operand is left as it is, as OpenVINO does."""
    if v.shape is None or len(v.shape) < 2:
        return v
    dims = (*v.shape[:-2], v.shape[-1], v.shape[-2])
    o = origins_of(v)
    return Value(v.dtype, dims, None, (*o[:-2], o[-1], o[-2]))


@register("openvino:MatMul")
def _matmul(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """MatMul with transpose_a/b; the batch dims broadcast (numpy), checked as the ONNX MatMul's."""
    ta, tb = parse_bool(node, "transpose_a", False), parse_bool(node, "transpose_b", False)
    a, b = known(ins[0]), known(input_value(ins, 1))
    a2, b2 = (_swapped(a) if ta else a), (_swapped(b) if tb else b)
    mark = len(ctx.records)
    out = _call("MatMul", _view(node, {}), [a2, b2], ctx)
    t = "".join(f", {w}" for w, on in (("transpose_a", ta), ("transpose_b", tb)) if on)
    for rec in ctx.records[mark:]:
        rec.node = node
        rec.rule = f"OpenVINO MatMul{t} batch dims (numpy)"
    return out


# -- convolutions and pools -------------------------------------------------------------------------------

_PADS = {
    "explicit": "NOTSET",
    "notset": "NOTSET",
    "same_upper": "SAME_UPPER",
    "same_lower": "SAME_LOWER",
    "valid": "VALID",
}


def _window(node: Node, n: int, kernel_key: str | None = None) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "strides": parse_ints(node, "strides", [1] * n),
        "dilations": parse_ints(node, "dilations", [1] * n),
        "pads": (parse_ints(node, "pads_begin", [0] * n) or []) + (parse_ints(node, "pads_end", [0] * n) or []),
        "auto_pad": _PADS.get(_text(node, "auto_pad", "explicit"), "NOTSET"),
    }
    if kernel_key is not None:
        attrs["kernel_shape"] = parse_ints(node, kernel_key)
    return attrs


def _spatial_rank(x: Value, w: Value, extra: int = 0) -> int:
    if x.shape is not None:
        return max(len(x.shape) - 2, 0)
    if w.shape is not None:
        return max(len(w.shape) - 2 - extra, 0)
    return 0


def _grouped(w: Value) -> tuple[Value, int] | None:
    """A grouped filter ``[G, A, B, k...]`` as ``[G*A, B, k...]`` and G (``None`` when G is not known)."""
    if w.shape is None or len(w.shape) < 3:
        return None
    g = w.shape[0].value
    if g is None or g <= 0:
        return None
    o = origins_of(w)
    return Value(w.dtype, (w.shape[0] * w.shape[1], *w.shape[2:]), None, (None, *o[2:])), g


@register("openvino:Convolution")
def _convolution(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w = known(ins[0]), known(input_value(ins, 1))
    view = _view(node, _window(node, _spatial_rank(x, w)))
    return _call("Conv", view, [x, w], ctx)


@register("openvino:GroupConvolution")
def _group_convolution(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w = known(ins[0]), known(input_value(ins, 1))
    got = _grouped(w)
    if got is None:
        if x.shape is None:
            return [Value(x.dtype, None)]
        return [Value(x.dtype, (x.shape[0], *_fresh_dims(node, ctx, len(x.shape) - 1)))]
    w2, g = got
    attrs = _window(node, _spatial_rank(x, w2))
    attrs["group"] = g
    return _call("Conv", _view(node, attrs), [x, w2], ctx)


def _backprop(node: Node, ins: list[Value | None], ctx: Ctx, grouped: bool) -> list[Value]:
    x, w = known(ins[0]), known(input_value(ins, 1))
    attrs: dict[str, Any]
    if grouped:
        got = _grouped(w)
        if got is None:
            return [Value(x.dtype, None if x.shape is None else _fresh_dims(node, ctx, len(x.shape)))]
        w, g = got
        # [G*Cin/G, Cout/G, k...]: ONNX's ConvTranspose layout with group G
        attrs = _window(node, _spatial_rank(x, w))
        attrs["group"] = g
    else:
        attrs = _window(node, _spatial_rank(x, w))
    n = _spatial_rank(x, w)
    attrs["output_padding"] = parse_ints(node, "output_padding", [0] * n)
    out = _call("ConvTranspose", _view(node, attrs), [x, w], ctx)
    shape_in = input_value(ins, 2)
    if shape_in is not None and out and out[0].shape is not None:
        ints = shape_in.ints
        dims = list(out[0].shape)
        if ints is not None and len(ints) == len(dims) - 2:
            dims[2:] = ints
        else:
            dims[2:] = list(_fresh_dims(node, ctx, len(dims) - 2))
        return [Value(out[0].dtype, tuple(dims))]
    return out


@register("openvino:ConvolutionBackpropData")
def _conv_backprop(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _backprop(node, ins, ctx, grouped=False)


@register("openvino:GroupConvolutionBackpropData")
def _group_conv_backprop(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _backprop(node, ins, ctx, grouped=True)


def _pool_size(
    node: Node, ctx: Ctx, size: Expr, k: int, s: int, d: int, pb: int, pe: int, auto_pad: str, rounding: str, axis: int
) -> Expr:
    """One spatial dim of a pool: OpenVINO's floor, ceil (the last window may start in the padding) and
    ceil_torch (it may not: PyTorch's rule)."""
    if auto_pad in ("same_upper", "same_lower"):
        return size.ceildiv(s)
    if auto_pad == "valid":
        pb = pe = 0
    eff = (k - 1) * d + 1
    num = size + (pb + pe - eff)
    said = f"the window spans {eff} at axis {axis}"
    if num.value is not None and num.value < 0:
        raise ShapeError(
            f"{_name(node)}: {said} but the padded input has {size + (pb + pe)}",
            axis=axis,
            dims=(size + (pb + pe), eff),
            kind=WINDOW,
        )
    if num.value is None:
        # OpenVINO refuses a pooling window past its padded input ("cmp::le(kernel, dim.get_length())"), where
        # onnxruntime gives no windows: the input's least size, or where it fails
        window_fits(node, ctx, f"{said}, the padded input", size + (pb + pe), Expr.const(eff), axis, ())
    if rounding == "floor":
        return num // s + 1
    out = num.ceildiv(s) + 1
    if rounding == "ceil_torch":
        nv, sv = num.value, size.value
        if nv is not None and sv is not None:
            o = -((-nv) // s) + 1
            return Expr.const(o - 1 if (o - 1) * s >= sv + pb else o)
        if not (s + pe <= eff):
            return ctx.fresh(f"{node.name}_{axis}")
    return out


def _pool(node: Node, ins: list[Value | None], ctx: Ctx, n_out: int) -> list[Value]:
    x = known(ins[0])
    idx_type = "int32" if _text(node, "index_element_type", "i64") == "i32" else "int64"
    if x.shape is None:
        return [Value(x.dtype, None), Value(idx_type, None)][:n_out]
    r = len(x.shape)
    if r < 3:
        raise ShapeError(f"{_name(node)}: the input is {_t(x.shape)}; a pool needs rank 3 or more", kind="invalid")
    n = r - 2
    kernel = parse_ints(node, "kernel") or []
    strides = parse_ints(node, "strides", [1] * n) or [1] * n
    dil = parse_ints(node, "dilations", [1] * n) or [1] * n
    pb = parse_ints(node, "pads_begin", [0] * n) or [0] * n
    pe = parse_ints(node, "pads_end", [0] * n) or [0] * n
    if not len(kernel) == len(strides) == len(dil) == len(pb) == len(pe) == n:
        raise ShapeError(
            f"{_name(node)}: kernel {kernel}, strides {strides}, dilations {dil}, pads_begin {pb} and pads_end {pe} "
            f"must each have {n} values (the spatial axes of {_t(x.shape)})",
            kind="invalid",
        )
    if any(v <= 0 for v in (*kernel, *strides, *dil)):
        raise ShapeError(f"{_name(node)}: kernel, strides and dilations must be positive", kind="invalid")
    auto_pad = _text(node, "auto_pad", "explicit")
    rounding = _text(node, "rounding_type", "floor")
    sp = [
        _pool_size(node, ctx, x.shape[2 + i], kernel[i], strides[i], dil[i], pb[i], pe[i], auto_pad, rounding, 2 + i)
        for i in range(n)
    ]
    dims = (x.shape[0], x.shape[1], *sp)
    origins = (x.origin(0), x.origin(1), *(x.origin(2 + i) if sp[i] == x.shape[2 + i] else None for i in range(n)))
    return [Value(x.dtype, dims, None, origins), Value(idx_type, dims, None, origins)][:n_out]


@register("openvino:MaxPool")
def _maxpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 2 if _version(node) >= 8 else 1)


@register("openvino:AvgPool")
def _avgpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 1)


@register("openvino:AdaptiveAvgPool", "openvino:AdaptiveMaxPool")
def _adaptive_pool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, size = known(ins[0]), known(input_value(ins, 1))
    idx_type = "int32" if _text(node, "index_element_type", "i64") == "i32" else "int64"
    if x.shape is None or len(x.shape) < 3:
        return [Value(x.dtype, None), Value(idx_type, None)]
    ints = size.ints
    sp = ints if ints is not None and len(ints) == len(x.shape) - 2 else list(_fresh_dims(node, ctx, len(x.shape) - 2))
    dims = (x.shape[0], x.shape[1], *sp)
    return [Value(x.dtype, dims), Value(idx_type, dims)]


# -- resizing, padding ---------------------------------------------------------------------------------


def _scaled(node: Node, ctx: Ctx, size: Expr, scale: Any, axis: int) -> Expr:
    """``floor(size * scale + 1e-5)`` as OpenVINO's Interpolate computes it; symbolic sizes keep a whole scale."""
    s = scale.value if isinstance(scale, Expr) else scale
    if not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
        return ctx.fresh(f"{node.name}_{axis}")
    v = size.value
    if v is not None:
        return Expr.const(math.floor(float(v) * float(s) + 1e-5))
    if float(s).is_integer():
        return size * int(s)
    f32 = np.float32(s)
    pq = rational_scale(float(s), lambda n: np.floor(n.astype(np.float32) * f32 + np.float32(1e-5)).astype(np.int64))
    if pq is not None:
        return (size * pq[0]) // pq[1]
    return ctx.fresh(f"{node.name}_{axis}")


@register("openvino:Interpolate")
def _interpolate(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Interpolate-1 (target sizes on ``axes``), -4 (sizes or scales, pads) and -11 (scales_or_sizes)."""
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    v = _version(node)
    pb = parse_ints(node, "pads_begin", []) or []
    pe = parse_ints(node, "pads_end", []) or []
    padded = [d + (pb[k] if k < len(pb) else 0) + (pe[k] if k < len(pe) else 0) for k, d in enumerate(x.shape)]
    if v < 4:
        axes_raw = parse_ints(node, "axes", list(range(r))) or []
        values: Value | None = input_value(ins, 1)
        mode = "sizes"
    elif v < 11:
        mode = _text(node, "shape_calculation_mode", "sizes")
        values = input_value(ins, 1 if mode == "sizes" else 2)
        av = input_value(ins, 3)
        axes_raw = list(range(r)) if av is None else (av.consts or [])
        if av is not None and av.consts is None:
            return [Value(x.dtype, _fresh_dims(node, ctx, r))]
    else:
        mode = _text(node, "shape_calculation_mode", "sizes")
        values = input_value(ins, 1)
        av = input_value(ins, 2)
        axes_raw = list(range(r)) if av is None else (av.consts or [])
        if av is not None and av.consts is None:
            return [Value(x.dtype, _fresh_dims(node, ctx, r))]
    axes = [axis_of(node, a, r) for a in axes_raw]
    out = list(padded)
    data = known(values).data
    if data is None or len(data) != len(axes):
        for a in axes:
            out[a] = ctx.fresh(f"{node.name}_{a}")
        return [Value(x.dtype, tuple(out))]
    for a, item in zip(axes, data, strict=True):
        if mode == "sizes":
            out[a] = item if isinstance(item, Expr) else Expr.const(int(item))
        else:
            out[a] = _scaled(node, ctx, padded[a], item, a)
    return [Value(x.dtype, tuple(out))]


#: the IR's sequence layers: gates per direction, and the initial states after X (an LSTM's cell state too)
_SEQUENCES = {"LSTMSequence": (4, 2), "GRUSequence": (3, 1), "RNNSequence": (1, 1)}


@register("openvino:LSTMSequence", "openvino:GRUSequence", "openvino:RNNSequence")
def _sequence(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """LSTMSequence-5, GRUSequence-5, RNNSequence-5: X ``[batch, seq, input]``, initial states ``[batch, dirs,
    hidden]``, ``sequence_lengths [batch]``, ``W [dirs, gates*hidden, input]``, ``R [dirs, gates*hidden, hidden]``,
    ``B [dirs, gates*hidden]`` (a GRU's with ``linear_before_reset``: one gate more); ``Y [batch, dirs, seq,
    hidden]`` and the last states as the initial ones. Every operand is checked as ONNX's layers' are."""
    gates, n_states = _SEQUENCES[node.op]
    x = known(input_value(ins, 0))
    direction = str(node.attrs.get("direction", "forward")).lower()
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ShapeError(f"{_name(node)}: direction {direction!r} is none of forward, reverse, bidirectional")
    dirs = Expr.const(2 if direction == "bidirectional" else 1)
    h = parse_int(node, "hidden_size", 0)
    if h <= 0:
        raise ShapeError(f"{_name(node)}: hidden_size {h} must be positive", kind="invalid")
    n_out = len(node.outputs)
    if x.shape is None:
        return [Value(x.dtype, None) for _ in range(n_out)]
    if len(x.shape) != 3:
        raise ShapeError(f"{_name(node)}: X is {_t(x.shape)}; it must be of rank 3", kind="invalid")
    batch, seq, size = x.shape
    hidden, here = Expr.const(h), _here(node)
    state, state_o = [batch, dirs, hidden], (x.origin(0), here, here)
    bias = gates + (1 if node.op == "GRUSequence" and parse_bool(node, "linear_before_reset", False) else 0)
    w_at = 1 + n_states + 1
    w = known(input_value(ins, w_at))
    expected = [(1 + k, "an initial state", state) for k in range(n_states)]
    expected += [(1 + n_states, "sequence_lengths", [batch]), (w_at, "W", [dirs, gates * hidden, size])]
    expected += [(w_at + 1, "R", [dirs, gates * hidden, hidden]), (w_at + 2, "B", [dirs, bias * hidden])]
    for k, what, want in expected:
        operand_dims(node, ctx, input_value(ins, k), what, want, x, w)
    y = Value(x.dtype, (batch, dirs, seq, hidden), None, (x.origin(0), here, x.origin(1), here))
    return [y, *(Value(x.dtype, tuple(state), None, state_o) for _ in range(n_out - 1))]


@register("openvino:GridSample")
def _grid_sample(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """GridSample-9: ONNX's on images only, data ``[N, C, H, W]`` sampled at a grid ``[N, H_out, W_out, 2]``."""
    for k, what in ((0, "the data"), (1, "the grid")):
        v = input_value(ins, k)
        if v is not None and v.shape is not None and len(v.shape) != 4:
            raise ShapeError(f"{_name(node)}: {what} {_t(v.shape)} must have rank 4", kind="invalid")
    return _call("GridSample", _view(node, {}, inputs=node.inputs[:2]), list(ins[:2]), ctx)


@register("openvino:Pad")
def _pad(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Pad-1/12: each axis grows by pads_begin + pads_end (negative ones, in Pad-12, crop)."""
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    bv, ev = known(input_value(ins, 1)), known(input_value(ins, 2))
    pb, pe = bv.ints, ev.ints
    if pb is None or pe is None:
        return [Value(x.dtype, _fresh_dims(node, ctx, r))]
    if len(pb) != r or len(pe) != r:
        raise ShapeError(
            f"{_name(node)}: pads_begin {_t(pb)} and pads_end {_t(pe)} must each have {r} values (the rank of "
            f"{_t(x.shape)})",
            kind="shape-mismatch",
        )
    dims: list[Expr] = []
    origins = origins_of(x)
    for k, (d, b, e) in enumerate(zip(x.shape, pb, pe, strict=True)):
        got = d + b + e
        if got.value is not None and got.value < 0:
            raise ShapeError(
                f"{_name(node)}: axis {k} of {_t(x.shape)} padded by {b} and {e} gives {got}",
                axis=k,
                dims=(d, got),
                kind="invalid",
            )
        if got != d:
            origins[k] = _here(node)
        dims.append(got)
    return [Value(x.dtype, tuple(dims), None, tuple(origins))]


# -- same shape as an input ---------------------------------------------------------------------------------

#: layers whose output has their first input's shape (activations, normalizations over given axes, ...)
UNARY = (
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BitwiseNot",
    "Cos",
    "Cosh",
    "CumSum",
    "Elu",
    "Erf",
    "Exp",
    "GRN",
    "Gelu",
    "HSigmoid",
    "HSwish",
    "HardSigmoid",
    "IsFinite",
    "IsInf",
    "IsNaN",
    "LRN",
    "Log",
    "LogSoftmax",
    "LogicalNot",
    "MVN",
    "Mish",
    "Negative",
    "NormalizeL2",
    "ReLU",
    "Relu",
    "SoftMax",
    "Reverse",
    "ReverseSequence",
    "Roll",
    "ScatterElementsUpdate",
    "ScatterUpdate",
    "Selu",
    "ShuffleChannels",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "SoftPlus",
    "SoftSign",
    "Softmax",
    "Sqrt",
    "Swish",
    "Tan",
    "Tanh",
    "Assign",
    "Identity",
    "Bucketize",
)

_BOOL_UNARY = frozenset({"IsFinite", "IsInf", "IsNaN", "LogicalNot"})

#: the rounding layers, as the ONNX ops that compute the same on every element
_ROUNDING = {"Ceiling": "Ceil", "Floor": "Floor", "Round": "Round"}


@register("openvino:Ceiling", "openvino:Floor", "openvino:Round", "openvino:Clamp")
def _rounding(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Rounding and clamping, evaluated on the small values of shape arithmetic: a "same" padding computed in
    floating point (``Convert -> Multiply by 1/stride -> Ceiling -> ... -> Clamp -> Convert``) gives sizes.

    Round's ``half_away_from_zero`` mode is not ONNX's Round (half to even): its values are left unknown. A Clamp
    of integers bounds them by ``ceil(min)`` and ``floor(max)``, as the op's text says."""
    if node.op == "Clamp":
        x = known(ins[0] if ins else None)
        data = _clamped(node, x)
        return [Value(x.dtype, x.shape, data, x.origins, x.data_origins if data is not None else None)]
    if node.op == "Round" and _text(node, "mode", "half_to_even") != "half_to_even":
        return _unary(node, ins, ctx)
    onnx_op = _ROUNDING[node.op]
    return _call(onnx_op, _view(node, {}, op=onnx_op), ins, ctx)


def _clamped(node: Node, x: Value) -> tuple[Any, ...] | None:
    if x.data is None:
        return None
    integral = x.dtype is not None and ("int" in x.dtype or x.dtype == "bool")
    bounds: list[tuple[str, Any]] = []
    for attr, op, to_int in (("min", "Max", math.ceil), ("max", "Min", math.floor)):
        try:
            b = float(_text(node, attr, ""))
        except ValueError:
            return None
        if not math.isfinite(b):
            return None
        bounds.append((op, Expr.const(to_int(b)) if integral else b))
    got = [clamp(e, bounds) for e in x.data]
    return None if any(e is None for e in got) else tuple(got)


@register(*(f"openvino:{op}" for op in UNARY))
def _unary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0] if ins else None)
    dtype = "bool" if node.op in _BOOL_UNARY else x.dtype
    if node.op == "Bucketize":
        dtype = "int32" if _text(node, "output_type", "i64") == "i32" else "int64"
    data = None
    if node.op == "Negative" and x.ints is not None:
        data = tuple(-e for e in x.ints)
    elif node.op == "Abs" and x.consts is not None:
        data = tuple(Expr.const(abs(v)) for v in x.consts)
    elif node.op in ("Identity", "Assign"):
        data = x.data
    return [Value(dtype, x.shape, data, x.origins, x.data_origins if data is not None else None)]


@register("openvino:GroupNormalization")
def _group_normalization(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """GroupNormalization-12: data ``[N, C, ...]``, scale and bias ``[C]``, ``C`` a multiple of ``num_groups``."""
    view = _view(node, {"num_groups": parse_int(node, "num_groups", 0)})
    return group_normalization(view, ins, ctx, per_channel=True)


@register("openvino:BatchNormInference")
def _batch_norm_inference(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """BatchNormInference: data ``[N, C, ...]``, gamma, beta, mean and variance each ``[C]`` (version 1 takes
    gamma and beta before the data)."""
    order = [2, 0, 1, 3, 4] if _version(node) < 5 and len(ins) == 5 else [0, 1, 2, 3, 4]
    x = known(input_value(ins, order[0]))
    view = _view(node, {}, inputs=[node.inputs[k] if k < len(node.inputs) else "" for k in order])
    if x.shape is None or len(x.shape) < 2:
        return [same_as(x)]
    return _call("BatchNormalization", view, [input_value(ins, k) for k in order], ctx)[:1]


@register("openvino:ScatterNDUpdate")
def _scatter_nd_update(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _call("ScatterND", _view(node, {}), ins, ctx)


@register("openvino:NonZero")
def _nonzero(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    dtype = "int32" if _text(node, "output_type", "i64") == "i32" else "int64"
    rank: Expr = Expr.const(len(x.shape)) if x.shape is not None else ctx.fresh(f"{node.name}_rank")
    count = nonzero_count(ctx, node.inputs[0], x)
    return [Value(dtype, (rank, count if count is not None else ctx.fresh(f"{node.name}_count", free=True)))]


@register("openvino:TopK")
def _topk(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    idx_type = "int32" if _text(node, "index_element_type", "i32") == "i32" else "int64"
    out = _call("TopK", _view(node, {"axis": parse_int(node, "axis", -1)}), ins[:2], ctx)
    return [out[0], replace(out[1], dtype=idx_type)] if len(out) == 2 else [Value(x.dtype, None)]


@register("openvino:OneHot")
def _onehot(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    idx, depth = known(ins[0]), input_value(ins, 1)
    on = known(input_value(ins, 2))
    if idx.shape is None:
        return [Value(on.dtype, None)]
    r = len(idx.shape)
    axis = parse_int(node, "axis", -1)
    if not -r - 1 <= axis <= r:
        raise ShapeError(f"{_name(node)}: axis {axis} is out of range for an output of rank {r + 1}", kind="invalid")
    axis %= r + 1
    d_raw = depth.data[0] if depth is not None and depth.data else None
    d = d_raw if isinstance(d_raw, Expr) else ctx.fresh(f"{node.name}_{axis}")
    off = known(input_value(ins, 3))
    values = [v.data[0] if v.data is not None and len(v.data) == 1 else None for v in (off, on)]
    data = onehot_data(idx, d, axis, values[0], values[1]) if None not in values else None
    return [Value(on.dtype, (*idx.shape[:axis], d, *idx.shape[axis:]), data)]


@register("openvino:Einsum")
def _einsum(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    mark = len(ctx.records)
    out = _call("Einsum", _view(node, {"equation": str(node.attrs.get("equation", ""))}), ins, ctx)
    for rec in ctx.records[mark:]:
        rec.node = node
        rec.rule = "OpenVINO Einsum '...' dims (numpy)"
    return out


@register("openvino:DepthToSpace", "openvino:SpaceToDepth")
def _depth_space(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _call(node.op, _view(node, {"blocksize": parse_int(node, "block_size", 1)}), ins, ctx)


@register("openvino:ReadValue")
def _read_value(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """ReadValue: its initial value's shape, else the variable's declared shape (``?`` dims fresh)."""
    if ins and ins[0] is not None and ins[0].shape is not None:
        return [same_as(ins[0])]
    dtype = dtype_of_element(str(node.attrs["variable_type"])) if "variable_type" in node.attrs else None
    text = str(node.attrs.get("variable_shape", "")).strip().strip("[]")
    if not text or text == "...":
        return [Value(dtype, None)]
    parts = text.split(",")
    if len(parts) > MAX_MODEL_RANK:
        raise ShapeError(f"{_name(node)}: variable_shape has more than {MAX_MODEL_RANK} dims", kind="invalid")
    dims = []
    for k, p in enumerate(parts):
        p = p.strip()
        dims.append(Expr.const(int(p)) if p.isascii() and p.isdigit() else ctx.fresh(f"{node.name}_{k}"))
    return [Value(dtype, tuple(dims))]


@register("openvino:ScaledDotProductAttention")
def _sdpa(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Q [..., L, E], K [..., S, E], V [..., S, Ev] -> [..., L, Ev]: E and S must agree, the batch dims of
    the three broadcast (numpy, as the two MatMuls of its definition do), and the attention mask
    broadcasts with the scores [..., L, S] (it is added to them)."""
    q, k, v = known(ins[0]), known(input_value(ins, 1)), known(input_value(ins, 2))
    mask = input_value(ins, 3)
    names = [n or f"input {i}" for i, n in enumerate(node.inputs)]
    if q.shape is None or k.shape is None or v.shape is None:
        return [Value(q.dtype, None)]
    for what, val in (("query", q), ("key", k), ("value", v)):
        if len(val.shape or ()) < 2:
            raise ShapeError(f"{_name(node)}: the {what} is {_t(val.shape)}; it needs rank 2 or more", kind="invalid")
    pairs = (
        (q, -1, k, -1, "E (the query's and the key's last axis)"),
        (k, -2, v, -2, "S (the key's and the value's axis -2)"),
    )
    for a, ia, b, ib, what in pairs:
        assert a.shape is not None and b.shape is not None
        agree(
            node,
            ctx,
            a.shape[ia],
            a.origin(ia),
            b.shape[ib],
            b.origin(ib),
            f"{what} differs (query {_t(q.shape)}, key {_t(k.shape)}, value {_t(v.shape)})",
            kind="attention-contract",
        )
    batches = [Value(x.dtype, (x.shape or ())[:-2], None, tuple(origins_of(x)[:-2])) for x in (q, k, v)]
    batch: Dims | None = q.shape[:-2]
    if any(b.shape for b in batches[1:]):
        batch = ctx.broadcast(node, batches, "OpenVINO ScaledDotProductAttention batch dims (numpy)", names=names[:3])
    if batch is None:
        batch = _fresh_dims(node, ctx, max(len(b.shape or ()) for b in batches))
    scores = (*batch, q.shape[-2], k.shape[-2])
    causal = parse_bool(node, "causal", False)
    if mask is not None and mask.shape is not None and not causal and len(mask.shape) > 0:
        sv = Value(q.dtype, scores, None, (*([None] * len(batch)), q.origin(-2), k.origin(-2)))
        mark = len(ctx.records)
        ctx.broadcast(
            node,
            [sv, mask],
            "OpenVINO ScaledDotProductAttention mask (numpy, with [..., L, S])",
            names=["scores", names[3]],
        )
        _fix_record(ctx, mark, node)
    return [Value(q.dtype, (*batch, q.shape[-2], v.shape[-1]))]


@register("openvino:RMS")
def _rms(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """RMS (an internal op of OpenVINO's transformations): gamma broadcasts into X."""
    x, gamma = known(ins[0]), input_value(ins, 1)
    if gamma is not None:
        names = [n or f"input {i}" for i, n in enumerate(node.inputs)]
        before = len(ctx.findings)
        ctx.broadcast_into(
            node, gamma, x.shape, "OpenVINO RMS (gamma to X)", mode="numpy", target_value=x, names=[names[1], names[0]]
        )
        norm_findings(ctx, before)
    return [same_as(x)]


# -- sub-graphs --------------------------------------------------------------------------------------


@register("openvino:If", "openvino:Loop", "openvino:TensorIterator")
def _bodies(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """A layer with sub-graphs: each body is propagated with its own Parameters' shapes (the IR's port
    maps are not read), so its layers are checked; the layer's outputs are what the IR declares."""
    for body in node.bodies.values():
        ctx.walk(body)
    return [Value(None, None) for _ in node.outputs]
