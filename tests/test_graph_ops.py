"""The shape functions of :mod:`bcast.graph.ops.nn`, ``indexing`` and ``control``, with ONNX as the oracle.

Each static case is a one-node (or few-node) ONNX model run in onnxruntime on random inputs:
bcast's propagated output shapes must equal what the runtime returns, with no error finding (every
op here has an onnxruntime CPU kernel; ONNX's own node test cases, whose expected outputs come from
its reference implementation, are checked too). Symbolic cases check the expression a dim gets
(``floor((H - 1)/2) + 1``, not a bare unknown); error cases check that a wrong model is a finding
at the right node that names the right origin; the window arithmetic of Conv, ConvTranspose and the
pools, and Resize's scales, are drawn at random by hypothesis against onnxruntime.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx", reason='the oracle is ONNX (pip install "bcast[onnx]")')
ort = pytest.importorskip("onnxruntime", reason='the oracle is onnxruntime (pip install "bcast[onnx]")')

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bcast.graph import Finding, Origin, Result, propagate  # noqa: E402
from bcast.graph.ops import SHAPES  # noqa: E402
from bcast.graph.ops.nn import window_size  # noqa: E402
from bcast.onnx.graph_read import graph_of, onnx_fallback  # noqa: E402

RNG = np.random.default_rng(0)
MS = "com.microsoft"


# -- building and running one-node models ----------------------------------------------------------


class Const:
    """An input given as an initializer (its value is what the shape depends on: K, pads, scales)."""

    def __init__(self, value: Any, dtype: Any = None) -> None:
        self.value = np.asarray(value, dtype=dtype)


def c(*shape: int) -> Const:
    """A float initializer of ``shape`` (a weight)."""
    return Const(RNG.standard_normal(shape).astype(np.float32))


def i64(*values: Any) -> Const:
    return Const(values[0] if len(values) == 1 else list(values), np.int64)


def u8(*shape: int) -> Const:
    """A uint8 initializer of ``shape`` (quantized data or weights)."""
    return Const(RNG.integers(0, 255, shape, dtype=np.uint8))


def i32(*shape: int) -> Const:
    """An int32 initializer of ``shape`` holding ids 1 (a token, a segment, a mask)."""
    return Const(np.ones(shape, np.int32))


def u8s() -> Const:
    """A uint8 zero point."""
    return Const(np.uint8(128))


def f32s(x: float) -> Const:
    """A float scale."""
    return Const(np.float32(x))


Input = tuple[Any, ...] | Const | None


def one_node(
    op: str,
    ins: Sequence[Input],
    attrs: dict[str, Any] | None = None,
    *,
    n_out: int = 1,
    opset: int = 21,
    domain: str = "",
) -> tuple[Any, dict[str, np.ndarray]]:
    """A model of one node named ``n``: a tuple is a random float graph input of that shape (strings are
    symbolic dims), a :class:`Const` an initializer, ``None`` an absent input."""
    inputs, inits, names = [], [], []
    feeds: dict[str, np.ndarray] = {}
    for k, a in enumerate(ins):
        if a is None:
            names.append("")
            continue
        name = f"in{k}"
        names.append(name)
        if isinstance(a, Const):
            inits.append(numpy_helper.from_array(a.value, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(a)))
            if all(isinstance(d, int) for d in a):
                feeds[name] = RNG.standard_normal(a).astype(np.float32)
    outs = [f"out{k}" for k in range(n_out)]
    node = helper.make_node(op, names, outs, name="n", domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name=o) for o in outs], inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=10), feeds


def run(model: Any, feeds: dict[str, np.ndarray]) -> list[Any]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def bcast_of(model: Any) -> Result:
    return propagate(graph_of(model), fallback=onnx_fallback, debug=True)


def errors(result: Result) -> list[Finding]:
    return [f for f in result.findings if f.severity == "error"]


def dims(result: Result, name: str = "out0") -> list[str]:
    v = result.values[name]
    assert v.shape is not None, f"{name}: unknown rank"
    return [str(d) for d in v.shape]


def check_static(model: Any, feeds: dict[str, np.ndarray], dynamic: bool = False, refusal: bool = False) -> None:
    """bcast's shape of every output equals the runtime's (``dynamic``: a data-dependent dim may be a symbol;
    ``refusal``: the runtime may refuse the model, and then bcast must report an error too)."""
    result = bcast_of(model)
    try:
        got = run(model, feeds)
    except Exception as e:
        if not refusal:
            raise
        refused = str(e)
    else:
        refused = ""
    if refused:
        assert errors(result), f"the runtime refuses the model ({refused}), bcast finds nothing"
        return
    assert not errors(result), [f.message for f in errors(result)]
    for out, real in zip(model.graph.output, got, strict=False):
        want = np.asarray(real).shape
        v = result.values[out.name]
        assert v.shape is not None, f"{out.name}: unknown rank, the runtime gives {want}"
        assert len(v.shape) == len(want), (out.name, [str(d) for d in v.shape], want)
        for d, w in zip(v.shape, want, strict=True):
            if d.value is None and dynamic:
                continue
            assert d.value == w, (out.name, [str(d) for d in v.shape], want)


# -- static cases against the runtime ---------------------------------------------------------------

X = (2, 3, 7, 9)
CASES: list[Any] = [
    # Conv
    pytest.param("Conv", [X, c(4, 3, 3, 3)], {}, {}, id="conv"),
    pytest.param("Conv", [X, c(4, 3, 3, 3), c(4)], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, {}, id="conv-s2-p1"),
    pytest.param("Conv", [X, c(4, 3, 3, 2)], {"dilations": [2, 3], "pads": [0, 1, 2, 0]}, {}, id="conv-dilated"),
    pytest.param("Conv", [X, c(6, 1, 3, 3)], {"group": 3, "strides": [1, 3]}, {}, id="conv-depthwise"),
    pytest.param("Conv", [X, c(4, 3, 4, 4)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, {}, id="conv-same-upper"),
    pytest.param("Conv", [X, c(4, 3, 4, 3)], {"auto_pad": "SAME_LOWER", "strides": [3, 2]}, {}, id="conv-same-lower"),
    pytest.param("Conv", [X, c(4, 3, 3, 3)], {"auto_pad": "VALID", "strides": [2, 2]}, {}, id="conv-valid"),
    pytest.param("Conv", [(2, 3, 11), c(5, 3, 4)], {"strides": [3], "kernel_shape": [4]}, {}, id="conv1d"),
    pytest.param("Conv", [(1, 2, 5, 6, 7), c(3, 2, 2, 3, 1)], {"pads": [1, 0, 0, 0, 1, 0]}, {}, id="conv3d"),
    pytest.param("Conv", [(0, 3, 7, 9), c(4, 3, 3, 3)], {}, {}, id="conv-zero-batch"),
    # ConvTranspose
    pytest.param("ConvTranspose", [X, c(3, 4, 3, 3)], {}, {}, id="convT"),
    pytest.param(
        "ConvTranspose",
        [X, c(3, 2, 3, 3), c(2)],
        {"strides": [2, 3], "output_padding": [1, 2], "group": 1},
        {},
        id="convT-outpad",
    ),
    pytest.param("ConvTranspose", [X, c(3, 2, 4, 4)], {"strides": [2, 2], "pads": [1, 1, 1, 1]}, {}, id="convT-pads"),
    pytest.param(
        "ConvTranspose", [X, c(3, 2, 3, 3)], {"strides": [2, 2], "output_shape": [15, 20]}, {}, id="convT-output-shape"
    ),
    pytest.param(
        "ConvTranspose",
        [X, c(3, 2, 5, 1)],
        {"strides": [2, 3], "auto_pad": "SAME_UPPER"},
        {},
        id="convT-same-small-kernel",
    ),
    pytest.param(
        "ConvTranspose",
        [X, c(3, 2, 3, 3)],
        {"strides": [2, 2], "auto_pad": "SAME_LOWER", "dilations": [2, 1]},
        {},
        id="convT-same-lower",
    ),
    pytest.param("ConvTranspose", [(2, 4, 5), c(4, 3, 3)], {"group": 2, "strides": [2]}, {}, id="convT-group"),
    # pools
    pytest.param("MaxPool", [X], {"kernel_shape": [3, 3]}, {"n_out": 2}, id="maxpool-indices"),
    pytest.param("MaxPool", [X], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, {}, id="maxpool-ceil"),
    pytest.param(
        "MaxPool",
        [(1, 1, 5)],
        {"kernel_shape": [2], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
        {},
        id="maxpool-ceil-dropped-window",
    ),
    pytest.param(
        "MaxPool", [X], {"kernel_shape": [3, 2], "dilations": [2, 2], "pads": [1, 0, 1, 1]}, {}, id="maxpool-dilated"
    ),
    pytest.param(
        "MaxPool", [X], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, {}, id="maxpool-same"
    ),
    pytest.param(
        "AveragePool",
        [X],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
        {},
        id="avgpool-ceil",
    ),
    pytest.param("AveragePool", [(0, 2, 6, 6)], {"kernel_shape": [2, 2], "strides": [2, 2]}, {}, id="avgpool-zero"),
    pytest.param("LpPool", [X], {"kernel_shape": [2, 3], "strides": [1, 2], "p": 2}, {}, id="lppool"),
    pytest.param("GlobalAveragePool", [X], {}, {}, id="global-avg"),
    pytest.param("GlobalMaxPool", [(2, 3, 4)], {}, {}, id="global-max"),
    pytest.param("GlobalLpPool", [(2, 3, 4, 5, 6)], {"p": 3}, {}, id="global-lp"),
    # normalizations
    pytest.param("BatchNormalization", [X, c(3), c(3), c(3), Const(np.ones(3, np.float32))], {}, {}, id="bn"),
    pytest.param(
        "BatchNormalization",
        [(0, 3, 4), c(3), c(3), c(3), Const(np.ones(3, np.float32))],
        {"training_mode": 1},
        {"n_out": 3, "opset": 15},
        id="bn-training-zero-batch",
    ),
    pytest.param("InstanceNormalization", [X, c(3), c(3)], {}, {}, id="instance-norm"),
    pytest.param("GroupNormalization", [(2, 6, 5), c(6), c(6)], {"num_groups": 3}, {}, id="group-norm-21"),
    pytest.param("GroupNormalization", [(2, 6, 5), c(3), c(3)], {"num_groups": 3}, {"opset": 18}, id="group-norm-18"),
    pytest.param("LpNormalization", [X], {"axis": 2, "p": 1}, {}, id="lp-norm"),
    pytest.param("LRN", [X], {"size": 3}, {}, id="lrn"),
    # Resize and Upsample
    pytest.param("Resize", [X, None, Const(np.array([1, 1, 2, 3], np.float32))], {}, {}, id="resize-scales"),
    pytest.param(
        "Resize",
        [X, None, Const(np.array([1, 1, 0.5, 1.7], np.float32))],
        {"mode": "linear"},
        {},
        id="resize-fractional",
    ),
    pytest.param("Resize", [X, None, None, i64([2, 3, 4, 20])], {}, {}, id="resize-sizes"),
    pytest.param(
        "Resize",
        [X, Const(np.array([], np.float32)), Const(np.array([], np.float32)), i64([2, 3, 3, 3])],
        {},
        {"opset": 11},
        id="resize-11-empty-scales",
    ),
    pytest.param("Resize", [X, Const(np.array([1, 1, 3.3, 0.6], np.float32))], {}, {"opset": 10}, id="resize-10"),
    pytest.param("Resize", [X, None, Const(np.array([2.5, 0.5], np.float32))], {"axes": [3, 2]}, {}, id="resize-axes"),
    pytest.param(
        "Resize",
        [X, None, None, i64([4, 4])],
        {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
        {},
        id="resize-not-larger",
    ),
    pytest.param(
        "Resize",
        [X, None, None, i64([4, 4])],
        {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"},
        {},
        id="resize-not-smaller",
    ),
    pytest.param(
        "Resize", [(0, 3, 4, 4), None, Const(np.array([1, 1, 2, 2], np.float32))], {}, {}, id="resize-zero-batch"
    ),
    pytest.param("Upsample", [X, Const(np.array([1, 1, 2, 1.5], np.float32))], {}, {"opset": 9}, id="upsample-9"),
    pytest.param("Upsample", [X], {"scales": [1.0, 1.0, 2.0, 3.0]}, {"opset": 7}, id="upsample-7"),
    # Pad
    pytest.param("Pad", [X, i64([0, 0, 1, 2, 0, 0, 3, 0])], {}, {}, id="pad"),
    pytest.param("Pad", [X, i64([0, 1, -2, 0, 0, 0, 0, -3])], {}, {}, id="pad-negative"),
    pytest.param("Pad", [X, i64([0, 0, 2, 2, 0, 0, 2, 2])], {"mode": "reflect"}, {}, id="pad-reflect"),
    pytest.param("Pad", [X, i64([1, 0, 0, 0, 0, 0, 0, 5])], {"mode": "edge"}, {}, id="pad-edge"),
    pytest.param("Pad", [X, i64([1, 2, 3, 4]), None, i64([1, -1])], {}, {}, id="pad-axes"),
    pytest.param("Pad", [X], {"pads": [0, 0, 1, 1, 0, 0, 1, 1]}, {"opset": 10}, id="pad-10"),
    # DepthToSpace, SpaceToDepth
    pytest.param("DepthToSpace", [(2, 12, 3, 4)], {"blocksize": 2}, {}, id="depth-to-space"),
    pytest.param("DepthToSpace", [(2, 18, 3, 4)], {"blocksize": 3, "mode": "CRD"}, {}, id="depth-to-space-crd"),
    pytest.param("SpaceToDepth", [(2, 3, 6, 4)], {"blocksize": 2}, {}, id="space-to-depth"),
    # Einsum
    pytest.param("Einsum", [(2, 3), (3, 4)], {"equation": "ij,jk->ik"}, {}, id="einsum-matmul"),
    pytest.param("Einsum", [(2, 3), (3, 4)], {"equation": "ij,jk"}, {}, id="einsum-implicit"),
    pytest.param("Einsum", [(5, 2, 3), (5, 3, 4)], {"equation": "bij,bjk->bik"}, {}, id="einsum-batch"),
    pytest.param("Einsum", [(5, 1, 2, 3), (1, 4, 3, 4)], {"equation": "...ij,...jk->...ik"}, {}, id="einsum-ellipsis"),
    pytest.param("Einsum", [(4, 4)], {"equation": "ii->i"}, {}, id="einsum-diagonal"),
    pytest.param("Einsum", [(2, 3, 4)], {"equation": "ijk->kji"}, {}, id="einsum-transpose"),
    pytest.param("Einsum", [(2, 3), (4,)], {"equation": "ij,k->ijk"}, {}, id="einsum-outer"),
    pytest.param("Einsum", [(2, 3, 4)], {"equation": "i...->..."}, {}, id="einsum-sum-ellipsis"),
    pytest.param("Einsum", [(1, 3), (2, 3)], {"equation": "ij,ij->ij"}, {}, id="einsum-letter-of-1"),
    pytest.param("Einsum", [(2, 0), (0, 4)], {"equation": "ij,jk->ik"}, {}, id="einsum-zero"),
    # indexing
    pytest.param("TopK", [(3, 5), i64([2])], {"axis": 1}, {"n_out": 2}, id="topk"),
    pytest.param("TopK", [(3, 5), i64([0])], {}, {"n_out": 2}, id="topk-zero"),
    pytest.param("OneHot", [i64([[0, 2], [1, 1]]), i64(4), Const(np.array([0, 1], np.float32))], {}, {}, id="onehot"),
    pytest.param(
        "OneHot",
        [i64([0, 2, 1]), Const(np.array(5.0, np.float32)), Const(np.array([0, 1], np.float32))],
        {"axis": 0},
        {},
        id="onehot-axis0",
    ),
    pytest.param("GatherND", [(2, 3, 4), i64([[0, 1], [1, 2]])], {}, {}, id="gather-nd"),
    pytest.param("GatherND", [(2, 3, 4), i64([[1], [0]])], {"batch_dims": 1}, {}, id="gather-nd-batch"),
    pytest.param("GatherElements", [(3, 4), i64([[0, 1], [2, 0], [1, 1]])], {"axis": 0}, {}, id="gather-elements"),
    pytest.param("ScatterND", [(4, 5), i64([[1], [3]]), (2, 5)], {}, {}, id="scatter-nd"),
    pytest.param("ScatterElements", [(3, 4), i64([[0, 1], [2, 0]]), (2, 2)], {"axis": 1}, {}, id="scatter-elements"),
    pytest.param("Scatter", [(3, 4), i64([[0, 1]]), (1, 2)], {}, {"opset": 10}, id="scatter-10"),
    pytest.param("Compress", [(3, 4), Const(np.array([True, False, True]))], {"axis": 0}, {}, id="compress-axis"),
    pytest.param("Compress", [(3, 4), Const(np.array([True, False, True, True, False]))], {}, {}, id="compress-flat"),
    pytest.param("ReverseSequence", [(5, 3, 2), i64([1, 5, 3])], {}, {}, id="reverse-sequence"),
    pytest.param("CumSum", [(3, 4), i64(1)], {"reverse": 1}, {}, id="cumsum"),
    pytest.param("Trilu", [(2, 4, 5), i64(1)], {"upper": 0}, {}, id="trilu"),
    # images
    pytest.param("GridSample", [(2, 3, 4, 5), (2, 6, 7, 2)], {}, {}, id="grid-sample"),
    pytest.param(
        "RoiAlign",
        [X, Const(np.array([[0, 0, 3, 3], [1, 1, 4, 5], [0, 0, 2, 2]], np.float32)), i64([0, 1, 1])],
        {"output_height": 2, "output_width": 3},
        {},
        id="roi-align",
    ),
    pytest.param("Col2Im", [(1, 4, 16), i64([4, 5]), i64([1, 2])], {}, {"opset": 18}, id="col2im"),
    pytest.param(
        "Col2Im",
        [(2, 6, 6), i64([5, 5]), i64([3, 2])],
        {"strides": [2, 2], "pads": [1, 0, 0, 1]},
        {"opset": 18},
        id="col2im-strided",
    ),
    # quantization
    pytest.param("QuantizeLinear", [X, Const(np.float32(0.1)), Const(np.uint8(3))], {}, {}, id="quantize"),
    pytest.param(
        "QuantizeLinear",
        [X, Const(np.full(3, 0.1, np.float32)), Const(np.zeros(3, np.int8))],
        {},
        {},
        id="quantize-per-axis",
    ),
    pytest.param(
        "QuantizeLinear",
        [(2, 6), Const(np.full((2, 2), 0.1, np.float32))],
        {"axis": 1, "block_size": 3},
        {},
        id="quantize-blocked",
    ),
    pytest.param(
        "DequantizeLinear",
        [Const(np.zeros((2, 4, 3), np.int8)), Const(np.full(4, 0.5, np.float32))],
        {"axis": 1},
        {},
        id="dequantize-per-axis",
    ),
    pytest.param("DynamicQuantizeLinear", [(2, 3)], {}, {"n_out": 3}, id="dynamic-quantize"),
    # attention
    pytest.param(
        "Attention", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], {}, {"n_out": 4, "opset": 23}, id="attention-4d"
    ),
    pytest.param(
        "Attention",
        [(2, 4, 24), (2, 5, 12), (2, 5, 12), (4, 9), (2, 2, 4, 6), (2, 2, 4, 6)],
        {"q_num_heads": 4, "kv_num_heads": 2},
        {"n_out": 4, "opset": 23},
        id="attention-3d-past-mask",
    ),
    pytest.param(
        "Attention", [(2, 3, 16), c(16, 48), c(48)], {"num_heads": 4}, {"n_out": 2, "domain": MS}, id="ms-attention"
    ),
    pytest.param(
        "Attention",
        [(2, 3, 16), c(16, 40), c(40)],
        {"num_heads": 4, "qkv_hidden_sizes": [16, 16, 8]},
        {"n_out": 1, "domain": MS},
        id="ms-attention-qkv-sizes",
    ),
    pytest.param(
        "MultiHeadAttention",
        [(2, 3, 16), (2, 5, 16), (2, 5, 8)],
        {"num_heads": 4},
        {"n_out": 3, "domain": MS},
        id="mha",
    ),
    pytest.param(
        "MultiHeadAttention",
        [(2, 3, 16), (2, 5, 16), (2, 5, 16), c(48), None, None, (2, 4, 2, 4), (2, 4, 2, 4)],
        {"num_heads": 4},
        {"n_out": 3, "domain": MS},
        id="mha-past",
    ),
    # quantized operators (the QOperator format and onnxruntime's fused ones): the float op's shapes
    pytest.param(
        "QLinearConv",
        [
            u8(1, 3, 9, 9),
            f32s(0.1),
            u8s(),
            u8(4, 3, 3, 3),
            f32s(0.1),
            u8s(),
            f32s(0.2),
            u8s(),
            Const(np.zeros(4, np.int32)),
        ],
        {"pads": [1, 1, 1, 1], "strides": [2, 2]},
        {},
        id="qlinear-conv",
    ),
    pytest.param("ConvInteger", [u8(1, 3, 8, 8), u8(4, 3, 3, 3)], {}, {}, id="conv-integer"),
    pytest.param(
        "QLinearMatMul",
        [u8(2, 3, 4), f32s(0.1), u8s(), u8(4, 5), f32s(0.1), u8s(), f32s(0.2), u8s()],
        {},
        {},
        id="qlinear-matmul",
    ),
    pytest.param(
        "QLinearAdd",
        [u8(2, 3, 4), f32s(0.1), u8s(), u8(3, 1), f32s(0.1), u8s(), f32s(0.2), u8s()],
        {},
        {"domain": MS},
        id="qlinear-add",
    ),
    pytest.param(
        "QLinearMul",
        [u8(2, 1, 4), f32s(0.1), u8s(), u8(3, 1), f32s(0.1), u8s(), f32s(0.2), u8s()],
        {},
        {"domain": MS},
        id="qlinear-mul",
    ),
    pytest.param(
        "QGemm",
        [u8(3, 4), f32s(0.1), u8s(), u8(5, 4), f32s(0.1), u8s(), Const(np.zeros(5, np.int32)), f32s(0.2), u8s()],
        {"transB": 1},
        {"domain": MS},
        id="qgemm",
    ),
    pytest.param(
        "QLinearGlobalAveragePool",
        [u8(2, 3, 5, 6), f32s(0.1), u8s(), f32s(0.2), u8s()],
        {"channels_last": 0},
        {"domain": MS},
        id="qlinear-global-average-pool",
    ),
    pytest.param(
        "QLinearGlobalAveragePool",
        [u8(2, 5, 6, 3), f32s(0.1), u8s(), f32s(0.2), u8s()],
        {"channels_last": 1},
        {"domain": MS},
        id="qlinear-global-average-pool-channels-last",
    ),
    pytest.param(
        "MatMulIntegerToFloat", [u8(2, 3, 4), u8(4, 5), f32s(0.1), f32s(0.2)], {}, {"domain": MS}, id="matmul-int-float"
    ),
    pytest.param(
        "DynamicQuantizeMatMul",
        [(2, 3, 4), Const(np.ones((4, 5), np.int8)), f32s(0.1)],
        {},
        {"domain": MS},
        id="dynamic-quantize-matmul",
    ),
    pytest.param(
        "MatMulNBits",
        [(2, 3, 16), u8(8, 1, 8), c(8)],
        {"K": 16, "N": 8, "bits": 4, "block_size": 16},
        {"domain": MS},
        id="matmul-n-bits",
    ),
    # onnxruntime's fused embedding of BERT-like models (its transformer optimizer writes it)
    pytest.param(
        "EmbedLayerNormalization",
        [i32(2, 3), i32(2, 3), c(10, 8), c(16, 8), c(2, 8), c(8), c(8), i32(2, 3)],
        {},
        {"n_out": 2, "domain": MS},
        id="embed-layer-norm",
    ),
    # recurrent layers: every output against onnxruntime's, both layouts, both directions
    pytest.param("LSTM", [(5, 2, 3), c(1, 16, 3), c(1, 16, 4)], {"hidden_size": 4}, {"n_out": 3}, id="lstm"),
    pytest.param(
        "LSTM",
        [(5, 2, 3), c(2, 16, 3), c(2, 16, 4), c(2, 32), None, (2, 2, 4), (2, 2, 4), c(2, 12)],
        {"hidden_size": 4, "direction": "bidirectional"},
        {"n_out": 3},
        id="lstm-bidirectional-states-peepholes",
    ),
    pytest.param(
        "GRU",
        [(5, 2, 3), c(2, 12, 3), c(2, 12, 4), c(2, 24), None, (2, 2, 4)],
        {"hidden_size": 4, "direction": "bidirectional"},
        {"n_out": 2},
        id="gru-bidirectional",
    ),
    pytest.param(
        "RNN",
        [(5, 2, 3), c(1, 4, 3), c(1, 4, 4)],
        {"hidden_size": 4, "direction": "reverse"},
        {"n_out": 2},
        id="rnn-reverse",
    ),
    pytest.param(
        "FusedGemm",
        [(3, 16), c(8, 16), c(8)],
        {"transB": 1, "activation": "Relu"},
        {"domain": MS},
        id="fused-gemm",
    ),
    pytest.param(
        "RotaryEmbedding",
        [(2, 3, 16), i64([[0, 1, 2], [1, 2, 3]]), c(10, 2), c(10, 2)],
        {},
        {"domain": MS},
        id="ms-rotary",
    ),
    pytest.param(
        "RotaryEmbedding",
        [(2, 3, 4, 8), c(4, 4), c(4, 4), i64([[0, 1, 2, 3], [1, 2, 3, 0]])],
        {},
        {"opset": 23},
        id="rotary-23",
    ),
]


@pytest.mark.parametrize(("op", "ins", "attrs", "kw"), CASES)
def test_static_shapes_match_onnxruntime(op: str, ins: list[Input], attrs: dict[str, Any], kw: dict[str, Any]) -> None:
    model, feeds = one_node(op, ins, attrs, **kw)
    check_static(model, feeds)


DYNAMIC: list[Any] = [
    pytest.param("Unique", [(3, 5)], {"axis": 1}, {"n_out": 4}, id="unique-axis"),
    pytest.param("Unique", [(3, 5)], {}, {"n_out": 4}, id="unique-flat"),
    pytest.param("NonMaxSuppression", [(1, 6, 4), (1, 2, 6), i64([3])], {}, {}, id="nms"),
    pytest.param("Compress", [(3, 4), (3,)], {"axis": 0}, {}, id="compress-data"),
]


@pytest.mark.parametrize(("op", "ins", "attrs", "kw"), DYNAMIC)
def test_data_dependent_dims_are_symbols(op: str, ins: list[Input], attrs: dict[str, Any], kw: dict[str, Any]) -> None:
    model, feeds = one_node(op, ins, attrs, **kw)
    if op == "Compress":  # the condition is a float input here only to be unknown: feed it as bool
        model.graph.input[1].type.tensor_type.elem_type = TensorProto.BOOL
        feeds["in1"] = np.array([True, False, True])
    check_static(model, feeds, dynamic=True)
    result = bcast_of(model)
    free = [d for v in result.values.values() for d in (v.shape or ()) if d.value is None]
    assert free and all("n_" in str(d) for d in free)


def test_group_query_attention_matches_onnxruntime() -> None:
    ins = [
        (1, 3, 32),
        (1, 3, 16),
        (1, 3, 16),
        (1, 2, 4, 8),
        (1, 2, 4, 8),
        Const(np.array([6], np.int32)),
        Const(np.array(7, np.int32)),
    ]
    model, feeds = one_node("GroupQueryAttention", ins, {"num_heads": 4, "kv_num_heads": 2}, n_out=3, domain=MS)
    check_static(model, feeds)


def test_every_listed_op_has_a_shape_function() -> None:
    ops = [
        "Conv",
        "ConvTranspose",
        "MaxPool",
        "AveragePool",
        "LpPool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "GlobalLpPool",
        "BatchNormalization",
        "InstanceNormalization",
        "GroupNormalization",
        "LpNormalization",
        "LRN",
        "Resize",
        "Upsample",
        "Pad",
        "DepthToSpace",
        "SpaceToDepth",
        "Einsum",
        "TopK",
        "OneHot",
        "GatherND",
        "GatherElements",
        "ScatterND",
        "ScatterElements",
        "Scatter",
        "Compress",
        "Unique",
        "NonMaxSuppression",
        "ReverseSequence",
        "CumSum",
        "Trilu",
        "GridSample",
        "RoiAlign",
        "Col2Im",
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "Attention",
        "com.microsoft:Attention",
        "MultiHeadAttention",
        "RotaryEmbedding",
        "com.microsoft:RotaryEmbedding",
        "GroupQueryAttention",
        "FusedGemm",
        "QLinearConv",
        "ConvInteger",
        "QLinearMatMul",
        "MatMulNBits",
        "EmbedLayerNormalization",
        "LSTM",
        "GRU",
        "RNN",
        "If",
        "Loop",
        "Scan",
        "SequenceConstruct",
        "SequenceAt",
        "SequenceEmpty",
        "SequenceLength",
        "SequenceInsert",
        "SequenceErase",
        "SplitToSequence",
        "ConcatFromSequence",
    ]
    assert [op for op in ops if op not in SHAPES] == []


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_batch_first_recurrent_layers_match_the_reference(op: str) -> None:
    """``layout=1`` (batch first), which onnxruntime's CPU kernels refuse: ONNX's reference evaluator is the
    oracle, for every output."""
    from onnx.reference import ReferenceEvaluator

    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    n_out = 3 if op == "LSTM" else 2
    ins: list[Input] = [(2, 5, 3), c(2, 4 * gates, 3), c(2, 4 * gates, 4), c(2, 8 * gates), None, (2, 2, 4)]
    attrs = {"hidden_size": 4, "direction": "bidirectional", "layout": 1}
    model, _ = one_node(op, ins, attrs, n_out=n_out, opset=14)
    feeds = {"in0": RNG.standard_normal((2, 5, 3)).astype(np.float32), "in5": np.zeros((2, 2, 4), np.float32)}
    got = ReferenceEvaluator(model).run(None, feeds)
    result = bcast_of(model)
    assert not errors(result), [f.message for f in result.findings]
    assert [dims(result, f"out{k}") for k in range(n_out)] == [[str(d) for d in g.shape] for g in got]


@pytest.mark.parametrize(
    ("op", "ins", "attrs", "kind"),
    [
        (
            "QLinearAdd",
            [u8(2, 3, 4), f32s(0.1), u8s(), u8(3, 2), f32s(0.1), u8s(), f32s(0.2), u8s()],
            {},
            "cannot-broadcast",
        ),
        (
            "MatMulNBits",
            [(2, 3, 12), u8(8, 1, 8), c(8)],
            {"K": 16, "N": 8, "bits": 4, "block_size": 16},
            "matmul-inner",
        ),
    ],
    ids=["qlinear-add", "matmul-n-bits"],
)
def test_a_quantized_operator_on_shapes_that_do_not_meet_is_found(
    op: str, ins: list[Input], attrs: dict[str, Any], kind: str
) -> None:
    """A quantized model's operands are checked as a float one's: onnxruntime refuses these, bcast names them."""
    model, feeds = one_node(op, ins, attrs, domain=MS)
    with pytest.raises(Exception, match=r"(?i)broadcast|dim|shape|K"):  # onnxruntime's refusal is the proof
        run(model, feeds)
    (err,) = errors(bcast_of(model))
    assert err.kind == kind and err.node.name == "n", err.message


def test_a_sequence_past_the_embedded_positions_is_found() -> None:
    """20 tokens against a table of 16 positions: onnxruntime refuses it; a symbolic length is a limit."""
    ins: list[Input] = [i32(2, 20), None, c(10, 8), c(16, 8), None, c(8), c(8)]
    model, feeds = one_node("EmbedLayerNormalization", ins, {}, n_out=2, domain=MS)
    with pytest.raises(Exception, match="index out of range"):  # onnxruntime's refusal is the proof
        run(model, feeds)
    (err,) = errors(bcast_of(model))
    assert err.kind == "index-out-of-range" and "16 rows" in err.message, err.message
    model, _ = one_node(
        "EmbedLayerNormalization", [("B", "S"), None, c(10, 8), c(16, 8), None, c(8), c(8)], {}, n_out=2, domain=MS
    )
    result = bcast_of(model)
    assert [(f.kind, f.severity) for f in result.findings] == [("length-limit", "info")], result.findings
    assert dims(result) == ["B", "S", "8"]


def test_a_recurrent_weight_for_another_input_size_is_found() -> None:
    """W exported for 6 input features meets a sequence of 3: onnxruntime refuses it, bcast names W's axis."""
    model, feeds = one_node("GRU", [(5, 2, 3), c(1, 12, 6), c(1, 12, 4)], {"hidden_size": 4}, n_out=2)
    with pytest.raises(Exception, match=r"(?i)input_size|W|shape"):  # onnxruntime's refusal is the proof
        run(model, feeds)
    (err,) = errors(bcast_of(model))
    assert err.kind == "shape-mismatch" and "axis 2 of W [1,12,6]" in err.message, err.message


def test_a_recurrent_state_for_another_batch_is_latent() -> None:
    """An initial state of a batch ``b`` against a sequence's ``B``: they must be one size."""
    model, _ = one_node("RNN", [(5, "B", 3), c(1, 4, 3), c(1, 4, 4), None, None, (1, "b", 4)], {"hidden_size": 4})
    result = bcast_of(model)
    assert [(f.kind, f.severity) for f in result.findings] == [("shape-mismatch", "warning")], result.findings
    assert dims(result, "out0") == ["5", "1", "B", "4"]


# -- window arithmetic at random, against onnxruntime ----------------------------------------------


@st.composite
def windows(draw: Any, pool: bool) -> dict[str, Any]:
    n = draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 4)) for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel] + [draw(st.integers(0, k - 1)) for k in kernel]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    sizes = [draw(st.integers(max(1, e - pads[i] - pads[i + n]), 12)) for i, e in enumerate(eff)]
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    if auto_pad == "VALID":
        sizes = [max(s, e) for s, e in zip(sizes, eff, strict=True)]
    attrs: dict[str, Any] = {"strides": strides, "dilations": dilations}
    if auto_pad == "NOTSET":
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = auto_pad
    if pool:
        attrs["kernel_shape"] = kernel
        if auto_pad == "NOTSET" and draw(st.booleans()):
            attrs["ceil_mode"] = 1
    return {"n": n, "kernel": kernel, "sizes": sizes, "attrs": attrs, "batch": draw(st.integers(0, 2))}


@settings(max_examples=40, deadline=None)
@given(windows(pool=False), st.integers(1, 2))
def test_conv_arithmetic_matches_onnxruntime(w: dict[str, Any], group: int) -> None:
    x = (w["batch"], 2 * group, *w["sizes"])
    attrs = {**w["attrs"], "group": group}
    if "SAME" in attrs.get("auto_pad", ""):  # onnxruntime has no dilated SAME Conv
        attrs["dilations"] = [1] * w["n"]
    model, feeds = one_node("Conv", [x, c(3 * group, 2, *w["kernel"])], attrs)
    check_static(model, feeds, refusal=True)


@settings(max_examples=40, deadline=None)
@given(windows(pool=True), st.sampled_from(["MaxPool", "AveragePool"]))
def test_pool_arithmetic_matches_onnxruntime(w: dict[str, Any], op: str) -> None:
    if "SAME" in w["attrs"].get("auto_pad", ""):
        # onnxruntime refuses a SAME pool whose kernel is shorter than its stride leaves (a negative pad)
        strides = w["attrs"]["strides"]
        need = [(-(-n // s) - 1) * s + k - n for n, s, k in zip(w["sizes"], strides, w["kernel"], strict=True)]
        assume(min(need) >= 0)
    x = (w["batch"], 2, *w["sizes"])
    model, feeds = one_node(op, [x], w["attrs"])
    check_static(model, feeds, refusal=True)


@settings(max_examples=30, deadline=None)
@given(windows(pool=False), st.integers(0, 1))
def test_conv_transpose_arithmetic_matches_onnxruntime(w: dict[str, Any], adj: int) -> None:
    attrs = dict(w["attrs"])
    attrs["output_padding"] = [
        min(adj, s - 1, d - 1) if s > 1 or d > 1 else 0
        for s, d in zip(attrs["strides"], attrs["dilations"], strict=True)
    ]
    x = (1, 2, *w["sizes"])
    model, feeds = one_node("ConvTranspose", [x, c(2, 3, *w["kernel"])], attrs)
    check_static(model, feeds, refusal=True)


# -- symbolic dims ---------------------------------------------------------------------------------

SYM = ("N", 3, "H", "W")


@pytest.mark.parametrize(
    ("op", "ins", "attrs", "kw", "want"),
    [
        pytest.param(
            "Conv",
            [SYM, c(8, 3, 3, 3)],
            {"strides": [2, 2], "pads": [1, 1, 1, 1]},
            {},
            ["N", "8", "floor((H - 1)/2) + 1", "floor((W - 1)/2) + 1"],
            id="conv-s2",
        ),
        pytest.param(
            "Conv", [SYM, c(8, 3, 3, 3)], {"pads": [1, 1, 1, 1]}, {}, ["N", "8", "H", "W"], id="conv-same-size"
        ),
        pytest.param(
            "Conv",
            [SYM, c(8, 3, 3, 3)],
            {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
            {},
            ["N", "8", "ceil(H/2)", "ceil(W/2)"],
            id="conv-same-upper",
        ),
        pytest.param(
            "ConvTranspose",
            [SYM, c(3, 4, 4, 4)],
            {"strides": [2, 2], "pads": [1, 1, 1, 1]},
            {},
            ["N", "4", "2*H", "2*W"],
            id="convT-s2",
        ),
        pytest.param(
            "ConvTranspose",
            [SYM, c(3, 4, 3, 3)],
            {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
            {},
            ["N", "4", "2*H", "2*W"],
            id="convT-same",
        ),
        pytest.param(
            "MaxPool",
            [SYM],
            {"kernel_shape": [2, 2], "strides": [2, 2]},
            {},
            ["N", "3", "floor(H/2)", "floor(W/2)"],  # floor((H - 2)/2) + 1, in normal form
            id="maxpool",
        ),
        pytest.param(
            "MaxPool",
            [SYM],
            {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
            {},
            ["N", "3", "ceil((H - 3)/2) + 1", "ceil((W - 3)/2) + 1"],
            id="maxpool-ceil",
        ),
        pytest.param("GlobalAveragePool", [SYM], {}, {}, ["N", "3", "1", "1"], id="global-pool"),
        pytest.param(
            "Resize",
            [SYM, None, Const(np.array([1, 1, 2, 3], np.float32))],
            {},
            {},
            ["N", "3", "2*H", "3*W"],
            id="resize-integral",
        ),
        pytest.param("Pad", [SYM, i64([0, 0, 1, 2, 0, 0, 1, 0])], {}, {}, ["N", "3", "H + 2", "W + 2"], id="pad"),
        pytest.param(
            "DepthToSpace", [("N", 12, "H", "W")], {"blocksize": 2}, {}, ["N", "3", "2*H", "2*W"], id="depth-to-space"
        ),
        pytest.param(
            "SpaceToDepth",
            [("N", "C", "H", "W")],
            {"blocksize": 2},
            {},
            ["N", "4*C", "floor(H/2)", "floor(W/2)"],
            id="space-to-depth",
        ),
        pytest.param(
            "Einsum", [("B", "S", 8), ("B", "T", 8)], {"equation": "bsd,btd->bst"}, {}, ["B", "S", "T"], id="einsum"
        ),
        pytest.param(
            "Einsum",
            [("B", 1, 2, 3), (1, "T", 3, 4)],
            {"equation": "...ij,...jk->...ik"},
            {},
            ["B", "T", "2", "4"],
            id="einsum-ellipsis",
        ),
        pytest.param("TopK", [("B", "S"), i64([5])], {}, {"n_out": 2}, ["B", "5"], id="topk"),
        pytest.param(
            "GatherND", [("B", "S", 8), ("B", "K", 1)], {"batch_dims": 1}, {}, ["B", "K", "8"], id="gather-nd"
        ),
        pytest.param(
            "OneHot", [("B", "S"), i64(7), Const(np.array([0, 1], np.float32))], {}, {}, ["B", "S", "7"], id="onehot"
        ),
        pytest.param(
            "Attention",
            [("B", 8, "S", 16), ("B", 2, "S", 16), ("B", 2, "S", 16), None, ("B", 2, "P", 16), ("B", 2, "P", 16)],
            {},
            {"opset": 23, "n_out": 3},
            ["B", "8", "S", "16"],
            id="attention",
        ),
    ],
)
def test_symbolic_dims(op: str, ins: list[Input], attrs: dict[str, Any], kw: dict[str, Any], want: list[str]) -> None:
    model, _ = one_node(op, ins, attrs, **kw)
    result = bcast_of(model)
    assert not errors(result), [f.message for f in errors(result)]
    assert dims(result) == want


def test_attention_present_grows_by_the_past() -> None:
    ins = [("B", 8, "S", 16), ("B", 2, "S", 16), ("B", 2, "S", 16), None, ("B", 2, "P", 16), ("B", 2, "P", 16)]
    result = bcast_of(one_node("Attention", ins, {}, opset=23, n_out=4)[0])
    assert dims(result, "out1") == ["B", "2", "P + S", "16"]
    assert dims(result, "out3") == ["B", "8", "S", "P + S"]


def test_fractional_resize_of_a_symbol_is_a_fresh_symbol_not_a_guess() -> None:
    model, _ = one_node("Resize", [SYM, None, Const(np.array([1, 1, 1.37, 1], np.float32))], {})
    d = dims(bcast_of(model))
    assert d[0] == "N" and d[3] == "W" and d[2] not in ("H", "1.37*H") and d[2].startswith("n_")


@pytest.mark.parametrize(
    ("scale", "want", "p", "q"), [(1.5, "floor((3*H)/2)", 3, 2), (0.5, "floor(H/2)", 1, 2), (1 / 3, "floor(H/3)", 1, 3)]
)
def test_resize_by_a_fraction_is_the_floor_onnxruntime_computes(scale: float, want: str, p: int, q: int) -> None:
    model, _ = one_node("Resize", [SYM, None, Const(np.array([1, 1, scale, 1], np.float32))], {})
    assert dims(bcast_of(model))[2] == want
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for h in (1, 5, 7, 31, 32, 99):
        (got,) = sess.run(None, {"in0": np.zeros((1, 3, h, 3), np.float32)})
        assert got.shape[2] == h * p // q


def test_conv_output_keeps_the_origins_of_what_it_copies() -> None:
    model, _ = one_node("Conv", [SYM, c(8, 3, 3, 3)], {"pads": [1, 1, 1, 1]})
    v = bcast_of(model).values["out0"]
    assert v.origin(0) == Origin("in0", "input", "input")
    assert v.origin(1) == Origin("in1", "initializer", "initializer")
    assert v.origin(2) == Origin("in0", "input", "input")


def test_window_size_formulas() -> None:
    from bcast.graph import Expr

    h = Expr.symbol("H")
    assert str(window_size(h, Expr.const(3), 2, 1, 1, 1)) == "floor((H - 1)/2) + 1"
    assert str(window_size(h, Expr.const(1), 1, 1, 0, 0)) == "H"
    assert window_size(h, Expr.const(2), 3, 1, 0, 2, ceil_mode=True) is None  # a window may start in the padding
    assert window_size(Expr.const(5), Expr.const(2), 2, 1, 1, 1, ceil_mode=True) == 3


# -- wrong models: a finding at the node, naming the right origin ----------------------------------


def findings_at(result: Result, node: str) -> list[Finding]:
    return [f for f in result.findings if f.node.label == node]


def suspect_names(f: Finding) -> set[str]:
    return {s.origin.name for s in f.suspects}


def test_conv_channel_mismatch_names_the_weight() -> None:
    model, _ = one_node("Conv", [(1, 3, 8, 8), c(4, 2, 3, 3)], {})
    (f,) = findings_at(bcast_of(model), "n")
    assert f.kind == "conv-channels" and f.severity == "error"
    assert "Conv n" in f.message and "3 channels" in f.message
    assert "in1" in suspect_names(f) and f.axis == 1


def test_conv_bias_of_the_wrong_length() -> None:
    model, _ = one_node("Conv", [(1, 3, 8, 8), c(4, 3, 3, 3), c(5)], {})
    (f,) = findings_at(bcast_of(model), "n")
    assert "in2" in suspect_names(f)


def test_batchnorm_scale_of_the_wrong_length_names_the_scale() -> None:
    model, _ = one_node("BatchNormalization", [(1, 4, 5, 5), c(3), c(4), c(4), c(4)], {})
    (f,) = findings_at(bcast_of(model), "n")
    assert f.kind == "norm-contract"
    assert suspect_names(f) == {"in1"}  # the scale; not X, which the other three agree with


def test_batchnorm_with_every_parameter_wrong_names_x_too() -> None:
    model, _ = one_node("BatchNormalization", [(1, 4, 5, 5), c(3), c(3), c(3), c(3)], {})
    (f,) = findings_at(bcast_of(model), "n")
    assert {"in0", "in1", "in4"} <= suspect_names(f)


def test_einsum_clashing_letter() -> None:
    model, _ = one_node("Einsum", [(2, 3), c(4, 5)], {"equation": "ij,jk->ik"})
    (f,) = findings_at(bcast_of(model), "n")
    assert "'j'" in f.message and {"in0", "in1"} <= suspect_names(f)


def test_einsum_symbolic_letter_is_a_constraint() -> None:
    model, _ = one_node("Einsum", [("B", "K"), ("L", 4)], {"equation": "ij,jk->ik"})
    result = bcast_of(model)
    (f,) = findings_at(result, "n")
    assert f.severity == "warning" and set(f.dims) == {"K", "L"}
    assert dims(result) == ["B", "4"]


def test_einsum_ellipsis_is_checked_by_the_broadcasting_rules() -> None:
    model, _ = one_node("Einsum", [(2, 3, 4), (5, 4, 2)], {"equation": "...ij,...jk->...ik"})
    result = bcast_of(model)
    (f,) = findings_at(result, "n")
    assert f.kind == "cannot-broadcast"
    assert any(r.node.name == "n" and r.output is None for r in result.records)


@pytest.mark.parametrize(
    ("op", "ins", "attrs", "suspect"),
    [
        pytest.param("ScatterND", [(4, 5), i64([[1], [3]]), c(2, 4)], {}, "in2", id="scatter-nd-updates"),
        pytest.param(
            "GatherND", [(2, 3, 4), Const(np.zeros((3, 1), np.int64))], {"batch_dims": 1}, "in1", id="gather-nd-batch"
        ),
        pytest.param("QuantizeLinear", [X, c(4)], {}, "in1", id="quantize-per-axis-length"),
        pytest.param("InstanceNormalization", [X, c(2), c(3)], {}, "in1", id="instance-norm-scale"),
        pytest.param("GroupNormalization", [(2, 6, 5), c(6), c(6)], {"num_groups": 4}, "in0", id="group-norm-groups"),
        pytest.param("ReverseSequence", [(5, 3, 2), i64([1, 5])], {}, "in1", id="reverse-sequence-lens"),
        pytest.param("Conv", [(1, 3, 2, 8), c(4, 3, 3, 3)], {}, "in0", id="conv-window-too-large"),
        pytest.param("TopK", [(3, 5), i64([7])], {}, "in1", id="topk-k-too-large"),
        pytest.param("RotaryEmbedding", [(2, 3, 4, 8), c(4, 4), c(5, 4)], {}, "in2", id="rotary-caches"),
        pytest.param("DepthToSpace", [(1, 6, 2, 2)], {"blocksize": 2}, "in0", id="depth-to-space-channels"),
        pytest.param("Pad", [X, i64([0, 0, -8, 0, 0, 0, 0, 0])], {}, "in0", id="pad-below-zero"),
    ],
)
def test_wrong_shapes_are_findings(op: str, ins: list[Input], attrs: dict[str, Any], suspect: str) -> None:
    model, _ = one_node(op, ins, attrs, opset=23 if op == "RotaryEmbedding" else 21)
    got = findings_at(bcast_of(model), "n")
    assert got, "no finding"
    assert got[0].severity == "error" and f"{op} n" in got[0].message
    assert suspect in suspect_names(got[0]), (got[0].message, suspect_names(got[0]))


def test_a_wrong_node_does_not_stop_propagation() -> None:
    """After a finding the node's outputs are unknown, and the nodes after it are not reported again."""
    conv = helper.make_node("Conv", ["X", "W"], ["y"], name="conv")
    relu = helper.make_node("Relu", ["y"], ["z"], name="relu")
    w = numpy_helper.from_array(np.zeros((4, 2, 3, 3), np.float32), "W")
    g = helper.make_graph(
        [conv, relu],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 8, 8])],
        [onnx.ValueInfoProto(name="z")],
        [w],
    )
    result = bcast_of(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]))
    assert [f.node.name for f in result.findings] == ["conv"]


# -- control flow and sequences ------------------------------------------------------------------


def _branch(name: str, nodes: list[Any], outs: list[str], inits: Sequence[Any] = ()) -> Any:
    return helper.make_graph(nodes, name, [], [onnx.ValueInfoProto(name=o) for o in outs], list(inits))


def _if_model(cond: Any) -> tuple[Any, dict[str, np.ndarray]]:
    then = _branch("then", [helper.make_node("Concat", ["X", "X"], ["t"], axis=1, name="cat")], ["t"])
    other = _branch("else", [helper.make_node("Relu", ["X"], ["e"], name="relu")], ["e"])
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])]
    inits = []
    if isinstance(cond, bool):
        inits.append(numpy_helper.from_array(np.array(cond), "cond"))
    else:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)
    g = helper.make_graph([node], "g", inputs, [onnx.ValueInfoProto(name="y")], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    feeds = {"X": RNG.standard_normal((2, 3)).astype(np.float32)}
    if not isinstance(cond, bool):
        feeds["cond"] = np.array(cond)
    return model, feeds


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_a_known_condition_takes_one_branch(cond: bool) -> None:
    model, feeds = _if_model(cond)
    check_static(model, feeds)


def test_if_with_an_unknown_condition_keeps_what_the_branches_agree_on() -> None:
    model, feeds = _if_model(np.bool_(True))
    result = bcast_of(model)
    d = dims(result, "y")
    assert d[0] == "2" and d[1] not in ("3", "6") and d[1].startswith("if_")
    assert run(model, feeds)[0].shape == (2, 6)


def test_a_finding_inside_a_branch_names_its_path() -> None:
    bad = helper.make_node("Add", ["X", "B"], ["t"], name="bad_add")
    then = _branch("then", [bad], ["t"], [numpy_helper.from_array(np.zeros(4, np.float32), "B")])
    other = _branch("else", [helper.make_node("Relu", ["X"], ["e"], name="relu")], ["e"])
    node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)
    g = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [onnx.ValueInfoProto(name="y")],
    )
    result = bcast_of(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]))
    (f,) = result.findings
    assert f.node.label == "if/bad_add" and f.kind == "cannot-broadcast"
    assert "B" in suspect_names(f)


def _loop_model(with_cond: bool) -> tuple[Any, dict[str, np.ndarray]]:
    body_in = [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
        helper.make_tensor_value_info("acc", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("grow", TensorProto.FLOAT, None),
    ]
    nodes = [
        helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
        helper.make_node("Add", ["acc", "X"], ["acc_out"], name="add"),
        helper.make_node("Concat", ["grow", "X"], ["grow_out"], axis=0, name="cat"),
        helper.make_node("Mul", ["acc", "X"], ["scan"], name="mul"),
    ]
    body = helper.make_graph(
        nodes, "body", body_in, [onnx.ValueInfoProto(name=n) for n in ("c_out", "acc_out", "grow_out", "scan")]
    )
    cond = "cond" if with_cond else ""
    node = helper.make_node("Loop", ["M", cond, "acc0", "grow0"], ["acc_f", "grow_f", "scans"], name="loop", body=body)
    inits = [
        numpy_helper.from_array(np.array(3, np.int64), "M"),
        numpy_helper.from_array(np.zeros((2, 3), np.float32), "acc0"),
        numpy_helper.from_array(np.zeros((1, 3), np.float32), "grow0"),
    ]
    if with_cond:
        inits.append(numpy_helper.from_array(np.array(True), "cond"))
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [onnx.ValueInfoProto(name=n) for n in ("acc_f", "grow_f", "scans")],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return model, {"X": RNG.standard_normal((2, 3)).astype(np.float32)}


@pytest.mark.parametrize("with_cond", [False, True])
def test_loop(with_cond: bool) -> None:
    model, feeds = _loop_model(with_cond)
    real = [a.shape for a in run(model, feeds)]
    assert real == [(2, 3), (7, 3), (3, 2, 3)]
    result = bcast_of(model)
    assert not result.findings
    assert dims(result, "acc_f") == ["2", "3"]  # the body keeps it: it keeps its shape
    grow = dims(result, "grow_f")
    assert grow[1] == "3" and grow[0].startswith("loop_")  # it grows each iteration: a fresh symbol
    assert dims(result, "scans") == ["3", "2", "3"]  # no early exit: M iterations


def test_scan_against_onnxruntime() -> None:
    body_in = [
        helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
    ]
    nodes = [
        helper.make_node("Add", ["s", "x"], ["s_out"], name="add"),
        helper.make_node("Unsqueeze", ["x", "ax"], ["y"], name="unsq"),
    ]
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")
    body = helper.make_graph(
        nodes, "body", body_in, [onnx.ValueInfoProto(name="s_out"), onnx.ValueInfoProto(name="y")], [ax]
    )
    node = helper.make_node(
        "Scan",
        ["s0", "X"],
        ["s_f", "ys"],
        name="scan",
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_output_axes=[-1],
    )
    g = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("s0", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 5]),
        ],
        [onnx.ValueInfoProto(name="s_f"), onnx.ValueInfoProto(name="ys")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    feeds = {"s0": np.zeros(4, np.float32), "X": RNG.standard_normal((4, 5)).astype(np.float32)}
    check_static(model, feeds)


def _chain(nodes: list[Any], inputs: list[Any], outs: list[str], inits: Sequence[Any] = ()) -> Any:
    g = helper.make_graph(nodes, "g", inputs, [onnx.ValueInfoProto(name=o) for o in outs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_sequences_against_onnxruntime() -> None:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [6, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array([1, 2, 3], np.int64), "parts"),
    ]
    nodes = [
        helper.make_node("SplitToSequence", ["X", "parts"], ["seq"], axis=0),
        helper.make_node("SequenceAt", ["seq", "one"], ["second"]),
        helper.make_node("SequenceLength", ["seq"], ["count"]),
        helper.make_node("SequenceInsert", ["seq", "Y"], ["seq2"]),
        helper.make_node("ConcatFromSequence", ["seq2"], ["joined"], axis=0),
        helper.make_node("SplitToSequence", ["X"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("SequenceConstruct", ["Y", "Y"], ["pair"]),
        helper.make_node("SequenceErase", ["pair"], ["single"]),
        helper.make_node("ConcatFromSequence", ["single"], ["again"], axis=-1),
    ]
    model = _chain(nodes, [x, y], ["second", "count", "joined", "stacked", "again"], inits)
    feeds = {"X": RNG.standard_normal((6, 4)).astype(np.float32), "Y": RNG.standard_normal((2, 4)).astype(np.float32)}
    check_static(model, feeds)
    assert bcast_of(model).values["count"].data == (3,)


def test_split_to_sequence_of_a_symbolic_dim() -> None:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", 4])
    nodes = [
        helper.make_node("SplitToSequence", ["X"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("SequenceLength", ["rows"], ["n"]),
    ]
    result = bcast_of(_chain(nodes, [x], ["stacked", "n"]))
    assert dims(result, "stacked") == ["4", "T"]
    assert [str(e) for e in result.values["n"].data or ()] == ["T"]


def test_concat_from_sequence_of_clashing_tensors() -> None:
    nodes = [
        helper.make_node("SequenceConstruct", ["A", "B"], ["s"], name="mk"),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, name="cat"),
    ]
    ins = [
        helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3]),
        helper.make_tensor_value_info("B", TensorProto.FLOAT, [2, 4]),
    ]
    (f,) = bcast_of(_chain(nodes, ins, ["y"])).findings
    assert f.node.name == "cat" and {"A", "B"} <= suspect_names(f)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 12), min_size=2, max_size=2),
    st.lists(st.sampled_from([0.25, 0.5, 0.6, 0.75, 1.0, 1.3333, 1.5, 1.7, 2.0, 2.5, 3.0]), min_size=2, max_size=2),
    st.sampled_from(["nearest", "linear"]),
)
def test_resize_scales_match_onnxruntime(sizes: list[int], scales: list[float], mode: str) -> None:
    assume(all(int(np.float32(s) * np.float32(n)) > 0 for s, n in zip(scales, sizes, strict=True)))
    factors = Const(np.array([1, 1, *scales], np.float32))
    model, feeds = one_node("Resize", [(1, 2, *sizes), None, factors], {"mode": mode})
    check_static(model, feeds)


def test_scan_8_against_onnxruntime() -> None:
    body_in = [
        helper.make_tensor_value_info("s", TensorProto.FLOAT, [4]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
    ]
    nodes = [helper.make_node("Add", ["s", "x"], ["s_out"]), helper.make_node("Identity", ["x"], ["y"])]
    body = helper.make_graph(nodes, "body", body_in, [onnx.ValueInfoProto(name="s_out"), onnx.ValueInfoProto(name="y")])
    node = helper.make_node("Scan", ["", "s0", "X"], ["s_f", "ys"], name="scan", body=body, num_scan_inputs=1)
    g = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("s0", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 5, 4]),
        ],
        [onnx.ValueInfoProto(name="s_f"), onnx.ValueInfoProto(name="ys")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], ir_version=10)
    feeds = {"s0": np.zeros((3, 4), np.float32), "X": RNG.standard_normal((3, 5, 4)).astype(np.float32)}
    check_static(model, feeds)


def test_loop_trip_count_from_a_shape() -> None:
    """M computed from a symbolic dim (``Shape -> Gather``) is the scan output's leading dim."""
    body_in = [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
    ]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Relu", ["X"], ["y"])],
        "body",
        body_in,
        [onnx.ValueInfoProto(name="c_out"), onnx.ValueInfoProto(name="y")],
    )
    nodes = [
        helper.make_node("Shape", ["X"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["m"], axis=0),
        helper.make_node("Loop", ["m", ""], ["ys"], name="loop", body=body),
    ]
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", 4])
    result = bcast_of(_chain(nodes, [x], ["ys"], [numpy_helper.from_array(np.array(0, np.int64), "zero")]))
    assert dims(result, "ys") == ["T", "T", "4"]


def test_an_empty_trip_count_is_an_input_the_loop_may_leave_empty(tmp_path: Any) -> None:
    """A while loop (tf2onnx writes them so): M is there, and empty. onnx.checker and onnxruntime take it; an
    empty input a node must have (an Add's second) is still refused."""
    from bcast.check import check

    body = helper.make_graph(
        [
            helper.make_node("Less", ["i", "three"], ["c_out"]),
            helper.make_node("Relu", ["X"], ["y"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["T", 4]),
        ],
        [numpy_helper.from_array(np.array(3, np.int64), "three")],
    )
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", 4])
    loop = helper.make_node("Loop", ["", "go"], ["ys"], name="loop", body=body)
    graph = helper.make_graph(
        [loop],
        "g",
        [x],
        [helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["N", "T", 4])],
        [numpy_helper.from_array(np.array(True), "go")],
    )
    good = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.checker.check_model(good, full_check=True)
    assert run(good, {"X": np.ones((2, 4), np.float32)})[0].shape == (4, 2, 4)  # iterations 0 to 3
    path = tmp_path / "while.onnx"
    onnx.save(good, path)
    assert [p.kind for p in check(str(path)).problems] == []
    bad = _chain([helper.make_node("Add", ["X", ""], ["ys"], name="add")], [x], ["ys"])
    onnx.save(bad, path)
    assert [(p.kind, p.message) for p in check(str(path)).problems] == [("invalid", "Add's required input 1 is empty")]


@pytest.mark.parametrize(
    ("rule", "found"), [((2, 2), ["invalid"]), ((2, 2, (1,)), []), ((2, 2, ()), ["invalid"])], ids=str
)
def test_an_arity_rule_says_which_inputs_may_be_empty(rule: tuple[Any, ...], found: list[str]) -> None:
    """``propagate``'s arity rule gives (min, max) and, as a third item, the first inputs that may be empty; a rule
    of two items says none may."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
    model = _chain([helper.make_node("Add", ["X", ""], ["y"], name="add")], [x], ["y"])
    result = propagate(graph_of(model), fallback=onnx_fallback, arity=lambda node: rule)
    assert [f.kind for f in result.findings if f.kind == "invalid"] == found


def test_if_branches_that_agree_on_symbols_keep_them() -> None:
    then = _branch("then", [helper.make_node("Relu", ["X"], ["t"])], ["t"])
    other = _branch("else", [helper.make_node("Neg", ["X"], ["e"])], ["e"])
    node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)
    ins = [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, ["B", "S"]),
        helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
    ]
    result = bcast_of(_chain([node], ins, ["y"]))
    assert dims(result, "y") == ["B", "S"]
    assert result.values["y"].origin(1) == Origin("X", "input", "input")


ZERO_CASES: list[Any] = [
    pytest.param("Pad", [(0, 3, 2), i64([0, 0, 1, 0, 0, 1])], {}, {}, id="pad"),
    pytest.param("DepthToSpace", [(0, 8, 2, 3)], {"blocksize": 2}, {}, id="depth-to-space"),
    pytest.param("GatherElements", [(3, 4), Const(np.zeros((0, 4), np.int64))], {}, {}, id="gather-elements"),
    pytest.param(
        "OneHot", [Const(np.zeros((0, 2), np.int64)), i64(3), Const(np.array([0, 1], np.float32))], {}, {}, id="onehot"
    ),
    pytest.param("Compress", [(3, 4), Const(np.array([False, False]))], {"axis": 0}, {}, id="compress-none"),
    pytest.param("GatherND", [(2, 0, 4), Const(np.zeros((3, 1), np.int64))], {}, {}, id="gather-nd"),
    pytest.param("InstanceNormalization", [(0, 3, 4), c(3), c(3)], {}, {}, id="instance-norm"),
    pytest.param("Einsum", [(0, 3), (3, 0)], {"equation": "ij,jk->ki"}, {}, id="einsum"),
    pytest.param("ConvTranspose", [(0, 3, 4, 4), c(3, 2, 3, 3)], {"strides": [2, 2]}, {}, id="conv-transpose"),
    pytest.param(
        "MaxPool", [(0, 3, 4, 4)], {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [3, 3]}, {}, id="maxpool"
    ),
]


@pytest.mark.parametrize(("op", "ins", "attrs", "kw"), ZERO_CASES)
def test_zero_size_dims_match_onnxruntime(op: str, ins: list[Input], attrs: dict[str, Any], kw: dict[str, Any]) -> None:
    model, feeds = one_node(op, ins, attrs, **kw)
    check_static(model, feeds)


# -- ONNX's own node test cases ----------------------------------------------------------------------

#: ops whose output size depends on the data: a symbol there is the right answer
DATA_DEPENDENT = frozenset({"Unique", "NonMaxSuppression", "NonZero", "Compress"})


#: the pooling ops' cases: their expected outputs are computed by onnx's pure-Python pools when the cases are
#: made (ten seconds), so they are checked with the full suite
POOLS = frozenset({"AveragePool", "LpPool", "MaxPool"})


def _node_test_cases(ops: frozenset[str]) -> list[Any]:
    """onnx's node test cases of the modules named after ``ops`` (``averagepool`` for AveragePool, ``if_`` for If):
    each case is made, with its expected outputs, when its module is imported, so the other modules are not."""
    import importlib
    import pkgutil

    import onnx.backend.test.case.node as cases

    modules = {m.name.replace("_", ""): m.name for m in pkgutil.iter_modules(cases.__path__)}
    with warnings.catch_warnings():  # making some cases' data divides by zero, on purpose
        warnings.simplefilter("ignore")
        for op in sorted(ops):
            if op.lower() in modules:
                importlib.import_module(f"{cases.__name__}.{modules[op.lower()]}")
    return list(cases._NodeTestCases)  # every case made so far in this process, filtered by op by the caller


@pytest.mark.parametrize(
    ("pools", "least"),
    [pytest.param(False, 250, id="others"), pytest.param(True, 40, id="pools", marks=pytest.mark.full)],
)
def test_onnx_node_test_cases_of_these_ops(pools: bool, least: int) -> None:
    """Every node test case shipped with onnx that uses an op of these modules: its inputs bound as constants
    (so K, pads, scales and sizes are known), bcast's output shapes must be the expected outputs' shapes."""
    nn = {k.split(":")[-1] for k, fn in SHAPES.items() if fn.__module__.endswith((".nn", ".control"))}
    mine = frozenset(nn & POOLS if pools else nn - POOLS)
    failures, checked = [], 0
    for case in _node_test_cases(mine):
        model = case.model
        if model is None or "expanded" in case.name or not case.data_sets:
            continue
        ops = {n.op_type for n in model.graph.node}
        if not ops & mine:
            continue
        inputs, outputs = case.data_sets[0]
        if not all(isinstance(a, np.ndarray) for a in inputs):
            continue
        bound = onnx.ModelProto()
        bound.CopyFrom(model)
        for vi, a in zip(model.graph.input, inputs, strict=False):
            bound.graph.initializer.append(numpy_helper.from_array(a, vi.name))
        del bound.graph.input[:]
        result = bcast_of(bound)
        checked += 1
        if errors(result):
            failures.append((case.name, [f.message for f in errors(result)]))
        for out, want in zip(bound.graph.output, outputs, strict=False):
            if not isinstance(want, np.ndarray):
                continue
            v = result.values.get(out.name)
            got = None if v is None or v.shape is None else [d.value for d in v.shape]
            if (
                got is None
                or len(got) != want.ndim
                or not all(g == w or (g is None and ops & DATA_DEPENDENT) for g, w in zip(got, want.shape, strict=True))
            ):
                failures.append((case.name, out.name, got, want.shape))
    assert checked >= least, checked
    assert failures == []
