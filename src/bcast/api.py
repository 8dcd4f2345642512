"""The public functions: thin wrappers over the dialect front ends and the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .backends import backend_of, foreign_namespace, shape_of
from .dims import MAX_RANK, Shape, ShapeLike, given_text, int_text, shape_text
from .engine.cache import NO_KEY, PlanCache
from .engine.memory import NUMPY_MAX_DIMS, out_of_memory
from .engine.numpy import as_array, materialize, view
from .errors import BroadcastError, brief
from .plan import ElementwisePlan, Plan
from .rules import (
    cache_key,
    make_plan,
    normalize_mode,
    plan_legacy,
    plan_multidirectional,
    plan_pdpd,
    reject_foreign_args,
)
from .rules._common import Ctx, read_axes, read_shape
from .rules.none import plan_none
from .rules.pdpd import read_axis

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
    return make_plan(
        data_shape,
        target_shape,
        mode,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
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
    return plan(
        data_shape,
        target_shape,
        mode,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
    ).output_shape


_ELEMENTWISE = ("numpy", "pdpd", "none", "bidirectional", "legacy")

#: The most operands one elementwise call takes (NumPy's own ``broadcast_shapes`` takes any number;
#: past this many, a call is a mistake or an attack, refused before any is read).
MAX_OPERANDS = MAX_RANK

#: NumPy's limit on the dims of an array (64 since NumPy 2; 32 before).

#: Elementwise plans keyed on the exact arguments of :func:`elementwise_plan` (see :mod:`bcast.engine.cache`).
ELEMENTWISE_PLANS: PlanCache[ElementwisePlan] = PlanCache(4096)


def _elementwise_key(shapes: tuple[ShapeLike, ...], mode: object, axis: object) -> Any:
    """The cache key of an elementwise call, or ``NO_KEY`` when an argument cannot be keyed exactly."""
    if type(mode) is not str or type(axis) is not int or len(mode) > 64 or len(shapes) > MAX_OPERANDS:
        return NO_KEY
    key: list[Any] = [mode, axis]
    for s in shapes:
        k = cache_key(s)
        if k is NO_KEY:
            return NO_KEY
        key.append(k)
    return tuple(key)


def elementwise_plan(*shapes: ShapeLike, mode: str = "numpy", axis: int = -1) -> ElementwisePlan:
    """Plans for operands of an elementwise operation, one per operand, and their output.

    ``numpy`` is multidirectional and takes any number of shapes; ``pdpd``, ``legacy``
    (ONNX opsets 1-6, ``broadcast=1``) and ``none`` take two shapes (A, B), and pdpd
    and legacy broadcast the second into the first at ``axis`` (-1: right-aligned).

    >>> import bcast
    >>> bcast.elementwise_plan("[2,3,4,5]", "[3,1]", mode="pdpd", axis=1).output_shape
    Shape('[2,3,4,5]')
    """
    key = _elementwise_key(shapes, mode, axis)
    if key is NO_KEY:
        return _elementwise_plan(shapes, mode, axis)
    ep = ELEMENTWISE_PLANS.get(key)
    if ep is None:
        ep = _elementwise_plan(shapes, mode, axis)
        ELEMENTWISE_PLANS.put(key, ep)
    return ep


def _elementwise_plan(shapes: tuple[ShapeLike, ...], mode: str, axis: int) -> ElementwisePlan:
    m = normalize_mode(mode, _ELEMENTWISE)
    if m not in ("pdpd", "legacy"):
        reject_foreign_args(m, axis=axis)
    if len(shapes) > MAX_OPERANDS:
        raise BroadcastError(
            f"{m}: {len(shapes):,} shapes given to one elementwise call, more than the {MAX_OPERANDS:,} "
            "it takes (bcast.api.MAX_OPERANDS)",
            mode=m,
            accepted=f"at most {MAX_OPERANDS} operands",
        )
    given = tuple(given_text(s) for s in shapes)
    parsed = tuple(read_shape(s, m, given) for s in shapes)
    if m in ("numpy", "bidirectional") and (m == "numpy" or len(parsed) == 2):
        return plan_multidirectional(parsed, given)
    if len(parsed) != 2:
        raise TypeError(f"{m}: mode {brief(m)} takes exactly 2 shapes (A, B), got {len(parsed)}")
    a, b = parsed
    if m == "none":
        pb = plan_none(b, a, Ctx(m, given[1], given[0]))
        pa = plan_none(a, pb.output_shape, Ctx(m, given[0], given[1]))
        out = pb.output_shape
    else:
        ax = read_axis(axis, m)
        into = plan_pdpd if m == "pdpd" else plan_legacy
        pb = into(b, a, ax, Ctx(m, given[1], given[0], extra=f"axis {int_text(ax)}", data_label="B", target_label="A"))
        out = pb.output_shape
        pa = plan_none(a, out, Ctx(m, given[0], shape_text(out)))
    return ElementwisePlan(m, parsed, out, (pa, pb), pb.constraints)


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
    key = _elementwise_key(shapes, mode, axis)
    if key is not NO_KEY:  # the hot path: one dictionary look-up
        ep = ELEMENTWISE_PLANS.get(key)
        if ep is not None:
            return ep.output_shape
    return elementwise_plan(*shapes, mode=mode, axis=axis).output_shape


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
        _check_array_rank(p)
        return materialize(p, arr) if copy else view(p, arr)
    except MemoryError as e:  # the last resort: every copy is checked before it is made
        err = out_of_memory("broadcast_to", (x,), e)
    raise err  # outside the except block: no MemoryError chained to it


def _check_array_rank(p: Plan) -> None:
    """A ``BroadcastError`` when the plan's output has more dims than a NumPy array can (64)."""
    rank = p.output_shape.rank
    if rank is not None and rank > NUMPY_MAX_DIMS:
        raise BroadcastError(
            f"{p.mode}: cannot make an array of shape {shape_text(p.output_shape)}: its {rank:,} dims are more "
            f"than the {NUMPY_MAX_DIMS} a NumPy array may have (the plan itself is fine: bcast.plan and "
            "bcast.infer take it)",
            mode=p.mode,
            shapes=p.given,
            accepted=f"an output of at most {NUMPY_MAX_DIMS} dims",
        )


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
    arr = _array(x)
    initial = (
        None if initial_broadcast_axes is None else read_axes(initial_broadcast_axes, "initial_broadcast_axes", "like")
    )
    p = plan(shape_of(arr, "like"), like_shape, "like", broadcast_axes=initial)
    if type(arr) is np.ndarray:
        _check_array_rank(p)
    return p(arr)


def expand(x: npt.ArrayLike, shape: ShapeLike) -> np.ndarray:
    """ONNX ``Expand``: bidirectional broadcast of ``x`` with ``shape`` (a read-only view).

    >>> import bcast, numpy as np
    >>> bcast.expand(np.zeros((3, 1)), (2, 1, 6)).shape
    (2, 3, 6)
    """
    arr = _array(x)
    p = plan(shape_of(arr, "bidirectional"), shape, "bidirectional")
    if type(arr) is np.ndarray:
        _check_array_rank(p)
    return p(arr)


def unbroadcast(dy: npt.ArrayLike, shape: ShapeLike) -> np.ndarray:
    """Sum the gradient ``dy`` back to the shape of an operand that NumPy broadcast to it.

    >>> import bcast, numpy as np
    >>> bcast.unbroadcast(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    g = _array(dy, "dy")
    p = plan(shape, shape_of(g, "numpy"), "numpy")
    if not p.data_shape.is_static:
        raise BroadcastError(
            f"numpy: unbroadcast: the operand shape {given_text(shape)} must be static to sum a gradient into it",
            mode="numpy",
            shapes=p.given,
            accepted="a shape of known sizes",
        )
    try:
        return p.backward(g)
    except MemoryError as e:  # the last resort: the sum's output is small, its accumulator may not be
        err = out_of_memory("unbroadcast", (g,), e)
    raise err  # outside the except block: no MemoryError chained to it


def _array(x: object, what: str = "x") -> np.ndarray:
    """``x`` as an ndarray, or as it is when it is another library's array (the plan then runs on its engine)."""
    if type(x) is np.ndarray or foreign_namespace(x) is not None:
        return x  # type: ignore[return-value]
    return as_array(x, what)
