"""Neural-network ops: convolutions and pools, normalizations, resizing, quantization, attention.

Their output shapes are arithmetic on the inputs' dims (a window sliding over ``H``, a resize by a
scale, an einsum's letters), so each is computed on :class:`~bcast.graph.expr.Expr`:
a Conv with stride 2 over a symbolic ``H`` gives ``floor((H - 1)/2) + 1``, not a bare unknown, and
the Reshape after it is still checked. Each op also checks what its definition requires of its
inputs (a Conv's input channels against its weight's, a BatchNormalization's scale against the
channels) and names, when one is wrong, where the offending dim was made: that is what a root
cause is found from. Each op follows its ONNX definition; where onnxruntime's arithmetic differs
from the text (ConvTranspose with ``SAME`` and a kernel shorter than the stride, a pool in
``ceil_mode`` whose last window would start in the padding, a dilated ``SAME`` pool) the runtime's
is followed, since the runtime is what a model meets; the tests hold both to onnxruntime.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ...dims import Tri
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr, emax
from ..model import Node, Origin, Value
from ._base import (
    agree,
    attr_int,
    attr_ints,
    axis_of,
    dims_text,
    fresh_dim,
    input_value,
    known,
    new_value,
    numel,
    op_label,
    origins_of,
    rational_scale,
    register,
    require,
    same_as,
    scalar_of,
    suspects_of,
)
from .elementwise import Ratio, dtype_name

Dims = tuple[Expr, ...]
Origins = tuple[Origin | None, ...]

_ONE = Expr.const(1)


# -- shared helpers ------------------------------------------------------------------------------


def _here(node: Node) -> Origin:
    return Origin(node.name, node.op)


def _rank_at_least(node: Node, v: Value, n: int, what: str) -> None:
    if v.shape is not None and len(v.shape) < n:
        raise ShapeError(
            f"{op_label(node)}: {what} is {dims_text(v.shape)} (rank {len(v.shape)}); the op needs rank {n} or more",
            suspects=[Suspect(o) for o in origins_of(v) if o is not None][:4],
            kind="invalid",
        )


def _rank_is(node: Node, v: Value | None, n: int, what: str) -> bool:
    """Whether ``v``'s rank is ``n``; a :class:`ShapeError` when it is known and is not, ``False`` when unknown."""
    if v is None or v.shape is None:
        return False
    if len(v.shape) != n:
        raise ShapeError(
            f"{op_label(node)}: {what} is {dims_text(v.shape)} (rank {len(v.shape)}); the op needs rank {n}",
            suspects=[Suspect(o) for o in origins_of(v) if o is not None][:4],
            kind="shape-mismatch",
        )
    return True


def _int_of(x: Any) -> int | None:
    if isinstance(x, Expr):
        return x.value
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return int(x)
    return None


def _unknown(n: int, dtype: str | None = None) -> list[Value]:
    return [Value(dtype, None) for _ in range(n)]


# -- sliding windows: Conv, ConvTranspose, the pools -----------------------------------------------


def _auto_pad(node: Node) -> str:
    v = node.attrs.get("auto_pad", "NOTSET")
    return str(v).upper() if v else "NOTSET"


def _window_attrs(node: Node, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """strides, dilations, pads at the start and at the end of each of the ``n`` spatial axes."""
    strides = attr_ints(node, "strides", [1] * n) or [1] * n
    dilations = attr_ints(node, "dilations", [1] * n) or [1] * n
    pads = attr_ints(node, "pads", [0] * (2 * n)) or [0] * (2 * n)
    for what, got, want in (("strides", strides, n), ("dilations", dilations, n), ("pads", pads, 2 * n)):
        if len(got) != want:
            raise ShapeError(
                f"{op_label(node)}: {what} {got} has {len(got)} values for {n} spatial axes (it needs {want})",
                kind="invalid",
            )
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations):
        raise ShapeError(
            f"{op_label(node)}: strides {strides} and dilations {dilations} must be positive", kind="invalid"
        )
    return strides, dilations, pads[:n], pads[n:]


def window_size(
    size: Expr,
    kernel: Expr,
    stride: int,
    dilation: int,
    pad_begin: int,
    pad_end: int,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: bool = False,
    pool: bool = False,
) -> Expr | None:
    """How many windows fit along one axis (ONNX's formula, with onnxruntime's ``ceil_mode`` rule that a
    window starting in the end padding is dropped); ``None`` when a symbolic case has no closed form.

    ``SAME`` gives ``ceil(size/stride)``; a *pool* in onnxruntime pads for the undilated kernel, so a
    dilated one gives fewer windows (``pool=True`` follows it).

    >>> H = Expr.symbol("H")
    >>> str(window_size(H, Expr.const(3), 2, 1, 1, 1))
    'floor((H - 1)/2) + 1'
    >>> str(window_size(H, Expr.const(3), 2, 1, 0, 0, auto_pad="SAME_UPPER"))
    'ceil(H/2)'
    """
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = size.ceildiv(stride)
        if not pool or dilation == 1:
            return target
        kv = kernel.value
        if kv is None:
            return None
        lost = (dilation - 1) * (kv - 1)  # what the dilation spans beyond the padding made for the kernel
        tv = target.value
        if tv is not None:  # onnxruntime divides in C++: toward zero
            span = (tv - 1) * stride - lost
            return Expr.const((span // stride if span >= 0 else -(-span // stride)) + 1)
        return target + (-lost) // stride
    if auto_pad == "VALID":
        pad_begin = pad_end = 0
    eff = (kernel - 1) * dilation + 1
    num = size + (pad_begin + pad_end) - eff
    if not ceil_mode:
        return num // stride + 1
    nv, sv = num.value, size.value
    if nv is not None and sv is not None:
        out = -((-nv) // stride) + 1
        if (out - 1) * stride >= sv + pad_begin:
            out -= 1
        return Expr.const(out)
    ev = eff.value
    if ev is not None and stride + pad_end <= ev:  # the last window always starts inside: no window is dropped
        return num.ceildiv(stride) + 1
    return None


def _spatial(
    node: Node,
    ctx: Ctx,
    x: Value,
    kernel: Sequence[Expr],
    kernel_origins: Sequence[Origin | None],
    *,
    ceil_mode: bool = False,
    pool: bool = False,
) -> tuple[list[Expr], list[Origin | None]]:
    """The output's spatial dims (and origins) for a window of ``kernel`` sliding over ``x``'s spatial axes."""
    assert x.shape is not None
    n = len(x.shape) - 2
    strides, dilations, pb, pe = _window_attrs(node, n)
    auto_pad = _auto_pad(node)
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    for i in range(n):
        size, k = x.shape[2 + i], kernel[i]
        if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
            p0, p1 = (0, 0) if auto_pad == "VALID" else (pb[i], pe[i])
            eff = (k - 1) * dilations[i] + 1
            room = size + (p0 + p1)
            slack = (room - eff).value
            # a pooling one row past its input gives no windows (onnxruntime's empty output), and fails only past
            # that: its windows are counted below. The words and suspects are made only where there is a finding
            if not pool and (slack is None or slack < 0):
                said = (
                    f"at spatial axis {i} (axis {2 + i} of {dims_text(x.shape)}) the window spans {eff} (kernel {k}, "
                    f"dilation {dilations[i]})"
                )
                sus = suspects_of((x.origin(2 + i), size), (kernel_origins[i], k))
                if slack is not None:
                    raise ShapeError(
                        f"{op_label(node)}: {said} but the padded input has {room}",
                        axis=2 + i,
                        dims=(room, eff),
                        suspects=sus,
                        kind=WINDOW,
                    )
                # a convolution refuses a window past its padded input (onnxruntime's "Invalid input shape"): the
                # input's least size, or where it fails
                window_fits(node, ctx, f"{said}, the padded input", room, eff, 2 + i, sus)
        got = window_size(
            size, k, strides[i], dilations[i], pb[i], pe[i], auto_pad=auto_pad, ceil_mode=ceil_mode, pool=pool
        )
        if got is None:
            got = fresh_dim(node, ctx, 2 + i)
        elif pool and got.value is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
            # a pooling gives no windows one row past its input, and onnxruntime fails past that (a negative size)
            said = (
                f"at spatial axis {i} (axis {2 + i} of {dims_text(x.shape)}) the windows of {k} (stride {strides[i]})"
            )
            sus = suspects_of((x.origin(2 + i), size), (kernel_origins[i], k))
            window_fits(node, ctx, said, got, Expr.const(0), 2 + i, sus)
        elif got.value is not None and got.value < 0:
            raise ShapeError(
                f"{op_label(node)}: at spatial axis {i} (axis {2 + i} of {dims_text(x.shape)}) the dilated window "
                f"(kernel {k}, "
                f"dilation {dilations[i]}) leaves {got} outputs",
                axis=2 + i,
                dims=(size, k),
                suspects=suspects_of((x.origin(2 + i), size), (kernel_origins[i], k)),
                kind=WINDOW,
            )
        dims.append(got)
        origins.append(x.origin(2 + i) if got == size else None)
    return dims, origins


#: the kind of a window past its padded input (BC211)
WINDOW = "window-size"


def window_fits(node: Node, ctx: Ctx, said: str, have: Expr, need: Expr, axis: int, sus: Sequence[Suspect]) -> None:
    """``have >= need`` (symbolic) of a window along one axis: a convolution's padded input against its window, a
    pooling's windows against none. Said for the sizes where it fails (:func:`~bcast.graph.ops._base.require`:
    below a least size, the model's smallest input, a note)."""

    # the same sizes meet the same windows block after block (a stage's convolutions): each pair is asked once, and
    # its least size, where it has one, is noted once, at the first node that needs it
    asked: set[tuple[Expr, Expr]] = ctx.memo.setdefault("window_fits", set())
    if (have, need) in asked:
        return
    asked.add((have, need))

    def fits(env: dict[str, int]) -> bool:
        return bool(have.evaluate(env) >= need.evaluate(env))

    require(
        node, ctx, WINDOW, f"{said}: needs {have} >= {need}", fits, (have, need), axis=axis, suspects=sus, least=True
    )


def _kernel(node: Node, w: Value | None, n: int | None) -> tuple[list[Expr], list[Origin | None]] | None:
    """The kernel's spatial dims: ``kernel_shape`` when given (checked against W's), else W's."""
    ks = attr_ints(node, "kernel_shape")
    w_spatial = list(w.shape[2:]) if w is not None and w.shape is not None else None
    if ks is not None:
        if n is not None and len(ks) != n:
            raise ShapeError(
                f"{op_label(node)}: kernel_shape {ks} has {len(ks)} values for {n} spatial axes", kind="invalid"
            )
        if w is not None and w_spatial is not None and len(w_spatial) == len(ks):
            for i, (a, b) in enumerate(zip(ks, w_spatial, strict=True)):
                if b.eq(a) is Tri.NO:
                    raise ShapeError(
                        f"{op_label(node)}: kernel_shape {ks} differs from the weight {dims_text(w.shape)} at spatial "
                        f"axis {i}",
                        axis=2 + i,
                        dims=(a, b),
                        suspects=suspects_of((w.origin(2 + i), b)),
                    )
        return [Expr.const(k) for k in ks], [None] * len(ks)
    if w is None or w_spatial is None:
        return None
    return w_spatial, [w.origin(2 + i) for i in range(len(w_spatial))]


def _bias(node: Node, ctx: Ctx, b: Value | None, m: Expr, om: Origin | None, what: str) -> None:
    if b is None or b.shape is None:
        return
    if len(b.shape) != 1:
        raise ShapeError(
            f"{op_label(node)}: the bias {node.inputs[2]} is {dims_text(b.shape)}; it must be 1-D of {what} {m}",
            suspects=[Suspect(o) for o in origins_of(b) if o is not None],
            kind="conv-channels",
        )
    agree(
        node,
        ctx,
        b.shape[0],
        b.origin(0),
        m,
        om,
        f"the bias {node.inputs[2]} {dims_text(b.shape)} against {what} {m}",
        axis=1,
        kind="conv-channels",
    )


def _groups_divide(node: Node, ctx: Ctx, n: Expr, o: Origin | None, group: int, said: str) -> None:
    """``n`` channels must split into ``group`` groups: an error when they do not, a warning saying for which
    sizes when they may not."""
    if group == 1:
        return
    nv = n.value
    if nv is not None:
        if nv % group:
            raise ShapeError(
                f"{op_label(node)}: {said}, not a multiple of group {group}",
                axis=0,
                dims=(n, group),
                suspects=suspects_of((o, n)),
                kind="conv-channels",
            )
        return
    if (n // group * group).eq(n) is not Tri.YES:
        require(
            node,
            ctx,
            "conv-channels",
            f"{said}: a multiple of group {group} is needed",
            lambda env: n.evaluate(env) % group == 0,
            (n,),
            axis=0,
            suspects=suspects_of((o, n)),
        )


def _xw_ranks(node: Node, x: Value, w: Value) -> int | None:
    """The rank shared by X and W (at least 3), or ``None`` when neither is known."""
    for v, what in ((x, "the input X"), (w, "the weight W")):
        _rank_at_least(node, v, 3, what)
    if x.shape is not None and w.shape is not None and len(x.shape) != len(w.shape):
        raise ShapeError(
            f"{op_label(node)}: X {dims_text(x.shape)} and W {dims_text(w.shape)} differ in rank",
            suspects=[Suspect(o) for o in (x.origin(1), w.origin(1)) if o is not None],
            kind="shape-mismatch",
        )
    r = x.rank if x.rank is not None else w.rank
    return r


@register("Conv")
def _conv(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w, b = known(input_value(ins, 0)), known(input_value(ins, 1)), input_value(ins, 2)
    r = _xw_ranks(node, x, w)
    if r is None:
        return [Value(x.dtype, None)]
    group = attr_int(node, "group", 1)
    if group <= 0:
        raise ShapeError(f"{op_label(node)}: group {group} must be positive", kind="invalid")
    kernel = _kernel(node, w, r - 2)
    m: Expr = w.shape[0] if w.shape is not None else fresh_dim(node, ctx, 1)
    om = w.origin(0) if w.shape is not None else None
    if x.shape is not None and w.shape is not None:
        c, cw = x.shape[1], w.shape[1] * group
        agree(
            node,
            ctx,
            c,
            x.origin(1),
            cw,
            w.origin(1),
            f"the input X {dims_text(x.shape)} has {c} channels, the weight W {dims_text(w.shape)} takes "
            f"{w.shape[1]} x group {group} = {cw}",
            axis=1,
            kind="conv-channels",
        )
        _groups_divide(node, ctx, m, om, group, f"W {dims_text(w.shape)} has {m} output channels")
    _bias(node, ctx, b, m, om, "output channels")
    if x.shape is None or kernel is None:
        return [new_value(x.dtype, (fresh_dim(node, ctx, 0), m, *(fresh_dim(node, ctx, 2 + i) for i in range(r - 2))))]
    sp, so = _spatial(node, ctx, x, kernel[0], kernel[1])
    return [new_value(x.dtype, (x.shape[0], m, *sp), (x.origin(0), om, *so))]


@register("ConvTranspose")
def _conv_transpose(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w, b = known(input_value(ins, 0)), known(input_value(ins, 1)), input_value(ins, 2)
    r = _xw_ranks(node, x, w)
    if r is None:
        return [Value(x.dtype, None)]
    n = r - 2
    group = attr_int(node, "group", 1)
    if group <= 0:
        raise ShapeError(f"{op_label(node)}: group {group} must be positive", kind="invalid")
    kernel = _kernel(node, w, n)
    if w.shape is not None:
        m, om = w.shape[1] * group, (w.origin(1) if group == 1 else None)
    else:
        m, om = fresh_dim(node, ctx, 1), None
    if x.shape is not None and w.shape is not None:
        agree(
            node,
            ctx,
            x.shape[1],
            x.origin(1),
            w.shape[0],
            w.origin(0),
            f"the input X {dims_text(x.shape)} has {x.shape[1]} channels, the weight W {dims_text(w.shape)} takes "
            f"{w.shape[0]}",
            axis=1,
            kind="conv-channels",
        )
        _groups_divide(
            node, ctx, w.shape[0], w.origin(0), group, f"W {dims_text(w.shape)} takes {w.shape[0]} input channels"
        )
    _bias(node, ctx, b, m, om, "output channels")
    if x.shape is None or kernel is None:
        return [new_value(x.dtype, (fresh_dim(node, ctx, 0), m, *(fresh_dim(node, ctx, 2 + i) for i in range(n))))]
    strides, dilations, pb, pe = _window_attrs(node, n)
    adj = attr_ints(node, "output_padding", [0] * n) or [0] * n
    if len(adj) != n:
        raise ShapeError(
            f"{op_label(node)}: output_padding {adj} has {len(adj)} values for {n} spatial axes", kind="invalid"
        )
    shape_attr = attr_ints(node, "output_shape")
    auto_pad = _auto_pad(node)
    dims: list[Expr] = []
    for i in range(n):
        size, k, s = x.shape[2 + i], kernel[0][i], strides[i]
        if shape_attr is not None:
            if len(shape_attr) not in (n, n + 2):
                raise ShapeError(
                    f"{op_label(node)}: output_shape {shape_attr} has {len(shape_attr)} values for {n} spatial axes",
                    kind="invalid",
                )
            dims.append(Expr.const(shape_attr[len(shape_attr) - n + i]))
            continue
        full = (size - 1) * s + adj[i] + (k - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            # onnxruntime pads by max(0, full - size*stride): the output is the smaller of the two
            extra = (full - size * s).value
            if extra is None:
                dims.append(fresh_dim(node, ctx, 2 + i))
            else:
                dims.append(size * s if extra >= 0 else full)
            continue
        p = 0 if auto_pad == "VALID" else pb[i] + pe[i]
        out = full - p
        if out.value is not None and out.value <= 0:
            raise ShapeError(
                f"{op_label(node)}: spatial axis {i} of {dims_text(x.shape)} gives an output of {out} "
                f"(the pads {pb[i]}+{pe[i]} leave no output)",
                axis=2 + i,
                dims=(out,),
                suspects=suspects_of((x.origin(2 + i), size)),
                kind="invalid",
            )
        dims.append(out)
    return [new_value(x.dtype, (x.shape[0], m, *dims), (x.origin(0), om, *([None] * n)))]


def _pool(node: Node, ins: list[Value | None], ctx: Ctx, n_out: int) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None), Value("int64", None)][:n_out]
    _rank_at_least(node, x, 3, "the input X")
    n = len(x.shape) - 2
    ks = attr_ints(node, "kernel_shape")
    if ks is None:
        raise ShapeError(f"{op_label(node)}: the attribute kernel_shape is missing", kind="invalid")
    if len(ks) != n:
        raise ShapeError(
            f"{op_label(node)}: kernel_shape {ks} has {len(ks)} values for the {n} spatial axes of "
            f"{dims_text(x.shape)}",
            kind="invalid",
        )
    ceil_mode = bool(attr_int(node, "ceil_mode", 0))
    sp, so = _spatial(node, ctx, x, [Expr.const(k) for k in ks], [None] * n, ceil_mode=ceil_mode, pool=True)
    dims = (x.shape[0], x.shape[1], *sp)
    origins = (x.origin(0), x.origin(1), *so)
    return [new_value(x.dtype, dims, origins), new_value("int64", dims, origins)][:n_out]


@register("MaxPool")
def _maxpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 2)


@register("AveragePool", "LpPool")
def _avgpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 1)


@register("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None)]
    _rank_at_least(node, x, 2, "the input X")
    dims = (x.shape[0], x.shape[1], *([_ONE] * (len(x.shape) - 2)))
    return [new_value(x.dtype, dims, (x.origin(0), x.origin(1), *([_here(node)] * (len(x.shape) - 2))))]


# -- normalizations --------------------------------------------------------------------------------


def _per_channel(
    node: Node,
    ctx: Ctx,
    x: Value,
    params: Sequence[tuple[int, Value | None]],
    want: Sequence[Expr],
    want_origins: Sequence[Origin | None],
    what: str,
) -> None:
    """Each parameter must have the shape ``want`` (``[C]``). Those that do not are named; X's channel dim
    is named too when *every* parameter disagrees with it (then X is as likely the wrong one)."""
    given = [(k, v) for k, v in params if v is not None and v.shape is not None]
    bad: list[tuple[int, Value]] = []
    for k, v in given:
        assert v.shape is not None
        if len(v.shape) != len(want) or any(a.eq(b) is Tri.NO for a, b in zip(v.shape, want, strict=True)):
            bad.append((k, v))
    if not bad:
        asked: set[tuple[Expr, Expr]] = set()  # scale, bias, mean and var alike: one warning, not four
        for k, v in given:
            assert v.shape is not None
            for j, (a, b) in enumerate(zip(v.shape, want, strict=True)):
                if (a, b) in asked:
                    continue
                asked.add((a, b))
                agree(
                    node,
                    ctx,
                    a,
                    v.origin(j),
                    b,
                    want_origins[j],
                    f"the input {node.inputs[k]} {dims_text(v.shape)} against {what} {dims_text(want)}",
                    axis=1 + j,
                    kind="norm-contract",
                )
        return
    names = ", ".join(f"{node.inputs[k]} {dims_text(v.shape)}" for k, v in bad)
    sus: list[Suspect] = []
    for _, v in bad:
        sus.extend(Suspect(o, d.value) for o, d in zip(origins_of(v), v.shape or (), strict=True) if o is not None)
    if len(bad) == len(given):
        sus.extend(suspects_of(*((o, d) for o, d in zip(want_origins, want, strict=True))))
    dims = [d for _, v in bad for d in (v.shape or ())][:4]
    raise ShapeError(
        f"{op_label(node)}: the input X is {dims_text(x.shape)}: {what} {dims_text(want)}, but {names}",
        axis=1,
        dims=(*dims, *want),
        suspects=sus,
        kind="norm-contract",
    )


@register("BatchNormalization")
def _batch_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    n_out = len(node.outputs)
    if x.shape is None:
        return [Value(x.dtype, None), *_unknown(n_out - 1, x.dtype)]
    _rank_at_least(node, x, 2, "the input X")
    c, oc = x.shape[1], x.origin(1)
    spatial = attr_int(node, "spatial", 1) if ctx.opset(node.domain) < 9 else 1
    want = (c,) if spatial else x.shape[1:]
    want_o = (oc,) if spatial else tuple(origins_of(x)[1:])
    _per_channel(
        node,
        ctx,
        x,
        [(k, input_value(ins, k)) for k in range(1, 5)],
        want,
        want_o,
        "scale, B, mean and var must be its channels",
    )
    stat = new_value(x.dtype, want, want_o)
    return [same_as(x)] + [stat] * (n_out - 1)


@register("InstanceNormalization")
def _instance_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is not None:
        _rank_at_least(node, x, 3, "the input X")
        _per_channel(
            node,
            ctx,
            x,
            [(1, input_value(ins, 1)), (2, input_value(ins, 2))],
            (x.shape[1],),
            (x.origin(1),),
            "scale and B must be its channels",
        )
    return [same_as(x)]


@register("GroupNormalization")
def _group_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return group_normalization(node, ins, ctx, per_channel=ctx.opset(node.domain) >= 21)


def group_normalization(node: Node, ins: list[Value | None], ctx: Ctx, *, per_channel: bool) -> list[Value]:
    """GroupNormalization of X ``[N, C, ...]`` in ``num_groups`` groups: ``C`` a multiple of them, and a scale
    and a bias of ``[C]`` (``per_channel``: ONNX from opset 21, OpenVINO) or of ``[num_groups]`` (ONNX 18)."""
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [same_as(x)]
    _rank_at_least(node, x, 2, "the input X")
    groups = attr_int(node, "num_groups", 0)
    if groups <= 0:
        raise ShapeError(f"{op_label(node)}: num_groups {groups} must be positive", kind="invalid")
    c = x.shape[1]
    cv = c.value
    said = f"the input X {dims_text(x.shape)} has {c} channels"
    if cv is not None and cv % groups:
        raise ShapeError(
            f"{op_label(node)}: {said}, not a multiple of num_groups {groups}",
            axis=1,
            dims=(c, groups),
            suspects=suspects_of((x.origin(1), c)),
            kind="norm-contract",
        )
    if cv is None and (c // groups * groups).eq(c) is not Tri.YES:
        require(
            node,
            ctx,
            "norm-contract",
            f"{said}: a multiple of num_groups {groups} is needed",
            lambda env: c.evaluate(env) % groups == 0,
            (c,),
            axis=1,
            suspects=suspects_of((x.origin(1), c)),
        )
    if per_channel:
        want, want_o, what = (c,), (x.origin(1),), "scale and bias must be its channels"
    else:  # opset 18: one scale per group
        want, want_o, what = (Expr.const(groups),), (None,), f"scale and bias must be num_groups {groups}"
    _per_channel(node, ctx, x, [(1, input_value(ins, 1)), (2, input_value(ins, 2))], want, want_o, what)
    return [same_as(x)]


@register("LRN", "MeanVarianceNormalization")
def _lrn(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return [same_as(input_value(ins, 0))]


@register("LpNormalization")
def _lp_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is not None and x.shape:
        axis_of(node, attr_int(node, "axis", -1), len(x.shape))
    return [same_as(x)]


# -- resizing and padding --------------------------------------------------------------------------


def _f32_times(scale: float, size: int) -> float:
    """``scale * size`` in single precision, as onnxruntime computes a resized dim."""
    return float(np.float32(scale) * np.float32(size))


def _resize_inputs(node: Node, ins: list[Value | None], opset: int) -> tuple[Value | None, Value | None, Value | None]:
    """(roi, scales, sizes) of Resize or Upsample at ``opset``; an empty scales tensor counts as absent."""
    if node.op == "Upsample":
        if "scales" in node.attrs:
            raw = [float(s) for s in node.attrs["scales"]]
            return None, Value("float32", (Expr.const(len(raw)),), tuple(raw)), None
        return None, input_value(ins, 1), None
    if opset < 11:
        return None, input_value(ins, 1), None
    roi, scales, sizes = input_value(ins, 1), input_value(ins, 2), input_value(ins, 3)
    if scales is not None and scales.shape is not None and len(scales.shape) == 1 and scales.shape[0].value == 0:
        scales = None
    if sizes is not None and sizes.shape is not None and len(sizes.shape) == 1 and sizes.shape[0].value == 0:
        sizes = None
    return roi, scales, sizes


@register("Resize", "Upsample")
def _resize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    roi, scales, sizes = _resize_inputs(node, ins, ctx.opset(node.domain))
    raw_axes = attr_ints(node, "axes")
    axes = [axis_of(node, a, r) for a in raw_axes] if raw_axes is not None else list(range(r))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{op_label(node)}: axes {raw_axes} repeat an axis", kind="invalid")
    if scales is not None and sizes is not None:
        raise ShapeError(f"{op_label(node)}: both scales and sizes are given; exactly one may be", kind="invalid")
    given = scales if scales is not None else sizes
    if given is None:
        raise ShapeError(f"{op_label(node)}: neither scales nor sizes is given", kind="invalid")
    _resize_lengths(node, ctx, x, roi, given, "scales" if given is scales else "sizes", axes)
    if given is not scales:
        return [_resized_to_sizes(node, ctx, x, given, axes)]
    out = list(x.shape)
    origins: list[Origin | None] = origins_of(x)
    vals = list(scales.data) if scales.data is not None and len(scales.data) == len(axes) else None
    for j, a in enumerate(axes):
        factor = None if vals is None else vals[j]
        out[a] = _scaled(node, ctx, x.shape[a], factor, a)
        if factor != 1:
            origins[a] = None
    return [new_value(x.dtype, out, origins)]


def _resize_lengths(
    node: Node, ctx: Ctx, x: Value, roi: Value | None, given: Value, what: str, axes: list[int]
) -> None:
    """Resize's 1-D inputs against the axes it resizes: one scale or size per axis (a :class:`ShapeError`
    where that is known to fail), and with ``tf_crop_and_resize`` a start and an end of roi per axis."""
    if (
        given.shape is not None
        and len(given.shape) == 1
        and given.shape[0].value is not None
        and given.shape[0].value != len(axes)
    ):
        raise ShapeError(
            f"{op_label(node)}: {what} has {given.shape[0]} values for the {len(axes)} axes resized of "
            f"{dims_text(x.shape)}",
            dims=(given.shape[0], len(axes)),
            suspects=suspects_of((given.origin(0), given.shape[0])),
            kind="shape-mismatch",
        )
    mode = str(node.attrs.get("coordinate_transformation_mode", ""))
    if mode == "tf_crop_and_resize" and roi is not None and roi.shape is not None and len(roi.shape) == 1:
        agree(
            node,
            ctx,
            roi.shape[0],
            roi.origin(0),
            Expr.const(2 * len(axes)),
            None,
            f"roi {dims_text(roi.shape)} holds a start and an end for each of the {len(axes)} axes",
            axis=0,
        )


def _resized_to_sizes(node: Node, ctx: Ctx, x: Value, sizes: Value, axes: list[int]) -> Value:
    """Resize to ``sizes``: each size as given (``stretch``), or, keeping the aspect ratio, the one scale
    that fits the sizes (``not_larger``) or covers them (``not_smaller``) applied as onnxruntime does."""
    assert x.shape is not None
    out = list(x.shape)
    origins: list[Origin | None] = origins_of(x)
    ints = sizes.ints
    if ints is None or len(ints) != len(axes):
        for a in axes:
            out[a], origins[a] = fresh_dim(node, ctx, a), None
        return new_value(x.dtype, out, origins)
    for j, e in enumerate(ints):
        if e.value is not None and e.value < 0:
            raise ShapeError(
                f"{op_label(node)}: sizes holds {e.value}",
                dims=(e,),
                kind="invalid",
                suspects=[Suspect(o, e.value) for o in [sizes.data_origin(j)] if o is not None],
            )
    policy = str(node.attrs.get("keep_aspect_ratio_policy", "stretch"))
    if policy == "stretch":
        for j, a in enumerate(axes):
            out[a], origins[a] = ints[j], sizes.data_origin(j)
        return new_value(x.dtype, out, origins)
    ins_v = [x.shape[a].value for a in axes]
    want_v = [e.value for e in ints]
    if any(v is None or v == 0 for v in ins_v) or any(v is None for v in want_v):
        for a in axes:
            out[a], origins[a] = fresh_dim(node, ctx, a), None
        return new_value(x.dtype, out, origins)
    ratios = [float(np.float32(w) / np.float32(i)) for w, i in zip(want_v, ins_v, strict=True)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, i in zip(axes, ins_v, strict=True):
        out[a], origins[a] = Expr.const(math.floor(_f32_times(scale, int(i or 0)) + 0.5)), None
    return new_value(x.dtype, out, origins)


def _scaled(node: Node, ctx: Ctx, size: Expr, scale: Any, axis: int) -> Expr:
    """``floor(size * scale)`` as onnxruntime computes it (in single precision): exact on a static size,
    ``floor(size*p/q)`` for a scale that is ``p/q`` at every size (2.0: ``2*size``, 0.5: ``floor(size/2)``),
    else a fresh symbol."""
    if scale is None or isinstance(scale, Ratio):  # a factor computed from a symbol: not a known number
        return fresh_dim(node, ctx, axis)
    s = float(scale.value) if isinstance(scale, Expr) and scale.value is not None else scale
    if not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
        raise ShapeError(f"{op_label(node)}: the scale {scale} for axis {axis} is not a size factor", kind="invalid")
    v = size.value
    if v is not None:
        return Expr.const(int(_f32_times(s, v)))
    if float(s).is_integer():
        return size * int(s)
    f32 = np.float32(s)
    pq = rational_scale(float(s), lambda n: (f32 * n.astype(np.float32)).astype(np.int64))
    if pq is not None:
        return (size * pq[0]) // pq[1]
    return fresh_dim(node, ctx, axis)


@register("Pad")
def _pad(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    pads_v: Value | None
    if "pads" in node.attrs or "paddings" in node.attrs:  # opset < 11
        raw = attr_ints(node, "pads") or attr_ints(node, "paddings") or []
        pads: list[Expr] | None = [Expr.const(p) for p in raw]
        pads_v = None
        axes: list[int] | None = list(range(r))
    else:
        pads_v = input_value(ins, 1)
        pads = pads_v.ints if pads_v is not None else None
        av = input_value(ins, 3)
        if av is None:
            axes = list(range(r))
        else:
            c = av.consts
            axes = None if c is None else [axis_of(node, a, r) for a in c]
    out = list(x.shape)
    origins = origins_of(x)
    if pads is None and axes is not None and pads_v is not None:
        part = _partial_pads(ctx, node.inputs[1], 2 * len(axes))
        if part is not None:
            return [_partly_padded(node, ctx, x, axes, part)]
    if pads is None or axes is None:
        for a in axes if axes is not None else range(r):
            out[a], origins[a] = fresh_dim(node, ctx, a), None
        return [new_value(x.dtype, out, origins)]
    if len(pads) != 2 * len(axes):
        o = pads_v.origin(0) if pads_v is not None else None
        raise ShapeError(
            f"{op_label(node)}: pads holds {len(pads)} values for the {len(axes)} axes padded of "
            f"{dims_text(x.shape)} (it needs {2 * len(axes)})",
            dims=(len(pads), 2 * len(axes)),
            suspects=[Suspect(o, len(pads))] if o is not None else (),
            kind="shape-mismatch",
        )
    n = len(axes)
    for j, a in enumerate(axes):
        d = x.shape[a] + pads[j] + pads[j + n]
        if d.value is not None and d.value < 0:
            po = [pads_v.data_origin(k) for k in (j, j + n)] if pads_v is not None else []
            raise ShapeError(
                f"{op_label(node)}: axis {a} of {dims_text(x.shape)} padded by {pads[j]} and {pads[j + n]} gives {d}",
                axis=a,
                dims=(x.shape[a], d),
                suspects=[*suspects_of((x.origin(a), x.shape[a])), *(Suspect(o) for o in po if o is not None)],
            )
        if d.value is None and (d.lo is None or d.lo < 0):
            # a crop (negative pads) of a symbolic axis: onnxruntime fails where it would leave fewer than no rows
            # ("Tensor shape.Size() must be >= 0"), so the axis has a least size, or fails where said
            po = [pads_v.data_origin(k) for k in (j, j + n)] if pads_v is not None else []
            window_fits(
                node,
                ctx,
                f"axis {a} of {dims_text(x.shape)} padded by {pads[j]} and {pads[j + n]}",
                d,
                Expr.const(0),
                a,
                [*suspects_of((x.origin(a), x.shape[a])), *(Suspect(o) for o in po if o is not None)],
            )
        if d != x.shape[a]:
            out[a], origins[a] = d, None
    return [new_value(x.dtype, out, origins)]


def _partly_padded(node: Node, ctx: Ctx, x: Value, axes: list[int], pads: list[Expr | None]) -> Value:
    """Pad's output where only some pads are known: an axis whose two pads are known is padded by them, the
    others get fresh dims."""
    assert x.shape is not None
    out, origins = list(x.shape), origins_of(x)
    n = len(axes)
    for j, a in enumerate(axes):
        begin, end = pads[j], pads[j + n]
        d = x.shape[a] + begin + end if begin is not None and end is not None else None
        if d is None or (d.value is not None and d.value < 0):
            out[a], origins[a] = fresh_dim(node, ctx, a), None
        elif d != x.shape[a]:
            out[a], origins[a] = d, None
    return new_value(x.dtype, out, origins)


def _partial_pads(ctx: Ctx, name: str, n: int) -> list[Expr | None] | None:
    """The elements of a pads tensor whose value propagation does not know as a whole but which a Concat
    assembles from parts, some known (the zeros for the batch and channel axes beside a computed padding of
    the image's): each known element, ``None`` for the others; ``None`` when not ``n`` elements so made."""
    producer = ctx.producer(name)
    while producer is not None and producer.op in ("Cast", "Identity") and producer.inputs:
        if producer.op == "Cast" and dtype_name(int(producer.attrs.get("to", 1))) not in _INT_TYPES:
            return None
        producer = ctx.producer(producer.inputs[0])
    if producer is None or producer.op != "Concat" or ctx.values is None:
        return None
    got: list[Expr | None] = []
    for i in producer.inputs:
        v = ctx.values.get(i)
        if v is None or v.shape is None or len(v.shape) != 1:
            return None
        if v.data is not None:
            got.extend(_int_element(e) for e in v.data)
            continue
        k = v.shape[0].value
        if k is None:
            return None
        got.extend([None] * k)
    return got if len(got) == n else None


_INT_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


def _int_element(e: Any) -> Expr | None:
    """An element of a small value as an integer expression, when it is one exactly."""
    if isinstance(e, Expr):
        return e
    if isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) and float(e).is_integer():
        return Expr.const(int(e))
    return None


@register("DepthToSpace", "SpaceToDepth")
def _depth_space(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    if not _rank_is(node, x, 4, "the input"):
        return [Value(x.dtype, None)]
    assert x.shape is not None
    b = attr_int(node, "blocksize", 0)
    if b <= 0:
        raise ShapeError(f"{op_label(node)}: blocksize {b} must be positive", kind="invalid")
    n, c, h, w = x.shape
    if node.op == "DepthToSpace":
        cv = c.value
        if cv is not None and cv % (b * b):
            raise ShapeError(
                f"{op_label(node)}: {c} channels of {dims_text(x.shape)} do not split into blocks of {b}x{b}",
                axis=1,
                dims=(c, b * b),
                suspects=suspects_of((x.origin(1), c)),
            )
        return [new_value(x.dtype, (n, c // (b * b), h * b, w * b), (x.origin(0), None, None, None))]
    for k, d in ((2, h), (3, w)):
        if d.value is not None and d.value % b:
            raise ShapeError(
                f"{op_label(node)}: axis {k} of {dims_text(x.shape)} ({d}) is not a multiple of blocksize {b}",
                axis=k,
                dims=(d, b),
                suspects=suspects_of((x.origin(k), d)),
            )
    return [new_value(x.dtype, (n, c * (b * b), h // b, w // b), (x.origin(0), None, None, None))]


# -- Einsum ----------------------------------------------------------------------------------------


def _einsum_terms(node: Node, equation: str, n_in: int) -> tuple[list[str], str | None]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_in:
        raise ShapeError(
            f"{op_label(node)}: the equation {equation!r} has {len(terms)} operands, the node {n_in}", kind="invalid"
        )
    for t in [*terms, rhs]:
        body = t.replace("...", "", 1)
        if not all(ch.isascii() and ch.isalpha() for ch in body):
            raise ShapeError(
                f"{op_label(node)}: the equation {equation!r} holds {t!r}: subscripts are letters and one '...'",
                kind="invalid",
            )
    return terms, (rhs if arrow else None)


#: what Einsum's operands say of one letter: its dim, that dim's origin, the operand and the axis it was read at
_Letter = tuple[Expr, Origin | None, int, int]


@register("Einsum")
def _einsum(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    vals = [known(v) for v in ins]
    dtype = vals[0].dtype if vals else None
    equation = str(node.attrs.get("equation", ""))
    terms, rhs = _einsum_terms(node, equation, len(vals))
    letters: dict[str, _Letter] = {}
    counts: dict[str, int] = {}
    ellipses: list[Value] = []
    ell_names: list[str] = []
    unknown = False
    for i, (term, v) in enumerate(zip(terms, vals, strict=True)):
        subs = term.replace("...", "")
        for ch in subs:
            counts[ch] = counts.get(ch, 0) + 1
        if v.shape is None:
            unknown = True
            continue
        ell = _einsum_operand(node, ctx, equation, vals, i, term, letters)
        if ell is not None:
            ellipses.append(ell)
            ell_names.append(node.inputs[i])
    has_ellipsis = any("..." in t for t in terms)
    if unknown and has_ellipsis:
        return [Value(dtype, None)]
    ell_dims, ell_o = _einsum_ellipsis(node, ctx, ellipses, ell_names)
    if rhs is None:
        out_letters = "".join(sorted(ch for ch, n in counts.items() if n == 1))
        rhs = ("..." if has_ellipsis else "") + out_letters
    if "..." in rhs and not has_ellipsis:
        raise ShapeError(
            f"{op_label(node)}: the output {rhs!r} of {equation!r} has '...', no operand does", kind="invalid"
        )
    return [_einsum_output(node, ctx, dtype, equation, rhs, counts, letters, ell_dims, ell_o)]


def _einsum_operand(
    node: Node, ctx: Ctx, equation: str, vals: list[Value], i: int, term: str, letters: dict[str, _Letter]
) -> Value | None:
    """Operand ``i`` (of known shape) against its term: its rank must fit the term, and each letter's dim
    must agree with the one an earlier operand gave it (or be 1), which ``letters`` records. The dims the
    term's ``...`` stands for, if it has one."""
    v = vals[i]
    assert v.shape is not None
    subs = term.replace("...", "")
    has_ell = "..." in term
    n_ell = len(v.shape) - len(subs)
    if n_ell < 0 or (n_ell and not has_ell):
        raise ShapeError(
            f"{op_label(node)}: operand {i} ({node.inputs[i]} {dims_text(v.shape)}) has rank {len(v.shape)}, "
            f"the equation's term {term!r} {len(subs)}{' or more' if has_ell else ''}",
            suspects=[Suspect(o) for o in origins_of(v) if o is not None][:4],
            kind="einsum-letters",
        )
    start = term.index("...") if has_ell else len(subs)
    for j, ch in enumerate(subs):
        axis = j if j < start else j + n_ell
        d, o = v.shape[axis], v.origin(axis)
        prev = letters.get(ch)
        if prev is None or prev[0].value == 1:
            letters[ch] = (d, o, i, axis)
            if prev is None:
                continue
        pd, po, pi, pa = prev
        agree(
            node,
            ctx,
            pd,
            po,
            d,
            o,
            f"the letter {ch!r} of {equation!r} is {pd} at axis {pa} of operand {pi} ({dims_text(vals[pi].shape)}) "
            f"and {d} at axis {axis} of operand {i} ({dims_text(v.shape)})",
            axis=axis,
            ones=True,
            kind="einsum-letters",
        )
    if not has_ell:
        return None
    return Value(v.dtype, v.shape[start : start + n_ell], None, tuple(origins_of(v)[start : start + n_ell]))


def _einsum_ellipsis(node: Node, ctx: Ctx, ellipses: list[Value], names: list[str]) -> tuple[Dims, Origins]:
    """The dims ``...`` stands for in the output: the operands' ``...`` dims broadcast together (fresh
    dims where they cannot), or the longest of them when only one is not empty."""
    if len([e for e in ellipses if e.shape]) > 1:
        got = ctx.broadcast(node, ellipses, "ONNX Einsum '...' dims (multidirectional)", names=names)
        if got is None:
            rank = max(len(e.shape or ()) for e in ellipses)
            got = tuple(fresh_dim(node, ctx, f"ell{k}") for k in range(rank))
        return got, (None,) * len(got)
    if ellipses:
        best = max(ellipses, key=lambda e: len(e.shape or ()))
        return best.shape or (), best.origins or ()
    return (), ()


def _einsum_output(
    node: Node,
    ctx: Ctx,
    dtype: str | None,
    equation: str,
    rhs: str,
    counts: dict[str, int],
    letters: dict[str, _Letter],
    ell: Dims,
    ell_o: Origins,
) -> Value:
    """The output term ``rhs`` as dims: each letter's (once, and only a letter some operand has), the
    ``...`` dims where it stands."""
    head, _, tail = rhs.partition("...")
    seen: set[str] = set()
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    for ch in head + tail:
        if ch in seen or ch not in counts:
            what = "repeats" if ch in seen else "names a letter no operand has:"
            raise ShapeError(f"{op_label(node)}: the output {rhs!r} of {equation!r} {what} {ch!r}", kind="invalid")
        seen.add(ch)
        got_l = letters.get(ch)
        dims.append(got_l[0] if got_l is not None else fresh_dim(node, ctx, ch))
        origins.append(got_l[1] if got_l is not None else None)
    if "..." in rhs:
        dims[len(head) : len(head)] = list(ell)
        origins[len(head) : len(head)] = list(ell_o)
    return new_value(dtype, dims, origins)


# -- boxes and sequences ---------------------------------------------------------------------------


@register("NonMaxSuppression")
def _nms(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    boxes, scores = known(input_value(ins, 0)), known(input_value(ins, 1))
    if _rank_is(node, boxes, 3, "boxes") and _rank_is(node, scores, 3, "scores"):
        assert boxes.shape is not None and scores.shape is not None
        agree(
            node,
            ctx,
            boxes.shape[0],
            boxes.origin(0),
            scores.shape[0],
            scores.origin(0),
            f"boxes {dims_text(boxes.shape)} and scores {dims_text(scores.shape)} differ in batches",
            axis=0,
        )
        agree(
            node,
            ctx,
            boxes.shape[1],
            boxes.origin(1),
            scores.shape[2],
            scores.origin(2),
            f"boxes {dims_text(boxes.shape)} and scores {dims_text(scores.shape)} differ in boxes",
            axis=1,
        )
        agree(
            node,
            ctx,
            boxes.shape[2],
            boxes.origin(2),
            Expr.const(4),
            None,
            f"boxes {dims_text(boxes.shape)} must hold 4 coordinates",
            axis=2,
        )
    return [new_value("int64", (ctx.fresh(f"{node.name}_selected", free=True), Expr.const(3)))]


@register("ReverseSequence")
def _reverse_sequence(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, lens = known(input_value(ins, 0)), known(input_value(ins, 1))
    if x.shape is not None:
        _rank_at_least(node, x, 2, "the input")
        r = len(x.shape)
        b = axis_of(node, attr_int(node, "batch_axis", 1), r, "batch_axis")
        t = axis_of(node, attr_int(node, "time_axis", 0), r, "time_axis")
        if b == t or b > 1 or t > 1:
            raise ShapeError(f"{op_label(node)}: batch_axis {b} and time_axis {t} must be 0 and 1", kind="invalid")
        if _rank_is(node, lens, 1, "sequence_lens"):
            assert lens.shape is not None
            agree(
                node,
                ctx,
                lens.shape[0],
                lens.origin(0),
                x.shape[b],
                x.origin(b),
                f"sequence_lens {dims_text(lens.shape)} against the batch axis {b} of {dims_text(x.shape)}",
                axis=b,
            )
    return [same_as(x)]


@register("CumSum")
def _cumsum(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, a = known(input_value(ins, 0)), input_value(ins, 1)
    if a is not None and a.shape is not None and len(a.shape) > 1:
        raise ShapeError(f"{op_label(node)}: axis is {dims_text(a.shape)}; it must be a scalar", kind="invalid")
    k = _int_of(scalar_of(a))
    if x.shape is not None and k is not None:
        axis_of(node, k, len(x.shape))
    return [same_as(x)]


@register("Trilu")
def _trilu(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(input_value(ins, 0))
    _rank_at_least(node, x, 2, "the input")
    return [same_as(x)]


# -- images --------------------------------------------------------------------------------------


@register("GridSample")
def _grid_sample(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, grid = known(input_value(ins, 0)), known(input_value(ins, 1))
    _rank_at_least(node, x, 3, "the input X")
    _rank_at_least(node, grid, 3, "the grid")
    if x.shape is None or grid.shape is None:
        r = x.rank if x.rank is not None else grid.rank
        return [Value(x.dtype, None if r is None else tuple(fresh_dim(node, ctx, k) for k in range(r)))]
    if len(x.shape) != len(grid.shape):
        raise ShapeError(
            f"{op_label(node)}: X {dims_text(x.shape)} and the grid {dims_text(grid.shape)} differ in rank",
            suspects=[Suspect(o) for o in origins_of(grid) if o is not None][:4],
            kind="shape-mismatch",
        )
    n = len(x.shape) - 2
    agree(
        node,
        ctx,
        x.shape[0],
        x.origin(0),
        grid.shape[0],
        grid.origin(0),
        f"X {dims_text(x.shape)} and the grid {dims_text(grid.shape)} differ in batch",
        axis=0,
    )
    agree(
        node,
        ctx,
        grid.shape[-1],
        grid.origin(-1),
        Expr.const(n),
        None,
        f"the grid {dims_text(grid.shape)} must hold {n} coordinates for the {n} spatial axes of X "
        f"{dims_text(x.shape)}",
        axis=len(grid.shape) - 1,
    )
    return [
        new_value(
            x.dtype, (x.shape[0], x.shape[1], *grid.shape[1:-1]), (x.origin(0), x.origin(1), *origins_of(grid)[1:-1])
        )
    ]


@register("RoiAlign")
def _roi_align(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, rois, bi = known(input_value(ins, 0)), known(input_value(ins, 1)), known(input_value(ins, 2))
    oh, ow = Expr.const(attr_int(node, "output_height", 1)), Expr.const(attr_int(node, "output_width", 1))
    c = x.shape[1] if _rank_is(node, x, 4, "the input X") and x.shape is not None else fresh_dim(node, ctx, 1)
    oc = x.origin(1) if x.shape is not None else None
    n: Expr | None = None
    on: Origin | None = None
    if _rank_is(node, rois, 2, "rois"):
        assert rois.shape is not None
        n, on = rois.shape[0], rois.origin(0)
        agree(
            node,
            ctx,
            rois.shape[1],
            rois.origin(1),
            Expr.const(4),
            None,
            f"rois {dims_text(rois.shape)} must hold 4 coordinates",
            axis=1,
        )
    if _rank_is(node, bi, 1, "batch_indices"):
        assert bi.shape is not None
        if n is None:
            n, on = bi.shape[0], bi.origin(0)
        else:
            agree(
                node,
                ctx,
                bi.shape[0],
                bi.origin(0),
                n,
                on,
                f"batch_indices {dims_text(bi.shape)} against the rois {dims_text(rois.shape)}",
                axis=0,
            )
    return [new_value(x.dtype, (n if n is not None else fresh_dim(node, ctx, 0), c, oh, ow), (on, oc, None, None))]


@register("Col2Im")
def _col2im(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, image, block = known(input_value(ins, 0)), input_value(ins, 1), input_value(ins, 2)
    img = image.ints if image is not None else None
    blk = block.ints if block is not None else None
    if not _rank_is(node, x, 3, "the input") or img is None or blk is None:
        n = len(img) if img is not None else len(blk) if blk is not None else None
        if n is None:
            return [Value(x.dtype, None)]
        return [
            new_value(
                x.dtype,
                (
                    *(fresh_dim(node, ctx, k) for k in range(2)),
                    *(img or [fresh_dim(node, ctx, 2 + k) for k in range(n)]),
                ),
            )
        ]
    assert x.shape is not None
    n = len(img)
    if len(blk) != n:
        raise ShapeError(
            f"{op_label(node)}: image_shape {dims_text(img)} and block_shape {dims_text(blk)} differ in length",
            kind="invalid",
        )
    strides, dilations, pb, pe = _window_attrs(node, n)
    prod = numel(tuple(blk))
    cv, pv = x.shape[1].value, prod.value
    if cv is not None and pv is not None and pv and cv % pv:
        raise ShapeError(
            f"{op_label(node)}: axis 1 of the input {dims_text(x.shape)} ({cv}) is not a multiple of the block "
            f"{dims_text(blk)} ({pv})",
            axis=1,
            dims=(cv, pv),
            suspects=suspects_of((x.origin(1), x.shape[1])),
        )
    blocks = Expr.const(1)
    for i in range(n):
        got = window_size(img[i], blk[i], strides[i], dilations[i], pb[i], pe[i])
        blocks = blocks * (got if got is not None else fresh_dim(node, ctx, f"L{i}"))
    agree(
        node,
        ctx,
        x.shape[2],
        x.origin(2),
        blocks,
        None,
        f"axis 2 of the input {dims_text(x.shape)} against the {blocks} sliding blocks of image_shape "
        f"{dims_text(img)} and "
        f"block_shape {dims_text(blk)}",
        axis=2,
    )
    c = x.shape[1] // prod if pv != 0 else fresh_dim(node, ctx, 1)
    return [
        new_value(
            x.dtype,
            (x.shape[0], c, *img),
            (x.origin(0), None, *(image.data_origin(k) if image else None for k in range(n))),
        )
    ]


# -- quantization --------------------------------------------------------------------------------


def _per_tensor(dims: Sequence[Expr]) -> bool:
    """Whether a quantization parameter of ``dims`` is one value for the whole tensor: a scalar or a 1-element
    vector, which onnxruntime takes interchangeably (its ``IsScalarOr1ElementVector``)."""
    return not dims or (len(dims) == 1 and dims[0].value == 1)


def _zero_point(node: Node, ctx: Ctx, scale: Value, zp: Value) -> None:
    """The zero point against the scale: one value where the scale is one (a scalar and a 1-element vector
    are interchangeable: onnxruntime's quantizer writes a bias's scale as ``[1]`` and its zero point as a
    scalar), else the scale's shape."""
    assert scale.shape is not None and zp.shape is not None
    sus = [Suspect(o) for o in origins_of(zp) if o is not None][:4]
    if _per_tensor(scale.shape):
        if len(zp.shape) > 1 or (zp.shape and zp.shape[0].eq(1) is Tri.NO):
            raise ShapeError(
                f"{op_label(node)}: the zero point {dims_text(zp.shape)} of the per-tensor scale "
                f"{dims_text(scale.shape)} must be a scalar or hold one value",
                suspects=sus,
                kind="shape-mismatch",
            )
        if zp.shape:
            agree(node, ctx, zp.shape[0], zp.origin(0), Expr.const(1), None, "the per-tensor zero point's length")
        return
    if len(zp.shape) != len(scale.shape):
        raise ShapeError(
            f"{op_label(node)}: the zero point {dims_text(zp.shape)} and the scale {dims_text(scale.shape)} "
            "differ in shape",
            suspects=sus,
            kind="shape-mismatch",
        )
    for k, (a, b) in enumerate(zip(zp.shape, scale.shape, strict=True)):
        agree(
            node,
            ctx,
            a,
            zp.origin(k),
            b,
            scale.origin(k),
            f"the zero point {dims_text(zp.shape)} and the scale {dims_text(scale.shape)} must have one shape",
            axis=k,
        )


def _quant_params(node: Node, ctx: Ctx, x: Value, scale: Value | None, zp: Value | None) -> None:
    """The scale is a scalar or holds one value (per tensor), is 1-D of x's ``axis`` dim (per axis) or x's
    shape with ``axis`` divided into blocks of ``block_size``; the zero point, when given, is one value with
    a per-tensor scale and has the scale's shape otherwise."""
    if scale is None or scale.shape is None:
        return
    if zp is not None and zp.shape is not None:
        _zero_point(node, ctx, scale, zp)
    if x.shape is None or _per_tensor(scale.shape):
        return
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", 1), r)
    block = attr_int(node, "block_size", 0)
    if block <= 0:
        if len(scale.shape) != 1:
            raise ShapeError(
                f"{op_label(node)}: the scale {dims_text(scale.shape)} must be a scalar or 1-D (no block_size)",
                suspects=[Suspect(o) for o in origins_of(scale) if o is not None][:4],
                kind="shape-mismatch",
            )
        agree(
            node,
            ctx,
            scale.shape[0],
            scale.origin(0),
            x.shape[axis],
            x.origin(axis),
            f"the per-axis scale {dims_text(scale.shape)} against axis {axis} of {dims_text(x.shape)}",
            axis=axis,
        )
        return
    if len(scale.shape) != r:
        raise ShapeError(
            f"{op_label(node)}: the blocked scale {dims_text(scale.shape)} and the input {dims_text(x.shape)} differ "
            "in rank",
            suspects=[Suspect(o) for o in origins_of(scale) if o is not None][:4],
            kind="shape-mismatch",
        )
    for k in range(r):
        want = x.shape[k].ceildiv(block) if k == axis else x.shape[k]
        agree(
            node,
            ctx,
            scale.shape[k],
            scale.origin(k),
            want,
            x.origin(k),
            f"the blocked scale {dims_text(scale.shape)} against the input {dims_text(x.shape)} in blocks of {block} "
            f"on axis {axis}",
            axis=k,
        )


@register("QuantizeLinear")
def _quantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, scale, zp = known(input_value(ins, 0)), input_value(ins, 1), input_value(ins, 2)
    _quant_params(node, ctx, x, scale, zp)
    if zp is not None and zp.dtype is not None:
        dtype: str | None = zp.dtype
    elif "output_dtype" in node.attrs and attr_int(node, "output_dtype", 0):
        dtype = dtype_name(attr_int(node, "output_dtype", 0))
    else:
        dtype = "uint8"
    return [same_as(x, dtype)]


@register("DequantizeLinear")
def _dequantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, scale, zp = known(input_value(ins, 0)), input_value(ins, 1), input_value(ins, 2)
    _quant_params(node, ctx, x, scale, zp)
    return [same_as(x, scale.dtype if scale is not None and scale.dtype else "float32")]


@register("DynamicQuantizeLinear")
def _dynamic_quantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return [same_as(input_value(ins, 0), "uint8"), Value("float32", ()), Value("uint8", ())]


# -- attention -------------------------------------------------------------------------------------


def _heads(node: Node, ctx: Ctx, hidden: Expr, oh: Origin | None, heads: int, what: str) -> Expr:
    """``hidden / heads`` (one head's size); a :class:`ShapeError` when ``hidden`` is known not to divide."""
    if heads <= 0:
        raise ShapeError(f"{op_label(node)}: {heads} heads", kind="invalid")
    hv = hidden.value
    if hv is not None and hv % heads:
        raise ShapeError(
            f"{op_label(node)}: {what} {hidden} is not a multiple of {heads} heads",
            dims=(hidden, heads),
            suspects=suspects_of((oh, hidden)),
            kind="attention-contract",
        )
    return hidden // heads


def _same_batch(node: Node, ctx: Ctx, vals: Sequence[tuple[str, Value | None]]) -> None:
    first: tuple[str, Value] | None = None
    for what, v in vals:
        if v is None or v.shape is None or not v.shape:
            continue
        if first is None:
            first = (what, v)
            continue
        fv = first[1]
        assert fv.shape is not None
        agree(
            node,
            ctx,
            v.shape[0],
            v.origin(0),
            fv.shape[0],
            fv.origin(0),
            f"{what} {dims_text(v.shape)} and {first[0]} {dims_text(fv.shape)} differ in batch",
            axis=0,
            kind="attention-contract",
        )


class _AttentionDims(NamedTuple):
    """Attention's dims as Q, K and V give them (from their 4-D or their 3-D layout)."""

    b: Expr  # batch
    hq: Expr  # query heads
    sq: Expr  # query length
    e: Expr  # Q's head size
    hkv: Expr  # key/value heads
    skv: Expr  # key/value length
    ek: Expr  # K's head size
    ev: Expr  # V's head size
    o_hkv: Origin | None  # where the key/value heads were made (none: an attribute)
    o_e: Origin | None  # where Q's head size was made


def _attention_4d(node: Node, ctx: Ctx, q: Value, k: Value, v: Value) -> _AttentionDims:
    """Q, K, V as ``[B, heads, S, head]``: K and V must agree in heads."""
    assert q.shape is not None and k.shape is not None and v.shape is not None
    for name, t in (("K", k), ("V", v)):
        _rank_is(node, t, 4, name)
    b, hq, sq, e = q.shape
    agree(
        node,
        ctx,
        k.shape[1],
        k.origin(1),
        v.shape[1],
        v.origin(1),
        f"K {dims_text(k.shape)} and V {dims_text(v.shape)} differ in heads",
        axis=1,
        kind="attention-contract",
    )
    return _AttentionDims(b, hq, sq, e, k.shape[1], k.shape[2], k.shape[3], v.shape[3], k.origin(1), q.origin(3))


def _attention_3d(node: Node, ctx: Ctx, q: Value, k: Value, v: Value) -> _AttentionDims:
    """Q, K, V as ``[B, S, heads*head]``: the heads are attributes, each hidden size must divide by them."""
    assert q.shape is not None and k.shape is not None and v.shape is not None
    _rank_is(node, q, 3, "Q")
    for name, t in (("K", k), ("V", v)):
        _rank_is(node, t, 3, name)
    nq, nkv = attr_int(node, "q_num_heads", 0), attr_int(node, "kv_num_heads", 0)
    b, sq = q.shape[0], q.shape[1]
    hq, hkv = Expr.const(nq), Expr.const(nkv)
    e = _heads(node, ctx, q.shape[2], q.origin(2), nq, "Q's hidden size")
    ek = _heads(node, ctx, k.shape[2], k.origin(2), nkv, "K's hidden size")
    ev = _heads(node, ctx, v.shape[2], v.origin(2), nkv, "V's hidden size")
    return _AttentionDims(b, hq, sq, e, hkv, k.shape[1], ek, ev, None, q.origin(2))


def _attention_past(node: Node, ctx: Ctx, pk: Value | None, pv: Value | None, a: _AttentionDims) -> Expr:
    """The past key and value (``[B, kv heads, past, head]``) against K's and V's heads and head sizes; the
    past length (0 without a past key)."""
    for name, pt, last in (("past_key", pk, a.ek), ("past_value", pv, a.ev)):
        if pt is None or not _rank_is(node, pt, 4, name):
            continue
        assert pt.shape is not None
        agree(
            node,
            ctx,
            pt.shape[1],
            pt.origin(1),
            a.hkv,
            a.o_hkv,
            f"{name} {dims_text(pt.shape)} against {a.hkv} kv heads",
            axis=1,
            kind="attention-contract",
        )
        agree(
            node,
            ctx,
            pt.shape[3],
            pt.origin(3),
            last,
            None,
            f"{name} {dims_text(pt.shape)} against head size {last}",
            axis=3,
            kind="attention-contract",
        )
    if pk is not None and pk.shape is not None and len(pk.shape) == 4:
        return pk.shape[2]
    return Expr.const(0)


def _attention_mask(node: Node, ctx: Ctx, mask: Value, a: _AttentionDims, total: Expr) -> None:
    """The mask broadcasts (numpy, one way) to ``[B, heads, S, total]``; since opset 24 it may be shorter than
    the keys (it is padded with -inf to the total length)."""
    last = total
    if ctx.opset(node.domain) >= 24 and mask.shape:
        m_last = mask.shape[-1]
        longer = (m_last - total).value
        if longer is None or longer <= 0:
            last = m_last
    ctx.broadcast_into(
        node,
        mask,
        (a.b, a.hq, a.sq, last),
        "ONNX Attention (attn_mask to [B, heads, S, total])",
        mode="numpy",
        names=[node.inputs[3], node.inputs[0]],
    )


@register("Attention")
def _attention(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """ONNX Attention (opset 23): Q, K, V as 4-D ``[B, heads, S, head]`` or 3-D ``[B, S, heads*head]``."""
    q, k, v = known(input_value(ins, 0)), known(input_value(ins, 1)), known(input_value(ins, 2))
    mask, pk, pv = input_value(ins, 3), input_value(ins, 4), input_value(ins, 5)
    n_out = len(node.outputs)
    if q.shape is None or k.shape is None or v.shape is None:
        return _unknown(n_out, q.dtype)
    _same_batch(node, ctx, [("Q", q), ("K", k), ("V", v), ("past_key", pk), ("past_value", pv)])
    a = _attention_4d(node, ctx, q, k, v) if len(q.shape) == 4 else _attention_3d(node, ctx, q, k, v)
    kv_axis = 2 if len(q.shape) == 4 else 1
    agree(
        node,
        ctx,
        k.shape[kv_axis],
        k.origin(kv_axis),
        v.shape[kv_axis],
        v.origin(kv_axis),
        f"K {dims_text(k.shape)} and V {dims_text(v.shape)} differ in sequence length",
        axis=kv_axis,
        kind="attention-contract",
    )
    agree(
        node,
        ctx,
        a.ek,
        k.origin(-1),
        a.e,
        a.o_e,
        f"Q {dims_text(q.shape)} and K {dims_text(k.shape)} differ in head size",
        kind="attention-contract",
    )
    hqv, hkvv = a.hq.value, a.hkv.value
    if hqv is not None and hkvv is not None and hkvv and hqv % hkvv:
        raise ShapeError(
            f"{op_label(node)}: {hqv} query heads are not a multiple of {hkvv} key/value heads",
            dims=(a.hq, a.hkv),
            suspects=suspects_of((q.origin(1), a.hq), (a.o_hkv, a.hkv)),
            kind="attention-contract",
        )
    total = _attention_past(node, ctx, pk, pv, a) + a.skv
    if mask is not None:
        _attention_mask(node, ctx, mask, a, total)
    b, hq, sq, ev = a.b, a.hq, a.sq, a.ev
    y = (b, hq, sq, ev) if len(q.shape) == 4 else (b, sq, hq * ev)
    outs = [
        new_value(q.dtype, y),
        new_value(k.dtype, (b, a.hkv, total, a.ek)),
        new_value(v.dtype, (b, a.hkv, total, ev)),
        new_value(q.dtype, (b, hq, sq, total)),
    ]
    return outs[: max(n_out, 1)]


@register("com.microsoft:Attention")
def _ms_attention(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft Attention: ``input [B, S, D] @ weights [D, q+k+v] + bias``, ``num_heads`` heads; the
    present state is ``[2, B, heads, past + S, head]``."""
    x, w, bias, past = known(input_value(ins, 0)), known(input_value(ins, 1)), input_value(ins, 2), input_value(ins, 4)
    n_out = len(node.outputs)
    heads = attr_int(node, "num_heads", 0)
    if not _rank_is(node, x, 3, "the input") or not _rank_is(node, w, 2, "the weights"):
        return _unknown(n_out, x.dtype)
    assert x.shape is not None and w.shape is not None
    b, s, d = x.shape
    agree(
        node,
        ctx,
        w.shape[0],
        w.origin(0),
        d,
        x.origin(2),
        f"the weights {dims_text(w.shape)} against the input {dims_text(x.shape)}'s hidden size",
        axis=2,
        kind="attention-contract",
    )
    sizes = attr_ints(node, "qkv_hidden_sizes")
    if sizes is not None:
        if len(sizes) != 3:
            raise ShapeError(f"{op_label(node)}: qkv_hidden_sizes {sizes} must hold 3 sizes", kind="invalid")
        agree(
            node,
            ctx,
            w.shape[1],
            w.origin(1),
            Expr.const(sum(sizes)),
            None,
            f"the weights {dims_text(w.shape)} against qkv_hidden_sizes {sizes}",
            axis=1,
            kind="attention-contract",
        )
        hk, hv = Expr.const(sizes[1]), Expr.const(sizes[2])
    else:
        wv = w.shape[1].value
        if wv is not None and wv % 3:
            raise ShapeError(
                f"{op_label(node)}: the weights {dims_text(w.shape)} do not split into Q, K and V",
                dims=(w.shape[1],),
                suspects=suspects_of((w.origin(1), w.shape[1])),
                kind="attention-contract",
            )
        hk = hv = w.shape[1] // 3
    if bias is not None and _rank_is(node, bias, 1, "the bias"):
        assert bias.shape is not None
        agree(
            node,
            ctx,
            bias.shape[0],
            bias.origin(0),
            w.shape[1],
            w.origin(1),
            f"the bias {dims_text(bias.shape)} against the weights {dims_text(w.shape)}",
            axis=0,
            kind="attention-contract",
        )
    head = _heads(node, ctx, hk, None, heads, "the key hidden size")
    _heads(node, ctx, hv, None, heads, "the value hidden size")
    out = new_value(x.dtype, (b, s, hv), (x.origin(0), x.origin(1), None))
    if past is not None and _rank_is(node, past, 5, "past"):
        assert past.shape is not None
        if attr_int(node, "past_present_share_buffer", 0):
            return [out, same_as(past)][: max(n_out, 1)]
        present: Dims = (Expr.const(2), b, Expr.const(heads), past.shape[3] + s, head)
    else:
        present = (Expr.const(2), b, Expr.const(heads), s, head)
    return [out, new_value(x.dtype, present)][: max(n_out, 1)]


@register("MultiHeadAttention")
def _mha(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft MultiHeadAttention: query ``[B, S, D]`` (or packed ``[B, S, N, 3, H]``), key and value
    ``[B, L, D]``, ``[B, N, L, H]`` (no past) or packed ``[B, L, N, 2, H]``."""
    q, k, v = known(input_value(ins, 0)), input_value(ins, 1), input_value(ins, 2)
    pk = input_value(ins, 6)
    n_out = len(node.outputs)
    heads = attr_int(node, "num_heads", 0)
    if q.shape is None or (k is not None and k.shape is None) or (v is not None and v.shape is None):
        return _unknown(n_out, q.dtype)
    _same_batch(node, ctx, [("query", q), ("key", k), ("value", v), ("past_key", pk)])
    n = Expr.const(heads)
    past = pk.shape[2] if pk is not None and pk.shape is not None and len(pk.shape) == 4 else Expr.const(0)
    if len(q.shape) == 5:  # packed QKV
        b, s, _, _, h = q.shape
        out = new_value(q.dtype, (b, s, n * h), (q.origin(0), q.origin(1), None))
        kv: Dims = (b, n, past + s, h)
        return [out, new_value(q.dtype, kv), new_value(q.dtype, kv)][: max(n_out, 1)]
    _rank_is(node, q, 3, "query")
    assert q.shape is not None
    b, s, d = q.shape
    h = _heads(node, ctx, d, q.origin(2), heads, "the query hidden size")
    if k is None or k.shape is None:
        raise ShapeError(f"{op_label(node)}: a query {dims_text(q.shape)} needs a key", kind="invalid")
    if len(k.shape) == 5:  # packed KV
        hv = k.shape[4]
        agree(
            node,
            ctx,
            k.shape[4],
            k.origin(4),
            h,
            None,
            f"the packed key/value {dims_text(k.shape)} against head size {h}",
            axis=4,
            kind="attention-contract",
        )
        lk = k.shape[1]
        pres_k: Dims = (b, n, past + lk, h)
        pres_v: Dims = (b, n, past + lk, hv)
    elif len(k.shape) == 4:  # [B, N, L, H]: cross attention with the keys already projected
        agree(
            node,
            ctx,
            k.shape[3],
            k.origin(3),
            h,
            None,
            f"the key {dims_text(k.shape)} against head size {h}",
            axis=3,
            kind="attention-contract",
        )
        hv = v.shape[3] if v is not None and v.shape is not None and len(v.shape) == 4 else fresh_dim(node, ctx, "hv")
        pres_k = k.shape
        pres_v = v.shape if v is not None and v.shape is not None else (b, n, k.shape[2], hv)
    else:
        _rank_is(node, k, 3, "key")
        agree(
            node,
            ctx,
            k.shape[2],
            k.origin(2),
            d,
            q.origin(2),
            f"the key {dims_text(k.shape)} and the query {dims_text(q.shape)} differ in hidden size",
            axis=2,
            kind="attention-contract",
        )
        if v is None or not _rank_is(node, v, 3, "value"):
            raise ShapeError(f"{op_label(node)}: a key {dims_text(k.shape)} needs a value", kind="invalid")
        assert v.shape is not None
        agree(
            node,
            ctx,
            v.shape[1],
            v.origin(1),
            k.shape[1],
            k.origin(1),
            f"the value {dims_text(v.shape)} and the key {dims_text(k.shape)} differ in sequence length",
            axis=1,
            kind="attention-contract",
        )
        hv = _heads(node, ctx, v.shape[2], v.origin(2), heads, "the value hidden size")
        pres_k = (b, n, past + k.shape[1], h)
        pres_v = (b, n, past + k.shape[1], hv)
    out = new_value(q.dtype, (b, s, n * hv), (q.origin(0), q.origin(1), None))
    return [out, new_value(q.dtype, pres_k), new_value(q.dtype, pres_v)][: max(n_out, 1)]


@register("RotaryEmbedding")
def _rotary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """ONNX RotaryEmbedding (opset 23): X, cos_cache, sin_cache, position_ids; X's shape comes out."""
    x = known(input_value(ins, 0))
    _caches(node, ctx, input_value(ins, 1), input_value(ins, 2), 1)
    return [same_as(x)]


@register("com.microsoft:RotaryEmbedding")
def _ms_rotary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft RotaryEmbedding: input, position_ids, cos_cache, sin_cache; the input's shape comes out."""
    x = known(input_value(ins, 0))
    _caches(node, ctx, input_value(ins, 2), input_value(ins, 3), 2)
    return [same_as(x)]


def _caches(node: Node, ctx: Ctx, cos: Value | None, sin: Value | None, first: int) -> None:
    if cos is None or sin is None or cos.shape is None or sin.shape is None:
        return
    if len(cos.shape) != len(sin.shape):
        raise ShapeError(
            f"{op_label(node)}: cos_cache {dims_text(cos.shape)} and sin_cache {dims_text(sin.shape)} differ in rank",
            suspects=[Suspect(o) for o in origins_of(sin) + origins_of(cos) if o is not None][:4],
            kind="attention-contract",
        )
    for j, (a, b) in enumerate(zip(cos.shape, sin.shape, strict=True)):
        agree(
            node,
            ctx,
            b,
            sin.origin(j),
            a,
            cos.origin(j),
            f"cos_cache {dims_text(cos.shape)} and sin_cache {dims_text(sin.shape)} must have one shape",
            axis=j,
            kind="attention-contract",
        )


@register("GroupQueryAttention")
def _gqa(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft GroupQueryAttention: query ``[B, S, N*H]`` (or packed with K and V), ``kv_num_heads``
    key/value heads; the present state is ``[B, kv heads, max(past, total_sequence_length), H]``."""
    q, k, v = known(input_value(ins, 0)), input_value(ins, 1), input_value(ins, 2)
    pk, total_v = input_value(ins, 3), input_value(ins, 6)
    n_out = len(node.outputs)
    nq, nkv = attr_int(node, "num_heads", 0), attr_int(node, "kv_num_heads", 0)
    if not _rank_is(node, q, 3, "query"):
        return _unknown(n_out, q.dtype)
    assert q.shape is not None
    if nkv <= 0 or nq <= 0 or nq % nkv:
        raise ShapeError(
            f"{op_label(node)}: num_heads {nq} must be a positive multiple of kv_num_heads {nkv}", kind="invalid"
        )
    b, s, d = q.shape
    if k is None:  # packed QKV
        h = _heads(node, ctx, d, q.origin(2), nq + 2 * nkv, "the packed QKV hidden size")
    else:
        h = _heads(node, ctx, d, q.origin(2), nq, "the query hidden size")
        for name, t in (("key", k), ("value", v)):
            if t is not None and _rank_is(node, t, 3, name):
                assert t.shape is not None
                agree(
                    node,
                    ctx,
                    t.shape[2],
                    t.origin(2),
                    h * nkv,
                    None,
                    f"the {name} {dims_text(t.shape)} against {nkv} kv heads of size {h}",
                    axis=2,
                    kind="attention-contract",
                )
                agree(
                    node,
                    ctx,
                    t.shape[1],
                    t.origin(1),
                    s,
                    q.origin(1),
                    f"the {name} {dims_text(t.shape)} and the query {dims_text(q.shape)} differ in sequence length",
                    axis=1,
                    kind="attention-contract",
                )
    _same_batch(node, ctx, [("query", q), ("key", k), ("value", v), ("past_key", pk)])
    total_raw = scalar_of(total_v)
    total = total_raw if isinstance(total_raw, Expr) else fresh_dim(node, ctx, "total")
    seq = emax((pk.shape[2], total)) if pk is not None and pk.shape is not None and len(pk.shape) == 4 else total
    kv: Dims = (b, Expr.const(nkv), seq, h)
    out = new_value(q.dtype, (b, s, h * nq), (q.origin(0), q.origin(1), None))
    return [out, new_value(q.dtype, kv), new_value(q.dtype, kv)][: max(n_out, 1)]


__all__ = ["window_size"]
