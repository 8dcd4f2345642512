"""Arrays of other libraries (PyTorch, CuPy, JAX, Dask, ...) through the Array API standard.

NumPy arrays never come here: every public function first checks ``type(x) is
np.ndarray`` and keeps the NumPy engine's fast path. Anything else is looked at once,
cheaply (its type's top-level module, or an ``__array_namespace__`` method), and only an
array of another library makes bcast import ``array_api_compat``, whose namespace then
runs the plan. ``import bcast`` imports none of these libraries.

The engine interface, one module per kind of array (:mod:`bcast.backends.generic` for
any Array API namespace, ``bcast.backends.dask_impl`` for Dask when present)::

    view(plan, x)           # x broadcast by the plan: a view where the library has them
    materialize(plan, x, out=None)  # a new contiguous array on x's device (out=: a TypeError)
    backward(plan, dy)      # dy summed over the plan's broadcast axes, in the data's shape
    elementwise(spec_name, kernel_name, arrays, ep, **attrs)

``elementwise`` computes the ONNX operator ``spec_name`` (``"add"``, ``"mod"``,
``"where"``, ... the :mod:`bcast.ops` names) on ``arrays`` (one library, one device,
types already checked) whose shapes ``ep`` (an :class:`~bcast.plan.ElementwisePlan`)
broadcasts together, and returns the whole result, ``mean`` included. ``kernel_name``
names the Array API function that does it (:data:`KERNEL_NAMES`), and ``attrs`` carries
the operator's attributes that change the result (``mod``'s ``fmod``, ``bitshift``'s
``direction``).

>>> import numpy as np
>>> foreign_namespace(np.ones(3)) is None, foreign_namespace([1, 2]) is None
(True, True)
>>> backend_of(3.0) is None
True
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - plan.py imports this module
    from ..plan import ElementwisePlan, Plan

__all__ = [
    "KERNEL_NAMES",
    "Backend",
    "ForeignDType",
    "backend_for",
    "backend_of",
    "foreign_namespace",
    "is_dask",
    "kernel_name",
    "library",
    "numpy_dtype",
    "one_library",
    "shape_of",
]

#: Top-level modules whose array types array-api-compat knows (looked at before any import).
_ROOTS = frozenset({"torch", "cupy", "cupyx", "jax", "jaxlib", "dask", "array_api_strict", "sparse", "ndonnx"})
#: What NumPy reads natively: never another library's array.
_NATIVE = (np.ndarray, np.generic, bool, int, float, complex, str, bytes, list, tuple, type(None))


def foreign_namespace(x: object) -> Any:
    """The Array API namespace of ``x`` when it is another library's array, else ``None``.

    ``None`` for NumPy arrays and scalars, Python scalars and lists, and anything
    array-api-compat does not know; ``array_api_compat`` is imported only for an array
    that looks like one of its libraries'.

    >>> import numpy as np
    >>> foreign_namespace(np.float32(1)) is None, foreign_namespace("a") is None
    (True, True)
    """
    if isinstance(x, _NATIVE):
        return None
    if type(x).__module__.partition(".")[0] not in _ROOTS and not hasattr(x, "__array_namespace__"):
        return None
    import array_api_compat

    try:
        return array_api_compat.array_namespace(x)
    except TypeError:  # an object with __array_namespace__ that array-api-compat does not take
        return None


class Backend(Protocol):
    """What an engine for another library's arrays provides (see the module's docstring)."""

    def view(self, plan: Plan, x: Any) -> Any: ...

    def materialize(self, plan: Plan, x: Any, out: object = None) -> Any: ...

    def backward(self, plan: Plan, dy: Any) -> Any: ...

    def elementwise(
        self, spec_name: str, kernel_name: str, arrays: Sequence[Any], ep: ElementwisePlan, **attrs: Any
    ) -> Any: ...


def is_dask(xp: Any) -> bool:
    """Whether ``xp`` is Dask's namespace (as array-api-compat wraps it, or dask.array itself)."""
    return str(getattr(xp, "__name__", "")).startswith(("dask", "array_api_compat.dask"))


def backend_for(xp: Any) -> Backend:
    """The engine for arrays of namespace ``xp``: Dask's own when it is there, else the generic one."""
    if is_dask(xp):
        try:
            dask_engine: Backend = importlib.import_module(f"{__name__}.dask_impl")
            return dask_engine
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.dask_impl":  # a missing dependency inside it is a real error
                raise
    from . import generic

    return generic


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
        from .dask_impl import known_shape

        return known_shape(x, mode)
    return tuple(x.shape)


def library(x: object) -> str:
    """The name a message gives ``x``'s kind of array: ``torch.Tensor``, ``numpy.ndarray``, ``float``...

    >>> import numpy as np
    >>> library(np.ones(2)), library(2.0)
    ('numpy.ndarray', 'float')
    """
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.partition('.')[0]}.{t.__name__}"


def one_library(what: str, values: Sequence[object], names: Sequence[str]) -> Any:
    """The namespace all of ``values`` share, checking that none is NumPy's or on another device.

    Called once some input is another library's array: an operator does not mix
    libraries or devices (nor convert behind the user's back), so a NumPy array, a
    Python scalar or a tensor on another device next to it is a ``TypeError`` naming both.
    Dask is the exception: it takes NumPy operands into its graph as they are.
    """
    import array_api_compat

    first: tuple[str, object, Any, Any] | None = None
    for v, n in zip(values, names, strict=True):
        xp = foreign_namespace(v)
        if xp is None:
            continue
        dev = array_api_compat.device(v)
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


@dataclass(frozen=True)
class ForeignDType:
    """A dtype that NumPy lacks (``bfloat16`` without ml_dtypes, ``float8_*``), named for the type checks."""

    name: str
    kind: str = "V"

    def __str__(self) -> str:
        return self.name


_STANDARD = frozenset({"bool", "float16", "float32", "float64", "complex64", "complex128"}) | frozenset(
    f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)
)


def numpy_dtype(dtype: object) -> np.dtype[Any] | ForeignDType:
    """The NumPy dtype equal to another library's ``dtype`` (torch's, array-api-strict's...), for ONNX's types.

    >>> import numpy as np
    >>> numpy_dtype(np.dtype(np.int8)), numpy_dtype("torch.bfloat16")
    (dtype('int8'), ForeignDType(name='bfloat16', kind='V'))
    """
    if isinstance(dtype, np.dtype):
        return dtype
    name = str(dtype).rsplit(".", 1)[-1]
    return np.dtype(name) if name in _STANDARD else ForeignDType(name)


#: The Array API function that computes each binary or variadic ``bcast.ops`` operator.
KERNEL_NAMES = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "pow": "pow",
    "mod": "remainder",
    "equal": "equal",
    "greater": "greater",
    "greater_or_equal": "greater_equal",
    "less": "less",
    "less_or_equal": "less_equal",
    "and_": "logical_and",
    "or_": "logical_or",
    "xor": "logical_xor",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "bitshift": "bitwise_left_shift",
    "max": "maximum",
    "min": "minimum",
    "sum": "add",
    "mean": "mean",
    "where": "where",
}


def kernel_name(spec_name: str, attrs: dict[str, Any]) -> str:
    """The Array API function for ``spec_name`` with these attributes (``fmod=1``: ``fmod``, not in the standard).

    >>> kernel_name("mod", {"fmod": 1}), kernel_name("bitshift", {"direction": "RIGHT"})
    ('fmod', 'bitwise_right_shift')
    """
    if spec_name == "mod" and attrs.get("fmod"):
        return "fmod"
    if spec_name == "bitshift" and attrs.get("direction") == "RIGHT":
        return "bitwise_right_shift"
    return KERNEL_NAMES[spec_name]
