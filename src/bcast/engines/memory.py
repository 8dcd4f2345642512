"""How much memory an allocation may take: checked before anything is allocated.

A copy too big for the machine is refused with a :class:`~bcast.errors.BroadcastError`
naming the shape, the dtype and the bytes, never met by a ``MemoryError`` after the fact.
Three limits are checked, cheapest first:

- what the machine can address (``sys.maxsize`` bytes);
- the address space the process may still map, when it runs under a soft ``RLIMIT_AS``
  (``ulimit -v``, a container's or a test harness's limit): the limit less what the
  process maps already (``VmSize``); likewise ``RLIMIT_DATA`` less the data it maps;
- the RAM available now (``MemAvailable``).

Arrays under 1 MiB are never checked (the reads cost more than such an allocation).
:func:`out_of_memory_guard` is the last resort around an operator's entry point: a
``MemoryError`` that slips past the checks (an intermediate nobody counted) becomes a
``BroadcastError`` naming the operator, its inputs' shapes and the bytes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np

from ..errors import BroadcastError, as_given, brief

__all__ = [
    "NUMPY_MAX_DIMS",
    "GuardedOperator",
    "address_space_left",
    "available_memory",
    "check_allocation",
    "check_allocations",
    "check_array_rank",
    "out_of_memory_error",
    "out_of_memory_guard",
    "physical_memory",
]


def span_bytes(shape: tuple[int, ...], itemsize: int) -> int:
    """Bytes NumPy must be able to address for an array of this shape (it ignores 0 dims here)."""
    n = max(itemsize, 1)
    for d in shape:
        n *= max(d, 1)
    return n


def call_text(mode: str | None, given: tuple[str, ...], what: str) -> str:
    head = f"{mode}: " if mode else ""
    if len(given) == 2:
        return f"{head}cannot {what} data {given[0]} to target {given[1]}"
    return f"{head}cannot {what}"


#: (time read, bytes): /proc/meminfo costs ~30 us to read, so a reading is reused for a moment
_MEM_SEEN: list[tuple[float, int | None]] = []
_MEM_FRESH_S = 0.05


def physical_memory() -> int | None:
    """Bytes of RAM the machine has (``None`` when unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def available_memory() -> int | None:
    """Bytes of RAM available now (``MemAvailable``, at most 50 ms old), or ``None`` when unknown."""
    now = time.monotonic()
    if _MEM_SEEN and now - _MEM_SEEN[0][0] < _MEM_FRESH_S:
        return _MEM_SEEN[0][1]
    value = _read_available_memory()
    _MEM_SEEN[:] = [(now, value)]
    return value


def _read_available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


# -- the process's own limits (RLIMIT_AS, RLIMIT_DATA) ---------------------------------
#: (time read, soft RLIMIT_AS or None, soft RLIMIT_DATA or None): getrlimit is a system call;
#: a limit rarely changes, so a reading is reused for a second
_LIMITS_SEEN: list[tuple[float, int | None, int | None]] = []
_LIMITS_FRESH_S = 1.0


def _read_rlimits() -> tuple[int | None, int | None]:
    """The soft ``RLIMIT_AS`` and ``RLIMIT_DATA`` in bytes; ``None`` for unlimited (or no ``resource``)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None, None
    out: list[int | None] = []
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        which = getattr(resource, name, None)
        try:
            soft = resource.getrlimit(which)[0] if which is not None else resource.RLIM_INFINITY
        except (OSError, ValueError):  # pragma: no cover - a platform without this limit
            soft = resource.RLIM_INFINITY
        out.append(None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft))
    return out[0], out[1]


def process_limits() -> tuple[int | None, int | None]:
    """The soft ``(RLIMIT_AS, RLIMIT_DATA)`` of this process in bytes (``None``: unlimited), at most 1 s old."""
    now = time.monotonic()
    if _LIMITS_SEEN and now - _LIMITS_SEEN[0][0] < _LIMITS_FRESH_S:
        return _LIMITS_SEEN[0][1], _LIMITS_SEEN[0][2]
    as_limit, data_limit = _read_rlimits()
    _LIMITS_SEEN[:] = [(now, as_limit, data_limit)]
    return as_limit, data_limit


_PAGE = 4096
with contextlib.suppress(ValueError, OSError, AttributeError):  # not POSIX: 4 KiB pages assumed
    _PAGE = os.sysconf("SC_PAGE_SIZE")


def mapped_memory() -> tuple[int, int] | None:
    """``(VmSize, data)``: the bytes of address space this process maps now, and of them its data
    and stack (what ``RLIMIT_DATA`` counts); ``None`` where ``/proc/self/statm`` cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read(256).split()
        return int(fields[0]) * _PAGE, int(fields[5]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def address_space_left() -> tuple[int, str] | None:
    """The bytes this process may still map under its soft ``RLIMIT_AS`` / ``RLIMIT_DATA``, and
    which limit that is (with its value); ``None`` when neither is set.

    Where what the process maps cannot be read, the whole limit is taken as left.
    """
    as_limit, data_limit = process_limits()
    if as_limit is None and data_limit is None:
        return None
    mapped = mapped_memory()
    best: tuple[int, str] | None = None
    checks = ((as_limit, 0, "RLIMIT_AS", "address-space"), (data_limit, 1, "RLIMIT_DATA", "data"))
    for limit, index, name, kind in checks:
        if limit is None:
            continue
        used = mapped[index] if mapped is not None else 0
        left = max(limit - used, 0)
        if best is None or left < best[0]:
            best = (left, f"the process's {kind} limit ({name}, {limit} bytes; {used} bytes mapped already)")
    return best


#: arrays smaller than this are allocated without reading the memory available (a per-call cost)
_NO_CHECK_BYTES = 1 << 20

#: one array (or a few of one shape) to allocate: (shape, dtype, how many)
Part = tuple[tuple[int, ...], Any, int]


def check_allocation(
    shape: tuple[int, ...],
    dtype: Any,
    *,
    mode: str | None = None,
    given: tuple[str, ...] = (),
    copies: int = 1,
    hint: str | None = None,
) -> None:
    """Refuse, before allocating, an array larger than addressable memory, the process's limit or available RAM.

    ``dtype`` is a NumPy dtype, or any dtype with an ``itemsize`` (torch's). ``copies``
    arrays of this shape and dtype are to be alive at once (an operator's intermediates).
    ``hint`` replaces the advice at the end of the message (default: the read-only view).

    >>> import numpy as np
    >>> check_allocation((2**40, 2**30), np.dtype(np.float64), mode="numpy")
    Traceback (most recent call last):
    ...
    bcast.errors.BroadcastError: numpy: cannot materialize: an array of shape (1099511627776, 1073741824) ...
    """
    itemsize = _itemsize(dtype)
    n = 1
    for d in shape:
        n *= d
    nbytes = n * itemsize * max(copies, 1)
    if 0 < nbytes < _NO_CHECK_BYTES:  # nonempty (a 0 dim can hide a huge span) and far below any RAM
        return
    _check(
        nbytes,
        span_bytes(shape, itemsize),
        lambda: (_describe(shape, dtype, copies), call_text(mode, given, "materialize")),
        mode,
        given,
        hint,
    )


def check_allocations(
    parts: Sequence[Part],
    *,
    mode: str | None = None,
    given: tuple[str, ...] = (),
    what: str = "compute",
    hint: str | None = None,
) -> None:
    """Refuse, before allocating, a result and intermediates whose total is more than there is.

    ``parts`` lists ``(shape, dtype, count)``: ``count`` arrays of each, alive at once.

    >>> import numpy as np
    >>> check_allocations([((3, 4), np.dtype(np.float32), 2)])  # 96 bytes: nothing to refuse
    """
    total = 0
    span = 0
    for shape, dtype, count in parts:
        itemsize = _itemsize(dtype)
        n = 1
        for d in shape:
            n *= d
        total += n * itemsize * max(count, 0)
        span = max(span, span_bytes(shape, itemsize))
    if 0 < total < _NO_CHECK_BYTES:
        return

    def words() -> tuple[str, str]:
        shown = [_describe(s, d, c) for s, d, c in parts[:4] if c]
        more = ", ..." if len(parts) > 4 else ""
        desc = "its result and intermediates (" + "; ".join(shown) + more + ") together"
        return desc, f"{mode}: cannot {what}" if mode else f"cannot {what}"

    _check(total, span, words, mode, given, hint)


def _itemsize(dtype: Any) -> int:
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, int):
        return size
    try:
        return int(np.dtype(dtype).itemsize)
    except (TypeError, ValueError):
        return 8  # an unknown foreign dtype: counted as 8 bytes an element


def _describe(shape: tuple[int, ...], dtype: Any, copies: int) -> str:
    one = f"shape {as_given(tuple(shape))} and dtype {dtype}"
    return f"an array of {one}" if copies <= 1 else f"{copies} arrays of {one}"


def _check(
    nbytes: int,
    span: int,
    words: Callable[[], tuple[str, str]],
    mode: str | None,
    given: tuple[str, ...],
    hint: str | None,
) -> None:
    """Raise when ``nbytes`` (spanning ``span``) is more than there is; ``words()`` gives the message's
    description of the allocation and its head, only when one is raised (formatting shapes costs
    microseconds on every large call)."""
    view_hint = "use the read-only view (copy=False) or write into a smaller out= in pieces"
    if nbytes > sys.maxsize or span > sys.maxsize:
        desc, head = words()
        raise BroadcastError(
            f"{head}: {desc} needs {max(nbytes, span)} bytes of address space, more than this machine "
            f"can address ({sys.maxsize} bytes)",
            mode=mode,
            shapes=given,
            accepted=f"a copy of at most {sys.maxsize} bytes; the read-only view (copy=False) costs nothing"
            if hint is None
            else f"at most {sys.maxsize} bytes",
        )
    left = address_space_left()
    if left is not None and nbytes > left[0]:
        room, which = left
        desc, head = words()
        raise BroadcastError(
            f"{head}: {desc} needs {nbytes} bytes ({size_text(nbytes)}), more than the {room} bytes "
            f"({size_text(room)}) left under {which}; {hint or view_hint}",
            mode=mode,
            shapes=given,
            accepted=f"at most {room} bytes (the address space left to the process)",
        )
    avail = available_memory()
    if avail is not None and nbytes > avail:
        desc, head = words()
        raise BroadcastError(
            f"{head}: {desc} needs {nbytes} bytes ({size_text(nbytes)}), more than the {size_text(avail)} "
            f"({avail} bytes) of memory available; {hint or view_hint}",
            mode=mode,
            shapes=given,
            accepted=f"a copy of at most {size_text(avail)} (the memory available now)",
        )


# -- the last resort: a MemoryError that slipped through --------------------------------
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _shape_text(x: object) -> str:
    """An argument as a message shows it: an array by its shape and dtype, a scalar briefly, never converted."""
    shape = getattr(x, "shape", None)
    if shape is not None and not isinstance(x, type):
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            return f"<{type(x).__name__}>"
        return f"{as_given(dims)} {getattr(x, 'dtype', '')}".rstrip()
    if x is None or isinstance(x, (bool, int, float, complex)):
        return repr(x)[:40]
    return f"<{type(x).__name__}>"


def out_of_memory_error(what: str, args: Sequence[object], error: BaseException | None = None) -> BroadcastError:
    """The ``BroadcastError`` for a ``MemoryError`` met inside ``what`` (an operator) on ``args``.

    >>> import numpy as np
    >>> str(out_of_memory_error("add", [np.ones((2, 3)), np.ones(3)], MemoryError()))[:60]
    'out of memory: add on inputs (2, 3) float64, (3,) float64: a'
    """
    shapes = [_shape_text(a) for a in list(args)[:6]]
    detail = " ".join(str(error).split()) if error is not None else ""
    need = f"an allocation failed ({brief(detail, 240)[1:-1]})" if detail else "an allocation of an intermediate failed"
    avail = available_memory()
    left = address_space_left()
    room = f"{avail} bytes of memory were available" if avail is not None else "the memory available is unknown"
    if left is not None:
        room += f", {left[0]} bytes of address space left under {left[1].split(' (')[0]}"
    return BroadcastError(
        f"out of memory: {what} on inputs {', '.join(shapes) or '()'}: {need}; {room}; "
        "give it smaller inputs, or free memory first",
        mode=what,
        shapes=[s for s in shapes if s.startswith(("(", "["))],
        accepted="inputs whose result and intermediates fit in memory",
    )


def out_of_memory_guard(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A decorator: a ``MemoryError`` escaping the function becomes :func:`out_of_memory_error`'s ``BroadcastError``."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except MemoryError as e:
                err = out_of_memory_error(what, args, e)
            raise err  # outside the except block: the MemoryError is neither chained nor shown

        return guarded

    return decorate


def _attribute(module: str, name: str) -> Any:
    """``module.name``, imported: how a :class:`GuardedOperator` pickles (by reference, as a function does)."""
    return getattr(importlib.import_module(module), name)


class GuardedOperator(Generic[_P, _R]):
    """A function behind :func:`out_of_memory_guard`'s last resort, published in module ``home`` as ``fn.__name__``.

    It reads as the function it wraps (name, docstring, signature, module for doctest's
    finder) and pickles by reference to ``home`` (so ``pickle`` and dask's workers find it).
    """

    def __init__(self, what: str, fn: Callable[_P, _R], home: str) -> None:
        functools.update_wrapper(self, fn)
        self._what = what
        self._fn = fn
        self._home = home

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return self._fn(*args, **kwargs)
        except MemoryError as e:
            err = out_of_memory_error(self._what, args, e)
        raise err  # outside the except block: the MemoryError is neither chained nor shown

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _attribute, (self._home, self._fn.__name__)

    def __repr__(self) -> str:
        return f"<function {self._home}.{self._fn.__name__}>"


def size_text(nbytes: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if nbytes < 1024 or unit == "EiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024  # type: ignore[assignment]
    return ""  # pragma: no cover


#: The most dims a NumPy array may have (``NPY_MAXDIMS``): 64 since NumPy 2, 32 before.
NUMPY_MAX_DIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def check_array_rank(shape: tuple[int, ...], *, mode: str | None = None, given: tuple[str, ...] = ()) -> None:
    """Refuse an array of more dims than NumPy allows, before NumPy's bare ``ValueError`` can."""
    if len(shape) > NUMPY_MAX_DIMS:
        raise BroadcastError(
            f"{call_text(mode, given, 'broadcast')}: the output has {len(shape):,} dims, more than the "
            f"{NUMPY_MAX_DIMS} a NumPy array may have (the plan itself is fine: bcast.plan and bcast.infer take it)",
            mode=mode,
            shapes=given,
            accepted=f"an output of at most {NUMPY_MAX_DIMS} dims",
        )
