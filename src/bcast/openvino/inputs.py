"""OpenVINO inputs of a Broadcast node: ``target_shape`` and ``axes_mapping``.

Each is a tensor with its own element type and shape, and a value that shape inference
may know fully (a Constant), partly (``ShapeOf``, a ``Concat`` of constants and
unknowns: a :class:`~bcast.Shape` with ``?`` and interval dims) or not at all (a
Parameter: :class:`Unknown`). Each is read here into the :class:`~bcast.rules.openvino.Input` that
OpenVINO's rules take.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dims import Dim, Shape, ShapeLike, as_shape
from ..errors import BroadcastError, as_given, brief
from ..rules.openvino import Input, constant_input, unknown_input, unknown_text, value_input

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
        return unknown_text(self.shape, self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unknown) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


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


def read_input(value: object, name: str) -> Input:
    """Read ``target_shape`` or ``axes_mapping`` as an OpenVINO input (see the module docstring)."""
    given = as_given(value)
    if isinstance(value, Unknown):
        return unknown_input(value.shape, value.dtype)
    if isinstance(value, (Shape, str)):
        return value_input(read_data_shape(value, name), given)
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
    return constant_input(arr, given)
