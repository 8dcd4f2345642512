"""The canonical plan: ``broadcast_in_dim(x, output_shape, axes_mapping)``.

Every dialect's front end produces a :class:`Plan`; views, copies, gradients and
explanations are written once, here and in :mod:`bcast.engine`, against it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from .backends import backend_of
from .constraints import Constraints
from .dims import Dim, Shape
from .errors import BroadcastError, brief

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["ElementwisePlan", "FrozenPlanError", "Plan"]


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


class Plan:
    """How data of ``data_shape`` becomes ``output_shape``.

    Attributes
    ----------
    mode : str
        The dialect that made the plan.
    data_shape, target_shape, output_shape : Shape
        The data's shape, the target as given, and the result (which a rule may
        refine: a symbol met by a static size becomes that size).
    axes_mapping : tuple of int or None, or None
        For each data axis, the output axis it lands on. ``None`` for a size-1
        data axis that the rule drops (pdpd's ignored trailing 1s); the whole
        tuple is ``None`` when a rank is dynamic.
    broadcast_axes : tuple of int
        The output axes along which data is replicated: those no data axis maps
        to, and mapped axes where a data dim 1 meets an output dim other than 1.
    constraints : Constraints
        What symbolic dims must satisfy for the plan to hold.
    attrs : Mapping
        The rule's attributes (``axis``, ``axes_mapping``...), read-only.

    A plan is immutable: plans are cached, so one call's plan is the next identical
    call's. Setting or deleting an attribute, or an item of :attr:`attrs`, raises
    :class:`FrozenPlanError` (an ``AttributeError`` and a ``TypeError``).

    Examples
    --------
    >>> import bcast, numpy as np
    >>> p = bcast.plan("[3,1]", "[2,3,4]")
    >>> p.output_shape, p.axes_mapping, p.broadcast_axes
    (Shape('[2,3,4]'), (1, 2), (0, 2))
    >>> p(np.arange(3).reshape(3, 1))[1]
    array([[0, 0, 0, 0],
           [1, 1, 1, 1],
           [2, 2, 2, 2]])
    >>> p.backward(np.ones((2, 3, 4))).tolist()
    [[8.0], [8.0], [8.0]]
    """

    __slots__ = (
        "__dict__",
        "_replan",
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
    _replan: Callable[[Shape, Shape], Plan]

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
        given: tuple[str, str],
        replan: Callable[[Shape, Shape], Plan],
    ) -> None:
        init = object.__setattr__  # __setattr__ below refuses every public name
        init(self, "mode", mode)
        init(self, "data_shape", data_shape)
        init(self, "target_shape", target_shape)
        init(self, "output_shape", output_shape)
        init(self, "axes_mapping", _freeze(axes_mapping))
        init(self, "constraints", constraints)
        init(self, "attrs", _freeze(dict(attrs)))
        init(self, "given", tuple(given))
        init(self, "_replan", replan)

    def __setattr__(self, name: str, value: object) -> None:
        # private names: the rules that build a plan finish it (rules/axes.py sets _replan); nobody else,
        # since the plan may already be cached and shared
        if not name.startswith("_") or not sys._getframe(1).f_globals.get("__name__", "").startswith("bcast.rules"):
            _refuse(self, name, "set")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        _refuse(self, name, "delete")

    def __copy__(self) -> Plan:
        return self  # immutable: a copy would be the same plan (as copy.copy of a tuple)

    def __deepcopy__(self, memo: dict[int, Any]) -> Plan:
        return self

    # -- derived facts ------------------------------------------------------
    @cached_property
    def broadcast_axes(self) -> tuple[int, ...] | None:
        """Output axes along which the data is replicated (``None``: ranks unknown)."""
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

        ``x[plan.align_index]`` inserts a new axis where no data axis maps and drops the size-1
        axes the rule ignores, so that it broadcasts to the output by NumPy's rule; every engine
        (NumPy, Dask, ...) builds its view from it.

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

    # -- specialisation ---------------------------------------------------------
    def specialize(self, data_shape: object) -> Plan:
        """The same broadcast for data of a concrete shape (binds the plan's symbols).

        Raises ``BroadcastError`` when the shape is not one this plan admits.
        """
        from .engine.numpy import bind_symbols
        from .rules._common import read_shape

        concrete = read_shape(data_shape, self.mode, self.given)
        if self.is_static and concrete == self.data_shape:
            return self
        values = bind_symbols(self, concrete)
        return self._replan(concrete, self.target_shape.bind(values))

    def bind(self, values: dict[str, int]) -> Plan:
        """The same broadcast with symbols replaced by sizes, e.g. ``{"N": 8}``.

        >>> import bcast
        >>> bcast.plan("[C]", "[N,C,H,W]", "explicit", axes_mapping=[1]).bind(
        ...     {"N": 2, "C": 3, "H": 4, "W": 5}).output_shape
        Shape('[2,3,4,5]')
        """
        if not isinstance(values, Mapping):
            raise TypeError(f"{self.mode}: bind takes a dict (mapping) of symbol names to sizes, got {brief(values)}")
        sizes: dict[str, int] = {}
        for name, size in values.items():
            if not isinstance(name, str):
                raise TypeError(f"{self.mode}: bind: symbol names are strings, got {brief(name)}")
            if isinstance(size, (bool, np.bool_)) or not hasattr(size, "__index__"):
                raise TypeError(f"{self.mode}: bind: the size of {name} must be an integer, got {brief(size)}")
            try:
                k = int(Dim.static(size))  # the one check of a size: >= 0 and at most 2**63 - 1
            except BroadcastError as e:
                raise BroadcastError(
                    f"{self.mode}: bind: the size given to {name} is out of range: {e}",
                    mode=self.mode,
                    shapes=self.given,
                    dims=(name,),
                    accepted=e.accepted,
                ) from None
            sizes[name] = k
        values = sizes
        return self._replan(self.data_shape.bind(values), self.target_shape.bind(values))

    # -- execution (NumPy engine) -------------------------------------------------
    def __call__(self, x: npt.ArrayLike) -> np.ndarray:
        """A zero-copy, read-only view of ``x`` broadcast to the output shape.

        For another library's array (torch, cupy, jax, dask...), an array of that library
        on the same device: a view where the library has them (see :mod:`bcast.backends`).
        """
        if type(x) is not np.ndarray and (engine := backend_of(x)) is not None:
            return engine.view(self, x)  # type: ignore[no-any-return]
        from .engine.numpy import view

        return view(self, x)

    def materialize(self, x: npt.ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
        """A new C-contiguous array holding the broadcast, or the broadcast written into ``out`` (NumPy only)."""
        if type(x) is not np.ndarray and (engine := backend_of(x)) is not None:
            return engine.materialize(self, x, out)  # type: ignore[no-any-return]
        from .engine.numpy import materialize

        return materialize(self, x, out)

    def backward(self, dy: npt.ArrayLike) -> np.ndarray:
        """The adjoint: ``dy`` summed over the broadcast axes, reshaped to the data's shape."""
        if type(dy) is not np.ndarray and (engine := backend_of(dy)) is not None:
            return engine.backward(self, dy)  # type: ignore[no-any-return]
        from .engine.numpy import backward

        return backward(self, dy)

    def explain(self, *, colour: bool = False) -> str:
        """The aligned axes side by side, and what is replicated where (ANSI colour when ``colour``)."""
        from .explain import explain_plan

        return explain_plan(self, colour=colour)

    def to_onnx(self, **options: Any) -> Any:
        """An ONNX model (or graph) that realises this broadcast; see :func:`bcast.onnx.lowering.plan_to_onnx`.

        Needs the ``onnx`` package (``pip install bcast[onnx]``).
        """
        from .onnx.lowering import plan_to_onnx

        return plan_to_onnx(self, **options)

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
            f"Plan(mode={self.mode!r}, data={self.data_shape}, target={self.target_shape}{extra} "
            f"-> output={self.output_shape}, axes_mapping={self.axes_mapping}, "
            f"broadcast_axes={self.broadcast_axes})"
        )

    def __str__(self) -> str:
        return self.explain()


class ElementwisePlan:
    """Several operands broadcast to one output: one :class:`Plan` per operand. Immutable, as a :class:`Plan`.

    >>> import bcast
    >>> ep = bcast.elementwise_plan("[1,4,5]", "[2,3,1,1]")
    >>> ep.output_shape, [p.broadcast_axes for p in ep.operands]
    (Shape('[2,3,4,5]'), [(0, 1), (2, 3)])
    """

    __slots__ = ("constraints", "mode", "operands", "output_shape", "shapes")

    mode: str
    shapes: tuple[Shape, ...]
    output_shape: Shape
    operands: tuple[Plan, ...]
    constraints: Constraints

    def __init__(
        self,
        mode: str,
        shapes: tuple[Shape, ...],
        output_shape: Shape,
        operands: tuple[Plan, ...],
        constraints: Constraints,
    ) -> None:
        init = object.__setattr__  # __setattr__ below refuses every name: cached, like a Plan
        init(self, "mode", mode)
        init(self, "shapes", tuple(shapes))
        init(self, "output_shape", output_shape)
        init(self, "operands", tuple(operands))
        init(self, "constraints", constraints)

    def __setattr__(self, name: str, value: object) -> None:
        _refuse(self, name, "set")

    def __delattr__(self, name: str) -> None:
        _refuse(self, name, "delete")

    def __copy__(self) -> ElementwisePlan:
        return self  # immutable, as a Plan

    def __deepcopy__(self, memo: dict[int, Any]) -> ElementwisePlan:
        return self

    def explain(self, *, colour: bool = False) -> str:
        """The operands' axes side by side, and which is replicated along which axis."""
        from .explain import explain_elementwise

        return explain_elementwise(self, colour=colour)

    def __repr__(self) -> str:
        shapes = ", ".join(str(s) for s in self.shapes)
        return f"ElementwisePlan(mode={self.mode!r}, shapes=[{shapes}] -> output={self.output_shape})"

    def __str__(self) -> str:
        return self.explain()


def require_cotangent(plan: Plan, got: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape, after checking that the plan is static and ``dy`` (of shape ``got``) matches it.

    Every engine's ``backward`` starts here, so they refuse the same inputs with the same words.
    """
    if not plan.is_static:
        raise BroadcastError(
            f"{plan.mode}: backward needs a plan with static shapes, got data {plan.data_shape} -> "
            f"{plan.output_shape}; call plan.specialize(data_shape) first",
            mode=plan.mode,
            shapes=plan.given,
        )
    shape = require_static(plan, "take the adjoint")
    if tuple(got) != shape:
        raise BroadcastError(
            f"{plan.mode}: dy has shape {Shape(got)}, but the broadcast's output is {Shape(shape)}",
            mode=plan.mode,
            shapes=(str(Shape(got)), str(Shape(shape))),
        )
    return shape


def require_static(plan: Plan, what: str) -> tuple[int, ...]:
    """The output shape as ints, or an error saying which output dim is unknown."""
    out = plan.output_shape
    if out.rank is None:
        raise BroadcastError(
            f"{plan.mode}: cannot {what}: the output shape {out} has a dynamic rank",
            mode=plan.mode,
            shapes=plan.given,
        )
    for k, d in enumerate(out):
        if not d.is_static:
            raise BroadcastError(
                f"{plan.mode}: cannot {what}: output axis {k} is {d}, not a known size "
                f"(output {out}); give a static target or bind its symbols",
                mode=plan.mode,
                shapes=plan.given,
                axis=k,
                dims=(str(d),),
            )
    return out.to_tuple()
