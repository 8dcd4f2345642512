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
from typing import Any

import numpy as np

from ...errors import brief

__all__ = ["MIN_BYTES", "clear", "empty", "limit", "set_limit"]

#: smaller outputs come from malloc's own free lists, already mapped: no pooling needed
MIN_BYTES = 1 << 20

_lock = threading.Lock()
_free: dict[int, list[np.ndarray]] = {}
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


def _give_back(buf: np.ndarray) -> None:
    n = buf.nbytes
    with _lock:
        if _held[0] + n > limit():
            return
        _free.setdefault(n, []).append(buf)
        _held[0] += n


def _take(n: int) -> np.ndarray | None:
    with _lock:
        bucket = _free.get(n)
        while bucket:
            buf = bucket.pop()
            _held[0] -= n
            # references: the local name and getrefcount's argument; any more is a live view
            if sys.getrefcount(buf) <= 2:
                return buf
        return None


def empty(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A new C-contiguous array, like ``np.empty``, from the pool when it is large."""
    n = dtype.itemsize
    for d in shape:
        n *= d
    if n < MIN_BYTES or dtype.kind not in "biufc" or limit() == 0:
        return np.empty(shape, dtype=dtype)
    buf = _take(n)
    if buf is None:
        buf = np.empty(n, dtype=np.uint8)
    arr = buf.view(dtype).reshape(shape)
    weakref.finalize(arr, _give_back, buf)
    return arr
