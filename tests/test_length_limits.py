"""A length sliced off a table of n rows works only up to n: the checker says so, in the model's words.

``pos[:S]`` on a ``[4, 32]`` table is ``min(S, 4)`` rows, not ``S``: added to ``[B, S, 32]``, the model
works for ``S <= 4`` and fails past it. Such a limit is a note (``info``): it says how the model may
be called, lists ``S``'s admissible sizes, and leaves the exit status 0. The oracle is onnxruntime,
run at the limit and one past it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bcast.check import check
from bcast.graph.expr import Expr, emax, emin

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime proves the limits", exc_type=ImportError)

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _ints(name: str, values: list[int]) -> object:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def position_table(path: Path, rows: int) -> Path:
    """``x [B, S, 32] + pos[:S]``, ``pos`` a table of ``rows`` rows."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["seq"], name="seq_len", axis=0),
        helper.make_node("Slice", ["pos", "zero", "seq", "zero"], ["p"], name="pos_slice"),
        helper.make_node("Add", ["x", "p"], ["y"], name="add_pos"),
    ]
    graph = helper.make_graph(
        nodes,
        "positions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((rows, 32), np.float32), "pos"), _ints("one", [1]), _ints("zero", [0])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _causal_mask(path: Path, size: int) -> Path:
    """GPT-2's ``bias[:, :, :S, :S]`` of a ``[1, 1, n, n]`` buffer, added to the scores ``[B, H, S, S]``."""
    nodes = [
        helper.make_node("Shape", ["scores"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "two"], ["seq"], name="seq_len", axis=0),
        helper.make_node("Concat", ["seq", "seq"], ["ends"], name="ends", axis=0),
        helper.make_node("Slice", ["bias", "zeros", "ends", "axes"], ["mask"], name="mask_slice"),
        helper.make_node("Add", ["scores", "mask"], ["y"], name="add_mask"),
    ]
    graph = helper.make_graph(
        nodes,
        "mask",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["B", 2, "S", "S"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.tril(np.ones((size, size), np.float32))[None, None], "bias"),
            _ints("two", [2]),
            _ints("zeros", [0, 0]),
            _ints("axes", [2, 3]),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _runs(path: Path, name: str, shape: tuple[int, ...]) -> bool:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    try:
        session.run(None, {name: np.ones(shape, np.float32)})
    except Exception:
        return False
    return True


@pytest.mark.parametrize("rows", [4, 7])
def test_a_position_table_limits_the_sequence(tmp_path: Path, rows: int) -> None:
    path = position_table(tmp_path / "pos.onnx", rows)
    assert _runs(path, "x", (2, rows, 32)) and not _runs(path, "x", (2, rows + 1, 32))
    report = check(str(path))
    assert report.clean
    [note] = report.problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "add_pos")
    assert f"works only for S <= {rows}: pos has {rows}" in note.message
    assert note.root == "pos_slice"
    [symbol] = report.constraints
    assert (symbol.dim, symbol.sizes) == ("S", tuple(range(1, rows + 1)))


def test_a_causal_mask_buffer_limits_the_sequence(tmp_path: Path) -> None:
    path = _causal_mask(tmp_path / "mask.onnx", 8)
    assert _runs(path, "scores", (1, 2, 8, 8)) and not _runs(path, "scores", (1, 2, 9, 9))
    report = check(str(path))
    assert report.clean
    assert {p.kind for p in report.problems} == {"length-limit"}
    assert all("works only for S <= 8" in p.message for p in report.problems)


def test_the_command_exits_0_and_says_the_limit(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = position_table(tmp_path / "pos.onnx", 4)
    run = subprocess.run(
        [sys.executable, "-m", "bcast", "check", str(path)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "works only for S <= 4" in run.stdout and "S: {1..4}" in run.stdout


def test_a_slice_within_a_symbolic_axis_has_no_limit(tmp_path: Path) -> None:
    """``x[:, :S]`` of an ``[B, S, 32]`` tensor is ``S`` rows: nothing to say."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["seq"], name="seq_len", axis=0),
        helper.make_node("Slice", ["x", "zero", "seq", "one"], ["p"], name="head"),
        helper.make_node("Add", ["x", "p"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "same",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_ints("one", [1]), _ints("zero", [0])],
    )
    path = tmp_path / "same.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert check(str(path)).problems == []


def test_max_and_min_drop_what_can_never_win() -> None:
    s, p = Expr.symbol("S"), Expr.symbol("P")
    assert str(emin([s, p + s])) == "S" and str(emax([s, p + s])) == "P + S"
    assert str(emax([s, emin([s, 4])])) == "S"  # max(S, min(S, 4)) is S for every S
    assert str(emin([s, emax([s, p])])) == "S"
    assert str(emax([s, p])) == "max(P, S)" and str(emin([s, 4])) == "min(4, S)"
    for env in ({"S": 0, "P": 3}, {"S": 5, "P": 1}, {"S": 9, "P": 9}):
        assert emax([s, p + s]).evaluate(env) == max(env["S"], env["P"] + env["S"])
