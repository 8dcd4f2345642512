"""And, Or, Xor on bool tensors; BitwiseAnd, BitwiseOr, BitwiseXor and BitShift on integers."""

from __future__ import annotations

import numpy as np

from ..errors import brief
from ._base import Spec, run_binary, ufunc_kernel
from ._types import BOOL, INTS

__all__ = ["and_", "bitshift", "bitwise_and", "bitwise_or", "bitwise_xor", "or_", "xor"]

AND = Spec("And", ("A", "B"), BOOL, bool_output=True)
OR = Spec("Or", ("A", "B"), BOOL, bool_output=True)
XOR = Spec("Xor", ("A", "B"), BOOL, bool_output=True)
BITWISE_AND = Spec("BitwiseAnd", ("A", "B"), INTS)
BITWISE_OR = Spec("BitwiseOr", ("A", "B"), INTS)
BITWISE_XOR = Spec("BitwiseXor", ("A", "B"), INTS)
BITSHIFT = Spec("BitShift", ("X", "Y"), INTS)


def and_(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``And`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.and_(np.array([True, False]), np.array([[True], [False]]))
    array([[ True, False],
           [False, False]])
    """
    return run_binary(AND, ufunc_kernel(np.logical_and), a, b, mode, axis, out)


def or_(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Or`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.or_(np.array([True, False]), np.array(False))
    array([ True, False])
    """
    return run_binary(OR, ufunc_kernel(np.logical_or), a, b, mode, axis, out)


def xor(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Xor`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.xor(np.array([True, False]), np.array(True))
    array([False,  True])
    """
    return run_binary(XOR, ufunc_kernel(np.logical_xor), a, b, mode, axis, out)


def bitwise_and(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseAnd`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_and(np.array([12, 10], np.uint8), np.array(6, np.uint8))
    array([4, 2], dtype=uint8)
    """
    return run_binary(BITWISE_AND, ufunc_kernel(np.bitwise_and), a, b, mode, axis, out)


def bitwise_or(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseOr`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_or(np.array([12, 10], np.int16), np.array(1, np.int16))
    array([13, 11], dtype=int16)
    """
    return run_binary(BITWISE_OR, ufunc_kernel(np.bitwise_or), a, b, mode, axis, out)


def bitwise_xor(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseXor`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_xor(np.array([12, 10], np.int32), np.array(6, np.int32))
    array([10, 12], dtype=int32)
    """
    return run_binary(BITWISE_XOR, ufunc_kernel(np.bitwise_xor), a, b, mode, axis, out)


def bitshift(
    x: object,
    y: object,
    *,
    direction: str,
    mode: str = "numpy",
    axis: int = -1,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """ONNX ``BitShift``: ``x << y`` (``direction="LEFT"``) or ``x >> y`` (``"RIGHT"``).

    Shifts of the type's bit width or more (or negative) give 0, and -1 for a right shift
    of a negative signed value; a right shift of a signed value is arithmetic; a left
    shift of a signed value shifts its bits (two's complement).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitshift(np.array([16, 4], np.uint8), np.array([1, 2], np.uint8), direction="RIGHT")
    array([8, 1], dtype=uint8)
    """
    if direction not in ("LEFT", "RIGHT"):
        raise TypeError(f"bitshift: direction must be 'LEFT' or 'RIGHT', got {brief(direction)}")
    kernel = _shift_left if direction == "LEFT" else _shift_right
    return run_binary(BITSHIFT, kernel, x, y, mode, axis, out, {"direction": direction})


def _shift_counts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bits = np.iinfo(x.dtype).bits
    in_range = (y >= 0) & (y < bits)
    return in_range, np.where(in_range, y, 0).astype(x.dtype)


def _shift_left(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    ok, n = _shift_counts(x, y)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    # shift the two's-complement bits, so a signed value's left shift wraps like C's unsigned one
    shifted = np.asarray(np.left_shift(x.view(unsigned), n.view(unsigned))).view(x.dtype)
    np.copyto(out, np.where(ok, shifted, 0), casting="unsafe")


def _shift_right(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    ok, n = _shift_counts(x, y)
    fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
    np.copyto(out, np.where(ok, np.right_shift(x, n), fill), casting="unsafe")
