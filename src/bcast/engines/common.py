"""What every engine checks the same way: the alignment specialised to an array, a gradient's shape,
the accumulator of a sum, and the room a copy of another library's array needs.

Each engine's view, copy and adjoint start here, so that NumPy, Array API and Dask arrays
are refused with the same words. The plumbing of other libraries' arrays that the engines
share (``array_api_compat``, dtypes NumPy lacks, allocations checked and guarded) is here
too, below :mod:`bcast.engines.foreign`, which picks an engine and so imports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .. import rules
from ..alignment import Alignment, static_output
from ..dims import Shape
from ..errors import BroadcastError, as_given
from .memory import check_allocation, out_of_memory_error

__all__ = [
    "MAX_ELEMENTS",
    "ForeignDType",
    "MissingExtraError",
    "accumulator",
    "check_copy",
    "compat",
    "guarded",
    "is_ml_dtype",
    "is_out_of_memory",
    "library",
    "library_root",
    "numpy_dtype",
    "on_host",
    "require_cotangent",
    "specialized",
]


def specialized(al: Alignment, shape: tuple[int, ...], what: str) -> tuple[Alignment, tuple[int, ...]]:
    """``al`` for data of the concrete ``shape`` (symbols bound, the shape checked), and its output as ints."""
    p = rules.specialize(al, shape)
    return p, static_output(p, what)


def require_cotangent(al: Alignment, got: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape, after checking that the alignment is static and ``dy`` (of shape ``got``) matches it."""
    if not al.is_static:
        raise BroadcastError(
            f"{al.mode}: backward needs a plan with static shapes, got data {al.data_shape} -> "
            f"{al.output_shape}; call plan.specialize(data_shape) first",
            mode=al.mode,
            shapes=al.given,
        )
    shape = static_output(al, "take the adjoint")
    if tuple(got) != shape:
        raise BroadcastError(
            f"{al.mode}: dy has shape {Shape(got)}, but the broadcast's output is {Shape(shape)}",
            mode=al.mode,
            shapes=(str(Shape(got)), str(Shape(shape))),
        )
    return shape


_REDUCIBLE = "biufcmO"


def accumulator(dtype: Any) -> np.dtype[Any]:
    """The dtype to sum a gradient in: its own (bool: logical or), widened for half-precision floats.

    ``dtype`` is a NumPy dtype, or a :class:`ForeignDType` that NumPy
    lacks (another library's bfloat16, float8...), widened as ml_dtypes' own are.

    >>> accumulator(np.dtype(np.float16)), accumulator(np.dtype(np.int8))
    (dtype('float32'), dtype('int8'))
    """
    if dtype.kind in _REDUCIBLE:
        return np.dtype(np.float32) if dtype == np.float16 else dtype
    if isinstance(dtype, ForeignDType) or is_ml_dtype(dtype):  # bfloat16, float8_*, int4...: sum wider, cast back after
        return np.dtype(np.int64 if "int" in dtype.name else np.float32)
    raise TypeError(
        f"backward: a gradient must be numeric (bool sums as logical or); dy has dtype {dtype}, which cannot be summed"
    )


def is_ml_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is one of ml_dtypes' (bfloat16, float8_*, int4...)."""
    return getattr(dtype.type, "__module__", "").startswith("ml_dtypes")


# -- other libraries' arrays ------------------------------------------------------------


class MissingExtraError(TypeError, ModuleNotFoundError):
    """An array of another library given to bcast without the optional package that computes on it.

    Both a ``TypeError`` (bcast cannot take this input as things are) and a
    ``ModuleNotFoundError`` (what is missing is a package); the message names the
    ``pip install`` to run.
    """


def library_root(x: object) -> str:
    """The top-level module of ``x``'s type (``torch``, ``dask``...), looked at before any import."""
    return str(getattr(type(x), "__module__", "") or "").partition(".")[0]


def compat(x: object) -> Any:
    """``array_api_compat``, or the :class:`MissingExtraError` naming the extra that brings it."""
    try:
        import array_api_compat
    except ImportError:  # not installed, or blocked (sys.modules entry None)
        extra = "dask" if library_root(x) == "dask" else "array-api"
        err = MissingExtraError(
            f"bcast: a {library(x)} is computed on through the Array API, which needs the array-api-compat "
            f'package; install it with: pip install "bcast[{extra}]"'
        )
        err.name = "array_api_compat"
        raise err from None
    return array_api_compat


def is_out_of_memory(e: BaseException) -> bool:
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
        if not is_out_of_memory(e):
            raise
        err = out_of_memory_error(what, args, e)
    raise err


def library(x: object) -> str:
    """The name a message gives ``x``'s kind of array: ``torch.Tensor``, ``numpy.ndarray``, ``float``...

    >>> import numpy as np
    >>> library(np.ones(2)), library(2.0)
    ('numpy.ndarray', 'float')
    """
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__.partition('.')[0]}.{t.__name__}"


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
