"""The engines: each executes an :class:`~bcast.alignment.Alignment` on one kind of array.

- :mod:`bcast.engines.numpy`: NumPy arrays (read-only views, checked copies into ``out=``,
  threaded kernels, the buffer pool).
- :mod:`bcast.engines.array_api`: any other Array API library (PyTorch, CuPy, JAX...),
  through ``array-api-compat``.
- :mod:`bcast.engines.dask`: Dask arrays, lazily, block by block.

:func:`engine_for` picks one from the array; the checks on foreign arrays (which library,
which device, whether the optional package is there) live once, in
:mod:`bcast.engines.foreign`. Engines never decide shapes: they read the alignment, and a
symbolic one is first specialised to the array's shape by :func:`bcast.rules.specialize`.

Every engine provides::

    view(al, x)                    # x broadcast by the alignment: a view where the library has them
    materialize(al, x, out=None)   # a new contiguous array (out=: NumPy only)
    backward(al, dy)               # dy summed over the broadcast axes, in the data's shape
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..alignment import Alignment
from . import numpy as numpy_engine
from .foreign import Backend, MissingExtraError, backend_of, foreign_namespace, shape_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = [
    "Backend",
    "MissingExtraError",
    "backward",
    "engine_for",
    "foreign_namespace",
    "materialize",
    "numpy_engine",
    "shape_of",
    "view",
]


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
