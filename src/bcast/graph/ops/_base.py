"""The registry of shape functions and what they share: reading attributes, axes and shape values.

A shape function takes ``(node, ins, ctx)``: the node, its inputs' :class:`~bcast.graph.model.Value`
(``None`` for an absent optional input) and the propagation's :class:`~bcast.graph.context.Ctx`,
and returns one :class:`Value` per output (fewer: the rest are unknown). It raises
:class:`~bcast.graph.context.ShapeError` for shapes its op cannot take.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ...files import MAX_MODEL_RANK
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr
from ..model import Node, Origin, Value

__all__ = [
    "DATA_LIMIT",
    "SHAPES",
    "ShapeFn",
    "axes_of",
    "axis_of",
    "dims_from_value",
    "elements",
    "input_value",
    "known",
    "numel",
    "register",
    "same_as",
    "shape_value",
]

ShapeFn = Callable[[Node, list[Value | None], Ctx], list[Value]]

#: shape functions by op type (``"Add"``; an op of another domain as ``"domain:Op"``)
SHAPES: dict[str, ShapeFn] = {}

#: the most elements a value is kept for: shape tensors are tiny, weights are never values
DATA_LIMIT = 4096

Dims = tuple[Expr, ...]


def register(*ops: str) -> Callable[[ShapeFn], ShapeFn]:
    def add(fn: ShapeFn) -> ShapeFn:
        for op in ops:
            SHAPES[op] = fn
        return fn

    return add


def known(v: Value | None) -> Value:
    return v if v is not None else Value(None, None)


def input_value(ins: Sequence[Value | None], k: int) -> Value | None:
    return ins[k] if k < len(ins) else None


def numel(dims: Dims) -> Expr:
    out = Expr.const(1)
    for d in dims:
        out = out * d
    return out


def static_numel(dims: Dims) -> int | None:
    vals = [d.value for d in dims]
    if any(v is None for v in vals):
        return None
    return math.prod(v for v in vals if v is not None)


def axis_of(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative; a :class:`ShapeError` otherwise."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{node.op} {node.name}: {what} {axis} is out of range for rank {rank}", kind="invalid")
    return axis % rank


def axes_of(
    node: Node, ins: Sequence[Value | None], rank: int, *, attr: str = "axes", input_index: int = 1, what: str = "axes"
) -> list[int] | None:
    """An op's axes, from its attribute (older opsets) or its input (newer); ``None`` when unknown."""
    if attr in node.attrs:
        raw = node.attrs[attr]
        given = [int(a) for a in raw] if isinstance(raw, (list, tuple)) else [int(raw)]
        return [axis_of(node, a, rank, what) for a in given]
    v = input_value(ins, input_index)
    if v is None:
        return []
    consts = v.consts
    return None if consts is None else [axis_of(node, a, rank, what) for a in consts]


def shape_value(v: Value | None) -> list[Expr] | None:
    """A 1-D shape tensor's elements (Reshape's, Expand's target), when propagation knows them."""
    if v is None:
        return None
    return v.ints


def elements(v: Value, k: int) -> tuple[Expr, Origin | None]:
    assert v.data is not None
    return v.data[k], v.data_origin(k)


def dims_from_value(node: Node, v: Value | None, what: str) -> tuple[Dims, tuple[Origin | None, ...]] | None:
    """A shape tensor's elements as dims and each one's origin, or ``None`` when its value is unknown."""
    ints = shape_value(v)
    if ints is None or v is None:
        return None
    for k, e in enumerate(ints):
        if e.value is not None and e.value < 0:
            o = v.data_origin(k)
            raise ShapeError(
                f"{node.op} {node.name}: {what} holds {e.value} at position {k}: a size is 0 or more",
                dims=(e.value,),
                suspects=[Suspect(o, e.value)] if o else (),
                kind="invalid",
            )
    return tuple(ints), tuple(v.data_origin(k) for k in range(len(ints)))


def rank_of_length(node: Node, n: Expr, what: str) -> int | None:
    """The rank a 1-D shape input of ``n`` values gives (``None``: unknown); a :class:`ShapeError` past
    :data:`~bcast.files.MAX_MODEL_RANK`, before any dim of it is made."""
    v = n.value
    if v is None:
        return None
    if v > MAX_MODEL_RANK:
        name = node.inputs[1] if len(node.inputs) > 1 else node.inputs[0]
        raise ShapeError(
            f"{node.op} {node.name}: {what} {name!r} holds {v:,} values: a rank above {MAX_MODEL_RANK} "
            "(the most a model's tensor may have)",
            kind="invalid",
        )
    return int(v)


def same_as(v: Value | None, dtype: str | None = None) -> Value:
    """An output of the input's shape (elementwise unary ops), keeping its origins, not its data."""
    v = known(v)
    return Value(dtype or v.dtype, v.shape, None, v.origins)


def data_of(values: Sequence[Any], limit: int = DATA_LIMIT) -> tuple[Any, ...] | None:
    return tuple(values) if len(values) <= limit else None


def attr_int(node: Node, name: str, default: int) -> int:
    v = node.attrs.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError(f"{node.op} {node.name}: the attribute {name} is {v!r}, not an integer", kind="invalid")
    return v


def attr_ints(node: Node, name: str, default: Sequence[int] | None = None) -> list[int] | None:
    v = node.attrs.get(name)
    if v is None:
        return None if default is None else list(default)
    if isinstance(v, int):
        return [v]
    return [int(x) for x in v]
