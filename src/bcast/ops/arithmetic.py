"""Add, Sub, Mul, Div, Pow, Mod: ONNX's multidirectional arithmetic.

Where ONNX defines a result NumPy does not give by default, the kernel says why:
integer Div truncates toward zero (C's rule), Mod follows the divisor's sign unless
``fmod=1``, and Pow keeps the base's type whatever the exponent's.
"""

from __future__ import annotations

import numpy as np

from ..errors import BroadcastError, DivisionByZeroError, brief
from ._base import Kernel, Spec, run_binary, ufunc_kernel
from ._types import FLOATS, NUMERIC

__all__ = ["add", "div", "mod", "mul", "pow", "sub"]

ADD = Spec("Add", ("A", "B"), NUMERIC)
SUB = Spec("Sub", ("A", "B"), NUMERIC)
MUL = Spec("Mul", ("A", "B"), NUMERIC)
DIV = Spec("Div", ("A", "B"), NUMERIC)
MOD = Spec("Mod", ("A", "B"), NUMERIC)
POW = Spec("Pow", ("X", "Y"), frozenset({"int32", "int64"}) | FLOATS, second_types=NUMERIC)


def add(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Add``: ``a + b``, broadcast multidirectionally (or by OpenVINO's ``pdpd`` / ``none``).

    Integer overflow wraps around, as in ONNX runtimes.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.add(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
    array([[1., 2., 3.],
           [1., 2., 3.]], dtype=float32)
    >>> ops.add(np.zeros((2, 3, 4, 5)), np.ones((3, 1)), mode="pdpd", axis=1).shape
    (2, 3, 4, 5)
    """
    return run_binary(ADD, _add, a, b, mode, axis, out)


def sub(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Sub``: ``a - b``.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.sub(np.array([5, 7], np.int32), np.array(2, np.int32))
    array([3, 5], dtype=int32)
    """
    return run_binary(SUB, _sub, a, b, mode, axis, out)


def mul(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Mul``: ``a * b``.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.mul(np.array([[1.0], [2.0]]), np.array([10.0, 20.0]))
    array([[10., 20.],
           [20., 40.]])
    """
    return run_binary(MUL, _mul, a, b, mode, axis, out)


def div(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Div``: ``a / b``; for integers the quotient truncated toward zero.

    Floating-point division by zero gives IEEE infinities and NaNs; an integer divisor
    of zero has no defined result in ONNX (runtimes crash), so it raises
    :class:`~bcast.errors.DivisionByZeroError` (a ``BroadcastError`` and a ``ZeroDivisionError``).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.div(np.array([7, -7], np.int64), np.array([2], np.int64))
    array([ 3, -3])
    """
    return run_binary(DIV, _div, a, b, mode, axis, out)


def mod(
    a: object, b: object, *, fmod: int = 0, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``Mod``: the remainder, with the divisor's sign (``fmod=0``) or the dividend's (``fmod=1``).

    Floating-point inputs take either (Mod-28; before it, ONNX required ``fmod=1`` for them,
    which the ONNX backend enforces for older models).

    >>> import numpy as np, bcast.ops as ops
    >>> a, b = np.array([-7, 7], np.int32), np.array([3], np.int32)
    >>> ops.mod(a, b), ops.mod(a, b, fmod=1)
    (array([2, 1], dtype=int32), array([-1,  1], dtype=int32))
    """
    if isinstance(fmod, bool) or fmod not in (0, 1):
        raise TypeError(f"mod: fmod must be 0 or 1, got {brief(fmod)}")
    return run_binary(MOD, _fmod if fmod else _mod_floor, a, b, mode, axis, out, {"fmod": int(fmod)})


def pow(x: object, y: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Pow``: ``x ** y``, in the type of ``x`` whatever the type of ``y``.

    An integer base with a float exponent is computed in double precision and
    truncated toward zero; a negative integer exponent gives the truncated real power
    (``2 ** -1 == 0``, ``(-1) ** -3 == -1``).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.pow(np.array([2, 3], np.int32), np.array([0.5], np.float32))
    array([1, 1], dtype=int32)
    >>> ops.pow(np.array([4.0], np.float32), np.array([2], np.int64))
    array([16.], dtype=float32)
    """
    return run_binary(POW, _pow, x, y, mode, axis, out)


_add = ufunc_kernel(np.add)
_sub = ufunc_kernel(np.subtract)
_mul = ufunc_kernel(np.multiply)


def _no_zero_divisor(op: str, y: np.ndarray) -> None:
    if y.dtype.kind in "iu" and y.size and not np.all(y):
        raise DivisionByZeroError(
            f"{op}: an integer divisor is 0 (ONNX defines no result for integer division by zero); "
            f"{int(np.count_nonzero(y == 0))} of the divisor's {y.size} elements are 0"
        )


def _div(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if x.dtype.kind in "iu":
        _no_zero_divisor("div", y)
        # C's truncation: floor, then one step back toward zero where a remainder has the other sign
        q = np.floor_divide(x, y)
        adjust = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        np.add(q, adjust, out=out, casting="unsafe")
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(x, y, out=out)


def _mod_floor(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if x.dtype.kind in "iu":
        _no_zero_divisor("mod", y)
    # floats (allowed with fmod=0 since Mod-28): NumPy's floor remainder has ONNX's special cases
    with np.errstate(divide="ignore", invalid="ignore"):
        np.remainder(x, y, out=out)


def _fmod(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if x.dtype.kind in "iu":
        _no_zero_divisor("mod", y)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.fmod(x, y, out=out)


def _pow(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if x.dtype.kind == "f" or x.dtype.kind == "V" or not _is_int(x):
        # floats: in the base's precision (at least float32 for the ml_dtypes ones)
        wide = np.float64 if x.dtype == np.float64 else np.float32
        with np.errstate(all="ignore"):
            np.copyto(out, np.power(x.astype(wide, copy=False), y.astype(wide, copy=False)), casting="unsafe")
        return
    if _is_int(y) and (y.dtype.kind == "u" or not np.any(y < 0)):
        with np.errstate(all="ignore"):
            np.copyto(out, _int_power(x, y), casting="unsafe")  # exact, wrapping like C
        return
    if _is_int(y):
        _int_pow_signed(x, y, out)
        return
    with np.errstate(all="ignore"):
        r = np.trunc(np.power(x.astype(np.float64), y.astype(np.float64)))
    if not np.all(np.isfinite(r)):
        raise BroadcastError(
            "pow: an integer base raised to this float exponent has no integer result (inf or NaN)",
            mode="pow",
            accepted="exponents whose power of the base is finite",
        )
    np.copyto(out, r, casting="unsafe")


def _int_power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x ** y`` for integers and exponents >= 0, wrapped to ``x``'s type as C's repeated multiply wraps.

    An exponent wider than the base (int32 ** int64) must not be cast to the base's type first: 2**32
    would wrap to 0 and give 1. Squaring modulo 2**64 keeps the low bits exact for any width up to 64,
    so the power is taken in uint64 and then cut to the base's width.
    """
    if y.dtype.itemsize <= x.dtype.itemsize and (y.dtype.kind == x.dtype.kind or y.dtype.itemsize < x.dtype.itemsize):
        same: np.ndarray = np.power(x, y.astype(x.dtype, copy=False))  # the exponent fits the base's type
        return same
    r: np.ndarray = np.power(x.astype(np.uint64), y.astype(np.uint64)).astype(x.dtype)
    return r


def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


def _int_pow_signed(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """Integer powers with negative exponents: the real result truncated toward zero."""
    xb, yb = np.broadcast_arrays(x, y)
    neg = yb < 0
    if np.any(neg & (xb == 0)):
        raise DivisionByZeroError("pow: 0 raised to a negative integer power has no result")
    with np.errstate(all="ignore"):
        pos = _int_power(xb, np.where(neg, 0, yb))
    odd = (yb % 2) != 0
    # |x| > 1 gives a fraction that truncates to 0; x = 1 gives 1; x = -1 gives +-1
    negative = np.where(xb == 1, 1, np.where(xb == -1, np.where(odd, -1, 1), 0)).astype(x.dtype)
    np.copyto(out, np.where(neg, negative, pos), casting="unsafe")


KERNELS: dict[str, Kernel] = {"add": _add, "sub": _sub, "mul": _mul, "div": _div}
