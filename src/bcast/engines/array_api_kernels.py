"""ONNX's operator semantics, written once against an array namespace ``xp``.

Most operators are one Array API function. The rest say here where ONNX's definition
differs from the standard's: integer Div truncates toward zero, Mod with ``fmod=1`` takes
the dividend's sign (``fmod`` is not in the standard), Pow keeps the base's type, BitShift
by the type's width or more gives 0 (or -1), and an integer divisor of 0 is an error
rather than a library's undefined value.

The rules themselves (:func:`no_zero_divisor`, :func:`truncation`, :func:`float_power`,
:func:`signed_int_power`, :func:`int_float_power`, :func:`shift_counts`,
:func:`shift_fill`) and the normalisations' arithmetic (:func:`normalize_layer`,
:func:`normalize_rms`) serve both kinds of arrays: :mod:`bcast.ops`'s NumPy kernels pass
``numpy`` itself as ``xp`` (and keep their ``out=`` writes and NumPy-only fast paths),
:func:`binary`'s kernels another library's namespace. ``xp is numpy`` also picks what
NumPy before 2 names otherwise (``astype``, ``isdtype``, ``pow``).

>>> import array_api_strict as xp
>>> binary("divide")(xp, xp.asarray([7, -7]), xp.asarray([2, 2]))
Array([ 3, -3], dtype=array_api_strict.int64)
>>> binary("fmod")(xp, xp.asarray([-7, 7]), xp.asarray([3, -3]))
Array([-1,  1], dtype=array_api_strict.int64)
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import BroadcastError, DivisionByZeroError
from .common import check_copy, compat, guarded

__all__ = [
    "binary",
    "float_power",
    "gemm",
    "int_float_power",
    "is_integral",
    "layer_normalization",
    "no_zero_divisor",
    "normalize_layer",
    "normalize_rms",
    "prelu",
    "rms_normalization",
    "shift_counts",
    "shift_fill",
    "signed_int_power",
    "truncation",
]

Binary = Callable[[Any, Any, Any], Any]


# -- what NumPy and the Array API name differently -----------------------------------------


def is_integral(xp: Any, x: Any) -> bool:
    """Whether ``x`` holds integers."""
    return x.dtype.kind in "iu" if xp is np else bool(xp.isdtype(x.dtype, "integral"))


def _astype(xp: Any, x: Any, dtype: Any) -> Any:
    return x.astype(dtype, copy=False) if xp is np else xp.astype(x, dtype)


def _pow(xp: Any) -> Any:
    return np.power if xp is np else xp.pow


def _size(x: Any) -> int:
    n = 1
    for d in x.shape:
        n *= int(d)
    return n


# -- the rules ----------------------------------------------------------------------------


def no_zero_divisor(xp: Any, op: str, y: Any) -> None:
    """ONNX defines no integer division by zero (runtimes crash): a :class:`~bcast.errors.DivisionByZeroError`."""
    if not is_integral(xp, y) or not _size(y):
        return
    if xp is np:  # an integer array's truth is its being nonzero: no temporary
        if np.all(y):
            return
        zeros = int(np.count_nonzero(y == 0))
    else:
        if bool(xp.all(y != 0)):
            return
        zeros = int(xp.sum(xp.astype(y == 0, xp.int64)))
    raise DivisionByZeroError(
        f"{op}: an integer divisor is 0 (ONNX defines no result for integer division by zero); "
        f"{zeros} of the divisor's {_size(y)} elements are 0"
    )


def truncation(xp: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Integer Div as C truncates it: the floor quotient, and where to take one step back toward zero.

    The quotient is ``q + step``; the step is where a remainder has the other sign.
    """
    q = xp.floor_divide(x, y)
    step = (xp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q, step


def float_power(xp: Any, x: Any, y: Any) -> Any:
    """Pow of a float base, in the base's precision but at least float32 (float16, bfloat16): to be cast back."""
    wide = xp.float64 if x.dtype == xp.float64 else xp.float32
    return _pow(xp)(_astype(xp, x, wide), _astype(xp, y, wide))


def signed_int_power(xp: Any, x: Any, y: Any, power: Callable[[Any, Any], Any]) -> Any:
    """Pow of integers whose exponents may be negative: the real result truncated toward zero.

    ``power(x, n)`` is the namespace's exact power for exponents ``n >= 0`` (wrapping like
    C). A negative exponent gives 0 for ``|x| > 1`` (a fraction), 1 for ``x = 1`` and
    +-1 for ``x = -1``; ``0`` to a negative power has no result.
    """
    x, y = xp.broadcast_arrays(x, y)
    neg = y < 0
    if bool(xp.any(neg & (x == 0))):
        raise DivisionByZeroError("pow: 0 raised to a negative integer power has no result")
    negative = _negative_power(xp, x, y)  # first: its temporaries are freed before the power's (NumPy: faster)
    return xp.where(neg, negative, power(x, xp.where(neg, 0, y)))


def _negative_power(xp: Any, x: Any, y: Any) -> Any:
    """What a negative exponent gives: 1 for ``x = 1``, +-1 for ``x = -1`` (odd: -1), else 0 (a fraction)."""
    dtype = x.dtype
    minus_one = xp.where(xp.remainder(y, 2) != 0, xp.asarray(-1, dtype=dtype), xp.asarray(1, dtype=dtype))
    return xp.where(x == 1, 1, xp.where(x == -1, minus_one, 0))


def int_float_power(xp: Any, x: Any, y: Any) -> Any:
    """Pow of an integer base and a float exponent: computed in float64, truncated toward zero (to be cast back)."""
    r = xp.trunc(_pow(xp)(_astype(xp, x, xp.float64), _astype(xp, y, xp.float64)))
    if not bool(xp.all(xp.isfinite(r))):
        raise BroadcastError(
            "pow: an integer base raised to this float exponent has no integer result (inf or NaN)",
            mode="pow",
            accepted="exponents whose power of the base is finite",
        )
    return r


def shift_counts(xp: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """BitShift's counts: where a count is within ``x``'s width, and the counts there (0 elsewhere) in ``x``'s type."""
    bits = xp.iinfo(x.dtype).bits
    ok = (y >= 0) & (y < bits)
    return ok, _astype(xp, xp.where(ok, y, 0), x.dtype)


def shift_fill(xp: Any, x: Any) -> Any:
    """What a right shift by the width or more leaves: -1 for a negative signed value, else 0."""
    signed = x.dtype.kind == "i" if xp is np else xp.isdtype(x.dtype, "signed integer")
    if not signed:
        return 0
    return xp.where(x < 0, xp.asarray(-1, dtype=x.dtype), xp.asarray(0, dtype=x.dtype))


# -- the Array API kernels ------------------------------------------------------------------


def _divide(xp: Any, x: Any, y: Any) -> Any:
    if is_integral(xp, x):
        no_zero_divisor(xp, "div", y)
        q, step = truncation(xp, x, y)
        return q + xp.astype(step, q.dtype)
    return xp.divide(x, y)


def _remainder(xp: Any, x: Any, y: Any) -> Any:
    no_zero_divisor(xp, "mod", y)
    return xp.remainder(x, y)


def _fmod(xp: Any, x: Any, y: Any) -> Any:
    no_zero_divisor(xp, "mod", y)
    native = getattr(xp, "fmod", None)  # PyTorch, CuPy, JAX have C's fmod; the standard does not
    if native is not None:
        return native(x, y)
    # the floor remainder has the divisor's sign; where that is not the dividend's, step back by y
    r = xp.remainder(x, y)
    return xp.where((r != 0) & ((r < 0) != (x < 0)), r - y, r)


def _power(xp: Any, x: Any, y: Any) -> Any:
    dtype = x.dtype
    if not is_integral(xp, x):
        return xp.astype(float_power(xp, x, y), dtype)
    if not is_integral(xp, y):
        return xp.astype(int_float_power(xp, x, y), dtype)

    def power(b: Any, n: Any) -> Any:
        # the exponent in the base's type: a wider one's high bits are lost (bcast.ops's NumPy kernel keeps
        # them with a uint64 power, which not every library has)
        return xp.pow(b, xp.astype(n, dtype))

    if not bool(xp.any(y < 0)):
        return power(x, y)
    return signed_int_power(xp, x, y, power)


def _shift(left: bool) -> Binary:
    def shift(xp: Any, x: Any, y: Any) -> Any:
        ok, n = shift_counts(xp, x, y)
        if left:  # the two's-complement bits shift, as C's unsigned shift: wrapping, as bcast.ops does
            return xp.where(ok, xp.bitwise_left_shift(x, n), xp.zeros_like(x))
        return xp.where(ok, xp.bitwise_right_shift(x, n), shift_fill(xp, x))

    return shift


def _standard(name: str) -> Binary:
    def kernel(xp: Any, x: Any, y: Any) -> Any:
        return getattr(xp, name)(x, y)

    kernel.__name__ = name
    return kernel


_SPECIAL: dict[str, Binary] = {
    "divide": _divide,
    "remainder": _remainder,
    "fmod": _fmod,
    "pow": _power,
    "bitwise_left_shift": _shift(True),
    "bitwise_right_shift": _shift(False),
}


def binary(name: str) -> Binary:
    """The kernel ``f(xp, x, y)`` for the Array API function ``name``, with ONNX's semantics.

    >>> import array_api_strict as xp
    >>> binary("pow")(xp, xp.asarray([2, 3], dtype=xp.int32), xp.asarray([0.5]))
    Array([1, 1], dtype=array_api_strict.int32)
    """
    return _SPECIAL.get(name) or _standard(name)


def prelu(x: Any, slope: Any) -> Any:
    """ONNX ``PRelu`` on ``x`` and a ``slope`` already broadcast to it: ``x`` where ``x >= 0``, else ``slope * x``.

    >>> import array_api_strict as xp
    >>> prelu(xp.asarray([-2.0, 3.0]), xp.asarray([0.5, 0.5]))
    Array([-1.,  3.], dtype=array_api_strict.float64)
    """

    xp = compat(x).array_namespace(x, slope)
    check_copy(x, tuple(x.shape), "compute prelu", mode="prelu", copies=3)
    return guarded("prelu", [x, slope], lambda: xp.where(x < 0, x * slope, x))


def gemm(a: Any, b: Any, c: Any, alpha: float, beta: float, wide: str) -> Any:
    """ONNX ``Gemm`` on ``A'``, ``B'`` (already transposed) and ``C`` (already broadcast, or ``None``).

    The product is accumulated in the dtype named ``wide`` (as :mod:`bcast.ops.unidirectional`
    chooses it) and cast back to ``a``'s dtype, truncating toward zero for integers.

    >>> import array_api_strict as xp
    >>> gemm(xp.ones((2, 3)), xp.ones((3, 2)), None, 2.0, 1.0, "float64")
    Array([[6., 6.],
           [6., 6.]], dtype=array_api_strict.float64)
    """

    aac = compat(a)
    xp = aac.array_namespace(a, b)
    dev = aac.device(a)
    acc = getattr(xp, wide)
    shape = (int(a.shape[0]), int(b.shape[1]))
    # A' and B' in the accumulator, the product, C's scaled term, and the result (at 8 bytes an element)
    n_a, n_b = _size(a), _size(b)
    copies = 3 + -(-(n_a + n_b) // max(shape[0] * shape[1], 1))
    check_copy(a, shape, "compute A' @ B'", mode="gemm", copies=copies)

    def run() -> Any:
        y = xp.matmul(xp.astype(a, acc), xp.astype(b, acc))
        if alpha != 1.0:
            y = y * xp.asarray(alpha, dtype=acc, device=dev)
        if c is not None and beta != 0.0:
            y = y + xp.astype(c, acc) * xp.asarray(beta, dtype=acc, device=dev)
        return xp.astype(y, a.dtype)

    return guarded("gemm", [a, b, c], run)


def _dtype(xp: Any, name: str) -> Any:
    dtype = getattr(xp, name, None)
    if dtype is None:
        raise TypeError(f"the statistics need {name}, which this array library ({xp.__name__}) does not have")
    return dtype


def layer_normalization(
    x: Any, scale: Any, bias: Any, axis: int, epsilon: float, stash: str, named: str
) -> tuple[Any, Any, Any]:
    """ONNX ``LayerNormalization`` with ``scale`` and ``bias`` already broadcast to ``x``: ``(Y, Mean, InvStdDev)``.

    ``stash`` names the dtype the statistics are computed in, ``named`` the one they are
    returned in (ONNX's ``U``), as :mod:`bcast.ops.normalization` chooses them.

    >>> import array_api_strict as xp
    >>> x = xp.asarray([[1.0, 3.0]])
    >>> y, mean, inv = layer_normalization(x, xp.ones((1, 2)), None, 1, 0.0, "float64", "float32")
    >>> y, mean.dtype
    (Array([[-1.,  1.]], dtype=array_api_strict.float64), array_api_strict.float32)
    """

    aac = compat(x)
    xp = aac.array_namespace(x, scale)
    st = _dtype(xp, stash)
    # the stash copy, its centred copy and square, the scaled product, the result (float64 at most)
    check_copy(x, tuple(x.shape), "normalise X", mode="layer_normalization", copies=5)
    return guarded(
        "layer_normalization",
        [x, scale, bias],
        lambda: normalize_layer(
            xp, x, scale, bias, axis, epsilon, st, _dtype(xp, named), x.dtype, device=aac.device(x)
        ),
    )


def rms_normalization(x: Any, scale: Any, axis: int, epsilon: float, stash: str) -> Any:
    """ONNX ``RMSNormalization`` with ``scale`` already broadcast to ``x``; the result has ``scale``'s dtype.

    >>> import array_api_strict as xp
    >>> rms_normalization(xp.asarray([[3.0, 4.0]]), xp.asarray([[1.0, 2.0]]), 1, 0.0, "float64")
    Array([[0.84852814, 2.2627417 ]], dtype=array_api_strict.float64)
    """

    aac = compat(x)
    xp = aac.array_namespace(x, scale)
    st = _dtype(xp, stash)
    check_copy(x, tuple(x.shape), "normalise X", mode="rms_normalization", copies=4)
    return guarded(
        "rms_normalization",
        [x, scale],
        lambda: normalize_rms(xp, x, scale, axis, epsilon, st, scale.dtype, device=aac.device(x)),
    )


def _copy_as(xp: Any, x: Any, dtype: Any) -> Any:
    """A new array of ``x``'s values in ``dtype`` (always a copy: it is written in place with NumPy)."""
    return x.astype(dtype) if xp is np else xp.astype(x, dtype)


def _scalar(xp: Any, value: float, dtype: Any, device: Any) -> Any:
    return np.asarray(value, dtype=dtype) if xp is np else xp.asarray(value, dtype=dtype, device=device)


#: the in-place form of each operator the normalisations apply
_IN_PLACE: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {
    operator.add: operator.iadd,
    operator.sub: operator.isub,
    operator.mul: operator.imul,
    operator.truediv: operator.itruediv,
}


def _step(xp: Any, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``op(a, b)``: with NumPy into ``a`` (an array of the kernel's own, so no temporary), with another
    library a new array (some have no in-place operators, and autograd forbids writing over an input)."""
    return _IN_PLACE[op](a, b) if xp is np else op(a, b)


def normalize_layer(
    xp: Any,
    x: Any,
    scale: Any,
    bias: Any,
    axis: int,
    epsilon: float,
    stash: Any,
    named: Any,
    dtype: Any,
    *,
    device: Any = None,
) -> tuple[Any, Any, Any]:
    """LayerNormalization's arithmetic on the arrays of ``xp``: ``(Y, Mean, InvStdDev)`` over axes ``axis..``.

    ``scale`` and ``bias`` (``None``: none) broadcast to ``x``; the statistics are computed in
    ``stash`` and returned in ``named``, Y in ``dtype`` (all dtypes of ``xp``). Written once for
    every library: :func:`bcast.ops.layer_normalization` passes ``numpy`` itself, with ``scale``
    and ``bias`` already in ``stash`` (cast before they were broadcast).

    >>> import numpy as np
    >>> y, mean, inv = normalize_layer(
    ...     np, np.array([[1.0, 3.0]]), np.ones(2), None, 1, 0.0, np.float64, np.float32, np.float64
    ... )
    >>> y, mean
    (array([[-1.,  1.]]), array([[2.]], dtype=float32))
    """
    red = tuple(range(axis, x.ndim))
    diff = _copy_as(xp, x, stash)  # centred, scaled and shifted in place below (NumPy)
    mean = xp.mean(diff, axis=red, keepdims=True)
    diff = _step(xp, operator.sub, diff, mean)
    var = xp.mean(diff * diff, axis=red, keepdims=True)
    inv = 1 / xp.sqrt(var + _scalar(xp, epsilon, stash, device))
    y = _step(xp, operator.mul, diff, inv)
    y = _step(xp, operator.mul, y, _astype(xp, scale, stash))
    if bias is not None:
        y = _step(xp, operator.add, y, _astype(xp, bias, stash))
    return _astype(xp, y, dtype), _astype(xp, mean, named), _astype(xp, inv, named)


def normalize_rms(
    xp: Any, x: Any, scale: Any, axis: int, epsilon: float, stash: Any, dtype: Any, *, device: Any = None
) -> Any:
    """RMSNormalization's arithmetic on ``xp``'s arrays: ``x / sqrt(mean(x**2 over axes axis..) + eps) * scale``.

    ``scale`` broadcasts to ``x``; computed in ``stash``, returned in ``dtype``. Written once for
    every library, as :func:`normalize_layer` is.

    >>> import numpy as np
    >>> normalize_rms(np, np.array([[3.0, 4.0]]), np.array([1.0, 2.0]), 1, 0.0, np.float64, np.float64).round(4)
    array([[0.8485, 2.2627]])
    """
    y = _copy_as(xp, x, stash)  # normalised and scaled in place below (NumPy)
    ms = xp.mean(y * y, axis=tuple(range(axis, x.ndim)), keepdims=True)
    y = _step(xp, operator.truediv, y, xp.sqrt(ms + _scalar(xp, epsilon, stash, device)))
    y = _step(xp, operator.mul, y, _astype(xp, scale, stash))
    return _astype(xp, y, dtype)
