"""The three ways two dims meet, shared by every dialect.

* :func:`merge_multi`: either side may be 1 (NumPy multidirectional, bidirectional);
  intervals follow OpenVINO's ``Dimension::broadcast_merge``.
* :func:`merge_uni`: data into target, only the data may be 1 (NumPy one-directional,
  explicit, pdpd).
* :func:`merge_equal`: the two must be the same size (``none``, nGraph ``axes``).

Each returns the output dim and the constraints its symbols must satisfy, or raises
:class:`ClashError`, which a dialect turns into a :class:`~bcast.BroadcastError` that names
the mode, the shapes and the axis.
"""

from __future__ import annotations

from .constraints import Constraint, size_ranges
from .dims import Dim, StaticDim, joined

__all__ = ["ClashError", "Merged", "merge_equal", "merge_multi", "merge_uni"]

Merged = tuple[Dim, tuple[Constraint, ...]]

_NONE: tuple[Constraint, ...] = ()
_ONE = Dim(1)


class ClashError(Exception):
    """Two dims that cannot meet; ``accepted`` says what could have stood there."""

    def __init__(self, accepted: str) -> None:
        super().__init__(accepted)
        self.accepted = accepted


def _in(symbol: Dim, *allowed: Dim) -> tuple[Constraint, ...]:
    """``symbol in allowed``, or nothing when ``allowed`` covers every size."""
    assert symbol.name is not None
    if len(allowed) == 2:
        a, b = allowed
        if isinstance(a, StaticDim) and isinstance(b, StaticDim):  # {1, k}: the usual
            pair: tuple[Dim, ...] = (a,) if a == b else (a, b) if a < b else (b, a)
            return (Constraint("in", (symbol.name,), pair),)
    sizes = tuple(sorted(set(allowed), key=lambda d: (d.lo, d.hi is None, d.hi)))
    if all(d.hi is not None for d in sizes):  # finite sizes never cover every size
        return (Constraint("in", (symbol.name,), sizes),)
    covered = size_ranges(sizes)
    if covered and covered[0] == (0, None):
        return _NONE
    return (Constraint("in", (symbol.name,), sizes),)


def merge_multi(x: Dim, y: Dim) -> Merged:
    """Broadcast two dims against each other (either may be 1)."""
    if isinstance(x, StaticDim):  # static dims are StaticDim (ints)
        if isinstance(y, StaticDim):  # two static dims: the common case
            if x == y or y == 1:
                return x, _NONE
            if x == 1:
                return y, _NONE
            raise ClashError("dims that are equal, or a 1 on either side")
        if x == 1:
            return y, _NONE
    elif isinstance(y, StaticDim) and y == 1:
        return x, _NONE
    if x.name is not None and y.name is not None:
        if x.name == y.name:
            return x, _NONE
        new = joined((x.name, y.name))
        return new, (Constraint("broadcast", (x.name, y.name)),)
    if x.name is not None or y.name is not None:
        s, o = (x, y) if x.name is not None else (y, x)
        if not o.is_static and o.may_be(1):
            # o may be 1, so no size of s is ruled out; the result is unknown.
            return s.hull(o), _NONE
        return o, _in(s, _ONE, o)
    x1, y1 = x.may_be(1), y.may_be(1)
    if x1 and y1:
        return x.hull(y), _NONE
    if x1:
        return y, _NONE
    if y1:
        return x, _NONE
    m = x.intersect(y)
    if m is None:
        raise ClashError("dims that are equal, or a 1 on either side")
    return m, _NONE


def merge_uni(d: Dim, t: Dim) -> Merged:
    """Broadcast the data dim ``d`` into the target dim ``t`` (only ``d`` may be 1)."""
    if isinstance(d, StaticDim):  # static dims are StaticDim (ints)
        if isinstance(t, StaticDim):  # two static dims: the common case
            if d == 1 or d == t:
                return t, _NONE
            raise ClashError("a data dim of 1" if t == 1 else f"a data dim of 1 or {t}")
        if d == 1:
            return t, _NONE
    if d.name is not None and t.name is not None:
        if d.name == t.name:
            return t, _NONE
        return t, (Constraint("unidirectional", (d.name, t.name)),)
    if d.name is not None:
        return t, _in(d, _ONE, t)
    if t.name is not None:
        if d.may_be(1):
            return t, _NONE  # d may turn out to be 1, and then any t will do
        return (d if d.is_static else t), _in(t, d)
    if d.may_be(1):
        return t, _NONE
    m = d.intersect(t)
    if m is None:
        raise ClashError("a data dim of 1" if t.is_static and t.value == 1 else f"a data dim of 1 or {t}")
    return m, _NONE


def merge_equal(a: Dim, b: Dim) -> Merged:
    """Two dims that must be the same size."""
    if isinstance(a, StaticDim) and isinstance(b, StaticDim):  # two static dims: the common case
        if a == b:
            return a, _NONE
        raise ClashError(f"the same size on both sides ({b})")
    if a.name is not None and b.name is not None:
        if a.name == b.name:
            return a, _NONE
        return a, (Constraint("equal", (a.name, b.name)),)
    if a.name is not None or b.name is not None:
        s, o = (a, b) if a.name is not None else (b, a)
        return (o if o.is_static else s), _in(s, o)
    m = a.intersect(b)
    if m is None:
        raise ClashError(f"the same size on both sides ({b})")
    return m, _NONE
