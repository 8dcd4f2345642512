"""Ops that pick, place or count elements by an index tensor or a condition: Gather, GatherElements,
GatherND, ScatterElements, ScatterND, OneHot, Compress, TopK, Unique.

Gather's *value* is propagated too, as expressions, when it is small: a TorchScript export reads
each dim of a Reshape or Expand target as ``Shape -> Gather -> Unsqueeze -> Concat``. Each op
checks what its definition requires of the indices against the data (ranks, batch axes, an index
past the end of a shape) and names, when one is wrong, where the offending dim was made.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...dims import Tri
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr, emax, emin
from ..model import Node, Origin, Value
from ._base import (
    DATA_LIMIT,
    agree,
    at_most,
    attr_int,
    axis_of,
    constant_term,
    dims_text,
    fresh_dim,
    input_value,
    known,
    new_value,
    numel,
    op_label,
    origins_of,
    register,
    require,
    same_as,
    scalar_of,
    suspects_of,
)
from .shape import rearranged, static_dims

__all__ = ["constant_indices"]


def _indices(v: Value) -> list[tuple[Expr, Origin | None]] | None:
    if v.data is None or not all(isinstance(e, Expr) for e in v.data):
        return None
    return [(e, v.data_origin(k)) for k, e in enumerate(v.data)]


@register("Gather")
def _gather(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, idx = known(ins[0]), known(input_value(ins, 1))
    if x.shape is None or idx.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    if r == 0:
        raise ShapeError(f"Gather {node.name}: the data is a scalar; Gather needs rank >= 1", kind="invalid")
    axis = axis_of(node, attr_int(node, "axis", 0), r)
    out = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    origins = (
        tuple(x.origin(k) for k in range(axis))
        + (idx.origins or (None,) * len(idx.shape))
        + tuple(x.origin(k) for k in range(axis + 1, r))
    )
    data = None
    data_origins = None
    n_axis = x.shape[axis].value
    pairs = _indices(idx)
    grid = static_dims(x) if x.data is not None else None
    if x.data is not None and r > 1 and pairs is not None and grid is not None and n_axis is not None:
        ks = [e.value for e, _ in pairs]
        if all(k is not None and -n_axis <= k < n_axis for k in ks):
            where = np.array([int(k) % n_axis for k in ks if k is not None], dtype=np.int64).reshape(
                [int(d.value or 0) for d in idx.shape]
            )
            got = rearranged(x, grid, lambda arr: np.take(arr, where, axis=axis))
            if got is not None:
                data, data_origins = got
    if x.data is not None and r == 1 and pairs is not None and n_axis is not None:
        picked: list[Any] = []
        picked_o: list[Origin | None] = []
        for e, o in pairs:
            k = e.value
            if k is None:
                break
            if not -n_axis <= k < n_axis:
                said = f"Gather {node.name}: index {k} is out of range for an axis of size {n_axis}"
                suspects = [Suspect(o, k)] if o else []
                out_of_range(node, ctx, f"{said} (the data is {dims_text(x.shape)})", (k, n_axis), suspects)
                break  # OpenVINO's: its value is not the data's
            picked.append(x.data[k % n_axis])
            picked_o.append(x.data_origin(k % n_axis))
        else:
            data, data_origins = tuple(picked), tuple(picked_o)
    elif pairs is not None and n_axis is not None:
        for e, o in pairs:
            k = e.value
            if k is not None and not -n_axis <= k < n_axis:
                what = f"axis {axis} of size {n_axis} (the data is {dims_text(x.shape)})"
                suspects = [Suspect(o, k)] if o else []
                said = f"Gather {node.name}: index {k} is out of range for {what}"
                out_of_range(node, ctx, said, (k, n_axis), suspects, axis=axis)
                break  # OpenVINO's: one warning a node
    if pairs is not None and n_axis is None:
        constant_indices(node, ctx, x, axis, pairs)
    if pairs is None and n_axis is not None and not node.path:
        _positions(node, ctx, x, axis, n_axis)
    elif pairs is None and not node.path and x.shape[axis].symbols:
        _positions_in(node, ctx, x, axis, x.shape[axis])
    return [Value(x.dtype, out, data, origins, data_origins)]


def _positions_in(node: Node, ctx: Ctx, x: Value, axis: int, size: Expr) -> None:
    """Positions (:func:`element_bounds`) read along an axis of a size not known: in range only where the largest is
    below it and the least no further below 0 than it. Longformer's ``as_strided``, traced as a flattened tensor
    of ``256*batch*floor(seq/8)`` elements read at ranges times strides baked in at the export's batch: a warning
    saying at which sizes they pass its end."""
    found = element_bounds(node.inputs[1], ctx)
    if found is None:
        return
    lo, hi, made = found

    def holds(env: dict[str, int]) -> bool:
        n = size.evaluate(env)
        return -n <= lo.evaluate(env) and hi.evaluate(env) < n

    require(
        node,
        ctx,
        "index-out-of-range",
        f"the indices {node.inputs[1]} run from {lo} to {hi} (from {made.op} {made.name}) along axis {axis} of "
        f"{node.inputs[0]}, of size {size}",
        holds,
        (hi, size),
        axis=axis,
        suspects=[*suspects_of((x.origin(axis), size)), Suspect(made)],
    )


def _reads_zeros(node: Node) -> bool:
    """Whether an IR's Gather gives zeros for an index past its axis: OpenVINO refuses none (checked on its CPU
    plugin: Gather-7 and -8 give zeros, Gather-1 whatever lies past the data)."""
    return str(node.attrs.get("version", "")) != "opset1"


def out_of_range(
    node: Node,
    ctx: Ctx,
    message: str,
    dims: tuple[object, int],
    suspects: Sequence[Suspect],
    *,
    axis: int | None = None,
) -> None:
    """An index past its axis (``message`` says which; ``dims`` the index and the axis's size): an error of
    ONNX's Gather (onnxruntime refuses it), a warning of an IR's (OpenVINO runs it on something else than
    the data)."""
    if node.domain != "openvino":
        raise ShapeError(message, axis=axis, dims=dims, suspects=suspects, kind="index-out-of-range")
    ctx.problem(
        node,
        "index-out-of-range",
        f"{message}: OpenVINO does not refuse it, its Gather gives "
        + ("zeros there" if _reads_zeros(node) else "whatever lies past the data")
        + ", so the model runs and computes something else",
        axis=axis,
        dims=dims,
        suspects=suspects,
        severity="warning",
    )


def _positions(node: Node, ctx: Ctx, x: Value, axis: int, n: int) -> None:
    """Indices whose values are positions (``Range(past, past + S)`` into a learned position table of ``n``
    rows, or a relative position ``q - k + K - 1`` into a table of distances): in range only while the last is
    below ``n`` and the first at least ``-n`` (a negative index counts from the end), a ``length-limit`` note
    saying for which sizes; an error when it never is."""
    found = element_bounds(node.inputs[1], ctx)
    if found is None:
        return
    lo, hi, made = found
    below = not at_most(-lo, n)  # a negative index counts from the end: down to -n
    limit = tuple((a, n) for a, out in ((hi + 1, not at_most(hi + 1, n)), (-lo, below)) if out)
    if not limit:
        return
    table = node.inputs[0]
    suspects = [*suspects_of((x.origin(axis), x.shape[axis] if x.shape else Expr.const(n))), Suspect(made)]
    if _past(lo, n) or _past(hi, n) or _past(-lo - 1, n):  # past either end at every size
        message = (
            f"{node.op} {node.name}: the indices {node.inputs[1]} run from {lo} to {hi} (from {made.op} {made.name}), "
            f"past the end of axis {axis} of {table}, of size {n}"
        )
        out_of_range(node, ctx, message, (lo, n), suspects, axis=axis)
        return
    if all(a.value is not None for a, _ in limit):
        return
    ctx.note_limit(
        node,
        limit,
        f"the indices {node.inputs[1]} are positions made by {made.op} {made.name}",
        axis=axis,
        dims=(hi, n),
        suspects=suspects,
        where=f": {table} has {n} rows along axis {axis}, which the indices read "
        + (f"from {lo} to {hi}" if below else f"up to {hi}")
        # an IR's Gather does not fail past the end, it reads zeros (a wrong result, not a refusal)
        + (_past_its_end(node) if node.domain == "openvino" else ""),
    )


def _past_its_end(node: Node) -> str:
    return "; OpenVINO reads " + ("zeros" if _reads_zeros(node) else "whatever lies") + " past its end"


def _past(index: Expr, n: int) -> bool:
    """Whether ``index`` is ``n`` or more at every size."""
    least = (index - n).lo
    return least is not None and least >= 0


#: ops whose output holds only elements of their first input (rearranged, repeated or cast), ONNX's and the IR's
_SAME_ELEMENTS = frozenset(
    {"Unsqueeze", "Squeeze", "Reshape", "Expand", "Cast", "CastLike", "Identity", "Flatten", "Transpose", "Tile"}
    | {"Convert", "ConvertLike", "Broadcast"}
)
#: sums and differences, by the sign of their second operand
_SIGN = {"Add": 1, "Sub": -1, "Subtract": -1}
_MULTIPLY = frozenset({"Mul", "Multiply"})
#: ops whose elements are 0 or 1 (comparisons and logic, ONNX's and the IR's)
_BOOLEAN = frozenset(
    {"Equal", "NotEqual", "Not", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}
    | {"LogicalNot", "LogicalAnd", "LogicalOr", "LogicalXor", "GreaterEqual", "LessEqual"}
)
_NEGATE = frozenset({"Neg", "Negative"})
#: the most ops followed back from an index tensor to the Ranges that made it, along one path and in all
_BOUNDS_DEPTH = 16
_BOUNDS_LOOK = 64

#: the least and the largest element of a tensor, both taken, and the Range its values come from
Bounds = tuple[Expr, Expr, Origin]


def element_bounds(name: str, ctx: Ctx) -> Bounds | None:
    """The least and the largest element of the tensor ``name`` of the graph being walked, and the Range it
    comes from, when its values are positions: a ``Range(start, limit)`` of step 1 (from ``start`` to ``limit -
    1``), reshaped, expanded or cast (ONNX's ops and the IR's); shifted or scaled by one integer (GPT-2's
    ``Range(0, S) + past``); or two such tensors added or subtracted as an outer sum (a relative position,
    ``Range(0, Q)[:, None] - Range(0, K)[None, :] + K - 1``); or counted from a mask (RoBERTa's ``cumsum(ids !=
    pad) * mask + pad``: a comparison holds 0 or 1, a running sum up to the axis's length times its largest, a
    product of two tensors none below 0 up to the product of theirs, which a sequence of no padding reaches).

    Both bounds are taken by some element (every pair of an outer sum is), so a table read with them is read
    past its end exactly when a bound is past it: what :func:`_positions` states as a limit. ``None`` when the
    values are anything else. Each tensor is looked at once per check, and at most :data:`_BOUNDS_LOOK` per
    question."""
    memo: dict[str, Bounds | None] = ctx.memo.setdefault("element_bounds", {})
    return _Bounds(ctx.producer, ctx.values or {}, memo, ctx.filled).of(name, 0)


class _Bounds:
    """One question of :func:`element_bounds`: the graph's producers and values, the answers so far."""

    def __init__(
        self,
        producer: Callable[[str], Node | None],
        values: dict[str, Value],
        memo: dict[str, Bounds | None],
        filled: dict[str, Any],
    ):
        self.producer, self.values, self.memo, self.left = producer, values, memo, _BOUNDS_LOOK
        self.filled = filled

    def of(self, name: str, depth: int) -> Bounds | None:
        if name in self.memo:
            return self.memo[name]
        if depth > _BOUNDS_DEPTH or self.left <= 0:
            return None  # not remembered: a shallower question may still answer it
        self.left -= 1
        got = self._made(name, depth)
        self.memo[name] = got
        return got

    def _made(self, name: str, depth: int) -> Bounds | None:
        node = self.producer(name)
        if node is None or not node.inputs:
            return None
        op, ins = node.op, node.inputs
        if op in _SAME_ELEMENTS:
            return self.of(ins[0], depth + 1)
        if op == "Range":
            start, limit, delta = (_one_value(self.values.get(i)) for i in (*ins, "", "")[:3])
            if start is None or limit is None or delta is None or delta.value != 1:
                return None
            return start, limit - 1, Origin(node.name, node.op)
        if op in _NEGATE:
            x = self.of(ins[0], depth + 1)
            return None if x is None else (-x[1], -x[0], x[2])
        if op in ("Clip", "Clamp"):
            return self._clip(node, depth)
        if op in _BOOLEAN:  # a mask: 0 or 1 (of the tokens that are not padding, say)
            return Expr.const(0), Expr.const(1), Origin(node.name, node.op)
        if op == "CumSum":
            return self._cumsum(node, depth)
        if op == "NonZero":  # of a tensor filled with a value other than 0: every coordinate, an arange per axis
            counted = self.values.get(ins[0])
            fill = self.filled.get(ins[0])
            if fill is None or fill == 0 or counted is None or not counted.shape:
                return None
            return Expr.const(0), emax(list(counted.shape)) - 1, Origin(node.name, node.op)
        if len(ins) != 2:
            return None
        a, b = ins
        if op in _MULTIPLY:
            k, other = _one_value(self.values.get(b)), a
            if k is None:
                k, other = _one_value(self.values.get(a)), b
            if k is None:
                return self._product(a, b, depth)
            if k.value is None:
                return None  # scaled by a size: its sign, and so which end is which, is not known here
            x = self.of(other, depth + 1)
            if x is None:
                return None
            return (k * x[0], k * x[1], x[2]) if k.value >= 0 else (k * x[1], k * x[0], x[2])
        sign = _SIGN.get(op)
        if sign is None:
            return None
        ka, kb = _one_value(self.values.get(a)), _one_value(self.values.get(b))
        if kb is not None:
            x = self.of(a, depth + 1)
            return None if x is None else (x[0] + sign * kb, x[1] + sign * kb, x[2])
        if ka is not None:
            y = self.of(b, depth + 1)
            if y is None:
                return None
            return (ka + y[0], ka + y[1], y[2]) if sign > 0 else (ka - y[1], ka - y[0], y[2])
        if not _outer(self.values.get(a), self.values.get(b)):
            return None  # elementwise pairs: not every least meets every largest
        x, y = self.of(a, depth + 1), self.of(b, depth + 1)
        if x is None or y is None:
            return None
        if sign > 0:
            return x[0] + y[0], x[1] + y[1], x[2]
        return x[0] - y[1], x[1] - y[0], x[2]

    def _cumsum(self, node: Node, depth: int) -> Bounds | None:
        """A running count of elements that are none below 0 (RoBERTa's positions: ``cumsum(mask) * mask +
        padding_idx``): from the least element (0 where ``exclusive``) to ``n`` times the largest, ``n`` the
        axis's length, which every element taking its largest reaches (a sequence of no padding)."""
        x = self.of(node.inputs[0], depth + 1)
        v = self.values.get(node.inputs[0])
        k = _one_value(self.values.get(node.inputs[1])) if len(node.inputs) > 1 else None
        if x is None or v is None or v.shape is None or k is None or k.value is None:
            return None
        lo, hi, _ = x
        if lo.value is None or lo.value < 0 or not -len(v.shape) <= k.value < len(v.shape):
            return None
        n = v.shape[int(k.value) % len(v.shape)]
        made = Origin(node.name, node.op)
        if node.attrs.get("exclusive") in (1, True, "1", "true", "True"):  # ONNX's int, the IR's text
            return Expr.const(0), (n - 1) * hi, made
        return lo, n * hi, made

    def _clip(self, node: Node, depth: int) -> Bounds | None:
        """ONNX's Clip (bounds as inputs) and the IR's Clamp (as attributes): the input's bounds cut to them (relative
        positions clipped to a table's rows)."""
        if node.op == "Clamp":
            lo_b, hi_b = (_whole(node.attrs.get(k)) for k in ("min", "max"))
        else:
            lo_b, hi_b = (_one_value(self.values.get(i)) if i else None for i in (*node.inputs[1:3], "", "")[:2])
        x = self.of(node.inputs[0], depth + 1)
        if x is None:  # a clip of values not known (a box's coordinates) says where they stop, not that they get there
            return None
        lo = x[0] if lo_b is None else emax([x[0], lo_b])
        hi = x[1] if hi_b is None else emin([x[1], hi_b])
        return lo, hi, x[2]

    def _product(self, a: str, b: str, depth: int) -> Bounds | None:
        """Two tensors of elements none below 0, multiplied elementwise (a running count times its mask): from the
        product of the least to the product of the largest, which the elements where both are largest reach."""
        x, y = self.of(a, depth + 1), self.of(b, depth + 1)
        if x is None or y is None or x[0].value is None or y[0].value is None or min(x[0].value, y[0].value) < 0:
            return None
        made = x[2] if x[2].op not in _BOOLEAN else y[2]
        return x[0] * y[0], x[1] * y[1], made


def _whole(text: object) -> Expr | None:
    """An IR attribute holding a whole number (``"0"``, ``"261.0"``) as a constant; ``None`` for anything else."""
    try:
        f = float(str(text))
    except ValueError:
        return None
    return Expr.const(int(f)) if f.is_integer() and abs(f) < 2**53 else None


def _outer(a: Value | None, b: Value | None) -> bool:
    """Whether broadcasting ``a`` with ``b`` pairs every element of one with every element of the other: on
    each axis (right-aligned), one of them has the size 1."""
    if a is None or b is None or a.shape is None or b.shape is None:
        return False
    return all(x.value == 1 or y.value == 1 for x, y in zip(reversed(a.shape), reversed(b.shape), strict=False))


def _one_value(v: Value | None) -> Expr | None:
    """The one integer value every element of ``v`` holds, when known (a scalar, a one-element tensor); a
    float holding a whole number (``1.0``, a ratio traced as a constant) is that integer."""
    if v is None or not v.data:
        return None
    first = v.data[0]
    if isinstance(first, float) and len(v.data) == 1 and first.is_integer() and abs(first) < 2**53:
        first = Expr.const(int(first))
    if not isinstance(first, Expr) or any(e != first for e in v.data[1:]):
        return None
    return first


def constant_indices(node: Node, ctx: Ctx, x: Value, axis: int, pairs: list[tuple[Expr, Origin | None]]) -> None:
    """Constant indices into an axis of symbolic size: in range for some sizes only (index 2 of an axis of
    ``floor(H/8)``), a warning saying for which; an index that every size of at least 1 takes is no finding."""
    assert x.shape is not None
    size = x.shape[axis]
    ks = [(int(e.value), o) for e, o in pairs if e.value is not None]
    if not ks:
        return
    hi = max(ks, key=lambda p: p[0] if p[0] >= 0 else -1)
    lo = min(ks, key=lambda p: p[0] if p[0] < 0 else 0)
    for k, o in {hi, lo}:
        need = size - (k + 1) if k >= 0 else size + k
        least = need.lo
        if least is not None and least >= 0:
            continue
        require(
            node,
            ctx,
            "index-out-of-range",
            f"index {k} on axis {axis} of {dims_text(x.shape)} needs {size} " + (f"> {k}" if k >= 0 else f">= {-k}"),
            _in_range(size, k),
            (size,),
            axis=axis,
            suspects=[*suspects_of((x.origin(axis), size)), *([Suspect(o, k)] if o is not None else [])],
        )


def _in_range(size: Expr, k: int) -> Callable[[dict[str, int]], bool]:
    return lambda env: -size.evaluate(env) <= k < size.evaluate(env)


@register("TopK")
def _topk(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None), Value("int64", None)]
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", -1), r)
    kv = input_value(ins, 1)
    ko: Origin | None = None
    if "k" in node.attrs:  # opset 1
        k: Expr | None = Expr.const(attr_int(node, "k", 0))
    else:
        raw = scalar_of(kv)
        k = raw if isinstance(raw, Expr) else None
        ko = kv.data_origin(0) if kv is not None else None
    if k is None:
        k = fresh_dim(node, ctx, axis)
    elif k.value is not None:
        size = x.shape[axis]
        if k.value < 0 or (size.value is not None and k.value > size.value):
            raise ShapeError(
                f"{op_label(node)}: k = {k} for axis {axis} of {dims_text(x.shape)} (size {size})",
                axis=axis,
                dims=(k, size),
                suspects=suspects_of((ko, k), (x.origin(axis), size)),
            )
    dims = list(x.shape)
    dims[axis] = k
    origins = origins_of(x)
    origins[axis] = ko
    return [new_value(x.dtype, dims, origins), new_value("int64", dims, origins)]


@register("OneHot")
def _onehot(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    idx, depth, values = known(input_value(ins, 0)), input_value(ins, 1), known(input_value(ins, 2))
    dtype = values.dtype
    if values.shape is not None and (len(values.shape) != 1 or values.shape[0].eq(2) is Tri.NO):
        raise ShapeError(
            f"{op_label(node)}: values is {dims_text(values.shape)}; it must hold [off_value, on_value]",
            suspects=[Suspect(o) for o in origins_of(values) if o is not None],
            kind="invalid",
        )
    if idx.shape is None:
        return [Value(dtype, None)]
    r = len(idx.shape)
    raw_axis = attr_int(node, "axis", -1)
    if not -r - 1 <= raw_axis <= r:
        raise ShapeError(
            f"{op_label(node)}: axis {raw_axis} is out of range for an output of rank {r + 1}", kind="invalid"
        )
    axis = raw_axis % (r + 1)
    raw = scalar_of(depth)
    d: Expr
    if isinstance(raw, Expr):
        d = raw
    elif isinstance(raw, float) and math.isfinite(raw):
        d = Expr.const(int(raw))
    else:
        d = fresh_dim(node, ctx, axis)
    dims = [*idx.shape[:axis], d, *idx.shape[axis:]]
    origins = [*origins_of(idx)[:axis], depth.data_origin(0) if depth is not None else None, *origins_of(idx)[axis:]]
    off_on = values.data
    data = onehot_data(idx, d, axis, off_on[0], off_on[1]) if off_on is not None and len(off_on) == 2 else None
    out = new_value(dtype, dims, origins)
    return [out if data is None else Value(out.dtype, out.shape, data, out.origins)]


def onehot_data(idx: Value, depth: Expr, axis: int, off: Any, on: Any) -> tuple[Any, ...] | None:
    """The small value of a one-hot encoding (ONNX's OneHot, OpenVINO's), when the indices and the depth are
    known and every index lies in ``[0, depth)``, where every version of both ops agrees (a negative index
    counts from the end in ONNX and is all ``off`` in OpenVINO's first version): ``None`` otherwise.

    >>> [str(e) for e in onehot_data(Value("int64", (Expr.const(2),), (Expr.const(1), Expr.const(0))),
    ...                              Expr.const(3), 1, Expr.const(0), Expr.const(5))]
    ['0', '5', '0', '5', '0', '0']
    """
    grid, ks, n = static_dims(idx), idx.consts, depth.value
    if grid is None or ks is None or n is None or n * max(len(ks), 1) > DATA_LIMIT:
        return None
    if any(not 0 <= k < n for k in ks):
        return None
    at = np.expand_dims(np.array(ks, dtype=np.int64).reshape(grid), axis)
    hot = np.arange(n).reshape([n if a == axis else 1 for a in range(len(grid) + 1)]) == at
    return tuple(on if h else off for h in hot.reshape(-1).tolist())


@register("GatherND")
def _gather_nd(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx = known(input_value(ins, 0)), known(input_value(ins, 1))
    if data.shape is None or idx.shape is None:
        return [Value(data.dtype, None)]
    b = attr_int(node, "batch_dims", 0)
    r, q = len(data.shape), len(idx.shape)
    if r < 1 or q < 1 or b < 0 or b >= min(r, q):
        raise ShapeError(
            f"{op_label(node)}: batch_dims {b} for data {dims_text(data.shape)} and indices {dims_text(idx.shape)}",
            kind="invalid",
        )
    for k in range(b):
        agree(
            node,
            ctx,
            data.shape[k],
            data.origin(k),
            idx.shape[k],
            idx.origin(k),
            f"batch axis {k} of data {dims_text(data.shape)} and indices {dims_text(idx.shape)}",
            axis=k,
        )
    last = idx.shape[-1].value
    if last is None:
        return [Value(data.dtype, None)]
    if not 1 <= last <= r - b:
        raise ShapeError(
            f"{op_label(node)}: indices {dims_text(idx.shape)} index {last} axes of data {dims_text(data.shape)} past "
            f"its {b} batch axes (at most {r - b})",
            axis=q - 1,
            dims=(last, r - b),
            suspects=suspects_of((idx.origin(q - 1), idx.shape[-1])),
            kind="shape-mismatch",
        )
    dims = [*idx.shape[:-1], *data.shape[b + last :]]
    origins = [*origins_of(idx)[:-1], *origins_of(data)[b + last :]]
    return [new_value(data.dtype, dims, origins)]


@register("GatherElements")
def _gather_elements(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx = known(input_value(ins, 0)), known(input_value(ins, 1))
    if data.shape is not None:
        if not data.shape:
            raise ShapeError(f"{op_label(node)}: the data is a scalar", kind="invalid")
        axis = axis_of(node, attr_int(node, "axis", 0), len(data.shape))
        if idx.shape is not None and len(idx.shape) != len(data.shape):
            raise ShapeError(
                f"{op_label(node)}: indices {dims_text(idx.shape)} and data {dims_text(data.shape)} differ in rank",
                suspects=[Suspect(o) for o in origins_of(idx) if o is not None][:4],
                kind="shape-mismatch",
            )
        pairs = _indices(idx)
        if pairs is not None:
            _element_indices(node, ctx, data, axis, pairs)
        else:
            rows = data.shape[axis].value
            if rows is not None and not node.path:
                # values not known, their range may be: DeBERTa's relative positions clipped to [0, 2*seq - 1], read
                # from a table that a slice left 2*seq rows of, or 1 where the trace lost a min (seq = 131)
                _positions(node, ctx, data, axis, int(rows))
    return [Value(data.dtype, idx.shape, None, idx.origins)]


#: the most index values of distinct symbolic parts a GatherElements' indices are checked with (each part's least
#: and largest element are what can be past the axis)
_INDEX_PARTS = 16


def _element_indices(node: Node, ctx: Ctx, x: Value, axis: int, pairs: list[tuple[Expr, Origin | None]]) -> None:
    """GatherElements' indices, whose values are known (a relative position traced into a table of distances:
    ``2*seq + 12`` down to ``2*seq - 11``), against the axis they index: each must lie in ``-n..n - 1`` (onnxruntime
    and OpenVINO refuse any other). An error where one is past the axis at every size, else a warning saying for
    which sizes one is (:func:`~bcast.graph.ops._base.require`). Of the elements with one symbolic part, only the
    least and the largest can be past either end."""
    assert x.shape is not None
    size = x.shape[axis]
    ends: dict[tuple[Any, ...], list[tuple[Expr, Origin | None]]] = {}
    for e, o in pairs:
        part = tuple(t for t in e.terms if t[0])
        got = ends.setdefault(part, [(e, o), (e, o)])
        if constant_term(e) < constant_term(got[0][0]):
            got[0] = (e, o)
        elif constant_term(e) > constant_term(got[1][0]):
            got[1] = (e, o)
        if len(ends) > _INDEX_PARTS:
            return
    checked = list(dict.fromkeys(p for both in ends.values() for p in both))
    for e, o in checked:
        if _past_either_end(e, size):
            raise ShapeError(
                f"{op_label(node)}: index {e} is out of range for axis {axis} of {dims_text(x.shape)} at every size "
                f"(it must lie in -{size}..{size} - 1)",
                axis=axis,
                dims=(e, size),
                suspects=[*suspects_of((x.origin(axis), size)), *([Suspect(o, e.value)] if o is not None else [])],
                kind="index-out-of-range",
            )
    if size.value is not None and all(e.value is not None for e, _ in checked):
        return  # every index in range (the loop above refused any other)
    values = [e for e, _ in checked]

    def in_range(env: dict[str, int]) -> bool:
        n = size.evaluate(env)
        return all(-n <= e.evaluate(env) < n for e in values)

    shown = sorted({str(e) for e in values})
    said = f"the indices {shown[0]}" if len(shown) == 1 else f"the indices (among them {', '.join(shown[:4])})"
    require(
        node,
        ctx,
        "index-out-of-range",
        f"{said} on axis {axis} of {dims_text(x.shape)} must lie in -{size}..{size} - 1",
        in_range,
        (size, *values[:3]),
        axis=axis,
        suspects=[*suspects_of((x.origin(axis), size)), *(Suspect(o, e.value) for e, o in checked[:2] if o)],
    )


def _past_either_end(e: Expr, size: Expr) -> bool:
    """Whether the index ``e`` is past either end of an axis of ``size`` (``-size..size - 1``) at every size."""
    above, below = (e - size).lo, (-e - size - 1).lo
    return (above is not None and above >= 0) or (below is not None and below >= 0)


@register("ScatterND")
def _scatter_nd(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx, upd = known(input_value(ins, 0)), known(input_value(ins, 1)), known(input_value(ins, 2))
    if data.shape is not None and idx.shape is not None and upd.shape is not None:
        if not idx.shape:
            raise ShapeError(f"{op_label(node)}: indices is a scalar", kind="invalid")
        last = idx.shape[-1].value
        if last is not None:
            r = len(data.shape)
            if last > r:
                raise ShapeError(
                    f"{op_label(node)}: indices {dims_text(idx.shape)} index {last} axes of data "
                    f"{dims_text(data.shape)} (rank {r})",
                    axis=len(idx.shape) - 1,
                    dims=(last, r),
                    suspects=suspects_of((idx.origin(-1), idx.shape[-1])),
                    kind="shape-mismatch",
                )
            want = [*idx.shape[:-1], *data.shape[last:]]
            want_o = [*origins_of(idx)[:-1], *origins_of(data)[last:]]
            if len(upd.shape) != len(want):
                raise ShapeError(
                    f"{op_label(node)}: updates {dims_text(upd.shape)} must be indices.shape[:-1] + "
                    f"data.shape[{last}:] = {dims_text(want)} (data {dims_text(data.shape)}, indices "
                    f"{dims_text(idx.shape)})",
                    suspects=[Suspect(o) for o in origins_of(upd) if o is not None][:4],
                    kind="shape-mismatch",
                )
            for k, (a, b) in enumerate(zip(upd.shape, want, strict=True)):
                agree(
                    node,
                    ctx,
                    a,
                    upd.origin(k),
                    b,
                    want_o[k],
                    f"updates {dims_text(upd.shape)} must be indices.shape[:-1] + data.shape[{last}:] = "
                    f"{dims_text(want)}, axis {k}",
                    axis=k,
                )
    return [same_as(data)]


@register("ScatterElements", "Scatter")
def _scatter_elements(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx, upd = known(input_value(ins, 0)), known(input_value(ins, 1)), known(input_value(ins, 2))
    if data.shape is not None:
        if not data.shape:
            raise ShapeError(f"{op_label(node)}: the data is a scalar", kind="invalid")
        axis_of(node, attr_int(node, "axis", 0), len(data.shape))
    shapes = [(n, v) for n, v in (("data", data), ("indices", idx), ("updates", upd)) if v.shape is not None]
    if len({len(v.shape or ()) for _, v in shapes}) > 1:
        raise ShapeError(
            f"{op_label(node)}: " + ", ".join(f"{n} {dims_text(v.shape)}" for n, v in shapes) + " differ in rank",
            suspects=[Suspect(o) for o in origins_of(upd) + origins_of(idx) if o is not None][:4],
            kind="shape-mismatch",
        )
    if idx.shape is not None and upd.shape is not None:
        for k, (a, b) in enumerate(zip(idx.shape, upd.shape, strict=True)):
            agree(
                node,
                ctx,
                b,
                upd.origin(k),
                a,
                idx.origin(k),
                f"updates {dims_text(upd.shape)} and indices {dims_text(idx.shape)} must have one shape, axis {k}",
                axis=k,
            )
    return [same_as(data)]


@register("Compress")
def _compress(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, cond = known(input_value(ins, 0)), known(input_value(ins, 1))
    if cond.shape is not None and len(cond.shape) != 1:
        raise ShapeError(
            f"{op_label(node)}: the condition is {dims_text(cond.shape)}; it must be 1-D",
            suspects=[Suspect(o) for o in origins_of(cond) if o is not None],
            kind="invalid",
        )
    count: Expr | None = None
    if cond.data is not None and all(isinstance(e, Expr) and e.value is not None for e in cond.data):
        count = Expr.const(sum(1 for e in cond.data if e.value))
    if x.shape is None:
        return [Value(x.dtype, None)]
    if "axis" not in node.attrs:
        return [new_value(x.dtype, (count if count is not None else ctx.fresh(f"{node.name}_count", free=True),))]
    axis = axis_of(node, attr_int(node, "axis", 0), len(x.shape))
    dims = list(x.shape)
    dims[axis] = count if count is not None else ctx.fresh(f"{node.name}_count", free=True)
    origins = origins_of(x)
    origins[axis] = None
    return [new_value(x.dtype, dims, origins)]


@register("Unique")
def _unique(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    u = ctx.fresh(f"{node.name}_unique", free=True)
    if x.shape is None:
        return [Value(x.dtype, None), new_value("int64", (u,)), Value("int64", None), new_value("int64", (u,))]
    if "axis" not in node.attrs:
        return [
            new_value(x.dtype, (u,)),
            new_value("int64", (u,)),
            new_value("int64", (numel(x.shape),)),
            new_value("int64", (u,)),
        ]
    axis = axis_of(node, attr_int(node, "axis", 0), len(x.shape))
    dims = list(x.shape)
    dims[axis] = u
    origins = origins_of(x)
    origins[axis] = None
    return [
        new_value(x.dtype, dims, origins),
        new_value("int64", (u,)),
        new_value("int64", (x.shape[axis],), (x.origin(axis),)),
        new_value("int64", (u,)),
    ]
