"""A length sliced off a table of n rows works only up to n: the checker says so, in the model's words.

``pos[:S]`` on a ``[4, 32]`` table is ``min(S, 4)`` rows, not ``S``: added to ``[B, S, 32]``, the model
works for ``S <= 4`` and fails past it. Such a limit is a note (``info``): it says how the model may
be called, lists ``S``'s admissible sizes, and leaves the exit status 0. A KV-cache model reads its
tables further on: a rotary window ``cos[past_seq : past_seq + seq]``, GPT-2's positions
``Range(past_seq, past_seq + seq)`` gathered from ``wpe``; both work for ``past_seq + seq <= n``. The
oracle is onnxruntime, run at the limit and one past it.
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


def _sizes(seq: int, past: int) -> dict[str, np.ndarray]:
    return {"x": np.ones((2, seq, 8), np.float32), "past": np.ones((2, past, 8), np.float32)}


def _lengths() -> list[object]:
    """``seq`` and ``past_seq`` read off ``x [B, seq, 8]`` and the cache ``past [B, past_seq, 8]``, and their sum."""
    return [
        helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
        helper.make_node("Gather", ["x_shape", "one"], ["seq"], name="seq_len", axis=0),
        helper.make_node("Shape", ["past"], ["past_shape"], name="past_shape"),
        helper.make_node("Gather", ["past_shape", "one"], ["past_len"], name="past_len", axis=0),
        helper.make_node("Add", ["past_len", "seq"], ["total"], name="total"),
    ]


def _cache_model(path: Path, nodes: list[object], table: np.ndarray, extra: list[object]) -> Path:
    graph = helper.make_graph(
        [*_lengths(), *nodes],
        "cache",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "seq", 8]),
            helper.make_tensor_value_info("past", TensorProto.FLOAT, ["B", "past_seq", 8]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(table, "table"), _ints("one", [1]), _ints("zero", [0]), *extra],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def rotary_window(path: Path, rows: int) -> Path:
    """``x [B, seq, 8] * cos[past_seq : past_seq + seq]``, ``cos`` a rotary table of ``rows`` rows."""
    nodes = [
        helper.make_node("Slice", ["table", "past_len", "total", "zero"], ["cos"], name="cos_window"),
        helper.make_node("Mul", ["x", "cos"], ["y"], name="rotate"),
    ]
    return _cache_model(path, nodes, np.ones((rows, 8), np.float32), [])


def position_gather(path: Path, rows: int, form: str) -> Path:
    """GPT-2's ``x + wpe[positions]``, ``wpe`` of ``rows`` rows: the positions ``Range(0, seq) + past_seq``
    unsqueezed (TorchScript's), or ``Range(past_seq, past_seq + seq)`` cast and expanded to ``[1, seq]``."""
    if form == "shifted":
        made = [
            helper.make_node("Range", ["zero_s", "seq_s", "one_s"], ["r"], name="positions"),
            helper.make_node("Add", ["r", "past_s"], ["p"], name="shift"),
            helper.make_node("Unsqueeze", ["p", "zero"], ["ids"], name="ids"),
        ]
    else:
        made = [
            helper.make_node("Range", ["past_s", "total_s", "one_s"], ["r"], name="positions"),
            helper.make_node("Cast", ["r"], ["c"], name="cast", to=TensorProto.INT64),
            helper.make_node("Unsqueeze", ["c", "zero"], ["u"], name="unsqueeze"),
            helper.make_node("Concat", ["one", "seq"], ["ids_shape"], name="ids_shape", axis=0),
            helper.make_node("Expand", ["u", "ids_shape"], ["ids"], name="ids"),
        ]
    nodes = [
        helper.make_node("Squeeze", ["seq", "zero"], ["seq_s"], name="seq_s"),
        helper.make_node("Squeeze", ["past_len", "zero"], ["past_s"], name="past_s"),
        helper.make_node("Squeeze", ["total", "zero"], ["total_s"], name="total_s"),
        *made,
        helper.make_node("Gather", ["table", "ids"], ["pos"], name="wpe", axis=0),
        helper.make_node("Add", ["x", "pos"], ["y"], name="add_pos"),
    ]
    scalars = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("zero_s", 0), ("one_s", 1))]
    return _cache_model(path, nodes, np.ones((rows, 8), np.float32), scalars)


def _runs_at(path: Path, seq: int, past: int) -> bool:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    try:
        session.run(None, _sizes(seq, past))
    except Exception:
        return False
    return True


def test_a_moving_window_on_a_rotary_table_limits_past_and_sequence_together(tmp_path: Path) -> None:
    path = rotary_window(tmp_path / "rotary.onnx", 4)
    assert _runs_at(path, 3, 1) and _runs_at(path, 4, 0) and not _runs_at(path, 4, 1) and not _runs_at(path, 2, 5)
    report = check(str(path))
    assert report.clean
    [note] = report.problems
    assert (note.kind, note.severity, note.node, note.root) == ("length-limit", "info", "rotate", "cos_window")
    assert "works only for past_seq + seq <= 4: table has 4 along the axis that Slice cos_window" in note.message
    assert report.constraints == []  # a sum has no one symbol's sizes to list


@pytest.mark.parametrize("form", ["shifted", "range"])
@pytest.mark.parametrize("rows", [4, 8])
def test_positions_into_a_learned_table_limit_past_and_sequence_together(tmp_path: Path, form: str, rows: int) -> None:
    path = position_gather(tmp_path / "gpt2.onnx", rows, form)
    assert _runs_at(path, rows - 1, 1) and _runs_at(path, 1, rows - 1)
    assert not _runs_at(path, rows - 1, 2) and not _runs_at(path, 1, rows)
    report = check(str(path))
    assert report.clean
    [note] = report.problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "wpe")
    assert f"works only for past_seq + seq <= {rows}: table has {rows} rows along axis 0" in note.message


def test_positions_past_the_table_at_every_size_are_an_error(tmp_path: Path) -> None:
    """``Range(0, seq) + 4`` into a 4-row table: the first position is already past the end."""
    path = position_gather(tmp_path / "gpt2.onnx", 4, "shifted")
    model = onnx.load(path)
    model.graph.initializer.append(numpy_helper.from_array(np.array(4, np.int64), "four"))
    next(n for n in model.graph.node if n.name == "shift").input[1] = "four"
    onnx.save(model, path)
    assert not _runs_at(path, 1, 0) and not _runs_at(path, 3, 0)
    [p] = check(str(path)).problems
    assert (p.kind, p.severity, p.node) == ("index-out-of-range", "error", "wpe")


@pytest.mark.parametrize(
    ("dims", "severity"),
    [
        ({"seq": "1..3", "past_seq": "0..1"}, None),  # the largest sum, 4, fits
        ({"seq": "1..4", "past_seq": "0..1"}, "warning"),
        ({"seq": "1..8"}, "warning"),  # past_seq 0 and seq 8 is past it already
        ({"seq": "1..2"}, "info"),  # past_seq may still take it past: the limit stands
        ({"past_seq": "0.."}, "warning"),
    ],
)
def test_ranges_given_are_weighed_against_a_sum(tmp_path: Path, dims: dict[str, str], severity: str | None) -> None:
    path = rotary_window(tmp_path / "rotary.onnx", 4)
    got = [p.severity for p in check(str(path), dims=dims).problems]
    assert got == ([] if severity is None else [severity])


@pytest.mark.parametrize(
    ("dims", "severity"), [({"S": "1..4"}, None), ({"S": "2..5"}, "warning"), ({"S": "2.."}, "warning")]
)
def test_a_range_given_is_weighed_against_a_length(tmp_path: Path, dims: dict[str, str], severity: str | None) -> None:
    path = position_table(tmp_path / "pos.onnx", 4)
    problems = check(str(path), dims=dims).problems
    assert [p.severity for p in problems] == ([] if severity is None else [severity])
    if problems:
        assert "works only for S <= 4: pos has 4 along the axis that Slice pos_slice cuts to S; S is given as" in (
            problems[0].message
        )


def test_a_window_of_one_row_is_never_a_warning(tmp_path: Path) -> None:
    """``table[past_seq : past_seq + 1]`` (a decoder's one step) against ``x [B, 1, 8]``."""
    nodes = [
        helper.make_node("Add", ["past_len", "one"], ["next"], name="next"),
        helper.make_node("Slice", ["table", "past_len", "next", "zero"], ["row"], name="row"),
        helper.make_node("Mul", ["x", "row"], ["y"], name="scale"),
    ]
    path = _cache_model(tmp_path / "step.onnx", nodes, np.ones((4, 8), np.float32), [])
    assert _runs_at(path, 1, 3) and _runs_at(path, 3, 0)
    assert all(p.severity == "info" for p in check(str(path)).problems)


def test_a_contract_met_by_a_window_is_a_limit(tmp_path: Path) -> None:
    """Concat's other axes must agree (a shape contract, not a broadcast): ``x [B, seq, 8]`` beside the window
    ``table[past_seq : past_seq + seq]`` unsqueezed and expanded to ``[B, ., 8]``."""
    nodes = [
        helper.make_node("Slice", ["table", "past_len", "total", "zero"], ["rows"], name="window"),
        helper.make_node("Unsqueeze", ["rows", "zero"], ["u"], name="unsqueeze"),
        helper.make_node("Shape", ["x"], ["x_dims"], name="x_dims"),
        helper.make_node("Slice", ["x_dims", "zero", "one", "zero"], ["batch"], name="batch"),
        helper.make_node("Concat", ["batch", "one", "one"], ["target"], name="target", axis=0),
        helper.make_node("Expand", ["u", "target"], ["e"], name="expand"),
        helper.make_node("Concat", ["x", "e"], ["y"], name="join", axis=2),
    ]
    path = _cache_model(tmp_path / "join.onnx", nodes, np.ones((4, 8), np.float32), [])
    assert _runs_at(path, 3, 1) and not _runs_at(path, 3, 2)
    [note] = check(str(path)).problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "join")
    assert "works only for past_seq + seq <= 4" in note.message
