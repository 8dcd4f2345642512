"""The NumPy engine: read-only views, checked copies and the adjoint of an :class:`~bcast.alignment.Alignment`.

Engines never decide shapes: everything here reads the plan. A plan with unknown or
symbolic dims is first specialised to the array's concrete shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...alignment import Alignment, StaticFacts
from ...dims import Shape
from ...errors import BroadcastError, as_given, brief
from ..common import accumulator, require_cotangent, specialized
from ..memory import NUMPY_MAX_DIMS, call_text, check_allocation, check_array_rank, physical_memory, span_bytes
from . import compiled
from .kernels import SERIAL_BYTES, fill_broadcast, internal_overlap, overlaps, reduce_sum
from .pool import empty as pooled_empty

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

__all__ = ["as_array", "backward", "check_allocation", "check_out", "materialize", "native", "out_as_is", "view"]

_SCALARS = (bool, int, float, complex, str, bytes, np.generic)


def as_array(x: object, what: str = "x") -> np.ndarray:
    """``x`` as an ndarray without copying; a clear ``TypeError`` for what is not array-like."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, _SCALARS):
        return np.asarray(x)
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        try:
            return np.asarray(x)
        except RecursionError:
            raise TypeError(f"{what} cannot be read as an array: it is nested too deeply") from None
        except MemoryError:
            raise TypeError(f"{what} cannot be read as an array: it does not fit in memory") from None
        except Exception as e:  # a foreign __array__ may raise anything: its words, in a TypeError
            raise TypeError(f"{what} cannot be read as an array: {type(e).__name__}: {brief(str(e), 300)}") from None
    raise TypeError(f"{what} must be an array (a NumPy array, a scalar, or a nested list), got {type(x).__name__}")


def _aligned(plan: Alignment, x: np.ndarray) -> np.ndarray:
    """``x`` with its axes lined up on the output's: new axes inserted, dropped 1s removed."""
    index = plan.align_index
    if index is None:  # pragma: no cover - a static plan always has a mapping
        raise BroadcastError(f"{plan.mode}: the plan has no axes mapping (dynamic rank)")
    full = (*index, Ellipsis)  # the Ellipsis keeps a 0-d result an array
    view: np.ndarray = x[full]
    return view


def _check_view_size(shape: tuple[int, ...], dtype: np.dtype[Any], plan: Alignment) -> None:
    limit = np.iinfo(np.intp).max
    if span_bytes(shape, dtype.itemsize) > limit:
        raise BroadcastError(
            f"{call_text(plan.mode, plan.given, 'broadcast')}: an output of shape {as_given(shape)} and dtype "
            f"{dtype} would span {span_bytes(shape, dtype.itemsize)} bytes, more than NumPy can index ({limit})",
            mode=plan.mode,
            shapes=plan.given,
            accepted=f"an output spanning at most {limit} bytes",
        )


def _static(plan: Alignment) -> StaticFacts | None:
    """The alignment's facts as ints, when it is static and within NumPy's limit on dims."""
    st = plan.static
    return st if st is not None and len(st.output) <= NUMPY_MAX_DIMS else None


_INDEX_LIMIT = np.iinfo(np.intp).max
#: dtype kinds whose arrays export a plain buffer that ``np.ndarray(..., buffer=)`` takes
_PLAIN = "biufc"


def view(plan: Alignment, x: npt.ArrayLike) -> np.ndarray:
    arr = x if type(x) is np.ndarray else as_array(x)
    st = _static(plan)
    if st is not None and arr.shape == st.data and st.span * arr.dtype.itemsize <= _INDEX_LIMIT:
        # the hot path: a static plan and data of its shape
        if arr.flags.c_contiguous and arr.dtype.kind in _PLAIN and arr.size:
            v: np.ndarray = np.ndarray(st.output, arr.dtype, arr, 0, st.byte_strides(arr.dtype.itemsize))
            v.flags.writeable = False
            return v
        fast: np.ndarray = np.broadcast_to(arr.reshape(st.aligned), st.output)  # adding/dropping 1s never copies
        return fast
    p, shape = specialized(plan, arr.shape, "make a view")
    check_array_rank(shape, mode=p.mode, given=p.given)
    _check_view_size(shape, arr.dtype, p)
    result: np.ndarray = np.broadcast_to(_aligned(p, arr), shape)
    return result


def materialize(plan: Alignment, x: npt.ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
    arr = x if type(x) is np.ndarray else as_array(x)
    st = _static(plan)
    if st is not None and arr.shape == st.data:  # the hot path: a static plan, no re-planning
        known = st.memo.get(arr.strides)
        if known is not None and known[0] is arr.dtype:  # a small copy the compiled loop has laid out before
            dt = known[0]
            dest = np.empty(st.output, dt) if out is None else out if out_as_is(out, st.output, dt) else None
            if dest is not None and compiled.run_copy(known[1], dest, arr):
                return dest  # the loop declines an out that overlaps arr, writing nothing: then the checks decide
        return _materialize_static(plan, st, arr, out, known)
    p, shape = specialized(plan, arr.shape, "materialize")
    check_array_rank(shape, mode=p.mode, given=p.given)
    if out is None:
        dt = arr.dtype
        result = pooled_empty(shape, dt, lambda: check_allocation(shape, dt, mode=p.mode, given=p.given))
    else:
        arr = _check_out(out, shape, arr, p)
        result = out
    fill_broadcast(result, np.broadcast_to(_aligned(p, arr), shape))
    return result


#: the copy layouts one alignment remembers, one per strides of the data it meets
_MEMO_LIMIT = 64


def _materialize_static(
    plan: Alignment, st: StaticFacts, arr: np.ndarray, out: np.ndarray | None, known: tuple[Any, Any] | None
) -> np.ndarray:
    """:func:`materialize` for data of the static alignment's shape (``known``: ``st.memo``'s entry for its strides).

    A copy under :data:`SERIAL_BYTES` into a C-contiguous array that the compiled loop takes has
    its layout remembered in ``st.memo``, by the data's strides, with its dtype: the next such
    call goes straight to the loop. On a few hundred kilobytes the layout and the checks cost
    as much as the copy, which the loop does faster than NumPy's ``copyto`` (see
    docs/bench/notes.md).
    """
    small = st.span * arr.dtype.itemsize < SERIAL_BYTES
    if out is None:
        plain = True
        if small:  # far below any memory limit, and not pooled
            dest = np.empty(st.output, arr.dtype)
        else:
            dt, mode, given = arr.dtype, plan.mode, plan.given
            dest = pooled_empty(st.output, dt, lambda: check_allocation(st.output, dt, mode=mode, given=given))
    else:
        dest = out
        plain = out_as_is(out, st.output, arr.dtype)  # what _check_out takes as it is, unless it overlaps arr
    if plain and small and (known is None or known[0] is not arr.dtype):  # else: the loop has declined it
        layout = compiled.prepare_copy(dest, np.broadcast_to(arr.reshape(st.aligned), st.output))
        if layout is not None and (known is not None or len(st.memo) < _MEMO_LIMIT):
            st.memo[arr.strides] = (arr.dtype, layout)
        if layout is not None and compiled.run_copy(layout, dest, arr):
            return dest  # the loop declines an out that overlaps arr, writing nothing
    if out is not None and (not plain or np.may_share_memory(out, arr)):
        arr = _check_out(out, st.output, arr, plan)  # its checks cost us: only where they may find something
    if small:
        np.copyto(dest, arr.reshape(st.aligned), casting="equiv")  # copyto broadcasts: no view to build
    else:
        fill_broadcast(dest, np.broadcast_to(arr.reshape(st.aligned), st.output))
    return dest


def out_as_is(out: object, shape: tuple[int, ...], dtype: np.dtype[Any]) -> bool:
    """Whether ``out`` is one that :func:`check_out` takes as it is, decided by the cheapest tests: a plain,
    writeable, C-contiguous (so no two elements share memory) NumPy array of ``shape`` and of ``dtype``
    itself (built-in dtypes are singletons: a byte-swapped or other one goes to the full checks).

    For the hot paths that skip the checks; ``False`` says nothing (the checks decide).
    """
    return (
        type(out) is np.ndarray
        and out.dtype is dtype
        and out.shape == shape
        and out.flags.num & _WRITEABLE_C == _WRITEABLE_C  # one flags object, not two
    )


#: NumPy's flag bits NPY_ARRAY_WRITEABLE and NPY_ARRAY_C_CONTIGUOUS
_WRITEABLE_C = 0x400 | 0x1


def check_out(
    out: object, shape: tuple[int, ...], who: str, result: str, dtype_error: Callable[[np.dtype[Any]], str | None]
) -> np.ndarray:
    """``out`` if it can hold a result of ``shape``: a writeable NumPy array of that shape whose elements do
    not share memory, and of a dtype ``dtype_error`` accepts (it returns the complaint, or ``None``).

    ``who`` starts each message (the mode, or the operator); ``result`` names the result in it
    (``"the result has shape"``). Every writer into ``out=`` (broadcasts, operators) checks here.
    """
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{who}: out must be a NumPy array, got {type(out).__name__}")
    if out.shape != shape:
        raise BroadcastError(
            f"{who}: out has shape {Shape(out.shape)}, but {result} {Shape(shape)}",
            mode=who,
            shapes=(str(Shape(out.shape)), str(Shape(shape))),
        )
    problem = dtype_error(out.dtype)
    if problem is not None:
        raise TypeError(f"{who}: {problem}")
    if not out.flags.writeable:
        raise BroadcastError(f"{who}: out is read-only", mode=who)
    if internal_overlap(out):
        raise BroadcastError(
            f"{who}: out has internal overlap (strides {out.strides} for shape {Shape(out.shape)} make "
            "two of its elements share memory), so it cannot hold a result; pass a fresh array, "
            "or np.ascontiguousarray of it",
            mode=who,
            accepted="an out whose elements do not share memory",
        )
    return out


def _check_out(out: object, shape: tuple[int, ...], x: np.ndarray, plan: Alignment) -> np.ndarray:
    """Refuse an ``out`` that cannot take the broadcast; the data to read (a copy where ``out`` overlaps it)."""

    def dtype_error(dtype: np.dtype[Any]) -> str | None:
        if _same_type(dtype, x.dtype):
            return None
        return f"out has dtype {dtype}, but the data is {x.dtype}; a broadcast does not convert (cast the data first)"

    out = check_out(out, shape, plan.mode, "the broadcast's output is", dtype_error)
    if overlaps(out, x):
        # the units write out in any order, on several threads, while they read x: read a copy
        # (the data, not the output: a broadcast's data is the smaller of the two)
        return np.array(x, copy=True)
    return x


def _same_type(a: np.dtype[Any], b: np.dtype[Any]) -> bool:
    """Equal dtypes up to byte order (``>f8`` holds the same values as ``<f8``: NumPy copies between them)."""
    return a == b or (a.byteorder != b.byteorder and a.newbyteorder("=") == b.newbyteorder("="))


def native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype`` in this machine's byte order (NumPy's results of arithmetic and sums are native).

    Another library's dtype (``torch.float32``...) comes back as it is.

    >>> import numpy as np
    >>> native(np.dtype(">f8")) == np.dtype(np.float64), native(np.dtype(">i4")).isnative
    (True, True)
    """
    if not isinstance(dtype, np.dtype) or dtype.isnative:
        return dtype
    swapped: np.dtype[Any] = dtype.newbyteorder("=")
    return swapped


def backward(plan: Alignment, dy: npt.ArrayLike) -> np.ndarray:
    g = as_array(dy, "dy")
    require_cotangent(plan, g.shape)
    _check_sum_size(g, plan)
    # a sum's dtype is native, as NumPy's (np.add.reduce of >f8 gives float64): a big-endian
    # dy sums as its native twin, and NumPy's loops read it swapped
    dtype = native(g.dtype)
    acc = accumulator(dtype)
    axes = plan.broadcast_axes or ()
    # timedelta: NumPy's reduce keeps the unit only when no dtype is forced on it
    red = None if dtype.kind == "m" else acc
    if not axes:
        return np.array(g, dtype=dtype, copy=True).reshape(plan.data_shape.to_tuple())
    summed = reduce_sum(g, tuple(axes), red)
    return np.asarray(summed, dtype=dtype).reshape(plan.data_shape.to_tuple())


def _check_sum_size(g: np.ndarray, plan: Alignment) -> None:
    """Refuse to sum a ``dy`` of more elements than this machine's memory could hold as an array.

    Such a ``dy`` is a stride-0 view (``np.broadcast_to`` of a small array): summing its
    elements one by one would take minutes for no answer a real gradient could need.
    """
    ram = physical_memory()
    n = g.size
    if ram is not None and n * max(g.itemsize, 1) > ram and n > (1 << 31):
        raise BroadcastError(
            f"{plan.mode}: backward: dy of shape {as_given(g.shape)} has {n:,} elements, more than this machine's "
            f"memory ({ram:,} bytes) could hold as an array: a broadcast view that large would take minutes to sum; "
            "sum the small array it views instead",
            mode=plan.mode,
            shapes=plan.given,
            accepted=f"a dy of at most {ram // max(g.itemsize, 1):,} elements",
        )
