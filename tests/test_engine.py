"""The threaded engine against NumPy as the oracle: copies, elementwise ops, sums, caching, memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcast
import bcast.ops as ops
from bcast.cache import arg_key
from bcast.engines.numpy import kernels, threads
from bcast.rules import PLANS


@pytest.fixture
def tiny_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the threaded, chunked paths on small arrays: 2 threads, units of a few hundred bytes."""
    monkeypatch.setattr(kernels, "SERIAL_BYTES", 0)
    monkeypatch.setattr(kernels, "UNIT_BYTES", 256)
    monkeypatch.setattr(kernels, "BLOCK_BYTES", 256)
    threads.set_num_threads(2)
    yield
    threads.set_num_threads(None)


DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64, np.complex64, "U3"]

MATERIALIZE = [
    ((256 // 32, 1, 1), (3, 8, 13, 7), "numpy", None),
    ((5, 7), (3, 5, 7, 3), "explicit", [1, 2]),
    ((17,), (9, 17), "numpy", None),
    ((9, 1), (9, 17), "numpy", None),
    ((1, 1), (0, 5), "numpy", None),
    ((), (4, 3), "numpy", None),
    ((3, 1, 5), (2, 3, 4, 5), "numpy", None),
]


@pytest.mark.usefixtures("tiny_units")
@pytest.mark.parametrize(("d", "t", "mode", "axes"), MATERIALIZE)
@pytest.mark.parametrize("dtype", DTYPES)
def test_materialize_matches_numpy(
    d: tuple[int, ...], t: tuple[int, ...], mode: str, axes: object, dtype: object
) -> None:
    x = (np.arange(int(np.prod(d))).reshape(d) % 7).astype(dtype)
    p = bcast.plan(d, t, mode, axes_mapping=axes)
    aligned = x if axes is None else x.reshape([d[axes.index(k)] if k in axes else 1 for k in range(len(t))])
    expected = np.broadcast_to(aligned, t).copy()
    got = p.materialize(x)
    assert got.dtype == expected.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
    out = np.empty(t, dtype=x.dtype)
    assert p.materialize(x, out=out) is out
    np.testing.assert_array_equal(out, expected)


@pytest.mark.usefixtures("tiny_units")
def test_materialize_object_and_non_contiguous() -> None:
    x = np.array([[1], ["a"], [None]], dtype=object)
    np.testing.assert_array_equal(bcast.broadcast_to(x, (2, 3, 4), copy=True), np.broadcast_to(x, (2, 3, 4)))
    y = np.arange(60.0).reshape(5, 12)[::2, ::3]  # strided data
    p = bcast.plan(y.shape, (4, 3, 4))
    np.testing.assert_array_equal(p.materialize(y), np.broadcast_to(y, (4, 3, 4)))
    out = np.empty((4, 4, 3)).transpose(0, 2, 1)  # a non-contiguous out=
    p.materialize(y, out=out)
    np.testing.assert_array_equal(out, np.broadcast_to(y, (4, 3, 4)))


@pytest.mark.usefixtures("tiny_units")
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=4),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from(["add", "mul", "div", "pow", "sub"]),
)
def test_ops_match_numpy(shape: list[int], ones: list[bool], op: str) -> None:
    small = tuple(1 if ones[k] else n for k, n in enumerate(shape))
    rng = np.random.default_rng(len(shape))
    a = rng.random(shape, dtype=np.float32) + np.float32(0.5)
    b = rng.random(small, dtype=np.float32) + np.float32(0.5)
    ref = {"add": np.add, "mul": np.multiply, "div": np.divide, "pow": np.power, "sub": np.subtract}[op]
    np.testing.assert_allclose(getattr(ops, op)(a, b), ref(a, b), rtol=1e-6)
    np.testing.assert_allclose(getattr(ops, op)(b, a), ref(b, a), rtol=1e-6)


@pytest.mark.usefixtures("tiny_units")
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint16, np.float16, np.float32, np.complex128, "U2"])
def test_where_matches_numpy(dtype: object) -> None:
    c = (np.arange(7 * 11 * 3).reshape(7, 11, 3) % 3 == 0)[:, :, :1]
    x = (np.arange(7 * 11 * 3).reshape(7, 11, 3) % 5).astype(dtype)
    y = (np.arange(3) + 7).astype(dtype)
    got = ops.where(c, x, y)
    np.testing.assert_array_equal(got, np.where(c, x, y))
    assert got.dtype == np.where(c, x, y).dtype


@pytest.mark.usefixtures("tiny_units")
def test_where_keeps_nan_payloads_and_signed_zeros() -> None:
    x = np.array([np.nan, -0.0, np.inf, 1.0] * 40, np.float32).reshape(40, 4)
    y = np.array([0.0, 0.0, -np.inf, -0.0], np.float32)
    c = np.arange(160).reshape(40, 4) % 2 == 0
    got = ops.where(c, x, y)
    assert got.view(np.uint32).tolist() == np.where(c, x, y).view(np.uint32).tolist()


@pytest.mark.usefixtures("tiny_units")
def test_out_aliasing_an_input_and_variadic_folds() -> None:
    a = np.arange(60.0).reshape(6, 10)
    expected = a + np.arange(10.0)
    ops.add(a, np.arange(10.0), out=a)
    np.testing.assert_array_equal(a, expected)
    shifted = np.arange(12.0)
    ops.add(shifted[:-1], np.ones(11), out=shifted[1:])  # overlapping, shifted: NumPy's own semantics
    ref = np.arange(12.0)
    np.add(ref[:-1], np.ones(11), out=ref[1:])
    np.testing.assert_array_equal(shifted, ref)
    parts = [np.ones((4, 1, 3)), np.arange(5.0).reshape(5, 1), np.arange(3.0), np.float64(2.0)]
    np.testing.assert_array_equal(ops.sum(*parts), parts[0] + parts[1] + parts[2] + parts[3])


@pytest.mark.usefixtures("tiny_units")
def test_integer_div_error_unchanged_by_units() -> None:
    a = np.arange(40, dtype=np.int32).reshape(4, 10)
    b = np.array([1, 2, 0, 4, 5, 6, 7, 8, 9, 10], np.int32)
    with pytest.raises(ZeroDivisionError, match="1 of the divisor's 10 elements"):
        ops.div(a, b)


@pytest.mark.usefixtures("tiny_units")
@pytest.mark.parametrize(
    ("d", "t"),
    [((5, 1, 1), (3, 5, 7, 9)), ((9,), (11, 9)), ((11, 1), (11, 9)), ((1, 7, 1), (3, 7, 5)), ((1,), (0, 3))],
)
@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.int64, np.float16, np.float32, np.float64, np.complex64])
def test_backward_matches_numpy_sum(d: tuple[int, ...], t: tuple[int, ...], dtype: object) -> None:
    g = (np.arange(int(np.prod(t))).reshape(t) % 5).astype(dtype)
    p = bcast.plan(d, t)
    axes = p.broadcast_axes
    acc = np.float32 if np.dtype(dtype) == np.float16 else None
    expected = np.add.reduce(g, axis=axes, dtype=acc).astype(dtype).reshape(d)
    got = p.backward(g)
    assert got.dtype == np.dtype(dtype) and got.shape == d
    np.testing.assert_allclose(got.astype(np.complex128), expected.astype(np.complex128), rtol=1e-3)


def test_coalesce_and_units_cover_everything() -> None:
    assert kernels.coalesce((2, 3, 4), [(12, 4, 1), (0, 0, 1)]) == ((6, 4), [(4, 1), (0, 1)])
    marks = np.zeros((5, 7, 3), int)
    for u in kernels.units(marks.shape, 8):
        marks[u] += 1
    assert (marks == 1).all()


@pytest.mark.parametrize(
    ("a", "b"),
    [((1,), (True,)), ((1,), [1]), ([1], "[1]"), ((1,), (np.int64(1),)), ((2, 3), bcast.Shape("[2,3]"))],
)
def test_cache_keys_tell_arguments_apart(a: object, b: object) -> None:
    ka, kb = arg_key(a), arg_key(b)
    assert ka is None or kb is None or ka != kb


def test_cached_plans_quote_the_arguments_as_given() -> None:
    PLANS.clear()
    assert bcast.plan((3,), (2, 3)).given == ("(3,)", "(2, 3)")
    assert bcast.plan([3], [2, 3]).given == ("[3]", "[2, 3]")
    assert bcast.plan((3,), (2, 3)) is bcast.plan((3,), (2, 3))
    with pytest.raises(TypeError):
        bcast.plan((True,), (2, 1))
    with pytest.raises(bcast.BroadcastError, match=r"\[4\]"):
        bcast.broadcast_shapes([4], (2, 3))
    assert bcast.broadcast_shapes((3, 1), (2, 3, 4)) == np.broadcast_shapes((3, 1), (2, 3, 4))


def test_memory_materialize_peaks_at_output_and_ops_never_materialise() -> None:
    x = np.ones((64, 1, 1), np.float32)
    p = bcast.plan(x.shape, (8, 64, 64, 64))
    out_bytes = 8 * 64 * 64 * 64 * 4
    p.materialize(x)  # warm the plan and pool
    tracemalloc.start()
    y = p.materialize(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert y.nbytes == out_bytes and peak < out_bytes + (1 << 20)
    a = np.ones((2048, 1024), np.float32)
    row = np.ones((1024,), np.float32)
    cond = np.ones((2048, 1), bool)
    for fn, args in ((ops.add, (a, row)), (ops.pow, (a, row)), (ops.where, (cond, row, a))):
        fn(*args)
        tracemalloc.start()
        r = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < r.nbytes + r.nbytes // 2, fn  # the output, plus a few cache-sized blocks per thread
