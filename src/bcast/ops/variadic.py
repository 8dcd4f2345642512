"""Max, Min, Mean, Sum: variadic ops over one or more inputs, all broadcast together."""

from __future__ import annotations

import numpy as np

from ..operators import BY_NAME, Spec
from ._base import Block, foreign, run_nary, ufunc_kernel

__all__ = ["max", "mean", "min", "sum"]

MAX, MIN, MEAN, SUM = (BY_NAME[n] for n in ("max", "min", "mean", "sum"))


def _names(n: int) -> list[str]:
    return [f"data_{i}" for i in range(n)]


def _variadic(
    spec: Spec, fn: np.ufunc, inputs: tuple[object, ...], mode: str, axis: int, out: object, block: Block
) -> np.ndarray:
    if not inputs:
        raise TypeError(f"{spec.name}: {spec.onnx} takes one or more inputs, got none")
    return run_nary(spec, ufunc_kernel(fn), inputs, mode, axis, out, _names(len(inputs)), block=block)


def max(*inputs: object, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Max``: the elementwise maximum of one or more inputs (NaN propagates).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.max(np.array([1, 5], np.int32), np.array([[3], [4]], np.int32), np.array(2, np.int32))
    array([[3, 5],
           [4, 5]], dtype=int32)
    """
    return _variadic(MAX, np.maximum, inputs, mode, axis, out, max)


def min(*inputs: object, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Min``: the elementwise minimum of one or more inputs (NaN propagates).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.min(np.array([1.0, 5.0]), np.array([3.0]))
    array([1., 3.])
    """
    return _variadic(MIN, np.minimum, inputs, mode, axis, out, min)


def sum(*inputs: object, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Sum``: the elementwise sum of one or more float inputs, added left to right.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.sum(np.ones((2, 1)), np.ones(3), np.array(1.0))
    array([[3., 3., 3.],
           [3., 3., 3.]])
    """
    return _variadic(SUM, np.add, inputs, mode, axis, out, sum)


def mean(*inputs: object, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Mean``: the elementwise mean of one or more float inputs (their sum divided by their count).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.mean(np.array([1.0, 2.0]), np.array([3.0]))
    array([2. , 2.5])
    """
    total = _variadic(MEAN, np.add, inputs, mode, axis, out, mean)
    if foreign((total,)):  # another library's engine computed the whole mean
        return total
    np.divide(total, len(inputs), out=total, casting="unsafe")
    return total
