"""Dialect front ends: each turns (shapes, attributes) into the canonical :class:`~bcast.alignment.Alignment`.

The only place that knows the modes' names and dispatches on them: :func:`make_plan` for
one operand broadcast into a target (data -> target), :func:`align_elementwise` for the
operands of an elementwise operation; :func:`specialize` and :func:`bind` rebuild an
alignment for concrete shapes or sizes of its symbols.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..alignment import Alignment, ElementwiseAlignment
from ..cache import NO_KEY, PlanCache, arg_key
from ..dims import MAX_RANK, Dim, Shape, ShapeLike, given_text, int_text, shape_text
from ..errors import BroadcastError, brief
from .axes import plan_axes, plan_like
from .bidirectional import plan_bidirectional
from .common import RuleContext, axes_text, check_axes, read_axes, read_shape
from .explicit import plan_explicit
from .legacy import plan_legacy
from .none import plan_none
from .numpy import multidirectional_output, plan_multidirectional, plan_numpy
from .pdpd import plan_pdpd, read_axis

__all__ = [
    "ELEMENTWISE_MODES",
    "MAX_OPERANDS",
    "MODES",
    "OPERATOR_MODES",
    "PLANS",
    "RuleContext",
    "align_elementwise",
    "bind",
    "cache_key",
    "check_axes",
    "make_plan",
    "multidirectional_output",
    "normalize_mode",
    "operator_mode",
    "plan_axes",
    "plan_bidirectional",
    "plan_explicit",
    "plan_legacy",
    "plan_like",
    "plan_multidirectional",
    "plan_none",
    "plan_numpy",
    "plan_pdpd",
    "read_axes",
    "read_axis",
    "read_shape",
    "reject_foreign_args",
    "specialize",
]

#: Each mode and the extra argument it takes (``None``: none).
MODES: dict[str, str | None] = {
    "numpy": None,
    "bidirectional": None,
    "explicit": "axes_mapping",
    "pdpd": "axis",
    "axes": "broadcast_axes",
    "like": "broadcast_axes",
    "none": None,
    "legacy": "axis",
}


def normalize_mode(mode: object, allowed: tuple[str, ...] = tuple(MODES)) -> str:
    if not isinstance(mode, str):
        raise TypeError(
            f"mode must be a string, one of {', '.join(repr(m) for m in allowed)}; "
            f"got {type(mode).__name__} {brief(mode)}"
        )
    mode = mode if type(mode) is str else str.__str__(mode)  # a str subclass: its own methods are not called
    m = mode if len(mode) > 64 else mode.strip().lower()  # no mode is that long: a 10 MB one is not scanned
    if m not in allowed:
        raise BroadcastError(
            f"unknown mode {brief(mode)}; accepted: {', '.join(repr(x) for x in allowed)}",
            accepted=", ".join(repr(x) for x in allowed),
        )
    return m


_DEFAULTS: dict[str, Any] = {"axes_mapping": None, "axis": -1, "broadcast_axes": None}


def _same_int(value: Any, default: int) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and int(value) == default


def reject_foreign_args(mode: str, **given: Any) -> None:
    """A ``TypeError`` for an argument that belongs to another mode than ``mode``."""
    takes = MODES.get(mode)
    for name, value in given.items():
        default = _DEFAULTS[name]
        unused = value is None if default is None else _same_int(value, default)
        if name == takes or unused:
            continue
        owners = " and ".join(repr(k) for k, v in MODES.items() if v == name)
        shown = brief(value) if isinstance(value, (str, bytes)) else given_text(value)
        raise TypeError(
            f"{mode}: mode {brief(mode)} takes no {name} (given {shown}); {name} belongs to mode"
            f"{'s' if ' and ' in owners else ''} {owners}" + ("" if default is None else f" (default {default})")
        )


#: Alignments made by :func:`make_plan`, keyed on its exact arguments (see :mod:`bcast.cache`).
PLANS: PlanCache[Alignment] = PlanCache(4096)

#: The longest string argument a cache key may hold: longer ones (whitespace-padded shapes) are
#: planned afresh rather than kept alive by the cache.
_KEY_CHARS = 1 << 16


def cache_key(value: object) -> Any:
    """:func:`~bcast.cache.arg_key`, but ``NO_KEY`` at once for an argument too long to be a valid
    one (a list of ten million dims is refused by the planner, not copied into a key first)."""
    t = type(value)
    if t is not list and t is not tuple and t is not str:  # only exact types are keyed (no hostile __len__)
        return arg_key(value) if t is int or t is Shape or value is None else NO_KEY
    if len(value) > (_KEY_CHARS if t is str else MAX_RANK):  # type: ignore[arg-type]
        return NO_KEY
    return arg_key(value)


def make_plan(
    data_shape: ShapeLike,
    target_shape: ShapeLike,
    mode: str = "numpy",
    *,
    axes_mapping: Any = None,
    axis: Any = -1,
    broadcast_axes: Any = None,
) -> Alignment:
    """The plan of one broadcast, from the cache when these exact arguments were planned before."""
    key: tuple[Any, ...]
    if axes_mapping is None and broadcast_axes is None and type(axis) is int and axis == -1:
        key = (_mode_key(mode), cache_key(data_shape), cache_key(target_shape))  # the usual call
    else:
        key = (
            _mode_key(mode),
            cache_key(data_shape),
            cache_key(target_shape),
            cache_key(axes_mapping),
            cache_key(axis),
            cache_key(broadcast_axes),
        )
    if NO_KEY in key:
        return _make_plan(data_shape, target_shape, mode, axes_mapping, axis, broadcast_axes)
    p = PLANS.get(key)
    if p is None:
        p = _make_plan(data_shape, target_shape, mode, axes_mapping, axis, broadcast_axes)
        PLANS.put(key, p)
    return p


def _mode_key(mode: object) -> Any:
    return mode if type(mode) is str and len(mode) <= 64 else NO_KEY


def _make_plan(
    data_shape: ShapeLike,
    target_shape: ShapeLike,
    mode: str,
    axes_mapping: Any,
    axis: Any,
    broadcast_axes: Any,
) -> Alignment:
    m = normalize_mode(mode)
    reject_foreign_args(m, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes)
    ctx = RuleContext(m, given_text(data_shape), given_text(target_shape))
    data = read_shape(data_shape, m, (ctx.data, ctx.target))
    target = read_shape(target_shape, m, (ctx.data, ctx.target))
    if m == "numpy":
        return plan_numpy(data, target, ctx)
    if m == "bidirectional":
        return plan_bidirectional(data, target, ctx)
    if m == "none":
        return plan_none(data, target, ctx)
    if m == "explicit":
        axes = read_axes(axes_mapping, "axes_mapping", m)
        return plan_explicit(
            data, target, axes, RuleContext(m, ctx.data, ctx.target, extra=f"axes_mapping {axes_text(axes)}")
        )
    if m in ("pdpd", "legacy"):
        ax = read_axis(axis, m)
        into = plan_pdpd if m == "pdpd" else plan_legacy
        labelled = RuleContext(m, ctx.data, ctx.target, extra=f"axis {int_text(ax)}", data_label="B", target_label="A")
        return into(data, target, ax, labelled)
    if m == "axes":
        axes = read_axes(broadcast_axes, "broadcast_axes", m)
        return plan_axes(
            data, target, axes, RuleContext(m, ctx.data, ctx.target, extra=f"broadcast_axes {axes_text(axes)}")
        )
    # like
    initial = None if broadcast_axes is None else read_axes(broadcast_axes, "initial_broadcast_axes", m)
    extra = f"initial_broadcast_axes {axes_text(initial)}" if initial else ""
    return plan_like(data, target, initial, RuleContext(m, ctx.data, ctx.target, extra=extra, target_label="like"))


#: The modes of an elementwise operation (two or more operands broadcast to one output).
ELEMENTWISE_MODES = ("numpy", "pdpd", "none", "bidirectional", "legacy")

#: The modes of an operator on arrays (:mod:`bcast.ops`): all the elementwise ones but bidirectional.
OPERATOR_MODES = tuple(m for m in ELEMENTWISE_MODES if m != "bidirectional")


def operator_mode(mode: object, operands: int, context: str) -> str:
    """``mode`` as the operator ``context`` on ``operands`` inputs takes it, in lower case.

    ``numpy`` takes any number of operands, the others exactly two. A ``TypeError`` for a
    mode that is no string, a :class:`~bcast.errors.BroadcastError` for one the operator
    does not take, both worded for ``context``.

    >>> operator_mode(" PDPD", 2, "add")
    'pdpd'
    >>> operator_mode("pdpd", 3, "max")
    Traceback (most recent call last):
    ...
    bcast.errors.BroadcastError: max: unknown mode 'pdpd' for 3 inputs; accepted: 'numpy'
    """
    if not isinstance(mode, str):
        raise TypeError(
            f"{context}: mode must be a string, one of {', '.join(map(repr, OPERATOR_MODES))}; got {brief(mode)}"
        )
    m = mode.strip().lower()
    if m not in OPERATOR_MODES or (m != "numpy" and operands != 2):
        allowed = OPERATOR_MODES if operands == 2 else ("numpy",)
        raise BroadcastError(
            f"{context}: unknown mode {mode!r} for {operands} inputs; accepted: {', '.join(map(repr, allowed))}",
            mode=mode,
            accepted=", ".join(allowed),
        )
    return m


#: The most operands one elementwise call takes (NumPy's own ``broadcast_shapes`` takes any number;
#: past this many, a call is a mistake or an attack, refused before any is read).
MAX_OPERANDS = MAX_RANK

#: Elementwise alignments keyed on the exact arguments of :func:`align_elementwise`.
ELEMENTWISE: PlanCache[ElementwiseAlignment] = PlanCache(4096)


def elementwise_key(shapes: tuple[ShapeLike, ...], mode: object, axis: object) -> Any:
    """The cache key of an elementwise call, or ``NO_KEY`` when an argument cannot be keyed exactly."""
    if type(mode) is not str or type(axis) is not int or len(mode) > 64 or len(shapes) > MAX_OPERANDS:
        return NO_KEY
    key: list[Any] = [mode, axis]
    for s in shapes:
        k = cache_key(s)
        if k is NO_KEY:
            return NO_KEY
        key.append(k)
    return tuple(key)


def align_elementwise(shapes: tuple[ShapeLike, ...], mode: str = "numpy", axis: Any = -1) -> ElementwiseAlignment:
    """The operands of an elementwise operation aligned with their output, from the cache when seen before.

    ``numpy`` is multidirectional and takes any number of shapes; ``pdpd``, ``legacy``
    (ONNX opsets 1-6, ``broadcast=1``), ``none`` and ``bidirectional`` take two (A, B), and
    pdpd and legacy broadcast the second into the first at ``axis`` (-1: right-aligned).
    """
    key = elementwise_key(shapes, mode, axis)
    if key is NO_KEY:
        return _align_elementwise(shapes, mode, axis)
    ea = ELEMENTWISE.get(key)
    if ea is None:
        ea = _align_elementwise(shapes, mode, axis)
        ELEMENTWISE.put(key, ea)
    return ea


def _align_elementwise(shapes: tuple[ShapeLike, ...], mode: str, axis: Any) -> ElementwiseAlignment:
    m = normalize_mode(mode, ELEMENTWISE_MODES)
    if m not in ("pdpd", "legacy"):
        reject_foreign_args(m, axis=axis)
    if len(shapes) > MAX_OPERANDS:
        raise BroadcastError(
            f"{m}: {len(shapes):,} shapes given to one elementwise call, more than the {MAX_OPERANDS:,} "
            "it takes (bcast.api.MAX_OPERANDS)",
            mode=m,
            accepted=f"at most {MAX_OPERANDS} operands",
        )
    given = tuple(given_text(s) for s in shapes)
    parsed = tuple(read_shape(s, m, given) for s in shapes)
    if m in ("numpy", "bidirectional") and (m == "numpy" or len(parsed) == 2):
        return plan_multidirectional(parsed, given)
    if len(parsed) != 2:
        raise TypeError(f"{m}: mode {brief(m)} takes exactly 2 shapes (A, B), got {len(parsed)}")
    a, b = parsed
    if m == "none":
        pb = plan_none(b, a, RuleContext(m, given[1], given[0]))
        pa = plan_none(a, pb.output_shape, RuleContext(m, given[0], given[1]))
        out = pb.output_shape
    else:
        ax = read_axis(axis, m)
        into = plan_pdpd if m == "pdpd" else plan_legacy
        pb = into(
            b, a, ax, RuleContext(m, given[1], given[0], extra=f"axis {int_text(ax)}", data_label="B", target_label="A")
        )
        out = pb.output_shape
        pa = plan_none(a, out, RuleContext(m, given[0], shape_text(out)))
    return ElementwiseAlignment(m, parsed, out, (pa, pb), pb.constraints)


def specialize(al: Alignment, data_shape: object) -> Alignment:
    """The same broadcast for data of a concrete shape (binds the alignment's symbols).

    Raises ``BroadcastError`` when the shape is not one the alignment admits.
    """
    concrete = read_shape(data_shape, al.mode, al.given)
    if al.is_static and concrete == al.data_shape:
        return al
    values = _bind_symbols(al, concrete)
    return al.realign(concrete, al.target_shape.bind(values))


def bind(al: Alignment, values: object) -> Alignment:
    """The same broadcast with symbols replaced by sizes, e.g. ``{"N": 8}`` (each size checked)."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{al.mode}: bind takes a dict (mapping) of symbol names to sizes, got {brief(values)}")
    sizes: dict[str, int] = {}
    for name, size in values.items():
        if not isinstance(name, str):
            raise TypeError(f"{al.mode}: bind: symbol names are strings, got {brief(name)}")
        if isinstance(size, (bool, np.bool_)) or not hasattr(size, "__index__"):
            raise TypeError(f"{al.mode}: bind: the size of {name} must be an integer, got {brief(size)}")
        try:
            k = int(Dim.static(size))  # the one check of a size: >= 0 and at most 2**63 - 1
        except BroadcastError as e:
            raise BroadcastError(
                f"{al.mode}: bind: the size given to {name} is out of range: {e}",
                mode=al.mode,
                shapes=al.given,
                dims=(name,),
                accepted=e.accepted,
            ) from None
        sizes[name] = k
    return al.realign(al.data_shape.bind(sizes), al.target_shape.bind(sizes))


def _bind_symbols(al: Alignment, concrete: Shape) -> dict[str, int]:
    """Check that ``concrete`` is a shape the alignment's data admits; return its symbols' sizes."""
    expected = al.data_shape
    if not concrete.is_static:
        raise BroadcastError(
            f"{al.mode}: a concrete data shape is needed to specialise the plan for data {expected}, got {concrete}",
            mode=al.mode,
            shapes=(str(expected), str(concrete)),
            accepted="a shape of known sizes, e.g. the array's .shape",
        )
    if expected.rank is None:
        return {}
    if concrete.rank != expected.rank:
        raise BroadcastError(
            f"{al.mode}: the plan is for data {expected} (rank {expected.rank}); it cannot take "
            f"data of shape {concrete} (rank {concrete.rank})",
            mode=al.mode,
            shapes=(str(expected), str(concrete)),
        )
    values: dict[str, int] = {}
    for i, (e, c) in enumerate(zip(expected.dims, concrete.dims, strict=True)):
        size = int(c)
        if e.name is not None and "|" not in e.name:
            if values.setdefault(e.name, size) == size:
                continue
            why = (
                f"data of shape {concrete} gives the symbol {e.name} two sizes "
                f"({values[e.name]} and {size}, at data axis {i}); the plan is for data {expected}"
            )
        elif e.may_be(size):
            continue
        else:
            why = (
                f"the plan is for data {expected}; data of shape {concrete} has {size} at axis {i}, "
                f"where the plan admits {e}"
            )
        raise BroadcastError(
            f"{al.mode}: {why}", mode=al.mode, shapes=(str(expected), str(concrete)), axis=i, dims=(str(e), str(c))
        )
    return values
