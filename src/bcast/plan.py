"""The public face of the canonical broadcast: :class:`Plan`, an alignment that can run.

A :class:`Plan` is an :class:`~bcast.alignment.Alignment` (the pure data a dialect's rule
made) with the verbs users call on it: views, copies and gradients on the engine of the
array given (:mod:`bcast.engines`), explanations (:mod:`bcast.explain`) and ONNX lowering
(:mod:`bcast.onnx.lowering`). Everything here calls down into those layers; nothing below
imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import engines, rules
from .alignment import Alignment, ElementwiseAlignment, FrozenPlanError
from .explain import explain_elementwise, explain_plan

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["ElementwisePlan", "FrozenPlanError", "Plan", "as_elementwise_plan", "as_plan"]


class Plan(Alignment):
    """How data of ``data_shape`` becomes ``output_shape``: an :class:`~bcast.alignment.Alignment` that runs.

    It has the alignment's attributes (``mode``, ``data_shape``, ``target_shape``,
    ``output_shape``, ``axes_mapping``, ``broadcast_axes``, ``constraints``, ``attrs``...)
    and the verbs: calling it gives a view, :meth:`materialize` a copy, :meth:`backward`
    the adjoint, :meth:`explain` the picture, :meth:`to_onnx` a model.

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

    __slots__ = ()

    # -- specialisation ---------------------------------------------------------
    def specialize(self, data_shape: object) -> Plan:
        """The same broadcast for data of a concrete shape (binds the plan's symbols).

        Raises ``BroadcastError`` when the shape is not one this plan admits.
        """
        return as_plan(rules.specialize(self, data_shape))

    def bind(self, values: dict[str, int]) -> Plan:
        """The same broadcast with symbols replaced by sizes, e.g. ``{"N": 8}``.

        >>> import bcast
        >>> bcast.plan("[C]", "[N,C,H,W]", "explicit", axes_mapping=[1]).bind(
        ...     {"N": 2, "C": 3, "H": 4, "W": 5}).output_shape
        Shape('[2,3,4,5]')
        """
        return as_plan(rules.bind(self, values))

    # -- execution ----------------------------------------------------------------
    def __call__(self, x: npt.ArrayLike) -> np.ndarray:
        """A zero-copy, read-only view of ``x`` broadcast to the output shape.

        For another library's array (torch, cupy, jax, dask...), an array of that library
        on the same device: a view where the library has them (see :mod:`bcast.engines`).
        """
        return engines.view(self, x)  # type: ignore[no-any-return]

    def materialize(self, x: npt.ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
        """A new C-contiguous array holding the broadcast, or the broadcast written into ``out`` (NumPy only)."""
        return engines.materialize(self, x, out)  # type: ignore[no-any-return]

    def backward(self, dy: npt.ArrayLike) -> np.ndarray:
        """The adjoint: ``dy`` summed over the broadcast axes, reshaped to the data's shape."""
        return engines.backward(self, dy)  # type: ignore[no-any-return]

    def explain(self, *, colour: bool = False) -> str:
        """The aligned axes side by side, and what is replicated where (ANSI colour when ``colour``)."""
        return explain_plan(self, colour=colour)

    def to_onnx(self, **options: Any) -> Any:
        """An ONNX model (or graph) that realises this broadcast; see :func:`bcast.onnx.lowering.plan_to_onnx`.

        Needs the ``onnx`` package (``pip install "bcast[onnx]"``).
        """
        from .onnx.lowering import plan_to_onnx  # onnx's lowering only when asked: not at start-up

        return plan_to_onnx(self, **options)

    def __str__(self) -> str:
        return self.explain()


class ElementwisePlan(ElementwiseAlignment):
    """Several operands broadcast to one output: one :class:`Plan` per operand. Immutable, as a :class:`Plan`.

    >>> import bcast
    >>> ep = bcast.elementwise_plan("[1,4,5]", "[2,3,1,1]")
    >>> ep.output_shape, [p.broadcast_axes for p in ep.operands]
    (Shape('[2,3,4,5]'), [(0, 1), (2, 3)])
    """

    __slots__ = ()

    operands: tuple[Plan, ...]

    def explain(self, *, colour: bool = False) -> str:
        """The operands' axes side by side, and which is replicated along which axis."""
        return explain_elementwise(self, colour=colour)

    def __str__(self) -> str:
        return self.explain()


#: The public face of each alignment seen (keyed on its identity, which the key keeps alive): a
#: cached alignment gives the same Plan every time. Bounded: forgotten all at once when full
#: (a plain dict: this look-up is on the path of every bcast.plan call).
_PLANS: dict[Alignment, Plan] = {}
_ELEMENTWISE: dict[ElementwiseAlignment, ElementwisePlan] = {}
_FACES = 8192


def as_plan(al: Alignment) -> Plan:
    """``al`` as a :class:`Plan`: the same data, with the verbs (one Plan per cached alignment)."""
    if type(al) is Plan:
        return al
    p = _PLANS.get(al)
    if p is None:
        if len(_PLANS) >= _FACES:
            _PLANS.clear()
        p = _PLANS[al] = Plan._copy_of(al)
    return p


def as_elementwise_plan(ea: ElementwiseAlignment) -> ElementwisePlan:
    """``ea`` as an :class:`ElementwisePlan`, each operand a :class:`Plan`."""
    if type(ea) is ElementwisePlan:
        return ea
    ep = _ELEMENTWISE.get(ea)
    if ep is None:
        if len(_ELEMENTWISE) >= _FACES:
            _ELEMENTWISE.clear()
        operands = tuple(as_plan(p) for p in ea.operands)
        ep = _ELEMENTWISE[ea] = ElementwisePlan(ea.mode, ea.shapes, ea.output_shape, operands, ea.constraints)
    return ep
