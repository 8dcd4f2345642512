"""ONNX's own node test cases (shipped in the onnx wheel) run through the bcast backend.

Every case whose graph uses one of the broadcasting operators runs when the backend
implements all of its nodes; the "_expanded" variants whose function bodies use other
operators (ReduceMean, Sqrt, ...) test those operators, not broadcasting, and are listed
as not applicable. Every non-expanded case of every listed operator must run.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX conformance cases ship inside the onnx package")
import onnx.backend.test.case.node as node_cases  # noqa: E402

from bcast.onnx import backend  # noqa: E402
from bcast.onnx.handlers import HANDLERS  # noqa: E402
from bcast.ops import ONNX_OPERATORS  # noqa: E402

OPERATORS = ONNX_OPERATORS


def _has_function(op: str) -> bool:
    """Whether ``op`` has a function body: its cases come in "_expanded" variants too, which may use ours."""
    try:
        schema = onnx.defs.get_schema(op)
    except Exception:  # an op of another domain, or one this onnx does not know
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)


def _case_modules() -> list[str]:
    """The node case modules that can hold a case using one of the operators: those that make a node
    of one, or of an op with a function body. Importing a module makes its cases (importing them
    all, as ``collect_testcases()`` does, takes seconds more: the pooling ops' cases are slow to make)."""
    names = []
    for path in sorted(Path(node_cases.__path__[0]).glob("*.py")):
        ops = set(re.findall(r'make_node\(\s*"(\w+)"', path.read_text(encoding="utf-8")))
        if ops & OPERATORS or any(_has_function(op) for op in ops):
            names.append(path.stem)
    return names


def _uses_an_operator(case: object) -> bool:
    model = getattr(case, "model", None)
    return model is not None and bool({n.op_type for n in model.graph.node} & OPERATORS)


def _cases() -> list:
    with warnings.catch_warnings():  # making some cases' data overflows or divides by zero, on purpose
        warnings.simplefilter("ignore")
        for name in _case_modules():
            importlib.import_module(f"{node_cases.__name__}.{name}")
    return [case for case in node_cases._NodeTestCases if _uses_an_operator(case)]


CASES = _cases()
RUNNABLE = [c for c in CASES if {n.op_type for n in c.model.graph.node} <= set(HANDLERS)]


@pytest.mark.full
def test_the_modules_read_hold_every_case_of_the_operators() -> None:
    """Every case of onnx's own collection that uses one of the operators is among those read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = node_cases.collect_testcases()
    assert sorted(c.name for c in every if _uses_an_operator(c)) == sorted(c.name for c in CASES)


def test_every_operator_has_cases_and_every_direct_case_runs() -> None:
    direct = [c for c in CASES if "expanded" not in c.name]
    covered = {n.op_type for c in direct for n in c.model.graph.node} & OPERATORS
    assert covered == OPERATORS, f"operators without a conformance case: {sorted(OPERATORS - covered)}"
    not_runnable = [c.name for c in direct if c not in RUNNABLE]
    assert not not_runnable, f"direct cases the backend cannot run: {not_runnable}"
    assert len(RUNNABLE) > 250


def _compare(name: str, got: object, want: object, rtol: float, atol: float) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, expected {w.dtype}"
    assert g.shape == w.shape, f"{name}: shape {g.shape}, expected {w.shape}"
    if w.dtype.kind == "f" or "float" in w.dtype.name:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name)
    else:
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.name for c in RUNNABLE])
def test_onnx_node_case(case) -> None:  # type: ignore[no-untyped-def]
    rep = backend.prepare(case.model)
    assert case.data_sets, "a node case without data"
    for inputs, outputs in case.data_sets:
        got = rep.run(inputs)
        assert len(got) >= len(outputs)
        for i, want in enumerate(outputs):
            _compare(f"{case.name} output {i}", got[i], want, case.rtol, case.atol)


def test_an_unsupported_operator_is_named_with_its_node() -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv7")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "w")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(backend.UnsupportedOperatorError, match=r"Conv node 'conv7'.*operator 'Conv'"):
        backend.prepare(helper.make_model(graph))
    assert not backend.BcastBackend.is_compatible(helper.make_model(graph))
