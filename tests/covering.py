"""Pairwise (all-pairs) covering designs for the large parametrized tables of the tests.

A table is the cross product of a few factors (an operator family, a dtype, a broadcast
pattern, a size, a thread count...), cut down by a rule saying which combinations make
sense. Its pairwise design is a subset of its rows in which every pair of factor values
that occurs together in some row of the table occurs together in at least one row of the
design: a fault that needs two factors to take particular values shows in the design as it
would in the table, at a fraction of the rows.

:func:`pairwise` builds the design greedily and deterministically (the same rows on every
run): each new row starts from the first pair not yet covered and adds, factor by factor,
the value that covers the most pairs not yet covered, among the values for which the rule
still holds. :func:`uncovered` lists what a design misses; the tests assert it is nothing.
:func:`split` turns a table and its design into ``pytest.param``s: the rows of the design as
they are, every other row marked ``full`` (run by ``make test-full``, left out of ``make
test``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

#: a row: one value of each factor, by the factor's name
Row = dict[str, Any]
#: whether a row, or part of one (some factors only), makes sense
Rule = Callable[[Mapping[str, Any]], bool]
#: one covered pair: (factor i, index of its value, factor j, index of its value), i < j
Pair = tuple[int, int, int, int]

#: the mark of the rows that only the full run takes
FULL = pytest.mark.full


def _always(_: Mapping[str, Any]) -> bool:
    return True


def table(factors: Mapping[str, Sequence[Any]], rule: Rule = _always) -> list[Row]:
    """Every row of the cross product of ``factors`` for which ``rule`` holds, in order.

    Built factor by factor: a part of a row that ``rule`` refuses is not extended.
    """
    rows: list[Row] = [{}]
    for name, values in factors.items():
        rows = [row for part in rows for v in values if rule(row := {**part, name: v})]
    return rows


def _positions(factors: Mapping[str, Sequence[Any]]) -> list[dict[Any, int]]:
    """Each factor's values by their place (the values are hashable: strings, numbers, frozen dataclasses)."""
    return [{v: i for i, v in enumerate(values)} for values in factors.values()]


def pairs_of(factors: Mapping[str, Sequence[Any]], rows: Iterable[Mapping[str, Any]]) -> set[Pair]:
    """The pairs of factor values that ``rows`` hold."""
    held: set[Pair] = set()
    places = _positions(factors)
    for row in rows:
        ix = [place[row[name]] for place, name in zip(places, factors, strict=True)]
        held.update((i, ix[i], j, ix[j]) for i, j in itertools.combinations(range(len(ix)), 2))
    return held


def pairwise(
    factors: Mapping[str, Sequence[Any]], rule: Rule = _always, rows: Sequence[Row] | None = None
) -> list[Row]:
    """A pairwise covering design of ``table(factors, rule)``; ``rule`` must accept partial rows.

    ``rule`` is asked about rows that hold only some of the factors (those chosen so far):
    it must hold of every part of a good row, and may refuse a part that no good row
    extends (or accept it: the search then backs out of it). Every pair that some good row
    holds is covered. ``rows``: ``table(factors, rule)``, if the caller has it already.
    """
    names = list(factors)
    values = [list(v) for v in factors.values()]
    n = len(names)
    if n < 2:
        return table(factors, rule)
    todo = pairs_of(factors, table(factors, rule) if rows is None else rows)
    design: list[Row] = []

    def gain(chosen: dict[int, int], k: int, v: int) -> int:
        return sum(((j, vj, k, v) if j < k else (k, v, j, vj)) in todo for j, vj in chosen.items())

    def complete(chosen: dict[int, int], order: Sequence[int]) -> dict[int, int] | None:
        if not order:
            return chosen
        k, rest = order[0], order[1:]
        for v in sorted(range(len(values[k])), key=lambda v: -gain(chosen, k, v)):  # stable: ties keep the order
            row = {**chosen, k: v}
            if rule({names[i]: values[i][x] for i, x in row.items()}):
                done = complete(row, rest)
                if done is not None:
                    return done
        return None

    while todo:
        i, vi, j, vj = min(todo)
        chosen = complete({i: vi, j: vj}, [k for k in range(n) if k not in (i, j)])
        if chosen is None:  # pragma: no cover - the pair came from a good row
            raise ValueError(f"no good row holds {names[i]}={values[i][vi]!r}, {names[j]}={values[j][vj]!r}")
        design.append({names[k]: values[k][chosen[k]] for k in range(n)})
        todo -= {(a, chosen[a], b, chosen[b]) for a, b in itertools.combinations(range(n), 2)}
    return design


def uncovered(factors: Mapping[str, Sequence[Any]], rule: Rule, design: Iterable[Mapping[str, Any]]) -> list[Row]:
    """The pairs (as two-factor rows) that some row of the table holds and no row of ``design``."""
    names = list(factors)
    missing = pairs_of(factors, table(factors, rule)) - pairs_of(factors, design)
    return [{names[i]: factors[names[i]][vi], names[j]: factors[names[j]][vj]} for i, vi, j, vj in sorted(missing)]


def split(
    rows: Sequence[Mapping[str, Any]],
    design: Sequence[Mapping[str, Any]],
    name: Callable[[Mapping[str, Any]], str],
    marks: Callable[[Mapping[str, Any]], list[Any]] = lambda row: [],
) -> list[Any]:
    """A ``pytest.param`` of each row (its values in order, its id ``name(row)``, its ``marks(row)``),
    those outside ``design`` marked ``full`` too."""
    chosen = {tuple(row.values()) for row in design}
    return [
        pytest.param(
            *row.values(), id=name(row), marks=[*marks(row)] if tuple(row.values()) in chosen else [*marks(row), FULL]
        )
        for row in rows
    ]


def one_of_each(
    rows: Sequence[Any], group: Callable[[Any], Any], turn: Callable[[Any], int] = lambda row: 0
) -> list[Any]:
    """One row of each group of ``rows`` (those with the same ``group(row)``), in order: the ``turn``-th
    of the group's rows, counting round, ``turn`` asked of the group's first row. A table of an operator x
    a dtype, grouped by (operator, kind of dtype) and turned by the operator's place, keeps every operator
    with every kind of dtype and, turn by turn, every dtype."""
    groups: dict[Any, list[Any]] = {}
    for row in rows:
        groups.setdefault(group(row), []).append(row)
    return [members[turn(members[0]) % len(members)] for members in groups.values()]


def marked(rows: Sequence[Sequence[Any]], chosen: Sequence[Sequence[Any]], **kwargs: Any) -> list[Any]:
    """A ``pytest.param`` of each row (a tuple of the test's arguments), those not ``chosen`` marked ``full``;
    ``kwargs`` go to every ``pytest.param`` (``id=`` excepted)."""
    keep = {id(row) for row in chosen}
    return [
        pytest.param(*row, **kwargs) if id(row) in keep else pytest.param(*row, marks=FULL, **kwargs) for row in rows
    ]
