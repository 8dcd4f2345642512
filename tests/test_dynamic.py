"""Dynamic, interval and symbolic dims in every dialect.

Interval outcomes are OpenVINO's ``Dimension::broadcast_merge`` as listed in
docs/reference/openvino.md section 2 (checked there against openvino 2026.4.1).
"""

from __future__ import annotations

import numpy as np
import pytest

import bcast
from bcast import BroadcastError, Dim, Shape

# (x, y, result or None for an error): reference/openvino.md section 2, verbatim.
BROADCAST_MERGE = [
    ("1", "1", "1"),
    ("?", "1", "?"),
    ("0..5", "1", "0..5"),
    ("0..5", "0..6", "0..6"),
    ("1..3", "1..3", "1..3"),
    ("?", "3", "3"),
    ("1..5", "4", "4"),
    ("1..5", "3..8", "3..8"),
    ("0..2", "4..6", "4..6"),
    ("0", "?", "0"),
    ("0", "1", "0"),
    ("2..", "1", "2.."),
    ("2..5", "3..8", "3..5"),
    ("3", "2", None),
    ("2..3", "5..8", None),
    ("0", "3", None),
]


@pytest.mark.parametrize(("x", "y", "want"), BROADCAST_MERGE)
def test_multidirectional_intervals_follow_broadcast_merge(x: str, y: str, want: str | None) -> None:
    for a, b in ((x, y), (y, x)):
        if want is None:
            with pytest.raises(BroadcastError, match="output axis 0"):
                bcast.broadcast_shapes(f"[{a}]", f"[{b}]")
        else:
            assert bcast.broadcast_shapes(f"[{a}]", f"[{b}]") == Shape(f"[{want}]")


@pytest.mark.parametrize(("x", "y", "want"), BROADCAST_MERGE)
def test_bidirectional_intervals_follow_broadcast_merge(x: str, y: str, want: str | None) -> None:
    if want is None:
        with pytest.raises(BroadcastError):
            bcast.infer(f"[{x}]", f"[{y}]", "bidirectional")
    else:
        assert bcast.infer(f"[{x}]", f"[{y}]", "bidirectional") == Shape(f"[{want}]")


def test_symbol_meets_one_and_itself() -> None:
    p = bcast.elementwise_plan("[N,3]", "[1,3]")
    assert p.output_shape == Shape("[N,3]") and not p.constraints
    p = bcast.elementwise_plan("[N,3]", "[N,1]")
    assert p.output_shape == Shape("[N,3]") and not p.constraints


def test_symbol_meets_static_records_constraint() -> None:
    p = bcast.elementwise_plan("[N,3]", "[4,1]")
    assert p.output_shape == Shape("[4,3]")
    (c,) = p.constraints
    assert str(c) == "N in {1, 4}" and c.kind == "in" and c.symbols == ("N",) and c.axis == 0
    assert c.allowed == (1, 4)
    assert p.constraints.allowed("N") == (1, 4)


def test_two_symbols_make_a_new_dim_and_a_link() -> None:
    p = bcast.elementwise_plan("[N]", "[M]")
    (out,) = p.output_shape
    assert out.is_symbolic and out not in (Dim("N"), Dim("M"))
    assert set(out.atoms) == {"N", "M"}
    (c,) = p.constraints
    assert c.kind == "broadcast" and set(c.symbols) == {"N", "M"}
    assert "N == M" in str(c) and "N == 1" in str(c) and "M == 1" in str(c)


def test_constraints_intersect_per_symbol() -> None:
    p = bcast.plan("[N,N]", "[4,5]")  # N in {1,4} and N in {1,5}: N must be 1
    assert p.constraints.allowed("N") == (1,)
    with pytest.raises(BroadcastError, match=r"no size of N satisfies every axis") as e:
        bcast.plan("[4,5]", "[N,N]")  # N == 4 and N == 5
    assert e.value.mode == "numpy"


def test_one_directional_symbols() -> None:
    assert bcast.plan("[N]", "[4]").constraints.allowed("N") == (1, 4)
    assert bcast.plan("[N]", "[1]").constraints.allowed("N") == (1,)
    p = bcast.plan("[4]", "[N]")
    assert p.output_shape == (4,) and p.constraints.allowed("N") == (4,)
    (c,) = bcast.plan("[N]", "[M]").constraints
    assert c.kind == "unidirectional" and str(c) == "N == 1 or N == M"


def test_none_mode_symbols() -> None:
    (c,) = bcast.plan("[N]", "[M]", "none").constraints
    assert str(c) == "N == M"
    assert bcast.plan("[N]", "[4]", "none").output_shape == (4,)


@pytest.mark.parametrize(
    ("mode", "kwargs", "data", "target", "want"),
    [
        ("numpy", {}, "[...]", "[2,3]", "[2,3]"),
        ("numpy", {}, "[3]", "[...]", "[...]"),
        ("bidirectional", {}, "[...]", "[2,3]", "[...]"),
        ("explicit", {"axes_mapping": [1]}, "[...]", "[2,3]", "[2,3]"),
        ("explicit", {"axes_mapping": [1]}, "[3]", "[...]", "[...]"),
        ("pdpd", {}, "[...]", "[2,3]", "[2,3]"),
        ("axes", {"broadcast_axes": [0]}, "[...]", "[2,3]", "[2,3]"),
        ("none", {}, "[...]", "[2,3]", "[2,3]"),
        ("none", {}, "[2,3]", "[...]", "[2,3]"),
    ],
)
def test_dynamic_rank(mode: str, kwargs: dict[str, object], data: str, target: str, want: str) -> None:
    p = bcast.plan(data, target, mode, **kwargs)
    assert p.output_shape == Shape(want)
    assert p.axes_mapping is None or Shape(data).rank is not None


def test_numpy_elementwise_dynamic_rank() -> None:
    assert bcast.broadcast_shapes("[...]", "[2,3]") == Shape("[...]")


def test_one_directional_intervals() -> None:
    assert bcast.infer("[2..3]", "[3]") == (3,)
    assert bcast.infer("[0..5]", "[7]") == (7,)  # the data may be 1
    assert bcast.infer("[4]", "[?]") == (4,)  # a data dim that is not 1 fixes the output
    with pytest.raises(BroadcastError, match=r"data dim 4\.\.5 meets the target dim 3"):
        bcast.infer("[4..5]", "[3]")


def test_execute_symbolic_plan_binds_from_the_array() -> None:
    p = bcast.plan("[N,1]", "[N,4]")
    x = np.arange(3).reshape(3, 1)
    np.testing.assert_array_equal(p(x), np.broadcast_to(x, (3, 4)))
    with pytest.raises(BroadcastError, match="admits 1"):
        p(np.zeros((3, 2)))
    q = bcast.plan("[N,N]", "[N,N]")
    with pytest.raises(BroadcastError, match="two sizes"):
        q(np.zeros((2, 3)))


def test_unknown_output_cannot_be_executed() -> None:
    p = bcast.plan("[3]", "[?,3]")
    with pytest.raises(BroadcastError, match="output axis 0 is \\?"):
        p(np.zeros(3))


def test_maybe_broadcast_axes() -> None:
    p = bcast.plan("[N,3]", "[4,3]")
    assert p.broadcast_axes == () and p.maybe_broadcast_axes == (0,)
    assert "stretched only if N is 1" in p.explain()
