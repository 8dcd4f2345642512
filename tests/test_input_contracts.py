"""What a model needs of its inputs' dims, named by the file or not, is no bug.

OpenVINO drops the dims' names, so every input's dynamic dim is a symbol of its own
(``input_ids_0``, ``attention_mask_1``). That two inputs' batches agree, or that the mask's length is
``past + seq``, is how the model must be called: listed with the symbols, not reported. That a batch
must equal a length (a mask reshaped with its axes swapped) is a bug, in the IR as in the ONNX model
it was converted from. An ONNX model whose exporter names the mask's length apart (``total_seq``
against ``past_seq + seq``) is judged by the same rule. The oracles are onnxruntime and OpenVINO,
run where the dims agree and where they differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import Problem, check
from bcast.graph.model import Node
from runtimes import runs

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper", exc_type=ImportError)
ov = pytest.importorskip("openvino", reason="the IRs are converted by openvino", exc_type=ImportError)
ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the ONNX models", exc_type=ImportError)

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _mask_model(directory: Path, *, swapped: bool) -> tuple[Path, Path]:
    """Embeddings ``[B, S, 8]`` times the mask reshaped to ``[B, S, 1]`` (or, swapped, ``[S, B, 1]``)."""
    first, second = ("seq", "batch") if swapped else ("batch", "seq")
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"], name="embed_tokens"),
        helper.make_node("Shape", ["attention_mask"], ["shape"], name="mask_shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="mask_batch", axis=0),
        helper.make_node("Gather", ["shape", "one"], ["seq"], name="mask_seq", axis=0),
        helper.make_node("Concat", [first, second, "one"], ["target"], name="mask_target", axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], name="mask_float", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["mask_f", "target"], ["mask"], name="mask_3d"),
        helper.make_node("Mul", ["x", "mask"], ["y"], name="masked"),
    ]
    return _ids_and_mask_model(directory / ("swapped.onnx" if swapped else "mask.onnx"), nodes, [], zero=[0], one=[1])


def _ids_and_mask_model(path: Path, nodes: list[Any], tensors: list[Any], **constants: list[int]) -> tuple[Path, Path]:
    """The model of ``nodes`` over ``input_ids`` and ``attention_mask`` (both ``[batch, seq]``), a ``[16, 8]``
    table ``embed``, ``tensors`` and the int64 ``constants``, to ``y``; saved at ``path`` and converted to an IR
    beside it."""
    graph = helper.make_graph(
        nodes,
        path.stem,
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((16, 8), np.float32), "embed"),
            *tensors,
            *(numpy_helper.from_array(np.array(v, np.int64), name) for name, v in constants.items()),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return path, xml


def _feeds(b: int, s: int) -> dict[str, np.ndarray]:
    return {"input_ids": np.ones((b, s), np.int64), "attention_mask": np.ones((b, s), np.int64)}


def _runs_onnx(path: Path, b: int, s: int) -> bool:
    return runs(path, _feeds(b, s))


def _runs_ir(xml: Path, b: int, s: int) -> bool:
    return runs(xml, _feeds(b, s))


def test_inputs_that_agree_by_contract_are_no_problem_in_the_ir(tmp_path: Path) -> None:
    path, xml = _mask_model(tmp_path, swapped=False)
    assert _runs_onnx(path, 2, 5) and _runs_ir(xml, 2, 5)
    assert check(str(path)).problems == []
    report = check(str(xml))
    assert report.clean and report.problems == [], report.problems
    assert report.constraints, "the IR's inputs must agree: that is listed with the symbols"


def test_a_batch_made_to_meet_a_length_is_found_in_the_ir_as_in_onnx(tmp_path: Path) -> None:
    path, xml = _mask_model(tmp_path, swapped=True)
    assert _runs_onnx(path, 3, 3) and not _runs_onnx(path, 2, 5)  # latent: only when batch == seq
    assert _runs_ir(xml, 3, 3) and not _runs_ir(xml, 2, 5)
    for model in (path, xml):
        report = check(str(model))
        assert not report.clean, (model.suffix, report.render())
        # the IR names the layer after its output (y)
        assert {p.op for p in report.problems if p.severity == "warning"} & {"Mul", "Multiply"}, report.render()


def _cache_model(
    directory: Path,
    *,
    swapped: bool,
    mask_dims: tuple[str, str] = ("batch", "total_seq"),
    axes: tuple[int, int] = (1, 2),
) -> Path:
    """Attention scores ``[batch, 2, seq, past_seq + seq]`` (the key's past concatenated with the new) plus
    the mask ``[batch, total_seq]`` unsqueezed to ``[batch, 1, 1, total_seq]``, every dim named by the file
    as an exporter names them. ``swapped``: the mask is reshaped to ``[total_seq, 1, 1, batch]`` first."""
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"], name="embed_tokens"),
        helper.make_node("Reshape", ["x", "heads"], ["xh"], name="split_heads"),
        helper.make_node("Transpose", ["xh"], ["q"], name="q_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["past_key", "q"], ["k"], name="cat_past", axis=2),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], name="mask_float", to=TensorProto.FLOAT),
    ]
    if swapped:
        nodes += [
            helper.make_node("Shape", ["attention_mask"], ["mshape"], name="mask_shape"),
            helper.make_node("Gather", ["mshape", "zero"], ["mb"], name="mask_batch", axis=0),
            helper.make_node("Gather", ["mshape", "one"], ["ml"], name="mask_len", axis=0),
            helper.make_node("Concat", ["ml", "one", "one", "mb"], ["target"], name="mask_target", axis=0),
            helper.make_node("Reshape", ["mask_f", "target"], ["mask4"], name="mask_4d"),
        ]
    else:
        nodes.append(helper.make_node("Unsqueeze", ["mask_f", "axes"], ["mask4"], name="mask_4d"))
    nodes.append(helper.make_node("Add", ["scores", "mask4"], ["y"], name="add_mask"))
    graph = helper.make_graph(
        nodes,
        "cache",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("past_key", TensorProto.FLOAT, ["batch", 2, "past_seq", 4]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, list(mask_dims)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((16, 8), np.float32), "embed"),
            numpy_helper.from_array(np.array([0, 0, 2, 4], np.int64), "heads"),
            numpy_helper.from_array(np.array(axes, np.int64), "axes"),
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            numpy_helper.from_array(np.array([1], np.int64), "one"),
        ],
    )
    path = directory / f"cache_{int(swapped)}_{'_'.join(map(str, axes))}_{len(mask_dims[1])}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _runs_cache(path: Path, batch: int, seq: int, past: int, total: int) -> bool:
    """Whether the model's runtime runs it with ids of ``seq``, a cache of ``past`` and a mask of ``total``."""
    feeds = {
        "input_ids": np.ones((batch, seq), np.int64),
        "past_key": np.ones((batch, 2, past, 4), np.float32),
        "attention_mask": np.ones((batch, total), np.int64),
    }
    return runs(path, feeds)


def test_named_inputs_that_agree_by_contract_are_no_problem(tmp_path: Path) -> None:
    path = _cache_model(tmp_path, swapped=False)
    # the mask's length must be past + seq: a requirement of the call, not a bug of the model
    assert _runs_cache(path, 2, 3, 5, 8) and not _runs_cache(path, 2, 3, 5, 6)
    report = check(str(path))
    assert report.clean and report.problems == [], report.render()
    assert any("past_seq + seq" in c.dim and "total_seq" in str(c.allowed) for c in report.constraints), report.render()


def test_named_dims_of_one_input_made_to_meet_are_a_warning(tmp_path: Path) -> None:
    path = _cache_model(tmp_path, swapped=True)
    # the mask's batch meets the key's length and its length the batch: runs only where they agree
    assert _runs_cache(path, 8, 3, 5, 8) and not _runs_cache(path, 2, 3, 5, 8)
    report = check(str(path))
    assert not report.clean, report.render()
    found = [p for p in report.problems if p.node == "add_mask"]
    assert found and {p.severity for p in found} == {"warning"}, report.render()
    assert any("batch == total_seq" in p.message for p in found), report.render()


def test_a_contract_that_forces_a_dim_to_one_size_is_a_warning(tmp_path: Path) -> None:
    # the mask, [batch, past_seq + seq] as the exporter names it, unsqueezed on the wrong axes: its length
    # meets the queries' seq, so the model runs only with an empty cache (past_seq = 0)
    path = _cache_model(tmp_path, swapped=False, mask_dims=("batch", "past_seq + seq"), axes=(1, 3))
    assert _runs_cache(path, 2, 3, 0, 3) and not _runs_cache(path, 2, 3, 5, 8)
    report = check(str(path))
    [p] = [p for p in report.problems if p.node == "add_mask"]
    assert p.severity == "warning" and "it holds only if past_seq is 0" in p.message, report.render()
    # unsqueezed on the right axes, the same names make a contract, no problem
    right = _cache_model(tmp_path, swapped=False, mask_dims=("batch", "past_seq + seq"))
    assert _runs_cache(right, 2, 3, 5, 8)
    assert check(str(right)).problems == []


def test_contracts_are_taken_together_most_common_first() -> None:
    from fractions import Fraction

    from bcast.graph.context import _Equations

    eq = _Equations()
    one = Fraction(1)
    assert eq.add({"total": one, "past": -one, "seq": -one}) is None  # total == past + seq
    assert eq.add({"total": one, "past": -one, "seq": -one}) is None  # again: it follows
    assert eq.add({"total": one, "seq": -one}) == ("past", 0)  # with total == seq: past must be 0
    assert eq.add({"a": one, "b": -one}) is None and eq.add({"b": one, "c": -one}) is None
    assert eq.add({"a": one, "c": -one}) is None  # a == b == c: follows
    assert eq.add({"a": one, "c": -one, "": Fraction(-2)}) == ("", 0)  # a == c + 2 too: no sizes at all


@pytest.mark.parametrize(
    ("links", "listed", "counted"),
    [(0, 0, None), (3, 3, None), (9, 9, None), (10, 8, 2), (40, 8, 32)],
)
def test_links_between_unnamed_input_dims_are_counted_past_a_few(links: int, listed: int, counted: int | None) -> None:
    """An IR names no dim: each layer links its inputs' batch and lengths anew. The text report lists the
    model's own constraints (sizes, links it makes of its own), then a few of those links and a count of the
    rest; ``--quiet`` the same; the JSON every one, each marked."""
    from bcast.check.report import Report
    from bcast.constraints import Constraint
    from bcast.dims import Dim

    report = Report("m.xml", "openvino-ir")
    report.add_constraints("rope", "Multiply", [Constraint("in", ("seq",), (Dim.interval(1, 512),))])
    report.add_constraints("gate", "Add", [Constraint("broadcast", ("seq", "seq2"))])  # the model's own link
    for k in range(links):
        report.add_constraints(f"l{k}", "Add", [Constraint("broadcast", (f"past_{k}_0", f"past_{k}_1"))], relation=True)
    report.problems.append(Problem("rope", "Multiply", "length-limit", "works only for seq <= 512", severity="info"))
    report.finish()

    assert [c.relation for c in report.constraints] == [False] + [True] * links
    assert [c["relation"] for c in report.to_dict()["constraints"]] == [False] + [True] * links
    text = report.render()
    own = "  seq: {1..512}   (from rope, gate)"
    assert own in text.splitlines()
    assert sum(f"past_{k}_0:" in text for k in range(links)) == listed
    more = f"... and {counted} more links between the inputs' unnamed dims"
    assert (more in text) == (counted is not None)
    quiet = report.problem_lines()
    assert sum(line.startswith("m.xml: symbol past_") for line in quiet) == listed
    assert any(more in line for line in quiet) == (counted is not None)


def _folded_model(directory: Path, kind: str) -> tuple[Path, Path]:
    """Embeddings ``[B, S, 8]`` that meet the mask ``[B, S]`` after an exporter's shape arithmetic on the mask:

    * ``heads``: both sides fold the batch into heads (``[4*B, S, 2]`` scores against the mask tiled to
      ``[4*B, 1, S]``), as BLOOM's attention does; ``heads-bug`` tiles the mask twice, not four times;
    * ``reshape``: the mask is reshaped to ``[B, -1]`` with the ids' batch (GPT-2's attention mask), then
      unsqueezed to ``[B, L, 1]``; ``reshape-bug`` reshapes it to ``[S, -1]`` with the ids' length;
    * ``count``: the embeddings reshaped to the mask's ``[B, S, -1]`` (the -1 is the ids' ``8*B*S`` elements over
      the mask's ``B*S``, 8 where they agree) and a bias of 8 added; ``count-bug`` adds a bias of 4;
    * ``table``: a table of 64 positions cut to the mask's length and added to the embeddings (a limit of 64).
    """
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"], name="embed_tokens"),
        helper.make_node("Shape", ["input_ids"], ["ids_shape"], name="ids_shape"),
        helper.make_node("Gather", ["ids_shape", "zero"], ["b"], name="ids_batch", axis=0),
        helper.make_node("Gather", ["ids_shape", "one"], ["s"], name="ids_seq", axis=0),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"], name="mask_shape"),
        helper.make_node("Gather", ["mask_shape", "zero"], ["mb"], name="mask_batch", axis=0),
        helper.make_node("Gather", ["mask_shape", "one"], ["ms"], name="mask_seq", axis=0),
        helper.make_node("Cast", ["attention_mask"], ["m"], name="mask_float", to=TensorProto.FLOAT),
    ]
    if kind.startswith("heads"):
        tiles = "two" if kind == "heads-bug" else "four"
        nodes += [
            helper.make_node("Mul", ["b", "four"], ["b4"], name="batch_heads"),
            helper.make_node("Concat", ["b4", "s", "two"], ["x_target"], name="x_target", axis=0),
            helper.make_node("Reshape", ["x", "x_target"], ["xh"], name="split_heads"),
            helper.make_node("Unsqueeze", ["m", "one"], ["m1"], name="mask_unsqueeze"),
            helper.make_node("Concat", ["one", tiles, "one"], ["reps"], name="mask_reps", axis=0),
            helper.make_node("Tile", ["m1", "reps"], ["mt"], name="mask_tile"),
            helper.make_node("Mul", ["mb", tiles], ["mbh"], name="mask_batch_heads"),
            helper.make_node("Concat", ["mbh", "one", "ms"], ["m_target"], name="mask_target", axis=0),
            helper.make_node("Reshape", ["mt", "m_target"], ["mh"], name="mask_heads"),
            helper.make_node("Transpose", ["xh"], ["xt"], name="keys", perm=[0, 2, 1]),
            helper.make_node("MatMul", ["xh", "xt"], ["scores"], name="scores"),
            helper.make_node("Add", ["scores", "mh"], ["y"], name="masked"),
        ]
    elif kind.startswith("count"):
        nodes += [
            helper.make_node("Concat", ["mb", "ms", "minus1"], ["x_target"], name="x_target", axis=0),
            helper.make_node("Reshape", ["x", "x_target"], ["xr"], name="x_by_mask"),
            helper.make_node("Add", ["xr", "bias4" if kind == "count-bug" else "bias8"], ["y"], name="masked"),
        ]
    elif kind == "table":
        nodes += [
            helper.make_node("Slice", ["table", "zero", "ms"], ["rows"], name="positions"),
            helper.make_node("Unsqueeze", ["rows", "zero"], ["pos"], name="positions_3d"),
            helper.make_node("Add", ["x", "pos"], ["y"], name="masked"),
        ]
    else:
        first = "s" if kind == "reshape-bug" else "b"
        nodes += [
            helper.make_node("Concat", [first, "minus1"], ["m_target"], name="mask_target", axis=0),
            helper.make_node("Reshape", ["m", "m_target"], ["mr"], name="mask_reshape"),
            helper.make_node("Unsqueeze", ["mr", "two"], ["mu"], name="mask_unsqueeze"),
            helper.make_node("Mul", ["x", "mu"], ["y"], name="masked"),
        ]
    tables = [
        numpy_helper.from_array(np.ones(8, np.float32), "bias8"),
        numpy_helper.from_array(np.ones(4, np.float32), "bias4"),
        numpy_helper.from_array(np.ones((64, 8), np.float32), "table"),
    ]
    return _ids_and_mask_model(
        directory / f"{kind}.onnx", nodes, tables, zero=[0], one=[1], two=[2], four=[4], minus1=[-1]
    )


@pytest.mark.parametrize("kind", ["heads", "reshape", "count", "table"])
def test_inputs_that_agree_through_shape_arithmetic_are_no_problem_in_the_ir(kind: str, tmp_path: Path) -> None:
    """The IR names no dim: the batch folded into heads (``4*attention_mask_0`` against ``4*input_ids_0``) or a
    mask reshaped by the ids' batch (``floor((attention_mask_0*attention_mask_1)/input_ids_0)`` against
    ``input_ids_1``), a count that is one size (8) or a table cut to the mask's length (a limit, a note) meet the
    ids' dims exactly when the inputs agree axis by axis: how to call the model."""
    path, xml = _folded_model(tmp_path, kind)
    for b, s in ((2, 5), (3, 3), (1, 7)):
        assert _runs_onnx(path, b, s) and _runs_ir(xml, b, s), (b, s)
    notes = {"length-limit"} if kind == "table" else set()
    if notes:  # the table's 64 rows: past them, neither runtime runs the model
        assert not _runs_onnx(path, 1, 65) and not _runs_ir(xml, 1, 65)
    assert {p.kind for p in check(str(path)).problems} == notes
    report = check(str(xml))
    assert report.clean and {p.kind for p in report.problems} == notes, report.render()
    # what the inputs must agree on is listed with the symbols: a link, or the sizes a count may take
    if kind == "count":
        assert any(c.sizes == (1, 8) for c in report.constraints), report.render()
    elif kind != "table":
        assert any(c.relation for c in report.constraints), report.render()


@pytest.mark.parametrize("kind", ["heads-bug", "reshape-bug", "count-bug"])
def test_shape_arithmetic_that_no_agreement_of_the_inputs_satisfies_is_found_in_the_ir(
    kind: str, tmp_path: Path
) -> None:
    """The same arithmetic with a bug (the mask tiled twice for four heads; reshaped by the ids' length, not their
    batch): the dims meet only at sizes where the inputs do not agree, or where batch and length happen to. A
    problem in the IR as in the ONNX model, proven by both runtimes."""
    path, xml = _folded_model(tmp_path, kind)
    assert not _runs_onnx(path, 2, 5) and not _runs_ir(xml, 2, 5)
    if kind == "reshape-bug":  # latent: the mask's [S, B] is [B, S] when they are one size
        assert _runs_onnx(path, 3, 3) and _runs_ir(xml, 3, 3)
    for model in (path, xml):
        report = check(str(model))
        assert not report.clean, (model.suffix, report.render())
        assert {p.node for p in report.problems if p.severity in ("warning", "error")} & {"masked", "y"}, (
            report.render()
        )


# -- positions counted along a mask that spans the cache (OPT) -----------------------------------------------------


def _positions_model(directory: Path, *, start: str) -> tuple[Path, Path]:
    """Token embeddings ``[batch, seq, 8]`` plus position embeddings gathered at the mask's running count from
    position ``start`` on (OPT's positions: ``past``, the cache's length; a slice by the wrong length: ``seq``), then
    split into 2 heads by the ids' own dims; the mask ``[batch, total_seq]`` named apart, as the dynamo exporter names
    it. Saved, and converted to an IR beside it (OpenVINO drops the names)."""
    source, axis = ("past_key", 2) if start == "past" else ("input_ids", 1)
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"], name="embed_tokens"),
        helper.make_node("CumSum", ["attention_mask", "one"], ["count"], name="mask_count"),
        helper.make_node("Shape", [source], ["start_shape"], name="start_shape"),
        helper.make_node("Gather", ["start_shape", f"axis{axis}"], ["start"], name="start_at", axis=0),
        helper.make_node("Slice", ["count", "start", "end", "axis1"], ["positions"], name="new_positions"),
        helper.make_node("Gather", ["table", "positions"], ["p"], name="embed_positions"),
        helper.make_node("Add", ["x", "p"], ["h"], name="add_positions"),
        helper.make_node("Shape", ["input_ids"], ["ids_shape"], name="ids_shape"),
        helper.make_node("Concat", ["ids_shape", "heads"], ["target"], name="heads_target", axis=0),
        helper.make_node("Reshape", ["h", "target"], ["y"], name="split_heads"),
    ]
    graph = helper.make_graph(
        nodes,
        f"positions_{start}",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("past_key", TensorProto.FLOAT, ["batch", 2, "past_seq", 4]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total_seq"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.ones((16, 8), np.float32), "embed"),
            numpy_helper.from_array(np.ones((64, 8), np.float32), "table"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array([1], np.int64), "axis1"),
            numpy_helper.from_array(np.array([2], np.int64), "axis2"),
            numpy_helper.from_array(np.array([2**62], np.int64), "end"),
            numpy_helper.from_array(np.array([2, 4], np.int64), "heads"),
        ],
    )
    path = directory / f"positions_{start}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return path, xml


def test_positions_past_the_cache_are_how_the_model_is_called(tmp_path: Path) -> None:
    """The mask's count from the cache's length on gives ``total_seq - past_seq`` positions, one per new token
    wherever the mask spans the cache and the new tokens: that is a relation (``seq == total_seq - past_seq`` is
    ``total_seq == past_seq + seq``), and the heads' reshape by ``seq`` after it holds wherever the relation does.
    Both runtimes run the model at such sizes and fail it where the mask is longer."""
    path, xml = _positions_model(tmp_path, start="past")
    for model in (path, xml):
        assert _runs_cache(model, 2, 3, 5, 8) and _runs_cache(model, 1, 1, 7, 8)
        assert not _runs_cache(model, 2, 3, 5, 10)
        report = check(str(model))
        assert report.clean and [p for p in report.problems if p.severity != "info"] == [], report.render()
        assert report.constraints, report.render()  # what the call must meet is listed with the symbols


def test_positions_sliced_by_the_wrong_length_are_a_warning(tmp_path: Path) -> None:
    """The same count sliced from the new tokens' length on gives ``total_seq - seq`` positions: one per new token
    only where the cache is as long as the new tokens, which no call of a KV cache means (``seq == total_seq - seq``
    says that ``total_seq`` is twice ``seq``, no sum of two lengths). A warning at the Add, in ONNX and in the IR."""
    path, xml = _positions_model(tmp_path, start="seq")
    for model in (path, xml):
        assert _runs_cache(model, 2, 3, 3, 6) and not _runs_cache(model, 2, 3, 5, 8)
        report = check(str(model))
        found = [p for p in report.problems if p.severity == "warning"]
        assert found and not report.clean, report.render()
        assert any(p.node == "add_positions" or p.root == "add_positions" for p in found), report.render()


def test_links_met_before_make_a_later_layers_dims_one() -> None:
    """BLOOM's second layer takes its keys' length from its cache's elements over the first layer's batch. That is
    the mask's length once the links met before hold (the inputs' batches agree, the mask spans the first cache and
    the new tokens, the second cache's batch is the batch), and not before them; a cache's length meeting the new
    tokens' stays no link."""
    from bcast.graph import Graph
    from bcast.graph.context import Ctx
    from bcast.graph.expr import Expr, emax

    def dims(ctx: Ctx) -> dict[str, Expr]:
        return {
            f"{name}_{axis}": ctx.fresh(f"{name}_{axis}", free=True, unnamed_input=(name, axis))
            for name, axis in [
                ("ids", 0),
                ("ids", 1),
                ("mask", 0),
                ("mask", 1),
                ("k0", 0),
                ("k0", 2),
                ("k1", 0),
                ("k1", 2),
            ]
        }

    def later(d: dict[str, Expr]) -> list[Expr]:
        batch = emax([d["ids_0"], d["k0_0"]])
        return [d["mask_1"], (d["ids_1"] * d["k1_0"] * 32 + d["k1_0"] * d["k1_2"] * 32) // (batch * 32)]

    alone = Ctx(Graph([], {}, [], {}))
    assert not alone.links_unnamed_inputs(later(dims(alone)))
    ctx = Ctx(Graph([], {}, [], {}))
    d = dims(ctx)
    assert ctx.links_unnamed_inputs([d["ids_0"], d["k0_0"]])
    assert ctx.links_unnamed_inputs([d["mask_1"], d["ids_1"] + d["k0_2"]])
    assert ctx.links_unnamed_inputs([d["k1_0"], emax([d["ids_0"], d["k0_0"]])])
    assert ctx.links_unnamed_inputs(later(d))
    assert ctx.findings == []
    # a cache's length against the new tokens': taken as one while the graph is walked, a warning once it is, for the
    # mask spans both
    ctx.node = Node(0, "rotary", "Mul", ["q", "cos"], ["y"])
    ctx.links_unnamed_inputs([d["k1_2"], d["ids_1"]])
    ctx.settle_relations()
    [found] = ctx.findings
    assert found.severity == "warning" and found.node.name == "rotary", found
    assert "keeps apart" in found.message and "mask_1 == ids_1 + k0_2" in found.message, found.message


def test_lengths_at_different_axes_of_different_inputs_are_a_link_where_no_sum_keeps_them_apart() -> None:
    """An encoder's length is axis 1 of its states and its mask, axis 2 of a cross-attention cache: one quantity, a
    link. A batch (axis 0) that meets a length, or two dims of one input, stay no link."""
    from bcast.graph import Graph
    from bcast.graph.context import Ctx

    ctx = Ctx(Graph([], {}, [], {}))
    d = {
        f"{name}_{axis}": ctx.fresh(f"{name}_{axis}", free=True, unnamed_input=(name, axis))
        for name, axis in [("states", 0), ("states", 1), ("mask", 1), ("cross", 0), ("cross", 2), ("ids", 1)]
    }
    ctx.node = Node(0, "cross_attention", "Add", ["scores", "mask"], ["y"])
    assert ctx.links_unnamed_inputs([d["cross_2"], d["mask_1"]])
    assert ctx.links_unnamed_inputs([d["states_1"], d["cross_2"]])
    assert not ctx.links_unnamed_inputs([d["cross_0"], d["mask_1"]])  # a batch against a length
    assert not ctx.links_unnamed_inputs([d["states_0"], d["states_1"]])  # two dims of one input
    ctx.settle_relations()
    assert ctx.findings == []


def _cross_model(directory: Path, *, bias: bool = False, added: bool = False) -> tuple[Path, Path]:
    """Queries ``[B, S, 32]`` split by a reshape into 4 heads of 8 (``[0, 0, 4, 8]``, an int64 constant), against a
    cross-attention cache ``[B, H, E, 8]`` whose dims the file leaves unnamed: the heads meet the queries' 4 in
    the batch dims of a MatMul. With ``bias``, the projection's bias is laid out as ``[32, 1]`` (a float weight on the
    wrong axis): the tokens' length meets its 32. With ``added``, the cache is added to the queries instead: its
    heads meet the 4 in an Add. The ONNX file and its IR."""
    nodes = [
        helper.make_node("MatMul", ["states", "w"], ["h0"], name="q_proj"),
        helper.make_node("Add", ["h0", "b"], ["h"], name="q_bias"),
        helper.make_node("Reshape", ["h", "split"], ["q"], name="split_heads"),
        helper.make_node("Transpose", ["q"], ["qt"], name="heads_first", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["cross_key"], ["kt"], name="keys_last", perm=[0, 1, 3, 2]),
        helper.make_node("Add" if added else "MatMul", ["qt", "kt"], ["y"], name="cross_scores"),
    ]
    path = directory / f"cross{'_bias' if bias else ''}{'_added' if added else ''}.onnx"
    graph = helper.make_graph(
        nodes,
        path.stem,
        [
            helper.make_tensor_value_info("states", TensorProto.FLOAT, [None, None, 32]),
            helper.make_tensor_value_info("cross_key", TensorProto.FLOAT, [None, None, None, None]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.full((32, 32), 0.01, np.float32), "w"),
            numpy_helper.from_array(np.zeros((32, 1) if bias else (32,), np.float32), "b"),
            numpy_helper.from_array(np.array([0, 0, 4, 8], np.int64), "split"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return path, xml


def _runs_cross(model: Path, seq: int, heads: int, source: int = 5) -> bool:
    feeds = {
        "states": np.ones((2, seq, 32), np.float32),
        "cross_key": np.ones((2, heads, source, 8), np.float32),
    }
    return runs(model, feeds)


def test_an_open_input_dim_that_shape_arithmetic_sizes_is_how_the_model_is_called(tmp_path: Path) -> None:
    """A cross-attention cache's heads, left open by the file, meet the 4 heads the queries are split into (an int64
    reshape target: the model's own shape arithmetic). Both runtimes run the model with 4 heads or 1 and fail it
    with 2: what the model needs of its input, noted as such, in ONNX and in the IR (as a cache's heads that a
    Concat with the new keys needs at 4 are)."""
    path, xml = _cross_model(tmp_path, bias=False)
    for model in (path, xml):
        assert _runs_cross(model, 3, 4) and _runs_cross(model, 3, 1) and not _runs_cross(model, 3, 2)
        report = check(str(model))
        assert report.clean and [p for p in report.problems if p.severity != "info"] == [], report.render()
        [note] = [p for p in report.problems if "cross_key_1 in {1, 4}" in p.message]
        assert note.message.endswith("the model needs it to be 1 or 4"), note
        assert note.node in ("cross_scores", "y"), note  # the IR's layer is named after its output


def test_an_open_input_dim_that_a_weight_sizes_is_a_warning(tmp_path: Path) -> None:
    """The same model with the projection's bias laid out as ``[32, 1]``: the tokens' length, left open, meets the
    weight's 32. Both runtimes run it only where the length is 1 or 32: a float weight's shape is no shape the
    model computes, and an input dim it sizes is the bug it usually is (the corpus's transposed biases), a warning
    in ONNX and in the IR."""
    path, xml = _cross_model(tmp_path, bias=True)
    for model in (path, xml):
        assert _runs_cross(model, 32, 4) and not _runs_cross(model, 3, 4)
        report = check(str(model))
        assert not report.clean, report.render()
        [found] = [p for p in report.problems if p.severity == "warning" and "{1, 32}" in p.message]
        assert found.node in ("q_bias", "h") and found.root_kind == "initializer", found  # the weight


def test_an_open_input_dim_that_shape_arithmetic_sizes_outside_a_matmul_is_a_warning(tmp_path: Path) -> None:
    """The cache added to the queries instead: its heads meet the same 4 of the same reshape, in an Add. Outside a
    MatMul's batch dims an input dim forced to one size by shape arithmetic is what a length baked in at export
    does (positions sliced to the traced length: the corpus's fixed position lengths), so it stays a warning, in
    ONNX and in the IR; both runtimes fail the model with 2 heads."""
    path, xml = _cross_model(tmp_path, added=True)
    for model in (path, xml):
        assert _runs_cross(model, 8, 4, source=8) and not _runs_cross(model, 8, 2, source=8)
        report = check(str(model))
        assert not report.clean, report.render()
        assert any(p.severity == "warning" and "cross_key_1 in {1, 4}" in p.message for p in report.problems), (
            report.render()
        )
