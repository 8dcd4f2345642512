"""Dask arrays: broadcasts, copies, gradients and ONNX elementwise ops that stay lazy and chunked.

A dask array may be far larger than one machine's memory, so nothing here computes:
each function returns a new dask array whose graph does the work block by block when
``.compute()`` (or ``.persist()``, ``da.store``...) runs it, on whatever scheduler is in
use: threads, processes, or a ``dask.distributed`` cluster.

The promise on memory. Each block of a result holds at most :func:`block_limit` bytes:
dask's ``array.chunk-size`` setting (128 MiB by default), or the largest block of the
inputs when that is larger (this module never merges blocks a user chose). A broadcast
is done per block, as a zero-copy NumPy view of the input block, so no task ever holds a
replicated operand bigger than one output block:

- :func:`view` keeps the data's chunks on the axes it has and cuts each broadcast axis
  into chunks sized so that an output block fits the limit (the innermost axes are kept
  whole first, so blocks stay contiguous);
- :func:`elementwise` lines the operands up on the output's axes (``x[index]`` with
  ``None`` for new axes), gives every axis one chunking shared by all operands (the
  operands' own where they agree, else regular chunks cut to fit the limit), and runs
  the operator's NumPy function (which :mod:`bcast.ops` hands down) on each set of blocks,
  so ONNX's semantics (type rules, integer division, Mod's sign...) hold exactly as for
  NumPy arrays;
- :func:`backward` sums each block over the broadcast axes and combines the partial sums
  with dask's tree reduction (``split_every``), accumulating float16 in float32.

The promise on graphs. A result is refused with a :class:`~bcast.errors.BroadcastError`,
before its graph is built, when it would have more than :func:`max_blocks` blocks (dask's
config ``bcast.max-blocks``, a million by default: broadcasting to ``(10**6,) * 3`` would
otherwise build tens of billions of tasks), or when one of its blocks would hold more bytes
than this machine has memory (or than the process's ``RLIMIT_AS`` leaves it).

>>> import bcast, numpy as np, dask.array as da
>>> from bcast.engines import dask as dask_impl
>>> x = da.arange(6, chunks=3, dtype=np.float32).reshape(6, 1)
>>> y = dask_impl.view(bcast.plan("[6,1]", "[2,6,4]"), x)
>>> y.shape, y.chunks
((2, 6, 4), ((2,), (3, 3), (4,)))
>>> y[1, :, 0].compute()
array([0., 1., 2., 3., 4., 5.], dtype=float32)
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.utils import parse_bytes

from .. import rules
from ..alignment import Alignment, ElementwiseAlignment, static_output
from ..errors import BroadcastError, as_given, brief
from ..operators import BY_NAME, check_types
from .array_api import compute, namespace
from .common import accumulator, require_cotangent, specialized
from .memory import address_space_left, out_of_memory_error, size_text
from .numpy import as_array

__all__ = [
    "backward",
    "block_limit",
    "chunk_limit",
    "elementwise",
    "known_shape",
    "materialize",
    "max_blocks",
    "view",
]

Chunks = tuple[tuple[int, ...], ...]


# -- limits and shapes ---------------------------------------------------------------
def chunk_limit() -> int:
    """Bytes per block that results aim for: dask's ``array.chunk-size`` setting.

    Change it with ``dask.config.set({"array.chunk-size": "64MiB"})``.

    >>> import dask
    >>> from bcast.engines.dask import chunk_limit
    >>> with dask.config.set({"array.chunk-size": "64MiB"}):
    ...     chunk_limit()
    67108864
    """
    limit = int(parse_bytes(dask.config.get("array.chunk-size")))
    return max(limit, 1)


def _block_bytes(chunks: Chunks, itemsize: int) -> int:
    """Bytes of the largest block of an array with these chunks."""
    n = itemsize
    for c in chunks:
        n *= max(c, default=0)
    return n


def block_limit(*arrays: Any) -> int:
    """The most bytes a block of a result built from ``arrays`` holds (see the module's docstring).

    ``max(chunk_limit(), largest block of the dask arrays among arrays)``.

    >>> import dask.array as da
    >>> from bcast.engines.dask import block_limit, chunk_limit
    >>> block_limit(da.ones((10,), chunks=5)) == chunk_limit()
    True
    """
    largest = max(
        (_block_bytes(a.chunks, a.dtype.itemsize) for a in arrays if isinstance(a, da.Array)),
        default=0,
    )
    return max(chunk_limit(), largest)


#: the most blocks a result may have, unless dask's config ``bcast.max-blocks`` says otherwise
MAX_BLOCKS = 1_000_000


def max_blocks() -> int:
    """The most blocks (tasks) a result of this module may have: dask's config ``bcast.max-blocks``.

    >>> import dask
    >>> from bcast.engines.dask import max_blocks
    >>> with dask.config.set({"bcast.max-blocks": 10}):
    ...     max_blocks()
    10
    >>> max_blocks()
    1000000
    """
    value = dask.config.get("bcast.max-blocks", MAX_BLOCKS)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise TypeError(f"dask config bcast.max-blocks must be a positive integer, got {value!r:.60}")
    return int(value)


def _machine_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def _count(n: int, size: int) -> int:
    """How many chunks :func:`_regular` cuts ``n`` into (computed without building them)."""
    if n == 0:
        return 1
    size = max(1, min(size, n))
    return -(-n // size)


def _check_graph(
    mode: str,
    shape: tuple[int, ...],
    counts: Sequence[int],
    block: Sequence[int],
    itemsize: int,
    given: tuple[str, ...],
    what: str = "broadcast a dask array to",
) -> None:
    """Refuse a result of ``counts`` blocks per axis, each at most ``block``, before its graph is built."""
    total = math.prod(counts)
    limit = max_blocks()
    head = f"{mode}: cannot {what} {as_given(shape)}"
    if total > limit:
        raise BroadcastError(
            f"{head}: the result would have {total} blocks ({' x '.join(map(str, counts))} along its axes), more "
            f"than bcast's limit of {limit} tasks a graph (dask config 'bcast.max-blocks'); use larger chunks "
            "(dask config 'array.chunk-size') or a smaller shape",
            mode=mode,
            shapes=given,
            accepted=f"a result of at most {limit} blocks",
        )
    nbytes = math.prod(block) * itemsize
    room = _machine_memory()
    left = address_space_left()
    if left is not None and (room is None or left[0] < room):
        room = left[0]
    if room is not None and nbytes > room:
        raise BroadcastError(
            f"{head}: one block of the result, of shape {as_given(tuple(block))}, would hold {nbytes} bytes "
            f"({size_text(nbytes)}), more than the {room} bytes of memory this process can have; rechunk the input "
            "into smaller blocks first",
            mode=mode,
            shapes=given,
            accepted=f"blocks of at most {room} bytes",
        )


def known_shape(x: Any, mode: str | None = None, shapes: tuple[str, ...] = ()) -> tuple[int, ...]:
    """The shape of dask array ``x`` as ints; a ``BroadcastError`` where dask does not know a dim.

    Dask loses sizes after operations such as boolean indexing (``x[x > 0]``): the shape
    then holds ``nan``, and no broadcast can be planned until ``x.compute_chunk_sizes()``.

    >>> import dask.array as da
    >>> from bcast.engines.dask import known_shape
    >>> x = da.arange(5, chunks=2)
    >>> known_shape(x)
    (5,)
    >>> known_shape(x[x > 2], "numpy")
    Traceback (most recent call last):
    ...
    bcast.errors.BroadcastError: numpy: a dask array of shape (nan,) has an unknown size at axis 0 ...
    """
    out: list[int] = []
    for k, d in enumerate(x.shape):
        if isinstance(d, float) and math.isnan(d):
            head = f"{mode}: " if mode else ""
            shown = "(" + ", ".join(str(s) for s in x.shape) + ("," if len(x.shape) == 1 else "") + ")"
            raise BroadcastError(
                f"{head}a dask array of shape {shown} has an unknown size at axis {k} (its chunk sizes are "
                "not known, e.g. after boolean indexing); call x.compute_chunk_sizes() first",
                mode=mode,
                shapes=shapes or (shown,),
                axis=k,
                dims=("nan",),
                accepted="a dask array whose chunk sizes are known",
            )
        out.append(int(d))
    return tuple(out)


def _require_dask(x: Any, what: str, mode: str) -> None:
    if not isinstance(x, da.Array):
        raise TypeError(
            f"{mode}: {what} must be a dask array here (bcast.engines.dask), got {type(x).__name__}; "
            "call bcast's public functions, which pick the engine from the array"
        )


def _specialized(plan: Alignment, x: Any) -> tuple[Alignment, tuple[int, ...]]:
    """The plan for ``x``'s concrete shape, and that plan's output shape as ints."""
    _require_dask(x, "x", plan.mode)
    shape = known_shape(x, plan.mode, plan.given)
    return specialized(plan, shape, "broadcast a dask array")


def _align_index(plan: Alignment, ndim: int) -> tuple[Any, ...] | None:
    """The index that lines data's axes up on the output's (``None``: already lined up).

    ``None`` entries insert the output's new axes, ``0`` drops a size-1 data axis that
    the rule ignores (pdpd's trailing 1s); the data axes keep their order.
    """
    index = plan.align_index
    if index is None:  # pragma: no cover - a specialised plan always has a mapping
        raise BroadcastError(f"{plan.mode}: the plan has no axes mapping (dynamic rank)", mode=plan.mode)
    if index == (slice(None),) * len(index):
        return None
    return (*index, Ellipsis) if ndim == 0 else index


def _regular(n: int, size: int) -> tuple[int, ...]:
    """``n`` cut into chunks of ``size`` (the last one shorter)."""
    if n == 0:
        return (0,)
    size = max(1, min(size, n))
    q, r = divmod(n, size)
    return (size,) * q + ((r,) if r else ())


def _fit(sizes: list[int], fixed: Sequence[bool], limit_elems: int) -> list[int]:
    """Chunk lengths per axis, shrunk outermost first until a block holds at most ``limit_elems`` elements.

    Axes marked ``fixed`` are never shrunk. Shrinking the outer axes first keeps the inner
    ones whole, so a block stays one contiguous run as long as it can.
    """
    out = [max(s, 1) for s in sizes]
    for k in range(len(out)):
        total = math.prod(out)
        if total <= limit_elems:
            break
        if fixed[k]:
            continue
        others = total // out[k]
        out[k] = max(1, min(out[k], limit_elems // max(others, 1)))
    return out


# -- broadcast -----------------------------------------------------------------------
def view(plan: Alignment, x: Any) -> Any:
    """``x`` broadcast lazily per ``plan``: a dask array of ``plan.output_shape``.

    The data's chunks are kept on the axes it has; each broadcast axis is cut so that
    no block exceeds :func:`block_limit`. Each block is a read-only NumPy view of one
    block of ``x`` (nothing is copied until a later operation reads it).

    Parameters
    ----------
    plan : Alignment
        A plan whose data shape admits ``x.shape`` (symbolic plans are specialised).
    x : dask.array.Array
        The data; its shape must be known (no ``nan`` dims).

    Returns
    -------
    dask.array.Array

    Examples
    --------
    >>> import bcast, numpy as np, dask.array as da
    >>> from bcast.engines.dask import view
    >>> x = da.from_array(np.arange(4.0), chunks=2)
    >>> y = view(bcast.plan("[N]", "[3,N]"), x)
    >>> y.chunks, y.sum(axis=0).compute().tolist()
    (((3,), (2, 2)), [0.0, 3.0, 6.0, 9.0])
    """
    p, shape = _specialized(plan, x)
    index = _align_index(p, x.ndim)
    aligned = x if index is None else x[index]
    broadcast = set(p.broadcast_axes or ())
    limit = block_limit(x) // max(x.dtype.itemsize, 1)
    sizes = [n if k in broadcast else max(aligned.chunks[k], default=0) for k, n in enumerate(shape)]
    fitted = _fit(sizes, [k not in broadcast for k in range(len(shape))], limit)
    counts = [_count(n, fitted[k]) if k in broadcast else len(aligned.chunks[k]) for k, n in enumerate(shape)]
    block = [min(fitted[k], n) if k in broadcast else max(aligned.chunks[k], default=0) for k, n in enumerate(shape)]
    _check_graph(p.mode, shape, counts, block, x.dtype.itemsize, p.given)
    chunks = tuple(_regular(n, fitted[k]) if k in broadcast else aligned.chunks[k] for k, n in enumerate(shape))
    if aligned.shape == shape and aligned.chunks == chunks:
        return aligned
    return da.broadcast_to(aligned, shape, chunks=chunks)  # type: ignore[no-untyped-call]  # dask.array is unannotated


def _own_block(block: np.ndarray) -> np.ndarray:
    """A C-contiguous, writable copy of one block (the broadcast replicated into it)."""
    return np.array(block, copy=True, order="C")


def materialize(plan: Alignment, x: Any, out: object = None) -> Any:
    """Like :func:`view`, but each block of the result is its own contiguous, writable array.

    Still lazy: each block is copied out of the broadcast view when a task computes
    it, so a block holds at most :func:`block_limit` bytes. Use it where blocks are handed
    to code that writes into them or needs them contiguous; for dask's own operations a
    :func:`view` is cheaper and gives the same values. ``out=`` is a NumPy idea that a
    lazy array has no use for: store a result with ``da.store(result, target)``.

    >>> import bcast, numpy as np, dask.array as da
    >>> from bcast.engines.dask import materialize
    >>> y = materialize(bcast.plan("[2,1]", "[2,3]"), da.from_array(np.array([[1], [2]])))
    >>> block = y.blocks[0, 0].compute()
    >>> block.flags.writeable, block.flags.c_contiguous, block.tolist()
    (True, True, [[1, 1, 1], [2, 2, 2]])
    """
    if out is not None:
        raise TypeError(
            f"{plan.mode}: materialize of a dask array takes no out= (got {type(out).__name__}); "
            "the result is lazy: write it with dask.array.store(result, target)"
        )
    v = view(plan, x)
    return v.map_blocks(_own_block, dtype=v.dtype, meta=np.empty((0,) * v.ndim, dtype=v.dtype))


# -- gradient ------------------------------------------------------------------------
def backward(plan: Alignment, dy: Any) -> Any:
    """The adjoint of the broadcast, lazily: ``dy`` summed over the broadcast axes, in the data's shape.

    Each block is summed on its own and the partial sums are combined by dask's tree
    reduction, so no task holds more than a block of ``dy`` and a few partial sums.
    float16 (and ml_dtypes' narrow floats) are summed in float32 and cast back, bool sums
    as logical or, as in the NumPy engine.

    Parameters
    ----------
    plan : Alignment
        A plan with static shapes (``plan.specialize(data_shape)`` first otherwise).
    dy : dask.array.Array
        The gradient of the broadcast's output, of shape ``plan.output_shape``.

    Returns
    -------
    dask.array.Array
        Of shape ``plan.data_shape`` and ``dy``'s dtype.

    Examples
    --------
    >>> import bcast, numpy as np, dask.array as da
    >>> from bcast.engines.dask import backward
    >>> dy = da.ones((2, 3, 4), chunks=(1, 3, 2), dtype=np.float16)
    >>> g = backward(bcast.plan("[3,1]", "[2,3,4]"), dy)
    >>> g.dtype, g.compute().tolist()
    (dtype('float16'), [[8.0], [8.0], [8.0]])
    """
    _require_dask(dy, "dy", plan.mode)
    require_cotangent(plan, known_shape(dy, plan.mode, plan.given))
    acc = accumulator(dy.dtype)  # also the TypeError for a dtype that cannot be summed
    axes = tuple(plan.broadcast_axes or ())
    summed = dy
    if axes:
        # timedelta: NumPy's reduce keeps the unit only when no dtype is forced on it
        red = None if dy.dtype.kind == "m" else acc
        summed = dy.sum(axis=axes, dtype=red, keepdims=True)
        if summed.dtype != dy.dtype:
            summed = summed.astype(dy.dtype)
    return _to_data_shape(plan, summed)


def _to_data_shape(plan: Alignment, g: Any) -> Any:
    """A reduced gradient (broadcast axes kept as 1s) rearranged into the data's shape."""
    mapping = plan.axes_mapping or ()
    mapped = sorted(a for a in mapping if a is not None)
    rank = g.ndim
    if tuple(mapping) == tuple(range(rank)):
        return g
    # drop the output's new axes (size 1 after the sum), keep the mapped ones in output order
    kept = g[tuple(slice(None) if k in mapped else 0 for k in range(rank))]
    order = [mapped.index(a) for a in mapping if a is not None]
    if order != sorted(order):
        kept = kept.transpose(order)
    if None in mapping:  # size-1 data axes the rule ignored (pdpd's trailing 1s) come back
        kept = kept[tuple(None if a is None else slice(None) for a in mapping)]
    return kept


# -- elementwise ops -------------------------------------------------------------------
def _run_block(*blocks: Any, block: Callable[..., Any], op: str, attrs: dict[str, Any]) -> Any:
    """One block of an elementwise op: ``block`` on the operands' blocks (NumPy broadcasts their 1s).

    A ``MemoryError`` in a task becomes the ``BroadcastError`` that :mod:`bcast.ops` gives for it.
    """
    try:
        return block(*blocks, **attrs)
    except MemoryError as e:
        err = out_of_memory_error(op, blocks, e)
    raise err  # outside the except block: the MemoryError is neither chained nor shown


def _table_block(*blocks: Any, op: str, **attrs: Any) -> Any:
    """The operator ``op`` on NumPy blocks from the operator table alone: its type rules, then its Array API kernel.

    For callers of :func:`elementwise` that pass no ``block`` (:mod:`bcast.ops` passes its own
    function). The kernel is :mod:`bcast.engines.array_api_kernels`'s, whose ONNX rules the
    NumPy operators share.
    """
    spec = BY_NAME[op]
    lo, hi = spec.arity
    if not lo <= len(blocks) <= (hi or len(blocks)):
        raise TypeError(f"{op}: {spec.onnx} takes {lo if lo == hi else f'{lo} or more'} inputs, got {len(blocks)}")
    names = [f"data_{i}" for i in range(len(blocks))] if spec.variadic else spec.inputs
    check_types(spec, blocks, names)
    return compute(namespace(*blocks), spec.kernel_for(attrs), blocks)


def _block_function(spec_name: str, block: Callable[..., Any] | None) -> Callable[..., Any]:
    """What runs on each set of blocks: ``block``, or else the operator table's kernel for ``spec_name``."""
    if block is not None:
        return block
    spec = BY_NAME.get(spec_name) if isinstance(spec_name, str) else None
    if spec is None or spec.kernel is None:
        raise TypeError(f"elementwise: {brief(spec_name)} is not an operator of bcast.ops")
    return functools.partial(_table_block, op=spec_name)


def elementwise(
    spec_name: str,
    kernel_name: str,
    arrays: Sequence[Any],
    ep: ElementwiseAlignment,
    *,
    block: Callable[..., Any] | None = None,
    **attrs: Any,
) -> Any:
    """A lazy ONNX elementwise op over dask arrays (NumPy arrays and scalars may be mixed in).

    Parameters
    ----------
    spec_name : str
        The :mod:`bcast.ops` name of the operator: ``"add"``, ``"where"``, ``"mod"``, ``"max"``...
    kernel_name : str
        The label of the result's tasks in dask's graph and dashboard (e.g. ONNX's ``"Add"``).
    arrays : sequence
        The operands, in the op's order (``where``: condition, X, Y).
    ep : ElementwiseAlignment
        The operands' alignment: ``ep.operands[i]`` is operand i's plan to ``ep.output_shape``
        (numpy, pdpd, none or legacy rules; the per-block op then runs under NumPy's rule,
        which is the same once the operands are lined up).
    block : callable, optional
        The function run on each set of NumPy blocks: :mod:`bcast.ops` passes the operator's
        own. Without it, the operator table's type rules and Array API kernel for ``spec_name``.
    **attrs
        The op's keywords (``fmod=1``, ``direction="LEFT"``...). ``mode`` and ``axis`` are
        already in ``ep`` and ignored; ``out`` is refused (a lazy result has no out).

    Returns
    -------
    dask.array.Array
        Of ``ep.output_shape``, with ONNX's result dtype. Type errors are raised now (the
        op is tried on empty arrays of the operands' dtypes); value errors such as an
        integer division by zero when the block is computed.

    Examples
    --------
    >>> import bcast, numpy as np, dask.array as da
    >>> from bcast.engines.dask import elementwise
    >>> a = da.from_array(np.array([-7, 7, -8, 8], np.int32).reshape(4, 1), chunks=2)
    >>> b = np.array([3, -3], np.int32)
    >>> r = elementwise("mod", "Mod", [a, b], bcast.elementwise_plan((4, 1), (2,)), fmod=0)
    >>> r.chunks, r.compute().tolist()
    (((2, 2), (2,)), [[2, -1], [1, -2], [1, -2], [2, -1]])
    """
    fn = _block_function(spec_name, block)
    operands, attrs = _checked(spec_name, arrays, ep, attrs)
    # ONNX's type rules, checked now rather than in the first task: the op on empty arrays of these dtypes
    dtype = np.asarray(fn(*(np.empty((0,), a.dtype) for a in operands), **attrs)).dtype
    return _blockwise(fn, spec_name, kernel_name, attrs, operands, ep, dtype)


def _checked(
    spec_name: str, arrays: Sequence[Any], ep: ElementwiseAlignment, attrs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The operands (dask arrays, or NumPy arrays read from what else was given) and the op's keywords.

    ``mode`` and ``axis`` are dropped (``ep`` has them); an ``out=`` and a count of operands
    that ``ep`` does not align are each a ``TypeError``.
    """
    if attrs.get("out") is not None:
        raise TypeError(
            f"{spec_name}: out= is not supported for dask arrays (the result is lazy); "
            "write it with dask.array.store(result, target)"
        )
    kept = {k: v for k, v in attrs.items() if k not in ("mode", "axis", "out")}
    if len(arrays) != len(ep.operands):
        raise TypeError(f"{spec_name}: {len(arrays)} operands, but the plan aligns {len(ep.operands)}")
    operands = [
        a if isinstance(a, da.Array) else as_array(a, f"{spec_name}: operand {i}") for i, a in enumerate(arrays)
    ]
    return operands, kept


def _blockwise(
    fn: Callable[..., Any],
    spec_name: str,
    kernel_name: str,
    attrs: dict[str, Any],
    operands: Sequence[Any],
    ep: ElementwiseAlignment,
    dtype: np.dtype[Any],
) -> Any:
    """The lazy result: the operands lined up on the output's axes, one chunking for all, ``fn`` per set of blocks."""
    shape, aligned = _lined_up(operands, ep)
    rank = len(shape)
    # per operand, the output axes it spans (the others it has as 1s, broadcast per block)
    full = [[k for k, n in enumerate(shape) if x.shape[k] == n and n != 1] for x in aligned]
    itemsize = max(dtype.itemsize, *(a.dtype.itemsize for a in operands))
    chunks = _shared_chunks(shape, aligned, full, itemsize, spec_name, tuple(str(a.shape) for a in operands))
    args = _blockwise_args(aligned, full, chunks)
    token = dask.base.tokenize(spec_name, attrs, *args[::2])
    return da.blockwise(  # type: ignore[no-untyped-call]
        _run_block,
        tuple(range(rank)),
        *args,
        dtype=dtype,
        meta=np.empty((0,) * rank, dtype=dtype),
        name=f"{kernel_name}-{token}",
        block=fn,
        op=spec_name,
        attrs=attrs,
    )


def _lined_up(operands: Sequence[Any], ep: ElementwiseAlignment) -> tuple[tuple[int, ...], list[Any]]:
    """The output shape, and each operand indexed onto the output's axes (its broadcast axes left as 1s).

    NumPy operands are specialised as dask ones are, so that both line up by the same plan.
    """
    plans = []
    aligned: list[Any] = []
    for a, p in zip(operands, ep.operands, strict=True):
        if isinstance(a, da.Array):
            q, _ = _specialized(p, a)
        else:
            q = rules.specialize(p, a.shape)
            static_output(q, "broadcast a dask array")
        index = _align_index(q, a.ndim)
        plans.append(q)
        aligned.append(a if index is None else a[index])
    shape = static_output(plans[0], "broadcast a dask array") if plans else ()
    return shape, aligned


def _blockwise_args(aligned: Sequence[Any], full: Sequence[list[int]], chunks: Chunks) -> list[Any]:
    """``da.blockwise``'s (array, index) pairs: each operand chunked as ``chunks`` on the axes it spans.

    One chunking for all: blockwise pairs blocks by index, and would broadcast a lone block.
    """
    rank = len(chunks)
    ind = tuple(range(rank))
    args: list[Any] = []
    for x, axes in zip(aligned, full, strict=True):
        want = tuple(chunks[k] if k in axes else (x.shape[k],) for k in range(rank))
        if not isinstance(x, da.Array):
            args.extend([da.from_array(x, chunks=want), ind])  # type: ignore[no-untyped-call]
        else:
            args.extend([x if x.chunks == want else x.rechunk(want), ind])  # type: ignore[no-untyped-call]
    return args


def _shared_chunks(
    shape: tuple[int, ...],
    aligned: Sequence[Any],
    full: Sequence[list[int]],
    itemsize: int,
    mode: str = "numpy",
    given: tuple[str, ...] = (),
) -> Chunks:
    """One chunking per output axis for every operand that is not broadcast along it.

    Where the dask operands already agree on an axis and the blocks fit, their chunks
    are kept (no rechunk); otherwise regular chunks of the largest operand chunk, cut
    (outer axes first) until an output block fits :func:`block_limit`.
    """
    rank = len(shape)
    limit = block_limit(*aligned) // max(itemsize, 1)
    own: list[tuple[int, ...] | None] = []
    sizes: list[int] = []
    for k in range(rank):
        cs = {x.chunks[k] for x, axes in zip(aligned, full, strict=True) if k in axes and isinstance(x, da.Array)}
        own.append(next(iter(cs)) if len(cs) == 1 else None)
        # only NumPy operands (or none) span this axis: one chunk, unless cut below
        sizes.append(max(max(c, default=0) for c in cs) if cs else shape[k])
    fitted = _fit(sizes, [False] * rank, limit)
    keep = [own[k] is not None and max(own[k] or (0,), default=0) <= fitted[k] for k in range(rank)]
    counts = [len(own[k] or ()) if keep[k] else _count(shape[k], fitted[k]) for k in range(rank)]
    block = [max(own[k] or (0,), default=0) if keep[k] else min(fitted[k], shape[k]) for k in range(rank)]
    _check_graph(mode, shape, counts, block, itemsize, given[:8], "compute on dask arrays a result of shape")
    out = []
    for k in range(rank):
        c = own[k]
        out.append(c if keep[k] and c is not None else _regular(shape[k], fitted[k]))
    return tuple(out)
