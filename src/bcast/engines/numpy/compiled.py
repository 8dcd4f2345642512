"""The compiled kernels (``bcast.engines.numpy._kernels``, C, built at install time), when there are any.

``pip install`` builds a small C extension when the machine has a C compiler: loops for
each broadcast pattern (both operands contiguous, one of them a scalar run, any strides)
of the operator table's kernels listed in :data:`OPS`, for the dtypes in :data:`DTYPES`,
compiled three times (x86-64 baseline, AVX2 and AVX-512) and chosen at import by what the
CPU supports. They write straight into the output with the GIL released, on the
extension's own team of threads (pieces claimed from one atomic counter; workers spin a
millisecond after an op, then sleep): :func:`~bcast.engines.numpy.threads.num_threads` of them, at
most one per core.

Without a compiler, or with ``BCAST_PURE_PYTHON=1`` in the environment, bcast runs on
its NumPy engine, with the same results: :func:`status` says which, and the benchmark
prints it once at its start.

>>> from bcast.engines.numpy import compiled
>>> isinstance(compiled.status(), str), isinstance(compiled.enabled(), bool)
(True, True)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from .layout import coalesce, summed_runs
from .threads import MAX_THREADS, machine_threads, num_threads, run_units

__all__ = [
    "DTYPES",
    "FOLD_BYTES",
    "ISA",
    "LOADED",
    "MIN_BYTES",
    "OPS",
    "REASON",
    "STREAM_BYTES",
    "THREAD_BYTES",
    "Prepared",
    "Quiet",
    "binary",
    "can_copy",
    "copy",
    "enabled",
    "fold",
    "module",
    "prepare",
    "reduce_sum",
    "run",
    "set_enabled",
    "status",
    "using",
    "where",
]


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("BCAST_PURE_PYTHON", "").strip() not in ("", "0"):
        return None, "BCAST_PURE_PYTHON is set"
    try:
        return importlib.import_module(f"{__package__}._kernels"), ""
    except ImportError as e:
        return None, f"the compiled kernels are not built ({e}); reinstall with a C compiler: pip install ."


_module, REASON = _load()
#: whether the compiled kernels were loaded (``False``: built without a compiler, or ``BCAST_PURE_PYTHON=1``)
LOADED = _module is not None
#: the instruction set the kernels were chosen for at import ("avx512", "avx2", "baseline"), or ""
ISA: str = str(_module.isa()) if _module is not None else ""
_on = [LOADED]


def module() -> Any:
    """The loaded extension module, or ``None`` when the NumPy engine computes (see :func:`enabled`)."""
    return _module if _on[0] else None


def enabled() -> bool:
    """Whether the compiled kernels compute the ops they have (else the NumPy engine does)."""
    return _on[0]


def set_enabled(flag: bool | None) -> None:
    """Use the compiled kernels (``True``, where built), the NumPy engine (``False``), or the default (``None``).

    For tests and benchmarks that compare the two paths; results are the same either way.
    """
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"set_enabled takes True, False or None, got {type(flag).__name__}")
    _on[0] = LOADED if flag is None else (flag and LOADED)


@contextmanager
def using(flag: bool) -> Iterator[None]:
    """``set_enabled(flag)`` for the body of a ``with`` block, then back to what it was."""
    before = _on[0]
    set_enabled(flag)
    try:
        yield
    finally:
        _on[0] = before


def status() -> str:
    """One line: which engine computes, and why.

    >>> status().startswith(("kernels: compiled", "kernels: NumPy engine"))
    True
    """
    if _on[0]:
        return f"kernels: compiled C ({ISA}), threaded"
    why = REASON if not LOADED else "disabled by set_enabled(False)"
    return f"kernels: NumPy engine ({why})"


# -- what the loops cover -------------------------------------------------------------------

#: the dtypes with loops, in the order of the C enum (csrc/kernels.h)
DTYPES = ("bool", "int32", "int64", "float32", "float64", "float16", "bfloat16")
#: the operator table's kernel names (``Spec.kernel``) with loops, in the order of the C enum
OPS = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "pow",
    "maximum",
    "minimum",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
)
_OP = {name: i for i, name in enumerate(OPS)}
_BOOL_OUT = frozenset(_OP[n] for n in OPS[7:15])
#: loops that compute more than they move: worth threads on smaller outputs (see :data:`THREAD_BYTES`)
_HEAVY = frozenset({_OP["divide"], _OP["pow"]})
_FLOATS = frozenset({"float32", "float64", "float16", "bfloat16"})
_INTS = frozenset({"int32", "int64"})
_NUMERIC = _FLOATS | _INTS


def _covers(op: str, dtype: str) -> bool:
    """Whether csrc/kernels.c has a loop for ``op`` on ``dtype`` (its SET_FLOAT / SET_INT tables)."""
    if dtype == "float16" and not getattr(_module, "HAS_F16", 0):
        return False
    if op in ("greater", "greater_equal", "less", "less_equal", "equal"):
        return True
    if op.startswith("logical_"):
        return dtype == "bool"
    if op.startswith("bitwise_"):
        return dtype in _INTS
    if op == "pow":
        # float32/float64: NumPy's own vectorised pow is faster than libm's, and is the reference
        return dtype in ("float16", "bfloat16") or dtype in _INTS
    return dtype in _NUMERIC


#: (op code, dtype code) pairs that have a loop
_COVERED = frozenset((_OP[o], d) for o in OPS for d, name in enumerate(DTYPES) if _covers(o, name))

#: Outputs smaller than this are left to NumPy's ufuncs: lining operands up costs a few microseconds,
#: which only pays once the loop itself takes longer (measured: see docs/benchmarks.md)
MIN_BYTES = 1 << 16


def _stream_bytes() -> int:
    """Outputs at least this large are written with non-temporal stores: twice the last-level cache.

    Smaller ones are left in the cache, where the next op will read them.
    """
    try:
        l3 = int(os.sysconf("SC_LEVEL3_CACHE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        l3 = 0
    return 2 * l3 if l3 > 0 else 64 << 20


#: see :func:`_stream_bytes`; ``BCAST_STREAM_BYTES`` overrides it
STREAM_BYTES = int(os.environ.get("BCAST_STREAM_BYTES", "0") or 0) or _stream_bytes()


_CODES: dict[np.dtype[Any], int | None] = {}


def _dtype_code(dtype: np.dtype[Any]) -> int | None:
    """The C enum of ``dtype``, or ``None`` where no loop takes it (cached: ``dtype.name`` costs microseconds)."""
    code = _CODES.get(dtype, -1)
    if code != -1:
        return code
    name = dtype.name
    known = name in DTYPES and dtype.isnative
    if name == "bfloat16" and not getattr(dtype.type, "__module__", "").startswith("ml_dtypes"):
        known = False
    code = DTYPES.index(name) if known else None
    if len(_CODES) < 1024:
        _CODES[dtype] = code
    return code


_BF16 = DTYPES.index("bfloat16")
_WIDENED = frozenset({DTYPES.index("float16"), _BF16})  # computed in float32, converted each way
#: unsigned ints by item size: where and copy move bits, and every dtype's bits export as these
_UINT = {n: np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def _raw(a: np.ndarray, code: int) -> np.ndarray:
    """``a`` as a buffer the C API takes: bfloat16's does not export, its bits as uint16 do."""
    return a.view(np.uint16) if code == _BF16 else a


@lru_cache(maxsize=4096)
def _layout(
    shape: tuple[int, ...], arrays: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The coalesced shape and each array's byte strides on it (0 where it repeats), for arrays
    of (shape, strides) that broadcast to ``shape`` by NumPy's rule (the first is the output)."""
    nd = len(shape)
    full = []
    for s, st in arrays:
        lead = nd - len(s)
        full.append(tuple(0 if k < lead or s[k - lead] == 1 else st[k - lead] for k in range(nd)))
    cshape, cstrides = coalesce(shape, full)
    if not cshape:  # one element
        return (1,), tuple((0,) for _ in arrays)
    return cshape, tuple(cstrides)


#: Outputs under this many bytes are computed on the calling thread alone; larger ones by the
#: kernels' thread team (csrc/module.c: workers that spin a millisecond after each op, then sleep).
#: Loops that compute more per byte pay off sooner: a quarter of it. Measured on 2 cores: see
#: docs/benchmarks.md.
THREAD_BYTES = 1 << 20


def _team(nbytes: int, heavy: bool = False) -> int:
    """The threads the kernels' team uses for an output of ``nbytes`` (1: the calling thread alone)."""
    if nbytes < (THREAD_BYTES >> 2 if heavy else THREAD_BYTES):
        return 1
    return _threads(nbytes)


def _threads(nbytes: int) -> int:
    """Threads worth using for ``nbytes`` of output: at most one per 256 KiB, and one per core.

    ``set_num_threads`` above the cores this process may run on adds no team threads: the
    loops are bound by memory, and each thread is one more stack in the address space.
    The cores are counted at import, as :func:`num_threads`'s default is (asking the system
    costs a microsecond a call).
    """
    return max(1, min(num_threads(), _CORES, MAX_THREADS, nbytes >> 18))


_CORES = machine_threads()


def _usable(arrays: Sequence[np.ndarray]) -> bool:
    return all(a.flags.aligned for a in arrays)


def binary(kernel: str, a: np.ndarray, b: np.ndarray, dest: np.ndarray) -> int | None:
    """``dest = kernel(a, b)`` by the compiled loops; ``None`` where they do not cover the call (the
    caller computes it), else the number of integer zero divisors met (their results are 0: raise).

    ``a`` and ``b`` broadcast to ``dest.shape`` by NumPy's rule and have one dtype; ``dest`` has
    it too, or bool for comparisons and logical ops. ``dest`` may be ``a`` or ``b`` element for
    element (each output element is written after both of its inputs are read), and must not
    overlap them otherwise.
    """
    return fold(kernel, (a, b), dest)


#: the bytes of output each piece of a fold of three or more operands covers: its partial result
#: stays in the core's cache (1 MiB of L2 here) from one step to the next
FOLD_BYTES = 1 << 19


#: ``np.errstate`` arguments under which a call's floating-point errors are reported (None: as they are)
Quiet = Mapping[str, str] | None


class Prepared(NamedTuple):
    """A binary call's loop and layout (see :func:`prepare`), for arrays of its shapes, strides and dtypes."""

    op: int
    dtype: int
    #: whether the output is viewed as the operands are (bfloat16's bits), not bool
    same_out: bool
    shape: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    size: int
    nbytes: int
    heavy: bool


def prepare(kernel: str, a: np.ndarray, b: np.ndarray, dest: np.ndarray) -> Prepared | None:
    """What :func:`run` needs to compute ``dest = kernel(a, b)``; ``None`` where the loops do not cover it.

    It holds no array: it serves every later call with arrays of the same shapes, strides
    and dtypes (all aligned, see :func:`run`), whatever their memory.
    """
    op = _OP.get(kernel)
    if module() is None or op is None or dest.nbytes < MIN_BYTES or a.dtype != b.dtype:
        return None
    dt = _dtype_code(a.dtype)
    if dt is None or (op, dt) not in _COVERED:
        return None
    want = np.dtype(np.bool_) if op in _BOOL_OUT else a.dtype
    if dest.dtype != want or not _usable((a, b, dest)):
        return None
    shape, strides = _layout(dest.shape, ((dest.shape, dest.strides), (a.shape, a.strides), (b.shape, b.strides)))
    heavy = op in _HEAVY or dt in _WIDENED
    return Prepared(op, dt, want == a.dtype, shape, strides, dest.size, dest.nbytes, heavy)


def run(p: Prepared, a: np.ndarray, b: np.ndarray, dest: np.ndarray, quiet: Quiet = None) -> int | None:
    """``dest = kernel(a, b)`` as :func:`prepare` laid it out: ``None`` where the compiled loops are off
    (the caller computes), else the integer zero divisors met (see :func:`binary`).

    The arrays have the shapes, strides and dtypes ``p`` was prepared for, and are aligned.
    Floating-point errors are reported as NumPy's ufunc reports them, under ``np.errstate(**quiet)``.
    """
    mod = module()
    if mod is None:
        return None
    o = _raw(dest, p.dtype if p.same_out else 0)
    stream = int(p.nbytes >= STREAM_BYTES)
    threads = _team(p.nbytes, p.heavy)
    x, y = _raw(a, p.dtype), _raw(b, p.dtype)
    zeros, errors = mod.binary(p.op, p.dtype, o, x, y, p.shape, p.strides, 0, p.size, stream, threads)
    if errors:
        _report(OPS[p.op], errors, quiet)
    return int(zeros)


def fold(kernel: str, operands: Sequence[np.ndarray], dest: np.ndarray, quiet: Quiet = None) -> int | None:
    """``dest = kernel(...kernel(kernel(op0, op1), op2)..., opN)`` by the compiled loops (see :func:`binary`).

    Cache-blocked: each piece of the output is computed through every step before the
    next piece starts, so a partial result is read back from cache, not from memory. Only
    the last step streams its piece past the cache (for outputs of :data:`STREAM_BYTES`).
    ``None`` where the loops do not cover every step; else the integer zero divisors met.
    Floating-point errors are reported as :func:`run` reports them.
    """
    if len(operands) < 2:
        return None
    a = operands[0]
    first = prepare(kernel, a, operands[1], dest)
    if first is None or len(operands) == 2:
        return None if first is None else run(first, a, operands[1], dest, quiet)
    if not first.same_out or any(x.dtype != a.dtype for x in operands) or not _usable(operands[2:]):
        return None
    mod = module()
    dt, op = first.dtype, first.op
    here = (dest.shape, dest.strides)
    steps = [(_raw(a, dt), _raw(operands[1], dt), first.shape, first.strides)]
    for x in operands[2:]:  # dest, the partial result, is the first operand of every later step
        steps.append((_raw(dest, dt), _raw(x, dt), *_layout(dest.shape, (here, here, (x.shape, x.strides)))))
    o = _raw(dest, dt)
    stream = int(dest.nbytes >= STREAM_BYTES)
    last = len(steps) - 1
    threads = _team(dest.nbytes, first.heavy)
    size = dest.size
    zeros = errors = 0
    block = max(1, FOLD_BYTES * threads // dest.itemsize)
    for lo in range(0, size, block):  # every step on one block while it is in cache, then the next block
        hi = min(size, lo + block)
        for k, (x, y, shape, strides) in enumerate(steps):
            z, e = mod.binary(op, dt, o, x, y, shape, strides, lo, hi, stream if k == last else 0, threads)
            zeros, errors = zeros + z, errors | e
    if errors:
        _report(kernel, errors, quiet)
    return int(zeros)


#: For each op with floating-point loops, a one-element call of its NumPy ufunc that raises exactly one
#: error: divide by zero (1), overflow (2), underflow (4), invalid (8). NumPy reports them under the
#: caller's ``np.errstate`` (warn, raise, call, print, log or ignore) and words them as it would its own
#: loop's. add and subtract never underflow (a tiny exact result is representable); NumPy's comparisons
#: and max/min report no errors.
_RAISERS: dict[str, tuple[np.ufunc, dict[int, tuple[float, float]]]] = {
    "add": (np.add, {2: (1.7e308, 1.7e308), 8: (np.inf, -np.inf)}),
    "subtract": (np.subtract, {2: (1.7e308, -1.7e308), 8: (np.inf, np.inf)}),
    "multiply": (np.multiply, {2: (1e300, 1e300), 4: (1e-300, 1e-300), 8: (0.0, np.inf)}),
    "divide": (np.divide, {1: (1.0, 0.0), 2: (1e300, 1e-300), 4: (1e-300, 1e300), 8: (0.0, 0.0)}),
    "pow": (np.power, {1: (0.0, -1.0), 2: (10.0, 400.0), 4: (10.0, -400.0), 8: (-1.0, 0.5)}),
}


def _report(kernel: str, errors: int, quiet: Quiet) -> None:
    """Report the floating-point ``errors`` the loops of ``kernel`` raised as NumPy's ufunc would, in its
    order (divide by zero, overflow, underflow, invalid), under ``np.errstate(**quiet)``: the errors an
    operator's NumPy path leaves unreported are left so here too."""
    ufunc, raisers = _RAISERS[kernel]
    with np.errstate(**(quiet or {})):  # type: ignore[arg-type]
        for bit in (1, 2, 4, 8):
            if errors & bit and bit in raisers:
                x, y = raisers[bit]
                ufunc(np.array([x]), np.array([y]))


def where(cond: np.ndarray, x: np.ndarray, y: np.ndarray, dest: np.ndarray) -> bool:
    """``dest = cond ? x : y`` by the compiled loops (``False``: not covered, the caller computes).

    ``cond`` is bool; ``x``, ``y`` and ``dest`` have one dtype of 1, 2, 4 or 8 bytes.
    """
    mod = module()
    item = dest.dtype.itemsize
    if (
        mod is None
        or dest.nbytes < MIN_BYTES
        or cond.dtype != np.bool_
        or item not in (1, 2, 4, 8)
        or x.dtype != dest.dtype
        or y.dtype != dest.dtype
        or dest.dtype.hasobject
        or not _usable((cond, x, y, dest))
    ):
        return False
    arrays = (dest, cond, x, y)
    shape, strides = _layout(dest.shape, tuple((v.shape, v.strides) for v in arrays))
    o, c, rx, ry = (v.view(_UINT[v.dtype.itemsize]) for v in arrays)
    stream = int(dest.nbytes >= STREAM_BYTES)
    mod.where(o, c, rx, ry, shape, strides, 0, dest.size, stream, _team(dest.nbytes))
    return True


def can_copy(dest: np.ndarray, src: np.ndarray) -> bool:
    """Whether :func:`copy` would copy ``src`` into ``dest`` (else it declines, and the caller copies),
    as far as their dtypes, sizes and alignment say (it also declines arrays that overlap)."""
    return _copyable(dest, src) and _usable((src, dest))


def _copyable(dest: np.ndarray, src: np.ndarray) -> bool:
    return (
        enabled()
        and dest.nbytes >= MIN_BYTES
        and dest.dtype.itemsize in (1, 2, 4, 8)
        and src.dtype == dest.dtype
        and not dest.dtype.hasobject
    )


class CopyLayout(NamedTuple):
    """A broadcast copy's coalesced layout (see :func:`prepare_copy`), for arrays of its shapes, strides and dtype."""

    shape: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    size: int
    nbytes: int
    #: the unsigned dtype both arrays are passed as, or ``None`` where they export a buffer as they are
    bits: np.dtype[Any] | None


#: dtype kinds whose arrays export a buffer of their own item size (datetimes and bfloat16, kind V, do not)
_EXPORTS = "biuf"


def prepare_copy(dest: np.ndarray, src: np.ndarray) -> CopyLayout | None:
    """What :func:`run_copy` needs for ``dest[...] = src``; ``None`` where :func:`copy` would decline.

    ``src`` may be a broadcast view of some data (``broadcast_to(data.reshape(...))``): the
    layout serves ``data`` itself, and every later call with arrays of the same shapes,
    strides and dtype, whatever their memory (all aligned, see :func:`run_copy`).
    """
    if not _copyable(dest, src):  # alignment is the loop's to check, call by call
        return None
    item = dest.dtype.itemsize
    shape, strides = _layout(dest.shape, ((dest.shape, dest.strides), (src.shape, src.strides)))
    plain = dest.dtype.kind in _EXPORTS and dest.dtype.isnative
    return CopyLayout(shape, strides, dest.size, dest.nbytes, None if plain else _UINT[item])


def run_copy(p: CopyLayout, dest: np.ndarray, data: np.ndarray) -> bool:
    """``dest[...] = data`` broadcast as :func:`prepare_copy` laid it out, for arrays of the layout's
    shapes, strides and dtype; ``False``, with nothing written, where the compiled loops are off or
    decline: the arrays overlap (by their extents, as ``np.may_share_memory``) or one is not aligned.
    The caller copies then.
    """
    mod = module()
    if mod is None:
        return False
    if p.bits is not None:
        dest, data = dest.view(p.bits), data.view(p.bits)
    stream = int(p.nbytes >= STREAM_BYTES)
    done: bool = mod.copy(dest, data, p.shape, p.strides, 0, p.size, stream, _team(p.nbytes))
    return done


def copy(dest: np.ndarray, src: np.ndarray) -> bool:
    """``dest[...] = src`` (``src`` broadcast to ``dest.shape``, one dtype) by the compiled loops.

    ``False``, with nothing written, where they do not cover it or ``dest`` overlaps ``src`` (the
    caller copies).
    """
    p = prepare_copy(dest, src)
    return p is not None and run_copy(p, dest, src)


#: the accumulator the sum loops use for each dtype (bcast.engines.common.accumulator's choice)
_SUM_ACC = {"float32": "float32", "float64": "float64", "float16": "float32", "bfloat16": "float32"}
_SUM_ACC |= {"int32": "int32", "int64": "int64"}


def reduce_sum(g: np.ndarray, axes: tuple[int, ...], acc: np.dtype[Any]) -> np.ndarray | None:
    """``np.add.reduce(g, axis=axes, dtype=acc, keepdims=True)`` by the compiled loops, or ``None``.

    Covered: the sums that coalesce to ``(P, K, R)`` with ``P`` and ``R`` summed (a row, a
    column, a channel or a whole array), in the accumulator :func:`~bcast.engines.common.accumulator`
    picks. Float sums run in 16 lanes per row (float32 rows in float64), so they are at least
    as accurate as NumPy's pairwise sums, but not bit-identical to them.
    """
    mod = module()
    dt = _dtype_code(g.dtype)
    if mod is None or dt is None or g.nbytes < MIN_BYTES or not axes or not g.flags.aligned:
        return None
    if _SUM_ACC.get(DTYPES[dt]) != acc.name or not _covers("add", DTYPES[dt]):
        return None
    pkr = _pkr(g.shape, g.strides, frozenset(axes))
    if pkr is None:
        return None
    shape3, strides3 = pkr
    view = np.lib.stride_tricks.as_strided(_raw(g, dt), shape3, strides3, writeable=False)
    p, k, r = shape3
    threads = _threads(g.nbytes)
    shared = threads > 1 and g.nbytes >= (1 << 20)
    want = SUM_PIECES * threads
    if shared and (p >= 2 * threads or (k < 2 * threads and r >= 2 * threads * _SUM_STRETCH)):
        # a partial sum per piece: of a stretch of the summed outer runs, or (a whole array, a few
        # channels: too few of either to share) of a stretch of every inner run
        if p >= 2 * threads:
            n = min(p, want if want * k * acc.itemsize <= g.nbytes >> 4 else threads)
            cuts = [p * i // n for i in range(n + 1)]
            parts = np.empty((n, k), dtype=acc)
            run_units(lambda i: mod.sum(dt, parts[i], view, cuts[i], cuts[i + 1], 0), range(n))
        else:
            n = min(want, r // _SUM_STRETCH)
            cuts = [r * i // n // _SUM_STRETCH * _SUM_STRETCH for i in range(n)] + [r]
            parts = np.empty((n, k), dtype=acc)
            run_units(lambda i: mod.sum(dt, parts[i], view[:, :, cuts[i] : cuts[i + 1]], 0, p, 0), range(n))
        total: np.ndarray = np.add.reduce(parts, axis=0)
    else:
        total = np.empty(k, dtype=acc)
        pieces = min(k, want) if shared and k >= 2 * threads else 1
        cuts = [k * i // pieces for i in range(pieces + 1)]
        run_units(
            lambda i: mod.sum(dt, total[cuts[i] : cuts[i + 1]], view[:, cuts[i] : cuts[i + 1]], 0, p, 0),
            range(pieces),
        )
    keep = tuple(1 if i in axes else n for i, n in enumerate(g.shape))
    return total.reshape(keep)


#: pieces per thread a sum is cut into, taken by the threads as they come free: on a shared machine
#: one thread often runs slower, and with one piece each the other waits (measured: a 64 MB float16
#: column sum on 2 threads, 1.99 ms in 2 pieces, 1.76 ms in 8; float32 128 MB 3.95 and 3.57 ms)
SUM_PIECES = 4

#: a thread's stretch of an inner summed run starts at a multiple of this many elements (whole vectors)
_SUM_STRETCH = 64


def _pkr(
    shape: tuple[int, ...], strides: tuple[int, ...], axes: frozenset[int]
) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """``g`` as (P summed, K kept, R summed) axes with their byte strides, when its summed axes allow."""
    cshape, gs, summed = summed_runs(shape, strides, axes)
    text = "".join("s" if is_summed else "k" for is_summed in summed)
    if text not in ("sks", "sk", "ks", "s", "k"):
        return None
    lead = 1 if text.startswith("s") else 0
    p, ps = (cshape[0], gs[0]) if lead else (1, 0)
    k, ks = (cshape[lead], gs[lead]) if "k" in text else (1, 0)
    r, rs = (cshape[-1], gs[-1]) if text.endswith("s") and len(text) > 1 else (1, 0)
    if text == "s":  # everything summed: one row
        p, ps, r, rs = 1, 0, cshape[0], gs[0]
    return (p, k, r), (ps, ks, rs)
