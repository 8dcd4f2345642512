"""The canonical broadcast: ``broadcast_in_dim(x, output_shape, axes_mapping)`` as pure data.

Every dialect's front end (:mod:`bcast.rules`) turns its shapes and attributes into an
:class:`Alignment`: each data axis lands on one output axis, where it must be 1 or equal
to the output. Everything else (views, copies, gradients, explanations, lowering,
model checking) reads it; the facts derived from it (broadcast axes, new axes, the
aligned shape, the strides of a view) are computed here, once, and nowhere else.

An alignment knows nothing of arrays, engines, ONNX or text, and it cannot be changed:
alignments are cached and shared by every call with the same arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any, NoReturn

from .constraints import Constraints
from .dims import Shape
from .errors import BroadcastError

__all__ = ["Alignment", "ElementwiseAlignment", "FrozenPlanError", "StaticFacts", "static_output"]


class FrozenPlanError(AttributeError, TypeError):
    """Raised on an attempt to change a plan: plans are cached and shared by every caller of the same arguments.

    Both an ``AttributeError`` (as for any read-only attribute) and a ``TypeError`` (as for
    item assignment into a read-only mapping, such as :attr:`Plan.attrs`).
    """


def _freeze(value: Any) -> Any:
    """A read-only copy of an attribute value: lists become tuples, dicts read-only mappings, sets frozensets."""
    if isinstance(value, (dict, MappingProxyType)):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if type(value) in (list, tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value


def _refuse(obj: object, name: str, verb: str) -> NoReturn:
    raise FrozenPlanError(
        f"cannot {verb} {type(obj).__name__}.{name}: plans are immutable (a plan is cached and shared by "
        "every call with the same arguments); make a new one with bcast.plan(...)"
    )


#: How a rule rebuilds its alignment for other shapes (the same mode and attributes): used to
#: specialise an alignment to concrete shapes or to bind its symbols.
Realign = Callable[[Shape, Shape], "Alignment"]


class StaticFacts:
    """What executing a static alignment needs, as Python ints, worked out once per alignment."""

    __slots__ = ("_strides", "aligned", "data", "elem_strides", "memo", "output", "span")

    def __init__(self, data: tuple[int, ...], output: tuple[int, ...], mapping: tuple[int | None, ...]) -> None:
        self.data = data
        self.output = output
        aligned = [1] * len(output)
        for i, a in enumerate(mapping):
            if a is not None:
                aligned[a] = data[i]
        #: the data's shape with its axes on the output's (1 where a new axis is inserted)
        self.aligned = tuple(aligned)
        #: elements an index into the output must be able to reach (0 dims count as 1, as NumPy counts them)
        self.span = math.prod(max(d, 1) for d in output)
        # strides (in elements) of C-contiguous data seen through the broadcast: 0 where replicated
        elem = [0] * len(aligned)
        step = 1
        for k in reversed(range(len(aligned))):
            if aligned[k] == output[k] and aligned[k] != 1:
                elem[k] = step
            step *= aligned[k]
        self.elem_strides = tuple(elem)
        self._strides: dict[int, tuple[int, ...]] = {}
        #: what an engine derives from these facts and the arrays it meets, kept by that engine
        #: (a compiled loop's layout for data of given strides and dtype): bounded by the engine
        self.memo: dict[Any, Any] = {}

    def byte_strides(self, itemsize: int) -> tuple[int, ...]:
        """:attr:`elem_strides` in bytes, for elements of ``itemsize`` bytes."""
        strides = self._strides.get(itemsize)
        if strides is None:
            strides = self._strides[itemsize] = tuple(s * itemsize for s in self.elem_strides)
        return strides


class Alignment:
    """How data of ``data_shape`` lines up with ``output_shape``: the canonical ``broadcast_in_dim``.

    Attributes
    ----------
    mode : str
        The dialect that made it.
    data_shape, target_shape, output_shape : Shape
        The data's shape, the target as given, and the result (which a rule may
        refine: a symbol met by a static size becomes that size).
    axes_mapping : tuple of int or None, or None
        For each data axis, the output axis it lands on. ``None`` for a size-1
        data axis that the rule drops (pdpd's ignored trailing 1s); the whole
        tuple is ``None`` when a rank is dynamic.
    constraints : Constraints
        What symbolic dims must satisfy for the alignment to hold.
    attrs : Mapping
        The rule's attributes (``axis``, ``axes_mapping``...), read-only.
    given : tuple of str
        The data and target shapes as the caller wrote them (for messages).
    """

    __slots__ = (
        "__dict__",  # the cached derived facts below
        "_realign",
        "attrs",
        "axes_mapping",
        "constraints",
        "data_shape",
        "given",
        "mode",
        "output_shape",
        "target_shape",
    )

    mode: str
    data_shape: Shape
    target_shape: Shape
    output_shape: Shape
    axes_mapping: tuple[int | None, ...] | None
    constraints: Constraints
    attrs: Mapping[str, Any]
    given: tuple[str, ...]
    _realign: Realign

    def __init__(
        self,
        *,
        mode: str,
        data_shape: Shape,
        target_shape: Shape,
        output_shape: Shape,
        axes_mapping: tuple[int | None, ...] | None,
        constraints: Constraints,
        attrs: Mapping[str, Any],
        given: tuple[str, ...],
        replan: Realign,
    ) -> None:
        init = object.__setattr__  # __setattr__ below refuses every name
        init(self, "mode", mode)
        init(self, "data_shape", data_shape)
        init(self, "target_shape", target_shape)
        init(self, "output_shape", output_shape)
        init(self, "axes_mapping", _freeze(axes_mapping))
        init(self, "constraints", constraints)
        init(self, "attrs", _freeze(dict(attrs)))
        init(self, "given", tuple(given))
        init(self, "_realign", replan)

    @classmethod
    def _copy_of(cls, other: Alignment) -> Any:
        """``other``'s data in an instance of ``cls`` (a subclass that adds behaviour, never state)."""
        new = object.__new__(cls)
        for name in Alignment.__slots__[1:]:
            object.__setattr__(new, name, getattr(other, name))
        new.__dict__.update(other.__dict__)  # the derived facts already computed
        return new

    def realign(self, data_shape: Shape, target_shape: Shape) -> Alignment:
        """The same rule, mode and attributes applied to other shapes (a ``BroadcastError`` if they clash)."""
        return self._realign(data_shape, target_shape)

    def __setattr__(self, name: str, value: object) -> None:
        _refuse(self, name, "set")

    def __delattr__(self, name: str) -> None:
        _refuse(self, name, "delete")

    def __copy__(self) -> Alignment:
        return self  # immutable: a copy would be the same alignment (as copy.copy of a tuple)

    def __deepcopy__(self, memo: dict[int, Any]) -> Alignment:
        return self

    # -- derived facts ------------------------------------------------------
    @cached_property
    def broadcast_axes(self) -> tuple[int, ...] | None:
        """Output axes along which the data is replicated (``None``: ranks unknown).

        Those no data axis maps to, and mapped axes where a data dim 1 meets an output dim
        other than 1. They are also the axes a gradient is summed over.
        """
        return self._axes_where(maybe=False)

    @cached_property
    def maybe_broadcast_axes(self) -> tuple[int, ...] | None:
        """Mapped output axes where replication depends on an unknown data dim."""
        return self._axes_where(maybe=True)

    def _axes_where(self, *, maybe: bool) -> tuple[int, ...] | None:
        if self.axes_mapping is None or self.output_shape.rank is None:
            return None
        out = self.output_shape
        mapped = {a: i for i, a in enumerate(self.axes_mapping) if a is not None}
        axes = []
        for k in range(out.rank or 0):
            i = mapped.get(k)
            if i is None:
                if not maybe:
                    axes.append(k)
                continue
            d, o = self.data_shape[i], out[k]
            out_is_one = o.is_static and o.value == 1
            if d.is_static:
                if not maybe and d.value == 1 and not out_is_one:
                    axes.append(k)
            elif maybe and d.may_be(1) and not out_is_one:
                axes.append(k)
        return tuple(axes)

    @cached_property
    def align_index(self) -> tuple[Any, ...] | None:
        """An index that lines the data's axes up with the output's (``None`` when a rank is unknown).

        ``x[align_index]`` inserts a new axis where no data axis maps and drops the size-1
        axes the rule ignores, so that it broadcasts to the output by NumPy's rule; every engine
        (NumPy, the Array API, Dask) builds its view from it.

        >>> import bcast
        >>> bcast.plan("[3]", "[2,3,4]", "explicit", axes_mapping=[1]).align_index
        (None, slice(None, None, None), None)
        """
        mapping = self.axes_mapping
        if mapping is None or self.output_shape.rank is None:
            return None
        index: list[Any] = []
        pos = 0
        for a in mapping:
            if a is None:  # a trailing 1 the rule ignores
                index.append(0)
                continue
            index.extend([None] * (a - pos))
            index.append(slice(None))
            pos = a + 1
        index.extend([None] * (self.output_shape.rank - pos))
        return tuple(index)

    @cached_property
    def static(self) -> StaticFacts | None:
        """The shapes as ints, the aligned shape and a view's strides; ``None`` unless every dim is known."""
        if not self.is_static or self.axes_mapping is None:
            return None
        return StaticFacts(self.data_shape.to_tuple(), self.output_shape.to_tuple(), self.axes_mapping)

    @property
    def aligned_shape(self) -> tuple[int, ...] | None:
        """The data's shape with its axes on the output's, 1 on new axes (``None`` unless static).

        >>> import bcast
        >>> bcast.plan("[3]", "[2,3,4]", "explicit", axes_mapping=[1]).aligned_shape
        (1, 3, 1)
        """
        st = self.static
        return None if st is None else st.aligned

    @property
    def is_static(self) -> bool:
        """True when the data and output shapes are fully known."""
        return self.data_shape.is_static and self.output_shape.is_static

    @property
    def new_axes(self) -> tuple[int, ...] | None:
        """Output axes that no data axis maps to."""
        if self.axes_mapping is None or self.output_shape.rank is None:
            return None
        mapped = set(self.axes_mapping)
        return tuple(k for k in range(self.output_shape.rank) if k not in mapped)

    # -- presentation ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "data_shape": str(self.data_shape),
            "target_shape": str(self.target_shape),
            "output_shape": str(self.output_shape),
            "axes_mapping": None if self.axes_mapping is None else list(self.axes_mapping),
            "broadcast_axes": None if self.broadcast_axes is None else list(self.broadcast_axes),
            "constraints": self.constraints.to_list(),
            "attrs": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.attrs.items()},
        }

    def __repr__(self) -> str:
        extra = "".join(f", {k}={list(v) if isinstance(v, tuple) else v!r}" for k, v in self.attrs.items())
        return (
            f"{type(self).__name__}(mode={self.mode!r}, data={self.data_shape}, target={self.target_shape}{extra} "
            f"-> output={self.output_shape}, axes_mapping={self.axes_mapping}, "
            f"broadcast_axes={self.broadcast_axes})"
        )


class ElementwiseAlignment:
    """Several operands broadcast to one output: one :class:`Alignment` per operand. Immutable."""

    __slots__ = ("constraints", "mode", "operands", "output_shape", "right_aligned", "shapes")

    mode: str
    shapes: tuple[Shape, ...]
    output_shape: Shape
    operands: tuple[Alignment, ...]
    constraints: Constraints
    #: Whether every operand's axes land on the output's last axes, in order (NumPy's own rule): then
    #: the operands combine as they are, and no view needs to line them up first.
    right_aligned: bool

    def __init__(
        self,
        mode: str,
        shapes: tuple[Shape, ...],
        output_shape: Shape,
        operands: tuple[Alignment, ...],
        constraints: Constraints,
    ) -> None:
        init = object.__setattr__  # __setattr__ below refuses every name: cached, like an Alignment
        init(self, "mode", mode)
        init(self, "shapes", tuple(shapes))
        init(self, "output_shape", output_shape)
        init(self, "operands", tuple(operands))
        init(self, "constraints", constraints)
        init(self, "right_aligned", all(_right_aligned(a) for a in operands))

    def __setattr__(self, name: str, value: object) -> None:
        _refuse(self, name, "set")

    def __delattr__(self, name: str) -> None:
        _refuse(self, name, "delete")

    def __copy__(self) -> ElementwiseAlignment:
        return self  # immutable, as an Alignment

    def __deepcopy__(self, memo: dict[int, Any]) -> ElementwiseAlignment:
        return self

    def __repr__(self) -> str:
        shapes = ", ".join(str(s) for s in self.shapes)
        return f"{type(self).__name__}(mode={self.mode!r}, shapes=[{shapes}] -> output={self.output_shape})"


def _right_aligned(al: Alignment) -> bool:
    mapping, rank = al.axes_mapping, al.output_shape.rank
    if mapping is None or rank is None:
        return False
    return mapping == tuple(range(rank - len(mapping), rank))


def static_output(al: Alignment, what: str) -> tuple[int, ...]:
    """The output shape as ints, or an error saying which output dim is unknown (``what``: the action)."""
    out = al.output_shape
    if out.rank is None:
        raise BroadcastError(
            f"{al.mode}: cannot {what}: the output shape {out} has a dynamic rank",
            mode=al.mode,
            shapes=al.given,
        )
    for k, d in enumerate(out):
        if not d.is_static:
            raise BroadcastError(
                f"{al.mode}: cannot {what}: output axis {k} is {d}, not a known size "
                f"(output {out}); give a static target or bind its symbols",
                mode=al.mode,
                shapes=al.given,
                axis=k,
                dims=(str(d),),
            )
    return out.to_tuple()
