"""PRelu and Gemm: one operand (slope, C) broadcast one way to the other's shape."""

from __future__ import annotations

import operator

import numpy as np

from ..dims import Shape
from ..engines import array_api_kernels as kernels
from ..engines.common import accumulator
from ..engines.foreign import numpy_dtype
from ..engines.memory import check_allocations
from ..engines.numpy import native
from ..errors import BroadcastError, brief
from ..operators import BY_NAME
from ._base import (
    as_library,
    check_types,
    copy_into,
    deliver,
    foreign,
    no_out,
    output,
    overlapping,
    read,
    unidirectional,
)
from ._types import float32_attribute

__all__ = ["gemm", "prelu"]

PRELU, GEMM = BY_NAME["prelu"], BY_NAME["gemm"]


def prelu(x: object, slope: object, *, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``PRelu``: ``x`` where ``x >= 0``, else ``slope * x``; ``slope`` broadcasts unidirectionally to ``x``.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.prelu(np.array([[-2.0, 3.0], [-4.0, 5.0]]), np.array([0.5, 0.1]))
    array([[-1.,  3.],
           [-2.,  5.]])
    """
    xa, sa = read(PRELU, (x, slope))
    check_types(PRELU, (xa, sa))
    s = unidirectional(PRELU, sa, "slope", tuple(xa.shape), "X")
    if foreign((xa, sa)):  # another library's arrays (one library: read checked)
        no_out(PRELU, out, xa)
        return kernels.prelu(*as_library(xa, s))  # type: ignore[no-any-return]
    dest = output(PRELU, xa.shape, xa.dtype, out)
    if out is not None and (overlapping(dest, (s,)) or (overlapping(dest, (xa,)) and not _same_layout(dest, xa))):
        # out overlaps x or the slope shifted: writing one element would change an input another still reads
        with np.errstate(over="ignore"):
            return copy_into(dest, np.where(xa < 0, np.multiply(xa, s, dtype=xa.dtype), xa))
    neg = xa < 0  # taken first: out may be x itself, and the multiply must not change which elements are negative
    with np.errstate(over="ignore"):
        np.multiply(xa, s, out=dest, where=neg, casting="unsafe")
    np.copyto(dest, xa, where=~neg)
    return dest


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` are the same elements in the same order (``out=x``): elementwise in place is safe."""
    return bool(
        a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def _flag(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"gemm: {name} must be 0 or 1, got {brief(value)} ({type(value).__name__})")
    flag = operator.index(value)
    if flag not in (0, 1):
        raise BroadcastError(f"gemm: {name} must be 0 or 1, got {brief(flag, 40)}", mode="gemm", accepted="0 or 1")
    return flag


def _number(name: str, value: object) -> float:
    return float32_attribute("gemm", name, value)  # ONNX's alpha and beta are FLOAT attributes: 0.1 is float32(0.1)


def gemm(
    a: object,
    b: object,
    c: object = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    trans_a: int = 0,
    trans_b: int = 0,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """ONNX ``Gemm``: ``alpha * A' @ B' + beta * C``, with C broadcast unidirectionally to ``(M, N)``.

    ``A'`` is ``A`` transposed when ``trans_a`` is 1 (likewise ``B``); ``C`` may be omitted.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.gemm(np.ones((2, 3)), np.ones((3, 4)), np.array([0.0, 1.0, 2.0, 3.0]), beta=2.0)
    array([[3., 5., 7., 9.],
           [3., 5., 7., 9.]])
    """
    al, be = _number("alpha", alpha), _number("beta", beta)
    ta, tb = _flag("trans_a", trans_a), _flag("trans_b", trans_b)
    names = ("A", "B") if c is None else ("A", "B", "C")
    arrays = read(GEMM, (a, b) if c is None else (a, b, c), names)
    check_types(GEMM, arrays, names)
    am, bm = arrays[0], arrays[1]
    for name, m in (("A", am), ("B", bm)):
        if m.ndim != 2:
            raise BroadcastError(
                f"gemm: input {name} must be a matrix (rank 2), got shape {Shape(m.shape)}",
                mode="gemm",
                shapes=(str(Shape(am.shape)), str(Shape(bm.shape))),
            )
    am = am.T if ta else am
    bm = bm.T if tb else bm
    if am.shape[1] != bm.shape[0]:
        raise BroadcastError(
            f"gemm: the inner dims differ: A' is {Shape(am.shape)} and B' is {Shape(bm.shape)} "
            f"(trans_a={ta}, trans_b={tb}); A's K is {am.shape[1]}, B's K is {bm.shape[0]}",
            mode="gemm",
            shapes=(str(Shape(arrays[0].shape)), str(Shape(arrays[1].shape))),
            dims=(str(am.shape[1]), str(bm.shape[0])),
            accepted=f"B' with {am.shape[1]} rows",
        )
    shape = (int(am.shape[0]), int(bm.shape[1]))
    cv = None if c is None else unidirectional(GEMM, arrays[2], "C", shape, "A' @ B'")
    if foreign(arrays):  # another library's arrays
        wide_name = _accumulator(numpy_dtype(am.dtype), al, be).name  # type: ignore[arg-type]
        ga, gb, *gc = as_library(am, bm, *([] if cv is None else [cv]))
        no_out(GEMM, out, ga)
        return kernels.gemm(ga, gb, gc[0] if gc else None, al, be, wide_name)  # type: ignore[no-any-return]
    wide = _accumulator(am.dtype, al, be)
    _check_room(arrays, am, bm, shape, wide, cv is not None and be != 0.0)
    y = np.matmul(am.astype(wide, copy=False), bm.astype(wide, copy=False))
    if al != 1.0:
        y *= np.asarray(al).astype(wide)
    if cv is not None and be != 0.0:
        y += cv.astype(wide, copy=False) * np.asarray(be).astype(wide)
    return deliver(GEMM, y, shape, am.dtype, out)


def _check_room(
    arrays: list[np.ndarray], am: np.ndarray, bm: np.ndarray, shape: tuple[int, int], wide: np.dtype, with_c: bool
) -> None:
    """Refuse, before computing, a Gemm whose product and intermediates do not fit: A' and B' in the
    accumulator type (when they are not in it), the product, C's scaled term, and the result in A's type."""
    check_allocations(
        [
            (tuple(am.shape), wide, 0 if am.dtype == wide else 1),
            (tuple(bm.shape), wide, 0 if bm.dtype == wide else 1),
            (shape, wide, 2 if with_c else 1),
            (shape, am.dtype, 0 if am.dtype == wide else 1),
        ],
        mode="gemm",
        given=tuple(str(Shape(a.shape)) for a in arrays[:2]),
        what=f"compute A' @ B' of shape {Shape(shape)} ({wide})",
        hint="multiply smaller blocks of A and B",
    )


def _accumulator(dtype: np.dtype, alpha: float, beta: float) -> np.dtype:
    """The engines' accumulator (half floats in float32, integers in their own type, wrapping as
    runtimes do), but float64 for integers when alpha or beta has a fraction (truncated at the end)."""
    if dtype.kind in "iu" and not (alpha.is_integer() and beta.is_integer()):
        return np.dtype(np.float64)
    return accumulator(native(dtype))
