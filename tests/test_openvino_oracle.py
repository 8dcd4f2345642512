"""The real ``openvino`` package as an oracle for the core modes numpy, explicit and bidirectional.

Random static shapes (hypothesis, dims mostly in 0..5 so that 1s and clashes are common) are fed to
OpenVINO's Broadcast-1 (``opset1``) and Broadcast-3 (``opset3``) with int64 Constant target/axes:

* shape inference: the node's output shape, or the validation error it raises on construction,
  against ``bcast.infer`` (a ``BroadcastError`` exactly where OpenVINO rejects);
* values: the model compiled on "CPU" and run on random float32/int32/uint8 data, against
  ``bcast.broadcast_to`` as a view and with ``copy=True``.

The cases where the core intentionally differs from OpenVINO are kept out of the generated cases, each
next to the section of docs/reference/openvino.md ("ref") that documents it; the ones that are
shape-level differences are pinned in tests of their own at the bottom.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import bcast

ov = pytest.importorskip("openvino", reason="openvino is not installed; the OpenVINO oracle tests need it")
opset1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
opset3 = pytest.importorskip("openvino.opset3", reason="openvino.opset3 is missing")

IntShape = tuple[int, ...]
Case = tuple[IntShape, IntShape, IntShape | None]  # data shape, target value, axes_mapping (explicit only)

OV_MODE = {"numpy": "NUMPY", "explicit": "EXPLICIT", "bidirectional": "BIDIRECTIONAL"}
OPSETS = {1: opset1, 3: opset3}
# Data dtypes for the value checks; uint8 as *data* is fine (only a u8 *target* breaks the CPU plugin, ref 5.2).
DTYPES: tuple[tuple[type[np.generic], Any], ...] = (
    (np.float32, ov.Type.f32),
    (np.int32, ov.Type.i32),
    (np.uint8, ov.Type.u8),
)

# Never negative: OpenVINO turns a constant target's -1 into ? and other negatives into 0 (ref 0 and 5.9),
# while the core rejects negative sizes (and reads -1 as ?), so no generator below draws one.
# 1 and small sizes dominate so that stretching and clashes both happen often.
# With rank <= 5 and dims <= 5 an output has at most 3125 elements.
DIMS = st.sampled_from((0, 1, 1, 2, 3, 4, 5))
# The CPU plugin dies with SIGFPE when the *data* has zero elements (any mode, e.g. numpy [0] -> [0]; seen
# with openvino 2026.4.1 while writing these tests, not yet in the reference), and a crash would take the
# whole test run down, so the value tests draw data dims from 1..5. Zeros in the target are still drawn.
NONZERO_DIMS = st.sampled_from((1, 1, 2, 3, 4, 5))
# Targets for the value tests: a 0 now and then, but rarely enough that most outputs hold values to compare.
SPARSE_ZERO_DIMS = st.sampled_from((0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5))

SHAPE_SETTINGS = settings(max_examples=150, deadline=None)
VALUE_SETTINGS = settings(max_examples=80, deadline=None)


# -- OpenVINO side -----------------------------------------------------------------------------


def _i64_const(values: Sequence[int]) -> Any:
    # int64 always: a u8 target/axes passes shape inference but fails CPU compilation (ref 5.2).
    # ov.op.Constant, not opsetN.constant: the latter refuses an empty array, and [] is a valid target/axes.
    return ov.op.Constant(np.asarray(values, dtype=np.int64).reshape(-1))


def _ov_node(opset: int, param: Any, target: IntShape, mode: str, axes: IntShape | None) -> Any:
    """A Broadcast node on ``param``; raises RuntimeError where OpenVINO's validation rejects the inputs."""
    ops = OPSETS[opset]
    axes_node = None if axes is None else _i64_const(axes)
    if opset == 1:
        return ops.broadcast(param, _i64_const(target), axes_node, mode=OV_MODE[mode])
    return ops.broadcast(param, _i64_const(target), axes_node, broadcast_spec=OV_MODE[mode])


def _rejection(err: RuntimeError) -> str:
    """The gist of an OpenVINO validation error; anything else is re-raised, not counted as a rejection."""
    text = str(err)
    if "Broadcast" not in text:
        raise err
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "OpenVINO rejects: " + lines[-1]


def ov_shape(opset: int, data: IntShape, target: IntShape, mode: str, axes: IntShape | None) -> IntShape | str:
    """OpenVINO's inferred output shape, or a string saying why node construction failed."""
    param = OPSETS[opset].parameter(list(data), ov.Type.f32)
    try:
        node = _ov_node(opset, param, target, mode, axes)
    except RuntimeError as err:
        return _rejection(err)
    ps = node.get_output_partial_shape(0)
    assert ps.is_static, f"OpenVINO gave a non-static shape {ps} for static inputs"
    return tuple(int(d) for d in ps.to_shape())


@functools.cache
def _core() -> Any:
    return ov.Core()  # one Core for the module: creating it is the slow part


@functools.lru_cache(maxsize=256)  # hypothesis replays a failing case many times while shrinking
def ov_compiled(opset: int, data: IntShape, target: IntShape, mode: str, axes: IntShape | None) -> Any:
    """One compiled model that broadcasts a parameter of each dtype in DTYPES, or a rejection string."""
    params, outs = [], []
    try:
        for _, et in DTYPES:
            p = OPSETS[opset].parameter(list(data), et)
            params.append(p)
            outs.append(_ov_node(opset, p, target, mode, axes))
    except RuntimeError as err:
        return _rejection(err)
    return _core().compile_model(ov.Model(outs, params), "CPU", {"INFERENCE_NUM_THREADS": 1})


# -- bcast side --------------------------------------------------------------------------------


def bcast_shape(data: IntShape, target: IntShape, mode: str, axes: IntShape | None) -> IntShape | str:
    try:
        out = bcast.infer(data, target, mode, axes_mapping=None if axes is None else list(axes))
    except bcast.BroadcastError as err:
        return f"bcast rejects: {err}"
    assert out.is_static, f"bcast gave a non-static shape {out} for static inputs"
    return tuple(int(d) for d in out)


def _axes_kw(axes: IntShape | None) -> dict[str, Any]:
    return {} if axes is None else {"axes_mapping": list(axes)}


# -- checks ------------------------------------------------------------------------------------


def check_shape(opset: int, case: Case, mode: str) -> None:
    data, target, axes = case
    theirs = ov_shape(opset, data, target, mode, axes)
    ours = bcast_shape(data, target, mode, axes)
    where = f"{mode} (opset{opset}) data {list(data)} target {list(target)} axes {axes}"
    if isinstance(theirs, str):
        assert isinstance(ours, str), f"{where}: {theirs}, but bcast gives {list(ours)}"
    else:
        assert not isinstance(ours, str), f"{where}: OpenVINO gives {list(theirs)}, but {ours}"
        assert ours == theirs, f"{where}: OpenVINO gives {list(theirs)}, bcast gives {list(ours)}"


def check_values(opset: int, case: Case, mode: str, seed: int) -> None:
    data, target, axes = case
    compiled = ov_compiled(opset, data, target, mode, axes)
    where = f"{mode} (opset{opset}) data {list(data)} target {list(target)} axes {axes}"
    rng = np.random.default_rng(seed)
    xs = [_random_array(rng, data, dt) for dt, _ in DTYPES]
    if isinstance(compiled, str):
        for copy in (False, True):
            with pytest.raises(bcast.BroadcastError):
                bcast.broadcast_to(xs[0], target, mode, copy=copy, **_axes_kw(axes))
        return
    results = compiled(xs)
    for k, x in enumerate(xs):
        expected = np.asarray(results[k])
        assert expected.dtype == x.dtype, f"{where}: the oracle changed dtype {x.dtype} -> {expected.dtype}"
        view = bcast.broadcast_to(x, target, mode, **_axes_kw(axes))
        copied = bcast.broadcast_to(x, target, mode, copy=True, **_axes_kw(axes))
        for name, got in (("view", view), ("copy", copied)):
            assert got.shape == expected.shape, f"{where} [{x.dtype} {name}]: shape {got.shape} != {expected.shape}"
            assert got.dtype == x.dtype, f"{where} [{x.dtype} {name}]: dtype {got.dtype} != {x.dtype}"
            np.testing.assert_array_equal(got, expected, err_msg=f"{where} [{x.dtype} {name}]")
        # The contract: copy=False is a read-only view of x, copy=True a fresh writable C-contiguous array.
        assert not view.flags.writeable, f"{where}: the view is writeable"
        if view.size:
            assert np.shares_memory(view, x), f"{where}: the view does not share memory with the data"
        assert copied.flags.writeable, f"{where}: the copy is read-only"
        assert copied.flags.c_contiguous, f"{where}: the copy is not C-contiguous"
        assert not np.shares_memory(copied, x), f"{where}: the copy shares memory with the data"


def _random_array(rng: np.random.Generator, shape: IntShape, dtype: type[np.generic]) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return np.asarray(rng.standard_normal(shape), dtype=dtype)
    info = np.iinfo(dtype)
    return np.asarray(rng.integers(info.min, info.max, size=shape, endpoint=True), dtype=dtype)


# -- case generators ---------------------------------------------------------------------------


def _shapes(dims: st.SearchStrategy[int], max_rank: int, min_rank: int = 0) -> st.SearchStrategy[IntShape]:
    return st.lists(dims, min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def numpy_cases(draw: st.DrawFn, data_dims: st.SearchStrategy[int] = DIMS, dims: st.SearchStrategy[int] = DIMS) -> Case:
    """Data -> target, one-directional: valid by construction, then maybe broken on purpose."""
    data = draw(_shapes(data_dims, 4))
    how = draw(st.sampled_from(("valid", "valid", "clash", "rank", "random")))
    if how == "random":
        return data, draw(_shapes(dims, 5)), None
    lead = draw(_shapes(dims, 5 - len(data)))
    target = list(lead) + [draw(dims) if d == 1 else d for d in data]
    if how == "clash" and data:
        # another size under a data axis: a mismatch unless that data dim is 1
        j = len(lead) + draw(st.integers(0, len(data) - 1))
        target[j] = draw(dims.filter(lambda v, old=target[j]: v != old))
    elif how == "rank" and data:
        # cut into the aligned part: the target's rank is now smaller than the data's
        target = target[draw(st.integers(len(lead) + 1, len(target))) :]
    return data, tuple(target), None


@st.composite
def explicit_cases(
    draw: st.DrawFn, data_dims: st.SearchStrategy[int] = DIMS, dims: st.SearchStrategy[int] = DIMS
) -> Case:
    """Data axis i -> output axis axes[i]: valid by construction, then maybe broken on purpose."""
    data = draw(_shapes(data_dims, 4))
    r = len(data)
    rank = draw(st.integers(r, 5))
    axes = sorted(draw(st.permutations(range(rank)))[:r])
    target = [draw(dims) for _ in range(rank)]
    for i, a in enumerate(axes):
        target[a] = draw(dims) if data[i] == 1 else data[i]
    how = draw(st.sampled_from(("valid", "valid", "clash", "range", "negative", "unsorted", "length", "random")))
    if how == "random":
        axes = draw(st.lists(st.integers(-1, 6), max_size=5, unique=True))
        if draw(st.booleans()):
            axes.sort()  # else nearly every random list is rejected as unsorted
        target = list(draw(_shapes(dims, 5)))
    elif how == "clash" and r:
        a = axes[draw(st.integers(0, r - 1))]
        target[a] = draw(dims.filter(lambda v, old=target[a]: v != old))
    elif how == "range" and r:
        axes[draw(st.integers(0, r - 1))] = draw(st.integers(rank, rank + 2))
    elif how == "negative" and r:
        # OpenVINO reads axes as unsigned (-1 is 2**64-1): out of range or unsorted there, negative here
        axes[draw(st.integers(0, r - 1))] = draw(st.integers(-3, -1))
    elif how == "unsorted" and r >= 2:
        i, j = sorted(draw(st.lists(st.integers(0, r - 1), min_size=2, max_size=2, unique=True)))
        axes[i], axes[j] = axes[j], axes[i]
    elif how == "length":
        if r and draw(st.booleans()):
            del axes[draw(st.integers(0, r - 1))]
        else:
            axes = sorted([*axes, draw(st.integers(0, 5))])
    # Duplicate axes: OpenVINO's non-strict is_sorted lets them through, the core rejects them
    # (ref 1.2 and 5.3); pinned by test_explicit_duplicate_axes_* below.
    assume(len(set(axes)) == len(axes))
    # Scalar data with one axis: OpenVINO accepts it, the core wants exactly rank(data) axes
    # (ref 4 "Scalar data" and 5.4); pinned by test_explicit_axes_length_must_match_data_rank below.
    assume(not (r == 0 and len(axes) == 1))
    return data, tuple(target), tuple(axes)


@st.composite
def bidirectional_cases(
    draw: st.DrawFn, data_dims: st.SearchStrategy[int] = DIMS, dims: st.SearchStrategy[int] = DIMS
) -> Case:
    """data * ones(target): valid by construction, then maybe broken on purpose."""
    data = draw(_shapes(data_dims, 4))
    rt = draw(st.integers(0, 5))
    how = draw(st.sampled_from(("valid", "valid", "clash", "random")))
    if how == "random":
        return data, draw(_shapes(dims, 5)), None
    target: list[int] = []
    for k in range(rt):  # target axis k faces data axis len(data) - rt + k, if that is >= 0
        d = data[len(data) - rt + k] if rt - k <= len(data) else None
        target.append(draw(dims) if d is None or d == 1 else draw(st.sampled_from((1, d))))
    aligned = [k for k in range(rt) if rt - k <= len(data) and data[len(data) - rt + k] != 1]
    if how == "clash" and aligned:
        k = draw(st.sampled_from(aligned))
        d = data[len(data) - rt + k]
        target[k] = draw(dims.filter(lambda v, d=d: v not in (1, d)))
    return data, tuple(target), None


def _exec_safe_bidirectional(case: Case) -> bool:
    """False where the CPU plugin is known to run bidirectional differently from its own shape inference."""
    data, target, _ = case
    # A data dim 1 meeting a target 0: shape inference says 0, the CPU plugin keeps 1 (max semantics, ref 5.1).
    return not any(d == 1 and t == 0 for d, t in zip(reversed(data), reversed(target), strict=False))


def _not_scalar_to_empty(case: Case) -> bool:
    # Scalar data with target []: the CPU plugin segfaults at inference in numpy and bidirectional
    # mode, opset1 and opset3 alike (ref 5.2); shape inference is fine, so the shape tests keep it.
    data, target, _ = case
    return bool(data or target)


# -- shape inference -----------------------------------------------------------------------------


@SHAPE_SETTINGS
@given(case=numpy_cases())
@example(case=((16, 1, 1), (1, 16, 5, 5), None))  # the spec's example
@example(case=((), (), None))
@example(case=((2, 3), (2, 1), None))  # a target 1 never stretches
@example(case=((3, 1), (3,), None))  # rank too large
def test_numpy_shape_matches_openvino(case: Case) -> None:
    for opset in (1, 3):
        check_shape(opset, case, "numpy")


@SHAPE_SETTINGS
@given(case=explicit_cases())
@example(case=((5,), (1, 5, 5, 2), (1,)))  # the spec's examples
@example(case=((5, 5), (1, 5, 5, 2), (1, 2)))
@example(case=((), (2, 3), ()))
@example(case=((2, 2), (3, 2, 2), (2, 1)))  # unsorted
@example(case=((2, 2), (3, 2, 2), (0, -1)))  # negative: 2**64-1 to OpenVINO
def test_explicit_shape_matches_openvino(case: Case) -> None:
    for opset in (1, 3):
        check_shape(opset, case, "explicit")


@SHAPE_SETTINGS
@given(case=bidirectional_cases())
@example(case=((3, 1), (2, 1, 6), None))
@example(case=((2, 3), (1, 1), None))  # the data's dims win over target 1s
@example(case=((2, 1), (), None))
@example(case=((1,), (0,), None))  # shape inference says [0]; only the CPU run differs (ref 5.1)
@example(case=((0,), (1,), None))
def test_bidirectional_shape_matches_openvino(case: Case) -> None:
    check_shape(3, case, "bidirectional")


# -- values on the CPU plugin -----------------------------------------------------------------------


@VALUE_SETTINGS
@given(
    case=numpy_cases(NONZERO_DIMS, SPARSE_ZERO_DIMS).filter(_not_scalar_to_empty),
    opset=st.sampled_from((1, 3)),
    seed=st.integers(0, 2**32 - 1),
)
@example(case=((16, 1, 1), (1, 16, 5, 5), None), opset=1, seed=0)
@example(case=((1,), (0,), None), opset=3, seed=0)  # 1 -> 0 is fine in numpy mode
def test_numpy_values_match_openvino(case: Case, opset: int, seed: int) -> None:
    check_values(opset, case, "numpy", seed)


@VALUE_SETTINGS
@given(
    case=explicit_cases(NONZERO_DIMS, SPARSE_ZERO_DIMS), opset=st.sampled_from((1, 3)), seed=st.integers(0, 2**32 - 1)
)
@example(case=((5, 5), (1, 5, 5, 2), (1, 2)), opset=1, seed=0)
@example(case=((), (), ()), opset=3, seed=0)  # unlike numpy/bidirectional, explicit runs scalar -> [] fine
def test_explicit_values_match_openvino(case: Case, opset: int, seed: int) -> None:
    check_values(opset, case, "explicit", seed)


@VALUE_SETTINGS
@given(
    case=bidirectional_cases(NONZERO_DIMS, SPARSE_ZERO_DIMS)
    .filter(_not_scalar_to_empty)
    .filter(_exec_safe_bidirectional),
    seed=st.integers(0, 2**32 - 1),
)
@example(case=((3, 1), (2, 1, 6), None), seed=0)
@example(case=((2,), (0, 2), None), seed=0)  # a 0 facing no data axis runs correctly
def test_bidirectional_values_match_openvino(case: Case, seed: int) -> None:
    check_values(3, case, "bidirectional", seed)


# -- the documented differences, pinned -------------------------------------------------------------


@pytest.mark.parametrize("opset", [1, 3])
def test_explicit_duplicate_axes_openvino_accepts_core_rejects(opset: int) -> None:
    # ref 1.2 and 5.3: data [1,1] -> T [6] with axes [0,0] passes OpenVINO's validation (and runs garbage).
    assert ov_shape(opset, (1, 1), (6,), "explicit", (0, 0)) == (6,)
    with pytest.raises(bcast.BroadcastError):
        bcast.infer((1, 1), (6,), "explicit", axes_mapping=[0, 0])


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_explicit_duplicate_axes_rejected_by_core(data: st.DataObject) -> None:
    shape = data.draw(_shapes(DIMS, 4, min_rank=2), label="data shape")
    target = data.draw(_shapes(DIMS, 5, min_rank=1), label="target")
    axes = sorted(data.draw(st.lists(st.integers(0, len(target) - 1), min_size=len(shape), max_size=len(shape))))
    i = data.draw(st.integers(0, len(axes) - 2), label="duplicated position")
    axes[i + 1] = axes[i]  # still sorted and in range: only the repetition is wrong
    with pytest.raises(bcast.BroadcastError):
        bcast.infer(shape, target, "explicit", axes_mapping=axes)
    x = np.zeros(shape, dtype=np.float32)
    with pytest.raises(bcast.BroadcastError):
        bcast.broadcast_to(x, target, "explicit", axes_mapping=axes)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_explicit_axes_length_must_match_data_rank(data: st.DataObject) -> None:
    """The core wants exactly rank(data) axes; OpenVINO agrees except that scalar data also takes one axis.

    ref 1.2 check 1 and 5.4: scalar data accepts k = 0 or k = 1, and with k = 1 OpenVINO then wants
    T[axes[0]] compatible with 1.
    """
    shape = data.draw(_shapes(DIMS, 4), label="data shape")
    target = data.draw(_shapes(DIMS, 5, min_rank=1), label="target")
    k = data.draw(st.integers(0, len(target)).filter(lambda n: n != len(shape)), label="len(axes)")
    axes = tuple(sorted(data.draw(st.permutations(range(len(target))))[:k]))
    with pytest.raises(bcast.BroadcastError):
        bcast.infer(shape, target, "explicit", axes_mapping=list(axes))
    openvino_accepts = not shape and k == 1 and target[axes[0]] == 1
    for opset in (1, 3):
        theirs = ov_shape(opset, shape, target, "explicit", axes)
        if openvino_accepts:
            assert theirs == target, f"opset{opset}: scalar data, axes {axes}, target {target}: {theirs}"
        else:
            assert isinstance(theirs, str), f"opset{opset}: data {shape}, axes {axes}: OpenVINO gives {theirs}"


@pytest.mark.parametrize("opset", [1, 3])
def test_explicit_scalar_data_one_axis_openvino_accepts_core_rejects(opset: int) -> None:
    # ref 4 "Scalar data" / 5.4, the case the generators leave out: OpenVINO takes [] -> [2,1,3] with axes [1].
    assert ov_shape(opset, (), (2, 1, 3), "explicit", (1,)) == (2, 1, 3)
    assert isinstance(ov_shape(opset, (), (2, 1, 3), "explicit", (0,)), str)  # T[0] = 2 is not 1
    with pytest.raises(bcast.BroadcastError):
        bcast.infer((), (2, 1, 3), "explicit", axes_mapping=[1])
