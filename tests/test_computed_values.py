"""Shape arithmetic done in floating point (timm's "same" padding: ``Shape -> Gather -> Cast(float) -> Div ->
Ceil -> Mul -> Sub -> Max -> Cast(int64) -> Concat -> Pad``) is followed as exact values, against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from bcast.check import check
from bcast.graph.expr import Expr
from bcast.graph.ops.elementwise import Ratio, ratio


def _f(v: float) -> Any:
    return numpy_helper.from_array(np.array(v, np.float32))


def _same_pad_nodes(stride: int) -> list[Any]:
    """The right padding of x's last axis that makes a stride of ``stride`` cover it:
    ``max(ceil(W / s) * s - W, 0)``, computed in float as timm exports it."""
    n = helper.make_node
    return [
        n("Shape", ["x"], ["shape"], "shape"),
        n("Gather", ["shape", "three"], ["w"], "gather", axis=0),
        n("Cast", ["w"], ["wf"], "cast_f", to=TensorProto.FLOAT),
        n("Div", ["wf", "stride"], ["q"], "div"),
        n("Ceil", ["q"], ["qc"], "ceil"),
        n("Mul", ["qc", "stride"], ["full"], "mul"),
        n("Sub", ["full", "wf"], ["extra"], "sub"),
        n("Max", ["extra", "zero_f"], ["padf"], "max"),
        n("Cast", ["padf"], ["pad"], "cast_i", to=TensorProto.INT64),
        n("Unsqueeze", ["pad", "axis0"], ["pad1"], "unsqueeze"),
        n("Concat", ["zeros7", "pad1"], ["pads"], "concat", axis=0),
        n("Pad", ["x", "pads"], ["y"], "pad"),
    ]


def _model(stride: int, tail: list[Any], extra: dict[str, np.ndarray] | None = None) -> Any:
    consts = {
        "three": np.array(3, np.int64),
        "stride": np.array(float(stride), np.float32),
        "zero_f": np.array(0.0, np.float32),
        "axis0": np.array([0], np.int64),
        "zeros7": np.zeros(7, np.int64),
        **(extra or {}),
    }
    graph = helper.make_graph(
        _same_pad_nodes(stride) + tail,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info(tail[-1].output[0], TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _runs(m: Any, shape: tuple[int, ...]) -> bool:
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {"x": np.zeros(shape, np.float32)})
    except Exception:  # onnxruntime's Fail: the model does not run
        return False
    return True


def test_a_padding_that_clashes_at_odd_sizes_is_found() -> None:
    """Padded to a multiple of 2, the map meets the unpadded one: it works only where W is even."""
    m = _model(2, [helper.make_node("Add", ["y", "x"], ["out"], "add")])
    assert _runs(m, (1, 3, 4, 6)) and not _runs(m, (1, 3, 4, 7))
    got = check(m).problems
    assert [(p.node, p.severity) for p in got] == [("add", "warning")], [p.message for p in got]
    assert "W" in got[0].message


def test_a_padding_that_is_always_zero_is_clean() -> None:
    """With a stride of 1 the padding is 0 at every size: the padded map is the input's size."""
    m = _model(1, [helper.make_node("Add", ["y", "x"], ["out"], "add")])
    assert _runs(m, (1, 3, 4, 6)) and _runs(m, (1, 3, 4, 7))
    assert check(m).problems == []


def test_a_pad_keeps_the_axes_its_known_zeros_leave() -> None:
    """Where the padding is not known (a division by a size), the batch the Concat's zeros pad by 0 is still
    the input's, so a bias of 3 rows meeting it is a finding, as onnxruntime says at batch 2."""
    n = helper.make_node
    tail = [
        n("Gather", ["shape", "two"], ["h"], "gather_h", axis=0),
        n("Cast", ["h"], ["hf"], "cast_h", to=TensorProto.FLOAT),
        n("Div", ["wf", "hf"], ["ratio"], "div_h"),
        n("Cast", ["ratio"], ["r"], "cast_r", to=TensorProto.INT64),
        n("Unsqueeze", ["r", "axis0"], ["r1"], "unsqueeze_r"),
        n("Concat", ["zeros7", "r1"], ["pads2"], "concat_r", axis=0),
        n("Pad", ["x", "pads2"], ["z"], "pad_r"),
        n("Add", ["z", "bias"], ["out"], "add"),
    ]
    extra = {"two": np.array(2, np.int64), "bias": np.zeros((3, 1, 1, 1), np.float32)}
    m = _model(2, tail, extra)
    assert _runs(m, (3, 3, 4, 4)) and not _runs(m, (2, 3, 4, 4))
    got = check(m).problems
    assert [p.node for p in got] == ["add"], [p.message for p in got]
    assert "N" in got[0].message


def test_ratios_stay_exact_and_known_values_are_numbers() -> None:
    w = Expr.symbol("W")
    assert ratio(w * 4, 2) == Ratio(w * 2, 1)
    assert ratio(w * 3 + 3, 6) == Ratio(w + 1, 2)
    assert ratio(Expr.const(3), 2) == 1.5
    assert ratio(Expr.const(4), 2) == 2
