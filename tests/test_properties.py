"""Property tests: bcast against NumPy as the oracle, and identities between the dialects.

Every expected value is computed with NumPy alone (np.broadcast_shapes, np.broadcast_to,
reshape, np.sum); bcast is only ever the thing under test.
"""

from __future__ import annotations

import itertools
import math
import pickle
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import bcast
from bcast import BroadcastError, Dim, Shape

#: 50 examples a property: with the tables of known corners beside them, enough to find a broken rule
SETTINGS = settings(max_examples=50, deadline=None)
MAX_SIZE = 2000  # elements per array: keeps the whole file fast

# Dims mostly from {0, 1, 2, 3, 5}: 1s stretch, 0s give empty arrays, 2/3/5 clash with each other.
DIM = st.one_of(st.sampled_from((1, 0, 2, 3, 5)), st.integers(0, 7))
SHAPE = st.lists(DIM, max_size=5).map(tuple)
SMALL_SHAPE = SHAPE.filter(lambda s: math.prod(s) <= MAX_SIZE)
SEED = st.integers(0, 2**32 - 1)
LAYOUT = st.sampled_from(("c", "f", "reversed", "strided"))


def mask(n: int) -> st.SearchStrategy[list[bool]]:
    return st.lists(st.booleans(), min_size=n, max_size=n)


def numpy_error(fn: Any, *args: Any) -> Any:
    """NumPy's answer, or None when NumPy raises ValueError."""
    try:
        return fn(*args)
    except ValueError:
        return None


def make_array(shape: tuple[int, ...], layout: str = "c", dtype: Any = np.int64) -> np.ndarray:
    """Distinct values in a given memory layout: bcast must not assume C-contiguous input."""
    size = math.prod(shape)
    if layout == "strided" and shape:
        base = np.arange(2 * size, dtype=dtype).reshape((*shape[:-1], 2 * shape[-1]))
        return base[..., ::2]
    x = np.arange(size, dtype=dtype).reshape(shape)
    if layout == "f":
        return np.array(x, order="F")  # not np.asfortranarray: it turns a 0-d into 1-d
    if layout == "reversed":
        return x[(slice(None, None, -1),) * x.ndim + (Ellipsis,)]  # Ellipsis: a 0-d stays an array
    return x


def assert_identical(got: np.ndarray, expected: np.ndarray) -> None:
    """Same shape, dtype and bits (NaN and -0.0 safe); the same objects for dtype=object."""
    assert isinstance(got, np.ndarray)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    if got.dtype == object:
        assert all(a is b for a, b in zip(got.ravel(), expected.ravel(), strict=True))
    else:
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def sum_to(dy: np.ndarray, aligned: tuple[int, ...], data: tuple[int, ...]) -> np.ndarray:
    """The adjoint by hand: sum dy where the aligned data has a 1 and the output does not."""
    axes = tuple(k for k, (a, o) in enumerate(zip(aligned, dy.shape, strict=True)) if a == 1 and o != 1)
    return np.sum(dy, axis=axes, keepdims=True).reshape(data)


def left_pad(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)


# ---------------------------------------------------------------------------------
# Valid cases for each dialect, with what NumPy needs to check them.


class Case(NamedTuple):
    mode: str
    data: tuple[int, ...]
    target: tuple[int, ...]
    kwargs: dict[str, Any]
    output: tuple[int, ...]  # the expected output shape
    aligned: tuple[int, ...]  # the data reshaped onto the output's axes (1 at each new axis)
    mapping: tuple[int | None, ...] | None  # the expected axes_mapping; None where the spec leaves it open


@st.composite
def numpy_cases(draw: st.DrawFn) -> Case:
    target = draw(SMALL_SHAPE)
    off = len(target) - draw(st.integers(0, len(target)))
    tail = target[off:]
    data = tuple(1 if one else d for one, d in zip(draw(mask(len(tail))), tail, strict=True))
    return Case("numpy", data, target, {}, target, left_pad(data, len(target)), tuple(range(off, len(target))))


@st.composite
def bidirectional_cases(draw: st.DrawFn) -> Case:
    bs = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=5, min_side=0, max_side=5).filter(
            lambda b: math.prod(b.result_shape) <= MAX_SIZE
        )
    )
    (data, target), out = bs.input_shapes, bs.result_shape
    off = len(out) - len(data)
    return Case("bidirectional", data, target, {}, out, left_pad(data, len(out)), tuple(range(off, len(out))))


@st.composite
def explicit_cases(draw: st.DrawFn) -> Case:
    target = draw(SMALL_SHAPE)
    axes = [k for k, keep in enumerate(draw(mask(len(target)))) if keep]
    data = tuple(1 if one else target[a] for one, a in zip(draw(mask(len(axes))), axes, strict=True))
    aligned = [1] * len(target)
    for d, a in zip(data, axes, strict=True):
        aligned[a] = d
    return Case("explicit", data, target, {"axes_mapping": axes}, target, tuple(aligned), tuple(axes))


@st.composite
def pdpd_cases(draw: st.DrawFn) -> Case:
    a = draw(SMALL_SHAPE)
    rank = len(a)
    kept = draw(st.integers(0, rank))
    n_ones = draw(st.integers(0, rank - kept))  # B's trailing 1s; rank(B) <= rank(A)
    right_aligned = draw(st.booleans())
    start = rank - kept - n_ones if right_aligned else draw(st.integers(0, rank - kept))
    core = tuple(1 if one else a[start + i] for i, one in enumerate(draw(mask(kept))))
    b = core + (1,) * n_ones
    aligned = (1,) * start + core + (1,) * (rank - start - kept)
    return Case("pdpd", b, a, {"axis": -1 if right_aligned else start}, a, aligned, None)


@st.composite
def axes_cases(draw: st.DrawFn) -> Case:
    target = draw(SMALL_SHAPE)
    new = draw(mask(len(target)))
    baxes = [k for k, n in enumerate(new) if n]
    keep = tuple(k for k, n in enumerate(new) if not n)
    data = tuple(target[k] for k in keep)
    aligned = tuple(1 if n else d for n, d in zip(new, target, strict=True))
    return Case("axes", data, target, {"broadcast_axes": baxes}, target, aligned, keep)


CASES = {
    "numpy": numpy_cases(),
    "bidirectional": bidirectional_cases(),
    "explicit": explicit_cases(),
    "pdpd": pdpd_cases(),
    "axes": axes_cases(),
}


def pdpd_start(c: Case) -> int:
    return len(c.target) - len(c.data) if c.kwargs["axis"] == -1 else c.kwargs["axis"]


def check_mapping(p: bcast.Plan, c: Case) -> tuple[int | None, ...]:
    """p.axes_mapping as the spec pins it down; for pdpd, B's ignored trailing 1s may sit or be dropped."""
    got = p.axes_mapping
    assert got is not None
    assert len(got) == len(c.data)
    if c.mapping is not None:
        assert tuple(got) == c.mapping
        return c.mapping
    start, kept = pdpd_start(c), len(c.data)
    while kept and c.data[kept - 1] == 1:
        kept -= 1
    for i, a in enumerate(got):
        if i < kept:
            assert a == start + i
        else:  # an ignored trailing 1: on its own axis of A, or dropped (None)
            assert a is None or (a == start + i < len(c.target))
    return tuple(got)


def expected_broadcast_axes(data: tuple[int, ...], out: tuple[int, ...], mapping: tuple[int | None, ...]) -> tuple:
    # API.md: every output axis no data axis maps to, plus mapped axes where a data 1 meets an output dim != 1.
    mapped = {a: i for i, a in enumerate(mapping) if a is not None}
    return tuple(k for k in range(len(out)) if k not in mapped or (data[mapped[k]] == 1 and out[k] != 1))


# ---------------------------------------------------------------------------------
# 1. Multidirectional shapes: bcast.broadcast_shapes == np.broadcast_shapes.


def check_broadcast_shapes(shapes: list[tuple[int, ...]]) -> None:
    expected = numpy_error(np.broadcast_shapes, *shapes)
    if expected is None:
        with pytest.raises(BroadcastError):
            bcast.broadcast_shapes(*shapes)
        return
    got = bcast.broadcast_shapes(*shapes)
    assert isinstance(got, Shape)
    assert got.is_static
    assert got.to_tuple() == expected
    assert got == expected


@SETTINGS
@given(st.lists(SHAPE, min_size=1, max_size=4))
def test_broadcast_shapes_random_shapes_match_numpy(shapes: list[tuple[int, ...]]) -> None:
    check_broadcast_shapes(shapes)


@SETTINGS
@given(
    st.integers(1, 4).flatmap(
        lambda n: hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=5, min_side=0, max_side=5)
    )
)
def test_broadcast_shapes_mutually_broadcastable_match_numpy(bs: Any) -> None:
    # Random shapes mostly clash; these always broadcast, so the success path gets its share.
    assert bcast.broadcast_shapes(*bs.input_shapes).to_tuple() == bs.result_shape
    check_broadcast_shapes(list(bs.input_shapes))


@st.composite
def near_miss_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    """Mutually broadcastable shapes with one dim replaced: the answer hinges on that single dim."""
    n = draw(st.integers(1, 4))
    bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=1, max_dims=5, min_side=0, max_side=5))
    shapes = [list(s) for s in bs.input_shapes]
    j = draw(st.integers(0, n - 1))
    if shapes[j]:
        shapes[j][draw(st.integers(0, len(shapes[j]) - 1))] = draw(DIM)
    return [tuple(s) for s in shapes]


@SETTINGS
@given(near_miss_shapes())
def test_broadcast_shapes_near_misses_match_numpy(shapes: list[tuple[int, ...]]) -> None:
    check_broadcast_shapes(shapes)


@SETTINGS
@given(st.lists(SHAPE, min_size=1, max_size=4).flatmap(lambda s: st.tuples(st.just(s), st.permutations(s))))
def test_broadcast_shapes_is_symmetric(pair: tuple[list[tuple[int, ...]], list[tuple[int, ...]]]) -> None:
    shapes, permuted = pair
    try:
        expected = bcast.broadcast_shapes(*shapes)
    except BroadcastError:
        with pytest.raises(BroadcastError):
            bcast.broadcast_shapes(*permuted)
        return
    assert bcast.broadcast_shapes(*permuted) == expected


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ([()], ()),
        ([(0,), (1,)], (0,)),
        ([(1, 0), (5, 1)], (5, 0)),
        ([(2, 1, 3), (4, 1), (1, 1, 1, 1)], (1, 2, 4, 3)),
        ([(2,), (3,)], None),
        ([(0,), (2,)], None),
        ([(5, 1), (1, 4), (3, 1, 1)], (3, 5, 4)),
    ],
)
def test_broadcast_shapes_table(shapes: list[tuple[int, ...]], expected: tuple[int, ...] | None) -> None:
    # Pin NumPy itself too, so a change of oracle would show.
    assert numpy_error(np.broadcast_shapes, *shapes) == expected
    check_broadcast_shapes(shapes)


# ---------------------------------------------------------------------------------
# 2. One-directional numpy mode: bcast.broadcast_to == np.broadcast_to.


@st.composite
def numpy_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(data, target): mostly valid, some with one dim changed or one axis too many."""
    c = draw(numpy_cases())
    data = list(c.data)
    how = draw(st.sampled_from(("keep", "keep", "dim", "rank")))
    if how == "dim" and data:
        data[draw(st.integers(0, len(data) - 1))] = draw(DIM)
    elif how == "rank":
        data.insert(0, draw(DIM))
    return tuple(data), c.target


PAIRS = st.one_of(numpy_pairs(), st.tuples(SHAPE, SHAPE)).filter(
    lambda p: math.prod(p[0]) <= MAX_SIZE and math.prod(p[1]) <= MAX_SIZE
)


@SETTINGS
@given(PAIRS, LAYOUT)
def test_broadcast_to_matches_numpy(pair: tuple[tuple[int, ...], tuple[int, ...]], layout: str) -> None:
    shape, target = pair
    x = make_array(shape, layout)
    before = x.copy()
    expected = numpy_error(np.broadcast_to, x, target)
    if expected is None:
        with pytest.raises(BroadcastError):
            bcast.broadcast_to(x, target)
        with pytest.raises(BroadcastError):
            bcast.broadcast_to(x, target, copy=True)
        assert_identical(x, before)
        return

    view = bcast.broadcast_to(x, target)
    assert_identical(view, expected)
    assert not view.flags.writeable  # a view must not let the caller write into x
    if x.size and view.size:  # an empty result owns no bytes of x
        assert np.shares_memory(view, x)

    copy = bcast.broadcast_to(x, target, copy=True)
    assert_identical(copy, expected)
    assert copy.flags.writeable
    assert copy.flags.c_contiguous
    assert not np.shares_memory(copy, x)
    assert not np.shares_memory(copy, view)

    assert_identical(x, before)
    assert x.flags.writeable


@pytest.mark.parametrize(
    ("x", "target"),
    [
        (3, (2, 2)),
        ([1, 2, 3], (2, 3)),
        ([[1], [2]], (2, 0)),
        (np.float32(1.5), ()),
        ((1.0, 2.0), (0, 2)),
    ],
)
def test_broadcast_to_accepts_array_likes(x: Any, target: tuple[int, ...]) -> None:
    assert_identical(bcast.broadcast_to(x, target), np.broadcast_to(np.asarray(x), target))
    assert_identical(bcast.broadcast_to(x, target, copy=True), np.broadcast_to(np.asarray(x), target))


@SETTINGS
@given(numpy_cases(), LAYOUT)
def test_materialize_is_a_fresh_c_contiguous_copy(c: Case, layout: str) -> None:
    x = make_array(c.data, layout)
    got = bcast.plan(c.data, c.target).materialize(x)
    assert_identical(got, np.broadcast_to(x, c.target))
    assert got.flags.writeable
    assert got.flags.c_contiguous
    assert not np.shares_memory(got, x)


# ---------------------------------------------------------------------------------
# 3. Backward: the adjoint is a sum over the broadcast axes.


@SETTINGS
@given(numpy_cases(), SEED, st.sampled_from((np.float64, np.float32, np.int64, np.complex128)))
def test_numpy_backward_is_an_explicit_sum(c: Case, seed: int, dtype: Any) -> None:
    # Small integer values: every summation order gives the same exact result.
    dy = np.random.default_rng(seed).integers(-5, 6, size=c.target).astype(dtype)
    lead = len(c.target) - len(c.data)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(c.data) if d == 1 and c.target[lead + i] != 1)
    expected = np.sum(dy, axis=axes, keepdims=True).reshape(c.data)
    before = dy.copy()

    got = bcast.plan(c.data, c.target).backward(dy)
    assert_identical(got, expected)
    assert_identical(bcast.unbroadcast(dy, c.data), expected)
    assert_identical(bcast.unbroadcast(dy, str(Shape(c.data))), expected)
    assert_identical(dy, before)


@pytest.mark.parametrize(
    ("shape", "dy_shape", "expected"),
    [
        ((1,), (0,), [0.0]),  # sum over an empty axis is 0
        ((2, 1), (2, 0), [[0.0], [0.0]]),
        ((), (0, 3), 0.0),
        ((0,), (4, 0), np.zeros((0,))),
        ((1, 1), (3, 4), [[12.0]]),
    ],
)
def test_unbroadcast_table(shape: tuple[int, ...], dy_shape: tuple[int, ...], expected: Any) -> None:
    got = bcast.unbroadcast(np.ones(dy_shape), shape)
    assert_identical(got, np.asarray(expected, dtype=np.float64).reshape(shape))


@SETTINGS
@given(PAIRS)
def test_unbroadcast_raises_exactly_when_numpy_cannot_broadcast(pair: tuple[tuple[int, ...], ...]) -> None:
    shape, dy_shape = pair
    dy = np.ones(dy_shape)
    if numpy_error(np.broadcast_to, np.zeros(shape), dy_shape) is None:
        with pytest.raises(BroadcastError):
            bcast.unbroadcast(dy, shape)
    else:
        assert bcast.unbroadcast(dy, shape).shape == shape


@pytest.mark.parametrize("mode", sorted(CASES))
@SETTINGS
@given(data=st.data(), seed=SEED)
def test_backward_sums_over_broadcast_axes_every_mode(mode: str, data: st.DataObject, seed: int) -> None:
    c = data.draw(CASES[mode], label="case")
    dy = np.random.default_rng(seed).integers(-5, 6, size=c.output).astype(np.float64)
    got = bcast.plan(c.data, c.target, mode, **c.kwargs).backward(dy)
    assert_identical(got, sum_to(dy, c.aligned, c.data))


def test_backward_rejects_a_wrong_dy_shape() -> None:
    p = bcast.plan((3, 1), (2, 3, 4))
    for bad in [(3, 4), (2, 3, 5), (2, 3, 4, 1)]:
        with pytest.raises(BroadcastError):
            p.backward(np.ones(bad))


# ---------------------------------------------------------------------------------
# 4. Dot-product test: <P x, dy> == <x, P^T dy> for every mode.


@pytest.mark.parametrize("mode", sorted(CASES))
@SETTINGS
@given(data=st.data(), seed=SEED)
def test_backward_is_the_adjoint(mode: str, data: st.DataObject, seed: int) -> None:
    c = data.draw(CASES[mode], label="case")
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(c.data))
    dy = np.asarray(rng.standard_normal(c.output))
    p = bcast.plan(c.data, c.target, mode, **c.kwargs)
    px = p(x)
    gx = p.backward(dy)
    assert px.shape == c.output
    assert gx.shape == c.data
    lhs, rhs = np.vdot(px, dy), np.vdot(x, gx)
    scale = np.abs(np.broadcast_to(x.reshape(c.aligned), c.output)).ravel() @ np.abs(dy).ravel()
    assert math.isclose(lhs, rhs, rel_tol=1e-9, abs_tol=1e-9 * (1.0 + scale))


# ---------------------------------------------------------------------------------
# 5. Identities: every dialect is a reshape onto the output's axes, then np.broadcast_to.


@pytest.mark.parametrize("mode", sorted(CASES))
@SETTINGS
@given(data=st.data(), layout=LAYOUT)
def test_plan_is_reshape_then_broadcast_to(mode: str, data: st.DataObject, layout: str) -> None:
    c = data.draw(CASES[mode], label="case")
    x = make_array(c.data, layout)
    p = bcast.plan(c.data, c.target, mode, **c.kwargs)
    assert p.output_shape == c.output
    assert bcast.infer(c.data, c.target, mode, **c.kwargs) == c.output
    expected = np.broadcast_to(x.reshape(c.aligned), c.output)

    view = p(x)
    assert_identical(view, expected)
    assert not view.flags.writeable
    if x.size and view.size:
        assert np.shares_memory(view, x)
    assert_identical(bcast.broadcast_to(x, c.target, mode, **c.kwargs), expected)
    copy = bcast.broadcast_to(x, c.target, mode, **c.kwargs, copy=True)
    assert_identical(copy, expected)
    assert copy.flags.writeable
    assert copy.flags.c_contiguous

    mapping = check_mapping(p, c)
    assert p.broadcast_axes == expected_broadcast_axes(c.data, c.output, mapping)


@st.composite
def explicit_any(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    """Sorted unique axes_mapping, data dims equal, 1, or anything (so sometimes invalid)."""
    target = draw(SMALL_SHAPE)
    axes = [k for k, keep in enumerate(draw(mask(len(target)))) if keep]
    data = tuple(draw(st.one_of(st.just(target[a]), st.just(1), DIM)) for a in axes)
    return data, target, axes


@SETTINGS
@given(explicit_any().filter(lambda c: math.prod(c[0]) <= MAX_SIZE))
def test_explicit_is_reshape_then_broadcast_to(case: tuple[tuple[int, ...], tuple[int, ...], list[int]]) -> None:
    data, target, axes = case
    x = make_array(data)
    aligned = [1] * len(target)
    for d, a in zip(data, axes, strict=True):
        aligned[a] = d
    expected = numpy_error(np.broadcast_to, x.reshape(aligned), target)
    if expected is None:
        with pytest.raises(BroadcastError):
            bcast.plan(data, target, "explicit", axes_mapping=axes)
        return
    assert_identical(bcast.broadcast_to(x, target, "explicit", axes_mapping=axes), expected)


@SETTINGS
@given(st.lists(st.integers(-2, 6), max_size=5), SHAPE)
def test_explicit_rejects_bad_axes(axes: list[int], target: tuple[int, ...]) -> None:
    # The core refuses duplicate, negative, unsorted or out-of-range axes.
    data = (1,) * len(axes)  # 1s fit anywhere: only the axes can be wrong
    ok = all(0 <= a < len(target) for a in axes) and all(a < b for a, b in itertools.pairwise(axes))
    if ok:
        assert bcast.infer(data, target, "explicit", axes_mapping=axes) == target
    else:
        with pytest.raises(BroadcastError):
            bcast.plan(data, target, "explicit", axes_mapping=axes)


@SETTINGS
@given(axes_cases(), LAYOUT)
def test_axes_equals_explicit_with_the_complement(c: Case, layout: str) -> None:
    x = make_array(c.data, layout)
    complement = [k for k in range(len(c.target)) if k not in c.kwargs["broadcast_axes"]]
    via_axes = bcast.plan(c.data, c.target, "axes", **c.kwargs)
    via_explicit = bcast.plan(c.data, c.target, "explicit", axes_mapping=complement)
    assert via_axes.output_shape == via_explicit.output_shape == c.target
    assert_identical(via_axes(x), via_explicit(x))
    assert_identical(via_axes(x), np.broadcast_to(x.reshape(c.aligned), c.target))


@SETTINGS
@given(SMALL_SHAPE, st.data())
def test_axes_never_stretches_a_one(target: tuple[int, ...], data: st.DataObject) -> None:
    # nGraph v0: the data must equal the target with broadcast_axes removed, exactly.
    new = data.draw(mask(len(target)))
    baxes = [k for k, n in enumerate(new) if n]
    required = tuple(d for d, n in zip(target, new, strict=True) if not n)
    shape = tuple(data.draw(st.one_of(st.just(d), st.just(1), DIM)) for d in required)
    if shape == required:
        assert bcast.infer(shape, target, "axes", broadcast_axes=baxes) == target
    else:
        with pytest.raises(BroadcastError):
            bcast.plan(shape, target, "axes", broadcast_axes=baxes)


@SETTINGS
@given(PAIRS.map(lambda p: (p[1], p[0])) | st.tuples(SMALL_SHAPE, SMALL_SHAPE), LAYOUT)
def test_bidirectional_is_multiplying_by_ones(pair: tuple[tuple[int, ...], tuple[int, ...]], layout: str) -> None:
    shape, target = pair
    out = numpy_error(np.broadcast_shapes, shape, target)
    if out is not None and math.prod(out) > MAX_SIZE:
        return
    x = make_array(shape, layout)
    if out is None:
        with pytest.raises(BroadcastError):
            bcast.plan(shape, target, "bidirectional")
        with pytest.raises(BroadcastError):
            bcast.expand(x, target)
        return
    expected = (x * np.ones(target)).astype(x.dtype)  # ONNX Expand's definition
    p = bcast.plan(shape, target, "bidirectional")
    assert p.output_shape == out
    assert_identical(p(x), expected)
    assert_identical(bcast.broadcast_to(x, target, "bidirectional"), expected)
    expanded = bcast.expand(x, target)
    assert_identical(expanded, expected)
    assert not expanded.flags.writeable


@SETTINGS
@given(SHAPE, SHAPE)
def test_none_mode_accepts_only_equal_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    if a == b:
        assert bcast.infer(a, b, "none") == a
    else:
        with pytest.raises(BroadcastError):
            bcast.plan(a, b, "none")


@SETTINGS
@given(numpy_cases())
def test_numpy_equals_explicit_right_aligned(c: Case) -> None:
    x = make_array(c.data)
    lead = len(c.target) - len(c.data)
    mapping = list(range(lead, len(c.target)))
    assert_identical(bcast.plan(c.data, c.target)(x), bcast.plan(c.data, c.target, "explicit", axes_mapping=mapping)(x))


# ---------------------------------------------------------------------------------
# 6. materialize(x, out=buf).


def make_out(shape: tuple[int, ...], dtype: Any, layout: str) -> np.ndarray:
    if layout == "strided" and shape:
        return np.full((*shape[:-1], 2 * shape[-1]), -1, dtype=dtype)[..., ::2]
    return np.full(shape, -1, dtype=dtype, order="F" if layout == "f" else "C")


@SETTINGS
@given(numpy_cases(), LAYOUT, st.sampled_from(("c", "f", "strided")))
def test_materialize_into_out(c: Case, layout: str, out_layout: str) -> None:
    x = make_array(c.data, layout)
    buf = make_out(c.target, x.dtype, out_layout)
    got = bcast.plan(c.data, c.target).materialize(x, out=buf)
    assert got is buf
    assert_identical(np.ascontiguousarray(buf), np.ascontiguousarray(np.broadcast_to(x, c.target)))


def _read_only(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    buf = np.full(shape, -1, dtype=dtype)
    buf.flags.writeable = False
    return buf


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: np.full((2, 3, 5), -1, dtype=np.int64), BroadcastError),  # wrong shape
        (lambda: np.full((3, 4), -1, dtype=np.int64), BroadcastError),  # missing axis
        (lambda: np.full((2, 3, 4, 1), -1, dtype=np.int64), BroadcastError),  # extra axis
        (lambda: np.full((2, 3, 4), -1, dtype=np.float64), TypeError),  # a broadcast never casts
        (lambda: np.full((2, 3, 4), -1, dtype=np.int32), TypeError),
        (lambda: _read_only((2, 3, 4), np.int64), (BroadcastError, TypeError)),
        (lambda: np.full((2, 3, 4), -1).tolist(), TypeError),  # not an ndarray
    ],
    ids=["shape", "missing-axis", "extra-axis", "dtype-float", "dtype-int32", "read-only", "list"],
)
def test_materialize_rejects_bad_out(make: Any, error: Any) -> None:
    x = np.arange(3, dtype=np.int64).reshape(3, 1)
    buf = make()
    before = np.array(buf, copy=True)
    with pytest.raises(error):
        bcast.plan((3, 1), (2, 3, 4)).materialize(x, out=buf)
    np.testing.assert_array_equal(np.asarray(buf), before)  # nothing written on failure


@pytest.mark.parametrize("which", ["column", "row"])
def test_materialize_into_out_overlapping_x_is_refused_or_correct(which: str) -> None:
    buf = np.arange(12, dtype=np.int64).reshape(3, 4)
    x = buf[:, :1] if which == "column" else buf[0]
    expected = np.broadcast_to(x.copy(), (3, 4)).copy()
    try:
        bcast.plan(x.shape, (3, 4)).materialize(x, out=buf)
    except BroadcastError:
        return
    np.testing.assert_array_equal(buf, expected)


# ---------------------------------------------------------------------------------
# 7. Shapes round-trip through their string form.

NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,4}", fullmatch=True)
BIG = st.one_of(st.integers(0, 12), st.integers(0, 2**63 - 1))


@st.composite
def dim_texts(draw: st.DrawFn) -> tuple[str, tuple[int, int | None, str | None]]:
    """A dim as text, and (lo, hi, name) it stands for."""
    kind = draw(st.sampled_from(("static", "dynamic", "interval", "lower", "upper", "symbol", "derived")))
    if kind == "static":
        k = draw(BIG)
        return str(k), (k, k, None)
    if kind == "dynamic":
        return draw(st.sampled_from(("?", "-1"))), (0, None, None)
    if kind == "interval":
        lo, hi = sorted((draw(BIG), draw(BIG)))
        return f"{lo}..{hi}", (lo, hi, None)
    if kind == "lower":
        lo = draw(BIG)
        return f"{lo}..", (lo, None, None)
    if kind == "upper":
        hi = draw(BIG)
        return f"..{hi}", (0, hi, None)
    names = draw(st.lists(NAME, min_size=1, max_size=1 if kind == "symbol" else 3))
    return "|".join(names), (0, None, "|".join(sorted(set(names))))


@st.composite
def shape_texts(draw: st.DrawFn) -> tuple[str, list[tuple[int, int | None, str | None]]]:
    dims = draw(st.lists(dim_texts(), max_size=6))
    pad = draw(st.sampled_from(("", " ")))
    body = ",".join(pad + t + pad for t, _ in dims)
    opening, closing = draw(st.sampled_from((("[", "]"), ("(", ")"), ("", ""))))
    return f"{opening}{body}{closing}", [m for _, m in dims]


@SETTINGS
@given(shape_texts())
def test_shape_string_round_trip(case: tuple[str, list[tuple[int, int | None, str | None]]]) -> None:
    text, model = case
    s = Shape.parse(text)
    assert s.rank == len(model)
    for d, (lo, hi, name) in zip(s, model, strict=True):
        assert (d.lo, d.hi, d.name) == (lo, hi, name)
        assert d.is_static == (lo == hi and name is None)
    printed = str(s)
    assert Shape.parse(printed) == s
    assert str(Shape.parse(printed)) == printed
    assert Shape(printed) == s
    assert Shape(tuple(s)) == s  # a tuple of Dims
    assert pickle.loads(pickle.dumps(s)) == s
    assert s.is_static == all(lo == hi and name is None for lo, hi, name in model)
    if s.is_static:
        ints = tuple(lo for lo, _, _ in model)
        assert s.to_tuple() == ints
        assert s == ints
        assert Shape(ints) == s


@SETTINGS
@given(st.lists(st.one_of(st.integers(-1, 9), dim_texts().map(lambda t: Dim.parse(t[0]))), max_size=6))
def test_shape_from_tuple_round_trip(t: list[Any]) -> None:
    s = Shape(tuple(t))
    assert Shape.parse(str(s)) == s
    assert str(Shape.parse(str(s))) == str(s)
    for d, v in zip(s, t, strict=True):
        if isinstance(v, int) and not isinstance(v, Dim):
            assert str(d) == ("?" if v == -1 else str(v))  # -1 reads as '?'


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("[...]", "[...]"),
        ("[]", "[]"),
        ("()", "[]"),
        ("(3,)", "[3]"),
        ("[2,?,1..8,4..,N]", "[2,?,1..8,4..,N]"),
        ("[-1, ..8, 0..5, 3..3]", "[?,0..8,0..5,3]"),
        ("[B|A]", "[A|B]"),
    ],
)
def test_shape_string_table(text: str, printed: str) -> None:
    s = Shape.parse(text)
    assert str(s) == printed
    assert Shape.parse(printed) == s


# ---------------------------------------------------------------------------------
# 8. Dtypes: views and copies carry every dtype through unchanged, bit for bit.


def _objects() -> np.ndarray:
    a = np.empty(3, dtype=object)
    a[:] = [None, "x", (1, 2)]
    return a


DTYPE_VALUES = [
    pytest.param(lambda: np.array([True, False, True]), id="bool"),
    *[
        pytest.param(lambda t=t: np.array([0, 1, 7], dtype=t), id=np.dtype(t).name)
        for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
    ],
    *[
        pytest.param(lambda t=t: np.array([np.nan, -0.0, 1.5], dtype=t), id=np.dtype(t).name)
        for t in (np.float16, np.float32, np.float64, np.longdouble)
    ],
    *[
        pytest.param(lambda t=t: np.array([complex(np.nan, 1), -0.0j, 1 + 2j], dtype=t), id=np.dtype(t).name)
        for t in (np.complex64, np.complex128)
    ],
    pytest.param(lambda: np.array(["a", "bc", "déf"]), id="unicode"),
    pytest.param(lambda: np.array([b"a", b"bc", b"\x00x"]), id="bytes"),
    pytest.param(_objects, id="object"),
    pytest.param(lambda: np.array(["2020-01-01", "NaT", "1970-01-01"], dtype="datetime64[s]"), id="datetime64"),
    pytest.param(lambda: np.array([1, -2, "NaT"], dtype="timedelta64[ms]"), id="timedelta64"),
]

DTYPE_PLANS = [
    pytest.param("numpy", (2, 3, 4), {}, id="numpy"),
    pytest.param("numpy", (3, 0), {}, id="numpy-empty"),
    pytest.param("explicit", (3, 2, 5), {"axes_mapping": [0, 1]}, id="explicit"),
    pytest.param("axes", (2, 3), {"broadcast_axes": [0]}, id="axes"),
    pytest.param("bidirectional", (2, 1, 4), {}, id="bidirectional"),
]


def check_dtype(x: np.ndarray, mode: str, target: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    # x has shape (3,); the modes below see it as (3, 1) except axes, which needs it exact.
    data = x if mode == "axes" else x.reshape(3, 1)
    before = data.copy()
    aligned = {"numpy": (3, 1), "explicit": (3, 1, 1), "axes": (1, 3), "bidirectional": (3, 1)}[mode]
    out = np.broadcast_shapes(aligned, target) if mode == "bidirectional" else target
    expected = np.broadcast_to(data.reshape(aligned), out)

    view = bcast.broadcast_to(data, target, mode, **kwargs)
    assert_identical(view, expected)
    assert not view.flags.writeable
    if view.size:
        assert np.shares_memory(view, data)
    copy = bcast.broadcast_to(data, target, mode, **kwargs, copy=True)
    assert_identical(copy, expected)
    assert copy.flags.writeable
    assert copy.flags.c_contiguous
    assert not np.shares_memory(copy, data)
    buf = np.empty(out, dtype=data.dtype)
    assert bcast.plan(data.shape, target, mode, **kwargs).materialize(data, out=buf) is buf
    assert_identical(buf, expected)
    assert_identical(data, before)


@pytest.mark.parametrize(("mode", "target", "kwargs"), DTYPE_PLANS)
@pytest.mark.parametrize("make", DTYPE_VALUES)
def test_dtypes_views_and_copies(make: Any, mode: str, target: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    check_dtype(make(), mode, target, kwargs)


def check_backward_dtype(dtype: Any, wide: Any) -> None:
    # Small integer values: exact in every dtype, so the sum in a wide dtype is the oracle.
    dy = (np.arange(24).reshape(2, 3, 4) % 4).astype(dtype)
    expected = np.sum(dy.astype(wide), axis=(0, 2), keepdims=True).reshape(3, 1).astype(dtype)
    got = bcast.plan((3, 1), (2, 3, 4)).backward(dy)
    assert_identical(got, expected)
    assert_identical(bcast.unbroadcast(dy, (3, 1)), expected)


@pytest.mark.parametrize(
    ("dtype", "wide"),
    [
        *[(t, np.int64) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)],
        *[(t, np.float64) for t in (np.float16, np.float32, np.float64)],
        *[(t, np.complex128) for t in (np.complex64, np.complex128)],
        ("timedelta64[ms]", "timedelta64[ms]"),
        (object, object),
    ],
    ids=str,
)
def test_backward_dtypes(dtype: Any, wide: Any) -> None:
    check_backward_dtype(dtype, wide)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn"])
@pytest.mark.parametrize(("mode", "target", "kwargs"), DTYPE_PLANS)
def test_ml_dtypes(name: str, mode: str, target: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (optional extra) is not installed")
    dtype = np.dtype(getattr(ml_dtypes, name))
    check_dtype(np.array([0.5, -0.0, 3.0], dtype=dtype), mode, target, kwargs)
    check_backward_dtype(dtype, np.float64)


# ---------------------------------------------------------------------------------
# 8. The output and constraints of NumPy's rule without a plan per operand are the full plan's.

#: dims of every kind the rule meets: sizes that stretch and clash, ?, intervals, symbols and their joins
RULE_DIM = st.sampled_from(("1", "2", "3", "0", "?", "1..4", "2..", "N", "M", "N|M", "K"))


@SETTINGS
@given(st.lists(st.lists(RULE_DIM, max_size=4), min_size=1, max_size=4))
def test_multidirectional_output_is_the_full_plans(dims: list[list[str]]) -> None:
    from bcast.rules import multidirectional_output, plan_multidirectional

    shapes = tuple(Shape("[" + ",".join(d) + "]") for d in dims)
    given_ = tuple(str(s) for s in shapes)
    try:
        plan = plan_multidirectional(shapes, given_)
    except BroadcastError as e:
        refused = str(e)
    else:
        refused = None
    if refused is not None:
        with pytest.raises(BroadcastError) as got:
            multidirectional_output(shapes, given_)
        assert str(got.value) == refused
        return
    out, constraints = multidirectional_output(shapes, given_)
    assert str(out) == str(plan.output_shape)
    assert [str(c) for c in constraints] == [str(c) for c in plan.constraints]
    assert [c.axis for c in constraints] == [c.axis for c in plan.constraints]
