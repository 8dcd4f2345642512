"""A model as a neutral graph: what the ONNX and OpenVINO IR readers produce, and propagation reads.

Nothing here knows a file format. A reader turns its format into :class:`Graph` (nodes with
plain-Python attributes, inputs with symbolic dims, constants with their shape and, when
small, their value); :mod:`bcast.graph.propagate` then derives every tensor's :class:`Value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..native import slots
from .expr import Expr

__all__ = ["Declared", "Graph", "Node", "Origin", "Value"]

Dims = tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a dim (or an element of a shape value) was first made: a node, an initializer or an input."""

    name: str
    op: str
    kind: str = "node"  # "node", "initializer", "input"


@dataclass(frozen=True, slots=True)
class Value:
    """What propagation knows of one tensor.

    ``shape`` is ``None`` for an unknown rank. ``data`` is the flattened value (row-major) of a
    small tensor when known: each element an :class:`Expr` for integers and booleans, a
    ``float`` for floating point. ``origins`` names, per axis, where that dim was made, and
    ``data_origins`` per element; both are for root causes, never for shapes.
    """

    dtype: str | None
    shape: Dims | None
    data: tuple[Any, ...] | None = None
    origins: tuple[Origin | None, ...] | None = None
    data_origins: tuple[Origin | None, ...] | None = None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def origin(self, axis: int) -> Origin | None:
        if self.origins is None or not -len(self.origins) <= axis < len(self.origins):
            return None
        return self.origins[axis]

    def data_origin(self, k: int) -> Origin | None:
        if self.data_origins is None or not 0 <= k < len(self.data_origins):
            return None
        return self.data_origins[k]

    @property
    def ints(self) -> list[Expr] | None:
        """``data`` as expressions when every element is an integer expression."""
        if self.data is None or not all(isinstance(x, Expr) for x in self.data):
            return None
        return list(self.data)

    @property
    def consts(self) -> list[int] | None:
        """``data`` as Python ints when every element is a known integer."""
        ints = self.ints
        if ints is None:
            return None
        out = [e.value for e in ints]
        return None if any(v is None for v in out) else [int(v) for v in out if v is not None]


UNKNOWN = Value(None, None)


# Propagation makes two Values a node and an Origin for most new dims: hundreds of thousands on a large
# graph. A frozen dataclass's own __init__ sets each field through object.__setattr__; the slots' own
# setters do the same in half the time. The classes stay frozen: only __init__ writes.
_ORIGIN_SET = tuple(m.__set__ for m in slots(Origin))
_VALUE_SET = tuple(m.__set__ for m in slots(Value))


def _origin_init(self: Origin, name: str, op: str, kind: str = "node") -> None:
    s0, s1, s2 = _ORIGIN_SET
    s0(self, name)
    s1(self, op)
    s2(self, kind)


def _value_init(
    self: Value,
    dtype: str | None,
    shape: Dims | None,
    data: tuple[Any, ...] | None = None,
    origins: tuple[Origin | None, ...] | None = None,
    data_origins: tuple[Origin | None, ...] | None = None,
) -> None:
    s0, s1, s2, s3, s4 = _VALUE_SET
    s0(self, dtype)
    s1(self, shape)
    s2(self, data)
    s3(self, origins)
    s4(self, data_origins)


Origin.__init__ = _origin_init  # type: ignore[method-assign]
Value.__init__ = _value_init  # type: ignore[method-assign]


@dataclass(frozen=True, slots=True)
class Declared:
    """A type as a file states it (graph input, output or value_info, IR port): evidence, not truth.

    ``dims`` entries are ``None`` for a dim the file leaves unknown.
    """

    dtype: str | None
    dims: tuple[Expr | None, ...] | None


@dataclass(slots=True)
class Node:
    """One operation. ``attrs`` hold plain Python values (int, float, str, lists, a constant
    :class:`Value`); ``bodies`` the sub-graphs (If's branches, Loop's and Scan's body)."""

    index: int
    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    domain: str = ""
    bodies: Mapping[str, Graph] = field(default_factory=dict)
    path: tuple[str, ...] = ()  # enclosing nodes, for a node inside a body
    source: Any = field(default=None, repr=False, compare=False)  # the reader's own record of the node

    @property
    def label(self) -> str:
        path = self.path
        return "/".join((*path, self.name)) if path else self.name

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)


@dataclass
class Graph:
    """Nodes in the file's order; inputs, outputs and constants by name; the file's annotations."""

    nodes: list[Node]
    inputs: dict[str, Declared]
    outputs: list[str]
    constants: dict[str, Value]
    declared: dict[str, Declared] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    format: str = "onnx"
    name: str = "model"
    #: names visible from an enclosing graph (a body's outer scope)
    outer: frozenset[str] = frozenset()
    #: a function's formal inputs, in order (a model-local function is a Graph called by its nodes)
    params: list[str] = field(default_factory=list)
    #: the model-local functions, by (domain, name)
    functions: dict[tuple[str, str], Graph] = field(default_factory=dict)

    def opset(self, domain: str = "") -> int:
        return (
            self.opsets.get(domain, self.opsets.get("ai.onnx", 0))
            if domain in ("", "ai.onnx")
            else (self.opsets.get(domain, 1))
        )
