"""Small broadcast copies that go straight to the compiled loop (``bcast.engines.numpy.materialize``).

A static plan remembers, in ``plan.static.memo``, the compiled copy's layout for data of the
strides and dtype it met, when the copy (64 KiB to 1 MiB of output) went to the loop. A later
call with such data goes straight to the loop, into a fresh array or an ``out`` the checks
would take as it is. The loop itself declines (writing nothing) an ``out`` that overlaps the
data, and data or an ``out`` that is not aligned: the checks decide those. Every result here is
compared with NumPy's own broadcast copy, bit for bit, on the first and the remembered call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import bcast
from bcast.engines.numpy import compiled
from bcast.errors import BroadcastError

needs_kernels = pytest.mark.skipif(not compiled.LOADED, reason="the compiled kernels are not built here")

#: (data shape, output shape): about 98,000 elements, 64 KiB to 1 MiB of output for items of 1 to 8 bytes
PATTERNS = {
    "channel": ((16, 1, 1), (1, 16, 64, 96)),
    "row": ((1024,), (96, 1024)),
    "column": ((96, 1), (96, 1024)),
    "scalar": ((), (192, 512)),
    "inner": ((64, 1), (6, 64, 257)),
    "middle": ((256, 1, 8), (256, 48, 8)),
}

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64"]
DTYPES += ["datetime64[ns]", "complex128"]  # bits the loop moves as uint64; 16 bytes the loop has no copy for


def _dtype(name: str) -> np.dtype[Any]:
    if name == "bfloat16":
        return np.dtype(pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes").bfloat16)
    return np.dtype(name)


def _data(shape: tuple[int, ...], dtype: np.dtype[Any], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 255, shape).astype(np.int64)
    if dtype.kind == "M":
        return raw.astype(dtype)
    return (raw % 2 == 1) if dtype == np.bool_ else raw.astype(dtype)


def _expected(x: np.ndarray, p: bcast.Plan) -> np.ndarray:
    aligned = x.reshape(p.static.aligned) if p.static else x  # type: ignore[union-attr]
    return np.broadcast_to(aligned, p.output_shape.to_tuple()).copy()


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


@pytest.fixture
def runs() -> Iterator[list[int]]:
    """Counts the calls of ``compiled.run_copy`` that the loop took."""
    seen: list[int] = []
    real = compiled.run_copy

    def counted(*args: Any) -> bool:
        done = real(*args)
        seen.append(int(done))
        return done

    compiled.run_copy = counted  # type: ignore[assignment]
    try:
        yield seen
    finally:
        compiled.run_copy = real  # type: ignore[assignment]


@needs_kernels
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("name", [*DTYPES, "bfloat16"])
def test_fresh_and_out_match_numpy_on_the_first_and_the_remembered_call(
    pattern: str, name: str, runs: list[int]
) -> None:
    d, t = PATTERNS[pattern]
    dt = _dtype(name)
    p = bcast.plan(d, t)
    x = _data(d, dt)
    before = x.copy()
    want = _expected(x, p)
    for _ in range(3):
        _same(p.materialize(x), want)
        out = np.empty(t, dt)
        assert p.materialize(x, out=out) is out
        _same(out, want)
    _same(x, before)  # inputs are never written
    covered = dt.itemsize in (1, 2, 4, 8)
    assert sum(runs) == (6 if covered else 0)
    remembered = p.static.memo.get(x.strides, (None,))[0]  # type: ignore[union-attr]
    assert (remembered == dt) == covered  # plans are shared: another dtype's layout may be there


@needs_kernels
@pytest.mark.parametrize("view", ["strided", "reversed", "transposed"])
def test_data_of_other_strides_gets_its_own_layout(view: str, runs: list[int]) -> None:
    t = (64, 1024)
    base = _data((64, 2048), np.dtype(np.float32))
    x = {"strided": base[:, ::2][:, :1], "reversed": base[::-1, :1], "transposed": base[:1, :64].T}[view]
    assert x.shape == (64, 1)
    p = bcast.plan((64, 1), t)
    want = _expected(x, p)
    plain = np.ascontiguousarray(x)
    for arr in (x, plain, x, plain):
        _same(p.materialize(arr), want)
    assert {x.strides, plain.strides} <= set(p.static.memo)  # type: ignore[union-attr]
    assert runs == [1, 1, 1, 1]


@needs_kernels
def test_one_strides_two_dtypes_each_right() -> None:
    p = bcast.plan((128, 1), (128, 1024))
    f = _data((128, 1), np.dtype(np.float32))
    i = _data((128, 1), np.dtype(np.int32), seed=1)
    assert f.strides == i.strides
    for arr in (f, i, f, i, f):
        _same(p.materialize(arr), _expected(arr, p))


@needs_kernels
def test_misaligned_data_or_out_is_copied_by_numpy(runs: list[int]) -> None:
    p = bcast.plan((128, 1), (128, 1024))
    raw = np.zeros(128 * 4 + 1, np.uint8)
    x = np.frombuffer(raw.data, np.float32, 128, offset=1).reshape(128, 1)
    x.flags.writeable = False
    assert not x.flags.aligned
    want = _expected(x, p)
    for _ in range(3):
        _same(p.materialize(x), want)
    assert len(runs) == 3 and not any(runs)  # the loop declines unaligned data, each call once
    good = _data((128, 1), np.dtype(np.float32))
    _same(p.materialize(good), _expected(good, p))  # lays out the strides (4, 4) ...
    bad = np.frombuffer(np.zeros(128 * 4 + 8, np.uint8).data, np.float32, 128, offset=2).reshape(128, 1)
    assert bad.strides == good.strides and not bad.flags.aligned
    _same(p.materialize(bad), _expected(bad, p))  # ... which the loop declines for data off its alignment
    out_raw = np.zeros(128 * 1024 * 4 + 4, np.uint8)
    out = np.frombuffer(out_raw.data, np.float32, 128 * 1024, offset=4 - 1).reshape(128, 1024)
    assert not out.flags.aligned and out.flags.writeable
    assert p.materialize(good, out=out) is out
    _same(out, _expected(good, p))
    assert runs[-3:] == [1, 0, 0]


@needs_kernels
@pytest.mark.parametrize("where", ["start", "inside", "end"])
def test_out_overlapping_the_data_gets_the_checks(where: str, runs: list[int]) -> None:
    t = (128, 1024)
    p = bcast.plan((128, 1), t)
    fresh = _data((128, 1), np.dtype(np.float32))
    _same(p.materialize(fresh), _expected(fresh, p))  # the layout is remembered: (4, 4) strides
    for _ in range(2):
        out = np.arange(128 * 1024, dtype=np.float32).reshape(t)
        flat = out.reshape(-1)
        at = {"start": 0, "inside": 5000, "end": flat.size - 128}[where]
        x = flat[at : at + 128].reshape(128, 1)
        want = _expected(x, p)
        assert p.materialize(x, out=out) is out
        _same(out, want)
    assert runs == [1, 0, 0]  # declined by the loop, written by the checks


@needs_kernels
def test_out_the_checks_refuse_is_refused_on_the_remembered_path() -> None:
    t = (128, 1024)
    p = bcast.plan((128, 1), t)
    x = _data((128, 1), np.dtype(np.float32))
    p.materialize(x, out=np.empty(t, np.float32))
    ro = np.zeros(t, np.float32)
    ro.flags.writeable = False
    with pytest.raises(BroadcastError, match="read-only"):
        p.materialize(x, out=ro)
    assert not ro.any()
    with pytest.raises(BroadcastError, match="shape"):
        p.materialize(x, out=np.empty((128, 1023), np.float32))
    with pytest.raises(TypeError, match="dtype float64, but the data is float32"):
        p.materialize(x, out=np.empty(t, np.float64))
    with pytest.raises(TypeError, match="out"):
        p.materialize(x, out=[[0.0] * 1024] * 128)  # type: ignore[arg-type]


@needs_kernels
@pytest.mark.parametrize("order", ["F", "strided"])
def test_out_not_c_contiguous_is_written_right(order: str) -> None:
    t = (128, 1024)
    p = bcast.plan((128, 1), t)
    x = _data((128, 1), np.dtype(np.float32))
    want = _expected(x, p)
    p.materialize(x)  # remembered
    out = np.zeros(t, np.float32, order="F") if order == "F" else np.zeros((128, 2048), np.float32)[:, ::2]
    assert p.materialize(x, out=out) is out
    _same(np.ascontiguousarray(out), want)


@needs_kernels
def test_with_the_loops_off_numpy_copies(runs: list[int]) -> None:
    p = bcast.plan((16, 1, 1), (1, 16, 64, 96))
    x = _data((16, 1, 1), np.dtype(np.float32))
    p.materialize(x)
    with compiled.using(False):
        _same(p.materialize(x), _expected(x, p))
        out = np.empty((1, 16, 64, 96), np.float32)
        p.materialize(x, out=out)
        _same(out, _expected(x, p))
    assert runs == [1, 0, 0]


@needs_kernels
def test_the_memo_is_bounded() -> None:
    # a plan of its own (plans are shared by their arguments): the one another test reads the memo of is not filled
    p = bcast.plan((64, 1), (64, 1000))
    base = _data((64, 200), np.dtype(np.float32))
    for k in range(1, 100):
        x = base[:, ::k][:, :1] if k < 200 else base[:, :1]
        _same(p.materialize(x), _expected(x, p))
    assert 1 <= len(p.static.memo) <= 64  # type: ignore[union-attr]


def test_below_and_above_the_remembered_sizes_nothing_is_remembered() -> None:
    for d, t in (((16, 1), (16, 512)), ((16, 1, 1), (1, 16, 128, 128))):  # 32 KiB, 1 MiB of float32
        p = bcast.plan(d, t)
        x = _data(d, np.dtype(np.float32))
        _same(p.materialize(x), _expected(x, p))
        _same(p.materialize(x), _expected(x, p))
        assert x.strides not in p.static.memo  # type: ignore[union-attr]


@needs_kernels
@pytest.mark.parametrize("order", ["F", "C"])
def test_short_runs_into_an_out_of_any_order(order: str) -> None:
    # [N,1,3] -> [N,50000,3]-like copies replicate the first slab; the compiled copy of the rest
    # declines slabs whose extents interleave (an F-ordered out), and NumPy spreads them
    d, t = (4, 1, 3), (4, 30000, 3)
    p = bcast.plan(d, t)
    x = _data(d, np.dtype(np.float64))
    out = np.zeros(t, np.float64, order=order)
    assert p.materialize(x, out=out) is out
    _same(np.ascontiguousarray(out), _expected(x, p))
