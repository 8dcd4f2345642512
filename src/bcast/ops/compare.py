"""Equal, Greater, GreaterOrEqual, Less, LessOrEqual: multidirectional comparisons giving bool."""

from __future__ import annotations

import numpy as np

from ..operators import BY_NAME
from ._base import run_binary, ufunc_kernel

__all__ = ["KERNELS", "equal", "greater", "greater_or_equal", "less", "less_or_equal"]

EQUAL, GREATER, GREATER_OR_EQUAL, LESS, LESS_OR_EQUAL = (
    BY_NAME[n] for n in ("equal", "greater", "greater_or_equal", "less", "less_or_equal")
)

_greater, _greater_equal = ufunc_kernel(np.greater), ufunc_kernel(np.greater_equal)
_less, _less_equal = ufunc_kernel(np.less), ufunc_kernel(np.less_equal)
#: the kernels whose small calls :func:`bcast.ops._base.small_calls` may hand to their ufunc alone
KERNELS = {"greater": _greater, "greater_or_equal": _greater_equal, "less": _less, "less_or_equal": _less_equal}


def equal(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Equal``: elementwise ``a == b`` as bool; strings compare too.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.equal(np.array(["a", "b"]), np.array([["a"], ["b"]]))
    array([[ True, False],
           [False,  True]])
    """
    return run_binary(EQUAL, _equal, a, b, mode, axis, out, block=equal)


def greater(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Greater``: ``a > b`` as bool.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.greater(np.array([1, 5]), np.array(3))
    array([False,  True])
    """
    return run_binary(GREATER, _greater, a, b, mode, axis, out, block=greater)


def greater_or_equal(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``GreaterOrEqual``: ``a >= b`` as bool.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.greater_or_equal(np.array([1, 3]), np.array(3))
    array([False,  True])
    """
    return run_binary(GREATER_OR_EQUAL, _greater_equal, a, b, mode, axis, out, block=greater_or_equal)


def less(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Less``: ``a < b`` as bool.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.less(np.array([1, 5]), np.array(3))
    array([ True, False])
    """
    return run_binary(LESS, _less, a, b, mode, axis, out, block=less)


def less_or_equal(
    a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None
) -> np.ndarray:
    """ONNX ``LessOrEqual``: ``a <= b`` as bool.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.less_or_equal(np.array([3, 5]), np.array(3))
    array([ True, False])
    """
    return run_binary(LESS_OR_EQUAL, _less_equal, a, b, mode, axis, out, block=less_or_equal)


def _equal(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    if x.dtype.kind in "UO" or y.dtype.kind in "UO":
        # str and object (ONNX's usual string container) arrays compare element by element
        np.copyto(out, np.asarray(np.equal(x.astype(object), y.astype(object)), dtype=bool))
        return
    np.equal(x, y, out=out)
