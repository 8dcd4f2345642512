"""Neural-network ops: convolutions and pools, normalizations, resizing, indexing, quantization, attention.

Their output shapes are arithmetic on the inputs' dims (a window sliding over ``H``, a resize by a
scale, a gather by an index tensor's shape), so each is computed on :class:`~bcast.graph.expr.Expr`:
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
from ._base import attr_int, attr_ints, axis_of, input_value, known, numel, register, same_as
from .elementwise import dtype_name

Dims = tuple[Expr, ...]
Origins = tuple[Origin | None, ...]

_ONE = Expr.const(1)


# -- shared helpers ------------------------------------------------------------------------------


def _name(node: Node) -> str:
    return f"{node.op} {node.label}"


def _here(node: Node) -> Origin:
    return Origin(node.name, node.op)


def _t(dims: Sequence[Expr] | None) -> str:
    return "[?]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def _os(v: Value) -> list[Origin | None]:
    return [v.origin(k) for k in range(len(v.shape or ()))]


def _sus(*pairs: tuple[Origin | None, Expr]) -> list[Suspect]:
    return [Suspect(o, e.value) for o, e in pairs if o is not None]


def _fresh(node: Node, ctx: Ctx, what: str | int) -> Expr:
    return ctx.fresh(f"{node.name}_{what}")


def _at(ins: Sequence[Value | None], k: int) -> Value | None:
    """Input ``k``, ``None`` when the node does not have it (or leaves it empty)."""
    return input_value(ins, k)


def _agree(
    node: Node,
    ctx: Ctx,
    a: Expr,
    oa: Origin | None,
    b: Expr,
    ob: Origin | None,
    what: str,
    *,
    axis: int | None = None,
    ones: bool = False,
) -> Tri:
    """``a`` and ``b`` must be one size: a :class:`ShapeError` when they differ for sure, a constraint
    (a warning) when they may. ``ones``: a 1 on either side is fine too (the op broadcasts it)."""
    t = a.eq(b)
    if t is Tri.YES or (ones and (a.value == 1 or b.value == 1)):
        return Tri.YES
    sus = _sus((oa, a), (ob, b))
    if t is Tri.NO:
        raise ShapeError(f"{_name(node)}: {what}: {a} against {b}", axis=axis, dims=(a, b), suspects=sus)
    ctx.problem(
        node,
        "constraint",
        f"{_name(node)}: {what}: needs {a} == {b}" + (" (or either to be 1)" if ones else ""),
        axis=axis,
        dims=(a, b),
        suspects=sus,
        severity="warning",
    )
    return t


def _rank_at_least(node: Node, v: Value, n: int, what: str) -> None:
    if v.shape is not None and len(v.shape) < n:
        raise ShapeError(
            f"{_name(node)}: {what} is {_t(v.shape)} (rank {len(v.shape)}); the op needs rank {n} or more",
            suspects=[Suspect(o) for o in _os(v) if o is not None][:4],
            kind="invalid",
        )


def _rank_is(node: Node, v: Value | None, n: int, what: str) -> bool:
    """Whether ``v``'s rank is ``n``; a :class:`ShapeError` when it is known and is not, ``False`` when unknown."""
    if v is None or v.shape is None:
        return False
    if len(v.shape) != n:
        raise ShapeError(
            f"{_name(node)}: {what} is {_t(v.shape)} (rank {len(v.shape)}); the op needs rank {n}",
            suspects=[Suspect(o) for o in _os(v) if o is not None][:4],
            kind="shape-mismatch",
        )
    return True


def _scalar(v: Value | None) -> Any:
    """The one element of a small tensor (an :class:`Expr` for integers, a float), ``None`` when unknown."""
    if v is None or v.data is None or len(v.data) != 1:
        return None
    return v.data[0]


def _int_of(x: Any) -> int | None:
    if isinstance(x, Expr):
        return x.value
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return int(x)
    return None


def _out(dtype: str | None, dims: Sequence[Expr] | None, origins: Sequence[Origin | None] | None = None) -> Value:
    if dims is None:
        return Value(dtype, None)
    return Value(dtype, tuple(dims), None, tuple(origins) if origins is not None else None)


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
                f"{_name(node)}: {what} {got} has {len(got)} values for {n} spatial axes (it needs {want})",
                kind="invalid",
            )
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations):
        raise ShapeError(f"{_name(node)}: strides {strides} and dilations {dilations} must be positive", kind="invalid")
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
            if slack is not None and slack < 0:
                raise ShapeError(
                    f"{_name(node)}: at spatial axis {i} (axis {2 + i} of {_t(x.shape)}) the window spans {eff} "
                    f"(kernel {k}, dilation {dilations[i]}) but the padded input has {room}",
                    axis=2 + i,
                    dims=(room, eff),
                    suspects=_sus((x.origin(2 + i), size), (kernel_origins[i], k)),
                )
        got = window_size(
            size, k, strides[i], dilations[i], pb[i], pe[i], auto_pad=auto_pad, ceil_mode=ceil_mode, pool=pool
        )
        if got is None:
            got = _fresh(node, ctx, 2 + i)
        elif got.value is not None and got.value < 0:
            raise ShapeError(
                f"{_name(node)}: at spatial axis {i} (axis {2 + i} of {_t(x.shape)}) the dilated window (kernel {k}, "
                f"dilation {dilations[i]}) leaves {got} outputs",
                axis=2 + i,
                dims=(size, k),
                suspects=_sus((x.origin(2 + i), size), (kernel_origins[i], k)),
            )
        dims.append(got)
        origins.append(x.origin(2 + i) if got == size else None)
    return dims, origins


def _kernel(node: Node, w: Value | None, n: int | None) -> tuple[list[Expr], list[Origin | None]] | None:
    """The kernel's spatial dims: ``kernel_shape`` when given (checked against W's), else W's."""
    ks = attr_ints(node, "kernel_shape")
    w_spatial = list(w.shape[2:]) if w is not None and w.shape is not None else None
    if ks is not None:
        if n is not None and len(ks) != n:
            raise ShapeError(
                f"{_name(node)}: kernel_shape {ks} has {len(ks)} values for {n} spatial axes", kind="invalid"
            )
        if w is not None and w_spatial is not None and len(w_spatial) == len(ks):
            for i, (a, b) in enumerate(zip(ks, w_spatial, strict=True)):
                if b.eq(a) is Tri.NO:
                    raise ShapeError(
                        f"{_name(node)}: kernel_shape {ks} differs from the weight {_t(w.shape)} at spatial axis {i}",
                        axis=2 + i,
                        dims=(a, b),
                        suspects=_sus((w.origin(2 + i), b)),
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
            f"{_name(node)}: the bias {node.inputs[2]} is {_t(b.shape)}; it must be 1-D of {what} {m}",
            suspects=[Suspect(o) for o in _os(b) if o is not None],
            kind="shape-mismatch",
        )
    _agree(
        node, ctx, b.shape[0], b.origin(0), m, om, f"the bias {node.inputs[2]} {_t(b.shape)} against {what} {m}", axis=1
    )


def _xw_ranks(node: Node, x: Value, w: Value) -> int | None:
    """The rank shared by X and W (at least 3), or ``None`` when neither is known."""
    for v, what in ((x, "the input X"), (w, "the weight W")):
        _rank_at_least(node, v, 3, what)
    if x.shape is not None and w.shape is not None and len(x.shape) != len(w.shape):
        raise ShapeError(
            f"{_name(node)}: X {_t(x.shape)} and W {_t(w.shape)} differ in rank",
            suspects=[Suspect(o) for o in (x.origin(1), w.origin(1)) if o is not None],
            kind="shape-mismatch",
        )
    r = x.rank if x.rank is not None else w.rank
    return r


@register("Conv")
def _conv(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w, b = known(_at(ins, 0)), known(_at(ins, 1)), _at(ins, 2)
    r = _xw_ranks(node, x, w)
    if r is None:
        return [Value(x.dtype, None)]
    group = attr_int(node, "group", 1)
    if group <= 0:
        raise ShapeError(f"{_name(node)}: group {group} must be positive", kind="invalid")
    kernel = _kernel(node, w, r - 2)
    m: Expr = w.shape[0] if w.shape is not None else _fresh(node, ctx, 1)
    om = w.origin(0) if w.shape is not None else None
    if x.shape is not None and w.shape is not None:
        c, cw = x.shape[1], w.shape[1] * group
        _agree(
            node,
            ctx,
            c,
            x.origin(1),
            cw,
            w.origin(1),
            f"the input X {_t(x.shape)} has {c} channels, the weight W {_t(w.shape)} takes "
            f"{w.shape[1]} x group {group} = {cw}",
            axis=1,
        )
        mv = m.value
        if mv is not None and mv % group:
            raise ShapeError(
                f"{_name(node)}: W {_t(w.shape)} has {mv} output channels, not a multiple of group {group}",
                axis=0,
                dims=(m, group),
                suspects=_sus((om, m)),
            )
    _bias(node, ctx, b, m, om, "output channels")
    if x.shape is None or kernel is None:
        return [_out(x.dtype, (_fresh(node, ctx, 0), m, *(_fresh(node, ctx, 2 + i) for i in range(r - 2))))]
    sp, so = _spatial(node, ctx, x, kernel[0], kernel[1])
    return [_out(x.dtype, (x.shape[0], m, *sp), (x.origin(0), om, *so))]


@register("ConvTranspose")
def _conv_transpose(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, w, b = known(_at(ins, 0)), known(_at(ins, 1)), _at(ins, 2)
    r = _xw_ranks(node, x, w)
    if r is None:
        return [Value(x.dtype, None)]
    n = r - 2
    group = attr_int(node, "group", 1)
    if group <= 0:
        raise ShapeError(f"{_name(node)}: group {group} must be positive", kind="invalid")
    kernel = _kernel(node, w, n)
    if w.shape is not None:
        m, om = w.shape[1] * group, (w.origin(1) if group == 1 else None)
    else:
        m, om = _fresh(node, ctx, 1), None
    if x.shape is not None and w.shape is not None:
        _agree(
            node,
            ctx,
            x.shape[1],
            x.origin(1),
            w.shape[0],
            w.origin(0),
            f"the input X {_t(x.shape)} has {x.shape[1]} channels, the weight W {_t(w.shape)} takes {w.shape[0]}",
            axis=1,
        )
    _bias(node, ctx, b, m, om, "output channels")
    if x.shape is None or kernel is None:
        return [_out(x.dtype, (_fresh(node, ctx, 0), m, *(_fresh(node, ctx, 2 + i) for i in range(n))))]
    strides, dilations, pb, pe = _window_attrs(node, n)
    adj = attr_ints(node, "output_padding", [0] * n) or [0] * n
    if len(adj) != n:
        raise ShapeError(
            f"{_name(node)}: output_padding {adj} has {len(adj)} values for {n} spatial axes", kind="invalid"
        )
    shape_attr = attr_ints(node, "output_shape")
    auto_pad = _auto_pad(node)
    dims: list[Expr] = []
    for i in range(n):
        size, k, s = x.shape[2 + i], kernel[0][i], strides[i]
        if shape_attr is not None:
            if len(shape_attr) not in (n, n + 2):
                raise ShapeError(
                    f"{_name(node)}: output_shape {shape_attr} has {len(shape_attr)} values for {n} spatial axes",
                    kind="invalid",
                )
            dims.append(Expr.const(shape_attr[len(shape_attr) - n + i]))
            continue
        full = (size - 1) * s + adj[i] + (k - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            # onnxruntime pads by max(0, full - size*stride): the output is the smaller of the two
            extra = (full - size * s).value
            if extra is None:
                dims.append(_fresh(node, ctx, 2 + i))
            else:
                dims.append(size * s if extra >= 0 else full)
            continue
        p = 0 if auto_pad == "VALID" else pb[i] + pe[i]
        out = full - p
        if out.value is not None and out.value <= 0:
            raise ShapeError(
                f"{_name(node)}: spatial axis {i} of {_t(x.shape)} gives an output of {out} "
                f"(the pads {pb[i]}+{pe[i]} leave no output)",
                axis=2 + i,
                dims=(out,),
                suspects=_sus((x.origin(2 + i), size)),
                kind="invalid",
            )
        dims.append(out)
    return [_out(x.dtype, (x.shape[0], m, *dims), (x.origin(0), om, *([None] * n)))]


def _pool(node: Node, ins: list[Value | None], ctx: Ctx, n_out: int) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None), Value("int64", None)][:n_out]
    _rank_at_least(node, x, 3, "the input X")
    n = len(x.shape) - 2
    ks = attr_ints(node, "kernel_shape")
    if ks is None:
        raise ShapeError(f"{_name(node)}: the attribute kernel_shape is missing", kind="invalid")
    if len(ks) != n:
        raise ShapeError(
            f"{_name(node)}: kernel_shape {ks} has {len(ks)} values for the {n} spatial axes of {_t(x.shape)}",
            kind="invalid",
        )
    ceil_mode = bool(attr_int(node, "ceil_mode", 0))
    sp, so = _spatial(node, ctx, x, [Expr.const(k) for k in ks], [None] * n, ceil_mode=ceil_mode, pool=True)
    dims = (x.shape[0], x.shape[1], *sp)
    origins = (x.origin(0), x.origin(1), *so)
    return [_out(x.dtype, dims, origins), _out("int64", dims, origins)][:n_out]


@register("MaxPool")
def _maxpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 2)


@register("AveragePool", "LpPool")
def _avgpool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return _pool(node, ins, ctx, 1)


@register("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _global_pool(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None)]
    _rank_at_least(node, x, 2, "the input X")
    dims = (x.shape[0], x.shape[1], *([_ONE] * (len(x.shape) - 2)))
    return [_out(x.dtype, dims, (x.origin(0), x.origin(1), *([_here(node)] * (len(x.shape) - 2))))]


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
        for k, v in given:
            assert v.shape is not None
            for j, (a, b) in enumerate(zip(v.shape, want, strict=True)):
                _agree(
                    node,
                    ctx,
                    a,
                    v.origin(j),
                    b,
                    want_origins[j],
                    f"the input {node.inputs[k]} {_t(v.shape)} against {what} {_t(want)}",
                    axis=1 + j,
                )
        return
    names = ", ".join(f"{node.inputs[k]} {_t(v.shape)}" for k, v in bad)
    sus: list[Suspect] = []
    for _, v in bad:
        sus.extend(Suspect(o, d.value) for o, d in zip(_os(v), v.shape or (), strict=True) if o is not None)
    if len(bad) == len(given):
        sus.extend(_sus(*((o, d) for o, d in zip(want_origins, want, strict=True))))
    dims = [d for _, v in bad for d in (v.shape or ())][:4]
    raise ShapeError(
        f"{_name(node)}: the input X is {_t(x.shape)}: {what} {_t(want)}, but {names}",
        axis=1,
        dims=(*dims, *want),
        suspects=sus,
    )


@register("BatchNormalization")
def _batch_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    n_out = len(node.outputs)
    if x.shape is None:
        return [Value(x.dtype, None), *_unknown(n_out - 1, x.dtype)]
    _rank_at_least(node, x, 2, "the input X")
    c, oc = x.shape[1], x.origin(1)
    spatial = attr_int(node, "spatial", 1) if ctx.opset(node.domain) < 9 else 1
    want = (c,) if spatial else x.shape[1:]
    want_o = (oc,) if spatial else tuple(_os(x)[1:])
    _per_channel(
        node,
        ctx,
        x,
        [(k, _at(ins, k)) for k in range(1, 5)],
        want,
        want_o,
        "scale, B, mean and var must be its channels",
    )
    stat = _out(x.dtype, want, want_o)
    return [same_as(x)] + [stat] * (n_out - 1)


@register("InstanceNormalization")
def _instance_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is not None:
        _rank_at_least(node, x, 3, "the input X")
        _per_channel(
            node,
            ctx,
            x,
            [(1, _at(ins, 1)), (2, _at(ins, 2))],
            (x.shape[1],),
            (x.origin(1),),
            "scale and B must be its channels",
        )
    return [same_as(x)]


@register("GroupNormalization")
def _group_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is None:
        return [same_as(x)]
    _rank_at_least(node, x, 2, "the input X")
    groups = attr_int(node, "num_groups", 0)
    if groups <= 0:
        raise ShapeError(f"{_name(node)}: num_groups {groups} must be positive", kind="invalid")
    c = x.shape[1]
    cv = c.value
    if cv is not None and cv % groups:
        raise ShapeError(
            f"{_name(node)}: the input X {_t(x.shape)} has {c} channels, not a multiple of num_groups {groups}",
            axis=1,
            dims=(c, groups),
            suspects=_sus((x.origin(1), c)),
        )
    if ctx.opset(node.domain) >= 21:
        want, want_o, what = (c,), (x.origin(1),), "scale and bias must be its channels"
    else:  # opset 18: one scale per group
        want, want_o, what = (Expr.const(groups),), (None,), f"scale and bias must be num_groups {groups}"
    _per_channel(node, ctx, x, [(1, _at(ins, 1)), (2, _at(ins, 2))], want, want_o, what)
    return [same_as(x)]


@register("LRN", "MeanVarianceNormalization")
def _lrn(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return [same_as(_at(ins, 0))]


@register("LpNormalization")
def _lp_norm(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
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
        return None, _at(ins, 1), None
    if opset < 11:
        return None, _at(ins, 1), None
    roi, scales, sizes = _at(ins, 1), _at(ins, 2), _at(ins, 3)
    if scales is not None and scales.shape is not None and len(scales.shape) == 1 and scales.shape[0].value == 0:
        scales = None
    if sizes is not None and sizes.shape is not None and len(sizes.shape) == 1 and sizes.shape[0].value == 0:
        sizes = None
    return roi, scales, sizes


@register("Resize", "Upsample")
def _resize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None)]
    r = len(x.shape)
    roi, scales, sizes = _resize_inputs(node, ins, ctx.opset(node.domain))
    raw_axes = attr_ints(node, "axes")
    axes = [axis_of(node, a, r) for a in raw_axes] if raw_axes is not None else list(range(r))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{_name(node)}: axes {raw_axes} repeat an axis", kind="invalid")
    if scales is not None and sizes is not None:
        raise ShapeError(f"{_name(node)}: both scales and sizes are given; exactly one may be", kind="invalid")
    given = scales if scales is not None else sizes
    if given is None:
        raise ShapeError(f"{_name(node)}: neither scales nor sizes is given", kind="invalid")
    _resize_lengths(node, ctx, x, roi, given, "scales" if given is scales else "sizes", axes)
    if given is not scales:
        return [_resized_to_sizes(node, ctx, x, given, axes)]
    out = list(x.shape)
    origins: list[Origin | None] = _os(x)
    vals = list(scales.data) if scales.data is not None and len(scales.data) == len(axes) else None
    for j, a in enumerate(axes):
        factor = None if vals is None else vals[j]
        out[a] = _scaled(node, ctx, x.shape[a], factor, a)
        if factor != 1:
            origins[a] = None
    return [_out(x.dtype, out, origins)]


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
            f"{_name(node)}: {what} has {given.shape[0]} values for the {len(axes)} axes resized of {_t(x.shape)}",
            dims=(given.shape[0], len(axes)),
            suspects=_sus((given.origin(0), given.shape[0])),
            kind="shape-mismatch",
        )
    mode = str(node.attrs.get("coordinate_transformation_mode", ""))
    if mode == "tf_crop_and_resize" and roi is not None and roi.shape is not None and len(roi.shape) == 1:
        _agree(
            node,
            ctx,
            roi.shape[0],
            roi.origin(0),
            Expr.const(2 * len(axes)),
            None,
            f"roi {_t(roi.shape)} holds a start and an end for each of the {len(axes)} axes",
            axis=0,
        )


def _resized_to_sizes(node: Node, ctx: Ctx, x: Value, sizes: Value, axes: list[int]) -> Value:
    """Resize to ``sizes``: each size as given (``stretch``), or, keeping the aspect ratio, the one scale
    that fits the sizes (``not_larger``) or covers them (``not_smaller``) applied as onnxruntime does."""
    assert x.shape is not None
    out = list(x.shape)
    origins: list[Origin | None] = _os(x)
    ints = sizes.ints
    if ints is None or len(ints) != len(axes):
        for a in axes:
            out[a], origins[a] = _fresh(node, ctx, a), None
        return _out(x.dtype, out, origins)
    for j, e in enumerate(ints):
        if e.value is not None and e.value < 0:
            raise ShapeError(
                f"{_name(node)}: sizes holds {e.value}",
                dims=(e,),
                kind="invalid",
                suspects=[Suspect(o, e.value) for o in [sizes.data_origin(j)] if o is not None],
            )
    policy = str(node.attrs.get("keep_aspect_ratio_policy", "stretch"))
    if policy == "stretch":
        for j, a in enumerate(axes):
            out[a], origins[a] = ints[j], sizes.data_origin(j)
        return _out(x.dtype, out, origins)
    ins_v = [x.shape[a].value for a in axes]
    want_v = [e.value for e in ints]
    if any(v is None or v == 0 for v in ins_v) or any(v is None for v in want_v):
        for a in axes:
            out[a], origins[a] = _fresh(node, ctx, a), None
        return _out(x.dtype, out, origins)
    ratios = [float(np.float32(w) / np.float32(i)) for w, i in zip(want_v, ins_v, strict=True)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, i in zip(axes, ins_v, strict=True):
        out[a], origins[a] = Expr.const(math.floor(_f32_times(scale, int(i or 0)) + 0.5)), None
    return _out(x.dtype, out, origins)


def _scaled(node: Node, ctx: Ctx, size: Expr, scale: Any, axis: int) -> Expr:
    """``floor(size * scale)``: exact on a static size, ``size * k`` for a whole ``k``, else a fresh symbol."""
    if scale is None:
        return _fresh(node, ctx, axis)
    s = float(scale.value) if isinstance(scale, Expr) and scale.value is not None else scale
    if not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
        raise ShapeError(f"{_name(node)}: the scale {scale} for axis {axis} is not a size factor", kind="invalid")
    v = size.value
    if v is not None:
        return Expr.const(int(_f32_times(s, v)))
    if float(s).is_integer():
        return size * int(s)
    return _fresh(node, ctx, axis)


@register("Pad")
def _pad(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
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
        pads_v = _at(ins, 1)
        pads = pads_v.ints if pads_v is not None else None
        av = _at(ins, 3)
        if av is None:
            axes = list(range(r))
        else:
            c = av.consts
            axes = None if c is None else [axis_of(node, a, r) for a in c]
    out = list(x.shape)
    origins = _os(x)
    if pads is None or axes is None:
        for a in axes if axes is not None else range(r):
            out[a], origins[a] = _fresh(node, ctx, a), None
        return [_out(x.dtype, out, origins)]
    if len(pads) != 2 * len(axes):
        o = pads_v.origin(0) if pads_v is not None else None
        raise ShapeError(
            f"{_name(node)}: pads holds {len(pads)} values for the {len(axes)} axes padded of "
            f"{_t(x.shape)} (it needs {2 * len(axes)})",
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
                f"{_name(node)}: axis {a} of {_t(x.shape)} padded by {pads[j]} and {pads[j + n]} gives {d}",
                axis=a,
                dims=(x.shape[a], d),
                suspects=[*_sus((x.origin(a), x.shape[a])), *(Suspect(o) for o in po if o is not None)],
            )
        if d != x.shape[a]:
            out[a], origins[a] = d, None
    return [_out(x.dtype, out, origins)]


@register("DepthToSpace", "SpaceToDepth")
def _depth_space(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if not _rank_is(node, x, 4, "the input"):
        return [Value(x.dtype, None)]
    assert x.shape is not None
    b = attr_int(node, "blocksize", 0)
    if b <= 0:
        raise ShapeError(f"{_name(node)}: blocksize {b} must be positive", kind="invalid")
    n, c, h, w = x.shape
    if node.op == "DepthToSpace":
        cv = c.value
        if cv is not None and cv % (b * b):
            raise ShapeError(
                f"{_name(node)}: {c} channels of {_t(x.shape)} do not split into blocks of {b}x{b}",
                axis=1,
                dims=(c, b * b),
                suspects=_sus((x.origin(1), c)),
            )
        return [_out(x.dtype, (n, c // (b * b), h * b, w * b), (x.origin(0), None, None, None))]
    for k, d in ((2, h), (3, w)):
        if d.value is not None and d.value % b:
            raise ShapeError(
                f"{_name(node)}: axis {k} of {_t(x.shape)} ({d}) is not a multiple of blocksize {b}",
                axis=k,
                dims=(d, b),
                suspects=_sus((x.origin(k), d)),
            )
    return [_out(x.dtype, (n, c * (b * b), h // b, w // b), (x.origin(0), None, None, None))]


# -- Einsum ----------------------------------------------------------------------------------------


def _einsum_terms(node: Node, equation: str, n_in: int) -> tuple[list[str], str | None]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_in:
        raise ShapeError(
            f"{_name(node)}: the equation {equation!r} has {len(terms)} operands, the node {n_in}", kind="invalid"
        )
    for t in [*terms, rhs]:
        body = t.replace("...", "", 1)
        if not all(ch.isascii() and ch.isalpha() for ch in body):
            raise ShapeError(
                f"{_name(node)}: the equation {equation!r} holds {t!r}: subscripts are letters and one '...'",
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
            f"{_name(node)}: the output {rhs!r} of {equation!r} has '...', no operand does", kind="invalid"
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
            f"{_name(node)}: operand {i} ({node.inputs[i]} {_t(v.shape)}) has rank {len(v.shape)}, "
            f"the equation's term {term!r} {len(subs)}{' or more' if has_ell else ''}",
            suspects=[Suspect(o) for o in _os(v) if o is not None][:4],
            kind="shape-mismatch",
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
        _agree(
            node,
            ctx,
            pd,
            po,
            d,
            o,
            f"the letter {ch!r} of {equation!r} is {pd} at axis {pa} of operand {pi} ({_t(vals[pi].shape)}) "
            f"and {d} at axis {axis} of operand {i} ({_t(v.shape)})",
            axis=axis,
            ones=True,
        )
    if not has_ell:
        return None
    return Value(v.dtype, v.shape[start : start + n_ell], None, tuple(_os(v)[start : start + n_ell]))


def _einsum_ellipsis(node: Node, ctx: Ctx, ellipses: list[Value], names: list[str]) -> tuple[Dims, Origins]:
    """The dims ``...`` stands for in the output: the operands' ``...`` dims broadcast together (fresh
    dims where they cannot), or the longest of them when only one is not empty."""
    if len([e for e in ellipses if e.shape]) > 1:
        got = ctx.broadcast(node, ellipses, "ONNX Einsum '...' dims (multidirectional)", names=names)
        if got is None:
            rank = max(len(e.shape or ()) for e in ellipses)
            got = tuple(_fresh(node, ctx, f"ell{k}") for k in range(rank))
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
            raise ShapeError(f"{_name(node)}: the output {rhs!r} of {equation!r} {what} {ch!r}", kind="invalid")
        seen.add(ch)
        got_l = letters.get(ch)
        dims.append(got_l[0] if got_l is not None else _fresh(node, ctx, ch))
        origins.append(got_l[1] if got_l is not None else None)
    if "..." in rhs:
        dims[len(head) : len(head)] = list(ell)
        origins[len(head) : len(head)] = list(ell_o)
    return _out(dtype, dims, origins)


# -- indexing --------------------------------------------------------------------------------------


@register("TopK")
def _topk(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    if x.shape is None:
        return [Value(x.dtype, None), Value("int64", None)]
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", -1), r)
    kv = _at(ins, 1)
    ko: Origin | None = None
    if "k" in node.attrs:  # opset 1
        k: Expr | None = Expr.const(attr_int(node, "k", 0))
    else:
        raw = _scalar(kv)
        k = raw if isinstance(raw, Expr) else None
        ko = kv.data_origin(0) if kv is not None else None
    if k is None:
        k = _fresh(node, ctx, axis)
    elif k.value is not None:
        size = x.shape[axis]
        if k.value < 0 or (size.value is not None and k.value > size.value):
            raise ShapeError(
                f"{_name(node)}: k = {k} for axis {axis} of {_t(x.shape)} (size {size})",
                axis=axis,
                dims=(k, size),
                suspects=_sus((ko, k), (x.origin(axis), size)),
            )
    dims = list(x.shape)
    dims[axis] = k
    origins = _os(x)
    origins[axis] = ko
    return [_out(x.dtype, dims, origins), _out("int64", dims, origins)]


@register("OneHot")
def _onehot(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    idx, depth, values = known(_at(ins, 0)), _at(ins, 1), known(_at(ins, 2))
    dtype = values.dtype
    if values.shape is not None and (len(values.shape) != 1 or values.shape[0].eq(2) is Tri.NO):
        raise ShapeError(
            f"{_name(node)}: values is {_t(values.shape)}; it must hold [off_value, on_value]",
            suspects=[Suspect(o) for o in _os(values) if o is not None],
            kind="invalid",
        )
    if idx.shape is None:
        return [Value(dtype, None)]
    r = len(idx.shape)
    raw_axis = attr_int(node, "axis", -1)
    if not -r - 1 <= raw_axis <= r:
        raise ShapeError(
            f"{_name(node)}: axis {raw_axis} is out of range for an output of rank {r + 1}", kind="invalid"
        )
    axis = raw_axis % (r + 1)
    raw = _scalar(depth)
    d: Expr
    if isinstance(raw, Expr):
        d = raw
    elif isinstance(raw, float) and math.isfinite(raw):
        d = Expr.const(int(raw))
    else:
        d = _fresh(node, ctx, axis)
    dims = [*idx.shape[:axis], d, *idx.shape[axis:]]
    origins = [*_os(idx)[:axis], depth.data_origin(0) if depth is not None else None, *_os(idx)[axis:]]
    return [_out(dtype, dims, origins)]


@register("GatherND")
def _gather_nd(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx = known(_at(ins, 0)), known(_at(ins, 1))
    if data.shape is None or idx.shape is None:
        return [Value(data.dtype, None)]
    b = attr_int(node, "batch_dims", 0)
    r, q = len(data.shape), len(idx.shape)
    if r < 1 or q < 1 or b < 0 or b >= min(r, q):
        raise ShapeError(
            f"{_name(node)}: batch_dims {b} for data {_t(data.shape)} and indices {_t(idx.shape)}", kind="invalid"
        )
    for k in range(b):
        _agree(
            node,
            ctx,
            data.shape[k],
            data.origin(k),
            idx.shape[k],
            idx.origin(k),
            f"batch axis {k} of data {_t(data.shape)} and indices {_t(idx.shape)}",
            axis=k,
        )
    last = idx.shape[-1].value
    if last is None:
        return [Value(data.dtype, None)]
    if not 1 <= last <= r - b:
        raise ShapeError(
            f"{_name(node)}: indices {_t(idx.shape)} index {last} axes of data {_t(data.shape)} past "
            f"its {b} batch axes (at most {r - b})",
            axis=q - 1,
            dims=(last, r - b),
            suspects=_sus((idx.origin(q - 1), idx.shape[-1])),
            kind="shape-mismatch",
        )
    dims = [*idx.shape[:-1], *data.shape[b + last :]]
    origins = [*_os(idx)[:-1], *_os(data)[b + last :]]
    return [_out(data.dtype, dims, origins)]


@register("GatherElements")
def _gather_elements(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx = known(_at(ins, 0)), known(_at(ins, 1))
    if data.shape is not None:
        if not data.shape:
            raise ShapeError(f"{_name(node)}: the data is a scalar", kind="invalid")
        axis_of(node, attr_int(node, "axis", 0), len(data.shape))
        if idx.shape is not None and len(idx.shape) != len(data.shape):
            raise ShapeError(
                f"{_name(node)}: indices {_t(idx.shape)} and data {_t(data.shape)} differ in rank",
                suspects=[Suspect(o) for o in _os(idx) if o is not None][:4],
                kind="shape-mismatch",
            )
    return [Value(data.dtype, idx.shape, None, idx.origins)]


@register("ScatterND")
def _scatter_nd(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx, upd = known(_at(ins, 0)), known(_at(ins, 1)), known(_at(ins, 2))
    if data.shape is not None and idx.shape is not None and upd.shape is not None:
        if not idx.shape:
            raise ShapeError(f"{_name(node)}: indices is a scalar", kind="invalid")
        last = idx.shape[-1].value
        if last is not None:
            r = len(data.shape)
            if last > r:
                raise ShapeError(
                    f"{_name(node)}: indices {_t(idx.shape)} index {last} axes of data {_t(data.shape)} (rank {r})",
                    axis=len(idx.shape) - 1,
                    dims=(last, r),
                    suspects=_sus((idx.origin(-1), idx.shape[-1])),
                    kind="shape-mismatch",
                )
            want = [*idx.shape[:-1], *data.shape[last:]]
            want_o = [*_os(idx)[:-1], *_os(data)[last:]]
            if len(upd.shape) != len(want):
                raise ShapeError(
                    f"{_name(node)}: updates {_t(upd.shape)} must be indices.shape[:-1] + "
                    f"data.shape[{last}:] = {_t(want)} (data {_t(data.shape)}, indices {_t(idx.shape)})",
                    suspects=[Suspect(o) for o in _os(upd) if o is not None][:4],
                    kind="shape-mismatch",
                )
            for k, (a, b) in enumerate(zip(upd.shape, want, strict=True)):
                _agree(
                    node,
                    ctx,
                    a,
                    upd.origin(k),
                    b,
                    want_o[k],
                    f"updates {_t(upd.shape)} must be indices.shape[:-1] + data.shape[{last}:] = {_t(want)}, axis {k}",
                    axis=k,
                )
    return [same_as(data)]


@register("ScatterElements", "Scatter")
def _scatter_elements(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    data, idx, upd = known(_at(ins, 0)), known(_at(ins, 1)), known(_at(ins, 2))
    if data.shape is not None:
        if not data.shape:
            raise ShapeError(f"{_name(node)}: the data is a scalar", kind="invalid")
        axis_of(node, attr_int(node, "axis", 0), len(data.shape))
    shapes = [(n, v) for n, v in (("data", data), ("indices", idx), ("updates", upd)) if v.shape is not None]
    if len({len(v.shape or ()) for _, v in shapes}) > 1:
        raise ShapeError(
            f"{_name(node)}: " + ", ".join(f"{n} {_t(v.shape)}" for n, v in shapes) + " differ in rank",
            suspects=[Suspect(o) for o in _os(upd) + _os(idx) if o is not None][:4],
            kind="shape-mismatch",
        )
    if idx.shape is not None and upd.shape is not None:
        for k, (a, b) in enumerate(zip(idx.shape, upd.shape, strict=True)):
            _agree(
                node,
                ctx,
                b,
                upd.origin(k),
                a,
                idx.origin(k),
                f"updates {_t(upd.shape)} and indices {_t(idx.shape)} must have one shape, axis {k}",
                axis=k,
            )
    return [same_as(data)]


@register("Compress")
def _compress(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, cond = known(_at(ins, 0)), known(_at(ins, 1))
    if cond.shape is not None and len(cond.shape) != 1:
        raise ShapeError(
            f"{_name(node)}: the condition is {_t(cond.shape)}; it must be 1-D",
            suspects=[Suspect(o) for o in _os(cond) if o is not None],
            kind="invalid",
        )
    count: Expr | None = None
    if cond.data is not None and all(isinstance(e, Expr) and e.value is not None for e in cond.data):
        count = Expr.const(sum(1 for e in cond.data if e.value))
    if x.shape is None:
        return [Value(x.dtype, None)]
    if "axis" not in node.attrs:
        return [_out(x.dtype, (count if count is not None else ctx.fresh(f"{node.name}_count", free=True),))]
    axis = axis_of(node, attr_int(node, "axis", 0), len(x.shape))
    dims = list(x.shape)
    dims[axis] = count if count is not None else ctx.fresh(f"{node.name}_count", free=True)
    origins = _os(x)
    origins[axis] = None
    return [_out(x.dtype, dims, origins)]


@register("Unique")
def _unique(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    u = ctx.fresh(f"{node.name}_unique", free=True)
    if x.shape is None:
        return [Value(x.dtype, None), _out("int64", (u,)), Value("int64", None), _out("int64", (u,))]
    if "axis" not in node.attrs:
        return [_out(x.dtype, (u,)), _out("int64", (u,)), _out("int64", (numel(x.shape),)), _out("int64", (u,))]
    axis = axis_of(node, attr_int(node, "axis", 0), len(x.shape))
    dims = list(x.shape)
    dims[axis] = u
    origins = _os(x)
    origins[axis] = None
    return [
        _out(x.dtype, dims, origins),
        _out("int64", (u,)),
        _out("int64", (x.shape[axis],), (x.origin(axis),)),
        _out("int64", (u,)),
    ]


@register("NonMaxSuppression")
def _nms(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    boxes, scores = known(_at(ins, 0)), known(_at(ins, 1))
    if _rank_is(node, boxes, 3, "boxes") and _rank_is(node, scores, 3, "scores"):
        assert boxes.shape is not None and scores.shape is not None
        _agree(
            node,
            ctx,
            boxes.shape[0],
            boxes.origin(0),
            scores.shape[0],
            scores.origin(0),
            f"boxes {_t(boxes.shape)} and scores {_t(scores.shape)} differ in batches",
            axis=0,
        )
        _agree(
            node,
            ctx,
            boxes.shape[1],
            boxes.origin(1),
            scores.shape[2],
            scores.origin(2),
            f"boxes {_t(boxes.shape)} and scores {_t(scores.shape)} differ in boxes",
            axis=1,
        )
        _agree(
            node,
            ctx,
            boxes.shape[2],
            boxes.origin(2),
            Expr.const(4),
            None,
            f"boxes {_t(boxes.shape)} must hold 4 coordinates",
            axis=2,
        )
    return [_out("int64", (ctx.fresh(f"{node.name}_selected", free=True), Expr.const(3)))]


@register("ReverseSequence")
def _reverse_sequence(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, lens = known(_at(ins, 0)), known(_at(ins, 1))
    if x.shape is not None:
        _rank_at_least(node, x, 2, "the input")
        r = len(x.shape)
        b = axis_of(node, attr_int(node, "batch_axis", 1), r, "batch_axis")
        t = axis_of(node, attr_int(node, "time_axis", 0), r, "time_axis")
        if b == t or b > 1 or t > 1:
            raise ShapeError(f"{_name(node)}: batch_axis {b} and time_axis {t} must be 0 and 1", kind="invalid")
        if _rank_is(node, lens, 1, "sequence_lens"):
            assert lens.shape is not None
            _agree(
                node,
                ctx,
                lens.shape[0],
                lens.origin(0),
                x.shape[b],
                x.origin(b),
                f"sequence_lens {_t(lens.shape)} against the batch axis {b} of {_t(x.shape)}",
                axis=b,
            )
    return [same_as(x)]


@register("CumSum")
def _cumsum(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, a = known(_at(ins, 0)), _at(ins, 1)
    if a is not None and a.shape is not None and len(a.shape) > 1:
        raise ShapeError(f"{_name(node)}: axis is {_t(a.shape)}; it must be a scalar", kind="invalid")
    k = _int_of(_scalar(a))
    if x.shape is not None and k is not None:
        axis_of(node, k, len(x.shape))
    return [same_as(x)]


@register("Trilu")
def _trilu(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(_at(ins, 0))
    _rank_at_least(node, x, 2, "the input")
    return [same_as(x)]


# -- images --------------------------------------------------------------------------------------


@register("GridSample")
def _grid_sample(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, grid = known(_at(ins, 0)), known(_at(ins, 1))
    _rank_at_least(node, x, 3, "the input X")
    _rank_at_least(node, grid, 3, "the grid")
    if x.shape is None or grid.shape is None:
        r = x.rank if x.rank is not None else grid.rank
        return [Value(x.dtype, None if r is None else tuple(_fresh(node, ctx, k) for k in range(r)))]
    if len(x.shape) != len(grid.shape):
        raise ShapeError(
            f"{_name(node)}: X {_t(x.shape)} and the grid {_t(grid.shape)} differ in rank",
            suspects=[Suspect(o) for o in _os(grid) if o is not None][:4],
            kind="shape-mismatch",
        )
    n = len(x.shape) - 2
    _agree(
        node,
        ctx,
        x.shape[0],
        x.origin(0),
        grid.shape[0],
        grid.origin(0),
        f"X {_t(x.shape)} and the grid {_t(grid.shape)} differ in batch",
        axis=0,
    )
    _agree(
        node,
        ctx,
        grid.shape[-1],
        grid.origin(-1),
        Expr.const(n),
        None,
        f"the grid {_t(grid.shape)} must hold {n} coordinates for the {n} spatial axes of X {_t(x.shape)}",
        axis=len(grid.shape) - 1,
    )
    return [_out(x.dtype, (x.shape[0], x.shape[1], *grid.shape[1:-1]), (x.origin(0), x.origin(1), *_os(grid)[1:-1]))]


@register("RoiAlign")
def _roi_align(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, rois, bi = known(_at(ins, 0)), known(_at(ins, 1)), known(_at(ins, 2))
    oh, ow = Expr.const(attr_int(node, "output_height", 1)), Expr.const(attr_int(node, "output_width", 1))
    c = x.shape[1] if _rank_is(node, x, 4, "the input X") and x.shape is not None else _fresh(node, ctx, 1)
    oc = x.origin(1) if x.shape is not None else None
    n: Expr | None = None
    on: Origin | None = None
    if _rank_is(node, rois, 2, "rois"):
        assert rois.shape is not None
        n, on = rois.shape[0], rois.origin(0)
        _agree(
            node,
            ctx,
            rois.shape[1],
            rois.origin(1),
            Expr.const(4),
            None,
            f"rois {_t(rois.shape)} must hold 4 coordinates",
            axis=1,
        )
    if _rank_is(node, bi, 1, "batch_indices"):
        assert bi.shape is not None
        if n is None:
            n, on = bi.shape[0], bi.origin(0)
        else:
            _agree(
                node,
                ctx,
                bi.shape[0],
                bi.origin(0),
                n,
                on,
                f"batch_indices {_t(bi.shape)} against the rois {_t(rois.shape)}",
                axis=0,
            )
    return [_out(x.dtype, (n if n is not None else _fresh(node, ctx, 0), c, oh, ow), (on, oc, None, None))]


@register("Col2Im")
def _col2im(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, image, block = known(_at(ins, 0)), _at(ins, 1), _at(ins, 2)
    img = image.ints if image is not None else None
    blk = block.ints if block is not None else None
    if not _rank_is(node, x, 3, "the input") or img is None or blk is None:
        n = len(img) if img is not None else len(blk) if blk is not None else None
        if n is None:
            return [Value(x.dtype, None)]
        return [
            _out(
                x.dtype,
                (*(_fresh(node, ctx, k) for k in range(2)), *(img or [_fresh(node, ctx, 2 + k) for k in range(n)])),
            )
        ]
    assert x.shape is not None
    n = len(img)
    if len(blk) != n:
        raise ShapeError(
            f"{_name(node)}: image_shape {_t(img)} and block_shape {_t(blk)} differ in length", kind="invalid"
        )
    strides, dilations, pb, pe = _window_attrs(node, n)
    prod = numel(tuple(blk))
    cv, pv = x.shape[1].value, prod.value
    if cv is not None and pv is not None and pv and cv % pv:
        raise ShapeError(
            f"{_name(node)}: axis 1 of the input {_t(x.shape)} ({cv}) is not a multiple of the block {_t(blk)} ({pv})",
            axis=1,
            dims=(cv, pv),
            suspects=_sus((x.origin(1), x.shape[1])),
        )
    blocks = Expr.const(1)
    for i in range(n):
        got = window_size(img[i], blk[i], strides[i], dilations[i], pb[i], pe[i])
        blocks = blocks * (got if got is not None else _fresh(node, ctx, f"L{i}"))
    _agree(
        node,
        ctx,
        x.shape[2],
        x.origin(2),
        blocks,
        None,
        f"axis 2 of the input {_t(x.shape)} against the {blocks} sliding blocks of image_shape {_t(img)} and "
        f"block_shape {_t(blk)}",
        axis=2,
    )
    c = x.shape[1] // prod if pv != 0 else _fresh(node, ctx, 1)
    return [
        _out(
            x.dtype,
            (x.shape[0], c, *img),
            (x.origin(0), None, *(image.data_origin(k) if image else None for k in range(n))),
        )
    ]


# -- quantization --------------------------------------------------------------------------------


def _quant_params(node: Node, ctx: Ctx, x: Value, scale: Value | None, zp: Value | None) -> None:
    """The scale is a scalar (per tensor), 1-D of x's ``axis`` dim (per axis) or x's shape with ``axis``
    divided into blocks of ``block_size``; the zero point, when given, has the scale's shape."""
    if scale is None or scale.shape is None:
        return
    if zp is not None and zp.shape is not None:
        if len(zp.shape) != len(scale.shape):
            raise ShapeError(
                f"{_name(node)}: the zero point {_t(zp.shape)} and the scale {_t(scale.shape)} differ in shape",
                suspects=[Suspect(o) for o in _os(zp) if o is not None][:4],
                kind="shape-mismatch",
            )
        for k, (a, b) in enumerate(zip(zp.shape, scale.shape, strict=True)):
            _agree(
                node,
                ctx,
                a,
                zp.origin(k),
                b,
                scale.origin(k),
                f"the zero point {_t(zp.shape)} and the scale {_t(scale.shape)} must have one shape",
                axis=k,
            )
    if x.shape is None or not scale.shape or (len(scale.shape) == 1 and scale.shape[0].value == 1):
        return
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", 1), r)
    block = attr_int(node, "block_size", 0)
    if block <= 0:
        if len(scale.shape) != 1:
            raise ShapeError(
                f"{_name(node)}: the scale {_t(scale.shape)} must be a scalar or 1-D (no block_size)",
                suspects=[Suspect(o) for o in _os(scale) if o is not None][:4],
                kind="shape-mismatch",
            )
        _agree(
            node,
            ctx,
            scale.shape[0],
            scale.origin(0),
            x.shape[axis],
            x.origin(axis),
            f"the per-axis scale {_t(scale.shape)} against axis {axis} of {_t(x.shape)}",
            axis=axis,
        )
        return
    if len(scale.shape) != r:
        raise ShapeError(
            f"{_name(node)}: the blocked scale {_t(scale.shape)} and the input {_t(x.shape)} differ in rank",
            suspects=[Suspect(o) for o in _os(scale) if o is not None][:4],
            kind="shape-mismatch",
        )
    for k in range(r):
        want = x.shape[k].ceildiv(block) if k == axis else x.shape[k]
        _agree(
            node,
            ctx,
            scale.shape[k],
            scale.origin(k),
            want,
            x.origin(k),
            f"the blocked scale {_t(scale.shape)} against the input {_t(x.shape)} in blocks of {block} on axis {axis}",
            axis=k,
        )


@register("QuantizeLinear")
def _quantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, scale, zp = known(_at(ins, 0)), _at(ins, 1), _at(ins, 2)
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
    x, scale, zp = known(_at(ins, 0)), _at(ins, 1), _at(ins, 2)
    _quant_params(node, ctx, x, scale, zp)
    return [same_as(x, scale.dtype if scale is not None and scale.dtype else "float32")]


@register("DynamicQuantizeLinear")
def _dynamic_quantize(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    return [same_as(_at(ins, 0), "uint8"), Value("float32", ()), Value("uint8", ())]


# -- attention -------------------------------------------------------------------------------------


def _heads(node: Node, ctx: Ctx, hidden: Expr, oh: Origin | None, heads: int, what: str) -> Expr:
    """``hidden / heads`` (one head's size); a :class:`ShapeError` when ``hidden`` is known not to divide."""
    if heads <= 0:
        raise ShapeError(f"{_name(node)}: {heads} heads", kind="invalid")
    hv = hidden.value
    if hv is not None and hv % heads:
        raise ShapeError(
            f"{_name(node)}: {what} {hidden} is not a multiple of {heads} heads",
            dims=(hidden, heads),
            suspects=_sus((oh, hidden)),
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
        _agree(
            node,
            ctx,
            v.shape[0],
            v.origin(0),
            fv.shape[0],
            fv.origin(0),
            f"{what} {_t(v.shape)} and {first[0]} {_t(fv.shape)} differ in batch",
            axis=0,
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
    _agree(
        node,
        ctx,
        k.shape[1],
        k.origin(1),
        v.shape[1],
        v.origin(1),
        f"K {_t(k.shape)} and V {_t(v.shape)} differ in heads",
        axis=1,
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
        _agree(
            node,
            ctx,
            pt.shape[1],
            pt.origin(1),
            a.hkv,
            a.o_hkv,
            f"{name} {_t(pt.shape)} against {a.hkv} kv heads",
            axis=1,
        )
        _agree(
            node, ctx, pt.shape[3], pt.origin(3), last, None, f"{name} {_t(pt.shape)} against head size {last}", axis=3
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
    q, k, v = known(_at(ins, 0)), known(_at(ins, 1)), known(_at(ins, 2))
    mask, pk, pv = _at(ins, 3), _at(ins, 4), _at(ins, 5)
    n_out = len(node.outputs)
    if q.shape is None or k.shape is None or v.shape is None:
        return _unknown(n_out, q.dtype)
    _same_batch(node, ctx, [("Q", q), ("K", k), ("V", v), ("past_key", pk), ("past_value", pv)])
    a = _attention_4d(node, ctx, q, k, v) if len(q.shape) == 4 else _attention_3d(node, ctx, q, k, v)
    kv_axis = 2 if len(q.shape) == 4 else 1
    _agree(
        node,
        ctx,
        k.shape[kv_axis],
        k.origin(kv_axis),
        v.shape[kv_axis],
        v.origin(kv_axis),
        f"K {_t(k.shape)} and V {_t(v.shape)} differ in sequence length",
        axis=kv_axis,
    )
    _agree(node, ctx, a.ek, k.origin(-1), a.e, a.o_e, f"Q {_t(q.shape)} and K {_t(k.shape)} differ in head size")
    hqv, hkvv = a.hq.value, a.hkv.value
    if hqv is not None and hkvv is not None and hkvv and hqv % hkvv:
        raise ShapeError(
            f"{_name(node)}: {hqv} query heads are not a multiple of {hkvv} key/value heads",
            dims=(a.hq, a.hkv),
            suspects=_sus((q.origin(1), a.hq), (a.o_hkv, a.hkv)),
        )
    total = _attention_past(node, ctx, pk, pv, a) + a.skv
    if mask is not None:
        _attention_mask(node, ctx, mask, a, total)
    b, hq, sq, ev = a.b, a.hq, a.sq, a.ev
    y = (b, hq, sq, ev) if len(q.shape) == 4 else (b, sq, hq * ev)
    outs = [
        _out(q.dtype, y),
        _out(k.dtype, (b, a.hkv, total, a.ek)),
        _out(v.dtype, (b, a.hkv, total, ev)),
        _out(q.dtype, (b, hq, sq, total)),
    ]
    return outs[: max(n_out, 1)]


@register("com.microsoft:Attention")
def _ms_attention(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft Attention: ``input [B, S, D] @ weights [D, q+k+v] + bias``, ``num_heads`` heads; the
    present state is ``[2, B, heads, past + S, head]``."""
    x, w, bias, past = known(_at(ins, 0)), known(_at(ins, 1)), _at(ins, 2), _at(ins, 4)
    n_out = len(node.outputs)
    heads = attr_int(node, "num_heads", 0)
    if not _rank_is(node, x, 3, "the input") or not _rank_is(node, w, 2, "the weights"):
        return _unknown(n_out, x.dtype)
    assert x.shape is not None and w.shape is not None
    b, s, d = x.shape
    _agree(
        node,
        ctx,
        w.shape[0],
        w.origin(0),
        d,
        x.origin(2),
        f"the weights {_t(w.shape)} against the input {_t(x.shape)}'s hidden size",
        axis=2,
    )
    sizes = attr_ints(node, "qkv_hidden_sizes")
    if sizes is not None:
        if len(sizes) != 3:
            raise ShapeError(f"{_name(node)}: qkv_hidden_sizes {sizes} must hold 3 sizes", kind="invalid")
        _agree(
            node,
            ctx,
            w.shape[1],
            w.origin(1),
            Expr.const(sum(sizes)),
            None,
            f"the weights {_t(w.shape)} against qkv_hidden_sizes {sizes}",
            axis=1,
        )
        hk, hv = Expr.const(sizes[1]), Expr.const(sizes[2])
    else:
        wv = w.shape[1].value
        if wv is not None and wv % 3:
            raise ShapeError(
                f"{_name(node)}: the weights {_t(w.shape)} do not split into Q, K and V",
                dims=(w.shape[1],),
                suspects=_sus((w.origin(1), w.shape[1])),
            )
        hk = hv = w.shape[1] // 3
    if bias is not None and _rank_is(node, bias, 1, "the bias"):
        assert bias.shape is not None
        _agree(
            node,
            ctx,
            bias.shape[0],
            bias.origin(0),
            w.shape[1],
            w.origin(1),
            f"the bias {_t(bias.shape)} against the weights {_t(w.shape)}",
            axis=0,
        )
    head = _heads(node, ctx, hk, None, heads, "the key hidden size")
    _heads(node, ctx, hv, None, heads, "the value hidden size")
    out = _out(x.dtype, (b, s, hv), (x.origin(0), x.origin(1), None))
    if past is not None and _rank_is(node, past, 5, "past"):
        assert past.shape is not None
        if attr_int(node, "past_present_share_buffer", 0):
            return [out, same_as(past)][: max(n_out, 1)]
        present: Dims = (Expr.const(2), b, Expr.const(heads), past.shape[3] + s, head)
    else:
        present = (Expr.const(2), b, Expr.const(heads), s, head)
    return [out, _out(x.dtype, present)][: max(n_out, 1)]


@register("MultiHeadAttention")
def _mha(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft MultiHeadAttention: query ``[B, S, D]`` (or packed ``[B, S, N, 3, H]``), key and value
    ``[B, L, D]``, ``[B, N, L, H]`` (no past) or packed ``[B, L, N, 2, H]``."""
    q, k, v = known(_at(ins, 0)), _at(ins, 1), _at(ins, 2)
    pk = _at(ins, 6)
    n_out = len(node.outputs)
    heads = attr_int(node, "num_heads", 0)
    if q.shape is None or (k is not None and k.shape is None) or (v is not None and v.shape is None):
        return _unknown(n_out, q.dtype)
    _same_batch(node, ctx, [("query", q), ("key", k), ("value", v), ("past_key", pk)])
    n = Expr.const(heads)
    past = pk.shape[2] if pk is not None and pk.shape is not None and len(pk.shape) == 4 else Expr.const(0)
    if len(q.shape) == 5:  # packed QKV
        b, s, _, _, h = q.shape
        out = _out(q.dtype, (b, s, n * h), (q.origin(0), q.origin(1), None))
        kv: Dims = (b, n, past + s, h)
        return [out, _out(q.dtype, kv), _out(q.dtype, kv)][: max(n_out, 1)]
    _rank_is(node, q, 3, "query")
    assert q.shape is not None
    b, s, d = q.shape
    h = _heads(node, ctx, d, q.origin(2), heads, "the query hidden size")
    if k is None or k.shape is None:
        raise ShapeError(f"{_name(node)}: a query {_t(q.shape)} needs a key", kind="invalid")
    if len(k.shape) == 5:  # packed KV
        hv = k.shape[4]
        _agree(
            node,
            ctx,
            k.shape[4],
            k.origin(4),
            h,
            None,
            f"the packed key/value {_t(k.shape)} against head size {h}",
            axis=4,
        )
        lk = k.shape[1]
        pres_k: Dims = (b, n, past + lk, h)
        pres_v: Dims = (b, n, past + lk, hv)
    elif len(k.shape) == 4:  # [B, N, L, H]: cross attention with the keys already projected
        _agree(node, ctx, k.shape[3], k.origin(3), h, None, f"the key {_t(k.shape)} against head size {h}", axis=3)
        hv = v.shape[3] if v is not None and v.shape is not None and len(v.shape) == 4 else _fresh(node, ctx, "hv")
        pres_k = k.shape
        pres_v = v.shape if v is not None and v.shape is not None else (b, n, k.shape[2], hv)
    else:
        _rank_is(node, k, 3, "key")
        _agree(
            node,
            ctx,
            k.shape[2],
            k.origin(2),
            d,
            q.origin(2),
            f"the key {_t(k.shape)} and the query {_t(q.shape)} differ in hidden size",
            axis=2,
        )
        if v is None or not _rank_is(node, v, 3, "value"):
            raise ShapeError(f"{_name(node)}: a key {_t(k.shape)} needs a value", kind="invalid")
        assert v.shape is not None
        _agree(
            node,
            ctx,
            v.shape[1],
            v.origin(1),
            k.shape[1],
            k.origin(1),
            f"the value {_t(v.shape)} and the key {_t(k.shape)} differ in sequence length",
            axis=1,
        )
        hv = _heads(node, ctx, v.shape[2], v.origin(2), heads, "the value hidden size")
        pres_k = (b, n, past + k.shape[1], h)
        pres_v = (b, n, past + k.shape[1], hv)
    out = _out(q.dtype, (b, s, n * hv), (q.origin(0), q.origin(1), None))
    return [out, _out(q.dtype, pres_k), _out(q.dtype, pres_v)][: max(n_out, 1)]


@register("RotaryEmbedding")
def _rotary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """ONNX RotaryEmbedding (opset 23): X, cos_cache, sin_cache, position_ids; X's shape comes out."""
    x = known(_at(ins, 0))
    _caches(node, ctx, _at(ins, 1), _at(ins, 2), 1)
    return [same_as(x)]


@register("com.microsoft:RotaryEmbedding")
def _ms_rotary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft RotaryEmbedding: input, position_ids, cos_cache, sin_cache; the input's shape comes out."""
    x = known(_at(ins, 0))
    _caches(node, ctx, _at(ins, 2), _at(ins, 3), 2)
    return [same_as(x)]


def _caches(node: Node, ctx: Ctx, cos: Value | None, sin: Value | None, first: int) -> None:
    if cos is None or sin is None or cos.shape is None or sin.shape is None:
        return
    if len(cos.shape) != len(sin.shape):
        raise ShapeError(
            f"{_name(node)}: cos_cache {_t(cos.shape)} and sin_cache {_t(sin.shape)} differ in rank",
            suspects=[Suspect(o) for o in _os(sin) + _os(cos) if o is not None][:4],
            kind="shape-mismatch",
        )
    for j, (a, b) in enumerate(zip(cos.shape, sin.shape, strict=True)):
        _agree(
            node,
            ctx,
            b,
            sin.origin(j),
            a,
            cos.origin(j),
            f"cos_cache {_t(cos.shape)} and sin_cache {_t(sin.shape)} must have one shape",
            axis=j,
        )


@register("GroupQueryAttention")
def _gqa(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    """com.microsoft GroupQueryAttention: query ``[B, S, N*H]`` (or packed with K and V), ``kv_num_heads``
    key/value heads; the present state is ``[B, kv heads, max(past, total_sequence_length), H]``."""
    q, k, v = known(_at(ins, 0)), _at(ins, 1), _at(ins, 2)
    pk, total_v = _at(ins, 3), _at(ins, 6)
    n_out = len(node.outputs)
    nq, nkv = attr_int(node, "num_heads", 0), attr_int(node, "kv_num_heads", 0)
    if not _rank_is(node, q, 3, "query"):
        return _unknown(n_out, q.dtype)
    assert q.shape is not None
    if nkv <= 0 or nq <= 0 or nq % nkv:
        raise ShapeError(
            f"{_name(node)}: num_heads {nq} must be a positive multiple of kv_num_heads {nkv}", kind="invalid"
        )
    b, s, d = q.shape
    if k is None:  # packed QKV
        h = _heads(node, ctx, d, q.origin(2), nq + 2 * nkv, "the packed QKV hidden size")
    else:
        h = _heads(node, ctx, d, q.origin(2), nq, "the query hidden size")
        for name, t in (("key", k), ("value", v)):
            if t is not None and _rank_is(node, t, 3, name):
                assert t.shape is not None
                _agree(
                    node,
                    ctx,
                    t.shape[2],
                    t.origin(2),
                    h * nkv,
                    None,
                    f"the {name} {_t(t.shape)} against {nkv} kv heads of size {h}",
                    axis=2,
                )
                _agree(
                    node,
                    ctx,
                    t.shape[1],
                    t.origin(1),
                    s,
                    q.origin(1),
                    f"the {name} {_t(t.shape)} and the query {_t(q.shape)} differ in sequence length",
                    axis=1,
                )
    _same_batch(node, ctx, [("query", q), ("key", k), ("value", v), ("past_key", pk)])
    total_raw = _scalar(total_v)
    total = total_raw if isinstance(total_raw, Expr) else _fresh(node, ctx, "total")
    seq = emax((pk.shape[2], total)) if pk is not None and pk.shape is not None and len(pk.shape) == 4 else total
    kv: Dims = (b, Expr.const(nkv), seq, h)
    out = _out(q.dtype, (b, s, h * nq), (q.origin(0), q.origin(1), None))
    return [out, _out(q.dtype, kv), _out(q.dtype, kv)][: max(n_out, 1)]


__all__ = ["window_size"]
