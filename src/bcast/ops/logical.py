"""And, Or, Xor on bool tensors; BitwiseAnd, BitwiseOr, BitwiseXor and BitShift on integers."""

from __future__ import annotations

import numpy as np

from ..engines import array_api_kernels as kernels
from ..errors import brief
from ..operators import BY_NAME
from ._base import run_binary, ufunc_kernel

__all__ = ["KERNELS", "and_", "bitshift", "bitwise_and", "bitwise_or", "bitwise_xor", "or_", "xor"]

AND, OR, XOR, BITWISE_AND, BITWISE_OR, BITWISE_XOR, BITSHIFT = (
    BY_NAME[n] for n in ("and_", "or_", "xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitshift")
)


_and = ufunc_kernel(np.logical_and)
_or = ufunc_kernel(np.logical_or)
_xor = ufunc_kernel(np.logical_xor)
_bitwise_and = ufunc_kernel(np.bitwise_and)
_bitwise_or = ufunc_kernel(np.bitwise_or)
_bitwise_xor = ufunc_kernel(np.bitwise_xor)
#: the kernels whose small calls :func:`bcast.ops._base.small_calls` may hand to their ufunc alone
KERNELS = {
    "and_": _and,
    "or_": _or,
    "xor": _xor,
    "bitwise_and": _bitwise_and,
    "bitwise_or": _bitwise_or,
    "bitwise_xor": _bitwise_xor,
}


def and_(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``And`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.and_(np.array([True, False]), np.array([[True], [False]]))
    array([[ True, False],
           [False, False]])
    """
    return run_binary(AND, _and, a, b, mode, axis, out, block=and_)


def or_(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Or`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.or_(np.array([True, False]), np.array(False))
    array([ True, False])
    """
    return run_binary(OR, _or, a, b, mode, axis, out, block=or_)


def xor(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Xor`` on bool tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.xor(np.array([True, False]), np.array(True))
    array([False,  True])
    """
    return run_binary(XOR, _xor, a, b, mode, axis, out, block=xor)


def bitwise_and(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseAnd`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_and(np.array([12, 10], np.uint8), np.array(6, np.uint8))
    array([4, 2], dtype=uint8)
    """
    return run_binary(BITWISE_AND, _bitwise_and, a, b, mode, axis, out, block=bitwise_and)


def bitwise_or(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseOr`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_or(np.array([12, 10], np.int16), np.array(1, np.int16))
    array([13, 11], dtype=int16)
    """
    return run_binary(BITWISE_OR, _bitwise_or, a, b, mode, axis, out, block=bitwise_or)


def bitwise_xor(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``BitwiseXor`` on integer tensors.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.bitwise_xor(np.array([12, 10], np.int32), np.array(6, np.int32))
    array([10, 12], dtype=int32)
    """
    return run_binary(BITWISE_XOR, _bitwise_xor, a, b, mode, axis, out, block=bitwise_xor)


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
    return run_binary(BITSHIFT, kernel, x, y, mode, axis, out, {"direction": direction}, block=bitshift)


def _shift_left(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    ok, n = kernels.shift_counts(np, x, y)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    # shift the two's-complement bits, so a signed value's left shift wraps like C's unsigned one
    shifted = np.asarray(np.left_shift(x.view(unsigned), n.view(unsigned))).view(x.dtype)
    np.copyto(out, np.where(ok, shifted, 0), casting="unsafe")


def _shift_right(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    ok, n = kernels.shift_counts(np, x, y)
    fill = kernels.shift_fill(np, x)  # before the shift: NumPy then reuses the freed buffers (a third faster)
    np.copyto(out, np.where(ok, np.right_shift(x, n), fill), casting="unsafe")
