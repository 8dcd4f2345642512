"""bcast.paddle against paddlepaddle 3.3.1 (CPU) as the oracle.

The legacy dygraph ops ``paddle._legacy_C_ops.elementwise_<op>(X, Y, "axis", axis)`` are
the only Paddle 3.x entry points that still take ``axis``; they run Paddle's shape
inference and then its CPU kernel. Cases where Paddle corrupts its heap or dies of a
signal run in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import bcast
import bcast.paddle as bp

paddle = pytest.importorskip("paddle", reason="paddlepaddle is the oracle for the Paddle profile")
legacy = paddle._legacy_C_ops

FAST = settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_paddle(op: str, x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    out = getattr(legacy, "elementwise_" + op)(paddle.to_tensor(x), paddle.to_tensor(y), "axis", axis)
    return np.asarray(out.numpy())


def paddle_grad(op: str, x: np.ndarray, y: np.ndarray, dout: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    tx = paddle.to_tensor(x, stop_gradient=False)
    ty = paddle.to_tensor(y, stop_gradient=False)
    out = getattr(legacy, "elementwise_" + op)(tx, ty, "axis", axis)
    dx, dy = paddle.grad([out], [tx, ty], grad_outputs=[paddle.to_tensor(dout)])
    return np.asarray(dx.numpy()), np.asarray(dy.numpy())


def overflows(rx: int, ry: int, axis: int) -> bool:
    """Paddle's unchecked case: the lower-rank operand placed past the end (it writes past a buffer)."""
    r, s = max(rx, ry), min(rx, ry)
    if rx == ry or not -r <= axis < r:
        return False
    start = axis if axis >= 0 else r - s + axis + 1
    return start >= 0 and start + s > r


@st.composite
def shape_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    dim = st.sampled_from([1, 1, 2, 3, 3, 0]) if draw(st.integers(0, 9)) == 0 else st.sampled_from([1, 2, 3])
    big = tuple(draw(st.lists(dim, min_size=0, max_size=4)))
    kind = draw(st.sampled_from(["sub", "sub", "same-rank", "identical"]))
    if kind == "identical":
        small = big
    elif kind == "same-rank":
        small = tuple(d if draw(st.booleans()) else draw(dim) for d in big)
    else:
        n = draw(st.integers(0, max(len(big) - 1, 0)))
        start = draw(st.integers(0, len(big) - n))
        small = tuple(big[start + i] if draw(st.integers(0, 3)) else draw(dim) for i in range(n))
    r = len(big)
    axis = draw(st.integers(-r - 1, r + 1))
    return (small, big, axis) if draw(st.booleans()) else (big, small, axis)


# --- shapes -------------------------------------------------------------------------------


@FAST
@given(shape_cases())
def test_shapes_raise_iff_paddle_raises(case: tuple[tuple[int, ...], tuple[int, ...], int]) -> None:
    xs, ys, axis = case
    if overflows(len(xs), len(ys), axis):
        with pytest.raises(bcast.BroadcastError, match="runs past"):
            bp.elementwise_shape(xs, ys, axis)
        return
    x, y = np.ones(xs, np.float32), np.ones(ys, np.float32)
    try:
        expected = run_paddle("add", x, y, axis).shape
    except ValueError:
        with pytest.raises(bcast.BroadcastError):
            bp.elementwise_shape(xs, ys, axis)
        return
    assert bp.elementwise_shape(xs, ys, axis) == expected


QUIRKS = [
    # (X, Y, axis, why)
    ((3,), (2, 3, 4), 1, "X may be the lower-rank operand"),
    ((3, 4), (2, 2, 3, 4), 2, "Paddle's own xsize_lessthan_ysize test"),
    ((2, 1, 4), (3,), 1, "two-way: X's 1 stretches to Y's 3"),
    ((8, 1, 6, 1), (7, 1, 5), 1, "the broadcast-rules doc's 'won't happen' example"),
    ((2, 3), (1, 1, 1), -1, "the output takes Y's rank"),
    ((2, 3), (3, 1, 1), 1, "Y's trailing 1s are kept, not trimmed"),
    ((2, 3, 4), (4, 1), 1, "trailing 1s broadcast like any 1 where they fit"),
    ((2, 3, 4), (3,), -1, "axis -1 is plain right alignment"),
    ((2, 3, 4), (3,), -2, "shape inference accepts -2, the CPU kernel rejects it"),
    ((2, 3, 4), (3, 4), -3, "normalises to -1"),
    ((2, 3, 4), (4,), 3, "axis out of [-R, R)"),
    ((2, 3), (2, 1), 1, "equal ranks need axis -1 or 0"),
    ((2, 3), (2, 1), 0, "equal ranks with axis 0"),
    ((2, 3, 4), (2, 3, 4), 5, "identical shapes skip the axis check"),
    ((2, 3, 4), (2, 3, 4), -7, "identical shapes skip the kernel's check too"),
    ((0,), (1,), -1, "0 meets 1"),
    ((0,), (3,), -1, "0 meets only 0 or 1"),
    ((), (2, 3), -1, "rank 0 as X"),
    ((1,), (), -1, "rank 0 as Y"),
    ((2, 0), (), -2, "an empty output: the kernel that rejects axis -2 never runs"),
    ((2, 3), (), -2, "the same with elements: the kernel rejects axis -2"),
]


@pytest.mark.parametrize(("xs", "ys", "axis", "why"), QUIRKS, ids=[q[3] for q in QUIRKS])
def test_shape_quirks(xs: tuple[int, ...], ys: tuple[int, ...], axis: int, why: str) -> None:
    try:
        expected = run_paddle("add", np.ones(xs, np.float32), np.ones(ys, np.float32), axis).shape
    except ValueError:
        with pytest.raises(bcast.BroadcastError, match="paddle: "):
            bp.elementwise_shape(xs, ys, axis)
    else:
        assert bp.elementwise_shape(xs, ys, axis) == expected


def test_core_pdpd_differs_where_paddle_does() -> None:
    # the core follows the rules text: B into A only; Paddle broadcasts both ways
    with pytest.raises(bcast.BroadcastError):
        bcast.broadcast_shapes((2, 1, 4), (3,), mode="pdpd", axis=1)
    assert bp.elementwise_shape((2, 1, 4), (3,), axis=1) == (2, 3, 4)
    assert run_paddle("add", np.ones((2, 1, 4)), np.ones(3), 1).shape == (2, 3, 4)


_RUN_CHILD = textwrap.dedent(
    """
    import sys, numpy as np, paddle
    xs, ys, axis, op, dt, xv, yv = eval(sys.argv[1])
    x = paddle.to_tensor(np.array(xv, dt).reshape(xs)); y = paddle.to_tensor(np.array(yv, dt).reshape(ys))
    try:
        out = getattr(paddle._legacy_C_ops, "elementwise_" + op)(x, y, "axis", axis)
        print("RESULT", tuple(out.shape), flush=True)
    except Exception:
        print("RAISED", flush=True)
    """
)


def _child(case: tuple[object, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _RUN_CHILD, repr(case)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("xs", "ys", "axis"),
    [
        pytest.param((2, 3, 4), (3, 4), 2, id="aborts"),
        # a child process with paddle each: the second behaviour with the full suite
        pytest.param((3, 2, 2, 1), (1, 2, 1), 2, id="returns-a-truncated-shape", marks=pytest.mark.full),
    ],
)
def test_unchecked_bound_has_no_defined_result(xs: tuple[int, ...], ys: tuple[int, ...], axis: int) -> None:
    with pytest.raises(bcast.BroadcastError, match="does not check this"):
        bp.elementwise_shape(xs, ys, axis)
    n = int(np.prod(xs)), int(np.prod(ys))
    proc = _child((xs, ys, axis, "add", "float32", [1.0] * n[0], [1.0] * n[1]))
    out = proc.stdout
    # Paddle writes past a buffer here, so what follows is undefined: it dies (SIGABRT, the usual
    # outcome), drops the overflowing dims of the small operand, or (seen once in CI, the heap
    # already corrupted) raises; never a clean refusal before writing, which is what bcast gives
    assert proc.returncode != 0 or "RESULT" in out or "RAISED" in out


# --- values -------------------------------------------------------------------------------

OPS_DTYPES = [
    (op, dt)
    for op in ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "max", "min")
    for dt in ("int32", "int64", "float32", "float64")
] + [
    ("add", "bool"),
    ("mul", "bool"),
    ("add", "uint8"),
    ("div", "int16"),
    ("floordiv", "int8"),
    ("floordiv", "float16"),
]
OPS_DTYPES += [(op, "complex128") for op in ("add", "sub", "mul", "div")]


def _values(rng: np.random.Generator, shape: tuple[int, ...], op: str, dt: str, divisor: bool) -> np.ndarray:
    kind = np.dtype(dt).kind
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        lo, hi = (-3, 6) if op == "pow" and divisor else (-20, 21)
        if kind == "u" or (dt == "int8" and not divisor):
            lo = max(lo, 0)
        v = rng.integers(lo, hi, shape)
        if divisor and op in ("div", "floordiv", "mod"):
            v = np.where(v == 0, 3, v)
        return v.astype(dt)
    v = rng.uniform(-4, 4, shape).round(1)
    if kind == "c":
        v = v + 1j * rng.uniform(-4, 4, shape).round(1)
    return v.astype(dt)


@FAST
@given(shape_cases(), st.sampled_from(OPS_DTYPES), st.integers(0, 2**32 - 1))
def test_values_match_paddle(
    case: tuple[tuple[int, ...], tuple[int, ...], int], op_dt: tuple[str, str], seed: int
) -> None:
    xs, ys, axis = case
    op, dt = op_dt
    try:
        bp.elementwise_shape(xs, ys, axis)
    except bcast.BroadcastError:
        assume(False)
    rng = np.random.default_rng(seed)
    x, y = _values(rng, xs, op, dt, False), _values(rng, ys, op, dt, True)
    try:
        got = bp.elementwise(op, x, y, axis)
    except TypeError:  # no kernel for this dtype with this axis: Paddle must fail too
        with pytest.raises(RuntimeError, match="no kernels"):
            run_paddle(op, x, y, axis)
        return
    expected = run_paddle(op, x, y, axis)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if np.dtype(dt).kind in "fc":
        tol = 2e-3 if dt == "float16" else 1e-6 if dt in ("float32", "complex64") else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


VALUE_TABLE = [
    ("div", "int32", [7, -7, 7, -7], [2, 2, -2, -2], "truncates toward zero"),
    ("floordiv", "int64", [7, -7, 7, -7], [2, 2, -2, -2], "floors"),
    ("mod", "int32", [7, -7, 7, -7], [2, 2, -2, -2], "divisor's sign"),
    ("floordiv", "int8", [-128, 127], [-1, -1], "narrow ints wrap"),
    ("div", "uint8", [249, 7], [2, 2], "unsigned"),
    ("pow", "int32", [-1, 1, 2, -2, 0, 0, 3, 2], [-1, -3, -1, -1, 0, -1, 25, 31], "int pow: trunc, 0**-1, overflow"),
    ("pow", "int64", [3, -3, 2, 0], [40, 39, 62, -2], "int64 pow through double"),
    ("max", "float32", [np.nan, 1, 0.0, -0.0], [1, np.nan, -0.0, 0.0], "NaN either side; ties return Y"),
    ("min", "float64", [np.nan, 1, 0.0, -0.0], [1, np.nan, -0.0, 0.0], "NaN either side; ties return Y"),
    ("mod", "float64", [-0.0, 5, -5, 1.0, 7.5], [2, np.inf, np.inf, 0.1, -2], "float mod keeps fmod's zero sign"),
    ("floordiv", "float64", [1.0, -1.0, 5, -5, 0.0], [0.1, 0.1, 0.0, 0.0, 0.0], "float floordiv, by zero"),
    ("div", "complex128", [5 + 0j, 1 + 1j], [0j, 1 - 1j], "complex division by zero is NaN"),
    ("div", "float32", [1, -1, 0], [0, 0, 0], "float division by zero"),
    ("add", "bool", [True, True, False], [True, False, False], "bool add is or"),
]


@pytest.mark.parametrize(("op", "dt", "xv", "yv", "why"), VALUE_TABLE, ids=[f"{t[0]}-{t[4]}" for t in VALUE_TABLE])
def test_value_quirks(op: str, dt: str, xv: list[object], yv: list[object], why: str) -> None:
    x, y = np.array(xv, dt), np.array(yv, dt)
    expected = run_paddle(op, x, y, -1)
    got = bp.elementwise(op, x, y)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    if got.dtype.kind == "f":  # signed zeros too
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("op", ["div", "floordiv", "mod"])
def test_integer_division_by_zero_raises_like_paddle(op: str) -> None:
    x, y = np.array([5, -5], np.int32), np.array([0, 1], np.int32)
    with pytest.raises(Exception, match="division by zero"):
        run_paddle(op, x, y, -1)
    with pytest.raises(ZeroDivisionError):
        bp.elementwise(op, x, y)


def test_int_min_by_minus_one_kills_paddle() -> None:
    low = np.iinfo(np.int32).min
    with pytest.raises(OverflowError, match="SIGFPE"):
        bp.elementwise("div", np.array([low], np.int32), np.array([-1], np.int32))
    proc = _child(((1,), (1,), -1, "div", "int32", [low], [-1]))
    assert proc.returncode != 0 and "RESULT" not in proc.stdout


@pytest.mark.parametrize(("op", "axis"), [(op, -1) for op in bp.OPS] + [("div", 0)])
@pytest.mark.parametrize(
    "dt", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64"]
)
def test_dtype_support_matches_paddle(op: str, axis: int, dt: str) -> None:
    x = y = np.ones(3, dt)
    try:
        expected = run_paddle(op, x, y, axis)
    except Exception:
        with pytest.raises(TypeError, match="no CPU kernel"):
            bp.elementwise(op, x, y, axis)
        return
    if op == "mod" and dt == "complex64":  # accepted by Paddle, deliberately not reproduced
        with pytest.raises(TypeError):
            bp.elementwise(op, x, y, axis)
        return
    np.testing.assert_array_equal(bp.elementwise(op, x, y, axis), expected)


def test_mixed_dtypes_rejected_like_paddle() -> None:
    x, y = np.ones(2, np.int32), np.ones(2, np.float32)
    with pytest.raises(ValueError, match="does not match the type"):
        run_paddle("add", x, y, -1)
    with pytest.raises(TypeError, match="one dtype"):
        bp.elementwise("add", x, y)


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="unknown op"):
        bp.elementwise("hypot", np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="axis"):
        bp.elementwise_shape((2,), (2,), axis=1.0)  # type: ignore[arg-type]
    with pytest.raises(bcast.BroadcastError, match="rank is unknown"):
        bp.elementwise_shape("[...]", (2,))
    assert bp.elementwise("elementwise_add", np.ones(2), np.ones(2)).tolist() == [2.0, 2.0]


# --- gradients ----------------------------------------------------------------------------

GRAD_OPS = ["add", "sub", "mul", "div", "pow", "max", "min"]


@FAST
@given(shape_cases(), st.sampled_from(GRAD_OPS), st.sampled_from(["float64", "float32"]), st.integers(0, 2**32 - 1))
def test_grads_match_paddle_autograd(
    case: tuple[tuple[int, ...], tuple[int, ...], int], op: str, dt: str, seed: int
) -> None:
    xs, ys, axis = case
    try:
        out = bp.elementwise_shape(xs, ys, axis)
    except bcast.BroadcastError:
        assume(False)
    rng = np.random.default_rng(seed)
    # small integers as floats: max/min ties happen; pow stays on positive bases
    x = rng.integers(1 if op == "pow" else -2, 4, xs).astype(dt)
    y = rng.integers(1 if op in ("div", "pow") else -2, 4, ys).astype(dt)
    dout = rng.uniform(-1, 1, out.to_tuple()).astype(dt)
    try:
        ex, ey = paddle_grad(op, x, y, dout, axis)
    except ValueError:
        with pytest.raises(bcast.BroadcastError, match=r"ignores axis|refuse an axis below -1"):
            bp.elementwise_grad(op, x, y, dout, axis)
        return
    refusal = None
    try:
        gx, gy = bp.elementwise_grad(op, x, y, dout, axis)
    except bcast.BroadcastError as e:
        refusal = str(e)
    if refusal is not None:
        # Paddle's kernel read past dout's buffer and returned whatever lay there: undefined
        # values, so only the refusal (and its reason) can be checked
        assert "reads past dout" in refusal, refusal
        return
    tol = 1e-5 if dt == "float32" else 1e-10
    assert gx.shape == ex.shape and gy.shape == ey.shape and gx.dtype == ex.dtype
    np.testing.assert_allclose(gx, ex, rtol=tol, atol=tol)
    np.testing.assert_allclose(gy, ey, rtol=tol, atol=tol)


GRAD_TABLE = [
    ("max", [1.0, 2.0, 3.0, np.nan], [1.0, 1.0, 4.0, 1.0], "ties split half and half; NaN gets nothing"),
    ("min", [1.0, 2.0, 3.0, np.nan], [1.0, 1.0, 4.0, 1.0], "ties split half and half"),
    ("pow", [0.0, 0.0, 0.0, 0.0, 0.0, -0.0, -1.0], [0.0, 0.5, 2.0, -1.0, np.inf, -1.0, 2.0], "pow at x = 0"),
    ("div", [1.0, 0.0, -2.0], [0.0, 0.0, 4.0], "div by zero"),
]


@pytest.mark.parametrize(("op", "xv", "yv", "why"), GRAD_TABLE, ids=[t[3] for t in GRAD_TABLE])
def test_grad_quirks(op: str, xv: list[float], yv: list[float], why: str) -> None:
    x, y = np.array(xv), np.array(yv)
    dout = np.arange(1.0, len(xv) + 1)
    ex, ey = paddle_grad(op, x, y, dout, -1)
    gx, gy = bp.elementwise_grad(op, x, y, dout)
    np.testing.assert_array_equal(gx, ex)
    np.testing.assert_array_equal(gy, ey)


def test_max_grad_ignores_axis_like_paddle() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=(2, 3, 3)), rng.uniform(size=3)
    dout = np.ones((2, 3, 3))
    ex, ey = paddle_grad("max", x, y, dout, 1)
    gx, gy = bp.elementwise_grad("max", x, y, dout, axis=1)
    np.testing.assert_allclose(gx, ex)
    np.testing.assert_allclose(gy, ey)
    # and that is not the gradient of the forward op that ran (Y placed at axis 1)
    assert not np.allclose(ex, (x > y[:, None]).astype(float))


@pytest.mark.parametrize("op", ["add", "mul", "div", "pow"])
def test_complex_grads(op: str) -> None:
    rng = np.random.default_rng(1)
    x = (rng.uniform(0.5, 2, (2, 3)) + 1j * rng.uniform(-1, 1, (2, 3))).astype(np.complex128)
    y = (rng.uniform(0.5, 2, 3) + 1j * rng.uniform(-1, 1, 3)).astype(np.complex128)
    dout = (rng.uniform(-1, 1, (2, 3)) + 1j * rng.uniform(-1, 1, (2, 3))).astype(np.complex128)
    ex, ey = paddle_grad(op, x, y, dout, -1)
    gx, gy = bp.elementwise_grad(op, x, y, dout)
    np.testing.assert_allclose(gx, ex, rtol=1e-10)
    np.testing.assert_allclose(gy, ey, rtol=1e-10)


def test_grad_dout_checked() -> None:
    with pytest.raises(bcast.BroadcastError, match="dout has shape"):
        bp.elementwise_grad("add", np.ones((2, 3)), np.ones(3), np.ones((3, 2)))
    with pytest.raises(TypeError, match="unknown op"):
        bp.elementwise_grad("mod", np.ones(2), np.ones(2), np.ones(2))


def test_profile_does_not_import_paddle() -> None:
    code = "import sys, bcast, bcast.paddle; bcast.paddle.elementwise_shape((2,), (2,)); print('paddle' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_grad_reads_a_prefix_of_dout_like_paddle() -> None:
    # forward [1,2,2]; Paddle's pow grad right-aligns to [1,1,2] and reads dout's first 2 elements
    x, y = np.array([[[2.0, 3.0]]]), np.array([[1.5, 2.5]])
    dout = np.array([[[1.0, 10.0], [100.0, 1000.0]]])
    ex, ey = paddle_grad("pow", x, y, dout, 0)
    gx, gy = bp.elementwise_grad("pow", x, y, dout, axis=0)
    np.testing.assert_allclose(gx, ex, rtol=1e-12)
    np.testing.assert_allclose(gy, ey, rtol=1e-12)


def test_grad_past_dout_is_refused() -> None:
    # forward [2,1]; right-aligned [2,2] needs 4 elements of a 2-element dout: Paddle reads garbage
    with pytest.raises(bcast.BroadcastError, match="ignores axis"):
        bp.elementwise_grad("max", np.ones((2, 1)), np.ones(2), np.ones((2, 1)), axis=0)


@pytest.mark.parametrize(("xs", "ys"), [((1, 0), ()), ((0,), (0, 3)), ((1, 0), (1, 0, 2))])
def test_a_grad_refuses_an_axis_below_minus_one_even_where_the_output_is_empty(
    xs: tuple[int, ...], ys: tuple[int, ...]
) -> None:
    """The forward op takes axis -2 where its output is empty; Paddle's grad kernel of operands that differ does
    not ("Axis should be great than or equal to 0")."""
    x, y = np.zeros(xs), np.zeros(ys)
    out = bp.elementwise_shape(xs, ys, -2)
    dout = np.zeros(out.to_tuple())
    with pytest.raises(ValueError, match="Axis should be"):
        paddle_grad("add", x, y, dout, -2)
    with pytest.raises(bcast.BroadcastError, match="refuse an axis below -1"):
        bp.elementwise_grad("add", x, y, dout, -2)
