"""Dialect front ends: each turns (shapes, attributes) into the canonical :class:`~bcast.Plan`.

:func:`make_plan` checks the mode and which arguments it takes, then dispatches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dims import MAX_RANK, Shape, ShapeLike, given_text, int_text
from ..engine.cache import NO_KEY, PlanCache, arg_key
from ..errors import BroadcastError, brief
from ..plan import Plan
from ._common import Ctx, axes_text, read_axes, read_shape
from .axes import plan_axes, plan_like
from .bidirectional import plan_bidirectional
from .explicit import plan_explicit
from .legacy import plan_legacy
from .none import plan_none
from .numpy import plan_multidirectional, plan_numpy
from .pdpd import plan_pdpd, read_axis

__all__ = [
    "MODES",
    "PLANS",
    "make_plan",
    "normalize_mode",
    "plan_axes",
    "plan_bidirectional",
    "plan_explicit",
    "plan_legacy",
    "plan_like",
    "plan_multidirectional",
    "plan_none",
    "plan_numpy",
    "plan_pdpd",
    "reject_foreign_args",
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


#: Plans made by :func:`make_plan`, keyed on its exact arguments (see :mod:`bcast.engine.cache`).
PLANS: PlanCache[Plan] = PlanCache(4096)

#: The longest string argument a cache key may hold: longer ones (whitespace-padded shapes) are
#: planned afresh rather than kept alive by the cache.
_KEY_CHARS = 1 << 16


def cache_key(value: object) -> Any:
    """:func:`~bcast.engine.cache.arg_key`, but ``NO_KEY`` at once for an argument too long to be a valid
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
) -> Plan:
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
) -> Plan:
    m = normalize_mode(mode)
    reject_foreign_args(m, axes_mapping=axes_mapping, axis=axis, broadcast_axes=broadcast_axes)
    ctx = Ctx(m, given_text(data_shape), given_text(target_shape))
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
        return plan_explicit(data, target, axes, Ctx(m, ctx.data, ctx.target, extra=f"axes_mapping {axes_text(axes)}"))
    if m in ("pdpd", "legacy"):
        ax = read_axis(axis, m)
        into = plan_pdpd if m == "pdpd" else plan_legacy
        labelled = Ctx(m, ctx.data, ctx.target, extra=f"axis {int_text(ax)}", data_label="B", target_label="A")
        return into(data, target, ax, labelled)
    if m == "axes":
        axes = read_axes(broadcast_axes, "broadcast_axes", m)
        return plan_axes(data, target, axes, Ctx(m, ctx.data, ctx.target, extra=f"broadcast_axes {axes_text(axes)}"))
    # like
    initial = None if broadcast_axes is None else read_axes(broadcast_axes, "initial_broadcast_axes", m)
    extra = f"initial_broadcast_axes {axes_text(initial)}" if initial else ""
    return plan_like(data, target, initial, Ctx(m, ctx.data, ctx.target, extra=extra, target_label="like"))
