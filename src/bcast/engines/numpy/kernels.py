"""Multi-threaded NumPy kernels: broadcast copies, elementwise folds and unbroadcast sums.

Broadcasting is memory-bound, so each kernel does three things: it lines the operands
up on as few axes as it can (adjacent axes with the same broadcast pattern coalesced),
cuts the output into units of about :data:`UNIT_BYTES` along its outer axes (small
enough that a unit's operands stay in the core's cache, large enough that Python's
per-unit cost is noise), and hands the units to :mod:`bcast.engines.numpy.threads`. Arrays
under :data:`SERIAL_BYTES` are done in one NumPy call on the caller's thread: below
that, starting threads costs more than it saves (measured: see ``docs/benchmarks.md``).

>>> import numpy as np
>>> from bcast.engines.numpy.kernels import coalesce
>>> coalesce((8, 256, 128, 128), [(0, 1, 0, 0)])
((8, 256, 16384), [(0, 1, 0)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from . import compiled
from .layout import coalesce, summed_runs
from .threads import MAX_THREADS, num_threads, run_units

__all__ = [
    "BLOCK_BYTES",
    "SERIAL_BYTES",
    "UNIT_BYTES",
    "blockwise",
    "coalesce",
    "elementwise",
    "fill_broadcast",
    "internal_overlap",
    "overlaps",
    "reduce_sum",
    "same_elements",
    "units",
]

#: Outputs smaller than this many bytes are computed on the calling thread alone.
SERIAL_BYTES = 1 << 20
#: The target size of one unit of work (bytes of output) handed to a thread by a broadcast copy.
UNIT_BYTES = 1 << 18
#: The same for elementwise ops: streaming reads gain nothing from cache-sized units, while
#: Python's per-unit cost does add up (measured on 128 MB float32 outputs, 2 threads:
#: 256 KiB units 10.7 ms for a row add and 8.5 ms for a scalar mul; 4 MiB units 9.7 and 5.2 ms).
BLOCK_BYTES = 1 << 22
#: An innermost broadcast run shorter than this is written once and replicated with memcpy.
SHORT_RUN = 128

Index = tuple[Any, ...]

#: The effort NumPy's exact overlap solver may spend on one pair of arrays before the pair
#: counts as overlapping (measured: about a microsecond for shifted, interleaved, transposed
#: and broadcast views of one buffer; only pairs whose address ranges intersect get here).
OVERLAP_WORK = 1 << 12
#: Outputs with irregular strides up to this many elements get the exact internal-overlap
#: check (their byte offsets sorted: 8 bytes an element); larger ones are refused.
EXACT_OVERLAP_ELEMENTS = 1 << 20


def overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` may share a byte: NumPy's bounds check, refined within :data:`OVERLAP_WORK`.

    Conservative: ``True`` when the solver gives up. Empty arrays overlap nothing.

    >>> import numpy as np
    >>> x = np.zeros(10)
    >>> overlaps(x[1:], x[:-1]), overlaps(x[::2], x[1::2]), overlaps(x[:5], x[5:])
    (True, False, False)
    """
    if not a.size or not b.size or not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=OVERLAP_WORK))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:  # pragma: no cover - needs strides beyond the budget
        return True


def same_elements(dest: np.ndarray, src: np.ndarray) -> bool:
    """Whether ``src`` broadcast to ``dest.shape`` is ``dest``'s elements exactly, one for one.

    Then each element of the output is computed from the input element at the same
    address only, which a ufunc run in place (whole or block by block) gets right.

    >>> import numpy as np
    >>> x = np.zeros((3, 4))
    >>> same_elements(x, x), same_elements(x, x[:1]), same_elements(x[1:], x[:-1])
    (True, False, False)
    """
    if src is dest:
        return True  # out=x, the usual in-place call: nothing to compare
    if src.dtype.itemsize != dest.dtype.itemsize or src.ndim > dest.ndim:
        return False
    lead = dest.ndim - src.ndim
    for k, (n, s) in enumerate(zip(dest.shape, dest.strides, strict=True)):
        if n == 1:
            continue  # a size-1 axis has no second element: its stride is never used
        if k < lead or src.shape[k - lead] != n or src.strides[k - lead] != s:
            return False  # src is broadcast (stride 0) along an axis dest walks
    # the same steps: the same elements exactly when they start at the same address (read last: it costs most)
    return bool(src.__array_interface__["data"][0] == dest.__array_interface__["data"][0])


def internal_overlap(a: np.ndarray) -> bool:
    """Whether two elements of ``a`` share a byte: a 0 stride, or strides that fold axes onto each other.

    Such an array (``as_strided(..., writeable=True)``) cannot hold a result: writing
    one element changes another. Strides that provably keep every element apart (each
    axis, by size of stride, steps past all the smaller ones' reach) are checked in
    O(ndim); other strides exactly, by sorting the elements' offsets, up to
    :data:`EXACT_OVERLAP_ELEMENTS` elements, and count as overlapping beyond that.

    >>> import numpy as np
    >>> from numpy.lib.stride_tricks import as_strided
    >>> x = np.zeros(12)
    >>> internal_overlap(x.reshape(3, 4).T), internal_overlap(as_strided(x, (3, 4), (8, 8), writeable=True))
    (False, True)
    """
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size <= 1:
        return False
    axes = sorted((abs(s), n) for s, n in zip(a.strides, a.shape, strict=True) if n > 1)
    reach = a.itemsize  # bytes spanned by one element, then by the axes taken so far
    for stride, n in axes:
        if stride < reach:
            break
        reach += stride * (n - 1)
    else:
        return False
    if axes[0][0] == 0 or a.size > EXACT_OVERLAP_ELEMENTS:
        return True
    offsets = np.zeros((), np.int64)
    for stride, n in axes:  # every element's byte offset (signs do not matter: a reflection)
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * stride)
    flat = np.sort(offsets, axis=None)
    return bool(np.any(np.diff(flat) < a.itemsize))


def units(shape: Sequence[int], unit: int) -> list[Index]:
    """Index tuples that cut ``shape`` (C order) into blocks of about ``unit`` elements.

    The split axis is the outermost one whose inner block fits in a unit; the axes
    before it are taken one index at a time, the split axis in runs.

    >>> units((4, 6), 12)
    [(slice(0, 2, None),), (slice(2, 4, None),)]
    >>> units((), 12)
    [(Ellipsis,)]
    >>> len(units((8, 256, 16384), 1 << 16))
    512
    """
    if not shape:
        return [(Ellipsis,)]  # a 0-d unit: ``a[...]`` is a view that can be written; ``a[()]`` is a scalar
    inner = 1
    for n in shape:
        inner *= n
    k = 0
    while k < len(shape) - 1 and inner // max(shape[k], 1) > unit:
        inner //= max(shape[k], 1)
        k += 1
    step = max(1, unit // max(inner // max(shape[k], 1), 1))
    lead = np.ndindex(*shape[:k]) if k else iter([()])
    return [(*i, slice(a, min(a + step, shape[k]))) for i in lead for a in range(0, shape[k], step)]


def _as_view(a: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    view: np.ndarray = np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)
    return view


def _coalesced(dest: np.ndarray, srcs: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """``dest`` and the sources (already broadcast to ``dest.shape``) on the fewest axes."""
    shape, strides = coalesce(dest.shape, [dest.strides, *(s.strides for s in srcs)])
    views = [_as_view(a, shape, st) for a, st in zip((dest, *srcs), strides, strict=True)]
    return views[0], views[1:]


def _serial(nbytes: int) -> bool:
    return nbytes < SERIAL_BYTES or num_threads() <= 1


def fill_broadcast(dest: np.ndarray, src: np.ndarray) -> None:
    """Write ``src`` (a view already broadcast to ``dest.shape``, same dtype up to byte order) into ``dest``.

    ``dest`` must not overlap ``src`` (units run in any order, on several threads): the
    callers copy an overlapping source first.

    Coalesced, cut into units and threaded. When the outermost coalesced axis is a
    broadcast one and the innermost broadcast run is short (NumPy's copy loop would
    restart every few elements), each unit is written once under index 0 of the outer
    axis and replicated from there: by one compiled copy of the whole slab where the
    kernels take it, else unit by unit with contiguous copies that read from cache.
    """
    if _serial(dest.nbytes) or dest.dtype.hasobject:
        np.copyto(dest, src, casting="equiv")  # object arrays: NumPy's loop holds the GIL anyway
        return
    d, (s,) = _coalesced(dest, [src])
    item = dest.dtype.itemsize
    unit = max(1, UNIT_BYTES // item)
    short = d.ndim >= 3 and s.strides[0] == 0 and s.strides[-1] == 0 and d.shape[-1] < SHORT_RUN
    if not short and compiled.copy(dest, src):
        return
    if short:
        first_d, first_s = d[0], s[0]
        rest = d[1:]
        from_first = np.broadcast_to(first_d, rest.shape)
        # where the compiled copy takes them, the other slabs are copied from the first in one pass
        # of long contiguous runs, streamed past the cache, once NumPy's units have written it
        at_once = compiled.can_copy(rest, from_first)

        def spread(u: Index) -> None:
            for i in range(1, d.shape[0]):
                np.copyto(d[i][u], first_d[u], casting="no")

        def replicate(u: Index) -> None:
            np.copyto(first_d[u], first_s[u], casting="equiv")
            if not at_once:
                spread(u)

        run_units(replicate, units(first_d.shape, unit))
        if at_once and not compiled.copy(rest, from_first):  # declined: the slabs' extents interleave
            run_units(spread, units(first_d.shape, unit))
        return

    def copy(u: Index) -> None:
        np.copyto(d[u], s[u], casting="equiv")

    run_units(copy, units(d.shape, unit))


def elementwise(
    kernel: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
    operands: Sequence[np.ndarray],
    dest: np.ndarray,
) -> None:
    """``dest = kernel(...kernel(kernel(op0, op1), op2)..., opN)``, computed unit by unit on threads.

    Every operand must broadcast to ``dest.shape`` by NumPy's rule; none is ever
    materialised (each unit is a view), and a unit's partial results stay in cache
    between the folds. ``dest`` must not overlap any operand (the caller checks, see
    :func:`overlaps`), except that the first two may be ``dest``'s elements exactly
    (:func:`same_elements`) when ``kernel`` is one ufunc call: units run in any order on
    several threads, so a unit must read nothing that another unit writes.
    """

    def fold(*views: np.ndarray) -> None:
        du = views[-1]
        kernel(views[0], views[1], du)
        for extra in views[2:-1]:
            kernel(du, extra, du)

    blockwise(fold, operands, dest, BLOCK_BYTES)


def blockwise(
    fn: Callable[..., None], operands: Sequence[np.ndarray], dest: np.ndarray, unit_bytes: int | None = None
) -> None:
    """``fn(*operands, dest)`` called on matching blocks of the operands and ``dest``, on threads.

    ``fn`` must be elementwise (a block of ``dest`` depends only on the same block of
    each operand) and must not raise for one block where it would not for the whole.
    Operands broadcast to ``dest.shape`` by NumPy's rule and are never materialised;
    ``dest`` must not overlap them (blocks are written in any order, on several threads).

    >>> import numpy as np
    >>> from bcast.engines.numpy.kernels import blockwise
    >>> d = np.empty((2, 3))
    >>> blockwise(lambda x, y, out: np.add(x, y, out=out), [np.ones((2, 1)), np.arange(3.0)], d)
    >>> d.tolist()
    [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    """
    if _serial(dest.nbytes):
        fn(*operands, dest)
        return
    srcs = [np.broadcast_to(op, dest.shape) for op in operands]
    d, views = _coalesced(dest, srcs)

    def block(u: Index) -> None:
        fn(*(v[u] for v in views), d[u])

    # a kernel with temporaries (``where``) keeps them cache-sized with the default UNIT_BYTES
    size = UNIT_BYTES if unit_bytes is None else unit_bytes
    run_units(block, units(d.shape, max(1, size // dest.dtype.itemsize)))


def reduce_sum(g: np.ndarray, axes: tuple[int, ...], dtype: np.dtype[Any] | None) -> np.ndarray:
    """``np.add.reduce(g, axis=axes, dtype=dtype)`` with the summed axes kept as size 1, threaded.

    The axes are coalesced into alternating summed and kept runs; the outermost run is
    cut across threads: a kept outer run gives each thread its own rows of the result,
    a summed one gives each thread a partial sum of its rows (combined at the end, in
    the accumulator dtype). Contiguous inner runs are reduced first by NumPy's pairwise
    summation, so accuracy is NumPy's.
    """
    keep_shape = tuple(1 if k in axes else n for k, n in enumerate(g.shape))
    acc = np.dtype(dtype) if dtype is not None else g.dtype
    fast = None if g.dtype.hasobject else compiled.reduce_sum(g, axes, acc)
    if fast is not None:
        return fast
    if _serial(g.nbytes) or g.dtype.hasobject or not axes:
        r: np.ndarray = np.add.reduce(g, axis=axes, dtype=dtype, keepdims=True)
        return r
    shape, gs, summed = summed_runs(g.shape, g.strides, axes)
    view = _as_view(g, shape, gs)
    red = tuple(k for k, is_summed in enumerate(summed) if is_summed)
    out_shape = tuple(1 if k in red else n for k, n in enumerate(shape))
    n0 = shape[0]
    threads = min(num_threads(), MAX_THREADS)  # each piece has a partial sum: a huge count must not mean huge memory
    pieces = min(n0, max(threads, (g.nbytes + (64 << 20) - 1) // (64 << 20)))
    if pieces <= 1:  # pragma: no cover - coalescing leaves an outer axis of at least 2
        whole: np.ndarray = np.add.reduce(g, axis=axes, dtype=dtype, keepdims=True)
        return whole
    bounds = [n0 * i // pieces for i in range(pieces + 1)]
    chunks = [slice(a, b) for a, b in pairwise(bounds) if b > a]
    if 0 in red:
        partial = np.empty((len(chunks), *out_shape[1:]), dtype=acc)

        def part(i: int) -> None:
            np.add.reduce(view[chunks[i]], axis=red, dtype=acc, keepdims=True, out=partial[i : i + 1])

        run_units(part, range(len(chunks)))
        total = np.add.reduce(partial, axis=0, dtype=acc, keepdims=True)
    else:
        total = np.empty(out_shape, dtype=acc)

        def rows(i: int) -> None:
            np.add.reduce(view[chunks[i]], axis=red, dtype=acc, keepdims=True, out=total[chunks[i]])

        run_units(rows, range(len(chunks)))
    result: np.ndarray = total.reshape(keep_shape)
    return result
