"""Hostile and careless values: out= aliasing the inputs, out with internal overlap, big-endian
arrays, attempts to change a cached plan, and inputs that must come back untouched.

The oracle is always NumPy computed on copies of the inputs taken before the call: an
``out=`` that shares memory with an input must give exactly the values it would give if
it did not, on one thread or several, and must change nothing in memory but ``out``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import bcast
import bcast.ops as ops
import bcast.ops._base as op_base
from bcast import BroadcastError
from bcast.engines.numpy import kernels, threads
from bcast.ops.grad import vjp
from bcast.plan import FrozenPlanError
from hostile import steps

F32, F64, I8, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int32, np.int64, np.bool_))


@contextmanager
def engine(n_threads: int, *, tiny: bool = True) -> Iterator[None]:
    """``n_threads`` threads; with ``tiny``, the threaded, unit-by-unit paths on arrays of a few hundred bytes."""
    saved = kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES
    if tiny:
        kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES = 0, 64, 64
    threads.set_num_threads(n_threads)
    try:
        yield
    finally:
        kernels.SERIAL_BYTES, kernels.UNIT_BYTES, kernels.BLOCK_BYTES = saved
        threads.set_num_threads(None)


# --------------------------------------------------------------------------------------
# The operators, each with the dtypes it takes here and its NumPy oracle. Input values are
# 1..7 (+0.5 for floats), where ONNX's integer Div, Mod, Pow and BitShift agree with NumPy.
# --------------------------------------------------------------------------------------
def _fold(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *xs: functools.reduce(fn, xs)


Case = tuple[Callable[..., np.ndarray], Callable[..., Any], int, tuple[np.dtype[Any], ...], bool]

ARITH = (F32, F64, I32, I64)
#: name: (bcast op, NumPy oracle, arity, dtypes, bool output)
OPS: dict[str, Case] = {
    "add": (ops.add, np.add, 2, ARITH, False),
    "sub": (ops.sub, np.subtract, 2, ARITH, False),
    "mul": (ops.mul, np.multiply, 2, ARITH, False),
    "div": (ops.div, lambda a, b: np.divide(a, b) if a.dtype.kind == "f" else np.floor_divide(a, b), 2, ARITH, False),
    "mod": (ops.mod, np.remainder, 2, ARITH, False),
    "fmod": (functools.partial(ops.mod, fmod=1), np.fmod, 2, ARITH, False),
    "pow": (ops.pow, np.power, 2, ARITH, False),
    "bitwise_and": (ops.bitwise_and, np.bitwise_and, 2, (I32, I64), False),
    "bitwise_or": (ops.bitwise_or, np.bitwise_or, 2, (I32, I64), False),
    "bitwise_xor": (ops.bitwise_xor, np.bitwise_xor, 2, (I32, I64), False),
    "shift_left": (functools.partial(ops.bitshift, direction="LEFT"), np.left_shift, 2, (I32, I64), False),
    "shift_right": (functools.partial(ops.bitshift, direction="RIGHT"), np.right_shift, 2, (I32, I64), False),
    "equal": (ops.equal, np.equal, 2, (I8, BOOL), True),
    "greater": (ops.greater, np.greater, 2, (I8,), True),
    "greater_or_equal": (ops.greater_or_equal, np.greater_equal, 2, (I8,), True),
    "less": (ops.less, np.less, 2, (I8,), True),
    "less_or_equal": (ops.less_or_equal, np.less_equal, 2, (I8,), True),
    "and": (ops.and_, np.logical_and, 2, (BOOL,), True),
    "or": (ops.or_, np.logical_or, 2, (BOOL,), True),
    "xor": (ops.xor, np.logical_xor, 2, (BOOL,), True),
    "max3": (ops.max, _fold(np.maximum), 3, ARITH, False),
    "min3": (ops.min, _fold(np.minimum), 3, ARITH, False),
    "sum3": (ops.sum, _fold(np.add), 3, (F32, F64), False),
    "sum4": (ops.sum, _fold(np.add), 4, (F32, F64), False),
    "mean3": (ops.mean, lambda *xs: functools.reduce(np.add, xs) / len(xs), 3, (F32, F64), False),
    "max1": (ops.max, lambda x: x, 1, ARITH, False),
    "where": (ops.where, np.where, 3, (F32, F64, I32, I64, BOOL), False),
}

PATTERNS = ("fresh", "same", "shift", "row", "column", "reversed", "transposed", "scalar")
FULL = ("fresh", "same", "shift", "reversed", "transposed")  # patterns giving an input of out's whole shape


def _values(rng: np.random.Generator, shape: tuple[int, ...] | int, dtype: np.dtype[Any]) -> np.ndarray:
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    v = rng.integers(1, 8, shape)
    return (v + 0.5).astype(dtype) if dtype.kind == "f" else v.astype(dtype)


class Layout:
    """Out and the aliased inputs as views of one buffer ``base``: out is ``base[o:o + R*C]`` as (R, C)."""

    def __init__(self, rows: int, cols: int, out_reversed: bool) -> None:
        self.r, self.c = rows, cols
        self.o = cols + 1  # room on both sides for shifted inputs
        self.length = (rows + 2) * cols + 2
        self.out_reversed = out_reversed

    def out(self, base: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
        v = base[self.o : self.o + self.r * self.c].reshape(self.r, self.c)
        v = v[::-1] if self.out_reversed else v
        return v if v.dtype == dtype else v.view(dtype)

    def input(self, base: np.ndarray, pattern: str, d: int) -> np.ndarray:
        r, c, o = self.r, self.c, self.o
        whole = base[o : o + r * c].reshape(r, c)
        if pattern == "same":
            return whole
        if pattern == "shift":  # d in -(c+1)..c+1, not 0
            return base[o + d : o + d + r * c].reshape(r, c)
        if pattern == "row":  # a run of c elements anywhere in or beside out: broadcast down the rows
            start = (o + d) % (self.length - c)
            return base[start : start + c]
        if pattern == "column":  # a column of out: broadcast along the rows
            return whole[:, d % c : d % c + 1]
        if pattern == "reversed":
            return whole[::-1, ::-1]
        if pattern == "transposed":
            return whole.T if r == c else whole[::-1]
        assert pattern == "scalar"  # one element of out, broadcast everywhere (all strides 0)
        k = o + d % (r * c)
        return base[k : k + 1].reshape(())


@st.composite
def aliasing(draw: st.DrawFn, name: str) -> dict[str, Any]:
    _, _, arity, dtypes, _ = OPS[name]
    dtype = draw(st.sampled_from(dtypes))
    rows, cols = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    pats = [draw(st.sampled_from(FULL if i == 0 else PATTERNS)) for i in range(arity)]
    if name == "where":  # the condition is bool: it shares the buffer only when x and y are bool too
        pats = [draw(st.sampled_from(PATTERNS if dtype == BOOL else ("fresh",))), draw(st.sampled_from(FULL)), pats[2]]
    if all(p == "fresh" for p in pats):
        pats[-1] = "same"  # every example aliases something
    shifts = [draw(st.integers(-(cols + 1), cols + 1).filter(bool)) for _ in range(arity)]
    return {
        "name": name,
        "dtype": dtype,
        "rows": rows,
        "cols": cols,
        "patterns": pats,
        "shifts": shifts,
        "out_reversed": draw(st.booleans()),
        "threads": draw(st.sampled_from((1, 2))),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def _build(case: dict[str, Any], base: np.ndarray, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
    lay = Layout(case["rows"], case["cols"], case["out_reversed"])
    name, dtype = case["name"], case["dtype"]
    inputs = []
    for i, (p, d) in enumerate(zip(case["patterns"], case["shifts"], strict=True)):
        in_dtype = BOOL if name == "where" and i == 0 else dtype
        if p == "fresh":
            inputs.append(_values(rng, (lay.r, lay.c), in_dtype))
        else:
            inputs.append(lay.input(base, p, d))
    bool_out = OPS[name][4]
    return inputs, lay.out(base, BOOL if bool_out else dtype)


@pytest.mark.parametrize("name", sorted(OPS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_out_aliasing_inputs_gives_numpys_answer_on_copies(name: str, data: st.DataObject) -> None:
    case = data.draw(aliasing(name), label="case")
    op, oracle, _, _, _ = OPS[name]
    rng = np.random.default_rng(case["seed"])
    lay = Layout(case["rows"], case["cols"], case["out_reversed"])
    base = _values(rng, lay.length, case["dtype"])
    inputs, out = _build(case, base, rng)
    copies = [np.array(x, copy=True) for x in inputs]
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(oracle(*copies), out.shape).astype(out.dtype)
    # what the whole buffer must hold afterwards: the expected values where out is, the rest untouched
    want = base.copy()
    want_out = lay.out(want, out.dtype)
    want_out[...] = expected
    with engine(case["threads"]):
        got = op(*inputs, out=out)
    assert got is out
    if name == "pow" and out.dtype.kind == "f":
        # NumPy's float power is not correctly rounded, and its SIMD and strided loops differ in
        # the last bit: compare pow within an ulp or so (a value read from the wrong element is far off)
        np.testing.assert_allclose(out, expected, rtol=4 * np.finfo(out.dtype).eps)
        want_out[...] = out
    else:
        np.testing.assert_array_equal(out, expected)
    assert base.tobytes() == want.tobytes(), "memory outside out changed, or out holds other bytes"


# --------------------------------------------------------------------------------------
# The reported case at its real size: where with out one row below y, on the threaded path.
# (On the old code: about 120 000 wrong values of 4 million at 2048 x 2048.)
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("dtype", "broadcast_x"), [(np.float64, False), (np.int64, True)])
def test_where_into_a_shifted_slice_of_y_real_size(dtype: Any, broadcast_x: bool) -> None:
    n = 2048  # 32 MiB outputs: threaded in 4 MiB blocks and 256 KiB units with the real constants
    assert n * n * 8 > kernels.SERIAL_BYTES and threads.num_threads() >= 1
    rng = np.random.default_rng(1)
    big = rng.integers(0, 1000, (n + 1, n)).astype(dtype)
    c = rng.random((n, n)) < 0.5
    x = rng.integers(0, 1000, (n,) if broadcast_x else (n, n)).astype(dtype)
    y = big[:-1]
    expected = np.where(c, x, y.copy())
    with engine(2, tiny=False):
        got = ops.where(c, x, y, out=big[1:])
    assert got.base is big or got.base is big.base
    assert np.count_nonzero(got != expected) == 0
    np.testing.assert_array_equal(big[1:], expected)


@pytest.mark.parametrize("name", ["add", "sum3", "pow", "div"])
def test_binary_and_variadic_into_a_shifted_slice_real_size(name: str) -> None:
    n = 1024  # 8 MiB outputs: above SERIAL_BYTES, two 4 MiB blocks on two threads
    op, oracle, arity, _, _ = OPS[name]
    rng = np.random.default_rng(2)
    big = _values(rng, (n + 1, n), F64)
    extra = [_values(rng, (n,), F64) for _ in range(arity - 1)]
    inputs = [big[:-1], *extra] if name != "sum3" else [extra[0], extra[1], big[:-1]]  # a late fold operand
    expected = oracle(*[x.copy() for x in inputs])
    with engine(2, tiny=False):
        op(*inputs, out=big[1:])
    np.testing.assert_array_equal(big[1:], expected)


# --------------------------------------------------------------------------------------
# Plan.materialize (and broadcast_to's copy) with out aliasing the data.
# --------------------------------------------------------------------------------------
MATERIALIZE_OVERLAPS: dict[str, Callable[[np.ndarray], tuple[bcast.Plan, np.ndarray, np.ndarray]]] = {
    # buffer of 64 elements: (plan, x, out), out a (8, 8) view of it
    "out-is-x": lambda b: (bcast.plan((8, 8), (8, 8), "none"), b.reshape(8, 8), b.reshape(8, 8)),
    "row-inside-out": lambda b: (bcast.plan((8,), (8, 8)), b[24:32], b.reshape(8, 8)),
    "column-of-out": lambda b: (bcast.plan((8, 1), (8, 8)), b.reshape(8, 8)[:, 3:4], b.reshape(8, 8)),
    "shifted": lambda b: (bcast.plan((7, 8), (7, 8)), b[:56].reshape(7, 8), b[8:].reshape(7, 8)),
    "reversed": lambda b: (bcast.plan((8, 8), (8, 8)), b.reshape(8, 8)[::-1, ::-1], b.reshape(8, 8)),
    "transposed": lambda b: (bcast.plan((8, 8), (8, 8), "bidirectional"), b.reshape(8, 8).T, b.reshape(8, 8)),
    "explicit": lambda b: (
        bcast.plan((8,), (8, 8), "explicit", axes_mapping=[0]),
        b[::8],
        b.reshape(8, 8),
    ),
    "scalar": lambda b: (bcast.plan((), (8, 8)), b[9:10].reshape(()), b.reshape(8, 8)),
}


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, BOOL])
@pytest.mark.parametrize("name", list(MATERIALIZE_OVERLAPS))
def test_materialize_into_out_aliasing_x(name: str, dtype: np.dtype[Any], n_threads: int) -> None:
    base = _values(np.random.default_rng(3), 64, dtype)
    p, x, out = MATERIALIZE_OVERLAPS[name](base)
    expected = np.broadcast_to(p(x.copy()), out.shape).copy()
    with engine(n_threads):
        assert p.materialize(x, out=out) is out
    np.testing.assert_array_equal(out, expected)


def test_materialize_into_a_shifted_slice_real_size() -> None:
    rng = np.random.default_rng(4)
    big = rng.random((1025, 1024))  # 8 MiB: the threaded copy with the real constants
    x = big[:-1]
    expected = x.copy()
    with engine(2, tiny=False):
        bcast.plan((1024, 1024), (1024, 1024), "none").materialize(x, out=big[1:])
    np.testing.assert_array_equal(big[1:], expected)
    row = big[5]
    expected_rows = np.broadcast_to(row.copy(), (1025, 1024))
    with engine(2, tiny=False):
        bcast.plan((1024,), (1025, 1024)).materialize(row, out=big)
    np.testing.assert_array_equal(big, expected_rows)


def test_an_out_apart_from_the_inputs_is_written_directly() -> None:
    """The contrast, and the fast path: an out beside the inputs in one buffer is no overlap, and no copy."""
    buf = np.arange(40.0)
    a, out = buf[:20].reshape(4, 5), buf[20:].reshape(4, 5)
    assert ops.add(a, np.float64(1), out=out) is out
    np.testing.assert_array_equal(buf[20:], np.arange(20.0) + 1)
    np.testing.assert_array_equal(buf[:20], np.arange(20.0))
    evens, odds = buf[::2], buf[1::2]  # interleaved: their bounds overlap, their elements do not
    assert not kernels.overlaps(evens, odds) and np.may_share_memory(evens, odds)
    ops.mul(evens, np.float64(2), out=odds)
    np.testing.assert_array_equal(buf[1::2], buf[::2] * 2)


def test_in_place_ufunc_is_computed_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """``add(a, b, out=a)`` needs no fresh buffer (each element reads only itself); a shifted out does."""
    fresh: list[tuple[int, ...]] = []
    real = op_base.pooled_empty

    def spy(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        fresh.append(shape)
        return real(shape, dtype)

    monkeypatch.setattr(op_base, "pooled_empty", spy)
    a = np.arange(20.0).reshape(4, 5)
    with engine(2):
        ops.add(a, np.arange(5.0), out=a)
    np.testing.assert_array_equal(a, np.arange(20.0).reshape(4, 5) + np.arange(5.0))
    assert fresh == []
    buf = np.arange(25.0)
    with engine(2):
        ops.add(buf[:20].reshape(4, 5), np.float64(1), out=buf[5:].reshape(4, 5))
    np.testing.assert_array_equal(buf[5:], np.arange(20.0) + 1)
    assert fresh == [(4, 5)]


def test_pdpd_mode_out_aliasing_b() -> None:
    buf = np.arange(1.0, 31.0)
    a = np.ones((2, 3, 4))
    b = buf[:3]  # pdpd places B (3,) at axis 1 of A
    out = buf[:24].reshape(2, 3, 4)  # out's first elements are B
    expected = a + b.copy().reshape(3, 1)
    with engine(2):
        ops.add(a, b, mode="pdpd", axis=1, out=out)
    np.testing.assert_array_equal(out, expected)


def test_compare_into_a_bool_view_of_an_int32_input() -> None:
    """Out's bytes overlap the input's with another element size: still NumPy's answer on copies."""
    raw = np.arange(1, 33, dtype=np.int32)
    a = raw[:8]
    out = raw.view(np.bool_)[:32].reshape(4, 8)  # 32 bytes: the first 8 int32 elements, the input
    b = np.array([[1], [3], [5], [7]], np.int32)
    expected = np.greater(a.copy(), b)
    with engine(2):
        ops.greater(a, b, out=out)
    np.testing.assert_array_equal(out, expected)


# --------------------------------------------------------------------------------------
# out= with internal overlap: refused on every path.
# --------------------------------------------------------------------------------------
def _bad_outs(dtype: np.dtype[Any]) -> dict[str, np.ndarray]:
    """Writeable (4, 8) arrays in which some elements share memory."""
    size = dtype.itemsize
    buf = np.zeros(64, dtype)
    raw = np.zeros(64 * size, np.uint8)
    return {
        "zero-stride-rows": as_strided(buf, (4, 8), (0, size), writeable=True),
        "zero-stride-columns": as_strided(buf, (4, 8), (8 * size, 0), writeable=True),
        "folded-rows": as_strided(buf, (4, 8), (4 * size, size), writeable=True),  # row i+1 starts mid row i
        # elements half an element apart: neighbours share bytes
        "half-element": np.ndarray((4, 8), dtype, raw, 0, (4 * size, size // 2)),
        "irregular": as_strided(buf, (4, 8), (3 * size, 2 * size), writeable=True),
    }


OUT_USERS: dict[str, Callable[[np.ndarray], object]] = {
    "add": lambda out: ops.add(np.ones((4, 8)), np.arange(8.0), out=out),
    "pow": lambda out: ops.pow(np.ones((4, 8)), np.arange(8.0), out=out),
    "sum3": lambda out: ops.sum(np.ones((4, 1)), np.arange(8.0), np.float64(1), out=out),
    "mean1": lambda out: ops.mean(np.ones((4, 8)), out=out),
    "where": lambda out: ops.where(np.eye(4, 8, dtype=bool), np.ones((4, 8)), np.zeros(8), out=out),
    "materialize": lambda out: bcast.plan((8,), (4, 8)).materialize(np.arange(8.0), out=out),
    "materialize-view": lambda out: bcast.plan((4, 8), (4, 8), "none").materialize(np.ones((4, 8)), out=out),
    "prelu": lambda out: ops.prelu(-np.ones((4, 8)), np.full(8, 0.5), out=out),
}


@pytest.mark.parametrize("user", list(OUT_USERS))
@pytest.mark.parametrize("bad", ["zero-stride-rows", "zero-stride-columns", "folded-rows", "half-element", "irregular"])
def test_out_with_internal_overlap_is_refused(user: str, bad: str) -> None:
    out = _bad_outs(F64)[bad]
    assert out.flags.writeable
    before = np.array(out, copy=True)
    with engine(2), pytest.raises(BroadcastError, match="out has internal overlap") as info:
        OUT_USERS[user](out)
    assert len(str(info.value).encode()) < 2048
    np.testing.assert_array_equal(out, before)  # refused before anything was written


def test_internal_overlap_tells_interleaved_strides_apart() -> None:
    """The contrast: strides that interleave without sharing a byte are accepted, and filled right."""
    buf = np.zeros(64)
    interleaved = as_strided(buf, (2, 4), (8, 16), writeable=True)  # columns of evens, then odds
    assert not kernels.internal_overlap(interleaved)
    irregular = as_strided(buf, (2, 3), (24, 16), writeable=True)  # offsets 0,16,32,24,40,56: apart
    assert not kernels.internal_overlap(irregular)
    ops.add(np.arange(6.0).reshape(2, 3), np.float64(1), out=irregular)
    np.testing.assert_array_equal(irregular, np.arange(6.0).reshape(2, 3) + 1)
    assert kernels.internal_overlap(as_strided(buf, (3, 3), (16, 8), writeable=True))  # rows overlap by one
    for bad in _bad_outs(F64).values():
        assert kernels.internal_overlap(bad)
    assert not kernels.internal_overlap(np.zeros((5, 0)))
    assert not kernels.internal_overlap(np.zeros((4, 6))[::2, ::-3])


def test_internal_overlap_of_a_huge_irregular_out_is_refused_not_scanned() -> None:
    buf = np.zeros(8)
    huge = as_strided(buf, (1 << 11, 1 << 11), (24, 16), writeable=False)  # offsets fold: overlap
    assert kernels.internal_overlap(huge)  # beyond the exact check's size: counted as overlapping, at once


# --------------------------------------------------------------------------------------
# Big-endian arrays: every entry point takes them and gives NumPy's values and dtypes.
# --------------------------------------------------------------------------------------
BIG_ENDIAN = [np.dtype(">f8"), np.dtype(">f4"), np.dtype(">i4"), np.dtype(">i8"), np.dtype(">f2")]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", BIG_ENDIAN)
def test_big_endian_views_copies_and_sums(dtype: np.dtype[Any], n_threads: int) -> None:
    x = np.arange(12).reshape(3, 4).astype(dtype)
    native = x.astype(dtype.newbyteorder("="))
    p = bcast.plan((3, 4), (2, 3, 4))
    with engine(n_threads):
        v = p(x)
        assert v.dtype == x.dtype and not v.flags.writeable
        np.testing.assert_array_equal(v, np.broadcast_to(native, (2, 3, 4)))
        m = p.materialize(x)
        assert m.dtype == np.broadcast_to(x, (2, 3, 4)).copy().dtype  # a copy keeps the byte order, as NumPy's
        np.testing.assert_array_equal(m, np.broadcast_to(native, (2, 3, 4)))
        for out_dtype in (dtype, dtype.newbyteorder("=")):  # out of either byte order: NumPy copies between them
            out = np.zeros((2, 3, 4), out_dtype)
            assert p.materialize(x, out=out) is out
            np.testing.assert_array_equal(out, np.broadcast_to(native, (2, 3, 4)))
        dy = np.arange(24).reshape(2, 3, 4).astype(dtype)
        g = bcast.plan((1, 4), (2, 3, 4)).backward(dy)
        ref = np.add.reduce(dy, axis=(0, 1), keepdims=True, dtype=np.float32 if dtype.kind == "f" else None)
        assert g.dtype == dtype.newbyteorder("=")  # a sum is native, as NumPy's np.add.reduce
        np.testing.assert_array_equal(g, ref.reshape(1, 4).astype(g.dtype))
        u = bcast.unbroadcast(dy, (3, 1))
        assert u.dtype == dtype.newbyteorder("=")
        np.testing.assert_array_equal(u, dy.astype(u.dtype).sum(axis=(0, 2)).reshape(3, 1))
        same = bcast.plan((2, 3, 4), (2, 3, 4)).backward(dy)  # no axis to sum: a copy, native too
        assert same.dtype == dtype.newbyteorder("=")
        np.testing.assert_array_equal(same, dy)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_big_endian_operands_of_every_op(n_threads: int) -> None:
    rng = np.random.default_rng(5)
    for name, (op, oracle, arity, dtypes, _) in OPS.items():
        for dtype in dtypes:
            if dtype.byteorder == "|":
                continue  # bool and int8 have no byte order
            shapes = [(6, 5), (5,), (6, 1), ()][:arity]
            natives = [_values(rng, s, dtype) for s in shapes]
            if name == "where":
                natives[0] = rng.random((6, 5)) < 0.5
            swapped = [x if x.dtype == BOOL else x.astype(x.dtype.newbyteorder(">")) for x in natives]
            mixed = [s if i % 2 else n for i, (n, s) in enumerate(zip(natives, swapped, strict=True))]
            with np.errstate(all="ignore"):
                expected = np.asarray(oracle(*natives))
            for args in (swapped, mixed):
                before = [a.tobytes() for a in args]
                with engine(n_threads):
                    got = op(*args)
                    assert got.dtype == expected.dtype, (name, dtype, got.dtype, expected.dtype)
                    np.testing.assert_array_equal(got, expected, err_msg=f"{name} {dtype}")
                    for out_dtype in (expected.dtype, expected.dtype.newbyteorder(">")):
                        out = np.zeros(expected.shape, out_dtype)
                        assert op(*args, out=out) is out
                        np.testing.assert_array_equal(out, expected, err_msg=f"{name} {dtype} out {out_dtype}")
                assert [a.tobytes() for a in args] == before


def test_big_endian_bit_kernels_and_where_fast_path() -> None:
    """The kernels that look at bits (bitshift's unsigned view, where's masks) must not read swapped bytes."""
    x = np.array([1, -2, 3, -4, 1 << 20], ">i4")
    n = np.array([1, 2, 3, 4, 5], ">i4")
    np.testing.assert_array_equal(ops.bitshift(x, n, direction="LEFT"), x.astype(np.int32) << n.astype(np.int32))
    np.testing.assert_array_equal(ops.bitshift(x, n, direction="RIGHT"), x.astype(np.int32) >> n.astype(np.int32))
    c = np.array([True, False, True, False, True])
    a, b = np.arange(5.0).astype(">f8"), -np.arange(5.0)
    with engine(2):
        np.testing.assert_array_equal(ops.where(c, a, b), np.where(c, a.astype(float), b))
        np.testing.assert_array_equal(ops.where(c, b, a), np.where(c, b, a.astype(float)))


def test_big_endian_gradients() -> None:
    a = np.arange(1.0, 7.0).reshape(2, 3).astype(">f8")
    b = np.arange(1.0, 4.0).astype(">f8")
    dy = np.ones((2, 3), ">f8")
    na, nb, ndy = a.astype(float), b.astype(float), dy.astype(float)
    for op in ("add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum"):
        got = vjp(op, a, b, dy=dy)
        want = vjp(op, na, nb, dy=ndy)
        for g, w, x in zip(got, want, (a, b), strict=True):
            assert g.shape == x.shape and g.dtype == x.dtype  # each gradient in its input's dtype (the contract)
            np.testing.assert_array_equal(g, w)
        mixed = vjp(op, a, nb, dy=ndy)  # >f8 and <f8 are one ONNX type, as in the forward op
        for g, w in zip(mixed, want, strict=True):
            np.testing.assert_array_equal(g, w)
    c = np.array([[True, False, True], [False, True, False]])
    for g, w in zip(vjp("where", c, a, b, dy=dy)[1:], vjp("where", c, na, nb, dy=ndy)[1:], strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(
        vjp("expand", b.reshape(3, 1), (2, 3, 4), dy=np.ones((2, 3, 4), ">f8"))[0], np.full((3, 1), 8.0)
    )


# --------------------------------------------------------------------------------------
# Plans are immutable: a cached plan cannot be changed by one caller for the next.
# --------------------------------------------------------------------------------------
PLAN_CALLS: dict[str, Callable[[], bcast.Plan]] = {
    "numpy": lambda: bcast.plan((3, 1), (2, 3, 4)),
    "explicit": lambda: bcast.plan((3,), (2, 3, 4), "explicit", axes_mapping=[1]),
    "pdpd": lambda: bcast.plan((3, 1), (2, 3, 4), "pdpd", axis=1),
    "axes": lambda: bcast.plan((3,), (2, 3, 4), "axes", broadcast_axes=[0, 2]),
    "like": lambda: bcast.plan((2,), (2, 3, 4), "like"),
}


@pytest.mark.parametrize("call", list(PLAN_CALLS))
def test_a_cached_plan_cannot_be_changed(call: str) -> None:
    p = PLAN_CALLS[call]()
    text, attrs = repr(p), dict(p.attrs)
    assert PLAN_CALLS[call]() is p  # cached: what one caller holds, the next one gets
    with pytest.raises(TypeError):
        p.attrs["axis"] = 99  # type: ignore[index]
    with pytest.raises(TypeError):
        del p.attrs["axis"]  # type: ignore[attr-defined]
    for name, value in [("mode", "none"), ("attrs", {}), ("axes_mapping", (0,)), ("output_shape", bcast.Shape((1,)))]:
        with pytest.raises(TypeError, match="immutable"):
            setattr(p, name, value)
        with pytest.raises(AttributeError):  # FrozenPlanError is both
            setattr(p, name, value)
    with pytest.raises(FrozenPlanError):
        p.broadcast_axes = (0,)  # type: ignore[misc]
    with pytest.raises(FrozenPlanError):
        del p.mode
    for v in p.attrs.values():
        assert not isinstance(v, (list, dict, set)), f"a mutable attribute value {v!r}"
    assert isinstance(p.axes_mapping, tuple) and isinstance(p.broadcast_axes, tuple)
    again = PLAN_CALLS[call]()
    assert repr(again) == text and dict(again.attrs) == attrs


def test_an_elementwise_plan_cannot_be_changed() -> None:
    ep = bcast.elementwise_plan((3, 1), (4,))
    with pytest.raises(FrozenPlanError):
        ep.operands = ()  # type: ignore[misc]
    assert copy.copy(ep) is ep and copy.deepcopy(ep) is ep  # immutable: copies are the object itself
    p = bcast.plan((3,), (2, 3))
    assert copy.copy(p) is p and copy.deepcopy({"k": p})["k"] is p
    assert isinstance(ep.operands, tuple) and isinstance(ep.shapes, tuple)
    again = bcast.elementwise_plan((3, 1), (4,))
    assert len(again.operands) == 2 and again.output_shape == (3, 4)


# --------------------------------------------------------------------------------------
# Inputs are never mutated, with and without out=; when out aliases an input on purpose,
# only out changes.
# --------------------------------------------------------------------------------------
def _some_inputs(name: str, dtype: np.dtype[Any], rng: np.random.Generator) -> list[np.ndarray]:
    arity = OPS[name][2]
    xs = [_values(rng, s, dtype) for s in [(6, 5), (5,), (6, 1), (1, 5)][:arity]]
    if name == "where":
        xs[0] = rng.random((6, 5)) < 0.5
    return xs


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("name", sorted(OPS))
def test_inputs_are_never_mutated(name: str, n_threads: int) -> None:
    op, _, _, dtypes, bool_out = OPS[name]
    rng = np.random.default_rng(6)
    for dtype in dtypes:
        xs = _some_inputs(name, dtype, rng)
        before = [(x.tobytes(), x.dtype, x.shape, x.strides, x.flags.writeable) for x in xs]
        with engine(n_threads):
            r = op(*xs)
            out = np.empty_like(r)
            op(*xs, out=out)
        np.testing.assert_array_equal(out, r)
        assert [(x.tobytes(), x.dtype, x.shape, x.strides, x.flags.writeable) for x in xs] == before
        if bool_out and dtype != BOOL:
            continue  # out cannot be an input of another dtype
        for i, x in enumerate(xs):  # out aliasing input i on purpose: only that input (out) changes
            if x.shape != r.shape or x.dtype != r.dtype:
                continue
            others = [(y.tobytes(), y.dtype) for j, y in enumerate(xs) if j != i]
            target = x.copy()
            args = [target if j == i else y for j, y in enumerate(xs)]
            with engine(n_threads):
                op(*args, out=target)
            np.testing.assert_array_equal(target, r)
            assert [(y.tobytes(), y.dtype) for j, y in enumerate(args) if j != i] == others


def test_the_unidirectional_and_normalization_ops_never_mutate_their_inputs() -> None:
    rng = np.random.default_rng(8)
    x, slope = rng.standard_normal((6, 5)), rng.standard_normal(5)
    a, b, c = rng.standard_normal((6, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    scale, bias = rng.standard_normal(5), rng.standard_normal(5)
    arrays = (x, slope, a, b, c, scale, bias)
    before = [y.tobytes() for y in arrays]
    calls: list[Callable[[], object]] = [
        lambda: ops.prelu(x, slope),
        lambda: ops.prelu(x, slope, out=np.empty((6, 5))),
        lambda: ops.gemm(a, b, c, alpha=0.5, beta=2.0),
        lambda: ops.gemm(a, b, c, out=np.empty((6, 5))),
        lambda: ops.layer_normalization(x, scale, bias),
        lambda: ops.rms_normalization(x, scale),
        lambda: ops.expand(slope, (6, 5)),
        lambda: vjp("prelu", x, slope, dy=np.ones((6, 5))),
        lambda: vjp("gemm", a, b, c, dy=np.ones((6, 5))),
    ]
    with engine(2):
        for call in calls:
            call()
    assert [y.tobytes() for y in arrays] == before


def test_big_endian_gemm_result_is_native() -> None:
    a = np.arange(6.0).reshape(2, 3).astype(">f8")
    b = np.arange(6.0).reshape(3, 2).astype(">f8")
    got = ops.gemm(a, b, np.ones(2, ">f8"))
    assert got.dtype == np.dtype(np.float64)  # as NumPy's a @ b + c
    np.testing.assert_array_equal(got, a.astype(float) @ b.astype(float) + 1)


def test_materialize_backward_and_views_never_mutate_the_data() -> None:
    x = np.arange(12.0).reshape(3, 4)
    snap = x.tobytes()
    p = bcast.plan((3, 4), (2, 3, 4))
    with engine(2):
        v = p(x)
        p.materialize(x)
        p.materialize(x, out=np.empty((2, 3, 4)))
        bcast.plan((3, 4), (3, 4)).backward(x)
        bcast.unbroadcast(np.broadcast_to(x, (2, 3, 4)), (3, 4))
        vjp("mul", x, x[0], dy=np.ones((3, 4)))
    assert x.tobytes() == snap and x.flags.writeable
    assert not v.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0, 0] = 1.0


def test_prelu_into_a_shifted_view_of_x_or_of_the_slope() -> None:
    b = np.array([-1.0, 2.0, -3.0, 4.0, -5.0, 6.0])
    x = b[:-1]
    expected = np.where(x < 0, x * 0.5, x)  # computed before out overwrites x
    assert ops.prelu(x, np.array(0.5), out=b[1:]) is not None
    np.testing.assert_array_equal(b[1:], expected)
    m = np.arange(-4.0, 4.0).reshape(2, 4)
    slope = m[0]  # out is x itself and also holds the slope
    expected = np.where(m < 0, m * slope, m)
    ops.prelu(m, slope, out=m)
    np.testing.assert_array_equal(m, expected)


def test_normalizations_of_big_endian_input_give_native_results() -> None:
    x = np.arange(12.0).reshape(3, 4)
    y, _, _ = ops.layer_normalization(x.astype(">f8"), np.ones(4, ">f8"), np.zeros(4, ">f8"))
    ref = ops.layer_normalization(x, np.ones(4), np.zeros(4))
    assert y.dtype == np.float64 and y.dtype.isnative
    np.testing.assert_array_equal(y, ref[0])
    r = ops.rms_normalization(x.astype(">f4"), np.ones(4, ">f4"))
    assert r.dtype == np.float32 and r.dtype.isnative
    np.testing.assert_array_equal(r, ops.rms_normalization(x.astype(np.float32), np.ones(4, np.float32)))


@pytest.mark.parametrize("op", ["div", "mod"])
def test_integer_division_by_zero_is_a_broadcast_error_and_a_zero_division_error(op: str) -> None:
    with pytest.raises(BroadcastError, match="divisor is 0") as info:
        getattr(ops, op)(np.array([4, 5], np.int32), np.array([2, 0], np.int32))
    assert isinstance(info.value, ZeroDivisionError)


@pytest.mark.parametrize("call", ["view", "materialize", "broadcast_to", "expand"])
def test_an_output_of_more_dims_than_numpy_allows_is_a_broadcast_error(call: str) -> None:
    target = (1,) * 64 + (3,)
    p = bcast.plan("[3]", target)
    run = {
        "view": lambda: p(np.ones(3)),
        "materialize": lambda: p.materialize(np.ones(3)),
        "broadcast_to": lambda: bcast.broadcast_to(np.ones(3), target),
        "expand": lambda: bcast.expand(np.ones(3), target),
    }[call]
    with pytest.raises(BroadcastError, match=r"65 dims.*64") as info:
        run()
    assert len(str(info.value)) < 2048
    assert p.output_shape.rank == 65  # the plan itself is fine


def test_a_cached_plans_constraints_and_shapes_cannot_be_changed() -> None:
    p = bcast.plan("[N,1]", "[4,5]")
    with pytest.raises(AttributeError):
        p.constraints.note = "changed"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        p.constraints[0].kind = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.output_shape.extra = 1  # type: ignore[attr-defined]
    again = bcast.plan("[N,1]", "[4,5]")
    assert [str(c) for c in again.constraints] == ["N in {1, 4}"] and str(again.output_shape) == "[4,5]"


def test_integer_pow_with_a_wider_exponent_wraps_like_c_and_refuses_no_result() -> None:
    """int32 ** int64: the exponent is not cut to 32 bits first (2**32 would become 0, giving 1)."""
    got = ops.pow(np.array([2, 2, 3, -3], np.int32), np.array([2**32, -1, 21, 21], np.int64))
    expected = [0, 0, 3**21, (-3) ** 21]  # 2**(2**32) wraps to 0; 2**-1 truncates to 0; 3**21 fits
    assert got.dtype == np.int32 and got.tolist() == [np.int32(np.int64(v) & 0xFFFFFFFF).item() for v in expected]
    with pytest.raises(BroadcastError, match="no integer result"):
        ops.pow(np.array([2], np.int64), np.array([np.inf]))


def test_a_cached_plans_private_parts_cannot_be_changed_from_outside() -> None:
    p = bcast.plan("[N,1,3]", "[2,4,3]")
    with pytest.raises(FrozenPlanError):
        p._replan = None  # type: ignore[assignment]
    assert str(bcast.plan("[N,1,3]", "[2,4,3]").bind({"N": 2}).output_shape) == "[2,4,3]"


@pytest.mark.parametrize("call", ["unbroadcast", "backward", "vjp"])
def test_summing_a_broadcast_dy_larger_than_memory_is_refused_at_once(call: str) -> None:
    """Refused before any summing: the work is the same for 512 GiB as for 2 TiB."""

    def make(n: int) -> Callable[[], object]:  # n*n float64: a stride-0 view only
        dy = as_strided(np.ones(1), (n, n), (0, 0))
        return {
            "unbroadcast": lambda: bcast.unbroadcast(dy, (1, 1)),
            "backward": lambda: bcast.plan((1, 1), (n, n)).backward(dy),
            "vjp": lambda: vjp("add", np.ones((n, 1)), np.ones((1, n)), dy=dy),
        }[call]

    with pytest.raises(BroadcastError, match="more than this machine's memory"):
        make(1 << 19)()
    small, large = (steps(make(n), (BroadcastError,)) for n in (1 << 18, 1 << 19))
    assert large <= small + 100, f"{small:,} steps for 512 GiB, {large:,} for 2 TiB"
