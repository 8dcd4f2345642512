"""Control flow (If, Loop, Scan) and sequences: ops whose outputs come from a body, or hold many tensors.

A body is propagated like the graph around it, with the same :class:`~bcast.graph.context.Ctx`:
its nodes' findings join the model's (each node is labelled with the nodes around it, ``loop_3/add_7``), and
its nodes see the outer scope's tensors, which :func:`~bcast.graph.propagate.propagate` leaves in
``ctx.values`` before each node. Bodies are propagated through :meth:`~bcast.graph.context.Ctx.walk`,
the callback propagation leaves in the context, so that this module never imports propagation. A body
is walked once: a Loop's carried tensor keeps its shape only where one iteration leaves it unchanged,
and gets fresh symbols elsewhere, so nothing is claimed of later iterations that the first does not show.

A sequence is a :class:`~bcast.graph.model.Value` of unknown shape whose ``data`` is one
:class:`Seq`: its elements when they are known one by one (SequenceConstruct, a split into a
known number of parts), else the shape every element shares (a split into parts of one size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ...dims import Tri
from ..context import Ctx, ShapeError, Suspect
from ..expr import Expr, emax, emin
from ..model import Declared, Graph, Node, Origin, Value
from ._base import attr_int, axis_of, input_value, known, register
from .elementwise import Ratio, dtype_name

__all__ = ["Seq", "sequence_of"]

Dims = tuple[Expr, ...]

#: the most elements a sequence is followed one by one; a longer one keeps only a shape they share
MAX_ELEMENTS = 256


def _name(node: Node) -> str:
    return f"{node.op} {node.label}"


def _t(dims: Sequence[Expr] | None) -> str:
    return "[?]" if dims is None else "[" + ",".join(str(d) for d in dims) + "]"


def _truth(v: Value | None) -> bool | None:
    """A condition's value when propagation knows it."""
    if v is None or v.data is None or len(v.data) != 1:
        return None
    x = v.data[0]
    if isinstance(x, Expr):
        zero = x.eq(0)
        return None if zero is Tri.MAYBE else zero is Tri.NO
    if isinstance(x, (int, float)):
        return bool(x)
    return None


# -- bodies ----------------------------------------------------------------------------------------


def _declared_value(ctx: Ctx, name: str, decl: Declared | None) -> Value:
    """A formal input that nothing binds: what its body declares (unnamed dims fresh)."""
    if decl is None or decl.dims is None:
        return Value(decl.dtype if decl is not None else None, None)
    for d in decl.dims:
        for a in d.atoms if d is not None else ():
            ctx.reserve(a)  # a fresh symbol must not take a name the body uses
    dims = tuple(d if d is not None else ctx.fresh(f"{name}_{k}") for k, d in enumerate(decl.dims))
    return Value(decl.dtype, dims, None, (Origin(name, "input", "input"),) * len(dims))


def _run_body(node: Node, ctx: Ctx, key: str, bound: Sequence[Value | None]) -> list[Value] | None:
    """Propagate the body ``key`` of ``node`` with its formal inputs bound to ``bound`` (``None``: what the
    body declares) and the outer scope visible; its outputs' values (``None``: no such body)."""
    body = node.bodies.get(key)
    if body is None:
        return None
    scope: dict[str, Value] = dict(ctx.values or {})
    for (name, decl), v in zip(body.inputs.items(), [*bound, *([None] * len(body.inputs))], strict=False):
        scope[name] = v if v is not None else _declared_value(ctx, name, decl)
    values = ctx.walk(replace(body, inputs={}), scope)
    return [values.get(name, Value(None, None)) for name in body.outputs]


def _merge(node: Node, ctx: Ctx, k: int, a: Value, b: Value) -> Value:
    """One output of two branches: each dim where they agree, a fresh symbol where they may not."""
    if _seq(a) is not None or _seq(b) is not None:
        return a if a == b else Value(a.dtype or b.dtype, None)
    return _agreed(node, ctx, k, a, b)


def _agreed(node: Node, ctx: Ctx, k: int, a: Value, b: Value, lead: Sequence[Expr] = ()) -> Value:
    """Output ``k`` where a tensor may be ``a`` or ``b`` (two branches, a loop's first and later iterations):
    each dim where they agree (``a``'s origin), a fresh symbol where they may not, the value where they hold
    the same one; ``lead`` dims first (then no value is kept). Unknown when their ranks may differ."""
    dtype = a.dtype or b.dtype
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return Value(dtype, None)
    dims: list[Expr] = list(lead)
    origins: list[Origin | None] = [None] * len(lead)
    for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)):
        if x.eq(y) is Tri.YES:
            dims.append(x)
            origins.append(a.origin(i))
        else:
            dims.append(ctx.fresh(f"{node.name}_{k}_{i}"))
            origins.append(None)
    data = a.data if not lead and a.data is not None and a.data == b.data else None
    return Value(dtype, tuple(dims), data, tuple(origins), a.data_origins if data is not None else None)


@register("If")
def _if(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    n = len(node.outputs)
    taken = _truth(input_value(ins, 0))
    keys = ["then_branch"] if taken is True else ["else_branch"] if taken is False else ["then_branch", "else_branch"]
    outs = [_run_body(node, ctx, key, []) for key in keys]
    got = [o for o in outs if o is not None]
    if not got:
        return [Value(None, None)] * n
    for o in got:
        if len(o) != n:
            raise ShapeError(f"{_name(node)}: a branch has {len(o)} outputs, the node {n}", kind="invalid")
    if len(got) == 1:
        return list(got[0])
    return [_merge(node, ctx, k, a, b) for k, (a, b) in enumerate(zip(got[0], got[1], strict=True))]


def _carried(node: Node, ctx: Ctx, k: int, first: Value | None, after: Value, lead: Sequence[Expr] = ()) -> Value:
    """A loop-carried tensor after the loop: the first iteration's input where the body leaves it as it was,
    fresh symbols where it does not (``lead``: dims the outer tensor has before the body's, Scan-8's batch)."""
    if first is None:
        return Value(after.dtype, None)
    if _seq(first) is not None or _seq(after) is not None:
        return first if first == after else Value(first.dtype, None)
    return _agreed(node, ctx, k, first, after, lead)


def _stacked(dtype: str | None, lead: Sequence[Expr], v: Value, axis: int = 0) -> Value:
    """A scan output: the body's per-iteration value with the iteration count inserted at ``axis``."""
    if v.shape is None:
        return Value(dtype or v.dtype, None)
    dims = list(v.shape)
    origins: list[Origin | None] = [v.origin(i) for i in range(len(dims))]
    dims[axis:axis] = list(lead)
    origins[axis:axis] = [None] * len(lead)
    return Value(dtype or v.dtype, tuple(dims), None, tuple(origins))


def _shape_only(v: Value | None) -> Value | None:
    if v is None or v.data is None or _seq(v) is not None:
        return v
    return Value(v.dtype, v.shape, None, v.origins)


@register("Loop")
def _loop(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    n_carried = max(0, len(node.inputs) - 2)
    m, cond = input_value(ins, 0), input_value(ins, 1)
    initial = [input_value(ins, 2 + j) for j in range(n_carried)]
    # inside the body the condition is true (else it would not run), and a carried tensor's value changes
    # from one iteration to the next: its first value would be a guess at the others
    running = Value("bool", (), (Expr.const(1),))
    carried = [_shape_only(v) for v in initial]
    # the iteration number is one symbol throughout an iteration: Slice(x, i, i + 1) has length 1
    iteration = Value("int64", (), (ctx.fresh(f"{node.name}_iter"),))
    outs = _run_body(node, ctx, "body", [iteration, running, *carried])
    if outs is None:
        return [Value(None, None)] * len(node.outputs)
    if len(outs) < 1 + n_carried:
        raise ShapeError(
            f"{_name(node)}: the body has {len(outs)} outputs for a condition and {n_carried} carried tensors",
            kind="invalid",
        )
    # the trip count: M when nothing can end the loop early; else the data decides it
    trips_m = m.data[0] if m is not None and m.data is not None and len(m.data) == 1 else None
    endless = cond is None or (_truth(cond) is True and _truth(outs[0]) is True)
    if cond is not None and _truth(cond) is False:
        trips: Expr = Expr.const(0)
    elif isinstance(trips_m, Expr) and endless:
        trips = trips_m
    elif endless and m is not None:
        trips = ctx.fresh(f"{node.name}_trips")
    else:
        counted = _counted_trips(node, ctx, trips_m, initial) if isinstance(trips_m, Expr) else None
        trips = counted if counted is not None else ctx.fresh(f"{node.name}_trips", free=True)
    result = [_carried(node, ctx, j, initial[j], outs[1 + j]) for j in range(n_carried)]
    result += [_stacked(None, (trips,), v) for v in outs[1 + n_carried :]]
    return result


def _counted_trips(node: Node, ctx: Ctx, most: Expr, initial: Sequence[Value | None]) -> Expr | None:
    """The trip count of a loop that counts, as tf2onnx writes a ``tf.while_loop`` (a Keras RNN over a
    sequence); ``None`` where the loop is not one.

    The body's condition must be an ``And`` of tests ``x < Y`` (through casts), each ``x`` the iteration number
    or a carried counter (``+ 1`` each iteration from a known start), plus a constant, and each ``Y`` the same in
    every iteration: at the end of iteration ``k``, ``x`` is ``k + o``, so iteration ``k + 1`` runs while every
    ``k + o < Y``, and ``T``, the least ``Y - o + 1``, is where that ends. The first condition must be tests
    ``c < Y`` of known ``c``, each failing only where one of the body's fails at the start (a test of the same
    ``Y`` with ``o - 1 >= c``), so that where it is false ``T <= 0`` too. With ``G`` the least ``Y - c`` (at
    least 1 exactly where the first condition holds), the loop runs ``max(0, min(M, 1, G), min(M, T))``
    times: none where the first condition fails, else the first iteration and as many as the tests and
    ``M`` allow."""
    body = node.bodies.get("body")
    if body is None or len(body.outputs) < 1 + len(initial):
        return None
    names = list(body.inputs)
    made = {o: n for n in body.nodes for o in n.outputs if o}
    counters: dict[str, Expr] = {}  # a carried counter's input name -> its value before the first iteration
    invariants: dict[str, Expr] = {}  # a carried tensor the body passes on unchanged -> its value
    for j, first in enumerate(initial):
        inner, outer = names[2 + j] if 2 + j < len(names) else None, body.outputs[1 + j]
        start = _one_int(first)
        if inner is None or start is None:
            continue
        if outer == inner:
            invariants[inner] = start
        elif _plus_constant(_through_casts(outer, made), made, body, ctx) == (inner, 1):
            counters[inner] = start

    def offset(name: str, depth: int = 0) -> int | None:
        """``o`` where ``name`` is ``k + o`` at the end of iteration ``k`` (``None``: it is not)."""
        name = _through_casts(name, made)
        if names and name == names[0]:
            return 0
        if name in counters:
            return counters[name].value
        step = _plus_constant(name, made, body, ctx)
        if step is None or depth > 8:
            return None
        inner = offset(step[0], depth + 1)
        return None if inner is None else inner + step[1]

    def fixed(name: str) -> Expr | None:
        name = _through_casts(name, made)
        return invariants.get(name) if name in invariants else _constant(name, made, body, ctx)

    body_tests = _tests(body.outputs[0], made, offset, fixed)
    first_tests = _tests(node.inputs[1], None, lambda n: _as_int(_constant(n, None, None, ctx)), fixed, ctx)
    if not body_tests or not first_tests:
        return None
    for c, y in first_tests:
        if not any(yy.eq(y) is Tri.YES and o - 1 >= c for o, yy in body_tests):
            return None
    # a trip count of 2**31 - 1 or more is no bound but "until the condition ends it" (tf2onnx writes INT_MAX)
    bound = [] if most.value is not None and most.value >= 2**31 - 1 else [most]
    at_first = emin([*bound, 1, *(y - c for c, y in first_tests)])
    return emax([0, at_first, emin([*bound, *(y - o + 1 for o, y in body_tests)])])


def _one_int(v: Value | None) -> Expr | None:
    """The one integer element of a small value (a counter's start, a bound), also held in a float (a whole
    number, a size cast to float); ``None`` otherwise."""
    if v is None or v.data is None or len(v.data) != 1:
        return None
    x = v.data[0]
    if isinstance(x, Ratio):
        return x.num if x.den == 1 else None
    if isinstance(x, float):
        return Expr.const(int(x)) if x.is_integer() else None
    return x if isinstance(x, Expr) else None


def _as_int(e: Expr | None) -> int | None:
    return None if e is None else e.value


def _made_by(name: str, made: dict[str, Node] | None, ctx: Ctx | None) -> Node | None:
    """The node that makes ``name``: of the body (``made``, its producers), else of the graph around it
    (:meth:`Ctx.producer`)."""
    if made is not None:
        return made.get(name)
    return ctx.producer(name) if ctx is not None else None


def _through_casts(name: str, made: dict[str, Node] | None, ctx: Ctx | None = None) -> str:
    """The tensor ``name`` is a cast or a copy of (a counter compared as a float is the counter)."""
    for _ in range(8):
        p = _made_by(name, made, ctx)
        if p is None or p.op not in ("Identity", "Cast") or not p.inputs:
            break
        name = p.inputs[0]
    return name


def _constant(name: str, made: dict[str, Node] | None, body: Graph | None, ctx: Ctx) -> Expr | None:
    """The one integer a tensor holds in every iteration: a constant of the body, or a tensor of the scope
    around it whose value propagation knows."""
    if body is not None and name in body.constants:
        return _one_int(body.constants[name])
    if made is not None and name in made:
        return None
    return _one_int((ctx.values or {}).get(name))


def _plus_constant(name: str, made: dict[str, Node], body: Graph, ctx: Ctx) -> tuple[str, int] | None:
    """``(x, k)`` where ``name`` is ``x + k`` for a known integer ``k`` (an ``Add`` in the body)."""
    p = made.get(name)
    if p is None or p.op != "Add" or len(p.inputs) != 2:
        return None
    for a, b in (p.inputs, p.inputs[::-1]):
        k = _as_int(_constant(_through_casts(b, made), made, body, ctx))
        if k is not None:
            return _through_casts(a, made), k
    return None


def _tests(
    name: str,
    made: dict[str, Node] | None,
    left: Callable[[str], int | None],
    right: Callable[[str], Expr | None],
    ctx: Ctx | None = None,
) -> list[tuple[int, Expr]] | None:
    """The tests ``x < Y`` whose ``And`` is the condition ``name``, as ``(left(x), right(Y))`` pairs; ``None``
    where it is anything else. ``made``: the body's producers (``None``: the graph around it, through ``ctx``)."""
    out: list[tuple[int, Expr]] = []
    todo: list[str] = [name]
    seen: set[str] = set()
    while todo:
        if len(seen) > 64:  # no loop of an exporter tests that much; a crafted And tree would walk forever
            return None
        t = _through_casts(todo.pop(), made, ctx)
        if t in seen:  # an And of a test with itself (tf2onnx's first condition) tests it once
            continue
        seen.add(t)
        p = _made_by(t, made, ctx)
        if p is None or len(p.inputs) != 2:
            return None
        if p.op == "And":
            todo += p.inputs
            continue
        if p.op not in ("Less", "Greater"):
            return None
        x, y = p.inputs if p.op == "Less" else p.inputs[::-1]
        o, bound = left(x), right(y)
        if o is None or bound is None:
            return None
        out.append((o, bound))
    return out


@register("Scan")
def _scan(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    opset8 = ctx.opset(node.domain) < 9
    off = 1 if opset8 else 0
    m = attr_int(node, "num_scan_inputs", 0)
    vals = [known(v) for v in ins[off:]]
    n_state = len(vals) - m
    if m <= 0 or n_state < 0:
        raise ShapeError(f"{_name(node)}: num_scan_inputs {m} for {len(vals)} inputs", kind="invalid")
    states, scans = vals[:n_state], vals[n_state:]
    in_axes = [0] * m if opset8 else list(node.attrs.get("scan_input_axes") or [0] * m)
    if len(in_axes) != m:
        raise ShapeError(f"{_name(node)}: scan_input_axes {in_axes} for {m} scan inputs", kind="invalid")
    lead: list[Expr] = []
    if opset8:  # [batch, sequence, ...]: the body sees one batch element at one step
        batch = next((v.shape[0] for v in [*states, *scans] if v.shape), None)
        lead = [batch if batch is not None else ctx.fresh(f"{node.name}_batch")]
        body_states = [
            Value(v.dtype, v.shape[1:], None, v.origins[1:] if v.origins else None) if v.shape else Value(v.dtype, None)
            for v in states
        ]
    else:
        body_states = [Value(v.dtype, v.shape, None, v.origins) if _seq(v) is None else v for v in states]
    slices: list[Value] = []
    seq: tuple[Expr, Origin | None, Value, int] | None = None
    for j, v in enumerate(scans):
        if v.shape is None:
            slices.append(Value(v.dtype, None))
            continue
        skip = 1 if opset8 else 0
        axis = axis_of(node, int(in_axes[j]), len(v.shape) - skip, "scan_input_axes") + skip
        d, o = v.shape[axis], v.origin(axis)
        if seq is None:
            seq = (d, o, v, axis)
        elif d.eq(seq[0]) is Tri.NO:
            sus = [Suspect(x, e.value) for x, e in ((seq[1], seq[0]), (o, d)) if x is not None]
            raise ShapeError(
                f"{_name(node)}: the scan inputs differ in length: {seq[0]} (axis {seq[3]} of "
                f"{_t(seq[2].shape)}) and {d} (axis {axis} of {_t(v.shape)})",
                axis=axis,
                dims=(seq[0], d),
                suspects=sus,
            )
        keep = [i for i in range(len(v.shape)) if i != axis and i >= skip]
        slices.append(Value(v.dtype, tuple(v.shape[i] for i in keep), None, tuple(v.origin(i) for i in keep)))
    steps = seq[0] if seq is not None else ctx.fresh(f"{node.name}_steps")
    outs = _run_body(node, ctx, "body", [*body_states, *slices])
    if outs is None:
        return [Value(None, None)] * len(node.outputs)
    result = [
        _carried(node, ctx, j, body_states[j], outs[j] if j < len(outs) else Value(None, None), lead)
        for j in range(n_state)
    ]
    scan_outs = outs[n_state:]
    out_axes = list(node.attrs.get("scan_output_axes") or [0] * len(scan_outs))
    for k, v in enumerate(scan_outs):
        if opset8:
            result.append(_stacked(None, [*lead, steps], v))
            continue
        axis = int(out_axes[k]) if k < len(out_axes) else 0
        if v.shape is not None:
            axis = axis_of(node, axis, len(v.shape) + 1, "scan_output_axes")
        result.append(_stacked(None, (steps,), v, axis if v.shape is not None else 0))
    return result


# -- sequences -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seq:
    """What is known of a sequence: its elements one by one, or a value they all share, and its length."""

    elems: tuple[Value, ...] | None = None
    common: Value | None = None
    length: Expr | None = None


def sequence_of(elem_dtype: str | None, seq: Seq) -> Value:
    if seq.elems is not None and len(seq.elems) > MAX_ELEMENTS:
        seq = Seq(None, _common(seq.elems), Expr.const(len(seq.elems)))
    if seq.elems is not None and seq.length is None:
        seq = replace(seq, length=Expr.const(len(seq.elems)))
    return Value(f"sequence({elem_dtype or '?'})", None, (seq,))


def _seq(v: Value | None) -> Seq | None:
    if v is None or v.data is None or len(v.data) != 1 or not isinstance(v.data[0], Seq):
        return None
    return v.data[0]


def _elem_dtype(v: Value | None) -> str | None:
    if v is None or v.dtype is None:
        return None
    d = v.dtype
    if d.startswith("sequence(") and d.endswith(")"):
        inner = d[len("sequence(") : -1]
        return None if inner == "?" else inner
    return d


def _common(elems: Sequence[Value], fresh: Callable[[int], Expr] | None = None) -> Value | None:
    """A value every element matches: the dims they all share, and where they differ a symbol from
    ``fresh`` (without it, an unknown shape). ``None`` for no elements."""
    if not elems:
        return None
    first = elems[0]
    if first.shape is None or any(e.shape is None or len(e.shape) != len(first.shape) for e in elems):
        return Value(first.dtype, None)
    dims: list[Expr] = []
    origins: list[Origin | None] = []
    for i, d in enumerate(first.shape):
        if all(e.shape is not None and e.shape[i].eq(d) is Tri.YES for e in elems):
            dims.append(d)
            origins.append(first.origin(i))
        elif fresh is not None:
            dims.append(fresh(i))
            origins.append(None)
        else:
            return Value(first.dtype, None)
    return Value(first.dtype, tuple(dims), None, tuple(origins))


def _position(v: Value | None) -> int | None:
    if v is None or v.data is None or len(v.data) != 1:
        return None
    x = v.data[0]
    return x.value if isinstance(x, Expr) else None


@register("SequenceEmpty")
def _seq_empty(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    dt = node.attrs.get("dtype")
    return [sequence_of(dtype_name(int(dt)) if dt is not None else "float32", Seq(()))]


@register("SequenceConstruct")
def _seq_construct(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    elems = tuple(known(v) for v in ins)
    return [sequence_of(elems[0].dtype if elems else None, Seq(elems))]


@register("SequenceLength")
def _seq_length(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    s = _seq(input_value(ins, 0))
    if s is not None and s.length is not None:
        return [Value("int64", (), (s.length,), (), (Origin(node.name, node.op),))]
    return [Value("int64", ())]


@register("SequenceAt")
def _seq_at(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    sv = input_value(ins, 0)
    s, pos = _seq(sv), _position(input_value(ins, 1))
    dtype = _elem_dtype(sv)
    if s is None:
        return [Value(dtype, None)]
    if s.elems is not None:
        n = len(s.elems)
        if pos is not None:
            if not -n <= pos < n:
                raise ShapeError(
                    f"{_name(node)}: position {pos} of a sequence of {n} tensors",
                    dims=(pos, n),
                    kind="index-out-of-range",
                )
            return [s.elems[pos]]
        c = _common(s.elems, lambda i: ctx.fresh(f"{node.name}_{i}"))
        return [c if c is not None else Value(dtype, None)]
    if s.common is not None:
        return [s.common]
    return [Value(dtype, None)]


@register("SequenceInsert")
def _seq_insert(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    sv, t = input_value(ins, 0), known(input_value(ins, 1))
    s, pos = _seq(sv), _position(input_value(ins, 2))
    dtype = _elem_dtype(sv) or t.dtype
    if s is None:
        return [Value(f"sequence({dtype or '?'})", None)]
    length = s.length + 1 if s.length is not None else None
    if s.elems is not None and (pos is not None or input_value(ins, 2) is None):
        items = list(s.elems)
        at = len(items) if pos is None else pos % (len(items) + 1) if -len(items) <= pos <= len(items) else None
        if at is None:
            raise ShapeError(
                f"{_name(node)}: position {pos} of a sequence of {len(items)} tensors",
                dims=(pos, len(items)),
                kind="index-out-of-range",
            )
        items.insert(at, t)
        return [sequence_of(dtype, Seq(tuple(items)))]
    elems = [*s.elems, t] if s.elems is not None else ([s.common, t] if s.common is not None else None)
    common = _common(elems) if elems is not None else None
    return [sequence_of(dtype, Seq(None, common if common is not None and common.shape is not None else None, length))]


@register("SequenceErase")
def _seq_erase(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    sv = input_value(ins, 0)
    s, pos = _seq(sv), _position(input_value(ins, 1))
    dtype = _elem_dtype(sv)
    if s is None:
        return [Value(sv.dtype if sv is not None else None, None)]
    if s.elems is not None and (pos is not None or input_value(ins, 1) is None):
        items = list(s.elems)
        n = len(items)
        at = n - 1 if pos is None else pos
        if not -n <= at < n:
            raise ShapeError(
                f"{_name(node)}: position {at} of a sequence of {n} tensors", dims=(at, n), kind="index-out-of-range"
            )
        del items[at]
        return [sequence_of(dtype, Seq(tuple(items)))]
    common = s.common if s.common is not None else (_common(s.elems) if s.elems is not None else None)
    return [sequence_of(dtype, Seq(None, common, s.length - 1 if s.length is not None else None))]


@register("SplitToSequence")
def _split_to_sequence(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    x, split = known(input_value(ins, 0)), input_value(ins, 1)
    if x.shape is None:
        return [sequence_of(x.dtype, Seq())]
    r = len(x.shape)
    axis = axis_of(node, attr_int(node, "axis", 0), r)
    size = x.shape[axis]

    def part(d: Expr | None, keep: bool = True) -> Value:
        dims = list(x.shape or ())
        origins: list[Origin | None] = [x.origin(i) for i in range(r)]
        if not keep:
            del dims[axis], origins[axis]
        else:
            dims[axis] = d if d is not None else ctx.fresh(f"{node.name}_{axis}")
            origins[axis] = None
        return Value(x.dtype, tuple(dims), None, tuple(origins))

    if split is None:
        keep = bool(attr_int(node, "keepdims", 1))
        p = part(Expr.const(1), keep)
        n = size.value
        if n is not None and n <= MAX_ELEMENTS:
            return [sequence_of(x.dtype, Seq((p,) * n))]
        return [sequence_of(x.dtype, Seq(None, p, size))]
    if split.shape is not None and len(split.shape) == 0:
        step = _position(split)
        if step is None or step <= 0:
            return [sequence_of(x.dtype, Seq(None, None, None))]
        n = size.value
        if n is not None:
            count = -(-n // step)
            sizes = [step] * (count - 1) + [n - step * (count - 1)] if count else []
            return [sequence_of(x.dtype, Seq(tuple(part(Expr.const(s)) for s in sizes)))]
        return [sequence_of(x.dtype, Seq(None, None, size.ceildiv(step)))]
    ints = split.ints
    if ints is None:
        length = split.shape[0] if split.shape is not None and len(split.shape) == 1 else None
        return [sequence_of(x.dtype, Seq(None, part(None), length))]
    total = Expr.const(0)
    for e in ints:
        total = total + e
    if total.eq(size) is Tri.NO:
        o = x.origin(axis)
        raise ShapeError(
            f"{_name(node)}: the parts {_t(ints)} add up to {total}, but axis {axis} of {_t(x.shape)} is {size}",
            axis=axis,
            dims=(total, size),
            suspects=[Suspect(o, size.value)] if o else (),
        )
    return [sequence_of(x.dtype, Seq(tuple(part(e) for e in ints)))]


@register("ConcatFromSequence")
def _concat_from_sequence(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value]:
    sv = input_value(ins, 0)
    s = _seq(sv)
    dtype = _elem_dtype(sv)
    new_axis = bool(attr_int(node, "new_axis", 0))
    raw_axis = attr_int(node, "axis", 0)
    if s is None:
        return [Value(dtype, None)]
    if s.elems is None or not s.elems:
        c = s.common
        if c is None or c.shape is None or s.length is None:
            return [Value(dtype, None)]
        r = len(c.shape)
        axis = axis_of(node, raw_axis, r + 1 if new_axis else r)
        dims = list(c.shape)
        if new_axis:
            dims.insert(axis, s.length)
        else:
            dims[axis] = dims[axis] * s.length
        return [Value(dtype, tuple(dims))]
    elems = list(s.elems)
    if any(e.shape is None for e in elems):
        return [Value(dtype, None)]
    r = len(elems[0].shape or ())
    if any(len(e.shape or ()) != r for e in elems):
        raise ShapeError(
            f"{_name(node)}: the tensors differ in rank: " + ", ".join(_t(e.shape) for e in elems[:8]),
            kind="shape-mismatch",
            suspects=[Suspect(o) for e in elems for o in (e.origins or ()) if o is not None][:8],
        )
    axis = axis_of(node, raw_axis, r + 1 if new_axis else r)
    first = elems[0]
    assert first.shape is not None
    dims = list(first.shape)
    origins: list[Origin | None] = [first.origin(i) for i in range(r)]
    for e in elems[1:]:
        assert e.shape is not None
        for i in range(r):
            if (new_axis or i != axis) and e.shape[i].eq(dims[i]) is Tri.NO:
                sus = [
                    Suspect(o, d.value)
                    for o, d in ((first.origin(i), dims[i]), (e.origin(i), e.shape[i]))
                    if o is not None
                ]
                raise ShapeError(
                    f"{_name(node)}: the tensors differ at axis {i}: " + ", ".join(_t(x.shape) for x in elems[:8]),
                    axis=i,
                    dims=(dims[i], e.shape[i]),
                    suspects=sus,
                )
    if new_axis:
        dims.insert(axis, Expr.const(len(elems)))
        origins.insert(axis, None)
    else:
        total = Expr.const(0)
        for e in elems:
            total = total + (e.shape or ())[axis]
        dims[axis] = total
        origins[axis] = None
    return [Value(dtype, tuple(dims), None, tuple(origins))]
