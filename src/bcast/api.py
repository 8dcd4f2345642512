"""The public functions: thin wrappers over the dialect front ends and the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .alignment import ElementwiseAlignment
from .cache import NO_KEY
from .constraints import Constraints
from .dims import Dim, Shape, ShapeLike, given_text
from .engines import engine_for
from .engines import view as engine_view
from .engines.arrays import broadcast_view, check_output_rank, expand, operand
from .engines.foreign import backend_of, foreign_namespace, shape_of
from .engines.memory import out_of_memory_error
from .engines.numpy import as_array, materialize, view
from .errors import BroadcastError, brief
from .plan import ElementwisePlan, Plan, as_elementwise_plan, as_plan
from .rules import ELEMENTWISE, MAX_OPERANDS, align_elementwise, elementwise_key, make_plan, read_axes

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = [
    "ResultShape",
    "broadcast_arrays",
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


class ResultShape(Shape):
    """A :class:`Shape` that carries what its symbols must satisfy for it to hold.

    Returned by :func:`broadcast_shapes` and :func:`infer`; it equals, hashes and prints as
    the plain shape, so it is used wherever a :class:`Shape` is.

    >>> import bcast
    >>> s = bcast.broadcast_shapes("[N,3]", "[4,1]")
    >>> s, s.constraints
    (Shape('[4,3]'), Constraints(['N in {1, 4}']))
    >>> s == bcast.Shape("[4,3]") == (4, 3)
    True
    >>> bcast.broadcast_shapes((2, 1), (3,)).constraints
    Constraints([])
    """

    constraints: Constraints

    @classmethod
    def of(cls, shape: Shape, constraints: Constraints) -> ResultShape:
        """``shape`` (its dims shared, not copied) with ``constraints``."""
        r: ResultShape = cls._make(shape._dims)
        object.__setattr__(r, "constraints", constraints)
        return r


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

    The result carries what the symbols must satisfy (:class:`ResultShape`):

    >>> bcast.infer("[N,1]", "[4,5]").constraints
    Constraints(['N in {1, 4}'])
    """
    al = make_plan(
        data_shape,
        target_shape,
        mode,
        axes_mapping=axes_mapping,
        axis=axis,
        broadcast_axes=broadcast_axes,
    )
    return ResultShape.of(al.output_shape, al.constraints)


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


@overload
def broadcast_shapes(
    *shapes: Shape | str | int | tuple[int, ...] | list[int], mode: str = "numpy", axis: int = -1
) -> ResultShape: ...
@overload
def broadcast_shapes(
    *shapes: ShapeLike, mode: str = "numpy", axis: int = -1
) -> ResultShape | tuple[int | None, ...]: ...
def broadcast_shapes(*shapes: ShapeLike, mode: str = "numpy", axis: int = -1) -> ResultShape | tuple[int | None, ...]:
    """The shape that elementwise operands broadcast to.

    ``numpy`` (multidirectional, ONNX and NumPy) takes any number of shapes; ``pdpd``,
    ``legacy`` and ``none`` take two (A, B). The result is a :class:`ResultShape`: a
    :class:`Shape` whose ``.constraints`` say what its symbols must satisfy.

    >>> import bcast
    >>> bcast.broadcast_shapes((1, 4, 5), (2, 3, 1, 1))
    Shape('[2,3,4,5]')
    >>> s = bcast.broadcast_shapes("[N,3]", "[4,1]")
    >>> s, s.constraints
    (Shape('[4,3]'), Constraints(['N in {1, 4}']))

    The Array API form: shapes given as tuples (or lists) of ints and ``None`` (a dim of
    unknown size) give a plain tuple. The standard (2025.12, ``broadcast_shapes``) says
    that "dimensions of unknown size must be propagated to the returned shape": an output
    axis where any operand has ``None`` is ``None``, whether the others are 1 or larger
    (array-api-extra does the same). The known sizes must still agree with each other.

    >>> bcast.broadcast_shapes((2, None), (1, 3))
    (2, None)
    >>> bcast.broadcast_shapes((None, 1), (4, 3), (3,))
    (None, 3)
    >>> bcast.broadcast_shapes([None], [1])
    (None,)
    >>> bcast.broadcast_shapes((None, 3), (4,))
    Traceback (most recent call last):
    ...
    bcast.errors.BroadcastError: numpy: shapes (?, 3) and (4,) cannot be broadcast together: ...

    (bcast's own form is sharper: ``"[?,3]"`` with ``"[4,3]"`` gives ``[4,3]``, since the
    unknown dim can only be 1 or 4 there.)
    """
    key = elementwise_key(shapes, mode, axis)
    if key is not NO_KEY:  # the hot path: one dictionary look-up
        ea = ELEMENTWISE.get(key)
        if ea is not None:
            return _result(ea)
    if any(_has_none(s) for s in shapes):
        return _array_api_shapes(shapes, mode, axis)
    return _result(align_elementwise(shapes, mode, axis))


#: The result of each elementwise alignment seen, made once (keyed on the alignment's identity, which
#: the key keeps alive; forgotten all at once when full): the cached call returns it as it is.
_RESULTS: dict[ElementwiseAlignment, ResultShape] = {}


def _result(ea: ElementwiseAlignment) -> ResultShape:
    r = _RESULTS.get(ea)
    if r is None:
        if len(_RESULTS) >= 8192:
            _RESULTS.clear()
        r = _RESULTS[ea] = ResultShape.of(ea.output_shape, ea.constraints)
    return r


def _has_none(shape: object) -> bool:
    """Whether ``shape`` is in the Array API form with an unknown dim (``None``); by identity, no ``__eq__`` called."""
    return isinstance(shape, (tuple, list)) and any(d is None for d in shape)


def _array_api_shapes(shapes: tuple[ShapeLike, ...], mode: str, axis: int) -> tuple[int | None, ...]:
    """:func:`broadcast_shapes` of Array API shapes (``None`` for an unknown size): a tuple, ``None`` where unknown."""
    unknown = Dim("?")
    given = tuple(tuple(unknown if d is None else d for d in s) if isinstance(s, (tuple, list)) else s for s in shapes)
    ea = align_elementwise(given, mode, axis)
    out: list[int | None] = [int(d) if d.is_static else None for d in ea.output_shape.dims]
    for s, op in zip(shapes, ea.operands, strict=True):
        if not (isinstance(s, (tuple, list)) and _has_none(s)):
            continue
        mapping = op.axes_mapping or ()
        for j, d in enumerate(s):
            k = mapping[j] if j < len(mapping) else None
            if d is None and k is not None:
                out[k] = None
    return tuple(out)


#: an argument not given: not ``None``, which given as the array must meet the array check (that names it)
_NOT_GIVEN: Any = object()


def broadcast_to(
    array: npt.ArrayLike = _NOT_GIVEN,
    shape: ShapeLike = _NOT_GIVEN,
    mode: str = "numpy",
    *,
    axes_mapping: Any = None,
    axis: int = -1,
    broadcast_axes: Any = None,
    copy: bool = False,
    subok: bool = False,
    x: npt.ArrayLike = _NOT_GIVEN,
    target_shape: ShapeLike = _NOT_GIVEN,
) -> np.ndarray:
    """Broadcast ``array`` to ``shape`` in ``mode``: a read-only view, or a copy.

    The arguments are named as ``np.broadcast_to(array, shape, subok=False)`` names them, and
    ``shape`` as the Array API's ``broadcast_to(x, /, shape)`` does; ``x=`` and ``target_shape=``
    are accepted too, as other names of ``array`` and ``shape``.

    ``subok=True`` keeps an ndarray subclass (``np.matrix``, a masked array...) as
    ``np.broadcast_to`` does; by default the result is a plain ndarray. Another library's
    array (PyTorch, CuPy, JAX, Dask...) is broadcast on its own engine, in its own namespace.

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
    if array is _NOT_GIVEN or x is not _NOT_GIVEN:  # the usual call costs two identity tests, no call
        array = _one_of("array", array, "x", x)
    if shape is _NOT_GIVEN or target_shape is not _NOT_GIVEN:
        shape = _one_of("shape", shape, "target_shape", target_shape)
    x, target_shape = array, shape
    if not isinstance(copy, bool):
        raise TypeError(f"copy must be True or False, got {type(copy).__name__} {brief(copy)}")
    _check_subok(subok)
    try:
        if type(x) is not np.ndarray and (engine := backend_of(x)) is not None:  # torch, cupy, jax, dask...
            data_shape = shape_of(x, str(mode))  # an Array API array: its shape as ints (Dask: checked known)
            fp = make_plan(
                data_shape, target_shape, mode, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes
            )
            return engine.materialize(fp, x) if copy else engine.view(fp, x)  # type: ignore[no-any-return]
        arr = x if type(x) is np.ndarray else as_array(x)
        base = arr if type(arr) is np.ndarray else arr.view(np.ndarray)  # a subclass: its data, as a plain ndarray
        p = make_plan(
            arr.shape, target_shape, mode, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes
        )
        check_output_rank(p)
        result = materialize(p, base) if copy else view(p, base)
        return _as_subclass(arr, result) if subok else result
    except MemoryError as e:  # the last resort: every copy is checked before it is made
        err = out_of_memory_error("broadcast_to", (x,), e)
    raise err  # outside the except block: no MemoryError chained to it


def _one_of(name: str, value: Any, other: str, other_value: Any) -> Any:
    """The argument given under ``name`` or under its other name ``other``: exactly one of the two, as Python
    would have it for one parameter (a ``TypeError`` for neither or both)."""
    if other_value is _NOT_GIVEN:
        if value is _NOT_GIVEN:
            raise TypeError(f"broadcast_to() missing required argument: '{name}'")
        return value
    if value is not _NOT_GIVEN:
        raise TypeError(f"broadcast_to() got both '{name}' and '{other}', two names of one argument")
    return other_value


def _check_subok(subok: object) -> None:
    if not isinstance(subok, (bool, np.bool_)):
        raise TypeError(f"subok must be True or False, got {type(subok).__name__} {brief(subok)}")


def _as_subclass(original: np.ndarray, result: np.ndarray) -> np.ndarray:
    """``result`` viewed as ``original``'s ndarray subclass, finalized from ``original`` (as NumPy's ``subok``)."""
    if type(original) is type(result):
        return result
    out = result.view(type(original))
    out.__array_finalize__(original)
    return out


def broadcast_arrays(*arrays: Any, subok: bool = False) -> tuple[Any, ...]:
    """NumPy's ``broadcast_arrays``: the arrays broadcast against each other (multidirectional).

    A tuple (as NumPy 2 returns), one entry per array, all of the common shape. An array that
    already has that shape comes back as it is; the others are views that share its memory.
    As in NumPy, those views report themselves writeable when their array is, but writing
    to one warns (``DeprecationWarning``; reading ``flags.writeable`` warns ``FutureWarning``)
    and they export read-only buffers; set ``flags.writeable`` to opt out of the warning. A
    read-only array gives a read-only view. ``subok=True`` keeps ndarray subclasses. Another
    library's array (PyTorch, array_api_strict...) is broadcast on its own engine and stays in
    its own namespace. Incompatible shapes raise :class:`BroadcastError`, a ``ValueError``.

    >>> import bcast, numpy as np
    >>> x, y = bcast.broadcast_arrays(np.array([[1, 2, 3]]), np.array([[4], [5]]))
    >>> x
    array([[1, 2, 3],
           [1, 2, 3]])
    >>> y
    array([[4, 4, 4],
           [5, 5, 5]])
    """
    _check_subok(subok)
    ops: list[Any] = []
    for i, a in enumerate(arrays):
        if foreign_namespace(a) is not None:
            ops.append(a)
            continue
        arr = as_array(a, f"arrays[{i}]")
        ops.append(arr if subok or type(arr) is np.ndarray else arr.view(np.ndarray))
    shapes = [shape_of(a, "numpy") for a in ops]
    out = align_elementwise(tuple(shapes)).output_shape.to_tuple() if ops else ()
    result: list[Any] = []
    for a, shape in zip(ops, shapes, strict=True):
        if shape == out:
            result.append(a)
            continue
        p = make_plan(shape, out, "numpy")
        if not isinstance(a, np.ndarray):  # another library's array, on its engine
            result.append(engine_view(p, a))
            continue
        v = view(p, a if type(a) is np.ndarray else a.view(np.ndarray))
        v = _as_subclass(a, v) if subok else v
        if getattr(a.flags, "_writeable_no_warn", False):  # NumPy's compatibility: writeable, warning on write
            v.flags.writeable = True
            setattr(v.flags, "_warn_on_write", True)  # noqa: B010 - a private flag the stubs do not declare
        result.append(v)
    return tuple(result)


def broadcast_like(x: npt.ArrayLike, like: Any, initial_broadcast_axes: Any = None) -> np.ndarray:
    """nGraph v0 ``BroadcastLike``: ``x`` broadcast to the shape of ``like`` (a read-only view).

    ``like`` is a shape, or an array (NumPy's or another library's) whose shape is taken. A
    1-D integer NumPy array is a shape, as in every shape argument of bcast (``np.array([3, 2])``
    is the shape ``(3, 2)``): to broadcast like such an array, pass its ``.shape``.
    With no initial axes, ``x`` is left-aligned: a data dim 1 under a larger like dim
    and every like axis past the data's rank are broadcast (nGraph's designed rule).
    ``initial_broadcast_axes`` is an axis set: order does not matter, a repeat counts once.

    >>> import bcast, numpy as np
    >>> bcast.broadcast_like(np.array([1, 2, 3]), (3, 2))
    array([[1, 1],
           [2, 2],
           [3, 3]])
    >>> bcast.broadcast_like(np.array([1, 2, 3]), np.zeros((3, 2))).shape
    (3, 2)
    """
    like_shape = shape_of(like, "like") if _is_array(like) else like
    initial = (
        None if initial_broadcast_axes is None else read_axes(initial_broadcast_axes, "initial_broadcast_axes", "like")
    )
    return broadcast_view(x, like_shape, "like", broadcast_axes=initial)


def _is_array(x: object) -> bool:
    """Whether ``x`` stands for its own shape: another library's array, or a NumPy array or scalar
    that is not a shape already (a 1-D integer array and an integer are read as shapes, as in
    every shape argument of bcast)."""
    if isinstance(x, np.ndarray):
        return not (x.ndim == 1 and x.dtype.kind in "iu")
    if isinstance(x, np.generic):
        return not isinstance(x, np.integer)
    return foreign_namespace(x) is not None


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
        err = out_of_memory_error("unbroadcast", (g,), e)
    raise err  # outside the except block: no MemoryError chained to it
