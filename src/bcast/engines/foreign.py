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
    elementwise(spec_name, kernel_name, arrays, ep, **attrs)

``elementwise`` computes the ONNX operator ``spec_name`` (``"add"``, ``"mod"``,
``"where"``, ... the :mod:`bcast.ops` names) on ``arrays`` (one library, one device,
types already checked) whose shapes ``ep`` (an :class:`~bcast.plan.ElementwiseAlignment`)
broadcasts together, and returns the whole result, ``mean`` included. ``kernel_name``
names the Array API function that does it (:data:`KERNEL_NAMES`), and ``attrs`` carries
the operator's attributes that change the result (``mod``'s ``fmod``, ``bitshift``'s
``direction``).

Views and aliasing follow each library's own ``broadcast_to``. For PyTorch that is
``Tensor.expand``: ``bcast.broadcast_to(t, shape)``, ``bcast.expand(t, shape)`` and a
plan called on ``t`` return a view that *aliases* ``t`` (same storage, stride 0 along the
broadcast axes): a later in-place write into ``t`` shows through the view, and PyTorch
refuses in-place writes into the view itself (its elements overlap). It is not a
read-only copy as NumPy's view is; ``copy=True`` (``materialize``) gives a tensor of its
own. Copies are checked before they are made, as NumPy's are: a result too big for the
memory there is (on the CPU) is a :class:`~bcast.errors.BroadcastError`, never a
``MemoryError`` or PyTorch's allocator error.

Arrays of these libraries need ``array-api-compat`` (``pip install 'bcast[array-api]'``;
Dask: ``'bcast[dask]'``); without it, such an array is a :class:`MissingExtraError`
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
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from ..alignment import Alignment, ElementwiseAlignment
from ..errors import BroadcastError, as_given
from .memory import check_allocation
from .memory import out_of_memory as oom_error

__all__ = [
    "KERNEL_NAMES",
    "Backend",
    "ForeignDType",
    "MissingExtraError",
    "backend_for",
    "backend_of",
    "check_copy",
    "foreign_namespace",
    "guarded",
    "is_dask",
    "kernel_name",
    "library",
    "numpy_dtype",
    "on_host",
    "one_library",
    "out_of_memory",
    "shape_of",
]

#: Top-level modules whose array types array-api-compat knows (looked at before any import).
#: this package, where the engines for foreign arrays live
_PACKAGE = __name__.rpartition(".")[0]

_ROOTS = frozenset({"torch", "cupy", "cupyx", "jax", "jaxlib", "dask", "array_api_strict", "sparse", "ndonnx"})
#: What NumPy reads natively: never another library's array.
_NATIVE = (np.ndarray, np.generic, bool, int, float, complex, str, bytes, list, tuple, type(None))


class MissingExtraError(TypeError, ModuleNotFoundError):
    """An array of another library given to bcast without the optional package that computes on it.

    Both a ``TypeError`` (bcast cannot take this input as things are) and a
    ``ModuleNotFoundError`` (what is missing is a package); the message names the
    ``pip install`` to run.
    """


def _root(x: object) -> str:
    return str(getattr(type(x), "__module__", "") or "").partition(".")[0]


def compat(x: object) -> Any:
    """``array_api_compat``, or the :class:`MissingExtraError` naming the extra that brings it."""
    try:
        import array_api_compat
    except ImportError:  # not installed, or blocked (sys.modules entry None)
        extra = "dask" if _root(x) == "dask" else "array-api"
        err = MissingExtraError(
            f"bcast: a {library(x)} is computed on through the Array API, which needs the array-api-compat "
            f"package; install it with: pip install 'bcast[{extra}]'"
        )
        err.name = "array_api_compat"
        raise err from None
    return array_api_compat


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
    known = _root(x) in _ROOTS
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


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is a library's way of saying an allocation failed (PyTorch's allocator raises RuntimeError)."""
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":
        return True
    if not isinstance(e, RuntimeError):
        return False
    text = str(e)[:300].lower()
    return any(
        phrase in text
        for phrase in ("not enough memory", "out of memory", "can't allocate memory", "cannot allocate memory")
    )


#: the most elements an array of another library may have (PyTorch counts them in an int64)
MAX_ELEMENTS = 2**63 - 1

_T = TypeVar("_T")


def on_host(x: Any) -> bool:
    """Whether ``x`` lives in this machine's memory (a CPU device), where the RAM checks apply."""
    try:
        dev = compat(x).device(x)
    except Exception:  # a library without devices: NumPy-backed
        return True
    text = str(getattr(dev, "type", dev)).lower()
    return "cpu" in text or text in ("", "none")


def check_copy(x: Any, shape: tuple[int, ...], what: str, *, mode: str | None = None, copies: int = 1) -> None:
    """Refuse, before a library allocates it, a result of ``shape`` (in ``x``'s dtype) too big for the machine.

    ``copies`` arrays of that size are alive at once (the result and its intermediates).
    Off the CPU only the element count is checked (the device's memory is the library's to judge).
    """
    n = 1
    for d in shape:
        n *= d
    if n > MAX_ELEMENTS:
        raise BroadcastError(
            f"{mode + ': ' if mode else ''}cannot {what}: a {library(x)} of shape {as_given(shape)} would have {n} "
            f"elements, more than {MAX_ELEMENTS} (what {library(x)} can count)",
            mode=mode,
            shapes=(as_given(tuple(x.shape)), as_given(shape)),
            accepted=f"at most {MAX_ELEMENTS} elements",
        )
    if on_host(x):
        check_allocation(shape, x.dtype, mode=mode, copies=copies, hint="use the view, or smaller inputs")


def guarded(what: str, args: Sequence[Any], fn: Callable[[], _T]) -> _T:
    """``fn()``; a failed allocation inside it (however the library says so) becomes a ``BroadcastError``."""
    try:
        return fn()
    except Exception as e:  # MemoryError is an Exception; so are PyTorch's allocator errors
        if not out_of_memory(e):
            raise
        err = oom_error(what, args, e)
    raise err


class Backend(Protocol):
    """What an engine for another library's arrays provides (see the module's docstring)."""

    def view(self, plan: Alignment, x: Any) -> Any: ...

    def materialize(self, plan: Alignment, x: Any, out: object = None) -> Any: ...

    def backward(self, plan: Alignment, dy: Any) -> Any: ...

    def elementwise(
        self, spec_name: str, kernel_name: str, arrays: Sequence[Any], ep: ElementwiseAlignment, **attrs: Any
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
