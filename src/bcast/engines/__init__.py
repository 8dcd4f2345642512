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

from . import numpy as numpy_engine
from .dispatch import backward, engine_for, materialize, view
from .foreign import Backend, MissingExtraError, foreign_namespace, shape_of

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
