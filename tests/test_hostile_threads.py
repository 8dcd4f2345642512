"""Hostile use of the engine's thread pool: fork, racing set_num_threads, interrupts mid-op.

Each attack runs in a child process with a timeout (see ``hostile.py``): a deadlock fails
its one test instead of hanging the run. The children check their own results against
NumPy and end with an expression the test reads back.
"""

from __future__ import annotations

import textwrap

import pytest

from hostile import assert_returned, attack

#: Shared set-up of the children: the threaded paths on small arrays, 2 threads.
PRELUDE = """
import os, sys, time, signal, threading
import numpy as np
import bcast, bcast.ops as ops
from bcast.engines.numpy import kernels, threads, pool
kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES = 0, 4096, 4096
threads.set_num_threads(2)
A = np.arange(64 * 1024, dtype=np.float64).reshape(256, 256)
ROW = np.arange(256, dtype=np.float64)
def check():
    assert np.array_equal(ops.add(A, ROW), A + ROW)
    assert np.array_equal(ops.where(A > 100, A, ROW), np.where(A > 100, A, ROW))
    assert np.array_equal(bcast.plan((256,), (256, 256)).materialize(ROW), np.broadcast_to(ROW, (256, 256)))
    assert np.array_equal(bcast.plan((1, 256), (256, 256)).backward(A), A.sum(axis=0, keepdims=True))
    big = bcast.plan((256,), (1024, 256)).materialize(ROW)  # 2 MiB: from the output pool (its lock)
    assert np.array_equal(big, np.broadcast_to(ROW, (1024, 256)))
    return True
"""

#: The parent's side of a fork: wait for the child at most a few seconds, kill it if it hangs (a guard:
#: no test measures how long anything took).
WAIT_CHILD = """
def wait_child(pid, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"
def in_child(fn):
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if fn() else 3)
        except BaseException:
            os._exit(4)
    return wait_child(pid)
"""


def _run(body: str, timeout: float = 60.0) -> str:
    return assert_returned(attack(PRELUDE + WAIT_CHILD + textwrap.dedent(body), timeout=timeout))


def _run_fresh(body: str, timeout: float = 60.0) -> str:
    return assert_returned(attack(PRELUDE + WAIT_CHILD + textwrap.dedent(body), timeout=timeout, env={}))


def test_fork_after_a_threaded_op_child_runs_ops() -> None:
    value = _run(
        """
        check()  # the pool has threads now: they do not exist in a child
        codes = [in_child(check) for _ in range(3)]
        codes.append(in_child(lambda: threads.set_num_threads(3) or check()))  # the child grows its own pool
        check()  # and the parent's pool still works after the forks
        codes
        """
    )
    assert value == "[0, 0, 0, 0]"


def test_fork_while_another_thread_holds_the_pools_locks() -> None:
    """A fork can land while a thread of the parent holds a lock: the child must not inherit it held."""
    value = _run(
        """
        check()
        results = []
        for lock_owner in (threads, pool):
            held, release = threading.Event(), threading.Event()
            def hold(mod=lock_owner):
                with mod._lock:
                    held.set()
                    release.wait()
            t = threading.Thread(target=hold)
            t.start()
            held.wait()
            threads.set_num_threads(4)  # a child op must grow the pool (take the lock)
            results.append(in_child(check))
            release.set()
            t.join()
            threads.set_num_threads(2)
        check()
        results
        """
    )
    assert value == "[0, 0]"


def test_set_num_threads_racing_four_threads_of_ops() -> None:
    value = _run(
        """
        errors, stop = [], threading.Event()
        def hammer(seed):
            rng = np.random.default_rng(seed)
            try:
                for i in range(150):
                    b = rng.random(256)
                    assert np.array_equal(ops.add(A, b), A + b)
                    assert np.array_equal(ops.sum(A, b, ROW), A + b + ROW)
                    p = bcast.plan((256,), (64, 256))
                    assert np.array_equal(p.materialize(b), np.broadcast_to(b, (64, 256)))
            except BaseException as e:
                errors.append(repr(e))
        check()
        first = threads._pool
        def flip():
            n = 0
            while not stop.is_set():
                threads.set_num_threads(1 + n % 12)  # 1..12: the pool must grow while in use
                n += 1
                time.sleep(0.0002)
        workers = [threading.Thread(target=hammer, args=(s,)) for s in range(4)]
        flipper = threading.Thread(target=flip)
        flipper.start()
        for t in workers: t.start()
        for t in workers: t.join()
        stop.set(); flipper.join()
        threads.set_num_threads(2)
        check()
        # the pool grew in place: a caller holding it never finds it shut down
        errors.append(threads._pool is first or "the pool was replaced")
        errors
        """,
        timeout=120.0,
    )
    assert value == "[True]"


def test_an_exception_in_one_unit_stops_the_others_and_the_pool_lives_on() -> None:
    value = _run(
        """
        outcomes = []
        for exc in (KeyboardInterrupt, ValueError, SystemExit):
            ran, late = [], []
            raised_at = []
            def work(u):
                if raised_at:
                    late.append(u)  # a unit started after the failure: must not happen for long
                ran.append(u)
                time.sleep(0.001)
                if u == 20:
                    raised_at.append(time.monotonic())
                    raise exc("unit 20")
            try:
                threads.run_units(work, range(400), threads=3)
                outcomes.append("no exception")
            except BaseException as e:
                n = len(ran)
                time.sleep(0.1)
                # nothing runs once run_units has raised; at most one unit per other thread started late
                outcomes.append((type(e).__name__, len(ran) == n, len(late) <= 2, n < 100))
        outcomes.append(check())
        outcomes
        """
    )
    assert value == (
        "[('KeyboardInterrupt', True, True, True), ('ValueError', True, True, True), "
        "('SystemExit', True, True, True), True]"
    )


def test_ctrl_c_while_the_caller_waits_for_the_workers() -> None:
    """SIGINT lands while the caller waits for a worker's unit: it waits that unit out, then raises.

    In a fresh interpreter (``env``), not a child of the warm forker: a signal's disposition and the
    thread pool's state are then the ones a user's process starts with, whatever earlier jobs did."""
    value = _run_fresh(
        """
        # a process started in the background inherits SIGINT ignored (no KeyboardInterrupt at all): give it
        # Python's own handler, as an interactive process has
        signal.signal(signal.SIGINT, signal.default_int_handler)
        main = threading.main_thread().ident
        result = []
        for attempt in range(10):  # a busy machine may let the caller drain the units before a worker starts
            running = [0]
            def work(u):
                if threading.get_ident() == main:
                    time.sleep(0.001)  # the caller's units are short: it soon runs out and waits
                    return
                running[0] += 1
                time.sleep(0.1)
                signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C, to the waiting caller
                time.sleep(0.3)
                running[0] -= 1
            try:
                threads.run_units(work, range(200), threads=2)
                result.append("returned")
            except KeyboardInterrupt:
                result.append(running[0])  # 0: no unit still runs once the call has raised
        workers = threads._pool.size if threads._pool is not None else 0
        result.append(check())
        result.append(workers)
        result
        """
    )
    *outcomes, checked, workers = value.strip("[]").split(", ")
    assert checked == "True", value
    if workers == "0":  # nothing to interrupt: the process could start no worker thread (its limits)
        pytest.skip("the child could start no worker thread here, so no unit ran outside the caller")
    # 'returned': the caller drained every unit before a worker took one (no signal sent)
    assert set(outcomes) <= {"0", "'returned'"} and "0" in outcomes, value


def test_ctrl_c_at_random_points_of_real_ops() -> None:
    """SIGINT at random moments of threaded ops: each op raises or finishes right, and the pool lives on."""
    value = _run(
        """
        signal.signal(signal.SIGALRM, signal.default_int_handler)  # an alarm is a Ctrl-C here
        rng = np.random.default_rng(7)
        kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES = 1 << 20, 1 << 18, 1 << 18
        big = rng.random((1024, 1024))
        interrupted = finished = 0
        for i in range(40):
            out = np.empty_like(big)
            ok = False
            try:  # the alarm may ring as soon as it is set: inside the try that takes it
                signal.setitimer(signal.ITIMER_REAL, float(rng.uniform(0.0005, 0.01)))  # one shot
                try:
                    ops.add(big, ROW.repeat(4), out=out)
                    ok = True
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except KeyboardInterrupt:
                ok = False
            if ok:
                finished += 1
                assert np.array_equal(out, big + ROW.repeat(4))
            else:
                interrupted += 1
            snap = out.copy()
            time.sleep(0.002)
            assert np.array_equal(out, snap, equal_nan=True)  # no thread goes on writing after the call
        kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES = 0, 4096, 4096
        (interrupted + finished, check())
        """,
        timeout=120.0,
    )
    assert value == "(40, True)", value


def test_absurd_thread_counts_are_capped_and_thread_limits_survived() -> None:
    """10**6 threads asked for: at most MAX_THREADS are used, and an OS refusing threads is no error."""
    body = """
        threads.set_num_threads(10**6)
        done = []
        threads.run_units(done.append, range(3000))
        ok = 1 <= threads._pool.size <= threads.MAX_THREADS - 1 and sorted(done) == list(range(3000))
        (ok, threads._pool.size < threads.MAX_THREADS - 1, check())
        """
    unlimited = attack(PRELUDE + WAIT_CHILD + textwrap.dedent(body), memory=None, timeout=60)
    assert assert_returned(unlimited) == "(True, False, True)"  # all the threads it may have
    # 8 MiB stacks in 1 GiB of address space: the OS refuses threads long before 255
    limited = attack(PRELUDE + WAIT_CHILD + textwrap.dedent(body), memory=1 << 30, timeout=60)
    assert assert_returned(limited) == "(True, True, True)"
    env_value = assert_returned(
        attack(
            PRELUDE + "threads.set_num_threads(None)\n(threads.num_threads(), check())",
            env={"BCAST_NUM_THREADS": "1000000"},
        ),
    )
    assert env_value == "(1000000, True)"
