"""A thread pool for the engine's kernels, sized to the machine.

NumPy releases the GIL inside its copy, ufunc and reduction loops, so plain Python
threads each running NumPy on their own slice of an array use every core. Work is
split into units (index tuples into the arrays); threads pull units from one shared
iterator, so a core slowed by other processes simply takes fewer of them.

>>> from bcast.engine.threads import num_threads, run_units
>>> num_threads() >= 1
True
>>> done = []
>>> run_units(done.append, range(5)); sorted(done)
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["machine_threads", "num_threads", "run_units", "set_num_threads"]

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_threads: int | None = None
_default: int | None = None


def machine_threads() -> int:
    """The cores this process may run on (its CPU affinity where known, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def num_threads() -> int:
    """Threads a kernel uses: ``set_num_threads``'s value, ``BCAST_NUM_THREADS``, or the machine's cores."""
    global _default
    if _threads is not None:
        return _threads
    if _default is None:  # read once: kernels ask on every call
        env = os.environ.get("BCAST_NUM_THREADS", "")
        _default = int(env) if env.strip().isdigit() and int(env) > 0 else machine_threads()
    return _default


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads in the kernels (``None``: back to the default).

    >>> from bcast.engine.threads import num_threads, set_num_threads
    >>> set_num_threads(1); num_threads()
    1
    >>> set_num_threads(None)
    """
    global _threads
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise TypeError(f"set_num_threads takes a positive integer or None, got {n!r}")
    _threads = n


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bcast")
            _pool_size = workers
        return _pool


def run_units(work: Callable[[T], object], units: Iterable[T], threads: int | None = None) -> None:
    """Call ``work(u)`` for every unit, on up to ``threads`` threads (the caller's included).

    Exceptions raised by any unit are re-raised in the caller once all threads stop.
    """
    items = list(units)
    n = min(num_threads() if threads is None else threads, len(items))
    if n <= 1:
        for u in items:
            work(u)
        return
    it = iter(items)  # list iterators hand out each item once, even across threads (the GIL)
    failed: list[BaseException] = []

    def drain() -> None:
        try:
            for u in it:
                if failed:
                    return
                work(u)
        except BaseException as e:  # handed back to the caller below
            failed.append(e)

    pool = _executor(n - 1)
    futures = [pool.submit(drain) for _ in range(n - 1)]
    drain()
    for f in futures:
        f.result()
    if failed:
        raise failed[0]
