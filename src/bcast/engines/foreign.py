"""Arrays of other libraries (PyTorch, CuPy, JAX, Dask, ...) through the Array API standard.

NumPy arrays never come here: every public function first checks ``type(x) is
np.ndarray`` and keeps the NumPy engine's fast path. Anything else is looked at once,
cheaply (its type's top-level module, or an ``__array_namespace__`` method), and only an
array of another library makes bcast import ``array_api_compat``, whose namespace then
runs the plan. ``import bcast`` imports none of these libraries.

The engine interface, one module per kind of array (:mod:`bcast.engines.array_api` for
any Array API namespace, ``bcast.engines.dask`` for Dask when present)::

    view(plan, x)           # x broadcast by the plan: a view where the library has them
    materialize(plan, x, out=None)  # a new contiguous array on x's device (out=: a TypeError)
    backward(plan, dy)      # dy summed over the plan's broadcast axes, in the data's shape
    elementwise(spec_name, kernel_name, arrays, ep, *, block=None, **attrs)

``elementwise`` computes the ONNX operator ``spec_name`` (``"add"``, ``"mod"``,
``"where"``, ... the :mod:`bcast.ops` names) on ``arrays`` (one library, one device,
types already checked) whose shapes ``ep`` (an :class:`~bcast.plan.ElementwiseAlignment`)
broadcasts together, and returns the whole result, ``mean`` included. ``kernel_name``
names the Array API function that does it (:data:`KERNEL_NAMES`, read from the operator
table :mod:`bcast.operators`), and ``attrs`` carries the operator's attributes that change
the result (``mod``'s ``fmod``, ``bitshift``'s ``direction``). ``block`` is the operator's
public function for NumPy arrays, which :mod:`bcast.ops` passes down: an engine whose
arrays are made of NumPy blocks (Dask) runs it on each set of blocks; the others ignore it.

Views and aliasing follow each library's own ``broadcast_to``. For PyTorch that is
``Tensor.expand``: ``bcast.broadcast_to(t, shape)``, ``bcast.expand(t, shape)`` and a
plan called on ``t`` return a view that *aliases* ``t`` (same storage, stride 0 along the
broadcast axes): a later in-place write into ``t`` shows through the view, and PyTorch
refuses in-place writes into the view itself (its elements overlap). It is not a
read-only copy as NumPy's view is; ``copy=True`` (``materialize``) gives a tensor of its
own. Copies are checked before they are made, as NumPy's are: a result too big for the
memory there is (on the CPU) is a :class:`~bcast.errors.BroadcastError`, never a
``MemoryError`` or PyTorch's allocator error.

Arrays of these libraries need ``array-api-compat`` (``pip install "bcast[array-api]"``;
Dask: ``pip install "bcast[dask]"``); without it, such an array is a :class:`MissingExtraError`
(a ``TypeError`` and an ``ImportError``) that says so.

>>> import numpy as np
>>> foreign_namespace(np.ones(3)) is None, foreign_namespace([1, 2]) is None
(True, True)
>>> backend_of(3.0) is None
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..alignment import Alignment, ElementwiseAlignment
from ..operators import KERNEL_NAMES, kernel_name
from .common import (
    MAX_ELEMENTS,
    ForeignDType,
    MissingExtraError,
    check_copy,
    compat,
    guarded,
    is_out_of_memory,
    library,
    library_root,
    numpy_dtype,
    on_host,
)

__all__ = [
    "KERNEL_NAMES",
    "MAX_ELEMENTS",
    "Backend",
    "ForeignDType",
    "MissingExtraError",
    "backend_for",
    "backend_of",
    "check_copy",
    "compat",
    "foreign_namespace",
    "guarded",
    "is_dask",
    "is_out_of_memory",
    "kernel_name",
    "library",
    "numpy_dtype",
    "on_host",
    "one_library",
    "shape_of",
]

#: Top-level modules whose array types array-api-compat knows (looked at before any import).
#: this package, where the engines for foreign arrays live
_PACKAGE = __name__.rpartition(".")[0]

_ROOTS = frozenset({"torch", "cupy", "cupyx", "jax", "jaxlib", "dask", "array_api_strict", "sparse", "ndonnx"})
#: What NumPy reads natively: never another library's array.
_NATIVE = (np.ndarray, np.generic, bool, int, float, complex, str, bytes, list, tuple, type(None))


def foreign_namespace(x: object) -> Any:
    """The Array API namespace of ``x`` when it is another library's array, else ``None``.

    ``None`` for NumPy arrays and scalars, Python scalars and lists, and anything
    array-api-compat does not know; ``array_api_compat`` is imported only for an array
    that looks like one of its libraries'. An array of a library it knows (PyTorch, CuPy,
    JAX, Dask...) while array-api-compat is not installed is a :class:`MissingExtraError`.

    >>> import numpy as np
    >>> foreign_namespace(np.float32(1)) is None, foreign_namespace("a") is None
    (True, True)
    """
    if isinstance(x, _NATIVE):
        return None
    known = library_root(x) in _ROOTS
    if not known:
        try:
            if not hasattr(x, "__array_namespace__"):
                return None
        except Exception:  # a hostile __getattr__: not an array this module knows
            return None
        try:
            import array_api_compat
        except ImportError:  # an unknown library's array: NumPy may still read it
            return None
    else:
        array_api_compat = compat(x)
    try:
        return array_api_compat.array_namespace(x)
    except Exception:  # an object with __array_namespace__ that array-api-compat does not take (or that raises)
        return None


class Backend(Protocol):
    """What an engine for another library's arrays provides (see the module's docstring)."""

    def view(self, plan: Alignment, x: Any) -> Any: ...

    def materialize(self, plan: Alignment, x: Any, out: object = None) -> Any: ...

    def backward(self, plan: Alignment, dy: Any) -> Any: ...

    def elementwise(
        self,
        spec_name: str,
        kernel_name: str,
        arrays: Sequence[Any],
        ep: ElementwiseAlignment,
        *,
        block: Callable[..., Any] | None = None,
        **attrs: Any,
    ) -> Any: ...


def is_dask(xp: Any) -> bool:
    """Whether ``xp`` is Dask's namespace (as array-api-compat wraps it, or dask.array itself)."""
    return str(getattr(xp, "__name__", "")).startswith(("dask", "array_api_compat.dask"))


def backend_for(xp: Any) -> Backend:
    """The engine for arrays of namespace ``xp``: Dask's own when it is there, else the generic one."""
    if is_dask(xp):
        try:
            dask_engine: Backend = importlib.import_module(f"{_PACKAGE}.dask")
            return dask_engine
        except ModuleNotFoundError as e:
            if e.name != f"{_PACKAGE}.dask":  # a missing dependency inside it is a real error
                raise
    from . import array_api

    return array_api


def backend_of(x: object) -> Backend | None:
    """The engine for ``x`` when it is another library's array; ``None`` for what NumPy handles."""
    xp = foreign_namespace(x)
    return None if xp is None else backend_for(xp)


def shape_of(x: Any, mode: str | None = None) -> tuple[int, ...]:
    """``x``'s shape as ints; for a Dask array with an unknown size (``nan``), a ``BroadcastError``.

    >>> import numpy as np
    >>> shape_of(np.ones((2, 3)))
    (2, 3)
    """
    if type(x).__module__.partition(".")[0] == "dask":
        from .dask import known_shape

        return known_shape(x, mode)
    return tuple(x.shape)


def one_library(what: str, values: Sequence[object], names: Sequence[str]) -> Any:
    """The namespace all of ``values`` share, checking that none is NumPy's or on another device.

    Called once some input is another library's array: an operator does not mix
    libraries or devices (nor convert behind the user's back), so a NumPy array, a
    Python scalar or a tensor on another device next to it is a ``TypeError`` naming both.
    Dask is the exception: it takes NumPy operands into its graph as they are.
    """
    first: tuple[str, object, Any, Any] | None = None
    for v, n in zip(values, names, strict=True):
        xp = foreign_namespace(v)
        if xp is None:
            continue
        dev = compat(v).device(v)
        if first is None:
            first = (n, v, xp, dev)
        elif xp is not first[2] or dev != first[3]:
            raise TypeError(
                f"{what}: inputs {first[0]} ({library(first[1])} on {first[3]}) and {n} ({library(v)} on {dev}) "
                "are arrays of different libraries or devices; move them to one first"
            )
    if first is None:  # pragma: no cover - called only when some input is foreign
        raise TypeError(f"{what}: no input is an Array API array")
    if is_dask(first[2]):  # dask takes NumPy operands as they are (they become single-block arrays)
        return first[2]
    for v, n in zip(values, names, strict=True):
        if foreign_namespace(v) is None:
            raise TypeError(
                f"{what}: input {n} is a {library(v)} but input {first[0]} is a {library(first[1])}; "
                f"inputs must all be arrays of one library (convert {n} with the namespace's asarray on "
                f"device {first[3]})"
            )
    return first[2]
