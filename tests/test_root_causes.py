"""Root causes name the node or constant a person would edit, and both branches where either could be it.

The corpus's bugs each list the nodes and constants the injection edited; the root named (or the second
root, where two are equally suspect) must be one of them for nearly every bug. Then one small model per
rule, each bug proven by onnxruntime failing at the sizes given: a two-branch stride clash names both
convolutions; a mask unsqueezed on the wrong axes names the Unsqueeze; a mask reshaped to a target whose
dims are swapped names the Concat that built the target, not the input it read them from; a stray
Transpose before a position Add names the Transpose; a Slice that keeps one element too many is named
before the convolution behind it; a Concat along the wrong axis is named, not the Slice whose size it kept;
the size that an op's other nodes never hold in that slot is the wrong one; and a length traced as a number
(positions made by a Range of a constant, a causal mask made of them, expanded or not) names that number; and a
batch traced into a Reshape's target names that Reshape, not the view that reads its dims back in place.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the models are ONNX", exc_type=ImportError)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bcast.check import Report, check  # noqa: E402
from bcast.check.html import render_html  # noqa: E402

CORPUS = Path(__file__).parent / "data" / "corpus"
MANIFEST = CORPUS / "manifest.json"
F = TensorProto.FLOAT


def _runs(model: Any, feeds: dict[str, np.ndarray]) -> bool:
    ort = pytest.importorskip("onnxruntime", reason="the bugs are proven by onnxruntime", exc_type=ImportError)
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
    except Exception:  # onnxruntime's Fail / InvalidArgument / RuntimeException: the model does not run
        return False
    return True


def _model(nodes: list[Any], inputs: list[Any], inits: dict[str, np.ndarray], opset: int = 17) -> Any:
    out = helper.make_tensor_value_info(nodes[-1].output[0], F, None)
    tensors = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    graph = helper.make_graph(nodes, "g", inputs, [out], tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _w(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _roots(report: Report) -> list[tuple[str | None, str | None]]:
    """(root, second root) of each error and warning."""
    return [(p.root, p.also) for p in report.problems if p.severity in ("error", "warning")]


# -- the corpus ------------------------------------------------------------------------------------------


def _bugged() -> list[dict[str, Any]]:
    if not MANIFEST.is_file():
        return []
    with open(MANIFEST) as f:
        return [e for e in json.load(f)["models"] if e["bug"]]


@pytest.mark.skipif(not _bugged(), reason="the kept corpus is not here")
def test_the_root_named_is_what_the_bug_edited_in_the_corpus() -> None:
    """Over the corpus's bugs, the root (or the second root) of an error or warning is one of the nodes or
    constants the injection edited, for at least 95% of them."""
    bugged = _bugged()
    right, wrong = 0, []
    for e in bugged:
        report = check(os.fspath(CORPUS / e["model"]))
        named = {n for root, also in _roots(report) for n in (root, also) if n}
        named |= {p.node for p in report.problems if p.severity in ("error", "warning") and not p.root}
        if named & set(e["edited"]):
            right += 1
        else:
            wrong.append((e["model"], sorted(named)[:4], e["edited"][:4]))
    assert right >= 0.95 * len(bugged), (right, len(bugged), wrong)


# -- two branches: either could be the edit ---------------------------------------------------------------


@pytest.mark.parametrize("bug", ["main stride 2", "shortcut stride 1"])
def test_a_residual_add_whose_branches_strides_differ_names_both_convolutions(bug: str) -> None:
    """x -> conv_a (stride 2) -> conv_b -> Add <- conv_s <- x. With conv_b at stride 2 (it should be 1), or
    conv_s at stride 1 (it should be 2, a convolution that leaves the size as it came), the branches' spatial
    dims clash; the shapes cannot tell which branch is wrong, so both convolutions are named."""
    main, short = (2, 2) if bug == "main stride 2" else (1, 1)
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="relu"),
        helper.make_node("Conv", ["ar", "wb"], ["b"], name="conv_b", strides=[main, main], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "ws"], ["s"], name="conv_s", strides=[short, short]),
        helper.make_node("Add", ["b", "s"], ["y"], name="add"),
    ]
    inputs = [helper.make_tensor_value_info("x", F, ["N", 4, "H", "W"])]
    model = _model(nodes, inputs, {"wa": _w(8, 4, 3, 3), "wb": _w(8, 8, 3, 3), "ws": _w(8, 4, 1, 1)})
    assert not _runs(model, {"x": _w(2, 4, 8, 8)})
    report = check(model)
    roots = _roots(report)
    assert roots and all({r, a} == {"conv_b", "conv_s"} for r, a in roots), roots
    # the report says both: the text, the JSON, and the nodes each problem names
    first = next(p for p in report.problems if p.root)
    other = "conv_s" if first.root == "conv_b" else "conv_b"
    assert f"root cause: the node {first.root} (Conv) (or the node {other} (Conv))" in report.render()
    got = report.to_dict()
    assert got["problems"][0]["also"] == {"node": other, "op": "Conv", "kind": "node"}
    assert got["root_causes"][0]["also"] == {"node": other, "op": "Conv", "kind": "node"}
    assert {"conv_b", "conv_s", "add"} <= set(first.nodes)
    assert f"[root cause: {first.root} (or {other})]" in report.problem_lines()[0]
    assert f"or the root cause is <code>{other}</code>" in render_html(report)


# -- a dim at the wrong axis: the node that put it there ----------------------------------------------------


def _attention(mask_axes: list[int]) -> Any:
    """Scores [B, 2, S, S] from two heads of 4, plus a mask [B, S] unsqueezed on ``mask_axes``."""
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("Reshape", ["q", "heads"], ["q4"], name="q_heads"),
        helper.make_node("Transpose", ["q4"], ["qh"], name="q_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        helper.make_node("Reshape", ["k", "heads"], ["k4"], name="k_heads"),
        helper.make_node("Transpose", ["k4"], ["kt"], name="k_transpose", perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qh", "kt"], ["scores"], name="scores"),
        helper.make_node("Unsqueeze", ["mask", "mask_axes"], ["m4"], name="mask_unsqueeze"),
        helper.make_node("Add", ["scores", "m4"], ["y"], name="add_mask"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", F, ["B", "S", 8]),
        helper.make_tensor_value_info("mask", F, ["B", "S"]),
    ]
    inits = {"wq": _w(8, 8), "wk": _w(8, 8), "heads": _i64(0, 0, 2, 4), "mask_axes": _i64(*mask_axes)}
    return _model(nodes, inputs, inits)


@pytest.mark.parametrize("axes", [[2, 3], [0, 1]])
def test_a_mask_unsqueezed_on_the_wrong_axes_names_the_unsqueeze_not_a_weight(axes: list[int]) -> None:
    """The mask [B, S] unsqueezed on axes [2, 3] is [B, S, 1, 1] (its S meets the scores' 2 heads), on axes
    [0, 1] it is [1, 1, B, S] (its B meets the scores' S): the Unsqueeze put a dim there, not a weight, nor
    the inputs whose sizes they are."""
    feeds = {"x": _w(2, 3, 8), "mask": _w(2, 3)}
    assert _runs(_attention([1, 2]), feeds)  # the right axes run
    model = _attention(axes)
    assert not _runs(model, feeds)
    roots = _roots(check(model))
    assert roots and roots[0][0] == "mask_unsqueeze", roots
    assert not {n for r in roots for n in r} & {"wq", "wk", "x", "mask"}, roots


def _swapped_mask(order: tuple[str, str]) -> Any:
    """Embeddings [B, S, 8] times a mask [B, S] reshaped to a target built from input_ids' shape in ``order``,
    with an axis of 1 after it."""
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["x"], name="embed"),
        helper.make_node("Shape", ["input_ids"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["b"], name="batch_of", axis=0),
        helper.make_node("Gather", ["shape", "one"], ["s"], name="length_of", axis=0),
        helper.make_node("Unsqueeze", ["b", "axis0"], ["b1"], name="batch_1d"),
        helper.make_node("Unsqueeze", ["s", "axis0"], ["s1"], name="length_1d"),
        helper.make_node("Concat", list(order), ["target"], name="mask_target", axis=0),
        helper.make_node("Reshape", ["mask", "target"], ["m2"], name="mask_reshape"),
        helper.make_node("Unsqueeze", ["m2", "axis2"], ["m3"], name="mask_unsqueeze"),
        helper.make_node("Mul", ["x", "m3"], ["y"], name="apply_mask"),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "S"]),
        helper.make_tensor_value_info("mask", F, ["B", "S"]),
    ]
    inits = {
        "emb": _w(16, 8),
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "axis0": _i64(0),
        "axis2": _i64(2),
    }
    return _model(nodes, inputs, inits)


def test_a_mask_reshaped_with_its_dims_swapped_names_the_concat_not_the_input() -> None:
    """The target Concat(S, B) where (B, S) belongs: [B, S, 8] * [S, B, 1]."""
    feeds = {"input_ids": np.zeros((2, 3), np.int64), "mask": _w(2, 3)}
    assert _runs(_swapped_mask(("b1", "s1")), feeds)
    model = _swapped_mask(("s1", "b1"))
    assert not _runs(model, feeds)
    roots = _roots(check(model))
    assert roots and roots[0][0] == "mask_target", roots
    assert not {n for r in roots for n in r} & {"input_ids", "mask", "emb"}, roots


def test_a_stray_transpose_before_a_position_add_names_the_transpose() -> None:
    """[B, 4, 8] transposed to [B, 8, 4] meets the position table [1, 4, 8]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("Transpose", ["h"], ["t"], name="stray_transpose", perm=[0, 2, 1]),
        helper.make_node("Add", ["t", "pos"], ["y"], name="add_pos"),
    ]
    inputs = [helper.make_tensor_value_info("x", F, ["B", 4, 8])]
    model = _model(nodes, inputs, {"w": _w(8, 8), "pos": _w(1, 4, 8)})
    assert not _runs(model, {"x": _w(2, 4, 8)})
    roots = _roots(check(model))
    assert roots and roots[0][0] == "stray_transpose", roots


# -- a size that a node left as it came, and a clash on more than one axis ----------------------------------


def test_a_slice_that_keeps_one_element_too_many_is_named_before_the_convolution() -> None:
    """A convolution padded to T + 1 whose Slice should drop the last step but ends at the end: the residual
    Add meets T + 1 against T. The Slice decides that length (and left it as it came); the convolution
    behind it made it."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="pos_conv", pads=[2, 2]),
        helper.make_node("Slice", ["c", "starts", "ends", "axes"], ["cut"], name="drop_last"),
        helper.make_node("Add", ["x", "cut"], ["y"], name="add_pos"),
    ]
    inputs = [helper.make_tensor_value_info("x", F, ["B", 8, "T"])]
    inits = {"w": _w(8, 8, 4), "starts": _i64(0), "ends": _i64(2**62), "axes": _i64(2)}  # ends should be -1
    model = _model(nodes, inputs, inits)
    assert not _runs(model, {"x": _w(2, 8, 6)})
    roots = _roots(check(model))
    assert roots and roots[0][0] == "drop_last", roots


def test_a_concat_along_the_wrong_axis_is_named_not_the_slice_whose_size_it_kept() -> None:
    """rotate_half concatenated along the length (axis 1) instead of the features: [B, 2S, 4] meets the
    rotary table [1, S, 8]. The clash is reported at the features (4 against 8), where the Concat kept the
    Slice's size; it made the length twice what the table has, the nearer of the two."""
    nodes = [
        helper.make_node("Slice", ["x", "zero", "four", "two"], ["x1"], name="first_half"),
        helper.make_node("Slice", ["x", "four", "eight", "two"], ["x2"], name="second_half"),
        helper.make_node("Neg", ["x2"], ["n2"], name="negate"),
        helper.make_node("Concat", ["n2", "x1"], ["rot"], name="rotate_half", axis=1),  # axis 2 belongs
        helper.make_node("Mul", ["rot", "sin"], ["y"], name="apply_sin"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", F, ["B", "S", 8]),
        helper.make_tensor_value_info("sin", F, [1, "S", 8]),
    ]
    inits = {"zero": _i64(0), "four": _i64(4), "eight": _i64(8), "two": _i64(2)}
    model = _model(nodes, inputs, inits)
    assert not _runs(model, {"x": _w(2, 3, 8), "sin": _w(1, 3, 8)})
    roots = _roots(check(model))
    assert roots and roots[0][0] == "rotate_half", roots


# -- what the op's other nodes hold --------------------------------------------------------------------


def _layers(q_heads: tuple[int, ...]) -> Any:
    """Two attention layers of 2 heads of 8 over [B, S, 16]; the second one's query split by ``q_heads``."""
    nodes, inits = [], {"heads": _i64(0, 0, 2, 8), "q_heads": _i64(*q_heads)}
    x = "x"
    for i in range(2):
        q_target = "q_heads" if i == 1 else "heads"
        nodes += [
            helper.make_node("MatMul", [x, f"wq{i}"], [f"q{i}"], name=f"q_proj{i}"),
            helper.make_node("Reshape", [f"q{i}", q_target], [f"q4{i}"], name=f"q_split{i}"),
            helper.make_node("Transpose", [f"q4{i}"], [f"qh{i}"], name=f"q_transpose{i}", perm=[0, 2, 1, 3]),
            helper.make_node("MatMul", [x, f"wk{i}"], [f"k{i}"], name=f"k_proj{i}"),
            helper.make_node("Reshape", [f"k{i}", "heads"], [f"k4{i}"], name=f"k_split{i}"),
            helper.make_node("Transpose", [f"k4{i}"], [f"kt{i}"], name=f"k_transpose{i}", perm=[0, 2, 3, 1]),
            helper.make_node("MatMul", [f"qh{i}", f"kt{i}"], [f"s{i}"], name=f"scores{i}"),
            helper.make_node("Softmax", [f"s{i}"], [f"p{i}"], name=f"softmax{i}", axis=-1),
            helper.make_node("MatMul", [f"p{i}", f"qh{i}"], [f"o{i}"], name=f"context{i}"),
            helper.make_node("Transpose", [f"o{i}"], [f"ot{i}"], name=f"merge_transpose{i}", perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"ot{i}", "merge"], [f"h{i}"], name=f"merge{i}"),
        ]
        inits |= {f"wq{i}": _w(16, 16), f"wk{i}": _w(16, 16)}
        x = f"h{i}"
    inits["merge"] = _i64(0, 0, 16)
    inputs = [helper.make_tensor_value_info("x", F, ["B", "S", 16])]
    return _model(nodes, inputs, inits)


def test_the_size_an_ops_other_nodes_never_hold_there_is_the_wrong_one() -> None:
    """The second layer's query split as 1 head of 16 (16 is the model's width, everywhere): its Q [B, 1, S, 16]
    meets K^T [B, 2, 8, S]. The first layer's score MatMul holds 8 there: the query's split is named first."""
    feeds = {"x": _w(2, 3, 16)}
    assert _runs(_layers((0, 0, 2, 8)), feeds)
    model = _layers((0, 0, 1, 16))
    assert not _runs(model, feeds)
    roots = _roots(check(model))
    assert roots and roots[0][0] == "q_heads", roots


def test_an_ir_strided_slice_that_keeps_one_element_too_many_is_named_before_the_convolution(
    tmp_path: Path,
) -> None:
    """The same in an OpenVINO IR: a StridedSlice whose masks leave the length to its end (its end_mask on the
    time axis should be 0, with end -1), after a Convolution padded to T + 1."""
    ov = pytest.importorskip("openvino", reason="openvino writes and runs the IR", exc_type=ImportError)
    o1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing", exc_type=ImportError)

    def build(end_mask: list[int]) -> Path:
        x = o1.parameter(ov.PartialShape([-1, 8, -1]), np.float32, name="x")
        conv = o1.convolution(x, o1.constant(_w(8, 8, 4)), [1], [2], [2], [1])
        conv.set_friendly_name("pos_conv")
        cut = o1.strided_slice(conv, _i64(0, 0, 0), _i64(0, 0, -1), _i64(1, 1, 1), [1, 1, 0], end_mask)
        cut.set_friendly_name("drop_last")
        out = o1.add(x, cut)
        out.set_friendly_name("add_pos")
        path = tmp_path / f"m{end_mask[2]}.xml"
        ov.save_model(ov.Model([out.output(0)], [x], "m"), str(path), compress_to_fp16=False)
        return path

    def ov_runs(path: Path) -> bool:
        core = ov.Core()
        try:
            compiled = core.compile_model(core.read_model(str(path)), "CPU")
            compiled.create_infer_request().infer({"x": _w(2, 8, 6)})
        except Exception:  # OpenVINO's refusal is the proof
            return False
        return True

    assert ov_runs(build([1, 1, 0]))
    path = build([1, 1, 1])
    assert not ov_runs(path)
    roots = _roots(check(os.fspath(path)))
    assert roots and roots[0][0] == "drop_last", roots


# -- a KV cache: the key's past joined on the wrong axis, a mask unsqueezed against past + seq ---------------------


def _cache(concat_axis: int, mask_axes: list[int]) -> Any:
    """Scores ``q @ k^T`` with ``k = Concat(past_key, new_key)`` plus the mask ``[batch, past_seq + seq]``
    unsqueezed at ``mask_axes``: right, ``Concat`` on axis 2 and the mask at ``[1, 2]``."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["q"], name="q_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["past_key", "q"], ["k"], name="cat_past", axis=concat_axis),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Unsqueeze", ["mask", "axes"], ["mask4"], name="mask_4d"),
        helper.make_node("Add", ["scores", "mask4"], ["y"], name="add_mask"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", F, ["batch", "seq", 2, 4]),
        helper.make_tensor_value_info("past_key", F, ["batch", 2, "past_seq", 4]),
        helper.make_tensor_value_info("mask", F, ["batch", "past_seq + seq"]),
    ]
    return _model(nodes, inputs, {"axes": _i64(*mask_axes)})


def _cache_feeds(past: int, seq: int = 3) -> dict[str, np.ndarray]:
    return {
        "x": np.ones((2, seq, 2, 4), np.float32),
        "past_key": np.ones((2, 2, past, 4), np.float32),
        "mask": np.ones((2, past + seq), np.float32),
    }


def test_a_cache_joined_on_the_wrong_axis_names_the_concat() -> None:
    right, wrong = _cache(2, [1, 2]), _cache(3, [1, 2])
    assert _runs(right, _cache_feeds(5)) and check(right).problems == []
    assert not _runs(wrong, _cache_feeds(3, 3)) and not _runs(wrong, _cache_feeds(5, 3))
    report = check(wrong)
    assert report.problems and {root for root, _ in _roots(report)} == {"cat_past"}, report.render()
    assert "would join on axis 2" in report.problems[0].message


def test_a_mask_against_past_plus_seq_unsqueezed_wrong_names_the_unsqueeze_and_its_consequences_join_it() -> None:
    wrong = _cache(2, [1, 3])  # [batch, 1, past + seq, 1]: its length meets the queries' seq
    assert _runs(wrong, _cache_feeds(0)) and not _runs(wrong, _cache_feeds(5))  # only with an empty cache
    report = check(wrong)
    assert report.root_causes and report.root_causes[0].node == "mask_4d", report.render()
    assert all(root == "mask_4d" for root, _ in _roots(report)), report.render()
    assert any("holds only if past_seq is 0" in p.message for p in report.problems)


# -- a length traced as a number in place of a dynamic one ----------------------------------------------------


def _length(length: int, as_node: bool) -> tuple[list[Any], dict[str, np.ndarray]]:
    """Positions ``Range(0, length, 1)``, the length an initializer or a Constant node: what tracing writes in
    place of the input's sequence length."""
    inits = {"start": np.array(0, np.int64), "delta": np.array(1, np.int64)}
    nodes = []
    if as_node:
        value = numpy_helper.from_array(np.array(length, np.int64), "traced")
        nodes.append(helper.make_node("Constant", [], ["traced_length"], name="traced_length", value=value))
    else:
        inits["traced_length"] = np.array(length, np.int64)
    nodes.append(helper.make_node("Range", ["start", "traced_length", "delta"], ["positions"], name="positions"))
    return nodes, inits


def _position_add(length: int, hidden: int, as_node: bool) -> Any:
    """Token embeddings [B, S, hidden] plus the embeddings of the positions [1, length] (a table's rows)."""
    nodes, inits = _length(length, as_node)
    nodes += [
        helper.make_node("Gather", ["tokens", "input_ids"], ["x"], name="embed"),
        helper.make_node("Unsqueeze", ["positions", "axis0"], ["position_ids"], name="position_ids"),
        helper.make_node("Gather", ["table", "position_ids"], ["pos"], name="embed_positions"),
        helper.make_node("Add", ["x", "pos"], ["y"], name="add_positions"),
    ]
    inits |= {"tokens": _w(32, hidden), "table": _w(64, hidden), "axis0": _i64(0)}
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "S"])]
    return _model(nodes, inputs, inits)


@pytest.mark.parametrize(("length", "hidden", "as_node"), [(8, 16, False), (5, 12, True), (12, 8, False)])
def test_a_traced_position_length_names_the_number_not_the_unsqueeze(length: int, hidden: int, as_node: bool) -> None:
    """Positions made by a Range of a traced length meet the tokens' dynamic length: the model runs only at
    that length. The number is named, not the Unsqueeze that made the positions a row (it leaves the length
    where a broadcast lines it up), nor the input."""
    model = _position_add(length, hidden, as_node)
    ids = lambda s: {"input_ids": np.zeros((2, s), np.int64)}  # noqa: E731
    assert _runs(model, ids(length)) and not _runs(model, ids(length + 1)) and not _runs(model, ids(3))
    roots = _roots(check(model))
    assert roots and {root for root, _ in roots} == {"traced_length"}, roots


def _causal_scores(length: int, expand: bool) -> Any:
    """Scores [B, 2, S, S] plus a causal mask made from traced positions: ``positions[None, :] <= positions[:,
    None]``, as [1, 1, length, length]; or the mask as a column [1, 1, length, 1] expanded to the scores'
    [B, 1, S, S] by a target made from the input's shape."""
    nodes, inits = _length(length, as_node=False)
    nodes += [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("Reshape", ["q", "heads"], ["q4"], name="q_heads"),
        helper.make_node("Transpose", ["q4"], ["qh"], name="q_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q4"], ["kt"], name="k_transpose", perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qh", "kt"], ["scores"], name="scores"),
        helper.make_node("Unsqueeze", ["positions", "axis0"], ["row"], name="row"),
        helper.make_node("Unsqueeze", ["positions", "axis1"], ["column"], name="column"),
    ]
    if expand:
        nodes += [
            helper.make_node("Unsqueeze", ["column", "axis0"], ["c3"], name="column_3d"),
            helper.make_node("Unsqueeze", ["c3", "axis0"], ["c4"], name="column_4d"),
            helper.make_node("Cast", ["c4"], ["cf"], name="column_float", to=F),
            helper.make_node("Shape", ["x"], ["shape"], name="shape"),
            helper.make_node("Slice", ["shape", "zero", "one", "zero"], ["b"], name="batch_of"),
            helper.make_node("Slice", ["shape", "one", "two", "zero"], ["s"], name="length_of"),
            helper.make_node("Concat", ["b", "one", "s", "s"], ["target"], name="mask_target", axis=0),
            helper.make_node("Expand", ["cf", "target"], ["mask"], name="expand_mask"),
        ]
    else:
        nodes += [
            helper.make_node("LessOrEqual", ["row", "column"], ["causal"], name="causal"),
            helper.make_node("Cast", ["causal"], ["cf"], name="causal_float", to=F),
            helper.make_node("Unsqueeze", ["cf", "axes01"], ["mask"], name="mask_4d"),
        ]
    nodes.append(helper.make_node("Add", ["scores", "mask"], ["y"], name="add_mask"))
    inits |= {
        "wq": _w(8, 8),
        "heads": _i64(0, 0, 2, 4),
        "axis0": _i64(0),
        "axis1": _i64(1),
        "axes01": _i64(0, 1),
        "zero": _i64(0),
        "one": _i64(1),
        "two": _i64(2),
    }
    inputs = [helper.make_tensor_value_info("x", F, ["B", "S", 8])]
    return _model(nodes, inputs, inits)


@pytest.mark.parametrize("expand", [False, True])
def test_a_causal_mask_of_traced_positions_names_the_number_not_the_unsqueezes(expand: bool) -> None:
    """The causal mask compares the positions as a row with themselves as a column: the Unsqueeze that makes
    the column puts an axis of 1 after the length, as it should. The mask runs only at the traced length; the
    number is named, not an Unsqueeze, nor the target the mask is expanded to."""
    model = _causal_scores(6, expand)
    x = lambda s: {"x": _w(2, s, 8)}  # noqa: E731
    assert _runs(model, x(6)) and not _runs(model, x(4))
    roots = _roots(check(model))
    assert roots and {root for root, _ in roots} == {"traced_length"}, roots


def _folded_batch(batch: int, sliced: bool) -> Any:
    """Heads merged by a Reshape to a target traced with the batch it saw, ``[batch, -1, 8]``, then a projection
    viewed back to its input's leading dims (GPT-2's ``x.view(x.size()[:-1] + (8,))``: each dim read off its
    shape by a Gather, or the shape sliced), added to the residual [B, S, 8]."""
    nodes = [
        helper.make_node("Reshape", ["x", "folded"], ["h"], name="merge_heads"),
        helper.make_node("Shape", ["h"], ["shape"], name="shape"),
    ]
    if sliced:
        nodes += [
            helper.make_node("Slice", ["shape", "zero", "minus_one", "zero"], ["lead"], name="leading_dims"),
            helper.make_node("Concat", ["lead", "width"], ["target"], name="view_target", axis=0),
        ]
    else:
        nodes += [
            helper.make_node("Gather", ["shape", "zero_scalar"], ["d0"], name="dim0", axis=0),
            helper.make_node("Gather", ["shape", "one_scalar"], ["d1"], name="dim1", axis=0),
            helper.make_node("Unsqueeze", ["d0", "zero"], ["u0"], name="dim0_1d"),
            helper.make_node("Unsqueeze", ["d1", "zero"], ["u1"], name="dim1_1d"),
            helper.make_node("Concat", ["u0", "u1", "width"], ["target"], name="view_target", axis=0),
        ]
    nodes += [
        helper.make_node("Reshape", ["h", "rows"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "w"], ["proj"], name="project"),
        helper.make_node("Reshape", ["proj", "target"], ["out"], name="view_back"),
        helper.make_node("Add", ["out", "x"], ["y"], name="residual"),
    ]
    inits = {
        "folded": _i64(batch, -1, 8),
        "zero": _i64(0),
        "minus_one": _i64(-1),
        "width": _i64(8),
        "zero_scalar": np.array(0, np.int64),
        "one_scalar": np.array(1, np.int64),
        "rows": _i64(-1, 8),
        "w": _w(8, 8),
    }
    inputs = [helper.make_tensor_value_info("x", F, ["B", "S", 8])]
    return _model(nodes, inputs, inits)


@pytest.mark.parametrize("sliced", [False, True])
def test_a_batch_traced_into_a_reshape_names_it_not_the_view_that_reads_it_back(sliced: bool) -> None:
    """A target that reproduces a tensor's dims in place (each read off the shape at its own axis) does not make
    them: the Reshape whose target holds the traced batch does. The view's Concat is named only where it moved a
    dim (the swapped mask above)."""
    model = _folded_batch(1, sliced)
    x = lambda b: {"x": _w(b, 3, 8)}  # noqa: E731
    assert _runs(model, x(1)) and not _runs(model, x(2))
    roots = _roots(check(model))
    assert roots and {root for root, _ in roots} <= {"merge_heads", "folded"}, roots


def _rotary_layers(broken: int, layers: int = 4) -> Any:
    """``layers`` attention layers over [B, S, 32], each splitting its queries and keys by its own target and
    multiplying them by one rotary table [1, 1, S, 8] that all share; layer ``broken`` splits 2 heads of 16."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Slice", ["shape", "one", "two", "zero"], ["length"], name="length_of"),
        helper.make_node("Slice", ["table", "zero", "length", "zero"], ["cut"], name="rope_cut"),
        helper.make_node("Cos", ["cut"], ["cos"], name="rope_cos"),
        helper.make_node("Unsqueeze", ["cos", "axes01"], ["rope"], name="rope"),
    ]
    inits: dict[str, np.ndarray] = {
        "table": _w(64, 8),
        "zero": _i64(0),
        "one": _i64(1),
        "two": _i64(2),
        "axes01": _i64(0, 1),
    }
    for i in range(layers):
        for part in ("q", "k"):
            target = f"{part}_target{i}"
            inits[target] = _i64(0, 0, 2, 16) if i == broken else _i64(0, 0, 4, 8)
            inits[f"w{part}{i}"] = _w(32, 32)
            nodes += [
                helper.make_node("MatMul", ["x", f"w{part}{i}"], [f"{part}{i}"], name=f"{part}_proj{i}"),
                helper.make_node("Reshape", [f"{part}{i}", target], [f"{part}4_{i}"], name=f"{part}_split{i}"),
                helper.make_node(
                    "Transpose", [f"{part}4_{i}"], [f"{part}h{i}"], name=f"{part}_heads{i}", perm=[0, 2, 1, 3]
                ),
                helper.make_node("Mul", [f"{part}h{i}", "rope"], [f"{part}r{i}"], name=f"{part}_rotate{i}"),
            ]
        nodes.append(helper.make_node("Add", [f"qr{i}", f"kr{i}"], [f"s{i}"], name=f"mix{i}"))
    nodes.append(helper.make_node("Sum", [f"s{i}" for i in range(layers)], ["y"], name="sum"))
    inputs = [helper.make_tensor_value_info("x", F, ["B", "S", 32])]
    return _model(nodes, inputs, inits)


def test_a_table_every_layer_shares_is_not_the_root_of_the_one_layer_that_breaks_it() -> None:
    """Layer 1 splits its queries and keys as 2 heads of 16; the rotary table holds 8 at that axis, as every
    other layer's split does. The table meets the broken layer at two nodes, each query and key at one: the
    table's two findings do not make it the root; the broken split's targets are named."""
    feeds = {"x": _w(2, 3, 32)}
    assert _runs(_rotary_layers(broken=-1), feeds)
    model = _rotary_layers(broken=1)
    assert not _runs(model, feeds)
    roots = _roots(check(model))
    named = {n for r in roots for n in r if n}
    assert roots and named <= {"q_target1", "k_target1", "q_split1", "k_split1"}, roots


def _rotate_half_layers(cut: int, broken: int = 2, layers: int = 4) -> Any:
    """``layers`` rotary layers over [B, S, 8]: ``rotate_half`` as ``Concat(-x[..., 4:], x[..., :4])``, times the
    table [1, S, 8]; in layer ``broken`` the first half is cut to ``cut`` (a Slice off by one: 5 rows and 4)."""
    n = helper.make_node
    nodes, inits = [], {"zero": _i64(0), "four": _i64(4), "eight": _i64(8), "axis2": _i64(2), "cut": _i64(cut)}
    x = "x"
    for i in range(layers):
        end = "cut" if i == broken else "four"
        nodes += [
            n("MatMul", [x, f"w{i}"], [f"h{i}"], name=f"proj{i}"),
            n("Slice", [f"h{i}", "zero", end, "axis2"], [f"a{i}"], name=f"first_half{i}"),
            n("Slice", [f"h{i}", "four", "eight", "axis2"], [f"b{i}"], name=f"second_half{i}"),
            n("Neg", [f"b{i}"], [f"nb{i}"], name=f"negate{i}"),
            n("Concat", [f"nb{i}", f"a{i}"], [f"r{i}"], name=f"rotate_half{i}", axis=-1),
            n("Mul", [f"r{i}", "sin"], [f"s{i}"], name=f"apply_sin{i}"),
            n("Add", [f"h{i}", f"s{i}"], [f"o{i}"], name=f"rotated{i}"),
        ]
        inits[f"w{i}"] = _w(8, 8)
        x = f"o{i}"
    inputs = [
        helper.make_tensor_value_info("x", F, ["B", "S", 8]),
        helper.make_tensor_value_info("sin", F, [1, "S", 8]),
    ]
    return _model(nodes, inputs, inits)


def test_a_half_cut_one_row_long_names_its_slice_not_the_concat_that_joins_the_halves() -> None:
    """Layer 2's first half is cut to 5 rows: the halves join to 9 against the table's 8. Of the two halves
    (5 and 4), the model holds 4 at every other layer: the Slice that cut 5 is named, not the Concat."""
    feeds = {"x": _w(2, 3, 8), "sin": _w(1, 3, 8)}
    assert _runs(_rotate_half_layers(4), feeds)
    model = _rotate_half_layers(5)
    assert not _runs(model, feeds)
    roots = _roots(check(model))
    assert roots and roots[0][0] == "first_half2", roots
