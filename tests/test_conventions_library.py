"""The library's conventions shared with NumPy and the Array API, each class of cases against its oracle.

1. ``broadcast_arrays`` (NumPy's, multidirectional) and ``subok`` on ``broadcast_to``: NumPy is the oracle.
2. ``broadcast_shapes`` in the Array API form (``None`` for an unknown size): the standard's text.
3. The constraints a symbolic result carries (``ResultShape.constraints``).
4. nGraph's ``AxisSet``: ``broadcast_axes`` is a set.
5. ``broadcast_like`` with an array as ``like``.
"""

from __future__ import annotations

import itertools
import pickle
import warnings
from typing import Any

import numpy as np
import pytest

import bcast
from bcast import BroadcastError, Constraints, ResultShape, Shape

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")

# ---------------------------------------------------------------------------------------
# 1. broadcast_arrays, and subok
# ---------------------------------------------------------------------------------------

SHAPE_SETS = [
    [],
    [()],
    [(3,)],
    [(), ()],
    [(1,), (3,)],
    [(2, 1), (3,)],
    [(1, 3), (3, 1)],
    [(4, 1, 5), (3, 1), (1,)],
    [(0,), (1,)],
    [(1, 0), (0, 1)],
    [(2, 0, 1), (1, 5)],
    [(6, 7), (5, 6, 1), (7,), (5, 1, 7)],
    [(3, 4), (3, 4)],
    [(1,)] * 70,  # more operands than nditer takes (64)
    [(2, 1)] * 40 + [(1, 3)] * 40,
]


def _arrays(shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    rng = np.random.default_rng(len(shapes))
    return [rng.integers(0, 100, size=s) for s in shapes]


def _flags(a: np.ndarray) -> tuple[bool, bool, bool]:
    """Writeable without a warning; writeable at all (a warn-on-write array says so, warning); a read-only buffer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(a.flags._writeable_no_warn), bool(a.flags.writeable), memoryview(a).readonly


def _same(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("shapes", SHAPE_SETS, ids=lambda s: str(s)[:40])
@pytest.mark.parametrize("order", ["given", "reversed"])
def test_broadcast_arrays_matches_numpy(shapes: list[tuple[int, ...]], order: str) -> None:
    arrays = _arrays(shapes if order == "given" else shapes[::-1])
    ours, theirs = bcast.broadcast_arrays(*arrays), np.broadcast_arrays(*arrays)
    assert type(ours) is tuple and type(theirs) is tuple and len(ours) == len(theirs)
    for a, o, t in zip(arrays, ours, theirs, strict=True):
        _same(o, t)
        assert (o is a) == (t is a)  # an array already of the common shape comes back as it is
        assert np.shares_memory(o, a) or o.size == 0  # a view, never a copy
        assert _flags(o) == _flags(t)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("flipped", [False, True])
def test_broadcast_arrays_non_contiguous(transposed: bool, flipped: bool) -> None:
    x0, x1 = np.arange(6).reshape(2, 3), np.arange(2).reshape(2, 1)
    x0, x1 = (x0.T, x1.T) if transposed else (x0, x1)
    x0, x1 = (x0[::-1], x1[::-1]) if flipped else (x0, x1)
    for o, t in zip(bcast.broadcast_arrays(x0, x1), np.broadcast_arrays(x0, x1), strict=True):
        _same(o, t)


def test_broadcast_arrays_scalars_lists_and_dtypes() -> None:
    cases: list[tuple[Any, ...]] = [
        (0, np.arange(3)),
        (1.5, [1, 2], [[3], [4]]),
        (np.float32(2), np.array([True, False])),
        (np.array("a", dtype=object), np.ones(3)),
        (np.array(["x", "yy"]), np.zeros((2, 1), dtype=np.complex64)),
    ]
    for args in cases:
        for o, t in zip(bcast.broadcast_arrays(*args), np.broadcast_arrays(*args), strict=True):
            _same(o, t)


def test_broadcast_arrays_writeable_semantics() -> None:
    """NumPy 2.x: a broadcast result says it is writeable but warns on write; a read-only input stays so."""
    original = np.array([1, 2, 3])
    (same,) = bcast.broadcast_arrays(original)
    assert same is original
    zero, result = bcast.broadcast_arrays(0, original)
    assert result is original
    with pytest.warns(FutureWarning):
        assert zero.flags.writeable
    assert memoryview(zero).readonly
    with pytest.warns(DeprecationWarning, match="writing"):
        zero[...] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert zero.flags.writeable  # writing resets the warning
    a, b = bcast.broadcast_arrays(np.arange(3), np.ones((2, 1)))
    b.flags.writeable = True  # opting out: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b[...] = 7
    ro = np.arange(3)
    ro.flags.writeable = False
    _, r = bcast.broadcast_arrays(np.zeros((2, 1)), ro)
    assert not r.flags.writeable
    # a broadcast result given again is not writeable without a warning, as in NumPy
    again = bcast.broadcast_arrays(a, np.zeros((4, 1, 1)))[0]
    assert again.flags._writeable_no_warn is np.broadcast_arrays(a, np.zeros((4, 1, 1)))[0].flags._writeable_no_warn


def test_broadcast_arrays_errors() -> None:
    with pytest.raises(BroadcastError) as e:
        bcast.broadcast_arrays(np.zeros(3), np.zeros(4))
    assert isinstance(e.value, ValueError)
    with pytest.raises(TypeError, match="unexpected keyword"):
        bcast.broadcast_arrays(np.zeros(3), dtype="float64")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="subok"):
        bcast.broadcast_arrays(np.zeros(3), subok="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bcast.broadcast_arrays(object())


class Info(np.ndarray):
    def __new__(cls, data: Any) -> Info:
        obj = np.asarray(data).view(cls)
        obj.info = "made"
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.info = getattr(obj, "info", "") + " finalized"


SUBCLASS_CASES = [
    (lambda: np.matrix([[1, 2, 3]]), (4, 3)),
    (lambda: np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]), (2, 3)),
    (lambda: np.ma.masked_array([[1.0], [2.0]]), (2, 5)),
    (lambda: Info([1, 2, 3]), (2, 3)),
]


@pytest.mark.parametrize("case", range(len(SUBCLASS_CASES)))
@pytest.mark.parametrize("subok", [False, True])
def test_broadcast_to_subok_matches_numpy(case: int, subok: bool) -> None:
    make, shape = SUBCLASS_CASES[case]
    x = make()
    ours, theirs = bcast.broadcast_to(x, shape, subok=subok), np.broadcast_to(x, shape, subok=subok)
    _same(ours, theirs)
    assert not ours.flags.writeable
    if isinstance(theirs, Info):
        assert ours.info == theirs.info
    if isinstance(theirs, np.ma.MaskedArray):
        np.testing.assert_array_equal(np.ma.getmaskarray(ours), np.ma.getmaskarray(theirs))
    copied = bcast.broadcast_to(x, shape, subok=subok, copy=True)
    assert type(copied) is type(theirs) and copied.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(copied), np.asarray(theirs))


@pytest.mark.parametrize("case", range(len(SUBCLASS_CASES)))
@pytest.mark.parametrize("subok", [False, True])
def test_broadcast_arrays_subok_matches_numpy(case: int, subok: bool) -> None:
    make, shape = SUBCLASS_CASES[case]
    x, other = make(), np.zeros(shape)
    for o, t in zip(
        bcast.broadcast_arrays(x, other, subok=subok), np.broadcast_arrays(x, other, subok=subok), strict=True
    ):
        _same(o, t)
        if isinstance(t, Info):
            assert o.info == t.info


def test_broadcast_to_subok_other_modes_and_errors() -> None:
    m = np.matrix([[1.0, 2.0]])
    r = bcast.broadcast_to(m, (3, 2), "bidirectional", subok=True)
    assert type(r) is np.matrix and r.shape == (3, 2)
    with pytest.raises(TypeError, match="subok"):
        bcast.broadcast_to(m, (3, 2), subok=1)  # type: ignore[arg-type]


def test_broadcast_arrays_other_libraries_stay_in_their_namespace() -> None:
    th = pytest.importorskip("torch")
    a, b = bcast.broadcast_arrays(th.arange(3), th.ones(2, 1))
    assert isinstance(a, th.Tensor) and isinstance(b, th.Tensor)
    assert tuple(a.shape) == tuple(b.shape) == (2, 3)
    t = th.broadcast_tensors(th.arange(3), th.ones(2, 1))
    assert th.equal(a, t[0]) and th.equal(b, t[1])
    xp = pytest.importorskip("array_api_strict")
    p, q = bcast.broadcast_arrays(xp.asarray([1, 2, 3]), xp.ones((2, 1)))
    assert type(p) is type(xp.asarray(1)) and p.shape == q.shape == (2, 3)
    assert bool(xp.all(p == xp.broadcast_arrays(xp.asarray([1, 2, 3]), xp.ones((2, 1)))[0]))
    # NumPy operands beside them stay NumPy's
    n, tt = bcast.broadcast_arrays(np.arange(3), th.ones(2, 1))
    assert type(n) is np.ndarray and isinstance(tt, th.Tensor) and n.shape == tuple(tt.shape) == (2, 3)


# ---------------------------------------------------------------------------------------
# 2. The Array API form of broadcast_shapes
# ---------------------------------------------------------------------------------------


def _standard(*shapes: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """The standard's rule, written out: the known sizes broadcast as NumPy's; an axis where any shape
    has None is None ("dimensions of unknown size must be propagated to the returned shape")."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for k in range(-rank, 0):
        dims = [s[k] for s in shapes if len(s) >= -k]
        known = {d for d in dims if d is not None} - {1}
        if len(known) > 1:
            raise ValueError(f"axis {k}: {sorted(known)}")
        out.append(None if None in dims else (known.pop() if known else 1))
    return tuple(out)


DIMS = [None, 0, 1, 2, 3]


def _shape_cases() -> list[tuple[tuple[int | None, ...], ...]]:
    singles = [s for r in range(3) for s in itertools.product(DIMS, repeat=r)]
    pairs = [(a, b) for a in singles for b in singles if None in a + b]
    return [*pairs, ((None, 1), (4, 3), (3,)), ((2, None, 1), (None, 1, 5), (1, 1)), ((None,),)]


@pytest.mark.parametrize("shapes", _shape_cases(), ids=str)
def test_array_api_broadcast_shapes_follows_the_standard(shapes: tuple[tuple[int | None, ...], ...]) -> None:
    try:
        want = _standard(*shapes)
    except ValueError:
        with pytest.raises(BroadcastError):
            bcast.broadcast_shapes(*shapes)
        return
    got = bcast.broadcast_shapes(*shapes)
    assert type(got) is tuple and got == want
    assert all(d is None or type(d) is int for d in got)
    # the known sizes alone give what NumPy gives, at every axis without None
    known = tuple(tuple(1 if d is None else d for d in s) for s in shapes)
    for g, n in zip(got, np.broadcast_shapes(*known), strict=True):
        assert g is None or g == n
    # lists too
    assert bcast.broadcast_shapes(*(list(s) for s in shapes)) == want


def test_array_api_form_only_with_none() -> None:
    assert type(bcast.broadcast_shapes((2, 1), (3,))) is ResultShape  # ints: a Shape, as always
    assert bcast.broadcast_shapes((2, None), (1, 3)) == (2, None)
    assert bcast.broadcast_shapes((2, None), "[1,3]") == (2, None)  # a None anywhere: the tuple form
    assert bcast.broadcast_shapes((None, 3), (2, 3), mode="none") == (None, 3)
    assert bcast.broadcast_shapes((2, 3, 4, 5), (3, None), mode="pdpd", axis=1) == (2, 3, None, 5)
    with pytest.raises(BroadcastError):
        bcast.broadcast_shapes((None, 3), (2, 4))


# ---------------------------------------------------------------------------------------
# 3. The constraints a result carries
# ---------------------------------------------------------------------------------------


def test_broadcast_shapes_carries_constraints() -> None:
    for _ in range(2):  # the first call plans, the second reads the cache: both carry them
        s = bcast.broadcast_shapes("[N,3]", "[4,1]")
        assert s == Shape("[4,3]") and repr(s) == "Shape('[4,3]')" and str(s) == "[4,3]"
        assert s.constraints == Constraints(["N in {1, 4}"]) or repr(s.constraints) == "Constraints(['N in {1, 4}'])"
        assert hash(s) == hash(Shape("[4,3]"))
    static = bcast.broadcast_shapes((2, 1), (3,))
    assert isinstance(static, Shape) and static == (2, 3) and repr(static) == "Shape('[2,3]')"
    assert len(static.constraints) == 0 and repr(static.constraints) == "Constraints([])"
    assert pickle.loads(pickle.dumps(static)) == static
    assert bcast.broadcast_shapes("[N,3]", "[M,3]").constraints == bcast.elementwise_plan("[N,3]", "[M,3]").constraints


def test_infer_carries_constraints() -> None:
    for _ in range(2):
        s = bcast.infer("[N,1]", "[4,5]")
        assert s == Shape("[4,5]") and repr(s.constraints) == "Constraints(['N in {1, 4}'])"
    assert (
        bcast.infer("[N]", "[2,5]", "axes", broadcast_axes=[0]).constraints
        == bcast.plan("[N]", "[2,5]", "axes", broadcast_axes=[0]).constraints
    )
    assert len(bcast.infer("[3,1]", "[2,1,6]", "bidirectional").constraints) == 0


# ---------------------------------------------------------------------------------------
# 4. broadcast_axes is nGraph's AxisSet
# ---------------------------------------------------------------------------------------

AXIS_SETS = [
    ((4,), (2, 3, 4), [0, 1]),
    ((3,), (3, 2, 5), [2, 1]),
    ((2, 5), (2, 3, 5, 4), [3, 1]),
    ((3,), (2, 3), [0]),
    ((), (2, 3), [1, 0]),
]


@pytest.mark.parametrize(("data", "target", "axes"), AXIS_SETS)
def test_broadcast_axes_is_a_set(data: tuple[int, ...], target: tuple[int, ...], axes: list[int]) -> None:
    want = bcast.plan(data, target, "axes", broadcast_axes=sorted(axes))
    x = np.arange(int(np.prod(data))).reshape(data)
    for given in {tuple(p) for p in itertools.permutations(axes)} | {tuple(axes + axes[:1]), tuple(axes * 2)}:
        p = bcast.plan(data, target, "axes", broadcast_axes=list(given))
        assert p.output_shape == want.output_shape and p.axes_mapping == want.axes_mapping
        assert p.broadcast_axes == want.broadcast_axes
        np.testing.assert_array_equal(bcast.broadcast_to(x, target, "axes", broadcast_axes=given), want(x))
        like = bcast.plan(data, target, "like", broadcast_axes=list(given))
        assert like.output_shape == want.output_shape and like.axes_mapping == want.axes_mapping
        np.testing.assert_array_equal(bcast.broadcast_like(x, target, initial_broadcast_axes=given), want(x))


def test_broadcast_axes_range_errors_name_the_axis_as_given() -> None:
    with pytest.raises(BroadcastError, match=r"broadcast_axes\[2\] = -1 is negative"):
        bcast.infer("[3]", "[2,3,4]", "axes", broadcast_axes=[2, 0, -1])
    with pytest.raises(BroadcastError, match=r"broadcast_axes\[1\] = 3 is out of range"):
        bcast.infer("[3]", "[2,3,4]", "axes", broadcast_axes=[2, 3, 0])
    with pytest.raises(BroadcastError, match=r"broadcast_axes\[1\] = 5 is out of range"):
        bcast.broadcast_like(np.zeros(3), (3, 2), initial_broadcast_axes=[1, 5])
    with pytest.raises(BroadcastError, match=r"data of shape \[3,4\]"):
        bcast.infer("[4]", "[2,3,4]", "axes", broadcast_axes=[0, 0])  # counted once: rank 2 left
    # axes_mapping (explicit) stays a strict sequence
    with pytest.raises(BroadcastError, match="increasing"):
        bcast.infer("[3,4]", "[4,3]", "explicit", axes_mapping=[1, 0])
    with pytest.raises(BroadcastError, match="twice"):
        bcast.infer("[3,3]", "[3,5]", "explicit", axes_mapping=[0, 0])


# ---------------------------------------------------------------------------------------
# 5. broadcast_like with an array as like
# ---------------------------------------------------------------------------------------


def test_broadcast_like_takes_an_array() -> None:
    x = np.array([1, 2, 3])
    for like in [np.zeros((3, 2)), np.zeros((3, 2), dtype=np.int8)[:, ::1], np.ma.zeros((3, 2))]:
        r = bcast.broadcast_like(x, like)
        np.testing.assert_array_equal(r, bcast.broadcast_like(x, (3, 2)))
    assert bcast.broadcast_like(np.float64(2), np.float32(1)).shape == ()
    assert bcast.broadcast_like(x, np.zeros((3, 4, 5)), initial_broadcast_axes=[2, 1]).shape == (3, 4, 5)
    assert bcast.broadcast_like(x, [3, 2]).shape == (3, 2)  # a list is a shape, as before
    assert bcast.broadcast_like(x, np.array([3, 2])).shape == (3, 2)  # so is a 1-D integer array
    assert bcast.broadcast_like(x, np.zeros((3, 2), dtype=np.int64)).shape == (3, 2)  # 2-D: an array
    assert bcast.broadcast_like(x, np.array([1.0, 2.0, 3.0])).shape == (3,)  # float: an array
    with pytest.raises(BroadcastError):
        bcast.broadcast_like(np.arange(4), np.zeros((3, 4)))  # left-aligned, as with the shape


def test_broadcast_like_takes_another_librarys_array() -> None:
    th = pytest.importorskip("torch")
    r = bcast.broadcast_like(np.array([1, 2, 3]), th.zeros(3, 2))
    assert type(r) is np.ndarray and r.shape == (3, 2)
    t = bcast.broadcast_like(th.arange(3), th.zeros(3, 2))
    assert isinstance(t, th.Tensor) and tuple(t.shape) == (3, 2)
    xp = pytest.importorskip("array_api_strict")
    assert bcast.broadcast_like(np.array([1, 2, 3]), xp.zeros((3, 2))).shape == (3, 2)
