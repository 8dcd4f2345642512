"""Quantized operators, as onnxruntime's quantizer writes them (the QOperator format) and as its optimizer fuses
them: each has the shapes of the float operator on its data inputs, with its scales and zero points beside.

* ``QLinearConv`` (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B) and
  ``ConvInteger`` (x, w, x_zero_point, w_zero_point) are a ``Conv`` of ``x`` by ``w`` (and ``B``);
* ``QLinearMatMul`` (a, a_scale, a_zero_point, b, ...), and onnxruntime's ``MatMulIntegerToFloat`` (a, b, ...)
  and ``DynamicQuantizeMatMul`` (a, b, ...), a ``MatMul`` of ``a`` by ``b``; onnxruntime's ``QGemm`` (a, ..., b,
  ..., c, ...) a ``Gemm``;
* onnxruntime's ``QLinearGlobalAveragePool`` a ``GlobalAveragePool`` (with ``channels_last``, of ``[N, H, W, C]``
  to ``[N, 1, 1, C]``);
* onnxruntime's ``QLinearAdd`` and ``QLinearMul`` (a, a_scale, a_zero_point, b, b_scale, b_zero_point, ...)
  broadcast ``a`` and ``b`` as ``Add`` does: a quantized model's broadcasts are checked like a float one's;
* onnxruntime's ``MatMulNBits`` (a, packed b, scales, ...) multiplies ``a [..., K]`` by a ``[K, N]`` matrix
  packed in blocks: its attributes ``K`` and ``N`` give the shapes, and ``a``'s last dim must be ``K``.

The output's type is the one the operator gives: the output zero point's (``uint8``, ``int8``), ``int32`` for the
integer ones, the float's for those that dequantize.
"""

from __future__ import annotations

from dataclasses import replace

from ..context import Ctx, ShapeError
from ..expr import Expr
from ..model import Node, Value
from ._base import SHAPES, agree, attr_int, dims_text, input_value, known, op_label, register

#: op -> (the float operator it has the shapes of, the positions of its data inputs, the output's type: a position
#: whose type it takes, or a type)
_AS: dict[str, tuple[str, tuple[int, ...], int | str]] = {
    "QLinearConv": ("Conv", (0, 3, 8), 7),
    "ConvInteger": ("Conv", (0, 1), "int32"),
    "QLinearMatMul": ("MatMul", (0, 3), 7),
    "MatMulIntegerToFloat": ("MatMul", (0, 1), 2),
    "DynamicQuantizeMatMul": ("MatMul", (0, 1), 0),
    "QLinearAdd": ("Add", (0, 3), 7),
    "QLinearMul": ("Mul", (0, 3), 7),
    "QGemm": ("Gemm", (0, 3, 6), 8),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,), 4),
}


@register(*_AS)
def _as_float_op(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    op, data, out_type = _AS[node.op]
    # the output zero point's type; with none (QGemm's output left in float), the float
    dtype = out_type if isinstance(out_type, str) else known(input_value(ins, out_type)).dtype or "float32"
    if node.op == "QLinearGlobalAveragePool" and attr_int(node, "channels_last", 0):  # no NCHW op has its shapes
        return [_pooled_channels_last(known(input_value(ins, 0)), dtype)]
    # the float operator of the default domain, at the model's opset: onnxruntime broadcasts QLinearAdd as Add
    view = replace(node, op=op, domain="", inputs=[node.inputs[k] if k < len(node.inputs) else "" for k in data])
    mark = len(ctx.records)
    got = SHAPES[op](view, [input_value(ins, k) for k in data], ctx)
    for rec in ctx.records[mark:]:  # a broadcast the float operator recorded is this node's
        rec.node = node
    return [replace(v, dtype=dtype, data=None, data_origins=None) for v in got[:1]]


def _pooled_channels_last(x: Value, dtype: str | None) -> Value:
    """``[N, H, W, C]`` pooled over its middle axes: ``[N, 1, 1, C]``."""
    if x.shape is None or len(x.shape) < 3:
        return Value(dtype, None if x.shape is None else x.shape)
    dims = (x.shape[0], *([Expr.const(1)] * (len(x.shape) - 2)), x.shape[-1])
    origins = (x.origin(0), *([None] * (len(x.shape) - 2)), x.origin(-1))
    return Value(dtype, dims, None, origins)


@register("MatMulNBits")
def _matmul_n_bits(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    a = known(input_value(ins, 0))
    k, n = attr_int(node, "K", 0), attr_int(node, "N", 0)
    if a.shape is None or k <= 0 or n <= 0:
        return [Value(a.dtype, None)]
    if not a.shape:
        raise ShapeError(f"{op_label(node)}: A is a scalar; it must end in K = {k}", kind="invalid")
    agree(
        node,
        ctx,
        a.shape[-1],
        a.origin(-1),
        Expr.const(k),
        None,
        f"A {dims_text(a.shape)} must end in the attribute K",
        axis=len(a.shape) - 1,
        kind="matmul-inner",
    )
    dims = (*a.shape[:-1], Expr.const(n))
    origins = (*(a.origin(i) for i in range(len(a.shape) - 1)), None)
    return [Value(a.dtype, dims, None, origins)]
