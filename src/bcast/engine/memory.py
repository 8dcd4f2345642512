"""How much memory an allocation may take: checked before anything is allocated.

A copy too big for the machine is refused with a :class:`~bcast.errors.BroadcastError`
naming the shape, the dtype and the bytes, never met by a ``MemoryError`` after the fact.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from ..errors import BroadcastError, as_given

__all__ = ["available_memory", "check_allocation"]


def _span(shape: tuple[int, ...], itemsize: int) -> int:
    """Bytes NumPy must be able to address for an array of this shape (it ignores 0 dims here)."""
    n = max(itemsize, 1)
    for d in shape:
        n *= max(d, 1)
    return n


def _call(mode: str | None, given: tuple[str, ...], what: str) -> str:
    head = f"{mode}: " if mode else ""
    if len(given) == 2:
        return f"{head}cannot {what} data {given[0]} to target {given[1]}"
    return f"{head}cannot {what}"


#: (time read, bytes): /proc/meminfo costs ~30 us to read, so a reading is reused for a moment
_MEM_SEEN: list[tuple[float, int | None]] = []
_MEM_FRESH_S = 0.05


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


#: arrays smaller than this are allocated without reading the memory available (a per-call cost)
_NO_CHECK_BYTES = 1 << 20


def check_allocation(
    shape: tuple[int, ...], dtype: np.dtype[Any], *, mode: str | None = None, given: tuple[str, ...] = ()
) -> None:
    """Refuse, before allocating, an array larger than addressable memory or available RAM."""
    n = 1
    for d in shape:
        n *= d
    nbytes = n * dtype.itemsize
    if 0 < nbytes < _NO_CHECK_BYTES:  # nonempty (a 0 dim can hide a huge span) and far below any RAM
        return
    head = _call(mode, given, "materialize")
    span = _span(shape, dtype.itemsize)
    if nbytes > sys.maxsize or span > sys.maxsize:
        raise BroadcastError(
            f"{head}: an array of shape {as_given(shape)} and dtype {dtype} needs {max(nbytes, span)} bytes "
            f"of address space, more than this machine can address ({sys.maxsize} bytes)",
            mode=mode,
            shapes=given,
            accepted=f"a copy of at most {sys.maxsize} bytes; the read-only view (copy=False) costs nothing",
        )
    avail = available_memory()
    if avail is not None and nbytes > avail:
        raise BroadcastError(
            f"{head}: an array of shape {as_given(shape)} and dtype {dtype} needs {_size(nbytes)}, "
            f"more than the {_size(avail)} of memory available; use the read-only view "
            "(copy=False) or write into a smaller out= in pieces",
            mode=mode,
            shapes=given,
            accepted=f"a copy of at most {_size(avail)} (the memory available now)",
        )


def _size(nbytes: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if nbytes < 1024 or unit == "EiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024  # type: ignore[assignment]
    return ""  # pragma: no cover
