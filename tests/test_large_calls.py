"""The large-call fast path of the binary operators (``bcast.ops._base._run_large``).

A large call on NumPy arrays whose op, dtypes, shapes and strides an earlier call checked and
sent to the compiled loops goes straight to them, into a pooled array or into an ``out`` the
checks would take as it is. Every other call must go through the checks. A spy on the checked
path (``_base.run_nary``) shows which calls took the fast path; the results are NumPy's, and the
errors those of the checked operator (``op.__wrapped__``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bcast.ops as ops
from bcast.engines.numpy import compiled
from bcast.engines.numpy.threads import set_num_threads
from bcast.errors import BroadcastError
from bcast.ops import _base

pytestmark = pytest.mark.skipif(not compiled.LOADED, reason=f"the compiled kernels are not built ({compiled.REASON})")

#: published operator -> NumPy's function for it (operands below are positive: NumPy's floor division is ONNX's)
REFERENCE: dict[str, Callable[..., Any]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "greater": np.greater,
    "greater_or_equal": np.greater_equal,
    "less": np.less,
    "less_or_equal": np.less_equal,
    "and_": np.logical_and,
    "or_": np.logical_or,
    "xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
#: (full operand, broadcast operand) shapes: row, column, scalar and same-shape patterns, 256 KB of float32
PATTERNS = {
    "row": ((256, 256), (256,)),
    "column": ((256, 256), (256, 1)),
    "scalar": ((256, 256), ()),
    "same": ((256, 256), (256, 256)),
}


def _inputs(name: str, dtype: str, pattern: str = "row") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    full, small = PATTERNS[pattern]
    if name in ("and_", "or_", "xor"):
        return rng.random(full) < 0.5, np.asarray(rng.random(small) < 0.5)
    return rng.integers(1, 50, full).astype(dtype), np.asarray(rng.integers(1, 9, small)).astype(dtype)


def _reference(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if name == "div" and a.dtype.kind == "i":
        return np.trunc(a / b).astype(a.dtype)
    return np.asarray(REFERENCE[name](a, b))


class Checked:
    """Counts the calls that went through the checks (``run_nary``) instead of the fast path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = _base.run_nary

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(_base, "run_nary", counted)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Checked:
    """The spy, on a fast path that remembers nothing yet (forgetting only costs the next call the checks)."""
    for known in _base._LARGE.values():
        known.clear()
    return Checked(monkeypatch)


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for name in REFERENCE:
        dtypes = (
            ["bool"] if name in ("and_", "or_", "xor") else ["int32", "int64"] if name.startswith("bitwise") else None
        )
        for dtype in dtypes or ["float32", "float64", "int32", "int64", "float16"]:
            for pattern in PATTERNS:
                out.append((name, dtype, pattern))
    return out


@pytest.mark.parametrize(("name", "dtype", "pattern"), _cases())
def test_a_checked_large_call_is_remembered_and_then_fast(
    name: str, dtype: str, pattern: str, checked: Checked
) -> None:
    """The second call of the same shapes, strides and dtypes skips the checks, fresh and into out=,
    and gives NumPy's result; new arrays (other memory, other values) of that layout take it too."""
    op = getattr(ops, name)
    a, b = _inputs(name, dtype, pattern)
    first = op(a, b)
    assert checked.calls == 1
    want = _reference(name, a, b)
    np.testing.assert_array_equal(first, want, strict=True)
    second = op(a, b)
    assert checked.calls == 1, "the second call went through the checks"
    np.testing.assert_array_equal(second, want, strict=True)
    assert second.flags.c_contiguous and second.flags.writeable and second is not first
    out = np.zeros_like(want)
    assert op(a, b, out=out) is out
    assert checked.calls == 1
    np.testing.assert_array_equal(out, want, strict=True)
    a2, b2 = a[::-1].copy(), b.copy()  # new memory, same layout
    np.testing.assert_array_equal(op(a2, b2), _reference(name, a2, b2), strict=True)
    assert checked.calls == 1


def test_out_that_is_an_input_exactly(checked: Checked) -> None:
    """A plain ufunc writes into an input it reads element for element (fast); div, which is not one,
    goes through the checks (which compute into a fresh array first); NumPy's result either way."""
    a, b = _inputs("add", "float32")
    ops.add(a, b)
    want = a + b
    assert ops.add(a, b, out=a) is a
    assert checked.calls == 1
    np.testing.assert_array_equal(a, want)
    x, y = _inputs("div", "int32")
    ops.div(x, y)
    calls = checked.calls
    want_div = _reference("div", x, y)
    assert ops.div(x, y, out=x) is x
    assert checked.calls == calls + 1
    np.testing.assert_array_equal(x, want_div)


@pytest.mark.parametrize("how", ["shifted", "reversed", "input_b_is_out"])
def test_out_overlapping_an_input_otherwise_goes_through_the_checks(how: str, checked: Checked) -> None:
    """An out that shares memory with an input, not element for element, gets NumPy's answer for copies
    of the inputs, by the checked path."""
    rng = np.random.default_rng(1)
    buf = rng.random(257 * 256).astype(np.float32)
    a = buf[:65536].reshape(256, 256)
    b = rng.random(256).astype(np.float32)
    ops.add(a, b)
    calls = checked.calls
    if how == "shifted":
        out = buf[256:].reshape(256, 256)  # one row further on
    elif how == "reversed":
        out = np.empty_like(a)
        a = out[::-1]  # another layout: a new key, checked anyway; then out overlaps it
        a[...] = buf[:65536].reshape(256, 256)
        ops.add(a, b)
        calls = checked.calls
    else:
        b = buf[:256]
        out = buf[:65536].reshape(256, 256)  # b is out's first row
        ops.add(a.copy(), b)
        calls = checked.calls
        a = np.ones_like(out)
    want = np.add(a.copy(), b.copy())
    assert ops.add(a, b, out=out) is out
    assert checked.calls == calls + 1
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize(
    "make_out",
    [
        lambda w: np.zeros(w.shape, w.dtype.newbyteorder()),  # the other byte order
        lambda w: np.zeros(w.shape[::-1], w.dtype).T,  # not C-contiguous
        lambda w: np.zeros((w.shape[0], w.shape[1] + 1), w.dtype)[:, :-1],  # a strided view
    ],
)
def test_outs_the_checks_would_change_go_through_them(
    make_out: Callable[[np.ndarray], np.ndarray], checked: Checked
) -> None:
    a, b = _inputs("mul", "float32")
    ops.mul(a, b)
    want = a * b
    calls = checked.calls
    out = make_out(want)
    assert ops.mul(a, b, out=out) is out
    assert checked.calls == calls + 1
    np.testing.assert_array_equal(out, want.astype(out.dtype))


@pytest.mark.parametrize(
    "make_out",
    [
        lambda w: np.zeros((w.shape[0], w.shape[1] + 1), w.dtype),  # wrong shape
        lambda w: _read_only(w),
        lambda w: np.zeros(w.shape, np.float64),  # another dtype than Sub's
        lambda w: [[0.0] * w.shape[1]] * w.shape[0],  # not an array
    ],
)
def test_outs_the_checks_refuse_give_the_checked_error(make_out: Callable[[np.ndarray], Any]) -> None:
    a, b = _inputs("sub", "float32")
    ops.sub(a, b)
    want = a - b
    with pytest.raises((BroadcastError, TypeError)) as fast:
        ops.sub(a, b, out=make_out(want))
    with pytest.raises((BroadcastError, TypeError)) as slow:
        ops.sub.__wrapped__(a, b, out=make_out(want))
    assert type(fast.value) is type(slow.value)
    assert str(fast.value) == str(slow.value)


def _read_only(w: np.ndarray) -> np.ndarray:
    out = np.zeros_like(w)
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("into", ["fresh", "out"])
def test_a_zero_divisor_in_a_remembered_call_raises_before_writing(into: str, checked: Checked) -> None:
    a, b = _inputs("div", "int32")
    ops.div(a, b)
    b2 = b.copy()
    b2[17] = 0
    out = np.full(a.shape, 5, np.int32) if into == "out" else None
    with pytest.raises(ZeroDivisionError) as fast:
        ops.div(a, b2, out=out)
    with pytest.raises(ZeroDivisionError) as slow:
        ops.div.__wrapped__(a, b2)
    assert str(fast.value) == str(slow.value)
    assert checked.calls == 2  # the remembered call, and the reference's
    if out is not None:
        assert (out == 5).all(), "out was written before the error"


def test_unaligned_inputs_of_a_remembered_layout_go_through_the_checks(checked: Checked) -> None:
    a, b = _inputs("add", "float64")
    ops.add(a, b)
    raw = np.zeros(a.nbytes + 1, np.uint8)
    odd = np.frombuffer(raw.data, np.float64, a.size, offset=1).reshape(a.shape)  # same strides, unaligned
    assert not odd.flags.aligned and odd.strides == a.strides
    calls = checked.calls
    np.testing.assert_array_equal(ops.add(odd, b), np.zeros(a.shape) + b)
    assert checked.calls == calls + 1


def test_switching_the_loops_off_leaves_remembered_calls_to_the_numpy_engine(checked: Checked) -> None:
    a, b = _inputs("greater", "float32")
    ops.greater(a, b)
    with compiled.using(False):
        np.testing.assert_array_equal(ops.greater(a, b), a > b)
    assert checked.calls == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_remembered_calls_use_the_threads_set_now(
    threads: int, checked: Checked, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = np.ones((1024, 1024), np.float32)  # 4 MB: worth two threads on a machine that has them
    b = np.ones(1024, np.float32)
    ops.add(a, b)
    seen: list[int] = []
    real = compiled.module()

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def binary(self, *args: Any) -> Any:
            seen.append(args[-1])
            return real.binary(*args)

    monkeypatch.setattr(compiled, "module", lambda: Spy())
    set_num_threads(threads)
    try:
        np.testing.assert_array_equal(ops.add(a, b), np.full(a.shape, 2, np.float32))
    finally:
        set_num_threads(None)
    assert checked.calls == 1
    assert seen == [min(threads, compiled._CORES)]


def _float_errors(dtype: str, name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Operands (256 KB or more, so the compiled loops take them) whose op raises floating-point errors:
    overflow, invalid values, zero divisors, underflow, and none."""
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    big = float(ml_dtypes.finfo(dt).max) if dtype == "bfloat16" else float(np.finfo(dt).max)
    tiny = float(ml_dtypes.finfo(dt).smallest_normal) if dtype == "bfloat16" else float(np.finfo(dt).smallest_normal)
    shape = (256, 512)

    def full(v: float) -> np.ndarray:
        x = np.ones(shape, dt)
        x[7, 9] = v
        return x

    return {
        "overflow": (full(big), np.full(512, {"sub": -big, "div": 0.5}.get(name, big), dt)),
        "invalid": (full(np.inf), np.full(512, np.inf, dt)),
        "zero": (full(0.0), np.zeros(512, dt)),
        "underflow": (full(tiny), np.full(512, 3.0 if name == "div" else tiny, dt)),
        "none": (full(3.0), np.full(512, 2.0, dt)),
    }


def _outcome(fn: Callable[[], Any], mode: str) -> tuple[list[str], str | None]:
    import warnings

    with warnings.catch_warnings(record=True) as caught, np.errstate(all=mode):
        warnings.simplefilter("always")
        try:
            fn()
            raised = None
        except FloatingPointError as e:
            raised = str(e)
    return sorted(f"{w.category.__name__}: {w.message}" for w in caught), raised


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_floating_point_errors_are_reported_as_the_numpy_path_reports_them(name: str, dtype: str, mode: str) -> None:
    """The compiled loops raise no warnings themselves: the threads' floating-point flags are read, and
    reported as the NumPy path's ufunc reports them, under the caller's np.errstate, whichever path
    (checked or remembered) a call takes."""
    pytest.importorskip("ml_dtypes")
    op = getattr(ops, name)
    for what, (a, b) in _float_errors(dtype, name).items():
        call = functools.partial(op, a, b)
        with compiled.using(False):
            want = _outcome(call, mode)
        for attempt in ("checked", "remembered"):
            got = _outcome(call, mode)
            assert got == want, f"{name} {dtype} {what}, {attempt} call under errstate(all={mode!r})"
        if what == "overflow" and mode == "warn":
            assert want[0], "the case raises no error: the test would pass on loops that report nothing"
