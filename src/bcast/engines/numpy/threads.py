"""A thread pool for the engine's kernels, sized to the machine.

NumPy releases the GIL inside its copy, ufunc and reduction loops, so plain Python
threads each running NumPy on their own slice of an array use every core. Work is
split into units (index tuples into the arrays); threads pull units from one shared
iterator, so a core slowed by other processes simply takes fewer of them.

The pool is built to survive careless callers:

* it only ever grows and is never shut down, so changing :func:`set_num_threads` while
  other threads run ops cannot pull a pool from under them;
* after ``os.fork()`` the child starts with no pool and a fresh lock (the parent's
  worker threads do not exist in the child, and its lock may have been held);
* an exception (``KeyboardInterrupt`` included) in any unit, or delivered to the caller
  while it waits, stops every thread from taking further units, and the caller waits for
  the units already running before it raises: no thread goes on writing into the output
  after :func:`run_units` has returned or raised.

>>> from bcast.engines.numpy.threads import num_threads, run_units
>>> num_threads() >= 1
True
>>> done = []
>>> run_units(done.append, range(5)); sorted(done)
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from ...errors import brief
from ..memory import address_space_left, process_limits

__all__ = ["MAX_THREADS", "machine_threads", "num_threads", "run_units", "set_num_threads"]

T = TypeVar("T")

#: The most threads one call uses, whatever :func:`set_num_threads` says: each is a real
#: OS thread that lives as long as the process, and memory-bound kernels gain nothing past
#: the memory channels of a large machine.
MAX_THREADS = 256

_lock = threading.Lock()
_pool: _Workers | None = None
_threads: int | None = None
_default: int | None = None
#: set in the pool's own threads: a kernel run from inside a unit runs serially there, since
#: a worker waiting for jobs queued behind its own could wait for ever
_local = threading.local()


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

    Safe to call while other threads run ops: a call already under way keeps the
    number of threads it started with.

    >>> from bcast.engines.numpy.threads import num_threads, set_num_threads
    >>> set_num_threads(1); num_threads()
    1
    >>> set_num_threads(None)
    """
    global _threads
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise TypeError(f"set_num_threads takes a positive integer or None, got {brief(n)}")
    _threads = n


class _Workers:
    """Daemon threads serving one job queue. It grows on demand and is never shut down.

    A job never raises (see :func:`run_units`), so a worker lives as long as the process.
    Daemon threads: an idle worker blocked on the queue must not keep the interpreter alive.
    """

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.size = 0

    def grow(self, n: int) -> int:
        """Start workers until there are ``n`` (caller holds ``_lock``); how many there are.

        Under an address-space limit (``RLIMIT_AS``/``RLIMIT_DATA``) the pool stops growing while
        a quarter of the limit is still free: every thread reserves a stack (8 MiB by default),
        and a pool that took the whole limit would leave no room for the arrays it works on.
        """
        while self.size < n:
            if not _room_for_a_thread():
                break
            t = threading.Thread(target=self._serve, name=f"bcast-{self.size}", daemon=True)
            try:
                t.start()
            except RuntimeError:  # the OS refuses more threads: go on with those there are
                break
            self.size += 1
        return self.size

    def _serve(self) -> None:
        _local.worker = True
        jobs = self.jobs
        while True:
            jobs.get()()


def _room_for_a_thread() -> bool:
    """Whether one more thread leaves a quarter of the process's address-space limit free (no limit: yes)."""
    left = address_space_left()
    if left is None:
        return True
    as_limit, data_limit = process_limits()
    limit = min(x for x in (as_limit, data_limit) if x is not None)
    stack = threading.stack_size() or (8 << 20)
    return left[0] - stack >= limit // 4


def _workers(n: int) -> tuple[_Workers, int]:
    """The pool, grown to ``n`` workers where it can be, and how many it has."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = _Workers()
        return _pool, _pool.grow(n)


def _after_fork_in_child() -> None:
    # the parent's workers do not exist here, and the lock may have been held by one of its
    # threads at the fork: start over with neither (the first threaded op builds a new pool)
    global _lock, _pool
    _lock = threading.Lock()
    _pool = None


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Op:
    """One call's bookkeeping: jobs that started and are still running, and whether more may start."""

    __slots__ = ("closed", "cond", "running")

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.running = 0
        self.closed = False

    def enter(self) -> bool:
        with self.cond:
            if self.closed:  # the caller is done: a job that starts this late has nothing to do
                return False
            self.running += 1
            return True

    def leave(self) -> None:
        with self.cond:
            self.running -= 1
            if not self.running:
                self.cond.notify_all()

    def close_and_wait(self) -> None:
        """Let no further job start, and wait until those running have stopped."""
        with self.cond:
            self.closed = True
            while self.running:
                self.cond.wait()


def run_units(work: Callable[[T], object], units: Iterable[T], threads: int | None = None) -> None:
    """Call ``work(u)`` for every unit, on up to ``threads`` threads (the caller's included).

    Exceptions raised by any unit are re-raised in the caller once all threads stop;
    after the first, no thread starts another unit. An exception delivered to the caller
    while it waits (``KeyboardInterrupt``) also stops the other threads, and is raised
    once they have finished the unit each was running.
    """
    items = list(units)
    n = min(num_threads() if threads is None else threads, len(items), MAX_THREADS)
    if n <= 1 or getattr(_local, "worker", False):
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

    op = _Op()
    # the queued jobs reach drain (and through it the arrays) through this list, emptied at the
    # end: a job that a busy pool only runs later must not keep the caller's arrays alive
    todo = [drain]

    def job() -> None:
        if not op.enter():
            return
        try:
            for d in todo:
                d()
        finally:
            op.leave()

    try:
        pool, size = _workers(n - 1)
        for _ in range(min(n - 1, size)):
            pool.jobs.put(job)
        drain()
    except BaseException as e:  # interrupted outside a unit: stop the others all the same
        failed.append(e)
    _wait(op, failed)
    todo.clear()
    if failed:
        raise failed[0]


def _wait(op: _Op, failed: list[BaseException]) -> None:
    """``op.close_and_wait()``, to the end even if interrupted: a unit is short, and must not outlive the call."""
    while True:
        try:
            op.close_and_wait()
            return
        except BaseException as e:  # KeyboardInterrupt while waiting: stop the others, keep waiting
            if not failed:
                failed.append(e)
