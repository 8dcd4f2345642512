"""OpenVINO inputs of a Broadcast node: ``target_shape`` and ``axes_mapping``.

Each is a tensor with its own element type and shape, and a value that shape inference
may know fully (a Constant), partly (``ShapeOf``, a ``Concat`` of constants and
unknowns: a :class:`~bcast.Shape` with ``?`` and interval dims) or not at all (a
Parameter: :class:`Unknown`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dims import Dim, Shape, ShapeLike, as_shape
from ..errors import BroadcastError, as_given, brief

__all__ = ["Input", "Unknown", "read_data_shape", "read_input"]


class Unknown:
    """A non-constant input: its values are unknown, only its own tensor shape and dtype are.

    Parameters
    ----------
    shape : Shape, str or sequence of int
        The input tensor's shape, e.g. ``[3]`` (three values), ``"[?]"`` or ``"[...]"``.
    dtype : numpy dtype, default ``np.int64``
        Its element type; OpenVINO requires an integer type for shapes and axes.

    Examples
    --------
    >>> import bcast.openvino as bov
    >>> bov.broadcast_shape("[2,1]", bov.Unknown([3]))           # three unknown values
    Shape('[?,?,?]')
    >>> bov.broadcast_shape("[2,1]", bov.Unknown([3]), "bidirectional")
    Shape('[?,2,?]')
    >>> bov.broadcast_shape("[2,1]", bov.Unknown("[?]"))         # not even their number
    Shape('[...]')
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: ShapeLike = "[?]", dtype: Any = np.int64) -> None:
        self.shape: Shape = read_data_shape(shape, "Unknown(shape)")
        try:
            self.dtype: np.dtype[Any] = np.dtype(dtype)
        except TypeError as e:
            raise TypeError(f"Unknown(dtype): {brief(dtype)} is not a NumPy dtype: {e}") from None

    def __repr__(self) -> str:
        return f"Unknown({str(self.shape)!r}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unknown) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


@dataclass(frozen=True)
class Input:
    """One OpenVINO input as shape inference sees it.

    ``value`` is the known (partial) value, or ``None``; ``ints`` the exact integers of a
    constant (``None`` unless every value is known); ``negatives`` the constant's values
    below 0, which OpenVINO rewrites (-1 to ``?``, the others to 0).
    """

    given: str
    shape: Shape
    dtype: np.dtype[Any]
    value: tuple[Dim, ...] | None
    ints: tuple[int, ...] | None
    negatives: tuple[int, ...] = ()

    @property
    def is_integral(self) -> bool:
        """OpenVINO's ``is_integral_number``: any signed or unsigned integer type, not boolean."""
        return self.dtype.kind in "iu"

    @property
    def rank_is_one(self) -> bool:
        """Whether the tensor's rank is compatible with 1 (a dynamic rank is)."""
        return self.shape.rank is None or self.shape.rank == 1


def read_data_shape(value: object, what: str) -> Shape:
    """A shape for the profile: static, ``?`` and interval dims; OpenVINO has no named symbols."""
    try:
        shape = as_shape(value)
    except TypeError as e:
        raise TypeError(f"openvino: {what}: {e}") from None
    if shape.symbols:
        raise BroadcastError(
            f"openvino: {what} {as_given(value)} has the symbolic dim(s) {', '.join(shape.symbols)}; "
            "OpenVINO dims are sizes or intervals only",
            shapes=(as_given(value),),
            accepted="static dims, ? and intervals such as 2..5 or 4.. (write ? for an unknown size)",
        )
    return shape


def _dim_of_constant(v: int) -> Dim:
    # OpenVINO reads a constant shape value -1 as a dynamic dim and clamps other negatives to 0.
    if v == -1:
        return Dim.dynamic()
    return Dim(max(v, 0))


def read_input(value: object, name: str) -> Input:
    """Read ``target_shape`` or ``axes_mapping`` as an OpenVINO input (see the module docstring)."""
    given = as_given(value)
    if isinstance(value, Unknown):
        return Input(str(value), value.shape, value.dtype, None, None)
    if isinstance(value, (Shape, str)):
        shape = read_data_shape(value, name)
        if shape.rank is None:  # ShapeOf of a tensor of unknown rank: not even the length is known
            return Input(given, Shape("[?]"), np.dtype(np.int64), None, None)
        ints = tuple(int(d) for d in shape) if shape.is_static else None
        return Input(given, Shape((shape.rank,)), np.dtype(np.int64), shape.dims, ints)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (str, Dim)) and not isinstance(v, int) for v in value):
        raise TypeError(
            f"openvino: {name} {given} mixes sizes and dims; give a partially known value as a Shape or a "
            "string such as '[?,16,50,50]', a constant as integers"
        )
    if isinstance(value, (list, tuple)) and len(value) == 0:
        arr = np.zeros((0,), dtype=np.int64)  # np.asarray([]) would be float64; [] here is an empty i64 constant
    elif isinstance(value, (list, tuple, int, np.ndarray, np.generic)) and not isinstance(value, bool):
        try:
            arr = np.asarray(value)
        except (ValueError, OverflowError) as e:
            raise TypeError(f"openvino: {name} {given} cannot be read as an array: {e}") from None
    else:
        raise TypeError(
            f"openvino: {name} must be integers, an integer array, a Shape or string (a partially known value) "
            f"or Unknown(...) (a non-constant input); got {type(value).__name__} {given}"
        )
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        # OpenVINO's own checks (element type, rank 1) report these; keep the input for them.
        return Input(given, Shape(arr.shape), arr.dtype, None, None)
    raw = tuple(int(v) for v in arr.tolist())
    dims = tuple(_dim_of_constant(v) for v in raw)
    return Input(given, Shape(arr.shape), arr.dtype, dims, raw, tuple(v for v in raw if v < 0))
