"""The operator table (:mod:`bcast.operators`): each operator declared once, every other table read from it.

Checks that each entry has its ``bcast.ops`` function, handler, kernel and gradient rule,
that the tables the rest of bcast reads (ops' sets and Specs, the engines' kernel names,
grad's ``DIFFERENTIABLE``, the ONNX backend's handlers) agree with the entries, and that a
new entry shows up in the derived tables.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import numpy as np
import pytest

import bcast.ops as ops
from bcast import operators
from bcast.engines import array_api_kernels as kernels
from bcast.engines import foreign
from bcast.errors import BroadcastError, DivisionByZeroError
from bcast.onnx.handlers import HANDLERS
from bcast.operators import BY_NAME, BY_ONNX, OPERATORS, Spec
from bcast.ops import arithmetic, compare, grad, logical, normalization, unidirectional, variadic
from bcast.rules import OPERATOR_MODES, operator_mode

SPEC_IDS = [s.name for s in OPERATORS]


@pytest.mark.parametrize("spec", OPERATORS, ids=SPEC_IDS)
def test_every_entry_has_a_bcast_ops_function(spec: Spec) -> None:
    fn = getattr(ops, spec.name)
    assert callable(fn) and fn.__name__ in (spec.name, "expand")
    params = inspect.signature(fn).parameters
    assert ("mode" in params) == spec.takes_mode
    for attribute in spec.attributes:
        assert attribute in params, (spec.name, attribute)


def test_names_and_onnx_names_are_unique_and_cover_the_table() -> None:
    assert len(BY_NAME) == len(BY_ONNX) == len(OPERATORS)
    assert {s.onnx for s in OPERATORS} == operators.ONNX_OPERATORS


def test_the_ops_sets_are_the_table_s() -> None:
    assert {s.onnx for s in OPERATORS if s.broadcast == "multidirectional"} == ops.MULTIDIRECTIONAL
    assert {"Gemm", "PRelu", "LayerNormalization", "RMSNormalization"} == ops.UNIDIRECTIONAL
    assert {"Expand"} == ops.BIDIRECTIONAL
    assert ops.ONNX_OPERATORS == ops.MULTIDIRECTIONAL | ops.UNIDIRECTIONAL | ops.BIDIRECTIONAL
    assert {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"} == ops.LEGACY_BROADCAST
    assert {"Max", "Min", "Mean", "Sum"} == ops.SAME_SHAPE_BEFORE_8


def test_the_ops_specs_are_the_table_entries() -> None:
    modules = (arithmetic, compare, logical, variadic, unidirectional, normalization)
    specs = [v for m in modules for v in vars(m).values() if isinstance(v, Spec)]
    assert specs and all(BY_NAME[s.name] is s for s in specs)
    assert importlib.import_module("bcast.ops.where").WHERE is BY_NAME["where"]


def test_every_multidirectional_operator_has_a_handler() -> None:
    for spec in operators.of_kind("multidirectional"):
        assert spec.onnx in HANDLERS, spec.onnx
    assert set(HANDLERS) >= operators.ONNX_OPERATORS


def test_the_multidirectional_handlers_run_the_ops_function() -> None:
    from bcast.onnx.handlers import Call

    a, b = np.array([7, -7], np.int32), np.array([2], np.int32)
    for spec in operators.of_kind("multidirectional"):
        if spec.onnx == "Where":
            got = HANDLERS["Where"](Call("Where", "n", {}, 18), [np.array([True, False]), a, b])
            np.testing.assert_array_equal(got[0], ops.where(np.array([True, False]), a, b))
            continue
        if spec.types_of(0) == operators.BOOL or not spec.types_of(0) & {"int32"}:
            continue
        attrs = {"direction": "LEFT"} if spec.onnx == "BitShift" else {}
        got = HANDLERS[spec.onnx](Call(spec.onnx, "n", attrs, 18), [a, b])
        np.testing.assert_array_equal(got[0], getattr(ops, spec.name)(a, b, **attrs), strict=True)


def test_kernel_names_agree_with_the_table() -> None:
    assert {s.name: s.kernel for s in OPERATORS if s.kernel is not None} == foreign.KERNEL_NAMES
    assert set(foreign.KERNEL_NAMES) == {s.name for s in operators.of_kind("multidirectional")}
    assert foreign.kernel_name("mod", {"fmod": 1}) == "fmod" and foreign.kernel_name("mod", {"fmod": 0}) == "remainder"
    assert foreign.kernel_name("bitshift", {"direction": "RIGHT"}) == "bitwise_right_shift"
    assert foreign.kernel_name("bitshift", {"direction": "LEFT"}) == "bitwise_left_shift"
    for spec in OPERATORS:
        for name in (spec.kernel, *(v[2] for v in spec.kernel_variants)):
            if name is not None and name not in ("mean", "where"):
                assert callable(kernels.binary(name)), name


def test_differentiable_is_the_table_s_and_every_rule_exists() -> None:
    assert tuple(s.name for s in OPERATORS if s.gradient is not None) == grad.DIFFERENTIABLE
    assert grad.DIFFERENTIABLE == (
        "add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum", "where", "prelu", "gemm", "expand",
    )  # fmt: skip
    rules = set(grad._BINARY) | set(grad._VARIADIC) | set(grad._OWN)
    for name in grad.DIFFERENTIABLE:
        assert BY_NAME[name].gradient in rules, name


def test_a_new_entry_shows_up_in_the_derived_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake ``Hypot`` entry, derived the way the module derives its tables."""
    fake = Spec("Hypot", ("X", "Y"), operators.FLOATS, kernel="hypot", legacy_broadcast=True, gradient="add")
    table = (*OPERATORS, fake)
    assert fake.name == "hypot"
    assert "Hypot" in {s.onnx for s in operators.of_kind("multidirectional", table)}
    monkeypatch.setitem(BY_NAME, "hypot", fake)
    assert operators.kernel_name("hypot", {}) == "hypot"
    assert fake.takes_mode and not fake.variadic and fake.types_of(1) == operators.FLOATS
    # its ONNX handler, built as HANDLERS builds every multidirectional one: legacy broadcasting before opset 7
    from bcast.onnx import handlers

    calls = []
    handler = handlers._elementwise(fake, lambda *xs, **kw: calls.append(kw) or np.hypot(*xs))
    x, y = np.ones((2, 3)), np.ones(3)
    assert handler(handlers.Call("Hypot", "n", {}, 18), [x, y])[0].shape == (2, 3)
    handler(handlers.Call("Hypot", "n", {"broadcast": 1, "axis": 1}, 6), [x, y])
    assert calls == [{"mode": "numpy", "axis": -1}, {"mode": "legacy", "axis": 1}]
    with pytest.raises(BroadcastError, match="takes 2 inputs, got 1"):
        handler(handlers.Call("Hypot", "n", {}, 18), [x])


def test_type_checks_follow_each_input_s_constraint() -> None:
    where, pw, rms = BY_NAME["where"], BY_NAME["pow"], BY_NAME["rms_normalization"]
    b, f4, f8, i8 = (np.empty(0, t) for t in ("bool", "f4", "f8", "i8"))
    operators.check_types(where, [b, f4, f4], where.inputs)
    operators.check_types(pw, [f4, i8], pw.inputs)  # Y is T1: no need to agree with X
    operators.check_types(rms, [f4, f8], rms.inputs)  # scale is V: no need to agree with X
    with pytest.raises(TypeError, match=r"where: input condition has dtype float32 \(ONNX float\); Where takes bool"):
        operators.check_types(where, [f4, f4, f4], where.inputs)
    with pytest.raises(TypeError, match=r"where: inputs X and Y must have the same type"):
        operators.check_types(where, [b, f4, f8], where.inputs)
    big = np.empty(0, ">f4")
    operators.check_types(BY_NAME["add"], [big, f4], ("A", "B"))  # byte order is no type


def test_a_spec_is_a_frozen_declaration() -> None:
    spec = BY_NAME["add"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.onnx = "Sub"  # type: ignore[misc]
    assert dataclasses.replace(spec, onnx="GreaterOrEqual", name="").name == "greater_or_equal"
    assert dataclasses.replace(spec, onnx="Or", name="").name == "or_"  # a Python keyword


# -- the mode names come from bcast.rules --------------------------------------------------


def test_operator_modes_are_the_rules_own() -> None:
    from bcast.ops._base import MODES

    assert MODES == OPERATOR_MODES == ("numpy", "pdpd", "none", "legacy")
    assert operator_mode(" Legacy ", 2, "add") == "legacy"
    with pytest.raises(BroadcastError, match=r"add: unknown mode 'fancy' for 2 inputs; accepted: 'numpy', 'pdpd'"):
        operator_mode("fancy", 2, "add")
    with pytest.raises(TypeError, match=r"max: mode must be a string"):
        operator_mode(3, 3, "max")


# -- the ONNX rules NumPy and the Array API share ---------------------------------------------


def test_the_shared_rules_run_on_numpy_and_on_the_array_api() -> None:
    xps = pytest.importorskip("array_api_strict")
    a, b = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    q, step = kernels.truncation(np, a, b)
    np.testing.assert_array_equal(q + step, np.trunc(a / b).astype(np.int32))
    qs, steps = kernels.truncation(xps, xps.asarray(a), xps.asarray(b))
    np.testing.assert_array_equal(np.asarray(qs + xps.astype(steps, qs.dtype)), q + step)
    for xp in (np, xps):
        with pytest.raises(DivisionByZeroError, match=r"div: an integer divisor is 0.*1 of the divisor's 2"):
            kernels.no_zero_divisor(xp, "div", xp.asarray(np.array([0, 3], np.int32)))
        with pytest.raises(BroadcastError, match="no integer result"), np.errstate(divide="ignore"):
            kernels.int_float_power(xp, xp.asarray(np.array([0], np.int32)), xp.asarray(np.array([-1.0])))
    base, exp = np.array([2, -1, 1, 3, -1], np.int64), np.array([-1, -3, -2, 2, 4], np.int64)
    want = np.array([0, -1, 1, 9, 1])
    np.testing.assert_array_equal(kernels.signed_int_power(np, base, exp, np.power), want)
    got = kernels.signed_int_power(xps, xps.asarray(base), xps.asarray(exp), xps.pow)
    np.testing.assert_array_equal(np.asarray(got), want)
