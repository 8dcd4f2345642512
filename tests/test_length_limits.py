"""A length sliced off a table of n rows works only up to n: the checker says so, in the model's words.

``pos[:S]`` on a ``[4, 32]`` table is ``min(S, 4)`` rows, not ``S``: added to ``[B, S, 32]``, the model
works for ``S <= 4`` and fails past it. Such a limit is a note (``info``): it says how the model may
be called, lists ``S``'s admissible sizes, and leaves the exit status 0. A KV-cache model reads its
tables further on: a rotary window ``cos[past_seq : past_seq + seq]``, GPT-2's positions
``Range(past_seq, past_seq + seq)`` gathered from ``wpe``; both work for ``past_seq + seq <= n``. The
oracle is onnxruntime, run at the limit and one past it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcast.check import check
from bcast.graph.context import Ctx
from bcast.graph.expr import Expr, emax, emin
from bcast.graph.ops.indexing import element_bounds
from bcast.graph.propagate import propagate

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
    if form in ("shifted", "tiled"):
        made = [
            helper.make_node("Range", ["zero_s", "seq_s", "one_s"], ["r"], name="positions"),
            helper.make_node("Add", ["r", "past_s"], ["p"], name="shift"),
            helper.make_node("Unsqueeze", ["p", "zero"], ["ids" if form == "shifted" else "u"], name="ids"),
        ]
        if form == "tiled":  # repeated per row, as DeBERTa tiles its positions: the same elements
            made.append(helper.make_node("Tile", ["u", "one_one"], ["ids"], name="tile"))
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
    scalars.append(numpy_helper.from_array(np.array([1, 1], np.int64), "one_one"))
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


@pytest.mark.parametrize("form", ["shifted", "range", "tiled"])
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


# -- relative positions: an outer difference of two Ranges into a table of distances ---------------------


def relative_positions(path: Path, rows: int, *, shift: bool = True, scale: int = 1, outer: bool = True) -> Path:
    """MViTv2's and SAM's relative position lookup: ``dist = scale * (Range(q)[:, None] - Range(k)[None, :])``,
    shifted by ``scale * (k - 1)`` so that the least is 0, gathered from a table of ``rows`` distances; ``q`` and
    ``k`` read off ``x [B, q, 8]`` and ``y [B, k, 8]``. With ``outer=False`` the second Range is added elementwise
    (``Range(q) - Range(q)``, every element 0) instead of as an outer sum."""
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"], name="x_shape"),
        helper.make_node("Gather", ["xs", "one_s"], ["q"], name="q_len", axis=0),
        helper.make_node("Shape", ["y"], ["ys"], name="y_shape"),
        helper.make_node("Gather", ["ys", "one_s"], ["k"], name="k_len", axis=0),
        helper.make_node("Range", ["zero_s", "q", "one_s"], ["rq"], name="q_positions"),
        helper.make_node("Range", ["zero_s", "k" if outer else "q", "one_s"], ["rk"], name="k_positions"),
        helper.make_node("Unsqueeze", ["rq", "one"], ["uq"], name="uq"),
        helper.make_node("Unsqueeze", ["rk", "zero"] if outer else ["rk", "one"], ["uk"], name="uk"),
        helper.make_node("Sub", ["uq", "uk"], ["d"], name="dist"),
        helper.make_node("Mul", ["d", "scale"], ["sd"], name="scaled"),
    ]
    if shift:
        nodes += [
            helper.make_node("Sub", ["k", "one_s"], ["k1"], name="k_minus_1"),
            helper.make_node("Mul", ["k1", "scale"], ["sk1"], name="scaled_shift"),
            helper.make_node("Add", ["sd", "sk1"], ["ids"], name="ids"),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["sd"], ["ids"], name="ids"))
    nodes.append(helper.make_node("Gather", ["table", "ids"], ["bias"], name="rel_pos", axis=0))
    graph = helper.make_graph(
        nodes,
        "relative",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "q", 8]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "k", 8]),
        ],
        [helper.make_tensor_value_info("bias", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((rows, 4), np.float32), "table"),
            _ints("one", [1]),
            _ints("zero", [0]),
            numpy_helper.from_array(np.array(0, np.int64), "zero_s"),
            numpy_helper.from_array(np.array(1, np.int64), "one_s"),
            numpy_helper.from_array(np.array(scale, np.int64), "scale"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _relative_runs(path: Path | object, q: int, k: int) -> bool:
    """Whether onnxruntime runs the model (a path, or a session made of it) at lengths ``q`` and ``k``."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]) if isinstance(path, Path) else path
    try:
        session.run(None, {"x": np.ones((1, q, 8), np.float32), "y": np.ones((1, k, 8), np.float32)})
    except Exception:
        return False
    return True


@pytest.mark.parametrize(
    ("shift", "scale", "want"),
    [
        (True, 1, "works only for k + q - 1 <= 15"),  # distances 0 .. q + k - 2
        (False, 1, "works only for q <= 15 and k - 1 <= 15"),  # -(k - 1) .. q - 1: a negative index counts back
        (True, 2, "works only for 2*k + 2*q - 3 <= 15"),  # 0 .. 2(q + k - 2)
    ],
)
def test_relative_positions_into_a_table_of_distances_limit_both_lengths(
    tmp_path: Path, shift: bool, scale: int, want: str
) -> None:
    path = relative_positions(tmp_path / "rel.onnx", 15, shift=shift, scale=scale)
    report = check(str(path))
    assert report.clean
    [note] = report.problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "rel_pos")
    assert want in note.message, note.message
    # the limit is exact: onnxruntime runs every pair of lengths that meets it and fails every other (the pairs
    # around each edge of the three limits)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for q in (1, 2, 4, 5, 8, 9, 15, 16, 17):
        for k in (1, 2, 4, 5, 8, 9, 16, 17, 18):
            hi, lo = scale * (q - 1) + (scale * (k - 1) if shift else 0), (0 if shift else -scale * (k - 1))
            fits = hi <= 14 and lo >= -15
            assert _relative_runs(session, q, k) == fits, (q, k)
            at = check(str(path), dims={"q": q, "k": k})
            assert at.clean == fits and bool(at.problems) != fits, (q, k, at.problems)


def test_an_elementwise_sum_of_positions_is_no_limit_it_cannot_state(tmp_path: Path) -> None:
    """``Range(q)[:, None] - Range(q)[:, None]`` pairs each position with itself (every element 0): the least of
    one side never meets the largest of the other, so bounds from the sides would claim a limit that is not."""
    path = relative_positions(tmp_path / "same.onnx", 3, shift=False, outer=False)
    assert _relative_runs(path, 9, 1) and _relative_runs(path, 40, 1)
    assert check(str(path)).problems == []


def test_gpt2_positions_in_the_ir_give_the_onnx_limit(tmp_path: Path) -> None:
    """The IR's Range -> Convert -> Unsqueeze (OpenVINO's names for a cast) reads the same positions."""
    ov = pytest.importorskip("openvino", reason="the IR is converted by openvino", exc_type=ImportError)
    path = position_gather(tmp_path / "gpt2.onnx", 8, "range")
    xml = tmp_path / "gpt2.xml"
    ov.save_model(ov.convert_model(str(path)), str(xml))
    assert "Convert" in xml.read_text() and "Range" in xml.read_text()
    [onnx_note] = check(str(path)).problems
    [ir_note] = check(str(xml)).problems
    assert (ir_note.kind, ir_note.severity) == ("length-limit", "info")
    assert "works only for past_seq + seq <= 8" in onnx_note.message
    assert "works only for" in ir_note.message and "<= 8" in ir_note.message, ir_note.message
    # past the table OpenVINO does not fail: its Gather reads zeros, which the note says
    assert "OpenVINO reads zeros past its end" in ir_note.message and "zeros" not in onnx_note.message
    compiled = ov.Core().compile_model(str(xml), "CPU")
    past = compiled(_sizes(4, 5))[0]  # positions 5..8 of an 8-row table of ones: the last reads zeros
    assert past[0, :3].min() == 2.0 and past[0, 3].max() == 1.0


def test_positions_past_the_table_at_given_sizes_fail_the_onnx_file_and_run_wrong_in_the_ir(tmp_path: Path) -> None:
    """At sizes where the positions pass the table, onnxruntime refuses the ONNX file (an error) and OpenVINO runs
    its IR on zeros (a warning saying so): each format gets what its runtime does, and both sizes that fit stay
    clean."""
    ov = pytest.importorskip("openvino", reason="the IR is converted by openvino", exc_type=ImportError)
    path = position_gather(tmp_path / "gpt2.onnx", 8, "range")
    xml = tmp_path / "gpt2.xml"
    ov.save_model(ov.convert_model(str(path)), str(xml))
    compiled = ov.Core().compile_model(str(xml), "CPU")
    for seq, past in ((5, 4), (3, 9), (5, 3), (8, 0)):
        fits = seq + past <= 8
        assert _runs_at(path, seq, past) == fits  # onnxruntime
        compiled(_sizes(seq, past))  # OpenVINO runs every size
        onnx_at = check(str(path), dims={"seq": seq, "past_seq": past})
        ir_at = check(str(xml), dims={"x_0": 2, "x_1": seq, "past_0": 2, "past_1": past})
        assert [p.severity for p in ir_at.problems if p.kind == "index-out-of-range"] == ([] if fits else ["warning"])
        assert [p.severity for p in onnx_at.problems if p.kind == "index-out-of-range"] == ([] if fits else ["error"])
        assert ir_at.clean == fits and not any(p.severity == "error" for p in ir_at.problems), ir_at.problems
        if not fits:
            [warning] = [p for p in ir_at.problems if p.kind == "index-out-of-range"]
            assert "OpenVINO does not refuse it, its Gather gives zeros there" in warning.message, warning.message


def test_positions_past_the_table_at_every_size_are_an_error_in_onnx_and_a_warning_in_the_ir(tmp_path: Path) -> None:
    """``Range(0, seq) + 20`` into a table of 8 rows is past its end at every length: onnxruntime refuses it at
    each, OpenVINO runs its IR at each, and each format's finding says what its runtime does."""
    ov = pytest.importorskip("openvino", reason="the IR is converted by openvino", exc_type=ImportError)
    nodes = [
        helper.make_node("Squeeze", ["seq", "zero"], ["seq_s"], name="seq_s"),
        helper.make_node("Range", ["zero_s", "seq_s", "one_s"], ["r"], name="positions"),
        helper.make_node("Add", ["r", "twenty_s"], ["p"], name="shift"),
        helper.make_node("Unsqueeze", ["p", "zero"], ["ids"], name="ids"),
        helper.make_node("Gather", ["table", "ids"], ["pos"], name="wpe", axis=0),
        helper.make_node("Add", ["x", "pos"], ["y"], name="add_pos"),
    ]
    scalars = [
        numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("zero_s", 0), ("one_s", 1), ("twenty_s", 20))
    ]
    path = _cache_model(tmp_path / "past.onnx", nodes, np.ones((8, 8), np.float32), scalars)
    xml = tmp_path / "past.xml"
    ov.save_model(ov.convert_model(str(path)), str(xml))
    compiled = ov.Core().compile_model(str(xml), "CPU")
    for seq in (1, 3):
        assert not _runs_at(path, seq, 0)
        compiled(_sizes(seq, 0))
    [onnx_finding] = [p for p in check(str(path)).problems if p.kind == "index-out-of-range"]
    [ir_finding] = [p for p in check(str(xml)).problems if p.kind == "index-out-of-range"]
    assert onnx_finding.severity == "error" and "past the end" in onnx_finding.message
    assert ir_finding.severity == "warning" and "OpenVINO does not refuse it" in ir_finding.message, ir_finding


@pytest.mark.parametrize(
    ("opset", "reads"),
    [("opset8", "zeros there"), ("opset7", "zeros there"), ("opset1", "whatever lies past the data")],
)
def test_an_ir_gather_past_its_axis_says_what_its_version_reads(tmp_path: Path, opset: str, reads: str) -> None:
    """Gather-7 and -8 give zeros for an index past the axis, Gather-1 whatever lies past the data (OpenVINO's CPU
    plugin): none refuses it, and the warning names what the layer's version reads."""
    ov = pytest.importorskip("openvino", reason="the IR is built by openvino", exc_type=ImportError)
    ops = importlib.import_module(f"openvino.{opset}")
    data = ops.parameter([5], np.float32, name="data")
    gathered = ops.gather(data, ops.constant(np.array([0, 7], np.int64)), ops.constant(np.int64(0)))
    xml = tmp_path / "gather.xml"
    ov.save_model(ov.Model([gathered], [data]), str(xml))
    assert f'version="{opset}"' in xml.read_text()
    ov.Core().compile_model(str(xml), "CPU")(np.arange(5, dtype=np.float32))  # runs
    [warning] = [p for p in check(str(xml)).problems if p.kind == "index-out-of-range"]
    assert warning.severity == "warning" and f"its Gather gives {reads}" in warning.message, warning.message


# -- bounds of positions, against onnxruntime --------------------------------------------------------

#: a tree of positions: ("range", start, length) on an axis of its own, ("add"|"sub", a, b) an outer sum,
#: ("mul", a, constant), ("shift", a, constant), ("neg", a)
_LENGTHS = ("q", "k", "p")
_trees = st.recursive(
    st.tuples(st.just("range"), st.integers(-3, 3), st.sampled_from(_LENGTHS)),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["add", "sub"]), inner, inner),
        st.tuples(st.just("mul"), inner, st.integers(-3, 3)),
        st.tuples(st.just("shift"), inner, st.integers(-5, 5)),
        st.tuples(st.just("neg"), inner),
    ),
    max_leaves=4,
)


def _leaves(tree: tuple) -> int:
    return 1 if tree[0] == "range" else sum(_leaves(t) for t in tree[1:] if isinstance(t, tuple))


def _positions_model(tree: tuple) -> onnx.ModelProto:
    """``tree`` as ONNX nodes: each Range unsqueezed onto an axis of its own, so every sum is an outer one."""
    rank = _leaves(tree)
    nodes: list[object] = [helper.make_node("Shape", [n], [f"{n}_shape"], name=f"{n}_shape") for n in _LENGTHS] + [
        helper.make_node("Gather", [f"{n}_shape", "one_s"], [f"{n}_len"], name=f"{n}_len", axis=0) for n in _LENGTHS
    ]
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one_s"),
        *(numpy_helper.from_array(np.array(c, np.int64), f"c{c + 9}") for c in range(-9, 10)),
    ]
    count = iter(range(1000))
    axis = iter(range(rank))

    def build(t: tuple) -> str:
        k = next(count)
        out = f"t{k}"
        if t[0] == "range":
            _, start, length = t
            nodes.append(helper.make_node("Add", [f"c{start + 9}", f"{length}_len"], [f"end{k}"], name=f"end{k}"))
            nodes.append(helper.make_node("Range", [f"c{start + 9}", f"end{k}", "one_s"], [f"r{k}"], name=f"range{k}"))
            a = next(axis)
            others = [j for j in range(rank) if j != a]
            if others:
                inits.append(numpy_helper.from_array(np.array(others, np.int64), f"axes{k}"))
                nodes.append(helper.make_node("Unsqueeze", [f"r{k}", f"axes{k}"], [out], name=f"on_axis{k}"))
            else:
                nodes.append(helper.make_node("Identity", [f"r{k}"], [out], name=f"on_axis{k}"))
        elif t[0] in ("add", "sub"):
            a, b = build(t[1]), build(t[2])
            nodes.append(helper.make_node(t[0].capitalize(), [a, b], [out], name=f"n{k}"))
        elif t[0] == "neg":
            nodes.append(helper.make_node("Neg", [build(t[1])], [out], name=f"n{k}"))
        else:
            op = "Mul" if t[0] == "mul" else "Add"
            nodes.append(helper.make_node(op, [build(t[1]), f"c{t[2] + 9}"], [out], name=f"n{k}"))
        return out

    nodes.append(helper.make_node("Identity", [build(tree)], ["ids"], name="ids"))
    graph = helper.make_graph(
        nodes,
        "positions",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, n]) for n in _LENGTHS],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=60, deadline=None)
@given(_trees, st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)))
def test_the_bounds_of_positions_are_the_least_and_largest_onnxruntime_computes(
    tree: tuple, sizes: tuple[int, int, int]
) -> None:
    from bcast.onnx.graph_read import graph_of, onnx_fallback

    model = _positions_model(tree)
    graph = graph_of(model)
    ctx = Ctx(graph)
    propagate(graph, fallback=onnx_fallback, ctx=ctx)
    found = element_bounds("ids", ctx)
    assert found is not None, tree  # every tree of these ops is followed
    lo, hi, _ = found
    env = dict(zip(_LENGTHS, sizes, strict=True))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ids,) = session.run(None, {n: np.ones((1, env[n]), np.float32) for n in _LENGTHS})
    assert (int(ids.min()), int(ids.max())) == (lo.evaluate(env), hi.evaluate(env)), (tree, env)


def _grid_table(path: Path, side: int) -> Path:
    """Patches ``x [B, H, W, 8]`` flattened to ``[B, H*W, 8]``, plus a ``[side, side, 8]`` table of positions
    cropped to ``[H, W]`` and flattened the same way (SD3's cropped positions), then the sum meets the patches
    again (a residual): the crop is ``min(H, side)*min(W, side)`` rows, the sum's length where both agree."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "one", "three", "zero"], ["hw"], name="grid"),
        helper.make_node("Slice", ["pos", "zeros", "hw", "axes"], ["crop"], name="pos_crop"),
        helper.make_node("Reshape", ["x", "flat"], ["tokens"], name="patches"),
        helper.make_node("Reshape", ["crop", "one_row"], ["p"], name="positions"),
        helper.make_node("Add", ["tokens", "p"], ["y"], name="add_pos"),
        helper.make_node("Add", ["y", "tokens"], ["z"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes,
        "grid_positions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "H", "W", 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((side, side, 8), np.float32), "pos"),
            _ints("one", [1]),
            _ints("three", [3]),
            _ints("zero", [0]),
            _ints("zeros", [0, 0]),
            _ints("axes", [0, 1]),
            _ints("flat", [0, -1, 8]),
            _ints("one_row", [1, -1, 8]),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_what_meets_a_length_within_its_limit_meets_the_length(tmp_path: Path) -> None:
    """Past the table's side the first Add fails (onnxruntime refuses 40x8); within it the sum is ``H*W`` long, so the
    residual that meets the patches again asks nothing more: one note of the limit, no warning at the residual (its
    output was ``max`` of the length and the crop, met against the length)."""
    path = _grid_table(tmp_path / "grid.onnx", 32)
    assert _runs(path, "x", (2, 32, 8, 8)) and _runs(path, "x", (1, 5, 7, 8)) and not _runs(path, "x", (2, 40, 8, 8))
    report = check(str(path))
    assert report.clean, report.render()
    assert [(p.kind, p.severity, p.node) for p in report.problems] == [("length-limit", "info", "add_pos")]


# -- positions counted from a mask (RoBERTa's ``cumsum(input_ids != pad) * mask + pad``) ------------------------------


def counted_positions(path: Path, rows: int, pad: int, exclusive: bool = False) -> Path:
    """RoBERTa's ``create_position_ids_from_input_ids`` as the TorchScript exporter writes it: the tokens that are
    not padding counted along the sequence (``CumSum`` of ``Not(Equal(ids, pad))``), times the mask, plus the
    padding index, read from a learned table of ``rows`` rows."""
    n = helper.make_node
    nodes = [
        n("Equal", ["input_ids", "pad"], ["is_pad"], name="is_pad"),
        n("Not", ["is_pad"], ["keep"], name="keep"),
        n("Cast", ["keep"], ["mask"], name="mask", to=TensorProto.INT32),
        n("CumSum", ["mask", "axis1"], ["count"], name="count", exclusive=int(exclusive)),
        n("Mul", ["count", "mask"], ["kept"], name="kept"),
        n("Cast", ["kept"], ["kept64"], name="kept64", to=TensorProto.INT64),
        n("Add", ["kept64", "pad"], ["position_ids"], name="position_ids"),
        n("Gather", ["table", "position_ids"], ["y"], name="embed_positions"),
    ]
    inits = [
        numpy_helper.from_array(np.array(pad, np.int64), "pad"),
        numpy_helper.from_array(np.array(1, np.int32), "axis1"),
        numpy_helper.from_array(np.ones((rows, 4), np.float32), "table"),
    ]
    graph = helper.make_graph(
        nodes,
        "counted_positions",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _counted_runs(path: Path, seq: int, pad: int) -> bool:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    try:  # a sequence of no padding: every position counted
        session.run(None, {"input_ids": np.full((2, seq), pad + 3, np.int64)})
    except Exception:  # onnxruntime's INVALID_ARGUMENT: "indices element out of data bounds"
        return False
    return True


@pytest.mark.parametrize(("rows", "pad", "exclusive"), [(12, 1, False), (9, 0, False), (10, 2, True)])
def test_positions_counted_from_a_mask_limit_the_sequence(tmp_path: Path, rows: int, pad: int, exclusive: bool) -> None:
    """The last position of a sequence of no padding is ``seq + pad`` (``seq - 1 + pad`` counted exclusively): the
    model works only while it is a row of the table, where onnxruntime starts to fail."""
    path = counted_positions(tmp_path / "roberta.onnx", rows, pad, exclusive)
    last = rows - pad - (0 if exclusive else 1)  # the longest sequence whose positions are rows of the table
    assert _counted_runs(path, last, pad) and not _counted_runs(path, last + 1, pad)
    [note] = check(str(path)).problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "embed_positions"), note.message
    assert "positions made by CumSum count" in note.message, note.message
    report = check(str(path), dims={"seq": f"1..{last}"})
    assert report.problems == [] or all(p.severity == "info" for p in report.problems)
    assert check(str(path), dims={"seq": f"1..{last + 1}"}).fails("warning")


def test_positions_counted_from_a_mask_in_the_ir_give_the_onnx_limit(tmp_path: Path) -> None:
    """OpenVINO's IR of it (LogicalNot, Convert, CumSum with ``exclusive="false"``): the same limit, its Gather
    reading zeros past the table."""
    ov = pytest.importorskip("openvino", reason="the IR is converted by openvino", exc_type=ImportError)
    path = counted_positions(tmp_path / "roberta.onnx", 12, 1)
    xml = tmp_path / "roberta.xml"
    ov.save_model(ov.convert_model(str(path)), str(xml))
    assert "CumSum" in xml.read_text() and "LogicalNot" in xml.read_text()
    [note] = check(str(xml)).problems
    assert (note.kind, note.severity) == ("length-limit", "info")
    assert "works only for input_ids_1 + 2 <= 12" in note.message, note.message
    assert "OpenVINO reads zeros past its end" in note.message


def _kept_patches(keep: int) -> Any:
    """ViTMAE's masking as the dynamo exporter writes it: the patches [B, N, 8] shuffled by noise (``TopK`` of all
    N), the first ``keep`` kept (a count traced as a constant), gathered, and added to positions sliced the way the
    graph computes the count, ``min(keep, N)``. Right at every N: the slice of N patches to ``keep`` rows is
    ``min(keep, N)`` rows, never ``keep`` rows of fewer patches."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Slice", ["shape", "one", "two", "zero"], ["count"], name="count"),
        n("ReduceMean", ["x"], ["noise"], name="noise", axes=[2], keepdims=0),
        n("TopK", ["noise", "count"], ["values", "order"], name="shuffle", axis=1),
        n("Slice", ["order", "zero", "keep", "one"], ["kept"], name="keep_first"),
        n("Unsqueeze", ["kept", "two"], ["kept3"], name="kept3"),
        n("Expand", ["kept3", "wide"], ["index"], name="index"),
        n("GatherElements", ["x", "index"], ["picked"], name="pick", axis=1),
        n("Min", ["count", "keep"], ["rows"], name="rows"),
        n("Slice", ["pos", "zero", "rows", "zero"], ["p"], name="positions"),
        n("Add", ["picked", "p"], ["y"], name="add_positions"),
    ]
    graph = helper.make_graph(
        nodes,
        "kept_patches",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            _ints("zero", [0]),
            _ints("one", [1]),
            _ints("two", [2]),
            _ints("keep", [keep]),
            _ints("wide", [1, 1, 8]),
            numpy_helper.from_array(np.ones((64, 8), np.float32), "pos"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_constant_count_kept_of_a_symbolic_axis_is_at_most_the_axis() -> None:
    model = _kept_patches(6)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 3, 6, 9):  # fewer patches than the count kept, as many, more
        (y,) = session.run(None, {"x": np.ones((2, n, 8), np.float32)})
        assert y.shape == (2, min(6, n), 8)
    report = check(model)
    assert report.problems == [], report.render()


def _relative_window(half: int) -> Any:
    """DeBERTa's relative embeddings cut as the TorchScript trace wrote them, ``rel[half - S : half + S]`` of a
    table of ``2 * half`` rows (the ``min(S, half)`` it had was lost), added to scores [B, 2S, 4]: past ``S = half``
    the start is negative and counts from the end, and the cut is another number of rows."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Slice", ["shape", "one", "two", "zero"], ["s"], name="length"),
        n("Sub", ["half", "s"], ["start"], name="start"),
        n("Add", ["half", "s"], ["end"], name="end"),
        n("Slice", ["rel", "start", "end", "zero"], ["window"], name="rel_window"),
        n("Concat", ["x", "x"], ["xx"], name="both_directions", axis=1),
        n("Add", ["xx", "window"], ["y"], name="add_relative"),
    ]
    graph = helper.make_graph(
        nodes,
        "relative_window",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            _ints("zero", [0]),
            _ints("one", [1]),
            _ints("two", [2]),
            _ints("half", [half]),
            numpy_helper.from_array(np.ones((2 * half, 4), np.float32), "rel"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("half", [4, 7])
def test_a_start_that_turns_negative_past_a_length_is_the_models_limit(half: int) -> None:
    model = _relative_window(half)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])

    def runs(s: int) -> bool:
        try:
            session.run(None, {"x": np.ones((2, s, 4), np.float32)})
        except Exception:  # onnxruntime's INVALID_ARGUMENT: the window is not 2S rows past S = half
            return False
        return True

    # at S = half + 1 the wrapped window is one row, which broadcasts (a wrong result, no failure); past it, fails
    assert all(runs(s) for s in range(1, half + 1)) and not any(runs(s) for s in range(half + 2, half + 5))
    notes = check(model).problems
    assert notes and all((p.kind, p.severity) == ("length-limit", "info") for p in notes), notes
    [start] = [p for p in notes if p.node == "rel_window"]
    assert f"works only for S <= {half}" in start.message and "counts from the end" in start.message
    # the window's end past the table says the same limit in its own words (S + half <= 2 * half)
    assert all(f"S <= {half}" in p.message or f"S + {half} <= {2 * half}" in p.message for p in notes)
    assert check(model, dims={"S": f"1..{half + 3}"}).fails("warning")


def _clipped_columns(clip: int) -> Any:
    """Columns picked by GatherElements from a [B, S, 6] tensor with ``Clip(arange(S), 0, clip)``: past the 6 columns
    where the clipped positions reach them."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Gather", ["shape", "one_s"], ["s"], name="length", axis=0),
        n("Range", ["zero_s", "s", "one_s"], ["r"], name="positions"),
        n("Clip", ["r", "zero_s", "clip"], ["c"], name="clip"),
        n("Unsqueeze", ["c", "axes02"], ["c3"], name="as_column"),
        n("Expand", ["c3", "wide"], ["idx"], name="indices"),
        n("GatherElements", ["x", "idx"], ["y"], name="pick", axis=2),
    ]
    graph = helper.make_graph(
        nodes,
        "clipped_columns",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array(0, np.int64), "zero_s"),
            numpy_helper.from_array(np.array(1, np.int64), "one_s"),
            numpy_helper.from_array(np.array(clip, np.int64), "clip"),
            _ints("axes02", [0, 2]),
            _ints("wide", [1, 1, 6]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_clipped_positions_bound_a_gather_elements_index() -> None:
    """Clipped to 5, the positions never pass the 6 columns; clipped to 9, they do from S = 7 on, where onnxruntime
    stops; clipped to 5 and to 9, the check says so."""

    def runs(model: Any, s: int) -> bool:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        try:
            session.run(None, {"x": np.ones((2, s, 6), np.float32)})
        except Exception:  # onnxruntime's INVALID_ARGUMENT: "Out of range value in index tensor"
            return False
        return True

    safe, past = _clipped_columns(5), _clipped_columns(9)
    assert all(runs(safe, s) for s in (1, 6, 12)) and check(safe).problems == []
    assert runs(past, 6) and not runs(past, 7)
    [note] = check(past).problems
    assert (note.kind, note.severity, note.node) == ("length-limit", "info", "pick"), note.message
    assert "works only for" in note.message and "6" in note.message, note.message
