"""MatMul (its batch dims broadcast), Gemm (C broadcasts to M x N) and the normalizations with a scale.

MatMul's leading dims follow NumPy's multidirectional rule, so a wrong head count in one
Reshape before ``Q @ K^T`` is a broadcasting clash: it is checked as one.
"""

from __future__ import annotations

from ...dims import Tri
from ..context import Ctx, ShapeError
from ..expr import Expr
from ..model import Node, Origin, Value
from ._base import agree, attr_int, input_value, known, norm_findings, origins_of, register

Dims = tuple[Expr, ...]


def _text(d: Dims) -> str:
    return "[" + ",".join(str(x) for x in d) + "]"


def _batch(v: Value, keep: int) -> Value:
    """The leading (batch) dims of a MatMul operand, and their origins."""
    assert v.shape is not None
    n = max(0, len(v.shape) - keep)
    return Value(v.dtype, v.shape[:n], None, tuple(v.origin(k) for k in range(n)))


@register("MatMul", "MatMulInteger", "FusedMatMul")
def _matmul(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    a, b = known(ins[0]), known(input_value(ins, 1))
    dtype = "int32" if node.op == "MatMulInteger" else a.dtype
    if a.shape is None or b.shape is None:
        return [Value(dtype, None)]
    if not a.shape or not b.shape:
        raise ShapeError(
            f"{node.op} {node.name}: a scalar operand ({_text(a.shape)} @ {_text(b.shape)})", kind="invalid"
        )
    ta = bool(node.attrs.get("transA", 0)) if node.op == "FusedMatMul" else False
    tb = bool(node.attrs.get("transB", 0)) if node.op == "FusedMatMul" else False
    sa, sb = list(a.shape), list(b.shape)
    oa, ob = origins_of(a), origins_of(b)
    if ta and len(sa) >= 2:
        sa[-1], sa[-2] = sa[-2], sa[-1]
        oa[-1], oa[-2] = oa[-2], oa[-1]
    if tb and len(sb) >= 2:
        sb[-1], sb[-2] = sb[-2], sb[-1]
        ob[-1], ob[-2] = ob[-2], ob[-1]
    a1, b1 = len(sa) == 1, len(sb) == 1
    if a1:
        sa, oa = [Expr.const(1), *sa], [None, *oa]
    if b1:
        sb, ob = [*sb, Expr.const(1)], [*ob, None]
    k_a, k_b = sa[-1], sb[-2]
    if k_a.eq(k_b) is not Tri.YES:  # inner dims that are one size need no message made
        agree(
            node,
            ctx,
            k_a,
            oa[-1],
            k_b,
            ob[-2],
            f"the inner dims of {_text(a.shape)} @ {_text(b.shape)}",
            kind="matmul-inner",
        )
    ba = Value(a.dtype, tuple(sa[:-2]), None, tuple(oa[:-2]))
    bb = Value(b.dtype, tuple(sb[:-2]), None, tuple(ob[:-2]))
    names = [node.inputs[0], node.inputs[1]]
    if ba.shape and bb.shape:  # one operand without batch dims just repeats: nothing can clash
        batch = ctx.broadcast(node, [ba, bb], "ONNX MatMul batch dims (multidirectional)", names=names)
        if batch is None:
            rank = max(len(ba.shape or ()), len(bb.shape or ()))
            batch = tuple(ctx.fresh(f"{node.name}_{k}") for k in range(rank))
    else:
        batch = ba.shape or bb.shape or ()
    out = list(batch)
    origins: list[Origin | None] = (
        list((ba.origins if ba.shape else bb.origins) or ()) if not (ba.shape and bb.shape) else [None] * len(batch)
    )
    if not a1:
        out.append(sa[-2])
        origins.append(oa[-2])
    if not b1:
        out.append(sb[-1])
        origins.append(ob[-1])
    if ba.shape and bb.shape:  # the report shows the operands and the product, not only their batch dims
        rec = ctx.records[-1]
        rec.inputs = [(names[0], a.shape), (names[1], b.shape)]
        rec.output = tuple(out) if rec.output is not None else None
    return [Value(dtype, tuple(out), None, tuple(origins))]


@register("Gemm", "FusedGemm")
def _gemm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """Gemm, and onnxruntime's FusedGemm (a Gemm and its activation, fused by its optimizer): the same shapes."""
    a, b = known(ins[0]), known(input_value(ins, 1))
    c = input_value(ins, 2)
    if a.shape is None or b.shape is None:
        mn: Dims | None = None
        origins: tuple[Origin | None, ...] | None = None
    else:
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ShapeError(
                f"{node.op} {node.name}: A and B must be matrices, got {_text(a.shape)} and {_text(b.shape)}",
                kind="shape-mismatch",
            )
        ta, tb = attr_int(node, "transA", 0), attr_int(node, "transB", 0)
        m, k_a = (a.shape[1], a.shape[0]) if ta else (a.shape[0], a.shape[1])
        k_b, n = (b.shape[1], b.shape[0]) if tb else (b.shape[0], b.shape[1])
        agree(
            node,
            ctx,
            k_a,
            a.origin(0 if ta else 1),
            k_b,
            b.origin(1 if tb else 0),
            f"K is {k_a} in A {_text(a.shape)} and {k_b} in B {_text(b.shape)}",
            kind="matmul-inner",
        )
        mn = (m, n)
        origins = (a.origin(1 if ta else 0), b.origin(0 if tb else 1))
    if c is not None:
        names = [node.inputs[2], node.inputs[0]]
        ctx.broadcast_into(
            node,
            c,
            mn,
            "ONNX unidirectional (C to M x N)",
            mode="numpy",
            names=names,
            target_value=Value(None, mn, None, origins),
        )
    return [Value(a.dtype, mn, None, origins)]


@register(
    "LayerNormalization",
    "RMSNormalization",
    "SimplifiedLayerNormalization",
    "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
)
def _layer_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    skip = node.op.startswith("Skip")
    operands = list(enumerate(ins))[1:]
    before = len(ctx.findings)
    for k, v in operands:
        if v is None:
            continue
        what = "skip" if skip and k == 1 else "scale and bias"  # the skip input has X's shape exactly
        ctx.broadcast_into(
            node,
            v,
            x.shape,
            f"ONNX unidirectional ({what} to X)",
            mode="numpy",
            names=[node.inputs[k], node.inputs[0]],
            target_value=x,
        )
    norm_findings(ctx, before)
    outs = [Value(x.dtype, x.shape, None, x.origins)]
    if x.shape is not None and not skip:
        r = len(x.shape)
        axis = attr_int(node, "axis", -1)
        axis = axis % r if r and -r <= axis < r else 0
        stat = tuple(d if k < axis else Expr.const(1) for k, d in enumerate(x.shape))
        outs += [Value("float32", stat), Value("float32", stat)]
    return outs


@register("EmbedLayerNormalization")
def _embed_layer_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """onnxruntime's fused embedding of BERT-like models: the ids ``[B, S]`` (and segment ids) look up words,
    positions (and segments), summed and normalized to ``[B, S, H]``; also ``mask_index [B]`` and the sum.

    Every table and the scale and bias hold ``H`` columns (``gamma``'s), the segment ids and the mask have the
    ids' shape, and the positions ``0 .. S - 1`` are rows of the position table: a length limit where ``S`` may
    pass its rows (onnxruntime refuses a sequence longer than the table)."""
    ids = known(input_value(ins, 0))
    gamma = input_value(ins, 5)
    hidden, ho = (gamma.shape[0], gamma.origin(0)) if gamma is not None and gamma.shape else (None, None)
    for k, what in ((2, "word_embedding"), (3, "position_embedding"), (4, "segment_embedding")):
        table = input_value(ins, k)
        if table is None or table.shape is None:
            continue
        if len(table.shape) != 2:
            raise ShapeError(f"EmbedLayerNormalization {node.name}: {what} is of rank {len(table.shape)}, not 2")
        if hidden is None:
            hidden, ho = table.shape[1], table.origin(1)
        else:
            agree(node, ctx, table.shape[1], table.origin(1), hidden, ho, f"the columns of {what}", axis=1)
    if hidden is not None:
        for k, what in ((5, "gamma"), (6, "beta")):
            v = input_value(ins, k)
            if v is not None and v.shape is not None and len(v.shape) == 1:
                agree(node, ctx, v.shape[0], v.origin(0), hidden, ho, f"the length of {what}", axis=0)
    if ids.shape is None or len(ids.shape) != 2:
        if ids.shape is not None:
            raise ShapeError(f"EmbedLayerNormalization {node.name}: input_ids is of rank {len(ids.shape)}, not 2")
        return [Value("float32", None), Value("int32", None), Value("float32", None)][: len(node.outputs)]
    batch, seq = ids.shape
    for k, what in ((1, "segment_ids"), (7, "mask")):
        v = input_value(ins, k)
        if v is not None and v.shape is not None and len(v.shape) == 2:
            for axis in (0, 1):
                agree(node, ctx, v.shape[axis], v.origin(axis), ids.shape[axis], ids.origin(axis), what, axis=axis)
    positions = input_value(ins, 3)
    rows = positions.shape[0].value if positions is not None and positions.shape else None
    if rows is not None and input_value(ins, 8) is None:  # no position ids given: positions 0 .. S - 1
        if seq.value is not None and seq.value > rows:
            raise ShapeError(
                f"EmbedLayerNormalization {node.name}: a sequence of {seq.value} past the {rows} rows of "
                f"{node.inputs[3]}",
                axis=1,
                dims=(seq, rows),
                kind="index-out-of-range",
            )
        spare = (rows - seq).lo
        if seq.value is None and (spare is None or spare < 0):
            ctx.note_limit(
                node,
                ((seq, rows),),
                f"the positions 0 .. {seq} - 1 of input_ids {node.inputs[0]}",
                axis=1,
                dims=(seq, rows),
                where=f": {node.inputs[3]} has {rows} rows",
            )
    h = hidden if hidden is not None else ctx.fresh(f"{node.name}_hidden")
    out = Value("float32", (batch, seq, h), None, (ids.origin(0), ids.origin(1), ho))
    outs = [out, Value("int32", (batch,), None, (ids.origin(0),)), out]
    return outs[: len(node.outputs)]
