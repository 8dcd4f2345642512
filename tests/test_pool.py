"""The output-buffer pool: recycled memory is never handed out while any array still sees it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import bcast
import bcast.ops as ops
from bcast.engines.numpy import pool

BIG = (512, 1024)  # 2 MiB of float32: above pool.MIN_BYTES
F32 = np.dtype(np.float32)


# The reuse tests collect no garbage: an array's last reference dropped, CPython frees it at once and its
# finalizer hands the buffer back (a full collection would cost a second in a process that holds the suite).


@pytest.fixture(autouse=True)
def _fresh_pool() -> Iterator[None]:
    pool.clear()
    pool.set_limit(64 << 20)
    yield
    pool.set_limit(None)
    pool.clear()


def test_a_dropped_output_is_reused() -> None:
    a = pool.empty(BIG, F32)
    addr = a.__array_interface__["data"][0]
    del a
    assert pool._held[0] == 512 * 1024 * 4
    b = pool.empty(BIG, F32)
    assert b.__array_interface__["data"][0] == addr
    assert pool._held[0] == 0


@pytest.mark.parametrize(
    "keep",
    [
        lambda a: a[1:],
        lambda a: a.reshape(-1),
        lambda a: a.T,
        lambda a: a.view(np.int32),
        lambda a: a[::2, ::3],
        lambda a: np.broadcast_to(a[:1], (4, *a.shape[1:])),
    ],
    ids=["slice", "reshape", "transpose", "view-dtype", "strided", "broadcast"],
)
def test_memory_a_view_still_sees_is_never_reused(keep) -> None:  # type: ignore[no-untyped-def]
    a = pool.empty(BIG, F32)
    a[...] = 1.0
    v = keep(a)
    before = np.array(v, copy=True)
    del a
    gc.collect()
    b = pool.empty(BIG, F32)
    b[...] = 7.0  # would overwrite v's memory if the buffer had been handed out again
    np.testing.assert_array_equal(v, before)


def test_small_object_and_disabled_outputs_are_plain_arrays() -> None:
    assert pool.empty((4, 4), F32).base is None
    assert pool.empty(BIG, np.dtype(object)).base is None
    assert pool.empty(BIG, np.dtype([("x", "f4"), ("o", object)])).base is None  # a record holding objects
    pool.set_limit(0)
    assert pool.empty(BIG, F32).base is None
    with pytest.raises(TypeError, match="set_limit"):
        pool.set_limit(-1)


def test_the_pool_keeps_at_most_its_limit() -> None:
    pool.set_limit(3 << 20)
    arrays = [pool.empty(BIG, F32) for _ in range(3)]
    del arrays
    assert pool._held[0] == 2 << 20  # one 2 MiB buffer fits under 3 MiB, the others are freed


def test_ops_and_materialize_outputs_stay_correct_across_reuse() -> None:
    x = np.arange(512 * 1024, dtype=np.float32).reshape(BIG)
    row = np.arange(1024, dtype=np.float32)
    kept = []
    for i in range(6):
        y = ops.add(x, row) if i % 2 else bcast.broadcast_to(row, BIG, copy=True)
        assert y.flags.c_contiguous and y.flags.writeable and y.dtype == np.float32
        if i % 3 == 0:
            kept.append((y[::7], np.array(y[::7], copy=True)))  # a live view pins its buffer
        del y
    for view, snapshot in kept:
        np.testing.assert_array_equal(view, snapshot)
    np.testing.assert_array_equal(ops.add(x, row), x + row)


def _object_free_dtypes() -> list[np.dtype]:
    dts = [np.dtype(d) for d in ("float32", "complex64", "bool", "datetime64[ns]", "timedelta64[s]", "S7", "U3")]
    dts.append(np.dtype([("x", "f4"), ("n", "i2")]))
    try:
        import ml_dtypes
    except ImportError:  # bfloat16 and float8 then have no dtype to test
        return dts
    return [*dts, np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn)]


@pytest.mark.parametrize("dtype", _object_free_dtypes(), ids=str)
def test_every_dtype_without_objects_is_pooled_and_reused(dtype: np.dtype) -> None:
    """bfloat16 (dtype kind V) included: a fresh 128 MB array of it costs some 17 ms of page faults."""
    shape = (2048, 1024)  # 1 MiB or more at one byte an element
    a = pool.empty(shape, dtype)
    assert a.base is not None and a.dtype == dtype and a.shape == shape and a.flags.c_contiguous
    addr = a.__array_interface__["data"][0]
    a.view(np.uint8)[...] = 0xAB  # its memory is its own, and writeable
    del a
    b = pool.empty(shape, dtype)
    assert b.__array_interface__["data"][0] == addr and b.dtype == dtype


def test_bfloat16_results_come_from_the_pool() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    x = np.ones(BIG, ml_dtypes.bfloat16)
    row = np.full(BIG[1], 2, ml_dtypes.bfloat16)
    first = ops.mul(x, row)
    addr = first.__array_interface__["data"][0]
    np.testing.assert_array_equal(first.astype(np.float32), 2.0)
    del first
    again = ops.mul(x, row)
    assert again.__array_interface__["data"][0] == addr  # the same pooled buffer, not fresh pages
    np.testing.assert_array_equal(again.astype(np.float32), 2.0)


@pytest.mark.parametrize("shape", [(1024, 1024), (3, 1 << 20), (1 << 20, 3)])  # 1 MiB or more of any dtype
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "float16"])
def test_pooled_outputs_start_on_a_page(shape: tuple[int, ...], dtype: str) -> None:
    """Fresh and reused alike: whole-vector stores never straddle a cache line, and no output sits
    just after an input at malloc's usual offset within a page (4K aliasing)."""
    dt = np.dtype(dtype)
    a = pool.empty(shape, dt)
    assert a.__array_interface__["data"][0] % pool.PAGE == 0
    assert a.shape == shape and a.dtype == dt and a.flags.c_contiguous and a.flags.writeable
    a[...] = 1  # the whole array is memory of its own
    del a
    b = pool.empty(shape, dt)
    assert b.__array_interface__["data"][0] % pool.PAGE == 0


def test_the_allocation_check_runs_only_for_new_memory() -> None:
    """A reused buffer takes no memory from the system: nothing to refuse, and reading what is left costs."""
    calls = []

    def check() -> None:
        calls.append(1)

    a = pool.empty(BIG, F32, check)
    assert calls == [1]
    del a
    b = pool.empty(BIG, F32, check)
    assert calls == [1]
    c = pool.empty(BIG, F32, check)  # b is alive: new memory, checked
    assert calls == [1, 1]
    assert pool.empty((4, 4), F32, check).shape == (4, 4)  # small: malloc's, checked as any allocation
    assert calls == [1, 1, 1]
    del b, c


def test_a_refused_allocation_takes_nothing() -> None:
    def refuse() -> None:
        raise bcast.BroadcastError("no room")

    with pytest.raises(bcast.BroadcastError, match="no room"):
        pool.empty(BIG, F32, refuse)
    assert pool._held[0] == 0
