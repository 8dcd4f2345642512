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

from ...dims import Tri
from ...files import MAX_MODEL_RANK
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr
from ..model import Node, Origin, Value

__all__ = [
    "DATA_LIMIT",
    "SHAPES",
    "ShapeFn",
    "agree",
    "axes_of",
    "axis_of",
    "dims_from_value",
    "dims_text",
    "elements",
    "fresh_dim",
    "input_value",
    "known",
    "new_value",
    "numel",
    "op_label",
    "origins_of",
    "register",
    "same_as",
    "scalar_of",
    "shape_value",
    "suspects_of",
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


def op_label(node: Node) -> str:
    """How a message names a node: its op and its label (``Conv conv_3``)."""
    return f"{node.op} {node.label}"


def dims_text(dims: Sequence[Expr] | None) -> str:
    """Dims as a message shows them: ``[N,3]``, ``[?]`` for an unknown rank."""
    return "[?]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def origins_of(v: Value) -> list[Origin | None]:
    """Where each dim of ``v`` was made (``None``: nowhere known)."""
    return [v.origin(k) for k in range(len(v.shape or ()))]


def suspects_of(*pairs: tuple[Origin | None, Expr]) -> list[Suspect]:
    """The suspects of a finding: each (origin, dim) pair whose origin is known."""
    return [Suspect(o, e.value) for o, e in pairs if o is not None]


def fresh_dim(node: Node, ctx: Ctx, what: str | int) -> Expr:
    """A new symbol for a dim of ``node``'s output that its inputs do not decide."""
    return ctx.fresh(f"{node.name}_{what}")


def scalar_of(v: Value | None) -> Any:
    """The one element of a small tensor (an :class:`Expr` for integers, a float), ``None`` when unknown."""
    if v is None or v.data is None or len(v.data) != 1:
        return None
    return v.data[0]


def new_value(dtype: str | None, dims: Sequence[Expr] | None, origins: Sequence[Origin | None] | None = None) -> Value:
    """An output of these dims (``None``: of unknown rank) and origins, with no data."""
    if dims is None:
        return Value(dtype, None)
    return Value(dtype, tuple(dims), None, tuple(origins) if origins is not None else None)


def agree(
    node: Node,
    ctx: Ctx,
    a: Expr,
    oa: Origin | None,
    b: Expr,
    ob: Origin | None,
    what: str,
    *,
    axis: int | None = None,
    ones: bool = False,
) -> Tri:
    """``a`` and ``b`` must be one size: a :class:`ShapeError` when they differ for sure, a constraint
    (a warning) when they may. ``ones``: a 1 on either side is fine too (the op broadcasts it)."""
    t = a.eq(b)
    if t is Tri.YES or (ones and (a.value == 1 or b.value == 1)):
        return Tri.YES
    sus = suspects_of((oa, a), (ob, b))
    if t is Tri.NO:
        raise ShapeError(f"{op_label(node)}: {what}: {a} against {b}", axis=axis, dims=(a, b), suspects=sus)
    ctx.problem(
        node,
        "constraint",
        f"{op_label(node)}: {what}: needs {a} == {b}" + (" (or either to be 1)" if ones else ""),
        axis=axis,
        dims=(a, b),
        suspects=sus,
        severity="warning",
    )
    return t
