"""No dim is lost to the shape arithmetic exporters write: every tensor's shape is known in the inputs' dims.

A dim propagation cannot follow becomes a symbol of its own, on which no constraint is reported: a bug behind it
goes unseen. Each class below once lost its dims, in ONNX or in the IR OpenVINO converts it to, and so hid a real
bug. Each model is built with ``onnx.helper`` (or OpenVINO's opset API), converted to IR, and its twin with a
bug injected is proven by the runtimes: onnxruntime and OpenVINO run the clean one at every size tried and fail
the twin where the report says.

The classes:

* a "same" padding computed in floating point (timm's ``Conv2dSame``: ``Cast -> Div -> Ceil -> ... -> Clip ->
  Cast``), which OpenVINO writes as ``Multiply``, ``Ceiling``, ``Clamp`` (its upper bound the float's largest)
  and a ``Split`` of the pads into begins and ends;
* ``torch.chunk``'s split sizes, ``size // n + (size mod n > 0)``, by OpenVINO's ``Divide``, ``Mod`` and
  ``Greater`` into a ``VariadicSplit``;
* a ``OneHot`` that makes a ``Tile``'s repeats (a mixture of experts' routing);
* tf2onnx's strided slice, whose ends test ``end == 10**9 and step < 0`` (undecided and false) and whose masked
  ends are the sentinel ``10**9``;
* a table's side computed by a power (``int(16 ** 0.5)``, DINOv2's interpolated position encoding);
* a loop that counts (tf2onnx's ``tf.while_loop`` of a Keras RNN), whose trip count was taken for one the data
  decides, so its stacked steps met the sequence in a warning.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcast.check import check
from bcast.graph import propagate
from bcast.graph.expr import Expr, emax, emin
from bcast.graph.propagate import Result
from runtimes import runs as model_runs

onnx = pytest.importorskip("onnx", reason="the models are built with onnx.helper")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the ONNX models' oracle")
ov = pytest.importorskip("openvino", reason="OpenVINO converts the models and is the IRs' oracle", exc_type=ImportError)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F, I64 = TensorProto.FLOAT, TensorProto.INT64


# -- building, converting, running ---------------------------------------------------------------------------


def _model(path: Path, nodes: list[Any], inputs: dict[str, list[Any]], consts: dict[str, Any]) -> tuple[Path, Path]:
    """The float model of ``nodes`` from ``inputs`` to ``out``, with ``consts`` as initializers; saved at
    ``path`` and converted to an IR beside it."""
    graph = helper.make_graph(
        nodes,
        path.stem,
        [helper.make_tensor_value_info(n, F, dims) for n, dims in inputs.items()],
        [helper.make_tensor_value_info("out", F, None)],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items()],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return path, xml


def _feeds(inputs: dict[str, list[Any]], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {n: rng.standard_normal([sizes.get(d, d) for d in dims]).astype(np.float32) for n, dims in inputs.items()}


def _propagated(path: Path) -> Result:
    if path.suffix == ".xml":
        from bcast.openvino.graph_read import graph_of_ir, ir_fallback
        from bcast.openvino.ir_read import read_ir

        return propagate(graph_of_ir(read_ir(str(path))), fallback=ir_fallback)
    from bcast.onnx.graph_read import graph_of, onnx_fallback

    return propagate(graph_of(onnx.load(str(path))), fallback=onnx_fallback)


def _lost(path: Path, inputs: dict[str, list[Any]], sizes: dict[str, int]) -> list[str]:
    """The tensors whose shape holds a dim that is no expression of the inputs' dims (one propagation lost)."""
    result = _propagated(path)
    env: dict[str, int] = {}
    for name, dims in inputs.items():
        for d, given_dim in zip(result.values[name].shape or (), dims, strict=True):
            if d.value is None and not isinstance(given_dim, int):
                env[str(d)] = sizes[given_dim]
    lost = []
    for name, v in result.values.items():
        for d in v.shape or ():
            try:
                d.evaluate(env)
            except KeyError:
                lost.append(f"{name}: {d}")
    return lost


def _ort_shapes_agree(path: Path, inputs: dict[str, list[Any]], sizes: dict[str, int]) -> int:
    """Every tensor's propagated shape, evaluated at ``sizes``, is what onnxruntime computes; the dims compared."""
    model = onnx.load(str(path))
    exposed = copy.deepcopy(model)
    have = {o.name for o in exposed.graph.output}
    for node in exposed.graph.node:
        exposed.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in node.output if o not in have)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, _feeds(inputs, sizes)), strict=True))
    values = _propagated(path).values
    compared = 0
    for name, arr in got.items():
        shape = values[name].shape
        assert shape is not None and len(shape) == arr.ndim, (name, shape, arr.shape)
        assert [d.evaluate(sizes) for d in shape] == list(arr.shape), (name, [str(d) for d in shape], arr.shape)
        compared += arr.ndim
    return compared


# -- the models --------------------------------------------------------------------------------------------------


def _same_padding(directory: Path, bias_shape: tuple[int, ...]) -> tuple[Path, Path, dict[str, list[Any]]]:
    """timm's ``Conv2dSame``: a 3x3 convolution of stride 2 after a padding computed from the input's size in
    floating point, ``max((ceil(d / 2) - 1) * 2 + 3 - d, 0)`` split into a begin and an end; the output is
    ``[batch, 8, ceil(height / 2), ceil(width / 2)]``, and a bias of ``bias_shape`` is added to it."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"])]
    begins, ends = [], []
    for axis, name in ((2, "h"), (3, "w")):
        nodes += [
            helper.make_node("Gather", ["shape", f"axis{axis}"], [f"{name}"], axis=0),
            helper.make_node("Cast", [name], [f"{name}f"], to=F),
            helper.make_node("Div", [f"{name}f", "two"], [f"{name}q"]),
            helper.make_node("Ceil", [f"{name}q"], [f"{name}c"]),
            helper.make_node("Sub", [f"{name}c", "one"], [f"{name}c1"]),
            helper.make_node("Mul", [f"{name}c1", "two"], [f"{name}s"]),
            helper.make_node("Add", [f"{name}s", "three"], [f"{name}k"]),
            helper.make_node("Sub", [f"{name}k", f"{name}f"], [f"{name}t"]),
            helper.make_node("Clip", [f"{name}t", "zero"], [f"{name}p"]),
            helper.make_node("Div", [f"{name}p", "two"], [f"{name}ph"]),
            helper.make_node("Floor", [f"{name}ph"], [f"{name}b"]),
            helper.make_node("Sub", [f"{name}p", f"{name}b"], [f"{name}e"]),
            helper.make_node("Cast", [f"{name}b"], [f"{name}bi"], to=I64),
            helper.make_node("Cast", [f"{name}e"], [f"{name}ei"], to=I64),
            helper.make_node("Unsqueeze", [f"{name}bi", "axis0"], [f"{name}B"]),
            helper.make_node("Unsqueeze", [f"{name}ei", "axis0"], [f"{name}E"]),
        ]
        begins.append(f"{name}B")
        ends.append(f"{name}E")
    nodes += [
        helper.make_node("Concat", ["zeros2", *begins, "zeros2", *ends], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["padded"]),
        helper.make_node("Conv", ["padded", "weight"], ["y"], strides=[2, 2]),
        helper.make_node("Add", ["y", "bias"], ["out"]),
    ]
    consts = {
        "axis2": np.array(2, np.int64),
        "axis3": np.array(3, np.int64),
        "axis0": np.array([0], np.int64),
        "zeros2": np.zeros(2, np.int64),
        "zero": np.array(0, np.float32),
        "one": np.array(1, np.float32),
        "two": np.array(2, np.float32),
        "three": np.array(3, np.float32),
        "weight": np.full((8, 4, 3, 3), 0.1, np.float32),
        "bias": np.ones(bias_shape, np.float32),
    }
    inputs: dict[str, list[Any]] = {"x": ["batch", 4, "height", "width"]}
    tag = "x".join(map(str, bias_shape))
    return (*_model(directory / f"same_padding_{tag}.onnx", nodes, inputs, consts), inputs)


def _onehot_tile(directory: Path) -> tuple[Path, Path, dict[str, list[Any]]]:
    """A ``Tile`` whose repeats are a one-hot row (``OneHot([1], 3, [1, 2])`` is ``[1, 2, 1]``), its index read
    off a shape: ``[tokens, 1, 32]`` tiled to ``[tokens, 2, 32]``, added to ``y`` of ``[tokens, k, 32]``, which
    broadcasts for ``k`` of 1 or 2 only."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one_axis"], ["hot"], axis=0),
        helper.make_node("OneHot", ["hot", "depth", "values"], ["row"]),
        helper.make_node("Reshape", ["row", "three"], ["repeats"]),
        helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
        helper.make_node("Add", ["tiled", "y"], ["out"]),
    ]
    consts = {
        "one_axis": np.array([1], np.int64),
        "depth": np.array(3, np.int64),
        "values": np.array([1, 2], np.int64),
        "three": np.array([3], np.int64),
    }
    inputs: dict[str, list[Any]] = {"x": ["tokens", 1, 32], "y": ["tokens", "k", 32]}
    return (*_model(directory / "onehot_tile.onnx", nodes, inputs, consts), inputs)


def _strided_crop(directory: Path, crop: bool) -> tuple[Path, Path, dict[str, list[Any]]]:
    """A Keras U-Net's skip joined to its upsampled map, as tf2onnx writes ``x[:, :h, :w, :]``: the ends a
    ``Where`` of ``end == 10**9 and step < 0``, the masked ends ``10**9``; without the crop (``crop=False``)
    an odd size joins maps one row apart."""
    nodes = [
        helper.make_node("MaxPool", ["x"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Resize", ["pooled", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Shape", ["up"], ["up_shape"]),
        helper.make_node("Slice", ["up_shape", "two", "four"], ["hw"]),
        helper.make_node("Concat", ["zeros2", "hw"], ["ends_given"], axis=0),
        helper.make_node("Cast", ["ends_given"], ["ends_f"], to=F),
        helper.make_node("Max", ["ends_f", "end_mask"], ["ends_masked_f"]),
        helper.make_node("Cast", ["ends_masked_f"], ["ends_masked"], to=I64),
        helper.make_node("Equal", ["ends_masked", "max_const"], ["at_max"]),
        helper.make_node("Less", ["steps", "zero"], ["backwards"]),
        helper.make_node("And", ["at_max", "backwards"], ["flip"]),
        helper.make_node("Where", ["flip", "min_const", "ends_masked"], ["ends"]),
        helper.make_node("Slice", ["x", "zeros4", "ends", "axes", "steps"], ["cropped"]),
        helper.make_node("Concat", ["cropped" if crop else "x", "up"], ["out"], axis=1),
    ]
    consts = {
        "scales": np.array([1, 1, 2, 2], np.float32),
        "two": np.array([2], np.int64),
        "four": np.array([4], np.int64),
        "zeros2": np.zeros(2, np.int64),
        "zeros4": np.zeros(4, np.int64),
        "end_mask": np.array([1e9, 1e9, -1e9, -1e9], np.float32),
        "max_const": np.array(10**9, np.int64),
        "min_const": np.array(-(10**9), np.int64),
        "zero": np.array([0], np.int64),
        "steps": np.ones(4, np.int64),
        "axes": np.arange(4, dtype=np.int64),
    }
    inputs: dict[str, list[Any]] = {"x": ["batch", 8, "height", "width"]}
    return (*_model(directory / f"strided_crop_{crop}.onnx", nodes, inputs, consts), inputs)


def _square_grid(count: str, data: str, last: str, out: str) -> list[Any]:
    """``data`` reshaped to ``[1, s, s, last]``, ``s = int(count ** 0.5)`` (``half`` and ``axis0`` and ``one``
    among the constants): a square grid from a count of positions or patches."""
    return [
        helper.make_node("Pow", [count, "half"], ["side_f"]),
        helper.make_node("Cast", ["side_f"], ["side_i"], to=I64),
        helper.make_node("Unsqueeze", ["side_i", "axis0"], ["side"]),
        helper.make_node("Concat", ["one", "side", "side", last], ["grid_shape"], axis=0),
        helper.make_node("Reshape", [data, "grid_shape"], [out]),
    ]


def _table_side(directory: Path) -> tuple[Path, Path, dict[str, list[Any]]]:
    """A table of 16 positions laid out as a square, its side ``int(16 ** 0.5)`` (DINOv2's interpolated position
    encoding), added to ``x`` of ``[batch, 4, w, 32]``: it broadcasts for ``w`` of 1 or 4 only."""
    nodes = [*_square_grid("positions", "table", "width", "grid"), helper.make_node("Add", ["grid", "x"], ["out"])]
    consts = {
        "positions": np.array(16, np.float32),
        "half": np.array(0.5, np.float32),
        "axis0": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "width": np.array([32], np.int64),
        "table": np.ones((1, 16, 32), np.float32),
    }
    inputs: dict[str, list[Any]] = {"x": ["batch", 4, "w", 32]}
    return (*_model(directory / "table_side.onnx", nodes, inputs, consts), inputs)


def _counting_loop(directory: Path, extra: int, most: int | None = None) -> tuple[Path, dict[str, list[Any]]]:
    """A ``tf.while_loop`` over a sequence as tf2onnx writes it (a Keras RNN): ``Loop(M = T)`` whose body reads
    step ``counter`` of ``x [T, B, 4]`` and goes on while ``iteration < T`` and ``counter + 1 + extra < T``
    (compared as floats, ``counter`` carried from 0, ``T`` carried unchanged); the stacked steps are added to
    ``x``. With ``extra = 1`` the loop stops one step short, and the sum fails for every ``T`` past 2."""
    f = helper.make_tensor_value_info
    body_nodes = [
        helper.make_node("Add", ["counter", "one"], ["counter_next"]),
        helper.make_node("Add", ["counter_next", "extra"], ["ahead"]),
        helper.make_node("Cast", ["iteration"], ["iteration_f"], to=F),
        helper.make_node("Cast", ["length"], ["length_f"], to=F),
        helper.make_node("Cast", ["ahead"], ["ahead_f"], to=F),
        helper.make_node("Cast", ["length_carried"], ["length_carried_f"], to=F),
        helper.make_node("Less", ["iteration_f", "length_f"], ["below_max"]),
        helper.make_node("Less", ["ahead_f", "length_carried_f"], ["below_length"]),
        helper.make_node("And", ["below_max", "below_length"], ["going"]),
        helper.make_node("Gather", ["x", "counter"], ["step"], axis=0),
        helper.make_node("Identity", ["length_carried"], ["length_out"]),
    ]
    body = helper.make_graph(
        body_nodes,
        "body",
        [f("iteration", I64, []), f("cond", TensorProto.BOOL, []), f("counter", I64, []), f("length_carried", I64, [])],
        [
            f("going", TensorProto.BOOL, []),
            f("counter_next", I64, []),
            f("length_carried", I64, []),
            f("step", F, None),
        ],
        [
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array(extra, np.int64), "extra"),
        ],
    )
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["length"], axis=0),
        helper.make_node("Cast", ["length"], ["length_f0"], to=F),
        helper.make_node("Less", ["zero_f", "length_f0"], ["first_ok"]),
        helper.make_node("And", ["first_ok", "first_ok"], ["first"]),
        helper.make_node(
            "Loop",
            ["length" if most is None else "most", "first", "zero", "length"],
            ["counted", "length_after", "steps"],
            body=body,
        ),
        helper.make_node("Add", ["steps", "x"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "counting",
        [f("x", F, ["T", "B", 4])],
        [f("out", F, None)],
        [
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(0, np.float32), "zero_f"),
            numpy_helper.from_array(np.array(most or 0, np.int64), "most"),
        ],
    )
    path = directory / f"counting_{extra}_{most}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, {"x": ["T", "B", 4]}


# -- each class: nothing lost, the clean model clean, the bug found where the runtimes fail ----------------------

SAMPLES = [{"batch": 2, "height": 31, "width": 16}, {"batch": 1, "height": 16, "width": 15}]


def test_a_same_padding_computed_in_floating_point_keeps_its_dims(tmp_path: Path) -> None:
    path, xml, inputs = _same_padding(tmp_path, (1, 8, 1, 1))
    for sizes in SAMPLES:
        assert _ort_shapes_agree(path, inputs, sizes) >= 18
        assert model_runs(xml, _feeds(inputs, sizes))
    for model in (path, xml):
        assert _lost(model, inputs, SAMPLES[0]) == [], model.suffix
        report = check(str(model))
        assert report.clean and report.problems == [], report.render()


def test_a_bias_across_a_same_padded_width_is_found_in_the_ir_as_in_onnx(tmp_path: Path) -> None:
    """A bias of 8 on the width of a convolution's output, ``ceil(width / 2)``: it fits widths 15 and 16 only."""
    path, xml, inputs = _same_padding(tmp_path, (1, 1, 1, 8))
    for model in (path, xml):
        assert model_runs(model, _feeds(inputs, {"batch": 1, "height": 20, "width": 16}))
        assert not model_runs(model, _feeds(inputs, {"batch": 1, "height": 20, "width": 32}))
        report = check(str(model))
        assert not report.clean, (model.suffix, report.render())
        said = " ".join(p.message for p in report.problems)
        assert "ceil(" in said and ("{1, 8}" in said or "== 8" in said), said


#: models whose output broadcasts with an input's dim ``free`` for a few of its sizes only, computed through one
#: class of shape arithmetic: (the model, the other sizes, the sizes of ``free`` that run, one that fails)
LATENT: dict[str, tuple[Any, dict[str, int], str, tuple[int, ...], int]] = {
    "one-hot-repeats": (_onehot_tile, {"tokens": 5}, "k", (1, 2), 3),
    "table-side-by-a-power": (_table_side, {"batch": 2}, "w", (1, 4), 5),
}


@pytest.mark.parametrize("case", LATENT)
def test_a_dim_made_by_shape_arithmetic_is_checked_where_it_meets_an_input(case: str, tmp_path: Path) -> None:
    build, sizes, free, runs, fails = LATENT[case]
    path, xml, inputs = build(tmp_path)
    for model in (path, xml):
        assert _lost(model, inputs, {**sizes, free: runs[-1]}) == [], model.suffix
        for size in (*runs, fails):
            assert model_runs(model, _feeds(inputs, {**sizes, free: size})) is (size != fails), (model.suffix, size)
        report = check(str(model))
        # the IR links the two inputs' unnamed batches too
        assert "{" + ", ".join(map(str, runs)) + "}" in [c.allowed for c in report.constraints], report.render()
        assert [(p.op, p.kind) for p in report.problems] == [("Add", "constraint")], report.render()
    assert _ort_shapes_agree(path, inputs, {**sizes, free: runs[-1]}) >= 10


@pytest.mark.parametrize("crop", [True, False], ids=["cropped", "not-cropped"])
def test_a_strided_crop_as_tf2onnx_writes_it(crop: bool, tmp_path: Path) -> None:
    path, xml, inputs = _strided_crop(tmp_path, crop)
    odd, even = {"batch": 2, "height": 31, "width": 33}, {"batch": 1, "height": 32, "width": 32}
    for model in (path, xml):
        assert _lost(model, inputs, odd) == [], model.suffix
        assert model_runs(model, _feeds(inputs, even))
        assert model_runs(model, _feeds(inputs, odd)) is crop
        report = check(str(model))
        # the 2x2 pooling's least input, 2 rows and columns: a note, which OpenVINO's pooling has (it refuses a
        # window past its input, where onnxruntime gives no windows)
        notes = {p.kind for p in report.problems if p.severity == "info"}
        assert notes == ({"window-size"} if model == xml else set()), report.render()
        if crop:  # the sentinel 10**9 on the batch axis is its end, not a billion rows
            assert report.clean and notes == {p.kind for p in report.problems}, report.render()
        else:
            assert {p.kind for p in report.problems} - notes == {"concat-mismatch"}, report.render()
    if crop:
        assert _ort_shapes_agree(path, inputs, odd) >= 26


@pytest.mark.parametrize(
    ("extra", "most"), [(0, None), (1, None), (0, 2**31 - 1)], ids=["counts-to-the-end", "stops-one-short", "no-bound"]
)
def test_a_counting_loop_runs_as_many_times_as_it_counts(extra: int, most: int | None, tmp_path: Path) -> None:
    """A Keras RNN's loop as tf2onnx writes it: its stacked steps are ``T`` long, not a length the data decides,
    so adding them to the sequence is no problem; a loop that stops one step short is found. A trip count of
    ``INT_MAX`` bounds nothing: the condition ends the loop."""
    path, inputs = _counting_loop(tmp_path, extra, most)
    for t in (1, 2, 5):
        assert model_runs(path, _feeds(inputs, {"T": t, "B": 3})) is (extra == 0 or t <= 2), t
    report = check(str(path))
    for t in (1, 2, 5):  # the stacked steps are as long as onnxruntime makes them, at every length
        assert _ort_shapes_agree(path, inputs, {"T": t, "B": 3}) >= 6 if extra == 0 or t <= 2 else True
    if extra == 0:
        assert report.clean and report.problems == [], report.render()
    else:
        (problem,) = report.problems
        assert (problem.op, problem.severity) == ("Add", "warning"), report.render()
        assert "[max(1, T - 1),B,4], [T,B,4]" in problem.message, problem.message  # one step short, at least one


def test_a_condition_of_ands_nested_a_hundred_deep_is_looked_at_once_each(tmp_path: Path) -> None:
    """A crafted first condition, ``And(c, c)`` of ``And(d, d)`` ... 100 deep (2**100 paths to its tests): the
    count of the loop's trips gives up after a bounded look, in no time, and the loop's steps are a length the
    data decides."""
    from bcast.graph.ops import control

    path, _ = _counting_loop(tmp_path, 0)
    model = onnx.load(str(path))
    nodes = list(model.graph.node)
    loop = next(n for n in nodes if n.op_type == "Loop")
    last = "first"
    extra = []
    for k in range(100):
        extra.append(helper.make_node("And", [last, last], [f"deep_{k}"]))
        last = f"deep_{k}"
    loop.input[1] = last
    at = nodes.index(loop)
    del model.graph.node[:]
    model.graph.node.extend([*nodes[:at], *extra, *nodes[at:]])
    onnx.save(model, path)
    looked: list[str] = []
    through = control._through_casts

    def counting(name: str, made: Any, ctx: Any = None) -> str:
        looked.append(name)
        return through(name, made, ctx)

    control._through_casts = counting  # type: ignore[assignment]
    try:
        report = check(str(path))
    finally:
        control._through_casts = through  # type: ignore[assignment]
    assert len(looked) < 2_000, len(looked)
    assert [p.op for p in report.problems] == ["Add"], report.render()  # the data decides the steps' length


def test_chunk_sizes_by_divide_and_mod_keep_the_split_dims(tmp_path: Path) -> None:
    """``torch.chunk(x, 3, -1)`` as OpenVINO's torch frontend writes it: the sizes ``d // 3 + (d mod 3 > 0)``
    twice, then the rest, by a ``VariadicSplit``."""
    op = pytest.importorskip("openvino.opset13", reason="the IR is built by OpenVINO's opset API")
    x = op.parameter([-1, 4, -1, 24], np.float32, name="x")
    last = op.gather(op.shape_of(x, "i32"), op.constant(np.int64(-1)), op.constant(np.int64(0)))
    three = op.constant(np.int32(3))
    rest = op.convert(op.greater(op.mod(last, three), op.constant(np.int32(0))), "i32")
    size = op.add(op.divide(last, three), rest)
    lengths = op.concat([op.broadcast(size, op.constant(np.array([2], np.int64))), op.constant([-1], np.int32)], 0)
    parts = op.variadic_split(x, op.constant(np.int64(-1)), lengths)
    out = op.add(op.multiply(parts.output(0), parts.output(1)), parts.output(2))
    xml = tmp_path / "chunk.xml"
    ov.save_model(ov.Model([out], [x], "chunk"), str(xml), compress_to_fp16=False)
    inputs: dict[str, list[Any]] = {"x": ["batch", 4, "seq", 24]}
    assert _lost(xml, inputs, {"batch": 2, "seq": 5}) == []
    result = _propagated(xml)
    (shape,) = [v.shape for name, v in result.values.items() if name.startswith(out.get_friendly_name() + ":")]
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU")
    for batch, seq in ((2, 5), (1, 9)):
        got = compiled(_feeds(inputs, {"batch": batch, "seq": seq}))[0].shape
        assert [d.evaluate({"x_0": batch, "x_2": seq}) for d in shape or ()] == list(got)
    assert check(str(xml)).problems == []


# -- the algebra under them ------------------------------------------------------------------------------------

S, T, U = Expr.symbol("S"), Expr.symbol("T"), Expr.symbol("U")


@pytest.mark.parametrize(
    ("got", "want"),
    [
        (emax([S, emax([S, T])]), "max(S, T)"),  # a max already among the arguments' own
        (emax([emax([S, T]), emax([S, emax([S, T])])]), "max(S, T)"),
        (emin([S, emin([S, T])]), "min(S, T)"),
        (emax([S, emin([S, T])]), "S"),
        (emax([U, emax([S, T])]), "max(U, max(S, T))"),  # nothing to drop: kept as it is built, not flattened
        ((32 * emax([S, T]) * U) // (8 * emax([S, T])), "4*U"),
        (emin([64, emin([6, S])]), "min(6, S)"),  # a constant the inner min is never above
        (emax([2, emax([S, 5])]), "max(5, S)"),
    ],
    ids=["max-in-max", "nested-twice", "min-in-min", "min-in-max", "kept", "quotient", "min-constant", "max-constant"],
)
def test_an_extreme_already_among_the_arguments_is_dropped(got: Expr, want: str) -> None:
    assert str(got) == want


@pytest.mark.parametrize(
    ("expr", "lo"),
    [
        (S // T, 0),  # a size's quotient by a size is a size, wherever it is defined
        (S % T, 0),
        ((S * T + 3) // (T + 1), 0),
        ((S - 3) // T, None),  # a dividend that may be negative
        (S // (T - 4), None),  # a divisor that may be
    ],
    ids=["quotient", "remainder", "sums", "negative-dividend", "negative-divisor"],
)
def test_a_quotient_by_a_size_is_bounded_below(expr: Expr, lo: int | None) -> None:
    assert expr.lo == lo
    if lo is not None:  # -1 is no size: never equal to one (tf2onnx's and OpenVINO's ``x == -1`` tests)
        assert expr.eq(-1).name == "NO"


@pytest.mark.parametrize(
    ("base", "exponent", "want"),
    [
        (S, Expr.const(2), "S*S"),  # an area from its side
        (Expr.const(3), Expr.const(4), "81"),
        (S, Expr.const(9), None),  # a power no shape arithmetic takes
        (Expr.const(3), Expr.const(-1), None),  # not an integer
        (16.0, 0.5, 4.0),  # a whole number in single and double precision alike
        (24.0, 0.5, 24.0**0.5),  # a fraction far from any integer: every cast of it truncates to 4
        (10001.0, 0.5, None),  # 100.005: too near an integer for two libraries' last bits to agree after a cast
        (2.0**40, 1.0, None),  # past what a float32 holds of every integer
    ],
    ids=["square-of-a-size", "integers", "high-power", "negative-exponent", "root", "irrational", "near", "large"],
)
def test_a_power_is_evaluated_where_it_is_exact(base: Any, exponent: Any, want: Any) -> None:
    from bcast.graph.model import Value
    from bcast.graph.ops.elementwise import evaluate

    dtype = "int64" if isinstance(base, Expr) else "float32"
    got = evaluate("Pow", [Value(dtype, (), (base,)), Value(dtype, (), (exponent,))], ())
    if want is None:
        assert got is None
    else:
        assert got is not None and (got[0] == want if isinstance(want, float) else str(got[0]) == want), got


#: atoms with their values, as Python computes them
_ATOMS = st.sampled_from(
    [
        (S, lambda v: v["S"]),
        (T, lambda v: v["T"]),
        (U, lambda v: v["U"]),
        (S + 1, lambda v: v["S"] + 1),
        (2 * T, lambda v: 2 * v["T"]),
    ]
)


def _extremes(depth: int) -> st.SearchStrategy[tuple[Expr, Any]]:
    """Nested ``max`` and ``min`` of the atoms, each with its value computed by Python's ``max`` and ``min``."""
    if depth == 0:
        return _ATOMS
    inner = st.lists(_extremes(depth - 1), min_size=1, max_size=3)
    return st.one_of(
        _ATOMS,
        inner.map(lambda xs: (emax([e for e, _ in xs]), lambda v, fs=[f for _, f in xs]: max(f(v) for f in fs))),
        inner.map(lambda xs: (emin([e for e, _ in xs]), lambda v, fs=[f for _, f in xs]: min(f(v) for f in fs))),
    )


@settings(max_examples=200, deadline=None)
@given(built=_extremes(3), s=st.integers(0, 9), t=st.integers(0, 9), u=st.integers(0, 9))
def test_nested_extremes_evaluate_as_integers_do(built: tuple[Expr, Any], s: int, t: int, u: int) -> None:
    """Whatever ``max`` and ``min`` drop as they are built, the value is Python's on every size."""
    expr, value = built
    env = {"S": s, "T": t, "U": u}
    assert expr.evaluate(env) == value(env), str(expr)


@settings(max_examples=200, deadline=None)
@given(s=st.integers(0, 50), t=st.integers(1, 50), k=st.integers(1, 5))
def test_quotients_of_sizes_are_never_below_their_bound(s: int, t: int, k: int) -> None:
    for expr in (S // T, S % T, (k * S + T) // (T + k), (S * T) % (T + k)):
        lo = expr.lo
        assert lo is not None and expr.evaluate({"S": s, "T": t}) >= lo


def test_a_grid_side_from_a_count_that_is_no_square_is_found_at_that_count(tmp_path: Path) -> None:
    """DPT's reassembly: ``s = int(S ** 0.5)`` patches a side, ``x [1, S, 8]`` reshaped to ``[1, s, s, 8]``; at a
    count that is no square (24 patches of a 64x96 image) the reshape fails. Given the count, the power is
    evaluated as the runtime computes it and the reshape's error found; onnxruntime agrees at every count."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one_s"], ["count"], axis=0),
        helper.make_node("Cast", ["count"], ["count_f"], to=TensorProto.FLOAT),
        *_square_grid("count_f", "x", "eight", "out"),
    ]
    consts = {
        "one_s": np.array(1, np.int64),
        "half": np.array(0.5, np.float32),
        "axis0": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "eight": np.array([8], np.int64),
    }
    path, xml = _model(tmp_path / "grid.onnx", nodes, {"x": [1, "S", 8]}, consts)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    compiled = ov.Core().compile_model(str(xml), "CPU")
    for count in (4, 16, 24, 25, 35, 36, 37):
        feeds = {"x": np.ones((1, count, 8), np.float32)}
        for model, dims in ((path, {"S": count}), (xml, {"x_1": count})):
            try:
                session.run(None, feeds) if model is path else compiled(feeds)
                runs = True
            except Exception:
                runs = False
            errors = [p.kind for p in check(str(model), dims=dims).problems if p.severity == "error"]
            assert runs == (errors == []) and errors in ([], ["reshape-count"]), (model.suffix, count, errors)
    # of any count: the side is isqrt(S), and the reshape holds only where S is a square, which both say
    for model, count in ((path, "S"), (xml, "x_1")):
        [p] = check(str(model)).problems
        assert (p.kind, p.severity) == ("reshape-count", "warning"), p.message
        assert f"isqrt({count})*isqrt({count})" in p.message, p.message


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 15, 16, 17, 24, 25, 10**6 - 1, 10**6])
def test_an_integer_square_root_is_python_s(n: int) -> None:
    e = (S * T).isqrt()
    assert str(e) == "isqrt(S*T)" and e.lo == 0
    assert e.evaluate({"S": n, "T": 1}) == math.isqrt(n) == Expr.const(n).isqrt().value
    assert e.bind({"S": n, "T": 1}).value == math.isqrt(n)
    assert str(e.bind({"T": 1})) == "isqrt(S)"
    with pytest.raises(ValueError, match="square root of a negative"):
        Expr.const(-1).isqrt()


def test_a_root_of_a_size_is_cast_and_never_computed_with() -> None:
    """``S ** 0.5`` of a size held in a float is a root: cast to an integer it is ``isqrt(S)``, to a float of
    every size it stays a root, to bool it is unknown (0 only where ``S`` is); any arithmetic on it is unknown,
    never a wrong number."""
    from bcast.graph.model import Value
    from bcast.graph.ops.elementwise import Ratio, _cast_data, evaluate

    root = evaluate("Pow", [Value("float32", (), (Ratio(S, 1),)), Value("float32", (), (0.5,))], ())
    assert root is not None and str(root[0]) == "sqrt(S)"
    for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"):
        assert evaluate(op, [Value("float32", (), root), Value("float32", (), (2.0,))], ()) is None, op
    assert [str(e) for e in _cast_data(root, "int64") or ()] == ["isqrt(S)"]
    assert _cast_data(root, "float32") == root and _cast_data(root, "float16") is None
    assert _cast_data(root, "bool") is None
    negative = evaluate("Pow", [Value("float32", (), (Ratio(S - 7, 1),)), Value("float32", (), (0.5,))], ())
    assert negative is None  # S - 7 may be negative: its root may be NaN
