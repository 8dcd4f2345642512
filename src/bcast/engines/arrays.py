"""Array verbs on the alignment: an operand read as an array, and a broadcast view of it on its engine.

Shared by the public functions (:func:`bcast.expand`, :func:`bcast.broadcast_like`) and
the operators that broadcast (ONNX ``Expand``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..alignment import Alignment
from ..dims import ShapeLike, shape_text
from ..errors import BroadcastError
from ..rules import make_plan
from .dispatch import view
from .foreign import foreign_namespace, shape_of
from .memory import NUMPY_MAX_DIMS
from .numpy import as_array

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["broadcast_view", "check_output_rank", "expand", "operand"]


def check_output_rank(p: Alignment) -> None:
    """A ``BroadcastError`` when the plan's output has more dims than a NumPy array can (64)."""
    rank = p.output_shape.rank
    if rank is not None and rank > NUMPY_MAX_DIMS:
        raise BroadcastError(
            f"{p.mode}: cannot make an array of shape {shape_text(p.output_shape)}: its {rank:,} dims are more "
            f"than the {NUMPY_MAX_DIMS} a NumPy array may have (the plan itself is fine: bcast.plan and "
            "bcast.infer take it)",
            mode=p.mode,
            shapes=p.given,
            accepted=f"an output of at most {NUMPY_MAX_DIMS} dims",
        )


def broadcast_view(x: npt.ArrayLike, target: ShapeLike, mode: str, **attrs: Any) -> np.ndarray:
    """``x`` (any array, on its own engine) broadcast to ``target`` in ``mode``: a read-only view."""
    arr = operand(x)
    p = make_plan(shape_of(arr, mode), target, mode, **attrs)
    if type(arr) is np.ndarray:
        check_output_rank(p)
    return view(p, arr)  # type: ignore[no-any-return]


def expand(x: npt.ArrayLike, shape: ShapeLike) -> np.ndarray:
    """ONNX ``Expand``: bidirectional broadcast of ``x`` with ``shape`` (a read-only view).

    >>> import bcast, numpy as np
    >>> bcast.expand(np.zeros((3, 1)), (2, 1, 6)).shape
    (2, 3, 6)
    """
    return broadcast_view(x, shape, "bidirectional")


def operand(x: object, what: str = "x") -> np.ndarray:
    """``x`` as an ndarray, or as it is when it is another library's array (the plan then runs on its engine)."""
    if type(x) is np.ndarray or foreign_namespace(x) is not None:
        return x  # type: ignore[return-value]
    return as_array(x, what)
