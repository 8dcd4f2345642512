"""Large output buffers recycled instead of given back to the operating system.

A fresh NumPy array of many megabytes is a new ``mmap``: the kernel zeroes each page on
first touch, which costs more than the broadcast or the elementwise op that fills it
(measured: 16-26 ms of page faults for 128 MB against 5 ms to write mapped memory). ONNX
Runtime avoids that with its memory arena; this pool does the same for bcast's outputs.

An output of at least :data:`MIN_BYTES` is a view of a pooled ``uint8`` buffer. When the
output is garbage-collected, a finalizer hands the buffer back. A buffer is reused only
when nothing else refers to it any more: a view of the output holds the buffer (NumPy
collapses view bases to the owner), so its reference count tells whether any array still
sees that memory. The pool keeps at most :func:`limit` bytes; ``BCAST_POOL_BYTES=0``
turns it off.

>>> import numpy as np
>>> from bcast.engines.numpy.pool import empty
>>> a = empty((1024, 1024), np.dtype(np.float32))
>>> a.shape, a.dtype, a.flags.c_contiguous, a.flags.writeable
((1024, 1024), dtype('float32'), True, True)
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import brief

__all__ = ["MIN_BYTES", "clear", "empty", "limit", "set_limit"]

#: smaller outputs come from malloc's own free lists, already mapped: no pooling needed
MIN_BYTES = 1 << 20

#: Pooled outputs start on a page. Measured with the compiled loops on 4 MB in cache: an output
#: 16 bytes into a cache line makes every 64-byte store straddle two lines (+7-10%), and an
#: output 64-128 bytes past its input within a page makes loads wait on unrelated stores that
#: share their low 12 address bits (4K aliasing, +15-30%).
PAGE = 4096

_lock = threading.Lock()
_free: dict[int, list[tuple[int, np.ndarray]]] = {}  # bytes -> (page offset, buffer)
_held = [0]  # bytes in _free
_limit: list[int | None] = [None]


def limit() -> int:
    """The most bytes the pool keeps: ``BCAST_POOL_BYTES``, else an eighth of RAM (at most 4 GiB)."""
    if _limit[0] is None:
        env = os.environ.get("BCAST_POOL_BYTES")
        if env is not None:
            try:
                _limit[0] = max(int(env), 0)
            except ValueError:
                _limit[0] = 0
        else:
            try:
                ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
                ram = 0
            _limit[0] = min(ram // 8, 4 << 30)
    return _limit[0] or 0


def set_limit(n: int | None) -> None:
    """Keep at most ``n`` bytes (0 turns the pool off; ``None`` goes back to the default)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise TypeError(f"set_limit takes a number of bytes >= 0 or None, got {brief(n)}")
    _limit[0] = n
    if n == 0:
        clear()


def clear() -> None:
    """Drop every pooled buffer (their memory goes back to the operating system)."""
    with _lock:
        _free.clear()
        _held[0] = 0


def _after_fork_in_child() -> None:
    # another thread of the parent may have held the lock at the fork, and may have been
    # changing the free lists: the child starts with a fresh lock and an empty pool
    global _lock
    _lock = threading.Lock()
    _free.clear()
    _held[0] = 0


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _give_back(raw: np.ndarray, start: int, n: int) -> None:
    with _lock:
        if _held[0] + n > limit():
            return
        _free.setdefault(n, []).append((start, raw))
        _held[0] += n


def _take(n: int) -> tuple[int, np.ndarray] | None:
    with _lock:
        bucket = _free.get(n)
        while bucket:
            start, raw = bucket.pop()
            _held[0] -= n
            # references: the local name and getrefcount's argument; any more is a live view
            if sys.getrefcount(raw) <= 2:
                return start, raw
        return None


def empty(shape: tuple[int, ...], dtype: np.dtype[Any], check: Callable[[], None] | None = None) -> np.ndarray:
    """A new C-contiguous array, like ``np.empty``, from the pool when it is large.

    ``check`` (an allocation check, which raises) runs before memory is taken from the
    system: a pooled buffer needs none, and reading the memory left costs microseconds.
    """
    n = dtype.itemsize
    for d in shape:
        n *= d
    # any dtype without Python objects (bfloat16 and float8 of ml_dtypes, datetimes, bytes, records of
    # them): recycled bytes are only garbage values, where an object array would read them as pointers
    pooled = n >= MIN_BYTES and not dtype.hasobject and limit() > 0
    got = _take(n) if pooled else None
    if got is None and check is not None:
        check()
    if not pooled:
        return np.empty(shape, dtype=dtype)
    if got is None:
        raw = np.empty(n + PAGE, dtype=np.uint8)
        # page-aligned: whole-vector stores never straddle a cache line, and an input at malloc's usual
        # offset (16 bytes into a page) sits just past the output, not just before it (see PAGE)
        start = -raw.ctypes.data % PAGE
    else:
        start, raw = got
    arr: np.ndarray = np.ndarray(shape, dtype, buffer=raw, offset=start)
    weakref.finalize(arr, _give_back, raw, start, n)
    return arr
