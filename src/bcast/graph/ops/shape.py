"""Ops that compute or rearrange shapes: Shape, Slice, Concat, Reshape, Transpose, ...

Their *values* are propagated too, as expressions, whenever they are small: a TorchScript
export computes every Reshape and Expand target as ``Shape -> Gather -> Unsqueeze -> Concat``
(Gather is in :mod:`bcast.graph.ops.indexing`), and a target known only as ``[?, ?, ?]`` would
hide the bug in the constant beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ...dims import Tri
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr, Opaque, emax, emin
from ..model import Node, Origin, Value
from ._base import (
    DATA_LIMIT,
    at_most,
    attr_int,
    attr_ints,
    axes_of,
    axis_of,
    constant_term,
    dims_from_value,
    element_origins,
    input_value,
    known,
    nonzero_count,
    note_fill,
    numel,
    origins_of,
    rank_of_length,
    register,
    require,
    static_numel,
    suspects_of,
)
from .elementwise import dtype_name

Dims = tuple[Expr, ...]
Origins = tuple[Origin | None, ...]

#: a Slice bound this large is a "to the end" sentinel (tf2onnx writes 10**9 for a masked end, other exporters
#: INT32_MAX or near 2**63): on an axis of unknown size it means the axis's end, never a billion rows
_INT_MAX = 10**9


def _node_origin(node: Node) -> Origin:
    return Origin(node.name, node.op)


@register("Constant")
def _constant(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    v = node.attrs.get("value")
    if isinstance(v, Value):
        o = _node_origin(node)
        n = len(v.data) if v.data is not None else 0
        return [Value(v.dtype, v.shape, v.data, (o,) * len(v.shape or ()), (o,) * n)]
    for key, dtype in (("value_int", "int64"), ("value_float", "float32")):
        if key in node.attrs:
            x = node.attrs[key]
            return [Value(dtype, (), (Expr.const(x) if dtype == "int64" else float(x),), (), (_node_origin(node),))]
    for key, dtype in (("value_ints", "int64"), ("value_floats", "float32")):
        if key in node.attrs:
            xs = list(node.attrs[key])
            data = tuple(Expr.const(x) if dtype == "int64" else float(x) for x in xs)
            o = _node_origin(node)
            return [Value(dtype, (Expr.const(len(xs)),), data if len(xs) <= DATA_LIMIT else None, (o,), (o,) * len(xs))]
    return [Value(None, None)]


@register("Shape")
def _shape(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value("int64", None)]
    r = len(x.shape)
    start, end = attr_int(node, "start", 0), attr_int(node, "end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    dims = x.shape[start:end] if end > start else ()
    origins = tuple(x.origin(k) for k in range(start, max(start, end)))
    return [Value("int64", (Expr.const(len(dims)),), tuple(dims), None, origins)]


@register("Size")
def _size(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value("int64", ())]
    return [Value("int64", (), (numel(x.shape),), (), (_node_origin(node),))]


def _dims_text(dims: Dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _clamp_index(k: Expr, size: Expr, step_neg: bool) -> Expr:
    """Slice's start/end: negative counts from the end, then clamped to the axis (a symbolic bound on a
    static axis is ``min(bound, size)``, and so is a constant past 1 on a symbolic axis that may be shorter; a
    symbolic bound on a symbolic axis is taken as in range)."""
    v, n = k.value, size.value
    if v is not None:
        if v >= _INT_MAX:
            return size if not step_neg else size - 1
        if v <= -_INT_MAX:
            return Expr.const(-1 if step_neg else 0)
        if v < 0:
            base = size + v
            if n is not None:
                lo = -1 if step_neg else 0
                return Expr.const(max(lo, n + v))
            return base
        if n is not None:
            return Expr.const(min(v, n - 1 if step_neg else n))
        if v > 1 and not step_neg and (size.lo is None or size.lo < v):
            # a number of rows cut off an axis of a size not known (``ids[:, :64]`` of a shuffle of every patch,
            # a length traced as a constant): at most the axis, so that what meets it sees which is which
            return emin([k, size])
        return k
    if n is not None and k.lo is not None and k.lo >= n:
        return size
    if n is not None and not step_neg:
        # a length sliced off a table of n rows (positions, a causal mask, a rotary cache): at most n,
        # so that whatever needs it to be the length itself says for which lengths it is
        return emin([k, size])
    return k


def slice_bounds(start: Expr, end: Expr, size: Expr, step: int) -> tuple[Expr, Expr, Expr]:
    """``start:end:step`` on an axis of ``size``: the clamped first and end index, and the slice's length.

    ONNX's Slice and OpenVINO's StridedSlice count and clamp their bounds alike; both take them from here.
    On a static axis of ``n`` a symbolic bound is ``min(bound, n)``: a length cut off a table (``pos[:S]``) is
    ``min(S, n)``, and a window that moves along it (a rotary cache's ``cos[past:past + S]``) is ``min(past + S,
    n) - min(past, n)`` rows, so that whatever needs it to be ``S`` says for which sizes it is. On a symbolic
    axis a constant bound past 1 is ``min(bound, size)`` too (``ids[:, :64]`` of a shuffle of every patch: the
    graph computes ``min(64, N)`` rows elsewhere); a symbolic bound there, and a window of a fixed number of rows
    (``x[i:i+1]``), are taken as in range.
    """
    rows = (end - start if step > 0 else start - end).value
    if start.value is None and rows is not None:
        # a window of a fixed number of rows that moves (``x[i:i+1]``, a loop's step) is taken as in range,
        # so that its length stays that number
        return start, end, Expr.const(max(0, -(-rows // abs(step))))
    b = _clamp_index(start, size, step < 0)
    f = _clamp_index(end, size, step < 0)
    length = f - b if step > 0 else b - f
    if step == 1 and size.value is not None and f.value is None and b.value != 0:
        # min(end, n) - min(start, n) is min(end - start, n - min(start, n)) wherever end >= start: written so,
        # it is the window's own length S where the table holds it (a rotary cache's cos[past:past + S]), and
        # what needs it to be S sees that, and for which sizes
        length = emin([end - start, size - b])
    lv = length.value
    if lv is not None:
        return b, f, Expr.const(max(0, -(-lv // abs(step))))
    if step > 0 and size.value is not None and not _ordered(start, end, b, f, size):
        length = emax([0, length])  # Slice gives no rows, never fewer
    return b, f, length if abs(step) == 1 else length.ceildiv(abs(step))


def _ordered(start: Expr, end: Expr, b: Expr, f: Expr, size: Expr) -> bool:
    """Whether a slice's clamped end ``f`` is never before its first index ``b``: the end is the axis's end, the
    start is 0, or the end is never before the start (clamping both to one size keeps their order)."""
    if b.value == 0 or f == size:
        return True
    least = (end - start).lo
    return least is not None and least >= 0


@register("Slice")
def _slice(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    if "starts" in node.attrs:  # opset < 10
        starts: list[Expr] | None = [Expr.const(v) for v in node.attrs["starts"]]
        ends: list[Expr] | None = [Expr.const(v) for v in node.attrs["ends"]]
        axes = attr_ints(node, "axes")
        steps: list[int] | None = None
    else:
        starts = known(input_value(ins, 1)).ints
        ends = known(input_value(ins, 2)).ints
        av = input_value(ins, 3)
        axes = None if av is not None and av.consts is None else (av.consts if av is not None else None)
        if av is not None and av.consts is None:
            return [Value(x.dtype, tuple(ctx.fresh(f"{node.name}_{k}") for k in range(r)))]
        sv = input_value(ins, 4)
        steps = sv.consts if sv is not None else None
        if sv is not None and steps is None:
            return [Value(x.dtype, tuple(ctx.fresh(f"{node.name}_{k}") for k in range(r)))]
    if starts is None or ends is None:
        n = len(axes) if axes is not None else None
        affected = set(axis_of(node, a, r) for a in axes) if axes is not None else set(range(r))
        del n
        return [
            Value(
                x.dtype,
                tuple(ctx.fresh(f"{node.name}_{k}") if k in affected else d for k, d in enumerate(x.shape)),
                None,
                tuple(None if k in affected else x.origin(k) for k in range(r)),
            )
        ]
    axes_l = [axis_of(node, a, r) for a in (axes if axes is not None else range(len(starts)))]
    steps_l = steps if steps is not None else [1] * len(axes_l)
    if not len(starts) == len(ends) == len(axes_l) == len(steps_l):
        raise ShapeError(f"Slice {node.name}: starts, ends, axes and steps differ in length", kind="invalid")
    out = list(x.shape)
    origins = [x.origin(k) for k in range(r)]
    slices: dict[int, tuple[int, int, int]] = {}
    for s, e, a, st in zip(starts, ends, axes_l, steps_l, strict=True):
        if st == 0:
            raise ShapeError(f"Slice {node.name}: a step of 0", kind="invalid")
        size = x.shape[a]
        if st > 0 and size.value is not None and not node.path:
            _start_may_wrap(node, ctx, s, size.value, a)
        b, f, out[a] = slice_bounds(s, e, size, st)
        if out[a] is not size:
            origins[a] = _node_origin(node) if out[a] != size else origins[a]
        if b.value is not None and f.value is not None:
            slices[a] = (b.value, f.value, st)
    data = None
    data_origins = None
    grid = static_dims(x) if x.data is not None else None
    if grid is not None and all(a in slices for a in axes_l):
        picks = [list(range(*slices[a])) if a in slices else list(range(grid[a])) for a in range(r)]
        picks = [[i for i in p if 0 <= i < grid[a]] for a, p in enumerate(picks)]
        got = rearranged(x, grid, lambda arr: arr[np.ix_(*picks)] if r else arr)
        if got is not None:
            data, data_origins = got
            out = [Expr.const(len(p)) for p in picks]
    return [Value(x.dtype, tuple(out), data, tuple(origins), data_origins)]


def _start_may_wrap(node: Node, ctx: Ctx, start: Expr, n: int, axis: int) -> None:
    """A start ``c - t`` on an axis of ``n`` rows, ``t`` sizes of the model (DeBERTa's relative positions cut
    ``rel[130 - seq : 130 + seq]``, the trace having lost a ``min(seq, 130)``): past ``t = c`` it is negative and
    counts from the end, and the slice is rows of another place. Within ``t <= c`` it is what the export saw: the
    model's limit, a note (a warning when ``--dim`` reaches past it)."""
    c = constant_term(start)
    if start.value is not None or not 0 < c <= n:
        return
    t = Expr.const(c) - start
    if t.lo is None or t.lo < 0 or at_most(t, c):  # never past c (a min the export kept): never negative
        return
    ctx.note_limit(
        node,
        ((t, c),),
        f"Slice {node.name}: the start {start} of axis {axis} ({n} rows) is negative past {t} = {c}, where it counts "
        "from the end instead",
        axis=axis,
        dims=(t, Expr.const(c)),
        where=f": below 0 the start {start} counts from the end of {node.inputs[0]}'s {n} rows",
    )


def static_dims(x: Value) -> list[int] | None:
    if x.shape is None:
        return None
    dims = [d.value for d in x.shape]
    return None if any(d is None for d in dims) else [int(d) for d in dims if d is not None]


def rearranged(x: Value, grid: list[int], how: Any) -> tuple[tuple[Any, ...], tuple[Origin | None, ...]] | None:
    """``x``'s small value (and its elements' origins) laid out as ``grid``, rearranged by ``how`` (a
    function of a NumPy object array: a slice, a transpose, a take), flattened again."""
    if x.data is None or math.prod(grid) != len(x.data):
        return None
    vals = np.empty(len(x.data), dtype=object)
    vals[:] = list(x.data)
    origins = np.empty(len(x.data), dtype=object)
    origins[:] = [x.data_origin(k) for k in range(len(x.data))]
    new = how(vals.reshape(grid))
    new_o = how(origins.reshape(grid))
    return tuple(new.reshape(-1).tolist()), tuple(new_o.reshape(-1).tolist())


@register("Concat")
def _concat(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    vals = [known(v) for v in ins if v is not None]
    if not vals:
        return [Value(None, None)]
    shapes = [v.shape for v in vals]
    known_shapes = [s for s in shapes if s is not None]
    if not known_shapes:
        return [Value(vals[0].dtype, None)]
    r = len(known_shapes[0])
    if any(len(s) != r for s in known_shapes):
        ranks = ", ".join(_dims_text(s) for s in known_shapes[:8])
        raise ShapeError(
            f"Concat {node.label}: the inputs differ in rank: {ranks}",
            suspects=_shape_suspects(vals),
            kind="concat-mismatch",
        )
    if r == 0:
        raise ShapeError(f"Concat {node.name}: scalars cannot be concatenated", kind="invalid")
    axis = axis_of(node, attr_int(node, "axis", 0), r)
    out: list[Expr] = list(known_shapes[0])
    origins: list[Origin | None] = [vals[0].origin(k) for k in range(r)] if vals[0].shape is not None else [None] * r
    if any(s is None for s in shapes):
        out[axis] = ctx.fresh(f"{node.name}_{axis}")
    else:
        total = Expr.const(0)
        for s in known_shapes:
            total = total + s[axis]
        out[axis] = total
        origins[axis] = _node_origin(node)
    # every other axis must agree
    names = [n for n in node.inputs if n]
    _concat_agrees(node, ctx, axis, names, vals, known_shapes, out)
    data = None
    data_origins = None
    if r == 1 and all(v.data is not None for v in vals):
        data = tuple(e for v in vals for e in (v.data or ()))
        data_origins = tuple(o for v in vals for o in element_origins(v))
        if len(data) > DATA_LIMIT:
            data = data_origins = None
    return [Value(vals[0].dtype, tuple(out), data, tuple(origins), data_origins)]


def _concat_agrees(
    node: Node,
    ctx: Ctx,
    axis: int,
    names: list[str],
    vals: list[Value],
    known_shapes: list[Dims],
    out: list[Expr],
) -> None:
    """Every axis of a Concat's inputs but its own must agree: an error where they differ for sure, a warning
    saying for which sizes where they may; ``out`` takes a static size over a symbol where one input has it."""
    r = len(out)
    warned: set[tuple[int, Expr]] = set()  # one warning per axis and size: Concat joins many alike
    # the axis they would join on, looked for only once two dims may differ (most Concats agree everywhere)
    other: int | None = None
    looked = False
    for k in range(r):
        if k == axis:
            continue
        first: tuple[Expr, Value, str] | None = None
        for name, v in zip(names, vals, strict=False):
            if v.shape is None:
                continue
            d = v.shape[k]
            if first is None:
                first = (d, v, name)
                continue
            fd, fv, fname = first
            t = d.eq(fd)
            if t is Tri.YES:
                if fd.value is None and d.value is not None:
                    out[k] = d  # a static size is the better name for it
                continue
            if not looked:
                other = _fitting_axis(known_shapes, axis) if len(known_shapes) == len(vals) else None
                looked = True
            sus = [Suspect(o, e.value) for o, e in ((fv.origin(k), fd), (v.origin(k), d)) if o]
            if other is not None:
                # the inputs agree everywhere but on one other axis: they are joined along the wrong axis, and the
                # Concat's axis is what to edit
                sus = [Suspect(_node_origin(node))]
            if t is Tri.NO:
                where = f" (they would join on axis {other})" if other is not None else ""
                shown = ", ".join(
                    f"{n} {_dims_text(x.shape)}" for n, x in list(zip(names, vals, strict=False))[:8] if x.shape
                )
                raise ShapeError(
                    f"Concat {node.label} on axis {axis}: the inputs differ at axis {k} ({fd} against {d}){where}: "
                    f"{shown}",
                    axis=k,
                    dims=(fd, d),
                    suspects=sus,
                    kind="concat-mismatch",
                )
            if t is Tri.MAYBE and (k, d) not in warned:
                warned.add((k, d))
                require(
                    node,
                    ctx,
                    "concat-mismatch",
                    f"on axis {axis}, axis {k} needs {fd} == {d}: {fname} {_dims_text(fv.shape or ())} against "
                    f"{name} {_dims_text(v.shape)}"
                    + (f" (they would join on axis {other} at every size)" if other is not None else ""),
                    _equal(fd, d),
                    (fd, d),
                    axis=k,
                    suspects=sus,
                )
            if fd.value is None and d.value is not None:
                out[k] = d  # a static size is the better name for it


def _fitting_axis(shapes: list[Dims], axis: int) -> int | None:
    """The one other axis along which the Concat's inputs would join at every size (they agree on every axis but
    that one, and disagree off ``axis``), when the dims that differ there are unrelated (no symbol in common: a
    cache's length against a sequence's, not a map's height against its halved and doubled self), or ``None``."""
    first = shapes[0]
    differ = [k for k in range(len(first)) if any(s[k].eq(first[k]) is not Tri.YES for s in shapes[1:])]
    if len(differ) != 1 or differ[0] == axis:
        return None
    k = differ[0]
    seen: set[str] = set()
    for s in shapes:
        if not seen.isdisjoint(s[k].symbols):
            return None
        seen |= s[k].symbols
    return k


def _equal(a: Expr, b: Expr) -> Callable[[dict[str, int]], bool]:
    """Whether ``a`` and ``b`` are one size at some sizes of their symbols."""
    return lambda env: a.evaluate(env) == b.evaluate(env)


def _shape_suspects(vals: list[Value]) -> list[Suspect]:
    return [Suspect(o) for v in vals for o in (v.origins or ()) if o is not None][:8]


@register("Unsqueeze")
def _unsqueeze(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    av = input_value(ins, 1)
    raw = (attr_ints(node, "axes") or []) if "axes" in node.attrs else (av.consts if av is not None else None)
    if raw is None:
        return [Value(x.dtype, None)]
    r = len(x.shape) + len(raw)
    axes = sorted(axis_of(node, a, r, "axes") for a in raw)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"Unsqueeze {node.name}: axes {raw} repeat an axis", kind="invalid")
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    it = iter(range(len(x.shape)))
    for k in range(r):
        if k in axes:
            dims.append(Expr.const(1))
            origins.append(_node_origin(node))
        else:
            j = next(it)
            dims.append(x.shape[j])
            # broadcasting aligns from the right: a dim that this node moves to another right-aligned
            # position (a mask unsqueezed on the wrong axis) is placed here, and blamed here
            moved = r - k != len(x.shape) - j and x.shape[j].value != 1
            origins.append(_node_origin(node) if moved else x.origin(j))
    return [Value(x.dtype, tuple(dims), x.data, tuple(origins), x.data_origins)]


@register("Squeeze")
def _squeeze(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    axes = axes_of(node, ins, r)
    if axes is None:
        return [Value(x.dtype, None)]
    if not axes and "axes" not in node.attrs and (len(ins) < 2 or ins[1] is None):
        axes = [k for k, d in enumerate(x.shape) if d.value == 1]
        if any(d.value is None for d in x.shape):
            # which symbolic dims are 1 is not known: the rank is not either
            return [Value(x.dtype, None)]
    for a in axes:
        if x.shape[a].eq(1).name == "NO":
            o = x.origin(a)
            raise ShapeError(
                f"Squeeze {node.name}: axis {a} of {_dims_text(x.shape)} is {x.shape[a]}, not 1",
                axis=a,
                dims=(x.shape[a],),
                suspects=[Suspect(o, x.shape[a].value)] if o else (),
            )
    keep = [k for k in range(r) if k not in axes]
    return [Value(x.dtype, tuple(x.shape[k] for k in keep), x.data, tuple(x.origin(k) for k in keep), x.data_origins)]


@register("Reshape")
def _reshape(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if "shape" in node.attrs:  # opset < 5
        raw = [Expr.const(v) for v in node.attrs["shape"]]
        o = _node_origin(node)
        target = Value("int64", (Expr.const(len(raw)),), tuple(raw), (o,), (o,) * len(raw))
    else:
        target = known(input_value(ins, 1))
    allowzero = attr_int(node, "allowzero", 0)
    return [reshape(node, ctx, x, target, special_zero=not allowzero)]


def _count_said(shape: Dims, total: Expr, ints: Sequence[Expr], known_part: Expr) -> str:
    return f"{_dims_text(shape)} has {total} elements, the target {_dims_text(tuple(ints))} holds {known_part}"


def reshape(node: Node, ctx: Ctx, x: Value, target: Value, *, special_zero: bool) -> Value:
    """Reshape's output: 0 copies the input's dim (``special_zero``), -1 is inferred from the size."""
    ints = target.ints
    if ints is None:
        n = (
            rank_of_length(node, target.shape[0], "the shape input")
            if target.shape and len(target.shape) == 1
            else None
        )
        if n is not None:
            return Value(
                x.dtype, tuple(ctx.fresh(f"{node.name}_{k}") for k in range(n)), None, (_node_origin(node),) * n
            )
        return Value(x.dtype, None)
    dims, origins, minus = _reshape_dims(node, ctx, x, target, ints, special_zero)
    if x.shape is None:
        out = tuple(d if d is not None else ctx.fresh(f"{node.name}_{k}") for k, d in enumerate(dims))
        return Value(x.dtype, out, None, tuple(origins))
    total = numel(x.shape)
    known_part = numel(tuple(d for d in dims if d is not None))
    if minus >= 0:
        dims[minus] = _reshape_inferred(node, ctx, x, target, ints, total, known_part, minus)
    else:
        same = total.eq(known_part)
        said = "" if same is Tri.YES else _count_said(x.shape, total, ints, known_part)
        if same is Tri.NO:
            raise _size_mismatch(node, target, ints, (total, known_part), said)
        if same is Tri.MAYBE:
            d = total - known_part
            if len(d.terms) == 1 and d.terms[0][0] and not any(isinstance(a, Opaque) for a in d.terms[0][0]):
                # they differ by one product of sizes (32*b*s): equal only when a size is 0, and a model
                # reshapes tensors that hold something
                raise _size_mismatch(node, target, ints, (total, known_part), said + ": equal only for an empty tensor")
            require(
                node,
                ctx,
                "reshape-count",
                said,
                lambda env: total.evaluate(env) == known_part.evaluate(env),
                (total, known_part),
                suspects=_target_suspects(target, ints),
            )
    out_dims = tuple(d if d is not None else ctx.fresh(f"{node.name}_{k}") for k, d in enumerate(dims))
    data = x.data if x.data is not None and static_numel(out_dims) == len(x.data) else None
    return Value(x.dtype, out_dims, data, tuple(origins), x.data_origins if data is not None else None)


def _reshape_dims(
    node: Node, ctx: Ctx, x: Value, target: Value, ints: list[Expr], special_zero: bool
) -> tuple[list[Expr | None], list[Origin | None], int]:
    """The target's values as dims before the size is compared: a 0 (``special_zero``) the input's dim, a
    -1 ``None`` (its position is returned, -1 for none), a symbolic or known size as it is; and each dim's
    origin. A second -1, another negative value or a 0 past the input's rank is a :class:`ShapeError`."""
    dims: list[Expr | None] = []
    origins: list[Origin | None] = []
    minus = -1
    for k, e in enumerate(ints):
        v = e.value
        o = target.data_origin(k)
        if v == 0 and special_zero:
            if x.shape is None or k >= len(x.shape):
                if x.shape is None:
                    dims.append(ctx.fresh(f"{node.name}_{k}"))
                    origins.append(_node_origin(node))
                    continue
                raise ShapeError(
                    f"Reshape {node.name}: the target {_dims_text(tuple(ints))} copies dim {k} (a 0) of "
                    f"{_dims_text(x.shape)}, which has no axis {k}",
                    suspects=[Suspect(o, 0)] if o else (),
                    kind="shape-mismatch",
                )
            dims.append(x.shape[k])
            origins.append(x.origin(k))
        elif v == -1:
            if minus >= 0:
                raise ShapeError(
                    f"Reshape {node.name}: the target {_dims_text(tuple(ints))} has two -1",
                    suspects=[Suspect(o, -1)] if o else (),
                    kind="invalid",
                )
            minus = k
            dims.append(None)
            origins.append(_node_origin(node))
        elif v is not None and v < -1:
            raise ShapeError(
                f"Reshape {node.name}: the target {_dims_text(tuple(ints))} holds {v}",
                suspects=[Suspect(o, v)] if o else (),
                kind="invalid",
            )
        else:
            dims.append(e)
            origins.append(o or _node_origin(node))
    return dims, origins, minus


def _reshape_inferred(
    node: Node, ctx: Ctx, x: Value, target: Value, ints: list[Expr], total: Expr, known_part: Expr, minus: int
) -> Expr:
    """The dim a -1 stands for: the input's size over the rest of the target's. A :class:`ShapeError` when it
    is a fraction for every size (both known, or one term over another whose coefficient it does not divide);
    a warning saying for which sizes when it is one for some (over 0: 0 for an empty input, else a fresh
    symbol)."""
    assert x.shape is not None
    onnx = ctx.graph.format == "onnx"
    if known_part.value == 0:
        if onnx:  # onnxruntime and NumPy: "cannot reshape array of size 0 into shape (2,0,newaxis)"
            raise ShapeError(
                f"Reshape {node.name}: the target {_dims_text(tuple(ints))} of {_dims_text(x.shape)} holds no elements "
                "besides its -1, which then cannot be inferred (onnxruntime and NumPy refuse it)",
                suspects=_target_suspects(target, ints),
                kind="reshape-count",
            )
        return Expr.const(0) if total.value == 0 else ctx.fresh(f"{node.name}_{minus}")
    if onnx and _may_be_zero(known_part):
        # the rest of the target is empty at some sizes (a pooling that leaves no rows of a short input): the -1
        # cannot be inferred there, and the model works only from the sizes where it holds something
        require(
            node,
            ctx,
            "reshape-count",
            f"the target {_dims_text(tuple(ints))} of {_dims_text(x.shape)} must hold elements besides its -1 for "
            f"the -1 to be inferred: {known_part} > 0",
            lambda env: known_part.evaluate(env) != 0,
            (known_part,),
            suspects=_target_suspects(target, ints),
            least=True,
        )
    q = total // known_part
    shape = x.shape

    def said() -> str:  # made only for a message: most reshapes divide
        return (
            f"{_dims_text(shape)} ({total} elements) cannot be reshaped to {_dims_text(tuple(ints))}: {total} is "
            f"not a multiple of {known_part}"
        )

    if total.value is not None and known_part.value is not None:
        if total.value % known_part.value:
            raise _size_mismatch(node, target, ints, (total, known_part), said())
        return q
    if (q * known_part).eq(total) is Tri.YES:
        return q
    if len(total.terms) == 1 and len(known_part.terms) == 1 and total.terms[0][0] == known_part.terms[0][0]:
        a, b = total.terms[0][1], known_part.terms[0][1]
        if b and a % b:  # 32*b*s over 24*b*s: a fraction for every non-empty input
            raise _size_mismatch(node, target, ints, (total, known_part), said() + " for any non-empty input")

    def divides(env: dict[str, int]) -> bool:
        k = known_part.evaluate(env)
        return k == 0 or total.evaluate(env) % k == 0

    require(
        node,
        ctx,
        "reshape-count",
        f"{_dims_text(x.shape)} ({total} elements) is reshaped to {_dims_text(tuple(ints))}: {total} must be a "
        f"multiple of {known_part}",
        divides,
        (total, known_part),
        suspects=_target_suspects(target, ints),
    )
    return q


def _may_be_zero(e: Expr) -> bool:
    """Whether the product of sizes ``e`` may be 0 at some sizes: not where it is a sum of products of symbols (each
    at least 1) with positive coefficients, but where it holds a floor, a ceiling, a min or a difference."""
    if e.value is not None:
        return e.value == 0
    return any(c <= 0 or any(isinstance(a, Opaque) for a in m) for m, c in e.terms)


def _size_mismatch(node: Node, target: Value, ints: list[Expr], sizes: tuple[Expr, Expr], message: str) -> ShapeError:
    """A Reshape whose input's size and target's disagree (``sizes``: the two): the error blames the target's
    sizes, where they were made."""
    return ShapeError(
        f"Reshape {node.label}: {message}", dims=sizes, suspects=_target_suspects(target, ints), kind="reshape-count"
    )


def _target_suspects(target: Value, ints: list[Expr]) -> list[Suspect]:
    out = []
    for k, e in enumerate(ints):
        o = target.data_origin(k)
        if o is not None and e.value is not None and e.value not in (0, -1):
            out.append(Suspect(o, e.value))
    return out


@register("Flatten")
def _flatten(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, (ctx.fresh(f"{node.name}_0"), ctx.fresh(f"{node.name}_1")))]
    r = len(x.shape)
    axis = attr_int(node, "axis", 1)
    if not -r <= axis <= r:
        raise ShapeError(f"Flatten {node.name}: axis {axis} is out of range for rank {r}", kind="invalid")
    axis %= r + 1
    return [Value(x.dtype, (numel(x.shape[:axis]), numel(x.shape[axis:])))]


@register("Transpose")
def _transpose(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    perm = attr_ints(node, "perm") or list(range(r - 1, -1, -1))
    if sorted(perm) != list(range(r)):
        raise ShapeError(
            f"Transpose {node.name}: perm {perm} is not a permutation of the {r} axes of {_dims_text(x.shape)}",
            kind="invalid",
        )
    grid = static_dims(x) if x.data is not None else None  # only a small value is rearranged
    got = rearranged(x, grid, lambda arr: arr.transpose(perm)) if grid is not None else None
    data, data_origins = got if got is not None else (None, None)
    shape, origins = x.shape, origins_of(x)
    return [Value(x.dtype, tuple([shape[p] for p in perm]), data, tuple([origins[p] for p in perm]), data_origins)]


@register("Tile")
def _tile(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, reps = known(ins[0]), known(input_value(ins, 1))
    if x.shape is None:
        return [Value(x.dtype, None)]
    ints = reps.ints
    if ints is None:
        return [Value(x.dtype, tuple(ctx.fresh(f"{node.name}_{k}") for k in range(len(x.shape))))]
    if len(ints) != len(x.shape):
        raise ShapeError(
            f"Tile {node.name}: {len(ints)} repeats for the {len(x.shape)} axes of {_dims_text(x.shape)}",
            kind="shape-mismatch",
        )
    return [Value(x.dtype, tuple(d * k for d, k in zip(x.shape, ints, strict=True)))]


@register("ConstantOfShape")
def _constant_of_shape(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    target = known(ins[0])
    v = node.attrs.get("value")
    dtype = v.dtype if isinstance(v, Value) else "float32"
    dv = dims_from_value(node, target, "the shape")
    if dv is None:
        n = (
            rank_of_length(node, target.shape[0], "the shape input")
            if target.shape and len(target.shape) == 1
            else None
        )
        if n is not None:
            return [Value(dtype, tuple(ctx.fresh(f"{node.name}_{k}") for k in range(n)))]
        return [Value(dtype, None)]
    dims, origins = dv
    data = None
    n = static_numel(dims)
    if isinstance(v, Value) and v.data and n is not None and n <= DATA_LIMIT:
        data = (v.data[0],) * n
    first = v.data[0] if isinstance(v, Value) and v.data else 0.0  # ONNX's default value: a float32 zero
    note_fill(ctx, node, first.value if isinstance(first, Expr) else first)
    return [Value(dtype, dims, data, origins, (_node_origin(node),) * n if data is not None and n else None)]


@register("Range")
def _range(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    start, limit, delta = (known(input_value(ins, k)) for k in range(3))
    dtype = start.dtype
    s, lim, d = (v.data[0] if v.data else None for v in (start, limit, delta))
    if isinstance(s, Expr) and isinstance(lim, Expr) and isinstance(d, Expr) and d.value not in (None, 0):
        step = int(d.value or 1)
        if s.value is not None and lim.value is not None:
            n = max(0, -((s.value - lim.value) // step))  # ceil((limit - start) / delta)
            data = tuple(Expr.const(s.value + k * step) for k in range(n)) if n <= DATA_LIMIT else None
            return [Value(dtype, (Expr.const(n),), data)]
        length = (lim - s) if step == 1 else (lim - s).ceildiv(step)
        return [Value(dtype, (length,))]
    if all(isinstance(x, (int, float, Expr)) and _num(x) is not None for x in (s, lim, d)) and _num(d):
        n = max(0, math.ceil((_num(lim) - _num(s)) / _num(d)))
        return [Value(dtype, (Expr.const(n),))]
    return [Value(dtype, (ctx.fresh(f"{node.name}_n"),))]


def _num(x: Any) -> Any:
    return x.value if isinstance(x, Expr) else x


@register("Split")
def _split(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    n_out = len(node.outputs)
    if x.shape is None:
        return [Value(x.dtype, None) for _ in range(n_out)]
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", 0), r)
    sizes: list[Expr] | None
    sv = input_value(ins, 1)
    if "split" in node.attrs:
        sizes = [Expr.const(v) for v in node.attrs["split"]]
        origins: list[Origin | None] = [_node_origin(node)] * len(sizes)
    elif sv is not None:
        sizes = known(sv).ints
        origins = [sv.data_origin(k) for k in range(len(sizes or ()))]
    else:
        sizes = None
    size = x.shape[axis]
    said = f"axis {axis} of {_dims_text(x.shape)} is {size}"
    axis_suspect = suspects_of((x.origin(axis), size))
    if sizes is None and sv is not None:
        sizes = [ctx.fresh(f"{node.name}_{k}") for k in range(n_out)]
    elif sizes is None and "num_outputs" in node.attrs:  # opset 18: equal parts, the last one smaller
        parts = attr_int(node, "num_outputs", n_out)
        if parts <= 0:
            raise ShapeError(f"Split {node.label}: num_outputs {parts} must be positive", kind="invalid")
        chunk = size.ceildiv(parts)
        last = size - chunk * (parts - 1)
        sizes = [chunk] * (parts - 1) + [last]
        _split_last(node, ctx, size, parts, last, said, axis, axis_suspect)
    elif sizes is None:  # before opset 18: equal parts, every one
        sizes = [size // n_out] * n_out
        _split_equal(node, ctx, size, n_out, said, axis, axis_suspect)
    else:
        _split_sizes(node, ctx, sizes, origins, size, said, axis, axis_suspect, n_out)
    outs = []
    for s in sizes[:n_out]:
        dims = list(x.shape)
        dims[axis] = s
        outs.append(
            Value(x.dtype, tuple(dims), None, tuple(x.origin(k) if k != axis else _node_origin(node) for k in range(r)))
        )
    return split_data(x, axis, outs)


def split_data(x: Value, axis: int, parts: Sequence[Value]) -> list[Value]:
    """``parts``, the outputs of a split of ``x`` along ``axis`` in order, each given its piece of ``x``'s small
    value where that is known and the parts' sizes add up to the axis (a shape split into its dims, a padding
    split into its begins and ends)."""
    grid = static_dims(x)
    sizes: list[int] = []
    for p in parts:
        v = p.shape[axis].value if p.shape is not None and len(p.shape) > axis else None
        if v is None:
            return list(parts)
        sizes.append(v)
    if x.data is None or grid is None or sum(sizes) != grid[axis]:
        return list(parts)
    got: list[Value] = []
    start = 0
    for part, size in zip(parts, sizes, strict=True):
        end = start + size
        piece = rearranged(x, grid, lambda arr, a=start, b=end: arr[(slice(None),) * axis + (slice(a, b),)])
        got.append(part if piece is None else replace(part, data=piece[0], data_origins=piece[1]))
        start = end
    return got


def _split_sizes(
    node: Node,
    ctx: Ctx,
    sizes: list[Expr],
    origins: list[Origin | None],
    size: Expr,
    said: str,
    axis: int,
    axis_suspect: list[Suspect],
    n_out: int,
) -> None:
    """Split's given sizes: one per output, adding up to the axis (an error when they cannot, a warning
    saying for which sizes when they may not)."""
    parts = _dims_text(tuple(sizes))
    sus = [*(Suspect(o, e.value) for o, e in zip(origins, sizes, strict=False) if o is not None), *axis_suspect]
    if len(sizes) != n_out:
        raise ShapeError(
            f"Split {node.label}: the parts {parts} are {len(sizes)} sizes for {n_out} outputs",
            dims=(len(sizes), n_out),
            suspects=sus,
            kind="split-sizes",
        )
    total = Expr.const(0)
    for e in sizes:
        total = total + e
    t = total.eq(size)
    if t is Tri.NO:
        raise ShapeError(
            f"Split {node.label}: the parts {parts} add up to {total}, but {said}",
            axis=axis,
            dims=(total, size),
            suspects=sus,
            kind="split-sizes",
        )
    if t is Tri.MAYBE:
        require(
            node,
            ctx,
            "split-sizes",
            f"the parts {parts} add up to {total}, {said}: it needs {total} == {size}",
            lambda env: total.evaluate(env) == size.evaluate(env),
            (total, size),
            axis=axis,
            suspects=sus,
        )


def _split_equal(node: Node, ctx: Ctx, size: Expr, n: int, said: str, axis: int, axis_suspect: list[Suspect]) -> None:
    """Split into ``n`` equal parts (before opset 18): the axis must be a multiple of ``n``."""
    v = size.value
    what = f"{said}, which must split into {n} equal parts"
    if v is not None:
        if v % n:
            raise ShapeError(
                f"Split {node.label}: {what}", axis=axis, dims=(size, n), suspects=axis_suspect, kind="split-sizes"
            )
        return
    if (size // n * n).eq(size) is not Tri.YES:
        require(
            node,
            ctx,
            "split-sizes",
            what,
            lambda env: size.evaluate(env) % n == 0,
            (size,),
            axis=axis,
            suspects=axis_suspect,
        )


def _split_last(
    node: Node, ctx: Ctx, size: Expr, parts: int, last: Expr, said: str, axis: int, axis_suspect: list[Suspect]
) -> None:
    """``num_outputs`` parts of ``ceil(size/parts)``, the last what is left: onnxruntime refuses an axis too
    short to leave the last part 0 or more (5 in 4 parts of 2)."""
    what = f"{said}: {parts} parts of {size.ceildiv(parts)} leave {last} for the last one"
    lv = last.value
    if lv is not None:
        if lv < 0:
            raise ShapeError(
                f"Split {node.label}: {what}", axis=axis, dims=(size, parts), suspects=axis_suspect, kind="split-sizes"
            )
        return
    lo = last.lo
    if lo is None or lo < 0:
        require(
            node,
            ctx,
            "split-sizes",
            what,
            lambda env: last.evaluate(env) >= 0,
            (size,),
            axis=axis,
            suspects=axis_suspect,
        )


_REDUCE = [
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


@register(*_REDUCE)
def _reduce(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    axes = axes_of(node, ins, r)
    keep = attr_int(node, "keepdims", 1)
    if axes is None:
        return [Value(x.dtype, None if not keep else tuple(ctx.fresh(f"{node.name}_{k}") for k in range(r)))]
    if not axes:
        axes = [] if attr_int(node, "noop_with_empty_axes", 0) else list(range(r))
    data = None
    if node.op in ("ReduceProd", "ReduceSum") and x.ints is not None and len(axes) == r:
        acc = Expr.const(1 if node.op == "ReduceProd" else 0)
        for e in x.ints:
            acc = acc * e if node.op == "ReduceProd" else acc + e
        data = (acc,)
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    for k in range(r):
        if k in axes:
            if keep:
                dims.append(Expr.const(1))
                origins.append(_node_origin(node))
        else:
            dims.append(x.shape[k])
            origins.append(x.origin(k))
    return [Value(x.dtype, tuple(dims), data, tuple(origins), (_node_origin(node),) if data else None)]


@register("ArgMax", "ArgMin")
def _argmax(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if x.shape is None:
        return [Value("int64", None)]
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", 0), r)
    keep = attr_int(node, "keepdims", 1)
    dims = [Expr.const(1) if k == axis else d for k, d in enumerate(x.shape) if keep or k != axis]
    return [Value("int64", tuple(dims))]


@register("NonZero")
def _nonzero(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    rank: Expr = Expr.const(len(x.shape)) if x.shape is not None else ctx.fresh(f"{node.name}_rank")
    count = nonzero_count(ctx, node.inputs[0], x)
    return [Value("int64", (rank, count if count is not None else ctx.fresh(f"{node.name}_count", free=True)))]


@register("EyeLike")
def _eyelike(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    dt = node.attrs.get("dtype")
    return [Value(dtype_name(int(dt)) if dt is not None else x.dtype, x.shape, None, x.origins)]


__all__ = ["emax", "emin", "rearranged", "reshape", "slice_bounds", "static_dims"]
