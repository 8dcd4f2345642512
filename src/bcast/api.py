"""The public functions: thin wrappers over the dialect front ends and the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .cache import NO_KEY
from .dims import Shape, ShapeLike, given_text
from .engines import engine_for
from .engines.arrays import broadcast_view, check_output_rank, expand, operand
from .engines.foreign import backend_of, shape_of
from .engines.memory import out_of_memory
from .engines.numpy import as_array, materialize, view
from .errors import BroadcastError, brief
from .plan import ElementwisePlan, Plan, as_elementwise_plan, as_plan
from .rules import ELEMENTWISE, MAX_OPERANDS, align_elementwise, elementwise_key, make_plan, read_axes

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = [
    "broadcast_like",
    "broadcast_shapes",
    "broadcast_to",
    "elementwise_plan",
    "expand",
    "infer",
    "plan",
    "unbroadcast",
]


#: Elementwise alignments, cached on the exact arguments of a call (see :mod:`bcast.rules`).
ELEMENTWISE_PLANS = ELEMENTWISE
#: The most operands one elementwise call takes.
MAX_OPERANDS = MAX_OPERANDS


def plan(
    data_shape: ShapeLike,
    target_shape: ShapeLike,
    mode: str = "numpy",
    *,
    axes_mapping: Any = None,
    axis: int = -1,
    broadcast_axes: Any = None,
) -> Plan:
    """The canonical plan that broadcasts data of ``data_shape`` to ``target_shape``.

    Parameters
    ----------
    data_shape, target_shape : Shape, str, or sequence of int
        ``"[2,?,1..8,N]"`` strings, tuples of ints, or :class:`Shape` objects.
    mode : {"numpy", "bidirectional", "explicit", "pdpd", "axes", "like", "none"}
        The dialect (see the README's table).
    axes_mapping : sequence of int, explicit mode only
        The output axis of each data axis: sorted, unique, in range.
    axis : int, pdpd mode only
        Where B (the data) starts inside A (the target); -1: right-aligned.
    broadcast_axes : sequence of int, axes (and like) mode only
        The new output axes (nGraph); for ``like``, the initial broadcast axes.

    Raises
    ------
    BroadcastError
        When the shapes cannot be broadcast in that mode; the message names the
        output axis and the two dims that clash, and what would be accepted.
    TypeError
        For arguments of the wrong type, or that belong to another mode.

    Examples
    --------
    >>> import bcast
    >>> p = bcast.plan("[512,512]", "[8,512,512,16]", "explicit", axes_mapping=[1, 2])
    >>> p.broadcast_axes
    (0, 3)
    >>> bcast.plan("[N,1]", "[4,5]").constraints
    Constraints(['N in {1, 4}'])
    """
    return as_plan(
        make_plan(
            data_shape,
            target_shape,
            mode,
            axes_mapping=axes_mapping,
            axis=axis,
            broadcast_axes=broadcast_axes,
        )
    )


def infer(
    data_shape: ShapeLike,
    target_shape: ShapeLike,
    mode: str = "numpy",
    *,
    axes_mapping: Any = None,
    axis: int = -1,
    broadcast_axes: Any = None,
) -> Shape:
    """The output shape of broadcasting ``data_shape`` to ``target_shape`` in ``mode``.

    >>> import bcast
    >>> bcast.infer("[16,1,1]", "[1,16,50,50]")
    Shape('[1,16,50,50]')
    >>> bcast.infer("[3,1]", "[2,1,6]", "bidirectional")
    Shape('[2,3,6]')
    >>> bcast.infer("[?,3]", "[2..4,N]")
    Shape('[2..4,3]')
    """
    return make_plan(
        data_shape,
        target_shape,
        mode,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
    ).output_shape


def elementwise_plan(*shapes: ShapeLike, mode: str = "numpy", axis: int = -1) -> ElementwisePlan:
    """Plans for operands of an elementwise operation, one per operand, and their output.

    ``numpy`` is multidirectional and takes any number of shapes; ``pdpd``, ``legacy``
    (ONNX opsets 1-6, ``broadcast=1``) and ``none`` take two shapes (A, B), and pdpd
    and legacy broadcast the second into the first at ``axis`` (-1: right-aligned).

    >>> import bcast
    >>> bcast.elementwise_plan("[2,3,4,5]", "[3,1]", mode="pdpd", axis=1).output_shape
    Shape('[2,3,4,5]')
    """
    return as_elementwise_plan(align_elementwise(shapes, mode, axis))


def broadcast_shapes(*shapes: ShapeLike, mode: str = "numpy", axis: int = -1) -> Shape:
    """The shape that elementwise operands broadcast to.

    ``numpy`` (multidirectional, ONNX and NumPy) takes any number of shapes; ``pdpd``,
    ``legacy`` and ``none`` take two (A, B).

    >>> import bcast
    >>> bcast.broadcast_shapes((1, 4, 5), (2, 3, 1, 1))
    Shape('[2,3,4,5]')
    >>> bcast.broadcast_shapes("[N,3]", "[4,1]")
    Shape('[4,3]')
    """
    key = elementwise_key(shapes, mode, axis)
    if key is not NO_KEY:  # the hot path: one dictionary look-up
        ea = ELEMENTWISE.get(key)
        if ea is not None:
            return ea.output_shape
    return align_elementwise(shapes, mode, axis).output_shape


def broadcast_to(
    x: npt.ArrayLike,
    target_shape: ShapeLike,
    mode: str = "numpy",
    *,
    axes_mapping: Any = None,
    axis: int = -1,
    broadcast_axes: Any = None,
    copy: bool = False,
) -> np.ndarray:
    """Broadcast ``x`` to ``target_shape`` in ``mode``: a read-only view, or a copy.

    >>> import bcast, numpy as np
    >>> bcast.broadcast_to(np.array([1, 2]), (2, 3, 2), "explicit", axes_mapping=[1])
    Traceback (most recent call last):
    ...
    bcast.errors.BroadcastError: explicit: cannot broadcast data (2,) to target (2, 3, 2) with axes_mapping [1]:
    at output axis 1, the data dim 2 meets the target dim 3; accepted there: a data dim of 1 or 3.
    >>> bcast.broadcast_to(np.array([1, 2]), (2, 3), "explicit", axes_mapping=[0])
    array([[1, 1, 1],
           [2, 2, 2]])
    """
    if not isinstance(copy, bool):
        raise TypeError(f"copy must be True or False, got {type(copy).__name__} {brief(copy)}")
    try:
        if type(x) is not np.ndarray and (engine := backend_of(x)) is not None:  # torch, cupy, jax, dask...
            shape = shape_of(x, str(mode))  # an Array API array: its shape as ints (Dask: checked known)
            fp = make_plan(
                shape, target_shape, mode, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes
            )
            return engine.materialize(fp, x) if copy else engine.view(fp, x)  # type: ignore[no-any-return]
        arr = x if type(x) is np.ndarray else as_array(x)
        p = make_plan(
            arr.shape, target_shape, mode, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes
        )
        check_output_rank(p)
        return materialize(p, arr) if copy else view(p, arr)
    except MemoryError as e:  # the last resort: every copy is checked before it is made
        err = out_of_memory("broadcast_to", (x,), e)
    raise err  # outside the except block: no MemoryError chained to it


def broadcast_like(x: npt.ArrayLike, like_shape: ShapeLike, initial_broadcast_axes: Any = None) -> np.ndarray:
    """nGraph v0 ``BroadcastLike``: ``x`` broadcast to ``like_shape`` (a read-only view).

    With no initial axes, ``x`` is left-aligned: a data dim 1 under a larger like dim
    and every like axis past the data's rank are broadcast (nGraph's designed rule).

    >>> import bcast, numpy as np
    >>> bcast.broadcast_like(np.array([1, 2, 3]), (3, 2))
    array([[1, 1],
           [2, 2],
           [3, 3]])
    """
    initial = (
        None if initial_broadcast_axes is None else read_axes(initial_broadcast_axes, "initial_broadcast_axes", "like")
    )
    return broadcast_view(x, like_shape, "like", broadcast_axes=initial)


def unbroadcast(dy: npt.ArrayLike, shape: ShapeLike) -> np.ndarray:
    """Sum the gradient ``dy`` back to the shape of an operand that NumPy broadcast to it.

    >>> import bcast, numpy as np
    >>> bcast.unbroadcast(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    g = operand(dy, "dy")
    p = make_plan(shape, shape_of(g, "numpy"), "numpy")
    if not p.data_shape.is_static:
        raise BroadcastError(
            f"numpy: unbroadcast: the operand shape {given_text(shape)} must be static to sum a gradient into it",
            mode="numpy",
            shapes=p.given,
            accepted="a shape of known sizes",
        )
    try:
        return engine_for(g).backward(p, g)  # type: ignore[no-any-return]
    except MemoryError as e:  # the last resort: the sum's output is small, its accumulator may not be
        err = out_of_memory("unbroadcast", (g,), e)
    raise err  # outside the except block: no MemoryError chained to it
