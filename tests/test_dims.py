"""Dim and Shape: parsing, printing, comparison with tuples, three-valued questions."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bcast import BroadcastError, Dim, Shape, Tri


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("[2,?,1..8,4..,N]", "[2,?,1..8,4..,N]"),
        ("[...]", "[...]"),
        ("[]", "[]"),
        ("()", "[]"),
        ("(3,)", "[3]"),
        ("[ 2 , 3 ]", "[2,3]"),
        ("2,3", "[2,3]"),
        ("[-1,3]", "[?,3]"),
        ("[0..5]", "[0..5]"),
        ("[..5]", "[0..5]"),  # OpenVINO prints 0..5 as ..5
        ("[0..]", "[?]"),
        ("[3..3]", "[3]"),
        ("[batch,seq_len]", "[batch,seq_len]"),
        ("[N|M]", "[M|N]"),  # a derived symbol: its atoms, sorted
    ],
)
def test_parse_and_print(text: str, printed: str) -> None:
    s = Shape.parse(text)
    assert str(s) == printed
    assert Shape.parse(str(s)) == s


def test_api_md_examples() -> None:
    s = Shape.parse("[2,?,1..8,4..,N]")
    assert s.rank == 5 and not s.is_static
    assert Shape.parse("[...]").rank is None
    assert Shape.parse("[]").rank == 0 and Shape.parse("[]").is_static
    assert Shape((2, 3)) == Shape.parse("[2,3]") == (2, 3)
    assert tuple(Shape.parse("[2,3]")) == (2, 3)
    assert all(isinstance(d, int) for d in Shape.parse("[2,3]"))
    assert all(isinstance(d, Dim) for d in Shape.parse("[2,3]"))


def test_static_dims_are_ints() -> None:
    d = Dim(3)
    assert d == 3 and isinstance(d, int) and d.is_static and d.value == 3
    assert hash(d) == hash(3) and {d: "x"}[3] == "x"
    assert d + 1 == 4 and repr(d) == "3"
    assert np.zeros(Shape("[2,3]")).shape == (2, 3)


def test_non_static_dims() -> None:
    assert Dim("?") == Dim(-1) == Dim.dynamic()
    assert Dim("?") != Dim(0) and Dim("N") != Dim(3)  # dim against dim; against a size see below
    assert Dim(2, 5) == Dim("2..5") and Dim(2, None) == Dim("2..")
    assert Dim("N").is_symbolic and not Dim("?").is_symbolic
    assert (Dim("2..5").lo, Dim("2..5").hi) == (2, 5)
    assert repr(Dim("1..8")) == "Dim('1..8')"
    with pytest.raises(TypeError, match="not static"):
        int(Dim("?"))


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("3", "3", Tri.YES),
        ("3", "4", Tri.NO),
        ("?", "3", Tri.MAYBE),
        ("2..5", "3", Tri.MAYBE),
        ("2..5", "6", Tri.NO),
        ("2..5", "6..", Tri.NO),
        ("N", "N", Tri.YES),
        ("N", "M", Tri.MAYBE),
        ("N", "4", Tri.MAYBE),
        ("?", "?", Tri.MAYBE),
    ],
)
def test_three_valued_equality(a: str, b: str, want: Tri) -> None:
    assert Dim(a).eq(Dim(b)) is want
    assert Dim(b).eq(Dim(a)) is want


def test_tri_refuses_to_be_a_bool() -> None:
    with pytest.raises(TypeError, match="three-valued"):
        bool(Dim("?").eq(3))
    assert (Tri.YES & Tri.MAYBE) is Tri.MAYBE and (Tri.NO | Tri.MAYBE) is Tri.MAYBE and ~Tri.YES is Tri.NO


def test_shape_sequence_protocol() -> None:
    s = Shape("[2,?,N]")
    assert len(s) == 3 and s[0] == 2 and s[-1] == Dim("N")
    assert s[1:] == Shape("[?,N]")
    assert s.symbols == ("N",)
    assert s.bind({"N": 7}) == Shape("[2,?,7]")
    with pytest.raises(TypeError, match="dynamic rank"):
        len(Shape("[...]"))
    with pytest.raises(BroadcastError, match="not static"):
        s.to_tuple()
    assert Shape("[2,3]").num_elements() == 6 and s.num_elements() is None


def test_shape_equality_and_hash() -> None:
    assert Shape("[2,3]") == [2, 3]
    assert Shape("[2,3]") != (2, 3, 1)
    assert Shape("[2,?]") == (2, Dim("?"))
    assert Shape("[2,?]") != (2, -1) and Shape("[2,?]") == (2, "?")
    assert Shape("[...]") != ()
    assert hash(Shape("[2,3]")) == hash((2, 3))
    assert len({Shape("[N,2]"), Shape("[N,2]")}) == 1


@pytest.mark.parametrize("text", ["[2,?,1..8,4..,N]", "[...]", "[]", "[M|N,3]"])
def test_pickle_round_trip(text: str) -> None:
    s = Shape(text)
    assert pickle.loads(pickle.dumps(s)) == s
    for d in s.dims if s.rank is not None else ():
        assert pickle.loads(pickle.dumps(d)) == d


def test_shapes_from_arrays_and_numpy_ints() -> None:
    assert Shape(np.array([2, 3])) == (2, 3)
    assert Shape((np.int64(2), np.uint8(3))) == (2, 3)
    assert Shape(np.array([], dtype=np.int64)) == ()
    assert Shape(5) == (5,)


def test_intersect_and_hull() -> None:
    assert Dim("2..5").intersect(Dim("3..8")) == Dim("3..5")
    assert Dim("2..3").intersect(Dim("5..8")) is None
    assert Dim("2..3").hull(Dim("5..8")) == Dim("2..8")
    assert Dim("?").intersect(Dim(4)) == 4
    assert Dim("N").may_be(0) and not Dim("2..3").may_be(1)


@pytest.mark.parametrize("text", ["N", "?", "2..4", "1..", "N|M"])
@pytest.mark.parametrize("size", [0, 1, 3, np.int64(1)])
def test_an_unknown_dim_against_a_size_is_no_silent_false(text: str, size: int) -> None:
    """``Shape.parse("[N]")[0] == 1`` has no yes-or-no answer: a TypeError pointing at the three-valued eq."""
    d = Shape.parse(f"[{text}]")[0]
    with pytest.raises(TypeError, match=r"dim\.eq\(") as e:
        _ = d == size
    assert text.split("|")[0] in str(e.value)
    with pytest.raises(TypeError, match=r"dim\.eq\("):
        _ = size == d  # the reflected comparison too
    with pytest.raises(TypeError, match=r"dim\.eq\("):
        _ = d != size
    assert d.eq(size) in (Tri.MAYBE, Tri.NO)  # the question asked the right way has an answer


def test_dims_still_compare_as_dims_and_static_dims_as_ints() -> None:
    n, three = Shape.parse("[N]")[0], Shape.parse("[3]")[0]
    assert n == Shape.parse("[N]")[0] and n != three and three != n  # dim against dim: what they are
    assert three == 3 and 3 == three and three != 4  # noqa: SIM300 - the reflected comparison is the point
    assert n != "N" and n is not None and (n == True) is False  # noqa: E712 - a bool is no size
