"""ONNX's own node test cases (shipped in the onnx wheel) run through the bcast backend.

Every case whose graph uses one of the broadcasting operators runs when the backend
implements all of its nodes; the "_expanded" variants whose function bodies use other
operators (ReduceMean, Sqrt, ...) test those operators, not broadcasting, and are listed
as not applicable. Every non-expanded case of every listed operator must run.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX conformance cases ship inside the onnx package")
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

from bcast.onnx import backend  # noqa: E402
from bcast.onnx.handlers import HANDLERS  # noqa: E402
from bcast.ops import ONNX_OPERATORS  # noqa: E402

OPERATORS = ONNX_OPERATORS


def _cases() -> list:
    out = []
    for case in collect_testcases():
        if case.model is None:
            continue
        types = {n.op_type for n in case.model.graph.node}
        if types & OPERATORS:
            out.append(case)
    return out


CASES = _cases()
RUNNABLE = [c for c in CASES if {n.op_type for n in c.model.graph.node} <= set(HANDLERS)]


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
