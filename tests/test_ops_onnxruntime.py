"""``bcast.ops`` against onnxruntime: every broadcasting operator, one-node models, random shapes and values.

Each test builds a one-node ONNX model at the newest opset onnxruntime loads (its inputs
have no declared shape, so one session serves every shape), runs it on random
broadcast-compatible inputs, and compares values and dtypes with ``bcast.ops``. Where
onnxruntime has no CPU kernel for a type ONNX allows, the case is skipped with that
reason; values whose result ONNX leaves undefined (integer division by zero, shifts of
the bit width or more in C, integer overflow in Pow, ...) are not drawn.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

onnx = pytest.importorskip("onnx", reason="the ONNX oracle tests build models with onnx")
ort = pytest.importorskip("onnxruntime", reason="the ONNX oracle tests run models with onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")

import bcast.ops as ops  # noqa: E402
import covering  # noqa: E402
from bcast.errors import BroadcastError  # noqa: E402
from bcast.ops._types import onnx_type  # noqa: E402

helper = onnx.helper
ort.set_default_logger_severity(4)  # kernel-lookup failures are expected and reported as skips

#: ONNX element type names and the NumPy dtypes that hold them (float8/int4/float4 have none).
DTYPES: dict[str, Any] = {
    "float": np.float32,
    "double": np.float64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
    "string": np.str_,
}
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: the kind of each type: a table of operators x types runs, by default, each operator with the type of
#: each kind that onnxruntime has kernels for most widely, and each type at least once; the other rows
#: with the full tests
KIND = {"float": "f", "double": "f", "float16": "f", "bfloat16": "f", "bool": "b", "string": "s"}
KIND |= {f"int{b}": "i" for b in (8, 16, 32, 64)} | {f"uint{b}": "u" for b in (8, 16, 32, 64)}
#: the types in that order: the most widely implemented of each kind first
PREFERRED = ["float", "int32", "int64", "uint8", "bool", "string", "double", "float16", "bfloat16"]
PREFERRED += ["int8", "int16", "uint16", "uint32", "uint64"]
Row = tuple[Any, ...]


def by_kind(rows: list[Row], op: Callable[[Row], Any], t: Callable[[Row], str]) -> list[Any]:
    """``rows`` as ``pytest.param``s: for each ``op(row)`` its first type of each kind, and each type with
    its first operator, by default; the rest ``full``."""
    ordered = sorted(rows, key=lambda r: PREFERRED.index(t(r)))
    chosen = covering.one_of_each(ordered, lambda r: (str(op(r)), KIND[t(r)]))
    chosen += [r for r in covering.one_of_each(rows, t) if t(r) not in {t(c) for c in chosen}]
    return covering.marked(rows, chosen)


def _schema_types(op: str, index: int = 0) -> list[str]:
    """The NumPy-representable types of ``op``'s ``index``-th type constraint in the newest schema."""
    tc = onnx.defs.get_schema(op).type_constraints[index]
    names = (t[len("tensor(") : -1] for t in tc.allowed_type_strs)
    return sorted(n for n in names if n in DTYPES)


@functools.cache
def _ort_opset() -> int:
    """The newest default-domain opset this onnxruntime loads (newer ONNX packages know more)."""
    for opset in range(onnx.defs.onnx_opset_version(), 12, -1):
        try:
            _session("Add", ("float", "float"), ("float",), (), opset)
        except Exception:  # onnxruntime raises its own Fail type for an unknown opset
            continue
        return opset
    pytest.skip("onnxruntime loads no opset >= 13")


def _elem(t: str) -> int:
    return int(onnx.TensorProto.STRING if t == "string" else helper.np_dtype_to_tensor_dtype(np.dtype(DTYPES[t])))


@functools.cache
def _session(
    op: str, in_types: tuple[str, ...], out_types: tuple[str, ...], attrs: tuple[tuple[str, Any], ...], opset: int
) -> Any:
    """One-node model of ``op``; inputs and outputs have no declared shape, so it runs on any."""
    names = [f"in{i}" if t else "" for i, t in enumerate(in_types)]
    while names and not names[-1]:  # a trailing omitted input is left out: onnxruntime 1.31 crashes on ""
        names.pop()
    outs = [f"out{i}" for i in range(len(out_types))]
    node = helper.make_node(op, names, outs, **dict(attrs))
    graph = helper.make_graph(
        [node],
        op,
        [
            helper.make_tensor_value_info(n, _elem(t), None)
            for n, t in zip(names, in_types[: len(names)], strict=True)
            if n
        ],
        [helper.make_tensor_value_info(n, _elem(t), None) for n, t in zip(outs, out_types, strict=True)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _ort(
    op: str,
    arrays: Sequence[np.ndarray | None],
    out_types: Sequence[str],
    attrs: dict[str, Any] | None = None,
    opset: int | None = None,
) -> list[np.ndarray]:
    """Run ``op`` in onnxruntime (``None``: an omitted optional input); skip if it has no kernel."""
    in_types = tuple("" if a is None else onnx_type(a.dtype) for a in arrays)
    key = tuple(sorted((attrs or {}).items()))
    try:
        sess = _session(op, in_types, tuple(out_types), key, opset or _ort_opset())
    except Exception as e:  # NOT_IMPLEMENTED comes as onnxruntime's own exception type
        if "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e):
            pytest.skip(
                f"onnxruntime {ort.__version__} has no CPU kernel for {op}({', '.join(filter(None, in_types))})"
            )
        raise
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), (a for a in arrays if a is not None), strict=True)}
    return list(sess.run(None, feeds))


# ---------------------------------------------------------------- values


def _values(
    rng: np.random.Generator,
    t: str,
    shape: tuple[int, ...],
    *,
    lo: float | None = None,
    hi: float | None = None,
    special: bool = True,
) -> np.ndarray:
    """Random values of ONNX type ``t``: integers full-range or small, floats with NaN/inf/-0 mixed in."""
    dt = np.dtype(DTYPES[t])
    if t == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if t == "string":
        return np.asarray(rng.choice(["", "a", "b", "ab"], size=shape))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        low = int(info.min) if lo is None else max(int(lo), int(info.min))
        high = int(info.max) if hi is None else min(int(hi), int(info.max))
        if rng.random() < 0.5:  # small values too: the interesting corners (0, +-1, signs) are common
            low, high = max(low, -5), min(high, 5)
        return np.asarray(rng.integers(low, high, size=shape, endpoint=True, dtype=dt))
    x = rng.standard_normal(shape) * 10.0 ** float(rng.integers(-1, 3))
    if lo is not None or hi is not None:
        x = np.clip(x, lo, hi)
    if special:
        mask = rng.random(shape) < 0.15
        x = np.where(mask, rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], size=shape), x)
    return np.asarray(x).astype(dt)


def _check(got: np.ndarray, want: np.ndarray, *, scale: float = 1.0) -> None:
    """Same shape and dtype; exact for integers, bool and strings, close for floats."""
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "OU":
        assert got.dtype.kind in "OU"
        assert got.tolist() == want.tolist()
        return
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    rtol = {2: 2e-3, 4: 2e-6, 8: 1e-12}[want.dtype.itemsize]
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True)


SHAPES2 = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=5, min_side=0, max_side=3)
SEEDS = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------- binary multidirectional ops

#: ONNX op -> (bcast function, attribute sets to draw from, output is bool)
BINARY: dict[str, tuple[Callable[..., np.ndarray], list[dict[str, Any]], bool]] = {
    "Add": (ops.add, [{}], False),
    "Sub": (ops.sub, [{}], False),
    "Mul": (ops.mul, [{}], False),
    "Div": (ops.div, [{}], False),
    "Mod": (ops.mod, [{"fmod": 0}, {"fmod": 1}], False),
    "BitShift": (ops.bitshift, [{"direction": "LEFT"}, {"direction": "RIGHT"}], False),
    "BitwiseAnd": (ops.bitwise_and, [{}], False),
    "BitwiseOr": (ops.bitwise_or, [{}], False),
    "BitwiseXor": (ops.bitwise_xor, [{}], False),
    "And": (ops.and_, [{}], True),
    "Or": (ops.or_, [{}], True),
    "Xor": (ops.xor, [{}], True),
    "Equal": (ops.equal, [{}], True),
    "Greater": (ops.greater, [{}], True),
    "GreaterOrEqual": (ops.greater_or_equal, [{}], True),
    "Less": (ops.less, [{}], True),
    "LessOrEqual": (ops.less_or_equal, [{}], True),
}


def _binary_operands(op: str, t: str, attrs: dict[str, Any], rng: np.random.Generator, sa: Any, sb: Any) -> tuple:
    """A and B for ``op``, avoiding the values whose result ONNX (or C) leaves undefined."""
    a = _values(rng, t, sa)
    if op == "BitShift":  # C shifts by the bit width or more are undefined; ONNX-28 defines them, tested in test_ops
        bits = np.iinfo(np.dtype(DTYPES[t])).bits
        return a, _values(rng, t, sb, lo=0, hi=bits - 1)
    if op == "Mod" and attrs["fmod"] == 1 and t in ("int64", "uint64"):
        # onnxruntime computes integer fmod in double, so it loses the low bits of values beyond 2**53
        a = _values(rng, t, sa, lo=-(2**53), hi=2**53)
    b = _values(rng, t, sb)
    if op in ("Div", "Mod") and np.dtype(DTYPES[t]).kind in "iu":
        b = np.where(b == 0, np.ones_like(b), b)
        if np.dtype(DTYPES[t]).kind == "i":  # INT_MIN / -1 overflows in C
            info = np.iinfo(b.dtype)
            bad = np.broadcast_to(a == info.min, np.broadcast_shapes(a.shape, b.shape)) & (b == -1)
            b = np.where(bad, np.ones_like(b), np.broadcast_to(b, bad.shape))
    return a, np.asarray(b)


@pytest.mark.parametrize(
    ("op", "attrs", "t"),
    by_kind(
        [(op, attrs, t) for op, (_, attr_sets, _) in BINARY.items() for attrs in attr_sets for t in _schema_types(op)],
        lambda r: (r[0], r[1]),
        lambda r: r[2],
    ),
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) or "default" if isinstance(v, dict) else str(v),
)
@SETTINGS
@given(shapes=SHAPES2, seed=SEEDS)
def test_binary_matches_onnxruntime(op: str, attrs: dict[str, Any], t: str, shapes: Any, seed: int) -> None:
    fn, _, bool_out = BINARY[op]
    if op == "BitShift" and np.dtype(DTYPES[t]).kind == "i" and _ort_opset() < 28:
        pytest.skip("BitShift on signed integers is from opset 28 on; onnxruntime's BitShift takes unsigned only")
    if op == "Mod" and attrs.get("fmod") == 0 and t in ("float", "double", "float16", "bfloat16"):
        pytest.skip("Mod fmod=0 on floats is defined from opset 28 on; onnxruntime runs only an older Mod")
    rng = np.random.default_rng(seed)
    a, b = _binary_operands(op, t, attrs, rng, *shapes.input_shapes)
    (want,) = _ort(op, [a, b], ["bool" if bool_out else t], attrs)
    with np.errstate(all="ignore"):
        got = fn(a, b, **attrs)
    _check(got, want, scale=1.0)


POW_TYPES = [(x, y) for x in _schema_types("Pow", 0) for y in _schema_types("Pow", 1)]


@pytest.mark.parametrize(("tx", "ty"), by_kind(POW_TYPES, lambda r: r[0], lambda r: r[1]), ids=lambda v: str(v))
@SETTINGS
@given(shapes=SHAPES2, seed=SEEDS)
def test_pow_matches_onnxruntime(tx: str, ty: str, shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    int_base = np.dtype(DTYPES[tx]).kind in "iu"
    if int_base:
        # small bases and exponents keep integer powers in range (overflow is undefined in C);
        # non-negative bases keep a fractional exponent real
        int_exp = np.dtype(DTYPES[ty]).kind in "iu"
        x = _values(rng, tx, sa, lo=-3 if int_exp else 0, hi=3)
        y = _values(rng, ty, sb, lo=-3 if int_exp else 0, hi=7, special=False)
        y = y if int_exp else np.abs(y)
        # 0 to a negative power has no integer result (bcast raises, runtimes differ)
        if np.any(y < 0):
            x = np.where(x == 0, 1, x).astype(DTYPES[tx])
        x, y = np.asarray(x), np.asarray(y)
    else:
        x = _values(rng, tx, sa, lo=-4, hi=4)
        y = _values(rng, ty, sb, lo=-3, hi=3)
    (want,) = _ort("Pow", [x, y], [tx])
    with np.errstate(all="ignore"):
        got = ops.pow(x, y)
    _check(got, want)


#: an exponent of 0.5 laid out every way NumPy's power loop may see it: one per base, or one for a run of bases
HALF_LAYOUTS: dict[str, Callable[[Any, tuple[int, ...]], np.ndarray]] = {
    "per element": lambda dt, shape: np.full(shape, 0.5, dt),
    "0-d": lambda dt, shape: np.array(0.5, dt),
    "one per row": lambda dt, shape: np.full((shape[0], 1), 0.5, dt),
    "a zero-stride view": lambda dt, shape: np.broadcast_to(np.array(0.5, dt), shape),
}


@pytest.mark.parametrize("layout", HALF_LAYOUTS)
@pytest.mark.parametrize("t", ["float", "double", "float16", "bfloat16"])
@pytest.mark.parametrize("engine", ["compiled where built", "NumPy engine"])
def test_pow_to_the_half_of_negative_zero_and_infinity_is_onnxruntimes_in_every_layout(
    t: str, layout: str, engine: str
) -> None:
    """(-inf) ** 0.5 is inf and (-0.0) ** 0.5 is 0.0 (C99's pow, onnxruntime's), however the exponent is laid out:
    NumPy's own power loop takes a square root (nan, -0.0) when one 0.5 serves a run of bases."""
    from bcast.engines.numpy import compiled

    dt = DTYPES[t]
    x = np.array([[-np.inf, -0.0, 0.0, 4.0], [-4.0, np.inf, np.nan, -np.inf]], dt)
    y = HALF_LAYOUTS[layout](dt, x.shape)
    (want,) = _ort("Pow", [x, np.full(x.shape, 0.5, dt)], [t])
    with np.errstate(all="ignore"), compiled.using(engine == "compiled where built"):
        got = ops.pow(x, y)
    _check(got, want)
    assert np.signbit(got.astype(np.float64)).tolist() == np.signbit(want.astype(np.float64)).tolist()
    assert got.astype(np.float64)[0, :2].tolist() == [np.inf, 0.0]


# ---------------------------------------------------------------- variadic


VARIADIC: dict[str, Callable[..., np.ndarray]] = {"Max": ops.max, "Min": ops.min, "Mean": ops.mean, "Sum": ops.sum}


@pytest.mark.parametrize(
    ("op", "t"),
    by_kind([(op, t) for op in VARIADIC for t in _schema_types(op)], lambda r: r[0], lambda r: r[1]),
    ids=lambda v: str(v),
)
@SETTINGS
@given(n=st.integers(1, 4), seed=SEEDS, data=st.data())
def test_variadic_matches_onnxruntime(op: str, t: str, n: int, seed: int, data: st.DataObject) -> None:
    shapes = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=4, min_side=0, max_side=3), label="shapes"
    )
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, t, s) for s in shapes.input_shapes]
    (want,) = _ort(op, arrays, [t])
    with np.errstate(all="ignore"):
        got = VARIADIC[op](*arrays)
    # each partial sum is rounded to the type (float16: to 1/16 at 97), so the error scales with the
    # inputs' magnitude, not with a result that cancels to near 0
    finite = [np.abs(x.astype(np.float64)[np.isfinite(x.astype(np.float64))]) for x in arrays]
    largest = max((float(f.max()) for f in finite if f.size), default=0.0)
    _check(got, want, scale=n * (1.0 + largest))


def test_max_min_propagate_nan_like_onnxruntime() -> None:
    # The Max/Min texts say nothing of NaN; onnxruntime propagates it from either side, as bcast does.
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([1.0, np.nan, 3.0], np.float32)
    for op, fn in (("Max", ops.max), ("Min", ops.min)):
        (want,) = _ort(op, [a, b], ["float"])
        _check(fn(a, b), want)
        assert np.isnan(fn(a, b)[:2]).all()


# ---------------------------------------------------------------- where


@pytest.mark.parametrize("t", by_kind([(t,) for t in _schema_types("Where", 1)], lambda r: "", lambda r: r[0]))
@SETTINGS
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=5, min_side=0, max_side=3),
    seed=SEEDS,
)
def test_where_matches_onnxruntime(t: str, shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sc, sx, sy = shapes.input_shapes
    c, x, y = _values(rng, "bool", sc), _values(rng, t, sx), _values(rng, t, sy)
    (want,) = _ort("Where", [c, x, y], [t])
    _check(ops.where(c, x, y), want)


# ---------------------------------------------------------------- expand


@pytest.mark.parametrize("t", by_kind([(t,) for t in _schema_types("Expand")], lambda r: "", lambda r: r[0]))
@SETTINGS
@given(shapes=SHAPES2, seed=SEEDS)
def test_expand_matches_onnxruntime(t: str, shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sx, target = shapes.input_shapes
    x = _values(rng, t, sx)
    (want,) = _ort("Expand", [x, np.array(target, np.int64)], [t])
    _check(ops.expand(x, target), want)


# ---------------------------------------------------------------- unidirectional


@pytest.mark.parametrize("t", _schema_types("PRelu"))
@SETTINGS
@given(x_shape=hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=3), seed=SEEDS, data=st.data())
def test_prelu_matches_onnxruntime(t: str, x_shape: tuple[int, ...], seed: int, data: st.DataObject) -> None:
    slope_shape = _uni(data, x_shape, "slope")
    rng = np.random.default_rng(seed)
    kind = np.dtype(DTYPES[t]).kind
    x = _values(rng, t, x_shape, lo=-100 if kind in "iu" else None, hi=100 if kind in "iu" else None)
    slope = _values(rng, t, slope_shape, lo=-100 if kind in "iu" else None, hi=100 if kind in "iu" else None)
    (want,) = _ort("PRelu", [x, slope], [t])
    with np.errstate(all="ignore"):
        got = ops.prelu(x, slope)
    _check(got, want)


#: C shapes that broadcast unidirectionally to (M, N), as functions of M and N
C_SHAPES: list[Callable[[int, int], tuple[int, ...] | None]] = [
    lambda m, n: None,
    lambda m, n: (),
    lambda m, n: (1,),
    lambda m, n: (n,),
    lambda m, n: (1, n),
    lambda m, n: (m, 1),
    lambda m, n: (1, 1),
    lambda m, n: (m, n),
]


@pytest.mark.parametrize("t", _schema_types("Gemm"))
@SETTINGS
@given(
    mkn=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)),
    c_shape=st.sampled_from(C_SHAPES),
    alpha=st.sampled_from([1.0, 0.1, -2.0, 0.0]),
    beta=st.sampled_from([1.0, 0.1, -1.0, 0.0]),
    trans=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    seed=SEEDS,
)
def test_gemm_matches_onnxruntime(
    t: str, mkn: tuple[int, int, int], c_shape: Any, alpha: float, beta: float, trans: tuple[int, int], seed: int
) -> None:
    m, k, n = mkn
    ta, tb = trans
    rng = np.random.default_rng(seed)
    small = {"lo": -8, "hi": 8, "special": False}
    a = _values(rng, t, (k, m) if ta else (m, k), **small)
    b = _values(rng, t, (n, k) if tb else (k, n), **small)
    cs = c_shape(m, n)
    if k == 0 and cs is not None and beta != 1.0:
        # onnxruntime 1.31 returns C itself when K is 0, not beta * C as the Gemm text says; bcast follows the text
        k = 1
        a = _values(rng, t, (k, m) if ta else (m, k), **small)
        b = _values(rng, t, (n, k) if tb else (k, n), **small)
    c = None if cs is None else _values(rng, t, cs, **small)
    attrs = {"alpha": alpha, "beta": beta, "transA": ta, "transB": tb}
    (want,) = _ort("Gemm", [a, b, c], [t], attrs)
    got = ops.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    _check(got, want, scale=64.0 * (k + 1))


NORM_SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


def _uni(data: st.DataObject, target: tuple[int, ...], label: str) -> tuple[int, ...]:
    """A shape that broadcasts unidirectionally to ``target`` (1s and ``target``'s own dims)."""
    rank = data.draw(st.integers(0, len(target)), label=f"{label} rank")
    tail = target[len(target) - rank :]
    return tuple(data.draw(st.sampled_from([1, d]), label=label) for d in tail)


@pytest.mark.parametrize("t", _schema_types("LayerNormalization"))
@SETTINGS
@given(x_shape=NORM_SHAPES, seed=SEEDS, data=st.data())
def test_layer_normalization_matches_onnxruntime(
    t: str, x_shape: tuple[int, ...], seed: int, data: st.DataObject
) -> None:
    if t == "bfloat16":
        pytest.skip("onnxruntime's Python binding does not take ml_dtypes bfloat16 arrays")
    axis = data.draw(st.integers(-len(x_shape), len(x_shape) - 1), label="axis")
    epsilon = data.draw(st.sampled_from([1e-5, 1e-3, 0.5]), label="epsilon")
    with_bias = data.draw(st.booleans(), label="bias")
    # onnxruntime broadcasts Scale and B only over the normalised axes
    normalised = x_shape[axis:]
    rng = np.random.default_rng(seed)
    x = _values(rng, t, x_shape, special=False)
    scale = _values(rng, t, _uni(data, normalised, "scale"), special=False)
    bias = _values(rng, t, _uni(data, normalised, "bias"), special=False) if with_bias else None
    want = _ort("LayerNormalization", [x, scale, bias], [t, "float", "float"], {"axis": axis, "epsilon": epsilon})
    got = ops.layer_normalization(x, scale, bias, axis=axis, epsilon=epsilon)
    # Y = normalised x (|.| <= sqrt(N)) * scale + bias: its rounding errors scale with those terms,
    # not with Y, which cancels to near 0 where scale * x_norm is close to -bias
    mag = np.sqrt(math.prod(normalised)) * float(np.abs(scale.astype(np.float64)).max())
    mag += float(np.abs(bias.astype(np.float64)).max()) if bias is not None else 0.0
    scale_of = 1.0 + float(np.abs(x.astype(np.float64)).max()) + mag
    for g, w in zip(got, want, strict=True):
        _check(g, w, scale=scale_of * 10 if t == "float16" else scale_of)


@pytest.mark.parametrize("t", _schema_types("RMSNormalization"))
@SETTINGS
@given(x_shape=NORM_SHAPES, seed=SEEDS, data=st.data())
def test_rms_normalization_matches_onnxruntime(
    t: str, x_shape: tuple[int, ...], seed: int, data: st.DataObject
) -> None:
    if t == "bfloat16":
        pytest.skip("onnxruntime's Python binding does not take ml_dtypes bfloat16 arrays")
    axis = data.draw(st.integers(-len(x_shape), len(x_shape) - 1), label="axis")
    epsilon = data.draw(st.sampled_from([1e-5, 1e-3, 0.5]), label="epsilon")
    rng = np.random.default_rng(seed)
    x = _values(rng, t, x_shape, special=False)
    scale = _values(rng, t, _uni(data, x_shape[axis:], "scale"), special=False)
    (want,) = _ort("RMSNormalization", [x, scale], [t], {"axis": axis, "epsilon": epsilon})
    got = ops.rms_normalization(x, scale, axis=axis, epsilon=epsilon)
    _check(got, want, scale=10.0 * (1.0 + float(np.abs(scale.astype(np.float64)).max())))


# ---------------------------------------------------------------- shapes onnxruntime rejects


def _clash(shapes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that cannot broadcast: a trailing 2 against a trailing 3."""
    sa, sb = shapes.input_shapes
    return (*sa, 2), (*sb, 3)


#: op -> (onnxruntime run, bcast run) on two clashing shapes
REJECTS: dict[str, tuple[Callable[[np.ndarray, np.ndarray], Any], Callable[[np.ndarray, np.ndarray], Any]]] = {
    "add": (lambda a, b: _ort("Add", [a, b], ["float"]), ops.add),
    "less": (lambda a, b: _ort("Less", [a, b], ["bool"]), ops.less),
    "max": (lambda a, b: _ort("Max", [a, b, a], ["float"]), lambda a, b: ops.max(a, b, a)),
    "where": (
        lambda a, b: _ort("Where", [np.ones(a.shape, bool), a, b], ["float"]),
        lambda a, b: ops.where(np.ones(a.shape, bool), a, b),
    ),
    "prelu": (lambda a, b: _ort("PRelu", [a, b], ["float"]), ops.prelu),
    "expand": (
        lambda a, b: _ort("Expand", [a, np.array(b.shape, np.int64)], ["float"]),
        lambda a, b: ops.expand(a, b.shape),
    ),
}


@pytest.mark.parametrize("op", list(REJECTS))
@settings(max_examples=8, deadline=None)
@given(shapes=SHAPES2)
def test_bcast_rejects_what_onnxruntime_rejects(op: str, shapes: Any) -> None:
    sa, sb = _clash(shapes)
    a, b = np.zeros(sa, np.float32), np.zeros(sb, np.float32)
    run_ort, run_bcast = REJECTS[op]
    with pytest.raises(Exception, match=r"(?i)broadcast|shape|dimension|invalid|mismatch"):
        run_ort(a, b)
    with pytest.raises(BroadcastError) as info:
        run_bcast(a, b)
    assert op in str(info.value) or op == "expand"


def test_gemm_c_that_does_not_broadcast_is_rejected_by_both() -> None:
    a, b, c = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones((3,), np.float32)
    with pytest.raises(Exception, match=r"(?i)broadcast|shape|dimension|invalid"):
        _ort("Gemm", [a, b, c], ["float"])
    with pytest.raises(BroadcastError, match=r"gemm: input C \[3\] must broadcast unidirectionally"):
        ops.gemm(a, b, c)


def test_layer_normalization_of_a_scalar_is_rejected_by_both() -> None:
    x = np.array(1.0, np.float32)
    with pytest.raises(Exception, match=r"(?i)axis|rank|dimension|invalid"):
        _ort("LayerNormalization", [x, x], ["float", "float", "float"])
    with pytest.raises(BroadcastError, match="rank >= 1"):
        ops.layer_normalization(x, x)
