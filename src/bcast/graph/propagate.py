"""Symbolic shape and value propagation over a :class:`~bcast.graph.model.Graph`, node by node.

Each node's outputs come from its op's shape function (:data:`bcast.graph.ops.SHAPES`), or,
for an op bcast has none for, from the reader's ``fallback`` (ONNX's own per-node inference,
with bcast's symbols passed through). What the file declares for a tensor is compared with what
propagation derives: a contradiction is a finding (a stale or wrong annotation) and the derived
shape wins; the declaration is used only where nothing could be derived.

Where propagation cannot go on (an op without a shape function, an input of unknown rank), it
says so: :attr:`Result.unknown` names the nodes where knowledge stopped and how many nodes
after each were left without shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from operator import is_not
from typing import Any

from ..dims import Tri
from ..native import load
from .context import BroadcastRecord, Ctx, Finding, ShapeError
from .expr import Expr
from .model import UNKNOWN, Declared, Graph, Node, Origin, Value
from .ops import SHAPES
from .ops._base import ShapeFn, require, settle_requirements
from .sizes import SizesError

__all__ = ["Fallback", "Result", "Stop", "propagate"]

#: a reader's inference for ops without a shape function: (node, inputs, ctx) -> outputs or None
#: the reader's inference of a node without a shape function: its outputs, ``None`` when it has none, or a
#: reason (a string) why it cannot run here (a package missing), which the stop says
Fallback = Callable[[Node, list[Value | None], Ctx], "list[Value] | str | None"]
Progress = Callable[[int, int], None]
#: a node's (min, max) inputs, and the positions among the first ``min`` that may be empty (a rule of (min, max)
#: alone says none may)
Arity = Callable[[Node], "tuple[int, int, tuple[int, ...]] | tuple[int, int] | None"]
#: endless Nones, to compare a tuple's items with by identity (``map(is_not, items, _NONES)``)
_NONES = repeat(None)


@dataclass
class Stop:
    """A node where propagation lost a shape, and how many nodes after it had none."""

    node: Node
    reason: str
    downstream: int = 0


@dataclass
class Result:
    """Every tensor's value, every finding, every broadcasting node, and where knowledge stopped."""

    graph: Graph
    values: dict[str, Value]
    findings: list[Finding]
    records: list[BroadcastRecord]
    unknown: list[Stop] = field(default_factory=list)
    _consumers: dict[str, list[Node]] | None = field(default=None, repr=False)

    @property
    def consumers(self) -> dict[str, list[Node]]:
        """The nodes that read each tensor, in the graph's order: made when first asked for (root causes ask
        only when there is a finding), not kept for every tensor of every check."""
        if self._consumers is None:
            out: dict[str, list[Node]] = {}
            for node in self.graph.nodes:
                for name in node.inputs:
                    if name:
                        out.setdefault(name, []).append(node)
            self._consumers = out
        return self._consumers

    def consumers_of(self, tensors: Sequence[str]) -> list[Node]:
        consumers = self.consumers
        return [n for t in tensors for n in consumers.get(t, ())]


#: the compiled short way of the loop below (``bcast.graph._walk``, csrc/walk.c), or ``None``: not built, or
#: ``BCAST_PURE_PYTHON=1``
_WALK = load(f"{__package__}._walk")


def propagate(
    graph: Graph,
    *,
    fallback: Fallback | None = None,
    progress: Progress | None = None,
    debug: bool = False,
    ctx: Ctx | None = None,
    values: dict[str, Value] | None = None,
    arity: Arity | None = None,
) -> Result:
    """Propagate shapes through ``graph`` (and its bodies), recording findings in ``ctx``.

    ``arity(node)`` gives the (min, max) inputs the format allows the node's op (``None``: no rule), asked
    once per op and domain; a node outside it is a finding and its outputs unknown.
    """
    ctx = ctx or Ctx(graph)
    ctx.walker = ctx.walker or _walk  # how the ops with bodies propagate them, without importing this module
    vals: dict[str, Value] = dict(values or {})
    for name, decl in graph.inputs.items():
        vals[name] = _input_value(name, decl, ctx, graph)
    for name, v in graph.constants.items():
        o = Origin(name, "initializer", "initializer")
        n = len(v.data) if v.data is not None else 0
        vals[name] = Value(v.dtype, v.shape, v.data, (o,) * len(v.shape or ()), (o,) * n)
    stops: list[Stop] = []
    lost_at: dict[str, Stop] = {}  # tensor -> the stop that made it unknown
    taint: dict[str, int] = {}  # tensor -> the first finding upstream of it
    # tensor -> the first relation upstream of it: what inputs must agree on is a problem only once the relations
    # are settled (Ctx.settle_relations), and then what it bent downstream is its consequence
    rtaint: dict[str, int] = {}
    bent: set[str] = set()  # nodes downstream of a finding (or with one)
    total = len(graph.nodes)
    declared = graph.declared
    findings = ctx.findings
    # each op's shape function, input count rule and its bounds, looked up once per op
    per_op: dict[tuple[str, str], tuple[ShapeFn | None, Any, int, int]] = {}
    functions = ctx.graph.functions  # model-local functions are called by _run (a node's call restores ctx.graph)
    nodes = graph.nodes
    plain = _WALK.plain if _WALK is not None and type(nodes) is list else None
    i = 0
    while i < total:
        left = None  # a node the compiled short way ran and left to the steps below: (ins, result, raised, before)
        if plain is not None and not taint and not rtaint and not lost_at:
            i, left = plain(
                nodes, i, vals, ctx, per_op, functions or None, declared, findings, fallback, UNKNOWN, _with_origins,
                _against_declared, progress, total, Value,
            )  # fmt: skip
            if i >= total:
                break
        node = nodes[i]
        inputs = node.inputs
        op_key = (node.domain, node.op)
        stop: Stop | None = None
        outs: list[Value]
        if left is not None:
            ins, result, raised, before = left
            if raised:
                outs, stop = _failed(node, result, ctx, debug)
            else:
                outs = result
        else:
            if progress is not None and i % 64 == 0:
                progress(i, total)
            ins = [vals.get(name, UNKNOWN) if name else None for name in inputs]
            ctx.node = node
            ctx.values, ctx.fallback = vals, fallback
            before = len(findings)
            try:
                fn, rule, lo, hi = per_op[op_key]
            except KeyError:
                rule = arity(node) if arity is not None else None
                lo, hi = (rule[0], rule[1]) if rule is not None else (0, 2**31)
                fn, rule, lo, hi = per_op[op_key] = (_shape_fn(node), rule, lo, hi)
            if not (lo <= len(inputs) <= hi and all(inputs[:lo])) and not _arity_ok(node, rule, ctx):
                outs = []
            elif fn is not None and not (functions and op_key in functions):  # the usual node: its shape function
                try:
                    outs = fn(node, ins, ctx)
                except RecursionError:
                    raise
                except Exception as e:
                    outs, stop = _failed(node, e, ctx, debug)
            else:
                outs, stop = _run(node, ins, ctx, fallback, debug, fn)
        i += 1
        if stop is not None:
            stops.append(stop)
        after = next((taint[n] for n in inputs if n in taint), None) if taint else None
        inherited = _stop_of(node, ins, lost_at) if lost_at else None
        rafter = next((rtaint[n] for n in inputs if n in rtaint), None) if rtaint else None
        if len(findings) > before:
            rafter = _relation_after(findings, before, rafter)
        if after is not None or len(findings) > before:
            after = _consequences(findings, before, after, bent)
            if after is not None:
                bent.add(node.name)
        for k, name in enumerate(node.outputs):
            if not name:
                continue
            if after is not None:
                taint[name] = after
            if rafter is not None:
                rtaint[name] = rafter
            v = outs[k] if k < len(outs) else UNKNOWN
            v = _with_origins(node, ins, v)
            stated = declared.get(name)
            if stated is not None:  # most tensors have no annotation to compare with
                v = _against_declared(node, name, v, stated, ctx)
            vals[name] = v
            if v.shape is None:
                if stop is not None:
                    lost_at[name] = stop
                elif inherited is not None:
                    lost_at[name] = inherited
                    inherited.downstream += 1
    if progress is not None:
        progress(total, total)
    ctx.node = None
    if ctx.graph is graph:  # the model's own graph, not a body: what its inputs must agree on is all known
        ctx.values = vals  # the model's own tensors again, whatever body was walked last
        ctx.settle_relations()
        settle_requirements(ctx)
    return Result(graph, vals, ctx.findings, ctx.records, stops)


def _walk(body: Graph, ctx: Ctx, values: dict[str, Value] | None) -> dict[str, Value]:
    """A body propagated with ``ctx`` (its findings join the model's) and with the reader's inference: what
    :meth:`Ctx.walk <bcast.graph.context.Ctx.walk>` calls for the ops with bodies (If, Loop, Scan, the IR's)."""
    return propagate(body, fallback=ctx.fallback, ctx=ctx, values=values).values


def _consequences(findings: list[Finding], before: int, after: int | None, bent: set[str]) -> int | None:
    """Mark the findings made at this node as consequences of an earlier one upstream (``after``), and
    return what the node's outputs carry downstream: that earlier finding, else this node's first one.

    A clash downstream of an earlier problem is often that problem seen again: a dim made by a node
    downstream of it (``bent``) meets the rest of the graph. Such a finding joins the earlier one's root
    cause; one whose clashing dims were all made elsewhere is a problem of its own. A stale annotation
    is no source of consequences, nor is a quirk (inputs a real system accepts, its result undefined), nor
    a note (a length limit: how the model may be called).
    """
    for f in findings[before:]:
        bent_dims = not f.suspects or any(s.origin.kind == "node" and s.origin.name in bent for s in f.suspects)
        if after is not None and f.cause is None and bent_dims:
            f.cause = after
    if after is not None:
        return after
    for i in range(before, len(findings)):
        if findings[i].kind not in ("declared-shape", "quirk") and findings[i].severity not in ("relation", "info"):
            return i
    return None


def _relation_after(findings: list[Finding], before: int, rafter: int | None) -> int | None:
    """Note, on the findings made at this node, the relation upstream of it (``rafter``), and return the relation
    the node's outputs carry downstream: that one, else this node's first relation."""
    for f in findings[before:]:
        if rafter is not None and f.cause is None and f.severity != "relation":
            f.after_relation = rafter
    if rafter is not None:
        return rafter
    return next((i for i in range(before, len(findings)) if findings[i].severity == "relation"), None)


def _arity_ok(node: Node, got: tuple[int, int, tuple[int, ...]] | tuple[int, int] | None, ctx: Ctx) -> bool:
    """Whether a node whose inputs are outside its op's bounds, or leave one of the first ``lo`` empty (the loop
    looks at the usual node itself), may run: an empty input the op lets be empty; else a finding, and ``False``."""
    if got is None:
        return True
    lo, hi = got[0], got[1]
    may_be_empty = got[2] if len(got) > 2 else ()  # a rule of (min, max) alone, as before: none may be empty
    n = len(node.inputs)
    if not lo <= n <= hi:
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 - 1 else f"at least {lo}"
        ctx.problem(
            node, "invalid", f"{node.op} (opset {ctx.opset(node.domain)}) takes {want} inputs, the node has {n}"
        )
        return False
    missing = [k for k in range(lo) if not node.inputs[k] and k not in may_be_empty]
    if missing:
        ctx.problem(node, "invalid", f"{node.op}'s required input {missing[0]} is empty")
        return False
    return True


def _input_value(name: str, decl: Declared, ctx: Ctx, graph: Graph) -> Value:
    o = Origin(name, "input", "input")
    if decl.dims is None:
        return Value(decl.dtype, None)
    dims = []
    fixed = ctx.fixed_sizes()
    for k, d in enumerate(decl.dims):
        if d is None:
            unnamed = f"{name}_{k}"
            if unnamed in fixed:  # the user gave it a size
                ctx.reserve(unnamed)
                d = Expr.const(fixed[unnamed])
            else:  # an unnamed dynamic dim: named after the input and axis
                d = ctx.fresh(unnamed, free=True, unnamed_input=(name, k))
        else:
            for a in d.symbols:
                ctx.reserve(a)
            bound = _bound(d, fixed)
            if bound is None:
                raise SizesError(
                    f"the sizes given make the dim {d} that the model declares at axis {k} of its input "
                    f"{name[:200]!r} divide by zero"
                )
            d = bound
            if d.atom is not None and d.atom in d.symbols and ctx.graph is graph:
                ctx.input_dim(d.atom, (name, k))  # a dim the file names, of the model's own inputs
        dims.append(d)
    return Value(decl.dtype, tuple(dims), None, (o,) * len(dims))


def _shape_fn(node: Node) -> ShapeFn | None:
    """The shape function of the node's op and domain, ``None`` when bcast has none."""
    key = f"{node.domain}:{node.op}" if node.domain not in ("", "ai.onnx") else node.op
    return SHAPES.get(key) or (SHAPES.get(node.op) if node.domain in ("", "ai.onnx", "com.microsoft") else None)


def _run(
    node: Node, ins: list[Value | None], ctx: Ctx, fallback: Fallback | None, debug: bool, fn: ShapeFn | None
) -> tuple[list[Value], Stop | None]:
    functions = ctx.graph.functions
    function = functions.get((node.domain, node.op)) if functions else None
    try:
        if function is not None:
            return _call(function, node, ins, ctx, fallback, debug), None
        if fn is not None:
            return fn(node, ins, ctx), None
        if fallback is not None:
            got = fallback(node, ins, ctx)
            if isinstance(got, str):
                return [], Stop(node, got)
            if got is not None:
                return got, None
        return [], Stop(node, f"no shape function for {node.domain + '.' if node.domain else ''}{node.op}")
    except RecursionError:
        raise
    except Exception as e:
        return _failed(node, e, ctx, debug)


def _failed(node: Node, e: Exception, ctx: Ctx, debug: bool) -> tuple[list[Value], Stop | None]:
    """What a shape function that raised ``e`` leaves of the node: a finding (a :class:`ShapeError`), its outputs
    unknown and no second error; else (a bug in one shape function costs that node, not the whole check) a stop,
    or with ``debug`` the error itself."""
    if isinstance(e, ShapeError):
        ctx.findings.append(Finding(node, e.kind, str(e), axis=e.axis, dims=e.dims, suspects=e.suspects))
        return [_fresh_like(node, k, ctx) for k in range(len(node.outputs))], None
    if debug:
        raise e
    return [], Stop(node, f"internal error in the shape function of {node.op}: {type(e).__name__}: {e}")


def _call(
    function: Graph, node: Node, ins: list[Value | None], ctx: Ctx, fallback: Fallback | None, debug: bool
) -> list[Value]:
    """A model-local function's outputs: its body propagated with the call's inputs bound to its parameters
    (the reader bounds how many nodes all calls expand to)."""
    bound = {p: v for p, v in zip(function.params, ins, strict=False) if v is not None}
    outer_graph, outer_node = ctx.graph, ctx.node
    body = Graph(
        [replace(n, path=(*node.path, node.name)) for n in function.nodes],
        {},
        function.outputs,
        function.constants,
        {},
        function.opsets or outer_graph.opsets,
        outer_graph.format,
        function.name,
        functions=outer_graph.functions,
    )
    ctx.graph = body
    try:
        result = propagate(body, fallback=fallback, debug=debug, ctx=ctx, values=bound)
    finally:
        ctx.graph, ctx.node = outer_graph, outer_node
    return [result.values.get(o, Value(None, None)) for o in function.outputs]


def _fresh_like(node: Node, k: int, ctx: Ctx) -> Value:
    """After an error: nothing is known of the output, but it is not a second error either."""
    return Value(None, None)


def _stop_of(node: Node, ins: Sequence[Value | None], lost_at: dict[str, Stop]) -> Stop | None:
    for name, v in zip(node.inputs, ins, strict=False):
        if v is not None and v.shape is None and name in lost_at:
            return lost_at[name]
    return None


def _with_origins(node: Node, ins: Sequence[Value | None], v: Value) -> Value:
    """Give each output dim the origin of the input dim it equals, else this node."""
    shape = v.shape
    if shape is None:
        return v
    given = v.origins
    if given is not None:
        # ``None in given`` would ask each Origin's (Python) __eq__; ``is_not`` compares identities in C
        if len(given) == len(shape) and all(map(is_not, given, _NONES)):
            return v
    else:
        first = _first_known(ins)
        if first is not None and first.shape == shape and _own_origins(first):
            # the output has the shape of the first input with origins (an elementwise op, a unary one): each
            # dim is that input's dim at the same axis, which the general walk below would find for it too
            return Value(v.dtype, shape, v.data, first.origins, v.data_origins)
    here: Origin | None = None
    pool: dict[Expr, Origin] | None = None  # the inputs' symbolic dims, gathered once a dim asks for them
    origins: list[Origin | None] = []
    for k, e in enumerate(shape):
        o = given[k] if given is not None and k < len(given) else None
        if o is None:
            if e.value is None:
                if pool is None:
                    pool = _origin_pool(ins)
                o = pool.get(e)
            else:
                o = _same_axis_origin(ins, v, k)
        if o is None:
            if here is None:
                here = Origin(node.name, node.op)
            o = here
        origins.append(o)
    return Value(v.dtype, shape, v.data, tuple(origins), v.data_origins)


def _first_known(ins: Sequence[Value | None]) -> Value | None:
    """The first input with a shape and origins: the one whose axes a static output dim is matched against."""
    for x in ins:
        if x is not None and x.shape is not None and x.origins is not None:
            return x
    return None


def _own_origins(x: Value) -> bool:
    """Whether each dim of ``x`` is the origin :func:`_with_origins` would give it, were ``x`` an output of its
    shape: every axis has an origin, and no symbolic dim comes twice (the second would take the first's)."""
    origins = x.origins
    assert x.shape is not None and origins is not None
    if not all(map(is_not, origins, _NONES)):  # ``None in`` would ask each Origin's (Python) __eq__
        return False
    symbolic = [e for e in x.shape if e.value is None]
    return len(symbolic) < 2 or len(set(symbolic)) == len(symbolic)


def _origin_pool(ins: Sequence[Value | None]) -> dict[Expr, Origin]:
    """Each symbolic dim of the inputs and the origin it has where it first comes."""
    pool: dict[Expr, Origin] = {}
    for x in ins:
        if x is None or x.shape is None or x.origins is None:
            continue
        for e, o in zip(x.shape, x.origins, strict=False):
            if o is not None and e.value is None:
                pool.setdefault(e, o)
    return pool


def _same_axis_origin(ins: Sequence[Value | None], v: Value, k: int) -> Origin | None:
    assert v.shape is not None
    for x in ins:
        if x is None or x.shape is None or x.origins is None:
            continue
        j = k - (len(v.shape) - len(x.shape))
        if 0 <= j < len(x.shape) and x.shape[j] == v.shape[k]:
            return x.origins[j]
        break
    return None


def _against_declared(node: Node, name: str, v: Value, decl: Declared | None, ctx: Ctx) -> Value:
    """The file's annotation is evidence: compare, report a contradiction, keep the derived shape."""
    if decl is None or decl.dims is None:
        return v
    fixed = ctx.fixed_sizes()
    if v.shape is None:
        bound = [_bound(d, fixed) if d is not None else None for d in decl.dims]
        dims = tuple(b if b is not None else ctx.fresh(f"{name}_{k}") for k, b in enumerate(bound))
        return Value(v.dtype or decl.dtype, dims, None, (Origin(node.name, node.op),) * len(dims))
    if len(decl.dims) != len(v.shape):
        ctx.problem(
            node,
            "declared-shape",
            f"the model declares {name} as {_text(decl.dims)} (rank {len(decl.dims)}), but propagation "
            f"gives {_text(v.shape)} (rank {len(v.shape)}): the annotation is stale or wrong",
            severity="warning",
        )
        return v
    for k, (d, e) in enumerate(zip(decl.dims, v.shape, strict=True)):
        b = _bound(d, fixed) if d is not None else None
        if b is not None and b.value is not None and e.value is None and _frozen(name, e, ctx):
            size = b.value
            said = ("frozen", e, size)  # one warning for each dim the export froze, at the first tensor that says it
            if said in ctx.memo:
                continue
            ctx.memo[said] = True
            if require(
                node,
                ctx,
                "declared-shape",
                f"the model declares {name} as {_text(decl.dims)}, {size} at axis {k} where propagation gives {e} "
                "(onnxruntime plans its buffers by annotations: where the two differ, it may reuse one too small "
                "and fail)",
                _equals(e, size),
                (e,),
                axis=k,
            ):
                break
        if b is not None and b.eq(e) is Tri.NO:
            ctx.problem(
                node,
                "declared-shape",
                f"the model declares {name} as {_text(decl.dims)}, but propagation gives {_text(v.shape)}: "
                f"at axis {k} the declared dim is {d}, the derived one {e} (a stale or wrong annotation; "
                "the derived shape is used)",
                axis=k,
                dims=(d, e),
                severity="warning",
            )
            break
    return v


def _equals(e: Expr, size: int) -> Callable[[dict[str, int]], bool]:
    return lambda env: e.evaluate(env) == size


def _frozen(name: str, e: Expr, ctx: Ctx) -> bool:
    """Whether a size that an ONNX file declares for the tensor ``name`` inside the graph (not a graph output, whose
    annotation a runtime only compares with) where propagation derives ``e``, a dim of the model's inputs, is a size
    the exporter froze at the example's (a dynamo export's ``value_info``)."""
    return (
        ctx.graph.format == "onnx"
        and name not in ctx.graph.outputs
        and bool(e.symbols)
        and all(ctx.is_input_dim(s) for s in e.symbols)
    )


def _bound(d: Expr, fixed: dict[str, int]) -> Expr | None:
    """The dim ``d`` that the file declares, at the sizes the user gave; ``None`` where they make it divide by zero
    (a dynamo export's ``4096 // ((width // 4) * (height // 4))`` at a width under 4): there it says nothing."""
    try:
        return d.bind(fixed)
    except ZeroDivisionError:
        return None


def _text(dims: Sequence[Any]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
