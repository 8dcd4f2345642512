"""The sizes a user means a model for (``--dim S=1..512``, ``check(model, dims=...)``), judged by the runtime.

A size given is the dim's size everywhere; a range given turns a length limit inside it into a
warning and drops one past it; a range that no size the model takes meets is a contradiction; a
name the model does not have is bad input (exit 2). The oracle for each model is onnxruntime at
the sizes given.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bcast.check import check, sample_model_path
from bcast.errors import BroadcastError
from bcast.graph.sizes import SizesError, read_sizes
from tests.test_length_limits import position_table

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the models", exc_type=ImportError)


@pytest.fixture(scope="module")
def positions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``x [B, S, 32] + pos[:S]`` with a 4-row table."""
    return position_table(tmp_path_factory.mktemp("sizes") / "pos.onnx", 4)


def _runs(path: Path, s: int) -> bool:
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
            None, {"x": np.ones((2, s, 32), np.float32)}
        )
    except Exception:
        return False
    return True


READ = [
    ({"S": 4}, {"S": (4, 4)}),
    ({"S": "1..512"}, {"S": (1, 512)}),
    ({"S": "8.."}, {"S": (8, None)}),
    ({"S": (2, None), "B": (1, 1)}, {"S": (2, None), "B": (1, 1)}),
    (["S=3", "input_ids_1 = 1..9"], {"S": (3, 3), "input_ids_1": (1, 9)}),
    (None, {}),
    ({}, {}),
]


@pytest.mark.parametrize(("given", "want"), READ)
def test_sizes_are_read_from_every_form(given: object, want: object) -> None:
    assert read_sizes(given) == want  # type: ignore[arg-type]


BAD = [
    ({"S": "9..3"}, BroadcastError, "an empty range"),
    ({"S": "x"}, BroadcastError, "not a size"),
    ({"S": -1}, BroadcastError, "sizes are 0 to"),
    ({"S": 2**63}, BroadcastError, "sizes are 0 to"),
    ({"S": True}, TypeError, "boolean"),
    ({"S": 1.5}, TypeError, "not float"),
    ({"S": (1, "x")}, TypeError, "(lo, hi)"),
    ({"1S": 3}, BroadcastError, "not a dim's name"),
    ({"a" * 300: 3}, BroadcastError, "not a dim's name"),
    (["S"], BroadcastError, "not NAME=SIZE"),
    ("S=3", TypeError, "not a single str"),
    (42, TypeError, "not int"),
    ({f"s{i}": 1 for i in range(5000)}, BroadcastError, "more than 4096"),
]


@pytest.mark.parametrize(("given", "error", "words"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_a_bad_size_is_named_in_one_short_line(given: object, error: type[Exception], words: str) -> None:
    with pytest.raises(error) as info:
        read_sizes(given)  # type: ignore[arg-type]
    text = str(info.value)
    assert words in text and "\n" not in text and len(text.encode()) < 2000


def test_a_range_within_the_limit_says_nothing_and_past_it_warns(positions: Path) -> None:
    assert all(_runs(positions, s) for s in range(1, 5)) and not _runs(positions, 5)
    assert check(str(positions), dims={"S": "1..4"}).problems == []
    report = check(str(positions), dims={"S": "1..16"})
    [p] = report.problems
    assert (p.kind, p.severity) == ("length-limit", "warning") and not report.clean
    assert "works only for S <= 4" in p.message and "S is given as 1..16" in p.message


def test_a_size_given_is_the_dims_size(positions: Path) -> None:
    assert _runs(positions, 3) and not _runs(positions, 9)
    assert check(str(positions), dims={"S": 3}).problems == []
    [p] = check(str(positions), dims={"S": 9}).problems
    assert (p.kind, p.severity, p.node) == ("cannot-broadcast", "error", "add_pos")


def test_a_range_no_size_of_the_model_meets_is_a_contradiction() -> None:
    report = check(sample_model_path(), dims={"N": "5..8"})
    [c] = [p for p in report.problems if p.kind == "contradiction"]
    assert "N in {5..8}" in c.message and "N in {1, 4}" in c.message
    assert not [p for p in check(sample_model_path(), dims={"N": "1..4"}).problems if p.kind == "contradiction"]


def test_a_name_the_model_lacks_is_bad_input(positions: Path) -> None:
    with pytest.raises(SizesError, match=r"no dim named 'Q'.*B, S"):
        check(str(positions), dims={"Q": 3})


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        (["--dim", "S=1..4"], 0, ""),
        (["--dim", "S=1..16"], 1, "S is given as 1..16"),
        (["--dim", "Q=3"], 2, "--dim:"),
        (["--dim", "S=x"], 2, "--dim:"),
        (["--dim", "S"], 2, "--dim:"),
        # the level that fails: a warning fails by default, not with --fail-on error; a note only with info
        (["--dim", "S=1..16", "--fail-on", "error"], 0, "S is given as 1..16"),
        (["--fail-on", "warning"], 0, "works only for S <= 4"),
        (["--fail-on", "info"], 1, "works only for S <= 4"),
        (["--fail-on", "bogus"], 2, "invalid choice"),
    ],
)
def test_the_command_takes_dim(positions: Path, args: list[str], status: int, words: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bcast", "check", str(positions), *args], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == status, run.stdout + run.stderr
    assert words in run.stdout + run.stderr
    if status == 2 and "--dim" in args:
        assert run.stdout == "" and len(run.stderr.strip().splitlines()) == 1


def test_a_report_fails_at_a_level(positions: Path) -> None:
    note = check(str(positions))
    warned = check(str(positions), dims={"S": "1..16"})
    assert [note.fails(x) for x in ("error", "warning", "info")] == [False, False, True]
    assert [warned.fails(x) for x in ("error", "warning", "info")] == [False, True, True]
    with pytest.raises(ValueError, match="a level is one of error, warning, info"):
        note.fails("bogus")


def _concat_halves(path: Path) -> Path:
    """``Concat(x [S, 8], concat(x[::2], x[::2]), axis=1)``: Concat needs ``S == 2*ceil(S/2)``, an even S."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Slice", ["x", "start", "end", "zero", "two"], ["half"], name="every_other"),
        helper.make_node("Concat", ["half", "half"], ["doubled"], name="doubled", axis=0),
        helper.make_node("Concat", ["x", "doubled"], ["y"], name="join", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "concat_halves",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            numpy_helper.from_array(np.array([0], np.int64), "start"),
            numpy_helper.from_array(np.array([2**62], np.int64), "end"),
            numpy_helper.from_array(np.array([2], np.int64), "two"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_range_given_bounds_the_sizes_a_latent_finding_is_looked_for_at(tmp_path: Path) -> None:
    path = _concat_halves(tmp_path / "concat.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session.run(None, {"x": np.ones((4, 8), np.float32)})
    with pytest.raises(Exception, match="join"):
        session.run(None, {"x": np.ones((5, 8), np.float32)})
    [p] = check(str(path)).problems
    assert (p.kind, p.severity, p.node) == ("concat-mismatch", "warning", "join"), p.message
    assert "S is odd" in p.message
    # the sizes named as failing and holding lie in the range given
    [p] = check(str(path), dims={"S": "3..6"}).problems
    assert p.message.endswith("it fails unless S is 4 or 6"), p.message
    [p] = check(str(path), dims={"S": "200..300"}).problems
    assert "S = 201" in p.message and "S = 200" in p.message, p.message


def _quotient_dims(where: str) -> object:
    """A dynamo export's annotation ``64 // (H // 4)`` (a count of patches) on the input (``where="input"``) or on a
    tensor inside."""
    from onnx import TensorProto, helper

    quotient = "(64//((H//4)))"
    x_dims: list[object] = ["B", quotient] if where == "input" else ["B", "H"]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)
    inside = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", quotient])
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["y"], ["z"])]
    graph = helper.make_graph(nodes, "g", [x], [out], value_info=[inside] if where == "inside" else [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_sizes_that_make_a_declared_dim_divide_by_zero_are_said_not_a_crash() -> None:
    """At H = 2, ``64 // (H // 4)`` divides by zero. Declared inside, the annotation says nothing at those sizes
    (the check goes on; at H = 8 it still holds the derived dim to it); declared for an input, the sizes given
    cannot be the input's: bad input, in one line."""
    inside = _quotient_dims("inside")
    assert check(inside, dims={"H": 2}).problems == []
    [stale] = [p for p in check(inside, dims={"H": 8}).problems if p.kind == "declared-shape"]
    assert "(64//((H//4)))" in stale.message or "floor(64/floor(H/4))" in stale.message, stale.message
    with pytest.raises(SizesError, match=r"divide by zero") as got:
        check(_quotient_dims("input"), dims={"H": 2})
    assert len(str(got.value)) < 2048 and "\n" not in str(got.value)
