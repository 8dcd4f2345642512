"""The compiled kernels against the NumPy engine: each gives the other's results.

Every comparison computes one call under ``compiled.using(False)`` (the NumPy engine: the
reference) and under ``compiled.using(True)`` (the compiled loops) at 1, 2 or 3 threads
(:func:`bcast.engines.numpy.threads.set_num_threads`), on inputs built afresh for each run.
Covered: every operator with compiled loops (and ``mod``, whose integer division by zero
must fail alike), in each dtype it takes of float32, float64, float16, bfloat16, int32,
int64 and bool; ``bcast.plan(...).materialize`` and ``.backward``; broadcast patterns (row,
column, channel, scalar, inner, middle, outer, same shape, each also swapped so that the
broadcast operand comes first, zero-size dims, 0-d); operand layouts (transposed, stepped,
sliced, negative strides, unaligned, stride 0, byte-swapped, read-only); ``out=`` (none,
fresh, non-contiguous, exactly an input, a shifted view overlapping an input). Tables
cover the named patterns; hypothesis draws shapes, layouts, ``out=``, values and threads.

Each table (operator family x dtype x pattern x size x threads, and the like for ``out=``,
layouts, materialize, backward, division by zero) is the full cross product of its factors;
``make test`` runs a pairwise covering design of it (``tests/covering.py``: every pair of
factor values that the table holds, in at least one test), the other rows carry the
``full`` mark and run in ``make test-full``. :func:`test_designs_cover_every_pair` checks
the designs.

Sizes: small (hypothesis' 0 to 7 on each of 0 to 4 axes: NumPy's ufuncs on both paths),
medium (outputs of 96 KiB to 1 MiB: the compiled loops, above ``compiled.MIN_BYTES``), big
(every array of the case over 1.25 MiB, above the 1 MiB under which the NumPy engine stays
on one thread). The compiled loops start threads only from ``compiled.THREAD_BYTES``
(8 MiB): an autouse fixture lowers it to 1 MiB, so that big cases run on threads in both
engines; :func:`test_default_thresholds` runs a few outputs past 8 MiB as shipped, and
:func:`test_streaming_stores` the loops' non-temporal stores (``compiled.STREAM_BYTES``).
Another instruction set's loops: ``BCAST_ISA=avx2`` (or ``baseline``) in the environment.

Comparison rules
----------------
* ints and bools: bit-identical (the raw bytes).
* floats, for add sub mul div mod, the comparisons, where, max min, the elementwise sum and
  mean, and materialize: bit-identical once every NaN is mapped to one canonical NaN (NaN
  payloads may differ): NaN at the same positions, the same bits elsewhere (-0.0 is not 0.0).
* pow: float32 and float64 within 2 ulps where finite; float16 and bfloat16 (computed
  wider, then rounded) within 1 ulp of their own type; NaN and each infinity at the same
  positions.
* backward (sums over the broadcast axes) is not bit-identical: another summation order is
  allowed. With ``exact`` the longdouble sum, ``n`` the number of terms and ``S`` the sum of
  their magnitudes, each path's result is within ``n * eps * S`` of ``exact`` (float32,
  float64), or within 1 ulp of ``exact`` rounded to the type or ``n * eps(float32) * S`` of
  it (float16, bfloat16, summed in float32). On integer-valued data (|x| <= 4, so every
  partial sum is exact in float32) both paths must give ``exact`` rounded to the type.
  NaN and each infinity at the same positions. Int sums wrap: bit-identical; bool sums
  (logical or) bit-identical.
* errors: the same exception type and message on both paths (integer division by zero,
  0 to a negative integer power); INT_MIN / -1 (and its remainders) the same result.
* inputs are never written (except an input that is, or overlaps, ``out``): their bytes
  before and after every call are compared; a call given ``out`` returns ``out`` itself.

Without the compiled extension (``compiled.LOADED`` false) the comparisons skip; the checks
of the comparison rules, of the sizes, of the switch and of ``BCAST_PURE_PYTHON`` run everywhere.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import bcast
import bcast.ops as ops
import covering
from bcast.engines.numpy import compiled, kernels, threads
from bcast.errors import DivisionByZeroError
from bcast.operators import BY_NAME

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - an optional extra
    ml_dtypes = None

NATIVE = pytest.mark.skipif(not compiled.LOADED, reason=f"the compiled kernels are not built ({compiled.REASON})")
NO_ML_DTYPES = "ml_dtypes is not installed"
# the NumPy engine warns as NumPy does (inf - inf, overflow): a warning is no result
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow|divide by zero) encountered:RuntimeWarning")

THREADS = (1, 2, 3)
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int32", "int64")
DTYPES = (*FLOATS, *INTS, "bool")
#: the ONNX type of each, to read the operator table's type constraints
ONNX = {
    "float32": "float",
    "float64": "double",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}
#: every array of a big case holds at least this many bytes: above the 1 MiB (kernels.SERIAL_BYTES)
#: under which both engines stay on one thread
BIG_BYTES = (1 << 20) * 5 // 4
#: the output of a medium case holds at least this many bytes and its arrays under 1 MiB: above
#: compiled.MIN_BYTES (64 KiB; smaller outputs are left to NumPy's ufuncs), on one thread
MEDIUM_BYTES = 96 << 10
#: the bytes of each size of case (small: as hypothesis draws them, 0 to 7 on each of 0 to 4 axes)
TIERS = {"small": 0, "medium": MEDIUM_BYTES, "big": BIG_BYTES}
#: elements of each cached value pool: the largest big array (bool, 1.31 M) plus room for offsets
POOL = 1_600_000
#: where operand i's values start in its pool, in the tables (operands of one dtype differ)
OFFSET = 100_003
#: the byte every fresh ``out`` and every gap of a strided layout starts as
GARBAGE = 0xA5

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,  # the autouse threshold below: the same for every example
    ],
)
#: the compiled loops' thread threshold as shipped (outputs under it are computed on the calling thread)
SHIPPED_THREAD_BYTES = getattr(compiled, "THREAD_BYTES", None)


@pytest.fixture(autouse=True)
def _threads_from_1_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled loops on threads from 1 MiB, as the NumPy engine: big cases then test both engines' threads."""
    if SHIPPED_THREAD_BYTES is not None:
        monkeypatch.setattr(compiled, "THREAD_BYTES", min(SHIPPED_THREAD_BYTES, 1 << 20))


def dtype_of(name: str) -> np.dtype[Any]:
    if name == "bfloat16":
        if ml_dtypes is None:  # pragma: no cover - an optional extra
            pytest.skip(NO_ML_DTYPES)
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def available(names: Sequence[str]) -> tuple[str, ...]:
    """The dtypes this environment has (bfloat16 needs ml_dtypes)."""
    return tuple(n for n in names if n != "bfloat16" or ml_dtypes is not None)


_BF16_SKIP = pytest.mark.skipif(ml_dtypes is None, reason=NO_ML_DTYPES)


def bf16_mark(*names: str) -> list[pytest.MarkDecorator]:
    return [_BF16_SKIP] if "bfloat16" in names else []


def is_float(dtype: np.dtype[Any]) -> bool:
    return dtype.name in FLOATS


def finfo(dtype: np.dtype[Any]) -> Any:
    return ml_dtypes.finfo(dtype) if dtype.name == "bfloat16" else np.finfo(dtype)


# -- the comparisons ----------------------------------------------------------------------

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def flat(x: np.ndarray) -> np.ndarray:
    """A C-ordered 1-D copy (a 0-d array becomes one element)."""
    return np.array(x, copy=True, order="C").reshape(-1)


def isnan(x: np.ndarray) -> np.ndarray:
    return np.asarray(x != x)  # NaN is the value unequal to itself (bfloat16 too)


def _where(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(index, shape)) if shape else ()


def _same_meta(got: np.ndarray, want: np.ndarray, ctx: str) -> None:
    assert got.shape == want.shape, f"{ctx}: shape {got.shape}, NumPy engine {want.shape}"
    assert got.dtype == want.dtype, f"{ctx}: dtype {got.dtype}, NumPy engine {want.dtype}"


def _same_nans(g: np.ndarray, w: np.ndarray, shape: tuple[int, ...], ctx: str) -> np.ndarray:
    gn, wn = isnan(g), isnan(w)
    bad = np.flatnonzero(gn != wn)
    assert not bad.size, (
        f"{ctx}: {bad.size} NaN(s) in one result only, first at {_where(bad[0], shape)}: "
        f"compiled {g[bad[0]]!r}, NumPy engine {w[bad[0]]!r}"
    )
    return gn


def assert_same_bits(got: np.ndarray, want: np.ndarray, ctx: str = "") -> None:
    """Bit-identical, every NaN counted as one (NaN payloads may differ); -0.0 and 0.0 differ."""
    _same_meta(got, want, ctx)
    g, w = flat(got), flat(want)
    u = _UINT[got.dtype.itemsize]
    gb, wb = g.view(u), w.view(u)
    if is_float(got.dtype):
        nan = _same_nans(g, w, got.shape, ctx)
        canonical = np.iinfo(u).max
        gb, wb = np.where(nan, canonical, gb), np.where(nan, canonical, wb)
    bad = np.flatnonzero(gb != wb)
    assert not bad.size, (
        f"{ctx}: {bad.size} of {g.size} elements differ, first at {_where(bad[0], got.shape)}: "
        f"compiled {g[bad[0]]!r} (bits {int(gb[bad[0]]):#x}), NumPy engine {w[bad[0]]!r} (bits {int(wb[bad[0]]):#x})"
    )


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable values apart finite ``a`` and ``b`` (one float dtype) are, as float64.

    The bits read as sign-magnitude integers, mapped onto a monotone scale (-0.0 and 0.0
    are both 0); across the signs the distance is the sum of both magnitudes.
    """
    ints = _INT[a.dtype.itemsize]
    low = np.int64(np.iinfo(ints).min)

    def ordered(x: np.ndarray) -> np.ndarray:
        i = flat(x).view(ints).astype(np.int64)
        return np.where(i < 0, low - i, i)

    oa, ob = ordered(a), ordered(b)
    same_side = (oa < 0) == (ob < 0)
    apart = np.abs(oa.astype(np.float64)) + np.abs(ob.astype(np.float64))
    return np.where(same_side, np.abs(np.where(same_side, oa - ob, 0)).astype(np.float64), apart)


def as64(x: np.ndarray) -> np.ndarray:
    """A float array's values as float64 (bfloat16 through float32); bools and ints as they convert."""
    x = np.asarray(x)
    return (x.astype(np.float32) if x.dtype.name == "bfloat16" else x).astype(np.float64)


def _same_nonfinite(g: np.ndarray, w: np.ndarray, shape: tuple[int, ...], ctx: str) -> np.ndarray:
    """NaN and each infinity at the same positions; the mask of positions finite in both."""
    _same_nans(g, w, shape, ctx)
    g64, w64 = as64(g), as64(w)
    for sign in (1, -1):
        gi, wi = g64 == sign * np.inf, w64 == sign * np.inf
        bad = np.flatnonzero(gi != wi)
        assert not bad.size, (
            f"{ctx}: {sign * np.inf} in one result only, first at {_where(bad[0], shape)}: "
            f"compiled {g[bad[0]]!r}, NumPy engine {w[bad[0]]!r}"
        )
    finite: np.ndarray = np.isfinite(g64) & np.isfinite(w64)
    return finite


def assert_pow_close(got: np.ndarray, want: np.ndarray, ctx: str = "") -> None:
    """Within 2 ulps (float32, float64) or 1 ulp of the type (float16, bfloat16); ints bit-identical."""
    if not is_float(got.dtype):
        assert_same_bits(got, want, ctx)
        return
    _same_meta(got, want, ctx)
    g, w = flat(got), flat(want)
    finite = _same_nonfinite(g, w, got.shape, ctx)
    if got.dtype.itemsize >= 4:
        np.testing.assert_array_max_ulp(g[finite], w[finite], maxulp=2, dtype=got.dtype)
        return
    d = ulp_distance(g[finite], w[finite])
    bad = np.flatnonzero(d > 1)
    assert not bad.size, (
        f"{ctx}: {bad.size} elements more than 1 ulp apart: compiled {g[finite][bad[0]]!r}, "
        f"NumPy engine {w[finite][bad[0]]!r} ({d[bad[0]]:.0f} ulps)"
    )


def wide(x: np.ndarray) -> np.ndarray:
    """The values of a float array in longdouble (exact: every float type here fits)."""
    return (
        np.asarray(x).astype(np.float32 if x.dtype.itemsize == 2 else x.dtype.newbyteorder("=")).astype(np.longdouble)
    )


@dataclass(frozen=True)
class SumOracle:
    """The exact sums of ``dy`` over ``axes``, to judge a float backward by."""

    dy: np.ndarray
    axes: tuple[int, ...]
    shape: tuple[int, ...]  # the data's shape, the result's
    exact_data: bool = False  # integer-valued: every partial sum is exact in float32

    @functools.cached_property
    def sums(self) -> tuple[np.ndarray, np.ndarray]:
        """The exact sums and the sums of the magnitudes, in longdouble."""
        x = wide(self.dy)
        return x.sum(axis=self.axes).reshape(self.shape), np.abs(x).sum(axis=self.axes).reshape(-1)

    def check(self, result: np.ndarray, who: str, ctx: str) -> None:
        dtype = result.dtype
        exact, scale = self.sums
        rounded = exact.astype(np.float64).astype(dtype)
        r = flat(result)
        _same_nonfinite(r, flat(rounded), self.shape, f"{ctx}: {who} against the exact sum")
        finite = np.isfinite(as64(flat(rounded)))
        if self.exact_data:
            bad = np.flatnonzero(finite & (r.astype(np.float64) != flat(rounded).astype(np.float64)))
            assert not bad.size, (
                f"{ctx}: {who}: {bad.size} sums of integer values are not exact, first at "
                f"{_where(bad[0], self.shape)}: {r[bad[0]]!r}, exact {flat(exact)[bad[0]]!r}"
            )
            return
        n = math.prod(self.dy.shape[a] for a in self.axes)
        err = np.abs(wide(r) - flat(exact))
        if dtype.itemsize == 2:
            ok = (ulp_distance(r, flat(rounded)) <= 1) | (err <= n * np.finfo(np.float32).eps * scale)
        else:
            ok = err <= n * finfo(dtype).eps * scale
        bad = np.flatnonzero(finite & ~ok)
        assert not bad.size, (
            f"{ctx}: {who}: {bad.size} sums of {n} terms too far from the exact sum, first at "
            f"{_where(bad[0], self.shape)}: {r[bad[0]]!r}, exact {flat(exact)[bad[0]]!r}, sum|x| {scale[bad[0]]!r}"
        )

    def __call__(self, got: np.ndarray, want: np.ndarray, ctx: str) -> None:
        _same_meta(got, want, ctx)
        _same_nonfinite(flat(got), flat(want), got.shape, ctx)
        self.check(want, "NumPy engine", ctx)
        self.check(got, "compiled", ctx)


# -- running both paths -------------------------------------------------------------------

Build = Callable[[], tuple[list[np.ndarray], "np.ndarray | None"]]
Call = Callable[[list[np.ndarray], "np.ndarray | None"], np.ndarray]
Check = Callable[[np.ndarray, np.ndarray, str], None]


@contextmanager
def engine(use_compiled: bool, n_threads: int) -> Iterator[None]:
    with compiled.using(use_compiled):
        threads.set_num_threads(n_threads)
        try:
            yield
        finally:
            threads.set_num_threads(None)


def raw(x: np.ndarray) -> np.ndarray:
    return flat(x).view(np.uint8)


def run(use_compiled: bool, n_threads: int, build: Build, call: Call, ctx: str) -> np.ndarray:
    """One path's result (a copy), checking that it wrote no input and returned ``out``."""
    with engine(use_compiled, n_threads):
        args, out = build()
        kept = [(i, x, raw(x)) for i, x in enumerate(args) if out is None or not np.may_share_memory(x, out)]
        result = call(args, out)
    which = "compiled" if use_compiled else "NumPy engine"
    for i, x, before in kept:
        assert np.array_equal(raw(x), before), f"{ctx}: the {which} path wrote into input {i}"
    if out is not None:
        assert result is out, f"{ctx}: the {which} path did not return out"
    return np.array(result, copy=True)


def compare(build: Build, call: Call, check: Check, ctx: str, n_threads: Sequence[int] = THREADS) -> None:
    """The NumPy engine's result (at the most threads) against the compiled loops' at each thread count."""
    want = run(False, max(n_threads), build, call, ctx)
    for t in n_threads:
        got = run(True, t, build, call, ctx)
        check(got, want, f"{ctx}, {t} thread(s)")


def tier_threads(tier: str) -> tuple[int, ...]:
    """Thread counts worth comparing: each of them where the engines may cut the work (big), else one."""
    return THREADS if tier == "big" else (2,)


def raised(use_compiled: bool, n_threads: int, fn: Callable[[], object]) -> Exception:
    with engine(use_compiled, n_threads):
        try:
            fn()
        except Exception as e:
            return e
    pytest.fail(f"the {'compiled' if use_compiled else 'NumPy engine'} path raised nothing")


# -- values -------------------------------------------------------------------------------


def specials(dtype: np.dtype[Any]) -> np.ndarray:
    """NaNs (negative, with a payload), infinities, signed zeros, subnormals, the extremes."""
    fi = finfo(dtype)
    values = [np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, fi.max, -fi.max, fi.smallest_normal]
    values += [fi.smallest_subnormal, -fi.smallest_subnormal, fi.eps, 3 * fi.smallest_subnormal]
    a = np.array(values, np.float64).astype(dtype)
    u = _UINT[dtype.itemsize]
    nan = np.array([np.nan], np.float64).astype(dtype).view(u)
    sign = u(1 << (8 * dtype.itemsize - 1))
    nans = np.concatenate([nan, nan | sign, nan | u(1), nan | sign | u(2)]).view(dtype)
    return np.concatenate([a, nans])


def int_extremes(dtype: np.dtype[Any]) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, info.max, info.max - 1, -1, 0, 1, 2, -2], dtype)


#: int kinds drawn from a small range: (lowest, highest)
INT_RANGES = {
    "pow_base": (-4, 4),
    "pow_exp": (0, 5),
    "pow_exp_negative": (-3, 5),
    "pow_exp_wide": (0, 70),
    "sum_exact": (-4, 4),
}
NONZERO_BASES = (-4, -3, -2, -1, 1, 2, 3, 4)
POW_EXPONENTS = (0.5, -0.5, 1.5, -1.5, 2.5, np.nan, np.inf, -np.inf, -0.0, 0.0, 100.0, -100.0)


def _sprinkle(rng: np.random.Generator, v: np.ndarray, where: np.ndarray, choices: np.ndarray) -> None:
    v[where] = choices[rng.integers(0, len(choices), int(where.sum()))]


def generate(rng: np.random.Generator, name: str, kind: str, n: int) -> np.ndarray:
    """``n`` values of dtype ``name`` for operands of ``kind`` (see :func:`elements` for the same by hypothesis)."""
    if name == "bool":
        return rng.random(n) < 0.5
    dtype = dtype_of(name)
    pick = rng.random(n)
    if name in INTS:
        if kind in INT_RANGES:
            lo, hi = INT_RANGES[kind]
            return rng.integers(lo, hi, n, endpoint=True).astype(dtype)
        if kind == "pow_base_nonzero":
            return np.array(NONZERO_BASES, dtype)[rng.integers(0, len(NONZERO_BASES), n)]
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        v[pick < 0.3] = rng.integers(-4, 5, int((pick < 0.3).sum()))
        medium = (pick >= 0.3) & (pick < 0.5)
        v[medium] = rng.integers(-1000, 1001, int(medium.sum()))
        _sprinkle(rng, v, pick >= 0.9, int_extremes(dtype))
        if kind == "divisor":
            v[v == 0] = 1
        return v
    if kind == "sum_exact":
        return rng.integers(-4, 5, n).astype(dtype)
    if kind in ("sum_any", "sum_special"):
        top = 1 if dtype.itemsize == 2 else 4
        v = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, top, n)).astype(dtype)
        if kind == "sum_special":
            _sprinkle(rng, v, pick < 0.002, np.array([np.nan, np.inf, -np.inf]).astype(dtype))
        return v
    if kind == "pow_exp":
        f = np.where(pick < 0.4, rng.integers(-3, 6, n), rng.standard_normal(n) * 2).astype(dtype)
        _sprinkle(rng, f, pick >= 0.85, np.array(POW_EXPONENTS).astype(dtype))
        return f
    f = np.where(pick < 0.3, rng.integers(-4, 5, n), rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n))
    v = f.astype(dtype)
    _sprinkle(rng, v, pick >= 0.9, specials(dtype))
    return v


@functools.cache
def pool(name: str, kind: str) -> np.ndarray:
    """:data:`POOL` values of one dtype and kind, read-only; operands are slices of it."""
    rng = np.random.default_rng(zlib.crc32(f"{name}/{kind}".encode()))
    v = generate(rng, name, kind, POOL)
    v.flags.writeable = False
    return v


def pooled(name: str, kind: str, shape: tuple[int, ...], offset: int) -> np.ndarray:
    size = math.prod(shape)
    return pool(name, kind)[offset : offset + size].reshape(shape)


def elements(name: str, kind: str) -> st.SearchStrategy[Any]:
    """Hypothesis' values for small arrays: those of :func:`generate`, edge values first."""
    if name == "bool":
        return st.booleans()
    if name in INTS:
        if kind in INT_RANGES:
            return st.integers(*INT_RANGES[kind])
        if kind == "pow_base_nonzero":
            return st.sampled_from(NONZERO_BASES)
        info = np.iinfo(name)
        any_int = st.one_of(
            st.integers(-4, 4), st.sampled_from(int_extremes(np.dtype(name)).tolist()), st.integers(info.min, info.max)
        )
        return any_int.filter(bool) if kind == "divisor" else any_int
    width = 16 if name == "float16" else 64 if name == "float64" else 32
    if kind == "sum_exact":
        return st.integers(-4, 4).map(float)
    if kind == "sum_any":
        return st.floats(-1e3, 1e3, width=width)
    if kind == "sum_special":
        return st.one_of(st.floats(-1e3, 1e3, width=width), st.sampled_from([math.nan, math.inf, -math.inf]))
    if kind == "pow_exp":
        return st.one_of(st.integers(-3, 5).map(float), st.sampled_from(POW_EXPONENTS), st.floats(-8, 8, width=width))
    return st.one_of(st.integers(-4, 4).map(float), st.floats(width=width))


def values(name: str, kind: str, shape: tuple[int, ...], big: bool) -> st.SearchStrategy[np.ndarray]:
    """An array of ``shape``: a slice of a pool when big (drawing a million elements is slow), else drawn."""
    if big:
        size = math.prod(shape)
        return st.integers(0, POOL - size).map(lambda off: pooled(name, kind, shape, off))
    if name == "bfloat16":  # drawn as float32, rounded
        return hnp.arrays(np.float32, shape, elements=elements(name, kind)).map(lambda a: a.astype(dtype_of(name)))
    return hnp.arrays(np.dtype(name), shape, elements=elements(name, kind))


# -- layouts ------------------------------------------------------------------------------


def garbage(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    nbytes = math.prod(shape) * dtype.itemsize
    return np.full(max(nbytes, 0), GARBAGE, np.uint8).view(dtype).reshape(shape)


def place(v: np.ndarray, layout: str) -> np.ndarray:
    """A new array holding ``v``'s values in ``layout`` (``zero_stride``: ``v``'s first row repeated)."""
    if layout == "contiguous":
        return np.array(v, copy=True)
    if layout == "readonly":
        x = np.array(v, copy=True)
        x.flags.writeable = False
        return x
    if layout == "transposed":  # Fortran order: every stride reversed
        return np.array(v.T, copy=True).T
    if layout == "reversed":  # negative strides on every axis
        return np.flip(np.flip(v).copy())
    if layout == "unaligned":  # one byte past an aligned address
        buf = np.empty(v.nbytes + 1, np.uint8)
        x = buf[1:].view(v.dtype).reshape(v.shape)
        x[...] = v
        return x
    if layout == "zero_stride":
        return np.broadcast_to(v[:1], v.shape)
    if layout == "byteswapped":
        return v.astype(v.dtype.newbyteorder())
    if layout == "stepped":  # every other element of the last axis
        buf = garbage((*v.shape[:-1], 2 * v.shape[-1]), v.dtype)
        x = buf[..., ::2]
    elif layout == "sliced":  # rows that start one element in, on every axis
        buf = garbage(tuple(n + 1 for n in v.shape), v.dtype)
        x = buf[(slice(1, None),) * v.ndim]
    else:  # pragma: no cover - a typo in a table
        raise ValueError(layout)
    x[...] = v
    return x


def layouts_for(shape: tuple[int, ...], dtype: np.dtype[Any], *, writable: bool = False) -> list[str]:
    """The layouts that make sense for an array of ``shape`` (``writable``: for an ``out``)."""
    names = ["contiguous"]
    if len(shape) >= 1:
        names += ["stepped", "sliced", "reversed"]
    if len(shape) >= 2:
        names.append("transposed")
    if dtype.itemsize > 1:
        names.append("unaligned")
    if dtype.itemsize > 1 and dtype.name != "bfloat16":
        names.append("byteswapped")
    if not writable:
        names.append("readonly")
    if not writable and len(shape) >= 1 and shape[0] > 1:
        names.append("zero_stride")
    return names


def overlapping(out_shape: tuple[int, ...], out_dtype: np.dtype[Any], v: np.ndarray, shift: int) -> tuple[Any, Any]:
    """An ``out`` and an input holding ``v`` in one buffer, the input ``shift`` elements after (before) ``out``."""
    item = max(out_dtype.itemsize, v.dtype.itemsize)
    offset = abs(shift) * item
    n_out = math.prod(out_shape) * out_dtype.itemsize
    buf = np.full(max(n_out, v.nbytes) + offset, GARBAGE, np.uint8)
    out_at, in_at = (0, offset) if shift > 0 else (offset, 0)
    out = buf[out_at : out_at + n_out].view(out_dtype).reshape(out_shape)
    x = buf[in_at : in_at + v.nbytes].view(v.dtype).reshape(v.shape)
    x[...] = v
    return out, x


# -- the operators ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # each family is one object: hashed by identity, quickly
class Family:
    """One operator (or one of its value regimes) of ``bcast.ops``."""

    name: str
    fn: Callable[..., np.ndarray]
    spec: str
    kinds: tuple[str, ...] = ("any",)  # operand i's values (the last repeats)
    rule: str = "exact"  # or "pow"
    arity: tuple[int, int] = (2, 2)
    only: tuple[str, ...] = DTYPES

    @property
    def dtypes(self) -> tuple[str, ...]:
        spec = BY_NAME[self.spec]
        types = spec.types_of(spec.output_like)
        return tuple(d for d in DTYPES if ONNX[d] in types and d in self.only)

    def kind(self, i: int) -> str:
        return self.kinds[min(i, len(self.kinds) - 1)]

    def operand_dtype(self, i: int, dtype: str) -> str:
        return "bool" if self.spec == "where" and i == 0 else dtype

    def out_dtype(self, dtype: str) -> str:
        return "bool" if BY_NAME[self.spec].bool_output else dtype

    def check(self, got: np.ndarray, want: np.ndarray, ctx: str) -> None:
        (assert_pow_close if self.rule == "pow" else assert_same_bits)(got, want, ctx)


def _fmod(*args: Any, **kwargs: Any) -> np.ndarray:
    return ops.mod(*args, fmod=1, **kwargs)


DIVISOR = ("any", "divisor")
FAMILIES = (
    Family("add", ops.add, "add"),
    Family("sub", ops.sub, "sub"),
    Family("mul", ops.mul, "mul"),
    Family("div", ops.div, "div", DIVISOR),
    Family("mod", ops.mod, "mod", DIVISOR),
    Family("fmod", _fmod, "mod", DIVISOR),
    Family("pow", ops.pow, "pow", ("pow_base", "pow_exp"), rule="pow"),
    Family("pow_negative_exponent", ops.pow, "pow", ("pow_base_nonzero", "pow_exp_negative"), only=INTS),
    Family("pow_wrapping", ops.pow, "pow", ("any", "pow_exp_wide"), only=INTS),
    Family("equal", ops.equal, "equal"),
    Family("greater", ops.greater, "greater"),
    Family("greater_or_equal", ops.greater_or_equal, "greater_or_equal"),
    Family("less", ops.less, "less"),
    Family("less_or_equal", ops.less_or_equal, "less_or_equal"),
    Family("and", ops.and_, "and_"),
    Family("or", ops.or_, "or_"),
    Family("xor", ops.xor, "xor"),
    Family("bitwise_and", ops.bitwise_and, "bitwise_and"),
    Family("bitwise_or", ops.bitwise_or, "bitwise_or"),
    Family("bitwise_xor", ops.bitwise_xor, "bitwise_xor"),
    Family("max", ops.max, "max", arity=(1, 3)),
    Family("min", ops.min, "min", arity=(1, 3)),
    Family("sum", ops.sum, "sum", arity=(1, 3)),
    Family("mean", ops.mean, "mean", arity=(1, 3)),
    Family("where", ops.where, "where", ("cond", "any"), arity=(3, 3)),
)


@dataclass(repr=False)
class Case:
    """One elementwise call: its operands' values and layouts, and its ``out=``."""

    family: Family
    dtype: str
    values: list[np.ndarray]
    layouts: list[str]
    out: str = "none"  # none, fresh, noncontig, alias:<i>, shift:<i>
    out_layout: str = "stepped"
    shift: int = 1
    n_threads: tuple[int, ...] = (2,)
    names: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.names = [self.family.operand_dtype(i, self.dtype) for i in range(len(self.values))]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return np.broadcast_shapes(*(v.shape for v in self.values))

    @property
    def out_dtype(self) -> np.dtype[Any]:
        return dtype_of(self.family.out_dtype(self.dtype))

    def build(self) -> tuple[list[np.ndarray], np.ndarray | None]:
        args = [place(v, layout) for v, layout in zip(self.values, self.layouts, strict=True)]
        mode, _, index = self.out.partition(":")
        if mode == "none":
            return args, None
        if mode == "fresh":
            return args, garbage(self.out_shape, self.out_dtype)
        if mode == "noncontig":
            return args, place(garbage(self.out_shape, self.out_dtype), self.out_layout)
        i = int(index)
        if mode == "alias":
            return args, args[i]
        out, args[i] = overlapping(self.out_shape, self.out_dtype, self.values[i], self.shift)
        return args, out

    def call(self, args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        return self.family.fn(*args, out=out)

    def out_modes(self) -> list[str]:
        modes = ["none", "fresh"]
        if self.out_shape:
            modes.append("noncontig")
        for i, (v, layout) in enumerate(zip(self.values, self.layouts, strict=True)):
            if v.shape == self.out_shape and v.dtype == self.out_dtype and layout not in ("zero_stride", "readonly"):
                modes.append(f"alias:{i}")
            modes.append(f"shift:{i}")
        return modes

    def __str__(self) -> str:
        parts = zip(self.names, self.values, self.layouts, strict=True)
        shapes = ", ".join(f"{n}{list(v.shape)} {lay}" for n, v, lay in parts)
        out = self.out + (f" {self.out_layout}" if self.out == "noncontig" else "")
        out += f" by {self.shift}" if self.out.startswith("shift") else ""
        return f"{self.family.name}({shapes}; out={out})"

    def __repr__(self) -> str:  # what hypothesis prints of a failing draw
        return str(self)

    def compare(self) -> None:
        compare(self.build, self.call, self.family.check, str(self), self.n_threads)


def tier_elements(names: Sequence[str], tier: str) -> int:
    """Elements that make every array of these dtypes hold the tier's bytes."""
    return -(-TIERS[tier] // min(dtype_of(n).itemsize for n in names))


# -- the broadcast patterns ---------------------------------------------------------------

#: operand shapes of each pattern, in named dims (0 and 1 are sizes); where takes (B, A, B)
PATTERNS = {
    "row": ("n m", "m"),
    "column": ("n m", "n 1"),
    "channel": ("b c h w", "c 1 1"),
    "scalar": ("n m", ""),
    "inner": ("n m k", "n m 1"),
    "middle": ("n m k", "n 1 k"),
    "outer": ("n 1", "1 m"),
    "same": ("n m", "n m"),
    "leading_ones": ("1 1 n m", "m"),
    "row_swapped": ("m", "n m"),
    "column_swapped": ("n 1", "n m"),
    "channel_swapped": ("c 1 1", "b c h w"),
    "scalar_swapped": ("", "n m"),
    "zero_rows": ("0 m", "m"),
    "zero_broadcast": ("n 0", "n 1"),
    "zero_d": ("", ""),
}
#: small in the table (the hypothesis tests draw every small shape): where the NumPy ufuncs compute anyway
SMALL_PATTERNS = ("row", "scalar_swapped", "zero_rows", "zero_broadcast", "zero_d")
#: the patterns grown to medium size: all but the empty ones
SIZED_PATTERNS = tuple(p for p in PATTERNS if not p.startswith("zero"))
BIG_PATTERNS = ("row", "column", "channel", "scalar", "inner", "row_swapped")
SMALL_DIMS = {"n": 5, "m": 7, "k": 3, "b": 2, "c": 3, "h": 4, "w": 5}
#: odd sizes, so that no row is a multiple of a vector's width; n and b grow until the output is big
BIG_DIMS = {"m": 517, "k": 3, "c": 5, "h": 31, "w": 67, "n": 1, "b": 1}


def shapes_of(dims_text: Sequence[str], dims: dict[str, int]) -> list[tuple[int, ...]]:
    return [tuple(int(dims.get(t, t)) for t in text.split()) for text in dims_text]


def pattern_shapes(pattern: str, arity: int, elements: int) -> list[tuple[int, ...]]:
    """The operands' shapes: small (``elements`` 0), or with the output grown to ``elements``."""
    texts = PATTERNS[pattern]
    dims = dict(SMALL_DIMS)
    if elements:
        dims = dict(BIG_DIMS)
        unit = math.prod(np.broadcast_shapes(*shapes_of(texts, dims)))
        dims["n"] = dims["b"] = -(-elements // unit) if unit else 1
    a, b = shapes_of(texts, dims)
    return [a] if arity == 1 else [b, a, b] if arity == 3 else [a, b]


def table_case(family: Family, dtype: str, pattern: str, tier: str) -> Case:
    arity = min(max(2, family.arity[0]), family.arity[1])
    names = [family.operand_dtype(i, dtype) for i in range(arity)] + [family.out_dtype(dtype)]
    shapes = pattern_shapes(pattern, arity, tier_elements(names, tier))
    vals = [pooled(family.operand_dtype(i, dtype), family.kind(i), s, i * OFFSET) for i, s in enumerate(shapes)]
    return Case(family, dtype, vals, ["contiguous"] * arity, n_threads=tier_threads(tier))


#: the dtypes each family takes
DTYPES_OF = {f.name: f.dtypes for f in FAMILIES}
#: the patterns of each size
TIER_PATTERNS = {"small": SMALL_PATTERNS, "medium": SIZED_PATTERNS, "big": BIG_PATTERNS}


def fits(row: Mapping[str, Any]) -> bool:
    """Whether a (partial) row of a table makes sense: the family takes the dtype, the size the
    pattern, the thread count matters at the size."""
    if "family" in row and "dtype" in row and row["dtype"] not in DTYPES_OF[row["family"].name]:
        return False
    if "pattern" in row and "tier" in row and row["pattern"] not in TIER_PATTERNS[row["tier"]]:
        return False
    return not ("threads" in row and "tier" in row and row["threads"] not in tier_threads(row["tier"]))


@dataclass(frozen=True)
class Design:
    """A table (the cross product of ``factors`` where ``rule`` holds) and its pairwise covering design."""

    factors: dict[str, tuple[Any, ...]]
    rule: Callable[[Mapping[str, Any]], bool]

    @functools.cached_property
    def rows(self) -> list[dict[str, Any]]:
        return covering.table(self.factors, self.rule)

    @functools.cached_property
    def design(self) -> list[dict[str, Any]]:
        return covering.pairwise(self.factors, self.rule, self.rows)

    def params(self, name: Callable[[Mapping[str, Any]], str]) -> list[Any]:
        """Every row as a ``pytest.param`` in the factors' order, those outside the design marked ``full``."""
        return covering.split(self.rows, self.design, name, lambda row: bf16_mark(row.get("dtype", "")))

    def __hash__(self) -> int:
        return id(self)


def row_id(*keys: str) -> Callable[[Mapping[str, Any]], str]:
    def name(row: Mapping[str, Any]) -> str:
        parts = [getattr(row[k], "name", row[k]) for k in keys]
        return "-".join(f"t{p}" if k == "threads" else str(p) for k, p in zip(keys, parts, strict=True))

    return name


PATTERN_DESIGN = Design(
    {"family": FAMILIES, "dtype": DTYPES, "pattern": tuple(PATTERNS), "tier": tuple(TIERS), "threads": THREADS}, fits
)


@NATIVE
@pytest.mark.parametrize(
    ("family", "dtype", "pattern", "tier", "threads"),
    PATTERN_DESIGN.params(row_id("family", "dtype", "pattern", "tier", "threads")),
)
def test_pattern(family: Family, dtype: str, pattern: str, tier: str, threads: int) -> None:
    replace(table_case(family, dtype, pattern, tier), n_threads=(threads,)).compare()


#: each ``out=`` on a pattern where it applies: the aliased operand has the output's shape
#: the ``out=`` also tried big: written by several threads while other threads read the inputs
BIG_OUTS = ("noncontig", "alias:0", "shift:0")
OUT_PATTERNS = {
    "fresh": "column",
    "noncontig": "channel",
    "alias:0": "row",
    "alias:1": "row_swapped",
    "shift:0": "row",
    "shift:1": "inner",
}


def out_applies(family: Family, dtype: str, out: str) -> bool:
    """Whether ``out`` can be an operand itself: one of the result's dtype (a comparison's bool...)."""
    mode, _, index = out.partition(":")
    return mode != "alias" or family.operand_dtype(int(index), dtype) == family.out_dtype(dtype)


#: where's operands are (B, A, B) of a pattern's (A, B): the condition has the output's shape in "same",
#: x in "row"
WHERE_ALIAS_PATTERNS = {"alias:0": "same", "alias:1": "row"}


def out_case(family: Family, dtype: str, out: str, tier: str) -> Case:
    where_alias = WHERE_ALIAS_PATTERNS.get(out) if family.spec == "where" else None
    pattern = where_alias or OUT_PATTERNS[out]
    return replace(table_case(family, dtype, pattern, tier), out=out, shift=-2 if out == "shift:1" else 1)


def out_fits(row: Mapping[str, Any]) -> bool:
    """A row of the ``out=`` table: medium, or big for the ``out=`` in :data:`BIG_OUTS`."""
    if "out" in row and "tier" in row and not (row["tier"] == "medium" or row["out"] in BIG_OUTS):
        return False
    if "family" in row and "dtype" in row and "out" in row and not out_applies(row["family"], row["dtype"], row["out"]):
        return False
    return fits(row)


OUT_DESIGN = Design(
    {"family": FAMILIES, "dtype": DTYPES, "out": tuple(OUT_PATTERNS), "tier": ("medium", "big"), "threads": THREADS},
    out_fits,
)


@NATIVE
@pytest.mark.parametrize(
    ("family", "dtype", "out", "tier", "threads"),
    OUT_DESIGN.params(row_id("family", "dtype", "out", "tier", "threads")),
)
def test_out(family: Family, dtype: str, out: str, tier: str, threads: int) -> None:
    """Each ``out=`` on medium and big outputs (small ones: in the hypothesis tests)."""
    case = replace(out_case(family, dtype, out, tier), n_threads=(threads,))
    assert out in case.out_modes(), case
    case.compare()


LAYOUT_FAMILIES = ("add", "div", "pow", "greater", "max", "where", "and", "bitwise_xor")
LAYOUTS = ("transposed", "stepped", "sliced", "reversed", "unaligned", "zero_stride", "byteswapped", "readonly")


def layout_fits(row: Mapping[str, Any]) -> bool:
    """A row of the layout table: a layout the dtype has (bfloat16 is never byte-swapped...)."""
    if "family" in row and row["family"].name not in LAYOUT_FAMILIES:
        return False
    if "dtype" in row and "layout" in row:
        d = row["dtype"]
        names = layouts_for((2, 2), np.dtype("u2" if d == "bfloat16" else d))  # without ml_dtypes too
        if row["layout"] not in names or (d == "bfloat16" and row["layout"] == "byteswapped"):
            return False
    return fits(row)


LAYOUT_DESIGN = Design(
    {
        "family": tuple(f for f in FAMILIES if f.name in LAYOUT_FAMILIES),
        "dtype": DTYPES,
        "layout": LAYOUTS,
        "operand": (0, 1),
    },
    layout_fits,
)


@NATIVE
@pytest.mark.parametrize(
    ("family", "dtype", "layout", "operand"), LAYOUT_DESIGN.params(row_id("family", "dtype", "layout", "operand"))
)
def test_layout(family: Family, dtype: str, layout: str, operand: int) -> None:
    """One operand so laid out, on a medium column pattern (big and small ones: in the hypothesis tests)."""
    case = table_case(family, dtype, "column", "medium")
    case.layouts[operand] = layout
    case.compare()


# -- hypothesis: everything drawn --------------------------------------------------------

SMALL_SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=7)


def big_shapes(elements: int) -> st.SearchStrategy[tuple[int, ...]]:
    def up(unit: int) -> int:
        return -(-elements // unit)

    return st.sampled_from([(up(517), 517), (up(1551), 517, 3), (up(10385), 5, 31, 67), (7, up(7)), (elements,)])


@st.composite
def operand_shape(draw: st.DrawFn, full: tuple[int, ...]) -> tuple[int, ...]:
    """``full``, or ``full`` with leading dims dropped and some set to 1."""
    if draw(st.booleans()):
        return full
    ndim = draw(st.integers(0, len(full)))
    tail = full[len(full) - ndim :]
    ones = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    return tuple(1 if one else n for n, one in zip(tail, ones, strict=True))


@st.composite
def sizes(draw: st.DrawFn, names: Sequence[str]) -> tuple[tuple[int, ...], bool]:
    """A full shape: small half the time, else medium or big; and whether it is one of those."""
    tier = draw(st.sampled_from(["small", "small", "medium", "big"]))
    return (draw(SMALL_SHAPES) if tier == "small" else draw(big_shapes(tier_elements(names, tier)))), tier != "small"


def drawn_threads() -> st.SearchStrategy[tuple[int, ...]]:
    return st.sampled_from(THREADS).map(lambda t: (t,))


@st.composite
def elementwise_cases(draw: st.DrawFn, family: Family) -> Case:
    dtype = draw(st.sampled_from(available(family.dtypes)))
    arity = draw(st.integers(*family.arity))
    names = [family.operand_dtype(i, dtype) for i in range(arity)]
    full, big = draw(sizes([*names, family.out_dtype(dtype)]))
    shapes = [draw(operand_shape(full)) for _ in range(arity)]
    vals = [draw(values(n, family.kind(i), s, big)) for i, (n, s) in enumerate(zip(names, shapes, strict=True))]
    layouts = [draw(st.sampled_from(layouts_for(v.shape, v.dtype))) for v in vals]
    case = Case(family, dtype, vals, layouts)
    case.out = draw(st.sampled_from(case.out_modes()))
    case.out_layout = draw(st.sampled_from(layouts_for(case.out_shape, case.out_dtype, writable=True)[1:] or ["-"]))
    case.shift = draw(st.sampled_from([1, 3, -1, -2]))
    case.n_threads = draw(drawn_threads())
    return case


@NATIVE
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
@SETTINGS
@given(data=st.data())
def test_elementwise_drawn(family: Family, data: st.DataObject) -> None:
    data.draw(elementwise_cases(family)).compare()


# -- materialize ----------------------------------------------------------------------------


@dataclass(repr=False)
class Broadcast:
    """One ``plan(data, target).materialize(x, out=)`` call (``out="inside"``: ``x`` is a view of ``out``)."""

    target: tuple[int, ...]
    v: np.ndarray
    layout: str = "contiguous"
    out: str = "none"  # none, fresh, noncontig, inside
    out_layout: str = "stepped"
    at: int = 0  # where x starts in out, in elements (inside)
    n_threads: tuple[int, ...] = (2,)

    def build(self) -> tuple[list[np.ndarray], np.ndarray | None]:
        if self.out == "none":
            return [place(self.v, self.layout)], None
        out = garbage(self.target, self.v.dtype)
        if self.out == "noncontig":
            return [place(self.v, self.layout)], place(out, self.out_layout)
        if self.out == "fresh":
            return [place(self.v, self.layout)], out
        x = out.reshape(-1)[self.at : self.at + self.v.size].reshape(self.v.shape)
        x[...] = self.v
        return [x], out

    def call(self, args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        return bcast.plan(self.v.shape, self.target).materialize(args[0], out=out)

    def out_modes(self) -> list[str]:
        modes = ["none", "fresh"] + (["noncontig"] if self.target else [])
        return modes + (["inside"] if 0 < self.v.size <= math.prod(self.target) else [])

    def __str__(self) -> str:
        return f"materialize({self.v.dtype}{list(self.v.shape)} {self.layout} -> {list(self.target)}; out={self.out})"

    def __repr__(self) -> str:  # what hypothesis prints of a failing draw
        return str(self)

    def compare(self) -> None:
        compare(self.build, self.call, assert_same_bits, str(self), self.n_threads)


#: (data, target) of each broadcast, in named dims
BROADCASTS = {
    "row": ("m", "n m"),
    "column": ("n 1", "n m"),
    "channel": ("c 1 1", "b c h w"),
    "scalar": ("", "n m"),
    "inner": ("n m 1", "n m k"),
    "middle": ("n 1 k", "n m k"),
    "leading": ("1 m", "n m"),
    "outer_dims": ("1 m 1", "n m k"),
    "few_rows": ("k 1", "k n"),  # backward: too few sums to share, so each thread sums a stretch of each
    "same": ("n m", "n m"),
    "zero_rows": ("m", "0 m"),
    "zero_kept": ("0 1", "0 m"),
    "zero_d": ("", ""),
}
BIG_BROADCASTS = ("row", "column", "channel", "scalar", "inner", "middle", "outer_dims", "few_rows")


def broadcast_shapes(name: str, dtype: str, tier: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    texts = BROADCASTS[name]
    dims = dict(SMALL_DIMS)
    if tier != "small":
        dims = dict(BIG_DIMS)
        unit = math.prod(shapes_of(texts, dims)[1])
        dims["n"] = dims["b"] = -(-tier_elements([dtype], tier) // unit) if unit else 1
    data, target = shapes_of(texts, dims)
    return data, target


@functools.cache
def broadcast_tiers() -> list[tuple[str, str]]:
    """(broadcast, tier): every broadcast small, the non-empty ones medium, some big."""
    sized = [b for b in BROADCASTS if not b.startswith("zero")]
    return [(b, "small") for b in BROADCASTS] + [(b, "medium") for b in sized] + [(b, "big") for b in BIG_BROADCASTS]


@functools.cache
def materialize_out_modes(dtype: str, name: str, tier: str) -> list[str]:
    data, target = broadcast_shapes(name, dtype, tier)
    modes = ["none", "fresh"] + (["noncontig"] if target else [])
    return modes + (["inside"] if 0 < math.prod(data) <= math.prod(target) else [])


SUM_KINDS = {"float": ("sum_exact", "sum_any", "sum_special"), "other": ("any",)}


def sum_kinds(dtype: str) -> tuple[str, ...]:
    return SUM_KINDS["float" if dtype in FLOATS else "other"]


def broadcast_fits(row: Mapping[str, Any]) -> bool:
    """A row of the materialize or backward table: a broadcast of that size, an ``out=`` it takes,
    values of a kind the dtype has."""
    if "name" in row and "tier" in row and (row["name"], row["tier"]) not in broadcast_tiers():
        return False
    if "kind" in row and "dtype" in row and row["kind"] not in sum_kinds(row["dtype"]):
        return False
    if "out" in row and {"dtype", "name", "tier"} <= row.keys():
        # the dtype only sets the sizes: every dtype has the same out= modes (bfloat16 as float16)
        dtype = "float16" if row["dtype"] == "bfloat16" else row["dtype"]
        if row["out"] not in materialize_out_modes(dtype, row["name"], row["tier"]):
            return False
    return fits(row)


MATERIALIZE_DESIGN = Design(
    {
        "dtype": DTYPES,
        "name": tuple(BROADCASTS),
        "tier": tuple(TIERS),
        "out": ("none", "fresh", "noncontig", "inside"),
        "threads": THREADS,
    },
    broadcast_fits,
)


@NATIVE
@pytest.mark.parametrize(
    ("dtype", "name", "tier", "out", "threads"),
    MATERIALIZE_DESIGN.params(row_id("dtype", "name", "tier", "out", "threads")),
)
def test_materialize(dtype: str, name: str, tier: str, out: str, threads: int) -> None:
    """Each ``out=``: none, fresh, non-contiguous, and one holding the data itself (at its end)."""
    data, target = broadcast_shapes(name, dtype, tier)
    case = Broadcast(target, pooled(dtype, "any", data, 0), n_threads=(threads,))
    assert out in case.out_modes(), case
    replace(case, out=out, at=math.prod(target) - case.v.size).compare()


@st.composite
def broadcast_cases(draw: st.DrawFn) -> Broadcast:
    dtype = draw(st.sampled_from(available(DTYPES)))
    target, big = draw(sizes([dtype]))
    data = draw(operand_shape(target))
    v = draw(values(dtype, "any", data, big))
    case = Broadcast(target, v, draw(st.sampled_from(layouts_for(data, v.dtype))))
    case.out = draw(st.sampled_from(case.out_modes()))
    case.out_layout = draw(st.sampled_from(layouts_for(target, v.dtype, writable=True)[1:] or ["-"]))
    case.at = draw(st.integers(0, max(0, math.prod(target) - v.size)))
    case.n_threads = draw(drawn_threads())
    return case


@NATIVE
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_materialize_drawn(data: st.DataObject) -> None:
    data.draw(broadcast_cases()).compare()


# -- backward -------------------------------------------------------------------------------


@dataclass(repr=False)
class Backward:
    """One ``plan(data, target).backward(dy)`` call."""

    data: tuple[int, ...]
    dy: np.ndarray
    layout: str = "contiguous"
    kind: str = "any"
    n_threads: tuple[int, ...] = (2,)

    @functools.cached_property
    def oracle(self) -> SumOracle:
        axes = tuple(bcast.plan(self.data, self.dy.shape).broadcast_axes or ())
        dy = place(self.dy, self.layout)  # zero_stride changes the values: judge by those summed
        return SumOracle(dy, axes, self.data, exact_data=self.kind == "sum_exact")

    def build(self) -> tuple[list[np.ndarray], np.ndarray | None]:
        return [place(self.dy, self.layout)], None

    def call(self, args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        return bcast.plan(self.data, self.dy.shape).backward(args[0])

    def check(self, got: np.ndarray, want: np.ndarray, ctx: str) -> None:
        if not is_float(self.dy.dtype):
            assert_same_bits(got, want, ctx)
            return
        self.oracle(got, want, ctx)

    def __str__(self) -> str:
        return f"backward({self.kind} {self.dy.dtype}{list(self.dy.shape)} {self.layout} -> {list(self.data)})"

    def __repr__(self) -> str:  # what hypothesis prints of a failing draw
        return str(self)

    def compare(self) -> None:
        compare(self.build, self.call, self.check, str(self), self.n_threads)


BACKWARD_DESIGN = Design(
    {
        "dtype": DTYPES,
        "kind": ("sum_exact", "sum_any", "sum_special", "any"),
        "name": tuple(BROADCASTS),
        "tier": tuple(TIERS),
        "threads": THREADS,
    },
    broadcast_fits,
)


@NATIVE
@pytest.mark.parametrize(
    ("dtype", "kind", "name", "tier", "threads"),
    BACKWARD_DESIGN.params(row_id("dtype", "kind", "name", "tier", "threads")),
)
def test_backward(dtype: str, kind: str, name: str, tier: str, threads: int) -> None:
    data, target = broadcast_shapes(name, dtype, tier)
    Backward(data, pooled(dtype, kind, target, 0), kind=kind, n_threads=(threads,)).compare()


@st.composite
def backward_cases(draw: st.DrawFn) -> Backward:
    dtype = draw(st.sampled_from(available(DTYPES)))
    kind = draw(st.sampled_from(sum_kinds(dtype)))
    target, big = draw(sizes([dtype]))
    dy = draw(values(dtype, kind, target, big))
    data = draw(operand_shape(target))
    layout = draw(st.sampled_from(layouts_for(target, dy.dtype)))
    return Backward(data, dy, layout, kind, draw(drawn_threads()))


@NATIVE
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_backward_drawn(data: st.DataObject) -> None:
    data.draw(backward_cases()).compare()


# -- the thresholds as shipped; non-temporal stores ---------------------------------------------

#: outputs past the shipped thread threshold (8 MiB): (family, dtype, pattern)
HUGE = [
    pytest.param(name, dtype, pattern, id=f"{name}-{dtype}-{pattern}", marks=bf16_mark(dtype))
    for name, dtype, pattern in (
        ("add", "float32", "row"),
        ("mul", "bfloat16", "column"),
        ("div", "int32", "scalar"),
        ("where", "float32", "row"),
    )
]
HUGE_BYTES = 17 << 19  # 8.5 MiB


@NATIVE
@pytest.mark.parametrize(("name", "dtype", "pattern"), HUGE)
def test_default_thresholds(monkeypatch: pytest.MonkeyPatch, name: str, dtype: str, pattern: str) -> None:
    """A few outputs past ``compiled.THREAD_BYTES`` as shipped: the compiled loops' threads with their own cuts."""
    if SHIPPED_THREAD_BYTES is not None:
        monkeypatch.setattr(compiled, "THREAD_BYTES", SHIPPED_THREAD_BYTES)
    family = next(f for f in FAMILIES if f.name == name)
    arity = 3 if name == "where" else 2
    shapes = pattern_shapes(pattern, arity, -(-HUGE_BYTES // dtype_of(dtype).itemsize))
    vals = [
        np.resize(pool(family.operand_dtype(i, dtype), family.kind(i)), s or (1,)).reshape(s)
        for i, s in enumerate(shapes)
    ]
    Case(family, dtype, vals, ["contiguous"] * arity, n_threads=(2, 3)).compare()
    data, target = broadcast_shapes("row", dtype, "medium")
    target = (-(-HUGE_BYTES // (dtype_of(dtype).itemsize * target[-1])), target[-1])
    Broadcast(target, pooled(dtype, "any", data, 0), n_threads=(2, 3)).compare()


STREAM_DESIGN = Design(
    {"family": FAMILIES, "dtype": DTYPES, "pattern": ("column", "channel"), "out": ("none", "noncontig")},
    fits,
)


@NATIVE
@pytest.mark.skipif(not hasattr(compiled, "STREAM_BYTES"), reason="the compiled loops have no non-temporal stores")
@pytest.mark.parametrize(
    ("family", "dtype", "pattern", "out"), STREAM_DESIGN.params(row_id("family", "dtype", "pattern", "out"))
)
def test_streaming_stores(monkeypatch: pytest.MonkeyPatch, family: Family, dtype: str, pattern: str, out: str) -> None:
    """Non-temporal stores (outputs past twice the last-level cache, as shipped) on every output, strided ones
    too: a medium column pattern, a big channel one."""
    monkeypatch.setattr(compiled, "STREAM_BYTES", 0)
    tier = "medium" if pattern == "column" else "big"
    replace(table_case(family, dtype, pattern, tier), out=out).compare()
    if family.name == "add" and out == "none":  # the broadcast copies' stores
        data, target = broadcast_shapes(pattern, dtype, tier)
        Broadcast(target, pooled(dtype, "any", data, 0), n_threads=tier_threads(tier)).compare()


# -- mixed dtypes, errors -------------------------------------------------------------------

MIXED_POW = [("float32", "int32"), ("float64", "int64"), ("float32", "float64"), ("int32", "int64"), ("int64", "int32")]


@NATIVE
@pytest.mark.parametrize("tier", list(TIERS))
@pytest.mark.parametrize(("base", "exponent"), MIXED_POW)
def test_pow_of_mixed_types(base: str, exponent: str, tier: str) -> None:
    """Pow's exponent has a type of its own; the result has the base's."""
    family = Family("pow", ops.pow, "pow", ("pow_base", "pow_exp"), rule="pow")
    shapes = pattern_shapes("row", 2, tier_elements([base, exponent], tier))
    vals = [pooled(base, "pow_base", shapes[0], 0), pooled(exponent, "pow_exp", shapes[1], OFFSET)]
    Case(family, base, vals, ["contiguous", "contiguous"], n_threads=tier_threads(tier)).compare()


#: exponents that one whole run of the base shares: none or one multiply, a few squarings, and
#: exponents at and past the type's bits, where every base but 0 and +-1 wraps (to 0 when even)
ONE_EXPONENTS = (0, 1, 2, 3, 7, 31, 32, 63, 64, 2**31 - 1)


@NATIVE
@pytest.mark.parametrize("layout", ["contiguous", "stepped", "reversed"])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_of_runs_with_one_exponent(dtype: str, layout: str) -> None:
    """A run whose exponent is repeated (the scalar, column and channel patterns) takes the squarings
    that exponent needs: the NumPy path's wrapped results for every base, each exponent a scalar and
    each a row's; negative exponents among the rows take ONNX's truncated powers as before."""
    pow_family = next(f for f in FAMILIES if f.name == "pow")
    shapes = pattern_shapes("column", 2, tier_elements([dtype], "medium"))
    base = np.array(pooled(dtype, "pow_base_nonzero", shapes[0], 0))
    base.reshape(-1)[::7] = np.iinfo(dtype).max  # wide bases too, so that the powers wrap
    base.reshape(-1)[3::7] = np.iinfo(dtype).min + 1
    per_row = np.resize(np.array([*ONE_EXPONENTS, -1, -2], dtype), shapes[1])
    Case(pow_family, dtype, [base, per_row], [layout, "contiguous"], n_threads=(1, 2)).compare()
    for e in ONE_EXPONENTS:
        Case(pow_family, dtype, [base, np.array(e, dtype)], [layout, "contiguous"], n_threads=(2,)).compare()


def _zero_divisor(op: str, dtype: str, zero: str, tier: str) -> tuple[np.ndarray, np.ndarray]:
    shapes = pattern_shapes("row" if zero == "broadcast" else "same", 2, tier_elements([dtype], tier))
    base_kind, exp_kind = ("pow_base", "pow_exp_negative") if op == "pow" else ("any", "divisor")
    a = np.array(pooled(dtype, base_kind, shapes[0], 0))
    b = np.array(pooled(dtype, exp_kind, shapes[1], OFFSET))
    at = -1 if zero == "last" else 0
    if op == "pow":  # 0 to a negative power: a zero base where the exponent is -1
        a.reshape(-1)[at], b.reshape(-1)[at] = 0, -1
    else:
        b.reshape(-1)[at] = 0
    return a, b


ZERO_OPS = {"div": ops.div, "mod": ops.mod, "fmod": _fmod, "pow": ops.pow}


ZERO_DESIGN = Design(
    {
        "op": tuple(ZERO_OPS),
        "dtype": INTS,
        "zero": ("first", "last", "broadcast"),
        "tier": tuple(TIERS),
        "threads": THREADS,
    },
    lambda row: True,
)


@NATIVE
@pytest.mark.parametrize(
    ("op", "dtype", "zero", "tier", "threads"), ZERO_DESIGN.params(row_id("op", "dtype", "zero", "tier", "threads"))
)
def test_integer_division_by_zero(op: str, dtype: str, zero: str, tier: str, threads: int) -> None:
    """The same DivisionByZeroError, word for word."""
    a, b = _zero_divisor(op, dtype, zero, tier)
    errors = [raised(on, threads, lambda: ZERO_OPS[op](a, b)) for on in (False, True)]
    assert [type(e) for e in errors] == [DivisionByZeroError] * 2, errors
    assert str(errors[1]) == str(errors[0])


@NATIVE
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(ZERO_OPS))
def test_division_by_zero_leaves_out_alike(op: str, dtype: str) -> None:
    """The NumPy engine checks the divisors before it writes: ``out`` is as it was on both paths.

    (A stricter demand than the message's: drop it if the compiled kernels are allowed to
    find the zero mid-loop, having written part of ``out``.)
    """
    a, b = _zero_divisor(op, dtype, "last", "big")
    outs = [garbage(np.broadcast_shapes(a.shape, b.shape), a.dtype) for _ in range(2)]
    for on, o in zip((False, True), outs, strict=True):
        raised(on, 2, lambda o=o: ZERO_OPS[op](a, b, out=o))
    assert_same_bits(outs[1], outs[0], f"{op} {dtype}: out after the error")
    assert_same_bits(outs[0], garbage(outs[0].shape, outs[0].dtype), f"{op} {dtype}: out after the error")


INT_MIN_DESIGN = Design({"op": ("div", "mod", "fmod"), "dtype": INTS, "tier": tuple(TIERS), "threads": THREADS}, fits)


@NATIVE
@pytest.mark.parametrize(
    ("op", "dtype", "tier", "threads"), INT_MIN_DESIGN.params(row_id("op", "dtype", "tier", "threads"))
)
def test_int_min_by_minus_one(op: str, dtype: str, tier: str, threads: int) -> None:
    """INT_MIN / -1 overflows: whatever it gives, both paths give the same (also in remainders)."""
    family = next(f for f in FAMILIES if f.name == op)
    shapes = pattern_shapes("column", 2, tier_elements([dtype], tier))
    a = np.array(pooled(dtype, "any", shapes[0], 0))
    a[::2] = np.iinfo(dtype).min
    b = np.where(np.arange(shapes[1][0]) % 3 == 0, 1, -1).astype(dtype).reshape(shapes[1])
    Case(family, dtype, [a, b], ["contiguous", "contiguous"], n_threads=(threads,)).compare()


# -- always: the comparison rules, the switch, BCAST_PURE_PYTHON ----------------------------------------


def _fails(check: Callable[[], None]) -> str:
    with pytest.raises(AssertionError) as e:
        check()
    return str(e.value)


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=bf16_mark(d)) for d in DTYPES])
def test_assert_same_bits_sees_one_element(dtype: str) -> None:
    want = pooled(dtype, "any", (40, 50), 0).copy()
    assert_same_bits(want.copy(), want)
    got = want.copy()
    i, j = next(zip(*np.nonzero(as64(want) == as64(want)), strict=True))  # not a NaN: flipping a bit stays one
    got.view(_UINT[got.dtype.itemsize])[i, j] ^= 1  # the lowest bit of one element
    message = _fails(lambda: assert_same_bits(got, want, "ctx"))
    assert f"({i}, {j})" in message and "ctx" in message


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=bf16_mark(d)) for d in FLOATS])
def test_assert_same_bits_on_nans_and_zeros(dtype: str) -> None:
    dt = dtype_of(dtype)
    nans = specials(dt)[-4:]
    want = np.array([1.0, np.nan, 0.0]).astype(dt)
    for nan in nans:  # any NaN is the canonical one
        got = want.copy()
        got[1] = nan
        assert_same_bits(got, want)
    got = want.copy()
    got[0] = nans[0]  # a NaN where the other has a number
    assert "NaN" in _fails(lambda: assert_same_bits(got, want))
    got = want.copy()
    got[2] = -got[2]  # -0.0 is not 0.0
    assert "differ" in _fails(lambda: assert_same_bits(got, want))
    assert "shape" in _fails(lambda: assert_same_bits(want[:2], want))
    other = np.dtype(np.float64 if dtype == "float32" else np.float32)
    assert "dtype" in _fails(lambda: assert_same_bits(want.astype(np.float32).astype(other), want))
    assert_same_bits(np.array(np.nan).astype(dt), np.array(-np.nan).astype(dt))  # 0-d


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=bf16_mark(d)) for d in FLOATS])
def test_pow_rule(dtype: str) -> None:
    dt = dtype_of(dtype)
    maxulp = 2 if dt.itemsize >= 4 else 1
    want = np.array([1.0, -3.5, 1e-3, 0.0, np.inf, -np.inf, np.nan]).astype(dt)
    u = _UINT[dt.itemsize]
    near = want.copy()
    near.view(u)[:3] += u(maxulp)  # maxulp ulps away, in both directions of magnitude
    near.view(u)[3] = 0x8000 << (8 * (dt.itemsize - 2))  # -0.0 for 0.0: no ulp apart
    assert_pow_close(near, want)
    far = want.copy()
    far.view(u)[1] += u(maxulp + 1)
    assert "ulp" in _fails(lambda: assert_pow_close(far, want)).lower()
    for i, v in ((4, -np.inf), (5, np.nan), (6, 1.0)):  # an infinity's sign, a NaN's place
        wrong = want.copy()
        wrong[i] = v
        _fails(lambda wrong=wrong: assert_pow_close(wrong, want))
    assert_pow_close(np.array([3, -2], np.int32), np.array([3, -2], np.int32))
    _fails(lambda: assert_pow_close(np.array([3, -1], np.int32), np.array([3, -2], np.int32)))


def test_ulp_distance() -> None:
    one = np.array([1.0, 0.0, -0.0, 2.0], np.float64)
    assert ulp_distance(one, one).tolist() == [0, 0, 0, 0]
    assert ulp_distance(one, np.nextafter(one, np.inf)).tolist() == [1, 1, 1, 1]
    assert ulp_distance(np.array([2.0]), np.array([-2.0]))[0] > 1e18  # across the signs: far, not wrapped
    h = np.array([1.0, -1.0], np.float16)
    assert ulp_distance(h, np.nextafter(np.nextafter(h, np.float16(0)), np.float16(0))).tolist() == [2, 2]


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=bf16_mark(d)) for d in FLOATS])
def test_sum_rule(dtype: str) -> None:
    dt = dtype_of(dtype)
    dy = pooled(dtype, "sum_exact", (300, 40), 0)
    oracle = SumOracle(dy, (0,), (1, 40), exact_data=True)
    right = dy.astype(np.float32).sum(axis=0, keepdims=True).astype(dt)
    oracle(right, right, "exact")
    missing = dy[1:].astype(np.float32).sum(axis=0, keepdims=True).astype(dt)  # a term left out
    assert "not exact" in _fails(lambda: oracle(missing, right, "exact"))
    dy = pooled(dtype, "sum_any", (300, 40), 0)
    loose = SumOracle(dy, (0,), (1, 40))
    right = dy.astype(np.float64).sum(axis=0, keepdims=True).astype(dt)
    loose(right, right, "any")
    off = right.copy()
    off[0, 5] = off[0, 5] * 2 + 1
    assert "too far" in _fails(lambda: loose(off, right, "any"))
    nan = right.copy()
    nan[0, 7] = np.nan
    assert "NaN" in _fails(lambda: loose(nan, right, "any"))


def test_compare_runs_both_paths_and_checks_inputs_and_out() -> None:
    seen: list[bool] = []

    def build() -> tuple[list[np.ndarray], np.ndarray | None]:
        return [np.arange(4.0)], None

    def call(args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        seen.append(compiled.enabled())
        return args[0] * 2

    compare(build, call, assert_same_bits, "ok")
    assert seen == [False] + [compiled.LOADED] * len(THREADS)  # the NumPy engine once, then each thread count

    def writes(args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        args[0][1] = 7.0
        return args[0]

    assert "wrote into input 0" in _fails(lambda: compare(build, writes, assert_same_bits, "w"))

    def other_out(args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        return np.zeros(4)

    assert "did not return out" in _fails(
        lambda: compare(lambda: ([np.arange(4.0)], np.zeros(4)), other_out, assert_same_bits, "o")
    )

    def differs(args: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
        return args[0] + compiled.enabled()

    if compiled.LOADED:
        _fails(lambda: compare(build, differs, assert_same_bits, "d"))


@pytest.mark.parametrize("dtype", [pytest.param(d, marks=bf16_mark(d)) for d in DTYPES])
def test_pools_hold_the_edge_values(dtype: str) -> None:
    v = pool(dtype, "any")
    assert not v.flags.writeable and v.size == POOL
    if dtype == "bool":
        assert 0.4 < v.mean() < 0.6
        return
    if dtype in INTS:
        assert np.isin(int_extremes(v.dtype), v).all()
        assert (pool(dtype, "divisor") != 0).all()
        return
    x = v.astype(np.float64)
    assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
    assert (np.signbit(x) & (x == 0)).any() and (~np.signbit(x) & (x == 0)).any()
    sub = finfo(v.dtype).smallest_normal
    assert ((x != 0) & (np.abs(x) < float(sub))).any()  # subnormals
    assert (x == -float(finfo(v.dtype).max)).any()


def _table_nbytes(family: Family, dtype: str, pattern: str, tier: str) -> tuple[int, list[int]]:
    """The bytes of a table case's output, and of each of its operands of the output's shape."""
    arity = min(max(2, family.arity[0]), family.arity[1])
    names = [family.operand_dtype(i, dtype) for i in range(arity)]
    shapes = pattern_shapes(pattern, arity, tier_elements([*names, family.out_dtype(dtype)], tier))
    out = np.broadcast_shapes(*shapes)
    full = [math.prod(s) * dtype_of(n).itemsize for n, s in zip(names, shapes, strict=True) if s == out]
    return math.prod(out) * dtype_of(family.out_dtype(dtype)).itemsize, full


def test_sizes_reach_each_path() -> None:
    """Medium outputs reach the compiled loops (on one thread), big ones both engines' threads."""
    assert compiled.MIN_BYTES <= MEDIUM_BYTES and 8 * MEDIUM_BYTES < kernels.SERIAL_BYTES
    assert BIG_BYTES > kernels.SERIAL_BYTES
    for family in FAMILIES:
        for dtype in available(family.dtypes):
            for pattern in BIG_PATTERNS:
                out, full = _table_nbytes(family, dtype, pattern, "big")
                assert min([out, *full]) >= BIG_BYTES, (family.name, dtype, pattern)
            for pattern in SIZED_PATTERNS:
                out, full = _table_nbytes(family, dtype, pattern, "medium")
                assert out >= MEDIUM_BYTES and max([out, *full]) < kernels.SERIAL_BYTES, (family.name, dtype, pattern)
    for dtype in available(DTYPES):
        for name, tier in broadcast_tiers():
            _, target = broadcast_shapes(name, dtype, tier)
            nbytes = math.prod(target) * dtype_of(dtype).itemsize
            assert nbytes >= TIERS[tier] and (tier == "big" or nbytes < kernels.SERIAL_BYTES), (dtype, name, tier)


DESIGNS = {
    "pattern": PATTERN_DESIGN,
    "out": OUT_DESIGN,
    "layout": LAYOUT_DESIGN,
    "materialize": MATERIALIZE_DESIGN,
    "backward": BACKWARD_DESIGN,
    "streaming": STREAM_DESIGN,
    "zero": ZERO_DESIGN,
    "int_min": INT_MIN_DESIGN,
}


@pytest.mark.parametrize("name", list(DESIGNS))
def test_designs_cover_every_pair(name: str) -> None:
    """Each design is part of its table, and holds every pair of factor values that the table holds."""
    d = DESIGNS[name]
    assert all(d.rule(row) for row in d.design)
    assert covering.uncovered(d.factors, d.rule, d.design) == []
    assert len(d.design) < len(d.rows)
    params = d.params(lambda row: str(list(row.values())))
    assert len(params) == len(d.rows)
    assert sum(1 for p in params if covering.FULL not in p.marks) == len(d.design)


def test_a_design_missing_a_row_misses_a_pair() -> None:
    """The check above can fail: each row of a greedy design was added for a pair that no row
    before it held, so a design without its last row misses that pair; and a cross product
    with one row left out misses the pairs only that row held."""
    for d in DESIGNS.values():
        assert covering.uncovered(d.factors, d.rule, d.design[:-1])
    factors = {"a": (0, 1), "b": (0, 1), "c": (0, 1)}
    every = lambda row: True  # noqa: E731
    rows = [dict(zip("abc", r, strict=True)) for r in ((0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0))]
    assert covering.uncovered(factors, every, rows) == []  # the four rows hold the twelve pairs
    assert covering.uncovered(factors, every, rows[:3]) == [{"a": 1, "b": 1}, {"a": 1, "c": 0}, {"b": 1, "c": 0}]
    design = covering.pairwise(factors)
    assert len(design) == 4 and covering.uncovered(factors, every, design) == []


def test_table_cases_cover_every_dtype_of_each_operator() -> None:
    covered = {(f.spec, d) for f in FAMILIES for d in f.dtypes}
    for name in ("add", "div", "pow", "greater", "and_", "bitwise_or", "max", "sum", "where"):
        types = BY_NAME[name].types_of(BY_NAME[name].output_like)
        assert {d for (s, d) in covered if s == name} == {d for d in DTYPES if ONNX[d] in types}
    assert {d for (s, d) in covered if s == "where"} == set(DTYPES)
    assert {d for (s, d) in covered if s == "equal"} == set(DTYPES)


def test_using_switches_and_restores() -> None:
    before = compiled.enabled()
    with compiled.using(False):
        assert not compiled.enabled() and compiled.module() is None
        assert compiled.status().startswith("kernels: NumPy engine")
        with compiled.using(True):
            assert compiled.enabled() is compiled.LOADED
        assert not compiled.enabled()
    assert compiled.enabled() is before
    with pytest.raises(RuntimeError), compiled.using(not before):
        raise RuntimeError
    assert compiled.enabled() is before
    with pytest.raises(TypeError):
        compiled.set_enabled(1)  # type: ignore[arg-type]


SRC = Path(bcast.__file__).resolve().parents[1]
CHILD = """
import numpy as np
from bcast.engines.numpy import compiled, threads
import bcast.ops as ops
threads.set_num_threads(2)
a = np.arange(300_000, dtype=np.float32).reshape(600, 500)
b = np.linspace(-1, 1, 500, dtype=np.float32)
r = ops.add(a, b)
assert r.dtype == np.float32 and np.array_equal(r.view(np.uint32), (a + b).view(np.uint32)), "add differs"
print(compiled.LOADED, compiled.enabled())
print(compiled.status())
"""


def _child(pure_python: str) -> list[str]:
    env = {**os.environ, "BCAST_PURE_PYTHON": pure_python}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


def test_pure_python_environment_variable() -> None:
    lines = _child("1")
    assert lines[0] == "False False"
    assert "BCAST_PURE_PYTHON" in lines[1] and lines[1].startswith("kernels: NumPy engine"), lines[1]
    lines = _child("0")  # "0" does not ask for the NumPy engine
    assert "BCAST_PURE_PYTHON" not in lines[1]
    if compiled.LOADED:
        assert lines[0] == "True True" and lines[1].startswith("kernels: compiled"), lines
