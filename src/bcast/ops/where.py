"""Where: pick from X where the condition holds, else from Y; all three broadcast together."""

from __future__ import annotations

import numpy as np

from ._base import Spec, aligned, check_types, output, read
from ._types import ALL, BOOL

__all__ = ["where"]

WHERE = Spec("Where", ("X", "Y"), ALL)
_COND = Spec("Where", ("condition",), BOOL)


def where(condition: object, x: object, y: object, *, out: np.ndarray | None = None) -> np.ndarray:
    """ONNX ``Where``: ``x`` where ``condition`` is true, else ``y``, broadcast multidirectionally.

    >>> import numpy as np, bcast.ops as ops
    >>> ops.where(np.array([[True], [False]]), np.array([1, 2]), np.array(0))
    array([[1, 2],
           [0, 0]])
    """
    (cond,) = read(_COND, (condition,))
    check_types(_COND, (cond,))
    xs = read(WHERE, (x, y))
    check_types(WHERE, xs)
    ops, shape = aligned(Spec("Where", ("condition", "X", "Y"), ALL), (cond, *xs), "numpy", -1)
    dest = output(WHERE, shape, xs[0].dtype, out)
    if out is not None and any(np.may_share_memory(dest, a) for a in (cond, xs[0])):
        np.copyto(dest, np.where(ops[0], ops[1], ops[2]), casting="unsafe")  # out aliases an input
        return dest
    # copy y, then x where the condition holds: no broadcast operand is materialised
    np.copyto(dest, ops[2], casting="unsafe")
    np.copyto(dest, ops[1], where=ops[0], casting="unsafe")
    return dest
