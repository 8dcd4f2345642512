"""The VJPs of :mod:`bcast.ops.grad`, against central finite differences and ``torch.autograd``.

Each gradient is checked as a directional derivative: for a random direction ``v`` of one
input's shape, ``<vjp(...)[i], v>`` must equal ``<dy, (f(x + eps v) - f(x - eps v)) / 2 eps>``,
where ``f`` is the forward operator from :mod:`bcast.ops` (so the oracle is the forward
op's own broadcasting, never the plan the VJP reduces through). A random direction catches
any wrong gradient entry almost surely. Inputs are kept away from the points where the
derivative is not defined (ties of max/min, prelu at 0, pow at base <= 0.1); those points
are checked against PyTorch's conventions instead, in the torch section.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import bcast.ops as ops
from bcast.errors import BroadcastError
from bcast.ops.grad import DIFFERENTIABLE, vjp

EPS = 1e-6
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BINARY: dict[str, Callable[..., np.ndarray]] = {
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "div": ops.div,
    "pow": ops.pow,
}
VARIADIC: dict[str, Callable[..., np.ndarray]] = {"max": ops.max, "min": ops.min, "mean": ops.mean, "sum": ops.sum}

seeds = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------------------------
# shared code
# ---------------------------------------------------------------------------------------------


def shapes(n: int, min_side: int = 1) -> st.SearchStrategy[Any]:
    """``n`` mutually broadcastable shapes of rank 0 to 4 (size-1 dims on any side), and their result."""
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=4, min_side=min_side, max_side=3)


def operand(rng: np.random.Generator, op: str, shape: tuple[int, ...], index: int) -> np.ndarray:
    """Values where ``op`` is smooth: pow's base in [0.5, 2], div's divisor at least 0.5 from 0."""
    if op == "pow" and index == 0:
        return rng.uniform(0.5, 2.0, shape)
    if op == "pow":
        return rng.uniform(-2.0, 2.0, shape)
    if op == "div" and index == 1:
        return np.asarray(rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape))
    return rng.uniform(-2.0, 2.0, shape)


def distinct(rng: np.random.Generator, shape_list: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Arrays whose elements all differ by at least 0.1 (across all of them): max/min have no ties."""
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shape_list]
    values = (rng.permutation(sum(sizes)) - sum(sizes) / 2) * 0.1
    out, start = [], 0
    for s, n in zip(shape_list, sizes, strict=True):
        out.append(values[start : start + n].reshape(s))
        start += n
    return out


def check_directional(
    f: Callable[..., np.ndarray],
    inputs: Sequence[Any],
    grads: Sequence[np.ndarray | None],
    dy: np.ndarray,
    wrt: Sequence[int],
    rng: np.random.Generator,
) -> None:
    """``<grads[i], v> == <dy, central difference of f along v in input i>`` for each ``i`` in ``wrt``."""
    for i in wrt:
        x = np.asarray(inputs[i], dtype=np.float64)
        g = grads[i]
        assert g is not None
        assert g.shape == x.shape, (i, g.shape, x.shape)
        v = rng.standard_normal(x.shape)
        plus, minus = list(inputs), list(inputs)
        plus[i], minus[i] = x + EPS * v, x - EPS * v
        numeric = float(np.sum((f(*plus) - f(*minus)) * dy)) / (2 * EPS)
        analytic = float(np.sum(g * v))
        scale = 1.0 + float(np.sum(np.abs(dy))) * (1.0 + float(np.max(np.abs(v), initial=0.0)))
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7 * scale), f"input {i}: {analytic} vs {numeric}"


def pdpd_pair(draw: st.DrawFn, legacy: bool) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """A's shape, B's (a run of A's dims at ``axis``; pdpd: any of them 1; legacy: equal, or all 1), axis."""
    a = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    rb = draw(st.integers(0, len(a)))
    axis = draw(st.sampled_from([-1, *range(len(a) - rb + 1)]))
    start = len(a) - rb if axis == -1 else axis
    run = a[start : start + rb]
    if legacy:
        b = tuple(1 for _ in run) if draw(st.booleans()) else run
    else:
        b = tuple(d if draw(st.booleans()) else 1 for d in run)
    return a, b, axis


# ---------------------------------------------------------------------------------------------
# 1. central finite differences (float64)
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(op=st.sampled_from(sorted(BINARY)), sh=shapes(2), seed=seeds)
def test_binary_numpy_matches_finite_differences(op: str, sh: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (operand(rng, op, s, i) for i, s in enumerate(sh.input_shapes))
    dy = rng.standard_normal(sh.result_shape)
    grads = vjp(op, a, b, dy=dy)
    assert [g.shape for g in grads if g is not None] == [a.shape, b.shape]
    check_directional(BINARY[op], (a, b), grads, dy, (0, 1), rng)


@SETTINGS
@given(op=st.sampled_from(sorted(BINARY)), mode=st.sampled_from(["pdpd", "legacy"]), data=st.data(), seed=seeds)
def test_binary_pdpd_and_legacy_match_finite_differences(op: str, mode: str, data: st.DataObject, seed: int) -> None:
    a_shape, b_shape, axis = data.draw(st.composite(lambda draw: pdpd_pair(draw, mode == "legacy"))())
    rng = np.random.default_rng(seed)
    a, b = operand(rng, op, a_shape, 0), operand(rng, op, b_shape, 1)

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return BINARY[op](x, y, mode=mode, axis=axis)

    dy = rng.standard_normal(f(a, b).shape)
    grads = vjp(op, a, b, dy=dy, mode=mode, axis=axis)
    check_directional(f, (a, b), grads, dy, (0, 1), rng)


@SETTINGS
@given(op=st.sampled_from(sorted(VARIADIC)), data=st.data(), seed=seeds)
def test_variadic_match_finite_differences(op: str, data: st.DataObject, seed: int) -> None:
    n = data.draw(st.integers(1, 4), label="inputs")
    sh = data.draw(shapes(n), label="shapes")
    rng = np.random.default_rng(seed)
    xs = distinct(rng, sh.input_shapes)
    dy = rng.standard_normal(sh.result_shape)
    grads = vjp(op, *xs, dy=dy)
    assert len(grads) == n
    check_directional(VARIADIC[op], xs, grads, dy, range(n), rng)


@SETTINGS
@given(op=st.sampled_from(sorted(VARIADIC)), data=st.data(), seed=seeds)
def test_variadic_pdpd_matches_finite_differences(op: str, data: st.DataObject, seed: int) -> None:
    a_shape, b_shape, axis = data.draw(st.composite(lambda draw: pdpd_pair(draw, False))())
    rng = np.random.default_rng(seed)
    xs = distinct(rng, [a_shape, b_shape])

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return VARIADIC[op](x, y, mode="pdpd", axis=axis)

    dy = rng.standard_normal(a_shape)
    check_directional(f, xs, vjp(op, *xs, dy=dy, mode="pdpd", axis=axis), dy, (0, 1), rng)


@SETTINGS
@given(sh=shapes(3), seed=seeds)
def test_where_matches_finite_differences(sh: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cond = rng.random(sh.input_shapes[0]) < 0.5
    x, y = rng.standard_normal(sh.input_shapes[1]), rng.standard_normal(sh.input_shapes[2])
    dy = rng.standard_normal(sh.result_shape)
    grads = vjp("where", cond, x, y, dy=dy)
    assert grads[0] is None
    check_directional(ops.where, (cond, x, y), grads, dy, (1, 2), rng)


@st.composite
def prelu_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """X's shape and a slope's that broadcasts unidirectionally to it (dims 1 or X's, rank <= X's)."""
    x = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
    rank = draw(st.integers(0, len(x)))
    slope = tuple(d if draw(st.booleans()) else 1 for d in x[len(x) - rank :])
    return x, slope


@SETTINGS
@given(sh=prelu_shapes(), seed=seeds)
def test_prelu_matches_finite_differences(sh: tuple[tuple[int, ...], tuple[int, ...]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 2.0, sh[0]) * rng.choice([-1.0, 1.0], sh[0])  # away from the kink at 0
    slope = rng.uniform(-1.0, 1.0, sh[1])
    dy = rng.standard_normal(sh[0])
    check_directional(ops.prelu, (x, slope), vjp("prelu", x, slope, dy=dy), dy, (0, 1), rng)


def c_shape(kind: str, m: int, n: int) -> tuple[int, ...] | None:
    return {"none": None, "()": (), "(N,)": (n,), "(M,1)": (m, 1), "(1,N)": (1, n), "(M,N)": (m, n)}[kind]


C_KINDS = ["none", "()", "(N,)", "(M,1)", "(1,N)", "(M,N)"]


@SETTINGS
@given(
    mkn=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    trans=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    alpha=st.floats(-2, 2),
    beta=st.floats(-2, 2),
    kind=st.sampled_from(C_KINDS),
    seed=seeds,
)
def test_gemm_matches_finite_differences(
    mkn: tuple[int, int, int], trans: tuple[int, int], alpha: float, beta: float, kind: str, seed: int
) -> None:
    (m, k, n), (ta, tb) = mkn, trans
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k))
    b = rng.standard_normal((n, k) if tb else (k, n))
    cs = c_shape(kind, m, n)
    inputs: list[np.ndarray] = [a, b] + ([] if cs is None else [rng.standard_normal(cs)])
    attrs: dict[str, Any] = {"alpha": alpha, "beta": beta, "trans_a": ta, "trans_b": tb}

    def f(*xs: np.ndarray) -> np.ndarray:
        return ops.gemm(*xs, **attrs)

    dy = rng.standard_normal((m, n))
    grads = vjp("gemm", *inputs, dy=dy, **attrs)
    assert len(grads) == len(inputs)
    check_directional(f, inputs, grads, dy, range(len(inputs)), rng)


@SETTINGS
@given(sh=shapes(2), seed=seeds)
def test_expand_matches_finite_differences(sh: Any, seed: int) -> None:
    x_shape, target = sh.input_shapes  # the target of either rank, 1s on either side: bidirectional
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    dy = rng.standard_normal(sh.result_shape)
    grads = vjp("expand", x, target, dy=dy)
    assert grads[1] is None

    def f(v: np.ndarray, s: tuple[int, ...]) -> np.ndarray:
        return ops.expand(v, s)

    check_directional(f, (x, target), grads, dy, (0,), rng)


@pytest.mark.parametrize(
    ("x_shape", "target"),
    [
        ((3, 1), (2, 3, 4)),  # target of larger rank
        ((2, 3, 4), (3, 1)),  # target of smaller rank: the output is x's shape
        ((2, 1, 4), (1, 5, 1)),  # both stretch
        ((), (2, 2)),
        ((4,), ()),
    ],
)
def test_expand_table_matches_finite_differences(x_shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape)
    out = np.broadcast_shapes(x_shape, target)
    dy = rng.standard_normal(out)
    check_directional(ops.expand, (x, target), vjp("expand", x, target, dy=dy), dy, (0,), rng)


CASES_ZERO = ["add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum"]


@SETTINGS
@given(op=st.sampled_from(CASES_ZERO), sh=shapes(2, min_side=0), seed=seeds)
def test_zero_size_dims_give_gradients_of_the_input_shapes(op: str, sh: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (operand(rng, op, s, i) for i, s in enumerate(sh.input_shapes))
    out = np.broadcast_shapes(a.shape, b.shape)  # NumPy's own rule is the oracle for the output
    ga, gb = vjp(op, a, b, dy=np.ones(out))
    assert ga is not None and gb is not None
    assert (ga.shape, gb.shape) == (a.shape, b.shape)
    if 0 in out:  # nothing flows back from an empty output
        assert not np.any(ga) and not np.any(gb)


# ---------------------------------------------------------------------------------------------
# 2. against torch.autograd
# ---------------------------------------------------------------------------------------------


def _torch() -> Any:
    return pytest.importorskip("torch", reason="torch is needed to compare the VJPs with torch.autograd")


def torch_grads(
    forward: Callable[..., Any], inputs: Sequence[np.ndarray], wrt: Sequence[int], dy: np.ndarray
) -> list[np.ndarray]:
    """``torch.autograd.grad`` of ``forward`` (on torch tensors) at ``inputs``, for the inputs ``wrt``."""
    torch = _torch()
    ts = [torch.tensor(x, requires_grad=i in wrt) for i, x in enumerate(inputs)]
    y = forward(*ts)
    gs = torch.autograd.grad(y, [ts[i] for i in wrt], torch.tensor(dy))
    return [g.numpy() for g in gs]


def assert_same(ours: Sequence[np.ndarray | None], theirs: Sequence[np.ndarray], wrt: Sequence[int]) -> None:
    for i, t in zip(wrt, theirs, strict=True):
        o = ours[i]
        assert o is not None
        assert o.shape == t.shape, (i, o.shape, t.shape)
        np.testing.assert_allclose(o, t, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=f"input {i}")


def torch_binary(op: str) -> Callable[..., Any]:
    torch = _torch()
    table: dict[str, Callable[..., Any]] = {
        "add": torch.add,
        "sub": torch.sub,
        "mul": torch.mul,
        "div": torch.div,
        "pow": torch.pow,
    }
    return table[op]


@SETTINGS
@given(op=st.sampled_from(sorted(BINARY)), sh=shapes(2), seed=seeds)
def test_binary_match_torch(op: str, sh: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = (operand(rng, op, s, i) for i, s in enumerate(sh.input_shapes))
    dy = rng.standard_normal(sh.result_shape)
    assert_same(vjp(op, a, b, dy=dy), torch_grads(torch_binary(op), (a, b), (0, 1), dy), (0, 1))


@SETTINGS
@given(sh=shapes(2), seed=seeds)
def test_pow_at_base_zero_matches_torch(sh: Any, seed: int) -> None:
    """Base 0 (and exponents 0, fractional, negative): PyTorch's conventions, inf and NaN included."""
    rng = np.random.default_rng(seed)
    x = rng.choice([0.0, 0.0, 0.5, 1.0, 2.0], sh.input_shapes[0])
    y = rng.choice([-1.0, 0.0, 0.0, 0.5, 1.0, 2.0, 3.0], sh.input_shapes[1])
    dy = rng.choice([0.0, -1.5, 1.0, 2.0], sh.result_shape)
    assert_same(vjp("pow", x, y, dy=dy), torch_grads(torch_binary("pow"), (x, y), (0, 1), dy), (0, 1))


def test_pow_at_base_zero_table_matches_torch() -> None:
    x = np.array([0.0, 0.0, 0.0, 0.0, -2.0, 2.0])
    y = np.array([0.0, -1.0, 2.0, 0.5, 2.0, 0.0])
    dy = np.ones(6)
    assert_same(vjp("pow", x, y, dy=dy), torch_grads(torch_binary("pow"), (x, y), (0, 1), dy), (0, 1))


def torch_extreme(op: str, n: int) -> Callable[..., Any]:
    """``torch.maximum``/``minimum`` for two inputs; ``stack(...).amax(0)``/``amin(0)`` for more."""
    torch = _torch()
    if n == 1:
        return lambda x: x * 1
    if n == 2:
        pairwise: Callable[..., Any] = torch.maximum if op == "max" else torch.minimum
        return pairwise

    def f(*xs: Any) -> Any:
        stacked = torch.stack(torch.broadcast_tensors(*xs))
        return stacked.amax(0) if op == "max" else stacked.amin(0)

    return f


@SETTINGS
@given(op=st.sampled_from(["max", "min"]), data=st.data(), seed=seeds)
def test_max_min_with_ties_match_torch(op: str, data: st.DataObject, seed: int) -> None:
    """Ties split the gradient evenly, as torch.maximum does for two and amax/amin for more."""
    n = data.draw(st.integers(1, 4), label="inputs")
    sh = data.draw(shapes(n), label="shapes")
    rng = np.random.default_rng(seed)
    xs = [rng.choice([0.0, 1.0, 2.0], s) for s in sh.input_shapes]  # ties everywhere
    dy = rng.standard_normal(sh.result_shape)
    assert_same(vjp(op, *xs, dy=dy), torch_grads(torch_extreme(op, n), xs, range(n), dy), range(n))


def test_two_way_tie_splits_in_half_like_torch_maximum() -> None:
    a, b, dy = np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([4.0, 4.0])
    ours = vjp("max", a, b, dy=dy)
    theirs = torch_grads(torch_extreme("max", 2), (a, b), (0, 1), dy)
    assert_same(ours, theirs, (0, 1))
    assert theirs[0].tolist() == [2.0, 4.0]  # the convention itself, as torch states it


@SETTINGS
@given(op=st.sampled_from(["mean", "sum"]), data=st.data(), seed=seeds)
def test_mean_sum_match_torch(op: str, data: st.DataObject, seed: int) -> None:
    torch = _torch()
    n = data.draw(st.integers(1, 4), label="inputs")
    sh = data.draw(shapes(n), label="shapes")
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s) for s in sh.input_shapes]
    dy = rng.standard_normal(sh.result_shape)

    def f(*ts: Any) -> Any:
        total = torch.stack(torch.broadcast_tensors(*ts)).sum(0)
        return total / n if op == "mean" else total

    assert_same(vjp(op, *xs, dy=dy), torch_grads(f, xs, range(n), dy), range(n))


@SETTINGS
@given(sh=shapes(3), seed=seeds)
def test_where_matches_torch(sh: Any, seed: int) -> None:
    torch = _torch()
    rng = np.random.default_rng(seed)
    cond = rng.random(sh.input_shapes[0]) < 0.5
    x, y = rng.standard_normal(sh.input_shapes[1]), rng.standard_normal(sh.input_shapes[2])
    dy = rng.standard_normal(sh.result_shape)
    theirs = torch_grads(torch.where, (cond, x, y), (1, 2), dy)
    assert_same(vjp("where", cond, x, y, dy=dy), theirs, (1, 2))


@SETTINGS
@given(sh=prelu_shapes(), seed=seeds)
def test_prelu_matches_torch_including_zero(sh: tuple[tuple[int, ...], tuple[int, ...]], seed: int) -> None:
    """PRelu as ``where(x > 0, x, slope * x)``: at ``x == 0`` the slope side (torch.nn.functional.prelu
    wants a 1-D weight of the channel size, so it cannot take ONNX's unidirectional slopes)."""
    torch = _torch()
    rng = np.random.default_rng(seed)
    x = rng.choice([-1.5, -0.5, 0.0, 0.0, 0.5, 2.0], sh[0])
    slope = rng.uniform(-1.0, 1.0, sh[1])
    dy = rng.standard_normal(sh[0])
    theirs = torch_grads(lambda t, s: torch.where(t > 0, t, s * t), (x, slope), (0, 1), dy)
    assert_same(vjp("prelu", x, slope, dy=dy), theirs, (0, 1))


@SETTINGS
@given(
    mkn=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    trans=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    alpha=st.floats(-2, 2),
    beta=st.floats(-2, 2),
    kind=st.sampled_from(C_KINDS),
    seed=seeds,
)
def test_gemm_matches_torch(
    mkn: tuple[int, int, int], trans: tuple[int, int], alpha: float, beta: float, kind: str, seed: int
) -> None:
    (m, k, n), (ta, tb) = mkn, trans
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k))
    b = rng.standard_normal((n, k) if tb else (k, n))
    cs = c_shape(kind, m, n)
    inputs = [a, b] + ([] if cs is None else [rng.standard_normal(cs)])

    def f(ta_: Any, tb_: Any, tc: Any = None) -> Any:
        y = alpha * ((ta_.T if ta else ta_) @ (tb_.T if tb else tb_))
        return y if tc is None else y + beta * tc

    dy = rng.standard_normal((m, n))
    wrt = range(len(inputs))
    ours = vjp("gemm", *inputs, dy=dy, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    assert_same(ours, torch_grads(f, inputs, wrt, dy), wrt)


@SETTINGS
@given(sh=shapes(2), seed=seeds)
def test_expand_matches_torch(sh: Any, seed: int) -> None:
    torch = _torch()
    x_shape, target = sh.input_shapes
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    out = tuple(torch.broadcast_shapes(x_shape, target))
    dy = rng.standard_normal(out)
    theirs = torch_grads(lambda t: t.expand(out), (x,), (0,), dy)
    assert_same(vjp("expand", x, target, dy=dy), theirs, (0,))


# ---------------------------------------------------------------------------------------------
# 3. shapes, dtypes and errors
# ---------------------------------------------------------------------------------------------


def example_call(op: str, dtype: type) -> tuple[tuple[Any, ...], dict[str, Any], tuple[int, ...]]:
    """Inputs (of ``dtype``, broadcasting both ways), attributes and the output shape of one call per op."""
    rng = np.random.default_rng(1)

    def r(*s: int) -> np.ndarray:
        return rng.uniform(0.5, 2.0, s).astype(dtype)

    table: dict[str, tuple[tuple[Any, ...], dict[str, Any], tuple[int, ...]]] = {
        **{b: ((r(2, 1, 3), r(4, 1)), {}, (2, 4, 3)) for b in BINARY},
        **{v: ((r(2, 1), r(3), r(1, 1, 1)), {}, (1, 2, 3)) for v in VARIADIC},
        "where": ((rng.random((2, 1)) < 0.5, r(3), r(1, 3)), {}, (2, 3)),
        "prelu": ((r(2, 3) - 1, r(3)), {}, (2, 3)),
        "gemm": ((r(3, 2), r(4, 3), r(1, 4)), {"trans_a": 1, "trans_b": 1, "alpha": 0.5}, (2, 4)),
        "expand": ((r(3, 1), (2, 1, 4)), {}, (2, 3, 4)),
    }
    return table[op]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", DIFFERENTIABLE)
def test_gradients_have_the_inputs_shapes_and_dtypes(op: str, dtype: type) -> None:
    inputs, attrs, out = example_call(op, dtype)
    grads = vjp(op, *inputs, dy=np.ones(out, dtype), **attrs)
    assert len(grads) == len(inputs)
    for x, g in zip(inputs, grads, strict=True):
        if (op == "where" and x is inputs[0]) or (op == "expand" and x is inputs[1]):
            assert g is None  # the condition and the shape have no gradient
            continue
        assert g is not None
        assert (g.shape, g.dtype) == (np.shape(x), np.dtype(dtype)), (op, g.shape, g.dtype)


@pytest.mark.parametrize("op", DIFFERENTIABLE)
def test_float32_gradients_agree_with_float64(op: str) -> None:
    """Same values in either precision (the float64 ones are checked against the oracles above)."""
    i32, attrs, out = example_call(op, np.float32)
    i64, _, _ = example_call(op, np.float64)
    g32 = vjp(op, *i32, dy=np.ones(out, np.float32), **attrs)
    g64 = vjp(op, *i64, dy=np.ones(out), **attrs)
    for a, b in zip(g32, g64, strict=True):
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def with_ints(op: str) -> tuple[tuple[Any, ...], dict[str, Any], tuple[int, ...]]:
    """The example call of ``op`` with its first differentiable input made int32."""
    inputs, attrs, out = example_call(op, np.float64)
    k = 1 if op == "where" else 0
    changed = list(inputs)
    changed[k] = np.ones(np.shape(inputs[k]), np.int32)
    return tuple(changed), attrs, out


@pytest.mark.parametrize("op", DIFFERENTIABLE)
def test_non_float_inputs_raise_type_error(op: str) -> None:
    inputs, attrs, out = with_ints(op)
    with pytest.raises(TypeError, match=r"floating-point.*int32"):
        vjp(op, *inputs, dy=np.ones(out), **attrs)


@pytest.mark.parametrize("op", DIFFERENTIABLE)
def test_wrong_dy_shape_raises_broadcast_error_naming_both_shapes(op: str) -> None:
    inputs, attrs, out = example_call(op, np.float64)
    wrong = (*out, 5)
    with pytest.raises(BroadcastError) as info:
        vjp(op, *inputs, dy=np.ones(wrong), **attrs)
    text = str(info.value)
    for s in (wrong, out):
        assert "[" + ",".join(map(str, s)) + "]" in text, (s, text)


@pytest.mark.parametrize("op", ["relu", "mod", "equal", "", 3, None])
def test_unknown_or_non_differentiable_op_raises_type_error(op: Any) -> None:
    with pytest.raises(TypeError, match=r"unknown or non-differentiable.*accepted: add"):
        vjp(op, np.ones(2), np.ones(2), dy=np.ones(2))


@pytest.mark.parametrize("op", [o for o in DIFFERENTIABLE if o != "gemm"])
def test_attributes_to_ops_that_take_none_raise_type_error(op: str) -> None:
    inputs, _, out = example_call(op, np.float64)
    with pytest.raises(TypeError, match=rf"{op} takes no attributes.*alpha"):
        vjp(op, *inputs, dy=np.ones(out), alpha=2.0)


def test_unknown_gemm_attribute_raises_type_error_naming_the_accepted_ones() -> None:
    inputs, _, out = example_call("gemm", np.float64)
    with pytest.raises(TypeError, match=r"alpha, beta, trans_a, trans_b.*transA"):
        vjp("gemm", *inputs, dy=np.ones(out), transA=1)


@pytest.mark.parametrize(
    ("op", "n"), [("add", 1), ("add", 3), ("where", 2), ("prelu", 3), ("gemm", 1), ("gemm", 4), ("expand", 1)]
)
def test_wrong_number_of_inputs_raises_type_error(op: str, n: int) -> None:
    with pytest.raises(TypeError, match=f"{op} takes"):
        vjp(op, *([np.ones((2, 2))] * n), dy=np.ones((2, 2)))


def test_variadic_without_inputs_raises_type_error() -> None:
    with pytest.raises(TypeError, match="one or more inputs"):
        vjp("max", dy=np.ones(2))


@pytest.mark.parametrize("op", ["where", "prelu", "gemm", "expand"])
def test_mode_or_axis_to_ops_with_their_own_rule_raise_type_error(op: str) -> None:
    inputs, attrs, out = example_call(op, np.float64)
    with pytest.raises(TypeError, match="takes no mode or axis"):
        vjp(op, *inputs, dy=np.ones(out), mode="pdpd", **attrs)


@pytest.mark.parametrize(
    ("op", "a", "b", "mode"),
    [("add", (2, 3), (3, 2), "numpy"), ("mul", (2, 3), (4,), "pdpd"), ("max", (2, 3), (1, 3), "legacy")],
)
def test_incompatible_shapes_raise_broadcast_error_like_the_forward_op(
    op: str, a: tuple[int, ...], b: tuple[int, ...], mode: str
) -> None:
    forward = {**BINARY, **VARIADIC}[op]
    with pytest.raises(BroadcastError):
        forward(np.ones(a), np.ones(b), mode=mode)  # the oracle: the forward op rejects them too
    with pytest.raises(BroadcastError, match=op):
        vjp(op, np.ones(a), np.ones(b), dy=np.ones(a), mode=mode)
