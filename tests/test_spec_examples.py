"""Every worked example of docs/specs, as a table: the expected results are the texts'."""

from __future__ import annotations

import numpy as np
import pytest

import bcast
from tools import reference
from tools.examples import EXAMPLES, Example
from tools.tour import SYMBOL_SIZES, run_example, tour


def _id(ex: Example) -> str:
    args = ",".join(f"{k}={v}" for k, v in ex.kwargs.items())
    return f"{ex.mode}:{'+'.join(ex.shapes)}{':' + args if args else ''}"


def _infer(ex: Example) -> bcast.Shape:
    if ex.kind == "elementwise":
        return bcast.broadcast_shapes(*ex.shapes, mode=ex.mode, **ex.kwargs)
    return bcast.infer(ex.shapes[0], ex.shapes[1], ex.mode, **ex.kwargs)


@pytest.mark.parametrize("ex", EXAMPLES, ids=_id)
def test_example_shape(ex: Example) -> None:
    if ex.expected is None:
        with pytest.raises(bcast.BroadcastError):
            _infer(ex)
    else:
        assert str(_infer(ex)) == ex.expected


def test_every_spec_section_is_covered() -> None:
    counts: dict[str, int] = {}
    for ex in EXAMPLES:
        counts[ex.source] = counts.get(ex.source, 0) + 1
    # The texts list: nGraph 2 (+ the p(C) mapping), Broadcast-1 3 IR + 2 in prose, numpy 11,
    # PDPD 7 (two of them with two spellings of the axis), bidirectional 5, ONNX 5 + 4.
    assert sorted(counts.values()) == sorted([3, 5, 11, 9, 5, 5, 4])


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.values is not None], ids=_id)
def test_ngraph_values_from_the_text(ex: Example) -> None:
    x = np.arange(int(np.prod(bcast.Shape(ex.shapes[0]).to_tuple())))
    got = bcast.broadcast_to(x, ex.shapes[1], ex.mode, **ex.kwargs)
    assert got.tolist() == ex.values


def _multi_numpy() -> list[Example]:
    return [e for e in EXAMPLES if e.kind == "elementwise" and e.mode == "numpy"]


@pytest.mark.parametrize("ex", _multi_numpy(), ids=_id)
def test_multidirectional_examples_symmetric(ex: Example) -> None:
    a, b = ex.shapes
    if ex.expected is None:
        with pytest.raises(bcast.BroadcastError):
            bcast.broadcast_shapes(b, a)
    else:
        assert str(bcast.broadcast_shapes(b, a)) == ex.expected


def _padded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + shape


@pytest.mark.parametrize("ex", [e for e in _multi_numpy() if e.expected is not None], ids=_id)
def test_multidirectional_examples_transposed(ex: Example) -> None:
    # Padded to one rank, reversing every operand's axes reverses the result's.
    a, b = (bcast.Shape(s).to_tuple() for s in ex.shapes)
    r = max(len(a), len(b))
    ta, tb = _padded(a, r)[::-1], _padded(b, r)[::-1]
    want = bcast.Shape(ex.expected or "[]").to_tuple()[::-1]
    assert bcast.broadcast_shapes(ta, tb) == want
    assert np.broadcast_shapes(ta, tb) == want


@pytest.mark.parametrize("ex", [e for e in _multi_numpy() if e.expected is not None], ids=_id)
def test_multidirectional_examples_with_a_zero_dim(ex: Example) -> None:
    # Where an operand has 1 against a larger dim, that larger dim may be 0 instead: the output has 0 there.
    a, b = (list(bcast.Shape(s).to_tuple()) for s in ex.shapes)
    r = max(len(a), len(b))
    pa, pb = _padded(tuple(a), r), _padded(tuple(b), r)
    for k in range(r):
        if pa[k] == 1 and pb[k] > 1:
            zb = (*pb[:k], 0, *pb[k + 1 :])
            got = bcast.broadcast_shapes(pa, zb)
            assert got == np.broadcast_shapes(pa, zb)
            assert got[k] == 0


@pytest.mark.parametrize("ex", [e for e in EXAMPLES if e.mode == "pdpd" and e.expected], ids=_id)
def test_pdpd_examples_values(ex: Example) -> None:
    a, b = (bcast.Shape(s).to_tuple() for s in ex.shapes)
    ep = bcast.elementwise_plan(*ex.shapes, mode="pdpd", **ex.kwargs)
    y = np.arange(int(np.prod(b))).reshape(b)
    got = ep.operands[1](y)
    assert got.shape == a
    np.testing.assert_array_equal(got, reference.pdpd_values(y, a, ex.kwargs["axis"]))


def test_symbolic_openvino_examples_bind() -> None:
    p = bcast.plan("[H,W]", "[N,H,W,C]", "explicit", axes_mapping=[1, 2])
    assert p.broadcast_axes == (0, 3)
    q = p.bind(SYMBOL_SIZES)
    x = np.arange(20).reshape(4, 5)
    np.testing.assert_array_equal(q(x), reference.explicit_values(x, (2, 4, 5, 3), [1, 2]))


@pytest.mark.parametrize("ex", EXAMPLES, ids=_id)
def test_tour_agrees_on_each_example(ex: Example) -> None:
    ok, lines = run_example(ex)
    assert ok, "\n".join(lines)


def test_tour_reports_every_example() -> None:
    import io

    buf = io.StringIO()
    assert tour(buf) == 0
    text = buf.getvalue()
    assert f"{len(EXAMPLES)} of {len(EXAMPLES)} examples agree" in text
    assert text.count(" ok\n") == len(EXAMPLES)
