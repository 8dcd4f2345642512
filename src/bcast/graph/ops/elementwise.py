"""Ops whose definition broadcasts (ONNX's multidirectional and unidirectional ones), and unary ops.

Each broadcasting op is checked by bcast's rules through :meth:`Ctx.broadcast`; on small integer
values (shape arithmetic: ``Shape -> Gather -> Mul -> Concat``) the op is also *evaluated*, on
expressions, so that a computed Reshape or Expand target is known. Shape arithmetic done in floating
point (``Cast(to float) -> Div -> Ceil -> Cast(to int64)``: a "same" padding computed from the input's size)
is followed too, as exact :class:`Ratio` values, while every step keeps the value an exact rational.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ...dims import Tri
from ...operators import LEGACY_BROADCAST, MULTIDIRECTIONAL, SAME_SHAPE_BEFORE_8
from ..context import Ctx
from ..expr import Expr, emax, emin
from ..model import Node, Origin, Value
from ._base import (
    DATA_LIMIT,
    attr_int,
    dims_from_value,
    fill_of,
    known,
    note_fill,
    rank_of_length,
    register,
    same_as,
    static_numel,
)

Dims = tuple[Expr, ...]

_COMPARE = frozenset({"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"})


def onnx_rule(node: Node, opset: int) -> tuple[str, str, int]:
    """(description, bcast mode, axis) of an ONNX broadcasting node at ``opset``."""
    op = node.op
    if op in LEGACY_BROADCAST and opset < 7:
        if attr_int(node, "broadcast", 0):
            axis = attr_int(node, "axis", -1)
            where = f", axis {axis}" if axis != -1 else ""
            return f"ONNX legacy broadcast=1{where} (opset {opset})", "legacy", axis
        return f"ONNX no broadcasting (opset {opset}, broadcast=0)", "none", -1
    if op in SAME_SHAPE_BEFORE_8 and opset < 8:
        return f"ONNX equal shapes (opset {opset})", "same", -1
    return "ONNX multidirectional", "numpy", -1


#: what :func:`onnx_rule` says of every broadcasting op from opset 8 on
_MULTIDIRECTIONAL_RULE = ("ONNX multidirectional", "numpy", -1)


@register(*sorted(MULTIDIRECTIONAL))
def _multidirectional(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    vals = [v for v in ins if v is not None]
    names = [n for n in node.inputs if n]
    opset = ctx.opset(node.domain)
    rule, mode, axis = _MULTIDIRECTIONAL_RULE if opset >= 8 else onnx_rule(node, opset)
    out = ctx.broadcast(node, vals, rule, mode=mode, axis=axis, names=names)
    dtype = _dtype(node.op, vals)
    data = evaluate(node.op, vals, out) if out is not None else None
    if out is None and mode == "numpy" and all(v.shape is not None for v in vals):
        # an error was recorded: go on with fresh dims, so one mistake is reported once, not at every node after it
        rank = max(len(v.shape or ()) for v in vals)
        out = tuple(ctx.fresh(f"{node.name}_{k}") for k in range(rank))
    return [Value(dtype, out, data)]


def _dtype(op: str, vals: Sequence[Value]) -> str | None:
    if op in _COMPARE:
        return "bool"
    if op == "Where":
        return vals[1].dtype if len(vals) > 1 else None
    return vals[0].dtype if vals else None


# -- exact values of floating-point shape arithmetic ----------------------------------------------

#: the float types a size is exact in (every integer below 2**24 is a float32); half precision is not
_EXACT_FLOATS = frozenset({"float32", "float64"})
#: the largest denominator a floating-point constant may have to take part in exact arithmetic
_MAX_DENOMINATOR = 1 << 20


@dataclass(frozen=True)
class Ratio:
    """An element of a floating-point tensor that is exactly ``num / den`` (``den`` > 1, or 1 for an integer
    held in a float): a size cast to float and divided by a constant. A known number is a plain ``int`` or
    ``float`` instead, so that a ``Ratio`` always holds a symbol.

    Exact for sizes below 2**24: there a float32 holds every integer, and a quotient by a small constant never
    rounds across an integer, so ``ceil``, ``floor`` and truncation give what the runtime computes."""

    num: Expr
    den: int

    def __str__(self) -> str:
        return str(self.num) if self.den == 1 else f"({self.num})/{self.den}"


def ratio(num: Expr, den: int) -> Any:
    """``num / den`` in lowest terms: a :class:`Ratio`, or a plain number when ``num`` is known."""
    if den < 0:
        num, den = -num, -den
    v = num.value
    if v is not None:
        f = Fraction(v, den)
        return int(f) if f.denominator == 1 else float(f)
    g = den
    for _, c in num.terms:
        g = math.gcd(g, c)
    if g > 1:
        num, den = num // g, den // g
    return Ratio(num, den)


def _fraction(x: Any) -> tuple[Expr, int] | None:
    """``x`` as (numerator, denominator) when it is exact: a :class:`Ratio`, an integer, a float of a small
    denominator (0.5, 2.0)."""
    if isinstance(x, Ratio):
        return x.num, x.den
    if isinstance(x, Expr):
        return x, 1
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    f = Fraction(x)
    if f.denominator > _MAX_DENOMINATOR:
        return None
    return Expr.const(f.numerator), f.denominator


def _ratio_op(op: str, a: Any, b: Any) -> Any:
    """``a op b`` where one side is a :class:`Ratio`: exact, or ``None`` (a division by a symbol, a power)."""
    fa, fb = _fraction(a), _fraction(b)
    if fa is None or fb is None:
        return None
    (an, ad), (bn, bd) = fa, fb
    if op in ("Add", "Sum"):
        return ratio(an * bd + bn * ad, ad * bd)
    if op == "Sub":
        return ratio(an * bd - bn * ad, ad * bd)
    if op == "Mul":
        return ratio(an * bn, ad * bd)
    if op == "Div":
        k = bn.value
        return None if not k else ratio(an * bd, ad * k)
    if op in ("Max", "Min"):
        d = math.lcm(ad, bd)
        pair = (an * (d // ad), bn * (d // bd))
        return ratio(emax(pair) if op == "Max" else emin(pair), d)
    if op == "Pow" and ad == 1 and (bn.value, bd) == (1, 2) and an.lo is not None and an.lo >= 0:
        return Root(an)
    return None


@dataclass(frozen=True)
class Root:
    """An element of a floating-point tensor that is ``sqrt(num)``, ``num`` a size cast to float and raised to
    ``0.5`` (DPT's grid side from a count of patches). Nothing computes with it but a cast to an integer, which
    is ``isqrt(num)``: exact where float32's square root truncates as the integer one does, for a ``num`` below
    2**23 (the root of a non-square is at least ``1 / (2 * sqrt(num))`` from an integer, far more than float32
    rounds it by there)."""

    num: Expr

    def __str__(self) -> str:
        return f"sqrt({self.num})"


def _rounded(op: str, x: Any) -> Any:
    """Ceil, Floor or Round of one floating-point element (``None`` when not known exactly)."""
    if isinstance(x, Ratio):
        n, d = x.num, x.den
        if op == "Ceil":
            return ratio(n.ceildiv(d), 1)
        if op == "Floor":
            return ratio(n // d, 1)
        # round half to even: with an odd denominator no value is halfway, and rounding is floor(x + 1/2)
        return ratio((2 * n + d) // (2 * d), 1) if d % 2 else None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    if op == "Ceil":
        return math.ceil(x)
    return math.floor(x) if op == "Floor" else round(x)


def _truncated(x: Ratio) -> Expr | None:
    """A float element cast to an integer (truncation toward zero), when its sign is known."""
    if x.den == 1:
        return x.num
    lo = x.num.lo
    if lo is not None and lo >= 0:
        return x.num // x.den
    lo = (-x.num).lo
    if lo is not None and lo >= 0:
        return -((-x.num) // x.den)
    return None


def _as_float(e: Any, dtype: str | None) -> Any:
    """An element cast to the float type ``dtype``: a known number as it is, an integer expression as an exact
    :class:`Ratio` where ``dtype`` holds every size (``None`` otherwise)."""
    if isinstance(e, Expr):
        v = e.value
        if v is not None:
            return v
        return Ratio(e, 1) if dtype in _EXACT_FLOATS else None
    if isinstance(e, (Ratio, Root)):
        return e if dtype in _EXACT_FLOATS else None
    return e


# -- evaluation on small values ----------------------------------------------------------------


def _int_div(a: Expr, b: Expr) -> Expr | None:
    bv, av = b.value, a.value
    if bv == 0:
        return None
    if av is not None and bv is not None:
        q = abs(av) // abs(bv)
        return Expr.const(q if (av >= 0) == (bv > 0) else -q)  # C division truncates toward zero
    return a // b  # sizes are >= 0: floor and truncation agree


def _tri_int(t: Tri) -> Expr | None:
    return None if t is Tri.MAYBE else Expr.const(1 if t is Tri.YES else 0)


def _cmp(a: Expr, b: Expr, op: Callable[[int, int], bool]) -> Expr | None:
    av, bv = a.value, b.value
    if av is None or bv is None:
        d = a - b
        lo, hi = d.lo, (-d).lo
        if lo is not None and lo > 0:  # a > b for sure
            return Expr.const(int(op(1, 0)))
        if hi is not None and hi > 0:  # a < b for sure
            return Expr.const(int(op(0, 1)))
        return None
    return Expr.const(int(op(av, bv)))


def _num(x: Any) -> Any:
    if isinstance(x, Expr):
        return x.value
    if isinstance(x, Root):
        return None  # a root of a size is cast, never computed with
    return x


def _float_op(op: str, a: Any, b: Any) -> Any:
    fa, fb = _num(a), _num(b)
    if fa is None or fb is None:
        return None
    try:
        if op == "Add":
            return fa + fb
        if op == "Sub":
            return fa - fb
        if op == "Mul":
            return fa * fb
        if op == "Div":
            return fa / fb
        if op == "Pow":
            return _float_pow(float(fa), float(fb))
        if op == "Max":
            return max(fa, fb)
        if op == "Min":
            return min(fa, fb)
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    return None


def _float_pow(a: float, b: float) -> float | None:
    """``a ** b`` where a cast to an integer takes it to the same integer in single precision and in double alike:
    a whole number in both (``16 ** 0.5``: a table's side from its length, as DINOv2 computes it), or a fraction
    far from any integer (``24 ** 0.5``, 4.899: DPT's grid side from a count of patches that is no square), where
    no library's last bit can carry it across one; ``None`` near an integer, where the two may round to different
    integers after a cast."""
    r = a**b
    if isinstance(r, complex) or not math.isfinite(r) or abs(r) > 2**24:
        return None
    if not r.is_integer():
        return r if abs(r - round(r)) > _FAR_FROM_WHOLE * max(1.0, abs(r)) else None
    with np.errstate(all="ignore"):
        single = float(np.float32(a) ** np.float32(b))
    return r if single == r else None


#: how far, relative to its size, a fraction must be from every integer to be cast as the runtime casts it: far
#: beyond float32's rounding (6e-8) and any two libraries' difference in the last bits of a power
_FAR_FROM_WHOLE = 1e-4


def _int_pow(a: Expr, b: Expr) -> Expr | None:
    """An integer power: of a known integer, within int64; of a size, by a small known exponent (an area from
    its side)."""
    x, k = a.value, b.value
    if k is None or k < 0 or k > 64:
        return None
    if x is None:
        if k > 4:
            return None
        out = Expr.const(1)
        for _ in range(k):
            out = out * a
        return out
    r = x**k
    return Expr.const(r) if -(2**63) <= r < 2**63 else None


_EXPR_OPS: dict[str, Callable[[Expr, Expr], Expr | None]] = {
    "Pow": _int_pow,
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": _int_div,
    "Mod": lambda a, b: None if b.value == 0 else a % b,
    "Max": lambda a, b: emax((a, b)),
    "Min": lambda a, b: emin((a, b)),
    "Equal": lambda a, b: _tri_int(a.eq(b)),
    "Greater": lambda a, b: _cmp(a, b, lambda x, y: x > y),
    "Less": lambda a, b: _cmp(a, b, lambda x, y: x < y),
    "GreaterOrEqual": lambda a, b: _cmp(a, b, lambda x, y: x >= y),
    "LessOrEqual": lambda a, b: _cmp(a, b, lambda x, y: x <= y),
    "And": lambda a, b: _cmp(a, b, lambda x, y: bool(x and y)) if a.is_const and b.is_const else None,
    "Or": lambda a, b: _cmp(a, b, lambda x, y: bool(x or y)) if a.is_const and b.is_const else None,
    "Sum": lambda a, b: a + b,
}


def evaluate(op: str, vals: Sequence[Value], out: Dims) -> tuple[Any, ...] | None:
    """The op's value on small known operands, broadcast to ``out`` (``None`` when not known)."""
    if op not in _ABSORBING and any(v.data is None for v in vals):
        return None  # the commonest case, a tensor of unknown values, told before the output's size is
    n = static_numel(out)
    if n is None or n > DATA_LIMIT or any(v.shape is None for v in vals):
        return None
    if any(v.data is None for v in vals):
        return _absorbed(op, vals, n)
    shape = [int(d.value or 0) for d in out]
    cols = [_broadcast_data(v, shape) for v in vals]
    if any(c is None for c in cols):
        return None
    if op == "Where":
        res: list[Any] = []
        for c, x, y in zip(*cols, strict=True):
            cv = _num(c)
            if cv is None:
                return None
            res.append(x if cv else y)
        return tuple(res)
    if op == "Mean":
        return None
    fn = _EXPR_OPS.get(op)
    if fn is None:
        return None
    out_vals: list[Any] = []
    for items in zip(*cols, strict=True):
        acc = items[0]
        for b in items[1:]:
            acc = _apply(op, fn, acc, b)
            if acc is None:
                return None
        out_vals.append(acc)
    return tuple(out_vals)


def _apply(op: str, fn: Callable[[Expr, Expr], Expr | None], a: Any, b: Any) -> Any:
    """One element of ``a op b``: on integer expressions, on exact ratios (float shape arithmetic), on numbers."""
    if isinstance(a, Ratio) or isinstance(b, Ratio):
        return _ratio_op(op, a, b)
    if isinstance(a, Expr) and isinstance(b, Expr):
        return fn(a, b)
    return _float_op(op, a, b)


#: the logical ops with a value that decides their output whatever the other operand holds
_ABSORBING = {"And": 0, "Or": 1}


def _absorbed(op: str, vals: Sequence[Value], n: int) -> tuple[Any, ...] | None:
    """``And`` with an operand all false, ``Or`` with one all true: that value at each of the ``n`` elements,
    whatever the other operand holds (tf2onnx's strided slices test ``end == 10**9 and stride < 0``, where the
    first half is undecided on a size and the second is false). ``None`` for any other op or operands."""
    absorbing = _ABSORBING.get(op)
    if absorbing is None:
        return None
    for v in vals:
        truths = [_truth(e) for e in v.data or ()]
        if truths and all(t is not None and t.value == absorbing for t in truths):
            return (Expr.const(absorbing),) * n
    return None


def _broadcast_data(v: Value, shape: list[int]) -> list[Any] | None:
    assert v.data is not None and v.shape is not None
    src = [d.value for d in v.shape]
    if any(s is None for s in src):
        return None
    dims = [int(s) for s in src if s is not None]
    if math.prod(dims) != len(v.data):
        return None
    rank = len(shape)
    dims = [1] * (rank - len(dims)) + dims
    strides = [0] * rank
    step = 1
    for k in range(rank - 1, -1, -1):
        strides[k] = 0 if dims[k] == 1 else step
        step *= dims[k]
    out: list[Any] = []
    total = math.prod(shape)
    for flat in range(total):
        rem, idx = flat, 0
        for k in range(rank - 1, -1, -1):
            i = rem % shape[k] if shape[k] else 0
            rem //= shape[k] if shape[k] else 1
            idx += i * strides[k]
        out.append(v.data[idx])
    return out


# -- unidirectional ones -------------------------------------------------------------------------


@register("PRelu")
def _prelu(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, slope = known(ins[0]), known(ins[1] if len(ins) > 1 else None)
    ctx.broadcast_into(
        node, slope, x.shape, "ONNX unidirectional (slope to X)", mode="numpy", names=[node.inputs[1], node.inputs[0]]
    )
    return [same_as(x)]


@register("Expand")
def _expand(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, target = known(ins[0]), known(ins[1] if len(ins) > 1 else None)
    dv = dims_from_value(node, target, "the target shape")
    if dv is None:
        n = (
            rank_of_length(node, target.shape[0], "the shape input")
            if target.shape is not None and len(target.shape) == 1
            else None
        )
        if n is None or x.shape is None:
            return [Value(x.dtype, None)]
        # the target's values are unknown but its length is not: fresh dims, one per axis
        dims: tuple[Expr, ...] = tuple(ctx.fresh(f"{node.name}_shape_{k}") for k in range(n))
        origins: tuple[Origin | None, ...] = (Origin(node.name, node.op),) * len(dims)
    else:
        dims, origins = dv
    tv = Value(target.dtype, dims, None, origins)
    out = ctx.broadcast_into(node, x, dims, "ONNX Expand (bidirectional)", mode="bidirectional", target_value=tv)
    if out is None:
        return [Value(x.dtype, None)]
    note_fill(ctx, node, fill_of(ctx, node.inputs[0], x))
    return [Value(x.dtype, out, expanded_data(x, out))]


def expanded_data(x: Value, out: Dims) -> tuple[Any, ...] | None:
    """``x``'s small value broadcast to ``out`` (static, at most :data:`DATA_LIMIT` elements), else ``None``:
    what Expand computes, and OpenVINO's Broadcast with it."""
    if x.data is None or x.shape is None:
        return None
    n = static_numel(out)
    if n is None or n > DATA_LIMIT:
        return None
    got = _broadcast_data(x, [int(d.value or 0) for d in out])
    return None if got is None else tuple(got)


_UNARY = [
    "Abs",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BitwiseNot",
    "Ceil",
    "Celu",
    "Clip",
    "Cos",
    "Cosh",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Identity",
    "IsInf",
    "IsNaN",
    "LeakyRelu",
    "Log",
    "LogSoftmax",
    "Mish",
    "Neg",
    "Not",
    "Reciprocal",
    "Relu",
    "Round",
    "Selu",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softmax",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "FastGelu",
    "BiasGelu",
    "QuickGelu",
]


@register(*_UNARY)
def _unary(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0] if ins else None)
    dtype = "bool" if node.op in ("Not", "IsInf", "IsNaN") else x.dtype
    data = None
    if node.op == "Identity":
        return [x]
    if node.op == "Neg" and x.ints is not None:
        data = tuple(-e for e in x.ints)
    elif node.op == "Abs" and x.consts is not None:
        data = tuple(Expr.const(abs(v)) for v in x.consts)
    elif x.data is not None:
        data = _unary_data(node, ins, x.data)
    return [Value(dtype, x.shape, data, x.origins, x.data_origins if data is not None else None)]


def _unary_data(node: Node, ins: list[Value | None], data: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The value of a unary op that shape arithmetic uses on small values (rounding, negation, Clip), when
    every element is known exactly."""
    got: list[Any] = []
    for e in data:
        if node.op in ("Ceil", "Floor", "Round"):
            v = e if isinstance(e, Expr) else _rounded(node.op, e)  # an integer is its own rounding
        elif node.op == "Neg":
            v = _apply("Sub", _EXPR_OPS["Sub"], 0, e) if not isinstance(e, Expr) else -e
        elif node.op == "Clip":
            v = _clipped(node, ins, e)
        else:
            return None
        if v is None:
            return None
        got.append(v)
    return tuple(got)


def _clipped(node: Node, ins: list[Value | None], e: Any) -> Any:
    """One element of Clip: its bounds are inputs (opset 11 on) or attributes (before), each optional."""
    bounds: list[tuple[str, Any]] = []
    for k, attr, op in ((1, "min", "Max"), (2, "max", "Min")):
        if attr in node.attrs:
            bounds.append((op, float(node.attrs[attr])))
        elif k < len(ins) and ins[k] is not None:
            b = known(ins[k]).data
            if b is None or len(b) != 1:
                return None
            bounds.append((op, b[0]))
    return clamp(e, bounds)


#: sizes, and the values shape arithmetic makes of them, lie within int64: a bound outside binds none of them
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def clamp(e: Any, bounds: Sequence[tuple[str, Any]]) -> Any:
    """One element through ``bounds`` in turn, each ``("Max", low)`` or ``("Min", high)``: ONNX's Clip and
    OpenVINO's Clamp on the small values of shape arithmetic; ``None`` when not known exactly.

    On a size or an exact ratio of one, a bound outside int64 binds nothing and is left out (OpenVINO writes a
    clamp from below as ``max = 3.4e38``): kept, ``min(x, 3.4e38)`` would stay in every expression after it.

    >>> x = Expr.symbol("x")
    >>> clamp(ratio(x - 3, 2), [("Max", 0.0), ("Min", 3.4028234663852886e38)])
    Ratio(num=Expr('max(0, x - 3)'), den=2)
    >>> clamp(7.5, [("Max", 0.0), ("Min", 5.0)])
    5.0
    """
    exact = isinstance(e, (Expr, Ratio))
    for op, b in bounds:
        v = b.value if isinstance(b, Expr) else b
        if exact and isinstance(v, (int, float)) and (v >= _INT64_MAX if op == "Min" else v <= _INT64_MIN):
            continue
        e = _apply(op, _EXPR_OPS[op], e, b)
        if e is None:
            return None
    return e


@register("Dropout")
def _dropout(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    return [x, Value("bool", x.shape, None, x.origins)]


_NUMPY_DTYPE = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "str",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
}


def _truth(e: Any) -> Expr | None:
    if isinstance(e, Expr):
        zero = e.eq(0)
        return None if zero is Tri.MAYBE else Expr.const(0 if zero is Tri.YES else 1)
    return Expr.const(int(bool(e)))


def dtype_name(code: int) -> str:
    return _NUMPY_DTYPE.get(code, f"type{code}")


@register("Cast", "CastLike")
def _cast(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x = known(ins[0])
    if node.op == "CastLike":
        dtype = known(ins[1] if len(ins) > 1 else None).dtype
    else:
        dtype = dtype_name(int(node.attrs.get("to", 1)))
    data: tuple[Any, ...] | None = None
    if x.data is not None:
        data = _cast_data(x.data, dtype)
    return [Value(dtype, x.shape, data, x.origins, x.data_origins if data is not None else None)]


def _cast_data(values: tuple[Any, ...], dtype: str | None) -> tuple[Any, ...] | None:
    """A small value cast to ``dtype``: to a float, integers stay exact (:func:`_as_float`); to an integer,
    floats are truncated toward zero (an exact integer stays itself); ``None`` where an element is not known."""
    if dtype in ("float16", "float32", "float64", "bfloat16"):
        got = [_as_float(e, dtype) for e in values]
    elif dtype == "bool":
        got = [_truth(e.num if isinstance(e, (Ratio, Root)) else e) for e in values]  # zero exactly where num is
    else:
        got = [_as_int(e) for e in values]
    return None if any(v is None for v in got) else tuple(got)


def _as_int(e: Any) -> Expr | None:
    if isinstance(e, Expr):
        return e
    if isinstance(e, Ratio):
        return _truncated(e)
    if isinstance(e, Root):
        return e.num.isqrt()
    if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e):
        return None
    return Expr.const(int(e))
