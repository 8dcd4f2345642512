"""``bcast.ops`` beyond onnxruntime: type sets against ONNX's schemas, the pdpd / none / legacy modes
against NumPy with hand-placed axes, ``out=``, no mutation or materialisation, and bad input.

Oracles: ``onnx.defs`` for the type sets, NumPy on explicitly reshaped operands for the
modes, the operator texts of ONNX's newest opsets (Mod-28, BitShift-28) for the values
onnxruntime cannot run, Python's own integers for exact integer results.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bcast.ops as ops
from bcast.errors import BroadcastError
from bcast.ops import arithmetic, compare, logical, normalization, unidirectional, variadic
from bcast.ops._base import Spec

where = importlib.import_module("bcast.ops.where")  # the module: ``bcast.ops.where`` the attribute is the function

# ---------------------------------------------------------------- (a) type sets against ONNX's schemas

#: the ONNX types NumPy (with ml_dtypes for bfloat16) can hold; float8, int4, float4 have no array type here
REPRESENTABLE = {
    "float", "double", "float16", "bfloat16", "bool", "string", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
}  # fmt: skip

#: (bcast Spec, which set of it, ONNX op, index of the type constraint in the newest schema)
SPECS: list[tuple[Spec, str, str, int]] = [
    (arithmetic.ADD, "types", "Add", 0),
    (arithmetic.SUB, "types", "Sub", 0),
    (arithmetic.MUL, "types", "Mul", 0),
    (arithmetic.DIV, "types", "Div", 0),
    (arithmetic.MOD, "types", "Mod", 0),
    (arithmetic.POW, "types", "Pow", 0),
    (arithmetic.POW, "second_types", "Pow", 1),
    (compare.EQUAL, "types", "Equal", 0),
    (compare.GREATER, "types", "Greater", 0),
    (compare.GREATER_OR_EQUAL, "types", "GreaterOrEqual", 0),
    (compare.LESS, "types", "Less", 0),
    (compare.LESS_OR_EQUAL, "types", "LessOrEqual", 0),
    (logical.AND, "types", "And", 0),
    (logical.OR, "types", "Or", 0),
    (logical.XOR, "types", "Xor", 0),
    (logical.BITWISE_AND, "types", "BitwiseAnd", 0),
    (logical.BITWISE_OR, "types", "BitwiseOr", 0),
    (logical.BITWISE_XOR, "types", "BitwiseXor", 0),
    (logical.BITSHIFT, "types", "BitShift", 0),
    (variadic.MAX, "types", "Max", 0),
    (variadic.MIN, "types", "Min", 0),
    (variadic.MEAN, "types", "Mean", 0),
    (variadic.SUM, "types", "Sum", 0),
    (where._COND, "types", "Where", 0),
    (where.WHERE, "types", "Where", 1),
    (unidirectional.PRELU, "types", "PRelu", 0),
    (unidirectional.GEMM, "types", "Gemm", 0),
    (normalization.LAYER_NORMALIZATION, "types", "LayerNormalization", 0),
    (normalization.RMS_NORMALIZATION, "types", "RMSNormalization", 0),
    (normalization.RMS_NORMALIZATION, "types", "RMSNormalization", 1),  # V (scale, Y) is the same set
]


@pytest.mark.parametrize(("spec", "field", "op", "index"), SPECS, ids=lambda v: v if isinstance(v, str) else None)
def test_type_sets_are_onnx_newest_schemas(spec: Spec, field: str, op: str, index: int) -> None:
    onnx = pytest.importorskip("onnx", reason="the type sets are checked against onnx.defs")
    schema = onnx.defs.get_schema(op)
    assert spec.onnx == op
    allowed = {t[len("tensor(") : -1] for t in schema.type_constraints[index].allowed_type_strs}
    assert getattr(spec, field) == allowed & REPRESENTABLE


def test_every_operator_has_its_onnx_inputs() -> None:
    onnx = pytest.importorskip("onnx", reason="the input names are checked against onnx.defs")
    for spec, field, op, _ in SPECS:
        # Where's spec holds X and Y (condition has its own); variadic inputs are named per call
        if field != "types" or op in ("Where", "Max", "Min", "Mean", "Sum"):
            continue
        names = [i.name for i in onnx.defs.get_schema(op).inputs]
        assert list(spec.inputs) == names[: len(spec.inputs)], op


@pytest.mark.parametrize(
    ("spec", "name"),
    [(unidirectional.PRELU, "prelu"), (logical.BITSHIFT, "bitshift"), (normalization.RMS_NORMALIZATION,
     "rms_normalization"), (logical.AND, "and_"), (compare.GREATER_OR_EQUAL, "greater_or_equal")],
)  # fmt: skip
def test_spec_names_are_the_function_names(spec: Spec, name: str) -> None:
    assert spec.name == name
    assert callable(getattr(ops, name))


# ---------------------------------------------------------------- (b) pdpd / none / legacy against NumPy

A4 = (2, 3, 4, 5)

#: (mode, A shape, B shape, axis, B reshaped by hand so that NumPy's rule gives the same result)
MODE_CASES: list[tuple[str, tuple[int, ...], tuple[int, ...], int, tuple[int, ...]]] = [
    ("pdpd", A4, (3, 4), 1, (1, 3, 4, 1)),
    ("pdpd", A4, (3, 1), 1, (1, 3, 1, 1)),  # pdpd stretches B's 1s
    ("pdpd", A4, (4, 5, 1), 2, (1, 1, 4, 5)),  # B's trailing 1 is dropped: it has no axis of A left
    ("pdpd", A4, (2,), 0, (2, 1, 1, 1)),
    ("pdpd", A4, (5,), -1, (5,)),
    ("pdpd", A4, (), -1, ()),
    ("pdpd", A4, A4, 0, A4),
    ("pdpd", (3,), (1,), 0, (1,)),
    ("none", A4, A4, -1, A4),
    ("none", (), (), -1, ()),
    ("none", (0, 3), (0, 3), -1, (0, 3)),
    ("legacy", A4, (3, 4), 1, (1, 3, 4, 1)),
    ("legacy", A4, (4, 5), -1, (4, 5)),
    ("legacy", A4, (2,), 0, (2, 1, 1, 1)),
    ("legacy", A4, (1, 1), 1, (1, 1)),  # one element goes anywhere
    ("legacy", A4, (), -1, ()),
    ("legacy", A4, A4, 0, A4),
]

#: bcast op -> (NumPy reference, operand dtype, NumPy dtype of the result)
MODE_OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any], Any]] = {
    "add": (ops.add, np.add, np.float32),
    "sub": (ops.sub, np.subtract, np.int32),
    "mul": (ops.mul, np.multiply, np.float64),
    "mod": (lambda a, b, **k: ops.mod(a, b, fmod=1, **k), np.fmod, np.float64),
    "greater": (ops.greater, np.greater, np.int64),
    "equal": (ops.equal, np.equal, np.int8),
    "bitwise_xor": (ops.bitwise_xor, np.bitwise_xor, np.uint16),
    "xor": (ops.xor, np.logical_xor, np.bool_),
}


def _operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(1, 9, size=shape)).astype(dtype)


@pytest.mark.parametrize("op", list(MODE_OPS))
@pytest.mark.parametrize(("mode", "sa", "sb", "axis", "placed"), MODE_CASES)
def test_modes_match_numpy_on_hand_placed_axes(
    op: str, mode: str, sa: tuple[int, ...], sb: tuple[int, ...], axis: int, placed: tuple[int, ...]
) -> None:
    fn, ref, dtype = MODE_OPS[op]
    rng = np.random.default_rng(len(sa) * 31 + len(sb) * 7 + axis + 1)
    a, b = _operand(rng, sa, dtype), _operand(rng, sb, dtype)
    got = fn(a, b, mode=mode, axis=axis)
    want = ref(a, b.reshape(placed))
    assert got.shape == want.shape == sa
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


#: (mode, A shape, B shape, axis, words the error must contain)
MODE_ERRORS: list[tuple[str, tuple[int, ...], tuple[int, ...], int, str]] = [
    ("pdpd", (3, 4), (2, 3, 4), -1, "B has rank 3, more than A's rank 2"),
    ("pdpd", A4, (3, 5), 1, "at output axis 2"),
    ("pdpd", A4, (4, 5), 3, "runs past A's last axis 3"),
    ("pdpd", A4, (3,), -2, "axis -2 is negative"),
    ("pdpd", (3,), (4,), 0, "pdpd broadcasts B into A only"),
    ("legacy", A4, (3, 1), 1, "B's dims must equal A's"),
    ("legacy", A4, (1, 5), -1, "B's dims must equal A's"),
    ("legacy", (1, 5), (3, 5), -1, "at output axis 0"),  # legacy never stretches A either
    ("legacy", (2, 3), (2, 3, 1), -1, "more than A's rank"),
    ("none", (2, 3), (2, 1), -1, "(2, 1)"),
    ("none", (3,), (), -1, "()"),
]


@pytest.mark.parametrize(("mode", "sa", "sb", "axis", "words"), MODE_ERRORS)
def test_mode_errors_name_op_mode_shapes_and_axis(
    mode: str, sa: tuple[int, ...], sb: tuple[int, ...], axis: int, words: str
) -> None:
    a, b = np.zeros(sa, np.float32), np.zeros(sb, np.float32)
    with pytest.raises(BroadcastError) as info:
        ops.mul(a, b, mode=mode, axis=axis)
    msg = str(info.value)
    assert msg.startswith(f"mul: {mode}"), msg
    assert words in msg, msg
    assert info.value.mode == mode


def test_numpy_and_none_take_no_axis_and_variadic_ops_only_numpy() -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"mode 'none' takes no axis \(given 1\)"):
        ops.add(x, x, mode="none", axis=1)
    with pytest.raises(BroadcastError, match=r"max: unknown mode 'pdpd' for 3 inputs; accepted: 'numpy'"):
        ops.max(x, x, x, mode="pdpd")
    with pytest.raises(BroadcastError, match=r"add: unknown mode 'bidirectional' for 2 inputs; accepted: 'numpy'"):
        ops.add(x, x, mode="bidirectional")
    with pytest.raises(TypeError, match="add: mode must be a string"):
        ops.add(x, x, mode=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------- values onnxruntime cannot run: the operator texts


MOD28_FMOD0 = [  # Mod-28, fmod=0: A - floor(A / B) * B, and the special cases the text lists
    (0.0, 2.0, 0.0), (-0.0, 2.0, 0.0), (0.0, -2.0, -0.0), (-0.0, -2.0, -0.0),  # a zero with B's sign
    (np.inf, 2.0, np.nan), (-np.inf, 2.0, np.nan),  # an infinite A
    (3.0, 0.0, np.nan), (3.0, -0.0, np.nan),  # a zero B
    (3.0, np.inf, 3.0), (-3.0, -np.inf, -3.0), (-3.0, np.inf, np.inf), (3.0, -np.inf, -np.inf),  # an infinite B
    (np.nan, 1.0, np.nan), (1.0, np.nan, np.nan),
    (7.5, -2.0, -0.5), (-7.5, 2.0, 0.5), (7.5, 2.0, 1.5),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_mod_fmod0_on_floats_follows_mod28(dtype: Any) -> None:
    a = np.array([r[0] for r in MOD28_FMOD0], dtype)
    b = np.array([r[1] for r in MOD28_FMOD0], dtype)
    want = np.array([r[2] for r in MOD28_FMOD0], dtype)
    got = ops.mod(a, b)
    np.testing.assert_array_equal(got, want)
    signed = ~np.isnan(want)  # a NaN's sign bit means nothing
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def _trunc_mod(a: int, b: int) -> int:
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return a - q * b


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integer_mod_and_div_are_exact_beyond_2_to_53(dtype: Any) -> None:
    # onnxruntime computes integer fmod=1 in double and loses these low bits; the text's formula does not
    big = [2**53 + 1, 2**60 + 7, 2**62 - 3]
    a = np.array(big, dtype)
    b = np.array([3, 10, 7], dtype)
    assert ops.mod(a, b, fmod=1).tolist() == [_trunc_mod(x, y) for x, y in zip(big, [3, 10, 7], strict=True)]
    assert ops.mod(a, b).tolist() == [x % y for x, y in zip(big, [3, 10, 7], strict=True)]
    assert ops.div(a, b).tolist() == [x // y for x, y in zip(big, [3, 10, 7], strict=True)]


def test_integer_div_and_mod_truncate_and_floor_like_c_and_python() -> None:
    pairs = [(a, b) for a in range(-9, 10) for b in (-4, -3, -1, 1, 2, 5)]
    a = np.array([p[0] for p in pairs], np.int32)
    b = np.array([p[1] for p in pairs], np.int32)
    assert ops.div(a, b).tolist() == [int(x / y) for x, y in pairs]  # C: toward zero
    assert ops.mod(a, b).tolist() == [x % y for x, y in pairs]  # fmod=0: the divisor's sign (Python's %)
    assert ops.mod(a, b, fmod=1).tolist() == [_trunc_mod(x, y) for x, y in pairs]


#: BitShift-28 on signed types: (dtype, X, Y, direction, Z) from the text's rules
BITSHIFT28 = [
    (np.int8, -8, 1, "RIGHT", -4),  # arithmetic: sign-extending
    (np.int8, -1, 7, "RIGHT", -1),
    (np.int8, 64, 1, "LEFT", -128),  # into the sign bit
    (np.int8, -128, 1, "LEFT", 0),  # past it: discarded
    (np.int8, -5, 8, "RIGHT", -1),  # Y >= bits: the sign fill alone
    (np.int8, 5, 8, "RIGHT", 0),
    (np.int8, -5, 9, "LEFT", 0),
    (np.int8, -5, -1, "RIGHT", -1),  # negative Y: likewise
    (np.int8, 5, -1, "LEFT", 0),
    (np.int32, 1, 31, "LEFT", -(2**31)),
    (np.int32, -(2**31), 31, "RIGHT", -1),
    (np.int64, 3, 64, "LEFT", 0),
    (np.uint8, 255, 8, "LEFT", 0),
    (np.uint32, 2**31, 32, "RIGHT", 0),
    (np.uint64, 1, 63, "LEFT", 2**63),
]


@pytest.mark.parametrize(("dtype", "x", "y", "direction", "z"), BITSHIFT28)
def test_bitshift_follows_bitshift28(dtype: Any, x: int, y: int, direction: str, z: int) -> None:
    got = ops.bitshift(np.array([x], dtype), np.array([y], dtype), direction=direction)
    assert got.dtype == np.dtype(dtype)
    assert got.tolist() == [z]


# ---------------------------------------------------------------- (c) out=

F = np.float32
RNG = np.random.default_rng(7)
XF, YF = RNG.standard_normal((3, 1)).astype(F), RNG.standard_normal((4,)).astype(F)
XI, YI = RNG.integers(1, 9, (3, 1)).astype(np.int32), RNG.integers(1, 9, (4,)).astype(np.int32)
XB, YB = RNG.random((3, 1)) < 0.5, RNG.random((4,)) < 0.5

#: op -> (inputs, keyword arguments); every operator that takes out=
OUT_CASES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "add": ((XF, YF), {}),
    "sub": ((XI, YI), {}),
    "mul": ((XF, YF), {}),
    "div": ((XI, YI), {}),
    "pow": ((XF, YI), {}),
    "mod": ((XI, YI), {"fmod": 1}),
    "bitshift": ((XI.astype(np.uint8), YI.astype(np.uint8)), {"direction": "LEFT"}),
    "bitwise_and": ((XI, YI), {}),
    "bitwise_or": ((XI, YI), {}),
    "bitwise_xor": ((XI, YI), {}),
    "and_": ((XB, YB), {}),
    "or_": ((XB, YB), {}),
    "xor": ((XB, YB), {}),
    "equal": ((XI, YI), {}),
    "greater": ((XF, YF), {}),
    "greater_or_equal": ((XF, YF), {}),
    "less": ((XI, YI), {}),
    "less_or_equal": ((XF, YF), {}),
    "max": ((XF, YF, np.float32(0.5)), {}),
    "min": ((XI, YI), {}),
    "mean": ((XF, YF, XF), {}),
    "sum": ((XF,), {}),
    "where": ((XB, XF, YF), {}),
    "prelu": ((RNG.standard_normal((3, 4)).astype(F), YF), {}),
    "gemm": ((RNG.standard_normal((3, 2)).astype(F), RNG.standard_normal((2, 4)).astype(F), YF), {"alpha": 0.5}),
}


def test_out_cases_cover_every_operator_with_out() -> None:
    with_out = {
        n for n in ops.__all__ if callable(getattr(ops, n)) and "out" in inspect.signature(getattr(ops, n)).parameters
    }
    assert with_out == set(OUT_CASES)


@pytest.mark.parametrize("op", list(OUT_CASES))
def test_out_is_written_in_place(op: str) -> None:
    args, kw = OUT_CASES[op]
    fn = getattr(ops, op)
    want = fn(*args, **kw)
    dest = np.full_like(want, 1 if want.dtype != np.bool_ else True)
    got = fn(*args, **kw, out=dest)
    assert got is dest
    np.testing.assert_array_equal(dest, want)


@pytest.mark.parametrize("op", list(OUT_CASES))
def test_out_of_wrong_shape_dtype_or_read_only_is_refused(op: str) -> None:
    args, kw = OUT_CASES[op]
    fn = getattr(ops, op)
    want = fn(*args, **kw)
    name = fn.__name__
    with pytest.raises(BroadcastError, match=rf"{name}: out has shape \[{want.shape[0] + 1},"):
        fn(*args, **kw, out=np.empty((want.shape[0] + 1, *want.shape[1:]), want.dtype))
    other = np.float64 if want.dtype != np.float64 else np.float32
    with pytest.raises(TypeError, match=rf"{name}: out has dtype {np.dtype(other)}"):
        fn(*args, **kw, out=np.empty(want.shape, other))
    ro = np.empty_like(want)
    ro.flags.writeable = False
    with pytest.raises(BroadcastError, match=f"{name}: out is read-only"):
        fn(*args, **kw, out=ro)
    with pytest.raises(TypeError, match=f"{name}: out must be a NumPy array, got list"):
        fn(*args, **kw, out=want.tolist())


#: op -> (inputs, keyword arguments, index of the input that out is); every input is already output-shaped
ALIAS_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], int]] = [
    ("add", (np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])), {}, 0),
    ("div", (np.arange(-6, 6).reshape(3, 4), np.array([3, -2, 5, 7])), {}, 0),
    ("pow", (np.arange(4, dtype=np.int64), np.array(3, np.int64)), {}, 0),
    ("bitshift", (np.array([1, 2, 4], np.uint8), np.array([3, 1, 2], np.uint8)), {"direction": "LEFT"}, 1),
    ("and_", (np.array([True, False, True]), np.array([True, True, False])), {}, 1),
    ("sum", (np.ones(3), np.full(3, 2.0), np.full(3, 5.0)), {}, 2),  # the fold must read data_2 before writing it
    ("max", (np.ones(3), np.full(3, 2.0), np.full(3, 5.0)), {}, 2),
    ("mean", (np.ones(3), np.full(3, 2.0), np.full(3, 6.0)), {}, 2),
    ("where", (np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])), {}, 2),
    ("where", (np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])), {}, 1),
    ("prelu", (np.array([1.0, -2.0, 3.0, np.nan]), np.array(0.5)), {}, 0),  # x >= 0 must stay x
    ("prelu", (np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, 2.0])), {}, 1),
    ("gemm", (np.eye(2), np.ones((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]])), {"beta": 2.0}, 2),
    ("gemm", (np.eye(2) * 2, np.ones((2, 2)), None), {}, 0),
]


@pytest.mark.parametrize(("op", "args", "kw", "index"), ALIAS_CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_out_aliasing_an_input_gives_the_same_result(
    op: str, args: tuple[Any, ...], kw: dict[str, Any], index: int
) -> None:
    fn = getattr(ops, op)
    want = fn(*args, **kw)
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    got = fn(*args, **kw, out=args[index])
    assert got is args[index]
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- (d) no mutation, no materialised operand

#: (op, inputs, keywords) for every operator, some in pdpd / legacy mode
ALL_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    *((op, args, kw) for op, (args, kw) in OUT_CASES.items()),
    ("add", (np.ones(A4, F), np.ones((3, 4), F)), {"mode": "pdpd", "axis": 1}),
    ("sub", (np.ones(A4, F), np.ones((3, 4), F)), {"mode": "legacy", "axis": 1}),
    ("mod", (np.arange(6, dtype=np.int64) - 3, np.array([4, -4], np.int64)[:, None]), {}),
    ("layer_normalization", (np.arange(12.0).reshape(3, 4), np.ones(4), np.zeros((1, 4))), {"axis": 1}),
    ("rms_normalization", (np.arange(12.0).reshape(3, 4), np.full(4, 2.0)), {"axis": -1}),
    ("expand", (np.arange(3.0)[:, None], (2, 3, 4)), {}),
]


@pytest.mark.parametrize(("op", "args", "kw"), ALL_CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_inputs_are_never_mutated(op: str, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    getattr(ops, op)(*args, **kw)
    for a, b in zip(args, before, strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def _peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak


N = 2_000_000
BIG = np.ones(N)  # 16 MB of float64
COL, ROW = np.ones((2000, 1)), np.ones((1, 1000))  # a 2000 x 1000 output from 3000 elements
WIDE, SHORT = np.ones((1000, 2000)), np.ones(1000)


#: (what, computation, bytes of its output); the peak may exceed the output by a little, not by an operand
MEMORY_CASES: list[tuple[str, Callable[[], Any], int]] = [
    ("add to a scalar", lambda: ops.add(BIG, np.float64(2.0)), BIG.nbytes),
    ("mul of an outer product", lambda: ops.mul(COL, ROW), 2000 * 1000 * 8),
    ("greater of an outer product", lambda: ops.greater(COL, ROW), 2000 * 1000),
    ("sum of three", lambda: ops.sum(COL, ROW, np.float64(1.0)), 2000 * 1000 * 8),
    ("where of a scalar condition", lambda: ops.where(np.array(True), BIG, np.float64(0.0)), BIG.nbytes),
    ("pdpd add", lambda: ops.add(WIDE, SHORT, mode="pdpd", axis=0), 2000 * 1000 * 8),
    ("prelu with a scalar slope", lambda: ops.prelu(BIG, np.float64(0.1)), BIG.nbytes),
    ("expand", lambda: ops.expand(COL, (2000, 1000)), 0),
]


@pytest.mark.parametrize(("what", "fn", "out_bytes"), MEMORY_CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_no_broadcast_operand_is_materialised(what: str, fn: Callable[[], Any], out_bytes: int) -> None:
    peak = _peak(fn)
    # slack: a mask of bools (prelu: 1/8 of a float64 output) and bookkeeping, never a second operand
    assert peak <= out_bytes * 1.2 + 1_000_000, f"{what}: peak {peak} bytes for an output of {out_bytes}"


# ---------------------------------------------------------------- (e) bad input

I32, I64, B1 = np.ones(3, np.int32), np.ones(3, np.int64), np.ones(3, bool)
F32, F64 = np.ones(3, np.float32), np.ones(3, np.float64)

#: (computation, exception type, pattern of the message)
BAD: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (
        lambda: ops.add(F32, F64),
        TypeError,
        r"add: inputs A and B must have the same type \(ONNX's T\), got float32 and float64",
    ),
    (lambda: ops.add(B1, B1), TypeError, r"add: input A has dtype bool \(ONNX bool\); Add takes bfloat16, double"),
    (lambda: ops.add(np.array(["a"]), np.array(["b"])), TypeError, r"add: input A has dtype <U1 \(ONNX string\)"),
    (lambda: ops.add(F32, [object()]), TypeError, r"add: input B"),
    (lambda: ops.sub(I32, I64), TypeError, r"sub: inputs A and B must have the same type"),
    (lambda: ops.pow(np.ones(3, np.int8), I32), TypeError, r"pow: input X has dtype int8 \(ONNX int8\); Pow takes"),
    (lambda: ops.pow(F32, B1), TypeError, r"pow: input Y has dtype bool"),
    (lambda: ops.and_(I32, I32), TypeError, r"and_: input A has dtype int32 \(ONNX int32\); And takes bool"),
    (lambda: ops.bitwise_or(F32, F32), TypeError, r"bitwise_or: input A has dtype float32"),
    (lambda: ops.bitshift(F32, F32, direction="LEFT"), TypeError, r"bitshift: input X has dtype float32"),
    (
        lambda: ops.bitshift(I32, I32, direction="UP"),
        TypeError,
        r"bitshift: direction must be 'LEFT' or 'RIGHT', got 'UP'",
    ),
    (lambda: ops.greater(B1, B1), TypeError, r"greater: input A has dtype bool"),
    (lambda: ops.equal(np.array(["a"]), np.array([1])), TypeError, r"equal: inputs A and B must have the same type"),
    (lambda: ops.mean(I32, I32), TypeError, r"mean: input data_0 has dtype int32"),
    (lambda: ops.sum(F32, F32, F64), TypeError, r"sum: inputs data_0 and data_2 must have the same type"),
    (lambda: ops.max(), TypeError, r"max: Max takes one or more inputs, got none"),
    (lambda: ops.where(I32, F32, F32), TypeError, r"where: input condition has dtype int32"),
    (lambda: ops.where(B1, F32, I32), TypeError, r"where: inputs X and Y must have the same type"),
    (lambda: ops.prelu(I32.astype(np.int8), I32.astype(np.int8)), TypeError, r"prelu: input X has dtype int8"),
    (lambda: ops.gemm(np.ones((2, 2), np.int8), np.ones((2, 2), np.int8)), TypeError, r"gemm: input A has dtype int8"),
    (
        lambda: ops.gemm(np.ones((2, 2)), np.ones((2, 2)), trans_a=True),
        TypeError,
        r"gemm: trans_a must be 0 or 1, got True",
    ),
    (
        lambda: ops.gemm(np.ones((2, 2)), np.ones((2, 2)), alpha="1"),
        TypeError,
        r"gemm: alpha must be a number, got '1'",
    ),
    (lambda: ops.mod(I32, I32, fmod=2), TypeError, r"mod: fmod must be 0 or 1, got 2"),
    (lambda: ops.mod(I32, I32, fmod=True), TypeError, r"mod: fmod must be 0 or 1, got True"),
    (
        lambda: ops.layer_normalization(np.ones((2, 3), np.int32), np.ones(3, np.int32)),
        TypeError,
        r"layer_normalization: input X has dtype int32",
    ),
    (
        lambda: ops.layer_normalization(F32, F32, stash_type=6),
        TypeError,
        r"layer_normalization: stash_type 6 is not one ONNX allows for the statistics \(U\); accepted: 1 \(float\)",
    ),
    (
        lambda: ops.layer_normalization(F32, F32, epsilon="small"),
        TypeError,
        r"layer_normalization: epsilon must be a number",
    ),
    (lambda: ops.rms_normalization(F32, I32), TypeError, r"rms_normalization: input scale has dtype int32"),
    (
        lambda: ops.rms_normalization(F32, F32, axis=1.0),
        TypeError,
        r"rms_normalization: axis must be an integer, got 1.0",
    ),
    # shapes
    (
        lambda: ops.gemm(np.ones((2, 2, 2)), np.ones((2, 2))),
        BroadcastError,
        r"gemm: input A must be a matrix \(rank 2\), got shape \[2,2,2\]",
    ),
    (
        lambda: ops.gemm(np.ones((2, 3)), np.ones((2, 3))),
        BroadcastError,
        r"gemm: the inner dims differ: A' is \[2,3\] and B' is \[2,3\] \(trans_a=0, trans_b=0\); "
        r"A's K is 3, B's K is 2",
    ),
    (
        lambda: ops.gemm(np.ones((2, 3)), np.ones((3, 4)), np.ones((2, 1, 1))),
        BroadcastError,
        r"gemm: input C \[2,1,1\] must broadcast unidirectionally to A' @ B' \[2,4\]",
    ),
    (
        lambda: ops.prelu(np.ones((2, 3)), np.ones((2, 3, 1))),
        BroadcastError,
        r"prelu: input slope \[2,3,1\] must broadcast unidirectionally to X \[2,3\]",
    ),
    (
        lambda: ops.prelu(np.ones((2, 1)), np.ones(3)),
        BroadcastError,
        r"prelu: input slope \[3\] must broadcast unidirectionally to X \[2,1\]",
    ),
    (
        lambda: ops.layer_normalization(np.ones((2, 3)), np.ones(3), axis=2),
        BroadcastError,
        r"layer_normalization: axis 2 is out of range for X of rank 2",
    ),
    (
        lambda: ops.layer_normalization(np.ones((2, 3)), np.ones(4)),
        BroadcastError,
        r"layer_normalization: input Scale \[4\] must broadcast unidirectionally to X \[2,3\]",
    ),
    (
        lambda: ops.layer_normalization(np.ones((2, 3)), np.ones(3), np.ones(2)),
        BroadcastError,
        r"layer_normalization: input B \[2\] must broadcast",
    ),
    (
        lambda: ops.rms_normalization(np.ones((2, 3)), np.ones(3), axis=-3),
        BroadcastError,
        r"rms_normalization: axis -3 is out of range",
    ),
    (
        lambda: ops.rms_normalization(np.array(1.0), np.array(1.0)),
        BroadcastError,
        r"rms_normalization: X must have rank >= 1",
    ),
    (
        lambda: ops.where(np.ones((2, 1), bool), np.ones(3), np.ones(4)),
        BroadcastError,
        r"where: numpy: shapes \(2, 1\), \(3,\), \(4,\) cannot be broadcast together: at output axis 1",
    ),
    (lambda: ops.max(np.ones(2), np.ones(3), np.ones(2)), BroadcastError, r"max: numpy: shapes"),
    (lambda: ops.expand(np.ones(3), (2, 4)), BroadcastError, r"cannot broadcast"),
    (
        lambda: ops.add(F32, F32, mode="fancy"),
        BroadcastError,
        r"add: unknown mode 'fancy' for 2 inputs; accepted: 'numpy', 'pdpd', 'none', 'legacy'",
    ),
]


@pytest.mark.parametrize(("fn", "exc", "pattern"), BAD, ids=lambda v: v if isinstance(v, str) else None)
def test_bad_input_is_refused_with_a_message_naming_it(
    fn: Callable[[], Any], exc: type[Exception], pattern: str
) -> None:
    with pytest.raises(exc, match=pattern):
        fn()


#: (op, A shape, B shape, output axis of the clash, dims there)
CLASHES = [
    ("add", (2, 3), (3, 2), 0, ("2", "3")),
    ("less", (4, 1, 5), (2, 6), 2, ("5", "6")),
    ("bitwise_and", (0,), (2,), 0, ("0", "2")),
    ("equal", (1, 2, 3), (5, 4, 3), 1, ("2", "4")),
]


@pytest.mark.parametrize(("op", "sa", "sb", "axis", "dims"), CLASHES)
def test_shapes_that_cannot_broadcast_name_op_shapes_axis_and_dims(
    op: str, sa: tuple[int, ...], sb: tuple[int, ...], axis: int, dims: tuple[str, str]
) -> None:
    a, b = np.zeros(sa, np.int32), np.zeros(sb, np.int32)
    assert not _numpy_broadcasts(sa, sb)  # the oracle agrees they clash
    with pytest.raises(BroadcastError) as info:
        getattr(ops, op)(a, b)
    e = info.value
    assert str(e).startswith(f"{op}: numpy: shapes {sa} and {sb} cannot be broadcast together: at output axis {axis}")
    assert (e.mode, e.shapes, e.axis, e.dims) == ("numpy", (str(sa), str(sb)), axis, dims)
    assert e.accepted


def _numpy_broadcasts(*shapes: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def test_integer_division_by_zero_raises() -> None:
    with pytest.raises(ZeroDivisionError, match="div: an integer divisor is 0"):
        ops.div(I32, np.array([1, 0, 2], np.int32))
    with pytest.raises(ZeroDivisionError, match="mod: an integer divisor is 0"):
        ops.mod(I32, np.array(0, np.int32), fmod=1)
