"""Add, Sub, Mul, Div, Pow, Mod: ONNX's multidirectional arithmetic.

Where ONNX defines a result NumPy does not give by default, the kernel says why:
integer Div truncates toward zero (C's rule), Mod follows the divisor's sign unless
``fmod=1``, and Pow keeps the base's type whatever the exponent's.
"""

from __future__ import annotations

import numpy as np

from ..engines import array_api_kernels as kernels
from ..errors import brief
from ..operators import BY_NAME
from ._base import Kernel, run_binary, ufunc_kernel

__all__ = ["add", "div", "mod", "mul", "pow", "sub"]

ADD, SUB, MUL, DIV, MOD, POW = (BY_NAME[n] for n in ("add", "sub", "mul", "div", "mod", "pow"))


_add = ufunc_kernel(np.add)
_sub = ufunc_kernel(np.subtract)
_mul = ufunc_kernel(np.multiply)


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
    return run_binary(ADD, _add, a, b, mode, axis, out, block=add)


def sub(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Sub``: ``a - b``.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.sub(np.array([5, 7], np.int32), np.array(2, np.int32))
    array([3, 5], dtype=int32)
    """
    return run_binary(SUB, _sub, a, b, mode, axis, out, block=sub)


def mul(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Mul``: ``a * b``.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.mul(np.array([[1.0], [2.0]]), np.array([10.0, 20.0]))
    array([[10., 20.],
           [20., 40.]])
    """
    return run_binary(MUL, _mul, a, b, mode, axis, out, block=mul)


def div(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Div``: ``a / b``; for integers the quotient truncated toward zero.

    Floating-point division by zero gives IEEE infinities and NaNs; an integer divisor
    of zero has no defined result in ONNX (runtimes crash), so it raises
    :class:`~bcast.errors.DivisionByZeroError` (a ``BroadcastError`` and a ``ZeroDivisionError``).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.div(np.array([7, -7], np.int64), np.array([2], np.int64))
    array([ 3, -3])
    """
    return run_binary(DIV, _div, a, b, mode, axis, out, block=div)


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
    return run_binary(MOD, _fmod if fmod else _mod_floor, a, b, mode, axis, out, {"fmod": int(fmod)}, block=mod)


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
    return run_binary(POW, _pow, x, y, mode, axis, out, block=pow)


#: the floating-point errors a kernel leaves unreported, as ``np.errstate`` arguments; the compiled
#: loops' errors are reported under them too (``quiet_errors``). Div gives IEEE's infinities and NaNs
#: quietly; Pow reports none
_DIV_QUIET = {"divide": "ignore", "invalid": "ignore"}
_POW_QUIET = {"all": "ignore"}


def _div(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if kernels.is_integral(np, x):
        kernels.no_zero_divisor(np, "div", y)
        q, step = kernels.truncation(np, x, y)
        np.add(q, step, out=out, casting="unsafe")
        return
    with np.errstate(**_DIV_QUIET):  # type: ignore[arg-type]
        np.divide(x, y, out=out)


def _mod_floor(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    kernels.no_zero_divisor(np, "mod", y)
    # floats (allowed with fmod=0 since Mod-28): NumPy's floor remainder has ONNX's special cases
    with np.errstate(divide="ignore", invalid="ignore"):
        np.remainder(x, y, out=out)


def _fmod(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    kernels.no_zero_divisor(np, "mod", y)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.fmod(x, y, out=out)


def _pow(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """ONNX's Pow by the rules of :mod:`bcast.engines.array_api_kernels`, with NumPy's exact wide integer power."""
    is_int = kernels.is_integral
    with np.errstate(**_POW_QUIET):  # type: ignore[arg-type]
        if not is_int(np, x):
            half = _half_powers(x, y, out)  # found before out is written: x may be out itself
            if x.dtype == y.dtype == out.dtype and x.dtype.char in "fd":  # NumPy's own loop, straight into out
                np.power(x, y, out=out)
            else:  # in the base's precision (at least float32 for the ml_dtypes ones)
                np.copyto(out, kernels.float_power(np, x, y), casting="unsafe")
            if half is not None:
                np.copyto(out, np.inf, where=half[0])
                np.copyto(out, 0.0, where=half[1])
            return
        if is_int(np, y) and (y.dtype.kind == "u" or not np.any(y < 0)):
            np.copyto(out, _int_power(x, y), casting="unsafe")  # exact, wrapping like C
            return
        r = kernels.signed_int_power(np, x, y, _int_power) if is_int(np, y) else kernels.int_float_power(np, x, y)
    np.copyto(out, r, casting="unsafe")  # a truncated float power beyond the base's range warns, as NumPy's casts do


def _half_powers(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Where pow of a float base must be set to inf (a base of -inf) and to 0.0 (a base of -0.0) after NumPy's
    power: with an exponent of 0.5, pow gives those (C99, ONNX Runtime, NumPy's loop over an exponent per element),
    but NumPy's loop takes a square root where one exponent of 0.5 serves a whole run of bases (a 0-d or broadcast
    exponent), and gives nan and -0.0, a result that would depend on the exponent's layout. ``None``: nowhere."""
    if y.shape == out.shape and 0 not in y.strides:  # an exponent per element: NumPy's loop calls pow
        return None
    half = y == 0.5
    if not half.any():
        return None
    negative = half & np.signbit(x)
    return negative & np.isinf(x), negative & (x == 0)


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


_div.quiet_errors = _DIV_QUIET  # type: ignore[attr-defined]
_pow.quiet_errors = _POW_QUIET  # type: ignore[attr-defined]

KERNELS: dict[str, Kernel] = {"add": _add, "sub": _sub, "mul": _mul, "div": _div}
