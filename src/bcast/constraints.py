"""What symbolic dims must satisfy for a broadcast to hold.

A rule that meets a symbol it cannot decide (``N`` against ``4``) does not guess:
it records a :class:`Constraint` (``N in {1, 4}``) and goes on. A plan's
:class:`Constraints` are checked for contradictions as they are collected, so a
plan that no value of its symbols could satisfy is an error, not a plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .dims import Dim

__all__ = ["Constraint", "Constraints", "size_ranges"]

Kind = Literal["in", "equal", "broadcast", "unidirectional"]

# A set of sizes, as sorted disjoint closed intervals (hi None = unbounded).
_Ranges = tuple[tuple[int, int | None], ...]


@dataclass(frozen=True)
class Constraint:
    """One requirement on symbolic dims.

    ``kind``:

    ``"in"``              ``symbols[0]`` takes one of ``allowed`` (static sizes or intervals)
    ``"equal"``           ``symbols[0] == symbols[1]``
    ``"broadcast"``       the two are equal or either is 1 (multidirectional); with more than
                          two symbols (many operands meeting on one axis), every one of
                          them is 1 or one common size
    ``"unidirectional"``  ``symbols[0]`` (data) is 1 or equals ``symbols[1]`` (target)

    ``axis`` is the output axis where the requirement arose, ``mode`` the rule.

    >>> str(Constraint("in", ("N",), (Dim(1), Dim(4))))
    'N in {1, 4}'
    """

    kind: Kind
    symbols: tuple[str, ...]
    allowed: tuple[Dim, ...] = ()
    axis: int | None = field(default=None, compare=False)
    mode: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        a = self.symbols[0]
        if self.kind == "in":
            return f"{a} in {{{', '.join(str(d) for d in self.allowed)}}}"
        if self.kind == "broadcast" and len(self.symbols) > 2:
            return f"each of {', '.join(self.symbols)} is 1 or one common size"
        b = self.symbols[1]
        if self.kind == "equal":
            return f"{a} == {b}"
        if self.kind == "broadcast":
            return f"{a} == {b} or {a} == 1 or {b} == 1"
        return f"{a} == 1 or {a} == {b}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "symbols": list(self.symbols),
            "allowed": [str(d) for d in self.allowed],
            "axis": self.axis,
            "mode": self.mode,
            "text": str(self),
        }


def size_ranges(dims: Iterable[Dim]) -> _Ranges:
    """The sizes ``dims`` allow together, as sorted, disjoint ``(lo, hi)`` spans (``hi`` ``None``: unbounded)."""
    return _merged(sorted(((d.lo, d.hi) for d in dims), key=lambda r: r[0]))


def _merged(spans: Iterable[tuple[int, int | None]]) -> _Ranges:
    """Spans sorted by their lower bound, overlapping and adjacent ones merged."""
    out: list[tuple[int, int | None]] = []
    for lo, hi in spans:
        if out:
            plo, phi = out[-1]
            if phi is None or lo <= phi + 1:
                out[-1] = (plo, None if phi is None or hi is None else max(phi, hi))
                continue
        out.append((lo, hi))
    return tuple(out)


def _intersect(a: _Ranges, b: _Ranges) -> _Ranges:
    """The sizes in both sets: one merge pass over the two sorted lists (linear, not |a| x |b|)."""
    out: list[tuple[int, int | None]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        (alo, ahi), (blo, bhi) = a[i], b[j]
        lo = max(alo, blo)
        hi = bhi if ahi is None else ahi if bhi is None else min(ahi, bhi)
        if hi is None or lo <= hi:
            out.append((lo, hi))
        # drop whichever range ends first; the other may still meet the next one
        if ahi is not None and (bhi is None or ahi < bhi):
            i += 1
        elif bhi is not None and (ahi is None or bhi < ahi):
            j += 1
        else:
            i += 1
            j += 1
    return _merged(out)


def _dims_of(r: _Ranges) -> tuple[Dim, ...]:
    return tuple(Dim.interval(lo, hi) for lo, hi in r)


class Constraints(tuple[Constraint, ...]):
    """The constraints of a plan: a tuple of :class:`Constraint`, readable as text.

    >>> c = Constraints([Constraint("in", ("N",), (Dim(1), Dim(4)))])
    >>> print(c)
    N in {1, 4}
    >>> c.allowed("N")
    (1, 4)
    """

    def __new__(cls, items: Iterable[Constraint] = ()) -> Constraints:
        if type(items) is Constraints:  # already unique (and maybe already indexed)
            return items
        unique: dict[Constraint, Constraint] = {}
        for c in items:
            unique.setdefault(c, c)
        return super().__new__(cls, unique.values())

    def __setattr__(self, name: str, value: object) -> None:
        # shared by every cached plan with these constraints: a change would reach other callers
        raise AttributeError(f"Constraints are immutable: cannot set {name!s:.60}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Constraints are immutable: cannot delete {name!s:.60}")

    def _index(self) -> dict[str, list[Constraint]]:
        """The ``in`` constraints of each symbol, gathered once (so no question rescans the whole tuple)."""
        index: dict[str, list[Constraint]] | None = self.__dict__.get("_by_symbol")
        if index is None:
            index = {}
            for c in self:
                if c.kind == "in":
                    index.setdefault(c.symbols[0], []).append(c)
            self.__dict__["_by_symbol"] = index
        return index

    def __str__(self) -> str:
        return "\n".join(str(c) for c in self) if self else "(none)"

    def __repr__(self) -> str:
        return f"Constraints([{', '.join(repr(str(c)) for c in self)}])"

    @property
    def symbols(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for c in self:
            for s in c.symbols:
                seen.setdefault(s)
        return tuple(seen)

    def allowed(self, symbol: str) -> tuple[Dim, ...] | None:
        """The sizes that the ``in`` constraints leave to ``symbol`` (``None``: unconstrained).

        An empty tuple means no size satisfies them all.
        """
        ranges = self._ranges_of(symbol)
        return None if ranges is None else _dims_of(ranges)

    def _ranges_of(self, symbol: str) -> _Ranges | None:
        ranges: _Ranges | None = None
        for c in self._index().get(symbol, ()):
            r = size_ranges(c.allowed)
            ranges = r if ranges is None else _intersect(ranges, r)
            if not ranges:
                break
        return ranges

    def contradiction(self) -> tuple[str, tuple[Constraint, ...]] | None:
        """The first symbol whose ``in`` constraints admit no size, with those constraints.

        Linear in the number of constraints: each is looked at once, through the index.
        """
        index = self._index()
        if not index:
            return None
        for s in self.symbols:
            if s in index and self._ranges_of(s) == ():
                return s, tuple(index[s])
        return None

    def to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self]
