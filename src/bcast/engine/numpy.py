"""The NumPy engine: read-only views, checked copies and the adjoint of a :class:`Plan`.

Engines never decide shapes: everything here reads the plan. A plan with unknown or
symbolic dims is first specialised to the array's concrete shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..dims import Shape
from ..errors import BroadcastError, as_given, brief
from ..plan import require_cotangent, require_static
from .kernels import SERIAL_BYTES, fill_broadcast, internal_overlap, overlaps, reduce_sum
from .memory import NUMPY_MAX_DIMS, _call, _span, check_allocation, check_array_rank, physical_memory
from .pool import empty as pooled_empty

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

    from ..plan import Plan

__all__ = ["as_array", "backward", "bind_symbols", "check_allocation", "materialize", "native", "view"]

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


def bind_symbols(plan: Plan, concrete: Shape) -> dict[str, int]:
    """Check that ``concrete`` is a shape the plan's data admits; return its symbols' sizes."""
    expected = plan.data_shape
    if not concrete.is_static:
        raise BroadcastError(
            f"{plan.mode}: a concrete data shape is needed to specialise the plan for data {expected}, got {concrete}",
            mode=plan.mode,
            shapes=(str(expected), str(concrete)),
            accepted="a shape of known sizes, e.g. the array's .shape",
        )
    if expected.rank is None:
        return {}
    if concrete.rank != expected.rank:
        raise BroadcastError(
            f"{plan.mode}: the plan is for data {expected} (rank {expected.rank}); it cannot take "
            f"data of shape {concrete} (rank {concrete.rank})",
            mode=plan.mode,
            shapes=(str(expected), str(concrete)),
        )
    values: dict[str, int] = {}
    for i, (e, c) in enumerate(zip(expected.dims, concrete.dims, strict=True)):
        size = int(c)
        if e.name is not None and "|" not in e.name:
            if values.setdefault(e.name, size) != size:
                raise BroadcastError(
                    f"{plan.mode}: data of shape {concrete} gives the symbol {e.name} two sizes "
                    f"({values[e.name]} and {size}, at data axis {i}); the plan is for data {expected}",
                    mode=plan.mode,
                    shapes=(str(expected), str(concrete)),
                    axis=i,
                    dims=(str(e), str(c)),
                )
        elif not e.may_be(size):
            raise BroadcastError(
                f"{plan.mode}: the plan is for data {expected}; data of shape {concrete} has "
                f"{size} at axis {i}, where the plan admits {e}",
                mode=plan.mode,
                shapes=(str(expected), str(concrete)),
                axis=i,
                dims=(str(e), str(c)),
            )
    return values


def _aligned(plan: Plan, x: np.ndarray) -> np.ndarray:
    """``x`` with its axes lined up on the output's: new axes inserted, dropped 1s removed."""
    index = plan.align_index
    if index is None:  # pragma: no cover - a static plan always has a mapping
        raise BroadcastError(f"{plan.mode}: the plan has no axes mapping (dynamic rank)")
    full = (*index, Ellipsis)  # the Ellipsis keeps a 0-d result an array
    view: np.ndarray = x[full]
    return view


def _check_view_size(shape: tuple[int, ...], dtype: np.dtype[Any], plan: Plan) -> None:
    limit = np.iinfo(np.intp).max
    if _span(shape, dtype.itemsize) > limit:
        raise BroadcastError(
            f"{_call(plan.mode, plan.given, 'broadcast')}: an output of shape {as_given(shape)} and dtype "
            f"{dtype} would span {_span(shape, dtype.itemsize)} bytes, more than NumPy can index ({limit})",
            mode=plan.mode,
            shapes=plan.given,
            accepted=f"an output spanning at most {limit} bytes",
        )


class _Static:
    """What a static plan needs at run time, worked out once: shapes as int tuples."""

    __slots__ = ("aligned", "data", "elem_strides", "output", "span", "strides")

    def __init__(self, plan: Plan) -> None:
        mapping = plan.axes_mapping or ()
        self.data = plan.data_shape.to_tuple()
        self.output = plan.output_shape.to_tuple()
        aligned = [1] * len(self.output)
        for i, a in enumerate(mapping):
            if a is not None:
                aligned[a] = self.data[i]
        self.aligned = tuple(aligned)  # the data's shape with its axes on the output's
        self.span = _span(self.output, 1)
        # strides (in elements) of a C-contiguous data array seen through the broadcast: 0 where replicated
        elem: list[int] = [0] * len(aligned)
        step = 1
        for k in reversed(range(len(aligned))):
            if aligned[k] == self.output[k] and aligned[k] != 1:
                elem[k] = step
            step *= aligned[k]
        self.elem_strides = tuple(elem)
        self.strides: dict[int, tuple[int, ...]] = {}  # byte strides per itemsize

    def fast_view(self, arr: np.ndarray) -> np.ndarray:
        """The broadcast view of C-contiguous data of a plain numeric dtype, built in one constructor call."""
        size = arr.dtype.itemsize
        strides = self.strides.get(size)
        if strides is None:
            strides = self.strides[size] = tuple(s * size for s in self.elem_strides)
        v: np.ndarray = np.ndarray(self.output, arr.dtype, arr, 0, strides)
        v.flags.writeable = False
        return v


_RECIPE = "_bcast_static"


def _static(plan: Plan) -> _Static | None:
    """The plan's run-time facts, cached on the plan; ``None`` for a plan with unknown dims."""
    cached: _Static | bool | None = plan.__dict__.get(_RECIPE, False)
    if cached is False:
        ok = plan.is_static and plan.axes_mapping is not None and (plan.output_shape.rank or 0) <= NUMPY_MAX_DIMS
        cached = _Static(plan) if ok else None
        plan.__dict__[_RECIPE] = cached
    return cached  # type: ignore[return-value]


_INDEX_LIMIT = np.iinfo(np.intp).max
#: dtype kinds whose arrays export a plain buffer that ``np.ndarray(..., buffer=)`` takes
_PLAIN = "biufc"


def view(plan: Plan, x: npt.ArrayLike) -> np.ndarray:
    arr = x if type(x) is np.ndarray else as_array(x)
    st = _static(plan)
    if st is not None and arr.shape == st.data and st.span * arr.dtype.itemsize <= _INDEX_LIMIT:
        # the hot path: a static plan and data of its shape
        if arr.flags.c_contiguous and arr.dtype.kind in _PLAIN and arr.size:
            return st.fast_view(arr)
        fast: np.ndarray = np.broadcast_to(arr.reshape(st.aligned), st.output)  # adding/dropping 1s never copies
        return fast
    p = plan.specialize(arr.shape)
    shape = require_static(p, "make a view")
    check_array_rank(shape, mode=p.mode, given=p.given)
    _check_view_size(shape, arr.dtype, p)
    result: np.ndarray = np.broadcast_to(_aligned(p, arr), shape)
    return result


def materialize(plan: Plan, x: npt.ArrayLike, out: np.ndarray | None = None) -> np.ndarray:
    arr = x if type(x) is np.ndarray else as_array(x)
    st = _static(plan)
    if st is not None and arr.shape == st.data:  # the hot path: a static plan, no re-planning
        if out is None:
            check_allocation(st.output, arr.dtype, mode=plan.mode, given=plan.given)
            dest = pooled_empty(st.output, arr.dtype)
        else:
            arr = _check_out(out, st.output, arr, plan)
            dest = out
        if dest.nbytes < SERIAL_BYTES:
            np.copyto(dest, arr.reshape(st.aligned), casting="equiv")  # copyto broadcasts: no view to build
        else:
            fill_broadcast(dest, np.broadcast_to(arr.reshape(st.aligned), st.output))
        return dest
    p = plan.specialize(arr.shape)
    shape = require_static(p, "materialize")
    check_array_rank(shape, mode=p.mode, given=p.given)
    if out is None:
        check_allocation(shape, arr.dtype, mode=p.mode, given=p.given)
        result = pooled_empty(shape, arr.dtype)
    else:
        arr = _check_out(out, shape, arr, p)
        result = out
    fill_broadcast(result, np.broadcast_to(_aligned(p, arr), shape))
    return result


def _check_out(out: object, shape: tuple[int, ...], x: np.ndarray, plan: Plan) -> np.ndarray:
    """Refuse an ``out`` that cannot take the broadcast; the data to read (a copy where ``out`` overlaps it)."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{plan.mode}: out must be a NumPy array, got {type(out).__name__}")
    if out.shape != shape:
        raise BroadcastError(
            f"{plan.mode}: out has shape {Shape(out.shape)}, but the broadcast's output is {Shape(shape)}",
            mode=plan.mode,
            shapes=(str(Shape(out.shape)), str(Shape(shape))),
        )
    if not _same_type(out.dtype, x.dtype):
        raise TypeError(
            f"{plan.mode}: out has dtype {out.dtype}, but the data is {x.dtype}; "
            "a broadcast does not convert (cast the data first)"
        )
    if not out.flags.writeable:
        raise BroadcastError(f"{plan.mode}: out is read-only", mode=plan.mode)
    if internal_overlap(out):
        raise BroadcastError(
            f"{plan.mode}: out has internal overlap (strides {out.strides} for shape {Shape(out.shape)} make "
            "two of its elements share memory), so it cannot hold a result; pass a fresh array, "
            "or np.ascontiguousarray of it",
            mode=plan.mode,
            accepted="an out whose elements do not share memory",
        )
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


_REDUCIBLE = "biufcmO"


def backward(plan: Plan, dy: npt.ArrayLike) -> np.ndarray:
    g = as_array(dy, "dy")
    require_cotangent(plan, g.shape)
    _check_sum_size(g, plan)
    # a sum's dtype is native, as NumPy's (np.add.reduce of >f8 gives float64): a big-endian
    # dy sums as its native twin, and NumPy's loops read it swapped
    dtype = native(g.dtype)
    acc = _accumulator(dtype)
    axes = plan.broadcast_axes or ()
    # timedelta: NumPy's reduce keeps the unit only when no dtype is forced on it
    red = None if dtype.kind == "m" else acc
    if not axes:
        return np.array(g, dtype=dtype, copy=True).reshape(plan.data_shape.to_tuple())
    summed = reduce_sum(g, tuple(axes), red)
    return np.asarray(summed, dtype=dtype).reshape(plan.data_shape.to_tuple())


def _check_sum_size(g: np.ndarray, plan: Plan) -> None:
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


def _accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype to sum a gradient in: its own (bool: logical or), widened for half-precision floats."""
    if dtype.kind in _REDUCIBLE:
        return np.dtype(np.float32) if dtype == np.float16 else dtype
    if _is_ml_dtype(dtype):  # bfloat16, float8_*, int4...: sum wider, cast back after
        return np.dtype(np.int64 if "int" in dtype.name else np.float32)
    raise TypeError(
        f"backward: a gradient must be numeric (bool sums as logical or); dy has dtype {dtype}, which cannot be summed"
    )


def _is_ml_dtype(dtype: np.dtype[Any]) -> bool:
    return getattr(dtype.type, "__module__", "").startswith("ml_dtypes")
