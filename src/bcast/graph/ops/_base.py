"""The registry of shape functions and what they share: reading attributes, axes and shape values.

A shape function takes ``(node, ins, ctx)``: the node, its inputs' :class:`~bcast.graph.model.Value`
(``None`` for an absent optional input) and the propagation's :class:`~bcast.graph.context.Ctx`,
and returns one :class:`Value` per output (fewer: the rest are unknown). It raises
:class:`~bcast.graph.context.ShapeError` for shapes its op cannot take.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ...constraints import Constraint
from ...dims import Dim, Tri
from ...files import MAX_MODEL_RANK
from ..context import Ctx, Finding, ShapeError, Suspect
from ..expr import Expr, Opaque
from ..model import Node, Origin, Value

__all__ = [
    "CONTRACTS",
    "DATA_LIMIT",
    "FLOAT_LIMIT",
    "SHAPES",
    "Latent",
    "ShapeFn",
    "agree",
    "at_most",
    "axes_of",
    "axis_of",
    "constant_term",
    "dims_from_value",
    "dims_text",
    "element_origins",
    "elements",
    "fill_of",
    "fresh_dim",
    "input_value",
    "known",
    "new_value",
    "nonzero_count",
    "norm_findings",
    "note_fill",
    "numel",
    "op_label",
    "origins_of",
    "rational_scale",
    "register",
    "require",
    "same_as",
    "scalar_of",
    "shape_value",
    "sizes_where",
    "suspects_of",
]

ShapeFn = Callable[[Node, list[Value | None], Ctx], list[Value]]

#: shape functions by op type (``"Add"``; an op of another domain as ``"domain:Op"``)
SHAPES: dict[str, ShapeFn] = {}

#: the most elements a value is kept for: shape tensors are tiny, weights are never values
DATA_LIMIT = 4096
#: the most elements a floating-point constant's value is kept for: a scale, a Range bound, a clamp value (what
#: propagation computes with) are a few; the biases and norms of a small model are many, and only weights
FLOAT_LIMIT = 64

Dims = tuple[Expr, ...]


def register(*ops: str) -> Callable[[ShapeFn], ShapeFn]:
    def add(fn: ShapeFn) -> ShapeFn:
        for op in ops:
            SHAPES[op] = fn
        return fn

    return add


def known(v: Value | None) -> Value:
    return v if v is not None else Value(None, None)


def input_value(ins: Sequence[Value | None], k: int) -> Value | None:
    return ins[k] if k < len(ins) else None


def numel(dims: Dims) -> Expr:
    """The product of ``dims``: the static ones multiplied as integers, then the symbolic ones (a product of
    expressions is in normal form whatever its order)."""
    k = 1
    out: Expr | None = None
    for d in dims:
        v = d.value
        if v is not None:
            k *= v
        else:
            out = d if out is None else out * d
    if out is None:
        return Expr.const(k)
    return out if k == 1 else out * Expr.const(k)


def static_numel(dims: Dims) -> int | None:
    vals = [d.value for d in dims]
    if any(v is None for v in vals):
        return None
    return math.prod(v for v in vals if v is not None)


def axis_of(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative; a :class:`ShapeError` otherwise."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{node.op} {node.name}: {what} {axis} is out of range for rank {rank}", kind="invalid")
    return axis % rank


def axes_of(
    node: Node, ins: Sequence[Value | None], rank: int, *, attr: str = "axes", input_index: int = 1, what: str = "axes"
) -> list[int] | None:
    """An op's axes, from its attribute (older opsets) or its input (newer); ``None`` when unknown."""
    if attr in node.attrs:
        raw = node.attrs[attr]
        given = [int(a) for a in raw] if isinstance(raw, (list, tuple)) else [int(raw)]
        return [axis_of(node, a, rank, what) for a in given]
    v = input_value(ins, input_index)
    if v is None:
        return []
    consts = v.consts
    return None if consts is None else [axis_of(node, a, rank, what) for a in consts]


def shape_value(v: Value | None) -> list[Expr] | None:
    """A 1-D shape tensor's elements (Reshape's, Expand's target), when propagation knows them."""
    if v is None:
        return None
    return v.ints


def elements(v: Value, k: int) -> tuple[Expr, Origin | None]:
    assert v.data is not None
    return v.data[k], v.data_origin(k)


def dims_from_value(node: Node, v: Value | None, what: str) -> tuple[Dims, tuple[Origin | None, ...]] | None:
    """A shape tensor's elements as dims and each one's origin, or ``None`` when its value is unknown."""
    ints = shape_value(v)
    if ints is None or v is None:
        return None
    for k, e in enumerate(ints):
        if e.value is not None and e.value < 0:
            o = v.data_origin(k)
            raise ShapeError(
                f"{node.op} {node.name}: {what} holds {e.value} at position {k}: a size is 0 or more",
                dims=(e.value,),
                suspects=[Suspect(o, e.value)] if o else (),
                kind="invalid",
            )
    return tuple(ints), element_origins(v)


def rank_of_length(node: Node, n: Expr, what: str) -> int | None:
    """The rank a 1-D shape input of ``n`` values gives (``None``: unknown); a :class:`ShapeError` past
    :data:`~bcast.files.MAX_MODEL_RANK`, before any dim of it is made."""
    v = n.value
    if v is None:
        return None
    if v > MAX_MODEL_RANK:
        name = node.inputs[1] if len(node.inputs) > 1 else node.inputs[0]
        raise ShapeError(
            f"{node.op} {node.name}: {what} {name!r} holds {v:,} values: a rank above {MAX_MODEL_RANK} "
            "(the most a model's tensor may have)",
            kind="invalid",
        )
    return int(v)


def same_as(v: Value | None, dtype: str | None = None) -> Value:
    """An output of the input's shape (elementwise unary ops), keeping its origins, not its data."""
    v = known(v)
    return Value(dtype or v.dtype, v.shape, None, v.origins)


def data_of(values: Sequence[Any], limit: int = DATA_LIMIT) -> tuple[Any, ...] | None:
    return tuple(values) if len(values) <= limit else None


def constant_term(e: Expr) -> int:
    """The constant term of ``e`` (0 where it has none)."""
    return next((c for m, c in e.terms if not m), 0)


def at_most(a: Expr, n: int) -> bool:
    """Whether ``a <= n`` at every size (a ``min`` of which one argument is: ``min(5, S - 1) + 1 <= 6``)."""
    spare = (n - a).lo
    if spare is not None and spare >= 0:
        return True
    c = constant_term(a)
    inner = (a - c).atom
    return isinstance(inner, Opaque) and inner.op == "min" and any(at_most(arg + c, n) for arg in inner.args)


def fill_of(ctx: Ctx, name: str, v: Value | None) -> Any:
    """The one value every element of the tensor ``name`` holds (``v`` its value), where known: noted by the op that
    filled it (:attr:`Ctx.filled`), or read off its data; ``None`` when not known or not one value."""
    got = ctx.filled.get(name) if name else None
    if got is not None or v is None or not v.data:
        return got
    first = v.data[0]
    one = first.value if isinstance(first, Expr) else first
    if one is None or any((x.value if isinstance(x, Expr) else x) != one for x in v.data):
        return None
    return one


def nonzero_count(ctx: Ctx, name: str, x: Value) -> Expr | None:
    """How many elements of the tensor ``name`` (value ``x``) are not zero, where known: all of them when each holds
    one value other than zero (ONNX's ``NonZero(ConstantOfShape(shape, 1))``, an exporter's way to count), none when
    each is zero, else counted off its data; ``None`` when not known (a count of the data's own)."""
    if x.shape is None:
        return None
    fill = fill_of(ctx, name, x)
    if fill is not None:
        return numel(x.shape) if fill != 0 else Expr.const(0)
    n = static_numel(x.shape)
    if x.data is None or n is None or len(x.data) != n:
        return None
    values = [e.value if isinstance(e, Expr) else e for e in x.data]
    if any(v is None for v in values):
        return None
    return Expr.const(sum(1 for v in values if v != 0))


def note_fill(ctx: Ctx, node: Node, fill: Any) -> None:
    """Note that every element of ``node``'s first output holds ``fill`` (nothing where ``fill`` is ``None``)."""
    if fill is not None and node.outputs and node.outputs[0]:
        ctx.filled[node.outputs[0]] = fill


def attr_int(node: Node, name: str, default: int) -> int:
    v = node.attrs.get(name, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError(f"{node.op} {node.name}: the attribute {name} is {v!r}, not an integer", kind="invalid")
    return v


def attr_ints(node: Node, name: str, default: Sequence[int] | None = None) -> list[int] | None:
    v = node.attrs.get(name)
    if v is None:
        return None if default is None else list(default)
    if isinstance(v, int):
        return [v]
    return [int(x) for x in v]


def op_label(node: Node) -> str:
    """How a message names a node: its op and its label (``Conv conv_3``)."""
    return f"{node.op} {node.label}"


def dims_text(dims: Sequence[Expr] | None) -> str:
    """Dims as a message shows them: ``[N,3]``, ``[?]`` for an unknown rank."""
    return "[?]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def element_origins(v: Value) -> tuple[Origin | None, ...]:
    """Where each element of ``v``'s value was made: its data origins whole where there is one per element."""
    n = len(v.data or ())
    got = v.data_origins
    if got is not None and len(got) == n:
        return got
    return tuple(v.data_origin(k) for k in range(n))


def origins_of(v: Value) -> list[Origin | None]:
    """Where each dim of ``v`` was made (``None``: nowhere known): its origins whole where there is one per axis."""
    rank = len(v.shape or ())
    origins = v.origins
    if origins is not None and len(origins) == rank:
        return list(origins)
    return [v.origin(k) for k in range(rank)]


def suspects_of(*pairs: tuple[Origin | None, Expr]) -> list[Suspect]:
    """The suspects of a finding: each (origin, dim) pair whose origin is known."""
    return [Suspect(o, e.value) for o, e in pairs if o is not None]


def fresh_dim(node: Node, ctx: Ctx, what: str | int) -> Expr:
    """A new symbol for a dim of ``node``'s output that its inputs do not decide."""
    return ctx.fresh(f"{node.name}_{what}")


def scalar_of(v: Value | None) -> Any:
    """The one element of a small tensor (an :class:`Expr` for integers, a float), ``None`` when unknown."""
    if v is None or v.data is None or len(v.data) != 1:
        return None
    return v.data[0]


def new_value(dtype: str | None, dims: Sequence[Expr] | None, origins: Sequence[Origin | None] | None = None) -> Value:
    """An output of these dims (``None``: of unknown rank) and origins, with no data."""
    if dims is None:
        return Value(dtype, None)
    return Value(dtype, tuple(dims), None, tuple(origins) if origins is not None else None)


#: the kinds of finding for what an op requires of its inputs' shapes beyond broadcasting, each with its
#: definite form (an error: it fails at every size) and its latent form (a warning: it fails at some)
CONTRACTS = {
    "concat-mismatch": "Concat's inputs differ off the concatenation axis",
    "reshape-count": "a Reshape's target holds another number of elements than its input",
    "matmul-inner": "MatMul's or Gemm's inner dims differ",
    "conv-channels": "a convolution's input channels, groups or bias against its weight",
    "split-sizes": "a Split's parts against the axis they split",
    "index-out-of-range": "a constant index past the end of its axis",
    "einsum-letters": "one Einsum letter with two sizes",
    "norm-contract": "a normalization's scale, bias or statistics against the channels they scale",
    "attention-contract": "attention's query, key, value, caches and heads against each other",
}


@dataclass(frozen=True)
class Latent:
    """Where a condition on a model's sizes fails and where it holds, found by trying sizes of its symbols."""

    #: the condition's failure in words: ``when H is odd (e.g. H = 31; it holds at H = 32)``
    text: str
    fails: dict[str, int]
    holds: dict[str, int] | None


#: the sizes a symbol is tried at, and the size examples are chosen near (a typical size of a model's input)
_TRIED = range(1, 161)
_NEAR = 32
#: sizes tried for each symbol when several take part, and the most points tried
_GRID = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128)
_MAX_POINTS = 1024
#: how far sizes are tried, all symbols alike, for a condition that fails wherever it was tried first
_FAR = 4096
#: how far a least size past :data:`_FAR` is looked for, to be said (a window's, which then stays a warning)
_HUGE = 1 << 24


def _distance(env: dict[str, int]) -> tuple[int, tuple[int, ...]]:
    return sum(abs(v - _NEAR) for v in env.values()), tuple(env.values())


def _show(env: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in env.items())


def _tried(holds: Callable[[dict[str, int]], bool], env: dict[str, int]) -> bool | None:
    try:
        return bool(holds(env))
    except (ArithmeticError, KeyError, ValueError):  # a size where the expressions are undefined: no answer
        return None


def _values(name: str, ranges: Mapping[str, tuple[int, int | None]], tried: Iterable[int]) -> list[int]:
    """The sizes of ``tried`` in ``name``'s range; where none is, the first sizes of the range itself."""
    lo, hi = ranges.get(name, (1, None))
    inside = [v for v in tried if v >= lo and (hi is None or v <= hi)]
    if inside:
        return inside
    last = lo + len(_TRIED) - 1
    return list(range(lo, last + 1 if hi is None else min(hi, last) + 1))


def _points(symbols: list[str], ranges: Mapping[str, tuple[int, int | None]]) -> Iterator[dict[str, int]]:
    if len(symbols) == 1:
        yield from ({symbols[0]: v} for v in _values(symbols[0], ranges, _TRIED))
        return
    # every symbol one size (a square image), where their ranges meet
    common = set(_values(symbols[0], ranges, _TRIED))
    for name in symbols[1:]:
        common &= set(_values(name, ranges, _TRIED))
    yield from (dict.fromkeys(symbols, v) for v in sorted(common))
    grid = _GRID if len(symbols) <= 2 else _GRID[::3]
    axes = [_values(name, ranges, grid) for name in symbols]
    for combo in itertools.islice(itertools.product(*axes), _MAX_POINTS):
        yield dict(zip(symbols, combo, strict=True))


def sizes_where(
    holds: Callable[[dict[str, int]], bool],
    symbols: Iterable[str],
    ranges: Mapping[str, tuple[int, int | None]] | None = None,
) -> Latent | None:
    """Where ``holds`` (a condition on sizes of ``symbols``, each 1 or more, or in its range of ``ranges``:
    ``(lo, hi)``, ``hi`` ``None`` for no end) fails, said in words; ``None`` when it holds at every size
    tried. The sizes are tried, not proven: this only words a condition that the expressions could not
    decide, and a condition that holds wherever it is tried is not reported."""
    names = sorted(symbols)
    if not names:
        return None
    ranges = ranges or {}
    seen = [(env, _tried(holds, env)) for env in _points(names, ranges)]
    bad = [env for env, ok in seen if ok is False]
    if not bad:
        return None
    good = [env for env, ok in seen if ok]
    if not good:  # fails wherever it was tried: perhaps one size fits (a target made for one input size)
        for v in range(_TRIED.stop, _FAR + 1):
            env = dict.fromkeys(names, v)
            if any(not _inside(ranges, k, v) for k in names):
                continue
            if _tried(holds, env):
                good = [env]
                break
    fails = min(bad, key=_distance)
    hold = min(good, key=_distance) if good else None
    rule = _pattern(names[0], {env[names[0]]: ok for env, ok in seen}) if len(names) == 1 else None
    if rule is not None:
        text, by_residues = rule
        if by_residues and hold is not None:  # odd, not a multiple of 4: an example of each side
            text += f" (e.g. {_show(fails)}; it holds at {_show(hold)})"
    elif hold is None:
        text = f"it fails at every size tried (e.g. {_show(fails)})"
    else:
        only = " only" if len(good) <= 2 else ""
        text = f"it fails at {_show(fails)} and holds{only} at {_show(hold)}"
    return Latent(text, fails, hold)


def _inside(ranges: Mapping[str, tuple[int, int | None]], name: str, v: int) -> bool:
    lo, hi = ranges.get(name, (1, None))
    return v >= lo and (hi is None or v <= hi)


def _pattern(name: str, ok: dict[int, bool | None]) -> tuple[str, bool] | None:
    """The failing sizes of one symbol in words when they follow a rule, and whether the rule goes by
    residues: all but a few sizes, below or above a size, odd or even, not a multiple of ``p``, some residues
    mod ``p`` (these from size 16 on, past the sizes too small to mean much); ``None`` otherwise."""
    sizes = sorted(v for v, r in ok.items() if r is not None)
    failing = [v for v in sizes if not ok[v]]
    if not failing or len(failing) == len(sizes):
        return None
    holding = [v for v in sizes if ok[v]]
    if len(holding) <= 3:
        return f"it fails unless {name} is {_or(holding)}", False
    if all(not ok[v] for v in sizes if v <= failing[-1]) and all(ok[v] for v in sizes if v > failing[-1]):
        return f"it fails when {name} <= {failing[-1]}", False
    if all(ok[v] for v in sizes if v < failing[0]) and all(not ok[v] for v in sizes if v >= failing[0]):
        return f"it fails when {name} >= {failing[0]}", False
    tail = [v for v in sizes if v >= 16]
    for p in range(2, 33):
        if not all(ok.get(v) == ok.get(v + p) for v in tail if v + p in ok):
            continue
        res = sorted({v % p for v in tail if not ok[v]})
        if not res or len(res) == p:
            return None
        if p == 2:
            return f"it fails when {name} is {'odd' if res == [1] else 'even'}", True
        if res == list(range(1, p)):
            return f"it fails when {name} is not a multiple of {p}", True
        if res == [0]:
            return f"it fails when {name} is a multiple of {p}", True
        return f"it fails when {name} mod {p} is {_or(res)}", True
    return None


def _or(items: Sequence[int]) -> str:
    words = [str(x) for x in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def least_sizes(
    holds: Callable[[dict[str, int]], bool],
    symbols: Iterable[str],
    ranges: Mapping[str, tuple[int, int | None]] | None = None,
    far: int = _FAR,
) -> dict[str, int] | None:
    """The least size of each symbol from which ``holds`` holds, when that is all it says: it holds exactly where
    every symbol is at least its least size, at every point :func:`sizes_where` tries (an input too small for the
    windows and strides of a network: ``floor(H/32) >= 1``). The symbols whose least size is their range's first
    (1 by default) are left out. ``None`` for any other condition (one that fails above a size, or at some
    residues, or wherever tried), or one that holds everywhere.

    Each least size is found with the other symbols at ``far`` (no end of their range: :data:`_FAR`), by bisection
    (the condition is then checked at every point tried, so a condition that is not monotone is never taken for one).

    >>> least_sizes(lambda env: env["H"] // 32 >= 1, ["H", "B"])
    {'H': 32}
    >>> least_sizes(lambda env: env["H"] % 2 == 0, ["H"]) is None
    True
    """
    names = sorted(symbols)
    ranges = ranges or {}
    top: dict[str, int] = {}
    for s in names:
        hi = ranges.get(s, (1, None))[1]
        top[s] = far if hi is None else hi
    if not names or _tried(holds, top) is not True:
        return None
    least: dict[str, int] = {}
    for s in names:
        lo = ranges.get(s, (1, None))[0]
        if _tried(holds, {**top, s: lo}) is True:
            continue
        bad, good = lo, top[s]  # fails at bad, holds at good: bisect
        while good - bad > 1:
            mid = (bad + good) // 2
            ok = _tried(holds, {**top, s: mid})
            if ok is None:
                return None
            bad, good = (bad, mid) if ok else (mid, good)
        least[s] = good
    if not least:
        return None
    for env in _points(names, ranges):
        ok = _tried(holds, env)
        if ok is not None and ok != all(env[s] >= n for s, n in least.items()):
            return None
    return least


def _least_text(least: Mapping[str, int]) -> str:
    return " and ".join(f"{s} >= {n}" for s, n in least.items())


def _least_note(ctx: Ctx, least: Mapping[str, int]) -> tuple[str, str, tuple[Constraint, ...]]:
    """``(severity, what the user gave, bounds)`` of a least size: a note, unless ``--dim`` ranges reach below it."""
    given = [s for s in least if s in ctx.sizes and ctx.sizes[s][0] < least[s]]
    meant = "; " + ", ".join(
        f"{s} is given as {lo}..{'' if hi is None else hi}" for s in given for lo, hi in [ctx.sizes[s]]
    )
    bounds = tuple(Constraint("in", (s,), (Dim.interval(n, None),)) for s, n in least.items())
    return ("warning", meant, bounds) if given else ("info", "", bounds)


def require(
    node: Node,
    ctx: Ctx,
    kind: str,
    condition: str,
    holds: Callable[[dict[str, int]], bool],
    dims: Sequence[Expr],
    *,
    axis: int | None = None,
    suspects: Sequence[Suspect] = (),
    least: bool = False,
) -> bool:
    """A requirement of ``node``'s op that its inputs' sizes meet for some sizes, not all (the latent form
    of ``kind``): a warning saying for which sizes it fails, unless it involves a dim propagation lost, says
    only that input dims the file left unnamed agree (what the model needs of its inputs, not a bug of it),
    or holds at every size tried. Whether it was reported.

    Sizes are tried from the least sizes the model's windows need on (:meth:`Ctx.ranges
    <bcast.graph.context.Ctx.ranges>`). With ``least`` (a window against its input), a requirement that holds
    exactly from a least size of each symbol on is the model's smallest input: a note, and those sizes are where
    later requirements are tried from."""
    if ctx.is_lost(dims) or (len(dims) > 1 and ctx.links_unnamed_inputs(dims)):
        return False
    symbols: set[str] = set()
    for d in dims:
        symbols |= d.symbols
    if _length_limit(node, ctx, condition, holds, dims, symbols, axis, suspects):
        return True
    axes = ctx.unnamed_axes(symbols)
    if axes is not None and len(set(axes.values())) < len(axes):
        # only an IR's unnamed input dims: those at one axis of different inputs stand for one quantity
        # (two inputs' batch); what holds once they are one size is how the model must be called
        def as_one(env: dict[str, int]) -> bool:
            return holds({s: env[f"axis{k}"] for s, k in axes.items()})

        if sizes_where(as_one, {f"axis{k}" for k in axes.values()}) is None:
            return False
    ranges = ctx.ranges()
    found = sizes_where(holds, symbols, ranges)
    if found is None:
        return False
    smallest = least_sizes(holds, symbols, ranges) if least else None
    if smallest is not None:
        _note_least(node, ctx, kind, condition, smallest, dims, axis, suspects)
        return True
    if least and found.holds is None:
        # fails at every size tried: a least size far past them (a fixed window as wide as a network's channels, on
        # a map 32 times smaller than the image) is said as such, and stays a warning
        huge = least_sizes(holds, symbols, ranges, far=_HUGE)
        if huge is not None:
            found = Latent(f"it holds only from {_least_text(huge)} on, past every size tried", found.fails, None)
    fixed = _one_size(holds, symbols) if all(ctx.is_unnamed_input(x) for x in symbols) else None
    severity = "warning"
    if fixed is not None:
        # an input dim the file leaves unnamed and open (a converter that kept no shapes) that the model needs
        # to be one size above 1 (a head count, an image size): how the model must be called, noted. A dim
        # that must be 1 stays a warning: a batch or a length fixed to 1 is the bug it usually is
        severity = "info"
        ctx.note_sized(*fixed)
        found = Latent(
            f"{fixed[0]} is an input dim the file leaves open: the model needs it to be {fixed[1]}", {}, None
        )
    ctx.problem(
        node,
        kind,
        f"{op_label(node)}: {condition}; {found.text}",
        axis=axis,
        dims=dims,
        suspects=suspects,
        severity=severity,
        condition=(holds, frozenset(symbols)),
    )
    return True


def _note_least(
    node: Node,
    ctx: Ctx,
    kind: str,
    condition: str,
    smallest: dict[str, int],
    dims: Sequence[Expr],
    axis: int | None,
    suspects: Sequence[Suspect],
) -> None:
    """A requirement that holds from a least size of each symbol on (an input too small for the network's windows
    and strides): the model's smallest input, noted as a length limit is, a warning where --dim ranges reach below
    it; and the sizes later requirements are tried from."""
    for name, n in smallest.items():
        ctx.least[name] = max(n, ctx.least.get(name, 1))
    severity, meant, bounds = _least_note(ctx, smallest)
    ctx.problem(
        node,
        kind,
        f"{op_label(node)}: {condition}; the model works only for {_least_text(smallest)} (smaller sizes fail here)"
        + meant,
        axis=axis,
        dims=dims,
        suspects=suspects,
        severity=severity,
        bounds=bounds,
    )


def settle_requirements(ctx: Ctx) -> None:
    """Once the relations between the inputs' dims are settled (:meth:`Ctx.settle_relations
    <bcast.graph.context.Ctx.settle_relations>`), each warning that sizes may break is looked at again at the sizes
    at which the inputs meet them (:meth:`Ctx.as_called <bcast.graph.context.Ctx.as_called>`): one that holds at
    every such size tried fails only where the model is called as it must not be (OPT's positions, the mask's
    ``total_seq`` less the cache's ``past_seq``, against ``seq`` new tokens: no call of the model breaks it), and
    becomes a relation itself (listed with the symbols where it says what dims must be). What was marked its
    consequence is a finding of its own again."""
    settled: set[int] = set()
    for i, f in enumerate(ctx.findings):
        sized = ctx.open_size(f) if f.severity == "warning" else None
        if sized is not None:  # as require notes one (the heads of a cross-attention cache), before the rest
            _noted(ctx, f, *sized, or_one=True)
            settled.add(i)
    for i, f in enumerate(ctx.findings):
        condition, f.condition = f.condition, None
        if condition is None or f.severity != "warning":
            continue
        called = ctx.as_called(*condition)
        if called is None:
            if ctx.least and not condition[1].isdisjoint(ctx.least) and sizes_where(*condition, ctx.ranges()) is None:
                # it fails only below the least sizes the model's windows need, where it fails anyway (Longformer's
                # min(4, seq) rows of a window against 4, with seq >= 8): a note of what those sizes already say
                f.severity = "info"
                f.message += f"; it holds from the model's least sizes on ({_least_text(ctx.least)})"
                settled.add(i)
            continue
        found = sizes_where(*called, ctx.ranges())
        if found is None:
            f.severity = "relation"
            settled.add(i)
            continue
        fixed = _open_size_at(called[0], called[1], found, ctx)
        if fixed is not None:
            # as in require: what the contracts leave of it needs one open input dim at one size (the head size of a
            # cross-attention cache that a converter left open), noted
            _noted(ctx, f, *fixed)
            settled.add(i)
    if settled:
        for f in ctx.findings:
            if f.cause in settled:
                f.cause = None


def _length_limit(
    node: Node,
    ctx: Ctx,
    condition: str,
    holds: Callable[[dict[str, int]], bool],
    dims: Sequence[Expr],
    symbols: set[str],
    axis: int | None,
    suspects: Sequence[Suspect],
) -> bool:
    """Whether a requirement that two dims agree holds exactly within a table's size (a window of a rotary
    cache against the sequence it rotates): then it is the model's limit, noted as such (:meth:`Ctx.note_limit
    <bcast.graph.context.Ctx.note_limit>`). That the dims agree within the limit is proven; that ``holds`` says
    no more than that they agree is checked at the sizes tried within it."""
    if len(dims) != 2:
        return False
    limit = ctx.limit_conditions(dims[0], dims[1])
    if limit is None:
        return False

    def within(env: dict[str, int]) -> bool:
        return any(a.evaluate(env) > n for a, n in limit) or holds(env)

    if sizes_where(within, symbols) is not None:
        return False
    origin = next((s.origin for s in suspects if s.origin.op in ("Slice", "StridedSlice")), None)
    ctx.note_limit(
        node, limit, f"{op_label(node)}: {condition}", axis=axis, dims=dims, suspects=suspects, origin=origin
    )
    return True


def _noted(ctx: Ctx, f: Finding, symbol: str, size: int, *, or_one: bool = False) -> None:
    """The warning ``f`` made a note: the model needs the open input dim ``symbol`` at ``size`` (or 1, where it
    broadcasts: ``or_one``)."""
    ctx.note_sized(symbol, size)
    f.severity = "info"
    f.condition = None
    sizes = f"1 or {size}" if or_one else f"{size}"
    f.message += f"; {symbol} is an input dim the file leaves open: the model needs it to be {sizes}"


def _open_size_at(
    holds: Callable[[dict[str, int]], bool], symbols: set[str], found: Latent, ctx: Ctx
) -> tuple[str, int] | None:
    """``(S, n)`` when one of ``symbols``, ``S``, is an input dim the file leaves unnamed and open and ``holds`` holds
    with ``S`` at ``n > 1`` at every size tried of the others, where no other size of ``S`` makes it hold at the sizes
    it failed at (``found``)."""
    for name in sorted(symbols):
        if not ctx.is_unnamed_input(name) or ctx.linked(name):
            continue
        sizes = [v for v in _TRIED if _tried(holds, {**found.fails, name: v})]
        if len(sizes) != 1 or sizes[0] < 2:
            continue
        rest = symbols - {name}
        if not rest or sizes_where(_with_sizes(holds, {name: sizes[0]}), rest, ctx.ranges()) is None:
            return name, sizes[0]
    return None


def _with_sizes(holds: Callable[[dict[str, int]], bool], at: dict[str, int]) -> Callable[[dict[str, int]], bool]:
    """``holds`` with the symbols of ``at`` at its sizes."""
    return lambda env: holds({**env, **at})


def _one_size(holds: Callable[[dict[str, int]], bool], symbols: set[str]) -> tuple[str, int] | None:
    """``(S, n)`` when ``holds`` is a condition on the one symbol ``S`` that holds at the one size ``n > 1``
    of those tried."""
    if len(symbols) != 1:
        return None
    (name,) = symbols
    sizes = [v for v in _TRIED if _tried(holds, {name: v})]
    return (name, sizes[0]) if len(sizes) == 1 and sizes[0] > 1 else None


def agree(
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
    kind: str = "shape-mismatch",
) -> Tri:
    """``a`` and ``b`` must be one size: a :class:`ShapeError` of ``kind`` when they differ for sure, a
    warning of ``kind`` saying for which sizes they differ when they may (:func:`require`). ``ones``: a 1 on
    either side is fine too (the op broadcasts it)."""
    t = a.eq(b)
    if t is Tri.YES or (ones and (a.value == 1 or b.value == 1)):
        return Tri.YES
    sus = suspects_of((oa, a), (ob, b))
    if t is Tri.NO:
        raise ShapeError(f"{op_label(node)}: {what}: {a} against {b}", axis=axis, dims=(a, b), suspects=sus, kind=kind)

    def same(env: dict[str, int]) -> bool:
        x, y = a.evaluate(env), b.evaluate(env)
        return x == y or (ones and 1 in (x, y))

    require(
        node,
        ctx,
        kind,
        f"{what}: needs {a} == {b}" + (" (or either to be 1)" if ones else ""),
        same,
        (a, b),
        axis=axis,
        suspects=sus,
    )
    return t


def norm_findings(ctx: Ctx, since: int) -> None:
    """The findings made since ``since`` by broadcasting a normalization's scale, bias or skip into its input
    (onnxruntime takes any that broadcasts to it) are that op's contract: of kind ``norm-contract``. A
    constraint keeps what it says of the symbols; one on unnamed input dims stays a relation."""
    for f in ctx.findings[since:]:
        if f.kind in ("cannot-broadcast", "constraint"):
            f.kind = "norm-contract"


def rational_scale(scale: float, runtime: Callable[[np.ndarray], np.ndarray]) -> tuple[int, int] | None:
    """``scale`` as ``p/q`` when the runtime's resized size (``runtime(sizes)``, the sizes an int64 array) is
    ``floor(size*p/q)`` for every size up to 2**16: 2.0 is 2/1, 0.5 is 1/2, 1/3 in float32 is 1/3 only if
    the runtime's rounding never breaks it. ``None`` when no small fraction is."""
    if not math.isfinite(scale) or scale <= 0:
        return None
    f = Fraction(scale).limit_denominator(64)
    p, q = f.numerator, f.denominator
    sizes = np.arange(1, 2**16 + 1, dtype=np.int64)
    try:
        got = runtime(sizes)
    except (ArithmeticError, ValueError):
        return None
    return (p, q) if np.array_equal(got, (sizes * p) // q) else None
