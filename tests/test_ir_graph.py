"""OpenVINO IR through bcast's symbolic propagation (``bcast.openvino.graph_read`` + ``bcast.graph.ops.openvino``).

The oracle is the real ``openvino`` package throughout:

* (a) shapes: graphs built with ``openvino``'s opsets (a table of ops and attributes) are saved as IR
  and read back by ``openvino.Core().read_model``; every layer's propagated output shape must be the
  one OpenVINO infers. With static inputs the shapes are compared as they are; with dynamic inputs
  (every dynamic dim its own symbol, ``x_0``) the model is reshaped by OpenVINO to several concrete
  sizes, and each propagated expression, evaluated at those sizes, must be OpenVINO's dim;
* (b) bugs: a relation between two inputs' dims, a latent batch that must be both 1 and 4, and a
  computed Reshape target with a wrong constant are each found by ``bcast check`` at the right layer,
  and each is proven real by OpenVINO failing to compile or run the model on concrete inputs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check
from bcast.dims import Shape
from bcast.graph import Expr, propagate
from bcast.graph.propagate import Result
from bcast.openvino.graph_read import graph_of_ir, ir_fallback
from bcast.openvino.ir_read import read_ir

ov = pytest.importorskip("openvino", reason="openvino is not installed; the IR tests need it to write IR files")
o1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
o3 = pytest.importorskip("openvino.opset3", reason="openvino.opset3 is missing")
o4 = pytest.importorskip("openvino.opset4", reason="openvino.opset4 is missing")
o5 = pytest.importorskip("openvino.opset5", reason="openvino.opset5 is missing")
o6 = pytest.importorskip("openvino.opset6", reason="openvino.opset6 is missing")
o7 = pytest.importorskip("openvino.opset7", reason="openvino.opset7 is missing")
o8 = pytest.importorskip("openvino.opset8", reason="openvino.opset8 is missing")
o11 = pytest.importorskip("openvino.opset11", reason="openvino.opset11 is missing")
o12 = pytest.importorskip("openvino.opset12", reason="openvino.opset12 is missing")
o13 = pytest.importorskip("openvino.opset13", reason="openvino.opset13 is missing")
node_factory = pytest.importorskip("openvino.utils.node_factory", reason="openvino's NodeFactory is missing")

F32 = np.float32
SKIP_TYPES = {"Parameter", "Constant", "Result"}

# -- building, saving, propagating ---------------------------------------------------------------------


def param(name: str, shape: list[Any], t: Any = None) -> Any:
    """A Parameter; -1 is a dynamic dim, ``(lo, hi)`` an interval."""
    dims = [ov.Dimension(*d) if isinstance(d, tuple) else ov.Dimension(d) for d in shape]
    p = ov.op.Parameter(t or ov.Type.f32, ov.PartialShape(dims))
    p.set_friendly_name(name)
    return p


def const(values: Any, dtype: Any = np.int64) -> Any:
    return ov.op.Constant(np.asarray(values, dtype=dtype))


def weights(shape: list[int]) -> Any:
    return const(np.random.default_rng(0).standard_normal(shape), F32)


def named(node: Any, name: str) -> Any:
    node.set_friendly_name(name)
    return node


def nf(opset: str, op: str, inputs: list[Any], attrs: dict[str, Any]) -> Any:
    return node_factory.NodeFactory(opset).create(op, [i.output(0) for i in inputs], attrs)


def save(outputs: list[Any], params: list[Any], path: Path) -> Path:
    outs = [o.output(0) if hasattr(o, "output") else o for o in outputs]
    ov.save_model(ov.Model(outs, params, "m"), str(path), compress_to_fp16=False)
    return path


def propagated(path: Path) -> Result:
    return propagate(graph_of_ir(read_ir(path)), fallback=ir_fallback, debug=True)


def by_layer(result: Result) -> dict[str, list[str]]:
    return {n.name: n.outputs for n in result.graph.nodes}


def ov_dims(ps: Any) -> list[int] | None:
    """A static PartialShape as ints (``None`` when a dim is dynamic)."""
    if ps.rank.is_dynamic or not ps.is_static:
        return None
    return [d.get_length() for d in ps]


def compare(result: Result, model: Any, env: dict[str, int], *, ranks: bool = True) -> int:
    """Every layer of ``model`` (as OpenVINO inferred it at ``env``'s sizes) against the propagation:
    the number of output dims compared. A dim propagation lost (a fresh symbol) is not compared, nor,
    unless ``ranks``, an output whose rank propagation could not know (Squeeze of unknown dims)."""
    outs = by_layer(result)
    seen = 0
    for op in model.get_ordered_ops():
        if op.get_type_name() in SKIP_TYPES:
            continue
        name = op.get_friendly_name()
        assert name in outs, f"{name} ({op.get_type_name()}) is not in the graph"
        for k in range(op.get_output_size()):
            want = ov_dims(op.get_output_partial_shape(k))
            if want is None:
                continue
            got = result.values[outs[name][k]].shape
            if got is None and not ranks:
                continue
            assert got is not None, (name, op.get_type_name(), k, want)
            assert len(got) == len(want), (name, op.get_type_name(), k, [str(d) for d in got], want)
            for axis, (e, w) in enumerate(zip(got, want, strict=True)):
                try:
                    v = e.evaluate(env)
                except KeyError:
                    continue
                assert v == w, (name, op.get_type_name(), k, axis, str(e), w, env)
                seen += 1
    return seen


def problems(result: Result) -> list[str]:
    return [f"{f.node.name} ({f.node.op}): {f.kind}: {f.message}" for f in result.findings]


# -- (a) the table of ops --------------------------------------------------------------------------------

Case = Callable[[], tuple[list[Any], list[Any]]]


def _eltwise() -> tuple[list[Any], list[Any]]:
    a, b = param("a", [2, 1, 5]), param("b", [3, 1])
    ops = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "squared_difference", "power"]
    ops += ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "floor_mod", "mod"]
    outs = [named(getattr(o1, op)(a, b), op) for op in ops]
    c, d = param("c", [2, 1], ov.Type.boolean), param("d", [1, 3], ov.Type.boolean)
    outs += [named(f(c, d), f.__name__) for f in (o1.logical_and, o1.logical_or, o1.logical_xor)]
    outs.append(named(o1.logical_not(c), "not"))
    return outs, [a, b, c, d]


def _eltwise_modes() -> tuple[list[Any], list[Any]]:
    a, b, c = param("a", [2, 3, 4, 5]), param("b", [3, 4]), param("c", [2, 3, 4, 5])
    pdpd = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": 1}
    right = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": -1}
    e = param("e", [4, 5])
    return [
        named(nf("opset1", "Add", [a, b], pdpd), "add_pdpd"),
        named(nf("opset1", "Multiply", [a, e], right), "mul_pdpd_right"),
        named(o1.subtract(a, c, auto_broadcast="NONE"), "sub_none"),
    ], [a, b, c, e]


def _select_fq_prelu() -> tuple[list[Any], list[Any]]:
    c, t, e = param("c", [2, 1, 1], ov.Type.boolean), param("t", [3, 1]), param("e", [4])
    x = param("x", [2, 3, 4])
    outs = [
        named(o1.select(c, t, e), "select"),
        named(o1.fake_quantize(x, const([[1.0]], F32), const([3.0], F32), const(0.0, F32), const(1.0, F32), 5), "fq"),
        named(o1.prelu(x, const(np.full(3, 0.1), F32)), "prelu_channel"),
        named(o1.prelu(x, const(np.full(4, 0.1), F32)), "prelu_last"),
        named(o1.prelu(x, const(np.full((3, 1), 0.1), F32)), "prelu_2d"),
    ]
    return outs, [c, t, e, x]


def _broadcasts() -> tuple[list[Any], list[Any]]:
    x, y, z = param("x", [16, 1, 1]), param("y", [3, 1]), param("z", [3, 5])
    return [
        named(o1.broadcast(x, const([1, 16, 50, 50])), "b1_numpy"),
        named(o3.broadcast(y, const([2, 3, 4]), broadcast_spec="NUMPY"), "b3_numpy"),
        named(o3.broadcast(y, const([2, 1, 6]), broadcast_spec="BIDIRECTIONAL"), "b3_bidi"),
        named(o1.broadcast(z, const([2, 3, 5, 4]), const([1, 2]), mode="EXPLICIT"), "b1_explicit"),
        named(o3.broadcast(y, const([3, 7, 2]), const([0, 1]), broadcast_spec="EXPLICIT"), "b3_explicit"),
        named(
            nf(
                "opset1",
                "Broadcast",
                [z, const([2, 3, 1]), const(0, np.uint8)],
                {"mode": "pdpd", "mode.auto_broadcast_axis": 1},
            ),
            "b1_pdpd",
        ),
        named(nf("opset3", "Broadcast", [y, const([2, 3, 4])], {"mode": "pdpd", "mode.mode.axis": 1}), "b3_pdpd"),
        named(o3.broadcast(y, o3.shape_of(z), broadcast_spec="NUMPY"), "b3_shapeof"),
    ], [x, y, z]


def _shape_values() -> tuple[list[Any], list[Any]]:
    """ShapeOf -> Gather -> arithmetic -> Concat -> Reshape, the way exporters compute targets."""
    x = param("x", [2, 6, 32])
    s = o3.shape_of(x)
    b = o8.gather(s, const([0]), const(0))
    n = o8.gather(s, const(1), const(0))
    half = o1.divide(o8.gather(s, const([2]), const(0)), const([2]))
    target = o1.concat([b, o1.unsqueeze(o1.multiply(n, const(1)), const(0)), const([2]), half], 0)
    r = named(o1.reshape(x, target, False), "reshape_computed")
    r0 = named(o1.reshape(x, const([0, -1, 8]), True), "reshape_zero")
    t = named(o1.transpose(r, const([0, 2, 1, 3])), "transpose")
    u = named(o1.unsqueeze(x, const([0, -1])), "unsqueeze")
    sq = named(o1.squeeze(u, const([0])), "squeeze")
    sq_all = named(nf("opset1", "Squeeze", [param("w", [1, 4, 1])], {}), "squeeze_all")
    cv = named(o1.convert(s, "i32"), "convert")
    cl = named(o1.convert_like(x, const(0, np.int32)), "convert_like")
    g7 = named(o8.gather(param("e", [2, 5, 7]), const(np.zeros((2, 3), np.int64)), const(1), 1), "gather_batch")
    outs = [r, r0, t, sq, sq_all, cv, cl, g7, named(o3.shape_of(t, "i32"), "shape_i32")]
    return outs, [x]


def _rearrange() -> tuple[list[Any], list[Any]]:
    x = param("x", [2, 3, 8])
    tile_short = named(o1.tile(x, const([2, 1])), "tile_short")
    tile_long = named(o1.tile(x, const([2, 1, 1, 3])), "tile_long")
    rng = named(o4.range(const(1), const(11), const(3), "i64"), "range4")
    rng1 = named(o1.range(const(0.0, F32), const(5.0, F32), const(0.5, F32)), "range1")
    split = named(o1.split(x, const(2), 4), "split")
    vsplit = named(o1.variadic_split(x, const(2), const([3, -1, 1])), "vsplit")
    reds = [
        named(o1.reduce_mean(x, const([1]), True), "mean_keep"),
        named(o1.reduce_sum(x, const([0, 2]), False), "sum"),
        named(o1.reduce_max(x, const([-1]), False), "max"),
        named(o4.reduce_l2(x, const([1]), True), "l2"),
    ]
    concat = named(o1.concat([x, x, x], -1), "concat")
    return [tile_short, tile_long, rng, rng1, *split.outputs(), *vsplit.outputs(), *reds, concat], [x]


def _slices() -> tuple[list[Any], list[Any]]:
    x = param("x", [4, 6, 8])
    ss = [
        named(o1.strided_slice(x, const([1, 0]), const([3, 4]), const([1, 2]), [0, 1], [0, 0]), "ss_masks"),
        named(
            o1.strided_slice(x, const([0, 1]), const([0, 0]), const([1, 1]), [1, 0], [1, 1], shrink_axis_mask=[0, 1]),
            "ss_shrink",
        ),
        named(
            o1.strided_slice(x, const([0, 0]), const([2, 0]), const([1, 1]), [0, 0], [0, 1], new_axis_mask=[0, 1]),
            "ss_new",
        ),
        named(
            o1.strided_slice(x, const([0, 2]), const([0, 7]), const([1, 2]), [0, 0], [0, 0], ellipsis_mask=[1, 0]),
            "ss_ellipsis",
        ),
        named(o1.strided_slice(x, const([-1]), const([0]), const([-1]), [0], [1]), "ss_reverse"),
        named(o8.slice(x, const([1, -3]), const([2**63 - 1, -1]), const([1, 1]), const([0, 2])), "slice_axes"),
        named(o8.slice(x, const([5]), const([0]), const([-2]), const([1])), "slice_back"),
        named(o8.slice(x, const([0, 0, 0]), const([2, 3, 4]), const([1, 1, 2])), "slice_all"),
    ]
    s = o3.shape_of(x)
    first = named(o1.strided_slice(s, const([0]), const([1]), const([1]), [0], [0]), "ss_value")
    last = named(o1.strided_slice(s, const([-1]), const([0]), const([1]), [0], [0], shrink_axis_mask=[1]), "ss_scalar")
    r = named(o1.reshape(x, o1.concat([first, const([-1]), o1.unsqueeze(last, const(0))], 0), False), "reshape_ss")
    return [*ss, r], [x]


def _matmuls() -> tuple[list[Any], list[Any]]:
    a, b = param("a", [2, 1, 3, 4]), param("b", [5, 4, 6])
    c, v = param("c", [5, 6, 4]), param("v", [4])
    return [
        named(o1.matmul(a, b, False, False), "mm"),
        named(o1.matmul(a, c, False, True), "mm_tb"),
        named(o1.matmul(param("at", [2, 1, 4, 3]), param("bt", [6, 4]), True, True), "mm_ta_tb"),
        named(o1.matmul(a, v, False, False), "mm_vec"),
        named(o1.matmul(v, b, False, False), "vec_mm"),
    ], [a, b, c, v]


def _convs() -> tuple[list[Any], list[Any]]:
    x = param("x", [2, 4, 17, 12])
    outs = [
        named(o1.convolution(x, weights([8, 4, 3, 3]), [2, 2], [1, 1], [1, 1], [1, 1]), "conv"),
        named(o1.convolution(x, weights([8, 4, 3, 2]), [2, 3], [0, 0], [0, 0], [2, 1], "same_upper"), "conv_same"),
        named(o1.convolution(x, weights([8, 4, 5, 5]), [1, 1], [0, 0], [0, 0], [1, 1], "valid"), "conv_valid"),
        named(o1.group_convolution(x, weights([2, 3, 2, 3, 3]), [1, 2], [1, 0], [1, 0], [1, 1]), "gconv"),
        named(
            o1.convolution_backprop_data(x, weights([4, 6, 3, 3]), [2, 2], pads_begin=[1, 1], pads_end=[0, 0]), "deconv"
        ),
        named(
            o1.convolution_backprop_data(x, weights([4, 6, 3, 3]), [2, 2], const([30, 20]), output_padding=[1, 1]),
            "deconv_shape",
        ),
        named(o1.group_convolution_backprop_data(x, weights([2, 2, 3, 3, 3]), [2, 1]), "gdeconv"),
        named(o1.max_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], "floor"), "maxpool1"),
        named(o1.max_pool(x, [2, 3], [1, 0], [1, 1], [3, 2], "ceil"), "maxpool1_ceil"),
        named(o8.max_pool(x, [2, 2], [2, 1], [1, 1], [0, 0], [2, 2], "ceil"), "maxpool8"),
        named(o1.avg_pool(x, [3, 3], [1, 1], [1, 1], [3, 3], False, "ceil"), "avgpool_ceil"),
        named(o1.avg_pool(x, [2, 2], [0, 0], [0, 0], [2, 2], True, "floor", "same_upper"), "avgpool_same"),
        named(o8.adaptive_avg_pool(x, const([5, 3])), "adaptive"),
    ]
    values = []
    for op in outs:
        values.extend(op.outputs())
    return values, [x]


def _resize_pad() -> tuple[list[Any], list[Any]]:
    x = param("x", [1, 3, 10, 7])
    v4 = {
        "mode": "nearest",
        "coordinate_transformation_mode": "half_pixel",
        "nearest_mode": "round_prefer_floor",
        "antialias": False,
        "cube_coeff": -0.75,
    }
    sizes = {**v4, "shape_calculation_mode": "sizes", "pads_begin": [0, 0, 1, 0], "pads_end": [0, 0, 1, 2]}
    scales = {**v4, "shape_calculation_mode": "scales", "pads_begin": [0, 0, 0, 0], "pads_end": [0, 0, 0, 0]}
    axes = const([2, 3])
    return [
        named(nf("opset4", "Interpolate", [x, const([20, 14]), const([2.0, 2.0], F32), axes], sizes), "interp4_sizes"),
        named(nf("opset4", "Interpolate", [x, const([1, 1]), const([1.5, 0.5], F32), axes], scales), "interp4_scales"),
        named(o1.interpolate(x, const([6, 9]), {"axes": [2, 3], "mode": "nearest"}), "interp1"),
        named(o11.interpolate(x, const([0.5, 3.0], F32), "nearest", "scales", axes=const([2, 3])), "interp11_scales"),
        named(o11.interpolate(x, const([5, 9]), "linear", "sizes", axes=const([2, 3])), "interp11_sizes"),
        named(o1.pad(x, const([0, 1, 2, 0]), const([0, 0, 3, 1]), "constant"), "pad1"),
        named(o12.pad(x, const([0, 0, -2, 1]), const([0, 1, 0, -3]), "edge"), "pad12"),
        named(nf("opset9", "GridSample", [x, param("grid", [1, 4, 5, 2])], _GRID_SAMPLE), "grid_sample"),
    ], [x]


_GRID_SAMPLE = {"align_corners": False, "mode": "bilinear", "padding_mode": "zeros"}


def _same_shape() -> tuple[list[Any], list[Any]]:
    x = param("x", [2, 3, 4, 5])
    return [
        named(o6.mvn(x, const([2, 3]), True, 1e-5, "inside_sqrt"), "mvn"),
        named(o1.normalize_l2(x, const([1]), 1e-6, "add"), "l2norm"),
        named(o8.softmax(x, -1), "softmax"),
        named(o5.log_softmax(x, 1), "log_softmax"),
        named(o7.gelu(x, "erf"), "gelu"),
        named(o4.swish(x), "swish"),
        named(o4.hswish(x), "hswish"),
        named(o1.clamp(x, 0.0, 1.0), "clamp"),
        named(o1.sqrt(x), "sqrt"),
        named(o1.erf(x), "erf"),
        named(o1.relu(x), "relu"),
        named(o1.sigmoid(x), "sigmoid"),
        named(o1.exp(x), "exp"),
    ], [x]


def _indexing() -> tuple[list[Any], list[Any]]:
    x = param("x", [4, 5, 6])
    idx = const(np.zeros((2, 1), np.int64))
    return [
        named(o3.scatter_update(x, const([1, 2]), const(np.ones((4, 2, 6)), F32), const(1)), "scatter_update"),
        named(o4.scatter_nd_update(x, idx, const(np.ones((2, 5, 6)), F32)), "scatter_nd_update"),
        named(
            o3.scatter_elements_update(
                x, const(np.zeros((4, 2, 6), np.int64)), const(np.ones((4, 2, 6)), F32), const(1)
            ),
            "scatter_elements",
        ),
        named(o8.gather_nd(x, const(np.zeros((4, 3, 1), np.int64)), 1), "gather_nd8"),
        named(o5.gather_nd(x, const(np.zeros((4, 3, 1), np.int64)), 1), "gather_nd5"),
        named(o6.gather_elements(x, const(np.zeros((4, 2, 6), np.int64)), 1), "gather_elements"),
        *named(o11.topk(x, const(3), 1, "max", "value", "i64"), "topk").outputs(),
        named(o7.einsum([x, param("y", [6, 7])], "abc,cd->abd"), "einsum"),
        named(o1.one_hot(const([[1, 2, 0]]), const(4), const(1.0, F32), const(0.0, F32), 1), "one_hot"),
        named(o1.depth_to_space(param("d", [1, 8, 2, 3]), "blocks_first", 2), "depth_to_space"),
        named(o3.non_zero(x, "i64"), "non_zero"),
    ], [x]


def _recurrent() -> tuple[list[Any], list[Any]]:
    """The sequence layers, batch-first: X [2, 5, 3], hidden 4, both directions and one."""
    x, h = param("x", [2, 5, 3]), param("h", [2, 2, 4])
    lengths = const(np.array([5, 5], np.int32))

    def weights(gates: int, dirs: int, bias: int | None = None) -> list[Any]:
        w = const(np.ones((dirs, gates * 4, 3)), F32)
        r = const(np.ones((dirs, gates * 4, 4)), F32)
        return [w, r, const(np.ones((dirs, (bias or gates) * 4)), F32)]

    h1 = param("h1", [2, 1, 4])
    return [
        *named(o5.lstm_sequence(x, h, h, lengths, *weights(4, 2), 4, "bidirectional"), "lstm").outputs(),
        *named(
            o5.gru_sequence(x, h1, lengths, *weights(3, 1, 4), 4, "forward", linear_before_reset=True), "gru"
        ).outputs(),
        *named(o5.rnn_sequence(x, h1, lengths, *weights(1, 1), 4, "reverse"), "rnn").outputs(),
    ], [x, h, h1]


def _attention() -> tuple[list[Any], list[Any]]:
    q, k, v = param("q", [2, 4, 5, 8]), param("k", [2, 1, 7, 8]), param("v", [2, 1, 7, 3])
    m = param("m", [2, 1, 5, 7])
    return [
        named(o13.scaled_dot_product_attention(q, k, v, m), "sdpa_mask"),
        named(o13.scaled_dot_product_attention(q, k, v, causal=True), "sdpa_causal"),
    ], [q, k, v, m]


CASES: dict[str, Case] = {
    f.__name__.lstrip("_"): f
    for f in (
        _eltwise,
        _eltwise_modes,
        _select_fq_prelu,
        _broadcasts,
        _shape_values,
        _rearrange,
        _slices,
        _matmuls,
        _convs,
        _resize_pad,
        _same_shape,
        _indexing,
        _recurrent,
        _attention,
    )
}


def _params_of(outputs: list[Any], params: list[Any]) -> list[Any]:
    """Every Parameter the outputs reach, in a stable order (the cases list the main ones)."""
    found: dict[str, Any] = {p.get_friendly_name(): p for p in params}
    stack = [o.get_node() if hasattr(o, "get_node") else o for o in outputs]
    seen: dict[int, Any] = {}  # the nodes kept alive, so that no id is reused
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if node.get_type_name() == "Parameter":
            found.setdefault(node.get_friendly_name(), node)
        stack.extend(v.get_node() for v in node.input_values())
    return list(found.values())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_static_shapes_are_openvinos(case: str, tmp_path: Path) -> None:
    """Every layer's propagated output shape is the one OpenVINO infers, and nothing is reported."""
    outputs, params = CASES[case]()
    path = save(outputs, _params_of(outputs, params), tmp_path / "m.xml")
    result = propagated(path)
    model = ov.Core().read_model(str(path))
    assert compare(result, model, {}) > 0
    assert not result.unknown, [(s.node.name, s.reason) for s in result.unknown]
    assert not problems(result), problems(result)


def _dynamic(model: Any, params: list[Any], base: dict[str, list[int]], axes: Callable[[int], list[int]]) -> bool:
    """Make the chosen axes of every Parameter dynamic; ``False`` when OpenVINO refuses the model so."""
    shapes = {}
    for p in params:
        dims = base[p.get_friendly_name()]
        chosen = axes(len(dims))
        shapes[p.output(0)] = ov.PartialShape([-1 if k in chosen else d for k, d in enumerate(dims)])
    try:
        model.reshape(shapes)
    except Exception:  # a constant fixes a dim (a Reshape target, a bias): this case has other dims to vary
        return False
    return True


def _envs(base: dict[str, list[int]]) -> list[dict[str, list[int]]]:
    """The case's own sizes, then its first axis one larger, then every dim above 1 one larger."""
    first = {n: ([d[0] + 1, *d[1:]] if d else d) for n, d in base.items()}
    grown = {n: [x + 1 if x > 1 else x for x in d] for n, d in base.items()}
    return [base, first, grown]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_dynamic_shapes_are_openvinos(case: str, tmp_path: Path) -> None:
    """Every dynamic dim its own symbol: each propagated expression, evaluated at sizes OpenVINO reshapes the
    model to, is OpenVINO's dim there (Conv's floor((H + 2 - 3)/2) + 1 as much as Concat's sums)."""
    outputs, params = CASES[case]()
    params = _params_of(outputs, params)
    model = ov.Model([o.output(0) if hasattr(o, "output") else o for o in outputs], params, "m")
    base = {p.get_friendly_name(): [d.get_length() for d in p.get_partial_shape()] for p in params}
    if not _dynamic(model, params, base, lambda r: list(range(r))) and not _dynamic(model, params, base, lambda r: [0]):
        pytest.skip("OpenVINO refuses every dynamic version of this case")
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    result = propagated(path)
    assert not [f for f in result.findings if f.severity == "error"], problems(result)
    compared = 0
    for sizes in _envs(base):
        m = ov.Core().read_model(str(path))
        try:
            m.reshape({p.output(0): ov.PartialShape(sizes[p.get_friendly_name()]) for p in m.get_parameters()})
        except Exception:  # these sizes do not fit the model's constants: OpenVINO refuses them
            continue
        env = {f"{name}_{k}": d for name, dims in sizes.items() for k, d in enumerate(dims)}
        compared += compare(result, m, env, ranks=False)
    assert compared > 0


# -- (b) bugs found at the right layer, proven by OpenVINO ------------------------------------------------


def runs(path: Path, feeds: dict[str, np.ndarray]) -> str | None:
    """Compile the IR for OpenVINO's CPU plugin and run it on ``feeds``: ``None`` when it runs, else the error."""
    core = ov.Core()
    try:
        model = core.read_model(str(path))
        model.reshape(
            {p.output(0): ov.PartialShape(list(feeds[p.get_friendly_name()].shape)) for p in model.get_parameters()}
        )
        compiled = core.compile_model(model, "CPU")
        compiled.create_infer_request().infer(
            {p.get_friendly_name(): feeds[p.get_friendly_name()] for p in model.get_parameters()}
        )
    except Exception as e:  # OpenVINO's refusal, at reshape, compile or infer time, is the proof
        return f"{type(e).__name__}: {str(e)[:300]}"
    return None


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, F32)


def test_two_inputs_that_must_share_their_length(tmp_path: Path) -> None:
    """x [batch, seq, 8] * mask [batch, len] (unsqueezed): seq and len must broadcast, a relation between two
    inputs' dims that the IR (which names no dim) cannot state. It is listed with the symbolic dims, naming
    the layer, and is no problem; a learned table of 4 positions added to x is one (seq in {1, 4})."""
    x, m = param("x", [-1, -1, 8]), param("mask", [-1, -1])
    scaled = named(o1.multiply(x, o1.unsqueeze(m, const([2]))), "apply_mask")
    out = named(o1.add(x, const(np.ones((4, 8)), F32)), "add_positions")
    path = save([scaled, out], [x, m], tmp_path / "m.xml")

    report = check(path)
    by_dim = {c.dim: c for c in report.constraints}
    assert by_dim["x_0"].allowed == "x_0 == mask_0 or x_0 == 1 or mask_0 == 1"  # the batch: a relation
    assert by_dim["x_0"].nodes == ("apply_mask",)
    assert set(by_dim["x_1"].nodes) == {"apply_mask", "add_positions"}  # the length: a relation, and {1, 4}
    assert by_dim["x_1"].allowed == "{1, 4}"
    assert not [p for p in report.problems if p.node == "apply_mask"], report.problems
    (positions,) = [p for p in report.problems if p.node == "add_positions"]
    assert positions.kind == "constraint" and "x_1 in {1, 4}" in positions.message
    # OpenVINO: the relation is real (3 against 5 fails), and so is the table's length
    assert runs(path, {"x": zeros(2, 4, 8), "mask": zeros(2, 4)}) is None
    assert runs(path, {"x": zeros(2, 4, 8), "mask": zeros(2, 5)}) is not None
    assert runs(path, {"x": zeros(2, 5, 8), "mask": zeros(2, 5)}) is not None


def _batch_both(kind: str) -> tuple[list[Any], list[Any]]:
    x = param("x", [-1, 8])
    if kind == "pdpd":  # PaddlePaddle's auto_broadcast: B is placed into A
        right = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": -1}
        one = named(nf("opset1", "Multiply", [const(np.ones((1, 8)), F32), x], right), "scale_batch1")
        four = named(nf("opset1", "Add", [x, const(np.ones((4, 8)), F32)], right), "bias_batch4")
    else:  # numpy Broadcast, one way: x to a target folded at batch 1, a table of 4 rows to x's shape
        one = named(o3.broadcast(x, const([1, 8]), broadcast_spec="NUMPY"), "scale_batch1")
        four = named(o3.broadcast(const(np.ones((4, 8)), F32), o3.shape_of(x), broadcast_spec="NUMPY"), "bias_batch4")
    return [one, four], [x]


@pytest.mark.parametrize("kind", ["pdpd", "numpy"])
def test_a_batch_that_must_be_both_1_and_4(kind: str, tmp_path: Path) -> None:
    """One layer needs the batch to be 1, another needs it to be 4: each alone is only a constraint, together
    a contradiction, found without running anything; OpenVINO fails at every batch."""
    outputs, params = _batch_both(kind)
    path = save(outputs, params, tmp_path / "m.xml")
    report = check(path)
    (contra,) = [p for p in report.problems if p.kind == "contradiction"]
    assert contra.dims == ("x_0",)
    assert set(contra.node.split(", ")) == {"scale_batch1", "bias_batch4"}
    assert "x_0 in {1}" in contra.message and "x_0 in {4}" in contra.message
    (x0,) = [c for c in report.constraints if c.dim == "x_0"]
    assert x0.allowed == "no size"
    for batch in (1, 2, 4):
        assert runs(path, {"x": zeros(batch, 8)}) is not None, batch


def test_a_computed_reshape_target_with_a_wrong_constant(tmp_path: Path) -> None:
    """ShapeOf -> Gather -> Concat with a constant [4, 16] for 32 features: the target is known as a value,
    [x_0, x_1, 4, 16], and holds twice the input's elements; the constant is the root cause."""
    x = param("x", [-1, -1, 32])
    s = o3.shape_of(x)
    b, n = o8.gather(s, const([0]), const(0)), o8.gather(s, const([1]), const(0))
    heads = named(const([4, 16]), "heads_and_size")
    target = named(o1.concat([b, n, heads], 0), "target")
    r = named(o1.reshape(x, target, False), "split_heads")
    path = save([o1.transpose(r, const([0, 2, 1, 3]))], [x], tmp_path / "m.xml")

    result = propagated(path)
    target_v = result.values[by_layer(result)["target"][0]]
    assert [str(e) for e in target_v.ints or []] == ["x_0", "x_1", "4", "16"]
    report = check(path)
    (bad,) = [p for p in report.problems if p.node == "split_heads"]
    assert bad.kind == "reshape-count" and bad.severity == "error"
    assert "32*x_0*x_1" in bad.message and "64*x_0*x_1" in bad.message
    assert bad.root == "heads_and_size" and bad.root_kind == "initializer"
    for sizes in ((1, 1), (2, 3)):
        assert runs(path, {"x": zeros(*sizes, 32)}) is not None, sizes
    fixed = save([o1.reshape(x, o1.concat([b, n, const([4, 8])], 0), False)], [x], tmp_path / "ok.xml")
    assert check(fixed).clean and runs(fixed, {"x": zeros(2, 3, 32)}) is None


def test_a_wrong_declared_port_is_evidence_not_truth(tmp_path: Path) -> None:
    """An output port edited in the .xml is reported where it is, and the derived shape goes on."""
    x = param("x", [2, 3])
    path = save([named(o1.relu(named(o1.add(x, const(np.ones(3), F32)), "add")), "relu")], [x], tmp_path / "m.xml")
    text = path.read_text()
    head, sep, tail = text.partition('name="add"')
    tail = tail.replace("<dim>3</dim>", "<dim>7</dim>", 3)  # the Add's two inputs and its output
    path.write_text(head + sep + tail)
    result = propagated(path)
    (f,) = result.findings
    assert (f.node.name, f.kind, f.dims) == ("add", "declared-shape", ("7", "3"))
    assert result.values[by_layer(result)["relu"][0]].shape == (Expr.const(2), Expr.const(3))


def test_openvino_quirks_are_kept_as_warnings(tmp_path: Path) -> None:
    """Repeated axes_mapping entries pass OpenVINO's shape inference (its CPU plugin computes garbage): the
    propagation's quirk is in the report, a warning, and the layer's output is still the target."""
    x = param("x", [1, 1])
    b = named(nf("opset3", "Broadcast", [x, const([6]), const([0, 0])], {"mode": "explicit"}), "dup_axes")
    path = save([b], [x], tmp_path / "m.xml")
    report = check(path)
    (q,) = report.problems
    assert (q.node, q.op, q.kind, q.severity, q.root) == ("dup_axes", "Broadcast", "quirk", "warning", None)
    result = propagated(path)
    assert result.values[by_layer(result)["dup_axes"][0]].shape == (Expr.const(6),)
    assert [(f.node.name, f.kind, f.severity) for f in result.findings] == [("dup_axes", "quirk", "warning")]
    (record,) = result.records
    assert (record.mode, record.axes) == ("explicit", (0, 0))


def _quirky_models() -> tuple[list[Any], list[Any], dict[str, list[Callable[[], Any]]]]:
    """Layers OpenVINO builds although their result is undefined, each with the profile's calls that warn the
    same quirks (the profile's arguments are what OpenVINO knows of the layer's inputs)."""
    import bcast.openvino as bov

    x, y = param("x", [1, 1]), param("y", [(2, 3)])
    a, b = param("a", [(1, 4), 3]), param("b", [(2, 6), 3])
    w = param("w", [(4, 5)])
    pdpd = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": -1}
    outs = [
        named(nf("opset3", "Broadcast", [x, const([6]), const([0, 0])], {"mode": "explicit"}), "dup"),
        named(o3.broadcast(x, const([-7, 3])), "negative"),
        named(o3.broadcast(w, o3.shape_of(y)), "never_fits"),  # the target is ShapeOf(y): [2..3]
        named(nf("opset3", "Broadcast", [x, const([2])], {"mode": "pdpd", "mode.mode.axis": 0}), "past_end"),
        named(o3.broadcast(x, const([2, 0]), broadcast_spec="BIDIRECTIONAL"), "zero"),
        named(nf("opset1", "Add", [a, b], pdpd), "stretch"),
    ]
    calls: dict[str, list[Callable[[], Any]]] = {
        "dup": [lambda: bov.broadcast_shape("[1,1]", np.array([6]), "explicit", axes_mapping=np.array([0, 0]))],
        "negative": [lambda: bov.broadcast_shape("[1,1]", np.array([-7, 3]))],
        "never_fits": [lambda: bov.broadcast_shape("[4..5]", Shape("[2..3]"))],
        "past_end": [lambda: bov.broadcast_shape("[1,1]", np.array([2]), "pdpd", axis=0)],
        "zero": [lambda: bov.broadcast_shape("[1,1]", np.array([2, 0]), "bidirectional")],
        "stretch": [lambda: bov.eltwise_shape("[1..4,3]", "[2..6,3]", "pdpd")],
    }
    return outs, [x, y, a, b, w], calls


def _warned(calls: list[Callable[[], Any]]) -> list[str]:
    import warnings

    import bcast.openvino as bov

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for call in calls:
            call()
    return [str(w.message) for w in caught if issubclass(w.category, bov.QuirkWarning)]


def test_each_quirk_is_the_profiles_at_its_layer(tmp_path: Path) -> None:
    """Every quirk kind, found by the propagation at its layer, in the words of the per-call profile
    (``bcast.openvino``) given what OpenVINO knows of the layer's inputs (intervals included)."""
    outs, params, calls = _quirky_models()
    path = save(outs, params, tmp_path / "m.xml")
    report = check(path)
    got: dict[str, list[str]] = {}
    for p in report.problems:
        if p.kind == "quirk":
            assert (p.severity, p.root, p.chain) == ("warning", None, ()), p
            got.setdefault(p.node, []).append(p.message)
    want = {name: _warned(c) for name, c in calls.items()}
    assert all(want.values()), want
    assert got == want


def test_quirks_without_their_axis_and_in_bodies(tmp_path: Path) -> None:
    """A pdpd layer without its axis attribute (OpenVINO reads 0, not -1) and Broadcast-1 explicit with two
    inputs (it runs numpy) are quirks of the IR itself; a quirk inside an If body is found there."""
    x, c = param("x", [2, 3]), param("c", [], ov.Type.boolean)
    a, b = param("a", [2, 3, 4]), param("b", [2, 1])
    pdpd = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": 0}
    add = named(nf("opset1", "Add", [a, b], pdpd), "add_pdpd")
    b1 = named(o1.broadcast(x, const([4, 2, 3])), "b1")
    tx, ex = param("tx", [2, 3]), param("ex", [2, 3])
    then_b = named(o3.broadcast(tx, const([-1, 2, 3])), "then_neg")
    then_body, else_body = ov.Model([o1.result(then_b)], [tx]), ov.Model([o1.result(o1.relu(ex))], [ex])
    node = o8.if_op(c)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x.output(0), tx, ex)
    node.set_friendly_name("if")
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    path = save([add, b1, out], [a, b, x, c], tmp_path / "m.xml")
    tree = ET.parse(path)
    root = tree.getroot()
    layers = {str(layer.get("name")): layer for layer in root.iter("layer")}
    data = layers["add_pdpd"].find("data")
    assert data is not None
    del data.attrib["auto_broadcast.auto_broadcast_axis"]
    bcast, edges = layers["b1"], root.find("edges")
    assert bcast.find("data") is not None and edges is not None
    bcast.find("data").set("mode", "explicit")  # type: ignore[union-attr]
    inputs = bcast.find("input")
    assert inputs is not None
    inputs.remove(inputs[2])  # Broadcast-1 written with two inputs (openvino always writes a third)
    for e in list(edges):
        if e.get("to-layer") == bcast.get("id") and e.get("to-port") == "2":
            edges.remove(e)
    tree.write(path)
    quirks = sorted((p.node, p.message) for p in check(path).problems if p.kind == "quirk")
    assert quirks == [
        (
            "add_pdpd",
            "pdpd without a 'auto_broadcast.auto_broadcast_axis' attribute: OpenVINO reads the axis as 0 (its "
            "default constructor's), not -1 (rank(A) - rank(B))",
        ),
        ("b1", "Broadcast-1 explicit with 2 inputs: OpenVINO silently runs it as numpy"),
        (
            "if/then_body/then_neg",
            "Broadcast-3 numpy: target_shape array([-1, 2, 3]) has negative values [-1]: OpenVINO reads -1 as ? and "
            "other negatives as 0; the CPU plugin segfaults running it",
        ),
    ]


def test_a_quirk_is_no_root_cause(tmp_path: Path) -> None:
    """OpenVINO accepts a quirk's inputs: an error downstream of the layer is not its consequence, and the
    report lists the quirk apart, without a root cause (the error keeps its own)."""
    x, p = param("x", [1, 1]), param("p", [-1])
    dup = named(nf("opset3", "Broadcast", [x, const([6]), const([0, 0])], {"mode": "explicit"}), "dup")
    path = save([named(o1.add(dup, p), "after")], [x, p], tmp_path / "m.xml")
    path.write_text(path.read_text().replace('shape="?" element_type="f32"', 'shape="5" element_type="f32"', 1))
    result = propagated(path)
    assert [(f.node.name, f.kind, f.cause) for f in result.findings] == [
        ("dup", "quirk", None),
        ("after", "cannot-broadcast", None),
    ]
    report = check(path)
    assert [(q.node, q.kind) for q in report.problems] == [("after", "cannot-broadcast"), ("dup", "quirk")]
    error, quirk = report.problems
    assert error.root not in (None, "dup") and quirk.root is None


def test_records_say_how_the_operands_are_lined_up(tmp_path: Path) -> None:
    """Each broadcasting layer's record carries its mode and axes: explicit its axes mapping, pdpd its start
    axis (the elementwise ops' too), numpy and bidirectional none."""
    outs, params = _broadcasts()
    a, b, v = param("a", [2, 3, 4, 5]), param("b", [3, 4]), param("v", [2, 3, 4])
    pdpd = {"auto_broadcast": "pdpd", "auto_broadcast.auto_broadcast_axis": 1}
    outs.append(named(nf("opset1", "Add", [a, b], pdpd), "add_pdpd"))
    outs.append(named(o1.prelu(v, const(np.full(3, 0.1), F32)), "prelu_channel"))
    result = propagated(save(outs, [*params, a, b, v], tmp_path / "m.xml"))
    got = {r.node.name: (r.mode, r.axes) for r in result.records}
    assert got["b1_explicit"] == ("explicit", (1, 2))
    assert got["b3_explicit"] == ("explicit", (0, 1))
    assert got["b1_pdpd"] == ("pdpd", (1,))
    assert got["b3_pdpd"] == ("pdpd", (1,))
    assert got["add_pdpd"] == ("pdpd", (1,))
    assert got["prelu_channel"] == ("explicit", (1,))


def test_read_value_and_assign(tmp_path: Path) -> None:
    """A stateful model: ReadValue gives its initial value's shape (its symbols too), else the variable's."""
    util = pytest.importorskip("openvino.op.util", reason="openvino's Variable is missing")
    x = param("x", [-1, 3])
    info = util.VariableInfo()
    info.data_shape, info.data_type, info.variable_id = ov.PartialShape([-1, 3]), ov.Type.f32, "state"
    var = util.Variable(info)
    add = named(o1.add(named(o6.read_value(x, var), "read"), x), "add")
    plain = named(o6.read_value(var), "read_plain")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([add.output(0), plain.output(0)], [o6.assign(add, var)], [x], "m"), str(path))
    result = propagated(path)
    assert not result.findings and not result.unknown
    outs = by_layer(result)
    assert [str(d) for d in result.values[outs["add"][0]].shape or ()] == ["x_0", "3"]
    plain_dims = result.values[outs["read_plain"][0]].shape
    assert plain_dims is not None and len(plain_dims) == 2 and plain_dims[1] == Expr.const(3)
    m = ov.Core().read_model(str(path))
    m.reshape({m.get_parameters()[0].output(0): ov.PartialShape([5, 3])})
    assert compare(result, m, {"x_0": 5}, ranks=False) > 0
