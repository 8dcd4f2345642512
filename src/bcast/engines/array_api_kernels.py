"""ONNX's operator semantics written against any Array API namespace ``xp``.

Most operators are one Array API function. The rest say here where ONNX's definition
differs from the standard's, mirroring :mod:`bcast.ops` (whose NumPy kernels are the
reference the tests compare with): integer Div truncates toward zero, Mod with
``fmod=1`` takes the dividend's sign (``fmod`` is not in the standard), Pow keeps the
base's type, BitShift by the type's width or more gives 0 (or -1), and an integer
divisor of 0 is an error rather than a library's undefined value.

>>> import array_api_strict as xp
>>> binary("divide")(xp, xp.asarray([7, -7]), xp.asarray([2, 2]))
Array([ 3, -3], dtype=array_api_strict.int64)
>>> binary("fmod")(xp, xp.asarray([-7, 7]), xp.asarray([3, -3]))
Array([-1,  1], dtype=array_api_strict.int64)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import DivisionByZeroError
from .foreign import check_copy, compat, guarded

__all__ = ["binary", "gemm", "layer_normalization", "prelu", "rms_normalization"]

Binary = Callable[[Any, Any, Any], Any]


def _is_int(xp: Any, x: Any) -> bool:
    return bool(xp.isdtype(x.dtype, "integral"))


def _no_zero_divisor(xp: Any, op: str, y: Any) -> None:
    """ONNX defines no integer division by zero (runtimes crash): say so, as :mod:`bcast.ops` does."""
    if _is_int(xp, y) and _size(y) and not bool(xp.all(y != 0)):
        zeros = int(xp.sum(xp.astype(y == 0, xp.int64)))
        raise DivisionByZeroError(
            f"{op}: an integer divisor is 0 (ONNX defines no result for integer division by zero); "
            f"{zeros} of the divisor's {_size(y)} elements are 0"
        )


def _size(x: Any) -> int:
    n = 1
    for d in x.shape:
        n *= int(d)
    return n


def _trunc_div(xp: Any, x: Any, y: Any) -> Any:
    # C's truncation: floor, then one step back toward zero where a remainder has the other sign
    q = xp.floor_divide(x, y)
    adjust = (xp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q + xp.astype(adjust, q.dtype)


def _divide(xp: Any, x: Any, y: Any) -> Any:
    if _is_int(xp, x):
        _no_zero_divisor(xp, "div", y)
        return _trunc_div(xp, x, y)
    return xp.divide(x, y)


def _remainder(xp: Any, x: Any, y: Any) -> Any:
    _no_zero_divisor(xp, "mod", y)
    return xp.remainder(x, y)


def _fmod(xp: Any, x: Any, y: Any) -> Any:
    _no_zero_divisor(xp, "mod", y)
    native = getattr(xp, "fmod", None)  # PyTorch, CuPy, JAX have C's fmod; the standard does not
    if native is not None:
        return native(x, y)
    # the floor remainder has the divisor's sign; where that is not the dividend's, step back by y
    r = xp.remainder(x, y)
    return xp.where((r != 0) & ((r < 0) != (x < 0)), r - y, r)


def _pow(xp: Any, x: Any, y: Any) -> Any:
    dtype = x.dtype
    if not _is_int(xp, x):  # floats: in the base's precision, at least float32 (float16, bfloat16)
        wide = xp.float64 if dtype == xp.float64 else xp.float32
        return xp.astype(xp.pow(xp.astype(x, wide), xp.astype(y, wide)), dtype)
    if _is_int(xp, y):
        x, y = xp.broadcast_arrays(x, y)
        neg = y < 0
        if bool(xp.any(neg & (x == 0))):
            raise DivisionByZeroError("pow: 0 raised to a negative integer power has no result")
        pos = xp.pow(x, xp.astype(xp.where(neg, 0, y), dtype))  # exact, wrapping like C
        if not bool(xp.any(neg)):
            return pos
        # a negative exponent: |x| > 1 gives a fraction that truncates to 0; 1 gives 1; -1 gives +-1
        odd = xp.remainder(y, 2) != 0
        minus_one = xp.where(odd, xp.asarray(-1, dtype=dtype), xp.asarray(1, dtype=dtype))
        negative = xp.where(x == 1, xp.ones_like(x), xp.where(x == -1, minus_one, xp.zeros_like(x)))
        return xp.where(neg, negative, pos)
    r = xp.trunc(xp.pow(xp.astype(x, xp.float64), xp.astype(y, xp.float64)))
    if not bool(xp.all(xp.isfinite(r))):
        raise ValueError("pow: an integer base raised to this float exponent has no integer result (inf or NaN)")
    return xp.astype(r, dtype)


def _shift(left: bool) -> Binary:
    def shift(xp: Any, x: Any, y: Any) -> Any:
        bits = xp.iinfo(x.dtype).bits
        ok = (y >= 0) & (y < bits)
        n = xp.astype(xp.where(ok, y, xp.zeros_like(y)), x.dtype)
        zero = xp.zeros_like(x)
        if left:  # the two's-complement bits shift, as C's unsigned shift: wrapping, as bcast.ops does
            return xp.where(ok, xp.bitwise_left_shift(x, n), zero)
        fill = xp.where(x < 0, zero - 1, zero) if xp.isdtype(x.dtype, "signed integer") else zero
        return xp.where(ok, xp.bitwise_right_shift(x, n), fill)

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
    "pow": _pow,
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
        lambda: _layer_normalization(aac, xp, st, x, scale, bias, axis, epsilon, named),
    )


def _layer_normalization(
    array_api_compat: Any, xp: Any, st: Any, x: Any, scale: Any, bias: Any, axis: int, epsilon: float, named: str
) -> tuple[Any, Any, Any]:
    red = tuple(range(axis, x.ndim))
    xs = xp.astype(x, st)
    mean = xp.mean(xs, axis=red, keepdims=True)
    diff = xs - mean
    var = xp.mean(diff * diff, axis=red, keepdims=True)
    inv = 1 / xp.sqrt(var + xp.asarray(epsilon, dtype=st, device=array_api_compat.device(x)))
    y = diff * inv * xp.astype(scale, st)
    if bias is not None:
        y = y + xp.astype(bias, st)
    out = _dtype(xp, named)
    return xp.astype(y, x.dtype), xp.astype(mean, out), xp.astype(inv, out)


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

    def run() -> Any:
        xs = xp.astype(x, st)
        ms = xp.mean(xs * xs, axis=tuple(range(axis, x.ndim)), keepdims=True)
        eps = xp.asarray(epsilon, dtype=st, device=aac.device(x))
        return xp.astype(xs / xp.sqrt(ms + eps) * xp.astype(scale, st), scale.dtype)

    return guarded("rms_normalization", [x, scale], run)
