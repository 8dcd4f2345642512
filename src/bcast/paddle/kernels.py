"""PaddlePaddle 3.x elementwise kernels (CPU), value for value, on NumPy arrays.

Each function takes two arrays already broadcast to the output shape and of one dtype,
and computes what Paddle 3.3.1's CPU functor computes (``phi/kernels/funcs/elementwise_functor.h``):

- ``div`` on integers truncates toward zero (C++ ``/``); ``floordiv`` floors and ``mod``
  takes the divisor's sign (Python's convention), on integers and floats alike;
- integer division by zero is an error, and ``INT32_MIN / -1`` (and ``//``, ``%``) kills
  Paddle's process with SIGFPE: both are errors here;
- ``pow`` on integers is ``static_cast<T>(std::pow(double, double))``: truncated toward
  zero, ``0 ** negative`` gives 0, a result out of the type's range gives its minimum;
- ``max``/``min`` propagate NaN from either side and otherwise return Y on ties
  (``max(0.0, -0.0)`` is ``-0.0``);
- ``add``/``mul`` on bool are logical or/and; complex ``div`` uses the textbook formula
  ``(a * conj(b)) / |b|**2`` (so ``x / 0`` is NaN, not inf).

Paddle's op names are :mod:`bcast.ops`'s (``floordiv`` aside, which ONNX lacks). Where Paddle's
functor is the plain one (``add``, ``sub``, ``mul``), its kernel is the operator table's
(:data:`bcast.operators.OPERATORS`) Array API function; only Paddle's own functors are written here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..engines.array_api_kernels import binary
from ..errors import DivisionByZeroError, IntegerOverflowError
from ..operators import BY_NAME

__all__ = ["DTYPES", "DTYPES_WITH_AXIS", "KERNELS", "OPS", "complex_div"]

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]

_INTS = ("uint8", "int8", "int16", "int32", "int64")
_FLOATS = ("float32", "float64")
_COMPLEX = ("complex64", "complex128")

# The dtypes each op's CPU kernel is registered for in paddlepaddle 3.3.1 (probed one by one:
# e.g. sub has no uint8/int8 kernel, mul none for uint8/int8/int16, only floordiv has float16).
DTYPES: dict[str, tuple[str, ...]] = {
    "add": ("bool", *_INTS, *_FLOATS, *_COMPLEX),
    "sub": ("int16", "int32", "int64", *_FLOATS, *_COMPLEX),
    "mul": ("bool", "int32", "int64", *_FLOATS, *_COMPLEX),
    "div": ("bool", *_INTS, *_FLOATS, *_COMPLEX),
    "floordiv": (*_INTS, "float16", *_FLOATS),
    # Paddle also runs mod on complex, with results this profile does not reproduce
    "mod": ("int32", "int64", *_FLOATS),
    "pow": ("int32", "int64", *_FLOATS, *_COMPLEX),
    "max": ("int32", "int64", *_FLOATS),
    "min": ("int32", "int64", *_FLOATS),
}

# With an axis other than -1 the legacy op runs Paddle's "raw" kernel, registered for fewer dtypes
DTYPES_WITH_AXIS: dict[str, tuple[str, ...]] = {
    **DTYPES,
    "div": ("bool", "int32", "int64", *_FLOATS, *_COMPLEX),
}


def _arr(value: object) -> np.ndarray:
    """A ufunc's result as an ndarray (a 0-d result comes back from NumPy as a scalar)."""
    return np.asarray(value)


def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "biu"


def _check_int_division(a: np.ndarray, b: np.ndarray, op: str) -> None:
    if np.any(b == 0):
        raise DivisionByZeroError(
            f"paddle: {op}: integer division by zero (Paddle raises 'Integer division by zero encountered'); "
            "Y has a 0 where X is divided by it"
        )
    if a.dtype in (np.int32, np.int64):
        low = np.iinfo(a.dtype).min
        if np.any((a == low) & (b == -1)):
            raise IntegerOverflowError(
                f"paddle: {op}: {a.dtype} minimum {low} divided by -1 overflows; Paddle 3.3.1's process dies of "
                "SIGFPE there, so there is no result to reproduce"
            )


def _wide(a: np.ndarray) -> np.ndarray:
    """Integers widened as C++ promotes them (narrow types compute in int; here int64, wrapped back)."""
    return a.astype(np.int64) if a.dtype.kind == "b" or a.dtype.itemsize < 8 else a


def _floor_div_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wa, wb = _wide(a), _wide(b)
    q: np.ndarray = np.floor_divide(wa, wb)
    return q


def complex_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Paddle's ``complex<T>`` division: ``(a * conj(b)) / (b.real**2 + b.imag**2)``, no scaling."""
    den = b.real * b.real + b.imag * b.imag
    with np.errstate(all="ignore"):
        re = (a.real * b.real + a.imag * b.imag) / den
        im = (a.imag * b.real - a.real * b.imag) / den
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.result_type(a, b))
    out.real, out.imag = re, im
    return out


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return complex_div(a, b)
    if not _is_int(a):
        with np.errstate(all="ignore"):
            return _arr(np.true_divide(a, b))
    _check_int_division(a, b, "div")
    wa, wb = _wide(a), _wide(b)
    q = _floor_div_int(a, b)
    # C++ truncates toward zero: undo the floor where the division was inexact and the signs differ
    q = q + ((wa - q * wb != 0) & ((wa < 0) != (wb < 0)))
    return _arr(q.astype(a.dtype))


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not _is_int(a):
        with np.errstate(all="ignore"):
            return _arr(np.floor_divide(a, b))
    _check_int_division(a, b, "floordiv")
    return _floor_div_int(a, b).astype(a.dtype)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):
        _check_int_division(a, b, "mod")
        return _arr(np.mod(_wide(a), _wide(b)).astype(a.dtype))
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
        # Paddle: fmod, then the divisor's sign; a zero keeps fmod's sign (mod(-0.0, 2) is -0.0)
        return _arr(np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if not _is_int(a):
        with np.errstate(all="ignore"):
            return _arr(np.power(a, b))
    info = np.iinfo(a.dtype)
    with np.errstate(all="ignore"):
        r = np.power(a.astype(np.float64), b.astype(np.float64))
    fits = (r >= float(info.min)) & (r < -float(info.min))
    out = np.where(fits, np.trunc(np.where(fits, r, 0.0)), float(info.min)).astype(a.dtype)
    out[(a == 0) & (b < 0)] = 0  # what 3.3.1's CPU build returns for 0 ** negative (not the minimum)
    return out


def _max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):
        return _arr(np.maximum(a, b))
    return _arr(np.where(np.isnan(a), a, np.where(np.isnan(b) | ~(a > b), b, a)))


def _min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):
        return _arr(np.minimum(a, b))
    return _arr(np.where(np.isnan(a), a, np.where(np.isnan(b) | ~(a < b), b, a)))


def _standard(name: str) -> Kernel:
    """The operator table's Array API function for the ``bcast.ops`` operator ``name``, on NumPy arrays
    (NumPy's ``add`` and ``multiply`` on bool are logical or and and, as Paddle's)."""
    fn = binary(BY_NAME[name].kernel_for({}))

    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _arr(fn(np, a, b))

    return kernel


#: Paddle's functors that are not the operator table's function
_OWN: dict[str, Kernel] = {
    "div": _div,
    "floordiv": _floordiv,
    "mod": _mod,
    "pow": _pow,
    "max": _max,
    "min": _min,
}

#: Each op's kernel, in the order of :data:`DTYPES`
KERNELS: dict[str, Kernel] = {name: _OWN.get(name) or _standard(name) for name in DTYPES}

OPS: tuple[str, ...] = tuple(KERNELS)
