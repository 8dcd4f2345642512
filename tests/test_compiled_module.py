"""The compiled kernels as a module: the switch, each instruction set's table, the build without a compiler,
and the private C entry points refusing what they cannot take (an error, never a crash).

The results of the compiled path against the NumPy path, op by op and dtype by dtype, are
in ``tests/test_compiled_kernels.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bcast.engines.numpy import compiled

ROOT = Path(__file__).resolve().parent.parent
needs_kernels = pytest.mark.skipif(
    not compiled.LOADED, reason=f"the compiled kernels are not built ({compiled.REASON})"
)


def _run(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=full
    )


def test_switch_and_status() -> None:
    before = compiled.enabled()
    with compiled.using(False):
        assert not compiled.enabled()
        assert compiled.module() is None
        assert compiled.status().startswith("kernels: NumPy engine")
    assert compiled.enabled() == before
    with pytest.raises(TypeError, match="True, False or None"):
        compiled.set_enabled(1)  # type: ignore[arg-type]
    compiled.set_enabled(True)
    assert compiled.enabled() == compiled.LOADED  # True asks for them; only a built module gives them
    compiled.set_enabled(None)
    assert compiled.enabled() == compiled.LOADED


def test_pure_python_environment_variable() -> None:
    code = """
        import numpy as np, bcast.ops as ops
        from bcast.engines.numpy import compiled
        a = np.arange(300_000, dtype=np.float32).reshape(300, 1000)
        r = ops.add(a, np.float32(2) * np.ones(1000, np.float32))
        print(compiled.LOADED, compiled.enabled(), bool(np.array_equal(r, a + 2)))
        print(compiled.status())
    """
    out = _run(code, {"BCAST_PURE_PYTHON": "1"})
    assert out.returncode == 0, out.stderr
    first, status = out.stdout.splitlines()
    assert first == "False False True"
    assert status == "kernels: NumPy engine (BCAST_PURE_PYTHON is set)"


@needs_kernels
def test_status_names_the_instruction_set() -> None:
    assert compiled.ISA in ("baseline", "avx2", "avx512")
    assert compiled.status() == f"kernels: compiled C ({compiled.ISA}), threaded"


def _skip_unless_the_cpu_runs(isa: str) -> None:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if isa == "avx512" and "avx512bw" not in flags:
        pytest.skip("this CPU has no AVX-512")
    if isa == "avx2" and " avx2" not in flags:
        pytest.skip("this CPU has no AVX2")


_EVERY_TABLE = """
    import hashlib, numpy as np, ml_dtypes, bcast, bcast.ops as ops
    from bcast.engines.numpy import compiled, threads
    threads.set_num_threads(2)
    rng = np.random.default_rng(7)
    digest, wrong = hashlib.sha1(), []
    for dt in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64):
        a = (rng.standard_normal((257, 515)) * 50).astype(dt)
        for b in ((rng.standard_normal(515) * 50).astype(dt), (rng.standard_normal((257, 1)) * 50).astype(dt)):
            if np.dtype(dt).kind == "i":
                b[b == 0] = 3
            calls = [(f.__name__, lambda f=f: f(a, b)) for f in (ops.add, ops.sub, ops.mul, ops.div, ops.max, ops.min,
                     ops.greater, ops.less_or_equal)]
            calls.append(("where", lambda: ops.where(a > b, a, b)))
            for name, call in calls:
                with compiled.using(True):
                    r = np.ascontiguousarray(call())
                with compiled.using(False):
                    expected = np.ascontiguousarray(call())
                if r.dtype != expected.dtype or r.tobytes() != expected.tobytes():
                    wrong.append(f"{name}:{np.dtype(dt).name}:{b.shape}")
                digest.update(r.tobytes())
    print(compiled.ISA, digest.hexdigest(), ",".join(wrong) or "-")
"""


@needs_kernels
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_every_instruction_sets_table_gives_the_numpy_paths_results(isa: str) -> None:
    pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    _skip_unless_the_cpu_runs(isa)
    got = _run(_EVERY_TABLE, {"BCAST_ISA": isa})
    assert got.returncode == 0, got.stderr
    chosen, digest, wrong = got.stdout.split()
    assert chosen == isa
    assert wrong == "-"  # every op, dtype and pattern: the NumPy path's bytes exactly
    baseline = _run(_EVERY_TABLE, {"BCAST_ISA": "baseline"}).stdout.split()
    assert digest == baseline[1]  # and every table computes the same bytes


_EVERY_BFLOAT16 = """
    import numpy as np, ml_dtypes
    from bcast.engines.numpy import compiled
    bf = ml_dtypes.bfloat16
    every = np.arange(1 << 16, dtype=np.uint16)  # every bfloat16, NaNs, infinities and subnormals included
    shuffled = np.random.default_rng(3).permutation(every)
    # +-0, the smallest subnormals, a subnormal and the largest, 1, the largest finite, infinities, NaNs with payloads
    specials = [0x0000, 0x8000, 0x0001, 0x8001, 0x0040, 0x007F, 0x3F80, 0x7F7F, 0x7F80, 0xFF80, 0x7FC1, 0xFF81]
    ops = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}
    wrong, runs = [], 0
    def check(name, a, b):
        global runs
        out = np.full(np.broadcast_shapes(a.shape, b.shape), 7, np.uint16).view(bf)
        with np.errstate(all="ignore"):
            assert compiled.binary(name, a, b, out) is not None, name  # the compiled loop ran
            want = ops[name](a.astype(np.float32), b.astype(np.float32)).astype(bf)  # ml_dtypes rounds
        got, exp = out.view(np.uint16), want.view(np.uint16)
        nan_got, nan_exp = np.isnan(out.astype(np.float32)), np.isnan(want.astype(np.float32))
        bad = (nan_got != nan_exp) | (~nan_exp & (got != exp))
        runs += 1
        if bad.any():
            i = int(np.argmax(bad))
            wrong.append(f"{name}:{a.shape}{b.shape}@{i}:{got[i]:#06x}!={exp[i]:#06x}")
    for name in ops:
        for lo, hi in ((0, 1 << 16), (1, (1 << 16) - 3)):  # even and odd starts, a ragged end
            x = every[lo:hi].view(bf)
            check(name, x, shuffled[lo:hi].view(bf))  # both contiguous
            for s in specials:
                one = np.array([s], np.uint16).view(bf)
                check(name, x, one)  # a repeated second operand
                check(name, one, x)  # a repeated first operand
    print(compiled.ISA, runs, " ".join(wrong[:5]) or "-")
"""


@needs_kernels
@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_bfloat16_arithmetic_on_every_bit_pattern(isa: str) -> None:
    """add, sub, mul and div of bfloat16 compute two elements per 32-bit lane (even and odd apart):
    every one of the 65,536 values, against each other and against repeated specials, rounds as
    ml_dtypes rounds the float32 result, on every instruction set's loops."""
    pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    _skip_unless_the_cpu_runs(isa)
    got = _run(_EVERY_BFLOAT16, {"BCAST_ISA": isa})
    assert got.returncode == 0, got.stderr
    chosen, runs, wrong = got.stdout.split(maxsplit=2)
    assert (chosen, runs) == (isa, str(4 * 2 * (1 + 2 * 12)))
    assert wrong.strip() == "-"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not on PATH")
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"CC": "/nonexistent/cc"}, "no C compiler found"),
        ({"BCAST_PURE_PYTHON": "1"}, "BCAST_PURE_PYTHON is set"),
    ],
)
def test_the_build_goes_on_without_the_kernels(tmp_path: Path, env: dict[str, str], says: str) -> None:
    done = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    assert says in done.stdout + done.stderr
    assert "_kernels" not in (tmp_path / "b" / "CMakeCache.txt").read_text()


@needs_kernels
def test_c_entry_points_refuse_bad_arguments() -> None:
    mod = compiled.module()
    assert mod is not None
    o = np.zeros((4, 8), np.float32)
    a = np.ones((4, 8), np.float32)
    good = ((4, 8), ((32, 4), (32, 4), (32, 4)))
    assert mod.binary(0, 3, o, a, a, *good, 0, 32, 0, 1) == (0, 0)  # no zero divisor, no floating-point error
    assert np.all(o == 2)
    # a layout that reaches outside an array's memory: strides too long, or the wrong way along a reversed view
    with pytest.raises(ValueError, match="layout of array 0 reaches outside its memory"):
        mod.binary(0, 3, o, a, a, (4, 8), ((64, 4), (32, 4), (32, 4)), 0, 32, 0, 1)
    with pytest.raises(ValueError, match="layout of array 2 reaches outside its memory"):
        mod.binary(0, 3, o, a, a[::-1], *good, 0, 32, 0, 1)
    with pytest.raises(ValueError, match="layout of array 1 reaches outside its memory"):
        mod.binary(0, 3, o, a[:2], a, *good, 0, 32, 0, 1)
    with pytest.raises(ValueError, match="reaches outside"):
        mod.where(o, np.ones(4, np.bool_), a, a, (4, 8), ((32, 4), (0, 1), (32, 4), (32, 4)), 0, 32, 0, 1)
    with pytest.raises(ValueError, match="reaches outside"):
        mod.copy(o, a, (4, 8), ((32, 4), (4, 32)), 0, 32, 0, 1)
    mod.binary(0, 3, o, a[::-1], a[::-1], (4, 8), ((32, 4), (-32, 4), (-32, 4)), 0, 32, 0, 1)  # its own way: taken
    with pytest.raises(TypeError, match="binary"):
        mod.binary(0, 3, o, a, a)
    with pytest.raises(ValueError, match="no loop for op 99"):
        mod.binary(99, 3, o, a, a, *good, 0, 32, 0, 1)
    with pytest.raises(ValueError, match="no loop"):
        mod.binary(15, 3, o, a, a, *good, 0, 32, 0, 1)  # bitwise_and on float32
    with pytest.raises(ValueError, match=r"elements 0\.\.33 out of 0\.\.32"):
        mod.binary(0, 3, o, a, a, *good, 0, 33, 0, 1)
    with pytest.raises(ValueError, match="threads must be 1 to 256, got 0"):
        mod.binary(0, 3, o, a, a, *good, 0, 32, 0, 0)
    with pytest.raises(ValueError, match="wrong length"):
        mod.binary(0, 3, o, a, a, (4, 8), ((32,), (32, 4), (32, 4)), 0, 32, 0, 1)
    with pytest.raises(ValueError, match="1 to 64 dims"):
        mod.binary(0, 3, o, a, a, (), ((), (), ()), 0, 1, 0, 1)
    ro = np.zeros((4, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises((ValueError, BufferError, TypeError)):
        mod.binary(0, 3, ro, a, a, *good, 0, 32, 0, 1)
    assert not ro.any()
    with pytest.raises(ValueError, match="item sizes"):
        mod.where(o, a, a, a, (4, 8), ((32, 4),) * 4, 0, 32, 0, 1)  # a float condition
    with pytest.raises(ValueError, match="item sizes"):
        mod.copy(o, np.ones((4, 8), np.float64), (4, 8), ((32, 4), (64, 8)), 0, 32, 0, 1)
    with pytest.raises(ValueError, match="P, K, R"):
        mod.sum(3, np.zeros(3, np.float32), np.ones((2, 4, 5), np.float32), 0, 2, 0)


TAKEN = [
    ("pow", "int32", None, True),  # integer powers: repeated squaring in blocks
    ("pow", "int64", None, True),
    ("pow", "float16", None, True),
    ("pow", "float32", None, False),  # NumPy's own vectorised pow is faster than libm's powf
    ("pow", "float64", None, False),
    ("pow", "int32", "negative", True),  # negative exponents, no zero base: ONNX's rule in the loop
    ("pow", "int32", "zero base", False),  # 0 ** -1 may be met: the NumPy path raises before writing
    ("div", "int32", None, True),
    ("add", "float16", None, True),
    ("greater", "float16", None, True),
]


@needs_kernels
@pytest.mark.parametrize(("op", "dtype", "twist", "taken"), TAKEN)
def test_which_calls_the_loops_take(
    monkeypatch: pytest.MonkeyPatch, op: str, dtype: str, twist: str | None, taken: bool
) -> None:
    """The calls the compiled loops compute (and those left to NumPy), with the result the NumPy path gives."""
    import bcast.ops as ops
    from bcast.ops import _base

    for known in _base._LARGE.values():  # a call remembered by another case would skip fold
        known.clear()
    seen: list[int | None] = []
    real = compiled.fold

    def spy(kernel: str, operands: object, dest: np.ndarray, quiet: compiled.Quiet = None) -> int | None:
        seen.append(real(kernel, operands, dest, quiet))  # type: ignore[arg-type]
        return seen[-1]

    monkeypatch.setattr(compiled, "fold", spy)
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (200, 1000)).astype(dtype)
    b = rng.integers(1, 4, (1, 1000)).astype(dtype)
    if twist is not None:
        a[a == 0] = 2
        b[0, ::3] = -1
    if twist == "zero base":
        a[1, 1] = 0  # its exponent is positive: no error, but only the NumPy path can know that beforehand
    got = getattr(ops, op)(a, b)
    calls = list(seen)
    with compiled.using(False):
        want = getattr(ops, op)(a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert (bool(calls) and calls[-1] is not None) == taken, calls


@needs_kernels
@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_broadcast_of_one_value_per_row(monkeypatch: pytest.MonkeyPatch, dtype: str, threads: int) -> None:
    """A column broadcast written with non-temporal stores: each row one value, rows longer than a block,
    pieces starting part way along a row."""
    monkeypatch.setattr(compiled, "STREAM_BYTES", 0)
    monkeypatch.setattr(compiled, "THREAD_BYTES", 1 << 16)
    monkeypatch.setattr(compiled, "_threads", lambda nbytes: threads)
    col = np.arange(37, dtype=dtype).reshape(37, 1)
    dest = np.full((37, 9001), 255, dtype)
    assert compiled.copy(dest, np.broadcast_to(col, dest.shape))
    assert np.array_equal(dest, np.broadcast_to(col, dest.shape))


def _at(shape: tuple[int, ...], dtype: str, offset: int) -> np.ndarray:
    """A C-contiguous array of ``shape`` starting ``offset`` bytes past a 64-byte boundary."""
    dt = np.dtype(dtype)
    raw = np.zeros(int(np.prod(shape)) * dt.itemsize + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    return raw[start : start + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)


@needs_kernels
@pytest.mark.parametrize("dtype", ["uint8", "float16", "int32", "float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_outputs_at_every_offset_within_a_cache_line(monkeypatch: pytest.MonkeyPatch, dtype: str, threads: int) -> None:
    """The loops compute the elements before an output's first 64-byte boundary on their own: binary, where and
    copy give NumPy's results for outputs at every item offset in a line, rows of odd lengths, on 1 and 2 threads."""
    if dtype == "float16" and not getattr(compiled.module(), "HAS_F16", 0):
        pytest.skip("these kernels were built without float16 loops (no _Float16 in the compiler)")
    monkeypatch.setattr(compiled, "_threads", lambda nbytes: threads)
    monkeypatch.setattr(compiled, "THREAD_BYTES", 1 << 12)
    item = np.dtype(dtype).itemsize
    rng = np.random.default_rng(5)
    shape = (67, 1001)
    full = (rng.random(shape) * 100).astype(dtype)
    row = (rng.random(shape[1]) * 100 + 1).astype(dtype)
    cond = rng.random(shape) < 0.5
    for offset in range(0, 64, item):
        if dtype != "uint8":
            dest = _at(shape, dtype, offset)
            assert compiled.binary("add", full, row, dest) == 0
            assert np.array_equal(dest, full + row), offset
        flags = _at(shape, "bool", offset)
        if dtype != "uint8":
            assert compiled.binary("greater", full, row, flags) == 0
            assert np.array_equal(flags, full > row), offset
        dest = _at(shape, dtype, offset)
        assert compiled.where(cond, full, np.broadcast_to(row, shape), dest)
        assert np.array_equal(dest, np.where(cond, full, row)), offset
        dest = _at(shape, dtype, offset)
        assert compiled.copy(dest, np.broadcast_to(row, shape))
        assert np.array_equal(dest, np.broadcast_to(row, shape)), offset


@needs_kernels
@pytest.mark.parametrize("threads", [1, 2])
def test_binary_returns_the_floating_point_errors_its_threads_raised(threads: int) -> None:
    """(zero divisors, errors): 1 divide by zero, 2 overflow, 4 underflow, 8 invalid, ORed over every
    thread's pieces; float arithmetic only (integer division counts zero divisors instead)."""
    mod = compiled.module()
    n = 1 << 18
    good = ((n,), ((4,), (4,), (4,)))
    o = np.empty(n, np.float32)
    big = np.full(n, 3e38, np.float32)
    ones = np.ones(n, np.float32)
    zeros = np.zeros(n, np.float32)
    add, div, gt = compiled._OP["add"], compiled._OP["divide"], compiled._OP["greater"]
    f32 = compiled.DTYPES.index("float32")
    last = big.copy()
    last[-1] = np.inf  # the last piece alone is invalid (inf - inf is computed as inf + -inf)
    neg = ones.copy()
    neg[-1] = -np.inf
    assert mod.binary(add, f32, o, big, big, *good, 0, n, 0, threads) == (0, 2)
    assert mod.binary(add, f32, o, last, neg, *good, 0, n, 0, threads) == (0, 8)
    assert mod.binary(div, f32, o, ones, zeros, *good, 0, n, 0, threads) == (0, 1)
    assert mod.binary(div, f32, o, zeros, zeros, *good, 0, n, 0, threads) == (0, 8)
    assert mod.binary(add, f32, o, ones, ones, *good, 0, n, 0, threads) == (0, 0)
    flags = np.empty(n, np.bool_)
    bool_out = ((n,), ((1,), (4,), (4,)))
    assert mod.binary(gt, f32, flags, last, ones, *bool_out, 0, n, 0, threads) == (0, 0)  # comparisons report none
    i32 = compiled.DTYPES.index("int32")
    io = np.empty(n, np.int32)
    assert mod.binary(div, i32, io, np.ones(n, np.int32), np.zeros(n, np.int32), *good, 0, n, 0, threads) == (n, 0)


@needs_kernels
@pytest.mark.parametrize("threads", [1, 2])
def test_copy_declines_overlapping_or_unaligned_arrays_writing_nothing(threads: int) -> None:
    mod = compiled.module()
    n = 1 << 16
    buf = np.arange(3 * n, dtype=np.float32)
    before = buf.copy()
    one = ((4,), (4,))
    for lo, hi in ((0, n // 2), (n // 2, 0), (0, 1), (1, 0), (10, 10 + n - 1)):  # sources that overlap the output
        assert mod.copy(buf[lo : lo + n], buf[hi : hi + n], (n,), one, 0, n, 0, threads) is False
    assert buf.tobytes() == before.tobytes()
    raw = np.zeros(4 * n + 4, np.uint8)
    odd = np.frombuffer(raw.data, np.uint32, n, offset=1)  # off its 4-byte alignment
    ok = np.zeros(n, np.uint32)
    assert mod.copy(odd, ok + 7, (n,), one, 0, n, 0, threads) is False
    assert mod.copy(ok, odd, (n,), one, 0, n, 0, threads) is False
    assert not raw.any() and not ok.any()
    wide = np.zeros(2 * n, np.uint8)  # strides that are not a multiple of the item size
    assert mod.copy(ok[: n // 2], wide.view(np.uint32)[:1], (n // 2,), ((4,), (0,)), 0, n // 2, 0, threads)
    assert mod.copy(np.zeros(8, np.uint16), wide.view(np.uint16), (4,), ((4,), (3,)), 0, 4, 0, threads) is False
    # apart, and aligned: copied (the bytes right after the output untouched)
    assert mod.copy(buf[:n], buf[n : 2 * n], (n,), one, 0, n, 0, threads) is True
    assert buf[:n].tobytes() == before[n : 2 * n].tobytes()
    assert buf[n:].tobytes() == before[n:].tobytes()
