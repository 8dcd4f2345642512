"""The sentences of ``explain``: singular and plural, and output axes of size 1 (which replicate nothing).

An operand or a data that lacks an output axis of size 1 is not replicated along it: a new axis of
size 1 adds no element. Replicated axes are "output axis 0" when there is one, "output axes 0, 2"
when there are several; copies are "1 copy", "2 copies".
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest

import bcast

# -- elementwise plans: which output axes each operand is replicated along ------------------------------

#: shapes -> one sentence per operand
ELEMENTWISE: list[tuple[list[str], list[str]]] = [
    # no replicated axis
    (["[2,3]", "[2,3]"], ["operand 0 is not replicated", "operand 1 is not replicated"]),
    # only new axes of size 1: nothing replicated (the wording the issue reported)
    (["[1]", "[1,1]"], ["operand 0 is not replicated", "operand 1 is not replicated"]),
    (["[3]", "[1,1,3]"], ["operand 0 is not replicated", "operand 1 is not replicated"]),
    # one replicated axis: "axis", singular
    (["[3]", "[2,3]"], ["operand 0 is replicated along output axis 0", "operand 1 is not replicated"]),
    (["[1,3]", "[1,2,3]"], ["operand 0 is replicated along output axis 1", "operand 1 is not replicated"]),
    (["[1]", "[1,1,2]"], ["operand 0 is replicated along output axis 2", "operand 1 is not replicated"]),
    (
        ["[1,3]", "[2,1,1]"],
        ["operand 0 is replicated along output axis 0", "operand 1 is replicated along output axis 2"],
    ),
    (["[3]", "[1,2,3]"], ["operand 0 is replicated along output axis 1", "operand 1 is not replicated"]),
    # two replicated axes: "axes", plural
    (["[3]", "[2,4,3]"], ["operand 0 is replicated along output axes 0, 1", "operand 1 is not replicated"]),
    (
        ["[1,4,5]", "[2,3,1,1]"],
        ["operand 0 is replicated along output axes 0, 1", "operand 1 is replicated along output axes 2, 3"],
    ),
    (["[1,3]", "[2,1,4,3]"], ["operand 0 is replicated along output axes 0, 2", "operand 1 is not replicated"]),
    # size-1 axes mixed with replicated ones: the size-1 ones are left out
    (["[1,1]", "[1,5,1,7]"], ["operand 0 is replicated along output axes 1, 3", "operand 1 is not replicated"]),
    (["[1]", "[1,2,1,1]"], ["operand 0 is replicated along output axis 1", "operand 1 is not replicated"]),
    # symbolic sizes may be more than 1: counted as replicated
    (["[3]", "[N,3]"], ["operand 0 is replicated along output axis 0", "operand 1 is not replicated"]),
]


@pytest.mark.parametrize(("shapes", "sentences"), ELEMENTWISE, ids=[" + ".join(s) for s, _ in ELEMENTWISE])
def test_elementwise_sentences(shapes: list[str], sentences: list[str]) -> None:
    text = bcast.elementwise_plan(*shapes).explain()
    lines = [ln for ln in text.splitlines() if ln.startswith("operand ") and "|" not in ln]
    assert lines == sentences, text


def _rep_cells(text: str, row: str) -> list[bool]:
    """For a coloured table row, whether each cell carries the 'replicated' style (ANSI 33)."""
    line = next(ln for ln in text.splitlines() if re.sub(r"\033\[[0-9;]*m", "", ln).strip().startswith(row))
    cells = line.split("|", 1)[1]
    return [code == "33" for code, _ in re.findall(r"(?:\033\[([0-9;]+)m)?\s*([^\s\033]+)(?:\033\[0m)?", cells)]


@pytest.mark.parametrize(
    ("shapes", "operand", "marked"),
    [
        (["[3]", "[1,2,3]"], 0, [False, True, False]),  # axis 0 has size 1: not marked
        (["[1]", "[1,1]"], 0, [False, False]),
        (["[3]", "[2,4,3]"], 0, [True, True, False]),
    ],
)
def test_elementwise_table_marks_no_size_one_axis(shapes: list[str], operand: int, marked: list[bool]) -> None:
    text = bcast.elementwise_plan(*shapes).explain(colour=True)
    assert _rep_cells(text, f"operand {operand}") == marked


# -- plans of one data: new axes and stretched 1s ---------------------------------------------------------

#: (data, target, plan keywords) -> lines that must be there, lines that must not
PLANS: list[tuple[str, str, dict[str, Any], list[str], list[str]]] = [
    (
        "[16]",
        "[1,16]",
        {"mode": "explicit", "axes_mapping": [1]},
        [
            "output axis 0 (1) is new, of size 1: nothing is replicated along it",
            "nothing is replicated: the output is the data with a new axis of size 1",
        ],
        ["replicated  |", "1 copy", "data replicated"],
    ),
    (
        "[3,1]",
        "[1,1,3,1]",
        {},
        [
            "output axis 0 (1) is new, of size 1: nothing is replicated along it",
            "output axis 1 (1) is new, of size 1: nothing is replicated along it",
            "nothing is replicated: the output is the data with new axes of size 1",
        ],
        ["replicated  |", "1 copy"],
    ),
    (
        "[16,1,1]",
        "[1,16,50,50]",
        {},
        [
            "  replicated  |         ^   ^",
            "data axis 1 (1) -> output axis 2 (50): the 1 is stretched, 50 copies",
            "output axis 0 (1) is new, of size 1: nothing is replicated along it",
        ],
        ["1 copy", "nothing is replicated: the output"],
    ),
    (
        "[3]",
        "[2,3]",
        {},
        ["output axis 0 (2) is new: data replicated, 2 copies", "  replicated  | ^"],
        ["nothing is replicated"],
    ),
    ("[1]", "[5]", {}, ["data axis 0 (1) -> output axis 0 (5): the 1 is stretched, 5 copies"], ["nothing"]),
    ("[1]", "[1]", {}, ["nothing is replicated: the output is the data itself"], ["replicated  |", "copy"]),
    ("[2,3]", "[2,3]", {}, ["nothing is replicated: the output is the data itself"], ["replicated  |"]),
    ("[3]", "[N,3]", {}, ["output axis 0 (N) is new: data replicated, N copies"], ["nothing is replicated"]),
    (
        "[50,50]",
        "[1,50,50,16]",
        {"mode": "explicit", "axes_mapping": [1, 2]},
        [
            "  replicated  |             ^",
            "output axis 0 (1) is new, of size 1: nothing is replicated along it",
            "output axis 3 (16) is new: data replicated, 16 copies",
        ],
        ["1 copy"],
    ),
]


@pytest.mark.parametrize(
    ("data", "target", "kwargs", "present", "absent"), PLANS, ids=[f"{d}->{t}" for d, t, *_ in PLANS]
)
def test_plan_sentences(data: str, target: str, kwargs: dict[str, Any], present: list[str], absent: list[str]) -> None:
    text = bcast.plan(data, target, **kwargs).explain()
    lines = text.splitlines()
    for line in present:
        assert line in lines, f"{line!r} not in\n{text}"
    for words in absent:
        assert words not in text, f"{words!r} in\n{text}"


# -- every sentence, many shapes: the grammar holds everywhere ------------------------------------------

_SHAPES = ["[1]", "[3]", "[1,1]", "[1,3]", "[2,1]", "[2,3]", "[1,1,1]", "[2,1,3]", "[1,2,1]", "[4,2,3]", "[N,1]"]


@pytest.mark.parametrize("a", _SHAPES)
@pytest.mark.parametrize("b", _SHAPES)
def test_grammar_holds_for_every_pair(a: str, b: str) -> None:
    try:
        texts = [bcast.elementwise_plan(a, b).explain()]
    except bcast.BroadcastError:
        return
    with contextlib.suppress(bcast.BroadcastError):
        texts.append(bcast.plan(a, b).explain())
    for text in texts:
        for m in re.finditer(r"output (axis|axes) ([0-9, ]+)", text):
            many = "," in m.group(2).strip().rstrip(",")
            assert m.group(1) == ("axes" if many else "axis"), m.group(0)
        assert not re.search(r"\b1 copies\b|\b(?:[02-9]|\d\d+) copy\b", text), text
        # an output axis of size 1 is never called replicated
        assert not re.search(r"output axis \d+ \(1\) is new: \w+ replicated", text), text
        assert "1 copy" not in text, text


# -- counts of what a long explanation leaves out ---------------------------------------------------------


def test_one_more_line_is_singular() -> None:
    shape = "[" + ",".join(["2"] * 129) + "]"  # 129 lines of prose: 128 shown, 1 left out
    text = bcast.plan(shape, shape).explain()
    assert "... (1 more line) ..." in text
    shape = "[" + ",".join(["2"] * 130) + "]"
    assert "... (2 more lines) ..." in bcast.plan(shape, shape).explain()


def test_one_more_operand_is_singular() -> None:
    assert "... (1 more operand) ..." in bcast.elementwise_plan(*["[3]"] * 65).explain()
    assert "... (2 more operands) ..." in bcast.elementwise_plan(*["[3]"] * 66).explain()
