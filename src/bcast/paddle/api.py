"""The PaddlePaddle 3.x profile's entry points: elementwise ops with ``axis`` and their gradients."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..engines import numpy as engine
from ..engines.memory import check_allocations, out_of_memory_guard
from ..engines.numpy import as_array
from ..errors import BroadcastError, brief
from .grads import GRAD_DTYPES, GRADS
from .kernels import DTYPES, DTYPES_WITH_AXIS, KERNELS
from .shapes import MODE, PaddleAlignment, align

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["elementwise", "elementwise_grad"]

# Paddle 3.3.1's pow/max/min grad kernels take no axis and run with -1 (right alignment)
_GRAD_IGNORES_AXIS = ("pow", "max", "min")


def _op_name(op: object, table: Mapping[str, object]) -> str:
    if not isinstance(op, str):
        raise TypeError(f"{MODE}: op must be a string such as 'add', got {type(op).__name__} {brief(op)}")
    name = op.removeprefix("elementwise_")
    if name not in table:
        raise TypeError(f"{MODE}: unknown op {brief(op)}; accepted: {', '.join(table)}")
    return name


def _axis(axis: object) -> int:
    if isinstance(axis, (bool, float, str, bytes)) or axis is None:
        raise TypeError(f"{MODE}: axis must be an integer, got {type(axis).__name__} {brief(axis)}")
    try:
        return operator.index(axis)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{MODE}: axis must be an integer, got {type(axis).__name__} {brief(axis)}") from None


def _read(x: object, what: str) -> np.ndarray:
    """``x`` as an array; whatever a hostile ``__array__`` raises comes back as a ``TypeError`` naming ``what``."""
    try:
        return as_array(x, f"{MODE}: {what}")
    except (TypeError, BroadcastError, MemoryError):
        raise
    except Exception as e:
        raise TypeError(
            f"{MODE}: {what} cannot be read as an array ({type(x).__name__}): {type(e).__name__}: {brief(str(e))}"
        ) from None


#: per op, how many arrays of the output's shape (in the widest type: 8 bytes an element, 16 for
#: complex) its kernel holds at once besides the result, by the operands' kind (b/i/u, f, c)
_WORK: dict[str, tuple[int, int, int]] = {
    "add": (0, 0, 0),
    "sub": (0, 0, 0),
    "mul": (0, 0, 0),
    "div": (5, 0, 6),
    "floordiv": (3, 0, 6),
    "mod": (3, 3, 6),
    "pow": (5, 0, 6),
    "max": (0, 4, 6),
    "min": (0, 4, 6),
}


def _check_room(name: str, shape: tuple[int, ...], dtype: np.dtype, results: int, extra: int) -> None:
    """Refuse, before computing, an op whose result (``results`` arrays) and intermediates do not fit."""
    wide = np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
    check_allocations(
        [(shape, dtype, results), (shape, wide, extra)],
        mode=MODE,
        what=f"compute {name} of shape {shape} ({dtype})",
        hint="give it smaller operands",
    )


def _operands(name: str, x: object, y: object, dtypes: dict[str, tuple[str, ...]]) -> tuple[np.ndarray, np.ndarray]:
    a, b = _read(x, "x"), _read(y, "y")
    if a.dtype != b.dtype:
        raise TypeError(
            f"{MODE}: {name}: X is {a.dtype} and Y is {b.dtype}; Paddle's elementwise kernels take one dtype "
            "(cast one operand first)"
        )
    if a.dtype.name not in dtypes[name]:
        where = " with an axis other than -1" if dtypes is DTYPES_WITH_AXIS and a.dtype.name in DTYPES[name] else ""
        raise TypeError(
            f"{MODE}: {name}: Paddle 3.3.1 has no CPU kernel for {a.dtype}{where}; accepted: {', '.join(dtypes[name])}"
        )
    return a, b


def _views(al: PaddleAlignment, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    px, py = al.plans()
    return engine.view(px, a), engine.view(py, b)


@out_of_memory_guard(f"{MODE} elementwise")
def elementwise(op: str, x: npt.ArrayLike, y: npt.ArrayLike, axis: int = -1) -> np.ndarray:
    """PaddlePaddle 3.x ``elementwise_<op>(X, Y, axis)`` on NumPy arrays.

    Parameters
    ----------
    op : {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "max", "min"}
        The operation (an ``elementwise_`` prefix is accepted).
    x, y : array_like
        The operands, of one dtype that Paddle's CPU kernel for ``op`` supports.
    axis : int, default -1
        Where the lower-rank operand starts (see :func:`bcast.paddle.elementwise_shape`).

    Returns
    -------
    numpy.ndarray
        A new array of the operands' dtype and the broadcast shape.

    Raises
    ------
    BroadcastError
        Where Paddle rejects (or cannot define) the shapes and axis.
    TypeError
        For an unknown op, mixed dtypes, or a dtype Paddle has no kernel for.
    DivisionByZeroError
        Integer ``div``/``floordiv``/``mod`` by zero (Paddle raises too).
    IntegerOverflowError
        ``int32``/``int64`` minimum divided by -1 (Paddle's process dies of SIGFPE).

    Examples
    --------
    >>> import numpy as np, bcast.paddle
    >>> bcast.paddle.elementwise("add", np.zeros((2, 3)), np.array([10.0, 20.0]), axis=0)
    array([[10., 10., 10.],
           [20., 20., 20.]])
    >>> bcast.paddle.elementwise("div", np.array([7, -7], np.int32), np.array([2, 2], np.int32))
    array([ 3, -3], dtype=int32)
    >>> bcast.paddle.elementwise("mod", np.array([7, -7], np.int32), np.array([-2, 2], np.int32))
    array([-1,  1], dtype=int32)
    """
    name = _op_name(op, KERNELS)
    axis = _axis(axis)
    a, b = _operands(name, x, y, DTYPES if axis == -1 else DTYPES_WITH_AXIS)
    al = align(a.shape, b.shape, axis)
    work = _WORK[name][0 if a.dtype.kind in "biu" else 1 if a.dtype.kind == "f" else 2]
    _check_room(name, al.output_shape.to_tuple(), a.dtype, 1, work)
    va, vb = _views(al, a, b)
    result: np.ndarray = np.asarray(KERNELS[name](va, vb), dtype=a.dtype)
    if not (result.flags.c_contiguous and result.flags.owndata):
        result = result.copy()
    return result


@out_of_memory_guard(f"{MODE} elementwise_grad")
def elementwise_grad(
    op: str, x: npt.ArrayLike, y: npt.ArrayLike, dout: npt.ArrayLike, axis: int = -1
) -> tuple[np.ndarray, np.ndarray]:
    """The gradients ``(dX, dY)`` that PaddlePaddle 3.x computes for ``elementwise_<op>(X, Y, axis)``.

    Each is the op's local derivative times ``dout``, summed over the axes along which
    that operand was broadcast, in the operand's shape and dtype.

    Paddle 3.3.1's ``pow``, ``max`` and ``min`` grad kernels take no ``axis``: they always
    right-align the operands (axis -1). Where ``axis`` placed the lower-rank operand
    elsewhere, Paddle's gradient is the right-aligned one (reproduced here). Where right
    alignment gives a different output shape, Paddle reads ``dout``'s buffer as that shape:
    reproduced while it is no larger than ``dout``; beyond that Paddle reads past the
    buffer, and this raises a BroadcastError.

    Parameters
    ----------
    op : {"add", "sub", "mul", "div", "pow", "max", "min"}
    x, y : array_like
        The forward operands (float32/float64; complex too except for max/min).
    dout : array_like
        The gradient of the output: its shape is the forward output's, its dtype X's.
    axis : int, default -1

    Raises
    ------
    BroadcastError
        Where the forward op or Paddle's grad kernel rejects the shapes, or ``dout`` has
        the wrong shape.
    TypeError
        For an op with no gradient, mixed dtypes, or an unsupported dtype.

    Examples
    --------
    >>> import numpy as np, bcast.paddle
    >>> dx, dy = bcast.paddle.elementwise_grad("add", np.zeros((2, 3)), np.zeros(2), np.ones((2, 3)), axis=0)
    >>> dy
    array([3., 3.])
    >>> bcast.paddle.elementwise_grad("max", np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.ones(2))
    (array([0.5, 1. ]), array([0.5, 0. ]))
    """
    name = _op_name(op, GRADS)
    axis = _axis(axis)
    a, b = _operands(name, x, y, GRAD_DTYPES)
    g = _read(dout, "dout")
    al = align(a.shape, b.shape, axis)
    if axis < -1 and a.shape != b.shape:
        raise _grad_axis_below(name, axis, al)
    if name in _GRAD_IGNORES_AXIS and al.start != _right_start(al):
        try:
            right = align(a.shape, b.shape, -1)
        except BroadcastError as e:
            raise _grad_axis_error(name, a, b, axis, al, str(e)) from None
        if right.output_shape != al.output_shape:
            n_right, n_out = int(np.prod(right.output_shape.to_tuple())), int(np.prod(al.output_shape.to_tuple()))
            if n_right > n_out or g.shape != al.output_shape:
                raise _grad_axis_error(name, a, b, axis, al, f"right-aligned, they broadcast to {right.output_shape}")
            # Paddle reads dout's buffer as if it had the right-aligned output's shape: its first elements
            g = np.ascontiguousarray(g).reshape(-1)[:n_right].reshape(right.output_shape.to_tuple())
        al = right
    if g.shape != al.output_shape:
        raise BroadcastError(
            f"{MODE}: {name} grad: dout has shape {g.shape}, but the forward output has shape {al.output_shape}",
            mode=MODE,
            shapes=(str(al.x_shape), str(al.y_shape), str(g.shape)),
            accepted=f"dout of shape {al.output_shape}",
        )
    if g.dtype != a.dtype:
        raise TypeError(f"{MODE}: {name} grad: dout is {g.dtype}, but X and Y are {a.dtype} (cast dout first)")
    px, py = al.plans()
    # the forward result, both local gradients and their temporaries, as arrays of the output's shape
    _check_room(f"{name} grad", al.output_shape.to_tuple(), a.dtype, 3, 3)
    va, vb = engine.view(px, a), engine.view(py, b)
    gx, gy = GRADS[name](va, vb, np.asarray(KERNELS[name](va, vb), dtype=a.dtype), g)
    full = al.output_shape.to_tuple()
    dx = engine.backward(px, np.broadcast_to(np.asarray(gx, dtype=a.dtype), full))
    dy = engine.backward(py, np.broadcast_to(np.asarray(gy, dtype=a.dtype), full))
    return dx, dy


def _right_start(al: PaddleAlignment) -> int:
    """The start axis that right alignment (axis -1) gives the lower-rank operand."""
    rx, ry = al.x_shape.rank or 0, al.y_shape.rank or 0
    return abs(rx - ry) if rx != ry else 0


def _grad_axis_below(name: str, axis: int, al: PaddleAlignment) -> BroadcastError:
    """The forward op takes an axis below -1 only where its output is empty (its kernel is skipped); the grad kernels
    of operands that differ check it even then ("Axis should be great than or equal to 0, but received axis is
    -2"); operands of one shape take their own path, which reads no axis."""
    return BroadcastError(
        f"{MODE}: {name} grad: axis {axis}: Paddle 3.3.1's grad kernels refuse an axis below -1, even where the "
        f"forward output ({al.output_shape}) is empty and the forward op takes it",
        mode=MODE,
        shapes=(str(al.x_shape), str(al.y_shape)),
        accepted="an axis of -1 or more",
    )


def _grad_axis_error(
    name: str, a: np.ndarray, b: np.ndarray, axis: int, al: PaddleAlignment, why: str
) -> BroadcastError:
    return BroadcastError(
        f"{MODE}: {name} grad: X {a.shape} and Y {b.shape} with axis {axis} give {al.output_shape} forward, but "
        f"Paddle 3.3.1's {name} grad kernel ignores axis and right-aligns the operands ({why}); "
        "it then fails, or reads past dout's buffer",
        mode=MODE,
        shapes=(str(al.x_shape), str(al.y_shape)),
        accepted=f"an axis that right-aligns the lower-rank operand (-1 or {_right_start(al)})",
    )
