"""Which engine computes on an array, and the three verbs every engine has, dispatched to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..alignment import Alignment
from . import numpy as numpy_engine
from .foreign import backend_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["backward", "engine_for", "materialize", "view"]


def engine_for(x: object) -> Any:
    """The engine that computes on ``x``: NumPy's for NumPy arrays, scalars and lists, else the library's.

    ``array_api_compat`` and the library are imported only when ``x`` is such an array.

    >>> engine_for(np.ones(2)).__name__, engine_for([1, 2]).__name__
    ('bcast.engines.numpy', 'bcast.engines.numpy')
    """
    if type(x) is np.ndarray:
        return numpy_engine
    return backend_of(x) or numpy_engine


def view(al: Alignment, x: npt.ArrayLike) -> Any:
    """``x`` broadcast by ``al`` on its engine: a read-only view (NumPy), the library's view otherwise."""
    return engine_for(x).view(al, x)


def materialize(al: Alignment, x: npt.ArrayLike, out: Any = None) -> Any:
    """``x`` broadcast by ``al`` into a new contiguous array on its engine, or into ``out`` (NumPy only)."""
    return engine_for(x).materialize(al, x, out)


def backward(al: Alignment, dy: npt.ArrayLike) -> Any:
    """The adjoint of ``al``: ``dy`` summed over its broadcast axes, in the data's shape, on ``dy``'s engine."""
    return engine_for(dy).backward(al, dy)
